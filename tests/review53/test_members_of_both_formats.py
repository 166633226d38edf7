"""Review of c12cc3b ("a node of the other Zarr format below a group is no member"):
a node holding *both* formats' documents -- what zarr-python's own
``zarr.metadata.migrate_v3.migrate_v2_to_v3`` leaves by default (``zarr.json`` written
beside ``.zarray`` / ``.zgroup``) -- is a member of the Zarr v2 group above it for
zarr-python 3.4.2, which reads the v2 documents of a v2 group's children.  Since c12cc3b
zarrfast counts such a node as Zarr v3 only, so a v2 group lists none of its members and
``consolidate_metadata(zarr_format=2)`` writes a ``.zmetadata`` without them: every
consolidated reader then sees an empty group.  At c42aab5 both listed them.

Fixed: helper 'libs' applied the proposed diff,
/tmp/prop_review/c12cc3b_both_formats_member.diff,
and made the strict xfails plain tests (membership by the
group's own format's document; tests/hierarchy passes with it)."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np

import zarrfast


def _both_formats(root) -> None:
    """A v2 hierarchy, then every node given a ``zarr.json`` too (as migrate_v2_to_v3
    leaves it): the v3 documents are written by zarrfast in a scratch hierarchy of the
    same layout and copied in, so the v2 documents and chunks stay as they were."""
    g = zarrfast.open_group(str(root), mode="w", zarr_format=2)
    g.create_array("x", shape=(4,), chunks=(2,), dtype="i4", compressors=None)[:] = 3
    g.create_group("sub").create_array("y", shape=(2,), chunks=(2,), dtype="f8")[:] = 1.5
    v3 = root.parent / (root.name + ".v3")
    h = zarrfast.open_group(str(v3), mode="w", zarr_format=3)
    h.create_array("x", shape=(4,), chunks=(2,), dtype="i4", compressors=None,
                   chunk_key_encoding={"name": "v2", "separator": "."})
    h.create_group("sub").create_array("y", shape=(2,), chunks=(2,), dtype="f8",
                                       chunk_key_encoding={"name": "v2", "separator": "."})
    for rel in ("", "x", "sub", "sub/y"):
        shutil.copy(v3 / rel / "zarr.json", root / rel / "zarr.json")


def _v2_view(root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarrfast.open_group(str(root), mode="r", zarr_format=2)
        return g, sorted(g.keys())


def test_the_documents_of_both_formats_are_in_place(tmp_path) -> None:
    """(the set-up the tests below rely on: each node has both documents, and
    the v2 arrays read as written)"""
    root = tmp_path / "both.zarr"
    _both_formats(root)
    for rel in ("x", "sub/y"):
        assert (root / rel / ".zarray").is_file() and (root / rel / "zarr.json").is_file()
    g = zarrfast.open_group(str(root), mode="r", zarr_format=2)
    np.testing.assert_array_equal(g["x"][:], [3, 3, 3, 3])
    np.testing.assert_array_equal(g["sub/y"][:], [1.5, 1.5])


def test_a_v2_group_lists_members_that_also_have_a_zarr_json(tmp_path) -> None:
    root = tmp_path / "both.zarr"
    _both_formats(root)
    g, keys = _v2_view(root)
    assert keys == ["sub", "x"]
    assert "x" in g and "sub" in g
    assert sorted(g["sub"].keys()) == ["y"]


def test_consolidating_a_v2_group_keeps_members_that_also_have_a_zarr_json(tmp_path) -> None:
    root = tmp_path / "both.zarr"
    _both_formats(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarrfast.consolidate_metadata(str(root), zarr_format=2)
    meta = json.loads((root / ".zmetadata").read_text())["metadata"]
    assert {"x/.zarray", "sub/.zgroup", "sub/y/.zarray"} <= set(meta)
    g, keys = _v2_view(root)  # (opened from the .zmetadata just written)
    assert keys == ["sub", "x"]


def test_migrated_by_zarr_python_a_v2_group_lists_as_zarr_python_does(tmp_path,
                                                                      zarr_peer) -> None:
    """The hierarchy migrated by zarr-python 3.4.2's own migrate_v2_to_v3 (v2 documents
    kept), listed as a v2 group by zarr-python and by zarrfast."""
    root = tmp_path / "m.zarr"
    g = zarrfast.open_group(str(root), mode="w", zarr_format=2)
    g.create_array("x", shape=(4,), chunks=(2,), dtype="i4")[:] = 3
    g.create_group("sub").create_array("y", shape=(2,), chunks=(2,), dtype="f8")[:] = 1.5
    theirs = zarr_peer.run("""
import zarr
from zarr.metadata.migrate_v3 import migrate_v2_to_v3
root, = ARGS
migrate_v2_to_v3(input_store=zarr.storage.LocalStore(root))
emit(sorted(zarr.open_group(root, mode="r", zarr_format=2).keys()))
""", [str(root)])
    assert (root / "x" / "zarr.json").is_file() and (root / "x" / ".zarray").is_file()
    assert theirs == ["sub", "x"]
    _, ours = _v2_view(root)
    assert ours == theirs
