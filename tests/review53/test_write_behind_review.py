"""Review of d5c2a5d (``concurrency.WriteBehind``: at one thread of encoding, each batch's
file writes run on an I/O thread while the caller encodes the next; two buffers of
compressed chunks alternated).  Guards for what a stranger's data depends on, all
passing now:

- many batches (over 64 chunks a write; uncompressed ones written beside the caller
  since 8b26036 / 9f858f9) mixing whole chunks (the compressed-in-one-call
  path whose bytes are views of the alternated buffers), partial chunks (read, changed
  and written back), chunks equal to the fill value (deleted unless empty chunks are
  written): the values, as zarrfast and zarr-python read them, equal NumPy's, and no
  temporary file is left;
- sharded arrays, whole shards (written behind) and partial ones (locked) in one write;
- one array object written from two threads at once, each at one thread;
- every write is in its files when it returns (read at once by zarr-python, each time).

Found sound (no test needed beyond these): the buffer of batch k is refilled only after
batch k's store calls returned (``submit`` waits first); errors of the I/O thread are
raised in the caller; ``__exit__`` waits for the batch in flight through errors and
interrupts; nested jobs and forked children do not use it."""

from __future__ import annotations

import os
import threading
import warnings

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import config

from _helpers.threads import run_in_threads

SHAPE, CHUNKS = (200, 210), (10, 10)  # 420 chunks: 7 batches of 64 at most


def _leftovers(path) -> list[str]:
    return [f for _, _, files in os.walk(path) for f in files
            if f.startswith(".") and f not in (".zarray", ".zattrs", ".zgroup")]


def _zarr_python_reads(path) -> np.ndarray:
    zarr = pytest.importorskip("zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")[...]


def _writes(rng, ref: np.ndarray):
    """(selection, value) pairs: whole-array values with runs of zeros (the fill value),
    partial blocks across chunk edges, a scalar, a strided selection."""
    full = rng.integers(1, 50, size=SHAPE).astype(ref.dtype)
    full[:, 40:80] = 0  # whole chunks of the fill value
    yield (slice(None), slice(None)), full
    yield (slice(3, 157), slice(5, 203)), rng.integers(0, 3, size=(154, 198)).astype(ref.dtype)
    yield (slice(20, 120), slice(None)), np.zeros((100, 210), ref.dtype)
    yield (slice(1, 199, 3), slice(7, 200, 2)), ref.dtype.type(9)
    yield (slice(None), slice(None)), np.where(rng.random(SHAPE) < 0.7, 0, 4).astype(ref.dtype)


@pytest.mark.parametrize("write_empty_chunks", [False, True])
@pytest.mark.parametrize(("codec", "zarr_format"), [("zstd", 2), ("gzip", 2), ("zstd", 3),
                                                    ("blosc", 3), ("none", 2), ("none", 3)])
def test_batches_written_behind_hold_the_values_written(tmp_path, codec, write_empty_chunks,
                                                        zarr_format) -> None:
    # (numcodecs' zstd and gzip, zarrfast's blosc: the codecs whose whole chunks are
    # compressed by one kernel call per batch into the alternated buffers)
    # (uncompressed: whole chunks written from the value by the caller and the I/O
    # thread side by side, 8b26036 / 9f858f9's share_with_io_thread)
    compressor = {"zstd": numcodecs.Zstd(level=1), "gzip": numcodecs.GZip(level=1),
                  "blosc": zarrfast.codecs.BloscCodec(cname="lz4", clevel=1),
                  "none": None}[codec]
    path = tmp_path / "a.zarr"
    a = zarrfast.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype="<i4",
                              fill_value=0, zarr_format=zarr_format,
                              compressors=None if compressor is None else [compressor],
                              config={"write_empty_chunks": write_empty_chunks})
    ref = np.zeros(SHAPE, "<i4")
    rng = np.random.default_rng(5)
    for sel, value in _writes(rng, ref):
        ref[sel] = value
        with config.set(threads=1):
            a[sel] = value
        np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], ref)
    np.testing.assert_array_equal(_zarr_python_reads(path), ref)
    assert _leftovers(path) == []
    stored = [f for f in os.listdir(path) if not f.startswith(".")] if zarr_format == 2 else []
    if zarr_format == 2 and not write_empty_chunks:  # (fill chunks deleted, others kept)
        nonzero = {f"{i}.{j}" for i in range(20) for j in range(21)
                   if ref[i * 10:(i + 1) * 10, j * 10:(j + 1) * 10].any()}
        assert set(stored) == nonzero


def test_shards_written_behind_and_partial_shards_in_one_write(tmp_path) -> None:
    path = tmp_path / "s.zarr"
    a = zarrfast.create_array(str(path), shape=(96, 100), chunks=(4, 5), shards=(8, 10),
                              dtype="<u2", fill_value=0,
                              compressors=[zarrfast.codecs.ZstdCodec(level=1)])
    ref = np.zeros((96, 100), "<u2")
    rng = np.random.default_rng(3)
    for sel in [(slice(None), slice(None)), (slice(3, 90), slice(0, 100)),
                (slice(8, 88), slice(10, 97)), (slice(None), slice(20, 40))]:
        value = rng.integers(0, 4, size=ref[sel].shape).astype("<u2")
        ref[sel] = value
        with config.set(threads=1):
            a[sel] = value
        np.testing.assert_array_equal(_zarr_python_reads(path), ref)
    assert _leftovers(path) == []


def test_one_array_written_from_two_threads_at_one_thread_each(tmp_path) -> None:
    path = tmp_path / "t.zarr"
    a = zarrfast.create_array(str(path), shape=(400, 210), chunks=CHUNKS, dtype="<f8",
                              fill_value=0.0, compressors=[zarrfast.codecs.ZstdCodec(level=1)])
    halves = [np.random.default_rng(k).standard_normal((200, 210)) for k in range(2)]
    start = threading.Barrier(2)

    def run(k: int) -> None:
        start.wait()
        for _ in range(3):  # (rows of chunks of its own half only)
            a[200 * k:200 * (k + 1)] = halves[k]

    with config.set(threads=1):  # (once, around both threads: see run_in_threads)
        errors = run_in_threads(run, 2)
    assert errors == []
    np.testing.assert_array_equal(_zarr_python_reads(path), np.concatenate(halves))


def test_each_write_is_in_its_files_when_it_returns(tmp_path) -> None:
    path = tmp_path / "r.zarr"
    a = zarrfast.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype="<i8",
                              fill_value=-1, compressors=[zarrfast.codecs.ZstdCodec(level=1)])
    base = np.arange(np.prod(SHAPE), dtype="<i8").reshape(SHAPE)
    for k in range(3):
        with config.set(threads=1):
            a[...] = base + k
        got = _zarr_python_reads(path)
        assert got[0, 0] == k and got[-1, -1] == base[-1, -1] + k
        np.testing.assert_array_equal(got, base + k)
