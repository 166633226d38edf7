"""``shard-rows``: any other read of a sharded array (:class:`~zarrfast.engine.shard_read.ShardRowsRead`):
whole shards of local files by one kernel call each, the others fetched whole or through a
:class:`~zarrfast.engine.shard_view.ShardView`, their inner chunks placed by batch kernels."""

from __future__ import annotations

from zarrfast.engine.plan import Plan
from zarrfast.engine.shard_read import ShardRowsRead
from zarrfast.engine.strategies.base import Strategy

__all__ = ["ShardRows"]


class ShardRows(Strategy):
    name = "shard-rows"
    when = "sharded (regular or rectilinear grid of shards), any other selection"
    kernels = ("ShardFiles.run", "ChunkDecoder.decode_regions", "copy_regions", "copy_region")

    kinds = ("sharded", "rectilinear-sharded")

    def applies(self, plan: Plan) -> bool:
        return True

    def run(self, plan: Plan, fit: bool) -> None:
        ShardRowsRead(plan).run()
