"""Concurrent writers (issue "Reliability II", classes 11 and 12), with real threads and
real processes.

11. Threads of one process creating the same node (``open_group(mode="a")``,
    ``require_group``, ``require_array``) all succeed and get the same node; deleting a
    node while another thread writes its chunks either succeeds or raises a zarrfast
    error naming the key, never a raw ``OSError``.
12. Writers appending to one array (``Array.append``: a read-modify-write of the
    metadata, then the new rows' chunks) keep every row: on a ``LocalStore`` across
    processes (a lock file in the array's directory), on every store across the threads
    of one process; a store without an inter-process lock (fsspec) reports a conflicting
    update it can see with ``ConcurrentWriteError`` instead of losing the other rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore, MemoryStore

from _helpers.locks import FLOCK_HOLDER

N_THREADS = 16
ENV = {**os.environ, "ZARRFAST_THREADS": "2"}
#: the lock file LocalStore makes in an array's directory while it updates its metadata
LOCK_NAME = ".zarrfast.lock"


@pytest.fixture
def fast_switching():
    """Switch threads often, so that the threads' steps interleave finely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _make_store(kind: str, tmp_path: Path) -> zarrfast.Store:
    return MemoryStore() if kind == "memory" else LocalStore(tmp_path / "data.zarr")


def _race(n: int, fn: Callable[[int], Any], timeout: float = 30.0
          ) -> tuple[list[Any], list[BaseException]]:
    """Run ``fn(i)`` in ``n`` threads released together by a barrier; the results and
    the exceptions raised."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - collected and asserted on
            with lock:
                errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(deadline - time.monotonic(), 0.0))
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock?"
    return results, errors


def _describe(errors: list[BaseException]) -> str:
    return "; ".join(f"{type(e).__name__}: {e}" for e in errors[:3])


# -- 11. creating the same node from many threads ------------------------------------------

ROUNDS = 40


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_open_group_on_one_path_all_get_the_group(kind, tmp_path, fast_switching):
    store = _make_store(kind, tmp_path)
    failures = []
    for r in range(2 * ROUNDS):  # (its race is the narrowest)
        path = f"round{r}/g"
        results, errors = _race(N_THREADS, lambda i, p=path: zarrfast.open_group(
            store, mode="a", path=p))
        failures += errors
        if not errors:
            assert all(isinstance(g, zarrfast.Group) and g.path == path for g in results)
    assert not failures, f"{len(failures)} of {2 * ROUNDS * N_THREADS} calls failed: " \
                         f"{_describe(failures)}"
    root = zarrfast.open_group(store, mode="r")
    assert sorted(root.group_keys()) == sorted(f"round{r}" for r in range(2 * ROUNDS))


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_require_group_all_get_the_group(kind, tmp_path, fast_switching):
    store = _make_store(kind, tmp_path)
    zarrfast.open_group(store, mode="w")
    failures = []
    for r in range(ROUNDS):
        results, errors = _race(N_THREADS, lambda i, r=r: zarrfast.open_group(
            store, mode="a").require_group(f"g{r}"))
        failures += errors
        if not errors:
            assert {g.path for g in results} == {f"g{r}"}
            assert all(isinstance(g, zarrfast.Group) for g in results)
    assert not failures, f"{len(failures)} of {ROUNDS * N_THREADS} calls failed: " \
                         f"{_describe(failures)}"


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_require_array_all_get_the_array(kind, tmp_path, fast_switching):
    store = _make_store(kind, tmp_path)
    zarrfast.open_group(store, mode="w")
    failures = []
    for r in range(ROUNDS):
        name = f"a{r}"
        results, errors = _race(N_THREADS, lambda i, n=name: zarrfast.open_group(
            store, mode="a").require_array(n, shape=(100,), dtype="i4", chunks=(10,)))
        failures += errors
        if errors:
            continue
        assert all(isinstance(a, zarrfast.Array) and a.path == name for a in results)
        assert {(a.shape, a.dtype) for a in results} == {((100,), np.dtype("i4"))}
        # the same node: what one thread's object writes, another's reads
        results[0][:] = np.arange(100)
        np.testing.assert_array_equal(results[-1][:], np.arange(100))
    assert not failures, f"{len(failures)} of {ROUNDS * N_THREADS} calls failed: " \
                         f"{_describe(failures)}"
    # an incompatible request is still refused, naming the array
    g = zarrfast.open_group(store, mode="a")
    with pytest.raises(ZarrfastError, match="a0"):
        g.require_array("a0", shape=(5,), dtype="i4")
    with pytest.raises(ZarrfastError, match="a0"):
        g.require_group("a0")


# -- 11. deleting a node while another thread writes it ------------------------------------


def _delete_while_writing(store: zarrfast.Store, how: str, rounds: int
                          ) -> list[BaseException]:
    errors: list[BaseException] = []
    for r in range(rounds):
        g = zarrfast.open_group(store, mode="a")
        name = f"a{r}"
        a = g.create_array(name, shape=(64, 256), chunks=(8, 8), dtype="f8",
                           fill_value=0.0, compressors=None)
        stop = threading.Event()

        def writer(i: int, a=a, g=g, name=name, stop=stop) -> None:
            if i == 0:
                try:
                    for v in range(1, 5):
                        a[...] = v
                        a[3:37, 5:99] = -v  # partial chunks: read-modify-write
                finally:
                    stop.set()
            else:
                for _ in range(40):
                    if stop.is_set():
                        return
                    time.sleep(0.002)
                    if how == "delitem":
                        try:
                            del g[name]
                        except KeyError:  # (MemberNotFoundError) already gone
                            pass
                    else:
                        store.delete_dir(name)

        _, errs = _race(2, writer, timeout=60)
        errors += errs
    return errors


@pytest.mark.parametrize("how", ["delitem", "delete_dir"])
def test_deleting_a_node_while_a_thread_writes_it_raises_no_raw_error(how, tmp_path):
    errors = _delete_while_writing(LocalStore(tmp_path / "data.zarr"), how, rounds=10)
    # MemoryStore: deleting and writing interleave harmlessly
    errors += _delete_while_writing(MemoryStore(), how, rounds=4)
    raw = [e for e in errors if not isinstance(e, ZarrfastError)]
    assert not raw, f"{len(raw)} raw errors: {_describe(raw)}"
    for e in errors:  # a zarrfast error names the key or node
        assert "'a" in str(e), str(e)


# -- 12. appending from many threads -----------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_appending_keep_every_row(kind, tmp_path, fast_switching):
    store = _make_store(kind, tmp_path)
    zarrfast.create_array(store, name="a", shape=(0, 3), chunks=(7, 3), dtype="i8",
                          fill_value=-1)
    per_thread = 12

    def appender(k: int) -> None:
        a = zarrfast.open_array(store, path="a", mode="r+")  # its own (cached) metadata
        for i in range(per_thread):
            a.append(np.full((1, 3), k * 1000 + i, dtype="i8"))

    _, errors = _race(8, appender)
    assert not errors, _describe(errors)
    a = zarrfast.open_array(store, path="a", mode="r")
    data = a[...]
    expected = sorted(k * 1000 + i for k in range(8) for i in range(per_thread))
    kept = len(set(data[:, 0].tolist()) & set(expected))
    assert a.shape == (8 * per_thread, 3) and kept == len(expected), \
        f"shape {a.shape}; {kept} of {len(expected)} rows kept"
    assert sorted(data[:, 0].tolist()) == expected
    assert (data == data[:, :1]).all()


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_attribute_updates_do_not_undo_a_concurrent_append(kind, tmp_path, fast_switching):
    store = _make_store(kind, tmp_path)
    zarrfast.create_array(store, name="a", shape=(0,), chunks=(5,), dtype="i8",
                          fill_value=-1)
    n = 100

    def work(k: int) -> None:
        a = zarrfast.open_array(store, path="a", mode="r+")
        for i in range(n):
            if k == 0:
                a.append(np.array([i]))
            else:
                a.attrs[f"t{k}"] = i

    _, errors = _race(3, work)
    assert not errors, _describe(errors)
    a = zarrfast.open_array(store, path="a", mode="r")
    assert a.shape == (n,), f"{a.shape[0]} of {n} appended rows kept"
    np.testing.assert_array_equal(a[...], np.arange(n))
    assert a.attrs["t1"] == a.attrs["t2"] == n - 1


# -- 12. appending from many processes -----------------------------------------------------

_APPENDER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import zarrfast
    from zarrfast.storage import LocalStore
    root, k, n, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    a = zarrfast.open_array(LocalStore(root), path="g/a", mode="r+")
    time.sleep(max(start - time.time(), 0))
    for i in range(n):
        a.append(np.full((1, 4), k * 1000 + i, dtype="i8"))
""")


def test_processes_appending_to_a_local_array_keep_every_row(tmp_path, subprocess_cwd):
    root = tmp_path / "data.zarr"
    g = zarrfast.open_group(LocalStore(root), mode="w").create_group("g")
    g.create_array("a", shape=(0, 4), chunks=(8, 4), dtype="i8", fill_value=-1)
    n_procs, per_proc = 3, 30
    start = time.time() + 1.5  # after every child has imported zarrfast
    procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(root), str(k),
                               str(per_proc), str(start)],
                              stderr=subprocess.PIPE, env=ENV, cwd=subprocess_cwd)
             for k in range(n_procs)]
    for p in procs:
        assert p.wait(timeout=60) == 0, p.stderr.read().decode()[-2000:]
    a = zarrfast.open_array(LocalStore(root), path="g/a", mode="r")
    data = a[...]
    expected = sorted(k * 1000 + i for k in range(n_procs) for i in range(per_proc))
    kept = len(set(data[:, 0].tolist()) & set(expected))
    assert a.shape == (n_procs * per_proc, 4) and kept == len(expected), \
        f"shape {a.shape}; {kept} of {len(expected)} rows kept"
    assert sorted(data[:, 0].tolist()) == expected
    assert (data == data[:, :1]).all()
    for k in range(n_procs):  # each process's rows in its order
        mine = data[:, 0][data[:, 0] // 1000 == k]
        assert mine.tolist() == [k * 1000 + i for i in range(per_proc)]
    # the lock file is gone with the last update (and never a key); zarr-python and
    # tensorstore read the array as usual
    assert not (root / "g" / "a" / LOCK_NAME).exists()
    store = LocalStore(root)
    assert not any(LOCK_NAME in key for key in store.list())
    assert LOCK_NAME not in list(store.list_dir("g/a"))
    assert [n for n, _ in zarrfast.open_group(store, mode="r", path="g").members()] == ["a"]
    try:
        import zarr
    except ImportError:
        zarr = None
    if zarr is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            zg = zarr.open_group(str(root), mode="r", path="g")
            assert [n for n, _ in zg.members()] == ["a"]
            np.testing.assert_array_equal(zg["a"][...], data)
            assert zg["a"].nchunks_initialized == -(-len(expected) // 8)
    try:
        import tensorstore as ts
    except ImportError:
        ts = None
    if ts is not None:
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file",
                                                    "path": str(root / "g" / "a")}}).result()
        np.testing.assert_array_equal(t.read().result(), data)




@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_held_lock_bounds_the_wait_and_a_killed_holder_releases_it(tmp_path,
                                                                    subprocess_cwd):
    """Another process holding the array's lock file (``flock``, as zarrfast does): an
    append waits ``lock_timeout`` seconds, then raises ``LockTimeoutError`` naming the
    array, having written nothing; once the holder is killed, appends go through."""
    root = tmp_path / "data.zarr"
    a = zarrfast.create_array(LocalStore(root), name="a", shape=(0,), chunks=(4,),
                              dtype="i8", fill_value=-1)
    a.append(np.arange(3))
    holder = subprocess.Popen([sys.executable, "-c", FLOCK_HOLDER, str(root / "a" / LOCK_NAME)],
                              stdout=subprocess.PIPE, env=ENV, cwd=subprocess_cwd)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        t0 = time.monotonic()
        with zarrfast.config.set(lock_timeout=0.5), pytest.raises(ZarrfastError) as info:
            a.append(np.arange(3, 6))
        waited = time.monotonic() - t0
        assert type(info.value).__name__ == "LockTimeoutError"
        assert isinstance(info.value, TimeoutError) and "'a'" in str(info.value)
        # it waited for the timeout (a floor; how much longer depends on the machine's
        # load, and a wait that never ends would hang here, not pass)
        assert waited >= 0.4, waited
        assert zarrfast.open_array(LocalStore(root), path="a")[...].tolist() == [0, 1, 2]
    finally:
        holder.kill()
        holder.wait(timeout=30)
    a.append(np.arange(3, 6))  # the kernel released the dead holder's lock
    assert zarrfast.open_array(LocalStore(root), path="a")[...].tolist() == list(range(6))
    assert LOCK_NAME not in "".join(LocalStore(root).list())


# -- 12. a store without an inter-process lock: a conflicting update is reported -----------

_FSSPEC_APPENDER = textwrap.dedent("""
    import sys
    import numpy as np
    import zarrfast
    from zarrfast.storage import FsspecStore
    url, n = sys.argv[1], int(sys.argv[2])
    store = FsspecStore.from_url(url, storage_options={"auto_mkdir": True})
    a = zarrfast.open_array(store, path="a", mode="r+")
    for i in range(n):
        a.append(np.array([100 + i]))
""")


def test_fsspec_append_racing_another_process_is_reported_not_lost(tmp_path, subprocess_cwd):
    """Another process appends between this writer's reading and writing the array's
    metadata (the hook below runs it there): its rows must survive, and this writer must
    be told (``ConcurrentWriteError``) rather than silently overwrite them."""
    pytest.importorskip("fsspec")
    from zarrfast.storage import FsspecStore

    (tmp_path / "data.zarr").mkdir()
    url = "file://" + str(tmp_path / "data.zarr")

    class Interleaved(FsspecStore):
        """Runs another process's append the first time this writer touches the
        array's metadata (a read, or, when it does not read it, its write)."""

        armed = False

        def _interleave(self, key: str) -> None:
            if self.armed and key == "a/zarr.json":
                type(self).armed = False
                subprocess.run([sys.executable, "-c", _FSSPEC_APPENDER, url, "5"],
                               env=ENV, cwd=subprocess_cwd, check=True, timeout=60)

        def get(self, key, byte_range=None):
            value = super().get(key, byte_range)
            self._interleave(key)
            return value

        def set(self, key, value):
            self._interleave(key)
            super().set(key, value)

    store = Interleaved.from_url(url, storage_options={"auto_mkdir": True})
    a = zarrfast.create_array(store, name="a", shape=(0,), chunks=(4,), dtype="i8",
                              fill_value=-1)
    a.append(np.arange(3))
    Interleaved.armed = True
    conflict = None
    try:
        a.append(np.arange(10, 13))
    except ZarrfastError as e:
        conflict = e
    assert not Interleaved.armed
    got = zarrfast.open_array(FsspecStore.from_url(url), path="a", mode="r")[...].tolist()
    other = [100 + i for i in range(5)]
    assert all(v in got for v in other), f"the other process's rows were lost: {got}"
    assert type(conflict).__name__ == "ConcurrentWriteError", \
        f"this writer was not told of the conflict: {conflict!r}; stored {got}"
    assert "'a'" in str(conflict) or "'/a'" in str(conflict)
    assert got == [0, 1, 2, *other]
