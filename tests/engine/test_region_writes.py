"""Whole uncompressed chunks (and whole shards of them) written by a local store straight
from the array being written (``LocalStore.set_regions``, the ``write_region_files``
kernel: no chunk buffer, no Python per chunk): the same files as the per-chunk path,
read back by zarr-python, with chunks of the fill value left out, and every layout the
kernel cannot take (byte swaps, edge chunks, partial chunks) left to the other paths."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, ShardingCodec, TransposeCodec
from zarrfast.storage import LocalStore


def _files(path) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(path):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, path)] = open(p, "rb").read()
    return out


@contextlib.contextmanager
def _regions_spied(monkeypatch, direct: bool):
    """The keys of every ``LocalStore.set_regions`` call made inside (a list of lists);
    with ``direct`` off, local stores write as stores without ``set_regions`` do."""
    calls: list[list[str]] = []
    real = LocalStore.set_regions

    def spy(self, keys, *args, **kw):
        calls.append(list(keys))
        return real(self, keys, *args, **kw)

    with monkeypatch.context() as m:
        m.setattr(LocalStore, "set_regions", spy)
        if not direct:
            m.setattr(LocalStore, "fast_set_regions", False)
        yield calls


def _write(tmp_path, name, monkeypatch, *, direct: bool, value, **kwargs):
    """Create an array of ``kwargs`` and write ``value`` into it, through
    ``set_regions`` (``direct``) or with it turned off; its files and the keys of the
    ``set_regions`` calls."""
    path = str(tmp_path / name)
    with _regions_spied(monkeypatch, direct) as calls:
        a = zarrfast.create_array(path, **kwargs)
        a[...] = value
    return _files(path), calls


LAYOUTS = {
    "c-order": dict(),
    "transposed": dict(filters=[TransposeCodec((1, 0, 2))]),
    "transposed-last": dict(filters=[TransposeCodec((2, 0, 1))]),  # last dim moves: no
    "big-endian": dict(serializer=BytesCodec("big")),               # a swap: no
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("empty", [False, True])
def test_whole_chunks_straight_from_the_array_match_the_per_chunk_path(
        tmp_path, monkeypatch, layout, threads, empty):
    import zarr

    shape, chunks = (30, 40, 24), (8, 16, 8)  # edge chunks along two dimensions
    x = np.random.default_rng(1).integers(1, 1000, shape).astype("<i4")
    x[8:16, 16:32, 0:8] = 5  # one whole chunk of the fill value
    kwargs = dict(shape=shape, chunks=chunks, dtype="<i4", fill_value=5, compressors=None,
                  config={"write_empty_chunks": empty}, **LAYOUTS[layout])
    with config.set(threads=threads):
        fast, calls = _write(tmp_path, "fast.zarr", monkeypatch, direct=True, value=x,
                             **kwargs)
        slow, none = _write(tmp_path, "slow.zarr", monkeypatch, direct=False, value=x,
                            **kwargs)
    assert fast == slow and not none
    assert ("c/1/1/0" in fast) == empty  # the fill chunk: stored only when asked
    inner = 3 * 2 * 3  # chunks inside the array on every dimension
    if layout in ("c-order", "transposed"):
        assert sum(map(len, calls)) == inner  # edge chunks go the other way
    else:
        assert not calls
    got = zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...]
    np.testing.assert_array_equal(got, x)


def test_a_selection_of_whole_chunks_and_partial_ones(tmp_path, monkeypatch):
    """A write of a selection: its whole chunks come from their place in the value
    (offsets within it), the partial ones keep their old values."""
    x = np.arange(64 * 96, dtype="<u2").reshape(64, 96)
    sel = (slice(8, 56), slice(16, 80))  # rows: 8..16 partial, 16..48 whole, 48..56 partial
    files = {}
    for direct in (True, False):
        path = str(tmp_path / f"{direct}.zarr")
        a = zarrfast.create_array(path, shape=(64, 96), chunks=(16, 16), dtype="<u2",
                                  compressors=None, fill_value=0)
        a[...] = 1
        with _regions_spied(monkeypatch, direct) as seen:
            # (opened again: a store's capabilities are computed once, on first use)
            zarrfast.open_array(path)[sel] = x[sel]
        files[direct] = _files(path)
        want = np.ones((64, 96), dtype="<u2")
        want[sel] = x[sel]
        np.testing.assert_array_equal(a[...], want)
        whole = sorted(f"c/{r}/{c}" for r in (1, 2) for c in (1, 2, 3, 4))
        assert sorted(k for keys in seen for k in keys) == (whole if direct else [])
    assert files[True] == files[False]


@pytest.mark.parametrize("location", ["end", "start"])
def test_whole_shards_straight_from_the_array_are_read_by_zarr_python(tmp_path, location):
    import zarr

    shape = (64, 96)
    x = np.random.default_rng(2).integers(0, 2**16, shape).astype("<u2")
    codec = ShardingCodec(chunk_shape=(8, 16), codecs=[BytesCodec("little")],
                          index_location=location)
    a = zarrfast.create_array(str(tmp_path / "s.zarr"), shape=shape, chunks=(32, 32),
                              serializer=codec, compressors=None, dtype="<u2")
    a[...] = x
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "s.zarr"), mode="r")[...], x)


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("order", ["morton", "lexicographic"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("empty", [False, True])
def test_missing_edge_shards_of_whole_inner_chunks_straight_from_the_array(
        tmp_path, monkeypatch, location, order, threads, empty):
    """Edge shards whose inner chunks inside the array are whole (the array's shape a
    multiple of the inner chunks', not of the shards'), not stored yet: written from
    the array (the shard's read-modify-write finds nothing stored and hands the write to
    ``set_regions``, engine/rmw.py ``direct``), the same files as the assembled path;
    an edge shard with an inner chunk of the fill value goes the assembled way (the
    chunk left out unless empty chunks are written).  (Before: only whole shards came
    through ``set_regions``.)"""
    import zarr

    shape = (40, 48)  # shards (32, 32): one whole, three edge ones of whole inner chunks
    x = np.random.default_rng(3).integers(1, 2**16, shape).astype("<u2")
    x[32:40, 0:16] = 0  # one of the two inner chunks of shard (1, 0): the fill value
    codec = ShardingCodec(chunk_shape=(8, 16), codecs=[BytesCodec("little")],
                          index_location=location, subchunk_write_order=order)
    kwargs = dict(shape=shape, chunks=(32, 32), serializer=codec, compressors=None,
                  dtype="<u2", fill_value=0, config={"write_empty_chunks": empty})
    with config.set(threads=threads):
        fast, calls = _write(tmp_path, "fast.zarr", monkeypatch, direct=True, value=x,
                             **kwargs)
        slow, none = _write(tmp_path, "slow.zarr", monkeypatch, direct=False, value=x,
                            **kwargs)
    assert fast == slow and not none
    # (shard (1, 0) offered too, and left to the assembled path unless empty chunks
    # are written: the files say which)
    assert sorted(k for keys in calls for k in keys) == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    got = zarr.open_array(str(tmp_path / "fast.zarr"), mode="r")[...]
    np.testing.assert_array_equal(got, x)
