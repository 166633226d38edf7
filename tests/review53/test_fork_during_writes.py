"""Review of d5c2a5d / cb50090 / 9f858f9 (the I/O threads of writes at one thread) for
fork: children forked while another thread of the parent is in the middle of writes
at one thread -- compressed chunks written behind the encoding, uncompressed ones
shared with the I/O thread -- write at one thread themselves, whole and right, and none
hangs on a lock or an I/O thread it inherited mid-write.  A guard (passes now): the
script runs in a child Python; a child that hangs is killed after 60 s and counted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SCRIPT = r'''
import os, sys, threading, time, warnings
import numpy as np, zarrfast
from zarrfast import config
warnings.simplefilter("ignore")
root, forks = sys.argv[1], int(sys.argv[2])
a = zarrfast.create_array(f"{root}/p.zarr", shape=(400, 420), chunks=(10, 10), dtype="<i4",
                          compressors=[zarrfast.codecs.ZstdCodec(level=1)])
r = zarrfast.create_array(f"{root}/q.zarr", shape=(400, 420), chunks=(10, 10), dtype="<i4",
                          compressors=None)
stop = False
def writer():
    k = 0
    with config.set(threads=1):
        while not stop:
            a[...] = np.full((400, 420), k, "<i4")
            r[...] = np.full((400, 420), k, "<i4")
            k += 1
t = threading.Thread(target=writer)
t.start()
want = np.arange(200 * 210, dtype="<i4").reshape(200, 210)
bad = []
for i in range(forks):
    time.sleep(0.01)  # (only to let the writer get going between forks)
    pid = os.fork()
    if pid == 0:
        try:
            with config.set(threads=1):
                c = zarrfast.create_array(f"{root}/c{i}.zarr", shape=(200, 210), chunks=(10, 10),
                                          dtype="<i4",
                                          compressors=[zarrfast.codecs.ZstdCodec(level=1)])
                c[...] = want
                d = zarrfast.create_array(f"{root}/d{i}.zarr", shape=(200, 210), chunks=(10, 10),
                                          dtype="<i4", compressors=None)
                d[...] = want
            ok = all((zarrfast.open_array(f"{root}/{n}{i}.zarr")[...] == want).all()
                     for n in "cd")
            os._exit(0 if ok else 3)
        except BaseException:
            os._exit(4)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.waitstatus_to_exitcode(status) != 0:
                bad.append((i, os.waitstatus_to_exitcode(status)))
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            bad.append((i, "hung"))
            break
        time.sleep(0.01)
stop = True
t.join()
print("BAD", bad)
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_children_forked_during_writes_at_one_thread_write_whole(tmp_path, subprocess_cwd):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path), "12"],
                         cwd=subprocess_cwd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "BAD []", out.stdout[-2000:]
