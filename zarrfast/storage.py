"""Public home of the store classes (``zarrfast.storage.LocalStore`` etc.)."""

from .stores import (  # noqa: F401
    ByteRequest,
    FsspecStore,
    LocalStore,
    MemoryStore,
    OffsetByteRequest,
    RangeByteRequest,
    RetryPolicy,
    Store,
    SuffixByteRequest,
    ZipStore,
    validate_key,
)
from .stores._resolve import StoreLike, make_store  # noqa: F401

__all__ = [
    "ByteRequest",
    "FsspecStore",
    "LocalStore",
    "MemoryStore",
    "OffsetByteRequest",
    "RangeByteRequest",
    "RetryPolicy",
    "Store",
    "StoreLike",
    "SuffixByteRequest",
    "ZipStore",
    "make_store",
    "validate_key",
]
