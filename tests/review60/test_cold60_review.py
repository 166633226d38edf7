"""Cold reads (files out of the page cache) of chunk files, from the review of h60/cold60.

That branch keeps the descriptor a cold read opens to announce a chunk file
(``POSIX_FADV_WILLNEED``) for that file's read, instead of closing it and opening the
file again: up to 256 descriptors held at once in a process (``zf_held``).  It was
not merged (no gain in quiet runs against main); these tests guard main's cold reads.

Guards (pass on main and on the branch), at 1 and 2 threads: cold reads of boxes of many
chunk files -- some missing (the fill value), one replaced after the eviction -- equal
NumPy and leave no chunk file open; in a process whose descriptor limit leaves little
room beyond what it holds, a cold read of hundreds of files still reads every one
(descriptors held for later reads must not take the ones a read needs: the files' own
reads then fail with EMFILE, "too many open files"), and a file the process opens
meanwhile still opens.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold, needs_cold_reads

pytestmark = needs_cold_reads

SHAPE = (48, 60, 40)
CHUNKS = (4, 4, 4)  # 12 x 15 x 10 = 1,800 chunk files
FILL = 9
DATA = (np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE) * 3 + 1).astype("u2")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold60")
    a = zarrfast.create_array(LocalStore(root / "a.zarr"), shape=SHAPE, chunks=CHUNKS,
                              dtype=DATA.dtype, fill_value=FILL)
    a[:] = DATA
    evict(root)
    if not is_cold(root / "a.zarr" / "c" / "0" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return root / "a.zarr"


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_boxes_of_many_files_are_numpys_and_close_them(made, tmp_path, threads):
    import shutil

    path = tmp_path / "a.zarr"
    shutil.copytree(made, path)
    want = DATA.copy()
    for g in ((0, 0, 1), (5, 7, 3), (11, 14, 9)):
        (path / "c" / "/".join(map(str, g))).unlink()
        want[tuple(slice(i * c, (i + 1) * c) for i, c in zip(g, CHUNKS, strict=True))] = FILL
    a = zarrfast.open_array(LocalStore(path), mode="r")
    evict(path)
    # (one file replaced after the eviction: its new values are read)
    b = zarrfast.open_array(LocalStore(path), mode="r+")
    b[8:12, 8:12, 8:12] = 4242
    want[8:12, 8:12, 8:12] = 4242
    evict(path)
    with zarrfast.config.set(threads=threads):
        for sel in (np.s_[...], np.s_[3:45, 1:59, 2:38], np.s_[::-1, 10:30, ::-3]):
            np.testing.assert_array_equal(a[sel], want[sel], err_msg=repr(sel))
            evict(path)
    assert held_open(path / "c") == []


_FEW_FDS = r'''
import os, resource, sys
sys.path.insert(0, sys.argv[2])
import numpy as np, zarrfast
from zarrfast.storage import LocalStore
from _helpers.page_cache import evict
path, threads = sys.argv[1], int(sys.argv[3])
a = zarrfast.open_array(LocalStore(path), mode="r")
shape = a.shape
want = (np.arange(np.prod(shape), dtype="u2").reshape(shape) * 3 + 1).astype("u2")
a[0:4, 0:4, 0:4]  # (the store and its root open: what a read needs beside its files)
used = len(os.listdir("/proc/self/fd"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (used + 40, hard))
bad = []
with zarrfast.config.set(threads=threads):
    for k in range(3):
        evict(path)
        try:
            got = a[...]
        except Exception as e:
            bad.append(f"read {k}: {type(e).__name__}: {e}"[:400])
            continue
        if not np.array_equal(got, want):
            bad.append(f"read {k}: wrong values")
print("ok" if not bad else "\n".join(bad))
'''


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_reads_with_few_descriptors_to_spare(made, subprocess_cwd, threads):
    """A process whose limit leaves 40 descriptors beyond those it holds: cold reads
    of 1,800 chunk files give NumPy's values (in a child Python, its limit its own)."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", _FEW_FDS, str(made), tests, str(threads)],
                         capture_output=True, text=True, timeout=300, cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "ok", run.stdout[-3000:]
