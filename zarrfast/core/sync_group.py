"""``zarr.core.sync_group``: find the node at a path of a store (zarr-python's ``get_node``).

pydantic-zarr (and so ome-zarr-models and spatialdata) reads a stored hierarchy with
``get_node(store, path, zarr_format)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_node"]


def get_node(store: Any, path: str, zarr_format: int) -> Any:
    """The array or group stored at ``path`` of ``store``, in Zarr format ``zarr_format``.

    Parameters
    ----------
    store : Store or StoreLike
        The store to read from.
    path : str
        The node's path in the store (``""``: its root).
    zarr_format : {2, 3}
        The Zarr format of the node.

    Returns
    -------
    zarrfast.Array or zarrfast.Group
        The node, read-only when the store is.

    Raises
    ------
    zarrfast.errors.NodeNotFoundError
        When no node of that format is there.

    Examples
    --------
    >>> from zarrfast.core.sync_group import get_node
    >>> store = zarrfast.MemoryStore()
    >>> _ = zarrfast.create_group(store).create_array("a", shape=(2,), dtype="i1")
    >>> get_node(store, "a", zarr_format=3).shape
    (2,)
    """
    from zarrfast.api import open as open_node

    if zarr_format not in (2, 3):
        raise ValueError(f"Unexpected zarr format: {zarr_format!r} (2 or 3)")
    mode = "r" if getattr(store, "read_only", False) else "r+"
    return open_node(store, path=path, mode=mode, zarr_format=zarr_format)
