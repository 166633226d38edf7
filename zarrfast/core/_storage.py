"""``zarr.storage`` once :func:`zarrfast.install_as_zarr` has run: zarrfast's stores, and a
``WrapperStore`` that takes subclasses written against zarr-python's API.

Every name is :mod:`zarrfast.storage`'s (``zarr.storage.MemoryStore is
zarrfast.MemoryStore``) except ``WrapperStore``, a subclass of zarrfast's that libraries
can subclass as they subclass zarr-python's (anndata's test helpers:
``class AccessTrackingStore(WrapperStore[Store])`` with ``async def get(self, key,
prototype, byte_range)`` awaiting ``self._store.get(...)``):

* ``WrapperStore[Store]`` is ``WrapperStore`` (zarr-python's is generic);
* ``self._store`` is the wrapped store seen from asyncio (an
  :class:`~zarrfast.storage.AsyncStore`: its methods are coroutines, as zarr-python's);
* a subclass's coroutine ``get``, ``set``, ``exists``, ``delete`` and ``clear``, and its
  asynchronous-generator ``list``, ``list_prefix`` and ``list_dir``, become zarrfast's
  synchronous methods of the same names, run to their end by
  :func:`zarrfast.core.sync.sync`; a subclass that redefines ``get`` sees every read
  (``get_many`` and ``get_limited`` read through it, and it makes no conditional
  writes, which would read around it), and likewise every write of one that redefines
  ``set`` and every delete of one that redefines ``delete``;
* ``get_sync(key, prototype=None, byte_range=None)`` (zarr-python 3.3) reads the wrapped
  store.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import zarrfast.storage as _storage
from zarrfast.core.buffer import Buffer, default_buffer_prototype
from zarrfast.core.sync import collect_aiterator, sync
from zarrfast.storage import *  # noqa: F403 - zarrfast's stores under zarr.storage
from zarrfast.storage import AsyncStore, ByteRequest

__all__ = list(_storage.__all__)

#: a package to the import system, so that ``import zarr.storage._common`` (pydantic-zarr)
#: reaches install_as_zarr's finder
__path__: list[str] = []


def _bytes(value: Any) -> Any:
    """zarr-python's buffer (``to_bytes()``) as bytes; anything else as it is."""
    to_bytes = getattr(value, "to_bytes", None)
    return to_bytes() if callable(to_bytes) else value


def _adapt_get(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def get(self: Any, key: str, byte_range: ByteRequest | None = None) -> Any:
        return _bytes(sync(fn(self, key, default_buffer_prototype(), byte_range)))
    return get


def _adapt_set(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def set(self: Any, key: str, value: Any) -> None:  # noqa: A001 - the store's method
        sync(fn(self, key, Buffer.from_bytes(value)))
    return set


def _adapt_plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return sync(fn(self, *args, **kwargs))
    return method


def _adapt_listing(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Iterator[str]:
        return iter(collect_aiterator(fn(self, *args, **kwargs)))
    return method


def _get_many_through_get(self: Any, keys: Sequence[str],
                          byte_ranges: Sequence[ByteRequest | None] | None = None
                          ) -> list[Any]:
    ranges = byte_ranges if byte_ranges is not None else [None] * len(keys)
    return [self.get(key, rng) for key, rng in zip(keys, ranges, strict=True)]


_ADAPTERS = {"get": _adapt_get, "set": _adapt_set, "exists": _adapt_plain,
             "delete": _adapt_plain, "clear": _adapt_plain, "list": _adapt_listing,
             "list_prefix": _adapt_listing, "list_dir": _adapt_listing}


class WrapperStore(_storage.WrapperStore):  # type: ignore[no-redef]
    """zarrfast's ``WrapperStore`` that takes subclasses written for zarr-python's.

    See :mod:`zarrfast.core._storage`: ``WrapperStore[Store]`` is the class itself,
    ``self._store`` the wrapped store's coroutines, and a subclass's coroutine methods
    become synchronous ones.

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store to wrap.
    """

    def __class_getitem__(cls, item: Any) -> type:
        return cls

    def __init_subclass__(cls, **kwargs: Any) -> None:
        adapted = set()
        for name, adapt in _ADAPTERS.items():
            fn = cls.__dict__.get(name)
            if fn is not None and (inspect.iscoroutinefunction(fn)
                                   or inspect.isasyncgenfunction(fn)):
                setattr(cls, name, adapt(fn))
                adapted.add(name)
        # the batch methods through the adapted ones (zarrfast's WrapperStore sends them
        # to the wrapped store), so that the subclass sees every read, write and delete
        through: dict[str, Any] = {}
        if "get" in adapted:
            through.update(get_many=_get_many_through_get,
                           get_limited=_storage.Store.get_limited,
                           conditional_writes=False)  # (get_versioned would read around get)
        if "set" in adapted:
            through.update(set_many=_storage.Store.set_many,
                           set_regions=_storage.Store.set_regions,
                           fast_set_many=False, fast_set_regions=False)
        if "delete" in adapted:
            through.update(delete_many=_storage.Store.delete_many,
                           delete_dir=_storage.Store.delete_dir)
        for name, value in through.items():
            if name not in cls.__dict__:
                setattr(cls, name, value)
        super().__init_subclass__(**kwargs)  # (after: it wraps the listings it finds)

    @property
    def _store(self) -> AsyncStore:
        """The wrapped store seen from asyncio (zarr-python's ``WrapperStore._store``)."""
        return AsyncStore(self.store)

    def get_sync(self, key: str, prototype: Any = None,
                 byte_range: ByteRequest | None = None) -> Buffer | None:
        """Read ``key`` of the wrapped store (zarr-python's ``get_sync``).

        Parameters
        ----------
        key : str
            The key.
        prototype : BufferPrototype, optional
            The buffer class to return (``default_buffer_prototype()`` by default).
        byte_range : ByteRequest, optional
            The bytes to read; the whole value by default.

        Returns
        -------
        Buffer or None
            The value, ``None`` if missing.
        """
        value = self.store.get(key, byte_range)
        if value is None:
            return None
        proto = prototype if prototype is not None else default_buffer_prototype()
        return proto.buffer.from_bytes(value)
