"""The dual-store cache (zarr-python's experimental ``CacheStore``) never serves a value
older than the source's once a write has returned: a read that missed the cache and read
the source before a write must not put its old value in the cache after the write's."""

from __future__ import annotations

import threading
from typing import Any

from zarrfast.experimental.cache_store import CacheStore
from zarrfast.storage import MemoryStore


class HeldSource(MemoryStore):
    """A source whose ``get`` of ``held`` reads the value, then waits for ``go`` before it
    returns it (a slow read overtaken by a write)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: str | None = None
        self.reading = threading.Event()
        self.go = threading.Event()

    def get(self, key: str, byte_range: Any = None) -> bytes | None:
        value = super().get(key, byte_range)
        if key == self.held:
            self.reading.set()
            assert self.go.wait(60)
        return value

    def get_many(self, keys: Any, byte_ranges: Any = None) -> list[bytes | None]:
        return [self.get(k, r) for k, r in zip(keys, byte_ranges or [None] * len(keys),
                                               strict=True)]


def _overtaken(read: Any, write: Any) -> tuple[CacheStore, bytes | None]:
    source = HeldSource()
    cache = CacheStore(source, cache_store=MemoryStore())
    cache.set("k", b"old")
    cache._cache.delete("k")  # (not cached: the next read misses and reads the source)
    cache._state.order.pop("k", None)
    source.held = "k"
    reader = threading.Thread(target=read, args=(cache,))
    reader.start()
    assert source.reading.wait(60)  # the read has the old value and waits
    source.held = None
    write(cache)  # the write overtakes it, and returns
    source.go.set()
    reader.join(60)
    return cache, cache.get("k")


def test_a_read_overtaken_by_a_write_does_not_cache_the_old_value() -> None:
    for read in (lambda c: c.get("k"), lambda c: c.get_many(["k"]),
                 lambda c: c.get_limited("k", 100)):
        cache, got = _overtaken(read, lambda c: c.set("k", b"new"))
        assert got == b"new"
        assert cache._cache.get("k") in (None, b"new")


def test_a_read_overtaken_by_a_delete_does_not_cache_the_old_value() -> None:
    cache, got = _overtaken(lambda c: c.get("k"), lambda c: c.delete("k"))
    assert got is None
    assert cache._cache.get("k") is None
