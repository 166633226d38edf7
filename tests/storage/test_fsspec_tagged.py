"""FsspecStore over HTTP (fsspec's HTTPFileSystem) reads with the strong ETag of each
response (``tagged_reads``), so a shard's index is kept under its version, as
ObjectStore's are: checked with a real nginx and its access log, a server that sends no
ETag, and a shard replaced between two reads."""

from __future__ import annotations

import functools
import os
import threading
import time
import urllib.request
from datetime import UTC
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import crc32c
import numpy as np
import pytest

import zarrfast
from zarrfast.storage import FsspecStore
from zarrfast.storage.base import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from _helpers.nginx import settle

pytest.importorskip("aiohttp")

DATA = np.arange(64 * 256, dtype="int32").reshape(64, 256)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """nginx serving a sharded array (4 shards of 16 inner chunks) and a small file."""
    from _helpers.nginx import Nginx, nginx_path

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    root = tmp_path_factory.mktemp("www")
    zarrfast.create_array(str(root / "sharded.zarr"), data=DATA, chunks=(8, 32),
                          shards=(32, 128))
    (root / "blob").write_bytes(bytes(range(200)))
    settle(root)
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, root
    finally:
        server.stop()


def _http_store(url: str) -> FsspecStore:
    return FsspecStore.from_url(url, read_only=True)


def test_reads_carry_the_strong_etag(site):
    server, _ = site
    store = _http_store(server.url(""))
    assert store.tagged_reads
    value, tag = store.get_tagged("blob")
    assert value == bytes(range(200))
    assert isinstance(tag, str) and tag.startswith('"'), tag  # nginx: "mtime-size"
    ranges = [None, RangeByteRequest(10, 20), OffsetByteRequest(190), SuffixByteRequest(7),
              RangeByteRequest(195, 400), RangeByteRequest(5, 5)]
    values, tags = store.get_many_tagged(["blob"] * len(ranges), ranges)
    assert values == [store.get("blob", r) for r in ranges]
    assert values[1:4] == [bytes(range(10, 20)), bytes(range(190, 200)),
                           bytes(range(193, 200))]
    assert tags[:5] == [tag] * 5 and tags[5] is None  # (an empty range: no request)
    assert store.get_tagged("missing") == (None, None)
    assert store.get_many_tagged([], []) == ([], [])


def test_other_file_systems_and_subclasses_are_not_tagged(site, tmp_path):
    server, _ = site

    class Mine(FsspecStore):
        def get(self, key, byte_range=None):
            return super().get(key, byte_range)

    assert not Mine.from_url(server.url(""), read_only=True).tagged_reads
    local = FsspecStore.from_url(f"file://{tmp_path}")
    local.set("k", b"xyz")
    assert not local.tagged_reads
    assert local.get_tagged("k") == (b"xyz", None)


def _shard_requests(server):
    return [(p, r) for _, p, r, _ in server.requests() if "/c/" in p]


def test_a_shard_index_is_read_once_then_kept(site):
    server, _ = site
    a = zarrfast.open_array(_http_store(server.url("sharded.zarr")), mode="r")
    server.clear_log()
    np.testing.assert_array_equal(a[0:8, 0:32], DATA[0:8, 0:32])
    reqs = _shard_requests(server)
    assert [r.startswith("bytes=-") for _, r in reqs] == [True, False], reqs
    for box in [(slice(8, 16), slice(32, 64)), (slice(3, 30), slice(5, 120)),
                (slice(0, 8), slice(0, 32))]:
        server.clear_log()
        np.testing.assert_array_equal(a[box], DATA[box])
        reqs = _shard_requests(server)
        assert reqs and not any(r.startswith("bytes=-") for _, r in reqs), reqs
    # another shard: its own index, once
    server.clear_log()
    np.testing.assert_array_equal(a[40:48, 160:192], DATA[40:48, 160:192])
    reqs = _shard_requests(server)
    assert [r.startswith("bytes=-") for _, r in reqs] == [True, False], reqs


def test_a_replaced_shard_is_read_with_its_new_index(site):
    server, root = site
    path = str(root / "sharded.zarr")
    a = zarrfast.open_array(_http_store(server.url("sharded.zarr")), mode="r")
    np.testing.assert_array_equal(a[0:20, 0:20], DATA[0:20, 0:20])  # (index kept)
    new = (DATA * 3 + 7)[::-1].copy()
    new[0:8, 0:8] = 0  # (a whole inner chunk of fill: left out, the index moves)
    try:
        zarrfast.open_array(path, mode="r+")[:] = new
        settle(root / "sharded.zarr", 60)  # (a settled version, of another second)
        server.clear_log()
        np.testing.assert_array_equal(a[0:20, 0:20], new[0:20, 0:20])
        np.testing.assert_array_equal(a[2, 3:30], new[2, 3:30])
        index = [r for p, r in _shard_requests(server) if r.startswith("bytes=-")]
        assert len(index) == 1, index  # read again once, then kept under the new ETag
    finally:
        zarrfast.open_array(path, mode="r+")[:] = DATA
        settle(root / "sharded.zarr")
    np.testing.assert_array_equal(a[:], DATA)


def _etag(url: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as r:
        return r.headers["ETag"]


def _swap_inner_chunks_0_and_1(shard) -> None:
    """Another version of ``shard`` of the same size and values: its uncompressed inner
    chunks 0 and 1 change places in the file, their index entries with them."""
    raw = bytearray(shard.read_bytes())
    n = 16  # inner chunks a shard; the index at the end: (offset, size) each, a CRC-32C
    index = np.frombuffer(bytes(raw[-(16 * n + 4):-4]), dtype="<u8").reshape(n, 2).copy()
    (o0, s0), (o1, s1) = index[0].tolist(), index[1].tolist()
    assert s0 == s1
    raw[o0:o0 + s0], raw[o1:o1 + s1] = raw[o1:o1 + s1], raw[o0:o0 + s0]
    index[[0, 1], 0] = o1, o0
    packed = index.tobytes()
    raw[-(16 * n + 4):] = packed + crc32c.crc32c(packed).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))


@pytest.mark.parametrize("kind", ["fsspec", "obstore"])
def test_an_etag_not_yet_settled_keeps_no_index(site, kind):
    """nginx's ETag is the modification time in whole seconds and the size: two versions
    of a shard of the same size written in one second share it.  A version whose second
    is not over when it is served (here: modified in the future) is not tagged, so its
    index is not kept, and the other version is read with its own index."""
    server, root = site
    name = f"racy_{kind}.zarr"
    path = root / name
    zarrfast.create_array(str(path), data=DATA, chunks=(8, 32), shards=(32, 128),
                          compressors=None)
    shard = path / "c" / "0" / "0"
    later = int(time.time()) + 3600
    os.utime(shard, (later, later))
    if kind == "fsspec":
        store: Any = _http_store(server.url(name))
    else:
        obstore = pytest.importorskip("obstore")
        from zarrfast.storage import ObjectStore

        store = ObjectStore(obstore.store.HTTPStore.from_url(
            server.url(name), client_options={"allow_http": True}), read_only=True)
    assert store.tagged_reads
    assert store.get_tagged("c/0/0", SuffixByteRequest(4))[1] is None
    a = zarrfast.open_array(store, mode="r")
    np.testing.assert_array_equal(a[0:8, 0:64], DATA[0:8, 0:64])
    before = _etag(server.url(f"{name}/c/0/0"))
    _swap_inner_chunks_0_and_1(shard)
    os.utime(shard, (later, later))
    assert _etag(server.url(f"{name}/c/0/0")) == before  # (the same ETag: a real race)
    server.clear_log()
    np.testing.assert_array_equal(a[0:8, 0:64], DATA[0:8, 0:64])
    index = [r for p, r in _shard_requests(server) if name in p and r.startswith("bytes=-")]
    assert len(index) == 1, index  # (read again: not kept)


class _CountingHandler(SimpleHTTPRequestHandler):
    """A server that sends no ETag (Python's): counts the requests of each range."""

    def log_message(self, *args):
        self.server.ranges.append((self.path, self.headers.get("Range")))

    def send_head(self):
        # Python's handler ignores Range: serve the asked bytes (206) like nginx
        rng = self.headers.get("Range")
        path = self.translate_path(self.path)
        if rng is None or not os.path.isfile(path):
            return super().send_head()
        data = open(path, "rb").read()
        spec = rng.removeprefix("bytes=")
        lo, _, hi = spec.partition("-")
        if lo == "":
            lo_i, hi_i = max(len(data) - int(hi), 0), len(data)
        else:
            lo_i, hi_i = int(lo), (len(data) if hi == "" else min(int(hi) + 1, len(data)))
        body = data[lo_i:hi_i]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {lo_i}-{hi_i - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        import io

        return io.BytesIO(body)


def test_without_etags_every_read_asks_for_the_index(tmp_path):
    zarrfast.create_array(str(tmp_path / "sharded.zarr"), data=DATA, chunks=(8, 32),
                          shards=(32, 128))
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_CountingHandler, directory=str(tmp_path)))
    server.ranges = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/sharded.zarr"
        store = _http_store(url)
        assert store.tagged_reads
        assert store.get_tagged("c/0/0", SuffixByteRequest(4))[1] is None
        a = zarrfast.open_array(store, mode="r")
        for _ in range(2):
            server.ranges.clear()  # type: ignore[attr-defined]
            np.testing.assert_array_equal(a[0:8, 0:32], DATA[0:8, 0:32])
            got = server.ranges  # type: ignore[attr-defined]
            assert sum(1 for _, r in got if r and r.startswith("bytes=-")) == 1, got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize(("etag", "modified", "served", "kept"), [
    ('"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 09:00:03 GMT", True),
    # (within CLOCK_SKEW of its second: perhaps stamped by a clock behind the server's)
    ('"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 09:00:02 GMT", False),
    ('"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 09:00:01 GMT", False),
    ('"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 09:00:00 GMT", False),
    ('"a-1"', "Mon, 07 Dec 2026 09:00:05 GMT", "Mon, 07 Dec 2026 09:00:00 GMT", False),
    ('"a-1"', "not a date", "Mon, 07 Dec 2026 09:00:01 GMT", False),
    ('"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "not a date", False),
    ('"a-1"', None, None, True),  # (no Last-Modified: the ETag is not made of it)
    ('W/"a-1"', "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 10:00:00 GMT", False),
    (None, "Mon, 07 Dec 2026 09:00:00 GMT", "Mon, 07 Dec 2026 10:00:00 GMT", False),
    ('"a-1"', 1_000.9, 1_003.0, True),
    ('"a-1"', 1_000.9, 1_002.9, False),
    ('"a-1"', 1_000.1, 1_000.9, False),
])
def test_an_etag_is_kept_once_its_second_is_over(etag, modified, served, kept):
    from zarrfast.storage.remote import settled_etag

    assert settled_etag(etag, modified, served) == (etag if kept else None)


def test_without_a_date_the_local_clock_less_its_skew_judges():
    from datetime import datetime

    from zarrfast.storage.remote import CLOCK_SKEW, settled_etag

    now = time.time()
    old = datetime.fromtimestamp(now - CLOCK_SKEW - 5, tz=UTC)
    assert settled_etag('"x"', old) == '"x"'
    assert settled_etag('"x"', datetime.fromtimestamp(now + 60, tz=UTC)) is None
