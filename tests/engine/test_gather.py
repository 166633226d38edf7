"""Integer gathers (``oindex`` with index arrays, ``vindex``) read in waves of whole
chunks (``engine.fancy._gather_orthogonal`` / ``_gather_points``), against NumPy.

Hypothesis draws the array (rank 1 to 3, odd shapes and chunkings, zstd, uncompressed,
transposed big-endian or sharded, some chunks never written), the store (a local
directory: batched file reads and whole-shard kernels; or memory), the indices (sorted or
not, repeated, negative, along every dimension) and the wave size (down to one chunk, so
that a gather takes many waves), with one or two threads.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, TransposeCodec
from zarrfast.engine import fancy
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import zstd_prefix

#: the tests of the prefix decoders (off in pure-Python mode)
needs_prefix = pytest.mark.skipif(not zstd_prefix.available,
                                  reason="zstd_prefix has no zstd library to bind")

FILL = 30013  # (no written element equals it: they are below 30011)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
KINDS = ("zstd", "raw", "transpose", "transpose_be", "sharded", "sharded_raw")


@st.composite
def arrays(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 30 if ndim < 3 else 9)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n + 2)) for n in shape)
    kind = draw(st.sampled_from(KINDS))
    shards = (tuple(c * draw(st.integers(1, 3)) for c in chunks)
              if kind.startswith("sharded") else None)
    dtype = draw(st.sampled_from(["<i4", "<f8", "<u2"]))
    # rows past `rows` are never written: their chunks (or inner chunks) are missing
    rows = draw(st.integers(0, shape[0]))
    local = draw(st.booleans())
    return kind, shape, chunks, shards, dtype, rows, local


def build(spec, root):
    kind, shape, chunks, shards, dtype, rows, local = spec
    kw = dict(shape=shape, chunks=chunks, shards=shards, dtype=dtype, fill_value=FILL)
    if kind in ("raw", "sharded_raw"):
        kw["compressors"] = None
    elif kind in ("transpose", "transpose_be"):
        kw["filters"] = [TransposeCodec(order=tuple(reversed(range(len(shape)))))]
        kw["serializer"] = BytesCodec(endian="big" if kind == "transpose_be" else "little")
    else:
        kw["compressors"] = {"name": "zstd", "configuration": {"level": 1}}
    a = zarrfast.create_array(root if local else zarrfast.MemoryStore(), **kw)
    x = np.full(shape, FILL, dtype=dtype)
    x[:rows] = (np.arange(math.prod(shape)).reshape(shape)[:rows] % 30011).astype(dtype)
    if rows:
        a[:rows] = x[:rows]
    return a, x


@st.composite
def indices(draw, n: int, max_size: int = 60):
    """Indices into a dimension of length ``n``: any order, repeats, negatives; or
    sorted; or a slice."""
    how = draw(st.sampled_from(["any", "sorted", "slice"]))
    if how == "slice":
        start = draw(st.integers(0, n - 1))
        return slice(start, draw(st.integers(start + 1, n)), draw(st.sampled_from([1, 2])))
    vals = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=max_size))
    idx = np.array(vals, dtype=draw(st.sampled_from([np.int64, np.int32, np.intp])))
    if how == "sorted":
        idx = np.sort(np.where(idx < 0, idx + n, idx))
    return idx


def poison_scratch(monkeypatch):
    """Fill every scratch buffer a gather takes with junk first: bytes a wave leaves
    undefined (past the prefix it decoded, past the array's edge) are never read."""
    real = fancy._scratch

    def poisoned(nbytes, where):
        buf = real(nbytes, where)
        buf[:] = 0xA5
        return buf

    monkeypatch.setattr(fancy, "_scratch", poisoned)


def spy_streams(monkeypatch, calls, what):
    """Append ``what(coords, need)`` to ``calls`` for each gather line read streamed
    (``_stream_prefixes``: local zstd chunks decoded part by part, no waves)."""
    real = fancy._stream_prefixes

    def counting(array, chain, coords, need, *rest):
        done = real(array, chain, coords, need, *rest)
        if done:
            calls.append(what(coords, need))
        return done

    monkeypatch.setattr(fancy, "_stream_prefixes", counting)


def spy_waves(monkeypatch):
    """Count the chunks each wave ``_read_chunks`` reads, or each streamed line (so a
    test knows it took a gather's path)."""
    poison_scratch(monkeypatch)
    calls = []
    real = fancy._read_chunks

    def counting(array, chain, coords, dtype, *rest):
        calls.append(len(coords))
        return real(array, chain, coords, dtype, *rest)

    monkeypatch.setattr(fancy, "_read_chunks", counting)
    spy_streams(monkeypatch, calls, lambda coords, need: len(coords))
    return calls


@SETTINGS
@given(spec=arrays(), data=st.data())
def test_orthogonal_gathers_match_numpy(spec, data) -> None:
    with tempfile.TemporaryDirectory() as root, pytest.MonkeyPatch.context() as mp:
        a, x = build(spec, root)
        sel = tuple(data.draw(indices(n)) for n in x.shape)
        if not any(isinstance(s, np.ndarray) for s in sel):
            sel = (np.array([x.shape[0] - 1, 0, -1]),) + sel[1:]
        # waves of one chunk up to all of them
        nb = math.prod(a.chunks) * x.dtype.itemsize
        mp.setattr(fancy, "GATHER_WAVE_BYTES", nb * data.draw(st.integers(1, 4)))
        # (zstd blocks of 16 bytes: the prefix decoders pay for chunks this small)
        mp.setattr(fancy, "ZSTD_BLOCK", data.draw(st.sampled_from([16, 2**17])))
        waves = spy_waves(mp)
        with config.set(threads=data.draw(st.sampled_from([1, 2]))):
            got = a.oindex[sel]
        want = x[np.ix_(*(np.arange(n)[s] for s, n in zip(sel, x.shape, strict=True)))]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert waves, "the gather did not read chunks in waves"


@SETTINGS
@given(spec=arrays(), data=st.data())
def test_coordinate_gathers_match_numpy(spec, data) -> None:
    with tempfile.TemporaryDirectory() as root, pytest.MonkeyPatch.context() as mp:
        a, x = build(spec, root)
        shape = data.draw(st.sampled_from([(40,), (5, 7), (0,)]))
        sel = tuple(
            np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=math.prod(shape),
                                        max_size=math.prod(shape))),
                     dtype=np.int64).reshape(shape)
            for n in x.shape)
        nb = math.prod(a.chunks) * x.dtype.itemsize
        mp.setattr(fancy, "GATHER_WAVE_BYTES", nb * data.draw(st.integers(1, 4)))
        mp.setattr(fancy, "ZSTD_BLOCK", data.draw(st.sampled_from([16, 2**17])))
        waves = spy_waves(mp)
        with config.set(threads=data.draw(st.sampled_from([1, 2]))):
            got = a.vindex[sel]
        want = x[sel]
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert waves or not want.size


@pytest.mark.parametrize("shards", [None, (1000, 16)])
@pytest.mark.parametrize("order", ["sorted", "unsorted"])
def test_thousands_of_rows_in_waves(tmp_path, monkeypatch, shards, order) -> None:
    """2,000 random rows (repeats and negatives among them) of a (20,000, 16) zstd array:
    the touched chunks are read a wave at a time (never one basic read per chunk, as
    sharded arrays did), each wave of at most GATHER_WAVE_BYTES of chunks."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 1000, size=(20_000, 16)).astype("<f4")
    a = zarrfast.create_array(str(tmp_path), shape=x.shape, chunks=(100, 16), shards=shards,
                              dtype="<f4")
    a[:] = x
    a = zarrfast.open_array(str(tmp_path), mode="r")
    rows = rng.integers(-20_000, 20_000, 2_000)
    if order == "sorted":
        rows = np.sort(rows % 20_000)
    monkeypatch.setattr(fancy, "GATHER_WAVE_BYTES", 20 * 100 * 16 * 4)  # 20 chunks
    waves = spy_waves(monkeypatch)
    basic = []
    real = fancy.FancyTarget.__init__

    def target(self, *args, **kw):
        real(self, *args, **kw)
        get = self.get_basic_selection
        object.__setattr__(self, "get_basic_selection",
                           lambda *a_, **k_: basic.append(a_) or get(*a_, **k_))

    monkeypatch.setattr(fancy.FancyTarget, "__init__", target)
    for threads in (1, 2):
        waves.clear()
        with config.set(threads=threads):
            np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
            np.testing.assert_array_equal(a.oindex[rows, [3, -1, 3]], x[rows][:, [3, -1, 3]])
            cols = rng.integers(0, 16, rows.size)
            np.testing.assert_array_equal(a.vindex[rows, cols], x[rows, cols])
        assert waves and max(waves) <= 20
        touched = np.unique((rows % 20_000) // 100).size
        assert sum(waves) == 3 * touched  # each touched chunk read once per gather
    assert not basic


def test_gather_wave_scratch_is_reused(tmp_path) -> None:
    """Consecutive gathers of one thread decode into the same scratch buffer (no fresh
    pages per gather); the results do not share it."""
    x = np.arange(4000, dtype="<i4").reshape(1000, 4)
    a = zarrfast.create_array(str(tmp_path), shape=x.shape, chunks=(10, 4), dtype="<i4")
    a[:] = x
    first = a.oindex[[5, 500, 999], :]
    buf = fancy._gather_scratch.buf
    second = a.oindex[[6, 7], :]
    assert fancy._gather_scratch.buf is buf
    assert not np.shares_memory(first, buf) and not np.shares_memory(second, buf)
    np.testing.assert_array_equal(first, x[[5, 500, 999]])
    np.testing.assert_array_equal(second, x[[6, 7]])


# -- zstd chunks decoded only up to the last byte a wave needs ---------------------------


def prefix_array(root, shape=(4000, 8), chunks=(1000, 8), **kw):
    x = (np.arange(math.prod(shape)) % 30011).astype("<i4").reshape(shape)
    a = zarrfast.create_array(root, shape=shape, chunks=chunks, dtype="<i4", fill_value=FILL,
                              compressors={"name": "zstd", "configuration": {"level": 1}},
                              **kw)
    a[:] = x
    return a, x


def spy_prefixes(monkeypatch):
    """The bytes of each chunk decoded by the prefix decoders (of chunks and of inner
    chunks of shards), one array per wave.  (zstd blocks taken to be 64 bytes: the
    prefix decoders then pay for these small chunks.)"""
    poison_scratch(monkeypatch)
    monkeypatch.setattr(fancy, "ZSTD_BLOCK", 64)
    calls = []

    def spy(real):
        def counting(array, chain, coords, need, *rest):
            calls.append(need.copy())
            return real(array, chain, coords, need, *rest)
        return counting

    for name in ("_read_prefixes", "_read_shard_prefixes"):
        monkeypatch.setattr(fancy, name, spy(getattr(fancy, name)))
    spy_streams(monkeypatch, calls, lambda coords, need: need.copy())
    return calls


@needs_prefix
@pytest.mark.parametrize("shards", [None, (2000, 8)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_prefixes_of_zstd_chunks(tmp_path, monkeypatch, order, shards) -> None:
    """Rows in the first part of each chunk: each chunk (or inner chunk of a shard) is
    decoded up to the byte after the last element selected in it (its layout's: a
    transposed chunk's last element may be far into it), and only that far is read."""
    kw = {"filters": [TransposeCodec(order=(1, 0))]} if order == "F" else {}
    a, x = prefix_array(str(tmp_path), shards=shards, **kw)
    calls = spy_prefixes(monkeypatch)
    rows = np.array([2100, 5, 3001, 3000, -999, 9, 2101])
    got = a.oindex[rows, 2:5]
    np.testing.assert_array_equal(got, x[rows, 2:5])
    assert len(calls) == 1
    # chunks 0, 2 and 3: last rows 9, 101 and 1; columns up to 4
    if order == "C":
        want = [(9 * 8 + 4 + 1) * 4, (101 * 8 + 4 + 1) * 4, (1 * 8 + 4 + 1) * 4]
    else:  # (stored (8, 1000): element (r, c) at c * 1000 + r)
        want = [(4 * 1000 + 9 + 1) * 4, (4 * 1000 + 101 + 1) * 4, (4 * 1000 + 1 + 1) * 4]
    assert calls[0].tolist() == want
    pts = (np.array([3, 2999, 7, 3001]), np.array([7, 0, -1, 1]))
    np.testing.assert_array_equal(a.vindex[pts], x[pts])
    assert len(calls) == 2


@needs_prefix
def test_prefixes_of_shards_missing_and_corrupt(tmp_path, monkeypatch) -> None:
    """Inner chunks of shards: a missing shard and an inner chunk not stored read as the
    fill value; a corrupt inner chunk is refused naming the shard and the inner chunk."""
    a, x = prefix_array(str(tmp_path), shape=(6000, 8), shards=(2000, 8))
    (tmp_path / "c" / "1" / "0").unlink()  # rows 2000..3999
    a[4000:5000] = FILL  # (an inner chunk of the fill value: not stored)
    x[2000:5000] = FILL
    calls = spy_prefixes(monkeypatch)
    rows = np.array([3, 2004, 3001, 4005, 5002, 5003, 1006])
    for threads in (1, 2):
        with config.set(threads=threads):
            np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
            np.testing.assert_array_equal(a.vindex[rows, rows % 8], x[rows, rows % 8])
    assert len(calls) == 4
    shard = tmp_path / "c" / "2" / "0"
    data = bytearray(shard.read_bytes())
    data[40:400] = bytes(360)  # (the second inner chunk's bytes start past the first's)
    shard.write_bytes(bytes(data))
    with pytest.raises(zarrfast.errors.ChunkDecodeError, match=r"c/2/0.*inner chunk"):
        a.oindex[rows, :]


@needs_prefix
def test_prefixes_missing_corrupt_and_unsized_chunks(tmp_path, monkeypatch) -> None:
    """A missing chunk reads as the fill value; a frame without a content size is decoded
    whole; a corrupt one is refused naming its key."""
    import zstandard

    a, x = prefix_array(str(tmp_path))
    (tmp_path / "c" / "1" / "0").unlink()
    x[1000:2000] = FILL
    raw = x[2000:3000].tobytes()
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    (tmp_path / "c" / "2" / "0").write_bytes(unsized)
    calls = spy_prefixes(monkeypatch)
    rows = np.array([1, 1002, 2003, 3004])
    for threads in (1, 2):
        with config.set(threads=threads):
            np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
    assert len(calls) == 2
    good = (tmp_path / "c" / "3" / "0").read_bytes()
    (tmp_path / "c" / "3" / "0").write_bytes(good[:20] + bytes(len(good) - 20))
    with pytest.raises(zarrfast.errors.ChunkDecodeError, match="c/3/0"):
        a.oindex[rows, :]


@needs_prefix
def test_decode_prefixes_checks_ranges() -> None:
    """A frame is decoded block by block into its own ``nbytes`` of ``dst``, at least up
    to the bytes asked for (here all: one block); nothing outside is touched, a frame
    of another size fails, and ranges outside ``src`` or ``dst`` are refused."""
    import numcodecs

    data = np.arange(1000, dtype="<i4").tobytes()
    frame = np.frombuffer(numcodecs.Zstd().encode(data), dtype=np.uint8)
    dst = np.zeros(8000, dtype=np.uint8)
    one = np.zeros(1, dtype=np.int64)
    size = np.array([frame.size])
    at = np.array([2000])
    status = zstd_prefix.decode_prefixes(frame, one, size, dst, at, np.array([40]), 4000)
    assert status.tolist() == [zstd_prefix.DECODED]
    assert bytes(dst[2000:2040]) == data[:40]
    assert not dst[:2000].any() and not dst[6000:].any()
    for other in (3999, 4001):  # (the frame holds 4000 bytes: a chunk of another size)
        status = zstd_prefix.decode_prefixes(frame, one, size, dst, at, np.array([40]),
                                             other)
        assert status.tolist() == [zstd_prefix.FAILED]
    cut = frame[:frame.size - 7]  # (a frame cut short: its block lies past the end)
    status = zstd_prefix.decode_prefixes(cut, one, np.array([cut.size]), dst, at,
                                         np.array([40]), 4000)
    assert status.tolist() == [zstd_prefix.FAILED]
    # a byte just past a block (of 128 KiB) needs the next block too
    big = np.random.default_rng(0).integers(0, 50, 2**18, dtype=np.uint8).tobytes()
    frame2 = np.frombuffer(numcodecs.Zstd().encode(big), dtype=np.uint8)
    dst2 = np.full(2**18, 0xA5, dtype=np.uint8)
    need = 2**17 + 1
    status = zstd_prefix.decode_prefixes(frame2, one, np.array([frame2.size]), dst2, one,
                                         np.array([need]), 2**18)
    assert status.tolist() == [zstd_prefix.DECODED]
    assert bytes(dst2[:need]) == big[:need]
    for bad in (dict(dst_off=np.array([4001]), need=np.array([40])),
                dict(dst_off=one, need=np.array([4001])),
                dict(dst_off=one, need=np.array([40]), src_size=size + 1)):
        with pytest.raises(ValueError, match="outside"):
            zstd_prefix.decode_prefixes(frame, one, bad.get("src_size", size), dst,
                                        bad["dst_off"], bad["need"], 4000)


@needs_prefix
def test_prefixes_only_where_they_pay(tmp_path, monkeypatch) -> None:
    """zstd decodes a block (up to 128 KiB) at a time: chunks of 500 KiB whose selected
    rows lie in their first quarter are decoded up to there; rows in their last block
    (rows 1536 on: no saving, though they are 77% of the way in) take the batched
    whole-chunk path."""
    a, x = prefix_array(str(tmp_path), shape=(8000, 64), chunks=(2000, 64))
    calls = []
    real = fancy._read_prefixes
    monkeypatch.setattr(fancy, "_read_prefixes", lambda *args: calls.append(1) or real(*args))
    spy_streams(monkeypatch, calls, lambda coords, need: 1)
    early = np.array([5, 2100, 4011, 6400])
    np.testing.assert_array_equal(a.oindex[early, :], x[early])
    assert calls == [1]
    late = np.array([1540, 3540, 5540, 7540])
    np.testing.assert_array_equal(a.oindex[late, :], x[late])
    assert calls == [1]


@pytest.mark.parametrize("shards", [None, (4000, 64)])
def test_gathers_from_many_threads_at_once(tmp_path, shards) -> None:
    """Threads gathering from one array at once each get their own rows: every thread
    decodes into scratch buffers of its own."""
    import threading

    a, x = prefix_array(str(tmp_path), shape=(8000, 64), chunks=(2000, 64), shards=shards)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            start.wait()
            for _ in range(15):
                rows = rng.integers(0, 8000, 40)
                if seed % 2:
                    # rows early in their chunks: the prefix decoders
                    rows = np.sort(rows // 2000 * 2000 + rows % 400)
                got = a.oindex[rows, :] if seed < 2 else a.vindex[rows, rows % 64]
                want = x[rows, :] if seed < 2 else x[rows, rows % 64]
                np.testing.assert_array_equal(got, want)
        except BaseException as e:  # (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    with config.set(threads=2):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]


@needs_prefix
@pytest.mark.parametrize("shards", [None, (4000, 64)])
def test_prefix_needs_follow_their_chunks(tmp_path, monkeypatch, shards) -> None:
    """Chunks of 500 KiB (four zstd blocks), most needed only in their first block, two
    to their last: each decoded as far as its own rows need, in parts of a few chunks
    (threads take them in turn) -- a chunk given another's need reads junk."""
    a, x = prefix_array(str(tmp_path), shape=(24_000, 64), chunks=(2000, 64),
                        shards=shards)
    calls = spy_prefixes(monkeypatch)
    monkeypatch.setattr(fancy, "ZSTD_BLOCK", 128 * 2**10)  # (zstd's own)
    rows = np.array([5, 2010, 4003, 6100, 8002, 11_900, 12_001, 14_002, 16_003, 19_950])
    for threads in (1, 2):
        with config.set(threads=threads):
            np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
            np.testing.assert_array_equal(a.vindex[rows, rows % 64], x[rows, rows % 64])
    assert len(calls) == 4


@pytest.mark.parametrize("damage", ["cut", "junk"])
def test_a_gather_refuses_a_damaged_chunk_whose_first_rows_would_decode(tmp_path, damage):
    """A zstd chunk cut short after its first block, or followed by other bytes, is
    refused by a gather of its first rows (decoded only up to them), naming its key, as
    a basic read refuses it; before, the rows of its intact first block read as data."""
    a = zarrfast.create_array(tmp_path / "a.zarr", shape=(4096, 128), chunks=(2048, 128),
                              dtype="f4", compressors=zarrfast.codecs.ZstdCodec(level=1))
    data = np.random.default_rng(0).random((4096, 128), dtype="f4")
    a[:] = data
    path = tmp_path / "a.zarr" / "c" / "0" / "0"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "cut" else raw + b"\x00" * 16)
    b = zarrfast.open_array(tmp_path / "a.zarr", mode="r")
    for read in (lambda: b.oindex[[0, 1, 2, 3], :], lambda: b.vindex[[0, 3], [1, 2]],
                 lambda: b[0:4]):
        with pytest.raises(ChunkDecodeError, match="c/0/0"):
            read()
    assert np.array_equal(b.oindex[[2048, 2051], :], data[[2048, 2051]])  # (the other chunk)
