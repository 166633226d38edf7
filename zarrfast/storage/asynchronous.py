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

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

from zarrfast.concurrency import in_thread
from zarrfast.errors import ReadOnlyError, ZarrfastError
from zarrfast.storage.base import ByteRequest, Store, as_bytes

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
    """zarr-python's coroutine store methods over a zarrfast :class:`Store`.

    ``get`` accepts (and ignores) zarr-python's ``prototype`` argument; values are
    returned as ``bytes`` (``None`` for a missing key).  ``set`` accepts bytes-like
    objects and zarr-python buffers (anything with ``to_bytes()``)."""

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
        return self.store.read_only

    # -- reads ----------------------------------------------------------------------
    async def get(self, key: str, prototype: Any = None,
                  byte_range: ByteRequest | None = None) -> bytes | None:
        return await _in_thread(self.store.get, key, byte_range)

    async def get_many(self, keys: Iterable[str],
                       byte_ranges: Iterable[ByteRequest | None] | None = None
                       ) -> list[bytes | None]:
        """Many values in one call: the store's ``get_many`` (a remote store keeps
        its requests in flight together)."""
        keys = list(keys)
        ranges = None if byte_ranges is None else list(byte_ranges)
        return await _in_thread(self.store.get_many, keys, ranges)

    async def get_partial_values(self, prototype: Any,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]
                                 ) -> list[bytes | None]:
        pairs = list(key_ranges)
        return await self.get_many([k for k, _ in pairs], [r for _, r in pairs])

    async def exists(self, key: str) -> bool:
        return await _in_thread(self.store.exists, key)

    async def getsize(self, key: str) -> int:
        return await _in_thread(self.store.getsize, key)

    async def is_empty(self, prefix: str = "") -> bool:
        return await _in_thread(self.store.is_empty, prefix)

    # -- writes ---------------------------------------------------------------------
    async def set(self, key: str, value: Any) -> None:
        await _in_thread(self.store.set, key, _value_bytes(value))

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        await _in_thread(self.store.set_if_not_exists, key, _value_bytes(value))

    async def delete(self, key: str) -> None:
        await _in_thread(self.store.delete, key)

    async def delete_dir(self, prefix: str) -> None:
        await _in_thread(self.store.delete_dir, prefix)

    async def clear(self) -> None:
        await _in_thread(self.store.clear)

    # -- listing (async iterators, as in zarr-python) ---------------------------------
    def list(self) -> AsyncIterator[str]:
        return _iterate(self.store.list)

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        return _iterate(self.store.list_prefix, prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        return _iterate(self.store.list_dir, prefix)


class StorePath:
    """A store and a path in it (zarr-python's ``StorePath``).

    ``StorePath(store, "a") / "b"`` is ``StorePath(store, "a/b")``.  ``get``, ``set``,
    ``delete``, ``exists``, ``is_empty`` and ``delete_dir`` are coroutines acting on the
    key ``path`` (see :class:`AsyncStore`)."""

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
        """A :class:`StorePath` checked against ``mode``: ``'w-'`` refuses a path that
        holds keys, ``'w'`` deletes them, ``'r'`` / ``'r+'`` / ``'a'`` keep them (and
        ``'r+'`` / ``'a'`` / ``'w'`` / ``'w-'`` need a writable store)."""
        if mode is not None and mode not in _MODES:
            raise ZarrfastError(f"StorePath.open: mode must be one of {_MODES}, got {mode!r}")
        self = cls(store, path)
        if mode is None or mode == "r":
            return self
        if store.read_only:
            raise ReadOnlyError(f"StorePath.open: {store!r} is read-only; cannot open "
                                f"{self.path or '/'!r} with mode {mode!r}")
        if mode == "w":
            await self.delete_dir()
        elif mode == "w-" and not await self.is_empty():
            raise FileExistsError(f"StorePath.open: {self.path or '/'!r} in {store!r} is not "
                                  f"empty (mode 'w-' needs an empty path)")
        return self

    def _aio(self) -> AsyncStore:
        return AsyncStore(self.store)

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    def _key(self) -> str:
        if not self.path:
            raise ZarrfastError(f"StorePath at the root of {self.store!r} names no key; "
                                f"use store_path / 'name'")
        return self.path

    async def get(self, prototype: Any = None,
                  byte_range: ByteRequest | None = None) -> bytes | None:
        return await self._aio().get(self._key(), prototype, byte_range)

    async def set(self, value: Any, byte_range: Any = None) -> None:
        if byte_range is not None:
            raise ZarrfastError(f"StorePath.set of {self.path!r}: partial writes "
                                f"(byte_range={byte_range!r}) are not supported")
        await self._aio().set(self._key(), as_bytes(_value_bytes(value)))

    async def set_if_not_exists(self, value: Any) -> None:
        await self._aio().set_if_not_exists(self._key(), _value_bytes(value))

    async def delete(self) -> None:
        """Delete the key ``path`` and every key below it (as zarr-python's ``LocalStore``
        deletes a directory); at the root, everything.  Nothing missing is an error."""
        def delete() -> None:
            if self.path:
                self.store.delete(self.path)
            self.store.delete_dir(self.path)
        await _in_thread(delete)

    async def delete_dir(self) -> None:
        """Delete every key below ``path``."""
        await self._aio().delete_dir(self.path)

    async def exists(self) -> bool:
        return await self._aio().exists(self._key())

    async def is_empty(self) -> bool:
        """Whether no key lies below ``path``."""
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
    """``store`` with ``path`` below it, as a :class:`StorePath`: ``store`` is a
    :class:`StorePath`, an :class:`AsyncStore` or anything
    :func:`~zarrfast.storage.make_store` accepts (a store, a directory, a URL, a dict,
    ``None``)."""
    from zarrfast.storage.resolve import make_store

    if isinstance(store, StorePath):
        return store / path if path else store
    if isinstance(store, AsyncStore):
        store = store.store
    return StorePath(make_store(store, read_only=read_only, storage_options=storage_options),
                     path or "")


async def make_store_path(store_like: Any, *, path: str | None = "", mode: str | None = None,
                          storage_options: Any = None) -> StorePath:
    """zarr-python's ``await make_store_path(store_like, path=..., mode=...)``: the
    :class:`StorePath` of ``store_like`` (see :func:`store_path_of`) with ``path`` below
    it, read-only for mode ``'r'``."""
    if mode is not None and mode not in _MODES:
        raise ZarrfastError(f"make_store_path: mode must be one of {_MODES}, got {mode!r}")
    return store_path_of(store_like, path or "", read_only=mode == "r",
                         storage_options=storage_options)
