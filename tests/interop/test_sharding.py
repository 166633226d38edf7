"""Sharding (``sharding_indexed``) with zarr-python and tensorstore as peers, every
fixture written IN the test:

1. zarr-python and tensorstore write sharded arrays, zarrfast reads them identically
   (whole, strided, negative steps, edge shards, missing shards, missing inner chunks);
2. zarrfast writes (and then partially overwrites) them, both peers read them back;
3. the peers' ``zarr.json`` documents round-trip exactly through zarrfast's metadata;
4. partial writes keep every other inner chunk's encoded bytes (the shard is parsed
   with NumPy, independently of zarrfast) and the peers read the result.

The case matrix (``_helpers/sharding.py``) covers both index locations, ``crc32c``
and plain ``bytes`` index codecs (little and big endian), zstd / gzip / blosc inside
the shard, zstd after the shard, transposes inside the shard and before it, nested
sharding, big-endian inner chunks, 2-D and 3-D arrays and bool / uint8 / int16 /
uint16 / float32 / float64 / complex64 with fill values including NaN.

zarrfast alone: ``tests/engine/test_sharded_arrays.py`` (writes, random selections),
``tests/engine/test_sharding_io.py`` (what reads fetch) and
``tests/reliability/test_corrupt_shards.py`` (bad shards).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ShardingCodec
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import MemoryStore

from _helpers import LE, seed_of
from _helpers.sharding import (
    CASE_BY_ID,
    CASES,
    CRC,
    EMPTY,
    READERS,
    WRITERS,
    ZSTD,
    Case,
    assert_equal,
    check_structure,
    create_zf,
    expected_array,
    inner_chunks,
    make_data,
    other_value,
    parse_index,
    pw_array,
    pw_case,
    read_shard_file,
    read_ts,
    read_zarr,
    selections,
    sharding,
    write_index,
    write_zarr,
    write_zf,
)

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Combining a `sharding_indexed` codec disables partial reads")


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
    rng = np.random.default_rng(seed_of(case.id, "updates"))

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


@pytest.mark.interop
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("writer", ["zarrfast", "zarr"])
def test_partial_write_keeps_other_inner_chunks(tmp_path, writer, location):
    case = pw_case(location)
    data = pw_array(tmp_path, writer, case)
    before = inner_chunks(tmp_path, case)
    other_shard = (tmp_path / "c/1/0").read_bytes()
    assert before[0] is None and all(c is not None for c in before[1:])
    a = zarrfast.open_array(str(tmp_path))
    # a few elements of inner chunk (1, 2) (rows 2-3, columns 6-8) of shard (0, 0); the
    # values do not compress like the old ones, so the chunk changes size
    a[2, 7] = data[2, 7] = 2_000_000_000
    a[3, 6:9:2] = data[3, 6:9:2] = [-7, 123456789]
    after = inner_chunks(tmp_path, case)
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
    case = pw_case(location)
    data = pw_array(tmp_path, writer, case)
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


@pytest.mark.interop
@pytest.mark.parametrize("location", ["end", "start"])
def test_inner_chunks_in_any_order_with_unused_bytes(tmp_path, location):
    """The spec leaves the order of inner chunks open and allows unused bytes between them:
    such a shard (crafted here, and checked with both peers) reads and updates correctly."""
    case = pw_case(location)
    data = pw_array(tmp_path, "zarrfast", case)
    chunks = inner_chunks(tmp_path, case)
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
    assert [c for j, c in enumerate(inner_chunks(tmp_path, case)) if j != 6] == [
        c for j, c in enumerate(chunks) if j != 6]
    assert_equal(a[...], data)
    assert_equal(read_zarr(tmp_path), data)
    assert_equal(read_ts(tmp_path), data)
