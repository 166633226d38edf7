"""The shared thread pool: errors and interrupts stop a job early, and the pool
keeps working afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.concurrency import map_unordered_into
from zarrfast.storage import MemoryStore

from _helpers.pool_jobs import JobThreads, hold_until


@pytest.fixture
def two_threads():
    with config.set(threads=2):
        yield


@pytest.mark.parametrize("failing", ["calling thread", "pool thread"])
def test_first_error_stops_the_other_tasks(two_threads, failing):
    """The first error stops the job: no thread starts an item once the pool knows of
    it.  Every task but the failing one is held until the pool has stopped the job (its
    flag, read from the task's own stack), so the failure always lands while other
    threads are in the middle of items; then each of them must finish its item and take
    no other.  Before: items slept 2 ms and fewer than 1000 of 2000 had to run, which a
    failing thread descheduled for a second (a loaded machine) breaks; while a pool
    that stopped only after a few hundred items passed."""
    main = threading.main_thread()
    threads = JobThreads()
    failed = threading.Event()

    def fails_here() -> bool:  # the first item started on that side raises
        on_main = threading.current_thread() is main
        with threads.lock:
            if failed.is_set() or on_main != (failing == "calling thread"):
                return False
            failed.set()
            return True

    def fn(i: int) -> None:
        threads.start(i)
        if fails_here():
            # fail while another thread is in the middle of an item
            hold_until(lambda: threads.held >= 1, "another task to start")
            with threads.lock:
                threads.saw_stop.add(threading.get_ident())
            raise RuntimeError(f"boom at {i}")
        threads.hold()

    with pytest.raises(RuntimeError, match="boom at"):
        map_unordered_into(fn, range(2000))
    assert failed.is_set()
    assert threads.held >= 1, threads.started  # other tasks were running at the failure
    # ... and none of their threads (nor the failing one) started another item
    assert threads.after_stop == [], threads.started


class CountingStore(MemoryStore):
    """A memory store that counts its chunk reads and can Ctrl-C the main thread at one
    of them (a count, not a time)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads = 0
        self.threads = JobThreads()
        self.interrupt_at: int | None = None  # SIGINT to the main thread at that read
        self.interrupted = False

    def get(self, key, byte_range=None):
        if key.startswith("a/c") and self.interrupt_at is not None:
            self.threads.start(key)
            on_main = threading.current_thread() is threading.main_thread()
            with self.threads.lock:
                self.reads += 1
                send = not on_main and not self.interrupted and self.reads >= self.interrupt_at
                self.interrupted |= send
            if send:  # a real SIGINT, to the main thread as a terminal's Ctrl-C
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            if self.interrupted and not on_main:
                # the pool's reads wait until the interrupt has stopped the job
                self.threads.hold()
        return super().get(key, byte_range)


def test_keyboard_interrupt_during_a_large_read_stops_it(two_threads):
    """Ctrl-C in the middle of a read of 4000 chunks stops it: once the interrupt has
    reached the pool, no thread starts another read, and the pool works afterwards.  The
    pool's reads after the signal are held until the job has stopped, so the interrupt
    always finds them in flight.  Before: reads slept 2 ms and fewer than 3000 of 4000
    had to be made, which depends on how soon the stop lands."""
    store = CountingStore()
    a = zarrfast.create_array(store, name="a", shape=(4000, 1024), chunks=(1, 1024), dtype="u2",
                              compressors=None)
    data = np.arange(4000 * 1024, dtype="u2").reshape(4000, 1024)
    a[...] = data
    store.interrupt_at = 50  # the first read of a pool thread from the 50th on
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            a[...]
    finally:
        signal.signal(signal.SIGINT, previous)
    store.interrupt_at = None
    assert store.interrupted
    assert store.threads.held >= 1  # pool reads were in flight when it came
    assert store.threads.after_stop == [], store.threads.started
    assert store.reads < 4000
    # the pool survives: the next read is complete and correct
    np.testing.assert_array_equal(a[...], data)


def test_sigint_in_a_real_process_then_the_pool_still_works(tmp_path):
    script = textwrap.dedent(
        f"""
        import signal, sys, threading
        import numpy as np
        import zarrfast
        from zarrfast import config
        from zarrfast.storage import LocalStore

        reads = []
        counting = threading.Lock()
        got_sigint = threading.Event()

        def on_sigint(signum, frame):
            got_sigint.set()
            signal.default_int_handler(signum, frame)  # KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)

        class Slow(LocalStore):
            def get(self, key, byte_range=None):
                if "/c/" in key:
                    with counting:  # (two threads read: one of them sees the 20th)
                        reads.append(key)
                        n = len(reads)
                    if n == 20:
                        print("reading", flush=True)  # (the parent's cue)
                    if n >= 20:  # the read waits for the parent's Ctrl-C (a day at most)
                        got_sigint.wait(86400)
                return super().get(key, byte_range)

        config.set(threads=2)
        a = zarrfast.create_array(LocalStore({str(tmp_path)!r}), name="a", shape=(3000, 64),
                                  chunks=(1, 64), dtype="f8")  # zstd: reads call get()
        data = np.random.default_rng(0).random((3000, 64))
        a[...] = data
        slow = zarrfast.open_array(Slow({str(tmp_path)!r}), path="a")
        print("ready", flush=True)
        try:
            slow[...]
            print("not interrupted", flush=True)
        except KeyboardInterrupt:
            print("interrupted after %d reads" % len(reads), flush=True)
        assert (a[...] == data).all()
        print("ok", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout.readline().strip() == "ready"
    assert proc.stdout.readline().strip() == "reading"  # the read is under way
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = out.split("\n")
    assert lines[0].startswith("interrupted after"), out
    assert int(lines[0].split()[2]) < 3000, out  # stopped before its 3000 chunks
    assert lines[1] == "ok"


def test_map_weighted_into_runs_every_item_once_heaviest_first(monkeypatch):
    import zarrfast.concurrency as conc

    seen: list[int] = []
    lock = threading.Lock()

    def record(i: int) -> None:
        with lock:
            seen.append(i)

    weights = [256] * 4 + [16] + [256] * 4 + [16] + [256] * 4 + [16] + [256] * 4 + [16] \
        + [16] * 4 + [1]
    with config.set(threads=1):  # inline: heaviest first, ties in order
        conc.map_weighted_into(record, range(25), weights, work_bytes=2**30)
    assert seen == sorted(range(25), key=lambda i: -weights[i])
    seen.clear()
    with config.set(threads=2):
        conc.map_weighted_into(record, range(25), weights, work_bytes=2**30)
    assert sorted(seen) == list(range(25))
    with pytest.raises(ValueError, match="weights"):
        conc.map_weighted_into(record, range(3), [1, 2])


def test_map_dynamic_into_lets_a_free_thread_take_the_rest():
    """One item blocks until every other item has run: only a shared queue (not a
    static split of the items between the threads) lets the other thread run them."""
    import zarrfast.concurrency as conc

    n = 12
    done: list[int] = []
    lock = threading.Lock()
    rest_done = threading.Event()
    unblocked = []

    def fn(i: int) -> None:
        if i == 0:
            unblocked.append(rest_done.wait(timeout=60))
            return
        with lock:
            done.append(i)
            if len(done) == n - 1:
                rest_done.set()

    with config.set(threads=2):
        conc.map_dynamic_into(fn, range(n), work_bytes=2**30)
    assert unblocked == [True] and sorted(done) == list(range(1, n))


def test_map_dynamic_into_raises_the_first_error():
    import zarrfast.concurrency as conc

    ran: list[int] = []

    def fn(i: int) -> None:
        ran.append(i)
        if i == 3:
            raise RuntimeError("item 3")

    with config.set(threads=2), pytest.raises(RuntimeError, match="item 3"):
        conc.map_dynamic_into(fn, range(1000), work_bytes=2**30)
    assert 3 in ran and len(ran) == len(set(ran))  # (no item twice)
