"""zarrfast's stores called as zarr-python's are: ``await store.get(key, prototype=...)``
gives a ``Buffer`` of the prototype, ``await store.set(key, buffer)`` stores a
zarr-python ``Buffer``.

zarr-python's own tests (and code written for its stores) call stores that way; with
``import zarrfast as zarr`` the stores are zarrfast's, whose methods are synchronous.
Called in zarr-python's style they do the work at once and return an awaitable
``Ready``.  zarr-python's ``Buffer``, prototype, byte requests and ``sync`` are the real
ones (the installed zarr-python).
"""

from __future__ import annotations

import asyncio

import pytest

from zarrfast.errors import ReadOnlyError, ZarrfastError
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest, ZipStore
from zarrfast.storage.base import Ready

zarr_buffer = pytest.importorskip("zarr.core.buffer")
zarr_store_abc = pytest.importorskip("zarr.abc.store")
zarr_sync = pytest.importorskip("zarr.core.sync")

PROTOTYPE = zarr_buffer.default_buffer_prototype()


def buffer(data: bytes):
    return PROTOTYPE.buffer.from_bytes(data)


@pytest.fixture(params=["memory", "local", "zip"])
def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "local":
        yield LocalStore(tmp_path / "data.zarr")
    else:
        zs = ZipStore(tmp_path / "data.zip", mode="w")
        yield zs
        zs.close()


def test_set_of_a_zarr_python_buffer_awaited(store):
    async def main():
        await store.set("a/zarr.json", buffer(b"{}"))
        await store.set("a/c/0", buffer(b"0123456789"))

    asyncio.run(main())
    assert store.get("a/zarr.json") == b"{}"
    assert store.get("a/c/0") == b"0123456789"


def test_set_of_a_zarr_python_buffer_not_awaited_is_stored(store):
    result = store.set("k", buffer(b"value"))
    assert isinstance(result, Ready)
    assert store.get("k") == b"value"
    assert store.set("b", b"bytes") is None  # zarrfast's own call: nothing to await


def test_zarr_python_sync_runs_both(store):
    zarr_sync.sync(store.set("k", buffer(b"value")))
    got = zarr_sync.sync(store.get("k", prototype=PROTOTYPE))
    assert isinstance(got, zarr_buffer.Buffer)
    assert got.to_bytes() == b"value"


def test_get_with_a_prototype(store):
    store.set("c/0", b"0123456789")

    async def main():
        whole = await store.get("c/0", prototype=PROTOTYPE)
        missing = await store.get("c/1", prototype=PROTOTYPE)
        part = await store.get("c/0", RangeByteRequest(2, 5), prototype=PROTOTYPE)
        return whole, missing, part

    whole, missing, part = asyncio.run(main())
    assert isinstance(whole, zarr_buffer.Buffer) and whole.to_bytes() == b"0123456789"
    assert missing is None
    assert part.to_bytes() == b"234"


@pytest.mark.parametrize(("request_of", "expected"), [
    (lambda m: m.RangeByteRequest(1, 4), b"123"),
    (lambda m: m.OffsetByteRequest(7), b"789"),
    (lambda m: m.SuffixByteRequest(2), b"89"),
])
def test_get_takes_zarr_pythons_byte_requests(store, request_of, expected):
    store.set("c/0", b"0123456789")
    got = asyncio.run(store.get("c/0", request_of(zarr_store_abc), prototype=PROTOTYPE).wait())
    assert got.to_bytes() == expected


def test_a_value_that_is_no_buffer_is_still_refused(store):
    for value in ([1, 2], "text", 3, None):
        with pytest.raises(TypeError):
            store.set("k", value)
    assert store.get("k") is None


def test_a_prototype_that_is_not_one_is_named(store):
    with pytest.raises(ZarrfastError, match=r"get\('k'\): prototype must be a buffer prototype"):
        store.get("k", prototype="cpu")


def test_read_only_store_refuses_a_zarr_python_buffer(tmp_path):
    store = MemoryStore({"k": b"old"}, read_only=True)
    with pytest.raises(ReadOnlyError):
        store.set("k", buffer(b"new"))
    assert store.get("k") == b"old"


def test_ready_is_awaitable_once_done():
    async def main():
        return await Ready(5), await Ready()

    assert asyncio.run(main()) == (5, None)
    assert repr(Ready(b"x")) == "Ready(b'x')"
