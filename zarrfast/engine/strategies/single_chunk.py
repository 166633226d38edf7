"""``single-chunk``: a step-1 selection inside one chunk, read with integer arithmetic (no
projection table): read straight into the output when it is one whole uncompressed
chunk, else fetched, decoded and copied into place
(:func:`~zarrfast.engine.chunked.read_single_chunk`)."""

from __future__ import annotations

from zarrfast.engine.chunked import read_single_chunk, single_chunk_coords
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import Strategy

__all__ = ["SingleChunk"]


class SingleChunk(Strategy):
    name = "single-chunk"
    when = "a step-1 selection inside one chunk"
    kernels = ("copy_region", "fill_region")

    kinds = ("regular",)

    def applies(self, plan: Plan) -> tuple[list[int]] | None:
        """The chunk's coordinates (in a tuple: a 0-d array's are ``[]``)."""
        coords = single_chunk_coords(plan.chain, plan.sel)
        return None if coords is None else (coords,)

    def run(self, plan: Plan, fit: tuple[list[int]]) -> None:
        read_single_chunk(plan, fit[0])
