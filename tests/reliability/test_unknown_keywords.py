"""Issue 41, class 5: a misspelled keyword is an error, never ignored.

Every public function and every public method of ``Group`` / ``AsyncGroup`` is called
with a keyword it does not take: it must raise ``TypeError`` naming that keyword, and
leave the directory it was given (and every existing node) exactly as it was -- nothing
created, nothing replaced, nothing opened writable.  The functions are discovered from
``zarrfast.__all__`` and the two API modules, the methods from the classes, so a new
one is covered without editing this file; arguments are made from parameter names
(:data:`ARGUMENTS`), and a required parameter it has no value for fails the test.

Keywords zarr-python 3.4.2 accepts are still accepted (those it ignores with a warning
warn as it does), and a keyword it deprecates warns with its warning: every keyword in
its functions' and methods' signatures, and those its ``array``, ``open_array``,
``open_like``, ``open`` and ``save_array`` take in ``**kwargs`` and pass on.  The ones
that change what is stored are called with real values, and the files written compared
with zarr-python's.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
import zarrfast.api.asynchronous as zasync
import zarrfast.api.synchronous as zsync
from zarrfast.errors import ZarrRuntimeWarning

BOGUS = "zz_not_a_keyword"


# -- what is public ---------------------------------------------------------------------

def _public_functions() -> list[tuple[str, Any]]:
    found: dict[str, Any] = {}
    for prefix, module in (("sync", zsync), ("async", zasync), ("zarrfast", zarrfast)):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.iscoroutinefunction(obj) or \
                    inspect.isasyncgenfunction(obj):
                if prefix == "zarrfast" and name in zsync.__all__:
                    continue  # (the same function as sync.<name>)
                found[f"{prefix}.{name}"] = obj
    return sorted(found.items())


def _public_methods(cls: type) -> list[str]:
    out = []
    for name in dir(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), property):
            continue
        if callable(getattr(cls, name)):
            out.append(name)
    return out


FUNCTIONS = _public_functions()
GROUP_METHODS = _public_methods(zarrfast.Group)
ASYNC_GROUP_METHODS = _public_methods(zarrfast.AsyncGroup)


# -- calling anything with valid arguments plus one keyword -----------------------------

class Place:
    """A directory with an existing group (``existing/``, holding the array ``a``), and
    the path of a node that does not exist yet (``new.zarr``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.new = str(root / "new.zarr")
        self.group = zarrfast.open_group(str(root / "existing"), mode="w")
        self.array = self.group.create_array("a", shape=(4,), chunks=(2,), dtype="i4")
        self.array[:] = np.arange(4)

    def snapshot(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes()
                for p in sorted(self.root.rglob("*")) if p.is_file()}


#: a value for each required parameter, by its name
ARGUMENTS: dict[str, Any] = {
    "store": lambda pl: pl.new, "src": lambda pl: pl.array, "dst": lambda pl: pl.new,
    "path": lambda pl: pl.new, "shape": (4,), "fill_value": 0, "name": "x",
    "a": lambda pl: pl.array, "grp": lambda pl: pl.group, "data": np.arange(4),
    "arr": np.arange(4), "source": "a", "dest": "b", "new_attributes": {"k": 1},
    "nodes": {}, "key": "a", "member": "a", "value": np.arange(4), "config": {},
    "store_path": lambda pl: pl.new, "default": None, "max_depth": 0,
    "requests": lambda pl: [(pl.array, slice(0, 2))], "selections": [slice(0, 2)],
}
#: values for ``*args``, by its name
VAR_ARGUMENTS: dict[str, tuple] = {"args": (np.arange(4),), "names": ("g1",)}


def _arguments(fn: Any, place: Place, filled: set[str] | None = None) -> tuple[list, dict]:
    """Arguments for ``fn``'s required parameters (and its store); ``filled`` gets
    their names."""
    args: list = []
    kwargs: dict = {}
    filled = set() if filled is None else filled
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            continue
        if p.kind is p.VAR_POSITIONAL:
            args.extend(VAR_ARGUMENTS.get(p.name, ()))
            continue
        if p.default is not p.empty and p.name != "store":
            continue  # (a store is always given: nothing may go anywhere else)
        if p.name not in ARGUMENTS:
            pytest.fail(f"{fn!r}: no value for its required parameter {p.name!r}; "
                        f"add one to ARGUMENTS")
        value = ARGUMENTS[p.name]
        value = value(place) if callable(value) else value
        filled.add(p.name)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not kwargs:
            args.append(value)
        else:
            kwargs[p.name] = value
    return args, kwargs


def _run(result: Any) -> Any:
    """The result of a call; a coroutine is awaited, an asynchronous iterator drained."""
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    if inspect.isasyncgen(result):
        async def drain() -> list:
            return [x async for x in result]
        return asyncio.run(drain())
    return result


def _assert_refused(call: Any, keyword: str, place: Place) -> TypeError:
    before = place.snapshot()
    with pytest.raises(TypeError) as info:
        _run(call())
    assert repr(keyword) in str(info.value), str(info.value)
    assert place.snapshot() == before, "a refused call changed files"
    assert not Path(place.new).exists(), "a refused call created the new node"
    return info.value


# -- every public function, method and coroutine -----------------------------------------

@pytest.mark.parametrize("qualname,fn", FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_a_function_refuses_an_unknown_keyword_and_changes_nothing(
        qualname: str, fn: Any, tmp_path: Path) -> None:
    place = Place(tmp_path)
    args, kwargs = _arguments(fn, place)
    # "r" as the value: what a misspelled ``mode`` would carry (and not an array, which
    # save / save_group take by keyword as members)
    _assert_refused(lambda: fn(*args, **kwargs, **{BOGUS: "r"}), BOGUS, place)


@pytest.mark.parametrize("method", GROUP_METHODS)
def test_a_group_method_refuses_an_unknown_keyword_and_changes_nothing(
        method: str, tmp_path: Path) -> None:
    place = Place(tmp_path)
    bound = getattr(place.group, method)
    args, kwargs = _arguments(bound, place)
    _assert_refused(lambda: bound(*args, **kwargs, **{BOGUS: "r"}), BOGUS, place)


@pytest.mark.parametrize("method", ASYNC_GROUP_METHODS)
def test_an_async_group_method_refuses_an_unknown_keyword_and_changes_nothing(
        method: str, tmp_path: Path) -> None:
    place = Place(tmp_path)
    bound = getattr(place.group._async_view(), method)
    args, kwargs = _arguments(bound, place)
    _assert_refused(lambda: bound(*args, **kwargs, **{BOGUS: "r"}), BOGUS, place)


# -- the misspellings of the issue ---------------------------------------------------------

def test_open_group_with_mdoe_opens_nothing_and_suggests_mode(tmp_path: Path) -> None:
    place = Place(tmp_path)
    err = _assert_refused(lambda: zarrfast.open_group(place.new, mdoe="r"), "mdoe", place)
    assert str(err).startswith("open_group() got an unexpected keyword argument 'mdoe'")
    assert "did you mean 'mode'?" in str(err)
    # an existing group is not opened (writable or not) either
    existing = str(tmp_path / "existing")
    _assert_refused(lambda: zarrfast.open_group(existing, mdoe="r"), "mdoe", place)
    _assert_refused(lambda: zasync.open_group(existing, mdoe="r"), "mdoe", place)


@pytest.mark.parametrize("fn", [zarrfast.zeros, zarrfast.ones, zarrfast.empty, zarrfast.create])
def test_zeros_with_chuncks_suggests_chunks(fn: Any, tmp_path: Path) -> None:
    place = Place(tmp_path)
    err = _assert_refused(lambda: fn((8,), chuncks=(2,), store=place.new), "chuncks", place)
    assert f"{fn.__name__}() got an unexpected keyword argument 'chuncks'" in str(err)
    assert "did you mean 'chunks'?" in str(err)


def test_open_array_with_pth_names_pth_not_the_root(tmp_path: Path) -> None:
    """``pth`` was taken for nothing: the store's root array opened (or, with none there,
    an error about the root)."""
    place = Place(tmp_path)
    root = zarrfast.create_array(str(tmp_path / "rooted"), shape=(2,), dtype="u1")
    root[:] = 7
    err = _assert_refused(lambda: zarrfast.open_array(str(tmp_path / "rooted"), pth="x"),
                          "pth", place)
    assert "did you mean 'path'?" in str(err)


def test_save_group_with_a_misspelled_keyword_keeps_the_existing_group(tmp_path: Path
                                                                       ) -> None:
    """``save_group``'s keywords are member arrays (as in zarr-python): a keyword that is
    not an array is refused, as zarr-python does, before the existing group is replaced."""
    place = Place(tmp_path)
    existing = str(tmp_path / "existing")
    _assert_refused(lambda: zarrfast.save_group(existing, np.arange(3), zarr_fromat=2),
                    "zarr_fromat", place)
    _assert_refused(lambda: zarrfast.save(existing, np.arange(3), pth="x"), "pth", place)
    assert zarrfast.open_array(existing, path="a", mode="r")[:].tolist() == [0, 1, 2, 3]


def test_dask_from_zarr_refuses_a_misspelled_keyword_with_an_array(tmp_path: Path) -> None:
    pytest.importorskip("dask.array")
    from zarrfast.dask import from_zarr

    place = Place(tmp_path)
    _assert_refused(lambda: from_zarr(place.array, chunk=(2,)), "chunk", place)
    _assert_refused(lambda: from_zarr(str(tmp_path / "existing"), component="a", mdoe="r+"),
                    "mdoe", place)


# -- what zarr-python accepts is still accepted ---------------------------------------------

#: the keywords zarr-python 3.4.2 takes and ignores, warning "<name> is not yet implemented"
IGNORED = {
    "open_group": ["cache_attrs", "synchronizer", "chunk_store", "meta_array"],
    "group": ["cache_attrs", "synchronizer", "chunk_store", "meta_array"],
    "create": ["synchronizer", "chunk_store", "cache_metadata", "cache_attrs", "meta_array"],
}
# (``read_only`` and ``object_codec``, which zarr-python's ``create`` ignores too, are used)
_IGNORED_CASES = [(f, k) for f, ks in IGNORED.items() for k in ks]

_PEER_WARNINGS = """
import warnings, zarr, zarr.storage
out = {}
for i, (fn, kw) in enumerate(ARGS["cases"]):
    store = zarr.storage.MemoryStore()
    value = True
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if fn == "create":
            zarr.create((4,), store=store, **{kw: value})
        else:
            getattr(zarr, fn)(store=store, **{kw: value})
    out[f"{fn}.{kw}"] = [(type(w.message).__name__, str(w.message)) for w in seen]
emit(out)
"""


@pytest.fixture(scope="module")
def peer_warnings(zarr_peer: Any) -> dict[str, list]:
    return zarr_peer.run(_PEER_WARNINGS, {"cases": _IGNORED_CASES})


@pytest.mark.parametrize("fn,keyword", _IGNORED_CASES, ids=[f"{f}.{k}" for f, k in _IGNORED_CASES])
def test_a_keyword_zarr_python_ignores_is_accepted_with_its_warning(
        fn: str, keyword: str, tmp_path: Path, peer_warnings: dict) -> None:
    value: Any = True
    target = str(tmp_path / "n.zarr")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if fn == "create":
            node = zarrfast.create((4,), store=target, **{keyword: value})
        else:
            node = getattr(zarrfast, fn)(target, **{keyword: value})
    assert Path(target, "zarr.json").exists() and node is not None
    expected = [tuple(m) for m in peer_warnings[f"{fn}.{keyword}"] if keyword in m[1]]
    assert expected, f"zarr-python gave no warning naming {keyword!r}"
    got = [(type(w.message).__name__, str(w.message)) for w in seen
           if issubclass(w.category, ZarrRuntimeWarning)]
    assert got == expected
    # pointing at the caller, as zarr-python's does
    assert [w.filename for w in seen if issubclass(w.category, ZarrRuntimeWarning)] == \
        [__file__]


_DEPRECATED = """
import warnings, zarr, zarr.storage
out = {}
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    zarr.create((4,), store=zarr.storage.MemoryStore(), write_empty_chunks=True)
out["create"] = [(type(w.message).__name__, str(w.message)) for w in seen]
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    zarr.open_array(store=zarr.storage.MemoryStore(), mode="a", shape=(4,),
                    write_empty_chunks=True)
out["open_array"] = [(type(w.message).__name__, str(w.message)) for w in seen]
emit(out)
"""


@pytest.mark.parametrize("fn", ["create", "open_array"])
def test_write_empty_chunks_is_accepted_with_zarr_pythons_deprecation_warning(
        fn: str, tmp_path: Path, zarr_peer: Any) -> None:
    expected = [m for m in zarr_peer.run(_DEPRECATED)[fn] if "write_empty_chunks" in m[1]]
    assert expected and all(kind == "ZarrRuntimeWarning" for kind, _ in expected)
    target = str(tmp_path / "n.zarr")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if fn == "create":
            a = zarrfast.create((4,), chunks=(2,), fill_value=0, dtype="i4", store=target,
                                write_empty_chunks=True)
        else:
            a = zarrfast.open_array(target, shape=(4,), chunks=(2,), fill_value=0, dtype="i4",
                                    write_empty_chunks=True)
    got = [(type(w.message).__name__, str(w.message)) for w in seen
           if "write_empty_chunks" in str(w.message)]
    assert {w.filename for w in seen if "write_empty_chunks" in str(w.message)} == {__file__}
    # (the same warning: zarr-python's open_array gives it twice, once more from create)
    assert got and set(got) == {tuple(m) for m in expected}
    a[:] = 0  # all fill: written all the same, as asked
    assert len([p for p in Path(target).rglob("*") if p.is_file()]) == 3


def test_create_writes_data_given_to_it(tmp_path: Path) -> None:
    """zarr-python's ``create(..., data=...)`` writes ``data``; zarrfast took it (with any
    other name) and wrote nothing."""
    a = zarrfast.create((3,), dtype="i4", store=str(tmp_path / "d.zarr"),
                        data=np.array([1, 2, 3]))
    assert a[:].tolist() == [1, 2, 3]
    assert zarrfast.open_array(str(tmp_path / "d.zarr"), mode="r")[:].tolist() == [1, 2, 3]


def test_create_with_mode_w_replaces_and_mode_r_refuses(tmp_path: Path) -> None:
    """zarr-python's ``create(..., mode=)``: ``"w"`` replaces an existing node, ``"r"`` opens
    the store read-only (so creating fails); zarrfast ignored ``mode``."""
    target = str(tmp_path / "m.zarr")
    zarrfast.create((3,), dtype="i4", store=target)
    a = zarrfast.create((5,), dtype="i4", store=target, mode="w")
    assert a.shape == (5,)
    with pytest.raises(Exception) as info:
        zarrfast.create((7,), dtype="i4", store=str(tmp_path / "ro.zarr"), mode="r")
    assert not isinstance(info.value, TypeError)
    assert not Path(tmp_path / "ro.zarr", "zarr.json").exists()
    assert zarrfast.open_array(target, mode="r").shape == (5,)


# every keyword zarr-python 3.4.2 takes is taken by zarrfast's function of that name: the
# keywords each function names in its signature, and the ones it takes in ``**kwargs`` and
# passes on (``array``, ``open_array``, ``open_like`` and ``open`` to ``create``,
# ``save_array`` to ``AsyncArray._create`` with ``mode`` and ``overwrite``); each keyword
# with its default where that is JSON, else ``None``
_PEER_SIGNATURES = """
import inspect, json, zarr, zarr.api.synchronous as s, zarr.api.asynchronous as a
from zarr.core.array import AsyncArray

def value(p):
    try:
        json.dumps(p.default)
        return p.default
    except TypeError:
        return None

def keywords(fn, exclude=()):
    return [[p.name, value(p)] for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is not p.empty and p.name not in exclude]

out = {}
for name in s.__all__:
    fn = getattr(s, name)
    if callable(fn):
        out[name] = keywords(fn)
for cls in (zarr.Group, zarr.AsyncGroup):
    for name in dir(cls):
        fn = getattr(cls, name)
        if not name.startswith("_") and callable(fn) and inspect.isfunction(fn):
            out[cls.__name__ + "." + name] = keywords(fn)
# what **kwargs takes and passes on
create = keywords(a.create, exclude=("shape",))
out["array[create]"] = create
for name in ("open_array", "open_like", "open"):  # (they give overwrite themselves)
    own = {k for k, _ in out[name]} | {"overwrite"}
    out[name + "[create]"] = [kv for kv in create if kv[0] not in own]
out["save_array[create]"] = keywords(
    AsyncArray._create, exclude=("shape", "dtype", "chunks", "zarr_format")
) + [["mode", "a"]]
# the parameters without a default, which a caller may name too
required = {}
for cls in (zarr.Group, zarr.AsyncGroup):
    for name in dir(cls):
        fn = getattr(cls, name)
        if not name.startswith("_") and callable(fn) and inspect.isfunction(fn):
            required[cls.__name__ + "." + name] = [
                p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty and p.name != "self"]
emit({"optional": out, "required": required})
"""

#: arguments for calling with the keywords ``**kwargs`` passes on, by the sweep's name
_PASSED_ON: dict[str, tuple[str, dict[str, Any]]] = {
    "array[create]": ("array", {}),
    "open_array[create]": ("open_array", {"shape": (4,), "dtype": "i4", "mode": "w"}),
    "open_like[create]": ("open_like", {"mode": "w"}),
    "open[create]": ("open", {"shape": (4,), "dtype": "i4", "mode": "w"}),
    "save_array[create]": ("save_array", {}),
}


@pytest.fixture(scope="module")
def peer_keywords(zarr_peer: Any) -> dict[str, dict[str, list]]:
    return zarr_peer.run(_PEER_SIGNATURES)


def test_every_keyword_zarr_python_names_is_accepted(tmp_path: Path,
                                                     peer_keywords: dict) -> None:
    """Called with each of zarr-python's keywords at a neutral value (its default, or
    ``None``), no zarrfast function or method says "unexpected keyword argument" (other
    errors are the keyword's business)."""
    refused = []
    swept = set()
    for qualname, pairs in peer_keywords["optional"].items():
        target, extra = _PASSED_ON.get(qualname, (qualname, {}))
        for i, (keyword, value) in enumerate(pairs):
            place = Place(tmp_path / f"{qualname}.{i}")
            if target.startswith("Group."):
                fn = getattr(place.group, target.split(".", 1)[1], None)
            elif target.startswith("AsyncGroup."):
                fn = getattr(place.group._async_view(), target.split(".", 1)[1], None)
            else:
                fn = getattr(zsync, target, None)
            if fn is None:
                continue  # (not in zarrfast: copy, copy_all, copy_store, Group.nmembers...)
            filled: set[str] = set()
            args, kwargs = _arguments(fn, place, filled)
            if keyword in filled or keyword in extra:
                continue
            kwargs = {**kwargs, **extra, keyword: value}
            swept.add(f"{qualname}({keyword})")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _run(fn(*args, **kwargs))
            except TypeError as e:
                if "unexpected keyword argument" in str(e) or "multiple values" in str(e):
                    refused.append(f"{target}({keyword}={value!r}): {e}")
            except Exception:  # noqa: BLE001 - only the keyword's acceptance is checked here
                pass
    assert not refused, "\n".join(refused)
    # (the sweep reaches what **kwargs passes on, and methods beyond the creating ones)
    for seen in ("array[create](dimension_separator)", "save_array[create](chunk_shape)",
                 "open_array[create](read_only)", "Group.members(use_consolidated_for_children)",
                 "AsyncGroup.tree(max_nodes)", "Group.get(default)"):
        assert seen in swept, seen


def test_every_required_parameter_has_zarr_pythons_name(peer_keywords: dict) -> None:
    """A caller may name a required parameter too (``group.get(path="a")``): zarrfast's
    ``Group`` and ``AsyncGroup`` methods call each one as zarr-python does."""
    differ = []
    for qualname, names in peer_keywords["required"].items():
        cls, method = qualname.split(".", 1)
        fn = getattr(getattr(zarrfast, cls), method, None)
        if fn is None:
            continue
        params = inspect.signature(fn).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue  # (checked by calling, above)
        missing = [n for n in names if n not in params]
        if missing:
            differ.append(f"{qualname}: zarr-python's {missing}, zarrfast's {list(params)}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("fn", ["open_array", "open"])
@pytest.mark.parametrize("mode", ["w", "a"])
def test_open_creates_the_zarr_format_asked_for(fn: str, mode: str, tmp_path: Path) -> None:
    """``zarr_format=2`` was used to read only: a new array was v3 all the same."""
    target = tmp_path / "f.zarr"
    a = getattr(zarrfast, fn)(str(target), mode=mode, shape=(4,), dtype="i4", zarr_format=2)
    assert a.zarr_format == 2
    assert (target / ".zarray").exists() and not (target / "zarr.json").exists()


def test_open_refuses_name_as_zarr_python_does(tmp_path: Path) -> None:
    """``open`` takes ``path``; ``name`` reached an internal function and was refused in
    its name (``create_array_at() got an unexpected keyword argument``)."""
    place = Place(tmp_path)
    err = _assert_refused(lambda: zarrfast.open(place.new, mode="w", shape=(4,), name="x"),
                          "name", place)
    assert str(err).startswith("open()")


def test_create_array_member_takes_empty_storage_options(tmp_path: Path) -> None:
    """zarr-python takes ``storage_options`` that are ``None`` or empty here."""
    group = Place(tmp_path).group
    assert group.create_array("s", shape=(2,), dtype="i1", storage_options={}).shape == (2,)


def test_open_array_creates_with_zarr_pythons_older_create_keywords(tmp_path: Path) -> None:
    """zarr-python's ``open_array`` creates through its older ``create``: its keywords
    (here ``dimension_separator``) are used, not refused."""
    target = tmp_path / "s.zarr"
    a = zarrfast.open_array(str(target), mode="w", shape=(4, 4), chunks=(2, 2), dtype="i4",
                            zarr_format=2, dimension_separator="/")
    a[:] = 1
    assert (target / "1" / "1").is_file() and not (target / "1.1").exists()
    assert '"dimension_separator": "/"' in (target / ".zarray").read_text()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_require_array_refuses_a_misspelling_when_the_array_exists(asynchronous: bool,
                                                                  tmp_path: Path) -> None:
    """The keywords of ``require_array`` were looked at only to create: with the array
    there, any name was taken."""
    place = Place(tmp_path)
    group = place.group._async_view() if asynchronous else place.group
    err = _assert_refused(lambda: group.require_array("a", shape=(4,), chuncks=(2,)),
                          "chuncks", place)
    assert "did you mean 'chunks'?" in str(err)


# -- the keywords taken with real values: what is stored is what zarr-python stores --------

_BIG_ENDIAN_GZIP = [{"name": "bytes", "configuration": {"endian": "big"}},
                    {"name": "gzip", "configuration": {"level": 1}}]
_D8 = list(range(8))
_D24 = [[0, 1, 2, 3], [4, 5, 6, 7]]
#: ``[function, directory, data, keywords]``, run in order by zarr-python 3.4.2 and by
#: zarrfast in directories of their own (a directory named twice: the later call meets
#: what the earlier one wrote)
_WRITES: list[list[Any]] = [
    ["array", "a_sep", _D24, {"dimension_separator": "/", "zarr_format": 2, "chunks": [1, 2]}],
    ["array", "a_sep_dot", _D24, {"dimension_separator": ".", "zarr_format": 2,
                                  "chunks": [1, 2]}],
    ["array", "a_wec", [0, 0, 0, 0], {"write_empty_chunks": True, "chunks": [2]}],
    ["array", "a_wec_off", [0, 0, 5, 0], {"write_empty_chunks": False, "chunks": [2]}],
    ["array", "a_chunk_shape", _D8, {"chunk_shape": [2]}],
    ["array", "a_chunk_shape_v2", _D8, {"chunk_shape": [4], "zarr_format": 2}],
    ["array", "a_chunk_shape_and_chunks", _D8, {"chunk_shape": [4], "chunks": [2]}],
    ["array", "a_codecs", _D8, {"codecs": _BIG_ENDIAN_GZIP, "chunks": [4]}],
    ["array", "a_codecs_v2", _D8, {"codecs": _BIG_ENDIAN_GZIP, "zarr_format": 2}],
    ["array", "a_ignored", _D8, {"synchronizer": True, "chunk_store": True,
                                 "cache_metadata": True, "cache_attrs": True,
                                 "meta_array": True}],
    ["array", "a_read_only_false", _D8, {"read_only": False}],
    ["array", "a_read_only_true", _D8, {"read_only": True}],
    ["array", "a_mode", _D8, {}],
    ["array", "a_mode", _D8[:4], {}],
    ["array", "a_mode", _D8[:4], {"mode": "a"}],
    ["array", "a_mode", _D8[:3], {"mode": "w"}],
    ["array", "a_mode", _D8[:2], {"mode": "w-"}],
    ["array", "a_mode", _D8[:2], {"mode": "w-", "overwrite": True}],
    ["array", "a_mode_r", _D8, {"mode": "r"}],
    ["save_array", "s_chunk_shape", _D8, {"chunk_shape": [2]}],
    ["save_array", "s_codecs", _D8, {"codecs": _BIG_ENDIAN_GZIP}],
    ["save_array", "s_sep", _D24, {"dimension_separator": "/", "zarr_format": 2,
                                   "chunk_shape": [1, 2]}],
    ["save_array", "s_mode", _D8, {}],
    ["save_array", "s_mode", _D8[:4], {}],
    ["save_array", "s_mode", _D8[:4], {"overwrite": True}],
    ["save_array", "s_mode", _D8[:3], {"mode": "w"}],
    ["save_array", "s_mode", _D8[:2], {"mode": "w-"}],
    ["save_array", "s_mode", _D8[:2], {"mode": "w", "overwrite": False}],
    ["save_array", "s_mode", _D8[:1], {"mode": "a"}],
    ["save_array", "s_mode_r", _D8, {"mode": "r"}],
    ["save_array", "s_data", _D8, {"data": 0}],
]

_RUN_WRITES = """
import os, warnings
import numpy as np
import zarr

def run(zarr, root, steps):
    out = []
    for fn, rel, data, kwargs in steps:
        data = np.asarray(data, dtype="i4")
        target = os.path.join(root, rel)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                if fn == "array":
                    zarr.array(data, store=target, **kwargs)
                else:
                    zarr.save_array(target, data, **kwargs)
                result = "ok"
            except Exception as e:  # (which error is compared apart)
                result = "error"
        out.append([result, sorted({str(w.message) for w in seen
                                    if w.category.__name__ == "ZarrRuntimeWarning"})])
    return out
"""


def _tree(root: Path) -> dict[str, Any]:
    """Every file below ``root``: metadata documents parsed, chunks as present."""
    import json

    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(root))
            out[rel] = json.loads(p.read_text()) if p.name in (
                "zarr.json", ".zarray", ".zattrs", ".zgroup") else "chunk"
    return out


@pytest.fixture(scope="module")
def peer_writes(zarr_peer: Any, tmp_path_factory: pytest.TempPathFactory
                ) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("peer_writes")
    results = zarr_peer.run(_RUN_WRITES + "\nemit(run(zarr, ARGS['root'], ARGS['steps']))\n",
                            {"root": str(root), "steps": _WRITES})
    return root, results


@pytest.mark.parametrize("fn", ["array", "save_array"])
def test_older_create_keywords_store_what_zarr_python_stores(
        fn: str, tmp_path: Path, peer_writes: tuple[Path, list]) -> None:
    """``array`` and ``save_array`` with zarr-python's older ``create`` keywords
    (``dimension_separator``, ``write_empty_chunks``, ``chunk_shape``, ``codecs``), the
    ones it ignores, ``read_only``, ``mode`` and ``overwrite``: each call succeeds or fails
    as zarr-python's does, with its warnings, and leaves the same files (metadata equal
    as JSON, the same chunk keys) holding the same values.  zarrfast refused every one of
    these keywords."""
    peer_root, peer_results = peer_writes
    ours = tmp_path / "ours"
    ours.mkdir()
    namespace: dict[str, Any] = {}
    exec(_RUN_WRITES.replace("import zarr\n", ""), namespace)  # noqa: S102 - the same driver
    steps = [s for s in _WRITES if s[0] == fn]
    peer = [r for s, r in zip(_WRITES, peer_results, strict=True) if s[0] == fn]
    got = namespace["run"](zarrfast, str(ours), steps)
    for step, mine, theirs in zip(steps, got, peer, strict=True):
        assert mine == theirs, f"{step}: zarrfast {mine}, zarr-python {theirs}"
    for rel in sorted({s[1] for s in steps}):
        mine_tree, theirs_tree = _tree(ours / rel), _tree(peer_root / rel)
        assert mine_tree == theirs_tree, rel
        if any(name in ("zarr.json", ".zarray") for name in mine_tree):
            np.testing.assert_array_equal(zarrfast.open_array(str(ours / rel), mode="r")[...],
                                          zarrfast.open_array(str(peer_root / rel),
                                                              mode="r")[...])


def test_save_array_keeps_an_existing_array_unless_asked_to_replace_it(tmp_path: Path
                                                                       ) -> None:
    """zarr-python's ``save_array`` (mode ``'a'``) refuses to replace an existing array;
    zarrfast's replaced it without a word.  ``overwrite=True`` or ``mode='w'`` replace."""
    target = str(tmp_path / "s.zarr")
    zarrfast.save_array(target, np.arange(8))
    with pytest.raises(zarrfast.errors.ContainsArrayError):
        zarrfast.save_array(target, np.zeros(3))
    with pytest.raises(zarrfast.errors.ContainsArrayError):
        zarrfast.save(target, np.zeros(3))
    assert zarrfast.load(target).tolist() == list(range(8))
    zarrfast.save_array(target, np.ones(2), mode="w")
    assert zarrfast.load(target).tolist() == [1, 1]


@pytest.mark.parametrize("how", ["open_array", "open", "open_like"])
def test_read_only_opens_an_array_that_refuses_writes(how: str, tmp_path: Path) -> None:
    """``read_only=True`` (which zarr-python takes, and ignores) gives an array that
    refuses writes, whether it was there or is created; zarrfast refused the keyword."""
    existing = tmp_path / "e.zarr"
    zarrfast.create_array(str(existing), shape=(4,), chunks=(2,), dtype="i4")[:] = 7
    if how == "open_like":
        like = zarrfast.open_array(str(existing), mode="r")
        opened = zarrfast.open_like(like, str(existing), read_only=True)
        created = zarrfast.open_like(like, str(tmp_path / "n.zarr"), read_only=True)
        writable = zarrfast.open_like(like, str(existing), read_only=False)
    else:
        fn = getattr(zarrfast, how)
        opened = fn(str(existing), read_only=True)
        created = fn(str(tmp_path / "n.zarr"), mode="w", shape=(4,), dtype="i4",
                     read_only=True)
        writable = fn(str(existing), read_only=False)
    for a in (opened, created):
        assert a.read_only
        with pytest.raises(Exception) as info:
            a[:] = 1
        assert not isinstance(info.value, TypeError)
    assert zarrfast.open_array(str(existing), mode="r")[:].tolist() == [7, 7, 7, 7]
    assert Path(tmp_path / "n.zarr" / "zarr.json").is_file()
    assert zarrfast.open_array(str(tmp_path / "n.zarr"), mode="r")[:].tolist() == [0] * 4
    assert not writable.read_only
    writable[:2] = 1
    assert zarrfast.open_array(str(existing), mode="r")[:].tolist() == [1, 1, 7, 7]
    if how == "open":  # a group: zarr-python's open passes read_only to open_group, which
        # refuses it; so does zarrfast's, before anything is created
        place = Place(tmp_path / "groups")
        _assert_refused(lambda: zarrfast.open(place.new, read_only=True), "read_only", place)
        _assert_refused(lambda: zarrfast.open(str(tmp_path / "groups" / "existing"),
                                              read_only=True), "read_only", place)


def test_open_like_takes_the_store_for_its_path(tmp_path: Path) -> None:
    """zarr-python's ``open_like(a, path, store=...)`` opens ``path`` in ``store`` (its
    ``open_array`` takes ``store``); zarrfast refused ``store``."""
    like = zarrfast.create_array({}, shape=(3,), dtype="u2")
    a = zarrfast.open_like(like, "x/y", store=str(tmp_path / "st.zarr"), mode="w")
    assert a.path == "x/y" and (tmp_path / "st.zarr" / "x" / "y" / "zarr.json").is_file()


_CONSOLIDATED_CHILD = """
import zarr
g = zarr.open_group(ARGS["root"], mode="w")
sub = g.create_group("sub")
sub.create_array("a", shape=(2,), dtype="i1")
zarr.consolidate_metadata(ARGS["root"], path="sub")
g = zarr.open_group(ARGS["root"], mode="r", use_consolidated=False)

async def listing(flag):
    # (AsyncGroup's: zarr-python's Group.members takes the keyword but does not pass it on)
    return {k: v.metadata.consolidated_metadata is None async for k, v in
            g._async_group.members(max_depth=None, use_consolidated_for_children=flag)
            if isinstance(v, zarr.AsyncGroup)}

import asyncio
emit({str(flag): asyncio.run(listing(flag)) for flag in (True, False)})
"""


@pytest.mark.parametrize("asynchronous", [False, True])
def test_members_use_consolidated_for_children_as_zarr_python(
        asynchronous: bool, tmp_path: Path, zarr_peer: Any) -> None:
    """``members(use_consolidated_for_children=False)``: a member group comes without the
    consolidated metadata it holds, as from zarr-python's ``AsyncGroup.members`` (a group
    zarr-python wrote; its ``Group.members`` takes the keyword and drops it); zarrfast
    refused the keyword."""
    root = tmp_path / "h.zarr"
    expected = zarr_peer.run(_CONSOLIDATED_CHILD, {"root": str(root)})
    g = zarrfast.open_group(str(root), mode="r", use_consolidated=False)
    got = {}
    for flag in (True, False):
        if asynchronous:
            async def listing(flag: bool = flag) -> list:
                return [kv async for kv in g._async_view().members(
                    max_depth=None, use_consolidated_for_children=flag)]
            members = asyncio.run(listing())
        else:
            members = g.members(max_depth=None, use_consolidated_for_children=flag)
        got[str(flag)] = {k: v.metadata.consolidated_metadata is None for k, v in members
                          if hasattr(v, "members")}
    assert got == expected == {"True": {"sub": False}, "False": {"sub": True}}


def test_group_get_takes_path_by_name(tmp_path: Path) -> None:
    """zarr-python's ``Group.get(path, default)``; zarrfast named it ``name``."""
    group = Place(tmp_path).group
    assert group.get(path="a").shape == (4,)
    assert group.get(path="missing", default=5) == 5


_PLAIN_TREE = """
import zarr
g = zarr.open_group(ARGS["root"], mode="w")
g.create_array("a", shape=(2,), dtype="i1")
g.create_group("s").create_array("b", shape=(3,), dtype="f4")
emit([str(g.tree(max_nodes=n, plain=True)) for n in (1, 2, 500)])
"""


def test_async_group_tree_takes_max_nodes_and_plain(tmp_path: Path, zarr_peer: Any) -> None:
    """``AsyncGroup.tree(max_nodes=, plain=)`` as zarr-python's (``Group.tree`` took them,
    ``AsyncGroup.tree`` refused them)."""
    root = tmp_path / "t.zarr"
    expected = zarr_peer.run(_PLAIN_TREE, {"root": str(root)})
    group = zarrfast.open_group(str(root), mode="r")
    got = [str(asyncio.run(group._async_view().tree(max_nodes=n, plain=True)))
           for n in (1, 2, 500)]
    assert got == [str(group.tree(max_nodes=n, plain=True)) for n in (1, 2, 500)]
    # the whole tree as zarr-python draws it; cut short where it cuts it (which members
    # come first there depends on which reads finish first)
    assert got[2] == expected[2]
    for mine, theirs in zip(got[:2], expected[:2], strict=True):
        assert mine.splitlines()[:2] == theirs.splitlines()[:2]
        assert len(mine.splitlines()) == len(theirs.splitlines())
