"""Stores seen from asyncio: :class:`AsyncStore` and :class:`StorePath`.

zarrfast's :class:`~zarrfast.storage.Store` methods are synchronous, and the engine, the
hierarchy and every store call them by their plain names (``get``, ``set``, ``exists``,
``list_prefix``...).  zarr-python's stores use the same names for coroutines.  One name
cannot be both without guessing from the caller (a running event loop does not mean the
caller awaits: a notebook runs one around every synchronous cell), so the coroutines live
on separate objects and the stores keep their synchronous methods unchanged:

* :class:`AsyncStore` wraps any store and offers zarr-python's coroutine methods
  (``await AsyncStore(store).get(key)``; ``async for key in AsyncStore(store).list()``).
  Each call runs the store's synchronous method on a worker thread (``asyncio.to_thread``),
  so the event loop never blocks; a remote store's method then makes its requests on
  zarrfast's own loop, as it does for synchronous callers.
* :class:`StorePath` is zarr-python's ``StorePath``: a store and a path in it, with ``/``,
  and ``get`` / ``set`` / ``delete`` / ``exists`` as coroutines.  ``StorePath.store`` is the
  store itself (synchronous methods), so ``store_path.store == store`` holds.
* :meth:`Store.open <zarrfast.storage.Store.open>` is a coroutine classmethod
  (``await LocalStore.open(root)``), defined on the base class.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

from zarrfast.concurrency import in_thread
from zarrfast.errors import ReadOnlyError, ZarrfastError
from zarrfast.storage.base import ByteRequest, Store, as_bytes
from zarrfast.storage.errors import StorageOptionsError

__all__ = ["AsyncStore", "StorePath", "make_store_path", "store_path_of"]

T = TypeVar("T")

_MODES = ("r", "r+", "a", "w", "w-")


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on a worker thread of the running loop (its default executor; a
    cancelled await leaves it running to its end: :func:`zarrfast.concurrency.in_thread`)."""
    return await in_thread(fn, *args)


async def _iterate(listing: Callable[..., Iterable[str]], *args: Any) -> AsyncIterator[str]:
    """The keys of a synchronous listing, listed on a worker thread, as an async iterator."""
    keys = await _in_thread(lambda: list(listing(*args)))
    for key in keys:
        yield key


def _value_bytes(value: Any) -> Any:
    """A zarr-python ``Buffer`` (anything with ``to_bytes``) or a bytes-like object as a
    buffer a store accepts."""
    to_bytes = getattr(value, "to_bytes", None)
    return to_bytes() if callable(to_bytes) else value


class AsyncStore:
    """zarr-python's coroutine store methods over a zarrfast ``Store``.

    zarrfast's stores are synchronous, and their methods keep the names zarr-python's
    stores use for coroutines; an ``AsyncStore`` offers those coroutines
    (``await AsyncStore(store).get(key)``, ``async for key in AsyncStore(store).list()``).
    Each call runs the store's synchronous method on a worker thread
    (``asyncio.to_thread``), so the event loop never blocks.  ``get`` accepts (and
    ignores) zarr-python's ``prototype`` argument; values are returned as ``bytes``
    (``None`` for a missing key).  ``set`` accepts bytes-like objects and zarr-python
    buffers (anything with ``to_bytes()``).  Two ``AsyncStore`` of equal stores are
    equal.

    Parameters
    ----------
    store : Store or AsyncStore
        The store whose methods to run (an ``AsyncStore`` given: its store).

    Attributes
    ----------
    store : Store
        The store (synchronous methods).

    Raises
    ------
    ZarrfastError
        When ``store`` is not a zarrfast ``Store``.

    Examples
    --------
    >>> import asyncio
    >>> from zarrfast.storage import AsyncStore
    >>> async def main():
    ...     store = AsyncStore(zarrfast.MemoryStore())
    ...     await store.set("a/zarr.json", b"{}")
    ...     return await store.get("a/zarr.json"), [key async for key in store.list()]
    >>> asyncio.run(main())
    (b'{}', ['a/zarr.json'])
    """

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        if isinstance(store, AsyncStore):
            store = store.store
        if not isinstance(store, Store):
            raise ZarrfastError(f"AsyncStore wraps a zarrfast Store, got "
                                f"{type(store).__name__} {store!r}")
        self.store = store

    def __repr__(self) -> str:
        return f"AsyncStore({self.store!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AsyncStore) and other.store == self.store

    def __hash__(self) -> int:
        return hash(("AsyncStore", self.store))

    @property
    def read_only(self) -> bool:
        """Whether the store refuses writes and deletes."""
        return self.store.read_only

    # -- reads ----------------------------------------------------------------------
    async def get(self, key: str, prototype: Any = None,
                  byte_range: ByteRequest | None = None) -> bytes | None:
        """Read the value of ``key``, or some bytes of it; see ``Store.get``.

        Parameters
        ----------
        key : str
            The key.
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored (the value is
            ``bytes``).
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole value.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when the key is missing.
        """
        return await _in_thread(self.store.get, key, byte_range)

    async def get_many(self, keys: Iterable[str],
                       byte_ranges: Iterable[ByteRequest | None] | None = None
                       ) -> list[bytes | None]:
        """Read many values in one call: the store's ``get_many``.

        A remote store keeps the requests in flight together.

        Parameters
        ----------
        keys : iterable of str
            The keys.
        byte_ranges : iterable of (byte request or None), optional
            One byte request (or ``None``: the whole value) per key; ``None`` (the
            default) reads every value whole.

        Returns
        -------
        list of (bytes or None)
            The values in the order of ``keys``; ``None`` for a missing key.
        """
        keys = list(keys)
        ranges = None if byte_ranges is None else list(byte_ranges)
        return await _in_thread(self.store.get_many, keys, ranges)

    async def get_partial_values(self, prototype: Any,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]
                                 ) -> list[bytes | None]:
        """Read bytes of many values in one call, as zarr-python's stores do.

        Parameters
        ----------
        prototype : Any
            zarr-python's buffer prototype: accepted and ignored.
        key_ranges : iterable of (str, byte request or None) pairs
            The keys and the bytes of each to read (``None``: the whole value).

        Returns
        -------
        list of (bytes or None)
            The values in the order of ``key_ranges``; ``None`` for a missing key.
        """
        pairs = list(key_ranges)
        return await self.get_many([k for k, _ in pairs], [r for _, r in pairs])

    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value; see ``Store.exists``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        bool
            ``True`` when the key holds a value.
        """
        return await _in_thread(self.store.exists, key)

    async def getsize(self, key: str) -> int:
        """The size in bytes of the value of ``key``; see ``Store.getsize``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        int
            The value's size in bytes.

        Raises
        ------
        FileNotFoundError
            When the key is missing.
        """
        return await _in_thread(self.store.getsize, key)

    async def is_empty(self, prefix: str = "") -> bool:
        """Whether no key starts with ``prefix``; see ``Store.is_empty``.

        Parameters
        ----------
        prefix : str, default ""
            The start of the keys; ``""`` asks about the whole store.

        Returns
        -------
        bool
            ``True`` when no key starts with ``prefix``.
        """
        return await _in_thread(self.store.is_empty, prefix)

    # -- writes ---------------------------------------------------------------------
    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``; see ``Store.set``.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like or zarr-python Buffer
            The value: a bytes-like object, or anything with ``to_bytes()``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        await _in_thread(self.store.set, key, _value_bytes(value))

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` unless it holds a value; see ``Store.set_if_not_exists``.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like or zarr-python Buffer
            The value: a bytes-like object, or anything with ``to_bytes()``.
        """
        await _in_thread(self.store.set_if_not_exists, key, _value_bytes(value))

    async def delete(self, key: str) -> None:
        """Delete the value of ``key``; a missing key is no error.  See ``Store.delete``.

        Parameters
        ----------
        key : str
            The key.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        await _in_thread(self.store.delete, key)

    async def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix``; see ``Store.delete_dir``.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` deletes everything.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        await _in_thread(self.store.delete_dir, prefix)

    async def clear(self) -> None:
        """Delete every key of the store; see ``Store.clear``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        await _in_thread(self.store.clear)

    # -- listing (async iterators, as in zarr-python) ---------------------------------
    def list(self) -> AsyncIterator[str]:
        """List every key, sorted, as an asynchronous iterator; see ``Store.list``.

        Returns
        -------
        AsyncIterator[str]
            The keys (``async for``), listed on a worker thread when first asked for.
        """
        return _iterate(self.store.list)

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """List the keys that start with ``prefix``, sorted, asynchronously.

        See ``Store.list_prefix``.

        Parameters
        ----------
        prefix : str
            The start of the keys (``""``: every key).

        Returns
        -------
        AsyncIterator[str]
            The keys (``async for``).
        """
        return _iterate(self.store.list_prefix, prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """List the names of the immediate children of ``prefix``, asynchronously.

        See ``Store.list_dir``.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` is the root.

        Returns
        -------
        AsyncIterator[str]
            The names, sorted (``async for``).
        """
        return _iterate(self.store.list_dir, prefix)


class StorePath:
    """A store and a path in it, as zarr-python's ``StorePath``.

    ``StorePath(store, "a") / "b"`` is ``StorePath(store, "a/b")``.  ``get``, ``set``,
    ``set_if_not_exists``, ``delete``, ``exists``, ``is_empty`` and ``delete_dir`` are
    coroutines acting on the key ``path`` (or the keys below it), run on a worker
    thread as ``AsyncStore`` runs them.  ``store`` is the store itself, with its
    synchronous methods.  ``str()`` gives the store's URL and the path
    (``memory://.../a/b``); store paths of equal stores and paths are equal.

    Parameters
    ----------
    store : Store or AsyncStore
        The store (an ``AsyncStore`` given: its store).
    path : str, default ""
        The path in the store; leading and trailing ``/`` are dropped.

    Attributes
    ----------
    store : Store
        The store.
    path : str
        The path, without leading or trailing ``/``.

    Raises
    ------
    ZarrfastError
        When ``store`` is not a zarrfast ``Store`` or ``path`` not a ``str``.

    Examples
    --------
    >>> import asyncio
    >>> from zarrfast.storage import StorePath
    >>> store = zarrfast.MemoryStore()
    >>> path = StorePath(store, "group") / "zarr.json"
    >>> path.path
    'group/zarr.json'
    >>> asyncio.run(path.set(b"{}"))
    >>> store.get("group/zarr.json")
    b'{}'
    >>> asyncio.run(path.get())
    b'{}'
    """

    __slots__ = ("path", "store")

    def __init__(self, store: Store, path: str = "") -> None:
        if isinstance(store, AsyncStore):
            store = store.store
        if not isinstance(store, Store):
            raise ZarrfastError(f"StorePath needs a zarrfast Store, got "
                                f"{type(store).__name__} {store!r}")
        if not isinstance(path, str):
            raise ZarrfastError(f"StorePath path must be a str, got {path!r}")
        self.store = store
        self.path = path.strip("/")

    @classmethod
    async def open(cls, store: Store, path: str, mode: str | None = None) -> StorePath:
        """Make a ``StorePath``, checked against ``mode``, as zarr-python's ``StorePath.open``.

        Parameters
        ----------
        store : Store or AsyncStore
            The store.
        path : str
            The path in the store.
        mode : {"r", "r+", "a", "w", "w-"}, optional
            ``"w-"`` refuses a path that holds keys below it (and deletes nothing),
            ``"w"`` deletes every key below it, ``"r"``, ``"r+"`` and ``"a"`` keep them;
            ``"r"`` gives a read-only view of a writable store (``with_read_only``);
            every mode but ``"r"`` needs a writable store.  ``None`` (the default)
            checks nothing.

        Returns
        -------
        StorePath
            The store path.

        Raises
        ------
        ReadOnlyError
            When a mode other than ``"r"`` is asked of a read-only store.
        FileExistsError
            When mode ``"w-"`` finds keys below ``path``.
        zarrfast.storage.errors.UnsupportedStoreOperationError
            When mode ``"r"`` is asked of a writable store that cannot make a read-only
            view of itself.
        ZarrfastError
            When ``mode`` is not one of those above.

        Examples
        --------
        >>> import asyncio
        >>> from zarrfast.storage import StorePath
        >>> store = zarrfast.MemoryStore()
        >>> store.set("a/zarr.json", b"{}")
        >>> path = asyncio.run(StorePath.open(store, "a", mode="w"))
        >>> list(store.list())
        []
        """
        if mode is not None and mode not in _MODES:
            raise ZarrfastError(f"StorePath.open: mode must be one of {_MODES}, got {mode!r}")
        self = cls(store, path)
        if mode is None:
            return self
        if mode == "r":
            from zarrfast.storage.resolve import read_only_view

            return cls(read_only_view(self.store), self.path)
        if self.store.read_only:
            raise ReadOnlyError(f"StorePath.open: {self.store!r} is read-only; cannot open "
                                f"{self.path or '/'!r} with mode {mode!r}")
        if mode == "w":
            await self.delete_dir()
        elif mode == "w-" and not await self.is_empty():
            raise FileExistsError(f"StorePath.open: {self.path or '/'!r} in {self.store!r} is not "
                                  f"empty (mode 'w-' needs an empty path)")
        return self

    def _aio(self) -> AsyncStore:
        return AsyncStore(self.store)

    @property
    def read_only(self) -> bool:
        """Whether the store refuses writes and deletes."""
        return self.store.read_only

    def _key(self) -> str:
        if not self.path:
            raise ZarrfastError(f"StorePath at the root of {self.store!r} names no key; "
                                f"use store_path / 'name'")
        return self.path

    async def get(self, prototype: Any = None,
                  byte_range: ByteRequest | None = None) -> bytes | None:
        """Read the value of the key ``path``, or some bytes of it.

        Parameters
        ----------
        prototype : Any, optional
            zarr-python's buffer prototype: accepted and ignored.
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole value.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when the key is missing.

        Raises
        ------
        ZarrfastError
            When ``path`` is the root (``""``), which names no key.
        """
        return await self._aio().get(self._key(), prototype, byte_range)

    async def set(self, value: Any, byte_range: Any = None) -> None:
        """Store ``value`` under the key ``path``.

        Parameters
        ----------
        value : bytes-like or zarr-python Buffer
            The value: a bytes-like object, or anything with ``to_bytes()``.
        byte_range : None
            Must be ``None``: partial writes are not supported.

        Raises
        ------
        ZarrfastError
            When ``byte_range`` is given, or ``path`` is the root.
        ReadOnlyError
            When the store is read-only.
        """
        if byte_range is not None:
            raise ZarrfastError(f"StorePath.set of {self.path!r}: partial writes "
                                f"(byte_range={byte_range!r}) are not supported")
        await self._aio().set(self._key(), as_bytes(_value_bytes(value)))

    async def set_if_not_exists(self, value: Any) -> None:
        """Store ``value`` under the key ``path`` unless it holds a value.

        Parameters
        ----------
        value : bytes-like or zarr-python Buffer
            The value: a bytes-like object, or anything with ``to_bytes()``.

        Raises
        ------
        ZarrfastError
            When ``path`` is the root.
        """
        await self._aio().set_if_not_exists(self._key(), _value_bytes(value))

    async def delete(self) -> None:
        """Delete the key ``path`` and every key below it; at the root, everything.

        zarr-python's ``LocalStore`` deletes a directory so.  Missing keys are no
        error.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        def delete() -> None:
            if self.path:
                self.store.delete(self.path)
            self.store.delete_dir(self.path)
        await _in_thread(delete)

    async def delete_dir(self) -> None:
        """Delete every key below ``path`` (the key ``path`` itself stays).

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        await self._aio().delete_dir(self.path)

    async def exists(self) -> bool:
        """Whether the key ``path`` holds a value.

        Returns
        -------
        bool
            ``True`` when it does.

        Raises
        ------
        ZarrfastError
            When ``path`` is the root.
        """
        return await self._aio().exists(self._key())

    async def is_empty(self) -> bool:
        """Whether no key lies below ``path``.

        Returns
        -------
        bool
            ``True`` when no key starts with ``path + "/"`` (at the root: when the
            store is empty).
        """
        return await self._aio().is_empty(self.path + "/" if self.path else "")

    def __truediv__(self, other: str) -> StorePath:
        if not isinstance(other, str):
            return NotImplemented
        other = other.strip("/")
        return StorePath(self.store, f"{self.path}/{other}" if self.path and other
                         else self.path or other)

    def __str__(self) -> str:
        return f"{self.store}/{self.path}" if self.path else str(self.store)

    def __repr__(self) -> str:
        return f"StorePath({self.store!r}, {self.path!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StorePath):
            return self.store == other.store and self.path == other.path
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.store, self.path))


def store_path_of(store: Any, path: str = "", *, read_only: bool = False,
                  storage_options: Any = None) -> StorePath:
    """The ``StorePath`` of ``path`` in the store that ``store`` names.

    Nothing is checked, created or deleted: this is ``make_store_path`` without a mode.

    Parameters
    ----------
    store : StorePath, AsyncStore or store-like
        A ``StorePath`` (``path`` is then below its path), an ``AsyncStore``, or
        anything ``make_store`` accepts (a store, a directory, a URL, a dict, ``None``).
    path : str, default ""
        The path in the store.
    read_only : bool, default False
        Open the store read-only, as ``make_store`` does (a ``StorePath`` or a
        ``Store`` given: a read-only view of its store).
    storage_options : Mapping[str, Any], optional
        Options of a remote store, as ``make_store`` takes them (only for a URL).

    Returns
    -------
    StorePath
        The store path.

    Raises
    ------
    zarrfast.storage.errors.StorageOptionsError
        When ``storage_options`` are given for anything but a remote URL (a
        ``StorePath`` too).
    zarrfast.storage.errors.UnsupportedStoreOperationError
        When ``read_only`` is asked of a writable store that cannot make a read-only
        view of itself.
    ZarrfastError
        When ``store`` names no store.

    Examples
    --------
    >>> from zarrfast.storage import StorePath, store_path_of
    >>> store_path_of("data.zarr", "group/array")
    StorePath(LocalStore('file://data.zarr'), 'group/array')
    >>> store_path_of(StorePath(zarrfast.LocalStore("data.zarr"), "group"), "array",
    ...               read_only=True)
    StorePath(LocalStore('file://data.zarr', read_only=True), 'group/array')
    """
    from zarrfast.storage.resolve import make_store, read_only_view

    if isinstance(store, StorePath):
        if storage_options:
            raise StorageOptionsError(
                f"storage_options was provided but unused: they only apply to remote store "
                f"URLs, and the store is {store!r}")
        sp = store / path if path else store
        if read_only and not sp.store.read_only:
            return StorePath(read_only_view(sp.store), sp.path)
        return sp
    if isinstance(store, AsyncStore):
        store = store.store
    return StorePath(make_store(store, read_only=read_only, storage_options=storage_options),
                     path or "")


async def make_store_path(store_like: Any, *, path: str | None = "", mode: str | None = None,
                          storage_options: Any = None) -> StorePath:
    """The ``StorePath`` of ``path`` in ``store_like``, opened with ``mode``, as zarr-python's.

    A coroutine, as in zarr-python: ``await make_store_path(store_like, path=...,
    mode=...)``.  The store is resolved as ``make_store`` resolves it (read-only for
    mode ``"r"``), then opened as ``StorePath.open(store, path, mode)`` opens it:

    * ``"r"``: read-only (a read-only view of a writable store); nothing is changed;
    * ``"r+"`` and ``"a"``: a writable store; nothing is changed or deleted;
    * ``"w"``: a writable store; every key below ``path`` (below ``path + "/"``; at the
      root, every key of the store) is DELETED;
    * ``"w-"``: a writable store; a path with keys below it is refused with
      ``FileExistsError`` (nothing is deleted);
    * ``None`` (the default): the store as resolved, nothing checked.

    Modes ``"r"`` and ``"r+"`` of a local directory path that does not exist raise
    ``FileNotFoundError``, as zarr-python's ``LocalStore.open`` does.  A ``StorePath``
    given is used as zarr-python uses it, below its path and with its store: mode
    ``"r"`` makes a read-only view of that store, and the other modes change, check
    and delete nothing.

    Parameters
    ----------
    store_like : StorePath, AsyncStore or store-like
        What names the store: a ``StorePath`` (``path`` is then below its path), an
        ``AsyncStore``, or anything ``make_store`` accepts.
    path : str, optional
        The path in the store (``None`` or ``""``: its root); normalized as node paths
        are (``"/a//b/"`` is ``"a/b"``; ``"."`` and ``".."`` names are refused).
    mode : {"r", "r+", "a", "w", "w-"}, optional
        The access mode, as above.
    storage_options : Mapping[str, Any], optional
        Options of a remote store, as ``make_store`` takes them (only for a URL).

    Returns
    -------
    StorePath
        The store path.

    Raises
    ------
    FileExistsError
        When mode ``"w-"`` finds keys below ``path``.
    FileNotFoundError
        When mode ``"r"`` or ``"r+"`` names a local directory that does not exist.
    ReadOnlyError
        When a mode other than ``"r"`` is asked of a read-only store.
    zarrfast.storage.errors.UnsupportedStoreOperationError
        When mode ``"r"`` is asked of a writable store that cannot make a read-only
        view of itself.
    zarrfast.storage.errors.StorageOptionsError
        When ``storage_options`` are given for anything but a remote URL.
    ZarrfastError
        When ``mode`` is not one of those above, ``path`` is not a valid node path, or
        ``store_like`` names no store.

    Examples
    --------
    >>> import asyncio
    >>> from zarrfast.storage import make_store_path
    >>> store = zarrfast.MemoryStore()
    >>> store.set("group/zarr.json", b"{}")
    >>> asyncio.run(make_store_path(store, path="group", mode="r"))
    StorePath(MemoryStore('memory://...', read_only=True), 'group')
    >>> _ = asyncio.run(make_store_path(store, path="group", mode="a"))
    >>> list(store.list())
    ['group/zarr.json']
    >>> _ = asyncio.run(make_store_path(store, path="group", mode="w"))
    >>> list(store.list())
    []
    """
    from zarrfast.metadata.paths import normalize_path
    from zarrfast.storage.local import LocalStore
    from zarrfast.storage.resolve import make_store

    if mode is not None and mode not in _MODES:
        raise ZarrfastError(f"make_store_path: mode must be one of {_MODES}, got {mode!r}")
    path = normalize_path(path)
    if isinstance(store_like, StorePath):
        return store_path_of(store_like, path, read_only=mode == "r",
                             storage_options=storage_options)
    if isinstance(store_like, AsyncStore):
        store_like = store_like.store
    store = make_store(store_like, read_only=mode == "r", storage_options=storage_options)
    if (mode in ("r", "r+") and isinstance(store_like, (str, os.PathLike))
            and isinstance(store, LocalStore) and not store.root.exists()):
        raise FileNotFoundError(f"make_store_path: {store.root} does not exist "
                                f"(mode {mode!r} opens existing data)")
    return await StorePath.open(store, path, mode)
