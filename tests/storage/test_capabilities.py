"""``Store.capabilities``: what a store can do, computed once per store, the one thing the
engine asks a store about.  Subclasses that change what a read or a write does lose the
fast ways that would bypass them."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.storage import (
    CacheStore,
    LocalStore,
    MemoryStore,
    StoreCapabilities,
    WrapperStore,
    ZipStore,
)
from zarrfast.storage import locks as _locks


def test_a_local_store_reads_files_and_writes_batches(tmp_path):
    caps = LocalStore(tmp_path).capabilities
    assert caps.files and caps.reads_into and caps.batched_sets and caps.region_sets
    assert caps.copies_values and not caps.batched_gets and caps.byte_ranges
    assert caps.interprocess_locks == _locks.HAVE_FLOCK and not caps.conditional_writes


def test_memory_and_zip_stores(tmp_path):
    mem = MemoryStore().capabilities
    assert not (mem.files or mem.reads_into or mem.batched_gets or mem.interprocess_locks)
    z = ZipStore(tmp_path / "a.zip", mode="w")
    try:
        assert not z.capabilities.deletes and z.capabilities.writes
    finally:
        z.close()


def test_computed_once(tmp_path):
    store = LocalStore(tmp_path)
    assert store.capabilities is store.capabilities
    with pytest.raises(AttributeError):
        store.capabilities.files = False  # frozen


def test_turning_a_fast_read_off_is_seen(tmp_path):
    store = LocalStore(tmp_path)
    assert store.capabilities.reads_into
    store.fast_get_into = False
    assert not store.capabilities.reads_into and not store.capabilities.files


class OwnGet(LocalStore):
    """A store that changes what ``get`` returns: kernels reading its files, or reads
    into buffers, would bypass it."""

    def get(self, key, byte_range=None):
        value = super().get(key, byte_range)
        return value


class OwnSet(LocalStore):
    def set(self, key, value):
        super().set(key, value)


def test_subclasses_changing_reads_or_writes_lose_what_would_bypass_them(tmp_path):
    get = OwnGet(tmp_path / "g").capabilities
    assert not (get.files or get.reads_into)
    assert get.batched_sets
    put = OwnSet(tmp_path / "s").capabilities
    assert not (put.batched_sets or put.region_sets or put.copies_values)
    assert put.files


def test_a_wrapper_sees_every_read_and_keeps_the_locks(tmp_path):
    inner = LocalStore(tmp_path)
    caps = WrapperStore(inner).capabilities
    assert not (caps.files or caps.reads_into or caps.copies_values)
    assert caps.interprocess_locks == inner.capabilities.interprocess_locks
    cache = CacheStore(inner, max_bytes=2**20).capabilities
    assert not cache.files


def test_a_store_of_class_flags_only_gets_them():
    class Remote(MemoryStore):
        batched_reads = True
        supports_partial_reads = False

    caps = Remote().capabilities
    assert caps == StoreCapabilities(byte_ranges=False, batched_gets=True)


def test_file_locks_stay_a_setting_of_each_write(tmp_path):
    """The capability says the platform can lock files; ``config file_locks`` decides,
    at each write, whether it does (it can change after the store was first used)."""
    store = LocalStore(tmp_path)
    a = zarrfast.create_array(store, shape=(8,), chunks=(4,), shards=(8,), dtype="i1")
    a[1:3] = 1
    assert store.capabilities.interprocess_locks == _locks.HAVE_FLOCK
    with config.set(file_locks=False):
        assert not store.interprocess_locks
        a[5:6] = 2  # a partial shard write: the threads of this process only
    np.testing.assert_array_equal(a[...], [0, 1, 1, 0, 0, 2, 0, 0])


def test_a_flag_set_on_a_store_object_later_is_seen(tmp_path):
    """A flag set after the store was first used (a store that starts keeping the values
    it is given): the capabilities are computed again, so the engine no longer hands it
    a reused buffer."""
    store = MemoryStore()
    store.copies_values = True
    assert store.capabilities.copies_values
    store.copies_values = False  # (as a store keeping references would say)
    assert not store.capabilities.copies_values
    store.batched_reads = True
    assert store.capabilities.batched_gets
    local = LocalStore(tmp_path)
    assert local.capabilities.batched_sets
    local.fsync = True
    assert not local.capabilities.batched_sets


def test_capabilities_are_not_pickled_nor_copied(tmp_path):
    import copy
    import pickle

    store = OwnGet(tmp_path)
    assert store.capabilities.writes
    assert "_caps" in store.__dict__
    for other in (pickle.loads(pickle.dumps(store)), copy.copy(store),
                  store.with_read_only()):
        assert "_caps" not in other.__dict__


class SomeFiles(LocalStore):
    """Kernels may read its files, but not those of the keys of one chunk."""

    def file_paths(self, keys):
        if any(k.endswith("/1") for k in keys):
            return None
        return super().file_paths(keys)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_store_refusing_file_paths_for_some_keys_is_read_its_own_way(tmp_path, threads):
    """The capability says kernels may read the store's files; the store still answers
    for the keys asked (no file paths here): the read takes another way, right values."""
    big = np.arange(4 * 256 * 256, dtype="f8").reshape(4, 256, 256)
    a = zarrfast.create_array(SomeFiles(tmp_path), shape=big.shape, chunks=(1, 128, 128),
                              dtype="f8", compressors={"name": "zstd", "configuration": {}})
    a[...] = big
    with config.set(threads=threads):
        np.testing.assert_array_equal(a[0:1, 100:200, 100:140], big[0:1, 100:200, 100:140])
        np.testing.assert_array_equal(a[1:3], big[1:3])


def test_turning_fast_reads_off_on_a_store_arrays_already_use(tmp_path):
    big = np.arange(4 * 256 * 256, dtype="f8").reshape(4, 256, 256)
    store = LocalStore(tmp_path)
    a = zarrfast.create_array(store, shape=big.shape, chunks=(1, 256, 256), dtype="f8",
                              compressors={"name": "zstd", "configuration": {}})
    a[...] = big
    np.testing.assert_array_equal(a[0:2], big[0:2])
    store.fast_get_into = False
    with config.set(threads=3):
        np.testing.assert_array_equal(a[0:4], big)
