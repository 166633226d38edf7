"""Opening files inside a directory without following symbolic links:
``_ext._fileio.open_nolinks`` (``openat2``, and the ``O_NOFOLLOW`` walk of systems
without it) against its twin, and the ``root=`` form of the batched file readers
(``read_files_into``, ``ChunkDecoder.decode_files``)."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from zarrfast import kernels
from zarrfast.kernels import reference as ref

from _helpers.decode import call_files

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

#: relative path -> the errno opening it gives (0: it opens, and holds its own name)
CASES = {
    b"f": 0,
    b"d/f": 0,
    b"d/e/f": 0,
    b"missing": errno.ENOENT,
    b"d/missing/f": errno.ENOENT,
    b"f/below": errno.ENOTDIR,
    b"rel_in": errno.ELOOP,        # a relative link to a file inside
    b"abs_in": errno.ELOOP,        # an absolute link to a file inside
    b"out": errno.ELOOP,           # a link to a file outside
    b"dlink/f": errno.ELOOP,       # a link to a directory inside, in the middle
    b"dout/secret": errno.ELOOP,   # a link to a directory outside, in the middle
    b"d/e/up": errno.ELOOP,        # a link "../../f"
    b"dangling": errno.ELOOP,      # a link to nothing
    b"../outside/secret": errno.EXDEV,
    b"d/../../outside/secret": errno.EXDEV,
}


def make_tree(tmp_path):
    root = tmp_path / "root"
    (root / "d" / "e").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_bytes(b"secret")
    for rel in ("f", "d/f", "d/e/f"):
        (root / rel).write_bytes(rel.encode())
    os.symlink("f", root / "rel_in")
    os.symlink(root / "f", root / "abs_in")
    os.symlink(tmp_path / "outside" / "secret", root / "out")
    os.symlink("d", root / "dlink")
    os.symlink(tmp_path / "outside", root / "dout")
    os.symlink("../../f", root / "d" / "e" / "up")
    os.symlink(tmp_path / "nothing", root / "dangling")
    return root


def outcomes(open_nolinks, root):
    rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    got = {}
    try:
        for rel in CASES:
            try:
                fd = open_nolinks(rootfd, rel, os.O_RDONLY)
            except OSError as e:
                got[rel] = e.errno
            else:
                try:
                    assert os.read(fd, 100) == rel
                finally:
                    os.close(fd)
                got[rel] = 0
    finally:
        os.close(rootfd)
    return got


IMPLS = [pytest.param("reference", id="reference")]
if _fileio is not None:
    IMPLS += [pytest.param("openat2", id="compiled-openat2"),
              pytest.param("walk", id="compiled-walk")]


@pytest.mark.parametrize("impl", IMPLS)
def test_open_nolinks_follows_no_link_and_never_leaves(impl, tmp_path):
    root = make_tree(tmp_path)
    if impl == "reference":
        got = outcomes(ref.open_nolinks, root)
    else:
        before = _fileio.use_openat2(impl == "openat2")
        try:
            got = outcomes(_fileio.open_nolinks, root)
        finally:
            _fileio.use_openat2(before)
    assert got == CASES


@pytest.mark.parametrize("impl", IMPLS)
def test_open_nolinks_creates_inside_and_refuses_a_link_at_the_name(impl, tmp_path):
    fn = ref.open_nolinks if impl == "reference" else _fileio.open_nolinks
    before = _fileio.use_openat2(impl != "walk") if _fileio is not None else None
    try:
        _create_inside_refuse_links(fn, tmp_path)
    finally:
        if _fileio is not None:
            _fileio.use_openat2(before)


def _create_inside_refuse_links(fn, tmp_path):
    root = make_tree(tmp_path)
    rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        os.close(fn(rootfd, b"d/new", flags, 0o600))
        assert (root / "d" / "new").stat().st_mode & 0o777 == 0o600
        for rel, code in ((b"dangling", errno.EEXIST), (b"dout/new", errno.ELOOP)):
            with pytest.raises(OSError) as e:
                fn(rootfd, rel, flags, 0o600)
            assert e.value.errno == code
        with pytest.raises(ValueError, match="NUL"):
            fn(rootfd, b"a\0b", os.O_RDONLY)
        with pytest.raises(TypeError):
            fn(rootfd, "f", os.O_RDONLY)
    finally:
        os.close(rootfd)
    assert not (tmp_path / "nothing").exists()
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret"]


READERS = [pytest.param(ref.read_files_into, id="reference")]
DECODERS = [pytest.param(ref.ChunkDecoder, id="reference")]
if _fileio is not None:
    READERS.append(pytest.param(_fileio.read_files_into, id="compiled"))
if kernels.ChunkDecoder is not None and "zstd" in kernels.BATCH_CODECS:
    DECODERS.append(pytest.param(kernels.ChunkDecoder, id="compiled"))


@pytest.mark.parametrize("read_files_into", READERS)
def test_read_files_into_under_a_root(read_files_into, tmp_path):
    root = make_tree(tmp_path)
    paths = list(CASES)
    n, nb = len(paths), 16
    dst = np.zeros(n * nb, dtype=np.uint8)
    offsets = np.arange(n, dtype=np.int64) * nb
    sizes, errors = read_files_into(paths, dst, offsets, nb, False, root=os.fsencode(root))
    want = [0 if c == 0 else c for c in CASES.values()]
    assert errors.tolist() == want
    for i, rel in enumerate(paths):
        if CASES[rel] == 0:
            assert sizes[i] == len(rel) and dst[i * nb:i * nb + len(rel)].tobytes() == rel
        else:
            assert sizes[i] == -1
    assert b"secret" not in dst.tobytes()
    # a root that does not exist: every file is missing
    sizes, errors = read_files_into([b"f"], dst, offsets[:1], nb, False,
                                    root=os.fsencode(tmp_path / "none"))
    assert sizes.tolist() == [-1] and errors.tolist() == [errno.ENOENT]


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_files_under_a_root(cls, tmp_path):
    zstd = pytest.importorskip("numcodecs").Zstd()
    root = tmp_path / "root"
    (root / "c").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    chunk = np.arange(6, dtype="<i2").tobytes()
    frame = zstd.encode(chunk)
    (root / "c" / "0").write_bytes(frame)
    (tmp_path / "outside" / "1").write_bytes(frame)
    os.symlink(tmp_path / "outside" / "1", root / "c" / "1")  # outside
    os.symlink("0", root / "c" / "2")  # inside, still not followed by the kernel
    names = [b"c/0", b"c/1", b"c/2", b"c/3"]
    n, nb = len(names), len(chunk)
    dec = cls("zstd", nb)
    dst = np.zeros(n * nb, dtype=np.uint8)
    i64 = np.int64
    status, sizes, errors = call_files(dec,
        names, np.zeros(n, i64), np.array([2], i64), dst, np.arange(n, dtype=i64) * nb,
        np.array([2], i64), np.full((n, 1), 6, i64), 2, 1, np.ones(n, np.uint8),
        root=os.fsencode(root))
    assert status.tolist() == [kernels.DECODED, kernels.FAILED, kernels.FAILED,
                               kernels.NO_DATA]
    assert errors.tolist() == [0, errno.ELOOP, errno.ELOOP, 0]
    assert dst[:nb].tobytes() == chunk and not dst[nb:].any()

