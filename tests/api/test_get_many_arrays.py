"""``zarrfast.get_many``: selections of several arrays in one call."""

from __future__ import annotations

import asyncio

import numpy as np
import obstore
import pytest

import zarrfast
from zarrfast.errors import BoundsCheckError, IndexingError
from zarrfast.storage import LocalStore, LoggingStore, MemoryStore, ObjectStore


def _arrays(store, n=6):
    root = zarrfast.open_group(store, mode="w")
    data = []
    for i in range(n):
        values = np.arange(60 * 70, dtype="float32").reshape(60, 70) * (i + 1)
        kw = dict(shards=(40, 40), chunks=(20, 20)) if i % 2 else dict(chunks=(16, 16))
        a = root.create_array(f"t{i}", shape=values.shape, dtype=values.dtype, **kw)
        a[:] = values
        data.append(values)
    return root, data


@pytest.mark.parametrize("kind", ["memory", "local", "object"])
def test_same_region_of_many_arrays(kind, tmp_path):
    store = {"memory": MemoryStore(), "local": LocalStore(tmp_path / "g.zarr"),
             "object": ObjectStore(obstore.store.MemoryStore())}[kind]
    root, data = _arrays(store)
    region = (slice(5, 45), slice(10, 60))
    requests = [(root[f"t{i}"], region) for i in range(len(data))]
    requests.append((root["t0"], (slice(0, 3), 4)))  # a second selection of one array
    got = zarrfast.get_many(requests)
    assert len(got) == len(requests)
    for i, values in enumerate(data):
        np.testing.assert_array_equal(got[i], values[region])
    np.testing.assert_array_equal(got[-1], data[0][0:3, 4])


def test_one_array_twice_reads_shared_chunks_once():
    backing = MemoryStore()
    root, data = _arrays(backing, n=1)
    logged = LoggingStore(backing)
    a = zarrfast.open_array(logged, path="t0", mode="r")
    logged.reset()
    got = zarrfast.get_many([(a, (slice(0, 16), slice(0, 16))), (a, (slice(0, 8), slice(0, 8)))])
    assert logged.counts() == {"get": 1}  # chunk (0, 0), once
    np.testing.assert_array_equal(got[1], data[0][0:8, 0:8])


def test_kinds_and_async_arrays():
    root, data = _arrays(MemoryStore(), n=2)
    got = zarrfast.get_many([(root["t0"], ([1, 0], slice(0, 2))), (root["t1"], (0, [3, 1]))],
                            kind="orthogonal")
    np.testing.assert_array_equal(got[0], data[0][[1, 0], 0:2])
    np.testing.assert_array_equal(got[1], data[1][0, [3, 1]])
    got = asyncio.run(zarrfast.api.asynchronous.get_many(
        [(root["t0"].async_array, (2, 3)), (root["t1"].async_array, (slice(0, 2), 5))]))
    np.testing.assert_array_equal(got[0], data[0][2, 3])
    np.testing.assert_array_equal(got[1], data[1][0:2, 5])


def test_no_requests_no_results():
    assert zarrfast.get_many([]) == []
    assert zarrfast.get_many(iter(())) == []
    assert asyncio.run(zarrfast.api.asynchronous.get_many([])) == []


def test_bad_requests_are_named():
    root, _ = _arrays(MemoryStore(), n=2)
    with pytest.raises(IndexingError, match="request 1 is not an .array, selection. pair"):
        zarrfast.get_many([(root["t0"], 0), root["t1"]])
    with pytest.raises(IndexingError, match="request 0: ndarray is not a zarrfast array"):
        zarrfast.get_many([(np.zeros(3), 0)])
    with pytest.raises(BoundsCheckError, match=r"array '/t1': selection 2 .*out of bounds"):
        zarrfast.get_many([(root["t0"], 0), (root["t1"], 0), (root["t1"], 60)])


@pytest.mark.parametrize("sharded", [False, True])
def test_arrays_of_one_layout_are_one_batch(sharded):
    """Fifty arrays of one layout (their attributes differ): their chunks are read as
    one batch -- each chunk once, though two requests share it -- with each array's
    own values and fill; an array of another dtype is read on its own."""
    backing = MemoryStore()
    root = zarrfast.open_group(backing, mode="w")
    kw = dict(shards=(32, 32), chunks=(16, 16)) if sharded else dict(chunks=(16, 16))
    data = {}
    for i in range(50):
        a = root.create_array(f"v{i}", shape=(64, 64), dtype="int32", fill_value=-1,
                              attributes={"i": i}, **kw)
        if i % 7:  # (every seventh array never written: the fill value)
            a[:] = data.setdefault(i, np.arange(64 * 64, dtype="int32").reshape(64, 64) + i)
    other = root.create_array("f", shape=(64, 64), dtype="float64", chunks=(16, 16))
    other[:] = 0.5
    logged = LoggingStore(backing)
    group = zarrfast.open_group(logged, mode="r")
    region = (slice(10, 30), slice(5, 40))
    requests = [(group[f"v{i}"], region) for i in range(50)]
    requests += [(group["v1"], (slice(10, 12), slice(5, 7))), (group["f"], region)]
    logged.reset()
    got = zarrfast.get_many(requests)
    for i in range(50):
        expected = data[i][region] if i in data else np.full((20, 35), -1, dtype="int32")
        np.testing.assert_array_equal(got[i], expected)
    np.testing.assert_array_equal(got[50], data[1][10:12, 5:7])
    np.testing.assert_array_equal(got[51], np.full((20, 35), 0.5))
    counts = logged.counts()
    if not sharded:
        # 6 chunks per region, each of the 50 + 1 arrays once (v1's second request
        # shares its chunks with its first)
        assert sum(counts.values()) == 6 * 51, counts
    else:
        assert sum(counts.values()) <= 51 * 4, counts  # a shard per array, at most


@pytest.mark.parametrize("threads", [1, 2])
def test_arrays_of_their_own_stores_spread_over_threads(threads, tmp_path):
    """Arrays on stores of their own (a batch each) read warm at one or two threads
    (the batches after the first spread over the threads): every result is its array's
    region, with repeated arrays and negative bounds; a chunk that cannot be decoded
    stops the call with an error naming its array's chunk, whichever thread read it."""
    arrays, data = [], []
    for i in range(9):
        values = (np.arange(50 * 40, dtype="int32").reshape(50, 40) - 700) * (i + 1)
        a = zarrfast.create_array(LocalStore(tmp_path / f"a{i}.zarr"), shape=values.shape,
                                  dtype=values.dtype, chunks=(16, 16), fill_value=-1)
        a[:] = values
        arrays.append(zarrfast.open_array(LocalStore(tmp_path / f"a{i}.zarr"), mode="r"))
        data.append(values)
    region = (slice(-40, -3), slice(5, 37))
    order = [*range(9), 4, 0]  # (an array twice)
    with zarrfast.config.set(threads=threads):
        for _ in range(2):
            got = zarrfast.get_many([(arrays[i], region) for i in order])
            for g, i in zip(got, order, strict=True):
                np.testing.assert_array_equal(g, data[i][region])
        (tmp_path / "a6.zarr" / "c" / "1" / "1").write_bytes(b"not a zstd frame")
        with pytest.raises(zarrfast.errors.ZarrfastError, match=r"c/1/1"):
            zarrfast.get_many([(arrays[i], region) for i in order])
