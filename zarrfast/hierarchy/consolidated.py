"""Consolidated metadata: a whole hierarchy's metadata in one stored document.

* Zarr v2: ``.zmetadata`` next to the group's ``.zgroup``::

      {"zarr_consolidated_format": 1,
       "metadata": {".zgroup": {...}, ".zattrs": {...}, "a/.zarray": {...}, ...}}

* Zarr v3 (as zarr-python writes it): the group's ``zarr.json`` holds
  ``"consolidated_metadata": {"kind": "inline", "must_understand": false,
  "metadata": {"a": {<a's zarr.json>}, "a/b": {...}}}``.

Opening a consolidated group reads that one key; members are then looked up
in it, not in the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from zarrfast.errors import MetadataError, MetadataValidationError
from zarrfast.hierarchy.node import (
    AnyMetadata,
    OrphanedMemberError,
    child_node_names,
    node_key,
    orphaned_member,
    parse_group_document,
    read_node_metadata,
    write_metadata,
)
from zarrfast.metadata.gcpause import collector_paused
from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from zarrfast.metadata.v3 import (
    LARGE_DOCUMENT,
    ConsolidatedMetadata,
    GroupMetadata,
    check_member_path,
)
from zarrfast.metadata.v3 import _load_json as _load  # JSON errors name the key
from zarrfast.storage import Store

__all__ = ["ConsolidatedView", "read_consolidated", "store_v2_consolidated",
           "write_consolidated"]


class _Members:
    """Every member of a consolidated hierarchy by path relative to its root, and (made
    once, on first use) the sorted names of each node's children."""

    __slots__ = ("children", "metadata")

    def __init__(self, metadata: dict[str, AnyMetadata]) -> None:
        self.metadata = metadata
        self.children: dict[str, list[str]] | None = None

    def children_of(self, parent: str) -> list[str]:
        children = self.children
        if children is None:  # one pass over the members, whatever the depth
            children = {}
            for rel in self.metadata:
                up, _, name = rel.rpartition("/")
                children.setdefault(up, []).append(name)
            for names in children.values():
                names.sort()
            self.children = children
        return children.get(parent, [])


class ConsolidatedView:
    """The consolidated metadata as one group below its root sees it: paths relative to
    that group.  The views of the groups below share one dict of the members and one
    index of children, so that looking up a member, listing a group's children and
    descending into a member group each take time independent of the hierarchy's size
    (listing every member of a hierarchy: linear in its members)."""

    __slots__ = ("_members", "_prefix")

    def __init__(self, members: Mapping[str, AnyMetadata] | ConsolidatedView,
                 prefix: str = "") -> None:
        if isinstance(members, ConsolidatedView):
            self._members: _Members = members._members
            self._prefix: str = members._prefix + prefix
        else:
            self._members = _Members(dict(members))
            self._prefix = prefix

    def get(self, rel: str) -> AnyMetadata | None:
        return self._members.metadata.get(self._prefix + rel)

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self._prefix + rel in self._members.metadata

    def child_names(self) -> list[str]:
        """The sorted names of this group's direct members."""
        return list(self._members.children_of(self._prefix[:-1]))

    def descendants(self) -> list[AnyMetadata]:
        """The metadata of every node below this view's group (all depths)."""
        prefix = self._prefix
        return [md for key, md in self._members.metadata.items()
                if key.startswith(prefix) and key != prefix]

    def members(self) -> dict[str, AnyMetadata]:
        """Every node below this view's group (all depths) by path relative to it."""
        prefix = self._prefix
        return {key[len(prefix):]: md for key, md in self._members.metadata.items()
                if key.startswith(prefix) and key != prefix}

    def sub(self, rel: str) -> ConsolidatedView:
        """The view of the member group at ``rel`` (relative to this one)."""
        return ConsolidatedView(self, rel + "/")

    def forget(self, rel: str) -> None:
        """Drop the member at ``rel`` (relative to this view) and the nodes below it, for
        every view sharing these members (a parent's, a subgroup's): it was deleted."""
        key = self._prefix + rel
        metadata = self._members.metadata
        for name in [k for k in metadata if k == key or k.startswith(key + "/")]:
            del metadata[name]
        self._members.children = None  # (made again on next use)



def _redump(value: Any, key: str, entry: str) -> bytes:
    try:
        return json.dumps(value, allow_nan=True).encode()
    except (ValueError, TypeError, RecursionError) as e:
        raise MetadataError(f"{key}: entry {entry!r} cannot be read ({e})") from None


def _v2_members(doc: Any, path: str, key: str) -> tuple[GroupMetadataV2, dict[str, AnyMetadata]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        raise MetadataValidationError(f"{key}: expected an object with a 'metadata' object")
    meta = doc["metadata"]
    if ".zgroup" not in meta:
        raise MetadataValidationError(f"{key}: the consolidated metadata has no '.zgroup'")
    group = GroupMetadataV2.from_documents(_redump(meta[".zgroup"], key, ".zgroup"),
                                           _redump(meta.get(".zattrs", {}), key, ".zattrs"),
                                           path=path, key=key + "[.zgroup]")
    members: dict[str, AnyMetadata] = {}
    parsed: dict[Any, Any] = {}  # (arrays alike but for their attributes: parsed once)
    for entry in meta:
        rel, sep, name = entry.rpartition("/")
        if name in (".zarray", ".zgroup", ".zattrs") and (sep or rel):
            check_member_path(rel, key, "key")
    for entry, value in meta.items():
        rel, _, name = entry.rpartition("/")
        if not rel or name not in (".zarray", ".zgroup"):
            continue
        if not isinstance(value, dict):
            raise MetadataValidationError(
                f"{key}: consolidated entry {entry!r} must be an object, got {value!r}"
            )
        attrs = _redump(meta.get(f"{rel}/.zattrs", {}), key, f"{rel}/.zattrs")
        child = node_key(path, rel)
        raw = _redump(value, key, entry)
        if name == ".zarray":
            members[rel] = ArrayMetadataV2.from_documents(raw, attrs, path=child,
                                                          key=f"{key}[{entry}]", parsed=parsed)
        else:
            members[rel] = GroupMetadataV2.from_documents(raw, attrs, path=child,
                                                          key=f"{key}[{entry}]")
    orphan = orphaned_member(members)
    if orphan is not None:  # (as for Zarr v3's; zarr-python opens no group from it either)
        raise OrphanedMemberError(
            f"{key}: consolidated metadata member {orphan[0]!r} is below {orphan[1]!r}, "
            f"which has no entry; the entries must be the whole hierarchy below the group")
    return group, members


def read_consolidated(store: Store, path: str, zarr_format: int | None, *,
                      root_doc: Any = ...) -> tuple[AnyMetadata, dict[str, AnyMetadata]] | None:
    """``(group metadata, {relative path: metadata})`` or ``None`` without consolidation.
    ``root_doc``: the group's ``zarr.json`` if the caller has already read it (``None``:
    known to be missing)."""
    if zarr_format in (None, 3):
        key = node_key(path, "zarr.json")
        raw = store.get(key) if root_doc is ... else root_doc
        if raw is not None:
            md = parse_group_document(raw, path, key)
            cm = md.consolidated_metadata if isinstance(md, GroupMetadata) else None
            if cm is None:
                return None
            # (each group with the nodes below it, as zarr-python's Group['a/b'] has them;
            # the member paths were checked as the document was parsed)
            return md, cm.members()
    if zarr_format in (None, 2):
        key = node_key(path, ".zmetadata")
        raw = store.get(key)
        if raw is not None:
            with collector_paused(len(raw) > LARGE_DOCUMENT):
                return _v2_members(_load(raw, key), path, key)
    return None


def _walk(store: Store, path: str, zarr_format: int) -> dict[str, AnyMetadata]:
    out: dict[str, AnyMetadata] = {}

    def visit(p: str, rel: str) -> None:
        for name in child_node_names(store, p, zarr_format):  # (skips the other's)
            child = node_key(p, name)
            md = read_node_metadata(store, child, zarr_format)
            key = f"{rel}/{name}" if rel else name
            out[key] = md
            if md.node_type == "group":
                visit(child, key)

    visit(path, "")
    return out


def write_consolidated(store: Store, path: str, group: AnyMetadata) -> None:
    members = _walk(store, path, group.zarr_format)
    if group.zarr_format == 3:
        # (each group below gets the nodes below it, an empty set at the leaves: as
        # zarr-python, whose JSON has them flat, each group with an empty one)
        cm = ConsolidatedMetadata.from_flat(dict(sorted(members.items())))
        write_metadata(store, path, replace(group, consolidated_metadata=cm))
        return
    store.set(node_key(path, ".zmetadata"), _v2_document(group, members))


def _v2_document(group: AnyMetadata, members: Mapping[str, AnyMetadata]) -> bytes:
    meta: dict[str, Any] = {".zgroup": group.to_dict(), ".zattrs": group.attributes}
    for rel, md in sorted(members.items()):
        meta[f"{rel}/.zarray" if md.node_type == "array" else f"{rel}/.zgroup"] = md.to_dict()
        meta[f"{rel}/.zattrs"] = md.attributes
    doc = {"zarr_consolidated_format": 1, "metadata": meta}
    return json.dumps(doc, indent=2, allow_nan=True).encode()


def store_v2_consolidated(store: Store, path: str, group: AnyMetadata,
                          view: ConsolidatedView, removed: str | None = None) -> None:
    """Store the ``.zmetadata`` of the Zarr v2 group at ``path`` (metadata ``group``) opened
    from consolidated metadata, after a change to it (its attributes; ``removed``, a
    member deleted, its path relative to the group): the ``.zmetadata`` in the store now,
    its group entries replaced and the removed member's entries dropped, so that what
    another writer consolidated since this group was opened (new members, new shapes)
    is kept (none is made where there is none: the group was opened from an ancestor's);
    the group's ``view`` when the stored one cannot be read.  Called after the group's
    own documents are stored: interrupted between them, ``.zattrs`` holds the change (the
    consolidated copy is the one behind, which re-consolidating mends)."""
    key = node_key(path, ".zmetadata")
    raw = store.get(key)
    try:
        doc = None if raw is None else json.loads(bytes(raw))
    except (ValueError, RecursionError):
        doc = None
    if raw is None:
        # (opened from an ancestor's consolidated metadata: a .zmetadata made here would
        # shadow every later consolidation of the ancestor for readers of this group)
        return
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(meta, dict):
        store.set(key, _v2_document(group, view.members()))
        return
    assert doc is not None
    meta[".zgroup"] = group.to_dict()
    meta[".zattrs"] = group.attributes
    if removed:
        for entry in [k for k in meta if k.startswith(removed + "/")]:
            del meta[entry]
    store.set(key, json.dumps(doc, indent=2, allow_nan=True).encode())
