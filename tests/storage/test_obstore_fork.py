"""ObjectStore in a forked child: obstore's runtime threads do not survive ``fork``, so
a request in a child forked after its parent made requests through obstore would never
finish (obstore 0.12.1: a plain ``obstore.get`` hangs there, of a new store too).
zarrfast refuses it at once with ``ForkedRuntimeError``, naming the key and both
processes; obstore's in-memory store, which needs no runtime thread, still works, and so
does a child forked before any request.

Each case runs in a child Python of its own (the process that first made a request is
process-wide state), forks there with ``os.fork`` and gives the forked child 20 s: a hang
fails the case instead of the run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("obstore")

if not hasattr(__import__("os"), "fork"):
    pytest.skip("no os.fork here", allow_module_level=True)

_SCRIPT = """
import os, signal, sys
import numpy as np
import obstore.store
import zarrfast
from zarrfast.storage import ForkedRuntimeError, ObjectStore

root, kind, when = sys.argv[1], sys.argv[2], sys.argv[3]
inner = (obstore.store.MemoryStore() if kind == "memory"
         else obstore.store.LocalStore(root))
store = ObjectStore(inner)
data = np.arange(64, dtype="int32").reshape(8, 8)
if when == "after":  # the parent's requests start obstore's runtime before the fork
    a = zarrfast.create_array(store, shape=(8, 8), chunks=(4, 4), dtype="int32")
    a[:] = data
    assert (a[:] == data).all()
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # (a hang: killed by SIGALRM, which the parent reports)
    try:
        if when == "after":
            got = zarrfast.open_array(store, mode="r")[:]
        else:
            a = zarrfast.create_array(store, shape=(8, 8), chunks=(4, 4), dtype="int32")
            a[:] = data
            got = a[:]
        print("read", bool((got == data).all()), flush=True)
    except ForkedRuntimeError as e:
        print("refused", os.getpid(), os.getppid(), str(e), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("status", status, flush=True)
"""


def _run(tmp_path, subprocess_cwd, kind: str, when: str) -> list[str]:
    script = tmp_path / "fork_case.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    out = subprocess.run([sys.executable, str(script), str(tmp_path), kind, when],
                         capture_output=True, text=True, timeout=120, cwd=subprocess_cwd)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "status 0", f"the forked child did not end by itself: {lines}"
    return lines


def test_a_request_after_the_parents_is_refused_not_hung(tmp_path, subprocess_cwd):
    lines = _run(tmp_path, subprocess_cwd, "local", "after")
    assert lines[0].startswith("refused"), lines
    _, child, parent, message = lines[0].split(" ", 3)
    assert f"process {child} was forked from process {parent}" in message
    assert "zarr.json" in message  # (the key of the first request: the array's metadata)
    assert "'spawn'" in message


def test_obstores_memory_store_works_in_a_forked_child(tmp_path, subprocess_cwd):
    assert _run(tmp_path, subprocess_cwd, "memory", "after")[0] == "read True"


def test_a_child_forked_before_any_request_reads(tmp_path, subprocess_cwd):
    assert _run(tmp_path, subprocess_cwd, "local", "before")[0] == "read True"
