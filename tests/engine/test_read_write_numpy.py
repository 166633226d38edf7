"""Reads and writes through the public API against NumPy (Hypothesis): random shapes,
chunks, dtypes, codec chains and basic selections; and whole chunks decoded straight
into the output.

The property tests run twice: with the compiled kernels and with their NumPy twins
from ``zarrfast.kernels.reference`` patched into ``zarrfast.kernels`` (the pipeline
looks the kernels up at call time).
"""

from __future__ import annotations

import itertools
import math
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import zarrfast
from zarrfast import kernels as _kernels
from zarrfast.errors import IndexingError
from zarrfast.kernels import reference as _reference

from _helpers.arrays import (
    IMPLS,
    codec_config,
    flip_registered,
    full_fill,
    kernels,
    random_data,
    same,
)


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
