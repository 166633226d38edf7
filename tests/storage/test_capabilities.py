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
