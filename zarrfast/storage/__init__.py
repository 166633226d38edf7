"""Stores: where keys and bytes live."""

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
