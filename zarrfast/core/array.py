"""``zarr.core.array``: the array classes."""

from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.asynchronous import AsyncArray

__all__ = ["Array", "AsyncArray"]
