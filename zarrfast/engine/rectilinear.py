"""Reading and writing arrays with a rectilinear chunk grid (variable chunk sizes).

A rectilinear grid is, along each dimension, a list of chunk boundaries.  A
selection is projected onto it per dimension with those boundaries (the
regular projection's arithmetic, with ``c * k`` replaced by a boundary), then
the rows are grouped by their chunk's declared shape: each group is a
projection onto chunks of one shape, read and written by the regular
machinery (:class:`~zarrfast.engine.chunked.RowReader` /
:class:`~zarrfast.engine.chunked.RowWriter`, the same Cython copy kernels)
with a :class:`~zarrfast.engine.chunked.PreparedChain` made for that shape.
Regular arrays never come here.

A chunk is stored with its declared shape; where it reaches past the array's
end (a grid whose sizes overflow the shape, as after shrinking) the rest is
padding holding the fill value, as on a regular grid.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, cast

import numpy as np

from zarrfast.codecs import CodecChain
from zarrfast.engine.chunked import (
    PreparedChain,
    Projection,
)
from zarrfast.engine.selection import BasicSelection
from zarrfast.metadata.chunk_grid import RectilinearChunkGrid, RegularChunkGrid
from zarrfast.metadata.v3 import ArrayMetadata

__all__ = ["RectilinearChain", "project_rectilinear"]


def _dim_segments(b: np.ndarray, n: int, s: int, t: int, m: int) -> np.ndarray:
    """Segments of ``s + k*t, k < m`` on chunks with boundaries ``b``, as rows of
    ``(chunk, local_start, local_count, out_start, complete, edge, size)``."""
    first, last = s, s + (m - 1) * t
    a = abs(t)
    c_first = int(np.searchsorted(b, first, side="right")) - 1
    c_last = int(np.searchsorted(b, last, side="right")) - 1
    if t > 0:
        ci = np.arange(c_first, c_last + 1, dtype=np.int64)
        lo, hi = b[ci], b[ci + 1]
        k_lo = -((s - lo) // a)            # ceil((lo - s) / a)
        k_hi = -((s - hi) // a)            # ceil((hi - s) / a)
    else:
        ci = np.arange(c_first, c_last - 1, -1, dtype=np.int64)
        lo, hi = b[ci], b[ci + 1]
        k_lo = -((hi - 1 - s) // a)        # ceil((s - (hi - 1)) / a)
        k_hi = (s - lo) // a + 1           # floor((s - lo) / a) + 1
    k_lo = np.clip(k_lo, 0, m)
    k_hi = np.clip(k_hi, 0, m)
    keep = k_hi > k_lo
    ci, lo, hi, k_lo, k_hi = ci[keep], lo[keep], hi[keep], k_lo[keep], k_hi[keep]
    count = k_hi - k_lo
    complete = (a == 1) & (count == np.minimum(hi, n) - lo)
    return np.stack([ci, s + k_lo * t - lo, count, k_lo, complete.astype(np.int64),
                     (hi > n).astype(np.int64), hi - lo], axis=1)


def project_rectilinear(bounds: list[np.ndarray], shape: tuple[int, ...],
                        sel: BasicSelection) -> tuple[np.ndarray, ...]:
    """Project a basic selection onto a rectilinear grid: one row per touched chunk,
    ``(coords, local_start, local_count, out_start, complete, edge, chunk_shape)``
    (the first four and the last ``(rows, ndim)`` int64, ``complete`` and ``edge``
    bool per row), in C order of the chunks as the regular projection."""
    ndim = len(shape)
    if ndim == 0 or int(np.prod(sel.count)) == 0:
        rows = 0 if ndim and int(np.prod(sel.count)) == 0 else 1
        z = np.zeros((rows, ndim), dtype=np.int64)
        return z, z, z, z, np.ones(rows, np.bool_), np.zeros(rows, np.bool_), z
    segs = [_dim_segments(b, n, int(s), int(t), int(m)) for b, n, s, t, m in zip(
        bounds, shape, sel.start.tolist(), sel.step.tolist(), sel.count.tolist(), strict=True)]
    grids = np.indices([len(seg) for seg in segs]).reshape(ndim, -1)
    picked = np.stack([seg[g] for seg, g in zip(segs, grids, strict=True)], axis=1)
    cols = [np.ascontiguousarray(picked[:, :, j]) for j in range(7)]
    # (all and any along axis 1 of a 2-D array: arrays, which NumPy's types do not say)
    return (cols[0], cols[1], cols[2], cols[3],
            cast(np.ndarray, cols[4].astype(np.bool_).all(axis=1)),
            cast(np.ndarray, cols[5].astype(np.bool_).any(axis=1)), cols[6])


def _sub_projection(chain: PreparedChain, sel: BasicSelection, array_shape: np.ndarray,
                    table: tuple[np.ndarray, ...], rows: np.ndarray | None) -> Projection:
    """The rows ``rows`` (all: ``None``) of a rectilinear projection table, as a
    :class:`Projection` onto chunks of ``chain.chunk_shape``."""
    proj = Projection.__new__(Projection)
    cols = table if rows is None else tuple(c[rows] for c in table)
    (proj.coords, proj.local_start, proj.local_count, proj.out_start, proj.complete,
     proj.edge) = cols[:6]
    proj.array_shape = array_shape
    proj.nrows = proj.coords.shape[0]
    proj.chain = chain
    proj.sel = sel
    return proj


class RectilinearChain:
    """Per-array state of a rectilinear array: the chunk boundaries and a
    :class:`PreparedChain` per chunk shape (made on first use)."""

    #: the chain kind (:class:`~zarrfast.engine.plan.Chain`)
    kind = "rectilinear"

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain) -> None:
        self.metadata = metadata
        self.codecs = codecs
        grid = cast(RectilinearChunkGrid, metadata.chunk_grid)  # (a rectilinear chain's)
        self.grid = grid
        #: per dimension the chunks' start offsets and the last chunk's end
        self.bounds = grid.boundaries(metadata.shape)
        self._shape = np.array(metadata.shape, dtype=np.int64)
        self._chains: dict[tuple[int, ...], PreparedChain] = {}
        self._lock = threading.Lock()
        #: the first chunk's chain (what callers ask about the data type and fill value)
        self.first = self.chain_for(tuple(int(x) for x in codecs.chunk_shape))
        self.dtype = self.first.dtype
        self.itemsize = self.first.itemsize

    @property
    def fill_scalar(self) -> Any:
        return self.metadata.effective_fill_value

    def chain_for(self, shape: tuple[int, ...]) -> PreparedChain:
        """The prepared chain of chunks of declared shape ``shape``."""
        chain = self._chains.get(shape)
        if chain is None:
            with self._lock:
                chain = self._chains.get(shape)
                if chain is None:
                    md = replace(self.metadata, chunk_grid=RegularChunkGrid(shape))
                    chain = PreparedChain(md, self.codecs.for_chunk_shape(shape))
                    self._chains[shape] = chain
        return chain

    def groups(self, sel: BasicSelection) -> list[Projection]:
        """The selection's projection, split by chunk shape (each part's ``chain`` is
        that shape's)."""
        table = project_rectilinear(self.bounds, self.metadata.shape, sel)
        shapes = table[6]
        if shapes.shape[0] == 0:
            return []
        if (shapes == shapes[0]).all():
            chain = self.chain_for(tuple(shapes[0].tolist()))
            return [_sub_projection(chain, sel, self._shape, table, None)]
        uniq, inverse = np.unique(shapes, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        starts = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
        out = []
        for g in range(len(uniq)):
            chain = self.chain_for(tuple(uniq[g].tolist()))
            rows = order[starts[g]:starts[g + 1]]
            out.append(_sub_projection(chain, sel, self._shape, table, rows))
        return out
