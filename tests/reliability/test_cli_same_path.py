"""Issue 41, class 2: ``zarrfast copy`` and ``zarrfast convert`` never destroy their own
source.  A destination that is the source under any spelling (``S``, ``./S/``,
``S/../S``, a symbolic link to ``S``, the same ``.zip``), a destination inside the source
and a source inside the destination are refused before anything is written or deleted:
exit code 2, a message naming both paths, and every file of the source byte-identical
afterwards.  The Python function behind both commands (``zarrfast.convert``) refuses the
same, for paths, stores, opened nodes and URLs."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError

from _helpers.files import file_bytes as _files


def _make_source(where) -> str:
    """A v3 hierarchy at ``where/S``: two arrays with chunks, one in a subgroup."""
    root = os.path.join(where, "S")
    g = zarrfast.open_group(root, mode="w", attributes={"title": "source"})
    a = g.create_array("a", shape=(12, 10), chunks=(4, 5), dtype="int32")
    a[...] = np.arange(120, dtype="int32").reshape(12, 10)
    sub = g.create_group("sub")
    b = sub.create_array("b", shape=(9,), chunks=(2,), dtype="float64")
    b[...] = np.linspace(0, 1, 9)
    return root


def _run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "zarrfast", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


#: (source, destination, extra flags): every one names one location twice, or one inside
#: the other; relative spellings are relative to the directory holding ``S``
SPELLINGS = [
    pytest.param("S", "S", [], id="same"),
    pytest.param("S", "./S/", [], id="dot-slash-trailing"),
    pytest.param("./S", "S/../S", [], id="dotdot"),
    pytest.param("S", "LINK", [], id="symlink-dst"),
    pytest.param("LINK/", "S", [], id="symlink-src"),
    pytest.param("S", "ABS", [], id="absolute"),
    pytest.param("S", "S/inner", [], id="dst-inside-src"),
    pytest.param("S", "S/sub/x.zarr", [], id="dst-deep-inside-src"),
    pytest.param("S/sub", "S", [], id="src-inside-dst"),
    pytest.param("S", "S", ["--dst-path", "sub/new"], id="dst-node-inside-src"),
    pytest.param("S", "S", ["--src-path", "sub", "--dst-path", ""], id="src-node-inside-dst"),
]


@pytest.mark.parametrize("command", ["copy", "convert"])
@pytest.mark.parametrize("src, dst, extra", SPELLINGS)
def test_the_command_refuses_to_write_over_its_source(subprocess_cwd, command, src, dst,
                                                      extra):
    root = _make_source(subprocess_cwd)
    os.symlink(root, os.path.join(subprocess_cwd, "LINK"))
    spell = {"LINK": "LINK", "ABS": root}
    dst = spell.get(dst, dst)
    before = _files(root)
    listing = sorted(os.listdir(subprocess_cwd))
    p = _run(subprocess_cwd, command, src, dst, "--overwrite", "--quiet", *extra)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert src in p.stderr and dst in p.stderr, p.stderr  # both named, as given
    assert _files(root) == before  # every chunk still there, byte for byte
    assert sorted(os.listdir(subprocess_cwd)) == listing  # nothing new beside it
    np.testing.assert_array_equal(zarrfast.open_array(root, path="a")[...],
                                  np.arange(120).reshape(12, 10))


@pytest.mark.parametrize("command", ["copy", "convert"])
def test_the_command_refuses_the_same_zip(subprocess_cwd, command):
    root = _make_source(subprocess_cwd)
    zpath = os.path.join(subprocess_cwd, "S.zip")
    assert _run(subprocess_cwd, "copy", root, zpath, "--quiet").returncode == 0
    before = _files(zpath)
    for dst in ("S.zip", "./S.zip", os.path.join("..", os.path.basename(subprocess_cwd),
                                                  "S.zip")):
        p = _run(subprocess_cwd, command, "S.zip", dst, "--overwrite", "--quiet")
        assert p.returncode == 2, (dst, p.stdout, p.stderr)
        assert "S.zip" in p.stderr and dst in p.stderr
        assert _files(zpath) == before
    # the zip is still a readable copy of S
    np.testing.assert_array_equal(zarrfast.open_array(zpath, path="a", mode="r")[...],
                                  np.arange(120).reshape(12, 10))


def test_disjoint_nodes_of_one_store_still_copy(subprocess_cwd):
    """Refusing overlaps does not refuse nodes of one store that do not overlap."""
    root = _make_source(subprocess_cwd)
    refused = _run(subprocess_cwd, "copy", "S", "S", "--src-path", "sub",
                   "--dst-path", "sub/deeper", "--quiet")
    assert refused.returncode == 2, refused.stderr
    p = _run(subprocess_cwd, "copy", "S", "S", "--src-path", "sub", "--dst-path", "other",
             "--quiet")
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(zarrfast.open_array(root, path="other/b")[...],
                                  np.linspace(0, 1, 9))


def test_the_python_function_refuses_the_same(tmp_path, monkeypatch):
    root = _make_source(tmp_path)
    before = _files(root)
    link = tmp_path / "link"
    os.symlink(root, link)
    g = zarrfast.open_group(root, mode="r")
    cases = [
        (root, root + "/"),
        (root, str(link)),
        (root, os.path.join(root, "sub", "..")),
        (g, root),  # an opened group
        (g["sub"], root),  # a node inside the destination
        (root, zarrfast.LocalStore(os.path.join(root, "inner"))),  # a store inside
        (zarrfast.LocalStore(root), zarrfast.LocalStore(str(link))),
    ]
    for src, dst in cases:
        for fmt in (2, 3):
            with pytest.raises(ZarrfastError, match="source") as e:
                zarrfast.convert(src, dst, zarr_format=fmt, overwrite=True, progress=False)
            assert "destination" in str(e.value)
            assert _files(root) == before
    # the destination node inside the source node of one store
    with pytest.raises(ZarrfastError, match="inside"):
        zarrfast.convert(root, root, dst_path="sub/copy", progress=False)
    assert _files(root) == before


def test_the_python_function_compares_normalised_urls():
    """fsspec's in-process ``memory://`` file system: the same URL spelled two ways."""
    pytest.importorskip("fsspec")
    base = f"memory://zf41-{uuid.uuid4().hex}"
    src = zarrfast.create_array(f"{base}/S", shape=(6,), chunks=(2,), dtype="i2")
    src[...] = np.arange(6, dtype="i2")
    for dst in (f"{base}/S/", f"{base}//S", f"{base}/S/./", f"{base}/S/inner"):
        with pytest.raises(ZarrfastError, match="source"):
            zarrfast.convert(f"{base}/S", dst, overwrite=True, progress=False)
        np.testing.assert_array_equal(zarrfast.open_array(f"{base}/S", mode="r")[...],
                                      np.arange(6))
