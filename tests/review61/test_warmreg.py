"""``zarrfast.get_many`` of arrays each opened from its own path, from the review of
h61/warmreg.

That branch reads the step-1 boxes of arrays of one layout on local stores of their own
as one read (``engine.many.read_store_boxes``): one ``ChunkDecoder.decode_files`` call
for the chunks of all of them, each row's file opened from its own store's root
(``root_of``), the same relative chunk paths (``c/0/0``) in every store.

Finding (fails on the branch from 1b6cedb, passes on the base): in a process whose
descriptor limit leaves 40 descriptors beyond those it holds, ``get_many`` of the same
region of 80 arrays each opened from its own path raises ``OSError`` (EMFILE, "too
many open files", naming a store's root, not a request or a chunk): the one kernel
call opens every store's root directory at once (80 more descriptors; each store
already holds its own root open), where the base read the arrays a few at a time; and
``_read_across_stores`` falls back to the arrays' own reads only on a
``ZarrfastError``.

Guards (pass on the base and on the branch): every result is what the array's own
``a[sel]`` gives (values, shape, dtype), whatever mix of boxes, integer (negative)
indices and slices, stores opened twice on one directory, arrays at a path inside a
store beside arrays at their store's root, big-endian and float data with NaN fill
values and missing chunks, at 1, 2 and 4 threads; a chunk rewritten (or an array's
directory replaced) between two calls is read anew; results are independent of one
another; calls from several threads at once, and in a forked child after the parent's
reads, give the same values.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore

SHAPE, CHUNKS = (37, 29), (8, 6)


def _values(k: int, dtype: str) -> np.ndarray:
    v = (np.arange(np.prod(SHAPE)).reshape(SHAPE) * (k + 5) % 977)
    return v.astype(dtype)


def _make(path, k, dtype="uint16", fill=0, missing=()):
    a = zarrfast.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              fill_value=fill)
    a[...] = _values(k, dtype)
    for i, j in missing:
        os.remove(os.path.join(str(path), "c", str(i), str(j)))


def _same_as_alone(arrays, sels, threads):
    with config.set(threads=threads):
        got = zarrfast.get_many(list(zip(arrays, sels, strict=True)))
    for a, s, g in zip(arrays, sels, got, strict=True):
        want = a[s]
        assert np.shape(g) == np.shape(want), s
        assert np.asarray(g).dtype == np.asarray(want).dtype, s
        np.testing.assert_array_equal(g, want, err_msg=repr(s))
    return got


def _one_dim(data, size):
    kind = data.draw(st.sampled_from(["slice", "slice", "slice", "int", "negint", "all"]))
    if kind == "int":
        return data.draw(st.integers(0, size - 1))
    if kind == "negint":
        return data.draw(st.integers(-size, -1))
    if kind == "all":
        return slice(None)
    a = data.draw(st.integers(0, size - 1))
    return slice(a, data.draw(st.integers(a + 1, size)))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_result_is_the_arrays_own_read(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("w")
    n = data.draw(st.integers(2, 7), label="arrays")
    missing = data.draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)),
                                 max_size=4, unique=True), label="missing")
    for k in range(n):
        _make(root / f"a{k}", k, missing=missing if k % 2 else ())
    # (some directories opened twice: two store objects on one root)
    opened = [zarrfast.open_array(str(root / f"a{k}"), mode="r") for k in range(n)]
    arrays = []
    for _ in range(data.draw(st.integers(2, 10), label="requests")):
        k = data.draw(st.integers(0, n - 1))
        again = data.draw(st.booleans())
        arrays.append(zarrfast.open_array(str(root / f"a{k}"), mode="r") if again
                      else opened[k])
    sels = [tuple(_one_dim(data, s) for s in SHAPE) for _ in arrays]
    _same_as_alone(arrays, sels, data.draw(st.sampled_from([1, 2, 4]), label="threads"))


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_arrays_inside_a_store_beside_arrays_at_their_roots(tmp_path, threads):
    """The same layout at ``g/x`` of one store and at the roots of others: the chunk keys
    differ in their prefix, the files in their root."""
    group = zarrfast.open_group(str(tmp_path / "grp"), mode="w")
    inner = group.create_array("x", shape=SHAPE, chunks=CHUNKS, dtype="uint16",
                               fill_value=0)
    inner[...] = _values(40, "uint16")
    for k in range(3):
        _make(tmp_path / f"a{k}", k, missing=[(1, 1)])
    # (a root-level array of the group's store with the same relative keys as x's)
    arrays = [zarrfast.open_array(LocalStore(str(tmp_path / "grp")), path="x", mode="r")]
    arrays += [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(3)]
    arrays.append(zarrfast.open_group(str(tmp_path / "grp"), mode="r")["x"])
    sels = [(slice(3, 30), slice(4, 25))] * len(arrays)
    got = _same_as_alone(arrays, sels, threads)
    np.testing.assert_array_equal(got[0], _values(40, "uint16")[3:30, 4:25])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,fill", [(">u4", 7), ("<f8", float("nan")), (">f4", -1.5),
                                        ("|u1", 3), ("<i8", -2)])
def test_byte_orders_and_fill_values(tmp_path, threads, dtype, fill):
    for k in range(4):
        _make(tmp_path / f"a{k}", k, dtype=dtype, fill=fill,
              missing=[(0, 0), (2, 3)] if k % 2 else [(4, 4)])
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(4)]
    got = _same_as_alone(arrays, [(slice(0, 20), slice(0, 24))] * 4, threads)
    assert got[1].dtype == arrays[1].dtype
    if isinstance(fill, float) and np.isnan(fill):
        assert np.isnan(got[1][:8, :6]).all()


def test_rewritten_chunks_and_a_replaced_directory_are_read_anew(tmp_path):
    for k in range(4):
        _make(tmp_path / f"a{k}", k)
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(4)]
    region = (slice(2, 30), slice(1, 27))
    _same_as_alone(arrays, [region] * 4, 2)
    # another writer (its own store object) rewrites a chunk of a1
    w = zarrfast.open_array(str(tmp_path / "a1"), mode="r+")
    w[8:16, 6:12] = 4242
    # and a2's directory is replaced by another array of the same layout
    shutil.rmtree(tmp_path / "a2")
    _make(tmp_path / "a2", 77)
    got = _same_as_alone(arrays, [region] * 4, 2)
    assert (got[1][6:14, 5:11] == 4242).all()
    np.testing.assert_array_equal(got[2], _values(77, "uint16")[region])


def test_results_are_independent(tmp_path):
    for k in range(5):
        _make(tmp_path / f"a{k}", k)
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(5)]
    region = (slice(0, 16), slice(0, 12))
    got = zarrfast.get_many([(a, region) for a in arrays])
    before = [g.copy() for g in got]
    got[2][...] = 0
    for k in (0, 1, 3, 4):
        np.testing.assert_array_equal(got[k], before[k])
    again = zarrfast.get_many([(a, region) for a in arrays])
    np.testing.assert_array_equal(again[2], before[2])


def test_calls_from_several_threads_at_once(tmp_path):
    n = 6
    for k in range(n):
        _make(tmp_path / f"a{k}", k, missing=[(k % 5, k % 5)])
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(n)]
    wants = [a[...] for a in arrays]
    regions = [(slice(t, t + 20), slice(2 * t, 2 * t + 15)) for t in range(6)]
    bad: list[str] = []
    barrier = threading.Barrier(len(regions))

    def run(region):
        barrier.wait()
        for _ in range(20):
            got = zarrfast.get_many([(a, region) for a in arrays])
            for k, (g, w) in enumerate(zip(got, wants, strict=True)):
                if not np.array_equal(g, w[region]):
                    bad.append(f"{region} array {k}")
                    return

    with config.set(threads=2):
        threads = [threading.Thread(target=run, args=(r,)) for r in regions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert bad == []


def _child(root, n, q):
    arrays = [zarrfast.open_array(os.path.join(root, f"a{k}"), mode="r") for k in range(n)]
    region = (slice(5, 35), slice(3, 28))
    with config.set(threads=2):
        got = zarrfast.get_many([(a, region) for a in arrays])
    q.put([bool(np.array_equal(g, _values(k, "uint16")[region]))
           for k, g in enumerate(got)])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_reads_after_its_parent(tmp_path):
    n = 5
    for k in range(n):
        _make(tmp_path / f"a{k}", k)
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k}"), mode="r") for k in range(n)]
    with config.set(threads=2):
        _same_as_alone(arrays, [(slice(0, 30), slice(0, 20))] * n, 2)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(str(tmp_path), n, q))
    p.start()
    try:
        result = q.get(timeout=120)
    finally:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
    assert result == [True] * n
    assert p.exitcode == 0


_FEW_FDS = r'''
import os, resource, sys
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
root, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
arrays = [zarrfast.open_array(LocalStore(os.path.join(root, f"a{k:02d}")), mode="r")
          for k in range(n)]
region = (slice(0, 16), slice(0, 16))
wants = [a[region] for a in arrays]  # (each store's root opened: what they hold)
used = len(os.listdir("/proc/self/fd"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (used + 40, hard))
with config.set(threads=threads):
    try:
        got = zarrfast.get_many([(a, region) for a in arrays])
        bad = [k for k, (g, w) in enumerate(zip(got, wants)) if not np.array_equal(g, w)]
        print("ok" if not bad else f"wrong values in arrays {bad}")
    except Exception as e:
        print(f"{type(e).__name__}: {e}")
'''


@pytest.mark.parametrize("threads", [2, 4])
def test_many_stores_with_few_descriptors_to_spare(tmp_path, subprocess_cwd, threads):
    n = 80
    for k in range(n):
        a = zarrfast.create_array(LocalStore(tmp_path / f"a{k:02d}"), shape=(32, 32),
                                  chunks=(8, 8), dtype="<u2", fill_value=0)
        a[...] = k
    run = subprocess.run([sys.executable, "-c", _FEW_FDS, str(tmp_path), str(n),
                          str(threads)], capture_output=True, text=True, timeout=300,
                         cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "ok", run.stdout[-3000:]


@pytest.mark.skipif(not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
                    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_first_array_warm_the_others_cold(tmp_path, threads):
    """The probe of the first array's first file finds it cached, so the batch is read
    the warm way (across stores, on the branch), while the other arrays' files are out
    of the page cache: the kernel finds them cold as it reads (and may announce the
    rows after, each from its own store's root)."""
    from _helpers.page_cache import evict, is_cold

    n = 12
    for k in range(n):
        _make(tmp_path / f"a{k:02d}", k, missing=[(2, 2)] if k % 3 == 1 else ())
    arrays = [zarrfast.open_array(str(tmp_path / f"a{k:02d}"), mode="r") for k in range(n)]
    region = (slice(2, 35), slice(1, 28))
    wants = [a[region] for a in arrays]
    evict(tmp_path)
    if not is_cold(tmp_path / "a05" / "c" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    with config.set(threads=threads):
        for _ in range(2):
            evict(tmp_path)
            arrays[0][region]  # (the first array's files back in the page cache)
            got = zarrfast.get_many([(a, region) for a in arrays])
            for k, (g, w) in enumerate(zip(got, wants, strict=True)):
                np.testing.assert_array_equal(g, w, err_msg=str(k))
