"""The regular chunk grid and the chunk key encodings.

* Regular grid (zarr-specs ``docs/v3/chunk-grids/regular-grid``):
  ``{"name": "regular", "configuration": {"chunk_shape": [2, 5]}}``.  Chunk
  ``(i, j)`` covers ``[i*2, (i+1)*2) x [j*5, (j+1)*5)``.  Every stored chunk
  has the nominal ``chunk_shape``; at the array's upper edge only the first
  ``data_size`` elements of a chunk hold data (the rest is padding).
* Rectilinear grid (zarr-extensions ``chunk-grids/rectilinear``):
  ``{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes":
  [[3, 7], [[5, 2], 10], 4]}}``.  Per dimension either an integer ``m`` (a regular
  step: ``m`` repeated until the sizes reach the array's length) or a list of edge
  lengths in which ``[size, count]`` is a run.  The sizes must reach the array's
  length and may overflow it, by several chunks.  A stored chunk has its declared
  shape; as for the regular grid, the part past the array's end is padding.
* ``default`` key encoding: ``"c" + sep + sep.join(coords)`` (``"c"`` for
  0-d arrays), separator ``"/"`` (default) or ``"."``.
* ``v2`` key encoding: ``sep.join(coords)`` (``"0"`` for 0-d), separator
  ``"."`` (default) or ``"/"``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrfast.errors import MetadataValidationError

__all__ = [
    "ChunkKeyEncoding",
    "DefaultChunkKeyEncoding",
    "RectilinearChunkGrid",
    "RegularChunkGrid",
    "V2ChunkKeyEncoding",
    "is_rectilinear_chunks",
    "normalize_rectilinear_chunks",
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
    is_regular = True

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

    def all_chunk_coords(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """The coordinates of every chunk of an array of ``array_shape``, in C order (as
        zarr-python's ``ChunkGrid.all_chunk_coords``)."""
        return itertools.product(*(range(n) for n in self.grid_shape(tuple(array_shape))))

    def get_nchunks(self, array_shape: tuple[int, ...]) -> int:
        """The number of chunks of an array of ``array_shape``."""
        return math.prod(self.grid_shape(tuple(array_shape)))


    def chunk_sizes(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """Per dimension, the extent of each chunk inside the array."""
        return tuple(tuple(min(c, n - i) for i in range(0, n, c))
                     for n, c in zip(shape, self.chunk_shape, strict=True))

    def resized(self, old_shape: tuple[int, ...], new_shape: tuple[int, ...]
                ) -> RegularChunkGrid:
        return self

    def data_size(self, shape: tuple[int, ...], coords: tuple[int, ...]) -> tuple[int, ...]:
        """Edge-clipped extent of chunk ``coords`` (the nominal size is ``chunk_shape``)."""
        return tuple(
            min(c, s - i * c) for s, c, i in zip(shape, self.chunk_shape, coords, strict=True)
        )


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _rle_encode(sizes: tuple[int, ...]) -> list[Any]:
    """Runs of two or more equal sizes as ``[size, count]``, single sizes as they are
    (what zarr-python writes: ``[5, 5, 10]`` -> ``[[5, 2], 10]``)."""
    out: list[Any] = []
    i, n = 0, len(sizes)
    while i < n:
        j = i + 1
        while j < n and sizes[j] == sizes[i]:
            j += 1
        out.append([sizes[i], j - i] if j - i > 1 else sizes[i])
        i = j
    return out


def _parse_edges(value: Any, where: str) -> int | tuple[int, ...]:
    """One dimension of ``chunk_shapes``: an integer step, or explicit edge lengths with
    ``[size, count]`` runs expanded."""
    if _is_int(value):
        if value < 1:
            raise MetadataValidationError(f"{where}: edge length must be >= 1, got {value!r}")
        return int(value)
    if not isinstance(value, (list, tuple)):
        raise MetadataValidationError(
            f"{where}: expected an integer or a list of edge lengths, got {value!r}")
    sizes: list[int] = []
    for i, item in enumerate(value):
        if _is_int(item):
            if item < 1:
                raise MetadataValidationError(
                    f"{where}[{i}]: edge length must be >= 1, got {item!r}")
            sizes.append(int(item))
        elif (isinstance(item, (list, tuple)) and len(item) == 2
              and all(_is_int(v) for v in item)):
            size, count = int(item[0]), int(item[1])
            if size < 1 or count < 1:
                raise MetadataValidationError(
                    f"{where}[{i}]: a run [size, count] needs size >= 1 and count >= 1, "
                    f"got {list(item)!r}")
            if count > _MAX_RUN:
                raise MetadataValidationError(
                    f"{where}[{i}]: run {list(item)!r} repeats more than {_MAX_RUN} times")
            sizes.extend([size] * count)
        else:
            raise MetadataValidationError(
                f"{where}[{i}]: an edge length must be an integer >= 1 or a run "
                f"[size, count], got {item!r}")
    if not sizes:
        raise MetadataValidationError(f"{where}: no edge lengths, got {value!r}")
    return tuple(sizes)


#: the most chunks one run may expand to (a run is a list of Python ints here)
_MAX_RUN = 2**26


@dataclass(frozen=True)
class RectilinearChunkGrid:
    """A rectilinear grid: per dimension an integer step or explicit edge lengths.

    ``chunk_shapes[d]`` is an ``int`` (a regular step along ``d``, written back as an
    integer) or a tuple of edge lengths (written back run-length encoded)."""

    chunk_shapes: tuple[int | tuple[int, ...], ...]
    name = "rectilinear"
    is_regular = False

    def __post_init__(self) -> None:
        if not isinstance(self.chunk_shapes, (list, tuple)):
            raise MetadataValidationError(
                f"chunk_shapes must be a list (one entry per dimension), got "
                f"{self.chunk_shapes!r}")
        object.__setattr__(self, "chunk_shapes", tuple(
            _parse_edges(v, f"chunk_shapes[{d}]") for d, v in enumerate(self.chunk_shapes)))

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "chunk_grid") -> RectilinearChunkGrid:
        if not isinstance(data, dict) or data.get("name") != "rectilinear":
            raise MetadataValidationError(
                f"{where}: expected {{'name': 'rectilinear', 'configuration': {{'kind': "
                f"'inline', 'chunk_shapes': [...]}}}}, got {data!r}")
        extra = set(data) - {"name", "configuration"}
        if extra:
            raise MetadataValidationError(f"{where}: unexpected members {sorted(extra)}")
        config = data.get("configuration")
        if not isinstance(config, dict):
            raise MetadataValidationError(
                f"{where}: configuration must be an object, got {config!r}")
        if set(config) - {"kind", "chunk_shapes"}:
            raise MetadataValidationError(
                f"{where}: unexpected configuration members "
                f"{sorted(set(config) - {'kind', 'chunk_shapes'})}")
        if "kind" not in config:
            raise MetadataValidationError(
                f"{where}: configuration.kind is required (only 'inline' is defined)")
        if config["kind"] != "inline":
            raise MetadataValidationError(
                f"{where}: unsupported kind {config['kind']!r}; only 'inline' is defined")
        if "chunk_shapes" not in config:
            raise MetadataValidationError(f"{where}: configuration.chunk_shapes is required")
        shapes = config["chunk_shapes"]
        if not isinstance(shapes, list):
            raise MetadataValidationError(
                f"{where}: chunk_shapes must be a list (one entry per dimension), got "
                f"{shapes!r}")
        try:
            return cls(tuple(shapes))
        except MetadataValidationError as e:
            raise MetadataValidationError(f"{where}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"name": "rectilinear", "configuration": {
            "kind": "inline",
            "chunk_shapes": [v if isinstance(v, int) else _rle_encode(v)
                             for v in self.chunk_shapes]}}

    @property
    def ndim(self) -> int:
        return len(self.chunk_shapes)

    def check_shape(self, shape: tuple[int, ...], where: str) -> None:
        """Refuse a rank other than the array's, and edges that do not reach its end."""
        if len(shape) != self.ndim:
            raise MetadataValidationError(
                f"{where}: chunk_shapes has {self.ndim} dimensions but shape {list(shape)} "
                f"has {len(shape)}")
        for d, (v, n) in enumerate(zip(self.chunk_shapes, shape, strict=True)):
            if not isinstance(v, int) and sum(v) < n:
                raise MetadataValidationError(
                    f"{where}: chunk_shapes[{d}] {_rle_encode(v)!r} sums to {sum(v)}, short "
                    f"of the array's length {n} along dimension {d}")

    def edges(self, d: int, n: int) -> tuple[int, ...]:
        """Declared edge lengths of the chunks along ``d`` that hold part of an array of
        length ``n`` there (the last may reach past ``n``)."""
        v = self.chunk_shapes[d]
        if isinstance(v, int):
            return (v,) * (-(-n // v))
        out, acc = [], 0
        for size in v:
            if acc >= n:
                break
            out.append(size)
            acc += size
        return tuple(out)

    def boundaries(self, shape: tuple[int, ...]) -> list[np.ndarray]:
        """Per dimension the chunks' start offsets and, last, the end of the last chunk
        holding data (int64, length ``grid_shape[d] + 1``)."""
        out = []
        for d, n in enumerate(shape):
            b = np.zeros(len(self.edges(d, n)) + 1, dtype=np.int64)
            np.cumsum(self.edges(d, n), out=b[1:])
            out.append(b)
        return out

    def all_chunk_coords(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """The coordinates of every chunk of an array of ``array_shape``, in C order (as
        zarr-python's ``ChunkGrid.all_chunk_coords``)."""
        return itertools.product(*(range(n) for n in self.grid_shape(tuple(array_shape))))

    def get_nchunks(self, array_shape: tuple[int, ...]) -> int:
        """The number of chunks of an array of ``array_shape``."""
        return math.prod(self.grid_shape(tuple(array_shape)))

    def grid_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Number of chunks holding data along each dimension."""
        return tuple(len(self.edges(d, n)) for d, n in enumerate(shape))

    def chunk_sizes(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """Per dimension, the extent of each chunk inside the array (as zarr-python's
        ``read_chunk_sizes``)."""
        out = []
        for d, n in enumerate(shape):
            e = self.edges(d, n)
            out.append(tuple(e[:-1]) + ((n - sum(e[:-1]),) if e else ()))
        return tuple(out)

    def max_chunk_shape(self) -> tuple[int, ...]:
        return tuple(v if isinstance(v, int) else max(v) for v in self.chunk_shapes)

    def first_chunk_shape(self) -> tuple[int, ...]:
        """The declared shape of chunk ``(0, ..., 0)``."""
        return tuple(v if isinstance(v, int) else v[0] for v in self.chunk_shapes)

    def probe_shapes(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The first chunk's shape, then that shape with one dimension set to each other
        edge length used along it: what a codec chain is checked against."""
        first = self.first_chunk_shape()
        out = [first]
        for d, n in enumerate(shape):
            for size in sorted(set(self.edges(d, n))):
                if size != first[d]:
                    out.append((*first[:d], size, *first[d + 1:]))
        return out

    def distinct_sizes(self, shape: tuple[int, ...]) -> list[list[int]]:
        """Per dimension the distinct edge lengths of the chunks holding data."""
        return [sorted(set(self.edges(d, n))) or [1] for d, n in enumerate(shape)]

    def resized(self, old_shape: tuple[int, ...], new_shape: tuple[int, ...]
                ) -> RectilinearChunkGrid:
        """The grid after a resize, as zarr-python 3.4 makes it: along a dimension of
        explicit edges that grows past their sum, one chunk of the missing length is
        appended; integer steps and shrinking change nothing."""
        out: list[Any] = []
        for v, n in zip(self.chunk_shapes, new_shape, strict=True):
            if not isinstance(v, int) and n > sum(v):
                v = (*v, n - sum(v))
            out.append(v)
        return RectilinearChunkGrid(tuple(out))


def normalize_rectilinear_chunks(chunks: Any, shape: tuple[int, ...], where: str
                                 ) -> RectilinearChunkGrid:
    """``create_array(chunks=[[3, 7], [5, 5, 10]])`` (an integer allowed per dimension):
    explicit sizes must sum to the array's length, as zarr-python requires."""
    if not isinstance(chunks, (list, tuple)) or len(chunks) != len(shape):
        raise MetadataValidationError(
            f"{where}: chunks {chunks!r} must give one entry per dimension of shape "
            f"{list(shape)}")
    dims: list[Any] = []
    for d, (v, n) in enumerate(zip(chunks, shape, strict=True)):
        if isinstance(v, (list, tuple)):
            if not v or not all(_is_int(x) for x in v):
                raise MetadataValidationError(
                    f"{where}: chunks[{d}] must be a list of integers, got {list(v)!r}")
            if any(x < 1 for x in v):
                raise MetadataValidationError(
                    f"{where}: chunks[{d}]: chunk sizes must be >= 1, got {list(v)!r}")
            if sum(v) != n:
                raise MetadataValidationError(
                    f"{where}: chunks[{d}] {list(v)!r} sums to {sum(v)}, not to the array's "
                    f"length {n} along dimension {d}")
            dims.append(tuple(int(x) for x in v))
        elif _is_int(v) and v >= 1:
            dims.append(int(v))
        else:
            raise MetadataValidationError(
                f"{where}: chunks[{d}] must be an integer >= 1 or a list of them, got {v!r}")
    return RectilinearChunkGrid(tuple(dims))


def is_rectilinear_chunks(chunks: Any) -> bool:
    """Whether a ``chunks`` argument asks for a rectilinear grid (a list per dimension)."""
    return (isinstance(chunks, (list, tuple))
            and any(isinstance(c, (list, tuple)) for c in chunks))


ChunkGrid = RegularChunkGrid | RectilinearChunkGrid


def parse_chunk_grid(data: Any, *, where: str = "chunk_grid") -> ChunkGrid:
    if isinstance(data, dict) and data.get("name") == "rectilinear":
        return RectilinearChunkGrid.from_dict(data, where=where)
    if isinstance(data, dict) and data.get("name") not in ("regular", None):
        raise MetadataValidationError(
            f"{where}: unsupported chunk grid {data.get('name')!r}; expected 'regular' or "
            f"'rectilinear'"
        )
    return RegularChunkGrid.from_dict(data, where=where)

@dataclass(frozen=True)
class ChunkKeyEncoding:
    separator: str
    #: whether metadata spells out the configuration (tensorstore omits the default)
    write_configuration: bool = field(default=True, compare=False, repr=False)
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

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        """The grid coordinates of the chunk key ``key`` (relative to the array's chunk
        path) of an ``ndim``-dimensional array, or ``None`` when this encoding does not
        make ``key`` (metadata documents, other separators, non-canonical numbers)."""
        if ndim == 0:
            return () if key == self.encode(()) else None
        prefix = self.key_prefix()
        if not key.startswith(prefix):
            return None
        parts = key[len(prefix):].split(self.separator)
        if len(parts) != ndim or not all(p.isascii() and p.isdigit() for p in parts):
            return None
        coords = tuple(int(p) for p in parts)
        return coords if self.encode(coords) == key else None


@dataclass(frozen=True)
class DefaultChunkKeyEncoding(ChunkKeyEncoding):
    separator: str = "/"
    write_configuration: bool = field(default=True, compare=False, repr=False)
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
    write_configuration: bool = field(default=True, compare=False, repr=False)
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
    if isinstance(data, str):  # a name alone: its configuration written out, as zarr-python does
        data = {"name": data, "configuration": {}}
    if not isinstance(data, dict):
        raise MetadataValidationError(
            f"{where}: expected {{'name': 'default'|'v2', 'configuration': {{'separator': ...}}}}, "
            f"got {data!r}"
        )
    name = data.get("name")
    classes = {"default": DefaultChunkKeyEncoding, "v2": V2ChunkKeyEncoding}
    if not isinstance(name, str) or name not in classes:
        raise MetadataValidationError(
            f"{where}: Unknown chunk key encoding: \"Chunk key encoding {name!r} not found in "
            f"registered chunk key encodings: ['default', 'v2'].\""
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
