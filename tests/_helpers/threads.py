"""Running a test's work on threads of its own, and waiting for a forked child with a
bound, so that a hang fails the test instead of the run."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest


def run_in_threads(fn: Callable[[int], None], n: int) -> list[BaseException]:
    """``fn(k)`` for ``k`` in ``range(n)``, each on a thread of its own, all joined; the
    errors they raised (the configuration is the process's: set it around this call,
    not in ``fn``, whose ``config.set`` contexts could end out of order)."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            fn(k)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def wait_child(pid: int, what: str, timeout: float = 60.0) -> int:
    """The wait status of the forked child ``pid``; killed, and the test failed, when it
    has not ended after ``timeout`` seconds (a child waiting on the parent's threads
    would hang): ``what`` says what it was doing."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"the forked child hung {what}")
        time.sleep(0.01)
