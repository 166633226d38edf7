"""Cancelling a task that awaits zarrfast stops the waiting, not the work: a write
still completes (the promise of zarrfast.hierarchy.asynchronous), whether a thread of the
loop's executor had started it or it was still queued behind other awaits.  The tests
wait for the write's own job (its future), never for some time."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import zarrfast
import zarrfast.api.asynchronous as za
from zarrfast.storage import AsyncStore, MemoryStore

from _helpers.loop_jobs import HANG, RecordingExecutor, until

pytestmark = pytest.mark.asyncio


async def _nothing(store):
    return store


def _check_setitem(store):
    np.testing.assert_array_equal(zarrfast.open_array(store, path="a")[...], np.arange(8))


#: name: (what is made before, the write (a coroutine), what the write left)
WRITES = {
    "AsyncArray.setitem": (
        lambda store: za.create_array(store, name="a", shape=(8,), chunks=(3,), dtype="i4"),
        lambda arr: arr.setitem(slice(1, 8), np.arange(1, 8)), _check_setitem),
    "AsyncStore.set": (
        _nothing, lambda store: AsyncStore(store).set("k", b"value"),
        lambda store: store.get("k") == b"value" or pytest.fail(repr(store.get("k")))),
    "save_array": (
        _nothing, lambda store: za.save_array(store, np.arange(8), path="a"), _check_setitem),
    "Group.update_attributes_async": (
        lambda store: za.open_group(store, mode="w"),
        lambda group: group._node.update_attributes_async({"x": 1}),
        lambda store: dict(zarrfast.open_group(store).attrs) == {"x": 1}
        or pytest.fail(repr(dict(zarrfast.open_group(store).attrs)))),
}


@pytest.mark.parametrize("write", list(WRITES))
async def test_a_write_cancelled_while_queued_still_completes(write: str) -> None:
    """Before: ``asyncio.to_thread`` cancels the executor's job of a cancelled task when
    no thread has taken it yet, so a write queued behind other awaits (here: the loop's
    one executor thread busy) was dropped whole; every element stayed 0."""
    prepare, run, check = WRITES[write]
    loop = asyncio.get_running_loop()
    executor = RecordingExecutor(max_workers=1)
    loop.set_default_executor(executor)
    store = MemoryStore()
    target = await prepare(store)
    gate = threading.Event()
    busy = loop.run_in_executor(None, gate.wait, HANG)  # the one thread is busy
    try:
        before = len(executor.jobs)
        task = asyncio.create_task(run(target))
        await until(lambda: len(executor.jobs) > before, f"{write} to queue its job")
        job = executor.jobs[-1]
        assert not job.running() and not job.done()  # queued, not started
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        gate.set()
    await busy
    assert not job.cancelled(), f"the cancelled {write} was dropped, not completed"
    await asyncio.wrap_future(job)  # the write's own job, to its end
    check(store)
