"""ShardedChain.inner_in_array (whether a read takes a shard whole) against NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import zarrfast


@pytest.mark.parametrize("shape, shards, chunks", [
    ((10, 7), (4, 4), (2, 2)),
    ((9, 9, 5), (4, 6, 5), (2, 3, 5)),
    ((1,), (8,), (4,)),
    ((33, 2), (16, 2), (4, 1)),
])
def test_inner_in_array_counts_the_chunks_inside(shape, shards, chunks):
    a = zarrfast.create_array({}, shape=shape, shards=shards, chunks=chunks, dtype="u1")
    chain = a._chain  # the array's ShardedChain
    assert type(chain).__name__ == "ShardedChain"
    grid = [-(-s // sh) for s, sh in zip(shape, shards, strict=True)]
    for coords in itertools.product(*map(range, grid)):
        c = np.array(coords, dtype=np.int64)
        extent = np.minimum(np.array(shards), np.array(shape) - c * np.array(shards))
        want = int(np.prod(-(-extent // np.array(chunks))))
        assert chain.inner_in_array(c) == want, coords
