"""Pre-final Zarr v3 metadata documents: broken drafts raise zarrfast errors that name
the offending key (final members in draft documents, mixed layouts, unknown codecs,
``must_understand`` extensions, malformed JSON, bad encodings); and the conversion
details (data types, fill values, transpose and memory layout).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import BytesCodec, CodecChain, TransposeCodec
from zarrfast.errors import (
    ContainsArrayAndGroupError,
    FillValueError,
    MetadataError,
    MetadataValidationError,
    UnknownCodecError,
    UnsupportedDataTypeError,
    ZarrfastError,
)
from zarrfast.hierarchy.draft import detect_draft, open_draft
from zarrfast.metadata.draft import DRAFT_2022, ZARRITA, convert_array_document

from _helpers.drafts import (
    FIXTURES,
    LAYOUTS,
    WARNINGS,
    assert_same_bits,
    fixture_dict,
    get_doc,
    put_doc,
    v2_reference,
)

zarr = pytest.importorskip("zarr")

pytestmark = WARNINGS


# ---------------------------------------------------------------------------
# broken drafts
# ---------------------------------------------------------------------------

Z_ARRAY = "meta/root/f8_gzip.array.json"
D_ARRAY = "meta/f8_gzip.array.json"


def _open_broken(d: dict[str, bytes], path: str = "f8_gzip"):
    return open_draft(zarrfast.MemoryStore(d), path)


@pytest.mark.parametrize("name,key", [("zarrita", Z_ARRAY), ("draft2022", D_ARRAY)])
@pytest.mark.parametrize("member,value", [
    ("zarr_format", 3),
    ("node_type", "array"),
    ("chunk_key_encoding", {"name": "default"}),
    ("dimension_names", ["x", "y"]),
])
def test_array_document_with_final_members(name, key, member, value):
    d = fixture_dict(name)
    doc = get_doc(d, key)
    doc[member] = value
    put_doc(d, key, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*mixes layouts.*"
                       + member):
        _open_broken(d)
    # the rest of the hierarchy still opens, and listing does not read the document
    g = open_draft(zarrfast.MemoryStore(d))
    assert "f8_gzip" in list(g)
    with pytest.raises(MetadataValidationError, match=re.escape(key)):
        g["f8_gzip"]


def test_final_v3_array_document_in_draft_layout():
    d = fixture_dict("draft2022")
    final = zarrfast.create_array(zarrfast.MemoryStore(), shape=(7, 11), chunks=(3, 4),
                                  dtype="f8").metadata.to_dict()
    put_doc(d, D_ARRAY, final)
    with pytest.raises(MetadataValidationError, match=re.escape(D_ARRAY) + ".*mixes layouts"):
        _open_broken(d)


def test_layout_specific_members_do_not_mix():
    d = fixture_dict("draft2022")
    doc = get_doc(d, D_ARRAY)
    doc["compressor"] = {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0",
                         "configuration": {"level": 1}}
    put_doc(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY) + ".*mixes layouts.*compressor.*zarrita"):
        _open_broken(d)
    d = fixture_dict("zarrita")
    doc = get_doc(d, Z_ARRAY)
    doc["codecs"] = []
    put_doc(d, Z_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(Z_ARRAY) + ".*mixes layouts"):
        _open_broken(d)
    # final-style codec objects and chunk grids
    d = fixture_dict("draft2022")
    doc = get_doc(d, D_ARRAY)
    doc["codecs"] = [{"name": "gzip", "configuration": {"level": 1}}]
    put_doc(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY + ": codecs[0]") + ".*mixes layouts"):
        _open_broken(d)
    d = fixture_dict("draft2022")
    doc = get_doc(d, D_ARRAY)
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [3, 4]}}
    put_doc(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(D_ARRAY) + ".*mixes layouts"):
        _open_broken(d)
    d = fixture_dict("zarrita")
    doc = get_doc(d, Z_ARRAY)
    doc["compressor"] = {"id": "gzip", "level": 1}
    put_doc(d, Z_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(Z_ARRAY) + ".*mixes layouts"):
        _open_broken(d)


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_group_document_with_final_members(name):
    d = fixture_dict(name)
    key = "meta/root/grp.group.json" if name == "zarrita" else "meta/grp.group.json"
    doc = get_doc(d, key)
    doc.update({"zarr_format": 3, "node_type": "group"})
    put_doc(d, key, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*mixes layouts"):
        open_draft(zarrfast.MemoryStore(d), "grp")
    d = fixture_dict(name)
    put_doc(d, key, {"attributes": {}, "extensions": []})
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*unknown"):
        open_draft(zarrfast.MemoryStore(d), "grp")


@pytest.mark.parametrize("member", ["node_type", "shape", "codecs", "attributes"])
def test_entry_point_with_final_members(member):
    d = fixture_dict("draft2022")
    doc = get_doc(d, "zarr.json")
    doc[member] = {"node_type": "group", "shape": [1], "codecs": [], "attributes": {}}[member]
    put_doc(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json.*mixes layouts.*" + member):
        detect_draft(d)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json"):
        open_draft(d)


@pytest.mark.parametrize("name,key,uri", [
    ("draft2022", D_ARRAY, "https://purl.org/zarr/spec/codec/lzw/1.0"),
    ("draft2022", D_ARRAY, "https://purl.org/zarr/spec/codec/gzip/2.0"),
    ("draft2022", D_ARRAY, "https://example.org/my-codec"),
    ("draft2022", D_ARRAY, "https://purl.org/zarr/spec/codec/zlib/1.0"),  # zarrita-only
])
def test_unknown_codec_uri_2022(name, key, uri):
    d = fixture_dict(name)
    doc = get_doc(d, key)
    doc["codecs"] = [{"type": uri, "configuration": {}}]
    put_doc(d, key, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(key) + ".*" + re.escape(uri)):
        _open_broken(d)


def test_unknown_compressor_uri_zarrita():
    d = fixture_dict("zarrita")
    doc = get_doc(d, Z_ARRAY)
    uri = "https://purl.org/zarr/spec/codec/snappy/1.0"
    doc["compressor"] = {"codec": uri, "configuration": {}}
    put_doc(d, Z_ARRAY, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(Z_ARRAY) + ".*" + re.escape(uri)):
        _open_broken(d)
    doc["compressor"] = {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0",
                         "configuration": {"level": 42}}
    put_doc(d, Z_ARRAY, doc)
    # the draft's compressor becomes the final chain's bytes -> bytes codec, which the
    # chain checks when the array opens: the error names the array, the codec and the value
    with pytest.raises(MetadataValidationError, match=r"array 'f8_gzip': codecs\[1\]: gzip.*42"):
        _open_broken(d)
    doc["compressor"] = None
    doc["attributes"] = {"filters": [{"id": "delta", "dtype": "<f8"}]}
    put_doc(d, Z_ARRAY, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(Z_ARRAY) + ".*filters"):
        _open_broken(d)


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_must_understand_extension_in_entry_point(name):
    d = fixture_dict(name)
    doc = get_doc(d, "zarr.json")
    ext = "https://example.org/zarr/extension/needed"
    doc["extensions"] = [{"extension": ext, "must_understand": True}]
    put_doc(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError,
                       match=r"zarr\.json.*" + re.escape(ext) + ".*must_understand"):
        open_draft(d)
    # extensions that may be ignored are
    doc["extensions"] = [{"extension": ext, "must_understand": False, "configuration": {}}]
    put_doc(d, "zarr.json", doc)
    assert open_draft(d).draft_layout == LAYOUTS[name]


def test_must_understand_extension_in_array():
    d = fixture_dict("draft2022")
    doc = get_doc(d, D_ARRAY)
    doc["extensions"] = [{"extension": "https://example.org/ext/a", "must_understand": True}]
    put_doc(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY) + ".*https://example.org/ext/a"):
        _open_broken(d)


@pytest.mark.parametrize("key", ["zarr.json", D_ARRAY, "meta/grp.group.json",
                                 "meta/group.json"])
def test_malformed_json(key):
    d = fixture_dict("draft2022")
    d[key] = b'{"shape": [7, 11], '
    with pytest.raises(MetadataError, match=re.escape(key) + ": not valid JSON"):
        g = open_draft(d)
        g[key.removeprefix("meta/").removesuffix(".array.json").removesuffix(".group.json")]


@pytest.mark.parametrize("encoding,match", [
    ({"type": "yaml", "metadata_key_suffix": ".yaml"}, "type must be 'json'"),
    ({"extension": "https://example.org/cbor", "type": "cbor", "metadata_key_suffix": ".cbor"},
     "https://example.org/cbor"),
    ("https://example.org/encoding", "not supported"),
    (None, "metadata_encoding"),
    ({"type": "json", "metadata_key_suffix": "/x"}, "metadata_key_suffix"),
])
def test_bad_metadata_encoding(encoding, match):
    d = fixture_dict("draft2022")
    doc = get_doc(d, "zarr.json")
    if encoding is None:
        del doc["metadata_encoding"]
    else:
        doc["metadata_encoding"] = encoding
    put_doc(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json.*" + re.escape(match)):
        detect_draft(d)


def test_unknown_draft_zarr_format():
    d = fixture_dict("draft2022")
    doc = get_doc(d, "zarr.json")
    doc["zarr_format"] = "https://purl.org/zarr/spec/core/4.0"
    put_doc(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json.*core/4\.0"):
        detect_draft(d)


def test_other_metadata_key_suffix():
    d = {}
    for k, v in fixture_dict("draft2022").items():
        d[k[: -len(".json")] + ".js" if k.startswith("meta/") else k] = v
    doc = json.loads(d["zarr.json"])
    doc["metadata_encoding"]["metadata_key_suffix"] = ".js"
    put_doc(d, "zarr.json", doc)
    g = open_draft(d)
    assert sorted(g) == sorted(open_draft(str(FIXTURES / "draft2022")))
    assert_same_bits(g["f8_gzip"][...], v2_reference("draft2022", "f8_gzip")[...], "suffix .js")
    assert dict(g.attrs)["eggs"] == 42


@pytest.mark.parametrize("mutate,error,match", [
    (lambda doc: doc.update(unknown_member=1), MetadataValidationError, "unknown_member"),
    (lambda doc: doc.update(chunk_memory_layout="X"), MetadataValidationError,
     "chunk_memory_layout"),
    (lambda doc: doc.update(chunk_memory_layout={"extension": "https://e.org/z", "type": "z"}),
     MetadataValidationError, "https://e.org/z"),
    (lambda doc: doc.update(data_type="<q8"), UnsupportedDataTypeError, "<q8"),
    (lambda doc: doc.update(data_type={"extension": "https://e.org/dt", "type": "x"}),
     UnsupportedDataTypeError, "https://e.org/dt"),
    (lambda doc: doc.update(fill_value="banana"), FillValueError, "fill_value"),
    (lambda doc: doc.update(fill_value="0x12"), FillValueError, "16 digits"),
    (lambda doc: doc.update(shape=[7]), MetadataValidationError, "rank"),
    (lambda doc: doc.pop("shape"), MetadataValidationError, "'shape'"),
    (lambda doc: doc.pop("fill_value"), MetadataValidationError, "'fill_value'"),
    (lambda doc: doc["chunk_grid"].update(separator="-"), MetadataValidationError, "separator"),
    (lambda doc: doc["chunk_grid"].update(type="rectilinear"), MetadataValidationError,
     "rectilinear"),
    (lambda doc: doc.update(storage_transformers=[
        {"extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
         "type": "indexed"}]), MetadataValidationError, "sharding"),
    (lambda doc: doc.update(codecs=[{"type": "https://purl.org/zarr/spec/codec/gzip/1.0",
                                     "configuration": {"level": 1}},
                                    {"type": "https://purl.org/zarr/spec/codec/transpose/1.0",
                                     "configuration": {"order": "F"}}]),
     MetadataValidationError, "transpose"),
    (lambda doc: doc.update(codecs=[{"type": "https://purl.org/zarr/spec/codec/endian/1.0",
                                     "configuration": {"endian": "big"}}]),
     MetadataValidationError, "little endian"),
    (lambda doc: doc.update(attributes=[1]), MetadataValidationError, "attributes"),
    (lambda doc: doc.update(codecs={"type": "gzip"}), MetadataValidationError, "list"),
])
def test_invalid_2022_array_documents(mutate, error, match):
    d = fixture_dict("draft2022")
    doc = get_doc(d, D_ARRAY)
    mutate(doc)
    put_doc(d, D_ARRAY, doc)
    with pytest.raises(error, match=re.escape(D_ARRAY) + ".*" + re.escape(match)):
        _open_broken(d)


def test_array_and_group_at_one_path():
    d = fixture_dict("draft2022")
    put_doc(d, "meta/f8_gzip.group.json", {"attributes": {}})
    with pytest.raises(ContainsArrayAndGroupError, match=re.escape("meta/f8_gzip.group.json")):
        _open_broken(d)


def test_errors_are_zarrfast_errors():
    for cls in (MetadataValidationError, UnknownCodecError, UnsupportedDataTypeError,
                FillValueError, MetadataError):
        assert issubclass(cls, ZarrfastError)


# ---------------------------------------------------------------------------
# document conversion details
# ---------------------------------------------------------------------------


def _grid(shape, chunks, sep="/"):
    return {"shape": shape, "chunk_grid": {"type": "regular", "chunk_shape": chunks,
                                           "separator": sep}}


@pytest.mark.parametrize("data_type,name,endian", [
    ("<f8", "float64", "little"),
    (">f8", "float64", "big"),
    ("|u1", "uint8", None),
    ("u1", "uint8", None),
    ("i1", "int8", None),
    ("bool", "bool", None),
    ("|b1", "bool", None),
    ("<f2", "float16", "little"),
    (">c8", "complex64", "big"),
    ("float32", "float32", "little"),
    ("r16", "r16", None),
    ({"extension": "https://zarr-specs.readthedocs.io/en/core-protocol-v3.0-dev/protocol/"
                   "extensions/complex-dtypes/v1.0.html", "type": "<c16", "fallback": None},
     "complex128", "little"),
])
def test_data_types(data_type, name, endian):
    doc = dict(_grid([4], [2]), data_type=data_type, chunk_memory_layout="C", fill_value=None)
    md = convert_array_document(doc, layout=ZARRITA, key="k")
    assert md.type_info.name == name
    assert CodecChain.from_metadata(md).codecs == (BytesCodec(endian),)


def test_data_type_fallback_warns():
    doc = dict(_grid([4], [2]), chunk_memory_layout="C", fill_value=0,
               data_type={"extension": "https://e.org/datetime", "type": "<M8[ns]",
                          "fallback": ["<x9", "<i8"]})
    with pytest.warns(UserWarning, match="fallback"):
        md = convert_array_document(doc, layout=DRAFT_2022, key="meta/t.array.json")
    assert md.type_info.name == "int64"


@pytest.mark.parametrize("data_type,fill,expected", [
    ("<f8", "NaN", np.nan),
    ("<f8", "+Infinity", np.inf),
    ("<f8", "-Infinity", -np.inf),
    ("<f4", "0x3f800000", 1.0),
    ("<f4", "0b00111111100000000000000000000000", 1.0),
    ("<i2", "0xfffe", -2),
    ("<u2", "0b0000000100000000", 256),
    ("<i4", None, 0),
    ("bool", None, False),
    ("<c16", [1.0, "NaN"], complex(1, np.nan)),
    ("<f8", 2, 2.0),
])
def test_fill_values(data_type, fill, expected):
    doc = dict(_grid([4], [2]), data_type=data_type, chunk_memory_layout="C", fill_value=fill)
    md = convert_array_document(doc, layout=DRAFT_2022, key="k")
    assert_same_bits(np.asarray(md.fill_value), np.asarray(expected, md.dtype), str(fill))


def test_transpose_and_layout_composition():
    def chain(layout, codecs, ndim=3):
        doc = dict(_grid([2] * ndim, [1] * ndim), data_type="<i4", chunk_memory_layout=layout,
                   fill_value=0, codecs=codecs)
        return CodecChain.from_metadata(
            convert_array_document(doc, layout=DRAFT_2022, key="k")).codecs

    t = "https://purl.org/zarr/spec/codec/transpose/1.0"
    assert chain("C", []) == (BytesCodec("little"),)
    assert chain("F", []) == (TransposeCodec((2, 1, 0)), BytesCodec("little"))
    # F layout then "F" transpose is the identity: no transpose codec at all
    assert chain("F", [{"type": t, "configuration": {"order": "F"}}]) == (BytesCodec("little"),)
    assert chain("C", [{"type": t, "configuration": {"order": [1, 2, 0]}},
                       {"type": t, "configuration": {"order": [1, 2, 0]}}]) == (
        TransposeCodec((2, 0, 1)), BytesCodec("little"))
    assert chain("F", [], ndim=1) == (BytesCodec("little"),)
    with pytest.raises(MetadataValidationError, match="k: codecs.0."):
        chain("C", [{"type": t, "configuration": {"order": [0, 1]}}])
    # the composition matches applying the transposes one after the other
    x = np.arange(24).reshape(2, 3, 4)
    perm = chain("F", [{"type": t, "configuration": {"order": [2, 0, 1]}}])[0].order
    assert np.array_equal(np.transpose(x, perm), np.transpose(np.transpose(x), [2, 0, 1]))
