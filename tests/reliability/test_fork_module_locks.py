"""A child forked while another thread of the parent holds one of zarrfast's module-level
locks gets a new one: the held one would stay held for ever, by no thread, and the
child would hang on its first use (a forked DataLoader worker while the main thread
opens arrays, say).  Also: a child forked while a thread has the garbage collector
paused (parsing a large hierarchy) has it running again."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LOCKS = [("zarrfast.hierarchy.array", "_CHAIN_LOCK"), ("zarrfast.metadata.gcpause", "_lock"),
         ("zarrfast.codecs.registry", "_lock"), ("zarrfast.storage.fsspec", "_OWN_FS_LOCK"),
         ("zarrfast.storage.obstore", "_CLIENTS_LOCK"), ("zarrfast.core._install", "_lock"),
         ("zarrfast.core.sync", "_lock")]

_SCRIPT = r'''
import importlib, os, sys, threading
module = importlib.import_module(sys.argv[1])
name = sys.argv[2]
held, release = threading.Event(), threading.Event()

def hold():
    with getattr(module, name):
        held.set()
        release.wait()

t = threading.Thread(target=hold)
t.start()
held.wait()
pid = os.fork()
if pid == 0:
    got = getattr(module, name).acquire(timeout=10)
    os._exit(0 if got else 3)
_, status = os.waitpid(pid, 0)
release.set()
t.join()
print("EXIT", os.waitstatus_to_exitcode(status))
'''

_GC = r'''
import gc, os, threading
from zarrfast.metadata import gcpause
inside, release = threading.Event(), threading.Event()

def parse():
    with gcpause.collector_paused():
        inside.set()
        release.wait()

t = threading.Thread(target=parse)
t.start()
inside.wait()
assert not gc.isenabled()
pid = os.fork()
if pid == 0:
    with gcpause.collector_paused():  # (its lock is free)
        pass
    os._exit(0 if gc.isenabled() and gcpause._pausers == 0 else 3)
_, status = os.waitpid(pid, 0)
release.set()
t.join()
print("EXIT", os.waitstatus_to_exitcode(status), gc.isenabled())
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize(("module", "name"), LOCKS)
def test_a_lock_held_at_the_fork_is_free_in_the_child(subprocess_cwd, module, name) -> None:
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT, module, name],
                         cwd=subprocess_cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["EXIT", "0"], out.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_collector_paused_at_the_fork_runs_in_the_child(subprocess_cwd) -> None:
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _GC], cwd=subprocess_cwd,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["EXIT", "0", "True"], out.stdout
