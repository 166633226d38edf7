"""Issue 41, class 5: a misspelled keyword is an error, never ignored.

Every public function and every public method of ``Group`` / ``AsyncGroup`` is called
with a keyword it does not take: it must raise ``TypeError`` naming that keyword, and
leave the directory it was given (and every existing node) exactly as it was -- nothing
created, nothing replaced, nothing opened writable.  The functions are discovered from
``zarrfast.__all__`` and the two API modules, the methods from the classes, so a new
one is covered without editing this file; arguments are made from parameter names
(:data:`ARGUMENTS`), and a required parameter it has no value for fails the test.

Keywords zarr-python 3.4.2 accepts are still accepted (those it ignores with a warning
warn as it does), and a keyword it deprecates warns with its warning.
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


# every keyword zarr-python 3.4.2 names in a function's signature is taken by zarrfast's
_PEER_SIGNATURES = """
import inspect, zarr, zarr.api.synchronous as s
out = {}
for name in s.__all__:
    fn = getattr(s, name)
    if not callable(fn):
        continue
    params = inspect.signature(fn).parameters.values()
    out[name] = [p.name for p in params
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                 and p.default is not p.empty
                 and (p.default is None or isinstance(p.default, (bool, str)))]
for name in ("create_array", "create_group", "require_group", "require_array", "zeros",
             "ones", "empty", "full", "empty_like", "zeros_like", "ones_like", "full_like"):
    for cls in (zarr.Group, zarr.AsyncGroup):
        params = inspect.signature(getattr(cls, name)).parameters.values()
        out[cls.__name__ + "." + name] = [
            p.name for p in params
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is not p.empty
            and (p.default is None or isinstance(p.default, (bool, str)))]
emit(out)
"""


@pytest.fixture(scope="module")
def peer_keywords(zarr_peer: Any) -> dict[str, list[str]]:
    return zarr_peer.run(_PEER_SIGNATURES)


def test_every_keyword_zarr_python_names_is_accepted(tmp_path: Path,
                                                     peer_keywords: dict) -> None:
    """Called with each of zarr-python's keywords at a neutral value (``None``), no
    zarrfast function says "unexpected keyword argument" (other errors are the
    keyword's business)."""
    refused = []
    for qualname, names in peer_keywords.items():
        for i, keyword in enumerate(names):
            place = Place(tmp_path / f"{qualname}.{i}")
            if qualname.startswith("Group."):
                fn = getattr(place.group, qualname.split(".", 1)[1], None)
            elif qualname.startswith("AsyncGroup."):
                fn = getattr(place.group._async_view(), qualname.split(".", 1)[1], None)
            else:
                fn = getattr(zsync, qualname, None)
            if fn is None:
                continue  # (not in zarrfast: copy, copy_all, copy_store)
            filled: set[str] = set()
            args, kwargs = _arguments(fn, place, filled)
            if keyword in filled:
                continue
            kwargs[keyword] = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _run(fn(*args, **kwargs))
            except TypeError as e:
                if "unexpected keyword argument" in str(e) or "multiple values" in str(e):
                    refused.append(f"{qualname}({keyword}=None): {e}")
            except Exception:  # noqa: BLE001 - only the keyword's acceptance is checked here
                pass
    assert not refused, "\n".join(refused)


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
