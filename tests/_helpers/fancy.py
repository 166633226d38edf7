"""What the fancy-indexing tests share: the arrays (:class:`Case`: plain v3, raw,
transposed big-endian, sharded, Zarr v2 order F; built by zarrfast and by
zarr-python), the selection and value strategies, the NumPy expectations and
zarr-python's dispatch predicates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, TransposeCodec

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


def is_fancy_item(s: Any) -> bool:
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
    if not any(is_fancy_item(s) for s in sel):
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


def zarr_or_none(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn())
        except (IndexError, ValueError, TypeError):
            return None


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


@st.composite
def string_arrays(draw: Any) -> np.ndarray:
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    # (no trailing NUL: zarr-python, the oracle, reads "a\x00" back as "a" through
    # NumPy's fixed-width strings, while zarrfast keeps what was written)
    words = draw(st.lists(st.text(max_size=3).filter(lambda w: not w.endswith("\x00")),
                          min_size=math.prod(shape), max_size=math.prod(shape)))
    x = np.empty(math.prod(shape), dtype=object)
    x[:] = words
    return x.reshape(shape)


def check_objects(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == object, got.dtype
    assert got.ravel().tolist() == want.ravel().tolist()
