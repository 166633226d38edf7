"""Whole-shard reads of a remote ObjectStore over HTTP, from the review of h58/remote2.

That branch read whole remote shards as they arrived (``fetch_streamed``); it was merged
and then reverted (637a2b7, f06e05e: no gain on a quiet machine).  Its review's finding
stays as a guard of main's path: a stored shard larger than any valid shard of its
layout (here one padded between its inner chunks and its index) is refused with
``ValueTooLargeError`` naming its key (``ShardedChain.fetch_shard`` reads with
``store.get_limited(key, stored_limit)``); the branch read it as if it were whole.

Guards: through an HTTP server and obstore, full and partial reads of sharded arrays --
zstd and uncompressed inner chunks, C and F order, little- and big-endian, inner chunks
and whole shards missing (the fill value) -- give NumPy's values; an array that refuses
missing chunks names the missing shard.
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import MemoryStore, ObjectStore, RetryPolicy
from zarrfast.storage.errors import ValueTooLargeError

from _helpers.files import written_files

pytest.importorskip("obstore")

SHAPE, CHUNKS, SHARDS = (64, 96), (8, 16), (32, 48)  # 4 shards of 12 inner chunks
INDEX = 12 * 16 + 4  # bytes of a shard's index (crc32c)
RETRY = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)




def _files(data, fill=-1.0, **kw):
    return written_files(data, chunks=CHUNKS, shards=SHARDS, fill_value=fill, **kw)


def _open(server, files, **open_kw):
    for k, v in files.items():
        server.objects[f"d/{k}"] = v
    store = ObjectStore.from_url(server.url("d"), retry=RETRY).with_read_only()
    return zarrfast.open_array(store, mode="r", **open_kw)


def test_a_shard_larger_than_any_valid_one_is_refused_naming_its_key(served):
    data = (np.arange(np.prod(SHAPE), dtype="f4").reshape(SHAPE) / 7).astype("f4")
    files = _files(data)
    v = files["c/0/1"]
    # (its chunks and its index as they were, 10 MiB of padding between them)
    files["c/0/1"] = v[:-INDEX] + bytes(10 << 20) + v[-INDEX:]
    a = _open(served, files)
    with pytest.raises(ValueTooLargeError, match="c/0/1"):
        a[:]
    np.testing.assert_array_equal(a[32:, :], data[32:, :])  # (the other shards)


@pytest.mark.parametrize("compressors", ["auto", None])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_remote_shard_reads_are_numpys(served, compressors, order, endian):
    rng = np.random.default_rng(3)
    data = (rng.integers(0, 1 << 16, SHAPE) / 7).astype("f4")
    kw: dict = {"compressors": compressors,
                "serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    mem = MemoryStore()
    a = zarrfast.create_array(mem, shape=SHAPE, chunks=CHUNKS, shards=SHARDS, dtype="f4",
                              fill_value=-2.5, **kw)
    a[:] = data
    want = data.copy()
    a[8:16, 16:32] = -2.5  # (an inner chunk of the fill value: not stored)
    want[8:16, 16:32] = -2.5
    files = {k: bytes(mem.get(k)) for k in mem.list()}
    del files["c/1/1"]  # (a whole shard missing)
    want[32:, 48:] = -2.5
    b = _open(served, files)
    for region in (np.s_[:, :], np.s_[3:61, 5:90], np.s_[0:32, 0:48], np.s_[40:41, ::-3],
                   np.s_[::-1, 47:49]):
        np.testing.assert_array_equal(b[region], want[region], err_msg=repr(region))
    with zarrfast.config.set({"array.read_missing_chunks": False}):
        strict = _open(served, files)
    # (a shard with an inner chunk not stored reads as it is: only a missing shard is
    # refused, as in zarr-python 3.4)
    np.testing.assert_array_equal(strict[0:32, 0:48], want[0:32, 0:48])
    for region in (np.s_[40:41, 50:60], np.s_[:, :]):  # (part of it; whole shards)
        with pytest.raises(ZarrfastError, match="c/1/1"):
            strict[region]  # (the missing shard)
