"""A shard as a store: :class:`ShardView` serves one shard's inner chunks.

A stored shard (``sharding_indexed``) is a key-value store of its own: its keys are the
inner chunks' keys (``c/0/1``, the default key encoding of the inner grid), its values
the inner chunks' stored bytes.  :class:`ShardView` reads them through the shard's index
-- from the chain's index cache while the shard's version token is unchanged, else one
byte-range request -- and then one byte-range request per run of nearby inner chunks
(ranges at most ``gap`` bytes apart are one request), never the whole shard.  So the
code that reads a regular array's chunks reads a partial shard's inner chunks too; as
tensorstore's ``kvstore/zarr3_sharding_indexed`` does.

On stores whose reads say which version of a value they came from (``tagged_reads``:
an ``ETag`` with every response, object stores), the index is kept under its version's
tag and used without a request; every read of inner chunks is then checked to come
from that same version.  When one does not (another writer replaced the shard), the
index is read again and the inner chunks with it: an index never meets the bytes of
another version of its shard (``TAG_ATTEMPTS``).

It is read-only: a write to a shard rewrites the shard (a read-modify-write under the
shard's lock, :mod:`zarrfast.engine.rmw`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from zarrfast.codecs.shard_format import EMPTY
from zarrfast.errors import ChunkDecodeError, ConcurrentWriteError, InvalidKeyError, ReadOnlyError
from zarrfast.storage import (
    ByteRequest,
    MemoryStore,
    RangeByteRequest,
    Store,
    StoreCapabilities,
)
from zarrfast.storage.base import normalize_byte_range

__all__ = ["TAG_ATTEMPTS", "ShardView", "StoredRun"]

#: reads of a shard's inner chunks that found the shard replaced since its index was
#: read (each then reads the index again), before :class:`ConcurrentWriteError`
TAG_ATTEMPTS = 5


@dataclasses.dataclass(slots=True)
class StoredRun:
    """Inner chunks fetched in one request: ``blob`` holds inner chunk ``which[k]``'s
    stored bytes at ``offsets[k]``, ``sizes[k]`` long (``which``: positions in the
    list of inner chunks asked for)."""

    blob: Any
    which: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray


class ShardView(Store):
    """The inner chunks of the shard at ``key`` of ``store``, as a read-only store.

    ``chain``: the shard's :class:`~zarrfast.engine.sharded.ShardedChain` (its layout
    and index cache); ``gap``: ranges of inner chunks at most this many bytes apart
    are fetched in one request.  The shard must not be behind codecs after the shard
    (``chain.partial_reads``): then only the whole shard can be read."""

    def __init__(self, store: Store, key: str, chain: Any, *, gap: int = 0) -> None:
        if not chain.partial_reads:
            raise ValueError(f"shard {key!r}: codecs after the shard; read it whole")
        super().__init__(read_only=True)
        self.store, self.key, self.chain, self.gap = store, key, chain, int(gap)
        self.layout = chain.layout
        self._index: np.ndarray | None | bool = False  # False: not read yet
        #: the tag of the version the index was read from (``tagged_reads``), or None;
        #: whether the index was read by this view (not taken from the cache)
        self._tag: Any = None
        self._fresh = True
        self._tagged = store.tagged_reads
        #: an in-memory shard, opened once: its index and its inner chunks are read from
        #: the value as it was then, even if a writer replaces it meanwhile (separate
        #: gets could take the index from one value and the inner chunks from the next)
        # (MemoryStore.open_ranges gives a reader of the value as it is now; a subclass
        # with a get of its own, a reader through that get)
        self._snapshot = isinstance(store, MemoryStore)
        self._reader = store.open_ranges(key) if self._snapshot else None

    def __repr__(self) -> str:
        return f"ShardView({self.store!r}, {self.key!r})"

    def _capabilities(self) -> StoreCapabilities:
        outer = self.store.capabilities
        return StoreCapabilities(writes=False, deletes=False, listing=True, byte_ranges=True,
                                 batched_gets=outer.batched_gets)

    # -- the index ---------------------------------------------------------------------
    def index(self) -> np.ndarray | None:
        """The shard's index (``(n_inner, 2)`` offsets and sizes), read once per view
        (from the chain's cache while the shard is unchanged); ``None``: no shard."""
        if self._index is False:
            if self._tagged:
                self._index, self._tag, self._fresh = self.chain.tagged_index(self.store,
                                                                              self.key)
            elif not self._snapshot:
                self._index = self.chain.fetch_index(self.store, self.key)
            elif self._reader is None:  # (opened: no such value)
                self._index = None
            else:
                self._index = self.chain.reader_index(self._reader, self.key)
        return self._index  # type: ignore[return-value]

    def inner_index(self, key: str) -> int:
        """The position, in C order, of the inner chunk whose key is ``key``."""
        parts = key.split("/")
        cps = self.layout.cps
        if parts[0] != "c" or len(parts) != len(cps) + 1:
            raise InvalidKeyError(f"{key!r} is not an inner chunk key of shard {self.key!r} "
                                  f"(c/ and {len(cps)} grid coordinates)")
        try:
            coords = [int(p) for p in parts[1:]]
        except ValueError:
            raise InvalidKeyError(f"{key!r} is not an inner chunk key of shard "
                                  f"{self.key!r}") from None
        if any(not 0 <= c < n for c, n in zip(coords, cps, strict=True)):
            raise InvalidKeyError(f"inner chunk {key!r} lies outside shard {self.key!r} "
                                  f"({list(cps)} inner chunks)")
        return int(np.ravel_multi_index(coords, cps))

    # -- reads -------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        j = self.inner_index(key)
        for _ in range(TAG_ATTEMPTS):
            index = self.index()
            if index is None or index[j, 0] == EMPTY:
                return None
            start, size = int(index[j, 0]), int(index[j, 1])
            lo, hi = (0, size) if byte_range is None else normalize_byte_range(byte_range,
                                                                                size)
            request = RangeByteRequest(start + lo, start + hi)
            if self._tag is not None:
                blobs = self._read_tagged([request])
                if blobs is None:
                    continue  # (replaced: read again, index first)
                blob = blobs[0]
            else:
                blob = (self._reader.read(request) if self._reader is not None
                        else self.store.get(self.key, request))
            break
        else:
            raise self._changed()
        if blob is None or len(blob) < hi - lo:
            raise self._past_end(j, start, start + size, start + lo + (0 if blob is None
                                                                        else len(blob)))
        return bytes(blob)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None
                 ) -> list[bytes | None]:
        if byte_ranges is not None:
            return super().get_many(keys, byte_ranges)
        out: list[bytes | None] = [None] * len(keys)
        runs = self.fetch_stored(np.array([self.inner_index(k) for k in keys], dtype=np.int64))
        for run in runs:
            view = memoryview(run.blob)
            for k, off, n in zip(run.which.tolist(), run.offsets.tolist(), run.sizes.tolist(),
                                 strict=True):
                out[k] = bytes(view[off:off + n])
        return out

    def fetch_stored(self, inner: np.ndarray) -> list[StoredRun]:
        """The stored bytes of the inner chunks at positions ``inner`` (C order) that
        are stored, in as few byte-range requests as the gap allows (one ``get_many``
        call: concurrent on remote stores).  An entry pointing past the end of the
        shard raises :class:`~zarrfast.errors.ChunkDecodeError` naming it.  With tagged
        reads, bytes of another version than the index's are never used: the index is
        read again, and the inner chunks with it."""
        for _ in range(TAG_ATTEMPTS):
            runs = self._fetch_stored(inner)
            if runs is not None:
                return runs
        raise self._changed()

    def _read_tagged(self, requests: list[RangeByteRequest]) -> list[Any] | None:
        """The byte ranges ``requests`` of the shard, each checked to come from the
        version its index was read from; ``None`` (the cached index forgotten, the view's
        too) when one does not: the shard was replaced or removed.  A response that
        says no version (a range past the end of the value, a server that ignored the
        range) cannot be checked: the index is not kept, and, taken from the cache, is
        read again; read by this view just before, its ranges are used as they were
        before indexes were kept (the caller still checks their lengths)."""
        blobs, tags = self.store.get_many_tagged([self.key] * len(requests), requests)
        if all(b is not None for b in blobs):
            if all(t == self._tag for t in tags):
                return blobs
            if all(t is None or t == self._tag for t in tags):  # (unchecked: see above)
                self.chain.forget_index(self.key)
                if self._fresh:
                    return blobs
        self.chain.forget_index(self.key)
        self._index, self._tag, self._fresh = False, None, True
        return None

    def _changed(self) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"shard {self.key!r} of {self.store!r}: replaced by another writer during each "
            f"of {TAG_ATTEMPTS} attempts to read its inner chunks with its index; nothing "
            f"was read")

    def _fetch_stored(self, inner: np.ndarray) -> list[StoredRun] | None:
        """One attempt of :meth:`fetch_stored`; ``None``: the shard changed."""
        index = self.index()
        if index is None or not len(inner):
            return []
        entries = index[inner]
        used = np.flatnonzero(entries[:, 0] != EMPTY)
        if not used.size:
            return []
        starts = entries[used, 0].astype(np.int64)
        ends = starts + entries[used, 1].astype(np.int64)
        # coalesce ranges (sorted by offset) whose gap is at most `gap` bytes
        order = np.argsort(starts, kind="stable")
        starts, ends, used = starts[order], ends[order], used[order]
        reach = np.maximum.accumulate(ends)
        breaks = np.flatnonzero(starts[1:] - reach[:-1] > self.gap) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks, [len(starts)])) - 1
        req_start, req_end = starts[first], reach[last]
        requests = [RangeByteRequest(int(b), int(e))
                    for b, e in zip(req_start, req_end, strict=True)]
        reader = self._reader
        if self._tag is not None:
            tagged = self._read_tagged(requests)
            if tagged is None:
                return None
            blobs: list[Any] = tagged
        else:
            blobs = ([reader.read(r) for r in requests] if reader is not None
                     else self.store.get_many([self.key] * len(first), requests))
        runs = []
        for q, blob in enumerate(blobs):
            base = int(req_start[q])
            got = 0 if blob is None else len(blob)
            ks = slice(int(first[q]), int(last[q]) + 1)
            short = np.flatnonzero(ends[ks] - base > got)
            if short.size:
                k = int(first[q]) + int(short[0])
                raise self._past_end(int(inner[used[k]]), int(starts[k]), int(ends[k]),
                                     base + got)
            runs.append(StoredRun(blob, used[ks], starts[ks] - base, ends[ks] - starts[ks]))
        return runs

    def _past_end(self, j: int, start: int, end: int, readable: int) -> ChunkDecodeError:
        return ChunkDecodeError(
            f"shard {self.key!r}: inner chunk {self.layout.inner_name(j)} points past the "
            f"end of the shard (bytes {start}..{end}, only {readable} readable)")

    # -- listing -----------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        index = self.index()
        if index is None:
            return iter(())
        stored = np.flatnonzero(index[:, 0] != EMPTY)
        coords = np.unravel_index(stored, self.layout.cps)
        return iter(sorted("c/" + "/".join(str(int(c[i])) for c in coords)
                           for i in range(stored.size)))

    # -- writes: refused ---------------------------------------------------------------
    def set(self, key: str, value: Any) -> None:
        raise ReadOnlyError(f"{self!r} is read-only: a write to shard {self.key!r} "
                            f"rewrites the shard")

    def delete(self, key: str) -> None:
        raise ReadOnlyError(f"{self!r} is read-only: a write to shard {self.key!r} "
                            f"rewrites the shard")
