"""The shared thread pool: errors and interrupts stop a job early, and the pool
keeps working afterwards."""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.concurrency import map_unordered_into
from zarrfast.storage import MemoryStore


class SlowStore(MemoryStore):
    """A memory store whose reads take ``delay`` seconds each (a slow disk)."""

    def __init__(self, *args, delay: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.delay = delay
        self.reads = 0
        self.interrupt_at: int | None = None  # Ctrl-C to the main thread at that read
        self._count = threading.Lock()

    def get(self, key, byte_range=None):
        if self.delay and key.startswith("a/c"):
            with self._count:
                self.reads += 1
                reads = self.reads
            if reads == self.interrupt_at:
                _thread.interrupt_main()
            time.sleep(self.delay)
        return super().get(key, byte_range)


@pytest.fixture
def two_threads():
    with config.set(threads=2):
        yield


def test_first_error_stops_the_other_tasks(two_threads):
    done = []
    lock = threading.Lock()

    def fn(i: int) -> None:
        if i == 3:
            raise RuntimeError("boom at 3")
        time.sleep(0.002)
        with lock:
            done.append(i)

    with pytest.raises(RuntimeError, match="boom at 3"):
        map_unordered_into(fn, range(2000))
    # the job stopped early: far fewer than all items ran
    assert len(done) < 1000


def test_keyboard_interrupt_during_a_large_read_stops_it(two_threads):
    store = SlowStore(delay=0.002)
    a = zarrfast.create_array(store, name="a", shape=(4000, 1024), chunks=(1, 1024), dtype="u2",
                              compressors=None)
    data = np.arange(4000 * 1024, dtype="u2").reshape(4000, 1024)
    store.delay = 0.0
    a[...] = data
    store.delay = 0.002  # 4000 reads: ~4 s on two threads if not stopped
    store.interrupt_at = 50  # Ctrl-C during the 50th read (a count, not a time)
    with pytest.raises(KeyboardInterrupt):
        a[...]
    store.interrupt_at = None
    assert store.reads < 3000, store.reads
    # the pool survives: the next read is complete and correct
    store.delay = 0.0
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
