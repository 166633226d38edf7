"""``make_store_path(store_like, path=..., mode=...)`` opens the path as zarr-python 3's
does (``StorePath.open``): ``"r"`` read-only, ``"r+"`` and ``"a"`` change nothing,
``"w"`` deletes every key below the path, ``"w-"`` refuses a path with keys below it and
deletes nothing; a ``StorePath`` given is only made read-only by ``"r"``.

Deleting is what matters here: each test checks which keys are left, and the same
scenarios run against zarr-python's ``make_store_path`` to compare.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from zarrfast.errors import InvalidNodeNameError, ReadOnlyError, ZarrfastError
from zarrfast.storage import LocalStore, MemoryStore, StorePath, make_store_path, store_path_of

KEYS = ["g", "g/zarr.json", "g/c/0", "gx/k", "other/zarr.json"]
LOCAL_KEYS = KEYS[1:]  # (a file "g" and a directory "g" cannot both be)
BELOW_G = {"g/zarr.json", "g/c/0"}


def run(coro):
    return asyncio.run(coro)


def memory_store() -> MemoryStore:
    store = MemoryStore()
    for key in KEYS:
        store.set(key, b"x")
    return store


# -- modes that never delete ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["r", "r+", "a", None])
@pytest.mark.parametrize("path", ["g", "", "missing"])
def test_modes_that_keep_every_key(mode, path):
    store = memory_store()
    sp = run(make_store_path(store, path=path, mode=mode))
    assert sorted(store.list()) == sorted(KEYS)
    assert sp.path == path and sp.store == store
    assert sp.read_only is (mode == "r") and not store.read_only


@pytest.mark.parametrize("mode", ["r+", "a"])
def test_r_plus_and_a_never_delete_files(tmp_path, mode):
    root = tmp_path / "data.zarr"
    store = LocalStore(root)
    for key in LOCAL_KEYS:
        store.set(key, b"x")
    for path in ("g", ""):
        sp = run(make_store_path(str(root), path=path, mode=mode))
        assert not sp.read_only
    assert sorted(store.list()) == sorted(LOCAL_KEYS)


# -- "w-" -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["g", ""])
def test_w_minus_refuses_a_non_empty_path_and_deletes_nothing(path):
    store = memory_store()
    with pytest.raises(FileExistsError):
        run(make_store_path(store, path=path, mode="w-"))
    assert sorted(store.list()) == sorted(KEYS)


def test_w_minus_refuses_a_non_empty_directory_and_deletes_nothing(tmp_path):
    store = LocalStore(tmp_path)
    for key in LOCAL_KEYS:
        store.set(key, b"x")
    for path in ("g", ""):
        with pytest.raises(FileExistsError):
            run(make_store_path(str(tmp_path), path=path, mode="w-"))
    assert sorted(store.list()) == sorted(LOCAL_KEYS)


def test_w_minus_takes_an_empty_path():
    store = memory_store()
    # "g" as a key and "gx/..." are not below "h" (nor is a key equal to the path)
    for path in ("h", "g/c/0", "new/deeper"):
        assert run(make_store_path(store, path=path, mode="w-")).path == path
    assert sorted(store.list()) == sorted(KEYS)


# -- "w" ------------------------------------------------------------------------------------


def test_w_deletes_exactly_the_keys_below_the_path():
    store = memory_store()
    sp = run(make_store_path(store, path="g", mode="w"))
    assert sp.path == "g" and not sp.read_only
    assert sorted(store.list()) == sorted(set(KEYS) - BELOW_G)  # "g", "gx/k" stay


def test_w_deletes_exactly_the_files_below_the_path(tmp_path):
    store = LocalStore(tmp_path / "data.zarr")
    for key in LOCAL_KEYS:
        store.set(key, b"x")
    (tmp_path / "beside").write_bytes(b"keep")
    run(make_store_path(str(tmp_path / "data.zarr"), path="g", mode="w"))
    assert sorted(store.list()) == ["gx/k", "other/zarr.json"]
    assert (tmp_path / "beside").read_bytes() == b"keep"


def test_w_at_the_root_deletes_the_store_s_keys_only(tmp_path):
    store = memory_store()
    run(make_store_path(store, mode="w"))
    assert list(store.list()) == []
    held = {"a/zarr.json": b"x"}
    run(make_store_path(held, mode="w"))
    assert held == {}


def test_w_of_a_dict_deletes_below_the_path():
    held = {"g/zarr.json": b"x", "gx/k": b"x"}
    sp = run(make_store_path(held, path="g", mode="w"))
    assert held == {"gx/k": b"x"} and not sp.read_only


# -- read-only stores -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["r+", "a", "w", "w-"])
def test_writing_modes_refuse_a_read_only_store_and_delete_nothing(mode):
    store = memory_store()
    with pytest.raises(ReadOnlyError) as info:
        run(make_store_path(store.with_read_only(), path="g", mode=mode))
    assert isinstance(info.value, ValueError)  # zarr-python raises ValueError
    assert sorted(store.list()) == sorted(KEYS)


def test_mode_r_of_a_read_only_store():
    ro = memory_store().with_read_only()
    sp = run(make_store_path(ro, path="g", mode="r"))
    assert sp.store is ro


# -- a StorePath given: as zarr-python, only "r" applies --------------------------------------


@pytest.mark.parametrize("mode", ["r+", "a", "w", "w-", None])
def test_a_store_path_given_is_not_changed_by_the_mode(mode):
    store = memory_store()
    sp = run(make_store_path(StorePath(store, "g"), path="c", mode=mode))
    assert sp == StorePath(store, "g/c") and not sp.read_only
    assert sorted(store.list()) == sorted(KEYS)


def test_a_store_path_given_with_mode_r():
    store = memory_store()
    sp = run(make_store_path(StorePath(store), path="g", mode="r"))
    assert sp.read_only and sp.path == "g" and sorted(store.list()) == sorted(KEYS)


# -- local directories, paths, modes ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_missing_local_directory_with_r_or_r_plus(tmp_path, mode):
    with pytest.raises(FileNotFoundError, match="missing"):
        run(make_store_path(str(tmp_path / "missing"), mode=mode))
    assert not os.path.exists(tmp_path / "missing")


@pytest.mark.parametrize("mode", ["a", "w", "w-", None])
def test_missing_local_directory_with_other_modes(tmp_path, mode):
    sp = run(make_store_path(tmp_path / "missing", path="g", mode=mode))
    assert sp.store == LocalStore(tmp_path / "missing") and sp.path == "g"


def test_path_is_normalized_and_dot_names_refused():
    store = memory_store()
    assert run(make_store_path(store, path="/g//c/", mode="a")).path == "g/c"
    assert run(make_store_path(store, path=None)).path == ""
    for bad in ("g/..", "..", "g/./c"):
        with pytest.raises(InvalidNodeNameError):
            run(make_store_path(store, path=bad, mode="w"))
    assert sorted(store.list()) == sorted(KEYS)


def test_unknown_mode():
    store = memory_store()
    with pytest.raises(ZarrfastError, match="mode"):
        run(make_store_path(store, path="g", mode="x"))
    assert sorted(store.list()) == sorted(KEYS)


def test_store_path_of_takes_no_mode_and_deletes_nothing():
    """``store_path_of`` (what zarrfast's own functions use) checks and deletes nothing."""
    store = memory_store()
    assert store_path_of(store, "g") == StorePath(store, "g")
    assert store_path_of(StorePath(store), "g") == StorePath(store, "g")
    assert sorted(store.list()) == sorted(KEYS)


# -- the same scenarios in zarr-python ------------------------------------------------------


def _zarr_python_outcome(mode, path, read_only):
    zarr = pytest.importorskip("zarr")
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage._common import make_store_path as zmake_store_path

    async def go():
        store = zarr.storage.MemoryStore()
        for key in KEYS:
            await store.set(key, default_buffer_prototype().buffer.from_bytes(b"x"))
        target = store.with_read_only(True) if read_only else store
        try:
            sp = await zmake_store_path(target, path=path, mode=mode)
            outcome = ("ok", sp.path, sp.store.read_only)
        except FileExistsError:
            outcome = ("FileExistsError",)
        except ValueError:
            outcome = ("ValueError",)
        return outcome, sorted([k async for k in store.list()])

    return asyncio.run(go())


def _zarrfast_outcome(mode, path, read_only):
    store = memory_store()
    target = store.with_read_only() if read_only else store
    try:
        sp = run(make_store_path(target, path=path, mode=mode))
        outcome = ("ok", sp.path, sp.store.read_only)
    except FileExistsError:
        outcome = ("FileExistsError",)
    except ValueError:
        outcome = ("ValueError",)
    return outcome, sorted(store.list())


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("path", ["g", "", "h", "/g/"])
@pytest.mark.parametrize("mode", ["r", "r+", "a", "w", "w-", None])
def test_same_outcome_as_zarr_python(mode, path, read_only):
    assert _zarrfast_outcome(mode, path, read_only) == _zarr_python_outcome(mode, path,
                                                                            read_only)
