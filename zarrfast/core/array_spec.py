"""``zarr.core.array_spec``: ``ArrayConfigParams``, the keys of an array's runtime
configuration (``config=`` of ``create_array`` and ``open_array``), as zarr-python names it."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = ["ArrayConfigParams"]


class ArrayConfigParams(TypedDict):
    """An array's runtime configuration, every key optional (zarr-python's TypedDict).

    Keys left out take the global configuration's value (``zarrfast.config``).
    """

    order: NotRequired[Literal["C", "F"]]
    write_empty_chunks: NotRequired[bool]
    read_missing_chunks: NotRequired[bool]
