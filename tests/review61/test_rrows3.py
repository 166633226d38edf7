"""Remote gathers of rows over HTTP (``oindex``), from the review of h61/rrows3.

That branch (at 024d404) measures the CPU of a remote gather of rows of zstd chunks (the
loader's 1,024 sorted rows, ~435 chunk GETs: ``benchmarks/bench_loader_remote_cpu.py``,
``bench_obstore_fetch_paths.py``) and adds tests of ``ObjectStore.get_many``; it changes
no library code.  These guard main's remote gathers (prefixes of chunks decoded where
they lie) against a later change of them.

Guards (pass on the base and on the branch), over a real HTTP server on loopback
(``_helpers.fault_http``), at 1 and 2 threads: gathers whose rows need a short prefix
of each chunk, its middle, its last row or all of it -- of chunks that compress well in
their first half and not at all in their second (or the reverse: a prefix of the stored
bytes proportional to the rows needed is then too short, or far too long), with and
without zstd content checksums, edge chunks, missing chunks, sorted, unsorted,
repeated and negative rows -- equal NumPy; a server that ignores ``Range`` (whole
objects), answers one request short (a retry), or sends junk past a whole answer still
gives NumPy's values or an error naming the key, never other values; a chunk cut short
or followed by junk bytes is refused naming its key even when the rows need only its
first bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError, ZarrfastError
from zarrfast.storage import ObjectStore, RetryPolicy

from _helpers.files import written_files

pytest.importorskip("obstore")

# chunks of (1024, 128) uint32: 512 KiB decoded, four zstd blocks of 128 KiB (a prefix
# of a block or two pays: the gathers decode prefixes)
ROWS, COLS = 1024, 128
N = 10
SHAPE = (N * ROWS - 37, COLS)  # (the last chunk at the edge)
FILL = 9
RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)


def _data(kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 2**32, SHAPE, dtype=np.uint32)
    smooth = (np.arange(SHAPE[0])[:, None] // 8 + np.zeros(COLS, dtype=np.int64)
              ).astype(np.uint32)
    rows_in_chunk = np.arange(SHAPE[0]) % ROWS
    if kind == "noise":
        return noise
    if kind == "smooth_then_noise":  # (the first half of each chunk compresses well)
        return np.where((rows_in_chunk < ROWS // 2)[:, None], smooth, noise)
    if kind == "noise_then_smooth":
        return np.where((rows_in_chunk < ROWS // 2)[:, None], noise, smooth)
    return smooth


def _files(data, **kw) -> dict[str, bytes]:
    return written_files(data, chunks=(ROWS, COLS), fill_value=FILL, **kw)


def _open(server, files, prefix="d"):
    for k, v in files.items():
        server.objects[f"{prefix}/{k}"] = v
    store = ObjectStore.from_url(server.url(prefix), retry=RETRY).with_read_only()
    return zarrfast.open_array(store, mode="r")


def _row_sets(rng):
    first = np.arange(0, SHAPE[0], ROWS)  # a chunk's first row: a short prefix
    yield "first", first
    yield "quarter", first + ROWS // 4 - 1  # (the end of the first block)
    yield "middle", first + ROWS // 2 + 3
    yield "last", np.minimum(first + ROWS - 1, SHAPE[0] - 1)  # the whole chunk
    yield "sorted", np.sort(rng.choice(SHAPE[0], 40, replace=False))
    yield "few", np.sort(rng.choice(SHAPE[0] // 5, 30, replace=False) * 5 % SHAPE[0])
    yield "mixed", np.concatenate([rng.integers(-SHAPE[0], SHAPE[0], 30), [0, 0, -1, 5]])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("kind", ["smooth_then_noise", "noise_then_smooth", "noise",
                                  "smooth"])
def test_gathers_of_rows_are_numpys(served, threads, checksum, kind):
    data = _data(kind, 1)
    files = _files(data, compressors=[ZstdCodec(level=1, checksum=checksum)])
    want = data.copy()
    for i in (0, 6, N - 1):
        del files[f"c/{i}/0"]
        want[i * ROWS:(i + 1) * ROWS] = FILL
    a = _open(served, files)
    rng = np.random.default_rng(2)
    with zarrfast.config.set({"threads": threads}):
        for name, rows in _row_sets(rng):
            for cols in (slice(None), slice(3, 40), np.array([0, COLS - 1, 7, 7])):
                np.testing.assert_array_equal(a.oindex[rows, cols], want[rows][:, cols],
                                              err_msg=f"{name} {cols!r}")


@pytest.mark.parametrize("fault", ["norange", "short", "oversized"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_misbehaving_server_gives_numpys_values_or_names_the_key(served, fault, threads):
    data = _data("smooth_then_noise", 3)
    a = _open(served, _files(data, compressors=[ZstdCodec(level=1)]))
    first = np.arange(0, SHAPE[0], ROWS)
    with zarrfast.config.set({"threads": threads}):
        for rows in (first, first + 5):
            served.reset()
            served.fail(fault, times=4)
            try:
                got = a.oindex[rows, :]
            except ZarrfastError as e:
                assert "c/" in str(e), str(e)
                continue
            np.testing.assert_array_equal(got, data[rows, :])


@pytest.mark.parametrize("damage", ["cut", "junk"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_damaged_chunk_is_refused_even_for_its_first_rows(served, damage, threads):
    data = _data("smooth_then_noise", 4)
    files = _files(data, compressors=[ZstdCodec(level=1)])
    key = "c/7/0"
    if damage == "cut":  # (its second half, the noise, cut off)
        files[key] = files[key][:len(files[key]) * 2 // 3]
    else:
        files[key] = files[key] + b"junk" * 5
    a = _open(served, files)
    first = np.arange(0, SHAPE[0], ROWS)  # (row 0 of every chunk: a short prefix)
    with zarrfast.config.set({"threads": threads}):
        with pytest.raises(ZarrfastError, match=key) as got:
            a.oindex[first, :]
        assert isinstance(got.value, ChunkDecodeError)
        ok = first[first // ROWS != 7]
        np.testing.assert_array_equal(a.oindex[ok, :], data[ok, :])
