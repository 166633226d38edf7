"""The structured metadata fuzzers' material: valid documents of every kind (Zarr v3
with and without consolidated metadata, Zarr v2, both draft layouts), the mutation
engine, and the checks a mutant must pass (refused with a ``ZarrfastError`` naming
the node and a related member, or opened and read).  Also the seed corpus of
``tests/fuzz/atheris_metadata.py``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import CodecChain
from zarrfast.errors import CodecError, ZarrfastError
from zarrfast.metadata.draft import DRAFT_2022, ZARRITA
from zarrfast.metadata.v2 import ArrayMetadataV2
from zarrfast.metadata.v3 import parse_metadata
from zarrfast.storage import MemoryStore

from _helpers import LE

#: examples per fuzz test (about 1 ms each); ZARRFAST_FUZZ_EXAMPLES=20000 for a long run
FUZZ_EXAMPLES = int(os.environ.get("ZARRFAST_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

pytestmark = pytest.mark.filterwarnings("ignore:.*fallback:UserWarning")

GROUP = "grp"
ARR = "grp/arr"  # every mutated array lives here; errors must name it


def v3_array_doc(**kw: Any) -> dict[str, Any]:
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [10, 7], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN", "codecs": [LE], "attributes": {"units": "K"},
    }
    doc.update(kw)
    return doc


V3_ARRAYS = [
    v3_array_doc(),
    v3_array_doc(data_type="int16", fill_value=-3, dimension_names=["y", None],
              chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
              codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}},
                      {"name": "bytes", "configuration": {"endian": "big"}},
                      {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                          "shuffle": "shuffle", "typesize": 2,
                                                          "blocksize": 0}}]),
    v3_array_doc(shape=[9], data_type="complex64", fill_value=["NaN", 1.5],
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [4]}},
              codecs=[LE, {"name": "gzip", "configuration": {"level": 1}},
                      {"name": "crc32c"}]),
    v3_array_doc(shape=[6, 4], data_type="uint64", fill_value=2**64 - 1,
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [6, 4]}},
              codecs=[{"name": "sharding_indexed", "configuration": {
                  "chunk_shape": [3, 2], "codecs": [LE, {"name": "zstd", "configuration": {
                      "level": 1, "checksum": False}}],
                  "index_codecs": [LE, {"name": "crc32c"}], "index_location": "end"}}]),
    v3_array_doc(shape=[5], data_type="r16", fill_value=[1, 2],
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2]}},
              codecs=[{"name": "bytes"}]),
    v3_array_doc(shape=[], data_type="bool", fill_value=True,
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}},
              codecs=[{"name": "bytes"}], storage_transformers=[]),
    v3_array_doc(shape=[3, 3], data_type="float16", fill_value="0x7e00",
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


def v2_array_doc(**kw: Any) -> dict[str, Any]:
    doc = {"zarr_format": 2, "shape": [10, 7], "chunks": [4, 3], "dtype": "<f8",
           "compressor": {"id": "zstd", "level": 1}, "fill_value": "NaN", "order": "C",
           "filters": None, "dimension_separator": "."}
    doc.update(kw)
    return doc


V2_ARRAYS = [
    v2_array_doc(),
    v2_array_doc(dtype=">i4", fill_value=-7, order="F", dimension_separator="/",
              compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                          "blocksize": 0},
              filters=[{"id": "delta", "dtype": ">i4"}]),
    v2_array_doc(shape=[5], chunks=[2], dtype="|S3", fill_value="YWJj", compressor=None),
    v2_array_doc(shape=[5], chunks=[2], dtype="<U2", fill_value="hi",
              compressor={"id": "zlib", "level": 1}),
    v2_array_doc(shape=[4], chunks=[3], dtype="|O", fill_value="",
              filters=[{"id": "vlen-utf8"}], compressor=None),
    v2_array_doc(shape=[4], chunks=[3], dtype=[["a", "<i4"], ["b", "|S2", [2]]],
              fill_value="AAAAAAAAAAA=", compressor=None),
    v2_array_doc(shape=[3], chunks=[2], dtype="<c16", fill_value=["NaN", 2.0],
              compressor={"id": "gzip", "level": 1}),
    v2_array_doc(shape=[3], chunks=[2], dtype="<M8[ns]", fill_value=0, compressor=None),
    v2_array_doc(shape=[3], chunks=[2], dtype="|b1", fill_value=True, compressor=None),
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


def dump_doc(doc: Any) -> bytes:
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


def check_error(e: BaseException, where: str, hit: list[tuple],
                 related: dict[str, set[str]]) -> None:
    assert isinstance(e, ZarrfastError), f"{type(e).__name__} leaked: {e!r}"
    msg = str(e)
    assert where in msg, f"message does not name {where!r}: {msg}"
    assert _names_member(msg, hit, related), f"message names none of {hit}: {msg}"


def exercise_array(a: Any) -> None:
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


def v3_store(doc_raw: bytes) -> MemoryStore:
    s = MemoryStore()
    s.set("zarr.json", dump_doc({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    s.set(f"{GROUP}/zarr.json", dump_doc({"zarr_format": 3, "node_type": "group"}))
    s.set(f"{ARR}/zarr.json", doc_raw)
    return s


def check_v3_array(doc: Any, hit: list[tuple]) -> str:
    raw = dump_doc(doc)
    try:
        md = parse_metadata(raw, path=ARR, key=f"{ARR}/zarr.json")
        if md.node_type == "array":  # opening also parses the codec chain
            CodecChain.from_metadata(md, node=f"array {ARR!r}")
        parsed = True
    except Exception as e:  # noqa: BLE001 - the check itself tells what may leak
        check_error(e, ARR, hit, RELATED_V3)
        parsed = False
    for mode in ("r", "r+"):
        s = v3_store(raw)
        try:
            node = zarrfast.open(s, path=ARR, mode=mode)
        except Exception as e:  # noqa: BLE001
            check_error(e, ARR, hit, RELATED_V3)
            assert not parsed, f"the parser accepts the document but open() refuses it: {e}"
            return "refused"
        assert parsed, "open() accepts a document the parser refuses"
        if isinstance(node, zarrfast.Array):
            exercise_array(node)
    return "opened"


def check_v2_array(doc: Any, hit: list[tuple], attrs: Any = None) -> str:
    raw = dump_doc(doc)
    raw_attrs = None if attrs is None else dump_doc(attrs)
    try:
        md = ArrayMetadataV2.from_documents(raw, raw_attrs, path=ARR, key=f"{ARR}/.zarray")
        CodecChain.from_metadata(md, node=f"array {ARR!r}")  # as opening the array does
        parsed = True
    except Exception as e:  # noqa: BLE001
        check_error(e, ARR, hit, RELATED_V2)
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
            check_error(e, ARR, hit, RELATED_V2)
            assert not parsed, f"the parser accepts the document but open() refuses it: {e}"
            return "refused"
        assert parsed
        exercise_array(a)
    return "opened"
