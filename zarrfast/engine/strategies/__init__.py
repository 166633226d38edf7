"""The strategy table: every way the engine reads or writes a basic selection, by name.

:func:`read_basic` and :func:`write` make a :class:`~zarrfast.engine.plan.Plan` (the store's
capabilities, the array's chain, the selection and the :class:`~zarrfast.engine.plan.Options`
read from ``config`` at most once) and run the first strategy of :data:`READS` or :data:`WRITES`
whose ``applies(plan)`` is true.  The last one of each table always applies.  Strategies
that project the selection onto a grid of chunks then choose how to fetch or store those
chunks from a table of row strategies (:data:`READ_ROWS`, :data:`WRITE_ROWS`) the same way.

The choice is logged at DEBUG on the ``zarrfast.engine`` logger, with the reason::

    >>> import logging; logging.basicConfig()
    >>> logging.getLogger("zarrfast.engine").setLevel(logging.DEBUG)
    >>> a[0:10, 5:50]   # DEBUG:zarrfast.engine:read / [10, 45] of regular: box-files (...)

====================  =================  ==========================================
strategy              chains             when
====================  =================  ==========================================
empty                 all                the selection has no elements
objects               object             variable-length strings or bytes
shard-box             sharded            a small step-1 box of inner chunks
shard-rows            sharded, rect.     any other read of a sharded array
box-files             regular            a small step-1 box of chunk files
box-parts             regular            a large step-1 box of chunk files
single-chunk          regular            a step-1 selection inside one chunk
chunk-rows            regular, rect.     any other: project, then a row strategy
====================  =================  ==========================================

Writes: ``empty``, ``objects``, ``shard-write``, ``chunk-rows``.  Row strategies of reads:
``batched-gets``, ``file-batches``, ``chunk-tasks``; of writes: ``shards-behind-codec``,
``batched-sets``, ``row-batches``.  Each strategy's class says when it applies and which
kernels it calls (``name``, ``when``, ``kernels``).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from zarrfast.engine.plan import Plan
from zarrfast.engine.selection import BasicSelection, normalize_basic
from zarrfast.engine.strategies.base import RowStrategy, Strategy, choose_rows, logger
from zarrfast.engine.strategies.batched_gets import BatchedGets
from zarrfast.engine.strategies.batched_sets import BatchedSets
from zarrfast.engine.strategies.box_files import BoxFiles
from zarrfast.engine.strategies.box_parts import BoxParts
from zarrfast.engine.strategies.chunk_rows import ChunkRowReads, ChunkRowWrites
from zarrfast.engine.strategies.chunk_tasks import ChunkTasks
from zarrfast.engine.strategies.empty import Empty
from zarrfast.engine.strategies.file_batches import FileBatches
from zarrfast.engine.strategies.objects import ObjectChunks, ObjectChunkWrites
from zarrfast.engine.strategies.row_batches import RowBatches
from zarrfast.engine.strategies.shard_box import ShardBox
from zarrfast.engine.strategies.shard_rows import ShardRows
from zarrfast.engine.strategies.shard_write import ShardWrites
from zarrfast.engine.strategies.shards_behind_codec import ShardsBehindCodec
from zarrfast.engine.strategies.single_chunk import SingleChunk
from zarrfast.engine.values import as_stored
from zarrfast.errors import IndexingError
from zarrfast.kernels import buffers as _buffers
from zarrfast.storage import Store, StoreCapabilities

__all__ = ["READS", "READ_ROWS", "WRITES", "WRITE_ROWS", "RowStrategy", "Strategy", "choose",
           "choose_rows", "out_problem", "read_basic", "write", "write_basic"]

#: how the chunks of a projection are read, in order of preference
READ_ROWS: tuple[RowStrategy, ...] = (BatchedGets(), FileBatches(), ChunkTasks())
#: how the chunks of a projection are written, in order of preference
WRITE_ROWS: tuple[RowStrategy, ...] = (ShardsBehindCodec(), BatchedSets(), RowBatches())

_chunk_reads = ChunkRowReads(READ_ROWS)
_chunk_writes = ChunkRowWrites(WRITE_ROWS)

#: every read strategy, in order of preference: the first that applies runs
READS: tuple[Strategy, ...] = (
    Empty(),
    ObjectChunks(),
    ShardBox(),
    ShardRows(),
    BoxFiles(),
    BoxParts(),
    SingleChunk(),
    _chunk_reads,
)
#: every write strategy, in order of preference
WRITES: tuple[Strategy, ...] = (
    Empty(),
    ObjectChunkWrites(),
    ShardWrites(),
    _chunk_writes,
)


#: ``(id(table), chain kind)`` -> the strategies of the table for chains of that kind
_BY_KIND: dict[tuple[int, str], tuple[Strategy, ...]] = {}


def choose(table: tuple[Strategy, ...], plan: Plan, what: str) -> tuple[Strategy, Any]:
    """The first strategy of ``table`` that applies to ``plan`` (among those for its
    chain's kind), and what its ``applies`` gave; named, with the reason, in the
    ``zarrfast.engine`` DEBUG log."""
    kind = plan.chain.kind
    candidates = _BY_KIND.get((id(table), kind))
    if candidates is None:  # (the tables are module constants: a handful of entries)
        candidates = _BY_KIND[(id(table), kind)] = tuple(
            s for s in table if kind in s.kinds)
    for strategy in candidates:
        fit = strategy.applies(plan)
        if fit:
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("%s %s %s of %s: %s (%s)", what, plan.path or "/",
                             list(plan.sel.out_shape), plan.chain.kind, strategy.name,
                             strategy.when)
            return strategy, fit
    raise AssertionError(f"no strategy applies: {list(table)}")  # pragma: no cover


def out_problem(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> str:
    """What keeps ``out`` from taking a result of ``shape`` and ``dtype`` (a writeable
    C-contiguous ndarray of them), in words; ``""``: nothing."""
    if not isinstance(out, np.ndarray):
        return f"a {type(out).__name__}"
    if out.shape != shape or out.dtype != dtype:
        return f"one of shape {out.shape} and dtype {out.dtype}"
    if not out.flags.c_contiguous:
        return "one that is not C-contiguous"
    if not out.flags.writeable:
        return "a read-only one"
    return ""


def read_basic(store: Store, caps: StoreCapabilities, path: str, chain: Any, selection: Any,
               shape: tuple[int, ...], dtype: np.dtype, out: np.ndarray | None, where: str
               ) -> np.ndarray:
    """The engine's door for a basic selection of an array (``where``: its name, for
    messages): normalized against ``shape`` (or given normalized against it: a
    ``BasicSelection``), read into ``out`` (checked: writeable, C-contiguous, of the
    selection's shape and ``dtype``) or a new array, which is returned, of the
    selection's shape.  One call: the layers above cross into the engine once per
    read."""
    sel = (selection if isinstance(selection, BasicSelection)
           else normalize_basic(selection, shape))
    full = sel.full_shape
    if out is not None:
        problem = out_problem(out, sel.out_shape, dtype)
        if problem:
            raise IndexingError(
                f"out must be a writeable C-contiguous ndarray of shape {sel.out_shape} "
                f"and dtype {dtype}, got {problem}")
        buf = out.reshape(full)
    else:
        buf = _buffers.empty(full, dtype, where=where, what="the result of the selection",
                             aligned=True)
    plan = Plan(store, caps, path, chain, sel, out=buf, size=buf.size)
    strategy, fit = choose(READS, plan, "read")
    strategy.run(plan, fit)
    if out is not None:
        return out
    # (no integer index: the result has the shape it was read in)
    return buf.reshape(sel.out_shape) if True in sel.dropped else buf


def write_basic(store: Store, caps: StoreCapabilities, path: str, chain: Any, selection: Any,
                value: Any, shape: tuple[int, ...], dtype: np.dtype, where: str, *,
                elements: type | None, write_empty_chunks: bool) -> None:
    """The engine's door for writing ``value`` (broadcast like NumPy, cast as NumPy's
    ``x[...] = value`` casts it: :func:`~zarrfast.engine.values.as_stored`; ``elements``:
    the text elements of a string or bytes array) into a basic selection."""
    sel = normalize_basic(selection, shape)
    arr = as_stored(value, dtype, where=where, elements=elements)
    if arr.ndim == 0:
        write(store, path, chain, sel, None, arr[()], write_empty_chunks=write_empty_chunks,
              caps=caps)
        return
    try:
        arr = np.broadcast_to(arr, sel.out_shape)
    except ValueError:
        raise IndexingError(
            f"{where}: value of shape {arr.shape} cannot be broadcast to the "
            f"selection's shape {sel.out_shape}") from None
    arr = np.ascontiguousarray(arr).reshape(sel.full_shape)
    write(store, path, chain, sel, arr, None, write_empty_chunks=write_empty_chunks, caps=caps)


def write(store: Store, path: str, chain: Any, sel: BasicSelection, value: np.ndarray | None,
          scalar: Any, *, write_empty_chunks: bool, caps: StoreCapabilities | None = None
          ) -> None:
    """Write ``value`` (C-contiguous, shape ``sel.full_shape``) or ``scalar`` into the
    selection ``sel``."""
    plan = Plan(store, store.capabilities if caps is None else caps, path, chain, sel,
                value=value, scalar=scalar, write_empty_chunks=write_empty_chunks)
    strategy, fit = choose(WRITES, plan, "write")
    strategy.run(plan, fit)
