"""Gathers (``oindex``, ``vindex``) of zstd chunks of local files, warm, from the review
of h60/warm60.

That branch reads a gather's line of chunks without waves (``fancy._stream_prefixes``):
the pool's threads and the calling thread take parts of a few chunks from one queue,
decode each part up to the rows it needs into a buffer of their own and gather its
elements into place at once, several threads writing ``out`` together.

Guards (pass on main and on the branch), at 1 and 2 threads: gathers along the first
and the second dimension -- sorted, unsorted, repeated and negative indices, slices
(negative steps too) and index arrays for the other dimension, lines of many chunks
(many parts) -- in C and F order, little- and big-endian, zstd with and without
content checksums, edge chunks and missing chunks (the fill value) equal NumPy; an
array that refuses missing chunks names the missing one; a chunk cut short after its
first zstd block, or followed by other bytes, is refused naming its key (decoding
only up to the rows needed must not skip the checks a whole decode makes).
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ZstdCodec
from zarrfast.errors import ChunkDecodeError, ZarrfastError
from zarrfast.storage import LocalStore

#: chunks of (1024, 128) uint16: 256 KiB decoded, two zstd blocks; 21 x 2 chunks, the
#: last ones cut by the array's edge
ROWS, COLS = 1024, 128
SHAPE = (20 * ROWS + 300, COLS + 40)
FILL = 7


def _make(path, data, *, order="C", endian="little", checksum=False, gone=()):
    kw: dict = {"serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    a = zarrfast.create_array(LocalStore(path), shape=data.shape, chunks=(ROWS, COLS),
                              dtype=data.dtype, fill_value=FILL,
                              compressors=[ZstdCodec(level=1, checksum=checksum)], **kw)
    a[...] = data
    want = data.copy()
    for i, j in gone:
        (path / "c" / str(i) / str(j)).unlink()
        want[i * ROWS:(i + 1) * ROWS, j * COLS:(j + 1) * COLS] = FILL
    return want


def _data(seed=1):
    # (small values: chunks compress, each a frame of two blocks)
    return np.random.default_rng(seed).integers(0, 3000, SHAPE, dtype=np.uint16)


def _rows(rng, first_part=True):
    """Rows of most chunks along the first dimension: in their first quarter (a gather
    that decodes part of each chunk), or anywhere."""
    n_chunks = -(-SHAPE[0] // ROWS)
    rows = []
    for c in range(n_chunks):
        hi = min(ROWS, SHAPE[0] - c * ROWS)
        top = min(hi, ROWS // 4) if first_part else hi
        rows += (c * ROWS + rng.integers(0, top, 3)).tolist()
    return np.array(rows)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("checksum", [False, True])
def test_gathers_are_numpys(tmp_path, threads, order, endian, checksum):
    data = _data()
    want = _make(tmp_path / "a.zarr", data, order=order, endian=endian, checksum=checksum,
                 gone=[(3, 0), (7, 1), (20, 0)])
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    rng = np.random.default_rng(5)
    sorted_rows = np.unique(_rows(rng))
    mixed = _rows(rng, first_part=False)
    mixed = np.concatenate([mixed[::-1], mixed[:9], [-1, -ROWS - 5, 0, 0]])
    cols = np.array([5, -1, 0, COLS + 3, 5, 130])
    with zarrfast.config.set({"threads": threads}):
        for rows in (sorted_rows, mixed):
            for other in (slice(None), slice(3, 150), slice(None, None, -3), cols):
                got = a.oindex[rows, other]
                np.testing.assert_array_equal(got, want[rows][:, other],
                                              err_msg=f"{other!r}")
            # along the second dimension: a slice of rows, an index array of columns
            np.testing.assert_array_equal(a.oindex[ROWS - 3:5 * ROWS + 2, cols],
                                          want[ROWS - 3:5 * ROWS + 2][:, cols])
            pts = rows[:40], (np.arange(40) * 37) % SHAPE[1]
            np.testing.assert_array_equal(a.vindex[pts], want[pts])
        np.testing.assert_array_equal(a[sorted_rows], want[sorted_rows])


def test_a_missing_chunk_is_named_by_an_array_refusing_them(tmp_path):
    data = _data(2)
    _make(tmp_path / "a.zarr", data, gone=[(9, 0)])
    with zarrfast.config.set({"array.read_missing_chunks": False}):
        a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    ok = np.unique(_rows(np.random.default_rng(1)))
    ok = ok[(ok < 9 * ROWS) | (ok >= 10 * ROWS)]
    np.testing.assert_array_equal(a.oindex[ok, :], data[ok, :])
    for threads in (1, 2):
        with zarrfast.config.set({"threads": threads}), \
                pytest.raises(ZarrfastError, match="c/9/0"):
            a.oindex[np.sort(np.concatenate([ok, [9 * ROWS + 3]])), :]


@pytest.mark.parametrize("damage", ["cut", "junk"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_damaged_chunk_is_refused_naming_its_key(tmp_path, damage, threads):
    data = _data(3)
    _make(tmp_path / "a.zarr", data)
    f = tmp_path / "a.zarr" / "c" / "6" / "1"
    whole = f.read_bytes()
    # (cut: its header and first block kept, the rows of its first quarter all there)
    f.write_bytes(whole[:len(whole) * 3 // 4] if damage == "cut" else whole + b"junk" * 5)
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    rows = np.unique(_rows(np.random.default_rng(4)))
    with zarrfast.config.set({"threads": threads}):
        with pytest.raises(ChunkDecodeError, match="c/6/1"):
            a.oindex[rows, :]
        with pytest.raises(ChunkDecodeError, match="c/6/1"):
            a.vindex[rows, np.full(len(rows), COLS + 1)]
        np.testing.assert_array_equal(a.oindex[rows, :COLS], data[rows, :COLS])
