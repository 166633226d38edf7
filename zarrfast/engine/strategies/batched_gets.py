"""``batched-gets``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import read_rows_batched
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["BatchedGets"]


class BatchedGets(RowStrategy):
    name = "batched-gets"
    when = ("a store that fetches many values at once (remote: concurrent requests): waves "
            "of get_many, each call's chunks decoded on the pool while the others are in "
            "flight")
    kernels = ("ChunkDecoder.decode_regions", "copy_region")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return plan.caps.batched_gets

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        read_rows_batched(plan, keys, rows)
