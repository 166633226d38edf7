"""What the sharding tests share: the case matrix (index locations and codecs, codecs
inside and around the shard, dtypes and fill values), data, writers and readers for
zarrfast, zarr-python and tensorstore, and an independent parser of shard bytes
(NumPy and the crc32c package).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ShardingCodec

from _helpers import LE, seed_of

try:
    import zarr
except ImportError:  # pragma: no cover - a test-only peer: the tests that write with it skip
    zarr = None
try:
    import tensorstore as ts
except ImportError:  # pragma: no cover - likewise
    ts = None


EMPTY = 2**64 - 1
NAN = float("nan")

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
    data = make_data(case.dtype, case.shape, seed_of(case.id))
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


PW_SHAPE, PW_SHARD, PW_INNER = (16, 12), (8, 12), (2, 3)  # 4 x 4 inner chunks per shard


def pw_case(location: str) -> Case:
    return Case(f"pw_{location}", "int32", 0, PW_SHAPE, PW_SHARD, PW_INNER, (LE, ZSTD),
                location=location)


def pw_array(tmp_path: Path, writer: str, case: Case) -> np.ndarray:
    rng = np.random.default_rng(seed_of("pw", writer, case.location))
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


def inner_chunks(path: Path, case: Case, coords=(0, 0)) -> list[bytes | None]:
    return parse_shard((path / shard_key(coords)).read_bytes(), case.sharding, case.shard)
