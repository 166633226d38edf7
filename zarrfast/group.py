"""The :class:`Group`: a node holding arrays and groups."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._create import read_node_metadata, write_new_node
from ._node import Node
from ._paths import join_path, metadata_key
from .array import Array
from .attributes import Attributes
from .errors import (
    ContainsArrayError,
    MemberNotFoundError,
    NodeNotFoundError,
)
from .metadata.v3 import ArrayMetadata, GroupMetadata
from .stores import Store

__all__ = ["Group"]


def node_from_metadata(store: Store, path: str, md: ArrayMetadata | GroupMetadata,
                       read_only: bool) -> Array | Group:
    if isinstance(md, ArrayMetadata):
        return Array(store, path, md, read_only=read_only)
    return Group(store, path, md, read_only=read_only)


class Group(Node):
    """A Zarr group: a mapping of member names to arrays and groups."""

    _kind = "group"

    def __init__(self, store: Store, path: str, metadata: GroupMetadata, *,
                 read_only: bool | None = None) -> None:
        super().__init__(store, path, metadata, read_only)

    # -- properties -------------------------------------------------------------------
    @property
    def attrs(self) -> Attributes:
        return Attributes(lambda: self._metadata.attributes, self._put_attributes,
                          f"group {self.name!r}")

    def _put_attributes(self, attrs: dict[str, Any]) -> None:
        self._check_writable()
        md = GroupMetadata(attributes=attrs, extra=self._metadata.extra)
        self._store.set(metadata_key(self._path), md.to_json())
        self._metadata = md

    def update_attributes(self, new_attributes: dict[str, Any]) -> Group:
        self.attrs.update(new_attributes)
        return self

    def __repr__(self) -> str:
        return f"<zarrfast.Group {self._store!r} {self.name!r}>"

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self._store, "path": self._path, "metadata": self._metadata.to_json(),
                "read_only": self._read_only}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from .metadata.v3 import parse_metadata

        md = parse_metadata(state["metadata"], path=state["path"], key="<pickle>")
        self.__init__(state["store"], state["path"], md,  # type: ignore[misc]
                      read_only=state["read_only"])

    # -- members -------------------------------------------------------------------------
    def _child_path(self, name: str) -> str:
        return join_path(self._path, name)

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        try:
            md = read_node_metadata(self._store, path)
        except NodeNotFoundError:
            raise MemberNotFoundError(
                f"group {self.name!r} has no member {name!r} (no {metadata_key(path)!r})"
            ) from None
        return node_from_metadata(self._store, path, md, self._read_only)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except MemberNotFoundError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            path = self._child_path(name)
        except Exception:  # noqa: BLE001 - an invalid name is simply not a member
            return False
        return self._store.exists(metadata_key(path))

    def _child_names(self) -> list[str]:
        prefix = self._path + "/" if self._path else ""
        names = []
        for name in self._store.list_dir(prefix):
            if name == "zarr.json":
                continue
            if self._store.exists(f"{prefix}{name}/zarr.json"):
                names.append(name)
        return names

    def keys(self) -> Iterator[str]:
        return iter(self._child_names())

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return len(self._child_names())

    def members(self, max_depth: int | None = 0) -> tuple[tuple[str, Array | Group], ...]:
        """``(relative path, node)`` for the members, down to ``max_depth`` levels below the
        direct children (``None``: all)."""
        out: list[tuple[str, Array | Group]] = []

        def walk(group: Group, rel: str, depth: int) -> None:
            for name in group._child_names():
                node = group[name]
                key = f"{rel}/{name}" if rel else name
                out.append((key, node))
                if isinstance(node, Group) and (max_depth is None or depth < max_depth):
                    walk(node, key, depth + 1)

        walk(self, "", 0)
        return tuple(out)

    def arrays(self) -> Iterator[tuple[str, Array]]:
        return ((k, v) for k, v in self.members() if isinstance(v, Array))

    def groups(self) -> Iterator[tuple[str, Group]]:
        return ((k, v) for k, v in self.members() if isinstance(v, Group))

    def array_keys(self) -> Iterator[str]:
        return (k for k, _ in self.arrays())

    def group_keys(self) -> Iterator[str]:
        return (k for k, _ in self.groups())

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if not self._store.exists(metadata_key(path)):
            raise MemberNotFoundError(f"group {self.name!r} has no member {name!r}")
        self._store.delete_dir(path)
        self._store.delete(metadata_key(path))

    # -- creation -------------------------------------------------------------------------
    def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        self._check_writable()
        path = self._child_path(name)
        md = GroupMetadata(attributes=dict(attributes or {}))
        write_new_node(self._store, path, md, overwrite=overwrite)
        return Group(self._store, path, md, read_only=False)

    def require_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                      overwrite: bool = False) -> Group:
        """The member group ``name``, created if missing."""
        if not overwrite and name in self:
            node = self[name]
            if not isinstance(node, Group):
                raise ContainsArrayError(
                    f"member {name!r} of group {self.name!r} is an array, not a group"
                )
            return node
        return self.create_group(name, attributes=attributes, overwrite=overwrite)

    def require_groups(self, *names: str) -> tuple[Group, ...]:
        return tuple(self.require_group(n) for n in names)

    def create_array(self, name: str, *, shape: Any = None, dtype: Any = None,
                     data: Any = None, overwrite: bool = False, **kwargs: Any) -> Array:
        """Create an array member; arguments as for :func:`zarrfast.create_array`."""
        from ._api import _create_array_at

        self._check_writable()
        return _create_array_at(self._store, self._child_path(name), shape=shape, dtype=dtype,
                                data=data, overwrite=overwrite, **kwargs)

    def require_array(self, name: str, *, shape: Any, dtype: Any = None, **kwargs: Any) -> Array:
        if name in self:
            node = self[name]
            if not isinstance(node, Array):
                raise ContainsArrayError(f"member {name!r} of {self.name!r} is a group")
            if tuple(node.shape) != tuple(shape if isinstance(shape, tuple) else (shape,)):
                from .errors import ZarrfastError

                raise ZarrfastError(
                    f"array {node.name!r} exists with shape {node.shape}, not {shape}"
                )
            return node
        return self.create_array(name, shape=shape, dtype=dtype, **kwargs)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Group) and other._store == self._store
                and other._path == self._path)

    def __hash__(self) -> int:
        return hash((self._store, self._path))


