"""``shards-behind-codec``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import write_shards_whole
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["ShardsBehindCodec"]


class ShardsBehindCodec(RowStrategy):
    name = "shards-behind-codec"
    when = ("chunks that are shards decoded whole (an array -> array codec before "
            "sharding_indexed): partial writes read, change and write back under the "
            "shard's lock")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return getattr(rows.chain.ab, "name", None) == "sharding_indexed"

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_shards_whole(plan, keys, rows)
