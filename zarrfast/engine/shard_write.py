"""Writing a selection of a sharded array: :class:`ShardWrite`.

One task per shard (no two tasks read-modify-write the same shard), weighted by the
inner chunks written so that full shards and thin edge shards are shared out evenly:

* a shard whose every inner chunk is written whole, none past the array's edge, is
  built from the value alone: uncompressed inner chunks written by the store from where
  they lie in the value (``set_regions``) or assembled in one buffer; others encoded
  one by one and assembled;
* any other shard is read, changed and written back under the shard's lock (the
  threads of this process, other processes where the store can lock, or a conditional
  write on object stores: :mod:`zarrfast.engine.rmw`): untouched inner chunks keep
  their bytes.  An edge shard always is: another writer may have grown the array.

Inner chunks equal to the fill value are left out; a shard with none left is deleted.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs.shard_format import EMPTY
from zarrfast.concurrency import (
    WriteBehind,
    batch_count,
    map_io,
    map_weighted_into,
    share_with_io_thread,
)
from zarrfast.engine.chunked import Projection, RowWriter
from zarrfast.engine.plan import Plan
from zarrfast.engine.rmw import read_modify_write
from zarrfast.engine.sharded import assemble_raw_shard, group_by_shard, write_shard_direct
from zarrfast.errors import AllocationError, ChunkDecodeError, add_context
from zarrfast.kernels import buffers as _buffers

__all__ = ["ShardWrite"]


class ShardWrite:
    """One write into a sharded selection (see the module docstring); :meth:`run` does it."""

    def __init__(self, plan: Plan, grouped: tuple | None = None) -> None:
        self.plan, self.store, self.chain = plan, plan.store, plan.chain
        chain = self.chain
        if grouped is None:  # the selection projected onto the inner grid, by shard
            proj = Projection(chain.metadata.shape, chain.inner, plan.sel)
            grouped = (proj, *group_by_shard(chain, proj, plan.path))
        # (else given, as :class:`~zarrfast.engine.shard_read.ShardRowsRead` takes it)
        self.proj, self.keys, shard_coords, self.groups, self.inner_lin = grouped
        proj = self.proj
        self.subs = [chain.shard_chain(c) for c in shard_coords]
        self.writer = writer = RowWriter(proj, plan.value, plan.scalar, plan.write_empty_chunks)
        inner = chain.inner
        # whole shards of uncompressed inner chunks written from an array are assembled
        # in place: one copy_regions call, no per-chunk buffers, no join
        self.raw_whole = inner.fast and not inner.bb and writer.value_flat is not None
        # (a shard buffer per thread, reused, when the store keeps no reference to a value)
        self.reuse = plan.caps.copies_values
        # ... or, better, written by the store from where the inner chunks lie in the value
        self.direct = (self.raw_whole and plan.caps.region_sets and not chain.outer_bb
                       and writer.stored_layout is not None)
        # ... and shards of zstd, gzip or zlib inner chunks written from an array, built
        # by one kernel call each: the inner chunks compressed one after the other into
        # one buffer, the index after them (or before), no copy to join them
        self.packed = writer.packs and not chain.outer_bb
        #: the file I/O thread that stores whole encoded shards while the calling thread
        #: encodes the next (a write at one thread to local files), else ``None``
        self.behind: WriteBehind | None = None
        #: the thread that runs :meth:`run` (the one that hands work to :attr:`behind`)
        self.caller = 0
        #: whole shard -> the shard whose read-modify-write the I/O thread does after
        #: storing it (:meth:`beside`)
        self.along: dict[int, int] = {}

    def run(self) -> None:
        self.caller = threading.get_ident()
        weights = [len(rows) for rows in self.groups]
        plan, n = self.plan, len(self.keys)
        if plan.caps.batched_gets:
            map_io(self.task, range(n), io=plan.options.io_concurrency)
            return
        work = self.proj.nrows * self.chain.inner.chunk_nbytes
        if (n > 1 and batch_count(n, work, threads=plan.options.threads) == 1
                and (plan.caps.batched_sets or plan.caps.region_sets)):
            if self.raw_whole and not self.chain.outer_bb:
                # nothing to encode (uncompressed inner chunks, no codec but zarrfast's
                # own): the calling thread and an I/O thread each write the next shard
                # (heaviest first)
                order = sorted(range(n), key=lambda g: -weights[g])
                share_with_io_thread(self.task, order)
                return
            # One thread of encoding, the calling one: the file writes of each whole
            # shard run on an I/O thread while it encodes the next (one in flight), and
            # the read-modify-writes of the others (edge shards, partly written ones)
            # ride along with them (:meth:`beside`)
            whole = [g for g in range(n) if self.is_whole(g)]
            rest = [g for g in range(n) if not self.is_whole(g)]
            with WriteBehind() as behind:
                self.behind = behind
                try:
                    rest = self.beside(whole, rest, weights)
                    for g in whole:
                        self.task(g)
                    for g in rest:  # (those left to the calling thread)
                        self.task(g)
                finally:
                    self.behind = None
                    self.along = {}
            return
        map_weighted_into(self.task, range(n), weights, work_bytes=work,
                          threads=plan.options.threads)

    def task(self, g: int) -> None:
        try:
            self.write_shard(g)
        except MemoryError as e:
            layout = self.subs[g].layout
            raise AllocationError(
                f"shard {self.keys[g]!r}: out of memory writing a shard of {layout.n_inner} "
                f"inner chunks (its index alone takes {layout.index_nbytes} bytes); use "
                f"fewer inner chunks per shard ({e})") from None

    def is_whole(self, g: int) -> bool:
        """Whether every inner chunk of shard ``g`` is written, none reaching past the
        array's edge: no old bytes to keep, no lock."""
        rows, proj = self.groups[g], self.proj
        return (len(rows) == self.subs[g].layout.n_inner and bool(proj.complete[rows].all())
                and not proj.edge[rows].any())

    def beside(self, whole: list[int], rest: list[int], weights: list[int]) -> list[int]:
        """Hand the read-modify-writes of shards ``rest`` (heaviest first) to the I/O
        thread of a write at one thread of shards of zstd, gzip or zlib inner chunks
        (:attr:`packed`), one after the store of each whole shard of
        ``whole`` (:meth:`store_along`), while the calling thread encodes the next whole
        shard (which writes every inner chunk, as many as any shard of ``rest`` writes);
        returns the shards of ``rest`` left to the calling thread.  The I/O thread
        stores a whole shard in about a tenth of the time the caller takes to encode
        it: py-spy of the sharded 256 MiB write at one thread, it idled 90% of the time
        while the caller spent 8% of its own on the edge shards' read-modify-writes;
        one read-modify-write, which also waits for the shard's lock and its old
        bytes, fills that idle time."""
        if not self.packed:
            # (codecs are called from the calling thread only, at one thread: a codec
            # need not be thread-safe there.  A packing chain's are numcodecs' own
            # Zstd, GZip or Zlib, compressed by this thread's ChunkEncoder)
            return rest
        rest = sorted(rest, key=lambda g: -weights[g])
        self.along = dict(zip(whole, rest, strict=False))
        return rest[len(whole):]

    def store_along(self, key: str, shard: Any, g: int | None) -> None:
        """:meth:`store_shard`, then the read-modify-write of shard ``g`` (if any): the
        work of the I/O thread at one thread (:meth:`beside`)."""
        self.store_shard(key, shard)
        if g is not None:
            self.task(g)

    def write_shard(self, g: int) -> None:
        key, sub = self.keys[g], self.subs[g]
        if not self.is_whole(g):
            # the read-modify-write of a shard excludes every other writer of the shard:
            # the threads of this process (every store object of the same data), other
            # processes where the store can lock (LocalStore) or write conditionally (S3)
            read_modify_write(
                self.store, key, lambda stored: self.updated_shard(
                    g, None if stored is None else sub.decode_shard(stored, key)),
                limit=sub.stored_limit, empty=lambda: self.encoded(sub.layout.empty_shard()),
                options=self.plan.options,
                # (a missing shard whose inner chunks are all written whole from the
                # value, an edge shard of a full write: written from there, as a whole
                # shard is, not assembled first)
                direct=(None if not self.direct else lambda: write_shard_direct(
                    self.store, key, sub.layout, self.writer, self.groups[g],
                    self.inner_lin[self.groups[g]])))
            self.chain.cache.put(key, None)  # re-read (and re-checked) on next use
            return
        # every inner chunk written: no old bytes to keep, no lock
        on_caller = self.behind is not None and threading.get_ident() == self.caller
        other = self.along.pop(g, None) if on_caller else None  # (see beside)
        if self.write_whole_raw(g):
            self.chain.cache.put(key, None)
        else:
            shard = self.updated_shard(g, None)  # (fresh bytes, or this thread's buffer
            # ``turn`` of the shard buffers: the other one may be in flight)
            if on_caller:
                assert self.behind is not None
                self.behind.submit(self.store_along, key, shard, other)
                return
            self.store_shard(key, shard)
        if other is not None:  # (not handed over: written here)
            self.task(other)

    def store_shard(self, key: str, shard: Any) -> None:
        """Store a whole shard's bytes (``None``: every inner chunk empty, deleted)."""
        if shard is None:
            self.store.delete(key)
        else:
            self.store.set(key, shard)
        self.chain.cache.put(key, None)  # re-read (and re-checked) on next use

    def write_whole_raw(self, g: int) -> bool:
        """Shard ``g``, written whole from an array of uncompressed inner chunks,
        straight from the value or assembled in one buffer; ``False``, with nothing
        written, when it cannot be (some inner chunk equals the fill value...)."""
        key, rows, layout = self.keys[g], self.groups[g], self.subs[g].layout
        lin = self.inner_lin[rows]
        if self.direct and write_shard_direct(self.store, key, layout, self.writer, rows, lin):
            return True
        if not self.raw_whole:
            return False
        shard = assemble_raw_shard(layout, self.chain.inner, self.writer, self.proj, rows, lin,
                                   self.plan.write_empty_chunks, reuse=self.reuse)
        if shard is None:
            return False
        self.store.set(key, self.encoded(shard))
        return True

    def updated_shard(self, g: int, data: Any) -> Any:
        """The shard ``g`` with this write's inner chunks in it (``data``: the shard's
        decoded bytes as stored, ``None`` when missing), encoded by the codecs after the
        shard; ``None`` when every inner chunk is empty."""
        key, rows, layout = self.keys[g], self.groups[g], self.subs[g].layout
        writer, proj = self.writer, self.proj
        fast = writer.compressible
        if data is None and self.packed and fast is not None and bool(fast[rows].all()):
            return self.packed_shard(g)
        if self.raw_whole:
            shard = self.raw_updated_shard(g, data)
            if shard is not False:
                return shard
        encoded: list[Any] = [None] * layout.n_inner
        index = None if data is None else layout.index_of_shard(data, key)
        if index is not None:
            for j in range(layout.n_inner):  # untouched inner chunks keep their bytes
                encoded[j] = layout.inner_bytes(data, index, j)
        # whole inner chunks of zstd, gzip or blosc: a batch per kernel call
        whole = writer.encode_whole(rows, key)
        for r in rows.tolist():
            j = int(self.inner_lin[r])
            if r in whole:
                encoded[j] = whole[r]
                continue
            old = encoded[j] if writer.needs_old(r) or proj.edge[r] else None
            encoded[j] = self.write_inner(r, old, key, layout.inner_name(j))
        shard = layout.assemble(encoded)
        return None if shard is None else self.encoded(shard)

    def write_inner(self, r: int, old: Any, key: str, inner: str) -> Any:
        """Row ``r``'s inner chunk (named ``inner`` in the shard ``key``) encoded, on its
        ``old`` bytes where they are kept; an old chunk that does not decode is named."""
        try:
            return self.writer.write(r, old, key)
        except ChunkDecodeError as e:
            context = f"shard {key!r}, inner chunk {inner}"
            add_context(e, context, f"{e} [{context}]")
            raise

    def raw_updated_shard(self, g: int, data: Any) -> Any:
        """:meth:`updated_shard` of a shard of uncompressed inner chunks written from an
        array (:attr:`raw_whole`): the inner chunks written whole copied out of the value
        by one ``copy_regions`` call straight to their places in the new shard, the
        others one by one; ``False`` when it cannot be built so (then the general path
        builds it)."""
        rows, writer, proj = self.groups[g], self.writer, self.proj
        batched = proj.complete[rows] & ~proj.edge[rows] & (writer.dst_offsets[rows] == 0)
        if int(batched.sum()) < 2:
            return False
        key, layout, inner = self.keys[g], self.subs[g].layout, self.chain.inner
        n_inner, nb = layout.n_inner, inner.chunk_nbytes
        whole = rows[batched]
        lin_whole = self.inner_lin[whole]
        present = np.zeros(n_inner, dtype=bool)
        present[lin_whole] = True
        # the others: written one by one (on their old bytes where kept), or untouched
        index = None if data is None else layout.index_of_shard(data, key)
        others: dict[int, Any] = {}
        touched = present.copy()
        for r in rows[~batched].tolist():
            j = int(self.inner_lin[r])
            touched[j] = True
            old = (layout.inner_bytes(data, index, j)
                   if index is not None and (writer.needs_old(r) or proj.edge[r]) else None)
            others[j] = self.write_inner(r, old, key, layout.inner_name(j))
        if index is not None:  # (untouched inner chunks keep their bytes)
            for j in np.flatnonzero(~touched & (index[:, 0] != EMPTY)).tolist():
                others[j] = layout.inner_bytes(data, index, j)
        others = {j: b for j, b in others.items() if b is not None}
        if any(memoryview(b).nbytes != nb for b in others.values()):
            return False  # (an inner chunk stored otherwise)
        present[list(others)] = True
        # every inner chunk stored nb bytes long: slot s (in write order) at s * nb
        order = (np.arange(n_inner, dtype=np.int64) if layout.rank is None
                 else np.argsort(layout.rank))
        slot = np.empty(n_inner, dtype=np.int64)
        slot[order] = np.cumsum(present[order]) - 1
        count = int(present.sum())
        start = layout.data_start
        shard = _buffers.empty(count * nb + layout.index_nbytes, np.uint8, where="",
                               what=f"shard {key!r}")
        _kernels.copy_regions(
            writer.value_flat, writer.src_offsets[whole], writer.value_strides,
            shard, start + slot[lin_whole] * nb, writer.dst_strides,
            proj.local_count[whole], inner.itemsize, inner.swap_unit)
        if not self.plan.write_empty_chunks:  # (only chunks starting with the fill value)
            item = inner._fill_chunk_item_arr
            placed = shard[start:start + count * nb].reshape(count, nb)
            heads = placed[slot[lin_whole], :len(item)]
            if any(inner.is_fill(placed[s]) for s in
                   slot[lin_whole][(heads == item).all(axis=1)].tolist()):
                return False  # (inner chunks left out: rare)
        chunks = shard[start:start + count * nb].reshape(count, nb)
        for j, b in others.items():
            chunks[slot[j]] = np.frombuffer(b, dtype=np.uint8)
        index_out = np.full((n_inner, 2), EMPTY, dtype=np.uint64)
        index_out[present, 0] = start + slot[present] * nb
        index_out[present, 1] = nb
        raw_index = np.frombuffer(layout.encode_index(index_out), dtype=np.uint8)
        if len(raw_index) != layout.index_nbytes:  # pragma: no cover - fixed-size indexes
            return False
        at = count * nb if layout.at_end else 0
        shard[at:at + layout.index_nbytes] = raw_index
        return self.encoded(shard)

    def packed_shard(self, g: int) -> Any:
        """The shard ``g`` holding only this write's inner chunks (all
        :attr:`~zarrfast.engine.chunked.RowWriter.compressible`, on a chain that
        :attr:`~zarrfast.engine.chunked.RowWriter.packs`, no codec after the shard),
        compressed by one kernel call into one buffer in the order the shard stores
        them, its index written after (or before) them: the bytes of
        :meth:`~zarrfast.codecs.shard_format.ShardFormat.assemble`.  A view of this
        thread's shard buffer (the one of :class:`WriteBehind`'s ``turn``) when the
        store copies values, else ``bytes``; ``None`` when every inner chunk is empty."""
        key, rows, layout = self.keys[g], self.groups[g], self.subs[g].layout
        lin = self.inner_lin[rows]
        # (in the order the shard stores its inner chunks: a whole shard's rows of a
        # lexicographic one already are)
        rank = lin if layout.rank is None else layout.rank[lin]
        if (rank[1:] < rank[:-1]).any():
            order = np.argsort(rank, kind="stable")
            rows, lin = rows[order], lin[order]
        start, n_index = layout.data_start, layout.index_nbytes
        buf, sizes = self.writer.compress_packed(
            rows, key, start, 0 if start else n_index,
            which=self.behind.turn if (self.behind is not None
                                       and threading.get_ident() == self.caller) else 0)
        kept = sizes >= 0
        if not kept.any():
            return None
        sizes = sizes[kept]
        ends = np.cumsum(sizes) + start
        index = np.full((layout.n_inner, 2), EMPTY, dtype=np.uint64)
        index[lin[kept], 0] = ends - sizes
        index[lin[kept], 1] = sizes
        raw = np.frombuffer(layout.encode_index(index), dtype=np.uint8)
        end = int(ends[-1])
        if start:
            buf[:n_index] = raw
        else:
            buf[end:end + n_index] = raw
            end += n_index
        return buf[:end] if self.reuse else buf[:end].tobytes()

    def encoded(self, shard: Any) -> Any:
        for c in self.chain.outer_bb:
            shard = c.encode(shard)
        return shard
