"""``prefetch_if_cold``: the chunk files of a read announced to the kernel when the
first of them is not in the page cache (zarrfast.engine.chunked)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast._ext import _decode
from zarrfast.engine import chunked
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict as _evict
from _helpers.page_cache import is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")


_cold = is_cold


def _array(tmp_path):
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=(64, 64), chunks=(8, 8),
                              dtype="i4")
    a[:] = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    return a


def _advised(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.posix_fadvise

    def spy(fd, offset, length, advice):
        if advice == os.POSIX_FADV_WILLNEED:
            calls.append(fd)
        return real(fd, offset, length, advice)

    monkeypatch.setattr(chunked.os, "posix_fadvise", spy)
    return calls


def test_warm_files_are_only_probed(tmp_path, monkeypatch):
    a = _array(tmp_path)
    a[:]  # (in the page cache)
    calls = _advised(monkeypatch)
    keys = [f"c/{i}/{j}" for i in range(8) for j in range(8)]
    chunked.prefetch_if_cold(a.store, keys)
    assert calls == []


def test_cold_files_are_announced_and_read_the_same(tmp_path, monkeypatch):
    a = _array(tmp_path)
    _evict(tmp_path)
    if not _cold(tmp_path / "a.zarr" / "c" / "0" / "0"):
        pytest.skip("this file system keeps the files in memory (tmpfs?)")
    calls = _advised(monkeypatch)
    keys = [f"c/{i}/{j}" for i in range(8) for j in range(8)]
    for _ in range(5):  # (eviction is best effort: another CPU may still hold a page)
        _evict(tmp_path)  # (the probe may have started reading the file it probed)
        calls.clear()
        chunked.prefetch_if_cold(a.store, keys)
        if calls:
            break
    assert len(calls) == 64
    b = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    sels = [(slice(3, 61), slice(5, 30)), (slice(0, 64, 3), slice(40, 59))]
    ref = np.arange(64 * 64).reshape(64, 64)
    announced = []
    for _ in range(5):  # (eviction is best effort: see tests/engine/test_cold_reads.py)
        _evict(tmp_path)
        before = _decode.cold_announcements()
        got = b.get_many(sels)  # (its chunks read by batches of files: read_rows_files)
        announced.append(_decode.cold_announcements() - before)
        for s, r in zip(sels, got, strict=True):
            np.testing.assert_array_equal(r, ref[s])
    # (announced by the decoding kernel, not here: see tests/engine/test_cold_reads.py)
    assert max(announced) >= 1, "a cold batch of chunk files announces them"


def test_a_fifo_or_a_link_among_the_files_neither_blocks_nor_is_followed(tmp_path,
                                                                       monkeypatch):
    a = _array(tmp_path)
    chunk_dir = tmp_path / "a.zarr" / "c" / "0"
    os.remove(chunk_dir / "1")
    os.mkfifo(chunk_dir / "1")  # a FIFO nobody writes: opening it for reading would block
    outside = tmp_path / "outside"
    outside.write_bytes(b"x" * 100)
    os.remove(chunk_dir / "2")
    os.symlink(outside, chunk_dir / "2")
    opened: list[str] = []
    real_open = os.open

    def spy_open(path, flags, *args, **kwargs):
        opened.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(chunked.os, "open", spy_open)
    keys = ["c/0/1", "c/0/2", "c/0/3"]  # the FIFO first: the probe opens it
    done = threading.Event()

    def run():
        chunked.prefetch_if_cold(a.store, keys)
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert done.wait(60), "the probe blocked on a FIFO"
    keys = ["c/0/2", "c/0/3"]  # the link first: not followed (O_NOFOLLOW)
    chunked.prefetch_if_cold(a.store, keys)
    assert all("outside" not in p for p in opened)
