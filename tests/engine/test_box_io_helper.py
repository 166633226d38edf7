"""Box reads at one thread with an I/O helper (issue 44, target 1): the kernels' helper
thread reads the chunk files of a box ahead of the calling thread, which decodes and
places every chunk (``boxes.IO_HELPER``).  The helper reads into memory of its own
(copies of the paths, a duplicate of the root directory's descriptor), which the last
of the two threads to let it go frees: the calling thread never waits for it.  These
tests check the values (chunks read by either thread, missing ones, damaged ones), that
the helper did read some, and that no descriptor is left open."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.engine import boxes

pytest.importorskip("zarrfast._ext._decode")
from zarrfast._ext import _decode  # noqa: E402

ZSTD = [{"name": "zstd", "configuration": {"level": 1}}]


def _helper_rows() -> int:
    """Rows the helper threads read for the calling thread to decode."""
    return _decode.helper_jobs()[2]


@pytest.fixture
def contended(monkeypatch):
    """The cores seen as busy with other work for the next hour
    (``concurrency.cores_contended``; tests/conftest.py turns the check off)."""
    from zarrfast import concurrency

    state = concurrency._Contention()
    state.alone, state.since = True, time.monotonic() + 3600
    monkeypatch.setattr(concurrency, "_contention", state)
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", True)
    return state


def _array(tmp_path, shape=(48, 40, 36), chunks=(8, 8, 6),
           noise: bool = False) -> tuple[zarrfast.Array, np.ndarray]:
    a = zarrfast.create_array(str(tmp_path / "a"), shape=shape, chunks=chunks,
                              dtype="int32", compressors=ZSTD, fill_value=-7)
    data = (np.random.default_rng(3).integers(0, 1000, size=shape, dtype="int32") if noise
            else np.arange(np.prod(shape), dtype="int32").reshape(shape))
    a[...] = data
    return a, data


def _boxes(shape, chunks, n, seed=0):
    """Boxes one to two chunks long per side, at random offsets (the harness's)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        box = []
        for s, c in zip(shape, chunks, strict=True):
            size = int(rng.integers(c, min(2 * c, s) + 1))
            start = int(rng.integers(0, s - size + 1))
            box.append(slice(start, start + size))
        out.append(tuple(box))
    return out


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(sys.platform == "win32", reason="no helper threads on Windows")
def test_one_thread_boxes_have_their_files_read_by_the_helper(tmp_path):
    """Values equal to NumPy's for every box, and the helper read some of the chunks
    (before: at one thread the helper did nothing)."""
    # (chunks of 64 KiB that take a while to decode: the helper, woken by the read,
    # finds rows left to read)
    a, data = _array(tmp_path, shape=(96, 96, 64), chunks=(32, 32, 16), noise=True)
    before = _helper_rows()
    with config.set(threads=1):
        for _ in range(20):  # (the helper may sleep through a box; rarely through many)
            for box in _boxes(a.shape, a.chunks, 10):
                np.testing.assert_array_equal(a[box], data[box])
            if _helper_rows() > before:
                break
    assert _helper_rows() > before


def test_io_share_only_for_several_compressed_chunks_at_one_thread():
    zstd = type("C", (), {"batch_codec": "zstd", "chunk_nbytes": 2**16})()
    raw = type("C", (), {"batch_codec": None, "chunk_nbytes": 2**16})()
    assert boxes.io_share(8, zstd, 1) == boxes.IO_HELPER
    assert boxes.io_share(1, zstd, 1) == 0  # (one chunk: nothing to overlap)
    assert boxes.io_share(8, raw, 1) == 0  # (uncompressed: read into place)
    assert boxes.io_share(boxes.BOX_IO_CHUNKS + 1, zstd, 1) == 0
    assert boxes.io_share(8, zstd, 2) == boxes.share_mode(8, zstd, 2)  # (more threads)


def test_io_share_while_the_cores_are_busy(contended):
    """Busy cores: a box is read in the calling thread alone, without the I/O helper too
    (measured with one other busy process on 2 cores, 100 boxes at 2 threads: the I/O
    helper took the calling thread's share of the CPU, 64-164 ms against 55-62 alone)."""
    zstd = type("C", (), {"batch_codec": "zstd", "chunk_nbytes": 2**16})()
    for threads in (1, 2, 4):
        assert boxes.io_share(8, zstd, threads) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="no helper threads on Windows")
def test_contended_one_thread_boxes_take_no_helper(tmp_path, contended):
    """One thread on busy cores: no row read or decoded by a helper; values right."""
    a, data = _array(tmp_path, shape=(96, 96, 64), chunks=(32, 32, 16), noise=True)
    with config.set(threads=1):
        a[0:40, 0:40, 0:20]
        before = _decode.helper_jobs()[1:]
        for box in _boxes(a.shape, a.chunks, 30, seed=4):
            np.testing.assert_array_equal(a[box], data[box])
        assert _decode.helper_jobs()[1:] == before


def test_missing_chunks_in_a_box_are_the_fill_value(tmp_path):
    """Chunk files removed inside the boxes: read as the fill value, by whichever thread
    reads them (the helper's ENOENT is a missing chunk too)."""
    a, data = _array(tmp_path)
    want = data.copy()
    root = tmp_path / "a" / "c"
    for i, j, k in [(1, 1, 1), (2, 1, 2), (1, 2, 1), (3, 3, 3), (0, 0, 0)]:
        os.remove(root / str(i) / str(j) / str(k))
        want[i * 8:(i + 1) * 8, j * 8:(j + 1) * 8, k * 6:(k + 1) * 6] = -7
    b = zarrfast.open_array(str(tmp_path / "a"))
    with config.set(threads=1):
        for _ in range(5):
            for box in _boxes(b.shape, b.chunks, 30, seed=1):
                np.testing.assert_array_equal(b[box], want[box])


def test_a_damaged_chunk_in_a_box_is_refused_naming_it(tmp_path):
    """A chunk file that does not decode: the read says which, whether the helper or
    the calling thread read it; the boxes beside it still read."""
    a, data = _array(tmp_path)
    bad = tmp_path / "a" / "c" / "1" / "1" / "1"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"not zstd at all" * 8)
    b = zarrfast.open_array(str(tmp_path / "a"))
    box = (slice(4, 20), slice(4, 20), slice(3, 15))  # (8 to 27 chunks, 1/1/1 among them)
    with config.set(threads=1):
        for _ in range(10):
            with pytest.raises(Exception, match=r"c/1/1/1"):
                b[box]
            np.testing.assert_array_equal(b[20:40, 20:36, 14:30], data[20:40, 20:36, 14:30])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd")
def test_no_descriptor_is_left_open(tmp_path):
    """The helper's duplicate of the root directory is closed by whichever thread lets
    the read go last: after many box reads the process holds no more descriptors."""
    a, data = _array(tmp_path)
    b = zarrfast.open_array(str(tmp_path / "a"))
    with config.set(threads=1):
        b[0:16, 0:16, 0:12]
        fds = _open_fds()
        for box in _boxes(b.shape, b.chunks, 100, seed=2):
            np.testing.assert_array_equal(b[box], data[box])
    for _ in range(200):  # (the helper may still be letting the last read go)
        if _open_fds() <= fds:
            break
        time.sleep(0.01)
    assert _open_fds() <= fds


@pytest.mark.skipif(sys.platform == "win32", reason="no helper threads on Windows")
def test_sharded_boxes_ranges_read_by_the_helper(tmp_path, monkeypatch):
    """Inner chunks read from open shard files by the helper, through duplicates of the
    shards' descriptors (the caller closes its own when the call returns): values equal,
    a missing shard is the fill value, the helper read some, no descriptor left open."""
    shape, chunks = (128, 128, 64), (32, 32, 16)
    a = zarrfast.create_array(str(tmp_path / "s"), shape=shape, chunks=chunks,
                              shards=(64, 64, 32), dtype="int32", compressors=ZSTD,
                              fill_value=-7)
    data = np.random.default_rng(5).integers(0, 1000, size=shape, dtype="int32")
    a[...] = data
    os.remove(tmp_path / "s" / "c" / "1" / "0" / "1")
    data[64:128, 0:64, 32:64] = -7
    b = zarrfast.open_array(str(tmp_path / "s"))
    before = _helper_rows()
    with config.set(threads=1):
        b[0:40, 0:40, 0:20]
        fds = _open_fds()
        for _ in range(20):
            for box in _boxes(shape, chunks, 10, seed=3):
                np.testing.assert_array_equal(b[box], data[box])
            if _helper_rows() > before:
                break
    assert _helper_rows() > before
    for _ in range(200):  # (the helper may still be letting the last read go)
        if _open_fds() <= fds:
            break
        time.sleep(0.01)
    assert _open_fds() <= fds
