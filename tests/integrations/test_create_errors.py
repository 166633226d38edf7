"""Creating an array where the file system makes no directory: the error says so, naming
the directory, and a concurrent delete is still told as one."""

from __future__ import annotations

import errno
import os
import sys

import pytest

import zarrfast
from zarrfast.errors import ConcurrentWriteError
from zarrfast.storage import local as local_module
from zarrfast.storage.errors import StorePermissionError, StoreWriteError


@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir("/proc/self"),
                    reason="needs Linux's /proc")
def test_create_array_in_proc_says_the_directory_cannot_be_made():
    with pytest.raises(StoreWriteError) as e:
        zarrfast.create_array("/proc/x.zarr", shape=(2,), dtype="i1")
    assert not isinstance(e.value, ConcurrentWriteError)
    msg = str(e.value)
    assert "cannot create the directory '/proc/x.zarr'" in msg, msg
    assert "concurrent" not in msg and "removed" not in msg, msg
    assert "read-only or virtual file system" in msg
    assert e.value.filename == "/proc/x.zarr"


def test_a_refused_directory_names_the_reason(tmp_path, monkeypatch):
    def refuse(path, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(local_module.os, "makedirs", refuse)
    target = tmp_path / "ro" / "x.zarr"
    with pytest.raises(StoreWriteError) as e:
        zarrfast.create_array(str(target), shape=(2,), dtype="i1")
    msg = str(e.value)
    assert f"cannot create the directory {str(target)!r}" in msg, msg
    assert os.strerror(errno.EROFS) in msg and "concurrent" not in msg

    def deny(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr(local_module.os, "makedirs", deny)
    with pytest.raises(StorePermissionError, match="cannot create the directory"):
        zarrfast.create_array(str(target), shape=(2,), dtype="i1")


def test_a_directory_removed_while_made_is_still_a_concurrent_delete(tmp_path, monkeypatch):
    gone = tmp_path / "gone"

    def removed(path, *args, **kwargs):  # its parent vanished under the mkdir
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                str(gone / "x.zarr"))

    monkeypatch.setattr(local_module.os, "makedirs", removed)
    with pytest.raises(ConcurrentWriteError, match="removed while they were made"):
        zarrfast.create_array(str(gone / "x.zarr"), shape=(2,), dtype="i1")
