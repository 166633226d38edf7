"""The store interface.

A store maps string keys (``"a/b/zarr.json"``, ``"a/b/c/0/1"``) to bytes.  The
interface is synchronous; stores that can serve many keys at once (the local
store with threads, remote stores with concurrent requests) override
:meth:`Store.get_many` and :meth:`Store.set_many`.

Contract (checked by :class:`zarrfast.testing.StoreTests`):

* ``get(key)`` returns the value as ``bytes`` (or another read-only
  bytes-like object) or ``None`` when the key is missing; it never raises for
  a missing key.
* ``get(key, byte_range)`` returns only the requested bytes.  A range that
  reaches past the end is clipped, as for Python slices.
* Keys are ``/``-separated, relative, with no empty, ``.`` or ``..`` segments,
  no backslashes and no NUL characters.  Anything else raises
  :class:`~zarrfast.errors.InvalidKeyError`: no key can leave the store.
* Writes on a read-only store raise :class:`~zarrfast.errors.ReadOnlyError`
  and change nothing.
* ``list*`` methods return keys in sorted order.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.errors import InvalidKeyError, LockTimeoutError, ReadOnlyError, ZarrfastError
from zarrfast.storage import locks as _locks

__all__ = [
    "ByteRequest",
    "OffsetByteRequest",
    "RangeByteRequest",
    "RangeReader",
    "Store",
    "StoreCapabilities",
    "SuffixByteRequest",
    "as_bytes",
    "check_byte_range",
    "many_requests",
    "normalize_byte_range",
    "validate_key",
    "validate_keys",
]


class Listing:
    """The keys a store lists: an iterator (``for k in store.list()``, ``sorted(...)``)
    that is also an asynchronous one, for code written for zarr-python's stores
    (``async for k in store.list_prefix("")``).  The keys are there already: nothing
    waits."""

    __slots__ = ("_keys",)

    def __init__(self, keys: Iterable[str]) -> None:
        self._keys = iter(keys)

    def __iter__(self) -> Listing:
        return self

    def __next__(self) -> str:
        return next(self._keys)

    def __aiter__(self) -> Listing:
        return self

    async def __anext__(self) -> str:
        try:
            return next(self._keys)
        except StopIteration:
            raise StopAsyncIteration from None


def _giving_listing(method: Any) -> Any:
    """``method`` (a store's ``list``, ``list_prefix`` or ``list_dir``) returning a Listing."""
    import functools

    @functools.wraps(method)
    def listing(self: Any, *args: Any, **kwargs: Any) -> Listing:
        return Listing(method(self, *args, **kwargs))

    listing._gives_listing = True  # type: ignore[attr-defined]
    return listing


@dataclass(frozen=True, slots=True)
class RangeByteRequest:
    """Bytes ``[start, end)`` of a value."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (isinstance(self.start, int) and isinstance(self.end, int)):
            raise ZarrfastError(f"byte range bounds must be integers, got {self!r}")
        if self.start < 0 or self.end < self.start:
            raise ZarrfastError(f"invalid byte range {self!r}: need 0 <= start <= end")


@dataclass(frozen=True, slots=True)
class OffsetByteRequest:
    """All bytes from ``offset`` to the end of a value."""

    offset: int

    def __post_init__(self) -> None:
        if not isinstance(self.offset, int) or self.offset < 0:
            raise ZarrfastError(f"invalid byte range {self!r}: offset must be an integer >= 0")


@dataclass(frozen=True, slots=True)
class SuffixByteRequest:
    """The last ``suffix`` bytes of a value."""

    suffix: int

    def __post_init__(self) -> None:
        if not isinstance(self.suffix, int) or self.suffix < 0:
            raise ZarrfastError(f"invalid byte range {self!r}: suffix must be an integer >= 0")


ByteRequest = RangeByteRequest | OffsetByteRequest | SuffixByteRequest


def normalize_byte_range(byte_range: ByteRequest, size: int) -> tuple[int, int]:
    """Resolve a byte request against a value of ``size`` bytes to ``(start, stop)``."""
    if isinstance(byte_range, RangeByteRequest):
        start, stop = byte_range.start, byte_range.end
    elif isinstance(byte_range, OffsetByteRequest):
        start, stop = byte_range.offset, size
    elif isinstance(byte_range, SuffixByteRequest):
        start, stop = max(size - byte_range.suffix, 0), size
    else:
        raise ZarrfastError(
            f"byte_range must be a RangeByteRequest, OffsetByteRequest or SuffixByteRequest, "
            f"got {byte_range!r}"
        )
    start = min(start, size)
    stop = min(max(stop, start), size)
    return start, stop


def validate_key(key: str) -> str:
    """Return ``key`` if it is a valid store key, else raise :class:`InvalidKeyError`."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"store key must be a str, got {type(key).__name__} {key!r}")
    if key == "":
        raise InvalidKeyError("store key must not be empty")
    if "\\" in key or "\x00" in key:
        raise InvalidKeyError(
            f"store key {key!r} contains a backslash or NUL character; keys use '/' separators"
        )
    if key.startswith("/"):
        raise InvalidKeyError(f"store key {key!r} is absolute; keys are relative to the store root")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidKeyError(
                f"store key {key!r} has an empty, '.' or '..' segment; such keys could leave "
                f"the store or alias other keys"
            )
    if len(key) >= 2 and key[1] == ":" and key[0].isalpha():
        raise InvalidKeyError(f"store key {key!r} looks like a drive-qualified path")
    return key


#: what, in keys joined by NUL, one of them might be refused for (a hit is looked at
#: key by key): a backslash, an empty segment or key, a leading '/', a segment
#: starting with '.', a colon (a drive)
_SUSPECT_IN_KEYS = ("\\", "//", "/\x00", "\x00/", "\x00\x00", "/.", "\x00.", ":")


def validate_keys(keys: Sequence[str]) -> list[bytes]:
    """Check every key as :func:`validate_key` does (raising its error for the first
    bad one) and return them file-system encoded (``os.fsencode``): for thousands of
    chunk keys at once, one pass over the joined keys instead of one per key."""
    keys = list(keys)
    try:
        joined = "\x00".join(keys)
    except TypeError:
        joined = None
    if (not joined or joined.count("\x00") != len(keys) - 1
            or joined.startswith(("/", ".", "\x00")) or joined.endswith(("/", "\x00"))
            or any(bad in joined for bad in _SUSPECT_IN_KEYS)):
        for k in keys:
            validate_key(k)
        return [os.fsencode(k) for k in keys]
    return os.fsencode(joined).split(b"\x00")


def check_byte_range(byte_range: ByteRequest | None) -> None:
    """Refuse anything but ``None`` or one of the three byte requests, naming it."""
    if byte_range is not None and not isinstance(
            byte_range, (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)):
        raise ZarrfastError(
            f"byte_range must be a RangeByteRequest, OffsetByteRequest or SuffixByteRequest, "
            f"got {byte_range!r}")


def as_bytes(value: Any) -> bytes:
    """An immutable copy of a buffer (``value`` itself if it is ``bytes``);
    ``TypeError`` for anything that is not a buffer (``str``, ``int``, ``None``,
    lists)."""
    if type(value) is bytes:
        return value
    return memoryview(value).tobytes()


def many_requests(keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None
                  ) -> tuple[list[str], list[ByteRequest | None]]:
    """The arguments of :meth:`Store.get_many` as two lists of one length (``None`` byte
    ranges: whole values); a length mismatch raises, naming both lengths."""
    keys = list(keys)
    if byte_ranges is None:
        return keys, [None] * len(keys)
    ranges = list(byte_ranges)
    if len(ranges) != len(keys):
        raise ZarrfastError(f"get_many: {len(keys)} keys but {len(ranges)} byte ranges")
    return keys, ranges


def validate_prefix(prefix: str) -> str:
    """Validate a listing prefix: ``""`` or a key, optionally ending in ``/``."""
    if prefix == "":
        return prefix
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def listing_prefix(prefix: str) -> bool:
    """Validate the prefix given to :meth:`Store.list_prefix`; ``False`` when no key can
    start with it: ``"/"`` (keys never start with a slash), which zarr-python's stores
    accept and list nothing for."""
    if prefix == "/":
        return False
    validate_prefix(prefix)
    return True



class RangeReader:
    """A value opened for reading byte ranges (:meth:`Store.open_ranges`): every read,
    and :attr:`version`, see the same value even if it is replaced meanwhile (where
    the store can promise it: the local store reads one open file).  This generic one
    reads through the store's ``get``; a read returns ``None`` (or 0) when the key is
    missing."""

    #: the value's size in bytes, where the reader knows it without asking the store
    #: again (the local store's open file); ``None`` otherwise
    size: int | None = None

    def __init__(self, store: Store, key: str) -> None:
        self.store = store
        self.key = key
        #: the store's :meth:`Store.version` of the value when opened
        self.version: Hashable | None = store.version(key)

    def read(self, byte_range: ByteRequest) -> bytes | None:
        """The bytes of ``byte_range`` (clipped at the end), ``None`` when missing."""
        return self.store.get(self.key, byte_range)

    def read_into(self, out: Any, start: int) -> int:
        """Read bytes ``start:start + len(out)`` into ``out`` (a writable byte buffer);
        returns how many there were (fewer at the end of the value, 0 when missing)."""
        view = memoryview(out).cast("B")
        data = self.store.get(self.key, RangeByteRequest(start, start + len(view)))
        if data is None:
            return 0
        n = len(data)
        if n:
            view[:n] = data
        return n

    def fileno(self) -> int | None:
        """The open file the reader reads, for kernels that read ranges of it
        themselves (with ``pread``, while the reader stays open); ``None`` when the
        value is not one open file."""
        return None

    def close(self) -> None:
        """Release what the reader holds (an open file)."""

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: the attributes a store's capabilities are computed from: setting one on a store object
#: has them computed again
_CAPABILITY_FLAGS = frozenset({
    "supports_writes", "supports_deletes", "supports_partial_reads", "supports_listing",
    "batched_reads", "fast_get_into", "fast_set_many", "fast_set_regions", "copies_values",
    "interprocess_locks", "conditional_writes", "fsync", "_fast_get_into", "_dir_fd"})


@dataclass(frozen=True, slots=True)
class StoreCapabilities:
    """What a store can do, computed once per store (:attr:`Store.capabilities`): the
    only thing the engine asks a store about before choosing how to read or write.

    Each store says it in one place (:meth:`Store._capabilities`); by default from the
    class flags below (``supports_partial_reads``, ``batched_reads`` ...), which stay
    for stores written against them.  Modelled on zarrs' storage traits
    (``ReadableStorageTraits``, ``supports_get_partial``)."""

    #: :meth:`Store.set` / :meth:`Store.delete` are implemented
    writes: bool = True
    #: :meth:`Store.delete` is implemented
    deletes: bool = True
    #: :meth:`Store.list` and friends are implemented
    listing: bool = True
    #: byte ranges are served without reading the whole value
    byte_ranges: bool = True
    #: many values are fetched at once with :meth:`Store.get_many` (remote stores:
    #: one batch of concurrent requests instead of a round trip per chunk task)
    batched_gets: bool = False
    #: :meth:`Store.get_into` reads straight into the caller's buffer (no copy)
    reads_into: bool = False
    #: kernels may read the values themselves: they are plain files
    #: (:meth:`Store.file_paths`, :meth:`Store.read_many_into`, :meth:`Store.open_ranges`)
    files: bool = False
    #: :meth:`Store.set_many` writes many values faster than :meth:`Store.set` one by one
    batched_sets: bool = False
    #: :meth:`Store.set_regions` writes regions of an array from where they lie
    region_sets: bool = False
    #: :meth:`Store.set` / :meth:`Store.set_many` are done with a value when they return
    copies_values: bool = False
    #: :meth:`Store.value_lock` can also exclude other processes (``flock``), where
    #: ``config file_locks`` allows it
    interprocess_locks: bool = False
    #: :meth:`Store.set_if_version` is a compare-and-swap made by the store itself
    conditional_writes: bool = False


class Store(abc.ABC):
    """Abstract key-value store.  See the module docstring for the contract."""

    #: whether :meth:`set` / :meth:`delete` are implemented
    supports_writes: bool = True
    #: whether :meth:`delete` is implemented
    supports_deletes: bool = True
    #: whether byte ranges are served without reading the whole value
    supports_partial_reads: bool = True
    #: whether :meth:`list` and friends are implemented
    supports_listing: bool = True
    #: whether the pipeline should fetch chunks with :meth:`get_many` in batches
    #: (remote stores: one batch of concurrent requests instead of one round trip
    #: per chunk from each pool thread) rather than :meth:`get` per chunk task
    batched_reads: bool = False
    #: whether :meth:`get_into` reads straight into the caller's buffer (no copy)
    fast_get_into: bool = False
    #: whether :meth:`set_many` writes many values faster than :meth:`set` one by one
    #: (the chunk pipeline then writes a batch of chunks at a time)
    fast_set_many: bool = False
    #: whether :meth:`set_regions` writes regions of an array from where they lie,
    #: faster than :meth:`set_many` of their bytes gathered
    fast_set_regions: bool = False
    #: whether :meth:`set` and :meth:`set_many` are done with a value when they return
    #: (what they store is a copy): the caller may then reuse the value's buffer
    copies_values: bool = False
    #: whether :meth:`node_lock` also excludes other processes (``LocalStore``: a lock
    #: file); otherwise it excludes the threads of this process only, and updates of a
    #: node's metadata check that nobody else changed it meanwhile (best effort)
    interprocess_locks: bool = False
    #: whether :meth:`set_if_version` is a compare-and-swap made by the store itself,
    #: so that writers that share no lock (processes on S3) can read, change and write
    #: a value back without losing each other's changes
    conditional_writes: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("list", "list_prefix", "list_dir"):  # their results: Listings
            method = getattr(cls, name, None)
            if callable(method) and not getattr(method, "_gives_listing", False):
                setattr(cls, name, _giving_listing(method))

    def __init__(self, *, read_only: bool = False) -> None:
        self._read_only = bool(read_only)

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def capabilities(self) -> StoreCapabilities:
        """What this store can do (:class:`StoreCapabilities`), computed once -- and again
        after a flag of this store object is set (``store.fast_get_into = False``,
        ``store.copies_values = False``...); not pickled, nor copied."""
        caps = self.__dict__.get("_caps")
        if caps is None:
            caps = self.__dict__["_caps"] = self._capabilities()
        return caps

    def _forget_capabilities(self) -> None:
        """Compute :attr:`capabilities` again at the next use (a flag was changed)."""
        self.__dict__.pop("_caps", None)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _CAPABILITY_FLAGS:
            self.__dict__.pop("_caps", None)

    def __getstate__(self) -> dict:
        # (capabilities are worked out again where the store is unpickled or copied:
        # another platform, another class of its flags)
        state = self.__dict__.copy()
        state.pop("_caps", None)
        return state

    def _capabilities(self) -> StoreCapabilities:
        """This store's :class:`StoreCapabilities`: from the class flags, unless a
        store says more."""
        return StoreCapabilities(
            writes=bool(self.supports_writes), deletes=bool(self.supports_deletes),
            listing=bool(self.supports_listing), byte_ranges=bool(self.supports_partial_reads),
            batched_gets=bool(self.batched_reads), reads_into=bool(self.fast_get_into),
            files=self.file_paths(()) is not None, batched_sets=bool(self.fast_set_many),
            region_sets=bool(self.fast_set_regions), copies_values=bool(self.copies_values),
            interprocess_locks=bool(self.interprocess_locks),
            conditional_writes=bool(self.conditional_writes))

    def _check_writable(self, key: str | None = None) -> None:
        if self._read_only:
            what = f"key {key!r}" if key is not None else "it"
            raise ReadOnlyError(f"{self!r} is read-only; cannot write or delete {what}")

    # -- reads ------------------------------------------------------------
    @abc.abstractmethod
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Return the value of ``key`` (or the requested bytes of it), ``None`` if missing."""

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """:meth:`get`, refusing a value larger than ``limit`` bytes (no valid value there is
        larger: a chunk's bound).  Stores that know a value's size before reading it (local
        files, zip members) refuse it unread; here it is refused once read."""
        value = self.get(key)
        if value is not None and len(value) > limit:
            from zarrfast.storage.errors import value_too_large

            raise value_too_large(key, len(value), limit)
        return value

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        """Return the values of many keys, in order; ``None`` for missing ones."""
        keys, ranges = many_requests(keys, byte_ranges)
        return [self.get(k, r) for k, r in zip(keys, ranges, strict=True)]

    def get_into(self, key: str, out: memoryview) -> int | None:
        """Read the whole value of ``key`` into ``out`` (a writable byte buffer) when
        it has exactly ``len(out)`` bytes.  Returns the value's size, or ``None``
        when the key is missing; when the size differs from ``len(out)`` the
        contents of ``out`` are unspecified."""
        value = self.get(key)
        if value is None:
            return None
        n = len(value)
        if n == len(out):
            out[:] = value
        return n

    def read_many_into(self, keys: Sequence[str], out: Any, offsets: Any,
                       nbytes: int, *, exact: bool = True) -> Any:
        """Read the values of ``keys`` into ``out`` (a writable uint8 buffer) at
        ``offsets`` when they hold exactly ``nbytes`` bytes (``exact``, as
        :meth:`get_into` does one by one) or at most ``nbytes`` bytes (not ``exact``).
        Returns an int64 array of the values' sizes, ``-1`` for a missing key."""
        import numpy as np

        view = memoryview(out).cast("B")
        sizes = np.full(len(keys), -1, dtype=np.int64)
        for i, key in enumerate(keys):
            off = int(offsets[i])
            if exact:
                n = self.get_into(key, view[off:off + nbytes])
            else:
                value = self.get(key)
                if value is None:
                    n = None
                else:
                    n = len(value)
                    if n <= nbytes:
                        view[off:off + n] = value
            if n is not None:
                sizes[i] = n
        return sizes

    def file_paths(self, keys: Sequence[str]) -> tuple[bytes, list[bytes]] | None:
        """The files holding the values of ``keys``, for kernels that read files
        themselves: a root directory and the paths relative to it (file-system
        encoded), which the kernels open without following symbolic links
        (``ELOOP``: read that key with :meth:`get`).  ``None`` when values are not
        plain files, or reading them directly would bypass what this store does in
        :meth:`get`."""
        return None

    def file_version(self, stamp: tuple[int, int, int, int]) -> Hashable | None:
        """The :meth:`version` token of a file of :meth:`file_paths` that a kernel read,
        from ``fstat`` on the file it opened: ``(st_ino, st_size, st_mtime_ns,
        st_ctime_ns)``.  ``None`` when the store gives no such token."""
        return None

    def open_ranges(self, key: str) -> RangeReader | None:
        """``key``'s value opened for reading several byte ranges (a shard's index,
        then its inner chunks), or ``None`` when the store knows it is missing.  Stores
        of files read them all from one open file, its version taken from that file."""
        return RangeReader(self, key)

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        return self.get(key) is not None

    def version(self, key: str) -> Hashable | None:
        """A token that changes whenever the value of ``key`` is replaced, or ``None``
        when the store cannot tell (or the key is missing).  Caches of data derived
        from a value (shard indexes) are only kept for stores that give tokens."""
        return None

    def getsize(self, key: str) -> int:
        """Size in bytes of the value of ``key``; ``FileNotFoundError`` if missing."""
        value = self.get(key)
        if value is None:
            raise FileNotFoundError(f"key {key!r} not found in {self!r}")
        return len(value)

    # -- writes -----------------------------------------------------------
    @abc.abstractmethod
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` (atomically replacing an old value)."""

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values."""
        pairs = items.items() if isinstance(items, Mapping) else items
        for k, v in pairs:
            self.set(k, v)

    def set_regions(self, keys: Sequence[str], src: np.ndarray, offsets: np.ndarray,
                    strides: np.ndarray, shape: np.ndarray, itemsize: int, *,
                    fill: np.ndarray | None = None, extra: Any = None,
                    extra_first: bool = False) -> np.ndarray:
        """Store under ``keys[i]`` the regions of the bytes ``src`` (uint8) at the byte
        offsets ``offsets[i]`` (int64, a row per key), each of ``shape`` with byte
        ``strides`` read in C order, one after the other, then ``extra`` (before them
        with ``extra_first``): uncompressed chunks, or shards of them, straight from the
        array being written.  A key with a region whose every item is ``fill`` (one
        item's bytes) is not stored.  Returns the bool mask of those keys."""
        skipped = np.zeros(len(keys), dtype=bool)
        if fill is not None:
            fill = np.frombuffer(fill, dtype=np.uint8)
        pairs: list[tuple[str, Any]] = []  # (arrays: set_many takes any buffer)
        for i, key in enumerate(keys):
            regions = gather_regions(src, offsets[i], strides, shape, itemsize)
            if fill is not None and any(
                    bool((r.reshape(-1, itemsize) == fill).all()) for r in regions):
                skipped[i] = True
                continue
            parts = [r.reshape(-1) for r in regions]
            if extra is not None:
                e = np.frombuffer(extra, dtype=np.uint8)
                parts = [e, *parts] if extra_first else [*parts, e]
            pairs.append((key, np.concatenate(parts)))
        self.set_many(pairs)
        return skipped

    def set_if_not_exists(self, key: str, value: bytes) -> None:
        if not self.exists(key):
            self.set(key, value)

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error."""

    def delete_many(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.delete(k)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` (a node path; ``""`` means everything)."""
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        keys = list(self.list_prefix(p + "/" if p else ""))
        self.delete_many(keys)

    def clear(self) -> None:
        self.delete_dir("")

    # -- listing ----------------------------------------------------------
    @abc.abstractmethod
    def list(self) -> Iterator[str]:
        """All keys, sorted."""

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """All keys that start with ``prefix``, sorted."""
        if not listing_prefix(prefix):
            return iter(())
        return iter([k for k in self.list() if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> Iterator[str]:
        """Names of the immediate children below ``prefix`` (keys and 'directories'), sorted."""
        validate_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix = prefix + "/"
        names = set()
        for k in self.list_prefix(prefix):
            rest = k[len(prefix):]
            names.add(rest.split("/", 1)[0])
        return iter(sorted(names))

    def is_empty(self, prefix: str = "") -> bool:
        return next(iter(self.list_prefix(prefix)), None) is None

    # -- locks ------------------------------------------------------------
    def _lock_scope(self) -> Hashable:
        """What every store object holding the same data has in common (a root
        directory, a dict): their threads share the locks of :meth:`node_lock`."""
        try:
            hash(self)
        except TypeError:
            return ("id", id(self))
        return self

    @contextlib.contextmanager
    def node_lock(self, path: str, *, interprocess: bool = True,
                  timeout: float | None = None) -> Iterator[None]:
        """Hold the lock of the node at ``path`` while its metadata is read, changed and
        written back (an append, a resize, an attribute change): reentrant; shared by
        the threads of this process, and with ``interprocess`` (where
        :attr:`interprocess_locks` says the store can) by other processes.  Waits at
        most ``timeout`` seconds (``config lock_timeout``), then raises
        :class:`~zarrfast.errors.LockTimeoutError` naming the node."""
        with self._holding(("node", self._lock_scope(), path), f"node {path or '/'!r}", "",
                           interprocess and self.interprocess_locks,
                           lambda deadline, timed_out: self._lock_interprocess(
                               path, deadline, timed_out), timeout):
            yield

    @contextlib.contextmanager
    def value_lock(self, key: str, *, timeout: float | None = None,
                   interprocess: bool | None = None) -> Iterator[None]:
        """Hold the lock of the value at ``key`` while it is read, changed and written
        back (a partial write of a shard): reentrant; shared by every store object of
        the same data in this process and, where :attr:`interprocess_locks` says the
        store can, by other processes (``LocalStore``: ``flock`` on a lock file next to
        the value, there only while it is held).  Waits at most ``timeout`` seconds
        (``config lock_timeout``), then raises
        :class:`~zarrfast.errors.LockTimeoutError` naming the key.  ``interprocess``:
        whether to lock other processes out too (``None``: :attr:`interprocess_locks`,
        which reads ``config file_locks``; the engine passes what its call resolved)."""
        if interprocess is None:
            interprocess = self.interprocess_locks
        with self._holding(("value", self._lock_scope(), key), f"key {key!r}", "to it",
                           interprocess and self.capabilities.interprocess_locks,
                           lambda deadline, timed_out: self._lock_value_interprocess(
                               key, deadline, timed_out), timeout):
            yield

    @contextlib.contextmanager
    def _holding(self, lock_key: Hashable, what: str, where: str, interprocess: bool,
                 take: Any, timeout: float | None) -> Iterator[None]:
        """Hold this process's lock ``lock_key`` and, with ``interprocess``, what
        ``take(deadline, timed_out)`` takes (released by the function it returns) for
        the outermost hold."""
        if timeout is None:
            timeout = config.get("lock_timeout")
        deadline = time.monotonic() + timeout

        def timed_out() -> LockTimeoutError:
            return LockTimeoutError(
                f"timed out after {timeout:g} s waiting for the lock of {what} in {self!r}: "
                f"another thread or process held it (config lock_timeout); nothing was "
                f"written{' ' + where if where else ''}")

        with _locks.node_locks.hold(lock_key, timeout, timed_out) as entry:
            if not interprocess or entry.release is not None:
                yield
                return
            entry.release = take(deadline, timed_out) or _nothing
            try:
                yield
            finally:
                release, entry.release = entry.release, None
                release()

    def _lock_interprocess(self, path: str, deadline: float, timed_out: Any) -> Any:
        """Take the inter-process lock of the node at ``path`` (stores with
        :attr:`interprocess_locks`); returns the function releasing it, or ``None``."""
        return None

    def _lock_value_interprocess(self, key: str, deadline: float, timed_out: Any) -> Any:
        """Take the inter-process lock of the value at ``key`` (stores with
        :attr:`interprocess_locks`); returns the function releasing it, or ``None``."""
        return None

    # -- conditional writes ---------------------------------------------------------
    def get_versioned(self, key: str, *, limit: int | None = None
                      ) -> tuple[Any, Hashable | None]:
        """The value of ``key`` (``None`` when missing) and the version token that
        :meth:`set_if_version` compares with (stores with :attr:`conditional_writes`).
        A value larger than ``limit`` bytes is refused
        (:class:`~zarrfast.storage.errors.ValueTooLargeError`) before it is read."""
        raise NotImplementedError(f"{type(self).__name__} makes no conditional writes")

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
        """Write ``value`` to ``key`` only if the stored value is still the one
        :meth:`get_versioned` gave ``version`` for (``None``: only if ``key`` is still
        missing), in one step of the store's own (S3's ``If-Match``/``If-None-Match``);
        False, with nothing written, when it is not (replaced or deleted meanwhile)."""
        raise NotImplementedError(f"{type(self).__name__} makes no conditional writes")

    @contextlib.contextmanager
    def creation_lock(self) -> Iterator[None]:
        """Held while a node is created (checking that none exists, then writing its
        metadata and its parents'): the threads of this process create nodes in this
        store one at a time, so that two never both find a path free."""
        timeout = config.get("lock_timeout")

        def timed_out() -> LockTimeoutError:
            return LockTimeoutError(f"timed out after {timeout:g} s waiting to create a node "
                                    f"in {self!r} (config lock_timeout)")

        with _locks.node_locks.hold(("create", self._lock_scope()), timeout, timed_out):
            yield

    # -- misc -------------------------------------------------------------
    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> Store:
        """zarr-python's ``await Store.open(...)``: a new store of this class, made
        with these arguments (``await LocalStore.open(root)``,
        ``await MemoryStore.open()``).  Making a zarrfast store does no I/O to await;
        the store's methods stay synchronous (see :mod:`zarrfast.storage.asynchronous`
        for coroutines).  A store made from URLs (one with ``from_url``) takes
        ``url=`` as zarr-python's ``FsspecStore.open(url=...)`` does."""
        if "url" in kwargs:
            from_url = getattr(cls, "from_url", None)
            if from_url is None:
                raise ZarrfastError(f"{cls.__name__}.open: {cls.__name__} is not made from a "
                                    f"URL; got url={kwargs['url']!r}")
            return from_url(kwargs.pop("url"), *args, **kwargs)
        return cls(*args, **kwargs)

    def with_read_only(self, read_only: bool = True) -> Store:
        """A view of this store with another read-only flag."""
        raise NotImplementedError(f"{type(self).__name__} cannot change its read-only flag")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; the default does nothing."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _nothing() -> None:
    pass


def gather_regions(src: np.ndarray, offsets: np.ndarray, strides: np.ndarray,
                   shape: np.ndarray, itemsize: int) -> list[np.ndarray]:
    """Copies (C order, uint8, shape ``(*shape, itemsize)``) of the regions of ``src``
    at byte ``offsets``, each of ``shape`` with byte ``strides``
    (:meth:`Store.set_regions`)."""
    src = np.frombuffer(src, dtype=np.uint8)
    dims = tuple(int(x) for x in shape) + (itemsize,)
    steps = tuple(int(x) for x in strides) + (1,)
    lo = sum((d - 1) * t for d, t in zip(dims, steps, strict=True) if t < 0)
    hi = sum((d - 1) * t for d, t in zip(dims, steps, strict=True) if t > 0) + 1
    out = []
    for o in np.asarray(offsets).reshape(-1).tolist():
        if o + lo < 0 or o + hi > src.size:
            raise ValueError(f"a region of shape {dims[:-1]} at byte {o} with strides "
                             f"{steps[:-1]} reaches outside the {src.size} bytes given")
        out.append(np.lib.stride_tricks.as_strided(src[o:], dims, steps).copy())
    return out
