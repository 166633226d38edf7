"""Whole-chunk zstd, gzip and zlib writes (``ChunkEncoder.compress_regions``: copy and
compress in one ``nogil`` call per batch, into a per-thread buffer that the local store
writes with one ``set_many``) against the per-chunk path, numcodecs' bytes and
zarr-python."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import GzipCodec, ZstdCodec
from zarrfast.kernels import encode as _encode
from zarrfast.storage import LocalStore, MemoryStore

pytestmark = [pytest.mark.skipif(_encode.ChunkEncoder is None,
                                 reason="the batched encoder is not compiled"),
              pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr")]


def _chunks(path):
    """Every stored chunk file below ``path`` (key -> bytes)."""
    store = LocalStore(path)
    return {k: bytes(store.get(k)) for k in store.list() if not k.endswith((".json", "zarray",
                                                                           "zattrs"))}


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64)
    return (x % 5000).astype(dtype).reshape(shape)


def _unstamped(blob, gzip):
    """A gzip member without its modification time (numcodecs writes the time)."""
    return blob[:4] + blob[8:] if gzip else blob


COMPRESSORS = {
    "zstd": lambda: ZstdCodec(level=3),
    "zstd-checksum": lambda: ZstdCodec(level=5, checksum=True),
    "gzip": lambda: GzipCodec(level=1),
    "numcodecs.zstd": lambda: zarrfast.codecs.numcodecs.Zstd(level=1),
    "numcodecs.zlib": lambda: zarrfast.codecs.numcodecs.Zlib(level=6),
}


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("name", sorted(COMPRESSORS))
@pytest.mark.parametrize("threads", [1, 2])
def test_batched_bytes_are_the_per_chunk_bytes_and_zarr_python_reads_them(tmp_path, name,
                                                                          endian, threads):
    import zarr

    shape, chunks = (37, 40, 24), (8, 16, 8)  # edge chunks on two dimensions
    x = _values(shape, "<u2")
    kwargs = dict(shape=shape, chunks=chunks, dtype="uint16",
                  compressors=[COMPRESSORS[name]()],
                  serializer=zarrfast.codecs.BytesCodec(endian))
    fast = zarrfast.create_array(str(tmp_path / "fast.zarr"), **kwargs)
    assert fast._chain.encode_settings is not None
    slow = zarrfast.create_array(str(tmp_path / "slow.zarr"), **kwargs)
    slow._chain.encode_settings = None  # the per-chunk path: the codec's encode
    with config.set(threads=threads):
        fast[...] = x
        slow[...] = x
    got, want = _chunks(str(tmp_path / "fast.zarr")), _chunks(str(tmp_path / "slow.zarr"))
    assert sorted(got) == sorted(want) and len(got) == 5 * 3 * 3
    gzip = name == "gzip"
    for key in got:
        assert _unstamped(got[key], gzip) == _unstamped(want[key], gzip), key
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...],
                                  x)
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "fast.zarr"))[...], x)


@pytest.mark.parametrize("compressor", [{"id": "zstd", "level": 1},
                                        {"id": "gzip", "level": 5},
                                        {"id": "zlib", "level": 1}])
@pytest.mark.parametrize("order", ["C", "F"])
def test_zarr_v2_compressors_are_batched_and_read_back_by_zarr_python(tmp_path, compressor,
                                                                     order):
    import zarr

    x = _values((30, 64), ">i4", seed=2)
    path = str(tmp_path / "v2.zarr")
    a = zarrfast.create_array(path, shape=x.shape, chunks=(10, 16), dtype=">i4",
                              zarr_format=2, compressors=compressor, order=order)
    assert a._chain.encode_settings is not None
    a[...] = x
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], x)
    codec = numcodecs.get_codec(compressor)
    for key, blob in _chunks(path).items():
        i, j = (int(c) for c in key.split("."))
        block = x[i * 10:(i + 1) * 10, j * 16:(j + 1) * 16]
        want = np.asarray(block, order=order).tobytes(order="A")
        assert codec.decode(blob) == want, key


def test_a_whole_zstd_write_calls_no_codec_encode(tmp_path, monkeypatch):
    calls = []
    for cls in (numcodecs.Zstd, numcodecs.GZip, numcodecs.Zlib):
        real = cls.encode

        def counting(self, buf, real=real):
            calls.append(type(self).__name__)
            return real(self, buf)

        monkeypatch.setattr(cls, "encode", counting)
    x = _values((128, 128, 128), "<u2")
    for comp in (ZstdCodec(level=1), GzipCodec(level=1)):
        a = zarrfast.create_array(str(tmp_path / f"{comp.name}.zarr"), shape=x.shape,
                                  chunks=(32, 32, 32), dtype="<u2", compressors=[comp])
        with config.set(threads=1):
            a[...] = x
        assert calls == [], comp  # 64 whole chunks, each encoded by the kernel
        assert len(_chunks(str(tmp_path / f"{comp.name}.zarr"))) == 64
        np.testing.assert_array_equal(a[...], x)
    a[0:5, 0:5, 0:5] = 1  # a partial chunk: the codec's encode, as before
    assert calls == ["GZip"]


def test_fill_chunks_are_skipped_and_partial_writes_keep_the_per_chunk_path(tmp_path):
    shape, chunks = (64, 48), (16, 16)
    x = _values(shape, "<i4", seed=3)
    x[16:32, 16:32] = 7  # one chunk equal to the fill value
    kwargs = dict(shape=shape, chunks=chunks, dtype="<i4", fill_value=7,
                  compressors=[ZstdCodec(level=1)])
    fast = zarrfast.create_array(str(tmp_path / "fast.zarr"), **kwargs)
    slow = zarrfast.create_array(MemoryStore(), **kwargs)  # (no copies_values: per chunk)
    fast[...] = x
    slow[...] = x
    got = _chunks(str(tmp_path / "fast.zarr"))
    assert "c/1/1" not in got and len(got) == 4 * 3 - 1
    for key, value in got.items():
        assert value == bytes(slow.store.get(key)), key
    full = zarrfast.create_array(str(tmp_path / "full.zarr"), config={"write_empty_chunks": True},
                                 **kwargs)
    full[...] = x
    assert "c/1/1" in _chunks(str(tmp_path / "full.zarr"))
    y = x.copy()
    fast[0:16, 0:16] = 7  # a whole chunk of the fill value: deleted
    y[0:16, 0:16] = 7
    assert "c/0/0" not in _chunks(str(tmp_path / "fast.zarr"))
    fast[3:29, 5:40] = 11  # scalar: partial and whole chunks
    y[3:29, 5:40] = 11
    fast[::3, 1:17] = x[::3, 1:17] + 1
    y[::3, 1:17] = x[::3, 1:17] + 1
    fast[16:48, 16:48] = x[:32, :32]  # whole chunks from a shifted source
    y[16:48, 16:48] = x[:32, :32]
    np.testing.assert_array_equal(fast[...], y)


@pytest.mark.parametrize("level", [0, 1, 9])
def test_gzip_level_0_keeps_the_codec_and_the_others_are_batched(tmp_path, level):
    # (level 0's stored blocks follow the sizes of Python's output buffers: left to it)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(8,), chunks=(4,),
                              dtype="u1", compressors=[GzipCodec(level=level)])
    assert (a._chain.encode_settings is None) == (level == 0)
    a[...] = np.arange(8, dtype="u1")
    for key, blob in _chunks(str(tmp_path / "a.zarr")).items():
        block = np.arange(8, dtype="u1")[4 * int(key[-1]):][:4]
        assert _unstamped(blob, True) == _unstamped(
            bytes(numcodecs.GZip(level=level).encode(block)), True)


def test_a_library_failure_in_the_batched_kernel_is_a_codec_error(tmp_path, monkeypatch):
    from zarrfast.errors import CodecError

    class Failing:
        codec = "zstd"

        def slot(self, nbytes):
            return nbytes + 64

        def compress_regions(self, *args):
            raise RuntimeError("ChunkEncoder.compress_regions: zstd failed on chunk 0")

    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(16, 16), chunks=(8, 8),
                              dtype="<u2", compressors=[ZstdCodec(level=1)])
    monkeypatch.setattr(a._chain, "chunk_encoder", Failing)
    with pytest.raises(CodecError, match="zstd: cannot compress chunks of 128 bytes"):
        a[...] = _values((16, 16), "<u2")


def test_a_codec_subclass_with_its_own_encode_is_not_batched():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Mine(ZstdCodec):
        def encode(self, data):
            return super().encode(data)

    a = zarrfast.create_array({}, shape=(8,), chunks=(4,), dtype="u1", compressors=[Mine()])
    assert a._chain.encode_settings is None
    b = zarrfast.create_array({}, shape=(8,), chunks=(4,), dtype="u1",
                              compressors=[ZstdCodec(level=2, checksum=True)])
    assert b._chain.encode_settings == ("zstd", 2, True)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whole_writes_read_back_and_decode_with_numcodecs(tmp_path_factory, data):
    ndim = data.draw(st.integers(1, 3))
    chunks = tuple(data.draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    shape = tuple(c * data.draw(st.integers(1, 3)) + data.draw(st.integers(0, c - 1))
                  for c in chunks)
    dtype = data.draw(st.sampled_from(["u1", "<i2", ">i2", "<f4", ">f8", "<u8"]))
    which = data.draw(st.sampled_from(["zstd", "gzip"]))
    level = data.draw(st.integers(-2, 7) if which == "zstd" else st.integers(1, 9))
    comp = ZstdCodec(level=level) if which == "zstd" else GzipCodec(level=level)
    endian = "big" if dtype.startswith(">") else "little"
    perm = tuple(data.draw(st.permutations(range(ndim))))
    codecs_ = ([zarrfast.codecs.TransposeCodec(order=perm)] if ndim > 1 else [])
    path = str(tmp_path_factory.mktemp("w") / "a.zarr")
    x = _values(shape, dtype.replace(">", "<"), seed=data.draw(st.integers(0, 99)))
    a = zarrfast.create_array(path, shape=shape, chunks=chunks, dtype=dtype, filters=codecs_,
                              serializer=zarrfast.codecs.BytesCodec(endian), compressors=[comp],
                              fill_value=0)
    assert a._chain.encode_settings is not None
    a[...] = x
    np.testing.assert_array_equal(zarrfast.open_array(path)[...], x)
    ref = numcodecs.Zstd() if which == "zstd" else numcodecs.GZip()
    stored = dtype.replace("<", "").replace(">", "")
    for key, blob in _chunks(path).items():
        idx = [int(c) for c in key.split("/")[1:]]
        block = np.zeros(chunks, dtype=stored)
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape,
                                                                      strict=True))
        block[tuple(slice(0, s.stop - s.start) for s in sl)] = x[sl]
        want = block.transpose(perm).astype(np.dtype(stored).newbyteorder(
            "<" if endian == "little" else ">"))
        assert ref.decode(blob) == want.tobytes(), key


@pytest.mark.parametrize("compressor", ["zstd", "gzip"])
def test_inner_chunks_of_whole_shards_are_batched(tmp_path, monkeypatch, compressor):
    import zarr

    comp = ZstdCodec(level=1) if compressor == "zstd" else GzipCodec(level=1)
    shape = (48, 40)  # shards of 16 x 16 (4 x 4 inner chunks), edge shards on both dims
    x = _values(shape, "<u2", seed=4)
    x[0:4, 0:4] = 0  # an inner chunk of the fill value: left out of its shard
    kwargs = dict(shape=shape, chunks=(4, 4), shards=(16, 16), dtype="<u2",
                  compressors=[comp], fill_value=0)
    fast = zarrfast.create_array(str(tmp_path / "fast.zarr"), **kwargs)
    assert fast._chain.inner.encode_settings is not None
    slow = zarrfast.create_array(str(tmp_path / "slow.zarr"), **kwargs)
    slow._chain.inner.encode_settings = None  # each inner chunk by the codec's encode
    calls = []
    real = type(comp._impl).encode

    def counting(self, buf):
        calls.append(1)
        return real(self, buf)

    monkeypatch.setattr(type(comp._impl), "encode", counting)
    slow[...] = x
    assert len(calls) == 12 * 10 - 1  # every inner chunk but the fill one
    calls.clear()
    fast[...] = x  # (the edge shards' inner chunks end at the array's edge: whole too)
    assert calls == []
    got, want = _chunks(str(tmp_path / "fast.zarr")), _chunks(str(tmp_path / "slow.zarr"))
    assert sorted(got) == sorted(want) and len(got) == 3 * 3
    for key in got:
        if compressor == "gzip":  # (the inner chunks' modification times: compared apart)
            assert len(got[key]) == len(want[key]), key
        else:
            assert got[key] == want[key], key
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...],
                                  x)
    y = x.copy()
    fast[5:37, 3:19] = x[:32, :16] + 1  # partial shards: read, changed, written back
    y[5:37, 3:19] = x[:32, :16] + 1
    fast[16:32, 16:32] = 0  # a whole shard of the fill value: deleted
    y[16:32, 16:32] = 0
    np.testing.assert_array_equal(fast[...], y)
    assert "c/1/1" not in _chunks(str(tmp_path / "fast.zarr"))


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_shards_of_inner_chunks_of_many_rows_are_numcodecs_bytes(tmp_path, endian, transpose,
                                                                 threads):
    # inner chunks of 48 rows of 32 bytes (more rows than the gather copy prefetches
    # ahead), a shard's row of 2 inner chunks gathered at a time out of rows of 6; edge
    # shards on every dimension (whole inner chunks at the array's end, partial ones
    # past it), a byte swap or a transpose (the general copy); every shard is the one
    # the per-chunk path (numcodecs' Zstd on each inner chunk) assembles, and
    # zarr-python reads it back
    import zarr

    shape, chunks, shards = (7, 48 * 3 + 5, 96), (2, 24, 16), (4, 48, 32)
    x = _values(shape, "<u2", seed=9)
    kwargs = dict(shape=shape, chunks=chunks, shards=shards, dtype="<u2",
                  compressors=[ZstdCodec(level=1)],
                  serializer=zarrfast.codecs.BytesCodec(endian),
                  filters=[zarrfast.codecs.TransposeCodec(order=(2, 0, 1))] if transpose
                  else ())
    fast = zarrfast.create_array(str(tmp_path / "fast.zarr"), **kwargs)
    assert fast._chain.inner.encode_settings is not None
    slow = zarrfast.create_array(str(tmp_path / "slow.zarr"), **kwargs)
    slow._chain.inner.encode_settings = None  # each inner chunk by numcodecs' Zstd
    with config.set(threads=threads):
        fast[...] = x
        slow[...] = x
    got, want = _chunks(str(tmp_path / "fast.zarr")), _chunks(str(tmp_path / "slow.zarr"))
    assert sorted(got) == sorted(want) and len(got) == 2 * 4 * 3
    for key in got:
        assert got[key] == want[key], key
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...],
                                  x)
    y = x.copy()
    with config.set(threads=threads):
        fast[1:6, 30:100, 5:90] = x[1:6, 30:100, 5:90] + 1  # partial shards and chunks
    y[1:6, 30:100, 5:90] += 1
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...],
                                  y)
