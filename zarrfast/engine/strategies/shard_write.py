"""``shard-write``: a write into a sharded array, one task per shard
(:class:`~zarrfast.engine.shard_write.ShardWrite`): whole shards built from the value,
partial and edge shards read, changed and written back under the shard's lock."""

from __future__ import annotations

from zarrfast.engine.plan import Plan
from zarrfast.engine.shard_write import ShardWrite
from zarrfast.engine.strategies.base import Strategy

__all__ = ["ShardWrites"]


class ShardWrites(Strategy):
    name = "shard-write"
    when = "sharded (regular or rectilinear grid of shards)"
    kernels = ("copy_regions", "write_region_files", "ChunkEncoder.compress_regions",
               "blosc_compress_regions")

    kinds = ("sharded", "rectilinear-sharded")

    def applies(self, plan: Plan) -> bool:
        return True

    def run(self, plan: Plan, fit: bool) -> None:
        ShardWrite(plan).run()
