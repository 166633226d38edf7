"""What the Zarr v2 interoperability tests share: data of every v2 dtype, special fill
values, NaN-aware bit-for-bit comparison, selections, chunk keys, the case matrix
(dtypes, orders, separators, numcodecs compressors and filters, fill values, edges)
and writers/readers for zarr-python and zarrfast.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.metadata.v2 import ArrayMetadataV2
from zarrfast.storage import LocalStore

import _helpers

try:
    import zarr
except ImportError:  # pragma: no cover - a test-only peer: the tests that use it skip
    zarr = None

#: the ``pytestmark`` of the Zarr v2 interoperability modules
MARKS = [
    pytest.mark.interop,
    # zarr-python 3 warns that v2 consolidated metadata / some numcodecs codecs are not
    # part of a spec; that is not what these tests are about
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


NAN = float("nan")
INF = float("inf")
FIXTURES = _helpers.FIXTURES / "zarr2"

# ---------------------------------------------------------------------------
# data and comparison helpers
# ---------------------------------------------------------------------------
DTYPES = [
    "|b1",
    "|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8",
    "|u1", "<u2", ">u2", "<u4", ">u4", "<u8", ">u8",
    "<f2", ">f2", "<f4", ">f4", "<f8", ">f8",
    "<c8", ">c8", "<c16", ">c16",
    "|S5", "<U4", ">U4",
    "<M8[ns]", ">M8[ns]", "<m8[s]", ">m8[ms]",
]

_UNICODE_POOL = list("abcxyzé ßç中文😀")


def make_data(dtype: Any, shape: tuple[int, ...], seed: int = 0, *, specials: bool = True,
              value_range: tuple[float, float] | None = None) -> np.ndarray:
    """Random values of ``dtype`` (full range for integers; NaN, +-inf and -0.0 for
    floats unless ``specials`` is false)."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dt.fields is not None:
        out = np.zeros(n, dtype=dt)
        for name in dt.names:
            sub = dt.fields[name][0]
            out[name] = make_data(sub.base, (n, *sub.shape), seed + 1, specials=specials
                                  ).reshape(out[name].shape)
        return out.reshape(shape)
    if value_range is not None:
        vals = rng.uniform(*value_range, n)
        return (np.round(vals) if dt.kind in "iu" else vals).astype(dt).reshape(shape)
    k = dt.kind
    if k == "b":
        vals = rng.integers(0, 2, n).astype(bool)
    elif k in "iu":
        info = np.iinfo(dt)
        vals = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt.newbyteorder("="))
    elif k in "fc":
        comp = np.dtype(f"f{dt.itemsize // 2}") if k == "c" else dt.newbyteorder("=")
        part = (rng.standard_normal(n) * 100).astype(comp)
        if specials and n >= 4:
            part[:4] = [NAN, INF, -INF, -0.0]
        if k == "c":
            vals = np.empty(n, dtype=dt.newbyteorder("="))
            vals.real = part
            vals.imag = (rng.standard_normal(n) * 100).astype(comp)[::-1]
        else:
            vals = part
    elif k == "S":
        vals = np.array([bytes(rng.integers(1, 256, rng.integers(0, dt.itemsize + 1)).astype(
            np.uint8)) for _ in range(n)], dtype=dt)
    elif k == "U":
        vals = np.array(["".join(rng.choice(_UNICODE_POOL, rng.integers(0, dt.itemsize // 4 + 1)))
                         for _ in range(n)], dtype=dt)
    elif k in "mM":
        vals = rng.integers(-(2**61), 2**61, n).view(dt.newbyteorder("="))
        if specials and n >= 1:
            vals[0] = dt.type("NaT")
    else:  # pragma: no cover - the matrix has no other kinds
        raise AssertionError(dt)
    return np.asarray(vals).astype(dt).reshape(shape)


def special_fill(dtype: Any) -> Any:
    """A fill value that is not zero (and JSON-special where the dtype allows)."""
    dt = np.dtype(dtype)
    k = dt.kind
    if k == "b":
        return True
    if k == "i":
        return int(np.iinfo(dt).min)
    if k == "u":
        return int(np.iinfo(dt).max)
    if k == "f":
        return NAN
    if k == "c":
        return complex(NAN, -INF)
    if k == "S":
        return b"ab"
    if k == "U":
        return "zé"
    if k == "M":
        return np.datetime64("NaT", np.datetime_data(dt)[0])
    if k == "m":
        return np.timedelta64(-3, np.datetime_data(dt)[0])
    raise AssertionError(dt)


def fill_json(value: Any, dtype: Any) -> Any:
    """The v2 JSON form of a fill value (written here, independently of zarrfast)."""
    dt = np.dtype(dtype)
    if value is None:
        return None

    def f(x: float) -> Any:
        x = float(x)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x

    if dt.kind == "f":
        return f(value)
    if dt.kind == "c":
        return [f(complex(value).real), f(complex(value).imag)]
    if dt.kind == "b":
        return bool(value)
    if dt.kind in "iu":
        return int(value)
    if dt.kind in "SV":
        return base64.standard_b64encode(np.array(value, dtype=dt).tobytes()).decode()
    raise AssertionError(dt)


def full_like_fill(shape: tuple[int, ...], dtype: Any, fill: Any) -> np.ndarray:
    dt = np.dtype(dtype)
    out = np.empty(shape, dtype=dt)
    out[...] = np.zeros((), dtype=dt) if fill is None else np.array(fill, dtype=dt)
    return out


def same_object(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.tobytes() == b.tobytes())
    return type(a) is type(b) and a == b


def assert_identical(actual: Any, expected: np.ndarray, *, check_dtype: bool = True,
                     what: str = "") -> None:
    """Same shape, (declared) dtype and values; NaN-aware and bit for bit for numbers, and
    element types (``str`` vs ``bytes`` vs ``int``) for object arrays."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.hasobject:
        a_list = actual.astype(object).ravel().tolist() if actual.dtype.kind == "T" else list(
            actual.ravel())
        e_list = list(expected.ravel())
        bad = [(i, x, y) for i, (x, y) in enumerate(zip(a_list, e_list, strict=True))
               if not same_object(x, y)]
        assert not bad, f"{what}: elements differ (index, actual, expected): {bad[:6]}"
        return
    if check_dtype:
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    else:
        assert actual.dtype.newbyteorder("=") == expected.dtype.newbyteorder("=") or (
            actual.dtype.fields is not None), f"{what}: dtype {actual.dtype} vs {expected.dtype}"
        actual = actual.astype(expected.dtype)
    a_bytes = np.ascontiguousarray(actual).tobytes()
    e_bytes = np.ascontiguousarray(expected).tobytes()
    if a_bytes != e_bytes:
        diff = [i for i in range(expected.size)
                if np.ascontiguousarray(actual).reshape(-1)[i:i + 1].tobytes()
                != np.ascontiguousarray(expected).reshape(-1)[i:i + 1].tobytes()]
        raise AssertionError(
            f"{what}: {len(diff)} of {expected.size} elements differ; first at flat indices "
            f"{diff[:5]}: actual {actual.reshape(-1)[diff[:5]]!r} expected "
            f"{expected.reshape(-1)[diff[:5]]!r}"
        )


def selections(ndim: int) -> list[tuple]:
    """Whole-array, strided and negative-step selections for the matrix shapes."""
    s = slice
    if ndim == 0:
        return [()]
    if ndim == 1:
        return [(...,), (s(None, None, -1),), (s(1, None, 3),), (-2,)]
    if ndim == 2:
        return [(...,), (s(None, None, 2), s(None, None, -1)), (s(6, 0, -2), s(1, None, 3)),
                (-1,), (s(1, 6), 3), (s(None, None, -3), s(4, None, -2)), (2, s(None))]
    return [(...,), (s(None, None, -1), s(None, None, 2), s(None, None, -2)),
            (1, s(None), s(2, None, -1)), (s(4, 0, -3), 2, 1), (s(1, 4), s(None, None, 3), 0)]


def generic_selections(ndim: int) -> list[tuple]:
    """Selections valid for any shape of rank ``ndim``."""
    s = slice
    return [(...,), (s(None, None, -1),) * ndim, (s(1, None, 2),) * ndim,
            (s(None, None, -2),) * ndim, (s(-1, 0, -3),) * ndim]


def stored_chunk_keys(array_dir: Path) -> set[str]:
    out = set()
    for dirpath, _dirs, files in os.walk(array_dir):
        for f in files:
            if f in (".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), array_dir)
            out.add(rel.replace(os.sep, "/"))
    return out


def touched_chunk_keys(shape, chunks, region, sep) -> set[str]:
    if not shape:
        return {"0"}
    ranges = []
    for n, c, r in zip(shape, chunks, region, strict=True):
        start, stop, _ = r.indices(n)
        ranges.append(range(start // c, -(-stop // c)) if stop > start else range(0))
    return {sep.join(map(str, coords)) for coords in itertools.product(*ranges)}


def read_docs(array_dir: Path) -> tuple[dict, dict]:
    zarray = json.loads((array_dir / ".zarray").read_text())
    zattrs_path = array_dir / ".zattrs"
    zattrs = json.loads(zattrs_path.read_text()) if zattrs_path.exists() else {}
    return zarray, zattrs


def assert_metadata_roundtrip(array_dir: Path) -> ArrayMetadataV2:
    zarray, zattrs = read_docs(array_dir)
    md = ArrayMetadataV2.from_dict(zarray, zattrs)
    assert md.to_dict() == zarray, (md.to_dict(), zarray)
    # and once more through zarrfast's own serialisation
    again = ArrayMetadataV2.from_dict(json.loads(md.store_documents()[".zarray"]), zattrs)
    assert again.to_dict() == zarray
    return md


# ---------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------
COMPRESSORS: dict[str, Any] = {
    "none": None,
    "zstd": numcodecs.Zstd(level=3),
    "zstd-checksum": numcodecs.Zstd(level=1, checksum=True),
    "gzip": numcodecs.GZip(level=5),
    "zlib": numcodecs.Zlib(level=1),
    "blosc-noshuffle": numcodecs.Blosc("blosclz", 9, numcodecs.Blosc.NOSHUFFLE),
    "blosc-shuffle": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
    "blosc-bitshuffle": numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE),
    "blosc-autoshuffle": numcodecs.Blosc("zlib", 4, numcodecs.Blosc.AUTOSHUFFLE),
    "lz4": numcodecs.LZ4(),
    "bz2": numcodecs.BZ2(level=1),
    "lzma": numcodecs.LZMA(preset=1),
}

#: the compressors tensorstore's zarr driver knows, as its metadata accepts them
TS_COMPRESSORS: dict[str, dict | None] = {
    "none": None,
    "zstd": {"id": "zstd", "level": 3},
    "gzip": {"id": "gzip", "level": 5},
    "zlib": {"id": "zlib", "level": 1},
    "bz2": {"id": "bz2", "level": 1},
    "blosc-noshuffle": {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0},
    "blosc-shuffle": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
    "blosc-bitshuffle": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2},
    "blosc-autoshuffle": {"id": "blosc", "cname": "zlib", "clevel": 4, "shuffle": -1},
}


@dataclass(frozen=True)
class Case:
    id: str
    dtype: str
    fill: Any
    order: str = "C"
    sep: str = "."
    compressor: str = "zstd"
    filters: tuple = ()
    shape: tuple[int, ...] = (7, 5)
    chunks: tuple[int, ...] = (3, 2)
    #: written with data; the chunks it misses stay missing (edge chunks included)
    region: tuple = (slice(0, 4), slice(1, 4))
    #: lossy filters: maximal absolute error against the data written
    tolerance: float | None = None
    specials: bool = True
    value_range: tuple[float, float] | None = None
    attrs: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    def data(self) -> np.ndarray:
        return make_data(self.dtype, self.shape, seed=len(self.id), specials=self.specials,
                         value_range=self.value_range)

    def expected(self) -> np.ndarray:
        """What every reader must return: the data in the region, the fill elsewhere."""
        exp = full_like_fill(self.shape, self.dtype, self.fill)
        exp[self.region] = self.data()[self.region]
        return exp


_COMP_NAMES = list(COMPRESSORS)
SHAPE_3D = dict(shape=(5, 4, 3), chunks=(2, 3, 2), region=(slice(1, 4), slice(0, 3), slice(0, 2)))

DTYPE_CASES = [
    Case(f"{dt}-{order}-{_COMP_NAMES[(2 * i + j) % len(_COMP_NAMES)]}", dt, special_fill(dt),
         order=order, sep="./"[(i + j) % 2],
         compressor=_COMP_NAMES[(2 * i + j) % len(_COMP_NAMES)])
    for i, dt in enumerate(DTYPES)
    for j, order in enumerate("CF")
]

THREE_D_CASES = [
    Case(f"3d-{dt}-{order}-{sep}", dt, special_fill(dt), order=order, sep=sep,
         compressor="blosc-shuffle", **SHAPE_3D)
    for dt, order, sep in [("<f4", "F", "/"), (">i2", "F", "."), ("<c16", "F", "/"),
                           ("|S5", "F", "."), ("<U4", "F", "/"), (">u8", "C", "/"),
                           (">M8[ns]", "F", ".")]
]

COMPRESSOR_CASES = [
    Case(f"comp-{name}-{dt}", dt, 0, compressor=name, order="F" if dt[0] == ">" else "C")
    for name in COMPRESSORS
    for dt in (">f8", "<i2")
]

FILTER_CASES = [
    Case("filter-delta-i4", "<i4", 0, filters=(numcodecs.Delta(dtype="<i4"),)),
    Case("filter-delta-be-F", ">i4", -1, order="F", filters=(numcodecs.Delta(dtype=">i4"),),
         compressor="zlib"),
    Case("filter-delta-astype", "<i8", 0, filters=(numcodecs.Delta(dtype="<i8", astype="<i2"),),
         value_range=(-100, 100)),
    Case("filter-fixedscaleoffset", "<f8", 0.0,
         filters=(numcodecs.FixedScaleOffset(offset=-200, scale=10, dtype="<f8",
                                             astype="<u2"),),
         tolerance=0.051, specials=False, value_range=(-100, 100)),
    Case("filter-quantize-F", "<f8", 1.5, order="F",
         filters=(numcodecs.Quantize(digits=3, dtype="<f8"),), tolerance=1e-3, specials=False),
    Case("filter-bitround", "<f4", 0.0, filters=(numcodecs.BitRound(keepbits=10),),
         tolerance=0.5, specials=False, value_range=(-100, 100)),
    Case("filter-astype", "<f8", 0.0,
         filters=(numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8"),),
         tolerance=1e-4, specials=False),
    Case("filter-shuffle", "<i4", 5, filters=(numcodecs.Shuffle(elementsize=4),),
         compressor="zlib"),
    Case("filter-packbits", "|b1", False, filters=(numcodecs.PackBits(),), compressor="none"),
    Case("filter-fletcher32", ">i4", 3, filters=(numcodecs.Fletcher32(),), compressor="none"),
    Case("filter-crc32", "<u2", 3, filters=(numcodecs.CRC32(),), order="F"),
    Case("filter-adler32", "<f8", NAN, filters=(numcodecs.Adler32(),)),
    Case("filter-chain-F-3d", "<f8", 0.0, order="F", sep="/", compressor="blosc-bitshuffle",
         filters=(numcodecs.Quantize(digits=2, dtype="<f8"), numcodecs.Delta(dtype="<f8")),
         tolerance=0.02, specials=False, **SHAPE_3D),
]

FILL_CASES = [
    Case(f"fill-{dt}-{name}", dt, fill, compressor="none", shape=(6, 5), chunks=(4, 2),
         region=(slice(1, 3), slice(4, 5)))
    for dt, name, fill in [
        ("<f8", "nan", NAN), ("<f8", "inf", INF), ("<f8", "-inf", -INF), ("<f8", "-0", -0.0),
        ("<f8", "tiny", 5e-324), (">f4", "max", 3.4028234663852886e38), ("<f2", "nan", NAN),
        (">f2", "-inf", -INF), ("<c8", "nan-inf", complex(NAN, INF)),
        (">c16", "-inf-nan", complex(-INF, NAN)), ("<c16", "0.1", complex(0.1, -0.1)),
        ("|b1", "true", True), ("|i1", "-128", -128), (">i8", "min", -(2**63)),
        ("<i8", "2^53+1", 2**53 + 1), ("<u8", "max", 2**64 - 1), (">u4", "42", 42),
        ("|S5", "b64", b"a\x00b"), ("|S5", "full", b"hello"), ("|S5", "empty", b""),
        ("<U4", "unicode", "é😀"), (">U4", "unicode", "zé"),
        ("<M8[ns]", "NaT", np.datetime64("NaT", "ns")),
        ("<M8[ns]", "date", np.datetime64("2001-02-03T04:05:06.000000007", "ns")),
        ("<m8[s]", "-3s", np.timedelta64(-3, "s")),
    ]
]

SEP_CASES = [
    Case(f"sep-{'slash' if sep == '/' else 'dot'}-{order}", "<u2", 7, order=order, sep=sep,
         compressor="gzip", shape=(9, 8, 7), chunks=(4, 3, 7),
         region=(slice(2, 9), slice(0, 5), slice(None)))
    for sep in "./"
    for order in "CF"
]

EDGE_CASES = [
    Case("0d-f8", "<f8", NAN, shape=(), chunks=(), region=()),
    Case("1d-edge", ">i2", -5, shape=(11,), chunks=(4,), region=(slice(3, 10),)),
    Case("chunks-larger-than-shape", "<f4", INF, chunks=(9, 9),
         region=(slice(1, 2), slice(None))),
    Case("all-missing", "<c8", complex(1, -1), region=(slice(0, 0), slice(0, 0))),
]

MATRIX = (DTYPE_CASES + THREE_D_CASES + COMPRESSOR_CASES + FILTER_CASES + FILL_CASES
          + SEP_CASES + EDGE_CASES)


def zp_write(root: Path, case: Case, name: str = "a") -> Any:
    """zarr-python 3 writes ``case`` as a v2 array and fills ``case.region``."""
    arr = zarr.create_array(
        str(root), name=name, shape=case.shape, dtype=case.np_dtype, chunks=case.chunks,
        zarr_format=2, order=case.order, compressors=COMPRESSORS[case.compressor],
        filters=list(case.filters) or None, fill_value=case.fill,
        chunk_key_encoding={"name": "v2", "separator": case.sep},
        attributes=case.attrs or None, config={"write_empty_chunks": True},
    )
    arr[case.region] = case.data()[case.region]
    return arr


def zf_write(root: Path, case: Case, name: str = "a", *, compressor: Any = "case"
             ) -> zarrfast.Array:
    arr = zarrfast.create_array(
        str(root), name=name, shape=case.shape, dtype=case.np_dtype, chunks=case.chunks,
        zarr_format=2, order=case.order,
        compressors=COMPRESSORS[case.compressor] if compressor == "case" else compressor,
        filters=list(case.filters) or None, fill_value=case.fill,
        chunk_key_encoding={"name": "v2", "separator": case.sep},
        attributes=case.attrs or None, config={"write_empty_chunks": True},
    )
    arr[case.region] = case.data()[case.region]
    return arr


def check_reads(arr: zarrfast.Array, expected: np.ndarray, case: Case, *,
                tolerance: float | None = None) -> None:
    for sel in selections(len(case.shape)):
        got = arr[sel]
        want = np.array(expected[sel], dtype=expected.dtype)  # (a scalar loses byte order)
        if tolerance is None:
            assert_identical(got, np.asarray(want), what=f"{case.id}[{sel}]")
        else:
            np.testing.assert_allclose(got, want, atol=tolerance, rtol=0,
                                       err_msg=f"{case.id}[{sel}]")


def check_close_to_data(values: np.ndarray, case: Case) -> None:
    """For lossy filters: the written region is close to the data, the rest is the fill."""
    exp = case.expected()
    np.testing.assert_allclose(values[case.region], exp[case.region], atol=case.tolerance,
                               rtol=0)
    mask = np.ones(case.shape, dtype=bool)
    mask[case.region] = False
    # elements outside the region but inside written chunks pass through the lossy filter
    np.testing.assert_allclose(values[mask], exp[mask], atol=case.tolerance, rtol=0)


def ts_spec(path: Path, case: Case | None = None, **extra: Any) -> dict:
    spec: dict[str, Any] = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(path)}}
    if case is not None:
        spec.update(create=True, delete_existing=True, store_data_equal_to_fill_value=True,
                    metadata={
                        "shape": list(case.shape), "chunks": list(case.chunks),
                        "dtype": case.np_dtype.str, "order": case.order,
                        "compressor": TS_COMPRESSORS[case.compressor], "filters": None,
                        "fill_value": fill_json(case.fill, case.dtype),
                        "dimension_separator": case.sep,
                    })
    spec.update(extra)
    return spec


class CountingStore(LocalStore):
    """A local store that records every read and listing."""

    def __init__(self, root: Any, **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self.gets: list[tuple[str, bool]] = []
        self.other: list[str] = []

    def with_read_only(self, read_only: bool = True) -> CountingStore:
        new = CountingStore(self.root, read_only=read_only)
        new.gets, new.other = self.gets, self.other
        return new

    def get(self, key: str, byte_range: Any = None) -> bytes | None:
        value = super().get(key, byte_range)
        self.gets.append((key, value is not None))
        return value

    def exists(self, key: str) -> bool:
        self.other.append(f"exists {key}")
        return super().exists(key)

    def list(self):
        self.other.append("list")
        return super().list()

    def list_prefix(self, prefix: str):
        self.other.append(f"list_prefix {prefix}")
        return super().list_prefix(prefix)

    def list_dir(self, prefix: str):
        self.other.append(f"list_dir {prefix}")
        return super().list_dir(prefix)
