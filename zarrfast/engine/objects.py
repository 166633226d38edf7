"""Object arrays: Zarr v2 ``|O`` with an object codec such as ``vlen-utf8``, and the
Zarr v3 ``string`` / ``variable_length_bytes`` data types (``vlen-utf8`` / ``vlen-bytes``).

Elements are Python objects, so they cannot go through the byte-copying
kernels: each chunk is decoded by its codecs into an object array and assembled
with NumPy slicing, one chunk per task as elsewhere.

A v3 chunk is decoded by its :class:`~zarrfast.codecs.CodecChain` with the
codecs' own methods: the bytes -> bytes codecs in reverse (bounded by the
chain's ``decode_limit`` for variable-length data), the vlen codec (an object
array of the encoded chunk shape; its element count must be the chunk's), then
the array -> array codecs (``transpose``) in reverse.  A ``sharding_indexed``
codec in the array -> bytes position decodes each stored inner chunk the same
way (whole shards are read and rewritten).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from zarrfast.codecs import CodecChain
from zarrfast.codecs.chain import vlen_limit
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.concurrency import map_unordered_into
from zarrfast.engine.chunked import chunk_keys
from zarrfast.engine.plan import Plan
from zarrfast.engine.rmw import read_modify_write
from zarrfast.engine.selection import BasicSelection
from zarrfast.errors import ChunkAllocationError, ChunkDecodeError, CodecError, add_context
from zarrfast.kernels import buffers as _buffers
from zarrfast.metadata.dtype import is_fill_chunk

__all__ = ["ObjectChain", "read_object_selection", "write_object_selection"]

def _slices(start: np.ndarray, count: np.ndarray, step: np.ndarray) -> tuple[slice, ...]:
    out = []
    for b, n, s in zip(start.tolist(), count.tolist(), step.tolist(), strict=True):
        stop = b + n * s
        out.append(slice(b, stop if stop >= 0 else None, s))
    return tuple(out)


#: the numcodecs object codecs whose encoding starts with the element count (uint32)
_COUNTED = ("vlen-utf8", "vlen-bytes", "vlen-array")


def _check_count(data: Any, n: int, codec_id: str) -> None:
    b = memoryview(data).cast("B")
    declared = int.from_bytes(b[:4], "little") if len(b) >= 4 else -1
    if declared != n:
        raise ChunkDecodeError(f"{codec_id}: the stored chunk declares {declared} elements, "
                               f"expected {n}")


def _filled(shape: tuple[int, ...], fill: Any) -> np.ndarray:
    chunk = np.empty(shape, dtype=object)
    chunk.fill(fill)
    return chunk


class ObjectChain:
    """Decode/encode the chunks of an object array: a v2 ``|O`` array with its numcodecs
    filters and compressor, or a v3 variable-length array with its codec chain."""

    #: the chain kind (:class:`~zarrfast.engine.plan.Chain`)
    kind = "object"

    def __init__(self, metadata: Any, codecs: CodecChain) -> None:
        self.metadata = metadata
        self.chunk_shape = tuple(metadata.chunks)
        #: no valid stored chunk is larger (see ``CodecChain.stored_limit``)
        self.stored_limit = codecs.stored_limit
        self.fill = metadata.effective_fill_value
        self.v3: CodecChain | None = None
        if getattr(metadata, "zarr_format", 3) == 2:
            # numcodecs' object codecs take and give whole object arrays, so the v2
            # chain's filters and compressor are applied here, in v2's order
            self.order = metadata.order
            # (each a NumcodecsCodec: CodecChain.from_v2)
            nf = len(metadata.filters or ())
            self.filters = [cast(NumcodecsCodec, c).codec for c in codecs.bb[:nf]]
            # the wrapper: its decode is bounded (a decompression bomb is refused)
            self.compressor: NumcodecsCodec | None = (
                cast(NumcodecsCodec, codecs.bb[nf]) if metadata.compressor is not None
                else None)
        else:
            self.order = "C"
            self.filters = []
            self.compressor = None
            self.v3 = codecs
        #: whether a chunk is a shard (of inner chunks other writers may write), its
        #: array -> bytes codec ``sharding_indexed`` (array -> array codecs before it too)
        self.sharded = (self.v3 is not None
                        and getattr(self.v3.ab, "name", None) == "sharding_indexed")

    def _out_of_memory(self, key: str) -> ChunkAllocationError:
        return cast(ChunkAllocationError, _buffers.allocation_error(  # (an error of that type)
            f"chunk {key!r}", "the decoded chunk", self.chunk_shape, object,
            ChunkAllocationError))

    def decode(self, raw: Any, key: str) -> np.ndarray:
        if self.v3 is not None:
            try:
                arr = self.v3.decode(raw, fill_value=self.fill, key=key)
                if arr.shape != self.chunk_shape:  # pragma: no cover - the codecs check shapes
                    raise ChunkDecodeError(
                        f"decoded to shape {arr.shape}, expected {self.chunk_shape}")
                return arr
            except MemoryError:
                raise self._out_of_memory(key) from None
            except ChunkDecodeError as e:
                add_context(e, f"chunk {key!r}")
                raise
            except CodecError as e:
                raise ChunkDecodeError(f"chunk {key!r}: {e}") from None
            except (ValueError, RuntimeError, TypeError, OSError, EOFError) as e:
                raise ChunkDecodeError(f"chunk {key!r}: cannot decode: {e}") from None
        n = math.prod(self.chunk_shape)
        try:
            data = raw
            if self.compressor is not None:
                data = self.compressor.decode(data, limit=vlen_limit(n))
            for f in reversed(self.filters):
                if getattr(f, "codec_id", None) in _COUNTED:
                    _check_count(data, n, f.codec_id)  # before it allocates that many
                data = f.decode(data)
            arr = np.asarray(data, dtype=object)
            if arr.size != n:
                raise ChunkDecodeError(
                    f"decoded to {arr.size} objects, expected {n} (chunk shape "
                    f"{list(self.chunk_shape)})"
                )
            return arr.reshape(self.chunk_shape, order=self.order)
        except MemoryError:
            raise self._out_of_memory(key) from None
        except ChunkDecodeError as e:
            raise ChunkDecodeError(f"chunk {key!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything on bad bytes
            raise ChunkDecodeError(f"chunk {key!r}: cannot decode: {e}") from None

    def encode(self, chunk: np.ndarray, *, write_empty_chunks: bool = False) -> bytes:
        if self.v3 is not None:
            return self.v3.encode(np.asarray(chunk, dtype=object), fill_value=self.fill,
                                  write_empty_chunks=write_empty_chunks)
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


def read_object_selection(plan: Plan) -> None:
    """Read the selection of an object array into ``plan.out``: one task per chunk."""
    store, path, chain, sel, out = plan.store, plan.path, plan.chain, plan.sel, plan.out
    assert out is not None  # (a read's plan)
    coords, local_start, local_count, out_start, _ = _projection(chain.metadata, sel)
    keys = chunk_keys(chain.metadata, path, coords)
    ones = np.ones_like(sel.step)

    def task(i: int) -> None:
        dst = _slices(out_start[i], local_count[i], ones)
        raw = store.get_limited(keys[i], chain.stored_limit)
        if raw is None:
            out[dst] = chain.fill
            return
        chunk = chain.decode(raw, keys[i])
        out[dst] = chunk[_slices(local_start[i], local_count[i], sel.step)]

    # tasks write disjoint regions of `out`
    map_unordered_into(task, range(coords.shape[0]), threads=plan.options.threads)


def write_object_selection(plan: Plan) -> None:
    """Write ``plan.value`` (or ``plan.scalar``) into the selection of an object array:
    one task per chunk (a shard's under its lock)."""
    store, path, chain, sel = plan.store, plan.path, plan.chain, plan.sel
    value, scalar, write_empty_chunks = plan.value, plan.scalar, plan.write_empty_chunks
    coords, local_start, local_count, out_start, complete = _projection(chain.metadata, sel)
    keys = chunk_keys(chain.metadata, path, coords)
    ones = np.ones_like(sel.step)

    def updated(i: int, raw: Any) -> Any:
        """Chunk ``i`` (stored as ``raw``, ``None`` when missing) with this write in it,
        encoded; ``None`` when it holds only the fill value (and is not to be kept)."""
        chunk = chain.new_fill_chunk() if raw is None else chain.decode(raw, keys[i]).copy()
        dst = _slices(local_start[i], local_count[i], sel.step)
        chunk[dst] = scalar if value is None else value[_slices(out_start[i], local_count[i],
                                                                ones)]
        if not write_empty_chunks and is_fill_chunk(chunk, chain.fill, chain.metadata.type_info):
            return None
        return chain.encode(chunk, write_empty_chunks=write_empty_chunks)

    # a shard reaching past the array's edge is read, changed and written back even when
    # written whole: another writer may have grown the array and written inner chunks
    # past the edge this writer knows
    if chain.sharded:
        edge = ((coords + 1) * np.array(chain.metadata.chunks, dtype=np.int64)
                > np.array(chain.metadata.shape, dtype=np.int64)).any(axis=1)

    def task(i: int) -> None:
        if chain.sharded and not (complete[i] and not edge[i]):
            # a shard's inner chunks may be other writers': its read-modify-write
            # excludes them (see engine.rmw)
            read_modify_write(store, keys[i], lambda raw: updated(i, raw),
                              limit=chain.stored_limit,
                              empty=lambda: chain.encode(chain.new_fill_chunk(),
                                                         write_empty_chunks=True),
                              options=plan.options)
            return
        new = updated(i, None if complete[i]
                      else store.get_limited(keys[i], chain.stored_limit))
        if new is None:
            store.delete(keys[i])
        else:
            store.set(keys[i], new)

    # one task per chunk: no two tasks touch the same key
    map_unordered_into(task, range(coords.shape[0]), threads=plan.options.threads)
