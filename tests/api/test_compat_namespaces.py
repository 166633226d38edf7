"""The zarr-python module paths libraries import from (``zarr.abc.store``, ``zarr.abc.codec``,
``zarr.codecs.zstd``, ``zarr.core.buffer``, ``zarr.core.sync``), as zarrfast's modules."""

from __future__ import annotations

import asyncio
import importlib
import os

import numpy as np
import pytest

import zarrfast
from zarrfast.abc import codec as abc_codec
from zarrfast.abc import store as abc_store
from zarrfast.codecs.zstd import ZstdCodec
from zarrfast.core.buffer import Buffer, BufferPrototype, NDBuffer, default_buffer_prototype
from zarrfast.core.sync import SyncError, collect_aiterator, sync
from zarrfast.storage import AsyncStore

from _helpers.zarr_peer import get_zarr_peer

MODULES = ("abc.store", "abc.codec", "codecs.zstd", "core.buffer", "core.sync", "core.sync_group",
           "core.array_spec", "core.metadata")


def test_names_are_zarr_pythons():
    """Every name these modules give exists in zarr-python 3.4.2 under the same path."""
    ours = {m: sorted(importlib.import_module(f"zarrfast.{m}").__all__) for m in MODULES}
    missing = get_zarr_peer().run("""
        import importlib
        emit({m: [n for n in names if not hasattr(importlib.import_module("zarr." + m), n)]
              for m, names in ARGS.items()})
    """, ours)
    assert missing == {m: [] for m in MODULES}


def test_abc_store_is_zarrfasts_store(tmp_path):
    assert abc_store.Store is zarrfast.Store
    assert isinstance(zarrfast.LocalStore(tmp_path), abc_store.Store)
    assert isinstance(zarrfast.MemoryStore(), abc_store.Store)
    assert abc_store.RangeByteRequest(1, 3) == zarrfast.storage.RangeByteRequest(1, 3)
    store = zarrfast.MemoryStore()
    store.set("k", b"abcdef")
    assert store.get("k", abc_store.SuffixByteRequest(2)) == b"ef"
    assert store.get("k", abc_store.OffsetByteRequest(4)) == b"ef"


def test_abc_codec_classes():
    assert issubclass(ZstdCodec, abc_codec.BytesBytesCodec)
    assert issubclass(zarrfast.codecs.TransposeCodec, abc_codec.ArrayArrayCodec)
    assert issubclass(zarrfast.codecs.BytesCodec, abc_codec.ArrayBytesCodec)
    assert abc_codec.BaseCodec is abc_codec.Codec is zarrfast.codecs.Codec


def test_codecs_zstd(tmp_path):
    assert ZstdCodec is zarrfast.codecs.ZstdCodec
    a = zarrfast.create_array(tmp_path / "a.zarr", shape=(100,), chunks=(10,), dtype="i8",
                              compressors=ZstdCodec(level=5))
    a[:] = np.arange(100)
    assert zarrfast.open_array(tmp_path / "a.zarr")[:].tolist() == list(range(100))
    assert a.compressors == (ZstdCodec(level=5),)


def test_buffer():
    buf = Buffer.from_bytes(b"abcdef")
    assert len(buf) == 6 and buf.to_bytes() == b"abcdef" and bytes(buf) == b"abcdef"
    assert buf[2:4].to_bytes() == b"cd"
    assert (buf + b"gh").to_bytes() == b"abcdefgh"
    assert buf.as_numpy_array().dtype == np.uint8
    assert Buffer.create_zero_length().to_bytes() == b""
    assert buf == Buffer.from_array_like(np.frombuffer(b"abcdef", dtype=np.uint8))
    proto = default_buffer_prototype()
    assert proto == BufferPrototype(buffer=Buffer, nd_buffer=NDBuffer)
    nd = proto.nd_buffer.create(shape=(2, 3), dtype="i4", fill_value=7)
    assert nd.shape == (2, 3) and nd.as_numpy_array().tolist() == [[7] * 3] * 2
    nd[0] = NDBuffer.from_numpy_array(np.zeros(3, "i4"))
    assert nd.as_numpy_array().sum() == 21


def test_buffer_goes_into_stores():
    """zarr-python code hands buffers to stores: zarrfast's async stores take them."""
    store = zarrfast.MemoryStore()
    sync(AsyncStore(store).set("k", Buffer.from_bytes(b"xyz")))
    assert store.get("k") == b"xyz"


def test_sync_runs_coroutines():
    async def add(a, b):
        await asyncio.sleep(0)
        return a + b

    assert sync(add(1, 2)) == 3
    store = zarrfast.MemoryStore()
    store.set("a/b", b"1")
    assert sync(AsyncStore(store).get("a/b")) == b"1"
    assert collect_aiterator(AsyncStore(store).list()) == ("a/b",)


def test_sync_passes_values_through():
    """anndata: ``sync(group.store.clear())``; zarrfast's ``clear`` already ran."""
    store = zarrfast.MemoryStore()
    store.set("x", b"1")
    assert sync(store.clear()) is None
    assert list(store.list()) == []
    assert sync(5) == 5


def test_sync_raises_the_coroutines_error():
    async def fail():
        raise KeyError("nope")

    with pytest.raises(KeyError, match="nope"):
        sync(fail())


def test_sync_timeout():
    with pytest.raises(TimeoutError):
        sync(asyncio.sleep(10), timeout=0.05)


def test_sync_from_its_own_loop_is_an_error():
    async def inner():
        return 1

    async def outer():
        return sync(inner())

    with pytest.raises(SyncError, match="await"):
        sync(outer())


def test_sync_on_a_given_loop():
    loop = asyncio.new_event_loop()
    import threading

    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    try:
        async def where():
            return asyncio.get_running_loop()

        assert sync(where(), loop=loop) is loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join()
        loop.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sync_in_a_forked_child():
    async def one():
        return 1

    assert sync(one()) == 1  # the loop thread exists before the fork
    pid = os.fork()
    if pid == 0:  # the child: a new loop thread, no deadlock
        code = 0 if sync(one()) == 1 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_core_submodules_load_on_attribute_access():
    import zarrfast.core

    for name in ("sync", "buffer", "array", "group", "common"):
        assert getattr(zarrfast.core, name).__name__ == f"zarrfast.core.{name}"
    with pytest.raises(AttributeError, match="no_such"):
        zarrfast.core.no_such  # noqa: B018


def test_sync_group_get_node():
    from zarrfast.core.sync_group import get_node

    store = zarrfast.MemoryStore()
    g = zarrfast.create_group(store, zarr_format=2)
    g.create_array("a", shape=(2,), dtype="i1")
    assert get_node(store, "a", 2).shape == (2,)
    assert isinstance(get_node(store, "", 2), zarrfast.Group)
    with pytest.raises(zarrfast.errors.NodeNotFoundError, match="'a'"):
        get_node(store, "a", 3)
    with pytest.raises(ValueError, match="zarr format"):
        get_node(store, "a", 4)
    assert get_node(store.with_read_only(True), "a", 2).read_only


def test_core_metadata_classes():
    from zarrfast.core.metadata import ArrayV2Metadata, ArrayV3Metadata

    v2 = zarrfast.create_array(zarrfast.MemoryStore(), shape=(2,), dtype="i1", zarr_format=2)
    v3 = zarrfast.create_array(zarrfast.MemoryStore(), shape=(2,), dtype="i1")
    assert isinstance(v2.metadata, ArrayV2Metadata)
    assert isinstance(v3.metadata, ArrayV3Metadata)
    assert not isinstance(v3.metadata, ArrayV2Metadata)


def test_array_spec_config_params():
    from zarrfast.core.array_spec import ArrayConfigParams

    config: ArrayConfigParams = {"order": "F", "write_empty_chunks": True}
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(2,), dtype="i1", config=config)
    assert a.order == "F"


def test_wrapper_store_takes_zarr_python_subclasses():
    """anndata's AccessTrackingStore: ``WrapperStore[Store]``, coroutine methods awaiting
    ``self._store``; every read goes through its ``get``."""
    from zarrfast.core._storage import WrapperStore

    class Tracking(WrapperStore[abc_store.Store]):
        def __init__(self, store):
            super().__init__(store)
            self.seen = []

        async def get(self, key, prototype=None, byte_range=None):
            self.seen.append(key)
            if prototype is None:
                prototype = default_buffer_prototype()
            return await self._store.get(key, prototype, byte_range)

        async def set(self, key, value):
            self.seen.append(("set", key, value.to_bytes()))
            await self._store.set(key, value)

        async def exists(self, key):
            return await self._store.exists(key)

        async def list_prefix(self, prefix):
            async for key in self._store.list_prefix(prefix):
                yield key

    inner = zarrfast.MemoryStore()
    store = Tracking(inner)
    assert isinstance(store, zarrfast.storage.WrapperStore)
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    a[:] = np.arange(4)
    assert ("set", "c/1", inner.get("c/1")) in store.seen
    store.seen.clear()
    assert zarrfast.open_array(store, mode="r")[:].tolist() == [0, 1, 2, 3]
    assert store.seen == ["zarr.json", "c/0", "c/1"]
    assert store.exists("c/0") and not store.exists("c/9")
    assert list(store.list_prefix("c")) == ["c/0", "c/1"]
    assert store.get("c/0", abc_store.RangeByteRequest(0, 2)) == inner.get("c/0")[:2]
    buf = store.get_sync("zarr.json")
    assert isinstance(buf, Buffer) and buf.to_bytes() == inner.get("zarr.json")
    assert store.get_sync("missing") is None
    assert isinstance(store._store, AsyncStore) and store._store.store is inner
    assert WrapperStore[abc_store.Store] is WrapperStore


def test_wrapper_store_plain_subclass_unchanged():
    from zarrfast.core._storage import WrapperStore

    class Plain(WrapperStore):
        def get(self, key, byte_range=None):
            return self.store.get(key, byte_range)

    store = Plain(zarrfast.MemoryStore())
    store.set("k", b"v")
    assert store.get("k") == b"v"
    assert Plain.get_many is WrapperStore.get_many  # nothing adapted
