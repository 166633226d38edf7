"""Zarr v3 metadata (``zarr.json``): round trips, data types, fill values.

Spec: zarr-specs ``docs/v3/core/index.rst`` ("Metadata") and
``docs/v3/data-types/index.rst``.  Invalid documents: ``test_metadata_validation.py``;
fuzzing: ``tests/reliability/test_fuzz_metadata_v3.py``.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarrfast.errors import FillValueError, MetadataValidationError, UnsupportedDataTypeError
from zarrfast.metadata import data_type_from_numpy, parse_data_type
from zarrfast.metadata.chunk_grid import V2ChunkKeyEncoding
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

from _helpers.metadata import (
    DATA_TYPES,
    FULL_DOCS,
    KEY,
    PATH,
    array_doc,
    bits_of,
    codecs_of,
    expect_error,
    one_d,
    parse,
)

# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


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
    assert [type(c) for c in codecs_of(md)] == [
        TransposeCodec, BytesCodec, BloscCodec, GzipCodec, ZstdCodec, Crc32cCodec
    ]
    assert codecs_of(md)[0].order == (2, 0, 1)
    assert codecs_of(md)[1].endian == "big"
    assert codecs_of(md)[3].level == 9
    assert codecs_of(md)[4].checksum is True
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
    assert md.type_info.name == name
    assert md.dtype == np.dtype(DATA_TYPES[name])
    assert md.to_dict() == doc
    # the fill value re-encoded from the parsed scalar equals the document's
    assert md.type_info.fill_value_to_json(md.fill_value) == fill


@pytest.mark.parametrize(
    ("numpy_dtype", "name"),
    [("<f4", "float32"), (">f4", "float32"), (">i8", "int64"), ("<u2", "uint16"), ("?", "bool"),
     ("c8", "complex64"), (">c16", "complex128"), ("V3", "raw_bytes"), ("V1", "raw_bytes"),
     ("f2", "float16")],
)
def test_data_type_from_numpy(numpy_dtype: str, name: str) -> None:
    dt = data_type_from_numpy(np.dtype(numpy_dtype))
    assert dt.name == name
    assert dt.dtype.isnative or dt.dtype.byteorder == "|"


@pytest.mark.parametrize("bad", ["U0", "S0", "(2,)i4", [("a", "i4"), ("b", "(2,)f8")],
                                 [("a", "i4"), ("b", "O")]])
def test_data_type_from_numpy_rejects(bad: Any) -> None:
    with pytest.raises(UnsupportedDataTypeError):
        data_type_from_numpy(bad)


@pytest.mark.parametrize(
    "bad",
    ["float128", "int3", "strings", "r7", "r0", "r", "R8", "Float32", "<f4", "", 5, None, ["int8"],
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
    encoded = md.type_info.fill_value_to_json(md.fill_value)
    assert encoded == ("NaN" if canonical else hexval)
    rebuilt = replace(md, fill_value_json=None)
    assert rebuilt.fill_value_json == encoded
    # and the re-encoded form parses back to the same bits
    md2 = parse(one_d(name, encoded))
    assert bits_of(md2.fill_value) == int(hexval, 16)


@pytest.mark.parametrize(
    ("name", "hexval", "expected"),
    [("float32", "0x3f800000", 1.0), ("float64", "0xc000000000000000", -2.0),
     ("float16", "0x3c00", 1.0), ("float16", "0x7c00", math.inf),
     ("float32", "0xff800000", -math.inf),
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
    enc = md.type_info.fill_value_to_json(md.fill_value)
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
    assert md.type_info.fill_value_to_json(md.fill_value) == ["0x7fc00001", "NaN"]


@pytest.mark.parametrize(
    ("name", "json_value"),
    [("r8", [255]), ("r8", [0]), ("r16", [1, 2]), ("r24", [1, 2, 3]),
     ("r64", [0, 1, 2, 3, 4, 5, 6, 255])],
)
def test_raw_fill_values(name: str, json_value: list) -> None:
    doc = one_d(name, json_value)
    md = parse(doc)
    assert md.fill_value.tobytes() == bytes(json_value)
    assert md.type_info.fill_value_to_json(md.fill_value) == json_value
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
    assert type(md.type_info.fill_value_to_json(md.fill_value)) is type(json_value)
    assert md.type_info.fill_value_to_json(md.fill_value) == json_value
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
    enc = md.type_info.fill_value_to_json(md.fill_value)
    json.dumps(enc, allow_nan=False)  # always valid JSON
    md2 = parse(one_d(name, enc))
    assert bits_of(md2.fill_value) == bits, (hexval, enc)
