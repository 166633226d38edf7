"""Fancy indexing against NumPy and zarr-python (Hypothesis).

Orthogonal (``oindex``), coordinate (``vindex``), mask and block selections, the
dispatch of ``a[...]``, and the NumPy mixed advanced indexing zarr-python refuses --
reads and writes, on odd shapes and chunkings (0-d and zero-length too), for plain v3
(zstd and uncompressed), transposed big-endian, sharded and Zarr v2 (order "F")
arrays, and for v2 structured and object-string arrays; plus the errors bad selections
raise, and differential runs against zarr-python on the same data.

Expected values come from NumPy on the same data (``x[np.ix_(...)]`` for orthogonal
selections, ``x[sel]`` otherwise); which method ``a[sel]`` must behave like comes from
zarr-python's own dispatch predicates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, TransposeCodec
from zarrfast.errors import BoundsCheckError, IndexingError, ReadOnlyError

try:
    import zarr as zarr_python
    from zarr.core.indexing import is_pure_fancy_indexing, is_pure_orthogonal_indexing
except ImportError:  # pragma: no cover - zarr-python is a test-only peer
    zarr_python = None

needs_zarr = [
    pytest.mark.interop,
    pytest.mark.skipif(zarr_python is None, reason="needs zarr-python"),
]

FILL = -1
KINDS = ("v3", "v3_raw", "v3_transpose_be", "sharded", "v2_F")
SETTINGS = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                           HealthCheck.data_too_large],
)
FEW = settings(SETTINGS, max_examples=80)

# ---------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """An array to build with zarrfast (and zarr-python) holding :attr:`data`."""

    kind: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None
    dtype: str
    rows: int | None  # only data[:rows] is written (the rest stays fill); None: all

    @property
    def data(self) -> np.ndarray:
        x = np.arange(1, math.prod(self.shape) + 1).reshape(self.shape).astype(self.dtype)
        if self.rows is not None:
            x[self.rows:] = FILL
        return x

    @property
    def block_shape(self) -> tuple[int, ...]:
        """The blocks of ``a.blocks``: shards for a sharded array (as in zarr-python)."""
        return self.shards if self.shards is not None else self.chunks

    def _region(self) -> Any:
        return (slice(0, self.rows),) if self.rows is not None else Ellipsis

    def _kwargs(self, transpose: Any, bytes_codec: Any) -> dict[str, Any]:
        kw: dict[str, Any] = dict(shape=self.shape, chunks=self.chunks, dtype=self.dtype,
                                  fill_value=FILL)
        if self.kind == "v3_raw":
            kw["compressors"] = None
        elif self.kind == "v3_transpose_be":
            kw["filters"] = [transpose(order=tuple(reversed(range(len(self.shape)))))]
            kw["serializer"] = bytes_codec(endian="big")
        elif self.kind == "sharded":
            kw["shards"] = self.shards
        elif self.kind == "v2_F":
            kw.update(zarr_format=2, order="F")
        return kw

    def fast(self, store: Any = None) -> zarrfast.Array:
        store = zarrfast.MemoryStore() if store is None else store
        a = zarrfast.create_array(store, **self._kwargs(TransposeCodec, BytesCodec))
        a[self._region()] = self.data[self._region()]
        return a

    def zarr(self) -> Any:
        from zarr.codecs import BytesCodec as ZBytes
        from zarr.codecs import TransposeCodec as ZTranspose

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = zarr_python.create_array(zarr_python.storage.MemoryStore(),
                                         **self._kwargs(ZTranspose, ZBytes))
            z[self._region()] = self.data[self._region()]
        return z


@st.composite
def cases(draw: Any, kinds: tuple[str, ...] = KINDS, min_ndim: int = 0, max_ndim: int = 3,
          min_side: int = 0, max_side: int = 7) -> Case:
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(min_side, max_side), min_size=ndim,
                                max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n + 1)) for n in shape)
    kind = draw(st.sampled_from(kinds))
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if kind == "sharded" else None
    dtype = draw(st.sampled_from(["<i4", "<f8", "<i2"] + ([">i4"] if kind == "v2_F" else [])))
    rows = draw(st.none() | st.integers(0, shape[0])) if ndim else None
    return Case(kind, shape, chunks, shards, dtype, rows)


def check(got: Any, want: Any) -> None:
    """Same shape, dtype and values."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.ndim == 0:  # NumPy scalars are native-endian
        assert got.dtype.newbyteorder("=") == want.dtype.newbyteorder("="), (got.dtype,
                                                                             want.dtype)
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def zarr_dispatch(sel: Any, ndim: int) -> str | None:
    """What zarr-python's ``Array.__getitem__`` does with ``sel``: "vindex",
    "orthogonal" or "basic" (``None`` without zarr-python)."""
    if zarr_python is None:
        return None
    if is_pure_fancy_indexing(sel, ndim):
        return "vindex"
    if is_pure_orthogonal_indexing(sel, ndim):
        return "orthogonal"
    return "basic"


def _is_fancy_item(s: Any) -> bool:
    return isinstance(s, (list, np.ndarray))


# ---------------------------------------------------------------------------
# selections and values
# ---------------------------------------------------------------------------

INT_DTYPES = (np.int64, np.int32, np.int16, np.intp)
UINT_DTYPES = (np.uint8, np.uint32, np.uint64)


@st.composite
def int_arrays(draw: Any, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """Integer indices into a dimension of length ``n`` (negatives, repeats, any order)."""
    size = math.prod(shape)
    vals = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size)) if size else []
    dts = INT_DTYPES + (UINT_DTYPES if all(v >= 0 for v in vals) else ())
    return np.array(vals, dtype=draw(st.sampled_from(dts))).reshape(shape)


def slices(n: int, negative_steps: bool = True) -> st.SearchStrategy[slice]:
    bound = st.none() | st.integers(-n - 2, n + 2)
    steps = [None, 1, 2, 3] + ([-1, -2, -3] if negative_steps else [])
    return st.builds(slice, bound, bound, st.sampled_from(steps))


@st.composite
def ints(draw: Any, n: int) -> Any:
    i = draw(st.integers(-n, n - 1))
    return draw(st.sampled_from([int, np.int64, np.int32]))(i)


@st.composite
def masks(draw: Any, n: int) -> np.ndarray:
    return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)


@st.composite
def orth_items(draw: Any, n: int, negative_steps: bool = True) -> Any:
    kinds = ["slice", "array", "list", "mask"] + (["int"] if n else [])
    k = draw(st.sampled_from(kinds))
    if k == "int":
        return draw(ints(n))
    if k == "slice":
        return draw(slices(n, negative_steps))
    if k == "mask":
        m = draw(masks(n))
        return m if draw(st.booleans()) else [bool(v) for v in m]
    arr = draw(int_arrays(n, (draw(st.integers(0, 6)) if n else 0,)))
    return arr if k == "array" else [int(v) for v in arr]


@st.composite
def orth_selections(draw: Any, shape: tuple[int, ...], negative_steps: bool = True,
                    ellipsis: bool = True) -> tuple[Any, list[Any]]:
    """An orthogonal selection and its per-dimension items (missing ones as ``:``)."""
    ndim = len(shape)
    items = [draw(orth_items(n, negative_steps)) for n in shape]
    form = draw(st.sampled_from(["full", "short", "ellipsis"] if ellipsis else
                                ["full", "short"]))
    if form == "short":
        k = draw(st.integers(0, ndim))
        sel: Any = tuple(items[:k])
        items[k:] = [slice(None)] * (ndim - k)
    elif form == "ellipsis":
        i = draw(st.integers(0, ndim))
        j = draw(st.integers(i, ndim))
        sel = (*items[:i], Ellipsis, *items[j:])
        items[i:j] = [slice(None)] * (j - i)
    else:
        sel = tuple(items)
    if len(sel) == 1 and draw(st.booleans()):
        sel = sel[0]
    return sel, items


def orthogonal_numpy(x: np.ndarray, items: list[Any]
                     ) -> tuple[tuple[np.ndarray, ...], tuple[int, ...], tuple[int, ...]]:
    """NumPy's ``np.ix_`` indices for per-dimension items, the full (undropped) shape and
    the result shape (int dimensions dropped)."""
    idx, keep = [], []
    for item, n in zip(items, x.shape, strict=True):
        if isinstance(item, slice):
            idx.append(np.arange(*item.indices(n)))
            keep.append(True)
        elif isinstance(item, (int, np.integer)):
            idx.append(np.array([item]))
            keep.append(False)
        else:
            arr = np.asarray(item)
            idx.append(arr if arr.dtype == bool else arr.astype(np.intp))
            keep.append(True)
    full = tuple(len(np.flatnonzero(i)) if i.dtype == bool else len(i) for i in idx)
    out = tuple(s for s, k in zip(full, keep, strict=True) if k)
    return tuple(idx), full, out


def orthogonal_get(x: np.ndarray, items: list[Any]) -> np.ndarray:
    idx, _, out = orthogonal_numpy(x, items)
    return np.asarray(x[np.ix_(*idx)] if idx else x[()], dtype=x.dtype).reshape(out)


def orthogonal_set(x: np.ndarray, items: list[Any], value: Any) -> np.ndarray:
    x2 = x.copy()
    idx, full, out = orthogonal_numpy(x, items)
    v = np.broadcast_to(np.asarray(value, dtype=x.dtype), out).reshape(full)
    if idx:
        x2[np.ix_(*idx)] = v  # repeated indices: the last write wins
    else:
        x2[()] = v
    return x2


@st.composite
def values(draw: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """A value to write to a selection of ``shape``: full, scalar, broadcast or nested list.
    Distinct negative numbers (never the fill value), so misplaced writes show."""
    dtype = np.dtype(dtype)
    form = draw(st.sampled_from(["full", "scalar", "trailing", "list"]))
    full = (-(np.arange(math.prod(shape)) + 2)).astype(dtype).reshape(shape)
    if form == "scalar":
        # (FILL: chunks written all-fill are deleted, then read back as fill)
        return draw(st.sampled_from([-5, np.array(-5, dtype=dtype), dtype.type(-5), FILL]))
    if form == "trailing" and shape:
        k = draw(st.integers(1, len(shape)))
        t = (-(np.arange(math.prod(shape[-k:])) + 7)).astype(dtype).reshape(shape[-k:])
        return t.reshape((1, *t.shape)) if draw(st.booleans()) and k < len(shape) else t
    if form == "list" and full.size:  # (an empty nested list would lose the shape)
        return full.tolist()
    return full


@st.composite
def coord_selections(draw: Any, shape: tuple[int, ...], lists: bool = True,
                     scalars: bool = True, zero_d: bool = True) -> tuple[Any, ...]:
    """One integer array (or int) per dimension, broadcastable together; at least one
    array."""
    ndim = len(shape)
    bnd = draw(st.integers(1, 2))
    bshape = draw(st.lists(st.integers(0, 4), min_size=bnd, max_size=bnd))
    if 0 in shape and 0 not in bshape:
        bshape[draw(st.integers(0, bnd - 1))] = 0
    sel: list[Any] = []
    for n in shape:
        if scalars and n and draw(st.integers(0, 3)) == 0:
            sel.append(draw(ints(n)))
            continue
        # broadcastable to bshape: some dims 1, some leading dims dropped (never a 0 one)
        ashape = [b if (b == 0 or draw(st.booleans())) else 1 for b in bshape]
        for _ in range(draw(st.integers(0, len(ashape)))):
            if ashape and ashape[0] != 0 and (zero_d or len(ashape) > 1):
                ashape.pop(0)
        arr = draw(int_arrays(n, tuple(ashape)))
        sel.append(arr.tolist() if lists and arr.ndim == 1 and draw(st.booleans()) else arr)
    if not any(_is_fancy_item(s) for s in sel):
        sel[0] = np.array([sel[0]])
    assert ndim
    return tuple(sel)


def coordinates(sel: tuple[Any, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Flat linear positions a coordinate selection touches (in result order)."""
    b = np.broadcast_arrays(*(np.asarray(s, dtype=np.intp) for s in sel))
    if not b[0].size:
        return np.zeros(0, dtype=np.intp)
    return np.ravel_multi_index(tuple(v.ravel() % n for v, n in zip(b, shape, strict=True)),
                                shape)


def check_scatter(got: np.ndarray, x: np.ndarray, lin: np.ndarray, value: Any,
                  out_shape: tuple[int, ...]) -> None:
    """After writing ``value`` to positions ``lin`` (perhaps repeated) of ``x``: written
    positions hold one of the values written there, the others are unchanged."""
    v = np.broadcast_to(np.asarray(value, dtype=x.dtype), out_shape).ravel()
    if len(np.unique(lin)) == len(lin):
        x2 = x.copy().ravel()
        x2[lin] = v
        check(got, x2.reshape(x.shape))
        return
    touched = np.zeros(x.size, dtype=bool)
    touched[lin] = True
    np.testing.assert_array_equal(got.ravel()[~touched], x.ravel()[~touched])
    for p in np.unique(lin):
        assert got.flat[p] in set(v[lin == p].tolist()), (p, got.flat[p], v[lin == p])


# ---------------------------------------------------------------------------
# orthogonal selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(), data=st.data())
def test_orthogonal_get(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel, items = data.draw(orth_selections(case.shape))
    want = orthogonal_get(x, items)
    check(a.oindex[sel], want)
    check(a.get_orthogonal_selection(sel), want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_orthogonal_selection(sel, out=out) is out
    check(out, want)
    sels = sel if isinstance(sel, tuple) else (sel,)
    how = zarr_dispatch(sel, len(case.shape))
    if how == "orthogonal" or (how == "basic" and not any(map(_is_fancy_item, sels))) or (
            how == "vindex" and len(case.shape) == 1):
        check(a[sel], want)  # where zarr-python's a[sel] is this orthogonal selection


@SETTINGS
@given(case=cases(), data=st.data())
def test_orthogonal_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel, items = data.draw(orth_selections(case.shape))
    _, _, out = orthogonal_numpy(x, items)
    value = data.draw(values(out, x.dtype))
    sels = sel if isinstance(sel, tuple) else (sel,)
    how = zarr_dispatch(sel, len(case.shape))
    ways = ["oindex", "method"]
    if how == "orthogonal" or (how == "basic" and not any(map(_is_fancy_item, sels))):
        ways.append("[]")
    way = data.draw(st.sampled_from(ways))
    if way == "oindex":
        a.oindex[sel] = value
    elif way == "method":
        a.set_orthogonal_selection(sel, value)
    else:
        a[sel] = value
    check(a[...], orthogonal_set(x, items, value))


def test_orthogonal_repeated_indices_last_write_wins() -> None:
    x = np.arange(6 * 7, dtype="i4").reshape(6, 7)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(4, 3))
    rows, cols = [5, 0, 5, -1, 2], [6, 0, 3, 0, -1]
    v = -np.arange(25, dtype="i4").reshape(5, 5) - 1
    a.oindex[rows, cols] = v
    x[np.ix_(rows, cols)] = v
    check(a[...], x)
    # row 5 is rows[0], rows[2] and rows[3]; column 6 is cols[0] and cols[4]
    assert a[5, 6] == v[3, 4]


# ---------------------------------------------------------------------------
# coordinate selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_coordinate_get(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(coord_selections(case.shape))
    want = np.asarray(x[sel], dtype=x.dtype)  # (a 0-d result is a native-endian scalar)
    check(a.vindex[sel], want)
    check(a.get_coordinate_selection(sel), want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_coordinate_selection(sel, out=out) is out
    check(out, want)
    if zarr_dispatch(sel, len(case.shape)) == "vindex":
        check(a[sel], want)


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_coordinate_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(coord_selections(case.shape))
    out_shape = np.broadcast_shapes(*(np.shape(s) for s in sel))
    value = data.draw(values(out_shape, x.dtype))
    ways = ["vindex", "method"] + (["[]"] if zarr_dispatch(sel, len(case.shape)) == "vindex"
                                   else [])
    way = data.draw(st.sampled_from(ways))
    if way == "vindex":
        a.vindex[sel] = value
    elif way == "method":
        a.set_coordinate_selection(sel, value)
    else:
        a[sel] = value
    check_scatter(a[...], x, coordinates(sel, case.shape), value, out_shape)


def test_zero_d_index_array_in_brackets() -> None:
    """zarr-python dispatches a 0-d integer array among coordinate arrays to vindex."""
    x = np.arange(12).reshape(3, 4)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 2))
    sel = (np.array([0, 2]), np.array(1))
    check(a.vindex[sel], x[sel])
    check(a[sel], x[sel])
    a[sel] = [-1, -2]
    x[sel] = [-1, -2]
    check(a[...], x)


def test_coordinate_unique_write_matches_numpy() -> None:
    x = np.arange(5 * 6 * 4, dtype="f8").reshape(5, 6, 4)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 4, 3))
    sel = (np.array([[4, -5], [2, 0]]), np.array([[-1], [3]]), 2)
    v = np.array([[10.0, 11.0], [12.0, 13.0]])
    a.vindex[sel] = v
    x[sel] = v
    check(a[...], x)
    check(a[sel], x[sel])


# ---------------------------------------------------------------------------
# mask selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_mask_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    mask = data.draw(masks(x.size)).reshape(x.shape)
    want = x[mask]
    check(a.vindex[mask], want)
    check(a.get_mask_selection(mask), want)
    check(a[mask], want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_mask_selection(mask, out=out) is out
    check(out, want)
    value = data.draw(values(want.shape, x.dtype))
    way = data.draw(st.sampled_from(["vindex", "method", "[]"]))
    if way == "vindex":
        a.vindex[mask] = value
    elif way == "method":
        a.set_mask_selection(mask, value)
    else:
        a[mask] = value
    x2 = x.copy()
    x2[mask] = value
    check(a[...], x2)


# ---------------------------------------------------------------------------
# NumPy mixed advanced indexing (zarr-python refuses; zarrfast does what NumPy does)
# ---------------------------------------------------------------------------


@st.composite
def mixed_selections(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Two or more index arrays (or masks) with slices or an Ellipsis (and maybe ints),
    or index arrays with an Ellipsis (which may stand for no dimension, even between index
    arrays): selections zarr-python refuses."""
    ndim = len(shape)
    bnd = draw(st.integers(1, 2))
    bshape = draw(st.lists(st.integers(0, 3), min_size=bnd, max_size=bnd))
    items: list[Any] = []
    for n in shape:
        role = draw(st.sampled_from(["slice", "array", "array", "int", "mask"] if n else
                                    ["slice"]))
        if role == "slice":
            items.append(draw(slices(n)))
        elif role == "int":
            items.append(draw(ints(n)))
        elif role == "mask":
            items.append(draw(masks(n)))
        else:
            ashape = [b if (b == 0 or draw(st.booleans())) else 1 for b in bshape]
            if draw(st.booleans()) and len(ashape) > 1 and ashape[0] != 0:
                ashape.pop(0)
            arr = draw(int_arrays(n, tuple(ashape)))
            items.append(arr.tolist() if arr.ndim == 1 and draw(st.booleans()) else arr)
    sel: list[Any] = list(items)
    if draw(st.booleans()):  # an Ellipsis standing for zero or more full slices
        i = draw(st.integers(0, ndim))
        j = draw(st.integers(i, ndim))
        sel = [*items[:i], Ellipsis, *items[j:]]
    arrays = [s for s in sel if _is_fancy_item(s)]
    has_ellipsis = any(s is Ellipsis for s in sel)
    assume((len(arrays) >= 2 and (has_ellipsis or any(isinstance(s, slice) for s in sel)))
           or (len(arrays) >= 1 and has_ellipsis))
    return tuple(sel)


def _numpy_or_error(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except IndexError as e:
        return e


@SETTINGS
@given(case=cases(min_ndim=2, max_ndim=4, max_side=5), data=st.data())
def test_numpy_mixed_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(mixed_selections(case.shape))
    if zarr_python is not None:  # zarr-python would refuse these
        assert zarr_dispatch(sel, len(case.shape)) == "basic"
    want = _numpy_or_error(lambda: np.asarray(x[sel]))
    if isinstance(want, IndexError):  # e.g. arrays (or masks) that don't broadcast
        with pytest.raises(IndexError):
            a[sel]
        return
    check(a[sel], want)
    value = data.draw(values(want.shape, x.dtype))
    x2 = x.copy()
    x2[sel] = value
    a[sel] = value
    check(a[...], x2)


MIXED_EXAMPLES = [
    ("arrays_around_slice", (5, 6, 7), ([1, 2], slice(None), [0, 3])),
    ("array_int_slice", (5, 6, 7), ([0, 1], 2, slice(1, 3))),
    ("ellipsis_array", (5, 6, 7), (Ellipsis, [4, 0])),
    ("slice_then_arrays", (5, 6, 7), (slice(None, None, -2), np.array([[0], [5]]), [1, -1])),
    ("arrays_then_slice", (5, 6, 7), ([4, 4, 0], [-1, 2, 2], slice(2, None))),
    ("separated_arrays_4d", (3, 4, 5, 6), ([2, 0], slice(1, 3), 3, [5, 1])),
    ("adjacent_arrays_4d", (3, 4, 5, 6), (slice(None), [3, 0], np.array([[1], [4]]), 2)),
    ("arrays_with_ellipsis", (5, 6, 7), ([1, 2], [3, 4], Ellipsis)),
    ("mask_and_array", (5, 6, 7), (slice(None), np.array([1, 0, 1, 0, 0, 0], bool), [6, 0])),
    ("empty_arrays", (5, 6, 7), (np.zeros(0, int), slice(None), np.zeros(0, int))),
]


@pytest.mark.parametrize("shape,sel", [m[1:] for m in MIXED_EXAMPLES],
                         ids=[m[0] for m in MIXED_EXAMPLES])
@pytest.mark.parametrize("kind", KINDS)
def test_numpy_mixed_examples(kind: str, shape: tuple[int, ...], sel: tuple[Any, ...]) -> None:
    case = Case(kind, shape, (2, 4, 3, 5)[:len(shape)],
                (4, 4, 6, 5)[:len(shape)] if kind == "sharded" else None, "<i4", None)
    x, a = case.data, case.fast()
    check(a[sel], x[sel])
    v = -np.arange(np.asarray(x[sel]).size, dtype="i4").reshape(np.shape(x[sel])) - 2
    x[sel] = v
    a[sel] = v
    check(a[...], x)


@st.composite
def any_selections(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Anything NumPy might take for ``x[sel]``: ints, 0-d index arrays, slices, an
    Ellipsis, 1-d and multi-dimensional index arrays and (nested) lists, masks over one or
    more dimensions (of those dimensions' shape); index arrays drawn broadcastable (masks'
    counts need not broadcast)."""
    ndim = len(shape)
    bnd = draw(st.integers(1, 2))
    bshape = draw(st.lists(st.integers(0, 3), min_size=bnd, max_size=bnd))
    items: list[Any] = []
    d, ellipsis = 0, False
    # (after an Ellipsis, name every remaining dimension: the Ellipsis then stands for
    # exactly the dimensions drawn for it and the masks line up with their dimensions)
    while d < ndim and (ellipsis or not (items and draw(st.integers(0, 6)) == 0)):
        if not ellipsis and draw(st.integers(0, 5)) == 0:
            items.append(Ellipsis)
            ellipsis = True
            d += draw(st.integers(0, ndim - d))
            continue
        n = shape[d]
        kind = draw(st.sampled_from(
            ["slice", "list", "array", "nested", "mask", "kmask"]
            + (["int", "zero_d", "array"] if n else [])))
        if kind == "slice":
            items.append(draw(slices(n)))
        elif kind == "int":
            items.append(draw(ints(n)))
        elif kind == "zero_d":
            items.append(np.array(draw(st.integers(-n, n - 1))))
        elif kind in ("mask", "kmask"):
            k = draw(st.integers(1, ndim - d)) if kind == "kmask" else 1
            m = draw(masks(math.prod(shape[d:d + k]))).reshape(shape[d:d + k])
            items.append(m if k > 1 or draw(st.booleans()) else m.tolist())
            d += k
            continue
        else:
            ashape = [b if (b == 0 or draw(st.booleans())) else 1 for b in bshape]
            if kind == "list" and len(ashape) > 1 and ashape[0] != 0:
                ashape.pop(0)
            if not n and math.prod(ashape):
                ashape = [0]
            arr = draw(int_arrays(n, tuple(ashape)))
            items.append(arr.tolist() if kind in ("list", "nested") else arr)
        d += 1
    return tuple(items)


def _flat_item(s: Any) -> bool:
    return isinstance(s, (int, np.integer, slice)) or (
        _is_fancy_item(s) and np.ndim(s) == 1 and np.asarray(s).dtype.kind in "iub")


def expected_getitem(case: Case, sel: tuple[Any, ...]) -> tuple[Any, str]:
    """What ``a[sel]`` must give (an IndexError instance where it must raise one), and
    from where: "zarr", "orthogonal" or "numpy".

    zarr-python's ``z[sel]`` where it dispatches and answers; where it dispatches to an
    orthogonal selection and fails anyway (zero-length dimensions, negative steps),
    zarr-python's orthogonal semantics computed with NumPy; else NumPy's ``x[sel]``.
    Coordinates that are all scalars are left to NumPy (a 0-d result; zarr-python's
    vindex returns shape (1,)).  NumPy integer scalars keep their type: zarr-python's
    orthogonal dispatch takes Python ints only (see
    test_numpy_integer_scalars_with_an_index_array)."""
    x, ndim = case.data, len(case.shape)
    how = zarr_dispatch(sel, ndim)
    all_scalar = how == "vindex" and not any(np.ndim(s) for s in sel)
    if zarr_python is not None and not all_scalar:
        got = _zarr_or_none(lambda: case.zarr()[sel])
        if got is not None:
            return got, "zarr"
    if how == "orthogonal" and all(map(_flat_item, sel)):
        items = list(sel) + [slice(None)] * (ndim - len(sel))
        return _numpy_or_error(lambda: orthogonal_get(x, items)), "orthogonal"
    return _numpy_or_error(lambda: np.asarray(x[sel], dtype=x.dtype)), "numpy"


@settings(SETTINGS, max_examples=300)
@given(case=cases(kinds=("v3", "sharded", "v2_F"), min_ndim=1, max_ndim=4, max_side=5),
       data=st.data())
def test_getitem_is_zarr_python_else_numpy(case: Case, data: st.DataObject) -> None:
    """``a[sel]`` is zarr-python's ``z[sel]`` where zarr-python accepts ``sel``, else
    NumPy's ``x[sel]`` (or an IndexError where NumPy raises one); writes likewise."""
    x, a = case.data, case.fast()
    sel = data.draw(any_selections(case.shape))
    # (an empty list with a mask: see test_empty_list_with_mask)
    assume(not (any(isinstance(s, list) and not s for s in sel) and any(
        np.asarray(s).dtype == bool for s in sel if _is_fancy_item(s))))
    want, source = expected_getitem(case, sel)
    if isinstance(want, IndexError):
        with pytest.raises(IndexError):
            a[sel]
        return
    check(a[sel], want)
    if source == "zarr":
        return  # (writes through zarr-python: test_differential_set)
    value = data.draw(values(want.shape, x.dtype))
    pos = np.arange(x.size).reshape(x.shape)
    positions = orthogonal_get(pos, list(sel) + [slice(None)] * (pos.ndim - len(sel))) if (
        source == "orthogonal") else pos[sel]
    a[sel] = value
    check_scatter(a[...], x, np.asarray(positions).ravel(), value, want.shape)


# ---------------------------------------------------------------------------
# block selections
# ---------------------------------------------------------------------------


@st.composite
def block_selections(draw: Any, grid: tuple[int, ...]) -> tuple[Any, list[Any]]:
    items: list[Any] = []
    for g in grid:
        if g and draw(st.booleans()):
            items.append(draw(ints(g)))
        else:
            b = st.none() | st.integers(-g - 1, g + 1)
            items.append(slice(draw(b), draw(b), draw(st.sampled_from([None, 1]))))
    k = draw(st.integers(0, len(items)))
    sel: Any = tuple(items[:k])
    items[k:] = [slice(None)] * (len(items) - k)
    if len(sel) == 1 and draw(st.booleans()):
        sel = sel[0]
    return sel, items


def block_region(items: list[Any], block: tuple[int, ...], grid: tuple[int, ...]
                 ) -> tuple[slice, ...]:
    """The region of the array the blocks ``items`` name (ints keep their dimension)."""
    out = []
    for s, c, g in zip(items, block, grid, strict=True):
        if isinstance(s, slice):
            b, e, _ = s.indices(g)
            out.append(slice(b * c, max(b, e) * c))
        else:
            i = int(s) % g
            out.append(slice(i * c, (i + 1) * c))
    return tuple(out)


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_blocks_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    block = case.block_shape
    assert (a.shards or a.chunks) == block
    grid = tuple(-(-n // c) for n, c in zip(case.shape, block, strict=True))
    sel, items = data.draw(block_selections(grid))
    region = block_region(items, block, grid)
    want = x[region]
    check(a.blocks[sel], want)
    check(a.get_block_selection(sel), want)
    value = data.draw(values(want.shape, x.dtype))
    if data.draw(st.booleans()):
        a.blocks[sel] = value
    else:
        a.set_block_selection(sel, value)
    x2 = x.copy()
    x2[region] = value
    check(a[...], x2)


@pytest.mark.parametrize("kind", KINDS)
def test_blocks_tile_the_array(kind: str) -> None:
    """Every block, by its grid index, is the matching tile of the chunk (shard) grid."""
    case = Case(kind, (7, 11), (2, 3), (4, 6) if kind == "sharded" else None, "<i4", 5)
    x, a = case.data, case.fast()
    bs = case.block_shape
    grid = (-(-7 // bs[0]), -(-11 // bs[1]))
    tiles = [[a.blocks[i, j] for j in range(grid[1])] for i in range(grid[0])]
    check(np.block(tiles), x)
    for i in range(grid[0]):
        check(a.blocks[i], x[i * bs[0]:(i + 1) * bs[0]])
        check(a.blocks[-1 - i, 1:], x[(grid[0] - 1 - i) * bs[0]:(grid[0] - i) * bs[0], bs[1]:])


def test_blocks_ellipsis() -> None:
    """As zarr-python's block indexing, an Ellipsis stands for the missing dimensions."""
    x = np.arange(7 * 11).reshape(7, 11)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3))
    check(a.blocks[..., 1], x[:, 3:6])
    check(a.blocks[-1, ...], x[6:])
    check(a.blocks[...], x)
    a.blocks[..., -1] = -1
    x[:, 9:] = -1
    check(a[...], x)
    with pytest.raises(IndexingError):
        a.blocks[..., 0, ...]


# ---------------------------------------------------------------------------
# 0-d and zero-length arrays
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_zero_d_orthogonal_and_blocks(kind: str) -> None:
    case = Case(kind, (), (), () if kind == "sharded" else None, "<f8", None)
    x, a = case.data, case.fast()
    for sel in [(), Ellipsis]:
        check(a.oindex[sel], x[()])
        check(a.get_orthogonal_selection(sel), x[()])
    check(a.blocks[()], x)
    check(a.blocks[...], x)
    a.oindex[()] = 4.5
    check(a[()], np.float64(4.5))
    a.set_orthogonal_selection(Ellipsis, np.array(-3.0))
    check(a[...], np.array(-3.0))
    a.blocks[()] = 7.0
    check(a[...], np.array(7.0))


def test_zero_d_coordinate() -> None:
    """A 0-d array has no dimension for index arrays: NumPy's result, or an IndexError as
    zarr-python raises -- never another error, and never a write that does nothing."""
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=np.array(3, dtype="i4"))
    try:
        check(a.vindex[()], np.array(3, dtype="i4"))
    except IndexError:
        pass  # refusing (as zarr-python does) is fine; a bare ValueError is not
    try:
        a.vindex[()] = 6
    except IndexError:
        check(a[...], np.array(3, dtype="i4"))
    else:
        check(a[...], np.array(6, dtype="i4"))  # no silent no-op


@pytest.mark.parametrize("kind", KINDS)
def test_zero_length_dimensions(kind: str) -> None:
    case = Case(kind, (0, 5, 3), (2, 2, 2), (4, 2, 4) if kind == "sharded" else None,
                "<i4", None)
    x, a = case.data, case.fast()
    e = np.zeros(0, dtype=np.int64)
    check(a.oindex[e, [4, 0, 4], 1:], x[np.ix_(e, [4, 0, 4], [1, 2])])
    check(a.oindex[:, np.array([True, False, True, False, True]), -1],
          x[:, [0, 2, 4], -1])
    check(a.vindex[e, e, e], x[e, e, e])
    check(a.vindex[np.zeros((0, 5, 3), bool)], np.zeros(0, "i4"))
    check(a[e, :, [1]], x[e, :, [1]])
    check(a.blocks[:, 1], x[:, 2:4])
    a.oindex[e, [1, 2], :] = 5
    a.vindex[e, e, e] = 5
    a.vindex[np.zeros((0, 5, 3), bool)] = 5
    a[e, :, [1]] = 5
    check(a[...], x)


# ---------------------------------------------------------------------------
# structured (v2) and object-string (v2) arrays
# ---------------------------------------------------------------------------

RECORD = np.dtype([("a", "<i4"), ("b", "<f8")])


def records(shape: tuple[int, ...]) -> np.ndarray:
    x = np.zeros(shape, dtype=RECORD)
    n = math.prod(shape)
    x["a"] = np.arange(n).reshape(shape) + 1
    x["b"] = -(np.arange(n).reshape(shape) + 0.5)
    return x


def check_records(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert list(got.dtype.names or ()) == list(want.dtype.names or ())
    for f in want.dtype.names:
        check(got[f], want[f])


@SETTINGS
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), data=st.data())
def test_structured_fields(shape: tuple[int, ...], data: st.DataObject) -> None:
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in shape)
    x = records(shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=chunks, zarr_format=2)
    mode = data.draw(st.sampled_from(["orthogonal", "coordinate", "mask"]))
    field = data.draw(st.sampled_from(["a", "b"]))
    x2 = x.copy()
    if mode == "orthogonal":
        sel, items = data.draw(orth_selections(shape))
        idx, full, out = orthogonal_numpy(x, items)
        check_records(a.oindex[sel], orthogonal_get(x, items))
        check(a.get_orthogonal_selection(sel, fields=field), orthogonal_get(x[field], items))
        check_records(a.get_orthogonal_selection(sel, fields=["b", "a"]),
                      orthogonal_get(x, items)[["b", "a"]])
        value = data.draw(values(out, x.dtype[field]))
        a.set_orthogonal_selection(sel, value, fields=field)
        x2[field] = orthogonal_set(x[field], items, value)
    elif mode == "coordinate":
        sel = data.draw(coord_selections(shape))
        check_records(a.vindex[sel], x[sel])
        check(a.get_coordinate_selection(sel, fields=field), x[field][sel])
        out = np.broadcast_shapes(*(np.shape(s) for s in sel))
        lin = coordinates(sel, shape)
        assume(len(np.unique(lin)) == len(lin))
        value = data.draw(values(out, x.dtype[field]))
        a.set_coordinate_selection(sel, value, fields=field)
        x2[field][sel] = value
    else:
        mask = data.draw(masks(x.size)).reshape(shape)
        check_records(a.vindex[mask], x[mask])
        check(a.get_mask_selection(mask, fields=field), x[field][mask])
        value = data.draw(values((int(mask.sum()),), x.dtype[field]))
        a.set_mask_selection(mask, value, fields=field)
        x2[field][mask] = value
    check_records(a[...], x2)


def test_structured_field_names_in_brackets() -> None:
    x = records((4, 5, 3))
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(3, 2, 2), zarr_format=2)
    check(a["a", [3, 0]], x["a"][[3, 0]])
    check(a["b", [1, 2], [0, 4], 2], x["b"][[1, 2], [0, 4], 2])
    check(a["a", [1, 2], :, [0, 2]], x["a"][[1, 2], :, [0, 2]])
    a["b", [3, 1], :, [2, 2]] = -9.0
    x["b"][[3, 1], :, [2, 2]] = -9.0
    a["a", :, [4, 0], [1, 0]] = np.array([7, 8], dtype="i4")
    x["a"][:, [4, 0], [1, 0]] = np.array([7, 8], dtype="i4")
    check_records(a[...], x)


@st.composite
def string_arrays(draw: Any) -> np.ndarray:
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    words = draw(st.lists(st.text(max_size=3), min_size=math.prod(shape),
                          max_size=math.prod(shape)))
    x = np.empty(math.prod(shape), dtype=object)
    x[:] = words
    return x.reshape(shape)


def check_objects(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == object, got.dtype
    assert got.ravel().tolist() == want.ravel().tolist()


@SETTINGS
@given(x=string_arrays(), data=st.data())
def test_object_strings(x: np.ndarray, data: st.DataObject) -> None:
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in x.shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=x.shape, chunks=chunks, dtype=str,
                              zarr_format=2)
    assert a.dtype == object
    a[...] = x
    mode = data.draw(st.sampled_from(["orthogonal", "coordinate", "mask", "mixed"]))
    x2 = x.copy()
    if mode == "orthogonal":
        sel, items = data.draw(orth_selections(x.shape))
        want = orthogonal_get(x, items)
        check_objects(a.oindex[sel], want)
        v = np.empty(want.size, dtype=object)
        v[:] = [f"o{i}" for i in range(want.size)]
        a.oindex[sel] = v.reshape(want.shape)
        x2 = orthogonal_set(x, items, v.reshape(want.shape))
    elif mode == "coordinate":
        sel = data.draw(coord_selections(x.shape))
        want = np.asarray(x[sel])
        check_objects(a.vindex[sel], want)
        lin = coordinates(sel, x.shape)
        assume(len(np.unique(lin)) == len(lin))
        a.vindex[sel] = "new"
        x2[sel] = "new"
    elif mode == "mask":
        mask = data.draw(masks(x.size)).reshape(x.shape)
        check_objects(a[mask], x[mask])
        a.vindex[mask] = "m"
        x2[mask] = "m"
    else:
        assume(x.ndim >= 2 and x.shape[0] and x.shape[-1])
        sel = ([0, -1, 0], Ellipsis, [x.shape[-1] - 1, 0, 0])
        check_objects(a[sel], x[sel])
        a[sel] = "z"
        x2[sel] = "z"
    check_objects(a[...], x2)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def _arr2d() -> zarrfast.Array:
    return zarrfast.create_array(zarrfast.MemoryStore(), data=np.arange(5 * 7).reshape(5, 7),
                                 chunks=(2, 3))


OUT_OF_BOUNDS = [
    ("oindex_array", lambda a: a.oindex[[0, 5], :], 0, 5, 5),
    ("oindex_negative", lambda a: a.oindex[:, [-8]], 1, -8, 7),
    ("oindex_int", lambda a: a.oindex[1, 7], 1, 7, 7),
    ("vindex", lambda a: a.vindex[[0, 1], [2, 7]], 1, 7, 7),
    ("vindex_negative", lambda a: a.vindex[[-6], [0]], 0, -6, 5),
    ("getitem_coordinate", lambda a: a[[0, 9], [1, 2]], 0, 9, 5),
    ("getitem_orthogonal", lambda a: a[:, [1, 70]], 1, 70, 7),
    ("set_oindex", lambda a: a.oindex.__setitem__(([5], slice(None)), 1), 0, 5, 5),
    ("set_vindex", lambda a: a.vindex.__setitem__(([1], [-9]), 1), 1, -9, 7),
]


@pytest.mark.parametrize("fn,dim,index,bound", [c[1:] for c in OUT_OF_BOUNDS],
                         ids=[c[0] for c in OUT_OF_BOUNDS])
def test_out_of_bounds(fn: Callable[[Any], Any], dim: int, index: int, bound: int) -> None:
    a = _arr2d()
    with pytest.raises(BoundsCheckError) as info:
        fn(a)
    assert isinstance(info.value, IndexError)
    msg = str(info.value)
    assert f"dimension {dim}" in msg and str(index) in msg and str(bound) in msg, msg
    check(a[...], np.arange(5 * 7).reshape(5, 7))  # a failed write changes nothing


def test_out_of_bounds_mixed_and_blocks() -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 2, 4))
    with pytest.raises(BoundsCheckError, match="dimension 2") as info:
        a[[0, 1], :, [1, 6]]
    assert "6" in str(info.value)
    with pytest.raises(BoundsCheckError, match="dimension 1"):
        a.blocks[0, 3]  # 3 blocks along dimension 1
    with pytest.raises(BoundsCheckError):
        a.blocks[-3]
    check(a.blocks[-2], x[:2])


@pytest.mark.parametrize("fn", [c[1] for c in OUT_OF_BOUNDS], ids=[c[0] for c in OUT_OF_BOUNDS])
@pytest.mark.interop
def test_out_of_bounds_same_type_as_zarr_python(fn: Callable[[Any], Any]) -> None:
    pytest.importorskip("zarr")
    z = Case("v3", (5, 7), (2, 3), None, "<i8", None).zarr()
    with pytest.raises(IndexError) as zinfo:
        fn(z)
    with pytest.raises(IndexError) as finfo:
        fn(_arr2d())
    assert type(finfo.value).__name__ == type(zinfo.value).__name__ == "BoundsCheckError"


BAD_SELECTIONS = [
    ("mask_too_short", lambda a: a.oindex[np.ones(4, bool), :]),
    ("mask_too_long", lambda a: a.oindex[:, [True] * 8]),
    ("mask_wrong_length_getitem", lambda a: a[np.ones(4, bool), [1, 2]]),
    ("mask_wrong_shape_vindex", lambda a: a.vindex[np.ones((4, 7), bool)]),
    ("mask_wrong_shape_getitem", lambda a: a[np.ones((5, 6), bool)]),
    ("mask_wrong_ndim_vindex", lambda a: a.vindex[np.ones((5, 7, 1), bool)]),
    ("too_many_oindex", lambda a: a.oindex[[0], [1], [2]]),
    ("too_many_vindex", lambda a: a.vindex[[0], [1], [2]]),
    ("too_many_getitem", lambda a: a[[0], [1], [2]]),
    ("too_many_mixed", lambda a: a[[0], :, [2]]),
    ("too_many_blocks", lambda a: a.blocks[0, 0, 0]),
    ("too_few_vindex", lambda a: a.vindex[[0, 1],]),
    ("float_oindex", lambda a: a.oindex[np.array([0.0, 1.0]), :]),
    ("float_vindex", lambda a: a.vindex[np.array([0.0, 1.0]), np.array([0, 1])]),
    ("float_getitem", lambda a: a[np.array([0.0, 1.0])]),
    ("float_mixed", lambda a: a[[0, 1], ..., np.array([1.5])]),
    ("vindex_no_broadcast", lambda a: a.vindex[[0, 1, 2], [0, 1]]),
    ("block_step", lambda a: a.blocks[::2]),
    ("block_array", lambda a: a.blocks[[0, 1]]),
]


@pytest.mark.parametrize("fn", [c[1] for c in BAD_SELECTIONS], ids=[c[0] for c in BAD_SELECTIONS])
def test_bad_selections(fn: Callable[[Any], Any]) -> None:
    with pytest.raises(IndexingError) as info:
        fn(_arr2d())
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("fn", [c[1] for c in BAD_SELECTIONS], ids=[c[0] for c in BAD_SELECTIONS])
@pytest.mark.interop
def test_bad_selections_refused_by_zarr_python_too(fn: Callable[[Any], Any]) -> None:
    """Where zarr-python rejects the selection as well, both raise an IndexError (except
    broadcasting coordinate arrays, a ValueError in zarr-python)."""
    pytest.importorskip("zarr")
    z = Case("v3", (5, 7), (2, 3), None, "<i8", None).zarr()
    try:
        fn(z)
    except (IndexError, ValueError):
        pass
    else:
        pytest.skip("zarr-python accepts this selection (mixed NumPy indexing)")
    with pytest.raises(IndexError):
        fn(_arr2d())


BAD_VALUES = [
    pytest.param(lambda a: a.oindex.__setitem__(([0, 1], slice(None)), np.zeros((3, 7))),
                 id="oindex"),
    pytest.param(lambda a: a.set_orthogonal_selection((1, [2, 3]), np.zeros(3)),
                 id="oindex_method"),
    pytest.param(lambda a: a.vindex.__setitem__(([0, 1], [0, 1]), np.zeros(3)), id="vindex"),
    pytest.param(lambda a: a.__setitem__(([0, 1], [0, 1]), np.zeros((2, 2))),
                 id="getitem_coordinate"),
    pytest.param(lambda a: a.vindex.__setitem__(np.eye(5, 7, dtype=bool), np.zeros(4)),
                 id="mask"),
    pytest.param(lambda a: a.__setitem__(np.eye(5, 7, dtype=bool), np.zeros(6)),
                 id="mask_getitem"),
    pytest.param(lambda a: a.blocks.__setitem__(0, np.zeros((2, 6))), id="blocks"),
    pytest.param(lambda a: a.__setitem__(([1, 2], ..., [0, 3]), np.zeros(3)), id="mixed"),
]


@pytest.mark.parametrize("fn", BAD_VALUES)
def test_value_does_not_broadcast(fn: Callable[[Any], Any]) -> None:
    a = _arr2d()
    with pytest.raises(IndexingError):
        fn(a)
    check(a[...], np.arange(5 * 7).reshape(5, 7))


READ_ONLY_WRITES = [
    ("oindex", lambda a: a.oindex.__setitem__(([0, 3], slice(None)), 1)),
    ("set_orthogonal_selection", lambda a: a.set_orthogonal_selection((1, [2]), 1)),
    ("getitem_orthogonal", lambda a: a.__setitem__((slice(None), [1, 2]), 1)),
    ("vindex", lambda a: a.vindex.__setitem__(([0], [1]), 1)),
    ("set_coordinate_selection", lambda a: a.set_coordinate_selection(([0], [1]), 1)),
    ("getitem_coordinate", lambda a: a.__setitem__(([0, 1], [1, 2]), 1)),
    ("vindex_mask", lambda a: a.vindex.__setitem__(np.eye(5, 7, dtype=bool), 1)),
    ("set_mask_selection", lambda a: a.set_mask_selection(np.eye(5, 7, dtype=bool), 1)),
    ("getitem_mask", lambda a: a.__setitem__(np.eye(5, 7, dtype=bool), 1)),
    ("mixed", lambda a: a.__setitem__(([0, 1], ..., [1, 2]), 1)),
    ("blocks", lambda a: a.blocks.__setitem__((0, 1), 1)),
    ("set_block_selection", lambda a: a.set_block_selection((0, 1), 1)),
]


@pytest.mark.parametrize("fn", [c[1] for c in READ_ONLY_WRITES],
                         ids=[c[0] for c in READ_ONLY_WRITES])
@pytest.mark.parametrize("kind", ["v3", "sharded", "v2_F"])
def test_read_only(tmp_path: Any, kind: str, fn: Callable[[Any], Any]) -> None:
    case = Case(kind, (5, 7), (2, 3), (4, 6) if kind == "sharded" else None, "<i4", None)
    case.fast(zarrfast.LocalStore(tmp_path / "a.zarr"))
    r = zarrfast.open_array(tmp_path / "a.zarr", mode="r")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(ReadOnlyError):
        fn(r)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    check(r[...], case.data)


# ---------------------------------------------------------------------------
# more selections zarr-python refuses: NumPy's result
# ---------------------------------------------------------------------------

REFUSED_BY_ZARR_PYTHON = [
    ("two_arrays_fewer_than_ndim", ([0, 1], [1, 2])),
    ("array_mask_int", ([0, 1], np.array([True, False, True, False, False]), 0)),
    ("int_mask_array", (1, np.array([True, False, True, False, False]), [1, 2])),
    ("int_ellipsis_array", (2, Ellipsis, [0, 1])),
    ("int_slice_array_ellipsis", (2, slice(None), [0, 1], Ellipsis)),
    ("nested_list_with_slice", (slice(None), [[0, 1], [2, 3]], [1, 2])),
    ("nested_list_coordinate", ([[1], [2]], [0, 1, 2], 0)),
    ("one_2d_array_with_slice", (slice(None), np.array([[0, 1], [2, 3]]))),
    ("one_2d_array_with_ellipsis", (Ellipsis, np.array([[0, 1], [5, 3]]))),
    ("ellipsis_for_no_dims_between_arrays", (slice(None), [0, 2], Ellipsis, [1, 3])),
    ("mask_2d_on_3d", (np.eye(4, 5, dtype=bool),)),
    ("mask_2d_then_slice", (np.eye(4, 5, dtype=bool), slice(1, 4))),
]


@pytest.mark.parametrize("sel", [d[1] for d in REFUSED_BY_ZARR_PYTHON],
                         ids=[d[0] for d in REFUSED_BY_ZARR_PYTHON])
@pytest.mark.parametrize("kind", ["v3", "sharded"])
def test_numpy_where_zarr_python_refuses(kind: str, sel: tuple[Any, ...]) -> None:
    """Several index arrays without a slice, a mask among index arrays, one index array
    and ints around an Ellipsis, an Ellipsis for no dimension between index arrays (NumPy
    then moves the broadcast dimensions first), nested lists, multi-dimensional index
    arrays among slices, masks over some of the dimensions."""
    case = Case(kind, (4, 5, 6), (2, 3, 4), (4, 3, 4) if kind == "sharded" else None, "<i4",
                None)
    x, a = case.data, case.fast()
    check(a[sel], x[sel])
    v = -np.arange(np.asarray(x[sel]).size, dtype="i4").reshape(np.shape(x[sel])) - 2
    x[sel] = v
    a[sel] = v
    check(a[...], x)


@pytest.mark.parametrize("sel", [d[1] for d in REFUSED_BY_ZARR_PYTHON],
                         ids=[d[0] for d in REFUSED_BY_ZARR_PYTHON])
@pytest.mark.interop
def test_these_are_refused_by_zarr_python(sel: tuple[Any, ...]) -> None:
    """So the promise for them is NumPy's result."""
    pytest.importorskip("zarr")
    z = Case("v3", (4, 5, 6), (2, 3, 4), None, "<i8", None).zarr()
    assert _zarr_or_none(lambda: z[sel]) is None


MISSIZED_MASKS = [
    ("mask_too_short_before_ellipsis", (np.array([True, False]), Ellipsis, [0, 1])),
    ("bool_list_too_short_after_ellipsis", (Ellipsis, [True, False, True])),
    ("mask_too_long_with_arrays", ([0, 3], slice(None), np.array([True] + [False] * 6))),
    ("mask_2d_wrong_shape", (np.ones((4, 4), bool), [0])),
]


@pytest.mark.parametrize("sel", [m[1] for m in MISSIZED_MASKS],
                         ids=[m[0] for m in MISSIZED_MASKS])
def test_missized_masks_among_index_arrays(sel: tuple[Any, ...]) -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3, 4))
    with pytest.raises(IndexError):
        x[sel]
    with pytest.raises(IndexError):
        a[sel]
    with pytest.raises(IndexError):
        a[sel] = 0
    check(a[...], x)


def test_numpy_integer_scalars_with_an_index_array() -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3, 4))
    check(a[2, :, [0, 1]], x[2][:, [0, 1]])  # zarr-python's orthogonal selection
    sel = (np.int64(2), slice(None), [0, 1])
    if zarr_python is not None:
        z = Case("v3", (4, 5, 6), (2, 3, 4), None, "<i8", None).zarr()
        assert _zarr_or_none(lambda: z[sel]) is None  # refused by zarr-python
    check(a[sel], x[sel])


EMPTY_LIST_WITH_MASK = [
    ("mask_then_empty_list", (3, 4), (np.array([True, False, True]), [])),
    ("empty_list_then_bool_list", (3, 4), ([], [True, False, True, True])),
    ("zero_length", (0, 2), ([], [True, True])),
]


@pytest.mark.parametrize("shape,sel", [e[1:] for e in EMPTY_LIST_WITH_MASK],
                         ids=[e[0] for e in EMPTY_LIST_WITH_MASK])
def test_empty_list_with_mask(shape: tuple[int, ...], sel: tuple[Any, ...]) -> None:
    x = np.arange(math.prod(shape)).reshape(shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3))
    if zarr_python is not None:
        assert zarr_dispatch(sel, len(shape)) == "basic"  # refused by zarr-python
    with pytest.raises(IndexError):
        x[sel]
    with pytest.raises(IndexError):
        a[sel]


# ---------------------------------------------------------------------------
# differential: zarrfast vs zarr-python on the same data
# ---------------------------------------------------------------------------


def _zarr_or_none(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn())
        except (IndexError, ValueError, TypeError):
            return None


@st.composite
def zarr_selections(draw: Any, case: Case) -> tuple[str, Any]:
    """A selection and how to apply it (``oindex``, ``vindex``, ``[]``, ``blocks``)."""
    shape = case.shape
    way = draw(st.sampled_from(["oindex", "vindex", "mask", "[]", "blocks"]))
    if way == "oindex":
        return way, draw(orth_selections(shape, negative_steps=False, ellipsis=False))[0]
    if way == "vindex":
        return way, draw(coord_selections(shape, zero_d=False))
    if way == "mask":
        return "vindex", draw(masks(math.prod(shape))).reshape(shape)
    if way == "blocks":
        grid = tuple(-(-n // c) for n, c in zip(shape, case.block_shape, strict=True))
        assume(all(grid))
        sel, items = draw(block_selections(grid))
        # zarr-python 3.1.6 mis-slices block bounds beyond the grid (z.blocks[:-5] on a
        # 4-block grid gives blocks 0-2, NumPy slicing gives none): bounds within it only
        assume(all(-g <= b <= g for s, g in zip(items, grid, strict=True)
                   if isinstance(s, slice) for b in (s.start, s.stop) if b is not None))
        return way, sel
    if draw(st.booleans()):
        return way, draw(coord_selections(shape, zero_d=False))
    return way, draw(orth_selections(shape, negative_steps=False, ellipsis=False))[0]


def _get(a: Any, way: str, sel: Any) -> Any:
    return a[sel] if way == "[]" else getattr(a, way)[sel]


def _set(a: Any, way: str, sel: Any, value: Any) -> None:
    if way == "[]":
        a[sel] = value
    else:
        getattr(a, way)[sel] = value


@pytest.mark.interop
@pytest.mark.skipif(zarr_python is None, reason="needs zarr-python")
@settings(SETTINGS, max_examples=300)
@given(case=cases(min_ndim=1, max_ndim=3, min_side=1, max_side=6), data=st.data())
def test_differential_get(case: Case, data: st.DataObject) -> None:
    z, a = case.zarr(), case.fast()
    way, sel = data.draw(zarr_selections(case))
    want = _zarr_or_none(lambda: _get(z, way, sel))
    assume(want is not None)  # only selections zarr-python accepts
    check(_get(a, way, sel), want)


@pytest.mark.interop
@pytest.mark.skipif(zarr_python is None, reason="needs zarr-python")
@settings(SETTINGS, max_examples=200)
@given(case=cases(kinds=tuple(k for k in KINDS if k != "sharded"), min_ndim=1, max_ndim=3,
                 min_side=1, max_side=6), data=st.data())
def test_differential_set(case: Case, data: st.DataObject) -> None:
    """(Not sharded: zarr-python 3.1.6 fails fancy writes into shards, e.g. shape (1, 2),
    chunks (1, 1), shards (1, 2): ``z.oindex[np.array([0]), :] = [[-2, -3]]`` raises
    "shape mismatch".)"""
    z, a = case.zarr(), case.fast()
    way, sel = data.draw(zarr_selections(case))
    got = _zarr_or_none(lambda: _get(z, way, sel))
    assume(got is not None and got.size)
    # repeated positions: which write wins is unspecified (zarr-python's differs from
    # NumPy's last-wins), so only selections touching each element once
    positions = Case("v3", case.shape, case.chunks, None, "<i8", None).zarr()
    touched = _zarr_or_none(lambda: _get(positions, way, sel))
    assume(touched is not None and len(np.unique(touched)) == touched.size)
    value = (-(np.arange(got.size) + 2)).astype(case.dtype).reshape(got.shape)
    zarr_after = _zarr_or_none(lambda: (_set(z, way, sel, value), z[...])[1])
    assume(zarr_after is not None)
    _set(a, way, sel, value)
    check(a[...], zarr_after)


@pytest.mark.interop
@pytest.mark.skipif(zarr_python is None, reason="needs zarr-python")
@FEW
@given(x=string_arrays(), data=st.data())
def test_differential_object_strings(x: np.ndarray, data: st.DataObject) -> None:
    assume(x.size)
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in x.shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=x.shape, chunks=chunks, dtype=str,
                              zarr_format=2)
    a[...] = x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr_python.create_array(zarr_python.storage.MemoryStore(), shape=x.shape,
                                     chunks=chunks, dtype=str, zarr_format=2)
        z[...] = x
    case = Case("v2_F", x.shape, chunks, None, "<i4", None)
    way, sel = data.draw(zarr_selections(case))
    assume(way != "blocks")
    want = _zarr_or_none(lambda: _get(z, way, sel))
    assume(want is not None)
    check_objects(_get(a, way, sel), want.astype(object))
