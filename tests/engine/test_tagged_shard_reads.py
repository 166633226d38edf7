"""Shard indexes kept under their version's ETag on object stores (``tagged_reads``):
a partial read of a shard takes the index from the cache without a request, and every
read of inner chunks is checked to come from the version the index was read from; when
the shard was replaced, the index is read again (zarrfast.engine.shard_view)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrfast
from zarrfast.engine import shard_view
from zarrfast.errors import ConcurrentWriteError
from zarrfast.storage import ObjectStore
from zarrfast.storage.obstore import _strong_tag

obstore = pytest.importorskip("obstore")
from obstore.store import MemoryStore as ObMemory  # noqa: E402

SHAPE, CHUNKS, SHARDS = (64, 64), (8, 8), (32, 32)


class CountingStore(ObjectStore):
    """Counts the requests of each kind (a subclass that keeps ``get``: tagged)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.requests: list[tuple[str, object]] = []

    def _get_tagged(self, key, byte_range):
        self.requests.append((key, byte_range))
        return super()._get_tagged(key, byte_range)


def _pair(data):
    """A writer's and a reader's ObjectStore of one obstore memory store."""
    mem = ObMemory()
    writer = ObjectStore(mem)
    a = zarrfast.create_array(writer, shape=SHAPE, chunks=CHUNKS, shards=SHARDS,
                              dtype="i4", fill_value=-1)
    a[:] = data
    reader = CountingStore(mem, read_only=True)
    return a, zarrfast.open_array(reader, mode="r"), reader


def _index_requests(store):
    return sum(1 for key, r in store.requests
               if key.startswith("c/") and type(r).__name__ == "SuffixByteRequest")


def test_index_read_once_then_taken_from_the_cache(tmp_path):
    data = np.arange(64 * 64, dtype="i4").reshape(SHAPE)
    _, r, store = _pair(data)
    assert store.tagged_reads
    for _ in range(3):
        np.testing.assert_array_equal(r[3:11, 5:20], data[3:11, 5:20])
    assert _index_requests(store) == 1  # (then every inner chunk read checked by ETag)


def test_a_replaced_shard_is_read_with_its_new_index():
    old = np.arange(64 * 64, dtype="i4").reshape(SHAPE)
    w, r, store = _pair(old)
    np.testing.assert_array_equal(r[0:20, 0:20], old[0:20, 0:20])  # (index cached)
    new = (old * 3 + 7)[::-1].copy()
    new[0:8, 0:8] = -1  # (an inner chunk of fill: left out, the index moves)
    w[:] = new
    np.testing.assert_array_equal(r[0:20, 0:20], new[0:20, 0:20])
    np.testing.assert_array_equal(r[2, 3:30], new[2, 3:30])
    assert _index_requests(store) == 2


def test_a_deleted_shard_reads_as_fill():
    data = np.arange(64 * 64, dtype="i4").reshape(SHAPE)
    w, r, _ = _pair(data)
    np.testing.assert_array_equal(r[1:9, 1:9], data[1:9, 1:9])
    w[0:32, 0:32] = -1  # (every inner chunk of shard c/0/0 empty: the shard deleted)
    np.testing.assert_array_equal(r[1:9, 1:9], np.full((8, 8), -1, "i4"))


def test_reads_while_a_writer_replaces_the_shard_see_one_version():
    versions = [np.full(SHAPE, v, dtype="i4") + np.arange(64, dtype="i4") for v in (10, 2000)]
    w, r, _ = _pair(versions[0])
    stop = threading.Event()
    errors: list[BaseException] = []

    def write():
        k = 0
        try:
            while not stop.is_set():
                k += 1
                w[:] = versions[k % 2]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=write)
    t.start()
    try:
        for _ in range(200):
            got = r[0:16, 0:24]  # (inner chunks of one shard: one version each read)
            assert any(np.array_equal(got, v[0:16, 0:24]) for v in versions), got
    finally:
        stop.set()
        t.join()
    assert not errors


def test_a_shard_that_keeps_changing_is_an_error_naming_it(monkeypatch):
    data = np.arange(64 * 64, dtype="i4").reshape(SHAPE)
    _, r, store = _pair(data)
    r[0:4, 0:4]
    calls = iter(range(10**6))
    real = ObjectStore.get_many_tagged

    def other_tags(self, keys, ranges):
        values, _ = real(self, keys, ranges)
        return values, [f'"other {next(calls)}"' for _ in keys]

    monkeypatch.setattr(CountingStore, "get_many_tagged", other_tags)
    with pytest.raises(ConcurrentWriteError, match=r"shard 'c/0/0'"):
        r[0:4, 0:4]
    assert next(calls) == shard_view.TAG_ATTEMPTS


def test_subclasses_with_their_own_get_are_not_tagged():
    class OwnGet(ObjectStore):
        def get(self, key, byte_range=None):
            return super().get(key, byte_range)

    assert ObjectStore(ObMemory()).tagged_reads
    assert not OwnGet(ObMemory()).tagged_reads


@pytest.mark.parametrize(("etag", "tag"), [('"abc"', '"abc"'), ('W/"abc"', None), (None, None),
                                           ("", None)])
def test_only_strong_etags_tag_a_version(etag, tag):
    assert _strong_tag(etag) == tag


@pytest.mark.parametrize("cached", [False, True])
def test_an_index_pointing_past_the_end_is_still_named(cached):
    """Ranges past the end of a shard come back without a version (clipped): a damaged
    shard is still reported as such, not as a shard that keeps changing."""
    from zarrfast.errors import ChunkDecodeError

    data = np.arange(64 * 64, dtype="i4").reshape(SHAPE)
    w, r, _ = _pair(data)
    if cached:
        np.testing.assert_array_equal(r[0:8, 0:8], data[0:8, 0:8])
    mem = w.store.store
    shard = bytes(obstore.get(mem, "c/0/0").bytes())
    index_nbytes = 16 * 16 + 4  # (16 inner chunks, crc32c)
    obstore.put(mem, "c/0/0", shard[:100] + shard[-index_nbytes:])
    with pytest.raises(ChunkDecodeError, match=r"shard 'c/0/0'.*past the end"):
        r[24:32, 24:32]
