"""Issue 41, class 3 (review): ``zarrfast copy`` and ``zarrfast convert`` write every
kind of local destination and carry every group's consolidated metadata.

* ``~`` is the home directory for ``.zip`` destinations too (it was for directories).
* Consolidated metadata of a subgroup (``zarr.consolidate_metadata(S, path="sub")``) is
  written for that group of the destination, in the destination's format, and only for
  the groups that had it (a group below a consolidated root does not get its own).

Mount points and read-only parents: ``test_cli_copy_convert_mounts.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import zarrfast

zarr = pytest.importorskip("zarr")


def _run(cwd, *args, env=None):
    return subprocess.run([sys.executable, "-m", "zarrfast", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
                          env=env)


# -- ~ ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["copy", "convert"])
@pytest.mark.parametrize("name", ["out.zip", "outdir"])
def test_a_destination_under_home(tmp_path, subprocess_cwd, command, name):
    src = str(tmp_path / "S")
    g = zarrfast.open_group(src, mode="w")
    g.create_array("a", shape=(8,), chunks=(2,), dtype="i4")[...] = np.arange(8)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    p = _run(subprocess_cwd, command, src, f"~/{name}", "--quiet", env=env)
    assert p.returncode == 0, p.stderr
    assert os.listdir(home) == [name]
    assert os.listdir(subprocess_cwd) == []  # no directory named "~"
    got = zarrfast.open_group(str(home / name), mode="r")
    np.testing.assert_array_equal(got["a"][...], np.arange(8))
    if name.endswith(".zip"):
        got.store.close()


# -- consolidated metadata below the root -------------------------------------------------


def _consolidated_below(path, zarr_format: int, root_too: bool) -> None:
    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4")[...] = 1
    sub = g.create_group("sub", attributes={"k": 1})
    sub.create_array("b", shape=(4,), chunks=(2,), dtype="f4")[...] = 2
    deeper = sub.create_group("deeper")
    deeper.create_array("c", shape=(2,), chunks=(1,), dtype="u1")[...] = 3
    g.create_group("plain").create_array("d", shape=(1,), dtype="u1")[...] = 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(path), path="sub", zarr_format=zarr_format)
        if root_too:
            zarr.consolidate_metadata(str(path), zarr_format=zarr_format)


def _consolidated_groups(root, zarr_format: int) -> set[str]:
    """The groups below ``root`` whose own stored metadata is consolidated."""
    out = set()
    for dp, _, fs in os.walk(root):
        rel = os.path.relpath(dp, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if zarr_format == 2 and ".zmetadata" in fs:
            out.add(rel)
        if zarr_format == 3 and "zarr.json" in fs:
            with open(os.path.join(dp, "zarr.json")) as fh:
                if json.load(fh).get("consolidated_metadata") is not None:
                    out.add(rel)
    return out


@pytest.mark.parametrize("root_too", [False, True], ids=["sub-only", "root-and-sub"])
@pytest.mark.parametrize("src_format, command, dst_format", [
    (3, "copy", 3), (2, "copy", 2), (2, "convert", 3), (3, "convert", 2)])
def test_consolidated_subgroups_are_carried(tmp_path, subprocess_cwd, src_format, command,
                                            dst_format, root_too):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _consolidated_below(src, src_format, root_too)
    want = {"sub", ""} if root_too else {"sub"}
    assert _consolidated_groups(src, src_format) == want
    args = [command, src, dst, "--quiet"]
    if command == "convert":
        args += ["--zarr-format", dst_format]
    p = _run(subprocess_cwd, *args)
    assert p.returncode == 0, p.stderr
    assert _consolidated_groups(dst, dst_format) == want  # these, and only these
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sub = zarr.open_consolidated(str(dst), path="sub", zarr_format=dst_format)
        assert sub.metadata.consolidated_metadata is not None
        plain = zarr.open_group(str(dst), path="sub", mode="r", use_consolidated=False)
        names = sorted(k for k, _ in sub.members(max_depth=None))
        assert names == sorted(k for k, _ in plain.members(max_depth=None)) == \
            ["b", "deeper", "deeper/c"]
        for name in names:  # each entry as the node itself reads, in the new format
            got = {k: v for k, v in sub[name].metadata.to_dict().items()
                   if k != "consolidated_metadata"}
            assert got == plain[name].metadata.to_dict(), name
        np.testing.assert_array_equal(sub["deeper/c"][...], [3, 3])
        assert dict(sub.attrs) == {"k": 1}
