"""``zarrfast.api.asynchronous._get_shape_chunks`` and ``_like_args``, zarr-python 3.4's
helpers of the ``*_like`` functions, answer as zarr-python 3.4.2's (the peer)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

import zarrfast
from zarrfast.api.asynchronous import _get_shape_chunks, _like_args

pytestmark = pytest.mark.interop

_PEER = """
import json
from dataclasses import dataclass
import numpy as np
import zarr
from zarr.api.asynchronous import _get_shape_chunks, _like_args

@dataclass
class WithChunks:
    shape: tuple
    chunks: tuple

@dataclass
class WithChunkLen:
    shape: tuple
    chunklen: int

def plain(d):
    out = {}
    for k, v in d.items():
        if k == "codecs":
            v = [c.to_dict() for c in v]
        elif k == "dtype":
            v = str(v)
        elif isinstance(v, np.generic):
            v = [type(v).__name__, v.item()]
        out[k] = v
    return json.loads(json.dumps(out))

shapes = [_get_shape_chunks(x) for x in (
    {}, np.zeros((1, 2)), WithChunks((1, 2), (1, 2)), WithChunks((1, 2), (1,)),
    WithChunkLen((10, 10), 1))]
v2 = zarr.create_array({}, shape=(100,), chunks=(10,), dtype="f8", compressors=None,
                       filters=None, zarr_format=2)
v3 = zarr.create_array({}, shape=(6, 4), chunks=(3, 2), dtype="i2", fill_value=7,
                       compressors=None)
likes = [plain(_like_args(a, f)) for a, f in (
    (np.arange(10), None), (np.arange(10), 2), (WithChunks((1, 2), (1, 2)), None),
    (v2, None), (v2._async_array, 2), (v2, 3), (v3, None), (v3._async_array, 3), (v3, 2))]
emit([json.loads(json.dumps(shapes)), likes])
"""


@dataclass
class WithChunks:
    shape: tuple
    chunks: tuple


@dataclass
class WithChunkLen:
    shape: tuple
    chunklen: int


def _plain(d):
    out = {}
    for k, v in d.items():
        if k == "codecs":
            v = [c.to_dict() for c in v]
        elif k == "dtype":
            v = str(v)
        elif isinstance(v, np.generic):
            v = [type(v).__name__, v.item()]
        out[k] = v
    return json.loads(json.dumps(out))


def test_as_zarr_python(zarr_peer) -> None:
    shapes = [_get_shape_chunks(x) for x in (
        {}, np.zeros((1, 2)), WithChunks((1, 2), (1, 2)), WithChunks((1, 2), (1,)),
        WithChunkLen((10, 10), 1))]
    v2 = zarrfast.create_array({}, shape=(100,), chunks=(10,), dtype="f8", compressors=None,
                               filters=None, zarr_format=2)
    v3 = zarrfast.create_array({}, shape=(6, 4), chunks=(3, 2), dtype="i2", fill_value=7,
                               compressors=None)
    likes = [_plain(_like_args(a, f)) for a, f in (
        (np.arange(10), None), (np.arange(10), 2), (WithChunks((1, 2), (1, 2)), None),
        (v2, None), (v2._async_array, 2), (v2, 3), (v3, None), (v3._async_array, 3),
        (v3, 2))]
    theirs = zarr_peer.run(_PEER)
    assert [json.loads(json.dumps(shapes)), likes] == theirs
    assert theirs[1][6]["fill_value"] == ["int16", 7]


def test_an_array_like_this_one() -> None:
    v2 = zarrfast.create_array({}, shape=(8,), chunks=(4,), dtype="u1", fill_value=3,
                               zarr_format=2, compressors={"id": "zlib", "level": 1})
    made = zarrfast.create(store={}, **_like_args(v2, None))
    assert (made.shape, made.chunks, made.dtype, made.fill_value) == ((8,), (4,), "u1", 3)
    assert made.metadata.compressor == v2.metadata.compressor
