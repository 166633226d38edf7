"""Gathers of rows of zstd chunk files (prefixes of chunks), from the review of h62/warm62.

That branch (3757d54) reads each local chunk file of a gather only up to the zstd blocks
its prefix needs and decodes it in the same kernel call
(``_ext._zstd_prefix.decode_prefix_files``, from ``engine.fancy._prefix_part`` for the
gathers of ``_read_prefixes`` and ``_stream_prefixes``): a first read sized by the
share of blocks needed, a second one for a block cut short, the headers of the blocks
it skips walked (the frame must be exactly the file).  Files it cannot read or decode
go the old way, key by key.  The guards, at 1 and 2 threads:

* rows that need a chunk's first row, the end of its first block, its middle, its last
  row or all of it, sorted, unsorted, repeated and negative, of chunks of 2 and 4 zstd
  blocks that compress well in their first half and not at all in their second (the
  first read then falls short of a block) or the reverse (it reads past the blocks
  needed), with and without content checksums, an edge chunk, missing chunks, columns
  sliced and picked: NumPy's values; no chunk file left open;
* a chunk cut short in a block the rows do not need, or followed by junk bytes: refused
  naming its key even for its first row (a ``ChunkDecodeError``), the other chunks read;
* a directory where a chunk file should be: the fill value, as the plain read says; a
  link to another chunk inside the store: that chunk's values, as the plain read says;
  a FIFO: the read ends, saying what the plain read says (a child Python);
* chunks rewritten (a new file renamed over each) between two gathers: the new values;
* two threads gathering at once from arrays of different chunk sizes, and a forked
  child after its parent gathered.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError, ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.page_cache import held_open
from _helpers.stores import XorStore

COLS = 128
FILL = 9


def _data(kind: str, rows: int, chunk_rows: int, seed: int = 0) -> np.ndarray:
    shape = (rows, COLS)
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 2**32, shape, dtype=np.uint32)
    smooth = (np.arange(rows)[:, None] // 8 + np.zeros(COLS, dtype=np.int64)
              ).astype(np.uint32)
    half = (np.arange(rows) % chunk_rows < chunk_rows // 2)[:, None]
    if kind == "noise":
        return noise
    if kind == "smooth_then_noise":
        return np.where(half, smooth, noise)
    if kind == "noise_then_smooth":
        return np.where(half, noise, smooth)
    return smooth


def _array(path, data, chunk_rows, checksum=False):
    a = zarrfast.create_array(LocalStore(path), shape=data.shape, chunks=(chunk_rows, COLS),
                              dtype=data.dtype, fill_value=FILL,
                              compressors=[ZstdCodec(level=1, checksum=checksum)])
    a[...] = data
    return zarrfast.open_array(LocalStore(path), mode="r")


def _row_sets(n, chunk_rows, rng):
    first = np.arange(0, n, chunk_rows)
    yield "first", first
    yield "block end", np.minimum(first + chunk_rows // (chunk_rows * 4 * COLS // 2**17) - 1,
                                  n - 1)
    yield "block start", np.minimum(first + 2**17 // (4 * COLS), n - 1)
    yield "middle", np.minimum(first + chunk_rows // 2 + 3, n - 1)
    yield "last", np.minimum(first + chunk_rows - 1, n - 1)
    yield "sorted", np.sort(rng.choice(n, 60, replace=False))
    yield "unsorted", rng.choice(n, 50, replace=False)
    yield "repeated", np.sort(rng.integers(0, n, 80))
    yield "negative", -rng.integers(1, n + 1, 40)
    yield "mixed", np.concatenate([rng.integers(-n, n, 30), [0, 0, -1, 5]])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("kind", ["smooth_then_noise", "noise_then_smooth", "noise",
                                  "smooth"])
@pytest.mark.parametrize("chunk_rows", [512, 1024])  # (uint32: 2 and 4 zstd blocks)
def test_gathers_of_rows_are_numpys(tmp_path, threads, checksum, kind, chunk_rows):
    n = 8 * chunk_rows - 37  # (the last chunk at the edge)
    data = _data(kind, n, chunk_rows, 1)
    a = _array(tmp_path / "a", data, chunk_rows, checksum)
    want = data.copy()
    for i in (0, 5):
        os.remove(tmp_path / "a" / "c" / str(i) / "0")
        want[i * chunk_rows:(i + 1) * chunk_rows] = FILL
    rng = np.random.default_rng(2)
    with config.set(threads=threads):
        for name, rows in _row_sets(n, chunk_rows, rng):
            for cols in (slice(None), slice(3, 40), np.array([0, COLS - 1, 7, 7])):
                np.testing.assert_array_equal(a.oindex[rows, cols], want[rows][:, cols],
                                              err_msg=f"{name} {cols!r}")
    assert held_open(tmp_path / "a" / "c") == []


@pytest.mark.parametrize("damage", ["cut", "junk", "cut_last_byte"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_damaged_chunk_is_refused_even_for_its_first_rows(tmp_path, damage, threads):
    chunk_rows = 1024
    n = 8 * chunk_rows
    data = _data("smooth_then_noise", n, chunk_rows, 4)
    a = _array(tmp_path / "a", data, chunk_rows)
    key = "c/6/0"
    path = tmp_path / "a" / "c" / "6" / "0"
    raw = path.read_bytes()
    if damage == "cut":  # (its second half, the noise, cut off)
        raw = raw[:len(raw) * 2 // 3]
    elif damage == "cut_last_byte":
        raw = raw[:-1]
    else:
        raw = raw + b"junk" * 5
    path.write_bytes(raw)
    first = np.arange(0, n, chunk_rows)  # (row 0 of every chunk: a short prefix)
    with config.set(threads=threads):
        with pytest.raises(ZarrfastError, match=key) as got:
            a.oindex[first, :]
        assert isinstance(got.value, ChunkDecodeError)
        ok = first[first // chunk_rows != 6]
        np.testing.assert_array_equal(a.oindex[ok, :], data[ok, :])
    assert held_open(tmp_path / "a" / "c") == []


def _outcome(fn):
    try:
        return "ok", np.asarray(fn()).tolist()
    except ZarrfastError as e:
        return "error", type(e).__name__, str(e)
    except OSError as e:
        return "error", type(e).__name__, str(e)


@pytest.mark.parametrize("kind", ["dir", "link"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_directory_or_a_link_where_a_chunk_file_should_be(tmp_path, kind, threads):
    """The gather says what the plain read of the same rows says (the fill value for a
    directory; for a link inside the store, the linked chunk's values or an error)."""
    chunk_rows = 512
    n = 6 * chunk_rows
    data = _data("smooth_then_noise", n, chunk_rows, 5)
    a = _array(tmp_path / "a", data, chunk_rows)
    p = tmp_path / "a" / "c" / "2" / "0"
    p.unlink()
    if kind == "dir":
        p.mkdir()
    else:
        os.symlink(tmp_path / "a" / "c" / "4" / "0", p)
    rows = np.array([3, 2 * chunk_rows + 1, 2 * chunk_rows + 7, 4 * chunk_rows + 1])
    with config.set(threads=threads):
        gather = _outcome(lambda: a.oindex[rows, :])
        plain = _outcome(lambda: np.stack([a[int(r)] for r in rows]))
    assert gather[0] == plain[0], (gather[:1], plain[:1])
    if gather[0] == "ok":
        assert gather == plain
        if kind == "dir":
            assert np.array_equal(np.array(gather[1])[1:3], np.full((2, COLS), FILL))
    else:
        assert "c/2/0" in gather[2], gather
    assert held_open(tmp_path / "a" / "c") == []


_FIFO = r'''
import os, sys
import numpy as np, zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore
path, threads = sys.argv[1], int(sys.argv[2])
a = zarrfast.open_array(LocalStore(path), mode="r")
rows = np.array([3, 2 * 512 + 1, 2 * 512 + 7, 4 * 512 + 1])
def outcome(fn):
    try:
        return "ok %d" % int(np.asarray(fn(), dtype=np.int64).sum())
    except Exception as e:
        return "error %s %s" % (type(e).__name__, "c/2/0" in str(e))
with config.set(threads=threads):
    print(repr([outcome(lambda: a.oindex[rows, :]),
                outcome(lambda: np.stack([a[int(r)] for r in rows]))]))
'''


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fifo_where_a_chunk_file_should_be(tmp_path, subprocess_cwd, threads):
    chunk_rows = 512
    data = _data("smooth_then_noise", 6 * chunk_rows, chunk_rows, 5)
    _array(tmp_path / "a", data, chunk_rows)
    p = tmp_path / "a" / "c" / "2" / "0"
    p.unlink()
    os.mkfifo(p)
    run = subprocess.run([sys.executable, "-c", _FIFO, str(tmp_path / "a"), str(threads)],
                         capture_output=True, text=True, timeout=240, cwd=subprocess_cwd)
    assert run.returncode == 0, run.stderr[-3000:]
    gather, plain = eval(run.stdout.strip().splitlines()[-1])
    assert gather == plain
    assert gather.startswith("error") and gather.endswith("True"), gather


@pytest.mark.parametrize("threads", [1, 2])
def test_chunks_rewritten_between_gathers(tmp_path, threads):
    chunk_rows = 1024
    n = 4 * chunk_rows
    old = _data("noise_then_smooth", n, chunk_rows, 6)
    a = _array(tmp_path / "a", old, chunk_rows)
    rows = np.array([0, 5, chunk_rows + 3, 2 * chunk_rows + 700, n - 1])
    new = _data("smooth_then_noise", n, chunk_rows, 7)
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], old[rows])
        w = zarrfast.open_array(LocalStore(tmp_path / "a"), mode="r+")
        w[...] = new
        np.testing.assert_array_equal(a.oindex[rows, :], new[rows])
        os.remove(tmp_path / "a" / "c" / "1" / "0")
        new[chunk_rows:2 * chunk_rows] = FILL
        np.testing.assert_array_equal(a.oindex[rows, :], new[rows])


def test_two_threads_gathering_at_once(tmp_path):
    arrays, wants = [], []
    for k, chunk_rows in enumerate((512, 1024, 256)):
        n = 6 * chunk_rows + 11
        d = _data(("smooth_then_noise", "noise_then_smooth", "noise")[k], n, chunk_rows, k)
        arrays.append(_array(tmp_path / f"a{k}", d, chunk_rows))
        wants.append(d)
    errors: list[str] = []
    start = threading.Barrier(2)

    def reader(t: int) -> None:
        rng = np.random.default_rng(10 + t)
        try:
            with config.set(threads=2):
                start.wait()
                for rnd in range(30):
                    k = (t + rnd) % 3
                    n = wants[k].shape[0]
                    rows = np.sort(rng.choice(n, 50, replace=False))
                    if not np.array_equal(arrays[k].oindex[rows, 2:90], wants[k][rows, 2:90]):
                        errors.append(f"thread {t} round {rnd} array {k}")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a reader did not end"
    assert errors == []


def _child(path: str, rows, q) -> None:
    a = zarrfast.open_array(LocalStore(path), mode="r")
    with config.set(threads=2):
        q.put(np.asarray(a.oindex[rows, :]).tolist())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_gathers_after_its_parent(tmp_path):
    chunk_rows = 1024
    n = 6 * chunk_rows
    data = _data("smooth_then_noise", n, chunk_rows, 8)
    a = _array(tmp_path / "a", data, chunk_rows)
    rows = np.sort(np.random.default_rng(3).choice(n, 100, replace=False))
    with config.set(threads=2):  # (the parent's threads and buffers made)
        np.testing.assert_array_equal(a.oindex[rows, :], data[rows])
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(str(tmp_path / "a"), rows, q))
    p.start()
    try:
        result = q.get(timeout=240)
    finally:
        p.join(timeout=240)
        if p.is_alive():
            p.kill()
    np.testing.assert_array_equal(np.array(result, dtype=np.uint32), data[rows])
    assert p.exitcode == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_gathers_beside_a_writer_never_see_a_torn_chunk(tmp_path, threads):
    """A writer rewrites the array (all 1s, all 2s, in turn: each chunk file replaced
    whole) while gathers of rows in the first blocks of its chunks run: the rows of one
    chunk all come from one version of its file."""
    chunk_rows, n = 1024, 8 * 1024
    path = tmp_path / "a"
    a = zarrfast.create_array(LocalStore(path), shape=(n, COLS), chunks=(chunk_rows, COLS),
                              dtype="<u4", fill_value=0,
                              compressors=[ZstdCodec(level=1)])
    rng = np.random.default_rng(9)
    noise = rng.integers(0, 2**20, (n, COLS), dtype=np.uint32) * 4  # (several blocks)
    values = [noise + 1, noise + 2]
    a[...] = values[0]
    done = threading.Event()

    def writer():
        try:
            w = zarrfast.open_array(LocalStore(path), mode="r+")
            for k in range(1, 13):
                w[...] = values[k % 2]
        finally:
            done.set()

    reader = zarrfast.open_array(LocalStore(path), mode="r")
    rows = np.sort(np.concatenate([np.arange(0, n, chunk_rows) + d for d in (0, 7, 200)]))
    bad: list[str] = []
    t = threading.Thread(target=writer)
    t.start()
    reads = 0
    try:
        with config.set(threads=threads):
            while not done.is_set() or reads == 0:
                got = reader.oindex[rows, :]
                reads += 1
                tag = (got - noise[rows]).astype(np.int64)
                for c in range(n // chunk_rows):
                    mine = tag[rows // chunk_rows == c]
                    if not ((mine == 1).all() or (mine == 2).all()):
                        bad.append(f"read {reads}: chunk {c}: {np.unique(mine)[:5]}")
    finally:
        t.join(timeout=300)
    assert not t.is_alive()
    assert bad == []


@pytest.mark.parametrize("threads", [1, 2])
def test_gathers_from_a_store_subclass_go_through_its_get(tmp_path, threads):
    x = (np.arange(8192 * COLS).reshape(8192, COLS) % 1000).astype("<u4")
    a = zarrfast.create_array(XorStore(tmp_path / "a"), shape=x.shape, chunks=(1024, COLS),
                              dtype="<u4", fill_value=0)
    a[...] = x
    assert (tmp_path / "a" / "c" / "0" / "0").read_bytes()[:4] != b"\x28\xb5\x2f\xfd"
    a = zarrfast.open_array(XorStore(tmp_path / "a"), mode="r")
    rows = np.array([0, 3, 1025, 4000, 5000, 8191])
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
        np.testing.assert_array_equal(a.oindex[rows[::-1], 5:9], x[rows[::-1], 5:9])


@pytest.mark.parametrize("layout", ["v2", "v2F", "v3F", "transposed"])
@pytest.mark.parametrize("threads", [1, 2])
def test_gathers_of_chunks_stored_in_other_orders(tmp_path, layout, threads):
    """v2 zstd chunks in C and F order, v3 arrays of order F and of transposed chunks
    (a row is then no prefix of its chunk's bytes): NumPy's values."""
    kw = {"v2": {"zarr_format": 2}, "v2F": {"zarr_format": 2, "order": "F"},
          "v3F": {"order": "F"},
          "transposed": {"filters": [zarrfast.codecs.TransposeCodec(order=(1, 0))]}}[layout]
    x = np.random.default_rng(11).integers(0, 2**20, (8192, COLS)).astype("<u4")
    a = zarrfast.create_array(LocalStore(tmp_path / "a"), shape=x.shape, chunks=(1024, COLS),
                              dtype="<u4", fill_value=0, **kw)
    a[...] = x
    a = zarrfast.open_array(LocalStore(tmp_path / "a"), mode="r")
    rows = np.array([0, 3, 1025, 4000, 5000, 8191, 3])
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
        np.testing.assert_array_equal(a.oindex[rows[::-1], 3:9], x[rows[::-1], 3:9])
        np.testing.assert_array_equal(a.oindex[-rows - 1, :], x[-rows - 1])
