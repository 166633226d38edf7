"""``zarr.core.metadata``: the array metadata class of Zarr v3 (zarr-python's name), whose
``codecs`` are codec objects (:mod:`zarrfast.codecs.metadata`)."""

from zarrfast.codecs.metadata import ArrayV3Metadata

__all__ = ["ArrayV3Metadata"]
