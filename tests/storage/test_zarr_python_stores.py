"""zarrfast on top of zarr-python's stores (``ZarrPythonStore``).

The conformance suite runs on the wrapper over zarr's ``MemoryStore`` and
``LocalStore``; then every zarr store type (``LocalStore``, ``MemoryStore``,
``FsspecStore`` on moto's S3 server, ``ZipStore``, ``ObjectStore`` over obstore's
local store and S3) carries arrays both ways: written by zarr-python and read by
zarrfast, written by zarrfast and read by zarr-python.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ReadOnlyError
from zarrfast.storage import RemoteStoreError, ZarrPythonStore
from zarrfast.storage.base import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarrfast.testing import StoreTests

from _helpers.gate import InFlightGate

zarr = pytest.importorskip("zarr")
pytest.importorskip("zarr.abc.store")


class TestOverZarrMemoryStore(StoreTests):
    def make_store(self, tmp_path: Path) -> ZarrPythonStore:
        return ZarrPythonStore(zarr.storage.MemoryStore())


class TestOverZarrLocalStore(StoreTests):
    def make_store(self, tmp_path: Path) -> ZarrPythonStore:
        return ZarrPythonStore(zarr.storage.LocalStore(tmp_path / "data"))


class TestOverZarrObjectStore(StoreTests):
    """zarr's ObjectStore over obstore's local file system store."""

    def make_store(self, tmp_path: Path) -> ZarrPythonStore:
        return ZarrPythonStore(_obstore_local(tmp_path))

    def test_clear(self, filled) -> None:
        # obstore's local file system leaves the emptied directories behind and lists
        # them as prefixes (list_with_delimiter), so list_dir("") is not empty after a
        # clear; the keys are gone
        filled.clear()
        assert filled.is_empty()
        assert list(filled.list()) == []
        for k in self.TREE:
            assert filled.get(k) is None
        filled.set("a/b", b"again")
        assert filled.get("a/b") == b"again"


# -- the zarr store types ------------------------------------------------------------------


def _obstore_local(tmp_path: Path):
    obstore = pytest.importorskip("obstore")
    root = tmp_path / "obj"
    root.mkdir()
    return zarr.storage.ObjectStore(obstore.store.LocalStore(str(root)))


def _make(kind: str, tmp_path: Path, request: pytest.FixtureRequest):
    """A new, empty, writable zarr-python store of ``kind``."""
    if kind == "local":
        return zarr.storage.LocalStore(tmp_path / "data.zarr")
    if kind == "memory":
        return zarr.storage.MemoryStore()
    if kind == "zip":
        return zarr.storage.ZipStore(tmp_path / "data.zip", mode="w")
    if kind == "object-local":
        return _obstore_local(tmp_path)
    server = request.getfixturevalue("s3_server")
    prefix = f"{server.bucket}/{request.node.name.replace('[', '-').replace(']', '')}"
    if kind == "fsspec-s3":
        return zarr.storage.FsspecStore.from_url(
            f"s3://{prefix}", storage_options=server.storage_options())
    if kind == "object-s3":
        obstore = pytest.importorskip("obstore")
        s3 = obstore.store.S3Store(
            server.bucket, prefix=prefix.split("/", 1)[1], endpoint=server.endpoint_url,
            access_key_id="testing-key", secret_access_key="testing-secret",
            region="us-east-1", client_options={"allow_http": True})
        return zarr.storage.ObjectStore(s3)
    raise AssertionError(kind)


KINDS = ["local", "memory", "zip", "fsspec-s3", "object-local", "object-s3"]

DATA = np.arange(60 * 70, dtype="f8").reshape(60, 70) / 7


@pytest.mark.parametrize("kind", KINDS)
def test_zarr_python_writes_zarrfast_reads(kind: str, tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    zs = _make(kind, tmp_path, request)
    g = zarr.create_group(zs, attributes={"title": "written by zarr-python", "n": 3})
    plain = g.create_array("plain", shape=DATA.shape, chunks=(16, 16), dtype="f8")
    plain[:] = DATA
    sharded = g.create_array("sharded", shape=DATA.shape, chunks=(8, 10), shards=(32, 40),
                             dtype="f8", fill_value=-1.0)
    sharded[:] = DATA
    if kind == "zip":
        zs.close()
        zs = zarr.storage.ZipStore(tmp_path / "data.zip", mode="r")

    group = zarrfast.open_group(zs, mode="r")
    assert dict(group.attrs) == {"title": "written by zarr-python", "n": 3}
    assert sorted(group.keys()) == ["plain", "sharded"]
    np.testing.assert_array_equal(group["plain"][:], DATA)
    np.testing.assert_array_equal(group["sharded"][:], DATA)
    np.testing.assert_array_equal(group["sharded"][5:37, 3:61], DATA[5:37, 3:61])
    np.testing.assert_array_equal(zarrfast.open_array(zs, path="plain", mode="r")[7, :],
                                  DATA[7, :])


@pytest.mark.parametrize("kind", KINDS)
def test_zarrfast_writes_zarr_python_reads(kind: str, tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    zs = _make(kind, tmp_path, request)
    g = zarrfast.create_group(zs)
    g.attrs["title"] = "written by zarrfast"
    a = zarrfast.create_array(zs, name="plain", shape=DATA.shape, chunks=(16, 16), dtype="f8")
    a[:] = DATA
    s = zarrfast.create_array(zs, name="sharded", shape=DATA.shape, chunks=(8, 10),
                              shards=(32, 40), dtype="f8")
    s[:] = DATA
    if kind == "zip":
        zs.close()
        zs = zarr.storage.ZipStore(tmp_path / "data.zip", mode="r")

    group = zarr.open_group(zs, mode="r")
    assert group.attrs["title"] == "written by zarrfast"
    np.testing.assert_array_equal(group["plain"][:], DATA)
    np.testing.assert_array_equal(group["sharded"][:], DATA)


def test_make_store_wraps_and_every_entry_point_takes_one(tmp_path: Path) -> None:
    zs = zarr.storage.LocalStore(tmp_path / "d.zarr")
    assert isinstance(zarrfast.storage.make_store(zs), ZarrPythonStore)
    assert zarrfast.storage.make_store(zs, read_only=True).read_only
    zarrfast.create_group(zs, attributes={"a": 1})
    zarrfast.create_array(zs, name="x", data=np.arange(10), chunks=(3,))
    zarrfast.consolidate_metadata(zs)
    assert zarrfast.open_consolidated(zs)["x"][:].tolist() == list(range(10))
    assert zarrfast.open(zs, path="x", mode="r")[:].tolist() == list(range(10))
    assert zarrfast.open_group(zs)["x"][2:4].tolist() == [2, 3]
    assert zarrfast.open_array(zs, path="x")[-1] == 9


def test_xarray_backend_takes_a_zarr_store(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    zs = zarr.storage.LocalStore(tmp_path / "ds.zarr")
    ds = xr.Dataset({"t": (("y", "x"), DATA)}, coords={"y": np.arange(60)},
                    attrs={"source": "test"})
    ds.to_zarr(zs, zarr_format=3, consolidated=False)
    got = xr.open_dataset(zs, engine="zarrfast")
    xr.testing.assert_identical(got.load(), ds)


def test_make_store_does_not_import_zarr(subprocess_cwd: Path) -> None:
    import subprocess

    code = ("import sys, zarrfast, zarrfast.storage as s\n"
            "s.make_store(None); s.make_store({})\n"
            "assert 'zarr' not in sys.modules, sorted(m for m in sys.modules if 'zarr.' in m)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=subprocess_cwd,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- concurrency ----------------------------------------------------------------------------


class CountingLocalStore(zarr.storage.LocalStore):
    """zarr's LocalStore, counting the ``get`` calls in flight at once (``gate.peak``;
    ``gate.hold(n)`` holds them until ``n`` are)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.gate = InFlightGate()
        self.partial_calls = 0

    async def get(self, key, prototype, byte_range=None):
        await self.gate.aenter()
        try:
            await asyncio.sleep(0.005)  # a request's latency: more would start meanwhile
            return await super().get(key, prototype, byte_range)
        finally:
            self.gate.leave()

    async def get_partial_values(self, prototype, key_ranges):
        self.partial_calls += 1
        return await super().get_partial_values(prototype, key_ranges)

    def with_read_only(self, read_only: bool = False):
        return self  # keep counting on this instance


def test_many_requests_in_flight(tmp_path: Path) -> None:
    root = tmp_path / "c.zarr"
    w = zarr.create_array(zarr.storage.LocalStore(root), shape=(64, 64), chunks=(8, 8),
                          dtype="i4")
    w[:] = np.arange(64 * 64).reshape(64, 64)
    counting = CountingLocalStore(root)
    with zarrfast.config.set(io_concurrency=16):
        a = zarrfast.open_array(counting, mode="r")
        # held until 5 are in flight (5 ms each and a count before: a loaded machine
        # could make fewer overlap), then 5 ms each: more than 16 would be seen
        counting.gate.hold(5)
        np.testing.assert_array_equal(a[:], np.arange(64 * 64).reshape(64, 64))
    assert not counting.gate.timed_out, f"at most {counting.gate.peak} requests in flight"
    assert 4 < counting.gate.peak <= 16, counting.gate.peak


def test_shard_ranges_use_get_partial_values(tmp_path: Path) -> None:
    root = tmp_path / "s.zarr"
    w = zarr.create_array(zarr.storage.LocalStore(root), shape=(64,), chunks=(4,),
                          shards=(64,), dtype="i4")
    w[:] = np.arange(64)
    counting = CountingLocalStore(root)
    store = ZarrPythonStore(counting)
    value = bytes(store.get("c/0"))
    got = store.get_many(["c/0"] * 3, [RangeByteRequest(0, 4), OffsetByteRequest(10),
                                       SuffixByteRequest(5)])
    assert [bytes(v) for v in got] == [value[:4], value[10:], value[-5:]]
    assert counting.partial_calls == 1


# -- errors ---------------------------------------------------------------------------------


class FailingMemoryStore(zarr.storage.MemoryStore):
    """A MemoryStore whose reads of ``bad/...`` fail, the first ``transient`` of them
    with a connection reset."""

    def __init__(self, transient: int = 0) -> None:
        super().__init__()
        self.transient = transient
        self.calls = 0

    async def get(self, key, prototype, byte_range=None):
        if key.startswith("bad/"):
            self.calls += 1
            if self.calls <= self.transient:
                raise ConnectionResetError("connection reset by peer")
            raise RuntimeError("the backend broke")
        return await super().get(key, prototype, byte_range)


def test_errors_name_the_key_and_store() -> None:
    store = ZarrPythonStore(FailingMemoryStore(), retry=2)
    with pytest.raises(RemoteStoreError, match=r"'bad/k' of ZarrPythonStore\(MemoryStore") as info:
        store.get("bad/k")
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(RemoteStoreError, match="bad/x"):
        store.get_many(["ok", "bad/x"])


def test_transient_failures_are_retried() -> None:
    inner = FailingMemoryStore(transient=2)
    store = ZarrPythonStore(inner, retry=zarrfast.storage.RetryPolicy(attempts=3,
                                                                      base_delay=0.001))
    with pytest.raises(RemoteStoreError, match="the backend broke"):
        store.get("bad/k")
    assert inner.calls == 3
    inner = FailingMemoryStore(transient=5)
    store = ZarrPythonStore(inner, retry=zarrfast.storage.RetryPolicy(attempts=2,
                                                                      base_delay=0.001))
    with pytest.raises(zarrfast.storage.RetriesExhaustedError, match="'bad/k'"):
        store.get("bad/k")


def test_read_only_zarr_store(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    ro = ZarrPythonStore(zarr.storage.LocalStore(tmp_path / "r", read_only=True))
    assert ro.read_only
    with pytest.raises(ReadOnlyError, match="'k'"):
        ro.set("k", b"1")
    assert ro.with_read_only(False).read_only is False


class LostFileMemoryStore(zarr.storage.MemoryStore):
    """A store whose ``get`` raises ``FileNotFoundError`` (as VirtualiZarr's ManifestStore
    does when a referenced file is gone): a failure, never a missing key."""

    async def get(self, key, prototype, byte_range=None):
        if key.startswith("c/"):
            raise FileNotFoundError("Object at location /gone/data.h5 not found")
        return await super().get(key, prototype, byte_range)


def test_file_not_found_in_a_store_is_an_error_not_a_missing_chunk() -> None:
    inner = LostFileMemoryStore()
    zarr.create_array(inner, shape=(10,), chunks=(5,), dtype="i4")[:] = 7
    a = zarrfast.open_array(inner, mode="r")
    with pytest.raises(RemoteStoreError, match=r"'c/0'.*/gone/data\.h5") as info:
        a[:]
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert ZarrPythonStore(inner).get("missing") is None


def test_pickles_with_its_zarr_store(tmp_path: Path) -> None:
    import pickle

    zarr.create_array(zarr.storage.LocalStore(tmp_path / "p"), shape=(4,), chunks=(2,),
                      dtype="i1")[:] = 1
    store = ZarrPythonStore(zarr.storage.LocalStore(tmp_path / "p", read_only=True),
                            retry=3, max_concurrency=4)
    clone = pickle.loads(pickle.dumps(store))
    assert clone.read_only and clone.retry.attempts == 3 and clone.max_concurrency == 4
    assert zarrfast.open_array(clone, mode="r")[:].tolist() == [1, 1, 1, 1]


def test_opening_a_missing_read_only_directory_names_the_store(tmp_path: Path) -> None:
    with pytest.raises(RemoteStoreError, match=r"opening ZarrPythonStore\(LocalStore.*nowhere"):
        ZarrPythonStore(zarr.storage.LocalStore(tmp_path / "nowhere", read_only=True))


def test_without_zarr_installed(subprocess_cwd: Path) -> None:
    """zarr, icechunk and obstore made unimportable: zarrfast works, and the wrapper says
    which extra to install."""
    import subprocess

    code = ("import sys\n"
            "for m in ('zarr', 'icechunk', 'obstore', 'virtualizarr'): sys.modules[m] = None\n"
            "import zarrfast, zarrfast.storage as s\n"
            "a = zarrfast.create_array(None, shape=(4,), dtype='i1'); a[:] = 1\n"
            "assert a[:].tolist() == [1, 1, 1, 1]\n"
            "try:\n"
            "    s.ZarrPythonStore(object())\n"
            "except s.MissingDependencyError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=subprocess_cwd,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert ('pip install "zarrfast[zarr]" (from a source checkout: '
            'pip install ".[zarr]")') in out.stdout
