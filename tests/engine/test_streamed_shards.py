"""Whole shards of a remote store placed as they arrive (``ShardRowsRead.fetch_streamed``,
``ObjectStore.get_streamed`` and ``get_soon``): the shard's index is read at the same
time by a request of its own, and the inner chunks whose bytes are in are placed before
the rest arrives.  The index may come from another version of the shard than the one
streamed, and a request may fail half-way and be made again: the values read are
always those of the shard streamed."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.engine import shard_read
from zarrfast.errors import ChunkDecodeError
from zarrfast.storage import (
    FsspecStore,
    MemoryStore,
    ObjectStore,
    RetryPolicy,
    SuffixByteRequest,
)
from zarrfast.storage import obstore as zobstore
from zarrfast.storage.errors import RetriesExhaustedError

pytest.importorskip("obstore")

FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
SHAPE, CHUNKS, SHARDS = (64, 96), (8, 16), (32, 48)  # 4 shards of 12 inner chunks
INDEX = 12 * 16 + 4  # bytes of a shard's index


@pytest.fixture(scope="module")
def server():
    from _helpers.fault_http import FaultServer

    s = FaultServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def faulty(server, monkeypatch):
    """The server, emptied; every whole shard read streamed, in parts of 1 KiB."""
    server.reset()
    server.objects.clear()
    monkeypatch.setattr(shard_read, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(zobstore, "STREAM_PART", 1024)
    yield server
    server.reset()


def _values(seed, shape=SHAPE):
    """float32 values that compress to varying sizes (each version's offsets differ)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << rng.integers(2, 20), shape) / 7).astype("f4")


def _files(data, compressors="auto"):
    """The keys and values of a sharded array of ``data`` (zstd inner chunks)."""
    mem = MemoryStore()
    a = zarrfast.create_array(mem, shape=data.shape, chunks=CHUNKS, shards=SHARDS,
                              dtype=data.dtype, fill_value=-1, compressors=compressors)
    a[:] = data
    return {k: bytes(mem.get(k)) for k in mem.list()}


def _serve(server, files, prefix="d"):
    for k, v in files.items():
        server.objects[f"{prefix}/{k}"] = v


def _obstore(server, prefix="d"):
    return ObjectStore.from_url(server.url(prefix), retry=FAST_RETRY)


MAKERS = {"obstore": _obstore}  # (FsspecStore does not stream)


@pytest.fixture(params=sorted(MAKERS))
def maker(request):
    return MAKERS[request.param]


def _open(server, maker):
    store = maker(server).with_read_only()
    assert store.capabilities.streamed_gets
    return zarrfast.open_array(store, mode="r")


def _shard_requests(server):
    return sorted((p, r or "") for m, p, r in server.requests if m == "GET" and "/c/" in p)


def test_get_streamed_hands_over_what_arrived(faulty, maker):
    value = np.random.default_rng(0).integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    faulty.objects["d/k"] = value
    faulty.fail("trickle", 1, path="d/k", seconds=0.01)
    store = maker(faulty)
    seen = []

    def progress(buf, n):
        seen.append((buf, n, bytes(buf[:n])))

    got = store.get_streamed("k", progress)
    assert bytes(got) == value
    assert seen, "a body sent in 8 pieces, read in parts of 1 KiB: some parts before the last"
    ns = [n for _, n, _ in seen]
    assert ns == sorted(ns) and ns[-1] < len(value)
    for buf, n, head in seen:
        assert buf is got and head == value[:n]
    assert store.get_streamed("missing", progress) is None


def test_get_streamed_starts_over_after_a_failure(faulty, maker):
    value = bytes(range(256)) * 40
    faulty.objects["d/k"] = value
    faulty.fail("short", 1, path="d/k")  # half the body, then the connection closes
    store = maker(faulty)
    bufs = []
    got = store.get_streamed("k", lambda buf, n: bufs.append((buf, n)))
    assert bytes(got) == value
    assert [m for m, _, _ in faulty.requests] == ["GET", "GET"]
    assert bufs and bufs[0][0] is not got  # (the failed request's buffer)
    mine = [i for i, (b, _) in enumerate(bufs) if b is got]
    if mine:  # (fsspec reports nothing of a body that arrives in one piece)
        assert all(b is got for b, _ in bufs[mine[0]:])


def test_get_soon(faulty, maker):
    faulty.objects["d/k"] = b"0123456789"
    store = maker(faulty)
    assert bytes(store.get_soon("k", SuffixByteRequest(3)).result(10)) == b"789"
    assert store.get_soon("nope").result(10) is None
    faulty.fail("503", 10)
    with pytest.raises(RetriesExhaustedError, match=r"d/k.*'k'|'k'.*d/k"):
        store.get_soon("k").result(10)


def test_fsspec_store_is_not_streamed(faulty):
    """FsspecStore's HTTP reads are not streamed (the default ``get_streamed``: one
    ``get``, no progress), so its shards are read whole, their index from the shard."""
    faulty.objects["d/k"] = bytes(range(256)) * 40
    store = FsspecStore.from_url(faulty.url("d"))
    assert not store.capabilities.streamed_gets
    seen = []
    assert store.get_streamed("k", lambda buf, n: seen.append(n)) == faulty.objects["d/k"]
    assert seen == [] and store.get_streamed("nope", seen.append) is None


def test_local_and_memory_obstores_are_not_streamed(tmp_path):
    from obstore.store import LocalStore
    from obstore.store import MemoryStore as ObMemory

    assert not ObjectStore(ObMemory()).capabilities.streamed_gets
    assert not ObjectStore(LocalStore(str(tmp_path))).capabilities.streamed_gets
    assert not MemoryStore().capabilities.streamed_gets


@pytest.mark.parametrize("compressors", ["auto", None])
def test_full_read_streamed_with_one_index_request_per_shard(faulty, maker, compressors):
    data = _values(1)
    _serve(faulty, _files(data, compressors))
    a = _open(faulty, maker)
    faulty.requests.clear()
    np.testing.assert_array_equal(a[:], data)
    reqs = _shard_requests(faulty)
    shards = [f"d/c/{i}/{j}" for i in (0, 1) for j in (0, 1)]
    # each shard whole once, and its index at most once (a request not yet sent when
    # the shard is in is called off)
    assert [p for p, r in reqs if r == ""] == shards, reqs
    index = [p for p, r in reqs if r]
    assert set(index) <= set(shards) and len(set(index)) == len(index), reqs
    assert {r for p, r in reqs if r} <= {f"bytes=-{INDEX}"}, reqs


def test_missing_shard_reads_as_fill(faulty, maker):
    data = _values(2)
    files = _files(data)
    del files["c/1/0"]
    _serve(faulty, files)
    expected = data.copy()
    expected[32:, :48] = -1
    np.testing.assert_array_equal(_open(faulty, maker)[:], expected)


@pytest.mark.parametrize("index", ["other version", "not an index"])
def test_index_of_another_version_never_places_its_offsets(faulty, maker, index):
    """The shard's index answered from another version (its inner chunks elsewhere),
    the shard itself sent slowly so that rows are placed while it arrives: the values
    read are the streamed shard's."""
    old, new = _values(3), _values(4)
    old_files, new_files = _files(old), _files(new)
    _serve(faulty, new_files)
    for key in ("c/0/0", "c/1/1"):
        assert old_files[key] != new_files[key]
        stale = (old_files[key][-INDEX:] if index == "other version"
                 else bytes(INDEX))
        faulty.fail("stale", 1, path=f"d/{key}", value=stale, ranged=True)
        faulty.fail("trickle", 1, path=f"d/{key}", seconds=0.02, ranged=False)
    np.testing.assert_array_equal(_open(faulty, maker)[:], new)


def test_shard_failing_half_way_is_read_again(faulty, maker):
    data = _values(5)
    _serve(faulty, _files(data))
    faulty.fail("short", 1, path="d/c/0/1", ranged=False)
    a = _open(faulty, maker)
    faulty.requests.clear()
    np.testing.assert_array_equal(a[:], data)
    whole = [p for m, p, r in faulty.requests if m == "GET" and r is None]
    assert whole.count("d/c/0/1") == 2 and len(whole) == 5


def test_corrupt_inner_chunk_names_the_shard(faulty, maker):
    data = _values(6)
    files = _files(data)
    shard = bytearray(files["c/1/0"])
    shard[10:40] = b"\xff" * 30  # inside the first inner chunk's zstd frame
    files["c/1/0"] = bytes(shard)
    _serve(faulty, files)
    faulty.fail("trickle", 1, path="d/c/1/0", seconds=0.01, ranged=False)
    with pytest.raises(ChunkDecodeError, match=r"c/1/0"):
        _open(faulty, maker)[:]


def test_nginx_full_read_streamed(tmp_path, monkeypatch, maker):
    """Through a real nginx: shards of 1.5 MiB read in parts of 64 KiB, replaced by
    another version between two reads."""
    from _helpers.nginx import Nginx, nginx_path, settle

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    monkeypatch.setattr(shard_read, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(zobstore, "STREAM_PART", 64 << 10)
    root = tmp_path / "www"
    shape = (512, 1536)
    first, second = _values(7, shape), _values(8, shape)
    zarrfast.create_array(str(root / "a.zarr"), data=first, chunks=(64, 128),
                          shards=(256, 768), fill_value=-1)
    settle(root)
    server = Nginx(root, tmp_path / "nginx")
    try:
        store = maker(server, "a.zarr").with_read_only()
        assert store.capabilities.streamed_gets
        a = zarrfast.open_array(store, mode="r")
        server.clear_log()
        np.testing.assert_array_equal(a[:], first)
        reqs = server.requests()
        shards = sorted(f"a.zarr/c/{i}/{j}" for i in (0, 1) for j in (0, 1))
        assert sorted(p for _, p, r, _ in reqs if r in ("", "-")) == shards, reqs
        index = [p for _, p, r, _ in reqs if r not in ("", "-")]
        assert set(index) <= set(shards) and len(set(index)) == len(index), reqs
        zarrfast.open_array(str(root / "a.zarr"), mode="r+")[:] = second
        np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[:], second)
    finally:
        server.stop()
