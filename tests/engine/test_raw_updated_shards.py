"""Shards of uncompressed inner chunks read, changed and written back (written in part, or
at the array's edge) are built by one copy into the new shard
(``ShardWrite.raw_updated_shard``): every sequence of writes below reads back as NumPy
says, through zarrfast and through zarr-python, with the index at either end, in every
inner-chunk order, with and without empty chunks written, at 1 and 2 threads."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import BytesCodec, ShardingCodec
from zarrfast.engine import shard_write

zarr = pytest.importorskip("zarr")

WRITES = [  # (selection, value) in order; the array is (10, 13), shards (8, 8), chunks (2, 2)
    ((slice(None), slice(None)), "ramp"),
    ((slice(1, 7), slice(2, 12)), 5),  # partial shards: whole inner chunks and parts
    ((slice(0, 4), slice(0, 4)), 0),  # inner chunks back to the fill value
    ((slice(8, 10), slice(8, 13)), "ramp"),  # the edge shard
    ((slice(2, 9), slice(3, 11)), "ramp"),
    ((slice(0, 2), slice(8, 12)), 0),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("write_empty", [False, True])
@pytest.mark.parametrize("order", ["lexicographic", "morton", "colexicographic"])
@pytest.mark.parametrize("where", ["end", "start"])
def test_raw_shard_updates(tmp_path, monkeypatch, threads, write_empty, order, where) -> None:
    built = []
    raw_updated_shard = shard_write.ShardWrite.raw_updated_shard

    def spy(self, g, data):
        shard = raw_updated_shard(self, g, data)
        built.append(shard is not False)
        return shard

    monkeypatch.setattr(shard_write.ShardWrite, "raw_updated_shard", spy)
    codec = ShardingCodec(chunk_shape=(2, 2), codecs=[BytesCodec()], index_location=where,
                          subchunk_write_order=order)
    path = tmp_path / "a"
    want = np.zeros((10, 13), dtype="u2")
    with zarrfast.config.set(threads=threads):
        a = zarrfast.create_array(path, shape=want.shape, chunks=(8, 8), dtype="u2",
                                  fill_value=0, serializer=codec, compressors=None,
                                  config={"write_empty_chunks": write_empty})
        for step, (sel, value) in enumerate(WRITES):
            if isinstance(value, str):
                value = (np.arange(want.size, dtype="u2").reshape(want.shape)[sel]
                         + np.uint16(100 * step + 1))
            a[sel] = value
            want[sel] = value
            np.testing.assert_array_equal(zarrfast.open_array(path)[...], want)
    assert any(built)  # (the one-copy build ran)
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], want)
