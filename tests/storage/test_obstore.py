"""ObjectStore (obstore): the store contract on obstore's memory, local and S3 (moto)
stores, HTTP through nginx, request counts, and real misbehaving servers."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("obstore")

import obstore.store as obs  # noqa: E402

from zarrfast.storage.obstore import ObjectStore  # noqa: E402
from zarrfast.testing.store import StoreTests  # noqa: E402


class TestObstoreMemory(StoreTests):
    def make_store(self, tmp_path):
        return ObjectStore(obs.MemoryStore())


class TestObstoreLocal(StoreTests):
    def make_store(self, tmp_path):
        root = tmp_path / "data.zarr"
        root.mkdir()
        return ObjectStore(obs.LocalStore(str(root)))


@pytest.fixture(scope="module")
def s3_options(s3_server):
    return {"endpoint": s3_server.endpoint_url, "access_key_id": "testing-key",
            "secret_access_key": "testing-secret", "region": "us-east-1",
            "client_options": {"allow_http": True}}


class TestObstoreS3(StoreTests):
    n_threads = 4
    keys_per_thread = 10

    @pytest.fixture(autouse=True)
    def _server(self, s3_server, s3_options):
        self.s3 = s3_server
        self.options = s3_options

    def make_store(self, tmp_path):
        return ObjectStore.from_url(self.s3.url(), self.options)


def test_s3fs_style_options(s3_server):
    url = s3_server.url()
    store = ObjectStore.from_url(url, s3_server.storage_options())
    store.set("a/b", b"xyz")
    assert store.get("a/b") == b"xyz"
    assert list(store.list()) == ["a/b"]


def test_unknown_option_names_the_key(s3_server):
    from zarrfast.storage.errors import StorageOptionsError

    with pytest.raises(StorageOptionsError, match="config_kwargs"):
        ObjectStore.from_url(s3_server.url(), {"config_kwargs": {}})
    with pytest.raises(StorageOptionsError, match="no_such_option"):
        ObjectStore.from_url(s3_server.url(), {"no_such_option": 1})
    with pytest.raises(StorageOptionsError, match="verify"):
        ObjectStore.from_url(s3_server.url(), {"client_kwargs": {"verify": False}})


def test_pickle_eq_repr(s3_server, s3_options):
    url = s3_server.url()
    store = ObjectStore.from_url(url, s3_options)
    store.set("k", b"v")
    again = pickle.loads(pickle.dumps(store))
    assert again == store and hash(again) == hash(store)
    assert again.get("k") == b"v"
    assert url in repr(store)
    ro = store.with_read_only()
    assert ro.read_only and ro != store and ro.get("k") == b"v"


def test_missing_dependency_message():
    from zarrfast.storage import obstore as mod

    assert "zarrfast[obstore]" in mod._EXTRA_HINT
    with pytest.raises(Exception, match="obstore store"):
        ObjectStore(object())
