"""The runtime configuration of one :class:`~zarrfast.Array` (zarr-python's ``ArrayConfig``):
the memory order of what it reads and whether it stores chunks equal to the fill value.

Unlike the metadata these are not stored: they belong to the ``Array`` object, come from
``zarrfast.config`` (``array.order``, ``array.write_empty_chunks``) where not given, and
:meth:`Array.with_config` gives the same array with others::

    a.config                      # ArrayConfig(order='C', write_empty_chunks=False)
    b = a.with_config({"write_empty_chunks": True})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zarrfast import config as zconfig
from zarrfast.errors import ZarrfastError

__all__ = ["ArrayConfig", "parse_array_config"]

_FIELDS = ("order", "write_empty_chunks")


@dataclass(frozen=True)
class ArrayConfig:
    """``order`` (``"C"`` or ``"F"``) and ``write_empty_chunks`` (bool)."""

    order: str
    write_empty_chunks: bool

    def __post_init__(self) -> None:
        if self.order not in ("C", "F"):
            raise ZarrfastError(f"array config: order must be 'C' or 'F', got {self.order!r}")
        if not isinstance(self.write_empty_chunks, bool):
            raise ZarrfastError(f"array config: write_empty_chunks must be a bool, got "
                                f"{self.write_empty_chunks!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArrayConfig:
        """The keys given; the others from ``zarrfast.config``'s ``array.*``."""
        return parse_array_config(data)

    def to_dict(self) -> dict[str, Any]:
        return {"order": self.order, "write_empty_chunks": self.write_empty_chunks}


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
    unknown = sorted(set(value) - set(_FIELDS))
    if unknown:
        raise ZarrfastError(f"unknown array config keys {unknown}; the keys are {list(_FIELDS)}")
    out = {}
    for key in _FIELDS:
        if key in value and value[key] is not None:
            out[key] = value[key]
        elif base is not None:
            out[key] = getattr(base, key)
        else:
            out[key] = zconfig.get(f"array.{key}")
    return ArrayConfig(**out)
