"""``zarr.core.metadata``: the array metadata class of Zarr v3 (zarr-python's name)."""

from zarrfast.metadata.v3 import ArrayV3Metadata

__all__ = ["ArrayV3Metadata"]
