"""Nodes of a Zarr hierarchy: :class:`Array`, :class:`Group`, their attributes, metadata
documents in a store, consolidated metadata and the draft layouts' nodes, and their
asynchronous views :class:`AsyncArray` / :class:`AsyncGroup`."""

# registers the asynchronous views, so that every Array / Group can make its own
# (array.py and group.py cannot import the module that builds on them)
from zarrfast.hierarchy import asynchronous as _asynchronous  # noqa: F401
