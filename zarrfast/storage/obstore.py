"""A store on obstore (Rust's ``object_store``): S3, GCS, Azure, HTTP and local paths.

The fast path for remote reads.  Every request is one of obstore's coroutines run
on zarrfast's event loop (:mod:`zarrfast.storage.remote`), so :meth:`ObjectStore.get_many`
has a whole batch in flight at once (at most ``reads_in_flight``); several byte
ranges of one key in a batch (the sharded engine's coalesced inner chunks) go out
as one ``get_ranges`` call, which merges nearby ranges into one request.  No request
is made beyond the GET itself (no HEAD before a GET, no listing); only an empty or
unsatisfiable range asks for the value's size.

Stores made with :meth:`ObjectStore.from_url` turn obstore's own retries off
(``max_retries=0``) and set client timeouts, so the :class:`RetryPolicy` bound is
exact and a stalled server is an error, never a hang.  A body shorter or longer
than the range the server says it sent is detected and retried like a dropped
connection.  Every error names the URL of the key.

obstore is optional: ``pip install "zarrfast[obstore]"`` (from a source checkout:
``pip install ".[obstore]"``).
"""

from __future__ import annotations

import builtins
import functools
import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from zarrfast import config
from zarrfast.concurrency import map_requests, renew_after_fork
from zarrfast.errors import ZarrfastError
from zarrfast.storage.base import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    as_bytes,
    check_byte_range,
    listing_prefix,
    many_requests,
    normalize_byte_range,
    validate_key,
    validate_prefix,
)
from zarrfast.storage.errors import (
    ForkedRuntimeError,
    MissingDependencyError,
    RemoteStoreError,
    StorageOptionsError,
    value_too_large,
)
from zarrfast.storage.remote import (
    RequestLimit,
    RetryPolicy,
    exception_chain,
    gather_limited,
    request_error,
    retrying,
    retrying_sync,
    run,
    settled_etag,
    status_kind,
)
from zarrfast.storage.remote import classify as classify_common
from zarrfast.storage.remote import strong_etag as _strong_tag

if TYPE_CHECKING:  # (obstore is optional: its types only)
    from obstore import GetOptions, ListResult, ObjectMeta
    from obstore.store import ObjectStore as ObstoreStore
    from obstore.store import S3Store

__all__ = ["ObjectStore", "classify", "translate_storage_options"]

T = TypeVar("T")
_logger = logging.getLogger("zarrfast.storage")

_EXTRA_HINT = 'pip install "zarrfast[obstore]" (from a source checkout: pip install ".[obstore]")'

#: seconds: the default time limit of one request (obstore's client ``timeout``)
DEFAULT_TIMEOUT = 30.0

_STATUS_RE = re.compile(r"status code: (\d{3})")
_TRANSIENT_WORDS = ("timed out", "timeout", "error sending request", "connection reset",
                    "connection refused", "connection closed", "broken pipe",
                    "error decoding response body", "incomplete", "unexpected eof",
                    "end of file before message length reached", "hyper", "io error",
                    "body error")
_RANGE_WORDS = ("InvalidRange", "Invalid range", "Range Not Satisfiable", "Requested range was invalid",
                "status code: 416")

#: obstore's (S3) configuration keys that s3fs-style options translate to
_S3FS_KEYS = {"key": "access_key_id", "secret": "secret_access_key",
              "token": "session_token", "endpoint_url": "endpoint"}
_S3FS_CLIENT_KWARGS = {"endpoint_url": "endpoint", "region_name": "region"}


def _import_obstore() -> Any:
    try:
        import obstore
        import obstore.store
    except ImportError as e:
        raise MissingDependencyError(
            f"ObjectStore needs obstore, which is not installed ({e}); install it with "
            f"{_EXTRA_HINT}") from None
    return obstore


# -- failures -----------------------------------------------------------------------


class _BadBody(ConnectionError):
    """The body of a response does not hold the bytes its headers promise (a dropped
    connection, a broken proxy): retried like a reset connection."""


def _status(exc: BaseException) -> int | None:
    m = _STATUS_RE.search(_first_lines(exc))
    return int(m.group(1)) if m else None


def _is_obstore_error(exc: BaseException) -> bool:
    try:
        from obstore.exceptions import BaseError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, BaseError)


def _ignores_range(exc: BaseException) -> bool:
    """Whether the server answered a ranged GET with the whole value (obstore refuses
    the answer: S3 says "non-partial response", HTTP "Range request not supported")."""
    text = _first_lines(exc)
    return "non-partial response" in text or "Range request not supported" in text


def _is_bad_range(exc: BaseException) -> bool:
    text = str(exc)
    return any(w in text for w in _RANGE_WORDS) or "Range started at" in text


def classify(exc: BaseException) -> str:
    """:func:`zarrfast.storage.remote.classify`, knowing obstore's exceptions:
    ``NotFoundError`` is missing, ``PermissionDeniedError``/``UnauthenticatedError``
    denied, a ``GenericError`` by the HTTP status or the connection failure its message
    names."""
    for e in exception_chain(exc):
        name = type(e).__name__
        if isinstance(e, FileNotFoundError) or name == "NotFoundError":
            return "missing"
        if name in ("PermissionDeniedError", "UnauthenticatedError"):
            return "denied"
        if isinstance(e, _BadBody):
            return "transient"
        if _is_obstore_error(e):
            if "(os error 20)" in str(e) or "(os error 21)" in str(e):
                return "missing"  # ENOTDIR/EISDIR of a local store: a prefix is no key
            status = _status(e)
            if status is not None:
                return status_kind(status)
            text = _first_lines(e).lower()  # not the debug dump (it names its timeouts)
            if any(w in text for w in _TRANSIENT_WORDS):
                return "transient"
            return "fatal"
    return classify_common(exc)


# -- storage options -----------------------------------------------------------------


def translate_storage_options(url: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """obstore's keyword arguments for ``from_url(url, **kwargs)``: obstore's own keys
    pass as they are, the s3fs-style ``key``/``secret``/``token``/``anon``/
    ``endpoint_url``/``client_kwargs`` are translated; anything else is refused with a
    :class:`StorageOptionsError` naming the key."""
    out: dict[str, Any] = {}
    client: dict[str, Any] = {}
    protocol = url.split("://", 1)[0].lower() if "://" in url else ""
    for k, v in dict(options or {}).items():
        if k in _S3FS_KEYS:
            out[_S3FS_KEYS[k]] = v
        elif k == "anon":
            if v:
                out["skip_signature"] = True
        elif k == "client_kwargs":
            if not isinstance(v, Mapping):
                raise StorageOptionsError(f"storage option 'client_kwargs' must be a dict, "
                                          f"got {v!r}")
            for ck, cv in v.items():
                if ck not in _S3FS_CLIENT_KWARGS:
                    raise StorageOptionsError(
                        f"storage option client_kwargs[{ck!r}] has no obstore equivalent "
                        f"(translated: {sorted(_S3FS_CLIENT_KWARGS)}); use FsspecStore for "
                        f"{url!r}")
                out[_S3FS_CLIENT_KWARGS[ck]] = cv
        elif k == "client_options":
            if not isinstance(v, Mapping):
                raise StorageOptionsError(f"storage option 'client_options' must be a dict, "
                                          f"got {v!r}")
            client.update(v)
        elif k in ("config_kwargs", "skip_instance_cache", "use_listings_cache",
                   "listings_expiry_time", "default_block_size", "default_fill_cache",
                   "cache_regions", "requester_pays", "s3_additional_kwargs",
                   "use_ssl", "profile", "asynchronous", "loop"):
            raise StorageOptionsError(
                f"storage option {k!r} is an fsspec/s3fs option with no obstore equivalent; "
                f"use FsspecStore.from_url for {url!r} (or config remote_store='fsspec')")
        elif not isinstance(k, str) or not k.replace("_", "").isalnum():
            raise StorageOptionsError(f"storage option {k!r} is not a valid option name")
        else:
            out[k] = v  # obstore's own configuration key: obstore checks it
    endpoint = out.get("endpoint")
    if isinstance(endpoint, str) and endpoint.startswith("http://"):
        client.setdefault("allow_http", True)
    if protocol in ("s3", "s3a") and endpoint and "region" not in out:
        out["region"] = "us-east-1"
    if client:
        out["client_options"] = client
    return out


# -- the store -------------------------------------------------------------------------


#: the process whose requests started obstore's runtime (``ObjectStore._check_runtime``;
#: a forked child inherits it, and its own pid differs)
_RUNTIME_PID: int | None = None

#: obstore stores made by from_url, by URL and options: making one builds an HTTP client
#: (TLS roots, connection pool), ~7 ms; they are immutable and safe to share across
#: threads, as fsspec shares its file system instances
_CLIENTS: OrderedDict[str, Any] = OrderedDict()
_CLIENTS_LOCK = threading.Lock()
renew_after_fork(globals(), "_CLIENTS_LOCK", threading.Lock)
_CLIENTS_MAX = 64


def _client(obstore: Any, url: str, kwargs: dict[str, Any]) -> Any:
    if url.lower().startswith("memory:"):
        return obstore.store.from_url(url, **kwargs)  # (each one holds its own data)
    try:
        ident = json.dumps([url, kwargs], sort_keys=True)
    except (TypeError, ValueError):  # options that are not JSON (a credential provider)
        return obstore.store.from_url(url, **kwargs)
    with _CLIENTS_LOCK:
        found = _CLIENTS.get(ident)
        if found is not None:
            _CLIENTS.move_to_end(ident)
            return found
    made = obstore.store.from_url(url, **kwargs)
    with _CLIENTS_LOCK:
        _CLIENTS[ident] = made
        while len(_CLIENTS) > _CLIENTS_MAX:
            _CLIENTS.popitem(last=False)
    return made


class ObjectStore(Store):
    """A store on an obstore store: S3, GCS, Azure, HTTP, a local directory or memory.

    The fast path for remote reads.  Wraps an ``obstore.store.S3Store``, ``GCSStore``,
    ``AzureStore``, ``HTTPStore``, ``LocalStore`` or ``MemoryStore``; its keys are those
    below the obstore store's prefix.  ``get_many`` has a whole batch of requests in
    flight at once (at most ``reads_in_flight``), and several byte ranges of one key in
    a batch (a shard's inner chunks) go out as one ``get_ranges`` call, which merges
    nearby ranges.  Values are returned as read-only memoryviews of obstore's buffers
    (no copy).  Transient failures are retried with exponential backoff and jitter,
    bounded by ``retry``; a missing key reads as ``None``.

    ``version`` gives no tokens (``None``): obstore reports an ETag only with a request
    of its own, so the sharded engine re-reads a shard's index once per read rather
    than pay a HEAD per shard.  Reads are obstore's blocking calls, made on up to
    ``reads_in_flight`` threads at once: each costs less than half of what its
    asynchronous twin does in round trips through an event loop (4096 small GETs from a
    local nginx: 270 ms against 600 ms).  Use ``from_url`` to open a URL.  Needs
    obstore: ``pip install "zarrfast[obstore]"`` (from a source checkout:
    ``pip install ".[obstore]"``).

    Parameters
    ----------
    store : obstore.store.ObjectStore
        An obstore store.  Its own retries and timeouts are those it was made with;
        ``from_url`` turns obstore's retries off and sets timeouts.
    read_only : bool, default False
        Refuse writes and deletes.
    retry : RetryPolicy or int or None, default None
        How transient failures are retried: a ``RetryPolicy``, or an ``int``, the
        number of attempts (``None``: ``RetryPolicy()``).
    max_concurrency : int or None, default None
        At most this many writes and deletes in flight at once, from every thread
        (``None``: ``config io_concurrency``), and, given, the default of
        ``reads_in_flight``.
    reads_in_flight : int or None, default None
        At most this many reads (GET, HEAD, listing) in flight at once, from every
        thread (``None``: ``max_concurrency`` if given, else ``config
        remote_reads_in_flight``, default 256: a gather's or a batch's requests all
        out together, not in waves of a few round trips each).

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If ``store`` is not an obstore store, ``retry`` is neither a ``RetryPolicy`` nor
        an int, or ``max_concurrency`` or ``reads_in_flight`` is not an int >= 1.
    zarrfast.storage.MissingDependencyError
        If obstore is not installed.

    Examples
    --------
    >>> import obstore.store
    >>> from zarrfast.storage import ObjectStore
    >>> store = ObjectStore(obstore.store.MemoryStore())
    >>> store.url
    'memory://'
    >>> a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
    >>> a[:] = np.arange(4)
    >>> list(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarrfast.open_array(store, mode="r")[:]
    array([0, 1, 2, 3], dtype=int32)

    A local directory through obstore:

    >>> import os
    >>> os.makedirs("data")
    >>> local = ObjectStore(obstore.store.LocalStore(os.path.abspath("data")))
    >>> local.set("x/y", b"abc")
    >>> bytes(local.get("x/y"))
    b'abc'
    >>> os.listdir("data")
    ['x']
    """

    supports_partial_reads = True
    batched_reads = True
    fast_set_many = True
    #: the obstore store
    store: ObstoreStore

    def __init__(self, store: Any, *, read_only: bool = False,
                 retry: RetryPolicy | int | None = None,
                 max_concurrency: int | None = None,
                 reads_in_flight: int | None = None) -> None:
        super().__init__(read_only=read_only)
        obstore = _import_obstore()
        if not isinstance(store, _store_types(obstore)):
            raise ZarrfastError(f"ObjectStore needs an obstore store (obstore.store.S3Store, "
                                f"HTTPStore, LocalStore, ...), got {store!r}")
        if retry is None:
            retry = RetryPolicy()
        elif isinstance(retry, int) and not isinstance(retry, bool):
            retry = RetryPolicy(attempts=retry)
        if not isinstance(retry, RetryPolicy):
            raise ZarrfastError(f"retry must be a RetryPolicy or an int, got {retry!r}")
        if reads_in_flight is None:
            reads_in_flight = (config.get("remote_reads_in_flight") if max_concurrency is None
                               else max_concurrency)
        if max_concurrency is None:
            max_concurrency = config.get("io_concurrency")
        for name, value in (("max_concurrency", max_concurrency),
                            ("reads_in_flight", reads_in_flight)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ZarrfastError(f"{name} must be an int >= 1, got {value!r}")
        self.store = store
        self.retry = retry
        self.max_concurrency = max_concurrency
        self.reads_in_flight = reads_in_flight
        # each bounds every thread's requests: reads_in_flight the blocking reads (a
        # gather of 1,024 rows has all its 435 chunks' GETs out in two round trips, not
        # seven of 64), max_concurrency the writes (blocking, or on the event loop)
        self._in_flight = threading.BoundedSemaphore(reads_in_flight)
        self._writes_in_flight = threading.BoundedSemaphore(max_concurrency)
        self._requests = RequestLimit()
        self.url = _store_url(store)
        self._origin: tuple = ("store",)
        self._refused: set[str] = set()  # names skipped in listings (logged once each)
        #: a plain web server's ETags may be a modification time in whole seconds and a
        #: size: a version is tagged only once its second, and CLOCK_SKEW more, is over
        #: (``settled_etag``)
        self._web = type(store).__name__ == "HTTPStore"
        #: obstore's in-memory store needs no runtime thread: usable after a fork
        self._in_memory = type(store).__name__ == "MemoryStore"

    @classmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any] | None = None,
                 read_only: bool = False, *, retry: RetryPolicy | int | None = None,
                 max_concurrency: int | None = None,
                 timeout: float | None = None,
                 reads_in_flight: int | None = None) -> ObjectStore:
        """Open the store at a URL with ``obstore.store.from_url``.

        URLs: ``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``file://``, ``memory://``.
        Unless the options say otherwise, obstore does not retry (zarrfast's ``retry``
        does, so its bound is exact), a request that stalls (no byte) for ``timeout``
        seconds fails, and none takes more than ``10 * timeout`` seconds in all.  The
        stores opened with the same URL and options share one client (not ``memory://``:
        each of those holds its own data).

        Parameters
        ----------
        url : str
            The URL of the store's root (``"s3://bucket/data.zarr"``).
        storage_options : Mapping[str, Any] or None, default None
            obstore's configuration keys (plus ``client_options`` and ``retry_config``), or
            the s3fs style ``key``, ``secret``, ``token``, ``anon``, ``endpoint_url`` and
            ``client_kwargs={"endpoint_url", "region_name"}``, translated.
        read_only : bool, default False
            Refuse writes and deletes.
        retry : RetryPolicy or int or None, default None
            How transient failures are retried: a ``RetryPolicy``, or the number of
            attempts (``None``: ``RetryPolicy()``).
        max_concurrency : int or None, default None
            At most this many writes and deletes in flight at once (``None``: ``config
            io_concurrency``), and, given, the default of ``reads_in_flight``.
        timeout : float or None, default None
            Seconds a request may stall before it fails (``None``: 30).
        reads_in_flight : int or None, default None
            At most this many reads in flight at once (``None``: ``max_concurrency`` if
            given, else ``config remote_reads_in_flight``).

        Returns
        -------
        ObjectStore
            The store (its ``url`` attribute, named in messages, is ``url``).

        Raises
        ------
        zarrfast.errors.ZarrfastError
            If ``url`` has no ``://``, or ``timeout`` is not a number > 0.
        zarrfast.storage.StorageOptionsError
            If an option has no obstore equivalent (an fsspec/s3fs-only option, named in
            the message), or obstore refuses the URL or the options.
        zarrfast.storage.MissingDependencyError
            If obstore is not installed.

        Examples
        --------
        >>> from zarrfast.storage import ObjectStore
        >>> store = ObjectStore.from_url("memory://")
        >>> store.set("zarr.json", b"{}")
        >>> list(store.list())
        ['zarr.json']
        >>> ObjectStore.from_url("memory://", read_only=True).read_only
        True
        """
        obstore = _import_obstore()
        if not isinstance(url, str) or "://" not in url:
            raise ZarrfastError(f"ObjectStore.from_url needs a URL with '://', got {url!r}")
        user_options = dict(storage_options or {})
        kwargs = translate_storage_options(url, user_options)
        if timeout is None:
            timeout = DEFAULT_TIMEOUT
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ZarrfastError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        client = dict(kwargs.pop("client_options", {}))
        # a stall (no byte for `timeout` s) fails; a long transfer that keeps flowing may
        # take up to 10 * timeout in all (obstore's own default limit is 30 s in all)
        client.setdefault("read_timeout", f"{int(timeout * 1000)}ms")
        client.setdefault("connect_timeout", f"{int(min(timeout, 10.0) * 1000)}ms")
        client.setdefault("timeout", f"{int(timeout * 10_000)}ms")
        kwargs.setdefault("retry_config", {"max_retries": 0})
        scheme = url.split("://", 1)[0].lower()
        if scheme == "http":
            client.setdefault("allow_http", True)
        if scheme not in ("memory",):  # obstore's MemoryStore takes no options
            kwargs["client_options"] = client
        try:
            inner = _client(obstore, url, kwargs)
        except Exception as e:  # obstore: UnknownConfigurationKeyError, ValueError...
            raise StorageOptionsError(
                f"cannot open {url!r} with obstore and storage_options "
                f"{sorted(user_options)}: {type(e).__name__}: {e}") from e
        store = cls(inner, read_only=read_only, retry=retry, max_concurrency=max_concurrency,
                    reads_in_flight=reads_in_flight)
        store._origin = ("url", url, user_options, timeout)
        stripped = url.rstrip("/")
        store.url = stripped if not stripped.endswith(":") else stripped + "//"  # memory://
        return store

    def __reduce__(self):
        if self._origin[0] == "url":
            _, url, options, timeout = self._origin
            return (_rebuild_from_url, (url, options, self.read_only, self.retry,
                                        self.max_concurrency, timeout, self.reads_in_flight))
        return (_rebuild, (self.store, self.read_only, self.retry, self.max_concurrency,
                           self.reads_in_flight))

    def with_read_only(self, read_only: bool = True) -> ObjectStore:
        """Return a view of this store (the same obstore store) with another read-only flag.

        Parameters
        ----------
        read_only : bool, default True
            The flag of the view.

        Returns
        -------
        ObjectStore
            A new store object on the same keys.
        """
        clone = ObjectStore(self.store, read_only=read_only, retry=self.retry,
                            max_concurrency=self.max_concurrency,
                            reads_in_flight=self.reads_in_flight)
        clone._origin, clone.url = self._origin, self.url
        return clone

    def __str__(self) -> str:
        # as zarr-python's (its arrays print ``<Array object_store://<obstore...> ...>``);
        # ``url`` has the URL
        return f"object_store://{self.store}"

    def __repr__(self) -> str:
        return f"ObjectStore({self})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectStore) or other.read_only != self.read_only:
            return False
        if other.store is self.store:
            return True
        return (self._origin[0] == "url" and other._origin[:3] == self._origin[:3])

    def __hash__(self) -> int:
        return hash((ObjectStore, self.url, self.read_only))

    # -- errors ---------------------------------------------------------------------
    def _key_url(self, key: str) -> str:
        return self.url + key if self.url.endswith("/") else f"{self.url}/{key}"

    def _failure(self, action: str, key: str, exc: BaseException, kind: str,
                 attempts: int, waited: float) -> ZarrfastError:
        return request_error(action, f"{self._key_url(key)} (key {key!r})",
                             f"{type(exc).__name__}: {_first_lines(exc)}", kind, attempts, waited)

    def _check_runtime(self, action: str, key: str) -> None:
        """Refuse a request in a process forked after its parent made requests through
        obstore (:class:`~zarrfast.storage.errors.ForkedRuntimeError`): obstore's runtime
        threads are not in the child, and the request would hang.  The first request
        (of a store other than obstore's in-memory one, which needs no runtime thread)
        names the process that started the runtime."""
        global _RUNTIME_PID
        if self._in_memory:
            return
        pid = os.getpid()
        if _RUNTIME_PID is None:
            _RUNTIME_PID = pid
        elif _RUNTIME_PID != pid:
            raise ForkedRuntimeError(
                f"{action} {self._key_url(key)} (key {key!r}): process {pid} was forked from "
                f"process {_RUNTIME_PID} after that process made requests through obstore, "
                f"whose runtime threads do not survive fork: the request would never finish. "
                f"Start worker processes with the 'spawn' or 'forkserver' method "
                f"(multiprocessing.get_context('spawn'); torch's DataLoader("
                f"multiprocessing_context='spawn')), or read through FsspecStore")

    async def _retrying(self, action: str, key: str, call: Callable[[], Awaitable[T]]) -> T:
        self._check_runtime(action, key)

        def failure(e: BaseException, kind: str, attempts: int, waited: float) -> BaseException:
            return self._failure(action, key, e, kind, attempts, waited)

        return await retrying(call, self.retry, classify=classify, failure=failure,
                              missing=lambda e: FileNotFoundError(self._key_url(key)))

    def _retrying_sync(self, action: str, key: str, call: Callable[[], T]) -> T:
        self._check_runtime(action, key)

        def failure(e: BaseException, kind: str, attempts: int, waited: float) -> BaseException:
            return self._failure(action, key, e, kind, attempts, waited)

        return retrying_sync(call, self.retry, classify=classify, failure=failure,
                             missing=lambda e: FileNotFoundError(self._key_url(key)))

    # -- reads: obstore's blocking calls, on threads (a call costs less than half of
    # its asynchronous twin's round trips through the event loop) ---------------------
    def _head(self, key: str) -> ObjectMeta | None:
        import obstore

        try:
            return self._retrying_sync("inspecting", key,
                                       lambda: obstore.head(self.store, key))
        except FileNotFoundError:
            return None

    def _get(self, key: str, byte_range: ByteRequest | None) -> Any:
        return self._get_tagged(key, byte_range)[0]

    def _get_tagged(self, key: str, byte_range: ByteRequest | None
                    ) -> tuple[Any, str | None]:
        """The value (or bytes of it) of ``key`` and the ``ETag`` of the version it came
        from (``None``: none, or a weak one, which says nothing about the bytes)."""
        import obstore

        options: GetOptions | None
        if byte_range is None:
            options = None
        elif isinstance(byte_range, RangeByteRequest):
            if byte_range.end <= byte_range.start:
                return (b"" if self._head(key) is not None else None), None
            options = {"range": (byte_range.start, byte_range.end)}
        elif isinstance(byte_range, OffsetByteRequest):
            options = {"range": {"offset": byte_range.offset}}
        else:
            if byte_range.suffix == 0:
                return (b"" if self._head(key) is not None else None), None
            options = {"range": {"suffix": byte_range.suffix}}

        def fetch() -> tuple[Any, str | None]:
            try:
                result = obstore.get(self.store, key, options=options)
                data = result.bytes()
            except Exception as e:
                if byte_range is not None and _is_bad_range(e):
                    return self._clipped_empty(key, byte_range, e), None
                if byte_range is not None and _ignores_range(e):
                    # the server ignored Range and sent the whole value (obstore refused
                    # it): read the whole value and slice it here
                    return self._sliced_whole(key, byte_range), None
                raise
            _check_body(byte_range, result.range, result.meta["size"], len(data))
            # (obstore's buffer, read-only: no copy)
            meta = result.meta
            tag = (settled_etag(meta.get("e_tag"), meta.get("last_modified")) if self._web
                   else _strong_tag(meta.get("e_tag")))
            return memoryview(data), tag

        try:
            return self._retrying_sync("reading", key, fetch)
        except FileNotFoundError:
            return None, None

    def _sliced_whole(self, key: str, byte_range: ByteRequest) -> Any:
        import obstore

        result = obstore.get(self.store, key)
        data = result.bytes()
        size = result.meta["size"]
        _check_body(None, result.range, size, len(data))
        start, stop = normalize_byte_range(byte_range, size)
        return memoryview(data)[start:stop]

    def _clipped_empty(self, key: str, byte_range: ByteRequest, exc: Exception) -> bytes:
        """An unsatisfiable range of an existing value: the empty clipped slice, as the
        store contract says; the original error if the slice is not empty."""
        import obstore

        meta = obstore.head(self.store, key)  # FileNotFoundError if missing
        start, stop = normalize_byte_range(byte_range, int(meta["size"]))
        if stop > start:
            raise exc
        return b""

    def _get_ranges(self, key: str, ranges: list[RangeByteRequest]) -> list[Any]:
        """Several ranges of one key in one ``get_ranges`` call (obstore merges ranges
        closer than ``shard_coalesce_gap``); ranges reaching past the end, or a missing
        key, fall back to one request per range."""
        import obstore

        gap = max(0, int(config.get("shard_coalesce_gap")))
        starts = [r.start for r in ranges]
        ends = [r.end for r in ranges]

        def fetch() -> list[Any]:
            return obstore.get_ranges(self.store, key, starts=starts, ends=ends, coalesce=gap)

        try:
            parts = self._retrying_sync("reading", key, fetch)
        except BaseException as e:  # noqa: BLE001 - obstore panics on a start past the end
            if not _is_fallback(e):
                raise
            return [self._get(key, r) for r in ranges]
        out: list[Any] = []
        for r, part in zip(ranges, parts, strict=True):
            n = len(part)
            if n > r.end - r.start:
                raise self._failure("reading", key, _BadBody(
                    f"asked bytes {r.start}-{r.end} and got {n} bytes"), "fatal", 1, 0.0)
            if n < r.end - r.start:  # the value may end there: check it with one read
                out.append(self._get(key, r))
                continue
            out.append(memoryview(part))
        return out

    def _limited(self, fn: Callable[..., T], *args: Any) -> T:
        with self._in_flight:
            return fn(*args)

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
        memoryview or None
            The value (or the range of it, clipped like a slice), a read-only view of
            obstore's buffer; ``None`` if missing.

        Raises
        ------
        zarrfast.errors.InvalidKeyError
            If a key is not valid.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        validate_key(key)
        check_byte_range(byte_range)
        return self._limited(self._get, key, byte_range)

    def get_many(self, keys: Sequence[str],
                 byte_ranges: Sequence[ByteRequest | None] | None = None
                 ) -> list[bytes | None]:
        """Return the values of many keys, at most ``reads_in_flight`` requests at once.

        Several non-empty ``RangeByteRequest`` ranges of one key are read with one
        ``get_ranges`` call.

        Parameters
        ----------
        keys : Sequence[str]
            The keys.
        byte_ranges : Sequence[ByteRequest or None] or None, default None
            One byte range (or ``None``) per key; ``None`` for whole values.

        Returns
        -------
        list[memoryview or None]
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
        for k in keys:
            validate_key(k)
        for r in ranges:
            check_byte_range(r)
        if not keys:
            return []
        # several non-empty ranges of one key: one get_ranges call
        multi: dict[str, list[int]] = {}
        for i, (k, r) in enumerate(zip(keys, ranges, strict=True)):
            if isinstance(r, RangeByteRequest) and r.end > r.start:
                multi.setdefault(k, []).append(i)
        groups = [idx for idx in multi.values() if len(idx) > 1]
        grouped = {i for idx in groups for i in idx}
        jobs: list[list[int]] = [[i] for i in range(len(keys)) if i not in grouped] + groups

        def job(rows: list[int]) -> list[Any]:
            if len(rows) == 1:
                return [self._limited(self._get, keys[rows[0]], ranges[rows[0]])]
            return self._limited(self._get_ranges, keys[rows[0]], [ranges[i] for i in rows])

        out: list[Any] = [None] * len(keys)
        for rows, values in zip(jobs, map_requests(job, jobs, self.reads_in_flight),
                                strict=True):
            for i, value in zip(rows, values, strict=True):
                out[i] = value
        return out

    @property
    def tagged_reads(self) -> bool:  # type: ignore[override]
        """Whether reads tell the version they came from: the ``ETag`` of each response.

        Not for a subclass that changes ``get`` or ``get_many``, whose reads the shard
        paths must then go through.
        """
        return type(self).get is ObjectStore.get and type(self).get_many is ObjectStore.get_many

    def get_tagged(self, key: str, byte_range: ByteRequest | None = None
                   ) -> tuple[Any, Hashable | None]:
        """:meth:`get` and the ``ETag`` of the version read (``None``: the server sent
        none, or a weak one).

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
        validate_key(key)
        check_byte_range(byte_range)
        return self._limited(self._get_tagged, key, byte_range)

    def get_many_tagged(self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None]
                        ) -> tuple[list[Any], list[Hashable | None]]:
        """:meth:`get_tagged` of many values, at most ``reads_in_flight`` requests at
        once, each its own request (so that each says its version).

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
        keys, ranges = many_requests(keys, byte_ranges)
        for k in keys:
            validate_key(k)
        for r in ranges:
            check_byte_range(r)

        def job(i: int) -> tuple[Any, str | None]:
            return self._limited(self._get_tagged, keys[i], ranges[i])

        got = map_requests(job, list(range(len(keys))), self.reads_in_flight)
        return [g[0] for g in got], [g[1] for g in got]

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value (one HEAD request).

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
        return self._limited(self._head, key) is not None

    def getsize(self, key: str) -> int:
        """Return the size of the value of ``key`` (one HEAD request).

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
        meta = self._limited(self._head, key)
        if meta is None:
            raise FileNotFoundError(f"key {key!r} not found in {self!r} ({self._key_url(key)})")
        return int(meta["size"])

    # -- writes ---------------------------------------------------------------------
    async def _aset(self, key: str, data: bytes) -> None:
        import obstore

        try:
            await self._retrying("writing", key, lambda: obstore.put_async(
                self.store, key, data, use_multipart=False))
        except FileNotFoundError as e:  # a missing bucket: a failed write
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
        validate_key(key)
        data = as_bytes(value)
        run(self._aset(key, data))

    # -- conditional writes: a shard's partial writes from processes sharing no lock -----
    @property
    def conditional_writes(self) -> bool:  # type: ignore[override]
        """Whether writes can be conditional: on S3, GCS, Azure and obstore's memory store.

        Those make a write conditional on the version read (``If-Match``) or on the key
        being missing (``If-None-Match``); obstore's local and HTTP stores do not.
        """
        return type(self.store).__name__ in _CONDITIONAL_STORES

    def get_versioned(self, key: str, *, limit: int | None = None
                      ) -> tuple[Any, Hashable | None]:
        """Return the value of ``key`` and its version: ``(ETag, object version)``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        limit : int or None, default None
            Refuse a value larger than this many bytes before its body is read.

        Returns
        -------
        tuple
            ``(value, (e_tag, version))``; ``(None, None)`` when the key is missing.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            If the value is larger than ``limit`` bytes.

        Examples
        --------
        >>> import obstore.store
        >>> from zarrfast.storage import ObjectStore
        >>> store = ObjectStore(obstore.store.MemoryStore())
        >>> store.set("k", b"one")
        >>> value, version = store.get_versioned("k")
        >>> bytes(value)
        b'one'
        >>> store.set_if_version("k", b"two", version)
        True
        >>> store.set_if_version("k", b"three", version)  # replaced meanwhile
        False
        >>> bytes(store.get("k"))
        b'two'
        """
        import obstore

        validate_key(key)

        def fetch() -> tuple[Any, Hashable | None, int]:
            result = obstore.get(self.store, key)
            meta = result.meta
            size = int(meta["size"])
            version = (meta.get("e_tag"), meta.get("version"))
            if limit is not None and size > limit:
                return None, version, size  # refused before the body is read
            return memoryview(result.bytes()), version, size

        try:
            data, version, size = self._limited(self._retrying_sync, "reading", key, fetch)
        except FileNotFoundError:
            return None, None
        if data is None:
            assert limit is not None  # (fetch refuses a body only past a limit)
            raise value_too_large(key, size, limit)
        return data, version

    def set_if_version(self, key: str, value: bytes | bytearray | memoryview,
                       version: Hashable | None) -> bool:
        """Write ``value`` to ``key`` only if its version is still ``version``.

        Parameters
        ----------
        key : str
            The key (``"zarr.json"``, ``"c/0/0"``).
        value : bytes-like
            The new value.
        version : Hashable or None
            The version ``get_versioned`` gave; ``None``: write only if ``key`` is missing.

        Returns
        -------
        bool
            Whether ``value`` was written (``False``: another writer's value is there now,
            or the key was deleted meanwhile; nothing was written).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            If the store is read-only.
        zarrfast.storage.RemoteStoreError
            If a request fails for good (``RemotePermissionError`` when access is denied,
            ``RetriesExhaustedError`` when transient failures outlast the retry policy);
            the message names the key's URL.
        """
        import obstore

        self._check_writable(key)
        validate_key(key)
        data = as_bytes(value)
        if version is None:
            mode: Any = "create"
        else:
            e_tag, version_id = cast("tuple[str | None, str | None]", version)  # (get_versioned's)
            mode = {"e_tag": e_tag} if version_id is None else {"e_tag": e_tag,
                                                                 "version": version_id}

        def put() -> bool:
            try:
                obstore.put(self.store, key, data, mode=mode, use_multipart=False)
            except Exception as e:
                if type(e).__name__ in ("PreconditionError", "AlreadyExistsError") or (
                        version is not None and classify(e) == "missing"):
                    return False  # another writer's value is there now (or none is)
                raise
            return True

        try:
            with self._writes_in_flight:
                return self._retrying_sync("writing", key, put)
        except FileNotFoundError as e:  # a missing bucket: a failed write
            raise self._failure("writing", key, e, "fatal", 1, 0.0) from e

    def set_many(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> None:
        """Store many values, at most ``max_concurrency`` requests at once.

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
        work = [(validate_key(k), as_bytes(v)) for k, v in pairs]  # validate first
        if work:
            run(gather_limited((self._aset(k, d) for k, d in work), self.max_concurrency,
                               self._requests))

    async def _adelete(self, key: str) -> None:
        import obstore

        try:
            await self._retrying("deleting", key, lambda: obstore.delete_async(self.store, key))
        except FileNotFoundError:
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

        On S3 the keys go in ``DeleteObjects`` requests of 1000 keys; elsewhere one request
        per key, at most ``max_concurrency`` at once.

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
        for k in keys:
            validate_key(k)
        if not keys:
            return
        if type(self.store).__name__ == "S3Store":
            run(self._abulk_delete(keys))  # DeleteObjects: one request per 1000 keys
            return
        run(gather_limited((self._adelete(k) for k in keys), self.max_concurrency,
                           self._requests))

    async def _abulk_delete(self, keys: list[str]) -> None:
        import obstore

        for lo in range(0, len(keys), 1000):
            batch = keys[lo:lo + 1000]
            label = batch[0] if len(batch) == 1 else f"{batch[0]} (and {len(batch) - 1} more)"
            try:
                await self._retrying("deleting", label,
                                     functools.partial(obstore.delete_async, self.store, batch))
            except FileNotFoundError:
                pass  # S3 reports no missing keys; a missing bucket holds nothing

    # -- listing --------------------------------------------------------------------
    async def _alist(self, prefix: str) -> list[ObjectMeta]:
        import obstore

        self._check_runtime("listing", prefix or "<root>")

        async def collect() -> list[ObjectMeta]:
            out: list[ObjectMeta] = []
            async for batch in obstore.list(self.store, prefix=prefix or None,
                                            chunk_size=1000):
                out.extend(batch)
            return out

        try:
            return await self._retrying("listing", prefix or "<root>", collect)
        except FileNotFoundError:
            return []

    def list(self) -> Iterator[str]:
        """List every key of the store.

        Returns
        -------
        Iterator[str]
            The keys, sorted; paths no key can have are skipped.
        """
        return self.list_prefix("")

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``.

        Where an S3 bucket holds a name obstore refuses to list (a ``..``, ``.`` or empty
        segment), the keys are listed with botocore instead, skipping that name.

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
        zarrfast.storage.RemoteStoreError
            If the listing fails, or holds a name obstore refuses and cannot be listed
            otherwise (not S3, or botocore is not installed).
        """
        if not listing_prefix(prefix):
            return iter(())
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        keys = set()
        for path in self._listed(base):
            key = _valid_key(path)
            if key is not None and key.startswith(prefix):
                keys.add(key)
        return iter(sorted(keys))

    def _listed(self, base: str) -> builtins.list[str]:  # (list: the method above)
        """The paths below ``base`` as obstore lists them -- or, when the bucket holds a
        key Rust's ``object_store`` refuses to parse (a ``..``, ``.`` or empty segment:
        an S3 key no node can have, which fails the whole page of a listing, and no
        listing through obstore can get past it), as S3 lists them itself
        (:meth:`_raw_listing`), for the callers to skip what is no key."""
        try:
            return [meta["path"] for meta in run(self._alist(base))]
        except ZarrfastError as e:
            refused = _refused_path(e)
            if refused is None:
                raise
            return self._raw_listing(base, refused, e)

    def _raw_listing(self, base: str, refused: str, exc: BaseException) -> builtins.list[str]:
        """Every key below ``base`` (relative to the store's prefix), listed with
        botocore's ``ListObjectsV2`` from the S3 store's own configuration; an error
        naming ``refused`` and what to do where that cannot be done."""
        where = self._key_url(base) if base else self.url
        kind = type(self.store).__name__
        if kind != "S3Store":
            raise RemoteStoreError(
                f"cannot list {where}: it holds {refused!r}, a name no Zarr key can have "
                f"({kind} through obstore refuses the whole listing then); remove it, or "
                f"open the URL with FsspecStore, which skips such names") from exc
        try:
            client = self._s3_lister()
        except ImportError:
            raise RemoteStoreError(
                f"cannot list {where}: it holds {refused!r}, a name no Zarr key can have "
                f"(obstore refuses the whole listing then); install botocore (pip install "
                f"boto3) to let zarrfast list such buckets itself, skipping those names, "
                f"or remove it") from exc
        root = str(getattr(self.store, "prefix", None) or "").strip("/")
        start = "/".join(p for p in (root, base.strip("/")) if p)
        bucket = dict(cast("S3Store", self.store).config)["bucket"]

        def fetch() -> list[str]:
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=start + "/" if start else "")
            return [o["Key"] for page in pages for o in page.get("Contents", ())]

        if refused not in self._refused:
            self._refused.add(refused)
            _logger.warning("listing %s: skipped %r, which no Zarr key can be (obstore "
                            "cannot list past it; listed with botocore)", where, refused)
        keys = self._limited(self._retrying_sync, "listing", base or "<root>", fetch)
        cut = len(root) + 1 if root else 0
        return [k[cut:] for k in keys if not root or k.startswith(root + "/")]

    def _s3_lister(self) -> Any:
        """A botocore S3 client made from the obstore store's configuration (its
        endpoint, region, credentials or unsigned requests; else botocore's own chain
        of credentials, as obstore's); made once per store."""
        client = self.__dict__.get("_botocore")
        if client is not None:
            return client
        import botocore.session
        from botocore import UNSIGNED
        from botocore.config import Config

        cfg = {str(k).lower().removeprefix("aws_"): v
               for k, v in dict(cast("S3Store", self.store).config).items()}  # (an S3Store's)

        def on(name: str) -> bool:
            return str(cfg.get(name, "")).lower() in ("true", "1", "yes")

        options: dict[str, Any] = {
            "s3": {"addressing_style":
                   "virtual" if on("virtual_hosted_style_request") else "path"},
            "connect_timeout": DEFAULT_TIMEOUT, "read_timeout": DEFAULT_TIMEOUT,
            "retries": {"max_attempts": 1}}  # zarrfast's retry policy retries
        if on("skip_signature"):
            options["signature_version"] = UNSIGNED
        client = botocore.session.get_session().create_client(
            "s3", region_name=cfg.get("region") or "us-east-1",
            endpoint_url=cfg.get("endpoint") or None,
            aws_access_key_id=cfg.get("access_key_id") or None,
            aws_secret_access_key=cfg.get("secret_access_key") or None,
            aws_session_token=cfg.get("session_token") or cfg.get("token") or None,
            config=Config(**options))
        self.__dict__["_botocore"] = client
        return client

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names of the immediate children below ``prefix``.

        Parameters
        ----------
        prefix : str
            A node path (``""`` for the root).

        Returns
        -------
        Iterator[str]
            The names of keys and "directories" just below ``prefix``, sorted.
        """
        import obstore

        validate_prefix(prefix)
        p = prefix.rstrip("/")
        if type(self.store).__name__ == "LocalStore":
            # local directories outlive their files: list the keys below
            below = {k[len(p) + 1:] if p else k for k in self.list_prefix(p + "/" if p else "")}
            return iter(sorted({k.split("/", 1)[0] for k in below}))

        async def ls() -> ListResult[Sequence[ObjectMeta]]:
            try:
                return await self._retrying("listing", p or "<root>",
                                            lambda: obstore.list_with_delimiter_async(
                                                self.store, p or None))
            except FileNotFoundError:
                return {"common_prefixes": [], "objects": []}

        try:
            listing = run(ls())
        except ZarrfastError as e:
            if _refused_path(e) is None:
                raise
            # a name object_store refuses among them: every key below, as S3 lists them
            below = {k[len(p) + 1:] if p else k for k in self.list_prefix(p + "/" if p else "")}
            return iter(sorted({k.split("/", 1)[0] for k in below}))
        names = set()
        for full in [m["path"] for m in listing["objects"]] + list(listing["common_prefixes"]):
            full = full.rstrip("/")
            if p and not full.startswith(p + "/"):
                continue
            name = full[len(p) + 1:] if p else full
            if name and _valid_key(name) is not None:
                names.add(name.split("/", 1)[0])
        return iter(sorted(names))

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` (listed first).

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
        self.delete_many(list(self.list_prefix(p + "/" if p else "")))


# -- helpers -----------------------------------------------------------------------------


#: obstore's stores whose writes can be conditional (``PutMode.Create`` / ``Update``)
_CONDITIONAL_STORES = frozenset({"S3Store", "GCSStore", "AzureStore", "MemoryStore"})


def _store_types(obstore: Any) -> tuple[type[ObstoreStore], ...]:
    s = obstore.store
    return tuple(getattr(s, n) for n in ("S3Store", "GCSStore", "AzureStore", "HTTPStore",
                                         "LocalStore", "MemoryStore") if hasattr(s, n))


def _store_url(store: Any) -> str:
    """A URL naming an obstore store, for messages."""
    name = type(store).__name__
    prefix = str(getattr(store, "prefix", None) or "").strip("/")
    if name == "HTTPStore":
        return str(store.url).rstrip("/")
    if name == "LocalStore":
        return "file://" + ("/" + prefix if prefix else "")
    if name == "MemoryStore":
        return "memory://"
    cfg = getattr(store, "config", None) or {}
    if name == "S3Store":
        root = f"s3://{cfg.get('bucket', '')}"
    elif name == "GCSStore":
        root = f"gs://{cfg.get('bucket', '')}"
    else:
        root = f"az://{cfg.get('container_name', '')}"
    return f"{root}/{prefix}" if prefix else root


def _first_lines(exc: BaseException) -> str:
    """The message of an obstore error without its multi-line debug dump."""
    text = str(exc).split("\n\nDebug source:", 1)[0].strip()
    return text if len(text) <= 500 else text[:500] + "..."


def _is_fallback(exc: BaseException) -> bool:
    """A multi-range read to redo range by range: a missing key, an unsatisfiable
    range, or obstore's panic on a range starting past the end of the value."""
    if isinstance(exc, FileNotFoundError):
        return True
    return any(_is_bad_range(e) or _ignores_range(e) or type(e).__name__ in ("PanicException", "RustPanic")
               for e in exception_chain(exc))


def _check_body(byte_range: ByteRequest | None, got: tuple[int, int], size: int,
                n: int) -> None:
    """Raise :class:`_BadBody` when the response does not hold exactly the bytes asked
    for (clipped to the value's ``size``)."""
    start, stop = got
    if n != stop - start:
        raise _BadBody(f"the response promised bytes {start}-{stop} of {size} and its body "
                       f"held {n} bytes")
    if byte_range is None:
        want = (0, size)
    else:
        want = normalize_byte_range(byte_range, size)
    if (start, stop) != want:
        raise _BadBody(f"asked bytes {want[0]}-{want[1]} of {size} and the server sent "
                       f"bytes {start}-{stop}")


def _valid_key(path: str) -> str | None:
    try:
        return validate_key(path)
    except ZarrfastError:
        return None


_REFUSED_RE = re.compile(r'Path "([^"]*)"')


def _refused_path(exc: BaseException) -> str | None:
    """The path of a listing that obstore refused to parse (its ``InvalidPathError``:
    ``..``, ``.`` or an empty segment), or ``None`` when ``exc`` is another failure."""
    for e in exception_chain(exc):
        text = str(e)
        if type(e).__name__ == "InvalidPathError" or "InvalidPathError:" in text:
            m = _REFUSED_RE.search(text)
            return m.group(1) if m else "?"
    return None


def _rebuild(store: Any, read_only: bool, retry: RetryPolicy, max_concurrency: int,
             reads_in_flight: int | None = None) -> ObjectStore:
    return ObjectStore(store, read_only=read_only, retry=retry, max_concurrency=max_concurrency,
                       reads_in_flight=reads_in_flight)


def _rebuild_from_url(url: str, options: dict, read_only: bool, retry: RetryPolicy,
                      max_concurrency: int, timeout: float,
                      reads_in_flight: int | None = None) -> ObjectStore:
    return ObjectStore.from_url(url, options, read_only, retry=retry,
                                max_concurrency=max_concurrency, timeout=timeout,
                                reads_in_flight=reads_in_flight)
