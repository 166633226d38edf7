"""Zarr v3 metadata (``zarr.json``): validation.  Every invalid document must raise a
:class:`zarrfast.errors.ZarrfastError` subclass whose message names the node path and
the offending member: malformed documents, codecs, extension members, storage
transformers, dimension names, attributes, chunk key encodings; and non-standard JSON
numbers.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from zarrfast.codecs import BytesCodec, Crc32cCodec
from zarrfast.errors import MetadataError, MetadataValidationError, UnknownCodecError
from zarrfast.metadata.chunk_grid import DefaultChunkKeyEncoding, V2ChunkKeyEncoding
from zarrfast.metadata.v3 import parse_metadata

from _helpers import LE
from _helpers.metadata import KEY, PATH, array_doc, codecs_of, expect_error, parse

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


@pytest.mark.parametrize("shape", [[2**63, 1], [2**64, 1], [1, 2**63]])
def test_shape_beyond_int64(shape: list) -> None:
    expect_error(array_doc(shape=shape), MetadataValidationError, "shape", "2**63-1")


@pytest.mark.parametrize(("shape", "chunk_shape"), [([2**62, 2**62], [1, 1]),
                                                    ([2**40, 2**40], [2, 4])])
def test_shape_with_a_grid_of_more_than_int64_chunks(shape: list, chunk_shape: list) -> None:
    grid = {"name": "regular", "configuration": {"chunk_shape": chunk_shape}}
    expect_error(array_doc(shape=shape, chunk_grid=grid), MetadataValidationError, "shape",
                 "chunks", "2**63-1")


@pytest.mark.parametrize("shape", [[2**62, 4], [2**32, 2**32], [2**33, 2**33]])
def test_more_elements_than_int64_are_accepted(shape: list) -> None:
    # (issue 41: zarr-python and tensorstore open such arrays lazily; only the number of
    # chunks must fit in int64)
    assert parse(array_doc(shape=shape)).shape == tuple(shape)


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
    assert len(codecs_of(md)) == 1
    assert isinstance(codecs_of(md)[0], BytesCodec)
    # skipping it must not let an invalid chain through
    expect_error(array_doc(codecs=[{"name": "lzma9000", "must_understand": False}]),
                 MetadataValidationError, "codecs")


def test_known_codec_may_carry_must_understand() -> None:
    md = parse(array_doc(codecs=[{**LE, "must_understand": True}, {"name": "crc32c"}]))
    assert [type(c) for c in codecs_of(md)] == [BytesCodec, Crc32cCodec]


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
    assert [type(c) for c in codecs_of(md)] == [BytesCodec, Crc32cCodec]


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
    assert [c.order for c in codecs_of(md)[:2]] == [(1, 0), (1, 0)]


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
    assert codecs_of(md)[0].endian is None


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
    assert md.extra_fields == {"my_extension": ext}
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
