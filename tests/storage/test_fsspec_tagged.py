"""FsspecStore over HTTP (fsspec's HTTPFileSystem) reads with the strong ETag of each
response (``tagged_reads``), so a shard's index is kept under its version, as
ObjectStore's are: checked with a real nginx and its access log, a server that sends no
ETag, and a shard replaced between two reads."""

from __future__ import annotations

import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import FsspecStore
from zarrfast.storage.base import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

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
        shard = root / "sharded.zarr" / "c" / "0" / "0"
        st = shard.stat()
        os.utime(shard, (st.st_atime + 5, st.st_mtime + 5))  # (nginx's ETag: seconds)
        server.clear_log()
        np.testing.assert_array_equal(a[0:20, 0:20], new[0:20, 0:20])
        np.testing.assert_array_equal(a[2, 3:30], new[2, 3:30])
        index = [r for p, r in _shard_requests(server) if r.startswith("bytes=-")]
        assert len(index) == 1, index  # read again once, then kept under the new ETag
    finally:
        zarrfast.open_array(path, mode="r+")[:] = DATA
    np.testing.assert_array_equal(a[:], DATA)


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
