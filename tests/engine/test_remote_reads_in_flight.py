"""Remote reads have their own bound on requests in flight: ``config
remote_reads_in_flight`` (``ZARRFAST_REMOTE_READS_IN_FLIGHT``), an ``ObjectStore``'s
``reads_in_flight``, apart from ``io_concurrency`` (writes, the engine's I/O threads).

The counts are the server's: a real HTTP server on loopback (``_helpers.fault_http``)
holds the requests until a number of them are in flight at once (``_helpers.gate``:
no load can make the count smaller), then answers each after a delay, so that a client
with more in flight than its bound would be seen.  The values are checked against
NumPy over a real nginx, with missing and damaged chunks among many fetched at once.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import zstd_prefix
from zarrfast.storage import ObjectStore

pytest.importorskip("obstore")

#: a (N, 32) uint16 array in chunks of 64 rows (4 KiB each, decoded)
ROWS, COLS = 64, 32
N_CHUNKS = 100
SHAPE = (N_CHUNKS * ROWS - 17, COLS)  # (the last chunk at the array's edge)
FILL = 5


def _values() -> np.ndarray:
    return np.random.default_rng(60).integers(0, 3000, SHAPE, dtype=np.uint16)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)).replace(os.sep, "/"): p.read_bytes()
            for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A real HTTP server holding ``arr`` (one array of ``N_CHUNKS`` zstd chunks) and
    ``group`` (20 arrays of 4 chunks, the same region of each read at once)."""
    from _helpers.fault_http import FaultServer

    root = tmp_path_factory.mktemp("objects")
    data = _values()
    zarrfast.create_array(str(root / "arr"), data=data, chunks=(ROWS, COLS),
                          compressors=[ZstdCodec(level=1)], fill_value=FILL)
    g = zarrfast.open_group(str(root / "group"), mode="w")
    for i in range(20):
        g.create_array(f"a{i}", data=(data[:2 * ROWS, :2 * COLS // 2] + i), chunks=(ROWS, 16),
                       compressors=[ZstdCodec(level=1)])
    server = FaultServer().start()
    server.objects.update({f"d/{k}": v for k, v in _files(root).items()})
    try:
        yield server, data
    finally:
        server.stop()


@pytest.fixture
def server(served):
    server, data = served
    server.reset()
    yield server, data
    server.reset()


def _gather_peak(server, idx: np.ndarray, hold: int, **settings) -> tuple[np.ndarray, int]:
    """``arr.oindex[idx, :]`` over the server with ``settings`` when the store is made;
    the server holds the requests until ``hold`` are in flight, then answers each after
    50 ms.  Returns the result and the most requests in flight at once."""
    with config.set(threads=2, **settings):
        a = zarrfast.open_array(server.url("d/arr"), mode="r")
    assert a.store.capabilities.batched_gets
    server.peak_in_flight = 0
    server.latency = 0.05
    server.hold(hold, timeout=30)  # (the timeout only ends a hang: then the test fails)
    with config.set(threads=2):
        got = a.oindex[idx, :]
    assert not server.gate.timed_out, f"never {hold} requests in flight at once"
    return got, server.peak_in_flight


#: one row of every chunk: a gather of N_CHUNKS chunks
EVERY_CHUNK = np.arange(0, SHAPE[0], ROWS, dtype=np.int64)


@pytest.mark.skipif(not zstd_prefix.available, reason="no zstd library for prefix decoding")
@pytest.mark.parametrize("bound", [8, 40])
def test_gather_keeps_remote_reads_in_flight_and_no_more(server, bound):
    server, data = server
    got, peak = _gather_peak(server, EVERY_CHUNK, bound, remote_reads_in_flight=bound)
    np.testing.assert_array_equal(got, data[EVERY_CHUNK, :])
    assert peak == bound
    assert len([r for r in server.requests if r[0] == "GET" and "/c/" in r[1]]) == N_CHUNKS


@pytest.mark.skipif(not zstd_prefix.available, reason="no zstd library for prefix decoding")
def test_gather_has_every_chunk_in_flight_by_default(server):
    """The default bound (256) has a gather's 100 requests out at once: with
    ``io_concurrency``'s 64 (the bound before), the server would never see 100."""
    server, data = server
    assert config.get("remote_reads_in_flight") == 256
    got, peak = _gather_peak(server, EVERY_CHUNK, N_CHUNKS)
    np.testing.assert_array_equal(got, data[EVERY_CHUNK, :])
    assert peak == N_CHUNKS


@pytest.mark.skipif(not zstd_prefix.available, reason="no zstd library for prefix decoding")
def test_reads_bound_is_not_io_concurrency(server):
    """A small ``io_concurrency`` (4 I/O threads, 4 fetches at once) does not bound the
    reads: 4 get_many calls of 16 chunks have up to 64 requests out, ``remote_reads_in_
    flight`` cuts them to 32; and a store made with ``max_concurrency`` keeps to it."""
    server, data = server
    idx = EVERY_CHUNK[:64]
    got, peak = _gather_peak(server, idx, 32, io_concurrency=4, remote_reads_in_flight=32)
    np.testing.assert_array_equal(got, data[idx, :])
    assert peak == 32


def test_store_bounds(tmp_path):
    """``reads_in_flight``: the config key when the store is made, else
    ``max_concurrency`` if given; kept through pickling and ``with_read_only``; refused
    unless an int >= 1 (the config key too, from the environment as well)."""
    import obstore.store

    from zarrfast.config import BadConfigError, env_defaults
    from zarrfast.errors import ZarrfastError

    with config.set(remote_reads_in_flight=7, io_concurrency=3):
        s = ObjectStore(obstore.store.LocalStore(str(tmp_path)))
    assert (s.reads_in_flight, s.max_concurrency) == (7, 3)
    s = ObjectStore(obstore.store.LocalStore(str(tmp_path)), max_concurrency=5)
    assert (s.reads_in_flight, s.max_concurrency) == (5, 5)
    s = ObjectStore.from_url("http://127.0.0.1:9/x", max_concurrency=5, reads_in_flight=300)
    assert (s.reads_in_flight, s.max_concurrency) == (300, 5)
    for again in (pickle.loads(pickle.dumps(s)), s.with_read_only()):
        assert (again.reads_in_flight, again.max_concurrency) == (300, 5)
    for bad in (0, True, 2.0):
        with pytest.raises(ZarrfastError, match="reads_in_flight"):
            ObjectStore.from_url("http://127.0.0.1:9/x", reads_in_flight=bad)
    with pytest.raises(BadConfigError, match="remote_reads_in_flight"):
        config.set(remote_reads_in_flight=0)
    assert env_defaults({"ZARRFAST_REMOTE_READS_IN_FLIGHT": "12"}) == {
        "remote_reads_in_flight": 12}
    with pytest.raises(BadConfigError, match="ZARRFAST_REMOTE_READS_IN_FLIGHT"):
        env_defaults({"ZARRFAST_REMOTE_READS_IN_FLIGHT": "0"})


def test_regions_of_one_store_go_out_together(server):
    """The same region of 20 arrays of one group (4 chunks each): one batch of one
    store, its 80 requests in flight at once by default (64 before)."""
    server, data = server
    with config.set(threads=2):
        g = zarrfast.open_group(server.url("d/group"), mode="r")
        arrays = [g[f"a{i}"] for i in range(20)]
    server.peak_in_flight = 0
    server.latency = 0.05
    server.hold(80, timeout=30)
    region = (slice(ROWS - 3, ROWS + 3), slice(14, 18))  # (4 chunks of each)
    with config.set(threads=2):
        got = zarrfast.get_many([(a, region) for a in arrays])
    assert not server.gate.timed_out, "never 80 requests in flight at once"
    assert server.peak_in_flight == 80
    for i, r in enumerate(got):
        np.testing.assert_array_equal(r, (data[:2 * ROWS, :COLS] + i)[region])


# -- values over a real nginx: many chunks at once, missing and damaged ones among them --

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from _helpers.nginx import Nginx, nginx_path

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    root = tmp_path_factory.mktemp("www")
    data = _values()
    for name in ("plain", "holes", "damaged"):
        zarrfast.create_array(str(root / f"{name}.zarr"), data=data, chunks=(ROWS, COLS),
                              compressors=[ZstdCodec(level=1)], fill_value=FILL)
    for c in (3, 40, 41, 99):
        os.remove(root / "holes.zarr" / "c" / str(c) / "0")
    chunk = root / "damaged.zarr" / "c" / "57" / "0"
    chunk.write_bytes(chunk.read_bytes()[:12])
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, data
    finally:
        server.stop()


@pytest.mark.parametrize("bound", [1, 5, 256])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_values_over_nginx(site, bound, order):
    server, data = site
    rng = np.random.default_rng(bound)
    idx = np.sort(rng.choice(SHAPE[0], 300, replace=False))
    if order == "shuffled":
        idx = rng.permutation(np.concatenate([idx, idx[:20], idx[:10] - SHAPE[0]]))
    with config.set(threads=2, remote_reads_in_flight=bound):
        plain = zarrfast.open_array(server.url("plain.zarr"), mode="r")
        holes = zarrfast.open_array(server.url("holes.zarr"), mode="r")
    assert plain.store.reads_in_flight == bound
    np.testing.assert_array_equal(plain.oindex[idx, :], data[idx, :])
    np.testing.assert_array_equal(plain.vindex[idx, idx % COLS], data[idx, idx % COLS])
    want = data.copy()
    for c in (3, 40, 41, 99):
        want[c * ROWS:(c + 1) * ROWS] = FILL
    np.testing.assert_array_equal(holes.oindex[idx, :], want[idx, :])


def test_damaged_chunk_among_many_names_its_key(site):
    server, _ = site
    with config.set(threads=2, remote_reads_in_flight=256):
        a = zarrfast.open_array(server.url("damaged.zarr"), mode="r")
    with pytest.raises(ChunkDecodeError, match="c/57/0"):
        a.oindex[EVERY_CHUNK, :]
    np.testing.assert_array_equal(a.oindex[EVERY_CHUNK[:57], :].shape, (57, COLS))
