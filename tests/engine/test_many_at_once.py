"""Reads that run at the same time: ``zarrfast.engine.many.at_once``, and the arrays of
several remote stores read by ``zarrfast.get_many`` with every request of every array in
flight together (issue 45's regions over HTTP: 50 arrays, each on its own store)."""

from __future__ import annotations

import threading

import numpy as np
import obstore
import pytest

import zarrfast
from zarrfast import concurrency
from zarrfast.bench.data import boxes as random_boxes
from zarrfast.engine.many import at_once
from zarrfast.storage import LocalStore, ObjectStore


class _Rendezvous:
    """Counts the calls in progress; each call waits until ``target`` are in progress at
    once (or ``patience`` seconds pass: then it goes on, and the test sees a lower
    ``most``).  No timing is asserted: only how many calls were in progress together."""

    def __init__(self, target: int, patience: float = 1.0) -> None:
        self.target, self.patience = target, patience
        self.now = self.most = self.calls = 0
        self.cond = threading.Condition()

    def __enter__(self) -> None:
        with self.cond:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.most >= self.target, timeout=self.patience)

    def __exit__(self, *exc: object) -> None:
        with self.cond:
            self.now -= 1


def test_at_once_runs_up_to_limit_together_and_every_call_ends():
    meet = _Rendezvous(target=4)
    done = []

    def fn(i: int) -> None:
        with meet:
            done.append(i)

    at_once(fn, range(10), 4)
    assert sorted(done) == list(range(10))
    assert meet.most == 4


def test_at_once_never_more_than_limit():
    meet = _Rendezvous(target=99, patience=0.05)
    at_once(lambda i: meet.__enter__() or meet.__exit__(), range(12), 3)
    assert meet.calls == 12 and meet.most == 3


def test_at_once_nested_runs_together():
    """at_once called from a call run by at_once (a get_many batch whose reads run at
    once): the inner calls run together too (on threads of their own: a kept thread
    never waits for work queued behind it)."""
    meet = _Rendezvous(target=6)

    def outer(i: int) -> None:
        at_once(lambda j: meet.__enter__() or meet.__exit__(), range(3), 3)

    at_once(outer, range(2), 2)
    assert meet.calls == 6 and meet.most == 6


def test_at_once_an_interrupt_before_errors():
    gate = threading.Barrier(2, timeout=10)

    def fn(i: int) -> None:
        gate.wait()  # (both have started)
        if i == 0:
            raise ValueError("first item")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        at_once(fn, [0, 1], 2)


def test_at_once_one_by_one_inline():
    names = []
    at_once(lambda i: names.append(threading.current_thread().name), range(3), 1)
    assert names == [threading.current_thread().name] * 3


def test_at_once_raises_the_first_error_after_every_call_ended():
    running = []
    ended = []
    gate = threading.Barrier(3, timeout=10)

    def fn(i: int) -> None:
        running.append(i)
        gate.wait()  # (all three have started)
        if i == 1:
            raise ValueError("one")
        if i == 2:
            raise KeyError("two")
        ended.append(i)

    with pytest.raises(ValueError, match="one"):
        at_once(fn, [0, 1, 2], 3)
    assert sorted(running) == [0, 1, 2] and ended == [0]


def test_at_once_threads_are_not_pool_tasks():
    """A read run by at_once runs its own fetches on the pools, as when called alone: its
    thread is not marked as a pool task (whose nested work runs inline)."""
    seen = []
    at_once(lambda i: seen.append(concurrency._in_task.active), range(4), 4)
    assert seen == [False] * 4


def test_at_once_marks_its_reads_one_of_many_and_restores():
    """Every call at_once runs on threads of its own (the calling thread one of them) is
    marked one of many reads (their small box reads then decode alone); the calling
    thread is unmarked again after, and calls run one by one are never marked."""
    seen = []
    at_once(lambda i: seen.append(concurrency.one_of_many()), range(6), 3)
    assert seen == [True] * 6
    assert concurrency.one_of_many() is False
    serial = []
    at_once(lambda i: serial.append(concurrency.one_of_many()), range(3), 1)
    at_once(lambda i: serial.append(concurrency.one_of_many()), [0], 4)
    assert serial == [False] * 4
    with pytest.raises(ValueError, match="boom"):
        at_once(lambda i: (_ for _ in ()).throw(ValueError("boom")), range(3), 3)
    assert concurrency.one_of_many() is False


def _helper_rows() -> int:
    from zarrfast._ext import _decode

    return _decode.helper_jobs()[1]


@pytest.mark.parametrize("shards", [None, (32, 32, 32)])
def test_box_reads_run_at_once_decode_alone_and_right(tmp_path, shards):
    """Box reads of files run by at_once (zarrfast.get_many of cold arrays on stores of
    their own) decode in their own threads: no row of any box goes to the kernels'
    helper thread, whose spinning between the reads' jobs took a fifth of the CPU time
    of 50 cold 256x256 regions (issue 45).  Before, with two threads each read shared
    its box with the helper; the values are right either way."""
    shape, chunk = (64, 64, 64), 16
    a = zarrfast.create_array(LocalStore(tmp_path / "a"), shape=shape, chunks=(chunk,) * 3,
                              shards=shards, dtype="uint16", compressors=[{"name": "zstd"}])
    data = (np.arange(np.prod(shape)) % 997).astype("uint16").reshape(shape)
    a[...] = data
    # one to two chunks long per side: 8 to 27 chunks
    sels = random_boxes(np.random.default_rng(5), shape, (chunk,) * 3, 40)
    got: dict[int, np.ndarray] = {}
    with zarrfast.config.set(threads=2):
        a[sels[0]]  # (the helper started, a shard index cached)
        rows = _helper_rows()
        at_once(lambda i: got.__setitem__(i, a[sels[i]]), range(len(sels)), 4)
        assert _helper_rows() == rows
    for i, sel in enumerate(sels):
        np.testing.assert_array_equal(got[i], data[sel])


class _CountingStore(ObjectStore):
    """An ObjectStore (of an obstore MemoryStore: requests in flight at once, as a
    remote store has) whose requests meet at a rendezvous shared by several stores."""

    meet: _Rendezvous

    def _get(self, key, byte_range):
        if key.endswith("zarr.json"):
            return super()._get(key, byte_range)
        with self.meet:
            return super()._get(key, byte_range)


def test_get_many_of_remote_stores_has_every_request_in_flight_together():
    """Three arrays, each on a store of its own (the harness's remote regions: each array
    opened from its URL), a region of 4 chunks of each: ``zarrfast.get_many`` reads
    them at the same time, each with its 4 requests in flight -- 12 at once.  When the
    arrays were read on the I/O pool's threads, each fetched its chunks one after
    another (a pool thread runs its nested fetches inline): 3 at once, 4 round trips."""
    meet = _Rendezvous(target=12)
    arrays, data = [], []
    for i in range(3):
        store = _CountingStore(obstore.store.MemoryStore())
        values = np.arange(64 * 64, dtype="int32").reshape(64, 64) + 1000 * i
        a = zarrfast.create_array(store, shape=values.shape, chunks=(32, 32), dtype="int32")
        a[:] = values
        store.meet = meet
        arrays.append(a)
        data.append(values)
    region = (slice(10, 50), slice(20, 40))
    meet.most = meet.calls = 0
    with zarrfast.config.set(threads=2, io_concurrency=64):
        got = zarrfast.get_many([(a, region) for a in arrays])
    for g, values in zip(got, data, strict=True):
        np.testing.assert_array_equal(g, values[region])
    assert meet.calls == 12
    assert meet.most == 12


def test_get_many_of_stores_with_their_own_limits_has_each_limit_in_flight():
    """Three stores, each allowing 2 requests at once (``max_concurrency``), a region of 4
    chunks of an array of each: 2 requests of each store in flight, 6 in all -- not 2 in
    all, the request pool's size when it holds one store's limit."""
    # (a request pool made anew: one that an earlier read grew would hide the limit)
    concurrency._request_pool.reset()
    meet = _Rendezvous(target=6)
    arrays, data = [], []
    for i in range(3):
        store = _CountingStore(obstore.store.MemoryStore(), max_concurrency=2)
        values = np.arange(64 * 64, dtype="int32").reshape(64, 64) - 1000 * i
        a = zarrfast.create_array(store, shape=values.shape, chunks=(32, 32), dtype="int32")
        a[:] = values
        store.meet = meet
        arrays.append(a)
        data.append(values)
    region = (slice(10, 50), slice(20, 40))
    with zarrfast.config.set(threads=2, io_concurrency=64):
        got = zarrfast.get_many([(a, region) for a in arrays])
    for g, values in zip(got, data, strict=True):
        np.testing.assert_array_equal(g, values[region])
    assert meet.calls == 12
    assert meet.most == 6
