"""Basic indexing of arrays: bounds, too many indices, fancy selections equal to NumPy,
unsupported selections, value shapes, scalars and broadcasting, ``out``, 0-d arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import BoundsCheckError, IndexingError

from _helpers.arrays import chunk_keys, same

# ---------------------------------------------------------------------------
# indexing errors
# ---------------------------------------------------------------------------


@pytest.fixture
def arr2d() -> zarrfast.Array:
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(5, 4), chunks=(2, 3), dtype="i4")
    a[...] = np.arange(20).reshape(5, 4)
    return a


@pytest.mark.parametrize("sel", [5, -6, (0, 4), (0, -5), (Ellipsis, 4), np.int64(7),
                                 (slice(None), 10**12)])
def test_out_of_bounds(arr2d: zarrfast.Array, sel: Any) -> None:
    with pytest.raises(BoundsCheckError) as info:
        arr2d[sel]
    assert isinstance(info.value, IndexError)
    assert isinstance(info.value, IndexingError)
    with pytest.raises(BoundsCheckError):
        arr2d[sel] = 1
    same(arr2d[...], np.arange(20).reshape(5, 4).astype("i4"))  # nothing written


@pytest.mark.parametrize("sel", [(0, 0, 0), (1, 2, Ellipsis, 3), (..., 0, 0, 0)])
def test_too_many_indices(arr2d: zarrfast.Array, sel: Any) -> None:
    with pytest.raises(IndexingError, match="too many indices"):
        arr2d[sel]
    with pytest.raises(IndexingError):
        arr2d[sel] = 0


@pytest.mark.parametrize(
    "sel",
    [[0, 1], ([0, 1], 0), np.array([0, 1]), np.array([True, False, True, False, True]),
     (slice(None), [1]), ([4, 0, 0], [-1, 2, 3]), ([1, 3], slice(None, None, -1))],
    ids=lambda s: repr(s)[:30],
)
def test_fancy_selections_equal_numpy(arr2d: zarrfast.Array, sel: Any) -> None:
    """Selections the first version refused: zarr-python's dispatch, NumPy's results."""
    expected = np.arange(20).reshape(5, 4).astype("i4")
    same(arr2d[sel], expected[sel])
    arr2d[sel] = -7
    expected[sel] = -7
    same(arr2d[...], expected)


@pytest.mark.parametrize(
    "sel",
    [1.5, "a", None, (None, 0), True, (Ellipsis, Ellipsis),
     slice(0, 2, 0), slice(0.5, 2), {0: 1}, ([0.5, 1],), np.array([[True]])],
    ids=lambda s: repr(s)[:30],
)
def test_unsupported_selections(arr2d: zarrfast.Array, sel: Any) -> None:
    with pytest.raises(IndexingError):
        arr2d[sel]
    with pytest.raises(IndexingError):
        arr2d[sel] = 0
    same(arr2d[...], np.arange(20).reshape(5, 4).astype("i4"))


@pytest.mark.parametrize(
    ("sel", "value_shape", "sel_shape"),
    [(slice(0, 2), (3, 4), (2, 4)), (..., (5, 3), (5, 4)), ((0,), (5,), (4,)),
     ((slice(None), 1), (2, 5), (5,))],
)
def test_value_of_wrong_shape(arr2d: zarrfast.Array, sel: Any, value_shape: tuple,
                              sel_shape: tuple) -> None:
    with pytest.raises(IndexingError) as info:
        arr2d[sel] = np.zeros(value_shape, dtype="i4")
    msg = str(info.value)
    assert str(value_shape) in msg and str(sel_shape) in msg, msg
    same(arr2d[...], np.arange(20).reshape(5, 4).astype("i4"))


def test_scalar_and_broadcast_writes(arr2d: zarrfast.Array) -> None:
    expected = np.arange(20).reshape(5, 4).astype("i4")
    arr2d[1] = 7
    expected[1] = 7
    arr2d[:, 2] = np.int8(-3)
    expected[:, 2] = -3
    arr2d[2:5, :] = np.array([10, 11, 12, 13])  # row broadcast
    expected[2:5, :] = [10, 11, 12, 13]
    arr2d[::-2, 1:3] = np.array([[100], [200], [300]])  # column broadcast, negative step
    expected[::-2, 1:3] = [[100], [200], [300]]
    arr2d[..., 0] = np.array(5)  # 0-d array
    expected[..., 0] = 5
    arr2d[0, 0] = 2.9  # cast like NumPy (truncation)
    expected[0, 0] = 2.9
    same(arr2d[...], expected)


def test_empty_selections(arr2d: zarrfast.Array) -> None:
    store = arr2d.store
    before = {k: store.get(k) for k in store.list()}
    same(arr2d[2:2], np.zeros((0, 4), "i4"))
    same(arr2d[3:1:1, ::-1], np.zeros((0, 4), "i4"))
    arr2d[2:2] = 5
    arr2d[4:0, 1] = np.zeros(0, "i4")
    assert {k: store.get(k) for k in store.list()} == before


def test_out_parameter(arr2d: zarrfast.Array) -> None:
    out = np.empty((2, 4), dtype="i4")
    res = arr2d.get_basic_selection(slice(1, 3), out=out)
    assert res is out
    same(out, np.arange(4, 12).reshape(2, 4).astype("i4"))
    with pytest.raises(IndexingError):
        arr2d.get_basic_selection(slice(1, 3), out=np.empty((2, 4), dtype="i8"))
    with pytest.raises(IndexingError):
        arr2d.get_basic_selection(slice(1, 3), out=np.empty((4, 2), dtype="i4").T)


def test_zero_dimensional(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(), dtype="f8", fill_value=1.5)
    assert a.ndim == 0 and a.chunks == () and a.nchunks == 1
    assert a[()] == 1.5
    a[...] = 4.0
    assert a[...] == 4.0 and a[()] == 4.0
    assert chunk_keys(store) == ["c"]
    with pytest.raises(IndexingError):
        a[0]
    with pytest.raises(TypeError):
        len(a)


def test_iteration_and_array_protocol(arr2d: zarrfast.Array) -> None:
    rows = list(arr2d)
    assert len(rows) == 5 == len(arr2d)
    same(np.stack(rows), np.arange(20).reshape(5, 4).astype("i4"))
    same(np.asarray(arr2d), np.arange(20).reshape(5, 4).astype("i4"))
    same(np.asarray(arr2d, dtype="f8"), np.arange(20).reshape(5, 4).astype("f8"))
