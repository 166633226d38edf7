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
    "Ready",
    "Store",
    "StoreCapabilities",
    "SuffixByteRequest",
    "as_bytes",
    "check_byte_range",
    "many_requests",
    "normalize_byte_range",
    "validate_key",
    "validate_keys",
    "zarr_python_get",
    "zarr_python_value",
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
    """Bytes ``[start, end)`` of a value.

    Parameters
    ----------
    start : int
        The first byte to read, counting from 0.
    end : int
        One past the last byte to read.  A range that reaches past the end of the value
        is clipped, as a Python slice is.

    Raises
    ------
    ZarrfastError
        When a bound is not an ``int``, ``start`` is negative or ``end`` is less than
        ``start``.

    Examples
    --------
    >>> from zarrfast.storage import RangeByteRequest
    >>> store = zarrfast.MemoryStore()
    >>> store.set("c/0", b"0123456789")
    >>> store.get("c/0", RangeByteRequest(2, 5))
    b'234'
    >>> store.get("c/0", RangeByteRequest(8, 100))
    b'89'
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (isinstance(self.start, int) and isinstance(self.end, int)):
            raise ZarrfastError(f"byte range bounds must be integers, got {self!r}")
        if self.start < 0 or self.end < self.start:
            raise ZarrfastError(f"invalid byte range {self!r}: need 0 <= start <= end")


@dataclass(frozen=True, slots=True)
class OffsetByteRequest:
    """All bytes from ``offset`` to the end of a value.

    Parameters
    ----------
    offset : int
        The first byte to read, counting from 0.  An offset at or past the end of the
        value reads no bytes.

    Raises
    ------
    ZarrfastError
        When ``offset`` is not an ``int`` or is negative.

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> store.set("c/0", b"0123456789")
    >>> store.get("c/0", zarrfast.storage.OffsetByteRequest(7))
    b'789'
    """

    offset: int

    def __post_init__(self) -> None:
        if not isinstance(self.offset, int) or self.offset < 0:
            raise ZarrfastError(f"invalid byte range {self!r}: offset must be an integer >= 0")


@dataclass(frozen=True, slots=True)
class SuffixByteRequest:
    """The last ``suffix`` bytes of a value.

    Parameters
    ----------
    suffix : int
        How many bytes to read from the end.  A suffix longer than the value reads all
        of it.

    Raises
    ------
    ZarrfastError
        When ``suffix`` is not an ``int`` or is negative.

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> store.set("c/0", b"0123456789")
    >>> store.get("c/0", zarrfast.storage.SuffixByteRequest(3))
    b'789'
    """

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
    """Check that ``key`` is a valid store key, and return it.

    A key is ``/``-separated and relative to the store's root: it is not empty, has no
    empty, ``.`` or ``..`` segment, does not start with ``/`` or a drive letter
    (``C:``), and holds no backslash or NUL character.  Every store checks its keys
    this way, so that no key can leave the store or alias another one.

    Parameters
    ----------
    key : str
        The key to check.

    Returns
    -------
    str
        ``key`` itself.

    Raises
    ------
    InvalidKeyError
        When ``key`` is not a ``str`` or breaks one of the rules above; the message
        says which.

    Examples
    --------
    >>> zarrfast.storage.validate_key("group/array/c/0/1")
    'group/array/c/0/1'
    >>> zarrfast.storage.validate_key("group/../secret")
    Traceback (most recent call last):
    ...
    zarrfast.errors.InvalidKeyError: store key 'group/../secret' has an empty, '.' or '..' ...
    """
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


class Ready:
    """A result that is already there, and can be awaited: what a zarrfast store's
    ``get`` and ``set`` return when called in zarr-python's style.

    zarr-python's store methods are coroutines: ``await store.get(key,
    prototype=...)`` gives a ``Buffer`` of the prototype, ``await store.set(key,
    buffer)`` stores a ``Buffer``.  zarrfast's stores are synchronous; called that way
    (a ``prototype=``, a zarr-python ``Buffer`` as the value), they do the work at once
    and return a ``Ready``, which ``await`` (or zarr-python's ``sync``) turns into the
    result.  Called without awaiting, the work is done all the same.

    Parameters
    ----------
    value : Any, optional
        The result ``await`` gives.

    Examples
    --------
    >>> import asyncio
    >>> from zarrfast.storage.base import Ready
    >>> asyncio.run(Ready(3).wait())
    3
    """

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # (a generator: ``await`` takes the value without suspending)

    async def wait(self) -> Any:
        """The value, as a coroutine (for ``asyncio.run`` and task APIs)."""
        return self.value

    def __repr__(self) -> str:
        return f"Ready({self.value!r})"


def _byte_request(byte_range: Any) -> ByteRequest | None:
    """zarr-python's byte requests (its own classes, same fields) as zarrfast's."""
    if byte_range is None or isinstance(
            byte_range, (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)):
        return byte_range
    names = {f: getattr(byte_range, f) for f in ("start", "end", "offset", "suffix")
             if isinstance(getattr(byte_range, f, None), int)}
    if set(names) == {"start", "end"}:
        return RangeByteRequest(names["start"], names["end"])
    if set(names) == {"offset"}:
        return OffsetByteRequest(names["offset"])
    if set(names) == {"suffix"}:
        return SuffixByteRequest(names["suffix"])
    check_byte_range(byte_range)  # (raises, naming it)
    return None


def zarr_python_get(store: Store, key: str, byte_range: Any, prototype: Any) -> Ready:
    """``store.get`` called in zarr-python's style: the value (or ``None``) as a
    ``Buffer`` of ``prototype`` (zarr-python's ``BufferPrototype``), in a
    [zarrfast.storage.base.Ready][]."""
    make = getattr(getattr(prototype, "buffer", None), "from_bytes", None)
    if not callable(make):
        raise ZarrfastError(f"{store!r}: get({key!r}): prototype must be a buffer prototype "
                            f"(zarr-python's BufferPrototype, with .buffer.from_bytes), "
                            f"got {prototype!r}")
    value = store.get(key, _byte_request(byte_range))
    return Ready(None if value is None else make(value))


def zarr_python_value(value: Any) -> bytes | None:
    """The bytes of a zarr-python ``Buffer`` given to ``set`` (one with
    ``as_buffer_like``/``to_bytes`` but not the buffer protocol); ``None`` for anything
    else."""
    to_bytes = getattr(value, "to_bytes", None)
    if not callable(to_bytes) or isinstance(value, int) or not hasattr(value, "as_buffer_like"):
        return None
    data = to_bytes()
    return data if type(data) is bytes else memoryview(data).tobytes()


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
    """A value opened for reading several byte ranges of it.

    ``Store.open_ranges`` gives one (the sharding codec reads a shard's index, then its
    inner chunks).  Every read, and ``version``, see the same value even if it is
    replaced meanwhile, where the store can promise it (the local store's reader reads
    one open file).  This generic reader reads through the store's ``get``: a read
    returns ``None`` (or 0) when the key is missing, and each read may see a newer value.
    A reader is a context manager; leaving the ``with`` block closes it.

    Parameters
    ----------
    store : Store
        The store holding the value.
    key : str
        The value's key.

    Attributes
    ----------
    store : Store
        The store holding the value.
    key : str
        The value's key.
    version : Hashable or None
        The store's ``Store.version`` of the value when it was opened.
    size : int or None
        The value's size in bytes where the reader knows it without asking the store
        again (the local store's open file); ``None`` otherwise.

    Examples
    --------
    >>> from zarrfast.storage import RangeByteRequest
    >>> store = zarrfast.MemoryStore()
    >>> store.set("shard", b"0123456789")
    >>> with store.open_ranges("shard") as reader:
    ...     reader.read(RangeByteRequest(0, 2)), reader.read(RangeByteRequest(6, 8))
    (b'01', b'67')
    """

    #: the value's size in bytes, where the reader knows it without asking the store
    #: again (the local store's open file); ``None`` otherwise
    size: int | None = None

    def __init__(self, store: Store, key: str) -> None:
        self.store = store
        self.key = key
        #: the store's :meth:`Store.version` of the value when opened
        self.version: Hashable | None = store.version(key)

    def read(self, byte_range: ByteRequest) -> bytes | None:
        """Read one byte range of the value.

        Parameters
        ----------
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest
            The bytes to read; a range reaching past the end is clipped.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when the key is missing.
        """
        return self.store.get(self.key, byte_range)

    def read_into(self, out: Any, start: int) -> int:
        """Read the bytes ``start:start + len(out)`` of the value into ``out``.

        Parameters
        ----------
        out : writable buffer
            Where to put the bytes (a ``bytearray``, a ``uint8`` NumPy array, a
            writable ``memoryview``); its length is the number of bytes asked for.
        start : int
            The first byte to read.

        Returns
        -------
        int
            How many bytes were read: fewer than ``len(out)`` at the end of the value,
            0 when the key is missing.  The rest of ``out`` is left as it was.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("shard", b"0123456789")
        >>> out = bytearray(b"....")
        >>> with store.open_ranges("shard") as reader:
        ...     reader.read_into(out, 8)
        2
        >>> out
        bytearray(b'89..')
        """
        view = memoryview(out).cast("B")
        data = self.store.get(self.key, RangeByteRequest(start, start + len(view)))
        if data is None:
            return 0
        n = len(data)
        if n:
            view[:n] = data
        return n

    def fileno(self) -> int | None:
        """The descriptor of the open file the reader reads, if it reads one.

        Kernels read ranges of that file themselves (with ``pread``) while the reader
        stays open.

        Returns
        -------
        int or None
            The file descriptor, or ``None`` when the value is not one open file (this
            generic reader, and a closed one).
        """
        return None

    def close(self) -> None:
        """Release what the reader holds (the local store's reader: its open file)."""

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
    """What a store can do, as the engine sees it.

    ``Store.capabilities`` computes it once per store object: the only thing the engine
    asks a store about before choosing how to read or write.  Each store says it in one
    place (its ``_capabilities`` method); by default from the store's class flags
    (``supports_partial_reads``, ``batched_reads``, ``fast_get_into`` ...), which stay
    for stores written against them.  Modelled on zarrs' storage traits
    (``ReadableStorageTraits``, ``supports_get_partial``).  The object is frozen; every
    parameter is also an attribute of that name.

    Parameters
    ----------
    writes : bool
        ``Store.set`` and ``Store.delete`` are implemented.
    deletes : bool
        ``Store.delete`` is implemented.
    listing : bool
        ``Store.list`` and its kin are implemented.
    byte_ranges : bool
        Byte ranges are served without reading the whole value.
    batched_gets : bool
        Many values are fetched at once with ``Store.get_many`` (remote stores: one
        batch of concurrent requests instead of a round trip per chunk task).
    reads_into : bool
        ``Store.get_into`` reads straight into the caller's buffer (no copy).
    files : bool
        Kernels may read the values themselves: they are plain files
        (``Store.file_paths``, ``Store.read_many_into``, ``Store.open_ranges``).
    batched_sets : bool
        ``Store.set_many`` writes many values faster than ``Store.set`` one by one.
    region_sets : bool
        ``Store.set_regions`` writes regions of an array from where they lie.
    copies_values : bool
        ``Store.set`` and ``Store.set_many`` are done with a value when they return:
        the caller may reuse its buffer.
    interprocess_locks : bool
        ``Store.value_lock`` can also exclude other processes (``flock``), where
        ``config file_locks`` allows it.
    conditional_writes : bool
        ``Store.set_if_version`` is a compare-and-swap made by the store itself.

    Examples
    --------
    >>> caps = zarrfast.MemoryStore().capabilities
    >>> caps.writes, caps.byte_ranges, caps.files
    (True, True, False)
    """

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
    """The abstract key-value store every zarrfast store derives from.

    A store maps string keys (``"a/b/zarr.json"``, ``"a/b/c/0/1"``) to bytes.  Its
    methods are synchronous (``AsyncStore`` offers zarr-python's coroutines over any
    store).  The contract, checked for every store by ``zarrfast.testing.StoreTests``:

    * ``get(key)`` returns the value as ``bytes`` (or another read-only bytes-like
      object), or ``None`` when the key is missing; it never raises for a missing key.
    * ``get(key, byte_range)`` returns only the requested bytes; a range that reaches
      past the end is clipped, as a Python slice is.
    * Keys are ``/``-separated and relative, with no empty, ``.`` or ``..`` segment, no
      backslash and no NUL character (``validate_key``); any other key raises
      ``InvalidKeyError``, so no key can leave the store.
    * Writes and deletes on a read-only store raise ``ReadOnlyError`` and change
      nothing.
    * ``list``, ``list_prefix`` and ``list_dir`` give keys in sorted order.

    A store implements ``get``, ``set``, ``delete`` and ``list``; every other method has
    a default built on them, which a store overrides where it can do better (the local
    store reads many files in one call, remote stores keep many requests in flight).
    Class flags (``supports_partial_reads``, ``batched_reads``, ``fast_get_into``,
    ``copies_values`` ...) say what it does better, and ``capabilities`` sums them up
    for the engine.  A store is a context manager: leaving the ``with`` block calls
    ``close``.

    Parameters
    ----------
    read_only : bool, default False
        Refuse writes and deletes (``ReadOnlyError``).

    Examples
    --------
    A store of one's own needs four methods:

    >>> from zarrfast.storage import Store, validate_key
    >>> from zarrfast.storage.base import normalize_byte_range
    >>> from zarrfast.errors import ReadOnlyError
    >>> class DictStore(Store):
    ...     def __init__(self, *, read_only=False):
    ...         super().__init__(read_only=read_only)
    ...         self.values = {}
    ...     def get(self, key, byte_range=None):
    ...         value = self.values.get(validate_key(key))
    ...         if value is None or byte_range is None:
    ...             return value
    ...         start, stop = normalize_byte_range(byte_range, len(value))
    ...         return value[start:stop]
    ...     def set(self, key, value):
    ...         if self.read_only:
    ...             raise ReadOnlyError(f"{self!r} is read-only")
    ...         self.values[validate_key(key)] = bytes(value)
    ...     def delete(self, key):
    ...         if self.read_only:
    ...             raise ReadOnlyError(f"{self!r} is read-only")
    ...         self.values.pop(validate_key(key), None)
    ...     def list(self):
    ...         return iter(sorted(self.values))
    >>> store = DictStore()
    >>> array = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="int32")
    >>> array[:] = np.arange(4)
    >>> sorted(store.values)
    ['c/0', 'c/1', 'zarr.json']
    >>> list(store.list_dir(""))
    ['c', 'zarr.json']
    """

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
    #: whether :meth:`get_tagged` and :meth:`get_many_tagged` say which version of a
    #: value (an HTTP ``ETag``) each read came from: a shard's index can then be kept,
    #: and every read of its inner chunks checked against the version it was read from
    tagged_reads: bool = False

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
        """Whether this store refuses writes and deletes."""
        return self._read_only

    @property
    def capabilities(self) -> StoreCapabilities:
        """What this store can do, as a ``StoreCapabilities``.

        Computed once, and again after a flag of this store object is set
        (``store.fast_get_into = False``, ``store.copies_values = False`` ...); neither
        pickled nor copied with the store.
        """
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
        """Read the value of ``key``, or some bytes of it.

        Parameters
        ----------
        key : str
            The key.
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole value.  A range
            that reaches past the end is clipped.

        Returns
        -------
        bytes or None
            The bytes (``bytes`` or another read-only bytes-like object), or ``None``
            when the key is missing.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key (see ``validate_key``).

        Examples
        --------
        >>> from zarrfast.storage import RangeByteRequest
        >>> store = zarrfast.MemoryStore()
        >>> store.set("a/zarr.json", b'{"zarr_format": 3}')
        >>> store.get("a/zarr.json")
        b'{"zarr_format": 3}'
        >>> store.get("a/zarr.json", RangeByteRequest(2, 13))
        b'zarr_format'
        >>> store.get("b/zarr.json") is None
        True
        """

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Read the value of ``key``, refusing one larger than ``limit`` bytes.

        The engine passes the largest size a valid value at ``key`` can have (a chunk's
        bound), so that a decompression bomb or a damaged file is not read whole.
        Stores that know a value's size before reading it (local files, zip members)
        refuse it unread; this default refuses it once read.

        Parameters
        ----------
        key : str
            The key.
        limit : int
            The largest size, in bytes, of a value that is returned.

        Returns
        -------
        bytes or None
            The value, or ``None`` when the key is missing.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            When the value holds more than ``limit`` bytes; the message names the key
            and both sizes.
        """
        value = self.get(key)
        if value is not None and len(value) > limit:
            from zarrfast.storage.errors import value_too_large

            raise value_too_large(key, len(value), limit)
        return value

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        """Read the values of many keys (or bytes of them) in one call.

        Remote stores keep the requests in flight together and the local store reads
        the files on several threads; this default reads them one by one with ``get``.

        Parameters
        ----------
        keys : sequence of str
            The keys.
        byte_ranges : sequence of (byte request or None), optional
            One byte request (or ``None``: the whole value) per key; ``None`` (the
            default) reads every value whole.

        Returns
        -------
        list of (bytes or None)
            The values in the order of ``keys``; ``None`` for a missing key.

        Raises
        ------
        ZarrfastError
            When ``byte_ranges`` has another length than ``keys``.

        Examples
        --------
        >>> from zarrfast.storage import SuffixByteRequest
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"c/0": b"abc", "c/1": b"defg"})
        >>> store.get_many(["c/0", "c/1", "c/2"])
        [b'abc', b'defg', None]
        >>> store.get_many(["c/0", "c/1"], [None, SuffixByteRequest(2)])
        [b'abc', b'fg']
        """
        keys, ranges = many_requests(keys, byte_ranges)
        return [self.get(k, r) for k, r in zip(keys, ranges, strict=True)]

    def get_into(self, key: str, out: memoryview) -> int | None:
        """Read the whole value of ``key`` into ``out`` when it has exactly ``len(out)`` bytes.

        The engine reads uncompressed chunks this way, straight into the array being
        filled where the store can (``capabilities.reads_into``).

        Parameters
        ----------
        key : str
            The key.
        out : writable buffer
            Where to put the value (a writable ``memoryview``, a ``bytearray``).

        Returns
        -------
        int or None
            The value's size, or ``None`` when the key is missing.  When the size
            differs from ``len(out)`` the contents of ``out`` are unspecified.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("c/0", b"abcd")
        >>> out = bytearray(4)
        >>> store.get_into("c/0", out)
        4
        >>> out
        bytearray(b'abcd')
        """
        value = self.get(key)
        if value is None:
            return None
        n = len(value)
        if n == len(out):
            out[:] = value
        return n

    def read_many_into(self, keys: Sequence[str], out: Any, offsets: Any,
                       nbytes: int, *, exact: bool = True) -> Any:
        """Read the values of many keys into one buffer, each at its own offset.

        A value is copied when it holds exactly ``nbytes`` bytes (``exact``, as
        ``get_into`` does one by one) or at most ``nbytes`` bytes (not ``exact``).  The
        local store reads all the files in one call of a compiled kernel; this default
        reads them one by one.

        Parameters
        ----------
        keys : sequence of str
            The keys.
        out : writable buffer
            Where to put the values (a ``uint8`` NumPy array, a ``bytearray``).
        offsets : sequence of int
            The byte offset in ``out`` of each key's value.
        nbytes : int
            The size a value must have (``exact``) or may have at most.
        exact : bool, default True
            Copy only values of exactly ``nbytes`` bytes; with ``False``, any value of at
            most ``nbytes`` bytes.

        Returns
        -------
        numpy.ndarray
            The ``int64`` sizes of the values, in the order of ``keys``; ``-1`` for a
            missing key.  A value whose size does not fit was not copied.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"c/0": b"ab", "c/1": b"cd", "c/2": b"efg"})
        >>> out = np.zeros(8, dtype=np.uint8)
        >>> store.read_many_into(["c/0", "c/1", "c/2", "c/3"], out, [0, 2, 4, 6], 2)
        array([ 2,  2,  3, -1])
        >>> bytes(out[:4])
        b'abcd'
        """
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
        """The files holding the values of ``keys``, for kernels that read files themselves.

        The kernels open the paths relative to the root without following symbolic
        links; a key they cannot open so (``ELOOP``) is read with ``get``.

        Parameters
        ----------
        keys : sequence of str
            The keys.

        Returns
        -------
        tuple of (bytes, list of bytes) or None
            The root directory and the paths of the keys' files relative to it, both
            file-system encoded; ``None`` (this default) when values are not plain
            files, or reading them directly would bypass what the store does in ``get``.

        Raises
        ------
        InvalidKeyError
            When a key is not valid (stores that give paths check every key).
        """
        return None

    def file_version(self, stamp: tuple[int, int, int, int]) -> Hashable | None:
        """The ``version`` token of a file of ``file_paths`` that a kernel read.

        Parameters
        ----------
        stamp : tuple of int
            ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` from ``fstat`` on the file
            the kernel opened.

        Returns
        -------
        Hashable or None
            The token ``version`` gives for that file, or ``None`` (this default) when
            the store gives no such token.
        """
        return None

    def open_ranges(self, key: str) -> RangeReader | None:
        """Open the value of ``key`` for reading several byte ranges of it.

        The sharding codec reads a shard's index, then its inner chunks, this way.
        Stores of files read them all from one open file, its version taken from that
        file; this default gives a ``RangeReader`` that reads through ``get``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        RangeReader or None
            The reader (close it, or use it as a context manager), or ``None`` when the
            store knows the key is missing (this default never does: its reads then
            return ``None``).

        Examples
        --------
        >>> from zarrfast.storage import OffsetByteRequest
        >>> store = zarrfast.MemoryStore()
        >>> store.set("shard", b"0123456789")
        >>> with store.open_ranges("shard") as reader:
        ...     reader.read(OffsetByteRequest(8))
        b'89'
        """
        return RangeReader(self, key)

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value.

        Parameters
        ----------
        key : str
            The key; a prefix of keys (a "directory") is not one.

        Returns
        -------
        bool
            ``True`` when the key holds a value.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("a/zarr.json", b"{}")
        >>> store.exists("a/zarr.json"), store.exists("a"), store.exists("b/zarr.json")
        (True, False, False)
        """
        return self.get(key) is not None

    def get_tagged(self, key: str, byte_range: ByteRequest | None = None
                   ) -> tuple[Any, Hashable | None]:
        """:meth:`get`, and the tag of the version of the value it read.

        Parameters
        ----------
        key : str
            The key.
        byte_range : ByteRequest or None, default None
            The bytes to read, as :meth:`get` takes them.

        Returns
        -------
        tuple
            ``(value, tag)``: the value as :meth:`get` returns it (``None``: missing),
            and a tag that differs whenever the value is replaced (an HTTP ``ETag``), or
            ``None`` when the store cannot tell (this default: see
            :attr:`tagged_reads`).
        """
        return self.get(key, byte_range), None

    def get_many_tagged(self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None]
                        ) -> tuple[list[Any], list[Hashable | None]]:
        """:meth:`get_many`, and the tag of the version each value came from (see
        :meth:`get_tagged`).

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None]
            One byte range (or ``None``) per key.

        Returns
        -------
        tuple
            ``(values, tags)``, one of each per key; this default tags none.
        """
        return self.get_many(keys, byte_ranges), [None] * len(keys)

    def version(self, key: str) -> Hashable | None:
        """A token that changes whenever the value of ``key`` is replaced.

        Caches of data derived from a value (shard indexes) are only kept for stores
        that give tokens.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        Hashable or None
            The token (compare it with ``==``), or ``None`` when the store cannot tell
            (this default) or the key is missing.
        """
        return None

    def getsize(self, key: str) -> int:
        """The size in bytes of the value of ``key``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        int
            The value's size in bytes.

        Raises
        ------
        FileNotFoundError
            When the key is missing (as zarr-python's stores raise).

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("c/0", b"abcd")
        >>> store.getsize("c/0")
        4
        """
        value = self.get(key)
        if value is None:
            raise FileNotFoundError(f"key {key!r} not found in {self!r}")
        return len(value)

    # -- writes -----------------------------------------------------------
    @abc.abstractmethod
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key``, atomically replacing an old value.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The value: ``bytes``, ``bytearray``, ``memoryview``, a NumPy array or any
            other object with the buffer protocol.  Unless ``capabilities.copies_values``
            is true, the caller must not change it afterwards.

        Raises
        ------
        ReadOnlyError
            When the store is read-only; nothing is written.
        InvalidKeyError
            When ``key`` is not a valid key.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("a/zarr.json", b"{}")
        >>> store.get("a/zarr.json")
        b'{}'
        """

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values, as ``set`` does one by one.

        Stores with ``capabilities.batched_sets`` write them faster than one by one
        (the local store writes a batch of files in one call of a compiled kernel).

        Parameters
        ----------
        items : mapping or iterable of (str, bytes-like) pairs
            The keys and their values.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When a key is not valid.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"c/0": b"a", "c/1": b"b"})
        >>> store.set_many([("c/2", b"c")])
        >>> list(store.list())
        ['c/0', 'c/1', 'c/2']
        """
        pairs = items.items() if isinstance(items, Mapping) else items
        for k, v in pairs:
            self.set(k, v)

    def set_regions(self, keys: Sequence[str], src: np.ndarray, offsets: np.ndarray,
                    strides: np.ndarray, shape: np.ndarray, itemsize: int, *,
                    fill: np.ndarray | None = None, extra: Any = None,
                    extra_first: bool = False) -> np.ndarray:
        """Store regions of an array's bytes, each key's from where they lie in memory.

        The engine writes uncompressed chunks (or shards of them) straight from the
        array being written this way.  Under ``keys[i]`` goes the concatenation, in C
        order, of the regions of ``src`` starting at the byte offsets ``offsets[i]``,
        each of ``shape`` items of ``itemsize`` bytes with byte ``strides``, then
        ``extra`` (before them with ``extra_first``).  Stores with
        ``capabilities.region_sets`` write the files from ``src`` without gathering the
        bytes first; this default gathers them and calls ``set_many``.

        Parameters
        ----------
        keys : sequence of str
            The keys to write.
        src : numpy.ndarray
            The bytes the regions lie in, as a ``uint8`` array (or any buffer).
        offsets : numpy.ndarray
            ``int64`` byte offsets into ``src``: a row per key, one offset per region.
        strides : numpy.ndarray
            The byte stride of each dimension of a region.
        shape : numpy.ndarray
            The shape of a region, in items.
        itemsize : int
            The size of one item in bytes.
        fill : numpy.ndarray, optional
            One item's bytes: a key with a region whose every item equals it is not
            stored.  ``None`` (the default) stores every key.
        extra : bytes-like, optional
            Bytes stored after the regions of every key (a shard's index).
        extra_first : bool, default False
            Put ``extra`` before the regions instead.

        Returns
        -------
        numpy.ndarray
            A ``bool`` mask over ``keys``: ``True`` for a key not stored because of
            ``fill``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When a key is not valid.
        ValueError
            When a region reaches outside ``src``.

        Examples
        --------
        Two chunks of four 1-byte items, the second all fill (not stored):

        >>> store = zarrfast.MemoryStore()
        >>> src = np.frombuffer(b"abcd----", dtype=np.uint8)
        >>> fill = np.frombuffer(b"-", dtype=np.uint8)
        >>> store.set_regions(["c/0", "c/1"], src, np.array([[0], [4]]), np.array([1]),
        ...                   np.array([4]), 1, fill=fill)
        array([False,  True])
        >>> store.get("c/0"), store.get("c/1")
        (b'abcd', None)
        """
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
        """Store ``value`` under ``key`` unless ``key`` already holds a value.

        This default checks ``exists``, then calls ``set``: two writers may both find
        the key free (``set_if_version`` with ``None`` is the atomic way, on stores with
        ``capabilities.conditional_writes``).

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The value, as for ``set``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only and the key is missing.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_if_not_exists("k", b"first")
        >>> store.set_if_not_exists("k", b"second")
        >>> store.get("k")
        b'first'
        """
        if not self.exists(key):
            self.set(key, value)

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Delete the value of ``key``; deleting a missing key is not an error.

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

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set("k", b"v")
        >>> store.delete("k")
        >>> store.delete("k")
        >>> store.exists("k")
        False
        """

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete the values of many keys, as ``delete`` does one by one.

        Parameters
        ----------
        keys : iterable of str
            The keys; missing ones are no error.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When a key is not valid.
        """
        for k in keys:
            self.delete(k)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix``.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` deletes everything.
            A key named ``prefix`` itself is kept: only keys below ``prefix + "/"`` go.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``prefix`` is not ``""`` or a valid key.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"a/zarr.json": b"{}", "a/c/0": b"x", "ab/zarr.json": b"{}"})
        >>> store.delete_dir("a")
        >>> list(store.list())
        ['ab/zarr.json']
        """
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        keys = list(self.list_prefix(p + "/" if p else ""))
        self.delete_many(keys)

    def clear(self) -> None:
        """Delete every key of the store.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        """
        self.delete_dir("")

    # -- listing ----------------------------------------------------------
    @abc.abstractmethod
    def list(self) -> Iterator[str]:
        """List every key of the store, sorted.

        Returns
        -------
        Iterator[str]
            The keys.  The iterator also works with ``async for``, as zarr-python's
            stores list (the keys are listed already: nothing waits).

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"b": b"1", "a/c/0": b"2"})
        >>> list(store.list())
        ['a/c/0', 'b']
        """

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``, sorted.

        Parameters
        ----------
        prefix : str
            The start of the keys: ``""`` lists every key; ``"a/"`` the keys below the
            node ``a``; ``"a"`` also ``"ab"``.  ``"/"`` lists nothing (no key starts
            with a slash).

        Returns
        -------
        Iterator[str]
            The keys (whole keys, not relative to ``prefix``); the iterator also works
            with ``async for``.

        Raises
        ------
        InvalidKeyError
            When ``prefix`` is not ``""``, ``"/"`` or a valid key (optionally followed
            by ``/``).

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"a/zarr.json": b"{}", "a/c/0": b"x", "ab/zarr.json": b"{}"})
        >>> list(store.list_prefix("a/"))
        ['a/c/0', 'a/zarr.json']
        """
        if not listing_prefix(prefix):
            return iter(())
        return iter([k for k in self.list() if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names of the immediate children of ``prefix``, sorted.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` is the root.

        Returns
        -------
        Iterator[str]
            The names (relative to ``prefix``) of the keys and "directories" right
            below it; the iterator also works with ``async for``.

        Raises
        ------
        InvalidKeyError
            When ``prefix`` is not ``""`` or a valid key (optionally followed by ``/``).

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.set_many({"a/zarr.json": b"{}", "a/c/0": b"x", "a/c/1": b"y"})
        >>> list(store.list_dir("a"))
        ['c', 'zarr.json']
        """
        validate_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix = prefix + "/"
        names = set()
        for k in self.list_prefix(prefix):
            rest = k[len(prefix):]
            names.add(rest.split("/", 1)[0])
        return iter(sorted(names))

    def is_empty(self, prefix: str = "") -> bool:
        """Whether no key starts with ``prefix``.

        Parameters
        ----------
        prefix : str, default ""
            The start of the keys, as for ``list_prefix``; ``""`` asks about the whole
            store.  Give ``"a/"`` for the keys below the node ``a`` (``"a"`` also
            matches ``"ab"``).

        Returns
        -------
        bool
            ``True`` when no key starts with ``prefix``.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> store.is_empty()
        True
        >>> store.set("a/zarr.json", b"{}")
        >>> store.is_empty("a/"), store.is_empty("b/")
        (False, True)
        """
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
        """Hold the lock of the node at ``path`` while its metadata is read, changed and written.

        The engine takes it for an append, a resize or an attribute change.  The lock is
        reentrant and shared by the threads of this process (by every store object of
        the same data); with ``interprocess``, where the store's ``interprocess_locks``
        says it can (the local store: ``flock`` on a lock file in the node's
        directory), other processes are excluded too.

        Parameters
        ----------
        path : str
            The node's path (``""``: the root).
        interprocess : bool, default True
            Also exclude other processes, where the store can.
        timeout : float, optional
            How many seconds to wait for the lock at most; ``None`` (the default) reads
            ``config lock_timeout``.

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager holding the lock while its ``with`` block runs.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            When the lock was not had within ``timeout`` seconds; the message names the
            node.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> with store.node_lock("a"):
        ...     store.set("a/zarr.json", b"{}")
        """
        with self._holding(("node", self._lock_scope(), path), f"node {path or '/'!r}", "",
                           interprocess and self.interprocess_locks,
                           lambda deadline, timed_out: self._lock_interprocess(
                               path, deadline, timed_out), timeout):
            yield

    @contextlib.contextmanager
    def value_lock(self, key: str, *, timeout: float | None = None,
                   interprocess: bool | None = None) -> Iterator[None]:
        """Hold the lock of the value at ``key`` while it is read, changed and written back.

        The engine takes it for a partial write of a shard.  The lock is reentrant and
        shared by every store object of the same data in this process and, where the
        store's ``interprocess_locks`` says it can, by other processes (the local store:
        ``flock`` on a lock file next to the value, there only while it is held).

        Parameters
        ----------
        key : str
            The value's key.
        timeout : float, optional
            How many seconds to wait for the lock at most; ``None`` (the default) reads
            ``config lock_timeout``.
        interprocess : bool, optional
            Whether to lock other processes out too; ``None`` (the default) uses the
            store's ``interprocess_locks``, which reads ``config file_locks`` (the
            engine passes what its call resolved).

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager holding the lock while its ``with`` block runs.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            When the lock was not had within ``timeout`` seconds; the message names the
            key.
        """
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
        """Read the value of ``key`` with the version token ``set_if_version`` compares with.

        Only stores with ``capabilities.conditional_writes`` implement it.

        Parameters
        ----------
        key : str
            The key.
        limit : int, optional
            Refuse a value larger than this many bytes, before reading it; ``None`` (the
            default) reads any size.

        Returns
        -------
        tuple
            ``(value, version)``: the value (``None`` when missing) and its token.

        Raises
        ------
        NotImplementedError
            When the store makes no conditional writes (this default).
        zarrfast.storage.errors.ValueTooLargeError
            When the value holds more than ``limit`` bytes.
        """
        raise NotImplementedError(f"{type(self).__name__} makes no conditional writes")

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
        """Write ``value`` to ``key`` only if the stored value is still the one of ``version``.

        The check and the write are one step of the store's own (S3's
        ``If-Match`` / ``If-None-Match``), so that writers that share no lock can read,
        change and write a value back without losing each other's changes.  Only
        stores with ``capabilities.conditional_writes`` implement it.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The new value.
        version : Hashable or None
            The token ``get_versioned`` gave with the value read; ``None``: write only if
            ``key`` is still missing.

        Returns
        -------
        bool
            ``True`` when written; ``False``, with nothing written, when the value was
            replaced or deleted meanwhile.

        Raises
        ------
        NotImplementedError
            When the store makes no conditional writes (this default).
        """
        raise NotImplementedError(f"{type(self).__name__} makes no conditional writes")

    @contextlib.contextmanager
    def creation_lock(self) -> Iterator[None]:
        """Hold the lock of node creation in this store.

        The engine holds it while it creates a node (checking that none exists, then
        writing its metadata and its parents'): the threads of this process create
        nodes in this store one at a time, so that two never both find a path free.

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager holding the lock while its ``with`` block runs.

        Raises
        ------
        zarrfast.errors.LockTimeoutError
            When the lock was not had within ``config lock_timeout`` seconds.
        """
        timeout = config.get("lock_timeout")

        def timed_out() -> LockTimeoutError:
            return LockTimeoutError(f"timed out after {timeout:g} s waiting to create a node "
                                    f"in {self!r} (config lock_timeout)")

        with _locks.node_locks.hold(("create", self._lock_scope()), timeout, timed_out):
            yield

    # -- misc -------------------------------------------------------------
    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> Store:
        """Make a store of this class, as zarr-python's ``await Store.open(...)`` does.

        Making a zarrfast store does no I/O to await; the store's methods stay
        synchronous (``AsyncStore`` offers coroutines).

        Parameters
        ----------
        *args : Any
            Positional arguments of the class's constructor.
        **kwargs : Any
            Keyword arguments of the class's constructor.  A store made from URLs (a
            class with ``from_url``) takes ``url=``, as zarr-python's
            ``FsspecStore.open(url=...)`` does.

        Returns
        -------
        Store
            The new store.

        Raises
        ------
        ZarrfastError
            When ``url=`` is given to a class that is not made from URLs.

        Examples
        --------
        >>> import asyncio
        >>> store = asyncio.run(zarrfast.LocalStore.open("data.zarr", read_only=True))
        >>> store
        LocalStore('file://data.zarr', read_only=True)
        """
        if "url" in kwargs:
            from_url = getattr(cls, "from_url", None)
            if from_url is None:
                raise ZarrfastError(f"{cls.__name__}.open: {cls.__name__} is not made from a "
                                    f"URL; got url={kwargs['url']!r}")
            return from_url(kwargs.pop("url"), *args, **kwargs)
        return cls(*args, **kwargs)

    def with_read_only(self, read_only: bool = True) -> Store:
        """A store of the same data with another read-only flag.

        Parameters
        ----------
        read_only : bool, default True
            The new store's flag.

        Returns
        -------
        Store
            The new store (this one is unchanged).

        Raises
        ------
        NotImplementedError
            When the store cannot change its flag (this default).  ``make_store`` and
            the functions that open nodes read-only then refuse a writable store of
            that class (``zarrfast.storage.errors.UnsupportedStoreOperationError``)
            rather than use it writable.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> reader = store.with_read_only()
        >>> reader.read_only, store.read_only
        (True, False)
        >>> reader.set("k", b"v")
        Traceback (most recent call last):
        ...
        zarrfast.errors.ReadOnlyError: MemoryStore('memory://...', read_only=True) is read-only; ...
        """
        raise NotImplementedError(f"{type(self).__name__} cannot change its read-only flag")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the store holds.

        A zip store writes its central directory and closes the archive; this default
        does nothing.
        """

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
