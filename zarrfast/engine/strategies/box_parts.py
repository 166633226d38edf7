"""``box-parts``: a step-1 box of more than ``BOX_CHUNKS`` chunks stored one per file (a full
read), cut into sub-boxes of whole chunk rows, one kernel call each
(:func:`~zarrfast.engine.boxes.read_box_parts`)."""

from __future__ import annotations

from zarrfast.engine.boxes import BOX_CHUNKS, box_parts_fit, read_box_parts
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import Strategy
from zarrfast.engine.strategies.box_files import box_count

__all__ = ["BoxParts"]


class BoxParts(Strategy):
    name = "box-parts"
    when = (f"a step-1 box of more than {BOX_CHUNKS} such chunks (full reads): sub-boxes "
            "of whole chunk rows, one kernel call each")
    kernels = ("ChunkDecoder.decode_box_files",)
    kinds = ("regular",)

    def applies(self, plan: Plan) -> int:
        n = box_count(plan)
        return n if n > BOX_CHUNKS and box_parts_fit(plan) else 0

    def run(self, plan: Plan, fit: int) -> None:
        read_box_parts(plan, fit)
