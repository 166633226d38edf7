"""Gathers (``oindex``, ``vindex``) of a remote store over HTTP, and the bound on its
reads in flight, from the review of h60/rrows2.

That branch gives an ``ObjectStore``'s reads a bound of their own
(``reads_in_flight``, ``config remote_reads_in_flight``, default 256; writes keep
``max_concurrency``), and fetches a remote gather's chunks in ``get_many`` calls of at
most ``FETCH_PART`` (16) chunks, each call's chunks decoded as soon as they are in.

Guards (pass on main and on the branch, at 1 and 2 threads): gathers of many chunks (many
calls) -- sorted, unsorted, repeated and negative rows, slices and index arrays for the
other dimension, zstd with and without content checksums, little- and big-endian, C and
F order, edge chunks -- equal NumPy with chunks missing (the fill value) anywhere in the
line; an array that refuses missing chunks names the missing one, and a chunk cut short
or followed by other bytes in a late call is refused naming its key.  Needing the
branch (skipped without ``reads_in_flight``): a bad ``reads_in_flight`` is refused
naming the value; the setting survives ``with_read_only`` and pickling; a gather with
``reads_in_flight=3`` never has more than 3 requests at the server at once, and writes
of a store whose reads are bounded so still complete whole.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError, ZarrfastError
from zarrfast.storage import ObjectStore, RetryPolicy

from _helpers.files import written_files

pytest.importorskip("obstore")

#: chunks of (256, 32) uint16: 16 KiB; 70 x 2 chunks, the last ones at the array's edge
ROWS, COLS = 256, 32
SHAPE = (69 * ROWS + 100, COLS + 9)
FILL = 7
RETRY = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)
HAS_BOUND = "reads_in_flight" in inspect.signature(ObjectStore.__init__).parameters
needs_branch = pytest.mark.skipif(not HAS_BOUND, reason="needs ObjectStore(reads_in_flight=)")




def _files(data, **kw) -> dict[str, bytes]:
    return written_files(data, chunks=(ROWS, COLS), fill_value=FILL, **kw)


def _open(server, files, **store_kw):
    for k, v in files.items():
        server.objects[f"d/{k}"] = v
    store = ObjectStore.from_url(server.url("d"), retry=RETRY, **store_kw).with_read_only()
    return zarrfast.open_array(store, mode="r")


def _data(seed):
    return np.random.default_rng(seed).integers(0, 3000, SHAPE, dtype=np.uint16)


#: a row of every chunk along the first dimension (70 chunks: five calls of 16 and more)
EVERY = np.arange(3, SHAPE[0], ROWS)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_gathers_of_many_chunks_are_numpys(served, threads, checksum, order, endian):
    data = _data(1)
    kw: dict = {"compressors": [ZstdCodec(level=1, checksum=checksum)],
                "serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    files = _files(data, **kw)
    want = data.copy()
    for i, j in ((0, 0), (17, 0), (33, 1), (52, 0), (69, 0)):  # (early, late, last calls)
        del files[f"c/{i}/{j}"]
        want[i * ROWS:(i + 1) * ROWS, j * COLS:(j + 1) * COLS] = FILL
    rng = np.random.default_rng(2)
    mixed = np.concatenate([EVERY[::-1], rng.integers(-SHAPE[0], SHAPE[0], 50), [0, 0, -1]])
    cols = np.array([1, -1, COLS, 5, 5])
    with zarrfast.config.set({"threads": threads}):
        a = _open(served, files)
        for rows in (EVERY, mixed):
            for other in (slice(None), slice(None, None, -2), cols):
                np.testing.assert_array_equal(a.oindex[rows, other], want[rows][:, other],
                                              err_msg=repr(other))
            pts = rows, np.arange(len(rows)) % SHAPE[1]
            np.testing.assert_array_equal(a.vindex[pts], want[pts])


@pytest.mark.parametrize("damage", ["cut", "junk", "missing"])
def test_a_bad_chunk_in_a_late_call_is_named(served, damage):
    data = _data(3)
    files = _files(data, compressors=[ZstdCodec(level=1)])
    key = "c/61/0"  # (in the fourth call of 16 chunks)
    if damage == "cut":
        files[key] = files[key][:len(files[key]) // 2]
    elif damage == "junk":
        files[key] = files[key] + b"junk" * 5
    else:
        del files[key]
    with zarrfast.config.set({"array.read_missing_chunks": damage != "missing"}):
        a = _open(served, files)
    for threads in (1, 2):
        with zarrfast.config.set({"threads": threads}):
            with pytest.raises(ZarrfastError, match=key) as got:
                a.oindex[EVERY, :]
            if damage != "missing":
                assert isinstance(got.value, ChunkDecodeError)
            ok = EVERY[EVERY // ROWS != 61]
            np.testing.assert_array_equal(a.oindex[ok, :], data[ok, :])


@needs_branch
@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_a_bad_reads_in_flight_is_refused_naming_it(served, bad):
    with pytest.raises(ZarrfastError, match=f"reads_in_flight.*{bad!r}"):
        ObjectStore.from_url(served.url("d"), reads_in_flight=bad)


@needs_branch
def test_reads_in_flight_survives_with_read_only_and_pickling(served):
    store = ObjectStore.from_url(served.url("d"), reads_in_flight=3, max_concurrency=5)
    for s in (store.with_read_only(), pickle.loads(pickle.dumps(store)),
              pickle.loads(pickle.dumps(store.with_read_only()))):
        assert (s.reads_in_flight, s.max_concurrency) == (3, 5)


@needs_branch
def test_a_small_read_bound_holds_and_writes_complete(served):
    data = _data(4)
    files = _files(data, compressors=[ZstdCodec(level=1)])
    for k, v in files.items():
        served.objects[f"d/{k}"] = v
    store = ObjectStore.from_url(served.url("d"), retry=RETRY, reads_in_flight=3)
    a = zarrfast.open_array(store, mode="r+")
    served.latency = 0.01
    served.peak_in_flight = 0
    with zarrfast.config.set({"threads": 2}):
        np.testing.assert_array_equal(a.oindex[EVERY, :], data[EVERY, :])
        assert 1 < served.peak_in_flight <= 3
        new = data.copy()
        new[100:9000:7, :] += 1
        a[100:9000, :] = new[100:9000, :]  # (partial chunks: reads, then writes)
        np.testing.assert_array_equal(a[...], new)
