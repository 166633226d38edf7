"""Methods zarr-python 3.4 added that zarrfast follows: ``Group.get_array`` /
``get_group`` (and ``AsyncGroup``'s), ``Group.array_values`` / ``group_values``,
``Array.open`` and ``AsyncArray.open``'s ``config``.

Each is checked against zarrfast itself (results, nested paths, missing paths, the
other node kind, read-only groups, consolidated metadata) and against zarr-python 3.4.2
run on the same hierarchy (the ``zarr_peer`` fixture): the same results, and errors of
the same names.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast import AsyncArray, AsyncGroup
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
from zarrfast.storage import LocalStore, StorePath

#: the paths asked for, relative to the root: every node kind, nested, missing, odd forms
PATHS = ["x", "a", "a/b", "a/c", "a/c/d", "missing", "a/missing", "x/y", "", "/", "a/",
         "/a", "a//b"]


def _hierarchy(root: Path | str, zarr_format: int = 3) -> zarrfast.Group:
    """root: array x, group a holding array b and group c (holding array d)."""
    g = zarrfast.open_group(str(root), mode="w", zarr_format=zarr_format)
    g.create_array("x", shape=(3,), dtype="int8")[:] = [1, 2, 3]
    a = g.create_group("a")
    a.create_array("b", shape=(2,), dtype="float32")
    a.create_group("c").create_array("d", shape=(1,), dtype="int16")
    return g


def _outcome(fn: Any, path: str) -> list[str]:
    """["ok", node kind and path] or ["error", the exception's class name]."""
    try:
        node = fn(path)
    except ZarrfastError as e:
        return ["error", type(e).__name__]
    kind = "array" if isinstance(node, zarrfast.Array) else "group"
    return ["ok", f"{kind} {node.path}"]


def _open_outcome(fn: Any, *args: Any, **kwargs: Any) -> list:
    """["ok", path, shape, order, format] of the array opened, or ["error", class name]."""
    try:
        a = fn(*args, **kwargs)
    except ZarrfastError as e:
        return ["error", type(e).__name__]
    return ["ok", a.path, list(a.shape), a.order, a.metadata.zarr_format]


@pytest.fixture
def tree(tmp_path: Path) -> zarrfast.Group:
    return _hierarchy(tmp_path / "t.zarr")


# -- get_array / get_group ------------------------------------------------------------

def test_get_array_returns_the_array(tree: zarrfast.Group) -> None:
    x = tree.get_array("x")
    assert isinstance(x, zarrfast.Array) and x == tree["x"]
    np.testing.assert_array_equal(x[:], [1, 2, 3])
    d = tree.get_array("a/c/d")
    assert d.path == "a/c/d" and d.dtype == np.int16
    assert tree["a"].get_array("c/d") == d  # relative to the group asked


def test_get_group_returns_the_group(tree: zarrfast.Group) -> None:
    a = tree.get_group("a")
    assert isinstance(a, zarrfast.Group) and a == tree["a"]
    assert tree.get_group("a/c").path == "a/c"
    assert tree.get_group("") == tree  # the group itself, as zarr-python's
    assert tree.get_group("a/").path == "a" and tree.get_group("/a").path == "a"


@pytest.mark.parametrize("path", ["missing", "a/missing", "x/y", "a/c/d/e"])
def test_missing_path(tree: zarrfast.Group, path: str) -> None:
    # zarr-python 3.4's messages, word for word
    with pytest.raises(ArrayNotFoundError, match=f"^No array found in store .* at path '{path}'$"):
        tree.get_array(path)
    with pytest.raises(GroupNotFoundError, match=f"^No group found in store .* at path '{path}'$"):
        tree.get_group(path)
    # zarr-python's classes: not found is a NodeNotFoundError (a FileNotFoundError), not
    # the KeyError (MemberNotFoundError) of ``group[path]``
    for method in (tree.get_array, tree.get_group):
        with pytest.raises(NodeNotFoundError) as info:
            method(path)
        assert isinstance(info.value, FileNotFoundError)
        assert not isinstance(info.value, (KeyError, MemberNotFoundError))


def test_wrong_kind(tree: zarrfast.Group) -> None:
    for path in ("a", "a/c", ""):
        with pytest.raises(ContainsGroupError, match="^A group exists in store .* at path '.*'\\.$"):
            tree.get_array(path)
    for path in ("x", "a/b", "a/c/d"):
        with pytest.raises(ContainsArrayError, match="^An array exists in store .* at path '.*'\\.$"):
            tree.get_group(path)


@pytest.mark.parametrize("path", ["..", "a/../x", ".", "__x", "a/__b"])
def test_invalid_path(tree: zarrfast.Group, path: str) -> None:
    """An invalid path is an error of its own, as in ``group[path]`` and ``group.get``."""
    with pytest.raises(InvalidNodeNameError):
        tree.get_array(path)
    with pytest.raises(InvalidNodeNameError):
        tree.get_group(path)


def test_read_only_group(tree: zarrfast.Group) -> None:
    ro = zarrfast.open_group(str(tree.store.root), mode="r")
    assert ro.read_only
    arr, grp = ro.get_array("a/b"), ro.get_group("a/c")
    assert arr.read_only and grp.read_only
    with pytest.raises(ReadOnlyError):
        arr[:] = 1
    with pytest.raises(ReadOnlyError):
        grp.create_group("new")
    with pytest.raises(ArrayNotFoundError):
        ro.get_array("missing")


@pytest.mark.filterwarnings("ignore::zarrfast.errors.ZarrUserWarning")
def test_consolidated_group(tmp_path: Path) -> None:
    """A group opened from consolidated metadata answers from it, as ``group[path]``."""
    root = tmp_path / "c.zarr"
    _hierarchy(root)
    zarrfast.consolidate_metadata(str(root))
    g = zarrfast.open_consolidated(str(root), mode="r")
    assert g.get_array("a/c/d").shape == (1,)
    assert g.get_group("a/c").path == "a/c"
    with pytest.raises(ArrayNotFoundError, match="No array found in store") as info:
        g.get_array("nope")
    assert "consolidated metadata" in str(info.value.__cause__)  # (why: the cause)
    with pytest.raises(ContainsArrayError):
        g.get_group("x")


def test_zarr_v2_hierarchy(tmp_path: Path) -> None:
    g = _hierarchy(tmp_path / "v2.zarr", zarr_format=2)
    assert g.get_array("a/c/d").metadata.zarr_format == 2
    assert g.get_group("a").metadata.zarr_format == 2
    with pytest.raises(ContainsArrayError):
        g.get_group("x")
    with pytest.raises(GroupNotFoundError):
        g.get_group("nope")


def test_async_get_array_and_group(tree: zarrfast.Group) -> None:
    ag = tree.async_group

    async def main() -> tuple:
        arr = await ag.get_array("a/b")
        grp = await ag.get_group("a/c")
        errors = []
        for call in (ag.get_array("a"), ag.get_group("x"), ag.get_array("nope"),
                     ag.get_group("nope")):
            try:
                await call
            except ZarrfastError as e:
                errors.append(type(e))
        return arr, grp, errors

    arr, grp, errors = asyncio.run(main())
    assert isinstance(arr, AsyncArray) and zarrfast.Array(arr) == tree["a/b"]
    assert isinstance(grp, AsyncGroup) and zarrfast.Group(grp) == tree["a/c"]
    assert errors == [ContainsGroupError, ContainsArrayError, ArrayNotFoundError,
                      GroupNotFoundError]


# -- array_values / group_values ------------------------------------------------------

def test_values(tree: zarrfast.Group) -> None:
    assert [a.path for a in tree.array_values()] == [n for n, _ in tree.arrays()] == ["x"]
    assert [g.path for g in tree.group_values()] == ["a"]
    a = tree["a"]
    assert list(a.array_values()) == [a["b"]] and list(a.group_values()) == [a["c"]]
    empty = zarrfast.group(store={})
    assert list(empty.array_values()) == [] and list(empty.group_values()) == []

    async def async_values() -> tuple[list, list]:
        ag = tree.async_group
        return ([x.path async for x in ag.array_values()],
                [x.path async for x in ag.group_values()])

    assert asyncio.run(async_values()) == (["x"], ["a"])


@pytest.mark.filterwarnings("ignore::zarrfast.errors.ZarrUserWarning")
def test_values_from_consolidated_metadata(tmp_path: Path) -> None:
    root = tmp_path / "c.zarr"
    _hierarchy(root)
    zarrfast.consolidate_metadata(str(root))
    g = zarrfast.open_consolidated(str(root), mode="r")
    assert [x.path for x in g["a"].array_values()] == ["a/b"]
    assert [x.path for x in g["a"].group_values()] == ["a/c"]


# -- Array.open / AsyncArray.open -----------------------------------------------------

def test_array_open(tree: zarrfast.Group) -> None:
    store = tree.store
    x = zarrfast.Array.open(StorePath(store, "x"))
    assert x == tree["x"] and not x.read_only
    np.testing.assert_array_equal(x[:], [1, 2, 3])
    assert zarrfast.Array.open(StorePath(store, "a/c/d")).shape == (1,)
    # a directory: the array at its root
    assert zarrfast.Array.open(str(Path(store.root) / "x")).shape == (3,)


def test_array_open_config(tree: zarrfast.Group) -> None:
    sp = StorePath(tree.store, "x")
    assert zarrfast.Array.open(sp).config == zarrfast.Array.open(sp, config=None).config
    f = zarrfast.Array.open(sp, config={"order": "F"})
    assert f.order == "F" and f.config.write_empty_chunks is False
    wec = zarrfast.Array.open(sp, config={"write_empty_chunks": True})
    assert wec.write_empty_chunks is True and wec.order == "C"
    assert zarrfast.Array.open(sp, config=f.config).config == f.config  # an ArrayConfig
    with pytest.raises(ZarrfastError, match=r"Unknown array config keys: \['bogus'\]") as info:
        zarrfast.Array.open(sp, config={"bogus": 1})
    assert isinstance(info.value, TypeError)  # (as zarr-python 3.4's)
    with pytest.raises(ZarrfastError, match="order"):
        zarrfast.Array.open(sp, config={"order": "Z"})


def test_array_open_errors(tree: zarrfast.Group, tmp_path: Path) -> None:
    store = tree.store
    with pytest.raises(ArrayNotFoundError):
        zarrfast.Array.open(StorePath(store, "nope"))
    with pytest.raises(NodeTypeValidationError):
        zarrfast.Array.open(store)  # the root group
    with pytest.raises(NodeTypeValidationError):
        zarrfast.Array.open(StorePath(store, "a"))
    # Zarr v3 only, as zarr-python's Array.open
    v2 = _hierarchy(tmp_path / "v2.zarr", zarr_format=2)
    with pytest.raises(ArrayNotFoundError):
        zarrfast.Array.open(StorePath(v2.store, "x"))


def test_array_open_read_only_store(tree: zarrfast.Group) -> None:
    ro_store = LocalStore(tree.store.root, read_only=True)
    a = zarrfast.Array.open(StorePath(ro_store, "a/b"))
    assert a.read_only
    with pytest.raises(ReadOnlyError):
        a[:] = 0


def test_async_array_open(tree: zarrfast.Group, tmp_path: Path) -> None:
    store = tree.store
    v2 = _hierarchy(tmp_path / "v2.zarr", zarr_format=2)

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["x"] = await AsyncArray.open(StorePath(store, "x"))
        out["f"] = await AsyncArray.open(store, path="x", config={"order": "F"})
        out["v2"] = await AsyncArray.open(StorePath(v2.store, "x"), zarr_format=None)
        errors = []
        for sp, fmt in ((v2.store, None), (v2.store, 2), (store, 3), (store, 2),
                        (StorePath(store, "x"), 4)):
            try:
                await AsyncArray.open(sp, zarr_format=fmt)
            except ZarrfastError as e:
                errors.append(type(e))
        out["errors"] = errors
        return out

    out = asyncio.run(main())
    assert zarrfast.Array(out["x"]) == tree["x"]
    assert out["f"].order == "F"
    assert out["v2"].metadata.zarr_format == 2
    # a Zarr v2 group is no array (zarr-python looks in .zarray only); a v3 group's
    # zarr.json is a NodeTypeValidationError; an unknown format a MetadataValidationError
    assert out["errors"] == [ArrayNotFoundError, ArrayNotFoundError,
                             NodeTypeValidationError, ArrayNotFoundError,
                             MetadataValidationError]


def test_signatures_match_zarr_python() -> None:
    params = inspect.signature(zarrfast.Array.open).parameters
    assert list(params) == ["store", "config"]
    assert params["config"].kind is inspect.Parameter.KEYWORD_ONLY
    for method in (zarrfast.Group.get_array, zarrfast.Group.get_group,
                   AsyncGroup.get_array, AsyncGroup.get_group):
        assert list(inspect.signature(method).parameters) == ["self", "path"]
    params = inspect.signature(AsyncArray.open).parameters
    assert list(params)[:2] == ["store", "zarr_format"] and "config" in params


# -- against zarr-python 3.4.2 --------------------------------------------------------

_PEER_GETTERS = """
import zarr
g = zarr.open_group(ARGS["root"], mode="r")
def outcome(fn, path):
    try:
        node = fn(path)
    except Exception as e:
        return ["error", type(e).__name__]
    kind = "array" if isinstance(node, zarr.Array) else "group"
    return ["ok", f"{kind} {node.path}"]
emit({
    "get_array": {p: outcome(g.get_array, p) for p in ARGS["paths"]},
    "get_group": {p: outcome(g.get_group, p) for p in ARGS["paths"]},
    "array_values": [a.path for a in g["a"].array_values()] + [a.path for a in g.array_values()],
    "group_values": [x.path for x in g["a"].group_values()] + [x.path for x in g.group_values()],
})
"""


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_getters_and_values_match_zarr_python(tmp_path: Path, zarr_peer: Any,
                                              zarr_format: int) -> None:
    root = tmp_path / "h.zarr"
    _hierarchy(root, zarr_format)
    theirs = zarr_peer.run(_PEER_GETTERS, {"root": str(root), "paths": PATHS})
    g = zarrfast.open_group(str(root), mode="r")
    for method in ("get_array", "get_group"):
        ours = {p: _outcome(getattr(g, method), p) for p in PATHS}
        assert ours == theirs[method], method
    assert [a.path for a in g["a"].array_values()] + [a.path for a in g.array_values()] \
        == theirs["array_values"]
    assert [x.path for x in g["a"].group_values()] + [x.path for x in g.group_values()] \
        == theirs["group_values"]


_PEER_OPEN = """
import asyncio, zarr
from zarr.core.array import AsyncArray
from zarr.storage import LocalStore, StorePath
def outcome(fn, *args, **kwargs):
    try:
        a = fn(*args, **kwargs)
    except Exception as e:
        return ["error", type(e).__name__]
    return ["ok", a.path, list(a.shape), a.order, a.metadata.zarr_format]
def open_async(sp, fmt):
    return asyncio.run(AsyncArray.open(sp, zarr_format=fmt))
out = {}
for name, root in ARGS["roots"].items():
    for path in ARGS["paths"]:
        sp = StorePath(LocalStore(root), path)
        out[f"sync {name} {path}"] = outcome(zarr.Array.open, sp)
        out[f"sync-F {name} {path}"] = outcome(zarr.Array.open, sp, config={"order": "F"})
        for fmt in (3, 2, None):
            out[f"async {fmt} {name} {path}"] = outcome(open_async, sp, fmt)
emit(out)
"""


def test_array_open_matches_zarr_python(tmp_path: Path, zarr_peer: Any) -> None:
    roots = {"v3": str(tmp_path / "v3.zarr"), "v2": str(tmp_path / "v2.zarr")}
    _hierarchy(roots["v3"], 3)
    _hierarchy(roots["v2"], 2)
    paths = ["", "x", "a", "a/b", "a/c", "a/c/d", "missing"]
    theirs = zarr_peer.run(_PEER_OPEN, {"roots": roots, "paths": paths})

    def open_async(sp: StorePath, fmt: int | None) -> AsyncArray:
        return asyncio.run(AsyncArray.open(sp, zarr_format=fmt))

    ours = {}
    for name, root in roots.items():
        for path in paths:
            sp = StorePath(LocalStore(root), path)
            ours[f"sync {name} {path}"] = _open_outcome(zarrfast.Array.open, sp)
            ours[f"sync-F {name} {path}"] = _open_outcome(zarrfast.Array.open, sp,
                                                          config={"order": "F"})
            for fmt in (3, 2, None):
                ours[f"async {fmt} {name} {path}"] = _open_outcome(open_async, sp, fmt)
    assert ours == theirs


def test_nmembers_and_zarr_python_attributes_as_zarr_python(zarr_peer, tmp_path) -> None:
    """``Group.nmembers`` (sync, as the async one), and the attributes zarr-python's own
    tests read: ``AsyncArray._zdtype`` (the data type as a ZDType, Zarr v2 too) and
    ``Array._chunk_grid.chunk_shape`` (the stored grid: shards of a sharded array)."""
    root = tmp_path / "h.zarr"
    g = zarrfast.open_group(root, mode="w")
    g.create_group("a").create_group("b").create_array("x", shape=(4,), dtype="i2")
    g.create_array("s", shape=(8,), chunks=(2,), shards=(4,), dtype=">f8")
    v2 = zarrfast.create_array(tmp_path / "v2.zarr", shape=(3,), dtype="S3", zarr_format=2)
    theirs = zarr_peer.run("""
        import zarr
        root, v2 = ARGS
        g = zarr.open_group(root, mode="r")
        emit([[g.nmembers(max_depth=d) for d in (0, 1, None)],
              repr(g["s"].async_array._zdtype), list(g["s"]._chunk_grid.chunk_shape),
              repr(zarr.open_array(v2, mode="r").async_array._zdtype)])
    """, [str(root), str(tmp_path / "v2.zarr")])
    ours = [[g.nmembers(max_depth=d) for d in (0, 1, None)],
            repr(g["s"].async_array._zdtype), list(g["s"]._chunk_grid.chunk_shape),
            repr(v2.async_array._zdtype)]
    # (a v3 big-endian array: zarr-python keeps the endianness it was given, zarrfast
    # the one stored; docs/migrating.md)
    assert ours[0] == theirs[0] and ours[2:] == theirs[2:]
    assert ours[1] == "Float64(endianness='little')"
    assert asyncio.run(g.async_group.nmembers(max_depth=None)) == theirs[0][2]


def test_open_group_use_consolidated_false_drops_it(zarr_peer, tmp_path) -> None:
    """``open_group(use_consolidated=False)``: the group as if it had no consolidated
    metadata (zarr-python 3.4 drops what it read), its members listed from the store."""
    root = tmp_path / "c.zarr"
    g = zarrfast.open_group(root, mode="w")
    g.create_group("g0")
    with pytest.warns(UserWarning):
        zarrfast.consolidate_metadata(root)
    g.create_group("later")  # (not in the consolidated metadata)
    script = """
        import zarr
        out = []
        for flag in (False, None, True):
            g = zarr.open_group(ARGS, mode="r", use_consolidated=flag)
            out.append([g.metadata.consolidated_metadata is None, sorted(g.keys())])
        emit(out)
    """
    theirs = zarr_peer.run(script, str(root))
    ours = []
    for flag in (False, None, True):
        opened = zarrfast.open_group(root, mode="r", use_consolidated=flag)
        ours.append([opened.metadata.consolidated_metadata is None, sorted(opened.keys())])
    assert ours == theirs
    assert theirs[0] == [True, ["g0", "later"]]


_REQUIRE = """
import asyncio


def required(lib):
    out = []
    for exists in (True, False):
        for cfg in (None, {"read_missing_chunks": False},
                    {"order": "F", "write_empty_chunks": True}, {"read_missing_chunks": "yes"}):
            for api in ("sync", "async"):
                g = lib.group({})
                if exists:
                    g.create_array("a", shape=(4,), dtype="uint8")
                try:
                    if api == "sync":
                        a = g.require_array("a", shape=(4,), dtype="uint8", config=cfg)
                    else:
                        a = asyncio.run(g._async_group.require_array(
                            "a", shape=(4,), dtype="uint8", config=cfg))
                    out.append(repr(a.config))
                except ValueError:
                    out.append("ValueError")
    return out
"""


def test_require_array_applies_config_as_zarr_python(zarr_peer) -> None:
    """``require_array(config=...)`` gives the array, existing or new, with that config
    (keys left out: the global configuration's), and refuses a bad one either way."""
    theirs = zarr_peer.run(_REQUIRE + "\nimport zarr\nemit(required(zarr))\n")
    namespace: dict = {}
    exec(_REQUIRE, namespace)
    assert namespace["required"](zarrfast) == theirs


def test_member_array_of_another_format_is_refused_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr
        out = []
        for fmt in (2, 3):
            g = zarr.group({}, zarr_format=fmt)
            try:
                g.zeros(name="a", shape=(4,), zarr_format=5 - fmt)
                out.append(None)
            except ValueError as e:
                out.append(str(e))
            out.append(g.zeros(name="b", shape=(2,), zarr_format=fmt).metadata.zarr_format)
        emit(out)
    """)
    ours = []
    for fmt in (2, 3):
        g = zarrfast.group({}, zarr_format=fmt)
        with pytest.raises(ValueError) as info:
            g.zeros(name="a", shape=(4,), zarr_format=5 - fmt)
        ours += [str(info.value), g.zeros(name="b", shape=(2,), zarr_format=fmt).metadata.zarr_format]
    assert ours == theirs


_DELETE = """
import warnings


def deleting(lib, store):
    warnings.simplefilter("ignore")
    root = lib.create_group(store)
    root.create_group("sub").create_array("b", shape=(4,), chunks=(2,), dtype="i4")
    root.create_array("c", shape=(2,), dtype="i1")
    lib.consolidate_metadata(store)
    group = lib.open_group(store, mode="r+", use_consolidated=True)
    sub = group["sub"]
    del sub["b"]
    out = ["b" in sub, "b" in group["sub"], "sub/b" in group]
    del group["c"]
    out.append("c" in group)
    again = lib.open_group(store, mode="r", use_consolidated=True)
    out.append(sorted(again.metadata.consolidated_metadata.flattened_metadata))
    out.append(sorted(k for k, _ in again.members(max_depth=None)))
    return out
"""


def test_deleting_through_consolidated_metadata_as_zarr_python(zarr_peer, tmp_path) -> None:
    """A member deleted through a group read from consolidated metadata is gone for every
    handle sharing it (the parent's too), and the consolidated metadata stored with the
    group that deletes no longer lists it (a reopened hierarchy does not list deleted
    nodes)."""
    theirs = zarr_peer.run(_DELETE + """
import zarr
emit(deleting(zarr, zarr.storage.LocalStore(ARGS)))
""", str(tmp_path / "theirs"))
    namespace: dict = {}
    exec(_DELETE, namespace)
    ours = namespace["deleting"](zarrfast, zarrfast.storage.LocalStore(tmp_path / "ours"))
    assert ours == theirs == [False, False, False, False, ["sub"], ["sub"]]
