"""Turn a store-like (path, URL, dict, None, Store) into a :class:`Store`."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import Store
from zarrfast.storage.errors import StorageOptionsError, UnsupportedStoreOperationError
from zarrfast.storage.local import LocalStore
from zarrfast.storage.memory import MemoryStore

StoreLike = Store | str | os.PathLike | MutableMapping | None


def is_remote_url(s: str) -> bool:
    """Whether ``s`` is an fsspec URL (``s3://...``, ``simplecache::gs://...``) rather than
    a local path; ``file://`` URLs are local paths."""
    return "://" in s and not s.startswith("file://")


#: URL schemes that ObjectStore (obstore) serves; ``gcs`` is spelled ``gs`` for obstore
OBSTORE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "azure", "adl",
                             "http", "https"})


def remote_store(url: str, *, storage_options: Mapping[str, Any] | None = None,
                 read_only: bool = False) -> Store:
    """The store of a remote URL.  The rule (config ``remote_store``, environment
    ``ZARRFAST_REMOTE_STORE``):

    * ``"auto"`` (the default): ``s3://``, ``gs://``/``gcs://``, ``az://``/``abfs://``/
      ``azure://`` and ``http(s)://`` URLs get an :class:`ObjectStore` when obstore is
      installed and every storage option has an obstore equivalent (obstore's own keys,
      or the s3fs-style ``key``, ``secret``, ``token``, ``anon``, ``endpoint_url``,
      ``client_kwargs={endpoint_url, region_name}``); otherwise, and for every other
      protocol, chained URLs (``simplecache::s3://...``), ``memory://`` and
      ``reference://``, an :class:`FsspecStore`;
    * ``"obstore"``: an :class:`ObjectStore` for those schemes, and an error when obstore
      is missing or an option does not translate; other URLs stay with fsspec;
    * ``"fsspec"``: always an :class:`FsspecStore`.
    """
    from zarrfast import config

    choice = config.get("remote_store")
    scheme = url.split("://", 1)[0].lower() if "::" not in url else ""
    if choice != "fsspec" and scheme in OBSTORE_SCHEMES:
        obstore_url = "gs://" + url.split("://", 1)[1] if scheme == "gcs" else url
        if choice == "obstore" or _obstore_usable(obstore_url, storage_options):
            from zarrfast.storage.obstore import ObjectStore

            try:
                return ObjectStore.from_url(obstore_url, storage_options, read_only)
            except StorageOptionsError:
                if choice == "obstore":
                    raise  # auto: an option obstore does not know goes to fsspec
    from zarrfast.storage.fsspec import FsspecStore

    return FsspecStore.from_url(url, storage_options=storage_options, read_only=read_only)


def _obstore_usable(url: str, storage_options: Mapping[str, Any] | None) -> bool:
    import importlib.util

    if importlib.util.find_spec("obstore") is None:
        return False
    from zarrfast.storage.obstore import translate_storage_options

    try:
        translate_storage_options(url, storage_options)
    except StorageOptionsError:
        return False
    return True


def _is_zip_path(s: str) -> bool:
    return s.lower().endswith(".zip") and not os.path.isdir(s)


def _is_zarr_python_store(obj: object) -> bool:
    """Whether ``obj`` is a zarr-python 3 store (zarr is not imported to tell)."""
    from zarrfast.storage.zarr_python import is_zarr_python_store

    return is_zarr_python_store(obj)


def read_only_view(store: Store) -> Store:
    """``store`` itself when it is read-only, else its read-only view; never a writable store.

    Parameters
    ----------
    store : Store
        The store.

    Returns
    -------
    Store
        ``store`` when it is read-only, else ``store.with_read_only(True)``.

    Raises
    ------
    zarrfast.storage.errors.UnsupportedStoreOperationError
        When ``store`` is writable and cannot make a read-only view of itself (its
        ``with_read_only`` raises ``NotImplementedError``, or returns a writable store).
    """
    if store.read_only:
        return store
    name = type(store).__name__
    try:
        view = store.with_read_only(True)
    except NotImplementedError as e:
        raise UnsupportedStoreOperationError(
            f"read-only was asked of {store!r}, a writable {name} that cannot make a "
            f"read-only view of itself ({name}.with_read_only: {e}); open the data with a "
            f"read-only store, or give {name} a with_read_only") from e
    if not view.read_only:
        raise UnsupportedStoreOperationError(
            f"read-only was asked of {store!r}, but {name}.with_read_only(True) returned "
            f"a writable store ({view!r})")
    return view


def _describe_store(store: Any) -> str:
    """How an error message names ``store``, briefly: a ``dict``'s size, never its values
    (``"a dict of 3 keys"``); another mapping's type (its size may cost a listing); a
    path's, a URL's or a store's repr; anything else's type with its repr when short."""
    if isinstance(store, dict):
        return f"a {type(store).__name__} of {len(store)} key{'' if len(store) == 1 else 's'}"
    if isinstance(store, Mapping) and not isinstance(store, Store):
        return f"a {type(store).__name__} (a mapping)"
    if isinstance(store, (str, os.PathLike, Store)):
        return repr(store)
    text = repr(store)
    kind = f"{type(store).__module__}.{type(store).__qualname__}"
    return f"a {kind} ({text})" if len(text) <= 80 else f"a {kind}"


def make_store(store: StoreLike, *, read_only: bool = False,
               storage_options: Mapping[str, Any] | None = None) -> Store:
    """Turn anything that names a store (a path, a URL, a dict, ``None``) into a ``Store``.

    Every function of zarrfast that takes ``store=`` resolves it this way:

    * a ``Store`` is used as it is; when ``read_only`` is asked of a writable store, its
      read-only view (``with_read_only(True)``) is used instead, and a store that cannot
      make one is refused (never returned writable);
    * a zarr-python store (``zarr.abc.store.Store``: zarr's stores, icechunk's
      ``session.store``, VirtualiZarr's ``ManifestStore``) is wrapped in a
      ``ZarrPythonStore``;
    * a URL with ``://`` other than ``file://`` is a remote store opened with
      ``storage_options``: an ``ObjectStore`` (obstore) or an ``FsspecStore``, as
      ``config remote_store`` says (by default obstore for ``s3://``, ``gs://``,
      ``az://`` and ``http(s)://`` URLs where it is installed and understands every
      option, else fsspec);
    * a path ending in ``.zip`` that is not a directory is a ``ZipStore`` (mode
      ``"r"`` when read-only, else ``"a"``: made if missing);
    * another ``str`` or ``os.PathLike`` (or a ``file://`` URL) is a ``LocalStore``
      of that directory;
    * a ``dict`` (any mutable mapping) is a ``MemoryStore`` keeping its values there,
      and ``None`` a new ``MemoryStore``.

    Parameters
    ----------
    store : Store, str, os.PathLike, MutableMapping or None
        What to resolve.
    read_only : bool, default False
        Open the store read-only (a ``Store`` given: a read-only view of it, made by its
        ``with_read_only``).
    storage_options : Mapping[str, Any], optional
        Options of a remote store (credentials, an endpoint ...), as fsspec takes
        them; only for remote URLs.

    Returns
    -------
    Store
        The store.

    Raises
    ------
    zarrfast.storage.errors.StorageOptionsError
        When ``storage_options`` are given for anything but a remote URL.
    zarrfast.storage.errors.MissingDependencyError
        When a remote URL needs a package that is not installed (fsspec, s3fs ...).
    zarrfast.storage.errors.UnsupportedStoreOperationError
        When ``read_only`` is asked of a writable ``Store`` that cannot make a read-only
        view of itself (its ``with_read_only`` raises ``NotImplementedError``).  It is
        a ``ValueError`` too, as zarr-python's refusal of mode ``"r"`` for such a store.
    ZarrfastError
        When ``store`` is none of the above.

    Examples
    --------
    >>> from zarrfast.storage import make_store
    >>> make_store("data.zarr")
    LocalStore('file://data.zarr')
    >>> make_store("data.zarr", read_only=True)
    LocalStore('file://data.zarr', read_only=True)
    >>> make_store(None)
    MemoryStore('memory://...')
    >>> make_store("archive.zip")
    ZipStore('zip://archive.zip', mode='a')
    >>> store = zarrfast.MemoryStore()
    >>> make_store(store) is store
    True
    """
    if storage_options and not (isinstance(store, str) and is_remote_url(store)):
        raise StorageOptionsError(
            f"storage_options was provided but unused: they only apply to remote store URLs "
            f"such as 's3://bucket/data.zarr', and the store is {_describe_store(store)}"
        )
    if not isinstance(store, Store) and _is_zarr_python_store(store):
        from zarrfast.storage.zarr_python import ZarrPythonStore

        store = ZarrPythonStore(store)
    if isinstance(store, Store):
        if read_only and not store.read_only:
            return read_only_view(store)
        return store
    if store is None:
        return MemoryStore(read_only=read_only)
    if isinstance(store, (str, os.PathLike)):
        s = os.fspath(store)
        if isinstance(s, str) and is_remote_url(s):
            return remote_store(s, storage_options=storage_options, read_only=read_only)
        local = s[len("file://"):] if isinstance(s, str) and s.startswith("file://") else s
        if isinstance(local, str) and _is_zip_path(local):
            from zarrfast.storage.zip import ZipStore

            return ZipStore(local, mode="r" if read_only else "a", read_only=read_only)
        return LocalStore(s, read_only=read_only)
    if isinstance(store, MutableMapping):
        return MemoryStore(store, read_only=read_only)
    raise ZarrfastError(
        f"cannot use {_describe_store(store)} as a store: expected a Store, "
        f"a path or URL, a dict or None"
    )
