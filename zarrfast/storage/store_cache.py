"""A cache kept in another store: zarr-python's experimental dual-store ``CacheStore``.

``StoreBackedCache(store, cache_store=MemoryStore())`` serves whole values from
``cache_store`` when it has them and reads ``store`` (then copies into the cache)
when it does not.  Byte-range reads are cached in memory only, so a partial read
never writes a fragment into a persistent cache.  Entries expire after
``max_age_seconds`` and, when ``max_size`` bytes are held, the least recently used
are evicted (deleted from ``cache_store``).  Values already in a persistent
``cache_store`` when the cache is made are served (with an unbounded age) and
counted once they are read.

It is the class behind ``zarrfast.experimental.cache_store.CacheStore``, under the
name and with the arguments of zarr-python's.  :class:`~zarrfast.storage.CacheStore`
is zarrfast's own in-memory read cache.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import ByteRequest, Store, many_requests, validate_key
from zarrfast.storage.wrappers import WrapperStore

__all__ = ["StoreBackedCache"]

#: an entry: a key (its whole value, in cache_store) or (key, range) (in memory)
_Entry = str | tuple[str, ByteRequest]


class _State:
    """What a cache and its read-only views share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: OrderedDict[_Entry, int] = OrderedDict()  # entry -> size, LRU first
        self.inserted: dict[_Entry, float] = {}  # entry -> time.monotonic() it was stored
        self.ranges: dict[str, dict[ByteRequest, bytes]] = {}
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        #: key -> a count bumped when a write or delete of it starts and when it ends, and
        #: the writes in progress: a read fills the cache only with what it read while no
        #: write of the key started, ran or ended (else a value read before a write could
        #: be stored in the cache after the write's)
        self.version: dict[str, int] = {}
        self.writing: dict[str, int] = {}


class StoreBackedCache(WrapperStore):
    """Whole values of ``store`` cached in ``cache_store``; see the module's text."""

    def __init__(self, store: Store, *, cache_store: Store,
                 max_age_seconds: float | str = "infinity", max_size: int | None = None,
                 cache_set_data: bool = True) -> None:
        super().__init__(store)
        if not isinstance(cache_store, Store):
            raise ZarrfastError(f"CacheStore's cache_store must be a zarrfast Store, got "
                                f"{type(cache_store).__name__} {cache_store!r}")
        if not cache_store.supports_deletes or cache_store.read_only:
            raise ValueError(f"CacheStore's cache_store {cache_store!r} must allow writes and "
                             f"deletes: evicting an entry deletes it there")
        if isinstance(max_age_seconds, str):
            if max_age_seconds != "infinity":
                raise ValueError(f"max_age_seconds must be a number of seconds or 'infinity', "
                                 f"got {max_age_seconds!r}")
        elif (isinstance(max_age_seconds, bool) or not isinstance(max_age_seconds, int | float)
              or max_age_seconds < 0):
            raise ValueError(f"max_age_seconds must be a number of seconds >= 0 or 'infinity', "
                             f"got {max_age_seconds!r}")
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                     or max_size < 0):
            raise ValueError(f"max_size must be a number of bytes >= 0 or None, got {max_size!r}")
        self._cache = cache_store
        self.max_age_seconds = max_age_seconds
        self.max_size = max_size
        self.cache_set_data = bool(cache_set_data)
        self._state = _State()

    @property
    def cache_store(self) -> Store:
        return self._cache

    def _options(self) -> dict[str, Any]:
        return {"cache_store": self._cache, "max_age_seconds": self.max_age_seconds,
                "max_size": self.max_size, "cache_set_data": self.cache_set_data}

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.store == self.store  # type: ignore[attr-defined]
                and other._cache == self._cache)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.store))

    def __repr__(self) -> str:
        return (f"CacheStore(store={self.store!r}, cache_store={self._cache!r}, "
                f"max_age_seconds={self.max_age_seconds}, max_size={self.max_size}, "
                f"current_size={self._state.size}, cached_keys={len(self._state.order)})")

    # -- bookkeeping (callers hold the lock) --------------------------------------------
    def _fresh(self, entry: _Entry) -> bool:
        if isinstance(self.max_age_seconds, str):  # ("infinity": __init__ checked)
            return True
        inserted = self._state.inserted.get(entry)
        # a value found in a persistent cache_store without a record has an unknown age
        return inserted is not None and time.monotonic() - inserted < self.max_age_seconds

    def _untrack(self, entry: _Entry) -> None:
        st = self._state
        st.size -= st.order.pop(entry, 0)
        st.inserted.pop(entry, None)
        if not isinstance(entry, str):
            per_key = st.ranges.get(entry[0])
            if per_key is not None:
                per_key.pop(entry[1], None)
                if not per_key:
                    del st.ranges[entry[0]]

    def _track(self, entry: _Entry, size: int) -> list[str]:
        """Record ``entry``; the whole-value keys evicted to make room (to delete from
        cache_store once the lock is released)."""
        st = self._state
        if entry in st.order:
            self._untrack(entry)
        evicted: list[str] = []
        if self.max_size is not None:
            while st.order and st.size + size > self.max_size:
                old = next(iter(st.order))
                self._untrack(old)
                st.evictions += 1
                if isinstance(old, str):
                    evicted.append(old)
        st.order[entry] = size
        st.inserted[entry] = time.monotonic()
        st.size += size
        return evicted

    def _fits(self, size: int) -> bool:
        return self.max_size is None or size <= self.max_size

    def _forget_ranges(self, key: str) -> None:
        for r in list(self._state.ranges.get(key, ())):
            self._untrack((key, r))

    # -- reads --------------------------------------------------------------------------
    def _hit_whole(self, key: str) -> bytes | None:
        """``key``'s whole value from cache_store, if it holds a fresh one."""
        with self._state.lock:
            known = key in self._state.order
            if known and not self._fresh(key):
                return None
        if not known and self.max_age_seconds != "infinity":
            return None  # found without a record, its age is unknown: a finite age refuses it
        value = self._cache.get(key)
        evicted: list[str] = []
        with self._state.lock:
            if value is None:
                self._untrack(key)  # deleted from cache_store behind our back
                return None
            self._state.hits += 1
            if key in self._state.order:
                self._state.order.move_to_end(key)
            elif self._fits(len(value)):  # from a persistent cache made before: count it now
                evicted = self._track(key, len(value))
        if evicted:
            self._cache.delete_many(evicted)
        return value

    def _read_version(self, key: str) -> int | None:
        """The version of ``key`` a read starts from; ``None`` while a write of it runs
        (what the read finds then is not cached)."""
        with self._state.lock:
            return None if self._state.writing.get(key) else self._state.version.get(key, 0)

    def _fill(self, key: str, value: bytes | None, version: int | None) -> None:
        """Cache what a read found in the source, unless a write of ``key`` started since
        the read did (``version``): the value in the cache is then dropped, and the next
        read takes the source's."""
        if version is None:
            return
        self._store_whole(key, value)
        with self._state.lock:
            if self._state.version.get(key, 0) == version:
                return
            self._untrack(key)
        self._cache.delete(key)

    @contextlib.contextmanager
    def _writing(self, keys: list[str]) -> Iterator[None]:
        """Mark a write or delete of ``keys`` while it runs; a key another writer wrote
        meanwhile is dropped from the cache at the end (either's value may be there)."""
        st = self._state
        with st.lock:
            start = []
            for k in keys:
                start.append(st.version.get(k, 0) + 1)
                st.version[k] = start[-1]
                st.writing[k] = st.writing.get(k, 0) + 1
        try:
            yield
        finally:
            raced = []
            with st.lock:
                for k, v in zip(keys, start, strict=True):
                    if st.version.get(k) != v:
                        raced.append(k)
                        self._untrack(k)
                    st.version[k] = st.version.get(k, 0) + 1
                    n = st.writing.get(k, 0) - 1
                    if n > 0:
                        st.writing[k] = n
                    else:
                        st.writing.pop(k, None)
            if raced:
                self._cache.delete_many(raced)

    def _store_whole(self, key: str, value: bytes | None) -> None:
        if value is None or not self._fits(len(value)):
            with self._state.lock:
                known = key in self._state.order
                self._untrack(key)
            if known or value is None:
                self._cache.delete(key)
            return
        self._cache.set(key, value)
        with self._state.lock:
            evicted = self._track(key, len(value))
        if evicted:
            self._cache.delete_many(evicted)

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        validate_key(key)
        if byte_range is None:
            value = self._hit_whole(key)
            if value is not None:
                return value
            with self._state.lock:
                self._state.misses += 1
            version = self._read_version(key)
            value = self.store.get(key)
            self._fill(key, value, version)
            return value
        entry = (key, byte_range)
        with self._state.lock:
            cached = self._state.ranges.get(key, {}).get(byte_range)
            if cached is not None and self._fresh(entry):
                self._state.hits += 1
                self._state.order.move_to_end(entry)
                return cached
            self._state.misses += 1
        value = self.store.get(key, byte_range)
        with self._state.lock:
            if value is None:
                self._untrack(entry)
            elif self._fits(len(value)):
                value = bytes(value)
                evicted = self._track(entry, len(value))
                self._state.ranges.setdefault(key, {})[byte_range] = value
            else:
                evicted = []
        if value is not None and evicted:
            self._cache.delete_many(evicted)
        return value

    def get_limited(self, key: str, limit: int) -> bytes | None:
        value = self._hit_whole(key)
        if value is not None and len(value) <= limit:
            return value
        version = self._read_version(key)
        value = self.store.get_limited(key, limit)
        self._fill(key, value, version)
        return value

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None) -> list[bytes | None]:
        keys, ranges = many_requests(keys, byte_ranges)
        out: list[bytes | None] = [None] * len(keys)
        whole = [i for i, r in enumerate(ranges) if r is None]
        todo: list[int] = []
        for i in whole:
            out[i] = self._hit_whole(keys[i])
            if out[i] is None:
                todo.append(i)
        for i, r in enumerate(ranges):
            if r is not None:
                out[i] = self.get(keys[i], r)
        if todo:
            with self._state.lock:
                self._state.misses += len(todo)
            versions = [self._read_version(keys[i]) for i in todo]
            values = self.store.get_many([keys[i] for i in todo])  # one batch for the misses
            for i, value, version in zip(todo, values, versions, strict=True):
                out[i] = value
                self._fill(keys[i], value, version)
        return out

    # -- writes and deletes: the source first, then the cache ---------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        validate_key(key)
        with self._writing([key]):
            self.store.set(key, value)
            with self._state.lock:
                self._forget_ranges(key)
            if self.cache_set_data:
                self._store_whole(key, bytes(value))
            else:
                self._drop_whole([key])

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        with self._writing([k for k, _ in pairs]):
            self.store.set_many(pairs)
            with self._state.lock:
                for k, _ in pairs:
                    self._forget_ranges(k)
            if self.cache_set_data:
                for k, v in pairs:
                    self._store_whole(k, bytes(v))
            else:
                self._drop_whole([k for k, _ in pairs])

    def _forget(self, key: str) -> None:
        self._drop_whole([key])

    def _drop_whole(self, keys: list[str]) -> None:
        with self._state.lock:
            for k in keys:
                self._forget_ranges(k)
                self._untrack(k)
        self._cache.delete_many(keys)

    def delete(self, key: str) -> None:
        validate_key(key)
        with self._writing([key]):
            self.store.delete(key)
            self._drop_whole([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        with self._writing(keys):
            self.store.delete_many(keys)
            self._drop_whole(keys)

    def delete_dir(self, prefix: str) -> None:
        self.store.delete_dir(prefix)
        p = prefix.rstrip("/")
        with self._state.lock:
            held = {e if isinstance(e, str) else e[0] for e in self._state.order}
        self._drop_whole([k for k in held if not p or k.startswith(p + "/")])
        self._cache.delete_dir(prefix)

    # -- the cache itself ---------------------------------------------------------------
    def cache_info(self) -> dict[str, Any]:
        st = self._state
        with st.lock:
            return {"cache_store_type": type(self._cache).__name__,
                    "max_age_seconds": self.max_age_seconds, "max_size": self.max_size,
                    "current_size": st.size, "cache_set_data": self.cache_set_data,
                    "tracked_keys": len(st.inserted), "cached_keys": len(st.order)}

    def cache_stats(self) -> dict[str, Any]:
        st = self._state
        with st.lock:
            total = st.hits + st.misses
            return {"hits": st.hits, "misses": st.misses, "evictions": st.evictions,
                    "total_requests": total, "hit_rate": st.hits / total if total else 0.0}

    def clear_cache_now(self) -> None:
        """Empty ``cache_store`` and forget every entry."""
        self._cache.clear()
        st = self._state
        with st.lock:
            st.order.clear()
            st.inserted.clear()
            st.ranges.clear()
            st.size = 0

    async def clear_cache(self) -> None:
        """:meth:`clear_cache_now` as a coroutine, as zarr-python has it."""
        self.clear_cache_now()
