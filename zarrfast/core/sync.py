"""``zarr.core.sync``: run a coroutine to its end from synchronous code.

zarr-python's ``sync`` runs a coroutine on zarr-python's own event loop thread and waits
for its result; libraries call it on zarr-python's store coroutines (anndata:
``sync(group.store.clear())``).  zarrfast's stores are synchronous, so such a call has
already run by the time it reaches ``sync``: given a value that is not awaitable, ``sync``
returns it unchanged.  Given a coroutine (an :class:`zarrfast.storage.AsyncStore` method,
a ``zarrfast.AsyncArray`` one), it runs it on a loop of this module's own, in a daemon
thread (a new one in a forked child), and returns its result or raises its exception.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

__all__ = ["SyncError", "collect_aiterator", "sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


class SyncError(Exception):
    """``sync`` was called from the event loop it would wait on (it would never return)."""


def _forget_loop() -> None:
    global _loop, _thread, _lock
    _loop = _thread = None
    _lock = threading.Lock()  # (one another thread held at the fork would stay held)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop)  # the thread does not survive a fork


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="zarrfast-sync",
                                      daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def sync(coro: Awaitable[T] | T, loop: asyncio.AbstractEventLoop | None = None,
         timeout: float | None = None) -> T:
    """Run ``coro`` to its end and return its result (zarr-python's ``sync``).

    Parameters
    ----------
    coro : awaitable or any
        A coroutine or other awaitable; anything else (the result of a zarrfast store's
        synchronous method, which zarr-python's would give as a coroutine) is returned
        as is.
    loop : asyncio.AbstractEventLoop, optional
        The running event loop to run it on (in another thread); by default a loop of
        this module's own.
    timeout : float, optional
        Seconds to wait for the result; by default no limit.

    Returns
    -------
    any
        The coroutine's result.

    Raises
    ------
    SyncError
        When called from the thread of the loop it would run on.
    TimeoutError
        When ``timeout`` passes first (the coroutine is cancelled).

    Examples
    --------
    >>> from zarrfast.core.sync import sync
    >>> async def answer():
    ...     return 42
    >>> sync(answer())
    42
    >>> sync(None) is None
    True
    """
    if not inspect.isawaitable(coro):
        return coro
    if loop is None:
        loop = _get_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        if inspect.iscoroutine(coro):
            coro.close()
        raise SyncError("zarrfast.core.sync.sync() was called from the event loop it "
                        "would wait on; await the coroutine instead")

    async def run() -> T:
        return await coro  # type: ignore[misc]

    future = asyncio.run_coroutine_threadsafe(run(), loop)
    try:
        return future.result(timeout)
    except TimeoutError:
        future.cancel()
        raise


def collect_aiterator(data: AsyncIterator[T]) -> tuple[T, ...]:
    """Gather the items of an asynchronous iterator (zarr-python's ``collect_aiterator``).

    Parameters
    ----------
    data : AsyncIterator
        The iterator (``AsyncStore(store).list()``...).

    Returns
    -------
    tuple
        Its items, in order.

    Examples
    --------
    >>> from zarrfast.core.sync import collect_aiterator
    >>> async def numbers():
    ...     for i in range(3):
    ...         yield i
    >>> collect_aiterator(numbers())
    (0, 1, 2)
    """
    async def collect() -> tuple[T, ...]:
        return tuple([item async for item in data])

    return sync(collect())
