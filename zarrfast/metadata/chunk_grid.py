"""The regular chunk grid and the chunk key encodings.

* Regular grid (zarr-specs ``docs/v3/chunk-grids/regular-grid``):
  ``{"name": "regular", "configuration": {"chunk_shape": [2, 5]}}``.  Chunk
  ``(i, j)`` covers ``[i*2, (i+1)*2) x [j*5, (j+1)*5)``.  Every stored chunk
  has the nominal ``chunk_shape``; at the array's upper edge only the first
  ``data_size`` elements of a chunk hold data (the rest is padding).
* ``default`` key encoding: ``"c" + sep + sep.join(coords)`` (``"c"`` for
  0-d arrays), separator ``"/"`` (default) or ``"."``.
* ``v2`` key encoding: ``sep.join(coords)`` (``"0"`` for 0-d), separator
  ``"."`` (default) or ``"/"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrfast.errors import MetadataValidationError

__all__ = [
    "ChunkKeyEncoding",
    "DefaultChunkKeyEncoding",
    "RegularChunkGrid",
    "V2ChunkKeyEncoding",
    "parse_chunk_grid",
    "parse_chunk_key_encoding",
]


def _int_tuple(value: Any, what: str, *, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value
    ):
        raise MetadataValidationError(f"{what} must be a list of integers, got {value!r}")
    out = tuple(int(v) for v in value)
    for v in out:
        if v < minimum:
            raise MetadataValidationError(f"{what} must be integers >= {minimum}, got {value!r}")
    return out


@dataclass(frozen=True)
class RegularChunkGrid:
    chunk_shape: tuple[int, ...]
    name = "regular"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "chunk_shape", _int_tuple(self.chunk_shape, "chunk_shape", minimum=1)
        )

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "chunk_grid") -> RegularChunkGrid:
        if not isinstance(data, dict) or data.get("name") != "regular":
            raise MetadataValidationError(
                f"{where}: expected {{'name': 'regular', 'configuration': {{'chunk_shape': "
                f"[...]}}}}, got {data!r}"
            )
        extra = set(data) - {"name", "configuration"}
        if extra:
            raise MetadataValidationError(f"{where}: unexpected members {sorted(extra)}")
        config = data.get("configuration")
        if not isinstance(config, dict) or "chunk_shape" not in config:
            raise MetadataValidationError(f"{where}: configuration.chunk_shape is required")
        if set(config) - {"chunk_shape"}:
            raise MetadataValidationError(
                f"{where}: unexpected configuration members {sorted(set(config) - {'chunk_shape'})}"
            )
        try:
            return cls(tuple(config["chunk_shape"]) if isinstance(config["chunk_shape"], list)
                       else config["chunk_shape"])
        except MetadataValidationError as e:
            raise MetadataValidationError(f"{where}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"name": "regular", "configuration": {"chunk_shape": list(self.chunk_shape)}}

    def grid_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return tuple(-(-s // c) for s, c in zip(shape, self.chunk_shape, strict=True))

    def data_size(self, shape: tuple[int, ...], coords: tuple[int, ...]) -> tuple[int, ...]:
        """Edge-clipped extent of chunk ``coords`` (the nominal size is ``chunk_shape``)."""
        return tuple(
            min(c, s - i * c) for s, c, i in zip(shape, self.chunk_shape, coords, strict=True)
        )


def parse_chunk_grid(data: Any, *, where: str = "chunk_grid") -> RegularChunkGrid:
    if isinstance(data, dict) and data.get("name") not in ("regular", None):
        raise MetadataValidationError(
            f"{where}: unsupported chunk grid {data.get('name')!r}; only 'regular' is supported"
        )
    return RegularChunkGrid.from_dict(data, where=where)


@dataclass(frozen=True)
class ChunkKeyEncoding:
    separator: str
    #: whether metadata spells out the configuration (tensorstore omits the default)
    write_configuration: bool = field(default=True, compare=False)
    name = ""

    def __post_init__(self) -> None:
        if self.separator not in ("/", "."):
            raise MetadataValidationError(
                f"chunk_key_encoding {self.name!r}: separator must be '/' or '.', "
                f"got {self.separator!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        if not self.write_configuration:
            return {"name": self.name}
        return {"name": self.name, "configuration": {"separator": self.separator}}

    def key_prefix(self) -> str:
        """The text before the joined coordinates."""
        raise NotImplementedError

    def encode(self, coords: tuple[int, ...]) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class DefaultChunkKeyEncoding(ChunkKeyEncoding):
    separator: str = "/"
    write_configuration: bool = field(default=True, compare=False)
    name = "default"

    def key_prefix(self) -> str:
        return "c" + self.separator

    def encode(self, coords: tuple[int, ...]) -> str:
        if not coords:
            return "c"
        return "c" + self.separator + self.separator.join(map(str, coords))


@dataclass(frozen=True)
class V2ChunkKeyEncoding(ChunkKeyEncoding):
    separator: str = "."
    write_configuration: bool = field(default=True, compare=False)
    name = "v2"

    def key_prefix(self) -> str:
        return ""

    def encode(self, coords: tuple[int, ...]) -> str:
        if not coords:
            return "0"
        return self.separator.join(map(str, coords))


def parse_chunk_key_encoding(data: Any, *, where: str = "chunk_key_encoding") -> ChunkKeyEncoding:
    if isinstance(data, ChunkKeyEncoding):
        return data
    if isinstance(data, str):
        data = {"name": data}
    if not isinstance(data, dict):
        raise MetadataValidationError(
            f"{where}: expected {{'name': 'default'|'v2', 'configuration': {{'separator': ...}}}}, "
            f"got {data!r}"
        )
    name = data.get("name")
    classes = {"default": DefaultChunkKeyEncoding, "v2": V2ChunkKeyEncoding}
    if not isinstance(name, str) or name not in classes:
        raise MetadataValidationError(
            f"{where}: unsupported chunk key encoding {name!r}; expected 'default' or 'v2'"
        )
    extra = set(data) - {"name", "configuration"}
    if extra:
        raise MetadataValidationError(f"{where}: unexpected members {sorted(extra)}")
    config = data.get("configuration", {})
    if not isinstance(config, dict) or set(config) - {"separator"}:
        raise MetadataValidationError(
            f"{where}: configuration must be an object with only 'separator', got {config!r}"
        )
    try:
        if "separator" in config:
            return classes[name](separator=config["separator"])
        return classes[name](write_configuration="configuration" in data)
    except MetadataValidationError as e:
        raise MetadataValidationError(f"{where}: {e}") from None
