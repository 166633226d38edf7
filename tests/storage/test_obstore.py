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


# ---------------------------------------------------------------------------
# faults: a real HTTP server misbehaving (tests/_helpers/fault_http.py)
# ---------------------------------------------------------------------------
import time  # noqa: E402

from zarrfast.storage import FsspecStore, RangeByteRequest, RetryPolicy, SuffixByteRequest  # noqa: E402
from zarrfast.storage.errors import RemoteStoreError, RetriesExhaustedError  # noqa: E402

VALUE = bytes(range(256)) * 40  # 10 KiB
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)


@pytest.fixture(scope="module")
def fault_server():
    from _helpers.fault_http import FaultServer

    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def faulty(fault_server):
    fault_server.reset()
    fault_server.objects.clear()
    fault_server.objects["d/k"] = VALUE
    yield fault_server
    fault_server.reset()


def _obstore_http(server, timeout=1.0):
    return ObjectStore.from_url(server.url("d"), retry=FAST_RETRY, timeout=timeout)


def _fsspec_http(server, timeout=1.0):
    import aiohttp

    return FsspecStore.from_url(server.url("d"),
                                {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=timeout)}},
                                retry=FAST_RETRY)


MAKERS = {"obstore": _obstore_http, "fsspec": _fsspec_http}
RANGES = {"whole": (None, VALUE), "range": (RangeByteRequest(10, 20), VALUE[10:20]),
          "suffix": (SuffixByteRequest(16), VALUE[-16:])}


@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize("rng", sorted(RANGES))
@pytest.mark.parametrize("kind", ["503", "stall", "short", "reset", "oversized", "norange"])
def test_fault_once_gives_the_right_bytes(faulty, maker, rng, kind):
    """One misbehaving answer: retried (503, stall, short, reset), refused and retried
    (oversized) or sliced here (norange): the bytes are the right ones, never others."""
    store = MAKERS[maker](faulty, timeout=0.5)
    byte_range, expected = RANGES[rng]
    faulty.fail(kind, 1, seconds=3)
    for _ in range(2):  # the second read: the connection pool is sound
        if maker == "fsspec" and kind == "oversized" and rng == "whole":
            # junk after a whole body poisons aiohttp's kept-alive connection: the next
            # answer cannot be parsed (HTTP 400 from aiohttp, not retried): an error
            # naming the URL, never wrong bytes
            try:
                got = store.get("k", byte_range)
            except RemoteStoreError as e:
                assert faulty.url("d/k") in str(e)
                continue
        else:
            got = store.get("k", byte_range)
        assert got == expected


@pytest.mark.parametrize("maker", sorted(MAKERS))
@pytest.mark.parametrize("kind", ["503", "stall", "short", "reset"])
def test_persistent_fault_exhausts_retries_naming_key_and_url(faulty, maker, kind):
    store = MAKERS[maker](faulty, timeout=0.5)
    faulty.fail(kind, 100, seconds=3)
    t0 = time.monotonic()
    with pytest.raises(RetriesExhaustedError) as info:
        store.get("k", RangeByteRequest(0, 100))
    # bounded: 3 attempts of at most the 0.5 s timeout each, never a hang (a generous
    # bound: this is no speed target)
    assert time.monotonic() - t0 < 10
    assert info.value.attempts == 3
    assert faulty.url("d/k") in str(info.value) and "'k'" in str(info.value)
    gets = sum(1 for m, p, _ in faulty.requests if m == "GET" and p == "d/k")
    if maker == "fsspec" and kind == "reset":
        # aiohttp itself resends an idempotent request once when a kept-alive
        # connection turns out dead: still bounded
        assert 3 <= gets <= 6
    else:
        assert gets == 3


def test_obstore_retries_are_exact(faulty):
    store = ObjectStore.from_url(faulty.url("d"), retry=RetryPolicy(5, 0.001, 0.002))
    faulty.fail("503", 4)
    assert store.get("k") == VALUE
    assert [m for m, _, _ in faulty.requests] == ["GET"] * 5  # obstore retried none itself
    faulty.reset()
    faulty.fail("503", 5)
    with pytest.raises(RetriesExhaustedError):
        store.get("k")
    assert len(faulty.requests) == 5


def test_obstore_missing_and_denied(faulty):
    store = _obstore_http(faulty)
    assert store.get("nope") is None
    assert store.get("nope", RangeByteRequest(0, 4)) is None
    assert store.get_many(["nope", "k"]) == [None, VALUE]
    assert store.get("k", RangeByteRequest(20000, 20010)) == b""  # past the end: clipped


def test_obstore_multi_range_is_one_call(faulty):
    store = _obstore_http(faulty)
    ranges = [RangeByteRequest(0, 100), RangeByteRequest(200, 300), RangeByteRequest(9000, 9100)]
    got = store.get_many(["k"] * 3, ranges)
    assert got == [VALUE[r.start:r.end] for r in ranges]
    # obstore merges ranges closer than shard_coalesce_gap (64 KiB): one GET
    assert faulty.requests == [("GET", "d/k", "bytes=0-9099")]
    faulty.reset()
    # a range past the end, and a missing key, fall back to one request per range
    got = store.get_many(["k", "k", "gone", "gone"],
                         [RangeByteRequest(0, 10), RangeByteRequest(20000, 20010),
                          RangeByteRequest(0, 1), RangeByteRequest(2, 3)])
    assert got == [VALUE[:10], b"", None, None]


def test_obstore_multi_range_faults(faulty):
    store = _obstore_http(faulty, timeout=0.5)
    ranges = [RangeByteRequest(0, 100), RangeByteRequest(200, 300)]
    for kind in ("503", "short", "reset", "stall", "oversized", "norange"):
        faulty.reset()
        faulty.fail(kind, 1, seconds=3)
        assert store.get_many(["k"] * 2, ranges) == [VALUE[:100], VALUE[200:300]], kind


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_failed_put_leaves_old_value(faulty, maker):
    store = MAKERS[maker](faulty)
    if maker == "fsspec":
        pytest.skip("fsspec's HTTP file system cannot write")
    store.set("c/0", b"old")
    faulty.fail("503", 100, method="PUT")
    with pytest.raises(RetriesExhaustedError, match="c/0"):
        store.set("c/0", b"new-value")
    assert store.get("c/0") == b"old"
    faulty.reset()
    # a multi-key write that fails part way: every key old or new, whole
    store.set_many({f"c/{i}": b"old%d" % i for i in range(8)})
    faulty.fail("reset", 100, method="PUT", path="d/c/5")
    faulty.fail("short", 1, method="PUT", path="d/c/6")
    with pytest.raises(RemoteStoreError, match="c/5"):
        store.set_many({f"c/{i}": b"new%d" % i for i in range(8)})
    for i in range(8):
        assert store.get(f"c/{i}") in (b"old%d" % i, b"new%d" % i)
    assert store.get("c/5") == b"old5"
