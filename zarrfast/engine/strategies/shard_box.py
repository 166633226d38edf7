"""``shard-box``: a small step-1 box of inner chunks of a regular grid of shards, read in
the calling thread: each shard opened once, its index from the cache, the inner chunks'
ranges read and decoded into place by one kernel call (:func:`~zarrfast.engine.sharded.read_shard_box`)."""

from __future__ import annotations

from zarrfast.engine.boxes import BOX_CHUNKS
from zarrfast.engine.plan import Plan
from zarrfast.engine.sharded import read_shard_box, shard_box_fit
from zarrfast.engine.strategies.base import Strategy

__all__ = ["ShardBox"]


class ShardBox(Strategy):
    name = "shard-box"
    when = (f"sharded, a step-1 box of at most {BOX_CHUNKS} inner chunks, no codec after "
            "the shard, a store read key by key")
    kernels = ("ChunkDecoder.decode_box_shards", "ChunkDecoder.decode_ranges",
               "ChunkDecoder.decode_regions", "copy_regions")

    kinds = ("sharded",)

    def applies(self, plan: Plan) -> int:
        return shard_box_fit(plan)

    def run(self, plan: Plan, fit: int) -> None:
        read_shard_box(plan, fit)
