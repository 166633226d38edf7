"""``Array.get_many``: many selections planned as one read (zarrfast.engine.many)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import BoundsCheckError, IndexingError
from zarrfast.storage import LocalStore, LoggingStore, MemoryStore

DATA = np.arange(40 * 64 * 48, dtype="uint16").reshape(40, 64, 48)
LAYOUTS = {
    "zstd": dict(chunks=(4, 16, 16)),
    "raw": dict(chunks=(8, 32, 24), compressors=None),
    "sharded": dict(shards=(8, 32, 48), chunks=(4, 16, 16)),
    "sharded-raw": dict(shards=(8, 32, 48), chunks=(4, 16, 16), compressors=None),
}
SELECTIONS = [
    (slice(0, 1), slice(3, 40), slice(5, 30)),
    (slice(0, 1), slice(10, 47), slice(0, 25)),  # shares chunks with the first
    (5, slice(None), slice(None)),
    (slice(None, None, -3), slice(1, 60, 7), 3),
    (slice(30, 31), slice(20, 57), slice(20, 45)),
    (0, 0, 0),
    (slice(2, 2), slice(None), slice(None)),  # empty
]


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    return MemoryStore() if request.param == "memory" else LocalStore(tmp_path / "a.zarr")


@pytest.fixture(params=sorted(LAYOUTS))
def array(request, store):
    a = zarrfast.create_array(store=store, shape=DATA.shape, dtype=DATA.dtype,
                              **LAYOUTS[request.param])
    a[:] = DATA
    return a


def test_results_equal_numpy(array):
    got = array.get_many(SELECTIONS)
    assert len(got) == len(SELECTIONS)
    for sel, result in zip(SELECTIONS, got, strict=True):
        assert result.shape == DATA[sel].shape
        np.testing.assert_array_equal(result, DATA[sel])


def test_random_boxes_equal_numpy(array):
    rng = np.random.default_rng(1)
    for _ in range(10):
        sels = []
        for _ in range(int(rng.integers(2, 12))):
            box = []
            for n in DATA.shape:
                lo = int(rng.integers(0, n))
                hi = int(rng.integers(lo + 1, n + 1))
                box.append(slice(lo, hi))
            sels.append(tuple(box))
        for sel, result in zip(sels, array.get_many(sels), strict=True):
            np.testing.assert_array_equal(result, DATA[sel])


def test_stacked_out_is_filled_in_place(array):
    sels = [(slice(i, i + 1), slice(i, i + 20), slice(2 * i, 2 * i + 20)) for i in range(9)]
    out = np.zeros((9, 1, 20, 20), dtype=DATA.dtype)
    got = array.get_many(sels, out=out)
    np.testing.assert_array_equal(out, np.stack([DATA[s] for s in sels]))
    assert all(np.shares_memory(r, out) for r in got)


def test_list_out_is_returned(array):
    outs = [np.zeros(DATA[s].shape, dtype=DATA.dtype) for s in SELECTIONS]
    got = array.get_many(SELECTIONS, out=outs)
    assert all(r is o for r, o in zip(got, outs, strict=True))
    for sel, o in zip(SELECTIONS, outs, strict=True):
        np.testing.assert_array_equal(o, DATA[sel])


@pytest.mark.parametrize("layout", ["zstd", "sharded"])
def test_each_shared_chunk_is_read_once(layout):
    """Three boxes in chunk row 0 (two overlapping): the chunks they share are fetched
    once, where reading them one by one fetches them once per box."""
    backing = MemoryStore()
    a = zarrfast.create_array(store=backing, shape=DATA.shape, dtype=DATA.dtype,
                              **LAYOUTS[layout])
    a[:] = DATA
    logged = LoggingStore(backing)
    b = zarrfast.open_array(logged, mode="r")
    sels = [(slice(0, 1), slice(0, 20), slice(0, 20)), (slice(0, 1), slice(10, 30), slice(10, 30)),
            (slice(2, 3), slice(0, 20), slice(0, 20))]
    logged.reset()
    got = b.get_many(sels)
    together = sum(logged.counts().values())
    logged.reset()
    for s in sels:
        b[s]
    apart = sum(logged.counts().values())
    for s, r in zip(sels, got, strict=True):
        np.testing.assert_array_equal(r, DATA[s])
    if layout == "zstd":
        assert together == 4  # the 4 chunks (0, 0..1, 0..1), each once
        assert apart == 12
    else:
        assert together < apart


def test_kinds():
    a = zarrfast.array(DATA, store={}, chunks=(4, 16, 16))
    got = a.get_many([(slice(0, 3), [1, 5, 2], slice(0, 4)), (1, slice(0, 2), 3)],
                     kind="orthogonal")
    np.testing.assert_array_equal(got[0], DATA[0:3][:, [1, 5, 2]][:, :, 0:4])
    np.testing.assert_array_equal(got[1], DATA[1, 0:2, 3])
    got = a.get_many([(0, 1, 2), (slice(1, 3), 0, -1)], kind="block")
    np.testing.assert_array_equal(got[0], DATA[0:4, 16:32, 32:48])
    np.testing.assert_array_equal(got[1], DATA[4:12, 0:16, 32:48])
    mask = np.zeros(DATA.shape, dtype=bool)
    mask[3, 4, 5] = mask[30, 2, 1] = True
    got = a.get_many([(slice(0, 2), 1, 2), mask])
    np.testing.assert_array_equal(got[0], DATA[0:2, 1, 2])
    np.testing.assert_array_equal(got[1], DATA[mask])


def test_zero_dimensional_and_f_order():
    z = zarrfast.array(np.array(7, dtype="int32"), store={})
    assert z.get_many([(), ...]) == [7, 7]
    f = zarrfast.create_array(store={}, shape=(6, 5), chunks=(2, 2), dtype="int32",
                              config={"order": "F"})
    f[:] = np.arange(30).reshape(6, 5)
    got = f.get_many([(slice(0, 4), slice(1, 5)), (slice(1, 3), slice(0, 2))])
    assert got[0].flags.f_contiguous
    np.testing.assert_array_equal(got[0], np.arange(30).reshape(6, 5)[0:4, 1:5])


def test_async_twin():
    a = zarrfast.array(DATA, store={}, chunks=(4, 16, 16))
    got = asyncio.run(a.async_array.get_many(SELECTIONS[:3]))
    for sel, result in zip(SELECTIONS[:3], got, strict=True):
        np.testing.assert_array_equal(result, DATA[sel])


def test_errors_name_the_selection():
    a = zarrfast.array(DATA, store={}, chunks=(4, 16, 16), name="x")
    with pytest.raises(BoundsCheckError, match=r"array '/x': selection 1 .*out of bounds"):
        a.get_many([(0, 0, 0), (40, 0, 0)])
    with pytest.raises(IndexingError, match="kind must be"):
        a.get_many([(0,)], kind="numpy")
    with pytest.raises(IndexingError, match="sequence of selections"):
        a.get_many(5)
    with pytest.raises(IndexingError, match=r"out of shape \(2, 3, 1\) .* need an out of shape \(2, 3\)"):
        a.get_many([(0, 0, slice(0, 3)), (1, 1, slice(0, 3))], out=np.zeros((2, 3, 1)))
    with pytest.raises(IndexingError, match=r"a list of 2 arrays"):
        a.get_many([(0, 0, slice(0, 3)), (1, 1, slice(0, 4))], out=np.zeros((2, 3)))
    with pytest.raises(IndexingError, match=r"out\[1\] must be"):
        a.get_many([(0, 0, slice(0, 3)), (1, 1, slice(0, 3))],
                   out=[np.zeros(3, "uint16"), np.zeros(4, "uint16")])


def test_missing_chunks_read_as_fill_or_refused():
    a = zarrfast.create_array(store={}, shape=(8, 8), chunks=(2, 2), dtype="int8",
                              fill_value=-1)
    a[0:2, 0:2] = 5
    got = a.get_many([(slice(0, 3), slice(0, 3)), (slice(1, 4), slice(1, 4))])
    np.testing.assert_array_equal(got[0], [[5, 5, -1], [5, 5, -1], [-1, -1, -1]])
    np.testing.assert_array_equal(got[1], [[5, -1, -1], [-1, -1, -1], [-1, -1, -1]])
    strict = zarrfast.open_array(a.store, mode="r", config={"read_missing_chunks": False})
    with pytest.raises(zarrfast.errors.ChunkNotFoundError):
        strict.get_many([(slice(0, 2), slice(0, 2)), (slice(0, 3), slice(0, 3))])


@pytest.mark.parametrize("damage", ["garbage", "past-the-end", "huge"])
def test_a_bad_inner_chunk_of_a_partial_shard_is_refused_by_name(tmp_path, damage):
    """Partial shards of local files are read by one kernel call (read_partial_files);
    an inner chunk it cannot take goes the general way, which says what is wrong: the
    shard, the inner chunk, and the selection that read it."""
    import struct

    from zarrfast.errors import ZarrfastError

    a = zarrfast.create_array(LocalStore(tmp_path / "s.zarr"), shape=(16, 16), chunks=(4, 4),
                              shards=(8, 8), dtype="i4")
    a[:] = np.arange(256, dtype="i4").reshape(16, 16)
    path = tmp_path / "s.zarr" / "c" / "0" / "0"
    raw = bytearray(path.read_bytes())
    n_inner = 4
    index = raw[-(16 * n_inner + 4):-4]  # (offset, nbytes) per inner chunk, then crc32c
    offset, nbytes = struct.unpack_from("<QQ", index, 16 * 1)  # inner chunk (0, 1)
    if damage == "garbage":
        raw[offset:offset + nbytes] = b"\xff" * nbytes
        expected = r"(?s)selection 0 .*c/0/0"
    else:
        # the index's entry of inner chunk (0, 1) past the end of the shard, or larger
        # than any inner chunk can be (its crc32c no longer matches: zarrfast says so)
        struct.pack_into("<QQ", index, 16, *((offset, len(raw) * 4) if damage == "past-the-end"
                                             else (offset, 2**40)))
        raw[-(16 * n_inner + 4):-4] = index
        expected = r"(?s)selection 0 .*c/0/0"
    path.write_bytes(bytes(raw))
    b = zarrfast.open_array(LocalStore(tmp_path / "s.zarr"), mode="r")
    with pytest.raises(ZarrfastError, match=expected):
        b.get_many([(slice(0, 3), slice(4, 7)), (slice(9, 12), slice(1, 5))])
