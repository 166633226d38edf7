"""Data types and codec chains: the bytes that land in the store (bytes codec layout,
transpose, compressor chains decoded independently), default codecs, refusals.
"""

from __future__ import annotations

import gzip
import json

import crc32c
import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarrfast.errors import MetadataValidationError

from _helpers.arrays import random_data, same

# ---------------------------------------------------------------------------
# data types and codecs: what lands in the store
# ---------------------------------------------------------------------------

ALL_DTYPES = ["bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8",
              "c16", "V1", "V2", "V3", ">i4", ">f8", ">c16", "<u8"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_dtypes_and_bytes_codec_layout(store: zarrfast.Store, dtype: str, endian: str) -> None:
    dt = np.dtype(dtype)
    data = random_data(dt, (4, 6), np.random.default_rng(0))
    a = zarrfast.create_array(store, shape=(4, 6), chunks=(2, 3), dtype=dt,
                              serializer=BytesCodec(endian=endian), compressors=None)
    assert a.dtype == (dt if dt.kind in "bV" else dt.newbyteorder("="))
    assert a.dtype.isnative
    a[...] = data
    same(a[...], data.astype(a.dtype))
    # chunk (1, 0) holds data[2:4, 0:3] in C order with the chosen byte order
    order = "<" if endian == "little" else ">"
    stored_dtype = dt.newbyteorder(order) if dt.itemsize > 1 and dt.kind not in "bV" else dt
    assert store.get("c/1/0") == np.ascontiguousarray(data[2:4, 0:3]).astype(stored_dtype).tobytes()
    doc = json.loads(store.get("zarr.json"))
    if dt.itemsize == 1 or dt.kind == "V":
        assert doc["codecs"] == [{"name": "bytes"}]
    else:
        assert doc["codecs"] == [{"name": "bytes", "configuration": {"endian": endian}}]
    same(zarrfast.open_array(store, mode="r")[1:3, ::-2], data[1:3, ::-2].astype(a.dtype))


@pytest.mark.parametrize("order", [(1, 0, 2), (2, 1, 0), (0, 1, 2), (2, 0, 1)])
def test_transpose_filter_layout(store: zarrfast.Store, order: tuple[int, ...]) -> None:
    data = random_data(np.dtype("u2"), (4, 5, 6), np.random.default_rng(3))
    a = zarrfast.create_array(store, shape=(4, 5, 6), chunks=(4, 5, 6), dtype="u2",
                              filters=[TransposeCodec(order=order)],
                              serializer=BytesCodec(endian="big"), compressors=None)
    a[...] = data
    assert store.get("c/0/0/0") == np.transpose(data, order).astype(">u2").tobytes()
    same(a[...], data)
    same(a[1:3, ::-1, 2], data[1:3, ::-1, 2])
    doc = json.loads(store.get("zarr.json"))
    assert doc["codecs"][0] == {"name": "transpose", "configuration": {"order": list(order)}}


def test_transpose_given_as_metadata_dict(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(2, 3), chunks=(2, 3), dtype="u1",
                              filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                              compressors=None)
    a[...] = np.arange(6).reshape(2, 3)
    assert store.get("c/0/0") == bytes([0, 3, 1, 4, 2, 5])


def _decode_chain(raw: bytes, chain: list[str]) -> bytes:
    """Decode ``raw`` with reference implementations of the named bytes -> bytes codecs."""
    for name in reversed(chain):
        if name == "crc32c":
            assert crc32c.crc32c(raw[:-4]).to_bytes(4, "little") == raw[-4:]
            raw = raw[:-4]
        elif name == "gzip":
            raw = gzip.decompress(raw)
        elif name == "zstd":
            raw = bytes(numcodecs.Zstd().decode(raw))
        elif name == "blosc":
            raw = bytes(numcodecs.Blosc().decode(raw))
    return raw


COMPRESSOR_CHAINS = {
    "gzip": [GzipCodec(level=6)],
    "zstd": [ZstdCodec(level=3)],
    "zstd_checksum": [ZstdCodec(level=3, checksum=True)],
    "blosc": [BloscCodec(cname="zstd", clevel=3)],
    "blosc_lz4_noshuffle": [BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle")],
    "crc32c": [Crc32cCodec()],
    "gzip_crc32c": [GzipCodec(level=1), Crc32cCodec()],
    "blosc_zstd_crc32c": [BloscCodec(cname="lz4", clevel=5), ZstdCodec(level=1), Crc32cCodec()],
}


@pytest.mark.parametrize("name", sorted(COMPRESSOR_CHAINS))
@pytest.mark.parametrize("dtype", ["f8", "u1", "c8"])
def test_compressor_chains(store: zarrfast.Store, name: str, dtype: str) -> None:
    data = random_data(np.dtype(dtype), (10, 10), np.random.default_rng(5))
    data[:5] = data[0, 0]  # something compressible
    a = zarrfast.create_array(store, shape=(10, 10), chunks=(5, 10), dtype=dtype,
                              compressors=COMPRESSOR_CHAINS[name])
    a[...] = data
    same(a[...], data)
    same(zarrfast.open_array(store, mode="r")[::3, 1::2], data[::3, 1::2])
    chain = [c.name for c in COMPRESSOR_CHAINS[name]]
    raw = _decode_chain(store.get("c/0/0"), chain)
    assert raw == np.ascontiguousarray(data[:5]).astype(np.dtype(dtype).newbyteorder("<")
                                                        ).tobytes()
    doc = json.loads(store.get("zarr.json"))
    assert [c["name"] for c in doc["codecs"]] == ["bytes", *chain]
    if "blosc" in name:
        cfg = doc["codecs"][1]["configuration"]
        assert cfg["typesize"] == np.dtype(dtype).itemsize  # filled in on creation
        assert cfg["shuffle"] in ("shuffle", "bitshuffle", "noshuffle")


def test_default_codecs(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3,), dtype="f4")
    assert [type(c) for c in a.codec_chain.codecs] == [BytesCodec, ZstdCodec]
    assert a.filters == () and isinstance(a.serializer, BytesCodec)
    assert len(a.compressors) == 1


def test_compressors_reject_wrong_codec_kind(store: zarrfast.Store) -> None:
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", compressors=[BytesCodec()])
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", filters=[GzipCodec()])
    with pytest.raises(MetadataValidationError):
        zarrfast.create_array(store, shape=(3,), dtype="f4", serializer=GzipCodec())
    with pytest.raises(MetadataValidationError, match="transpose"):
        zarrfast.create_array(store, shape=(3, 2, 2), dtype="f4",
                              filters=[TransposeCodec(order=(1, 0))])
    assert not store.exists("zarr.json")


@pytest.mark.parametrize(("shape", "order"), [((3, 2), (0, 1, 2)), ((3,), (1, 0))])
def test_transpose_filter_too_long_for_rank(shape: tuple, order: tuple) -> None:
    with pytest.raises(MetadataValidationError, match="transpose"):
        zarrfast.create_array(zarrfast.MemoryStore(), shape=shape, dtype="f4",
                              filters=[TransposeCodec(order=order)])
