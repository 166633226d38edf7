"""The kernels that place many rows (``copy_regions``, a decoder's ``decode_regions``)
keep a few bytes per row, not a normalised layout each (1.5 KiB a row: a read of a
million chunks would have held 1.5 GB of them), and still place every row as NumPy
does."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from zarrfast import kernels as K

from _helpers.decode import call_regions

N = 20_000  # rows: 30 MB of layouts before


def _rows(n: int):
    """``n`` regions of 2 x 3 uint16 items, each from its own 4 x 4 chunk (a row at
    offset 1, 1 of it), placed side by side along the last dim of a 2 x (3 n) array."""
    src = np.arange(n * 16, dtype="<u2")
    src_offsets = (np.arange(n, dtype=np.int64) * 16 + 5) * 2  # (row 1, column 1)
    dst = np.zeros((2, 3 * n), dtype="<u2")
    dst_offsets = np.arange(n, dtype=np.int64) * 3 * 2
    shapes = np.full((n, 2), (2, 3), dtype=np.int64)
    want = src.reshape(n, 4, 4)[:, 1:3, 1:4].transpose(1, 0, 2).reshape(2, 3 * n)
    return src, src_offsets, dst, dst_offsets, shapes, want


def _peak(f) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_copy_regions_keeps_no_layout_per_row():
    src, src_offsets, dst, dst_offsets, shapes, want = _rows(N)
    s = np.array([8, 2], dtype=np.int64)  # a 4 x 4 chunk's strides
    d = np.array(dst.strides, dtype=np.int64)
    peak = _peak(lambda: K.copy_regions(src.view(np.uint8), src_offsets, s,
                                        dst.reshape(-1).view(np.uint8), dst_offsets, d,
                                        shapes, 2))
    assert np.array_equal(dst, want)
    assert peak < 64 * N, peak  # (a flag per row, not 1.5 KiB)


@pytest.mark.skipif(K.ChunkDecoder is None, reason="no batched decoder")
def test_decode_regions_keeps_no_layout_per_row():
    src, src_offsets, dst, dst_offsets, shapes, want = _rows(N)
    dec = K.ChunkDecoder("none", 32)  # a chunk: 16 uint16 items, stored as they are
    chunk_offsets = np.full(N, (1 * 4 + 1) * 2, dtype=np.int64)
    sizes = np.full(N, 32, dtype=np.int64)
    starts = np.arange(N, dtype=np.int64) * 32
    s = np.array([8, 2], dtype=np.int64)
    d = np.array(dst.strides, dtype=np.int64)
    out: list = []
    peak = _peak(lambda: out.append(call_regions(dec,
        src.view(np.uint8), starts, sizes, chunk_offsets, s,
        dst.reshape(-1).view(np.uint8), dst_offsets, d, shapes, 2, 1,
        np.zeros(N, dtype=np.uint8))))
    assert (out[0] == K.DECODED).all()
    assert np.array_equal(dst, want)
    assert peak < 64 * N, peak
