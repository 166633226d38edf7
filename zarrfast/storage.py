"""Public home of the store classes (``zarrfast.storage.LocalStore`` etc.)."""

from .stores import (  # noqa: F401
    ByteRequest,
    LocalStore,
    MemoryStore,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    validate_key,
)
from .stores._resolve import StoreLike, make_store  # noqa: F401

__all__ = [
    "ByteRequest",
    "LocalStore",
    "MemoryStore",
    "OffsetByteRequest",
    "RangeByteRequest",
    "Store",
    "StoreLike",
    "SuffixByteRequest",
    "make_store",
    "validate_key",
]
