"""A store that keeps values in a dict, for tests and scratch data."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np

from zarrfast.storage.base import (
    ByteRequest,
    RangeReader,
    Ready,
    Store,
    listing_prefix,
    normalize_byte_range,
    validate_key,
    zarr_python_get,
    zarr_python_value,
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
    """A store that keeps its values in a dict, guarded by a lock.

    Values are stored as immutable ``bytes`` (a copy of what ``set`` was given).  In a
    dict the caller gave they are stored as ``Buffer``: ``bytes`` that also answer the
    methods of zarr-python's ``Buffer``, as zarr-python's dict stores hold, so that
    ``store_dict["zarr.json"].to_bytes()`` works with either library; a zarr-python
    ``Buffer`` found there reads as its bytes.  Store objects sharing one dict are
    equal and share their locks.  A pickled store carries a copy of its values.

    Parameters
    ----------
    store_dict : MutableMapping[str, bytes], optional
        The dict to keep the values in, shared with the caller; ``None`` (the
        default) makes a new one.
    read_only : bool, default False
        Refuse writes and deletes (``ReadOnlyError``).

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> array = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="int8")
    >>> array[:] = [1, 2, 3, 4]
    >>> sorted(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarrfast.open_array(store, mode="r")[:]
    array([1, 2, 3, 4], dtype=int8)

    A dict of one's own holds the values where the caller can see them:

    >>> values = {}
    >>> group = zarrfast.open_group(values, mode="w")
    >>> sorted(values)
    ['zarr.json']
    >>> b'"node_type": "group"' in values["zarr.json"].to_bytes()
    True
    """

    supports_partial_reads = True

    def __init__(
        self, store_dict: MutableMapping[str, bytes] | None = None, *, read_only: bool = False
    ) -> None:
        super().__init__(read_only=read_only)
        self._data: MutableMapping[str, bytes] = {} if store_dict is None else store_dict
        #: whether values are kept as Buffer: the dict is the caller's, who may read it
        self._buffers = store_dict is not None
        #: whether code other than this store's objects may replace values (the dict is
        #: the caller's): then no version tokens, since a replaced value's object id can
        #: be reused by its replacement
        self._foreign = store_dict is not None
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
        self._foreign = False  # (a copy of its own: nothing else writes it)

    def _lock_scope(self) -> tuple[str, int]:
        return ("memory", id(self._data))  # every store object sharing the dict

    def with_read_only(self, read_only: bool = True) -> MemoryStore:
        """A store of the same dict with another read-only flag; see ``Store.with_read_only``.

        Parameters
        ----------
        read_only : bool, default True
            The new store's flag.

        Returns
        -------
        MemoryStore
            A store sharing this one's dict (writes through either are seen by both).
        """
        view = MemoryStore(self._data, read_only=read_only)
        view._buffers, view._foreign = self._buffers, self._foreign
        # (one count of the writes for both: the versions of either are the versions)
        view._lock, view._versions, view._counter = self._lock, self._versions, self._counter
        return view

    def get(self, key: str, byte_range: ByteRequest | None = None, *,
            prototype: Any = None) -> bytes | None:
        """Read the value of ``key``, or some bytes of it; see ``Store.get``.

        Parameters
        ----------
        key : str
            The key.
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole value.
        prototype : BufferPrototype, optional
            zarr-python's buffer prototype, for code written for its stores (``await
            store.get(key, prototype=...)``): then the result is a ``Ready`` to await,
            of a ``Buffer`` of the prototype or ``None``.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when the key is missing (with ``prototype``: a
            ``Ready`` of them).

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.
        """
        if prototype is not None:
            return zarr_python_get(self, key, byte_range, prototype)  # type: ignore[return-value]
        validate_key(key)
        value = self._data.get(key)
        if value is not None and type(value) is not bytes:
            value = _plain(value)
        if value is None or byte_range is None:
            return value
        start, stop = normalize_byte_range(byte_range, len(value))
        return value[start:stop]

    def open_ranges(self, key: str) -> RangeReader | None:
        """Open the value of ``key`` for reading several byte ranges of it; see
        ``Store.open_ranges``.

        The reader reads the value as it was when opened (values are not changed in
        place, only replaced): a shard's index and its inner chunks are read from one
        value even if a writer replaces it meanwhile, where reading each range through
        ``get`` could take the index from one value and the inner chunks from the next.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        RangeReader or None
            The reader, which knows the value's size; ``None`` when the key is missing.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.

        Examples
        --------
        >>> from zarrfast.storage import RangeByteRequest
        >>> store = zarrfast.MemoryStore()
        >>> store.set("shard", b"0123456789")
        >>> reader = store.open_ranges("shard")
        >>> store.set("shard", b"abcdefghij")  # (replaced after it was opened)
        >>> reader.read(RangeByteRequest(0, 3))
        b'012'
        """
        if type(self).get is not MemoryStore.get:  # (a subclass reading its own way)
            return super().open_ranges(key)
        validate_key(key)
        with self._lock:
            value = self._data.get(key)
            version = (None if self._foreign or value is None
                       else (self._versions.get(key, 0), id(value)))
        if value is None:
            return None
        return _ValueReader(self, key, value if type(value) is bytes else _plain(value),
                            version)

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value; see ``Store.exists``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        bool
            ``True`` when the dict has the key.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.
        """
        validate_key(key)
        return key in self._data

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key``; see ``Store.set``.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The value: any object with the buffer protocol (not ``str``, ``int`` or a
            list).  What is stored is immutable: changing ``value`` afterwards
            changes nothing stored.  A zarr-python ``Buffer`` is stored too, and then
            the result is a ``Ready`` to await, as zarr-python's ``await
            store.set(key, buffer)``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``key`` is not a valid key.
        TypeError
            When ``value`` is not a buffer.
        """
        self._check_writable(key)
        validate_key(key)
        try:  # bytes(memoryview(...)) refuses ints and lists, which bytes() alone accepts
            data = value if type(value) is bytes else memoryview(value).tobytes()
        except TypeError:
            plain = zarr_python_value(value)  # zarr-python's Buffer: its style of call
            if plain is None:
                raise
            self.set(key, plain)
            return Ready()  # type: ignore[return-value]
        if self._buffers:
            data = Buffer(data)
        with self._lock:
            self._data[key] = data
            self._versions[key] = next(self._counter)

    def version(self, key: str) -> tuple[int, int] | None:
        """A token that changes whenever the value of ``key`` is replaced; see ``Store.version``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        tuple of int or None
            The number of the ``set`` that wrote the value and the stored object's
            ``id``; ``None`` when the key is missing, and always for a dict the caller
            gave (code sharing it may replace a value by one that gets the old one's
            ``id``: caches of shard indexes are then not kept).

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.
        """
        validate_key(key)
        if self._foreign:
            return None
        with self._lock:
            value = self._data.get(key)
            if value is None:
                return None
            return (self._versions.get(key, 0), id(value))

    def delete(self, key: str) -> None:
        """Delete the value of ``key``; a missing key is no error.  See ``Store.delete``.

        Parameters
        ----------
        key : str
            The key.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``key`` is not a valid key.
        """
        self._check_writable(key)
        validate_key(key)
        with self._lock:
            self._data.pop(key, None)

    def list(self) -> Iterator[str]:
        """List every key, sorted; see ``Store.list``.

        Returns
        -------
        Iterator[str]
            The keys of the dict; the iterator also works with ``async for``.
        """
        with self._lock:
            keys = sorted(self._data)
        return iter(keys)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``, sorted; see ``Store.list_prefix``.

        Parameters
        ----------
        prefix : str
            The start of the keys (``""``: every key; ``"/"``: none).

        Returns
        -------
        Iterator[str]
            The keys; the iterator also works with ``async for``.

        Raises
        ------
        InvalidKeyError
            When ``prefix`` is not ``""``, ``"/"`` or a valid key (optionally followed
            by ``/``).
        """
        if not listing_prefix(prefix):
            return iter(())
        with self._lock:
            keys = sorted(k for k in self._data if k.startswith(prefix))
        return iter(keys)


class _ValueReader(RangeReader):
    """A :class:`MemoryStore` value opened for range reads (``MemoryStore.open_ranges``):
    the value as it was when opened."""

    def __init__(self, store: MemoryStore, key: str, value: bytes, version: Any) -> None:
        self.store, self.key, self.version = store, key, version
        self._value = value
        self.size = len(value)

    def read(self, byte_range: ByteRequest) -> bytes | None:
        start, stop = normalize_byte_range(byte_range, len(self._value))
        return self._value[start:stop]

    def read_into(self, out: Any, start: int) -> int:
        view = memoryview(out).cast("B")
        part = self._value[start:start + len(view)]
        n = len(part)
        if n:
            view[:n] = part
        return n
