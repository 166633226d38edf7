"""``LocalStore.set_regions``: a key the compiled writer did not write is written again
through ``set`` (its checks, a retry, or the error), and that retry honours ``fill``
as the kernel does: a key whose region is all fill is not stored, and is reported so
(``write_empty_chunks=False`` holds on that path too).

The compiled kernel checks ``fill`` before it opens a file, so a key it reports failed
is never all fill today; these tests make it report a failure for every key (or some),
as a kernel failing before its fill check would.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import zarrfast
from zarrfast import kernels
from zarrfast.storage import LocalStore

from _helpers.stores import TMP_MARK


def _leftovers(root) -> list[str]:
    return [f for _, _, files in os.walk(root) for f in files if TMP_MARK in f]


def _failing_kernel(monkeypatch, fail: set[bytes] | None = None) -> list[list[bytes]]:
    """Make ``kernels.write_region_files`` report ``EIO`` for the files named in
    ``fail`` (all of them when ``None``) after the real kernel ran; returns the names
    of each call."""
    real = kernels.write_region_files
    calls: list[list[bytes]] = []

    def failing(dir_fds, tmp_names, names, *args, **kwargs):
        calls.append(list(names))
        status = real(dir_fds, tmp_names, names, *args, **kwargs)
        for i, name in enumerate(names):
            if fail is None or name in fail:
                status[i] = errno.EIO
        return status

    monkeypatch.setattr(kernels, "write_region_files", failing)
    return calls


def _case():
    """Three 1-d chunks of 4 int32: data, all zeros (the fill), data."""
    a = np.array([1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8], dtype="<i4")
    flat = a.view(np.uint8)
    offsets = np.array([[0], [16], [32]], dtype=np.int64)
    strides = np.array([4], dtype=np.int64)
    shape = np.array([4], dtype=np.int64)
    return a, flat, offsets, strides, shape


@pytest.mark.parametrize(("extra", "first"), [(None, False), (b"INDEX", False),
                                              (b"INDEX", True)])
def test_retry_of_a_failed_key_honours_fill(tmp_path, monkeypatch, extra, first):
    """Every key reported failed by the kernel: the retry stores the data keys, not
    the all-fill key, and the mask says which was left out, as without a failure."""
    a, flat, offsets, strides, shape = _case()
    keys = ["c/0", "c/1", "c/2"]
    fill = np.zeros(4, dtype=np.uint8)
    store = LocalStore(tmp_path)
    assert store.fast_set_regions
    calls = _failing_kernel(monkeypatch)
    skipped = store.set_regions(keys, flat, offsets, strides, shape, 4, fill=fill,
                                extra=extra, extra_first=first)
    assert calls, "the compiled path was not taken"
    assert skipped.tolist() == [False, True, False]
    assert store.get("c/1") is None
    e = extra or b""
    for key, block in (("c/0", a[:4]), ("c/2", a[8:])):
        assert store.get(key) == (e + block.tobytes() if first else block.tobytes() + e)
    assert _leftovers(tmp_path) == []


def test_retry_of_one_failed_key_keeps_the_others_mask(tmp_path, monkeypatch):
    """Only the all-fill key reported failed: it is still not stored; the others are
    written by the kernel, and the mask is that of a run without a failure."""
    _, flat, offsets, strides, shape = _case()
    fill = np.zeros(4, dtype=np.uint8)
    store = LocalStore(tmp_path)
    _failing_kernel(monkeypatch, fail={b"1"})
    skipped = store.set_regions(["c/0", "c/1", "c/2"], flat, offsets, strides, shape, 4,
                                fill=fill)
    assert skipped.tolist() == [False, True, False]
    assert sorted(store.list()) == ["c/0", "c/2"]


def test_retry_without_fill_stores_every_key(tmp_path, monkeypatch):
    """Without ``fill`` the retry stores every key, the all-zero one too."""
    a, flat, offsets, strides, shape = _case()
    store = LocalStore(tmp_path)
    _failing_kernel(monkeypatch)
    skipped = store.set_regions(["c/0", "c/1", "c/2"], flat, offsets, strides, shape, 4)
    assert skipped.tolist() == [False, False, False]
    assert store.get("c/1") == a[4:8].tobytes()


def test_array_write_empty_chunks_false_through_the_retry(tmp_path, monkeypatch):
    """An uncompressed array with ``write_empty_chunks=False``, every kernel write
    reported failed: the chunks of fill are not stored (and one that was is removed)."""
    a = zarrfast.create_array(str(tmp_path), shape=(12,), chunks=(4,), dtype="<i4",
                              compressors=None, fill_value=0,
                              config={"write_empty_chunks": False})
    a[...] = np.arange(1, 13, dtype="<i4")
    assert sorted(os.listdir(tmp_path / "c")) == ["0", "1", "2"]
    calls = _failing_kernel(monkeypatch)
    data = np.array([1, 2, 3, 4, 0, 0, 0, 0, 9, 9, 9, 9], dtype="<i4")
    a[...] = data
    assert calls, "the array write did not go through set_regions"
    assert sorted(os.listdir(tmp_path / "c")) == ["0", "2"]
    np.testing.assert_array_equal(a[...], data)
    assert _leftovers(tmp_path) == []
