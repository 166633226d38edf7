"""Review of h56/coldbox (ca8a8f0, 33aa140): reads run by ``engine.many.at_once`` are
marked one of many (``concurrency.one_of_many``) and their small boxes decode in their
own thread, without the kernels' helper.

No finding.  Guards (pass on main and on the branch): small boxes read together by
``at_once`` (sharded or not, zstd or uncompressed, chunks and shards missing, big-endian
too) give what NumPy gives, every one of them; a box of an array that refuses missing
chunks (``read_missing_chunks=False``) raises from ``at_once`` naming the missing key,
and the reads after it, in the same thread, still read right.
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.engine.many import at_once
from zarrfast.storage import LocalStore


def _boxes(shape: tuple[int, ...], chunk: int, rng: np.random.Generator, n: int) -> list:
    sels = []
    for _ in range(n):
        box = []
        for size in shape:
            m = int(rng.integers(1, 2 * chunk + 1))
            start = int(rng.integers(0, size - m + 1))
            box.append(slice(start, start + m))
        sels.append(tuple(box))
    return sels


@pytest.mark.parametrize("shards", [None, (16, 16, 16)])
@pytest.mark.parametrize("codec", ["zstd", "none"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_boxes_read_together_read_what_numpy_gives(tmp_path, shards, codec, endian) -> None:
    shape, chunk = (40, 36, 24), 8
    a = zarrfast.create_array(
        LocalStore(tmp_path / "a"), shape=shape, chunks=(chunk,) * 3, shards=shards,
        dtype="int32", fill_value=-3,
        serializer={"name": "bytes", "configuration": {"endian": endian}},
        compressors=None if codec == "none" else [{"name": "zstd"}])
    model = (np.arange(np.prod(shape)) % 1013).astype("int32").reshape(shape)
    model[16:32, 0:16, :] = -3  # (chunks, and shards, of the fill value: not stored)
    a[...] = model
    sels = _boxes(shape, chunk, np.random.default_rng(11), 48)
    got: dict[int, np.ndarray] = {}
    with zarrfast.config.set(threads=2):
        at_once(lambda i: got.__setitem__(i, a[sels[i]]), range(len(sels)), 4)
    assert sorted(got) == list(range(len(sels)))
    for i, sel in enumerate(sels):
        np.testing.assert_array_equal(got[i], model[sel], err_msg=str(sel))


@pytest.mark.parametrize("shards", [None, (16, 16)])
def test_a_missing_chunk_read_together_is_refused_naming_its_key(tmp_path, shards) -> None:
    shape = (32, 32)
    path = str(tmp_path / "a")
    a = zarrfast.create_array(path, shape=shape, chunks=(8, 8), shards=shards, dtype="int16",
                              fill_value=0)
    model = np.arange(1024, dtype="int16").reshape(shape) + 1
    model[16:32, 16:32] = 0  # (the last shard, or its chunks: not stored)
    a[...] = model
    strict = zarrfast.open_array(path, mode="r", config={"read_missing_chunks": False})
    sels = [(slice(0, 9), slice(0, 9)), (slice(20, 26), slice(18, 30)),
            (slice(3, 12), slice(7, 15))]
    with zarrfast.config.set(threads=2), pytest.raises(Exception, match=r"c/([23]/[23]|1/1)\b"):
        at_once(lambda s: strict[s], sels, 3)
    got = [strict[s] for s in (sels[0], sels[2])]  # (this thread reads as before)
    np.testing.assert_array_equal(got[0], model[sels[0]])
    np.testing.assert_array_equal(got[1], model[sels[2]])
