"""Cold gathers of zstd chunks decoded up to a prefix read their chunk files ahead of the
decoding threads, from threads of their own (``engine.fancy._ReadAhead``), a window
ahead of the chunks decoded.

A probe of a file on this machine's temporary directory may say it is cached (tmpfs),
so the tests make every probe say "cold", then check the values (against NumPy: missing
and damaged chunks, negative and repeated indices, groups of the read-ahead that do not
line up with the decoding threads' parts), that every chunk file is read once (by the
read-ahead or by a decoding thread that got there first), that the read-ahead keeps its
window, and that no thread of it is left running."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.engine import fancy
from zarrfast.kernels import zstd_prefix

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
THREAD = "zarrfast-read-ahead"

pytestmark = pytest.mark.skipif(not zstd_prefix.available,
                                reason="zstd_prefix has no zstd library to bind")


def _alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


class _Reads:
    """The keys each ``read_many_into`` call of the store read, and who called it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, list[str]]] = []

    def keys(self, by: str | None = None) -> list[str]:
        return [k for who, keys in self.calls for k in keys if by is None or who == by]


@pytest.fixture
def cold(monkeypatch):
    """Every probe says the files are cold; the store's batched reads are recorded."""
    reads = _Reads()
    real = zarrfast.LocalStore.read_many_into

    def spy(self, keys, out, offsets, nbytes, *, exact=True):
        with reads.lock:
            reads.calls.append((threading.current_thread().name, list(keys)))
        return real(self, keys, out, offsets, nbytes, exact=exact)

    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    monkeypatch.setattr(zarrfast.LocalStore, "read_many_into", spy)
    return reads


def _array(root, rows: int, chunk: int, cols: int, written: int):
    a = zarrfast.create_array(str(root), shape=(rows, cols), chunks=(chunk, cols),
                              dtype="<i4", fill_value=-3,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    x = np.full((rows, cols), -3, dtype="<i4")
    x[:written] = (np.arange(written * cols) % 30011).astype("<i4").reshape(written, cols)
    if written:
        a[:written] = x[:written]  # (the chunks past it are missing: the fill value)
    return a, x


@SETTINGS
@given(rows=st.integers(2, 400), chunk=st.integers(1, 40), cols=st.integers(1, 6),
       written=st.integers(0, 400), wave=st.integers(1, 9), group=st.integers(1, 6),
       window=st.integers(1, 6), readers=st.integers(1, 4),
       threads=st.sampled_from([1, 2, 3]), data=st.data())
def test_cold_prefix_gathers_read_ahead_match_numpy(
        tmp_path_factory, cold, rows, chunk, cols, written, wave, group, window, readers,
        threads, data) -> None:
    a, x = _array(tmp_path_factory.mktemp("a"), rows, chunk, cols, min(written, rows))
    idx = np.array(data.draw(st.lists(st.integers(-rows, rows - 1), min_size=1,
                                      max_size=120)), dtype=np.int64)
    if data.draw(st.booleans()):
        idx = np.sort(np.where(idx < 0, idx + rows, idx))
    nb = chunk * cols * 4
    cap = nb + nb // 64 + 4096  # (the chain's stored_cap)
    with pytest.MonkeyPatch.context() as mp, config.set(threads=threads):
        mp.setattr(fancy, "GATHER_WAVE_BYTES", nb * wave)
        mp.setattr(fancy, "READ_AHEAD_GROUP", group)  # (parts and groups need not line up)
        mp.setattr(fancy, "READ_AHEAD_BYTES", cap * group * window)
        mp.setattr(fancy, "READ_AHEAD_THREADS", readers)
        mp.setattr(fancy, "PREFIX_SAVING", -1.0)  # (every wave decoded up to a prefix)
        for read, want in ((lambda: a.oindex[idx, :], x[idx]),
                           (lambda: a.vindex[idx, np.full_like(idx, cols - 1)],
                            x[idx, cols - 1])):
            del cold.calls[:]
            np.testing.assert_array_equal(read(), want)
            assert not _alive()  # (closed, and joined, when the gather ends)
            touched = sorted({int(i) // chunk for i in np.where(idx < 0, idx + rows, idx)})
            # every chunk file read once, by the read-ahead or by a decoding thread
            assert sorted(cold.keys()) == sorted(f"c/{c}/0" for c in touched)


def test_the_read_ahead_reads_the_files_of_a_cold_gather(tmp_path, cold) -> None:
    """The decoding threads read no file themselves when the read-ahead keeps ahead:
    with a window as long as the gather, every file is read by the read-ahead
    (``group`` waits for a group a thread of it has started)."""
    a, x = _array(tmp_path, 6000, 100, 16, 5000)  # (chunks 50 to 59 missing)
    idx = np.arange(3, 6000, 41)
    with pytest.MonkeyPatch.context() as mp, config.set(threads=2):
        mp.setattr(fancy, "READ_AHEAD_BYTES", 2**30)
        mp.setattr(fancy, "PREFIX_SAVING", -1.0)  # (small chunks: decoded up to a prefix)
        started = threading.Event()
        real_group = fancy._ReadAhead.group

        def group(self, g):  # (the decoding waits until every group is started)
            deadline = time.monotonic() + 30
            while self.next < self.ngroups and time.monotonic() < deadline:
                time.sleep(0.001)
            started.set()
            return real_group(self, g)

        mp.setattr(fancy._ReadAhead, "group", group)
        np.testing.assert_array_equal(a.oindex[idx, :], x[idx])
    assert started.is_set()
    assert sorted(cold.keys(THREAD)) == sorted(f"c/{c}/0" for c in range(60))
    assert cold.keys() == cold.keys(THREAD)
    assert not _alive()


def test_a_damaged_chunk_read_ahead_is_named(tmp_path, cold, monkeypatch) -> None:
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    a, x = _array(tmp_path, 4000, 100, 16, 4000)
    good = (tmp_path / "c" / "23" / "0").read_bytes()
    (tmp_path / "c" / "23" / "0").write_bytes(good[:20] + bytes(len(good) - 20))
    with pytest.raises(zarrfast.errors.ChunkDecodeError, match="c/23/0"):
        a.oindex[np.arange(0, 4000, 50), :]
    assert not _alive()
    np.testing.assert_array_equal(a.oindex[np.arange(0, 2000, 50), :], x[0:2000:50])
    assert not _alive()


def test_a_failed_read_ahead_is_read_again_by_the_decoding_thread(tmp_path, cold,
                                                                  monkeypatch) -> None:
    """A read that fails in the read-ahead is left to the decoding thread, whose read
    says what is wrong (here: nothing, the second read works)."""
    a, x = _array(tmp_path, 3000, 100, 8, 3000)
    real = zarrfast.LocalStore.read_many_into  # (the spy)
    failed = []

    def flaky(self, keys, out, offsets, nbytes, *, exact=True):
        if threading.current_thread().name == THREAD and "c/7/0" in keys:
            failed.append(list(keys))
            raise OSError("a flaky disk")
        return real(self, keys, out, offsets, nbytes, exact=exact)

    monkeypatch.setattr(zarrfast.LocalStore, "read_many_into", flaky)
    monkeypatch.setattr(fancy, "READ_AHEAD_BYTES", 2**30)
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    idx = np.arange(1, 3000, 30)
    with config.set(threads=2):
        np.testing.assert_array_equal(a.oindex[idx, :], x[idx])
    assert not _alive()
    assert "c/7/0" in cold.keys()  # (read by the decoding thread, or by the read-ahead
    assert len(failed) <= 1  # before a decoding thread claimed it: at most one failure)


class _Store:
    """A store of numbered keys whose reads wait for a gate and are recorded."""

    def __init__(self) -> None:
        self.read: list[str] = []
        self.gate = threading.Event()
        self.lock = threading.Lock()

    def read_many_into(self, keys, out, offsets, nbytes, *, exact=True):
        self.gate.wait(30)
        with self.lock:
            self.read.extend(keys)
        for k, o in zip(keys, offsets.tolist(), strict=True):
            out[o] = int(k[1:]) % 251
        return np.ones(len(keys), dtype=np.int64)


def _sorted(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda k: int(k[1:]))


def _settle(ra: fancy._ReadAhead, store: _Store, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(store.read) < n and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(0.02)  # (time to go past n, were it to)


def test_the_read_ahead_keeps_its_window_and_skips_claimed_groups(monkeypatch) -> None:
    monkeypatch.setattr(fancy, "READ_AHEAD_GROUP", 2)
    store = _Store()
    keys = [f"k{i}" for i in range(20)]  # (10 groups of 2)
    ra = fancy._ReadAhead(store, keys, 1, window=3, threads=2)
    try:
        assert ra.group(5) is None  # (not started: the caller reads it, claimed)
        store.gate.set()
        _settle(ra, store, 6)
        assert _sorted(store.read) == keys[:6]  # (the window: groups 0 to 2)
        got = ra.group(1)
        assert got is not None and got[0].tolist() == [2, 3]  # (k2 and k3, a byte each)
        ra.done(0, 3)  # (group 0 and half of group 1 decoded: one group more)
        _settle(ra, store, 8)
        assert _sorted(store.read) == keys[:8]
        # groups 1 to 4 decoded (group 4 without the read-ahead: skipped): the window
        # goes up to group 7, but the claimed group 5 is not read
        ra.done(3, 10)
        _settle(ra, store, 12)
        assert _sorted(store.read) == keys[:8] + keys[12:16]
        ra.done(10, 16)  # (groups 5 to 7: the last two)
        _settle(ra, store, 16)
        assert _sorted(store.read) == keys[:8] + keys[12:]
        assert len(store.read) == len(set(store.read))  # (each once)
    finally:
        ra.close()
    assert not any(t.is_alive() for t in ra.threads)


def test_a_closed_read_ahead_ends_its_threads_while_they_wait(monkeypatch) -> None:
    store = _Store()
    store.gate.set()
    ra = fancy._ReadAhead(store, [f"k{i}" for i in range(100)], 1, window=2, threads=3)
    _settle(ra, store, 2 * fancy.READ_AHEAD_GROUP)
    ra.close()  # (its threads wait for the window to move: they end)
    assert not any(t.is_alive() for t in ra.threads)
    assert len(store.read) == 2 * fancy.READ_AHEAD_GROUP


def test_chunks_too_large_for_the_read_ahead_are_read_by_the_decoding_threads(
        tmp_path, cold, monkeypatch) -> None:
    """Two groups of chunks that do not fit in READ_AHEAD_BYTES: no read-ahead (the
    decoding threads read their files, as before), values right."""
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    a, x = _array(tmp_path, 3000, 100, 8, 3000)
    cap = 100 * 8 * 4 + 100 * 8 * 4 // 64 + 4096
    idx = np.arange(2, 3000, 70)
    monkeypatch.setattr(fancy, "READ_AHEAD_BYTES", 2 * fancy.READ_AHEAD_GROUP * cap - 1)
    np.testing.assert_array_equal(a.oindex[idx, :], x[idx])
    assert cold.keys(THREAD) == [] and len(cold.keys()) == 30
    monkeypatch.setattr(fancy, "READ_AHEAD_BYTES", 2 * fancy.READ_AHEAD_GROUP * cap)
    del cold.calls[:]
    np.testing.assert_array_equal(a.oindex[idx, :], x[idx])
    assert sorted(cold.keys()) == sorted(f"c/{c}/0" for c in range(30))
    assert not _alive()
