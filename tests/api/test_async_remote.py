"""An awaited read of many chunks from S3 keeps many requests in flight.

moto's S3 application runs behind a WSGI layer of this module that counts the requests
being served at once (the server's own count, not the client's) and holds the chunk
GETs until a number of them are in flight together (``_helpers.gate``: a count no load
can make smaller; a client that never sends that many at once is seen).  The
array is read with ``await AsyncArray.getitem``, through both remote stores
(fsspec/s3fs and obstore)."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

import zarrfast
import zarrfast.api.asynchronous as za

from _helpers.gate import InFlightGate

pytestmark = pytest.mark.asyncio

BUCKET = "zarrfast-async"
KEY, SECRET = "testing-key", "testing-secret"  # moto accepts any credentials


class CountingApp:
    """A WSGI layer counting the requests in flight; chunk GETs pass ``gate``."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.chunk_gets = 0
        self.gate = InFlightGate()

    def reset(self) -> None:
        with self.lock:
            self.max_in_flight = self.in_flight
            self.chunk_gets = 0

    def __call__(self, environ, start_response):
        chunk_get = environ["REQUEST_METHOD"] == "GET" and "/c/" in environ["PATH_INFO"]
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.chunk_gets += chunk_get
        if chunk_get:
            self.gate.enter()
        try:
            # the body is read here, inside the count
            return [b"".join(self.app(environ, start_response))]
        finally:
            if chunk_get:
                self.gate.leave()
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="module")
def counting_s3() -> Iterator[tuple[str, CountingApp]]:
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from moto.moto_server import werkzeug_app
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    # (moto 5.2 has no request handler of its own: werkzeug's default then)
    handler = getattr(werkzeug_app, "MotoRequestHandler", None)

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = CountingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", port, app, True, request_handler=handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=BUCKET)
        yield endpoint, app
    finally:
        server.shutdown()
        thread.join()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _options(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "key": KEY, "secret": SECRET,
            "client_kwargs": {"region_name": "us-east-1"}}


@pytest.mark.parametrize("remote_store", ["fsspec", "obstore"])
async def test_awaited_read_keeps_many_requests_in_flight(counting_s3, remote_store) -> None:
    if remote_store == "obstore":
        pytest.importorskip("obstore")
    endpoint, app = counting_s3
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr"
    data = np.arange(64 * 16, dtype="int32").reshape(64, 16)
    with zarrfast.config.set(remote_store=remote_store):
        made = await za.create_array(url, shape=data.shape, chunks=(1, 16), dtype="int32",
                                     storage_options=_options(endpoint))
        await made.setitem(slice(None), data)
        arr = await za.open_array(url, mode="r", storage_options=_options(endpoint))
        assert type(arr.store).__name__ == {"fsspec": "FsspecStore",
                                            "obstore": "ObjectStore"}[remote_store]
        app.reset()
        app.gate.hold(9)
        try:
            got = await arr.getitem(slice(None))
        finally:
            app.gate.reset()
    np.testing.assert_array_equal(got, data)
    assert app.chunk_gets == 64  # one GET per chunk
    # the chunk GETs were held until 9 were in flight (they were held 100 ms each and
    # counted before: a loaded machine could make fewer overlap in 100 ms)
    assert not app.gate.timed_out, "never 9 chunk GETs in flight at once"
    assert app.max_in_flight > 8, app.max_in_flight


async def test_two_awaited_reads_overlap(counting_s3) -> None:
    """Two arrays of 8 chunks read with asyncio.gather: both reads' requests are in
    flight together (the loop hands each read to its own worker thread), more than the
    8 GETs one read of them makes."""
    endpoint, app = counting_s3
    arrays = []
    with zarrfast.config.set(remote_store="fsspec"):
        for _ in range(2):
            url = f"s3://{BUCKET}/{uuid.uuid4().hex}/b.zarr"
            a = await za.create_array(url, shape=(8,), chunks=(1,), dtype="u1",
                                      storage_options=_options(endpoint))
            await a.setitem(slice(None), np.arange(8, dtype="u1"))
            arrays.append(await za.open_array(url, mode="r",
                                              storage_options=_options(endpoint)))
        app.reset()
        app.gate.hold(9)  # (one read alone makes 8)
        try:
            got = await asyncio.gather(*(a.getitem(slice(None)) for a in arrays))
        finally:
            app.gate.reset()
    for g in got:
        np.testing.assert_array_equal(g, np.arange(8))
    assert app.chunk_gets == 16
    assert not app.gate.timed_out, "the two reads' GETs were never 9 in flight at once"
    assert app.max_in_flight > 8, app.max_in_flight


async def test_fsspec_store_open_from_a_url(counting_s3) -> None:
    from zarrfast.storage import AsyncStore, FsspecStore

    endpoint, _ = counting_s3
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    store = await FsspecStore.open(url=url, storage_options=_options(endpoint))
    assert isinstance(store, FsspecStore) and not store.read_only
    await AsyncStore(store).set("k", b"v")
    assert store.get("k") == b"v"
    ro = await FsspecStore.open(url=url, storage_options=_options(endpoint), read_only=True)
    assert ro.read_only and ro.get("k") == b"v"
