"""Zarr v2 hierarchies with zarr-python 3: nested groups, attributes, consolidated
metadata (v2 ``.zmetadata`` and v3 inline, opened with one store read), and the
refusal to mix formats in one hierarchy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    GroupNotFoundError,
    MemberNotFoundError,
    ZarrfastError,
)

from _helpers.v2 import MARKS, CountingStore, assert_identical

zarr = pytest.importorskip("zarr")

pytestmark = MARKS


# ---------------------------------------------------------------------------
# groups and consolidated metadata
# ---------------------------------------------------------------------------


def _hierarchy_values(zarr_format: int) -> dict[str, np.ndarray]:
    return {
        "a": np.arange(12, dtype="<i4").reshape(3, 4),
        "sub/b": np.linspace(0, 1, 6, dtype=">f8" if zarr_format == 2 else "<f8"),
        # fixed-size bytes only in v2 (not a v3 core data type)
        "sub/deeper/c": (np.array([b"x", b"yz"], dtype="S2") if zarr_format == 2
                         else np.array([250, 7], dtype="u1")),
        "sub/deeper/e": np.zeros((0, 2), dtype="<u2"),
    }


def _zp_hierarchy(root: Path, zarr_format: int) -> dict[str, np.ndarray]:
    """A nested hierarchy written by zarr-python; returns {array path: values}."""
    g = zarr.open_group(str(root), mode="w", zarr_format=zarr_format,
                        attributes={"title": "root", "n": [1, None]})
    vals = _hierarchy_values(zarr_format)
    sub = g.create_group("sub", attributes={"level": 1})
    deeper = sub.create_group("deeper", attributes={"level": 2})
    g.create_group("empty_group")
    for path, v in vals.items():
        parent = {"a": g, "sub/b": sub}.get(path, deeper)
        arr = parent.create_array(path.rsplit("/", 1)[-1], shape=v.shape, dtype=v.dtype,
                                  chunks=tuple(max(1, s // 2) for s in v.shape) or None,
                                  attributes={"path": path},
                                  **({"fill_value": b"!!"} if v.dtype.kind == "S" else {}))
        arr[...] = v
    return vals


EXPECTED_MEMBERS = ["a", "empty_group", "sub", "sub/b", "sub/deeper", "sub/deeper/c",
                    "sub/deeper/e"]


def _check_hierarchy(group: zarrfast.Group, vals: dict[str, np.ndarray]) -> None:
    members = dict(group.members(max_depth=None))
    assert sorted(members) == EXPECTED_MEMBERS
    assert dict(group.attrs) == {"title": "root", "n": [1, None]}
    assert dict(members["sub"].attrs) == {"level": 1}
    assert dict(members["sub/deeper"].attrs) == {"level": 2}
    assert sorted(group.keys()) == ["a", "empty_group", "sub"]
    assert sorted(group["sub"].keys()) == ["b", "deeper"]
    for path, v in vals.items():
        arr = members[path]
        assert isinstance(arr, zarrfast.Array)
        assert arr.shape == v.shape and arr.dtype == v.dtype
        assert arr.attrs["path"] == path
        assert_identical(arr[...], v, what=path)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_hierarchy_written_by_zarr_python(tmp_path: Path, zarr_format: int) -> None:
    vals = _zp_hierarchy(tmp_path, zarr_format)
    g = zarrfast.open_group(str(tmp_path), mode="r", use_consolidated=False)
    assert g.zarr_format == zarr_format
    _check_hierarchy(g, vals)
    assert isinstance(g["sub"]["deeper"], zarrfast.Group)
    with pytest.raises(MemberNotFoundError):
        g["nope"]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("declared_format", [None, "same"])
def test_consolidated_written_by_zarr_python_one_read(tmp_path: Path, zarr_format: int,
                                                      declared_format: Any) -> None:
    vals = _zp_hierarchy(tmp_path, zarr_format)
    zarr.consolidate_metadata(str(tmp_path), zarr_format=zarr_format)
    assert (tmp_path / (".zmetadata" if zarr_format == 2 else "zarr.json")).exists()
    store = CountingStore(tmp_path, read_only=True)
    fmt = zarr_format if declared_format == "same" else None
    g = zarrfast.open_consolidated(store, zarr_format=fmt)
    members = dict(g.members(max_depth=None))
    shapes = {k: v.shape for k, v in members.items() if isinstance(v, zarrfast.Array)}
    attrs = {k: dict(v.attrs) for k, v in members.items()}
    assert shapes == {k: v.shape for k, v in vals.items()}
    assert attrs["sub/deeper"] == {"level": 2}
    key = ".zmetadata" if zarr_format == 2 else "zarr.json"
    # ONE key read for all the metadata (a v2 store is first probed for zarr.json when the
    # format is not given; that probe finds nothing)
    assert [k for k, found in store.gets if found] == [key], store.gets
    if fmt is not None or zarr_format == 3:
        assert store.gets == [(key, True)]
    else:
        assert store.gets == [("zarr.json", False), (key, True)]
    assert store.other == [], store.other  # no listing of the store, no exists() probes
    # the data itself is read from the store, and only the data
    store.gets.clear()
    assert_identical(members["sub/b"][...], vals["sub/b"])
    assert store.gets and all(k.startswith("sub/b/") and ok for k, ok in store.gets)
    assert not any(k.endswith((".zarray", ".zattrs", "zarr.json")) for k, _ in store.gets)


def test_consolidated_metadata_is_used_not_the_store(tmp_path: Path) -> None:
    """After consolidation, a member whose .zarray is deleted is still listed and opened
    from .zmetadata; with use_consolidated=False it is gone."""
    vals = _zp_hierarchy(tmp_path, 2)
    zarr.consolidate_metadata(str(tmp_path), zarr_format=2)
    (tmp_path / "sub" / "b" / ".zarray").unlink()
    g = zarrfast.open_consolidated(str(tmp_path))
    assert "sub/b" in dict(g.members(max_depth=None))
    assert_identical(g["sub"]["b"][...], vals["sub/b"])
    g2 = zarrfast.open_group(str(tmp_path), mode="r", use_consolidated=False)
    assert "b" not in g2["sub"]
    # use_consolidated=None (the default) also picks up .zmetadata
    g3 = zarrfast.open_group(str(tmp_path), mode="r")
    assert "b" in g3["sub"]


def test_open_consolidated_without_consolidated_metadata(tmp_path: Path) -> None:
    _zp_hierarchy(tmp_path, 2)
    with pytest.raises(ZarrfastError):
        zarrfast.open_consolidated(str(tmp_path))
    zarr.consolidate_metadata(str(tmp_path), zarr_format=2)
    zarrfast.open_consolidated(str(tmp_path), zarr_format=2)
    with pytest.raises(ZarrfastError):  # v2 consolidated metadata is not v3's
        zarrfast.open_consolidated(str(tmp_path), zarr_format=3)


def _zf_hierarchy(root: Path, zarr_format: int) -> dict[str, np.ndarray]:
    g = zarrfast.open_group(str(root), mode="w", zarr_format=zarr_format,
                            attributes={"title": "root", "n": [1, None]})
    vals = _hierarchy_values(zarr_format)
    sub = g.create_group("sub", attributes={"level": 1})
    deeper = sub.create_group("deeper", attributes={"level": 2})
    g.create_group("empty_group")
    for path, v in vals.items():
        parent = {"a": g, "sub/b": sub}.get(path, deeper)
        kw: dict[str, Any] = {"chunk_key_encoding": {"name": "v2", "separator": "/"}} if (
            zarr_format == 2) else {}
        arr = parent.create_array(path.rsplit("/", 1)[-1], shape=v.shape, dtype=v.dtype,
                                  chunks=tuple(max(1, s // 2) for s in v.shape),
                                  attributes={"path": path}, **kw)
        arr[...] = v
    return vals


def _check_zp_hierarchy(g: Any, vals: dict[str, np.ndarray]) -> None:
    members = dict(g.members(max_depth=None))
    assert sorted(members) == EXPECTED_MEMBERS
    assert dict(g.attrs) == {"title": "root", "n": [1, None]}
    assert dict(members["sub/deeper"].attrs) == {"level": 2}
    for path, v in vals.items():
        assert members[path].attrs["path"] == path
        assert_identical(np.asarray(members[path][...]), v, what=path)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarrfast_hierarchy_and_consolidated_read_by_zarr_python(tmp_path: Path,
                                                                 zarr_format: int) -> None:
    vals = _zf_hierarchy(tmp_path, zarr_format)
    if zarr_format == 2:
        assert (tmp_path / ".zgroup").exists() and (tmp_path / "sub" / "deeper" / ".zgroup"
                                                    ).exists()
        assert not (tmp_path / "zarr.json").exists()
    _check_zp_hierarchy(zarr.open_group(str(tmp_path), mode="r", use_consolidated=False),
                        vals)
    zg = zarrfast.consolidate_metadata(str(tmp_path))
    assert sorted(k for k, _ in zg.members(max_depth=None)) == EXPECTED_MEMBERS
    if zarr_format == 2:
        doc = json.loads((tmp_path / ".zmetadata").read_text())
        assert doc["zarr_consolidated_format"] == 1
        meta = doc["metadata"]
        assert meta[".zgroup"] == {"zarr_format": 2}
        assert meta["sub/deeper/c/.zarray"] == json.loads(
            (tmp_path / "sub" / "deeper" / "c" / ".zarray").read_text())
        assert meta["sub/.zattrs"] == {"level": 1}
    # zarr-python opens zarrfast's consolidated metadata
    theirs = zarr.open_consolidated(str(tmp_path), zarr_format=zarr_format)
    assert theirs.metadata.consolidated_metadata is not None
    _check_zp_hierarchy(theirs, vals)
    # and zarrfast opens it with one read
    store = CountingStore(tmp_path, read_only=True)
    g = zarrfast.open_consolidated(store, zarr_format=zarr_format)
    shapes = {k: v.shape for k, v in g.members(max_depth=None) if isinstance(v, zarrfast.Array)}
    assert shapes == {k: v.shape for k, v in vals.items()}
    assert store.gets == [(".zmetadata" if zarr_format == 2 else "zarr.json", True)]
    _check_hierarchy(g, vals)


def test_v2_group_creates_v2_members(tmp_path: Path) -> None:
    """A v2 group created by zarrfast: members created below it are v2."""
    g = zarrfast.open_group(str(tmp_path), mode="w", zarr_format=2)
    g.create_array("x", shape=(3,), dtype="u1")
    s = g.create_group("s")
    assert (tmp_path / "x" / ".zarray").exists() and (tmp_path / "s" / ".zgroup").exists()
    assert s.zarr_format == 2
    # parents created implicitly by create_array are v2 groups
    zarrfast.create_array(str(tmp_path), name="p/q/r", shape=(2,), dtype="f4", zarr_format=2)
    assert (tmp_path / "p" / ".zgroup").exists() and (tmp_path / "p" / "q" / ".zgroup"
                                                      ).exists()
    assert zarr.open_group(str(tmp_path), mode="r", zarr_format=2)["p/q/r"].shape == (2,)


# ---------------------------------------------------------------------------
# one hierarchy, one format
# ---------------------------------------------------------------------------
def test_v3_node_under_v2_group_is_refused(tmp_path: Path) -> None:
    g = zarrfast.open_group(str(tmp_path), mode="w", zarr_format=2)
    g.create_group("sub")
    with pytest.raises(ZarrfastError):
        zarrfast.create_array(str(tmp_path), name="sub/v3", shape=(2,), dtype="i4",
                              zarr_format=3)
    with pytest.raises(ZarrfastError):
        zarrfast.create_array(str(tmp_path), name="new/deep/v3", shape=(2,), dtype="i4",
                              zarr_format=3)
    with pytest.raises(ZarrfastError):
        g.create_array("x3", shape=(2,), dtype="i4", zarr_format=3)
    with pytest.raises(ZarrfastError):
        zarrfast.create_group(str(tmp_path), path="sub/g3", zarr_format=3)
    with pytest.raises(ZarrfastError):
        zarrfast.open_group(str(tmp_path), path="sub/g3", mode="a", zarr_format=3)
    with pytest.raises(ZarrfastError):  # a v3 group on top of the v2 root group
        zarrfast.open_group(str(tmp_path), mode="a", zarr_format=3)
    # nothing was written
    assert not list(tmp_path.rglob("zarr.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".zattrs", ".zgroup", "sub"]


def test_v2_node_under_v3_group_is_refused(tmp_path: Path) -> None:
    g = zarrfast.open_group(str(tmp_path), mode="w", zarr_format=3)
    g.create_group("sub")
    with pytest.raises(ZarrfastError):
        zarrfast.create_array(str(tmp_path), name="sub/v2", shape=(2,), dtype="i4",
                              zarr_format=2)
    with pytest.raises(ZarrfastError):
        g.create_array("x2", shape=(2,), dtype="i4", zarr_format=2)
    with pytest.raises(ZarrfastError):
        zarrfast.open_group(str(tmp_path), path="sub/g2", mode="w", zarr_format=2)
    assert not list(tmp_path.rglob(".zarray")) and not list(tmp_path.rglob(".zgroup"))


def test_format_filter_on_open(tmp_path: Path) -> None:
    # (v2 and v3 nodes side by side need separate hierarchies: see above)
    zarrfast.create_array(str(tmp_path / "h2"), name="v2", shape=(2,), dtype="i4",
                          zarr_format=2)
    zarrfast.create_group(str(tmp_path / "h2"), path="g2", zarr_format=2)
    zarrfast.create_array(str(tmp_path / "h3"), name="v3", shape=(2,), dtype="i4",
                          zarr_format=3)
    tmp_path = tmp_path / "h2"
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(str(tmp_path), path="v2", mode="r", zarr_format=3)
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(str(tmp_path.parent / "h3"), path="v3", mode="r", zarr_format=2)
    with pytest.raises(GroupNotFoundError):
        zarrfast.open_group(str(tmp_path.parent / "h3"), mode="r", zarr_format=2)
    with pytest.raises(GroupNotFoundError):
        zarrfast.open_group(str(tmp_path), path="g2", mode="r", zarr_format=3)
    assert zarrfast.open_array(str(tmp_path), path="v2", zarr_format=2).shape == (2,)
    assert zarrfast.open_array(str(tmp_path), path="v2").shape == (2,)
    assert zarrfast.open(str(tmp_path), path="g2", mode="r").zarr_format == 2
    # zarr-python agrees on what is where
    assert zarr.open_array(str(tmp_path), path="v2", mode="r").metadata.zarr_format == 2
    with pytest.raises(ContainsArrayError):
        zarrfast.create_array(str(tmp_path), name="v2", shape=(2,), dtype="i4", zarr_format=2)
