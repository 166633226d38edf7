"""Writes at one thread with a file I/O thread (``concurrency.WriteBehind``): the calling
thread encodes batch k+1 while the I/O thread writes batch k.  Real threads, real files:
the bytes are those of two threads and of numcodecs, errors of the I/O thread are raised
in the caller naming the key, files stay atomic, no thread is left behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import concurrency, config
from zarrfast import kernels as _kernels
from zarrfast.codecs import BloscCodec, BytesCodec, GzipCodec, ShardingCodec, ZstdCodec
from zarrfast.engine import shard_write
from zarrfast.storage import LocalStore

from _helpers.threads import run_in_threads, wait_child

pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr")


@pytest.fixture(autouse=True)
def _whatever_the_load(monkeypatch):
    """The I/O thread is used whatever the machine's load (on busy cores a write runs in
    the calling thread alone: ``concurrency.cores_contended``)."""
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)

TMP_MARK = ".zarrfast-tmp-"


def _values(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64)
    return (x % 5000).astype("<u2").reshape(shape)


def _files(path):
    """Every chunk file below ``path``: key -> bytes."""
    store = LocalStore(path)
    return {k: bytes(store.get(k)) for k in store.list() if not k.endswith(".json")}


def _leftovers(path):
    return [f for _, _, files in os.walk(path) for f in files if f.startswith(TMP_MARK)]


@contextlib.contextmanager
def _file_writers(monkeypatch):
    """The names of the threads that call the file-writing kernels (the real ones)."""
    names: list[str] = []
    for fn in ("write_files", "write_region_files"):
        real = getattr(_kernels, fn)

        def spy(*args, _real=real, **kwargs):
            names.append(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(_kernels, fn, spy)
    yield names


LAYOUTS = {
    "zstd": dict(chunks=(16, 16, 16), compressors=[ZstdCodec(level=1)]),
    "gzip": dict(chunks=(16, 16, 16), compressors=[GzipCodec(level=1)]),
    "blosc": dict(chunks=(16, 16, 16), compressors=[BloscCodec(cname="lz4", clevel=5,
                                                               shuffle="bitshuffle",
                                                               typesize=2)]),
    "raw": dict(chunks=(16, 16, 16), compressors=None),
    "sharded-zstd": dict(chunks=(8, 8, 8), shards=(16, 32, 32),
                         compressors=[ZstdCodec(level=1)]),
    "sharded-raw": dict(chunks=(8, 8, 8), shards=(16, 32, 32), compressors=None),
}
NUMCODECS = {"zstd": numcodecs.Zstd(level=1), "gzip": numcodecs.GZip(level=1),
             "blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.BITSHUFFLE,
                                      typesize=2)}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_one_thread_writes_on_an_io_thread_the_bytes_of_two_threads(tmp_path, monkeypatch,
                                                                    layout):
    # 5 x 4 x 4 = 80 chunks, more than one batch of 64; edge chunks along the first axis
    shape = (72, 64, 64)
    x = _values(shape)
    kw = LAYOUTS[layout]
    paths = {}
    for threads in (1, 2):
        paths[threads] = str(tmp_path / f"t{threads}.zarr")
        a = zarrfast.create_array(paths[threads], shape=shape, dtype="<u2", fill_value=0,
                                  **kw)
        with config.set(threads=threads), _file_writers(monkeypatch) as names:
            a[...] = x
            if threads == 1:  # the files are written by the I/O thread, not the caller
                io = [n.startswith("zarrfast-write") for n in names]
                if "raw" in layout:  # (nothing to encode: the caller writes too)
                    assert names, names
                elif "sharded" in layout:  # (16 whole shards, the 4 edge ones read,
                    # changed and written back by the I/O thread after 4 of them)
                    assert len(io) == 20 and all(io), names
                else:
                    assert io and all(io), names
        np.testing.assert_array_equal(a[...], x)
        assert _leftovers(paths[threads]) == []
    one, two = _files(paths[1]), _files(paths[2])
    if layout == "gzip":  # (a gzip member holds the time it was written)
        one, two = ({k: v[:4] + v[8:] for k, v in d.items()} for d in (one, two))
    assert one == two and len(one) == (20 if "sharded" in layout else 80)
    if layout in NUMCODECS:  # numcodecs' bytes for a whole interior chunk
        codec = NUMCODECS[layout]
        for key, block in (("c/0/0/0", x[:16, :16, :16]), ("c/1/2/3", x[16:32, 32:48, 48:])):
            want = codec.encode(np.ascontiguousarray(block))
            assert one[key] == (want[:4] + want[8:] if layout == "gzip" else want), key


def _two_values(path, shape=(512, 512), chunks=(32, 32), raw=False):
    """An array of 256 zstd (or uncompressed) chunks (4 batches of 64 at one thread)
    holding ``a``; and ``b``, the values of the next write."""
    a, b = _values(shape, 1), _values(shape, 2)
    arr = zarrfast.create_array(path, shape=shape, chunks=chunks, dtype="<u2", fill_value=0,
                                compressors=None if raw else [ZstdCodec(level=1)])
    arr[...] = a
    return arr, a, b


def _chunk_of(x, i, j, raw=False):
    block = np.ascontiguousarray(x[32 * i:32 * i + 32, 32 * j:32 * j + 32])
    return block.tobytes() if raw else numcodecs.Zstd(level=1).encode(block)


@pytest.mark.parametrize("row", [5, 9])
@pytest.mark.parametrize("raw", [False, True])
def test_a_failed_file_write_is_raised_naming_the_key(tmp_path, raw, row):
    path = str(tmp_path / "a.zarr")
    arr, a, b = _two_values(path, raw=raw)
    # a directory where the file of chunk (row, 3) goes (batch row // 4): its rename fails
    os.remove(os.path.join(path, "c", str(row), "3"))
    os.makedirs(os.path.join(path, "c", str(row), "3", "d"))
    with config.set(threads=1), pytest.raises(zarrfast.errors.ZarrfastError,
                                              match=rf"c/{row}/3"):
        arr[...] = b
    # Compressed, the I/O thread writes every batch: those before the failing one and
    # the rest of it are written (as chunk by chunk); the next, encoded meanwhile, is
    # not.  Uncompressed, the caller and the I/O thread each take the next batch:
    # which of the others are written depends on the timing.
    files = _files(path)
    for i in range(16):
        for j in range(16):
            if (i, j) == (row, 3):
                continue
            new, old = _chunk_of(b, i, j, raw), _chunk_of(a, i, j, raw)
            if not raw or i // 4 == row // 4:
                assert files[f"c/{i}/{j}"] == (new if i // 4 <= row // 4 else old), (i, j)
            else:  # every file whole, the old bytes or the new
                assert files[f"c/{i}/{j}"] in (new, old), (i, j)
    assert os.path.isdir(os.path.join(path, "c", str(row), "3", "d"))
    assert _leftovers(path) == []


def test_an_encoding_error_waits_for_the_batch_in_flight(tmp_path):
    """Chunk (15, 5) is kept partly (a partial write reads it) and corrupt: the write
    fails in the last batch; every batch before it is written whole, and the chunks of
    the last batch encoded before the error too, as chunk by chunk."""
    path = str(tmp_path / "a.zarr")
    arr, a, b = _two_values(path)
    bad = os.path.join(path, "c", "15", "5")
    with open(bad, "wb") as f:
        f.write(b"not zstd")
    b[500:, 160:192] = a[500:, 160:192]
    with config.set(threads=1), pytest.raises(zarrfast.errors.ZarrfastError,
                                              match=r"c/15/5"):
        arr[:500, :] = b[:500]
    files = _files(path)
    assert files["c/15/5"] == b"not zstd"
    for i in range(16):
        for j in range(16):
            if (i, j) == (15, 5):
                continue
            old = i == 15 and j > 5  # (15, 6...) come after the error: not written
            if i == 15 and not old:  # partial chunks: the kept rows are a's
                want = b.copy()
                want[500:] = a[500:]
            else:
                want = a if old else b
            assert files[f"c/{i}/{j}"] == _chunk_of(want, i, j), (i, j)
    assert _leftovers(path) == []


@pytest.fixture
def small_tmpfs(tmp_path):
    """An 8 MiB tmpfs (root only, where mounting is allowed)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr!r}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_file_system_fails_the_write_and_keeps_the_previous_files(small_tmpfs):
    path = str(small_tmpfs / "a.zarr")
    shape, chunks = (1024, 1024), (64, 64)  # 256 chunks, 4 batches of 64 at one thread
    old = np.zeros(shape, "<u2")
    old[:, ::7] = 1  # a page a file
    arr = zarrfast.create_array(path, shape=shape, chunks=chunks, dtype="<u2", fill_value=0,
                                compressors=[ZstdCodec(level=1)])
    with config.set(threads=1):
        arr[...] = old
    before = _files(path)
    # noise: 3 pages a file, 2 more than the file it replaces; room for ~150 of them
    new = np.random.default_rng(3).integers(0, 2**16, shape, dtype=np.uint64).astype("<u2")
    st = os.statvfs(small_tmpfs)
    with open(small_tmpfs / "filler", "wb") as f:
        f.write(b"\1" * max(0, st.f_bavail * st.f_frsize - 300 * 4096))
    with config.set(threads=1), pytest.raises(zarrfast.errors.ZarrfastError,
                                              match=r"No space left|c/\d+/\d+") as info:
        arr[...] = new
    assert "'c/" in str(info.value)  # names the key
    files = _files(path)
    assert set(files) == set(before)
    changed = 0
    codec = numcodecs.Zstd(level=1)
    for key, blob in files.items():  # every file whole: the old bytes or the new
        i, j = map(int, key.split("/")[1:])
        if blob != before[key]:
            assert blob == codec.encode(np.ascontiguousarray(
                new[64 * i:64 * i + 64, 64 * j:64 * j + 64])), key
            changed += 1
    assert 64 < changed < len(files)  # (it failed after the first batch)
    assert _leftovers(path) == []


def test_no_thread_is_left_behind(tmp_path):
    """Many writes at one thread reuse one I/O thread; nothing runs once they return."""
    def writers():
        return {t for t in threading.enumerate() if t.name.startswith("zarrfast-write")}

    path = str(tmp_path / "a.zarr")
    arr, a, b = _two_values(path)
    with config.set(threads=1):
        arr[...] = a
        before = writers()  # (idle I/O threads of earlier writes, at least one)
        for k in range(6):
            arr[...] = a if k % 2 else b
    assert 1 <= len(before) and writers() == before
    np.testing.assert_array_equal(arr[...], a)


def test_writes_from_two_threads_at_one_thread_each(tmp_path):
    """Two callers writing at once, each with its batches behind on an I/O thread."""
    arrs = [_two_values(str(tmp_path / f"{k}.zarr")) for k in range(2)]

    def run(k):
        arr, a, b = arrs[k]
        for _ in range(2):
            arr[...] = a
            arr[...] = b

    with config.set(threads=1):  # (once, around both threads: see run_in_threads)
        errors = run_in_threads(run, 2)
    assert errors == []
    for arr, _, b in arrs:
        np.testing.assert_array_equal(arr[...], b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_a_forked_child_writes_at_one_thread(tmp_path):
    path = str(tmp_path / "a.zarr")
    arr, a, b = _two_values(path)
    with config.set(threads=1):
        arr[...] = b  # the parent's I/O thread now exists
        pid = os.fork()
        if pid == 0:  # child: its I/O thread must be a new one
            try:
                arr[...] = a
                os._exit(0 if np.array_equal(arr[...], a) else 1)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        status = wait_child(pid, "writing the array")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(arr[...], a)


def test_on_busy_cores_a_write_at_one_thread_stays_in_the_calling_thread(tmp_path,
                                                                         monkeypatch):
    """When this thread found the cores contended (its verdict, as box reads keep it),
    the files are written by the caller: a thread woken per batch would wait for a CPU."""
    monkeypatch.setattr(concurrency, "CONTENTION_GATE", True)
    st = concurrency._contention
    monkeypatch.setattr(st, "supported", True)
    monkeypatch.setattr(st, "alone", True)
    monkeypatch.setattr(st, "since", time.monotonic() + 600)  # (the back-off's end)
    for raw in (False, True):
        arr, a, b = _two_values(str(tmp_path / f"{raw}.zarr"), raw=raw)
        with config.set(threads=1), _file_writers(monkeypatch) as names:
            arr[...] = b
        assert names and all(n == threading.current_thread().name for n in names), names
        np.testing.assert_array_equal(arr[...], b)


@pytest.mark.parametrize("value", ["array", "scalar"])
def test_chunks_without_a_batch_kernel_are_encoded_by_the_caller(tmp_path, monkeypatch,
                                                                 value):
    """A codec no kernel batches (numcodecs' LZ4): at one thread every chunk is encoded
    in the calling thread (a codec need not be thread-safe there), the files written
    behind it."""
    encoders: list[str] = []
    real = numcodecs.LZ4.encode

    def encode(self, buf):
        encoders.append(threading.current_thread().name)
        return real(self, buf)

    monkeypatch.setattr(numcodecs.LZ4, "encode", encode)
    x = _values((200, 210))
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=x.shape, chunks=(10, 10),
                              dtype="<u2", zarr_format=2, compressors=numcodecs.LZ4())
    with config.set(threads=1), _file_writers(monkeypatch) as names:
        a[...] = x if value == "array" else 7
    me = threading.current_thread().name
    assert len(encoders) == 420 and set(encoders) == {me}
    assert names and all(n.startswith("zarrfast-write") for n in names), names
    np.testing.assert_array_equal(a[...], x if value == "array" else 7)


def _sharded(path, x=None):
    """5 x 2 x 2 shards of zstd inner chunks over (72, 64, 64): 16 whole, the last 4 past
    the array's edge along the first axis; ``x`` written at two threads."""
    a = zarrfast.create_array(str(path), shape=(72, 64, 64), dtype="<u2", fill_value=0,
                              **LAYOUTS["sharded-zstd"])
    if x is not None:
        with config.set(threads=2):
            a[...] = x
    return a


@pytest.mark.parametrize("sel", [(slice(4, None), slice(3, None), slice(None)),
                                 (slice(None), slice(None), slice(0, 40))])
def test_partial_shards_beside_and_after_whole_ones_at_one_thread(tmp_path, monkeypatch,
                                                                  sel):
    """More shards read, changed and written back than whole ones (14 and 6, 12 and 8):
    one rides with each whole shard's store on the I/O thread, the others are the
    caller's; the files are those of two threads, and the values kept around the
    selection are the old ones."""
    x, y = _values((72, 64, 64), 1), _values((72, 64, 64), 2)
    files, rmw_threads = {}, []
    real = shard_write.read_modify_write

    def spy(store, key, *args, **kwargs):
        rmw_threads.append(threading.current_thread().name)
        return real(store, key, *args, **kwargs)

    for threads in (1, 2):
        a = _sharded(tmp_path / f"t{threads}.zarr", x)
        with config.set(threads=threads), monkeypatch.context() as m:
            if threads == 1:
                m.setattr(shard_write, "read_modify_write", spy)
            a[sel] = y[sel]
        want = x.copy()
        want[sel] = y[sel]
        np.testing.assert_array_equal(a[...], want)
        files[threads] = _files(str(tmp_path / f"t{threads}.zarr"))
        assert _leftovers(tmp_path / f"t{threads}.zarr") == []
    assert files[1] == files[2] and len(files[1]) == 20
    io = [n.startswith("zarrfast-write") for n in rmw_threads]
    whole = 6 if sel[0].start == 4 else 8
    assert len(io) == 20 - whole and sum(io) == whole, rmw_threads


def test_a_failed_read_modify_write_on_the_io_thread_is_raised_naming_the_shard(tmp_path):
    """An edge shard whose stored bytes are not a shard: its read-modify-write, on the I/O
    thread, fails naming it; the caller stops, every shard file is whole (the old
    bytes or the new) and the broken one is untouched."""
    x, y = _values((72, 64, 64), 1), _values((72, 64, 64), 2)
    _sharded(tmp_path / "new.zarr", y)
    new = _files(str(tmp_path / "new.zarr"))
    a = _sharded(tmp_path / "a.zarr", x)
    old = _files(str(tmp_path / "a.zarr"))
    bad = os.path.join(str(tmp_path / "a.zarr"), "c", "4", "0", "1")
    with open(bad, "wb") as f:
        f.write(b"not a shard")
    with config.set(threads=1), pytest.raises(zarrfast.errors.ZarrfastError,
                                              match=r"c/4/0/1"):
        a[...] = y
    files = _files(str(tmp_path / "a.zarr"))
    assert files.pop("c/4/0/1") == b"not a shard"
    assert set(files) == set(old) - {"c/4/0/1"}
    for key, blob in files.items():
        assert blob in (old[key], new[key]), key
    assert _leftovers(tmp_path / "a.zarr") == []


def test_shards_of_chunks_without_a_batch_kernel_are_all_encoded_by_the_caller(tmp_path,
                                                                               monkeypatch):
    """Inner chunks of numcodecs' LZ4 (no kernel encodes them): the edge shards' read-
    modify-writes stay the caller's, so every LZ4 call is (a codec need not be
    thread-safe at one thread)."""
    encoders: list[str] = []
    real = numcodecs.LZ4.encode

    def encode(self, buf):
        encoders.append(threading.current_thread().name)
        return real(self, buf)

    monkeypatch.setattr(numcodecs.LZ4, "encode", encode)
    lz4 = {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(72, 64, 64), dtype="<u2",
                              chunks=(16, 32, 32), fill_value=0, compressors=None,
                              serializer=ShardingCodec(chunk_shape=(8, 8, 8),
                                                       codecs=[BytesCodec(), lz4]))
    x = _values((72, 64, 64))
    with config.set(threads=1):
        a[...] = x
    assert len(encoders) == 9 * 8 * 8 and set(encoders) == {threading.current_thread().name}
    np.testing.assert_array_equal(a[...], x)
