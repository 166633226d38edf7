"""Turn a store-like (path, dict, None, Store) into a :class:`Store`."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from ..errors import ZarrfastError
from ._base import Store
from ._local import LocalStore
from ._memory import MemoryStore

StoreLike = Store | str | os.PathLike | MutableMapping | None


def make_store(store: StoreLike, *, read_only: bool = False) -> Store:
    """Resolve ``store``: a ``Store`` is used as is (re-flagged read-only if asked),
    a ``str``/``Path`` is a local directory, a ``dict`` or ``None`` is memory."""
    if isinstance(store, Store):
        if read_only and not store.read_only:
            try:
                return store.with_read_only(True)
            except NotImplementedError:
                return store
        return store
    if store is None:
        return MemoryStore(read_only=read_only)
    if isinstance(store, (str, os.PathLike)):
        s = os.fspath(store)
        if "://" in s and not s.startswith("file://"):
            raise ZarrfastError(
                f"store URL {s!r}: remote stores are not supported yet; use a local path"
            )
        return LocalStore(s, read_only=read_only)
    if isinstance(store, MutableMapping):
        return MemoryStore(store, read_only=read_only)
    raise ZarrfastError(
        f"cannot use {type(store).__name__} {store!r} as a store: expected a Store, "
        f"a path, a dict or None"
    )
