"""Nodes: what arrays and groups share, and reading and writing node metadata in either
format.

A node at ``path`` is Zarr v3 when ``path/zarr.json`` exists, Zarr v2 when
``path/.zarray`` or ``path/.zgroup`` does (with optional ``path/.zattrs``).
One hierarchy holds one format: creating a v3 node below a v2 group, or the
reverse, is refused rather than silently mixed.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from typing import Any

from zarrfast.codecs.metadata import with_codec_objects
from zarrfast.errors import (
    ArrayNotFoundError,
    ArrayNotGroupError,
    ConcurrentWriteError,
    ContainsArrayAndGroupError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    MetadataValidationError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
    ZarrUserWarning,
)
from zarrfast.hierarchy.array_config import check_rectilinear_allowed
from zarrfast.metadata.gcpause import collector_paused
from zarrfast.metadata.limits import check_json_depth
from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata
from zarrfast.storage import Store
from zarrfast.storage.asynchronous import StorePath

AnyArrayMetadata = ArrayMetadata | ArrayMetadataV2
AnyGroupMetadata = GroupMetadata | GroupMetadataV2
AnyMetadata = AnyArrayMetadata | AnyGroupMetadata

METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs")

__all__ = [
    "AsyncNode",
    "Node",
    "AnyMetadata",
    "array_metadata_from_dict",
    "array_metadata_from_documents",
    "check_documents_unchanged",
    "check_new_node",
    "child_candidates",
    "child_node_names",
    "delete_node_metadata",
    "empty_group_metadata",
    "metadata_from_state",
    "metadata_document_names",
    "node_key",
    "read_metadata_documents",
    "read_children_metadata",
    "read_node_metadata",
    "read_typed_metadata",
    "resolve_store_path",
    "write_metadata",
    "write_new_node",
]


def node_key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _where(path: str) -> str:
    return repr(path or "/")


class OrphanedMemberError(MetadataValidationError, GroupNotFoundError):
    """Consolidated metadata lists a member below a group it has no entry for (say
    ``images/im/0`` without ``images/im``): the metadata is invalid, and no group opens
    from it, as in zarr-python 3.4, whose ``open_group`` raises ``GroupNotFoundError``
    there (spatialdata's test_can_read_sdata_with_reconsolidation expects that class)."""


def orphaned_member(names: Any) -> tuple[str, str] | None:
    """``(member, parent)`` for the first member path among ``names`` (consolidated
    metadata's, relative to its group) whose parent has no entry; ``None`` if none."""
    present = set(names)
    for rel in present:
        parent = rel.rpartition("/")[0]
        if parent and parent not in present:
            return rel, parent
    return None


def parse_group_document(raw: Any, path: str, key: str) -> AnyMetadata:
    """``parse_metadata`` of a ``zarr.json``; invalid consolidated metadata that lists a
    member below a group with no entry raises :class:`OrphanedMemberError` (looked for
    only when the document was refused)."""
    try:
        return parse_metadata(raw, path=path, key=key)
    except MetadataValidationError as e:
        try:
            doc = json.loads(bytes(raw))
            members = doc["consolidated_metadata"]["metadata"]
            orphan = orphaned_member(members) if isinstance(members, dict) else None
        except (ValueError, TypeError, KeyError, RecursionError):
            orphan = None
        if orphan is None:
            raise
        raise OrphanedMemberError(str(e)) from None


def read_node_metadata(store: Store, path: str, zarr_format: int | None = None, *,
                       zarr_json: Any = ...) -> AnyMetadata:
    """The metadata of the node at ``path`` (v3 first, then v2, unless ``zarr_format``).
    ``zarr_json``: the node's ``zarr.json`` if the caller has read it already."""
    if zarr_format not in (None, 2, 3):
        raise MetadataValidationError(
            f"Invalid value for 'zarr_format'. Expected 2, 3, or None. Got {zarr_format!r}.")
    if zarr_format in (None, 3):
        key = node_key(path, "zarr.json")
        raw = store.get(key) if zarr_json is ... else zarr_json
        if raw is not None:
            md = parse_group_document(raw, path, key)
            check_rectilinear_allowed(md, f"array {_where(path)}", reading=True)
            return md
    if zarr_format in (None, 2):
        zarray = store.get(node_key(path, ".zarray"))
        zgroup = store.get(node_key(path, ".zgroup"))
        if zarray is not None and zgroup is not None:
            raise ContainsArrayAndGroupError(
                f"path {_where(path)} in {store!r} has both .zarray and .zgroup"
            )
        if zarray is not None or zgroup is not None:
            zattrs = store.get(node_key(path, ".zattrs"))
            if zarray is not None:
                return ArrayMetadataV2.from_documents(zarray, zattrs, path=path,
                                                      key=node_key(path, ".zarray"))
            return GroupMetadataV2.from_documents(zgroup, zattrs, path=path,
                                                  key=node_key(path, ".zgroup"))
    fmt = "" if zarr_format is None else f" (zarr_format={zarr_format})"
    raise NodeNotFoundError(
        f"no array or group at path {_where(path)} in {store!r}{fmt}: none of "
        f"{', '.join(repr(node_key(path, n)) for n in METADATA_NAMES[:3])} exists"
    )


def read_children_metadata(store: Store, path: str, names: list[str], zarr_format: int,
                           *, pause: bool = False) -> dict[str, AnyMetadata | None]:
    """The metadata of the nodes ``names`` directly below ``path`` (Zarr v``zarr_format``),
    their documents read in one batch (``Store.get_many``: files read on threads, remote
    requests in flight together) and parsed in turn, the arrays alike but for their
    attributes parsed once (errors name the node's document, as
    :func:`read_node_metadata`'s).  ``None`` for a name without a document of that format
    (perhaps no node at all: the caller decides, as one by one).  ``pause``: parse them
    with the garbage collector paused (not while reading them)."""
    paths = [node_key(path, n) for n in names]
    if zarr_format == 3:
        raws = store.get_many([node_key(p, "zarr.json") for p in paths]) if paths else []
    else:
        raws = store.get_many([node_key(p, doc) for p in paths
                               for doc in (".zarray", ".zgroup", ".zattrs")]) if paths else []
    with collector_paused(pause):
        return _parse_children(store, names, paths, raws, zarr_format)


def _parse_children(store: Store, names: list[str], paths: list[str], raws: list[Any],
                    zarr_format: int) -> dict[str, AnyMetadata | None]:
    out: dict[str, AnyMetadata | None] = {}
    parsed: dict[Any, Any] = {}
    if zarr_format == 3:
        for name, child, raw in zip(names, paths, raws, strict=True):
            if raw is None:
                out[name] = None
                continue
            md = parse_metadata(raw, path=child, key=node_key(child, "zarr.json"),
                                parsed=parsed)
            if not getattr(getattr(md, "chunk_grid", None), "is_regular", True):
                check_rectilinear_allowed(md, f"array {_where(child)}", reading=True)
            out[name] = md
        return out
    for i, (name, child) in enumerate(zip(names, paths, strict=True)):
        zarray, zgroup, zattrs = raws[3 * i:3 * i + 3]
        if zarray is not None and zgroup is not None:
            raise ContainsArrayAndGroupError(
                f"path {_where(child)} in {store!r} has both .zarray and .zgroup"
            )
        if zarray is not None:
            out[name] = ArrayMetadataV2.from_documents(zarray, zattrs, path=child,
                                                       key=node_key(child, ".zarray"),
                                                       parsed=parsed)
        elif zgroup is not None:
            out[name] = GroupMetadataV2.from_documents(zgroup, zattrs, path=child,
                                                       key=node_key(child, ".zgroup"))
        else:
            out[name] = None
    return out


def _without_consolidated(store: Store, path: str, zarr_json: Any) -> AnyMetadata:
    """The metadata of the v3 group at ``path`` read without its ``consolidated_metadata``
    (its document ``zarr_json`` if read already)."""
    key = node_key(path, "zarr.json")
    raw = store.get(key) if zarr_json is ... else zarr_json
    if raw is None:  # (deleted since it was read)
        raise GroupNotFoundError(f"no group at path {_where(path)} in {store!r}: "
                                 f"{key!r} does not exist")
    doc = json.loads(bytes(raw))
    doc.pop("consolidated_metadata", None)
    return parse_metadata(json.dumps(doc, allow_nan=True).encode(), path=path, key=key)


def read_typed_metadata(store: Store, path: str, node_type: str,
                        zarr_format: int | None = None, *, zarr_json: Any = ...) -> AnyMetadata:
    """Like :func:`read_node_metadata`, for an array or a group only.  A group whose
    consolidated metadata lists a member below a group with no entry is read without it
    (as zarr-python reads a group with ``use_consolidated=False``): what opening it without
    consolidation, writing its attributes and consolidating it again need; opening it
    from its consolidated metadata raises :class:`OrphanedMemberError`."""
    missing = ArrayNotFoundError if node_type == "array" else GroupNotFoundError
    try:
        md = read_node_metadata(store, path, zarr_format, zarr_json=zarr_json)
    except OrphanedMemberError:
        if node_type != "group":
            raise
        md = _without_consolidated(store, path, zarr_json)
    except NodeNotFoundError as e:
        raise missing(str(e).replace("no array or group", f"no {node_type}", 1)) from None
    if md.node_type != node_type:
        article = {"array": "an array", "group": "a group"}
        raise (ArrayNotGroupError if md.node_type == "array" else NodeTypeValidationError)(
            f"node at path {_where(path)} is {article[md.node_type]}, not {article[node_type]}"
        )
    return md


def existing_node(store: Store, path: str, zarr_format: int | None = None
                  ) -> tuple[int, str] | None:
    """``(zarr_format, node_type)`` of whatever node is at ``path`` (parsing as little as
    possible), or ``None``; with ``zarr_format``, of a node of that format only (a node
    holding both formats' documents answers for either)."""
    raw = store.get(node_key(path, "zarr.json")) if zarr_format != 2 else None
    if raw is not None:
        try:
            doc = json.loads(bytes(raw))
            kind = doc.get("node_type") if isinstance(doc, dict) else None
        except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
            kind = None
        return 3, kind if kind in ("array", "group") else "unknown"
    if zarr_format == 3:
        return None
    if store.exists(node_key(path, ".zarray")):
        return 2, "array"
    if store.exists(node_key(path, ".zgroup")):
        return 2, "group"
    return None


def _check_writable_metadata(path: str, metadata: AnyMetadata) -> None:
    """Before anything is written or deleted: metadata JSON readers can read back, and a
    rectilinear grid only while ``array.rectilinear_chunks`` allows it."""
    check_json_depth(metadata.attributes, where=f"node {_where(path)}: attributes")
    check_rectilinear_allowed(metadata, f"array {_where(path)}", reading=False)


def write_metadata(store: Store, path: str, metadata: AnyMetadata) -> None:
    _check_writable_metadata(path, metadata)
    for name, doc in metadata.store_documents().items():
        store.set(node_key(path, name), doc)


def delete_node_metadata(store: Store, path: str) -> None:
    for name in METADATA_NAMES:
        store.delete(node_key(path, name))


def write_new_node(store: Store, path: str, metadata: AnyMetadata, *, overwrite: bool) -> None:
    """Write a new node's metadata, creating missing parent groups in the same format.

    Raises ``ContainsArrayError``/``ContainsGroupError`` if a node exists (unless
    ``overwrite``) and refuses to put a node of one format below a group of the other.
    """
    _check_writable_metadata(path, metadata)
    # one creation at a time in this process: checking that the path is free and writing
    # the node are then one step for the other threads (another process can still win
    # the race: the caller of an "open or create" then opens its node, see open_group)
    with store.creation_lock():
        _write_new_node(store, path, metadata, overwrite=overwrite)


def _write_new_node(store: Store, path: str, metadata: AnyMetadata, *, overwrite: bool
                    ) -> None:
    fmt = metadata.zarr_format
    parents = check_new_node(store, path, fmt, overwrite=overwrite)
    if overwrite:
        store.delete_dir(path)
        delete_node_metadata(store, path)
    for parent in parents:
        write_metadata(store, parent, empty_group_metadata(fmt))
    write_metadata(store, path, metadata)


def check_new_node(store: Store, path: str, fmt: int, *, overwrite: bool) -> list[str]:
    """What writing a Zarr v``fmt`` node at ``path`` refuses, checked before anything is
    written: a node there (unless ``overwrite``), an array or a group of the other format
    among its parents.  Returns the parent groups that do not exist yet."""
    existing = existing_node(store, path)
    if existing is not None and not overwrite:
        cls = ContainsArrayError if existing[1] == "array" else ContainsGroupError
        raise cls(
            f"{'an array' if existing[1] == 'array' else 'a group'} (Zarr v{existing[0]}) "
            f"already exists at path {_where(path)} in {store!r}; pass overwrite=True "
            f"(or mode='w') to replace it"
        )
    parts = path.split("/") if path else []
    parents = []
    for i in range(len(parts)):
        parent = "/".join(parts[:i])
        node = existing_node(store, parent)
        if node is not None and node[1] == "array":
            raise ContainsArrayError(
                f"A parent of {path!r} is an array - only groups may have child nodes. "
                f"(its parent {parent or '/'!r} is an array)"
            )
        if node is not None and node[0] != fmt:
            raise MetadataValidationError(
                f"cannot create a Zarr v{fmt} node at {path!r}: its parent group "
                f"{parent or '/'!r} is Zarr v{node[0]}; one hierarchy holds one format"
            )
        if node is None:
            parents.append(parent)
    return parents


def empty_group_metadata(fmt: int) -> GroupMetadata | GroupMetadataV2:
    """The metadata of an empty Zarr v``fmt`` group (a parent made implicitly)."""
    return GroupMetadata() if fmt == 3 else GroupMetadataV2()


def metadata_document_names(metadata: AnyMetadata) -> tuple[str, ...]:
    """The keys (below the node's path) holding a node's metadata."""
    return tuple(metadata.store_documents())


def read_metadata_documents(store: Store, path: str, names: tuple[str, ...]
                            ) -> dict[str, bytes | None]:
    """The stored documents ``names`` of the node at ``path`` (``None`` when missing)."""
    out: dict[str, bytes | None] = {}
    for name in names:
        raw = store.get(node_key(path, name))
        out[name] = None if raw is None else bytes(raw)
    return out


def array_metadata_from_documents(store: Store, path: str, docs: dict[str, bytes | None]
                                  ) -> AnyArrayMetadata:
    """Parse what :func:`read_metadata_documents` read for an array (v3: ``zarr.json``;
    v2: ``.zarray`` and ``.zattrs``).  The array must still be there, and be an array:
    :class:`ArrayNotFoundError` or :class:`NodeTypeValidationError` naming it."""
    if "zarr.json" in docs:
        key = node_key(path, "zarr.json")
        raw = docs["zarr.json"]
        md = None if raw is None else parse_metadata(raw, path=path, key=key)
        check_rectilinear_allowed(md, f"array {_where(path)}", reading=True)
    else:
        key = node_key(path, ".zarray")
        raw = docs.get(".zarray")
        md = None if raw is None else ArrayMetadataV2.from_documents(
            raw, docs.get(".zattrs"), path=path, key=key)
        if md is None and store.exists(node_key(path, ".zgroup")):
            md = GroupMetadataV2()
    if md is None:
        raise ArrayNotFoundError(
            f"array {_where(path)} no longer exists in {store!r}: {key!r} is missing "
            f"(deleted by another writer?)")
    if md.node_type != "array":
        raise NodeTypeValidationError(
            f"node at path {_where(path)} is now a group, not an array (replaced by another "
            f"writer?)")
    return md


def array_metadata_from_dict(data: Any, path: str = "") -> AnyArrayMetadata:
    """An array's metadata from its document as a dict (``zarr_format`` 2 or 3; for v2 the
    attributes may ride along under ``attributes``, and a missing ``compressor`` or
    ``filters`` is none, as zarr-python reads them)."""
    where = f"array {_where(path)}"
    if not isinstance(data, dict):
        raise MetadataValidationError(f"{where}: metadata must be a dict, got {data!r}")
    try:  # tuples -> lists and a check that it is JSON, as the document in a store would be
        doc = json.loads(json.dumps(data, allow_nan=True))
    except (TypeError, ValueError) as e:
        raise MetadataValidationError(f"{where}: metadata is not JSON: {e}") from None
    fmt = doc.get("zarr_format")
    if fmt == 3:
        if doc.get("node_type", "array") != "array":
            raise NodeTypeValidationError(f"{where}: node_type is {doc.get('node_type')!r}, "
                                          f"not 'array'")
        return ArrayMetadata.from_dict({"node_type": "array", **doc}, path=path)
    if fmt == 2:
        attributes = doc.pop("attributes", None)
        doc.setdefault("compressor", None)
        doc.setdefault("filters", None)
        doc.setdefault("order", "C")
        return ArrayMetadataV2.from_dict(doc, attributes, path=path)
    raise MetadataValidationError(f"{where}: Invalid zarr_format: {fmt}. Expected 2 or 3")


def resolve_store_path(store_path: Any) -> tuple[Store, str]:
    """``(store, path)`` of a ``StorePath``-like object (``.store`` and ``.path``, zarr-python's
    or zarrfast's), a store, or what :func:`zarrfast.open` takes as a store (path ``""``)."""
    from zarrfast.storage.resolve import make_store

    if (not isinstance(store_path, (str, os.PathLike, Store, dict)) and store_path is not None
            and hasattr(store_path, "store") and hasattr(store_path, "path")):
        path = str(store_path.path or "").strip("/")
        return make_store(store_path.store), path
    return make_store(store_path), ""


def check_documents_unchanged(store: Store, path: str, docs: dict[str, bytes | None],
                              what: str) -> None:
    """Raise :class:`ConcurrentWriteError` when the stored metadata documents of the node
    at ``path`` are no longer ``docs``: another writer (which this process's locks do not
    exclude) changed them since they were read."""
    now = read_metadata_documents(store, path, tuple(docs))
    for name, old in docs.items():
        if now[name] != old:
            raise ConcurrentWriteError(
                f"{what} {_where(path)}: {node_key(path, name)!r} in {store!r} was changed by "
                f"another writer while this one was updating it (an append, resize or "
                f"attribute change from another process?); nothing was written: open it "
                f"again and retry")


def child_candidates(store: Store, path: str) -> list[str]:
    """What the store lists directly below ``path`` but the metadata documents: the names
    that may be nodes."""
    prefix = path + "/" if path else ""
    return [name for name in store.list_dir(prefix)
            if name not in METADATA_NAMES and name != ".zmetadata"]


def child_node_names(store: Store, path: str, zarr_format: int | None = None) -> list[str]:
    """Names of the nodes directly below ``path``: those with a ``zarr.json`` (read in one
    batch, ``Store.get_many``), a ``.zarray`` or a ``.zgroup``.  With ``zarr_format`` (the
    group's), only the nodes of that format: a node of the other one is not a member, as
    in zarr-python, which skips it with a :class:`~zarrfast.errors.ZarrUserWarning`
    (:func:`warn_foreign_member`)."""
    names = child_candidates(store, path)
    paths = [node_key(path, n) for n in names]
    found = store.get_many([node_key(p, "zarr.json") for p in paths]) if names else []
    out = []
    for name, child, raw in zip(names, paths, found, strict=True):
        # (a node may hold both formats' documents, as zarr-python's migrate_v2_to_v3
        # leaves it: a member of a group of either format)
        v2 = raw is None or zarr_format == 2
        if v2:
            v2 = store.exists(node_key(child, ".zarray")) or store.exists(
                node_key(child, ".zgroup"))
        if not (raw is not None or v2):
            continue
        if zarr_format is None or (raw is not None if zarr_format == 3 else v2):
            out.append(name)
        else:
            warn_foreign_member(name)
    return out


def warn_foreign_member(name: str) -> None:
    """Warn that ``name``, a node of the other Zarr format below a group, is skipped as no
    member of it: zarr-python's warning, word for word (a v3 node in a v2 group is
    invisible to zarr-python, and the other way round)."""
    warnings.warn(f"Object at {name} is not recognized as a component of a Zarr hierarchy.",
                  ZarrUserWarning, stacklevel=3)


def metadata_state(metadata: AnyMetadata) -> dict[str, Any]:
    """A picklable description of metadata (see :func:`metadata_from_state`)."""
    return {"zarr_format": metadata.zarr_format, "doc": metadata.to_json()}


def metadata_from_state(state: dict[str, Any], path: str) -> AnyMetadata:
    raw = state["doc"]
    if state["zarr_format"] == 3:
        return parse_metadata(raw, path=path, key="<pickle>")
    doc = json.loads(raw)
    if "zarray" in doc:
        return ArrayMetadataV2.from_dict(doc["zarray"], doc["zattrs"], path=path)
    return GroupMetadataV2(attributes=doc["zattrs"],
                           extra={k: v for k, v in doc["zgroup"].items() if k != "zarr_format"})


class AsyncNode:
    """Base of :class:`~zarrfast.AsyncArray` and :class:`~zarrfast.AsyncGroup`
    (:mod:`zarrfast.hierarchy.asynchronous`): a view with coroutine methods over one
    synchronous node, ``_node``, whose state it shares.  Each subclass registers itself
    for its node kind, so that ``Array.async_array`` can make one without this module
    (or ``array.py``) importing the module that builds on them."""

    __slots__ = ("_node",)

    #: node kind ("array", "group") -> the view class registered for it
    _views: dict[str, type[AsyncNode]] = {}  # noqa: RUF012 - a registry, shared on purpose

    #: the class of node a subclass views (Array, Group)
    _node_type: type = object

    def __init_subclass__(cls, *, kind: str | None = None, node_type: type | None = None,
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind is not None:
            AsyncNode._views[kind] = cls
        if node_type is not None:
            cls._node_type = node_type

    @classmethod
    def _of(cls, node: Any) -> Any:
        """The view over ``node`` (a node of this class's kind)."""
        if not isinstance(node, cls._node_type):
            raise ZarrfastError(f"{cls.__name__} views a zarrfast {cls._node_type.__name__}, "
                                f"got {type(node).__name__} {node!r}")
        self = cls.__new__(cls)
        self._node = node
        return self

    def __getstate__(self) -> Any:
        return self._node

    def __setstate__(self, node: Any) -> None:
        self._node = node
        node.__dict__["_async_view_"] = self  # (an unpickled node's one view)

    # what every view reads off its node (no I/O)
    @property
    def metadata(self) -> Any:
        """The node's metadata, as the synchronous node's ``metadata`` gives it."""
        return self._node.metadata

    @property
    def store(self) -> Any:
        """The [zarrfast.storage.Store][] holding the node."""
        return self._node.store

    @property
    def store_path(self) -> StorePath:
        """The node's store and path, as a ``StorePath`` (zarr-python's attribute)."""
        return self._node.store_path

    @property
    def path(self) -> str:
        """Path of the node in its store (``""`` for the root)."""
        return self._node.path

    @property
    def name(self) -> str:
        """``"/" + path``, as in zarr-python."""
        return self._node.name

    @property
    def basename(self) -> str:
        """The last component of the node's path (``""`` for the root)."""
        return self._node.basename

    @property
    def attrs(self) -> Any:
        """The node's user attributes, a mutable mapping whose changes are stored at once.

        The synchronous node's ``attrs`` (no coroutine involved).
        """
        return self._node.attrs


class _NodeType(type):
    """``Array(async_array)`` / ``Group(async_group)``: the node the view is over (one
    state, as zarr-python's ``Array`` wraps its ``AsyncArray``).  Any other call makes
    a node as usual."""

    @property
    def __signature__(cls) -> inspect.Signature:
        """The signature of the class's ``__init__`` (less ``self``), which ``help()`` and
        :func:`inspect.signature` show instead of ``__call__``'s ``(*args, **kwargs)``."""
        sig = inspect.signature(cls.__init__)
        return sig.replace(parameters=list(sig.parameters.values())[1:],
                           return_annotation=inspect.Signature.empty)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], AsyncNode):
            node = args[0]._node
            if len(args) > 1 or kwargs or not isinstance(node, cls):
                what = {"array": "an array", "group": "a group"}.get(node._kind, node._kind)
                raise ZarrfastError(
                    f"{cls.__name__}(view) takes the asynchronous view of one "
                    f"{cls.__name__} and nothing else; got the view of {what} "
                    f"{node.name!r}"
                    + (" with more arguments" if len(args) > 1 or kwargs else ""))
            return node
        return super().__call__(*args, **kwargs)


class Node(metaclass=_NodeType):
    """Base of :class:`~zarrfast.Array` and :class:`~zarrfast.Group`."""

    _kind = "node"

    def _async_view(self) -> Any:
        """This node's asynchronous view (made once: ``a.async_array is a.async_array``)."""
        view = self.__dict__.get("_async_view_")
        if view is None:
            cls = AsyncNode._views.get(self._kind)
            if cls is None:  # pragma: no cover - zarrfast/hierarchy/__init__ registers them
                raise ZarrfastError(f"no asynchronous view for a {self._kind}: import "
                                    f"zarrfast.hierarchy.asynchronous")
            view = self.__dict__["_async_view_"] = cls._of(self)  # type: ignore[attr-defined]
        return view

    @property
    def store_path(self) -> StorePath:
        """This node's store and path, as a [zarrfast.storage.StorePath][]."""
        return StorePath(self._store, self._path)

    def __init__(self, store: Store, path: str, metadata: Any, read_only: bool | None) -> None:
        self._store = store
        self._path = path
        self._metadata = metadata
        self._read_only = store.read_only if read_only is None else bool(read_only)

    @property
    def store(self) -> Store:
        """The [zarrfast.storage.Store][] holding this node."""
        return self._store

    @property
    def path(self) -> str:
        """Path of the node in its store (``""`` for the root)."""
        return self._path

    @property
    def name(self) -> str:
        """``"/" + path``, as in zarr-python."""
        return "/" + self._path

    @property
    def basename(self) -> str:
        """The last component of the node's path (``""`` for the root).

        Examples
        --------
        >>> root = zarrfast.open_group(store={}, mode="w")
        >>> a = root.create_array("sub/temperature", shape=(2,), dtype="f4")
        >>> a.path, a.name, a.basename
        ('sub/temperature', '/sub/temperature', 'temperature')
        """
        return self._path.rsplit("/", 1)[-1]

    @property
    def metadata(self) -> Any:
        """The node's metadata, as zarr-python's (codecs as codec objects).

        Made once for each metadata this node holds: for a Zarr v3 node,
        ``ArrayV3Metadata`` or ``GroupMetadata`` (zarr-python's names), for a v2 node
        ``ArrayMetadataV2`` or ``GroupMetadataV2``.
        """
        md = self._metadata
        # (a group's view of its consolidated members gives it zarr-python's
        # consolidated_metadata: a v2 group's, a v3 member's of a consolidated group)
        view = getattr(self, "_consolidated", None)
        shown = self.__dict__.get("_metadata_shown_")
        if shown is None or shown[0] is not md or shown[1] is not view:
            shown = self.__dict__["_metadata_shown_"] = (md, view,
                                                         with_codec_objects(md, view))
        return shown[2]

    @property
    def read_only(self) -> bool:
        """Whether writes through this node are refused (a ``ReadOnlyError``).

        True when opened with mode ``'r'``, from a read-only store, or with
        ``read_only=True``.
        """
        return self._read_only

    @property
    def zarr_format(self) -> int:
        """The Zarr format of the node's metadata: ``2`` or ``3``."""
        return self._metadata.zarr_format

    def _check_writable(self) -> None:
        if self._read_only:
            raise ReadOnlyError(f"{self._kind} {self.name!r} is read-only (opened with mode 'r')")
