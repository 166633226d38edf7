"""Cold boxes: shards read what the box needs from the disk (the inner chunks of the box,
not a readahead window past them), and a box's chunks are read as their bytes come,
not each waited for in turn."""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import mmap
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast._ext import _decode
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")
         and ctypes.util.find_library("c")),
    reason="needs posix_fadvise, preadv(RWF_NOWAIT) and mincore (Linux)")

#: one shard of 2 x 1 x 8 inner chunks of 16^3 random uint16 (8 KiB each, about as
#: large compressed): inner chunk (0, 0, 0) first in the file, (1, 0, 0) 8 chunks on
SHAPE = (32, 16, 128)
CHUNKS = (16, 16, 16)
DATA = np.random.default_rng(62).integers(0, 2**16, size=SHAPE, dtype="u2")
#: the box: inner chunks (0, 0, 0) and (1, 0, 0), the first and the ninth of the shard
BOX = (slice(3, 29), slice(2, 14), slice(1, 15))


def _resident(path: os.PathLike) -> np.ndarray:
    """Per page of the file ``path``, whether it is in the page cache (``mincore``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    size = os.path.getsize(path)
    pages = -(-size // mmap.PAGESIZE)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            vec = ctypes.create_string_buffer(pages)
            assert libc.mincore(addr, size, vec) == 0, os.strerror(ctypes.get_errno())
            return np.frombuffer(vec.raw, dtype=np.uint8) & 1 == 1
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def _inner_ranges(path: os.PathLike, n: int) -> np.ndarray:
    """The shard's index (at its end: ``n`` (offset, nbytes) pairs, then a crc32c)."""
    with open(path, "rb") as f:
        f.seek(-(16 * n + 4), os.SEEK_END)
        return np.frombuffer(f.read(16 * n), dtype="<u8").reshape(n, 2)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_cold_box_of_shards_reads_no_pages_past_its_inner_chunks(tmp_path, threads):
    # The first cold read of a box (the one that finds it cold) went through the
    # kernel's readahead: from a shard's start, four times the read (64 pages where a
    # 32^3 inner chunk needed 10; 100 cold boxes read 61-62 MiB from the disk where
    # 55 were needed).  The box's shards are now read at random places.
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS, shards=(32, 16, 128))
    a[:] = DATA
    shard = tmp_path / "a.zarr" / "c" / "0" / "0" / "0"
    index = _inner_ranges(shard, 16)
    page = mmap.PAGESIZE
    need = np.zeros(-(-os.path.getsize(shard) // page), dtype=bool)
    for i in (0, 8):  # (the box's inner chunks)
        off, size = (int(v) for v in index[i])
        need[off // page:-(-(off + size) // page)] = True
    assert need.sum() < len(need) // 2  # (most of the shard is not the box's)
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    with zarrfast.config.set(threads=threads):
        np.testing.assert_array_equal(a[BOX], DATA[BOX])  # (the index cached)
        for _ in range(5):  # (eviction is best effort)
            evict(tmp_path)
            if not _resident(shard).any():  # (no read: is_cold's would read ahead)
                break
        else:
            pytest.skip("this file system keeps its files in memory (tmpfs?)")
        np.testing.assert_array_equal(a[BOX], DATA[BOX])
        resident = _resident(shard)
    assert resident[need].all()
    assert not resident[~need].any(), np.flatnonzero(resident & ~need).tolist()


#: an array of 8^3 chunks (4 x 4 x 4 of them), for boxes of 1 to 2 chunks a side
SMALL = (32, 32, 32)
SMALL_DATA = (np.arange(np.prod(SMALL), dtype="u2").reshape(SMALL) * 5 + 1).astype("u2")


@st.composite
def _cold_boxes(draw):
    """A layout, the chunks stored (the others missing: fill value), a box one to two
    chunks long per side, and the threads."""
    layout = draw(st.sampled_from(["zstd", "none", "sharded"]))
    stored = draw(st.lists(st.booleans(), min_size=64, max_size=64))
    sel = []
    for n in SMALL:
        size = draw(st.integers(1, 16))
        start = draw(st.integers(0, n - size))
        sel.append(slice(start, start + size))
    return layout, stored, tuple(sel), draw(st.sampled_from([1, 2]))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_cold_boxes())
def test_cold_boxes_read_in_any_order_equal_numpy(tmp_path_factory, case):
    # A cold box's threads read the chunks whose bytes have come first, the others
    # later (their files held open meanwhile): every value is where NumPy puts it,
    # missing chunks get the fill value, and no file is left open.
    layout, stored, sel, threads = case
    root = tmp_path_factory.mktemp("order")
    kw: dict = {"shards": (16, 16, 16)} if layout == "sharded" else {}
    if layout == "none":
        kw["compressors"] = None
    a = zarrfast.create_array(LocalStore(root / "a.zarr"), shape=SMALL, dtype="u2",
                              chunks=(8, 8, 8), fill_value=9, **kw)
    want = np.full(SMALL, 9, dtype="u2")
    for k, (i, j, m) in enumerate(itertools.product(range(0, 32, 8), repeat=3)):
        if stored[k]:
            region = (slice(i, i + 8), slice(j, j + 8), slice(m, m + 8))
            a[region] = SMALL_DATA[region]
            want[region] = SMALL_DATA[region]
    a = zarrfast.open_array(LocalStore(root / "a.zarr"), mode="r")
    with zarrfast.config.set(threads=threads):
        a[sel]  # (the indexes cached)
        for _ in range(2):
            evict(root)
            np.testing.assert_array_equal(a[sel], want[sel])
        np.testing.assert_array_equal(a[sel], want[sel])  # (warm)
    assert held_open(root / "a.zarr" / "c") == []


@pytest.mark.parametrize("layout", ["zstd", "sharded"])
def test_cold_boxes_leave_chunks_not_come_for_later(tmp_path, layout):
    # 20 cold boxes of 8 to 27 chunks: some chunk's bytes had not come when its thread
    # came to it, while the thread had others to read (the disk reads a box's
    # announced chunks in its own order): left for later, not waited for in turn.
    kw = {"shards": (16, 16, 16)} if layout == "sharded" else {}
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SMALL, dtype="u2",
                              chunks=(8, 8, 8), **kw)
    a[:] = np.random.default_rng(1).integers(0, 2**16, size=SMALL, dtype="u2")
    want = a[:]
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    rng = np.random.default_rng(2)
    boxes = []
    for _ in range(20):
        sizes = rng.integers(9, 17, size=3)
        starts = [int(rng.integers(0, 32 - s + 1)) for s in sizes]
        boxes.append(tuple(slice(b, b + int(s)) for b, s in zip(starts, sizes, strict=True)))
    with zarrfast.config.set(threads=2):  # (at one, an I/O helper reads: not these)
        for sel in boxes:
            a[sel]  # (the indexes cached)
        before = _decode.rows_left_for_later()
        cold = 0
        for _ in range(5):  # (eviction is best effort; the disk's order is its own)
            for sel in boxes:
                evict(tmp_path)
                cold += is_cold(tmp_path / "a.zarr" / "c" / "0" / "0" / "0")
                evict(tmp_path)
                np.testing.assert_array_equal(a[sel], want[sel])
            if _decode.rows_left_for_later() > before:
                break
    if not cold:
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    assert _decode.rows_left_for_later() > before
    assert held_open(tmp_path / "a.zarr" / "c") == []
