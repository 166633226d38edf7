"""ObjectStore (obstore): the store contract on obstore's memory, local and S3 (moto)
stores, HTTP through nginx, request counts, and real misbehaving servers."""

from __future__ import annotations

import pickle
import uuid

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
    assert store.url == url.rstrip("/")
    # as zarr-python's: the obstore store after object_store://, in its reprs and str
    assert repr(store) == f"ObjectStore(object_store://{store.store})" == f"ObjectStore({store})"
    ro = store.with_read_only()
    assert ro.read_only and ro != store and ro.get("k") == b"v"


def test_missing_dependency_message():
    from zarrfast.storage import obstore as mod

    assert mod._EXTRA_HINT == ('pip install "zarrfast[obstore]" (from a source checkout: '
                               'pip install ".[obstore]")')
    with pytest.raises(Exception, match="obstore store"):
        ObjectStore(object())


# ---------------------------------------------------------------------------
# faults: a real HTTP server misbehaving (tests/_helpers/fault_http.py)
# ---------------------------------------------------------------------------

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
    with pytest.raises(RetriesExhaustedError) as info:
        store.get("k", RangeByteRequest(0, 100))
    # bounded: 3 attempts (each cut by the 0.5 s timeout), counted, not timed
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


# ---------------------------------------------------------------------------
# the URL rule (zarrfast.storage.resolve.remote_store)
# ---------------------------------------------------------------------------
import zarrfast  # noqa: E402
from zarrfast.storage import make_store  # noqa: E402


def test_url_rule_auto(s3_server, tmp_path):
    url = s3_server.url()
    # s3fs-style options translate: ObjectStore
    store = make_store(url, storage_options=s3_server.storage_options())
    assert isinstance(store, ObjectStore)
    store.set("x", b"1")
    assert make_store(url, storage_options=s3_server.storage_options(), read_only=True).read_only
    # an fsspec-only option: FsspecStore
    opts = dict(s3_server.storage_options(), config_kwargs={"connect_timeout": 5})
    fs_store = make_store(url, storage_options=opts)
    assert isinstance(fs_store, FsspecStore) and fs_store.get("x") == b"1"
    # chained URLs, memory://, other protocols: fsspec
    assert isinstance(make_store(f"memory://zarrfast-{uuid.uuid4().hex}"), FsspecStore)
    assert isinstance(make_store("simplecache::" + url,
                                 storage_options={"s3": s3_server.storage_options()}),
                      FsspecStore)
    assert type(make_store("file://" + str(tmp_path))).__name__ == "LocalStore"
    assert isinstance(make_store("https://example.invalid/data.zarr"), ObjectStore)
    assert isinstance(make_store("gcs://bucket/data.zarr", storage_options={"anon": True}),
                      ObjectStore)


def test_url_rule_config(s3_server):
    url = s3_server.url()
    with zarrfast.config.set(remote_store="fsspec"):
        assert isinstance(make_store(url, storage_options=s3_server.storage_options()),
                          FsspecStore)
    with zarrfast.config.set(remote_store="obstore"):
        assert isinstance(make_store(url, storage_options=s3_server.storage_options()),
                          ObjectStore)
        from zarrfast.storage.errors import StorageOptionsError

        with pytest.raises(StorageOptionsError, match="config_kwargs"):
            make_store(url, storage_options={"config_kwargs": {}})
        assert isinstance(make_store(f"memory://zarrfast-{uuid.uuid4().hex}"), FsspecStore)
    with pytest.raises(Exception, match="remote_store"):
        zarrfast.config.set(remote_store="boto")


def test_array_round_trip_through_the_rule(s3_server):
    import numpy as np

    url = s3_server.url("a.zarr")
    data = np.arange(64 * 16, dtype="int32").reshape(64, 16)
    a = zarrfast.create_array(url, shape=data.shape, dtype=data.dtype, chunks=(1, 16),
                              storage_options=s3_server.storage_options())
    a[:] = data
    b = zarrfast.open_array(url, mode="r", storage_options=s3_server.storage_options())
    np.testing.assert_array_equal(b[:], data)
    assert isinstance(b.store, ObjectStore)


# ---------------------------------------------------------------------------
# HTTP through a real nginx: zarrfast arrays over http://, request counts
# ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def nginx_site(tmp_path_factory):
    """nginx serving a directory read-only, with two zarrfast arrays in it."""
    import numpy as np

    from _helpers.nginx import Nginx, nginx_path, settle

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    root = tmp_path_factory.mktemp("www")
    data = np.arange(64 * 256, dtype="int32").reshape(64, 256)
    zarrfast.create_array(str(root / "plain.zarr"), data=data, chunks=(8, 32))  # 64 chunks
    zarrfast.create_array(str(root / "sharded.zarr"), data=data, chunks=(8, 32),
                          shards=(32, 128))  # 4 shards of 16 inner chunks
    settle(root)
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, data
    finally:
        server.stop()


@pytest.mark.parametrize("name", ["plain", "sharded"])
def test_nginx_read_array(nginx_site, name):
    import numpy as np

    server, data = nginx_site
    url = server.url(f"{name}.zarr")
    store = make_store(url, read_only=True)
    assert isinstance(store, ObjectStore)
    a = zarrfast.open_array(store, mode="r")
    np.testing.assert_array_equal(a[:], data)
    np.testing.assert_array_equal(a[3:17, 40:200], data[3:17, 40:200])
    assert store.get("missing") is None


def test_nginx_request_counts(nginx_site):
    import numpy as np

    server, data = nginx_site
    store = ObjectStore.from_url(server.url("plain.zarr"), read_only=True)
    a = zarrfast.open_array(store, mode="r")
    server.clear_log()
    np.testing.assert_array_equal(a[:], data)
    reqs = server.requests()
    assert all(m == "GET" for m, *_ in reqs), reqs  # no HEAD, no listing
    assert len(reqs) == 64 and len({p for _, p, _, _ in reqs}) == 64

    store = ObjectStore.from_url(server.url("sharded.zarr"), read_only=True)
    a = zarrfast.open_array(store, mode="r")
    server.clear_log()
    np.testing.assert_array_equal(a[:], data)
    reqs = server.requests()
    # everything of every shard is needed: one whole GET per shard, nothing else
    assert sorted(p for _, p, _, _ in reqs) == [f"sharded.zarr/c/{i}/{j}"
                                                for i in (0, 1) for j in (0, 1)], reqs
    assert all(m == "GET" and s == 200 for m, _, _, s in reqs), reqs
    # half of the inner chunks of two shards: per shard the index once (a suffix
    # range) and the inner chunks' bytes in one coalesced range
    server.clear_log()
    np.testing.assert_array_equal(a[:, 0:64], data[:, 0:64])
    reqs = server.requests()
    shards = {p for _, p, _, _ in reqs}
    assert shards == {"sharded.zarr/c/0/0", "sharded.zarr/c/1/0"}, reqs
    for shard in shards:
        mine = [r for _, p, r, _ in reqs if p == shard]
        index = [r for r in mine if r.startswith("bytes=-")]
        assert len(index) == 1, mine  # the index once per shard per read
        assert len(mine) - len(index) == 1, mine
    # a partial read of a shard read before: its index kept under the shard's ETag,
    # only the range it needs (checked to come from the same version: see
    # tests/engine/test_tagged_shard_reads.py)
    server.clear_log()
    np.testing.assert_array_equal(a[0:8, 0:32], data[0:8, 0:32])
    reqs = server.requests()
    assert len(reqs) == 1 and not reqs[0][2].startswith("bytes=-"), reqs
    # ... and of a shard never read: its index, then the range
    server.clear_log()
    np.testing.assert_array_equal(a[40:48, 160:192], data[40:48, 160:192])
    reqs = server.requests()
    assert len(reqs) == 2 and reqs[0][2].startswith("bytes=-"), reqs


@pytest.mark.parametrize("choice", ["auto", "obstore"])
def test_without_obstore(choice, subprocess_cwd):
    """zarrfast imports without obstore; "auto" falls back to fsspec, "obstore" names the
    extra to install."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['obstore'] = None\n"
        "import zarrfast\n"
        "from zarrfast.storage import make_store\n"
        "try:\n"
        "    print(type(make_store('s3://bucket/x.zarr', storage_options={'anon': True})).__name__)\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = dict(__import__("os").environ, ZARRFAST_REMOTE_STORE=choice)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, cwd=subprocess_cwd)
    assert out.returncode == 0, out.stderr
    if choice == "auto":
        assert out.stdout.strip() == "FsspecStore"
    else:
        assert out.stdout.startswith("MissingDependencyError"), out.stdout
        assert 'pip install ".[obstore]"' in out.stdout


def test_s3_bulk_delete_and_sharded_counts(s3_server, s3_options):
    """delete_many is one DeleteObjects request; a sharded read fetches each index once."""
    import logging
    import re

    import numpy as np

    lines: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())  # no colours
            if '"' in msg:
                lines.append(msg.split('"')[1])

    handler = Count()
    log = logging.getLogger("werkzeug")
    old_level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        store = ObjectStore.from_url(s3_server.url(), s3_options)
        store.set_many({f"k/{i}": b"x" for i in range(20)})
        lines.clear()
        store.delete_many([f"k/{i}" for i in range(20)] + ["k/missing"])
        assert len(lines) == 1 and lines[0].startswith("POST") and "delete" in lines[0]
        assert list(store.list()) == []

        data = np.arange(64 * 256, dtype="int32").reshape(64, 256)
        zarrfast.create_array(store, data=data, chunks=(8, 32), shards=(32, 128))
        a = zarrfast.open_array(store.with_read_only(), mode="r")
        lines.clear()
        np.testing.assert_array_equal(a[:, 0:64], data[:, 0:64])
        gets = [line for line in lines if line.startswith("GET") and "/c/" in line]
        assert len(gets) == 4, lines  # 2 shards: the index once and one coalesced range
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)


def test_pickle_store_instance(tmp_path):
    store = ObjectStore(obs.LocalStore(str(tmp_path)), retry=2, max_concurrency=3)
    store.set("a/b", b"1")
    again = pickle.loads(pickle.dumps(store))
    assert again.get("a/b") == b"1" and again.retry.attempts == 2
    assert again.max_concurrency == 3 and str(tmp_path) in repr(again)
    with pytest.raises(Exception, match="max_concurrency"):
        ObjectStore(obs.MemoryStore(), max_concurrency=0)
    with pytest.raises(Exception, match="timeout"):
        ObjectStore.from_url("memory:///", timeout=-1)


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_denied_and_bad_request_are_not_retried(faulty, maker):
    from zarrfast.storage.errors import RemotePermissionError

    store = MAKERS[maker](faulty)
    faulty.fail("403", 100)
    with pytest.raises(RemotePermissionError) as info:
        store.get("k")
    assert faulty.url("d/k") in str(info.value) and len(faulty.requests) == 1
    faulty.reset()
    faulty.fail("400", 100)
    with pytest.raises(RemoteStoreError) as info:
        store.get("k", RangeByteRequest(0, 5))
    assert not isinstance(info.value, RetriesExhaustedError)
    assert faulty.url("d/k") in str(info.value) and len(faulty.requests) == 1
    faulty.reset()
    faulty.fail("500", 2)
    assert store.get("k") == VALUE  # 5xx: transient


def test_failed_array_write_leaves_chunks_old_or_new(faulty):
    """An array write whose PUT of one chunk keeps failing: the error names that chunk's
    key and URL; every chunk reads whole, the failed one old, the others new."""
    import numpy as np

    store = ObjectStore.from_url(faulty.url("arr"), retry=FAST_RETRY, timeout=1.0)
    a = zarrfast.create_array(store, shape=(8, 32), chunks=(8, 4), dtype="i4")
    a[:] = 1
    faulty.fail("503", 100, method="PUT", path="arr/c/0/3")
    with pytest.raises(RetriesExhaustedError, match="c/0/3") as info:
        a[:] = 2
    assert faulty.url("arr/c/0/3") in str(info.value)
    got = zarrfast.open_array(store, mode="r")[:]
    expected = np.full((8, 32), 2, dtype="i4")
    expected[:, 12:16] = 1
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("limit", [4, 16])
def test_reads_keep_max_concurrency_requests_in_flight_and_no_more(faulty, limit):
    """Blocking reads on the request pool, from one get_many and from several threads
    at once (as the engine's I/O threads call it): exactly up to the store's bound.  The
    server holds the requests until ``limit`` are in flight (it waited 50 ms for each
    before and counted: a loaded machine could keep fewer in flight in 50 ms), then
    answers each after 50 ms: a client sending more than ``limit`` would be seen."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    for i in range(48):
        faulty.objects[f"d/c/{i}"] = bytes([i]) * 100
    deadline = time.monotonic() + 30
    while faulty.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)  # (answers still stalling for earlier tests)
    faulty.peak_in_flight = 0
    faulty.latency = 0.05
    store = ObjectStore.from_url(faulty.url("d"), retry=FAST_RETRY, max_concurrency=limit)
    keys = [f"c/{i}" for i in range(48)]
    faulty.hold(limit)
    assert [bytes(v) for v in store.get_many(keys)] == [bytes([i]) * 100 for i in range(48)]
    assert not faulty.gate.timed_out, f"never {limit} requests in flight at once"
    assert faulty.peak_in_flight == limit
    faulty.peak_in_flight = 0
    faulty.hold(limit)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(store.get_many, [keys[j::4] for j in range(4)]))
    assert [bytes(v) for v in parts[1]] == [bytes([i]) * 100 for i in range(1, 48, 4)]
    assert not faulty.gate.timed_out, f"never {limit} requests in flight at once"
    assert faulty.peak_in_flight == limit
