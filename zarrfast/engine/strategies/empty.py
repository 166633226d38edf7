"""``empty``: a selection of no elements reads and writes nothing."""

from __future__ import annotations

from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import Strategy

__all__ = ["Empty"]


class Empty(Strategy):
    name = "empty"
    when = "the selection has no elements"

    def applies(self, plan: Plan) -> bool:
        return plan.elements() == 0

    def run(self, plan: Plan, fit: bool) -> None:
        return None
