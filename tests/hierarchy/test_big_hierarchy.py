"""Listing groups of many members (issue 44, target 4): what the fast listings give is what
zarr-python 3.4 gives and what one-by-one lookups give.

The listings parse the arrays' documents alike but for their attributes once
(``ArrayV3Metadata.from_dict_shared``), read a group's member documents in one batch
(``read_children_metadata``), and make each listed array's codec chain when the array is
first used (``Array._listed``).  These tests check that none of that changes a result or
an error: every member's attributes, shape, dtype, fill value and data; a corrupt member
named; a bad codec refused naming its array; consolidated metadata that disagrees with the
store read as before.  (The timings are benchmarks/bench_hierarchy.py's.)
"""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import MetadataError, MetadataValidationError, ZarrfastError
from zarrfast.metadata.v3 import ArrayV3Metadata, GroupMetadata, parse_metadata
from zarrfast.storage import LocalStore, MemoryStore

# zarr-python builds a hierarchy of arrays: many alike but for their attributes, some with
# another dtype, shape, fill value or codec, a nested group; then a consolidated copy
_BUILD = """
import shutil, zarr, numpy as np
root = ARGS["root"]
g = zarr.open_group(root + "/plain", mode="w")
for i in range(ARGS["n"]):
    kind = i % 5
    kw = dict(shape=(10,), chunks=(10,), dtype="float32")
    if kind == 1:
        kw = dict(shape=(4, 6), chunks=(2, 3), dtype="int16", fill_value=-1)
    elif kind == 2:
        kw = dict(shape=(10,), chunks=(5,), dtype="float64", fill_value=float("nan"))
    elif kind == 3:
        kw = dict(shape=(10,), chunks=(10,), dtype="float32", fill_value=-0.0,
                  compressors=None)
    a = g.create_array(f"a{i:03d}", attributes={"i": i, "name": f"member {i}"}, **kw)
    a[...] = np.arange(int(np.prod(a.shape)), dtype=a.dtype).reshape(a.shape) + i
sub = g.create_group("sub", attributes={"kind": "group"})
for i in range(3):
    sub.create_array(f"x{i}", shape=(3,), dtype="uint8", attributes={"j": i})[...] = i
shutil.copytree(root + "/plain", root + "/cons")
zarr.consolidate_metadata(root + "/cons")

def row(path, node):
    if isinstance(node, zarr.Array):
        return [path, "array", list(node.shape), str(node.dtype), dict(node.attrs),
                str(node.fill_value)]
    return [path, "group", None, None, dict(node.attrs), None]

out = {}
for kind in ("plain", "cons"):
    g = zarr.open_group(root + "/" + kind, mode="r")
    out[kind] = {
        "members": [row(p, n) for p, n in g.members(max_depth=None)],
        "arrays": [name for name, _ in g.arrays()],
        "array_keys": list(g.array_keys()),
        "groups": [name for name, _ in g.groups()],
    }
emit(out)
"""

N = 40


def _row(path, node):
    if isinstance(node, zarrfast.Array):
        return [path, "array", list(node.shape), str(node.dtype), dict(node.attrs),
                str(node.fill_value)]
    return [path, "group", None, None, dict(node.attrs), None]


@pytest.fixture(scope="module")
def built(zarr_peer, tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    theirs = zarr_peer.run(_BUILD, {"root": str(root), "n": N})
    return root, theirs


@pytest.mark.parametrize("kind", ["plain", "cons"])
def test_listings_are_zarr_pythons(built, kind):
    root, theirs = built
    g = zarrfast.open_group(str(root / kind), mode="r")
    assert (g._consolidated is not None) == (kind == "cons")
    ours = [_row(p, n) for p, n in g.members(max_depth=None)]
    # (the order: zarr-python lists consolidated members sorted, others as the store does)
    assert sorted(ours, key=lambda r: r[0]) == sorted(theirs[kind]["members"],
                                                       key=lambda r: r[0])
    assert len(ours) == N + 4
    assert sorted(name for name, _ in g.arrays()) == sorted(theirs[kind]["arrays"])
    assert sorted(g.array_keys()) == sorted(theirs[kind]["array_keys"])
    assert [name for name, _ in g.groups()] == theirs[kind]["groups"] == ["sub"]
    top = sorted(r[0] for r in theirs[kind]["members"] if "/" not in r[0])
    assert sorted(g.keys()) == top and len(g) == len(top) == N + 1


@pytest.mark.parametrize("kind", ["plain", "cons"])
def test_listed_arrays_are_what_one_lookup_gives(built, kind):
    root, _ = built
    g = zarrfast.open_group(str(root / kind), mode="r")
    listed = dict(g.arrays())
    assert len(listed) == N
    for name, a in listed.items():
        one = zarrfast.open_array(str(root / kind), path=name, mode="r")
        assert a == one  # (store, path, metadata and settings)
        # (metadata as documents: a NaN fill value equals no other)
        assert a.metadata.to_dict() == one.metadata.to_dict()
        assert dict(a.attrs) == dict(one.attrs)
        assert a.attrs["i"] == int(name[1:])
        assert a.codec_chain.to_json() == one.codec_chain.to_json()
        np.testing.assert_array_equal(a[...], one[...])
        i = int(name[1:])
        expected = np.arange(int(np.prod(a.shape)), dtype=a.dtype).reshape(a.shape) + i
        np.testing.assert_array_equal(a[...], expected)
    sub = dict(g.groups())["sub"]
    assert [(n, x[...].tolist()) for n, x in sub.arrays()] == [
        ("x0", [0, 0, 0]), ("x1", [1, 1, 1]), ("x2", [2, 2, 2])]


def test_members_alike_but_for_attributes_keep_their_own(built):
    """Arrays parsed from one shared document (their attributes apart) do not share
    attributes: a change to one is its own."""
    root, _ = built
    import shutil
    work = root / "writable"
    shutil.copytree(root / "plain", work)
    g = zarrfast.open_group(str(work), mode="r+")
    listed = dict(g.arrays())
    a0, a5 = listed["a000"], listed["a005"]  # (the same document but for the attributes)
    assert a0.metadata.attributes is not a5.metadata.attributes
    a0.attrs["new"] = 1
    assert "new" not in a5.attrs
    assert dict(zarrfast.open_array(str(work), path="a005", mode="r").attrs) == {
        "i": 5, "name": "member 5"}
    assert zarrfast.open_array(str(work), path="a000", mode="r").attrs["new"] == 1


def test_listed_arrays_make_their_codec_chain_on_first_use():
    g = zarrfast.group(store={})
    for i in range(3):
        g.create_array(f"a{i}", shape=(4,), dtype="int32")[...] = i
    listed = dict(g.arrays())
    assert all("_chain" not in a.__dict__ for a in listed.values())
    assert listed["a1"][...].tolist() == [1, 1, 1, 1]
    assert "_chain" in listed["a1"].__dict__ and "_chain" not in listed["a2"].__dict__
    # threads using a listed array at once all read it right (one chain made)
    a2 = listed["a2"]
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(a2[...].tolist()))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[2, 2, 2, 2]] * 8
    # written through, as any array
    listed["a0"][1:3] = 7
    assert g["a0"][...].tolist() == [0, 7, 7, 0]


def _array_doc(**over):
    doc = {"shape": [4], "data_type": "int32",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
           "attributes": {}, "zarr_format": 3, "node_type": "array"}
    doc.update(over)
    return doc


def _store_with(members: dict, *, consolidated: bool) -> MemoryStore:
    store = MemoryStore()
    root = {"attributes": {}, "zarr_format": 3, "node_type": "group"}
    if consolidated:
        root["consolidated_metadata"] = {"kind": "inline", "must_understand": False,
                                         "metadata": members}
    store.set("zarr.json", json.dumps(root).encode())
    for name, doc in members.items():
        store.set(f"{name}/zarr.json", json.dumps(doc).encode())
    return store


@pytest.mark.parametrize("consolidated", [False, True])
def test_a_bad_codec_of_a_listed_array_is_refused_naming_it(consolidated):
    members = {"good": _array_doc(attributes={"k": 1}),
               "bad": _array_doc(codecs=[{"name": "no-such-codec"}])}
    g = zarrfast.open_group(_store_with(members, consolidated=consolidated), mode="r")
    listed = dict(g.arrays())
    assert listed["good"][...].tolist() == [0, 0, 0, 0]
    with pytest.raises(ZarrfastError, match="'bad'") as first:
        listed["bad"][...]
    with pytest.raises(type(first.value), match="'bad'"):  # (again: the same error)
        _ = listed["bad"].codec_chain
    with pytest.raises(type(first.value), match="'bad'"):  # as one lookup refuses it
        g["bad"]


@pytest.mark.parametrize("consolidated", [False, True])
def test_a_bad_member_document_is_refused_naming_it(consolidated):
    members = {f"a{i}": _array_doc(attributes={"i": i}) for i in range(4)}
    members["a2"] = _array_doc(attributes={"i": 2}, shape=[-1])  # alike but invalid
    store = _store_with(members, consolidated=consolidated)
    if consolidated:  # (zarr-python refuses it when it opens the group)
        with pytest.raises(MetadataValidationError, match="array 'a2': 'shape'"):
            zarrfast.open_group(store, mode="r")
        return
    g = zarrfast.open_group(store, mode="r")
    with pytest.raises(MetadataValidationError, match="array 'a2': 'shape'"):
        list(g.arrays())
    with pytest.raises(MetadataValidationError, match="array 'a2': 'shape'"):
        g.members()


def test_a_corrupt_member_document_is_refused_naming_its_key():
    members = {f"a{i}": _array_doc(attributes={"i": i}) for i in range(6)}
    store = _store_with(members, consolidated=False)
    store.set("a3/zarr.json", b'{"shape": [4], ')
    g = zarrfast.open_group(store, mode="r")
    with pytest.raises(MetadataError, match="a3/zarr.json: not valid JSON"):
        list(g.arrays())
    with pytest.raises(MetadataError, match="a3/zarr.json: not valid JSON"):
        list(g.members())


def test_consolidated_metadata_disagreeing_with_the_store_is_read_as_before():
    """A group opened from consolidated metadata lists and gives what that metadata says
    (as zarr-python); opened without it, what the store holds."""
    members = {f"a{i}": _array_doc(attributes={"i": i}) for i in range(4)}
    store = _store_with(members, consolidated=True)
    # the store changes after consolidation: a5 added, a1 resized, a2 deleted
    store.set("a5/zarr.json", json.dumps(_array_doc(attributes={"i": 5})).encode())
    store.set("a1/zarr.json", json.dumps(_array_doc(shape=[8], attributes={"i": 1})).encode())
    store.delete("a2/zarr.json")
    cons = zarrfast.open_group(store, mode="r")
    assert sorted(cons.array_keys()) == ["a0", "a1", "a2", "a3"]
    assert dict(cons.arrays())["a1"].shape == (4,) == cons["a1"].shape
    assert dict(cons.arrays())["a2"][...].tolist() == [0, 0, 0, 0]  # (as fill values)
    plain = zarrfast.open_group(store, mode="r", use_consolidated=False)
    assert sorted(plain.array_keys()) == ["a0", "a1", "a3", "a5"]
    assert dict(plain.arrays())["a1"].shape == (8,) == plain["a1"].shape


def test_a_member_of_the_other_format_is_skipped_with_a_warning(tmp_path):
    """A v2 node below a v3 group (no zarr.json: not a member the batch finds) is no
    member, as for zarr-python: ``g["old"]`` refuses it, the listing skips it with
    zarr-python's warning (it raised MemberNotFoundError; test_group.py compares both
    formats with zarr-python)."""
    from zarrfast.errors import ZarrUserWarning

    g = zarrfast.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("a", shape=(2,), dtype="i1")
    zarrfast.create_array(str(tmp_path / "g" / "old"), shape=(2,), dtype="i1", zarr_format=2)
    with pytest.raises(ZarrfastError):
        g["old"]
    with pytest.warns(ZarrUserWarning, match="Object at old is not recognized"):
        assert [name for name, _ in g.members()] == ["a"]
    # and a directory without any metadata is no member
    (tmp_path / "g" / "junk").mkdir()
    (tmp_path / "g" / "junk" / "file").write_bytes(b"x")
    assert "junk" not in g.keys()


_DOCS = [
    _array_doc(),
    _array_doc(fill_value=0.0, data_type="float32"),
    _array_doc(fill_value=-0.0, data_type="float32"),
    _array_doc(fill_value="NaN", data_type="float32"),
    _array_doc(fill_value=1, data_type="bool"),
    _array_doc(fill_value=True, data_type="bool"),
    _array_doc(shape=[5]),
    _array_doc(dimension_names=["x"]),
    _array_doc(attributes=None),
    {k: v for k, v in _array_doc().items() if k != "attributes"},
]


def test_documents_parsed_once_give_what_each_parsed_alone_gives():
    """``from_dict_shared`` over documents alike but for attributes, and documents that
    differ in what tells values apart only by type (0 and 0.0, 1 and true, -0.0): each the
    metadata ``from_dict`` gives, with its own attributes."""
    parsed: dict = {}
    for round_ in range(2):
        for k, doc in enumerate(_DOCS):
            doc = json.loads(json.dumps({**doc, **({"attributes": {"k": k, "r": round_}}
                                                   if "attributes" in doc else {})}))
            try:
                alone = ArrayV3Metadata.from_dict(doc, path="p")
            except (ZarrfastError, ValueError) as e:  # (refused alike)
                with pytest.raises(type(e), match=re.escape(str(e))):
                    ArrayV3Metadata.from_dict_shared(doc, path="p", parsed=parsed)
                continue
            shared = ArrayV3Metadata.from_dict_shared(doc, path="p", parsed=parsed)
            if doc["fill_value"] != "NaN":  # (NaN equals no other)
                assert shared == alone
            assert shared.to_dict() == alone.to_dict()
            assert shared.to_json() == alone.to_json()
            assert shared.attributes == alone.attributes
            assert str(shared.fill_value) == str(alone.fill_value)
            assert shared.fill_value_json == alone.fill_value_json
            assert np.asarray(shared.fill_value).dtype == np.asarray(alone.fill_value).dtype


def test_parse_metadata_with_a_batch_parses_groups_and_arrays():
    parsed: dict = {}
    group = {"attributes": {"g": 1}, "zarr_format": 3, "node_type": "group"}
    assert isinstance(parse_metadata(json.dumps(group).encode(), path="g", key="g/zarr.json",
                                     parsed=parsed), GroupMetadata)
    a = parse_metadata(json.dumps(_array_doc(attributes={"x": 1})).encode(), path="a",
                       key="a/zarr.json", parsed=parsed)
    b = parse_metadata(json.dumps(_array_doc(attributes={"x": 2})).encode(), path="b",
                       key="b/zarr.json", parsed=parsed)
    assert (a.attributes, b.attributes) == ({"x": 1}, {"x": 2}) and len(parsed) == 1


def test_a_v2_hierarchy_lists_from_one_batch(tmp_path):
    root = zarrfast.open_group(str(tmp_path / "v2"), mode="w", zarr_format=2)
    for i in range(6):
        root.create_array(f"a{i}", shape=(3,), dtype="i2", attributes={"i": i})[...] = i
    root.create_group("sub").create_array("x", shape=(1,), dtype="u1")
    store = LocalStore(str(tmp_path / "v2"), read_only=True)
    g = zarrfast.open_group(store, mode="r")
    rows = {p: (type(n).__name__, dict(n.attrs)) for p, n in g.members(max_depth=None)}
    assert rows == {**{f"a{i}": ("Array", {"i": i}) for i in range(6)},
                    "sub": ("Group", {}), "sub/x": ("Array", {})}
    assert [a[...].tolist() for _, a in sorted(g.arrays())] == [[i] * 3 for i in range(6)]
    # both .zarray and .zgroup: refused naming the path, as one by one
    store2 = LocalStore(str(tmp_path / "v2"))
    store2.set("a2/.zgroup", b'{"zarr_format": 2}')
    with pytest.raises(ZarrfastError, match="'a2'"):
        list(zarrfast.open_group(str(tmp_path / "v2"), mode="r").arrays())


@pytest.mark.parametrize("consolidated", [False, True])
def test_v2_arrays_alike_but_for_attributes_keep_their_own(tmp_path, consolidated):
    """Zarr v2 ``.zarray`` documents equal byte for byte are parsed once per listing
    (``ArrayMetadataV2.from_documents(parsed=...)``): each array keeps its attributes,
    and one with another fill value or dtype its own metadata."""
    root = zarrfast.open_group(str(tmp_path / "v2"), mode="w", zarr_format=2)
    for i in range(6):
        kw = {"fill_value": 7} if i == 4 else {"dtype": "f8"} if i == 5 else {}
        root.create_array(f"a{i}", shape=(3,), attributes={"i": i},
                          **{"dtype": "i2", **kw})
    if consolidated:
        zarrfast.consolidate_metadata(str(tmp_path / "v2"))
    g = zarrfast.open_group(str(tmp_path / "v2"), mode="r")
    assert (g._consolidated is not None) == consolidated
    listed = dict(g.arrays())
    for name, a in listed.items():
        one = zarrfast.open_array(str(tmp_path / "v2"), path=name, mode="r")
        assert a.metadata == one.metadata and a.attrs["i"] == int(name[1:])
        assert a[...].tolist() == one[...].tolist()
    assert listed["a4"].fill_value == 7 and listed["a5"].dtype == np.dtype("f8")
    assert listed["a0"].metadata.attributes is not listed["a1"].metadata.attributes


def test_the_collector_is_paused_only_while_many_objects_are_made():
    import gc

    from zarrfast.metadata.gcpause import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # (nested, as threads pausing at once)
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()
    with collector_paused(False):
        assert gc.isenabled()
    gc.disable()  # (a collector disabled by the caller stays disabled)
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    # a large consolidated document (over 1 MiB): read, its members listed, and the
    # collector running again after each, also when a member is refused
    members = {f"a{i:05d}": _array_doc(attributes={"i": i, "pad": "x" * 40})
               for i in range(6000)}
    store = _store_with(members, consolidated=True)
    assert len(store.get("zarr.json")) > 1 << 20
    g = zarrfast.open_group(store, mode="r")
    assert gc.isenabled()
    listed = list(g.arrays())
    assert gc.isenabled() and len(listed) == 6000
    assert [a.attrs["i"] for _, a in listed[:3]] == [0, 1, 2]
    members["a00003"] = _array_doc(shape="bad")
    with pytest.raises(MetadataValidationError, match="array 'a00003'"):
        zarrfast.open_group(_store_with(members, consolidated=True), mode="r")
    assert gc.isenabled()
