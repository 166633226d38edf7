"""Pre-final Zarr v3 layouts (2022 editor's draft, zarrita / zarr-python 2.x experimental v3).

Fixtures in ``tests/fixtures/drafts/`` (regenerate with
``tests/fixtures/make_draft_fixtures.py``; ``MANIFEST.json`` says what wrote
each):

* ``zarrita`` / ``zarrita_v2``: written by zarr-python 2.18.2 with
  ``ZARR_V3_EXPERIMENTAL_API=1`` (``meta/root`` layout) and, with the same
  calls, as Zarr v2;
* ``draft2022`` / ``draft2022_root``: encoded per the May 2022 draft's text
  (no library wrote that layout), with the same data written as Zarr v2 by
  zarr-python 3 in ``draft2022_v2`` / ``draft2022_root_v2``.

Every draft array must read exactly (bit for bit) like its v2 twin as read by
zarr-python 3, for full, strided and negative-step selections; hierarchies
must list the same members; writes are refused; broken drafts raise zarrfast
errors that name the offending key.
"""

from __future__ import annotations

import json
import pickle
import re
import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import BloscCodec, BytesCodec, GzipCodec, TransposeCodec, ZstdCodec
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayAndGroupError,
    FillValueError,
    GroupNotFoundError,
    MemberNotFoundError,
    MetadataError,
    MetadataValidationError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    UnknownCodecError,
    UnsupportedDataTypeError,
    ZarrfastError,
)
from zarrfast.hierarchy.draft import DraftArray, DraftGroup, detect_draft, open_draft
from zarrfast.metadata.draft import (
    DRAFT_2022,
    ZARRITA,
    DraftChunkKeyEncoding,
    DraftHierarchy,
    ZlibCodec,
    convert_array_document,
    detect,
    final_chunk_key,
    final_metadata,
)
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

import _helpers

zarr = pytest.importorskip("zarr")

FIXTURES = _helpers.FIXTURES / "drafts"
PAIRS = {  # draft fixture -> its Zarr v2 twin
    "zarrita": "zarrita_v2",
    "draft2022": "draft2022_v2",
    "draft2022_root": "draft2022_root_v2",
}
LAYOUTS = {"zarrita": ZARRITA, "draft2022": DRAFT_2022, "draft2022_root": DRAFT_2022}

pytestmark = pytest.mark.filterwarnings(
    # zarr-python 3 warns about numcodecs.* codecs and v2 details it reads fine
    "ignore::UserWarning",
    "ignore::DeprecationWarning",
)


def _v2_members(name: str) -> dict[str, str]:
    g = zarr.open_group(str(FIXTURES / PAIRS[name]), mode="r", zarr_format=2)
    return {k: "array" if isinstance(v, zarr.Array) else "group"
            for k, v in g.members(max_depth=None)}


def _array_cases() -> list[tuple[str, str]]:
    cases = []
    for name in PAIRS:
        if name == "draft2022_root":
            cases.append((name, ""))
            continue
        cases += [(name, k) for k, kind in sorted(_v2_members(name).items()) if kind == "array"]
    return cases


ARRAY_CASES = _array_cases()


def _reference(name: str, path: str):
    return zarr.open_array(str(FIXTURES / PAIRS[name]), path=path, mode="r", zarr_format=2)


def _native(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = _native(got), _native(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    # bit for bit: -0.0 vs 0.0 and NaN payloads count
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (
        f"{what}: values differ\n{got}\n!=\n{want}"
    )


def _selections(ndim: int) -> list:
    if ndim == 0:
        return [(), Ellipsis]
    sels = [
        Ellipsis,
        (slice(None, None, 2),) * ndim,
        (slice(None, None, -1),) * ndim,
        (slice(-1, None, -2),) * ndim,
        (slice(1, -1, 3),) * ndim,
        (slice(None, None, -3),) + (slice(None),) * (ndim - 1),
        (1,) + (slice(None, None, -2),) * (ndim - 1),
        (-1,) * ndim,
    ]
    if ndim > 1:
        sels.append((slice(None, None, 2), 0) + (slice(None, None, -1),) * (ndim - 2))
    return sels


def _mem(name: str) -> dict[str, bytes]:
    """A fixture as a dict (for a MemoryStore) to break in tests."""
    root = FIXTURES / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}


def _doc(d: dict[str, bytes], key: str) -> dict:
    return json.loads(d[key])


def _put(d: dict[str, bytes], key: str, doc) -> None:
    d[key] = json.dumps(doc).encode()


# ---------------------------------------------------------------------------
# detection
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_detect_draft(name):
    h = detect_draft(str(FIXTURES / name))
    assert isinstance(h, DraftHierarchy)
    assert h.layout == LAYOUTS[name]
    assert detect_draft(zarrfast.LocalStore(FIXTURES / name)).layout == LAYOUTS[name]
    assert detect_draft(_mem(name)).layout == LAYOUTS[name]


@pytest.mark.parametrize("name", sorted(PAIRS.values()))
def test_detect_returns_none_for_v2(name):
    assert detect_draft(str(FIXTURES / name)) is None


def test_detect_returns_none_for_final_v3_and_empty(tmp_path):
    zarrfast.create_array(str(tmp_path / "a"), shape=(3,), dtype="i4")
    zarrfast.open_group(str(tmp_path / "g"), mode="w").create_group("x")
    assert detect_draft(str(tmp_path / "a")) is None
    assert detect_draft(str(tmp_path / "g")) is None
    assert detect_draft({}) is None
    assert detect(zarrfast.MemoryStore()) is None
    assert detect_draft({"zarr.json": b'{"zarr_format": 2}'}) is None
    with pytest.raises(NodeNotFoundError):
        open_draft(str(tmp_path / "g"))


# ---------------------------------------------------------------------------
# listing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_listing_matches_v2(name):
    g = open_draft(str(FIXTURES / name))
    assert isinstance(g, DraftGroup) and g.read_only
    got = {k: "array" if isinstance(v, zarrfast.Array) else "group"
           for k, v in g.members(max_depth=None)}
    assert got == _v2_members(name)
    # direct children, with the DraftHierarchy's list_dir-based listing
    h = detect_draft(str(FIXTURES / name))
    top = sorted(k for k in got if "/" not in k)
    assert sorted(g) == top == h.children("")
    assert len(g) == len(top)
    assert sorted(h.walk()) == sorted(got)
    assert sorted(g.array_keys()) == sorted(k for k in top if got[k] == "array")
    assert sorted(g.group_keys()) == sorted(k for k in top if got[k] == "group")


@pytest.mark.parametrize("name,implicit", [
    ("zarrita", ["implicit", "implicit/deeper"]),
    ("draft2022", ["implicit", "implicit/deeper"]),
])
def test_implicit_groups(name, implicit):
    g = open_draft(str(FIXTURES / name))
    h = detect_draft(str(FIXTURES / name))
    for path in implicit:
        assert not h.store.exists(h.metadata_key(path, "group"))  # no document...
        node = g[path]  # ...but the group exists
        assert isinstance(node, DraftGroup)
        assert dict(node.attrs) == {}
        assert path.rsplit("/", 1)[-1] in (g[path.rsplit("/", 1)[0]] if "/" in path else g)
        md, prefix = h.node(path)
        assert isinstance(md, GroupMetadata) and prefix is None
    assert "deeper" in list(g["implicit"])


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_group_attributes_match_v2(name):
    g = open_draft(str(FIXTURES / name))
    ref = zarr.open_group(str(FIXTURES / PAIRS[name]), mode="r", zarr_format=2)
    assert dict(g.attrs) == dict(ref.attrs)
    for k, v in ref.members(max_depth=None):
        assert dict(g[k].attrs) == dict(v.attrs), k


def test_membership_and_missing_members():
    g = open_draft(str(FIXTURES / "draft2022"))
    assert "grp" in g and "implicit" in g and "f8_gzip" in g and "grp/bool_raw" in g
    assert "nope" not in g and 3 not in g and "" not in g and "../x" not in g
    assert "grp" not in g["grp"]
    with pytest.raises(MemberNotFoundError, match="nope"):
        g["nope"]
    with pytest.raises(KeyError):
        g["grp/nope"]
    assert g.get("nope") is None
    h = detect_draft(str(FIXTURES / "draft2022"))
    with pytest.raises(NodeNotFoundError, match=re.escape("meta/nope.array.json")):
        h.node("nope")
    assert h.node_type("nope") is None
    assert h.node_type("grp") == "group" and h.node_type("f8_gzip") == "array"


def test_root_array_hierarchy():
    a = open_draft(str(FIXTURES / "draft2022_root"))
    assert isinstance(a, DraftArray) and a.path == ""
    h = detect_draft(str(FIXTURES / "draft2022_root"))
    assert h.chunk_path("") == "data"
    assert h.metadata_key("", "array") == "meta/array.json"
    assert h.children("") == []
    with pytest.raises(NodeTypeValidationError):
        open_draft(str(FIXTURES / "draft2022_root"), node_type="group")
    assert dict(a.attrs) == {"root": "array"}


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,path", ARRAY_CASES, ids=[f"{n}:{p}" for n, p in ARRAY_CASES])
def test_arrays_read_like_v2(name, path):
    ref = _reference(name, path)
    want = ref[...]
    g = open_draft(str(FIXTURES / name))
    a = g if path == "" else g[path]
    assert isinstance(a, DraftArray)
    assert a.read_only and a.draft_layout == LAYOUTS[name]
    assert a.shape == ref.shape and a.chunks == ref.chunks
    assert a.dtype == np.dtype(ref.dtype).newbyteorder("=")
    fv, rfv = a.fill_value, ref.fill_value
    if rfv is None:  # zarrita's null fill value becomes the data type's default
        assert fv == np.zeros((), a.dtype)[()]
    else:
        _assert_same(np.asarray(fv, a.dtype), np.asarray(rfv, ref.dtype), f"{path} fill")
    assert dict(a.attrs) == dict(ref.attrs)
    for sel in _selections(a.ndim):
        _assert_same(a[sel], np.asarray(want)[sel], f"{name}:{path}[{sel}]")
    # also through a node opened directly and from a dict store
    b = open_draft(_mem(name), path, node_type="array")
    _assert_same(b[...], want, f"{name}:{path} (memory store)")
    # chunk counting goes through chunk_path too
    n_ref = ref.nchunks_initialized
    assert a.nchunks_initialized == (n_ref() if callable(n_ref) else n_ref)


def test_chunk_keys_are_the_draft_keys():
    h = detect_draft(str(FIXTURES / "draft2022"))
    md, prefix = h.node("implicit/deeper/u2_dot")
    assert prefix == "data/implicit/deeper/u2_dot/"
    cke = md.chunk_key_encoding
    assert isinstance(cke, DraftChunkKeyEncoding)
    assert cke.encode((2, 0)) == "c2.0" and cke.key_prefix() == "c"
    assert h.store.exists(prefix + cke.encode((2, 0)))
    md, prefix = h.node("scalar")
    assert md.chunk_key_encoding.encode(()) == "c" and h.store.exists(prefix + "c")
    z = detect_draft(str(FIXTURES / "zarrita"))
    md, prefix = z.node("scalar_i8")
    assert prefix == "data/root/scalar_i8/"
    assert z.store.exists(prefix + md.chunk_key_encoding.encode(()))  # c0
    md, prefix = z.node("grp/i2_zlib_F")
    assert z.store.exists(prefix + md.chunk_key_encoding.encode((0, 0, 0)))  # c0/0/0


def test_converted_metadata():
    h = detect_draft(str(FIXTURES / "draft2022"))
    md, _ = h.node("f8_gzip")
    assert md.data_type.name == "float64"
    assert md.codecs == (BytesCodec("little"), GzipCodec(1))
    assert np.isnan(md.fill_value)
    md, _ = h.node("grp/i4_F_endian_blosc")
    assert md.data_type.name == "int32"
    assert md.codecs[0] == TransposeCodec((2, 1, 0))
    assert md.codecs[1] == BytesCodec("big")
    assert isinstance(md.codecs[2], BloscCodec) and md.codecs[2].shuffle == "shuffle"
    md, _ = h.node("grp/u1_F_transpose")
    # "F" layout (reverse) then transpose [2, 0, 1], composed into one permutation
    assert md.codecs[0] == TransposeCodec((0, 2, 1))
    assert md.codecs[1] == BytesCodec(None) and md.data_type.name == "uint8"
    md, _ = h.node("implicit/deeper/u2_dot")
    assert md.codecs == (TransposeCodec((1, 0)), BytesCodec("little"), ZstdCodec(3, True))
    assert md.fill_value == 255
    md, _ = h.node("implicit/i2_binfill")
    assert md.fill_value == -2 and md.codecs == (BytesCodec("little"),)
    md, _ = h.node("c8")
    assert md.fill_value == complex(1, np.inf)
    z = detect_draft(str(FIXTURES / "zarrita"))
    md, _ = z.node("grp/i2_zlib_F")
    assert md.data_type.name == "int16" and md.fill_value == -7
    assert md.codecs == (TransposeCodec((2, 1, 0)), BytesCodec("big"), ZlibCodec({"level": 3}))
    md, _ = z.node("grp/sub/u1_blosc")  # numcodecs AUTOSHUFFLE of a 1-byte type
    assert md.codecs[1].shuffle == "bitshuffle" and md.codecs[0] == BytesCodec(None)
    md, _ = z.node("i8_nullfill_F")
    assert md.fill_value == 0
    md, _ = z.node("c16_blosc")
    assert md.data_type.name == "complex128" and md.fill_value == 1 + 2j
    # every converted document is valid final v3 once the key encoding is final
    for hier in (h, z):
        for path in hier.walk():
            md, _ = hier.node(path)
            if isinstance(md, ArrayMetadata):
                final = final_metadata(md)
                again = parse_metadata(final.to_json(), path=path, key="zarr.json")
                assert again.to_dict() == final.to_dict(), path
                assert again.codecs == final.codecs, path


def test_final_chunk_key():
    z = detect_draft(str(FIXTURES / "zarrita"))
    md, _ = z.node("implicit/deeper/f4_zstd_dot")
    assert md.chunk_key_encoding.encode((1, 0)) == "c1.0"
    assert final_chunk_key(md, (1, 0)) == "c.1.0"
    md, _ = z.node("scalar_i8")
    assert final_chunk_key(md, ()) == "c"


def test_order_and_out():
    a = open_draft(str(FIXTURES / "draft2022"), "grp/i4_F_endian_blosc", order="F")
    ref = _reference("draft2022", "grp/i4_F_endian_blosc")[...]
    got = a[...]
    assert got.flags.f_contiguous
    _assert_same(got, ref, "order F")
    out = np.empty(a.shape, a.dtype)
    a.get_basic_selection(Ellipsis, out=out)
    _assert_same(out, ref, "out=")
    _assert_same(np.asarray(a), ref, "__array__")


def test_pickle_roundtrip():
    g = open_draft(str(FIXTURES / "zarrita"))
    g2 = pickle.loads(pickle.dumps(g))
    assert isinstance(g2, DraftGroup) and sorted(g2) == sorted(g)
    a = g["grp/i2_zlib_F"]
    a2 = pickle.loads(pickle.dumps(a))
    assert isinstance(a2, DraftArray) and a2.read_only
    _assert_same(a2[...], a[...], "pickled")


# ---------------------------------------------------------------------------
# read-only
# ---------------------------------------------------------------------------


def test_writes_are_refused():
    g = open_draft(str(FIXTURES / "draft2022"), mode="a")
    a = g["f8_gzip"]
    before = a[...]
    with pytest.raises(ReadOnlyError):
        a[0, 0] = 1.0
    with pytest.raises(ReadOnlyError):
        a[...] = 0
    with pytest.raises(ReadOnlyError):
        a.attrs["x"] = 1
    with pytest.raises(ReadOnlyError):
        a.resize((3, 3))
    with pytest.raises(ReadOnlyError):
        a.with_write_empty_chunks(True)[0, 0] = 2.0
    with pytest.raises(ReadOnlyError):
        g.create_group("new")
    with pytest.raises(ReadOnlyError):
        g.create_array("new", shape=(2,), dtype="i1")
    with pytest.raises(ReadOnlyError):
        g.require_group("new")
    with pytest.raises(ReadOnlyError):
        del g["f8_gzip"]
    with pytest.raises(ReadOnlyError):
        g.attrs["x"] = 1
    with pytest.raises(ReadOnlyError):
        g["implicit"].attrs.update({"x": 1})
    for mode in ("w", "w-"):
        with pytest.raises(ReadOnlyError, match="draft"):
            open_draft(str(FIXTURES / "draft2022"), mode=mode)
    assert isinstance(ReadOnlyError("x"), PermissionError)
    _assert_same(a[...], before, "unchanged")
    assert not (FIXTURES / "draft2022" / "meta" / "new.group.json").exists()
    assert not (FIXTURES / "draft2022" / "new").exists()


def test_open_draft_node_types():
    root = str(FIXTURES / "zarrita")
    assert isinstance(open_draft(root, "grp", node_type="group"), DraftGroup)
    assert isinstance(open_draft(root, "/grp/sub/u1_blosc/", node_type="array"), DraftArray)
    with pytest.raises(NodeTypeValidationError, match="is a group, not an array"):
        open_draft(root, "grp", node_type="array")
    with pytest.raises(NodeTypeValidationError, match="is an array, not a group"):
        open_draft(root, "f8_gzip", node_type="group")
    with pytest.raises(ArrayNotFoundError):
        open_draft(root, "missing", node_type="array")
    with pytest.raises(GroupNotFoundError):
        open_draft(root, "missing", node_type="group")
    with pytest.raises(NodeNotFoundError, match=re.escape("meta/root/missing.array.json")):
        open_draft(root, "missing")
    with pytest.raises(ZarrfastError):
        open_draft(root, "grp", node_type="thing")


# ---------------------------------------------------------------------------
# conversion to final v3
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_convert_to_final_v3(name, tmp_path):
    dest = tmp_path / "final"
    root = zarrfast.convert(str(FIXTURES / name), str(dest), zarr_format=3, progress=False)
    for key in dest.rglob("zarr.json"):
        doc = json.loads(key.read_text())
        assert doc["zarr_format"] == 3 and "zarrfast.draft" not in key.read_text()
    cases = [p for n, p in ARRAY_CASES if n == name]
    if name == "draft2022_root":
        assert isinstance(root, zarrfast.Array)
    else:
        assert isinstance(root, zarrfast.Group) and not isinstance(root, DraftGroup)
        members = {k: "array" if isinstance(v, zarr.Array) else "group"
                   for k, v in zarr.open_group(str(dest), mode="r").members(max_depth=None)}
        assert members == _v2_members(name)
    for path in cases:
        want = _reference(name, path)[...]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer = zarr.open_array(str(dest), path=path, mode="r", zarr_format=3)
            _assert_same(peer[...], want, f"zarr-python reads converted {path}")
        ours = zarrfast.open_array(str(dest), path=path, mode="r")
        _assert_same(ours[...], want, f"zarrfast reads converted {path}")
        assert dict(ours.attrs) == dict(_reference(name, path).attrs)
    with pytest.raises(ZarrfastError, match="already exists"):
        zarrfast.convert(str(FIXTURES / name), str(dest), progress=False)
    zarrfast.convert(str(FIXTURES / name), str(dest), progress=False, overwrite=True)


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
    d = _mem(name)
    doc = _doc(d, key)
    doc[member] = value
    _put(d, key, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*mixes layouts.*"
                       + member):
        _open_broken(d)
    # the rest of the hierarchy still opens, and listing does not read the document
    g = open_draft(zarrfast.MemoryStore(d))
    assert "f8_gzip" in list(g)
    with pytest.raises(MetadataValidationError, match=re.escape(key)):
        g["f8_gzip"]


def test_final_v3_array_document_in_draft_layout():
    d = _mem("draft2022")
    final = zarrfast.create_array(zarrfast.MemoryStore(), shape=(7, 11), chunks=(3, 4),
                                  dtype="f8").metadata.to_dict()
    _put(d, D_ARRAY, final)
    with pytest.raises(MetadataValidationError, match=re.escape(D_ARRAY) + ".*mixes layouts"):
        _open_broken(d)


def test_layout_specific_members_do_not_mix():
    d = _mem("draft2022")
    doc = _doc(d, D_ARRAY)
    doc["compressor"] = {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0",
                         "configuration": {"level": 1}}
    _put(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY) + ".*mixes layouts.*compressor.*zarrita"):
        _open_broken(d)
    d = _mem("zarrita")
    doc = _doc(d, Z_ARRAY)
    doc["codecs"] = []
    _put(d, Z_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(Z_ARRAY) + ".*mixes layouts"):
        _open_broken(d)
    # final-style codec objects and chunk grids
    d = _mem("draft2022")
    doc = _doc(d, D_ARRAY)
    doc["codecs"] = [{"name": "gzip", "configuration": {"level": 1}}]
    _put(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY + ": codecs[0]") + ".*mixes layouts"):
        _open_broken(d)
    d = _mem("draft2022")
    doc = _doc(d, D_ARRAY)
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [3, 4]}}
    _put(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(D_ARRAY) + ".*mixes layouts"):
        _open_broken(d)
    d = _mem("zarrita")
    doc = _doc(d, Z_ARRAY)
    doc["compressor"] = {"id": "gzip", "level": 1}
    _put(d, Z_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(Z_ARRAY) + ".*mixes layouts"):
        _open_broken(d)


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_group_document_with_final_members(name):
    d = _mem(name)
    key = "meta/root/grp.group.json" if name == "zarrita" else "meta/grp.group.json"
    doc = _doc(d, key)
    doc.update({"zarr_format": 3, "node_type": "group"})
    _put(d, key, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*mixes layouts"):
        open_draft(zarrfast.MemoryStore(d), "grp")
    d = _mem(name)
    _put(d, key, {"attributes": {}, "extensions": []})
    with pytest.raises(MetadataValidationError, match=re.escape(key) + ".*unknown"):
        open_draft(zarrfast.MemoryStore(d), "grp")


@pytest.mark.parametrize("member", ["node_type", "shape", "codecs", "attributes"])
def test_entry_point_with_final_members(member):
    d = _mem("draft2022")
    doc = _doc(d, "zarr.json")
    doc[member] = {"node_type": "group", "shape": [1], "codecs": [], "attributes": {}}[member]
    _put(d, "zarr.json", doc)
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
    d = _mem(name)
    doc = _doc(d, key)
    doc["codecs"] = [{"type": uri, "configuration": {}}]
    _put(d, key, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(key) + ".*" + re.escape(uri)):
        _open_broken(d)


def test_unknown_compressor_uri_zarrita():
    d = _mem("zarrita")
    doc = _doc(d, Z_ARRAY)
    uri = "https://purl.org/zarr/spec/codec/snappy/1.0"
    doc["compressor"] = {"codec": uri, "configuration": {}}
    _put(d, Z_ARRAY, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(Z_ARRAY) + ".*" + re.escape(uri)):
        _open_broken(d)
    doc["compressor"] = {"codec": "https://purl.org/zarr/spec/codec/gzip/1.0",
                         "configuration": {"level": 42}}
    _put(d, Z_ARRAY, doc)
    with pytest.raises(MetadataValidationError, match=re.escape(Z_ARRAY + ": compressor")):
        _open_broken(d)
    doc["compressor"] = None
    doc["attributes"] = {"filters": [{"id": "delta", "dtype": "<f8"}]}
    _put(d, Z_ARRAY, doc)
    with pytest.raises(UnknownCodecError, match=re.escape(Z_ARRAY) + ".*filters"):
        _open_broken(d)


@pytest.mark.parametrize("name", ["zarrita", "draft2022"])
def test_must_understand_extension_in_entry_point(name):
    d = _mem(name)
    doc = _doc(d, "zarr.json")
    ext = "https://example.org/zarr/extension/needed"
    doc["extensions"] = [{"extension": ext, "must_understand": True}]
    _put(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError,
                       match=r"zarr\.json.*" + re.escape(ext) + ".*must_understand"):
        open_draft(d)
    # extensions that may be ignored are
    doc["extensions"] = [{"extension": ext, "must_understand": False, "configuration": {}}]
    _put(d, "zarr.json", doc)
    assert open_draft(d).draft_layout == LAYOUTS[name]


def test_must_understand_extension_in_array():
    d = _mem("draft2022")
    doc = _doc(d, D_ARRAY)
    doc["extensions"] = [{"extension": "https://example.org/ext/a", "must_understand": True}]
    _put(d, D_ARRAY, doc)
    with pytest.raises(MetadataValidationError,
                       match=re.escape(D_ARRAY) + ".*https://example.org/ext/a"):
        _open_broken(d)


@pytest.mark.parametrize("key", ["zarr.json", D_ARRAY, "meta/grp.group.json",
                                 "meta/group.json"])
def test_malformed_json(key):
    d = _mem("draft2022")
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
    d = _mem("draft2022")
    doc = _doc(d, "zarr.json")
    if encoding is None:
        del doc["metadata_encoding"]
    else:
        doc["metadata_encoding"] = encoding
    _put(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json.*" + re.escape(match)):
        detect_draft(d)


def test_unknown_draft_zarr_format():
    d = _mem("draft2022")
    doc = _doc(d, "zarr.json")
    doc["zarr_format"] = "https://purl.org/zarr/spec/core/4.0"
    _put(d, "zarr.json", doc)
    with pytest.raises(MetadataValidationError, match=r"zarr\.json.*core/4\.0"):
        detect_draft(d)


def test_other_metadata_key_suffix():
    d = {}
    for k, v in _mem("draft2022").items():
        d[k[: -len(".json")] + ".js" if k.startswith("meta/") else k] = v
    doc = json.loads(d["zarr.json"])
    doc["metadata_encoding"]["metadata_key_suffix"] = ".js"
    _put(d, "zarr.json", doc)
    g = open_draft(d)
    assert sorted(g) == sorted(open_draft(str(FIXTURES / "draft2022")))
    _assert_same(g["f8_gzip"][...], _reference("draft2022", "f8_gzip")[...], "suffix .js")
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
    d = _mem("draft2022")
    doc = _doc(d, D_ARRAY)
    mutate(doc)
    _put(d, D_ARRAY, doc)
    with pytest.raises(error, match=re.escape(D_ARRAY) + ".*" + re.escape(match)):
        _open_broken(d)


def test_array_and_group_at_one_path():
    d = _mem("draft2022")
    _put(d, "meta/f8_gzip.group.json", {"attributes": {}})
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
    assert md.data_type.name == name
    assert md.codecs == (BytesCodec(endian),)


def test_data_type_fallback_warns():
    doc = dict(_grid([4], [2]), chunk_memory_layout="C", fill_value=0,
               data_type={"extension": "https://e.org/datetime", "type": "<M8[ns]",
                          "fallback": ["<x9", "<i8"]})
    with pytest.warns(UserWarning, match="fallback"):
        md = convert_array_document(doc, layout=DRAFT_2022, key="meta/t.array.json")
    assert md.data_type.name == "int64"


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
    _assert_same(np.asarray(md.fill_value), np.asarray(expected, md.dtype), str(fill))


def test_transpose_and_layout_composition():
    def chain(layout, codecs, ndim=3):
        doc = dict(_grid([2] * ndim, [1] * ndim), data_type="<i4", chunk_memory_layout=layout,
                   fill_value=0, codecs=codecs)
        return convert_array_document(doc, layout=DRAFT_2022, key="k").codecs

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
