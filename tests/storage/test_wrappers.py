"""CacheStore and LoggingStore: the store contract, what the cache serves and drops, what
the log records, on local, memory and S3 (moto) stores and under zarrfast arrays."""

from __future__ import annotations

import logging
import pickle
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ReadOnlyError, ZarrfastError
from zarrfast.storage import (
    CacheStore,
    FsspecStore,
    LocalStore,
    LoggingStore,
    MemoryStore,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    WrapperStore,
)
from zarrfast.testing import StoreTests


class TestCacheStoreOnMemory(StoreTests):
    def make_store(self, tmp_path: Path) -> Store:
        return CacheStore(MemoryStore(), max_bytes=1 << 20)


class TestCacheStoreOnLocal(StoreTests):
    def make_store(self, tmp_path: Path) -> Store:
        # small: the conformance tests' values evict each other all the time
        return CacheStore(LocalStore(tmp_path / "data"), max_bytes=4096)


class TestLoggingStoreOnLocal(StoreTests):
    def make_store(self, tmp_path: Path) -> Store:
        return LoggingStore(LocalStore(tmp_path / "data"))


def inner_gets(log: LoggingStore) -> list[str]:
    return [o.key for o in log.operations if o.op == "get"]


# -- the cache ---------------------------------------------------------------------------


def test_a_hit_does_not_reach_the_store() -> None:
    log = LoggingStore(MemoryStore())
    log.set("a", b"0123456789")
    cache = CacheStore(log, max_bytes=1000)
    log.reset()
    assert cache.get("a") == b"0123456789"
    assert cache.get("a") == b"0123456789"
    # a range of a cached whole value is served from it
    assert cache.get("a", RangeByteRequest(2, 5)) == b"234"
    assert cache.get("a", SuffixByteRequest(3)) == b"789"
    assert cache.get("a", OffsetByteRequest(8)) == b"89"
    assert cache.get("a", RangeByteRequest(8, 100)) == b"89"
    assert inner_gets(log) == ["a"]
    assert cache.cache_info()["hits"] == 5 and cache.cache_info()["misses"] == 1


def test_ranges_and_missing_keys_are_cached() -> None:
    log = LoggingStore(MemoryStore())
    log.set("a", bytes(range(100)))
    cache = CacheStore(log, max_bytes=1000)
    log.reset()
    r = RangeByteRequest(10, 20)
    assert cache.get("a", r) == bytes(range(10, 20))
    assert cache.get("a", r) == bytes(range(10, 20))
    assert cache.get("missing") is None
    assert cache.get("missing") is None
    assert not cache.exists("missing")
    assert inner_gets(log) == ["a", "missing"]
    # without cache_missing a missing key is asked again
    nomiss = CacheStore(log, max_bytes=1000, cache_missing=False)
    log.reset()
    assert nomiss.get("missing") is None and nomiss.get("missing") is None
    assert inner_gets(log) == ["missing", "missing"]


def test_least_recently_used_values_go_first_within_max_bytes() -> None:
    log = LoggingStore(MemoryStore())
    for k in "abcd":
        log.set(k, k.encode() * 100)
    cache = CacheStore(log, max_bytes=300)
    for k in "abc":
        cache.get(k)
    cache.get("a")          # a is now the most recently used
    cache.get("d")          # evicts b, the least recently used
    assert cache.nbytes == 300
    log.reset()
    assert cache.get("a") == b"a" * 100 and cache.get("c") == b"c" * 100
    assert cache.get("d") == b"d" * 100
    assert inner_gets(log) == []
    assert cache.get("b") == b"b" * 100
    assert inner_gets(log) == ["b"]
    # a value larger than the whole cache is read but never held
    log.set("big", b"x" * 301)
    assert cache.get("big") == b"x" * 301
    assert cache.nbytes <= 300
    with pytest.raises(ZarrfastError, match="max_bytes"):
        CacheStore(log, max_bytes=-1)


def test_writes_and_deletes_through_the_cache_drop_what_it_held() -> None:
    inner = MemoryStore()
    cache = CacheStore(inner, max_bytes=10_000)
    cache.set("g/a", b"old")
    assert cache.get("g/a") == b"old"
    assert cache.get("g/a", RangeByteRequest(0, 2)) == b"ol"
    cache.set("g/a", b"new!")
    assert cache.get("g/a") == b"new!"
    assert cache.get("g/a", RangeByteRequest(0, 2)) == b"ne"
    cache.set_many({"g/b": b"b1", "h/c": b"c1"})
    assert cache.get_many(["g/b", "h/c"]) == [b"b1", b"c1"]
    cache.set_many([("g/b", b"b2")])
    assert cache.get("g/b") == b"b2"
    cache.delete("g/b")
    assert cache.get("g/b") is None
    cache.delete_many(["h/c"])
    assert cache.get("h/c") is None
    assert cache.get("g/a") == b"new!"
    cache.delete_dir("g")
    assert cache.get("g/a") is None and inner.get("g/a") is None
    # a change made around the cache is seen after invalidate()
    cache.set("k", b"1")
    assert cache.get("k") == b"1"
    inner.set("k", b"2")
    assert cache.get("k") == b"1"
    cache.invalidate("k")
    assert cache.get("k") == b"2"
    inner.set("k", b"3")
    cache.invalidate()
    assert cache.get("k") == b"3" and cache.nbytes == 1


def test_get_many_mixes_hits_and_one_batch_of_misses() -> None:
    log = LoggingStore(MemoryStore())
    for i in range(10):
        log.set(f"c/{i}", bytes([i]) * 10)
    cache = CacheStore(log, max_bytes=10_000)
    cache.get_many([f"c/{i}" for i in range(0, 10, 2)])
    log.reset()
    keys = [f"c/{i}" for i in range(10)] + ["c/missing"]
    assert cache.get_many(keys) == [bytes([i]) * 10 for i in range(10)] + [None]
    batches = [o for o in log.operations if o.op == "get_many"]
    assert len(batches) == 1 and batches[0].key == "6"   # the 5 odd keys and the missing one
    log.reset()
    assert cache.get_many(keys, [RangeByteRequest(0, 3)] * len(keys)) == \
        [bytes([i]) * 3 for i in range(10)] + [None]
    assert inner_gets(log) == []
    with pytest.raises(ZarrfastError, match="byte ranges"):
        cache.get_many(["a"], [None, None])


class _PausingStore(WrapperStore):
    """A real store whose reads of one key wait, after reading, until released."""

    def __init__(self, store: Store, key: str) -> None:
        super().__init__(store)
        self.key = key
        self.read_done = threading.Event()
        self.release = threading.Event()

    def get(self, key, byte_range=None):
        value = self.store.get(key, byte_range)
        if key == self.key:
            self.read_done.set()
            assert self.release.wait(10)
        return value


def test_a_read_that_overlaps_a_write_does_not_cache_the_old_value() -> None:
    inner = MemoryStore()
    inner.set("k", b"old")
    pausing = _PausingStore(inner, "k")
    cache = CacheStore(pausing, max_bytes=1000)
    with ThreadPoolExecutor(1) as pool:
        reader = pool.submit(cache.get, "k")
        assert pausing.read_done.wait(10)
        pausing.key = None       # the writer's own reads don't pause
        cache.set("k", b"new")   # while the reader holds the old value
        pausing.release.set()
        assert reader.result(10) == b"old"
    assert cache.get("k") == b"new"


def test_many_threads_reading_and_writing_through_one_cache_see_whole_current_values(
) -> None:
    inner = MemoryStore()
    cache = CacheStore(inner, max_bytes=64 * 100)  # less than all values: evictions too
    keys = [f"k{i}" for i in range(200)]
    for k in keys:
        cache.set(k, k.encode() * 10)
    errors: list[str] = []

    def work(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(2000):
            k = rnd.choice(keys)
            if rnd.random() < 0.2:
                cache.set(k, f"{k}:{seed}".encode() * rnd.randint(1, 20))
            else:
                v = cache.get(k)
                if v is None or not v.startswith(k.encode()):
                    errors.append(f"{k}: {v!r}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert errors == []
    # every value the cache holds is the store's current one
    for k in keys:
        assert cache.get(k) == inner.get(k), k
    assert cache.nbytes <= cache.max_bytes


def test_an_array_read_twice_through_the_cache_reads_the_store_once(tmp_path: Path) -> None:
    data = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    zarrfast.create_array(tmp_path / "d.zarr", data=data, chunks=(8, 8))
    zarrfast.create_array(tmp_path / "s.zarr", data=data, chunks=(8, 8), shards=(32, 32))
    for name in ("d.zarr", "s.zarr"):
        log = LoggingStore(LocalStore(tmp_path / name, read_only=True))
        cache = CacheStore(log, max_bytes=1 << 24)
        a = zarrfast.open_array(cache, mode="r")
        np.testing.assert_array_equal(a[:], data)
        np.testing.assert_array_equal(a[3:40, 5:9], data[3:40, 5:9])
        first = len(inner_gets(log))
        assert first > 0
        log.reset()
        b = zarrfast.open_array(cache, mode="r")
        np.testing.assert_array_equal(b[:], data)
        np.testing.assert_array_equal(b[3:40, 5:9], data[3:40, 5:9])
        assert inner_gets(log) == [], name


def test_writes_through_the_cache_are_read_back(tmp_path: Path) -> None:
    cache = CacheStore(LocalStore(tmp_path / "d.zarr"), max_bytes=1 << 24)
    a = zarrfast.create_array(cache, shape=(40, 40), chunks=(8, 8), dtype="i4",
                              shards=(16, 16))
    a[:] = 1
    np.testing.assert_array_equal(a[:], 1)
    a[5:20, 3:7] = 7
    expected = np.ones((40, 40), "i4")
    expected[5:20, 3:7] = 7
    np.testing.assert_array_equal(a[:], expected)
    # and what is on disk agrees
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "d.zarr", mode="r")[:],
                                  expected)


def test_the_cache_serves_a_remote_store_without_requests(s3_server) -> None:
    url = s3_server.url()
    data = np.random.default_rng(0).random((64, 64)).astype("f8")
    zarrfast.create_array(url, data=data, chunks=(16, 16),
                          storage_options=s3_server.storage_options())
    remote = FsspecStore.from_url(url, storage_options=s3_server.storage_options(),
                                  read_only=True)
    log = LoggingStore(remote)
    cache = CacheStore(log, max_bytes=1 << 24)
    assert cache.batched_reads
    np.testing.assert_array_equal(zarrfast.open_array(cache, mode="r")[:], data)
    assert len(inner_gets(log)) == 17   # zarr.json and 16 chunks
    log.reset()
    np.testing.assert_array_equal(zarrfast.open_array(cache, mode="r")[:], data)
    assert log.operations == type(log.operations)()


def test_wrappers_pickle_as_fresh_wrappers_and_views_share_state(tmp_path: Path) -> None:
    cache = CacheStore(LocalStore(tmp_path), max_bytes=123, cache_missing=False)
    cache.set("a", b"1")
    cache.get("a")
    copy = pickle.loads(pickle.dumps(cache))
    assert isinstance(copy, CacheStore) and copy == cache
    assert copy.max_bytes == 123 and not copy.cache_missing and copy.nbytes == 0
    assert copy.get("a") == b"1"
    view = cache.with_read_only(True)
    assert view.read_only and not cache.read_only
    assert view.get("a") == b"1" and view.cache_info()["hits"] == cache.cache_info()["hits"]
    with pytest.raises(ReadOnlyError):
        view.set("a", b"2")
    log = LoggingStore(LocalStore(tmp_path), max_records=5)
    log.get("a")
    assert len(pickle.loads(pickle.dumps(log)).operations) == 0
    log_view = log.with_read_only(True)
    log_view.get("a")
    assert [o.key for o in log.operations] == ["a", "a"]
    with pytest.raises(ZarrfastError, match="wraps a zarrfast Store"):
        CacheStore({"a": b"1"}, max_bytes=10)  # type: ignore[arg-type]


# -- the log -----------------------------------------------------------------------------


def test_the_log_records_operations_keys_bytes_and_errors(tmp_path: Path, caplog) -> None:
    log = LoggingStore(LocalStore(tmp_path), max_records=1000)
    with caplog.at_level(logging.DEBUG, logger="zarrfast.storage"):
        log.set("a/b", b"12345")
        assert log.get("a/b", RangeByteRequest(1, 3)) == b"23"
        log.get_many(["a/b", "nope"])
        log.exists("a/b")
        list(log.list_prefix("a/"))
        log.delete("a/b")
    ops = [(o.op, o.key, o.nbytes) for o in log.operations]
    assert ops == [("set", "a/b", 5), ("get", "a/b", 2), ("get", "a/b", 5), ("get", "nope", 0),
                   ("get_many", "2", 5), ("exists", "a/b", 0), ("list_prefix", "a/", 0),
                   ("delete", "a/b", 0)]
    assert all(o.seconds >= 0 for o in log.operations)
    assert log.operations[1].byte_range == RangeByteRequest(1, 3)
    assert log.counts() == {"set": 1, "get": 3, "exists": 1, "list_prefix": 1, "delete": 1}
    assert "get" in log.summary() and "set" in log.summary()
    assert any("'a/b'" in r.getMessage() and "5 bytes" in r.getMessage()
               for r in caplog.records)
    ro = LoggingStore(LocalStore(tmp_path, read_only=True))
    with pytest.raises(ReadOnlyError):
        ro.set("x", b"1")
    assert ro.operations[-1].op == "set" and "ReadOnlyError" in ro.operations[-1].error
    log.reset()
    assert len(log.operations) == 0


def test_the_log_of_an_array_read_names_every_chunk(tmp_path: Path) -> None:
    data = np.arange(32 * 32, dtype="u2").reshape(32, 32)
    zarrfast.create_array(tmp_path, data=data, chunks=(8, 8))
    log = LoggingStore(LocalStore(tmp_path, read_only=True))
    a = zarrfast.open_array(log, mode="r")
    assert [o.key for o in log.operations] == ["zarr.json"]   # the metadata, read once
    log.reset()
    np.testing.assert_array_equal(a[:], data)
    assert sorted(inner_gets(log)) == sorted(f"c/{i}/{j}" for i in range(4) for j in range(4))
    assert sum(o.nbytes for o in log.operations if o.op == "get") > 0
