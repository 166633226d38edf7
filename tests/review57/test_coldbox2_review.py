"""Review of h57/coldbox2 (0437925, not merged: 1-3% a box): a cold box keeping the
chunk files it announced open for their reads.  The guards hold for main's cold boxes,
which announce their files (``POSIX_FADV_WILLNEED``) and open each again to read it.

No finding.  Guards (pass on main and on the branch): a cold box whose files include
things that are not chunk files -- a FIFO (opened by the announcement without blocking,
then refused naming its key, no hang), a directory (no value: the fill value), a
symbolic link out of the store (refused naming its key), an uncompressed chunk file
longer than a chunk (refused naming its key) -- reads as the warm read does and leaves
no chunk file open; and a box whose chunk files were all replaced (renamed over) after
a first cold read reads the new values, in C and F order, little- and big-endian.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast._ext import _decode
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")
         and os.path.isdir("/proc/self/fd") and hasattr(os, "mkfifo")),
    reason="needs posix_fadvise, preadv(RWF_NOWAIT), mkfifo and /proc/self/fd (Linux)")

SHAPE = (40, 48, 36)
CHUNKS = (8, 8, 8)
DATA = (np.arange(np.prod(SHAPE), dtype="<u2").reshape(SHAPE) * 5 + 1).astype("<u2")
#: 3 x 3 x 2 = 18 chunk files; c/1/2/1 is one of them, not the first
BOX = (slice(4, 20), slice(10, 26), slice(6, 14))
ODD = "c/1/2/1"
ODD_BOX = (slice(8, 16), slice(16, 24), slice(8, 16))


def _array(root, compressors="default", endian="little", order=None):
    kw: dict = {} if compressors == "default" else {"compressors": compressors}
    if endian != "little":
        kw["serializer"] = {"name": "bytes", "configuration": {"endian": endian}}
    if order:
        kw["filters"] = [{"name": "transpose", "configuration": {"order": order}}]
    a = zarrfast.create_array(LocalStore(root / "a.zarr"), shape=SHAPE, dtype=DATA.dtype,
                              chunks=CHUNKS, fill_value=7, **kw)
    a[:] = DATA
    return zarrfast.open_array(LocalStore(root / "a.zarr"), mode="r")


def _cold(root) -> None:
    evict(root)
    if not is_cold(root / "a.zarr" / "c" / "0" / "1" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    evict(root)  # (again: the probe's miss may start reading the file it probed)


class _Announced:
    """Whether the reads in the block announced cold files (the path under review)."""

    def __enter__(self):
        self.before = _decode.cold_announcements()
        return self

    def __exit__(self, *exc):
        self.count = _decode.cold_announcements() - self.before
        return False


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fifo_in_a_cold_box_is_refused_naming_its_key(tmp_path, threads) -> None:
    a = _array(tmp_path)
    path = tmp_path / "a.zarr" / ODD
    os.remove(path)
    os.mkfifo(path)
    with zarrfast.config.set(threads=threads):
        with _Announced() as seen:
            for _ in range(2):
                _cold(tmp_path)
                with pytest.raises(ZarrfastError, match=ODD):
                    a[BOX]
        assert seen.count >= 1
        assert held_open(tmp_path / "a.zarr") == []


@pytest.mark.parametrize("threads", [1, 2])
def test_a_directory_in_a_cold_box_reads_as_the_fill_value(tmp_path, threads) -> None:
    a = _array(tmp_path)
    path = tmp_path / "a.zarr" / ODD
    os.remove(path)
    os.mkdir(path)
    want = DATA.copy()
    want[ODD_BOX] = 7
    with zarrfast.config.set(threads=threads):
        with _Announced() as seen:
            for _ in range(2):
                _cold(tmp_path)
                np.testing.assert_array_equal(a[BOX], want[BOX])
        assert seen.count >= 1
        assert held_open(tmp_path / "a.zarr") == []


@pytest.mark.parametrize("threads", [1, 2])
def test_a_link_out_of_the_store_in_a_cold_box_is_refused(tmp_path, threads) -> None:
    a = _array(tmp_path)
    path = tmp_path / "a.zarr" / ODD
    outside = tmp_path / "outside"
    outside.write_bytes(path.read_bytes())
    os.remove(path)
    os.symlink(outside, path)
    with zarrfast.config.set(threads=threads):
        with _Announced() as seen:
            for _ in range(2):
                _cold(tmp_path)
                with pytest.raises(ZarrfastError, match=ODD):
                    a[BOX]
        assert seen.count >= 1
        assert held_open(tmp_path / "a.zarr") == []
        assert held_open(outside) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_a_too_long_raw_chunk_in_a_cold_box_is_refused(tmp_path, threads) -> None:
    a = _array(tmp_path, compressors=None)
    path = tmp_path / "a.zarr" / ODD
    path.write_bytes(path.read_bytes() + b"\0\0")
    with zarrfast.config.set(threads=threads):
        with _Announced() as seen:
            for _ in range(2):
                _cold(tmp_path)
                with pytest.raises(ZarrfastError, match=ODD):
                    a[BOX]
        assert seen.count >= 1
        assert held_open(tmp_path / "a.zarr") == []


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("order", [None, [2, 1, 0]])
def test_a_cold_box_after_every_file_was_replaced_reads_the_new_values(tmp_path, endian,
                                                                      order) -> None:
    a = _array(tmp_path, endian=endian, order=order)
    with zarrfast.config.set(threads=2):
        _cold(tmp_path)
        np.testing.assert_array_equal(a[BOX], DATA[BOX])
        new = (DATA[::-1, :, ::-1] * 3).astype(DATA.dtype)
        zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r+")[...] = new
        with _Announced() as seen:
            _cold(tmp_path)
            np.testing.assert_array_equal(a[BOX], new[BOX])
        assert seen.count >= 1
        np.testing.assert_array_equal(a[3:30:-1], new[3:30:-1])
        np.testing.assert_array_equal(a[30:3:-3, ::-5, 1], new[30:3:-3, ::-5, 1])
        assert held_open(tmp_path / "a.zarr") == []
