"""The asynchronous public API: ``zarrfast.api.asynchronous``, ``AsyncArray``,
``AsyncGroup``, ``StorePath``, ``AsyncStore`` and ``await Store.open(...)``.

Every coroutine runs its synchronous twin on a worker thread; these tests check that
each entry point does what its twin does (reading back through the synchronous API or
through zarr-python), that the views share their node's state, that bad arguments are
refused with errors naming them, and that an awaited read does not block the loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import zarrfast
import zarrfast.api.asynchronous as za
from zarrfast import AsyncArray, AsyncGroup
from zarrfast.errors import (
    ContainsArrayError,
    ContainsGroupError,
    MemberNotFoundError,
    ReadOnlyError,
    ZarrfastError,
)
from zarrfast.storage import (
    AsyncStore,
    LocalStore,
    MemoryStore,
    RangeByteRequest,
    StorePath,
    ZipStore,
    make_store_path,
    store_path_of,
)

from _helpers.loop_jobs import HANG, RecordingExecutor, until

pytestmark = pytest.mark.asyncio


# -- Store.open, StorePath, AsyncStore ------------------------------------------------------


async def test_store_open_is_a_coroutine_classmethod(tmp_path: Path) -> None:
    local = await LocalStore.open(tmp_path / "d")
    assert isinstance(local, LocalStore) and local == LocalStore(tmp_path / "d")
    mem = await MemoryStore.open()
    assert isinstance(mem, MemoryStore) and list(mem.list()) == []
    shared: dict = {}
    ro = await MemoryStore.open(store_dict=shared, read_only=True)
    assert ro.read_only and ro == MemoryStore(shared)
    z = await ZipStore.open(tmp_path / "a.zip", mode="w")
    z.set("k", b"v")
    assert z.get("k") == b"v"
    z.close()
    with pytest.raises(ZarrfastError, match="MemoryStore.open: .*not made from a URL.*'x'"):
        await MemoryStore.open(url="x")
    # the synchronous methods are unchanged: plain values, not coroutines
    mem.set("a/b", b"1")
    assert mem.get("a/b") == b"1" and mem.exists("a/b") is True


async def test_store_path_operator_equality_and_str() -> None:
    store = MemoryStore()
    root = StorePath(store)
    assert root.path == "" and root.store is store
    sp = root / "a" / "b/"
    assert sp == StorePath(store, "a/b") and sp.path == "a/b"
    assert hash(sp) == hash(StorePath(store, "/a/b/"))
    assert sp != StorePath(MemoryStore(), "a/b")
    assert StorePath(store, "x") / "" == StorePath(store, "x")
    assert "a/b" in str(sp) and "StorePath(" in repr(sp)
    assert store_path_of(sp) is sp
    assert store_path_of(sp, "c") == StorePath(store, "a/b/c")
    assert store_path_of(store, "q") == StorePath(store, "q")
    assert store_path_of(None).store.read_only is False  # a new memory store
    assert store_path_of(AsyncStore(store)) == StorePath(store)
    # zarr-python's coroutine
    assert await make_store_path(store, path="x") == StorePath(store, "x")
    ro = await make_store_path({}, mode="r")
    assert ro.read_only and isinstance(ro.store, MemoryStore)
    with pytest.raises(ZarrfastError, match="mode must be one of.*'z'"):
        await make_store_path(store, mode="z")


async def test_store_path_coroutines(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    sp = StorePath(store, "g") / "k"
    assert await sp.exists() is False
    assert await sp.get() is None
    await sp.set(b"hello")
    assert store.get("g/k") == b"hello"
    assert await sp.exists() is True
    assert await sp.get() == b"hello"
    assert await sp.get(None, RangeByteRequest(1, 3)) == b"el"
    assert await StorePath(store, "g").is_empty() is False
    await sp.delete()
    assert not store.exists("g/k")
    await sp.delete()  # a missing key: no error
    store.set("g/x/1", b"1")
    await StorePath(store, "g").delete_dir()
    assert list(store.list()) == []
    # delete: the key and what is below it (a directory, as zarr-python's LocalStore)
    store.set("h/a", b"1")
    store.set("h/b/c", b"2")
    store.set("hh", b"3")
    store.set("k", b"4")
    await StorePath(store, "h").delete()
    assert list(store.list()) == ["hh", "k"]
    await StorePath(store, "k").delete()
    assert list(store.list()) == ["hh"]
    await StorePath(store).delete()
    assert list(store.list()) == []


async def test_store_path_open_modes(tmp_path: Path) -> None:
    store = MemoryStore()
    store.set("a/zarr.json", b"{}")
    assert await StorePath.open(store, "a", mode="r") == StorePath(store, "a")
    assert await StorePath.open(store, "a", mode="a") == StorePath(store, "a")
    with pytest.raises(FileExistsError, match="'a'.*not empty"):
        await StorePath.open(store, "a", mode="w-")
    await StorePath.open(store, "b", mode="w-")  # empty: fine
    await StorePath.open(store, "a", mode="w")  # deletes what is below 'a'
    assert not store.exists("a/zarr.json")
    with pytest.raises(ReadOnlyError, match="read-only.*'a'.*'r\\+'"):
        await StorePath.open(store.with_read_only(), "a", mode="r+")
    with pytest.raises(ZarrfastError, match="mode must be one of.*'x'"):
        await StorePath.open(store, "a", mode="x")


async def test_store_path_refuses_bad_arguments() -> None:
    with pytest.raises(ZarrfastError, match="StorePath needs a zarrfast Store, got dict"):
        StorePath({})  # type: ignore[arg-type]
    with pytest.raises(ZarrfastError, match="path must be a str, got 3"):
        StorePath(MemoryStore(), 3)  # type: ignore[arg-type]
    with pytest.raises(ZarrfastError, match="names no key"):
        await StorePath(MemoryStore()).get()
    with pytest.raises(ZarrfastError, match="partial writes"):
        await StorePath(MemoryStore(), "k").set(b"x", byte_range=RangeByteRequest(0, 1))


async def test_async_store_methods(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    a = AsyncStore(store)
    assert AsyncStore(a) == a and a.store is store and a.read_only is False
    await a.set("g/zarr.json", b"{}")
    await a.set("g/c/0", memoryview(b"abc"))

    class Buf:  # a zarr-python Buffer: anything with to_bytes()
        def to_bytes(self) -> bytes:
            return b"xyz"

    await a.set("g/c/1", Buf())
    assert store.get("g/c/1") == b"xyz"
    assert await a.get("g/c/0") == b"abc"
    assert await a.get("g/c/0", None, RangeByteRequest(1, 2)) == b"b"
    assert await a.get("missing") is None
    assert await a.exists("g/c/1") and not await a.exists("g/c/2")
    assert await a.getsize("g/c/0") == 3
    assert await a.get_many(["g/c/0", "nope"]) == [b"abc", None]
    assert await a.get_partial_values(None, [("g/c/1", RangeByteRequest(0, 1)),
                                             ("g/c/0", None)]) == [b"x", b"abc"]
    assert [k async for k in a.list()] == ["g/c/0", "g/c/1", "g/zarr.json"]
    assert [k async for k in a.list_prefix("g/c/")] == ["g/c/0", "g/c/1"]
    assert [k async for k in a.list_dir("g")] == ["c", "zarr.json"]
    await a.set_if_not_exists("g/c/0", b"new")
    assert store.get("g/c/0") == b"abc"
    await a.delete("g/c/0")
    assert not store.exists("g/c/0")
    await a.delete_dir("g/c")
    assert [k async for k in a.list()] == ["g/zarr.json"]
    assert not await a.is_empty("")
    await a.clear()
    assert await a.is_empty("")
    with pytest.raises(ZarrfastError, match="AsyncStore wraps a zarrfast Store, got str"):
        AsyncStore("nope")  # type: ignore[arg-type]


# -- zarrfast.api.asynchronous ----------------------------------------------------------------


async def test_create_array_and_open_array(tmp_path: Path) -> None:
    path = tmp_path / "a.zarr"
    arr = await za.create_array(path, shape=(20, 10), chunks=(5, 5), dtype="i4",
                                attributes={"k": 1})
    assert isinstance(arr, AsyncArray)
    data = np.arange(200, dtype="i4").reshape(20, 10)
    await arr.setitem(slice(None), data)
    # the same bytes through the synchronous API and through zarr-python
    np.testing.assert_array_equal(zarrfast.open_array(path, mode="r")[...], data)
    zarr = pytest.importorskip("zarr")
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], data)

    again = await za.open_array(path, mode="r")
    assert isinstance(again, AsyncArray) and again.read_only
    np.testing.assert_array_equal(await again.getitem((slice(3, 7), 2)), data[3:7, 2])
    assert again.attrs["k"] == 1
    with pytest.raises(ReadOnlyError):
        await again.setitem(0, 1)
    with pytest.raises(zarrfast.errors.ArrayNotFoundError, match="nothere"):
        await za.open_array(path, path="nothere", mode="r")


async def test_open_gives_array_or_group() -> None:
    store = MemoryStore()
    g = await za.open(store, mode="w")
    assert isinstance(g, AsyncGroup)
    await g.create_array("x", shape=(3,), dtype="u1")
    x = await za.open(store, path="x", mode="r")
    assert isinstance(x, AsyncArray) and x.shape == (3,)
    made = await za.open(store, path="y", mode="a", shape=(2,), dtype="f8")
    assert isinstance(made, AsyncArray) and made.dtype == np.dtype("f8")


async def test_group_create_group_open_group(tmp_path: Path) -> None:
    g = await za.group(store=tmp_path / "g.zarr", attributes={"a": 1})
    assert isinstance(g, AsyncGroup) and g.attrs == {"a": 1}
    same = await za.group(store=tmp_path / "g.zarr")  # exists: opened
    assert same.attrs == {"a": 1}
    with pytest.raises(ContainsGroupError):
        await za.create_group(tmp_path / "g.zarr")
    new = await za.create_group(tmp_path / "g.zarr", overwrite=True, zarr_format=2)
    assert new.zarr_format == 2 and new.attrs == {}
    opened = await za.open_group(tmp_path / "g.zarr", mode="r")
    assert opened.read_only and opened.zarr_format == 2


async def test_array_create_and_the_constant_creators() -> None:
    store = MemoryStore()
    a = await za.array(np.arange(6).reshape(2, 3), store=store, name="a")
    np.testing.assert_array_equal(await a.getitem(...), np.arange(6).reshape(2, 3))
    c = await za.create((4, 4), chunks=(2, 2), dtype="f4", store=store, path="c",
                        fill_value=3)
    np.testing.assert_array_equal(await c.getitem(...), np.full((4, 4), 3, "f4"))
    for fn, value, name in ((za.zeros, 0, "z"), (za.ones, 1, "o")):
        arr = await fn((3,), store=store, path=name, dtype="i2")
        np.testing.assert_array_equal(await arr.getitem(...), np.full(3, value, "i2"))
    e = await za.empty((3,), store=store, path="e", dtype="i2")
    assert e.shape == (3,) and await e.nchunks_initialized() == 0
    f = await za.full((2,), 7, store=store, path="f", dtype="i2")
    np.testing.assert_array_equal(await f.getitem(...), [7, 7])


async def test_like_creators_take_async_arrays() -> None:
    store = MemoryStore()
    src = await za.create_array(store, name="src", shape=(6, 4), chunks=(3, 2), dtype="u2")
    for fn, name, value in ((za.zeros_like, "z", 0), (za.ones_like, "o", 1),
                            (za.empty_like, "e", None)):
        out = await fn(src, store=store, path=name)
        assert isinstance(out, AsyncArray)
        assert (out.shape, out.chunks, out.dtype) == ((6, 4), (3, 2), np.dtype("u2"))
        if value is not None:
            assert np.all(await out.getitem(...) == value)
    full = await za.full_like(src, store=store, path="f", fill_value=9)
    assert np.all(await full.getitem(...) == 9)


async def test_open_like(tmp_path: Path) -> None:
    src = await za.create_array(MemoryStore(), shape=(5,), chunks=(2,), dtype="i8")
    like = await za.open_like(src, str(tmp_path / "like.zarr"))
    assert isinstance(like, AsyncArray) and (like.shape, like.chunks) == ((5,), (2,))


async def test_from_array_copies_an_async_array() -> None:
    store = MemoryStore()
    src = await za.create_array(store, name="src", shape=(8,), chunks=(3,), dtype="i4")
    await src.setitem(slice(None), np.arange(8))
    copy = await za.from_array(MemoryStore(), data=src)
    assert copy.chunks == (3,)
    np.testing.assert_array_equal(await copy.getitem(...), np.arange(8))
    from_numpy = await za.from_array(store, data=np.ones(4), name="n")
    np.testing.assert_array_equal(await from_numpy.getitem(...), np.ones(4))


async def test_save_load_and_tree(tmp_path: Path) -> None:
    one = tmp_path / "one.zarr"
    await za.save_array(one, np.arange(5))
    np.testing.assert_array_equal(await za.load(one), np.arange(5))
    await za.save(tmp_path / "two.zarr", np.arange(3))
    np.testing.assert_array_equal(await za.load(tmp_path / "two.zarr"), np.arange(3))
    await za.save_group(tmp_path / "grp.zarr", np.zeros(2), b=np.ones(3))
    loaded = await za.load(tmp_path / "grp.zarr")
    assert sorted(loaded) == ["arr_0", "b"]
    np.testing.assert_array_equal(loaded["b"], np.ones(3))
    await za.save(tmp_path / "kw.zarr", x=np.arange(2))
    assert list(await za.load(tmp_path / "kw.zarr")) == ["x"]
    g = await za.open_group(tmp_path / "grp.zarr", mode="r")
    assert str(await za.tree(g)) == str(zarrfast.open_group(tmp_path / "grp.zarr").tree())
    assert "arr_0" in str(await g.tree())
    with pytest.raises(ZarrfastError, match="at least one array"):
        await za.save_group(tmp_path / "empty.zarr")


async def test_consolidate_and_open_consolidated() -> None:
    store = MemoryStore()
    g = await za.group(store=store)
    await g.create_array("a", shape=(2,), dtype="i1")
    await g.create_group("sub")
    cg = await za.consolidate_metadata(store)
    assert isinstance(cg, AsyncGroup)
    assert b"consolidated_metadata" in store.get("zarr.json")
    opened = await za.open_consolidated(store)
    assert sorted([k async for k in opened.keys()]) == ["a", "sub"]
    with pytest.raises(ZarrfastError, match="no consolidated metadata"):
        await za.open_consolidated(MemoryStore({"zarr.json": store.get("sub/zarr.json")}))


async def test_store_path_as_the_store_of_api_functions() -> None:
    store = MemoryStore()
    sp = StorePath(store, "deep/er")
    arr = await za.create_array(sp, shape=(2,), dtype="i1", name="a")
    assert arr.path == "deep/er/a" and arr.store_path == StorePath(store, "deep/er/a")
    g = await za.open_group(store=sp, mode="a")
    assert g.path == "deep/er"
    assert [k async for k in g.keys()] == ["a"]
    assert isinstance(await za.open(sp / "a", mode="r"), AsyncArray)


async def test_sync_api_takes_a_store_path(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    sp = StorePath(store) / "outer"
    a = zarrfast.create_array(sp / "a", shape=(3,), dtype="i1")
    assert a.path == "outer/a" and a.store_path == StorePath(store, "outer/a")
    b = zarrfast.create_array(sp, name="b", shape=(2,), dtype="i1")
    assert b.path == "outer/b"
    assert zarrfast.open_array(sp / "a", mode="r").shape == (3,)
    assert zarrfast.open_array(sp, path="b", mode="r").shape == (2,)
    assert zarrfast.open(store=sp, path="a", mode="r").shape == (3,)
    g = zarrfast.open_group(sp, mode="r")
    assert g.path == "outer" and sorted(g) == ["a", "b"]
    assert zarrfast.group(store=StorePath(store, "other")).path == "other"
    assert zarrfast.create_group(StorePath(store, "cg")).path == "cg"
    z = zarrfast.zeros((2,), store=sp, path="z")
    assert z.path == "outer/z"
    zarrfast.save_array(sp / "s", np.arange(2))
    np.testing.assert_array_equal(zarrfast.load(sp / "s"), np.arange(2))
    zarrfast.save_group(StorePath(store, "sg"), np.ones(1))
    assert zarrfast.open_group(store, path="sg", mode="r")["arr_0"].shape == (1,)
    assert zarrfast.consolidate_metadata(sp).path == "outer"
    ro = zarrfast.open_array(sp / "a", mode="r")
    assert ro.read_only
    with pytest.raises(zarrfast.storage.StorageOptionsError):
        zarrfast.open_array(sp / "a", storage_options={"anon": True})


async def test_module_names_match_zarr_python() -> None:
    zarr_async = pytest.importorskip("zarr.api.asynchronous")
    wanted = {"array", "consolidate_metadata", "create", "create_array", "create_group",
              "create_hierarchy",
              "empty", "empty_like", "from_array", "full", "full_like", "group", "load",
              "ones", "ones_like", "open", "open_array", "open_consolidated", "open_group",
              "open_like", "save", "save_array", "save_group", "tree", "zeros",
              "zeros_like"}
    assert wanted <= set(dir(zarr_async))
    for name in wanted - {"create_hierarchy"}:
        assert asyncio.iscoroutinefunction(getattr(za, name)), name
    # each coroutine documents its twin's parameters, under the same headings
    doc = inspect.getdoc(za.create_array)
    assert doc.startswith("Coroutine of :func:`zarrfast.api.synchronous.create_array`")
    # (all but the examples, which show the synchronous calls)
    sync_doc = inspect.cleandoc(zarrfast.create_array.__doc__)
    assert "\nExamples\n" in sync_doc and "\nExamples\n" not in doc
    assert sync_doc.split("\nExamples\n")[0].rstrip() in doc
    assert "\nParameters\n----------\nstore : " in doc
    # the synchronous functions are where they always were
    from zarrfast.api import open_array, synchronous
    assert open_array is synchronous.open_array is zarrfast.open_array


# -- AsyncArray -----------------------------------------------------------------------------


async def test_async_array_shares_state_with_its_array() -> None:
    a = zarrfast.create_array(MemoryStore(), name="x/y", shape=(4, 6), chunks=(2, 3),
                              dtype="f4", attributes={"u": "m"})
    aa = a.async_array
    assert aa is a.async_array is a._async_array
    assert zarrfast.Array(aa) is a
    assert (aa.shape, aa.dtype, aa.chunks) == ((4, 6), np.dtype("f4"), (2, 3))
    assert aa.metadata is a.metadata and aa.attrs["u"] == "m"
    assert (aa.path, aa.name, aa.basename) == ("x/y", "/x/y", "y")
    assert aa.store_path == StorePath(a.store, "x/y") == a.store_path
    assert aa.ndim == 2 and aa.fill_value == a.fill_value and aa.zarr_format == 3
    assert aa.info == a.info and "AsyncArray" in repr(aa)
    await aa.resize((6, 6))
    assert a.shape == (6, 6)  # one state
    await aa.update_attributes({"v": 2})
    assert a.attrs["v"] == 2
    with pytest.raises(ZarrfastError, match="Group\\(view\\).*the view of an array '/x/y'"):
        zarrfast.Group(aa)
    with pytest.raises(ZarrfastError, match="with more arguments"):
        zarrfast.Array(aa, "p")
    with pytest.raises(AttributeError):
        aa.no_such_thing  # noqa: B018
    # a synchronous method is not handed out (awaiting its result would fail later)
    with pytest.raises(AttributeError, match="no coroutine 'with_write_empty_chunks'.*"
                                             "Array.with_write_empty_chunks is synchronous"):
        aa.with_write_empty_chunks  # noqa: B018
    assert aa.nchunks == 6 and aa.cdata_shape == (3, 2) and aa.read_only is False


async def test_async_array_selections() -> None:
    data = np.arange(60, dtype="i8").reshape(6, 10)
    arr = await za.create_array(MemoryStore(), shape=data.shape, chunks=(4, 3), dtype="i8")
    await arr.setitem(slice(None), data)
    np.testing.assert_array_equal(await arr.getitem((slice(1, 5), slice(None, None, 2))),
                                  data[1:5, ::2])
    np.testing.assert_array_equal(await arr.get_basic_selection((2, slice(3, 8))), data[2, 3:8])
    np.testing.assert_array_equal(await arr.get_basic_selection(), data)
    np.testing.assert_array_equal(await arr.get_orthogonal_selection(([0, 5], [1, 9])),
                                  data[np.ix_([0, 5], [1, 9])])
    np.testing.assert_array_equal(await arr.oindex.getitem(([1], slice(None))), data[[1]])
    np.testing.assert_array_equal(await arr.get_coordinate_selection(([0, 5], [1, 9])),
                                  data[[0, 5], [1, 9]])
    np.testing.assert_array_equal(await arr.vindex.getitem(([2, 3], [4, 4])),
                                  data[[2, 3], [4, 4]])
    mask = data % 7 == 0
    np.testing.assert_array_equal(await arr.get_mask_selection(mask), data[mask])
    np.testing.assert_array_equal(await arr.get_block_selection((1, 0)), data[4:, :3])
    out = np.zeros((2, 2), "i8")
    await arr.get_basic_selection((slice(0, 2), slice(0, 2)), out=out)
    np.testing.assert_array_equal(out, data[:2, :2])

    expected = data.copy()
    await arr.set_basic_selection((0, slice(None)), -1)
    expected[0] = -1
    await arr.set_orthogonal_selection(([1, 2], [0]), -2)
    expected[np.ix_([1, 2], [0])] = -2
    await arr.oindex.setitem(([3], [9]), -3)
    expected[3, 9] = -3
    await arr.set_coordinate_selection(([4, 5], [1, 2]), -4)
    expected[[4, 5], [1, 2]] = -4
    await arr.vindex.setitem(([5], [5]), -5)
    expected[5, 5] = -5
    await arr.set_mask_selection(expected == 59, -6)
    expected[expected == 59] = -6
    await arr.set_block_selection((0, 3), -7)
    expected[:4, 9:] = -7
    np.testing.assert_array_equal(await arr.getitem(...), expected)
    with pytest.raises(zarrfast.errors.IndexingError):
        await arr.getitem((0, 0, 0))


async def test_async_array_resize_append_and_stored_counts() -> None:
    arr = await za.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="u1",
                                fill_value=0)
    assert await arr.nchunks_initialized() == 0
    await arr.setitem(slice(None), np.arange(1, 5))
    assert await arr.nchunks_initialized() == 2
    stored = await arr.nbytes_stored()
    assert stored == arr._node.nbytes_stored() > 0
    assert await arr.append(np.array([5, 6, 7])) == (7,)
    np.testing.assert_array_equal(await arr.getitem(...), np.arange(1, 8))
    assert await arr.resize(2) is arr
    assert arr.shape == (2,) and await arr.nchunks_initialized() == 1
    complete = await arr.info_complete()
    assert "No. bytes stored" in complete and complete == arr._node.info_complete()
    with pytest.raises(ZarrfastError, match="delete_outside_chunks=False"):
        await arr.resize(3, delete_outside_chunks=False)
    with pytest.raises(zarrfast.errors.IndexingError, match="shape"):
        await arr.append(np.zeros((2, 2)))


async def test_async_array_open_create_and_constructor(tmp_path: Path) -> None:
    store = await LocalStore.open(tmp_path)
    made = await AsyncArray.create(StorePath(store, "a"), shape=(3,), dtype="i4",
                                   chunks=(2,))
    assert made.path == "a" and made.chunks == (2,)
    with pytest.raises(ContainsArrayError):
        await AsyncArray.create(StorePath(store, "a"), shape=(3,), dtype="i4")
    await AsyncArray.create(store, path="a", shape=(5,), dtype="i4", overwrite=True)
    opened = await AsyncArray.open(StorePath(store, "a"))
    assert opened.shape == (5,) and opened == await AsyncArray.open(store, path="a")
    ro = await AsyncArray.open(store, path="a", read_only=True)
    assert ro.read_only
    built = AsyncArray(opened.metadata, StorePath(store, "a"))
    assert built == opened and built.shape == (5,)
    assert zarrfast.Array(built).async_array is built
    with pytest.raises(zarrfast.errors.ArrayNotFoundError):
        await AsyncArray.open(store, path="none")
    # zarr-python's AsyncArray.create arguments: chunk_shape, codecs, separators, data
    from zarrfast.codecs import BytesCodec, GzipCodec

    legacy = await AsyncArray.create(StorePath(store, "legacy"), shape=(4, 4), dtype="u2",
                                     chunk_shape=(2, 2), chunk_key_encoding=("default", "."),
                                     codecs=[BytesCodec(endian="big"), GzipCodec(level=1)],
                                     data=np.arange(16).reshape(4, 4), attributes={"l": 1})
    assert legacy.chunks == (2, 2) and legacy.attrs["l"] == 1
    assert store.exists("legacy/c.1.1") and legacy.serializer == BytesCodec(endian="big")
    assert legacy.compressors == (GzipCodec(level=1),)
    np.testing.assert_array_equal(await legacy.getitem(...), np.arange(16).reshape(4, 4))
    with pytest.raises(ValueError, match="dimension_separator cannot be used for arrays with "
                                         "zarr_format 3"):  # as zarr-python refuses it
        await AsyncArray.create(StorePath(store, "sep"), shape=(4,), dtype="u2",
                                dimension_separator=".")
    v2 = await AsyncArray.create(MemoryStore(), path="v2", shape=(3,), dtype="i1",
                                 zarr_format=2, chunks=(2,), compressor=None)
    assert v2.zarr_format == 2 and v2.metadata.compressor is None
    with pytest.raises(ZarrfastError, match="exactly one array -> bytes codec"):
        await AsyncArray.create(store, path="bad", shape=(3,), dtype="i1",
                                codecs=[GzipCodec()])


# -- AsyncGroup -----------------------------------------------------------------------------


async def test_async_group_from_store_and_open(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "g")
    g = await AsyncGroup.from_store(store, attributes={"a": 1}, zarr_format=3)
    assert isinstance(g, AsyncGroup) and g.attrs == {"a": 1}
    assert g.store_path == StorePath(store) and g.store is store
    with pytest.raises(ContainsGroupError):
        await AsyncGroup.from_store(store)
    g2 = await AsyncGroup.from_store(store, zarr_format=2, overwrite=True)
    assert g2.zarr_format == 2 and store.exists(".zgroup")
    sub = await AsyncGroup.from_store(StorePath(store, "s/t"), zarr_format=2)
    assert sub.path == "s/t"
    opened = await AsyncGroup.open(store, zarr_format=2)
    assert opened == g2
    assert (await AsyncGroup.open(StorePath(store, "s/t"), zarr_format=None)).path == "s/t"
    with pytest.raises(zarrfast.errors.GroupNotFoundError):
        await AsyncGroup.open(StorePath(store, "none"))
    with pytest.raises(ZarrfastError, match="no consolidated metadata"):
        await AsyncGroup.open(store, zarr_format=2, use_consolidated=True)
    built = AsyncGroup(opened.metadata, StorePath(store))
    assert built == opened and zarrfast.Group(built).async_group is built


async def test_sync_group_from_store() -> None:
    store = MemoryStore()
    g = zarrfast.Group.from_store(store, attributes={"x": [1]}, zarr_format=2)
    assert isinstance(g, zarrfast.Group) and g.attrs["x"] == [1] and store.exists(".zattrs")
    with pytest.raises(ContainsGroupError):
        zarrfast.Group.from_store(store, zarr_format=2)
    with pytest.raises(ZarrfastError, match="zarr_format must be 2 or 3, got 4"):
        zarrfast.Group.from_store(MemoryStore(), zarr_format=4)
    g3 = zarrfast.Group.from_store(store, overwrite=True)
    assert g3.zarr_format == 3 and g3._async_group is g3.async_group
    sub = zarrfast.Group.from_store(StorePath(store, "s/t"), attributes={"z": 0})
    assert sub.path == "s/t" and sub.attrs["z"] == 0
    await za.create_array(StorePath(store) / "arr", shape=(2,), dtype="u1")
    with pytest.raises(ContainsArrayError):
        await AsyncGroup.from_store(StorePath(store) / "arr")


async def test_async_group_members_and_changes() -> None:
    g = await AsyncGroup.from_store(MemoryStore())
    a = await g.create_array("a", shape=(4,), dtype="i2", chunks=(2,))
    sub = await g.create_group("sub", attributes={"s": 1})
    await sub.create_array("b", shape=(2,), dtype="f4")
    assert isinstance(a, AsyncArray) and isinstance(sub, AsyncGroup)
    assert await g.contains("a") and await g.contains("sub/b") and not await g.contains("z")
    assert [k async for k in g.keys()] == ["a", "sub"]
    assert [(k, type(v)) async for k, v in g.members()] == [("a", AsyncArray),
                                                             ("sub", AsyncGroup)]
    assert [k async for k, _ in g.members(max_depth=None)] == ["a", "sub", "sub/b"]
    assert await g.nmembers() == 2 and await g.nmembers(max_depth=None) == 3
    assert [k async for k, _ in g.arrays()] == ["a"]
    assert [k async for k, _ in g.groups()] == ["sub"]
    assert [k async for k in g.array_keys()] == ["a"]
    assert [k async for k in g.group_keys()] == ["sub"]
    got = await g.getitem("sub/b")
    assert isinstance(got, AsyncArray) and got.path == "sub/b"
    assert (await g.get("sub")).attrs == {"s": 1} and await g.get("zz", 5) == 5
    with pytest.raises(MemberNotFoundError, match="'zz'"):
        await g.getitem("zz")

    assert (await g.require_group("sub")).path == "sub"
    assert (await g.require_group("new")).path == "new"
    r1, r2 = await g.require_groups("new", "other")
    assert (r1.path, r2.path) == ("new", "other")
    assert (await g.require_array("a", shape=(4,), dtype="i2")).path == "a"
    with pytest.raises(ZarrfastError, match="shape"):
        await g.require_array("a", shape=(5,))
    with pytest.raises(ContainsArrayError):
        await g.require_group("a")
    for fn, name, value in ((g.zeros, "z", 0), (g.ones, "o", 1)):
        arr = await fn(name=name, shape=(2,), dtype="u1")
        assert np.all(await arr.getitem(...) == value)
    assert (await g.empty(name="e", shape=(3,), dtype="u1")).shape == (3,)
    assert np.all(await (await g.full(name="f", shape=(2,), fill_value=4,
                                       dtype="u1")).getitem(...) == 4)
    await g.setitem("set", np.arange(3))
    np.testing.assert_array_equal(await (await g.getitem("set")).getitem(...), np.arange(3))
    await g.move("set", "moved")
    assert not await g.contains("set") and await g.contains("moved")
    await g.delitem("moved")
    assert not await g.contains("moved")
    with pytest.raises(MemberNotFoundError):
        await g.delitem("moved")
    assert await g.update_attributes({"k": "v"}) is g
    assert g.attrs["k"] == "v" and zarrfast.Group(g).attrs["k"] == "v"
    # (info_complete counts the members, as zarr-python's and Group.info_complete do)
    assert "Group" in g.info and await g.info_complete() == zarrfast.Group(g).info_complete()
    assert "AsyncGroup" in repr(g)


# -- the event loop stays free; many awaits at once ------------------------------------------


class SlowStore(MemoryStore):
    """A memory store whose reads take 20 ms each (a stand-in for latency)."""

    def get(self, key, byte_range=None):
        time.sleep(0.02)
        return super().get(key, byte_range)


async def test_an_awaited_read_does_not_block_the_loop() -> None:
    store = SlowStore()
    arr = await za.create_array(store, shape=(10,), chunks=(1,), dtype="i4")
    await arr.setitem(slice(None), np.arange(10))
    ticks = 0
    done = asyncio.Event()
    # the store's reads wait until the loop has ticked 3 times during them (they slept
    # 20 ms and the ticks in that window were counted: a loaded machine gives fewer);
    # a loop blocked by the read never ticks, and the test fails after the bound
    reading, ticked = threading.Event(), threading.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            if reading.is_set():
                ticks += 1
                if ticks >= 3:
                    ticked.set()
            await asyncio.sleep(0.005)

    t = asyncio.create_task(ticker())
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = store.get

    def recording_get(key, byte_range=None):
        seen.append(threading.get_ident())
        reading.set()
        if threading.get_ident() != loop_thread:  # (on the loop it would wait in vain)
            ticked.wait(120)  # (a bound that only ends a hang)
        return original(key, byte_range)

    store.get = recording_get  # type: ignore[method-assign]
    got = await arr.getitem(slice(None))
    done.set()
    await t
    np.testing.assert_array_equal(got, np.arange(10))
    assert seen and loop_thread not in seen  # no store call ran on the loop's thread
    assert ticks >= 3  # the loop kept running while the read waited on the store


async def test_many_awaits_at_once() -> None:
    arr = await za.create_array(MemoryStore(), shape=(40, 40), chunks=(10, 10), dtype="f8")
    data = np.random.default_rng(0).random((40, 40))
    await asyncio.gather(*(arr.setitem(slice(i, i + 10), data[i:i + 10])
                           for i in range(0, 40, 10)))
    parts = await asyncio.gather(*(arr.getitem((slice(None), slice(j, j + 10)))
                                   for j in range(0, 40, 10)))
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), data)


# -- from_dict, pickling, max_depth ----------------------------------------------------------


@pytest.mark.parametrize("data", [
    {"zarr_format": 3, "node_type": "group", "attributes": {"foo": 100}},
    {"zarr_format": 2, "attributes": {"foo": 100}},
])
async def test_async_group_from_dict(data: dict) -> None:
    store = MemoryStore()
    g = AsyncGroup.from_dict(StorePath(store, "test"), data)
    assert g.metadata.zarr_format == data["zarr_format"] and g.attrs == {"foo": 100}
    assert g.path == "test" and list(store.list()) == []  # nothing written


async def test_async_array_from_dict_matches_the_stored_array() -> None:
    store = MemoryStore()
    made = await za.create_array(store, name="a", shape=(4,), chunks=(2,), dtype="i2",
                                 attributes={"x": 1})
    await made.setitem(slice(None), [1, 2, 3, 4])
    doc = made.metadata.to_dict()
    again = AsyncArray.from_dict(StorePath(store, "a"), doc)
    assert again == made and again.attrs["x"] == 1
    np.testing.assert_array_equal(await again.getitem(...), [1, 2, 3, 4])
    v2 = await za.create_array(MemoryStore(), name="b", shape=(3,), dtype="u1",
                               zarr_format=2, attributes={"y": 2})
    assert AsyncArray.from_dict(StorePath(store, "b"),
                                {**v2.metadata.to_dict(), "attributes": {"y": 2}}).attrs == {
        "y": 2}
    with pytest.raises(ZarrfastError, match="group 'q'.*zarr_format must be 2 or 3, got 7"):
        AsyncGroup.from_dict(StorePath(store, "q"), {"zarr_format": 7})
    with pytest.raises(ZarrfastError, match="must be a dict, got 5"):
        AsyncArray.from_dict(StorePath(store, "q"), 5)  # type: ignore[arg-type]


async def test_async_nodes_pickle(tmp_path: Path) -> None:
    import pickle

    g = await AsyncGroup.from_store(LocalStore(tmp_path), attributes={"foo": 999})
    a = await g.create_array("a", shape=(3,), dtype="i4")
    await a.setitem(slice(None), [7, 8, 9])
    g2, a2 = pickle.loads(pickle.dumps((g, a)))
    assert g2 == g and a2 == a and isinstance(a2, AsyncArray)
    np.testing.assert_array_equal(await a2.getitem(...), [7, 8, 9])
    assert zarrfast.Array(a2).async_array is a2 and zarrfast.Group(g2).async_group is g2


async def test_members_refuses_a_negative_max_depth() -> None:
    g = await AsyncGroup.from_store(MemoryStore())
    with pytest.raises(ValueError, match="max_depth must be None or an integer >= 0, got -1"):
        [x async for x in g.members(max_depth=-1)]
    with pytest.raises(ValueError, match="max_depth"):
        zarrfast.Group(g).members(max_depth=-1)


async def test_create_hierarchy() -> None:
    from zarrfast.metadata.v3 import GroupMetadata

    src = await za.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="u2")
    store = MemoryStore()
    nodes = {"": GroupMetadata(attributes={"r": 1}), "g": GroupMetadata(),
             "g/a": src.metadata}
    made = {p: n async for p, n in za.create_hierarchy(store=store, nodes=nodes)}
    assert sorted(made) == ["", "g", "g/a"]
    assert isinstance(made["g/a"], AsyncArray) and made["g/a"].shape == (4,)
    assert isinstance(made["g"], AsyncGroup) and made[""].attrs == {"r": 1}
    assert zarrfast.open_group(store, mode="r")["g/a"].shape == (4,)
    under = {p async for p, _ in za.create_hierarchy(store=StorePath(store, "sub"),
                                                     nodes={"x": GroupMetadata()})}
    # the hierarchy's root (here 'sub') is implied and made, as zarr-python makes ''
    assert under == {"", "x"} and store.exists("sub/x/zarr.json")
    assert store.exists("sub/zarr.json")
    with pytest.raises(ContainsGroupError):
        [x async for x in za.create_hierarchy(store=store, nodes={"g": GroupMetadata()})]


async def test_async_group_values_likes_and_create_hierarchy() -> None:
    from zarrfast.metadata.v3 import GroupMetadata

    g = await AsyncGroup.from_store(MemoryStore())
    src = await g.create_array("src", shape=(6, 2), chunks=(3, 2), dtype="i2")
    await g.create_group("sub")
    assert [a.path async for a in g.array_values()] == ["src"]
    assert [x.path async for x in g.group_values()] == ["sub"]
    z = await g.zeros_like(name="z", data=src)
    assert (z.shape, z.chunks, z.dtype) == ((6, 2), (3, 2), np.dtype("i2"))
    assert np.all(await z.getitem(...) == 0)
    o = await g.ones_like(name="o", data=np.zeros((3,), "f4"))
    assert o.dtype == np.dtype("f4") and np.all(await o.getitem(...) == 1)
    e = await g.empty_like(name="e", data=src._node, chunks=(6, 1))
    assert e.chunks == (6, 1) and e.shape == (6, 2)
    f = await g.full_like(name="f", data=[1, 2, 3], fill_value=5)
    assert np.all(await f.getitem(...) == 5)
    assert g.synchronizer is None

    made = {k: n async for k, n in g.create_hierarchy(
        {"h": GroupMetadata(attributes={"a": 1}), "h/arr": src.metadata})}
    assert sorted(made) == ["h", "h/arr"] and made["h/arr"].path == "h/arr"
    assert isinstance(made["h"], AsyncGroup) and made["h"].attrs == {"a": 1}
    assert (await g.getitem("h/arr")).shape == (6, 2)
    with pytest.raises(ContainsGroupError):
        [x async for x in g.create_hierarchy({"h": GroupMetadata()})]
    ro = AsyncGroup.from_dict(StorePath(g.store.with_read_only()), {"zarr_format": 3,
                                                                    "node_type": "group"})
    with pytest.raises(ReadOnlyError):
        [x async for x in ro.create_hierarchy({"x": GroupMetadata()})]


class PausingStore(MemoryStore):
    """A memory store whose chunk reads, once ``pause`` is set, say so (``reading``) and
    wait until the test lets them go (``go``)."""

    def __init__(self) -> None:
        super().__init__()
        self.pause = False
        self.reading, self.go = threading.Event(), threading.Event()

    def get(self, key, byte_range=None):
        if self.pause and key.startswith("c/"):
            self.reading.set()
            if not self.go.wait(HANG):  # (a bound that only ends a hang)
                raise TimeoutError(f"{key}: the test never let the read go")
        return super().get(key, byte_range)


async def test_a_cancelled_write_still_completes() -> None:
    """A write whose task is cancelled while its thread is in the middle of it (reading
    the partial chunk it rewrites) is not stopped halfway: the test waits for the write's
    own job, then reads every element.  Before: it cancelled after 5 ms (the job might
    not have started) and polled the array for 10 s.  (A write cancelled before a thread
    took it: tests/reliability/test_cancelled_awaits.py.)"""
    loop = asyncio.get_running_loop()
    executor = RecordingExecutor(max_workers=2)
    loop.set_default_executor(executor)
    store = PausingStore()
    arr = await za.create_array(store, shape=(8,), chunks=(3,), dtype="i4")
    store.pause = True
    task = asyncio.create_task(arr.setitem(slice(1, 8), np.arange(1, 8)))
    await until(store.reading.is_set, "the write to read its partial chunk")
    job = executor.jobs[-1]
    assert job.running()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    store.go.set()
    await asyncio.wrap_future(job)  # the write's thread, to its end
    store.pause = False
    np.testing.assert_array_equal(zarrfast.Array(arr)[...], np.arange(8))


async def test_async_group_info_complete_counts_the_members() -> None:
    # (it returned ``info``, without the counts, for a group without consolidated metadata)
    g = zarrfast.group(store={})
    g.create_array("a", shape=(2,), dtype="i1")
    g.create_group("b")
    text = repr(await g.async_group.info_complete())
    assert text == repr(g.info_complete())
    assert "No. members" in text and "No. arrays" in text
