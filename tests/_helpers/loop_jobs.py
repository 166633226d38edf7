"""The jobs an event loop hands to its default executor, for tests of what cancelling
an ``await`` does to them.

:class:`RecordingExecutor` is a real :class:`~concurrent.futures.ThreadPoolExecutor`
that keeps the future of every job submitted to it; a test installs it as the running
loop's default executor (``loop.set_default_executor``) before the first
``asyncio.to_thread``, then waits for a job itself (its future) instead of waiting some
time and hoping it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

#: a bound that only ends a hang
HANG = 600.0


class RecordingExecutor(ThreadPoolExecutor):
    def __init__(self, max_workers: int) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="test-loop-job")
        self.jobs: list[Future] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        job = super().submit(fn, *args, **kwargs)
        self.jobs.append(job)
        return job


async def until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop run until ``condition()`` (``HANG`` seconds only end a hang)."""
    loop = asyncio.get_running_loop()
    hang = loop.time() + HANG
    while not condition():
        if loop.time() > hang:
            raise AssertionError(f"still waiting for {what} after {HANG} s: a hang")
        await asyncio.sleep(0.001)
