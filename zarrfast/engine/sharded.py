"""Reading and writing sharded arrays (the ``sharding_indexed`` codec).

A sharded array is two grids: shards (the array's chunks, one stored object
each) made of inner chunks.  Inner chunks tile the array like a regular grid
of ``inner chunk_shape``, so a selection is projected straight onto the inner
grid, and each row is then routed to its shard:

Reads
    per shard touched (one task each): the index comes from a bounded
    per-array cache or one byte-range request (suffix or prefix); only the
    touched inner chunks are fetched, byte ranges closer than
    ``config["shard_coalesce_gap"]`` merged into one request.  A selection
    covering a whole shard fetches the shard in one request.  Then every
    inner chunk is decoded and assembled on the pool by the same row reader as
    plain chunks.  Whole shards of a local store's files with zstd or blosc
    inner chunks take one ``ShardFiles.read`` kernel call each instead: the
    file read, its index checked and every inner chunk placed without the GIL
    (:func:`_read_whole_files`); a shard it cannot place goes the way above.
    A small box (at most ``BOX_CHUNKS`` inner chunks) of shards that are files
    is one ``decode_box_shards`` call once its shards are open and their indexes
    known (:func:`_decode_box_shards`); a box it cannot place goes the way above.
Writes
    one task per shard: a shard whose every inner chunk is overwritten is
    assembled in memory and written once; otherwise the stored shard is read,
    only the touched inner chunks are re-encoded, the others keep their bytes,
    and the shard is rewritten in one ``set`` (atomic on the local store).
    Inner chunks equal to the fill value are left out; a shard with none left
    is deleted.

Bad shards raise :class:`~zarrfast.errors.ChunkDecodeError` (or its
:class:`~zarrfast.errors.ChecksumError`) naming the shard key and the inner
chunk: an index whose checksum does not match, an entry pointing past the end
of the shard, overlapping entries.
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.codecs import CodecChain
from zarrfast.codecs.chain import BoundedDecoders
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.concurrency import map_io, map_io_then, map_unordered_into, map_weighted_into
from zarrfast.engine.boxes import BOX_CHUNKS, Box, box_chunks, run_parts, share_mode
from zarrfast.engine.chunked import (
    RAW_COST_RATIO,
    PreparedChain,
    Projection,
    RowReader,
    RowWriter,
    chunk_keys,
)
from zarrfast.engine.rmw import read_modify_write
from zarrfast.engine.selection import BasicSelection
from zarrfast.errors import (
    AllocationError,
    ChecksumError,
    ChunkDecodeError,
    CodecError,
    add_context,
)
from zarrfast.kernels import buffers as _buffers
from zarrfast.metadata.chunk_grid import DefaultChunkKeyEncoding, RegularChunkGrid
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import (
    ByteRequest,
    RangeByteRequest,
    RangeReader,
    Store,
    SuffixByteRequest,
)

__all__ = ["RectilinearShardedChain", "ShardedChain", "read_sharded", "shard_index_request",
           "write_sharded"]



def shard_index_request(layout: ShardFormat) -> ByteRequest:
    """The byte range of a shard's index."""
    return (SuffixByteRequest(layout.index_nbytes) if layout.at_end
            else RangeByteRequest(0, layout.index_nbytes))


def _c_order_strides(shape: Any) -> np.ndarray:
    """Strides, in elements, of C order over ``shape`` (int64)."""
    return np.array([math.prod(shape[d + 1:]) for d in range(len(shape))], dtype=np.int64)


class _IndexCache:
    """A bounded LRU of decoded shard indexes, per array."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, tuple[Any, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[Any, np.ndarray] | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is not None:
                self._data.move_to_end(key)
            return entry

    def refresh(self, entries: list[tuple[str, Any, int]], indexes: np.ndarray) -> None:
        """Cache ``indexes[i]`` under ``(key, token)`` for each ``(key, token, i)`` (a token
        ``None``: not cached), under one hold of the lock; an entry that has that token
        already is kept (a repeated read costs no new entry), only made the newest."""
        data = self._data
        with self._lock:
            for key, token, i in entries:
                if token is None:
                    continue
                cached = data.get(key)
                if cached is None or cached[0] != token:
                    data[key] = (token, indexes[i].copy())
                data.move_to_end(key)
            while len(data) > self.maxsize:
                data.popitem(last=False)

    def put(self, key: str, entry: tuple[Any, np.ndarray] | None) -> None:
        with self._lock:
            if entry is None:
                self._data.pop(key, None)
                return
            self._data[key] = entry
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)


class ShardedChain:
    """Per-array state of the sharded path: layout, inner chain, index cache."""

    #: whether the shards form a rectilinear grid (:class:`RectilinearShardedChain`)
    rectilinear = False

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain, *,
                 shard_shape: tuple[int, ...] | None = None,
                 inner: PreparedChain | None = None, cache: _IndexCache | None = None
                 ) -> None:
        self.metadata = metadata
        codec = codecs.sharding
        assert codec is not None
        self.codec = codec
        self.outer_bb = list(codecs.bb)
        self._codecs = codecs
        #: no valid stored shard is larger (see ``CodecChain.stored_limit``)
        self.stored_limit = codecs.stored_limit
        if shard_shape is None:
            shard_shape = metadata.chunks
        self.layout = layout = codec.format(shard_shape)
        # the inner chunks: an array of the shard's shape chunked by the inner shape
        fv = (metadata.type_info.default_fill_value() if metadata.fill_value is None
              else metadata.fill_value)
        inner_metadata = ArrayMetadata(
            shape=layout.shard_shape,
            data_type=metadata.type_info,
            chunk_grid=RegularChunkGrid(layout.inner_shape),
            chunk_key_encoding=DefaultChunkKeyEncoding(),
            fill_value=fv,
            codecs=codec.codecs,
        )
        self.inner = inner if inner is not None else PreparedChain(
            inner_metadata, codec.inner_chain(metadata.type_info))
        self.partial_reads = not self.outer_bb
        # bound for codecs after the shard (decompression bombs): the shard's chunks
        # uncompressed, twice, plus room for its index and checksums
        self._outer_limit = 2 * math.prod(shard_shape) * metadata.type_info.itemsize \
            + 2 * self.layout.index_nbytes + 2**20
        self._outer = BoundedDecoders(self.outer_bb)
        self.cache = cache if cache is not None else _IndexCache(
            int(config.get("shard_index_cache")))
        self.grid_shape = metadata.chunk_grid.grid_shape(metadata.shape)
        self.cps = np.array(self.layout.cps, dtype=np.int64)
        #: shards in the grid, and the C strides (in shards, in inner chunks) that give a
        #: shard's linear index and an inner chunk's index in its shard
        self.nshards = math.prod(self.grid_shape)
        self.grid_strides = _c_order_strides(self.grid_shape) if self.nshards <= 2**62 else None
        self.inner_strides = _c_order_strides(self.layout.cps)
        #: ``(store, whether its shards are files kernels may read)``, of the last store
        #: box reads asked (``_files_store``)
        self.files_store: tuple[Store, bool] | None = None
        self._shape_t, self._shard_t, self._inner_t = (
            tuple(int(x) for x in metadata.shape), tuple(self.layout.shard_shape),
            tuple(self.layout.inner_shape))

    # -- fetching -------------------------------------------------------------------
    def fetch_shard(self, store: Store, key: str) -> Any:
        data = store.get_limited(key, self.stored_limit)
        if data is None:
            return data
        return self.decode_shard(data, key)

    def decode_shard(self, data: Any, key: str) -> Any:
        """A stored shard's bytes undone by the codecs after the shard (if any)."""
        if not self.outer_bb:
            return data
        try:
            data = self._outer.decode(data, self._outer_limit)
        except ChecksumError as e:
            raise ChecksumError(f"shard {key!r}: {e}") from None
        except (CodecError, ValueError) as e:
            raise ChunkDecodeError(f"shard {key!r}: {e}") from None
        return data

    def fetch_index(self, store: Store, key: str) -> np.ndarray | None:
        """The shard's index: cached while the store's version token of the shard is
        unchanged (another writer replacing the shard changes it)."""
        return self._index(store.version(key), key,
                           lambda: store.get(key, shard_index_request(self.layout)))

    def reader_index(self, reader: RangeReader, key: str) -> np.ndarray | None:
        """:meth:`fetch_index` from a shard opened for range reads: the version its
        reader took, the index read from the same open value."""
        return self._index(reader.version, key,
                           lambda: reader.read(shard_index_request(self.layout)))

    def _index(self, token: Any, key: str, read: Any) -> np.ndarray | None:
        if token is not None:
            hit = self.cache.get(key)
            if hit is not None and hit[0] == token:
                return hit[1]
        raw = read()
        if raw is None:
            self.cache.put(key, None)
            return None
        index = self.layout.decode_index(raw, key)
        # the token was taken before the read: if the shard changed in between, the
        # next lookup sees a newer token and fetches again
        self.cache.put(key, None if token is None else (token, index))
        return index

    def inner_in_array(self, shard_coords: np.ndarray) -> int:
        """How many inner chunks of a shard intersect the array (edge shards have fewer)."""
        n = 1  # (Python ints: NumPy's per-call overhead on 3-element arrays was most of it)
        for c, size, shard, inner in zip(shard_coords.tolist(), self._shape_t, self._shard_t,
                                         self._inner_t, strict=True):
            n *= -(-min(shard, size - c * shard) // inner)
        return n

    def inner_in_array_many(self, shard_coords: np.ndarray) -> np.ndarray:
        """:meth:`inner_in_array` of every row of ``shard_coords`` (int64)."""
        shard = np.array(self._shard_t, dtype=np.int64)
        extent = np.minimum(shard, np.array(self._shape_t, dtype=np.int64)
                            - shard_coords.astype(np.int64, copy=False) * shard)
        return np.prod(-(-extent // np.array(self._inner_t, dtype=np.int64)), axis=1,
                       dtype=np.int64)

    def shard_chain(self, shard_coords: np.ndarray) -> ShardedChain:
        """The chain of the shard at ``shard_coords`` (its layout, its index requests)."""
        return self


class RectilinearShardedChain(ShardedChain):
    """A rectilinear grid of shards.  Every shard is a whole number of inner chunks, so
    the inner chunks tile the array as a regular grid; only which shard an inner chunk
    is in, and each shard's layout (one per shard shape), vary."""

    rectilinear = True

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain) -> None:
        grid = metadata.chunk_grid
        super().__init__(metadata, codecs, shard_shape=tuple(codecs.chunk_shape))
        self._subs: dict[tuple[int, ...], ShardedChain] = {self.layout.shard_shape: self}
        self._lock = threading.Lock()
        #: per dimension the shards' boundaries, in elements and in inner chunks
        self.bounds = grid.boundaries(metadata.shape)
        self.inner_bounds = [b // c for b, c in zip(self.bounds, self.layout.inner_shape,
                                                     strict=True)]
        self._shard_sizes = [np.diff(b) for b in self.bounds]

    def shard_shape(self, shard_coords: Any) -> tuple[int, ...]:
        return tuple(int(s[c]) for s, c in zip(self._shard_sizes, shard_coords, strict=True))

    def shard_chain(self, shard_coords: np.ndarray) -> ShardedChain:
        shape = self.shard_shape(shard_coords)
        sub = self._subs.get(shape)
        if sub is None:
            with self._lock:
                sub = self._subs.get(shape)
                if sub is None:
                    sub = ShardedChain(self.metadata, self.codecs_of, shard_shape=shape,
                                       inner=self.inner, cache=self.cache)
                    self._subs[shape] = sub
        return sub

    @property
    def codecs_of(self) -> CodecChain:
        return self._codecs

    def inner_in_array(self, shard_coords: np.ndarray) -> int:
        n = 1
        for b, c, k, s in zip(self.bounds, self.layout.inner_shape, shard_coords.tolist(),
                              self.metadata.shape, strict=True):
            extent = min(int(b[k + 1]), s) - int(b[k])
            n *= -(-extent // c)
        return n

    def inner_in_array_many(self, shard_coords: np.ndarray) -> np.ndarray:
        return np.array([self.inner_in_array(c) for c in shard_coords], dtype=np.int64)

    def group_rows(self, proj: Projection, path: str):
        """As :func:`_group_by_shard`, for a rectilinear grid of shards."""
        ndim = proj.coords.shape[1]
        shard_coords = np.empty_like(proj.coords)
        local = np.empty_like(proj.coords)
        cps = np.empty_like(proj.coords)
        for d in range(ndim):
            ib = self.inner_bounds[d]
            k = np.searchsorted(ib, proj.coords[:, d], side="right") - 1
            shard_coords[:, d] = k
            local[:, d] = proj.coords[:, d] - ib[k]
            cps[:, d] = ib[k + 1] - ib[k]
        inner_lin = np.zeros(proj.nrows, dtype=np.int64)
        for d in range(ndim):
            inner_lin = inner_lin * cps[:, d] + local[:, d]
        if proj.nrows == 0:
            return [], shard_coords[:0], [], inner_lin
        shard_lin = np.ravel_multi_index(shard_coords.T, self.grid_shape) if ndim else \
            np.zeros(proj.nrows, np.int64)
        return (*_split_by_shard(shard_lin, shard_coords, self.metadata, path, self.nshards),
                inner_lin)


def _group_by_shard(chain: ShardedChain, proj: Projection, path: str):
    """Rows grouped by shard: (shard keys, shard coords, per-shard row arrays, inner index)."""
    if chain.rectilinear:
        return chain.group_rows(proj, path)  # type: ignore[attr-defined]
    cps = chain.cps
    if not proj.coords.shape[1] or chain.nshards > 2**62:
        shard_coords = proj.coords // cps
        inner_lin = (np.ravel_multi_index((proj.coords % cps).T, chain.layout.cps)
                     if proj.coords.shape[1] else np.zeros(proj.nrows, np.int64))
        shard_lin = (np.ravel_multi_index(shard_coords.T, chain.grid_shape)
                     if proj.coords.shape[1] else np.zeros(proj.nrows, np.int64))
    else:  # (one pass for both, no bounds checks: the projection's chunks are the grid's)
        shard_coords, inner = np.divmod(proj.coords, cps)
        inner_lin = inner @ chain.inner_strides
        shard_lin = shard_coords @ chain.grid_strides
    if proj.nrows == 0 or (shard_lin == shard_lin[0]).all():  # one shard: the common case
        keys = chunk_keys(chain.metadata, path, shard_coords[:1])
        return keys[:proj.nrows], shard_coords[:1], [np.arange(proj.nrows)], inner_lin
    return (*_split_by_shard(shard_lin, shard_coords, chain.metadata, path, chain.nshards),
            inner_lin)


def _split_by_shard(shard_lin: np.ndarray, shard_coords: np.ndarray, metadata, path: str,
                    nshards: int):
    """The rows of each shard (by its linear index ``shard_lin``, of ``nshards``), in
    stable order: (shard keys, shard coords, per-shard row arrays)."""
    if nshards <= 2**62:  # (a counting sort when the rows are not much fewer than shards)
        order, _, starts = _kernels.group_by_chunk(
            np.ascontiguousarray(shard_lin, dtype=np.int64), nshards)
    else:
        order = np.argsort(shard_lin, kind="stable")
        ordered = shard_lin[order]
        change = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        starts = np.append(np.flatnonzero(change), len(order))
    first = order[starts[:-1]]
    # (slices of `order`: np.split makes each piece through Python-level swapaxes calls)
    bounds = starts.tolist()
    return (chunk_keys(metadata, path, shard_coords[first]), shard_coords[first],
            [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)])


def read_sharded(store: Store, path: str, chain: ShardedChain, sel: BasicSelection,
                 out: np.ndarray) -> None:
    """Read a selection of a sharded array into ``out`` (shape ``sel.full_shape``)."""
    if out.size == 0 or _read_box(store, path, chain, sel, out):
        return
    proj = Projection(chain.metadata.shape, chain.inner, sel)
    keys, shard_coords, groups, inner_lin = _group_by_shard(chain, proj, path)
    rows_per_shard = np.array([len(rows) for rows in groups], dtype=np.int64)
    # which shards the read covers whole (all their inner chunks inside the array)
    whole_shards = (rows_per_shard >= chain.inner_in_array_many(shard_coords)
                    if chain.partial_reads else np.ones(len(groups), dtype=np.bool_)).tolist()
    gap = int(config.get("shard_coalesce_gap"))
    reader = RowReader(proj, out)
    inner = chain.inner
    # uncompressed inner chunks are copied from the fetched bytes into `out` during
    # the fetch, one kernel call per fetched buffer, and so are zstd and blosc ones
    # (``decode_stored``); others are decoded one by one
    raw_inner = inner.fast and not inner.bb
    # (on remote stores the fetches run on the I/O pool and only note what to place:
    # placing -- decoding -- belongs on the compute pool, which `threads` sizes)
    decode_in_fetch = reader.batch_decode
    placed = np.zeros(proj.nrows, dtype=np.bool_)
    #: remote stores: per shard, the placements its fetch found, made by the compute step
    deferred: dict[int, list[tuple]] | None = (
        {g: [] for g in range(len(groups))} if store.batched_reads else None)

    def place(g: int, key: str, blob: Any, rows: np.ndarray, offsets: np.ndarray,
              sizes: np.ndarray, layout: ShardFormat) -> None:
        if deferred is not None:
            deferred[g].append((key, blob, rows, offsets, sizes, layout))
        else:
            place_now(key, blob, rows, offsets, sizes, layout)

    def place_now(key: str, blob: Any, rows: np.ndarray, offsets: np.ndarray,
                  sizes: np.ndarray, layout: ShardFormat) -> None:
        """Rows ``rows`` have their stored bytes at ``offsets`` (``sizes`` long) in
        ``blob``."""
        if not raw_inner:
            if decode_in_fetch:
                # zstd, blosc: decoded into place in one kernel call; what it cannot decode
                # is left to the per-chunk path (which says why)
                rest = reader.decode_stored(rows, np.frombuffer(blob, dtype=np.uint8),
                                            offsets, sizes)
                placed[rows] = True
                rows, offsets, sizes = rows[rest], offsets[rest], sizes[rest]
                placed[rows] = False
            view = memoryview(blob)
            for r, off, nb in zip(rows.tolist(), offsets.tolist(), sizes.tolist(),
                                  strict=True):
                # (a copy when the fetch buffer is reused for this thread's next shard)
                payload[r] = bytes(view[off:off + nb]) if thread_buffers else view[off:off + nb]
            return
        bad = np.flatnonzero(sizes != inner.chunk_nbytes)
        if bad.size:
            j = int(bad[0])
            raise ChunkDecodeError(
                f"shard {key!r}, inner chunk {layout.inner_name(int(inner_lin[rows[j]]))}: "
                f"stored {int(sizes[j])} bytes, expected {inner.chunk_nbytes} bytes "
                f"(no compression)"
            )
        # (a large output is written once and not read back soon: streamed stores)
        _kernels.copy_regions(
            np.frombuffer(blob, dtype=np.uint8), offsets + reader.src_offsets[rows],
            reader.src_strides, reader.out_flat, reader.dst_offsets[rows], reader.out_strides,
            proj.local_count[rows], inner.itemsize, inner.swap_unit,
            reader.out_flat.nbytes >= _kernels.stream_min(),
        )
        placed[rows] = True

    def is_whole(g: int) -> bool:
        return whole_shards[g]

    # Whole shards of a local store are read into one buffer reused by every wave of a
    # large read (fresh buffers per shard cost a page fault per 4 KiB, more than the
    # copy itself).
    slots: dict[int, tuple[int, int]] = {}
    wave_buffer: list[np.ndarray] = []

    def plan_slots(wave: list[int]) -> None:
        slots.clear()
        if not (chain.partial_reads and store.fast_get_into):
            return
        pos = 0
        for g in wave:
            if not is_whole(g):
                continue
            try:
                size = store.getsize(keys[g])
            except FileNotFoundError:
                continue
            if pos + size > WAVE_BYTES:
                break  # the rest are read into buffers of their own
            slots[g] = (pos, size)
            pos += size
        if slots and (not wave_buffer or wave_buffer[0].nbytes < pos):
            wave_buffer[:] = []
            wave_buffer.append(_buffers.empty(  # as large as a wave needs
                pos, np.uint8, where="",
                what=f"a buffer for a wave of {len(slots)} whole shards"))

    # When every inner chunk is placed during the fetch (uncompressed, zstd, blosc), a whole
    # shard of a local store is read into a buffer of the fetching thread's, reused for
    # its next shard while still in the cache.
    thread_buffers: dict[int, np.ndarray] = {}
    use_thread_buffers = ((raw_inner or decode_in_fetch) and chain.partial_reads
                          and store.fast_get_into)

    def read_shard(g: int) -> Any:
        key = keys[g]
        if use_thread_buffers:
            try:
                size = store.getsize(key)
            except FileNotFoundError:
                size = -1  # (removed, or never written: get says which)
            if 0 <= size <= THREAD_BUFFER_BYTES:
                me = threading.get_ident()
                buf = thread_buffers.get(me)
                if buf is None or buf.nbytes < size:  # (headroom: shard sizes vary)
                    thread_buffers.pop(me, None)
                    buf = thread_buffers[me] = _buffers.empty(
                        size + size // 4, np.uint8, where=f"shard {key!r}",
                        what="a buffer to read the shard into")
                if store.get_into(key, buf[:size]) == size:
                    return buf[:size]
            return subs[g].fetch_shard(store, key)
        slot = slots.get(g)
        if slot is not None:
            target = wave_buffer[0][slot[0]:slot[0] + slot[1]]
            if store.get_into(key, target) == slot[1]:
                return target
        return subs[g].fetch_shard(store, key)  # (replaced or removed since its size was read)

    def fetch(g: int) -> None:
        key, rows = keys[g], groups[g]
        sub = subs[g]
        layout = sub.layout
        if is_whole(g):
            token = store.version(key) if chain.partial_reads else None
            data = read_shard(g)
            if data is None:
                return
            index = layout.index_of_shard(data, key)
            if token is not None:
                chain.cache.put(key, (token, index))
            entries = index[inner_lin[rows]]
            used = entries[:, 0] != EMPTY
            place(g, key, data, rows[used], entries[used, 0].astype(np.int64),
                  entries[used, 1].astype(np.int64), layout)
            return
        index = sub.fetch_index(store, key)
        if index is None:
            return
        entries = index[inner_lin[rows]]
        used = entries[:, 0] != EMPTY
        if not used.any():
            return
        rows_used = rows[used]
        starts = entries[used, 0].astype(np.int64)
        ends = starts + entries[used, 1].astype(np.int64)
        # coalesce ranges (sorted by offset) whose gap is at most `gap` bytes
        order = np.argsort(starts, kind="stable")
        starts, ends, rows_used = starts[order], ends[order], rows_used[order]
        reach = np.maximum.accumulate(ends)
        breaks = np.flatnonzero(starts[1:] - reach[:-1] > gap) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks, [len(starts)])) - 1
        req_start = starts[first]
        req_end = reach[last]
        blobs = store.get_many(
            [key] * len(first),
            [RangeByteRequest(int(b), int(e)) for b, e in zip(req_start, req_end, strict=True)],
        )
        for q, blob in enumerate(blobs):
            base = int(req_start[q])
            got = 0 if blob is None else len(blob)
            ks = slice(int(first[q]), int(last[q]) + 1)
            short = np.flatnonzero(ends[ks] - base > got)
            if short.size:
                k = int(first[q]) + int(short[0])
                raise ChunkDecodeError(
                    f"shard {key!r}: inner chunk "
                    f"{layout.inner_name(int(inner_lin[rows_used[k]]))} points past the "
                    f"end of the shard (bytes {int(starts[k])}..{int(ends[k])}, only "
                    f"{base + got} readable)"
                )
            place(g, key, blob, rows_used[ks], starts[ks] - base, ends[ks] - starts[ks],
                  layout)

    def assemble(i: int) -> None:
        key = keys[row_shard[i]]
        try:
            reader.read(i, payload[i], key)
        except ChunkDecodeError as e:
            context = (f"shard {key!r}, inner chunk "
                       f"{subs[row_shard[i]].layout.inner_name(int(inner_lin[i]))}")
            add_context(e, context, f"{e} [{context}]")
            raise
        payload[i] = None  # let the fetched bytes go

    threads = max(1, config.get("threads"))

    def split_rows(g: int, _: None) -> list[tuple[str, Any]]:
        """What is left to do for shard ``g`` once fetched (remote stores), in parts of
        up to ``len(rows) / threads`` rows: the placements its fetch found, then the
        rows none covers (inner chunks not stored: the fill value)."""
        assert deferred is not None
        parts: list[tuple[str, Any]] = []
        covered = []
        for key, blob, rows, offsets, sizes, layout in deferred.pop(g):
            covered.append(rows)
            per = max(1, -(-len(rows) // threads))
            for a in range(0, len(rows), per):
                sl = slice(a, a + per)
                parts.append(("place", (key, blob, rows[sl], offsets[sl], sizes[sl], layout)))
        rest = groups[g]
        if covered:
            rest = np.setdiff1d(rest, np.concatenate(covered), assume_unique=True)
        rest = rest.tolist()
        per = max(1, -(-len(rest) // threads))
        parts += [("rows", rest[a:a + per]) for a in range(0, len(rest), per)]
        return parts

    def assemble_part(part: tuple[str, Any]) -> None:
        kind, what = part
        if kind == "place":
            place_now(*what)
            rows = what[2]
            what = rows[~placed[rows]].tolist()  # (not decoded by the batch kernel)
        for i in what:
            assemble(i)

    # Whole shards of a local store's files, zstd, blosc or uncompressed inner chunks:
    # one kernel call per shard, without the GIL, reads the file, checks its index and
    # places every inner chunk (see _read_whole_files).  The shards it leaves go the way
    # below.  (25 shards of up to 256 uncompressed 8 KiB chunks, two threads: 6.5-7.6
    # ms against 10.2-11.3 ms by the way below, medians of 60 reads; one thread alike.)
    done = _read_whole_files(store, chain, keys, groups, inner_lin, reader, is_whole)
    todo = [g for g, d in enumerate(done) if not d]
    if not todo:
        return
    # (what the tasks above use, made only when some shard is left to them)
    # each shard's own chain: the array's, but for a rectilinear grid of shards
    subs = [chain.shard_chain(c) for c in shard_coords]
    payload: list[Any] = [None] * proj.nrows
    row_shard = np.empty(proj.nrows, dtype=np.int64)
    row_shard[np.concatenate(groups)] = np.repeat(np.arange(len(groups)), rows_per_shard)
    # Shards are processed in waves of at most WAVE_BYTES of (decoded) inner chunks, so
    # the fetched bytes held at once stay bounded however large the selection is.
    waves = [[todo[k] for k in w] for w in _waves([groups[g] for g in todo],
                                                   inner.chunk_nbytes)]
    for wave in waves:
        if len(waves) > 1 and not use_thread_buffers:  # one wave: fresh buffers cost no more
            plan_slots(wave)
        # fetch: each task fills the payload slots (or output regions) of its own
        # shard's rows only; remote stores get many requests in flight at once
        if store.batched_reads:
            # each shard's inner chunks are decoded on the pool as soon as it is fetched,
            # while the other shards' requests are still in flight
            map_io_then(fetch, wave, assemble_part, split_rows)
            continue
        else:
            # (reading is cheaper per byte than decoding: small fetches stay inline,
            # unless the fetch decodes too)
            map_unordered_into(fetch, wave,
                               work_bytes=sum(len(groups[g]) for g in wave) * inner.chunk_nbytes
                               // (1 if decode_in_fetch else RAW_COST_RATIO))
        rows = np.concatenate([groups[g] for g in wave])
        if raw_inner or decode_in_fetch:
            rows = rows[~placed[rows]]
        # Every task writes a disjoint region of `out` (inner chunks partition the array).
        map_unordered_into(assemble, rows.tolist(), work_bytes=len(rows) * inner.chunk_nbytes)


def _assemble_raw_shard(layout: ShardFormat, inner: PreparedChain, writer: RowWriter,
                        proj: Projection, rows: np.ndarray, lin: np.ndarray,
                        write_empty_chunks: bool, reuse: bool = False) -> np.ndarray | None:
    """The bytes of a shard inside the array whose every inner chunk is written whole and
    stored uncompressed, built in one buffer: the same bytes the general path assembles
    (the inner chunks in index order, each after the last).  With ``reuse`` the buffer is
    this thread's, valid until its next call (for a store that ``copies_values``).
    ``None`` when some inner chunk equals the fill value and must be left out (the
    general path then compacts the shard)."""
    nb = inner.chunk_nbytes
    n = len(rows)
    assert n == layout.n_inner and not proj.edge[rows].any()  # (an edge shard: locked)
    base = layout.data_start
    total = n * nb + layout.index_nbytes
    if reuse:
        buf = _shard_buffer(total)
    else:
        buf = _buffers.empty(total, np.uint8, where="",
                             what=f"a shard of {layout.n_inner} inner chunks")
    slots = base + lin.astype(np.int64) * nb  # (every inner chunk once: chunk j at slot j)
    _kernels.copy_regions(
        writer.value_flat, writer.src_offsets[rows], writer.value_strides,
        buf, slots + writer.dst_offsets[rows], writer.dst_strides,
        proj.local_count[rows], inner.itemsize, inner.swap_unit,
    )
    # (the inner chunks fill [base, base + n * nb), in index order)
    if not write_empty_chunks and inner.any_fill_run(buf, base, n):
        return None
    raw_index = layout.dense_index(nb)
    if len(raw_index) != layout.index_nbytes:  # pragma: no cover - fixed-size index codecs
        return None
    at = n * nb if layout.at_end else 0
    buf[at:at + layout.index_nbytes] = raw_index
    return buf


def _write_shard_direct(store: Store, key: str, layout: ShardFormat, writer: RowWriter,
                        rows: np.ndarray, lin: np.ndarray) -> bool:
    """Write a whole shard whose every inner chunk is stored uncompressed, none past the
    array's edge, straight from the written value (``store.set_regions``: the inner
    chunks in index order, then the index, or the index first): the bytes
    :func:`_assemble_raw_shard` builds, without building them.  False, with nothing
    written, for a shard this cannot write: an edge shard, or one with an inner chunk
    equal to the fill value (unless empty chunks are written), which the general path
    leaves out."""
    proj = writer.proj
    nb = writer.chain.chunk_nbytes
    if len(rows) != layout.n_inner or proj.edge[rows].any():
        return False
    raw_index = layout.dense_index(nb)
    if len(raw_index) != layout.index_nbytes:  # pragma: no cover - fixed-size index codecs
        return False
    strides, shape = writer.stored_layout  # type: ignore[misc]
    inner = writer.chain
    skipped = store.set_regions(
        [key], writer.value_flat, writer.src_offsets[rows[np.argsort(lin)]][None, :],
        strides, shape, inner.itemsize,
        fill=None if writer.write_empty_chunks else inner._fill_chunk_item_arr,
        extra=raw_index, extra_first=not layout.at_end)
    return not skipped[0]


class _ShardScratch(threading.local):
    buf: np.ndarray | None = None


_shard_scratch = _ShardScratch()


def _shard_buffer(nbytes: int) -> np.ndarray:
    """This thread's buffer for assembling a shard (reused: its pages are already mapped,
    where a fresh multi-MiB buffer costs a page fault per 4 KiB on first touch)."""
    buf = _shard_scratch.buf
    if buf is None or buf.nbytes < nbytes:
        _shard_scratch.buf = None
        buf = _buffers.empty(nbytes, np.uint8, where="", what="a buffer to assemble a shard in")
        _shard_scratch.buf = buf
    return buf[:nbytes]


#: bytes of inner chunks (decoded size) whose shards a sharded read fetches at once
WAVE_BYTES = 64 * 2**20
#: the largest shard read into a fetching thread's reused buffer (larger ones get
#: buffers of their own)
THREAD_BUFFER_BYTES = 16 * 2**20


def _waves(groups: list[np.ndarray], chunk_nbytes: int) -> list[list[int]]:
    """Consecutive runs of shard groups holding at most WAVE_BYTES of inner chunks
    (at least one shard each)."""
    waves: list[list[int]] = [[]]
    size = 0
    for g, rows in enumerate(groups):
        n = len(rows) * chunk_nbytes
        if waves[-1] and size + n > WAVE_BYTES:
            waves.append([])
            size = 0
        waves[-1].append(g)
        size += n
    return waves


def _read_whole_files(store: Store, chain: ShardedChain, keys: list[str],
                      groups: list[np.ndarray], inner_lin: np.ndarray, reader: RowReader,
                      is_whole: Any) -> list[bool]:
    """Read the whole shards of a read (``is_whole(g)``) with ``ShardFiles.run``, when
    the store's values are files kernels may read (``file_paths``), the inner chunks
    are zstd, blosc or uncompressed (a ``box_codec``: uncompressed ones are placed from
    the shard as read) and the index is little-endian bytes (and crc32c).  One runner
    per thread, each a few calls taking shards in turn: per shard the kernel reads the
    file, checks the index and places every inner chunk, the fill value where the
    index has none, with the GIL released throughout.  The Python left per shard is
    caching the index it decoded, once the runners are done.

    Returns, per shard, whether it is done.  A shard the kernel cannot place (a link
    on its path, too large, a bad index, an inner chunk that does not decode) is not:
    the general path reads it again, and places it or raises naming the shard key and
    the inner chunk."""
    done = [False] * len(groups)
    layout = chain.layout
    if (_kernels.ShardFiles is None or chain.inner.box_codec is None or not chain.partial_reads
            or chain.rectilinear or store.batched_reads or layout.index_checksum is None):
        return done
    whole = [g for g in range(len(groups)) if is_whole(g)]
    files = store.file_paths(keys) if whole else None
    if files is None:
        return done
    root, paths = files
    inner = chain.inner
    proj = reader.proj
    bounds = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(rows) for rows in groups], out=bounds[1:])
    plan = _kernels.ShardFiles(
        paths, root, np.concatenate(groups).astype(np.int64, copy=False), bounds,
        inner_lin.astype(np.int64, copy=False), layout.n_inner, layout.index_nbytes,
        # (keep 0: a thread's shard-sized file buffer lives for one call, not longer)
        layout.at_end, layout.index_checksum, chain.stored_limit, 0,
        inner.chunk_nbytes, reader.src_offsets, reader.src_strides, reader.out_flat,
        reader.dst_offsets, reader.out_strides, proj.local_count, inner.itemsize,
        inner.swap_unit, reader._direct_range(0, proj.nrows), inner.fill_chunk_item)
    todo = np.array(whole, dtype=np.int64)
    status = np.full(len(whole), -1, dtype=np.int8)
    cursor = np.zeros(1, dtype=np.int64)
    # (the decoded indexes, kept for later partial reads: 16 bytes per inner chunk of
    # the shards, about as many as the projection has rows)
    indexes = np.empty((len(whole), layout.n_inner, 2), dtype=np.uint64)
    # calls return to Python every WAVE_BYTES of inner chunks: an error or an interrupt
    # in one thread stops the others between calls
    per_call = max(1, WAVE_BYTES // max(1, layout.n_inner * inner.chunk_nbytes))
    halt = threading.Event()

    def run(_: int) -> None:
        decoder = inner.batch_decoder()
        try:
            while not halt.is_set() and plan.run(decoder, todo, status, cursor, per_call,
                                                 indexes):
                pass
        except BaseException:
            halt.set()
            raise

    # One runner per thread, taking shards in turn (an atomic cursor): each shard is
    # read by one call, which writes the rows of that shard only -- disjoint regions of
    # `out` (the inner chunks partition the array); each thread has its own decoder.
    threads = max(1, int(config.get("threads")))
    map_unordered_into(run, range(min(threads, len(whole))),
                       work_bytes=int(np.diff(bounds)[todo].sum()) * inner.chunk_nbytes)
    decoded, no_data = _kernels.DECODED, _kernels.NO_DATA
    read: list[tuple[str, Any, int]] = []
    for i, (g, code) in enumerate(zip(whole, status.tolist(), strict=True)):
        if code == no_data:  # (no shard: its rows hold the fill value)
            done[g] = True
        elif code == decoded:
            done[g] = True
            read.append((keys[g], store.file_version(plan.stamp(g)), i))
        # (FAILED, or not read after an error: the general path reads it again)
    # each index cached under the version token of the file read
    chain.cache.refresh(read, indexes)
    return done


def _read_box(store: Store, path: str, chain: ShardedChain, sel: BasicSelection,
              out: np.ndarray) -> bool:
    """The small-read fast path: a step-1 selection of at most ``BOX_CHUNKS`` inner
    chunks, of one shard or several, costs per shard one open (its version, to check
    the cached index) and one ranged read per run of nearby inner chunks, all into one
    buffer; then one kernel call decodes and places them (see
    :mod:`zarrfast.engine.boxes`; with more threads, one call per thread).  Shards that
    are open files skip the buffer: one ``decode_ranges`` call reads and decodes each
    inner chunk.  ``False`` (having done nothing) for other selections."""
    inner = chain.inner
    if chain.rectilinear or not chain.partial_reads or store.batched_reads:
        return False
    n = box_chunks(sel, inner)
    if not 0 < n <= BOX_CHUNKS:
        return False
    share = share_mode(n, inner) if inner.box_codec is not None else None
    if share is not None and _decode_box_shards(store, path, chain, sel, out, share):
        return True
    box = Box(inner, sel, out, chain.cps)
    bounds = box.bounds.tolist()
    plans: list[_ShardPlan] = []
    try:
        stored = 0
        for g, key in enumerate(chunk_keys(chain.metadata, path, box.shards)):
            lo, hi = bounds[g], bounds[g + 1]
            reader = store.open_ranges(key)
            if reader is None:
                box.fill(range(lo, hi))
                continue
            plan = _ShardPlan(reader, key)
            plans.append(plan)
            index = chain.reader_index(reader, key)
            if index is None:
                box.fill(range(lo, hi))
                continue
            stored += plan.plan(chain, box, index, lo, hi)
        if not stored or _decode_box_ranges(chain, box, plans, stored):
            return True
        gap = int(config.get("shard_coalesce_gap"))
        total = 0
        for plan in plans:
            total = plan.coalesce(gap, total)
        # (bounded: at most BOX_CHUNKS inner chunks of at most stored_limit bytes, and
        # the gaps between them)
        buf = inner._batch_buffer(1, total)
        for plan in plans:
            plan.read(buf, chain, box)
    finally:
        for plan in plans:
            plan.reader.close()
    rows = np.array([r for p in plans for r in p.rows], dtype=np.int64)
    offsets = np.array([o for p in plans for o in p.offsets], dtype=np.int64)
    sizes = np.array([n for p in plans for n in p.sizes], dtype=np.int64)
    keys = [p.key for p in plans for _ in p.rows]

    def place(part: range, share: bool) -> None:
        sl = slice(part.start, part.stop)  # (a view: indexing by a range copies)
        for j in box.place_stored(rows[sl], buf, offsets[sl], sizes[sl], share):
            # (does not decode cleanly, or has the wrong size: the per-chunk path says why)
            j += part.start
            _place_inner_slowly(chain, box, int(rows[j]), keys[j],
                                bytes(buf[int(offsets[j]):int(offsets[j] + sizes[j])]))

    # (every part places disjoint rows: the inner chunks partition the box)
    run_parts(place, len(rows), inner)
    return True


def _decode_box_shards(store: Store, path: str, chain: ShardedChain, sel: BasicSelection,
                       out: np.ndarray, share: bool) -> bool:
    """A box of shards that are files, read in one kernel call
    (``ChunkDecoder.decode_box_shards``): the shards are opened here (each one's
    version checks its cached index), and the kernel plans, reads with ``pread``,
    decodes and places the inner chunks, and fills the empty ones.  ``False`` when the
    store's shards are not files, or an inner chunk could not be placed (too large,
    past the end of its shard, does not decode): the caller then reads the box its
    own way, which says what is wrong."""
    inner = chain.inner
    if not inner.ndim or not _files_store(store, chain):
        return False  # (a 0-d array's one inner chunk: the general path)
    ranges = [range(s // (c * p), (s + m - 1) // (c * p) + 1)
              for s, m, c, p in zip(sel.start.tolist(), sel.count.tolist(), inner.chunk_shape,
                                    chain.layout.cps, strict=True)]
    coords = np.array(list(itertools.product(*ranges)), dtype=np.int64)
    readers = []
    fds: list[int] = []
    indexes: list[Any] = []
    try:
        for key in chunk_keys(chain.metadata, path, coords):
            reader = store.open_ranges(key)
            if reader is None:
                fds.append(-1)
                indexes.append(None)
                continue
            readers.append(reader)
            fd = reader.fileno()
            if fd is None:
                return False
            fds.append(fd)
            indexes.append(chain.reader_index(reader, key))
        status = inner.batch_decoder().decode_box_shards(
            np.array(fds, dtype=np.int64), indexes, sel.start, sel.count,
            inner.chunk_shape_arr, chain.cps, inner.chunk_strides,
            out.reshape(-1).view(np.uint8), np.array(out.strides, dtype=np.int64),
            inner.itemsize, inner.swap_unit, inner._fill_native_arr, inner.stored_limit,
            inner.box_direct, share)
    finally:
        for reader in readers:
            reader.close()
    return status is None


def _files_store(store: Store, chain: ShardedChain) -> bool:
    """Whether ``store``'s values are files that kernels may read themselves (see
    ``Store.file_paths``); kept on ``chain`` for its last store."""
    last = chain.files_store
    if last is None or last[0] is not store:
        last = chain.files_store = (store, store.file_paths(()) is not None)
    return last[1]


#: the largest offset an int64 holds (an index entry past it is read by the buffer path)
_MAX_OFFSET = 2**63 - 1


def _decode_box_ranges(chain: ShardedChain, box: Box, plans: list[_ShardPlan],
                       stored: int) -> bool:
    """Read and decode a box's ``stored`` planned inner chunks of shards that are open
    files (a local store): one ``decode_ranges`` call (``pread`` and decode -- or, not
    compressed, place -- per inner chunk without the GIL; with two threads shared with
    the kernels' helper thread).  ``False``, having done nothing, when a shard is not an
    open file, the inner chunks have no batch kernel, or one is larger than the kernel
    takes."""
    inner = chain.inner
    if inner.box_codec is None:
        return False
    fd_list: list[int] = []
    starts: list[int] = []
    sizes_list: list[int] = []
    rows_list: list[int] = []
    largest = 2 * inner.chunk_nbytes + 65536
    for p in plans:
        fd = p.reader.fileno()
        if fd is None:
            return False
        if not p.rows:
            continue
        if max(p.sizes) > largest or max(p.offsets) > _MAX_OFFSET:
            return False  # (the buffer path reads them, or says what is wrong)
        fd_list += [fd] * len(p.rows)
        starts += p.offsets
        sizes_list += p.sizes
        rows_list += p.rows
    fd_arr = np.array(fd_list, dtype=np.int64)
    offsets = np.array(starts, dtype=np.int64)
    sizes = np.array(sizes_list, dtype=np.int64)
    # every row stored: they are the box's rows in order (each plan's in row order,
    # the plans in shard order), and the box's own arrays serve as they are
    every = stored == len(box.src_offsets)
    rows = None if every else np.array(rows_list, dtype=np.int64)
    plan_of = [p for p in plans for _ in p.rows]

    def place(part: range, share: bool) -> None:
        sl = slice(part.start, part.stop)
        pick = sl if rows is None else rows[sl]
        status, errors = inner.batch_decoder().decode_ranges(
            fd_arr[sl], offsets[sl], sizes[sl], box.src_offsets[pick], inner.chunk_strides,
            box.out_flat, box.dst_offsets[pick], box.out_strides, box.shapes[pick],
            inner.itemsize, inner.swap_unit, box.direct[pick], share=share)
        if not np.count_nonzero(status):
            return
        # (cannot be read whole, or does not decode: read again, and say why; the rows
        # that could not be read first, as a shard cut short is what they say)
        for j in sorted(np.flatnonzero(status).tolist(), key=lambda j: errors[j] == 0):
            j += part.start
            a, size, r, plan = starts[j], sizes_list[j], rows_list[j], plan_of[j]
            raw = bytearray(size)
            got = plan.reader.read_into(raw, a)
            if got < size:
                raise ChunkDecodeError(
                    f"shard {plan.key!r}: inner chunk "
                    f"{chain.layout.inner_name(int(box.inner[r]))} points past the end of "
                    f"the shard (bytes {a}..{a + size}, {got} of them readable)")
            _place_inner_slowly(chain, box, r, plan.key, bytes(raw))

    # (every part places disjoint rows: the inner chunks partition the box)
    run_parts(place, stored, inner)
    return True


def _place_inner_slowly(chain: ShardedChain, box: Box, r: int, key: str, raw: bytes) -> None:
    """Place row ``r`` of a box, inner chunk ``raw`` of shard ``key``, the per-chunk way,
    which says what is wrong with it (the batch kernel did not place it: it does not
    decode, or could not be read there -- read again here, it may be placed)."""
    inner = chain.inner
    name = chain.layout.inner_name(int(box.inner[r]))
    if inner.fast and not inner.bb and len(raw) != inner.chunk_nbytes:
        raise ChunkDecodeError(
            f"shard {key!r}, inner chunk {name}: stored {len(raw)} bytes, expected "
            f"{inner.chunk_nbytes} bytes (no compression)")
    try:
        box.place_one(r, raw, key)
    except ChunkDecodeError as e:
        context = f"shard {key!r}, inner chunk {name}"
        add_context(e, context, f"{e} [{context}]")
        raise


class _ShardPlan:
    """One shard of a box read: its open value, its stored inner chunks the box needs
    (``rows``: their rows, in row order; ``offsets`` and ``sizes``: where in the
    shard), and, for a read into one buffer, the runs that read them."""

    __slots__ = ("key", "offsets", "reader", "rows", "runs", "sizes")

    def __init__(self, reader: RangeReader, key: str) -> None:
        self.reader = reader
        self.key = key
        self.rows: list[int] = []
        self.offsets: list[int] = []  # in the shard; after read(), in the buffer
        self.sizes: list[int] = []
        self.runs: list[list[int]] = []  # [start, end, position in the buffer]

    def plan(self, chain: ShardedChain, box: Box, index: np.ndarray, lo: int,
             hi: int) -> int:
        """Plan rows ``lo:hi`` (``index``: the shard's index): rows not stored are
        filled now.  Returns how many are stored."""
        limit = chain.inner.stored_limit
        missing = []
        rows, offsets, sizes = self.rows, self.offsets, self.sizes
        for r, (off, nb) in zip(range(lo, hi), index[box.inner[lo:hi]].tolist(),
                                strict=True):
            if off == EMPTY:
                missing.append(r)
            elif nb > limit:
                raise ChunkDecodeError(
                    f"shard {self.key!r}: inner chunk "
                    f"{chain.layout.inner_name(int(box.inner[r]))} is {nb} bytes long in "
                    f"the index, more than any valid inner chunk ({limit} bytes)")
            else:
                rows.append(r)
                offsets.append(off)
                sizes.append(nb)
        if missing:
            box.fill(missing)
        return len(rows)

    def coalesce(self, gap: int, base: int) -> int:
        """Runs of the planned inner chunks at most ``gap`` bytes apart, one read each,
        placed in the buffer from ``base`` on.  Returns where the next shard's go."""
        runs = self.runs
        pos = base
        for a, nb in sorted(zip(self.offsets, self.sizes, strict=True)):
            b = a + nb
            if runs and a - runs[-1][1] <= gap:
                if b > runs[-1][1]:
                    pos += b - runs[-1][1]
                    runs[-1][1] = b
            else:
                runs.append([a, b, pos])
                pos += b - a
        return pos

    def read(self, buf: np.ndarray, chain: ShardedChain, box: Box) -> None:
        """Read the runs into ``buf``; ``offsets`` become each row's place in it."""
        got = [self.reader.read_into(buf[at:at + (b - a)], a) for a, b, at in self.runs]
        starts = [run[0] for run in self.runs]
        placed = []
        for a, nb, r in zip(self.offsets, self.sizes, self.rows, strict=True):
            q = bisect.bisect_right(starts, a) - 1  # the run holding [a, a + nb)
            start, _, at = self.runs[q]
            if a + nb - start > got[q]:
                raise ChunkDecodeError(
                    f"shard {self.key!r}: inner chunk "
                    f"{chain.layout.inner_name(int(box.inner[r]))} points past the end of "
                    f"the shard (bytes {a}..{a + nb}, only {start + got[q]} readable)"
                )
            placed.append(at + a - start)
        self.offsets = placed


def write_sharded(store: Store, path: str, chain: ShardedChain, sel: BasicSelection,
                  value: np.ndarray | None, scalar: Any, *, write_empty_chunks: bool) -> None:
    """Write ``value`` or ``scalar`` into a selection of a sharded array."""
    if math.prod(sel.full_shape) == 0:
        return
    proj = Projection(chain.metadata.shape, chain.inner, sel)
    keys, shard_coords, groups, inner_lin = _group_by_shard(chain, proj, path)
    subs = [chain.shard_chain(c) for c in shard_coords]
    writer = RowWriter(proj, value, scalar, write_empty_chunks)

    def task(g: int) -> None:
        layout = subs[g].layout
        try:
            write_shard(g)
        except MemoryError as e:
            raise AllocationError(
                f"shard {keys[g]!r}: out of memory writing a shard of {layout.n_inner} inner "
                f"chunks (its index alone takes {layout.index_nbytes} bytes); use fewer inner "
                f"chunks per shard ({e})"
            ) from None

    inner = chain.inner
    # whole shards of uncompressed inner chunks written from an array are assembled
    # in place: one copy_regions call, no per-chunk buffers, no join
    raw_whole = inner.fast and not inner.bb and writer.value_flat is not None
    # (a shard buffer per thread, reused, when the store keeps no reference to a value)
    reuse = store.copies_values
    # ... or, better, written by the store from where the inner chunks lie in the value
    direct = (raw_whole and store.fast_set_regions and not chain.outer_bb
              and writer.stored_layout is not None)

    def write_shard(g: int) -> None:
        key, rows = keys[g], groups[g]
        sub = subs[g]
        layout = sub.layout
        # every inner chunk of the shard written, none reaching past the array's edge:
        # no old bytes to keep (an edge shard is read, changed and written back under
        # its lock: another writer may have grown the array and written inner chunks
        # past the edge this writer knows)
        whole = (len(rows) == layout.n_inner and bool(proj.complete[rows].all())
                 and not proj.edge[rows].any())
        if direct and whole and _write_shard_direct(store, key, layout, writer, rows,
                                                    inner_lin[rows]):
            chain.cache.put(key, None)
            return
        if raw_whole and whole:
            shard = _assemble_raw_shard(layout, inner, writer, proj, rows, inner_lin[rows],
                                        write_empty_chunks, reuse=reuse)
            if shard is not None:
                for c in chain.outer_bb:
                    shard = c.encode(shard)
                store.set(key, shard)
                chain.cache.put(key, None)
                return
        if whole:  # every inner chunk written: no old bytes to keep, no lock
            shard = _updated_shard(g, None)
            if shard is None:
                store.delete(key)
            else:
                store.set(key, shard)
        else:
            # the read-modify-write of a shard excludes every other writer of the shard:
            # the threads of this process (every store object of the same data), other
            # processes where the store can lock (LocalStore) or write conditionally (S3)
            read_modify_write(
                store, key, lambda stored: _updated_shard(
                    g, None if stored is None else sub.decode_shard(stored, key)),
                limit=sub.stored_limit, empty=lambda: _encoded(sub.layout.empty_shard()))
        chain.cache.put(key, None)  # re-read (and re-checked) on next use

    def _updated_shard(g: int, data: Any) -> Any:
        """The shard ``g`` with this write's inner chunks in it (``data``: the shard's
        decoded bytes as stored, ``None`` when missing), encoded by the codecs after the
        shard; ``None`` when every inner chunk is empty."""
        key, rows = keys[g], groups[g]
        layout = subs[g].layout
        encoded: list[Any] = [None] * layout.n_inner
        index = None if data is None else layout.index_of_shard(data, key)
        if index is not None:
            for j in range(layout.n_inner):  # untouched inner chunks keep their bytes
                encoded[j] = layout.inner_bytes(data, index, j)
        # whole inner chunks of zstd, gzip or blosc: a batch per kernel call
        whole = writer.encode_whole(rows, key)
        for r in rows.tolist():
            j = int(inner_lin[r])
            if r in whole:
                encoded[j] = whole[r]
                continue
            old = encoded[j] if writer.needs_old(r) or proj.edge[r] else None
            try:
                encoded[j] = writer.write(r, old, key)
            except ChunkDecodeError as e:
                context = f"shard {key!r}, inner chunk {layout.inner_name(j)}"
                add_context(e, context, f"{e} [{context}]")
                raise
        shard = layout.assemble(encoded)
        return None if shard is None else _encoded(shard)

    def _encoded(shard: Any) -> Any:
        for c in chain.outer_bb:
            shard = c.encode(shard)
        return shard

    # One task per shard: no two tasks read-modify-write the same shard.  (Weighted by
    # inner chunks written: full shards and thin edge shards shared out evenly.)
    if store.batched_reads:
        map_io(task, range(len(keys)))
    else:
        map_weighted_into(task, range(len(keys)), [len(rows) for rows in groups],
                          work_bytes=proj.nrows * chain.inner.chunk_nbytes)


