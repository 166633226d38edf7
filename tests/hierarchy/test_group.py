"""Groups: creation, nesting, membership, attributes, deletion, node names and node types."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    InvalidNodeNameError,
    MemberNotFoundError,
    MetadataValidationError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
)

from _helpers.arrays import metadata_keys, node_doc


@pytest.fixture
def tree(store: zarrfast.Store) -> zarrfast.Group:
    """/ -> a (group) -> b (group) -> c (array);  / -> x (array);  / -> a/d (array)"""
    root = zarrfast.create_group(store, attributes={"root": True})
    a = root.create_group("a", attributes={"level": 1})
    b = a.create_group("b")
    b.create_array("c", chunks=(2,), data=np.arange(4, dtype="i4"))
    root.create_array("x", shape=(2, 2), dtype="f8", fill_value=1.5)
    a.create_array("d", shape=(), dtype="u1", fill_value=7)
    return root


# ---------------------------------------------------------------------------
# creation and nesting
# ---------------------------------------------------------------------------


def test_create_group_writes_metadata(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store, attributes={"k": [1, 2]})
    assert isinstance(g, zarrfast.Group)
    assert g.path == "" and g.name == "/" and g.zarr_format == 3
    assert node_doc(store, "") == {"zarr_format": 3, "node_type": "group",
                                   "attributes": {"k": [1, 2]}}
    with pytest.raises(ContainsGroupError):
        zarrfast.create_group(store)
    g2 = zarrfast.create_group(store, overwrite=True)
    assert dict(g2.attrs) == {}


def test_nested_groups_and_paths(tree: zarrfast.Group) -> None:
    store = tree.store
    assert metadata_keys(store) == ["a/b/c/zarr.json", "a/b/zarr.json", "a/d/zarr.json",
                                    "a/zarr.json", "x/zarr.json", "zarr.json"]
    b = tree["a/b"]
    assert isinstance(b, zarrfast.Group)
    assert b.path == "a/b" and b.name == "/a/b" and b.basename == "b"
    c = tree["a/b/c"]
    assert isinstance(c, zarrfast.Array)
    assert c.path == "a/b/c"
    assert list(c[:]) == [0, 1, 2, 3]
    assert tree["a"]["b"]["c"].path == "a/b/c"
    assert b["c"].path == "a/b/c"
    # leading / trailing slashes are dropped
    assert tree["/a/b/"].path == "a/b"
    assert zarrfast.open_group(store, path="/a/", mode="r").path == "a"


def test_leading_and_trailing_slashes_are_dropped(store: zarrfast.Store) -> None:
    """Leading and trailing empty segments are normalized away."""
    g = zarrfast.create_group(store)
    sub = g.create_group("/p/q/")
    assert sub.path == "p/q"
    assert metadata_keys(store) == ["p/q/zarr.json", "p/zarr.json", "zarr.json"]


def test_inner_empty_segments_are_collapsed(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store)
    g.create_group("p//q")
    assert g["p//q"].path == "p/q"
    a = zarrfast.create_array(store, name="r//s///t", shape=(1,), dtype="u1")
    assert a.path == "r/s/t"


def test_create_array_creates_parent_groups(store: zarrfast.Store) -> None:
    zarrfast.create_group(store, path="a", attributes={"keep": "me"})
    arr = zarrfast.create_array(store, name="a/b/c", shape=(3,), dtype="u2")
    assert arr.path == "a/b/c"
    assert node_doc(store, "")["node_type"] == "group"
    assert node_doc(store, "a/b") == {"zarr_format": 3, "node_type": "group", "attributes": {}}
    # an existing parent is left alone
    assert node_doc(store, "a")["attributes"] == {"keep": "me"}
    root = zarrfast.open_group(store, mode="r")
    assert list(root.keys()) == ["a"]
    assert isinstance(root["a/b"], zarrfast.Group)
    assert isinstance(root["a/b/c"], zarrfast.Array)


def test_group_parents_created_for_create_group(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store, path="x/y/z")
    assert g.path == "x/y/z"
    assert metadata_keys(store) == ["x/y/z/zarr.json", "x/y/zarr.json", "x/zarr.json",
                                    "zarr.json"]


def test_cannot_create_below_an_array(tree: zarrfast.Group) -> None:
    before = sorted(tree.store.list())
    with pytest.raises(ContainsArrayError):
        tree.create_group("x/sub")
    with pytest.raises(ContainsArrayError):
        zarrfast.create_array(tree.store, name="a/b/c/deeper", shape=(1,), dtype="u1")
    assert sorted(tree.store.list()) == before


def test_create_group_refuses_existing_nodes(tree: zarrfast.Group) -> None:
    with pytest.raises(ContainsGroupError):
        tree.create_group("a")
    with pytest.raises(ContainsArrayError):
        tree.create_group("x")
    with pytest.raises(ContainsGroupError):
        tree.create_array("a", shape=(1,), dtype="u1")
    assert dict(tree["a"].attrs) == {"level": 1}
    assert isinstance(tree["x"], zarrfast.Array)
    # overwrite replaces the node and everything below it
    new = tree.create_group("a", overwrite=True)
    assert dict(new.attrs) == {}
    assert list(new.keys()) == []
    assert [k for k in tree.store.list() if k.startswith("a/")] == ["a/zarr.json"]


def test_require_group(tree: zarrfast.Group) -> None:
    a = tree.require_group("a")
    assert a.path == "a" and dict(a.attrs) == {"level": 1}  # existing, untouched
    new = tree.require_group("n", attributes={"fresh": 1})
    assert new.path == "n" and dict(tree["n"].attrs) == {"fresh": 1}
    assert tree.require_group("a/b").path == "a/b"
    with pytest.raises(ContainsArrayError):
        tree.require_group("x")
    g1, g2 = tree.require_groups("a", "m")
    assert (g1.path, g2.path) == ("a", "m")


def test_require_array(tree: zarrfast.Group) -> None:
    x = tree.require_array("x", shape=(2, 2))
    assert x.path == "x" and x.fill_value == 1.5
    with pytest.raises(ZarrfastError):
        tree.require_array("x", shape=(3, 3))
    with pytest.raises(ContainsArrayError):
        tree.require_array("a", shape=(1,))
    y = tree.require_array("y", shape=(5,), dtype="i2")
    assert isinstance(tree["y"], zarrfast.Array) and y.shape == (5,)


def test_group_create_array_member(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store, path="g")
    a = g.create_array("arr", shape=(3, 2), chunks=(2, 2), dtype="f4",
                       attributes={"u": "m"}, dimension_names=["i", "j"])
    a[...] = 2.0
    b = zarrfast.open_array(store, path="g/arr", mode="r")
    assert b.dimension_names == ("i", "j") and dict(b.attrs) == {"u": "m"}
    assert np.array_equal(b[...], np.full((3, 2), 2.0, "f4"))


# ---------------------------------------------------------------------------
# membership
# ---------------------------------------------------------------------------


def test_keys_members_arrays_groups(tree: zarrfast.Group) -> None:
    assert list(tree.keys()) == ["a", "x"]
    assert list(tree) == ["a", "x"]
    assert len(tree) == 2
    assert [k for k, _ in tree.members()] == ["a", "x"]
    assert [k for k, _ in tree.arrays()] == ["x"]
    assert [k for k, _ in tree.groups()] == ["a"]
    assert list(tree.array_keys()) == ["x"]
    assert list(tree.group_keys()) == ["a"]
    assert list(tree["a"].keys()) == ["b", "d"]
    assert list(tree["a/b"].keys()) == ["c"]
    for name, node in tree.members(max_depth=None):
        assert node.path == name
        assert isinstance(node, zarrfast.Array if name in ("x", "a/d", "a/b/c") else
                          zarrfast.Group)


ALL_BELOW_A = ["b", "b/c", "d"]


@pytest.mark.parametrize(
    ("max_depth", "expected", "expected_a"),
    [(0, ["a", "x"], ["b", "d"]),
     (1, ["a", "a/b", "a/d", "x"], ALL_BELOW_A),
     (2, ["a", "a/b", "a/b/c", "a/d", "x"], ALL_BELOW_A),
     (5, ["a", "a/b", "a/b/c", "a/d", "x"], ALL_BELOW_A),
     (None, ["a", "a/b", "a/b/c", "a/d", "x"], ALL_BELOW_A)],
)
def test_members_max_depth(tree: zarrfast.Group, max_depth: int | None, expected: list,
                           expected_a: list) -> None:
    assert sorted(k for k, _ in tree.members(max_depth=max_depth)) == expected
    # paths are relative to the group asked
    assert sorted(k for k, _ in tree["a"].members(max_depth=max_depth)) == expected_a
    for k, node in tree["a"].members(max_depth=max_depth):
        assert node.path == f"a/{k}"


def test_contains(tree: zarrfast.Group) -> None:
    for name in ("a", "x", "a/b", "a/b/c", "a/d", "/a/b/"):
        assert name in tree, name
    for name in ("b", "c", "nope", "a/nope", "x/zarr.json", "..", "__x", "zarr.json", "a/../x",
                 "a/b/c/c", 5, None, b"a"):
        assert name not in tree, name
    assert "b" in tree["a"]


def test_non_node_keys_are_not_members(tree: zarrfast.Group) -> None:
    store = tree.store
    store.set("junk/file", b"not a node")
    store.set("a/loose", b"not a node")
    assert list(tree.keys()) == ["a", "x"]
    assert list(tree["a"].keys()) == ["b", "d"]
    assert "junk" not in tree
    with pytest.raises(MemberNotFoundError):
        tree["junk"]
    # chunk keys of an array are not members of its group
    assert list(tree["a/b"].keys()) == ["c"]


def test_missing_member(tree: zarrfast.Group) -> None:
    with pytest.raises(MemberNotFoundError) as info:
        tree["nope"]
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, FileNotFoundError)
    assert "'nope'" in str(err)
    assert tree.get("nope") is None
    assert tree.get("nope", 5) == 5
    assert tree.get("a").path == "a"
    with pytest.raises(MemberNotFoundError):
        tree["a/b/nope"]


def test_delitem(tree: zarrfast.Group) -> None:
    store = tree.store
    del tree["a/b"]
    assert "a/b" not in tree and "a/b/c" not in tree
    assert not any(k.startswith("a/b/") for k in store.list())
    assert list(tree["a"].keys()) == ["d"]
    del tree["x"]
    assert list(tree.keys()) == ["a"]
    assert not any(k.startswith("x/") for k in store.list())
    with pytest.raises(MemberNotFoundError):
        del tree["x"]
    with pytest.raises(MemberNotFoundError):
        del tree["never"]
    # a sibling whose name extends the deleted one survives
    tree.create_group("ab")
    tree.create_group("a2")
    del tree["a"]
    assert list(tree.keys()) == ["a2", "ab"]


def test_delitem_does_not_touch_prefix_siblings(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store)
    arr = g.create_array("data", shape=(2,), chunks=(1,), dtype="u1")
    arr[:] = [1, 2]
    g.create_array("data2", shape=(2,), chunks=(1,), dtype="u1")[:] = [3, 4]
    del g["data"]
    assert list(g.keys()) == ["data2"]
    assert list(g["data2"][:]) == [3, 4]


# ---------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------


def test_group_attrs_persist(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store, path="g", attributes={"a": 1})
    g.attrs["b"] = {"nested": [1, None]}
    g.attrs.update(c="x", d=2.5)
    del g.attrs["a"]
    g.update_attributes({"e": True})
    expected = {"b": {"nested": [1, None]}, "c": "x", "d": 2.5, "e": True}
    assert dict(g.attrs) == expected
    assert node_doc(store, "g")["attributes"] == expected
    assert dict(zarrfast.open_group(store, path="g", mode="r").attrs) == expected
    assert dict(zarrfast.open_group(store, mode="r")["g"].attrs) == expected
    g.attrs.put({})
    assert dict(zarrfast.open_group(store, path="g").attrs) == {}
    with pytest.raises(MetadataValidationError):
        g.attrs["bad"] = {1, 2}
    assert dict(zarrfast.open_group(store, path="g").attrs) == {}


def test_group_extension_member_survives_attribute_update(store: zarrfast.Store) -> None:
    ext = {"must_understand": False, "payload": [1, 2]}
    store.set("zarr.json", json.dumps({"zarr_format": 3, "node_type": "group",
                                       "attributes": {}, "my_ext": ext}).encode())
    g = zarrfast.open_group(store, mode="r+")
    g.attrs["k"] = 1
    doc = node_doc(store, "")
    assert doc["my_ext"] == ext and doc["attributes"] == {"k": 1}


def test_group_unknown_member_refused(store: zarrfast.Store) -> None:
    store.set("zarr.json", json.dumps({"zarr_format": 3, "node_type": "group",
                                       "my_ext": {"x": 1}}).encode())
    with pytest.raises(MetadataValidationError, match="my_ext"):
        zarrfast.open_group(store, mode="r")


# ---------------------------------------------------------------------------
# read-only groups (open_group modes: tests/api/test_open_modes.py)
# ---------------------------------------------------------------------------


def test_read_only_group(tree: zarrfast.Group) -> None:
    store = tree.store
    r = zarrfast.open_group(store, mode="r")
    assert r.read_only
    before = {k: store.get(k) for k in store.list()}
    for attempt in (lambda: r.create_group("new"), lambda: r.attrs.__setitem__("k", 1),
                    lambda: r.__delitem__("a"), lambda: r.create_array("z", shape=(1,)),
                    lambda: r.update_attributes({"u": 1})):
        with pytest.raises(ReadOnlyError) as info:
            attempt()
        assert isinstance(info.value, PermissionError)
    # members of a read-only group are read-only too
    sub = r["a/b/c"]
    assert sub.read_only
    with pytest.raises(ReadOnlyError):
        sub[0] = 1
    with pytest.raises(ReadOnlyError):
        r["a"].create_group("q")
    assert {k: store.get(k) for k in store.list()} == before


# ---------------------------------------------------------------------------
# node names
# ---------------------------------------------------------------------------

INVALID_NAMES = ["..", ".", "...", "__x", "__", "zarr.json", "a/../b", "a/./b", "a/__b",
                 "../a", "a/..", "a/zarr.json", "x/../../etc"]


@pytest.mark.parametrize("name", INVALID_NAMES)
def test_invalid_node_names(store: zarrfast.Store, name: str) -> None:
    g = zarrfast.create_group(store)
    before = sorted(store.list())
    with pytest.raises(InvalidNodeNameError) as info:
        g.create_group(name)
    bad = next(p for p in name.split("/") if set(p) == {"."} or p.startswith("__")
               or p == "zarr.json")
    assert repr(bad) in str(info.value)  # the message names the offending segment
    with pytest.raises(InvalidNodeNameError):
        g.create_array(name, shape=(1,), dtype="u1")
    with pytest.raises(InvalidNodeNameError):
        zarrfast.create_array(store, name=name, shape=(1,), dtype="u1")
    with pytest.raises(InvalidNodeNameError):
        zarrfast.create_group(store, path=name)
    with pytest.raises(InvalidNodeNameError):
        zarrfast.open_group(store, path=name, mode="a")
    with pytest.raises(InvalidNodeNameError):
        g[name]
    assert name not in g
    assert sorted(store.list()) == before  # nothing written


@pytest.mark.parametrize("name", ["a.b", "_x", "x__", "a-b c", "ünï", ".hidden", "x.", "0"])
def test_valid_unusual_names(store: zarrfast.Store, name: str) -> None:
    g = zarrfast.create_group(store)
    sub = g.create_group(name)
    assert sub.path == name and name in g
    assert list(g.keys()) == [name]
    assert zarrfast.open_group(store, path=name, mode="r").path == name


# ---------------------------------------------------------------------------
# node types
# ---------------------------------------------------------------------------


def test_group_opened_as_array_and_vice_versa(tree: zarrfast.Group) -> None:
    store = tree.store
    with pytest.raises(NodeTypeValidationError, match="'a'"):
        zarrfast.open_array(store, path="a", mode="r")
    with pytest.raises(NodeTypeValidationError, match="'x'"):
        zarrfast.open_group(store, path="x", mode="r")
    with pytest.raises(NodeTypeValidationError):
        zarrfast.open_group(store, path="x", mode="a")  # 'a' must not replace the array
    with pytest.raises(NodeTypeValidationError):
        zarrfast.open_array(store, path="a/b", mode="r+")
    assert isinstance(tree["x"], zarrfast.Array)  # unchanged


def test_missing_nodes(tree: zarrfast.Group) -> None:
    store = tree.store
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, path="a/none", mode="r")
    with pytest.raises(GroupNotFoundError):
        zarrfast.open_group(store, path="a/none", mode="r")
    with pytest.raises(NodeNotFoundError) as info:
        zarrfast.open(store, path="a/none", mode="r")
    assert isinstance(info.value, FileNotFoundError)


def test_open_dispatches_on_node_type(tree: zarrfast.Group) -> None:
    store = tree.store
    assert isinstance(zarrfast.open(store, mode="r"), zarrfast.Group)
    assert isinstance(zarrfast.open(store, path="a/b", mode="r"), zarrfast.Group)
    node = zarrfast.open(store, path="a/b/c", mode="r")
    assert isinstance(node, zarrfast.Array) and list(node[:]) == [0, 1, 2, 3]
    made = zarrfast.open(store, path="new_arr", mode="a", shape=(2,), dtype="u1")
    assert isinstance(made, zarrfast.Array)
    made_group = zarrfast.open(store, path="new_group", mode="a")
    assert isinstance(made_group, zarrfast.Group)
    assert sorted(tree.keys()) == ["a", "new_arr", "new_group", "x"]


def test_corrupt_group_metadata(store: zarrfast.Store) -> None:
    g = zarrfast.create_group(store)
    g.create_group("bad")
    store.set("bad/zarr.json", b"{not json")
    with pytest.raises(ZarrfastError, match="bad/zarr.json"):
        g["bad"]
    store.set("bad/zarr.json", b'{"zarr_format": 3, "node_type": "folder"}')
    with pytest.raises(MetadataValidationError, match="node_type"):
        g["bad"]
    store.set("bad/zarr.json", b'{"zarr_format": 2, "node_type": "group"}')
    with pytest.raises(MetadataValidationError, match="zarr_format"):
        zarrfast.open_group(store, path="bad", mode="r")


# ---------------------------------------------------------------------------
# misc
# ---------------------------------------------------------------------------


def test_group_equality_and_hash(tree: zarrfast.Group) -> None:
    a1 = tree["a"]
    a2 = zarrfast.open_group(tree.store, path="a")
    assert a1 == a2 and hash(a1) == hash(a2)
    assert a1 != tree and a1 != tree["a/b"]


def test_group_pickle_local(tmp_path: Path) -> None:
    store = zarrfast.LocalStore(tmp_path / "g.zarr")
    g = zarrfast.create_group(store, path="g", attributes={"k": 1})
    g.create_array("arr", data=np.array([5, 6], dtype="i2"))
    h = pickle.loads(pickle.dumps(g))
    assert h == g and dict(h.attrs) == {"k": 1} and list(h.keys()) == ["arr"]
    assert list(h["arr"][:]) == [5, 6]


def test_tree_text_and_rich() -> None:
    g = zarrfast.group({})
    g.create_group("s").create_group("t").create_array("q", shape=(1,), dtype="i1")
    g["s"].zeros(name="z", shape=(2, 3))
    g["x"] = np.arange(3)
    text = str(g.tree(plain=True))
    assert text.splitlines() == ["/", "├── s", "│   ├── t", "│   │   └── q (1,) int8",
                                 "│   └── z (2, 3) float64", "└── x (3,) int64"]
    assert zarrfast.tree(g) == g.tree()
    assert str(g["s"].tree(level=0, plain=True)).splitlines() == [
        "/s", "├── t", "└── z (2, 3) float64"]
    pytest.importorskip("rich")
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=60, color_system=None)
    console.print(g.tree())
    drawn = console.file.getvalue()
    assert "└── x (3,) int64" in drawn and "│   └── z (2, 3) float64" in drawn


def test_a_consolidated_member_with_a_reserved_name_is_refused_naming_the_group():
    """Found by tests/reliability/test_fuzz_metadata.py (Hypothesis): a member named
    ``__meta`` in a group's consolidated metadata raised a message naming no group."""
    import json

    from zarrfast.errors import InvalidNodeNameError
    from zarrfast.storage import MemoryStore

    doc = {"zarr_format": 3, "node_type": "group", "attributes": {},
           "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {
               "sub": {"zarr_format": 3, "node_type": "group", "attributes": {}},
               "__meta": {"zarr_format": 3, "node_type": "group", "attributes": {}}}}}
    store = MemoryStore()
    store.set("grp/zarr.json", json.dumps(doc).encode())
    g = zarrfast.open_group(store, path="grp", mode="r")
    with pytest.raises(InvalidNodeNameError, match=r"group '/grp': node name '__meta'"):
        g.members(max_depth=None)
    with pytest.raises(InvalidNodeNameError, match=r"group '/grp': node name '__x'"):
        g["__x"]


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_node_of_the_other_format_is_no_member_and_warned_of(zarr_format, tmp_path,
                                                                zarr_peer) -> None:
    """A node of the other Zarr format below a group (ome-zarr's test_write_image_scalar_
    chunks leaves a v3 group in a v2 one) is not a member, as zarr-python sees it: the
    listings skip it with zarr-python's ZarrUserWarning, ``in`` says no, consolidation
    leaves it out.  Before, the listings raised MemberNotFoundError."""
    from zarrfast.errors import ZarrUserWarning

    other = 5 - zarr_format
    root = tmp_path / "root"
    g = zarrfast.open_group(root, mode="w", zarr_format=zarr_format)
    g.create_array("a", shape=(2,), dtype="i1")
    zarrfast.open_group(root / "other", mode="w", zarr_format=other).create_array(
        "b", shape=(2,), dtype="i1")
    g = zarrfast.open_group(root, mode="r")
    ours = {}
    for method in ("keys", "array_keys", "group_keys", "members"):
        with pytest.warns(ZarrUserWarning, match="Object at other is not recognized"):
            ours[method] = [m[0] if isinstance(m, tuple) else m for m in getattr(g, method)()]
    ours["contains"] = "other" in g
    with pytest.warns(ZarrUserWarning, match="Object at other"):
        ours["tree"] = repr(g.tree(plain=True))
    theirs = zarr_peer.run("""
        import warnings, zarr
        root, = ARGS
        g = zarr.open_group(root, mode="r")
        out = {}
        for method in ("keys", "array_keys", "group_keys", "members"):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                out[method] = [m[0] if isinstance(m, tuple) else m
                               for m in getattr(g, method)()]
            assert any("Object at other is not recognized" in str(x.message) for x in w)
        out["contains"] = "other" in g
        out["tree"] = repr(g.tree())
        emit(out)
    """, [str(root)])
    assert ours == theirs
    assert ours["members"] == ["a"] and ours["contains"] is False
    with pytest.warns(ZarrUserWarning, match="Object at other"):  # (and leaves it out)
        zarrfast.consolidate_metadata(str(root))
    assert sorted(zarrfast.open_consolidated(str(root)).keys()) == ["a"]
