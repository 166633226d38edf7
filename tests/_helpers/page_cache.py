"""Files out of the page cache, and whether one is in it: cold reads in tests."""

from __future__ import annotations

import os
import time

import pytest

#: a test module's mark (``pytestmark = needs_cold_reads``): cold reads need the page
#: cache's hints, reads that refuse to wait for the disk, and the descriptors' list
needs_cold_reads = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")
         and os.path.isdir("/proc/self/fd")),
    reason="needs posix_fadvise, preadv(RWF_NOWAIT) and /proc/self/fd (Linux)")


def evict(root: str | os.PathLike) -> None:
    """Write back, then drop from the page cache, every regular file below ``root``
    (``posix_fadvise(POSIX_FADV_DONTNEED)``: no privilege needed; links not followed)."""
    os.sync()
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def is_cold(path: str | os.PathLike) -> bool:
    """Whether reading the first byte of the file ``path`` would wait for the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def held_open(path: str | os.PathLike, wait: float = 60) -> list[str]:
    """The files this process holds open that are ``path`` (a file) or lie below it (a
    directory), once it holds none -- or, after ``wait`` seconds, those it holds then.
    (A box's I/O helper thread lets its chunk files go just after the read returned:
    never waited for, by design.)"""
    real = os.path.realpath(path)
    below = real + os.sep
    itself = real if not os.path.isdir(real) else None  # (a store holds its root open)
    end = time.monotonic() + wait
    while True:
        held = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # (closed meanwhile, or the listing's own)
                continue
            if target == itself or target.startswith(below):
                held.append(target)
        if not held or time.monotonic() > end:
            return held
        time.sleep(0.005)
