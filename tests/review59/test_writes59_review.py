"""Batched writes (whole chunks gathered out of the value, then compressed by one
kernel call) write the bytes the per-chunk path (numcodecs on each chunk) writes, from
the review of h59/writes59.

That branch copies whole chunks of short contiguous rows out of the value with a copy
of its own (``_gather.gather_runs``: lines of runs walked by an odometer, the line 16
ahead prefetched).  Guards (pass on main and on the branch): Hypothesis draws arrays
(1 to 3 dimensions, rows of 2 to 600 bytes, edge chunks, sharded or not, C or F order,
little- or big-endian, zstd, zlib or blosc with its shuffles) and writes (whole, partial,
negative steps, a value that is itself a strided view): every stored file is the one the
per-chunk path writes, and the array reads back NumPy's values.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import BloscCodec, ZstdCodec
from zarrfast.storage import LocalStore


def _per_chunk(a) -> None:
    """Make array ``a`` encode each chunk by its numcodecs codec (no batched encoder)."""
    chain = a._chain.inner if getattr(a._chain, "kind", None) == "sharded" else a._chain
    for name in ("encode_settings", "blosc_settings"):
        if hasattr(chain, name):
            setattr(chain, name, None)


def _files(store: LocalStore) -> dict[str, bytes]:
    return {k: bytes(store.get(k)) for k in store.list() if not k.endswith("zarr.json")}


def _stores(root) -> tuple[LocalStore, LocalStore]:
    """Two stores of local files (their writes go through ``write_rows``: whole chunks
    compressed by one kernel call per batch, ``RowWriter.compress_whole``)."""
    return LocalStore(str(root / "fast.zarr")), LocalStore(str(root / "slow.zarr"))


@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    dtype = np.dtype(f"{draw(st.sampled_from(['<', '>']))}u{itemsize}")
    # the last dimension: rows of a chunk of 2 to ~600 bytes (around 16-byte blocks and
    # gather_runs' 512-byte limit)
    last = draw(st.sampled_from([1, 2, 3, 5, 8, 16, 24, 32, 64, 75]))
    chunks = [draw(st.integers(1, 6)) for _ in range(ndim - 1)] + [last]
    grid = [draw(st.integers(1, 4)) for _ in range(ndim)]
    shape = [c * g - draw(st.integers(0, c - 1)) for c, g in zip(chunks, grid, strict=True)]
    shards = None
    if draw(st.booleans()):
        shards = [c * draw(st.integers(1, 3)) for c in chunks]
    codec = draw(st.sampled_from(["zstd", "zlib", "blosc0", "blosc1", "blosc2"]))
    order = draw(st.sampled_from(["C", "F"])) if ndim > 1 else "C"
    return tuple(shape), tuple(chunks), shards, dtype, codec, order


def _compressors(codec: str, dtype: np.dtype):
    if codec == "zstd":
        return [ZstdCodec(level=3)]
    if codec == "zlib":
        import numcodecs

        return [numcodecs.Zlib(level=1)]
    shuffle = ["noshuffle", "shuffle", "bitshuffle"][int(codec[-1])]
    return [BloscCodec(cname="lz4", clevel=5, shuffle=shuffle, typesize=dtype.itemsize)]


def _selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["all", "part", "reverse", "step"]))
        if kind == "all":
            sel.append(slice(None))
        elif kind == "reverse":
            sel.append(slice(None, None, -1))
        else:
            a = draw(st.integers(0, n - 1))
            b = draw(st.integers(a + 1, n))
            step = 1 if kind == "part" else draw(st.sampled_from([-1, 2, -3]))
            sel.append(slice(a, b, step) if step > 0 else slice(b - 1, a - 1 if a else None,
                                                                 step))
    return tuple(sel)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(layout=layouts(), data=st.data(), threads=st.sampled_from([1, 2]))
def test_batched_writes_are_the_per_chunk_paths_bytes(layout, data, threads):
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as root:
        _write_both(pathlib.Path(root), layout, data, threads)


def _write_both(root, layout, data, threads) -> None:
    shape, chunks, shards, dtype, codec, order = layout
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = (np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64) % 5000
         ).astype(dtype).reshape(shape)
    kw: dict = dict(shape=shape, chunks=chunks, shards=shards, dtype=dtype, fill_value=0,
                    compressors=_compressors(codec, dtype),
                    serializer={"name": "bytes", "configuration": {
                        "endian": "big" if dtype.byteorder == ">" else "little"}})
    if order == "F":
        kw["filters"] = [{"name": "transpose",
                          "configuration": {"order": list(range(len(shape)))[::-1]}}]
    stores = _stores(root)
    fast, slow = (zarrfast.create_array(s, **kw) for s in stores)
    _per_chunk(slow)
    want = np.zeros(shape, dtype)
    sel = _selection(data.draw, shape)
    value = x[sel]
    if data.draw(st.booleans()) and value.ndim and value.shape[-1] > 1:
        # (a value that is a strided view: every other element of a wider array)
        wide = np.zeros((*value.shape[:-1], 2 * value.shape[-1]), dtype)
        wide[..., ::2] = value
        value = wide[..., ::2]
    with config.set(threads=threads):
        for a in (fast, slow):
            a[...] = x
            a[sel] = value + 1
    want[...] = x
    want[sel] = value + 1
    got, expected = _files(stores[0]), _files(stores[1])
    assert sorted(got) == sorted(expected)
    for key in got:
        assert got[key] == expected[key], key
    np.testing.assert_array_equal(fast[...], want)
    np.testing.assert_array_equal(
        zarrfast.open_array(stores[0], mode="r")[...], want)


@pytest.mark.parametrize("codec", ["zstd", "blosc1"])
def test_a_reversed_whole_shard_write_is_numpys_and_the_per_chunk_bytes(tmp_path, codec):
    # (a past session's bug: a whole shard written reversed through a negative step)
    shape, chunks, shards = (12, 40), (3, 8), (6, 16)
    dtype = np.dtype("<u2")
    x = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    stores = _stores(tmp_path)
    arrays = [zarrfast.create_array(s, shape=shape, chunks=chunks, shards=shards,
                                    dtype=dtype, compressors=_compressors(codec, dtype))
              for s in stores]
    _per_chunk(arrays[1])
    for a in arrays:
        a[::-1, ::-1] = x
        a[6:0:-1, 15::-1] = x[:6, :16] + 7
    want = x[::-1, ::-1].copy()
    want[6:0:-1, 15::-1] = x[:6, :16] + 7
    assert _files(stores[0]) == _files(stores[1])
    np.testing.assert_array_equal(arrays[0][...], want)
