"""Fuzzing the metadata parsers with structured mutations of valid documents.

Every valid document below (Zarr v3 ``zarr.json`` with and without consolidated
metadata, Zarr v2 ``.zarray``/``.zgroup``/``.zattrs``/``.zmetadata``, both draft
layouts) is mutated by Hypothesis: members dropped, renamed or retyped, numbers
made negative, zero or huge, lists shortened or grown, unknown members added
(with and without ``must_understand``), nested garbage.  Each mutant is parsed
directly and opened through the public API on a ``MemoryStore``.  A mutant must
either

* be refused with a :class:`zarrfast.errors.ZarrfastError` whose message names
  the node and (where the mutation hit a member) a member related to it, or
* open, and then small reads (and a write/read round trip when the chunk is
  small) must work.

Any other exception (``KeyError``, ``TypeError``, ``OverflowError``,
``RecursionError``, ...) fails the test.  Byte-level fuzzing of the same
parsers (atheris) lives in ``tests/fuzz/atheris_metadata.py``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import (
    CodecError,
    InvalidNodeNameError,
    MetadataError,
    MetadataValidationError,
    ZarrfastError,
)
from zarrfast.metadata.draft import (
    DRAFT_2022,
    ZARRITA,
    convert_array_document,
    convert_group_document,
    parse_entry_point,
)
from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from zarrfast.metadata.v3 import parse_metadata
from zarrfast.storage import LocalStore, MemoryStore

#: examples per fuzz test (about 1 ms each); ZARRFAST_FUZZ_EXAMPLES=20000 for a long run
FUZZ_EXAMPLES = int(os.environ.get("ZARRFAST_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

pytestmark = pytest.mark.filterwarnings("ignore:.*fallback:UserWarning")

GROUP = "grp"
ARR = "grp/arr"  # every mutated array lives here; errors must name it

LE = {"name": "bytes", "configuration": {"endian": "little"}}


def _v3_array(**kw: Any) -> dict[str, Any]:
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [10, 7], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN", "codecs": [LE], "attributes": {"units": "K"},
    }
    doc.update(kw)
    return doc


V3_ARRAYS = [
    _v3_array(),
    _v3_array(data_type="int16", fill_value=-3, dimension_names=["y", None],
              chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
              codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}},
                      {"name": "bytes", "configuration": {"endian": "big"}},
                      {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                          "shuffle": "shuffle", "typesize": 2,
                                                          "blocksize": 0}}]),
    _v3_array(shape=[9], data_type="complex64", fill_value=["NaN", 1.5],
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [4]}},
              codecs=[LE, {"name": "gzip", "configuration": {"level": 1}},
                      {"name": "crc32c"}]),
    _v3_array(shape=[6, 4], data_type="uint64", fill_value=2**64 - 1,
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [6, 4]}},
              codecs=[{"name": "sharding_indexed", "configuration": {
                  "chunk_shape": [3, 2], "codecs": [LE, {"name": "zstd", "configuration": {
                      "level": 1, "checksum": False}}],
                  "index_codecs": [LE, {"name": "crc32c"}], "index_location": "end"}}]),
    _v3_array(shape=[5], data_type="r16", fill_value=[1, 2],
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2]}},
              codecs=[{"name": "bytes"}]),
    _v3_array(shape=[], data_type="bool", fill_value=True,
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}},
              codecs=[{"name": "bytes"}], storage_transformers=[]),
    _v3_array(shape=[3, 3], data_type="float16", fill_value="0x7e00",
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2, 2]}}),
]

V3_GROUP = {
    "zarr_format": 3, "node_type": "group", "attributes": {"a": 1},
    "consolidated_metadata": {
        "kind": "inline", "must_understand": False,
        "metadata": {
            "arr": V3_ARRAYS[0],
            "sub": {"zarr_format": 3, "node_type": "group", "attributes": {}},
            "sub/x": V3_ARRAYS[1],
        },
    },
}


def _v2_array(**kw: Any) -> dict[str, Any]:
    doc = {"zarr_format": 2, "shape": [10, 7], "chunks": [4, 3], "dtype": "<f8",
           "compressor": {"id": "zstd", "level": 1}, "fill_value": "NaN", "order": "C",
           "filters": None, "dimension_separator": "."}
    doc.update(kw)
    return doc


V2_ARRAYS = [
    _v2_array(),
    _v2_array(dtype=">i4", fill_value=-7, order="F", dimension_separator="/",
              compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                          "blocksize": 0},
              filters=[{"id": "delta", "dtype": ">i4"}]),
    _v2_array(shape=[5], chunks=[2], dtype="|S3", fill_value="YWJj", compressor=None),
    _v2_array(shape=[5], chunks=[2], dtype="<U2", fill_value="hi",
              compressor={"id": "zlib", "level": 1}),
    _v2_array(shape=[4], chunks=[3], dtype="|O", fill_value="",
              filters=[{"id": "vlen-utf8"}], compressor=None),
    _v2_array(shape=[4], chunks=[3], dtype=[["a", "<i4"], ["b", "|S2", [2]]],
              fill_value="AAAAAAAAAAA=", compressor=None),
    _v2_array(shape=[3], chunks=[2], dtype="<c16", fill_value=["NaN", 2.0],
              compressor={"id": "gzip", "level": 1}),
    _v2_array(shape=[3], chunks=[2], dtype="<M8[ns]", fill_value=0, compressor=None),
    _v2_array(shape=[3], chunks=[2], dtype="|b1", fill_value=True, compressor=None),
]

V2_ZMETADATA = {
    "zarr_consolidated_format": 1,
    "metadata": {
        ".zgroup": {"zarr_format": 2}, ".zattrs": {"title": "t"},
        "arr/.zarray": V2_ARRAYS[0], "arr/.zattrs": {"_ARRAY_DIMENSIONS": ["y", "x"]},
        "sub/.zgroup": {"zarr_format": 2},
        "sub/x/.zarray": V2_ARRAYS[1],
    },
}

DRAFT_ENTRY = {
    DRAFT_2022: {"zarr_format": "https://purl.org/zarr/spec/core/3.0",
                 "metadata_encoding": {"type": "json", "metadata_key_suffix": ".json"},
                 "extensions": [{"extension": "http://example.org/x", "must_understand": False}]},
    ZARRITA: {"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
              "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0",
              "metadata_key_suffix": ".json", "extensions": []},
}
DRAFT_META = {DRAFT_2022: "meta", ZARRITA: "meta/root"}
DRAFT_ARRAYS = [
    (DRAFT_2022, {
        "shape": [5, 6, 7], "data_type": ">i4",
        "chunk_grid": {"type": "regular", "chunk_shape": [2, 4, 3], "separator": "/"},
        "chunk_memory_layout": "F", "fill_value": -7,
        "codecs": [{"type": "https://purl.org/zarr/spec/codec/endian/1.0",
                    "configuration": {"endian": "big"}},
                   {"type": "https://purl.org/zarr/spec/codec/blosc/1.0",
                    "configuration": {"cname": "zstd", "clevel": 3, "shuffle": 1,
                                      "blocksize": 0}}],
        "extensions": [], "attributes": {"u": "m"}}),
    (DRAFT_2022, {
        "shape": [7, 11], "data_type": "float64",
        "chunk_grid": {"type": "regular", "chunk_shape": [3, 4], "separator": "."},
        "chunk_memory_layout": "C", "fill_value": "0x7ff8000000000000",
        "codecs": [{"type": "https://purl.org/zarr/spec/codecs/gzip/1.0",
                    "configuration": {"level": 1}},
                   {"type": "https://purl.org/zarr/spec/codec/transpose/1.0",
                    "configuration": {"order": "F"}}][:1],
        "extensions": [], "attributes": {}}),
    (ZARRITA, {
        "attributes": {}, "chunk_grid": {"chunk_shape": [2], "separator": "/",
                                         "type": "regular"},
        "chunk_memory_layout": "C",
        "compressor": {"codec": "https://purl.org/zarr/spec/codec/blosc/1.0",
                       "configuration": {"blocksize": 0, "clevel": 1, "cname": "zstd",
                                         "shuffle": 2}},
        "data_type": {"extension": "https://example.org/complex-dtypes/v1.0.html",
                      "fallback": None, "type": "<c16"},
        "extensions": [], "fill_value": [1.0, 2.0], "shape": [5]}),
    (ZARRITA, {
        "attributes": {}, "chunk_grid": {"chunk_shape": [3, 2], "separator": ".",
                                         "type": "regular"},
        "chunk_memory_layout": "F",
        "compressor": {"codec": "https://purl.org/zarr/spec/codec/lz4/1.0",
                       "configuration": {"acceleration": 1}},
        "data_type": "<u2", "extensions": [], "fill_value": None, "shape": [4, 5]}),
]

# -- the mutation engine ----------------------------------------------------------------

NESTED: Any = []
for _ in range(60):
    NESTED = [NESTED]
GARBAGE: list[Any] = [
    None, True, False, 0, 1, -1, 2, 255, 256, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1,
    2**64, -(2**63), -(2**63) - 1, 10**30, -(10**30), 0.5, -0.0, 1e308, -1e-320,
    float("nan"), float("inf"), float("-inf"),
    "", "x", "NaN", "Infinity", "-Infinity", "+Infinity", "nan", "inf", "1e999", "0x7fc00000",
    "0x", "0b1", "0xZZ", "0x" + "f" * 40, "<f8", "|O", "float32", "r0", "r7", "r8", "r99999999999",
    "C", "F", ".", "/", "\\", "../../etc", "a//b", "/abs", "c:\\x", "__x", "zarr.json",
    "\x00", "\ud800", "é" * 3, "x" * 300,
    [], [0], [-1], [0, 0], [1, 2, 3], [2**63], [None], ["a"], [[1]], [True], [1.5],
    [1] * 40, {}, {"name": "x"}, {"name": None}, {"must_understand": False},
    {"must_understand": True}, {"name": "bytes", "configuration": []},
    {"id": "zstd", "level": 99}, {"a": {"b": {"c": [{}]}}}, NESTED,
]
ODD_NAMES = ["", ".", "..", "../../etc", "a/../b", "/abs", "a//b", "__meta", "zarr.json",
             "x\x00y", "a\\b", "\ud800", "é", "new member", "c:", "c:x"]


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _numeric_variants(v: Any) -> list[Any]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return []
    out: list[Any] = [-v, 0, v * 2**40, v + 2**63, -(2**63) - 1, 2**64, float(v), str(v), [v]]
    if isinstance(v, float) and v == v:
        out.append(int(v) if math.isfinite(v) else 0)
    return out


@st.composite
def mutate(draw: Any, doc: Any, protect_root: bool = True) -> tuple[Any, list[tuple]]:
    """``doc`` with 1-3 structured mutations; returns it and the mutated paths."""
    doc = copy.deepcopy(doc)
    hit: list[tuple] = []
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if protect_root and len(paths) > 1:
            paths = paths[1:]
        path = draw(st.sampled_from(paths))
        target = _get(doc, path)
        ops = ["replace", "retype"]
        if path:
            ops.append("delete")
        if isinstance(target, dict):
            ops += ["add", "rename"] if target else ["add"]
        if isinstance(target, list):
            ops += ["append", "dup"]
        if _numeric_variants(target):
            ops += ["numeric", "numeric"]
        op = draw(st.sampled_from(ops))
        parent = _get(doc, path[:-1]) if path else None
        new: Any
        if op == "delete":
            del parent[path[-1]]
            hit.append(path)
            continue
        if op == "replace":
            new = copy.deepcopy(draw(st.sampled_from(GARBAGE)))
        elif op == "retype":
            new = draw(st.sampled_from([
                json.dumps(target, allow_nan=True), [target], {"value": target},
                None, True, 3, "3"]))
        elif op == "numeric":
            new = draw(st.sampled_from(_numeric_variants(target)))
        elif op == "add":
            name = draw(st.sampled_from(["extra", "must_understand", "configuration", "name",
                                         "x" * 40, "é"]))
            value = draw(st.sampled_from([{"must_understand": False}, {"must_understand": True},
                                          {"must_understand": "no"}, {}, 1, None, "v",
                                          {"name": "x", "must_understand": False}]))
            target[name] = copy.deepcopy(value)
            hit.append((*path, name))
            continue
        elif op == "rename":
            old = draw(st.sampled_from(sorted(target, key=str)))
            name = draw(st.sampled_from(ODD_NAMES))
            target[name] = target.pop(old)
            hit.append((*path, old))
            hit.append((*path, name))
            continue
        elif op == "append":
            extra = draw(st.sampled_from(GARBAGE[:30] + [target[0] if target else 1]))
            target.append(copy.deepcopy(extra))
            hit.append(path)
            continue
        else:  # dup
            if target:
                target.extend(copy.deepcopy(target))
            else:
                target.append(0)
            hit.append(path)
            continue
        if path:
            parent[path[-1]] = new
        else:
            doc = new
        hit.append(path)
    return doc, hit


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, allow_nan=True).encode()


# -- checks -------------------------------------------------------------------------------

#: a mutation of the top-level member M may be reported as a problem of any of these
RELATED_V3 = {
    "zarr_format": {"zarr_format"},
    "node_type": {"node_type"},
    "shape": {"shape", "chunk_shape", "chunk_grid", "dimension_names", "codecs", "transpose",
              "sharding"},
    "data_type": {"data_type", "fill_value", "codecs", "bytes", "blosc"},
    "chunk_grid": {"chunk_grid", "chunk_shape", "shape", "codecs", "sharding", "transpose"},
    "chunk_key_encoding": {"chunk_key_encoding"},
    "fill_value": {"fill_value"},
    "codecs": {"codecs", "codec"},
    "attributes": {"attributes"},
    "dimension_names": {"dimension_names"},
    "storage_transformers": {"storage_transformers"},
}
RELATED_V2 = {
    "zarr_format": {"zarr_format"},
    "shape": {"shape", "chunks"},
    "chunks": {"chunks", "shape"},
    "dtype": {"dtype", "fill_value", "filters", "compressor", "chunks"},
    "compressor": {"compressor"},
    "filters": {"filters", "dtype", "fill_value"},
    "fill_value": {"fill_value"},
    "order": {"order"},
    "dimension_separator": {"dimension_separator"},
}
RELATED_DRAFT = {
    "shape": {"shape", "chunk_shape", "chunk_grid", "transpose", "codecs"},
    "data_type": {"data_type", "fill_value", "codecs", "compressor", "endian", "blosc"},
    "chunk_grid": {"chunk_grid", "chunk_shape", "shape"},
    "chunk_memory_layout": {"chunk_memory_layout"},
    "fill_value": {"fill_value"},
    "codecs": {"codecs"},
    "compressor": {"compressor"},
    "extensions": {"extensions", "extension"},
    "storage_transformers": {"storage_transformers"},
    "attributes": {"attributes", "filters"},
    "dimension_separator": {"dimension_separator"},
}


def _names_member(msg: str, hit: list[tuple], related: dict[str, set[str]]) -> bool:
    """Whether ``msg`` names a member touched by one of the mutations ``hit``."""
    words: set[str] = set()
    for path in hit:
        if not path:
            return True  # the whole document was replaced: nothing specific to name
        top = path[0]
        words.add(str(top))
        words |= related.get(str(top), set())
        words |= {str(p) for p in path if isinstance(p, str)}
    return any(w and (repr(w)[1:-1] in msg or w in msg) for w in words)


def _check_error(e: BaseException, where: str, hit: list[tuple],
                 related: dict[str, set[str]]) -> None:
    assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
    msg = str(e)
    assert where in msg, f"message does not name {where!r}: {msg}"
    assert _names_member(msg, hit, related), f"message names none of {hit}: {msg}"


def _exercise_array(a: Any) -> None:
    """Small reads of a freshly opened array (nothing stored: fill values), then, for a
    writable array with small chunks, a write/read round trip."""
    sel = tuple(slice(0, 2) for _ in a.shape)
    got = np.asarray(a[sel])
    assert got.shape == tuple(min(2, s) for s in a.shape)
    if a.size and a.dtype.kind not in "OV" and a.dtype.fields is None:
        fill = a.fill_value
        if fill is not None and not (isinstance(fill, float) and math.isnan(fill)):
            assert np.all((got == fill) | (got != got)), (got, fill)
    corner = tuple(s - 1 for s in a.shape)
    if a.size:
        a[corner]
    # a write touches whole stored chunks: shards, for a sharded array
    nbytes = math.prod(a.metadata.chunks) * max(a.dtype.itemsize, 1)
    if not a.read_only and a.size and nbytes <= 1 << 20 and a.dtype.kind not in "OV":
        try:
            value = np.ones(got.shape, dtype=a.dtype)
        except (TypeError, ValueError):
            return
        try:
            a[sel] = value
        except CodecError as e:
            # a numcodecs configuration is only checked by numcodecs when it encodes
            # ({"id": "zlib", "level": null} decodes fine): reads work, writes fail cleanly
            assert a.metadata.zarr_format == 2 and "numcodecs" in str(e), e
            return
        back = a[sel]
        if a.metadata.zarr_format == 2 and a.metadata.filters:
            return  # numcodecs filters with a mutated config (delta dtype) may be lossy
        np.testing.assert_array_equal(back, value)


def _v3_store(doc_raw: bytes) -> MemoryStore:
    s = MemoryStore()
    s.set("zarr.json", _dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    s.set(f"{GROUP}/zarr.json", _dumps({"zarr_format": 3, "node_type": "group"}))
    s.set(f"{ARR}/zarr.json", doc_raw)
    return s


def _check_v3_array(doc: Any, hit: list[tuple]) -> str:
    raw = _dumps(doc)
    try:
        parse_metadata(raw, path=ARR, key=f"{ARR}/zarr.json")
        parsed = True
    except Exception as e:  # noqa: BLE001 - the check itself tells what may leak
        _check_error(e, ARR, hit, RELATED_V3)
        parsed = False
    for mode in ("r", "r+"):
        s = _v3_store(raw)
        try:
            node = zarrfast.open(s, path=ARR, mode=mode)
        except Exception as e:  # noqa: BLE001
            _check_error(e, ARR, hit, RELATED_V3)
            assert not parsed, f"the parser accepts the document but open() refuses it: {e}"
            return "refused"
        assert parsed, "open() accepts a document the parser refuses"
        if isinstance(node, zarrfast.Array):
            _exercise_array(node)
    return "opened"


# -- tests ----------------------------------------------------------------------------------


def test_unmutated_documents_open() -> None:
    """The documents the fuzzers start from are valid (so mutants test one change)."""
    for doc in V3_ARRAYS:
        assert _check_v3_array(doc, []) == "opened"
    for doc in V2_ARRAYS:
        assert _check_v2_array(doc, []) == "opened"
    for layout, doc in DRAFT_ARRAYS:
        s = _draft_store(layout, DRAFT_ENTRY[layout], _dumps(doc))
        _exercise_array(zarrfast.open_array(s, path=ARR, mode="r"))
    for doc, zarr_json in [(V3_GROUP, True), (V2_ZMETADATA, False)]:
        s = MemoryStore()
        s.set(f"{GROUP}/zarr.json" if zarr_json else f"{GROUP}/.zmetadata", _dumps(doc))
        if not zarr_json:
            s.set(f"{GROUP}/.zgroup", b'{"zarr_format": 2}')
        g = zarrfast.open_group(s, path=GROUP, mode="r")
        assert sorted(name for name, _ in g.members(max_depth=None)) == ["arr", "sub", "sub/x"]


@FUZZ
@given(data=st.data(), base=st.sampled_from(V3_ARRAYS))
def test_v3_array_mutations(data: Any, base: dict) -> None:
    doc, hit = data.draw(mutate(base))
    event(_check_v3_array(doc, hit))


def _check_group_consolidated(s: MemoryStore, where: str) -> None:
    try:
        g = zarrfast.open_group(s, path=GROUP, mode="r")
        for _name, node in g.members(max_depth=None):
            if isinstance(node, zarrfast.Array):
                _exercise_array(node)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
        assert where in str(e), f"message does not name {where!r}: {e}"


@FUZZ
@given(data=st.data())
def test_v3_consolidated_mutations(data: Any) -> None:
    doc, hit = data.draw(mutate(V3_GROUP))
    s = MemoryStore()
    s.set(f"{GROUP}/zarr.json", _dumps(doc))
    try:
        parse_metadata(_dumps(doc), path=GROUP, key=f"{GROUP}/zarr.json")
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
        assert GROUP in str(e)
    _check_group_consolidated(s, GROUP)


def _check_v2_array(doc: Any, hit: list[tuple], attrs: Any = None) -> str:
    raw = _dumps(doc)
    raw_attrs = None if attrs is None else _dumps(attrs)
    try:
        ArrayMetadataV2.from_documents(raw, raw_attrs, path=ARR, key=f"{ARR}/.zarray")
        parsed = True
    except Exception as e:  # noqa: BLE001
        _check_error(e, ARR, hit, RELATED_V2)
        parsed = False
    for mode in ("r", "r+"):
        s = MemoryStore()
        s.set(".zgroup", b'{"zarr_format": 2}')
        s.set(f"{GROUP}/.zgroup", b'{"zarr_format": 2}')
        s.set(f"{ARR}/.zarray", raw)
        if raw_attrs is not None:
            s.set(f"{ARR}/.zattrs", raw_attrs)
        try:
            a = zarrfast.open_array(s, path=ARR, mode=mode)
        except Exception as e:  # noqa: BLE001
            _check_error(e, ARR, hit, RELATED_V2)
            assert not parsed, f"the parser accepts the document but open() refuses it: {e}"
            return "refused"
        assert parsed
        _exercise_array(a)
    return "opened"


@FUZZ
@given(data=st.data(), base=st.sampled_from(V2_ARRAYS))
def test_v2_array_mutations(data: Any, base: dict) -> None:
    doc, hit = data.draw(mutate(base))
    event(_check_v2_array(doc, hit))


@FUZZ
@given(attrs=st.sampled_from(GARBAGE), group=st.sampled_from(GARBAGE[:20] + [
    {"zarr_format": 2}, {"zarr_format": 3}, {"zarr_format": 2, "x": NESTED}]))
def test_v2_zattrs_and_zgroup_mutations(attrs: Any, group: Any) -> None:
    s = MemoryStore()
    s.set(f"{GROUP}/.zgroup", _dumps(group))
    s.set(f"{GROUP}/.zattrs", _dumps(attrs))
    try:
        GroupMetadataV2.from_documents(_dumps(group), _dumps(attrs), path=GROUP,
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
    s.set(f"{GROUP}/.zmetadata", _dumps(doc))
    _check_group_consolidated(s, GROUP)


def _draft_store(layout: str, entry: Any, doc_raw: bytes) -> MemoryStore:
    s = MemoryStore()
    s.set("zarr.json", _dumps(entry))
    s.set(f"{DRAFT_META[layout]}/{ARR}.array.json", doc_raw)
    return s


@FUZZ
@given(data=st.data(), case=st.sampled_from(DRAFT_ARRAYS))
def test_draft_array_mutations(data: Any, case: tuple[str, dict]) -> None:
    layout, base = case
    doc, hit = data.draw(mutate(base))
    key = f"{DRAFT_META[layout]}/{ARR}.array.json"
    try:
        convert_array_document(doc, layout=layout, key=key)
        parsed = True
    except Exception as e:  # noqa: BLE001
        _check_error(e, ARR, hit, RELATED_DRAFT)
        parsed = False
    s = _draft_store(layout, DRAFT_ENTRY[layout], _dumps(doc))
    try:
        a = zarrfast.open_array(s, path=ARR, mode="r")
    except Exception as e:  # noqa: BLE001
        _check_error(e, ARR, hit, RELATED_DRAFT)
        assert not parsed
        return
    assert parsed
    _exercise_array(a)


@FUZZ
@given(data=st.data(), layout=st.sampled_from([DRAFT_2022, ZARRITA]))
def test_draft_entry_point_and_group_mutations(data: Any, layout: str) -> None:
    entry, _ = data.draw(mutate(DRAFT_ENTRY[layout], protect_root=False))
    group, _ = data.draw(mutate({"attributes": {"a": [1, 2]}}, protect_root=False))
    try:
        parse_entry_point(_dumps(entry))
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
    s.set("zarr.json", _dumps(entry))
    s.set(gkey, _dumps(group))
    s.set(f"{DRAFT_META[layout]}/{ARR}.array.json", _dumps(DRAFT_ARRAYS[-1][1]))
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
            s.set("zarr.json", _dumps(DRAFT_ENTRY[DRAFT_2022]))
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
    s = _v3_store(b'{"zarr_format": 3, ')
    with pytest.raises(MetadataError, match="grp/arr/zarr.json.*not valid JSON"):
        zarrfast.open_array(s, path=ARR, mode="r")
    s = _v3_store(b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(MetadataError, match="grp/arr/zarr.json"):
        zarrfast.open_array(s, path=ARR, mode="r")


# -- targeted mutations with the member the message must name ---------------------------

V3_TARGETED = [
    ({"shape": [-1, 7]}, "shape"),
    ({"shape": [2**63, 1]}, "shape"),
    ({"shape": [10]}, "shape"),
    ({"shape": "10"}, "shape"),
    ({"shape": [10.0, 7]}, "shape"),
    ({"shape": [True, 7]}, "shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 3]}}},
     "chunk_shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}}, "chunk_shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2**62, 2**62]}}},
     "chunk_shape"),
    ({"chunk_grid": {"name": "rectilinear", "configuration": {}}}, "chunk_grid"),
    ({"chunk_grid": {"name": "regular"}}, "chunk_grid"),
    ({"data_type": "float128"}, "data_type"),
    ({"data_type": {"name": "float32", "configuration": {"x": 1}}}, "data_type"),
    ({"data_type": "r0"}, "data_type"),
    ({"data_type": "r12"}, "data_type"),
    ({"data_type": "r" + "8" * 30}, "data_type"),
    ({"data_type": None}, "data_type"),
    ({"fill_value": "nan"}, "fill_value"),
    ({"fill_value": "0x7fc0"}, "fill_value"),
    ({"fill_value": 1e300}, "fill_value"),
    ({"fill_value": None}, "fill_value"),
    ({"fill_value": [1, 2]}, "fill_value"),
    ({"data_type": "int8", "fill_value": 128}, "fill_value"),
    ({"data_type": "int8", "fill_value": 1.0}, "fill_value"),
    ({"data_type": "uint64", "fill_value": -1}, "fill_value"),
    ({"data_type": "uint64", "fill_value": 2**64}, "fill_value"),
    ({"data_type": "bool", "fill_value": 0, "codecs": [{"name": "bytes"}]}, "fill_value"),
    ({"data_type": "complex64", "fill_value": 1.0}, "fill_value"),
    ({"data_type": "complex64", "fill_value": ["NaN", "x"]}, "fill_value"),
    ({"data_type": "float64", "fill_value": "0x7ff8"}, "fill_value"),
    ({"data_type": "float64", "fill_value": "-NaN"}, "fill_value"),
    ({"data_type": "r16", "fill_value": [1, 256], "codecs": [{"name": "bytes"}]},
     "fill_value"),
    ({"data_type": "r16", "fill_value": "AAA=", "codecs": [{"name": "bytes"}]}, "fill_value"),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}},
     "chunk_key_encoding"),
    ({"chunk_key_encoding": {"name": "v3"}}, "chunk_key_encoding"),
    ({"chunk_key_encoding": 5}, "chunk_key_encoding"),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": None}}},
     "chunk_key_encoding"),
    ({"codecs": [{"name": "lzfse"}]}, "codecs[0]"),
    ({"codecs": [LE, {"name": "lzfse", "must_understand": True}]}, "codecs[1]"),
    ({"codecs": [LE, {"name": "gzip", "configuration": {"level": 10}}]}, "codecs[1]"),
    ({"codecs": [LE, {"name": "zstd", "configuration": {"level": 2**40}}]}, "codecs[1]"),
    ({"codecs": [LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                         "shuffle": "shuffle"}}]}, "codecs[1]"),
    ({"codecs": [{"name": "bytes"}]}, "codecs[0]"),
    ({"codecs": []}, "codecs"),
    ({"codecs": {"name": "bytes"}}, "codecs"),
    ({"codecs": [{"name": "transpose", "configuration": {"order": [0, 0]}}, LE]}, "codecs[0]"),
    ({"codecs": [{"name": "transpose", "configuration": {"order": [0, 1, 2]}}, LE]},
     "codecs[0]"),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [3, 3], "codecs": [LE], "index_codecs": [LE]}}]}, "codecs[0]"),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [0, 3], "codecs": [LE], "index_codecs": [LE]}}]}, "codecs[0]"),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 3], "codecs": [LE], "index_codecs": [
            LE, {"name": "gzip", "configuration": {"level": 1}}]}}]}, "codecs[0]"),
    ({"dimension_names": ["a"]}, "dimension_names"),
    ({"dimension_names": "ab"}, "dimension_names"),
    ({"dimension_names": [1, 2]}, "dimension_names"),
    ({"storage_transformers": [{"name": "x"}]}, "storage_transformers"),
    ({"storage_transformers": [5]}, "storage_transformers"),
    ({"storage_transformers": {}}, "storage_transformers"),
    ({"attributes": []}, "attributes"),
    ({"unknown_thing": 1}, "unknown_thing"),
    ({"unknown_thing": {"must_understand": True}}, "unknown_thing"),
    ({"unknown_thing": {"must_understand": "false"}}, "unknown_thing"),
    ({"zarr_format": 2}, "zarr_format"),
    ({"zarr_format": "3"}, "zarr_format"),
    ({"node_type": "grp"}, "node_type"),
]


@pytest.mark.parametrize("change,member", V3_TARGETED, ids=[m for _c, m in V3_TARGETED])
def test_v3_targeted_errors_name_node_and_member(change: dict, member: str,
                                                 tmp_path: Any) -> None:
    doc = _v3_array(**change)
    mem = _v3_store(_dumps(doc))
    local = LocalStore(tmp_path)  # the same documents on a directory store
    for key in mem.list():
        local.set(key, mem.get(key))
    for s in (mem, local):
        with pytest.raises(ZarrfastError) as info:
            zarrfast.open_array(s, path=ARR, mode="r")
        assert ARR in str(info.value) and member in str(info.value), str(info.value)
        with pytest.raises(ZarrfastError):
            zarrfast.open(s, path=ARR, mode="r")


V3_VALID = [
    {"unknown_thing": {"must_understand": False, "x": [1, {}]}},
    {"codecs": [LE, {"name": "lzfse", "must_understand": False}]},
    {"storage_transformers": [{"name": "x", "must_understand": False}]},
    {"data_type": {"name": "float32"}},
    {"fill_value": "-Infinity"},
    {"fill_value": "0x7fc00001"},
    {"fill_value": 3},
    {"shape": [0, 0]},
    {"shape": [2**31, 2**32 - 1]},
    {"chunk_key_encoding": "default"},
    {"chunk_key_encoding": {"name": "v2"}},
    {"dimension_names": None},
    {"attributes": {"nested": [[[[{"a": None}]]]], "nan": float("nan")}},
]


@pytest.mark.parametrize("change", V3_VALID, ids=range(len(V3_VALID)))
def test_v3_valid_variants_open_and_round_trip(change: dict) -> None:
    assert _check_v3_array(_v3_array(**change), []) == "opened"


V2_TARGETED = [
    ({"shape": [-1, 7]}, "shape"),
    ({"shape": [10]}, "chunks"),
    ({"chunks": [0, 3]}, "chunks"),
    ({"chunks": [2**62, 2**62]}, "chunks"),
    ({"chunks": None}, "chunks"),
    ({"shape": [2**63, 1]}, "shape"),
    ({"dtype": "<f3"}, "dtype"),
    ({"dtype": "float32x"}, "dtype"),
    ({"dtype": [["a"]]}, "dtype"),
    ({"dtype": [["a", "<i4", "x"]]}, "dtype"),
    ({"dtype": [["a", "<i4", [-1]]]}, "dtype"),
    ({"dtype": [["a", "<i4"], ["a", "<i4"]]}, "dtype"),
    ({"dtype": "|V0"}, "dtype"),
    ({"dtype": "<U0"}, "dtype"),
    ({"dtype": "<i4", "fill_value": 1.5}, "fill_value"),
    ({"dtype": "<i4", "fill_value": 2**40}, "fill_value"),
    ({"dtype": "<i4", "fill_value": "NaN"}, "fill_value"),
    ({"dtype": "|S3", "fill_value": "!!not base64"}, "fill_value"),
    ({"dtype": "<c8", "fill_value": [1]}, "fill_value"),
    ({"dtype": "<M8[ns]", "fill_value": "yesterday"}, "fill_value"),
    ({"dtype": "<f4", "fill_value": 1e300}, "fill_value"),
    ({"dtype": "|b1", "fill_value": "x"}, "fill_value"),
    ({"fill_value": {"x": 1}}, "fill_value"),
    ({"order": "K"}, "order"),
    ({"dimension_separator": "-"}, "dimension_separator"),
    ({"compressor": {"id": "nope"}}, "compressor"),
    ({"compressor": {"id": "zstd", "levle": 1}}, "compressor"),
    ({"compressor": {"id": "blosc", "cname": "nope"}}, "compressor"),
    ({"compressor": {"id": 5}}, "compressor"),
    ({"compressor": "zstd"}, "compressor"),
    ({"filters": [{"id": "delta"}]}, "filters"),
    ({"filters": {"id": "delta"}}, "filters"),
    ({"filters": [{"id": "nope"}]}, "filters"),
    ({"dtype": "|O", "filters": None}, "filters"),
    ({"zarr_format": 3}, "zarr_format"),
    ({"dtype": "<U2", "fill_value": 5}, "fill_value"),
    ({"dtype": "<M8", "fill_value": 0}, "dtype"),
    ({"dtype": "i4,i4"}, "dtype"),
    ({"dtype": "(100000000)i4"}, "dtype"),
    ({"dtype": [["a", "<i4", [2**20, 2**20]]]}, "dtype"),
    ({"dtype": [["a", "<i4"]], "fill_value": "AAA"}, "fill_value"),
    ({"dtype": "|V4", "fill_value": 7}, "fill_value"),
    ({"dtype": "|O", "filters": [{"id": "vlen-utf8"}], "fill_value": [0, 2]}, "fill_value"),
]


@pytest.mark.parametrize("change,member", V2_TARGETED, ids=[m for _c, m in V2_TARGETED])
def test_v2_targeted_errors_name_node_and_member(change: dict, member: str) -> None:
    s = MemoryStore()
    s.set(f"{ARR}/.zarray", _dumps(_v2_array(**change)))
    with pytest.raises(ZarrfastError) as info:
        zarrfast.open_array(s, path=ARR, mode="r", zarr_format=2)
    assert ARR in str(info.value) and member in str(info.value), str(info.value)


V2_VALID = [
    {"dtype": "|S1", "fill_value": ""},
    {"dtype": "|c", "fill_value": ""},
    {"dtype": "|S4", "fill_value": None},
    {"dtype": "<m8[s]", "fill_value": -5},
    {"dtype": "|V3", "fill_value": "AAEC", "compressor": None},
    {"dtype": "<c8", "fill_value": "NaN"},
    {"dtype": "bool", "fill_value": False},
    {"shape": [2**31, 2**31], "chunks": [1000, 1000]},
    {"fill_value": None},
    {"unknown_member": [1, 2]},
]


@pytest.mark.parametrize("change", V2_VALID, ids=range(len(V2_VALID)))
def test_v2_valid_variants_open_and_round_trip(change: dict) -> None:
    assert _check_v2_array(_v2_array(**change), []) == "opened"


# -- node names in documents ---------------------------------------------------------------

BAD_MEMBER_NAMES = ["../../etc", "..", ".", "a/../b", "/abs", "a//b", "", "__x", "x/", "a\\b",
                    "x\x00"]


@pytest.mark.parametrize("name", BAD_MEMBER_NAMES)
def test_v3_consolidated_member_names_are_validated(name: str) -> None:
    doc = copy.deepcopy(V3_GROUP)
    doc["consolidated_metadata"]["metadata"][name] = V3_ARRAYS[0]
    s = MemoryStore()
    s.set("zarr.json", _dumps(doc))
    with pytest.raises((InvalidNodeNameError, MetadataError)) as info:
        zarrfast.open_group(s, mode="r")
    assert repr(name)[1:-1] in str(info.value) or name in str(info.value), str(info.value)


@pytest.mark.parametrize("name", BAD_MEMBER_NAMES)
def test_v2_zmetadata_keys_are_validated(name: str) -> None:
    doc = copy.deepcopy(V2_ZMETADATA)
    doc["metadata"][f"{name}/.zarray"] = V2_ARRAYS[0]
    s = MemoryStore()
    s.set(".zgroup", b'{"zarr_format": 2}')
    s.set(".zmetadata", _dumps(doc))
    with pytest.raises((InvalidNodeNameError, MetadataError)) as info:
        zarrfast.open_group(s, mode="r")
    assert repr(name)[1:-1] in str(info.value) or name in str(info.value), str(info.value)


def test_draft_hierarchy_entries_are_validated(tmp_path: Any) -> None:
    """A draft hierarchy lists its members from store keys; names that are not node names
    (``__x``) are not members, and paths with ``..`` cannot be opened."""
    s = MemoryStore()
    s.set("zarr.json", _dumps(DRAFT_ENTRY[DRAFT_2022]))
    s.set("meta/group.json", b'{"attributes": {}}')
    s.set("meta/ok.array.json", _dumps(DRAFT_ARRAYS[1][1]))
    s.set("meta/__bad.array.json", _dumps(DRAFT_ARRAYS[1][1]))
    g = zarrfast.open_group(s, mode="r")
    assert list(g) == ["ok"]
    for bad in ["../x", "a/../../b", "__bad"]:
        with pytest.raises(ZarrfastError):
            zarrfast.open_array(s, path=bad, mode="r")


# -- huge valid shapes are lazy ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_huge_shape_opens_and_reads_lazily(fmt: int) -> None:
    s = MemoryStore()
    shape, chunks = [2**31, 2**31], [1000, 1000]
    if fmt == 3:
        s.set("zarr.json", _dumps(_v3_array(
            shape=shape, chunk_grid={"name": "regular",
                                     "configuration": {"chunk_shape": chunks}})))
    else:
        s.set(".zarray", _dumps(_v2_array(shape=shape, chunks=chunks)))
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        a = zarrfast.open_array(s, mode="r+")
        assert a.shape == (2**31, 2**31) and a.size == 2**62
        got = a[2**31 - 3:, :5]
        assert got.shape == (3, 5) and np.isnan(got).all()
        assert np.isnan(a[-1, -1]) and np.isnan(a[123456789, 2**30])
        a[2**30:2**30 + 2, 7] = [1.5, 2.5]
        assert a[2**30:2**30 + 3, 7].tolist()[:2] == [1.5, 2.5]
        assert len(list(s.list())) == 2  # metadata + the one chunk written
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 5, elapsed
    assert peak < 64 << 20, peak


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("shape", [[2**32, 2**32], [2**62, 4], [2**63, 1]])
def test_element_count_overflowing_int64_is_refused(fmt: int, shape: list) -> None:
    s = MemoryStore()
    if fmt == 3:
        s.set("zarr.json", _dumps(_v3_array(shape=shape, chunk_grid={
            "name": "regular", "configuration": {"chunk_shape": [1] * len(shape)}})))
    else:
        s.set(".zarray", _dumps(_v2_array(shape=shape, chunks=[1] * len(shape))))
    with pytest.raises(MetadataValidationError, match=r"shape.*2\*\*63-1"):
        zarrfast.open_array(s, mode="r")
