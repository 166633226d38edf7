"""Batched local writes: ``_ext._fileio.write_files`` against its twin (a temporary
file, then a rename; refused links, missing directories, clashing temporary paths).
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from zarrfast.kernels import reference as ref

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

IMPLS = [pytest.param(ref.write_files, id="reference")]
if _fileio is not None:
    IMPLS.append(pytest.param(_fileio.write_files, id="compiled"))


def run_case(write_files, root):
    """Every kind of item at once; returns (errors, what each path holds)."""
    (root / "d").mkdir()
    (root / "d" / "old").write_bytes(b"old value")
    outside = root / "outside"
    outside.write_bytes(b"precious")
    (root / "d" / "link").symlink_to(outside)
    (root / "d" / ".tmp-taken").write_bytes(b"x")  # a temporary path already in use
    items = [
        ("d/a", "d/.tmp-a", b"alpha"),
        ("d/old", "d/.tmp-old", b"new value"),               # replaces a file
        ("d/link", "d/.tmp-link", b"through a link"),        # refused: ELOOP
        ("missing/b", "missing/.tmp-b", b"no directory"),    # ENOENT
        ("d/c", "d/.tmp-taken", b"clash"),                   # EEXIST
        ("d/empty", "d/.tmp-empty", b""),
        ("d/array", "d/.tmp-array", np.arange(5, dtype="<u2")),
        ("d/view", "d/.tmp-view", memoryview(b"0123456789")[2:6]),
    ]
    paths = [os.fsencode(root / k) for k, _, _ in items]
    tmps = [os.fsencode(root / t) for _, t, _ in items]
    errors = write_files(tmps, paths, [v for _, _, v in items])
    held = {}
    for k, _, _ in items:
        p = root / k
        held[k] = p.read_bytes() if p.exists() and not p.is_symlink() else None
    return errors.tolist(), held, outside.read_bytes(), (root / "d" / "link").is_symlink()


@pytest.mark.parametrize("write_files", IMPLS)
def test_write_files_writes_renames_and_reports(write_files, tmp_path):
    errors, held, outside, still_link = run_case(write_files, tmp_path)
    assert errors == [0, 0, errno.ELOOP, errno.ENOENT, errno.EEXIST, 0, 0, 0]
    assert held["d/a"] == b"alpha" and held["d/old"] == b"new value"
    assert held["d/empty"] == b"" and held["d/view"] == b"2345"
    assert held["d/array"] == np.arange(5, dtype="<u2").tobytes()
    assert held["d/c"] is None and held["missing/b"] is None
    assert outside == b"precious" and still_link  # nothing written through the link
    # failed writes leave no temporary file (the one already there stays)
    assert sorted(os.listdir(tmp_path / "d")) == sorted(
        ["a", "old", "link", ".tmp-taken", "empty", "array", "view"])


@pytest.mark.skipif(_fileio is None, reason="no compiled kernel")
def test_write_files_kernel_and_twin_agree(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "c").mkdir()
    got_r = run_case(ref.write_files, tmp_path / "r")
    got_c = run_case(_fileio.write_files, tmp_path / "c")
    assert got_r == got_c


@pytest.mark.parametrize("write_files", IMPLS)
def test_write_files_validates_before_writing(write_files, tmp_path):
    p = [os.fsencode(tmp_path / "a")]
    t = [os.fsencode(tmp_path / ".t")]
    with pytest.raises(ValueError, match="1 paths but 2 temporary"):
        write_files(t * 2, p, [b"x"])
    with pytest.raises(TypeError, match="expected bytes"):
        write_files([str(tmp_path / ".t")], p, [b"x"])
    with pytest.raises(ValueError, match="NUL"):
        write_files([b"a\0b"], p, [b"x"])
    with pytest.raises(BufferError):
        write_files(t, p, [np.arange(10)[::2]])  # not C-contiguous
    assert os.listdir(tmp_path) == []
