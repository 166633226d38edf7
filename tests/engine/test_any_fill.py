"""PreparedChain.any_fill and any_fill_run (does a run of stored chunks hold one equal to the fill value)
against the chunk-by-chunk is_fill it replaces, and the sharded write that uses it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfast


@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from(["u1", "<u2", ">i4", "<f8"]),
       fill=st.sampled_from([0, 1, 7, -3]),
       kinds=st.lists(st.sampled_from(["fill", "first-fill", "last-differs", "random"]),
                      min_size=1, max_size=12),
       seed=st.integers(0, 2**16))
def test_any_fill_is_any_is_fill(dtype, fill, kinds, seed):
    if dtype[-2] == "u" and fill < 0:
        fill = 3
    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 4), shards=(8, 8), dtype=dtype,
                              fill_value=fill, compressors=None)
    inner = a._chain.inner
    nb = inner.chunk_nbytes
    rng = np.random.default_rng(seed)
    item = inner._fill_chunk_item_arr.tobytes()
    chunks = []
    for kind in kinds:
        chunk = bytearray(item * (nb // len(item)))
        if kind == "last-differs":
            chunk[-1] ^= 0x01
        elif kind == "first-fill":
            chunk[len(item):] = rng.integers(0, 256, nb - len(item), dtype=np.uint8).tobytes()
            chunk[-1] = (item[-1] + 1) % 256  # (never all fill)
        elif kind == "random":
            chunk[:] = rng.integers(0, 256, nb, dtype=np.uint8).tobytes()
        chunks.append(bytes(chunk))
    gap = 3  # chunks at offsets that are not multiples of the chunk size
    buf = np.frombuffer(b"".join(b"\xee" * gap + c for c in chunks), dtype=np.uint8)
    offsets = np.arange(len(chunks), dtype=np.int64) * (nb + gap) + gap
    want = any(inner.is_fill(buf[o:o + nb]) for o in offsets.tolist())
    assert inner.any_fill(buf, offsets) == want
    assert inner.any_fill(buf, offsets[::-1].copy()) == want
    # the same chunks back to back after a lead of `gap` bytes: any_fill_run
    run = np.frombuffer(b"\xee" * gap + b"".join(chunks), dtype=np.uint8)
    assert inner.any_fill_run(run, gap, len(chunks)) == want


def test_whole_shard_with_a_fill_chunk_leaves_it_out():
    store = zarrfast.storage.MemoryStore()
    a = zarrfast.create_array(store, shape=(8, 8), chunks=(4, 4), shards=(8, 8), dtype="<u2",
                              fill_value=5, compressors=None)
    data = np.arange(64, dtype="<u2").reshape(8, 8) + 100
    data[4:, :4] = 5  # one inner chunk is the fill value
    a[:] = data
    assert np.array_equal(a[:], data)
    shard = store.get("c/0/0")
    # three inner chunks of 32 bytes, and the 4 x 16 + 4-byte index
    assert len(shard) == 3 * 32 + 4 * 16 + 4
    data[4:, :4] = 6
    a[:] = data
    assert len(store.get("c/0/0")) == 4 * 32 + 4 * 16 + 4 and np.array_equal(a[:], data)


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("checksum", [True, False])
def test_dense_index_is_the_encoded_index_of_a_full_shard(location, checksum):
    """The index a whole uncompressed shard is written with (encoded once per layout) is
    the one encode_index makes for inner chunk j at data_start + j * nbytes."""
    from zarrfast.codecs import BytesCodec, Crc32cCodec, ShardingCodec

    sharding = ShardingCodec(chunk_shape=(2, 3), codecs=[BytesCodec()],
                             index_codecs=[BytesCodec()] + ([Crc32cCodec()] if checksum else []),
                             index_location=location)
    store = zarrfast.storage.MemoryStore()
    a = zarrfast.create_array(store, shape=(8, 12), chunks=(8, 12), dtype="<u2",
                              serializer=sharding, compressors=None)
    assert a._chain.layout.at_end == (location == "end")
    layout = a._chain.layout
    nb = a._chain.inner.chunk_nbytes
    index = np.empty((layout.n_inner, 2), dtype=np.uint64)
    index[:, 0] = layout.data_start + np.arange(layout.n_inner) * nb
    index[:, 1] = nb
    dense = layout.dense_index(nb)
    assert dense.tobytes() == layout.encode_index(index)
    assert layout.dense_index(nb) is dense  # (encoded once)
    data = np.arange(96, dtype="<u2").reshape(8, 12) + 1
    a[...] = data
    shard = store.get("c/0/0")
    at = 0 if location == "start" else len(shard) - layout.index_nbytes
    assert shard[at:at + layout.index_nbytes] == dense.tobytes()
    assert np.array_equal(a[...], data)
