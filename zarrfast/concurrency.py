"""One shared thread pool for chunk work.

The pool grows (never shrinks) to ``config.get("threads")`` workers.  With one
thread, or one task, work runs inline in the calling thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from zarrfast import config

T = TypeVar("T")
R = TypeVar("R")
U = TypeVar("U")

def renew_after_fork(namespace: dict[str, Any], name: str,
                     factory: Callable[[], Any]) -> None:
    """Replace ``namespace[name]`` (a module's lock) by ``factory()`` in a forked child: a
    lock another thread of the parent held when it forked stays held in the child, by
    no thread, for ever."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: namespace.__setitem__(name, factory()))


class cached_property:  # noqa: N801 - named as the functools decorator it stands for
    """:func:`functools.cached_property` without its lock.

    Python 3.11's holds one ``RLock`` per class attribute, shared by every instance:
    threads computing it for different objects wait for each other, and a child forked
    while another thread of the parent held it waits for ever on its first use (a forked
    child hung so in a write at one thread, ``tests/review53/test_fork_during_writes.py``).
    The values cached with it are computed from the object alone: two threads that both
    compute one get equal values, and the last stored is kept.
    """

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value  # (found there from now on)
        return value


class _GrowingPool:
    """A thread pool that grows (never shrinks) to the size asked for."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.reset()

    def reset(self) -> None:
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None
        self.size = 0

    def get(self, threads: int) -> ThreadPoolExecutor:
        with self.lock:
            if self.executor is None or self.size < threads:
                # (the old executor is not shut down: a caller that took it may still
                # be submitting to it; its threads end once it is dropped and idle)
                self.executor = ThreadPoolExecutor(max_workers=threads,
                                                   thread_name_prefix=self.prefix)
                self.size = threads
            return self.executor


class _InTask(threading.local):
    active = False


#: set while this thread runs tasks of a job; a nested job then runs inline, since
#: waiting on the pool from inside it could deadlock when every worker waits
_in_task = _InTask()
#: chunk work (CPU) and blocking requests to remote stores (I/O latency)
_cpu_pool = _GrowingPool("zarrfast")
_io_pool = _GrowingPool("zarrfast-io")
#: blocking requests a store makes for one of its calls (its own pool: a store's call
#: runs on an I/O thread, which must not wait for work queued behind it on its pool)
_request_pool = _GrowingPool("zarrfast-request")


class _WriteThreads:
    """The I/O threads of :class:`WriteBehind`: one a write in flight, each a pool of
    one thread, idle ones kept for the next write (a pool of many threads would start
    a new one whenever a write hands over its next batch just before the thread that
    ran the last one is counted idle)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[ThreadPoolExecutor] = []

    def take(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="zarrfast-write")

    def give(self, pool: ThreadPoolExecutor) -> None:
        with self.lock:
            self.idle.append(pool)


#: the store writes of a write at one thread, behind its encoding (:class:`WriteBehind`)
_write_threads = _WriteThreads()


def _reset_after_fork() -> None:
    """In a forked child the parent's worker threads do not exist: start new pools."""
    _cpu_pool.reset()
    _io_pool.reset()
    _request_pool.reset()
    _requests.__init__()
    _write_threads.reset()
    _in_task.active = False
    _one_of_many.active = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class WriteBehind:
    """A write's store calls run on one file I/O thread, one batch behind the calling
    thread's encoding: the caller encodes batch k+1 while the I/O thread writes (and
    renames into place) batch k, as tensorstore's file I/O thread does at one thread
    of data copying.  At most one batch is in flight: :meth:`submit` waits for the
    previous batch's store calls to finish (re-raising their error, which names the
    key) before it hands over the next, so a caller alternating two buffers never
    writes into one the I/O thread still reads.  Used as a context manager: leaving it
    waits for the last batch, even through an error or an interrupt (nothing is
    still reading a caller's buffer or writing its files afterwards); leaving it with
    an error while a batch's write failed too raises the write's error, the earlier
    one in order of the batches.  Not shared between threads.

    ``enabled=False``: :meth:`submit` runs each call in the calling thread at once; so
    does a call handed over while the cores are busy with other work
    (:func:`cores_contended`): a thread woken for each batch then waits for a CPU
    first, and the caller for it (a 256 MiB zstd write at one thread beside 6
    runnable processes on 2 cores: median 1.52 s with the I/O thread, 1.20 s without).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled and not _in_task.active
        self._pending: Future | None = None
        self._pool: ThreadPoolExecutor | None = None  # (its I/O thread, from the first call)
        #: 0 or 1, flipped by each call handed over: which of two buffers the caller
        #: fills next (the other may be in flight)
        self.turn = 0

    def submit(self, fn: Callable[..., None], /, *args: Any) -> None:
        """Run ``fn(*args)`` on the I/O thread once the previous call has finished
        (its error raised here, and ``fn`` not run)."""
        if not self.enabled:
            fn(*args)
            return
        self.wait()
        if cores_contended():
            fn(*args)  # (nothing in flight: either buffer is free)
            return
        call = functools.partial(contextvars.copy_context().run, fn, *args)
        if self._pool is None:
            self._pool = _write_threads.take()
        self._pending = self._pool.submit(call)
        self.turn ^= 1

    def wait(self) -> None:
        """Wait for the call in flight, if any; re-raise its error."""
        f, self._pending = self._pending, None
        if f is not None:
            try:
                f.result()
            except BaseException:
                _finish(f)  # (an interrupt here: the write still runs to its end)
                raise

    def __enter__(self) -> WriteBehind:
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        try:
            if error is None:
                self.wait()
                return
            f, self._pending = self._pending, None
            if f is not None:
                _finish(f)
                f.result()  # a failed write: its error, the earlier one
        finally:
            pool, self._pool = self._pool, None
            if pool is not None and self._pending is None:  # (idle: for the next write)
                _write_threads.give(pool)


def share_with_io_thread(fn: Callable[[T], None], items: Iterable[T]) -> None:
    """``fn(item)`` for every item, the calling thread and an I/O thread of
    :class:`WriteBehind`'s each taking the next item in turn from one shared queue: for
    a write at one thread with nothing to encode (whole uncompressed chunks the store
    writes straight from the value), where the I/O thread writes files beside the
    caller instead of behind it.  A thread held up (another process on its core) takes
    fewer items; none waits for the other but at the end.  All in the calling thread
    while the cores are busy with other work (:func:`cores_contended`).  Same error and interrupt
    semantics as :func:`map_unordered_into`; inline in a nested job."""
    items = list(items)
    if len(items) <= 1 or _in_task.active or cores_contended():
        for item in items:
            fn(item)
        return
    pool = _write_threads.take()
    try:
        shared = _SharedItems(items)
        # (both threads iterate the same queue: _run_batches runs each "batch" to its end)
        _run_batches(pool, fn, [shared, shared])  # type: ignore[list-item]
    finally:  # (every task has ended, or was cancelled before it started)
        _write_threads.give(pool)


def _finish(f: Future) -> None:
    """Wait for ``f`` to end, even through interrupts; never cancel it (a write handed
    over is done whole, whatever happens in the caller meanwhile)."""
    while not f.done():
        try:
            wait([f])
        except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C while stopping
            pass


def in_task() -> bool:
    """Whether this thread runs a task of one of the engine's pools (whose nested work
    runs inline: a pool thread must not wait for work queued behind it)."""
    return _in_task.active


class _OneOfMany(threading.local):
    active = False


#: set while this thread runs one of several reads started at the same time
#: (:func:`zarrfast.engine.many.at_once`)
_one_of_many = _OneOfMany()


def one_of_many() -> bool:
    """Whether this thread runs one of several reads started at the same time, each on
    a thread of its own (``engine.many.at_once``: ``zarrfast.get_many`` of arrays whose
    files are out of the page cache).  Those reads are the parallelism: a small one
    then decodes in its thread alone, as while the cores are busy with other work."""
    return _one_of_many.active


@contextlib.contextmanager
def running_one_of_many() -> Iterator[None]:
    """Mark this thread as running one of several reads at once (:func:`one_of_many`)
    for the ``with`` block."""
    old = _one_of_many.active
    _one_of_many.active = True
    try:
        yield
    finally:
        _one_of_many.active = old


#: the request pool's threads at most when several calls of :func:`map_requests` run at
#: once (the arrays of many stores read together: each store's requests up to its own
#: limit, all of them in flight); one call's ``limit`` is never cut
REQUEST_THREADS = 256


class _Requests:
    """The requests the running calls of :func:`map_requests` may have in flight (each
    at most its ``limit``): the request pool grows to hold them (in steps of a limit, so
    it grows a few times, not once per call)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wanted = 0

    def enter(self, n: int, limit: int) -> int:
        with self.lock:
            self.wanted += n
            wanted = self.wanted
        return max(limit, min(-(-wanted // limit) * limit, REQUEST_THREADS))

    def leave(self, n: int) -> None:
        with self.lock:
            self.wanted -= n


_requests = _Requests()


def map_requests(fn: Callable[[T], R], items: list[T], limit: int) -> list[R]:
    """``[fn(item) for item in items]``, the calls on up to ``limit`` threads of the
    request pool (blocking requests of a store: see :func:`map_io`); calls running at
    once (stores read together) share the pool, which holds their requests, up to
    ``REQUEST_THREADS`` threads.  Every call has finished when this returns or raises
    its first error (in order)."""
    if len(items) <= 1 or threading.current_thread().name.startswith(_request_pool.prefix):
        return [fn(item) for item in items]
    limit = max(1, limit)
    mine = min(len(items), limit)
    pool = _request_pool.get(_requests.enter(mine, limit))
    try:
        futures = [pool.submit(fn, item) for item in items]
        try:
            wait(futures)
        except BaseException:  # an interrupt: what has not started never will
            for f in futures:
                f.cancel()
            raise
    finally:
        _requests.leave(mine)
    return [f.result() for f in futures]


async def in_thread(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """``await asyncio.to_thread(fn, *args, **kwargs)``, except that cancelling the task
    that awaits it stops the waiting, never the call: ``to_thread`` cancels the executor's
    job when no thread has taken it yet (the loop's default executor busy with other
    awaits), so a cancelled write was dropped whole, or not, depending on the load.  Here
    the job always runs, to its end (its result or error then goes unclaimed), and the
    loop waits for it when it shuts its default executor down."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.shield(loop.run_in_executor(None, call))


#: a thread's scheduler statistics (Linux): its time on a CPU and its time waiting,
#: runnable, on a run queue (nanoseconds), and its time slices
_SCHEDSTAT = "/proc/thread-self/schedstat"
#: the machine's load (Linux); its fourth field counts the threads runnable right now,
#: on every CPU, the reading one included ("running/total")
_LOADAVG = "/proc/loadavg"
#: the least time over which :func:`cores_contended` measures a thread's wait (s)
CONTENTION_WINDOW = 0.02
#: the share of a window's wall time a thread may wait for a CPU while the cores are
#: still counted as free (a thread competing with as many busy ones as there are cores
#: waits about half the time, or a third with one other spinning beside it)
CONTENTION_SHARE = 0.1
#: while alone, the run queue's length is read at most once per this many seconds
#: (about 5 us a read, :func:`_running`)
CONTENTION_SAMPLE = CONTENTION_WINDOW / 8
#: where the run queue cannot be read (:func:`_others_limit`): how long a thread that
#: found the cores contended runs small jobs alone before it shares and measures again
#: (s), doubled each time the cores are still contended, up to the second
CONTENTION_BACKOFF = (0.1, 2.0)
#: False: :func:`cores_contended` always says no, whatever the load (tests whose
#: expectations count the helper threads' work set it, to be independent of the load)
CONTENTION_GATE = True


class _Contention(threading.local):
    alone = False  # the verdict: small jobs run in the calling thread alone
    since = 0.0  # alone: held so, without measuring, until then (the back-off)
    start = 0.0  # the window's start
    delay = -1  # the thread's run-queue wait at the window's start (ns); -1 none read
    backoff = CONTENTION_BACKOFF[0]
    sampled = 0.0  # the last read of the run queue (alone)
    others = 0  # the other runnable threads seen by this window's reads, summed
    samples = 0  # and how many reads
    queue = False  # whether the run queue is read (:func:`_others_limit`)
    supported = True  # False where the scheduler statistics cannot be read


_contention = _Contention()


def _read_proc(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)  # (5 us; open() takes 25)
    except OSError:
        return None
    try:
        return os.read(fd, 128)  # (a new descriptor: from the start; no pread everywhere)
    except OSError:
        return None
    finally:
        os.close(fd)


def _run_delay() -> int | None:
    """This thread's time spent runnable but waiting for a CPU (ns), or ``None``."""
    data = _read_proc(_SCHEDSTAT)
    try:
        return int(data.split()[1]) if data is not None else None
    except (ValueError, IndexError):
        return None


def _running() -> int | None:
    """The threads runnable right now on the whole machine, the calling one included
    (Linux ``/proc/loadavg``), or ``None``."""
    data = _read_proc(_LOADAVG)
    try:
        return int(data.split()[3].split(b"/")[0]) if data is not None else None
    except (ValueError, IndexError):
        return None


def _others_limit() -> float | None:
    """The most other runnable threads, on average, beside which the calling thread and
    one helper still find a core each (cores - 1.5: on 2 cores, none but now and then),
    or ``None`` where the run queue says nothing of this thread's cores: it counts
    every CPU's, so only a thread free to run on all of them can read it."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = len(os.sched_getaffinity(0))
    return cores - 1.5 if cores == os.cpu_count() else None


def _open_window(st: _Contention, now: float) -> bool:
    delay = _run_delay()
    if delay is None:
        st.supported = False
        return False
    st.start, st.delay, st.sampled, st.others, st.samples = now, delay, now, 0, 0
    limit = _others_limit()
    st.queue = limit is not None
    if limit is not None and not st.alone:  # (the first window: as the run queue is now)
        running = _running()
        st.alone = running is not None and running - 1 > limit
    return st.alone


def cores_contended() -> bool:
    """Whether the cores are busy with other work, as the calling thread sees it.  Then
    small jobs (a box read) should run in the calling thread alone: a helper thread that
    shares a job of a millisecond waits for a core too, and the caller waits for the
    helper's last piece, a time slice of another process's (issue 44: 100 boxes 0.054 ->
    0.157 s beside one busy process).

    Measured over windows of at least ``CONTENTION_WINDOW`` (Linux scheduler statistics,
    read once per window) on the calling thread's own calls:

    * sharing, the cores count as contended once the thread waited, runnable, for a CPU
      for more than ``CONTENTION_SHARE`` of a window;
    * alone, the thread's own wait says nothing of one other busy process (the helper
      asleep, it finds a free core), so the machine's run queue is read too, every
      ``CONTENTION_SAMPLE``: the cores count as free again, and small jobs share from
      the next call, after a window where the thread did not wait and the other
      runnable threads were, on average, at most ``_others_limit()``.  Where the run
      queue cannot be read (not every core is this thread's), the verdict is held for
      a back-off (``CONTENTION_BACKOFF``, doubling while contended), then a window of
      sharing measures again.

    The first window starts alone when more than ``_others_limit()`` other threads are
    runnable at that moment.  A window spanning other work of the thread (a peer
    library's read, where it mostly sleeps) is judged on its wall time too: its wait is
    diluted, unless the cores were contended.  ``False`` where the statistics cannot be
    read (not Linux).  About 1 us a call, 5 us more once a window (and, alone, once a
    ``CONTENTION_SAMPLE``)."""
    now = time.monotonic()
    st = _contention
    if not (st.supported and CONTENTION_GATE):
        return False
    elapsed = now - st.start
    if st.alone:
        if now < st.since:
            return True
        if st.queue and now - st.sampled >= CONTENTION_SAMPLE:
            running = _running()
            if running is not None:
                st.others += running - 1
                st.samples += 1
            st.sampled = now
    if st.delay < 0:
        return _open_window(st, now)
    if elapsed < CONTENTION_WINDOW:
        return st.alone
    delay = _run_delay()
    if delay is None:
        st.supported = False
        return False
    waited = delay - st.delay > CONTENTION_SHARE * elapsed * 1e9
    limit = _others_limit()
    st.queue = limit is not None
    if not st.alone:
        if waited:
            st.alone = True
            if limit is None:  # (the back-off: nothing tells when the cores are free)
                st.since = now + st.backoff
                st.backoff = min(2 * st.backoff, CONTENTION_BACKOFF[1])
        else:
            st.backoff = CONTENTION_BACKOFF[0]
    elif limit is None or not st.samples:  # (the back-off is over: share, measuring)
        st.alone = False
    else:
        st.alone = waited or st.others > limit * st.samples
    st.start, st.delay, st.sampled, st.others, st.samples = now, delay, now, 0, 0
    return st.alone


def get_pool(threads: int) -> ThreadPoolExecutor:
    """The shared pool, grown to at least ``threads`` workers."""
    return _cpu_pool.get(threads)


#: below this many bytes of work a job runs inline: handing it to threads costs more
INLINE_WORK_BYTES = 256 * 1024


def map_unordered_into(
    fn: Callable[[T], None], items: Iterable[T], *, work_bytes: int | None = None,
    threads: int | None = None
) -> None:
    """Run ``fn(item)`` for every item on the pool; re-raise the first error.

    ``work_bytes`` estimates the bytes the whole job processes; small jobs run
    inline in the calling thread.  All tasks are waited for before returning or
    raising, so no task is still writing into a caller's buffer afterwards.  The
    first error (or a ``KeyboardInterrupt`` in the calling thread) stops the job:
    workers skip the items they have not started.  ``threads``: the pool's threads to
    use (``None``: ``config threads``; the engine passes the count its call resolved).
    """
    items = list(items)
    if threads is None:
        threads = config.get("threads")
    nbatches = batch_count(len(items), work_bytes, threads=threads)
    if nbatches <= 1:
        for item in items:
            fn(item)
        return
    size = -(-len(items) // nbatches)
    _run_batches(get_pool(threads), fn,
                 [items[i:i + size] for i in range(0, len(items), size)])


def map_dynamic_into(
    fn: Callable[[T], None], items: Iterable[T], *, work_bytes: int | None = None,
    threads: int | None = None
) -> None:
    """:func:`map_unordered_into` for items that are batches already (a kernel call
    each): the pool's threads and the calling thread take the items one at a time, in
    order, from one shared queue, so a thread slowed down (another process on its
    core, a slower item) takes fewer of them instead of leaving the others idle at the
    end.  Inline when :func:`batch_count` says one batch; same error and interrupt
    semantics."""
    items = list(items)
    if threads is None:
        threads = config.get("threads")
    if batch_count(len(items), work_bytes, threads=threads) <= 1:
        for item in items:
            fn(item)
        return
    threads = min(threads, len(items))
    shared = _SharedItems(items)
    # (every thread iterates the same queue: _run_batches runs each "batch" to its end)
    _run_batches(get_pool(threads), fn, [shared] * threads)  # type: ignore[list-item]


class _SharedItems:
    """An iterator over a list that several threads may draw from (under a lock)."""

    def __init__(self, items: list) -> None:
        self._items = items
        self._next = 0
        self._lock = threading.Lock()

    def __iter__(self) -> _SharedItems:
        return self

    def __next__(self) -> Any:
        with self._lock:
            i = self._next
            if i >= len(self._items):
                raise StopIteration
            self._next = i + 1
        return self._items[i]


def map_weighted_into(
    fn: Callable[[T], None], items: Iterable[T], weights: Sequence[int], *,
    work_bytes: int | None = None, threads: int | None = None
) -> None:
    """:func:`map_dynamic_into` for items of unequal work (``weights``, in any unit),
    heaviest first: no thread is left with most of the work at the end (contiguous
    slices of shards, say, can hold all the full ones while another holds the edges)."""
    items = list(items)
    if len(weights) != len(items):
        raise ValueError(f"map_weighted_into: {len(items)} items but {len(weights)} weights")
    order = sorted(range(len(items)), key=lambda i: -weights[i])
    map_dynamic_into(fn, [items[i] for i in order], work_bytes=work_bytes, threads=threads)


def batch_count(n: int, work_bytes: int | None = None, *, threads: int | None = None) -> int:
    """How many batches :func:`map_unordered_into` runs ``n`` items (``work_bytes`` of
    work in all) in; 1: all inline, in the calling thread.  At most 4 per thread (one
    future per chunk costs ~10 µs), and a small job one per thread: each extra
    handoff costs more than it balances.  Callers that batch items themselves (one
    kernel call per batch) use it to make as many batches as there will be tasks.
    ``threads``: as :func:`map_unordered_into` takes it."""
    if threads is None:
        threads = config.get("threads")
    small = work_bytes is not None and work_bytes < INLINE_WORK_BYTES
    if threads <= 1 or n <= 1 or small or _in_task.active:
        return 1
    return min(n, threads * 4 if n >= 16 * threads else threads)



def map_io(fn: Callable[[T], None], items: Iterable[T], *, io: int | None = None) -> None:
    """Run ``fn(item)`` for every item on the I/O pool (``config io_concurrency``
    threads): for blocking requests to remote stores, where latency, not the CPU,
    bounds the work.  Same error and interrupt semantics as :func:`map_unordered_into`."""
    items = list(items)
    n = config.get("io_concurrency") if io is None else io
    if n <= 1 or len(items) <= 1 or _in_task.active:
        for item in items:
            fn(item)
        return
    _run_batches(_io_pool.get(n), fn, [[item] for item in items])


def map_io_then(fetch: Callable[[T], R], items: Iterable[T],
                then: Callable[[U], None],
                split: Callable[[T, R], Iterable[U]], *, io: int | None = None,
                threads: int | None = None) -> None:
    """For every item, ``fetch(item)`` on the I/O pool (``config io_concurrency``
    threads; blocking requests to a remote store) and, as soon as it is done,
    ``then(part)`` on the compute pool for each part of ``split(item, result)``.
    Decoding the first fetched chunks thus overlaps the requests still in flight.
    Every task is waited for before returning or raising the first error in order of
    the items (an error stops the job: tasks not started are skipped), as in
    :func:`map_unordered_into`."""
    items = list(items)
    n_io = config.get("io_concurrency") if io is None else io
    if threads is None:
        threads = config.get("threads")
    if _in_task.active or len(items) == 0 or (n_io <= 1 and threads <= 1):
        for item in items:
            for part in split(item, fetch(item)):
                then(part)
        return
    stop = False

    def guarded(fn: Callable[..., Any], arg: Any) -> Any:
        nonlocal stop
        if stop:
            return None
        outer = _in_task.active
        _in_task.active = True
        try:
            return fn(arg)
        except BaseException:
            stop = True
            raise
        finally:
            _in_task.active = outer

    io = _io_pool.get(max(1, n_io))
    cpu = get_pool(threads) if threads > 1 else None
    fetches = {io.submit(guarded, fetch, item): item for item in items}
    thens: list[Future] = []
    pending = set(fetches)
    try:
        while pending and not stop:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                if f.exception() is not None:
                    stop = True  # (raised below, the first in order of the items)
                    break
                for part in split(fetches[f], f.result()):
                    if cpu is None:
                        then(part)  # one compute thread: this one
                    else:
                        thens.append(cpu.submit(guarded, then, part))
        wait([*fetches, *thens])
        for f in [*fetches, *thens]:
            f.result()  # (after an error: the first one, in order of the items)
    except BaseException:
        stop = True
        _wait_quietly([*fetches, *thens])
        raise


def _run_batches(pool: ThreadPoolExecutor, fn: Callable[[T], None],
                 batches: list[list[T]]) -> None:
    """Run the batches on ``pool``, the first one in the calling thread."""
    stop = False

    def run(batch: list[T]) -> None:
        nonlocal stop
        outer = _in_task.active
        _in_task.active = True
        try:
            for item in batch:
                if stop:
                    return
                fn(item)
        except BaseException:
            stop = True
            raise
        finally:
            _in_task.active = outer

    futures: list[Future] = [pool.submit(run, b) for b in batches[1:]]
    first_error: BaseException | None = None
    try:
        run(batches[0])  # the caller works too
        for f in futures:
            f.result()
    except BaseException as e:  # noqa: BLE001 - includes KeyboardInterrupt
        first_error = e
        stop = True
    if first_error is not None:
        _wait_quietly(futures)
        raise first_error


def _wait_quietly(futures: list[Future]) -> None:
    """Cancel what has not started and wait for the rest, even through further
    interrupts: callers' buffers must not be written after we return."""
    for f in futures:
        f.cancel()
    pending = [f for f in futures if not f.done()]
    while pending:
        try:
            wait(pending)
        except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C while stopping
            pass
        pending = [f for f in pending if not f.done()]
