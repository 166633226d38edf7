"""Stores: where keys and bytes live."""

from ._base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    validate_key,
)
from ._errors import (
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
from ._fsspec import FsspecStore, RetryPolicy
from ._local import LocalStore
from ._memory import MemoryStore
from ._zip import ZipStore

__all__ = [
    "ArchiveNotFoundError",
    "ByteRequest",
    "FsspecStore",
    "LocalStore",
    "MemoryStore",
    "MissingDependencyError",
    "OffsetByteRequest",
    "RangeByteRequest",
    "RemotePermissionError",
    "RemoteStoreError",
    "RetriesExhaustedError",
    "RetryPolicy",
    "StorageOptionsError",
    "Store",
    "StoreError",
    "SuffixByteRequest",
    "UnsafeArchiveMemberError",
    "UnsupportedStoreOperationError",
    "ZipStore",
    "validate_key",
]
