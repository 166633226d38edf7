"""Issue 41, class 3 (review): ``zarrfast copy`` and ``zarrfast convert`` write into a
destination directory that is a mount point (its own file system, or a bind mount of the
same one) or that sits in a read-only directory, still without leaving half a
destination.

Such a destination is staged inside itself (a hidden ``.zarrfast-*.partial`` directory)
and its entries are moved in one by one; ``--overwrite`` moves the old entries aside
inside it instead of renaming it, and removes them once the new ones are in place.  A
failure leaves it as it was (a new one: empty).  A new destination in a read-only
directory is refused, naming it.

The tests run in a mount namespace of their own (``unshare -m``: tmpfs and read-only bind
mounts that no other process sees) and skip where that is not permitted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zarrfast

from _helpers.files import file_bytes as _files


def _sources(where) -> dict[str, str]:
    """``S`` and ``S2`` (two good hierarchies) and ``F`` (a v2 group whose conversion
    fails at a chunk in the middle of ``b``)."""
    paths = {k: os.path.join(where, k) for k in ("S", "S2", "F")}
    g = zarrfast.open_group(paths["S"], mode="w", attributes={"v": 1})
    g.create_array("a", shape=(8,), chunks=(2,), dtype="i4")[...] = np.arange(8)
    g.create_group("sub").create_array("b", shape=(4,), chunks=(2,), dtype="f8")[...] = 1.5
    g = zarrfast.open_group(paths["S2"], mode="w", attributes={"v": 2})
    g.create_array("x", shape=(3,), chunks=(3,), dtype="u1")[...] = 9
    g = zarrfast.open_group(paths["F"], mode="w", zarr_format=2)
    g.create_array("a", shape=(40,), chunks=(5,), dtype="i4")[...] = np.arange(40)
    b = g.create_array("b", shape=(40,), chunks=(5,), dtype="i4",
                       filters=[{"id": "delta", "dtype": "<i4"}],
                       compressors={"id": "zstd", "level": 1})
    b[...] = np.arange(40)
    with open(os.path.join(paths["F"], "b", "4"), "wb") as fh:
        fh.write(b"this is not a zstd frame" * 4)
    return paths


# -- in a mount namespace of our own ----------------------------------------------------------

_DRIVER = r'''
import json, os, subprocess, sys
ARGS = json.loads(sys.argv[1])
CWD = ARGS["cwd"]

def sh(*a):
    subprocess.run(a, check=True)

def files(root):
    out = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read().hex()
    return out

def run(*args):
    p = subprocess.run([sys.executable, "-m", "zarrfast", *args], capture_output=True,
                       text=True, cwd=CWD)
    return {"rc": p.returncode, "err": p.stderr}

out = {}
'''


def _in_mount_namespace(tmp_path, scenario: str, args: dict) -> dict:
    """Run ``scenario`` (Python, after the driver above) as root in a new mount
    namespace; its ``out`` dict comes back (the mounts end with it)."""
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        ok = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "tmpfs", str(probe)],
                            capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        pytest.skip("no mount namespace here (unshare -m and mount need privileges)")
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER + textwrap.dedent(scenario) + "\nprint(json.dumps(out))\n")
    p = subprocess.run(["unshare", "-m", sys.executable, str(script), json.dumps(args)],
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


_SCENARIO = """
    S, S2, F, D, E = (ARGS[k] for k in ("S", "S2", "F", "D", "E"))
    parent = os.path.dirname(D)
    if ARGS["kind"] == "tmpfs":  # a file system of their own
        for m in (D, E):
            sh("mount", "-t", "tmpfs", "tmpfs", m)
    else:  # writable bind mounts of themselves (one file system), in a read-only parent
        sh("mount", "--bind", parent, parent)
        sh("mount", "-o", "remount,bind,ro", parent)
        for m in (D, E):
            sh("mount", "--bind", m, m)
            sh("mount", "-o", "remount,bind,rw", m)
    listing = sorted(os.listdir(parent))
    os.mkdir(os.path.join(D, "lost+found"))  # a fresh file system's
    out["new"] = run("copy", S, D, "--quiet")
    out["new_files"] = files(D)
    out["new_entries"] = sorted(os.listdir(D))
    out["overwrite"] = run("copy", S2, D, "--quiet", "--overwrite")
    out["overwrite_files"] = files(D)
    out["failed_overwrite"] = run("convert", F, D, "--quiet", "--overwrite")
    out["after_failed_overwrite"] = files(D)
    out["failed_into_empty"] = run("convert", F, E, "--quiet")
    out["empty_after"] = sorted(os.listdir(E))
    out["new_beside"] = run("copy", S, os.path.join(parent, "new.zarr"), "--quiet")
    out["parent_listing"] = (listing, sorted(os.listdir(parent)))
"""


@pytest.mark.parametrize("kind", ["tmpfs", "readonly-parent"])
def test_a_mount_point_or_a_read_only_parent_is_written(tmp_path, kind):
    paths = _sources(tmp_path)
    base = tmp_path / "dst"
    (base / "D").mkdir(parents=True)
    (base / "E").mkdir()
    out = _in_mount_namespace(tmp_path, _SCENARIO,
        {**paths, "D": str(base / "D"), "E": str(base / "E"), "kind": kind,
         "cwd": str(tmp_path)})
    hexed = {k: v.hex() for k, v in _files(paths["S"]).items()}
    # a new copy into the mount point: the files of S, and what was there
    assert out["new"]["rc"] == 0, out["new"]["err"]
    assert out["new_files"] == hexed
    assert out["new_entries"] == sorted(["lost+found", "a", "sub", "zarr.json"])
    # --overwrite: exactly the new hierarchy
    assert out["overwrite"]["rc"] == 0, out["overwrite"]["err"]
    assert out["overwrite_files"] == {k: v.hex() for k, v in _files(paths["S2"]).items()}
    # a failure partway: the destination as it was; a new one left empty
    assert out["failed_overwrite"]["rc"] == 2, out["failed_overwrite"]["err"]
    assert "b" in out["failed_overwrite"]["err"]
    assert out["after_failed_overwrite"] == out["overwrite_files"]
    assert out["failed_into_empty"]["rc"] == 2, out["failed_into_empty"]["err"]
    assert out["empty_after"] == []
    if kind == "tmpfs":  # a writable parent: a new destination beside it as before
        assert out["new_beside"]["rc"] == 0, out["new_beside"]["err"]
        assert out["parent_listing"][1] == sorted(out["parent_listing"][0] + ["new.zarr"])
    else:  # refused, naming it (it cannot be made in a read-only directory)
        assert out["new_beside"]["rc"] == 2, out["new_beside"]["err"]
        assert "new.zarr" in out["new_beside"]["err"]
        assert out["parent_listing"][1] == out["parent_listing"][0]
