"""Cold chunk files read by the kernels: a call whose first chunk is not in the page
cache tells the kernel the rest it is about to read (``POSIX_FADV_WILLNEED``), so the
disk reads them together (``ChunkDecoder.decode_files``, ``decode_box_files``,
``decode_ranges``, ``decode_box_shards``).  What is read must not change, warm reads
must not announce anything, and odd files among them must be neither waited on nor
followed."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency
from zarrfast._ext import _decode
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict as _evict
from _helpers.page_cache import is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")

DATA = np.arange(96 * 96, dtype="i4").reshape(96, 96) * 7 - 5000


def _cold_possible(root) -> bool:
    """Whether this file system lets files leave the page cache (not tmpfs)."""
    _evict(root)
    return is_cold(next(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                        if f != "zarr.json"))


def _make(tmp_path, **kw):
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=DATA.shape,
                              dtype=DATA.dtype, **kw)
    a[:] = DATA
    if not _cold_possible(tmp_path):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")


#: cold reads tried: eviction is best effort (``POSIX_FADV_DONTNEED`` leaves the pages
#: another CPU still holds in its LRU batch), so a read may find its first chunk warm
ATTEMPTS = 5


def _cold_read(root, read, want, check=None) -> int:
    """Evict ``root``'s files, ``read()``, check what it gives (equal to ``want``, or
    by ``check``); how many calls announced cold files."""
    _evict(root)
    before = _decode.cold_announcements()
    got = read()
    announced = _decode.cold_announcements() - before
    if check is not None:
        check(got)
    else:
        np.testing.assert_array_equal(got, want)
    return announced


SELECTIONS = {
    "full": (slice(None), slice(None)),
    "box": (slice(10, 30), slice(5, 40)),      # a box of several chunks
    "strided": (slice(None, None, 3), slice(2, None, 5)),
}
LAYOUTS = {
    "zstd": {"chunks": (16, 16)},
    # 576 files: more than a cold call announces at once (a window ahead of the reading)
    "zstd-small": {"chunks": (4, 4)},
    "blosc": {"chunks": (16, 16), "compressors": {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4}}},
    "sharded": {"chunks": (8, 8), "shards": (32, 32)},
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sel", list(SELECTIONS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_cold_reads_announce_and_read_the_same(tmp_path, layout, sel, threads):
    a = _make(tmp_path, **LAYOUTS[layout])
    s = SELECTIONS[sel]
    with zarrfast.config.set(threads=threads):
        a[s]  # (indexes cached, files warm: then evicted)
        announced = [_cold_read(tmp_path, lambda: a[s], DATA[s]) for _ in range(ATTEMPTS)]
        assert max(announced) >= 1, announced  # (a call found its first chunk cold)
        # warm: the same read announces nothing
        before = _decode.cold_announcements()
        np.testing.assert_array_equal(a[s], DATA[s])
        assert _decode.cold_announcements() == before


def test_get_many_cold_announces_and_reads_the_same(tmp_path):
    a = _make(tmp_path, chunks=(8, 8), shards=(32, 32))
    sels = [(slice(i, i + 5), slice(3 * i, 3 * i + 7)) for i in range(0, 80, 9)]
    a.get_many(sels)

    def read():
        return a.get_many(sels)

    def check(got):
        for g, s in zip(got, sels, strict=True):
            np.testing.assert_array_equal(g, DATA[s])

    announced = [_cold_read(tmp_path, read, None, check) for _ in range(ATTEMPTS)]
    assert max(announced) >= 1, announced


def test_get_many_of_cold_arrays_on_their_own_stores_reads_them_together(tmp_path):
    """zarrfast.get_many of arrays on stores of their own (one batch each): warm, at
    one thread, the batches are read one after another in the calling thread; at two,
    their boxes are read as one (one kernel call for all of their chunks, each from its
    own store's files: ``engine.many.read_store_boxes``), none by the array's own read;
    at one thread, when the first one's first file is cold (a probe), they are all read
    at the same time (other threads), so the disk has all their files in flight -- and
    every result is what each array holds.  (Cold at two threads: the next test.)"""
    arrays, wants = [], []
    for i in range(12):
        root = tmp_path / f"a{i}.zarr"
        a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, dtype=DATA.dtype,
                                  chunks=(32, 32))
        a[:] = DATA + i
        arrays.append(zarrfast.open_array(LocalStore(root), mode="r"))
        wants.append(DATA + i)
    if not _cold_possible(tmp_path):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    region = (slice(20, 70), slice(10, 60))
    readers: list[int] = []
    marked: list[bool] = []  # each read run as one of many (its boxes decoded alone)
    events: list[tuple[str, int]] = []  # ("start" or "end", array), in order
    lock = threading.Lock()
    for k, a in enumerate(arrays):  # (each array's batch read, recorded by its thread)
        def spy(*args, _read=a._get_many, _k=k, **kwargs):
            with lock:
                readers.append(threading.get_ident())
                marked.append(concurrency.one_of_many())
                events.append(("start", _k))
            try:
                return _read(*args, **kwargs)
            finally:
                with lock:
                    events.append(("end", _k))
        a._get_many = spy

    def read():
        readers.clear()
        marked.clear()
        events.clear()
        return zarrfast.get_many([(a, region) for a in arrays])

    def first_not_alone() -> bool:
        """Another array's read started before the first array's read ended (the
        first is not read alone to learn that the files are cold)."""
        end = events.index(("end", 0))
        return any(e == "start" and k != 0 for e, k in events[:end])

    def check(got):
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, w[region])

    read()  # (the files back in the page cache: _cold_possible evicted them)
    with zarrfast.config.set(threads=1):
        check(read())  # warm, one thread: one batch after another, all in this thread
    assert readers == [threading.get_ident()] * len(arrays)
    assert marked == [False] * len(arrays)
    with zarrfast.config.set(threads=2):
        check(read())  # warm, two threads: read as one, not array by array
    assert readers == []
    with zarrfast.config.set(threads=1):
        for _ in range(ATTEMPTS):
            if (_cold_read(tmp_path, read, None, check) and len(set(readers)) > 1
                    and first_not_alone()):
                break
        else:
            pytest.fail(f"no cold read of the {len(arrays)} arrays read them together")
    assert len(readers) == len(arrays)
    assert marked == [True] * len(arrays)  # (read together: each decodes alone)


@pytest.mark.parametrize("threads", [2, 3])
def test_get_many_of_cold_arrays_on_their_own_stores_is_one_kernel_call(tmp_path, threads):
    """zarrfast.get_many of arrays on stores of their own at two threads or more, cold
    as warm: their boxes are read as one (``engine.many.read_store_boxes``: one kernel
    call for all of their chunks, each from its own store's files), none by the array's
    own read, and that call finds the files out of the page cache and announces them
    to the disk itself -- every result what each array holds, the missing chunk's the
    fill value.  (Before, a probe of the first file found it cold and sent the arrays
    to reads of their own, all at once in as many threads: each its own plan, kernel
    call and handoff, the loader's cold regions half again as slow as one call.)"""
    arrays, wants = [], []
    for i in range(12):
        root = tmp_path / f"a{i}.zarr"
        a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, dtype=DATA.dtype,
                                  chunks=(16, 16), fill_value=-1)
        a[:] = DATA + i
        arrays.append(zarrfast.open_array(LocalStore(root), mode="r"))
        wants.append(DATA + i)
    (tmp_path / "a7.zarr" / "c" / "2" / "1").unlink()
    wants[7][32:48, 16:32] = -1
    if not _cold_possible(tmp_path):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    region = (slice(5, 90), slice(10, 60))
    readers: list[int] = []
    for a in arrays:  # (an array's own read, recorded)
        def spy(*args, _read=a._get_many, **kwargs):
            readers.append(threading.get_ident())
            return _read(*args, **kwargs)
        a._get_many = spy

    def check(got):
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, w[region])

    announced = 0
    with zarrfast.config.set(threads=threads):
        for _ in range(ATTEMPTS):
            announced += _cold_read(tmp_path, lambda: zarrfast.get_many(
                [(a, region) for a in arrays]), None, check)
            assert readers == []  # (not one array's own read, cold)
            if announced:
                break
    assert announced >= 1  # (the one call found them cold: eviction is best effort)


def test_a_fifo_among_cold_chunk_files_is_not_waited_on(tmp_path):
    """The announcing opens every file of the call without blocking: a FIFO in place
    of a chunk file is opened and closed at once, then refused by the read as it is
    warm (the error names it), however the read started."""
    a = _make(tmp_path, chunks=(16, 16))
    fifo = tmp_path / "a.zarr" / "c" / "3" / "4"
    fifo.unlink()
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def read() -> None:
        try:
            a[:]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    for _ in range(2):  # cold, then warm
        _evict(tmp_path)
        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "the read waited on the FIFO"
    assert len(errors) == 2
    for e in errors:
        assert isinstance(e, ZarrfastError)
        assert "c/3/4" in str(e)


def test_a_link_among_cold_chunk_files_is_not_followed(tmp_path):
    """A symbolic link in place of a chunk file: announcing does not follow it (the
    file it points to stays out of the page cache), and the read refuses it as ever."""
    a = _make(tmp_path, chunks=(16, 16))
    outside = tmp_path / "outside.bin"
    outside.write_bytes(os.urandom(1 << 20))
    link = tmp_path / "a.zarr" / "c" / "2" / "2"
    link.unlink()
    link.symlink_to(outside)
    _evict(tmp_path)
    with pytest.raises(ZarrfastError, match="c/2/2"):
        a[:]
    fd = os.open(outside, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):  # never read, nor read ahead
            os.preadv(fd, [bytearray(1)], (1 << 20) - 1, os.RWF_NOWAIT)
    finally:
        os.close(fd)
