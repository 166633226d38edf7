"""zarrfast.concurrency.cached_property: a child forked while another thread of the
parent computes a cached value (of another object of the same class) computes its own.
Python 3.11's functools.cached_property holds one lock per class attribute, which the
child inherits held: a forked child hung so in its first write
(tests/review53/test_fork_during_writes.py, seen in a CI rehearsal)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SCRIPT = r'''
import os, sys, threading, time
from zarrfast.concurrency import cached_property
import functools
prop = functools.cached_property if sys.argv[1] == "functools" else cached_property
inside, release = threading.Event(), threading.Event()

class Thing:
    def __init__(self, block):
        self.block = block
    @prop
    def value(self):
        if self.block:
            inside.set()
            release.wait()
        return 42

t = threading.Thread(target=lambda: Thing(True).value)
t.start()
inside.wait()
pid = os.fork()
if pid == 0:
    os._exit(0 if Thing(False).value == 42 else 3)
deadline = time.monotonic() + 20
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("EXIT", os.waitstatus_to_exitcode(status))
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("HUNG")
        break
    time.sleep(0.01)
release.set()
t.join()
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_child_forked_while_a_value_is_computed_computes_its_own(subprocess_cwd) -> None:
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT, "zarrfast"],
                         cwd=subprocess_cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["EXIT", "0"], out.stdout


def test_cached_values_are_kept_and_documented() -> None:
    from zarrfast.concurrency import cached_property

    calls = []

    class Thing:
        @cached_property
        def value(self) -> list[int]:
            """The value."""
            calls.append(1)
            return [1]

    a, b = Thing(), Thing()
    assert a.value is a.value and a.value == b.value == [1] and len(calls) == 2
    assert Thing.value.__doc__ == "The value."
