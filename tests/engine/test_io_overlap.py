"""map_io_then: fetches on the I/O pool, decoding on the compute pool as fetches finish."""

from __future__ import annotations

import threading

import pytest

from zarrfast import concurrency, config
from zarrfast.concurrency import map_io_then

from _helpers.pool_jobs import HANG, JobThreads, hold_until, job_stopped


def _one(item, result):
    return [(item, result)]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_first_fetched_item_is_decoded_while_another_fetch_is_in_flight(threads):
    decoded_first = threading.Event()
    done: list[int] = []

    def fetch(i: int) -> int:
        if i == 1:
            # returns only once item 0 has been decoded: without the overlap, decoding
            # would wait for this fetch, and this fetch for the decoding
            if not decoded_first.wait(HANG):  # (a bound that only ends a hang)
                raise TimeoutError("item 0 was not decoded while item 1 was being fetched")
        return i * 10

    def then(part) -> None:
        item, result = part
        assert result == item * 10
        done.append(item)
        if item == 0:
            decoded_first.set()

    with config.set(io_concurrency=4, threads=threads):
        map_io_then(fetch, [0, 1], then, _one)
    assert sorted(done) == [0, 1]


def test_every_part_is_run_once():
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def then(part) -> None:
        with lock:
            seen.append(part)

    with config.set(io_concurrency=8, threads=2):
        map_io_then(lambda i: i, range(50), then, lambda i, r: [(i, k) for k in range(3)])
    assert sorted(seen) == [(i, k) for i in range(50) for k in range(3)]


def _drain(pool) -> None:
    """Return once every task queued on ``pool`` before this call has finished: one task
    per worker, which all wait for each other, can only all run once the workers have
    taken (in order) and finished everything queued ahead of them."""
    n = pool._max_workers
    barrier = threading.Barrier(n)
    for f in [pool.submit(barrier.wait, HANG) for _ in range(n)]:
        f.result()


@pytest.mark.parametrize("where", ["fetch", "then"])
def test_the_first_error_stops_the_job_and_nothing_runs_after_it_returns(where):
    """Item 5 fails while the tasks of later items are in flight (each held until the
    pool has stopped the job, read from its stack) and more are queued: no thread that
    saw the stop starts another item, nothing is running when the call returns, and
    nothing of the job runs afterwards (both pools drained).  Before: items slept 2 ms,
    and a 50 ms sleep after the return let anything left over show, or not."""
    threads = JobThreads()
    running = 0
    lock = threading.Lock()
    five_started = threading.Event()

    def work(i: int) -> int:
        nonlocal running
        threads.start(i)
        with lock:
            running += 1
        try:
            if i == 5:
                five_started.set()
                hold_until(lambda: threads.held >= 1, "a later item to be in flight")
                with threads.lock:
                    threads.saw_stop.add(threading.get_ident())
                raise OSError(f"{where} of item 5 failed")
            if i > 5:
                threads.hold()
            return i
        finally:
            with lock:
                running -= 1

    def after_five(i: int) -> None:
        # later items go once item 5 runs: it gets a thread before they take them all
        if i > 5:
            hold_until(five_started.is_set, "item 5 to start")

    def fetch(i):
        after_five(i)
        return work(i) if where == "fetch" else i

    def then(part):
        if where == "then":
            work(part[0])

    with config.set(io_concurrency=4, threads=2), \
            pytest.raises(OSError, match=f"{where} of item 5 failed"):
        map_io_then(fetch, range(200), then, _one)
    assert running == 0
    started = [i for _, i in threads.started]
    assert threads.held >= 1 and len(started) < 200, started  # later items: some ran, not all
    assert threads.after_stop == [], threads.started
    _drain(concurrency._io_pool.get(4))
    _drain(concurrency.get_pool(2))
    assert [i for _, i in threads.started] == started  # nothing ran after the return


def test_of_several_errors_the_first_in_order_of_the_items_is_raised():
    """Item 1 fails first: item 0 fails only once the pool has stopped the job for item
    1's error (its flag, read from the task's stack); item 0's error is the one raised.
    Before: item 0 slept 100 ms, and a machine slow to start item 1 let item 0 fail
    first, which passed without checking the order."""
    def fetch(i: int) -> int:
        if i == 0:
            hold_until(job_stopped, "item 1's error to stop the job")
        raise OSError(f"item {i} failed")

    with config.set(io_concurrency=4, threads=2), pytest.raises(OSError, match="item 0"):
        map_io_then(fetch, [0, 1], lambda part: None, _one)
