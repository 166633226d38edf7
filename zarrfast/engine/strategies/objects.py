"""``objects``: variable-length strings and bytes, one chunk per task, decoded and
encoded by the chain's object codecs (:mod:`zarrfast.engine.objects`)."""

from __future__ import annotations

from zarrfast.engine.objects import read_object_selection, write_object_selection
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import Strategy

__all__ = ["ObjectChunks", "ObjectChunkWrites"]


class ObjectChunks(Strategy):
    name = "objects"
    when = "variable-length strings or bytes (an object chain)"
    kinds = ("object",)

    def applies(self, plan: Plan) -> bool:
        return True

    def run(self, plan: Plan, fit: bool) -> None:
        read_object_selection(plan)


class ObjectChunkWrites(ObjectChunks):
    def run(self, plan: Plan, fit: bool) -> None:
        write_object_selection(plan)
