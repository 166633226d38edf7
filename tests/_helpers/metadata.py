"""What the Zarr v3 metadata tests share: a valid array document to vary, parsing, the
check that an error names the node path and the member, and complete documents.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from zarrfast.codecs import CodecChain
from zarrfast.errors import ZarrfastError
from zarrfast.metadata import parse_data_type
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

from _helpers import LE

PATH = "a/b"
KEY = "a/b/zarr.json"


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


def codecs_of(md: Any, path: str = PATH) -> tuple[Any, ...]:
    """The codec objects of an array's metadata, as opening the array parses them."""
    return CodecChain.from_metadata(md, node=f"array {path!r}").codecs


def parse_and_open(doc: Any, path: str = PATH) -> ArrayMetadata | GroupMetadata:
    """What opening the node checks: the document, and an array's codec chain."""
    md = parse(doc, path)
    if isinstance(md, ArrayMetadata):
        codecs_of(md, path)
    return md


def expect_error(doc: Any, cls: type[Exception], *fragments: str) -> ZarrfastError:
    """``doc`` must fail with ``cls`` when opened; the message names the node path and every
    fragment."""
    with pytest.raises(cls) as info:
        parse_and_open(doc)
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
