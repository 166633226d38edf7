"""What the box-read kernel tests share (``decode_box_files``, ``decode_box_shards``):
a case is a dict (chunk shape, item size, box, seed...); its chunks' bytes, their
frames (or damaged ones), the layouts of a decoded chunk and of dst, and the check of a
call's result against NumPy's."""

from __future__ import annotations

import math

import numpy as np

from _helpers.decode import HAS_BLOSC, c_strides, compress
from _helpers.kernels import rng_bytes

CODECS = ["zstd", "none"] + (["blosc"] if HAS_BLOSC else [])


def encode(codec: str, data: bytes, itemsize: int) -> bytes:
    if codec == "none":
        return data
    if codec == "zstd":
        return compress(data)
    from numcodecs import Blosc

    return bytes(Blosc("lz4", 5, Blosc.SHUFFLE, 0, typesize=min(itemsize, 255)).encode(data))


def stored(codec: str, data: bytes, kind: str, itemsize: int) -> bytes:
    """What a chunk's stored bytes are for ``kind``: its frame, or one that must not
    decode."""
    if kind == "short":  # "none": one byte short; zstd, blosc: a truncated frame
        return encode(codec, data, itemsize)[:-1]
    if kind == "long":  # decodes to one byte more than the chunk
        return encode(codec, data + b"\x01", 1)
    if kind == "garbage":
        return b"\x00garbage" + data
    if kind == "zero":
        return b""
    return encode(codec, data, itemsize)


def chunk_strides(case) -> list[int]:
    chunk, itemsize = case["chunk"], case["itemsize"]
    if case.get("order", "C") == "C":
        return c_strides(chunk, itemsize)
    return c_strides(chunk[::-1], itemsize)[::-1]


def nbytes_of(case) -> int:  # (``pad`` unused bytes after the items)
    return math.prod(case["chunk"]) * case["itemsize"] + case.get("pad", 0)


def chunk_bytes(case, coords) -> bytes:
    return rng_bytes(hash((case["seed"], *coords)) % 2**32, nbytes_of(case))


def dst_layout(case):
    """dst's strides and size (C order of the box unless the case says otherwise)."""
    strides = case.get("dst_strides") or c_strides(case["count"], case["itemsize"])
    size = sum((n - 1) * t for n, t in zip(case["count"], strides, strict=True))
    return strides, size + case["itemsize"]


def check(got, dst, want_status, want, mask, what=""):
    """The call's result ``got`` is ``want_status`` (``None``, or int8 statuses) and
    ``dst`` is ``want`` wherever ``mask`` is false."""
    if want_status is None:
        assert got is None, (what, got)
    else:
        assert isinstance(got, np.ndarray) and got.dtype == np.int8, (what, got)
        np.testing.assert_array_equal(got, want_status, err_msg=what)
    np.testing.assert_array_equal(dst[~mask], want[~mask], err_msg=what)
