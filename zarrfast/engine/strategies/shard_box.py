"""``shard-box``: a small step-1 box of inner chunks of a regular grid of shards, read in
the calling thread: each shard opened once, its index from the cache, the inner chunks'
ranges read and decoded into place by one kernel call (:func:`~zarrfast.engine.sharded.read_shard_box`)."""

from __future__ import annotations

from zarrfast.engine.boxes import BOX_CHUNKS, SHARD_BOX_BYTES, SHARD_BOX_SPAN, box_chunks
from zarrfast.engine.plan import Plan
from zarrfast.engine.sharded import read_shard_box
from zarrfast.engine.strategies.base import Strategy

__all__ = ["ShardBox"]


class ShardBox(Strategy):
    name = "shard-box"
    when = (f"sharded, a step-1 box of at most {BOX_CHUNKS} inner chunks, or of at most "
            f"{SHARD_BOX_SPAN} per dimension ({SHARD_BOX_BYTES >> 20} MiB at most), no "
            "codec after the shard, a store read key by key")
    kernels = ("ChunkDecoder.decode_box_shards", "ChunkDecoder.decode_ranges",
               "ChunkDecoder.decode_regions", "copy_regions")

    kinds = ("sharded",)

    def applies(self, plan: Plan) -> int:
        """How many inner chunks the box touches: at most ``BOX_CHUNKS``, or at most
        ``SHARD_BOX_SPAN`` along every dimension and ``SHARD_BOX_BYTES`` decoded (a box
        one to two inner chunks long per side); of a regular grid of shards not behind
        codecs, on a store read key by key.  Else 0."""
        chain = plan.chain
        if chain.rectilinear or not chain.partial_reads or plan.caps.batched_gets:
            return 0
        inner = chain.inner
        n = box_chunks(plan.sel, inner)
        if n <= BOX_CHUNKS:
            return n
        if n * inner.chunk_nbytes > SHARD_BOX_BYTES:
            return 0
        for s, m, c in zip(plan.sel.start.tolist(), plan.sel.count.tolist(),
                           inner.chunk_shape, strict=True):
            if (s + m - 1) // c - s // c >= SHARD_BOX_SPAN:
                return 0
        return n

    def run(self, plan: Plan, fit: int) -> None:
        read_shard_box(plan, fit)
