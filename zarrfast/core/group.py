"""``zarr.core.group``: the group classes and group metadata."""

from zarrfast.hierarchy.asynchronous import AsyncGroup
from zarrfast.hierarchy.group import Group
from zarrfast.metadata.v3 import ConsolidatedMetadata, GroupMetadata

__all__ = ["AsyncGroup", "ConsolidatedMetadata", "Group", "GroupMetadata"]
