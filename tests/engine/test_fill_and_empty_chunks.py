"""Fill values of missing chunks, ``write_empty_chunks`` and edge chunks."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import FillValueError

from _helpers.arrays import chunk_keys, codec_config, full_fill, random_data, same

# ---------------------------------------------------------------------------
# fill values, empty chunks, edge chunks
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "fill", "expected"),
    [
        ("i2", 7, np.int16(7)),
        ("u8", 2**64 - 1, np.uint64(2**64 - 1)),
        ("bool", True, np.True_),
        ("f4", "NaN", np.float32("nan")),
        ("f2", "0x7e01", np.array(0x7E01, "u2").view("f2")[()]),
        ("f8", "0x7ff0000000000001", np.array(0x7FF0000000000001, "u8").view("f8")[()]),
        ("f8", -0.0, np.float64(-0.0)),
        ("f4", "-Infinity", np.float32(-np.inf)),
        ("c8", [1.0, "NaN"], np.complex64(complex(1, float("nan")))),
        ("V3", b"\x01\x02\x03", np.frombuffer(b"\x01\x02\x03", "V3")[0]),
    ],
    ids=lambda v: str(v)[:20],
)
def test_missing_chunks_read_as_fill(store: zarrfast.Store, dtype: str, fill: Any,
                                     expected: Any) -> None:
    for codecs in ("default", "big", "transpose"):
        a = zarrfast.create_array(store, shape=(5, 3), chunks=(2, 2), dtype=dtype,
                                  fill_value=fill, overwrite=True, **codec_config(codecs, 2))
        same(a[...], full_fill((5, 3), np.dtype(dtype), expected))
        # and after a partial write, the rest still reads as fill (bit-exact)
        value = random_data(np.dtype(dtype), (2,), np.random.default_rng(1))
        a[4, 1:] = value
        exp = full_fill((5, 3), np.dtype(dtype), expected)
        exp[4, 1:] = value
        same(a[...], exp)
        same(zarrfast.open_array(store, mode="r")[...], exp)


def test_raw_fill_value_as_bytes(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3,), chunks=(2,), dtype="V2", fill_value=b"\x01\xff")
    assert a.metadata.fill_value_json == "Af8="  # (raw_bytes: base64, as zarr-python)
    same(a[:], np.frombuffer(b"\x01\xff" * 3, "V2"))
    r = zarrfast.create_array(store, shape=(3,), chunks=(2,), dtype="r16", fill_value=b"\x01\xff",
                              overwrite=True)
    assert r.metadata.fill_value_json == [1, 255]  # (the core spec's r<N>: a list)
    same(r[:], np.frombuffer(b"\x01\xff" * 3, "V2"))
    with pytest.raises(FillValueError):
        zarrfast.create_array(store, shape=(3,), dtype="V2", fill_value=b"\x01", overwrite=True)


def test_void_fill_value_scalar() -> None:
    fill = np.frombuffer(b"\x01\x02\x03", "V3")[0]
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(2,), dtype="V3", fill_value=fill)
    assert a.metadata.fill_value_json == "AQID"  # (raw_bytes: base64 of 01 02 03)


def test_write_empty_chunks_false_deletes_fill_chunks(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(6,), chunks=(2,), dtype="f4", fill_value=1.0,
                              config={"write_empty_chunks": False})
    assert a.write_empty_chunks is False
    a[:] = 1.0
    assert chunk_keys(store) == []
    a[0:3] = 2.0
    assert chunk_keys(store) == ["c/0", "c/1"]
    a[2] = 1.0  # c/1 back to all fill
    assert chunk_keys(store) == ["c/0"]
    a[0:2] = np.array([1.0, 1.0], dtype="f4")
    assert chunk_keys(store) == []
    same(a[:], np.ones(6, "f4"))


def test_write_empty_chunks_nan_fill(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="f8", fill_value="NaN",
                              config={"write_empty_chunks": False})
    a[:] = 1.0
    a[:2] = np.nan  # the canonical NaN equals the fill value bit for bit
    assert chunk_keys(store) == ["c/1"]


def test_write_empty_chunks_true_keeps_fill_chunks(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(6,), chunks=(2,), dtype="i4",
                              config={"write_empty_chunks": True})
    assert a.write_empty_chunks is True
    a[:] = 0
    assert chunk_keys(store) == ["c/0", "c/1", "c/2"]
    same(a[:], np.zeros(6, "i4"))


def test_write_empty_chunks_from_global_config(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    with zarrfast.config.set(write_empty_chunks=True):
        a[:2] = 0
    assert chunk_keys(store) == ["c/0"]
    with zarrfast.config.set(write_empty_chunks=False):
        a[:] = 0
    assert chunk_keys(store) == []
    b = a.with_write_empty_chunks(True)
    b[2:] = 0
    assert chunk_keys(store) == ["c/1"]


def test_edge_chunks_are_stored_at_full_size_with_fill_padding(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(5, 3), chunks=(2, 2), dtype="<i2", fill_value=-1,
                              compressors=None)
    data = np.arange(15, dtype="i2").reshape(5, 3)
    a[...] = data
    assert a.cdata_shape == (3, 2) and a.nchunks == 6
    for i, j in itertools.product(range(3), range(2)):
        raw = store.get(f"c/{i}/{j}")
        assert len(raw) == 2 * 2 * 2  # always the nominal chunk shape
        chunk = np.frombuffer(raw, "<i2").reshape(2, 2)
        expected = np.full((2, 2), -1, "i2")
        part = data[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2]
        expected[:part.shape[0], :part.shape[1]] = part
        same(chunk, expected)
    same(a[...], data)
    # partial write into an edge chunk keeps the padding at the fill value
    a[4, 2] = 99
    same(np.frombuffer(store.get("c/2/1"), "<i2"), np.array([99, -1, -1, -1], "i2"))
