"""Whole-shard reads of a remote ObjectStore over HTTP, from the review of h60/rshard.

That branch streamed a whole remote shard of zstd inner chunks
(``ShardRowsRead.fetch_streamed``): its inner chunks were guessed from the zstd frames
as the body arrived and decoded on the compute pool while the rest arrived, then
checked against the shard's index once it was in.  It was merged and then reverted
(616aa97: no gain on a quiet machine, as stop 58's h58/remote2 before it); these tests
stay as guards of main's whole-shard reads.

Finding: a whole-shard read made from a task of the engine's pool (a nested job,
which ``concurrency`` runs inline because "a pool thread must not wait for work
queued behind it") hangs for good: ``fetch_streamed`` runs on the pool thread, hands
its guessed decodes to that same pool and waits for them (``_Guess.stop``); when
every worker does so, the decodes stay queued behind the waiting tasks.
``test_whole_shard_reads_from_pool_tasks_end`` passes on main, hangs on the branch at
d2ffdd7 and 75e614a (killed after 120 s); the branch's 7056437 made the fix
of /work/data/review60/rshard-fix.diff (no streaming inside a pool task), with which
it passes: a guard from then on.

Guards (pass on main and on the branch): through an HTTP server and obstore, at two
threads, whole-shard reads of shards of several 256 KiB pieces give NumPy's values
when the inner chunks are stored in write order, in reverse order, some not stored,
in F order and big-endian, at the array's edge; a body cut short is read again; a
shard replaced before that second read reads whole-new; a damaged inner chunk is
refused naming its shard; an array refusing missing chunks names a missing shard and
reads a shard with inner chunks not stored as the fill value there; bodies that keep
failing are refused naming their shard and give their request slots back; indexes at
the start or the end, inner chunks written in index, Z or column-major order (an order
learned from another array at the same URL guessed for the next) read right.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ZstdCodec
from zarrfast.codecs.shard_format import EMPTY
from zarrfast.errors import ChunkDecodeError, ZarrfastError
from zarrfast.storage import MemoryStore, ObjectStore, RetryPolicy

pytest.importorskip("obstore")

#: 2 x 2 shards (the last ones cut by the array's edge) of 4 x 4 inner chunks of
#: (64, 64) float32 (random bits: ~16 KiB a frame): shards of ~256-512 KiB
SHAPE, SHARDS, CHUNKS = (448, 500), (256, 256), (64, 64)
FILL = -1.5
RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




def _files(data, **kw) -> dict[str, bytes]:
    mem = MemoryStore()
    a = zarrfast.create_array(mem, shape=data.shape, chunks=CHUNKS, shards=SHARDS,
                              dtype=data.dtype, fill_value=FILL,
                              compressors=[ZstdCodec(level=1)], **kw)
    a[...] = data
    return {k: bytes(mem.get(k)) for k in mem.list()}


def _open(server, files, **kw):
    for k, v in files.items():
        server.objects[f"d/{k}"] = v
    store = ObjectStore.from_url(server.url("d"), retry=RETRY).with_read_only()
    return zarrfast.open_array(store, mode="r", **kw)


def _reversed(files, key, layout) -> None:
    """Shard ``key`` rewritten with its inner chunks in reverse order (a valid shard:
    the same entries, pointing elsewhere)."""
    data = files[key]
    index = layout.index_of_shard(np.frombuffer(data, dtype=np.uint8), key)
    new, parts, pos = index.copy(), [], 0
    for j in reversed(range(len(index))):
        if index[j, 0] == EMPTY:
            continue
        off, nb = (int(x) for x in index[j])
        parts.append(data[off:off + nb])
        new[j] = (pos, nb)
        pos += nb
    files[key] = b"".join(parts) + bytes(layout.encode_index(new))


def _data(seed=60, dtype="f4"):
    return np.random.default_rng(seed).random(SHAPE).astype(dtype)


_NESTED = r'''
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, zarrfast
from _helpers.fault_http import FaultServer
from zarrfast.codecs import ZstdCodec
from zarrfast.concurrency import map_unordered_into
from zarrfast.storage import MemoryStore, ObjectStore

s = FaultServer().start()
mem = MemoryStore()
data = np.random.default_rng(0).random((512, 512), dtype=np.float32)
a = zarrfast.create_array(mem, shape=data.shape, chunks=(64, 64), shards=(256, 256),
                          dtype="f4", compressors=[ZstdCodec(level=1)])
a[...] = data
for k in mem.list():
    s.objects["d/" + k] = bytes(mem.get(k))
r = zarrfast.open_array(ObjectStore.from_url(s.url("d")).with_read_only(), mode="r")
got = {}

def read(i):  # (a whole shard, on a thread of the engine's pool)
    y, x = divmod(i % 4, 2)
    got[i] = (y, x, r[y * 256:(y + 1) * 256, x * 256:(x + 1) * 256])

with zarrfast.config.set({"threads": 2}):
    map_unordered_into(read, range(64), threads=2)
bad = [i for i, (y, x, v) in got.items()
       if not np.array_equal(v, data[y * 256:(y + 1) * 256, x * 256:(x + 1) * 256])]
print("ok" if len(got) == 64 and not bad else f"wrong values: {bad}")
s.stop()
'''


def test_whole_shard_reads_from_pool_tasks_end(subprocess_cwd):
    """Reads of whole remote shards made from tasks of the engine's pool (each a
    nested job, run inline) end, with NumPy's values.  In a child Python, killed after
    120 s: a pool thread that waits for work queued behind it on its own pool hangs."""
    try:
        run = subprocess.run([sys.executable, "-c", _NESTED, TESTS], capture_output=True,
                             text=True, timeout=120, cwd=subprocess_cwd)
    except subprocess.TimeoutExpired:
        pytest.fail("whole-shard reads from tasks of the engine's pool hung (120 s)")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("ok"), run.stdout[-2000:]


@pytest.mark.parametrize("layout", ["write", "reversed", "holes"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_whole_remote_shards_are_numpys(served, layout, order, endian):
    data = _data()
    kw: dict = {"serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    want = data.copy()
    if layout == "holes":  # (inner chunks of the fill value: not stored, frames shift)
        for y, x in ((0, 0), (1, 2), (3, 3), (5, 7), (6, 4)):
            want[y * 64:(y + 1) * 64, x * 64:(x + 1) * 64] = FILL
    files = _files(want, **kw)
    if layout == "reversed":
        fmt = zarrfast.open_array(_mem(files), mode="r")._chain.layout
        for key in ("c/0/0", "c/1/1"):
            _reversed(files, key, fmt)
    with zarrfast.config.set({"threads": 2}):
        a = _open(served, files)
        for region in (np.s_[...], np.s_[256:, :], np.s_[:256, 256:], np.s_[::-1, ::-2]):
            np.testing.assert_array_equal(a[region], want[region], err_msg=repr(region))


def _mem(files) -> MemoryStore:
    mem = MemoryStore()
    for k, v in files.items():
        mem.set(k, v)
    return mem


def test_a_body_cut_short_is_read_again_whole_new(served):
    """The first answer for a shard is cut short; the shard is replaced before it is
    read again: the read gives the new shard's values, not the old one's anywhere."""
    old, new = _data(1), _data(2)
    files, newer = _files(old), _files(new)
    with zarrfast.config.set({"threads": 2}):
        a = _open(served, files)
        np.testing.assert_array_equal(a[:256, :256], old[:256, :256])
        served.fail("short", 1, path="d/c/0/0")
        real = served._answer

        async def answer(method, path, headers, body, writer):
            ok = await real(method, path, headers, body, writer)
            if path == "d/c/0/0":  # (replaced once its first answer went out)
                served.objects["d/c/0/0"] = newer["c/0/0"]
            return ok
        served._answer = answer
        try:
            got = a[:256, :256]
        finally:
            del served._answer
    np.testing.assert_array_equal(got, new[:256, :256])


def test_a_damaged_inner_chunk_is_refused_naming_its_shard(served):
    data = _data(3)
    files = _files(data)
    fmt = zarrfast.open_array(_mem(files), mode="r")._chain.layout
    raw = bytearray(files["c/1/0"])
    index = fmt.index_of_shard(np.frombuffer(bytes(raw), dtype=np.uint8), "c/1/0")
    off, nb = (int(x) for x in index[5])
    assert raw[off + 4] == 0x60  # (one segment, a 2-byte content size after it)
    raw[off + 5] ^= 0x01  # (inner chunk 5's content size: its blocks' walk unchanged)
    files["c/1/0"] = bytes(raw)
    with zarrfast.config.set({"threads": 2}):
        a = _open(served, files)
        with pytest.raises(ChunkDecodeError, match="c/1/0"):
            a[256:, :256]
        np.testing.assert_array_equal(a[:256, :], data[:256, :])


def test_an_array_refusing_missing_chunks_names_the_missing_shard(served):
    data = _data(4)
    want = data.copy()
    want[0:64, 64:128] = FILL  # (an inner chunk not stored: read as the fill value)
    files = _files(want)
    del files["c/1/1"]
    with zarrfast.config.set({"array.read_missing_chunks": False, "threads": 2}):
        a = _open(served, files)
        np.testing.assert_array_equal(a[:256, :], want[:256, :])
        with pytest.raises(ZarrfastError, match="c/1/1"):
            a[...]


def test_bodies_that_keep_failing_are_named_and_give_their_request_slots_back(served):
    """Every answer for shard c/0/0 cut short: each read is refused naming it; the
    store's request slots (2) all come back, so that a read after them ends (on a
    thread of its own, waited for 60 s: a slot kept by a failed body would hang it)."""
    import threading

    data = _data(5)
    files = _files(data)
    with zarrfast.config.set({"threads": 2}):
        for k, v in files.items():
            served.objects[f"d/{k}"] = v
        store = ObjectStore.from_url(served.url("d"), retry=RetryPolicy(attempts=1),
                                     max_concurrency=2).with_read_only()
        a = zarrfast.open_array(store, mode="r")
        served.fail("short", 100, path="d/c/0/0")
        for _ in range(4):
            with pytest.raises(ZarrfastError, match="c/0/0"):
                a[...]
        served.reset()
        got: list = []
        t = threading.Thread(target=lambda: got.append(a[...]), daemon=True)
        t.start()
        t.join(60)
    assert not t.is_alive(), "a read after failed bodies hung (a request slot kept)"
    np.testing.assert_array_equal(got[0], data)


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("write_order", ["lexicographic", "morton", "colexicographic"])
def test_shard_layouts_are_numpys(served, location, write_order):
    """The index at the shard's start or end, the inner chunks written in index, Z or
    column-major order (none of which the guess may assume), some not stored."""
    from zarrfast.codecs import BytesCodec, ShardingCodec

    data = _data(6)
    data[64:128, 0:64] = FILL
    try:
        codec = ShardingCodec(chunk_shape=CHUNKS, index_location=location,
                              subchunk_write_order=write_order,
                              codecs=(BytesCodec(), ZstdCodec(level=1)))
    except Exception as e:  # noqa: BLE001 - an order this version does not write
        pytest.skip(f"{write_order}: {e}")
    mem = MemoryStore()
    a = zarrfast.create_array(mem, shape=SHAPE, dtype=data.dtype, chunks=SHARDS,
                              serializer=codec, compressors=None, fill_value=FILL)
    a[...] = data
    files = {k: bytes(mem.get(k)) for k in mem.list()}
    with zarrfast.config.set({"threads": 2}):
        b = _open(served, files)
        for _ in range(2):  # (the second read: with an order learned from the first)
            np.testing.assert_array_equal(b[...], data)
            np.testing.assert_array_equal(b[256:, 3:400], data[256:, 3:400])
