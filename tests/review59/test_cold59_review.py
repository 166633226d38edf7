"""Cold box reads around the size where h59/cold59 changed how a box announces its
files, from the review of h59/cold59 (the branch was merged, measured on a quiet
machine with no gain, and reverted: these guard main's reads).

That branch made a cold box read (``decode_box_files``, ``decode_box_shards``) of at
most 32 rows announce 4 rows ahead of the rows claimed, 2 at a time, instead of the
16 MiB window.  Guards (pass on main and on the branch): cold boxes of 1, 8, 27, 32,
36 and 64 chunks (both sides of the 32-row limit), of chunk files and of shards, at 1
and 2 threads, some chunks missing (the fill value), equal NumPy, were read cold (a box
of chunk files announced them), and leave no chunk file open.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast._ext import _decode
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold, needs_cold_reads

pytestmark = needs_cold_reads

SHAPE = (32, 40, 36)
CHUNKS = (4, 4, 4)
FILL = 9
DATA = (np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE) * 5 + 1).astype("u2")
#: boxes of 1, 8, 27, 32, 36 and 64 chunks (cold jobs of that many rows)
BOXES = {
    1: np.s_[4:8, 8:12, 0:4],
    8: np.s_[5:12, 1:6, 9:14],
    27: np.s_[3:12, 2:11, 1:10],
    32: np.s_[0:16, 1:16, 3:8],
    36: np.s_[1:16, 28:40, 25:36],  # (the array's edge along two dimensions)
    64: np.s_[0:16, 0:16, 0:16],
}


def _chunks_of(sel) -> int:
    n = 1
    for s, c, size in zip(sel, CHUNKS, SHAPE, strict=True):
        stop = min(s.stop, size)
        n *= (stop - 1) // c - s.start // c + 1
    return n


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold59")
    out = {}
    for name, kw in {"zstd": {}, "sharded": {"shards": (8, 8, 12)}}.items():
        path = root / f"{name}.zarr"
        a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS,
                                  dtype=DATA.dtype, fill_value=FILL, **kw)
        a[:] = DATA
        out[name] = path
    evict(root)
    if not is_cold(root / "zstd.zarr" / "c" / "0" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return root, out


@pytest.mark.parametrize("rows", sorted(BOXES))
@pytest.mark.parametrize("layout", ["zstd", "sharded"])
@pytest.mark.parametrize("threads", [1, 2])
def test_cold_boxes_around_the_small_job_limit_are_numpys(arrays, tmp_path, rows, layout,
                                                          threads):
    _, paths = arrays
    sel = BOXES[rows]
    assert _chunks_of(sel) == rows
    # a copy of its own, some chunk files (or shards) of the box gone
    path = tmp_path / "a.zarr"
    shutil.copytree(paths[layout], path)
    want = DATA.copy()
    gone = [(1, 1, 0), (2, 2, 2)] if layout == "zstd" else [(1, 1, 1)]
    per = CHUNKS if layout == "zstd" else (8, 8, 12)
    for g in gone:
        f = path / "c" / "/".join(map(str, g))
        if f.exists():
            f.unlink()
        want[tuple(slice(i * c, (i + 1) * c) for i, c in zip(g, per, strict=True))] = FILL
    a = zarrfast.open_array(LocalStore(path), mode="r")
    announced = 0
    for _ in range(5):  # (eviction is best effort: until a read found its files cold)
        evict(path)
        before = _decode.cold_announcements()
        with config.set(threads=threads):
            got = a[sel]
        np.testing.assert_array_equal(got, want[sel])
        announced += _decode.cold_announcements() > before
        if announced:
            break
    if rows > 1 and layout == "zstd":
        # (it was read cold: its files announced; a box inside one shard reads one
        # file, which it does not announce)
        assert announced
    assert held_open(os.path.join(path, "c")) == []
