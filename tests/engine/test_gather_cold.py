"""Gathers whose chunk files are out of the page cache: the files of all their waves are
announced to the kernel from a thread of its own (``engine.chunked.Announcer``), in
order, a window ahead of the chunks the threads take (``engine.fancy._Ahead``).

A probe of a file on this machine's temporary directory may say it is cached (tmpfs),
so the tests make every probe say "cold" and check what is read (against NumPy, with
missing and damaged chunks) and what is announced (every file of the gather once, in
order, never more than the window ahead)."""

from __future__ import annotations

import os
import threading
import time

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.engine import chunked, fancy

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def _announcers_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "zarrfast-announce"]


def _wait_announcers_gone() -> bool:
    for _ in range(200):
        if not _announcers_alive():
            return True
        time.sleep(0.01)
    return False


class _Cold(list):
    """The keys announced, in order (how far the announcer got before the gather ended
    depends on the threads' timing: a prefix of ``given``), and the keys each
    announcer was given."""
    given: list[list[str]]


@pytest.fixture
def cold(monkeypatch):
    """Every probe says the files are cold."""
    announced = _Cold()
    announced.given = []
    lock = threading.Lock()
    real, real_init = chunked.announce_files, chunked.Announcer.__init__

    def spy(store, keys):
        with lock:
            announced.extend(keys)
        real(store, keys)

    def init(self, store, keys, window):
        announced.given.append(list(keys))
        real_init(self, store, keys, window)

    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    monkeypatch.setattr(chunked, "announce_files", spy)
    monkeypatch.setattr(chunked.Announcer, "__init__", init)
    return announced


def _in_order(cold: _Cold) -> None:
    """Each announcer announced a prefix of its keys, each key once."""
    got = list(cold)
    for keys in cold.given:
        mine = [k for k in got if k in set(keys)]
        assert mine == keys[:len(mine)]


@SETTINGS
@given(rows=st.integers(1, 300), chunk=st.integers(1, 40), cols=st.integers(1, 5),
       written=st.integers(0, 300), wave=st.integers(1, 5), threads=st.sampled_from([1, 2]),
       data=st.data())
def test_cold_gathers_match_numpy_and_announce_each_file_once(
        tmp_path_factory, cold, rows, chunk, cols, written, wave, threads, data) -> None:
    root = tmp_path_factory.mktemp("a")
    a = zarrfast.create_array(str(root), shape=(rows, cols), chunks=(chunk, cols),
                              dtype="<u2", fill_value=7,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = np.full((rows, cols), 7, dtype="<u2")
    written = min(written, rows)
    x[:written] = (np.arange(written * cols).reshape(written, cols) % 60000).astype("<u2")
    if written:
        a[:written] = x[:written]  # (the chunks past it are missing: the fill value)
    idx = np.array(data.draw(st.lists(st.integers(-rows, rows - 1), min_size=1,
                                      max_size=80)), dtype=np.int64)
    if data.draw(st.booleans()):
        idx = np.sort(np.where(idx < 0, idx + rows, idx))
    nb = chunk * cols * 2
    with pytest.MonkeyPatch.context() as mp, config.set(threads=threads):
        mp.setattr(fancy, "GATHER_WAVE_BYTES", nb * wave)
        mp.setattr(fancy, "GATHER_AHEAD_BYTES", nb * data.draw(st.integers(1, 40)))
        for read in (lambda: a.oindex[idx, :], lambda: a.vindex[idx, np.zeros_like(idx)]):
            del cold[:], cold.given[:]
            got = read()
            assert _wait_announcers_gone()
            touched = sorted({int(i) // chunk for i in np.where(idx < 0, idx + rows, idx)})
            keys = [f"c/{c}/0" for c in touched]
            # a gather of several chunks announces them all, in the order read
            assert cold.given == ([keys] if len(touched) > 1 else [])
            _in_order(cold)
            np.testing.assert_array_equal(got, x[idx] if got.ndim == 2 else x[idx, 0])


def test_a_damaged_cold_chunk_is_named(tmp_path, cold) -> None:
    a = zarrfast.create_array(str(tmp_path), shape=(4000, 16), chunks=(100, 16), dtype="<i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = np.arange(4000 * 16, dtype="<i4").reshape(4000, 16)
    a[:] = x
    good = (tmp_path / "c" / "23" / "0").read_bytes()
    (tmp_path / "c" / "23" / "0").write_bytes(good[:20] + bytes(len(good) - 20))
    with pytest.raises(zarrfast.errors.ChunkDecodeError, match="c/23/0"):
        a.oindex[np.arange(0, 4000, 50), :]
    assert _wait_announcers_gone()
    assert cold.given == [[f"c/{c}/0" for c in range(40)]]
    _in_order(cold)
    del cold[:], cold.given[:]
    np.testing.assert_array_equal(a.oindex[np.arange(0, 2000, 50), :], x[0:2000:50])
    assert cold.given == [[f"c/{c}/0" for c in range(20)]]
    _in_order(cold)


def test_cold_gathers_of_shards_announce_nothing(tmp_path, cold) -> None:
    """The inner chunks of shards are parts of files: a shard is never announced whole
    (its index says which ranges to read)."""
    a = zarrfast.create_array(str(tmp_path), shape=(4000, 16), chunks=(100, 16),
                              shards=(1000, 16), dtype="<i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = np.arange(4000 * 16, dtype="<i4").reshape(4000, 16)
    a[:3000] = x[:3000]  # (the last shard missing)
    x[3000:] = 0
    idx = np.arange(5, 4000, 37)
    np.testing.assert_array_equal(a.oindex[idx, :], x[idx])
    assert cold == [] and cold.given == []


def test_the_announcer_keeps_its_window_and_stops(monkeypatch) -> None:
    done: list[str] = []
    gate = threading.Event()

    def spy(store, keys):
        done.extend(keys)
        gate.set()

    monkeypatch.setattr(chunked, "announce_files", spy)
    monkeypatch.setattr(chunked, "ANNOUNCE_BLOCK", 4)
    keys = [f"k{i}" for i in range(100)]
    ann = chunked.Announcer(None, keys, 10)  # type: ignore[arg-type]  # (the spy's)

    def settle(n: int) -> None:
        deadline = time.monotonic() + 30
        while len(done) < n and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(0.02)  # (time to go past n, were it to)

    settle(10)
    assert done == keys[:10]  # (nothing taken yet: the window only)
    ann.taken(4)  # (less than half a window free: it waits on)
    settle(10)
    assert done == keys[:10]
    ann.taken(5)  # (half a window: it announces up to 5 + 10)
    settle(15)
    assert done == keys[:15]
    ann.taken(50)
    settle(60)
    assert done == keys[:60]
    ann.taken(95)
    settle(100)
    assert done == keys
    ann.thread.join(5)
    assert not ann.thread.is_alive()  # (every file announced: it ends)
    done.clear()
    ann = chunked.Announcer(None, keys, 8)  # type: ignore[arg-type]
    settle(8)
    ann.close()
    ann.thread.join(5)
    assert not ann.thread.is_alive() and done == keys[:8]


def test_a_probe_of_a_real_file_and_a_missing_one(tmp_path) -> None:
    """``first_cold`` reads one byte without waiting: a file just written is cached
    (or the probe cannot tell: never cold), a missing file is not cold."""
    store = zarrfast.LocalStore(str(tmp_path))
    (tmp_path / "k").write_bytes(numcodecs.Zstd().encode(bytes(1000)))
    assert chunked.first_cold(store, "k") is False
    assert chunked.first_cold(store, "missing") is False
    assert chunked.first_cold(zarrfast.MemoryStore(), "k") is False


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_prefix_gathers_are_streamed(tmp_path, cold, monkeypatch, threads) -> None:
    """zstd chunks decoded only up to the rows selected, cold: streamed as warm ones are
    (``_stream_prefixes``: parts of a few chunks taken by the threads in turn, no waves:
    ``_read_prefixes`` is never called), their files announced by one announcer, each
    once, in the order read, the threads reporting the parts they take; the rows are
    right, missing chunks read as the fill value.  (Before, cold files took the waves.)"""
    from zarrfast.kernels import zstd_prefix

    if not zstd_prefix.available:
        pytest.skip("zstd_prefix has no zstd library to bind")
    a = zarrfast.create_array(str(tmp_path), shape=(20000, 64), chunks=(1000, 64),
                              dtype="<i4", fill_value=-1,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = (np.arange(20000 * 64) % 30011).astype("<i4").reshape(20000, 64)
    a[:] = x
    for c in (3, 11):  # (missing chunks)
        (tmp_path / "c" / str(c) / "0").unlink()
        x[c * 1000:(c + 1) * 1000] = -1
    waves = []
    real = fancy._read_prefixes
    monkeypatch.setattr(fancy, "_read_prefixes",
                        lambda *args: waves.append(args[4] is not None) or real(*args))
    monkeypatch.setattr(fancy, "GATHER_WAVE_BYTES", 1000 * 64 * 4 * 3)  # (3 chunks a wave)
    monkeypatch.setattr(fancy, "GATHER_AHEAD_BYTES", 1000 * 64 * 4 * 16)  # (16 chunks)
    probed = []  # (a cold line's parts never probe their window's files themselves)
    monkeypatch.setattr(fancy, "prefetch_if_cold", lambda store, keys: probed.append(keys))
    rows = np.sort(np.random.default_rng(5).choice(np.arange(20) * 1000, 20, replace=False)
                   + np.random.default_rng(6).integers(0, 200, 20))
    positions: list[int] = []
    real_taken = chunked.Announcer.taken
    monkeypatch.setattr(chunked.Announcer, "taken",
                        lambda self, i: positions.append(i) or real_taken(self, i))
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
    assert waves == [] and probed == []
    # the threads said where they were, up to the last parts' chunks (the last part
    # holds at most STREAM_TAIL_PART of the 20)
    assert positions and max(positions) >= 20 - fancy.STREAM_TAIL_PART
    assert all(0 <= i < 20 for i in positions)
    assert _wait_announcers_gone()
    assert cold.given == [[f"c/{c}/0" for c in range(20)]]
    _in_order(cold)


def test_a_warm_streamed_gather_probes_each_window(tmp_path, monkeypatch) -> None:
    """A gather whose first file is cached (the probe says warm) streams without an
    announcer: each window's first part probes that window's files
    (``prefetch_if_cold``), so a window gone cold since is still announced."""
    from zarrfast.kernels import zstd_prefix

    if not zstd_prefix.available:
        pytest.skip("zstd_prefix has no zstd library to bind")
    a = zarrfast.create_array(str(tmp_path), shape=(20000, 64), chunks=(1000, 64),
                              dtype="<i4", compressors={"name": "zstd",
                                                        "configuration": {"level": 1}})
    x = (np.arange(20000 * 64) % 30011).astype("<i4").reshape(20000, 64)
    a[:] = x
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: False)
    monkeypatch.setattr(fancy, "GATHER_WAVE_BYTES", 1000 * 64 * 4 * 5)  # (windows of 5)
    probed = []
    monkeypatch.setattr(fancy, "prefetch_if_cold", lambda store, keys: probed.append(keys))
    rows = np.arange(20) * 1000 + 7
    np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
    assert sorted(probed) == sorted([[f"c/{c}/0" for c in range(w, w + 5)]
                                     for w in range(0, 20, 5)])
    assert not _announcers_alive()


@pytest.mark.skipif(not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
                    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")
@pytest.mark.parametrize("threads", [1, 2])
def test_a_really_cold_gather_is_streamed_with_its_files_announced(
        tmp_path, monkeypatch, threads) -> None:
    """Real files evicted from the page cache (no probe made to say cold): a gather of
    rows early in their zstd chunks (prefixes pay) is streamed, its files announced by
    one announcer in the order read, and its rows equal NumPy's, missing chunks the
    fill value."""
    from zarrfast.kernels import zstd_prefix

    from _helpers.page_cache import evict, is_cold

    if not zstd_prefix.available:
        pytest.skip("zstd_prefix has no zstd library to bind")
    a = zarrfast.create_array(str(tmp_path), shape=(40000, 64), chunks=(1000, 64),
                              dtype="<u2", fill_value=9,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = (np.arange(40000 * 64) % 30011).astype("<u2").reshape(40000, 64)
    a[:] = x
    (tmp_path / "c" / "17" / "0").unlink()
    x[17000:18000] = 9
    evict(tmp_path)
    if not is_cold(tmp_path / "c" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    given: list[list[str]] = []
    real_init = chunked.Announcer.__init__

    def init(self, store, keys, window):
        given.append(list(keys))
        real_init(self, store, keys, window)

    monkeypatch.setattr(chunked.Announcer, "__init__", init)
    waves: list[int] = []
    real_read = fancy._read_chunks
    monkeypatch.setattr(fancy, "_read_chunks",
                        lambda *args, **kw: waves.append(1) or real_read(*args, **kw))
    monkeypatch.setattr(fancy, "GATHER_WAVE_BYTES", 1000 * 64 * 2 * 8)  # (windows of 8)
    monkeypatch.setattr(fancy, "ZSTD_BLOCK", 64)  # (so that prefixes pay for small chunks)
    rows = np.sort(np.arange(40) * 1000 + np.random.default_rng(3).integers(0, 300, 40))
    with config.set(threads=threads):
        for _ in range(5):  # (eviction is best effort: a probe may find the file warm)
            evict(tmp_path)
            given.clear()
            np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
            assert _wait_announcers_gone()
            if given:
                break
        else:
            pytest.fail("no gather found its first file cold")
    assert given == [[f"c/{c}/0" for c in range(40)]]
    assert waves == []
    # warm: streamed with no announcer, the same rows
    given.clear()
    np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
    assert given == [] and waves == []
