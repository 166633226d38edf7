"""Files out of the page cache, and whether one is in it: cold reads in tests."""

from __future__ import annotations

import os


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
