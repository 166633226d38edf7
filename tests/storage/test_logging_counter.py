"""``LoggingStore.counter``: zarr-python's ``collections.Counter`` of operations, which its
tests read (``store.counter["get"]``) and zero (``store.counter.clear()``).

The counts are those zarr-python 3.4.2's own tests expect of a sharded array: a full
shard written reads nothing, a partial one reads the shard once, and creating an array
with data reads one document.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import LoggingStore, MemoryStore


@pytest.mark.parametrize(("selection", "gets"), [(slice(None), 0), (slice(1, 9), 1)])
def test_shard_writes_count_gets_as_zarr_python_expects(selection, gets) -> None:
    store = LoggingStore(MemoryStore())
    arr = zarrfast.create_array(store, shape=(10,), chunks=(1,), shards=(10,), dtype="int64",
                                fill_value=-1)
    arr[:] = 0
    before = len(store.operations)
    store.counter.clear()
    arr[selection] = 1
    assert store.counter["get"] == gets
    assert store.counter["set"] == 1
    assert len(store.operations) == before + gets + 1  # (clearing it keeps the records)


@pytest.mark.parametrize("shards", [1, 2])
def test_create_with_data_reads_one_document(shards) -> None:
    store = LoggingStore(MemoryStore())
    zarrfast.create_array(store, data=np.zeros(100 * shards, dtype="int64"), chunks=(1,),
                          shards=(100,), fill_value=-1)
    assert store.counter["get"] == 1


def test_counter_counts_records_batches_too_and_reset_zeroes_it() -> None:
    store = LoggingStore(MemoryStore())
    store.set_many({"a": b"1", "b": b"2"})
    store.get_many(["a", "b", "c"])
    assert store.counter == {"set": 2, "set_many": 1, "get": 3, "get_many": 1}
    assert store.counts() == {"set": 2, "get": 3}
    store.reset()
    assert store.counter == {} and len(store.operations) == 0
    assert pickle.loads(pickle.dumps(store)).counter == {}


def test_counter_of_threads() -> None:
    store = LoggingStore(MemoryStore(), max_records=10)
    store.set("k", b"v")

    def read() -> None:
        for _ in range(500):
            store.get("k")

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.counter["get"] == 2000
