"""Arrays through the public API: create/open modes, basic indexing against NumPy
(Hypothesis), codecs, fill values, empty chunks, corrupt chunks, threads, pickling,
attributes and resizing.

The property tests run twice: with the compiled kernels and with their NumPy twins
from ``zarrfast.kernels.reference`` patched into ``zarrfast.kernels`` (the pipeline looks the
kernels up at call time).
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import math
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import crc32c
import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import zarrfast
from zarrfast import kernels as _kernels
from zarrfast.codecs import (
    ArrayArrayCodec,
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
    registry,
)
from zarrfast.errors import (
    ArrayNotFoundError,
    BoundsCheckError,
    ChecksumError,
    ChunkDecodeError,
    ContainsArrayError,
    ContainsGroupError,
    FillValueError,
    IndexingError,
    MetadataValidationError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
)
from zarrfast.kernels import reference as _reference

import _helpers

ROOT = _helpers.ROOT

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> zarrfast.Store:
    if request.param == "memory":
        return zarrfast.MemoryStore()
    return zarrfast.LocalStore(tmp_path / "data.zarr")


KERNEL_NAMES = [n for n in _kernels.__all__ if n != "USING_EXTENSIONS"]


@contextlib.contextmanager
def kernels(impl: str) -> Iterator[None]:
    """Run with the compiled kernels (``"compiled"``) or the NumPy twins (``"pure"``)."""
    if impl == "compiled":
        yield
        return
    with mock.patch.multiple(_kernels, **{n: getattr(_reference, n) for n in KERNEL_NAMES}):
        yield


def test_pure_kernel_patch_reaches_the_pipeline() -> None:
    """The patch must actually route chunk copies through ``_reference``."""
    calls = []
    real = _reference.copy_region

    def spy(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(*args, **kwargs)

    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(6,), chunks=(2,), dtype="i4")
    with kernels("pure"), mock.patch.object(_reference, "copy_region", spy), \
            mock.patch.object(_kernels, "copy_region", spy):
        a[:] = np.arange(6)
        assert list(a[:]) == list(range(6))
    assert calls


def same(actual: Any, expected: Any) -> None:
    """Same shape, dtype and bytes (so NaN payloads and -0.0 count)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    assert a.tobytes() == e.tobytes(), f"\n{a!r}\n!=\n{e!r}"


def random_data(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    if dtype.kind == "b":
        out = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = rng.integers(int(info.min), int(info.max), n, endpoint=True,
                           dtype=dtype.newbyteorder("=")).astype(dtype)
    elif dtype.kind == "f":
        out = (rng.standard_normal(n) * 100).astype(dtype)
    elif dtype.kind == "c":
        out = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:  # raw bytes
        out = np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype).copy()
    return out.reshape(shape)


def chunk_keys(store: zarrfast.Store, prefix: str = "") -> list[str]:
    return sorted(k for k in store.list_prefix(prefix) if not k.endswith("zarr.json"))


@dataclass(frozen=True)
class FlipLastAxis(ArrayArrayCodec):
    """A third-party array -> array codec (unregistered): forces the general codec path."""

    name: ClassVar[str] = "test.flip_last_axis"

    @classmethod
    def from_dict(cls, data: Any) -> FlipLastAxis:
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        return chunk[..., ::-1] if chunk.ndim else chunk

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return chunk[..., ::-1] if chunk.ndim else chunk


@contextlib.contextmanager
def flip_registered() -> Iterator[None]:
    """Make ``FlipLastAxis`` known to the registry for the duration (so arrays using it
    can be reopened) without leaving it registered for other tests."""
    with mock.patch.dict(registry._registry, {FlipLastAxis.name: FlipLastAxis}):
        yield


def codec_config(name: str, ndim: int) -> dict[str, Any]:
    """Keyword arguments of ``create_array`` for a named codec chain."""
    rev = tuple(reversed(range(ndim)))
    rot = tuple(range(1, ndim)) + (0,) if ndim else ()
    return {
        "default": {},
        "raw": {"compressors": None},
        "big": {"serializer": BytesCodec(endian="big"), "compressors": None},
        "transpose": {"filters": [TransposeCodec(order=rev)], "compressors": None},
        "two_transposes_big_gzip_crc": {
            "filters": [TransposeCodec(order=rot), TransposeCodec(order=rev)],
            "serializer": BytesCodec(endian="big"),
            "compressors": [GzipCodec(level=1), Crc32cCodec()],
        },
        "blosc": {"compressors": [BloscCodec(cname="lz4", clevel=1)]},
        "zstd_crc": {"compressors": [ZstdCodec(level=1), Crc32cCodec()]},
        "general": {"filters": [FlipLastAxis()], "serializer": BytesCodec(endian="big"),
                    "compressors": [GzipCodec(level=1)]},
    }[name]


CODEC_NAMES = ["default", "raw", "big", "transpose", "two_transposes_big_gzip_crc", "blosc",
               "zstd_crc", "general"]
PROPERTY_DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64",
                   "complex64", "complex128", "V3"]
MAX_CHUNKS = 48


@st.composite
def array_setups(draw: st.DrawFn, max_dims: int = 4) -> dict[str, Any]:
    shape = draw(
        npst.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=12)
        | npst.array_shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=12)
    )
    chunks = [draw(st.integers(1, s + 2)) for s in shape]
    # keep the number of chunks (and so the runtime) bounded
    while math.prod(-(-s // c) for s, c in zip(shape, chunks, strict=True)) > MAX_CHUNKS:
        d = max(range(len(shape)), key=lambda i: -(-shape[i] // chunks[i]))
        chunks[d] = min(chunks[d] * 2, shape[d])
    return {
        "shape": shape,
        "chunks": tuple(chunks),
        "dtype": np.dtype(draw(st.sampled_from(PROPERTY_DTYPES))),
        "codecs": draw(st.sampled_from(CODEC_NAMES)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "custom_fill": draw(st.booleans()),
    }


def _slices(n: int) -> st.SearchStrategy[slice]:
    bound = st.none() | st.integers(-n - 3, n + 3) | st.sampled_from([-(10**9), 10**9])
    step = st.none() | st.integers(-5, 5).filter(bool) | st.sampled_from([-(10**9), 10**9])
    return st.builds(slice, bound, bound, step)


@st.composite
def selections(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """Basic selections: NumPy ints (negative too), slices with any bounds and steps,
    Ellipsis; tuples or bare items."""
    if draw(st.booleans()):
        return draw(npst.basic_indices(shape, min_dims=0, allow_ellipsis=True,
                                       allow_newaxis=False))
    k = draw(st.integers(0, len(shape)))
    items: list[Any] = []
    for n in shape[:k]:
        if n > 0 and draw(st.integers(0, 3)) == 0:
            i = draw(st.integers(-n, n - 1))
            items.append(draw(st.sampled_from([i, np.int64(i), np.intp(i)])))
        else:
            items.append(draw(_slices(n)))
    if k < len(shape) and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def numpy_rejects(arr: np.ndarray, sel: Any) -> bool:
    """Whether NumPy refuses ``sel`` (an int index into a length-0 dimension)."""
    try:
        arr[sel]
    except IndexError:
        return True
    return False


def make_array(store: zarrfast.Store, setup: dict[str, Any], rng: np.random.Generator,
               **kwargs: Any) -> tuple[zarrfast.Array, Any]:
    fill = random_data(setup["dtype"], (), rng)[()] if setup["custom_fill"] else None
    if isinstance(fill, np.void):
        # raw fills as bytes: np.void is refused (test_void_fill_value_scalar)
        fill = fill.tobytes()
    a = zarrfast.create_array(
        store, shape=setup["shape"], chunks=setup["chunks"], dtype=setup["dtype"],
        fill_value=fill, **codec_config(setup["codecs"], len(setup["shape"])), **kwargs,
    )
    return a, a.fill_value


def full_fill(shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    out[...] = fill
    return out


IMPLS = ["compiled", "pure"]


# ---------------------------------------------------------------------------
# property tests against NumPy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
@given(setup=array_setups(), data=st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_reads_match_numpy(impl: str, setup: dict[str, Any], data: st.DataObject) -> None:
    rng = np.random.default_rng(setup["seed"])
    with kernels(impl), flip_registered():
        store = zarrfast.MemoryStore()
        a, fill = make_array(store, setup, rng)
        expected = full_fill(setup["shape"], setup["dtype"], fill)
        # untouched: every element is the fill value
        same(a[...], expected)
        if data.draw(st.booleans(), label="fill everything"):
            expected = random_data(setup["dtype"], setup["shape"], rng)
            a[...] = expected
        else:  # a partly written array: some chunks missing
            sel = data.draw(selections(setup["shape"]), label="written")
            if numpy_rejects(expected, sel):
                with pytest.raises(IndexingError):
                    a[sel] = expected[...]
            else:
                part = random_data(setup["dtype"], expected[sel].shape, rng)
                a[sel] = part
                expected[sel] = part
        same(a[...], expected)
        for _ in range(3):
            sel = data.draw(selections(setup["shape"]), label="selection")
            if numpy_rejects(expected, sel):
                with pytest.raises(IndexingError):
                    a[sel]
                continue
            same(a[sel], expected[sel])
            same(a.get_basic_selection(sel), expected[sel])
        # a fresh handle on the same store reads the same
        same(zarrfast.open_array(store, mode="r")[...], expected)


@st.composite
def write_values(draw: st.DrawFn, out_shape: tuple[int, ...], dtype: np.dtype,
                 rng: np.random.Generator) -> Any:
    kind = draw(st.sampled_from(["array", "scalar", "broadcast", "zero-d"]))
    if kind == "scalar":
        return random_data(dtype, (), rng)[()]
    if kind == "zero-d":
        return random_data(dtype, (), rng)
    if kind == "broadcast" and out_shape:
        drop = draw(st.integers(0, len(out_shape)))
        shape = [1 if draw(st.booleans()) else n for n in out_shape[drop:]]
        return random_data(dtype, tuple(shape), rng)
    value = random_data(dtype, out_shape, rng)
    if value.ndim > 1 and draw(st.booleans()):
        value = np.asfortranarray(value)  # a non-C-contiguous source
    return value


def _chunk_region(coords: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks, strict=True))


@pytest.mark.parametrize("impl", IMPLS)
@given(setup=array_setups(), data=st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_writes_match_numpy(impl: str, setup: dict[str, Any], data: st.DataObject) -> None:
    rng = np.random.default_rng(setup["seed"])
    shape, dtype = setup["shape"], setup["dtype"]
    with kernels(impl), flip_registered():
        store = zarrfast.MemoryStore()
        a, fill = make_array(store, setup, rng, config={"write_empty_chunks": False})
        mirror = full_fill(shape, dtype, fill)
        if data.draw(st.booleans(), label="start full"):
            mirror = random_data(dtype, shape, rng)
            a[...] = mirror
        for _ in range(data.draw(st.integers(1, 3), label="n_writes")):
            sel = data.draw(selections(shape), label="selection")
            if numpy_rejects(mirror, sel):
                with pytest.raises(IndexingError):
                    a[sel] = random_data(dtype, (), rng)
                continue
            value = data.draw(write_values(mirror[sel].shape, dtype, rng), label="value")
            a[sel] = value
            mirror[sel] = value
            same(a[...], mirror)
        # write_empty_chunks=False: a chunk is stored iff it holds a non-fill element
        fill_bytes = np.asarray(fill, dtype=dtype).tobytes()
        grid = a.cdata_shape
        for coords in itertools.product(*(range(n) for n in grid)):
            region = np.ascontiguousarray(mirror[_chunk_region(coords, a.chunks)])
            all_fill = region.tobytes() == fill_bytes * region.size
            key = a.metadata.chunk_key_encoding.encode(coords)
            assert store.exists(key) == (not all_fill), (coords, key)
        same(zarrfast.open_array(store, mode="r")[...], mirror)


@pytest.mark.parametrize("impl", IMPLS)
@given(setup=array_setups(max_dims=3), data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_write_empty_chunks_true_keeps_every_written_chunk(
    impl: str, setup: dict[str, Any], data: st.DataObject
) -> None:
    rng = np.random.default_rng(setup["seed"])
    with kernels(impl):
        store = zarrfast.MemoryStore()
        a, fill = make_array(store, setup, rng, config={"write_empty_chunks": True})
        a[...] = fill
        # every chunk was written, even though each equals the fill value
        assert a.nchunks_initialized == a.nchunks
        same(a[...], full_fill(setup["shape"], setup["dtype"], fill))


# ---------------------------------------------------------------------------
# open / create modes
# ---------------------------------------------------------------------------


def test_mode_r(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError) as info:
        zarrfast.open_array(store, mode="r")
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, NodeNotFoundError)
    zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4", data=np.arange(4))
    r = zarrfast.open_array(store, mode="r")
    assert r.read_only
    assert list(r[:]) == [0, 1, 2, 3]
    for attempt in (lambda: r.__setitem__(0, 9), lambda: r.__setitem__(..., 1),
                    lambda: r.attrs.__setitem__("x", 1), lambda: r.resize((2,)),
                    lambda: r.update_attributes({"y": 1})):
        with pytest.raises(ReadOnlyError) as info:
            attempt()
        assert isinstance(info.value, PermissionError)
    assert list(zarrfast.open_array(store, mode="r")[:]) == [0, 1, 2, 3]
    assert dict(zarrfast.open_array(store, mode="r").attrs) == {}
    # the caller's store is not made read-only
    assert not store.read_only


def test_mode_r_plus(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="r+")
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="r+", shape=(3,), dtype="i4")  # r+ never creates
    assert store.get("zarr.json") is None
    zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4", data=np.arange(4))
    a = zarrfast.open_array(store, mode="r+")
    assert not a.read_only
    a[1] = 10
    assert list(zarrfast.open_array(store, mode="r")[:]) == [0, 10, 2, 3]


def test_mode_a(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="a")  # no shape: nothing to create
    a = zarrfast.open_array(store, mode="a", shape=(5,), chunks=(2,), dtype="u2", fill_value=3)
    assert a.shape == (5,)
    a[0] = 1
    # exists: opened as is, the creation arguments are not applied
    b = zarrfast.open_array(store, mode="a", shape=(7,), dtype="f8")
    assert b.shape == (5,) and b.dtype == np.dtype("u2")
    assert list(b[:]) == [1, 3, 3, 3, 3]


def test_mode_w_replaces(store: zarrfast.Store) -> None:
    a = zarrfast.open_array(store, mode="w", shape=(6,), chunks=(2,), dtype="i4")
    a[:] = np.arange(1, 7)
    assert chunk_keys(store) == ["c/0", "c/1", "c/2"]
    b = zarrfast.open_array(store, mode="w", shape=(3,), chunks=(3,), dtype="f4",
                            fill_value=-1)
    assert chunk_keys(store) == []  # old chunks removed
    assert b.shape == (3,) and b.dtype == np.dtype("f4")
    same(zarrfast.open_array(store, mode="r")[:], np.full(3, -1, "f4"))


def test_mode_w_minus(store: zarrfast.Store) -> None:
    a = zarrfast.open_array(store, path="x", mode="w-", shape=(2,), dtype="i1")
    a[:] = 3
    with pytest.raises(ContainsArrayError) as info:
        zarrfast.open_array(store, path="x", mode="w-", shape=(2,), dtype="i1")
    assert isinstance(info.value, FileExistsError)
    assert list(zarrfast.open_array(store, path="x")[:]) == [3, 3]
    zarrfast.create_group(store, path="g")
    with pytest.raises(ContainsGroupError):
        zarrfast.open_array(store, path="g", mode="w-", shape=(2,), dtype="i1")


def test_invalid_mode(store: zarrfast.Store) -> None:
    with pytest.raises(ZarrfastError, match="mode"):
        zarrfast.open_array(store, mode="x", shape=(2,))


def test_create_array_refuses_existing(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="x", shape=(4,), chunks=(2,), dtype="i4")
    a[:] = 1
    with pytest.raises(ContainsArrayError, match="'x'"):
        zarrfast.create_array(store, name="x", shape=(4,), dtype="i4")
    assert list(a[:]) == [1, 1, 1, 1]  # untouched
    b = zarrfast.create_array(store, name="x", shape=(4,), dtype="i4", overwrite=True)
    assert list(b[:]) == [0, 0, 0, 0]
    assert chunk_keys(store, "x/") == []


def test_open_group_as_array(store: zarrfast.Store) -> None:
    zarrfast.create_group(store, path="g")
    with pytest.raises(NodeTypeValidationError):
        zarrfast.open_array(store, path="g", mode="r")


def test_open_local_directory_by_path(tmp_path: Path) -> None:
    p = tmp_path / "x.zarr"
    zarrfast.create_array(str(p), shape=(3, 2), chunks=(2, 2), dtype="i2", data=[[1, 2]] * 3)
    assert (p / "zarr.json").is_file()
    assert (p / "c" / "1" / "0").is_file()
    a = zarrfast.open_array(p, mode="r")
    same(a[:], np.array([[1, 2]] * 3, dtype="i2"))
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(tmp_path / "missing.zarr", mode="r")


def test_nested_array_path(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="g/h/arr", shape=(3,), chunks=(2,), dtype="u1")
    a[:] = [1, 2, 3]
    assert a.path == "g/h/arr" and a.name == "/g/h/arr" and a.basename == "arr"
    assert chunk_keys(store) == ["g/h/arr/c/0", "g/h/arr/c/1"]
    b = zarrfast.open_array(store, path="/g/h/arr/", mode="r")
    assert list(b[:]) == [1, 2, 3]


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


# ---------------------------------------------------------------------------
# fill values, empty chunks, edge chunks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        ("i2", 7, np.int16(7)),
        ("u8", 2**64 - 1, np.uint64(2**64 - 1)),
        ("bool", True, np.True_),
        ("f4", "NaN", np.float32("nan")),
        ("f2", "0x7e01", np.array(0x7E01, "u2").view("f2")[()]),
        ("f8", "0x7ff0000000000001", np.array(0x7FF0000000000001, "u8").view("f8")[()]),
        ("f8", -0.0, np.float64(-0.0)),
        ("f4", "-Infinity", np.float32(-np.inf)),
        ("c8", [1.0, "NaN"], np.complex64(complex(1, float("nan")))),
        ("V3", b"\x01\x02\x03", np.frombuffer(b"\x01\x02\x03", "V3")[0]),
    ],
    ids=lambda v: str(v)[:20],
)
def test_missing_chunks_read_as_fill(store: zarrfast.Store, dtype: str, fill: Any,
                                     expected: Any) -> None:
    for codecs in ("default", "big", "transpose"):
        a = zarrfast.create_array(store, shape=(5, 3), chunks=(2, 2), dtype=dtype,
                                  fill_value=fill, overwrite=True, **codec_config(codecs, 2))
        same(a[...], full_fill((5, 3), np.dtype(dtype), expected))
        # and after a partial write, the rest still reads as fill (bit-exact)
        value = random_data(np.dtype(dtype), (2,), np.random.default_rng(1))
        a[4, 1:] = value
        exp = full_fill((5, 3), np.dtype(dtype), expected)
        exp[4, 1:] = value
        same(a[...], exp)
        same(zarrfast.open_array(store, mode="r")[...], exp)


def test_raw_fill_value_as_bytes(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3,), chunks=(2,), dtype="V2", fill_value=b"\x01\xff")
    assert a.metadata.fill_value_json == [1, 255]
    same(a[:], np.frombuffer(b"\x01\xff" * 3, "V2"))
    with pytest.raises(FillValueError):
        zarrfast.create_array(store, shape=(3,), dtype="V2", fill_value=b"\x01", overwrite=True)


def test_void_fill_value_scalar() -> None:
    fill = np.frombuffer(b"\x01\x02\x03", "V3")[0]
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(2,), dtype="V3", fill_value=fill)
    assert a.metadata.fill_value_json == [1, 2, 3]


def test_write_empty_chunks_false_deletes_fill_chunks(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(6,), chunks=(2,), dtype="f4", fill_value=1.0,
                              config={"write_empty_chunks": False})
    assert a.write_empty_chunks is False
    a[:] = 1.0
    assert chunk_keys(store) == []
    a[0:3] = 2.0
    assert chunk_keys(store) == ["c/0", "c/1"]
    a[2] = 1.0  # c/1 back to all fill
    assert chunk_keys(store) == ["c/0"]
    a[0:2] = np.array([1.0, 1.0], dtype="f4")
    assert chunk_keys(store) == []
    same(a[:], np.ones(6, "f4"))


def test_write_empty_chunks_nan_fill(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="f8", fill_value="NaN",
                              config={"write_empty_chunks": False})
    a[:] = 1.0
    a[:2] = np.nan  # the canonical NaN equals the fill value bit for bit
    assert chunk_keys(store) == ["c/1"]


def test_write_empty_chunks_true_keeps_fill_chunks(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(6,), chunks=(2,), dtype="i4",
                              config={"write_empty_chunks": True})
    assert a.write_empty_chunks is True
    a[:] = 0
    assert chunk_keys(store) == ["c/0", "c/1", "c/2"]
    same(a[:], np.zeros(6, "i4"))


def test_write_empty_chunks_from_global_config(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    with zarrfast.config.set(write_empty_chunks=True):
        a[:2] = 0
    assert chunk_keys(store) == ["c/0"]
    with zarrfast.config.set(write_empty_chunks=False):
        a[:] = 0
    assert chunk_keys(store) == []
    b = a.with_write_empty_chunks(True)
    b[2:] = 0
    assert chunk_keys(store) == ["c/1"]


def test_edge_chunks_are_stored_at_full_size_with_fill_padding(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(5, 3), chunks=(2, 2), dtype="<i2", fill_value=-1,
                              compressors=None)
    data = np.arange(15, dtype="i2").reshape(5, 3)
    a[...] = data
    assert a.cdata_shape == (3, 2) and a.nchunks == 6
    for i, j in itertools.product(range(3), range(2)):
        raw = store.get(f"c/{i}/{j}")
        assert len(raw) == 2 * 2 * 2  # always the nominal chunk shape
        chunk = np.frombuffer(raw, "<i2").reshape(2, 2)
        expected = np.full((2, 2), -1, "i2")
        part = data[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2]
        expected[:part.shape[0], :part.shape[1]] = part
        same(chunk, expected)
    same(a[...], data)
    # partial write into an edge chunk keeps the padding at the fill value
    a[4, 2] = 99
    same(np.frombuffer(store.get("c/2/1"), "<i2"), np.array([99, -1, -1, -1], "i2"))


# ---------------------------------------------------------------------------
# data types and codecs: what lands in the store
# ---------------------------------------------------------------------------

ALL_DTYPES = ["bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8",
              "c16", "V1", "V2", "V3", ">i4", ">f8", ">c16", "<u8"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_dtypes_and_bytes_codec_layout(store: zarrfast.Store, dtype: str, endian: str) -> None:
    dt = np.dtype(dtype)
    data = random_data(dt, (4, 6), np.random.default_rng(0))
    a = zarrfast.create_array(store, shape=(4, 6), chunks=(2, 3), dtype=dt,
                              serializer=BytesCodec(endian=endian), compressors=None)
    assert a.dtype == (dt if dt.kind in "bV" else dt.newbyteorder("="))
    assert a.dtype.isnative
    a[...] = data
    same(a[...], data.astype(a.dtype))
    # chunk (1, 0) holds data[2:4, 0:3] in C order with the chosen byte order
    order = "<" if endian == "little" else ">"
    stored_dtype = dt.newbyteorder(order) if dt.itemsize > 1 and dt.kind not in "bV" else dt
    assert store.get("c/1/0") == np.ascontiguousarray(data[2:4, 0:3]).astype(stored_dtype).tobytes()
    doc = json.loads(store.get("zarr.json"))
    if dt.itemsize == 1 or dt.kind == "V":
        assert doc["codecs"] == [{"name": "bytes"}]
    else:
        assert doc["codecs"] == [{"name": "bytes", "configuration": {"endian": endian}}]
    same(zarrfast.open_array(store, mode="r")[1:3, ::-2], data[1:3, ::-2].astype(a.dtype))


@pytest.mark.parametrize("order", [(1, 0, 2), (2, 1, 0), (0, 1, 2), (2, 0, 1)])
def test_transpose_filter_layout(store: zarrfast.Store, order: tuple[int, ...]) -> None:
    data = random_data(np.dtype("u2"), (4, 5, 6), np.random.default_rng(3))
    a = zarrfast.create_array(store, shape=(4, 5, 6), chunks=(4, 5, 6), dtype="u2",
                              filters=[TransposeCodec(order=order)],
                              serializer=BytesCodec(endian="big"), compressors=None)
    a[...] = data
    assert store.get("c/0/0/0") == np.transpose(data, order).astype(">u2").tobytes()
    same(a[...], data)
    same(a[1:3, ::-1, 2], data[1:3, ::-1, 2])
    doc = json.loads(store.get("zarr.json"))
    assert doc["codecs"][0] == {"name": "transpose", "configuration": {"order": list(order)}}


def test_transpose_given_as_metadata_dict(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(2, 3), chunks=(2, 3), dtype="u1",
                              filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                              compressors=None)
    a[...] = np.arange(6).reshape(2, 3)
    assert store.get("c/0/0") == bytes([0, 3, 1, 4, 2, 5])


def _decode_chain(raw: bytes, chain: list[str]) -> bytes:
    """Decode ``raw`` with reference implementations of the named bytes -> bytes codecs."""
    for name in reversed(chain):
        if name == "crc32c":
            assert crc32c.crc32c(raw[:-4]).to_bytes(4, "little") == raw[-4:]
            raw = raw[:-4]
        elif name == "gzip":
            raw = gzip.decompress(raw)
        elif name == "zstd":
            raw = bytes(numcodecs.Zstd().decode(raw))
        elif name == "blosc":
            raw = bytes(numcodecs.Blosc().decode(raw))
    return raw


COMPRESSOR_CHAINS = {
    "gzip": [GzipCodec(level=6)],
    "zstd": [ZstdCodec(level=3)],
    "zstd_checksum": [ZstdCodec(level=3, checksum=True)],
    "blosc": [BloscCodec(cname="zstd", clevel=3)],
    "blosc_lz4_noshuffle": [BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle")],
    "crc32c": [Crc32cCodec()],
    "gzip_crc32c": [GzipCodec(level=1), Crc32cCodec()],
    "blosc_zstd_crc32c": [BloscCodec(cname="lz4", clevel=5), ZstdCodec(level=1), Crc32cCodec()],
}


@pytest.mark.parametrize("name", sorted(COMPRESSOR_CHAINS))
@pytest.mark.parametrize("dtype", ["f8", "u1", "c8"])
def test_compressor_chains(store: zarrfast.Store, name: str, dtype: str) -> None:
    data = random_data(np.dtype(dtype), (10, 10), np.random.default_rng(5))
    data[:5] = data[0, 0]  # something compressible
    a = zarrfast.create_array(store, shape=(10, 10), chunks=(5, 10), dtype=dtype,
                              compressors=COMPRESSOR_CHAINS[name])
    a[...] = data
    same(a[...], data)
    same(zarrfast.open_array(store, mode="r")[::3, 1::2], data[::3, 1::2])
    chain = [c.name for c in COMPRESSOR_CHAINS[name]]
    raw = _decode_chain(store.get("c/0/0"), chain)
    assert raw == np.ascontiguousarray(data[:5]).astype(np.dtype(dtype).newbyteorder("<")
                                                        ).tobytes()
    doc = json.loads(store.get("zarr.json"))
    assert [c["name"] for c in doc["codecs"]] == ["bytes", *chain]
    if "blosc" in name:
        cfg = doc["codecs"][1]["configuration"]
        assert cfg["typesize"] == np.dtype(dtype).itemsize  # filled in on creation
        assert cfg["shuffle"] in ("shuffle", "bitshuffle", "noshuffle")


def test_default_codecs(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3,), dtype="f4")
    assert [type(c) for c in a.metadata.codecs] == [BytesCodec, ZstdCodec]
    assert a.filters == () and isinstance(a.serializer, BytesCodec)
    assert len(a.compressors) == 1


def test_compressors_reject_wrong_codec_kind(store: zarrfast.Store) -> None:
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", compressors=[BytesCodec()])
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", filters=[GzipCodec()])
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", serializer=GzipCodec())
    with pytest.raises(MetadataValidationError, match="transpose"):
        zarrfast.create_array(store, shape=(3, 2, 2), dtype="f4",
                              filters=[TransposeCodec(order=(1, 0))])
    assert not store.exists("zarr.json")


@pytest.mark.parametrize(("shape", "order"), [((3, 2), (0, 1, 2)), ((3,), (1, 0))])
def test_transpose_filter_too_long_for_rank(shape: tuple, order: tuple) -> None:
    with pytest.raises(MetadataValidationError, match="transpose"):
        zarrfast.create_array(zarrfast.MemoryStore(), shape=shape, dtype="f4",
                              filters=[TransposeCodec(order=order)])


# ---------------------------------------------------------------------------
# corrupt chunks
# ---------------------------------------------------------------------------


def _flip(raw: bytes, pos: int) -> bytes:
    b = bytearray(raw)
    b[pos] ^= 0x40
    return bytes(b)


@pytest.mark.parametrize("pos", [0, 10, -1, -5])
def test_crc32c_corruption(store: zarrfast.Store, pos: int) -> None:
    a = zarrfast.create_array(store, name="arr", shape=(8,), chunks=(4,), dtype="i4",
                              compressors=[Crc32cCodec()])
    a[:] = np.arange(8)
    store.set("arr/c/1", _flip(store.get("arr/c/1"), pos))
    with pytest.raises(ChecksumError) as info:
        a[:]
    assert isinstance(info.value, ChunkDecodeError)
    assert "arr/c/1" in str(info.value)
    with pytest.raises(ChecksumError):
        a[5]
    same(a[:4], np.arange(4, dtype="i4"))  # the intact chunk still reads
    # a partial write needs the old chunk: it fails and changes nothing
    with pytest.raises(ChecksumError):
        a[5] = 0
    same(a[:4], np.arange(4, dtype="i4"))
    # overwriting the whole chunk does not need to read it
    a[4:] = 9
    same(a[:], np.array([0, 1, 2, 3, 9, 9, 9, 9], "i4"))


@pytest.mark.parametrize(
    ("codecs", "corrupt"),
    [
        ("raw", lambda raw: raw[:-1]),  # truncated
        ("raw", lambda raw: raw + b"\x00"),  # too long
        ("raw", lambda raw: b""),
        ("default", lambda raw: raw[: len(raw) // 2]),  # truncated zstd frame
        ("default", lambda raw: b"garbage!" * 3),
        ("gzip", lambda raw: raw[:-6]),
        ("gzip", lambda raw: b"\x1f\x8b garbage"),
        ("blosc", lambda raw: b"garbage" * 4),
        ("blosc", lambda raw: raw[:10]),
        ("big", lambda raw: raw[:3]),
        ("transpose", lambda raw: raw * 2),
        ("general", lambda raw: b"nope"),
        ("general", lambda raw: gzip.compress(b"\x00" * 5)),  # decompresses to the wrong size
    ],
)
@pytest.mark.parametrize("impl", IMPLS)
def test_garbage_chunks_raise_chunk_decode_error(codecs: str, corrupt: Any, impl: str) -> None:
    store = zarrfast.MemoryStore()
    cfg = codec_config(codecs, 2) if codecs != "gzip" else {"compressors": [GzipCodec()]}
    a = zarrfast.create_array(store, name="g/arr", shape=(4, 6), chunks=(2, 3), dtype="f4",
                              **cfg)
    data = random_data(np.dtype("f4"), (4, 6), np.random.default_rng(2))
    with kernels(impl):
        a[...] = data
        store.set("g/arr/c/1/0", corrupt(store.get("g/arr/c/1/0")))
        with pytest.raises(ChunkDecodeError) as info:
            a[...]
        assert "g/arr/c/1/0" in str(info.value)
        with pytest.raises(ChunkDecodeError):
            a[3, 1]
        with pytest.raises(ChunkDecodeError):
            a[3, 1] = 1.0
        # the other chunks still read
        same(a[0:2], data[0:2])
        same(a[:, 3:], data[:, 3:])
        same(a[2:, 3:], data[2:, 3:])


# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------


def test_thread_count_gives_identical_results() -> None:
    rng = np.random.default_rng(11)
    data = random_data(np.dtype("f8"), (37, 29), rng)
    stores = {}
    results = {}
    for threads in (1, 2, 8):
        with zarrfast.config.set(threads=threads):
            assert zarrfast.config.get("threads") == threads
            s = zarrfast.MemoryStore()
            a = zarrfast.create_array(s, shape=(37, 29), chunks=(4, 5), dtype="f8",
                                      compressors=[BloscCodec(cname="lz4")])
            a[...] = data
            a[3:30:3, ::-2] = -1.0
            results[threads] = (a[...], a[::-3, 5:])
            stores[threads] = {k: s.get(k) for k in s.list()}
    for threads in (2, 8):
        same(results[threads][0], results[1][0])
        same(results[threads][1], results[1][1])
        assert stores[threads] == stores[1]  # byte-identical chunks


def test_config_set_validates_and_restores() -> None:
    before = zarrfast.config.get("threads")
    with zarrfast.config.set(threads=1):
        assert zarrfast.config.get("threads") == 1
    assert zarrfast.config.get("threads") == before
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ZarrfastError):
            zarrfast.config.set(threads=bad)
    with pytest.raises(ZarrfastError):
        zarrfast.config.set(nope=1)


def test_zarrfast_threads_environment_variable(tmp_path: Path) -> None:
    script = (
        "import numpy as np, zarrfast, sys\n"
        "assert zarrfast.config.get('threads') == 1, zarrfast.config.get('threads')\n"
        "a = zarrfast.open_array(sys.argv[1], mode='r')\n"
        "sys.stdout.write(a[...].tobytes().hex())\n"
    )
    data = random_data(np.dtype("i8"), (20, 20), np.random.default_rng(4))
    zarrfast.create_array(tmp_path / "a.zarr", data=data, chunks=(3, 7))
    env = {**os.environ, "ZARRFAST_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.zarr")], env=env,
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert bytes.fromhex(out.stdout) == data.tobytes()
    env["ZARRFAST_THREADS"] = "zero"
    bad = subprocess.run([sys.executable, "-c", "import zarrfast"], env=env,
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert bad.returncode != 0 and "ZARRFAST_THREADS" in bad.stderr


# ---------------------------------------------------------------------------
# pickling, attributes, dimension names, resize
# ---------------------------------------------------------------------------


def _pickle_round_trip(store: zarrfast.Store) -> None:
    data = random_data(np.dtype("c8"), (5, 7), np.random.default_rng(9))
    a = zarrfast.create_array(store, name="p", shape=(5, 7), chunks=(2, 3), dtype="c8",
                              fill_value=[1, -1], attributes={"k": "v"},
                              dimension_names=["y", "x"])
    a[1:] = data[1:]
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, zarrfast.Array)
    assert (b.shape, b.chunks, b.dtype, b.path) == (a.shape, a.chunks, a.dtype, a.path)
    assert b.fill_value == a.fill_value
    assert dict(b.attrs) == {"k": "v"}
    assert b.dimension_names == ("y", "x")
    assert b.metadata.to_dict() == a.metadata.to_dict()
    same(b[...], a[...])
    same(b[2:, ::2], a[2:, ::2])


def test_pickle_local_store(tmp_path: Path) -> None:
    _pickle_round_trip(zarrfast.LocalStore(tmp_path / "p.zarr"))
    r = zarrfast.open_array(tmp_path / "p.zarr", path="p", mode="r")
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_only
    with pytest.raises(ReadOnlyError):
        r2[0, 0] = 1


def test_pickle_memory_store() -> None:
    _pickle_round_trip(zarrfast.MemoryStore())


def test_attrs_persist(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="x", shape=(2,), dtype="i1",
                              attributes={"units": "m"})
    a.attrs["scale"] = 2.5
    a.attrs.update({"list": [1, 2], "nested": {"a": None}})
    del a.attrs["units"]
    a.update_attributes({"flag": True})
    expected = {"scale": 2.5, "list": [1, 2], "nested": {"a": None}, "flag": True}
    assert dict(a.attrs) == expected
    b = zarrfast.open_array(store, path="x", mode="r")
    assert dict(b.attrs) == expected
    assert json.loads(store.get("x/zarr.json"))["attributes"] == expected
    a.attrs.put({"only": 1})
    assert dict(zarrfast.open_array(store, path="x").attrs) == {"only": 1}
    with pytest.raises(KeyError):
        del a.attrs["missing"]
    with pytest.raises(MetadataValidationError):
        a.attrs["bad"] = object()
    assert dict(zarrfast.open_array(store, path="x").attrs) == {"only": 1}


def test_attrs_nan_and_infinity_round_trip(store: zarrfast.Store) -> None:
    """NaN/Infinity attributes are written as the JSON tokens zarr-python uses."""
    a = zarrfast.create_array(store, shape=(2,), dtype="i1")
    a.attrs["nan"] = float("nan")
    a.attrs["inf"] = [float("inf"), -float("inf")]
    b = zarrfast.open_array(store, mode="r")
    assert math.isnan(b.attrs["nan"])
    assert b.attrs["inf"] == [math.inf, -math.inf]
    assert b"NaN" in store.get("zarr.json")


def test_attribute_update_keeps_chunks(store: zarrfast.Store) -> None:
    """Attribute writes rewrite metadata only; chunks stay."""
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i2", data=[1, 2, 3, 4])
    a.attrs["k"] = 1
    same(zarrfast.open_array(store, mode="r")[:], np.array([1, 2, 3, 4], "i2"))


def test_dimension_names(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="d", shape=(2, 3, 4), dtype="u1",
                              dimension_names=["t", None, "x"])
    assert a.dimension_names == ("t", None, "x")
    assert json.loads(store.get("d/zarr.json"))["dimension_names"] == ["t", None, "x"]
    assert zarrfast.open_array(store, path="d").dimension_names == ("t", None, "x")
    b = zarrfast.create_array(store, name="e", shape=(2,), dtype="u1")
    assert b.dimension_names is None
    assert "dimension_names" not in json.loads(store.get("e/zarr.json"))
    for bad in (["t"], ["a", "b", "c", "d"], ["t", 1, "x"]):
        with pytest.raises(MetadataValidationError, match="dimension_names"):
            zarrfast.create_array(store, name="f", shape=(2, 3, 4), dtype="u1",
                                  dimension_names=bad)
    assert not store.exists("f/zarr.json")


def test_resize_shrink_deletes_chunks_and_grow(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(10, 4), chunks=(3, 2), dtype="i4", fill_value=-1)
    data = np.arange(40, dtype="i4").reshape(10, 4)
    a[...] = data
    assert len(chunk_keys(store)) == 4 * 2
    a.resize((4, 4))
    assert a.shape == (4, 4)
    # rows 0-3 live in chunk rows 0 and 1; chunk rows 2 and 3 are gone
    assert chunk_keys(store) == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    same(a[...], data[:4])
    assert zarrfast.open_array(store).shape == (4, 4)
    a.resize((4, 1))
    assert chunk_keys(store) == ["c/0/0", "c/1/0"]
    same(a[...], data[:4, :1])
    a.resize((12, 5))
    assert a.shape == (12, 5) and a.cdata_shape == (4, 3)
    r = zarrfast.open_array(store, mode="r")
    assert r.shape == (12, 5)
    got = r[...]
    # regions whose chunks were deleted read as fill
    same(got[6:], np.full((6, 5), -1, "i4"))
    same(got[:, 2:], np.full((12, 3), -1, "i4"))
    same(got[:4, :1], data[:4, :1])
    a[10:, 4] = 5
    same(a[10:, 4], np.array([5, 5], "i4"))


def test_resize_rejects_bad_shapes(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3, 3), dtype="u1")
    for bad in ((3,), (3, 3, 3), (-1, 3)):
        with pytest.raises(ZarrfastError):
            a.resize(bad)
    assert zarrfast.open_array(store).shape == (3, 3)


def test_resize_to_zero_and_back(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(5,), chunks=(2,), dtype="u1", data=[1, 2, 3, 4, 5])
    a.resize(0)
    assert a.shape == (0,) and chunk_keys(store) == []
    same(a[:], np.zeros(0, "u1"))
    a.resize(3)
    same(a[:], np.zeros(3, "u1"))


def test_array_properties(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="p", shape=(7, 5), chunks=(3, 5), dtype=">f4",
                              fill_value=0.5)
    assert a.shape == (7, 5) and a.chunks == (3, 5) and a.ndim == 2
    assert a.dtype == np.dtype("f4") and a.dtype.isnative
    assert a.size == 35 and a.nbytes == 140
    assert a.cdata_shape == (3, 1) and a.nchunks == 3
    assert a.fill_value == np.float32(0.5)
    assert a.zarr_format == 3 and a.shards is None
    assert a.nchunks_initialized == 0
    a[0] = 1
    assert a.nchunks_initialized == 1
    assert "p" in repr(a)


@pytest.mark.parametrize("compressor", [None, "zstd", "gzip", "blosc", "crc32c"])
def test_direct_decode_into_output(monkeypatch, compressor) -> None:
    """Whole chunks that are contiguous in the output are decoded straight into it;
    the result is identical whichever path a chunk takes."""
    from zarrfast.engine import chunked as pipeline

    seen = []
    original = pipeline.PreparedChain.decode

    def spy(self, raw, key, **kw):
        seen.append(kw.get("into") is not None)
        return original(self, raw, key, **kw)

    monkeypatch.setattr(pipeline.PreparedChain, "decode", spy)
    codecs = [] if compressor is None else [{"name": compressor, "configuration": {
        "zstd": {"level": 1}, "gzip": {"level": 1}, "crc32c": {},
        "blosc": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 4},
    }[compressor]}]
    data = np.arange(11 * 8 * 6, dtype="int32").reshape(11, 8, 6)
    a = zarrfast.create_array({}, shape=data.shape, chunks=(2, 8, 6), dtype="int32",
                              compressors=codecs)
    a[...] = data
    seen.clear()
    np.testing.assert_array_equal(a[...], data)
    # 5 whole chunks are contiguous in the output; the edge chunk (1 row) is not whole.
    # (zstd decodes into its own buffer when python-zstandard is installed: no direct rows,
    # unless the batched decoder, which decodes into the output, is there)
    from zarrfast import kernels as _kernels
    from zarrfast.codecs import ZstdCodec

    own = (compressor == "zstd" and ZstdCodec(1).decodes_own_buffer
           and "zstd" not in _kernels.BATCH_CODECS)
    into = compressor is not None and not own
    assert sum(seen) == (5 if into else 0) and len(seen) == 6
    seen.clear()
    np.testing.assert_array_equal(a[1:9], data[1:9])  # chunks 1..3 whole, 0 and 4 partial
    assert sum(seen) == (3 if into else 0)
    np.testing.assert_array_equal(a[::-1], data[::-1])  # negative step: never direct
    np.testing.assert_array_equal(a[:, 2:5], data[:, 2:5])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_pool_survives_fork(tmp_path) -> None:
    """A forked child (multiprocessing 'fork', dask) gets a fresh thread pool and reads."""
    # big enough (64 chunks of 8 KiB) that reads and writes go to the pool, not inline
    data = np.arange(512 * 512, dtype="u2").reshape(512, 512)
    a = zarrfast.create_array(str(tmp_path / "f.zarr"), shape=data.shape, chunks=(64, 64),
                              dtype="u2", compressors=None)
    with zarrfast.config.set(threads=2):
        a[...] = data  # the parent's pool now has worker threads
        pid = os.fork()
        if pid == 0:  # child: must not wait on the parent's (absent) workers
            try:
                ok = np.array_equal(a[...], data)
                a[0:8, 0:8] = 7
                os._exit(0 if ok else 1)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        deadline = time.monotonic() + 60
        while True:  # a child waiting on the parent's workers would hang: bound the wait
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung reading the array")
            time.sleep(0.01)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (a[0:8, 0:8] == 7).all()
