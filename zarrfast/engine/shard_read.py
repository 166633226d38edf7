"""Reading the rows of a sharded selection: :class:`ShardRowsRead`.

The selection is projected onto the inner grid, and its rows grouped by shard.  Then:

1. whole shards of a local store's files, zstd, blosc or uncompressed inner chunks: one
   ``ShardFiles`` kernel call per shard, without the GIL, reads the file, checks its
   index and places every inner chunk (:func:`~zarrfast.engine.sharded.read_whole_files`);
2. the shards left, in waves of at most ``WAVE_BYTES`` of inner chunks (the fetched bytes
   held at once stay bounded), one task per shard: a shard read whole is fetched in one
   request (into a reused buffer on a local store); a partial shard is read through a
   :class:`~zarrfast.engine.shard_view.ShardView` (its index, then one request per run of
   nearby inner chunks);
3. the fetched inner chunks are placed: uncompressed ones copied, zstd and blosc ones
   decoded into place, by one kernel call per fetched buffer (``decode_stored``), others
   decoded one by one on the pool.  On remote stores the fetches run on the I/O pool and
   each shard's inner chunks are placed on the compute pool as soon as it has arrived.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.concurrency import map_io_then, map_unordered_into
from zarrfast.engine import sharded as _sharded
from zarrfast.engine.chunked import RAW_COST_RATIO, Projection, RowReader
from zarrfast.engine.plan import Plan
from zarrfast.engine.shard_view import ShardView
from zarrfast.engine.sharded import (
    group_by_shard,
    read_partial_files,
    read_whole_files,
    waves_of,
)
from zarrfast.errors import ChunkDecodeError, add_context
from zarrfast.kernels import buffers as _buffers

__all__ = ["ShardRowsRead"]

#: what a fetch found for a shard: ``(key, blob, rows, offsets, sizes, layout)``
Found = tuple[str, Any, np.ndarray, np.ndarray, np.ndarray, ShardFormat]


class ShardRowsRead:
    """One read of a sharded selection (see the module docstring); :meth:`run` does it."""

    def __init__(self, plan: Plan, grouped: tuple | None = None) -> None:
        self.plan = plan
        self.store, self.chain, self.opts = plan.store, plan.chain, plan.options
        chain = self.chain
        if grouped is None:  # the selection projected onto the inner grid, by shard
            proj = Projection(chain.metadata.shape, chain.inner, plan.sel)
            grouped = (proj, *group_by_shard(chain, proj, plan.path))
        # (else given: ``(projection, shard keys, shard coords, rows per shard, inner
        # index)``, as zarr-python's pipeline hands a batch of shards)
        self.proj, self.keys, self.shard_coords, self.groups, self.inner_lin = grouped
        proj = self.proj
        self.rows_per_shard = np.array([len(rows) for rows in self.groups], dtype=np.int64)
        # which shards the read covers whole (all their inner chunks inside the array)
        self.whole = (self.rows_per_shard >= chain.inner_in_array_many(self.shard_coords)
                      if chain.partial_reads
                      else np.ones(len(self.groups), dtype=np.bool_)).tolist()
        assert plan.out is not None  # (a read's plan)
        self.reader = RowReader(proj, plan.out)
        inner = self.inner = chain.inner
        # uncompressed inner chunks are copied from the fetched bytes into `out` during
        # the fetch, one kernel call per fetched buffer, and so are zstd and blosc ones
        # (``decode_stored``); others are decoded one by one
        self.raw_inner = inner.fast and not inner.bb
        self.decode_in_fetch = self.reader.batch_decode
        self.placed = np.zeros(proj.nrows, dtype=np.bool_)
        #: remote stores: per shard, the placements its fetch found, made by the compute
        #: step (fetches run on the I/O pool; placing belongs on the compute pool)
        self.deferred: dict[int, list[Found]] | None = (
            {g: [] for g in range(len(self.groups))} if plan.caps.batched_gets else None)
        # When every inner chunk is placed during the fetch, a whole shard of a local
        # store is read into a buffer of the fetching thread's, reused for its next
        # shard while still in the cache; else, in a large read, into one buffer per
        # wave (fresh buffers per shard cost a page fault per 4 KiB, more than the copy)
        self.use_thread_buffers = ((self.raw_inner or self.decode_in_fetch)
                                   and chain.partial_reads and plan.caps.reads_into)
        self.thread_buffers: dict[int, np.ndarray] = {}
        self.slots: dict[int, tuple[int, int]] = {}
        self.wave_buffer: list[np.ndarray] = []

    # -- the read ------------------------------------------------------------------------
    def run(self) -> None:
        done = read_whole_files(self.plan, self.keys, self.groups, self.inner_lin,
                                self.reader, self.whole)
        # (partial shards of local files: their inner chunks read by a kernel; whole
        # shards the ShardFiles kernel did not take are read whole below)
        todo = [g for g, d in enumerate(done) if not d and self.whole[g]]
        todo += read_partial_files(self.plan, self.keys, self.groups, self.inner_lin,
                                   self.reader,
                                   [g for g, d in enumerate(done) if not d and not self.whole[g]])
        if not todo:
            return
        # each shard's own chain: the array's, but for a rectilinear grid of shards
        self.subs = [self.chain.shard_chain(c) for c in self.shard_coords]
        self.payload: list[Any] = [None] * self.proj.nrows
        self.row_shard = np.empty(self.proj.nrows, dtype=np.int64)
        self.row_shard[np.concatenate(self.groups)] = np.repeat(
            np.arange(len(self.groups)), self.rows_per_shard)
        waves = [[todo[k] for k in w]
                 for w in waves_of([self.groups[g] for g in todo], self.inner.chunk_nbytes)]
        for wave in waves:
            if len(waves) > 1 and not self.use_thread_buffers:
                self.plan_slots(wave)  # (one wave: fresh buffers cost no more)
            self.run_wave(wave)

    def run_wave(self, wave: list[int]) -> None:
        """Fetch the shards of ``wave`` and place their rows.  Each fetch fills the
        payload slots (or output regions) of its own shard's rows only, and every
        placing task writes a disjoint region of ``out`` (inner chunks partition the
        array)."""
        opts, nbytes = self.opts, self.inner.chunk_nbytes
        if self.deferred is not None:
            # each shard's inner chunks are decoded on the pool as soon as it is fetched,
            # while the other shards' requests are still in flight
            map_io_then(self.fetch, wave, self.assemble_part, self.split_rows,
                        io=opts.io_concurrency, threads=opts.threads)
            return
        # (reading is cheaper per byte than decoding: small fetches stay inline, unless
        # the fetch decodes too)
        work = sum(len(self.groups[g]) for g in wave) * nbytes
        map_unordered_into(self.fetch, wave, threads=opts.threads,
                           work_bytes=work // (1 if self.decode_in_fetch else RAW_COST_RATIO))
        rows = np.concatenate([self.groups[g] for g in wave])
        if self.raw_inner or self.decode_in_fetch:
            rows = rows[~self.placed[rows]]
        map_unordered_into(self.assemble, rows.tolist(), work_bytes=len(rows) * nbytes,
                           threads=opts.threads)

    # -- fetching ------------------------------------------------------------------------
    def fetch(self, g: int) -> None:
        if self.whole[g]:
            self.fetch_whole(g)
        else:
            self.fetch_partial(g)

    def fetch_whole(self, g: int) -> None:
        """Shard ``g`` in one request; its index cached under the version read."""
        key, rows, chain = self.keys[g], self.groups[g], self.chain
        layout = self.subs[g].layout
        token = self.store.version(key) if chain.partial_reads else None
        data = self.read_shard(g)
        if data is None:
            return
        index = layout.index_of_shard(data, key)
        if token is not None:
            chain.cache.put(key, (token, index))
        entries = index[self.inner_lin[rows]]
        used = entries[:, 0] != EMPTY
        self.place(g, key, data, rows[used], entries[used, 0].astype(np.int64),
                   entries[used, 1].astype(np.int64), layout)

    def fetch_partial(self, g: int) -> None:
        """The inner chunks of shard ``g`` that the read touches, through its view."""
        key, rows, sub = self.keys[g], self.groups[g], self.subs[g]
        view = ShardView(self.store, key, sub, gap=self.opts.shard_coalesce_gap)
        for run in view.fetch_stored(self.inner_lin[rows]):
            self.place(g, key, run.blob, rows[run.which], run.offsets, run.sizes, sub.layout)

    def read_shard(self, g: int) -> Any:
        """The bytes of shard ``g``: into this thread's buffer, or the wave's, where
        one was made for it; ``None`` when missing."""
        key, store = self.keys[g], self.store
        if self.use_thread_buffers:
            try:
                size = store.getsize(key)
            except FileNotFoundError:
                size = -1  # (removed, or never written: get says which)
            if 0 <= size <= _sharded.THREAD_BUFFER_BYTES:
                buf = self.thread_buffer(size, key)
                if store.get_into(key, buf[:size].data) == size:
                    return buf[:size]
            return self.subs[g].fetch_shard(store, key)
        slot = self.slots.get(g)
        if slot is not None:
            target = self.wave_buffer[0][slot[0]:slot[0] + slot[1]]
            if store.get_into(key, target.data) == slot[1]:
                return target
        return self.subs[g].fetch_shard(store, key)  # (changed since its size was read)

    def thread_buffer(self, size: int, key: str) -> np.ndarray:
        me = threading.get_ident()
        buf = self.thread_buffers.get(me)
        if buf is None or buf.nbytes < size:  # (headroom: shard sizes vary)
            self.thread_buffers.pop(me, None)
            buf = self.thread_buffers[me] = _buffers.empty(
                size + size // 4, np.uint8, where=f"shard {key!r}",
                what="a buffer to read the shard into")
        return buf

    def plan_slots(self, wave: list[int]) -> None:
        """Places in one buffer, reused by every wave, for the whole shards of ``wave``
        (as many as fit in ``WAVE_BYTES``)."""
        self.slots.clear()
        if not (self.chain.partial_reads and self.plan.caps.reads_into):
            return
        pos = 0
        for g in wave:
            if not self.whole[g]:
                continue
            try:
                size = self.store.getsize(self.keys[g])
            except FileNotFoundError:
                continue
            if pos + size > _sharded.WAVE_BYTES:
                break  # the rest are read into buffers of their own
            self.slots[g] = (pos, size)
            pos += size
        if self.slots and (not self.wave_buffer or self.wave_buffer[0].nbytes < pos):
            self.wave_buffer[:] = [_buffers.empty(  # as large as a wave needs
                pos, np.uint8, where="",
                what=f"a buffer for a wave of {len(self.slots)} whole shards")]

    # -- placing -------------------------------------------------------------------------
    def place(self, g: int, key: str, blob: Any, rows: np.ndarray, offsets: np.ndarray,
              sizes: np.ndarray, layout: ShardFormat) -> None:
        """Rows ``rows`` have their stored bytes at ``offsets`` (``sizes`` long) in
        ``blob``: placed now, or by the compute step (remote stores)."""
        if self.deferred is not None:
            self.deferred[g].append((key, blob, rows, offsets, sizes, layout))
        else:
            self.place_now(key, blob, rows, offsets, sizes, layout)

    def place_now(self, key: str, blob: Any, rows: np.ndarray, offsets: np.ndarray,
                  sizes: np.ndarray, layout: ShardFormat) -> None:
        if self.raw_inner:
            self.copy_raw(key, blob, rows, offsets, sizes, layout)
            return
        if self.decode_in_fetch:
            # zstd, blosc: decoded into place in one kernel call; what it cannot decode
            # is left to the per-chunk path (which says why)
            rest = self.reader.decode_stored(rows, np.frombuffer(blob, dtype=np.uint8),
                                             offsets, sizes)
            self.placed[rows] = True
            rows, offsets, sizes = rows[rest], offsets[rest], sizes[rest]
            self.placed[rows] = False
        view = memoryview(blob)
        copy = self.use_thread_buffers  # (the fetch buffer is reused for the next shard)
        for r, off, nb in zip(rows.tolist(), offsets.tolist(), sizes.tolist(), strict=True):
            self.payload[r] = bytes(view[off:off + nb]) if copy else view[off:off + nb]

    def copy_raw(self, key: str, blob: Any, rows: np.ndarray, offsets: np.ndarray,
                 sizes: np.ndarray, layout: ShardFormat) -> None:
        """Uncompressed inner chunks copied from the fetched bytes into place."""
        inner, reader = self.inner, self.reader
        bad = np.flatnonzero(sizes != inner.chunk_nbytes)
        if bad.size:
            j = int(bad[0])
            raise ChunkDecodeError(
                f"shard {key!r}, inner chunk "
                f"{layout.inner_name(int(self.inner_lin[rows[j]]))}: stored "
                f"{int(sizes[j])} bytes, expected {inner.chunk_nbytes} bytes (no compression)")
        # (a large output is written once and not read back soon: streamed stores)
        _kernels.copy_regions(
            np.frombuffer(blob, dtype=np.uint8), offsets + reader.src_offsets[rows],
            reader.src_strides, reader.out_flat, reader.dst_offsets[rows], reader.out_strides,
            self.proj.local_count[rows], inner.itemsize, inner.swap_unit,
            reader.out_flat.nbytes >= _kernels.stream_min())
        self.placed[rows] = True

    def assemble(self, i: int) -> None:
        """Row ``i`` decoded from its fetched bytes (or the fill value) into place."""
        g = self.row_shard[i]
        key = self.keys[g]
        try:
            self.reader.read(i, self.payload[i], key)
        except ChunkDecodeError as e:
            name = self.subs[g].layout.inner_name(int(self.inner_lin[i]))
            context = f"shard {key!r}, inner chunk {name}"
            add_context(e, context, f"{e} [{context}]")
            raise
        self.payload[i] = None  # let the fetched bytes go

    def split_rows(self, g: int, _: None) -> list[tuple[str, Any]]:
        """What is left to do for shard ``g`` once fetched (remote stores), in parts of
        up to ``len(rows) / threads`` rows: the placements its fetch found, then the
        rows none covers (inner chunks not stored: the fill value)."""
        assert self.deferred is not None
        threads = self.opts.threads
        parts: list[tuple[str, Any]] = []
        covered = []
        for key, blob, rows, offsets, sizes, layout in self.deferred.pop(g):
            covered.append(rows)
            per = max(1, -(-len(rows) // threads))
            for a in range(0, len(rows), per):
                sl = slice(a, a + per)
                parts.append(("place", (key, blob, rows[sl], offsets[sl], sizes[sl], layout)))
        rest = self.groups[g]
        if covered:
            rest = np.setdiff1d(rest, np.concatenate(covered), assume_unique=True)
        rest = rest.tolist()
        per = max(1, -(-len(rest) // threads))
        parts += [("rows", rest[a:a + per]) for a in range(0, len(rest), per)]
        return parts

    def assemble_part(self, part: tuple[str, Any]) -> None:
        kind, what = part
        if kind == "place":
            self.place_now(*what)
            rows = what[2]
            what = rows[~self.placed[rows]].tolist()  # (not decoded by the batch kernel)
        for i in what:
            self.assemble(i)
