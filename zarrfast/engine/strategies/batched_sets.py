"""``batched-sets``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import write_rows_batched
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["BatchedSets"]


class BatchedSets(RowStrategy):
    name = "batched-sets"
    when = ("a store that fetches many values at once (remote): the old chunks in one "
            "get_many, encoding on the pool, one set_many and one delete_many per wave")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return plan.caps.batched_gets

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_rows_batched(plan, keys, rows)
