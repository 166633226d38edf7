"""The :class:`Group`: a node holding arrays and groups (Zarr v3 or v2)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from zarrfast.errors import (
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    IncompatibleMemberError,
    IncompatibleNodeError,
    InvalidNodeNameError,
    MemberNotFoundError,
    NodeNotFoundError,
    ZarrDeprecationWarning,
    ZarrfastError,
    add_context,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.attributes import Attributes
from zarrfast.hierarchy.consolidated import ConsolidatedView
from zarrfast.hierarchy.create import create_array_at
from zarrfast.hierarchy.info import GroupInfo, TreeRepr, group_info, render_tree, store_path_str
from zarrfast.hierarchy.keywords import check_keywords, keyword_names
from zarrfast.hierarchy.node import (
    AnyMetadata,
    Node,
    child_node_names,
    delete_node_metadata,
    existing_node,
    metadata_from_state,
    metadata_state,
    read_node_metadata,
    read_typed_metadata,
    write_metadata,
    write_new_node,
)
from zarrfast.metadata.paths import join_path, normalize_path
from zarrfast.metadata.v2 import GroupMetadataV2
from zarrfast.metadata.v3 import GroupMetadata
from zarrfast.storage import Store
from zarrfast.storage.asynchronous import StorePath, store_path_of
from zarrfast.storage.resolve import StoreLike

__all__ = ["Group"]


def node_from_metadata(store: Store, path: str, md: AnyMetadata, read_only: bool,
                       consolidated: Mapping[str, AnyMetadata] | ConsolidatedView | None = None
                       ) -> Array | Group:
    if md.node_type == "array":
        return Array(store, path, md, read_only=read_only)
    return Group(store, path, md, read_only=read_only, consolidated=consolidated)


class Group(Node):
    """A Zarr group: a mapping of member names to arrays and groups.

    A group opened from consolidated metadata (see
    :func:`zarrfast.open_consolidated`) answers member lookups and listings from
    that metadata, without reading the store; creating or deleting members
    drops the consolidated view.
    """

    _kind = "group"

    def __init__(self, store: Store, path: str, metadata: GroupMetadata | GroupMetadataV2, *,
                 read_only: bool | None = None,
                 consolidated: Mapping[str, AnyMetadata] | ConsolidatedView | None = None
                 ) -> None:
        super().__init__(store, path, metadata, read_only)
        #: metadata of every node below this group, by path relative to it (a view that
        #: the member groups share: descending into one copies nothing)
        self._consolidated = (ConsolidatedView(consolidated) if consolidated is not None
                              else None)

    @classmethod
    def from_store(cls, store: StoreLike | StorePath, *, attributes: Mapping[str, Any] | None = None,
                   zarr_format: int = 3, overwrite: bool = False) -> Group:
        """A new group at ``store``: anything :func:`~zarrfast.storage.make_store` takes
        (the root of it), or a :class:`~zarrfast.storage.StorePath`.  An existing node
        there is an error unless ``overwrite``."""
        if zarr_format not in (2, 3):
            raise ZarrfastError(f"Group.from_store: zarr_format must be 2 or 3, got "
                                f"{zarr_format!r}")
        sp = store_path_of(store)
        path = normalize_path(sp.path)
        attrs = dict(attributes or {})
        md = GroupMetadataV2(attributes=attrs) if zarr_format == 2 else GroupMetadata(
            attributes=attrs)
        write_new_node(sp.store, path, md, overwrite=overwrite)
        return cls(sp.store, path, md, read_only=False)

    @property
    def async_group(self) -> Any:
        """This group's :class:`~zarrfast.AsyncGroup` (coroutine methods, same state);
        ``Group(async_group)`` gives this group back."""
        return self._async_view()

    _async_group = async_group  # (zarr-python's attribute name)

    @property
    def zarr_format(self) -> int:
        return self._metadata.zarr_format

    # -- attributes ---------------------------------------------------------------------
    @property
    def attrs(self) -> Attributes:
        return Attributes(lambda: self._metadata.attributes, self._put_attributes,
                          f"group {self.name!r}")

    def _put_attributes(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Apply ``change`` to the stored attributes, holding the group's lock (the
        threads of this process: other threads' changes to other keys are kept)."""
        self._check_writable()
        with self._store.node_lock(self._path, interprocess=False):
            try:
                stored = read_typed_metadata(self._store, self._path, "group",
                                             self.zarr_format)
            except GroupNotFoundError:
                raise GroupNotFoundError(
                    f"group {self.name!r} no longer exists in {self._store!r} (deleted by "
                    f"another writer?); its attributes were not written") from None
            md = replace(self._metadata, attributes=change(dict(stored.attributes)))
            write_metadata(self._store, self._path, md)
            self._metadata = md

    def update_attributes(self, new_attributes: dict[str, Any]) -> Group:
        self.attrs.update(new_attributes)
        return self

    def __repr__(self) -> str:
        return f"<Group {store_path_str(self._store, self._path)}>"

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self._store, "path": self._path,
                "metadata": metadata_state(self._metadata), "read_only": self._read_only}

    def __setstate__(self, state: dict[str, Any]) -> None:
        md = metadata_from_state(state["metadata"], state["path"])
        self.__init__(state["store"], state["path"], md,  # type: ignore[misc]
                      read_only=state["read_only"])

    # -- members -------------------------------------------------------------------------
    def _child_path(self, name: str) -> str:
        try:
            return join_path(self._path, name)
        except InvalidNodeNameError as e:  # (a member name of consolidated metadata too)
            add_context(e, f"group {self.name!r}")
            raise

    def _relative(self, path: str) -> str:
        return path[len(self._path) + 1:] if self._path else path

    def _sub_consolidated(self, rel: str) -> ConsolidatedView | None:
        if self._consolidated is None:
            return None
        return self._consolidated.sub(rel)

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        rel = self._relative(path)
        if self._consolidated is not None:
            md = self._consolidated.get(rel)
            if md is None:
                raise MemberNotFoundError(
                    f"group {self.name!r} has no member {name!r} (per its consolidated metadata)"
                )
            return node_from_metadata(self._store, path, md, self._read_only,
                                      self._sub_consolidated(rel))
        try:
            md = read_node_metadata(self._store, path, self.zarr_format)
        except NodeNotFoundError as e:
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}: {e}"
                                      ) from None
        return node_from_metadata(self._store, path, md, self._read_only)

    def get(self, path: str, default: Any = None) -> Any:
        """The member at ``path`` (relative to this group), or ``default`` if there is
        none (the parameter's name is zarr-python's)."""
        try:
            return self[path]
        except MemberNotFoundError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            path = self._child_path(name)
        except ZarrfastError:  # an invalid name is simply not a member
            return False
        if self._consolidated is not None:
            return self._relative(path) in self._consolidated
        return existing_node(self._store, path) is not None

    def _child_names(self) -> list[str]:
        if self._consolidated is not None:
            return self._consolidated.child_names()
        return child_node_names(self._store, self._path)

    def keys(self) -> Iterator[str]:
        return iter(self._child_names())

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return len(self._child_names())

    def members(self, max_depth: int | None = 0, *, use_consolidated_for_children: bool = True
                ) -> tuple[tuple[str, Array | Group], ...]:
        """``(relative path, node)`` for the members, down to ``max_depth`` levels below the
        direct children (``None``: all).

        ``use_consolidated_for_children=False`` (zarr-python's keyword): a member group
        read from the store comes without the consolidated metadata its own metadata
        holds (its ``metadata.consolidated_metadata`` is ``None``), as when metadata is
        consolidated anew; this group's own consolidated metadata, if it was opened from
        it, is used all the same.  (Members read from the store are listed from the store
        either way.)"""
        if max_depth is not None and (type(max_depth) is not int or max_depth < 0):
            raise ZarrfastError(f"group {self.name!r}: max_depth must be None or an integer "
                                f">= 0, got {max_depth!r}")
        out: list[tuple[str, Array | Group]] = []
        drop_consolidated = not use_consolidated_for_children and self._consolidated is None

        def walk(group: Group, rel: str, depth: int) -> None:
            for name in group._child_names():
                node = group[name]
                if drop_consolidated and isinstance(node, Group) and getattr(
                        node.metadata, "consolidated_metadata", None) is not None:
                    node = Group(node._store, node._path,
                                 replace(node.metadata, consolidated_metadata=None),
                                 read_only=node._read_only)
                key = f"{rel}/{name}" if rel else name
                out.append((key, node))
                if isinstance(node, Group) and (max_depth is None or depth < max_depth):
                    walk(node, key, depth + 1)

        walk(self, "", 0)
        return tuple(out)

    def _names_of_type(self, node_type: str) -> list[str]:
        """The direct members of one node type, from the consolidated metadata (no node
        is made)."""
        view = self._consolidated
        if view is None:  # pragma: no cover - callers check
            return []
        return [n for n in view.child_names() if view.get(n).node_type == node_type]

    def arrays(self) -> Iterator[tuple[str, Array]]:
        if self._consolidated is not None:  # only the arrays are made
            return ((n, self[n]) for n in self._names_of_type("array"))  # type: ignore[misc]
        return ((k, v) for k, v in self.members() if isinstance(v, Array))

    def groups(self) -> Iterator[tuple[str, Group]]:
        if self._consolidated is not None:
            return ((n, self[n]) for n in self._names_of_type("group"))  # type: ignore[misc]
        return ((k, v) for k, v in self.members() if isinstance(v, Group))

    def array_keys(self) -> Iterator[str]:
        if self._consolidated is not None:
            return iter(self._names_of_type("array"))
        return (k for k, _ in self.arrays())

    def group_keys(self) -> Iterator[str]:
        if self._consolidated is not None:
            return iter(self._names_of_type("group"))
        return (k for k, _ in self.groups())

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if existing_node(self._store, path) is None:
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}")
        # the metadata first: the node is gone at once, even when deleting the rest fails
        # (a concurrent writer kept writing below it: ConcurrentWriteError naming it)
        delete_node_metadata(self._store, path)
        self._store.delete_dir(path)
        self._consolidated = None

    # -- creation -------------------------------------------------------------------------
    def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        self._check_writable()
        path = self._child_path(name)
        md: GroupMetadata | GroupMetadataV2 = (
            GroupMetadata(attributes=dict(attributes or {})) if self.zarr_format == 3
            else GroupMetadataV2(attributes=dict(attributes or {}))
        )
        write_new_node(self._store, path, md, overwrite=overwrite)
        self._consolidated = None
        return Group(self._store, path, md, read_only=False)

    def require_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                      overwrite: bool = False) -> Group:
        """The member group ``name``, created if missing.  Threads (and processes)
        requiring the same group at once all get it: whoever finds it created by another
        meanwhile opens it."""
        if overwrite:
            return self.create_group(name, attributes=attributes, overwrite=True)
        if name in self:
            return self._required_group(name)
        try:
            return self.create_group(name, attributes=attributes)
        except (ContainsGroupError, ContainsArrayError):  # created meanwhile
            if name not in self:
                raise
            return self._required_group(name)

    def _required_group(self, name: str) -> Group:
        node = self[name]
        if not isinstance(node, Group):
            raise IncompatibleMemberError(
                f"Incompatible object (Array) already exists: member {name!r} of group "
                f"{self.name!r} is an array, not a group")
        return node

    def require_groups(self, *names: str) -> tuple[Group, ...]:
        return tuple(self.require_group(n) for n in names)

    def create_array(self, name: str, *, shape: Any = None, dtype: Any = None,
                     data: Any = None, overwrite: bool = False, **kwargs: Any) -> Array:
        """Create an array member; arguments as for :func:`zarrfast.create_array` (the
        array has the group's Zarr format).  ``storage_options`` is taken as zarr-python
        takes it here: only ``None`` (the group's store is open already)."""
        check_member_keywords("create_array", kwargs)
        if kwargs.pop("storage_options", None):  # (None or empty: as zarr-python)
            raise TypeError(f"create_array() got storage_options for member {name!r} of "
                            f"group {self.name!r}: its store is open already, they would "
                            f"be unused")
        self._check_writable()
        kwargs.setdefault("zarr_format", self.zarr_format)
        kwargs.setdefault("data_exclusive", True)  # as zarr-python: data, or shape and dtype
        arr = create_array_at(self._store, self._child_path(name), shape=shape, dtype=dtype,
                               data=data, overwrite=overwrite, **kwargs)
        self._consolidated = None
        return arr

    def create_dataset(self, name: str, **kwargs: Any) -> Array:
        """zarr-python's deprecated name of :meth:`create_array` (``data`` may come with
        ``shape``, as it could there)."""
        warnings.warn("Group.create_dataset is deprecated and will be removed in a future "
                      "version. Use Group.create_array instead.", ZarrDeprecationWarning,
                      stacklevel=2)
        if kwargs.get("data") is not None:
            kwargs.pop("shape", None)
        return self.create_array(name, **kwargs)

    def require_dataset(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """zarr-python's deprecated name of :meth:`require_array`."""
        warnings.warn("Group.require_dataset is deprecated and will be removed in a future "
                      "version. Use Group.require_array instead.", ZarrDeprecationWarning,
                      stacklevel=2)
        return self.require_array(name, shape=shape, **kwargs)

    async def update_attributes_async(self, new_attributes: Mapping[str, Any]) -> Group:
        """The group's attributes become ``new_attributes``, as zarr-python's
        ``Group.update_attributes_async`` does: they replace the stored ones (where
        :meth:`update_attributes` merges them in)."""
        from zarrfast.concurrency import in_thread

        new = dict(new_attributes)

        def put() -> Group:
            self.attrs.put(new)
            return self

        return await in_thread(put)  # (cancelled, it still completes)

    def require_array(self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False,
                      **kwargs: Any) -> Array:
        """The member array ``name``, created if missing; an existing one must have this
        shape and a dtype that casts to ``dtype`` (with ``exact``, that is ``dtype``), as
        in zarr-python: else :class:`IncompatibleNodeError` (a ``TypeError``).  Threads
        (and processes) requiring the same array at once all get it."""
        check_member_keywords("require_array", kwargs)  # (also when the array exists)
        if name in self:
            return self._required_array(name, shape, dtype, exact)
        try:
            return self.create_array(name, shape=shape, dtype=dtype, **kwargs)
        except (ContainsArrayError, ContainsGroupError):  # created meanwhile
            if name not in self:
                raise
            return self._required_array(name, shape, dtype, exact)

    def _required_array(self, name: str, shape: Any, dtype: Any, exact: bool = False
                        ) -> Array:
        import numpy as np

        node = self[name]
        if not isinstance(node, Array):
            raise IncompatibleMemberError(  # (a ContainsArrayError, as raised here before)
                f"Incompatible object (Group) already exists: member {name!r} of group "
                f"{self.name!r} is a group, not an array")
        if tuple(node.shape) != tuple(shape if isinstance(shape, tuple) else (shape,)):
            raise IncompatibleNodeError(
                f"Incompatible shape ({node.shape} vs {shape}): array {node.name!r} exists "
                f"with shape {node.shape}")
        if dtype is not None:
            try:
                wanted = np.dtype(dtype)
            except TypeError:  # a v3 data type name NumPy does not know: not compared
                wanted = None
            # numbers only (strings and objects have several spellings: not compared)
            if (wanted is not None and wanted.kind in "biufc" and node.dtype.kind in "biufc"
                    and (node.dtype != wanted if exact
                         else not np.can_cast(node.dtype, wanted))):
                how = "is not" if exact else "does not cast to"
                raise IncompatibleNodeError(
                    f"Incompatible dtype ({node.dtype} vs {wanted}): array {node.name!r} "
                    f"exists with dtype {node.dtype}, which {how} {wanted}")
        return node

    def __setitem__(self, name: str, value: Any) -> None:
        """``g["x"] = array_like`` creates (or replaces) an array holding ``value``."""
        import numpy as np

        self.create_array(name, data=np.asarray(value), overwrite=True)

    @classmethod
    def open(cls, store: Any, zarr_format: int | None = 3, *, path: str | None = None,
             use_consolidated: bool | str | None = None) -> Group:
        """The group at ``store`` (a store, a ``StorePath``, or what ``make_store`` takes);
        its consolidated metadata is used where it has some, unless ``use_consolidated``
        is false (required if true), as zarr-python's ``Group.open``."""
        from zarrfast.hierarchy.consolidated import read_consolidated
        from zarrfast.metadata.paths import normalize_path
        from zarrfast.storage.asynchronous import store_path_of

        sp = store_path_of(store, normalize_path(path))
        s, p = sp.store, normalize_path(sp.path)
        if use_consolidated is not False:
            found = read_consolidated(s, p, zarr_format)
            if found is not None:
                md, members = found
                return cls(s, p, md, read_only=s.read_only, consolidated=members)
            if use_consolidated is True:
                raise ZarrfastError(f"group {p or '/'!r} in {s!r} has no consolidated "
                                    f"metadata; pass use_consolidated=False")
        return cls(s, p, read_typed_metadata(s, p, "group", zarr_format), read_only=s.read_only)

    def empty(self, *, name: str, shape: Any, **kwargs: Any) -> Array:
        check_member_keywords("empty", kwargs)
        return self.create_array(name, shape=shape, **kwargs)

    def zeros(self, *, name: str, shape: Any, **kwargs: Any) -> Array:
        check_member_keywords("zeros", kwargs)
        return self.create_array(name, shape=shape, fill_value=0, **kwargs)

    def ones(self, *, name: str, shape: Any, **kwargs: Any) -> Array:
        check_member_keywords("ones", kwargs)
        return self.create_array(name, shape=shape, fill_value=1, **kwargs)

    def full(self, *, name: str, shape: Any, fill_value: Any, **kwargs: Any) -> Array:
        check_member_keywords("full", kwargs)
        return self.create_array(name, shape=shape, fill_value=fill_value, **kwargs)

    def empty_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        """A member array shaped like ``data`` (its shape, dtype and, for a chunked array,
        chunks), elements at the fill value."""
        check_member_keywords("empty_like", kwargs)
        return self.create_array(name, **like_kwargs(data, kwargs))

    def zeros_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        check_member_keywords("zeros_like", kwargs)
        return self.create_array(name, **{**like_kwargs(data, kwargs), "fill_value": 0})

    def ones_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        check_member_keywords("ones_like", kwargs)
        return self.create_array(name, **{**like_kwargs(data, kwargs), "fill_value": 1})

    def full_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        check_member_keywords("full_like", kwargs)
        return self.create_array(name, **like_kwargs(data, kwargs))

    def move(self, source: str, dest: str) -> None:
        """Move the member at ``source`` (a path below this group) to ``dest``."""
        self._check_writable()
        src = self._child_path(source)
        dst = self._child_path(dest)
        if existing_node(self._store, src) is None:
            raise MemberNotFoundError(f"group {self.name!r} has no member {source!r}")
        if existing_node(self._store, dst) is not None:
            raise ContainsArrayError(f"cannot move {source!r} to {dest!r}: it exists")
        # the destination's parents exist (in this format); then every key moves
        parent = dst.rsplit("/", 1)[0] if "/" in dst else ""
        if parent and existing_node(self._store, parent) is None:
            write_new_node(self._store, parent, replace(self._metadata, attributes={},
                                                        extra={}), overwrite=False)
        for key in list(self._store.list_prefix(src + "/")):
            value = self._store.get(key)
            if value is not None:
                self._store.set(dst + key[len(src):], value)
        self._store.delete_dir(src)
        delete_node_metadata(self._store, src)
        self._consolidated = None

    def tree(self, expand: bool | None = None, level: int | None = None, *,
             max_nodes: int = 500, plain: bool = False) -> TreeRepr:
        """The hierarchy below this group, drawn as zarr-python draws it (box-drawing
        lines, arrays with shape and dtype, names in bold on a terminal unless ``plain``).
        ``level``: the depth below the direct members to descend to (``0``: the direct
        members only; ``None``: all); at most ``max_nodes`` nodes."""
        if expand is not None:
            raise NotImplementedError(
                f"group {self.name!r}: tree(expand=...) is not implemented (as in zarr-python)")
        members = [(key, f"{node.shape} {node.dtype}" if isinstance(node, Array) else None)
                   for key, node in self.members(max_depth=level)]
        return render_tree(self.name, members, max_nodes=max_nodes, plain=plain)

    @property
    def info(self) -> GroupInfo:
        """What is known of the group without reading the store (the member counts only
        when it was opened from consolidated metadata); prints as zarr-python's."""
        members = (None if self._consolidated is None
                   else self._consolidated.descendants())
        return group_info(self, members)

    def info_complete(self) -> GroupInfo:
        """``info`` with the number of members, arrays and groups below the group (all
        depths): reads the store unless opened from consolidated metadata."""
        if self._consolidated is not None:
            return self.info
        return group_info(self, [node.metadata for _, node in self.members(max_depth=None)])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Group) and other._store == self._store
                and other._path == self._path)

    def __hash__(self) -> int:
        return hash((self._store, self._path))


#: what the member-creating methods (``create_array``, ``zeros``, ``require_array``...)
#: take by keyword: :func:`zarrfast.create_array`'s, and ``storage_options`` (only
#: ``None``), as zarr-python's ``Group.create_array``
MEMBER_KEYWORDS = keyword_names(create_array_at, exclude={"store", "path"}) | {
    "storage_options"}


def check_member_keywords(method: str, kwargs: Mapping[str, Any]) -> None:
    """``TypeError`` naming a keyword the member-creating ``method`` does not take."""
    check_keywords(method, kwargs, MEMBER_KEYWORDS)


def like_kwargs(data: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` completed with the shape, dtype, (regular) chunks and fill value of
    ``data`` (an array, an asynchronous view of one, or anything NumPy makes an array of),
    as zarr-python's ``*_like`` take them."""
    node = getattr(data, "_node", data)  # an asynchronous view: its array
    out = dict(kwargs)
    if not hasattr(node, "shape") or not hasattr(node, "dtype"):
        node = np.asarray(node)
    out.setdefault("shape", node.shape)
    out.setdefault("dtype", node.dtype)
    chunks = getattr(node, "chunks", None)
    if isinstance(chunks, tuple) and all(isinstance(c, int) for c in chunks):
        out.setdefault("chunks", chunks)
    if isinstance(node, Array):
        out.setdefault("fill_value", node.fill_value)
    return out
