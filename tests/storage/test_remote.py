"""FsspecStore: the store conformance suite on ``memory://`` and on a real S3 server
(moto, over HTTP), round trips through S3 (zarr-python reading and writing the same
objects: ``tests/interop/test_store_peers.py``), and the behaviour of the network layer
(concurrency, retries, errors) checked through a loopback HTTP proxy in front of the S3
server that delays, counts and fails requests."""

from __future__ import annotations

import http.client
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import (
    FsspecStore,
    RemotePermissionError,
    RemoteStoreError,
    RetriesExhaustedError,
    RetryPolicy,
    StorageOptionsError,
    Store,
    make_store,
)
from zarrfast.testing import StoreTests

from _helpers.gate import InFlightGate

pytest.importorskip("fsspec")



@pytest.fixture(autouse=True)
def _fsspec_for_urls():
    """This module tests FsspecStore: URLs resolve to it (the URL rule and ObjectStore
    are tested in test_obstore.py)."""
    with zarrfast.config.set(remote_store="fsspec"):
        yield


#: small backoff for tests: transient failures are retried within milliseconds
FAST_RETRY = RetryPolicy(attempts=4, base_delay=0.005, max_delay=0.02)


# ---------------------------------------------------------------------------
# the conformance suite
# ---------------------------------------------------------------------------
class TestFsspecMemoryStore(StoreTests):
    def make_store(self, tmp_path: Path) -> Store:
        return FsspecStore.from_url(f"memory://zarrfast-{uuid.uuid4().hex}")


class TestFsspecS3Store(StoreTests):
    # every request is an HTTP round trip to an in-process server: fewer of them
    n_threads = 4
    keys_per_thread = 8

    @pytest.fixture(autouse=True)
    def _s3(self, s3_server) -> None:
        self.s3 = s3_server

    def make_store(self, tmp_path: Path) -> Store:
        return FsspecStore.from_url(self.s3.url(), storage_options=self.s3.storage_options(),
                                    retry=FAST_RETRY)

    def test_keys_are_objects_below_the_root(self, store: FsspecStore) -> None:
        store.set("a/b", b"1")
        client = self.s3.boto3_client()
        prefix = store.path.split("/", 1)[1]
        listed = client.list_objects_v2(Bucket=self.s3.bucket, Prefix=prefix + "/")
        assert [o["Key"] for o in listed["Contents"]] == [prefix + "/a/b"]
        # objects other writers put there are keys; names no key can have are not listed
        client.put_object(Bucket=self.s3.bucket, Key=prefix + "/x/y", Body=b"2")
        client.put_object(Bucket=self.s3.bucket, Key=prefix + "/../escape", Body=b"3")
        client.put_object(Bucket=self.s3.bucket, Key=prefix + "/d//e", Body=b"4")
        assert store.get("x/y") == b"2"
        assert list(store.list()) == ["a/b", "x/y"]
        assert list(store.list_dir("")) == ["a", "d", "x"]  # "d//e" is below "d"

    def test_pickle_is_cheap_and_reconnects(self, store: FsspecStore) -> None:
        store.set("k", b"v")
        blob = pickle.dumps(store)
        assert len(blob) < 2000  # URL, options and settings, not a live client
        clone = pickle.loads(blob)
        assert clone == store
        assert clone.url == store.url and clone.retry == store.retry
        assert clone.get("k") == b"v"
        ro = pickle.loads(pickle.dumps(store.with_read_only(True)))
        assert ro.read_only and ro.get("k") == b"v"

    def test_repr_and_equality(self, store: FsspecStore) -> None:
        assert store.url.startswith(f"s3://{self.s3.bucket}/")
        # as zarr-python's FsspecStore (its str too, which node reprs print)
        assert repr(store) == str(store) == f"<FsspecStore(S3FileSystem, {store.path})>"
        assert store.path.startswith(f"{self.s3.bucket}/")
        assert store == store.with_read_only(False)
        assert store != store.with_read_only(True)


def test_memory_store_pickle_and_constructor() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/zarrfast-{uuid.uuid4().hex}"
    store = FsspecStore(fs, path=root)
    store.set("a/b", b"x")
    assert fs.cat_file(f"{root}/a/b") == b"x"
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and clone.get("a/b") == b"x"
    assert FsspecStore.from_url(f"memory://{root}").get("a/b") == b"x"
    assert FsspecStore.batched_reads is True


def test_constructor_checks() -> None:
    with pytest.raises(ZarrfastError, match="fsspec file system"):
        FsspecStore("memory://x")  # type: ignore[arg-type]
    with pytest.raises(ZarrfastError, match="needs a URL"):
        FsspecStore.from_url(b"memory://x")  # (a path without '://' is a local one)
    with pytest.raises(ZarrfastError, match="attempts"):
        RetryPolicy(attempts=0)
    policy = RetryPolicy(attempts=6, base_delay=0.1, max_delay=0.4)
    delays = [policy.delay(n) for n in range(1, 6)]
    assert all(0 < d <= 0.4 for d in delays)
    assert 0.05 <= delays[0] <= 0.1 and delays[-1] >= 0.2  # grows, jittered, capped


# ---------------------------------------------------------------------------
# make_store and storage_options
# ---------------------------------------------------------------------------
def test_make_store_resolves_urls(tmp_path: Path, s3_server) -> None:
    opts = s3_server.storage_options()
    url = s3_server.url()
    store = make_store(url, storage_options=opts)
    assert isinstance(store, FsspecStore) and not store.read_only
    assert make_store(url, read_only=True, storage_options=opts).read_only
    assert isinstance(make_store("memory://zarrfast-x"), FsspecStore)
    assert type(make_store("file://" + str(tmp_path))).__name__ == "LocalStore"


@pytest.mark.parametrize("store", ["local", "file", "dict", "none"])
def test_storage_options_unused_is_an_error(tmp_path: Path, store: str) -> None:
    target = {"local": str(tmp_path / "a.zarr"), "file": "file://" + str(tmp_path / "a.zarr"),
              "dict": {}, "none": None}[store]
    with pytest.raises(StorageOptionsError, match="storage_options was provided but unused"):
        zarrfast.open_array(target, mode="w", shape=(2,), storage_options={"anon": True})
    with pytest.raises(TypeError):  # zarr-python raises TypeError here too
        zarrfast.create_array(target, shape=(2,), dtype="i1", storage_options={"anon": True})
    assert not (tmp_path / "a.zarr").exists()


# ---------------------------------------------------------------------------
# arrays through S3 (zarr-python reading / writing the same objects:
# tests/interop/test_store_peers.py)
# ---------------------------------------------------------------------------
def test_save_load_and_convenience_creators(s3_server) -> None:
    opts = s3_server.storage_options()
    url = s3_server.url()
    zarrfast.save(url, np.arange(6), storage_options=opts)
    np.testing.assert_array_equal(zarrfast.load(url, storage_options=opts), np.arange(6))
    z = zarrfast.zeros((4, 4), chunks=(2, 2), store=s3_server.url(), storage_options=opts)
    assert isinstance(z.store, FsspecStore) and z[:].sum() == 0
    g = zarrfast.create_group(s3_server.url(), storage_options=opts)
    assert isinstance(g.store, FsspecStore)


# ---------------------------------------------------------------------------
# the network layer, through a proxy
# ---------------------------------------------------------------------------
class FaultyProxy:
    """A threaded loopback HTTP proxy in front of the S3 server.  It delays every
    request by ``delay`` seconds, records how many are in flight at once and how many
    reached each path, and answers a path with queued faults first: an HTTP status
    (with an S3 error document) or ``"reset"`` (close the connection, no response).
    ``gate.hold(n)`` holds the next requests until ``n`` are in flight at once."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.split("//", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.delay = 0.0
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate = InFlightGate()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.faults: dict[str, list] = defaultdict(list)
        self.always: dict[str, int] = {}
        #: answer DeleteObjects with a per-key AccessDenied (HTTP 200), as S3 does for
        #: credentials without s3:DeleteObject
        self.deny_deletes = False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
        self.server.daemon_threads = True
        self.server.proxy = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def hits(self, suffix: str, method: str | None = None) -> int:
        return sum(n for (m, p), n in self.requests.items()
                   if p.split("?")[0].endswith(suffix) and method in (None, m))

    def _begin(self, method: str, path: str):
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.requests[(method, path)] += 1
            bare = path.split("?")[0]
            for suffix, queue in self.faults.items():
                if bare.endswith(suffix) and queue:
                    return queue.pop(0)
            for suffix, status in self.always.items():
                if bare.endswith(suffix):
                    return status
        return None

    def _end(self) -> None:
        with self.lock:
            self.in_flight -= 1


_S3_ERRORS = {403: "AccessDenied", 500: "InternalError", 503: "ServiceUnavailable",
              400: "InvalidArgument"}


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle()

    do_PUT = do_POST = do_HEAD = do_DELETE = do_GET

    def _handle(self) -> None:
        proxy: FaultyProxy = self.server.proxy  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        fault = proxy._begin(self.command, self.path)
        proxy.gate.enter()
        try:
            if proxy.delay:
                time.sleep(proxy.delay)
            if proxy.deny_deletes and self.command == "POST" and "delete" in self.path:
                self._deny_deletes(body or b"")
            elif fault == "reset":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif fault is not None:
                self._error(int(fault))
            else:
                self._forward(proxy, body)
        finally:
            proxy.gate.leave()
            proxy._end()

    def _error(self, status: int) -> None:
        doc = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{_S3_ERRORS[status]}'
               f"</Code><Message>injected by the test proxy</Message></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(doc)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(doc)

    def _deny_deletes(self, body: bytes) -> None:
        import re

        errors = b"".join(b"<Error><Key>" + k + b"</Key><Code>AccessDenied</Code>"
                          b"<Message>denied by the test proxy</Message></Error>"
                          for k in re.findall(rb"<Key>(.*?)</Key>", body))
        doc = (b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns='
               b'"http://s3.amazonaws.com/doc/2006-03-01/">' + errors + b"</DeleteResult>")
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        self.wfile.write(doc)

    def _forward(self, proxy: FaultyProxy, body: bytes | None) -> None:
        conn = http.client.HTTPConnection(*proxy.upstream, timeout=30)
        try:
            conn.request(self.command, self.path, body=body, headers=dict(self.headers))
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        self.send_response(resp.status)
        for name, value in resp.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        length = resp.getheader("Content-Length") if self.command == "HEAD" else len(data)
        self.send_header("Content-Length", str(length or 0))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


@pytest.fixture
def proxy(s3_server):
    p = FaultyProxy(s3_server.endpoint_url)
    try:
        yield p
    finally:
        p.close()


def _write_array(s3_server, n_chunks: int = 64, **kwargs) -> tuple[str, np.ndarray]:
    url = s3_server.url(f"{uuid.uuid4().hex}/a.zarr")
    data = np.arange(n_chunks * 16, dtype="int32").reshape(n_chunks, 16)
    a = zarrfast.create_array(url, shape=data.shape, dtype=data.dtype, chunks=(1, 16),
                              storage_options=s3_server.storage_options(), **kwargs)
    a[:] = data
    return url, data


def test_get_many_is_concurrent(s3_server, proxy) -> None:
    url, data = _write_array(s3_server, 64)
    a = zarrfast.open_array(url, mode="r", storage_options=s3_server.storage_options(proxy.url))
    before = sum(proxy.requests.values())
    # the proof is the number of requests the proxy saw in flight at once: it holds
    # them until 9 are (it delayed each by 100 ms and counted before, which a loaded
    # machine could make fewer overlap)
    proxy.gate.hold(9)
    got = a[:]
    np.testing.assert_array_equal(got, data)
    # one GET per chunk, no HEAD first
    assert sum(proxy.requests.values()) - before == 64
    assert proxy.hits("/c/0/0", "GET") == 1 and proxy.hits("/c/0/0", "HEAD") == 0
    assert not proxy.gate.timed_out, "never 9 requests in flight at once"
    assert proxy.max_in_flight > 8, proxy.max_in_flight


def test_set_many_and_delete_many_are_concurrent(s3_server, proxy) -> None:
    store = FsspecStore.from_url(s3_server.url(), storage_options=s3_server.storage_options(
        proxy.url))
    assert store.get("k/0") is None  # connects (the client's setup is not timed)
    proxy.gate.hold(5)  # (the PUTs held until 5 are in flight at once)
    store.set_many({f"k/{i}": bytes([i]) * 100 for i in range(32)})
    assert not proxy.gate.timed_out, "never 5 PUTs in flight at once"
    assert proxy.max_in_flight > 4, proxy.max_in_flight
    assert store.get_many([f"k/{i}" for i in (0, 31)]) == [b"\x00" * 100, b"\x1f" * 100]
    before = sum(proxy.requests.values())
    store.delete_many([f"k/{i}" for i in range(32)] + ["k/missing"])
    assert sum(proxy.requests.values()) - before == 1  # one DeleteObjects request
    assert list(store.list()) == []


def test_sharded_partial_reads_use_ranged_gets(s3_server, proxy) -> None:
    url = s3_server.url(f"{uuid.uuid4().hex}/s.zarr")
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    zarrfast.create_array(url, data=data, chunks=(8, 8), shards=(64, 64),
                          storage_options=s3_server.storage_options())
    a = zarrfast.open_array(url, mode="r", storage_options=s3_server.storage_options(proxy.url))
    np.testing.assert_array_equal(a[3:5, 10:12], data[3:5, 10:12])
    shard_gets = proxy.hits("/c/0/0", "GET")
    assert 2 <= shard_gets <= 3  # the index (a suffix range), then the inner chunk's bytes


def test_transient_failures_are_retried(s3_server, proxy) -> None:
    url, data = _write_array(s3_server, 8)
    proxy.faults["/c/3/0"] = [503, "reset", 500]
    proxy.faults["/c/5/0"] = ["reset"]
    a = zarrfast.open_array(url, mode="r", storage_options=s3_server.storage_options(proxy.url))
    a.store.retry = FAST_RETRY
    np.testing.assert_array_equal(a[:], data)
    assert proxy.hits("/c/3/0") == 4  # three failures, then the value
    assert proxy.hits("/c/5/0") == 2
    assert proxy.hits("/c/4/0") == 1


def test_retries_are_bounded_and_reported(s3_server, proxy) -> None:
    url, _ = _write_array(s3_server, 4)
    proxy.always["/c/2/0"] = 503
    store = FsspecStore.from_url(url, storage_options=s3_server.storage_options(proxy.url),
                                 retry=RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02))
    with pytest.raises(RetriesExhaustedError) as info:
        store.get_many(["c/0/0", "c/2/0"])
    msg = str(info.value)
    assert f"{url}/c/2/0" in msg and "'c/2/0'" in msg and "3 attempts" in msg
    assert info.value.attempts == 3
    assert isinstance(info.value, OSError) and isinstance(info.value, ZarrfastError)
    assert proxy.hits("/c/2/0") == 3
    # writes are retried and bounded the same way
    proxy.always["/new"] = 500
    with pytest.raises(RetriesExhaustedError, match="writing .*/new"):
        store.set("new", b"x")
    assert proxy.hits("/new") == 3


def test_forbidden_is_not_retried(s3_server, proxy) -> None:
    url, _ = _write_array(s3_server, 4)
    proxy.always["/c/1/0"] = 403
    store = FsspecStore.from_url(url, storage_options=s3_server.storage_options(proxy.url),
                                 retry=FAST_RETRY)
    with pytest.raises(RemotePermissionError) as info:
        store.get("c/1/0")
    assert f"{url}/c/1/0" in str(info.value) and "'c/1/0'" in str(info.value)
    assert isinstance(info.value, PermissionError)
    assert proxy.hits("/c/1/0") == 1
    a = zarrfast.open_array(url, mode="r", storage_options=s3_server.storage_options(proxy.url))
    with pytest.raises(PermissionError, match="c/1/0"):
        a[:]


def test_bad_request_is_not_retried(s3_server, proxy) -> None:
    url, _ = _write_array(s3_server, 2)
    proxy.always["/c/0/0"] = 400
    store = FsspecStore.from_url(url, storage_options=s3_server.storage_options(proxy.url),
                                 retry=FAST_RETRY)
    with pytest.raises(RemoteStoreError, match=r"c/0/0") as info:
        store.get("c/0/0")
    assert not isinstance(info.value, RetriesExhaustedError)
    assert proxy.hits("/c/0/0") == 1


def test_missing_key_is_none_not_an_error(s3_server, proxy) -> None:
    store = FsspecStore.from_url(s3_server.url(), storage_options=s3_server.storage_options(
        proxy.url), retry=FAST_RETRY)
    assert store.get("nothing/here") is None
    assert store.get_many(["a", "b"]) == [None, None]
    assert proxy.hits("/nothing/here") == 1  # a 404 is an answer, not retried


def test_unreachable_endpoint(s3_server) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = s3_server.storage_options(f"http://127.0.0.1:{port}")
    url = s3_server.url()
    store = FsspecStore.from_url(url, storage_options=opts,
                                 retry=RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01))
    with pytest.raises(RemoteStoreError) as info:
        store.get("zarr.json")
    assert f"{url}/zarr.json" in str(info.value) and "'zarr.json'" in str(info.value)
    assert "2 attempts" in str(info.value)
    with pytest.raises(RemoteStoreError, match=url):
        zarrfast.open_array(url, mode="r", storage_options=opts)


@pytest.mark.parametrize("blocked", ["fsspec", "s3fs"])
def test_missing_optional_dependency_names_the_extra(blocked: str, subprocess_cwd) -> None:
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "import zarrfast\n"
        "try:\n"
        "    zarrfast.open_array('s3://bucket/x.zarr', mode='r')\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               ZARRFAST_REMOTE_STORE="fsspec")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, cwd=subprocess_cwd)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MissingDependencyError"), out.stdout + out.stderr
    assert ('pip install "zarrfast[remote]" (from a source checkout: '
            'pip install ".[remote]")') in out.stdout
    assert blocked in out.stdout


def test_a_protocol_outside_the_remote_extra_names_its_own_package(subprocess_cwd) -> None:
    """``gs://`` needs gcsfs, which the remote extra does not bring: the message says to
    install gcsfs itself, not the extra."""
    code = (
        "import sys; sys.modules['gcsfs'] = None\n"
        "from zarrfast.storage import FsspecStore\n"
        "try:\n"
        "    FsspecStore.from_url('gs://bucket/x.zarr')\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=subprocess_cwd)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("MissingDependencyError"), out.stdout + out.stderr
    assert "pip install gcsfs" in out.stdout and "zarrfast[remote]" not in out.stdout


def test_http_read_only_access(tmp_path: Path) -> None:
    """Plain ``http://`` (fsspec's HTTPFileSystem) on a static file server: reads,
    including the byte ranges of sharded arrays; missing keys read as None."""
    import functools

    pytest.importorskip("aiohttp")
    data = np.arange(24 * 24, dtype="i2").reshape(24, 24)
    zarrfast.create_array(str(tmp_path / "a.zarr"), data=data, chunks=(8, 8))
    zarrfast.create_array(str(tmp_path / "s.zarr"), data=data, chunks=(4, 4), shards=(12, 12))
    handler = functools.partial(_RangeFileHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        a = zarrfast.open_array(f"{base}/a.zarr", mode="r")
        assert isinstance(a.store, FsspecStore)
        np.testing.assert_array_equal(a[:], data)
        s = zarrfast.open_array(f"{base}/s.zarr", mode="r")
        np.testing.assert_array_equal(s[:], data)
        np.testing.assert_array_equal(s[5:7, 13:15], data[5:7, 13:15])
        assert a.store.get("c/9/9") is None
        assert _RangeFileHandler.ranged > 0  # the partial read used Range requests
    finally:
        server.shutdown()
        server.server_close()


class _RangeFileHandler(SimpleHTTPRequestHandler):
    """A static file server that honours single ``Range: bytes=`` requests."""

    ranged = 0

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        spec = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not spec or not os.path.isfile(path):
            return super().do_GET()
        with open(path, "rb") as f:
            body = f.read()
        first, last = spec.split("=", 1)[1].split("-")
        if first == "":
            start, stop = max(len(body) - int(last), 0), len(body)
        else:
            start, stop = int(first), (int(last) + 1 if last else len(body))
        part = body[start:min(stop, len(body))]
        type(self).ranged += 1
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{start + len(part) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part)


def test_refused_deletes_raise_and_keep_the_data(s3_server, proxy) -> None:
    """S3 answers a DeleteObjects it refuses with HTTP 200 and per-key errors: those
    must raise (naming URL and key), not look like success."""
    url = s3_server.url(f"{uuid.uuid4().hex}/del.zarr")
    store = FsspecStore.from_url(url, storage_options=s3_server.storage_options(proxy.url))
    store.set("a", b"1")
    store.set("b/c", b"2")
    proxy.deny_deletes = True
    with pytest.raises(RemotePermissionError, match=r"del\.zarr/a.*key 'a'"):
        store.delete("a")
    with pytest.raises(RemotePermissionError):
        store.delete_dir("")
    proxy.deny_deletes = False
    assert sorted(store.list()) == ["a", "b/c"] and store.get("a") == b"1"
    store.delete_many(["a", "missing"])  # a missing key is no error
    assert sorted(store.list()) == ["b/c"]


def test_fsspec_store_identity_and_root_paths(tmp_path) -> None:
    import fsspec

    a = FsspecStore.from_url("memory://idtest")
    b = FsspecStore(fsspec.filesystem("memory"), path="memory://idtest")
    assert a == b and hash(a) == hash(b)
    (tmp_path / "f").write_bytes(b"x")
    root = FsspecStore(fsspec.filesystem("file"), path="/")
    assert root.get(str(tmp_path / "f").lstrip("/")) == b"x"  # not relative to the cwd
