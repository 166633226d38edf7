"""Cold loader batches (chunk files out of the page cache), from the review of
h61/coldreg.

That branch announces the files of cold batches to the kernel (``POSIX_FADV_WILLNEED``)
earlier and in larger sets: the files of all of ``zarrfast.get_many``'s arrays at once
when the first is cold (f7fe4d8, reverted in ae66dbf), and cold gathers of prefixes
of zstd chunks streamed as warm ones are, their files announced ahead of the parts the
threads take (4581b85, kept).

Guards (pass on the base and on the branch), at 1 and 2 threads, every read cold (the
files evicted before it): ``get_many`` of the same region of many arrays each opened
from its own path (some chunks missing, one array rewritten after the eviction) and
``oindex`` gathers of rows -- sorted, unsorted, repeated, negative, of zstd and of
sharded arrays -- are NumPy's values and leave no chunk file open; a FIFO, a directory
and a link where chunk files should be make no cold read hang (the announcing opens
nothing that blocks, follows no link), and the reads say what the single reads say; a
cold read in a process whose descriptor limit leaves 40 to spare still reads every file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold, needs_cold_reads

pytestmark = needs_cold_reads

SHAPE, CHUNKS = (64, 48), (8, 8)
N_ARRAYS = 30


def _values(k: int) -> np.ndarray:
    return ((np.arange(np.prod(SHAPE)).reshape(SHAPE) * (k + 3)) % 5003).astype("<u2")


def _chunk(values, g, fill):
    values[g[0] * 8:(g[0] + 1) * 8, g[1] * 8:(g[1] + 1) * 8] = fill


@pytest.fixture
def many(tmp_path):
    wants = []
    for k in range(N_ARRAYS):
        a = zarrfast.create_array(LocalStore(tmp_path / f"a{k:02d}"), shape=SHAPE,
                                  chunks=CHUNKS, dtype="<u2", fill_value=11)
        v = _values(k)
        a[...] = v
        if k % 4 == 1:
            os.remove(tmp_path / f"a{k:02d}" / "c" / "1" / "1")
            _chunk(v, (1, 1), 11)
        wants.append(v)
    evict(tmp_path)
    if not is_cold(tmp_path / "a00" / "c" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return tmp_path, wants


@pytest.mark.parametrize("threads", [1, 2])
def test_get_many_of_cold_arrays_of_their_own_stores(many, threads):
    root, wants = many
    arrays = [zarrfast.open_array(LocalStore(root / f"a{k:02d}"), mode="r")
              for k in range(N_ARRAYS)]
    # one array rewritten (by another store object) after the eviction
    w = zarrfast.open_array(LocalStore(root / "a07"), mode="r+")
    w[10:20, 10:20] = 4242
    wants[7][10:20, 10:20] = 4242
    with config.set(threads=threads):
        for region in ((slice(5, 37), slice(3, 29)), (slice(0, 64), slice(40, 48)),
                       (3, slice(None)), (slice(None), -1)):
            evict(root)
            got = zarrfast.get_many([(a, region) for a in arrays])
            for k, (g, want) in enumerate(zip(got, wants, strict=True)):
                np.testing.assert_array_equal(g, want[region], err_msg=f"{k} {region}")
    # (a store holds its root directory open, not its chunk files)
    assert [f for k in range(N_ARRAYS) for f in held_open(root / f"a{k:02d}" / "c")] == []


ROWS_SHAPE = (4096, 128)


@pytest.fixture
def rows_arrays(tmp_path):
    x = ((np.arange(np.prod(ROWS_SHAPE), dtype=np.int64).reshape(ROWS_SHAPE) * 7) % 65521
         ).astype("<u2")
    plain = zarrfast.create_array(LocalStore(tmp_path / "z"), shape=ROWS_SHAPE,
                                  chunks=(16, 128), dtype="<u2", fill_value=5)
    plain[...] = x
    sharded = zarrfast.create_array(LocalStore(tmp_path / "s"), shape=ROWS_SHAPE,
                                    chunks=(16, 64), shards=(256, 128), dtype="<u2",
                                    fill_value=5)
    sharded[...] = x
    # a missing chunk and a missing shard
    os.remove(tmp_path / "z" / "c" / "3" / "0")
    os.remove(tmp_path / "s" / "c" / "2" / "0")
    want_z, want_s = x.copy(), x.copy()
    want_z[48:64] = 5
    want_s[512:768] = 5
    evict(tmp_path)
    if not is_cold(tmp_path / "z" / "c" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return tmp_path, {"z": want_z, "s": want_s}


def _indices(rng):
    n = ROWS_SHAPE[0]
    yield np.sort(rng.choice(n, 700, replace=False))  # sorted, a loader's
    yield rng.choice(n, 300, replace=False)  # unsorted
    yield np.sort(rng.integers(0, n, 500))  # repeated
    yield -rng.integers(1, n + 1, 200)  # negative
    yield np.array([n - 1, 0, n - 1, 17, 0])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("which", ["z", "s"])
def test_cold_gathers_of_rows(rows_arrays, threads, which):
    root, wants = rows_arrays
    a = zarrfast.open_array(LocalStore(root / which), mode="r")
    want = wants[which]
    rng = np.random.default_rng(3)
    with config.set(threads=threads):
        for idx in _indices(rng):
            evict(root)
            np.testing.assert_array_equal(a.oindex[idx, :], want[idx, :])
            evict(root)
            np.testing.assert_array_equal(a.oindex[idx, 3:77], want[idx, 3:77])
            evict(root)
            np.testing.assert_array_equal(a.get_orthogonal_selection((idx, slice(None))),
                                          want[idx])
    assert held_open(root / which) == []


_ODD_FILES = r'''
import os, sys
sys.path.insert(0, sys.argv[2])
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
from _helpers.page_cache import evict
root, kind, threads = sys.argv[1], sys.argv[3], int(sys.argv[4])
arrays = [zarrfast.open_array(LocalStore(os.path.join(root, f"a{k:02d}")), mode="r")
          for k in range(6)]
x = zarrfast.open_array(LocalStore(os.path.join(root, "x")), mode="r")
out = []
def outcome(fn):
    try:
        v = fn()
        return "ok %d" % int(np.asarray(v, dtype=np.int64).sum())
    except Exception as e:
        return "error " + type(e).__name__
with config.set(threads=threads):
    evict(root)
    out.append(outcome(lambda: [a[0:24, 0:24] for a in arrays]))
    evict(root)
    out.append(outcome(lambda: zarrfast.get_many([(a, (slice(0, 24), slice(0, 24)))
                                                  for a in arrays])))
    evict(root)
    out.append(outcome(lambda: x.oindex[np.arange(0, 512, 3), :]))
    evict(root)
    out.append(outcome(lambda: [x.oindex[np.array([i]), :] for i in range(0, 512, 3)]))
print(repr(out))
'''


@pytest.mark.parametrize("kind", ["fifo", "dir", "link"])
@pytest.mark.parametrize("threads", [1, 2])
def test_odd_files_where_chunks_should_be(tmp_path, subprocess_cwd, kind, threads):
    """A FIFO (an ``open`` without O_NONBLOCK waits for a writer forever), a directory or
    a link at a chunk's path of the first array of a cold batch, and in a gather: the
    reads end (a child Python, with a timeout) and the batched reads say what the
    single reads say."""
    for k in range(6):
        a = zarrfast.create_array(LocalStore(tmp_path / f"a{k:02d}"), shape=SHAPE,
                                  chunks=CHUNKS, dtype="<u2", fill_value=11)
        a[...] = _values(k)
    x = zarrfast.create_array(LocalStore(tmp_path / "x"), shape=(512, 64), chunks=(8, 64),
                              dtype="<u2", fill_value=1)
    x[...] = 2
    for p in (tmp_path / "a00" / "c" / "0" / "0", tmp_path / "a03" / "c" / "1" / "2",
              tmp_path / "x" / "c" / "0" / "0", tmp_path / "x" / "c" / "9" / "0"):
        p.unlink()
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dir":
            p.mkdir()
        else:
            os.symlink(tmp_path / "a05" / "c" / "2" / "2", p)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", _ODD_FILES, str(tmp_path), tests, kind,
                          str(threads)], capture_output=True, text=True, timeout=240,
                         cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    alone, many_, gather, one_by_one = eval(run.stdout.strip().splitlines()[-1])
    assert many_ == alone
    assert gather == one_by_one


_FEW_FDS = r'''
import os, resource, sys
sys.path.insert(0, sys.argv[2])
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
from _helpers.page_cache import evict
root, threads, n = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
arrays = [zarrfast.open_array(LocalStore(os.path.join(root, f"a{k:02d}")), mode="r")
          for k in range(n)]
region = (slice(0, 64), slice(0, 48))
wants = [a[region] for a in arrays]
used = len(os.listdir("/proc/self/fd"))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (used + 40, hard))
bad = []
with config.set(threads=threads):
    for k in range(3):
        evict(root)
        try:
            got = zarrfast.get_many([(a, region) for a in arrays])
        except Exception as e:
            bad.append(f"read {k}: {type(e).__name__}: {e}"[:400])
            continue
        for j, (g, w) in enumerate(zip(got, wants)):
            if not np.array_equal(g, w):
                bad.append(f"read {k}: array {j}: wrong values")
print("ok" if not bad else "\n".join(bad))
'''


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_get_many_with_few_descriptors_to_spare(many, subprocess_cwd, threads):
    root, _ = many
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", _FEW_FDS, str(root), tests, str(threads),
                          str(N_ARRAYS)], capture_output=True, text=True, timeout=300,
                         cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "ok", run.stdout[-3000:]


BIG = (16 * 1024 - 100, 128)  # chunks of (1024, 128) uint16: 256 KiB, two zstd blocks


@pytest.mark.parametrize("threads", [1, 2])
def test_cold_gathers_of_prefixes_of_big_chunks(tmp_path, threads):
    """Rows in the first part of each 256 KiB chunk (a prefix of each decoded: the
    streamed gather, cold on the branch) and anywhere, orthogonal and point gathers,
    a chunk missing, the files evicted before each read: NumPy's values, no chunk
    file left open."""
    x = ((np.arange(np.prod(BIG), dtype=np.int64).reshape(BIG) * 7) % 65521).astype("<u2")
    a = zarrfast.create_array(LocalStore(tmp_path / "b"), shape=BIG, chunks=(1024, 128),
                              dtype="<u2", fill_value=5)
    a[...] = x
    os.remove(tmp_path / "b" / "c" / "6" / "0")
    x[6 * 1024:7 * 1024] = 5
    evict(tmp_path)
    if not is_cold(tmp_path / "b" / "c" / "0" / "0"):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    rng = np.random.default_rng(5)
    rows = np.sort(rng.choice(BIG[0], 600, replace=False))
    early = rows[rows % 1024 < 400]
    cases = [early, early[::-1], np.repeat(early[:50], 2), early - BIG[0], rows]
    with config.set(threads=threads):
        for idx in cases:
            evict(tmp_path)
            np.testing.assert_array_equal(a.oindex[idx, :], x[idx, :])
            evict(tmp_path)
            np.testing.assert_array_equal(a.oindex[idx, 5:100:3], x[idx, 5:100:3])
            cols = np.abs(idx) % 128
            evict(tmp_path)
            np.testing.assert_array_equal(a.vindex[idx, cols], x[idx, cols])
    assert held_open(tmp_path / "b" / "c") == []
