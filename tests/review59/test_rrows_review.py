"""Gathers (``oindex``, ``vindex``) of a remote store over HTTP, from the review of
h59/rrows.

That branch decodes the zstd chunks a remote gather fetches only up to the rows it
needs (``fancy._fetch_prefixes``, ``zstd_prefix.decode_prefix_blobs``).

Finding: a chunk cut short after its first zstd block (a partial upload, a file served
while it is written), or one with bytes after its frame, was read by such a gather as
if whole -- its rows as data, no error -- where main's remote gather (a whole decode)
and every basic read refuse it with ``ChunkDecodeError`` naming its key.  The prefix
decoder stops where the rows it needs end, so it never sees that the frame is cut short
or followed by other bytes: a fast path skipping the check the general path makes.
``test_a_damaged_chunk_is_refused_by_remote_gathers`` passes on main and with
/work/data/review59/rrows-fix.diff (a value that is not exactly one whole frame, by
``ZSTD_findFrameCompressedSize`` -- its block headers walked, nothing decoded -- is
left to the whole decode), fails on h59/rrows 39f34ab and 7317b79.

Guards (pass on main and on the branch): remote gathers of zstd chunks (with and
without content checksums), C and F order, little- and big-endian, missing chunks (the
fill value), edge chunks, negative / repeated / unsorted indices equal NumPy; an array
that refuses missing chunks names the missing chunk.
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

#: a chunk: (1024, 128) uint16, 256 KiB decoded (two zstd blocks of 128 KiB)
ROWS, COLS = 1024, 128
RETRY = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02)




def _files(data, chunks, fill=0, **kw) -> dict[str, bytes]:
    return written_files(data, chunks=chunks, fill_value=fill, **kw)


def _open(server, files, **open_kw):
    for k, v in files.items():
        server.objects[f"d/{k}"] = v
    store = ObjectStore.from_url(server.url("d"), retry=RETRY).with_read_only()
    a = zarrfast.open_array(store, mode="r", **open_kw)
    assert a.store.capabilities.batched_gets  # (a store of concurrent requests)
    return a


@pytest.mark.parametrize("damage", ["cut", "junk"])
def test_a_damaged_chunk_is_refused_by_remote_gathers(served, damage):
    data = np.random.default_rng(1).integers(0, 3000, (3 * ROWS, COLS), dtype=np.uint16)
    files = _files(data, (ROWS, COLS), compressors=[ZstdCodec(level=1)])
    whole = files["c/1/0"]
    if damage == "cut":
        # (its header and first block kept, its second block cut off: the rows a
        # gather of the first rows of each chunk needs are all there)
        files["c/1/0"] = whole[:len(whole) * 3 // 4]
    else:  # (bytes after the frame: numcodecs' Zstd refuses the value)
        files["c/1/0"] = whole + b"junk" * 5
    a = _open(served, files)
    with pytest.raises(ChunkDecodeError, match="c/1/0"):
        a[ROWS:ROWS + 6]  # (a basic read: main's and the branch's refusal)
    for rows in ([0, ROWS + 3, ROWS + 5, 2 * ROWS], [ROWS + 1020, 5]):
        idx = np.array(rows)
        with pytest.raises(ChunkDecodeError, match="c/1/0"):
            a.oindex[idx, :]
        with pytest.raises(ChunkDecodeError, match="c/1/0"):
            a.vindex[idx, idx % COLS]
    # the other chunks read
    ok = np.array([1, 2 * ROWS + 7, 5])
    np.testing.assert_array_equal(a.oindex[ok, :], data[ok, :])


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_remote_gathers_are_numpys(served, checksum, order, endian):
    shape = (3 * ROWS + 300, COLS + 40)  # (edge chunks along both dimensions)
    data = np.random.default_rng(5).integers(0, 60000, shape, dtype=np.uint16)
    kw: dict = {"compressors": [ZstdCodec(level=1, checksum=checksum)],
                "serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    files = _files(data, (ROWS, COLS), fill=7, **kw)
    del files["c/1/0"]  # (a chunk missing: the fill value)
    want = data.copy()
    want[ROWS:2 * ROWS, :COLS] = 7
    a = _open(served, files)
    rows = np.array([3, -1, ROWS + 2, 17, 17, 2 * ROWS + 1000, -ROWS - 300, 0])
    cols = np.array([5, -1, 0, COLS + 3, 5])
    np.testing.assert_array_equal(a.oindex[rows, :], want[rows, :])
    np.testing.assert_array_equal(a.oindex[rows, cols], want[np.ix_(rows, cols)])
    np.testing.assert_array_equal(a.oindex[np.sort(rows), 3:40], want[np.sort(rows), 3:40])
    np.testing.assert_array_equal(a.vindex[rows, rows % shape[1]],
                                  want[rows, rows % shape[1]])
    mask = np.zeros(shape[0], dtype=bool)
    mask[[4, ROWS + 9, 3 * ROWS + 299]] = True
    np.testing.assert_array_equal(a.oindex[mask, ::-7], want[mask, ::-7])


def test_a_remote_gather_refusing_missing_chunks_names_the_missing_one(served):
    data = np.random.default_rng(6).integers(0, 3000, (3 * ROWS, COLS), dtype=np.uint16)
    files = _files(data, (ROWS, COLS), compressors=[ZstdCodec(level=1)])
    del files["c/2/0"]
    with zarrfast.config.set({"array.read_missing_chunks": False}):
        a = _open(served, files)
    np.testing.assert_array_equal(a.oindex[[3, ROWS + 4], :], data[[3, ROWS + 4], :])
    with pytest.raises(ZarrfastError, match="c/2/0"):
        a.oindex[[3, 2 * ROWS + 4], :]
    with pytest.raises(ZarrfastError, match="c/2/0"):
        a.vindex[[3, 2 * ROWS + 4], [0, 1]]
