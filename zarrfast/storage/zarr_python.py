"""Any zarr-python store as a zarrfast store.

:class:`ZarrPythonStore` wraps an instance of ``zarr.abc.store.Store`` (zarr-python
3.x): zarr's ``LocalStore``, ``MemoryStore``, ``FsspecStore``, ``ZipStore`` and
``ObjectStore``, icechunk's ``IcechunkStore`` (``session.store``), VirtualiZarr's
``ManifestStore`` and any other.  zarrfast's engine then reads and writes through
it: :meth:`ZarrPythonStore.get_many` runs one coroutine per key, at most
``config io_concurrency`` in flight at once (``batched_reads``), and several byte
ranges of one key in one batch (the inner chunks of a shard) are asked with the
store's ``get_partial_values``.

Which event loop: the store's coroutines run on zarr-python's own loop
(``zarr.core.sync``), the loop zarr-python itself drives every store on.  Stores
may be bound to the loop they were first used on: an fsspec async file system
keeps an aiohttp session per loop (``zarr.storage.FsspecStore.from_url`` builds it
for zarr's loop), so a store that zarr-python already used fails on another loop.
icechunk and obstore are loop-agnostic and work on either.  zarr's loop is the
one that works for every store type, so it is the one used.

Errors: a failure of the wrapped store for a key becomes a
:class:`~zarrfast.storage.errors.RemoteStoreError` (or
:class:`~zarrfast.storage.errors.RemotePermissionError`,
:class:`~zarrfast.storage.errors.RetriesExhaustedError` after retrying transient
failures with a :class:`~zarrfast.storage.remote.RetryPolicy`) naming the key and
the store, with the original exception as ``__cause__``.  icechunk's own errors
(``icechunk.IcechunkError``, ``icechunk.ConflictError``...) are raised as they are:
they say what a user of icechunk must know (a conflict, a read-only session).  So a
read-only icechunk session (``repo.readonly_session(...).store``) is not flagged
read-only here: a write reaches icechunk, which refuses it with
``icechunk.IcechunkError`` ("cannot write to read-only store", naming the key).

zarr-python is optional: ``pip install "zarrfast[zarr]"`` (from a source checkout:
``pip install ".[zarr]"``).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from zarrfast import config
from zarrfast.errors import ReadOnlyError, ZarrfastError
from zarrfast.storage.base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    as_bytes,
    listing_prefix,
    many_requests,
    normalize_byte_range,
    validate_key,
    validate_prefix,
)
from zarrfast.storage.errors import (
    MissingDependencyError,
    UnsupportedStoreOperationError,
)
from zarrfast.storage.remote import (
    RequestLimit,
    RetryPolicy,
    classify,
    gather_limited,
    request_error,
    retrying,
)

__all__ = ["ZarrPythonStore", "is_zarr_python_store"]

T = TypeVar("T")

_EXTRA_HINT = 'pip install "zarrfast[zarr]" (from a source checkout: pip install ".[zarr]")'


def _zarr() -> Any:
    try:
        import zarr.abc.store
        import zarr.core.buffer
        import zarr.core.sync
    except ImportError as e:
        raise MissingDependencyError(
            f"wrapping a zarr-python store needs zarr-python 3, which is not installed ({e}); "
            f"install it with {_EXTRA_HINT}") from None
    return zarr


def is_zarr_python_store(obj: object) -> bool:
    """Whether ``obj`` is a zarr-python 3 store, without importing zarr (when zarr was
    never imported, nothing can be one)."""
    import sys

    mod = sys.modules.get("zarr.abc.store")
    cls = getattr(mod, "Store", None) if mod is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def _is_icechunk(store: object) -> bool:
    return type(store).__module__.split(".", 1)[0] == "icechunk"


def _is_foreign(exc: BaseException) -> bool:
    """Errors raised to the user as they are: icechunk's own."""
    return any(c.__module__.split(".", 1)[0] == "icechunk" for c in type(exc).__mro__)


class _Foreign(Exception):  # noqa: N818 - a carrier, never seen by users
    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _zarr_range(zarr: Any, byte_range: ByteRequest | None) -> Any:
    st = zarr.abc.store
    if byte_range is None:
        return None
    if isinstance(byte_range, RangeByteRequest):
        return st.RangeByteRequest(byte_range.start, byte_range.end)
    if isinstance(byte_range, OffsetByteRequest):
        return st.OffsetByteRequest(byte_range.offset)
    if isinstance(byte_range, SuffixByteRequest):
        return st.SuffixByteRequest(byte_range.suffix)
    raise ZarrfastError(f"byte_range must be a RangeByteRequest, OffsetByteRequest or "
                        f"SuffixByteRequest, got {byte_range!r}")


def _value(buf: Any) -> bytes | memoryview | None:
    """The bytes of a zarr ``Buffer``: a read-only view of its memory when it is a
    contiguous byte array (no copy), else a copy."""
    if buf is None:
        return None
    try:
        arr = buf.as_numpy_array()
    except Exception:  # noqa: BLE001 - a GPU buffer or another type: copy
        return bytes(buf.to_bytes())
    if arr.dtype.itemsize == 1 and arr.ndim == 1 and arr.flags.c_contiguous:
        return memoryview(arr).cast("B").toreadonly()
    return arr.tobytes()


class ZarrPythonStore(Store):
    """A zarrfast store over a zarr-python 3 store.

    Wraps any ``zarr.abc.store.Store``: zarr's ``LocalStore``, ``MemoryStore``,
    ``FsspecStore``, ``ZipStore`` and ``ObjectStore``, icechunk's ``IcechunkStore``
    (``session.store``), VirtualiZarr's ``ManifestStore`` and any other.  Its
    coroutines run on zarr-python's own event loop; ``get_many`` runs one per key, at
    most ``max_concurrency`` at once, and asks several byte ranges of one key (a
    shard's inner chunks) with the store's ``get_partial_values``.  Transient failures
    are retried with ``retry``; other failures become
    ``zarrfast.storage.RemoteStoreError`` naming the key, except icechunk's own errors,
    raised as they are (a read-only icechunk session refuses writes itself, with
    ``icechunk.IcechunkError``).  Needs zarr-python: ``pip install "zarrfast[zarr]"``
    (from a source checkout: ``pip install ".[zarr]"``).

    Parameters
    ----------
    store : zarr.abc.store.Store
        The zarr-python store; it is opened if it is not open.
    read_only : bool, default False
        Refuse writes here even if ``store`` takes them.  A read-only ``store`` makes
        this store read-only too, except a read-only icechunk session, which refuses
        writes itself.
    retry : RetryPolicy or int or None, default None
        How transient failures are retried: a ``RetryPolicy``, or the number of
        attempts (``None``: ``RetryPolicy()``).
    max_concurrency : int or None, default None
        At most this many requests in flight at once (``None``: ``config
        io_concurrency``).

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``store`` is not a zarr-python store, or ``max_concurrency`` is not an
        int >= 1.
    zarrfast.storage.MissingDependencyError
        If zarr-python 3 is not installed.

    Examples
    --------
    >>> import zarr
    >>> from zarrfast.storage import ZarrPythonStore
    >>> zstore = zarr.storage.MemoryStore()
    >>> store = ZarrPythonStore(zstore)
    >>> store
    ZarrPythonStore(MemoryStore('memory://...'))
    >>> a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    >>> a[:] = np.arange(4)
    >>> list(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarr.open_array(zstore, mode="r")[:]
    array([0, 1, 2, 3], dtype=int32)
    """

    batched_reads = True
    #: the zarr-python store wrapped
    zarr_store: Any

    def __init__(self, store: Any, *, read_only: bool = False,
                 retry: RetryPolicy | int | None = None,
                 max_concurrency: int | None = None) -> None:
        zarr = _zarr()
        if not isinstance(store, zarr.abc.store.Store):
            raise ZarrfastError(f"ZarrPythonStore needs a zarr.abc.store.Store, got "
                                f"{type(store).__name__} {store!r}")
        if isinstance(store, ZarrPythonStore):  # pragma: no cover - not a zarr store
            store = store.zarr_store
        # a read-only icechunk session refuses writes itself, with icechunk's own error
        # (``IcechunkError: cannot write to read-only store``, naming the key): users of
        # icechunk catch that type, so the session is not flagged read-only here
        inner_read_only = (bool(getattr(store, "read_only", False))
                           and not _is_icechunk(store))
        super().__init__(read_only=read_only or inner_read_only)
        self._own_read_only = bool(read_only)
        if retry is None:
            retry = RetryPolicy()
        elif isinstance(retry, int):
            retry = RetryPolicy(attempts=retry)
        if max_concurrency is not None and (not isinstance(max_concurrency, int)
                                            or max_concurrency < 1):
            raise ZarrfastError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        self.zarr_store = store
        self.retry = retry
        self.max_concurrency = max_concurrency
        self._requests = RequestLimit()  # (the limit bounds every thread's requests)
        self._zarr = zarr
        self._prototype = zarr.core.buffer.default_buffer_prototype()
        self.supports_writes = bool(getattr(store, "supports_writes", True))
        self.supports_deletes = bool(getattr(store, "supports_deletes", True))
        self.supports_listing = bool(getattr(store, "supports_listing", True))
        self.supports_partial_writes = bool(getattr(store, "supports_partial_writes", False))
        if not getattr(store, "_is_open", True):
            self._call("opening", "<store>", store._open)

    # -- identity -------------------------------------------------------------------
    def __str__(self) -> str:  # the zarr-python store's URL, as it prints in node reprs
        return str(self.zarr_store)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ZarrPythonStore({self.zarr_store!r}{ro})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ZarrPythonStore) and other.zarr_store is self.zarr_store
                and other.read_only == self.read_only)

    def __hash__(self) -> int:
        return hash((ZarrPythonStore, id(self.zarr_store), self.read_only))

    def __reduce__(self):
        return (_rebuild, (self.zarr_store, self._own_read_only, self.retry,
                           self.max_concurrency))

    def _lock_scope(self) -> Any:
        # every object of the same data shares this process's locks: a zarr-python local
        # store those of its root (zarrfast's LocalStore's too), a memory store its dict's
        store = self.zarr_store
        root = getattr(store, "root", None)
        if type(store).__name__ == "LocalStore" and root is not None:
            return ("local", os.path.normcase(os.path.realpath(os.fspath(root))))
        data = getattr(store, "_store_dict", None)
        if type(store).__name__ == "MemoryStore" and isinstance(data, dict):
            return ("memory", id(data))
        return ("zarr-python", id(store))

    def with_read_only(self, read_only: bool = True) -> ZarrPythonStore:
        """Return a view of this store with another read-only flag.

        The zarr-python store's own ``with_read_only`` makes the view when it has one;
        otherwise a read-only view is enforced here.

        Parameters
        ----------
        read_only : bool, default True
            The flag of the view.

        Returns
        -------
        ZarrPythonStore
            A new store object on the same data.

        Raises
        ------
        NotImplementedError
            If ``read_only`` is false and the zarr-python store is read-only and cannot be
            made writable (it has no ``with_read_only``).
        """
        inner = self.zarr_store
        if bool(getattr(inner, "read_only", False)) != read_only:
            try:
                inner = inner.with_read_only(read_only)
            except NotImplementedError:
                if not read_only:
                    raise NotImplementedError(
                        f"{type(inner).__name__} cannot be made writable "
                        f"(it has no with_read_only)") from None
                # enforced here instead
        return ZarrPythonStore(inner, read_only=read_only, retry=self.retry,
                               max_concurrency=self.max_concurrency)

    # -- running coroutines ---------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._zarr.core.sync.sync(coro)

    def _failure(self, action: str, key: str, exc: BaseException, kind: str,
                 attempts: int, waited: float) -> BaseException:
        if _is_foreign(exc):
            return _Foreign(exc)
        where = f"key {key!r} of {self!r}" if key != "<store>" else repr(self)
        if kind == "fatal" and isinstance(exc, ValueError) and "read-only" in str(exc):
            return ReadOnlyError(f"{action} {where} refused: the zarr-python store is "
                                 f"read-only ({exc})")
        return request_error(action, where, f"{type(exc).__name__}: {exc}", kind, attempts,
                             waited)

    def _classify(self, exc: BaseException) -> str:
        """A zarr-python store says a key is missing by returning ``None`` (``exists``:
        ``False``), never by raising: a ``FileNotFoundError`` is a failure (VirtualiZarr's
        ManifestStore, when the file a chunk refers to is gone), never a missing key,
        or the chunk would silently read as fill value.  The one exception: icechunk's
        ``KeyError`` for a zarr v2 key (``"v2 key not found at `a/.zarray`"``)."""
        if isinstance(exc, KeyError) and _is_icechunk(self.zarr_store):
            return "missing"
        if isinstance(exc, NotADirectoryError) or "(os error 20)" in str(exc):
            return "missing"  # a key below a file (obstore: "Not a directory"): none there
        if _is_foreign(exc):
            return "fatal"
        kind = classify(exc)
        return "fatal" if kind == "missing" else kind

    async def _retrying(self, action: str, key: str, call: Callable[[], Awaitable[T]]) -> T:
        def failure(e: BaseException, kind: str, attempts: int, waited: float) -> BaseException:
            return self._failure(action, key, e, kind, attempts, waited)

        return await retrying(call, self.retry, classify=self._classify, failure=failure)

    def _call(self, action: str, key: str, fn: Callable[[], Awaitable[T]]) -> T:
        return self._sync(self._retrying(action, key, fn))

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return self._run(coro)
        except _Foreign as f:
            raise f.exc.with_traceback(f.exc.__traceback__) from f.exc.__cause__

    def _limit(self) -> int:
        return self.max_concurrency or int(config.get("io_concurrency"))

    # -- reads ----------------------------------------------------------------------
    async def _aget(self, key: str, byte_range: ByteRequest | None) -> bytes | memoryview | None:
        zrange = _zarr_range(self._zarr, byte_range)
        if isinstance(byte_range, RangeByteRequest) and byte_range.end <= byte_range.start:
            # nothing to fetch (obstore refuses an empty range): b"" if the key exists
            return b"" if await self._aexists(key) else None
        try:
            buf = await self._retrying(
                "reading", key, lambda: self.zarr_store.get(key, self._prototype, zrange))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except ZarrfastError:
            if byte_range is None or not await self._empty_range(key, byte_range):
                raise
            return b""  # a range past the end (obstore refuses it): the empty slice
        value = _value(buf)
        if (isinstance(byte_range, SuffixByteRequest) and value is not None
                and len(value) < byte_range.suffix):
            # the value is shorter than the suffix: all of it (zarr's MemoryStore
            # slices from a negative start instead)
            return await self._aget(key, None)
        return value

    async def _empty_range(self, key: str, byte_range: ByteRequest) -> bool:
        """Whether ``byte_range`` of the existing value of ``key`` is empty once clipped."""
        try:
            if not await self._aexists(key):
                return False
            size = await self.zarr_store.getsize(key)
        except Exception:  # noqa: BLE001 - the caller re-raises the original failure
            return False
        start, stop = normalize_byte_range(byte_range, int(size))
        return stop <= start

    async def _aget_partial(self, key: str, ranges: list[ByteRequest | None]) -> list[Any]:
        pairs = [(key, _zarr_range(self._zarr, r)) for r in ranges]

        async def partial() -> list[Any] | None:
            try:
                return await self.zarr_store.get_partial_values(self._prototype, pairs)
            except FileNotFoundError:
                # zarr's LocalStore raises for a missing key here (get returns None):
                # ask again with get, which tells a missing key from a failure
                return None

        bufs = await self._retrying("reading", key, partial)
        if bufs is None:
            return [await self._aget(key, r) for r in ranges]
        out = [_value(b) for b in bufs]
        for i, (r, v) in enumerate(zip(ranges, out, strict=True)):
            if isinstance(r, SuffixByteRequest) and v is not None and len(v) < r.suffix:
                out[i] = await self._aget(key, None)  # as in _aget
        return out

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Return the value of ``key`` (or the requested bytes of it), with the store's ``get``.

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
            The value (or the range of it, clipped like a slice): a read-only view of the
            zarr buffer's memory when it is contiguous bytes, else a copy; ``None`` if
            missing.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If a key is not valid.
        zarrfast.storage.RemoteStoreError
            If the zarr-python store fails for good (``RemotePermissionError`` when access
            is denied, ``RetriesExhaustedError`` when transient failures outlast the retry
            policy), naming the key, with the store's exception as ``__cause__``.
            icechunk's own errors are raised as they are.
        """
        validate_key(key)
        _zarr_range(self._zarr, byte_range)  # checks the type
        return self._sync(self._aget(key, byte_range))  # type: ignore[return-value]

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        """Return the values of many keys, their coroutines run concurrently.

        Several byte ranges of one key are asked with one ``get_partial_values`` call.

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
        zarrfast.storage.RemoteStoreError
            If the zarr-python store fails for good (``RemotePermissionError`` when access
            is denied, ``RetriesExhaustedError`` when transient failures outlast the retry
            policy), naming the key, with the store's exception as ``__cause__``.
            icechunk's own errors are raised as they are.
        """
        keys, ranges = many_requests(keys, byte_ranges)
        for k, r in zip(keys, ranges, strict=True):
            validate_key(k)
            _zarr_range(self._zarr, r)
        if not keys:
            return []
        # several ranges of one key (a shard's inner chunks): one get_partial_values
        groups: dict[str, list[int]] = {}
        for i, (k, r) in enumerate(zip(keys, ranges, strict=True)):
            if r is not None:
                groups.setdefault(k, []).append(i)
        partial = {k: idx for k, idx in groups.items() if len(idx) > 1}
        singles = [i for i, (k, r) in enumerate(zip(keys, ranges, strict=True))
                   if r is None or k not in partial]

        async def main() -> list[Any]:
            out: list[Any] = [None] * len(keys)
            jobs: list[Awaitable[Any]] = [self._aget(keys[i], ranges[i]) for i in singles]
            jobs += [self._aget_partial(k, [ranges[i] for i in idx]) for k, idx in partial.items()]
            results = await gather_limited(jobs, self._limit(), self._requests)
            for i, v in zip(singles, results, strict=False):
                out[i] = v
            for (_, idx), vals in zip(partial.items(), results[len(singles):], strict=True):
                for i, v in zip(idx, vals, strict=True):
                    out[i] = v
            return out

        return self._sync(main())

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value (the store's ``exists``).

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
        return self._sync(self._aexists(key))

    async def _aexists(self, key: str) -> bool:
        try:
            return bool(await self._retrying("inspecting", key,
                                             lambda: self.zarr_store.exists(key)))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return False

    def getsize(self, key: str) -> int:
        """Return the size of the value of ``key`` (the store's ``getsize``).

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
            If ``key`` is missing (a directory of a local store is no key).
        """
        validate_key(key)

        async def size() -> int | None:
            # some stores give a size for a directory (zarr's LocalStore): no key there
            if not await self._aexists(key):
                return None
            try:
                return await self._retrying("inspecting", key,
                                            lambda: self.zarr_store.getsize(key))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None

        n = self._sync(size())
        if n is None:
            raise FileNotFoundError(f"key {key!r} not found in {self!r}")
        return int(n)

    # -- writes ---------------------------------------------------------------------
    def _check_writes(self, key: str) -> None:
        self._check_writable(key)  # a read-only icechunk session refuses by itself

    def _check_supports(self, what: str, key: str) -> None:
        flag = self.supports_writes if what == "write" else self.supports_deletes
        if not flag:
            raise UnsupportedStoreOperationError(
                f"cannot {what} key {key!r}: {type(self.zarr_store).__name__} does not "
                f"support it (supports_{what}s is False) in {self!r}")

    async def _aset(self, key: str, data: bytes) -> None:
        buf = self._zarr.core.buffer.cpu.Buffer.from_bytes(data)
        await self._retrying("writing", key, lambda: self.zarr_store.set(key, buf))

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` with the store's ``set``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The value.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not take writes (``supports_writes`` false).
        zarrfast.storage.RemoteStoreError
            If the zarr-python store fails for good (``RemotePermissionError`` when access
            is denied, ``RetriesExhaustedError`` when transient failures outlast the retry
            policy), naming the key, with the store's exception as ``__cause__``.
            icechunk's own errors are raised as they are.
        """
        validate_key(key)
        data = as_bytes(value)
        self._check_writes(key)
        self._check_supports("write", key)
        self._sync(self._aset(key, data))

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values, their coroutines run concurrently.

        Parameters
        ----------
        items : Mapping[str, bytes-like] or Iterable[tuple[str, bytes-like]]
            The keys and their values (every key is checked first).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not take writes (``supports_writes`` false).
        zarrfast.storage.RemoteStoreError
            If the zarr-python store fails for good (``RemotePermissionError`` when access
            is denied, ``RetriesExhaustedError`` when transient failures outlast the retry
            policy), naming the key, with the store's exception as ``__cause__``.
            icechunk's own errors are raised as they are.
        """
        pairs = [(validate_key(k), as_bytes(v)) for k, v in
                 (items.items() if isinstance(items, Mapping) else items)]
        if not pairs:
            return
        self._check_writes(pairs[0][0])
        self._check_supports("write", pairs[0][0])
        self._sync(gather_limited([self._aset(k, d) for k, d in pairs], self._limit(),
                                  self._requests))

    async def _adelete(self, key: str) -> None:
        # zarr's LocalStore deletes a whole directory for a key naming one: only keys go
        if not await self._aexists(key):
            return
        try:
            await self._retrying("deleting", key, lambda: self.zarr_store.delete(key))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass

    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key (or a prefix) is not an error.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not take deletes (``supports_deletes`` false).
        """
        validate_key(key)
        self._check_writes(key)
        self._check_supports("delete", key)
        self._sync(self._adelete(key))

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many keys, their coroutines run concurrently; missing keys are not an error.

        Parameters
        ----------
        keys : Iterable[str]
            The keys.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not take deletes (``supports_deletes`` false).
        """
        keys = [validate_key(k) for k in keys]
        if not keys:
            return
        self._check_writes(keys[0])
        self._check_supports("delete", keys[0])
        self._sync(gather_limited([self._adelete(k) for k in keys], self._limit(),
                                  self._requests))

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` with the store's own ``delete_dir``.

        ``""`` calls the store's ``clear``.  Either also removes the directories a local
        store leaves behind.

        Parameters
        ----------
        prefix : str
            A node path; ``""`` means every key.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not take deletes (``supports_deletes`` false).
        zarrfast.errors.InvalidKeyError
            If ``prefix`` is not a valid node path.
        """
        self._check_writes(prefix or "<root>")
        validate_prefix(prefix)
        self._check_supports("delete", prefix or "<root>")
        p = prefix.rstrip("/")
        if not p:
            self._call("deleting", "<root>", self.zarr_store.clear)
        elif hasattr(self.zarr_store, "delete_dir"):
            async def delete_dir() -> None:
                try:
                    await self.zarr_store.delete_dir(p)
                except ValueError as e:
                    if "is a file" not in str(e):  # zarr's LocalStore: a key, not a prefix
                        raise

            try:
                self._call("deleting", p + "/", delete_dir)
            except (FileNotFoundError, NotADirectoryError):
                pass  # nothing below a key (obstore: "Not a directory")
        else:  # pragma: no cover - zarr < 3.1
            super().delete_dir(prefix)

    # -- listing --------------------------------------------------------------------
    def _collect(self, label: str, agen_fn: Callable[[], Any]) -> list[str]:
        if not self.supports_listing:
            raise UnsupportedStoreOperationError(
                f"cannot list {label!r}: {type(self.zarr_store).__name__} does not support "
                f"listing (supports_listing is False) in {self!r}")

        async def collect() -> list[str]:
            return [k async for k in agen_fn()]

        try:
            return self._call("listing", label, collect)
        except (FileNotFoundError, NotADirectoryError):
            return []

    @staticmethod
    def _valid(keys: Iterable[str]) -> builtins.set[str]:  # (set: the method below)
        out = set()
        for k in keys:
            try:
                out.add(validate_key(k))
            except ZarrfastError:
                continue  # a name no key could have
        return out

    def list(self) -> Iterator[str]:
        """List every key of the store (its ``list``).

        Returns
        -------
        Iterator[str]
            The keys, sorted; names no key can have are skipped.

        Raises
        ------
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not list (``supports_listing`` false).
        """
        return iter(sorted(self._valid(self._collect("<root>", self.zarr_store.list))))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``.

        Parameters
        ----------
        prefix : str
            A string prefix (``"a/"``: the keys below ``a``).

        Returns
        -------
        Iterator[str]
            The keys, sorted.

        Raises
        ------
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not list (``supports_listing`` false).
        """
        if not listing_prefix(prefix):
            return iter(())
        base = prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else ""
        if base:
            keys = self._collect(base, lambda: self.zarr_store.list_prefix(base))
        else:
            keys = self._collect("<root>", self.zarr_store.list)
        return iter(sorted(k for k in self._valid(keys) if k.startswith(prefix)))

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names of the immediate children below ``prefix`` (the store's ``list_dir``).

        Parameters
        ----------
        prefix : str
            A node path (``""`` for the root).

        Returns
        -------
        Iterator[str]
            The names of keys and "directories" just below ``prefix``, sorted.

        Raises
        ------
        zarrfast.storage.UnsupportedStoreOperationError
            If the zarr-python store does not list (``supports_listing`` false).
        """
        validate_prefix(prefix)
        p = prefix.rstrip("/")
        names = self._collect(p or "<root>", lambda: self.zarr_store.list_dir(p))
        return iter(sorted({n.rstrip("/") for n in names if n and n.rstrip("/")
                            and "/" not in n.rstrip("/")}))


def _rebuild(store: Any, read_only: bool, retry: RetryPolicy,
             max_concurrency: int | None) -> ZarrPythonStore:
    return ZarrPythonStore(store, read_only=read_only, retry=retry,
                           max_concurrency=max_concurrency)
