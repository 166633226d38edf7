"""Many basic selections of one array, read as one: :func:`read_many`.

A data loader asks for a batch of tiles, an analysis for the same window at many
times.  Read one by one, each selection is a call into the engine of its own: its
chunks fetched, its shards' indexes read, its pool tasks started and waited for.  Read
together, the selections are planned as one read:

1. each selection is projected onto the grid of chunks (inner chunks of a sharded
   array) and the projections are concatenated into one table;
2. selections whose results differ at most in their first dimension (and that have the
   same steps) share one output buffer, their results one after another along its first
   axis (results are views of it: a batch of one shape is one ``(n, *shape)`` block), so
   that one row strategy, or one :class:`~zarrfast.engine.shard_read.ShardRowsRead`,
   reads all of their chunks: every shard is visited once, its index read once, the byte
   ranges of its inner chunks coalesced across selections, the decoding spread over the
   pool across selections;
3. a chunk several selections touch is read and decoded once, into a buffer of whole
   chunks, then its parts are copied into each result by one ``copy_regions`` call.

Selections of other shapes (and the chunks they share) are further reads of the same
batch: on remote stores they run at the same time, a shard's index read once for all.

Chains other than regular and sharded ones (rectilinear grids, variable-length
strings) are read one selection at a time.
"""

from __future__ import annotations

import copy
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.concurrency import _GrowingPool, running_one_of_many
from zarrfast.engine.chunked import _PROBE_FLAGS, Projection, RowReader, chunk_keys
from zarrfast.engine.plan import Plan
from zarrfast.engine.selection import BasicSelection, normalize_basic
from zarrfast.engine.shard_read import ShardRowsRead
from zarrfast.engine.sharded import group_by_shard
from zarrfast.engine.strategies import READ_ROWS, choose_rows, out_problem, read_basic
from zarrfast.errors import IndexingError, ZarrfastError
from zarrfast.kernels import buffers as _buffers
from zarrfast.storage import Store, StoreCapabilities

__all__ = ["at_once", "first_file_cold", "project_boxes", "read_many"]

T = TypeVar("T")

#: the chain kinds whose selections are planned together
PLANNED_KINDS = ("regular", "sharded")


#: the threads of :func:`at_once` (kept: starting 50 threads for each call of 50 reads
#: cost 4-5 ms); not the engine's pools, whose threads run nested work inline
_at_once_pool = _GrowingPool("zarrfast-at-once")
if hasattr(os, "register_at_fork"):  # (a forked child has none of the parent's threads)
    os.register_at_fork(after_in_child=_at_once_pool.reset)


def at_once(fn: Callable[[T], None], items: Sequence[T], limit: int) -> None:
    """``fn(item)`` for every item, up to ``limit`` of them at a time (the calling
    thread one of them), on threads that are not the engine's pools': for reads that
    each have requests in flight (reads of remote stores) and that should run at the
    same time.  Run on a pool's thread, a read's own fetches would run inline, one after
    another (a pool thread must not wait for work queued behind it on a pool:
    :func:`~zarrfast.concurrency.map_io_then`), so each read would wait out its round
    trips one by one; here every read fetches as it does when called alone.  Every
    call has finished when this returns; the first error (in order of the items; an
    interrupt before any) is then raised, and items not yet started are not started."""
    items = list(items)
    if len(items) <= 1 or limit <= 1:
        for item in items:
            fn(item)
        return
    errors: list[tuple[int, BaseException]] = []
    queue = iter(enumerate(items))
    lock = threading.Lock()

    def work() -> None:
        # (each read on a thread of its own: the reads are the parallelism, so a small
        # one decodes in its thread alone, without the kernels' helper: see
        # :func:`~zarrfast.concurrency.one_of_many`)
        with running_one_of_many():
            while True:
                with lock:
                    if errors:
                        return
                    nxt = next(queue, None)
                if nxt is None:
                    return
                try:
                    fn(nxt[1])
                except BaseException as e:  # (re-raised in the calling thread)
                    with lock:
                        errors.append((nxt[0], e))

    helpers = min(limit, len(items)) - 1
    if threading.current_thread().name.startswith(_at_once_pool.prefix):
        # (called from one of the kept threads: new threads, never a wait for work
        # queued behind this thread on its own pool)
        others = [threading.Thread(target=work, daemon=True) for _ in range(helpers)]
        for t in others:
            t.start()
        try:
            work()
        finally:
            for t in others:
                t.join()
    else:
        pool = _at_once_pool.get(helpers)
        futures = [pool.submit(work) for _ in range(helpers)]
        try:
            work()
        finally:
            # (a helper still queued behind other callers' work has nothing left to do)
            for f in futures:
                f.cancel()
            wait(futures)
    if errors:  # (an interrupt first)
        raise min(errors, key=lambda x: (isinstance(x[1], Exception), x[0]))[1]


def first_file_cold(store: Store, path: str, metadata: Any, selection: Any) -> bool:
    """Whether the file of the first chunk (or shard) that basic ``selection`` of an
    array (``metadata``, its chunks under ``path``) touches is out of the page cache: a
    one-byte read of it with ``RWF_NOWAIT`` would wait for the disk.  ``False`` when it
    is cached, when the store does not keep its values in files, or when it cannot say
    (no ``RWF_NOWAIT``, a rectilinear grid, a selection the read will refuse, a missing
    file).  A probe costs an ``open``, a ``preadv`` and a ``close``: ``zarrfast.get_many``
    of arrays on stores of their own reads them all at the same time when the first is
    cold (the disk then has every array's files in flight), without reading the first
    one alone to learn it."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None or not hasattr(os, "preadv") or not store.capabilities.files:
        return False
    try:
        sel = normalize_basic(selection, tuple(metadata.shape))
        grid = np.asarray(metadata.chunks, dtype=np.int64)
    except (NotImplementedError, ZarrfastError):
        return False
    if not sel.count.all() or len(grid) != len(sel.start):
        return False
    coords = (sel.start // np.maximum(grid, 1)).reshape(1, -1)
    files = store.file_paths(chunk_keys(metadata, path, coords))
    if files is None:
        return False
    try:
        fd = os.open(os.path.join(files[0], files[1][0]), _PROBE_FLAGS)
    except OSError:
        return False  # (missing, a link: the read says what it is)
    try:
        os.preadv(fd, [bytearray(1)], 0, nowait)
    except BlockingIOError:
        return True
    except OSError:
        return False  # (RWF_NOWAIT refused by this file system)
    finally:
        os.close(fd)
    return False


def project_boxes(chunk_shape: np.ndarray, start: np.ndarray, count: np.ndarray
                  ) -> tuple[np.ndarray, ...]:
    """The projections of many step-1 boxes (row ``i`` of ``start`` and ``count``: box
    ``i``, inside the array) onto a grid of ``chunk_shape`` chunks, as one table: the
    rows of box 0 (its chunks in C order), then of box 1...  What
    :func:`~zarrfast.kernels.project` gives each box, concatenated: (rows per box,
    coords, local_start, local_count, out_start)."""
    n, ndim = start.shape
    cs = chunk_shape.reshape(1, ndim)
    first = start // cs
    # (a box with nothing selected along some dimension touches no chunk)
    segs = np.where(count > 0, (start + count - 1) // cs - first + 1, 0)
    if (segs == 1).all():
        # (every box inside one chunk, as a loader's tiles of one-sample chunks are:
        # a row per box, without the walk over each box's chunks below)
        return (np.ones(n, dtype=np.int64), first, start - first * cs, count.copy(),
                np.zeros_like(start))
    nrows = segs.prod(axis=1)
    box = np.repeat(np.arange(n, dtype=np.int64), nrows)
    # each row's place among its box's rows, then its chunk along each dimension (the
    # last dimension fastest)
    rest = np.arange(int(nrows.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(nrows) - nrows, nrows)
    coords = np.empty((len(box), ndim), dtype=np.int64)
    for d in range(ndim - 1, -1, -1):
        rest, along = np.divmod(rest, segs[box, d])
        coords[:, d] = first[box, d] + along
    lo = coords * cs
    a = np.maximum(start[box], lo)
    b = np.minimum((start + count)[box], lo + cs)
    return nrows, coords, a - lo, b - a, a - start[box]


def _grid_chain(chain: Any) -> Any:
    """The chain of the chunks a selection is projected onto: the inner chunks of a
    sharded array, else the array's."""
    return chain.inner if chain.kind == "sharded" else chain


def _check_out(out: Any, sel: BasicSelection, dtype: np.dtype, i: int) -> np.ndarray:
    problem = out_problem(out, sel.out_shape, dtype)
    if problem:
        raise IndexingError(
            f"out[{i}] must be a writeable C-contiguous ndarray of shape {sel.out_shape} "
            f"and dtype {dtype}, got {problem}")
    return out


def read_many(store: Store, caps: StoreCapabilities, path: str, chain: Any,
              selections: Sequence[Any], shape: tuple[int, ...], dtype: np.dtype,
              out: Any, where: str, numbers: Sequence[int] | None = None,
              paths: Sequence[str] | None = None) -> list[np.ndarray]:
    """Read the basic ``selections`` of an array (``where``: its name, for messages)
    as one read (see the module docstring); one array per selection, of its shape.

    ``out``: ``None``; a sequence of arrays, one per selection (each a writeable
    C-contiguous array of that selection's shape and ``dtype``), filled and returned;
    or one such array of shape ``(len(selections), *shape)`` when every selection's
    result has that shape, its ``i``-th element filled by selection ``i`` (the results
    are views of it).  ``numbers``: what the messages call the selections (their
    positions in the caller's list; default: their positions here).  ``paths``: per
    selection, the path of the array it reads (default: ``path``): arrays of one store
    and one layout (``chain``, ``shape`` and ``dtype`` theirs) are read as one batch.
    A selection may be given normalized (a ``BasicSelection``)."""
    sels = []
    for i, s in enumerate(selections):
        if isinstance(s, BasicSelection):
            sels.append(s)
            continue
        try:
            sels.append(normalize_basic(s, shape))
        except IndexingError as e:  # (BoundsCheckError is one too)
            raise type(e)(f"{where}: selection {i if numbers is None else numbers[i]} "
                          f"({s!r}): {e}") from None
    n = len(sels)
    outs: list[np.ndarray | None] = [None] * n
    if out is not None:
        if isinstance(out, np.ndarray):
            shapes = {s.out_shape for s in sels}
            if n and (len(shapes) != 1 or out.shape != (n, *sels[0].out_shape)):
                need = (f"an out of shape {(n, *next(iter(shapes)))}" if len(shapes) == 1
                        else f"a list of {n} arrays (their results' shapes differ: "
                             f"{sorted(shapes)})")
                raise IndexingError(
                    f"{where}: out of shape {out.shape} does not hold the results of "
                    f"{n} selections: they need {need}")
            problem = out_problem(out, out.shape, dtype) if n else ""
            if problem:
                raise IndexingError(
                    f"{where}: out must be a writeable C-contiguous ndarray of dtype "
                    f"{dtype}, got {problem}")
            outs = [out[i, ...] for i in range(n)]  # (views, 0-d ones too)
        else:
            given = list(out)
            if len(given) != n:
                raise IndexingError(f"{where}: out has {len(given)} arrays for {n} "
                                    f"selections")
            outs = [_check_out(o, s, dtype, i if numbers is None else numbers[i])
                    for i, (s, o) in enumerate(zip(sels, given, strict=True))]
    paths = [path] * n if paths is None else list(paths)
    if chain.kind not in PLANNED_KINDS or not shape or n < 2:
        # (normalized already: read as they are)
        return [read_basic(store, caps, paths[i], chain, sels[i], shape, dtype, outs[i],
                           where) for i in range(n)]
    return _Batch(store, caps, paths, chain, sels, dtype, outs, where,
                  stacked=out if isinstance(out, np.ndarray) else None).run()


def _index_memo_chain(chain: Any) -> Any:
    """A copy of the sharded ``chain`` (made for one batch) that keeps the shard indexes
    it reads on a store without version tokens (a remote one) for its life: the batch's
    reads take each from the first that read it.  Where the store gives versions, the
    chain's own cache answers, checking each read's version (a shard rewritten between
    two reads of the batch is read at its new index)."""
    batch_chain = copy.copy(chain)
    #: per shard key: [done, index, error]; the first reader of a shard reads its index,
    #: the batch's other reads of it (in other threads) wait for it
    memo: dict[str, list[Any]] = {}
    lock = threading.Lock()
    read_index = chain._index

    def _index(token: Any, key: str, read: Any, size: int | None = None) -> Any:
        if token is not None:
            return read_index(token, key, read, size)
        with lock:
            entry = memo.get(key)
            first = entry is None
            if first:
                entry = memo[key] = [threading.Event(), None, None]
        assert entry is not None
        if not first:
            entry[0].wait()
            if entry[2] is not None:
                raise entry[2]
            return entry[1]
        try:
            entry[1] = read_index(token, key, read, size)
        except BaseException as e:
            entry[2] = e
            raise
        finally:
            entry[0].set()
        return entry[1]

    batch_chain._index = _index
    return batch_chain


@dataclass(slots=True)
class _Concat:
    """The rows of every selection of a batch, one table: per row, its chunk, its part
    of it, where that goes (in its group's output), its selection's step and its
    array (an index into the batch's paths)."""

    coords: np.ndarray
    local_start: np.ndarray
    local_count: np.ndarray
    out_start: np.ndarray
    step: np.ndarray
    path_ids: np.ndarray


class _Rows(Projection):
    """A projection made of rows of several selections (of several arrays of one
    layout): ``path_ids``, each row's array (an index into the batch's paths)."""

    path_ids: np.ndarray


class _Batch:
    """One :func:`read_many` of a regular or sharded chain."""

    def __init__(self, store: Store, caps: StoreCapabilities, paths: list[str], chain: Any,
                 sels: list[BasicSelection], dtype: np.dtype, outs: list, where: str,
                 stacked: np.ndarray | None) -> None:
        self.store, self.caps, self.chain = store, caps, chain
        #: the arrays' paths, and each selection's (an index into them)
        self.paths = list(dict.fromkeys(paths))
        ids = {p: k for k, p in enumerate(self.paths)}
        self.path_of = np.array([ids[p] for p in paths], dtype=np.int64)
        self.sels, self.dtype, self.outs, self.where = sels, dtype, outs, where
        self.stacked = stacked
        if chain.kind == "sharded":
            # the reads of this batch (of the shared chunks, then of each shape of
            # result) take a shard's index from the first that read it: read once, on
            # stores whose values have no version (a remote store's), where the chain's
            # own cache cannot keep it
            chain = self.chain = _index_memo_chain(chain)
        self.grid = _grid_chain(chain)
        self.array_shape = tuple(chain.metadata.shape)
        # every selection's start, step and count: one table (n, 3, ndim), one call
        table = np.concatenate([a for s in sels for a in (s.start, s.step, s.count)]
                               ).reshape(len(sels), 3, -1)
        self.starts, self.steps, self.counts = table[:, 0], table[:, 1], table[:, 2]
        #: the boxes of the shared chunks (see :meth:`_whole_table`)
        self.box_start: np.ndarray = np.zeros((0, 0), dtype=np.int64)
        self.box_row: np.ndarray = np.zeros(0, dtype=np.int64)

    def _concat(self) -> tuple[_Concat, np.ndarray]:
        """Every selection's rows in one table (a few NumPy calls per batch, none per
        selection from there on), and each row's selection."""
        sels, grid = self.sels, self.grid
        steps, counts = self.steps, self.counts
        if (steps == 1).all():
            # (step-1 boxes, a data loader's tiles: projected together, a few NumPy
            # calls for the batch instead of a projection per selection)
            nrows, coords, local_start, local_count, out_start = project_boxes(
                grid.chunk_shape_arr, self.starts, counts)
        else:
            projs = [Projection(self.array_shape, grid, s) for s in sels]
            nrows = np.array([p.nrows for p in projs], dtype=np.int64)
            coords = np.concatenate([p.coords for p in projs])
            local_start = np.concatenate([p.local_start for p in projs])
            local_count = np.concatenate([p.local_count for p in projs])
            out_start = np.concatenate([p.out_start for p in projs])
        sel_of = np.repeat(np.arange(len(sels), dtype=np.int64), nrows)
        return _Concat(coords=coords, local_start=local_start, local_count=local_count,
                       out_start=out_start, step=steps[sel_of],
                       path_ids=self.path_of[sel_of]), sel_of

    def run(self) -> list[np.ndarray]:
        sels = self.sels
        n = len(sels)
        t, sel_of = self._concat()  # (sel_of: each row's selection)
        # selections whose results differ at most in their first dimension (and of one
        # step): one output, the results one after another along its first axis
        fulls = [s.full_shape for s in sels]
        tall = self.counts[:, 0]
        groups = self._groups(fulls)
        group_of = np.empty(n, dtype=np.int64)  # each selection's group
        row0 = np.empty(n, dtype=np.int64)  # where its result begins in the group's output
        for g, members in enumerate(groups.values()):
            group_of[members] = g
            row0[members] = np.cumsum(tall[members]) - tall[members]
        # (a row's place in its group's output)
        t.out_start[:, 0] += row0[sel_of]
        row_group = group_of[sel_of]
        # the chunks touched by more than one selection: read once, into `whole` (a
        # chunk is its array's path and its grid coordinates)
        shared = np.zeros(len(sel_of), dtype=np.bool_)
        slot = np.full(len(sel_of), -1, dtype=np.int64)
        reads: list[tuple[_Rows, np.ndarray]] = []
        whole = None
        if len(sel_of) and not self._all_distinct(t):
            key = np.column_stack((t.path_ids, t.coords))
            uniq, inverse, counts = np.unique(key, axis=0, return_inverse=True,
                                              return_counts=True)
            inverse = inverse.reshape(-1)
            # a chunk is shared when several selections touch it (a selection's own
            # rows name each chunk once)
            shared_chunks = np.flatnonzero(counts > 1)
            if shared_chunks.size:
                shared = counts[inverse] > 1
                remap = np.full(len(uniq), -1, dtype=np.int64)
                remap[shared_chunks] = np.arange(shared_chunks.size)
                slot = remap[inverse]
                whole_read = self._whole_table(uniq[shared_chunks, 1:],
                                               uniq[shared_chunks, 0], t, shared, slot)
                whole = whole_read[1]
                reads.append(whole_read)
        planned = []
        for g, ((tail, step), members) in enumerate(groups.items()):
            heights = [fulls[i][0] for i in members]
            flat = self._group_buffer((sum(heights), *tail), members, heights)
            mine = row_group == g
            own = np.flatnonzero(mine & ~shared)
            if len(own):
                reads.append((self._table(t.coords[own], t.local_start[own],
                                          t.local_count[own], t.out_start[own], step,
                                          flat.shape, t.path_ids[own]), flat))
            planned.append((np.flatnonzero(mine & shared), step, members, flat))
        self._read_all(reads)
        results: list[Any] = [None] * n
        for theirs, step, members, flat in planned:
            if whole is not None and len(theirs):
                self._copy_shared(t, theirs, slot, whole, step, flat)
            shapes = {sels[i].out_shape for i in members}
            if (len(shapes) == 1 and len(next(iter(shapes))) > 0
                    and all(self.outs[i] is None for i in members)):
                # (results of one shape, one after another in `flat`: its views, taken
                # by one reshape, not a slice and a reshape per result; 0-d results
                # stay 0-d arrays below)
                for i, part in zip(members, flat.reshape(len(members), *shapes.pop()),
                                   strict=True):
                    results[i] = part
                continue
            for i in members:
                given = self.outs[i]
                a = int(row0[i])
                part = flat[a:a + fulls[i][0]].reshape(sels[i].out_shape)
                if given is not None and not np.shares_memory(given, flat):
                    given[...] = part
                    results[i] = given
                else:
                    results[i] = part if given is None else given
        return results

    def _groups(self, fulls: list[tuple[int, ...]]) -> dict[tuple, list[int]]:
        """The selections (their positions) by the tail of their shapes (``fulls``,
        without the first dimension) and their steps, in order of first appearance."""
        sels, steps, counts = self.sels, self.steps, self.counts
        if (steps == steps[0]).all() and (counts[:, 1:] == counts[0, 1:]).all():
            # (one group, a batch of one shape's tiles: without a key per selection)
            return {(fulls[0][1:], tuple(sels[0].step.tolist())): list(range(len(sels)))}
        groups: dict[tuple, list[int]] = {}
        for i, (s, full) in enumerate(zip(sels, fulls, strict=True)):
            groups.setdefault((full[1:], tuple(s.step.tolist())), []).append(i)
        return groups

    def _all_distinct(self, t: _Concat) -> bool:
        """Whether the rows of ``t`` are of distinct chunks (no chunk shared by two
        selections: a loader's random tiles, mostly), told by one sort of each row's
        chunk as one number (its array and its place in the grid, C order) -- not
        ``np.unique`` by rows, which costs ten times more.  ``False`` when there are
        shared chunks, or when the numbers would not fit an int64 (then the caller's
        ``np.unique`` finds the shared chunks)."""
        grid = [-(-int(d) // int(c)) for d, c in
                zip(self.array_shape, self.grid.chunk_shape_arr.tolist(), strict=True)]
        if math.prod(grid) * len(self.paths) >= 2**62:
            return False
        flat = np.sort(np.ravel_multi_index(tuple(t.coords.T), grid)
                       + t.path_ids * math.prod(grid))
        return not bool(np.count_nonzero(flat[1:] == flat[:-1]))

    def _read_all(self, reads: list[tuple[_Rows, np.ndarray]]) -> None:
        """Do the reads (tables and their outputs; disjoint outputs): one after another,
        but on a store of concurrent requests (a remote one) at the same time, so that
        the batch costs the round trips of one read (a shard's index is read once for
        all of them: the batch's chain keeps the indexes it reads)."""
        if len(reads) > 1 and self.caps.batched_gets:
            at_once(lambda r: self._read_table(*r), reads, len(reads))
            return
        for proj, out in reads:
            self._read_table(proj, out)

    # -- buffers -------------------------------------------------------------------------
    def _group_buffer(self, shape: tuple[int, ...], members: list[int], heights: list[int]
                      ) -> np.ndarray:
        """The output (of ``shape``) of the selections ``members``, their results one
        after another along the first axis (``heights`` long): the caller's stacked
        ``out`` when it holds them all in that order, else a new buffer."""
        stacked = self.stacked
        if stacked is not None and len(members) == len(self.sels) and len(set(heights)) == 1:
            return stacked.reshape(shape)
        return _buffers.empty(shape, self.dtype, where=self.where,
                              what="the results of the selections", aligned=True)

    # -- reading -------------------------------------------------------------------------
    def _read_table(self, proj: _Rows, out: np.ndarray) -> None:
        """Read the rows of ``proj`` (a table of this batch's) into ``out``."""
        paths, ids = self.paths, proj.path_ids
        plan = Plan(self.store, self.caps, paths[0], self.chain, proj.sel, out=out,
                    size=out.size)
        if self.chain.kind == "sharded":
            grouped = (group_by_shard(self.chain, proj, paths[0]) if len(paths) == 1
                       else self._by_shard(proj, ids))
            ShardRowsRead(plan, (proj, *grouped)).run()
            return
        if len(paths) == 1:
            keys = chunk_keys(self.chain.metadata, paths[0], proj.coords)
        else:
            keys = [""] * proj.nrows
            for a, path in enumerate(paths):
                rows = np.flatnonzero(ids == a)
                for r, key in zip(rows.tolist(),
                                  chunk_keys(self.chain.metadata, path, proj.coords[rows]),
                                  strict=True):
                    keys[r] = key
        reader = RowReader(proj, out, self.caps)
        choose_rows(READ_ROWS, plan, reader).run(plan, keys, reader)

    def _by_shard(self, proj: _Rows, ids: np.ndarray) -> tuple:
        """The rows of ``proj`` (inner chunks of the arrays ``ids``) grouped by shard, as
        :func:`~zarrfast.engine.sharded.group_by_shard` groups one array's: (shard keys,
        shard coords, per-shard row arrays, inner index)."""
        chain = self.chain
        shard_coords, inner = np.divmod(proj.coords, chain.cps)
        inner_lin = inner @ chain.inner_strides
        # a shard is its array and its place in the grid
        ident = np.column_stack((ids, shard_coords))
        _, first, inverse = np.unique(ident, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(inverse, kind="stable")
        starts = np.searchsorted(inverse[order], np.arange(len(first) + 1))
        groups = [order[a:b] for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(),
                                             strict=True)]
        keys = [chunk_keys(chain.metadata, self.paths[int(ids[f])], shard_coords[f:f + 1])[0]
                for f in first.tolist()]
        return keys, shard_coords[first], groups, inner_lin

    def _table(self, coords: np.ndarray, local_start: np.ndarray, local_count: np.ndarray,
               out_start: np.ndarray, step: Sequence[int], out_shape: tuple[int, ...],
               path_ids: np.ndarray) -> _Rows:
        """A projection made of rows (not of one selection) into an output of
        ``out_shape`` (its rows' selections all with ``step``); ``path_ids``: each
        row's array (an index into ``paths``)."""
        ndim = len(out_shape)
        proj = _Rows.__new__(_Rows)
        proj.array_shape = np.array(self.array_shape, dtype=np.int64)
        proj.coords, proj.local_start, proj.local_count = coords, local_start, local_count
        proj.out_start = out_start
        chunk = self.grid.chunk_shape_arr
        proj.complete = np.all(local_count == chunk, axis=1) if len(coords) else \
            np.zeros(0, dtype=np.bool_)
        proj.nrows, proj.chain = len(coords), self.grid
        proj.sel = BasicSelection(start=np.zeros(ndim, dtype=np.int64),
                                  step=np.array(step, dtype=np.int64),
                                  count=np.array(out_shape, dtype=np.int64),
                                  dropped=(False,) * ndim)
        proj.path_ids = path_ids
        return proj

    def _whole_table(self, coords: np.ndarray, path_ids: np.ndarray, t: _Concat,
                     shared: np.ndarray, slot: np.ndarray) -> tuple[_Rows, np.ndarray]:
        """The read of the shared chunks at ``coords`` into one buffer: of each chunk,
        the box that holds every part the selections take of it (the rows ``shared``
        of the batch's table ``t``; ``slot``: their chunk's place in ``coords``), the
        boxes one after another along the first axis -- not whole chunks, which two rows
        of many wide chunks would make many times larger than the results.  Its table
        and the buffer; ``self.box_start`` becomes, per chunk, its box's start in the
        chunk and ``self.box_row`` its first row in the buffer."""
        m, ndim = coords.shape
        lo = np.full((m, ndim), np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.zeros((m, ndim), dtype=np.int64)
        rows = np.flatnonzero(shared)
        first = t.local_start[rows]
        last = first + (t.local_count[rows] - 1) * t.step[rows]
        np.minimum.at(lo, slot[rows], np.minimum(first, last))
        np.maximum.at(hi, slot[rows], np.maximum(first, last) + 1)
        count = hi - lo
        row0 = np.concatenate(([0], np.cumsum(count[:, 0]))).astype(np.int64)
        out_start = np.zeros_like(coords)
        out_start[:, 0] = row0[:-1]
        shape = (int(row0[-1]), *count[:, 1:].max(axis=0).tolist())
        self.box_start, self.box_row = lo, row0[:-1]
        whole = _buffers.empty(shape, self.dtype, where=self.where,
                               what="the chunks several selections share", aligned=True)
        proj = self._table(np.ascontiguousarray(coords), lo, count, out_start,
                           (1,) * len(shape), shape, path_ids)
        return proj, whole

    def _copy_shared(self, t: _Concat, rows: np.ndarray, slot: np.ndarray,
                     whole: np.ndarray, step: tuple[int, ...], flat: np.ndarray) -> None:
        """Copy the parts of the shared chunks (read into ``whole``) that the rows
        ``rows`` of the batch's table ``t`` select into their group's output ``flat``:
        one ``copy_regions`` call."""
        w_strides = np.array(whole.strides, dtype=np.int64)
        f_strides = np.array(flat.strides, dtype=np.int64)
        j = slot[rows]
        # (where each row's part lies in its chunk's box)
        start = t.local_start[rows] - self.box_start[j]
        start[:, 0] += self.box_row[j]
        _kernels.copy_regions(
            whole.reshape(-1).view(np.uint8), start @ w_strides,
            w_strides * np.array(step, dtype=np.int64),
            flat.reshape(-1).view(np.uint8), t.out_start[rows] @ f_strides, f_strides,
            np.ascontiguousarray(t.local_count[rows]), whole.dtype.itemsize, 1, False)
