"""Sharded reads fetch only what they need: a counting store subclass records every
request (the index then the inner chunk, whole shards in one get, coalescing of
near inner chunks, the bounded index cache).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest, SuffixByteRequest

from _helpers import LE
from _helpers.sharding import EMPTY, ZSTD, Case, assert_equal, create_zf, parse_index, shard_key


# ---------------------------------------------------------------------------
# 5. reads fetch only what they need
# ---------------------------------------------------------------------------
class _Counting:
    """Mixin recording every ``get`` (and ``get_into``): ``(key, byte_range, size)``."""

    def _init_log(self) -> None:
        self.log: list[tuple[str, Any, int | None]] = []
        self.batches: list[int] = []

    def get(self, key, byte_range=None):
        value = super().get(key, byte_range)
        if not key.endswith("zarr.json"):
            self.log.append((key, byte_range, None if value is None else len(value)))
        return value

    def get_into(self, key, out):
        """A whole value read into a caller's buffer: one request, logged as ``get``."""
        n = super().get_into(key, out)
        if self.fast_get_into and not key.endswith("zarr.json"):  # (else it went via get)
            self.log.append((key, None, n))
        return n

    def get_many(self, keys, byte_ranges=None):
        self.batches.append(len(keys))
        return super().get_many(keys, byte_ranges)  # both base classes route to self.get

    def take(self, *, ordered: bool = False) -> list[tuple[str, Any, int | None]]:
        """The requests since the last call: sorted, or in the order they were made."""
        out, self.log = self.log, []
        return out if ordered else sorted(out, key=repr)


class CountingMemoryStore(_Counting, MemoryStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_log()


class CountingLocalStore(_Counting, LocalStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_log()


IO_SHAPE, IO_SHARD, IO_INNER = (14, 30), (8, 8), (2, 2)  # 4 x 4 inner chunks per shard


@pytest.fixture(params=["memory", "local"])
def io_store(request, tmp_path):
    """``make(location) -> (counting store, data, case)``: an int32 array written by zarrfast,
    and a counting store on the same data.  (Open it writable: ``mode="r"`` would swap in
    a plain read-only copy of the store.)"""

    def make(location: str = "end", after: tuple = ()):
        if request.param == "memory":
            # (a store of its own dict: one sharing another's dict gives no version
            # tokens, so keeps no shard index cached)
            plain = counting = CountingMemoryStore()
        else:
            plain = LocalStore(tmp_path)
            counting = CountingLocalStore(tmp_path)
        case = Case("io", "int32", 0, IO_SHAPE, IO_SHARD, IO_INNER, (LE, ZSTD),
                    location=location, after=after)
        a = create_zf(plain, case)
        data = np.random.default_rng(3).integers(0, 1 << 20, IO_SHAPE).astype("int32")
        a[...] = data
        counting._init_log()  # (the writes above are not what the tests count)
        return counting, data, case

    return make


def _raw(store, key: str) -> bytes | None:
    """A value read around the counting (not recorded)."""
    base = MemoryStore if isinstance(store, MemoryStore) else LocalStore
    return base.get(store, key)


def _index(store, case: Case, key: str) -> np.ndarray:
    return parse_index(_raw(store, key), case.sharding, case.shard)


def _index_request(case: Case):
    n = 16 * 16 + 4
    return SuffixByteRequest(n) if case.location == "end" else RangeByteRequest(0, n)


@pytest.mark.parametrize("location", ["end", "start"])
def test_one_inner_chunk_read_fetches_index_then_chunk(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    index = _index(store, case, "c/0/1")
    assert_equal(a[3, 13], data[3, 13])  # inner chunk (1, 2) of shard (0, 1)
    off, nb = (int(x) for x in index[1 * 4 + 2])
    assert store.take() == sorted([("c/0/1", _index_request(case), 16 * 16 + 4),
                                   ("c/0/1", RangeByteRequest(off, off + nb), nb)], key=repr)
    # another inner chunk of the same shard: the index comes from the cache
    assert_equal(a[6:8, 8:10], data[6:8, 8:10])  # inner chunk (3, 0)
    off, nb = (int(x) for x in index[3 * 4 + 0])
    assert store.take() == [("c/0/1", RangeByteRequest(off, off + nb), nb)]


def test_empty_inner_chunk_read_fetches_only_the_index(io_store):
    store, data, case = io_store()
    a = zarrfast.open_array(store)
    a[2:4, 10:12] = data[2:4, 10:12] = 0  # inner chunk (1, 1) of shard (0, 1): now empty
    assert _index(store, case, "c/0/1")[5].tolist() == [EMPTY, EMPTY]
    store.take()
    assert_equal(a[2:4, 10:12], data[2:4, 10:12])
    assert store.take() == [("c/0/1", _index_request(case), 16 * 16 + 4)]
    assert_equal(a[3, 11], data[3, 11])
    assert store.take() == []


@pytest.mark.parametrize("sel,key", [
    ((slice(0, 8), slice(8, 16)), "c/0/1"),  # a whole interior shard
    ((slice(None, None, -1), slice(16, 24)), "c/1/2"),  # edge shard along axis 0 ...
    ((slice(8, 14), slice(16, 24)), "c/1/2"),
    ((slice(1, 8, 2), slice(29, 23, -2)), "c/0/3"),  # ... and axis 1, strided, backwards
])
def test_whole_shard_read_is_one_get(io_store, sel, key):
    store, data, _ = io_store()
    a = zarrfast.open_array(store)
    assert_equal(a[sel], data[sel])
    log = [e for e in store.take() if e[0] == key]
    assert log == [(key, None, len(_raw(store, key)))]


def test_whole_array_read_fetches_every_shard_once(io_store):
    store, data, _ = io_store()
    a = zarrfast.open_array(store)
    assert_equal(a[::-1, ::2], data[::-1, ::2])
    log = store.take()
    assert [e[1] for e in log] == [None] * 8
    assert sorted(e[0] for e in log) == sorted(shard_key(c) for c in np.ndindex(2, 4))


@pytest.mark.parametrize("location", ["end", "start"])
def test_near_inner_chunks_are_coalesced(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    index = _index(store, case, "c/0/0")
    a[0, 0]  # warm the index cache
    store.take()
    # inner chunks (0, 0) and (0, 1): adjacent, one request even with no gap allowed
    for gap in (65536, 0):
        with zarrfast.config.set(shard_coalesce_gap=gap):
            assert_equal(a[0:2, 0:4], data[0:2, 0:4])
        start = int(index[0, 0])
        end = int(index[1, 0] + index[1, 1])
        assert start + int(index[0, 1]) == int(index[1, 0])
        assert store.take() == [("c/0/0", RangeByteRequest(start, end), end - start)]
    # inner chunks (0, 0) and (0, 2): one spanning request, or two without a gap
    sel = (slice(0, 2), slice(0, 6, 4))
    assert_equal(a[sel], data[sel])
    start, end = int(index[0, 0]), int(index[2, 0] + index[2, 1])
    assert store.take() == [("c/0/0", RangeByteRequest(start, end), end - start)]
    with zarrfast.config.set(shard_coalesce_gap=0):
        assert_equal(a[sel], data[sel])
    assert store.take() == sorted(
        [("c/0/0", RangeByteRequest(int(o), int(o + n)), int(n)) for o, n in index[[0, 2]]],
        key=repr)
    # a gap larger than allowed: two requests
    gap_bytes = int(index[2, 0] - (index[0, 0] + index[0, 1]))
    with zarrfast.config.set(shard_coalesce_gap=gap_bytes - 1):
        assert_equal(a[sel], data[sel])
    assert len(store.take()) == 2
    with zarrfast.config.set(shard_coalesce_gap=gap_bytes):
        assert_equal(a[sel], data[sel])
    assert len(store.take()) == 1


def _index_requests(log, case: Case) -> list[str]:
    return [k for k, r, _ in log if r == _index_request(case)]


def test_index_cache_is_bounded_lru(io_store):
    store, data, case = io_store()
    with zarrfast.config.set(shard_index_cache=2):
        a = zarrfast.open_array(store)
    # shards (0, 0) .. (0, 3): read one inner chunk of each
    cols = {"A": 0, "B": 8, "C": 16, "D": 24}

    def read(*names: str) -> list[str]:
        for n in names:
            assert_equal(a[1, cols[n]], data[1, cols[n]])
        return _index_requests(store.take(ordered=True), case)

    assert read("A", "B", "C", "A") == ["c/0/0", "c/0/1", "c/0/2", "c/0/0"]  # bounded
    assert read("C", "A") == []  # the two most recent are cached
    assert read("B") == ["c/0/1"]  # evicts C, the least recently used
    assert read("A") == []  # ... and keeps A
    assert read("A", "C") == ["c/0/2"]  # evicts B
    assert read("C", "A", "D") == ["c/0/3"]  # evicts C
    assert read("A", "D") == []
    with zarrfast.config.set(shard_index_cache=4096):
        b = zarrfast.open_array(store)
    for col in (0, 8, 16, 24, 0, 8, 16, 24):
        b[1, col]
    assert len(_index_requests(store.take(), case)) == 4


@pytest.mark.parametrize("location", ["end", "start"])
def test_read_after_write_sees_new_data(io_store, location):
    store, data, case = io_store(location)
    a = zarrfast.open_array(store)
    assert_equal(a[0, 8], data[0, 8])  # index of shard (0, 1) cached
    store.take()
    # inner chunk (0, 0) of shard (0, 1) becomes highly compressible: every later inner
    # chunk moves (index at the end) and the cached index is obsolete
    a[0:2, 8:10] = data[0:2, 8:10] = 7
    store.take()
    assert_equal(a[7, 15], data[7, 15])  # inner chunk (3, 3): fetched at its new place
    off, nb = (int(x) for x in _index(store, case, "c/0/1")[15])
    data_requests = [e for e in store.take() if e[1] != _index_request(case)]
    assert data_requests == [("c/0/1", RangeByteRequest(off, off + nb), nb)]
    assert_equal(a[0:2, 8:16], data[0:2, 8:16])
    # an inner chunk becomes fill: removed from the index
    a[2:4, 10:12] = data[2:4, 10:12] = 0
    assert_equal(a[2:4, 8:14], data[2:4, 8:14])
    assert_equal(a[...], data)


def test_index_cache_not_stale_across_handles():
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(8, 8), chunks=(2, 2), shards=(8, 8),
                              dtype="int32", fill_value=0, compressors=None)
    data = np.arange(1, 65, dtype="int32").reshape(8, 8)
    a[...] = data
    b = zarrfast.open_array(store)
    assert_equal(b[0, 2], data[0, 2])  # b caches the index
    a[0:2, 0:2] = data[0:2, 0:2] = 0  # inner chunk (0, 0) leaves the shard: offsets move
    assert_equal(b[0:2, 2:4], data[0:2, 2:4])


def test_codec_after_shard_reads_whole_shards(io_store):
    """With a bytes -> bytes codec after the sharding codec no byte range can be read."""
    store, data, _ = io_store(after=(ZSTD,))
    a = zarrfast.open_array(store)
    assert_equal(a[3, 13], data[3, 13])
    assert [(k, r) for k, r, _ in store.take()] == [("c/0/1", None)]
    a[4:6, 10:12] = data[4:6, 10:12] = -3
    store.take()
    assert_equal(a[...], data)
    assert len(store.take()) == 8


def test_missing_shard_costs_one_request(io_store):
    store, data, _ = io_store()
    store.delete("c/0/1")
    a = zarrfast.open_array(store)
    assert_equal(a[3, 13], np.int32(0))
    assert [k for k, _, n in store.take()] == ["c/0/1"]
    assert_equal(a[0:8, 8:16], np.zeros((8, 8), "int32"))
    assert [(k, n) for k, _, n in store.take()] == [("c/0/1", None)]
