"""The runtime configuration of one :class:`~zarrfast.Array` (zarr-python's ``ArrayConfig``):
the memory order of what it reads, whether it stores chunks equal to the fill value, whether
a read may find a chunk missing, and zarr-python's sharding read settings.

Unlike the metadata these are not stored: they belong to the ``Array`` object, come from
``zarrfast.config`` (``array.order``, ``array.write_empty_chunks``,
``array.read_missing_chunks``, ``array.sharding_coalesce_max_gap_bytes``,
``array.sharding_coalesce_max_bytes``) where not given, and :meth:`Array.with_config`
gives the same array with others::

    a.config    # ArrayConfig(order='C', write_empty_chunks=False, read_missing_chunks=True,
                #             sharding_coalesce_max_gap_bytes=1048576,
                #             sharding_coalesce_max_bytes=16777216)
    b = a.with_config({"write_empty_chunks": True})

``read_missing_chunks=False`` makes a read that touches a chunk (of a sharded array: a
shard) not in the store raise [zarrfast.errors.ChunkNotFoundError][],
naming the chunks' keys, as zarr-python 3.4 does.  The two sharding settings are kept and
reported, as zarr-python's; zarrfast's reads of shards coalesce by its own
``shard_coalesce_gap`` setting (they change how many requests a read makes, never what it
reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zarrfast import config as zconfig
from zarrfast.errors import (
    ChunkNotFoundError,
    PickleCodecDisabledError,
    RectilinearChunksDisabledError,
    ZarrfastError,
)

__all__ = ["FIELDS", "ArrayConfig", "ChunkNotFoundError", "PickleCodecDisabledError",
           "RectilinearChunksDisabledError", "UnknownArrayConfigKeyError", "check_keys",
           "check_rectilinear_allowed", "parse_array_config", "runtime_keywords"]

#: the fields of an ArrayConfig, in its order
FIELDS = _FIELDS = ("order", "write_empty_chunks", "read_missing_chunks",
           "sharding_coalesce_max_gap_bytes", "sharding_coalesce_max_bytes")
#: the fields :class:`Array` takes as keywords besides ``order`` and ``write_empty_chunks``
RUNTIME_FIELDS = _FIELDS[2:]


def check_rectilinear_allowed(metadata: Any, node: str, *, reading: bool) -> None:
    """Refuse the Zarr v3 array ``metadata`` of a rectilinear chunk grid while
    ``array.rectilinear_chunks`` is False, as zarr-python 3.4 refuses to store or read
    such a document (zarrfast's default is True: it has always read and written them)."""
    grid = getattr(metadata, "chunk_grid", None)
    if grid is None or getattr(grid, "is_regular", True) or getattr(
            metadata, "zarr_format", 3) != 3:
        return
    if zconfig.get("array.rectilinear_chunks"):
        return
    raise RectilinearChunksDisabledError(
        f"{node}: rectilinear chunk grids are disabled (the configuration's "
        f"array.rectilinear_chunks is False); enable them with "
        f"zarrfast.config.set({{'array.rectilinear_chunks': True}}) or the environment "
        f"variable ZARR_ARRAY__RECTILINEAR_CHUNKS=True"
        + (". Nothing was read." if reading else ". Nothing was written."))


class UnknownArrayConfigKeyError(ZarrfastError, TypeError):
    """An array config with a key that is not one of ``ArrayConfig``'s (a ``TypeError``
    too, as zarr-python 3.4 raises)."""


def check_keys(value: Any, node: str = "") -> None:
    """Refuse the keys of the mapping ``value`` that are not ``ArrayConfig`` fields, in
    zarr-python 3.4's words (``node``, if given, names the array first)."""
    unknown = sorted(set(value) - set(_FIELDS))
    if unknown:
        raise UnknownArrayConfigKeyError(
            f"{node + ': ' if node else ''}Unknown array config keys: {unknown}. "
            f"Valid keys are {list(_FIELDS)}.")


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ZarrfastError(f"array config: Expected instance of bool for {name}, got "
                            f"{value!r}")
    return value


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ZarrfastError(f"array config: {name} must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class ArrayConfig:
    """``order`` (``"C"`` or ``"F"``), ``write_empty_chunks`` and ``read_missing_chunks``
    (bools), ``sharding_coalesce_max_gap_bytes`` and ``sharding_coalesce_max_bytes``
    (ints >= 0), as zarr-python 3.4's ``ArrayConfig``."""

    order: str
    write_empty_chunks: bool
    read_missing_chunks: bool = True
    sharding_coalesce_max_gap_bytes: int = 1 << 20
    sharding_coalesce_max_bytes: int = 16 << 20

    def __post_init__(self) -> None:
        if self.order not in ("C", "F"):
            raise ZarrfastError(f"array config: order must be 'C' or 'F', got {self.order!r}")
        if not isinstance(self.write_empty_chunks, bool):
            raise ZarrfastError(f"array config: write_empty_chunks must be a bool, got "
                                f"{self.write_empty_chunks!r}")
        object.__setattr__(self, "read_missing_chunks",
                           _bool("read_missing_chunks", self.read_missing_chunks))
        for name in ("sharding_coalesce_max_gap_bytes", "sharding_coalesce_max_bytes"):
            _int(name, getattr(self, name))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArrayConfig:
        """The keys given; the others from ``zarrfast.config``'s ``array.*``."""
        return parse_array_config(data)

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in _FIELDS}


def parse_array_config(value: Any, base: ArrayConfig | None = None) -> ArrayConfig:
    """``value`` (an :class:`ArrayConfig`, zarr-python's, a mapping or ``None``) as an
    :class:`ArrayConfig`; keys it leaves out come from ``base``, else from the global
    configuration."""
    if value is None:
        value = {}
    elif not isinstance(value, Mapping):
        to_dict = getattr(value, "to_dict", None)
        if not callable(to_dict):
            raise ZarrfastError(f"array config must be an ArrayConfig or a dict with keys "
                                f"{list(_FIELDS)}, got {value!r}")
        value = to_dict()
    check_keys(value)
    out = {}
    for key in _FIELDS:
        if key in value and value[key] is not None:
            out[key] = value[key]
        elif base is not None:
            out[key] = getattr(base, key)
        else:
            out[key] = zconfig.get(f"array.{key}")
    return ArrayConfig(**out)


def runtime_keywords(config: Any) -> dict[str, Any]:
    """``read_missing_chunks`` and the sharding settings an array's ``config`` (a mapping,
    an ``ArrayConfig`` or ``None``) gives, for :class:`Array`'s keywords; a key left out is
    ``None`` (the configuration's, when the array is made)."""
    if config is None:
        return dict.fromkeys(RUNTIME_FIELDS)
    if not isinstance(config, Mapping):
        to_dict = getattr(config, "to_dict", None)
        config = to_dict() if callable(to_dict) else {}
    return {key: config.get(key) for key in RUNTIME_FIELDS}
