"""Nodes of a Zarr hierarchy: :class:`Array`, :class:`Group`, their attributes, metadata
documents in a store, consolidated metadata and the draft layouts' nodes."""
