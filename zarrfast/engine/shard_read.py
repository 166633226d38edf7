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
from collections import OrderedDict
from concurrent.futures import Future, wait
from typing import Any

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.concurrency import get_pool, in_task, map_io_then, map_unordered_into
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
        #: a remote store that gives a value's pieces as they arrive, inner chunks that
        #: are one zstd frame each, two compute threads or more, not inside a task of
        #: the pool (whose workers would wait for their own decodes): whole shards are
        #: streamed, their inner chunks decoded while the rest arrives
        #: (:meth:`fetch_streamed`)
        self.stream = (self.deferred is not None and self.decode_in_fetch
                       and self.opts.threads > 1 and not in_task()
                       and plan.store.streamed_reads
                       and inner.batch_codec == "zstd" and len(inner.bb) == 1)
        #: per streamed shard, its rows placed while it arrived (and checked since)
        self.confirmed: dict[int, np.ndarray] = {}
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
        if self.whole[g] and self.stream and not self.subs[g].outer_bb:
            self.fetch_streamed(g)
        elif self.whole[g]:
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

    def fetch_streamed(self, g: int) -> None:
        """Shard ``g`` in one request, its inner chunks decoded while it arrives.

        The index (at the shard's end, or at its start) is not known before the
        whole shard is in, so the inner chunks are guessed: the shard's zstd frames,
        walked from the start of its data as their bytes arrive, taken to be its inner
        chunks in write order, as every writer that packs them lays them out.  Each
        arrived run of frames is decoded into place on the compute pool.  Once the
        shard is in, its index is read and checked as :meth:`fetch_whole` does, and a
        guessed chunk counts only where the index gives it exactly those bytes and it
        decoded cleanly; every other inner chunk is placed from the index as usual
        (whatever a wrong guess wrote is overwritten: an inner chunk the index says is
        not stored gets the fill value).  Nothing depends on the guess but the time.
        Where the guess was wrong, the order the shard holds its inner chunks in is
        guessed for the next shards of the array (``_Guess.learn``).  A body that
        fails midway is read again whole (:meth:`fetch_whole`)."""
        key, rows, sub, chain = self.keys[g], self.groups[g], self.subs[g], self.chain
        layout = sub.layout
        token = self.store.version(key) if chain.partial_reads else None
        got = self.store.get_streamed(key, sub.stored_limit)
        if got is None:
            return  # (missing: the fill value)
        size, pieces = got
        data = _buffers.empty(size, np.uint8, where=f"shard {key!r}",
                              what="a buffer to read the shard into")
        guess = _Guess(self, g, data, layout)
        pos = 0
        close = getattr(pieces, "close", None)  # (gives the store's request slot back)
        try:
            for piece in pieces:
                arr = np.frombuffer(piece, dtype=np.uint8)
                if pos + arr.size > size:
                    raise ValueError(f"shard {key!r}: the body is longer than {size} bytes")
                data[pos:pos + arr.size] = arr
                pos += arr.size
                guess.arrived(pos)
            if pos != size:
                raise ValueError(f"shard {key!r}: the body ended after {pos} of {size} bytes")
        except Exception:
            if close is not None:
                close()
            guess.stop()  # (its decodes end before the shard's rows are placed again)
            self.fetch_whole(g)  # (read again, with the store's retries)
            return
        finally:
            if close is not None:
                close()
        decoded = guess.stop()
        index = layout.index_of_shard(data, key)
        if token is not None:
            chain.cache.put(key, (token, index))
        entries = index[self.inner_lin[rows]]
        used = entries[:, 0] != EMPTY
        offsets = entries[:, 0].astype(np.int64)
        sizes = entries[:, 1].astype(np.int64)
        good = decoded & used & (offsets == guess.offsets) & (sizes == guess.sizes)
        if not good[used].all():
            guess.learn(index)
        self.confirmed[g] = rows[good]
        self.placed[rows[good]] = True
        todo = used & ~good
        self.place(g, key, data, rows[todo], offsets[todo], sizes[todo], layout)

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
        done = self.confirmed.pop(g, None)
        if done is not None:
            covered.append(done)
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


def zstd_frame_size(data: Any, start: int, stop: int) -> int:
    """The size of the zstd frame at byte ``start`` of ``data`` (a memoryview of
    bytes), found from its frame header and block headers alone (nothing decoded):
    ``0`` when the frame does not end at or before byte ``stop`` (more bytes needed),
    ``-1`` when no zstd frame starts there (another magic number, a reserved block
    type)."""
    if stop - start < 6:
        return 0 if stop - start < 4 or data[start:start + 4] == _ZSTD_MAGIC else -1
    if data[start:start + 4] != _ZSTD_MAGIC:
        return -1
    fhd = data[start + 4]
    single = (fhd >> 5) & 1
    fcs = (0, 2, 4, 8)[fhd >> 6] or single
    pos = start + 5 + (1 - single) + (0, 1, 2, 4)[fhd & 3] + fcs
    while True:
        if pos + 3 > stop:
            return 0
        head = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
        kind = (head >> 1) & 3
        if kind == 3:
            return -1
        pos += 3 + (1 if kind == 1 else head >> 3)
        if head & 1:
            break
    pos += 4 * ((fhd >> 2) & 1)  # (the content checksum)
    return pos - start if pos <= stop else 0


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: per array (its store's URL, its path, the shard and inner chunk shapes), the order
#: of inner chunks found in one of its shards where the write order was guessed wrong
#: (``_Guess.learn``); the most recent ``_LEARNED_MAX`` arrays
_LEARNED: OrderedDict[tuple, list[int]] = OrderedDict()
_LEARNED_MAX = 256


class _Guess:
    """The inner chunks of a streamed whole shard, guessed as its bytes arrive (see
    :meth:`ShardRowsRead.fetch_streamed`): per row of the shard, the offset and size
    of the frame taken to be its inner chunk (``-1``: none), and which of them
    decoded cleanly."""

    def __init__(self, read: ShardRowsRead, g: int, data: np.ndarray,
                 layout: ShardFormat) -> None:
        self.read, self.data, self.view = read, data, memoryview(data.data)
        self.rows = rows = read.groups[g]
        self.n_inner = layout.n_inner
        self.array = (getattr(read.store, "url", id(read.store)), read.plan.path,
                      layout.shard_shape, layout.inner_shape)
        self.order = _LEARNED.get(self.array) or (
            range(layout.n_inner) if layout.rank is None else np.argsort(layout.rank).tolist())
        where = np.full(layout.n_inner, -1, dtype=np.int64)  # inner chunk -> its row
        where[read.inner_lin[rows]] = np.arange(len(rows))
        self.where = where.tolist()
        self.offsets = np.full(len(rows), -1, dtype=np.int64)
        self.sizes = np.full(len(rows), -1, dtype=np.int64)
        self.at = layout.data_start  # where the next frame starts
        self.next = 0  # frames found
        self.end = data.size - layout.index_nbytes if layout.at_end else data.size
        self.on = True
        self.pool = get_pool(read.opts.threads)
        self.tasks: list[Future] = []

    def arrived(self, pos: int) -> None:
        """The shard's first ``pos`` bytes are in: decode the frames they complete."""
        stop = min(pos, self.end)
        found: list[int] = []
        while self.on and self.next < len(self.where):
            n = zstd_frame_size(self.view, self.at, stop)
            j = self.where[self.order[self.next]] if n > 0 else -1
            if n == 0:
                break
            if j < 0:  # not a frame, or an inner chunk outside the read: stop guessing
                self.on = False
                break
            found.append(j)
            self.offsets[j], self.sizes[j] = self.at, n
            self.at += n
            self.next += 1
        if found:
            self.tasks.append(self.pool.submit(self.decode, np.array(found, dtype=np.int64)))

    def learn(self, index: np.ndarray) -> None:
        """The guessed order was wrong: the order in which this shard holds its inner
        chunks is guessed for the next shards of the array, in this read and the next
        ones, also of the array opened again (when it holds them all: zarr-python 3.1
        and later write Z order, which the metadata does not say)."""
        if self.n_inner == len(index) and (index[:, 0] != EMPTY).all():
            _LEARNED[self.array] = np.argsort(index[:, 0], kind="stable").tolist()
            while len(_LEARNED) > _LEARNED_MAX:
                _LEARNED.popitem(last=False)

    def decode(self, which: np.ndarray) -> tuple[np.ndarray, list[int]]:
        rest = self.read.reader.decode_stored(self.rows[which], self.data,
                                              self.offsets[which], self.sizes[which])
        return which, rest

    def stop(self) -> np.ndarray:
        """No more guesses; once every decode started has ended, which rows decoded
        cleanly (a failed decode counts as not guessed: placed again from the index)."""
        self.on = False
        wait(self.tasks)
        ok = np.zeros(len(self.rows), dtype=np.bool_)
        for task in self.tasks:
            if task.exception() is None:
                which, rest = task.result()
                ok[which] = True
                ok[which[rest]] = False
        return ok
