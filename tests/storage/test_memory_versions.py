"""Version tokens of MemoryStore, which key the cache of shard indexes: a token must never
survive a replacement of the value.  A dict the caller gave may be written by other code
(another store object, zarr-python), whose replacement value may get the old object's id:
no tokens there.  A read-only view of a store's own dict counts the store's writes."""

from __future__ import annotations

import numpy as np

import zarrfast
from zarrfast.storage import MemoryStore


def test_a_dict_of_the_callers_gives_no_tokens() -> None:
    d: dict = {}
    store = MemoryStore(d)
    store.set("k", b"value")
    assert store.version("k") is None
    assert store.with_read_only().version("k") is None


def test_a_view_counts_the_writes_of_the_store_it_views() -> None:
    store = MemoryStore()
    view = store.with_read_only()
    store.set("k", b"first")
    token = view.version("k")
    assert token is not None and token == store.version("k")
    store.set("k", b"other")  # (the same length: the new object may take the old one's id)
    assert view.version("k") == store.version("k") != token


def test_a_pickled_copy_keeps_tokens_of_its_own() -> None:
    import pickle

    store = MemoryStore({"k": b"value"})
    copy = pickle.loads(pickle.dumps(store))
    assert copy.version("k") is not None


def test_two_arrays_over_one_dict_read_partial_shards_as_written() -> None:
    # one array writes whole shards, the other (opened once, its index cache warm) reads
    # part of a shard after each write: it must see the shard just written, whichever
    # inner chunks it holds (the inner chunks move within the shard from write to write)
    d: dict = {}
    writer = zarrfast.create_array(d, shape=(8,), shards=(8,), chunks=(2,), dtype="int32",
                                   fill_value=0, compressors=None)
    reader = zarrfast.open_array(d, mode="r")
    for i in range(200):
        v = np.arange(1, 9, dtype="int32") + 10 * i
        if i % 2:
            v[2:4] = 0  # (an inner chunk of fill values is left out of the shard)
        else:
            v[6:8] = 0
        writer[:] = v + 1000
        writer[:] = v
        np.testing.assert_array_equal(reader[4:8], v[4:8], err_msg=f"round {i}")
