"""Corrupt chunks of plain arrays: checksum errors and ``ChunkDecodeError`` naming the
key; the intact chunks still read, failed partial writes change nothing.
"""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import Crc32cCodec, GzipCodec
from zarrfast.errors import ChecksumError, ChunkDecodeError

from _helpers.arrays import IMPLS, codec_config, kernels, random_data, same

# ---------------------------------------------------------------------------
# corrupt chunks
# ---------------------------------------------------------------------------


def _flip(raw: bytes, pos: int) -> bytes:
    b = bytearray(raw)
    b[pos] ^= 0x40
    return bytes(b)


@pytest.mark.parametrize("pos", [0, 10, -1, -5])
def test_crc32c_corruption(store: zarrfast.Store, pos: int) -> None:
    a = zarrfast.create_array(store, name="arr", shape=(8,), chunks=(4,), dtype="i4",
                              compressors=[Crc32cCodec()])
    a[:] = np.arange(8)
    store.set("arr/c/1", _flip(store.get("arr/c/1"), pos))
    with pytest.raises(ChecksumError) as info:
        a[:]
    assert isinstance(info.value, ChunkDecodeError)
    assert "arr/c/1" in str(info.value)
    with pytest.raises(ChecksumError):
        a[5]
    same(a[:4], np.arange(4, dtype="i4"))  # the intact chunk still reads
    # a partial write needs the old chunk: it fails and changes nothing
    with pytest.raises(ChecksumError):
        a[5] = 0
    same(a[:4], np.arange(4, dtype="i4"))
    # overwriting the whole chunk does not need to read it
    a[4:] = 9
    same(a[:], np.array([0, 1, 2, 3, 9, 9, 9, 9], "i4"))


@pytest.mark.parametrize(
    ("codecs", "corrupt"),
    [
        ("raw", lambda raw: raw[:-1]),  # truncated
        ("raw", lambda raw: raw + b"\x00"),  # too long
        ("raw", lambda raw: b""),
        ("default", lambda raw: raw[: len(raw) // 2]),  # truncated zstd frame
        ("default", lambda raw: b"garbage!" * 3),
        ("gzip", lambda raw: raw[:-6]),
        ("gzip", lambda raw: b"\x1f\x8b garbage"),
        ("blosc", lambda raw: b"garbage" * 4),
        ("blosc", lambda raw: raw[:10]),
        ("big", lambda raw: raw[:3]),
        ("transpose", lambda raw: raw * 2),
        ("general", lambda raw: b"nope"),
        ("general", lambda raw: gzip.compress(b"\x00" * 5)),  # decompresses to the wrong size
    ],
)
@pytest.mark.parametrize("impl", IMPLS)
def test_garbage_chunks_raise_chunk_decode_error(codecs: str, corrupt: Any, impl: str) -> None:
    store = zarrfast.MemoryStore()
    cfg = codec_config(codecs, 2) if codecs != "gzip" else {"compressors": [GzipCodec()]}
    a = zarrfast.create_array(store, name="g/arr", shape=(4, 6), chunks=(2, 3), dtype="f4",
                              **cfg)
    data = random_data(np.dtype("f4"), (4, 6), np.random.default_rng(2))
    with kernels(impl):
        a[...] = data
        store.set("g/arr/c/1/0", corrupt(store.get("g/arr/c/1/0")))
        with pytest.raises(ChunkDecodeError) as info:
            a[...]
        assert "g/arr/c/1/0" in str(info.value)
        with pytest.raises(ChunkDecodeError):
            a[3, 1]
        with pytest.raises(ChunkDecodeError):
            a[3, 1] = 1.0
        # the other chunks still read
        same(a[0:2], data[0:2])
        same(a[:, 3:], data[:, 3:])
        same(a[2:, 3:], data[2:, 3:])
