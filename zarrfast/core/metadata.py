"""``zarr.core.metadata``: the array metadata classes (zarr-python's names): Zarr v3's, whose
``codecs`` are codec objects (:mod:`zarrfast.codecs.metadata`), and Zarr v2's (pydantic-zarr
tests ``isinstance(array.metadata, ArrayV2Metadata)``)."""

from zarrfast.codecs.metadata import ArrayV3Metadata
from zarrfast.metadata.v2 import ArrayMetadataV2 as ArrayV2Metadata

__all__ = ["ArrayV2Metadata", "ArrayV3Metadata"]
