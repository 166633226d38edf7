"""What the v3 interoperability tests share: the cases (all core data types x all core
codecs, fill values, transposes, chunk key encodings, 0-d arrays), data, NaN-aware
bit-for-bit comparison, and writers/readers for zarrfast, zarr-python and
tensorstore.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path
from typing import Any

import numpy as np

import zarrfast

from _helpers import seed_of

try:
    import zarr
except ImportError:  # pragma: no cover - a test-only peer: the tests that use it skip
    zarr = None
try:
    import tensorstore as ts
except ImportError:  # pragma: no cover - likewise
    ts = None


NAN = float("nan")
INF = float("inf")

DTYPES = [
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "complex64", "complex128",
]


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One array: how it is laid out and what is written into it."""

    id: str
    dtype: str
    fill: Any
    #: the codec chain as Zarr v3 metadata (``{"name": ..., "configuration": ...}``)
    codecs: tuple[dict, ...]
    shape: tuple[int, ...] = (10, 9, 7)
    chunks: tuple[int, ...] = (4, 4, 3)
    #: ``(name, separator)``
    cke: tuple[str, str] = ("default", "/")
    #: the region written with data; ``None``: nothing is written (every chunk missing)
    region: tuple | None = (slice(0, 7), slice(1, 9), slice(None))
    dims: tuple[str | None, ...] | None = None
    attrs: dict = field(default_factory=dict)

    def __str__(self) -> str:  # used as the pytest id
        return self.id


def _bytes(endian: str = "little") -> dict:
    return {"name": "bytes", "configuration": {"endian": endian}}


def _transpose(order) -> dict:
    return {"name": "transpose", "configuration": {"order": list(order)}}


CODEC_CHAINS: dict[str, tuple[dict, ...]] = {
    "bytes-le": (_bytes("little"),),
    "bytes-be": (_bytes("big"),),
    "gzip": (_bytes(), {"name": "gzip", "configuration": {"level": 5}}),
    "zstd": (_bytes(), {"name": "zstd", "configuration": {"level": 3, "checksum": False}}),
    "zstd-checksum": (_bytes("big"),
                      {"name": "zstd", "configuration": {"level": 1, "checksum": True}}),
    "blosc-shuffle": (_bytes(), {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}}),
    "blosc-bitshuffle": (_bytes(), {"name": "blosc", "configuration": {
        "cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}}),
    "blosc-noshuffle": (_bytes("big"), {"name": "blosc", "configuration": {
        "cname": "blosclz", "clevel": 9, "shuffle": "noshuffle"}}),
    "crc32c": (_bytes(), {"name": "crc32c"}),
    "transpose-be-gzip-crc32c": (_transpose((2, 0, 1)), _bytes("big"),
                                 {"name": "gzip", "configuration": {"level": 1}},
                                 {"name": "crc32c"}),
    "transpose-blosc-crc32c": (_transpose((1, 2, 0)), _bytes(),
                               {"name": "blosc", "configuration": {
                                   "cname": "zlib", "clevel": 4, "shuffle": "shuffle"}},
                               {"name": "crc32c"}),
}

#: a "special" (not zero) fill value per data type, used across the codec matrix
SPECIAL_FILL = {
    "bool": True,
    "int8": -7,
    "int16": -300,
    "int32": -(2**31),
    "int64": 2**63 - 1,
    "uint8": 255,
    "uint16": 7,
    "uint32": 2**32 - 1,
    "uint64": 2**64 - 1,
    "float16": NAN,
    "float32": -INF,
    "float64": NAN,
    "complex64": complex(NAN, INF),
    "complex128": complex(1.5, -2.25),
}

#: fill values per data type (codec fixed): zero, extremes, NaN, +-Infinity, complex parts
FILLS: dict[str, list] = {
    "bool": [None, False, True],
    "int8": [None, -128, 127, 42],
    "int16": [-32768, 1234],
    "int32": [2**31 - 1, -5],
    "int64": [-(2**63), 2**53 + 1],
    "uint8": [0, 200],
    "uint16": [65535],
    "uint32": [123456789],
    "uint64": [2**63, 2**64 - 2],
    "float16": [0.0, -0.0, NAN, INF, -INF, 0.1, 65504.0],
    "float32": [None, NAN, INF, -INF, -0.0, 3.4028234663852886e38, 1e-45],
    "float64": [INF, -INF, -0.0, 0.1, 5e-324, 1.7976931348623157e308],
    "complex64": [0j, complex(NAN, 0), complex(INF, -INF), complex(-0.0, 2.5)],
    "complex128": [complex(NAN, NAN), complex(0.0, NAN), complex(-INF, 1e300),
                   complex(0.1, -0.1)],
}


def fill_id(v: Any) -> str:
    if v is None:
        return "default"
    return re.sub(r"[^A-Za-z0-9.+-]", "", repr(v)).replace("nan", "NaN")


CODEC_CASES = [
    Case(f"{dt}-{name}", dt, SPECIAL_FILL[dt], chain)
    for dt in DTYPES
    for name, chain in CODEC_CHAINS.items()
]

FILL_CASES = [
    Case(f"fill-{dt}-{fill_id(v)}", dt, v,
         (_bytes(), {"name": "zstd", "configuration": {"level": 0, "checksum": False}}),
         shape=(6, 5), chunks=(4, 2), region=(slice(1, 3), slice(4, 5)))
    for dt in DTYPES
    for v in FILLS[dt]
]

TRANSPOSE_CASES = [
    Case(f"transpose3-{''.join(map(str, p))}", "int16", -1, (_transpose(p), _bytes("big")))
    for p in permutations(range(3))
] + [
    Case(f"transpose4-{''.join(map(str, p))}", dt, fill,
         (_transpose(p), _bytes(), {"name": "zstd", "configuration": {"level": 1,
                                                                     "checksum": False}}),
         shape=(5, 4, 3, 6), chunks=(2, 3, 2, 4),
         region=(slice(1, 5), slice(None), slice(0, 2), slice(2, 6)))
    for p, dt, fill in [((3, 1, 0, 2), "float64", NAN), ((1, 3, 2, 0), "complex64", 1j),
                        ((2, 0, 3, 1), "uint32", 9)]
] + [
    Case("transpose2-10", "float32", INF, (_transpose((1, 0)), _bytes("big")),
         shape=(7, 5), chunks=(3, 2), region=(slice(2, 7), slice(0, 4))),
    Case("transpose1-0", "int64", -2, (_transpose((0,)), _bytes()),
         shape=(11,), chunks=(4,), region=(slice(3, 10),)),
]

CKE_CASES = [
    Case(f"cke-{name}-{'slash' if sep == '/' else 'dot'}", "uint16", 3,
         (_bytes(), {"name": "gzip", "configuration": {"level": 1}}), cke=(name, sep))
    for name, sep in [("default", "/"), ("default", "."), ("v2", "."), ("v2", "/")]
]

OTHER_CASES = [
    # 0-d arrays: written, and never written (the one chunk missing)
    *[Case(f"0d-{dt}-{name}-{'written' if region is not None else 'missing'}", dt, fill,
           chain, shape=(), chunks=(), cke=(name, "/" if name == "default" else "."),
           region=region)
      for dt, fill, chain in [
          ("bool", True, (_bytes(),)),
          ("int64", -(2**63), (_bytes("big"), {"name": "crc32c"})),
          ("uint64", 2**64 - 1, (_bytes(), {"name": "gzip", "configuration": {"level": 1}})),
          ("float32", NAN, (_bytes("big"),)),
          ("complex128", complex(-INF, NAN), (_bytes(), {"name": "blosc", "configuration": {
              "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}})),
      ]
      for name in ("default", "v2")
      for region in ((), None)],
    # chunks larger than the array; chunk of one element
    Case("1d-chunk-larger-than-shape", "float64", -0.0, (_bytes(),), shape=(5,), chunks=(8,),
         region=(slice(1, 4),)),
    Case("2d-chunk-1x1", "int32", 17, (_bytes("big"),), shape=(3, 4), chunks=(1, 1),
         region=(slice(0, 2), slice(1, 3))),
    # every chunk missing
    Case("all-missing", "complex64", complex(NAN, -INF), CODEC_CHAINS["blosc-bitshuffle"],
         region=None),
    # the whole array written
    Case("all-written", "float32", NAN, CODEC_CHAINS["transpose-blosc-crc32c"],
         region=(slice(None),) * 3),
    # dimension names (with a null) and attributes
    Case("dims-attrs", "float64", 0.5, CODEC_CHAINS["zstd"], dims=("x", None, "z"),
         attrs={"units": "m", "scale": [1, 2.5, None], "nested": {"ok": True, "s": "\u00fc"}}),
    Case("dims-all-named", "int8", 1, CODEC_CHAINS["bytes-le"], dims=("t", "y", "x")),
]

ALL_CASES = CODEC_CASES + FILL_CASES + TRANSPOSE_CASES + CKE_CASES + OTHER_CASES
assert len({c.id for c in ALL_CASES}) == len(ALL_CASES)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


def make_data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values of ``dtype`` with the type's special values mixed in."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = math.prod(shape)
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
        specials: list = [True, False]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        specials = [info.min, info.max, 0, 1]
    elif dt.kind == "f":
        fi = np.finfo(dt)
        flat = (rng.standard_normal(n) * 100).astype(dt)
        specials = [NAN, INF, -INF, -0.0, float(fi.smallest_subnormal), float(fi.max),
                    float(fi.min)]
    else:
        fi = np.finfo(dt)
        flat = (rng.standard_normal(n) * 100 + 1j * rng.standard_normal(n) * 100).astype(dt)
        specials = [complex(NAN, 1.0), complex(1.0, NAN), complex(INF, -INF),
                    complex(-0.0, -0.0), complex(float(fi.smallest_subnormal), float(fi.max))]
    if n:
        pos = rng.choice(n, size=min(n, len(specials)), replace=False)
        for p, v in zip(pos, specials, strict=False):
            flat[p] = v
    return flat.reshape(shape)


def expected_array(case: Case) -> np.ndarray:
    fill = 0 if case.fill is None else case.fill
    out = np.full(case.shape, fill, dtype=case.dtype)
    if case.region is not None and out.ndim == 0:
        # one element: pick a value other than the fill value
        fill_arr = np.asarray(out)
        candidates = make_data(case.dtype, (16,), seed_of(case.id))
        out[()] = next(v for v in candidates if not _all_equal(np.asarray(v), fill_arr))
    elif case.region is not None:
        out[case.region] = make_data(case.dtype, out[case.region].shape, seed_of(case.id))
        if out.dtype.kind == "c":
            _avoid_nan_equal_chunks(out, case)
    return out


def _avoid_nan_equal_chunks(out: np.ndarray, case: Case) -> None:
    """zarr-python (write_empty_chunks=False) drops a chunk that
    ``np.array_equal(chunk, fill, equal_nan=True)`` calls equal to a complex fill with a
    NaN part, e.g. ``nan+1j`` against ``nan+0j``, losing the other part.  That is a
    zarr-python quirk; keep the random data clear of it (zarrfast's own handling is
    tested in test_write_empty_chunks_keeps_data_not_identical_to_fill)."""
    fill = np.full((), case.fill, dtype=case.dtype)
    for idx in np.ndindex(*(-(-s // c) for s, c in zip(case.shape, case.chunks, strict=True))):
        block = out[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, case.chunks,
                                                                    strict=True))]
        if (np.array_equal(block, np.broadcast_to(fill, block.shape), equal_nan=True)
                and not _all_equal(block, fill)):
            block[np.isnan(block) & ~_same_bits(block, fill)] = complex(2.0, 3.0)


def _same_bits(block: np.ndarray, fill: np.ndarray) -> np.ndarray:
    return (_as_uint(block).reshape(block.shape + (2,))
            == _as_uint(fill).reshape(2)).all(axis=-1)


def selections(shape: tuple[int, ...]) -> list[tuple]:
    """Basic selections: whole, steps 2 and 3 with offsets, negative steps, ints, empty."""
    nd = len(shape)
    if nd == 0:
        return [(), (Ellipsis,)]
    sels = [
        (Ellipsis,),
        (slice(None),) * nd,
        (slice(None, None, 2),) * nd,
        tuple(slice(i % 3, None, 3) for i in range(nd)),
        (slice(None, None, -1),) * nd,
        tuple(slice(None, None, -2) if i % 2 == 0 else slice(s - 2, None, -3)
              for i, s in enumerate(shape)),
        tuple(slice(s - 1, 0, -2) if i % 2 else slice(1, s, 3) for i, s in enumerate(shape)),
        tuple(s // 2 for s in shape),
        (-1,) * nd,
        (shape[0] // 3, Ellipsis),
        (Ellipsis, slice(None, None, -3)),
        (slice(2, 2), Ellipsis),
        (slice(1, 10**6),) + (slice(None, None, -1),) * (nd - 1),
        (slice(-10**6, -1, 2),) + (slice(-2, -10**6, -1),) * (nd - 1),
    ]
    if nd >= 2:
        sels.append((slice(1, -1, 2), Ellipsis, -2))
        sels.append((slice(None, None, -2), 0) + (slice(None, None, 3),) * (nd - 2))
    return sels


def _as_uint(a: np.ndarray) -> np.ndarray:
    """The raw bits of ``a`` (native byte order) as unsigned ints, for bitwise comparison."""
    a = np.ascontiguousarray(a)
    a = a.astype(a.dtype.newbyteorder("="), copy=False)
    if a.dtype.kind == "c":
        a = a.view(a.real.dtype)
    return a.view(f"u{a.dtype.itemsize}")


def assert_identical(actual: Any, expected: np.ndarray, *, bitwise: bool = True,
                     exact_dtype: bool = True) -> None:
    """Same shape, same data type, same values (NaN == NaN, real and imaginary parts
    separately, signs of zeros), and, if ``bitwise``, the same bits."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if exact_dtype:
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    else:
        assert actual.dtype.newbyteorder("=") == expected.dtype.newbyteorder("="), (
            actual.dtype, expected.dtype)
    if expected.dtype.kind == "c":
        pairs = [(actual.real, expected.real), (actual.imag, expected.imag)]
    else:
        pairs = [(actual, expected)]
    for a, e in pairs:
        np.testing.assert_array_equal(a, e, strict=False)
        if e.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(a), np.signbit(e),
                                          err_msg="signs of zeros/NaNs differ")
    if bitwise:
        np.testing.assert_array_equal(_as_uint(actual), _as_uint(expected),
                                      err_msg="bit patterns differ")


def assert_fill_equal(actual: Any, case: Case) -> None:
    fill = 0 if case.fill is None else case.fill
    assert_identical(np.asarray(actual, dtype=case.dtype), np.asarray(fill, dtype=case.dtype))


# ---------------------------------------------------------------------------
# writers
# ---------------------------------------------------------------------------
def _split_chain(chain: tuple[dict, ...]) -> tuple[list, dict, list]:
    filters = [c for c in chain if c["name"] == "transpose"]
    (serializer,) = [c for c in chain if c["name"] == "bytes"]
    compressors = [c for c in chain if c["name"] not in ("transpose", "bytes")]
    return filters, serializer, compressors


def _zarr_codec(d: dict):
    cls = {
        "bytes": zarr.codecs.BytesCodec,
        "transpose": zarr.codecs.TransposeCodec,
        "gzip": zarr.codecs.GzipCodec,
        "zstd": zarr.codecs.ZstdCodec,
        "blosc": zarr.codecs.BloscCodec,
        "crc32c": zarr.codecs.Crc32cCodec,
    }[d["name"]]
    return cls(**d.get("configuration", {}))


def _zf_codec(d: dict):
    cls = {
        "bytes": zarrfast.codecs.BytesCodec,
        "transpose": zarrfast.codecs.TransposeCodec,
        "gzip": zarrfast.codecs.GzipCodec,
        "zstd": zarrfast.codecs.ZstdCodec,
        "blosc": zarrfast.codecs.BloscCodec,
        "crc32c": zarrfast.codecs.Crc32cCodec,
    }[d["name"]]
    return cls(**d.get("configuration", {}))


def _float_json(x: float) -> Any:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def fill_json(dtype: str, value: Any) -> Any:
    """The Zarr v3 JSON form of a fill value (written independently of zarrfast)."""
    kind = np.dtype(dtype).kind
    if value is None:
        value = 0
    if kind == "b":
        return bool(value)
    if kind in "iu":
        return int(value)
    if kind == "f":
        return _float_json(float(np.asarray(value, dtype=dtype)))
    c = complex(np.asarray(value, dtype=dtype))
    return [_float_json(c.real), _float_json(c.imag)]


def write_zarr(path: Path, case: Case) -> None:
    filters, serializer, compressors = _split_chain(case.codecs)
    a = zarr.create_array(
        store=str(path), shape=case.shape, chunks=case.chunks, dtype=case.dtype,
        fill_value=case.fill,
        filters=[_zarr_codec(c) for c in filters] or None,
        serializer=_zarr_codec(serializer),
        compressors=[_zarr_codec(c) for c in compressors] or None,
        chunk_key_encoding={"name": case.cke[0], "separator": case.cke[1]},
        dimension_names=case.dims, attributes=case.attrs or None, overwrite=True,
    )
    if case.region is not None:
        a[case.region] = expected_array(case)[case.region]


def ts_spec(path: Path, case: Case | None = None) -> dict:
    spec: dict = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    if case is None:
        return spec
    md: dict = {
        "data_type": case.dtype,
        "shape": list(case.shape),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(case.chunks)}},
        "chunk_key_encoding": {"name": case.cke[0],
                               "configuration": {"separator": case.cke[1]}},
        "codecs": [dict(c) for c in case.codecs],
        "fill_value": fill_json(case.dtype, case.fill),
    }
    if case.dims is not None:
        md["dimension_names"] = list(case.dims)
    if case.attrs:
        md["attributes"] = case.attrs
    spec.update(metadata=md, create=True, delete_existing=True)
    return spec


def write_ts(path: Path, case: Case) -> None:
    t = ts.open(ts_spec(path, case)).result()
    if case.region is not None:
        t[case.region].write(expected_array(case)[case.region]).result()


def write_zf(path: Path, case: Case, *, as_dicts: bool = False) -> zarrfast.Array:
    filters, serializer, compressors = _split_chain(case.codecs)
    conv = (lambda d: d) if as_dicts else _zf_codec
    a = zarrfast.create_array(
        str(path), shape=case.shape, chunks=case.chunks, dtype=case.dtype, fill_value=case.fill,
        filters=[conv(c) for c in filters] or None,
        serializer=conv(serializer),
        compressors=[conv(c) for c in compressors] or None,
        chunk_key_encoding={"name": case.cke[0], "separator": case.cke[1]},
        dimension_names=case.dims, attributes=case.attrs or None,
    )
    if case.region is not None:
        a[case.region] = expected_array(case)[case.region]
    return a


def read_zarr(path: Path) -> np.ndarray:
    return np.asarray(zarr.open_array(str(path), mode="r")[...])


def read_ts(path: Path) -> np.ndarray:
    return np.asarray(ts.open(ts_spec(path)).result().read().result())


WRITERS = {"zarr": write_zarr, "tensorstore": write_ts,
           # transposes are given as metadata dicts (also accepted), the rest as codec objects
           "zarrfast": lambda p, c: write_zf(p, c, as_dicts=c.id.startswith("transpose"))}
READERS = {"zarr": read_zarr, "tensorstore": read_ts}


def stored_keys(path: Path) -> set[str]:
    """Every stored key below the array directory, '/'-separated."""
    out = set()
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            out.add((Path(dirpath) / f).relative_to(path).as_posix())
    return out


def expected_chunk_keys(case: Case) -> set[str]:
    """The keys of the chunks the written region touches (the others stay missing)."""
    name, sep = case.cke
    if case.region is None:
        return set()
    if not case.shape:
        return {"c" if name == "default" else "0"}  # expected_array avoids the fill value
    ranges = []
    for sl, n, c in zip(case.region, case.shape, case.chunks, strict=True):
        start, stop, _ = sl.indices(n)
        ranges.append(range(start // c, (stop - 1) // c + 1) if stop > start else range(0))
    expected = expected_array(case)
    fill = np.full((), 0 if case.fill is None else case.fill, dtype=case.dtype)
    keys = set()
    for idx in np.ndindex(*(len(r) for r in ranges)):
        coords = [r[i] for r, i in zip(ranges, idx, strict=True)]
        block = expected[tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, case.chunks,
                                                                          strict=True))]
        if _all_equal(block, fill):
            continue  # a chunk holding only the fill value is not stored
        keys.add(("c" + sep if name == "default" else "") + sep.join(map(str, coords)))
    return keys


def _all_equal(block: np.ndarray, fill: np.ndarray) -> bool:
    if block.dtype.kind == "c":
        return _all_equal(block.real, fill.real) and _all_equal(block.imag, fill.imag)
    return bool(np.array_equal(block, np.broadcast_to(fill, block.shape),
                               equal_nan=block.dtype.kind == "f"))


PEERS = ["zarr", "tensorstore"]
