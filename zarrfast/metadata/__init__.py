"""Metadata documents: Zarr v3 (``zarr.json``) and data types."""

from zarrfast.metadata.dtype import DataType, data_type_from_numpy, parse_data_type
from zarrfast.metadata.v3 import ArrayMetadata, ArrayV3Metadata, GroupMetadata, parse_metadata

__all__ = [
    "ArrayMetadata",
    "ArrayV3Metadata",
    "DataType",
    "GroupMetadata",
    "data_type_from_numpy",
    "parse_data_type",
    "parse_metadata",
]
