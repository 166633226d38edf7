"""Stores that ask for batched reads (remote stores) get chunks through
``get_many`` / ``set_many`` / ``delete_many`` and requests in flight at once, with
the same results as per-chunk access."""

from __future__ import annotations

import time

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.storage import MemoryStore

from _helpers.gate import InFlightGate


class BatchedStore(MemoryStore):
    """A memory store that declares ``batched_reads`` and records how it is called;
    every request takes ``delay`` seconds (a remote round trip) and passes ``gate``
    (``gate.hold(n)``: held until ``n`` are in flight at once)."""

    batched_reads = True

    def __init__(self, *args, delay: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.delay = delay
        self.calls: list[tuple[str, int | str]] = []
        self.gate = InFlightGate()

    def _request(self) -> None:
        self.gate.enter()
        try:
            if self.delay:
                time.sleep(self.delay)
        finally:
            self.gate.leave()

    def get(self, key, byte_range=None):
        self.calls.append(("get", key))
        self._request()
        return super().get(key, byte_range)

    def get_many(self, keys, byte_ranges=None):
        self.calls.append(("get_many", len(keys)))
        out = []
        for i, k in enumerate(keys):
            out.append(MemoryStore.get(self, k, None if byte_ranges is None else byte_ranges[i]))
        if keys:
            self._request()  # one concurrent batch: one round trip
        return out

    def set_many(self, items):
        items = list(items.items() if isinstance(items, dict) else items)
        self.calls.append(("set_many", len(items)))
        for k, v in items:
            MemoryStore.set(self, k, v)

    def delete_many(self, keys):
        keys = list(keys)
        self.calls.append(("delete_many", len(keys)))
        for k in keys:
            MemoryStore.delete(self, k)


LAYOUTS = {
    "v3-zstd": dict(compressors={"name": "zstd", "configuration": {"level": 1}}),
    "v3-raw": dict(compressors=None),
    "v2-blosc": dict(zarr_format=2),
    "sharded": dict(shards=(20, 30)),
    "sharded-raw": dict(shards=(20, 30), compressors=None),
    "sharded-gzip": dict(shards=(20, 30), compressors={"name": "gzip",
                                                       "configuration": {"level": 1}}),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("threads", [1, 2])
def test_batched_round_trip_equals_plain_store(layout, threads):
    rng = np.random.default_rng(1)
    data = rng.integers(0, 1000, size=(95, 130)).astype("i4")
    data[:40, :60] = 0  # some empty chunks
    results = []
    for store in (MemoryStore(), BatchedStore()):
        with config.set(threads=threads):
            a = zarrfast.create_array(store, name="a", shape=data.shape, chunks=(10, 15),
                                      dtype="i4", fill_value=0, **LAYOUTS[layout])
            a[...] = data
            a[3:77, 5:111] = data[3:77, 5:111] + 1  # partial writes keep old elements
            a[50:60, :] = 0  # chunks that become empty are deleted
            results.append((a[...], a[::3, 7:99:2], sorted(store.list())))
    for x, y in zip(results[0], results[1], strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def test_chunk_reads_and_writes_use_batches():
    store = BatchedStore()
    a = zarrfast.create_array(store, name="a", shape=(64, 64), chunks=(8, 8), dtype="u1",
                              compressors=None)
    store.calls.clear()
    a[...] = np.ones((64, 64), "u1")
    assert ("set_many", 64) in store.calls
    assert not [c for c in store.calls if c[0] == "get"]
    store.calls.clear()
    with config.set(io_concurrency=8):
        np.testing.assert_array_equal(a[...], 1)
    # one get_many per I/O thread (each decoded while the others are in flight)
    assert sorted(store.calls) == [("get_many", 8)] * 8
    store.calls.clear()
    a[4:12, :] = 2  # 16 partial chunks: their old bytes come in one batch
    assert store.calls == [("get_many", 16), ("set_many", 16)]


def test_remote_reads_keep_many_requests_in_flight():
    """Sharded reads fetch shards on the I/O pool; plain chunks in get_many batches."""
    store = BatchedStore()
    a = zarrfast.create_array(store, name="a", shape=(64, 64), chunks=(4, 4), shards=(8, 8),
                              dtype="u2", compressors=None)
    a[...] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    # the requests overlap (more than the two threads' worth in flight at once): the
    # proof of concurrency is this count, which the store holds its requests for (it
    # delayed each 50 ms before, which a loaded machine could make fewer overlap)
    store.gate.hold(3)
    with config.set(io_concurrency=16, threads=2):
        np.testing.assert_array_equal(a[...], np.arange(64 * 64).reshape(64, 64))
    assert not store.gate.timed_out, f"at most {store.gate.peak} requests in flight"
    assert store.gate.peak > 2, store.gate.peak


@pytest.mark.parametrize("compressors", ["zstd", "gzip"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_corrupt_inner_chunk_of_a_remote_shard_is_named(compressors, threads):
    store = BatchedStore()
    a = zarrfast.create_array(store, name="a", shape=(40, 40), chunks=(10, 10),
                              shards=(20, 20), dtype="i4",
                              compressors={"name": compressors, "configuration": {"level": 1}})
    a[...] = np.arange(1600, dtype="i4").reshape(40, 40)
    shard = bytearray(store.get("a/c/1/0"))
    # the index (4 inner chunks: offset, size; then a crc32c) is at the end
    index = np.frombuffer(bytes(shard[-(4 * 16 + 4):-4]), dtype="<u8").reshape(4, 2)
    off, size = int(index[1, 0]), int(index[1, 1])
    shard[off:off + size] = b"\xff" * size  # inner chunk (0, 1): garbage of the same size
    MemoryStore.set(store, "a/c/1/0", bytes(shard))
    with config.set(threads=threads):
        for sel in (np.s_[...], np.s_[20:30, 10:20]):
            with pytest.raises(zarrfast.errors.ChunkDecodeError,
                               match=r"a/c/1/0.*inner chunk.*(0, 1)|a/c/1/0.*0.1"):
                a[sel]
        # the rest of the array still reads
        np.testing.assert_array_equal(a[:20, :], np.arange(800, dtype="i4").reshape(20, 40))
