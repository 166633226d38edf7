"""Cold box reads: random boxes whose chunk files (or shards) were evicted from the page
cache before the read.  A cold box read announces its files (``POSIX_FADV_WILLNEED``)
before its threads read them.  Whatever the path, the values are the warm read's and NumPy's, no chunk file stays
open once the read returned (read, refused or fill value), and a damaged or missing
chunk file is named or filled as when warm."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast._ext import _decode
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict as _evict
from _helpers.page_cache import held_open, is_cold, needs_cold_reads

pytestmark = needs_cold_reads

SHAPE = (40, 48, 36)
DATA = (np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE) * 7 + 3).astype("u2")
CHUNKS = (8, 8, 8)
LAYOUTS = {
    "zstd": {"chunks": CHUNKS},
    "blosc": {"chunks": CHUNKS, "compressors": {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}},
    "raw": {"chunks": CHUNKS, "compressors": None},
    "sharded": {"chunks": CHUNKS, "shards": (16, 16, 16)},
}


def _chunk_files_open(array_root) -> list[str]:
    """The chunk files (below ``c``) of the array at ``array_root`` held open."""
    return held_open(os.path.join(array_root, "c"))


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """One array of each layout on a disk file system (skipped on tmpfs)."""
    root = tmp_path_factory.mktemp("coldboxes")
    out = {}
    for name, kw in LAYOUTS.items():
        a = zarrfast.create_array(LocalStore(root / f"{name}.zarr"), shape=SHAPE,
                                  dtype=DATA.dtype, **kw)
        a[:] = DATA
        out[name] = zarrfast.open_array(LocalStore(root / f"{name}.zarr"), mode="r")
    _evict(root)
    probe = root / "zstd.zarr" / "c" / "0" / "0" / "0"
    if not is_cold(probe):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return root, out


def _box(draw, one_chunk: bool) -> tuple[slice, ...]:
    """A random box: each side 1 to one chunk long (``one_chunk``: the harness's
    ``random`` boxes) or one to two chunks long (its ``boxes``)."""
    sel = []
    for n, c in zip(SHAPE, CHUNKS, strict=True):
        lo, hi = (1, c) if one_chunk else (c, 2 * c)
        size = draw(st.integers(lo, min(hi, n)))
        start = draw(st.integers(0, n - size))
        sel.append(slice(start, start + size))
    return tuple(sel)


@st.composite
def boxes(draw):
    one_chunk = draw(st.booleans())
    return [_box(draw, one_chunk) for _ in range(draw(st.integers(1, 4)))]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(sorted(LAYOUTS)), threads=st.sampled_from([1, 2, 3]),
       sels=boxes())
def test_cold_random_boxes_equal_numpy_and_close_every_file(arrays, layout, threads, sels):
    root, made = arrays
    a = made[layout]
    with zarrfast.config.set(threads=threads):
        for sel in sels:
            a[sel]  # (a sharded array's indexes cached: then only the data is cold)
        for sel in sels:
            _evict(root / f"{layout}.zarr")
            np.testing.assert_array_equal(a[sel], DATA[sel])
        if layout != "sharded":  # (announced chunk files kept open: all closed)
            assert _chunk_files_open(root / f"{layout}.zarr") == []
        for sel in sels:  # warm: the same values
            np.testing.assert_array_equal(a[sel], DATA[sel])


#: a box one to two chunks long per side: 3 x 3 x 2 = 18 chunk files, the first c/0/1/0
BOX = (slice(4, 20), slice(10, 26), slice(6, 14))


def _until_cold(root, read, attempts: int = 5) -> int:
    """``read()`` with ``root``'s pages evicted until a read announced its files
    (eviction is best effort); how many of the reads did."""
    announced = 0
    for _ in range(attempts):
        _evict(root)
        before = _decode.cold_announcements()
        read()
        announced += _decode.cold_announcements() > before
        if announced:
            break
    return announced


def _cold_box(root, a, want, attempts: int = 5) -> int:
    """Read ``BOX`` cold until a read announced its files; how many of the reads did."""
    return _until_cold(root, lambda: np.testing.assert_array_equal(a[BOX], want), attempts)


def _refused(a, box, key: str):
    """A read of ``box`` that must be refused naming ``key``."""
    def read() -> None:
        with pytest.raises(ZarrfastError, match=key):
            a[box]
    return read


@pytest.mark.parametrize("threads", [1, 2])
def test_a_cold_box_with_missing_chunks_fills_them_and_closes_every_file(tmp_path,
                                                                          threads):
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS, fill_value=9)
    a[:] = DATA
    for key in ("c/0/3/0", "c/1/2/1", "c/2/3/1"):  # (rows of the box, not the first)
        os.remove(tmp_path / "a.zarr" / key)
    want = DATA.copy()
    want[0:8, 24:32, 0:8] = want[8:16, 16:24, 8:16] = want[16:24, 24:32, 8:16] = 9
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    _evict(tmp_path)
    if not is_cold(tmp_path / "a.zarr" / "c" / "0" / "1" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    with zarrfast.config.set(threads=threads):
        assert _cold_box(tmp_path, a, want[BOX]) >= 1
        assert _chunk_files_open(tmp_path / "a.zarr") == []


@pytest.mark.parametrize("threads", [1, 2])
def test_a_damaged_chunk_of_a_cold_box_is_named_and_every_file_closed(tmp_path, threads):
    """A chunk file that does not decode, among the files a cold box announced (and
    kept open): the read raises naming it, as a warm one does, and leaves no
    descriptor open."""
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS)
    a[:] = DATA
    bad = tmp_path / "a.zarr" / "c" / "1" / "2" / "1"
    bad.write_bytes(b"not zstd at all" * 100)
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    _evict(tmp_path)
    if not is_cold(tmp_path / "a.zarr" / "c" / "0" / "1" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    with zarrfast.config.set(threads=threads):
        assert _until_cold(tmp_path, _refused(a, BOX, "c/1/2/1")) >= 1
        assert _chunk_files_open(tmp_path / "a.zarr") == []


def test_a_cold_box_reads_a_chunk_file_replaced_after_its_announcement(tmp_path):
    """A chunk file replaced (renamed over, as writers replace them) between two cold
    reads of a box: the second read gives the new values; nothing read through a
    descriptor kept from an earlier read."""
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS)
    a[:] = DATA
    if not _cold_box(tmp_path, a, DATA[BOX]):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    w = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r+")
    new = DATA.copy()
    new[8:16, 16:24, 8:16] = 4242
    w[8:16, 16:24, 8:16] = 4242
    assert _cold_box(tmp_path, a, new[BOX]) >= 1


#: a box of 3 x 3 x 3 = 27 chunks (sharded: of 8 shards): more rows than a block of
#: announcements (``_AHEAD_BLOCK``), so that a read announcing them a few at a time
#: would reach rows past its first window (a change tried at stop 59, then reverted:
#: these guard either way)
BOX27 = (slice(4, 20), slice(5, 21), slice(3, 19))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_cold_box_of_27_chunks_equals_numpy_and_closes_every_file(arrays, layout,
                                                                    threads):
    root, made = arrays
    a = made[layout]
    with zarrfast.config.set(threads=threads):
        a[BOX27]  # (a sharded array's indexes cached: then only the data is cold)
        announced = _until_cold(root / f"{layout}.zarr",
                                lambda: np.testing.assert_array_equal(a[BOX27], DATA[BOX27]))
        if layout != "raw":  # (uncompressed chunks may be read another way)
            assert announced >= 1
        if layout != "sharded":
            assert _chunk_files_open(root / f"{layout}.zarr") == []
        np.testing.assert_array_equal(a[BOX27], DATA[BOX27])  # (warm: the same)


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_box_rows_past_the_first_window_missing_or_damaged(tmp_path, threads):
    """A cold box of 27 chunk files whose last rows are missing (the fill value) or
    damaged (named, as when warm); no file left open."""
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS, fill_value=9)
    a[:] = DATA
    os.remove(tmp_path / "a.zarr" / "c" / "2" / "2" / "1")  # (row 25 of 27)
    want = DATA.copy()
    want[16:24, 16:24, 8:16] = 9
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    _evict(tmp_path)
    if not is_cold(tmp_path / "a.zarr" / "c" / "0" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    with zarrfast.config.set(threads=threads):
        assert _until_cold(tmp_path,
                           lambda: np.testing.assert_array_equal(a[BOX27], want[BOX27])) >= 1
        assert _chunk_files_open(tmp_path / "a.zarr") == []
        (tmp_path / "a.zarr" / "c" / "2" / "2" / "2").write_bytes(b"not zstd" * 100)
        assert _until_cold(tmp_path, _refused(a, BOX27, "c/2/2/2")) >= 1
        assert _chunk_files_open(tmp_path / "a.zarr") == []
