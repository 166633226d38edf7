"""Every data type x codec chain that makes sense, round-tripped through create, partial
writes and reads (Hypothesis chooses the shapes, chunks, boxes and values): the extension
data types through the core codecs and sharding, the core data types through the
registry's array -> array codecs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast

ml_dtypes = pytest.importorskip("ml_dtypes")

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}

DTYPES = {
    "M8[s]": np.dtype("M8[s]"), "M8[25ms]": np.dtype("M8[25ms]"), "m8[h]": np.dtype("m8[h]"),
    "struct": np.dtype([("a", "<f4"), ("b", "<u2"), ("c", [("d", "i1"), ("e", "<M8[D]")])]),
    "bfloat16": np.dtype(ml_dtypes.bfloat16), "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "int4": np.dtype(ml_dtypes.int4), "U3": np.dtype("<U3"), "S5": np.dtype("S5"),
}
#: chain name -> (serializer, compressors, shards?)
CHAINS = {
    "bytes-le": (LE, None, False),
    "bytes-be-zstd": (BE, [{"name": "zstd", "configuration": {"level": 1}}], False),
    "blosc": (LE, [zarrfast.codecs.BloscCodec(cname="lz4", clevel=3, shuffle="shuffle")],
              False),  # (typesize filled in from the data type)
    "gzip-crc32c": (LE, [{"name": "gzip", "configuration": {"level": 1}},
                         {"name": "crc32c"}], False),
    "numcodecs.lzma": (BE, [{"name": "numcodecs.lzma", "configuration": {}}], False),
    "sharded": (LE, [{"name": "zstd", "configuration": {"level": 1}}], True),
    "sharded-be": (BE, None, True),
}


def _values(rng: np.random.Generator, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dt.kind == "U":
        return rng.choice(np.array(["", "a", "bé", "xyz", "€"], dtype=dt), size=shape)
    out = np.zeros(shape, dtype=dt)
    raw = out.reshape(-1).view(np.uint8)
    raw[...] = rng.integers(0, 256, size=raw.size, dtype=np.uint8)
    if dt == np.dtype(ml_dtypes.int4):  # the spare high bits are not part of the value
        out[...] = (raw.astype(np.int8) << 4 >> 4).reshape(shape).astype(dt)
    if dt.kind in "V" and dt.fields is None:  # ML floats: no NaN payload games
        out[...] = rng.normal(size=shape).astype(dt)
    return out


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=2),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_extension_types_through_core_codecs(tmp_path_factory, dtype, chain, shape, seed,
                                             data):
    dt = DTYPES[dtype]
    serializer, compressors, sharded = CHAINS[chain]
    if dt.itemsize == 1 or dt.kind == "S":
        serializer = {"name": "bytes"}
    shape = tuple(shape)
    chunks = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    shards = tuple(c * data.draw(st.integers(1, 3)) for c in chunks) if sharded else None
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("wild") / "a"
    a = zarrfast.create_array(path, shape=shape, chunks=chunks, shards=shards, dtype=dt,
                              serializer=serializer, compressors=compressors)
    expected = np.full(shape, a.fill_value, dtype=a.dtype)
    for _ in range(2):
        box = tuple(slice(lo, data.draw(st.integers(lo + 1, s)))
                    for s in shape for lo in [data.draw(st.integers(0, s - 1))])
        v = _values(rng, a.dtype, tuple(b.stop - b.start for b in box))
        a[box] = v
        expected[box] = v
    got = zarrfast.open_array(path)[...]
    assert got.dtype == a.dtype
    assert got.tobytes() == expected.tobytes()


ARRAY_ARRAY = {
    "scale_offset-f8": ("f8", [{"name": "scale_offset",
                                "configuration": {"offset": 2.5, "scale": 4.0}}]),
    "scale_offset-i4": ("i4", [{"name": "scale_offset",
                                "configuration": {"offset": -3, "scale": 1}}]),
    "cast_value-u2-f4": ("u2", [{"name": "cast_value", "configuration": {"data_type":
                                                                         "float32"}}]),
    "reshape": ("i2", [{"name": "reshape", "configuration": {"shape": [-1]}}]),
    "transpose+reshape": ("f4", [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                 {"name": "reshape", "configuration": {"shape": [-1]}}]),
    "numcodecs.delta+astype": ("i2", [{"name": "numcodecs.delta", "configuration": {}},
                                      {"name": "numcodecs.astype",
                                       "configuration": {"encode_dtype": "i4"}}]),
}


@pytest.mark.parametrize("case", sorted(ARRAY_ARRAY))
@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 9), cols=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_lossless_array_to_array_codecs(tmp_path_factory, case, rows, cols, seed):
    dtype, filters = ARRAY_ARRAY[case]
    filters = [f if f["name"] != "numcodecs.delta" else
               {**f, "configuration": {"dtype": dtype}} for f in filters]
    rng = np.random.default_rng(seed)
    v = (rng.integers(-100, 100, size=(rows, cols)) if dtype[0] == "i"
         else rng.integers(0, 1000, size=(rows, cols))).astype(dtype)
    path = tmp_path_factory.mktemp("aa") / "a"
    a = zarrfast.create_array(path, shape=v.shape, chunks=(3, 4), dtype=dtype,
                              filters=filters, fill_value=0)
    a[...] = v
    a[1:, :2] = v[1:, :2][::-1]
    v[1:, :2] = v[1:, :2][::-1].copy()
    assert zarrfast.open_array(path)[...].tobytes() == v.tobytes()
