"""``zarrfast.get_many`` of cold arrays on stores of their own (the loader's regions:
the same region of 50 arrays, each opened from its own path): once the first file is
found out of the page cache, every batch's chunk files are announced to the kernel at
once, in the order the batches are read, by a thread of their own
(``engine.many.Announcing``), and the batches are read a few per thread at a time
(``engine.many.read_cold``) -- not all at once, each announcing its own files only
when it finds its first one cold.  Real files, evicted from the page cache
(``posix_fadvise(DONTNEED)``); what is read must equal NumPy."""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.engine import chunked, many
from zarrfast.engine.chunked import chunk_keys
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict as _evict
from _helpers.page_cache import is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")

DATA = (np.arange(96 * 96, dtype="<u2").reshape(96, 96) * 7) % 60000
#: cold reads tried: eviction is best effort (``POSIX_FADV_DONTNEED`` leaves the pages
#: another CPU still holds in its LRU batch), so the probe may find the first file warm
ATTEMPTS = 5


def _arrays(tmp_path, n: int, **kw) -> tuple[list, list[np.ndarray]]:
    """``n`` arrays, each on a store of its own, array ``i`` holding ``DATA + i``."""
    arrays, wants = [], []
    for i in range(n):
        root = tmp_path / f"a{i:02d}.zarr"
        a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, dtype=DATA.dtype,
                                  compressors={"name": "zstd", "configuration": {"level": 1}},
                                  **kw)
        a[:] = DATA + i
        arrays.append(zarrfast.open_array(LocalStore(root), mode="r"))
        wants.append(DATA + i)
    _evict(tmp_path)
    first = next(os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "a00.zarr")
                 for f in fs if f != "zarr.json")
    if not is_cold(first):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return arrays, wants


class _Spy:
    """The files announced through ``chunked.announce_files`` (as ``root/key``, in
    order) and how many batch reads ran at once, at most."""

    def __init__(self, monkeypatch, arrays) -> None:
        self.announced: list[str] = []
        self.running = self.most = 0
        self.lock = threading.Lock()
        real = chunked.announce_files

        def announce(store, keys):
            with self.lock:
                self.announced.extend(f"{os.path.basename(store.root)}/{k}" for k in keys)
            real(store, keys)

        monkeypatch.setattr(chunked, "announce_files", announce)
        for a in arrays:
            def spy(*args, _read=a._get_many, **kwargs):
                with self.lock:
                    self.running += 1
                    self.most = max(self.most, self.running)
                try:
                    return _read(*args, **kwargs)
                finally:
                    with self.lock:
                        self.running -= 1
            a._get_many = spy

    def clear(self) -> None:
        self.announced.clear()
        self.most = 0


def _announcers_gone() -> bool:
    for t in [t for t in threading.enumerate() if t.name == "zarrfast-announce"]:
        t.join(10)
    return not any(t.name == "zarrfast-announce" for t in threading.enumerate())


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_arrays_have_every_file_announced_at_once_and_read_right(
        tmp_path, monkeypatch, threads) -> None:
    arrays, wants = _arrays(tmp_path, 12, chunks=(32, 32))
    spy = _Spy(monkeypatch, arrays)
    region = (slice(20, 70), slice(10, 60))  # (chunks 0-2 by 0-1: 6 files per array)
    files = [f"a{i:02d}.zarr/c/{r}/{c}" for i in range(12) for r in range(3)
             for c in range(2)]
    with zarrfast.config.set(threads=threads):
        for _ in range(ATTEMPTS):
            _evict(tmp_path)
            spy.clear()
            got = zarrfast.get_many([(a, region) for a in arrays])
            for g, w in zip(got, wants, strict=True):
                np.testing.assert_array_equal(g, w[region])
            assert _announcers_gone()
            if spy.announced:  # (the probe found the first file cold)
                break
        else:
            pytest.fail("no cold call announced the arrays' files")
        # every array's files, once each, in the order the arrays are read (the
        # announcer may stop once the reads are done: a prefix of them)
        assert spy.announced == files[:len(spy.announced)]
        assert len(spy.announced) >= 6
        # a few reads per thread at a time, not one thread per array
        assert 1 <= spy.most <= many.COLD_READS_PER_THREAD * threads
        # warm: nothing announced, the same values
        spy.clear()
        got = zarrfast.get_many([(a, region) for a in arrays])
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, w[region])
        assert spy.announced == [] and spy.most <= threads


def test_cold_arrays_with_missing_chunks_and_strides(tmp_path, monkeypatch) -> None:
    """Missing chunk files (the fill value) and a region of steps, one negative: the
    files announced are the chunks the region touches, in the order of the grid, array
    after array; the values are right."""
    arrays, wants = _arrays(tmp_path, 6, chunks=(16, 16), fill_value=3)
    for i in (1, 4):  # (chunk (2, 1) of arrays 1 and 4 gone)
        (tmp_path / f"a{i:02d}.zarr" / "c" / "2" / "1").unlink()
        wants[i][32:48, 16:32] = 3
    spy = _Spy(monkeypatch, arrays)
    region = (slice(5, 90, 7), slice(40, 3, -3))
    for _ in range(ATTEMPTS):
        _evict(tmp_path)
        spy.clear()
        got = zarrfast.get_many([(a, region) for a in arrays])
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, w[region])
        assert _announcers_gone()
        if spy.announced:
            break
    else:
        pytest.fail("no cold call announced the arrays' files")
    rows = sorted({int(r) // 16 for r in np.arange(96)[region[0]]})
    cols = sorted({int(c) // 16 for c in np.arange(96)[region[1]]})
    files = [f"a{i:02d}.zarr/c/{r}/{c}" for i in range(6) for r in rows for c in cols]
    # (the missing files among them too: announcing one that is not there is skipped)
    assert spy.announced == files[:len(spy.announced)]


def test_cold_sharded_arrays_announce_no_shard(tmp_path, monkeypatch) -> None:
    """Shards are not announced whole (their index says which ranges to read): the
    batches of sharded arrays are read as before, their kernels announcing ranges."""
    arrays, wants = _arrays(tmp_path, 6, chunks=(16, 16), shards=(48, 48))
    spy = _Spy(monkeypatch, arrays)
    region = (slice(20, 70), slice(10, 60))
    for _ in range(3):
        _evict(tmp_path)
        got = zarrfast.get_many([(a, region) for a in arrays])
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, w[region])
    assert _announcers_gone()
    assert spy.announced == []


def _steps(draw, n: int) -> slice | int:
    """A slice (any step, negative ones too) or an int along a dimension of ``n``."""
    if draw(st.booleans()):
        return draw(st.integers(-n, n - 1))
    a = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    b = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    step = draw(st.one_of(st.none(), st.integers(-2 * n, 2 * n).filter(lambda x: x != 0)))
    return slice(a, b, step)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_selection_files_are_the_chunks_numpy_touches(data) -> None:
    """``selection_files``: the keys of the chunks a basic selection touches, in C
    order of the grid, at most ``limit`` -- against the chunks of the elements NumPy
    selects."""
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.integers(1, 30)) for _ in range(ndim))
    chunks = tuple(data.draw(st.integers(1, 12)) for _ in range(ndim))
    sel = tuple(_steps(data.draw, n) for n in shape)
    limit = data.draw(st.integers(0, 60))
    a = zarrfast.create_array(store={}, shape=shape, chunks=chunks, dtype="u1")
    md = a._metadata
    per_dim = []
    for s, n, c in zip(sel, shape, chunks, strict=True):
        idx = np.arange(n)[s]
        per_dim.append(sorted({int(i) // c for i in np.atleast_1d(idx)}))
    coords = list(itertools.product(*per_dim))[:limit]
    want = chunk_keys(md, "p", np.array(coords, dtype=np.int64).reshape(len(coords), ndim))
    assert many.selection_files(md, "p", sel, limit) == want


def test_selection_files_of_refused_selections_are_none() -> None:
    a = zarrfast.create_array(store={}, shape=(10, 10), chunks=(3, 3), dtype="u1")
    md = a._metadata
    assert many.selection_files(md, "", (slice(0, 4), 99), 100) == []  # (out of bounds)
    assert many.selection_files(md, "", ("x",), 100) == []
    assert many.selection_files(md, "", (slice(4, 4),), 100) == []  # (selects nothing)
    assert many.selection_files(md, "", (slice(0, 4),), 0) == []
    assert many.selection_files(md, "", (slice(0, 4),), 100) == ["c/0/0", "c/0/1", "c/0/2",
                                                                  "c/0/3", "c/1/0", "c/1/1",
                                                                  "c/1/2", "c/1/3"]
