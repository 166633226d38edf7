"""Review of 3a8e00e (shards of uncompressed inner chunks read, changed and written back by
one ``copy_regions`` into the new shard, ``ShardWrite.raw_updated_shard``, now for
zarrfast's own writes too) and a399342 (whole big-endian uncompressed chunks copied and
swapped by one ``copy_regions`` per batch, ``RowWriter.swap_whole``).  Guards, passing now.

* Shard files byte for byte zarr-python 3.4.2's after the same sequence of writes on a
  3-D array whose shard shape does not divide it: a full write, a shrink (the shards
  past the new edge keep what lies there), unaligned and aligned partial writes, a write
  of the fill value over whole inner chunks, a one-row write, and a grow back; inner
  chunks little- or big-endian, with or without a transpose; Morton / start,
  lexicographic / end, colexicographic / start; ``write_empty_chunks`` on and off; the
  new path taken.
* Chunk files of unsharded big-endian arrays (transposed too, complex, datetime) byte for
  byte zarr-python 3.4.2's after a full and a partial write, values C, Fortran-ordered
  and reversed, 1 and 2 threads.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, Crc32cCodec, ShardingCodec, TransposeCodec
from zarrfast.engine.chunked import RowWriter
from zarrfast.engine.shard_write import ShardWrite

SHAPE, SMALL, SHARDS, INNER = (20, 17, 9), (11, 14, 9), (6, 6, 4), (2, 3, 2)
#: (where in the array, where in the data) per write, after the shrink to SMALL
WRITES = [([[0, 11], [0, 14], [0, 9]], [[5, 16], [2, 16], [0, 9]]),
          ([[2, 8], [3, 12], [0, 8]], [[0, 6], [0, 9], [1, 9]]),
          ([[0, 6], [0, 6], [0, 4]], [[10, 16], [10, 16], [4, 8]]),  # (all fill)
          ([[6, 11], [6, 14], [4, 9]], [[0, 5], [0, 8], [0, 5]]),
          ([[1, 2], [0, 14], [0, 9]], [[19, 20], [3, 17], [0, 9]])]
#: (endian, transpose, write order, index location, write_empty_chunks)
CASES = [(e, t, o, w, wec) for e, t in itertools.product(["little", "big"], [False, True])
         for (o, w), wec in itertools.product(
             [("morton", "start"), ("lexicographic", "end"), ("colexicographic", "start")],
             [False, True])]


def _data() -> np.ndarray:
    x = np.random.default_rng(2).integers(1, 5, SHAPE).astype("<i4")
    x[0:6, 0:6, 0:4] = 0
    x[10:16, 10:16, 4:8] = 0
    x[12:14, 3:6, 0:2] = 0
    return x


def _files(path) -> dict[str, bytes]:
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            if name not in ("zarr.json", ".zarray"):
                full = os.path.join(root, name)
                with open(full, "rb") as f:
                    out[os.path.relpath(full, path)] = f.read()
    return out


def _hex_files(got) -> list[dict[str, bytes]]:
    return [{k: bytes.fromhex(v) for k, v in files.items()} for files in got]


#: (indented as the scripts that include it)
_PEER_FILES = """
        def files(path):
            out = {}
            for root, _, names in os.walk(path):
                for n in names:
                    if n not in ("zarr.json", ".zarray"):
                        full = os.path.join(root, n)
                        out[os.path.relpath(full, path)] = open(full, "rb").read().hex()
            return out
"""


@pytest.fixture(scope="module")
def theirs(zarr_peer, tmp_path_factory) -> list[dict[str, bytes]]:
    base = tmp_path_factory.mktemp("peer_rmw")
    got = zarr_peer.run("""
        import os
        import numpy as np, zarr
        from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, TransposeCodec
    """ + _PEER_FILES + """
        base, cases, writes, shape, small, shards, inner, data = ARGS
        data = np.frombuffer(bytes.fromhex(data), dtype="<i4").reshape(shape)
        out = []
        for k, (endian, transpose, order, where, wec) in enumerate(cases):
            codecs = ([TransposeCodec(order=(1, 0, 2))] if transpose else []) + [
                BytesCodec(endian=endian)]
            codec = ShardingCodec(chunk_shape=tuple(inner), codecs=codecs,
                                  index_location=where, subchunk_write_order=order,
                                  index_codecs=[BytesCodec(), Crc32cCodec()])
            path = os.path.join(base, f"case{k}")
            a = zarr.create_array(path, shape=tuple(shape), chunks=tuple(shards),
                                  dtype="<i4", serializer=codec, compressors=None,
                                  fill_value=0, config={"write_empty_chunks": wec})
            a[...] = data
            a.resize(tuple(small))
            for sel, src in writes:
                a[tuple(slice(*x) for x in sel)] = data[tuple(slice(*x) for x in src)]
            a.resize(tuple(shape))
            out.append(files(path))
        emit(out)
    """, [str(base), CASES, WRITES, SHAPE, SMALL, SHARDS, INNER, _data().tobytes().hex()])
    return _hex_files(got)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", range(len(CASES)))
def test_shards_read_changed_and_written_back_are_zarr_pythons(tmp_path, theirs, monkeypatch,
                                                               k, threads) -> None:
    built = []
    raw = ShardWrite.raw_updated_shard

    def spy(self, g, data):
        shard = raw(self, g, data)
        built.append(shard is not False)
        return shard

    monkeypatch.setattr(ShardWrite, "raw_updated_shard", spy)
    endian, transpose, order, where, wec = CASES[k]
    codecs = ([TransposeCodec(order=(1, 0, 2))] if transpose else []) + [
        BytesCodec(endian=endian)]
    codec = ShardingCodec(chunk_shape=INNER, codecs=codecs, index_location=where,
                          subchunk_write_order=order,
                          index_codecs=[BytesCodec(), Crc32cCodec()])
    path = tmp_path / "ours.zarr"
    a = zarrfast.create_array(str(path), shape=SHAPE, chunks=SHARDS, dtype="<i4",
                              serializer=codec, compressors=None, fill_value=0,
                              config={"write_empty_chunks": wec})
    data = _data()
    with config.set(threads=threads):
        a[...] = data
        a.resize(SMALL)
        for sel, src in WRITES:
            a[tuple(slice(*x) for x in sel)] = data[tuple(slice(*x) for x in src)]
        a.resize(SHAPE)
    assert any(built)  # (the one-copy path built some shards)
    ours = _files(path)
    assert sorted(ours) == sorted(theirs[k])
    for key, blob in ours.items():
        assert blob == theirs[k][key], key


# -- unsharded big-endian chunks (a399342) ------------------------------------------------

#: (dtype, transpose)
SWAPPED = [("<f8", False), ("<c8", False), ("<c16", True), ("M8[s]", False), ("<u2", True)]


def _swapped_data(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(4)
    dt = np.dtype(dtype)
    if dt.kind == "c":
        x = (rng.standard_normal((16, 18)) + 1j * rng.standard_normal((16, 18))).astype(dt)
    elif dt.kind == "M":
        x = rng.integers(0, 10**6, (16, 18)).astype(dt)
    else:
        x = (rng.standard_normal((16, 18)) * 100).astype(dt)
    x[0:4, 0:6] = 0  # a chunk of the fill value
    return x


@pytest.fixture(scope="module")
def theirs_swapped(zarr_peer, tmp_path_factory) -> list[dict[str, bytes]]:
    base = tmp_path_factory.mktemp("peer_swap")
    got = zarr_peer.run("""
        import os
        import numpy as np, zarr
        from zarr.codecs import BytesCodec, TransposeCodec
    """ + _PEER_FILES + """
        base, cases = ARGS
        out = []
        for k, (dtype, transpose, data) in enumerate(cases):
            data = np.frombuffer(bytes.fromhex(data), dtype=dtype).reshape(16, 18)
            path = os.path.join(base, f"case{k}")
            a = zarr.create_array(path, shape=(16, 18), chunks=(4, 6), dtype=dtype,
                                  serializer=BytesCodec(endian="big"), compressors=None,
                                  filters=[TransposeCodec(order=(1, 0))] if transpose
                                  else None, fill_value=0)
            a[...] = data
            a[1:7, 2:11] = data[1:7, 2:11][::-1]
            out.append(files(path))
        emit(out)
    """, [str(base), [[d, t, _swapped_data(d).tobytes().hex()] for d, t in SWAPPED]])
    return _hex_files(got)


@pytest.mark.parametrize("layout", ["C", "F", "reversed"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", range(len(SWAPPED)))
def test_big_endian_chunks_are_zarr_pythons(tmp_path, theirs_swapped, monkeypatch, k,
                                            threads, layout) -> None:
    calls = []
    swap = RowWriter.swap_whole

    def spy(self, rows, *args, **kwargs):
        calls.append(len(rows))
        return swap(self, rows, *args, **kwargs)

    monkeypatch.setattr(RowWriter, "swap_whole", spy)
    dtype, transpose = SWAPPED[k]
    data = _swapped_data(dtype)
    value = {"C": data, "F": np.asfortranarray(data),
             "reversed": np.ascontiguousarray(data[::-1, ::-1])[::-1, ::-1]}[layout]
    path = tmp_path / "ours.zarr"
    a = zarrfast.create_array(str(path), shape=(16, 18), chunks=(4, 6), dtype=dtype,
                              serializer=BytesCodec(endian="big"), compressors=None,
                              filters=[TransposeCodec(order=(1, 0))] if transpose else None,
                              fill_value=0)
    with config.set(threads=threads):
        a[...] = value
        a[1:7, 2:11] = value[1:7, 2:11][::-1]
    if not transpose:
        assert calls  # (the batched swap wrote the whole chunks)
    ours = _files(path)
    assert sorted(ours) == sorted(theirs_swapped[k])
    for key, blob in ours.items():
        assert blob == theirs_swapped[k][key], key
