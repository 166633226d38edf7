"""Turn a store-like (path, URL, dict, None, Store) into a :class:`Store`."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import Store
from zarrfast.storage.errors import StorageOptionsError
from zarrfast.storage.local import LocalStore
from zarrfast.storage.memory import MemoryStore

StoreLike = Store | str | os.PathLike | MutableMapping | None


def is_remote_url(s: str) -> bool:
    """Whether ``s`` is an fsspec URL (``s3://...``, ``simplecache::gs://...``) rather than
    a local path; ``file://`` URLs are local paths."""
    return "://" in s and not s.startswith("file://")


def _is_zip_path(s: str) -> bool:
    return s.lower().endswith(".zip") and not os.path.isdir(s)


def _is_zarr_python_store(obj: object) -> bool:
    """Whether ``obj`` is a zarr-python 3 store (zarr is not imported to tell)."""
    from zarrfast.storage.zarr_python import is_zarr_python_store

    return is_zarr_python_store(obj)


def make_store(store: StoreLike, *, read_only: bool = False,
               storage_options: Mapping[str, Any] | None = None) -> Store:
    """Resolve ``store``: a ``Store`` is used as is (re-flagged read-only if asked),
    a URL with ``://`` (other than ``file://``) is an :class:`FsspecStore` opened with
    ``storage_options``, a path ending in ``.zip`` a :class:`ZipStore` (mode ``"r"``
    when read-only, else ``"a"``), another ``str``/``Path`` a local directory, and a
    ``dict`` or ``None`` is memory.  A zarr-python store (``zarr.abc.store.Store``:
    zarr's stores, icechunk's ``session.store``, VirtualiZarr's ``ManifestStore``) is
    wrapped in a :class:`~zarrfast.storage.zarr_python.ZarrPythonStore`."""
    if storage_options and not (isinstance(store, str) and is_remote_url(store)):
        raise StorageOptionsError(
            f"storage_options was provided but unused: they only apply to remote store URLs "
            f"such as 's3://bucket/data.zarr', and the store is {store!r}"
        )
    if not isinstance(store, Store) and _is_zarr_python_store(store):
        from zarrfast.storage.zarr_python import ZarrPythonStore

        store = ZarrPythonStore(store)
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
        if isinstance(s, str) and is_remote_url(s):
            from zarrfast.storage.fsspec import FsspecStore

            return FsspecStore.from_url(s, storage_options=storage_options, read_only=read_only)
        local = s[len("file://"):] if isinstance(s, str) and s.startswith("file://") else s
        if isinstance(local, str) and _is_zip_path(local):
            from zarrfast.storage.zip import ZipStore

            return ZipStore(local, mode="r" if read_only else "a", read_only=read_only)
        return LocalStore(s, read_only=read_only)
    if isinstance(store, MutableMapping):
        return MemoryStore(store, read_only=read_only)
    raise ZarrfastError(
        f"cannot use {type(store).__name__} {store!r} as a store: expected a Store, "
        f"a path or URL, a dict or None"
    )
