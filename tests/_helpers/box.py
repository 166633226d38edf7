"""What the box-read kernel tests share (``decode_box_files``, ``decode_box_shards``):
a case is a dict (chunk shape, item size, box, seed...); its chunks' bytes, their
frames (or damaged ones), the layouts of a decoded chunk and of dst, and the check of a
call's result against NumPy's."""

from __future__ import annotations

import math

import numpy as np

from _helpers.decode import GUARD, HAS_BLOSC, c_strides, compress, swap_order
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


class Oracle:
    """NumPy's account of a box case: the array the chunks make (``span`` items per
    dim), which of its items end up in dst (placed or filled) and which a ``FAILED``
    direct row may have written (an uncompressed chunk read straight into its place);
    then dst as the kernel must leave it (:meth:`dst`)."""

    def __init__(self, case, span, direct: bool) -> None:
        chunk, itemsize, ndim = case["chunk"], case["itemsize"], len(case["chunk"])
        self.case = case
        self.strides, self.size = dst_layout(case)
        cst = chunk_strides(case)
        self.full = np.zeros((*span, itemsize), dtype=np.uint8)
        self.known = np.zeros(span, dtype=bool)
        self.loose = np.zeros(span, dtype=bool)
        # each item's bytes in a decoded chunk, in the order dst holds them
        self.pick = (np.asarray(cst, dtype=np.int64)
                     @ np.indices(chunk).reshape(ndim, -1))[:, None] \
            + swap_order(itemsize, case["swap_unit"])[None, :]
        #: whether a whole chunk goes straight into dst
        self.same = direct and case["swap_unit"] == 1 and not case.get("pad") and all(
            t == u for t, u, c in zip(self.strides, cst, chunk, strict=True) if c > 1)

    def _at(self, coords):
        return tuple(slice(k * c, (k + 1) * c)
                     for k, c in zip(coords, self.case["chunk"], strict=True))

    def whole(self, coords) -> bool:
        """Whether the chunk lies whole in the box."""
        c = self.case
        return all(k * n >= s and (k + 1) * n <= s + m for k, n, s, m in
                   zip(coords, c["chunk"], c["start"], c["count"], strict=True))

    def place(self, coords) -> None:
        data = np.frombuffer(chunk_bytes(self.case, coords), dtype=np.uint8)
        self.full[self._at(coords)] = data[self.pick].reshape(*self.case["chunk"], -1)
        self.known[self._at(coords)] = True

    def fill(self, coords, item: bytes) -> None:
        self.full[self._at(coords)] = np.frombuffer(item, dtype=np.uint8)
        self.known[self._at(coords)] = True

    def failed(self, coords, codec: str) -> None:
        if codec == "none" and self.whole(coords) and self.same:
            self.loose[self._at(coords)] = True

    def dst(self):
        """dst's bytes as the kernel must leave them (what it held before: the guard
        pattern of ``rng_bytes(11)``), and the mask of bytes a ``FAILED`` direct row
        may have written."""
        c = self.case
        itemsize, ndim = c["itemsize"], len(c["chunk"])
        box = tuple(slice(s, s + n) for s, n in zip(c["start"], c["count"], strict=True))
        at = np.asarray(self.strides, dtype=np.int64) @ np.indices(c["count"]).reshape(ndim, -1)
        at = at[:, None] + np.arange(itemsize)[None, :]
        want = np.frombuffer(rng_bytes(11, self.size + 2 * GUARD),
                             dtype=np.uint8)[GUARD:-GUARD].copy()
        keep = self.known[box].reshape(-1)
        want[at[keep]] = self.full[box].reshape(-1, itemsize)[keep]
        mask = np.zeros(self.size, dtype=bool)
        mask[at[self.loose[box].reshape(-1)]] = True
        return want, mask
