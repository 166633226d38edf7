"""``row-batches``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import write_rows
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["RowBatches"]


class RowBatches(RowStrategy):
    name = "row-batches"
    when = ("any other: batches of chunks encoded (whole blosc, zstd, gzip and zlib chunks "
            "by one kernel call per batch), then written by one set_many (whole uncompressed "
            "chunks by set_regions, from where they lie in the value)")
    kernels = ("blosc_compress_regions", "ChunkEncoder.compress_regions", "write_files",
               "write_region_files", "copy_region", "fill_region", "is_uniform")

    def applies(self, plan: Plan, rows: Any) -> bool:
        return True

    def run(self, plan: Plan, keys: list[str], rows: Any) -> None:
        write_rows(plan, keys, rows)
