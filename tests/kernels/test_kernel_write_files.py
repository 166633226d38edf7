"""Batched local writes: ``_ext._fileio.write_files`` against its twin (a temporary
file, then a rename; refused links, missing directories, clashing temporary paths).
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from zarrfast.kernels import reference as ref

from _helpers.kernels import names_checked_first

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

IMPLS = [pytest.param(ref.write_files, id="reference")]
if _fileio is not None:
    IMPLS.append(pytest.param(_fileio.write_files, id="compiled"))


if _fileio is not None:
    IMPLS.append(pytest.param(names_checked_first(_fileio.write_files),
                              id="compiled-names-checked-first"))


def run_case(write_files, root):
    """Every kind of item at once; returns (errors, what each path holds)."""
    (root / "d").mkdir()
    (root / "gone").mkdir()
    (root / "d" / "old").write_bytes(b"old value")
    outside = root / "outside"
    outside.write_bytes(b"precious")
    (root / "d" / "link").symlink_to(outside)
    (root / "d" / "dangling").symlink_to(root / "nowhere")  # a link to nothing yet
    (root / "d" / ".tmp-taken").write_bytes(b"x")  # a temporary name already in use
    (root / "d" / ".tmp-linked").symlink_to(root / "outside-tmp")  # never followed
    items = [
        ("d", "a", ".tmp-a", b"alpha"),
        ("d", "old", ".tmp-old", b"new value"),               # replaces a file
        ("d", "link", ".tmp-link", b"through a link"),        # refused: ELOOP
        ("d", "dangling", ".tmp-dangling", b"to nowhere"),    # refused: ELOOP
        ("gone", "b", ".tmp-b", b"no directory"),             # removed once open: ENOENT
        ("d", "c", ".tmp-taken", b"clash"),                   # EEXIST
        ("d", "e", ".tmp-linked", b"through a temporary link"),  # EEXIST (O_EXCL)
        ("d", "empty", ".tmp-empty", b""),
        ("d", "array", ".tmp-array", np.arange(5, dtype="<u2")),
        ("d", "view", ".tmp-view", memoryview(b"0123456789")[2:6]),
    ]
    fds = {d: os.open(root / d, os.O_RDONLY | os.O_DIRECTORY) for d in ("d", "gone")}
    os.rmdir(root / "gone")
    try:
        errors = write_files(np.array([fds[d] for d, _, _, _ in items], dtype=np.int64),
                             [t.encode() for _, _, t, _ in items],
                             [k.encode() for _, k, _, _ in items],
                             [v for _, _, _, v in items])
    finally:
        for fd in fds.values():
            os.close(fd)
    held = {}
    for d, k, _, _ in items:
        p = root / d / k
        held[f"{d}/{k}"] = p.read_bytes() if p.exists() and not p.is_symlink() else None
    return (errors.tolist(), held, outside.read_bytes(), (root / "d" / "link").is_symlink(),
            (root / "outside-tmp").exists() or (root / "nowhere").exists())


@pytest.mark.parametrize("write_files", IMPLS)
def test_write_files_writes_renames_and_reports(write_files, tmp_path):
    errors, held, outside, still_link, tmp_target = run_case(write_files, tmp_path)
    assert errors == [0, 0, errno.ELOOP, errno.ELOOP, errno.ENOENT, errno.EEXIST, errno.EEXIST,
                      0, 0, 0]
    assert held["d/a"] == b"alpha" and held["d/old"] == b"new value"
    assert held["d/empty"] == b"" and held["d/view"] == b"2345"
    assert held["d/array"] == np.arange(5, dtype="<u2").tobytes()
    assert held["d/c"] is None and held["gone/b"] is None and held["d/e"] is None
    assert held["d/dangling"] is None and (tmp_path / "d" / "dangling").is_symlink()
    assert outside == b"precious" and still_link  # nothing written through the link
    assert not tmp_target  # nor through a link at a temporary name, or a dangling one
    # failed writes leave no temporary file (the ones already there stay)
    assert sorted(os.listdir(tmp_path / "d")) == sorted(
        ["a", "old", "link", "dangling", ".tmp-taken", ".tmp-linked", "empty", "array",
         "view"])


@pytest.mark.skipif(_fileio is None, reason="no compiled kernel")
def test_write_files_kernel_and_twin_agree(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "c").mkdir()
    got_r = run_case(ref.write_files, tmp_path / "r")
    got_c = run_case(_fileio.write_files, tmp_path / "c")
    assert got_r == got_c


@pytest.mark.parametrize("write_files", IMPLS)
def test_write_files_validates_before_writing(write_files, tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        d = np.array([fd], dtype=np.int64)
        with pytest.raises(ValueError, match="1 names but 2 temporary"):
            write_files(d, [b".t"] * 2, [b"a"], [b"x"])
        with pytest.raises(ValueError, match="directories"):
            write_files(np.array([fd, fd], dtype=np.int64), [b".t"], [b"a"], [b"x"])
        with pytest.raises(TypeError, match="expected bytes"):
            write_files(d, [".t"], [b"a"], [b"x"])
        with pytest.raises(ValueError, match="one path component"):  # a NUL byte
            write_files(d, [b"a\0b"], [b"a"], [b"x"])
        with pytest.raises(ValueError, match="one path component"):
            write_files(d, [b".t"], [b"sub/a"], [b"x"])
        with pytest.raises(ValueError, match="not open"):
            write_files(np.array([-1], dtype=np.int64), [b".t"], [b"a"], [b"x"])
        with pytest.raises(BufferError):
            write_files(d, [b".t"], [b"a"], [np.arange(10)[::2]])  # not C-contiguous
    finally:
        os.close(fd)
    assert os.listdir(tmp_path) == []
