"""A store on any fsspec file system: ``s3://``, ``gs://``, ``http(s)://``, ``memory://``...

Every request is a coroutine run on the file system's event loop (fsspec's I/O
thread), so :meth:`FsspecStore.get_many`, :meth:`~FsspecStore.set_many` and
:meth:`~FsspecStore.delete_many` issue their requests concurrently: one batch
of requests in flight, not one round trip per key.  A synchronous file system
(``memory://``, ``sftp://``) is wrapped with fsspec's
``AsyncFileSystemWrapper``, which runs its calls on threads.

Transient failures (HTTP 408/429/5xx, connection resets and refusals,
timeouts) are retried with exponential backoff and jitter, bounded by a
:class:`RetryPolicy`; for stores made with :meth:`FsspecStore.from_url` on
S3 this policy replaces botocore's and s3fs's own retries, so the bound is
exact.  Other failures are not retried.  A missing key (HTTP 404) reads as
``None``.  Every error names the URL of the key.

fsspec (and s3fs for ``s3://``) are optional, in the ``remote`` extra:
``pip install "zarrfast[remote]"`` (from a source checkout: ``pip install ".[remote]"``).
Other protocols need their own fsspec package, which the extra does not bring (``gcsfs``
for ``gs://``, ``adlfs`` for ``az://``): install it yourself.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from zarrfast.concurrency import renew_after_fork
from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
    as_bytes,
    check_byte_range,
    listing_prefix,
    many_requests,
    normalize_byte_range,
    validate_key,
    validate_prefix,
)
from zarrfast.storage.errors import (
    MissingDependencyError,
    value_too_large,
)
from zarrfast.storage.remote import (
    RequestLimit,
    RetryPolicy,
    error_code,
    exception_chain,
    gather_limited,
    http_status,
    request_error,
    retrying,
    settled_etag,
)

__all__ = ["FsspecStore", "RetryPolicy"]

T = TypeVar("T")

_EXTRA_HINT = 'pip install "zarrfast[remote]" (from a source checkout: pip install ".[remote]")'

_S3_PROTOCOLS = ("s3", "s3a")


# -- optional dependencies ------------------------------------------------------------


def _precondition_failed(exc: BaseException) -> bool:
    """Whether S3 refused a conditional write (412 ``PreconditionFailed``, or 409
    ``ConditionalRequestConflict`` while another conditional write was in progress)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        code = getattr(e, "response", {}).get("Error", {}).get("Code") \
            if isinstance(getattr(e, "response", None), dict) else None
        if code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return True
        e = e.__cause__ or e.__context__
    return False


def _import_fsspec() -> Any:
    try:
        import fsspec
        import fsspec.asyn
    except ImportError as e:
        raise MissingDependencyError(
            f"remote stores need fsspec, which is not installed ({e}); install it with "
            f"{_EXTRA_HINT}"
        ) from None
    return fsspec


def _missing_package_hint(exc: ImportError) -> str:
    """How to install what an fsspec protocol lacks: the ``remote`` extra brings fsspec
    and s3fs only; any other package (gcsfs, adlfs, aiohttp...) is named to install."""
    missing = ""
    for e in exception_chain(exc):
        name = getattr(e, "name", None)
        if isinstance(e, ImportError) and name:
            missing = name.split(".", 1)[0]
            break
    if missing in ("", "fsspec", "s3fs"):
        return f"install the remote store dependencies with {_EXTRA_HINT}"
    return (f"install it with: pip install {missing} (zarrfast's remote extra brings only "
            f"fsspec and s3fs)")


def _range_status(exc: BaseException) -> bool:
    """Whether ``exc`` says a requested byte range is not satisfiable (HTTP 416)."""
    return any(http_status(e) == 416 or error_code(e) == "InvalidRange"
               for e in exception_chain(exc))


def _has_glob_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


# -- the store -------------------------------------------------------------------------


class FsspecStore(Store):
    """A store of the keys below ``path`` on an fsspec file system.

    Works on any fsspec file system: ``s3://``, ``gs://``, ``http(s)://``,
    ``memory://``...  Every request is a coroutine run on the file system's event loop,
    so ``get_many``, ``set_many`` and ``delete_many`` have a whole batch of requests in
    flight at once (at most ``max_concurrency``).  Transient failures (HTTP 408, 429,
    5xx, connection resets, timeouts) are retried with exponential backoff and jitter,
    bounded by ``retry``; a missing key (HTTP 404) reads as ``None``.  Use
    ``from_url`` to open a URL, as with zarr-python's ``FsspecStore``.  Needs fsspec
    (and s3fs for S3): ``pip install "zarrfast[remote]"`` (from a source checkout:
    ``pip install ".[remote]"``); other protocols need their own package (``gcsfs``
    for ``gs://``...), installed separately.

    Parameters
    ----------
    fs : fsspec.AbstractFileSystem
        An fsspec file system (asynchronous ones such as s3fs are used natively,
        synchronous ones through fsspec's ``AsyncFileSystemWrapper``).  An instance made
        with ``asynchronous=True`` (as zarr-python's ``FsspecStore`` takes them) is
        accepted too: its requests run on fsspec's I/O thread's event loop, so it must
        not also be in use on another loop (s3fs binds its session to the loop of its
        first request).
    path : str, default ""
        The root of the store on ``fs`` (``"bucket/data.zarr"`` for S3).
    read_only : bool, default False
        Refuse writes and deletes.
    retry : RetryPolicy or int or None, default None
        How transient failures are retried: a ``RetryPolicy``, or an ``int``, the
        number of attempts (``None``: ``RetryPolicy()``).
    max_concurrency : int, default 64
        At most this many requests of one batch are in flight at once.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``fs`` is not an fsspec file system, or ``max_concurrency`` is not an int >= 1.
    zarrfast.storage.MissingDependencyError
        If fsspec is not installed.

    Examples
    --------
    >>> import fsspec
    >>> from zarrfast.storage import FsspecStore
    >>> store = FsspecStore(fsspec.filesystem("memory"), "doc-fsspec/data.zarr")
    >>> store
    <FsspecStore(AsyncFileSystemWrapper, /doc-fsspec/data.zarr)>
    >>> a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    >>> a[:] = np.arange(4)
    >>> list(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarrfast.open_array(store, mode="r")[:]
    array([0, 1, 2, 3], dtype=int32)
    >>> store.clear()
    """

    supports_partial_reads = True
    batched_reads = True

    def __init__(
        self,
        fs: Any,
        path: str = "",
        *,
        read_only: bool = False,
        retry: RetryPolicy | int | None = None,
        max_concurrency: int = 64,
    ) -> None:
        super().__init__(read_only=read_only)
        fsspec = _import_fsspec()
        if not isinstance(fs, fsspec.AbstractFileSystem):
            raise ZarrfastError(f"FsspecStore needs an fsspec file system, got {fs!r}")
        if retry is None:
            retry = RetryPolicy()
        elif isinstance(retry, int):
            retry = RetryPolicy(attempts=retry)
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ZarrfastError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        self.fs = fs
        stripped = fs._strip_protocol(path) if path else ""
        # a root of "/" stays "/" (rstrip would make it "", relative to the cwd)
        self.path = stripped.rstrip("/") or ("/" if stripped.startswith("/") else "")
        self.retry = retry
        self.max_concurrency = max_concurrency
        self._requests = RequestLimit()  # (max_concurrency bounds every thread's requests)
        self._afs = fs if fs.async_impl else _wrap_sync(fs)
        #: the event loop the requests run on: the file system's own; for an asynchronous
        #: instance (``asynchronous=True``, made for a caller's event loop, as zarr-python's
        #: FsspecStore wants them), which has none, fsspec's I/O thread's
        self._loop = _loop_of(self._afs)
        self._cat_kwargs = _single_request_kwargs(self._afs)
        #: whether ``_cat_file`` is fsspec's HTTP one, whose responses' ETags
        #: ``_acat_http_tagged`` can keep (:attr:`tagged_reads`)
        self._http_tags = _is_fsspec_http(self._afs)
        self._origin: tuple = ("fs",)
        url = fs.unstrip_protocol(self.path) if self.path else fs.unstrip_protocol("")
        self.url = url.rstrip("/") if self.path else url

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_url(
        cls,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        read_only: bool = False,
        *,
        retry: RetryPolicy | int | None = None,
        max_concurrency: int = 64,
    ) -> FsspecStore:
        """Open the store at a URL, as zarr-python's ``FsspecStore.from_url`` does.

        ``storage_options`` go to ``fsspec.url_to_fs``.  On S3, unless the options
        configure them (``config_kwargs={"retries": ...}``), botocore's and s3fs's own
        retries are turned off (zarrfast's ``retry`` policy replaces them, so its bound is
        exact) and the connection pool is sized to ``max_concurrency``.  Chained URLs
        (``"simplecache::s3://..."``) take their options as fsspec does, unchanged.

        Parameters
        ----------
        url : str
            The URL of the store's root (``"s3://bucket/data.zarr"``,
            ``"memory://data.zarr"``); a path without ``://`` is a local one, as fsspec
            (and zarr-python's ``FsspecStore.from_url``) take it.
        storage_options : Mapping[str, Any] or None, default None
            Options of the file system (credentials, ``endpoint_url``, ``anon``...).
        read_only : bool, default False
            Refuse writes and deletes.
        retry : RetryPolicy or int or None, default None
            How transient failures are retried: a ``RetryPolicy``, or the number of
            attempts (``None``: ``RetryPolicy()``).
        max_concurrency : int, default 64
            At most this many requests of one batch are in flight at once.

        Returns
        -------
        FsspecStore
            The store; its ``url`` is ``url`` without a trailing slash.

        Raises
        ------
        zarrfast.errors.ZarrfastError
            If ``url`` is not a string, or fsspec refuses the ``storage_options``.
        zarrfast.storage.MissingDependencyError
            If fsspec, or the package the URL's protocol needs (s3fs, gcsfs...), is not
            installed.

        Examples
        --------
        >>> from zarrfast.storage import FsspecStore
        >>> store = FsspecStore.from_url("memory://doc-from-url/data.zarr")
        >>> store.url
        'memory://doc-from-url/data.zarr'
        >>> store.set("zarr.json", b"{}")
        >>> list(store.list())
        ['zarr.json']
        >>> FsspecStore.from_url("memory://doc-from-url/data.zarr", read_only=True).read_only
        True
        >>> store.clear()
        """
        fsspec = _import_fsspec()
        if not isinstance(url, str):
            raise ZarrfastError(f"FsspecStore.from_url needs a URL (a str), got {url!r}")
        user_options = dict(storage_options or {})
        # chained URLs ("simplecache::s3://...") take per-layer options: left alone; a
        # path without a protocol is fsspec's local file system
        protocol = ("" if "::" in url else url.split("://", 1)[0] if "://" in url
                    else "file")
        options, take_over = _effective_options(protocol, user_options, max_concurrency)
        try:
            fs, path = _url_to_fs(fsspec, url, options, take_over)
        except ImportError as e:
            raise MissingDependencyError(
                f"cannot open {url!r}: a package it needs is missing ({e}); "
                f"{_missing_package_hint(e)}"
            ) from None
        except (TypeError, ValueError) as e:
            raise ZarrfastError(f"cannot open {url!r} with storage_options "
                                f"{sorted(user_options)}: {e}") from e
        store = cls(fs, path, read_only=read_only, retry=retry, max_concurrency=max_concurrency)
        store._origin = ("url", url, user_options)
        store.url = url.rstrip("/")
        return store

    def __reduce__(self):
        if self._origin[0] == "url":
            _, url, options = self._origin
            return (_rebuild_from_url, (url, options, self.read_only, self.retry,
                                        self.max_concurrency))
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return (_rebuild_from_fs, (protocol, self.fs.storage_args, dict(self.fs.storage_options),
                                   self.path, self.read_only, self.retry, self.max_concurrency))

    def _clone(self, read_only: bool) -> FsspecStore:
        clone = FsspecStore(self.fs, self.path, read_only=read_only, retry=self.retry,
                            max_concurrency=self.max_concurrency)
        clone._origin, clone.url = self._origin, self.url
        return clone

    def with_read_only(self, read_only: bool = True) -> FsspecStore:
        """Return a view of this store (same file system and path) with another read-only flag.

        Parameters
        ----------
        read_only : bool, default True
            The flag of the view.

        Returns
        -------
        FsspecStore
            A new store object on the same keys.
        """
        return self._clone(read_only)

    def __repr__(self) -> str:
        # as zarr-python's, which also prints this way in the reprs of arrays and groups
        # (``<Array <FsspecStore(S3FileSystem, bucket/x)>/a ...>``); ``url`` has the URL.
        # zarr-python names the asynchronous file system its requests go to: for a
        # synchronous one (``memory://``), fsspec's AsyncFileSystemWrapper around it
        return f"<FsspecStore({type(self._afs).__name__}, {self.path or '/'})>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FsspecStore)
            and other.fs == self.fs
            and other.path == self.path
            and other.read_only == self.read_only
        )

    def __hash__(self) -> int:
        return hash((FsspecStore, self.path, self.read_only))  # as __eq__: fs and path

    # -- paths and errors -------------------------------------------------------------
    def _full(self, key: str) -> str:
        validate_key(key)
        return f"{self.path.rstrip('/')}/{key}" if self.path else key

    def _key_url(self, key: str) -> str:
        return f"{self.url}/{key}"

    def _failure(self, action: str, key: str, exc: BaseException, kind: str,
                 attempts: int, waited: float) -> ZarrfastError:
        return request_error(action, f"{self._key_url(key)} (key {key!r})",
                             f"{type(exc).__name__}: {exc}", kind, attempts, waited)

    # -- the event loop ------------------------------------------------------------
    def _run(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Run a coroutine on the file system's loop and wait for it."""
        import fsspec.asyn

        async def main() -> T:
            return await coro_fn()

        return fsspec.asyn.sync(self._loop, main)

    async def _retrying(self, action: str, key: str, call: Callable[[], Awaitable[T]]) -> T:
        """Await ``call()``, retrying transient failures.  Missing-key errors
        (``FileNotFoundError``...) propagate for the caller to handle."""
        def failure(e: BaseException, kind: str, attempts: int, waited: float) -> BaseException:
            return self._failure(action, key, e, kind, attempts, waited)

        return await retrying(call, self.retry, failure=failure,
                              missing=lambda e: FileNotFoundError(self._key_url(key)))

    async def _gather(self, coros: Iterable[Awaitable[T]]) -> list[T]:
        """Await all, at most ``max_concurrency`` at a time; every one finishes before
        the first error (in order) is raised."""
        return await gather_limited(coros, self.max_concurrency, self._requests)

    # -- reads --------------------------------------------------------------------
    async def _aget(self, key: str, path: str, byte_range: ByteRequest | None) -> bytes | None:
        return (await self._aget_tagged(key, path, byte_range, tagged=False))[0]

    async def _aget_tagged(self, key: str, path: str, byte_range: ByteRequest | None,
                           tagged: bool = True) -> tuple[bytes | None, str | None]:
        """The value (or bytes of it) of ``key``, and with ``tagged`` the strong ``ETag``
        of the response it came in (``None``: none, a weak one, or not ``tagged``)."""
        start, end = _range_args(byte_range)
        if start is not None and end is not None and end <= start:
            # nothing to fetch (S3 has no empty range): b"" if the key exists
            return (b"" if await self._ais_file(key, path) else None), None

        async def fetch() -> tuple[bytes, str | None]:
            try:
                if tagged:
                    value, tag = await self._acat_http_tagged(path, start, end)
                else:
                    value, tag = await self._afs._cat_file(path, start=start, end=end,
                                                           **self._cat_kwargs), None
            except Exception as e:
                if byte_range is not None and _range_status(e):
                    return await self._clipped_empty(path, byte_range, e), None
                raise
            limit = _max_length(byte_range)
            if limit is not None and len(value) > limit:
                assert byte_range is not None  # (a limit is a range's)
                return await self._whole_or_error(path, byte_range, value), None
            return value, tag

        try:
            value, tag = await self._retrying("reading", key, fetch)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None, None
        return (bytes(value) if not isinstance(value, bytes) else value), tag

    async def _acat_http_tagged(self, path: str, start: int | None, end: int | None
                                ) -> tuple[bytes, str | None]:
        """fsspec's ``HTTPFileSystem._cat_file`` (one GET, its session and options) that
        also keeps the response's strong ``ETag``, when it names one version for good
        (:func:`~zarrfast.storage.remote.settled_etag`)."""
        afs = self._afs
        kw = afs.kwargs.copy()
        if start is not None:
            headers = dict(kw.pop("headers", None) or {})
            headers["Range"] = _range_header(start, end)
            kw["headers"] = headers
        session = await afs.set_session()
        async with session.get(afs.encode_url(path), **kw) as r:
            out = await r.read()
            afs._raise_not_found_for_status(r, path)
            return out, settled_etag(r.headers.get("ETag"), r.headers.get("Last-Modified"),
                                     r.headers.get("Date"))

    async def _whole_or_error(self, path: str, byte_range: ByteRequest, value: Any) -> bytes:
        """A body longer than the range asked for: the whole value when the server
        ignored ``Range`` (it is as long as the value), sliced here; otherwise a broken
        response, retried like a dropped connection (never returned)."""
        info = await self._afs._info(path)
        size = int(info.get("size") or -1)
        if len(value) == size:
            lo, hi = normalize_byte_range(byte_range, size)
            return bytes(memoryview(value)[lo:hi])
        raise _BadBody(f"asked {byte_range} of {path} and got {len(value)} bytes, more than "
                       f"the range holds (the value has {size} bytes)")

    async def _clipped_empty(self, path: str, byte_range: ByteRequest, exc: Exception) -> bytes:
        """An unsatisfiable range (HTTP 416) of an existing value: the empty clipped
        slice, as the store contract says, or the original error if it is not empty."""
        info = await self._afs._info(path)
        if info.get("type") != "file":
            raise FileNotFoundError(path) from exc
        start, stop = normalize_byte_range(byte_range, int(info.get("size") or 0))
        if stop > start:
            raise exc
        return b""

    async def _ainfo(self, key: str, path: str) -> dict | None:
        self.fs.invalidate_cache(path)
        try:
            return await self._retrying("inspecting", key, lambda: self._afs._info(path))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    async def _ais_file(self, key: str, path: str) -> bool:
        info = await self._ainfo(key, path)
        return info is not None and info.get("type") == "file"

    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """Return the value of ``key`` (or the requested bytes of it), usually in one GET.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        byte_range : ByteRequest or None, default None
            A ``RangeByteRequest``, ``OffsetByteRequest`` or ``SuffixByteRequest``;
            ``None`` for the whole value.

        Returns
        -------
        bytes or None
            The value (or the range of it, clipped like a slice), ``None`` if missing.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If a key is not valid.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        path = self._full(key)
        check_byte_range(byte_range)
        return self._run(lambda: self._aget(key, path, byte_range))

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        """Return the values of many keys, their requests in flight concurrently.

        Every request finishes before the first failure (in order) is raised.

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None] or None, default None
            One byte range (or ``None``) per key; ``None`` for whole values.

        Returns
        -------
        list[bytes or None]
            The values, in order; ``None`` for missing keys.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If a key is not valid.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        keys, ranges = many_requests(keys, byte_ranges)
        paths = [self._full(k) for k in keys]  # validate every key before any request
        for r in ranges:
            check_byte_range(r)
        if not keys:
            return []
        return self._run(lambda: self._gather(
            self._aget(k, p, r) for k, p, r in zip(keys, paths, ranges, strict=True)))

    @property
    def tagged_reads(self) -> bool:  # type: ignore[override]
        """Whether reads tell the version they came from (the strong ``ETag`` of each
        response): over HTTP(S), fsspec's ``HTTPFileSystem``, only.

        A shard's index is then kept, and each read of its inner chunks checked against
        the version the index came from.  Not for a subclass that changes ``get`` or
        ``get_many`` (whose reads the shard paths must then go through), nor for a file
        system whose ``_cat_file`` is not fsspec's HTTP one.
        """
        return (self._http_tags and type(self).get is FsspecStore.get
                and type(self).get_many is FsspecStore.get_many)

    def get_tagged(self, key: str, byte_range: ByteRequest | None = None
                   ) -> tuple[Any, Hashable | None]:
        """:meth:`get` and the strong ``ETag`` of the response (``None``: the server
        sent none or a weak one, or the store cannot tell: see :attr:`tagged_reads`).

        Parameters
        ----------
        key : str
            The key.
        byte_range : ByteRequest or None, default None
            The bytes to read, as :meth:`get` takes them.

        Returns
        -------
        tuple
            ``(value, etag)``.
        """
        if not self.tagged_reads:
            return super().get_tagged(key, byte_range)
        path = self._full(key)
        check_byte_range(byte_range)
        return self._run(lambda: self._aget_tagged(key, path, byte_range))

    def get_many_tagged(self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None]
                        ) -> tuple[list[Any], list[Hashable | None]]:
        """:meth:`get_tagged` of many values, their requests in flight concurrently (at
        most ``max_concurrency``), each its own request (so that each says its version).

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None]
            One byte range (or ``None``) per key.

        Returns
        -------
        tuple
            ``(values, etags)``, one of each per key.
        """
        if not self.tagged_reads:
            return super().get_many_tagged(keys, byte_ranges)
        keys, ranges = many_requests(keys, byte_ranges)
        paths = [self._full(k) for k in keys]  # validate every key before any request
        for r in ranges:
            check_byte_range(r)
        if not keys:
            return [], []
        got = self._run(lambda: self._gather(
            self._aget_tagged(k, p, r) for k, p, r in zip(keys, paths, ranges, strict=True)))
        return [g[0] for g in got], [g[1] for g in got]

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value (a file, not a directory).

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Returns
        -------
        bool
            ``True`` if ``key`` holds a value.
        """
        path = self._full(key)
        return self._run(lambda: self._ais_file(key, path))

    def getsize(self, key: str) -> int:
        """Return the size of the value of ``key``, from the file system's ``info``.

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
        path = self._full(key)
        info = self._run(lambda: self._ainfo(key, path))
        if info is None or info.get("type") != "file":
            raise FileNotFoundError(f"key {key!r} not found in {self!r} ({self._key_url(key)})")
        return int(info.get("size") or 0)

    # -- writes -------------------------------------------------------------------
    async def _aset(self, key: str, path: str, data: bytes) -> None:
        try:
            await self._retrying("writing", key, lambda: self._afs._pipe_file(path, data))
        except (FileNotFoundError, NotADirectoryError) as e:
            # a missing bucket (or parent directory): not a missing key, a failed write
            raise self._failure("writing", key, e, "fatal", 1, 0.0) from e

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Store ``value`` under ``key`` (one PUT).

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
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        self._check_writable(key)
        path = self._full(key)
        data = as_bytes(value)
        self._run(lambda: self._aset(key, path, data))

    # -- conditional writes (S3): a shard's partial writes from processes sharing no lock
    @property
    def conditional_writes(self) -> bool:  # type: ignore[override]
        """Whether writes can be conditional: on S3 (s3fs) only.

        S3 makes a write conditional on the version read (``If-Match``) or on the key
        being missing (``If-None-Match``); other file systems here do not.
        """
        return self._afs is self.fs and hasattr(self.fs, "_call_s3")

    def get_versioned(self, key: str, *, limit: int | None = None
                      ) -> tuple[Any, Hashable | None]:
        """Return the value of ``key`` and its ETag (S3 only).

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int or None, default None
            Refuse a value larger than this many bytes before its body is read.

        Returns
        -------
        tuple
            ``(value, etag)``; ``(None, None)`` when the key is missing.

        Raises
        ------
        NotImplementedError
            If the file system makes no conditional writes (``conditional_writes``).
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit`` bytes.
        """
        if not self.conditional_writes:
            return super().get_versioned(key, limit=limit)
        bucket, _, name = self._full(key).partition("/")

        async def fetch() -> tuple[bytes | None, str, int]:
            out = await self.fs._call_s3("get_object", Bucket=bucket, Key=name)
            body = out["Body"]
            try:
                size = int(out.get("ContentLength", -1))
                if limit is not None and size > limit:
                    return None, out["ETag"], size  # refused before the body is read
                return await body.read(), out["ETag"], size
            finally:
                body.close()

        try:
            data, etag, size = self._run(lambda: self._retrying("reading", key, fetch))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None, None
        if data is None:
            assert limit is not None  # (fetch refuses a body only past a limit)
            raise value_too_large(key, size, limit)
        return data, etag

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
        """Write ``value`` to ``key`` only if its ETag is still ``version`` (S3 only).

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The new value.
        version : Hashable or None
            The ETag ``get_versioned`` gave; ``None``: write only if ``key`` is missing.

        Returns
        -------
        bool
            Whether ``value`` was written (``False``: another writer's value is there now,
            or the key was deleted meanwhile; nothing was written).

        Raises
        ------
        NotImplementedError
            If the file system makes no conditional writes (``conditional_writes``).
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        """
        if not self.conditional_writes:
            return super().set_if_version(key, value, version)
        self._check_writable(key)
        path = self._full(key)
        bucket, _, name = path.partition("/")
        data = as_bytes(value)
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}

        async def put() -> bool:
            try:
                await self.fs._call_s3("put_object", Bucket=bucket, Key=name, Body=data,
                                       **condition)
            except Exception as e:
                if _precondition_failed(e) or (version is not None
                                               and isinstance(e, FileNotFoundError)):
                    return False  # another writer's value is there now (or none is)
                raise
            return True

        try:
            return self._run(lambda: self._retrying("writing", key, put))
        except (FileNotFoundError, NotADirectoryError) as e:  # a missing bucket
            raise self._failure("writing", key, e, "fatal", 1, 0.0) from e
        finally:
            self.fs.invalidate_cache(path)

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values, their requests in flight concurrently.

        Parameters
        ----------
        items : Mapping[str, bytes-like] or Iterable[tuple[str, bytes-like]]
            The keys and their values (every key is checked before any request).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        self._check_writable(pairs[0][0] if pairs else None)
        work = [(k, self._full(k), as_bytes(v)) for k, v in pairs]  # validate first
        if not work:
            return
        self._run(lambda: self._gather(self._aset(k, p, d) for k, p, d in work))

    async def _adelete(self, key: str, path: str) -> None:
        try:
            await self._retrying("deleting", key, lambda: self._afs._rm_file(path))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass

    def delete(self, key: str) -> None:
        """Delete ``key``; deleting a missing key is not an error.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        """
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many keys; missing keys are not an error.

        On S3 the keys go in ``DeleteObjects`` requests of 1000 keys, whose per-key
        errors are checked; elsewhere one request per key, concurrently.

        Parameters
        ----------
        keys : Iterable[str]
            The keys.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        keys = list(keys)
        self._check_writable(keys[0] if keys else None)
        paths = [self._full(k) for k in keys]
        if not keys:
            return
        if self._afs is self.fs and hasattr(self.fs, "_bulk_delete") and not any(
                _has_glob_magic(p) for p in paths):
            # S3: one DeleteObjects request per 1000 keys; missing keys are no error
            self._run(lambda: self._abulk_delete(keys, paths))
            return
        self._run(lambda: self._gather(self._adelete(k, p) for k, p in zip(keys, paths,
                                                                            strict=True)))

    async def _abulk_delete(self, keys: list[str], paths: list[str]) -> None:
        """DeleteObjects, checking the per-key errors of the reply (s3fs' own bulk
        delete sends ``Quiet`` and ignores them, so a refused delete looked done)."""
        by_bucket: dict[str, list[tuple[str, str]]] = {}
        for key, path in zip(keys, paths, strict=True):
            bucket, _, name = path.partition("/")
            by_bucket.setdefault(bucket, []).append((key, name))
        for bucket, items in by_bucket.items():
            for lo in range(0, len(items), 1000):
                batch = items[lo:lo + 1000]
                label = batch[0][0] if len(batch) == 1 else (
                    f"{batch[0][0]} (and {len(batch) - 1} more)")
                request = {"Objects": [{"Key": name} for _, name in batch], "Quiet": True}
                try:
                    out = await self._retrying("deleting", label, functools.partial(
                        self.fs._call_s3, "delete_objects", Bucket=bucket, Delete=request))
                except FileNotFoundError:
                    continue  # no such bucket: nothing to delete
                self.fs.invalidate_cache(bucket)
                failed = [e for e in out.get("Errors", []) if e.get("Code") != "NoSuchKey"]
                if failed:
                    names = {name: key for key, name in batch}
                    e = failed[0]
                    key = names.get(e.get("Key"), str(e.get("Key")))
                    kind = "denied" if e.get("Code") == "AccessDenied" else "fatal"
                    raise self._failure(
                        "deleting", key, OSError(f"{e.get('Code')}: {e.get('Message')} "
                                                 f"({len(failed)} of {len(batch)} keys "
                                                 f"refused)"), kind, 1, 0.0)

    # -- listing ------------------------------------------------------------------
    def _key_of(self, full: str) -> str | None:
        """The key of a listed path, or ``None`` for paths outside the root or names
        no key could have (``..`` segments and the like, possible on S3)."""
        full = full.rstrip("/") if full.endswith("/") and len(full) > 1 else full
        base = self.path.rstrip("/") + "/" if self.path else ""
        if base and not full.startswith(base):
            return None
        key = full[len(base):].lstrip("/") if not base else full[len(base):]
        try:
            return validate_key(key)
        except ZarrfastError:
            return None

    def list(self) -> Iterator[str]:
        """List every key below the store's root (one recursive listing).

        Returns
        -------
        Iterator[str]
            The keys, sorted; paths no key can have are skipped.
        """
        return self.list_prefix("")

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
        """
        if not listing_prefix(prefix):
            return iter(())
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._full(base) if base else self.path
        label = base or "<root>"

        async def find() -> list[str]:
            self.fs.invalidate_cache(start)
            try:
                return await self._retrying("listing", label,
                                            lambda: self._afs._find(start or "/"))
            except (FileNotFoundError, NotADirectoryError):
                return []

        keys = {k for k in map(self._key_of, self._run(find)) if k is not None}
        return iter(sorted(k for k in keys if k.startswith(prefix)))

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names of the immediate children below ``prefix`` (one ``ls``).

        Parameters
        ----------
        prefix : str
            A node path (``""`` for the root).

        Returns
        -------
        Iterator[str]
            The names of keys and "directories" just below ``prefix``, sorted.
        """
        validate_prefix(prefix)
        p = prefix.rstrip("/")
        where = self._full(p) if p else self.path
        label = p or "<root>"

        async def ls() -> list[Any]:
            self.fs.invalidate_cache(where)
            try:
                return await self._retrying("listing", label,
                                            lambda: self._afs._ls(where or "/", detail=True))
            except (FileNotFoundError, NotADirectoryError):
                return []

        names = set()
        for entry in self._run(ls):
            key = self._key_of(entry["name"] if isinstance(entry, Mapping) else entry)
            if key is None:
                continue
            if p and not key.startswith(p + "/"):
                continue  # `where` is a key: ls listed the key itself
            names.add(key[len(p) + 1:].split("/", 1)[0] if p else key.split("/", 1)[0])
        return iter(sorted(names))

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix``, listed first and deleted 1000 at a time.

        Parameters
        ----------
        prefix : str
            A node path; ``""`` means every key.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.errors.InvalidKeyError
            If ``prefix`` is not a valid node path.
        """
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        keys = list(self.list_prefix(p + "/" if p else ""))
        for i in range(0, len(keys), 1000):
            self.delete_many(keys[i:i + 1000])


# -- helpers -----------------------------------------------------------------------------


def _effective_options(protocol: str, options: dict[str, Any],
                       max_concurrency: int) -> tuple[dict[str, Any], bool]:
    """The options given to fsspec: for S3, zarrfast's defaults where the user set none.
    Returns ``(options, whether zarrfast takes over retrying)``."""
    if protocol not in _S3_PROTOCOLS:
        return options, False
    out = dict(options)
    config = dict(out.get("config_kwargs") or {})
    take_over = "retries" not in config
    if take_over:
        config["retries"] = {"total_max_attempts": 1}
    config.setdefault("max_pool_connections", max_concurrency)
    out["config_kwargs"] = config
    if take_over:
        out["skip_instance_cache"] = True  # we change this instance's retry count
    return out, take_over


#: file systems whose retry settings zarrfast changed, by (pid, protocol, options):
#: fsspec's own instance cache cannot hold them (other users would share the change),
#: and a new S3 client per open costs a large fraction of a second
_OWN_FS: dict[tuple, Any] = {}
_OWN_FS_LOCK = threading.Lock()
renew_after_fork(globals(), "_OWN_FS_LOCK", threading.Lock)


def _url_to_fs(fsspec: Any, url: str, options: dict[str, Any], take_over: bool) -> Any:
    """``fsspec.url_to_fs``; a file system zarrfast takes retrying over from is made
    once per process and set of options, and its s3fs retry loop is turned off."""
    if not take_over:
        return fsspec.url_to_fs(url, **options)
    protocol = url.split("://", 1)[0]
    cache_key = (os.getpid(), protocol, fsspec.utils.tokenize(options))
    with _OWN_FS_LOCK:
        fs = _OWN_FS.get(cache_key)
        if fs is None:
            fs, _ = fsspec.url_to_fs(url, **options)
            fs.retries = 1  # s3fs's own retry loop: zarrfast's policy replaces it
            _OWN_FS[cache_key] = fs
    return fs, fs._strip_protocol(url)


def _loop_of(afs: Any) -> Any:
    """The loop to run ``afs``'s coroutines on (its own, else fsspec's I/O loop)."""
    import fsspec.asyn

    loop = getattr(afs, "_loop", None) if getattr(afs, "asynchronous", False) else afs.loop
    return loop if loop is not None else fsspec.asyn.get_loop()


def _wrap_sync(fs: Any) -> Any:
    """An async view of a synchronous file system (its calls run on threads)."""
    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

    return AsyncFileSystemWrapper(fs, asynchronous=False)


def _single_request_kwargs(afs: Any) -> dict[str, Any]:
    """Keyword arguments that make ``_cat_file`` one GET (s3fs otherwise asks for the
    size first to split big reads)."""
    try:
        params = inspect.signature(afs._cat_file).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return {}
    return {"max_concurrency": 1} if "max_concurrency" in params else {}


def _is_fsspec_http(afs: Any) -> bool:
    """Whether ``afs`` is fsspec's ``HTTPFileSystem`` (or a subclass keeping its
    ``_cat_file``): one GET per read, on an aiohttp session."""
    http = sys.modules.get("fsspec.implementations.http")  # (imported if afs is one)
    return (http is not None and isinstance(afs, http.HTTPFileSystem)
            and type(afs)._cat_file is http.HTTPFileSystem._cat_file)


def _range_header(start: int, end: int | None) -> str:
    """The ``Range`` header of ``_range_args``' ``(start, end)``: a suffix when
    ``start`` is negative (``end`` then ``None``), else ``end`` exclusive or open."""
    if start < 0:
        return f"bytes=-{-start}"
    return f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"


class _BadBody(ConnectionError):
    """A response body that does not hold the bytes asked for: retried as transient."""


def _max_length(byte_range: ByteRequest | None) -> int | None:
    """The most bytes a response to ``byte_range`` may hold (``None``: unknown)."""
    if isinstance(byte_range, RangeByteRequest):
        return byte_range.end - byte_range.start
    if isinstance(byte_range, SuffixByteRequest):
        return byte_range.suffix
    return None


def _range_args(byte_range: ByteRequest | None) -> tuple[int | None, int | None]:
    """``(start, end)`` for ``_cat_file``; ``end <= start`` marks an empty request."""
    if byte_range is None:
        return None, None
    if isinstance(byte_range, RangeByteRequest):
        return byte_range.start, byte_range.end
    if isinstance(byte_range, OffsetByteRequest):
        return byte_range.offset, None
    if byte_range.suffix == 0:
        return 0, 0
    return -byte_range.suffix, None


def _rebuild_from_url(url: str, options: dict, read_only: bool, retry: RetryPolicy,
                      max_concurrency: int) -> FsspecStore:
    return FsspecStore.from_url(url, options, read_only, retry=retry,
                                max_concurrency=max_concurrency)


def _rebuild_from_fs(protocol: str, args: tuple, options: dict, path: str, read_only: bool,
                     retry: RetryPolicy, max_concurrency: int) -> FsspecStore:
    fsspec = _import_fsspec()
    fs = fsspec.get_filesystem_class(protocol)(*args, **options)
    return FsspecStore(fs, path, read_only=read_only, retry=retry,
                       max_concurrency=max_concurrency)
