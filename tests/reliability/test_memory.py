"""Memory bounds of large reads: the bytes fetched from the store are not all held
at once (measured with tracemalloc, which sees NumPy buffers and bytes objects)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.engine import sharded as sharding
from zarrfast.storage import LocalStore


@pytest.fixture(scope="module")
def noisy_sharded(tmp_path_factory):
    """32 MiB of incompressible uint16 in zstd shards of 32 inner chunks each."""
    root = tmp_path_factory.mktemp("mem")
    data = np.random.default_rng(0).integers(0, 2**16, (512, 32768), dtype=np.uint16)
    a = zarrfast.create_array(LocalStore(root), name="a", shape=data.shape, chunks=(64, 4096),
                              shards=(256, 16384), dtype="u2",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = data
    return a, data


@pytest.mark.parametrize("threads", [1, 2])
def test_sharded_full_read_holds_a_bounded_number_of_fetched_bytes(noisy_sharded, monkeypatch,
                                                                   threads):
    a, data = noisy_sharded
    monkeypatch.setattr(sharding, "WAVE_BYTES", 4 * 2**20)
    with config.set(threads=threads):
        tracemalloc.start()
        try:
            got = a[...]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    np.testing.assert_array_equal(got, data)
    out = data.nbytes  # 32 MiB; fetching every shard first would peak near 2x that
    assert peak < out + 12 * 2**20, (peak / 2**20, out / 2**20)


def test_waves_split_shards_by_decoded_size(monkeypatch):
    monkeypatch.setattr(sharding, "WAVE_BYTES", 100)
    groups = [np.arange(n) for n in (3, 3, 5, 1, 20)]
    assert sharding.waves_of(groups, 10) == [[0, 1], [2, 3], [4]]
    assert sharding.waves_of([], 10) == [[]]


def test_writing_a_shard_with_astronomically_many_inner_chunks_is_a_clear_error():
    """Valid metadata (2**42 inner chunks per shard) whose write cannot fit in memory:
    a ZarrfastError naming the shard, not a bare MemoryError; reads stay lazy."""
    a = zarrfast.create_array(None, shape=(6, 4), chunks=(3, 2), shards=(3 * 2**41, 4),
                              dtype="u8")
    np.testing.assert_array_equal(a[...], 0)  # missing shard: fill values
    with pytest.raises(zarrfast.errors.ZarrfastError, match=r"shard 'c/0/0'.*inner chunks"):
        a[0:2, 0:2] = 1


@pytest.mark.parametrize("codec", ["zstd", "gzip"])
def test_whole_shards_of_a_local_store_share_reused_buffers(tmp_path, monkeypatch, codec):
    """Whole shards are read into reused buffers, not one fresh buffer per shard: zstd
    shards (decoded during the fetch) into one buffer per fetching thread, others into
    one buffer per read reused by every wave.  A shard whose size changed since it was
    sized is read on its own, with the same result."""
    data = np.arange(64 * 256, dtype="<u4").reshape(64, 256)

    class Shifty(LocalStore):
        """Reports a wrong size for one shard, as if it were replaced meanwhile."""

        def getsize(self, key):
            n = super().getsize(key)
            return n + 8 if key == "a/c/1/1" else n

    a = zarrfast.create_array(LocalStore(tmp_path), name="a", shape=data.shape, chunks=(8, 32),
                              shards=(32, 64), dtype="<u4",
                              compressors={"name": codec, "configuration": {"level": 1}})
    a[...] = data
    monkeypatch.setattr(sharding, "WAVE_BYTES", 3 * 32 * 64 * 4)  # several waves
    allocated = []
    real_empty = np.empty

    def counting_empty(shape, dtype=float, *args, **kwargs):
        arr = real_empty(shape, dtype, *args, **kwargs)
        if np.dtype(dtype) == np.uint8 and arr.ndim == 1:
            allocated.append(arr.nbytes)
        return arr

    monkeypatch.setattr(sharding.np, "empty", counting_empty)
    b = zarrfast.open_array(Shifty(tmp_path), path="a")
    if codec in _kernels.BATCH_CODECS and _kernels.ShardFiles is not None:
        # the ShardFiles kernel reads whole shards of zstd (or gzip) inner chunks into its
        # decoder's own buffer (one per call, not per shard): no NumPy shard buffers
        with config.set(threads=1):
            np.testing.assert_array_equal(b[...], data)
        assert [n for n in allocated if n > 4096] == [], allocated
        allocated.clear()
        # the general path (shards the kernel leaves, and builds without it)
        monkeypatch.setattr(_kernels, "ShardFiles", None)
    with config.set(threads=1):  # one fetching thread: a known number of buffers
        np.testing.assert_array_equal(b[...], data)
        np.testing.assert_array_equal(b[5:40, 3:250], data[5:40, 3:250])
    shard_buffers = [n for n in allocated if n > 4096]
    if codec == "zstd":
        # one per read (its headroom holds every shard of this array): the first read
        # takes 8 shards whole, the second some of them
        assert len(shard_buffers) == 2, allocated
    elif codec in _kernels.BATCH_CODECS:
        # (gzip in the batched decoder: its ranges are decoded where they are read, no
        # shard buffer at all; never one per shard of the 8)
        assert len(shard_buffers) <= 3, allocated
    else:
        # one per read (grown when a later wave needs more): 8 shards in 3 waves
        assert 2 <= len(shard_buffers) <= 3, allocated
    with config.set(threads=2):
        np.testing.assert_array_equal(b[...], data)
