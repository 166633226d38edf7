"""What the libraries built on zarr-python (anndata, ome-zarr, spatialdata, dask) reach for,
as zarrfast gives it: zarr-python's names and behaviours they rely on, found running their
tests with ``zarr`` aliased to zarrfast (``tools/library_tests.py --modes alias``)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs.metadata import ConsolidatedMetadata, GroupMetadataV2, with_codec_objects
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.errors import GroupNotFoundError
from zarrfast.metadata import v2 as _v2
from zarrfast.storage import LocalStore, MemoryStore


def _v2_hierarchy(store):
    root = zarrfast.open_group(store, mode="w", zarr_format=2)
    root.create_group("obs").create_array("x", shape=(2,), dtype="i4")
    root.create_array("X", shape=(3,), dtype="f8")
    return root


# -- v2 groups' metadata.consolidated_metadata (anndata: is_group_consolidated) ------------


def test_v2_group_metadata_has_consolidated_metadata_none():
    # anndata's write_elem reads group.metadata.consolidated_metadata of every group it
    # writes into (an AttributeError on a v2 group stopped 434 of its tests)
    root = _v2_hierarchy(MemoryStore())
    md = root.metadata
    assert md.consolidated_metadata is None
    assert root["obs"].metadata.consolidated_metadata is None
    assert isinstance(md, _v2.GroupMetadataV2)
    assert md == root._metadata  # equal to the metadata layer's of the same documents
    assert md.to_dict() == {"zarr_format": 2}  # not part of .zgroup


def test_v2_consolidated_metadata_nested_as_zarr_python():
    store = MemoryStore()
    _v2_hierarchy(store)
    zarrfast.consolidate_metadata(store)
    root = zarrfast.open_group(store, mode="r")
    md = with_codec_objects(root._metadata, root._consolidated)
    cm = md.consolidated_metadata
    assert isinstance(md, GroupMetadataV2) and isinstance(cm, ConsolidatedMetadata)
    assert sorted(cm.metadata) == ["X", "obs"]
    assert cm.metadata["X"].shape == (3,)
    inner = cm.metadata["obs"].consolidated_metadata
    assert list(inner.metadata) == ["x"] and inner.metadata["x"].shape == (2,)
    assert sorted(cm.flattened_metadata) == sorted(cm.members()) == ["X", "obs", "obs/x"]
    assert cm.flattened_metadata["obs"].consolidated_metadata.metadata == {}
    sub = root["obs"]
    assert list(with_codec_objects(sub._metadata, sub._consolidated)
                .consolidated_metadata.metadata) == ["x"]
    # without a view: none, and an instance given again is kept
    assert with_codec_objects(root._metadata).consolidated_metadata is None
    assert with_codec_objects(md) is md


# -- zarrfast.open of a v2 group: its consolidated metadata, as open_group ----------------


def test_open_v2_group_reads_its_consolidated_metadata():
    # zarr-python's open opens a group through open_group (use_consolidated=None): the
    # members listed are those of .zmetadata, as open_group's
    store = MemoryStore()
    _v2_hierarchy(store)
    zarrfast.consolidate_metadata(store)
    zarrfast.open_group(store, mode="a", use_consolidated=False).create_group("late")
    opened = zarrfast.open(store)
    assert sorted(opened) == sorted(zarrfast.open_group(store)) == ["X", "obs"]
    assert opened._consolidated is not None
    assert sorted(zarrfast.open(store, use_consolidated=False)) == ["X", "late", "obs"]
    assert zarrfast.open(store, use_consolidated=False)._consolidated is None


def test_open_v3_group_uses_its_consolidated_metadata():
    # as open_group: a v3 group's consolidated metadata (in its zarr.json) gives its members,
    # and each member group's metadata holds the nodes below it, as zarr-python's
    store = MemoryStore()
    root = zarrfast.open_group(store, mode="w", zarr_format=3)
    root.create_group("obs").create_group("inner")
    root.create_array("obs/x", shape=(2,), dtype="i4")
    with pytest.warns(UserWarning, match="Consolidated metadata"):
        zarrfast.consolidate_metadata(store)
    zarrfast.open_group(store, mode="a", use_consolidated=False).create_group("late")
    opened = zarrfast.open(store)
    assert sorted(opened) == sorted(zarrfast.open_group(store)) == ["obs"]
    obs = opened["obs"]
    cm = with_codec_objects(obs._metadata, obs._consolidated).consolidated_metadata
    assert sorted(cm.flattened_metadata) == ["inner", "x"]
    assert cm.metadata["inner"].consolidated_metadata.metadata == {}
    plain = zarrfast.open(store, use_consolidated=False)
    assert sorted(plain) == ["late", "obs"]
    assert plain.metadata.consolidated_metadata is None


def test_open_v2_group_use_consolidated_true_without_zmetadata_is_an_error():
    store = MemoryStore()
    _v2_hierarchy(store)
    with pytest.raises(zarrfast.errors.ZarrfastError, match="Consolidated metadata"):
        zarrfast.open(store, use_consolidated=True)
    assert sorted(zarrfast.open(store)) == ["X", "obs"]  # none there: the group as it is


# -- zarrfast.open(mode="r") of nothing: GroupNotFoundError (anndata's read_zarr) ---------


@pytest.mark.parametrize("mode", ["r", "r+"])
@pytest.mark.parametrize("kind", ["dir", "memory"])
def test_open_nothing_read_is_group_not_found(tmp_path, mode, kind):
    # zarr-python's open looks for an array, then a group: a GroupNotFoundError, which
    # anndata's read_zarr catches to add its hints
    store = LocalStore(tmp_path / "empty.zarr") if kind == "dir" else MemoryStore()
    if kind == "dir":
        (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(GroupNotFoundError, match="no array or group at path '/'"):
        zarrfast.open(store, mode=mode)


# -- v2 arrays: metadata.to_dict() with the attributes (pydantic-zarr, ome-zarr) -----------


def test_v2_array_metadata_to_dict_holds_the_attributes():
    # pydantic-zarr's ArraySpec.from_zarr validates array.metadata.to_dict(), which
    # needs "attributes" (19 of ome-zarr's tests failed on it)
    a = zarrfast.create_array(MemoryStore(), shape=(3,), dtype="i4", zarr_format=2,
                              attributes={"k": [1, 2]})
    md = a.metadata
    assert md.to_dict()["attributes"] == {"k": [1, 2]}
    assert md == a._metadata
    # the documents stored are unchanged: .zarray without the attributes
    assert md.store_documents() == a._metadata.store_documents()
    assert md.to_json() == a._metadata.to_json()
    assert "attributes" not in a._metadata.to_dict()
    # zarr-python's from_dict takes that dict back
    b = zarrfast.Array.from_dict(MemoryStore(), md.to_dict())
    assert b.attrs.asdict() == {"k": [1, 2]} and b.metadata == md


# -- v2 compressors and filters answer their numcodecs settings ---------------------------


def test_v2_compressor_settings_as_attributes():
    numcodecs = pytest.importorskip("numcodecs")
    a = zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i4", zarr_format=2,
                              compressors=numcodecs.Blosc(cname="zstd", clevel=3))
    c = a.compressors[0]
    assert (c.cname, c.clevel, c.shuffle, c.codec_id) == ("zstd", 3, 1, "blosc")
    assert c.get_config() == numcodecs.Blosc(cname="zstd", clevel=3).get_config()
    delta = NumcodecsCodec.from_config(numcodecs.Delta(dtype="i4").get_config(), where="t")
    assert delta.codec_id == "delta" and delta.dtype == "<i4"
    with pytest.raises(AttributeError, match="nor has numcodecs codec 'blosc'"):
        _ = c.level
    assert not hasattr(c, "id") and not hasattr(c, "_x")


# -- the same as zarr-python 3.4.2 -------------------------------------------------------

#: what the libraries read, looked at with ``zarr`` (zarrfast here, zarr-python in the peer)
_LOOK = """
def look(zarr, path, empty):
    g = zarr.open(path)
    cm = g.metadata.consolidated_metadata
    x = g["obs/x"]
    try:
        zarr.open(empty, mode="r")
        error = None
    except Exception as e:
        error = type(e).__name__
    return {
        "cm": None if cm is None else sorted(cm.flattened_metadata),
        "not_consolidated": zarr.open(path, use_consolidated=False)
        .metadata.consolidated_metadata is None,
        "members": sorted(g["obs"]),
        "to_dict": sorted(x.metadata.to_dict()),
        "attributes": x.metadata.to_dict()["attributes"],
        "cname": x.compressors[0].cname,
        "config": x.compressors[0].get_config(),
        "error": error,
    }
"""


def test_as_zarr_python(zarr_peer, tmp_path):
    numcodecs = pytest.importorskip("numcodecs")
    path, empty = str(tmp_path / "h.zarr"), str(tmp_path / "empty.zarr")
    root = zarrfast.open_group(LocalStore(path), mode="w", zarr_format=2)
    root.create_group("obs", attributes={"g": 1})
    root.create_array("obs/x", shape=(2,), dtype="i4", attributes={"a": 1},
                      compressors=numcodecs.Blosc(cname="zstd"))
    zarrfast.consolidate_metadata(path)
    (tmp_path / "empty.zarr").mkdir()
    theirs = zarr_peer.run(_LOOK + "import zarr\nemit(look(zarr, *ARGS))\n",
                           args=[path, empty])
    space: dict = {}
    exec(_LOOK, space)  # noqa: S102 - the same code as the peer runs
    ours = space["look"](zarrfast, path, empty)
    # (a v2 group's metadata.consolidated_metadata comes from the group's consolidated view,
    # which the node passes to with_codec_objects: hierarchy/node.py)
    ours_cm, theirs_cm = ours.pop("cm"), theirs.pop("cm")
    assert theirs_cm == ["obs", "obs/x"]
    assert ours_cm == theirs_cm
    assert ours == theirs


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_group_metadata_through_the_node(zarr_format):
    # anndata's write_elem refuses a group whose metadata.consolidated_metadata is not None,
    # and spatialdata re-consolidates after deleting an element only where the root's is
    # not None (zarr-python gives both, for either format)
    store = MemoryStore()
    root = zarrfast.open_group(store, mode="w", zarr_format=zarr_format)
    root.create_group("obs").create_array("x", shape=(2,), dtype="i4")
    zarrfast.consolidate_metadata(store)
    opened = zarrfast.open(store)
    assert sorted(opened.metadata.consolidated_metadata.flattened_metadata) == ["obs", "obs/x"]
    assert list(opened["obs"].metadata.consolidated_metadata.metadata) == ["x"]


@pytest.mark.parametrize("order", ["C", "F"])
def test_v2_filters_and_compressors_as_zarr_python_gives_them(tmp_path, order):
    """A Zarr v2 array's filters are its ``filters``, its compressors its ``compressor``
    (zarrfast gave every numcodecs codec as a compressor, the filters as none)."""
    numcodecs = pytest.importorskip("numcodecs")
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(10, 4), chunks=(5, 4),
                              dtype="i4", zarr_format=2, order=order,
                              filters=[numcodecs.Delta(dtype="i4")],
                              compressors=[numcodecs.Zlib(level=1)])
    a[:] = np.arange(40, dtype="i4").reshape(10, 4)
    b = zarrfast.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert [f.codec_id for f in b.filters] == ["delta"]
    assert [c.codec_id for c in b.compressors] == ["zlib"]
    np.testing.assert_array_equal(b[:], np.arange(40, dtype="i4").reshape(10, 4))
    c = zarrfast.create_array(str(tmp_path / "c.zarr"), shape=(4,), dtype="i4", zarr_format=2,
                              compressors=None)
    assert c.filters == () and c.compressors == ()
