"""Box reads on a loaded machine (issue 44): while the cores are busy with other work
(``zarrfast.concurrency.cores_contended``), a small box is read in the calling thread
alone, not shared with the kernels' helper thread; and sharded boxes one to two inner
chunks long per side (up to 27 inner chunks) take the shard-box way."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency, config
from zarrfast.bench.data import boxes as random_boxes
from zarrfast.engine import boxes
from zarrfast.storage import LocalStore, MemoryStore

SPIN = "import os, sys\nwhile os.getppid() == int(sys.argv[1]):\n    pass\n"


@pytest.fixture
def fresh_contention(monkeypatch):
    """This thread's contention state as a thread that never measured has it."""
    state = concurrency._Contention()
    monkeypatch.setattr(concurrency, "_contention", state)
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", True)  # (tests/conftest.py: off)
    return state


def _helper_rows() -> int:
    from zarrfast._ext import _decode

    return _decode.helper_jobs()[1]


@contextlib.contextmanager
def _spinners(n: int) -> Iterator[list[subprocess.Popen]]:
    """``n`` child processes spinning on a CPU (each has said so before this yields), as
    long as this process lives; killed and waited for on exit."""
    ready = "import os, sys\nprint(flush=True)\n" + SPIN
    procs = [subprocess.Popen([sys.executable, "-c", ready, str(os.getpid())],
                              stdout=subprocess.PIPE) for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == b"\n"  # (spinning)
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
            if p.stdout is not None:
                p.stdout.close()


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(not os.path.exists(concurrency._SCHEDSTAT),
                    reason="no per-thread scheduler statistics here")
def test_busy_cores_are_seen_as_contended(fresh_contention, monkeypatch):
    """Real competing processes, twice as many as the cores: the calling thread, spinning,
    waits for a CPU most of the time, and sees it (by its own wait: the run queue, read
    at the first call, not read here)."""
    monkeypatch.setattr(concurrency, "_others_limit", lambda: None)
    with _spinners(2 * (os.cpu_count() or 1)):
        _spin(0.3)  # (the processes running)
        assert concurrency.cores_contended() is False  # (the first call only measures)
        seen = False
        for _ in range(25):  # (a window at least; a few, should the scheduler be kind)
            _spin(3 * concurrency.CONTENTION_WINDOW)
            if concurrency.cores_contended():
                seen = True
                break
        assert seen
        # contended: small jobs run alone for the back-off, without measuring again
        assert fresh_contention.alone
        assert concurrency.cores_contended() is True


@pytest.fixture
def clock(monkeypatch):
    """A clock, this thread's run-queue wait and the machine's run queue, given to the
    gate: ``clock["running"]`` runnable threads, this one included; ``clock["cores"]``
    cores all this thread's (``None``: not every core is, the run queue is not read)."""
    state = {"t": 100.0, "delay": 0, "running": 1, "cores": None, "reads": 0}

    def running():
        state["reads"] += 1
        return state["running"]

    monkeypatch.setattr(concurrency.time, "monotonic", lambda: state["t"])
    monkeypatch.setattr(concurrency, "_run_delay", lambda: state["delay"])
    monkeypatch.setattr(concurrency, "_running", running)
    monkeypatch.setattr(concurrency, "_others_limit",
                        lambda: None if state["cores"] is None else state["cores"] - 1.5)
    return state


def _advance(clock, dt, waited_share):
    clock["t"] += dt
    clock["delay"] += int(dt * waited_share * 1e9)
    return concurrency.cores_contended()


def _calls(clock, seconds, waited_share, step=0.001):
    """A call every ``step`` (a box read each) for ``seconds``: the verdicts."""
    return [_advance(clock, step, waited_share) for _ in range(round(seconds / step))]


def test_the_back_off_doubles_while_contended_and_resets_when_free(
        fresh_contention, clock):
    """The verdict's state machine, on a clock and a run-queue wait given to it, where
    the run queue says nothing of this thread's cores (``_others_limit`` None)."""
    w = concurrency.CONTENTION_WINDOW
    low, high = concurrency.CONTENTION_BACKOFF

    def after(dt, waited_share):
        return _advance(clock, dt, waited_share)

    assert after(0, 0) is False  # (the first measure)
    assert after(w / 2, 0.9) is False  # (within the window: not measured yet)
    assert after(w, 0.9) is True  # waited most of the window
    assert fresh_contention.backoff == 2 * low
    assert after(low - 0.001, 0) is True  # the back-off
    assert after(0.002, 0) is False  # over: sharing again, measuring from here
    assert after(2 * w, 0.5) is True  # still contended: a longer back-off
    assert fresh_contention.backoff == 4 * low
    assert after(2 * low + 0.001, 0) is False
    assert after(2 * w, 0.02) is False  # free (2% waited): the back-off resets
    assert fresh_contention.backoff == low
    for _ in range(20):
        after(10.0, 0)
        after(2 * w, 0.9)
    assert fresh_contention.backoff == high  # (at most)
    assert clock["reads"] == 0  # (the run queue never read)


def test_alone_while_others_run_and_sharing_again_once_they_stop(fresh_contention, clock):
    """Where the run queue is this thread's cores' (2 here): contended, small jobs run
    alone as long as another thread is runnable beside the caller, with no back-off,
    and share again one window after it stops.  (Before: shared for a window after each
    back-off, whatever the load, and alone for up to 2 s after the load had gone.)"""
    clock["cores"] = 2
    w = concurrency.CONTENTION_WINDOW
    assert _calls(clock, 3 * w, 0.0) == [False] * round(3 / 0.001 * w)  # free: sharing
    # one busy process: the caller (sharing with the helper) waits a third of the time
    clock["running"] = 3
    verdicts = _calls(clock, 2 * w, 1 / 3)
    assert verdicts[-1] is True and not verdicts[0]
    # alone: the caller finds a core (it does not wait), the other process still runs
    clock["running"] = 2
    assert all(_calls(clock, 10.0, 0.0))  # (no window of sharing, however long)
    assert fresh_contention.since < clock["t"]  # (no back-off held)
    reads = clock["reads"]
    assert 10.0 / w <= reads <= 10.0 / concurrency.CONTENTION_SAMPLE  # (a few a window)
    # it stops: one window later, sharing again
    clock["running"] = 1
    verdicts = _calls(clock, 3 * w, 0.0)
    assert verdicts[0] is True and verdicts[-1] is False
    assert verdicts.index(False) <= round(2 * w / 0.001) + 1
    assert not any(verdicts[verdicts.index(False):])
    assert clock["reads"] - reads <= 2 * w / concurrency.CONTENTION_SAMPLE + 2
    # sharing, the run queue is not read (the helper spinning there is this thread's)
    reads = clock["reads"]
    _calls(clock, 1.0, 0.0)
    assert clock["reads"] == reads


@pytest.mark.parametrize("others", [0, 1, 3])
def test_the_first_window_follows_the_run_queue(fresh_contention, clock, others):
    """A thread's first call: alone when other threads are runnable beside it now (one
    busy process on 2 cores), no read of the run queue where it is not this thread's.
    (Before: the first window always shared.)"""
    clock["cores"], clock["running"] = 2, 1 + others
    assert concurrency.cores_contended() is (others > 0)
    assert clock["reads"] == 1
    fresh_contention.delay, fresh_contention.alone = -1, False
    clock["cores"] = None
    assert concurrency.cores_contended() is False
    assert clock["reads"] == 1


def test_alone_the_caller_waiting_is_contended_whatever_the_run_queue(
        fresh_contention, clock):
    clock["cores"] = 2
    _calls(clock, 0.1, 0.5)
    assert fresh_contention.alone
    clock["running"] = 1  # (a run queue read between two switches)
    assert all(_calls(clock, 1.0, 0.5))


@pytest.mark.parametrize("cores", [None, 2])
def test_long_windows_are_judged(fresh_contention, clock, cores):
    """Calls half a second apart (a write's batches of 16 MiB on a loaded machine, each
    one call): each window is judged, over its whole wall time."""
    clock["cores"] = cores
    verdicts = _calls(clock, 2.0, 0.5, step=0.5)
    assert verdicts[0] is False and verdicts[1] is True
    # a window the thread mostly slept through (a peer's read), waiting 5% of it: free
    fresh_contention.alone, fresh_contention.since = False, 0.0
    assert not any(_calls(clock, 3.0, 0.05, step=1.0))


def _cpu_quota() -> bool:
    """Whether this process's cgroup limits its CPU time (v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``): throttled, busy children leave the run queue now and then."""
    for path in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
                 "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"):
        try:
            with open(path) as f:
                first = f.read().split()[0]
        except (OSError, IndexError):
            continue
        return first not in ("max", "-1")
    return False


#: the run-queue tests need busy children to stay runnable all the time
needs_no_quota = pytest.mark.skipif(_cpu_quota(), reason="this cgroup has a CPU quota")


@needs_no_quota
def test_the_run_queue_counts_every_runnable_thread():
    """``_running`` with real processes: each busy child is runnable all the time."""
    if concurrency._running() is None:
        pytest.skip("no /proc/loadavg here")
    with _spinners(3) as procs:
        seen = [concurrency._running() for _ in range(50)]
        assert min(seen) >= len(procs) + 1, seen  # (and this thread)


@needs_no_quota
@pytest.mark.skipif(not os.path.exists(concurrency._SCHEDSTAT)
                    or concurrency._others_limit() is None,
                    reason="no scheduler statistics here, or not every core ours")
def test_busy_cores_keep_small_jobs_alone(fresh_contention):
    """Real competing processes, twice as many as the cores, all spinning: once the
    caller found them, it stays alone, every call, for as long as they run (its windows
    see them in the run queue).  The other way, sharing again once they stop, depends on
    what else runs on the machine: tested on given statistics above."""
    with _spinners(2 * (os.cpu_count() or 1)):
        fresh_contention.alone = True  # (found contended: test_busy_cores_are_seen_as_contended)
        concurrency.cores_contended()
        verdicts = []
        end = time.monotonic() + 20 * concurrency.CONTENTION_WINDOW
        while time.monotonic() < end:  # (a bounded number of windows, not a timing)
            _spin(0.001)
            verdicts.append(concurrency.cores_contended())
        assert all(verdicts), verdicts.count(False)
        assert fresh_contention.since == 0.0  # (no back-off: the run queue read)


def test_no_statistics_means_never_contended(fresh_contention, monkeypatch):
    monkeypatch.setattr(concurrency, "_SCHEDSTAT", "/nonexistent/schedstat")
    assert concurrency.cores_contended() is False
    assert fresh_contention.supported is False
    assert concurrency.cores_contended() is False


def test_the_gate_off_means_never_contended(fresh_contention, monkeypatch):
    fresh_contention.alone, fresh_contention.since = True, time.monotonic() + 3600
    assert concurrency.cores_contended() is True
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)
    assert concurrency.cores_contended() is False


def _zstd_array(tmp_path, shape=(96, 96, 96), chunks=(16, 16, 16), shards=None, store=None):
    store = store if store is not None else LocalStore(tmp_path / "a")
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, shards=shards,
                              dtype="uint16", compressors=[{"name": "zstd"}])
    rng = np.random.default_rng(1)
    data = (np.arange(np.prod(shape)) % 1000 + rng.integers(0, 9, np.prod(shape))
            ).astype("uint16").reshape(shape)
    a[...] = data
    return a, data


def _boxes(shape, chunk, n, seed=3):
    """Boxes one to two chunks long per side, at random offsets."""
    return random_boxes(np.random.default_rng(seed), shape, (chunk,) * len(shape), n)


@pytest.mark.parametrize("shards", [None, (48, 48, 48)])
def test_contended_boxes_are_read_alone_and_right(tmp_path, fresh_contention, shards):
    """Contended: two threads asked for, yet no row of any box goes to a helper; the
    values are right.  (Before: box reads of 8 to 27 chunks were shared with the
    helper thread whatever the load.)"""
    a, data = _zstd_array(tmp_path, shards=shards)
    fresh_contention.alone, fresh_contention.since = True, time.monotonic() + 3600
    sels = _boxes(data.shape, 16, 60)
    with config.set(threads=2):
        a[sels[0]]  # (the helper started, the index cached)
        rows = _helper_rows()
        for sel in sels:
            np.testing.assert_array_equal(a[sel], data[sel])
        assert _helper_rows() == rows


class _Chain:
    def __init__(self, nbytes):
        self.chunk_nbytes = nbytes


def test_large_reads_share_whatever_the_load(fresh_contention, monkeypatch):
    monkeypatch.setattr(concurrency, "_others_limit", lambda: None)  # (first call: free)
    fresh_contention.alone, fresh_contention.since = True, time.monotonic() + 3600
    assert boxes.alone(27, _Chain(512 * 1024)) is True  # a blosc 64^3 box: 13.5 MiB
    assert boxes.alone(64, _Chain(512 * 1024)) is False  # 32 MiB: shared
    fresh_contention.alone, fresh_contention.since = False, 0.0
    fresh_contention.delay = -1
    assert boxes.alone(27, _Chain(65536)) is False


def _chosen(caplog) -> list[str]:
    names = []
    for rec in caplog.records:
        m = re.search(r": ([a-z-]+) \(", rec.getMessage())
        if rec.name == "zarrfast.engine" and m:
            names.append(m.group(1))
    return names


@pytest.mark.parametrize("kind", ["local", "memory"])
@pytest.mark.parametrize("threads", [1, 2])
def test_sharded_boxes_of_up_to_27_inner_chunks_are_shard_box_reads(
        tmp_path, caplog, kind, threads):
    """Boxes one to two inner chunks long per side (8 to 27 inner chunks, across up to
    8 shards, some missing) read by the shard-box way, with the right values; a slab 4
    inner chunks wide, or a full read, by the general way."""
    store = LocalStore(tmp_path / "a") if kind == "local" else MemoryStore()
    a, data = _zstd_array(tmp_path, shards=(48, 48, 48), store=store)
    a[0:48, 0:48, 48:96] = 0  # (a shard of the fill value only: not stored)
    data[0:48, 0:48, 48:96] = 0
    sels = _boxes(data.shape, 16, 40) + [np.s_[15:47, 16:48, 40:72]]
    with config.set(threads=threads), caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        for sel in sels:
            caplog.clear()
            np.testing.assert_array_equal(a[sel], data[sel])
            assert _chosen(caplog) == ["shard-box"], sel
        for sel in (np.s_[0:64, 0:20, 0:20], np.s_[...]):  # 4 inner chunks along one side
            caplog.clear()
            np.testing.assert_array_equal(a[sel], data[sel])
            assert _chosen(caplog)[0] == "shard-rows", sel
