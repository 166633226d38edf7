"""The :class:`Group`: a node holding arrays and groups (Zarr v3 or v2)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    IncompatibleMemberError,
    IncompatibleNodeError,
    InvalidNodeNameError,
    MemberNotFoundError,
    MetadataValidationError,
    NodeNotFoundError,
    ZarrDeprecationWarning,
    ZarrfastError,
    add_context,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.array_config import parse_array_config
from zarrfast.hierarchy.attributes import Attributes
from zarrfast.hierarchy.consolidated import ConsolidatedView, store_v2_consolidated
from zarrfast.hierarchy.create import create_array_at
from zarrfast.hierarchy.info import GroupInfo, TreeRepr, group_info, render_tree, store_path_str
from zarrfast.hierarchy.keywords import check_keywords, keyword_names
from zarrfast.hierarchy.like import CODEC_KEYWORDS, like_kwargs_of
from zarrfast.hierarchy.node import (
    AnyMetadata,
    Node,
    check_new_node,
    child_candidates,
    child_node_names,
    delete_node_metadata,
    empty_group_metadata,
    existing_node,
    metadata_from_state,
    metadata_state,
    read_children_metadata,
    read_node_metadata,
    read_typed_metadata,
    warn_foreign_member,
    write_metadata,
    write_new_node,
)
from zarrfast.metadata.gcpause import collector_paused
from zarrfast.metadata.paths import join_path, normalize_path
from zarrfast.metadata.v2 import GroupMetadataV2
from zarrfast.metadata.v3 import GroupMetadata
from zarrfast.storage import Store
from zarrfast.storage.asynchronous import StorePath, store_path_of
from zarrfast.storage.resolve import StoreLike

__all__ = ["Group"]

#: listings of more members than this are made with the garbage collector paused
_MANY = 1000


def node_from_metadata(store: Store, path: str, md: AnyMetadata, read_only: bool,
                       consolidated: Mapping[str, AnyMetadata] | ConsolidatedView | None = None
                       ) -> Array | Group:
    if md.node_type == "array":
        return Array(store, path, md, read_only=read_only)
    return Group(store, path, md, read_only=read_only, consolidated=consolidated)


def _pruned(cm: Any, view: Any, prefix: str = "") -> Any:
    """Zarr v3 consolidated metadata ``cm`` (each group's entry holding the nodes below
    it) with only the nodes the consolidated ``view`` still has (paths below ``prefix``)."""
    kept = {}
    for name, entry in cm.metadata.items():
        rel = prefix + name
        if rel not in view:
            continue
        inner = getattr(entry, "consolidated_metadata", None)
        if inner is not None:
            entry = dataclasses.replace(entry, consolidated_metadata=_pruned(
                inner, view, rel + "/"))
        kept[name] = entry
    return dataclasses.replace(cm, metadata=kept)


def _float64_unless(kwargs: dict[str, Any]) -> Any:
    """The ``dtype`` of ``empty``/``zeros``/``ones``/``full`` members: the one given (taken
    out of ``kwargs``), else float64, as zarr-python's (``create_array`` wants one)."""
    dtype = kwargs.pop("dtype", None)
    return "float64" if dtype is None else dtype


class Group(Node):
    """A Zarr group: a mapping of member names to arrays and groups.

    A group is a mutable mapping: ``g["name"]`` is a member (a
    [zarrfast.Array][] or a [zarrfast.Group][]; a path such as ``"a/b"`` reaches
    deeper), ``"name" in g``, ``len(g)``, iteration over the member names,
    ``del g["name"]`` deletes a member and ``g["name"] = values`` creates (or
    replaces) an array holding ``values``.  Groups are Zarr v3 or v2, after the
    hierarchy they belong to.

    A group opened from consolidated metadata (see
    [zarrfast.open_consolidated][]) answers member lookups and listings from
    that metadata, without reading the store; creating or deleting members
    drops the consolidated view.

    Make one with [zarrfast.group][], [zarrfast.open_group][],
    [zarrfast.create_group][], ``Group.from_store`` or ``Group.open``, rather
    than by calling the class.

    ``Group(async_group)`` is the group a [zarrfast.AsyncGroup][] views (the same
    object, not a copy).

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store holding the group.
    path : str
        The group's path in the store (``""`` for the root).
    metadata : GroupMetadata or GroupMetadataV2
        The group's metadata; nothing is read or written.
    read_only : bool or None, default None
        Refuse changes; ``None`` takes the store's ``read_only``.
    consolidated : Mapping[str, Any] or None, default None
        The metadata of every node below the group, by relative path: member
        lookups and listings are then answered from it.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        ``Group(view)`` given the view of an array, or more arguments with it.

    Examples
    --------
    >>> g = zarrfast.group(store={})
    >>> g["temperature"] = np.arange(4)
    >>> sub = g.create_group("sub")
    >>> sorted(g)
    ['sub', 'temperature']
    >>> "sub" in g, len(g)
    (True, 2)
    >>> g["temperature"][:]
    array([0, 1, 2, 3])
    >>> zarrfast.Group(g.async_group) is g
    True
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
        """Create a new group at ``store`` and return it.

        Parameters
        ----------
        store : StoreLike or StorePath
            Anything [zarrfast.storage.make_store][] takes (the group goes at its
            root), or a [zarrfast.storage.StorePath][] (the group goes at its path).
        attributes : Mapping[str, Any], optional
            The group's user attributes (JSON-serializable).
        zarr_format : {3, 2}, default 3
            The Zarr format of the group.
        overwrite : bool, default False
            Replace a node already at that path (and everything below it).

        Returns
        -------
        Group
            The new group, writable.

        Raises
        ------
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is false.
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false.
        zarrfast.errors.ZarrfastError
            ``zarr_format`` is neither 2 nor 3.

        Examples
        --------
        >>> g = zarrfast.Group.from_store(zarrfast.MemoryStore(), attributes={"title": "t"})
        >>> g.zarr_format, dict(g.attrs)
        (3, {'title': 't'})
        >>> v2 = zarrfast.Group.from_store("data.zarr", zarr_format=2)
        >>> v2.zarr_format
        2
        """
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
        """This group's [zarrfast.AsyncGroup][]: coroutine methods, the same state.

        Made once (``g.async_group is g.async_group``); ``zarrfast.Group(g.async_group)``
        gives this group back.
        """
        return self._async_view()

    _async_group = async_group  # (zarr-python's attribute name)

    @property
    def zarr_format(self) -> int:
        """The Zarr format of the group: 3 or 2."""
        return self._metadata.zarr_format

    # -- attributes ---------------------------------------------------------------------
    @property
    def attrs(self) -> Attributes:
        """The group's user attributes: a mutable mapping whose changes are stored at once.

        Each change (``g.attrs["k"] = v``, ``del g.attrs["k"]``, ``g.attrs.update(...)``:
        one write) re-reads the stored attributes under the group's lock, so changes
        other threads make to other keys are kept.  Values must be JSON-serializable
        (else ``zarrfast.errors.MetadataValidationError``); a read-only group refuses
        changes with ``zarrfast.errors.ReadOnlyError``.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.attrs["units"] = "m"
        >>> g.attrs.update(scale=2)
        >>> dict(g.attrs)
        {'units': 'm', 'scale': 2}
        """
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
            if self.zarr_format == 3:
                # (the consolidated metadata as stored now, not as this handle read it:
                # what another writer consolidated since is kept)
                md = replace(md, consolidated_metadata=getattr(
                    stored, "consolidated_metadata", None))
            write_metadata(self._store, self._path, md)
            self._metadata = md
            if self.zarr_format == 2 and self._consolidated is not None:
                # (its .zmetadata holds the attributes too: as zarr-python, stored again;
                # v3 keeps them in the one zarr.json)
                store_v2_consolidated(self._store, self._path, md, self._consolidated)

    def update_attributes(self, new_attributes: dict[str, Any]) -> Group:
        """Merge ``new_attributes`` into the group's attributes (in one write).

        Parameters
        ----------
        new_attributes : dict[str, Any]
            The attributes to set; keys not in it keep their values.

        Returns
        -------
        Group
            This group.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The group is read-only.
        zarrfast.errors.MetadataValidationError
            A value is not JSON-serializable.

        Examples
        --------
        >>> g = zarrfast.group(store={}, attributes={"a": 1})
        >>> dict(g.update_attributes({"b": 2}).attrs)
        {'a': 1, 'b': 2}
        """
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
        """Return the member at ``path``, or ``default`` if there is none.

        Parameters
        ----------
        path : str
            The member's path relative to this group: a name, or names joined by
            ``/`` to reach deeper (the parameter's name is zarr-python's).
        default : Any, default None
            What to return when there is no member at ``path``.

        Returns
        -------
        Array or Group or Any
            The member, or ``default``.

        Raises
        ------
        zarrfast.errors.InvalidNodeNameError
            ``path`` is not a valid node path (e.g. a name starting with ``__``, or
            ``..``): that is an error, not a missing member.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_group("sub")
        >>> g.get("sub")
        <Group memory://.../sub>
        >>> g.get("missing", "none here")
        'none here'
        """
        try:
            return self[path]
        except MemberNotFoundError:
            return default

    def _member_of_kind(self, path: str, kind: type[Array] | type[Group]) -> Array | Group:
        """The member at ``path`` if it is a ``kind`` (zarr-python's ``get_array`` and
        ``get_group``); the error names where it was looked for."""
        where = self._child_path(path)  # (an invalid path: InvalidNodeNameError)
        what = "array" if kind is Array else "group"
        # zarr-python 3.4's messages, word for word
        try:
            node = self[path]
        except MemberNotFoundError as e:  # (why it is missing: the cause, as zarr-python)
            missing = ArrayNotFoundError if kind is Array else GroupNotFoundError
            raise missing(f"No {what} found in store {self._store!r} at path {where!r}"
                          ) from e
        if not isinstance(node, kind):
            found, other = ((ContainsGroupError, "A group") if kind is Array
                            else (ContainsArrayError, "An array"))
            raise found(f"{other} exists in store {self._store!r} at path {where!r}.")
        return node

    def get_array(self, path: str) -> Array:
        """Return the array at ``path``, raising if there is none or it is a group.

        As zarr-python's ``Group.get_array``: ``self[path]``, checked to be an array.

        Parameters
        ----------
        path : str
            The array's path relative to this group: a name, or names joined by
            ``/`` to reach into member groups (``"sub/x"``).

        Returns
        -------
        Array
            The array (read-only if this group is).

        Raises
        ------
        zarrfast.errors.ArrayNotFoundError
            There is no node at ``path``.
        zarrfast.errors.ContainsGroupError
            The node at ``path`` is a group.
        zarrfast.errors.InvalidNodeNameError
            ``path`` is not a valid node path (e.g. a name starting with ``__``, or
            ``..``).

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(3,), dtype="int8")
        >>> g.get_array("sub/x")
        <Array memory://.../sub/x shape=(3,) dtype=int8>
        >>> g.get_array("sub")
        Traceback (most recent call last):
        ...
        zarrfast.errors.ContainsGroupError: A group exists in store ... at path 'sub'.
        """
        return self._member_of_kind(path, Array)  # type: ignore[return-value]

    def get_group(self, path: str) -> Group:
        """Return the group at ``path``, raising if there is none or it is an array.

        As zarr-python's ``Group.get_group``: ``self[path]``, checked to be a group
        (``""`` is this group).

        Parameters
        ----------
        path : str
            The group's path relative to this group: a name, or names joined by
            ``/`` to reach into member groups (``"sub/inner"``).

        Returns
        -------
        Group
            The group (read-only if this group is).

        Raises
        ------
        zarrfast.errors.GroupNotFoundError
            There is no node at ``path``.
        zarrfast.errors.ContainsArrayError
            The node at ``path`` is an array.
        zarrfast.errors.InvalidNodeNameError
            ``path`` is not a valid node path (e.g. a name starting with ``__``, or
            ``..``).

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_group("sub/inner")
        >>> g.get_group("sub/inner")
        <Group memory://.../sub/inner>
        >>> g.get_group("missing")
        Traceback (most recent call last):
        ...
        zarrfast.errors.GroupNotFoundError: No group found in store ... at path 'missing'
        """
        return self._member_of_kind(path, Group)  # type: ignore[return-value]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            path = self._child_path(name)
        except ZarrfastError:  # an invalid name is simply not a member
            return False
        if self._consolidated is not None:
            return self._relative(path) in self._consolidated
        # (of the group's format: as zarr-python)
        return existing_node(self._store, path, self.zarr_format) is not None

    def _child_names(self) -> list[str]:
        if self._consolidated is not None:
            return self._consolidated.child_names()
        return child_node_names(self._store, self._path, self.zarr_format)

    def _member_nodes(self, node_type: str | None = None
                      ) -> Iterator[tuple[str, Array | Group]]:
        """``(name, node)`` of the direct members (of ``node_type`` only, if given), in the
        order of :meth:`keys`: what ``self[name]`` gives for each, made from the
        consolidated metadata (whose member paths were checked as it was read), or from the
        members' documents read in one batch (``Store.get_many``) and parsed in turn.
        Arrays come from ``Array._listed``: the configuration read once, each codec chain
        parsed when the array is first used.  (All are made at the first ``next``, many
        with the garbage collector paused.)"""
        cls = type(self)
        if cls._child_names is not Group._child_names or cls.__getitem__ is not Group.__getitem__:
            for name in self._child_names():  # (a subclass's own lookups: drafts)
                node = self[name]
                if node_type is None or node._kind == node_type:
                    yield name, node
            return
        view = self._consolidated
        if view is not None:
            names = view.child_names()
            with collector_paused(len(names) > _MANY):
                found = {name: view.get(name) for name in names}
                made = self._made_members(found, node_type)
        else:  # (documents read, then parsed with the collector paused: not while reading)
            names = child_candidates(self._store, self._path)
            found = read_children_metadata(self._store, self._path, names, self.zarr_format,
                                           pause=len(names) > _MANY)
            with collector_paused(len(names) > _MANY):
                made = self._made_members(found, node_type)
        yield from made

    def _made_members(self, found: dict[str, AnyMetadata | None], node_type: str | None
                      ) -> list[tuple[str, Array | Group]]:
        """The nodes of :meth:`_member_nodes` from the members' metadata by name (``None``:
        no document of the group's format was found: looked up as ``self[name]`` does)."""
        store, read_only = self._store, self._read_only
        view = self._consolidated
        like: Array | None = None
        out: list[tuple[str, Array | Group]] = []
        for name, md in found.items():
            # (an invalid or reserved name: InvalidNodeNameError naming this group)
            path = self._child_path(name)
            if md is None:
                # (no document of the group's format: perhaps a node of the other one,
                # skipped with zarr-python's warning: zarr-python does not see it)
                if view is None and existing_node(store, path) is not None:
                    warn_foreign_member(name)
                continue
            if node_type is not None and md.node_type != node_type:
                continue
            if md.node_type == "array":
                like = Array._listed(store, path, md, like, read_only)
                out.append((name, like))
            else:
                out.append((name, Group(
                    store, path, md, read_only=read_only,  # type: ignore[arg-type]
                    consolidated=None if view is None else view.sub(name))))
        return out

    def keys(self) -> Iterator[str]:
        """Iterate over the names of the direct members (arrays and groups).

        Returns
        -------
        Iterator[str]
            The member names, in the order the store lists them (from the
            consolidated metadata if the group was opened from it).

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_group("b"); _ = g.create_array("a", shape=(2,), dtype="int8")
        >>> sorted(g.keys())
        ['a', 'b']
        """
        return iter(self._child_names())

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return len(self._child_names())

    def nmembers(self, max_depth: int | None = 0) -> int:
        """Count the members down to ``max_depth`` (zarr-python's ``Group.nmembers``).

        Parameters
        ----------
        max_depth : int or None, default 0
            How many levels below the direct members to count (``0``: the direct
            members only; ``None``: every node below the group).

        Returns
        -------
        int
            The number of arrays and groups counted.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``max_depth`` is neither None nor an integer >= 0.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_group("a").create_array("x", shape=(1,), dtype="i1")
        >>> g.nmembers(), g.nmembers(max_depth=None)
        (1, 2)
        """
        return len(self.members(max_depth))

    def members(self, max_depth: int | None = 0, *, use_consolidated_for_children: bool = True
                ) -> tuple[tuple[str, Array | Group], ...]:
        """Return ``(relative path, node)`` for the members, down to ``max_depth``.

        Parameters
        ----------
        max_depth : int or None, default 0
            How many levels below the direct members to descend: ``0`` lists the
            direct members only, ``None`` every node below the group.
        use_consolidated_for_children : bool, default True
            zarr-python's keyword.  If false, a member group read from the store comes
            without the consolidated metadata its own metadata holds (its
            ``metadata.consolidated_metadata`` is ``None``), as when metadata is
            consolidated anew; this group's own consolidated metadata, if it was
            opened from it, is used all the same.  (Members read from the store are
            listed from the store either way.)

        Returns
        -------
        tuple[tuple[str, Array | Group], ...]
            ``(path relative to this group, array or group)``, a group's members
            right after it.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``max_depth`` is neither None nor an integer >= 0.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(2,), dtype="int8")
        >>> [path for path, _ in g.members()]
        ['sub']
        >>> [path for path, _ in g.members(max_depth=None)]
        ['sub', 'sub/x']
        """
        if max_depth is not None and (type(max_depth) is not int or max_depth < 0):
            raise ZarrfastError(f"group {self.name!r}: max_depth must be None or an integer "
                                f">= 0, got {max_depth!r}")
        out: list[tuple[str, Array | Group]] = []
        drop_consolidated = not use_consolidated_for_children and self._consolidated is None

        def walk(group: Group, rel: str, depth: int) -> None:
            for name, node in group._member_nodes():
                if drop_consolidated and isinstance(node, Group) and getattr(
                        node.metadata, "consolidated_metadata", None) is not None:
                    node = Group(node._store, node._path,
                                 replace(node.metadata, consolidated_metadata=None),
                                 read_only=node._read_only)
                key = f"{rel}/{name}" if rel else name
                out.append((key, node))
                if isinstance(node, Group) and (max_depth is None or depth < max_depth):
                    walk(node, key, depth + 1)

        # (the nodes and their paths made from consolidated metadata with the collector
        # paused: 200,000 of them otherwise start full collections that walk them all, two
        # thirds of the time; not while a walk reads the store)
        with collector_paused(self._consolidated is not None):
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
        """Iterate over ``(name, array)`` for the direct members that are arrays.

        Returns
        -------
        Iterator[tuple[str, Array]]
            The array members with their names.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> [(name, arr.shape) for name, arr in g.arrays()]
        [('a', (2,))]
        """
        return self._member_nodes("array")  # type: ignore[return-value]

    def groups(self) -> Iterator[tuple[str, Group]]:
        """Iterate over ``(name, group)`` for the direct members that are groups.

        Returns
        -------
        Iterator[tuple[str, Group]]
            The group members with their names.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> [name for name, _ in g.groups()]
        ['sub']
        """
        return self._member_nodes("group")  # type: ignore[return-value]

    def array_keys(self) -> Iterator[str]:
        """Iterate over the names of the direct members that are arrays.

        Returns
        -------
        Iterator[str]
            The names of the array members.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> list(g.array_keys())
        ['a']
        """
        if self._consolidated is not None:
            return iter(self._names_of_type("array"))
        return (k for k, _ in self.arrays())

    def group_keys(self) -> Iterator[str]:
        """Iterate over the names of the direct members that are groups.

        Returns
        -------
        Iterator[str]
            The names of the group members.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> list(g.group_keys())
        ['sub']
        """
        if self._consolidated is not None:
            return iter(self._names_of_type("group"))
        return (k for k, _ in self.groups())

    def array_values(self) -> Iterator[Array]:
        """Iterate over the direct members that are arrays.

        Returns
        -------
        Iterator[Array]
            The array members, in the order of ``arrays()``.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> list(g.array_values())
        [<Array memory://.../a shape=(2,) dtype=int8>]
        """
        return (arr for _, arr in self.arrays())

    def group_values(self) -> Iterator[Group]:
        """Iterate over the direct members that are groups.

        Returns
        -------
        Iterator[Group]
            The group members, in the order of ``groups()``.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("a", shape=(2,), dtype="int8"); _ = g.create_group("sub")
        >>> list(g.group_values())
        [<Group memory://.../sub>]
        """
        return (grp for _, grp in self.groups())

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if existing_node(self._store, path) is None:
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}")
        # the metadata first: the node is gone at once, even when deleting the rest fails
        # (a concurrent writer kept writing below it: ConcurrentWriteError naming it)
        delete_node_metadata(self._store, path)
        self._store.delete_dir(path)
        if self._consolidated is not None:  # (the views sharing it see the deletion too)
            self._consolidated.forget(self._relative(path))
            cm = getattr(self._metadata, "consolidated_metadata", None)
            if cm is not None:
                # the consolidated metadata this group's document holds lists what the
                # views still have (this deletion, and those made through other handles
                # sharing them), as zarr-python 3.4 stores it on deletion
                md = dataclasses.replace(self._metadata,
                                         consolidated_metadata=_pruned(cm, self._consolidated))
                write_metadata(self._store, self._path, md)
                self._metadata = md
            elif self.zarr_format == 2:  # (its .zmetadata no longer lists the member)
                store_v2_consolidated(self._store, self._path, self._metadata,
                                      self._consolidated, self._relative(path))
        self._consolidated = None

    # -- creation -------------------------------------------------------------------------
    def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        """Create a member group (in the group's Zarr format) and return it.

        Parameters
        ----------
        name : str
            The new group's name, or a path below this group (``"a/b"``): missing
            groups between are created.
        attributes : dict[str, Any], optional
            Its user attributes (JSON-serializable).
        overwrite : bool, default False
            Replace a node already there (and everything below it).

        Returns
        -------
        Group
            The new group.

        Raises
        ------
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is false.
        zarrfast.errors.ContainsArrayError
            An array is there already (or among the parents) and ``overwrite`` is false.
        zarrfast.errors.ReadOnlyError
            This group is read-only.
        zarrfast.errors.InvalidNodeNameError
            ``name`` is not a valid node name.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.create_group("sub", attributes={"kind": "raw"})
        <Group memory://.../sub>
        >>> dict(g["sub"].attrs)
        {'kind': 'raw'}
        """
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
        """Return the member group ``name``, created if missing.

        Threads (and processes) requiring the same group at once all get it: whoever
        finds it created by another meanwhile opens it.

        Parameters
        ----------
        name : str
            The group's name, or a path below this group.
        attributes : dict[str, Any], optional
            The attributes of the group if it is created (an existing group keeps
            its own).
        overwrite : bool, default False
            Create the group anew even if a node is there (see ``create_group``).

        Returns
        -------
        Group
            The existing or new group.

        Raises
        ------
        zarrfast.errors.IncompatibleMemberError
            The member is an array (a ``ContainsArrayError`` and a ``TypeError``).
        zarrfast.errors.ReadOnlyError
            The group is missing and this group is read-only.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> first = g.require_group("sub")
        >>> g.require_group("sub") == first
        True
        """
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
        """Return the member groups ``names``, each created if missing.

        Parameters
        ----------
        *names : str
            The groups' names (or paths below this group), as for ``require_group``.

        Returns
        -------
        tuple[Group, ...]
            The groups, in the order of ``names``.

        Raises
        ------
        zarrfast.errors.IncompatibleMemberError
            One of the members is an array.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> a, b = g.require_groups("a", "b")
        >>> a.name, b.name
        ('/a', '/b')
        """
        return tuple(self.require_group(n) for n in names)

    def create_array(self, name: str, *, shape: Any = None, dtype: Any = None,
                     data: Any = None, overwrite: bool = False, **kwargs: Any) -> Array:
        """Create a member array and return it.

        The array has the group's Zarr format unless ``zarr_format`` says otherwise
        (which a store refuses to mix in one hierarchy).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group (``"a/b"``): missing groups
            between are created.
        shape : int or tuple of int, optional
            The array's shape (give ``shape`` and ``dtype``, or ``data``).
        dtype : numpy dtype or str, optional
            Its data type, e.g. ``"float32"``.
        data : array-like, optional
            Values to write; the shape and dtype then come from it (give neither).
        overwrite : bool, default False
            Replace a node already there (and everything below it).
        **kwargs : Any
            The other keywords of [zarrfast.create_array][]: ``chunks``, ``shards``,
            ``filters``, ``compressors``, ``serializer``, ``fill_value``, ``order``,
            ``zarr_format``, ``attributes``, ``chunk_key_encoding``,
            ``dimension_names``, ``config``, ``write_data``, and ``storage_options``
            (only ``None``, as zarr-python takes it here: the group's store is open
            already).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false.
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is false.
        zarrfast.errors.ReadOnlyError
            This group is read-only.
        zarrfast.errors.ZarrfastError
            ``data`` given with ``shape`` or ``dtype``, or other invalid arguments.
        TypeError
            A keyword ``create_array`` does not take, or ``storage_options`` that are
            not empty.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> a = g.create_array("temperature", shape=(4, 6), dtype="float32", chunks=(2, 3))
        >>> a
        <Array memory://.../temperature shape=(4, 6) dtype=float32>
        >>> b = g.create_array("counts", data=np.arange(3))
        >>> b[:]
        array([0, 1, 2])
        """
        check_member_keywords("create_array", kwargs)
        if kwargs.pop("storage_options", None):  # (None or empty: as zarr-python)
            raise TypeError(f"create_array() got storage_options for member {name!r} of "
                            f"group {self.name!r}: its store is open already, they would "
                            f"be unused")
        self._check_writable()
        if kwargs.get("zarr_format") not in (None, self.zarr_format):  # (zarr-python's words)
            raise MetadataValidationError(
                f"Cannot create a zarr_format={kwargs['zarr_format']} array in a "
                f"zarr_format={self.zarr_format} group.")
        kwargs["zarr_format"] = self.zarr_format
        kwargs.setdefault("data_exclusive", True)  # as zarr-python: data, or shape and dtype
        arr = create_array_at(self._store, self._child_path(name), shape=shape, dtype=dtype,
                               data=data, overwrite=overwrite, **kwargs)
        self._consolidated = None
        return arr

    def create(self, name: str, *, shape: Any = None, dtype: Any = None,
               data: Any = None, overwrite: bool = False, **kwargs: Any) -> Array:
        """Create a member array and return it: zarr-python 3.4's ``Group.create``.

        The same as ``create_array``, which it calls with its arguments.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group (``"a/b"``): missing groups
            between are created.
        shape : int or tuple of int, optional
            The array's shape (give ``shape`` and ``dtype``, or ``data``).
        dtype : numpy dtype or str, optional
            Its data type, e.g. ``"float32"``.
        data : array-like, optional
            Values to write; the shape and dtype then come from it (give neither).
        overwrite : bool, default False
            Replace a node already there (and everything below it).
        **kwargs : Any
            The other keywords of [zarrfast.create_array][]: ``chunks``, ``shards``,
            ``filters``, ``compressors``, ``serializer``, ``fill_value``, ``order``,
            ``zarr_format``, ``attributes``, ``chunk_key_encoding``,
            ``dimension_names``, ``config``, ``write_data``, and ``storage_options``
            (only ``None``, as zarr-python takes it here: the group's store is open
            already).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false (and the other errors
            of ``create_array``).

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.create("t", shape=(4,), dtype="int8")
        <Array memory://.../t shape=(4,) dtype=int8>
        """
        return self.create_array(name, shape=shape, dtype=dtype, data=data,
                                 overwrite=overwrite, **kwargs)

    def create_dataset(self, name: str, **kwargs: Any) -> Array:
        """Create a member array: zarr-python's deprecated name of ``create_array``.

        It warns (``zarrfast.errors.ZarrDeprecationWarning``), then creates the array.
        Unlike ``create_array``, ``data`` may come with ``shape``, as it could there
        (the shape is then ignored).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        **kwargs : Any
            The keywords of ``create_array`` (``shape``, ``dtype``, ``data``,
            ``chunks``, ``fill_value``, ``overwrite``...).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false (and the other
            errors of ``create_array``).
        """
        warnings.warn("Group.create_dataset is deprecated and will be removed in a future "
                      "version. Use Group.create_array instead.", ZarrDeprecationWarning,
                      stacklevel=2)
        if kwargs.get("data") is not None:
            kwargs.pop("shape", None)
        return self.create_array(name, **kwargs)

    def require_dataset(self, name: str, *, shape: Any, **kwargs: Any) -> Array:
        """Return the member array ``name``, created if missing (deprecated).

        zarr-python's deprecated name of ``require_array``: it warns
        (``zarrfast.errors.ZarrDeprecationWarning``), then does what that does.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The shape the array has, or is created with.
        **kwargs : Any
            The other keywords of ``require_array`` (``dtype``, ``exact``, and those of
            ``create_array`` for a new array).

        Returns
        -------
        Array
            The existing or new array.

        Raises
        ------
        zarrfast.errors.IncompatibleNodeError
            The existing array's shape or dtype does not match.
        """
        warnings.warn("Group.require_dataset is deprecated and will be removed in a future "
                      "version. Use Group.require_array instead.", ZarrDeprecationWarning,
                      stacklevel=2)
        return self.require_array(name, shape=shape, **kwargs)

    async def update_attributes_async(self, new_attributes: Mapping[str, Any]) -> Group:
        """Replace the group's attributes with ``new_attributes`` (a coroutine).

        As zarr-python's ``Group.update_attributes_async`` does, they replace the
        stored ones, where ``update_attributes`` merges them in.  The write runs on
        a worker thread; cancelling the await does not stop it.

        Parameters
        ----------
        new_attributes : Mapping[str, Any]
            The group's new attributes (JSON-serializable).

        Returns
        -------
        Group
            This group.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The group is read-only.
        zarrfast.errors.MetadataValidationError
            A value is not JSON-serializable.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={}, attributes={"old": 1})
        >>> _ = asyncio.run(g.update_attributes_async({"new": 2}))
        >>> dict(g.attrs)
        {'new': 2}
        """
        from zarrfast.concurrency import in_thread

        new = dict(new_attributes)

        def put() -> Group:
            self.attrs.put(new)
            return self

        return await in_thread(put)  # (cancelled, it still completes)

    def require_array(self, name: str, *, shape: Any, dtype: Any = None, exact: bool = False,
                      **kwargs: Any) -> Array:
        """Return the member array ``name``, created if missing.

        An existing array must have this shape and a dtype that casts to ``dtype``
        (with ``exact``, that is ``dtype``), as in zarr-python; only numeric dtypes
        are compared.  Threads (and processes) requiring the same array at once all
        get it.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The shape the array must have, or is created with.
        dtype : numpy dtype or str, optional
            The data type the existing array's casts to (or is, with ``exact``), or
            the new array's.
        exact : bool, default False
            Require the existing array's dtype to be ``dtype`` exactly.
        **kwargs : Any
            The other keywords of ``create_array``, for a new array (checked also
            when the array exists).

        Returns
        -------
        Array
            The existing or new array.

        Raises
        ------
        zarrfast.errors.IncompatibleNodeError
            The existing array has another shape, or an incompatible dtype (a
            ``TypeError``).
        zarrfast.errors.IncompatibleMemberError
            The member is a group.
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> a = g.require_array("a", shape=(3,), dtype="int32")
        >>> g.require_array("a", shape=(3,), dtype="int64")  # int32 casts to int64
        <Array memory://.../a shape=(3,) dtype=int32>
        >>> g.require_array("a", shape=(4,))
        Traceback (most recent call last):
            ...
        zarrfast.errors.IncompatibleNodeError: Incompatible shape ((3,) vs (4,)): ...
        """
        check_member_keywords("require_array", kwargs)  # (also when the array exists)
        config = kwargs.get("config")
        # an existing array is returned with ``config`` too (keys left out: the global
        # configuration's), as zarr-python 3.4 does; a bad one is refused either way
        checked = None if config is None else parse_array_config(config)
        if name in self:
            found = self._required_array(name, shape, dtype, exact)
            return found if checked is None else found.with_config(checked)
        try:
            return self.create_array(name, shape=shape, dtype=dtype, **kwargs)
        except (ContainsArrayError, ContainsGroupError):  # created meanwhile
            if name not in self:
                raise
            found = self._required_array(name, shape, dtype, exact)
            return found if checked is None else found.with_config(checked)

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
        """Open the existing group at ``store``, as zarr-python's ``Group.open``.

        Parameters
        ----------
        store : Any
            A store, a [zarrfast.storage.StorePath][], or anything
            [zarrfast.storage.make_store][] takes (a path, a URL, a dict...).
        zarr_format : {3, 2, None}, default 3
            The format to look for; ``None``: either (v3 first).
        path : str, optional
            The group's path in the store (below the path of a ``StorePath``).
        use_consolidated : bool or str or None, default None
            ``None``: use the group's consolidated metadata where it has some; ``True``:
            require it; ``False``: read the store.

        Returns
        -------
        Group
            The group (read-only if the store is).

        Raises
        ------
        zarrfast.errors.GroupNotFoundError
            There is no group of that format there.
        zarrfast.errors.ArrayNotGroupError
            There is an array there.
        zarrfast.errors.ZarrfastError
            ``use_consolidated=True`` and the group has no consolidated metadata.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> _ = zarrfast.Group.from_store(store, attributes={"a": 1})
        >>> g = zarrfast.Group.open(store)
        >>> dict(g.attrs)
        {'a': 1}
        """
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
        """Create a member array without writing any chunk.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        Array
            The new array; its elements read as the fill value until written
            (``fill_value`` if given, else the data type's default).

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> a = g.empty(name="e", shape=(2, 2), dtype="int16")
        >>> a.shape, a.dtype
        ((2, 2), dtype('int16'))
        """
        check_member_keywords("empty", kwargs)
        return self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), **kwargs)

    def zeros(self, *, name: str, shape: Any, **kwargs: Any) -> Array:
        """Create a member array of zeros (its fill value is 0; no chunk is written).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.zeros(name="z", shape=(3,), dtype="int8")[:]
        array([0, 0, 0], dtype=int8)
        """
        check_member_keywords("zeros", kwargs)
        return self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=0, **kwargs)

    def ones(self, *, name: str, shape: Any, **kwargs: Any) -> Array:
        """Create a member array of ones (its fill value is 1; no chunk is written).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The array's shape.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.ones(name="o", shape=(2, 2), dtype="int8")[:]
        array([[1, 1],
               [1, 1]], dtype=int8)
        """
        check_member_keywords("ones", kwargs)
        return self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=1, **kwargs)

    def full(self, *, name: str, shape: Any, fill_value: Any, **kwargs: Any) -> Array:
        """Create a member array whose elements are ``fill_value`` (no chunk is written).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The array's shape.
        fill_value : Any
            The value of every element (the array's fill value).
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.full(name="f", shape=(3,), fill_value=7, dtype="uint8")[:]
        array([7, 7, 7], dtype=uint8)
        """
        check_member_keywords("full", kwargs)
        return self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=fill_value, **kwargs)

    def empty_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        """Create a member array like ``data``, without writing any chunk.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array ([zarrfast.Array][], an asynchronous view of one, or anything
            NumPy makes an array of) whose shape and dtype the new array takes, and its
            chunk shape if regular (a dask array's ``chunksize``); from a zarrfast array
            also its fill value and order and, when it is of the group's Zarr format (and
            ``dtype`` is not another), its codecs with the chunk grid they go with (a
            sharded array: its shards and inner chunks; a rectilinear grid), as
            [zarrfast.zeros_like][] copies them, else its (inner) chunks.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...), which override what is copied.
            Given ``filters``, ``serializer``, ``compressors`` or ``compressor``, no
            codec is copied; given ``chunks`` or ``shards``, a sharded array's codecs are
            not (an unsharded array's go inside the ``shards`` given).

        Returns
        -------
        Array
            The new array; its elements read as the fill value until written.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> src = g.create_array("src", shape=(4,), dtype="int16", chunks=(2,))
        >>> a = g.empty_like(name="e", data=src)
        >>> a.shape, a.dtype, a.chunks
        ((4,), dtype('int16'), (2,))
        """
        check_member_keywords("empty_like", kwargs)
        return self.create_array(name, **like_kwargs(data, kwargs, self.zarr_format))

    def zeros_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        """Create a member array of zeros like ``data`` (no chunk is written).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array ([zarrfast.Array][], an asynchronous view of one, or anything
            NumPy makes an array of) whose shape and dtype the new array takes, and its
            chunk shape if regular (a dask array's ``chunksize``); from a zarrfast array
            also its fill value and order and, when it is of the group's Zarr format (and
            ``dtype`` is not another), its codecs with the chunk grid they go with (a
            sharded array: its shards and inner chunks; a rectilinear grid), as
            [zarrfast.zeros_like][] copies them, else its (inner) chunks.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...), which override what is copied.
            Given ``filters``, ``serializer``, ``compressors`` or ``compressor``, no
            codec is copied; given ``chunks`` or ``shards``, a sharded array's codecs are
            not (an unsharded array's go inside the ``shards`` given).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.zeros_like(name="z", data=np.ones((2, 2), dtype="int8"))[:]
        array([[0, 0],
               [0, 0]], dtype=int8)
        """
        check_member_keywords("zeros_like", kwargs)
        return self.create_array(
            name, **{**like_kwargs(data, kwargs, self.zarr_format), "fill_value": 0})

    def ones_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        """Create a member array of ones like ``data`` (no chunk is written).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array ([zarrfast.Array][], an asynchronous view of one, or anything
            NumPy makes an array of) whose shape and dtype the new array takes, and its
            chunk shape if regular (a dask array's ``chunksize``); from a zarrfast array
            also its fill value and order and, when it is of the group's Zarr format (and
            ``dtype`` is not another), its codecs with the chunk grid they go with (a
            sharded array: its shards and inner chunks; a rectilinear grid), as
            [zarrfast.zeros_like][] copies them, else its (inner) chunks.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...), which override what is copied.
            Given ``filters``, ``serializer``, ``compressors`` or ``compressor``, no
            codec is copied; given ``chunks`` or ``shards``, a sharded array's codecs are
            not (an unsharded array's go inside the ``shards`` given).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.ones_like(name="o", data=np.zeros(3, dtype="int8"))[:]
        array([1, 1, 1], dtype=int8)
        """
        check_member_keywords("ones_like", kwargs)
        return self.create_array(
            name, **{**like_kwargs(data, kwargs, self.zarr_format), "fill_value": 1})

    def full_like(self, *, name: str, data: Any, **kwargs: Any) -> Array:
        """Create a member array like ``data`` filled with ``fill_value`` (a keyword).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array ([zarrfast.Array][], an asynchronous view of one, or anything
            NumPy makes an array of) whose shape and dtype the new array takes, and its
            chunk shape if regular (a dask array's ``chunksize``); from a zarrfast array
            also its fill value and order and, when it is of the group's Zarr format (and
            ``dtype`` is not another), its codecs with the chunk grid they go with (a
            sharded array: its shards and inner chunks; a rectilinear grid), as
            [zarrfast.zeros_like][] copies them, else its (inner) chunks.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...); ``fill_value`` is the value of every
            element (else ``data``'s fill value for a zarrfast array, else the data
            type's default).
            Given ``filters``, ``serializer``, ``compressors`` or ``compressor``, no
            codec is copied; given ``chunks`` or ``shards``, a sharded array's codecs are
            not (an unsharded array's go inside the ``shards`` given).

        Returns
        -------
        Array
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g.full_like(name="f", data=np.zeros(3, dtype="int8"), fill_value=5)[:]
        array([5, 5, 5], dtype=int8)
        """
        check_member_keywords("full_like", kwargs)
        return self.create_array(name, **like_kwargs(data, kwargs, self.zarr_format))

    def move(self, source: str, dest: str) -> None:
        """Move the member at ``source`` (with everything below it) to ``dest``.

        Both are paths below this group.  Missing groups above ``dest`` are created.
        Every key is copied, then the source deleted: not atomic, and it takes as
        long as copying the data.

        Parameters
        ----------
        source : str
            The path (relative to this group) of the array or group to move.
        dest : str
            Its new path (relative to this group); nothing must be there.

        Raises
        ------
        zarrfast.errors.MemberNotFoundError
            There is no member at ``source``.
        zarrfast.errors.ContainsArrayError
            An array is at ``dest`` already, or above it.
        zarrfast.errors.ContainsGroupError
            A group is at ``dest`` already.
        zarrfast.errors.ZarrfastError
            ``dest`` is ``source`` or inside it.
        zarrfast.errors.ReadOnlyError
            The group is read-only.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> g["a"] = np.arange(3)
        >>> g.move("a", "sub/b")
        >>> sorted(g), g["sub/b"][:]
        (['sub'], array([0, 1, 2]))
        """
        self._check_writable()
        src = self._child_path(source)
        dst = self._child_path(dest)
        if existing_node(self._store, src) is None:
            raise MemberNotFoundError(f"group {self.name!r} has no member {source!r}")
        if dst == src or dst.startswith(src + "/"):
            raise ZarrfastError(f"cannot move {source!r} to {dest!r}: that is inside it")
        there = existing_node(self._store, dst)
        if there is not None:
            cls, what = ((ContainsArrayError, "an array") if there[1] == "array"
                         else (ContainsGroupError, "a group"))
            raise cls(f"cannot move {source!r} to {dest!r}: {what} is there already")
        # the destination's missing parents are made plain groups (none may be an array);
        # then every key moves
        fmt = self.zarr_format
        parents = check_new_node(self._store, dst, fmt, overwrite=False)
        if parents:
            write_new_node(self._store, parents[-1], empty_group_metadata(fmt),
                           overwrite=False)
        for key in list(self._store.list_prefix(src + "/")):
            value = self._store.get(key)
            if value is not None:
                self._store.set(dst + key[len(src):], value)
        self._store.delete_dir(src)
        delete_node_metadata(self._store, src)
        self._consolidated = None

    def tree(self, expand: bool | None = None, level: int | None = None, *,
             max_nodes: int = 500, plain: bool = False) -> TreeRepr:
        """Draw the hierarchy below this group, as zarr-python draws it.

        Box-drawing lines, members sorted by name, arrays with their shape and dtype.

        Parameters
        ----------
        expand : None
            zarr-python's keyword; only ``None`` (not implemented there either).
        level : int or None, default None
            How far below the direct members to descend (``0``: the direct members
            only; ``None``: all).
        max_nodes : int, default 500
            Draw at most this many nodes (a note then says some were left out).
        plain : bool, default False
            No bold names (else ANSI bold on a terminal, ``<b>`` in the HTML).

        Returns
        -------
        TreeRepr
            Prints as the tree (``repr`` and ``str``); shows as HTML in Jupyter.

        Raises
        ------
        NotImplementedError
            ``expand`` is not None.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(2, 3), dtype="int8")
        >>> _ = g.create_array("y", shape=(4,), dtype="float32")
        >>> g.tree(plain=True)
        /
        ├── sub
        │   └── x (2, 3) int8
        └── y (4,) float32
        """
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
        """Return ``info`` with the number of members, arrays and groups below the group.

        The counts are of all depths; this reads the store unless the group was
        opened from consolidated metadata.

        Returns
        -------
        GroupInfo
            Prints as zarr-python's group info.

        Examples
        --------
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(2,), dtype="int8")
        >>> print(g.info_complete())
        Name        :
        Type        : Group
        Zarr format : 3
        Read-only   : False
        Store type  : MemoryStore
        No. members : 2
        No. arrays  : 1
        No. groups  : 1
        """
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


def like_kwargs(data: Any, kwargs: dict[str, Any],
                zarr_format: int | None = None) -> dict[str, Any]:
    """``kwargs`` completed with what the ``*_like`` methods copy from ``data``, as
    ``create_array`` takes it (``kwargs`` win): what :func:`zarrfast.zeros_like` copies
    (``zarrfast.hierarchy.like.like_kwargs_of``) but the Zarr format, which is the group's.

    That is the shape and dtype; from any other array than a zarrfast one its regular chunk
    shape (a dask array's ``chunksize``); from a zarrfast array (or an asynchronous view of
    one) its fill value, order and, when the new array is of its Zarr format (``kwargs``'
    ``zarr_format``, else ``zarr_format``: the group's; not known, no codecs are copied)
    and data type, its codecs with the chunk grid they go with, as ``like_kwargs_of`` copies
    them (given ``shards``, an unsharded array's codecs go inside them); a sharded array's
    codecs not when ``kwargs`` give ``chunks`` or ``shards`` (``chunks`` are here the inner
    chunks: the array is not sharded unless ``shards`` are given)."""
    from zarrfast.codecs.sharding import ShardingCodec
    from zarrfast.hierarchy.legacy import split_codecs

    fmt = kwargs.get("zarr_format") or zarr_format
    passed = {k: v for k, v in kwargs.items()
              if k == "dtype" or (k in CODEC_KEYWORDS and k != "shards")}
    like = like_kwargs_of(data, {**passed, "zarr_format": fmt}, codecs=fmt is not None)
    if ("codecs" in like and not {"chunks", "shards"}.isdisjoint(kwargs)
            and any(isinstance(c, ShardingCodec) for c in like["codecs"])):
        like = like_kwargs_of(data, {**passed, "zarr_format": fmt}, codecs=False)
    out = dict(kwargs)
    for key in ("shape", "dtype", "chunks", "fill_value", "order", "compressor", "filters"):
        if key in like:
            out.setdefault(key, like[key])
    if "codecs" in like:
        out.update(split_codecs(like["codecs"]))
    return out
