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
from collections import OrderedDict, deque
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
    """A store that forwards every call to ``store``.  Subclasses change some of them.

    Reads go through :meth:`get`/:meth:`get_many` (never straight to the wrapped
    store's files), so that a subclass sees every read."""

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
        return self.store.supports_writes

    @property
    def supports_deletes(self) -> bool:  # type: ignore[override]
        return self.store.supports_deletes

    @property
    def supports_partial_reads(self) -> bool:  # type: ignore[override]
        return self.store.supports_partial_reads

    @property
    def supports_listing(self) -> bool:  # type: ignore[override]
        return self.store.supports_listing

    @property
    def batched_reads(self) -> bool:  # type: ignore[override]
        return self.store.batched_reads

    @property
    def fast_set_many(self) -> bool:  # type: ignore[override]
        return self.store.fast_set_many

    @property
    def interprocess_locks(self) -> bool:  # type: ignore[override]
        return self.store.interprocess_locks

    @property
    def conditional_writes(self) -> bool:  # type: ignore[override]
        return self.store.conditional_writes

    @property
    def read_only(self) -> bool:
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
        with self.store.node_lock(path, interprocess=interprocess, timeout=timeout):
            yield

    @contextlib.contextmanager
    def value_lock(self, key: str, *, timeout: float | None = None,
                   interprocess: bool | None = None) -> Iterator[None]:
        """The wrapped store's lock, and what this wrapper held of ``key`` (a cache's
        entry) dropped once it is held: the read-modify-write under it reads the stored
        value (another process may have changed it since it was cached)."""
        with self.store.value_lock(key, timeout=timeout, interprocess=interprocess):
            self._forget(key)
            yield

    def _forget(self, key: str) -> None:  # noqa: B027 - a hook for caches
        """Drop what this wrapper holds of ``key`` (nothing, but in a cache)."""

    @contextlib.contextmanager
    def creation_lock(self) -> Iterator[None]:
        with self.store.creation_lock():
            yield

    def get_versioned(self, key: str, *, limit: int | None = None
                      ) -> tuple[Any, Hashable | None]:
        return self.store.get_versioned(key, limit=limit)  # (never a cache's: the stored)

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
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
        """The wrapped store's view with another read-only flag, wrapped: the log or the
        cache is shared with this wrapper."""
        return self._rewrap(self.store.with_read_only(read_only))

    # reads
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self.store.get(key, byte_range)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        return self.store.get_limited(key, limit)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
        return self.store.get_many(keys, byte_ranges)

    def exists(self, key: str) -> bool:
        return self.store.exists(key)

    def version(self, key: str) -> Hashable | None:
        return self.store.version(key)

    def getsize(self, key: str) -> int:
        return self.store.getsize(key)

    # writes
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self.store.set(key, value)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        self.store.set_many(items)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        self.store.delete_many(keys)

    def delete_dir(self, prefix: str) -> None:
        self.store.delete_dir(prefix)

    # listing
    def list(self) -> Iterator[str]:
        return self.store.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> Iterator[str]:
        return self.store.list_dir(prefix)

    def close(self) -> None:
        self.store.close()


def _rebuild(cls: type, store: Store, options: dict[str, Any]) -> WrapperStore:
    return cls(store, **options)


# -- the log ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Operation:
    """One call on a store: what, which key(s), how many bytes moved, how long it took."""

    op: str
    key: str
    nbytes: int
    seconds: float
    byte_range: ByteRequest | None = None
    error: str | None = None


class LoggingStore(WrapperStore):
    """Records every operation on ``store``: its name, key, bytes read or written,
    duration and error, in :attr:`operations` (the last ``max_records``) and as
    ``DEBUG`` records of the ``zarrfast.storage`` logger.  A batched call
    (``get_many``, ``set_many``, ``delete_many``) is one record per key, each with the
    duration of the whole batch, plus the batch itself (``"get_many"``, key = the
    number of keys).  Thread-safe."""

    def __init__(self, store: Store, *, max_records: int | None = 100_000,
                 log_level: int = logging.DEBUG) -> None:
        super().__init__(store)
        self.operations: deque[Operation] = deque(maxlen=max_records)
        self.log_level = log_level
        self._max_records = max_records

    def _options(self) -> dict[str, Any]:
        return {"max_records": self._max_records, "log_level": self.log_level}

    def _record(self, op: str, key: str, nbytes: int, seconds: float,
                byte_range: ByteRequest | None = None, error: str | None = None) -> None:
        self.operations.append(Operation(op, key, nbytes, seconds, byte_range, error))
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
        """Forget the recorded operations.  (``clear()``, as on every store, deletes
        every key.)"""
        self.operations.clear()

    def counts(self) -> dict[str, int]:
        """How many operations of each kind were recorded (batches not counted)."""
        out: dict[str, int] = {}
        for o in list(self.operations):
            if not o.op.endswith("_many"):
                out[o.op] = out.get(o.op, 0) + 1
        return out

    def summary(self) -> str:
        """One line per kind of operation: calls, bytes, seconds."""
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
        return self._timed("get", key, lambda: self.store.get(key, byte_range), _size,
                           byte_range)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        return self._timed("get", key, lambda: self.store.get_limited(key, limit), _size)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
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
        return self._timed("exists", key, lambda: self.store.exists(key), lambda _: 0)

    def getsize(self, key: str) -> int:
        return self._timed("getsize", key, lambda: self.store.getsize(key), lambda _: 0)

    # -- writes ---------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        n = memoryview(value).nbytes
        self._timed("set", key, lambda: self.store.set(key, value), lambda _: n)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        sizes = [memoryview(v).nbytes for _, v in pairs]
        self._timed("set_many", str(len(pairs)), lambda: self.store.set_many(pairs),
                    lambda _: sum(sizes))
        seconds = self.operations[-1].seconds if self.operations else 0.0
        for (k, _), n in zip(pairs, sizes, strict=True):
            self._record("set", k, n, seconds)

    def delete(self, key: str) -> None:
        self._timed("delete", key, lambda: self.store.delete(key), lambda _: 0)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._timed("delete_many", str(len(keys)), lambda: self.store.delete_many(keys),
                    lambda _: 0)
        for k in keys:
            self._record("delete", k, 0, 0.0)

    def delete_dir(self, prefix: str) -> None:
        self._timed("delete_dir", prefix, lambda: self.store.delete_dir(prefix), lambda _: 0)

    # -- listing --------------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        return iter(self._timed("list", "", lambda: [*self.store.list()], lambda _: 0))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return iter(self._timed("list_prefix", prefix,
                                lambda: [*self.store.list_prefix(prefix)], lambda _: 0))

    def list_dir(self, prefix: str) -> Iterator[str]:
        return iter(self._timed("list_dir", prefix, lambda: [*self.store.list_dir(prefix)],
                                lambda _: 0))


def _size(value: Any) -> int:
    return 0 if value is None else memoryview(value).nbytes


# -- the cache --------------------------------------------------------------------------

#: what a cached missing key costs in the cache's byte budget
_MISSING_COST = 64
_MISSING = object()


class CacheStore(WrapperStore):
    """A read-through cache of ``store``'s values, least recently used first out, that
    holds at most ``max_bytes`` bytes.  Whole values and byte ranges are cached (a
    range is served from a cached whole value too); so are missing keys
    (``cache_missing``), counted as 64 bytes each.  Writes and deletes made through
    the cache drop what it held of those keys.  Changes made around it (another
    process, another store object) are not seen until the entry is evicted or
    :meth:`invalidate` is called: use it for data that does not change while it is
    read, or call :meth:`invalidate`.  Safe to use from many threads."""

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
        return self._c.hits

    @property
    def misses(self) -> int:
        return self._c.misses

    def cache_info(self) -> dict[str, int]:
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
        """Forget ``key`` (a key, or a prefix ending in ``/``), or everything."""
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
        validate_key(key)
        with self._c.lock:
            hit = self._lookup(key, None)
            if hit is not None:
                self._c.hits += 1
                return hit is not _MISSING
        return self.store.exists(key)

    def getsize(self, key: str) -> int:
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
        validate_key(key)
        try:
            self.store.set(key, value)
        finally:
            self.invalidate(key)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        try:
            self.store.set_many(pairs)
        finally:
            with self._c.lock:
                self._c.epoch += 1
                for k, _ in pairs:
                    self._drop(k)

    def delete(self, key: str) -> None:
        validate_key(key)
        try:
            self.store.delete(key)
        finally:
            self.invalidate(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        try:
            self.store.delete_many(keys)
        finally:
            with self._c.lock:
                self._c.epoch += 1
                for k in keys:
                    self._drop(k)

    def delete_dir(self, prefix: str) -> None:
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
