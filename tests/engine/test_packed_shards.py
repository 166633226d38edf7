"""Whole shards of zstd, gzip or zlib inner chunks written from an array are built by one
kernel call each (``ChunkEncoder.compress_regions(packed=True)``: the inner chunks
compressed one after the other into one buffer in the order the shard stores them, the
index after or before them; ``ShardWrite.packed_shard``).  The shards are zarr-python
3.4.2's bytes, whichever way they are written (whole, an edge shard by
read-modify-write, at one thread with the file I/O thread behind, at two threads), and a
write that fails part way leaves every shard file either as it was or as written whole."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, ShardingCodec, ZstdCodec
from zarrfast.engine.chunked import RowWriter
from zarrfast.errors import CodecError
from zarrfast.kernels import encode as _encode

pytestmark = pytest.mark.skipif(_encode.ChunkEncoder is None or "zstd" not in
                                _encode.ENCODE_CODECS,
                                reason="the batched zstd encoder is not compiled")

#: (40, 36) uint16 in shards of (16, 12), inner chunks (4, 6): 3 x 3 shards, the last row
#: of them past the array's edge (read-modify-written), 4 x 2 inner chunks each
SHAPE, SHARDS, INNER = (40, 36), (16, 12), (4, 6)
#: (index location, write order, zstd level, zstd checksum, shape): the last shape's
#: inner chunks of the last column reach past the array's edge (not packed: the shards
#: there are built chunk by chunk, the others packed)
CASES = [("end", "lexicographic", 1, False, SHAPE), ("start", "lexicographic", 3, True, SHAPE),
         ("end", "morton", 1, False, SHAPE), ("start", "colexicographic", 1, False, SHAPE),
         ("end", "lexicographic", 1, False, (40, 33))]


def _data(seed: int = 0, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(0, 3, shape), axis=1).astype("<u2") % 700
    x[4:8, 12:18] = 0  # a whole inner chunk of the fill value: not stored
    x[16:32, 24:36] = 0  # a whole shard of it: no shard file
    return x


def _create(path, case, store=None) -> zarrfast.Array:
    where, order, level, checksum, shape = case
    codec = ShardingCodec(chunk_shape=INNER, index_location=where, subchunk_write_order=order,
                          codecs=[BytesCodec(), ZstdCodec(level=level, checksum=checksum)])
    return zarrfast.create_array(str(path) if store is None else store, shape=shape,
                                 chunks=SHARDS, dtype="<u2", serializer=codec,
                                 compressors=None, fill_value=0)


def _files(path) -> dict[str, bytes]:
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            if name != "zarr.json":
                full = os.path.join(root, name)
                out[os.path.relpath(full, path)] = open(full, "rb").read()
    return out


@pytest.fixture(scope="module")
def theirs(zarr_peer, tmp_path_factory) -> list[dict[str, bytes]]:
    """Each case's shard files as zarr-python 3.4.2 writes them."""
    base = tmp_path_factory.mktemp("peer")
    got = zarr_peer.run("""
        import os
        import numpy as np, zarr
        from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec
        base, cases, shards, inner, datas = ARGS
        out = []
        for k, (where, order, level, checksum, shape) in enumerate(cases):
            data = np.array(datas[k], dtype="<u2")
            path = os.path.join(base, f"case{k}.zarr")
            codec = ShardingCodec(chunk_shape=tuple(inner), index_location=where,
                                  subchunk_write_order=order,
                                  codecs=[BytesCodec(), ZstdCodec(level=level,
                                                                  checksum=checksum)])
            a = zarr.create_array(path, shape=tuple(shape), chunks=tuple(shards), dtype="<u2",
                                  serializer=codec, compressors=None, fill_value=0)
            a[...] = data
            files = {}
            for root, _, names in os.walk(path):
                for name in names:
                    if name != "zarr.json":
                        full = os.path.join(root, name)
                        files[os.path.relpath(full, path)] = open(full, "rb").read().hex()
            out.append(files)
        emit(out)
    """, [str(base), CASES, SHARDS, INNER, [_data(0, case[4]).tolist() for case in CASES]])
    return [{k: bytes.fromhex(v) for k, v in files.items()} for files in got]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", range(len(CASES)))
def test_shards_are_zarr_pythons_bytes(tmp_path, theirs, monkeypatch, k, threads) -> None:
    calls = []
    packed = RowWriter.compress_packed

    def spy(self, rows, *args, **kwargs):
        calls.append(len(rows))
        return packed(self, rows, *args, **kwargs)

    monkeypatch.setattr(RowWriter, "compress_packed", spy)
    shape = CASES[k][4]
    a = _create(tmp_path / "ours.zarr", CASES[k])
    with config.set(threads=threads):
        a[...] = _data(0, shape)
    ours = _files(tmp_path / "ours.zarr")
    assert sorted(ours) == sorted(theirs[k])  # (the shard of fill values is not stored)
    for key in ours:
        assert ours[key] == theirs[k][key], key
    # every shard was packed: 6 whole ones, 3 at the edge (4 x 1 of 4 x 2 inner chunks
    # inside the array); the shard of fill values was too, and found empty.  With inner
    # chunks past the last column's edge, that column's 3 shards were not
    assert sorted(calls) == ([4] * 3 + [8] * 6 if shape == SHAPE else [4] * 2 + [8] * 4)
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "ours.zarr"))[...],
                                  _data(0, shape))


def test_a_store_that_keeps_values_gets_bytes_of_its_own(tmp_path, theirs) -> None:
    """A store that keeps the values it is given (memory) gets each shard as bytes of
    its own, not a view of the buffer the next shard is built in."""
    store = zarrfast.storage.MemoryStore()
    a = _create(None, CASES[0], store=store)
    a[...] = _data()
    for key, raw in theirs[0].items():
        got = store.get(key.replace(os.sep, "/"))
        assert isinstance(got, bytes) and got == raw, key


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_write_leaves_each_shard_whole(tmp_path, monkeypatch, threads) -> None:
    path = tmp_path / "a.zarr"
    a = _create(path, CASES[0])
    old = _data(1)
    a[...] = old
    before = _files(path)
    packed = RowWriter.compress_packed
    calls = []

    def failing(self, rows, *args, **kwargs):
        calls.append(None)
        if len(calls) == 4:
            raise CodecError("zstd: cannot compress (made to fail)")
        return packed(self, rows, *args, **kwargs)

    monkeypatch.setattr(RowWriter, "compress_packed", failing)
    new = _data(2)
    with config.set(threads=threads), pytest.raises(CodecError, match="made to fail"):
        a[...] = new
    monkeypatch.undo()
    after = _files(path)
    assert not [k for k in after if ".zarrfast-tmp-" in k]  # no temporary file left
    # each shard file holds the old shard or the new one, whole: it reads as either
    got = zarrfast.open_array(str(path))
    changed = 0
    for i in range(0, SHAPE[0], SHARDS[0]):
        for j in range(0, SHAPE[1], SHARDS[1]):
            box = (slice(i, i + SHARDS[0]), slice(j, j + SHARDS[1]))
            part = got[box]
            if np.array_equal(part, new[box]) and not np.array_equal(part, old[box]):
                changed += 1
            else:
                np.testing.assert_array_equal(part, old[box])
    assert changed < 9  # (the write stopped: not every shard was replaced)
    assert {k: v for k, v in after.items() if before.get(k) == v}  # some kept their bytes


def test_fill_only_write_deletes_the_shards(tmp_path) -> None:
    path = tmp_path / "a.zarr"
    a = _create(path, CASES[1])
    a[...] = _data()
    a[...] = np.zeros(SHAPE, "<u2")
    assert _files(path) == {}


@pytest.mark.parametrize("threads", [1, 2])
def test_edge_shards_keep_what_lies_past_the_edge(tmp_path, threads) -> None:
    """An edge shard is read, changed and written back: inner chunks past the array's
    edge that another writer put there (this array, larger, then shrunk) are kept."""
    big = (48, 36)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=big, chunks=SHARDS,
                              dtype="<u2", compressors=None, fill_value=0,
                              serializer=ShardingCodec(chunk_shape=INNER, codecs=[
                                  BytesCodec(), ZstdCodec(level=1)]))
    old = _data(3, big)
    a[...] = old
    a.resize(SHAPE)
    new = _data(4, SHAPE)
    with config.set(threads=threads):
        a[...] = new
    np.testing.assert_array_equal(a[...], new)
    a.resize(big)
    got = a[...]
    np.testing.assert_array_equal(got[:SHAPE[0]], new)
    np.testing.assert_array_equal(got[SHAPE[0]:], old[SHAPE[0]:])  # kept
