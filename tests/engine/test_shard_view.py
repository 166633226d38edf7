"""A shard as a store (``zarrfast.engine.shard_view.ShardView``): one shard's inner chunks,
read through the shard's index with byte-range requests only, on shards zarr-python wrote."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.engine.shard_view import ShardView
from zarrfast.errors import ChunkDecodeError, InvalidKeyError, ReadOnlyError
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest

zarr = pytest.importorskip("zarr")


class CountingStore(LocalStore):
    """Records every ``get`` (key and byte range)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gets: list = []

    def get(self, key, byte_range=None):
        self.gets.append((key, byte_range))
        return super().get(key, byte_range)


@pytest.fixture
def written(tmp_path):
    """A 2-d array of 4x4 shards of 8x8 zstd inner chunks, written by zarr-python, one
    inner chunk left out (all fill values)."""
    path = tmp_path / "a.zarr"
    data = np.arange(64 * 64, dtype="<i4").reshape(64, 64)
    data[8:16, 0:8] = 0  # inner chunk (1, 0) of shard (0, 0): the fill value, not stored
    z = zarr.create_array(str(path), shape=data.shape, chunks=(8, 8), shards=(32, 32),
                          dtype="<i4", fill_value=0, compressors=zarr.codecs.ZstdCodec(level=1))
    z[...] = data
    return path, data


def _view(path, key="c/0/0", gap=0, store=None):
    a = zarrfast.open_array(str(path))
    store = store if store is not None else LocalStore(path)
    return ShardView(store, key, a._chain, gap=gap), a


def _decoded(raw: bytes) -> np.ndarray:
    return np.frombuffer(numcodecs.Zstd().decode(raw), dtype="<i4").reshape(8, 8)


def test_inner_chunks_are_the_shards_values(written):
    path, data = written
    view, _ = _view(path)
    keys = sorted(view.list())
    assert len(keys) == 15 and "c/1/0" not in keys  # the left-out inner chunk
    for key in keys:
        i, j = (int(x) for x in key.split("/")[1:])
        np.testing.assert_array_equal(_decoded(view.get(key)),
                                      data[8 * i:8 * i + 8, 8 * j:8 * j + 8])
    assert view.get("c/1/0") is None
    many = view.get_many(["c/3/3", "c/1/0", "c/0/1"])
    assert many[1] is None and many[0] == view.get("c/3/3") and many[2] == view.get("c/0/1")


def test_a_byte_range_of_an_inner_chunk(written):
    path, _ = written
    view, _ = _view(path)
    whole = view.get("c/2/1")
    assert view.get("c/2/1", RangeByteRequest(3, 9)) == whole[3:9]


def test_only_byte_ranges_are_read_and_near_ones_coalesce(written):
    """Never the whole shard: its index once, then one request per run of inner chunks
    (all of them, gap large; one per chunk read with gap 0 where they are apart)."""
    path, _ = written
    store = CountingStore(path)
    view, _ = _view(path, store=store, gap=10**6)
    keys = [f"c/{i}/{j}" for i in range(4) for j in range(4)]
    got = view.get_many(keys)
    assert all(r is not None for k, r in zip(keys, got, strict=True) if k != "c/1/0")
    assert all(rng is not None for _, rng in store.gets)  # only ranges
    assert len(store.gets) == 2  # the index, then one run
    store.gets.clear()
    apart = CountingStore(path)
    view, _ = _view(path, store=apart, gap=0)
    view.get_many(["c/0/0", "c/2/2", "c/3/3"])
    assert len(apart.gets) == 1 + 3


def test_bad_keys_are_refused_naming_the_shard(written):
    path, _ = written
    view, _ = _view(path)
    for key in ("c/4/0", "c/0", "x/0/0", "c/a/0", "c/-1/0"):
        with pytest.raises(InvalidKeyError, match="c/0/0"):
            view.get(key)


def test_it_is_read_only(written):
    path, _ = written
    view, _ = _view(path)
    with pytest.raises(ReadOnlyError, match="rewrites the shard"):
        view.set("c/0/0", b"x")
    with pytest.raises(ReadOnlyError):
        view.delete("c/0/0")
    caps = view.capabilities
    assert not caps.writes and caps.byte_ranges


def test_a_missing_shard_has_no_inner_chunks(written):
    path, _ = written
    view, _ = _view(path, key="c/5/5")
    assert view.get("c/0/0") is None and list(view.list()) == []


def test_an_index_pointing_past_the_end_is_named(tmp_path):
    """A shard cut short: the inner chunk whose bytes are missing is named."""
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(16, 16), chunks=(8, 8), shards=(16, 16),
                              dtype="<i4", compressors=None)
    a[...] = np.arange(256, dtype="<i4").reshape(16, 16)
    raw = store.get("c/0/0")
    store.set("c/0/0", raw[:100] + raw[-(16 * 4 + 4):])  # keep the index (at the end)
    view = ShardView(store, "c/0/0", a._chain)
    # (an in-memory shard is read from one value whose size is known: its index is
    # checked against it when read, and the first entry past the end, (0, 0) here, is
    # named; through get alone, the inner chunk read is)
    with pytest.raises(ChunkDecodeError,
                       match=r"shard 'c/0/0': inner chunk \(0, [01]\) points past the end"):
        view.get("c/0/1")
    with pytest.raises(ChunkDecodeError, match="points past the end"):
        view.get_many(["c/1/1"])


@pytest.mark.parametrize("selection", [np.s_[...], np.s_[3:29, 5:30], np.s_[::3, 7], np.s_[9:10, 9:10]])
def test_the_regular_strategies_read_a_shard_through_its_view(written, selection, caplog):
    """A shard read as an array of its own: the regular table (here chunk-rows /
    chunk-tasks, single-chunk) over the view, with the inner chunks' chain."""
    import logging

    from zarrfast.engine import strategies

    path, data = written
    view, a = _view(path, key="c/1/0")
    inner = a._chain.inner
    with caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        got = strategies.read_basic(view, view.capabilities, "", inner, selection, (32, 32),
                                    inner.dtype, None, "shard 'c/1/0'")
    np.testing.assert_array_equal(got, data[32:64, 0:32][selection])
    assert any(n in caplog.text for n in ("chunk-rows", "single-chunk"))
