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
from zarrfast.hierarchy.array import Array, array_config_keywords, read_array_metadata
from zarrfast.hierarchy.array_config import runtime_keywords
from zarrfast.hierarchy.group import (
    Group,
    _float64_unless,
    check_member_keywords,
    like_kwargs,
    node_from_metadata,
)
from zarrfast.hierarchy.keywords import check_keywords, keyword_names
from zarrfast.hierarchy.legacy import create_legacy
from zarrfast.hierarchy.node import AsyncNode, write_new_node
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

    It is a view over one [zarrfast.Array][] and shares its state:
    ``array.async_array`` is the array's view, ``zarrfast.Array(view)`` the array.
    Its properties (``shape``, ``dtype``, ``chunks``, ``attrs``, ``ndim``,
    ``fill_value``...) are the array's; each coroutine runs the array's
    synchronous method on a worker thread of the running event loop, so the loop
    is never blocked.  Cancelling an await stops the waiting, not the work: a read's
    result is dropped, a write still completes.

    Make one with ``zarrfast.api.asynchronous.create_array`` / ``open_array``,
    ``AsyncArray.create`` / ``AsyncArray.open``, or take ``array.async_array``.
    ``AsyncArray(metadata, store_path)`` makes one from metadata at a
    [zarrfast.storage.StorePath][], as in zarr-python (nothing is read or written).

    Parameters
    ----------
    metadata : ArrayMetadata or ArrayMetadataV2
        The array's metadata.
    store_path : StorePath
        Where the array is: a [zarrfast.storage.StorePath][] (or what
        ``StorePath`` is made from).
    config : Mapping[str, Any] or None, default None
        Runtime configuration: ``write_empty_chunks`` and ``order`` (``None``: the
        global configuration's).

    Examples
    --------
    >>> import asyncio
    >>> async def main():
    ...     a = await zarrfast.AsyncArray.create(zarrfast.MemoryStore(), shape=(2, 3),
    ...                                          dtype="int32")
    ...     await a.setitem(..., np.arange(6).reshape(2, 3))
    ...     return await a.getitem((1, slice(None)))
    >>> asyncio.run(main())
    array([3, 4, 5], dtype=int32)
    """

    __slots__ = ()

    def __init__(self, metadata: Any, store_path: StorePath, config: Mapping[str, Any] | None
                 = None) -> None:
        cfg = dict(config or {})
        sp = store_path_of(store_path)
        self._node = Array(sp.store, normalize_path(sp.path), metadata,
                           write_empty_chunks=cfg.get("write_empty_chunks"),
                           order=cfg.get("order"),  # None: config array.order
                           **runtime_keywords(cfg))
        self._node.__dict__["_async_view_"] = self  # (the node's one view)

    @classmethod
    def from_dict(cls, store_path: Any, data: Mapping[str, Any]) -> AsyncArray:
        """Return the array at ``store_path`` that ``data`` describes (no I/O).

        Nothing is read or written: the array's metadata is not stored by this.

        Parameters
        ----------
        store_path : StorePath
            Where the array is: a [zarrfast.storage.StorePath][] (or what
            ``StorePath`` is made from).
        data : Mapping[str, Any]
            Its metadata as a dict, as zarr-python's ``metadata.to_dict()`` gives it:
            a v3 ``zarr.json`` document, or for v2 the ``.zarray`` members with
            ``attributes`` beside them.

        Returns
        -------
        AsyncArray
            The array.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``data`` is not a dict, or its ``zarr_format`` is neither 2 nor 3 (and
            the metadata errors of an invalid document).
        """
        sp = store_path_of(store_path)
        return cls(metadata_from_dict(data, "array", sp.path), sp)

    # -- making one ---------------------------------------------------------------------
    @classmethod
    async def open(cls, store: Any, zarr_format: int | None = 3, *, path: str | None = None,
                   read_only: bool = False, config: Any = None) -> AsyncArray:
        """Open the existing array at ``store`` (a coroutine), as zarr-python's ``AsyncArray.open``.

        Parameters
        ----------
        store : Any
            A [zarrfast.storage.StorePath][], a store, or anything
            [zarrfast.storage.make_store][] takes (a directory, a URL...).
        zarr_format : {3, 2, None}, default 3
            The format to look for; ``None``: either (v3 first).
        path : str, optional
            The array's path in the store (below the path of a ``StorePath``).
        read_only : bool, default False
            Open the array read-only (it is also when the store is).
        config : ArrayConfig or dict or None, default None
            The runtime configuration, ``order`` and/or ``write_empty_chunks``; the
            keys left out follow ``zarrfast.config`` (``array.order``,
            ``array.write_empty_chunks``).

        Returns
        -------
        AsyncArray
            The array.

        Raises
        ------
        zarrfast.errors.ArrayNotFoundError
            There is no array of that format there (a Zarr v2 group there is no
            array, as in zarr-python, which looks for v2 arrays in ``.zarray`` only).
        zarrfast.errors.NodeTypeValidationError
            There is a Zarr v3 group there.
        zarrfast.errors.MetadataValidationError
            ``zarr_format`` is not 2, 3 or None.
        zarrfast.errors.ZarrfastError
            ``config`` has keys other than ``order`` and ``write_empty_chunks``, or an
            invalid value.

        Examples
        --------
        >>> import asyncio
        >>> store = zarrfast.MemoryStore()
        >>> _ = zarrfast.create_array(store, name="x", shape=(3,), dtype="int8")
        >>> a = asyncio.run(zarrfast.AsyncArray.open(store, path="x"))
        >>> a.shape, a.dtype
        ((3,), dtype('int8'))
        """
        def open_() -> Array:
            s, p = _store_and_path(store, path, read_only=read_only)
            md = read_array_metadata(s, p, zarr_format)
            return Array(s, p, md, read_only=read_only or s.read_only,
                         **array_config_keywords(config))
        return (await _call(open_))._async_view()

    @classmethod
    async def create(cls, store: Any, *, shape: Any, dtype: Any, path: str | None = None,
                     zarr_format: int | None = 3, **kwargs: Any) -> AsyncArray:
        """Create a new array at ``store`` (a coroutine), as zarr-python's ``AsyncArray.create``.

        Parameters
        ----------
        store : Any
            A [zarrfast.storage.StorePath][], a store, or anything
            [zarrfast.storage.make_store][] takes (a directory, a URL...).
        shape : int or tuple of int
            The array's shape.
        dtype : numpy dtype or str
            Its data type.
        path : str, optional
            The array's path in the store (below the path of a ``StorePath``).
        zarr_format : {3, 2, None}, default 3
            Its Zarr format.
        **kwargs : Any
            The other keywords of [zarrfast.create][]: ``chunks`` / ``chunk_shape``,
            ``codecs``, ``compressor``, ``filters``, ``dimension_separator``,
            ``fill_value``, ``order``, ``attributes``, ``overwrite``, ``data``...

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not true.
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is not true.
        TypeError
            A keyword ``create`` does not take.

        Examples
        --------
        >>> import asyncio
        >>> a = asyncio.run(zarrfast.AsyncArray.create(
        ...     zarrfast.MemoryStore(), shape=(4, 4), dtype="float32", chunks=(2, 2)))
        >>> a.shape, a.chunks
        ((4, 4), (2, 2))
        """
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
        """The array's shape (the array's ``shape``)."""
        return self._node.shape

    @property
    def dtype(self) -> Any:
        """The array's NumPy data type (the array's ``dtype``)."""
        return self._node.dtype

    @property
    def chunks(self) -> tuple[int, ...]:
        """The shape of the array's chunks (the array's ``chunks``)."""
        return self._node.chunks

    @property
    def info(self) -> Any:
        """What is known of the array without reading the store (the array's ``info``)."""
        return self._node.info

    # -- reads ----------------------------------------------------------------------------
    async def getitem(self, selection: Any, *, prototype: Any = None) -> Any:
        """Read a selection: ``await a.getitem(sel)`` gives what ``array[sel]`` does.

        Parameters
        ----------
        selection : Any
            Any selection ``Array.__getitem__`` takes: integers, slices, ``...``,
            integer or boolean arrays.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        Any
            The values selected, as ``array[selection]`` gives them: a NumPy
            array (a 0-d array gives its element as a NumPy scalar).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(6), store={}).async_array
        >>> asyncio.run(a.getitem(slice(1, 4)))
        array([1, 2, 3])
        """
        return await _call(self._node.__getitem__, selection)

    async def get_basic_selection(self, selection: Any = Ellipsis, *, out: Any = None,
                                  fields: Any = None, prototype: Any = None) -> Any:
        """Read a basic selection: integers, slices and ``...`` (a coroutine).

        See ``Array.get_basic_selection``; this runs it on a worker thread.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them, default ...
            The selection, one entry per dimension (missing ones: everything).
        out : numpy.ndarray, optional
            An array to write the result into (of the selection's shape and the
            array's dtype).
        fields : str or list of str, optional
            For a structured dtype, the fields to read.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        numpy.ndarray
            The values selected: a new array, or ``out``; a 0-d array gives its
            element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.
        """
        return await _call(self._node.get_basic_selection, selection, out=out, fields=fields)

    async def get_orthogonal_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        """Read an orthogonal (outer) selection (a coroutine).

        See ``Array.get_orthogonal_selection``; this runs it on a worker thread.

        Parameters
        ----------
        selection : tuple
            One entry per dimension: an integer, a slice, an integer array or a
            boolean array, each applied to its dimension independently.
        out : numpy.ndarray, optional
            An array to write the result into (of the selection's shape and the
            array's dtype).
        fields : str or list of str, optional
            For a structured dtype, the fields to read.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        numpy.ndarray
            The values selected: a new array, or ``out``; a 0-d array gives its
            element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(16).reshape(4, 4), store={}).async_array
        >>> asyncio.run(a.get_orthogonal_selection(([0, 2], [1, 3])))
        array([[ 1,  3],
               [ 9, 11]])
        """
        return await _call(self._node.get_orthogonal_selection, selection, out=out,
                           fields=fields)

    async def get_coordinate_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        """Read the elements at a list of coordinates (a coroutine).

        See ``Array.get_coordinate_selection``; this runs it on a worker thread.

        Parameters
        ----------
        selection : tuple of array-like
            One integer array per dimension; the arrays broadcast together and
            name the elements.
        out : numpy.ndarray, optional
            An array to write the result into (of the selection's shape and the
            array's dtype).
        fields : str or list of str, optional
            For a structured dtype, the fields to read.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        numpy.ndarray
            The values selected: a new array, or ``out``; a 0-d array gives its
            element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(16).reshape(4, 4), store={}).async_array
        >>> asyncio.run(a.get_coordinate_selection(([0, 2], [1, 3])))
        array([ 1, 11])
        """
        return await _call(self._node.get_coordinate_selection, selection, out=out,
                           fields=fields)

    async def get_many(self, selections: Any, *, kind: str = "basic", out: Any = None
                       ) -> list[Any]:
        """Read many selections in one call (a coroutine): one result per selection.

        See ``Array.get_many``; this runs it on a worker thread.  The selections are
        planned as one read (each chunk they share read once, each shard visited once),
        which ``asyncio.gather`` of many ``getitem`` calls does not do.

        Parameters
        ----------
        selections : sequence
            The selections, each what ``getitem`` (``kind="basic"``),
            ``get_orthogonal_selection`` (``"orthogonal"``) or ``get_block_selection``
            (``"block"``) takes.
        kind : {"basic", "orthogonal", "block"}, default "basic"
            How every selection is read.
        out : list of numpy.ndarray or numpy.ndarray, optional
            One array per selection, or one of shape ``(len(selections), *shape)``
            when every result has the same shape.

        Returns
        -------
        list
            One result per selection.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (the message names the selection).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown ``kind``, or an ``out`` that does not fit.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(16).reshape(4, 4), store={}).async_array
        >>> asyncio.run(a.get_many([(0, slice(1, 3)), (slice(2, 4), 3)]))
        [array([1, 2]), array([11, 15])]
        """
        return await _call(self._node.get_many, selections, kind=kind, out=out)

    async def get_mask_selection(self, mask: Any, *, out: Any = None, fields: Any = None,
                                 prototype: Any = None) -> Any:
        """Read the elements where a boolean mask is true (a coroutine).

        See ``Array.get_mask_selection``; this runs it on a worker thread.

        Parameters
        ----------
        mask : array-like of bool
            A boolean array of the array's shape.
        out : numpy.ndarray, optional
            An array to write the result into (of the selection's shape and the
            array's dtype).
        fields : str or list of str, optional
            For a structured dtype, the fields to read.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        numpy.ndarray
            The values selected: a new array, or ``out``; a 0-d array gives its
            element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.
        """
        return await _call(self._node.get_mask_selection, mask, out=out, fields=fields)

    async def get_block_selection(self, selection: Any, *, out: Any = None,
                                  fields: Any = None, prototype: Any = None) -> Any:
        """Read whole chunks, selected by chunk index (a coroutine).

        See ``Array.get_block_selection``; this runs it on a worker thread.

        Parameters
        ----------
        selection : int, slice or tuple of them
            Chunk indices (or slices of them), one entry per dimension.
        out : numpy.ndarray, optional
            An array to write the result into (of the selection's shape and the
            array's dtype).
        fields : str or list of str, optional
            For a structured dtype, the fields to read.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (results are NumPy
            arrays).

        Returns
        -------
        numpy.ndarray
            The values selected: a new array, or ``out``; a 0-d array gives its
            element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(16).reshape(4, 4), chunks=(2, 2), store={})
        >>> asyncio.run(a.async_array.get_block_selection((1, 0)))
        array([[ 8,  9],
               [12, 13]])
        """
        return await _call(self._node.get_block_selection, selection, out=out, fields=fields)

    @property
    def oindex(self) -> _AsyncIndexer:
        """Orthogonal (outer) indexing, awaited: ``await a.oindex.getitem(sel)``.

        ``await a.oindex.setitem(sel, value)`` writes; both as
        ``get_orthogonal_selection`` / ``set_orthogonal_selection``.
        """
        return _AsyncIndexer(self._node.get_orthogonal_selection,
                             self._node.set_orthogonal_selection)

    @property
    def vindex(self) -> _AsyncIndexer:
        """Vectorized indexing, awaited: ``await a.vindex.getitem(sel)``.

        ``await a.vindex.setitem(sel, value)`` writes; both as the array's ``vindex``:
        coordinate selections (integer arrays) or a boolean mask.
        """
        idx = self._node.vindex
        return _AsyncIndexer(idx.__getitem__, idx.__setitem__)

    # -- writes ---------------------------------------------------------------------------
    async def setitem(self, selection: Any, value: Any, *, prototype: Any = None) -> None:
        """Write a selection: ``await a.setitem(sel, value)`` is ``array[sel] = value``.

        The write completes even if the await is cancelled.

        Parameters
        ----------
        selection : Any
            Any selection ``Array.__setitem__`` takes.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, or a value that does not broadcast to it.

        Examples
        --------
        >>> import asyncio
        >>> arr = zarrfast.zeros(shape=(4,), dtype="int8", store={})
        >>> asyncio.run(arr.async_array.setitem(slice(0, 2), 5))
        >>> arr[:]
        array([5, 5, 0, 0], dtype=int8)
        """
        await _call(self._node.__setitem__, selection, value)

    async def set_basic_selection(self, selection: Any, value: Any, *, fields: Any = None
                                  ) -> None:
        """Write a basic selection: integers, slices and ``...`` (a coroutine).

        See ``Array.set_basic_selection``; this runs it on a worker thread, and the write
        completes even if the await is cancelled.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them
            The selection, one entry per dimension.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        fields : str or list of str, optional
            For a structured dtype, the fields to write.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not
            broadcast to the selection.
        """
        await _call(self._node.set_basic_selection, selection, value, fields=fields)

    async def set_orthogonal_selection(self, selection: Any, value: Any, *,
                                       fields: Any = None) -> None:
        """Write an orthogonal (outer) selection (a coroutine).

        See ``Array.set_orthogonal_selection``; this runs it on a worker thread, and the write
        completes even if the await is cancelled.

        Parameters
        ----------
        selection : tuple
            One entry per dimension: an integer, a slice, an integer array or a
            boolean array, each applied to its dimension independently.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        fields : str or list of str, optional
            For a structured dtype, the fields to write.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not
            broadcast to the selection.

        Examples
        --------
        >>> import asyncio
        >>> arr = zarrfast.zeros(shape=(3, 3), dtype="int8", store={})
        >>> asyncio.run(arr.async_array.set_orthogonal_selection(([0, 2], [1]), 1))
        >>> arr[:]
        array([[0, 1, 0],
               [0, 0, 0],
               [0, 1, 0]], dtype=int8)
        """
        await _call(self._node.set_orthogonal_selection, selection, value, fields=fields)

    async def set_coordinate_selection(self, selection: Any, value: Any, *,
                                       fields: Any = None) -> None:
        """Write the elements at a list of coordinates (a coroutine).

        See ``Array.set_coordinate_selection``; this runs it on a worker thread, and the write
        completes even if the await is cancelled.

        Parameters
        ----------
        selection : tuple of array-like
            One integer array per dimension; the arrays broadcast together and
            name the elements.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        fields : str or list of str, optional
            For a structured dtype, the fields to write.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not
            broadcast to the selection.
        """
        await _call(self._node.set_coordinate_selection, selection, value, fields=fields)

    async def set_mask_selection(self, mask: Any, value: Any, *, fields: Any = None) -> None:
        """Write the elements where a boolean mask is true (a coroutine).

        See ``Array.set_mask_selection``; this runs it on a worker thread, and the write
        completes even if the await is cancelled.

        Parameters
        ----------
        mask : array-like of bool
            A boolean array of the array's shape.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        fields : str or list of str, optional
            For a structured dtype, the fields to write.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not
            broadcast to the selection.
        """
        await _call(self._node.set_mask_selection, mask, value, fields=fields)

    async def set_block_selection(self, selection: Any, value: Any, *, fields: Any = None
                                  ) -> None:
        """Write whole chunks, selected by chunk index (a coroutine).

        See ``Array.set_block_selection``; this runs it on a worker thread, and the write
        completes even if the await is cancelled.

        Parameters
        ----------
        selection : int, slice or tuple of them
            Chunk indices (or slices of them), one entry per dimension.
        value : array-like or scalar
            The values, broadcast to the selection's shape.
        fields : str or list of str, optional
            For a structured dtype, the fields to write.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array (an ``IndexError``).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not
            broadcast to the selection.
        """
        await _call(self._node.set_block_selection, selection, value, fields=fields)

    async def resize(self, new_shape: Any, delete_outside_chunks: bool = True) -> AsyncArray:
        """Change the array's shape (a coroutine); chunks wholly outside it are deleted.

        See ``Array.resize``.

        Parameters
        ----------
        new_shape : int or tuple of int
            The new shape (same number of dimensions).
        delete_outside_chunks : bool, default True
            zarr-python's keyword; only ``True`` is supported.

        Returns
        -------
        AsyncArray
            This array, with its new shape.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``delete_outside_chunks`` is false.
        zarrfast.errors.ReadOnlyError
            The array is read-only.

        Examples
        --------
        >>> import asyncio
        >>> a = zarrfast.array(np.arange(4), store={}).async_array
        >>> asyncio.run(a.resize((6,))).shape
        (6,)
        """
        if not delete_outside_chunks:
            raise ZarrfastError(f"array {self.name!r}: resize always deletes the chunks "
                                f"outside the new shape (delete_outside_chunks=False is not "
                                f"supported)")
        await _call(self._node.resize, new_shape)
        return self

    async def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along ``axis`` and write ``data`` there (a coroutine).

        See ``Array.append``.

        Parameters
        ----------
        data : array-like
            The values to append: the array's shape except along ``axis``.
        axis : int, default 0
            The dimension to grow.

        Returns
        -------
        tuple[int, ...]
            The new shape.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.

        Examples
        --------
        >>> import asyncio
        >>> arr = zarrfast.array(np.arange(3), store={})
        >>> asyncio.run(arr.async_array.append(np.array([7, 8])))
        (5,)
        >>> arr[:]
        array([0, 1, 2, 7, 8])
        """
        return await _call(self._node.append, data, axis)

    async def update_attributes(self, new_attributes: dict[str, Any]) -> AsyncArray:
        """Merge ``new_attributes`` into the array's attributes (a coroutine).

        Parameters
        ----------
        new_attributes : dict[str, Any]
            The attributes to set (JSON-serializable); keys not in it keep their
            values.

        Returns
        -------
        AsyncArray
            This array.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.MetadataValidationError
            A value is not JSON-serializable.
        """
        await _call(self._node.update_attributes, new_attributes)
        return self

    def with_config(self, config: Any) -> AsyncArray:
        """Return this array with another runtime configuration (a plain method).

        As zarr-python's: nothing to await, nothing read or written.

        Parameters
        ----------
        config : ArrayConfig or dict
            ``order`` and/or ``write_empty_chunks``; the keys left out keep their
            values.

        Returns
        -------
        AsyncArray
            The view of an array over the same data with that configuration.
        """
        return self._node.with_config(config).async_array

    # -- what the store holds -------------------------------------------------------------
    async def nchunks_initialized(self) -> int:
        """Count the chunks stored (a coroutine; reads the store).

        For a sharded array, the stored shards times the chunks per shard, as
        zarr-python counts.

        Returns
        -------
        int
            The number of chunks stored.
        """
        return await _call(lambda: self._node.nchunks_initialized)

    async def _nshards_initialized(self) -> int:
        """Count the stored objects, shards of a sharded array (a coroutine; zarr-python's
        ``AsyncArray._nshards_initialized``)."""
        return await _call(lambda: self._node._nshards_initialized)

    async def nbytes_stored(self) -> int:
        """Count the bytes the array holds in its store: metadata and chunks (a coroutine).

        Returns
        -------
        int
            The number of bytes stored below the array's path.
        """
        return await _call(self._node.nbytes_stored)

    async def info_complete(self) -> Any:
        """Return ``info`` with the bytes and chunks stored (a coroutine; reads the store).

        Returns
        -------
        ArrayInfo
            Prints as zarr-python's array info.
        """
        return await _call(self._node.info_complete)


class AsyncGroup(AsyncNode, kind="group", node_type=Group):
    """A group whose lookups and changes are coroutines (zarr-python's ``AsyncGroup``).

    It is a view over one [zarrfast.Group][] and shares its state:
    ``group.async_group`` is the group's view, ``zarrfast.Group(view)`` the group.
    Its properties (``attrs``, ``zarr_format``, ``read_only``...) are the group's;
    each coroutine runs the group's synchronous method on a worker thread of the
    running event loop.  Members come back as [zarrfast.AsyncArray][] /
    [zarrfast.AsyncGroup][]; ``members()``, ``keys()``, ``arrays()``, ``groups()``
    and the like are async iterators.

    Make one with ``zarrfast.api.asynchronous.open_group`` / ``group``,
    ``AsyncGroup.from_store`` / ``AsyncGroup.open``, or take ``group.async_group``.
    ``AsyncGroup(metadata, store_path)`` makes one from metadata at a
    [zarrfast.storage.StorePath][], as in zarr-python (nothing is read or written).

    Parameters
    ----------
    metadata : GroupMetadata or GroupMetadataV2
        The group's metadata.
    store_path : StorePath
        Where the group is: a [zarrfast.storage.StorePath][] (or what ``StorePath``
        is made from).
    consolidated_metadata : Any, default None
        The metadata of every node below the group, by relative path: member
        lookups and listings are then answered from it.

    Examples
    --------
    >>> import asyncio
    >>> async def main():
    ...     root = await zarrfast.AsyncGroup.from_store(zarrfast.MemoryStore())
    ...     await root.create_group("sub")
    ...     await root.create_array("x", shape=(3,), dtype="int8")
    ...     return sorted([name async for name in root.keys()])
    >>> asyncio.run(main())
    ['sub', 'x']
    """

    __slots__ = ()

    def __init__(self, metadata: Any, store_path: StorePath,
                 consolidated_metadata: Any = None) -> None:
        sp = store_path_of(store_path)
        self._node = Group(sp.store, normalize_path(sp.path), metadata,
                           consolidated=consolidated_metadata)
        self._node.__dict__["_async_view_"] = self  # (the node's one view)

    @classmethod
    def from_dict(cls, store_path: Any, data: Mapping[str, Any]) -> AsyncGroup:
        """Return the group at ``store_path`` that ``data`` describes (no I/O).

        Nothing is read or written: the group's metadata is not stored by this.

        Parameters
        ----------
        store_path : StorePath
            Where the group is: a [zarrfast.storage.StorePath][] (or what
            ``StorePath`` is made from).
        data : Mapping[str, Any]
            Its metadata as a dict, as zarr-python's ``metadata.to_dict()`` gives it
            (``zarr_format`` 3 or 2, ``attributes``...).

        Returns
        -------
        AsyncGroup
            The group.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``data`` is not a dict, or its ``zarr_format`` is neither 2 nor 3.
        """
        sp = store_path_of(store_path)
        return cls(metadata_from_dict(data, "group", sp.path), sp)

    # -- making one ---------------------------------------------------------------------
    @classmethod
    async def from_store(cls, store: Any, *, attributes: Mapping[str, Any] | None = None,
                         overwrite: bool = False, zarr_format: int = 3) -> AsyncGroup:
        """Create a new group at ``store`` (a coroutine); see ``Group.from_store``.

        Parameters
        ----------
        store : Any
            A [zarrfast.storage.StorePath][], a store, or anything
            [zarrfast.storage.make_store][] takes (a directory, a URL...).
        attributes : Mapping[str, Any], optional
            The group's user attributes (JSON-serializable).
        overwrite : bool, default False
            Replace a node already there (and everything below it).
        zarr_format : {3, 2}, default 3
            The Zarr format of the group.

        Returns
        -------
        AsyncGroup
            The new group.

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
        >>> import asyncio
        >>> g = asyncio.run(zarrfast.AsyncGroup.from_store({}, attributes={"a": 1}))
        >>> dict(g.attrs)
        {'a': 1}
        """
        def create() -> Group:
            return Group.from_store(store, attributes=attributes, zarr_format=zarr_format,
                                    overwrite=overwrite)
        return (await _call(create))._async_view()

    @classmethod
    async def open(cls, store: Any, zarr_format: int | None = 3, *, path: str | None = None,
                   use_consolidated: bool | str | None = None) -> AsyncGroup:
        """Open the existing group at ``store`` (a coroutine); see ``Group.open``.

        Parameters
        ----------
        store : Any
            A [zarrfast.storage.StorePath][], a store, or anything
            [zarrfast.storage.make_store][] takes (a directory, a URL...).
        zarr_format : {3, 2, None}, default 3
            The format to look for; ``None``: either (v3 first).
        path : str, optional
            The group's path in the store (below the path of a ``StorePath``).
        use_consolidated : bool or str or None, default None
            ``None``: use the group's consolidated metadata where it has some;
            ``True``: require it; ``False``: read the store.

        Returns
        -------
        AsyncGroup
            The group.

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
        >>> import asyncio
        >>> store = zarrfast.MemoryStore()
        >>> _ = zarrfast.group(store=store, attributes={"a": 1})
        >>> g = asyncio.run(zarrfast.AsyncGroup.open(store))
        >>> dict(g.attrs)
        {'a': 1}
        """
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
        """What is known of the group without reading the store (the group's ``info``)."""
        return self._node.info

    # -- members --------------------------------------------------------------------------
    async def getitem(self, key: str) -> AsyncArray | AsyncGroup:
        """Return the member at ``key`` (a coroutine): ``group[key]``, asynchronous.

        Parameters
        ----------
        key : str
            The member's name, or a path below this group (``"a/b"``).

        Returns
        -------
        AsyncArray or AsyncGroup
            The member.

        Raises
        ------
        zarrfast.errors.MemberNotFoundError
            There is no member at ``key`` (a ``KeyError``).
        zarrfast.errors.InvalidNodeNameError
            ``key`` is not a valid node path.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("x", shape=(2,), dtype="int8")
        >>> asyncio.run(g.async_group.getitem("x"))
        <AsyncArray ...x shape=(2,) dtype=int8>
        """
        return async_view(await _call(self._node.__getitem__, key))

    async def get(self, key: str, default: Any = None) -> Any:
        """Return the member at ``key``, or ``default`` if there is none (a coroutine).

        Parameters
        ----------
        key : str
            The member's name, or a path below this group.
        default : Any, default None
            What to return when there is no member at ``key``.

        Returns
        -------
        AsyncArray or AsyncGroup or Any
            The member, or ``default``.

        Raises
        ------
        zarrfast.errors.InvalidNodeNameError
            ``key`` is not a valid node path.
        """
        return async_view(await _call(self._node.get, key, default))

    async def get_array(self, path: str) -> AsyncArray:
        """Return the array at ``path`` (a coroutine), raising if there is none or it is a group.

        As zarr-python's ``AsyncGroup.get_array``; see ``Group.get_array``.

        Parameters
        ----------
        path : str
            The array's path relative to this group: a name, or names joined by
            ``/`` to reach into member groups (``"sub/x"``).

        Returns
        -------
        AsyncArray
            The array.

        Raises
        ------
        zarrfast.errors.ArrayNotFoundError
            There is no node at ``path``.
        zarrfast.errors.ContainsGroupError
            The node at ``path`` is a group.
        zarrfast.errors.InvalidNodeNameError
            ``path`` is not a valid node path.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(2,), dtype="int8")
        >>> asyncio.run(g.async_group.get_array("sub/x"))
        <AsyncArray ...sub/x shape=(2,) dtype=int8>
        """
        return async_view(await _call(self._node.get_array, path))

    async def get_group(self, path: str) -> AsyncGroup:
        """Return the group at ``path`` (a coroutine), raising if there is none or it is an array.

        As zarr-python's ``AsyncGroup.get_group``; see ``Group.get_group``.

        Parameters
        ----------
        path : str
            The group's path relative to this group: a name, or names joined by
            ``/`` to reach into member groups (``"sub/inner"``).

        Returns
        -------
        AsyncGroup
            The group.

        Raises
        ------
        zarrfast.errors.GroupNotFoundError
            There is no node at ``path``.
        zarrfast.errors.ContainsArrayError
            The node at ``path`` is an array.
        zarrfast.errors.InvalidNodeNameError
            ``path`` is not a valid node path.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_group("sub/inner")
        >>> asyncio.run(g.async_group.get_group("sub/inner"))
        <AsyncGroup ...sub/inner>
        """
        return async_view(await _call(self._node.get_group, path))

    async def contains(self, member: str) -> bool:
        """Tell whether there is a member at ``member`` (a coroutine): ``member in group``.

        Parameters
        ----------
        member : str
            A name, or a path below this group (an invalid name is simply not a
            member).

        Returns
        -------
        bool
            True if an array or a group is there.
        """
        return await _call(self._node.__contains__, member)

    async def delitem(self, key: str) -> None:
        """Delete the member at ``key`` and everything below it (a coroutine).

        Parameters
        ----------
        key : str
            The member's name, or a path below this group.

        Raises
        ------
        zarrfast.errors.MemberNotFoundError
            There is no member at ``key``.
        zarrfast.errors.ReadOnlyError
            The group is read-only.
        """
        await _call(self._node.__delitem__, key)

    async def setitem(self, key: str, value: Any) -> None:
        """Create (or replace) the member array ``key`` holding ``value`` (a coroutine).

        ``group[key] = value``, asynchronous.

        Parameters
        ----------
        key : str
            The array's name, or a path below this group.
        value : array-like
            The array's values (its shape and dtype are NumPy's ``asarray(value)``'s).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The group is read-only.
        """
        await _call(self._node.__setitem__, key, value)

    async def nmembers(self, max_depth: int | None = 0) -> int:
        """Count the members down to ``max_depth`` (a coroutine).

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
        """
        return len(await _call(self._node.members, max_depth))

    async def members(self, max_depth: int | None = 0, *,
                      use_consolidated_for_children: bool = True
                      ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """Iterate asynchronously over ``(relative path, node)`` for the members.

        See ``Group.members``: the members are listed on a worker thread, then
        yielded.

        Parameters
        ----------
        max_depth : int or None, default 0
            How many levels below the direct members to descend (``0``: the direct
            members only; ``None``: every node below the group).
        use_consolidated_for_children : bool, default True
            zarr-python's keyword: if false, member groups read from the store come
            without the consolidated metadata their own metadata holds.

        Yields
        ------
        tuple[str, AsyncArray | AsyncGroup]
            ``(path relative to this group, array or group)``.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            ``max_depth`` is neither None nor an integer >= 0.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("sub/x", shape=(2,), dtype="int8")
        >>> async def paths():
        ...     return [path async for path, _ in g.async_group.members(max_depth=None)]
        >>> asyncio.run(paths())
        ['sub', 'sub/x']
        """
        for key, node in await _call(
                self._node.members, max_depth,
                use_consolidated_for_children=use_consolidated_for_children):
            yield key, async_view(node)

    async def keys(self) -> AsyncIterator[str]:
        """Iterate asynchronously over the names of the direct members.

        Yields
        ------
        str
            A member's name (arrays and groups).
        """
        for key in await _call(lambda: list(self._node.keys())):
            yield key

    async def arrays(self) -> AsyncIterator[tuple[str, AsyncArray]]:
        """Iterate asynchronously over ``(name, array)`` for the direct members that are arrays.

        Yields
        ------
        tuple[str, AsyncArray]
            A name and its array.
        """
        for key, node in await _call(lambda: list(self._node.arrays())):
            yield key, async_view(node)

    async def groups(self) -> AsyncIterator[tuple[str, AsyncGroup]]:
        """Iterate asynchronously over ``(name, group)`` for the direct members that are groups.

        Yields
        ------
        tuple[str, AsyncGroup]
            A name and its group.
        """
        for key, node in await _call(lambda: list(self._node.groups())):
            yield key, async_view(node)

    async def array_keys(self) -> AsyncIterator[str]:
        """Iterate asynchronously over the names of the direct members that are arrays.

        Yields
        ------
        str
            An array member's name.
        """
        for key in await _call(lambda: list(self._node.array_keys())):
            yield key

    async def group_keys(self) -> AsyncIterator[str]:
        """Iterate asynchronously over the names of the direct members that are groups.

        Yields
        ------
        str
            A group member's name.
        """
        for key in await _call(lambda: list(self._node.group_keys())):
            yield key

    async def array_values(self) -> AsyncIterator[AsyncArray]:
        """Iterate asynchronously over the direct members that are arrays.

        Yields
        ------
        AsyncArray
            An array member.
        """
        async for _, node in self.arrays():
            yield node

    async def group_values(self) -> AsyncIterator[AsyncGroup]:
        """Iterate asynchronously over the direct members that are groups.

        Yields
        ------
        AsyncGroup
            A group member.
        """
        async for _, node in self.groups():
            yield node

    # -- creating members -----------------------------------------------------------------
    async def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                           overwrite: bool = False) -> AsyncGroup:
        """Create a member group (a coroutine); see ``Group.create_group``.

        Parameters
        ----------
        name : str
            The new group's name, or a path below this group.
        attributes : dict[str, Any], optional
            Its user attributes (JSON-serializable).
        overwrite : bool, default False
            Replace a node already there (and everything below it).

        Returns
        -------
        AsyncGroup
            The new group.

        Raises
        ------
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is false.
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false.
        zarrfast.errors.ReadOnlyError
            This group is read-only.
        """
        return async_view(await _call(self._node.create_group, name, attributes=attributes,
                                      overwrite=overwrite))

    async def require_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                            overwrite: bool = False) -> AsyncGroup:
        """Return the member group ``name``, created if missing (a coroutine).

        See ``Group.require_group``.

        Parameters
        ----------
        name : str
            The group's name, or a path below this group.
        attributes : dict[str, Any], optional
            The attributes of the group if it is created.
        overwrite : bool, default False
            Create the group anew even if a node is there.

        Returns
        -------
        AsyncGroup
            The existing or new group.

        Raises
        ------
        zarrfast.errors.IncompatibleMemberError
            The member is an array.
        """
        return async_view(await _call(self._node.require_group, name, attributes=attributes,
                                      overwrite=overwrite))

    async def require_groups(self, *names: str) -> tuple[AsyncGroup, ...]:
        """Return the member groups ``names``, each created if missing (a coroutine).

        Parameters
        ----------
        *names : str
            The groups' names (or paths below this group).

        Returns
        -------
        tuple[AsyncGroup, ...]
            The groups, in the order of ``names``.

        Raises
        ------
        zarrfast.errors.IncompatibleMemberError
            One of the members is an array.
        """
        return tuple(async_view(g) for g in await _call(self._node.require_groups, *names))

    async def create_array(self, name: str, *, shape: Any = None, dtype: Any = None,
                           data: Any = None, overwrite: bool = False, **kwargs: Any
                           ) -> AsyncArray:
        """Create a member array (a coroutine); see ``Group.create_array``.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int, optional
            The array's shape (give ``shape`` and ``dtype``, or ``data``).
        dtype : numpy dtype or str, optional
            Its data type.
        data : array-like, optional
            Values to write; the shape and dtype then come from it.
        overwrite : bool, default False
            Replace a node already there (and everything below it).
        **kwargs : Any
            The other keywords of ``Group.create_array`` (``chunks``, ``shards``,
            ``compressors``, ``fill_value``, ``attributes``, ``dimension_names``...).

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false.
        zarrfast.errors.ContainsGroupError
            A group is there already and ``overwrite`` is false.
        zarrfast.errors.ReadOnlyError
            This group is read-only.
        TypeError
            A keyword ``create_array`` does not take.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={}).async_group
        >>> asyncio.run(g.create_array("x", shape=(2, 2), dtype="float32"))
        <AsyncArray ...x shape=(2, 2) dtype=float32>
        """
        return async_view(await _call(self._node.create_array, name, shape=shape,
                                      dtype=dtype, data=data, overwrite=overwrite, **kwargs))

    async def create_dataset(self, name: str, **kwargs: Any) -> AsyncArray:
        """Create a member array: zarr-python's deprecated name of ``create_array``.

        It warns (``zarrfast.errors.ZarrDeprecationWarning``) first, also when the
        creation then fails; ``data`` may come with ``shape`` (ignored then).

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        **kwargs : Any
            The keywords of ``create_array``.

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is false (and the other
            errors of ``create_array``).
        """
        warnings.warn("AsyncGroup.create_dataset is deprecated and will be removed in a "
                      "future version. Use Group.create_array instead.",
                      ZarrDeprecationWarning, stacklevel=2)
        if kwargs.get("data") is not None:
            kwargs.pop("shape", None)
        return await self.create_array(name, **kwargs)

    async def require_dataset(self, name: str, *, shape: Any, **kwargs: Any) -> AsyncArray:
        """Return the member array ``name``, created if missing (deprecated; a coroutine).

        zarr-python's deprecated name of ``require_array``: it warns
        (``zarrfast.errors.ZarrDeprecationWarning``), then does what that does.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        shape : int or tuple of int
            The shape the array has, or is created with.
        **kwargs : Any
            The other keywords of ``require_array``.

        Returns
        -------
        AsyncArray
            The existing or new array.

        Raises
        ------
        zarrfast.errors.IncompatibleNodeError
            The existing array's shape or dtype does not match.
        """
        warnings.warn("AsyncGroup.require_dataset is deprecated and will be removed in a "
                      "future version. Use Group.require_array instead.",
                      ZarrDeprecationWarning, stacklevel=2)
        return await self.require_array(name, shape=shape, **kwargs)

    async def require_array(self, name: str, *, shape: Any, dtype: Any = None,
                            exact: bool = False, **kwargs: Any) -> AsyncArray:
        """Return the member array ``name``, created if missing (a coroutine).

        See ``Group.require_array``.

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
            The other keywords of ``create_array``, for a new array.

        Returns
        -------
        AsyncArray
            The existing or new array.

        Raises
        ------
        zarrfast.errors.IncompatibleNodeError
            The existing array has another shape, or an incompatible dtype.
        zarrfast.errors.IncompatibleMemberError
            The member is a group.
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("require_array", kwargs)
        return async_view(await _call(self._node.require_array, name, shape=shape,
                                      dtype=dtype, exact=exact, **kwargs))

    async def empty(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array without writing any chunk (a coroutine).

        See ``Group.empty``.

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
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("empty", kwargs)
        return await self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), **kwargs)

    async def zeros(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array of zeros (a coroutine).

        See ``Group.zeros``.

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
        AsyncArray
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
        >>> import asyncio
        >>> async def main():
        ...     g = zarrfast.group(store={}).async_group
        ...     z = await g.zeros(name="z", shape=(3,), dtype="int8")
        ...     return await z.getitem(...)
        >>> asyncio.run(main())
        array([0, 0, 0], dtype=int8)
        """
        check_member_keywords("zeros", kwargs)
        return await self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=0, **kwargs)

    async def ones(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array of ones (a coroutine).

        See ``Group.ones``.

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
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("ones", kwargs)
        return await self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=1, **kwargs)

    async def full(self, *, name: str, shape: Any, fill_value: Any, **kwargs: Any
                   ) -> AsyncArray:
        """Create a member array whose elements are ``fill_value`` (a coroutine).

        See ``Group.full``.

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
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("full", kwargs)
        return await self.create_array(name, shape=shape, dtype=_float64_unless(kwargs), fill_value=fill_value, **kwargs)

    async def empty_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array like ``data``, without writing any chunk (a coroutine).

        See ``Group.empty_like``.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array (zarrfast's, its asynchronous view, or anything NumPy makes an
            array of) whose shape, dtype and, if regular, chunks the new array takes
            (and, from a zarrfast array, its fill value) unless ``kwargs`` give them.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("empty_like", kwargs)
        return await self.create_array(name, **like_kwargs(data, kwargs, self.zarr_format))

    async def zeros_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array of zeros like ``data`` (a coroutine).

        See ``Group.zeros_like``.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array (zarrfast's, its asynchronous view, or anything NumPy makes an
            array of) whose shape, dtype and, if regular, chunks the new array takes
            (and, from a zarrfast array, its fill value) unless ``kwargs`` give them.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("zeros_like", kwargs)
        like = like_kwargs(data, kwargs, self.zarr_format)
        return await self.create_array(name, **{**like, "fill_value": 0})

    async def ones_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array of ones like ``data`` (a coroutine).

        See ``Group.ones_like``.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array (zarrfast's, its asynchronous view, or anything NumPy makes an
            array of) whose shape, dtype and, if regular, chunks the new array takes
            (and, from a zarrfast array, its fill value) unless ``kwargs`` give them.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...).

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("ones_like", kwargs)
        like = like_kwargs(data, kwargs, self.zarr_format)
        return await self.create_array(name, **{**like, "fill_value": 1})

    async def full_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        """Create a member array like ``data`` filled with ``fill_value`` (a keyword; a coroutine).

        See ``Group.full_like``.

        Parameters
        ----------
        name : str
            The array's name, or a path below this group.
        data : array-like
            An array (zarrfast's, its asynchronous view, or anything NumPy makes an
            array of) whose shape, dtype and, if regular, chunks the new array takes
            (and, from a zarrfast array, its fill value) unless ``kwargs`` give them.
        **kwargs : Any
            The other keywords of ``create_array`` (``dtype``, ``chunks``,
            ``attributes``, ``overwrite``...); ``fill_value`` is the value of every
            element (else ``data``'s fill value for a zarrfast array, else the data
            type's default).

        Returns
        -------
        AsyncArray
            The new array.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is there already and ``overwrite`` is not given true (and the
            other errors of ``create_array``).
        TypeError
            A keyword ``create_array`` does not take.
        """
        check_member_keywords("full_like", kwargs)
        return await self.create_array(name, **like_kwargs(data, kwargs, self.zarr_format))

    async def create_hierarchy(self, nodes: Mapping[str, Any], *, overwrite: bool = False
                               ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        """Write the metadata of many nodes below this group, yielding each node made.

        The nodes are written in the order of ``nodes``, on a worker thread, then
        yielded.  Missing groups above a node are created (in the node's format)
        but not yielded; a node given after one of its children finds the group
        made for that child there already.

        Parameters
        ----------
        nodes : Mapping[str, Any]
            ``{path relative to this group: metadata}``: metadata objects
            (``ArrayMetadata``, ``GroupMetadata`` or their v2 twins), such as a
            node's ``metadata``.
        overwrite : bool, default False
            Replace nodes already there.

        Yields
        ------
        tuple[str, AsyncArray | AsyncGroup]
            ``(path relative to this group, node)``, in the order of ``nodes``.

        Raises
        ------
        zarrfast.errors.ContainsArrayError
            An array is at one of the paths and ``overwrite`` is false.
        zarrfast.errors.ContainsGroupError
            A group is at one of the paths and ``overwrite`` is false.
        zarrfast.errors.ReadOnlyError
            The group is read-only.

        Examples
        --------
        >>> import asyncio
        >>> from zarrfast.metadata import GroupMetadata
        >>> async def main():
        ...     root = await zarrfast.AsyncGroup.from_store(zarrfast.MemoryStore())
        ...     template = await root.create_array("template", shape=(4,), dtype="int8")
        ...     nodes = {"g": GroupMetadata(attributes={"a": 1}), "g/x": template.metadata}
        ...     return [(path, type(node).__name__)
        ...             async for path, node in root.create_hierarchy(nodes)]
        >>> asyncio.run(main())
        [('g', 'AsyncGroup'), ('g/x', 'AsyncArray')]
        """
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
        """Move the member at ``source`` (with everything below it) to ``dest`` (a coroutine).

        See ``Group.move``.

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
            A node (array or group) is at ``dest`` already.
        zarrfast.errors.ReadOnlyError
            The group is read-only.
        """
        await _call(self._node.move, source, dest)

    async def update_attributes(self, new_attributes: dict[str, Any]) -> AsyncGroup:
        """Merge ``new_attributes`` into the group's attributes (a coroutine).

        Parameters
        ----------
        new_attributes : dict[str, Any]
            The attributes to set (JSON-serializable); keys not in it keep their
            values.

        Returns
        -------
        AsyncGroup
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
        >>> g = zarrfast.group(store={}, attributes={"a": 1})
        >>> dict(asyncio.run(g.async_group.update_attributes({"b": 2})).attrs)
        {'a': 1, 'b': 2}
        """
        await _call(self._node.update_attributes, new_attributes)
        return self

    async def info_complete(self) -> Any:
        """Return the group's ``info`` with its members counted (a coroutine).

        Like ``Group.info_complete``: the members are listed from the store, so the
        counts are there whether or not the group has consolidated metadata.

        Returns
        -------
        GroupInfo
            Prints as zarr-python's group info.
        """
        return await _call(self._node.info_complete)

    async def tree(self, expand: bool | None = None, level: int | None = None, *,
                   max_nodes: int = 500, plain: bool = False) -> Any:
        """Draw the hierarchy below this group (a coroutine); see ``Group.tree``.

        Parameters
        ----------
        expand : None
            zarr-python's keyword; only ``None``.
        level : int or None, default None
            How far below the direct members to descend (``0``: the direct members
            only; ``None``: all).
        max_nodes : int, default 500
            Draw at most this many nodes.
        plain : bool, default False
            No bold names.

        Returns
        -------
        TreeRepr
            Prints as the tree; shows as HTML in Jupyter.

        Raises
        ------
        NotImplementedError
            ``expand`` is not None.

        Examples
        --------
        >>> import asyncio
        >>> g = zarrfast.group(store={})
        >>> _ = g.create_array("x", shape=(2,), dtype="int8")
        >>> asyncio.run(g.async_group.tree(plain=True))
        /
        └── x (2,) int8
        """
        return await _call(self._node.tree, expand=expand, level=level, max_nodes=max_nodes,
                           plain=plain)

