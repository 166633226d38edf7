"""``Group.move``: the groups it creates above ``dest`` are plain groups (no copy of a
consolidated group's metadata), and what it refuses (a node at ``dest``, an array above
it, ``dest`` inside ``source``) is refused before anything is copied or deleted."""

import json
import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ContainsArrayError, ContainsGroupError, ZarrfastError


def _consolidated_root(zarr_format=3):
    store = {}
    root = zarrfast.group(store=store, zarr_format=zarr_format, attributes={"title": "t"})
    root["a"] = np.arange(3)
    root.create_group("g", attributes={"k": 1})
    with warnings.catch_warnings():  # (v3: "not part of the specification" warning)
        warnings.simplefilter("ignore")
        zarrfast.consolidate_metadata(store)
        root = zarrfast.open_group(store, use_consolidated=True)
    return store, root


def test_new_parent_of_dest_is_a_plain_group_without_consolidated_metadata():
    store, root = _consolidated_root()
    assert root.metadata.consolidated_metadata is not None  # (opened from it)
    root.move("a", "new/a")
    doc = json.loads(bytes(store["new/zarr.json"]))
    assert doc == {"zarr_format": 3, "node_type": "group", "attributes": {}}
    reopened = zarrfast.open_group(store, path="new", use_consolidated=False)
    assert reopened.metadata.consolidated_metadata is None
    assert sorted(reopened) == ["a"]
    np.testing.assert_array_equal(reopened["a"][:], np.arange(3))


def test_every_missing_group_above_dest_is_plain():
    store, root = _consolidated_root()
    root.move("g", "x/y/g")
    for parent in ("x", "x/y"):
        doc = json.loads(bytes(store[f"{parent}/zarr.json"]))
        assert doc == {"zarr_format": 3, "node_type": "group", "attributes": {}}, parent
    assert json.loads(bytes(store["x/y/g/zarr.json"]))["attributes"] == {"k": 1}


def test_new_parent_in_a_v2_hierarchy_is_an_empty_group():
    store, root = _consolidated_root(zarr_format=2)
    root.move("a", "new/a")
    assert json.loads(bytes(store["new/.zgroup"])) == {"zarr_format": 2}
    assert json.loads(bytes(store.get("new/.zattrs", b"{}"))) == {}  # (not the root's)
    assert "new/.zmetadata" not in store
    reopened = zarrfast.open_group(store, use_consolidated=False)  # (.zmetadata: stale now)
    np.testing.assert_array_equal(reopened["new/a"][:], np.arange(3))


def test_dest_a_group_is_contains_group_error():
    store, root = _consolidated_root()
    before = dict(store)
    with pytest.raises(ContainsGroupError, match="'g'"):
        root.move("a", "g")
    assert dict(store) == before


def test_dest_an_array_is_contains_array_error():
    store = {}
    root = zarrfast.group(store=store)
    root["a"] = np.arange(3)
    root["b"] = np.arange(2)
    with pytest.raises(ContainsArrayError):
        root.move("a", "b")
    assert sorted(root) == ["a", "b"]


def test_dest_below_an_array_is_refused_before_anything_is_copied():
    store = {}
    root = zarrfast.group(store=store)
    root["a"] = np.arange(3)
    root["b"] = np.arange(2)
    before = dict(store)
    with pytest.raises(ContainsArrayError, match="array"):
        root.move("a", "b/x")
    assert dict(store) == before


def test_dest_inside_source_is_refused_and_nothing_is_lost():
    store = {}
    root = zarrfast.group(store=store)
    root["s/v"] = np.arange(4)
    before = dict(store)
    with pytest.raises(ZarrfastError, match="inside"):
        root.move("s", "s/t")
    assert dict(store) == before
    np.testing.assert_array_equal(root["s/v"][:], np.arange(4))
