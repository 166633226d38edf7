"""``chunk-tasks``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import read_rows_tasks
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["ChunkTasks"]


class ChunkTasks(RowStrategy):
    name = "chunk-tasks"
    when = "any other: one task per chunk, a get and a decode each"
    kernels = ("copy_region", "fill_region")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return True

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        read_rows_tasks(plan, keys, rows)
