"""A store that keeps values in a dict, for tests and scratch data."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, MutableMapping

import numpy as np

from zarrfast.storage.base import (
    ByteRequest,
    Store,
    listing_prefix,
    normalize_byte_range,
    validate_key,
)

__all__ = ["Buffer", "MemoryStore"]


class Buffer(bytes):
    """The ``bytes`` a :class:`MemoryStore` puts in a dict given to it: ``bytes`` that
    also answer the methods of zarr-python's ``Buffer``, which its dict stores hold, so
    that ``store_dict["zarr.json"].to_bytes()`` works with either library."""

    __slots__ = ()

    def __getitem__(self, key):  # type: ignore[override]
        part = super().__getitem__(key)
        return Buffer(part) if isinstance(key, slice) else part  # (zarr-python slices)

    def to_bytes(self) -> bytes:
        return bytes(self)

    def as_numpy_array(self) -> np.ndarray:
        """The bytes as a read-only 1-d ``uint8`` array (no copy)."""
        return np.frombuffer(self, dtype=np.uint8)

    def as_array_like(self) -> np.ndarray:
        return self.as_numpy_array()

    def as_buffer_like(self) -> memoryview:
        return memoryview(self)


def _plain(value: object) -> bytes:
    """A stored value as bytes: what zarrfast wrote is; what zarr-python put in a shared
    dict (its ``Buffer``) is converted."""
    if isinstance(value, bytes):
        return value
    to_bytes = getattr(value, "to_bytes", None)
    if callable(to_bytes) and not isinstance(value, int):
        return to_bytes()
    return memoryview(value).tobytes()  # type: ignore[arg-type]


class MemoryStore(Store):
    """Values in a dict (``store_dict``, shared if given) guarded by a lock.

    Values are stored as immutable ``bytes``; in a dict the caller gave, as
    :class:`Buffer` (``bytes`` with zarr-python's ``Buffer`` methods, as zarr-python's
    dict stores hold), and a zarr-python ``Buffer`` found there reads as its bytes.
    """

    supports_partial_reads = True

    def __init__(
        self, store_dict: MutableMapping[str, bytes] | None = None, *, read_only: bool = False
    ) -> None:
        super().__init__(read_only=read_only)
        self._data: MutableMapping[str, bytes] = {} if store_dict is None else store_dict
        #: whether values are kept as Buffer: the dict is the caller's, who may read it
        self._buffers = store_dict is not None
        self._lock = threading.Lock()
        self._versions: dict[str, int] = {}  # key -> number of the set() that wrote it
        self._counter = itertools.count(1)

    @property
    def _store_dict(self) -> MutableMapping[str, bytes]:
        """The dict holding the values (zarr-python's name for it)."""
        return self._data

    def __str__(self) -> str:
        """``memory://<id>``, as zarr-python's (arrays' and groups' reprs start with it)."""
        return f"memory://{id(self._data)}"

    def __repr__(self) -> str:
        return f"MemoryStore('{self}'{', read_only=True' if self.read_only else ''})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryStore) and other._data is self._data

    def __hash__(self) -> int:
        return id(self._data)

    def __getstate__(self) -> dict:
        # a pickled MemoryStore carries a snapshot of its values (a new process
        # cannot share this process's memory); the lock is recreated
        with self._lock:
            return {"data": dict(self._data), "read_only": self._read_only,
                    "buffers": self._buffers}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["data"], read_only=state["read_only"])  # type: ignore[misc]
        self._buffers = state.get("buffers", True)

    def _lock_scope(self) -> tuple[str, int]:
        return ("memory", id(self._data))  # every store object sharing the dict

    def with_read_only(self, read_only: bool = True) -> MemoryStore:
        view = MemoryStore(self._data, read_only=read_only)
        view._buffers = self._buffers
        return view

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        validate_key(key)
        value = self._data.get(key)
        if value is not None and type(value) is not bytes:
            value = _plain(value)
        if value is None or byte_range is None:
            return value
        start, stop = normalize_byte_range(byte_range, len(value))
        return value[start:stop]

    def exists(self, key: str) -> bool:
        validate_key(key)
        return key in self._data

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self._check_writable(key)
        validate_key(key)
        # bytes(memoryview(...)) refuses ints and lists, which bytes() alone would accept
        data = value if type(value) is bytes else memoryview(value).tobytes()
        if self._buffers:
            data = Buffer(data)
        with self._lock:
            self._data[key] = data
            self._versions[key] = next(self._counter)

    def version(self, key: str) -> tuple[int, int] | None:
        validate_key(key)
        with self._lock:
            value = self._data.get(key)
            if value is None:
                return None
            # the object's id also changes when code sharing the dict replaces a value
            return (self._versions.get(key, 0), id(value))

    def delete(self, key: str) -> None:
        self._check_writable(key)
        validate_key(key)
        with self._lock:
            self._data.pop(key, None)

    def list(self) -> Iterator[str]:
        with self._lock:
            keys = sorted(self._data)
        return iter(keys)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        if not listing_prefix(prefix):
            return iter(())
        with self._lock:
            keys = sorted(k for k in self._data if k.startswith(prefix))
        return iter(keys)
