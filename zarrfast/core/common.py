"""``zarr.core.common``: the type aliases user code annotates with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from zarrfast.dtype import JSON, ZarrFormat

ShapeLike = Iterable[int] | int
ChunkCoords = tuple[int, ...]
MemoryOrder = Literal["C", "F"]
AccessModeLiteral = Literal["r", "r+", "a", "w", "w-"]
DimensionNames = Iterable[str | None] | None
NodeType = Literal["array", "group"]

__all__ = ["JSON", "AccessModeLiteral", "ChunkCoords", "DimensionNames", "MemoryOrder",
           "NodeType", "ShapeLike", "ZarrFormat"]
