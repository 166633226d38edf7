"""Metadata documents: Zarr v3 (``zarr.json``) and data types."""

from zarrfast.metadata.dtype import DataType, data_type_from_numpy, parse_data_type
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata

__all__ = [
    "ArrayMetadata",
    "DataType",
    "GroupMetadata",
    "data_type_from_numpy",
    "parse_data_type",
    "parse_metadata",
]
