"""``ShardingCodec`` takes and refuses what zarr-python 3.4.2's (the peer) does, in its
words: its ``chunk_shape`` read as an array shape (an integer, NumPy integers, bools,
any iterable of integers), a size below 1 named with its dimension, ``index_location``,
index codecs of no fixed size, and nested inner chunk shapes that do not fit."""

from __future__ import annotations

import numpy as np  # noqa: F401 - (the shapes below are evaluated here)
import pytest

import zarrfast
from zarrfast.codecs import BytesCodec, GzipCodec, ShardingCodec

SHAPES = ["4", "np.int64(4)", "(np.int64(4),)", "np.array([4])", "(True,)", "range(4, 5)",
          "[4, 2]", "(0, 5)", "(5, 0)", "(False, 5)", "[0]", "0", "-1", "(-1,)", "(4.0,)",
          "'4'", "None"]

_PEER = """
import numpy as np
from zarr.codecs import ShardingCodec
out = []
for text in ARGS:
    try:
        out.append(["ok", list(ShardingCodec(chunk_shape=eval(text)).chunk_shape)])
    except (TypeError, ValueError) as e:
        out.append([type(e).__name__, str(e)])
emit(out)
"""


def test_chunk_shape_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run(_PEER, SHAPES)
    for text, their in zip(SHAPES, theirs, strict=True):
        try:
            codec = ShardingCodec(chunk_shape=eval(text))
        except (TypeError, ValueError) as e:
            assert their[0] != "ok", (text, their)
            assert isinstance(e, {"TypeError": TypeError, "ValueError": ValueError}[their[0]])
            # (zarr-python's words; the value zarrfast shows as its repr: '4', not 4)
            assert their[1].rstrip(".").split(" Got ")[0] in str(e), (text, their, str(e))
        else:
            assert their == ["ok", list(codec.chunk_shape)], text
            assert all(type(n) is int for n in codec.chunk_shape)


def test_index_location_and_index_codecs_in_zarr_pythons_words() -> None:
    with pytest.raises(ValueError, match=r"index_location must be one of \['start', 'end'\]"):
        ShardingCodec(chunk_shape=(1,), index_location="middle")
    with pytest.raises(ValueError, match="must produce a fixed-size encoding.*'gzip'"):
        ShardingCodec(chunk_shape=(2,), index_codecs=(BytesCodec(), GzipCodec()))


@pytest.mark.parametrize(("inner", "phrase"), [
    ((4, 7), r"Chunk edge length 6 in dimension 0 is not divisible by the shard's inner "
             r"chunk size 4\."),
    ((12, 40), "Chunk edge length 6 in dimension 0 is not divisible"),
    ((3, 20, 1), "need to have the same number of dimensions"),
])
def test_nested_inner_chunk_shape_that_does_not_fit(inner, phrase) -> None:
    store = zarrfast.MemoryStore()
    with pytest.raises(ValueError, match=phrase):
        zarrfast.create_array(store, shape=(6, 20), dtype="int32", chunks=(6, 20),
                              serializer=ShardingCodec(chunk_shape=(6, 20),
                                                       codecs=(ShardingCodec(chunk_shape=inner),)))
    assert list(store.list()) == []
