"""Pre-final Zarr v3 layouts (2022 editor's draft, zarrita / zarr-python 2.x experimental
v3): detection, listing, reading, read-only, conversion to final v3.

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
must list the same members; writes are refused.  Broken drafts and document
conversion: ``tests/metadata/test_draft_metadata.py``.
"""

from __future__ import annotations

import json
import pickle
import re
import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import (
    BloscCodec,
    BytesCodec,
    CodecChain,
    GzipCodec,
    TransposeCodec,
    ZlibCodec,
    ZstdCodec,
)
from zarrfast.errors import (
    ArrayNotFoundError,
    GroupNotFoundError,
    MemberNotFoundError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
)
from zarrfast.hierarchy.draft import DraftArray, DraftGroup, detect_draft, open_draft
from zarrfast.metadata.draft import (
    DraftChunkKeyEncoding,
    DraftHierarchy,
    detect,
    final_chunk_key,
    final_metadata,
)
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

from _helpers.drafts import (
    FIXTURES,
    LAYOUTS,
    PAIRS,
    WARNINGS,
    assert_same_bits,
    draft_selections,
    fixture_dict,
    v2_reference,
)

zarr = pytest.importorskip("zarr")

pytestmark = WARNINGS



def codecs_of(md) -> tuple:
    """The codec objects of a converted draft array, as opening it parses them."""
    return CodecChain.from_metadata(md).codecs

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


# ---------------------------------------------------------------------------
# detection
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_detect_draft(name):
    h = detect_draft(str(FIXTURES / name))
    assert isinstance(h, DraftHierarchy)
    assert h.layout == LAYOUTS[name]
    assert detect_draft(zarrfast.LocalStore(FIXTURES / name)).layout == LAYOUTS[name]
    assert detect_draft(fixture_dict(name)).layout == LAYOUTS[name]


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
    ref = v2_reference(name, path)
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
        assert_same_bits(np.asarray(fv, a.dtype), np.asarray(rfv, ref.dtype), f"{path} fill")
    assert dict(a.attrs) == dict(ref.attrs)
    for sel in draft_selections(a.ndim):
        assert_same_bits(a[sel], np.asarray(want)[sel], f"{name}:{path}[{sel}]")
    # also through a node opened directly and from a dict store
    b = open_draft(fixture_dict(name), path, node_type="array")
    assert_same_bits(b[...], want, f"{name}:{path} (memory store)")
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
    assert md.type_info.name == "float64"
    assert codecs_of(md) == (BytesCodec("little"), GzipCodec(1))
    assert np.isnan(md.fill_value)
    md, _ = h.node("grp/i4_F_endian_blosc")
    assert md.type_info.name == "int32"
    assert codecs_of(md)[0] == TransposeCodec((2, 1, 0))
    assert codecs_of(md)[1] == BytesCodec("big")
    assert isinstance(codecs_of(md)[2], BloscCodec) and codecs_of(md)[2].shuffle == "shuffle"
    md, _ = h.node("grp/u1_F_transpose")
    # "F" layout (reverse) then transpose [2, 0, 1], composed into one permutation
    assert codecs_of(md)[0] == TransposeCodec((0, 2, 1))
    assert codecs_of(md)[1] == BytesCodec(None) and md.type_info.name == "uint8"
    md, _ = h.node("implicit/deeper/u2_dot")
    assert codecs_of(md) == (TransposeCodec((1, 0)), BytesCodec("little"), ZstdCodec(3, True))
    assert md.fill_value == 255
    md, _ = h.node("implicit/i2_binfill")
    assert md.fill_value == -2 and codecs_of(md) == (BytesCodec("little"),)
    md, _ = h.node("c8")
    assert md.fill_value == complex(1, np.inf)
    z = detect_draft(str(FIXTURES / "zarrita"))
    md, _ = z.node("grp/i2_zlib_F")
    assert md.type_info.name == "int16" and md.fill_value == -7
    assert codecs_of(md) == (TransposeCodec((2, 1, 0)), BytesCodec("big"), ZlibCodec({"level": 3}))
    md, _ = z.node("grp/sub/u1_blosc")  # numcodecs AUTOSHUFFLE of a 1-byte type
    assert codecs_of(md)[1].shuffle == "bitshuffle" and codecs_of(md)[0] == BytesCodec(None)
    md, _ = z.node("i8_nullfill_F")
    assert md.fill_value == 0
    md, _ = z.node("c16_blosc")
    assert md.type_info.name == "complex128" and md.fill_value == 1 + 2j
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
    ref = v2_reference("draft2022", "grp/i4_F_endian_blosc")[...]
    got = a[...]
    assert got.flags.f_contiguous
    assert_same_bits(got, ref, "order F")
    out = np.empty(a.shape, a.dtype)
    a.get_basic_selection(Ellipsis, out=out)
    assert_same_bits(out, ref, "out=")
    assert_same_bits(np.asarray(a), ref, "__array__")


def test_pickle_roundtrip():
    g = open_draft(str(FIXTURES / "zarrita"))
    g2 = pickle.loads(pickle.dumps(g))
    assert isinstance(g2, DraftGroup) and sorted(g2) == sorted(g)
    a = g["grp/i2_zlib_F"]
    a2 = pickle.loads(pickle.dumps(a))
    assert isinstance(a2, DraftArray) and a2.read_only
    assert_same_bits(a2[...], a[...], "pickled")


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
    assert_same_bits(a[...], before, "unchanged")
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
        want = v2_reference(name, path)[...]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer = zarr.open_array(str(dest), path=path, mode="r", zarr_format=3)
            assert_same_bits(peer[...], want, f"zarr-python reads converted {path}")
        ours = zarrfast.open_array(str(dest), path=path, mode="r")
        assert_same_bits(ours[...], want, f"zarrfast reads converted {path}")
        assert dict(ours.attrs) == dict(v2_reference(name, path).attrs)
    with pytest.raises(ZarrfastError, match="already exists"):
        zarrfast.convert(str(FIXTURES / name), str(dest), progress=False)
    zarrfast.convert(str(FIXTURES / name), str(dest), progress=False, overwrite=True)
