"""``chunk-rows``: any other read or write of a regular or rectilinear grid of chunks.  The
selection is projected onto the grid (one table, no Python object per chunk; a rectilinear
grid one table per chunk shape), then a row strategy fetches or stores the chunks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from zarrfast.engine.chunked import Projection, RowReader, RowWriter, chunk_keys
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy, Strategy, choose_rows

__all__ = ["ChunkRowReads", "ChunkRowWrites"]


def projections(plan: Plan) -> Iterator[Projection]:
    """The selection's projections: one; a rectilinear grid one per chunk shape (their
    chunks are disjoint, and so are their regions of the output or the value)."""
    chain = plan.chain
    if chain.kind == "rectilinear":
        yield from chain.groups(plan.sel)
    else:
        yield Projection(chain.metadata.shape, chain, plan.sel)


class ChunkRowReads(Strategy):
    name = "chunk-rows"
    when = "a regular or rectilinear grid of chunks, any other selection"
    kinds = ("regular", "rectilinear")

    def __init__(self, rows: tuple[RowStrategy, ...]) -> None:
        #: the row strategies, in order of preference
        self.rows = rows

    def applies(self, plan: Plan) -> bool:
        return True

    def run(self, plan: Plan, fit: Any) -> None:
        for proj in projections(plan):
            keys = chunk_keys(plan.chain.metadata, plan.path, proj.coords)
            assert plan.out is not None  # (a read's plan)
            reader = RowReader(proj, plan.out, plan.caps)
            choose_rows(self.rows, plan, reader).run(plan, keys, reader)


class ChunkRowWrites(ChunkRowReads):
    def run(self, plan: Plan, fit: Any) -> None:
        for proj in projections(plan):
            keys = chunk_keys(plan.chain.metadata, plan.path, proj.coords)
            writer = RowWriter(proj, plan.value, plan.scalar, plan.write_empty_chunks)
            choose_rows(self.rows, plan, writer).run(plan, keys, writer)
