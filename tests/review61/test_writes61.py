"""Writes of many small files, of shards and of zstd chunks, from the review of
h61/writes61.

That branch makes writes cheaper: fewer system calls per chunk file (directories known
to exist, temporary files), sharded writes at two threads, zstd.  Writes must stay
atomic (a temporary file renamed over the key) and their bytes numcodecs'.  Its one
library change (be40aba: a batch's sibling directories made relative to a parent held
open for the call) was reverted (fed5405): at 3705332 the branch changes tests and
benchmarks only, and these guard main's writes.

Guards (pass on the base and on the branch), at 1, 2 and 4 threads: chunk files are,
byte for byte, numcodecs' zstd frames of the chunks (one file per chunk, and inner
chunks of shards); many chunks written at once into one directory each hold their own
chunk (no temporary file shared by two writers); directories removed by someone else
between two writes of one array object (a row of chunks, the array's ``c``, the whole
array) are made again and every chunk is written; a file in the way of a directory is
an error naming the key; two processes writing disjoint rows of chunks of a new array
(making the same directories at once) lose nothing; a write that fails part-way (the
file-size limit of the process: EFBIG) raises naming a key, leaves each chunk file
whole (its old or its new value) and no temporary file; a writer killed at any moment
leaves each chunk file whole; readers beside a writer never see a torn chunk.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.files import relative_files, temporaries

SHAPE, CHUNKS = (64, 96), (4, 6)  # 16 x 16 = 256 chunk files


def _x(seed: int, shape=SHAPE, dtype="<u2") -> np.ndarray:
    rng = np.random.default_rng(seed)
    # (compressible, different per chunk)
    return (rng.integers(0, 40, shape) + seed).astype(dtype)


def _chunk_of(x, chunks, g):
    block = np.zeros(chunks, x.dtype)
    part = x[tuple(slice(i * c, (i + 1) * c) for i, c in zip(g, chunks, strict=True))]
    block[tuple(slice(0, n) for n in part.shape)] = part
    return block


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("level,checksum", [(1, False), (3, True), (-2, False)])
def test_zstd_chunk_files_are_numcodecs_bytes(tmp_path, threads, level, checksum):
    shape, chunks = (50, 70), (8, 9)  # (edge chunks)
    x = _x(level + 10, shape)
    store = LocalStore(tmp_path / "a")
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, dtype="<u2", fill_value=0,
                              compressors=[ZstdCodec(level=level, checksum=checksum)],
                              config={"write_empty_chunks": True})
    with config.set(threads=threads):
        a[...] = x
    ref = numcodecs.Zstd(level=level, checksum=checksum)
    for i in range(-(-shape[0] // chunks[0])):
        for j in range(-(-shape[1] // chunks[1])):
            got = bytes(store.get(f"c/{i}/{j}"))
            assert got == bytes(ref.encode(_chunk_of(x, chunks, (i, j)).tobytes())), (i, j)
    np.testing.assert_array_equal(a[...], x)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_zstd_inner_chunks_of_shards_are_numcodecs_bytes(tmp_path, threads):
    shape, chunks, shards = (40, 36), (5, 6), (20, 18)
    x = _x(5, shape)
    store = LocalStore(tmp_path / "s")
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, shards=shards,
                              dtype="<u2", fill_value=0,
                              compressors=[ZstdCodec(level=1, checksum=False)],
                              config={"write_empty_chunks": True})
    with config.set(threads=threads):
        a[...] = x
    ref = numcodecs.Zstd(level=1, checksum=False)
    layout = a._chain.layout
    per = (shards[0] // chunks[0], shards[1] // chunks[1])
    for key in store.list():
        if not key.startswith("c/"):
            continue
        si, sj = (int(p) for p in key.split("/")[1:])
        data = bytes(store.get(key))
        index = layout.index_of_shard(np.frombuffer(data, dtype=np.uint8), key)
        for lin, (off, nb) in enumerate(index.tolist()):
            ci, cj = divmod(lin, per[1])
            g = (si * per[0] + ci, sj * per[1] + cj)
            want = bytes(ref.encode(_chunk_of(x, chunks, g).tobytes()))
            assert data[off:off + nb] == want, (key, g)
    np.testing.assert_array_equal(a[...], x)


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_many_files_of_one_directory_each_hold_their_chunk(tmp_path, threads, codec):
    """4096 chunk files in one directory (a 1-d array): written at once by several
    threads, each file is its own chunk's (a temporary name shared by two writers
    would put one chunk's bytes under another's key)."""
    n, c = 4096 * 8, 8
    x = np.random.default_rng(1).permutation(n).astype("<u4")
    kw = {"compressors": None} if codec == "none" else {}
    a = zarrfast.create_array(LocalStore(tmp_path / "a"), shape=(n,), chunks=(c,),
                              dtype="<u4", fill_value=0, **kw)
    for value in (x, x[::-1].copy()):
        with config.set(threads=threads):
            a[...] = value
        b = zarrfast.open_array(LocalStore(tmp_path / "a"), mode="r")
        np.testing.assert_array_equal(b[...], value)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_directories_removed_between_writes(tmp_path, threads):
    path = tmp_path / "a"
    a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                              fill_value=0)
    with config.set(threads=threads):
        a[...] = _x(1)
        # another process removes a row of chunks, then the array's chunks
        shutil.rmtree(path / "c" / "3")
        a[...] = _x(2)
        np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], _x(2))
        shutil.rmtree(path / "c")
        a[8:40, 12:60] = _x(3)[8:40, 12:60]  # (a partial write: rows 2-9)
        want = np.zeros(SHAPE, "<u2")
        want[8:40, 12:60] = _x(3)[8:40, 12:60]
        np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], want)
        shutil.rmtree(path / "c")
        a[...] = _x(4)
        np.testing.assert_array_equal(a[...], _x(4))
        # the whole array removed (and its root made again by someone else, empty)
        shutil.rmtree(path)
        a[...] = _x(5)
        np.testing.assert_array_equal(a[...], _x(5))
        assert len([f for f in relative_files(path) if f.startswith("c")]) == 256
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_a_file_in_the_way_of_a_directory_names_the_key(tmp_path, threads):
    path = tmp_path / "a"
    a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                              fill_value=0)
    with config.set(threads=threads):
        a[...] = _x(1)
        shutil.rmtree(path / "c" / "5")
        (path / "c" / "5").write_bytes(b"not a directory")
        with pytest.raises(ZarrfastError, match="c/5"):
            a[...] = _x(2)
    assert (path / "c" / "5").read_bytes() == b"not a directory"
    assert temporaries(tmp_path) == []


def _write_rows(path, rows, start, q):
    try:
        a = zarrfast.open_array(LocalStore(path), mode="r+")
        start.wait(60)
        with config.set(threads=2):
            for r in rows:
                a[r * 4:(r + 1) * 4, :] = _x(7)[r * 4:(r + 1) * 4, :]
        q.put("ok")
    except BaseException as e:  # (reported to the parent)
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_two_processes_write_disjoint_rows_of_a_new_array(tmp_path):
    path = tmp_path / "a"
    zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                          fill_value=0)
    ctx = multiprocessing.get_context("fork")
    start, q = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_write_rows, args=(str(path), range(k, 16, 2), start, q))
             for k in range(2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
    assert got == ["ok", "ok"]
    np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], _x(7))
    assert temporaries(tmp_path) == []


_EFBIG = r'''
import os, resource, signal, sys
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
path, threads, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a = zarrfast.open_array(LocalStore(path), mode="r+")
rng = np.random.default_rng(0)
new = np.zeros(a.shape, a.dtype) + 3
# chunks (2, 5) and (9, 11): random bytes, larger than the limit once compressed
for i, j in ((2, 5), (9, 11)):
    new[i * 4:(i + 1) * 4, j * 6:(j + 1) * 6] = rng.integers(0, 2**16, (4, 6))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
with config.set(threads=threads):
    try:
        a[...] = new
        print("no error")
    except Exception as e:
        print("error", type(e).__name__, str(e).replace("\n", " "))
'''


@pytest.mark.parametrize("threads", [1, 2])
def test_a_write_failing_part_way_names_a_key_and_tears_nothing(tmp_path, subprocess_cwd,
                                                                threads):
    """A child Python whose files may not grow past 40 bytes (RLIMIT_FSIZE: EFBIG) writes
    an array whose chunks compress to ~20 bytes but for two: the write raises naming one
    of those; every chunk file is whole (the old chunk, or the new one) and no
    temporary file is left."""
    path = tmp_path / "a"
    old = _x(1)
    a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                              fill_value=0)
    a[...] = old
    run = subprocess.run([sys.executable, "-c", _EFBIG, str(path), str(threads), "40"],
                         capture_output=True, text=True, timeout=120, cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout.strip()
    assert out.startswith("error"), out
    assert "c/2/5" in out or "c/9/11" in out, out
    b = zarrfast.open_array(LocalStore(path), mode="r")
    got = b[...]  # (every chunk file decodes: none torn)
    for i in range(16):
        for j in range(16):
            blk = (slice(i * 4, (i + 1) * 4), slice(j * 6, (j + 1) * 6))
            if (i, j) in ((2, 5), (9, 11)):
                np.testing.assert_array_equal(got[blk], old[blk], err_msg=str((i, j)))
            else:
                assert (got[blk] == 3).all() or (got[blk] == old[blk]).all(), (i, j)
    assert temporaries(tmp_path) == []


_KILLED = r'''
import sys
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
path, threads = sys.argv[1], int(sys.argv[2])
a = zarrfast.open_array(LocalStore(path), mode="r+")
values = [np.full(a.shape, v, a.dtype) for v in (1, 2)]
with config.set(threads=threads):
    a[...] = values[0]
    print("writing", flush=True)
    k = 0
    while True:
        k += 1
        a[...] = values[k % 2]
'''


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", ["files", "shards"])
def test_a_killed_writer_leaves_whole_chunks(tmp_path, subprocess_cwd, threads, layout):
    """A child writing the array over and over (all 1s, then all 2s) is killed at
    whatever point it has reached: every chunk (shard) file decodes to all 1s or all 2s,
    and no chunk is missing."""
    path = tmp_path / "a"
    kw = {"shards": (16, 24)} if layout == "shards" else {}
    zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                          fill_value=0, **kw)
    child = subprocess.Popen([sys.executable, "-c", _KILLED, str(path), str(threads)],
                             stdout=subprocess.PIPE, text=True, cwd=subprocess_cwd)
    try:
        assert child.stdout.readline().strip() == "writing"
        # (some writes under way: wait for a few chunk files to change)
        seen = set()
        while len(seen) < 3:
            assert child.poll() is None, "the writer ended on its own"
            try:
                seen.add(os.stat(path / "c" / "0" / "0").st_ino)
            except FileNotFoundError:  # (not yet written)
                pass
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    b = zarrfast.open_array(LocalStore(path), mode="r")
    got = b[...]
    per = (16, 24) if layout == "shards" else CHUNKS
    for i in range(SHAPE[0] // per[0]):
        for j in range(SHAPE[1] // per[1]):
            blk = got[i * per[0]:(i + 1) * per[0], j * per[1]:(j + 1) * per[1]]
            assert (blk == 1).all() or (blk == 2).all(), (i, j, np.unique(blk))


@pytest.mark.parametrize("threads", [1, 2])
def test_readers_beside_a_writer_never_see_a_torn_chunk(tmp_path, threads):
    path = tmp_path / "a"
    a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, dtype="<u2",
                              fill_value=0)
    a[...] = 1
    stop = threading.Event()
    bad: list[str] = []

    def read():
        b = zarrfast.open_array(LocalStore(path), mode="r")
        while not stop.is_set():
            got = b[...]
            blocks = got.reshape(16, 4, 16, 6).transpose(0, 2, 1, 3).reshape(256, 24)
            ok = (blocks == blocks[:, :1]).all(axis=1) & np.isin(blocks[:, 0], (1, 2))
            if not ok.all():
                bad.append(str(np.flatnonzero(~ok)[:5]))
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        with config.set(threads=threads):
            for k in range(30):
                a[...] = 1 + k % 2
    finally:
        stop.set()
        reader.join()
    assert bad == []


def _write_inner_columns(path, cols, start, q):
    try:
        a = zarrfast.open_array(LocalStore(path), mode="r+")
        start.wait(60)
        with config.set(threads=2):
            for _ in range(3):
                for c in cols:  # (one inner chunk column of every shard: partial writes)
                    a[:, c * 6:(c + 1) * 6] = _x(8)[:, c * 6:(c + 1) * 6]
        q.put("ok")
    except BaseException as e:  # (reported to the parent)
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_two_processes_writing_inner_chunks_of_the_same_shards_lose_nothing(tmp_path):
    """Partial writes of shards (read, change, write back) by two processes at once,
    each its own inner chunks of every shard: the shard's lock keeps both."""
    path = tmp_path / "a"
    a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=CHUNKS, shards=(16, 24),
                              dtype="<u2", fill_value=0)
    a[...] = 1
    ctx = multiprocessing.get_context("fork")
    start, q = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_write_inner_columns, args=(str(path), range(k, 16, 2),
                                                            start, q)) for k in range(2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
    assert got == ["ok", "ok"]
    np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], _x(8))
    assert temporaries(tmp_path) == []
