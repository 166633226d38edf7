"""The row strategies: how the chunks of a projection are fetched and decoded (reads),
or encoded and stored (writes) (:mod:`zarrfast.engine.chunked`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import (
    read_rows_batched,
    read_rows_files,
    read_rows_tasks,
    write_rows,
    write_rows_batched,
    write_shards_whole,
)
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["BatchedGets", "BatchedSets", "ChunkTasks", "FileBatches", "RowBatches",
           "ShardsBehindCodec"]


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


class FileBatches(RowStrategy):
    name = "file-batches"
    when = ("a store that reads into buffers, uncompressed or zstd/blosc chunks: batches of "
            "files read (and decoded) by one kernel call each")
    kernels = ("read_files_into", "ChunkDecoder.decode_files", "ChunkDecoder.decode_regions",
               "copy_regions")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return rows.raw_into or rows.read_decode

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        read_rows_files(plan, keys, rows)


class ChunkTasks(RowStrategy):
    name = "chunk-tasks"
    when = "any other: one task per chunk, a get and a decode each"
    kernels = ("copy_region", "fill_region")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return True

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        read_rows_tasks(plan, keys, rows)


class ShardsBehindCodec(RowStrategy):
    name = "shards-behind-codec"
    when = ("chunks that are shards decoded whole (an array -> array codec before "
            "sharding_indexed): partial writes read, change and write back under the "
            "shard's lock")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return getattr(rows.chain.ab, "name", None) == "sharding_indexed"

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_shards_whole(plan, keys, rows)


class BatchedSets(RowStrategy):
    name = "batched-sets"
    when = ("a store that fetches many values at once (remote): the old chunks in one "
            "get_many, encoding on the pool, one set_many and one delete_many per wave")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return plan.caps.batched_gets

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_rows_batched(plan, keys, rows)


class RowBatches(RowStrategy):
    name = "row-batches"
    when = ("any other: batches of chunks encoded (whole blosc chunks by one kernel call), "
            "then written by one set_many (whole uncompressed chunks by set_regions, from "
            "where they lie in the value)")
    kernels = ("blosc_compress_regions", "write_files", "write_region_files", "copy_region",
               "fill_region", "is_uniform")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return True

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_rows(plan, keys, rows)
