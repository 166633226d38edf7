"""Reading and writing sharded arrays (the ``sharding_indexed`` codec).

A sharded array is two grids: shards (the array's chunks, one stored object
each) made of inner chunks.  Inner chunks tile the array like a regular grid
of ``inner chunk_shape``, so a selection is projected straight onto the inner
grid, and each row is then routed to its shard:

Reads
    per shard touched (one task each): the index comes from a bounded
    per-array cache or one byte-range request (suffix or prefix); only the
    touched inner chunks are fetched (a :class:`~zarrfast.engine.shard_view.ShardView`),
    byte ranges closer than ``config shard_coalesce_gap`` merged into one request.  A
    selection covering a whole shard fetches the shard in one request.  Then every
    inner chunk is decoded and assembled on the pool by the same row reader as
    plain chunks (:mod:`zarrfast.engine.shard_read`).  Whole shards of a local store's
    files with zstd or blosc inner chunks take one ``ShardFiles.read`` kernel call each
    instead: the file read, its index checked and every inner chunk placed without the
    GIL (:func:`read_whole_files`); a shard it cannot place goes the way above.
    A small box (at most ``BOX_CHUNKS`` inner chunks) of shards that are files
    is one ``decode_box_shards`` call once its shards are open and their indexes
    known (:func:`read_shard_box`); a box it cannot place goes the way above.
Writes
    :mod:`zarrfast.engine.shard_write`: one task per shard.  This module holds what
    both share: the chains, the index cache, grouping rows by shard.

Bad shards raise :class:`~zarrfast.errors.ChunkDecodeError` (or its
:class:`~zarrfast.errors.ChecksumError`) naming the shard key and the inner
chunk: an index whose checksum does not match, an entry pointing past the end
of the shard, overlapping entries.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs import CodecChain
from zarrfast.codecs.chain import BoundedDecoders
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.concurrency import map_unordered_into
from zarrfast.engine.boxes import BOX_CHUNKS, Box, box_chunks, io_share, run_parts
from zarrfast.engine.chunked import (
    PreparedChain,
    Projection,
    RowReader,
    RowWriter,
    chunk_keys,
)
from zarrfast.engine.selection import BasicSelection
from zarrfast.errors import (
    ChecksumError,
    ChunkDecodeError,
    CodecError,
    add_context,
)
from zarrfast.kernels import buffers as _buffers
from zarrfast.metadata.chunk_grid import (
    DefaultChunkKeyEncoding,
    RectilinearChunkGrid,
    RegularChunkGrid,
)
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import (
    ByteRequest,
    RangeByteRequest,
    RangeReader,
    Store,
    SuffixByteRequest,
)

if TYPE_CHECKING:
    from zarrfast.codecs.sharding import ShardingCodec

__all__ = ["RectilinearShardedChain", "ShardedChain", "group_by_shard", "read_shard_box",
           "read_whole_files", "shard_box_fit", "shard_index_request", "waves_of",
           "assemble_raw_shard", "write_shard_direct"]



#: marks a cached index not yet checked against its shard's size (see ``ShardedChain._index``)
_UNCHECKED = "unchecked"


@dataclasses.dataclass(frozen=True, slots=True)
class _Tag:
    """The cache token of an index read with its version's tag (``tagged_index``):
    never equal to a store's version token."""

    tag: Any


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

    #: the chain kind (:class:`~zarrfast.engine.plan.Chain`)
    kind = "sharded"

    #: whether the shards form a rectilinear grid (:class:`RectilinearShardedChain`)
    rectilinear = False

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain, *,
                 shard_shape: tuple[int, ...] | None = None,
                 inner: PreparedChain | None = None, cache: _IndexCache | None = None,
                 index_cache: int = 1) -> None:
        self.metadata = metadata
        # (a codec named sharding_indexed: a ShardingCodec)
        codec = cast("ShardingCodec | None", codecs.sharding)
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
        data_type = metadata.type_info
        assert data_type is not None  # (ArrayMetadata derives it)
        fv = (data_type.default_fill_value() if metadata.fill_value is None
              else metadata.fill_value)
        inner_metadata = ArrayMetadata(
            shape=layout.shard_shape,
            data_type=data_type,
            chunk_grid=RegularChunkGrid(layout.inner_shape),
            chunk_key_encoding=DefaultChunkKeyEncoding(),
            fill_value=fv,
            codecs=codec.codecs,
        )
        self.inner = inner if inner is not None else PreparedChain(
            inner_metadata, codec.inner_chain(data_type))
        self.partial_reads = not self.outer_bb
        # bound for codecs after the shard (decompression bombs): the shard's chunks
        # uncompressed, twice, plus room for its index and checksums
        self._outer_limit = 2 * math.prod(shard_shape) * data_type.itemsize \
            + 2 * self.layout.index_nbytes + 2**20
        self._outer = BoundedDecoders(self.outer_bb)
        #: the shards' indexes, ``index_cache`` of them at most (``config
        #: shard_index_cache``, read by the array that makes this chain)
        self.cache = cache if cache is not None else _IndexCache(int(index_cache))
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
        #: ``(path, first shard, last shard)`` -> the keys of the shards of a box
        #: (:meth:`box_shard_keys`), at most ``_BOX_KEYS`` of them
        self._box_keys: dict[tuple[str, tuple[int, ...], tuple[int, ...]], list[str]] = {}

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

    def tagged_index(self, store: Store, key: str
                     ) -> tuple[np.ndarray | None, Any, bool]:
        """The shard's index, the tag of the version it was read from, and whether it
        was read now (not taken from the cache), on a store with
        :attr:`~zarrfast.storage.Store.tagged_reads`: kept in the cache under that tag,
        and taken from there without a request.  Whoever then reads the shard's inner
        chunks checks that each read comes from the same version (an ``ETag``), and
        calls :meth:`forget_index` and starts again when not (see ``ShardView``).
        ``(None, None, True)``: no shard."""
        hit = self.cache.get(key)
        if hit is not None and isinstance(hit[0], _Tag):
            return hit[1], hit[0].tag, False
        raw, tag = store.get_tagged(key, shard_index_request(self.layout))
        if raw is None:
            return None, None, True
        index = self.layout.decode_index(raw, key)
        if tag is not None:
            self.cache.put(key, (_Tag(tag), index))
        return index, tag, True

    def forget_index(self, key: str) -> None:
        """Drop the cached index of the shard ``key`` (it changed)."""
        self.cache.put(key, None)

    def box_shard_keys(self, path: str, starts: list[int], counts: list[int]) -> list[str]:
        """The keys of the shards a step-1 box touches (``starts``, ``counts``: its
        first element and extent per dimension, non-empty), in C order; the same list
        for the same shards (kept for the next box: random boxes of an array touch the
        same few shards again and again; the caller must not change it)."""
        widths = self._shard_t
        first = []
        last = []
        for s, m, w in zip(starts, counts, widths, strict=True):
            first.append(s // w)
            last.append((s + m - 1) // w)
        known = self._box_keys
        which = (path, tuple(first), tuple(last))
        keys = known.get(which)
        if keys is None:
            coords = np.array(list(itertools.product(
                *[range(a, b + 1) for a, b in zip(first, last, strict=True)])),
                dtype=np.int64)
            keys = chunk_keys(self.metadata, path, coords)
            if len(known) >= _BOX_KEYS:
                known.clear()  # (a dict's clear and store are atomic: threads may share it)
            known[which] = keys
        return keys

    def reader_index(self, reader: RangeReader, key: str) -> np.ndarray | None:
        """:meth:`fetch_index` from a shard opened for range reads: the version its
        reader took, the index read from the same open value -- and, where the reader
        knows the shard's size (a local file), every entry checked to lie in the shard's
        data (not in its index, not past its end)."""
        token = reader.version
        if token is not None:  # (the hit of ``_index``, without its closure: box reads)
            hit = self.cache.get(key)
            if hit is not None and hit[0] == token:
                return hit[1]
        return self._index(token, key,
                           lambda: reader.read(shard_index_request(self.layout)),
                           reader.size)

    def _index(self, token: Any, key: str, read: Any, size: int | None = None
               ) -> np.ndarray | None:
        """The index (cached under ``token``); with ``size`` (the shard's bytes), checked
        against it once.  An index read without the shard's size is cached as
        unchecked (``(_UNCHECKED, token)``) until a read that knows the size checks it."""
        if token is not None:
            hit = self.cache.get(key)
            if hit is not None and hit[0] == token:
                return hit[1]
            if hit is not None and hit[0] == (_UNCHECKED, token):
                if size is not None:
                    self._check_size(hit[1], size, key)
                    self.cache.put(key, (token, hit[1]))
                return hit[1]
        raw = read()
        if raw is None:
            self.cache.put(key, None)
            return None
        index = self.layout.decode_index(raw, key)
        if size is not None:
            self._check_size(index, size, key)
        # the token was taken before the read: if the shard changed in between, the
        # next lookup sees a newer token and fetches again
        self.cache.put(key, None if token is None else (
            (token if size is not None else (_UNCHECKED, token)), index))
        return index

    def _check_size(self, index: np.ndarray, size: int, key: str) -> None:
        """Every entry of ``index`` lies in the data of a shard of ``size`` bytes."""
        layout = self.layout
        layout.check_within(index, size - layout.index_nbytes if layout.at_end else size, key)

    @property
    def fill_scalar(self) -> Any:
        return self.inner.fill_scalar

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

    kind = "rectilinear-sharded"
    rectilinear = True

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain, *,
                 index_cache: int = 1) -> None:
        grid = cast(RectilinearChunkGrid, metadata.chunk_grid)  # (a rectilinear chain's)
        super().__init__(metadata, codecs, shard_shape=tuple(codecs.chunk_shape),
                         index_cache=index_cache)
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
        """As :func:`group_by_shard`, for a rectilinear grid of shards."""
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


def group_by_shard(chain: ShardedChain, proj: Projection, path: str):
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


def assemble_raw_shard(layout: ShardFormat, inner: PreparedChain, writer: RowWriter,
                        proj: Projection, rows: np.ndarray, lin: np.ndarray,
                        write_empty_chunks: bool, reuse: bool = False) -> np.ndarray | None:
    """The bytes of a shard inside the array whose every inner chunk is written whole and
    stored uncompressed, built in one buffer: the same bytes the general path assembles
    (the inner chunks in write order, each after the last).  With ``reuse`` the buffer is
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
    # (every inner chunk once: chunk j at slot j, or at its rank in the write order)
    slots = base + (lin.astype(np.int64) if layout.rank is None else layout.rank[lin]) * nb
    _kernels.copy_regions(
        writer.value_flat, writer.src_offsets[rows], writer.value_strides,
        buf, slots + writer.dst_offsets[rows], writer.dst_strides,
        proj.local_count[rows], inner.itemsize, inner.swap_unit,
    )
    # (the inner chunks fill [base, base + n * nb), in write order)
    if not write_empty_chunks and inner.any_fill_run(buf, base, n):
        return None
    raw_index = layout.dense_index(nb)
    if len(raw_index) != layout.index_nbytes:  # pragma: no cover - fixed-size index codecs
        return None
    at = n * nb if layout.at_end else 0
    buf[at:at + layout.index_nbytes] = raw_index
    return buf


def write_shard_direct(store: Store, key: str, layout: ShardFormat, writer: RowWriter,
                        rows: np.ndarray, lin: np.ndarray) -> bool:
    """Write a shard whose inner chunks ``rows`` (inner chunks ``lin``) are stored
    uncompressed, none past the array's edge, straight from the written value
    (``store.set_regions``: the inner chunks in write order, then the index, or the
    index first): the bytes :func:`assemble_raw_shard` builds, without building them.
    Rows for only some of the shard's inner chunks: the shard holds those alone (the
    others empty in its index), as a read-modify-write of a missing shard builds it.
    False, with nothing written, for a shard this cannot write: an edge shard, one
    written by a negative step, or one with an inner chunk equal to the fill value
    (unless empty chunks are written), which the general path leaves out."""
    nb = writer.chain.chunk_nbytes
    # (every inner chunk a region of the value: written whole, inside the array, from
    # its first element on, not through a negative step)
    stored_whole = writer.stored_whole
    if not len(rows) or stored_whole is None or not stored_whole[rows].all():
        return False
    rank = lin if layout.rank is None else layout.rank[lin]
    order = np.argsort(rank)  # (write order)
    if len(rows) == layout.n_inner:
        raw_index = layout.dense_index(nb)
    else:  # (slot s of the present ones, in write order, at data_start + s * nb)
        if len(np.unique(lin)) != len(lin):  # pragma: no cover - one row per inner chunk
            return False
        index = np.full((layout.n_inner, 2), EMPTY, dtype=np.uint64)
        index[lin[order], 0] = (layout.data_start
                                + np.arange(len(lin), dtype=np.uint64) * np.uint64(nb))
        index[lin, 1] = nb
        raw_index = np.frombuffer(layout.encode_index(index), dtype=np.uint8)
    if len(raw_index) != layout.index_nbytes:  # pragma: no cover - fixed-size index codecs
        return False
    stored_layout, value_flat = writer.stored_layout, writer.value_flat
    assert stored_layout is not None and value_flat is not None  # (ShardWrite.direct)
    strides, shape = stored_layout
    inner = writer.chain
    skipped = store.set_regions(
        [key], value_flat, writer.src_offsets[rows[order]][None, :],
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


def waves_of(groups: list[np.ndarray], chunk_nbytes: int) -> list[list[int]]:
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


def read_whole_files(plan: Any, keys: list[str], groups: list[np.ndarray],
                     inner_lin: np.ndarray, reader: RowReader, is_whole: list[bool]
                     ) -> list[bool]:
    """Read the whole shards of a read (``is_whole[g]``) with ``ShardFiles.run``, when
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
    store, chain, threads = plan.store, plan.chain, plan.options.threads
    done = [False] * len(groups)
    layout = chain.layout
    if (_kernels.ShardFiles is None or chain.inner.box_codec is None or not chain.partial_reads
            or chain.rectilinear or plan.caps.batched_gets or layout.index_checksum is None):
        return done
    whole = [g for g in range(len(groups)) if is_whole[g]]
    files = store.file_paths(keys) if whole else None
    if files is None:
        return done
    root, paths = files
    inner = chain.inner
    bounds = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(rows) for rows in groups], out=bounds[1:])
    plan = _kernels.ShardFiles(
        paths, root, np.concatenate(groups).astype(np.int64, copy=False), bounds,
        inner_lin.astype(np.int64, copy=False), layout.n_inner, layout.index_nbytes,
        # (keep 0: a thread's shard-sized file buffer lives for one call, not longer)
        layout.at_end, layout.index_checksum, chain.stored_limit, 0, reader.placement(),
        inner.fill_chunk_item)
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
    map_unordered_into(run, range(min(threads, len(whole))), threads=threads,
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


def shard_box_fit(plan: Any) -> int:
    """How many inner chunks the selection of ``plan`` touches when
    :func:`read_shard_box` reads it (a step-1 box of at most ``BOX_CHUNKS`` inner
    chunks of a regular grid of shards, not behind codecs after the shard, on a store
    read key by key); else 0."""
    chain = plan.chain
    if chain.rectilinear or not chain.partial_reads or plan.caps.batched_gets:
        return 0
    n = box_chunks(plan.sel, chain.inner)
    return n if 0 < n <= BOX_CHUNKS else 0


def read_shard_box(plan: Any, n: int) -> None:
    """The small-read fast path (:func:`shard_box_fit`: ``n`` inner chunks), of one
    shard or several, costs per shard one open (its version, to check the cached index)
    and one ranged read per run of nearby inner chunks, all into one buffer; then one
    kernel call decodes and places them (see :mod:`zarrfast.engine.boxes`; with more
    threads, one call per thread).  Shards that are open files skip the buffer: one
    ``decode_ranges`` call reads and decodes each inner chunk."""
    store, path, chain, sel, out = plan.store, plan.path, plan.chain, plan.sel, plan.out
    inner, threads, gap = chain.inner, plan.options.threads, plan.options.shard_coalesce_gap
    share = io_share(n, inner, threads) if inner.box_codec is not None else None
    if share is not None and _decode_box_shards(store, path, chain, sel, out, share):
        return
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
            sp = _ShardPlan(reader, key)
            plans.append(sp)
            index = chain.reader_index(reader, key)
            if index is None:
                box.fill(range(lo, hi))
                continue
            stored += sp.plan(chain, box, index, lo, hi)
        if not stored or _decode_box_ranges(chain, box, plans, stored, threads):
            return
        total = 0
        for sp in plans:
            total = sp.coalesce(gap, total)
        # (bounded: at most BOX_CHUNKS inner chunks of at most stored_limit bytes, and
        # the gaps between them)
        buf = inner._batch_buffer(1, total)
        for sp in plans:
            sp.read(buf, chain, box)
    finally:
        for sp in plans:
            sp.reader.close()
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
    run_parts(place, len(rows), inner, threads)


def _decode_box_shards(store: Store, path: str, chain: ShardedChain, sel: BasicSelection,
                       out: np.ndarray, share: int) -> bool:
    """A box of shards that are files, read in one kernel call
    (``ChunkDecoder.decode_box_shards``): the shards are opened here (each one's
    version checks its cached index), and the kernel plans, reads with ``pread``,
    decodes and places the inner chunks, and fills the empty ones.  ``share``: as
    :func:`~zarrfast.engine.boxes.io_share` says (``IO_HELPER``: the helper reads).  ``False`` when the
    store's shards are not files, or an inner chunk could not be placed (too large,
    past the end of its shard, does not decode): the caller then reads the box its
    own way, which says what is wrong."""
    inner = chain.inner
    if not inner.ndim or not _files_store(store, chain):
        return False  # (a 0-d array's one inner chunk: the general path)
    keys = chain.box_shard_keys(path, sel.start.tolist(), sel.count.tolist())
    readers = []
    fds: list[int] = []
    indexes: list[Any] = []
    try:
        for key in keys:
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
        placement = _kernels.Placement.box(
            inner.chunk_nbytes, sel.start, sel.count, inner.chunk_shape_arr,
            inner.chunk_strides, out.reshape(-1).view(np.uint8),
            np.array(out.strides, dtype=np.int64), inner.itemsize, inner.swap_unit,
            cps=chain.cps, direct=inner.box_direct)
        status = inner.batch_decoder().decode_box_shards(
            np.array(fds, dtype=np.int64), indexes, placement, inner._fill_native_arr,
            inner.stored_limit, share)
    finally:
        for reader in readers:
            reader.close()
    return status is None


def read_partial_files(plan: Any, keys: list[str], groups: list[np.ndarray],
                       inner_lin: np.ndarray, reader: RowReader, todo: list[int]) -> list[int]:
    """Read the shards ``todo`` of a read (``groups[g]``: their rows) that are files of
    a local store, zstd, blosc or uncompressed inner chunks: each shard opened once (its
    index from the cache while the file is unchanged), then every stored inner chunk of
    all of them read with ``pread`` and decoded into place by one ``decode_ranges`` call
    per thread, without the GIL; rows of inner chunks not stored get the fill value.
    What a scattered read of many shards (a data loader's batch) costs is then the
    kernels', not a Python fetch per shard.  A call whose first range is not in the
    page cache announces the ranges after it to the kernel, a window ahead of the
    reading (``decode_ranges``): a cold batch waits for the disk about once, not once
    per inner chunk.

    Returns the shards left for the general path: all of them when the store's shards
    are not files, and any shard one of whose inner chunks the kernel could not read or
    decode (the general path reads it again and says what is wrong)."""
    store, chain, threads = plan.store, plan.chain, plan.options.threads
    inner = chain.inner
    if (not todo or inner.box_codec is None or not inner.ndim or not chain.partial_reads
            or chain.rectilinear or plan.caps.batched_gets or not _files_store(store, chain)):
        return todo
    readers: list[Any] = []
    left: list[int] = []
    try:
        row_arr, fd_arr, off_arr, size_arr, shard_arr, fill = _open_partial(
            store, chain, keys, groups, inner_lin, todo, readers, left)
        for r in fill.tolist():
            reader.read(r, None, "")  # (the fill value)
        if not len(row_arr):
            return sorted(left)
        placement = reader.placement()
        failed: list[np.ndarray] = []

        def place(part: range, share: bool) -> None:
            sl = slice(part.start, part.stop)
            status, _errors = inner.batch_decoder().decode_ranges(
                fd_arr[sl], off_arr[sl], size_arr[sl], placement.take(row_arr[sl]),
                share=share)
            if np.count_nonzero(status):
                failed.append(shard_arr[sl][status != 0])

        # (every part places disjoint rows: the inner chunks partition the array)
        run_parts(place, len(row_arr), inner, threads)
    finally:
        for opened in readers:
            opened.close()
    if failed:
        left += np.unique(np.concatenate(failed)).tolist()
    return sorted(left)


def _open_partial(store: Store, chain: ShardedChain, keys: list[str],
                  groups: list[np.ndarray], inner_lin: np.ndarray, todo: list[int],
                  readers: list[Any], left: list[int]) -> tuple[np.ndarray, ...]:
    """:func:`read_partial_files`' plan: each shard of ``todo`` opened (appended to
    ``readers``, for the caller to close; a shard that is not an open file, or whose
    index entries the kernel cannot take, to ``left``), then every opened shard's rows
    at once: ``(rows, fds, offsets, sizes, shards)`` of the stored inner chunks, and
    the rows of inner chunks not stored (the fill value)."""
    inner = chain.inner
    largest = min(2 * inner.chunk_nbytes + 65536, inner.stored_limit)
    fill: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    opened_g: list[int] = []  # the shards opened, with their file and index entries
    fd_of: list[int] = []
    entries_of: list[np.ndarray] = []
    for g in todo:
        key = keys[g]
        opened = store.open_ranges(key)
        if opened is None:
            fill.append(groups[g])
            continue
        readers.append(opened)
        fd = opened.fileno()
        if fd is None:
            left.append(g)
            continue
        index = chain.reader_index(opened, key)
        if index is None:
            fill.append(groups[g])
            continue
        opened_g.append(g)
        fd_of.append(fd)
        entries_of.append(index.take(inner_lin[groups[g]], axis=0))  # (take: 2x a [])
    if not opened_g:
        none = np.zeros(0, dtype=np.int64)
        return none, none, none, none, none, np.concatenate(fill)
    per = np.array([len(groups[g]) for g in opened_g], dtype=np.int64)
    which = np.repeat(np.arange(len(opened_g), dtype=np.int64), per)
    entries = np.concatenate(entries_of)
    rows = np.concatenate([groups[g] for g in opened_g])
    stored = entries[:, 0] != EMPTY
    bad = stored & ((entries[:, 1] > largest) | (entries[:, 0] > _MAX_OFFSET))
    keep = np.ones(len(rows), dtype=np.bool_)
    if bad.any():  # (the general path reads those shards, or says what is wrong)
        bad_shards = np.unique(which[bad])
        left += [opened_g[k] for k in bad_shards.tolist()]
        keep = ~np.isin(which, bad_shards)
    fill.append(rows[keep & ~stored])
    take = np.flatnonzero(keep & stored)
    return (rows[take], np.array(fd_of, dtype=np.int64)[which[take]],
            entries[take, 0].astype(np.int64), entries[take, 1].astype(np.int64),
            np.array(opened_g, dtype=np.int64)[which[take]], np.concatenate(fill))


def _files_store(store: Store, chain: ShardedChain) -> bool:
    """Whether ``store``'s values are files that kernels may read themselves (see
    ``Store.file_paths``); kept on ``chain`` for its last store."""
    last = chain.files_store
    if last is None or last[0] is not store:
        last = chain.files_store = (store, store.file_paths(()) is not None)
    return last[1]


#: the largest offset an int64 holds (an index entry past it is read by the buffer path)
_MAX_OFFSET = 2**63 - 1
#: the most boxes' shard keys a chain keeps (``ShardedChain.box_shard_keys``)
_BOX_KEYS = 4096


def _decode_box_ranges(chain: ShardedChain, box: Box, plans: list[_ShardPlan],
                       stored: int, threads: int) -> bool:
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
    placement = box.placement()  # (checked once; each part takes its rows)

    def place(part: range, share: bool) -> None:
        sl = slice(part.start, part.stop)
        rows_placed = (placement.part(part.start, part.stop) if rows is None
                       else placement.take(rows[sl]))
        status, errors = inner.batch_decoder().decode_ranges(
            fd_arr[sl], offsets[sl], sizes[sl], rows_placed, share=share)
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
    run_parts(place, stored, inner, threads)
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


