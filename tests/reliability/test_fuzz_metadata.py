"""Fuzzing the metadata parsers with structured mutations of valid documents.

Every valid document (``_helpers/fuzz_metadata.py``: Zarr v3 ``zarr.json`` with and
without consolidated metadata, Zarr v2 ``.zarray``/``.zgroup``/``.zattrs``/
``.zmetadata``, both draft layouts) is mutated by Hypothesis: members dropped,
renamed or retyped, numbers made negative, zero or huge, lists shortened or grown,
unknown members added (with and without ``must_understand``), nested garbage.  Each
mutant is parsed directly and opened through the public API on a ``MemoryStore``.
A mutant must either

* be refused with a :class:`zarrfast.errors.ZarrfastError` whose message names
  the node and (where the mutation hit a member) a member related to it, or
* open, and then small reads (and a write/read round trip when the chunk is
  small) must work.

Any other exception (``KeyError``, ``TypeError``, ``OverflowError``,
``RecursionError``, ...) fails the test.  Also: malformed bytes for every parser.
Targeted mutations: ``test_fuzz_metadata_targeted.py``.  Byte-level fuzzing of the
same parsers (atheris) lives in ``tests/fuzz/atheris_metadata.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import CodecChain
from zarrfast.errors import MetadataError, ZarrfastError
from zarrfast.metadata.draft import (
    DRAFT_2022,
    ZARRITA,
    convert_array_document,
    convert_group_document,
    parse_entry_point,
)
from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from zarrfast.metadata.v3 import parse_metadata
from zarrfast.storage import MemoryStore

from _helpers.fuzz_metadata import (
    ARR,
    DRAFT_ARRAYS,
    DRAFT_ENTRY,
    DRAFT_META,
    FUZZ,
    GARBAGE,
    GROUP,
    NESTED,
    RELATED_DRAFT,
    V2_ARRAYS,
    V2_ZMETADATA,
    V3_ARRAYS,
    V3_GROUP,
    check_error,
    check_v2_array,
    check_v3_array,
    dump_doc,
    exercise_array,
    mutate,
    v3_store,
)

# -- tests ----------------------------------------------------------------------------------


def test_unmutated_documents_open() -> None:
    """The documents the fuzzers start from are valid (so mutants test one change)."""
    for doc in V3_ARRAYS:
        assert check_v3_array(doc, []) == "opened"
    for doc in V2_ARRAYS:
        assert check_v2_array(doc, []) == "opened"
    for layout, doc in DRAFT_ARRAYS:
        s = _draft_store(layout, DRAFT_ENTRY[layout], dump_doc(doc))
        exercise_array(zarrfast.open_array(s, path=ARR, mode="r"))
    for doc, zarr_json in [(V3_GROUP, True), (V2_ZMETADATA, False)]:
        s = MemoryStore()
        s.set(f"{GROUP}/zarr.json" if zarr_json else f"{GROUP}/.zmetadata", dump_doc(doc))
        if not zarr_json:
            s.set(f"{GROUP}/.zgroup", b'{"zarr_format": 2}')
        g = zarrfast.open_group(s, path=GROUP, mode="r")
        assert sorted(name for name, _ in g.members(max_depth=None)) == ["arr", "sub", "sub/x"]


@FUZZ
@given(data=st.data(), base=st.sampled_from(V3_ARRAYS))
def test_v3_array_mutations(data: Any, base: dict) -> None:
    doc, hit = data.draw(mutate(base))
    event(check_v3_array(doc, hit))


def _check_group_consolidated(s: MemoryStore, where: str) -> None:
    try:
        g = zarrfast.open_group(s, path=GROUP, mode="r")
        for _name, node in g.members(max_depth=None):
            if isinstance(node, zarrfast.Array):
                exercise_array(node)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
        assert where in str(e), f"message does not name {where!r}: {e}"


@FUZZ
@given(data=st.data())
def test_v3_consolidated_mutations(data: Any) -> None:
    doc, hit = data.draw(mutate(V3_GROUP))
    s = MemoryStore()
    s.set(f"{GROUP}/zarr.json", dump_doc(doc))
    try:
        parse_metadata(dump_doc(doc), path=GROUP, key=f"{GROUP}/zarr.json")
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
        assert GROUP in str(e)
    _check_group_consolidated(s, GROUP)


@FUZZ
@given(data=st.data(), base=st.sampled_from(V2_ARRAYS))
def test_v2_array_mutations(data: Any, base: dict) -> None:
    doc, hit = data.draw(mutate(base))
    event(check_v2_array(doc, hit))


@FUZZ
@given(attrs=st.sampled_from(GARBAGE), group=st.sampled_from(GARBAGE[:20] + [
    {"zarr_format": 2}, {"zarr_format": 3}, {"zarr_format": 2, "x": NESTED}]))
def test_v2_zattrs_and_zgroup_mutations(attrs: Any, group: Any) -> None:
    s = MemoryStore()
    s.set(f"{GROUP}/.zgroup", dump_doc(group))
    s.set(f"{GROUP}/.zattrs", dump_doc(attrs))
    try:
        GroupMetadataV2.from_documents(dump_doc(group), dump_doc(attrs), path=GROUP,
                                       key=f"{GROUP}/.zgroup")
        g = zarrfast.open_group(s, path=GROUP, mode="r", zarr_format=2)
        assert dict(g.attrs) == attrs
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
        assert GROUP in str(e)
        assert isinstance(attrs, dict) is False or group != {"zarr_format": 2} or (
            "zarr_format" in str(e)), e


@FUZZ
@given(data=st.data())
def test_v2_zmetadata_mutations(data: Any) -> None:
    doc, _hit = data.draw(mutate(V2_ZMETADATA))
    s = MemoryStore()
    s.set(f"{GROUP}/.zgroup", b'{"zarr_format": 2}')
    s.set(f"{GROUP}/.zmetadata", dump_doc(doc))
    _check_group_consolidated(s, GROUP)


def _draft_store(layout: str, entry: Any, doc_raw: bytes) -> MemoryStore:
    s = MemoryStore()
    s.set("zarr.json", dump_doc(entry))
    s.set(f"{DRAFT_META[layout]}/{ARR}.array.json", doc_raw)
    return s


@FUZZ
@given(data=st.data(), case=st.sampled_from(DRAFT_ARRAYS))
def test_draft_array_mutations(data: Any, case: tuple[str, dict]) -> None:
    layout, base = case
    doc, hit = data.draw(mutate(base))
    key = f"{DRAFT_META[layout]}/{ARR}.array.json"
    try:
        md = convert_array_document(doc, layout=layout, key=key)
        CodecChain.from_metadata(md, node=f"array {ARR!r}")  # as opening the array does
        parsed = True
    except Exception as e:  # noqa: BLE001
        check_error(e, ARR, hit, RELATED_DRAFT)
        parsed = False
    s = _draft_store(layout, DRAFT_ENTRY[layout], dump_doc(doc))
    try:
        a = zarrfast.open_array(s, path=ARR, mode="r")
    except Exception as e:  # noqa: BLE001
        check_error(e, ARR, hit, RELATED_DRAFT)
        assert not parsed
        return
    assert parsed
    exercise_array(a)


@FUZZ
@given(data=st.data(), layout=st.sampled_from([DRAFT_2022, ZARRITA]))
def test_draft_entry_point_and_group_mutations(data: Any, layout: str) -> None:
    entry, _ = data.draw(mutate(DRAFT_ENTRY[layout], protect_root=False))
    group, _ = data.draw(mutate({"attributes": {"a": [1, 2]}}, protect_root=False))
    try:
        parse_entry_point(dump_doc(entry))
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, MetadataError), f"{type(e).__name__} leaked: {e!r}"
        assert "zarr.json" in str(e)
    gkey = f"{DRAFT_META[layout]}/{GROUP}.group.json"
    try:
        convert_group_document(group, layout=layout, key=gkey)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, MetadataError), f"{type(e).__name__} leaked: {e!r}"
        assert gkey in str(e)
    s = MemoryStore()
    s.set("zarr.json", dump_doc(entry))
    s.set(gkey, dump_doc(group))
    s.set(f"{DRAFT_META[layout]}/{ARR}.array.json", dump_doc(DRAFT_ARRAYS[-1][1]))
    try:
        g = zarrfast.open_group(s, path=GROUP, mode="r")
        for _name, node in g.members(max_depth=None):
            if isinstance(node, zarrfast.Array):
                node[...]
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"


# -- raw bytes: malformed JSON, non-UTF-8, deep nesting ----------------------------------

BAD_BYTES = [
    b"", b"{", b"}", b"\xff\xfe\x00", b"\x80abc", b'{"zarr_format": 3, "node_type": "\xff"}',
    b"null", b"[]", b"3", b'"zarr"', b"NaN", b'{"a": 1, "a": 2}', b"\x00" * 16,
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"zarr_format": 3, "node_type": "array", "shape": ' + b"[" * 30_000 + b"]" * 30_000 + b"}",
    b"\xef\xbb\xbf{}", "{\"zarr_format\": 3, \"node_type\": \"gr\u00f6up\"}".encode("utf-16"),
    b'{"zarr_format": 1e999}', b'{"zarr_format": 3, "node_type": "group", "attributes": '
    b'{"x": ' + b"9" * 5000 + b"}}",
]


@pytest.mark.parametrize("raw", BAD_BYTES, ids=range(len(BAD_BYTES)))
def test_malformed_bytes_every_parser(raw: bytes) -> None:
    """Bytes that are not a valid document are a MetadataError naming the key, for every
    parser and through the public API (or, for a well-formed document of the wrong shape,
    a ZarrfastError naming the node)."""
    cases = [
        (lambda: parse_metadata(raw, path=ARR, key=f"{ARR}/zarr.json"), f"{ARR}/zarr.json"),
        (lambda: ArrayMetadataV2.from_documents(raw, None, path=ARR, key=f"{ARR}/.zarray"),
         ARR),
        (lambda: ArrayMetadataV2.from_documents(b'{"zarr_format": 2}', raw, path=ARR,
                                                key=f"{ARR}/.zarray"), ARR),
        (lambda: GroupMetadataV2.from_documents(raw, None, path=GROUP, key=f"{GROUP}/.zgroup"),
         GROUP),
        (lambda: parse_entry_point(raw), "zarr.json"),
    ]
    for fn, where in cases:
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
            assert where in str(e), e
    for key, kw in [(f"{ARR}/zarr.json", {}), (f"{ARR}/.zarray", {"zarr_format": 2}),
                    (f"{GROUP}/.zmetadata", {}), ("zarr.json", {}),
                    (f"meta/{ARR}.array.json", {})]:
        s = MemoryStore()
        if key.startswith("meta/"):
            s.set("zarr.json", dump_doc(DRAFT_ENTRY[DRAFT_2022]))
        if key.endswith(".zmetadata"):
            s.set(f"{GROUP}/.zgroup", b'{"zarr_format": 2}')
        s.set(key, raw)
        try:
            node = zarrfast.open(s, path=ARR if "zmetadata" not in key else GROUP, mode="r",
                                 **kw)
            if isinstance(node, zarrfast.Group):
                list(node.members(max_depth=None))
        except Exception as e:  # noqa: BLE001
            assert isinstance(e, ZarrfastError), f"{key}: {type(e).__name__} leaked: {e!r}"


def test_malformed_json_message_names_key_and_node() -> None:
    s = v3_store(b'{"zarr_format": 3, ')
    with pytest.raises(MetadataError, match="grp/arr/zarr.json.*not valid JSON"):
        zarrfast.open_array(s, path=ARR, mode="r")
    s = v3_store(b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(MetadataError, match="grp/arr/zarr.json"):
        zarrfast.open_array(s, path=ARR, mode="r")
