"""Sharding: the ``sharding_indexed`` codec (``zarrfast/sharding.py``, ``zarrfast/codecs/sharding.py``).

Covered here, every fixture written IN the test:

1. zarr-python and tensorstore write sharded arrays, zarrfast reads them identically
   (whole, strided, negative steps, edge shards, missing shards, missing inner chunks);
2. zarrfast writes (and then partially overwrites) them, both peers read them back;
3. the peers' ``zarr.json`` documents round-trip exactly through zarrfast's metadata;
4. partial writes keep every other inner chunk's encoded bytes (the shard is parsed
   here with NumPy, independently of zarrfast), drop fill-valued inner chunks from the
   index and delete shards that become empty;
5. reads fetch only what they need (a counting store subclass records every request);
6. bad shards raise errors naming the shard key and the inner chunk;
7. Hypothesis: random layouts and basic selections against a NumPy mirror.

The case matrix covers both index locations, ``crc32c`` and plain ``bytes`` index
codecs (little and big endian), zstd / gzip / blosc inside the shard, zstd after the
shard, transposes inside the shard and before it, nested sharding, big-endian inner
chunks, 2-D and 3-D arrays and bool / uint8 / int16 / uint16 / float32 / float64 /
complex64 with fill values including NaN.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, ShardingCodec
from zarrfast.engine import sharded as zf_sharding
from zarrfast.errors import ChecksumError, ChunkDecodeError
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest, SuffixByteRequest

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Combining a `sharding_indexed` codec disables partial reads")

EMPTY = 2**64 - 1
NAN = float("nan")

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
CRC = {"name": "crc32c"}
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}


def BLOSC(typesize: int) -> dict:
    return {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                               "shuffle": "shuffle", "typesize": typesize,
                                               "blocksize": 0}}


def T(*order: int) -> dict:
    return {"name": "transpose", "configuration": {"order": list(order)}}


def sharding(chunk_shape, codecs, index_codecs=(LE, CRC), location="end") -> dict:
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": [dict(c) for c in codecs],
        "index_codecs": [dict(c) for c in index_codecs], "index_location": location}}


# ---------------------------------------------------------------------------
# the case matrix
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    dtype: str
    fill: Any
    shape: tuple[int, ...]
    #: the shard shape (the array's chunk grid)
    shard: tuple[int, ...]
    #: the sharding codec's inner chunk shape (in the codec's, i.e. transposed, space)
    inner: tuple[int, ...]
    inner_codecs: tuple[dict, ...]
    index_codecs: tuple[dict, ...] = (LE, CRC)
    location: str = "end"
    #: array -> array codecs before the sharding codec
    before: tuple[dict, ...] = ()
    #: bytes -> bytes codecs after the sharding codec
    after: tuple[dict, ...] = ()

    def __str__(self) -> str:
        return self.id

    @property
    def sharding(self) -> dict:
        return sharding(self.inner, self.inner_codecs, self.index_codecs, self.location)

    @property
    def codecs(self) -> list[dict]:
        return [*map(dict, self.before), self.sharding, *map(dict, self.after)]

    @property
    def simple(self) -> bool:
        """Expressible with ``create_array(chunks=inner, shards=shard)``."""
        return (not self.before and not self.after and self.location == "end"
                and list(self.index_codecs) == [LE, CRC]
                and all(c["name"] != "sharding_indexed" for c in self.inner_codecs))

    @property
    def perm(self) -> tuple[int, ...]:
        """Composed permutation of the ``before`` transposes: encoded = x.transpose(perm)."""
        q = list(range(len(self.shape)))
        for c in self.before:
            p = c["configuration"]["order"]
            q = [q[p[k]] for k in range(len(q))]
        return tuple(q)

    @property
    def inner_block(self) -> tuple[int, ...]:
        """An inner chunk's extent in array coordinates."""
        block = [0] * len(self.shape)
        for k, d in enumerate(self.perm):
            block[d] = self.inner[k]
        return tuple(block)

    @property
    def written_stop(self) -> int:
        """The writers fill ``[:written_stop]``; the shard row(s) after it stay missing."""
        return (self.shape[0] - 1) // self.shard[0] * self.shard[0]


def _split(codecs) -> tuple[list, dict, list]:
    i = next(i for i, c in enumerate(codecs) if c["name"] in ("bytes", "sharding_indexed"))
    return list(codecs[:i]), codecs[i], list(codecs[i + 1:])


CASES = [
    Case("2d_int16_zstd", "int16", -1, (10, 9), (4, 6), (2, 3), (LE, ZSTD)),
    Case("2d_uint8_gzip_index_start", "uint8", 7, (10, 9), (4, 6), (2, 3), (LE, GZIP),
         location="start"),
    Case("2d_float32_nan_blosc_plain_index", "float32", NAN, (10, 9), (4, 6), (2, 3),
         (LE, BLOSC(4)), index_codecs=(LE,)),
    Case("2d_float64_bigendian_gzip_plain_index_start", "float64", -0.5, (10, 9), (4, 6),
         (2, 3), (BE, GZIP), index_codecs=(LE,), location="start"),
    Case("2d_complex64_blosc_bigendian_index", "complex64", complex(1, 2), (10, 9), (4, 6),
         (2, 3), (LE, BLOSC(8)), index_codecs=(BE, CRC)),
    Case("2d_bool_zstd", "bool", True, (10, 9), (4, 6), (2, 3), (LE, ZSTD)),
    Case("2d_float64_nan_raw_index_start", "float64", NAN, (9, 11), (4, 4), (2, 2), (LE,),
         location="start"),
    Case("3d_float32_transpose_inside", "float32", 0.0, (9, 10, 7), (4, 4, 6), (2, 2, 3),
         (T(2, 0, 1), LE, ZSTD)),
    Case("3d_uint8_edges", "uint8", 0, (7, 9, 5), (4, 6, 4), (2, 3, 2), (LE, ZSTD)),
    Case("3d_int16_transpose_before", "int16", 3, (9, 10, 7), (4, 4, 6), (2, 2, 2),
         (BE, ZSTD), before=(T(2, 0, 1),)),
    Case("2d_int16_zstd_after_shard", "int16", -1, (10, 9), (4, 6), (2, 3), (LE,),
         after=(ZSTD,)),
    Case("2d_uint16_nested", "uint16", 5, (10, 13), (4, 12), (2, 6),
         (sharding((1, 3), (LE, GZIP)),), index_codecs=(LE,), location="start"),
]
CASE_BY_ID = {c.id: c for c in CASES}


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def _seed(*parts: Any) -> int:
    return zlib.crc32(repr(parts).encode())


def make_data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -500, 500 if dt.itemsize > 1 else 250,
                            size=shape).astype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def other_value(case: Case, k: int = 0) -> Any:
    """A value different from the fill value."""
    dt = np.dtype(case.dtype)
    if dt.kind == "b":
        return not case.fill
    if dt.kind in "iu":
        return 42 + k
    if dt.kind == "f":
        return 1.5 + k
    return complex(3 + k, -4)


def fill_mask(a: np.ndarray, fill: Any) -> np.ndarray:
    """Elementwise: equals the fill value (NaN counts as equal to a NaN fill)."""
    if isinstance(fill, float) and math.isnan(fill):
        return np.isnan(a)
    return a == np.asarray(fill, dtype=a.dtype)


def expected_array(case: Case) -> np.ndarray:
    data = make_data(case.dtype, case.shape, _seed(case.id))
    # inner chunk (0, ..., 0) of shard (0, ..., 0): fill only, so writers leave it out
    data[tuple(slice(0, b) for b in case.inner_block)] = case.fill
    # the shard row(s) past `written_stop` are never written: missing shards
    data[case.written_stop:] = case.fill
    return data


def fill_json(case: Case) -> Any:
    def f(x: float) -> Any:
        return "NaN" if math.isnan(x) else x

    kind = np.dtype(case.dtype).kind
    if kind == "b":
        return bool(case.fill)
    if kind in "iu":
        return int(case.fill)
    if kind == "f":
        return f(float(case.fill))
    return [f(complex(case.fill).real), f(complex(case.fill).imag)]


def selections(case: Case) -> list[tuple]:
    shape, nd = case.shape, len(case.shape)
    block = case.inner_block
    return [
        (Ellipsis,),
        tuple(slice(None, None, 2) for _ in shape),
        tuple(slice(None, None, -1) for _ in shape),
        tuple(slice(None, None, -3) if d % 2 == 0 else slice(1, None, 2) for d in range(nd)),
        tuple(s // 2 for s in shape),
        (1, *(slice(None, None, -2) for _ in shape[1:])),
        tuple(slice(s - 1, 0, -2) for s in shape),
        tuple(slice(max(s - 3, 0), s) for s in shape),  # the far corner: edge shards
        tuple(slice(0, b) for b in block),  # exactly the missing inner chunk
        # exactly the second inner chunk along the last axis
        (*(slice(0, b) for b in block[:-1]), slice(block[-1], 2 * block[-1])),
        # one whole shard, backwards
        tuple(slice(s - 1, None, -1) if s - 1 < n else slice(None, None, -1)
              for s, n in zip(case.shard, shape, strict=True)),
    ]


def assert_equal(actual: Any, expected: np.ndarray, what: str = "") -> None:
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, what
    assert actual.shape == expected.shape, what
    np.testing.assert_array_equal(actual, expected, err_msg=what)


# ---------------------------------------------------------------------------
# writers / readers
# ---------------------------------------------------------------------------
def write_zarr(path: Path, case: Case, data: np.ndarray) -> None:
    if case.simple:
        filters, ser, comps = _split(case.inner_codecs)
        a = zarr.create_array(store=str(path), shape=case.shape, dtype=case.dtype,
                              chunks=case.inner, shards=case.shard, filters=filters or None,
                              serializer=ser, compressors=comps or None,
                              fill_value=case.fill, overwrite=True)
    else:
        a = zarr.create_array(
            store=str(path), shape=case.shape, dtype=case.dtype, chunks=case.shard,
            filters=list(case.before) or None,
            serializer=zarr.codecs.ShardingCodec(
                chunk_shape=case.inner, codecs=list(case.inner_codecs),
                index_codecs=list(case.index_codecs), index_location=case.location),
            compressors=list(case.after) or None, fill_value=case.fill, overwrite=True)
    stop = case.written_stop
    a[:stop] = data[:stop]


def ts_spec(path: Path, case: Case | None = None) -> dict:
    spec: dict = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    if case is not None:
        spec.update(create=True, delete_existing=True, metadata={
            "data_type": case.dtype, "shape": list(case.shape),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(case.shard)}},
            "chunk_key_encoding": {"name": "default"},
            "codecs": case.codecs, "fill_value": fill_json(case)})
    return spec


def ts_open(path: Path, case: Case | None = None):
    try:
        return ts.open(ts_spec(path, case)).result()
    except ValueError as e:
        if case is not None and case.after:
            pytest.skip(f"tensorstore refuses a codec after sharding_indexed: {str(e)[:200]}")
        if case is None and "not compatible with subsequent bytes -> bytes codecs" in str(e):
            pytest.skip(f"tensorstore refuses a codec after sharding_indexed: {str(e)[:200]}")
        raise


def write_ts(path: Path, case: Case, data: np.ndarray) -> None:
    t = ts_open(path, case)
    stop = case.written_stop
    t[:stop].write(data[:stop]).result()


def create_zf(store: Any, case: Case, **kwargs: Any) -> zarrfast.Array:
    if case.simple:
        filters, ser, comps = _split(case.inner_codecs)
        return zarrfast.create_array(store, shape=case.shape, dtype=case.dtype,
                                     chunks=case.inner, shards=case.shard,
                                     filters=filters or None, serializer=ser,
                                     compressors=comps or None, fill_value=case.fill, **kwargs)
    return zarrfast.create_array(
        store, shape=case.shape, dtype=case.dtype, chunks=case.shard,
        filters=list(case.before) or None,
        serializer=ShardingCodec(chunk_shape=case.inner, codecs=list(case.inner_codecs),
                                 index_codecs=list(case.index_codecs),
                                 index_location=case.location),
        compressors=list(case.after) or None, fill_value=case.fill, **kwargs)


def write_zf(path: Path, case: Case, data: np.ndarray) -> None:
    a = create_zf(str(path), case)
    stop = case.written_stop
    a[:stop] = data[:stop]


WRITERS = {"zarr": write_zarr, "tensorstore": write_ts, "zarrfast": write_zf}


def read_zarr(path: Path, sel: Any = Ellipsis) -> np.ndarray:
    return np.asarray(zarr.open_array(str(path), mode="r")[sel])


def read_ts(path: Path, sel: Any = Ellipsis) -> np.ndarray:
    return np.asarray(ts_open(path)[sel].read().result())


READERS = {"zarr": read_zarr, "tensorstore": read_ts}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """``written(writer, case) -> path``, written once per module (the tests only read)."""
    base = tmp_path_factory.mktemp("sharding")
    done: dict[tuple[str, str], Path] = {}

    def get(writer: str, case: Case) -> Path:
        key = (writer, case.id)
        if key not in done:
            path = base / f"{writer}-{case.id}"
            WRITERS[writer](path, case, expected_array(case))
            done[key] = path
        return done[key]

    return get


# ---------------------------------------------------------------------------
# an independent parser of shard bytes (NumPy + the crc32c package)
# ---------------------------------------------------------------------------
def index_layout(cfg: dict, shard_shape) -> tuple[int, str, bool, bool]:
    """``(n_inner, numpy byte order, has_crc, index_at_end)`` of a sharding config."""
    conf = cfg["configuration"]
    n = math.prod(s // c for s, c in zip(shard_shape, conf["chunk_shape"], strict=True))
    idx = conf["index_codecs"]
    assert idx[0]["name"] == "bytes" and all(c["name"] == "crc32c" for c in idx[1:])
    order = "<" if idx[0].get("configuration", {}).get("endian", "little") == "little" else ">"
    return n, order, len(idx) > 1, conf.get("index_location", "end") == "end"


def parse_index(raw: bytes, cfg: dict, shard_shape) -> np.ndarray:
    n, order, has_crc, at_end = index_layout(cfg, shard_shape)
    size = 16 * n + 4 * has_crc
    raw_index = raw[len(raw) - size:] if at_end else raw[:size]
    assert len(raw_index) == size
    if has_crc:
        (stored,) = struct.unpack("<I", raw_index[-4:])
        assert crc32c.crc32c(raw_index[:-4]) == stored, "index checksum"
    return np.frombuffer(raw_index[:16 * n], dtype=order + "u8").reshape(n, 2).astype(np.uint64)


def write_index(raw: bytes, cfg: dict, shard_shape, index: np.ndarray) -> bytes:
    """``raw`` with its index replaced by ``index`` (checksum recomputed)."""
    n, order, has_crc, at_end = index_layout(cfg, shard_shape)
    body = np.asarray(index, dtype=order + "u8").tobytes()
    if has_crc:
        body += struct.pack("<I", crc32c.crc32c(body))
    size = len(body)
    return raw[:len(raw) - size] + body if at_end else body + raw[size:]


def parse_shard(raw: bytes, cfg: dict, shard_shape) -> list[bytes | None]:
    """The encoded bytes of every inner chunk (C order), ``None`` for empty ones."""
    index = parse_index(raw, cfg, shard_shape)
    out: list[bytes | None] = []
    for off, nb in index.tolist():
        if off == EMPTY:
            assert nb == EMPTY
            out.append(None)
        else:
            assert off + nb <= len(raw)
            out.append(bytes(raw[off:off + nb]))
    return out


def shard_key(coords) -> str:
    return "c/" + "/".join(str(int(c)) for c in coords)


def read_shard_file(path: Path, case: Case, coords) -> bytes | None:
    f = path / shard_key(coords)
    if not f.exists():
        return None
    raw = f.read_bytes()
    for c in reversed(case.after):
        assert c["name"] == "zstd"
        raw = numcodecs.Zstd().decode(raw)
    return bytes(raw)


def _check_level(raw: bytes, cfg: dict, block: np.ndarray, fill: Any, where: str) -> None:
    conf = cfg["configuration"]
    inner = conf["chunk_shape"]
    cps = [s // c for s, c in zip(block.shape, inner, strict=True)]
    chunks = parse_shard(raw, cfg, block.shape)
    nested = next((c for c in conf["codecs"] if c["name"] == "sharding_indexed"), None)
    for j, coords in enumerate(np.ndindex(*cps)):
        sub = block[tuple(slice(c * i, (c + 1) * i) for c, i in zip(coords, inner, strict=True))]
        all_fill = bool(fill_mask(sub, fill).all())
        here = f"{where} inner chunk {coords}"
        assert (chunks[j] is None) == all_fill, (
            f"{here}: {'stored although' if all_fill else 'missing although not'} all fill")
        if nested is not None and chunks[j] is not None:
            _check_level(chunks[j], nested, sub, fill, here)


def check_structure(path: Path, case: Case, mirror: np.ndarray) -> None:
    """Every shard exists iff it holds a non-fill element, and every (nested) inner chunk
    is in the index iff it holds one (write_empty_chunks=False)."""
    grid = [-(-s // c) for s, c in zip(case.shape, case.shard, strict=True)]
    for coords in np.ndindex(*grid):
        region = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, case.shard, strict=True))
        block = np.full(case.shard, case.fill, dtype=case.dtype)
        part = mirror[region]
        block[tuple(slice(0, n) for n in part.shape)] = part
        raw = read_shard_file(path, case, coords)
        all_fill = bool(fill_mask(block, case.fill).all())
        assert (raw is None) == all_fill, (
            f"shard {coords}: {'stored although' if all_fill else 'missing although not'} "
            f"all fill")
        if raw is not None:
            _check_level(raw, case.sharding, block.transpose(case.perm), case.fill,
                         f"shard {coords}")


# ---------------------------------------------------------------------------
# 1. peers write, zarrfast reads
# ---------------------------------------------------------------------------
@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("writer", ["zarr", "tensorstore"])
def test_zarrfast_reads_peer(written, writer, case):
    path = written(writer, case)
    expected = expected_array(case)
    a = zarrfast.open_array(str(path), mode="r")
    assert a.dtype == np.dtype(case.dtype)
    if not case.before:  # the sharding codec is the array -> bytes codec: a sharded array
        # as in zarr-python, only an array whose sole codec is sharding_indexed reports
        # inner chunks and shards; with a codec after the shard, chunks are the shards
        geometry = (case.shard, None) if case.after else (case.inner, case.shard)
        assert (a.chunks, a.shards) == geometry
    assert_equal(a[...], expected)
    for sel in selections(case):
        assert_equal(a[sel], expected[sel], f"selection {sel}")
    # the fixture really has missing shards and a missing inner chunk, as the test intends
    assert read_shard_file(path, case, (0,) * len(case.shape)) is not None
    last = ((case.shape[0] - 1) // case.shard[0],) + (0,) * (len(case.shape) - 1)
    assert read_shard_file(path, case, last) is None


def _geometry_params():
    out = []
    for case in CASES:
        marks = [pytest.mark.interop]
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def _value(x: Any) -> Any:
    return x() if callable(x) else x


@pytest.mark.parametrize("case", _geometry_params())
def test_array_geometry_matches_zarr_python(written, case):
    path = written("zarr", case)
    z = zarr.open_array(str(path), mode="r")
    a = zarrfast.open_array(str(path), mode="r")
    assert (a.shape, a.chunks, a.shards, a.cdata_shape, a.nchunks) == (
        z.shape, z.chunks, z.shards, z.cdata_shape, z.nchunks)


@pytest.mark.interop
def test_nchunks_initialized_matches_zarr_python(written):
    path = written("zarr", CASE_BY_ID["2d_int16_zstd"])
    z = zarr.open_array(str(path), mode="r")
    a = zarrfast.open_array(str(path), mode="r")
    assert a.nchunks_initialized == _value(z.nchunks_initialized)


@pytest.mark.interop
@pytest.mark.parametrize("case", [c for c in CASES if c.simple], ids=str)
def test_codec_properties_match_zarr_python(written, case):
    path = written("zarr", case)
    z = zarr.open_array(str(path), mode="r")
    a = zarrfast.open_array(str(path), mode="r")
    def as_json(codecs):  # zarr-python's to_dict() keeps tuples where JSON has lists
        return json.loads(json.dumps([c.to_dict() for c in codecs]))

    assert as_json([a.serializer]) == as_json([z.serializer])
    assert as_json(a.compressors) == as_json(z.compressors)
    assert as_json(a.filters) == as_json(z.filters)


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("writer", ["zarr", "tensorstore"])
def test_peer_shard_structure(written, writer, case):
    """The independent shard parser against what the peers write (self-check of the
    helpers the zarrfast write tests rely on)."""
    check_structure(written(writer, case), case, expected_array(case))


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("writer", ["zarr", "tensorstore"])
def test_zarrfast_reads_peer_from_memory(written, writer, case):
    """The same bytes served by a MemoryStore (byte ranges sliced from a dict)."""
    path = written(writer, case)
    store = MemoryStore({str(p.relative_to(path)): p.read_bytes()
                         for p in path.rglob("*") if p.is_file()})
    a = zarrfast.open_array(store, mode="r")
    expected = expected_array(case)
    for sel in selections(case)[1:6]:
        assert_equal(a[sel], expected[sel], f"selection {sel}")


# ---------------------------------------------------------------------------
# 3. metadata documents
# ---------------------------------------------------------------------------
def _roundtrip_params():
    out = []
    for writer in ["zarr", "tensorstore"]:
        for case in CASES:
            marks = [pytest.mark.interop]
            out.append(pytest.param(writer, case, id=f"{writer}-{case.id}", marks=marks))
    return out


@pytest.mark.parametrize("writer,case", _roundtrip_params())
def test_metadata_document_roundtrip(written, writer, case):
    doc = json.loads((written(writer, case) / "zarr.json").read_bytes())
    assert ArrayMetadata.from_dict(doc).to_dict() == doc


@pytest.mark.parametrize("case", CASES, ids=str)
def test_zarrfast_metadata_document_roundtrip(tmp_path, case):
    create_zf(str(tmp_path), case)
    doc = json.loads((tmp_path / "zarr.json").read_bytes())
    assert ArrayMetadata.from_dict(doc).to_dict() == doc
    assert doc["codecs"][len(case.before)]["name"] == "sharding_indexed"
    # the document describes the requested layout
    conf = doc["codecs"][len(case.before)]["configuration"]
    assert conf["chunk_shape"] == list(case.inner)
    assert conf["index_location"] == case.location
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == list(case.shard)


@pytest.mark.interop
@pytest.mark.parametrize("case", [c for c in CASES if c.simple], ids=str)
def test_zarrfast_document_equals_zarr_python(tmp_path, case):
    """``create_array(chunks=, shards=)`` writes the codecs and grid zarr-python writes."""
    write_zarr(tmp_path / "zarr", case, expected_array(case))
    create_zf(str(tmp_path / "zf"), case)
    ours = json.loads((tmp_path / "zf" / "zarr.json").read_bytes())
    theirs = json.loads((tmp_path / "zarr" / "zarr.json").read_bytes())
    for doc in (ours, theirs):  # zarr-python spells out the default separator; not sharding
        doc.pop("chunk_key_encoding")
    assert ours == theirs


def test_metadata_index_location_defaults_to_end():
    doc = sharding((2, 2), (LE,))
    del doc["configuration"]["index_location"]
    assert ShardingCodec.from_dict(doc).index_location == "end"


def test_sharding_codec_accepts_tuple_of_dicts():
    codec = ShardingCodec(chunk_shape=(2, 2), codecs=(LE, ZSTD), index_codecs=(LE, CRC))
    a = zarrfast.create_array(None, shape=(4, 4), chunks=(4, 4), dtype="int16",
                              serializer=codec, compressors=None)
    a[...] = np.arange(16, dtype="int16").reshape(4, 4)
    assert_equal(a[...], np.arange(16, dtype="int16").reshape(4, 4))


@pytest.mark.parametrize("bad", [
    {"chunk_shape": [3, 2]},  # does not divide the shard shape
    {"chunk_shape": [2]},  # wrong rank
    {"index_location": "middle"},
    {"index_codecs": [LE, ZSTD]},  # variable-size index
])
def test_invalid_sharding_configurations_are_refused(bad):
    cfg = sharding((2, 2), (LE,))
    cfg["configuration"].update(bad)
    with pytest.raises(zarrfast.errors.ZarrfastError):
        zarrfast.create_array(None, shape=(8, 8), chunks=(4, 4), dtype="int16",
                              serializer=cfg, compressors=None)


def test_shards_must_be_multiples_of_chunks():
    with pytest.raises(zarrfast.errors.ZarrfastError, match="multiple"):
        zarrfast.create_array(None, shape=(8, 8), chunks=(3, 2), shards=(4, 4), dtype="i2")


# ---------------------------------------------------------------------------
# 2. zarrfast writes, the peers read
# ---------------------------------------------------------------------------
def apply_updates(a: Any, mirror: np.ndarray, case: Case) -> None:
    """Partial writes of every kind, applied to a zarrfast array and a NumPy mirror."""
    nd = len(case.shape)
    block, shard = case.inner_block, case.shard
    rng = np.random.default_rng(_seed(case.id, "updates"))

    def put(sel, value):
        a[sel] = value
        mirror[sel] = value

    put(tuple(slice(None, None, 3) for _ in range(nd)), other_value(case))
    sel = (slice(None, None, -2), *(slice(1, None, 2) for _ in range(nd - 1)))
    put(sel, make_data(case.dtype, mirror[sel].shape, int(rng.integers(1 << 30))))
    # one inner chunk becomes fill: it must leave the shard's index
    put((*(slice(0, b) for b in block[:-1]), slice(block[-1], 2 * block[-1])), case.fill)
    # a whole shard becomes fill, half of it at a time: the shard must be deleted
    half = max(shard[0] // 2, 1)
    for lo in (0, half):
        put((slice(lo, lo + half), *(slice(0, s) for s in shard[1:-1]),
             slice(shard[-1], 2 * shard[-1])), case.fill)
    # a lone element in a missing (edge) shard creates it
    put(tuple(s - 1 for s in case.shape), other_value(case, 1))


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id) for c in CASES])
def test_zarrfast_shard_structure(tmp_path, case):
    """zarrfast leaves fill-valued inner chunks out of the index and deletes empty shards,
    through the first write and through partial updates."""
    expected = expected_array(case)
    write_zf(tmp_path, case, expected)
    check_structure(tmp_path, case, expected)
    a = zarrfast.open_array(str(tmp_path))
    apply_updates(a, expected, case)
    check_structure(tmp_path, case, expected)


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("reader", ["zarr", "tensorstore"])
def test_peer_reads_zarrfast(written, reader, case):
    path = written("zarrfast", case)
    expected = expected_array(case)
    assert_equal(READERS[reader](path), expected)
    sel = selections(case)[1]  # zarr-python takes no negative steps
    assert_equal(READERS[reader](path, sel), expected[sel])


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("reader", ["zarr", "tensorstore"])
def test_peer_reads_zarrfast_after_partial_writes(tmp_path, reader, case):
    expected = expected_array(case)
    write_zf(tmp_path, case, expected)
    a = zarrfast.open_array(str(tmp_path))
    apply_updates(a, expected, case)
    assert_equal(a[...], expected)
    assert_equal(READERS[reader](tmp_path), expected)


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("writer", ["zarr", "tensorstore"])
def test_zarrfast_updates_peer_array(written, tmp_path, writer, case):
    """zarrfast partially overwrites shards a peer wrote; the peer reads the result."""
    path = tmp_path / "arr"
    shutil.copytree(written(writer, case), path)
    expected = expected_array(case)
    a = zarrfast.open_array(str(path))
    apply_updates(a, expected, case)
    assert_equal(zarrfast.open_array(str(path))[...], expected)
    assert_equal(READERS[writer](path), expected)


# ---------------------------------------------------------------------------
# 4. partial writes keep the other inner chunks' bytes
# ---------------------------------------------------------------------------
PW_SHAPE, PW_SHARD, PW_INNER = (16, 12), (8, 12), (2, 3)  # 4 x 4 inner chunks per shard


def _pw_case(location: str) -> Case:
    return Case(f"pw_{location}", "int32", 0, PW_SHAPE, PW_SHARD, PW_INNER, (LE, ZSTD),
                location=location)


def _pw_array(tmp_path: Path, writer: str, case: Case) -> np.ndarray:
    rng = np.random.default_rng(_seed("pw", writer, case.location))
    data = rng.integers(1, 1000, size=case.shape).astype("int32")
    data[0:2, 0:3] = 0  # inner chunk (0, 0) of shard (0, 0): missing
    if writer == "zarr":
        a = zarr.create_array(
            store=str(tmp_path), shape=case.shape, dtype="int32", chunks=case.shard,
            serializer=zarr.codecs.ShardingCodec(chunk_shape=case.inner,
                                                 codecs=list(case.inner_codecs),
                                                 index_location=case.location),
            compressors=None, fill_value=0)
    else:
        a = create_zf(str(tmp_path), case)
    a[...] = data
    return data


def _inner_chunks(path: Path, case: Case, coords=(0, 0)) -> list[bytes | None]:
    return parse_shard((path / shard_key(coords)).read_bytes(), case.sharding, case.shard)


@pytest.mark.interop
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("writer", ["zarrfast", "zarr"])
def test_partial_write_keeps_other_inner_chunks(tmp_path, writer, location):
    case = _pw_case(location)
    data = _pw_array(tmp_path, writer, case)
    before = _inner_chunks(tmp_path, case)
    other_shard = (tmp_path / "c/1/0").read_bytes()
    assert before[0] is None and all(c is not None for c in before[1:])
    a = zarrfast.open_array(str(tmp_path))
    # a few elements of inner chunk (1, 2) (rows 2-3, columns 6-8) of shard (0, 0); the
    # values do not compress like the old ones, so the chunk changes size
    a[2, 7] = data[2, 7] = 2_000_000_000
    a[3, 6:9:2] = data[3, 6:9:2] = [-7, 123456789]
    after = _inner_chunks(tmp_path, case)
    touched = 1 * 4 + 2
    for j in range(16):
        if j == touched:
            assert after[j] is not None and after[j] != before[j]
        else:
            assert after[j] == before[j], f"inner chunk {divmod(j, 4)} was re-encoded"
    assert (tmp_path / "c/1/0").read_bytes() == other_shard  # untouched shard not rewritten
    assert_equal(a[...], data)
    assert_equal(read_zarr(tmp_path), data)
    assert_equal(read_ts(tmp_path), data)


@pytest.mark.interop
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("writer", ["zarrfast", "zarr"])
def test_partial_write_of_fill_empties_inner_chunk_then_deletes_shard(tmp_path, writer,
                                                                      location):
    case = _pw_case(location)
    data = _pw_array(tmp_path, writer, case)
    a = zarrfast.open_array(str(tmp_path))
    a[4:6, 3:6] = data[4:6, 3:6] = 0  # inner chunk (2, 1) becomes fill
    index = parse_index((tmp_path / "c/0/0").read_bytes(), case.sharding, case.shard)
    assert index[2 * 4 + 1].tolist() == [EMPTY, EMPTY]
    assert index[0].tolist() == [EMPTY, EMPTY]
    assert (index[[j for j in range(16) if j not in (0, 9)]] != EMPTY).all()
    assert_equal(read_zarr(tmp_path), data)
    # now the rest of the shard, one partial row at a time
    for i in range(8):
        a[i, :] = data[i, :] = 0
        assert (tmp_path / "c/0/0").exists() == (i < 7)
    assert (tmp_path / "c/1/0").exists()
    assert_equal(a[...], data)
    assert_equal(read_zarr(tmp_path), data)
    assert_equal(read_ts(tmp_path), data)


@pytest.mark.parametrize("location", ["end", "start"])
def test_write_empty_chunks_true_keeps_fill_inner_chunks(tmp_path, location):
    case = _pw_case(location)
    a = create_zf(str(tmp_path), case, config={"write_empty_chunks": True})
    data = np.zeros(case.shape, dtype="int32")
    data[0, 0] = 1
    a[...] = data
    for coords in [(0, 0), (1, 0)]:  # shard (1, 0) holds only fill values: still stored
        index = parse_index((tmp_path / shard_key(coords)).read_bytes(), case.sharding,
                            case.shard)
        assert (index != EMPTY).all(), coords
    a[0, 0] = 0
    assert (parse_index((tmp_path / "c/0/0").read_bytes(), case.sharding, case.shard)
            != EMPTY).all()
    assert_equal(a[...], np.zeros(case.shape, "int32"))
    # ... and with write_empty_chunks=False the same write drops them
    b = zarrfast.open_array(str(tmp_path), config={"write_empty_chunks": False})
    b[0:2, 0:3] = 0
    index = parse_index((tmp_path / "c/0/0").read_bytes(), case.sharding, case.shard)
    assert index[0].tolist() == [EMPTY, EMPTY] and (index[1:] != EMPTY).all()
    b[0:8, :] = 0
    assert not (tmp_path / "c/0/0").exists()


def test_whole_shard_write_of_fill_deletes_shard(tmp_path):
    case = _pw_case("end")
    a = create_zf(str(tmp_path), case)
    a[...] = 5
    assert sorted(p.name for p in (tmp_path / "c").rglob("*") if p.is_file()) == ["0", "0"]
    a[8:16, :] = 0
    assert not (tmp_path / "c/1/0").exists() and (tmp_path / "c/0/0").exists()
    a[...] = 0
    assert not (tmp_path / "c/0/0").exists()
    assert_equal(a[...], np.zeros(case.shape, "int32"))


@pytest.mark.parametrize("location", ["end", "start"])
def test_partial_write_of_edge_shard_keeps_its_edge_inner_chunks(location):
    """Writing every complete inner chunk of an edge shard is still a partial write: the
    inner chunks cut by the array's edge keep their data."""
    case = Case("edge", "int16", 0, (7, 5), (8, 4), (2, 2), (LE,), location=location)
    a = create_zf(MemoryStore(), case)
    mirror = np.arange(1, 36, dtype="int16").reshape(7, 5)
    a[...] = mirror
    a[0:6, 0:4] = mirror[0:6, 0:4] = 9  # inner chunk rows 0-2 of shard (0, 0), not row 3
    a[0:2, 4] = mirror[0:2, 4] = -9  # one of the four inner chunks of shard (0, 1)
    assert_equal(a[...], mirror)
    assert_equal(a[6, :], mirror[6, :])


@pytest.mark.interop
@pytest.mark.parametrize("location", ["end", "start"])
def test_inner_chunks_in_any_order_with_unused_bytes(tmp_path, location):
    """The spec leaves the order of inner chunks open and allows unused bytes between them:
    such a shard (crafted here, and checked with both peers) reads and updates correctly."""
    case = _pw_case(location)
    data = _pw_array(tmp_path, "zarrfast", case)
    chunks = _inner_chunks(tmp_path, case)
    n_index = 16 * len(chunks) + 4
    body = bytearray(b"" if location == "end" else bytes(n_index))
    index = np.full((len(chunks), 2), EMPTY, dtype=np.uint64)
    for j in reversed(range(len(chunks))):  # backwards, 7 unused bytes before each
        body += b"\xee" * 7
        if chunks[j] is not None:
            index[j] = (len(body), len(chunks[j]))
            body += chunks[j]
    body += b"\xee" * 5 + (bytes(n_index) if location == "end" else b"")
    (tmp_path / "c/0/0").write_bytes(write_index(bytes(body), case.sharding, case.shard, index))
    assert_equal(read_zarr(tmp_path), data)  # the crafted shard is valid for the peers
    assert_equal(read_ts(tmp_path), data)
    a = zarrfast.open_array(str(tmp_path))
    assert_equal(a[...], data)
    assert_equal(a[3, 7], data[3, 7])
    assert_equal(a[1:6, 2:11:3], data[1:6, 2:11:3])
    assert_equal(a[7::-3, ::-1], data[7::-3, ::-1])
    a[2, 7] = data[2, 7] = -1
    assert [c for j, c in enumerate(_inner_chunks(tmp_path, case)) if j != 6] == [
        c for j, c in enumerate(chunks) if j != 6]
    assert_equal(a[...], data)
    assert_equal(read_zarr(tmp_path), data)
    assert_equal(read_ts(tmp_path), data)


# ---------------------------------------------------------------------------
# 5. reads fetch only what they need
# ---------------------------------------------------------------------------
class _Counting:
    """Mixin recording every ``get`` (and ``get_into``): ``(key, byte_range, size)``."""

    def _init_log(self) -> None:
        self.log: list[tuple[str, Any, int | None]] = []
        self.batches: list[int] = []

    def get(self, key, byte_range=None):
        value = super().get(key, byte_range)
        if not key.endswith("zarr.json"):
            self.log.append((key, byte_range, None if value is None else len(value)))
        return value

    def get_into(self, key, out):
        """A whole value read into a caller's buffer: one request, logged as ``get``."""
        n = super().get_into(key, out)
        if self.fast_get_into and not key.endswith("zarr.json"):  # (else it went via get)
            self.log.append((key, None, n))
        return n

    def get_many(self, keys, byte_ranges=None):
        self.batches.append(len(keys))
        return super().get_many(keys, byte_ranges)  # both base classes route to self.get

    def take(self, *, ordered: bool = False) -> list[tuple[str, Any, int | None]]:
        """The requests since the last call: sorted, or in the order they were made."""
        out, self.log = self.log, []
        return out if ordered else sorted(out, key=repr)


class CountingMemoryStore(_Counting, MemoryStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_log()


class CountingLocalStore(_Counting, LocalStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_log()


IO_SHAPE, IO_SHARD, IO_INNER = (14, 30), (8, 8), (2, 2)  # 4 x 4 inner chunks per shard


@pytest.fixture(params=["memory", "local"])
def io_store(request, tmp_path):
    """``make(location) -> (counting store, data, case)``: an int32 array written by zarrfast,
    and a counting store on the same data.  (Open it writable: ``mode="r"`` would swap in
    a plain read-only copy of the store.)"""

    def make(location: str = "end", after: tuple = ()):
        if request.param == "memory":
            plain: Any = MemoryStore()
            counting = CountingMemoryStore(plain._data)
        else:
            plain = LocalStore(tmp_path)
            counting = CountingLocalStore(tmp_path)
        case = Case("io", "int32", 0, IO_SHAPE, IO_SHARD, IO_INNER, (LE, ZSTD),
                    location=location, after=after)
        a = create_zf(plain, case)
        data = np.random.default_rng(3).integers(0, 1 << 20, IO_SHAPE).astype("int32")
        a[...] = data
        return counting, data, case

    return make


def _raw(store, key: str) -> bytes | None:
    """A value read around the counting (not recorded)."""
    base = MemoryStore if isinstance(store, MemoryStore) else LocalStore
    return base.get(store, key)


def _index(store, case: Case, key: str) -> np.ndarray:
    return parse_index(_raw(store, key), case.sharding, case.shard)


def _index_request(case: Case):
    n = 16 * 16 + 4
    return SuffixByteRequest(n) if case.location == "end" else RangeByteRequest(0, n)


@pytest.mark.parametrize("location", ["end", "start"])
def test_one_inner_chunk_read_fetches_index_then_chunk(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    index = _index(store, case, "c/0/1")
    assert_equal(a[3, 13], data[3, 13])  # inner chunk (1, 2) of shard (0, 1)
    off, nb = (int(x) for x in index[1 * 4 + 2])
    assert store.take() == sorted([("c/0/1", _index_request(case), 16 * 16 + 4),
                                   ("c/0/1", RangeByteRequest(off, off + nb), nb)], key=repr)
    # another inner chunk of the same shard: the index comes from the cache
    assert_equal(a[6:8, 8:10], data[6:8, 8:10])  # inner chunk (3, 0)
    off, nb = (int(x) for x in index[3 * 4 + 0])
    assert store.take() == [("c/0/1", RangeByteRequest(off, off + nb), nb)]


def test_empty_inner_chunk_read_fetches_only_the_index(io_store):
    store, data, case = io_store()
    a = zarrfast.open_array(store)
    a[2:4, 10:12] = data[2:4, 10:12] = 0  # inner chunk (1, 1) of shard (0, 1): now empty
    assert _index(store, case, "c/0/1")[5].tolist() == [EMPTY, EMPTY]
    store.take()
    assert_equal(a[2:4, 10:12], data[2:4, 10:12])
    assert store.take() == [("c/0/1", _index_request(case), 16 * 16 + 4)]
    assert_equal(a[3, 11], data[3, 11])
    assert store.take() == []


@pytest.mark.parametrize("sel,key", [
    ((slice(0, 8), slice(8, 16)), "c/0/1"),  # a whole interior shard
    ((slice(None, None, -1), slice(16, 24)), "c/1/2"),  # edge shard along axis 0 ...
    ((slice(8, 14), slice(16, 24)), "c/1/2"),
    ((slice(1, 8, 2), slice(29, 23, -2)), "c/0/3"),  # ... and axis 1, strided, backwards
])
def test_whole_shard_read_is_one_get(io_store, sel, key):
    store, data, _ = io_store()
    a = zarrfast.open_array(store)
    assert_equal(a[sel], data[sel])
    log = [e for e in store.take() if e[0] == key]
    assert log == [(key, None, len(_raw(store, key)))]


def test_whole_array_read_fetches_every_shard_once(io_store):
    store, data, _ = io_store()
    a = zarrfast.open_array(store)
    assert_equal(a[::-1, ::2], data[::-1, ::2])
    log = store.take()
    assert [e[1] for e in log] == [None] * 8
    assert sorted(e[0] for e in log) == sorted(shard_key(c) for c in np.ndindex(2, 4))


@pytest.mark.parametrize("location", ["end", "start"])
def test_near_inner_chunks_are_coalesced(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    index = _index(store, case, "c/0/0")
    a[0, 0]  # warm the index cache
    store.take()
    # inner chunks (0, 0) and (0, 1): adjacent, one request even with no gap allowed
    for gap in (65536, 0):
        with zarrfast.config.set(shard_coalesce_gap=gap):
            assert_equal(a[0:2, 0:4], data[0:2, 0:4])
        start = int(index[0, 0])
        end = int(index[1, 0] + index[1, 1])
        assert start + int(index[0, 1]) == int(index[1, 0])
        assert store.take() == [("c/0/0", RangeByteRequest(start, end), end - start)]
    # inner chunks (0, 0) and (0, 2): one spanning request, or two without a gap
    sel = (slice(0, 2), slice(0, 6, 4))
    assert_equal(a[sel], data[sel])
    start, end = int(index[0, 0]), int(index[2, 0] + index[2, 1])
    assert store.take() == [("c/0/0", RangeByteRequest(start, end), end - start)]
    with zarrfast.config.set(shard_coalesce_gap=0):
        assert_equal(a[sel], data[sel])
    assert store.take() == sorted(
        [("c/0/0", RangeByteRequest(int(o), int(o + n)), int(n)) for o, n in index[[0, 2]]],
        key=repr)
    # a gap larger than allowed: two requests
    gap_bytes = int(index[2, 0] - (index[0, 0] + index[0, 1]))
    with zarrfast.config.set(shard_coalesce_gap=gap_bytes - 1):
        assert_equal(a[sel], data[sel])
    assert len(store.take()) == 2
    with zarrfast.config.set(shard_coalesce_gap=gap_bytes):
        assert_equal(a[sel], data[sel])
    assert len(store.take()) == 1


def _index_requests(log, case: Case) -> list[str]:
    return [k for k, r, _ in log if r == _index_request(case)]


def test_index_cache_is_bounded_lru(io_store):
    store, data, case = io_store()
    with zarrfast.config.set(shard_index_cache=2):
        a = zarrfast.open_array(store)
    # shards (0, 0) .. (0, 3): read one inner chunk of each
    cols = {"A": 0, "B": 8, "C": 16, "D": 24}

    def read(*names: str) -> list[str]:
        for n in names:
            assert_equal(a[1, cols[n]], data[1, cols[n]])
        return _index_requests(store.take(ordered=True), case)

    assert read("A", "B", "C", "A") == ["c/0/0", "c/0/1", "c/0/2", "c/0/0"]  # bounded
    assert read("C", "A") == []  # the two most recent are cached
    assert read("B") == ["c/0/1"]  # evicts C, the least recently used
    assert read("A") == []  # ... and keeps A
    assert read("A", "C") == ["c/0/2"]  # evicts B
    assert read("C", "A", "D") == ["c/0/3"]  # evicts C
    assert read("A", "D") == []
    with zarrfast.config.set(shard_index_cache=4096):
        b = zarrfast.open_array(store)
    for col in (0, 8, 16, 24, 0, 8, 16, 24):
        b[1, col]
    assert len(_index_requests(store.take(), case)) == 4


@pytest.mark.parametrize("location", ["end", "start"])
def test_read_after_write_sees_new_data(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    assert_equal(a[0, 8], data[0, 8])  # index of shard (0, 1) cached
    store.take()
    # inner chunk (0, 0) of shard (0, 1) becomes highly compressible: every later inner
    # chunk moves (index at the end) and the cached index is obsolete
    a[0:2, 8:10] = data[0:2, 8:10] = 7
    store.take()
    assert_equal(a[7, 15], data[7, 15])  # inner chunk (3, 3): fetched at its new place
    off, nb = (int(x) for x in _index(store, case, "c/0/1")[15])
    data_requests = [e for e in store.take() if e[1] != _index_request(case)]
    assert data_requests == [("c/0/1", RangeByteRequest(off, off + nb), nb)]
    assert_equal(a[0:2, 8:16], data[0:2, 8:16])
    # an inner chunk becomes fill: removed from the index
    a[2:4, 10:12] = data[2:4, 10:12] = 0
    assert_equal(a[2:4, 8:14], data[2:4, 8:14])
    assert_equal(a[...], data)


def test_index_cache_not_stale_across_handles():
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(8, 8), chunks=(2, 2), shards=(8, 8),
                              dtype="int32", fill_value=0, compressors=None)
    data = np.arange(1, 65, dtype="int32").reshape(8, 8)
    a[...] = data
    b = zarrfast.open_array(store)
    assert_equal(b[0, 2], data[0, 2])  # b caches the index
    a[0:2, 0:2] = data[0:2, 0:2] = 0  # inner chunk (0, 0) leaves the shard: offsets move
    assert_equal(b[0:2, 2:4], data[0:2, 2:4])


def test_codec_after_shard_reads_whole_shards(io_store):
    """With a bytes -> bytes codec after the sharding codec no byte range can be read."""
    store, data, _ = io_store(after=(ZSTD,))
    a = zarrfast.open_array(store)
    assert_equal(a[3, 13], data[3, 13])
    assert [(k, r) for k, r, _ in store.take()] == [("c/0/1", None)]
    a[4:6, 10:12] = data[4:6, 10:12] = -3
    store.take()
    assert_equal(a[...], data)
    assert len(store.take()) == 8


def test_missing_shard_costs_one_request(io_store):
    store, data, _ = io_store()
    store.delete("c/0/1")
    a = zarrfast.open_array(store)
    assert_equal(a[3, 13], np.int32(0))
    assert [k for k, _, n in store.take()] == ["c/0/1"]
    assert_equal(a[0:8, 8:16], np.zeros((8, 8), "int32"))
    assert [(k, n) for k, _, n in store.take()] == [("c/0/1", None)]


# ---------------------------------------------------------------------------
# 6. bad shards
# ---------------------------------------------------------------------------
BAD_SHAPE, BAD_SHARD, BAD_INNER = (8, 16), (8, 8), (4, 4)  # 2 x 2 inner chunks per shard


def _bad_setup(location: str, inner_codecs=(LE, ZSTD), index_codecs=(LE, CRC)):
    case = Case("bad", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, inner_codecs,
                index_codecs=index_codecs, location=location)
    store = MemoryStore()
    data = np.random.default_rng(5).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    return store, data, case


def _edit_index(store, case: Case, fn) -> None:
    raw = store.get("c/0/0")
    index = parse_index(raw, case.sharding, case.shard).copy()
    fn(index, len(raw))
    store.set("c/0/0", write_index(raw, case.sharding, case.shard, index))


def _expect_error(store, data, sel, exc, *needles: str) -> None:
    a = zarrfast.open_array(store, mode="r")  # a fresh index cache
    with pytest.raises(exc) as info:
        a[sel]
    msg = str(info.value)
    assert "c/0/0" in msg, msg
    for needle in needles:
        assert needle in msg, msg
    assert_equal(a[:, 8:], data[:, 8:])  # the other shard still reads


PARTIAL = (1, 6)  # inner chunk (0, 1) only
WHOLE = (slice(None), slice(0, 8))  # the whole shard (0, 0)
OTHER = (5, 6)  # inner chunk (1, 1) only
PATHS = pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
# index-level damage must be found whichever inner chunk is read
PATHS3 = pytest.mark.parametrize("sel", [PARTIAL, OTHER, WHOLE],
                                 ids=["one-inner-chunk", "other-inner-chunk", "whole-shard"])
LOCATIONS = pytest.mark.parametrize("location", ["end", "start"])


@PATHS3
@LOCATIONS
def test_corrupt_index_checksum(location, sel):
    store, data, case = _bad_setup(location)
    raw = bytearray(store.get("c/0/0"))
    n = 4 * 16 + 4
    pos = len(raw) - n + 3 if location == "end" else 3
    raw[pos] ^= 0x40  # a bit of the first offset; the checksum is unchanged
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChecksumError)


@PATHS
@LOCATIONS
def test_index_entry_past_end_of_shard(location, sel):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0] = size + 100

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["one-inner-chunk", "whole-shard"])
@LOCATIONS
def test_index_entry_running_past_end_of_shard(location, sel):
    """The last inner chunk (1, 1) (stored last) claims a few bytes more than there are."""
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[3, 1] += 8

    _edit_index(store, case, edit)
    if location == "end" and sel != WHOLE:
        pytest.skip("with the index at the end the claimed bytes exist (they hold the index); "
                    "only a whole-shard read knows where the inner chunks end")
    _expect_error(store, data, sel, ChunkDecodeError, "(1, 1)")


@PATHS3
@LOCATIONS
def test_overlapping_index_entries(location, sel):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[2, 0] = index[1, 0] + 1  # (1, 0) starts inside (0, 1)

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "overlap", "(0, 1)", "(1, 0)")


@PATHS3
@LOCATIONS
@pytest.mark.parametrize("half", ["offset", "nbytes"])
def test_half_empty_index_entry(location, sel, half):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0 if half == "offset" else 1] = EMPTY

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["other-inner-chunk", "whole-shard"])
@LOCATIONS
def test_index_entry_inside_start_index(location, sel):
    """With the index at the start, no inner chunk may begin inside it."""
    store, data, case = _bad_setup(location)
    if location == "end":
        pytest.skip("only the start index occupies the beginning of the shard")

    def edit(index, size):
        index[1] = (4, 8)  # overlaps no other inner chunk, only the index

    _edit_index(store, case, edit)
    # the index itself is refused, even when reading another inner chunk of the shard
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@PATHS
@LOCATIONS
@pytest.mark.parametrize("keep", [0, 30, 67])
def test_shard_shorter_than_its_index(location, sel, keep):
    store, data, _ = _bad_setup(location)
    raw = store.get("c/0/0")
    store.set("c/0/0", raw[len(raw) - keep:] if location == "end" else raw[:keep])
    _expect_error(store, data, sel, ChunkDecodeError)


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_shard_truncated_after_start_index(sel):
    store, data, case = _bad_setup("start")
    raw = store.get("c/0/0")
    store.set("c/0/0", raw[:len(raw) - 5])  # the last inner chunk (1, 1) is cut short
    _expect_error(store, data, sel, ChunkDecodeError, "(1, 1)")


@PATHS
@LOCATIONS
@pytest.mark.parametrize("index_codecs", [(LE, CRC), (LE,)], ids=["crc32c", "plain"])
def test_corrupt_inner_chunk(location, sel, index_codecs):
    store, data, case = _bad_setup(location, index_codecs=index_codecs)
    raw = bytearray(store.get("c/0/0"))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@PATHS
@LOCATIONS
def test_inner_chunk_of_wrong_size(location, sel):
    store, data, case = _bad_setup(location, inner_codecs=(LE,))

    def edit(index, size):
        index[1, 1] -= 4  # uncompressed: one element short

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@LOCATIONS
def test_write_into_corrupt_shard_raises_and_keeps_it(location):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0] = size + 100

    _edit_index(store, case, edit)
    bad = store.get("c/0/0")
    a = zarrfast.open_array(store)
    with pytest.raises(ChunkDecodeError, match="c/0/0"):
        a[5, 5] = 1  # a partial write must read (and check) the shard
    assert store.get("c/0/0") == bad
    a[:, 0:8] = 3  # overwriting the whole shard needs no old bytes
    assert_equal(a[:, 0:8], np.full((8, 8), 3, "int32"))


@pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_corrupt_inner_chunk_codec_after_shard(sel):
    """Arrays with zstd after the shard (whole-shard path through the outer codec)."""
    case = Case("bad_after", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, (LE, ZSTD),
                after=(ZSTD,))
    store = MemoryStore()
    data = np.random.default_rng(6).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    raw = bytearray(numcodecs.Zstd().decode(store.get("c/0/0")))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", numcodecs.Zstd().encode(bytes(raw)))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")
    # an outer frame that does not decompress at all
    store.set("c/0/0", b"\x00" * 40)
    _expect_error(store, data, sel, ChunkDecodeError)


@pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_corrupt_inner_chunk_transpose_before_shard(sel):
    """The general pipeline (transpose before the sharding codec) names the inner chunk."""
    case = Case("bad_before", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, (LE, ZSTD),
                before=(T(1, 0),))
    store = MemoryStore()
    data = np.random.default_rng(7).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    raw = bytearray(store.get("c/0/0"))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


# ---------------------------------------------------------------------------
# 7. property-based: random layouts and basic selections
# ---------------------------------------------------------------------------
@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shard = tuple(i * draw(st.integers(1, 3)) for i in inner)
    shape = tuple(draw(st.integers(1, 2 * s + 3)) for s in shard)
    return shape, shard, inner


def basic_selection(shape):
    def dim(n):
        contiguous = st.tuples(st.integers(0, n), st.integers(0, n)).map(
            lambda t: slice(min(t), max(t)))
        return st.one_of(st.slices(n), contiguous, st.integers(-n, n - 1),
                         st.just(slice(None)))

    return st.tuples(*(dim(n) for n in shape))


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(layout=layouts(), data=st.data())
def test_random_selections_match_numpy(layout, data):
    shape, shard, inner = layout
    location = data.draw(st.sampled_from(["end", "start"]), label="location")
    compress = data.draw(st.booleans(), label="zstd")
    empty = data.draw(st.booleans(), label="write_empty_chunks")
    fill = data.draw(st.sampled_from([0, 7]), label="fill")
    after = data.draw(st.sampled_from([(), (ZSTD,)]), label="codec after the shard")
    case = Case("hyp", "int16", fill, shape, shard, inner, (LE, ZSTD) if compress else (LE,),
                location=location, after=after)
    store = MemoryStore()
    a = create_zf(store, case, config={"write_empty_chunks": empty})
    mirror = np.full(shape, fill, dtype="int16")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for _ in range(data.draw(st.integers(1, 4), label="writes")):
        sel = data.draw(basic_selection(shape), label="write")
        target = mirror[sel]
        if data.draw(st.booleans(), label="scalar"):
            value: Any = data.draw(st.sampled_from([fill, 3, -9]), label="value")
        else:
            value = rng.integers(-3, 4, size=np.shape(target)).astype("int16")
        a[sel] = value
        mirror[sel] = value
        sel = data.draw(basic_selection(shape), label="read")
        assert_equal(a[sel], mirror[sel], f"read {sel}")
    assert_equal(a[...], mirror)
    assert_equal(zarrfast.open_array(store, mode="r")[...], mirror)  # a fresh index cache
    # every stored shard parses, and (without write_empty_chunks) the store holds exactly
    # the shards with a non-fill element and the inner chunks with one
    grid = [-(-s // c) for s, c in zip(shape, shard, strict=True)]
    stored = set(store.list_prefix("c/"))
    for coords in np.ndindex(*grid):
        key = shard_key(coords)
        region = mirror[tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, shard,
                                                                         strict=True))]
        if key in stored:
            raw = store.get(key)
            chunks = parse_shard(numcodecs.Zstd().decode(raw) if after else raw,
                                 case.sharding, shard)
            assert len(chunks) == math.prod(s // i for s, i in zip(shard, inner, strict=True))
        if not empty:
            assert (key in stored) == bool((region != fill).any()), key


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("shape", [(64, 96), (70, 100)])  # (70, 100): edge inner chunks
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("write_empty", [False, True])
def test_whole_raw_shards_assembled_in_place_match_the_general_path(
        monkeypatch, location, shape, endian, write_empty):
    """Whole shards of uncompressed inner chunks are built in one buffer; the bytes are
    the general path's, byte for byte (and shards with an all-fill inner chunk take the
    general path, which leaves that chunk out)."""
    data = np.random.default_rng(3).integers(0, 1000, shape).astype("<i4")
    data[:8, :16] = -1  # one inner chunk of fill values

    def write(fast: bool) -> dict:
        if not fast:
            monkeypatch.setattr(zf_sharding, "_assemble_raw_shard", lambda *a, **k: None)
        store: dict = {}
        codec = ShardingCodec(chunk_shape=(8, 16), codecs=[BytesCodec(endian=endian)],
                              index_location=location)
        a = zarrfast.create_array(store, shape=shape, chunks=(32, 32), serializer=codec,
                                  compressors=None, dtype="<i4", fill_value=-1)
        with zarrfast.config.set(write_empty_chunks=write_empty):
            a[...] = data
        np.testing.assert_array_equal(a[...], data)
        monkeypatch.undo()
        return {k: bytes(v) for k, v in store.items()}

    fast, general = write(True), write(False)
    assert fast == general
