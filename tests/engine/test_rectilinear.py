"""Arrays with a rectilinear chunk grid against NumPy: random grids (1-3 dimensions,
random chunk sizes, some overflowing the shape), random basic and orthogonal
selections read and written, sharded rectilinear arrays, resize, fill values of
missing chunks and ``write_empty_chunks``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.engine.rectilinear import project_rectilinear
from zarrfast.engine.selection import normalize_basic
from zarrfast.metadata.chunk_grid import RectilinearChunkGrid
from zarrfast.storage import MemoryStore

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CODECS = {
    "raw": dict(compressors=None),
    "zstd": dict(),
    "transpose": dict(filters=[{"name": "transpose", "configuration": {"order": "F"}}]),
    "big-endian": dict(serializer={"name": "bytes", "configuration": {"endian": "big"}},
                       compressors=None),
}


@st.composite
def grids(draw, max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    shape, sizes = [], []
    for _ in range(ndim):
        dim = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
        shape.append(sum(dim))
        sizes.append(dim)
    return tuple(shape), sizes


def _slice(draw, n):
    start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    step = draw(st.one_of(st.none(), st.sampled_from([1, 1, 2, 3, -1, -2, 5])))
    return slice(start, stop, step)


@st.composite
def basic_selections(draw, shape):
    sel = []
    for n in shape:
        if draw(st.integers(0, 4)) == 0:
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            sel.append(_slice(draw, n))
    return tuple(sel)


@st.composite
def orthogonal_selections(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.integers(0, 3))
        if kind == 0:
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1,
                                              max_size=6))))
        elif kind == 1:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        elif kind == 2:
            sel.append(_slice(draw, n))
        else:
            sel.append(draw(st.integers(-n, n - 1)))
    return tuple(sel)


def _make(shape, sizes, codec="raw", fill=-7, **kw):
    return zarrfast.create_array(MemoryStore(), shape=shape, chunks=sizes, dtype="i4",
                                 fill_value=fill, **CODECS[codec], **kw)


@SETTINGS
@given(data=st.data(), codec=st.sampled_from(sorted(CODECS)))
def test_basic_read_write_against_numpy(data, codec):
    shape, sizes = data.draw(grids())
    a = _make(shape, sizes, codec)
    ref = np.full(shape, -7, dtype="i4")
    np.testing.assert_array_equal(a[...], ref)  # every chunk missing: the fill value
    for _ in range(3):
        sel = data.draw(basic_selections(shape))
        value = np.random.default_rng(0).integers(-100, 100, size=ref[sel].shape,
                                                   dtype="i4")
        a[sel] = value
        ref[sel] = value
        np.testing.assert_array_equal(a[...], ref)
        rsel = data.draw(basic_selections(shape))
        np.testing.assert_array_equal(a[rsel], ref[rsel])
    # every chunk holds its declared shape (the array's sizes sum to the shape)
    store = a.store
    for key in store.list_prefix("c"):
        coords = [int(x) for x in key.split("/")[1:]]
        if codec in ("raw", "big-endian"):
            want = int(np.prod([s[c] for s, c in zip(sizes, coords, strict=True)])) * 4
            assert len(bytes(store.get(key))) == want


@SETTINGS
@given(data=st.data())
def test_orthogonal_read_write_against_numpy(data):
    shape, sizes = data.draw(grids())
    a = _make(shape, sizes, "zstd")
    ref = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    a[...] = ref
    sel = data.draw(orthogonal_selections(shape))
    np.testing.assert_array_equal(a.oindex[sel], ref[np.ix_(*[
        np.arange(n)[s] if not isinstance(s, (int, np.integer)) else [s % n]
        for s, n in zip(sel, shape, strict=True)])].reshape(a.oindex[sel].shape))
    value = -np.arange(a.oindex[sel].size, dtype="i4").reshape(a.oindex[sel].shape)
    a.oindex[sel] = value
    idx = tuple(np.unique(np.arange(n)[s]) if not isinstance(s, (int, np.integer))
                else np.array([s % n]) for s, n in zip(sel, shape, strict=True))
    # (repeated indices: the last write wins in both; compare what was read back)
    got = a[...]
    expect = ref.copy()
    expect[np.ix_(*[np.arange(n)[s] if not isinstance(s, (int, np.integer)) else [s % n]
                    for s, n in zip(sel, shape, strict=True)])] = value.reshape(
        [len(np.arange(n)[s]) if not isinstance(s, (int, np.integer)) else 1
         for s, n in zip(sel, shape, strict=True)])
    np.testing.assert_array_equal(got[np.ix_(*idx)], expect[np.ix_(*idx)])
    # points
    pts = tuple(np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=3, max_size=3)))
                for n in shape)
    np.testing.assert_array_equal(a.vindex[pts], got[pts])


@SETTINGS
@given(data=st.data())
def test_projection_covers_every_element_once(data):
    shape, sizes = data.draw(grids())
    sel = normalize_basic(data.draw(basic_selections(shape)), shape)
    grid = RectilinearChunkGrid(tuple(tuple(s) for s in sizes))
    bounds = grid.boundaries(shape)
    coords, lstart, lcount, ostart, complete, edge, cshape = project_rectilinear(
        bounds, shape, sel)
    hits = np.zeros(sel.full_shape, dtype=np.int64)
    for r in range(coords.shape[0]):
        hits[tuple(slice(o, o + c) for o, c in zip(ostart[r], lcount[r], strict=True))] += 1
        assert (cshape[r] == [s[c] for s, c in zip(sizes, coords[r], strict=True)]).all()
        assert not edge[r]
    assert (hits == 1).all()


@SETTINGS
@given(data=st.data(), codec=st.sampled_from(["raw", "zstd"]))
def test_sharded_rectilinear(data, codec):
    ndim = data.draw(st.integers(1, 3))
    inner = tuple(data.draw(st.integers(1, 3)) for _ in range(ndim))
    shards = [[c * data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(1, 4)))]
              for c in inner]
    shape = tuple(sum(s) for s in shards)
    a = zarrfast.create_array(MemoryStore(), shape=shape, chunks=inner, shards=shards,
                              dtype="i4", fill_value=3, **CODECS[codec])
    ref = np.full(shape, 3, dtype="i4")
    for _ in range(3):
        sel = data.draw(basic_selections(shape))
        value = np.random.default_rng(1).integers(-50, 50, size=ref[sel].shape, dtype="i4")
        a[sel] = value
        ref[sel] = value
        np.testing.assert_array_equal(a[...], ref)
        rsel = data.draw(basic_selections(shape))
        np.testing.assert_array_equal(a[rsel], ref[rsel])
    osel = data.draw(orthogonal_selections(shape))
    np.testing.assert_array_equal(
        a.oindex[osel], zarrfast.create_array(MemoryStore(), data=ref).oindex[osel])


@SETTINGS
@given(data=st.data())
def test_resize_grow_and_shrink(data):
    shape, sizes = data.draw(grids(2))
    a = _make(shape, sizes, "zstd")
    ref = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape) + 1
    a[...] = ref
    new = tuple(data.draw(st.integers(0, n + 8)) for n in shape)
    a.resize(new)
    assert a.shape == new
    # shrinking keeps the sizes; growing past their sum appends one chunk of the rest
    for d, (v, n) in enumerate(zip(a.metadata.chunk_grid.chunk_shapes, new, strict=True)):
        want = tuple(sizes[d]) + ((n - sum(sizes[d]),) if n > sum(sizes[d]) else ())
        assert v == want
    expect = np.full(new, -7, dtype="i4")
    common = tuple(slice(0, min(o, n)) for o, n in zip(shape, new, strict=True))
    expect[common] = ref[common]
    got = a[...]
    # elements past the old shape in chunks that were kept read as zarr-python's do (what
    # the chunk holds); compare the common part and the new chunks beyond the old sums
    np.testing.assert_array_equal(got[common], expect[common])
    beyond = tuple(slice(sum(s), None) for s in sizes)
    for d in range(len(new)):
        region = tuple(beyond[k] if k == d else slice(None) for k in range(len(new)))
        assert (got[region] == -7).all()
    # chunks wholly outside the new shape are gone
    grid_shape = a.metadata.chunk_grid.grid_shape(new)
    for key in a.store.list_prefix("c"):
        coords = [int(x) for x in key.split("/")[1:]]
        assert all(c < g for c, g in zip(coords, grid_shape, strict=True))
    a[...] = 5
    np.testing.assert_array_equal(a[...], np.full(new, 5, dtype="i4"))


def test_overflowing_grid_pads_edge_chunks_with_the_fill_value():
    store = MemoryStore()
    doc = {"zarr_format": 3, "node_type": "array", "shape": [10, 6], "data_type": "uint8",
           "chunk_grid": {"name": "rectilinear", "configuration": {
               "kind": "inline", "chunk_shapes": [[4, 4, 4, 4, 4], 4]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 9,
           "codecs": [{"name": "bytes"}]}
    store.set("zarr.json", json.dumps(doc).encode())
    a = zarrfast.open_array(store)
    assert a.cdata_shape == (3, 2)
    assert a.read_chunk_sizes == ((4, 4, 2), (4, 2))
    ref = np.arange(60, dtype="u1").reshape(10, 6)
    a[...] = ref
    np.testing.assert_array_equal(a[...], ref)
    chunk = np.frombuffer(bytes(store.get("c/2/1")), dtype="u1").reshape(4, 4)
    np.testing.assert_array_equal(chunk[:2, :2], ref[8:, 4:])
    assert (chunk[2:] == 9).all() and (chunk[:, 2:] == 9).all()
    a[9, 5] = 1
    chunk = np.frombuffer(bytes(store.get("c/2/1")), dtype="u1").reshape(4, 4)
    assert chunk[1, 1] == 1 and (chunk[2:] == 9).all()


def test_write_empty_chunks():
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(10, 20), chunks=[[3, 7], [5, 5, 10]], dtype="i2",
                              fill_value=-1)
    a[...] = np.arange(200, dtype="i2").reshape(10, 20)
    a[0:3, 0:5] = -1  # chunk (0, 0) now equals the fill value: deleted
    assert store.get("c/0/0") is None
    assert a.nchunks_initialized == 5
    b = zarrfast.open_array(store, config={"write_empty_chunks": True})
    b[0:3, 5:10] = -1
    assert store.get("c/0/1") is not None
    np.testing.assert_array_equal(a[0:3, 0:10], -1)


def test_blocks_and_info():
    a = zarrfast.create_array(MemoryStore(), shape=(10, 20), chunks=[[3, 7], [5, 5, 10]],
                              dtype="i2")
    ref = np.arange(200, dtype="i2").reshape(10, 20)
    a[...] = ref
    np.testing.assert_array_equal(a.blocks[1, 2], ref[3:, 10:])
    np.testing.assert_array_equal(a.blocks[:, 1:], ref[:, 5:])
    a.blocks[0, 1] = 0
    assert (a[0:3, 5:10] == 0).all()
    assert "Chunk shape        : <variable>" in a.info
    s = zarrfast.create_array(MemoryStore(), shape=(10, 20), shards=[[4, 6], [10, 10]],
                              chunks=(2, 5), dtype="i4")
    assert "Shard shape        : <variable>" in s.info
    s[...] = ref
    np.testing.assert_array_equal(s.blocks[1, 0], ref[4:, :10])
    assert s.nchunks_initialized == 20


def test_sharded_resize_appends_only_whole_inner_chunks():
    a = zarrfast.create_array(MemoryStore(), shape=(10, 20), shards=[[4, 6], [10, 10]],
                              chunks=(2, 5), dtype="i4")
    a[...] = 1
    with pytest.raises(zarrfast.errors.ZarrfastError, match="evenly divide"):
        a.resize((13, 20))
    assert a.shape == (10, 20)
    a.resize((14, 20))
    assert a.metadata.chunk_grid.chunk_shapes[0] == (4, 6, 4)
    a[10:] = 2
    assert (a[10:] == 2).all() and (a[:10] == 1).all()


@pytest.mark.parametrize("sizes", [[1] * 7, [7], [2, 5], [6, 1]])
def test_one_dimension_every_position(sizes):
    a = _make((7,), [sizes], "raw", fill=0)
    ref = np.zeros(7, dtype="i4")
    for i in range(7):
        a[i] = i + 1
        ref[i] = i + 1
        assert a[i] == i + 1
    np.testing.assert_array_equal(a[::-1], ref[::-1])


def test_from_array_and_like_keep_the_grid():
    a = zarrfast.create_array(MemoryStore(), shape=(10, 20), chunks=[[3, 7], [5, 5, 10]],
                              dtype="i2")
    a[...] = np.arange(200, dtype="i2").reshape(10, 20)
    b = zarrfast.from_array(MemoryStore(), data=a)
    assert b.metadata.chunk_grid == a.metadata.chunk_grid
    np.testing.assert_array_equal(b[...], a[...])
    assert zarrfast.zeros_like(a).metadata.chunk_grid == a.metadata.chunk_grid
    s = zarrfast.create_array(MemoryStore(), shape=(10, 20), shards=[[4, 6], [10, 10]],
                              chunks=(2, 5), dtype="i4")
    s[...] = 3
    c = zarrfast.from_array(MemoryStore(), data=s)
    assert c.metadata.chunk_grid == s.metadata.chunk_grid and c.chunks == (2, 5)
    assert (c[...] == 3).all()
