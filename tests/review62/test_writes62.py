"""Writes of files larger than 128 KiB, from the review of h62/writes62.

That branch (3bd13b8) writes every local file in ``writev``/``write`` calls of at most
128 KiB (``ZF_WRITE_PIECE`` in ``_fileio.pyx``'s ``_writev_all``, ``_WRITE_PIECE`` in
``LocalStore._set``): iovecs gathered up to a piece, one larger than a piece written a
piece at a time, the iovecs advanced over each partial write.  What a user could lose
there is bytes (a piece skipped or written twice, a partial write not resumed where it
stopped) or atomicity (a write that fails after some pieces).  The guards, at 1 and 2
threads:

* zstd chunks, blosc chunks and zstd inner chunks of shards whose compressed sizes lie
  around multiples of 128 KiB (one byte under, at, one over, several pieces): byte for
  byte numcodecs' frames; uncompressed shards of 2.3 MB (runs written from the array
  and through the staging buffer, then the index): read back as written;
* ``LocalStore.set`` of values around the piece size, contiguous and strided;
* a write failing part-way through large files (the process's file-size limit, EFBIG:
  the kernel's ``writev`` returns short, then fails) -- zstd chunks, blosc chunks, zstd
  shards, uncompressed shards, ``store.set``: an error naming a key, every file whole
  (its old or its new value) and no temporary file left;
* readers beside a writer of large shards never see a torn shard.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import BloscCodec, ZstdCodec
from zarrfast.storage import LocalStore

from _helpers.files import temporaries

PIECE = 131072


#: 1-d uint8 chunks of noise (zstd and blosc store them raw: a frame a few bytes longer
#: than the chunk), so the files are about these sizes
SIZES = [PIECE - 40, PIECE - 9, PIECE, PIECE + 1, 3 * PIECE + 17, 2_400_000]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("codec", ["zstd1", "zstd3c", "blosc_lz4", "blosc_zstd_shuffle"])
def test_large_chunk_files_are_numcodecs_bytes(tmp_path, threads, size, codec):
    n = 3 * size + 5  # (3 whole chunks and an edge one)
    x = np.random.default_rng(size).integers(0, 256, n, dtype=np.uint8)
    x[size:2 * size] //= 7  # (one chunk compresses a little)
    if codec == "zstd1":
        ours, ref = ZstdCodec(level=1), numcodecs.Zstd(level=1)
    elif codec == "zstd3c":
        ours, ref = (ZstdCodec(level=3, checksum=True), numcodecs.Zstd(level=3, checksum=True))
    elif codec == "blosc_lz4":
        ours = BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle", typesize=1)
        ref = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE)
    else:
        ours = BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=1)
        ref = numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.SHUFFLE)
    store = LocalStore(tmp_path / "a")
    a = zarrfast.create_array(store, shape=(n,), chunks=(size,), dtype="u1", fill_value=0,
                              compressors=[ours])
    with config.set(threads=threads):
        a[...] = x
    for i in range(4):
        block = np.zeros(size, np.uint8)
        part = x[i * size:(i + 1) * size]
        block[:len(part)] = part
        got = bytes(store.get(f"c/{i}"))
        assert got == bytes(ref.encode(block)), (i, len(got))
    np.testing.assert_array_equal(a[...], x)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_zstd_inner_chunks_of_large_shards_are_numcodecs_bytes(tmp_path, threads):
    # inner chunks of 160 KiB of noise (each frame more than a piece) and of 8 KiB
    # (many frames gathered into one piece), shards of 2.6 MB
    shape, chunks, shards = (64, 20480), (16, 2560), (32, 20480)
    x = np.random.default_rng(3).integers(0, 2**32, shape, dtype=np.uint32)
    x[:, 10240:] //= 2**28  # (compresses)
    store = LocalStore(tmp_path / "s")
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, shards=shards,
                              dtype="<u4", fill_value=0, compressors=[ZstdCodec(level=1)])
    with config.set(threads=threads):
        a[...] = x
    ref = numcodecs.Zstd(level=1)
    layout = a._chain.layout
    per = (shards[0] // chunks[0], shards[1] // chunks[1])
    seen = 0
    for key in store.list():
        if not key.startswith("c/"):
            continue
        si, sj = (int(p) for p in key.split("/")[1:])
        data = bytes(store.get(key))
        assert len(data) > 10 * PIECE
        index = layout.index_of_shard(np.frombuffer(data, dtype=np.uint8), key)
        for lin, (off, nb) in enumerate(index.tolist()):
            ci, cj = divmod(lin, per[1])
            g = (si * per[0] + ci, sj * per[1] + cj)
            block = x[g[0] * chunks[0]:(g[0] + 1) * chunks[0],
                      g[1] * chunks[1]:(g[1] + 1) * chunks[1]]
            assert data[off:off + nb] == bytes(ref.encode(np.ascontiguousarray(block))), g
            seen += 1
    assert seen == (shape[0] // chunks[0]) * (shape[1] // chunks[1])
    np.testing.assert_array_equal(a[...], x)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("inner", [(32, 4096), (32, 64), (32, 1000)])
def test_uncompressed_large_shards_read_back(tmp_path, threads, inner):
    """Uncompressed shards of 32 x 18000 uint32 (2.3 MB): inner rows of 16 KiB (written
    from the array), of 256 B (through the staging buffer) and of 4000 B (pieces ending
    inside runs), a selection written into an existing array too."""
    shape = (64, 18000)
    x = np.random.default_rng(4).integers(0, 2**32, shape, dtype=np.uint32)
    shards = (32, 18000 // inner[1] * inner[1])
    store = LocalStore(tmp_path / "r")
    a = zarrfast.create_array(store, shape=shape, chunks=inner, shards=shards,
                              dtype="<u4", fill_value=0, compressors=None)
    with config.set(threads=threads):
        a[...] = x
        np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[...], x)
        x[5:60, 100:17000] = 12345
        a[5:60, 100:17000] = 12345
    np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[...], x)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("size", [0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17,
                                  2_400_000])
def test_store_set_of_values_around_the_piece_size(tmp_path, size):
    store = LocalStore(tmp_path / "v")
    v = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    store.set("k/plain", v.tobytes())
    store.set("k/array", v)
    store.set("k/view", memoryview(bytearray(v.tobytes())))
    wide = np.random.default_rng(1).integers(0, 256, (2, size), dtype=np.uint8)
    store.set("k/strided", memoryview(wide[:, ::1].T))  # (not contiguous: copied first)
    assert bytes(store.get("k/plain")) == v.tobytes()
    assert bytes(store.get("k/array")) == v.tobytes()
    assert bytes(store.get("k/view")) == v.tobytes()
    assert bytes(store.get("k/strided")) == np.ascontiguousarray(wide.T).tobytes()
    assert temporaries(tmp_path) == []


_EFBIG = r'''
import os, resource, signal, sys
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
path, threads, limit, layout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
store = LocalStore(path)
if layout == "set":
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        store.set("big", np.full(3 * limit, 2, np.uint8).tobytes())
        print("no error")
    except Exception as e:
        print("error", type(e).__name__, str(e).replace("\n", " "))
    sys.exit(0)
a = zarrfast.open_array(store, mode="r+")
new = np.full(a.shape, 3, a.dtype)
rng = np.random.default_rng(0)
# blocks 1 and 4 of rows (noise: larger than the limit once compressed)
for b in (1, 4):
    new[b * 64:(b + 1) * 64] = rng.integers(0, 2**32, (64, a.shape[1]), dtype=np.uint32)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
with config.set(threads=threads):
    try:
        a[...] = new
        print("no error")
    except Exception as e:
        print("error", type(e).__name__, str(e).replace("\n", " "))
'''

LAYOUTS = {
    "zstd": dict(chunks=(64, 2048), compressors=[ZstdCodec(level=1)]),
    "blosc": dict(chunks=(64, 2048), compressors=[BloscCodec(cname="lz4", clevel=5,
                                                              shuffle="shuffle")]),
    "zstd_shards": dict(chunks=(16, 512), shards=(64, 2048),
                        compressors=[ZstdCodec(level=1)]),
    "raw_shards": dict(chunks=(16, 512), shards=(64, 2048), compressors=None),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", [*LAYOUTS, "set"])
def test_large_writes_failing_part_way_tear_nothing(tmp_path, subprocess_cwd, threads,
                                                    layout):
    """A child Python whose files may not grow past 300,000 bytes (RLIMIT_FSIZE: EFBIG
    after two pieces and part of a third) writes an array of 6 x 2 blocks of 64 x 2048
    uint32 (512 KiB), those of rows 1 and 4 noise (larger than the limit compressed,
    the others all 3s; uncompressed, every shard is): the write raises naming a key,
    each block is whole (all old or all new) -- the noise ones old -- and no temporary
    file is left."""
    path = tmp_path / "a"
    shape = (6 * 64, 2 * 2048)
    limit = 300_000
    if layout == "set":
        store = LocalStore(path)
        store.set("big", b"old")
        run = subprocess.run([sys.executable, "-c", _EFBIG, str(path), str(threads),
                              str(limit), layout], capture_output=True, text=True,
                             timeout=240, cwd=subprocess_cwd)
        assert run.returncode == 0, run.stderr[-3000:]
        out = run.stdout.strip()
        assert out.startswith("error"), out
        assert "big" in out, out
        assert bytes(store.get("big")) == b"old"
        assert temporaries(tmp_path) == []
        return
    old = (np.arange(np.prod(shape), dtype=np.uint32).reshape(shape) % 1000) + 7
    a = zarrfast.create_array(LocalStore(path), shape=shape, dtype="<u4", fill_value=0,
                              **LAYOUTS[layout])
    a[...] = old
    run = subprocess.run([sys.executable, "-c", _EFBIG, str(path), str(threads),
                          str(limit), layout], capture_output=True, text=True,
                         timeout=240, cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout.strip()
    assert out.startswith("error"), out
    assert "c/1/" in out or "c/4/" in out or layout == "raw_shards", out
    assert "c/" in out, out
    got = zarrfast.open_array(LocalStore(path), mode="r")[...]  # (every file decodes)
    for b in range(6):
        for c in range(2):
            blk = (slice(b * 64, (b + 1) * 64), slice(c * 2048, (c + 1) * 2048))
            if b in (1, 4) or layout == "raw_shards":
                np.testing.assert_array_equal(got[blk], old[blk], err_msg=str((b, c)))
            else:
                assert (got[blk] == 3).all() or (got[blk] == old[blk]).all(), (b, c)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("compressed", [False, True])
def test_readers_beside_a_writer_of_large_shards_never_see_a_torn_shard(tmp_path, threads,
                                                                        compressed):
    shape, chunks, shards = (64, 16384), (16, 2048), (32, 8192)  # (1 MiB shards)
    path = tmp_path / "a"
    kw = {"compressors": [ZstdCodec(level=1)]} if compressed else {"compressors": None}
    a = zarrfast.create_array(LocalStore(path), shape=shape, chunks=chunks, shards=shards,
                              dtype="<u4", fill_value=0, **kw)
    ones = np.ones(shape, np.uint32)
    a[...] = ones
    values = [ones, ones * 2]
    done = threading.Event()
    bad: list[str] = []

    def writer():
        try:
            with config.set(threads=threads):
                for k in range(12):
                    a[...] = values[k % 2]
        finally:
            done.set()

    t = threading.Thread(target=writer)
    t.start()
    reader = zarrfast.open_array(LocalStore(path), mode="r")
    reads = 0
    try:
        while not done.is_set() or reads == 0:
            got = reader[...]
            reads += 1
            for i in range(2):
                for j in range(2):
                    blk = got[i * 32:(i + 1) * 32, j * 8192:(j + 1) * 8192]
                    if not ((blk == 1).all() or (blk == 2).all()):
                        bad.append(f"read {reads}: shard {(i, j)}: {np.unique(blk)[:5]}")
    finally:
        t.join(timeout=300)
    assert not t.is_alive()
    assert bad == []
    assert temporaries(tmp_path) == []
