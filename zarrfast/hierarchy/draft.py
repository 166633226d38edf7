"""Opening (read-only) hierarchies in the pre-final Zarr v3 layouts.

See :mod:`zarrfast.metadata.draft` for the layouts.  :func:`detect_draft` tells
whether a store holds one; :func:`open_draft` opens a node of it as a read-only
:class:`~zarrfast.Array` (reading chunks from ``data/...`` through its
``chunk_path``) or a :class:`DraftGroup`.  :func:`zarrfast.convert` rewrites a
draft hierarchy as final Zarr v3 in another store (chunk bytes are copied
unchanged, only their keys change).
"""

from __future__ import annotations

from typing import Any

from zarrfast.errors import (
    ArrayNotFoundError,
    GroupNotFoundError,
    MemberNotFoundError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group
from zarrfast.hierarchy.info import store_path_str
from zarrfast.metadata.draft import DraftHierarchy, detect
from zarrfast.metadata.paths import normalize_path
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata
from zarrfast.storage import Store
from zarrfast.storage.resolve import StoreLike, make_store

__all__ = ["DraftArray", "DraftGroup", "detect_draft", "open_draft"]


def detect_draft(store: StoreLike) -> DraftHierarchy | None:
    """A :class:`DraftHierarchy` when ``store``'s root ``zarr.json`` is a draft entry
    point, else ``None`` (final v3, v2, empty).  Raises a ``MetadataError`` naming
    ``zarr.json`` when it is a draft entry point that cannot be read (unsupported
    ``metadata_encoding``, an extension that must be understood, mixed layouts)."""
    s = make_store(store)
    entry = detect(s)
    return None if entry is None else DraftHierarchy(s, entry)


class DraftArray(Array):
    """A read-only array of a draft hierarchy (an ordinary :class:`~zarrfast.Array`
    whose chunks live below ``data/``); pickles by reopening."""

    def __init__(self, hierarchy: DraftHierarchy, path: str, metadata: ArrayMetadata, *,
                 order: str = "C") -> None:
        self._hierarchy = hierarchy
        super().__init__(hierarchy.store, path, metadata, read_only=True, order=order,
                         chunk_path=hierarchy.chunk_path(path))

    @property
    def draft_layout(self) -> str:
        """``"draft-2022"`` or ``"zarrita"``."""
        return self._hierarchy.layout

    def _check_writable(self) -> None:
        raise ReadOnlyError(
            f"array {self.name!r} is in a draft ({self.draft_layout}) Zarr v3 hierarchy, "
            f"which zarrfast only reads; convert it with zarrfast.convert"
        )

    def __repr__(self) -> str:
        return (f"<Array {store_path_str(self._store, self._path)} shape={self.shape} "
                f"dtype={self.dtype} ({self.draft_layout}, read-only)>")

    def __reduce__(self) -> Any:
        return (_reopen, (self._store, self._path, "array", self._order))


class DraftGroup(Group):
    """A read-only group of a draft hierarchy; members are listed and read through a
    :class:`DraftHierarchy` (implicit groups included)."""

    def __init__(self, hierarchy: DraftHierarchy, path: str,
                 metadata: GroupMetadata | None = None) -> None:
        self._hierarchy = hierarchy
        super().__init__(hierarchy.store, path, metadata or GroupMetadata(), read_only=True)

    @property
    def draft_layout(self) -> str:
        return self._hierarchy.layout

    @property
    def hierarchy(self) -> DraftHierarchy:
        return self._hierarchy

    def _check_writable(self) -> None:
        raise ReadOnlyError(
            f"group {self.name!r} is in a draft ({self.draft_layout}) Zarr v3 hierarchy, "
            f"which zarrfast only reads; convert it with zarrfast.convert"
        )

    def __repr__(self) -> str:
        return (f"<Group {store_path_str(self._store, self._path)} ({self.draft_layout}, "
                f"read-only)>")

    def __reduce__(self) -> Any:
        return (_reopen, (self._store, self._path, "group", "C"))

    def _child_names(self) -> list[str]:
        return self._hierarchy.children(self._path)

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        try:
            return _node(self._hierarchy, path)
        except NodeNotFoundError as e:
            raise MemberNotFoundError(
                f"group {self.name!r} has no member {name!r}: {e}"
            ) from None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            path = self._child_path(name)
        except ZarrfastError:
            return False
        return path != self._path and self._hierarchy.node_type(path) is not None


def _node(hierarchy: DraftHierarchy, path: str, order: str = "C") -> DraftArray | DraftGroup:
    md, _ = hierarchy.node(path)
    if isinstance(md, ArrayMetadata):
        return DraftArray(hierarchy, path, md, order=order)
    return DraftGroup(hierarchy, path, md)


def _reopen(store: Store, path: str, node_type: str, order: str) -> DraftArray | DraftGroup:
    return open_draft(store, path, "r", node_type=node_type, order=order)


def open_draft(
    store: StoreLike,
    path: str | None = "",
    mode: str = "r",
    *,
    node_type: str | None = None,
    hierarchy: DraftHierarchy | None = None,
    order: str = "C",
) -> DraftArray | DraftGroup:
    """Open the node at ``path`` of the draft hierarchy in ``store``, read-only.

    Parameters
    ----------
    mode
        ``"r"``, ``"r+"`` or ``"a"`` all open read-only (writes raise
        :class:`~zarrfast.errors.ReadOnlyError`); ``"w"``/``"w-"`` would replace the
        hierarchy and are refused here.
    node_type
        ``"array"`` or ``"group"`` to insist on one (as ``open_array`` /
        ``open_group``): a missing node is then an ``ArrayNotFoundError`` /
        ``GroupNotFoundError`` and the other kind a ``NodeTypeValidationError``.
    hierarchy
        The :class:`DraftHierarchy` from :func:`detect_draft`, to skip reading
        ``zarr.json`` again.
    order
        Memory order of arrays returned by reads, as for ``open_array``.
    """
    if mode not in ("r", "r+", "a"):
        raise ReadOnlyError(
            f"cannot open a draft Zarr v3 hierarchy with mode {mode!r}: zarrfast reads the "
            f"draft layouts but does not write them"
        )
    if node_type not in (None, "array", "group"):
        raise ZarrfastError(f"node_type must be 'array', 'group' or None, got {node_type!r}")
    if hierarchy is None:
        s = make_store(store)
        hierarchy = detect_draft(s)
        if hierarchy is None:
            raise NodeNotFoundError(
                f"{s!r} is not a draft Zarr v3 hierarchy: its zarr.json is missing or has no "
                f"draft zarr_format"
            )
    p = normalize_path(path)
    try:
        node = _node(hierarchy, p, order)
    except NodeNotFoundError as e:
        if node_type == "array":
            raise ArrayNotFoundError(str(e).replace("no array or group", "no array", 1)) from None
        if node_type == "group":
            raise GroupNotFoundError(str(e).replace("no array or group", "no group", 1)) from None
        raise
    if node_type is not None:
        kind = "array" if isinstance(node, Array) else "group"
        if kind != node_type:
            article = {"array": "an array", "group": "a group"}
            raise NodeTypeValidationError(
                f"node at path {('/' + p)!r} of draft hierarchy {hierarchy.store!r} is "
                f"{article[kind]}, not {article[node_type]}"
            )
    return node


# -- conversion ------------------------------------------------------------------------
