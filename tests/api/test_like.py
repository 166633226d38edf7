"""The ``*_like`` family (``zarrfast.zeros_like``... ``open_like`` and the ``Group``
methods): the codecs are copied as zarr-python's ``_like_args`` copies them (v3: the codec
list; v2: compressor and filters), with the chunk grid they go with, so a sharded or a
rectilinear-sharded model gives an array laid out the same; the caller's keywords win."""

import json

import numcodecs
import numpy as np
import pytest
import zarr

import zarrfast
from zarrfast.codecs import GzipCodec

LIKE = ["empty_like", "zeros_like", "ones_like", "full_like"]


def _doc(store, key="zarr.json"):
    """A stored metadata document of zarrfast's (a dict) or zarr-python's store."""
    if isinstance(store, zarr.storage.MemoryStore):
        raw = store._store_dict[key]
    else:
        raw = store[key] if isinstance(store, dict) else store.get(key)
    return json.loads(raw.to_bytes() if hasattr(raw, "to_bytes") else bytes(raw))


def _gzip(level):
    """A gzip codec both libraries take."""
    return {"name": "gzip", "configuration": {"level": level}}


def _both(**kwargs):
    """The same array made by zarrfast and by zarr-python (in memory)."""
    ours = zarrfast.create_array({}, **kwargs)
    theirs = zarr.create_array(zarr.storage.MemoryStore(), **kwargs)
    return ours, theirs


# -- v3 codecs: as zarr-python's zeros_like, compared in the stored zarr.json --------------

@pytest.mark.parametrize("layout", [{"chunks": (2, 2)}, {"chunks": (2, 2), "shards": (4, 4)}],
                         ids=["chunked", "sharded"])
def test_codecs_are_copied_as_zarr_python_copies_them(layout):
    ours, theirs = _both(shape=(8, 8), dtype="int16", compressors=_gzip(3), **layout)
    assert _doc(ours.store)["codecs"] == _doc(theirs.store)["codecs"]  # (same model)
    ours_store, theirs_store = {}, zarr.storage.MemoryStore()
    zarrfast.zeros_like(ours, store=ours_store)
    zarr.zeros_like(theirs, store=theirs_store)
    assert _doc(ours_store)["codecs"] == _doc(theirs_store)["codecs"]
    assert any("gzip" in json.dumps(c) for c in _doc(ours_store)["codecs"])
    # the grid the codecs go with: a sharded model's shards (zarr-python 3.1.6 makes the
    # shards as small as the inner chunks here: its chunk grid is a.chunks, (2, 2))
    assert _doc(ours_store)["chunk_grid"] == _doc(ours.store)["chunk_grid"]


@pytest.mark.parametrize("name", LIKE)
def test_each_like_function_copies_the_codecs_and_the_shards(name):
    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="int16",
                              compressors=GzipCodec(level=3))
    kw = {"fill_value": 5} if name == "full_like" else {}
    b = getattr(zarrfast, name)(a, **kw)
    assert (b.chunks, b.shards) == ((2, 2), (4, 4))
    assert b.metadata.codecs == a.metadata.codecs
    b[...] = 1
    assert (b[...] == 1).all()


def test_open_like_copies_the_codecs():
    a = zarrfast.create_array({}, shape=(6,), chunks=(2,), dtype="int16",
                              compressors=GzipCodec(level=2))
    b = zarrfast.open_like(a, "b", store={})
    assert b.metadata.codecs == a.metadata.codecs


def test_v2_compressor_and_filters_are_copied_as_zarr_python_copies_them():
    kwargs = {"shape": (8,), "chunks": (2,), "dtype": "int32", "zarr_format": 2,
              "compressors": numcodecs.Zlib(level=1),
              "filters": [numcodecs.Delta(dtype="<i4")]}
    ours, theirs = _both(**kwargs)
    ours_store, theirs_store = {}, zarr.storage.MemoryStore()
    zarrfast.zeros_like(ours, store=ours_store)
    zarr.zeros_like(theirs, store=theirs_store, zarr_format=2)  # (3.1.6 needs it said)
    for key in ("compressor", "filters", "chunks", "order"):
        assert _doc(ours_store, ".zarray")[key] == _doc(theirs_store, ".zarray")[key], key
    assert _doc(ours_store, ".zarray")["compressor"] == {"id": "zlib", "level": 1}


# -- rectilinear shards (once a TypeError: create() got an unexpected keyword 'shards') ----

def _rectilinear_sharded():
    return zarrfast.create_array({}, shape=(10, 20), shards=[[4, 6], [10, 10]],
                                 chunks=(2, 5), dtype="i4", compressors=GzipCodec(level=1))


@pytest.mark.parametrize("name", LIKE)
def test_rectilinear_shards_are_copied(name):
    a = _rectilinear_sharded()
    kw = {"fill_value": 7} if name == "full_like" else {}
    b = getattr(zarrfast, name)(a, **kw)
    assert b.metadata.chunk_grid == a.metadata.chunk_grid and b.chunks == (2, 5)
    assert b.metadata.codecs == a.metadata.codecs
    b[...] = np.arange(200, dtype="i4").reshape(10, 20)
    np.testing.assert_array_equal(b[...], np.arange(200).reshape(10, 20))


def test_open_like_and_group_methods_copy_rectilinear_shards():
    a = _rectilinear_sharded()
    b = zarrfast.open_like(a, "b", store={})
    g = zarrfast.group(store={})
    c = g.zeros_like(name="c", data=a)
    for new in (b, c):
        assert new.metadata.chunk_grid == a.metadata.chunk_grid and new.chunks == (2, 5)
        assert new.metadata.codecs == a.metadata.codecs


# -- the caller's keywords win -------------------------------------------------------------

def test_given_codecs_replace_the_copied_ones():
    a = zarrfast.create_array({}, shape=(8,), chunks=(2,), shards=(4,), dtype="int16",
                              compressors=GzipCodec(level=3))
    b = zarrfast.zeros_like(a, codecs=[{"name": "bytes", "configuration": {"endian": "big"}}])
    assert [c.name for c in b.metadata.codecs] == ["bytes"]
    assert (b.chunks, b.shards) == ((2,), None)  # (the inner chunks, without the shards)
    c = zarrfast.zeros_like(a, chunks=(8,))  # the grid: shards of 8, chunks inside of 2
    assert (c.chunks, c.shards) == ((2,), (8,))


def test_another_dtype_or_format_does_not_take_the_codecs():
    a = zarrfast.create_array({}, shape=(8,), chunks=(2,), dtype="int16",
                              compressors=GzipCodec(level=3))
    s = zarrfast.zeros_like(a, dtype=str)  # (a bytes codec cannot encode strings)
    assert s.dtype.kind in "TOU" and "gzip" not in [c.name for c in s.metadata.codecs]
    assert zarrfast.zeros_like(a, dtype="int16").metadata.codecs == a.metadata.codecs
    v2 = zarrfast.zeros_like(a, zarr_format=2)
    assert v2.metadata.zarr_format == 2 and v2.chunks == (2,)


def test_v2_keywords_override_one_by_one():
    a = zarrfast.create((8,), chunks=(2,), dtype="int32", zarr_format=2, store={},
                        compressor={"id": "zlib", "level": 1},
                        filters=[{"id": "delta", "dtype": "<i4"}])
    b = zarrfast.zeros_like(a, compressor=None)
    assert b.metadata.compressor is None
    assert b.metadata.filters == ({"id": "delta", "dtype": "<i4"},)


# -- the Group methods: the same copy, in create_array's keywords ------------------------------

@pytest.mark.parametrize("name", LIKE)
def test_group_methods_copy_codecs_and_shards(name):
    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="int16",
                              compressors=GzipCodec(level=3))
    g = zarrfast.group(store={})
    kw = {"fill_value": 3} if name == "full_like" else {}
    b = getattr(g, name)(name="b", data=a, **kw)
    assert (b.chunks, b.shards) == ((2, 2), (4, 4))
    assert b.metadata.codecs == a.metadata.codecs


@pytest.mark.parametrize("name", LIKE)
def test_async_group_methods_copy_codecs_and_shards(name):
    # (they passed no Zarr format, so no codec was copied)
    import asyncio

    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="int16",
                              compressors=GzipCodec(level=3))
    g = zarrfast.group(store={}).async_group
    kw = {"fill_value": 3} if name == "full_like" else {}
    b = asyncio.run(getattr(g, name)(name="b", data=a, **kw))
    assert (b.chunks, b.shards) == ((2, 2), (4, 4))
    assert b.metadata.codecs == a.metadata.codecs


def test_group_methods_match_zarr_python_codecs():
    ours, theirs = _both(shape=(6,), chunks=(3,), dtype="float32", compressors=_gzip(4))
    g = zarrfast.group(store={})
    zg = zarr.group(store=zarr.storage.MemoryStore())
    g.zeros_like(name="z", data=ours)
    zg.zeros_like(name="z", data=theirs)
    assert _doc(g.store, "z/zarr.json")["codecs"] == _doc(zg.store, "z/zarr.json")["codecs"]


def test_group_method_keywords_win():
    a = zarrfast.create_array({}, shape=(8,), chunks=(2,), shards=(4,), dtype="int16",
                              compressors=GzipCodec(level=3))
    g = zarrfast.group(store={})
    b = g.zeros_like(name="b", data=a, chunks=(1,))  # create_array's chunks: not sharded
    assert (b.chunks, b.shards) == ((1,), None)
    c = g.zeros_like(name="c", data=a, shards=(8,))  # the inner chunks, new shards
    assert (c.chunks, c.shards) == ((2,), (8,))
    d = g.zeros_like(name="d", data=a, compressors=None)
    assert [x.name for x in d.metadata.codecs] == ["bytes"] and d.chunks == (2,)
    plain = zarrfast.create_array({}, shape=(8,), chunks=(2,), dtype="int16",
                                  compressors=GzipCodec(level=3))
    e = g.zeros_like(name="e", data=plain, shards=(4,))  # its codecs inside the shards
    assert (e.chunks, e.shards) == ((2,), (4,))
    assert [x.name for x in e.metadata.codecs[0].codecs] == ["bytes", "gzip"]


def test_group_of_the_other_format_takes_no_codecs():
    a = zarrfast.create_array({}, shape=(8,), chunks=(2,), dtype="int16",
                              compressors=GzipCodec(level=3))
    g2 = zarrfast.group(store={}, zarr_format=2)
    b = g2.zeros_like(name="b", data=a)
    assert b.metadata.zarr_format == 2 and b.chunks == (2,)
    v2 = zarrfast.create((8,), chunks=(4,), dtype="int32", zarr_format=2, store={},
                         compressor={"id": "zlib", "level": 1})
    c = g2.ones_like(name="c", data=v2)
    assert c.metadata.compressor == {"id": "zlib", "level": 1} and c.chunks == (4,)


def test_group_methods_take_a_dask_arrays_regular_chunksize():
    da = pytest.importorskip("dask.array")
    g = zarrfast.group(store={})
    d = da.zeros((10, 10), chunks=(4, 4))  # (chunks ((4, 4, 2), (4, 4, 2)))
    assert g.zeros_like(name="z", data=d).chunks == (4, 4)
    assert zarrfast.zeros_like(d).chunks == (4, 4)  # (as the module function)
    irregular = da.zeros((10,), chunks=((3, 7),))
    assert g.empty_like(name="i", data=irregular).chunks != (3,)  # (not copied: a guess)


def test_open_like_takes_create_array_codec_keywords_instead_of_the_copied_codecs():
    a = zarrfast.create_array({}, shape=(8,), chunks=(2,), shards=(4,), dtype="int16",
                              compressors=GzipCodec(level=3))
    b = zarrfast.open_like(a, "b", store={}, compressors=None)
    assert [c.name for c in b.metadata.codecs] == ["bytes"] and b.chunks == (2,)
    c = zarrfast.open_like(a, "c", store={}, shards=(8,))
    assert (c.chunks, c.shards) == ((2,), (8,))


def test_async_group_methods_still_work():
    import asyncio

    a = _rectilinear_sharded()
    ag = zarrfast.group(store={}).async_group

    async def make():
        return await ag.zeros_like(name="z", data=a)

    z = asyncio.run(make())
    assert z.shape == (10, 20) and z.dtype == np.dtype("i4")
