"""An in-memory shard read from one value: its index and its inner chunks come from the
value as it was when the read opened it, even if a writer replaces it meanwhile
(``MemoryStore.open_ranges``, ``ShardView``).  Read through separate gets, the index
of one value and the inner chunks of the next gave decode errors, or, uncompressed,
other inner chunks' values without an error."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrfast
from zarrfast.engine.shard_view import ShardView
from zarrfast.storage import MemoryStore, RangeByteRequest

OLD = np.arange(1, 257, dtype="<i4").reshape(16, 16)


def _sharded(store):
    a = zarrfast.create_array(store, shape=(16, 16), chunks=(4, 4), shards=(16, 16),
                              dtype="<i4", compressors=None, fill_value=0)
    a[...] = OLD
    return a


def _replace(store):
    """The shard rewritten: inner chunk (0, 0) becomes fill (dropped from the shard), so
    every later inner chunk moves, and the others change values."""
    new = -OLD
    new[0:4, 0:4] = 0
    zarrfast.open_array(store, mode="r+")[...] = new


def test_open_ranges_reads_the_value_it_opened():
    store = MemoryStore()
    store.set("k", b"0123456789")
    reader = store.open_ranges("k")
    store.set("k", b"abcdef")
    assert reader.size == 10
    assert reader.read(RangeByteRequest(2, 5)) == b"234"
    out = bytearray(4)
    assert reader.read_into(out, 8) == 2 and out[:2] == b"89"
    assert store.open_ranges("missing") is None


def test_a_shard_view_reads_one_value():
    store = MemoryStore()
    a = _sharded(store)
    view = ShardView(store, "c/0/0", a._chain)
    assert view.index() is not None  # (the old value's index)
    _replace(store)
    keys = [f"c/{i}/{j}" for i in range(4) for j in range(4)]
    got = view.get_many(keys)
    for k, blob in zip(keys, got, strict=True):
        i, j = (int(x) for x in k.split("/")[1:])
        want = OLD[4 * i:4 * i + 4, 4 * j:4 * j + 4]
        np.testing.assert_array_equal(np.frombuffer(blob, dtype="<i4").reshape(4, 4), want)
    np.testing.assert_array_equal(np.frombuffer(view.get("c/3/3"), "<i4").reshape(4, 4),
                                  OLD[12:16, 12:16])


@pytest.mark.parametrize("how", ["plain", "get_many"])
def test_reads_racing_a_writer_see_whole_values(how):
    """Reads of parts of a shard while another thread rewrites it: every result is all
    old values or all new ones (never bytes of one value read at the other's offsets)."""
    store = MemoryStore()
    a = _sharded(store)
    new = -OLD
    new[0:4, 0:4] = 0
    sels = [(slice(1, 15), slice(2, 13)), (slice(None, None, -3), slice(0, 16, 5)), (5, slice(None))]
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer():
        w = zarrfast.open_array(store, mode="r+")
        try:
            for k in range(300):
                w[...] = new if k % 2 == 0 else OLD
        finally:
            stop.set()

    t = threading.Thread(target=writer)
    t.start()
    bad = 0
    while not stop.is_set():
        try:
            got = a.get_many(sels) if how == "get_many" else [a[s] for s in sels]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            break
        for s, r in zip(sels, got, strict=True):
            if not (np.array_equal(r, OLD[s]) or np.array_equal(r, new[s])):
                bad += 1
    t.join()
    assert not errors, errors[0]
    assert bad == 0
