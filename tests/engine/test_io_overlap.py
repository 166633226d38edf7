"""map_io_then: fetches on the I/O pool, decoding on the compute pool as fetches finish."""

from __future__ import annotations

import threading
import time

import pytest

from zarrfast import config
from zarrfast.concurrency import map_io_then


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
            if not decoded_first.wait(10):
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


@pytest.mark.parametrize("where", ["fetch", "then"])
def test_the_first_error_stops_the_job_and_nothing_runs_after_it_returns(where):
    running = 0
    lock = threading.Lock()
    ran_after: list[int] = []
    finished = threading.Event()

    def work(i: int) -> int:
        nonlocal running
        with lock:
            running += 1
        try:
            if finished.is_set():
                ran_after.append(i)
            time.sleep(0.002)
            if i == 5:
                raise OSError(f"{where} of item 5 failed")
            return i
        finally:
            with lock:
                running -= 1

    def fetch(i):
        return work(i) if where == "fetch" else i

    def then(part):
        if where == "then":
            work(part[0])

    with config.set(io_concurrency=4, threads=2), \
            pytest.raises(OSError, match=f"{where} of item 5 failed"):
        map_io_then(fetch, range(40), then, _one)
    finished.set()
    assert running == 0
    time.sleep(0.05)
    assert ran_after == []


def test_of_several_errors_the_first_in_order_of_the_items_is_raised():
    def fetch(i: int) -> int:
        time.sleep(0.1 if i == 0 else 0.0)  # item 1 fails first
        raise OSError(f"item {i} failed")

    with config.set(io_concurrency=4, threads=2), pytest.raises(OSError, match="item 0"):
        map_io_then(fetch, [0, 1], lambda part: None, _one)
