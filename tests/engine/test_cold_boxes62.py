"""Cold boxes of shards read what they need from the disk: the inner chunks of the box,
not a readahead window past them (the shards are read at random places)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict

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
