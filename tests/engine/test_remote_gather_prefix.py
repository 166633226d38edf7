"""Gathers (``oindex``, ``vindex``) of zstd chunks from a real nginx over HTTP: the
fetched chunks are decoded only up to the last row each needs, where they lie
(``fancy._fetch_prefixes``, ``zstd_prefix.decode_prefix_blobs``), and give NumPy's
values for sorted, unsorted, repeated and negative indices; a chunk that is missing
reads as the fill value, a damaged one is refused naming its key, and a frame with a
content checksum is decoded whole (which checks it)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import zstd_prefix

pytestmark = pytest.mark.skipif(not zstd_prefix.available,
                                reason="no zstd library for prefix decoding")

#: rows of a chunk: (1024, 128) uint16, 256 KiB decoded (two zstd blocks of 128 KiB)
ROWS, COLS = 1024, 128
SHAPE = (4 * ROWS + 300, COLS)  # (the last chunk at the array's edge)
FILL = 7


def _values() -> np.ndarray:
    rng = np.random.default_rng(45)
    return rng.integers(0, 3000, SHAPE, dtype=np.uint16)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """nginx serving four arrays of the same values: ``plain`` (zstd level 1),
    ``checked`` (zstd with content checksums), ``holes`` (chunk 1 missing) and
    ``damaged`` (chunk 2 cut short after its frame header)."""
    from _helpers.nginx import Nginx, nginx_path

    if nginx_path() is None:
        pytest.skip("nginx is not installed (/usr/sbin/nginx: apt-get install nginx)")
    root = tmp_path_factory.mktemp("www")
    data = _values()
    for name, codec in (("plain", ZstdCodec(level=1)), ("checked", ZstdCodec(checksum=True)),
                        ("holes", ZstdCodec(level=1)), ("damaged", ZstdCodec(level=1))):
        zarrfast.create_array(str(root / f"{name}.zarr"), data=data, chunks=(ROWS, COLS),
                              compressors=[codec], fill_value=FILL)
    os.remove(root / "holes.zarr" / "c" / "1" / "0")
    chunk = root / "damaged.zarr" / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:12])
    server = Nginx(root, tmp_path_factory.mktemp("nginx"))
    try:
        yield server, data
    finally:
        server.stop()


def _open(server, name: str):
    a = zarrfast.open_array(server.url(f"{name}.zarr"), mode="r")
    assert a.store.capabilities.batched_gets  # (a store of concurrent requests)
    return a


@pytest.fixture
def prefix_calls(monkeypatch):
    """How many batches of fetched chunks were decoded up to a prefix (the real
    decoder, counted)."""
    calls = []
    real = zstd_prefix.decode_prefix_blobs

    def counted(blobs, *args, **kwargs):
        calls.append(len(blobs))
        return real(blobs, *args, **kwargs)
    monkeypatch.setattr(zstd_prefix, "decode_prefix_blobs", counted)
    return calls


@pytest.mark.parametrize("name", ["plain", "checked"])
def test_rows_of_the_first_block_decode_fetched_prefixes(site, name, prefix_calls):
    server, data = site
    a = _open(server, name)
    # rows in the first half of every chunk (its first zstd block): prefixes pay
    idx = np.sort(np.concatenate([c * ROWS + np.array([3, 17, 200, 299]) for c in range(5)]))
    np.testing.assert_array_equal(a.oindex[idx, :], data[idx, :])
    assert sum(prefix_calls) == 5  # every chunk, fetched and decoded up to its prefix
    prefix_calls.clear()
    cols = np.array([5, 0, 127, 5])
    np.testing.assert_array_equal(a.oindex[idx[::-1], cols], data[np.ix_(idx[::-1], cols)])
    np.testing.assert_array_equal(a.vindex[idx, idx % COLS], data[idx, idx % COLS])
    assert prefix_calls


def test_rows_at_the_end_of_chunks_decode_fetched_frames_whole(site, prefix_calls):
    """Where prefixes save nothing (the last rows of every chunk), the fetched chunks
    still go through the prefix decoder, whole."""
    server, data = site
    a = _open(server, "plain")
    idx = np.array([c * ROWS + ROWS - 1 for c in range(4)] + [SHAPE[0] - 1, 5])
    np.testing.assert_array_equal(a.oindex[idx, :], data[idx, :])
    assert sum(prefix_calls) == 5


def test_missing_chunks_read_as_the_fill_value(site, prefix_calls):
    server, data = site
    a = _open(server, "holes")
    idx = np.array([1, ROWS + 2, ROWS + 40, 2 * ROWS + 5, 4 * ROWS + 299])
    want = data[idx].copy()
    want[1:3] = FILL
    np.testing.assert_array_equal(a.oindex[idx, :], want)
    assert prefix_calls


def test_a_damaged_chunk_is_refused_naming_its_key(site, prefix_calls):
    server, data = site
    a = _open(server, "damaged")
    with pytest.raises(ChunkDecodeError, match=r"c/2/0"):
        a.oindex[np.array([0, 2 * ROWS + 1, 3 * ROWS]), :]
    assert prefix_calls
    # the other chunks read
    np.testing.assert_array_equal(a.oindex[np.array([0, 3 * ROWS + 9]), :],
                                  data[[0, 3 * ROWS + 9]])


def test_get_many_of_gathers(site):
    server, data = site
    a = _open(server, "plain")
    sels = [np.array([0, 5, ROWS + 1, 3 * ROWS + 2]), np.array([-1, -ROWS, 7, 7])]
    got = a.get_many([(s, slice(None)) for s in sels], kind="orthogonal")
    for g, s in zip(got, sels, strict=True):
        np.testing.assert_array_equal(g, data[s, :])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(st.integers(-SHAPE[0], SHAPE[0] - 1), min_size=1, max_size=60),
       ordered=st.booleans(),
       cols=st.one_of(st.none(), st.lists(st.integers(-COLS, COLS - 1), min_size=1,
                                          max_size=5)),
       name=st.sampled_from(["plain", "checked", "holes"]))
def test_gathers_equal_numpys(site, rows, ordered, cols, name):
    server, data = site
    want = data.copy()
    if name == "holes":
        want[ROWS:2 * ROWS] = FILL
    a = _open(server, name)
    idx = np.array(sorted(rows) if ordered else rows, dtype=np.int64)
    c = slice(None) if cols is None else np.array(cols, dtype=np.int64)
    np.testing.assert_array_equal(a.oindex[idx, c], want[idx, :][:, c])
    np.testing.assert_array_equal(a.vindex[idx, idx % COLS], want[idx, idx % COLS])
