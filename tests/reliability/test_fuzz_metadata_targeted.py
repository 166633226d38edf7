"""Targeted metadata mutations, each with the member the error message must name (Zarr
v3 and v2), valid variants that must open and round-trip, node names in documents
(consolidated metadata, ``.zmetadata``, draft hierarchies), and huge valid shapes
(opened lazily) or element counts overflowing int64 (refused).
"""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import (
    InvalidNodeNameError,
    MetadataError,
    MetadataValidationError,
    ZarrfastError,
)
from zarrfast.metadata.draft import DRAFT_2022
from zarrfast.storage import LocalStore, MemoryStore

from _helpers import LE
from _helpers.fuzz_metadata import (
    ARR,
    DRAFT_ARRAYS,
    DRAFT_ENTRY,
    V2_ARRAYS,
    V2_ZMETADATA,
    V3_ARRAYS,
    V3_GROUP,
    check_v2_array,
    check_v3_array,
    dump_doc,
    v2_array_doc,
    v3_array_doc,
    v3_store,
)

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
    doc = v3_array_doc(**change)
    mem = v3_store(dump_doc(doc))
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
    {"shape": [2**31, 2**29 - 1]},  # (more bytes than int64 holds: refused)
    {"chunk_key_encoding": "default"},
    {"chunk_key_encoding": {"name": "v2"}},
    {"dimension_names": None},
    {"attributes": {"nested": [[[[{"a": None}]]]], "nan": float("nan")}},
]


@pytest.mark.parametrize("change", V3_VALID, ids=range(len(V3_VALID)))
def test_v3_valid_variants_open_and_round_trip(change: dict) -> None:
    assert check_v3_array(v3_array_doc(**change), []) == "opened"


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
    ({"dtype": "<M8[2generic]"}, "dtype"),
    ({"dtype": ">m8", "fill_value": -5}, "dtype"),  # (generic, not native: np.empty drops it)
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
    s.set(f"{ARR}/.zarray", dump_doc(v2_array_doc(**change)))
    with pytest.raises(ZarrfastError) as info:
        zarrfast.open_array(s, path=ARR, mode="r", zarr_format=2)
    assert ARR in str(info.value) and member in str(info.value), str(info.value)


V2_VALID = [
    {"dtype": "|S1", "fill_value": ""},
    {"dtype": "|c", "fill_value": ""},
    {"dtype": "|S4", "fill_value": None},
    {"dtype": "<m8[s]", "fill_value": -5},
    {"dtype": "<M8", "fill_value": "NaT"},  # (the generic unit, as zarr-python 3.4 reads it)
    {"dtype": "<M8", "fill_value": 0},
    {"dtype": "|V3", "fill_value": "AAEC", "compressor": None},
    {"dtype": "<c8", "fill_value": "NaN"},
    {"dtype": "bool", "fill_value": False},
    {"shape": [2**31, 2**28], "chunks": [1000, 1000]},
    {"fill_value": None},
    {"unknown_member": [1, 2]},
]


@pytest.mark.parametrize("change", V2_VALID, ids=range(len(V2_VALID)))
def test_v2_valid_variants_open_and_round_trip(change: dict) -> None:
    assert check_v2_array(v2_array_doc(**change), []) == "opened"


# -- node names in documents ---------------------------------------------------------------

BAD_MEMBER_NAMES = ["../../etc", "..", ".", "a/../b", "/abs", "a//b", "", "x/", "a\\b",
                    "x\x00"]


@pytest.mark.parametrize("name", BAD_MEMBER_NAMES)
def test_v3_consolidated_member_names_are_validated(name: str) -> None:
    doc = copy.deepcopy(V3_GROUP)
    doc["consolidated_metadata"]["metadata"][name] = V3_ARRAYS[0]
    s = MemoryStore()
    s.set("zarr.json", dump_doc(doc))
    with pytest.raises((InvalidNodeNameError, MetadataError)) as info:
        zarrfast.open_group(s, mode="r")
    assert repr(name)[1:-1] in str(info.value) or name in str(info.value), str(info.value)


@pytest.mark.parametrize("name", BAD_MEMBER_NAMES)
def test_v2_zmetadata_keys_are_validated(name: str) -> None:
    doc = copy.deepcopy(V2_ZMETADATA)
    doc["metadata"][f"{name}/.zarray"] = V2_ARRAYS[0]
    s = MemoryStore()
    s.set(".zgroup", b'{"zarr_format": 2}')
    s.set(".zmetadata", dump_doc(doc))
    with pytest.raises((InvalidNodeNameError, MetadataError)) as info:
        zarrfast.open_group(s, mode="r")
    assert repr(name)[1:-1] in str(info.value) or name in str(info.value), str(info.value)


def test_consolidated_reserved_member_names_are_read() -> None:
    """A name with the ``__`` prefix the spec reserves cannot be created, but consolidated
    metadata listing one (xarray's ``__values__``, written by zarr-python) still opens: the
    member is listed, the rest of the group reads."""
    doc = copy.deepcopy(V3_GROUP)
    doc["consolidated_metadata"]["metadata"]["__values__"] = V3_ARRAYS[0]
    s = MemoryStore()
    s.set("zarr.json", dump_doc(doc))
    assert "__values__" in list(zarrfast.open_group(s, mode="r").keys())
    v2 = copy.deepcopy(V2_ZMETADATA)
    v2["metadata"]["__values__/.zarray"] = V2_ARRAYS[0]
    s = MemoryStore()
    s.set(".zgroup", b'{"zarr_format": 2}')
    s.set(".zmetadata", dump_doc(v2))
    assert "__values__" in list(zarrfast.open_group(s, mode="r").keys())


def test_draft_hierarchy_entries_are_validated(tmp_path: Any) -> None:
    """A draft hierarchy lists its members from store keys; names that are not node names
    (``__x``) are not members, and paths with ``..`` cannot be opened."""
    s = MemoryStore()
    s.set("zarr.json", dump_doc(DRAFT_ENTRY[DRAFT_2022]))
    s.set("meta/group.json", b'{"attributes": {}}')
    s.set("meta/ok.array.json", dump_doc(DRAFT_ARRAYS[1][1]))
    s.set("meta/__bad.array.json", dump_doc(DRAFT_ARRAYS[1][1]))
    g = zarrfast.open_group(s, mode="r")
    assert list(g) == ["ok"]
    for bad in ["../x", "a/../../b", "__bad"]:
        with pytest.raises(ZarrfastError):
            zarrfast.open_array(s, path=bad, mode="r")


# -- huge valid shapes are lazy ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_huge_shape_opens_and_reads_lazily(fmt: int) -> None:
    s = MemoryStore()
    # 2**59 float64 elements: 2**62 bytes, the most int64 offsets can address in powers
    # of two (a larger byte count is refused: test_sizes_beyond_int64)
    shape, chunks = [2**31, 2**28], [1000, 1000]
    if fmt == 3:
        s.set("zarr.json", dump_doc(v3_array_doc(
            shape=shape, chunk_grid={"name": "regular",
                                     "configuration": {"chunk_shape": chunks}})))
    else:
        s.set(".zarray", dump_doc(v2_array_doc(shape=shape, chunks=chunks)))
    tracemalloc.start()
    try:
        a = zarrfast.open_array(s, mode="r+")
        assert a.shape == (2**31, 2**28) and a.size == 2**59
        got = a[2**31 - 3:, :5]
        assert got.shape == (3, 5) and np.isnan(got).all()
        assert np.isnan(a[-1, -1]) and np.isnan(a[123456789, 2**27])
        a[2**30:2**30 + 2, 7] = [1.5, 2.5]
        assert a[2**30:2**30 + 3, 7].tolist()[:2] == [1.5, 2.5]
        assert len(list(s.list())) == 2  # metadata + the one chunk written
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("shape", [[2**32, 2**32], [2**62, 4], [2**63, 1]])
def test_element_count_overflowing_int64_is_refused(fmt: int, shape: list) -> None:
    s = MemoryStore()
    if fmt == 3:
        s.set("zarr.json", dump_doc(v3_array_doc(shape=shape, chunk_grid={
            "name": "regular", "configuration": {"chunk_shape": [1] * len(shape)}})))
    else:
        s.set(".zarray", dump_doc(v2_array_doc(shape=shape, chunks=[1] * len(shape))))
    with pytest.raises(MetadataValidationError, match=r"shape.*2\*\*63-1"):
        zarrfast.open_array(s, mode="r")
