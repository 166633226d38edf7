"""zarr-python's experimental dual-store CacheStore (zarrfast.experimental.cache_store)."""

from __future__ import annotations

import asyncio
import pickle
import types

import numpy as np
import pytest

import zarrfast
from zarrfast.experimental.cache_store import CacheStore
from zarrfast.storage import (
    LocalStore,
    LoggingStore,
    MemoryStore,
    RangeByteRequest,
    Store,
    store_cache,
)
from zarrfast.testing import StoreTests


class TestStoreBackedCacheOnMemory(StoreTests):
    def make_store(self, tmp_path) -> Store:
        return CacheStore(MemoryStore(), cache_store=MemoryStore())


class TestStoreBackedCacheOnLocal(StoreTests):
    def make_store(self, tmp_path) -> Store:
        # small, with a local cache store: the suite's values evict each other all the time
        return CacheStore(LocalStore(tmp_path / "src"), cache_store=LocalStore(tmp_path / "cache"),
                          max_size=4096)


def source_reads(log: LoggingStore, key: str) -> int:
    """How many values of ``key`` the source store handed out."""
    return sum(1 for op in log.operations if op.key == key and op.op.startswith("get")
               and op.op != "get_many")


def make(**kwargs):
    source = MemoryStore()
    log = LoggingStore(source)
    cache = MemoryStore()
    return source, log, cache, CacheStore(log, cache_store=cache, **kwargs)


def test_a_second_read_comes_from_the_cache_store():
    source, log, cache, cached = make()
    source.set("a/c/0", b"x" * 100)
    assert cached.get("a/c/0") == b"x" * 100
    assert cache.get("a/c/0") == b"x" * 100  # copied into the cache store
    assert cached.get("a/c/0") == b"x" * 100
    assert source_reads(log, "a/c/0") == 1
    assert cached.cache_stats()["hits"] == 1
    assert cached.cache_stats()["misses"] == 1


def test_missing_keys_are_not_cached_and_a_vanished_key_is_forgotten():
    source, log, cache, cached = make()
    assert cached.get("nope") is None
    assert not cache.exists("nope")
    source.set("k", b"1")
    assert cached.get("k") == b"1"
    cache.delete("k")  # the cache store lost it: read from the source again
    assert cached.get("k") == b"1"
    assert source_reads(log, "k") == 2


def test_least_recently_used_values_are_evicted_from_the_cache_store():
    source, log, cache, cached = make(max_size=250)
    for k in "abc":
        source.set(k, k.encode() * 100)
    cached.get("a")
    cached.get("b")
    cached.get("a")  # b is now the least recently used
    cached.get("c")
    assert cache.exists("a") and cache.exists("c") and not cache.exists("b")
    info = cached.cache_info()
    assert info["current_size"] == 200 <= info["max_size"]
    assert info["cached_keys"] == 2
    assert cached.cache_stats()["evictions"] == 1


def test_a_value_larger_than_max_size_is_not_cached():
    source, log, cache, cached = make(max_size=10)
    source.set("big", b"x" * 11)
    assert cached.get("big") == b"x" * 11
    assert not cache.exists("big")
    assert cached.cache_info()["current_size"] == 0


def test_entries_expire_after_max_age_seconds(monkeypatch):
    """The cache's clock is driven by the test (it was real: an entry 50 ms old was
    expected "still fresh" one statement later, which a loaded machine breaks)."""
    now = 1000.0
    monkeypatch.setattr(store_cache, "time", types.SimpleNamespace(monotonic=lambda: now))
    source, log, cache, cached = make(max_age_seconds=5)
    source.set("k", b"old")
    assert cached.get("k") == b"old"
    source.set("k", b"new")  # behind the cache's back
    now += 4.9
    assert cached.get("k") == b"old"  # still fresh
    now += 0.1
    assert cached.get("k") == b"new"  # 5 s old: expired
    assert source_reads(log, "k") == 2


def test_byte_ranges_are_cached_in_memory_not_in_the_cache_store():
    source, log, cache, cached = make()
    source.set("k", bytes(range(100)))
    r = RangeByteRequest(10, 20)
    assert cached.get("k", r) == bytes(range(10, 20))
    assert cached.get("k", r) == bytes(range(10, 20))
    assert not cache.exists("k")
    assert source_reads(log, "k") == 1
    cached.set("k", b"\xff" * 100)  # a write through the cache drops the ranges
    assert cached.get("k", r) == b"\xff" * 10


def test_cache_set_data_decides_whether_writes_fill_the_cache():
    _, _, cache, cached = make(cache_set_data=True)
    cached.set("k", b"v")
    assert cache.get("k") == b"v"
    _, _, cache, cached = make(cache_set_data=False)
    cache.set("k", b"stale")
    cached.set("k", b"v")
    assert not cache.exists("k")  # and a stale copy is gone


def test_deletes_reach_both_stores():
    source, _, cache, cached = make()
    cached.set("g/a", b"1")
    cached.set("g/b", b"2")
    cached.delete("g/a")
    assert not source.exists("g/a") and not cache.exists("g/a")
    cached.delete_dir("g")
    assert not source.exists("g/b") and not cache.exists("g/b")
    assert cached.cache_info()["cached_keys"] == 0


def test_get_many_reads_the_misses_in_one_batch():
    source, log, cache, cached = make()
    for i in range(4):
        source.set(f"c/{i}", bytes([i]) * 8)
    cached.get("c/0")
    log.reset()
    assert cached.get_many([f"c/{i}" for i in range(4)]) == [bytes([i]) * 8 for i in range(4)]
    batches = [op for op in log.operations if op.op == "get_many"]
    assert len(batches) == 1 and batches[0].key == "3"  # c/1..c/3: one batch of three


def test_a_persistent_cache_is_reused_by_a_new_cache_store(tmp_path):
    source = MemoryStore()
    source.set("k", b"value")
    first = CacheStore(source, cache_store=LocalStore(tmp_path / "cache"))
    first.get("k")
    log = LoggingStore(MemoryStore())  # a source that has nothing: only the cache has it
    second = CacheStore(log, cache_store=LocalStore(tmp_path / "cache"))
    assert second.get("k") == b"value"
    assert source_reads(log, "k") == 0
    assert second.cache_info()["current_size"] == 5
    # a finite max age cannot vouch for a value of unknown age
    third = CacheStore(log, cache_store=LocalStore(tmp_path / "cache"), max_age_seconds=60)
    assert third.get("k") is None


def test_clear_cache_is_a_coroutine_that_empties_the_cache_store():
    source, _, cache, cached = make()
    source.set("k", b"v")
    cached.get("k")
    asyncio.run(cached.clear_cache())
    assert list(cache.list()) == []
    info = cached.cache_info()
    assert info["tracked_keys"] == 0 and info["current_size"] == 0


@pytest.mark.parametrize("kwargs, word", [
    ({"max_age_seconds": "forever"}, "'forever'"),
    ({"max_age_seconds": -1}, "-1"),
    ({"max_size": -5}, "-5"),
    ({"max_size": 1.5}, "1.5"),
])
def test_bad_settings_are_refused_naming_the_value(kwargs, word):
    with pytest.raises(ValueError, match=word):
        CacheStore(MemoryStore(), cache_store=MemoryStore(), **kwargs)


def test_a_read_only_cache_store_is_refused():
    with pytest.raises(ValueError, match="cache_store"):
        CacheStore(MemoryStore(), cache_store=MemoryStore().with_read_only())


def test_an_array_through_the_cache_reads_what_was_written(tmp_path):
    source = LocalStore(tmp_path / "data.zarr")
    cached = CacheStore(source, cache_store=MemoryStore(), max_size=1 << 20)
    data = np.random.default_rng(0).random((100, 100))
    a = zarrfast.zeros((100, 100), chunks=(10, 10), dtype="f8", store=cached, mode="w")
    a[:] = data
    np.testing.assert_array_equal(a[:], data)
    np.testing.assert_array_equal(zarrfast.open_array(source, mode="r")[:], data)
    assert cached.cache_info()["cached_keys"] == 101  # 100 chunks and zarr.json
    # pickling gives a new, empty cache over the same stores
    again = pickle.loads(pickle.dumps(cached))
    assert again.cache_info()["cached_keys"] == 0
    np.testing.assert_array_equal(zarrfast.open_array(again, mode="r")[:], data)


def test_store_listings_are_also_asynchronous_iterators(tmp_path):
    from zarrfast.storage.base import Listing

    for store in (MemoryStore(), LocalStore(tmp_path / "l"),
                  CacheStore(MemoryStore(), cache_store=MemoryStore())):
        store.set("g/zarr.json", b"{}")
        store.set("g/c/0", b"x")
        assert isinstance(store.list_prefix("g/"), Listing)
        assert sorted(store.list()) == ["g/c/0", "g/zarr.json"]

        async def collect(store=store):
            return sorted([k async for k in store.list_prefix("g/")]), \
                [k async for k in store.list_dir("g")]
        keys, below = asyncio.run(collect())
        assert keys == ["g/c/0", "g/zarr.json"] and sorted(below) == ["c", "zarr.json"]
