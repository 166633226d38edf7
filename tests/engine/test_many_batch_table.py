"""The batch table of ``Array.get_many`` (zarrfast.engine.many): the ways a batch of a
data loader's tiles is planned without a Python step per selection -- plain selections
normalized by one kernel call each (no separate "is it basic?"), boxes of one chunk
each projected without the walk over a box's chunks, one group of results when every
selection has one shape, and the chunks several selections share told apart by one
sort -- must give what NumPy gives, for every mix that leaves those ways too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import kernels
from zarrfast.engine.many import project_boxes
from zarrfast.errors import BoundsCheckError, IndexingError, ZarrfastError
from zarrfast.kernels import reference
from zarrfast.storage import LocalStore, LoggingStore, MemoryStore

#: a loader's tiles array, small: (N, 8, 8) in one-sample inner chunks (1, 8, 8), shards
#: of four samples; a plain one of the same chunks
TILES = np.arange(24 * 8 * 8, dtype="uint16").reshape(24, 8, 8)
LAYOUTS = {"sharded": dict(chunks=(1, 8, 8), shards=(4, 8, 8)), "plain": dict(chunks=(1, 8, 8))}


@st.composite
def _boxes_in_one_chunk(draw):
    """Step-1 boxes, each inside one chunk (``project_boxes``' one-row-per-box way), and
    sometimes one box across chunks (the general way)."""
    ndim = draw(st.integers(1, 4))
    chunks = [draw(st.integers(1, 6)) for _ in range(ndim)]
    grid = [draw(st.integers(1, 4)) for _ in range(ndim)]
    shape = [c * g for c, g in zip(chunks, grid, strict=True)]
    starts, counts = [], []
    for _ in range(draw(st.integers(1, 8))):
        start, count = [], []
        for c, g in zip(chunks, grid, strict=True):
            lo = draw(st.integers(0, g - 1)) * c + draw(st.integers(0, c - 1))
            start.append(lo)
            count.append(draw(st.integers(1, c - lo % c)))
        starts.append(start)
        counts.append(count)
    if draw(st.booleans()):  # (one box of the whole array: across chunks when any has 2)
        starts.append([0] * ndim)
        counts.append(shape)
    return (np.array(shape, dtype=np.int64), np.array(chunks, dtype=np.int64),
            np.array(starts, dtype=np.int64), np.array(counts, dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(_boxes_in_one_chunk())
def test_boxes_of_one_chunk_each_project_as_each_box_alone(case):
    shape, chunks, starts, counts = case
    nrows, *tables = project_boxes(chunks, starts, counts)
    for project in (kernels.project, reference.project):
        each = [project(shape, chunks, s, np.ones_like(s), c)
                for s, c in zip(starts, counts, strict=True)]
        assert nrows.tolist() == [len(e[0]) for e in each]
        for j, table in enumerate(tables):
            want = np.concatenate([e[j] for e in each])
            assert table.dtype == np.int64 and table.shape == want.shape
            np.testing.assert_array_equal(table, want, err_msg=f"table {j}")
    kept = counts.copy()
    tables[2][:] = -1  # (the tables are the caller's own, not views of its inputs)
    np.testing.assert_array_equal(counts, kept)


@pytest.fixture(params=sorted(LAYOUTS))
def tiles(request, tmp_path):
    a = zarrfast.create_array(LocalStore(tmp_path / "t.zarr"), shape=TILES.shape,
                              dtype=TILES.dtype, fill_value=7, **LAYOUTS[request.param])
    a[:18] = TILES[:18]  # (samples 18..23 never written: their chunks are missing)
    want = TILES.copy()
    want[18:] = 7
    return a, want


def test_a_batch_of_tiles_equals_numpy(tiles):
    """One shape (one group), distinct chunks (no shared read), repeated and negative
    indices, tiles of missing chunks (the fill value)."""
    a, want = tiles
    rng = np.random.default_rng(3)
    firsts = rng.integers(0, 24, 40).tolist()
    sels = [(slice(i, i + 1), slice(0, 8), slice(0, 8)) for i in firsts]
    sels += [(slice(-1, None),), (slice(-5, -4), slice(None), slice(-8, None))]
    got = a.get_many(sels)
    for s, r in zip(sels, got, strict=True):
        np.testing.assert_array_equal(r, want[s])
    assert len(set(firsts)) < len(firsts)  # (some tiles twice: their chunks shared)
    out = np.zeros((len(sels), 1, 8, 8), dtype=TILES.dtype)
    assert all(np.shares_memory(r, out) for r in a.get_many(sels, out=out))
    np.testing.assert_array_equal(out, np.stack([want[s] for s in sels]))


def test_tiles_of_other_shapes_steps_and_kinds_of_index(tiles):
    """Selections that leave the plain ways: NumPy integers and Ellipsis (normalized
    the general way), ints that drop a dimension, steps, heights that differ (one
    group, its results one after another), tails that differ (several groups)."""
    a, want = tiles
    sels = [(np.int64(3), slice(None), slice(None)), (Ellipsis, slice(2, 6)),
            (slice(2, 5), slice(0, 8)), (slice(9, 10),), (-2, 0, slice(None, None, -3)),
            (slice(1, 23, 4), slice(1, 8, 2), 5), (slice(6, 8), slice(0, 4), slice(4, 8)),
            (np.int32(-24),), (slice(3, 3),)]
    got = a.get_many(sels)
    for s, r in zip(sels, got, strict=True):
        assert r.shape == want[s].shape
        np.testing.assert_array_equal(r, want[s])


def test_errors_name_the_selection_plain_or_not(tiles):
    a, _ = tiles
    ok = (slice(0, 1),)
    with pytest.raises(BoundsCheckError, match=r"selection 2 .*out of bounds"):
        a.get_many([ok, ok, (24, 0, 0)])
    with pytest.raises(BoundsCheckError, match=r"selection 1 .*out of bounds"):
        a.get_many([ok, (np.int64(-25),)])
    with pytest.raises(IndexingError, match=r"selection 1 .*not an integer, slice"):
        a.get_many([ok, (slice(0, 1), 1.5)])
    with pytest.raises(IndexingError, match=r"selection 0 .*too many indices"):
        a.get_many([(0, 0, 0, 0), ok])


def test_a_bad_tile_is_refused_naming_its_shard(tmp_path):
    a = zarrfast.create_array(LocalStore(tmp_path / "t.zarr"), shape=TILES.shape,
                              dtype=TILES.dtype, **LAYOUTS["sharded"])
    a[:] = TILES
    shard = tmp_path / "t.zarr" / "c" / "1" / "0" / "0"
    raw = bytearray(shard.read_bytes())
    raw[:16] = b"\xff" * 16  # (the first inner chunk's frame: sample 4)
    shard.write_bytes(bytes(raw))
    b = zarrfast.open_array(LocalStore(tmp_path / "t.zarr"), mode="r")
    with pytest.raises(ZarrfastError, match=r"(?s)c/1/0/0"):
        b.get_many([(slice(0, 1),), (slice(4, 5),), (slice(9, 10),)])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_same_tiles_of_arrays_of_one_group(layout):
    """Arrays of one store and layout are one batch: a chunk is its array's and its
    place in the grid, so the same tile of two arrays is two chunks (each array's own
    values), and a tile read twice of one array is one chunk, fetched once."""
    backing = MemoryStore()
    root = zarrfast.open_group(backing, mode="w")
    for k in range(3):
        v = root.create_array(f"v{k}", shape=TILES.shape, dtype=TILES.dtype,
                              **LAYOUTS[layout])
        v[:] = TILES + k
    logged = LoggingStore(backing)
    group = zarrfast.open_group(logged, mode="r")
    tile = (slice(5, 6),)
    requests = [(group[f"v{k}"], tile) for k in range(3)] + [(group["v1"], tile)]
    logged.reset()
    got = zarrfast.get_many(requests)
    for (_, s), r, k in zip(requests, got, [0, 1, 2, 1], strict=True):
        np.testing.assert_array_equal(r, TILES[s] + k)
    if layout == "plain":
        assert logged.counts() == {"get": 3}  # (v1's chunk once for both of its tiles)
