"""A caller that asks for a read-only store never gets a writable one.

* ``make_store(store, read_only=True)`` of a writable ``Store`` gives its read-only view
  (``with_read_only``); a store that cannot make one is refused with
  ``UnsupportedStoreOperationError`` (a ``ValueError`` as zarr-python's refusal of mode
  ``"r"`` for such a store, and a ``NotImplementedError``), not returned writable.
* ``store_path_of(store_path, read_only=True)`` and ``make_store_path(store_path,
  mode="r")`` of a ``StorePath`` give a ``StorePath`` of a read-only view of its store.
"""

from __future__ import annotations

import asyncio

import pytest

import zarrfast
from zarrfast.errors import ReadOnlyError
from zarrfast.storage import (
    LocalStore,
    LoggingStore,
    MemoryStore,
    StorageOptionsError,
    Store,
    StorePath,
    UnsupportedStoreOperationError,
    make_store,
    make_store_path,
    store_path_of,
)


class DictStore(Store):
    """A store of one's own, without ``with_read_only`` (the base class refuses)."""

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.values: dict[str, bytes] = {}

    def get(self, key, byte_range=None):
        return self.values.get(key)

    def set(self, key, value):
        self._check_writable(key)
        self.values[key] = bytes(value)

    def delete(self, key):
        self._check_writable(key)
        self.values.pop(key, None)

    def list(self):
        return iter(sorted(self.values))


class LyingStore(DictStore):
    """A ``with_read_only(True)`` that returns a writable store."""

    def with_read_only(self, read_only: bool = True) -> Store:
        return self


# -- make_store -----------------------------------------------------------------------------


def test_make_store_refuses_a_store_that_cannot_be_made_read_only():
    store = DictStore()
    with pytest.raises(UnsupportedStoreOperationError, match="DictStore") as info:
        make_store(store, read_only=True)
    # zarr-python refuses with ValueError; the base with_read_only says NotImplementedError
    assert isinstance(info.value, ValueError) and isinstance(info.value, NotImplementedError)
    assert "read-only" in str(info.value) and "with_read_only" in str(info.value)
    assert store.read_only is False and store.values == {}


def test_make_store_refuses_a_with_read_only_that_returns_a_writable_store():
    with pytest.raises(UnsupportedStoreOperationError, match="LyingStore"):
        make_store(LyingStore(), read_only=True)


def test_make_store_refuses_a_wrapper_of_such_a_store():
    with pytest.raises(UnsupportedStoreOperationError, match="DictStore"):
        make_store(LoggingStore(DictStore()), read_only=True)


def test_make_store_keeps_stores_that_need_no_view():
    writable, ro = DictStore(), DictStore(read_only=True)
    assert make_store(writable) is writable  # read-only not asked
    assert make_store(ro, read_only=True) is ro  # read-only already
    assert make_store(LyingStore()) is not None


@pytest.mark.parametrize("kind", ["memory", "local", "logging"])
def test_make_store_gives_a_read_only_view(tmp_path, kind):
    store = {"memory": lambda: MemoryStore(), "local": lambda: LocalStore(tmp_path),
             "logging": lambda: LoggingStore(MemoryStore())}[kind]()
    view = make_store(store, read_only=True)
    assert view.read_only and not store.read_only
    with pytest.raises(ReadOnlyError):
        view.set("k", b"v")
    store.set("k", b"v")
    assert view.get("k") == b"v"  # a view of the same data


def test_opening_read_only_through_the_api_refuses_too():
    store = DictStore()
    zarrfast.create_array(store, shape=(2,), dtype="u1", fill_value=0)
    before = dict(store.values)
    with pytest.raises(UnsupportedStoreOperationError, match="DictStore"):
        zarrfast.open_array(store, mode="r")
    assert store.values == before
    assert zarrfast.open_array(store, mode="r+").shape == (2,)  # writable: as before


# -- StorePath given ------------------------------------------------------------------------


def test_store_path_of_a_store_path_honours_read_only():
    store = MemoryStore()
    sp = StorePath(store, "group")
    ro = store_path_of(sp, "array", read_only=True)
    assert ro.read_only and ro.path == "group/array" and ro.store == store
    assert not sp.read_only and not store.read_only  # the StorePath given is unchanged
    with pytest.raises(ReadOnlyError):
        asyncio.run(ro.set(b"x"))
    assert list(store.list()) == []
    assert store_path_of(sp, read_only=True).path == "group"
    assert store_path_of(sp) is sp and not store_path_of(sp, "a").read_only  # as before
    already = StorePath(store.with_read_only(), "g")
    assert store_path_of(already, read_only=True) is already


def test_store_path_of_a_store_path_refuses_what_cannot_be_read_only():
    with pytest.raises(UnsupportedStoreOperationError, match="DictStore"):
        store_path_of(StorePath(DictStore(), "g"), read_only=True)


def test_store_path_of_a_store_path_refuses_storage_options():
    with pytest.raises(StorageOptionsError):
        store_path_of(StorePath(MemoryStore()), "a", storage_options={"anon": True})
    with pytest.raises(StorageOptionsError):
        asyncio.run(make_store_path(StorePath(MemoryStore()), storage_options={"anon": True}))


def test_make_store_path_of_a_store_path_with_mode_r_is_read_only():
    store = MemoryStore()
    store.set("g/a/zarr.json", b"{}")
    sp = asyncio.run(make_store_path(StorePath(store, "g"), path="a", mode="r"))
    assert sp.read_only and sp.path == "g/a" and not store.read_only
    with pytest.raises(ReadOnlyError):
        asyncio.run(sp.delete_dir())
    assert list(store.list()) == ["g/a/zarr.json"]


def test_store_path_open_with_mode_r_is_read_only():
    store = MemoryStore()
    sp = asyncio.run(StorePath.open(store, "a", mode="r"))
    assert sp.read_only and sp.store == store and not store.read_only
    with pytest.raises(UnsupportedStoreOperationError, match="DictStore"):
        asyncio.run(StorePath.open(DictStore(), "a", mode="r"))


def test_async_open_of_a_store_path_read_only():
    store = MemoryStore()
    zarrfast.create_array(store, name="x", shape=(2,), dtype="u1", fill_value=0)
    a = asyncio.run(zarrfast.AsyncArray.open(StorePath(store), path="x", read_only=True))
    assert a.read_only and a.store_path.read_only and not store.read_only
