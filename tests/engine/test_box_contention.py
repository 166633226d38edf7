"""Box reads on a loaded machine (issue 44): while the cores are busy with other work
(``zarrfast.concurrency.cores_contended``), a small box is read in the calling thread
alone, not shared with the kernels' helper thread; and sharded boxes one to two inner
chunks long per side (up to 27 inner chunks) take the shard-box way."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency, config
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


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(not os.path.exists(concurrency._SCHEDSTAT),
                    reason="no per-thread scheduler statistics here")
def test_busy_cores_are_seen_as_contended(fresh_contention):
    """Real competing processes, twice as many as the cores: the calling thread, spinning,
    waits for a CPU most of the time, and sees it."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
             for _ in range(2 * (os.cpu_count() or 1))]
    try:
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
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def test_the_back_off_doubles_while_contended_and_resets_when_free(
        fresh_contention, monkeypatch):
    """The verdict's state machine, on a clock and a run-queue wait given to it."""
    clock = {"t": 100.0, "delay": 0}
    monkeypatch.setattr(concurrency.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(concurrency, "_run_delay", lambda: clock["delay"])
    w = concurrency.CONTENTION_WINDOW
    low, high = concurrency.CONTENTION_BACKOFF

    def after(dt, waited_share):
        clock["t"] += dt
        clock["delay"] += int(dt * waited_share * 1e9)
        return concurrency.cores_contended()

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
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        box = []
        for s in shape:
            size = int(rng.integers(chunk, 2 * chunk + 1))
            start = int(rng.integers(0, s - size + 1))
            box.append(slice(start, start + size))
        out.append(tuple(box))
    return out


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


def test_large_reads_share_whatever_the_load(fresh_contention):
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
