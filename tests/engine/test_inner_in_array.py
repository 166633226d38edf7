"""ShardedChain.inner_in_array (whether a read takes a shard whole) against NumPy, and
inner_in_array_many (every shard of a read at once) against it."""

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
    every = np.array(list(itertools.product(*map(range, grid))), dtype=np.int64)
    for c in every:
        extent = np.minimum(np.array(shards), np.array(shape) - c * np.array(shards))
        want = int(np.prod(-(-extent // np.array(chunks))))
        assert chain.inner_in_array(c) == want, c
    many = chain.inner_in_array_many(every)
    assert many.dtype == np.int64
    assert many.tolist() == [chain.inner_in_array(c) for c in every]
    assert chain.inner_in_array_many(every[::-1]).tolist() == many[::-1].tolist()


def test_inner_in_array_many_of_a_rectilinear_grid_of_shards():
    # shards of 4 and 6 rows, 2 and 6 columns, of inner chunks 2 x 2: 2 or 3 rows and 1
    # or 3 columns of inner chunks each
    a = zarrfast.create_array({}, shape=(10, 8), chunks=(2, 2), shards=[[4, 6], [2, 6]],
                              dtype="u1")
    chain = a._chain
    assert type(chain).__name__ == "RectilinearShardedChain"
    every = np.array(list(itertools.product(range(2), range(2))), dtype=np.int64)
    got = chain.inner_in_array_many(every).tolist()
    assert got == [chain.inner_in_array(c) for c in every]
    assert got == [2 * 1, 2 * 3, 3 * 1, 3 * 3]
