"""Stores: where keys and bytes live.

A store maps string keys (``"zarr.json"``, ``"group/array/c/0/1"``) to bytes; arrays and
groups read and write their metadata and chunks through one.  Every function that takes
``store=`` accepts a ``Store`` or anything ``make_store`` turns into one:

* a directory path: ``LocalStore``; a path ending in ``.zip``: ``ZipStore``;
* a dict (its values kept there) or ``None``: ``MemoryStore``;
* a URL (``s3://``, ``gs://``, ``az://``, ``https://``, any fsspec protocol):
  ``ObjectStore`` (obstore) or ``FsspecStore`` (fsspec), with ``storage_options``;
* a zarr-python store (icechunk's ``session.store`` too): ``ZarrPythonStore``.

``CacheStore`` and ``LoggingStore`` wrap another store; ``AsyncStore`` and
``StorePath`` offer zarr-python's coroutine methods over any store.  ``Store`` is the
interface, for a store of one's own; the errors of stores derive from ``StoreError``
(and from ``zarrfast.errors.ZarrfastError``).

Examples
--------
>>> from zarrfast.storage import LocalStore, MemoryStore, make_store
>>> make_store("data.zarr") == LocalStore("data.zarr")
True
>>> store = MemoryStore()
>>> group = zarrfast.open_group(store, mode="w")
>>> list(store.list())
['zarr.json']
"""

from zarrfast.storage.asynchronous import AsyncStore, StorePath, make_store_path, store_path_of
from zarrfast.storage.base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    RangeReader,
    Store,
    StoreCapabilities,
    SuffixByteRequest,
    validate_key,
)
from zarrfast.storage.errors import (
    ArchiveNotFoundError,
    ForkedRuntimeError,
    MissingDependencyError,
    RemotePermissionError,
    RemoteStoreError,
    RetriesExhaustedError,
    StorageOptionsError,
    StoreError,
    UnsafeArchiveMemberError,
    UnsupportedStoreOperationError,
)
from zarrfast.storage.fsspec import FsspecStore, RetryPolicy
from zarrfast.storage.local import LocalStore
from zarrfast.storage.memory import MemoryStore
from zarrfast.storage.obstore import ObjectStore
from zarrfast.storage.resolve import StoreLike, make_store  # noqa: E402  (uses the stores above)
from zarrfast.storage.wrappers import CacheStore, LoggingStore, WrapperStore
from zarrfast.storage.zarr_python import ZarrPythonStore
from zarrfast.storage.zip import ZipStore

__all__ = [
    "ArchiveNotFoundError",
    "AsyncStore",
    "ByteRequest",
    "CacheStore",
    "ForkedRuntimeError",
    "FsspecStore",
    "LocalStore",
    "LoggingStore",
    "MemoryStore",
    "MissingDependencyError",
    "ObjectStore",
    "OffsetByteRequest",
    "RangeByteRequest",
    "RangeReader",
    "RemotePermissionError",
    "RemoteStoreError",
    "RetriesExhaustedError",
    "RetryPolicy",
    "StorageOptionsError",
    "Store",
    "StoreCapabilities",
    "StoreError",
    "StorePath",
    "SuffixByteRequest",
    "UnsafeArchiveMemberError",
    "UnsupportedStoreOperationError",
    "StoreLike",
    "WrapperStore",
    "ZarrPythonStore",
    "ZipStore",
    "make_store",
    "make_store_path",
    "store_path_of",
    "validate_key",
]
