"""Review of h57/writes3 (f56f6eb, not merged: no measurable gain): a batch's
directories opened, and made, by one nogil kernel call.  The guards hold for main's
batched writes (``LocalStore._parents``) as they did for the branch's.

No finding.  Guards (pass on main and on the branch): a batched write of an array
through a root that is a symbolic link, through a link to a directory inside the root,
with new directories many levels deep, gives the bytes zarr-python's write gives; a
link out of the root, or a file where a directory should be, refuses the write naming a
key of that directory, writes nothing outside the root and leaves no temporary file;
new directories get the modes ``os.makedirs`` gives them (umask).
"""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
DATA = (np.arange(24 * 20 * 6, dtype="<i4").reshape(24, 20, 6) * 3 - 11).astype("<i4")


def _tree(root, follow: bool = True) -> dict[str, bytes]:
    """Every regular file below ``root`` (with ``follow``, links followed) and its bytes."""
    out = {}
    for dirpath, _, files in os.walk(root, followlinks=follow):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.isfile(p):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
    return out


def _temps(root) -> list[str]:
    return [k for k in _tree(root) if os.path.basename(k).startswith(".")]


def _zarr_python_files(tmp_path) -> dict[str, bytes]:
    zarr = pytest.importorskip("zarr")
    z = zarr.create_array(str(tmp_path / "ref.zarr"), shape=DATA.shape, chunks=(4, 5, 6),
                          dtype="<i4", fill_value=0, compressors=[ZSTD])
    z[...] = DATA
    return {k: v for k, v in _tree(tmp_path / "ref.zarr").items() if k.startswith("c")}


def _write(root) -> None:
    a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, chunks=(4, 5, 6),
                              dtype="<i4", fill_value=0, compressors=[ZSTD],
                              overwrite=True)
    with zarrfast.config.set(threads=2):
        a[...] = DATA


def test_a_write_through_a_linked_root_writes_zarr_pythons_bytes(tmp_path) -> None:
    want = _zarr_python_files(tmp_path)
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    _write(tmp_path / "link" / "a.zarr")
    got = {k: v for k, v in _tree(tmp_path / "real" / "a.zarr").items() if k.startswith("c")}
    assert got == want
    assert not _temps(tmp_path / "real")


def test_a_link_to_a_directory_inside_the_root_is_followed(tmp_path) -> None:
    want = _zarr_python_files(tmp_path)
    root = tmp_path / "a.zarr"
    _write(root)
    # c/2 becomes a link to a directory inside the root, holding what c/2 held
    os.rename(root / "c" / "2", root / "moved2")
    os.symlink(root / "moved2", root / "c" / "2")
    a = zarrfast.open_array(LocalStore(root), mode="r+")
    with zarrfast.config.set(threads=2):
        a[...] = DATA[::-1]
        a[...] = DATA
        np.testing.assert_array_equal(a[...], DATA)
    got = {k: v for k, v in _tree(root).items() if k.startswith("c")}
    assert got == want
    assert (root / "c" / "2").is_symlink()
    assert not _temps(root)


def test_a_link_out_of_the_root_refuses_the_write_naming_a_key(tmp_path) -> None:
    root = tmp_path / "a.zarr"
    _write(root)
    outside = tmp_path / "outside"
    os.rename(root / "c" / "3", outside)
    os.symlink(outside, root / "c" / "3")
    before = _tree(outside)
    a = zarrfast.open_array(LocalStore(root), mode="r+")
    with zarrfast.config.set(threads=2), pytest.raises(ZarrfastError, match=r"c/3/"):
        a[...] = DATA + 1
    assert _tree(outside) == before  # (nothing written outside the root)
    assert not _temps(root) and not _temps(outside)


def test_a_file_in_the_way_refuses_the_write_naming_a_key(tmp_path) -> None:
    root = tmp_path / "a.zarr"
    _write(root)
    import shutil

    shutil.rmtree(root / "c" / "4")
    (root / "c" / "4").write_bytes(b"in the way")
    a = zarrfast.open_array(LocalStore(root), mode="r+")
    with zarrfast.config.set(threads=2), pytest.raises(ZarrfastError, match=r"c/4/"):
        a[...] = DATA
    assert (root / "c" / "4").read_bytes() == b"in the way"
    assert not _temps(root)


def test_new_directories_many_levels_deep_get_makedirs_modes(tmp_path) -> None:
    old = os.umask(0o027)
    try:
        root = tmp_path / "x" / "y" / "z" / "a.zarr"
        a = zarrfast.create_array(LocalStore(root), shape=(4, 4, 4, 4, 4),
                                  chunks=(1, 1, 1, 2, 2), dtype="u1", fill_value=0)
        x = np.arange(4 ** 5, dtype="u1").reshape((4,) * 5)
        with zarrfast.config.set(threads=2):
            a[...] = x
            np.testing.assert_array_equal(a[...], x)
        os.makedirs(tmp_path / "ref" / "d", exist_ok=True)
        want = stat.S_IMODE(os.stat(tmp_path / "ref" / "d").st_mode)
        modes = {stat.S_IMODE(os.stat(os.path.join(d, s)).st_mode)
                 for d, subs, _ in os.walk(root / "c") for s in subs}
        assert modes == {want}
    finally:
        os.umask(old)
