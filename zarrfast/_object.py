"""Object arrays (Zarr v2 ``|O`` with an object codec such as ``vlen-utf8``).

Elements are Python objects, so they cannot go through the byte-copying
kernels: each chunk is decoded by its numcodecs filters into an object array
and assembled with NumPy slicing, one chunk per task as elsewhere.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._concurrency import map_unordered_into
from .errors import ChunkDecodeError
from .indexing import BasicSelection
from .pipeline import chunk_keys
from .stores import Store

__all__ = ["ObjectChain", "read_object_selection", "write_object_selection"]


def _slices(start: np.ndarray, count: np.ndarray, step: np.ndarray) -> tuple[slice, ...]:
    out = []
    for b, n, s in zip(start.tolist(), count.tolist(), step.tolist(), strict=True):
        stop = b + n * s
        out.append(slice(b, stop if stop >= 0 else None, s))
    return tuple(out)


def _same(value: Any, fill: Any) -> bool:
    """``value == fill`` for objects that may be arrays (vlen-array elements)."""
    if value is fill:
        return True
    if isinstance(value, np.ndarray) or isinstance(fill, np.ndarray):
        return (isinstance(value, np.ndarray) and isinstance(fill, np.ndarray)
                and np.array_equal(value, fill))
    try:
        return type(value) is type(fill) and bool(value == fill)
    except (TypeError, ValueError):
        return False


class ObjectChain:
    """Decode/encode chunks of a v2 object array with its numcodecs codecs."""

    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata
        self.chunk_shape = tuple(metadata.chunks)
        self.order = metadata.order
        self.filters = [c.codec for c in metadata._filter_codecs]
        comp = metadata._compressor_codec
        self.compressor = comp.codec if comp is not None else None
        self.fill = metadata.effective_fill_value

    def decode(self, raw: Any, key: str) -> np.ndarray:
        try:
            data = raw
            if self.compressor is not None:
                data = self.compressor.decode(data)
            for f in reversed(self.filters):
                data = f.decode(data)
            arr = np.asarray(data, dtype=object)
            n = math.prod(self.chunk_shape)
            if arr.size != n:
                raise ChunkDecodeError(
                    f"decoded to {arr.size} objects, expected {n} (chunk shape "
                    f"{list(self.chunk_shape)})"
                )
            return arr.reshape(self.chunk_shape, order=self.order)
        except ChunkDecodeError as e:
            raise ChunkDecodeError(f"chunk {key!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything on bad bytes
            raise ChunkDecodeError(f"chunk {key!r}: cannot decode: {e}") from None

    def encode(self, chunk: np.ndarray) -> bytes:
        data: Any = np.asarray(chunk, dtype=object).ravel(order=self.order)
        for f in self.filters:
            data = f.encode(data)
        if self.compressor is not None:
            data = self.compressor.encode(data)
        return bytes(data)

    def new_fill_chunk(self) -> np.ndarray:
        chunk = np.empty(self.chunk_shape, dtype=object)
        chunk.fill(self.fill)
        return chunk


def _projection(metadata: Any, sel: BasicSelection):
    from . import _kernels

    return _kernels.project(
        np.array(metadata.shape, dtype=np.int64), np.array(metadata.chunks, dtype=np.int64),
        sel.start, sel.step, sel.count,
    )


def read_object_selection(store: Store, path: str, chain: ObjectChain, sel: BasicSelection,
                          out: np.ndarray) -> None:
    if out.size == 0:
        return
    coords, local_start, local_count, out_start, _ = _projection(chain.metadata, sel)
    keys = chunk_keys(chain.metadata, path, coords)
    ones = np.ones_like(sel.step)

    def task(i: int) -> None:
        dst = _slices(out_start[i], local_count[i], ones)
        raw = store.get(keys[i])
        if raw is None:
            out[dst] = chain.fill
            return
        chunk = chain.decode(raw, keys[i])
        out[dst] = chunk[_slices(local_start[i], local_count[i], sel.step)]

    # tasks write disjoint regions of `out`
    map_unordered_into(task, range(coords.shape[0]))


def write_object_selection(store: Store, path: str, chain: ObjectChain, sel: BasicSelection,
                           value: np.ndarray | None, scalar: Any, *,
                           write_empty_chunks: bool) -> None:
    if math.prod(sel.full_shape) == 0:
        return
    coords, local_start, local_count, out_start, complete = _projection(chain.metadata, sel)
    keys = chunk_keys(chain.metadata, path, coords)
    ones = np.ones_like(sel.step)

    def task(i: int) -> None:
        raw = None if complete[i] else store.get(keys[i])
        chunk = chain.new_fill_chunk() if raw is None else chain.decode(raw, keys[i]).copy()
        dst = _slices(local_start[i], local_count[i], sel.step)
        chunk[dst] = scalar if value is None else value[_slices(out_start[i], local_count[i],
                                                                ones)]
        if not write_empty_chunks and all(_same(v, chain.fill) for v in chunk.flat):
            store.delete(keys[i])
        else:
            store.set(keys[i], chain.encode(chunk))

    # one task per chunk: no two tasks touch the same key
    map_unordered_into(task, range(coords.shape[0]))
