"""``zarr.core.group``: the group classes and group metadata (arrays' codecs in consolidated
metadata as codec objects: :mod:`zarrfast.codecs.metadata`)."""

from zarrfast.codecs.metadata import ConsolidatedMetadata, GroupMetadata
from zarrfast.hierarchy.asynchronous import AsyncGroup
from zarrfast.hierarchy.group import Group

__all__ = ["AsyncGroup", "ConsolidatedMetadata", "Group", "GroupMetadata"]
