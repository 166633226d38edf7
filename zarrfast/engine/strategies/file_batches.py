"""``file-batches``: a row strategy (see :mod:`zarrfast.engine.strategies`)."""

from __future__ import annotations

from typing import Any

from zarrfast.engine.chunked import read_rows_files
from zarrfast.engine.plan import Plan
from zarrfast.engine.strategies.base import RowStrategy

__all__ = ["FileBatches"]


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
