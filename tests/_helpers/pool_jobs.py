"""Holding the tasks of a zarrfast.concurrency job until the pool has stopped it.

A test of "the first error (or a Ctrl-C) stops the job" cannot count how many items ran
before the stop landed: that depends on how fast the machine is.  Instead its tasks are
held until the pool's own stop flag is up (:func:`job_stopped`), so the failure always
finds them in flight, and :class:`JobThreads` records whether a thread that has seen the
stop starts another item (which the pool must never let happen).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from zarrfast import concurrency

#: a bound that only ends a hang (a test that reaches it fails, saying what it waited for)
HANG = 600.0
_CONCURRENCY = os.path.realpath(concurrency.__file__)


def job_stopped() -> bool:
    """Whether the pool job running the calling task has been told to stop.

    The pool's workers read a flag, ``stop``, before each item they start
    (zarrfast/concurrency.py); this reads it from the frame of the pool code that
    called the task, on this thread's own stack.  A task held until it is up knows the
    pool has seen the error however slow the machine is: a test counts what
    starts after that, not what fits in some time."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if (os.path.realpath(code.co_filename) == _CONCURRENCY
                and "stop" in code.co_freevars + code.co_cellvars):
            return bool(frame.f_locals["stop"])
        frame = frame.f_back
    raise AssertionError("no task of a zarrfast.concurrency job (with its stop flag) on "
                         "this thread's stack: the pool changed, update job_stopped")


def hold_until(condition, what: str) -> None:
    """Wait until ``condition()`` (polled; ``HANG`` only ends a hang)."""
    hang = time.monotonic() + HANG
    while not condition():
        if time.monotonic() > hang:
            raise AssertionError(f"still waiting for {what} after {HANG} s: a hang")
        time.sleep(0.001)


class JobThreads:
    """What each thread did in a job: the items it started, and whether it started one
    after it had seen the job stopped (which the pool must never let happen)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[tuple[str, object]] = []
        self.held = 0  # tasks held until the job stopped
        self.saw_stop: set[int] = set()  # threads that have seen it
        self.after_stop: list[tuple[str, object]] = []

    def start(self, item: object) -> None:
        me = threading.get_ident()
        with self.lock:
            self.started.append((threading.current_thread().name, item))
            if me in self.saw_stop:
                self.after_stop.append((threading.current_thread().name, item))

    def hold(self) -> None:
        """Hold this task until the job has stopped; remember this thread saw it."""
        with self.lock:
            self.held += 1
        hold_until(job_stopped, "the pool to stop the job")
        with self.lock:
            self.saw_stop.add(threading.get_ident())
