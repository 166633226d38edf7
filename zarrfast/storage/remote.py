"""What every remote store shares: one event loop on a daemon thread, bounded
concurrency, and retries of transient failures.

Remote clients (obstore, zarr-python stores, icechunk) are asynchronous.  A
synchronous zarrfast store method runs its coroutines with :func:`run` on the
loop of a daemon thread (one per process, made again after a fork), so a batch
of requests (:func:`gather_limited`) is in flight at once while the calling
thread, one of the engine's I/O threads, waits.

Failures are sorted by :func:`classify` into ``"missing"``, ``"denied"``,
``"transient"`` (HTTP 408/429/5xx, connection resets and refusals, timeouts)
and ``"fatal"``; :func:`retrying` retries the transient ones with exponential
backoff and jitter, bounded by a :class:`RetryPolicy`.
"""

from __future__ import annotations

import asyncio
import errno
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from zarrfast.errors import ZarrfastError

__all__ = ["RequestLimit", "RetryPolicy", "classify", "error_code", "exception_chain",
           "gather_limited", "http_status", "loop", "request_error", "retrying", "retrying_sync",
           "run", "settled_etag", "status_kind", "strong_etag"]

T = TypeVar("T")

#: S3 error codes that mean "try again later"
_TRANSIENT_CODES = frozenset({
    "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "Throttling",
    "ThrottlingException", "RequestTimeTooSkewed", "RequestLimitExceeded", "TooManyRequests",
})
_TRANSIENT_ERRNOS = frozenset({
    errno.EBUSY, errno.EAGAIN, errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNREFUSED,
    errno.ECONNABORTED, errno.EPIPE, errno.ENETUNREACH, errno.EHOSTUNREACH,
})


@dataclass(frozen=True)
class RetryPolicy:
    """How a remote store retries a request after a transient failure.

    Transient failures are HTTP 5xx and throttling responses, connection resets and
    timeouts.  Before try ``n + 1`` the store sleeps a random time between half and all
    of ``min(max_delay, base_delay * 2**(n - 1))`` seconds (exponential backoff with
    jitter), so the total wait is at most ``(attempts - 1) * max_delay``.  When every
    try failed, the store raises ``RetriesExhaustedError``.

    Parameters
    ----------
    attempts : int, default 5
        The total number of tries of one request (1: never retry).
    base_delay : float, default 0.1
        The longest wait, in seconds, after the first failed try; it doubles after
        each further one.
    max_delay : float, default 2.0
        The longest wait, in seconds, between two tries.

    Raises
    ------
    ZarrfastError
        When ``attempts`` is not an ``int`` of at least 1, or a delay is negative.

    Examples
    --------
    >>> policy = zarrfast.storage.RetryPolicy(attempts=3, base_delay=0.5, max_delay=1.0)
    >>> 0.25 <= policy.delay(1) <= 0.5 and 0.5 <= policy.delay(3) <= 1.0
    True
    """

    attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ZarrfastError(f"RetryPolicy.attempts must be an int >= 1, got {self.attempts!r}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ZarrfastError(f"RetryPolicy delays must be >= 0, got {self!r}")

    def delay(self, failed_attempt: int) -> float:
        """How long to wait after a failed try before the next one.

        Parameters
        ----------
        failed_attempt : int
            Which try failed, counting from 1.

        Returns
        -------
        float
            A random number of seconds between half and all of
            ``min(max_delay, base_delay * 2**(failed_attempt - 1))``.
        """
        cap = min(self.max_delay, self.base_delay * 2 ** (failed_attempt - 1))
        return random.uniform(cap / 2, cap)


def _transient_types() -> tuple[type[BaseException], ...]:
    """Exception types of connection-level failures, from whichever clients exist."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        import aiohttp

        types += [aiohttp.ClientConnectionError, aiohttp.ClientPayloadError]
    except ImportError:  # pragma: no cover - aiohttp comes with s3fs / http
        pass
    try:
        import botocore.exceptions as bce

        types += [bce.HTTPClientError, bce.ConnectionError, bce.IncompleteReadError]
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    try:
        from fsspec.exceptions import FSTimeoutError

        types.append(FSTimeoutError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


_TRANSIENT_TYPES: tuple[type[BaseException], ...] | None = None


# -- classifying failures ---------------------------------------------------------------


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (a bounded walk)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(seen) < 8:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def http_status(exc: BaseException) -> int | None:
    """The HTTP status of a botocore ``ClientError`` or an aiohttp response error."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(status, int):
            return status
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and 100 <= status < 600 else None


def error_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        code = response.get("Error", {}).get("Code")
        return code if isinstance(code, str) else None
    return None


def request_error(action: str, where: str, detail: str, kind: str, attempts: int,
                  waited: float) -> ZarrfastError:
    """The error of a request that failed for good: ``action`` (``"reading"``...) of
    ``where`` (the key and its URL), a failure of ``kind`` (:func:`classify`) after
    ``attempts`` tries and ``waited`` seconds of backoff; ``detail`` says what failed."""
    from zarrfast.storage.errors import (
        RemotePermissionError,
        RemoteStoreError,
        RetriesExhaustedError,
    )

    if kind == "denied":
        return RemotePermissionError(f"access denied {action} {where}: {detail}")
    if kind == "transient":
        return RetriesExhaustedError(
            f"{action} {where} failed after {attempts} attempts ({waited:.2f} s of "
            f"backoff); last error: {detail}", attempts)
    return RemoteStoreError(f"{action} {where} failed: {detail}")


def strong_etag(etag: Any) -> str | None:
    """An ``ETag`` that names the bytes (a strong one); ``None`` for a weak one
    (``W/...``: equivalent content, perhaps other bytes) or none."""
    if not isinstance(etag, str) or not etag or etag.startswith("W/"):
        return None
    return etag


#: seconds by which the clock that stamped a file's modification time (a writer's, a
#: file server's) or the local clock (when a response has no ``Date``) may be ahead of
#: the clock that served the file, for :func:`settled_etag`
CLOCK_SKEW = 2.0


def settled_etag(etag: Any, last_modified: Any, served: Any = None) -> str | None:
    """The strong ``ETag`` of a response from a plain HTTP server, when it names one
    version for good; ``None`` when it cannot (:func:`strong_etag`), or when the
    version was written less than :data:`CLOCK_SKEW` seconds before the second it was
    served in (or its times are unknown).

    A web server's ``ETag`` may be only the file's modification time in whole seconds
    and its size (nginx's): another version of the same size written in that second
    has the same ``ETag``, so an index kept under it could meet the other version's
    bytes.  Once a later second has begun, a new version has another modification
    time; :data:`CLOCK_SKEW` more covers a file stamped by a clock that runs behind the
    server's (a file server's, over NFS).  ``last_modified`` and ``served`` are the
    response's ``Last-Modified`` and ``Date``: HTTP dates (strings),
    :class:`~datetime.datetime` or POSIX seconds; ``served`` ``None``: the local clock.
    No ``Last-Modified``: the ``ETag`` is not made of one, kept.
    """
    tag = strong_etag(etag)
    if tag is None or last_modified is None:
        return tag
    written = _http_time(last_modified)
    when = _http_time(served) if served is not None else time.time()
    if written is None or when is None or int((when - CLOCK_SKEW) // 1) <= int(written // 1):
        return None
    return tag


def _http_time(value: Any) -> float | None:
    """POSIX seconds of an HTTP date, a datetime or a number; ``None`` if unreadable."""
    if isinstance(value, (int, float)):
        return float(value)
    if hasattr(value, "timestamp"):
        try:
            return float(value.timestamp())
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        from email.utils import parsedate_to_datetime

        try:
            return parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return None


def status_kind(status: int) -> str:
    """What a failed request's HTTP ``status`` means: ``"missing"`` (404), ``"denied"``
    (401, 403), ``"transient"`` (408, 429, 5xx) or ``"fatal"``."""
    if status == 404:
        return "missing"
    if status in (401, 403):
        return "denied"
    if status in (408, 429) or status >= 500:
        return "transient"
    return "fatal"


def classify(exc: BaseException) -> str:
    """``"missing"``, ``"denied"``, ``"transient"`` or ``"fatal"``."""
    global _TRANSIENT_TYPES
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
        return "missing"
    if isinstance(exc, PermissionError):
        return "denied"
    if _TRANSIENT_TYPES is None:
        _TRANSIENT_TYPES = _transient_types()
    for e in exception_chain(exc):
        status = http_status(e)
        if status is not None:
            return status_kind(status)
        if error_code(e) in _TRANSIENT_CODES:
            return "transient"
        if isinstance(e, _TRANSIENT_TYPES):
            return "transient"
        if type(e) is OSError and e.errno in _TRANSIENT_ERRNOS:
            return "transient"
    return "fatal"




# -- the event loop ---------------------------------------------------------------------


class _LoopThread:
    """An event loop running forever on a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def reset(self) -> None:
        self._lock = threading.Lock()
        self._loop = None
        self._thread = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="zarrfast-aio",
                                          daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop


_loop_thread = _LoopThread()

if hasattr(os, "register_at_fork"):
    # in a forked child the parent's loop thread does not exist
    os.register_at_fork(after_in_child=_loop_thread.reset)


def loop() -> asyncio.AbstractEventLoop:
    """zarrfast's event loop (started on first use)."""
    return _loop_thread.get()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on zarrfast's loop and wait for its result in this thread."""
    target = loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is target:
        coro.close()
        raise ZarrfastError("a synchronous store method was called from zarrfast's own event "
                            "loop; await the store's coroutine instead")
    future = asyncio.run_coroutine_threadsafe(coro, target)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


class RequestLimit:
    """What bounds the requests of one store in flight at once, across every thread and
    call using the store (the engine calls ``get_many`` from several I/O threads at
    once): one semaphore per event loop and limit, made on first use on the loop."""

    def __init__(self) -> None:
        self._sem: asyncio.Semaphore | None = None
        self._key: tuple[int, int] | None = None

    def semaphore(self, limit: int) -> asyncio.Semaphore:
        """The semaphore of ``limit`` on the running loop (call it on the loop)."""
        key = (id(asyncio.get_running_loop()), limit)
        if self._sem is None or self._key != key:
            self._sem, self._key = asyncio.Semaphore(limit), key
        return self._sem

    def __reduce__(self):
        return (RequestLimit, ())


async def gather_limited(coros: Iterable[Awaitable[T]], limit: int,
                         shared: RequestLimit | None = None) -> list[T]:
    """Await all of ``coros``, at most ``limit`` at a time (of this call, or with
    ``shared``, of every call sharing it).  Every one finishes before the first error
    (in order) is raised, so no request outlives the call."""
    limit = max(1, int(limit))
    sem = asyncio.Semaphore(limit) if shared is None else shared.semaphore(limit)

    async def limited(c: Awaitable[T]) -> T:
        async with sem:
            return await c

    results = await asyncio.gather(*(limited(c) for c in coros), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results  # type: ignore[return-value]


def _after_failure(e: Exception, attempt: int, waited: float, policy: RetryPolicy,
                   classify: Callable[[BaseException], str],
                   failure: Callable[[BaseException, str, int, float], BaseException],
                   missing: Callable[[BaseException], BaseException] | None) -> float:
    """The pause before the next try of a call that failed with ``e`` (its
    ``attempt``-th try), or the exception to raise instead (raised here)."""
    kind = classify(e)
    if kind == "missing":
        if isinstance(e, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
            raise e
        raise (missing(e) if missing else FileNotFoundError(str(e))) from e
    if kind != "transient" or attempt >= policy.attempts:
        raise failure(e, kind, attempt, waited) from e
    return policy.delay(attempt)


async def retrying(call: Callable[[], Awaitable[T]], policy: RetryPolicy, *,
                   classify: Callable[[BaseException], str] = classify,
                   failure: Callable[[BaseException, str, int, float], BaseException],
                   missing: Callable[[BaseException], BaseException] | None = None) -> T:
    """Await ``call()``, retrying while ``classify`` says a failure is transient, at most
    ``policy.attempts`` tries in all.  A ``"missing"`` failure is re-raised as it is (as
    ``missing(exc)``, or a :class:`FileNotFoundError`, if it is not one); any other final
    failure is replaced by ``failure(exc, kind, attempts, seconds_waited)``, which names
    the key."""
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - classified
            pause = _after_failure(e, attempt, waited, policy, classify, failure, missing)
        waited += pause
        await asyncio.sleep(pause)


def retrying_sync(call: Callable[[], T], policy: RetryPolicy, *,
                  classify: Callable[[BaseException], str] = classify,
                  failure: Callable[[BaseException, str, int, float], BaseException],
                  missing: Callable[[BaseException], BaseException] | None = None) -> T:
    """:func:`retrying` for a blocking ``call`` (made on a thread of its own)."""
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except Exception as e:  # noqa: BLE001 - classified
            pause = _after_failure(e, attempt, waited, policy, classify, failure, missing)
        waited += pause
        time.sleep(pause)
