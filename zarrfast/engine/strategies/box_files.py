"""``box-files``: small step-1 boxes of zstd, blosc or uncompressed chunks stored
one per file, read by kernels that make the paths, read, decode and place the chunks
without the GIL (:mod:`zarrfast.engine.boxes`)."""

from __future__ import annotations

from zarrfast.engine.boxes import (
    BOX_CHUNKS,
    box_chunks,
    box_files_fit,
    read_box_files,
)
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import Strategy

__all__ = ["BoxFiles", "box_count"]


def box_count(plan: Plan) -> int:
    """How many chunks a box read of ``plan`` would touch; 0: not one (counted once per
    plan: box-files and box-parts both ask)."""
    if plan.boxes < 0:
        chain, caps = plan.chain, plan.caps
        plan.boxes = (0 if chain.box_codec is None or caps.batched_gets or not caps.reads_into
                      else box_chunks(plan.sel, chain))
    return plan.boxes


class BoxFiles(Strategy):
    name = "box-files"
    when = (f"a step-1 box of at most {BOX_CHUNKS} zstd, blosc or uncompressed chunks, "
            "stored as files kernels may read")
    kernels = ("ChunkDecoder.decode_box_files", "ChunkDecoder.decode_files")
    kinds = ("regular",)

    def applies(self, plan: Plan) -> tuple[int, tuple] | None:
        """The box's chunk count, and how its files are read (``box_files_fit``)."""
        n = box_count(plan)
        if not 0 < n <= BOX_CHUNKS:
            return None
        how = box_files_fit(plan, n)
        return None if how is None else (n, how)

    def run(self, plan: Plan, fit: tuple[int, tuple]) -> None:
        read_box_files(plan, *fit)
