"""zarr-python's asynchronous nodes: :class:`AsyncArray` and :class:`AsyncGroup`.

Each is a view over one synchronous :class:`~zarrfast.Array` / :class:`~zarrfast.Group`
(``_node``) and shares its state: ``Array(a.async_array) is a`` and
``a.async_array is a.async_array``.  Properties (``shape``, ``dtype``, ``attrs``...) are
the node's.  Each coroutine runs the node's synchronous method on a worker thread of the
running event loop (``asyncio.to_thread``), so the loop is never blocked.  There the
engine does what it always does: it splits the selection into chunk tasks on zarrfast's
shared pools and fetches chunks with the store's ``get_many`` (a remote store keeps many
requests in flight at once).  There is one read and one write implementation, no
coroutine per chunk, and the synchronous path does not change.

Many ``await``\\ s running at once (``asyncio.gather``) run on as many worker threads as
the loop's default executor has.  Cancelling a task that awaits one stops the waiting,
not the work: a read's result is dropped, a write still completes (a thread cannot be
interrupted halfway through writing chunks, and a half-written selection would be worse).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from zarrfast.concurrency import in_thread
from zarrfast.errors import ZarrDeprecationWarning, ZarrfastError
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group, check_member_keywords, like_kwargs, node_from_metadata
from zarrfast.hierarchy.keywords import check_keywords, keyword_names
from zarrfast.hierarchy.legacy import create_legacy
from zarrfast.hierarchy.node import AsyncNode, read_typed_metadata, write_new_node
from zarrfast.metadata.paths import normalize_path
from zarrfast.storage.asynchronous import StorePath, store_path_of

__all__ = ["AsyncArray", "AsyncGroup", "async_view", "metadata_from_dict"]

T = TypeVar("T")


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a worker thread of the running loop (a cancelled await
    leaves it running to its end: :func:`zarrfast.concurrency.in_thread`)."""
    return await in_thread(fn, *args, **kwargs)


def async_view(node: Any) -> Any:
    """The asynchronous view of a node (an :class:`Array` or a :class:`Group`); anything
    else (a view already, ``None``) is returned as it is."""
    if isinstance(node, (Array, Group)):
        return node._async_view()
    return node


def _store_and_path(store: Any, path: str | None = None, *, read_only: bool = False
                    ) -> tuple[Any, str]:
    sp = store_path_of(store, normalize_path(path), read_only=read_only)
    return sp.store, normalize_path(sp.path)


def metadata_from_dict(data: Any, node_type: str, path: str = "") -> Any:
    """Node metadata from zarr-python's ``to_dict()`` form: a v3 ``zarr.json`` document,
    or for v2 the ``.zarray`` / ``.zgroup`` members with ``attributes`` beside them."""
    from zarrfast.metadata.v2 import ArrayMetadataV2, GroupMetadataV2
    from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata

    where = f"{node_type} {path or '/'!r}"
    if not isinstance(data, Mapping):
        raise ZarrfastError(f"{where}: metadata must be a dict, got {data!r}")
    fmt = data.get("zarr_format")
    if fmt == 3:
        cls3 = GroupMetadata if node_type == "group" else ArrayMetadata
        return cls3.from_dict(dict(data), path=path)
    if fmt == 2:
        doc = {k: v for k, v in data.items() if k != "attributes"}
        attrs = dict(data.get("attributes") or {})
        if node_type == "group":
            return GroupMetadataV2(attributes=attrs)
        return ArrayMetadataV2.from_dict(doc, attrs, path=path)
    raise ZarrfastError(f"{where}: zarr_format must be 2 or 3, got {fmt!r}")


def _node_attribute(view: AsyncNode, name: str) -> Any:
    """A plain attribute of the node under ``view``.  The node's synchronous methods are
    not handed out: awaiting what one returns would fail far from the cause."""
    if name.startswith("__") or name == "_node":
        raise AttributeError(name)
    value = getattr(view._node, name)
    if inspect.ismethod(value):
        kind = type(view._node).__name__
        raise AttributeError(
            f"{type(view).__name__} has no coroutine {name!r}; {kind}.{name} is "
            f"synchronous: call it on {kind}(view) (the same {kind.lower()})")
    return value


class _AsyncIndexer:
    """``await a.oindex.getitem(sel)`` / ``await a.vindex.setitem(sel, value)``."""

    __slots__ = ("_get", "_set")

    def __init__(self, get: Callable[[Any], Any], set_: Callable[[Any, Any], Any]) -> None:
        self._get, self._set = get, set_

    async def getitem(self, selection: Any) -> Any:
        return await _call(self._get, selection)

    async def setitem(self, selection: Any, value: Any) -> None:
        await _call(self._set, selection, value)


class AsyncArray(AsyncNode, kind="array", node_type=Array):
    """An array whose reads and writes are coroutines (zarr-python's ``AsyncArray``).

    Make one with :func:`zarrfast.api.asynchronous.create_array` / ``open_array``,
    :meth:`AsyncArray.create` / :meth:`AsyncArray.open`, or take ``array.async_array``.
    ``AsyncArray(metadata, store_path)`` makes one from metadata at a
    :class:`~zarrfast.storage.StorePath`, as in zarr-python."""

    __slots__ = ()

    def __init__(self, metadata: Any, store_path: StorePath, config: Mapping[str, Any] | None
                 = None) -> None:
        cfg = dict(config or {})
        sp = store_path_of(store_path)
        self._node = Array(sp.store, normalize_path(sp.path), metadata,
                           write_empty_chunks=cfg.get("write_empty_chunks"),
                           order=cfg.get("order"))  # None: config array.order
        self._node.__dict__["_async_view_"] = self  # (the node's one view)

    @classmethod
    def from_dict(cls, store_path: Any, data: Mapping[str, Any]) -> AsyncArray:
        """The array at ``store_path`` described by ``data`` (its metadata as a dict);
        nothing is read or written."""
        sp = store_path_of(store_path)
        return cls(metadata_from_dict(data, "array", sp.path), sp)

    # -- making one ---------------------------------------------------------------------
    @classmethod
    async def open(cls, store: Any, zarr_format: int | None = 3, *, path: str | None = None,
                   read_only: bool = False) -> AsyncArray:
        """The array at ``store`` (a :class:`StorePath`, a store, a directory...)."""
        def open_() -> Array:
            s, p = _store_and_path(store, path, read_only=read_only)
            md = read_typed_metadata(s, p, "array", zarr_format)
            return Array(s, p, md, read_only=read_only or s.read_only)
        return (await _call(open_))._async_view()

    @classmethod
    async def create(cls, store: Any, *, shape: Any, dtype: Any, path: str | None = None,
                     zarr_format: int | None = 3, **kwargs: Any) -> AsyncArray:
        """A new array at ``store`` (a :class:`StorePath`, a store, a directory...), from
        the arguments of :func:`zarrfast.create` (zarr-python's ``AsyncArray.create``:
        ``chunks`` / ``chunk_shape``, ``codecs``, ``compressor``, ``filters``,
        ``dimension_separator``, ``fill_value``, ``attributes``, ``overwrite``, ``data``...)."""
        check_keywords("create", kwargs, keyword_names(
            create_legacy, exclude={"store", "path", "shape", "dtype", "zarr_format"}))

        def create() -> Array:
            s, p = _store_and_path(store, path)
            return create_legacy(s, p, shape=shape, dtype=dtype, zarr_format=zarr_format,
                                 **kwargs)
        return (await _call(create))._async_view()

    # -- what the array is (no I/O) -------------------------------------------------------
    def __repr__(self) -> str:
        return f"<AsyncArray {self._node.store!r}{self._node.name} shape={self.shape} " \
               f"dtype={self.dtype}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncArray):
            n, o = self._node, other._node
            return (n is o or (n.store == o.store and n.path == o.path
                               and n.metadata == o.metadata))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._node.store, self._node.path))

    def __getattr__(self, name: str) -> Any:
        # the array's properties and other plain attributes (shape, dtype, chunks, shards,
        # ndim, size, nbytes, fill_value, order, filters, serializer, compressors,
        # dimension_names, nchunks, cdata_shape, zarr_format, read_only...)
        return _node_attribute(self, name)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._node.shape

    @property
    def dtype(self) -> Any:
        return self._node.dtype

    @property
    def chunks(self) -> tuple[int, ...]:
        return self._node.chunks

    @property
    def info(self) -> Any:
        return self._node.info

    # -- reads ----------------------------------------------------------------------------
    async def getitem(self, selection: Any, *, prototype: Any = None) -> Any:
        """``await a.getitem(sel)``: what ``array[sel]`` gives."""
        return await _call(self._node.__getitem__, selection)

    async def get_basic_selection(self, selection: Any = Ellipsis, *, out: Any = None,
                                  fields: Any = None, prototype: Any = None) -> Any:
        return await _call(self._node.get_basic_selection, selection, out=out, fields=fields)

    async def get_orthogonal_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        return await _call(self._node.get_orthogonal_selection, selection, out=out,
                           fields=fields)

    async def get_coordinate_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        return await _call(self._node.get_coordinate_selection, selection, out=out,
                           fields=fields)

    async def get_mask_selection(self, mask: Any, *, out: Any = None, fields: Any = None,
                                 prototype: Any = None) -> Any:
        return await _call(self._node.get_mask_selection, mask, out=out, fields=fields)

    async def get_block_selection(self, selection: Any, *, out: Any = None,
                                  fields: Any = None, prototype: Any = None) -> Any:
        return await _call(self._node.get_block_selection, selection, out=out, fields=fields)

    @property
    def oindex(self) -> _AsyncIndexer:
        return _AsyncIndexer(self._node.get_orthogonal_selection,
                             self._node.set_orthogonal_selection)

    @property
    def vindex(self) -> _AsyncIndexer:
        idx = self._node.vindex
        return _AsyncIndexer(idx.__getitem__, idx.__setitem__)

    # -- writes ---------------------------------------------------------------------------
    async def setitem(self, selection: Any, value: Any, *, prototype: Any = None) -> None:
        """``await a.setitem(sel, value)``: what ``array[sel] = value`` does."""
        await _call(self._node.__setitem__, selection, value)

    async def set_basic_selection(self, selection: Any, value: Any, *, fields: Any = None
                                  ) -> None:
        await _call(self._node.set_basic_selection, selection, value, fields=fields)

    async def set_orthogonal_selection(self, selection: Any, value: Any, *,
                                       fields: Any = None) -> None:
        await _call(self._node.set_orthogonal_selection, selection, value, fields=fields)

    async def set_coordinate_selection(self, selection: Any, value: Any, *,
                                       fields: Any = None) -> None:
        await _call(self._node.set_coordinate_selection, selection, value, fields=fields)

    async def set_mask_selection(self, mask: Any, value: Any, *, fields: Any = None) -> None:
        await _call(self._node.set_mask_selection, mask, value, fields=fields)

    async def set_block_selection(self, selection: Any, value: Any, *, fields: Any = None
                                  ) -> None:
        await _call(self._node.set_block_selection, selection, value, fields=fields)

    async def resize(self, new_shape: Any, delete_outside_chunks: bool = True) -> AsyncArray:
        """Change the shape (chunks wholly outside it are deleted); returns this array."""
        if not delete_outside_chunks:
            raise ZarrfastError(f"array {self.name!r}: resize always deletes the chunks "
                                f"outside the new shape (delete_outside_chunks=False is not "
                                f"supported)")
        await _call(self._node.resize, new_shape)
        return self

    async def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow along ``axis`` and write ``data`` there; returns the new shape."""
        return await _call(self._node.append, data, axis)

    async def update_attributes(self, new_attributes: dict[str, Any]) -> AsyncArray:
        await _call(self._node.update_attributes, new_attributes)
        return self

    def with_config(self, config: Any) -> AsyncArray:
        """This array with another runtime configuration (an ``ArrayConfig`` or a dict; the
        keys left out keep their values), as zarr-python's: a plain method, nothing to await."""
        return self._node.with_config(config).async_array

    # -- what the store holds -------------------------------------------------------------
    async def nchunks_initialized(self) -> int:
        return await _call(lambda: self._node.nchunks_initialized)

    async def nbytes_stored(self) -> int:
        return await _call(self._node.nbytes_stored)

    async def info_complete(self) -> Any:
        return await _call(self._node.info_complete)


class AsyncGroup(AsyncNode, kind="group", node_type=Group):
    """A group whose lookups and changes are coroutines (zarr-python's ``AsyncGroup``).

    Members come back as :class:`AsyncArray` / :class:`AsyncGroup`; ``members()``,
    ``keys()``, ``arrays()`` and ``groups()`` are async iterators."""

    __slots__ = ()

    def __init__(self, metadata: Any, store_path: StorePath,
                 consolidated_metadata: Any = None) -> None:
        sp = store_path_of(store_path)
        self._node = Group(sp.store, normalize_path(sp.path), metadata,
                           consolidated=consolidated_metadata)
        self._node.__dict__["_async_view_"] = self  # (the node's one view)

    @classmethod
    def from_dict(cls, store_path: Any, data: Mapping[str, Any]) -> AsyncGroup:
        """The group at ``store_path`` described by ``data`` (its metadata as a dict);
        nothing is read or written."""
        sp = store_path_of(store_path)
        return cls(metadata_from_dict(data, "group", sp.path), sp)

    # -- making one ---------------------------------------------------------------------
    @classmethod
    async def from_store(cls, store: Any, *, attributes: Mapping[str, Any] | None = None,
                         overwrite: bool = False, zarr_format: int = 3) -> AsyncGroup:
        """A new group at ``store`` (a :class:`StorePath`, a store, a directory...); an
        existing node there is an error unless ``overwrite``."""
        def create() -> Group:
            return Group.from_store(store, attributes=attributes, zarr_format=zarr_format,
                                    overwrite=overwrite)
        return (await _call(create))._async_view()

    @classmethod
    async def open(cls, store: Any, zarr_format: int | None = 3, *, path: str | None = None,
                   use_consolidated: bool | str | None = None) -> AsyncGroup:
        """The group at ``store`` (consolidated metadata is used where the group has
        it, unless ``use_consolidated`` is false; required if true)."""
        def open_() -> Group:
            return Group.open(store, zarr_format, path=path, use_consolidated=use_consolidated)
        return (await _call(open_))._async_view()

    # -- what the group is (no I/O) -------------------------------------------------------
    def __repr__(self) -> str:
        return f"<AsyncGroup {self._node.store!r}{self._node.name}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncGroup):
            return self._node == other._node
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._node)

    def __getattr__(self, name: str) -> Any:
        # zarr_format, read_only and the group's other plain attributes
        return _node_attribute(self, name)

    @property
    def info(self) -> Any:
        return self._node.info

    # -- members --------------------------------------------------------------------------
    async def getitem(self, key: str) -> AsyncArray | AsyncGroup:
        return async_view(await _call(self._node.__getitem__, key))

    async def get(self, key: str, default: Any = None) -> Any:
        return async_view(await _call(self._node.get, key, default))

    async def contains(self, member: str) -> bool:
        return await _call(self._node.__contains__, member)

    async def delitem(self, key: str) -> None:
        await _call(self._node.__delitem__, key)

    async def setitem(self, key: str, value: Any) -> None:
        await _call(self._node.__setitem__, key, value)

    async def nmembers(self, max_depth: int | None = 0) -> int:
        return len(await _call(self._node.members, max_depth))

    async def members(self, max_depth: int | None = 0, *,
                      use_consolidated_for_children: bool = True
                      ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """``(relative path, node)`` for the members down to ``max_depth`` levels below
        the direct children (``None``: all), as an async iterator; see
        :meth:`Group.members`."""
        for key, node in await _call(
                self._node.members, max_depth,
                use_consolidated_for_children=use_consolidated_for_children):
            yield key, async_view(node)

    async def keys(self) -> AsyncIterator[str]:
        for key in await _call(lambda: list(self._node.keys())):
            yield key

    async def arrays(self) -> AsyncIterator[tuple[str, AsyncArray]]:
        for key, node in await _call(lambda: list(self._node.arrays())):
            yield key, async_view(node)

    async def groups(self) -> AsyncIterator[tuple[str, AsyncGroup]]:
        for key, node in await _call(lambda: list(self._node.groups())):
            yield key, async_view(node)

    async def array_keys(self) -> AsyncIterator[str]:
        for key in await _call(lambda: list(self._node.array_keys())):
            yield key

    async def group_keys(self) -> AsyncIterator[str]:
        for key in await _call(lambda: list(self._node.group_keys())):
            yield key

    async def array_values(self) -> AsyncIterator[AsyncArray]:
        async for _, node in self.arrays():
            yield node

    async def group_values(self) -> AsyncIterator[AsyncGroup]:
        async for _, node in self.groups():
            yield node

    # -- creating members -----------------------------------------------------------------
    async def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                           overwrite: bool = False) -> AsyncGroup:
        return async_view(await _call(self._node.create_group, name, attributes=attributes,
                                      overwrite=overwrite))

    async def require_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                            overwrite: bool = False) -> AsyncGroup:
        return async_view(await _call(self._node.require_group, name, attributes=attributes,
                                      overwrite=overwrite))

    async def require_groups(self, *names: str) -> tuple[AsyncGroup, ...]:
        return tuple(async_view(g) for g in await _call(self._node.require_groups, *names))

    async def create_array(self, name: str, *, shape: Any = None, dtype: Any = None,
                           data: Any = None, overwrite: bool = False, **kwargs: Any
                           ) -> AsyncArray:
        """A new member array (arguments as :func:`zarrfast.create_array`)."""
        return async_view(await _call(self._node.create_array, name, shape=shape,
                                      dtype=dtype, data=data, overwrite=overwrite, **kwargs))

    async def create_dataset(self, name: str, **kwargs: Any) -> AsyncArray:
        """zarr-python's deprecated name of :meth:`create_array` (warns first, also when the
        creation then fails)."""
        warnings.warn("AsyncGroup.create_dataset is deprecated and will be removed in a "
                      "future version. Use Group.create_array instead.",
                      ZarrDeprecationWarning, stacklevel=2)
        if kwargs.get("data") is not None:
            kwargs.pop("shape", None)
        return await self.create_array(name, **kwargs)

    async def require_dataset(self, name: str, *, shape: Any, **kwargs: Any) -> AsyncArray:
        """zarr-python's deprecated name of :meth:`require_array`."""
        warnings.warn("AsyncGroup.require_dataset is deprecated and will be removed in a "
                      "future version. Use Group.require_array instead.",
                      ZarrDeprecationWarning, stacklevel=2)
        return await self.require_array(name, shape=shape, **kwargs)

    async def require_array(self, name: str, *, shape: Any, dtype: Any = None,
                            exact: bool = False, **kwargs: Any) -> AsyncArray:
        check_member_keywords("require_array", kwargs)
        return async_view(await _call(self._node.require_array, name, shape=shape,
                                      dtype=dtype, exact=exact, **kwargs))

    async def empty(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("empty", kwargs)
        return await self.create_array(name, shape=shape, **kwargs)

    async def zeros(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("zeros", kwargs)
        return await self.create_array(name, shape=shape, fill_value=0, **kwargs)

    async def ones(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("ones", kwargs)
        return await self.create_array(name, shape=shape, fill_value=1, **kwargs)

    async def full(self, *, name: str, shape: Any, fill_value: Any, **kwargs: Any
                   ) -> AsyncArray:
        check_member_keywords("full", kwargs)
        return await self.create_array(name, shape=shape, fill_value=fill_value, **kwargs)

    async def empty_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        """A member array shaped like ``data`` (its shape, dtype and, for a chunked array,
        chunks), elements at the fill value."""
        check_member_keywords("empty_like", kwargs)
        return await self.create_array(name, **like_kwargs(data, kwargs))

    async def zeros_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("zeros_like", kwargs)
        return await self.create_array(name, **{**like_kwargs(data, kwargs), "fill_value": 0})

    async def ones_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("ones_like", kwargs)
        return await self.create_array(name, **{**like_kwargs(data, kwargs), "fill_value": 1})

    async def full_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        check_member_keywords("full_like", kwargs)
        return await self.create_array(name, **like_kwargs(data, kwargs))

    async def create_hierarchy(self, nodes: Mapping[str, Any], *, overwrite: bool = False
                               ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """Write the metadata of many nodes below this group (``{relative path:
        metadata}``) and yield ``(relative path, node)`` for each."""
        def create() -> list[tuple[str, Any]]:
            group = self._node
            group._check_writable()
            made = []
            for key, md in nodes.items():
                path = group._child_path(key)
                write_new_node(group.store, path, md, overwrite=overwrite)
                made.append((key, node_from_metadata(group.store, path, md, read_only=False)))
            group._consolidated = None
            return made
        for key, node in await _call(create):
            yield key, async_view(node)

    @property
    def synchronizer(self) -> None:
        """zarr-python's (unused) synchronizer: always ``None``."""
        return None

    async def move(self, source: str, dest: str) -> None:
        await _call(self._node.move, source, dest)

    async def update_attributes(self, new_attributes: dict[str, Any]) -> AsyncGroup:
        await _call(self._node.update_attributes, new_attributes)
        return self

    async def info_complete(self) -> Any:
        return await _call(lambda: self._node.info)

    async def tree(self, expand: bool | None = None, level: int | None = None, *,
                   max_nodes: int = 500, plain: bool = False) -> Any:
        return await _call(self._node.tree, expand=expand, level=level, max_nodes=max_nodes,
                           plain=plain)

