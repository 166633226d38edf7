"""Review of h55/writes (1dda9d0, 512a0a2, feba12d): sharded writes at one thread hand the
read-modify-writes of edge and partly written shards to the file I/O thread
(``ShardWrite.beside`` / ``store_along``), and a batch of the file kernels shares one
temporary file name (``LocalStore._tmp_names``).

Guards, all passing on the branch and on 7f98544 (where the read-modify-writes were the
caller's): they check the behaviour, not which thread does the work, except where said.

* Hypothesis: sharded arrays of zstd, gzip or zlib inner chunks (edge shards, inner grids
  that are not powers of two, the index at the start or the end), old data written at two
  threads (some shards missing), then a box written at one thread with the I/O thread
  forced on, part of it the fill value (``write_empty_chunks`` on and off: inner chunks
  left out, shards deleted): the values are NumPy's, the files those of the same writes
  at two threads (the time in gzip headers aside).
* Two processes and two threads, each writing at one thread (the I/O thread on) its own
  part of the same partly written shards, many rounds: no writer loses another's inner
  chunks (the shard locks are taken on the I/O thread too).
* A failure of the read-modify-write on the I/O thread (a directory where an edge shard's
  file goes; an inner chunk that does not decode): raised to the caller naming the key
  (and the inner chunk); every other shard file whole, old or new; nothing left behind.
* A batch of the file kernels with one temporary name: a file failing part way in each
  directory of the batch, the others written, no temporary file left.
"""

from __future__ import annotations

import os
import re
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, GzipCodec, ShardingCodec, ZstdCodec
from zarrfast.engine import shard_write
from zarrfast.errors import ZarrfastError
from zarrfast.kernels import encode as _encode
from zarrfast.storage import LocalStore

from _helpers.threads import run_in_threads, wait_child

pytestmark = [
    pytest.mark.skipif(_encode.ChunkEncoder is None, reason="the batched encoder is not built"),
    pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3"),
]

TMP_MARK = ".zarrfast-tmp-"
ZLIB = {"name": "numcodecs.zlib", "configuration": {"level": 1}}
CODECS = {"zstd": lambda: ZstdCodec(level=1), "gzip": lambda: GzipCodec(level=1),
          "zlib": lambda: ZLIB}


def _files(path) -> dict[str, bytes]:
    store = LocalStore(str(path))
    return {k: bytes(store.get(k)) for k in store.list() if not k.endswith(".json")}


def _no_mtime(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` with the time in each gzip member's header zeroed (numcodecs' GZip, and
    zarrfast after it, write the time of the write there)."""
    return {k: re.sub(rb"\x1f\x8b\x08\x00....", b"\x1f\x8b\x08\x00\x00\x00\x00\x00", v,
                      flags=re.DOTALL) for k, v in files.items()}


def _leftovers(path) -> list[str]:
    return [f for _, _, files in os.walk(path) for f in files if f.startswith(TMP_MARK)]


def _values(shape, seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64)
    return (x % 4999 + 1).astype("<u2").reshape(shape)


def _create(path, shape, shards, inner, codec, index_location="end"):
    return zarrfast.create_array(
        str(path), shape=shape, dtype="<u2", chunks=shards, fill_value=0, compressors=None,
        serializer=ShardingCodec(chunk_shape=inner, codecs=[BytesCodec(), CODECS[codec]()],
                                 index_location=index_location))


@st.composite
def _cases(draw):
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(2, 5)) for _ in range(ndim))
    per = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    shards = tuple(i * p for i, p in zip(inner, per, strict=True))
    shape = tuple(draw(st.integers(s, 3 * s + s // 2)) for s in shards)
    box = []
    for n in shape:
        # (whole shards often: a read-modify-write rides with each one's store)
        a = draw(st.one_of(st.just(0), st.integers(0, n - 1)))
        b = draw(st.one_of(st.just(n), st.integers(a + 1, n)))
        box.append(slice(a, b))
    old = tuple(slice(0, draw(st.integers(0, n))) for n in shape)
    # (the new values 0, the fill value, in a box: inner chunks and shards left out or
    # deleted)
    zero = tuple(slice(0, draw(st.integers(0, n))) for n in shape)
    return (shape, shards, inner, draw(st.sampled_from(sorted(CODECS))),
            draw(st.sampled_from(["start", "end"])), old, tuple(box), zero,
            draw(st.integers(0, 2**16)), draw(st.booleans()))


#: how many read-modify-writes ran on the file I/O thread, over the examples (the branch
#: hands some there; 7f98544 none)
_ON_IO: list[str] = []


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_cases())
def test_one_thread_with_rmws_on_the_io_thread_writes_the_files_of_two_threads(
        tmp_path_factory, monkeypatch, case):
    shape, shards, inner, codec, where, old, box, zero, seed, empty = case
    x, y = _values(shape, seed), _values(shape, seed + 1)
    y[zero] = 0
    real = shard_write.read_modify_write

    def spy(store, key, *args, **kwargs):
        _ON_IO.append(threading.current_thread().name)
        return real(store, key, *args, **kwargs)

    files = {}
    root = tmp_path_factory.mktemp("w")
    for threads in (1, 2):
        path = root / f"t{threads}.zarr"
        a = _create(path, shape, shards, inner, codec, where)
        with config.set(threads=2):
            a[old] = x[old]
        with config.set({"threads": threads, "write_empty_chunks": empty}), \
                monkeypatch.context() as m:
            if threads == 1:
                m.setattr(shard_write, "read_modify_write", spy)
            a[box] = y[box]
        want = np.zeros(shape, "<u2")
        want[old] = x[old]
        want[box] = y[box]
        np.testing.assert_array_equal(a[...], want)
        files[threads] = _files(path)
        assert _leftovers(path) == []
    assert _no_mtime(files[1]) == _no_mtime(files[2])


#: (64, 96, 64) in shards of (32, 32, 32), inner chunks (8, 8, 8): writer 0 writes rows
#: 0:40 of axis 1 (shard column 0 whole, column 1 partly), writer 1 rows 40:96 (column 1
#: partly, column 2 whole): the 4 shards of column 1 are read, changed and written back by
#: both, beside whole shards of their own
SHAPE, SHARDS, INNER = (64, 96, 64), (32, 32, 32), (8, 8, 8)
PARTS = [(slice(None), slice(0, 40)), (slice(None), slice(40, 96))]


def _round_values(k: int, r: int) -> np.ndarray:
    return _values(SHAPE, 100 * r + k)[PARTS[k]]


def _write_rounds(path: str, k: int, rounds: int) -> None:
    a = zarrfast.open_array(path, mode="r+")
    for r in range(rounds):
        a[PARTS[k]] = _round_values(k, r)


@pytest.mark.parametrize("how", ["processes", "threads"])
def test_concurrent_writers_of_the_same_shards_at_one_thread_lose_nothing(tmp_path,
                                                                          monkeypatch, how):
    rounds = 6
    path = str(tmp_path / "a.zarr")
    _create(path, SHAPE, SHARDS, INNER, "zstd")
    on_io: list[str] = []
    real = shard_write.read_modify_write

    def spy(store, key, *args, **kwargs):
        on_io.append(threading.current_thread().name)
        return real(store, key, *args, **kwargs)

    monkeypatch.setattr(shard_write, "read_modify_write", spy)
    with config.set(threads=1):
        if how == "threads":
            assert run_in_threads(lambda k: _write_rounds(path, k, rounds), 2) == []
        else:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                code = 1
                try:
                    _write_rounds(path, 1, rounds)
                    code = 0
                finally:
                    os._exit(code)
            _write_rounds(path, 0, rounds)
            assert wait_child(pid, "writing its rounds", timeout=240) == 0
    a = zarrfast.open_array(path)
    got = a[...]
    for k in range(2):
        np.testing.assert_array_equal(got[PARTS[k]], _round_values(k, rounds - 1),
                                      err_msg=f"writer {k}'s last round")
    assert _leftovers(tmp_path) == []
    assert on_io  # (the partly written shards: read, changed and written back)


def _edge_setup(tmp_path):
    """(72, 64, 64) in shards (16, 32, 32) of zstd (8, 8, 8): 16 whole shards, 4 edge
    ones (c/4/...); old values written, new ones written whole at two threads elsewhere."""
    shape = (72, 64, 64)
    x, y = _values(shape, 1), _values(shape, 2)
    new = _create(tmp_path / "new.zarr", shape, (16, 32, 32), (8, 8, 8), "zstd")
    with config.set(threads=2):
        new[...] = y
    a = _create(tmp_path / "a.zarr", shape, (16, 32, 32), (8, 8, 8), "zstd")
    with config.set(threads=2):
        a[...] = x
    return a, y, _files(tmp_path / "a.zarr"), _files(tmp_path / "new.zarr")


def test_a_failed_store_of_an_edge_shard_on_the_io_thread_is_raised_naming_it(tmp_path):
    a, y, old, new = _edge_setup(tmp_path)
    bad = os.path.join(str(tmp_path / "a.zarr"), "c", "4", "1", "0")
    os.remove(bad)
    os.makedirs(os.path.join(bad, "in-the-way"))
    with config.set(threads=1), pytest.raises(ZarrfastError, match=r"c/4/1/0"):
        a[...] = y
    files = _files(tmp_path / "a.zarr")
    assert "c/4/1/0" not in files
    assert set(files) == set(old) - {"c/4/1/0"}
    for key, blob in files.items():
        assert blob in (old[key], new[key]), key
    assert os.listdir(bad) == ["in-the-way"]
    assert _leftovers(tmp_path / "a.zarr") == []


def test_an_inner_chunk_that_does_not_decode_on_the_io_thread_is_named(tmp_path):
    """Rows 0:66 written: the edge shards' inner chunks (0, j, k) (rows 64:72, the array
    ends at 72) are written in part, on their old bytes; inner chunk (0, 0, 0) of shard
    c/4/0/0 does not decode: the error names the shard and the inner chunk; no shard
    changed but whole ones."""
    a, y, old, new = _edge_setup(tmp_path)
    path = os.path.join(str(tmp_path / "a.zarr"), "c", "4", "0", "0")
    blob = bytearray(old["c/4/0/0"])
    n_inner = 2 * 4 * 4  # (the index at the end: (offset, size) per inner chunk in C
    # order, then its crc32c)
    index = np.frombuffer(bytes(blob[-(16 * n_inner + 4):-4]), "<u8").reshape(-1, 2)
    off, size = (int(v) for v in index[0])
    assert size > 0
    blob[off:off + size] = b"\x01" * size
    with open(path, "wb") as f:
        f.write(bytes(blob))
    sel = (slice(0, 66), slice(None), slice(None))  # (16 whole shards, 4 partial edge)
    with config.set(threads=1), pytest.raises(ZarrfastError, match=r"c/4/0/0") as info:
        a[sel] = y[sel]
    assert "inner chunk" in str(info.value)
    files = _files(tmp_path / "a.zarr")
    assert files.pop("c/4/0/0") == bytes(blob)
    for key, b in files.items():
        assert b in (old[key], new[key]), key
    assert _leftovers(tmp_path / "a.zarr") == []


@pytest.mark.parametrize("how", ["set_many", "set_regions"])
def test_one_temporary_name_across_directories_and_failures(tmp_path, how):
    """Keys of three directories interleaved in one batch, one key of each directory
    failing (a directory in the way): every other file is written whole, each failure
    names its key, no temporary file is left in any directory."""
    store = LocalStore(tmp_path)
    keys = [f"c/{d}/{i}" for i in range(4) for d in range(3)]
    bad = {"c/0/1", "c/1/2", "c/2/0"}
    for k in bad:
        os.makedirs(tmp_path / k / "x")
    values = np.arange(len(keys) * 8, dtype="<u4").reshape(len(keys), 8)
    with pytest.raises(ZarrfastError, match=r"c/\d/\d"):
        if how == "set_many":
            store.set_many([(k, values[i].tobytes()) for i, k in enumerate(keys)])
        else:
            store.set_regions(keys, values.reshape(-1).view(np.uint8),
                              np.arange(len(keys), dtype=np.int64)[:, None] * 32,
                              np.array([4], dtype=np.int64), np.array([8], dtype=np.int64), 4)
    for i, k in enumerate(keys):
        if k not in bad:
            assert store.get(k) == values[i].tobytes(), k
        else:
            assert os.listdir(tmp_path / k) == ["x"]
    assert _leftovers(tmp_path) == []
