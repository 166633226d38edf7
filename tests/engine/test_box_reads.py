"""Small box reads (``zarrfast.engine.boxes``): step-1 selections of at most
``BOX_CHUNKS`` chunks, of plain and sharded arrays, against a NumPy mirror.

Larger step-1 boxes of compressed chunk files (full reads): read in parts
(``box_parts``), missing and corrupt chunks.

Sharded: boxes across shards, partial (edge) shards, missing shards and missing inner
chunks (the fill value), inner chunks far apart in the shard (several ranged reads),
the index at either end, zstd and gzip (one batch kernel call), uncompressed (one copy)
inner chunks, big-endian and transposed ones; and the errors a bad shard
raises.  Plain: zstd chunks read by ``decode_files``, missing ones, a corrupt one.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.engine import boxes as zf_boxes
from zarrfast.engine import chunked as zf_chunked
from zarrfast.engine import sharded as zf_sharded
from zarrfast.engine.strategies import box_files as box_files_strategy
from zarrfast.engine.strategies import shard_box as shard_box_strategy
from zarrfast.errors import ChunkDecodeError
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest, SuffixByteRequest
from zarrfast.storage.base import validate_keys

from _helpers import LE
from _helpers.decode import blosc_header, damage_blosc_block, needs_blosc
from _helpers.sharding import BE, CRC, GZIP, ZSTD, Case, create_zf

TRANSPOSE = {"name": "transpose", "configuration": {"order": [1, 0, 2]}}

# shape (13, 10, 9) in shards of (8, 6, 6) of inner chunks (4, 3, 2): edge shards, edge
# inner chunks, 3 inner chunks per shard along the last dim
CASES = [
    Case("zstd", "uint16", 7, (13, 10, 9), (8, 6, 6), (4, 3, 2), (LE, ZSTD)),
    Case("zstd_start", "int32", -1, (13, 10, 9), (8, 6, 6), (4, 3, 2), (LE, ZSTD),
         location="start"),
    Case("raw", "float32", 1.5, (13, 10, 9), (8, 6, 6), (4, 3, 2), (LE,)),
    Case("raw_be", ">i4", 3, (13, 10, 9), (8, 6, 6), (4, 3, 2), (BE,)),
    Case("gzip", "int16", 0, (13, 10, 9), (8, 6, 6), (4, 3, 2), (LE, GZIP)),
    Case("zstd_crc_transposed", "uint16", 5, (13, 10, 9), (8, 6, 6), (4, 3, 2),
         (TRANSPOSE, LE, ZSTD, CRC)),
]


def _mirror(case: Case, seed: int = 0) -> np.ndarray:
    """Data with whole inner chunks and a whole shard left at the fill value."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 1000, size=case.shape).astype(case.dtype)
    data[0:4, 0:3, 2:4] = case.fill  # an inner chunk of shard (0, 0, 0): not stored
    data[0:4, 3:6, 0:6] = case.fill  # three of them, side by side
    data[8:, 6:, 6:] = case.fill  # shard (1, 1, 1): not stored at all
    return data


@pytest.fixture(params=["local", "memory"])
def store_kind(request):
    return request.param


def _array(tmp_path, store_kind: str, case: Case) -> tuple[zarrfast.Array, np.ndarray]:
    store = LocalStore(str(tmp_path)) if store_kind == "local" else MemoryStore()
    a = create_zf(store, case, config={"write_empty_chunks": False})
    data = _mirror(case)
    a[...] = data
    return a, data


def _spy(monkeypatch, module, name: str) -> list:
    """Replace ``module.name`` by a wrapper; the list of what its calls returned."""
    returned = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        returned.append(real(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(module, name, spy)
    return returned


def _taken(monkeypatch, module, name: str) -> list:
    """Replace the function ``module.name`` (a strategy's way of reading) by a wrapper;
    the list has one entry per call."""
    taken = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        taken.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return taken


def _boxes(shape, inner, rng, n=60):
    """Random step-1 boxes of at most BOX_CHUNKS inner chunks, ints too."""
    out = []
    while len(out) < n:
        box = []
        for extent, c in zip(shape, inner, strict=True):
            size = int(rng.integers(1, 2 * c + 1))
            size = min(size, extent)
            start = int(rng.integers(0, extent - size + 1))
            box.append(slice(start, start + size) if rng.random() < 0.85 else start)
        touched = 1
        for s, c in zip(box, inner, strict=True):
            lo, hi = (s.start, s.stop - 1) if isinstance(s, slice) else (s, s)
            touched *= hi // c - lo // c + 1
        if touched <= zf_boxes.BOX_CHUNKS:
            out.append(tuple(box))
    return out


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sharded_boxes_match_numpy(tmp_path, store_kind, case, threads, monkeypatch):
    a, data = _array(tmp_path, store_kind, case)
    calls = _taken(monkeypatch, shard_box_strategy, "read_shard_box")
    ranges = _spy(monkeypatch, zf_sharded, "_decode_box_ranges")
    whole = _spy(monkeypatch, zf_sharded, "_decode_box_shards")
    monkeypatch.setattr(zf_boxes, "BOX_POOL_BYTES", 0)  # (threads=2: shared with the helper
    # thread; 3: split on the pool)
    inner = a._chain.inner.chunk_shape
    boxes = _boxes(case.shape, inner, np.random.default_rng(1))
    with config.set(threads=threads):
        for box in boxes:
            np.testing.assert_array_equal(a[box], data[box], err_msg=str(box))
    assert len(calls) == len(boxes), "the box path was not taken"
    # the kernel reads the inner chunks itself exactly where it can: zstd, gzip (where
    # libdeflate or zlib's inflate is bound) or uncompressed inner chunks (not zstd with a
    # checksum: two codecs) of shards that are open files
    batched = case.id in ("zstd", "zstd_start", "raw", "raw_be") or (
        case.id == "gzip" and "gzip" in zarrfast.kernels.BATCH_CODECS)
    assert (a._chain.inner.box_codec is not None) == batched
    kernel_reads = store_kind == "local" and batched
    assert (any(whole) or any(ranges)) == kernel_reads, (store_kind, whole, ranges)
    if kernel_reads and threads < 3:  # one decode_box_shards call per box, placing all
        assert whole and all(whole) and not any(ranges), (whole, ranges)


@pytest.mark.parametrize("store_kind", ["local", "memory"])
@pytest.mark.parametrize("gap", [0, 1 << 20])
def test_sharded_box_ranges_coalesced_or_not(tmp_path, gap, store_kind):
    """Inner chunks of one shard far apart: one ranged read each (gap 0) or one for
    all (a large gap), the same values.  (zstd in a local directory: the kernel reads
    each inner chunk itself, whatever the gap; the memory store tests the gaps.)"""
    case = CASES[0]
    a, data = _array(tmp_path, store_kind, case)
    box = (slice(2, 6), slice(1, 5), slice(1, 3))  # 2 x 2 x 2 inner chunks
    with config.set(shard_coalesce_gap=gap):
        for sel in [box, (slice(0, 8), slice(0, 3), slice(0, 6)), (0, 0, slice(0, 9))]:
            np.testing.assert_array_equal(a[sel], data[sel])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_sharded_boxes_hypothesis(tmp_path_factory, data):
    case = data.draw(st.sampled_from(CASES[:3]), label="case")
    path = tmp_path_factory.mktemp("box")
    a, want = _array(path, "local", case)
    sel = []
    for n in case.shape:
        start = data.draw(st.integers(0, n - 1))
        stop = data.draw(st.integers(start + 1, min(n, start + 6)))
        sel.append(slice(start, stop))
    sel = tuple(sel)
    np.testing.assert_array_equal(a[sel], want[sel])


def _corrupt_inner(path, key: str, case: Case, lin: int, how: str) -> None:
    """Damage inner chunk ``lin`` of shard ``key`` (index at the end, no checksum)."""
    raw = bytearray((path / key).read_bytes())
    n_inner = int(np.prod([s // i for s, i in zip(case.shard, case.inner, strict=True)]))
    index = np.frombuffer(bytes(raw[-16 * n_inner:]), dtype="<u8").reshape(-1, 2).copy()
    off, nb = (int(x) for x in index[lin])
    if how == "garbage":
        raw[off:off + nb] = b"\x01" * nb
    elif how == "short":  # one byte fewer in the index
        index[lin] = (off, nb - 1)
        raw[-16 * n_inner:] = index.tobytes()
    else:  # past the end: of the shard, or of any file
        index[lin] = {"past the end": (len(raw) - 16 * n_inner - 4, 1000),
                      "near 2**63": (2**63 - 10, nb), "past 2**63": (2**63 + 5, nb)}[how]
        raw[-16 * n_inner:] = index.tobytes()
    (path / key).write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["garbage", "short", "past the end", "near 2**63",
                                 "past 2**63"])
@pytest.mark.parametrize("codec", ["zstd", "raw"])
def test_sharded_box_bad_inner_chunk_names_shard_and_chunk(tmp_path, how, codec):
    case = Case(codec, "uint16", 0, (16, 12, 12), (8, 6, 6), (4, 3, 2),
                (LE, ZSTD) if codec == "zstd" else (LE,), index_codecs=(LE,))
    a = create_zf(str(tmp_path), case)
    a[...] = np.arange(16 * 12 * 12, dtype="uint16").reshape(case.shape) + 1
    if how == "garbage" and codec == "raw":
        pytest.skip("uncompressed bytes are never invalid")
    _corrupt_inner(tmp_path, "c/0/0/0", case, 0, how)
    a = zarrfast.open_array(str(tmp_path))
    with pytest.raises(ChunkDecodeError, match=r"c/0/0/0.*inner chunk"):
        a[0:2, 0:2, 0:2]


def test_sharded_box_index_change_is_seen(tmp_path):
    """The cached index is used only while the shard's version is unchanged."""
    case = CASES[0]
    a, data = _array(tmp_path, "local", case)
    sel = (slice(1, 3), slice(1, 2), slice(0, 3))
    np.testing.assert_array_equal(a[sel], data[sel])
    b = zarrfast.open_array(str(tmp_path), mode="r+")
    b[0:8, 0:6, 0:6] = 9  # rewrites shard (0, 0, 0) (another handle)
    want = data.copy()
    want[0:8, 0:6, 0:6] = 9
    np.testing.assert_array_equal(a[sel], want[sel])


@pytest.mark.parametrize("separator", ["/", "."])
def test_sharded_box_shard_keys_are_kept_bounded_and_right(tmp_path, monkeypatch, separator):
    """The keys of the shards a box touches are kept per box of shards (at most
    ``_BOX_KEYS`` of them, then forgotten) and are the shards' keys, for an array in a
    group with either separator; every box still reads what NumPy gives."""
    monkeypatch.setattr(zf_sharded, "_BOX_KEYS", 3)
    root = zarrfast.open_group(str(tmp_path), mode="w")
    a = root.create_array("g/a", shape=(13, 10, 9), dtype="uint16", chunks=(4, 3, 2),
                          shards=(8, 6, 6), fill_value=7,
                          chunk_key_encoding={"name": "default", "separator": separator})
    data = np.random.default_rng(3).integers(0, 1000, size=a.shape).astype("uint16")
    data[8:, 6:, 6:] = 7  # a shard not stored
    a[...] = data
    a = zarrfast.open_array(str(tmp_path / "g" / "a"), mode="r")  # (a fresh chain)
    chain = a._chain
    for sel in _boxes(a.shape, (4, 3, 2), np.random.default_rng(4), n=80):
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
        assert 1 <= len(chain._box_keys) <= 3
    for first, last in [((0, 0, 0), (0, 0, 0)), ((0, 1, 0), (1, 1, 1)), ((1, 0, 1), (1, 1, 1))]:
        starts = [f * w for f, w in zip(first, (8, 6, 6), strict=True)]
        counts = [(l_ - f) * w + 1 for f, l_, w in zip(first, last, (8, 6, 6), strict=True)]
        want = [f"c{separator}" + separator.join(
                    str(f + k) for f, k in zip(first, c, strict=True))
                for c in np.ndindex(*[l_ - f + 1 for f, l_ in zip(first, last, strict=True)])]
        got = chain.box_shard_keys("", starts, counts)
        assert got == want
        assert chain.box_shard_keys("", starts, counts) is got  # (kept)
        assert chain.box_shard_keys("p", starts, counts) == [f"p/{k}" for k in want]


#: chunk files read and placed by one decode_files call: zstd (the default) and
#: uncompressed, little- and big-endian (the ``"none"`` decoder)
PLAIN_CODECS = {
    "zstd": {},
    "raw": {"compressors": None},
    "raw_be": {"compressors": None, "serializer": zarrfast.codecs.BytesCodec("big")},
}


@pytest.mark.parametrize("codecs", list(PLAIN_CODECS))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_plain_boxes_match_numpy(tmp_path, threads, codecs, monkeypatch):
    a = zarrfast.create_array(str(tmp_path), shape=(13, 10, 9), chunks=(4, 3, 2),
                              dtype="uint16", fill_value=3, **PLAIN_CODECS[codecs])
    assert a._chain.box_codec == ("zstd" if codecs == "zstd" else "none")
    data = np.random.default_rng(2).integers(0, 999, size=a.shape).astype("uint16")
    data[0:4, 0:3, 0:2] = 3
    a[...] = data
    (tmp_path / "c/1/1/1").unlink()  # a missing chunk: the fill value
    data[4:8, 3:6, 2:4] = 3
    calls = _taken(monkeypatch, box_files_strategy, "read_box_files")
    monkeypatch.setattr(zf_boxes, "BOX_POOL_BYTES", 0)  # (threads=2: shared with the helper
    # thread; 3: split on the pool)
    boxes = _boxes(a.shape, (4, 3, 2), np.random.default_rng(3))
    with config.set(threads=threads):
        for box in boxes:
            np.testing.assert_array_equal(a[box], data[box], err_msg=str(box))
    assert len(calls) == len(boxes)


@pytest.mark.parametrize("codecs", list(PLAIN_CODECS))
@pytest.mark.parametrize("stored", [b"not zstd", bytes(31), bytes(33)])
def test_plain_box_corrupt_chunk_names_key(tmp_path, codecs, stored):
    """A chunk that does not decode (uncompressed: 31 or 33 bytes where 32 belong)
    raises naming its key; the other chunks of the box are not the error."""
    a = zarrfast.create_array(str(tmp_path), shape=(8, 8), chunks=(4, 4), dtype="uint16",
                              **PLAIN_CODECS[codecs])
    a[...] = 1
    (tmp_path / "c/0/1").write_bytes(stored)
    # (uncompressed: nothing was decoded, the message says what was stored)
    match = "'c/0/1'" + ("" if codecs == "zstd" else f": stored {len(stored)} bytes, expected 32")
    with pytest.raises(ChunkDecodeError, match=match):
        a[2:6, 2:6]
    with pytest.raises(ChunkDecodeError, match=match):
        a[0:4, 4:8]  # the whole chunk (uncompressed: read straight into the result)
    np.testing.assert_array_equal(a[4:8, 0:4], 1)


@pytest.mark.parametrize("store_kind", ["local", "memory"])
def test_open_ranges(tmp_path, store_kind):
    store = LocalStore(str(tmp_path)) if store_kind == "local" else MemoryStore()
    assert (r := store.open_ranges("a/b")) is None or r.read(RangeByteRequest(0, 1)) is None
    store.set("a/b", bytes(range(100)))
    with store.open_ranges("a/b") as r:
        assert r.version == store.version("a/b")
        assert r.read(SuffixByteRequest(10)) == bytes(range(90, 100))
        assert r.read(RangeByteRequest(5, 8)) == bytes([5, 6, 7])
        buf = bytearray(20)
        assert r.read_into(memoryview(buf)[:10], 95) == 5
        assert bytes(buf[:5]) == bytes(range(95, 100))
        assert r.read_into(buf, 0) == 20 and bytes(buf) == bytes(range(20))


def test_box_chunks_counts():
    from types import SimpleNamespace

    from zarrfast.engine.selection import normalize_basic

    chain = SimpleNamespace(chunk_shape=(4, 3), chunk_nbytes=12)
    for sel, want in [((slice(0, 4), slice(2, 3)), 1), ((slice(3, 5), slice(0, 6)), 4),
                      ((slice(0, 8, 2), slice(0, 1)), 0), ((1, 5), 1)]:
        assert zf_boxes.box_chunks(normalize_basic(sel, (8, 6)), chain) == want, sel
    chain.chunk_nbytes = zf_boxes.BOX_CHUNK_BYTES + 1  # large chunks: the per-chunk path
    assert zf_boxes.box_chunks(normalize_basic((1, 5), (8, 6)), chain) == 0


def test_run_parts_splits_only_large_compressed_work(monkeypatch):
    from types import SimpleNamespace

    seen = []

    def fn(part, share):
        seen.append((part, share))

    zstd = SimpleNamespace(batch_codec="zstd", chunk_nbytes=zf_boxes.BOX_POOL_BYTES // 2)
    small = SimpleNamespace(batch_codec="zstd", chunk_nbytes=2**16)
    raw = SimpleNamespace(batch_codec=None, chunk_nbytes=zf_boxes.BOX_POOL_BYTES)
    with config.set(threads=2):
        # too little work: inline, whole (one chunk alone; more shared with the helper)
        zf_boxes.run_parts(fn, 1, zstd, 2)
        zf_boxes.run_parts(fn, 8, small, 2)
        zf_boxes.run_parts(fn, 4, raw, 2)  # uncompressed: inline, whole, not shared
        assert seen == [(range(1), False), (range(8), True), (range(4), False)]
        seen.clear()
        zf_boxes.run_parts(fn, 4, zstd, 2)  # much work, but the helper is the second thread
        assert seen == [(range(4), True)]
    seen.clear()
    with config.set(threads=3):
        zf_boxes.run_parts(fn, 4, small, 3)  # little work: shared with the helper
        assert seen == [(range(4), True)]
        seen.clear()
        zf_boxes.run_parts(fn, 6, zstd, 3)  # 2 chunks' work per thread of the pool
        assert sorted(seen, key=lambda p: p[0].start) == [
            (range(0, 2), False), (range(2, 4), False), (range(4, 6), False)]
    seen.clear()
    with config.set(threads=1):
        zf_boxes.run_parts(fn, 4, zstd, 1)
        zf_boxes.run_parts(fn, 4, small, 1)
    assert seen == [(range(4), False), (range(4), False)]


# blosc chunks of many blocks: a box decodes only the blocks that hold it
# (c-blosc keeps a forced block size for its zstd: here 15 blocks of 256 bytes a chunk)
BLOSC_BLOCKS = {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1,
                                                   "shuffle": "bitshuffle", "typesize": 2,
                                                   "blocksize": 256}}


def _blosc_blocks_array(tmp_path, sharded: bool) -> tuple[zarrfast.Array, np.ndarray]:
    a = zarrfast.create_array(str(tmp_path), shape=(40, 36, 30), chunks=(16, 12, 10),
                              shards=(32, 24, 20) if sharded else None, dtype="uint16",
                              compressors=[BLOSC_BLOCKS], fill_value=0)
    # (values that compress: c-blosc stores incompressible chunks as they are, unblocked)
    data = np.random.default_rng(4).integers(0, 100, size=a.shape).astype("uint16")
    a[...] = data
    return a, data


@needs_blosc
@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_blosc_boxes_of_many_block_chunks_match_numpy(tmp_path, sharded, threads,
                                                      monkeypatch):
    a, data = _blosc_blocks_array(tmp_path, sharded)
    assert a._chain.inner.batch_codec == "blosc" if sharded else a._chain.batch_codec == "blosc"
    # (sharded: a box is one decode_box_shards call, or one decode_ranges call per part
    # when the pool's threads split it)
    calls = ([_spy(monkeypatch, zf_sharded, "_decode_box_shards"),
              _spy(monkeypatch, zf_sharded, "_decode_box_ranges")] if sharded
             else [_taken(monkeypatch, box_files_strategy, "read_box_files")])
    monkeypatch.setattr(zf_boxes, "BOX_POOL_BYTES", 0)
    boxes = _boxes(a.shape, (16, 12, 10), np.random.default_rng(5))
    with config.set(threads=threads):
        for box in boxes:
            np.testing.assert_array_equal(a[box], data[box], err_msg=str(box))
    assert sum(sum(c) for c in calls) == len(boxes), "the kernel did not read the boxes"


@needs_blosc
@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_blosc_box_skips_a_damaged_block_it_does_not_need(tmp_path, sharded, threads,
                                                        monkeypatch):
    """Chunk (0, 0, 0)'s last block damaged: a box in its first planes reads right (its
    blocks alone are decoded); a box on its last item raises, naming the chunk."""
    a, data = _blosc_blocks_array(tmp_path, sharded)
    path = tmp_path / "c/0/0/0"
    raw = bytearray(path.read_bytes())
    if sharded:  # the index at the end: (offset, nbytes) of each of 2x2x2 inner chunks
        index = np.frombuffer(bytes(raw[-4 - 16 * 8:-4]), dtype="<u8").reshape(8, 2)
        at, size = (int(x) for x in index[0])
    else:
        at, size = 0, len(raw)
    frame = bytes(raw[at:at + size])
    _, _, nblocks, memcpyed = blosc_header(frame)
    assert nblocks == 15 and not memcpyed
    raw[at:at + size] = damage_blosc_block(frame, nblocks - 1)
    path.write_bytes(bytes(raw))
    a = zarrfast.open_array(str(tmp_path))
    monkeypatch.setattr(zf_boxes, "BOX_POOL_BYTES", 0)  # (threads=2: shared with the helper
    # thread; 3: split on the pool)
    with config.set(threads=threads):
        # (chunks (0, 0, 1) and (1, 0, 0) too: several rows, more than one thread's share)
        np.testing.assert_array_equal(a[0:3, 2:7, 1:12], data[0:3, 2:7, 1:12])
        np.testing.assert_array_equal(a[0:3, 2:7, 1:9], data[0:3, 2:7, 1:9])
        with pytest.raises(ChunkDecodeError, match="c/0/0/0"):
            a[14:16, 10:12, 8:10]



def _reorder_shard(blob: bytes, n_inner: int, order: list[int]) -> bytes:
    """A shard (index at the end, no checksum) with its stored inner chunks rewritten
    in ``order`` (inner chunk numbers, C order)."""
    index = np.frombuffer(blob[-16 * n_inner:], dtype="<u8").reshape(n_inner, 2).copy()
    chunks = {i: blob[int(o):int(o) + int(n)] for i, (o, n) in enumerate(index.tolist())
              if o != 2**64 - 1}
    body = b""
    for i in order:
        if i in chunks:
            index[i] = (len(body), len(chunks[i]))
            body += chunks[i]
    return body + index.astype("<u8").tobytes()


@pytest.mark.parametrize("store_kind", ["local", "memory"])
@pytest.mark.parametrize("gap", [0, 7, 1 << 20])
def test_sharded_box_of_reordered_inner_chunks(tmp_path, store_kind, gap):
    """A shard's inner chunks stored in reverse order (one not stored): each box's
    values come from where the index says, whether the kernel reads each inner chunk
    (local files) or runs of them are read into one buffer first (the memory store;
    gap 0: a run per inner chunk)."""
    case = Case("zstd_plain_index", "uint16", 7, (8, 6, 6), (8, 6, 6), (4, 3, 2), (LE, ZSTD),
                index_codecs=(LE,))
    store = LocalStore(str(tmp_path)) if store_kind == "local" else MemoryStore()
    a = create_zf(store, case, config={"write_empty_chunks": False})
    rng = np.random.default_rng(3)
    data = rng.integers(0, 1000, size=case.shape).astype(case.dtype)
    data[4:8, 0:3, 2:4] = case.fill  # inner chunk 7: not stored
    a[...] = data
    key = "c/0/0/0"
    n_inner = 2 * 2 * 3
    store.set(key, _reorder_shard(store.get(key), n_inner, list(range(n_inner))[::-1]))
    b = zarrfast.open_array(store, mode="r")
    boxes = [(slice(2, 6), slice(1, 5), slice(1, 3)), (slice(0, 8), slice(0, 3), slice(0, 6)),
             (slice(3, 8), slice(2, 6), slice(3, 6)), (0, 0, slice(0, 6)), (7, 5, 5),
             (slice(4, 8), slice(0, 3), slice(1, 5))]
    with config.set(shard_coalesce_gap=gap):
        for sel in boxes:
            np.testing.assert_array_equal(b[sel], data[sel], err_msg=str(sel))
        np.testing.assert_array_equal(b[...], data)


@pytest.mark.parametrize("codec", ["zstd", "raw"])
def test_sharded_box_read_again_when_the_kernel_cannot_read(tmp_path, codec):
    """An inner chunk the kernel could not read (here: its pread fails, as a transient
    EIO would) is read again by the store and placed, compressed or not."""
    case = Case(codec, "int32", 0, (8, 8, 4), (4, 8, 4), (2, 8, 4),
                (LE, ZSTD) if codec == "zstd" else (LE,), index_codecs=(LE,))
    a = create_zf(str(tmp_path), case)
    data = np.arange(8 * 8 * 4, dtype="int32").reshape(case.shape)
    a[...] = data
    b = zarrfast.open_array(str(tmp_path))
    dirfd = os.open(str(tmp_path), os.O_RDONLY)  # pread on a directory: EISDIR
    real = b._store.open_ranges
    readers = []

    def open_ranges(key):
        reader = real(key)
        if reader is not None:
            reader.fileno = lambda: dirfd
            readers.append(key)
        return reader

    b._store.open_ranges = open_ranges
    try:
        for sel in [(slice(0, 4),), (slice(1, 3), slice(2, 6)), (slice(0, 2),)]:
            np.testing.assert_array_equal(b[sel], data[sel], err_msg=str(sel))
    finally:
        os.close(dirfd)
    assert readers  # (the box path opened the shards)


class _SuffixedStore(LocalStore):
    """Chunk files named ``<key>.bin``, which it says through ``file_paths``."""

    def _name(self, key: str) -> str:
        return key + ".bin" if "/c/" in "/" + key else key

    def get(self, key, byte_range=None):
        return super().get(self._name(key), byte_range)

    def get_limited(self, key, limit):
        return super().get_limited(self._name(key), limit)

    def get_into(self, key, out):
        return super().get_into(self._name(key), out)

    @property
    def fast_get_into(self):
        return True

    def file_paths(self, keys):
        return os.fsencode(str(self.root)), validate_keys([self._name(k) for k in keys])


@pytest.mark.parametrize("threads", [1, 2])
def test_box_of_files_named_otherwise_than_their_keys(tmp_path, threads):
    """A store whose chunk files are not named as their keys (it says which they are
    through ``file_paths``): boxes read what it holds, never the fill value for files
    the kernel would look for under the keys' names."""
    a = zarrfast.create_array(str(tmp_path), shape=(8, 8), chunks=(4, 4), dtype="i4",
                              fill_value=-1, compressors=zarrfast.codecs.ZstdCodec())
    data = np.arange(64, dtype="i4").reshape(8, 8)
    a[...] = data
    for root, _, files in os.walk(tmp_path / "c"):
        for f in files:
            os.rename(os.path.join(root, f), os.path.join(root, f) + ".bin")
    b = zarrfast.open_array(_SuffixedStore(str(tmp_path)), mode="r")
    with config.set(threads=threads):
        np.testing.assert_array_equal(b[2:6, 2:6], data[2:6, 2:6])  # (four chunks)
        np.testing.assert_array_equal(b[1:3, 2:8], data[1:3, 2:8])  # (two)


@pytest.mark.parametrize("compressors", [None, "zstd"])
@pytest.mark.parametrize("threads", [1, 2])
def test_zero_dimensional_sharded_array(tmp_path, compressors, threads):
    """A 0-d sharded array's one inner chunk is read by the general path."""
    a = zarrfast.create_array(
        str(tmp_path), shape=(), chunks=(), shards=(), dtype="i4", fill_value=3,
        compressors=zarrfast.codecs.ZstdCodec() if compressors else None)
    with config.set(threads=threads):
        assert zarrfast.open_array(str(tmp_path))[()] == 3
        a[...] = 5
        assert zarrfast.open_array(str(tmp_path))[()] == 5


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_box_parts_partition_the_box_at_chunk_rows(data):
    """``box_parts``: sub-boxes that cover the box exactly once, each cut only at chunk
    boundaries, as many as asked when the box has that many chunks (and fewer than
    twice that), with the byte offsets of their first elements in the C-order output."""
    from zarrfast.engine.selection import normalize_basic

    ndim = data.draw(st.integers(1, 4))
    chunks = data.draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim))
    shape = [data.draw(st.integers(1, 4 * c)) for c in chunks]
    box = []
    for n in shape:
        lo = data.draw(st.integers(0, n - 1))
        box.append(slice(lo, data.draw(st.integers(lo + 1, n))))
    sel = normalize_basic(tuple(box), tuple(shape))
    count = sel.count.tolist()
    itemsize = data.draw(st.sampled_from([1, 2, 8]))
    strides = np.array([itemsize * int(np.prod(count[d + 1:])) for d in range(ndim)],
                       dtype=np.int64)
    want = data.draw(st.integers(1, 40))
    parts = zf_boxes.box_parts(sel, chunks, strides, want)
    nchunks = int(np.prod([(b.stop - 1) // c - b.start // c + 1
                           for b, c in zip(box, chunks, strict=True)]))
    assert min(want, nchunks) <= len(parts) <= max(1, min(nchunks, 2 * want - 1))
    covered = np.zeros(count, dtype=np.int64)
    for start, part_count, base in parts:
        assert start.dtype == part_count.dtype == np.int64 and (part_count >= 1).all()
        local = start - sel.start
        assert base == int(local @ strides)
        for d in range(ndim):
            end = start[d] + part_count[d]
            assert sel.start[d] <= start[d] and end <= sel.start[d] + sel.count[d]
            assert start[d] == sel.start[d] or start[d] % chunks[d] == 0
            assert end == sel.start[d] + sel.count[d] or end % chunks[d] == 0
        region = zip(local.tolist(), part_count.tolist(), strict=True)
        covered[tuple(slice(lo, lo + m) for lo, m in region)] += 1
    assert (covered == 1).all()


def _large_box_array(tmp_path, compressors):
    a = zarrfast.create_array(str(tmp_path), shape=(23, 17, 9), chunks=(4, 3, 4),
                              dtype="int32", fill_value=-5, compressors=compressors)
    data = np.random.default_rng(7).integers(-999, 999, size=a.shape).astype("int32")
    a[...] = data
    (tmp_path / "c/1/2/0").unlink()  # missing chunks: the fill value
    (tmp_path / "c/5/5/2").unlink()  # (an edge chunk)
    data[4:8, 6:9, 0:4] = -5
    data[20:23, 15:17, 8:9] = -5
    return a, data


LARGE_BOX_CODECS = {"zstd": zarrfast.codecs.ZstdCodec(),
                    "blosc": zarrfast.codecs.BloscCodec(cname="lz4", shuffle="bitshuffle"),
                    "none": None}


@pytest.mark.parametrize("codec", list(LARGE_BOX_CODECS))
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("split", [False, True])
def test_large_boxes_are_read_in_one_call_or_in_parts(tmp_path, codec, threads, split,
                                                      monkeypatch):
    """Step-1 selections of more than ``BOX_CHUNKS`` chunk files, compressed or not (full
    reads among them), are one ``decode_box_files`` call whose chunks ``threads - 1`` helper
    threads share; boxes of more than ``BOX_PART_CHUNKS`` chunks are parts of the box,
    one call each (as many parts as the pool runs tasks); missing chunks are the fill
    value; never through the projection's batches."""
    if codec == "blosc" and "blosc" not in zarrfast.kernels.BATCH_CODECS:
        pytest.skip("blosc is not bound")
    a, data = _large_box_array(tmp_path, LARGE_BOX_CODECS[codec])
    parts = _spy(monkeypatch, zf_boxes, "box_parts")
    batches = _spy(monkeypatch, zf_chunked.RowReader, "decode_batch")
    monkeypatch.setattr(zarrfast.concurrency, "INLINE_WORK_BYTES", 0)  # (never inline)
    if split:
        monkeypatch.setattr(zf_boxes, "BOX_PART_CHUNKS", 9)
    with config.set(threads=threads):
        for sel in (np.s_[...], np.s_[1:22, 2:], np.s_[3:9, :, 1:8], np.s_[:, 5]):
            np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    assert len(parts) == 4 and not batches
    if split:  # (the full read: 6 x 6 x 3 chunks)
        assert len(parts[0]) >= max(threads, 108 // 9)
    else:
        assert all(len(p) == 1 for p in parts)
    if threads > 1 and not split and sys.platform != "win32":
        from zarrfast._ext import _decode

        assert _decode.helper_threads() >= threads - 1


@pytest.mark.parametrize("codec", ["zstd", "none"])
@pytest.mark.parametrize("threads", [1, 2])
def test_large_box_corrupt_chunk_names_key(tmp_path, threads, codec):
    a, data = _large_box_array(tmp_path, LARGE_BOX_CODECS[codec])
    (tmp_path / "c/3/1/1").write_bytes(b"not zstd")  # (and not 4 x 3 x 4 int32 either)
    with config.set(threads=threads):
        with pytest.raises(ChunkDecodeError, match="'c/3/1/1'"):
            a[...]
        np.testing.assert_array_equal(a[:12], data[:12])  # (the other chunks read)
