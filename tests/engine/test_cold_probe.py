"""``engine.many.first_file_cold``: whether the file of the first chunk (or shard) a
basic selection touches is out of the page cache, learnt with a one-byte
``preadv(RWF_NOWAIT)`` and without reading it (``zarrfast.get_many`` of arrays on
stores of their own then reads them all at once, not the first one alone first)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast.engine.many import first_file_cold
from zarrfast.storage import LocalStore, MemoryStore

from _helpers.page_cache import evict, is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")

DATA = np.arange(96 * 96, dtype="i4").reshape(96, 96)


def _cold(a, sel) -> bool:
    return first_file_cold(a.store, a._chunk_path, a._metadata, sel)


def _make(tmp_path, **kw):
    root = tmp_path / "a.zarr"
    a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, dtype=DATA.dtype,
                              chunks=(16, 16), **kw)
    a[:] = DATA
    evict(root)
    if not is_cold(next(p for p in root.rglob("*") if p.is_file() and "z" not in p.name)):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    a = zarrfast.open_array(LocalStore(root), mode="r")
    a[:]  # (every file back in the page cache)
    return a, root


def test_probes_the_file_of_the_selections_first_chunk(tmp_path):
    a, root = _make(tmp_path)
    sel = (slice(20, 70), slice(40, 90))  # first chunk (1, 2): the file c/1/2
    assert not _cold(a, sel)
    evict(root / "c" / "0")  # (other chunks' files only)
    evict(root / "c" / "2")
    assert not _cold(a, sel)
    assert is_cold(root / "c" / "0" / "0")
    evict(root / "c" / "1")
    assert _cold(a, sel)
    assert _cold(a, (17, slice(None)))  # (an int index: chunk (1, 0))
    np.testing.assert_array_equal(a[sel], DATA[sel])
    assert not _cold(a, sel)


def test_probes_the_chunk_file_of_a_zarr_v2_array(tmp_path):
    a, root = _make(tmp_path, zarr_format=2, chunk_key_encoding={"name": "v2",
                                                                 "separator": "."})
    sel = (slice(20, 70), slice(40, 90))
    assert not _cold(a, sel)
    evict(root)
    assert _cold(a, sel)
    np.testing.assert_array_equal(a[sel], DATA[sel])
    assert not _cold(a, sel)


def test_probes_the_shard_file_of_a_sharded_array(tmp_path):
    a, root = _make(tmp_path, shards=(48, 48), compressors=None)
    sel = (slice(50, 60), slice(10, 20))  # shard (1, 0)
    evict(root / "c" / "0")
    assert not _cold(a, sel)
    evict(root / "c" / "1")
    assert _cold(a, sel)
    np.testing.assert_array_equal(a[sel], DATA[sel])
    assert not _cold(a, sel)


def test_says_no_when_it_cannot_say(tmp_path):
    a, root = _make(tmp_path, fill_value=0)
    evict(root)
    a0 = zarrfast.create_array(MemoryStore(), shape=DATA.shape, dtype=DATA.dtype,
                               chunks=(16, 16))
    a0[:] = DATA
    assert not _cold(a0, (slice(0, 5),))  # (not files)
    assert not _cold(a, (slice(0, 0), slice(None)))  # (nothing selected)
    assert not _cold(a, (100, 0))  # (out of bounds: the read refuses it)
    assert not _cold(a, ([1, 2], 0))  # (not a basic selection)
    (root / "c" / "0" / "0").unlink()  # (missing: the fill value)
    assert not _cold(a, (slice(0, 5),))
    assert _cold(a, (slice(16, 20),))
