"""Zarr v3 metadata (``zarr.json``): parsing, validation, round trips, fill values.

Spec: zarr-specs ``docs/v3/core/index.rst`` ("Metadata") and
``docs/v3/data-types/index.rst``.  Every invalid document must raise a
:class:`zarrfast.errors.ZarrfastError` subclass whose message names the node
path and the offending member.
"""

from __future__ import annotations

import copy
import json
import math
import struct
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarrfast.errors import (
    FillValueError,
    MetadataError,
    MetadataValidationError,
    UnknownCodecError,
    UnsupportedDataTypeError,
    ZarrfastError,
)
from zarrfast.metadata import data_type_from_numpy, parse_data_type
from zarrfast.metadata.chunk_grid import DefaultChunkKeyEncoding, V2ChunkKeyEncoding
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

PATH = "a/b"
KEY = "a/b/zarr.json"

LE = {"name": "bytes", "configuration": {"endian": "little"}}


def array_doc(**overrides: Any) -> dict[str, Any]:
    """A valid, complete array document (as zarr-python writes it); ``overrides``
    replace members, and a value of ``...`` deletes the member."""
    doc: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 7],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": [LE],
        "attributes": {},
    }
    for k, v in overrides.items():
        if v is ...:
            doc.pop(k, None)
        else:
            doc[k] = v
    return doc


def one_d(data_type: str, fill_value: Any, **overrides: Any) -> dict[str, Any]:
    codec = LE if np.dtype(parse_data_type(data_type).dtype).itemsize > 1 else {"name": "bytes"}
    if data_type.startswith("r"):
        codec = {"name": "bytes"}
    return array_doc(
        shape=[5],
        data_type=data_type,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2]}},
        fill_value=fill_value,
        codecs=[codec],
        **overrides,
    )


def parse(doc: Any, path: str = PATH) -> ArrayMetadata | GroupMetadata:
    key = f"{path}/zarr.json" if path else "zarr.json"
    return parse_metadata(json.dumps(doc).encode(), path=path, key=key)


def expect_error(doc: Any, cls: type[Exception], *fragments: str) -> ZarrfastError:
    """``doc`` must fail with ``cls``; the message names the node path and every fragment."""
    with pytest.raises(cls) as info:
        parse(doc)
    err = info.value
    assert isinstance(err, ZarrfastError)
    msg = str(err)
    assert PATH in msg, msg
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return err


def bits_of(value: Any) -> int:
    """The bit pattern of a NumPy float scalar."""
    arr = np.asarray(value)
    return int(arr.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[arr.itemsize])[()])


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------

FULL_DOCS = [
    array_doc(),
    array_doc(
        shape=[100, 20, 3],
        data_type="complex128",
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": [10, 20, 1]}},
        chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
        fill_value=["NaN", "-Infinity"],
        codecs=[
            {"name": "transpose", "configuration": {"order": [2, 0, 1]}},
            {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "blosc", "configuration": {"typesize": 8, "cname": "lz4", "clevel": 5,
                                                "shuffle": "shuffle", "blocksize": 0}},
            {"name": "gzip", "configuration": {"level": 9}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": True}},
            {"name": "crc32c"},
        ],
        attributes={"nested": {"x": [1, 2.5, None, "s", True]}, "empty": {}},
        dimension_names=["t", None, "c"],
        storage_transformers=[],
    ),
    array_doc(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}},
              data_type="int64", fill_value=-(2**63)),
    array_doc(shape=[0, 0], data_type="uint8", fill_value=255, codecs=[{"name": "bytes"}]),
    array_doc(data_type="r24", fill_value=[1, 2, 3], codecs=[{"name": "bytes"}],
              chunk_key_encoding={"name": "default", "configuration": {"separator": "."}}),
    array_doc(data_type="bool", fill_value=True, codecs=[{"name": "bytes"}, {"name": "crc32c"}],
              chunk_key_encoding={"name": "v2", "configuration": {"separator": "/"}}),
    array_doc(data_type="float16", fill_value="0x7e01", dimension_names=[None, None]),
]


@pytest.mark.parametrize("doc", FULL_DOCS, ids=range(len(FULL_DOCS)))
def test_array_round_trip(doc: dict) -> None:
    md = parse(doc)
    assert isinstance(md, ArrayMetadata)
    assert md.to_dict() == doc
    # and through the serialized form
    assert json.loads(md.to_json()) == doc
    again = parse_metadata(md.to_json(), path=PATH, key=KEY)
    assert again.to_dict() == doc


def test_array_round_trip_parsed_values() -> None:
    md = parse(FULL_DOCS[1])
    assert md.shape == (100, 20, 3)
    assert md.chunks == (10, 20, 1)
    assert md.dtype == np.dtype("c16")
    assert md.ndim == 3
    assert md.dimension_names == ("t", None, "c")
    assert md.storage_transformers == ()
    assert isinstance(md.chunk_key_encoding, V2ChunkKeyEncoding)
    assert md.chunk_key_encoding.separator == "."
    assert [type(c) for c in md.codecs] == [
        TransposeCodec, BytesCodec, BloscCodec, GzipCodec, ZstdCodec, Crc32cCodec
    ]
    assert md.codecs[0].order == (2, 0, 1)
    assert md.codecs[1].endian == "big"
    assert md.codecs[3].level == 9
    assert md.codecs[4].checksum is True
    assert np.isnan(md.fill_value.real) and md.fill_value.imag == -np.inf
    assert md.attributes["nested"]["x"] == [1, 2.5, None, "s", True]


def test_optional_members_absent() -> None:
    doc = array_doc(attributes=...)
    md = parse(doc)
    assert md.attributes == {}
    assert md.dimension_names is None
    assert md.storage_transformers is None
    out = md.to_dict()
    # omitted members stay omitted (tensorstore leaves out empty attributes)
    assert out == doc
    assert "attributes" not in out
    assert "dimension_names" not in out
    assert "storage_transformers" not in out
    # once attributes are set they are written
    assert md.update_attributes({"a": 1}).to_dict()["attributes"] == {"a": 1}
    # an explicitly empty attributes member is kept
    assert parse(array_doc(attributes={})).to_dict()["attributes"] == {}


def test_group_round_trip() -> None:
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {"a": [1, {"b": None}]}}
    md = parse(doc)
    assert isinstance(md, GroupMetadata)
    assert md.attributes == {"a": [1, {"b": None}]}
    assert md.to_dict() == doc
    assert json.loads(md.to_json()) == doc
    bare = parse({"zarr_format": 3, "node_type": "group"})
    assert bare.attributes == {}


def test_group_extension_member() -> None:
    ext = {"must_understand": False, "anything": [1, 2]}
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {}, "ext": ext}
    assert parse(doc).to_dict() == doc
    expect_error({"zarr_format": 3, "node_type": "group", "ext": {"x": 1}},
                 MetadataValidationError, "'ext'")
    expect_error({"zarr_format": 3, "node_type": "group", "attributes": []},
                 MetadataValidationError, "attributes")


def test_consolidated_metadata_member_is_kept() -> None:
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {},
           "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                     "metadata": {}}}
    assert parse(doc).to_dict() == doc


# ---------------------------------------------------------------------------
# Data types
# ---------------------------------------------------------------------------

DATA_TYPES = {
    "bool": "?",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "float16": "f2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
    "r8": "V1",
    "r16": "V2",
    "r24": "V3",
    "r64": "V8",
}

DEFAULT_FILL = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": [0.0, 0.0]}


@pytest.mark.parametrize("name", sorted(DATA_TYPES))
def test_every_data_type_parses_and_round_trips(name: str) -> None:
    dt = parse_data_type(name)
    assert dt.name == name
    assert dt.dtype == np.dtype(DATA_TYPES[name])
    assert dt.to_json() == name
    kind = dt.dtype.kind
    fill = [0] * dt.itemsize if kind == "V" else DEFAULT_FILL[kind]
    doc = one_d(name, fill)
    md = parse(doc)
    assert md.data_type.name == name
    assert md.dtype == np.dtype(DATA_TYPES[name])
    assert md.to_dict() == doc
    # the fill value re-encoded from the parsed scalar equals the document's
    assert md.data_type.fill_value_to_json(md.fill_value) == fill


@pytest.mark.parametrize(
    ("numpy_dtype", "name"),
    [("<f4", "float32"), (">f4", "float32"), (">i8", "int64"), ("<u2", "uint16"), ("?", "bool"),
     ("c8", "complex64"), (">c16", "complex128"), ("V3", "r24"), ("V1", "r8"), ("f2", "float16")],
)
def test_data_type_from_numpy(numpy_dtype: str, name: str) -> None:
    dt = data_type_from_numpy(np.dtype(numpy_dtype))
    assert dt.name == name
    assert dt.dtype.isnative or dt.dtype.byteorder == "|"


@pytest.mark.parametrize("bad", ["U0", "S0", "M8[s]", [("a", "i4"), ("b", "f8")], "(2,)i4"])
def test_data_type_from_numpy_rejects(bad: Any) -> None:
    with pytest.raises(UnsupportedDataTypeError):
        data_type_from_numpy(bad)


@pytest.mark.parametrize(
    "bad",
    ["float128", "int4", "strings", "r7", "r0", "r", "R8", "Float32", "<f4", "", 5, None, ["int8"],
     {"name": "int8", "configuration": {"x": 1}}, {"name": "nope"}],
)
def test_unknown_data_type(bad: Any) -> None:
    err = expect_error(array_doc(data_type=bad), UnsupportedDataTypeError, "data_type")
    assert isinstance(err, TypeError)  # UnsupportedDataTypeError is a TypeError too


def test_data_type_object_form() -> None:
    md = parse(array_doc(data_type={"name": "int16", "configuration": {}}, fill_value=3))
    assert md.dtype == np.dtype("i2")
    assert md.to_dict()["data_type"] == "int16"


def test_huge_raw_data_type_is_a_zarrfast_error() -> None:
    with pytest.raises(UnsupportedDataTypeError):
        parse_data_type("r17179869184")


# ---------------------------------------------------------------------------
# Fill values
# ---------------------------------------------------------------------------

HEX_CASES = [
    # (data type, JSON hex, canonical NaN?)
    ("float32", "0x7fc00000", True),
    ("float64", "0x7ff8000000000000", True),
    ("float16", "0x7e00", True),
    ("float16", "0x7e01", False),  # quiet NaN with a payload
    ("float16", "0x7c01", False),  # signalling NaN
    ("float16", "0xfe00", False),  # negative NaN
    ("float32", "0x7fc00001", False),
    ("float32", "0x7f800001", False),  # signalling NaN
    ("float32", "0xffc00000", False),
    ("float64", "0x7ff8000000000001", False),
    ("float64", "0x7ff0000000000001", False),  # signalling NaN
    ("float64", "0xfff8000000000000", False),
]


@pytest.mark.parametrize(("name", "hexval", "canonical"), HEX_CASES)
def test_hex_nan_fill_values_round_trip_bit_exactly(name: str, hexval: str, canonical: bool
                                                     ) -> None:
    doc = one_d(name, hexval)
    md = parse(doc)
    assert np.isnan(md.fill_value)
    assert bits_of(md.fill_value) == int(hexval, 16)
    # written back exactly as read
    assert md.fill_value_json == hexval
    assert md.to_dict() == doc
    # re-encoding the NumPy scalar keeps the payload (only the canonical NaN is "NaN")
    encoded = md.data_type.fill_value_to_json(md.fill_value)
    assert encoded == ("NaN" if canonical else hexval)
    rebuilt = replace(md, fill_value_json=None)
    assert rebuilt.fill_value_json == encoded
    # and the re-encoded form parses back to the same bits
    md2 = parse(one_d(name, encoded))
    assert bits_of(md2.fill_value) == int(hexval, 16)


@pytest.mark.parametrize(
    ("name", "hexval", "expected"),
    [("float32", "0x3f800000", 1.0), ("float64", "0xc000000000000000", -2.0),
     ("float16", "0x3c00", 1.0), ("float16", "0x7c00", math.inf), ("float32", "0xff800000", -math.inf),
     ("float32", "0x3F800000", 1.0), ("float64", "0x8000000000000000", -0.0)],
)
def test_hex_non_nan_fill_values(name: str, hexval: str, expected: float) -> None:
    md = parse(one_d(name, hexval))
    assert md.fill_value == expected
    assert math.copysign(1, float(md.fill_value)) == math.copysign(1, expected)
    assert md.fill_value_json == hexval


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@pytest.mark.parametrize(
    ("json_value", "check"),
    [
        ("NaN", lambda v: np.isnan(v)),
        ("Infinity", lambda v: v == np.inf),
        ("-Infinity", lambda v: v == -np.inf),
        (1.5, lambda v: v == 1.5),
        (-3, lambda v: v == -3.0),
        (0, lambda v: v == 0),
        (-0.0, lambda v: v == 0 and math.copysign(1, float(v)) == -1),
    ],
)
def test_float_fill_values(name: str, json_value: Any, check: Any) -> None:
    doc = one_d(name, json_value)
    md = parse(doc)
    assert md.fill_value.dtype == parse_data_type(name).dtype
    assert check(md.fill_value)
    assert md.to_dict()["fill_value"] == json_value
    # re-encoding gives an equivalent JSON value
    enc = md.data_type.fill_value_to_json(md.fill_value)
    back = parse(one_d(name, enc)).fill_value
    assert bits_of(back) == bits_of(md.fill_value)


def test_float_fill_value_extremes() -> None:
    assert parse(one_d("float16", 65504)).fill_value == np.float16(65504)
    assert parse(one_d("float64", 1.7976931348623157e308)).fill_value == np.finfo("f8").max
    assert parse(one_d("float32", 1e-45)).fill_value > 0  # smallest subnormal


@pytest.mark.parametrize(
    ("name", "json_value", "expected"),
    [
        ("complex64", [1.5, -2], complex(1.5, -2)),
        ("complex128", [0, 0], 0j),
        ("complex128", ["Infinity", "-Infinity"], complex(math.inf, -math.inf)),
        ("complex128", [1e300, -1e-300], complex(1e300, -1e-300)),
        ("complex64", ["0x3f800000", "0x40000000"], complex(1, 2)),
    ],
)
def test_complex_fill_values(name: str, json_value: list, expected: complex) -> None:
    doc = one_d(name, json_value)
    md = parse(doc)
    assert md.fill_value == expected
    assert md.to_dict() == doc


def test_complex_fill_value_nan_components_bit_exact() -> None:
    md = parse(one_d("complex64", ["0x7fc00001", "NaN"]))
    assert bits_of(md.fill_value.real) == 0x7FC00001
    assert bits_of(md.fill_value.imag) == 0x7FC00000
    assert md.data_type.fill_value_to_json(md.fill_value) == ["0x7fc00001", "NaN"]


@pytest.mark.parametrize(
    ("name", "json_value"),
    [("r8", [255]), ("r8", [0]), ("r16", [1, 2]), ("r24", [1, 2, 3]),
     ("r64", [0, 1, 2, 3, 4, 5, 6, 255])],
)
def test_raw_fill_values(name: str, json_value: list) -> None:
    doc = one_d(name, json_value)
    md = parse(doc)
    assert md.fill_value.tobytes() == bytes(json_value)
    assert md.data_type.fill_value_to_json(md.fill_value) == json_value
    assert md.to_dict() == doc


@pytest.mark.parametrize(
    ("name", "json_value"),
    [("bool", True), ("bool", False), ("int8", -128), ("int8", 127), ("uint8", 255),
     ("int16", -32768), ("uint16", 65535), ("int32", -(2**31)), ("uint32", 2**32 - 1),
     ("int64", 2**63 - 1), ("int64", -(2**63)), ("uint64", 2**64 - 1), ("uint64", 0)],
)
def test_int_and_bool_fill_values(name: str, json_value: Any) -> None:
    doc = one_d(name, json_value)
    md = parse(doc)
    assert md.fill_value == json_value
    assert type(md.data_type.fill_value_to_json(md.fill_value)) is type(json_value)
    assert md.data_type.fill_value_to_json(md.fill_value) == json_value
    assert md.to_dict() == doc


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        # integers out of range
        ("int8", 128), ("int8", -129), ("uint8", -1), ("uint8", 256), ("uint64", 2**64),
        ("int64", 2**63), ("int64", -(2**63) - 1),
        # floats / strings / bools for integers
        ("int32", 1.5), ("int32", 1.0), ("int32", "1"), ("int32", True), ("uint8", None),
        ("int16", "NaN"), ("int16", [1]),
        # strings / numbers for bool
        ("bool", "true"), ("bool", 1), ("bool", 0), ("bool", None),
        # hex of the wrong length
        ("float32", "0x7fc0"), ("float32", "0x7fc0000000"), ("float16", "0x7e000000"),
        ("float64", "0x7fc00000"), ("float16", "0x7e0"),
        # not a number at all
        ("float32", "nan"), ("float32", "inf"), ("float64", "1.5"), ("float32", "0xzz00zz00"),
        ("float32", [1.0]), ("float32", None), ("float32", True), ("float16", 1e6),
        ("float32", 1e39),
        # complex not a pair
        ("complex64", 1.0), ("complex64", "NaN"), ("complex64", [1.0]), ("complex64", [1, 2, 3]),
        ("complex128", {"re": 1, "im": 2}), ("complex64", [1, "x"]),
        # raw bits of the wrong length / range
        ("r16", [1]), ("r16", [1, 2, 3]), ("r16", [256, 0]), ("r16", [-1, 0]), ("r16", [True, 0]),
        ("r16", "0x0102"), ("r8", 5), ("r24", [1.0, 2, 3]),
    ],
)
def test_invalid_fill_values(name: str, bad: Any) -> None:
    expect_error(one_d(name, bad), FillValueError, "fill_value")


@pytest.mark.parametrize(("name", "bad"), [("float64", 10**400), ("complex128", [10**400, 0])],
                         ids=["float64", "complex128"])
def test_float_fill_value_huge_integer(name: str, bad: Any) -> None:
    expect_error(one_d(name, bad), FillValueError, "fill_value")


@given(bits=st.integers(0, 2**16 - 1) | st.sampled_from([0x7C00, 0x7C01, 0x7E00, 0xFFFF]),
       name=st.just("float16"))
@settings(max_examples=200, deadline=None)
def test_float16_any_bit_pattern_round_trips(bits: int, name: str) -> None:
    _check_bits_round_trip(name, bits)


@given(
    data=st.one_of(
        st.tuples(st.just("float32"), st.integers(0, 2**32 - 1)),
        st.tuples(st.just("float64"), st.integers(0, 2**64 - 1)),
        st.tuples(st.just("float32"), st.integers(0x7F800001, 0x7FFFFFFF)),  # NaN payloads
        st.tuples(st.just("float64"), st.integers(0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF)),
    )
)
@settings(max_examples=300, deadline=None)
def test_float_any_bit_pattern_round_trips(data: tuple[str, int]) -> None:
    _check_bits_round_trip(*data)


def _check_bits_round_trip(name: str, bits: int) -> None:
    nhex = {"float16": 4, "float32": 8, "float64": 16}[name]
    hexval = "0x" + format(bits, f"0{nhex}x")
    md = parse(one_d(name, hexval))
    assert bits_of(md.fill_value) == bits
    enc = md.data_type.fill_value_to_json(md.fill_value)
    json.dumps(enc, allow_nan=False)  # always valid JSON
    md2 = parse(one_d(name, enc))
    assert bits_of(md2.fill_value) == bits, (hexval, enc)


# ---------------------------------------------------------------------------
# Malformed documents
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"{", b"", b"\xff\xfe", b'{"zarr_format": 3,}', b"nul"])
def test_malformed_json(raw: bytes) -> None:
    with pytest.raises(MetadataError) as info:
        parse_metadata(raw, path="a/b", key="a/b/zarr.json")
    assert "a/b/zarr.json" in str(info.value)
    assert "JSON" in str(info.value)


def test_deeply_nested_json_is_a_metadata_error() -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(MetadataError):
        parse_metadata(raw, path="a/b", key="a/b/zarr.json")


@pytest.mark.parametrize("doc", [[], "array", 3, None])
def test_document_not_an_object(doc: Any) -> None:
    with pytest.raises(MetadataValidationError) as info:
        parse(doc)
    assert "a/b/zarr.json" in str(info.value)


@pytest.mark.parametrize("node_type", [None, "Array", "dataset", 1, ...])
def test_bad_node_type(node_type: Any) -> None:
    expect_error(array_doc(node_type=node_type), MetadataValidationError, "node_type")


@pytest.mark.parametrize("zarr_format", [2, "3", None, ...])
def test_bad_zarr_format(zarr_format: Any) -> None:
    expect_error(array_doc(zarr_format=zarr_format), MetadataValidationError, "zarr_format")
    doc = {"zarr_format": zarr_format, "node_type": "group"}
    if zarr_format is ...:
        del doc["zarr_format"]
    expect_error(doc, MetadataValidationError, "zarr_format")


@pytest.mark.parametrize(
    "member", ["shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"]
)
def test_missing_required_member(member: str) -> None:
    expect_error(array_doc(**{member: ...}), MetadataValidationError, repr(member), "missing")


@pytest.mark.parametrize(
    "shape",
    ["10", 10, None, {"0": 1}, [True, 2], [1, False], [1.0, 2], [1, "2"], [[1], 2], [1, None]],
)
def test_mistyped_shape(shape: Any) -> None:
    expect_error(array_doc(shape=shape), MetadataValidationError, "shape")


def test_negative_shape() -> None:
    expect_error(array_doc(shape=[10, -1]), MetadataValidationError, "shape", "negative")


@pytest.mark.parametrize("shape", [[2**63, 1], [2**62, 4], [2**32, 2**32], [2**64, 1]])
def test_shape_too_many_elements(shape: list) -> None:
    expect_error(array_doc(shape=shape), MetadataValidationError, "shape", "2**63-1")


def test_largest_element_count_is_accepted() -> None:
    md = parse(array_doc(shape=[2**63 - 1, 1], data_type="uint8", fill_value=0,
                         codecs=[{"name": "bytes"}]))
    assert md.shape == (2**63 - 1, 1)


@pytest.mark.parametrize("chunk_shape", [[4], [4, 3, 1], []])
def test_chunk_rank_mismatch(chunk_shape: list) -> None:
    grid = {"name": "regular", "configuration": {"chunk_shape": chunk_shape}}
    expect_error(array_doc(chunk_grid=grid), MetadataValidationError, "chunk_shape", "rank")


@pytest.mark.parametrize("chunk_shape", [[0, 3], [4, -1], [4, True], [4, 1.5], "4,3", None])
def test_bad_chunk_sizes(chunk_shape: Any) -> None:
    grid = {"name": "regular", "configuration": {"chunk_shape": chunk_shape}}
    expect_error(array_doc(chunk_grid=grid), MetadataValidationError, "chunk_grid", "chunk_shape")


@pytest.mark.parametrize(
    "grid",
    [
        {"name": "rectilinear", "configuration": {"chunk_shape": [4, 3]}},
        {"name": "regular"},
        {"name": "regular", "configuration": {}},
        {"name": "regular", "configuration": {"chunk_shape": [4, 3], "x": 1}},
        {"name": "regular", "configuration": {"chunk_shape": [4, 3]}, "x": 1},
        "regular",
        [4, 3],
    ],
)
def test_bad_chunk_grid(grid: Any) -> None:
    expect_error(array_doc(chunk_grid=grid), MetadataValidationError, "chunk_grid")


def test_chunk_too_large_in_bytes() -> None:
    grid = {"name": "regular", "configuration": {"chunk_shape": [2**61, 8]}}
    expect_error(array_doc(chunk_grid=grid, data_type="float64"), MetadataValidationError,
                 "chunk_shape")


# ---------------------------------------------------------------------------
# Codecs
# ---------------------------------------------------------------------------


def test_unknown_codec() -> None:
    err = expect_error(array_doc(codecs=[LE, {"name": "lzma9000"}]), UnknownCodecError,
                       "codecs[1]", "'lzma9000'")
    assert isinstance(err, MetadataError)
    expect_error(array_doc(codecs=[LE, {"name": "lzma9000", "must_understand": True}]),
                 UnknownCodecError, "lzma9000")


def test_unknown_codec_with_must_understand_false_is_skipped() -> None:
    md = parse(array_doc(codecs=[LE, {"name": "lzma9000", "must_understand": False,
                                      "configuration": {"x": 1}}]))
    assert len(md.codecs) == 1
    assert isinstance(md.codecs[0], BytesCodec)
    # skipping it must not let an invalid chain through
    expect_error(array_doc(codecs=[{"name": "lzma9000", "must_understand": False}]),
                 MetadataValidationError, "codecs")


def test_known_codec_may_carry_must_understand() -> None:
    md = parse(array_doc(codecs=[{**LE, "must_understand": True}, {"name": "crc32c"}]))
    assert [type(c) for c in md.codecs] == [BytesCodec, Crc32cCodec]


@pytest.mark.parametrize(
    ("codecs", "fragments"),
    [
        # bytes -> bytes before the array -> bytes codec
        ([{"name": "gzip", "configuration": {"level": 1}}, LE], ("codecs[0]", "'gzip'")),
        ([{"name": "crc32c"}, LE], ("codecs[0]", "crc32c")),
        # two array -> bytes codecs
        ([LE, LE], ("codecs[1]", "only one")),
        # array -> array after array -> bytes
        ([LE, {"name": "transpose", "configuration": {"order": [1, 0]}}],
         ("codecs[1]", "transpose")),
        # none at all / no array -> bytes
        ([], ("codecs", "empty")),
        ([{"name": "transpose", "configuration": {"order": [1, 0]}}], ("codecs", "array -> bytes")),
    ],
)
def test_codec_chain_order(codecs: list, fragments: tuple[str, ...]) -> None:
    expect_error(array_doc(codecs=codecs), MetadataValidationError, *fragments)


@pytest.mark.parametrize("codecs", ["bytes", {"name": "bytes"}, None, [1], [None], [["bytes"]],
                                    [{"configuration": {}}], [{"name": 5}]])
def test_mistyped_codecs(codecs: Any) -> None:
    expect_error(array_doc(codecs=codecs), MetadataValidationError, "codecs")


def test_codec_short_name_form() -> None:
    md = parse(array_doc(data_type="uint8", fill_value=0, codecs=["bytes", "crc32c"]))
    assert [type(c) for c in md.codecs] == [BytesCodec, Crc32cCodec]


@pytest.mark.parametrize(
    ("codec", "fragments"),
    [
        ({"name": "gzip", "configuration": {"level": 10}}, ("level", "10")),
        ({"name": "gzip", "configuration": {"level": -1}}, ("level",)),
        ({"name": "gzip", "configuration": {"level": "5"}}, ("level",)),
        ({"name": "gzip", "configuration": {"level": True}}, ("level",)),
        ({"name": "gzip", "configuration": {}}, ("level",)),
        ({"name": "gzip", "configuration": {"level": 1, "x": 2}}, ("'x'",)),
        ({"name": "gzip", "configuration": {"level": 1}, "extra": 2}, ("extra",)),
        ({"name": "gzip", "configuration": [1]}, ("configuration",)),
        ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "bad",
                                             "typesize": 4}}, ("shuffle", "'bad'")),
        ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1,
                                             "typesize": 4}}, ("shuffle",)),
        ({"name": "blosc", "configuration": {"cname": "lzma", "clevel": 5,
                                             "shuffle": "noshuffle"}}, ("cname",)),
        ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 10,
                                             "shuffle": "noshuffle"}}, ("clevel",)),
        ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                             "shuffle": "shuffle"}}, ("typesize",)),
        ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}}, ("shuffle",)),
        ({"name": "zstd", "configuration": {"level": 23}}, ("level",)),
        ({"name": "zstd", "configuration": {"level": 1, "checksum": "yes"}}, ("checksum",)),
        ({"name": "crc32c", "configuration": {"x": 1}}, ("'x'",)),
    ],
)
def test_bad_bytes_codec_configs(codec: dict, fragments: tuple[str, ...]) -> None:
    expect_error(array_doc(codecs=[LE, codec]), MetadataValidationError, "codecs[1]", *fragments)


@pytest.mark.parametrize(
    ("order", "fragment"),
    [([0, 0], "permutation"), ([1, 2], "permutation"), ([0], "dimensions"),
     ([0, 1, 2], "dimensions"), ([0, -1], "permutation"), ("X", "order"), ([0, True], "order"),
     ([0.0, 1.0], "order"), (None, "order")],
)
def test_bad_transpose(order: Any, fragment: str) -> None:
    codecs = [{"name": "transpose", "configuration": {"order": order}}, LE]
    expect_error(array_doc(codecs=codecs), MetadataValidationError, "codecs[0]", fragment)


def test_transpose_missing_order() -> None:
    expect_error(array_doc(codecs=[{"name": "transpose", "configuration": {}}, LE]),
                 MetadataValidationError, "codecs[0]", "order")


def test_transpose_chain_shapes_are_validated() -> None:
    # two transposes compose; each checks the rank of what it receives
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}},
              {"name": "transpose", "configuration": {"order": [1, 0]}}, LE]
    md = parse(array_doc(codecs=codecs))
    assert [c.order for c in md.codecs[:2]] == [(1, 0), (1, 0)]


@pytest.mark.parametrize(
    ("bytes_codec", "data_type", "fragment"),
    [({"name": "bytes", "configuration": {"endian": "middle"}}, "float32", "endian"),
     ({"name": "bytes"}, "float32", "endian"),
     ({"name": "bytes", "configuration": {}}, "int16", "endian"),
     ({"name": "bytes", "configuration": {"endian": "little", "x": 1}}, "float32", "'x'")],
)
def test_bad_bytes_codec(bytes_codec: dict, data_type: str, fragment: str) -> None:
    fill = 0.0 if data_type.startswith("f") else 0
    expect_error(array_doc(codecs=[bytes_codec], data_type=data_type, fill_value=fill),
                 MetadataValidationError, "codecs[0]", fragment)


@pytest.mark.parametrize("data_type", ["uint8", "int8", "bool", "r8", "r24"])
def test_bytes_codec_endian_optional_for_single_byte_types(data_type: str) -> None:
    fill = {"bool": False, "r8": [0], "r24": [0, 0, 0]}.get(data_type, 0)
    md = parse(array_doc(codecs=[{"name": "bytes"}], data_type=data_type, fill_value=fill))
    assert md.codecs[0].endian is None


# ---------------------------------------------------------------------------
# Extension members, storage transformers, dimension names, attributes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [{"name": "x"}, {"must_understand": True}, 1, "x", [1], None,
                                   {"must_understand": "false"}])
def test_unknown_extension_member_is_an_error(value: Any) -> None:
    expect_error(array_doc(my_extension=value), MetadataValidationError, "'my_extension'")


def test_extension_member_with_must_understand_false_is_kept() -> None:
    ext = {"must_understand": False, "name": "my_extension", "configuration": {"k": [1, 2]}}
    doc = array_doc(my_extension=ext)
    md = parse(doc)
    assert md.extra == {"my_extension": ext}
    assert md.to_dict() == doc
    assert json.loads(md.to_json())["my_extension"] == ext


def test_storage_transformers_empty_round_trips() -> None:
    doc = array_doc(storage_transformers=[])
    md = parse(doc)
    assert md.storage_transformers == ()
    assert md.to_dict()["storage_transformers"] == []
    assert md.to_dict() == doc


@pytest.mark.parametrize("st_value", [[{"name": "sharding_index"}], ["x"],
                                      [{"name": "x", "must_understand": True}], [1]])
def test_unknown_storage_transformer(st_value: list) -> None:
    expect_error(array_doc(storage_transformers=st_value), MetadataValidationError,
                 "storage_transformers[0]")


@pytest.mark.parametrize("st_value", [{}, "x", 1])
def test_storage_transformers_not_a_list(st_value: Any) -> None:
    expect_error(array_doc(storage_transformers=st_value), MetadataValidationError,
                 "storage_transformers")


def test_storage_transformer_must_understand_false_is_accepted() -> None:
    t = {"name": "cache", "must_understand": False}
    md = parse(array_doc(storage_transformers=[t]))
    assert md.to_dict()["storage_transformers"] == [t]


@pytest.mark.parametrize("names", [["x", None], [None, None], ["", "y"]])
def test_dimension_names_valid(names: list) -> None:
    doc = array_doc(dimension_names=names)
    md = parse(doc)
    assert md.dimension_names == tuple(names)
    assert md.to_dict() == doc


@pytest.mark.parametrize("names", [["x"], ["x", "y", "z"], [], ["x", 1], "xy", {"x": 0},
                                   ["x", ["y"]], [True, "y"]])
def test_dimension_names_invalid(names: Any) -> None:
    expect_error(array_doc(dimension_names=names), MetadataValidationError, "dimension_names")


@pytest.mark.parametrize("attrs", [[], "x", 1, True])
def test_attributes_not_an_object(attrs: Any) -> None:
    expect_error(array_doc(attributes=attrs), MetadataValidationError, "attributes")


# ---------------------------------------------------------------------------
# Chunk key encodings
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cke", "cls", "separator", "key_12", "key_0d"),
    [
        ({"name": "default", "configuration": {"separator": "/"}}, DefaultChunkKeyEncoding, "/",
         "c/1/2", "c"),
        ({"name": "default", "configuration": {"separator": "."}}, DefaultChunkKeyEncoding, ".",
         "c.1.2", "c"),
        ({"name": "default"}, DefaultChunkKeyEncoding, "/", "c/1/2", "c"),
        ({"name": "v2", "configuration": {"separator": "."}}, V2ChunkKeyEncoding, ".", "1.2", "0"),
        ({"name": "v2", "configuration": {"separator": "/"}}, V2ChunkKeyEncoding, "/", "1/2", "0"),
        ({"name": "v2"}, V2ChunkKeyEncoding, ".", "1.2", "0"),
    ],
)
def test_chunk_key_encodings(cke: dict, cls: type, separator: str, key_12: str, key_0d: str
                             ) -> None:
    md = parse(array_doc(chunk_key_encoding=cke))
    enc = md.chunk_key_encoding
    assert type(enc) is cls
    assert enc.separator == separator
    assert enc.encode((1, 2)) == key_12
    assert enc.encode(()) == key_0d
    # written back exactly as given (tensorstore omits the default configuration)
    assert md.to_dict()["chunk_key_encoding"] == cke


@pytest.mark.parametrize(
    "cke",
    [
        {"name": "default", "configuration": {"separator": "-"}},
        {"name": "default", "configuration": {"separator": ""}},
        {"name": "v2", "configuration": {"separator": 1}},
        {"name": "default", "configuration": {"separator": "/", "x": 1}},
        {"name": "default", "configuration": "/"},
        {"name": "default", "x": 1},
        {"name": "v3"},
        {"name": None},
        {},
        5,
    ],
)
def test_bad_chunk_key_encoding(cke: Any) -> None:
    expect_error(array_doc(chunk_key_encoding=cke), MetadataValidationError, "chunk_key_encoding")


@pytest.mark.parametrize("name", [[], {"a": 1}])
def test_chunk_key_encoding_unhashable_name(name: Any) -> None:
    expect_error(array_doc(chunk_key_encoding={"name": name}), MetadataValidationError,
                 "chunk_key_encoding")


# ---------------------------------------------------------------------------
# Non-standard JSON numbers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("token", "expected"),
                         [(b"NaN", math.nan), (b"Infinity", math.inf), (b"-Infinity", -math.inf),
                          (b"1e999", math.inf)])
def test_non_json_float_tokens_round_trip(token: bytes, expected: float) -> None:
    """zarr-python reads and writes the NaN/Infinity tokens (e.g. xarray's _FillValue in
    attributes); they are accepted and written back the same way."""
    doc = array_doc(data_type="float64", fill_value="__FILL__", attributes={"x": "__ATTR__"})
    raw = (json.dumps(doc).encode().replace(b'"__FILL__"', token)
           .replace(b'"__ATTR__"', token))
    md = parse_metadata(raw, path=PATH, key=KEY)
    out = md.to_json()
    again = parse_metadata(out, path=PATH, key=KEY)
    for m in (md, again):
        if math.isnan(expected):
            assert np.isnan(m.fill_value) and math.isnan(m.attributes["x"])
        else:
            assert m.fill_value == expected and m.attributes["x"] == expected


# ---------------------------------------------------------------------------
# Fuzzing: any mutation of a valid document parses or raises ZarrfastError
# ---------------------------------------------------------------------------

FUZZ_SEEDS = [
    FULL_DOCS[1],
    array_doc(data_type="r16", fill_value=[1, 2], codecs=[{"name": "bytes"}],
              chunk_key_encoding={"name": "default"}),
    array_doc(data_type="float16", fill_value="0x7e01",
              codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}}, LE,
                      {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1,
                                                          "shuffle": "bitshuffle",
                                                          "typesize": 2}}],
              dimension_names=["x", None], extra={"must_understand": False}),
    array_doc(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}},
              data_type="bool", fill_value=False, codecs=["bytes", "crc32c"]),
    {"zarr_format": 3, "node_type": "group", "attributes": {"x": [1, 2]}},
]

_SPECIAL_STRINGS = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "0x7fc00000", "0x7e00", "0x7ff8000000000000", "bytes",
     "gzip", "blosc", "transpose", "regular", "default", "v2", "/", ".", "little", "big",
     "float32", "r8", "r16", "shuffle", "lz4", "array", "group", "C", "F"]
)
# Integers stay below 2**1000 here: larger ones hit the known OverflowError bug pinned by
# test_float_fill_value_huge_integer; widen once it is fixed.
_JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.integers(-(2**1000), 2**1000)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6) | _SPECIAL_STRINGS
)
_KEYS = st.sampled_from(["name", "configuration", "must_understand", "order", "level", "endian",
                         "separator", "chunk_shape", "typesize", "shuffle"]) | st.text(max_size=4)
JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=8,
)


def _all_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return out
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_all_paths(v, (*prefix, k)))
    return out


@given(seed=st.sampled_from(FUZZ_SEEDS), data=st.data())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_mutated_documents(seed: dict, data: st.DataObject) -> None:
    doc = copy.deepcopy(seed)
    for _ in range(data.draw(st.integers(1, 3), label="n_mutations")):
        paths = _all_paths(doc)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if data.draw(st.booleans(), label="delete"):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(JSON_VALUES, label="value")
    if data.draw(st.booleans(), label="add member"):
        doc[data.draw(st.text(max_size=4), label="new key")] = data.draw(JSON_VALUES)
    raw = json.dumps(doc).encode()
    try:
        md = parse_metadata(raw, path="x/y", key="x/y/zarr.json")
    except ZarrfastError as e:
        assert str(e)  # errors carry a message
        return
    # a document that parses writes back as valid JSON, and re-parses to the same thing
    out = md.to_dict()
    again = parse_metadata(json.dumps(out).encode(), path="x/y", key="x/y/zarr.json")
    assert again.to_dict() == out


@given(
    shape=st.lists(st.integers(0, 50), max_size=4),
    data_type=st.sampled_from(sorted(DATA_TYPES)),
    data=st.data(),
)
@settings(max_examples=150, deadline=None)
def test_generated_valid_documents_round_trip(shape: list, data_type: str,
                                              data: st.DataObject) -> None:
    chunks = [data.draw(st.integers(1, 20)) for _ in shape]
    dt = parse_data_type(data_type).dtype
    kind = dt.kind
    if kind == "b":
        fill = data.draw(st.booleans())
    elif kind in "iu":
        info = np.iinfo(dt)
        fill = data.draw(st.integers(int(info.min), int(info.max)))
    elif kind == "f":
        width = dt.itemsize * 8
        fill = data.draw(st.floats(width=width, allow_nan=False, allow_infinity=False)
                         | st.sampled_from(["NaN", "Infinity", "-Infinity"]))
    elif kind == "c":
        comp = st.floats(width=dt.itemsize * 4, allow_nan=False, allow_infinity=False)
        fill = [data.draw(comp), data.draw(comp)]
    else:
        fill = data.draw(st.lists(st.integers(0, 255), min_size=dt.itemsize,
                                  max_size=dt.itemsize))
    codecs: list = []
    if len(shape) > 1 and data.draw(st.booleans()):
        codecs.append({"name": "transpose",
                       "configuration": {"order": data.draw(st.permutations(range(len(shape))))}})
    if dt.itemsize > 1 and kind != "V":
        codecs.append({"name": "bytes",
                       "configuration": {"endian": data.draw(st.sampled_from(["little", "big"]))}})
    else:
        codecs.append({"name": "bytes"})
    if data.draw(st.booleans()):
        codecs.append({"name": "gzip", "configuration": {"level": data.draw(st.integers(0, 9))}})
    if data.draw(st.booleans()):
        codecs.append({"name": "crc32c"})
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": data.draw(st.sampled_from(["default", "v2"])),
                               "configuration": {"separator": data.draw(st.sampled_from("/."))}},
        "fill_value": fill,
        "codecs": codecs,
        "attributes": data.draw(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    }
    md = parse(doc)
    assert md.to_dict() == doc
    assert md.shape == tuple(shape)
    assert md.chunks == tuple(chunks)
    if kind == "f" and not isinstance(fill, str):
        # numbers in the document are exactly representable in the type here
        assert struct.pack("<d", float(md.fill_value)) == struct.pack("<d", float(fill))
