"""Stores: where keys and bytes live."""

from ._base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    validate_key,
)
from ._local import LocalStore
from ._memory import MemoryStore

__all__ = [
    "ByteRequest",
    "LocalStore",
    "MemoryStore",
    "OffsetByteRequest",
    "RangeByteRequest",
    "Store",
    "SuffixByteRequest",
    "validate_key",
]
