"""Orthogonal (``oindex``), coordinate (``vindex``), mask and block selections.

Integer arrays may be unsorted and repeated and may hold negative indices;
boolean masks select where they are true.  Reads of a regular grid of chunks, or of
shards, are gathers: the touched chunks are read a wave at a time into a scratch buffer
by the engine's own row readers (batched decoding without the GIL; whole shards by one
kernel call each), then one NumPy indexing per wave moves the selected elements into
place -- no Python per index or per chunk (see "gathers" below).  Writes, and reads of
the other arrays, group the selection by chunk once
(:func:`zarrfast.kernels.group_by_chunk`, a Cython counting sort), then each touched
chunk is one task on the shared pool: fetch, decode, and one NumPy gather
(``out[ix] = chunk[ix]``) or scatter for writes.  Rectilinear grids (and
writes of sharded arrays) go through basic reads and writes of each touched chunk's
region instead.

Errors are zarr-python's types with messages naming the dimension, the index
and the bound.
"""

from __future__ import annotations

import itertools
import math
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.concurrency import in_task, map_dynamic_into, map_io_then, map_unordered_into
from zarrfast.engine.chunked import (
    PREFETCH_FILES,
    Announcer,
    PreparedChain,
    RowReader,
    chunk_keys,
    first_cold,
    prefetch_if_cold,
)
from zarrfast.engine.plan import Options, Plan
from zarrfast.engine.rmw import read_modify_write
from zarrfast.engine.selection import BasicSelection, expand_ellipsis, slice_indices
from zarrfast.engine.shard_read import ShardRowsRead
from zarrfast.engine.shard_view import ShardView
from zarrfast.engine.sharded import group_by_shard
from zarrfast.engine.strategies import READ_ROWS, choose_rows
from zarrfast.engine.values import as_stored, text_elements
from zarrfast.errors import BoundsCheckError, ChunkDecodeError, IndexingError, add_context
from zarrfast.kernels import buffers as _buffers
from zarrfast.kernels import zstd_prefix as _zstd_prefix
from zarrfast.metadata.dtype import is_fill_chunk

__all__ = ["normalize_coordinate", "normalize_mask", "normalize_orthogonal"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _as_index_array(item: Any) -> np.ndarray | None:
    """An int or bool array for list/array-likes, else ``None``."""
    if isinstance(item, np.ndarray):
        return item
    if isinstance(item, (list, tuple)) and all(
        isinstance(v, (bool, np.bool_)) or _is_int(v) for v in item
    ):
        return np.asarray(item) if item else np.zeros(0, dtype=np.int64)
    return None


def _int64(idx: np.ndarray, n: int, dim: int) -> np.ndarray:
    """Indices as int64, refusing any that int64 cannot hold (``np.uint64(2**64 - 1)``
    would otherwise wrap around to -1, a valid index) with the value itself."""
    if idx.size and (idx.dtype.kind == "u" and idx.dtype.itemsize == 8 or idx.dtype == object):
        big = [int(v) for v in idx.reshape(-1).tolist() if not -(2**63) <= int(v) < 2**63]
        if big:
            raise BoundsCheckError(
                f"index {big[0]} is out of bounds for dimension {dim} with length {n}")
    return idx.astype(np.int64, copy=False)


def _wrap(idx: np.ndarray, n: int, dim: int) -> np.ndarray:
    idx = _int64(idx, n, dim)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        i = int(idx[np.flatnonzero(bad)[0]])
        raise BoundsCheckError(
            f"index {i} is out of bounds for dimension {dim} with length {n}"
        )
    return np.where(idx < 0, idx + n, idx)


@dataclass(frozen=True)
class OrthogonalSelection:
    indices: tuple[np.ndarray, ...]  # per dim, int64, in selection order
    dropped: tuple[bool, ...]

    @property
    def full_shape(self) -> tuple[int, ...]:
        return tuple(len(i) for i in self.indices)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(len(i) for i, d in zip(self.indices, self.dropped, strict=True) if not d)


def normalize_orthogonal(selection: Any, shape: tuple[int, ...]) -> OrthogonalSelection:
    sel = expand_ellipsis(selection if isinstance(selection, tuple) else (selection,),
                          len(shape), selection)
    indices, dropped = [], []
    for d, (s, n) in enumerate(zip(sel, shape, strict=True)):
        if _is_int(s):
            indices.append(_wrap(np.array([operator.index(s)]), n, d))
            dropped.append(True)
            continue
        if isinstance(s, slice):
            indices.append(np.arange(*slice_indices(s, n, d), dtype=np.int64))
            dropped.append(False)
            continue
        arr = _as_index_array(s)
        if arr is None or arr.ndim != 1:
            raise IndexingError(
                f"dimension {d}: unsupported orthogonal selection item {s!r}; expected an int, "
                f"a slice, a 1-d integer array or a 1-d boolean array"
            )
        if arr.dtype == bool:
            if len(arr) != n:
                raise IndexingError(
                    f"dimension {d}: boolean mask has length {len(arr)}, expected {n}"
                )
            indices.append(np.flatnonzero(arr).astype(np.int64))
        elif arr.dtype.kind in "iu" or arr.size == 0:
            indices.append(_wrap(arr, n, d))
        else:
            raise IndexingError(f"dimension {d}: index array of dtype {arr.dtype} is not integer")
        dropped.append(False)
    return OrthogonalSelection(tuple(indices), tuple(dropped))


def normalize_coordinate(selection: Any, shape: tuple[int, ...]
                         ) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """Flat int64 coordinates per dimension, and the result shape (the broadcast shape)."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    if not shape:
        raise IndexingError("coordinate selection needs index arrays; a 0-d array has no "
                            "dimensions to index (use a[()])")
    if len(sel) != len(shape):
        raise IndexingError(
            f"coordinate selection needs one integer array per dimension ({len(shape)}), got "
            f"{len(sel)}"
        )
    arrays = []
    for d, s in enumerate(sel):
        arr = np.asarray(s) if not _is_int(s) else np.asarray(operator.index(s))
        if arr.dtype.kind not in "iu" and arr.size:
            raise IndexingError(
                f"dimension {d}: coordinate selection items must be integers, got {s!r}"
            )
        arrays.append(_int64(arr, shape[d], d))
    try:
        bcast = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexingError(
            f"coordinate arrays of shapes {[a.shape for a in arrays]} cannot be broadcast "
            f"together"
        ) from None
    out_shape = bcast[0].shape if bcast else ()
    flat = tuple(_wrap(b.reshape(-1), n, d) for d, (b, n) in enumerate(zip(bcast, shape,
                                                                            strict=True)))
    return flat, out_shape


def normalize_mask(mask: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    m = np.asarray(mask)
    if m.dtype != bool:
        raise IndexingError(f"mask selection needs a boolean array, got dtype {m.dtype}")
    if m.shape != tuple(shape):
        raise IndexingError(f"mask has shape {m.shape}, expected the array's shape {shape}")
    return tuple(i.astype(np.int64) for i in np.nonzero(m))


# -- execution ------------------------------------------------------------------------


@dataclass(frozen=True)
class FancyTarget:
    """What a fancy selection reads and writes: an array as the engine sees it.

    ``chain`` is the array's engine chain (:class:`~zarrfast.engine.chunked.PreparedChain`,
    an object chain, or a sharded chain, whose selections go through the array's basic
    selection functions, one inner chunk at a time)."""

    name: str
    store: Any
    chunk_path: str
    metadata: Any
    chain: Any
    objects: bool
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    write_empty_chunks: bool
    get_basic_selection: Callable[..., np.ndarray]
    set_basic_selection: Callable[..., None]
    #: a rectilinear grid of chunks: per dimension the chunk boundaries (``chunks`` is
    #: then the first chunk's shape)
    bounds: list[np.ndarray] | None = None
    #: a rectilinear grid of stored objects (chunks or shards): their boundaries
    block_bounds: list[np.ndarray] | None = None
    #: the configuration of this selection, read when it started
    options: Options = field(default_factory=Options.resolve)


def _chunk_of(idx: np.ndarray, d: int, array: FancyTarget) -> tuple[np.ndarray, np.ndarray]:
    """Chunk index and index inside the chunk of the indices ``idx`` along ``d``."""
    if array.bounds is None:
        c = array.chunks[d]
        cid = idx // c
        return cid, idx - cid * c
    b = array.bounds[d]
    cid = np.searchsorted(b, idx, side="right") - 1
    return cid, idx - b[cid]


def _grid(array: FancyTarget) -> tuple[int, ...]:
    if array.bounds is not None:
        return tuple(len(b) - 1 for b in array.bounds)
    return tuple(-(-n // c) for n, c in zip(array.shape, array.chunks, strict=True))


def _fast(array: FancyTarget) -> bool:
    return isinstance(array.chain, PreparedChain)


def _chunk_reader(array: FancyTarget):
    """``read(coords) -> chunk array or None`` for plain (PreparedChain / object) arrays."""
    chain = array.chain
    store = array.store
    base = array.chunk_path

    def keys_for(coords: np.ndarray) -> list[str]:
        return chunk_keys(array.metadata, base, coords)

    def read(key: str) -> np.ndarray | None:
        raw = store.get_limited(key, chain.stored_limit)
        if raw is None:
            return None
        if array.objects:
            return chain.decode(raw, key)
        return chain.view(chain.decode(raw, key))

    return keys_for, read


def _region_slices(array: FancyTarget, coords: tuple[int, ...]) -> tuple[slice, ...]:
    if array.bounds is not None:
        return tuple(slice(int(b[c]), min(int(b[c + 1]), n))
                     for c, b, n in zip(coords, array.bounds, array.shape, strict=True))
    chunks = array.chunks
    return tuple(slice(c * s, min((c + 1) * s, n))
                 for c, s, n in zip(coords, chunks, array.shape, strict=True))


def _per_dim_groups(array: FancyTarget, indices: tuple[np.ndarray, ...]):
    groups = []
    for d, (idx, g) in enumerate(zip(indices, _grid(array), strict=True)):
        cid, local = _chunk_of(idx, d, array)
        order, cids, starts = _kernels.group_by_chunk(np.ascontiguousarray(cid), g)
        dim = []
        for k in range(len(cids)):
            pos = order[starts[k]:starts[k + 1]]
            dim.append((int(cids[k]), local[pos], pos))
        groups.append(dim)
    return groups

# -- gathers: the touched chunks read a wave at a time, then gathered by NumPy -----------
#
# A regular grid of chunks, or of shards (their inner chunks), is read the way basic
# selections are: the touched chunks of a wave are the rows of a projection onto a
# scratch buffer, chunk ``b`` whole at block ``b`` (of the chunk's shape, stacked along
# the first dimension), and the engine's row readers fetch and decode them there
# (``RowReader`` with the strategy table's row strategies: batches of files decoded by
# one kernel call each, without the GIL; ``ShardRowsRead`` for shards: whole shards by
# one kernel call each, an index read once per shard).  Then one NumPy gather per wave
# (per line of chunks, for an orthogonal selection) moves the selected elements from
# the scratch buffer into place: no Python per index, none per chunk.  Zstd chunks of
# local files that need only a prefix decoded are streamed instead
# (``_stream_prefixes``): no waves, each part of a few chunks decoded and gathered into
# place by the thread that took it (cold files too: announced ahead of the parts).

#: bytes of decoded chunks a gather holds at once (its scratch buffer: kept by the
#: calling thread for its next gather when at most this large)
GATHER_WAVE_BYTES = 16 * 2**20
#: the same from a store of concurrent requests (a remote one): each wave is a round
#: trip, so fewer, larger waves (1,024 rows of 445 chunks of 256 KiB over 20 ms of
#: latency: 7 waves of 16 MiB took 265 ms)
REMOTE_WAVE_BYTES = 64 * 2**20


def _wave_chunks(array: FancyTarget, chain: PreparedChain) -> int:
    """How many chunks of ``chain`` a wave of a gather of ``array`` reads."""
    wave = (REMOTE_WAVE_BYTES if array.store.capabilities.batched_gets
            else GATHER_WAVE_BYTES)
    return max(1, wave // max(1, chain.chunk_nbytes))


#: a gather whose first chunk file is out of the page cache announces its chunk files
#: to the kernel (``POSIX_FADV_WILLNEED``) from a thread of its own
#: (:class:`~zarrfast.engine.chunked.Announcer`), in order, across its waves (or the
#: parts of a streamed gather), up to about this many bytes of chunks (decoded; 16 to
#: PREFETCH_FILES files) past the chunks its threads have taken: the disk reads the
#: next files while the threads decode, and the threads never wait in the announcing
#: (each wave announcing its own files at once did: as long as its reads).  0 turns it
#: off.
GATHER_AHEAD_BYTES = 64 * 2**20


class _Ahead:
    """The chunk files of one line of a gather's waves (``coords``: the grid coordinates
    of its chunks, in the order the waves read them) announced to the kernel ahead of
    the chunks the threads take, when the first is cold
    (:func:`~zarrfast.engine.chunked.first_cold`).  Only for a regular grid's chunks on
    a store of local files (the inner chunks of shards are parts of files: announcing a
    shard would read all of it).  :meth:`close` when the line is read."""

    def __init__(self, array: FancyTarget, chain: PreparedChain, coords: np.ndarray) -> None:
        caps = array.store.capabilities
        self.on = bool(GATHER_AHEAD_BYTES > 0 and chain is array.chain and caps.files
                       and not caps.batched_gets and len(coords) > 1)
        self.array, self.coords = array, coords
        self.window = max(16, min(PREFETCH_FILES,
                                  GATHER_AHEAD_BYTES // max(1, chain.chunk_nbytes)))
        self.announcer: Announcer | None = None
        self.start = 0  # the chunk the announcer's first file is of

    def cold(self, a: int) -> bool:
        """Before the wave that starts at chunk ``a``: whether its files are being
        announced (the first call probes its first file; a warm one turns this off:
        each wave then probes its own)."""
        if self.on and self.announcer is None:
            array = self.array
            first = chunk_keys(array.metadata, array.chunk_path, self.coords[a:a + 1])
            self.on = first_cold(array.store, first[0])
            if self.on:  # (the keys of the rest only then: a warm gather costs a probe)
                keys = chunk_keys(array.metadata, array.chunk_path, self.coords[a:])
                self.announcer = Announcer(array.store, keys, self.window)
                self.start = a
        return self.on

    def taken(self, i: int) -> None:
        """The threads have taken the chunks before ``i``."""
        if self.announcer is not None:
            self.announcer.taken(i - self.start)

    def close(self) -> None:
        if self.announcer is not None:
            self.announcer.close()
            self.announcer = None


class _GatherScratch(threading.local):
    buf: np.ndarray | None = None


_gather_scratch = _GatherScratch()


def _scratch(nbytes: int, where: str) -> np.ndarray:
    """A flat uint8 buffer of ``nbytes``: this thread's (reused: its pages are mapped
    already) when it is at most GATHER_WAVE_BYTES, else a fresh one."""
    if nbytes > GATHER_WAVE_BYTES:  # (pages kept for the next buffer of its size)
        return _buffers.empty(nbytes, np.uint8, where=where, reuse=True,
                              what="a buffer to decode the chunks of a gather into")
    buf = _gather_scratch.buf
    if buf is None or buf.nbytes < nbytes:
        _gather_scratch.buf = None
        buf = _gather_scratch.buf = _buffers.empty(
            GATHER_WAVE_BYTES, np.uint8, where=where, reuse=True,
            what="a buffer to decode the chunks of a gather into")
    return buf[:nbytes]


def _gather_chain(array: FancyTarget) -> PreparedChain | None:
    """The chain whose chunks a gather reads a wave at a time: a regular grid's, or the
    inner chunks' of a regular grid of shards; ``None``: the per-chunk paths."""
    chain = array.chain
    if array.objects or array.bounds is not None or not array.shape:
        return None
    if isinstance(chain, PreparedChain):
        return chain
    if getattr(chain, "kind", None) == "sharded" and not chain.rectilinear:
        return chain.inner
    return None


class _WholeChunks:
    """A projection (as :class:`~zarrfast.engine.chunked.Projection` has it) of the
    chunks at ``coords`` onto a scratch array of shape ``(k * c0, c1, ...)``: chunk
    ``b`` whole at block ``b`` (clipped at the array's edge)."""

    def __init__(self, chain: PreparedChain, shape: tuple[int, ...], coords: np.ndarray
                 ) -> None:
        cs = chain.chunk_shape_arr
        k = len(coords)
        self.chain = chain
        self.coords = coords
        self.nrows = k
        self.local_start = np.zeros_like(coords)
        self.local_count = np.minimum(cs, np.array(shape, dtype=np.int64) - coords * cs)
        self.out_start = np.zeros_like(coords)
        self.out_start[:, 0] = np.arange(k, dtype=np.int64) * cs[0]
        self.complete = np.ones(k, dtype=np.bool_)
        full = np.array(chain.chunk_shape, dtype=np.int64)
        full[0] *= k
        ndim = len(shape)
        self.sel = BasicSelection(np.zeros(ndim, np.int64), np.ones(ndim, np.int64), full,
                                  (False,) * ndim)


#: a wave of zstd chunks is decoded up to the last byte it needs (``zstd_prefix``) when
#: that saves at least this share of decoding: each chunk then costs some Python
PREFIX_SAVING = 0.1
#: zstd decodes a frame a block at a time, blocks of up to 128 KiB (ZSTD_BLOCKSIZE_MAX)
ZSTD_BLOCK = 128 * 2**10
#: chunks a thread reads and decodes at a time (``_read_prefixes``)
PREFIX_PART = 4
#: at most this many fetched chunks per ``get_many`` call of ``_fetch_prefixes``: the
#: calls' requests are in flight together (up to the store's bound), and each call's
#: chunks are decoded as soon as its last one has come, so that small calls start the
#: decoding while most requests are still in flight, not after the last of a few big ones
FETCH_PART = 16


def _prefix_pays(chain: PreparedChain, need: np.ndarray) -> bool:
    """Whether decoding only ``need`` bytes of each chunk saves PREFIX_SAVING of the
    decoding (each chunk decoded up to the end of the block its last byte is in)."""
    nb = chain.chunk_nbytes
    blocks = np.minimum(nb, -(-need // ZSTD_BLOCK) * ZSTD_BLOCK)
    return bool(blocks.sum() <= (1 - PREFIX_SAVING) * len(need) * nb)


def _prefix_kind(array: FancyTarget, chain: PreparedChain) -> str | None:
    """How the chunks of ``chain`` may be decoded only up to the bytes a gather needs
    (zstd alone after the ``bytes`` codec and transposes, no byte swap): ``"chunks"``
    on a store that reads many values into a buffer at once (local files), ``"shards"``
    for inner chunks of shards on a store read key by key; else ``None``."""
    if not (_zstd_prefix.available and chain.fast and chain.batch_codec == "zstd"
            and len(chain.bb) == 1 and chain.swap_unit == 1):
        return None
    caps = array.store.capabilities
    if chain is array.chain:
        return "chunks" if caps.reads_into else "fetched" if caps.batched_gets else None
    return "shards" if array.chain.partial_reads and not caps.batched_gets else None


def _read_prefixes(array: FancyTarget, chain: PreparedChain, coords: np.ndarray,
                   need: np.ndarray, ahead: tuple[_Ahead, int] | None = None) -> np.ndarray:
    """``_read_chunks`` of zstd chunks decoded up to ``need`` bytes each (their bytes
    beyond are undefined), in parts of a few chunks that the pool's threads take in
    turn: each part's stored chunks read by one ``read_many_into`` call into the
    thread's buffer, then decoded by ``zstd_prefix.decode_prefixes`` (which releases
    the GIL).  A missing chunk reads as the fill value; one it cannot decode is decoded
    whole (or refused, naming its key)."""
    k, nb = len(coords), chain.chunk_nbytes
    store, keys = array.store, chunk_keys(array.metadata, array.chunk_path, coords)
    buf = _scratch(k * nb, f"array {array.name!r}")
    threads = array.options.threads
    per = max(1, min(PREFIX_PART, -(-k // threads)))
    if ahead is None and k > 1:
        prefetch_if_cold(store, keys)
    files = _prefix_files(store, keys)

    def part(lo: int) -> None:
        hi = min(lo + per, k)
        if ahead is not None:
            ahead[0].taken(ahead[1] + lo)
        _prefix_part(store, chain, keys, lo, hi, need, buf, lo * nb, files)

    # (each part writes its own chunks' blocks of `buf`)
    map_dynamic_into(part, range(0, k, per), work_bytes=int(need.sum()), threads=threads)
    return _chunks_view(chain, buf, k)


def _prefix_files(store: Any, keys: list[str]) -> tuple[bytes, list[bytes]] | None:
    """The root and paths of ``keys`` for ``_prefix_part`` to read with
    ``zstd_prefix.decode_prefix_files``, or ``None`` (a store a kernel may not read
    files of: ``read_many_into`` then)."""
    return store.file_paths(keys) if _zstd_prefix.FILES else None


def _prefix_part(store: Any, chain: PreparedChain, keys: list[str], lo: int, hi: int,
                 need: np.ndarray, buf: np.ndarray, at: int,
                 files: tuple[bytes, list[bytes]] | None = None) -> None:
    """Read the zstd chunks ``keys[lo:hi]`` (one ``read_many_into`` call into this
    thread's buffer) and decode each up to its ``need`` bytes into ``buf``, chunk ``lo +
    j`` at byte ``at + j * chunk_nbytes`` (``zstd_prefix.decode_prefixes``, without the
    GIL).  With ``files`` (``_prefix_files`` of ``keys``), one
    ``zstd_prefix.decode_prefix_files`` call reads each file only up to the blocks it
    decodes and decodes it at once, in this thread's buffer (a batch of 1,024 sorted
    rows reads 14% fewer bytes, and its CPU time in the part fell from 122 to 108 ms);
    a chunk it cannot read or decode is then read as without ``files``.  A missing
    chunk reads as the fill value; one the kernel cannot decode is decoded whole (or
    refused, naming its key)."""
    nb, cap = chain.chunk_nbytes, chain.stored_cap
    if files is not None:
        status, _ = _zstd_prefix.decode_prefix_files(
            files[0], files[1][lo:hi], chain._batch_buffer(1, cap), buf,
            at + np.arange(hi - lo, dtype=np.int64) * nb, need[lo:hi], nb)
        for j in np.flatnonzero(status != _zstd_prefix.DECODED).tolist():
            if status[j] == _zstd_prefix.NO_DATA:  # missing: the fill value
                chain.fill_chunk(buf[at + j * nb:at + (j + 1) * nb])
            else:  # (read again, key by key: says what is wrong, or decodes it whole)
                _prefix_part(store, chain, keys, lo + j, lo + j + 1, need, buf, at + j * nb)
        return
    stored = chain._batch_buffer(hi - lo, cap)  # (this thread's)
    slots = np.arange(hi - lo, dtype=np.int64) * cap
    sizes = store.read_many_into(keys[lo:hi], stored, slots, cap, exact=False)
    fits = sizes <= cap
    status = _zstd_prefix.decode_prefixes(
        stored, slots, np.where(fits, sizes, -1), buf,
        at + np.arange(hi - lo, dtype=np.int64) * nb, need[lo:hi], nb)
    for j in np.flatnonzero((status != _zstd_prefix.DECODED) | ~fits).tolist():
        b, block = lo + j, buf[at + j * nb:at + (j + 1) * nb]
        if sizes[j] < 0:  # missing: the fill value
            chain.fill_chunk(block)
            continue
        raw = (stored[int(slots[j]):int(slots[j] + sizes[j])] if fits[j]
               else store.get_limited(keys[b], chain.stored_limit))
        if raw is None:  # (removed since)
            chain.fill_chunk(block)
        else:
            chain.decode(raw, keys[b], into=block)  # raises naming the key, or decodes


#: chunks a thread reads and decodes at a time in a streamed gather
#: (``_stream_prefixes``): each part costs ~0.1 ms of interpreter time (a read, a decode
#: and a gather call), a chunk of 256 KiB ~0.3 ms of decoding
STREAM_PART = 8
#: its last chunks are taken in parts of this many, so that the threads end together
#: (a part of STREAM_PART such chunks decodes in ~2 ms: the last one would leave the
#: other threads idle that long)
STREAM_TAIL_PART = 2


def _stream_parts(k: int, per: int, window: int, threads: int) -> list[tuple[int, int]]:
    """The parts (``lo, hi``) of a streamed gather of ``k`` chunks: ``per`` chunks each,
    none across a multiple of ``window`` (each window's first chunk probed for the page
    cache as a wave's is), the last ``threads * per`` in parts of at most
    STREAM_TAIL_PART."""
    tail = max(0, k - threads * per)
    parts = []
    for w in range(0, k, window):
        end = min(w + window, k)
        lo = w
        while lo < end:
            hi = min(lo + (per if lo < tail else min(per, STREAM_TAIL_PART)), end)
            if lo < tail < hi:
                hi = tail
            parts.append((lo, hi))
            lo = hi
    return parts


def _stream_prefixes(array: FancyTarget, chain: PreparedChain, coords: np.ndarray,
                     need: np.ndarray, ahead: _Ahead,
                     consume: Callable[[int, int, np.ndarray], None]) -> bool:
    """Read the chunks at ``coords`` as ``_read_prefixes`` does, but without waves: the
    pool's threads and the calling thread take parts of a few chunks in turn from one
    queue for the whole line, each decoding its part into its own small buffer and
    handing it at once to ``consume(lo, hi, chunks)`` (``chunks``: chunks ``lo:hi``,
    shape ``(hi - lo, *chunk_shape)``, valid during the call), which gathers their
    elements into place.  Waves left a thread idle at each wave's end and while the
    calling thread gathered a wave and planned the next (1,024 sorted rows of 446
    chunks: 7 waves, ~5 ms of a 72 ms batch).  ``consume`` runs on several threads at
    once: the parts must write disjoint elements.  Cold files (the first one out of the
    page cache: ``ahead.cold``) are announced by ``ahead``'s thread, a window ahead of
    the parts the threads take; warm ones have each window's first file probed, as a
    wave's are.  ``False`` (nothing read) where this does not apply: chunks other than
    zstd ones of local files that prefixes save decoding of."""
    if (len(coords) < 2 or _prefix_kind(array, chain) != "chunks"
            or not _prefix_pays(chain, need)):
        return False
    cold = ahead.cold(0)  # (cold: the line's files announced ahead of the parts taken)
    k, nb = len(coords), chain.chunk_nbytes
    store, keys = array.store, chunk_keys(array.metadata, array.chunk_path, coords)
    threads = array.options.threads
    window = _wave_chunks(array, chain)
    per = max(1, min(STREAM_PART, -(-k // max(1, threads))))
    where = f"array {array.name!r}"
    # (_chunks_view's shape and strides, made once)
    shape, strides = chain.chunk_shape, (nb, *(int(x) for x in chain.chunk_strides))
    files = _prefix_files(store, keys)

    def part(span: tuple[int, int]) -> None:
        lo, hi = span
        if cold:
            ahead.taken(lo)
        elif lo % window == 0 and min(lo + window, k) - lo > 1:
            # (each wave's files probed, as _read_prefixes probes them: a warm first
            # wave says nothing of the next ones)
            prefetch_if_cold(store, keys[lo:lo + window])
        buf = _scratch((hi - lo) * nb, where)  # (this thread's)
        _prefix_part(store, chain, keys, lo, hi, need, buf, 0, files)
        consume(lo, hi, np.ndarray((hi - lo, *shape), dtype=chain.dtype, buffer=buf,
                                   strides=strides))

    # (each part writes the elements of its own chunks: see the docstring)
    map_dynamic_into(part, _stream_parts(k, per, window, threads),
                     work_bytes=int(need.sum()), threads=threads)
    return True


def _fetch_prefixes(array: FancyTarget, chain: PreparedChain, coords: np.ndarray,
                    need: np.ndarray) -> np.ndarray:
    """``_read_prefixes`` from a store of concurrent requests (a remote one): the
    chunks fetched by ``get_many`` calls of at most ``FETCH_PART`` chunks, up to
    ``io_concurrency`` calls at once (their requests in flight together, up to the
    store's bound: an ``ObjectStore``'s ``reads_in_flight``), and each call's chunks, as
    soon as they arrive, decoded up to ``need`` bytes where they lie by one
    ``zstd_prefix.decode_prefix_blobs`` call on the pool, without the GIL (while the
    other calls' requests are still in flight).  Used even where prefixes save little (``need`` up to the last block): decoding
    fetched frames in place, in one call, costs less than one at a time.  A missing
    chunk reads as the fill value; one that does not decode that way (or carries a
    content checksum) is decoded whole by the chain, which checks it, or refused
    naming its key."""
    k, nb = len(coords), chain.chunk_nbytes
    store, keys = array.store, chunk_keys(array.metadata, array.chunk_path, coords)
    buf = _scratch(k * nb, f"array {array.name!r}")
    opts = array.options
    dst_offsets = np.arange(k, dtype=np.int64) * nb

    def fetch(rows: range) -> tuple[range, list[Any]]:
        return rows, store.get_many(keys[rows.start:rows.stop])

    def decode(part: tuple[range, list[Any]]) -> None:
        rows, blobs = part
        lo, hi = rows.start, rows.stop
        status = _zstd_prefix.decode_prefix_blobs(
            blobs, buf, dst_offsets[lo:hi], need[lo:hi], nb)
        for j in np.flatnonzero(status != _zstd_prefix.DECODED).tolist():
            b, raw = lo + j, blobs[j]
            block = buf[b * nb:(b + 1) * nb]
            if raw is None:  # missing: the fill value
                chain.fill_chunk(block)
            else:
                chain.decode(raw, keys[b], into=block)  # raises naming the key, or decodes

    if in_task():  # (a pool's task: its nested work runs inline; one get_many then has
        # all the requests in flight together, then this thread decodes them)
        decode(fetch(range(k)))
    else:
        calls = max(1, min(opts.io_concurrency, 4 * opts.threads))
        per = max(1, min(-(-k // calls), FETCH_PART))
        # (each call's chunks are decoded into their own blocks of `buf`)
        map_io_then(fetch, [range(a, min(a + per, k)) for a in range(0, k, per)], decode,
                    lambda _rows, part: (part,), io=opts.io_concurrency,
                    threads=opts.threads)
    return _chunks_view(chain, buf, k)


def _chunks_view(chain: PreparedChain, buf: np.ndarray, k: int) -> np.ndarray:
    """``k`` decoded chunks back to back in ``buf`` (as stored: a transposed chunk's
    strides permuted) as an array of shape ``(k, *chunk_shape)``."""
    return np.ndarray((k, *chain.chunk_shape), dtype=chain.dtype, buffer=buf,
                      strides=(chain.chunk_nbytes, *(int(x) for x in chain.chunk_strides)))


def _read_shard_prefixes(array: FancyTarget, inner: PreparedChain, coords: np.ndarray,
                         need: np.ndarray) -> np.ndarray:
    """``_read_prefixes`` of the inner chunks of shards: tasks of a few inner chunks of
    one shard, taken by the threads in turn, each read through a
    :class:`~zarrfast.engine.shard_view.ShardView` (the shard's index cached; one
    request per run of nearby inner chunks) and decoded up to ``need`` bytes
    (``zstd_prefix``, without the GIL).  An inner chunk not stored reads
    as the fill value; one that does not decode is decoded whole, or refused naming the
    shard and the inner chunk."""
    chain = array.chain
    k, nb = len(coords), inner.chunk_nbytes
    rows = _WholeChunks(inner, array.shape, coords)
    keys, _, groups, inner_lin = group_by_shard(
        chain, rows, array.chunk_path)  # type: ignore[arg-type]  # (a projection)
    buf = _scratch(k * nb, f"array {array.name!r}")
    dst_offsets = np.arange(k, dtype=np.int64) * nb
    gap = array.options.shard_coalesce_gap

    # tasks of at most PREFIX_PART inner chunks of one shard, taken by the threads in turn
    tasks = [(g, grows[a:a + PREFIX_PART]) for g, grows in enumerate(groups)
             for a in range(0, len(grows), PREFIX_PART)]

    def shard(task: tuple[int, np.ndarray]) -> None:
        g, grows = task
        key = keys[g]
        stored = np.zeros(len(grows), dtype=np.bool_)
        for run in ShardView(array.store, key, chain, gap=gap).fetch_stored(inner_lin[grows]):
            r = grows[run.which]
            blob = np.frombuffer(run.blob, dtype=np.uint8)
            status = _zstd_prefix.decode_prefixes(blob, run.offsets, run.sizes, buf,
                                                  dst_offsets[r], need[r], nb)
            stored[run.which] = True
            for j in np.flatnonzero(status != _zstd_prefix.DECODED).tolist():
                off, size, b = int(run.offsets[j]), int(run.sizes[j]), int(r[j])
                try:
                    inner.decode(blob[off:off + size], key, into=buf[b * nb:(b + 1) * nb])
                except ChunkDecodeError as e:
                    name = chain.layout.inner_name(int(inner_lin[b]))
                    context = f"shard {key!r}, inner chunk {name}"
                    add_context(e, context, f"{e} [{context}]")
                    raise
        for b in grows[~stored].tolist():  # not stored: the fill value
            inner.fill_chunk(buf[b * nb:(b + 1) * nb])

    # (each task writes its own inner chunks' blocks of `buf`)
    map_dynamic_into(shard, tasks, work_bytes=int(need.sum()), threads=array.options.threads)
    return _chunks_view(inner, buf, k)


def _read_chunks(array: FancyTarget, chain: PreparedChain, coords: np.ndarray,
                 dtype: np.dtype, need: np.ndarray | None = None,
                 ahead: tuple[_Ahead, int] | None = None) -> np.ndarray:
    """The chunks at ``coords`` (rows of grid coordinates: of the inner grid for shards),
    decoded: an array of shape ``(k, *chunk_shape)`` (a scratch buffer, valid until this
    thread's next gather; beyond the array's edge its contents are undefined).  With
    ``need``, only the first ``need[b]`` bytes of chunk ``b`` as stored (decoded) are
    used: a chain whose chunks can be decoded that far only may leave the rest
    undefined.  ``ahead``: the gather's cold files announcer and the position of
    these chunks in its line (their files are announced as they are taken)."""
    if need is not None:
        kind = _prefix_kind(array, chain)
        if kind == "fetched":
            # (even where prefixes save little: fetched chunks decoded where they lie,
            # one call per get_many without the GIL, cost less than one by one)
            return _fetch_prefixes(array, chain, coords, need)
        if kind == "chunks" and _prefix_pays(chain, need):
            return _read_prefixes(array, chain, coords, need, ahead)
        if kind == "shards" and _prefix_pays(chain, need):
            return _read_shard_prefixes(array, chain, coords, need)
    rows = _WholeChunks(chain, array.shape, coords)
    k, cs = len(coords), chain.chunk_shape
    buf = _scratch(k * math.prod(cs) * dtype.itemsize, f"array {array.name!r}")
    scratch = buf.view(dtype).reshape(rows.sel.full_shape)
    store = array.store
    plan = Plan(store, store.capabilities, array.chunk_path, array.chain, rows.sel,
                given_options=array.options, out=scratch, size=scratch.size)
    if chain is array.chain:
        reader = RowReader(rows, scratch, plan.caps)  # type: ignore[arg-type]  # (a projection)
        keys = chunk_keys(array.metadata, array.chunk_path, coords)
        if ahead is not None:  # (the files of this wave on, announced as it reads)
            ahead[0].taken(ahead[1])
        choose_rows(READ_ROWS, plan, reader).run(plan, keys, reader)
    else:  # the inner chunks of shards
        shards = group_by_shard(array.chain, rows, array.chunk_path)  # type: ignore[arg-type]
        ShardRowsRead(plan, (rows, *shards)).run()
    return scratch.reshape(k, *cs)


def _group(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``group_by_chunk`` of ``ids`` (in ``[0, n)``): (order, distinct ids, starts)."""
    return _kernels.group_by_chunk(np.ascontiguousarray(ids, dtype=np.int64), n)


def _run_or_array(idx: np.ndarray) -> slice | np.ndarray:
    """``idx`` as a slice when it is a run of consecutive increasing integers."""
    if idx.size and int(idx[-1]) - int(idx[0]) == idx.size - 1 and (
            idx.size < 3 or bool(np.all(np.diff(idx) == 1))):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _place(out: np.ndarray, chunks: np.ndarray, g: int, rank: np.ndarray,
           local: np.ndarray, pos: np.ndarray, src: list[Any], dst: list[Any]) -> None:
    """Of ``chunks`` (``(k, *chunk_shape)``), the elements at chunk ``rank`` and
    ``local`` along dimension ``g`` and ``src`` along the others, into ``out`` at
    ``pos`` along ``g`` and ``dst`` along the others (``dst[g]`` unused)."""
    # chunks (k, c_g, c_others...): the elements along g, then the others
    block = np.moveaxis(chunks, 1 + g, 1)[rank, local]
    for axis, sl in enumerate(src, start=1):
        if isinstance(sl, slice):
            if sl != slice(0, block.shape[axis]):
                block = block[(slice(None),) * axis + (sl,)]
        else:
            block = block.take(sl, axis=axis)
    block = np.moveaxis(block, 0, g)
    at = list(dst)  # (a copy: streamed parts place theirs on several threads)
    at[g] = pos
    if sum(1 for x in at if not isinstance(x, slice)) > 1:
        out[np.ix_(*(np.arange(x.start, x.stop) if isinstance(x, slice) else x
                     for x in at))] = block
    else:
        out[tuple(at)] = block


def _gather_orthogonal(array: FancyTarget, chain: PreparedChain, osel: OrthogonalSelection,
                       out: np.ndarray) -> None:
    """``out[...] = array[outer(osel.indices)]`` (``out`` of ``osel.full_shape``).

    The dimension with the most touched chunks is the gather's: each line of touched
    chunks along it (one per combination of the other dimensions' touched chunks) is
    read a wave at a time, and each wave gathered by one NumPy indexing."""
    cs = chain.chunk_shape
    ndim = len(cs)
    grid = _grid(array)
    dims = []  # per dim: (local indices, order, distinct chunk ids, starts)
    for d, idx in enumerate(osel.indices):
        cid = idx // cs[d]
        order, cids, starts = _group(cid, grid[d])
        dims.append((idx - cid * cs[d], order, cids, starts))
    g = max(range(ndim), key=lambda d: len(dims[d][2]))
    local_g, order_g, cids_g, starts_g = dims[g]
    others = [d for d in range(ndim) if d != g]
    per_wave = _wave_chunks(array, chain)
    # each element's chunk along g, as its rank among the touched ones
    rank_g = np.empty(len(local_g), dtype=np.int64)
    rank_g[order_g] = np.repeat(np.arange(len(cids_g), dtype=np.int64), np.diff(starts_g))
    # the bytes of each chunk (decoded, as stored) up to the last selected element
    strides = chain.chunk_strides
    last_g = np.maximum.reduceat(local_g[order_g], starts_g[:-1]) * int(strides[g])
    for combo in itertools.product(*(range(len(dims[d][2])) for d in others)):
        # the other dims: their positions in the output, and indices in the chunk
        dst: list[Any] = [slice(None)] * ndim
        src: list[Any] = []
        coords_other = {}
        last = chain.itemsize
        for d, j in zip(others, combo, strict=True):
            local, order, cids, starts = dims[d]
            pos = order[starts[j]:starts[j + 1]]
            dst[d] = _run_or_array(pos)
            src.append(_run_or_array(local[pos]))
            coords_other[d] = int(cids[j])
            last += int(local[pos].max()) * int(strides[d])
        line = np.empty((len(cids_g), ndim), dtype=np.int64)
        line[:, g] = cids_g
        for d, c in coords_other.items():
            line[:, d] = c

        # (the gather's dimension first and slices for the others, as a loader's
        # rows: one indexing of the chunks, without moving axes)
        plain = g == 0 and all(isinstance(x, slice) for x in (*src, *dst[1:]))

        def gather(a: int, b: int, chunks: np.ndarray, dst: list[Any] = dst,
                   src: list[Any] = src, plain: bool = plain) -> None:
            """The elements of the line's chunks ``a:b`` (``chunks``) into place."""
            pos_g = order_g[starts_g[a]:starts_g[b]]
            if plain:
                out[(pos_g, *dst[1:])] = chunks[(rank_g[pos_g] - a, local_g[pos_g], *src)]
            else:
                _place(out, chunks, g, rank_g[pos_g] - a, local_g[pos_g], pos_g, src, dst)

        ahead = _Ahead(array, chain, line)
        try:
            if _stream_prefixes(array, chain, line, last_g + last, ahead, gather):
                continue
            for a in range(0, len(cids_g), per_wave):
                b = min(a + per_wave, len(cids_g))
                gather(a, b, _read_chunks(array, chain, line[a:b], out.dtype,
                                          last_g[a:b] + last,
                                          (ahead, a) if ahead.cold(a) else None))
        finally:
            ahead.close()


def _gather_points(array: FancyTarget, chain: PreparedChain, coords: tuple[np.ndarray, ...],
                   out: np.ndarray) -> bool:
    """``out[i] = array[coords[0][i], coords[1][i], ...]``, a wave of chunks at a time,
    each gathered by one NumPy indexing.  False (nothing done) when the grid has too
    many chunks to number them in an int64."""
    cs = chain.chunk_shape
    grid = _grid(array)
    if math.prod(grid) > 2**62:
        return False
    cids = [c // s for c, s in zip(coords, cs, strict=True)]
    local = [c - k * s for c, k, s in zip(coords, cids, cs, strict=True)]
    lin = np.ravel_multi_index(cids, grid).astype(np.int64, copy=False)
    order, ucids, starts = _group(lin, math.prod(grid))
    chunk_coords = np.stack(np.unravel_index(ucids, grid), axis=1).astype(np.int64)
    rank = np.empty(len(lin), dtype=np.int64)
    rank[order] = np.repeat(np.arange(len(ucids), dtype=np.int64), np.diff(starts))
    per_wave = _wave_chunks(array, chain)
    # the bytes of each chunk (decoded, as stored) up to its last selected element
    last = np.full(len(ucids), chain.itemsize, dtype=np.int64)
    for x, st in zip(local, chain.chunk_strides.tolist(), strict=True):
        last += np.maximum.reduceat(x[order], starts[:-1]) * st

    def gather(a: int, b: int, chunks: np.ndarray) -> None:
        """The points in chunks ``a:b`` (``chunks``) into place."""
        pos = order[starts[a]:starts[b]]
        out[pos] = chunks[(rank[pos] - a, *(x[pos] for x in local))]

    ahead = _Ahead(array, chain, chunk_coords)
    try:
        if _stream_prefixes(array, chain, chunk_coords, last, ahead, gather):
            return True
        for a in range(0, len(ucids), per_wave):
            b = min(a + per_wave, len(ucids))
            gather(a, b, _read_chunks(array, chain, chunk_coords[a:b], out.dtype, last[a:b],
                                      (ahead, a) if ahead.cold(a) else None))
    finally:
        ahead.close()
    return True


def get_orthogonal(array: FancyTarget, osel: OrthogonalSelection) -> np.ndarray:
    out = _buffers.empty(osel.full_shape, array.dtype, where=f"array {array.name!r}",
                         what="the result of an orthogonal selection")
    if out.size == 0:
        return out.reshape(osel.out_shape)
    chain = _gather_chain(array)
    if chain is not None:
        _gather_orthogonal(array, chain, osel, out)
        return out.reshape(osel.out_shape)
    groups = _per_dim_groups(array, osel.indices)
    combos = list(itertools.product(*groups))
    fill = array.fill_value if not hasattr(array.chain, "fill_scalar") else (
        array.chain.fill_scalar)

    if _fast(array) or array.objects:
        keys_for, read = _chunk_reader(array)
        keys = keys_for(np.array([[g[0] for g in combo] for combo in combos], dtype=np.int64))

        def task(i: int) -> None:
            combo = combos[i]
            dst = np.ix_(*(g[2] for g in combo))
            chunk = read(keys[i])
            if chunk is None:
                out[dst] = fill
            else:
                out[dst] = chunk[np.ix_(*(g[1] for g in combo))]

        # tasks write disjoint parts of `out` (each output position maps to one chunk)
        map_unordered_into(task, range(len(combos)), work_bytes=_work(array, len(combos)),
                           threads=array.options.threads)
    else:  # sharded: one basic read per inner chunk (index cached, one ranged read each)
        def block_task(combo: tuple) -> None:
            block = array.get_basic_selection(_region_slices(array, tuple(g[0] for g in combo)))
            out[np.ix_(*(g[2] for g in combo))] = block[np.ix_(*(g[1] for g in combo))]

        map_unordered_into(block_task, combos, work_bytes=_work(array, len(combos)),
                           threads=array.options.threads)
    return out.reshape(osel.out_shape)


def _work(array: FancyTarget, nchunks: int) -> int:
    """Bytes of ``nchunks`` (inner) chunks: the size of a job, for inlining small ones."""
    return nchunks * math.prod(array.chunks) * array.dtype.itemsize


def _chunk_writer(array: FancyTarget):
    chain = array.chain
    store = array.store
    # chunks that are shards decoded whole (an array -> array codec before
    # ``sharding_indexed``): other writers may write the shard's other inner chunks, so
    # each read-modify-write excludes them (engine.rmw)
    shards = (chain.sharded if array.objects
              else getattr(chain.ab, "name", None) == "sharding_indexed")

    def updated(key: str, raw: Any, update) -> Any:
        """The chunk stored as ``raw`` (``None``: missing) with ``update`` applied,
        encoded; ``None`` when it holds only the fill value (and is not to be kept)."""
        if array.objects:
            chunk = chain.new_fill_chunk() if raw is None else chain.decode(raw, key).copy()
            update(chunk)
            if not array.write_empty_chunks and is_fill_chunk(chunk, chain.fill,
                                                              array.metadata.type_info):
                return None
            return chain.encode(chunk)
        buf = (chain.new_fill_chunk(key) if raw is None
               else chain.decode(raw, key, writable=True))
        update(chain.view(buf))
        if not array.write_empty_chunks and chain.is_fill(buf):
            return None
        return chain.encode(buf, write_empty_chunks=array.write_empty_chunks)

    def write(key: str, update) -> None:
        if shards:
            read_modify_write(store, key, lambda raw: updated(key, raw, update),
                              limit=chain.stored_limit,
                              empty=lambda: chain.encode(chain.new_fill_chunk(key),
                                                         write_empty_chunks=True),
                              options=array.options)
            return
        new = updated(key, store.get_limited(key, chain.stored_limit), update)
        if new is None:
            store.delete(key)
        else:
            store.set(key, new)

    return write


def set_orthogonal(array: FancyTarget, osel: OrthogonalSelection, value: Any) -> None:
    full = osel.full_shape
    if math.prod(full) == 0:
        return
    val = _broadcast_value(array, value, osel.out_shape).reshape(full)
    combos = list(itertools.product(*_per_dim_groups(array, osel.indices)))
    if _fast(array) or array.objects:
        keys_for, _ = _chunk_reader(array)
        keys = keys_for(np.array([[g[0] for g in combo] for combo in combos], dtype=np.int64))
        write = _chunk_writer(array)

        def task(i: int) -> None:
            combo = combos[i]

            def update(chunk: np.ndarray) -> None:
                chunk[np.ix_(*(g[1] for g in combo))] = val[np.ix_(*(g[2] for g in combo))]

            write(keys[i], update)

        # one task per chunk: no two tasks read-modify-write the same chunk
        map_unordered_into(task, range(len(combos)), threads=array.options.threads)
        return
    for combo in combos:
        region = _region_slices(array, tuple(g[0] for g in combo))
        block = np.array(array.get_basic_selection(region))
        block[np.ix_(*(g[1] for g in combo))] = val[np.ix_(*(g[2] for g in combo))]
        array.set_basic_selection(region, block)


def _broadcast_value(array: FancyTarget, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    # every element converted (a string array's 5 to '5') or refused before any chunk is
    # written, object arrays too
    arr = as_stored(value, array.dtype, where=f"array {array.name!r}",
                    elements=text_elements(array.metadata))
    try:
        return np.broadcast_to(arr, shape)
    except ValueError:
        raise IndexingError(
            f"array {array.name!r}: value of shape {arr.shape} cannot be broadcast to the "
            f"selection's shape {shape}"
        ) from None


def _point_groups(array: FancyTarget, coords: tuple[np.ndarray, ...]):
    grid = _grid(array)
    split = [_chunk_of(c, d, array) for d, c in enumerate(coords)]
    ccoords = [cid for cid, _ in split]
    lin = (np.ravel_multi_index(ccoords, grid) if coords else np.zeros(0, np.int64)
           ).astype(np.int64)
    order, cids, starts = _kernels.group_by_chunk(np.ascontiguousarray(lin), math.prod(grid))
    chunk_coords = np.array(np.unravel_index(cids, grid)).T.astype(np.int64).reshape(
        len(cids), len(grid))
    out = []
    for k in range(len(cids)):
        pos = order[starts[k]:starts[k + 1]]
        cc = chunk_coords[k]
        local = tuple(split[d][1][pos] for d in range(len(grid)))
        out.append((tuple(int(x) for x in cc), local, pos))
    return out, chunk_coords


def get_points(array: FancyTarget, coords: tuple[np.ndarray, ...], out_shape: tuple[int, ...]
               ) -> np.ndarray:
    n = len(coords[0]) if coords else 0
    out = _buffers.empty(n, array.dtype, where=f"array {array.name!r}",
                         what=f"the result of a selection of {n} points")
    chain = _gather_chain(array)
    if n and chain is not None and _gather_points(array, chain, coords, out):
        return out.reshape(out_shape)
    if n:
        groups, chunk_coords = _point_groups(array, coords)
        fill = array.chain.fill_scalar if hasattr(array.chain, "fill_scalar") else (
            array.fill_value)
        if _fast(array) or array.objects:
            keys_for, read = _chunk_reader(array)
            keys = keys_for(chunk_coords)

            def task(i: int) -> None:
                _, local, pos = groups[i]
                chunk = read(keys[i])
                out[pos] = fill if chunk is None else chunk[local]

            # tasks write disjoint positions of `out`
            map_unordered_into(task, range(len(groups)), work_bytes=_work(array, len(groups)),
                               threads=array.options.threads)
        else:  # sharded: one basic read per inner chunk
            def group_task(group: tuple) -> None:
                cc, local, pos = group
                out[pos] = array.get_basic_selection(_region_slices(array, cc))[local]

            map_unordered_into(group_task, groups, work_bytes=_work(array, len(groups)),
                               threads=array.options.threads)
    return out.reshape(out_shape)


def set_points(array: FancyTarget, coords: tuple[np.ndarray, ...], out_shape: tuple[int, ...],
               value: Any) -> None:
    n = len(coords[0]) if coords else 0
    if not n:
        return
    val = _broadcast_value(array, value, out_shape).reshape(-1)
    groups, chunk_coords = _point_groups(array, coords)
    if _fast(array) or array.objects:
        keys_for, _ = _chunk_reader(array)
        keys = keys_for(chunk_coords)
        write = _chunk_writer(array)

        def task(i: int) -> None:
            _, local, pos = groups[i]

            def update(chunk: np.ndarray) -> None:
                chunk[local] = val[pos]

            write(keys[i], update)

        # one task per chunk
        map_unordered_into(task, range(len(groups)), threads=array.options.threads)
        return
    for cc, local, pos in groups:
        region = _region_slices(array, cc)
        block = np.array(array.get_basic_selection(region))
        block[local] = val[pos]
        array.set_basic_selection(region, block)


def block_region(array: FancyTarget, selection: Any) -> tuple[slice, ...]:
    """The basic selection covering the blocks ``selection`` names: chunks, or shards of
    a sharded array (as in zarr-python)."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    bb = array.block_bounds
    if bb is None:
        chunks = tuple(array.metadata.chunks)  # stored objects: shards of a sharded array
        grid = tuple(-(-n // c) for n, c in zip(array.shape, chunks, strict=True))
    else:
        chunks = (1,) * len(bb)  # (unused: the boundaries say where blocks are)
        grid = tuple(len(b) - 1 for b in bb)
    if sum(1 for s in sel if s is Ellipsis) > 1:
        raise IndexingError(f"block selection {selection!r} has more than one Ellipsis")
    if any(s is Ellipsis for s in sel):
        i = next(k for k, s in enumerate(sel) if s is Ellipsis)
        fill = len(grid) - (len(sel) - 1)
        sel = sel[:i] + (slice(None),) * max(fill, 0) + sel[i + 1:]
    if len(sel) > len(grid):
        raise IndexingError(
            f"too many indices for the block grid: {len(grid)} dimensions, got {len(sel)}"
        )
    sel = sel + (slice(None),) * (len(grid) - len(sel))
    out = []
    for d, (s, g, c, n) in enumerate(zip(sel, grid, chunks, array.shape, strict=True)):
        if _is_int(s):
            i = operator.index(s)
            if not -g <= i < g:
                raise BoundsCheckError(
                    f"block index {i} is out of bounds for dimension {d} with {g} blocks"
                )
            i %= g
            if bb is not None:
                out.append(slice(int(bb[d][i]), min(int(bb[d][i + 1]), n)))
            else:
                out.append(slice(i * c, min((i + 1) * c, n)))
        elif isinstance(s, slice):
            if s.step not in (None, 1):
                raise IndexingError(f"dimension {d}: block selections take step 1, got {s!r}")
            b, e, _ = s.indices(g)
            if bb is not None:
                out.append(slice(min(int(bb[d][b]), n), min(int(bb[d][max(e, b)]), n)))
            else:
                out.append(slice(b * c, min(max(e, b) * c, n)))
        else:
            raise IndexingError(f"dimension {d}: block selection items must be ints or "
                                f"slices, got {s!r}")
    return tuple(out)


def numpy_plan(selection: Any, shape: tuple[int, ...]
               ) -> tuple[OrthogonalSelection, tuple[Any, ...]]:
    """NumPy advanced indexing for what zarr-python refuses (several index arrays mixed
    with slices or an Ellipsis, multi-dimensional index arrays, masks over some of the
    dimensions): the orthogonal block of the distinct indices to read, and a NumPy
    selection that, applied to that block, gives exactly NumPy's result.

    The NumPy selection keeps the original's structure (an Ellipsis stays an Ellipsis,
    an int stays an advanced index), so NumPy's own rules place the broadcast dims.
    """
    items = list(selection) if isinstance(selection, tuple) else [selection]
    ndim = len(shape)
    if sum(1 for s in items if s is Ellipsis) > 1:
        raise IndexingError(f"selection {selection!r} has more than one Ellipsis")
    # a k-d boolean index stands for the k integer arrays of its nonzero()
    expanded: list[Any] = []
    for s in items:
        if s is None:
            raise IndexingError(f"selection {selection!r}: np.newaxis (None) is not supported")
        arr = None
        if isinstance(s, (list, np.ndarray)):
            arr = np.asarray(s)
            if arr.dtype == object:
                raise IndexingError(f"selection item {s!r} is a ragged list")
        if arr is not None and arr.dtype == bool and arr.ndim >= 1:
            # (marker, indices, the mask's shape, which of its dims)
            expanded.extend(("__bool__", a, arr.shape, k) for k, a in enumerate(np.nonzero(arr)))
        else:
            expanded.append(s if arr is None else ("__arr__", arr))
    n_dims = sum(1 for s in expanded if s is not Ellipsis)
    if n_dims > ndim:
        raise IndexingError(
            f"too many indices for array: array has {ndim} dimensions, selection has {n_dims}"
        )
    indices: list[np.ndarray] = []
    np_sel: list[Any] = []
    d = 0
    for s in expanded:
        if s is Ellipsis:
            for _ in range(ndim - n_dims):
                indices.append(np.arange(shape[d], dtype=np.int64))
                d += 1
            np_sel.append(Ellipsis)
            continue
        n = shape[d]
        if isinstance(s, slice):
            indices.append(np.arange(*slice_indices(s, n, d), dtype=np.int64))
            np_sel.append(slice(None))
        elif _is_int(s) or (isinstance(s, np.ndarray) and s.ndim == 0 and s.dtype.kind in "iu"):
            indices.append(_wrap(np.array([operator.index(s)]), n, d))
            np_sel.append(0)  # an int among index arrays is an advanced index in NumPy
        elif isinstance(s, tuple) and s and s[0] in ("__arr__", "__bool__"):
            arr = s[1]
            if s[0] == "__bool__" and s[3] == 0:
                mask_shape = s[2]
                covered = tuple(shape[d:d + len(mask_shape)])
                if mask_shape != covered:
                    raise IndexingError(
                        f"boolean index of shape {mask_shape} does not match dimensions "
                        f"{d}..{d + len(mask_shape) - 1} of shape {covered}"
                    )
            if arr.dtype.kind not in "iu" and arr.size:
                raise IndexingError(f"dimension {d}: index array of dtype {arr.dtype} is not "
                                    f"integer")
            flat = _wrap(arr.reshape(-1), n, d)
            uniq, inverse = np.unique(flat, return_inverse=True)
            indices.append(uniq.astype(np.int64))
            np_sel.append(inverse.reshape(arr.shape))
        else:
            raise IndexingError(f"dimension {d}: unsupported selection item {s!r}")
        d += 1
    while d < ndim:  # trailing dims not named: whole
        indices.append(np.arange(shape[d], dtype=np.int64))
        d += 1
    return OrthogonalSelection(tuple(indices), (False,) * ndim), tuple(np_sel)
