"""Interoperability with zarr-python 3 and tensorstore: ``write_empty_chunks``, writes
with steps (zarrfast creates, or partially overwrites what a peer wrote), groups,
dimension names and attributes.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import zarrfast

from _helpers import seed_of
from _helpers.interop import (
    CODEC_CHAINS,
    INF,
    NAN,
    PEERS,
    READERS,
    WRITERS,
    Case,
    assert_identical,
    expected_array,
    fill_id,
    make_data,
    read_ts,
    stored_keys,
    ts_spec,
    write_zf,
)

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.interop


# ---------------------------------------------------------------------------
# write_empty_chunks
# ---------------------------------------------------------------------------
EMPTY_FILLS = [("float32", NAN), ("float64", -INF), ("int16", -5), ("uint64", 2**64 - 1),
               ("bool", True), ("complex64", complex(NAN, 0.0)), ("complex128", complex(1, -1))]


@pytest.mark.parametrize("reader", PEERS)
@pytest.mark.parametrize(("dtype", "fill"), EMPTY_FILLS, ids=[f"{d}-{fill_id(f)}"
                                                               for d, f in EMPTY_FILLS])
def test_write_empty_chunks_false(tmp_path, reader, dtype, fill):
    shape, chunks = (8, 6), (3, 4)  # grid 3 x 2, edge chunks in both dimensions
    data = np.full(shape, fill, dtype=dtype)
    other = make_data(dtype, (2,), seed_of(dtype, "other"))
    other = other[other != np.asarray(fill, dtype)][:1]
    data[1, 2] = other[0]   # chunk (0, 0)
    data[7, 5] = other[0]   # chunk (2, 1): the corner edge chunk
    a = zarrfast.create_array(str(tmp_path), shape=shape, chunks=chunks, dtype=dtype,
                              fill_value=fill, config={"write_empty_chunks": False})
    a[...] = data
    assert stored_keys(tmp_path) == {"zarr.json", "c/0/0", "c/2/1"}
    assert_identical(READERS[reader](tmp_path), data, bitwise=False, exact_dtype=False)

    # overwriting a stored chunk with nothing but the fill value removes it
    a[0:3, 0:4] = np.asarray(fill, dtype)
    data[0:3, 0:4] = np.asarray(fill, dtype)
    assert stored_keys(tmp_path) == {"zarr.json", "c/2/1"}
    assert_identical(READERS[reader](tmp_path), data, bitwise=False, exact_dtype=False)
    assert_identical(zarrfast.open_array(str(tmp_path), mode="r")[...], data)


def _f32_bits(bits: int) -> float:
    return float(np.frombuffer(np.uint32(bits).tobytes(), "f4")[0])


NOT_IDENTICAL = [  # (dtype, fill, a value that compares equal (NaN-aware) but differs in bits)
    ("float32", 0.0, -0.0),
    ("float64", -0.0, 0.0),
    ("complex64", complex(NAN, 0.0), complex(NAN, 1.0)),
    ("complex128", complex(0.0, NAN), complex(5.0, NAN)),
    ("float32", NAN, _f32_bits(0xFFC00000)),  # -NaN
]


@pytest.mark.parametrize(("dtype", "fill", "value"), NOT_IDENTICAL,
                         ids=[f"{d}-{fill_id(f)}-{fill_id(v)}" for d, f, v in NOT_IDENTICAL])
def test_write_empty_chunks_keeps_data_not_identical_to_fill(tmp_path, dtype, fill, value):
    """A chunk is only "empty" if it is bit for bit the fill value; otherwise dropping it
    would change what is read back (the sign of a zero, the other part of a complex)."""
    a = zarrfast.create_array(str(tmp_path), shape=(4,), chunks=(2,), dtype=dtype,
                              fill_value=fill, config={"write_empty_chunks": False})
    a[0:2] = np.asarray(value, dtype)
    expected = np.full((4,), fill, dtype=dtype)
    expected[0:2] = value
    assert stored_keys(tmp_path) == {"zarr.json", "c/0"}
    assert_identical(zarrfast.open_array(str(tmp_path), mode="r")[...], expected)
    for reader in PEERS:
        assert_identical(READERS[reader](tmp_path), expected, bitwise=False, exact_dtype=False)


@pytest.mark.parametrize("reader", PEERS)
def test_write_empty_chunks_true(tmp_path, reader):
    shape, chunks = (8, 6), (3, 4)
    a = zarrfast.create_array(str(tmp_path), shape=shape, chunks=chunks, dtype="float32",
                              fill_value=NAN, config={"write_empty_chunks": True})
    data = np.full(shape, NAN, dtype="float32")
    data[4, 4] = 2.5
    a[...] = data
    assert stored_keys(tmp_path) == {"zarr.json"} | {f"c/{i}/{j}" for i in range(3)
                                                    for j in range(2)}
    assert_identical(READERS[reader](tmp_path), data, bitwise=False, exact_dtype=False)


# ---------------------------------------------------------------------------
# writes with steps: zarrfast creates, or partially overwrites what a peer wrote
# ---------------------------------------------------------------------------
WRITE_SELS = [
    (slice(1, 9, 3), slice(None, None, -2), 2),
    (Ellipsis, slice(6, 0, -3)),
    (slice(None, None, -1), 4, slice(1, 6)),
    (slice(None, None, 2), slice(None, None, 3), slice(None, None, -1)),
    (3, 5, 6),
    (slice(8, None), Ellipsis),  # only the edge chunks along dimension 0 (missing before)
    "scalar-broadcast",
]
WRITE_CASES = [
    Case("ow-float32-transpose-blosc", "float32", NAN, CODEC_CHAINS["transpose-blosc-crc32c"]),
    Case("ow-int64-be-gzip-crc", "int64", -(2**63), CODEC_CHAINS["transpose-be-gzip-crc32c"]),
    Case("ow-complex128-zstd", "complex128", complex(INF, NAN), CODEC_CHAINS["zstd-checksum"]),
    Case("ow-bool-bitshuffle-v2", "bool", True, CODEC_CHAINS["blosc-bitshuffle"],
         cke=("v2", ".")),
    Case("ow-uint16-dot", "uint16", 65535, CODEC_CHAINS["bytes-be"], cke=("default", ".")),
]


def _sel_id(sel: Any) -> str:
    if isinstance(sel, str):
        return sel
    parts = []
    for s in sel:
        if s is Ellipsis:
            parts.append("...")
        elif isinstance(s, slice):
            parts.append(":".join("" if v is None else str(v) for v in (s.start, s.stop, s.step)))
        else:
            parts.append(str(s))
    return ",".join(parts)


def _apply_write(a: Any, expected: np.ndarray, sel: Any, case: Case) -> None:
    if sel == "scalar-broadcast":
        sel = (slice(None, None, -3), slice(2, 7), Ellipsis)
        value = make_data(case.dtype, (1,), seed_of(case.id, "scalar"))[0]
    else:
        value = make_data(case.dtype, expected[sel].shape, seed_of(case.id, _sel_id(sel)))
    a[sel] = value
    expected[sel] = value


@pytest.mark.parametrize("sel", WRITE_SELS, ids=_sel_id)
@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
@pytest.mark.parametrize("writer", PEERS)
def test_zarrfast_partial_overwrite_of_peer_array(tmp_path, writer, case, sel):
    WRITERS[writer](tmp_path, case)
    expected = expected_array(case)
    a = zarrfast.open_array(str(tmp_path), mode="r+")
    _apply_write(a, expected, sel, case)
    # the peer sees the new elements and every other element unchanged
    assert_identical(READERS[writer](tmp_path), expected, bitwise=False, exact_dtype=False)
    assert_identical(zarrfast.open_array(str(tmp_path), mode="r")[...], expected)
    # and the metadata document was not rewritten
    doc = json.loads((tmp_path / "zarr.json").read_bytes())
    fresh = tmp_path.parent / "fresh"
    WRITERS[writer](fresh, case)
    assert doc == json.loads((fresh / "zarr.json").read_bytes())


@pytest.mark.parametrize("sel", WRITE_SELS, ids=_sel_id)
@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_zarrfast_strided_writes_read_by_peers(tmp_path, case, sel):
    a = write_zf(tmp_path, case)
    expected = expected_array(case)
    _apply_write(a, expected, sel, case)
    for reader in PEERS:
        assert_identical(READERS[reader](tmp_path), expected, bitwise=False, exact_dtype=False)


# ---------------------------------------------------------------------------
# groups
# ---------------------------------------------------------------------------
ROOT_ATTRS = {"title": "root", "numbers": [1, 2.5, None, True], "nested": {"k": "v", "e": {}}}
SUB_ATTRS = {"level": 1, "name": "\u00e9t\u00e9"}


def _hierarchy_data():
    arr = np.arange(20, dtype="int32").reshape(5, 4) * -3
    top = np.array([1.5, NAN, -INF], dtype="float64")
    return arr, top


def _expected_members():
    return {"sub": "group", "sub/arr": "array", "sub/deeper": "group",
            "sub/deeper/scalar": "array", "top": "array", "empty": "group"}


def test_zarrfast_opens_zarr_python_hierarchy(tmp_path):
    arr, top = _hierarchy_data()
    root = zarr.open_group(str(tmp_path), mode="w", attributes=ROOT_ATTRS)
    sub = root.create_group("sub", attributes=SUB_ATTRS)
    deeper = sub.create_group("deeper")
    root.create_group("empty")
    z = sub.create_array("arr", shape=(5, 4), chunks=(2, 3), dtype="int32", fill_value=-1,
                         dimension_names=("row", "col"))
    z[...] = arr
    z = root.create_array("top", shape=(3,), chunks=(2,), dtype="float64", fill_value=NAN,
                          attributes={"units": "m"})
    z[...] = top
    z = deeper.create_array("scalar", shape=(), chunks=(), dtype="uint8", fill_value=7)

    g = zarrfast.open_group(str(tmp_path), mode="r")
    assert isinstance(g, zarrfast.Group)
    assert dict(g.attrs) == ROOT_ATTRS
    assert sorted(g.keys()) == ["empty", "sub", "top"]
    members = dict(g.members(max_depth=None))
    assert {k: "array" if isinstance(v, zarrfast.Array) else "group"
            for k, v in members.items()} == _expected_members()
    assert dict(g["sub"].attrs) == SUB_ATTRS
    assert_identical(g["sub/arr"][...], arr)
    assert_identical(g["sub"]["arr"][::-2, ::2], arr[::-2, ::2])
    assert g["sub/arr"].metadata.dimension_names == ("row", "col")
    assert_identical(g["top"][...], top)
    assert dict(g["top"].attrs) == {"units": "m"}
    assert_identical(g["sub/deeper/scalar"][()], np.asarray(7, dtype="uint8"))
    assert isinstance(zarrfast.open(str(tmp_path), path="sub/arr", mode="r"), zarrfast.Array)
    assert isinstance(zarrfast.open(str(tmp_path), path="sub/deeper", mode="r"), zarrfast.Group)
    assert_identical(zarrfast.open_array(str(tmp_path), path="top", mode="r")[::-1], top[::-1])
    for key in ("", "sub", "sub/deeper", "empty"):
        doc = json.loads((tmp_path / key / "zarr.json").read_bytes())
        assert zarrfast.open_group(str(tmp_path), path=key, mode="r").metadata.to_dict() == doc

    # zarrfast adds to the zarr-python hierarchy; zarr-python sees it
    g2 = zarrfast.open_group(str(tmp_path), path="sub", mode="r+")
    new = g2.create_array("added", shape=(3, 2), chunks=(2, 2), dtype="int8", fill_value=1)
    new[1:, ::-1] = np.array([[1, 2], [3, 4]], dtype="int8")
    g2.attrs["added"] = True
    zroot = zarr.open_group(str(tmp_path), mode="r")
    assert "added" in dict(zroot["sub"].members())
    np.testing.assert_array_equal(zroot["sub/added"][...],
                                  np.array([[1, 1], [2, 1], [4, 3]], dtype="int8"))
    assert dict(zroot["sub"].attrs) == {**SUB_ATTRS, "added": True}


def test_zarr_python_opens_zarrfast_hierarchy(tmp_path):
    arr, top = _hierarchy_data()
    root = zarrfast.open_group(str(tmp_path), mode="w", attributes=ROOT_ATTRS)
    sub = root.create_group("sub", attributes=SUB_ATTRS)
    deeper = sub.create_group("deeper")
    root.create_group("empty")
    a = sub.create_array("arr", shape=(5, 4), chunks=(2, 3), dtype="int32", fill_value=-1,
                         dimension_names=("row", "col"))
    a[...] = arr
    a = root.create_array("top", shape=(3,), chunks=(2,), dtype="float64", fill_value=NAN,
                          attributes={"units": "m"})
    a[...] = top
    deeper.create_array("scalar", shape=(), chunks=(), dtype="uint8", fill_value=7)

    g = zarr.open_group(str(tmp_path), mode="r")
    assert dict(g.attrs) == ROOT_ATTRS
    assert sorted(g.keys()) == ["empty", "sub", "top"]
    members = dict(g.members(max_depth=None))
    assert {k: "array" if isinstance(v, zarr.Array) else "group"
            for k, v in members.items()} == _expected_members()
    assert dict(g["sub"].attrs) == SUB_ATTRS
    np.testing.assert_array_equal(g["sub/arr"][...], arr)
    assert g["sub/arr"].metadata.dimension_names == ("row", "col")
    np.testing.assert_array_equal(g["top"][...], top)
    assert dict(g["top"].attrs) == {"units": "m"}
    assert g["sub/deeper/scalar"][()] == 7
    # tensorstore reads the nested arrays by path
    np.testing.assert_array_equal(read_ts(tmp_path / "sub" / "arr"), arr)
    np.testing.assert_array_equal(read_ts(tmp_path / "top"), top)
    assert ts.open(ts_spec(tmp_path / "sub" / "arr")).result().domain.labels == ("row", "col")


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex128", "bool"])
def test_create_array_with_data_read_by_peers(tmp_path, dtype):
    data = make_data(dtype, (6, 7), seed_of(dtype, "data="))
    zarrfast.create_array(str(tmp_path), data=data, chunks=(4, 3),
                          compressors=zarrfast.codecs.GzipCodec(level=2))
    for reader in PEERS:
        assert_identical(READERS[reader](tmp_path), data, bitwise=False, exact_dtype=False)
    assert_identical(zarrfast.open_array(str(tmp_path), mode="r")[...], data)
