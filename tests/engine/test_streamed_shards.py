"""Whole shards of zstd inner chunks read from a real nginx are streamed: their inner
chunks are guessed from the zstd frames as the bytes arrive and decoded while the rest
arrives (``ShardRowsRead.fetch_streamed``), then checked against the shard's index.
The values are NumPy's whether the guess holds (chunks in write order), fails (chunks
stored in another order, inner chunks not stored) or meets damage; a damaged index or
inner chunk is refused naming the shard; a shard replaced between two reads reads
whole-new; each shard costs one request.  ``zstd_frame_size`` walks zstd frames as
the zstd library made them."""

from __future__ import annotations

import os

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, ShardingCodec
from zarrfast.codecs.shard_format import EMPTY
from zarrfast.engine import shard_read
from zarrfast.errors import ChecksumError, ChunkDecodeError

#: 4 shards of 32 inner chunks of (64, 64) float32 (16 KiB): ~0.5 MiB per shard, read
#: in several pieces (``STREAM_PIECE``: 256 KiB)
SHAPE, SHARDS, CHUNKS = (1024, 512), (512, 256), (64, 64)
N_INNER = 32
FILL = -1.5


def _values() -> np.ndarray:
    return np.random.default_rng(60).random(SHAPE, dtype=np.float32)  # (~14 KiB a chunk)


def _shard(root, name: str, *coords: int):
    return root / f"{name}.zarr" / "c" / "/".join(map(str, coords))


def _reorder(root, name: str) -> None:
    """Shard (0, 0) of ``name`` rewritten with its inner chunks stored in reverse
    order (the same index entries, pointing elsewhere; a valid shard)."""
    fmt = zarrfast.open_array(str(root / f"{name}.zarr"), mode="r")._chain.layout
    path = _shard(root, name, 0, 0)
    data = path.read_bytes()
    index = fmt.index_of_shard(np.frombuffer(data, dtype=np.uint8), "c/0/0").copy()
    parts, new = [], index.copy()
    pos = 0
    for j in reversed(range(len(index))):
        off, nb = (int(x) for x in index[j])
        if index[j, 0] == EMPTY:
            continue
        parts.append(data[off:off + nb])
        new[j] = (pos, nb)
        pos += nb
    path.write_bytes(b"".join(parts) + fmt.encode_index(new))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """nginx serving ``plain``, ``morton`` (inner chunks in Z order), ``holes`` (a quarter of the values the fill value:
    inner chunks not stored), ``reordered`` (shard (0, 0)'s chunks in reverse order),
    ``bad_index`` and ``bad_chunk`` (a byte of shard (1, 0)'s index, or of an inner
    chunk's frame, changed) and ``swap`` (replaced by the tests)."""
    from _helpers.nginx import Nginx, nginx_path

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    root = tmp_path_factory.mktemp("www")
    data = _values()
    holes = data.copy()
    holes[64:192, 0:128] = FILL
    holes[300:364, 400:464] = FILL
    for name, values in (("plain", data), ("holes", holes), ("reordered", data),
                         ("bad_index", data), ("bad_chunk", data), ("swap", data)):
        a = zarrfast.create_array(str(root / f"{name}.zarr"), shape=SHAPE, dtype="f4",
                                  chunks=CHUNKS, shards=SHARDS, fill_value=FILL,
                                  compressors=[zarrfast.codecs.ZstdCodec(level=1)])
        a[...] = values
    _reorder(root, "reordered")
    codec = ShardingCodec(chunk_shape=CHUNKS, subchunk_write_order="morton",
                          codecs=[BytesCodec(), zarrfast.codecs.ZstdCodec(level=1)])
    zarrfast.create_array(str(root / "morton.zarr"), shape=SHAPE, dtype="f4", chunks=SHARDS,
                          serializer=codec, compressors=None, fill_value=FILL)[...] = data
    layout = zarrfast.open_array(str(root / "plain.zarr"), mode="r")._chain.layout
    for name in ("bad_index", "bad_chunk"):
        path = _shard(root, name, 1, 0)
        raw = bytearray(path.read_bytes())
        index = layout.index_of_shard(np.frombuffer(bytes(raw), dtype=np.uint8), "c/1/0")
        # a byte of the index, or the first of inner chunk 3's zstd frame (its magic)
        raw[-10 if name == "bad_index" else int(index[3, 0])] ^= 0x5A
        path.write_bytes(bytes(raw))
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, root, data, holes
    finally:
        server.stop()


@pytest.fixture
def guesses(monkeypatch):
    """Per streamed shard: how many of its inner chunks were placed while it arrived,
    as the index confirmed them (the real method, counted)."""
    counts: list[int] = []
    real = shard_read.ShardRowsRead.fetch_streamed

    def counted(self, g):
        real(self, g)
        counts.append(len(self.confirmed.get(g, ())))
    monkeypatch.setattr(shard_read.ShardRowsRead, "fetch_streamed", counted)
    return counts


def _open(server, name: str):
    a = zarrfast.open_array(server.url(f"{name}.zarr"), mode="r")
    assert a.store.streamed_reads  # (obstore's store, which streams)
    return a


def test_values_and_one_request_per_shard(site, guesses):
    server, _, data, _ = site
    with zarrfast.config.set({"threads": 2}):
        a = _open(server, "plain")
        server.clear_log()
        np.testing.assert_array_equal(a[...], data)
    shards = [r for r in server.requests() if r[1].startswith("plain.zarr/c/")]
    assert sorted(r[1] for r in shards) == [f"plain.zarr/c/{i}/{j}"
                                            for i in (0, 1) for j in (0, 1)]
    assert all(r[2] in ("", "-") for r in shards)  # (whole shards, no Range header)
    assert guesses == [N_INNER] * 4  # (every inner chunk placed while its shard arrived)


@pytest.mark.parametrize("name", ["holes", "reordered"])
def test_wrong_guesses_read_right(site, guesses, name):
    """Inner chunks not stored, or stored out of write order: the guesses that the
    index contradicts are placed again from it (the fill value where not stored)."""
    server, _, data, holes = site
    want = holes if name == "holes" else data
    with zarrfast.config.set({"threads": 2}):
        a = _open(server, name)
        np.testing.assert_array_equal(a[...], want)
        assert len(guesses) == 4 and min(guesses) < N_INNER  # (a guess went wrong)
        np.testing.assert_array_equal(a[10:1000, 3:300], want[10:1000, 3:300])


def test_z_order_learned(site, guesses):
    """Shards written in Z order (zarr-python's default since 3.1; the metadata does
    not say): the first read guesses index order (for the first shard guessed, at least)
    and reads right; the order found in a shard is then guessed for the next shards of
    the open array, whose guesses all hold."""
    server, _, data, _ = site
    with zarrfast.config.set({"threads": 2}):
        a = _open(server, "morton")
        np.testing.assert_array_equal(a[...], data)
        assert len(guesses) == 4 and min(guesses) < N_INNER  # (the first guess, at least)
        guesses.clear()
        np.testing.assert_array_equal(a[...], data)
        assert guesses == [N_INNER] * 4


def test_one_thread_reads_right(site, guesses):
    server, _, data, _ = site
    with zarrfast.config.set({"threads": 1}):
        np.testing.assert_array_equal(_open(server, "reordered")[...], data)
    assert guesses == []  # (one compute thread: shards read whole, then decoded)


def test_damaged_index_named(site):
    server, _, _, _ = site
    with zarrfast.config.set({"threads": 2}), pytest.raises(
            (ChunkDecodeError, ChecksumError), match=r"c/1/0"):
        _open(server, "bad_index")[...]


def test_damaged_chunk_named(site):
    server, _, _, _ = site
    with zarrfast.config.set({"threads": 2}), pytest.raises(
            ChunkDecodeError, match=r"shard 'c/1/0'.*inner chunk"):
        _open(server, "bad_chunk")[...]


def test_shard_replaced_between_reads(site, guesses):
    """A shard replaced by one of other values (and sizes) between two reads of one
    open array: the second read gives the new shard whole."""
    server, root, data, _ = site
    new = (data[::-1] + 3).astype(np.float32)
    other = root / "other.zarr"
    b = zarrfast.create_array(str(other), shape=SHAPE, dtype="f4", chunks=CHUNKS,
                              shards=SHARDS, fill_value=FILL,
                              compressors=[zarrfast.codecs.ZstdCodec(level=5)])
    b[...] = new
    with zarrfast.config.set({"threads": 2}):
        a = _open(server, "swap")
        np.testing.assert_array_equal(a[...], data)
        os.replace(_shard(root, "other", 0, 1), _shard(root, "swap", 0, 1))
        want = data.copy()
        want[:512, 256:] = new[:512, 256:]
        np.testing.assert_array_equal(a[...], want)


# -- the frame walker --------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=4),
       level=st.integers(-3, 9), checksum=st.booleans(), seed=st.integers(0, 2**32 - 1),
       spread=st.integers(1, 255))
def test_zstd_frame_size(sizes, level, checksum, seed, spread):
    """Frames of random bytes (raw, RLE and compressed blocks, one block or many,
    with and without a content checksum), back to back: each found at its size, none
    before all its bytes are there."""
    rng = np.random.default_rng(seed)
    codec = numcodecs.Zstd(level=level, checksum=checksum)
    frames = [bytes(codec.encode(rng.integers(0, spread + 1, n, dtype=np.uint8)))
              for n in sizes]
    blob = b"".join(frames)
    view = memoryview(blob)
    pos = 0
    for frame in frames:
        n = len(frame)
        assert shard_read.zstd_frame_size(view, pos, len(blob)) == n
        assert shard_read.zstd_frame_size(view, pos, pos + n) == n
        for cut in {0, 3, 5, n // 2, n - 1}:
            if 0 <= cut < n:
                assert shard_read.zstd_frame_size(view, pos, pos + cut) == 0
        pos += n


def test_zstd_frame_size_not_a_frame():
    view = memoryview(b"not a zstd frame at all")
    assert shard_read.zstd_frame_size(view, 0, len(view)) == -1
    skippable = memoryview(b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"abcd")
    assert shard_read.zstd_frame_size(skippable, 0, len(skippable)) == -1
    # a reserved block type (3) right after a frame header
    frame = bytearray(numcodecs.Zstd(level=1).encode(b"x" * 1000))
    header = 4 + 1 + 2  # magic, descriptor, a 2-byte content size (one segment)
    assert frame[4] == 0x60  # (the header assumed above)
    frame[header] |= 0x06
    assert shard_read.zstd_frame_size(memoryview(bytes(frame)), 0, len(frame)) == -1


def test_body_failing_midway_read_again(site, guesses):
    """A shard's body that fails after its first piece (the connection dropped: made
    here by the store's own failure for a body cut short, raised by the iterator once
    the real first piece is in) is read again whole, one more request, and the values
    are right (the rows the first body's guesses wrote are placed again)."""
    from zarrfast.storage import ObjectStore

    server, _, data, _ = site
    cut: list[str] = []

    class Dropping(ObjectStore):
        def get_streamed(self, key, limit):
            got = super().get_streamed(key, limit)
            if got is None or key != "c/1/1" or cut:
                return got
            size, pieces = got

            def first_then_fail():
                yield next(pieces)
                cut.append(key)
                pieces.close()
                raise self._failure("reading", key, ConnectionError("body cut short"),
                                    "fatal", 1, 0.0)
            return size, first_then_fail()

    store = Dropping.from_url(server.url("plain.zarr"), read_only=True)
    assert store.streamed_reads
    with zarrfast.config.set({"threads": 2}):
        a = zarrfast.open_array(store, mode="r")
        server.clear_log()
        np.testing.assert_array_equal(a[...], data)
    assert cut == ["c/1/1"]
    paths = [r[1] for r in server.requests()]
    assert paths.count("plain.zarr/c/1/1") == 2
    assert sorted(guesses) == [0] + [N_INNER] * 3  # (the dropped shard: none confirmed)


def test_reads_inside_pool_tasks_not_streamed(site, guesses):
    """Reads made by tasks of the engine's pool (both workers busy with them) read
    whole shards without streaming: a streamed shard's decodes would queue behind the
    tasks waiting for them."""
    from zarrfast.concurrency import map_unordered_into

    server, _, data, _ = site
    got: dict[int, np.ndarray] = {}
    with zarrfast.config.set({"threads": 2}):
        a = _open(server, "plain")

        def read(i: int) -> None:
            got[i] = a[...]
        map_unordered_into(read, [0, 1, 2, 3], threads=2, work_bytes=1 << 40)
    for i in range(4):
        np.testing.assert_array_equal(got[i], data)
    assert guesses == []
