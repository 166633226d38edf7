"""Loader workers (issue 45, part 3): arrays travel by pickle into worker processes
started with ``spawn``, ``fork`` and ``forkserver`` and read there, after the parent has
used zarrfast's thread pools; many threads read one array at once.

What is covered elsewhere and not repeated here: tests/engine/test_threads.py forks with
``os.fork`` (no pickling) and reads an uncompressed local array in the child;
tests/integrations/test_zarr_python_pipeline.py reads a zarr-python array through
zarrfast's pipeline in ``fork`` and ``spawn`` children (opened there from its path);
tests/engine/test_batch_decode.py reads a zstd array from 4 threads with plain
selections; tests/hierarchy/test_array.py and tests/api/test_behaviour.py pickle arrays
within one process.  Here the arrays themselves are pickled (as ``multiprocessing.Pool``
and ``torch.utils.data.DataLoader`` hand datasets to their workers) for sharded and
plain zstd arrays in a directory and in a ``MemoryStore``, and workers read them with
plain, orthogonal and batched (``get_many``) selections.

Every wait on a child or a thread has a deadline (``HANG``): a deadlock fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency
from zarrfast.codecs import ZstdCodec

#: only ends a hang: a test that reaches it fails, saying what it waited for
HANG = 120

#: data of (64, 64, 64) float64 in chunks of 32 KiB: a whole read (2 MiB) goes to the
#: thread pool, not inline
SHAPE = (64, 64, 64)
CHUNKS = (4, 32, 32)

#: (1, 64, 64) tiles and boxes that cross chunks and shards
TILES: list[Any] = [np.s_[k:k + 1] for k in (0, 17, 63, 17, 40)] + [
    np.s_[3:9, 30:34, ::3], np.s_[31:33, :, 60], np.s_[-5:, 1, :],
]
#: rows to gather along the first dimension: unsorted, repeated, negative
ROWS = np.array([5, 63, 0, 5, -1, 32, 31, 7, 7, 48])

KINDS = ["local-sharded-zstd", "local-zstd", "memory-sharded-zstd"]


def _data() -> np.ndarray:
    return np.random.default_rng(45).normal(size=SHAPE)


def _make(kind: str, root: Path) -> zarrfast.Array:
    """A (64, 64, 64) float64 array of ``_data()`` of the given kind."""
    store: Any = zarrfast.MemoryStore() if kind.startswith("memory") else str(root / "a.zarr")
    shards = (16, 64, 64) if "sharded" in kind else None
    array = zarrfast.create_array(store, shape=SHAPE, chunks=CHUNKS, shards=shards,
                                  dtype="float64", compressors=ZstdCodec(level=1))
    array[...] = _data()
    return array


def _warm_up(array: zarrfast.Array) -> None:
    """The parent reads first, on zarrfast's thread pool (a whole read, a gather and a
    batch), so workers start from a process whose pools have threads."""
    data = _data()
    with zarrfast.config.set(threads=2):
        np.testing.assert_array_equal(array[...], data)
        np.testing.assert_array_equal(array.oindex[ROWS, :, 3], data[ROWS, :, 3])
        for got, sel in zip(array.get_many(TILES), TILES, strict=True):
            np.testing.assert_array_equal(got, data[sel])
    assert concurrency._cpu_pool.executor is not None, "the parent's pool has no threads"


def _read_in_worker(array: zarrfast.Array) -> dict[str, Any]:
    """In a worker: what the array reads (run by ``Pool.map``: the array came pickled)."""
    with zarrfast.config.set(threads=2):
        out: dict[str, Any] = {
            "pid": os.getpid(),
            "whole": array[...],
            "tiles": [array[sel] for sel in TILES],
            "rows": array.oindex[ROWS, :, 3],
            "many": array.get_many(TILES),
            "batch": np.empty((5, 1, *SHAPE[1:]), dtype=array.dtype),
        }
        array.get_many(TILES[:5], out=out["batch"])
    return out


def _check(got: dict[str, Any], data: np.ndarray, where: str) -> None:
    np.testing.assert_array_equal(got["whole"], data, err_msg=where)
    for part, sel in zip(got["tiles"], TILES, strict=True):
        np.testing.assert_array_equal(part, data[sel], err_msg=f"{where}: {sel}")
    np.testing.assert_array_equal(got["rows"], data[ROWS, :, 3], err_msg=where)
    assert len(got["many"]) == len(TILES), where
    for part, sel in zip(got["many"], TILES, strict=True):
        np.testing.assert_array_equal(part, data[sel], err_msg=f"{where}: get_many {sel}")
    np.testing.assert_array_equal(got["batch"], np.stack([data[s] for s in TILES[:5]]),
                                  err_msg=f"{where}: get_many out=")


def _map_in_pool(method: str, arrays: list[zarrfast.Array]) -> list[dict[str, Any]]:
    """``Pool(2).map(_read_in_worker, arrays)`` in processes started with ``method``,
    failing after ``HANG`` seconds (the pool is then terminated: no child is left)."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method!r} start method here")
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:  # (leaving the block terminates the workers)
        pending = pool.map_async(_read_in_worker, arrays, chunksize=1)
        try:
            return pending.get(timeout=HANG)
        except multiprocessing.TimeoutError:
            pytest.fail(f"{method} workers did not answer in {HANG} s: a deadlock?")


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
@pytest.mark.parametrize("kind", KINDS)
def test_pickled_arrays_read_in_worker_processes(kind: str, method: str,
                                                 tmp_path: Path) -> None:
    array = _make(kind, tmp_path)
    _warm_up(array)
    read_only = zarrfast.open_array(str(tmp_path / "a.zarr"), mode="r") \
        if kind.startswith("local") else array
    # two tasks, each with its own pickled copy: one per worker, or both in one
    results = _map_in_pool(method, [array, read_only])
    data = _data()
    for k, got in enumerate(results):
        _check(got, data, f"{kind}, {method} worker {got['pid']}, task {k}")
    assert all(got["pid"] != os.getpid() for got in results)
    if kind.startswith("memory"):
        # a MemoryStore travels as a copy of its values: the parent's array is its own
        assert pickle.loads(pickle.dumps(array)).store is not array.store
    # and the parent reads on, its pool intact
    with zarrfast.config.set(threads=2):
        np.testing.assert_array_equal(array[...], data)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_fork_while_the_parent_reads(tmp_path: Path) -> None:
    """Workers forked while threads of the parent are in the middle of reads (zarrfast's
    pools busy, locks perhaps held at the fork) read without deadlock."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no 'fork' start method here")
    array = _make("local-sharded-zstd", tmp_path)
    data = _data()
    stop = threading.Event()
    errors: list[BaseException] = []
    first_read = threading.Event()

    def keep_reading() -> None:
        try:
            while not stop.is_set():
                np.testing.assert_array_equal(array[...], data)
                for got, sel in zip(array.get_many(TILES), TILES, strict=True):
                    np.testing.assert_array_equal(got, data[sel])
                first_read.set()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            first_read.set()

    readers = [threading.Thread(target=keep_reading, daemon=True) for _ in range(2)]
    with zarrfast.config.set(threads=2):
        for t in readers:
            t.start()
        try:
            # the readers are under way (a read has ended)
            assert first_read.wait(HANG), "the parent's readers hung"
            assert not errors, errors
            for _ in range(3):  # three pools, each forked while the readers read
                for k, got in enumerate(_map_in_pool("fork", [array, array])):
                    _check(got, data, f"forked worker {got['pid']}, task {k}")
        finally:
            stop.set()
            for t in readers:
                t.join(timeout=HANG)
    assert not any(t.is_alive() for t in readers), "a reader of the parent hung"
    assert not errors, errors


# -- threads ----------------------------------------------------------------------------------


def _run_threads(target: Any, n: int) -> None:
    """Run ``target(k)`` in ``n`` threads that start together; fail on the first error,
    or when a thread is still running after ``HANG`` seconds (daemon threads: a hung one
    does not hold the test process at exit)."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            barrier.wait(timeout=HANG)
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + HANG
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"a thread hung after {HANG} s"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("kind", ["local-sharded-zstd", "memory-sharded-zstd", "local-zstd"])
def test_many_threads_read_one_array(kind: str, tmp_path: Path) -> None:
    """8 threads read one array handle at once: plain reads, gathers and batches through
    get_many, each thread its own random selections."""
    array = _make(kind, tmp_path)
    data = _data()

    def read(k: int) -> None:
        rng = np.random.default_rng(k)
        for _ in range(4):
            starts = rng.integers(0, SHAPE[0], size=16)
            tiles = [np.s_[int(s):int(s) + 1] for s in starts]
            for sel in tiles[:4]:
                np.testing.assert_array_equal(array[sel], data[sel])
            rows = rng.integers(-SHAPE[1], SHAPE[1], size=40)
            np.testing.assert_array_equal(array.oindex[:, rows, k], data[:, rows, k])
            for got, sel in zip(array.get_many(tiles), tiles, strict=True):
                np.testing.assert_array_equal(got, data[sel])
            batch = np.empty((16, 1, *SHAPE[1:]), dtype=array.dtype)
            array.get_many(tiles, out=batch)
            np.testing.assert_array_equal(batch, data[starts][:, None])

    with zarrfast.config.set(threads=2):
        _run_threads(read, 8)
