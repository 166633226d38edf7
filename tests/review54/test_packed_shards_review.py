"""Review of 60b2271 (whole shards of zstd / gzip / zlib inner chunks built by one kernel
call, ``compress_regions(packed=True)``, into per-thread shard buffers, two of them for the
turns of the file I/O thread): guards, all passing now, for what the commit's own test
(tests/engine/test_packed_shards.py: 2-D ``<u2``, zstd, 1 and 2 threads) leaves out.

* Shard files byte for byte zarr-python 3.4.2's for a 3-D big-endian ``>f8`` array of
  shards whose inner grid is not a power of two (3 x 2 x 2: Morton order with gaps),
  zstd with its checksum, a crc32c index codec, the index at the start; with
  ``write_empty_chunks`` on and off; zlib in lexicographic order; a non-zero fill value;
  partial writes into missing shards (the packed path of a read-modify-write); values
  that are not C-contiguous (Fortran order, reversed strides, broadcast).
* At one thread with the file I/O thread behind (forced on: ``CONTENTION_GATE`` off,
  so the loaded test machine does not run it inline), 30 shards of very different
  compressed sizes, the calling thread filling one shard buffer while the I/O thread
  writes the other: every shard file is zarr-python's, and the I/O thread did write.
* A real store failure part way (a directory where a shard file goes), 1 and 2 threads:
  the error names the key, every other shard is old or new, whole.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency, config
from zarrfast.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZlibCodec, ZstdCodec
from zarrfast.engine.chunked import RowWriter
from zarrfast.engine.shard_write import ShardWrite
from zarrfast.kernels import encode as _encode

pytestmark = [
    pytest.mark.skipif(_encode.ChunkEncoder is None or "zstd" not in _encode.ENCODE_CODECS,
                       reason="the batched zstd encoder is not compiled"),
    # (zlib is numcodecs.zlib: not in the v3 specification, on purpose here)
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
]

SHAPE3, SHARDS3, INNER3 = (10, 9, 7), (6, 6, 4), (2, 3, 2)
WHOLE3 = [[[0, 10], [0, 9], [0, 7]]]
#: (part of shard (0, 0, 0); the part inside the array of edge shard (0, 1, 0); of edge
#: shard (1, 1, 1), all fill: nothing stored; then a write of unaligned parts)
PARTS3 = [[[0, 4], [0, 6], [0, 4]], [[0, 6], [6, 9], [0, 4]], [[6, 10], [6, 9], [4, 6]],
          [[3, 9], [2, 5], [5, 7]]]

#: name -> (dtype, endian, compressor, zstd checksum, crc32c index, index location,
#: order, fill value, write_empty_chunks, writes (lists of [start, stop] per dim))
CASES = {
    "be-f8-morton-start-crc": (">f8", "big", "zstd", True, True, "start", "morton", 0.0,
                               False, WHOLE3),
    "be-f8-write-empty": (">f8", "big", "zstd", True, True, "start", "morton", 0.0, True,
                          WHOLE3),
    "zlib-lexicographic-end": ("<i4", "little", "zlib", False, False, "end",
                               "lexicographic", 5, False, WHOLE3),
    "partial-into-missing-shards": (">f8", "big", "zstd", False, True, "start", "morton",
                                    0.0, False, PARTS3),
}


def _data3(dtype: str, fill) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = (np.cumsum(rng.integers(0, 3, SHAPE3), axis=2) % 500).astype(dtype)
    x[0:2, 0:3, 0:2] = fill  # a whole inner chunk of the fill value
    x[6:10, 6:9, 4:7] = fill  # the part of the last shard inside the array: all fill
    return x


def _codec(case) -> ShardingCodec:
    _, endian, comp, checksum, crc, where, order, *_ = case
    inner = [BytesCodec(endian=endian),
             ZstdCodec(level=1, checksum=checksum) if comp == "zstd" else ZlibCodec(level=3)]
    index = [BytesCodec(endian="little")] + ([Crc32cCodec()] if crc else [])
    return ShardingCodec(chunk_shape=INNER3, index_location=where, subchunk_write_order=order,
                         codecs=inner, index_codecs=index)


def _files(path) -> dict[str, bytes]:
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            if name != "zarr.json":
                full = os.path.join(root, name)
                with open(full, "rb") as f:
                    out[os.path.relpath(full, path)] = f.read()
    return out


_PEER = """
    import os
    import numpy as np, zarr
    from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec
    from numcodecs.zarr3 import Zlib
    base, cases, shape, shards, inner = ARGS
    out = {}
    for name, (dtype, endian, comp, checksum, crc, where, order, fill, wec, sels, data) \\
            in cases.items():
        data = np.frombuffer(bytes.fromhex(data), dtype=dtype).reshape(shape)
        codec = ShardingCodec(
            chunk_shape=tuple(inner), index_location=where, subchunk_write_order=order,
            codecs=[BytesCodec(endian=endian),
                    ZstdCodec(level=1, checksum=checksum) if comp == "zstd"
                    else Zlib(level=3)],
            index_codecs=[BytesCodec(endian="little")] + ([Crc32cCodec()] if crc else []))
        path = os.path.join(base, name)
        a = zarr.create_array(path, shape=tuple(shape), chunks=tuple(shards), dtype=dtype,
                              serializer=codec, compressors=None, fill_value=fill,
                              config={"write_empty_chunks": wec})
        for sel in sels:
            box = tuple(slice(*s) for s in sel)
            a[box] = data[box]
        files = {}
        for root, _, names in os.walk(path):
            for n in names:
                if n != "zarr.json":
                    full = os.path.join(root, n)
                    files[os.path.relpath(full, path)] = open(full, "rb").read().hex()
        out[name] = files
    emit(out)
"""


@pytest.fixture(scope="module")
def theirs(zarr_peer, tmp_path_factory) -> dict[str, dict[str, bytes]]:
    base = tmp_path_factory.mktemp("peer")
    cases = {name: [*case, _data3(case[0], case[7]).tobytes().hex()]
             for name, case in CASES.items()}
    got = zarr_peer.run(_PEER, [str(base), cases, SHAPE3, SHARDS3, INNER3])
    return {name: {k: bytes.fromhex(v) for k, v in files.items()}
            for name, files in got.items()}


def _layouts(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": x, "F": np.asfortranarray(x),
            "reversed": np.ascontiguousarray(x[::-1, ::-1, ::-1])[::-1, ::-1, ::-1]}


@pytest.fixture
def spied(monkeypatch) -> list[int]:
    """The number of inner chunks of each ``compress_packed`` call (the packed path ran)."""
    calls: list[int] = []
    packed = RowWriter.compress_packed

    def spy(self, rows, *args, **kwargs):
        calls.append(len(rows))
        return packed(self, rows, *args, **kwargs)

    monkeypatch.setattr(RowWriter, "compress_packed", spy)
    return calls


@pytest.mark.parametrize("layout", ["C", "F", "reversed"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(CASES))
def test_shards_are_zarr_pythons_bytes(tmp_path, theirs, spied, name, threads,
                                       layout) -> None:
    case = CASES[name]
    dtype, fill, wec, sels = case[0], case[7], case[8], case[9]
    data = _data3(dtype, fill)
    value = _layouts(data)[layout]
    path = tmp_path / "ours.zarr"
    a = zarrfast.create_array(str(path), shape=SHAPE3, chunks=SHARDS3, dtype=dtype,
                              serializer=_codec(case), compressors=None, fill_value=fill,
                              config={"write_empty_chunks": wec})
    with config.set(threads=threads):
        for sel in sels:
            box = tuple(slice(*s) for s in sel)
            a[box] = value[box]
    assert spied  # (the packed path wrote the shards)
    ours = _files(path)
    assert sorted(ours) == sorted(theirs[name])
    for key, blob in ours.items():
        assert blob == theirs[name][key], key
    want = np.full(SHAPE3, fill, dtype=dtype)
    for sel in sels:
        box = tuple(slice(*s) for s in sel)
        want[box] = data[box]
    np.testing.assert_array_equal(zarrfast.open_array(str(path))[...], want)


def test_broadcast_value_is_zarr_pythons_bytes(tmp_path, theirs, spied) -> None:
    """A value with zero strides (``np.broadcast_to``) packs as its copy does."""
    name = "be-f8-morton-start-crc"
    case = CASES[name]
    row = _data3(case[0], case[7])[:1]
    ours, copy = tmp_path / "ours.zarr", tmp_path / "copy.zarr"
    for path, value in ((ours, np.broadcast_to(row, SHAPE3)),
                        (copy, np.ascontiguousarray(np.broadcast_to(row, SHAPE3)))):
        a = zarrfast.create_array(str(path), shape=SHAPE3, chunks=SHARDS3, dtype=case[0],
                                  serializer=_codec(case), compressors=None, fill_value=0.0)
        a[...] = value
    assert spied
    assert _files(ours) == _files(copy)
    np.testing.assert_array_equal(zarrfast.open_array(str(ours))[...],
                                  np.broadcast_to(row, SHAPE3))


# -- the file I/O thread's turns ------------------------------------------------------------

BIG_SHAPE, BIG_SHARDS, BIG_INNER = (48, 40), (8, 8), (2, 4)


def _big_data() -> np.ndarray:
    """30 shards of very different compressed sizes: noise, ramps, constants, fill."""
    rng = np.random.default_rng(7)
    x = np.zeros(BIG_SHAPE, dtype="<i4")
    for k, (i, j) in enumerate((i, j) for i in range(6) for j in range(5)):
        box = (slice(8 * i, 8 * i + 8), slice(8 * j, 8 * j + 8))
        kind = k % 4
        if kind == 0:
            x[box] = rng.integers(-2**31, 2**31 - 1, (8, 8), dtype=np.int64)
        elif kind == 1:
            x[box] = np.arange(64).reshape(8, 8) * (k + 1)
        elif kind == 2:
            x[box] = k
        # (kind 3: the fill value, no shard file)
    return x


def _big_codec(where: str) -> ShardingCodec:
    return ShardingCodec(chunk_shape=BIG_INNER, index_location=where,
                         subchunk_write_order="morton",
                         codecs=[BytesCodec(), ZstdCodec(level=3)],
                         index_codecs=[BytesCodec(), Crc32cCodec()])


@pytest.fixture(scope="module")
def theirs_big(zarr_peer, tmp_path_factory) -> dict[str, dict[str, bytes]]:
    base = tmp_path_factory.mktemp("peer_big")
    got = zarr_peer.run("""
        import os
        import numpy as np, zarr
        from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec
        base, data, shape, shards, inner = ARGS
        data = np.frombuffer(bytes.fromhex(data), dtype="<i4").reshape(shape)
        out = {}
        for where in ("start", "end"):
            codec = ShardingCodec(chunk_shape=tuple(inner), index_location=where,
                                  subchunk_write_order="morton",
                                  codecs=[BytesCodec(), ZstdCodec(level=3)],
                                  index_codecs=[BytesCodec(), Crc32cCodec()])
            path = os.path.join(base, where)
            a = zarr.create_array(path, shape=tuple(shape), chunks=tuple(shards),
                                  dtype="<i4", serializer=codec, compressors=None,
                                  fill_value=0)
            a[...] = data
            files = {}
            for root, _, names in os.walk(path):
                for n in names:
                    if n != "zarr.json":
                        full = os.path.join(root, n)
                        files[os.path.relpath(full, path)] = open(full, "rb").read().hex()
            out[where] = files
        emit(out)
    """, [str(base), _big_data().tobytes().hex(), BIG_SHAPE, BIG_SHARDS, BIG_INNER])
    return {w: {k: bytes.fromhex(v) for k, v in files.items()} for w, files in got.items()}


@pytest.mark.parametrize("where", ["start", "end"])
def test_io_thread_turns_keep_every_shard(tmp_path, theirs_big, spied, monkeypatch,
                                          where) -> None:
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)  # (the I/O thread runs)
    writers: set[int] = set()
    store_shard = ShardWrite.store_shard

    def noted(self, key, shard):
        writers.add(threading.get_ident())
        return store_shard(self, key, shard)

    monkeypatch.setattr(ShardWrite, "store_shard", noted)
    path = tmp_path / "ours.zarr"
    a = zarrfast.create_array(str(path), shape=BIG_SHAPE, chunks=BIG_SHARDS, dtype="<i4",
                              serializer=_big_codec(where), compressors=None, fill_value=0)
    data = _big_data()
    with config.set(threads=1):
        a[...] = data
    assert len(spied) == 30
    assert writers and threading.get_ident() not in writers  # (the I/O thread wrote)
    ours = _files(path)
    assert sorted(ours) == sorted(theirs_big[where])
    for key, blob in ours.items():
        assert blob == theirs_big[where][key], key
    np.testing.assert_array_equal(zarrfast.open_array(str(path))[...], data)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_store_failing_part_way_leaves_each_shard_whole(tmp_path, spied, monkeypatch,
                                                          threads) -> None:
    """A real failure of the store (a directory where shard ``c/2/3``'s file goes), at one
    thread on the file I/O thread behind the encoding: the error names the key, and every
    other shard file holds the old shard or the new one, whole; no temporary file left."""
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)
    path = tmp_path / "a.zarr"
    a = zarrfast.create_array(str(path), shape=BIG_SHAPE, chunks=BIG_SHARDS, dtype="<i4",
                              serializer=_big_codec("end"), compressors=None, fill_value=0)
    old = np.arange(np.prod(BIG_SHAPE), dtype="<i4").reshape(BIG_SHAPE) % 1000 + 1
    new = _big_data()
    a[...] = old
    os.remove(path / "c" / "2" / "3")
    os.makedirs(path / "c" / "2" / "3" / "blocker")
    with config.set(threads=threads), pytest.raises(zarrfast.errors.ZarrfastError,
                                                    match="c/2/3"):
        a[...] = new
    assert not [n for _, _, names in os.walk(path) for n in names if "tmp" in n]
    got = zarrfast.open_array(str(path))
    for i in range(6):
        for j in range(5):
            if (i, j) == (2, 3):
                continue
            box = (slice(8 * i, 8 * i + 8), slice(8 * j, 8 * j + 8))
            part = got[box]
            assert np.array_equal(part, old[box]) or np.array_equal(part, new[box]), (i, j)
