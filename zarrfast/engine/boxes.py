"""Small box reads: a step-1 selection touching a few chunks, read in the calling thread.

A random read of a box touching ``k`` chunks should cost about ``k`` decodes and one
copy each.  A box of chunks stored one per file is one kernel call
(``ChunkDecoder.decode_box_files``): which chunks it touches, where each one's part lies
in the decoded chunk and in the output, the files' paths, and the reads, decoding and
placing, without the GIL or a Python object per chunk.  A box of a sharded array whose
shards are files is one call too (``decode_box_shards``, see
:mod:`zarrfast.engine.sharded`), once the shards are open and their indexes known.

Otherwise the chunks a box touches, and where their parts lie, come from one kernel
call (:func:`zarrfast.kernels.box_table`), and zstd, blosc and uncompressed chunks are
decoded (or copied) and placed by one ``nogil`` kernel call per part of the box:
``decode_files`` for chunk files, ``decode_ranges`` for inner chunks of shards that are
open files, ``decode_regions`` for the ranges fetched from other shards (uncompressed
ones: ``copy_regions``).  Nothing per chunk runs in Python unless a chunk is missing
(the fill value) or does not decode (the per-chunk path then says why).

With more than one thread, a box's chunks are shared with the kernels' helper thread
(``share``: a C thread that spins between back-to-back calls, so handing it half a box
costs well under a microsecond where a pool thread's wake-up costs 15-80); with more
than two threads, boxes of large chunks (``BOX_POOL_BYTES``) split the decoding in one
kernel call per thread of the pool instead (:func:`run_parts`).  While the cores are
busy with other work (:func:`~zarrfast.concurrency.cores_contended`: the calling thread
waits for a CPU), a box of up to ``ALONE_BYTES`` is decoded in the calling thread alone
(:func:`alone`): a helper that must wait for a core makes a small read slower, not faster.

Larger step-1 selections of compressed chunk files (full reads) take the same call on
sub-boxes of whole chunk rows, one per task of the pool (:func:`read_box_files`): no
key, path or Python object per chunk there either, which keeps the GIL free for the
other threads.

The chains are passed in (a :class:`~zarrfast.engine.chunked.PreparedChain`): this
module imports no other engine module, so both the plain and the sharded readers
use it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.concurrency import batch_count, cores_contended, map_unordered_into, one_of_many
from zarrfast.engine.selection import BasicSelection
from zarrfast.storage import Store

__all__ = ["ALONE_BYTES", "BOX_CHUNKS", "IO_HELPER", "Box", "SHARD_BOX_BYTES",
           "SHARD_BOX_SPAN", "alone", "box_chunks", "io_share",
           "box_files_fit", "box_parts_fit", "read_box_files", "read_box_parts", "run_parts",
           "share_mode"]

#: the most chunks (inner chunks, when sharded) a box read takes; larger selections
#: take the projection table and the pool
BOX_CHUNKS = 8
#: a sharded array's box read (``shard-box``) takes boxes of more than ``BOX_CHUNKS``
#: inner chunks that span at most ``SHARD_BOX_SPAN`` of them along every dimension (a
#: box one to two inner chunks long per side: up to 27 in 3-d), of at most
#: ``SHARD_BOX_BYTES`` decoded (a store that is not files reads the box's ranges into
#: one buffer first): one kernel call for them all (``decode_box_shards``) took 94 ms
#: per 100 such boxes where the general path's projection took 114 (one thread, zstd
#: 32^3 inner chunks, 27 at most).  Wider selections (slabs, full reads) take the
#: general path, whose pool splits them
SHARD_BOX_SPAN = 3
SHARD_BOX_BYTES = 16 * 2**20
#: the most chunks of one ``decode_box_files`` call on a part of a larger box (the
#: kernel's own limit is 2**16)
BOX_PART_CHUNKS = 2**14
#: the largest chunk a box read takes (each thread's decoder holds a buffer of one
#: chunk; larger chunks take the per-chunk path, which names the chunk when out of
#: memory, and whose decoding dwarfs what the box path saves)
BOX_CHUNK_BYTES = 16 * 2**20


#: the least work (bytes of decoded chunks) a box read splits over the pool's threads:
#: measured with zstd 32^3 uint16 chunks (64 KiB) on 2 cores shared with other work,
#: boxes of 4 to 8 chunks (256-512 KiB) took ~10% longer split over 2 threads of the
#: pool than in the calling thread (the handoffs cost 10-80 us each there); chunks
#: this large decode for ~0.5 ms, well above a handoff.  Smaller boxes share their
#: chunks with the helper thread instead, and so do all boxes with two threads (the
#: helper is a second thread; it took blosc 64^3 boxes, 512 KiB to 4 MiB of decoded
#: chunks each, in 40 ms per 100 where the pool took 54).
BOX_POOL_BYTES = 2**20
#: the most work (bytes of decoded chunks) that runs in the calling thread alone when
#: the cores are busy with other work (:func:`~zarrfast.concurrency.cores_contended`):
#: boxes one to two chunks long per side took 2-3x longer shared with the helper thread
#: than alone, on 2 cores that other processes kept busy (load average 5-6; 100 boxes,
#: best of 5, one process taking turns: zstd 32^3 chunks 201 ms shared against 89 ms
#: alone, sharded 116 against 47, blosc 64^3 223 against 92), as the helper waits for a
#: core, spins on one between reads, and the caller waits for its last chunk.  Larger
#: reads share their chunks whatever the load: a helper that falls behind costs them
#: one chunk of many.
ALONE_BYTES = 16 * 2**20
#: ``share`` for the kernels (:func:`io_share`): with one thread, the kernels' helper
#: thread reads the files of a box's chunks ahead of the calling thread, which decodes
#: and places every chunk -- the reads' system calls and copies (a fifth of a box's
#: time, zstd 32^3 chunks) overlap the decoding, as tensorstore's I/O thread overlaps
#: them at ``file_io_concurrency`` 1.  The helper holds memory of its own: the calling
#: thread never waits for it, and reads any chunk the helper has not reached itself
IO_HELPER = -1
#: the most chunks of a box read (``read_box_parts``) that takes ``IO_HELPER`` (a full
#: read at one thread is read as before)
BOX_IO_CHUNKS = 64


def alone(n: int, chain: Any) -> bool:
    """Whether a read of ``n`` chunks of ``chain`` runs in the calling thread alone
    (``ALONE_BYTES``): because the cores are busy, or because it is one of several
    reads started at the same time, each on a thread of its own
    (:func:`~zarrfast.concurrency.one_of_many`: their threads keep the cores busy; a
    helper shared with one of them only spins between its jobs)."""
    return n * chain.chunk_nbytes <= ALONE_BYTES and (one_of_many() or cores_contended())


def share_mode(n: int, chain: Any, threads: int) -> bool | None:
    """How ``n`` chunks of ``chain`` are decoded: in the calling thread, ``False``
    (one thread, uncompressed chunks, or a small read while the cores are busy with
    other work, :func:`alone`); shared with the kernels' helper thread, ``True`` (two
    threads, or less than ``BOX_POOL_BYTES`` of decoded chunks); else ``None``: one
    kernel call per thread of the pool (:func:`run_parts`)."""
    threads = min(threads, n)
    if threads <= 1 or chain.batch_codec is None or alone(n, chain):
        return False
    if threads == 2 or n * chain.chunk_nbytes < BOX_POOL_BYTES:
        return True
    return None


def io_share(n: int, chain: Any, threads: int) -> int | None:
    """:func:`share_mode`, but a box read of several compressed chunks at one thread
    takes the kernels' helper thread for its reads alone (``IO_HELPER``), unless the
    cores are busy with other work (:func:`alone`)."""
    if threads <= 1 and 1 < n <= BOX_IO_CHUNKS and chain.batch_codec is not None:
        return 0 if alone(n, chain) else IO_HELPER
    return share_mode(n, chain, threads)


def run_parts(fn: Callable[[range, Any], None], n: int, chain: Any, threads: int) -> None:
    """``fn(range(n), share)`` for ``n`` chunks of ``chain``, as :func:`share_mode`
    says: one call (``share`` its answer), or, for ``None``, on ``threads`` parts of
    ``range(n)`` (one kernel call each, ``share`` False), the first in the calling
    thread."""
    share = share_mode(n, chain, threads)
    if share is not None:
        fn(range(n), share)
        return
    threads = min(threads, n)
    map_unordered_into(lambda part: fn(part, False),
                       [range(i * n // threads, (i + 1) * n // threads)
                        for i in range(threads)], work_bytes=n * chain.chunk_nbytes,
                       threads=threads)


def box_chunks(sel: BasicSelection, chain: Any) -> int:
    """How many chunks of ``chain`` the step-1 selection ``sel`` touches; 0 when it is
    not a non-empty step-1 selection, or the chunks are larger than
    ``BOX_CHUNK_BYTES``."""
    if chain.chunk_nbytes > BOX_CHUNK_BYTES:
        return 0
    chunk_shape = chain.chunk_shape
    n = 1
    for s, m, t, c in zip(sel.start.tolist(), sel.count.tolist(), sel.step.tolist(),
                          chunk_shape, strict=True):
        if t != 1 or m < 1:
            return 0
        n *= (s + m - 1) // c - s // c + 1
    return n


class Box:
    """A box's table (see :func:`zarrfast.kernels.box_table`) and its output."""

    __slots__ = ("_placement", "bounds", "chain", "direct", "dst_offsets", "inner",
                 "out_flat", "out_strides", "shapes", "shards", "src_offsets")

    def __init__(self, chain: Any, sel: BasicSelection, out: np.ndarray,
                 cps: np.ndarray) -> None:
        self.chain = chain
        self.out_flat = out.reshape(-1).view(np.uint8)
        self.out_strides = np.array(out.strides, dtype=np.int64)
        (self.shards, self.bounds, self.inner, self.src_offsets, self.dst_offsets,
         self.shapes) = _kernels.box_table(sel.start, sel.count, chain.chunk_shape_arr, cps,
                                           chain.chunk_strides, self.out_strides)
        #: rows whose chunk is decoded straight into ``out`` (uint8 flags)
        self.direct = _direct_rows(chain, sel, self.shapes, out.shape)
        self._placement: _kernels.Placement | None = None

    @classmethod
    def within(cls, chain: Any, start: np.ndarray, count: np.ndarray, out_flat: np.ndarray,
               out_strides: np.ndarray, base: int) -> Box:
        """The box ``start``/``count`` (step 1) of a larger box whose output is
        ``out_flat`` (strides ``out_strides``), its first element at byte ``base``: for
        :meth:`fill` and :meth:`place_one` (no rows are decoded straight into place)."""
        box = cls.__new__(cls)
        box.chain, box.out_flat, box.out_strides = chain, out_flat, out_strides
        (box.shards, box.bounds, box.inner, box.src_offsets, box.dst_offsets,
         box.shapes) = _kernels.box_table(start, count, chain.chunk_shape_arr,
                                          _ONES[chain.ndim], chain.chunk_strides, out_strides)
        box.dst_offsets += base
        box.direct = np.zeros(len(box.shapes), dtype=np.uint8)
        box._placement = None
        return box

    def placement(self) -> Any:
        """Where each row's chunk goes, checked once (``kernels.Placement``, made on
        first use; the calls of a read take parts of it)."""
        if self._placement is None:
            chain = self.chain
            self._placement = _kernels.Placement(
                chain.chunk_nbytes, self.src_offsets, chain.chunk_strides, self.out_flat,
                self.dst_offsets, self.out_strides, self.shapes, chain.itemsize,
                chain.swap_unit, self.direct)
        return self._placement

    def fill(self, rows: Sequence[int]) -> None:
        """Rows whose chunk is not stored: the fill value."""
        chain = self.chain
        for r in rows:
            _kernels.fill_region(self.out_flat, int(self.dst_offsets[r]), self.out_strides,
                                 self.shapes[r], chain._fill_native_arr)

    def place_one(self, r: int, raw: Any, key: str) -> None:
        """Decode row ``r``'s stored chunk ``raw`` (``None``: the fill value) the
        per-chunk way, which raises naming ``key`` when it cannot."""
        if raw is None:
            self.fill([r])
            return
        chain = self.chain
        buf = chain.decode(raw, key)
        _kernels.copy_region(buf, int(self.src_offsets[r]), chain.chunk_strides,
                             self.out_flat, int(self.dst_offsets[r]), self.out_strides,
                             self.shapes[r], chain.itemsize, chain.swap_unit)

    def place_stored(self, rows: np.ndarray, src: Any, offsets: np.ndarray,
                     sizes: np.ndarray, share: bool = False) -> list[int]:
        """Place the chunks of ``rows``, stored at ``offsets`` (``sizes`` bytes) in
        ``src``: one kernel call (``share``: shared with the kernels' helper thread).
        Returns the positions in ``rows`` it did not place (stored chunks that do not
        decode cleanly, uncompressed ones of the wrong size, every chunk of a codec
        without a batch kernel): the caller gives them to :meth:`place_one`, which
        decodes them or says why not."""
        chain = self.chain
        if not isinstance(src, np.ndarray):
            src = np.frombuffer(src, dtype=np.uint8)
        if chain.batch_codec is not None:
            status = chain.batch_decoder().decode_regions(
                src, offsets, sizes, self.placement().take(rows), share=share)
            # (count_nonzero: a C call; ndarray.any goes through Python for small arrays)
            return np.flatnonzero(status).tolist() if np.count_nonzero(status) else []
        if not (chain.fast and not chain.bb):
            return list(range(len(rows)))  # other codecs: one by one
        # uncompressed: the stored bytes are the chunk
        ok = sizes == chain.chunk_nbytes
        _kernels.copy_regions(src, offsets[ok] + self.src_offsets[rows[ok]],
                              chain.chunk_strides, self.out_flat, self.dst_offsets[rows[ok]],
                              self.out_strides, self.shapes[rows[ok]], chain.itemsize,
                              chain.swap_unit)
        return np.flatnonzero(~ok).tolist()


def _direct_rows(chain: Any, sel: BasicSelection, shapes: np.ndarray,
                 out_shape: tuple[int, ...]) -> np.ndarray:
    """Rows whose chunk can be decoded straight into the output: the chunk's bytes need
    no swap or permutation, the box covers the whole nominal chunk, and its place in
    the (C-order) output is one contiguous block."""
    cs = chain.chunk_shape
    none = np.zeros(len(shapes), dtype=np.uint8)
    # (a box smaller than a chunk, as random boxes are, stops here)
    for n, c in zip(sel.count.tolist(), cs, strict=True):
        if n < c:
            return none
    if not (chain.fast and chain.swap_unit == 1
            and chain.permutation == tuple(range(chain.ndim))):
        return none
    # a whole chunk's block of the C-order output is contiguous when every dimension
    # after the first one longer than 1 spans the whole output
    first = next((d for d in range(len(cs)) if cs[d] > 1), len(cs))
    if any(cs[d] != out_shape[d] for d in range(first + 1, len(cs))):
        return none
    return np.all(shapes == chain.chunk_shape_arr, axis=1).astype(np.uint8)


def box_files_fit(plan: Any, n: int) -> tuple | None:
    """How :func:`read_box_files` reads a box of ``n`` (at most ``BOX_CHUNKS``) zstd,
    blosc or uncompressed chunks of ``plan`` stored one per file: ``(share, where)``,
    the helper threads' share and the files' root and the keys' prefix for one
    ``decode_box_files`` call; or ``(box, keys, files)`` for ``decode_files`` calls
    (one per thread of the pool); ``None`` when the store does not let
    kernels read those files (asked now, for these keys), or the box is one whole
    uncompressed chunk (the single-chunk way reads that straight into the output)."""
    chain, sel = plan.chain, plan.sel
    if n == 1 and chain.batch_codec is None and sel.count.tolist() == list(chain.chunk_shape):
        return None
    share = io_share(n, chain, plan.options.threads)
    if share is not None:
        where = _file_prefix(plan.store, plan.path, chain)
        return None if where is None else (share, where)
    box = Box(chain, sel, plan.out, _ONES[chain.ndim])
    keys = _chunk_keys(chain.metadata, plan.path, box.shards)
    files = plan.store.file_paths(keys)
    return None if files is None else (box, keys, files)


def read_box_files(plan: Any, n: int, how: tuple) -> None:
    """Read a box of ``n`` zstd, blosc or uncompressed chunks stored one per file into
    ``out`` (``how``: :func:`box_files_fit`'s answer): one ``decode_box_files`` call
    (table, paths, open, read, decode, place, without the GIL), or with more than two
    threads one ``decode_files`` call per part (:func:`run_parts`).  A chunk the kernel
    did not place is the fill value (missing) or taken by the per-chunk path."""
    store, path, chain, sel, out = plan.store, plan.path, plan.chain, plan.sel, plan.out
    if len(how) == 2:
        share, (root, prefix, sep) = how
        out_strides = np.array(out.strides, dtype=np.int64)
        # the table, the paths, the reads and the decoding: one kernel call
        placement = _kernels.Placement.box(
            chain.chunk_nbytes, sel.start, sel.count, chain.chunk_shape_arr,
            chain.chunk_strides, out.reshape(-1).view(np.uint8), out_strides,
            chain.itemsize, chain.swap_unit, direct=chain.box_direct)
        status = chain.batch_decoder().decode_box_files(root, prefix, sep, placement, share)
        if status is not None:
            box = Box(chain, sel, out, _ONES[chain.ndim])
            keys = _chunk_keys(chain.metadata, path, box.shards)
            _recover(store, chain, box, keys, range(n), status)
        return
    box, keys, (root, paths) = how
    placement = box.placement()  # (checked once; each part takes its rows)

    def place(part: range, share: int) -> None:
        status, _sizes, _errors = chain.batch_decoder().decode_files(
            paths[part.start:part.stop], placement.part(part.start, part.stop), root=root,
            share=share)
        if np.count_nonzero(status):
            _recover(store, chain, box, keys, part, status)

    # (every part writes disjoint regions of `out`: chunks partition the box)
    run_parts(place, n, chain, plan.options.threads)


def box_parts_fit(plan: Any) -> bool:
    """Whether :func:`read_box_parts` reads ``plan``: its output is C-contiguous and
    kernels may make its chunks' paths."""
    return (plan.out.flags.c_contiguous
            and _file_prefix(plan.store, plan.path, plan.chain) is not None)


def read_box_parts(plan: Any, n: int) -> None:
    """Read a step-1 box of ``n`` (more than ``BOX_CHUNKS``) chunks stored one per file
    into ``out`` (C-contiguous, :func:`box_parts_fit`): one ``decode_box_files`` call,
    whose chunks the kernels' helper threads share (``threads`` - 1 of them); a box of more than
    ``BOX_PART_CHUNKS`` chunks in sub-boxes of whole chunk rows (:func:`box_parts`), one
    call each, as many as the pool runs tasks.  Uncompressed chunks too: a full read of
    4225 files of 8 KiB took 18-21 ms at two threads, 33-34 ms at one (medians), where
    the per-row path took 37-44 and 58-61 ms; 4000 files of 64 KiB 42 ms and 80 ms,
    against 110 and 188 ms."""
    store, path, chain, sel, out = plan.store, plan.path, plan.chain, plan.sel, plan.out
    threads = plan.options.threads
    where = _file_prefix(store, path, chain)
    assert where is not None  # (box_parts_fit)
    root, prefix, sep = where
    work = n * chain.chunk_nbytes
    out_flat = out.reshape(-1).view(np.uint8)
    out_strides = np.array(out.strides, dtype=np.int64)
    # With more threads, a box the kernel takes in one call is one call: the kernels'
    # helper threads (``threads - 1`` of them) share its chunks, so the read holds the
    # GIL for one call however many threads decode it (one call per part on the pool
    # held it for each: 4 per thread)
    helpers = threads - 1 if n <= BOX_PART_CHUNKS else 0
    # (a box while the cores are busy with other work: one call, in this thread alone)
    solo = helpers > 0 and alone(n, chain)
    if solo:
        helpers = 0
    elif threads <= 1 and io_share(n, chain, threads) == IO_HELPER:
        # (a box at one thread: one call, the helper thread reads its files)
        helpers, solo = IO_HELPER, True
    parts = box_parts(sel, chain.chunk_shape, out_strides,
                      1 if helpers > 0 or solo
                      else max(batch_count(n, work, threads=threads), -(-n // BOX_PART_CHUNKS)))

    def read(part: tuple[np.ndarray, np.ndarray, int], share: int = 0) -> None:
        start, count, base = part
        placement = _kernels.Placement.box(
            chain.chunk_nbytes, start, count, chain.chunk_shape_arr, chain.chunk_strides,
            out_flat[base:], out_strides, chain.itemsize, chain.swap_unit,
            direct=chain.box_direct)
        status = chain.batch_decoder().decode_box_files(root, prefix, sep, placement, share)
        if status is not None:
            box = Box.within(chain, start, count, out_flat, out_strides, base)
            keys = _chunk_keys(chain.metadata, path, box.shards)
            _recover(store, chain, box, keys, range(len(keys)), status)

    if helpers != 0 or solo:
        read(parts[0], helpers)
        return
    # (the parts partition the box: each writes its own region of `out`)
    map_unordered_into(read, parts, work_bytes=work, threads=threads)


def box_parts(sel: BasicSelection, chunk_shape: Sequence[int], out_strides: np.ndarray,
              parts: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """The step-1 box ``sel`` cut into about ``parts`` sub-boxes of whole chunk rows (at
    least one, at most as many as it has chunks): the outermost dimensions are cut at
    every chunk boundary until they make ``parts`` rows, the last of them into groups of
    rows.  Each is ``(start, count, base)``: its selection and the byte offset of its
    first element in the box's C-order output (strides ``out_strides``)."""
    if parts <= 1:
        # (the whole box: what the cutting below gives for one part, without it -- a
        # box read at one thread, or beside other work, is one part, and the cutting
        # took ~25 us of the ~45 us of Python a 27-chunk box cost)
        return [(sel.start.astype(np.int64), sel.count.astype(np.int64), 0)]
    start, count = sel.start.tolist(), sel.count.tolist()
    first = [s // c for s, c in zip(start, chunk_shape, strict=True)]
    rows = [(s + m - 1) // c - f + 1
            for s, m, c, f in zip(start, count, chunk_shape, first, strict=True)]
    d, made = 0, rows[0]
    while made < parts and d + 1 < len(rows):
        d += 1
        made *= rows[d]
    groups = min(rows[d], -(-parts * rows[d] // made))
    strides = out_strides.tolist()
    result = []
    for outer in itertools.product(*(range(k) for k in rows[:d])):
        for g in range(groups):
            span = [(i, i + 1) for i in outer]
            span.append((g * rows[d] // groups, (g + 1) * rows[d] // groups))
            ps, pc = list(start), list(count)
            for dim, (i0, i1) in enumerate(span):
                c = chunk_shape[dim]
                lo = max(start[dim], (first[dim] + i0) * c)
                hi = min(start[dim] + count[dim], (first[dim] + i1) * c)
                ps[dim], pc[dim] = lo, hi - lo
            base = sum((p - s) * t for p, s, t in zip(ps, start, strides, strict=True))
            result.append((np.array(ps, dtype=np.int64), np.array(pc, dtype=np.int64), base))
    return result


def _recover(store: Store, chain: Any, box: Box, keys: Sequence[str], part: range,
             status: np.ndarray) -> None:
    """The rows of ``part`` (``status``: theirs) a kernel did not place: a missing
    chunk is the fill value; any other is read again by the store, which raises for a
    file it cannot read, and decoded (or refused, naming the key)."""
    for j in np.flatnonzero(status).tolist():
        r = part.start + j
        raw = (None if status[j] == _kernels.NO_DATA
               else store.get_limited(keys[r], chain.stored_limit))
        box.place_one(r, raw, keys[r])


def _file_prefix(store: Store, path: str, chain: Any) -> tuple[bytes, bytes, bytes] | None:
    """The root directory of ``store``'s files, and the prefix and separator of the
    chunk keys of the array at ``path`` (file-system encoded), for kernels that make
    the chunks' paths themselves; ``None`` when the kernels may not read the store's
    files.  Kept on ``chain`` for its last store and path."""
    last = chain.box_files_prefix
    if last is not None and last[0] is store and last[1] == path:
        return last[2]
    where = None
    if chain.ndim:  # (a 0-d array's one chunk takes the single-chunk path)
        cke = chain.metadata.chunk_key_encoding
        base = (f"{path}/" if path else "") + cke.key_prefix()
        # (a key of the array checks the prefix: the digits and separators added to
        # it make no segment that a key may not have)
        sample = base + cke.separator.join(["0"] * chain.ndim)
        files = store.file_paths([sample])
        # (only a store whose files are named as their keys: the kernel makes the names)
        if files is not None and files[1] == [os.fsencode(sample)]:
            where = (files[0], os.fsencode(base), os.fsencode(cke.separator))
    chain.box_files_prefix = (store, path, where)
    return where


def _chunk_keys(metadata: Any, path: str, coords: np.ndarray) -> list[str]:
    cke = metadata.chunk_key_encoding
    base = f"{path}/" if path else ""
    if coords.shape[1] == 0:
        return [base + cke.encode(())] * coords.shape[0]
    return _kernels.format_chunk_keys(coords, base + cke.key_prefix(), cke.separator)


#: chunks per shard of a plain grid: every chunk its own
_ONES = [np.ones(d, dtype=np.int64) for d in range(65)]
