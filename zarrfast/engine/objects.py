"""Object arrays: Zarr v2 ``|O`` with an object codec such as ``vlen-utf8``, and the
Zarr v3 ``string`` / ``variable_length_bytes`` data types (``vlen-utf8`` / ``vlen-bytes``).

Elements are Python objects, so they cannot go through the byte-copying
kernels: each chunk is decoded by its codecs into an object array and assembled
with NumPy slicing, one chunk per task as elsewhere.

A v3 chunk is decoded as: the bytes -> bytes codecs in reverse (bounded with
``limit=`` where the codec takes it), the vlen codec (an object array of the
encoded chunk shape; its element count must be the chunk's), then the array ->
array codecs (``transpose``) in reverse.  A ``sharding_indexed`` codec in the
array -> bytes position decodes each stored inner chunk with the inner codecs the
same way (whole shards are read and rewritten).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zarrfast.codecs import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec
from zarrfast.codecs.sharding import ShardingCodec
from zarrfast.concurrency import map_unordered_into
from zarrfast.engine.chunked import BoundedDecoders, chunk_keys
from zarrfast.engine.selection import BasicSelection
from zarrfast.engine.sharded import _general_decode, _general_encode
from zarrfast.errors import ChunkDecodeError, CodecError
from zarrfast.metadata.dtype import parse_data_type
from zarrfast.storage import Store

__all__ = ["ObjectChain", "read_object_selection", "write_object_selection"]

#: bound on what the bytes -> bytes codecs may inflate one chunk of variable-length
#: elements to (4 bytes of count, 4 of length per element, then at most this much data)
MAX_VLEN_DATA = 2**31
_EMPTY = 2**64 - 1
_UINT64 = parse_data_type("uint64")


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


def _all_fill(chunk: np.ndarray, fill: Any) -> bool:
    return all(_same(v, fill) for v in chunk.flat)


def _filled(shape: tuple[int, ...], fill: Any) -> np.ndarray:
    chunk = np.empty(shape, dtype=object)
    chunk.fill(fill)
    return chunk


class _V3ObjectCodecs:
    """A v3 codec chain ``[array->array]* (vlen | sharding) [bytes->bytes]*`` applied to
    object chunks of ``shape``.  Errors do not name the key; :class:`ObjectChain` adds it."""

    def __init__(self, codecs: tuple[Any, ...], shape: tuple[int, ...], data_type: Any,
                 fill: Any) -> None:
        self.shape = tuple(shape)
        self.data_type = data_type
        self.fill = fill
        self.aa = [c for c in codecs if isinstance(c, ArrayArrayCodec)]
        self.ab = next(c for c in codecs if isinstance(c, ArrayBytesCodec))
        self.bb = [c for c in codecs if isinstance(c, BytesBytesCodec)]
        self.shapes = [self.shape]
        for c in self.aa:
            self.shapes.append(c.encoded_shape(self.shapes[-1]))
        n = math.prod(self.shape)
        self.limit = 4 + 4 * n + MAX_VLEN_DATA
        self._decoders = BoundedDecoders(self.bb)
        self.inner: _V3ObjectCodecs | None = None
        if isinstance(self.ab, ShardingCodec):
            codec = self.ab
            shard = self.shapes[-1]
            self.cps = codec.chunks_per_shard(shard)
            self.index_shape = codec.index_shape(shard)
            self.index_nbytes = codec.index_nbytes(shard)
            self.inner = _V3ObjectCodecs(codec.codecs, codec.chunk_shape, data_type, fill)
            self.limit += self.index_nbytes + 4 * math.prod(self.cps)

    # -- decoding -----------------------------------------------------------------------
    def decode(self, raw: Any, where: str) -> np.ndarray:
        data = self._decoders.decode(raw, self.limit)
        if self.inner is not None:
            arr = self._decode_shard(data, where)
        else:
            arr = self.ab.decode(data, self.shapes[-1], self.data_type)
        for c, s in zip(reversed(self.aa), reversed(self.shapes[:-1]), strict=True):
            arr = c.decode(arr, s)
        if arr.shape != self.shape:  # pragma: no cover - the codecs check shapes
            raise ChunkDecodeError(f"decoded to shape {arr.shape}, expected {self.shape}")
        return arr

    def _decode_shard(self, data: Any, where: str) -> np.ndarray:
        assert self.inner is not None
        codec = self.ab
        mv = memoryview(data).cast("B")
        n = len(mv)
        if n < self.index_nbytes:
            raise ChunkDecodeError(
                f"{n} bytes is too short to hold the {self.index_nbytes}-byte shard index"
            )
        at_end = codec.index_location == "end"
        raw_index = mv[n - self.index_nbytes:] if at_end else mv[:self.index_nbytes]
        low, high = (0, n - self.index_nbytes) if at_end else (self.index_nbytes, n)
        index = _general_decode(codec.index_codecs, raw_index, self.index_shape, _UINT64)
        index = np.ascontiguousarray(index, dtype=np.uint64).reshape(-1, 2)
        out = _filled(self.shapes[-1], self.fill)
        inner_shape = self.inner.shape
        for j, (off, nb) in enumerate(index.tolist()):
            coords = tuple(int(x) for x in np.unravel_index(j, self.cps))
            name = f"{where}[{coords}]"
            if off == _EMPTY and nb == _EMPTY:
                continue
            if off == _EMPTY or nb == _EMPTY or off < low or off + nb > high:
                raise ChunkDecodeError(
                    f"inner chunk {coords}: index entry (offset {off}, nbytes {nb}) is not "
                    f"within the shard's data (bytes {low}..{high})"
                )
            region = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, inner_shape,
                                                                       strict=True))
            try:
                out[region] = self.inner.decode(mv[off:off + nb], name)
            except CodecError as e:
                raise type(e)(f"inner chunk {coords}: {e}") from None
        return out

    # -- encoding -----------------------------------------------------------------------
    def encode(self, chunk: np.ndarray, write_empty_chunks: bool) -> bytes:
        arr = chunk
        for c in self.aa:
            arr = c.encode(arr)
        if self.inner is not None:
            data: Any = self._encode_shard(np.asarray(arr), write_empty_chunks)
        else:
            data = self.ab.encode(arr, self.data_type)
        for c in self.bb:
            data = c.encode(data)
        return bytes(data)

    def _encode_shard(self, arr: np.ndarray, write_empty_chunks: bool) -> bytes:
        assert self.inner is not None
        at_end = self.ab.index_location == "end"
        index = np.full((math.prod(self.cps), 2), _EMPTY, dtype=np.uint64)
        parts = []
        pos = 0 if at_end else self.index_nbytes
        for j in range(index.shape[0]):
            coords = np.unravel_index(j, self.cps)
            region = tuple(slice(int(c) * s, (int(c) + 1) * s)
                           for c, s in zip(coords, self.inner.shape, strict=True))
            sub = arr[region]
            if not write_empty_chunks and _all_fill(sub, self.fill):
                continue
            b = self.inner.encode(sub, write_empty_chunks)
            index[j] = (pos, len(b))
            parts.append(b)
            pos += len(b)
        raw_index = _general_encode(self.ab.index_codecs, index.reshape(self.index_shape), _UINT64)
        return b"".join([*parts, raw_index] if at_end else [raw_index, *parts])


class ObjectChain:
    """Decode/encode the chunks of an object array: a v2 ``|O`` array with its numcodecs
    filters and compressor, or a v3 variable-length array with its codec chain."""

    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata
        self.chunk_shape = tuple(metadata.chunks)
        self.fill = metadata.effective_fill_value
        self.v3: _V3ObjectCodecs | None = None
        if getattr(metadata, "zarr_format", 3) == 2:
            self.order = metadata.order
            self.filters = [c.codec for c in metadata._filter_codecs]
            comp = metadata._compressor_codec
            self.compressor = comp.codec if comp is not None else None
        else:
            self.order = "C"
            self.filters = []
            self.compressor = None
            self.v3 = _V3ObjectCodecs(metadata.codecs, self.chunk_shape, metadata.data_type,
                                      self.fill)

    def decode(self, raw: Any, key: str) -> np.ndarray:
        if self.v3 is not None:
            try:
                return self.v3.decode(raw, key)
            except ChunkDecodeError as e:
                raise type(e)(f"chunk {key!r}: {e}") from None
            except CodecError as e:
                raise ChunkDecodeError(f"chunk {key!r}: {e}") from None
            except MemoryError:
                raise ChunkDecodeError(f"chunk {key!r}: cannot decode: out of memory") from None
            except (ValueError, RuntimeError, TypeError, OSError, EOFError) as e:
                raise ChunkDecodeError(f"chunk {key!r}: cannot decode: {e}") from None
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

    def encode(self, chunk: np.ndarray, *, write_empty_chunks: bool = False) -> bytes:
        if self.v3 is not None:
            return self.v3.encode(np.asarray(chunk, dtype=object), write_empty_chunks)
        data: Any = np.asarray(chunk, dtype=object).ravel(order=self.order)
        for f in self.filters:
            data = f.encode(data)
        if self.compressor is not None:
            data = self.compressor.encode(data)
        return bytes(data)

    def new_fill_chunk(self) -> np.ndarray:
        return _filled(self.chunk_shape, self.fill)

    @property
    def fill_scalar(self) -> Any:
        """What missing chunks read as (for a v2 ``null`` fill value: ``""`` for vlen-utf8,
        ``b""`` for vlen-bytes, as zarr-python reads them)."""
        return self.fill


def _projection(metadata: Any, sel: BasicSelection):
    from zarrfast import kernels as _kernels

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
        if not write_empty_chunks and _all_fill(chunk, chain.fill):
            store.delete(keys[i])
        else:
            store.set(keys[i], chain.encode(chunk, write_empty_chunks=write_empty_chunks))

    # one task per chunk: no two tasks touch the same key
    map_unordered_into(task, range(coords.shape[0]))
