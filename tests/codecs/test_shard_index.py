"""A shard index in the codecs everyone writes (little-endian ``bytes`` + ``crc32c``) is
decoded without the codec chain; it must give exactly what the chain gives, and refuse
what the chain refuses with the same message."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.codecs import BytesCodec, Crc32cCodec, ShardingCodec
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.errors import ChecksumError, ChunkDecodeError


def _formats(index_location="end"):
    codec = ShardingCodec(chunk_shape=(2, 2), index_location=index_location)
    fast = ShardFormat(codec, (4, 6))
    chained = ShardFormat(codec, (4, 6))
    chained._plain_index = False  # the general path: the index codec chain
    assert fast._plain_index
    return fast, chained


def _index(sizes):
    index = np.full((len(sizes), 2), EMPTY, dtype=np.uint64)
    off = 0
    for i, n in enumerate(sizes):
        if n:
            index[i] = (off, n)
            off += n
    return index


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=6, max_size=6),
       st.sampled_from(["start", "end"]))
def test_fast_index_decode_is_the_chains(sizes, where):
    fast, chained = _formats(where)
    index = _index(sizes)
    if where == "start":  # (the inner chunks follow the index)
        index[index[:, 0] != EMPTY, 0] += fast.index_nbytes
    raw = fast.encode_index(index)
    got, want = fast.decode_index(raw, "k"), chained.decode_index(raw, "k")
    assert got.dtype == want.dtype == np.uint64 and got.shape == want.shape == (6, 2)
    assert np.array_equal(got, want) and np.array_equal(got, index)
    buf = bytearray(raw)  # a reused read buffer: the index is a copy of it
    got = fast.decode_index(buf, "k")
    buf[:] = b"\0" * len(buf)
    assert np.array_equal(got, index)


@pytest.mark.parametrize("byte", [0, 17, -1])
def test_fast_index_refuses_what_the_chain_refuses(byte):
    fast, chained = _formats()
    raw = bytearray(fast.encode_index(_index([8, 0, 8, 8, 0, 8])))
    raw[byte] ^= 0x40
    messages = []
    for fmt in (fast, chained):
        with pytest.raises(ChecksumError, match="'k': index checksum mismatch") as info:
            fmt.decode_index(bytes(raw), "k")
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_bad_entries_and_sizes_are_refused_on_the_fast_path():
    fast, _ = _formats()
    half = _index([8, 8, 8, 8, 8, 8])
    half[2, 1] = EMPTY  # an offset without a size
    with pytest.raises(ChunkDecodeError, match="half empty"):
        fast.decode_index(fast.encode_index(half), "k")
    with pytest.raises(ChunkDecodeError, match="index has 10 bytes"):
        fast.decode_index(b"\0" * 10, "k")


def test_other_index_codecs_take_the_chain():
    codec = ShardingCodec(chunk_shape=(2, 2), index_codecs=(BytesCodec(endian="big"),
                                                            Crc32cCodec()))
    fmt = ShardFormat(codec, (4, 6))
    assert not fmt._plain_index
    index = _index([8, 0, 8, 8, 0, 8])
    assert np.array_equal(fmt.decode_index(fmt.encode_index(index), "k"), index)
    assert not ShardFormat(ShardingCodec(chunk_shape=(2, 2), index_codecs=(BytesCodec(),)),
                           (4, 6))._plain_index
