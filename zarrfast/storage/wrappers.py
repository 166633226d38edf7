"""Stores that wrap another store: a read-through cache and a log of operations.

Both work on any :class:`~zarrfast.storage.Store` (and so, through make_store, on
anything zarrfast takes as a store)::

    store = CacheStore(ObjectStore.from_url("s3://bucket/data.zarr"), max_bytes=2**30)
    log = LoggingStore(store)
    a = zarrfast.open_array(log, mode="r")
    a[:10]
    print(log.summary())          # operations, keys, bytes and seconds

A wrapper forwards what it does not change to the wrapped store, its locks included,
so that nodes opened through a wrapper and through the store itself exclude each other.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import (
    ByteRequest,
    Store,
    StoreCapabilities,
    many_requests,
    normalize_byte_range,
    validate_key,
)

__all__ = ["CacheStore", "LoggingStore", "Operation", "WrapperStore"]

logger = logging.getLogger("zarrfast.storage")


class WrapperStore(Store):
    """A store that forwards every call to another store; subclasses change some of them.

    Reads go through ``get`` and ``get_many`` (never straight to the wrapped store's
    files), so that a subclass sees every read.  The wrapper has the wrapped store's
    flags (``read_only``, ``supports_writes``...) and its locks, so that nodes opened
    through a wrapper and through the store itself exclude each other.  A pickled
    wrapper is unpickled as a new wrapper (an empty log, an empty cache) around the
    unpickled store.

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store to wrap: a zarrfast store (``zarrfast.storage.make_store`` makes one
        from a path, a URL or a dict).

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``store`` is not a zarrfast ``Store``.

    Examples
    --------
    >>> from zarrfast.storage import WrapperStore
    >>> inner = zarrfast.MemoryStore()
    >>> store = WrapperStore(inner)
    >>> store.set("a/b", b"xyz")
    >>> inner.get("a/b")
    b'xyz'
    >>> list(store.list())
    ['a/b']
    """

    def __init__(self, store: Store) -> None:
        if not isinstance(store, Store):
            raise ZarrfastError(f"{type(self).__name__} wraps a zarrfast Store, got "
                                f"{type(store).__name__} {store!r}; make one with "
                                f"zarrfast.storage.make_store")
        super().__init__(read_only=store.read_only)
        self.store = store

    # flags of the wrapped store
    @property
    def supports_writes(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store takes writes (its ``supports_writes``)."""
        return self.store.supports_writes

    @property
    def supports_deletes(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store takes deletes (its ``supports_deletes``)."""
        return self.store.supports_deletes

    @property
    def supports_partial_reads(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store serves byte ranges without reading whole values."""
        return self.store.supports_partial_reads

    @property
    def supports_listing(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store lists its keys (its ``supports_listing``)."""
        return self.store.supports_listing

    @property
    def batched_reads(self) -> bool:  # type: ignore[override]
        """Whether reads should be batched with ``get_many`` (the wrapped store's flag)."""
        return self.store.batched_reads

    @property
    def fast_set_many(self) -> bool:  # type: ignore[override]
        """Whether ``set_many`` is faster than ``set`` one by one (the wrapped store's flag)."""
        return self.store.fast_set_many

    @property
    def interprocess_locks(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store's locks also exclude other processes."""
        return self.store.interprocess_locks

    @property
    def conditional_writes(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store makes ``set_if_version`` a compare-and-swap of its own."""
        return self.store.conditional_writes

    @property
    def read_only(self) -> bool:
        """Whether the wrapped store refuses writes (a wrapper has its store's flag)."""
        return self.store.read_only

    def _capabilities(self) -> StoreCapabilities:
        """The class flags (every read goes through this wrapper's ``get``), with the
        wrapped store's locks."""
        return dataclasses.replace(
            super()._capabilities(),
            interprocess_locks=self.store.capabilities.interprocess_locks)

    def __str__(self) -> str:  # the wrapped store's URL
        return str(self.store)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.store!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.store == self.store  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.store))

    def _lock_scope(self) -> Hashable:
        return self.store._lock_scope()

    @contextlib.contextmanager
    def node_lock(self, path: str, *, interprocess: bool = True,
                  timeout: float | None = None) -> Iterator[None]:
        """Hold the wrapped store's lock of the node at ``path`` (see ``Store.node_lock``).

        Parameters
        ----------
        path : str
            The node's path (``""`` for the root).
        interprocess : bool, default True
            Also lock other processes out, where the wrapped store can.
        timeout : float or None, default None
            Seconds to wait for the lock (``None``: ``config lock_timeout``).

        Yields
        ------
        None
            While the lock is held.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            If the lock is not free within ``timeout`` seconds.
        """
        with self.store.node_lock(path, interprocess=interprocess, timeout=timeout):
            yield

    @contextlib.contextmanager
    def value_lock(self, key: str, *, timeout: float | None = None,
                   interprocess: bool | None = None) -> Iterator[None]:
        """Hold the wrapped store's lock of the value at ``key``; drop what the wrapper holds of it.

        Once the lock is held, what this wrapper held of ``key`` (a cache's entry) is
        dropped, so that the read-modify-write under the lock reads the stored value
        (another process may have changed it since it was cached).

        Parameters
        ----------
        key : str
            The key whose value is read, changed and written back.
        timeout : float or None, default None
            Seconds to wait for the lock (``None``: ``config lock_timeout``).
        interprocess : bool or None, default None
            Also lock other processes out (``None``: the wrapped store's
            ``interprocess_locks``).

        Yields
        ------
        None
            While the lock is held.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            If the lock is not free within ``timeout`` seconds.
        """
        with self.store.value_lock(key, timeout=timeout, interprocess=interprocess):
            self._forget(key)
            yield

    def _forget(self, key: str) -> None:  # noqa: B027 - a hook for caches
        """Drop what this wrapper holds of ``key`` (nothing, but in a cache)."""

    @contextlib.contextmanager
    def creation_lock(self) -> Iterator[None]:
        """Hold the wrapped store's lock of node creation (see ``Store.creation_lock``).

        Yields
        ------
        None
            While the lock is held.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            If the lock is not free within ``config lock_timeout`` seconds.
        """
        with self.store.creation_lock():
            yield

    def get_versioned(self, key: str, *, limit: int | None = None
                      ) -> tuple[Any, Hashable | None]:
        """Read ``key`` and its version token from the wrapped store, never from a cache.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int or None, default None
            Refuse a value larger than this many bytes before it is read.

        Returns
        -------
        tuple
            ``(value, version)``: the stored value (``None`` when missing) and the token
            that ``set_if_version`` compares with.

        Raises
        ------
        NotImplementedError
            If the wrapped store makes no conditional writes.
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit``.
        """
        return self.store.get_versioned(key, limit=limit)  # (never a cache's: the stored)

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
        """Write ``value`` to ``key`` in the wrapped store only if its version is ``version``.

        What the wrapper held of ``key`` is dropped afterwards, written or not.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The new value.
        version : Hashable or None
            The token ``get_versioned`` gave; ``None``: write only if ``key`` is missing.

        Returns
        -------
        bool
            Whether ``value`` was written (``False``: the value was replaced or deleted
            meanwhile, and nothing was written).

        Raises
        ------
        NotImplementedError
            If the wrapped store makes no conditional writes.
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        validate_key(key)
        try:
            return self.store.set_if_version(key, value, version)
        finally:
            self._forget(key)

    def _options(self) -> dict[str, Any]:
        """The keyword arguments that make a wrapper like this one."""
        return {}

    def _rewrap(self, store: Store) -> WrapperStore:
        """A wrapper around ``store`` that shares this one's state (its log, its cache)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)  # (not copy.copy: __reduce__ makes a new state)
        clone.store = store
        clone._read_only = store.read_only
        return clone

    def __reduce__(self):
        # a new wrapper (an empty log, an empty cache) around the pickled store
        return (_rebuild, (type(self), self.store, self._options()))

    def with_read_only(self, read_only: bool = True) -> WrapperStore:
        """Wrap the wrapped store's view with another read-only flag.

        The new wrapper shares this one's state: a log records into the same
        ``operations``, a cache holds the same entries.

        Parameters
        ----------
        read_only : bool, default True
            The flag of the view.

        Returns
        -------
        WrapperStore
            A wrapper of the same class around ``store.with_read_only(read_only)``.

        Raises
        ------
        NotImplementedError
            If the wrapped store cannot change its read-only flag.
        """
        return self._rewrap(self.store.with_read_only(read_only))

    # reads
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Return the wrapped store's value of ``key`` (or the requested bytes of it).

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        byte_range : ByteRequest or None, default None
            A ``RangeByteRequest``, ``OffsetByteRequest`` or ``SuffixByteRequest``;
            ``None`` for the whole value.

        Returns
        -------
        bytes-like or None
            The value (or the range of it, clipped like a slice), ``None`` if missing.
        """
        return self.store.get(key, byte_range)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Return the wrapped store's value of ``key``, refusing one larger than ``limit`` bytes.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int
            The largest size in bytes a valid value can have.

        Returns
        -------
        bytes-like or None
            The value, ``None`` if missing.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit`` bytes.
        """
        return self.store.get_limited(key, limit)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
        """Return the wrapped store's values of many keys, in order.

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None] or None, default None
            One byte range (or ``None``) per key; ``None`` for whole values.

        Returns
        -------
        list[bytes-like or None]
            The values, ``None`` for missing keys.
        """
        return self.store.get_many(keys, byte_ranges)

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value in the wrapped store.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        bool
            ``True`` if ``key`` holds a value.
        """
        return self.store.exists(key)

    def version(self, key: str) -> Hashable | None:
        """Return the wrapped store's version token of ``key``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        Hashable or None
            A token that changes whenever the value is replaced; ``None`` when the store
            gives none or the key is missing.
        """
        return self.store.version(key)

    def getsize(self, key: str) -> int:
        """Return the size in bytes of the wrapped store's value of ``key``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        int
            The size in bytes.

        Raises
        ------
        FileNotFoundError
            If ``key`` is missing.
        """
        return self.store.getsize(key)

    # writes
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` in the wrapped store.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The value (any contiguous or non-contiguous buffer).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self.store.set(key, value)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values in the wrapped store.

        Parameters
        ----------
        items : Mapping[str, bytes-like] or Iterable[tuple[str, bytes-like]]
            The keys and their values.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self.store.set_many(items)

    def delete(self, key: str) -> None:
        """Delete ``key`` from the wrapped store; deleting a missing key is not an error.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many keys from the wrapped store; missing keys are not an error.

        Parameters
        ----------
        keys : Iterable[str]
            The keys.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self.store.delete_many(keys)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` from the wrapped store.

        Parameters
        ----------
        prefix : str
            A node path; ``""`` means every key.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self.store.delete_dir(prefix)

    # listing
    def list(self) -> Iterator[str]:
        """List the wrapped store's keys.

        Returns
        -------
        Iterator[str]
            Every key, sorted.
        """
        return self.store.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the wrapped store's keys that start with ``prefix``.

        Parameters
        ----------
        prefix : str
            A string prefix (``"a/"``: the keys below ``a``).

        Returns
        -------
        Iterator[str]
            The keys, sorted.
        """
        return self.store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names of the immediate children below ``prefix`` in the wrapped store.

        Parameters
        ----------
        prefix : str
            A node path (``""`` for the root).

        Returns
        -------
        Iterator[str]
            The names of keys and "directories" just below ``prefix``, sorted.
        """
        return self.store.list_dir(prefix)

    def close(self) -> None:
        """Close the wrapped store."""
        self.store.close()


def _rebuild(cls: type, store: Store, options: dict[str, Any]) -> WrapperStore:
    return cls(store, **options)


# -- the log ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Operation:
    """One call on a store, as a ``LoggingStore`` records it.

    Parameters
    ----------
    op : str
        The operation: ``"get"``, ``"set"``, ``"delete"``, ``"exists"``, ``"getsize"``,
        ``"list"``, ``"list_prefix"``, ``"list_dir"``, ``"delete_dir"``, or a batch:
        ``"get_many"``, ``"set_many"``, ``"delete_many"``.
    key : str
        The key (the prefix of a listing or ``delete_dir``, ``""`` for ``list``; the
        number of keys of a batch).
    nbytes : int
        Bytes read or written (0 for a missing key, a failure, and operations that
        move no value).
    seconds : float
        How long the call took (the keys of ``get_many`` and ``set_many``: the whole
        batch's duration; those of ``delete_many``: 0).
    byte_range : ByteRequest or None, default None
        The byte range read, if any.
    error : str or None, default None
        ``"ErrorType: message"`` when the call raised.
    """

    op: str
    key: str
    nbytes: int
    seconds: float
    byte_range: ByteRequest | None = None
    error: str | None = None


class LoggingStore(WrapperStore):
    """A store that records every operation on another store.

    Each operation's name, key, bytes read or written, duration and error are kept in
    ``operations`` (the last ``max_records`` of them, as ``Operation`` records) and
    logged as records of the ``zarrfast.storage`` logger at ``log_level``.  A batched
    call (``get_many``, ``set_many``, ``delete_many``) is one record per key plus one
    for the batch itself (``"get_many"``, whose key is the number of keys); the keys of
    ``get_many`` and ``set_many`` have the duration of the whole batch, those of
    ``delete_many`` 0 seconds.  Version tokens and conditional writes
    (``version``, ``get_versioned``, ``set_if_version``) pass through unrecorded.
    ``counter`` counts the records of each operation, as zarr-python's
    ``LoggingStore.counter`` (``store.counter["get"]``; ``counter.clear()`` zeroes it
    and keeps ``operations``).  Thread-safe.

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store to wrap.
    max_records : int or None, default 100_000
        How many records ``operations`` keeps (the oldest are dropped first);
        ``None``: all of them.
    log_level : int, default logging.DEBUG
        The level of the logger records.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``store`` is not a zarrfast ``Store``.

    Examples
    --------
    >>> from zarrfast.storage import LoggingStore
    >>> log = LoggingStore(zarrfast.MemoryStore())
    >>> log.set("a", b"abc")
    >>> log.get("a")
    b'abc'
    >>> log.get("missing") is None
    True
    >>> [(o.op, o.key, o.nbytes) for o in log.operations]
    [('set', 'a', 3), ('get', 'a', 3), ('get', 'missing', 0)]
    >>> log.counts()
    {'set': 1, 'get': 2}

    An array read through the log:

    >>> a = zarrfast.create_array(log, shape=(4,), chunks=(2,), dtype="i4")
    >>> log.reset()
    >>> a[:]
    array([0, 0, 0, 0], dtype=int32)
    >>> [(o.op, o.key) for o in log.operations]
    [('get', 'c/0'), ('get', 'c/1')]
    >>> print(log.summary())
    get     2 calls     0 bytes ... s
    """

    def __init__(self, store: Store, *, max_records: int | None = 100_000,
                 log_level: int = logging.DEBUG) -> None:
        super().__init__(store)
        self.operations: deque[Operation] = deque(maxlen=max_records)
        #: zarr-python's ``LoggingStore.counter``: the number of records of each operation
        #: since it was made or cleared (``counter.clear()``), batches' own records too
        self.counter: Counter[str] = Counter()
        self.log_level = log_level
        self._max_records = max_records
        self._counter_lock = threading.Lock()

    def _options(self) -> dict[str, Any]:
        return {"max_records": self._max_records, "log_level": self.log_level}

    def _record(self, op: str, key: str, nbytes: int, seconds: float,
                byte_range: ByteRequest | None = None, error: str | None = None) -> None:
        self.operations.append(Operation(op, key, nbytes, seconds, byte_range, error))
        with self._counter_lock:
            self.counter[op] += 1
        if logger.isEnabledFor(self.log_level):
            logger.log(self.log_level, "%s %s %r: %d bytes in %.6f s%s", self.store, op, key,
                       nbytes, seconds, f" ({error})" if error else "")

    def _timed(self, op: str, key: str, call: Any, size: Any,
               byte_range: ByteRequest | None = None) -> Any:
        start = time.perf_counter()
        try:
            result = call()
        except BaseException as e:
            self._record(op, key, 0, time.perf_counter() - start, byte_range,
                         f"{type(e).__name__}: {e}")
            raise
        self._record(op, key, size(result), time.perf_counter() - start, byte_range)
        return result

    # -- what was recorded --------------------------------------------------------------
    def reset(self) -> None:
        """Forget the recorded operations, and zero ``counter``.

        (``clear()``, as on every store, deletes every key of the store.)
        """
        self.operations.clear()
        with self._counter_lock:
            self.counter.clear()

    def counts(self) -> dict[str, int]:
        """Count the recorded operations of each kind (batches not counted).

        Returns
        -------
        dict[str, int]
            The number of records of each operation (``{"get": 2, "set": 1}``), the keys
            of a batch included and the batch's own record not.

        Examples
        --------
        >>> from zarrfast.storage import LoggingStore
        >>> log = LoggingStore(zarrfast.MemoryStore())
        >>> log.set_many({"a": b"1", "b": b"2"})
        >>> log.counts()
        {'set': 2}
        """
        out: dict[str, int] = {}
        for o in list(self.operations):
            if not o.op.endswith("_many"):
                out[o.op] = out.get(o.op, 0) + 1
        return out

    def summary(self) -> str:
        """Summarize the recorded operations: one line per kind with calls, bytes and seconds.

        Returns
        -------
        str
            One line per operation name, sorted by name, batches included:
            ``name  calls  bytes  seconds``.

        Examples
        --------
        >>> from zarrfast.storage import LoggingStore
        >>> log = LoggingStore(zarrfast.MemoryStore())
        >>> log.set("a", b"abc")
        >>> print(log.summary())
        set     1 calls     3 bytes ... s
        """
        rows: dict[str, list[float]] = {}
        for o in list(self.operations):
            r = rows.setdefault(o.op, [0, 0, 0.0])
            r[0] += 1
            r[1] += o.nbytes
            r[2] += o.seconds
        return "\n".join(f"{op:<12} {int(n):>8} calls {int(b):>14} bytes {s:10.4f} s"
                         for op, (n, b, s) in sorted(rows.items()))

    # -- reads ----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Read ``key`` from the wrapped store, recording a ``"get"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        byte_range : ByteRequest or None, default None
            The bytes to read; ``None`` for the whole value.

        Returns
        -------
        bytes-like or None
            The value (or the range of it), ``None`` if missing.
        """
        return self._timed("get", key, lambda: self.store.get(key, byte_range), _size,
                           byte_range)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Read ``key``, refusing a value larger than ``limit`` bytes, recording a ``"get"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int
            The largest size in bytes a valid value can have.

        Returns
        -------
        bytes-like or None
            The value, ``None`` if missing.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit`` bytes (recorded with the error).
        """
        return self._timed("get", key, lambda: self.store.get_limited(key, limit), _size)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
        """Read many keys from the wrapped store, recording a ``"get"`` per key and the batch.

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None] or None, default None
            One byte range (or ``None``) per key; ``None`` for whole values.

        Returns
        -------
        list[bytes-like or None]
            The values, in order; ``None`` for missing keys.
        """
        keys = list(keys)
        start = time.perf_counter()
        try:
            values = self.store.get_many(keys, byte_ranges)
        except BaseException as e:
            self._record("get_many", str(len(keys)), 0, time.perf_counter() - start,
                         error=f"{type(e).__name__}: {e}")
            raise
        seconds = time.perf_counter() - start
        ranges = list(byte_ranges) if byte_ranges is not None else [None] * len(keys)
        for k, r, v in zip(keys, ranges, values, strict=False):
            self._record("get", k, _size(v), seconds, r)
        self._record("get_many", str(len(keys)), sum(_size(v) for v in values), seconds)
        return values

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value, recording an ``"exists"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        bool
            ``True`` if ``key`` holds a value.
        """
        return self._timed("exists", key, lambda: self.store.exists(key), lambda _: 0)

    def getsize(self, key: str) -> int:
        """Return the size of the value of ``key``, recording a ``"getsize"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        int
            The size in bytes.

        Raises
        ------
        FileNotFoundError
            If ``key`` is missing.
        """
        return self._timed("getsize", key, lambda: self.store.getsize(key), lambda _: 0)

    # -- writes ---------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` in the wrapped store, recording a ``"set"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The value.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only (recorded with the error).
        """
        n = memoryview(value).nbytes
        self._timed("set", key, lambda: self.store.set(key, value), lambda _: n)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values, recording the ``"set_many"`` batch and then a ``"set"`` per key.

        Parameters
        ----------
        items : Mapping[str, bytes-like] or Iterable[tuple[str, bytes-like]]
            The keys and their values.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only (the batch is recorded with the error).
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        sizes = [memoryview(v).nbytes for _, v in pairs]
        self._timed("set_many", str(len(pairs)), lambda: self.store.set_many(pairs),
                    lambda _: sum(sizes))
        seconds = self.operations[-1].seconds if self.operations else 0.0
        for (k, _), n in zip(pairs, sizes, strict=True):
            self._record("set", k, n, seconds)

    def delete(self, key: str) -> None:
        """Delete ``key`` from the wrapped store, recording a ``"delete"``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self._timed("delete", key, lambda: self.store.delete(key), lambda _: 0)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many keys, recording the ``"delete_many"`` batch and then a ``"delete"`` per key.

        Parameters
        ----------
        keys : Iterable[str]
            The keys.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only (the batch is recorded with the error).
        """
        keys = list(keys)
        self._timed("delete_many", str(len(keys)), lambda: self.store.delete_many(keys),
                    lambda _: 0)
        for k in keys:
            self._record("delete", k, 0, 0.0)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix``, recording a ``"delete_dir"``.

        Parameters
        ----------
        prefix : str
            A node path; ``""`` means every key.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        self._timed("delete_dir", prefix, lambda: self.store.delete_dir(prefix), lambda _: 0)

    # -- listing --------------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        """List the wrapped store's keys, recording a ``"list"``.

        Returns
        -------
        Iterator[str]
            Every key, sorted (listed in full before it returns, so that the record has
            the listing's duration).
        """
        return iter(self._timed("list", "", lambda: [*self.store.list()], lambda _: 0))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``, recording a ``"list_prefix"``.

        Parameters
        ----------
        prefix : str
            A string prefix.

        Returns
        -------
        Iterator[str]
            The keys, sorted.
        """
        return iter(self._timed("list_prefix", prefix,
                                lambda: [*self.store.list_prefix(prefix)], lambda _: 0))

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the immediate children below ``prefix``, recording a ``"list_dir"``.

        Parameters
        ----------
        prefix : str
            A node path (``""`` for the root).

        Returns
        -------
        Iterator[str]
            The names of keys and "directories" just below ``prefix``, sorted.
        """
        return iter(self._timed("list_dir", prefix, lambda: [*self.store.list_dir(prefix)],
                                lambda _: 0))


def _size(value: Any) -> int:
    return 0 if value is None else memoryview(value).nbytes


# -- the cache --------------------------------------------------------------------------

#: what a cached missing key costs in the cache's byte budget
_MISSING_COST = 64
_MISSING = object()


class CacheStore(WrapperStore):
    """A read-through cache of another store's values, at most ``max_bytes`` bytes.

    The least recently used entries are evicted first.  Whole values and byte ranges
    are cached (a range is served from a cached whole value too); so are missing keys
    (``cache_missing``), counted as 64 bytes each.  Writes and deletes made through the
    cache drop what it held of those keys.  Changes made around it (another process,
    another store object) are not seen until the entry is evicted or ``invalidate`` is
    called: use it for data that does not change while it is read.  Safe to use from
    many threads.  A read-only view (``with_read_only``) shares the cache.

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store to read through.
    max_bytes : int
        The most bytes the cache holds (0: nothing is cached).
    cache_missing : bool, default True
        Also remember keys that are missing.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``store`` is not a zarrfast ``Store``, or ``max_bytes`` is not an int >= 0.

    Examples
    --------
    >>> from zarrfast.storage import CacheStore
    >>> inner = zarrfast.MemoryStore()
    >>> inner.set("k", b"abc")
    >>> cache = CacheStore(inner, max_bytes=2**20)
    >>> cache.get("k"), cache.get("k")
    (b'abc', b'abc')
    >>> cache.hits, cache.misses
    (1, 1)

    A change made around the cache is seen once the entry is invalidated:

    >>> inner.set("k", b"new")
    >>> cache.get("k")
    b'abc'
    >>> cache.invalidate("k")
    >>> cache.get("k")
    b'new'

    An array read through the cache:

    >>> a = zarrfast.create_array(cache, shape=(4,), chunks=(2,), dtype="i4")
    >>> a[:] = np.arange(4)
    >>> a[:]
    array([0, 1, 2, 3], dtype=int32)
    """

    def __init__(self, store: Store, *, max_bytes: int, cache_missing: bool = True) -> None:
        super().__init__(store)
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
            raise ZarrfastError(f"CacheStore max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.cache_missing = bool(cache_missing)
        self._c = _CacheState()

    def _options(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes, "cache_missing": self.cache_missing}

    def __repr__(self) -> str:
        return f"CacheStore({self.store!r}, max_bytes={self.max_bytes})"

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._c.nbytes

    @property
    def hits(self) -> int:
        """How many reads the cache answered (``get``, ``get_many``, ``exists``...)."""
        return self._c.hits

    @property
    def misses(self) -> int:
        """How many ``get``, ``get_limited`` and ``get_many`` reads the cache missed."""
        return self._c.misses

    def cache_info(self) -> dict[str, int]:
        """Report the cache's counters and size.

        Returns
        -------
        dict[str, int]
            ``hits``, ``misses``, ``entries`` (values, ranges and missing keys held),
            ``nbytes`` (bytes held) and ``max_bytes``.

        Examples
        --------
        >>> from zarrfast.storage import CacheStore
        >>> cache = CacheStore(zarrfast.MemoryStore(), max_bytes=1000)
        >>> cache.set("k", b"abc")
        >>> cache.get("k"), cache.get("k")
        (b'abc', b'abc')
        >>> cache.cache_info()
        {'hits': 1, 'misses': 1, 'entries': 1, 'nbytes': 3, 'max_bytes': 1000}
        """
        with self._c.lock:
            return {"hits": self._c.hits, "misses": self._c.misses, "entries": len(self._c.entries),
                    "nbytes": self._c.nbytes, "max_bytes": self.max_bytes}

    # -- the entries (callers hold the lock) ------------------------------------------------
    def _lookup(self, key: str, byte_range: ByteRequest | None) -> Any:
        """The cached value (``_MISSING`` for a cached missing key), or ``None``."""
        entry = self._c.entries.get((key, byte_range))
        if entry is not None:
            self._c.entries.move_to_end((key, byte_range))
            return entry
        if byte_range is None:
            return None
        whole = self._c.entries.get((key, None))
        if whole is None:
            return None
        self._c.entries.move_to_end((key, None))
        if whole is _MISSING:
            return _MISSING
        start, stop = normalize_byte_range(byte_range, len(whole))
        return whole[start:stop]

    def _insert(self, key: str, byte_range: ByteRequest | None, value: Any, epoch: int) -> None:
        if epoch != self._c.epoch:
            return  # a write went through meanwhile: what was read may be stale
        if value is None:
            if not self.cache_missing:
                return
            value, cost = _MISSING, _MISSING_COST
        else:
            value = value if type(value) is bytes else memoryview(value).tobytes()
            cost = len(value)
        if cost > self.max_bytes:
            return
        ident = (key, byte_range)
        old = self._c.entries.pop(ident, None)
        if old is not None:
            self._c.nbytes -= _cost(old)
        self._c.entries[ident] = value
        self._c.by_key.setdefault(key, set()).add(byte_range)
        self._c.nbytes += cost
        while self._c.nbytes > self.max_bytes:
            (k, r), v = self._c.entries.popitem(last=False)
            self._c.nbytes -= _cost(v)
            ranges = self._c.by_key.get(k)
            if ranges is not None:
                ranges.discard(r)
                if not ranges:
                    del self._c.by_key[k]

    def _drop(self, key: str) -> None:
        for r in self._c.by_key.pop(key, ()):
            v = self._c.entries.pop((key, r), None)
            if v is not None:
                self._c.nbytes -= _cost(v)

    def invalidate(self, key: str | None = None) -> None:
        """Forget what the cache holds of ``key``, of the keys below a prefix, or everything.

        Parameters
        ----------
        key : str or None, default None
            A key; a prefix ending in ``/`` (every key below it; ``""``: every key); or
            ``None``: everything.
        """
        with self._c.lock:
            self._c.epoch += 1
            if key is None:
                self._c.entries.clear()
                self._c.by_key.clear()
                self._c.nbytes = 0
            elif key.endswith("/") or key == "":
                for k in [k for k in self._c.by_key if k.startswith(key)]:
                    self._drop(k)
            else:
                self._drop(key)

    # -- reads ------------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Return the value of ``key`` (or the requested bytes of it), from the cache if held.

        A miss reads the wrapped store and caches what it read (a missing key too, with
        ``cache_missing``), unless a write through the cache happened meanwhile.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        byte_range : ByteRequest or None, default None
            The bytes to read; ``None`` for the whole value.

        Returns
        -------
        bytes-like or None
            The value (or the range of it, clipped like a slice), ``None`` if missing.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If ``key`` is not a valid key.
        """
        validate_key(key)
        with self._c.lock:
            hit = self._lookup(key, byte_range)
            if hit is not None:
                self._c.hits += 1
                return None if hit is _MISSING else hit
            self._c.misses += 1
            epoch = self._c.epoch
        value = self.store.get(key, byte_range)
        with self._c.lock:
            self._insert(key, byte_range, value, epoch)
        return value

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Return the value of ``key``, refusing one larger than ``limit`` bytes; cached.

        A cached whole value no larger than ``limit`` is served from the cache; otherwise
        the wrapped store's ``get_limited`` reads it (and refuses an oversized one).

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int
            The largest size in bytes a valid value can have.

        Returns
        -------
        bytes-like or None
            The value, ``None`` if missing.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit`` bytes.
        """
        validate_key(key)
        with self._c.lock:
            hit = self._lookup(key, None)
            if hit is not None and (hit is _MISSING or len(hit) <= limit):
                self._c.hits += 1
                return None if hit is _MISSING else hit
            self._c.misses += 1
            epoch = self._c.epoch
        value = self.store.get_limited(key, limit)  # refuses an oversized value unread
        with self._c.lock:
            self._insert(key, None, value, epoch)
        return value

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
        """Return the values of many keys: those held from the cache, the rest in one batch.

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None] or None, default None
            One byte range (or ``None``) per key; ``None`` for whole values.

        Returns
        -------
        list[bytes-like or None]
            The values, in order; ``None`` for missing keys.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If a key is not valid.
        """
        keys, ranges = many_requests(keys, byte_ranges)
        for k in keys:
            validate_key(k)
        out: list[Any] = [None] * len(keys)
        todo: list[int] = []
        with self._c.lock:
            for i, (k, r) in enumerate(zip(keys, ranges, strict=True)):
                hit = self._lookup(k, r)
                if hit is None:
                    todo.append(i)
                else:
                    out[i] = None if hit is _MISSING else hit
            self._c.hits += len(keys) - len(todo)
            self._c.misses += len(todo)
            epoch = self._c.epoch
        if todo:
            values = self.store.get_many([keys[i] for i in todo],
                                         None if byte_ranges is None
                                         else [ranges[i] for i in todo])
            with self._c.lock:
                for i, v in zip(todo, values, strict=True):
                    out[i] = v
                    self._insert(keys[i], ranges[i], v, epoch)
        return out

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value: from a cached whole value or missing key, else the store.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        bool
            ``True`` if ``key`` holds a value.
        """
        validate_key(key)
        with self._c.lock:
            hit = self._lookup(key, None)
            if hit is not None:
                self._c.hits += 1
                return hit is not _MISSING
        return self.store.exists(key)

    def getsize(self, key: str) -> int:
        """Return the size of the value of ``key``: of a cached whole value, else the store's.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        int
            The size in bytes.

        Raises
        ------
        FileNotFoundError
            If ``key`` is missing.
        """
        validate_key(key)
        with self._c.lock:
            hit = self._lookup(key, None)
        if hit is not None and hit is not _MISSING:
            return len(hit)
        return self.store.getsize(key)

    # -- writes: drop what the cache held of the keys, after the write (a read that ran
    # during it is not stored: the epoch changed) ----------------------------------------
    def _forget(self, key: str) -> None:
        self.invalidate(key)

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` in the wrapped store, then drop what the cache held of it.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The value.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        validate_key(key)
        try:
            self.store.set(key, value)
        finally:
            self.invalidate(key)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values in the wrapped store, then drop what the cache held of those keys.

        Parameters
        ----------
        items : Mapping[str, bytes-like] or Iterable[tuple[str, bytes-like]]
            The keys and their values.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        try:
            self.store.set_many(pairs)
        finally:
            with self._c.lock:
                self._c.epoch += 1
                for k, _ in pairs:
                    self._drop(k)

    def delete(self, key: str) -> None:
        """Delete ``key`` from the wrapped store and from the cache.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        validate_key(key)
        try:
            self.store.delete(key)
        finally:
            self.invalidate(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many keys from the wrapped store and from the cache.

        Parameters
        ----------
        keys : Iterable[str]
            The keys.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        keys = list(keys)
        try:
            self.store.delete_many(keys)
        finally:
            with self._c.lock:
                self._c.epoch += 1
                for k in keys:
                    self._drop(k)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` from the wrapped store and from the cache.

        Parameters
        ----------
        prefix : str
            A node path; ``""`` means every key.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the wrapped store is read-only.
        """
        try:
            self.store.delete_dir(prefix)
        finally:
            p = prefix[:-1] if prefix.endswith("/") else prefix
            self.invalidate(p + "/" if p else None)
            if p:
                self.invalidate(p)


class _CacheState:
    """What a cache and its read-only (or writable) views share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: (key, byte_range or None) -> value (bytes) or _MISSING, least recently used first
        self.entries: OrderedDict[tuple[str, ByteRequest | None], Any] = OrderedDict()
        #: key -> its entries' byte ranges (None for the whole value)
        self.by_key: dict[str, set[ByteRequest | None]] = {}
        self.nbytes = 0
        #: changes on every write, delete or invalidation made through the cache: a read
        #: that started before one does not store what it read
        self.epoch = 0
        self.hits = 0
        self.misses = 0


def _cost(value: Any) -> int:
    return _MISSING_COST if value is _MISSING else len(value)
