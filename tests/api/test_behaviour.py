"""Behaviour that used to differ from zarr-python 3.1: dict stores holding Buffer-like
values, unpickled arrays comparing equal, ``chunks="auto"``, chunk key encodings given
as tuples, the argument combinations ``create_array`` refuses (and the exception types),
``list_prefix("/")``, and the exceptions for opening a node as the wrong type.  Where it is
cheap, the expectation is what zarr-python itself does."""

from __future__ import annotations

import pickle
import re
import warnings

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    MetadataValidationError,
    NodeTypeValidationError,
    ZarrfastError,
)
from zarrfast.storage import LocalStore, MemoryStore

zarr = pytest.importorskip("zarr")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- (a) a dict as a store ---------------------------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_dict_store_holds_buffer_like_values(zarr_format) -> None:
    d: dict = {}
    a = zarrfast.create_array(d, shape=(4,), chunks=(2,), dtype="i4", zarr_format=zarr_format,
                              compressors=None)
    a[:] = np.arange(4, dtype="i4")
    doc = ".zarray" if zarr_format == 2 else "zarr.json"
    assert d[doc].to_bytes().startswith(b"{")
    assert type(d[doc].to_bytes()) is bytes
    chunk = "0" if zarr_format == 2 else "c/0"
    np.testing.assert_array_equal(d[chunk].as_numpy_array().view("i4"), [0, 1])
    assert isinstance(d[chunk], bytes) and d[chunk] == d[chunk].to_bytes()  # still bytes
    # zarr-python reads (byte ranges too) and writes the same dict, zarrfast reads it back
    theirs = _quiet(zarr.open_array, d, mode="r+")
    np.testing.assert_array_equal(theirs[1:3], [1, 2])
    theirs[:] = 9
    np.testing.assert_array_equal(zarrfast.open_array(d, mode="r")[:], [9, 9, 9, 9])
    assert MemoryStore(d)._store_dict is d  # (zarr-python's name for the dict)


def test_dict_written_by_zarr_python_reads_in_zarrfast() -> None:
    d: dict = {}
    z = _quiet(zarr.create_array, d, shape=(6,), chunks=(4,), dtype="f8")
    z[:] = np.arange(6.0)
    assert type(d["zarr.json"]).__name__ == "Buffer"
    np.testing.assert_array_equal(zarrfast.open_array(d)[:], np.arange(6.0))
    assert zarrfast.storage.MemoryStore(d).get("c/0", zarrfast.storage.RangeByteRequest(0, 2)) \
        == d["c/0"].to_bytes()[:2]


def test_memory_store_of_its_own_keeps_plain_bytes() -> None:
    s = MemoryStore()
    zarrfast.create_array(s, shape=(2,), dtype="i1")
    assert type(s._data["zarr.json"]) is bytes
    shared = pickle.loads(pickle.dumps(MemoryStore({})))
    shared.set("k", b"v")
    assert shared._data["k"].to_bytes() == b"v"


# -- (b) pickling -------------------------------------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("fill_value", [0, np.nan])
def test_unpickled_array_equals_the_original(tmp_path, zarr_format, fill_value) -> None:
    a = zarrfast.create_array(LocalStore(tmp_path), name="x", shape=(100,), chunks=(10,),
                              dtype="f8", zarr_format=zarr_format, fill_value=fill_value,
                              attributes={"k": [1, 2]})
    a[:] = np.arange(100.0)
    b = pickle.loads(pickle.dumps(a))
    assert b == a and not (b != a) and hash(b) == hash(a)
    np.testing.assert_array_equal(b[:], a[:])
    assert a != zarrfast.open_array(LocalStore(tmp_path), path="x", mode="r")  # read-only view
    assert a != zarrfast.create_array(LocalStore(tmp_path), name="other", shape=(100,),
                                      chunks=(10,), dtype="f8", zarr_format=zarr_format)
    assert a != "not an array"
    g = zarrfast.open_group(LocalStore(tmp_path), mode="r+")
    assert pickle.loads(pickle.dumps(g)) == g


# -- (c) chunks="auto" ------------------------------------------------------------------
AUTO_CASES = [((100,), "i4"), ((10000, 10000), "f8"), ((1000, 1000, 100), "i2"), ((3,), "u1"),
              ((123456789,), "f4"), ((50, 7000, 3), "c16"), ((0,), "f8"), ((), "f8"),
              ((0, 5000), "i8"), ((10, 2**20), "S7"), ((2**20,), str), ((4000, 4000), "bool")]


@pytest.mark.parametrize(("shape", "dtype"), AUTO_CASES)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_auto_chunks_as_zarr_python(shape, dtype, zarr_format) -> None:
    ref = _quiet(zarr.create_array, zarr.storage.MemoryStore(), shape=shape, dtype=dtype,
                 chunks="auto", zarr_format=zarr_format)
    ours = zarrfast.create_array(MemoryStore(), shape=shape, dtype=dtype, chunks="auto",
                                 zarr_format=zarr_format)
    assert ours.chunks == ref.chunks


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 5000), min_size=1, max_size=4),
       dtype=st.sampled_from(["i1", "i2", "f4", "f8", "c16", "U5"]))
def test_auto_chunks_property_as_zarr_python(shape, dtype) -> None:
    shape = tuple(shape)
    ref = _quiet(zarr.create_array, zarr.storage.MemoryStore(), shape=shape, dtype=dtype)
    ours = zarrfast.create_array(MemoryStore(), shape=shape, dtype=dtype)
    assert ours.chunks == ref.chunks


@pytest.mark.parametrize(("shape", "chunks"), [((10000, 10000), "auto"), ((10000, 64), "auto"),
                                                ((1000, 1000), (10, 10)), ((90,), (10,))])
def test_auto_shards_as_zarr_python(shape, chunks) -> None:
    ref = _quiet(zarr.create_array, zarr.storage.MemoryStore(), shape=shape, dtype="f8",
                 chunks=chunks, shards="auto")
    with pytest.warns(UserWarning, match="experimental"):
        ours = zarrfast.create_array(MemoryStore(), shape=shape, dtype="f8", chunks=chunks,
                                     shards="auto")
    assert (ours.shards, ours.chunks) == (ref.shards, ref.chunks)


@pytest.mark.parametrize("location", ["start", "end"])
def test_shards_mapping_as_zarr_python(location) -> None:
    """zarr-python's ``shards={"shape": ..., "index_location": ...}``: the index where
    asked, as zarr-python puts it; each reads what the other wrote."""
    shards = {"shape": (8, 8), "index_location": location}
    ref_store, ours_store = zarr.storage.MemoryStore(), MemoryStore()
    ref = _quiet(zarr.create_array, ref_store, shape=(16, 8), dtype="u2", chunks=(4, 4),
                 shards=shards, compressors=None)
    ours = zarrfast.create_array(ours_store, shape=(16, 8), dtype="u2", chunks=(4, 4),
                                 shards=shards, compressors=None)
    assert ours._chain.codec.index_location == location
    data = np.arange(128, dtype="u2").reshape(16, 8)
    ours[...] = data
    ref[...] = data
    for key in ("c/0/0", "c/1/0"):  # (inner chunks may be in another order: both valid)
        got, want = ours_store.get(key), ref_store._store_dict[key].to_bytes()
        index = got[:68] if location == "start" else got[-68:]
        assert len(got) == len(want) == 4 * 32 + 68
        assert np.frombuffer(index[:64], "<u8").reshape(4, 2)[:, 0].min() == (
            68 if location == "start" else 0)
    reref = zarrfast.open_array(MemoryStore(
        {k: v.to_bytes() for k, v in ref_store._store_dict.items()}), mode="r")
    assert reref._chain.codec.index_location == location
    assert np.array_equal(reref[...], data)
    reread = zarr.open_array(zarr.storage.MemoryStore(
        {k: zarr.core.buffer.cpu.Buffer.from_bytes(ours_store.get(k))
         for k in ours_store.list()}),
        mode="r")
    assert np.array_equal(reread[...], data)
    # without "index_location": at the end, as zarr-python's default
    plain = zarrfast.create_array(MemoryStore(), shape=(16, 8), dtype="u2", chunks=(4, 4),
                                  shards={"shape": (8, 8)})
    assert plain._chain.codec.index_location == "end"


@pytest.mark.parametrize("shards", [{"shape": (8, 8), "index_codecs": []},
                                    {"shape": (8, 8), "index_location": "middle"}])
def test_shards_mapping_refuses_what_it_does_not_take(shards) -> None:
    with pytest.raises(ZarrfastError, match="shards"):
        zarrfast.create_array(MemoryStore(), shape=(16, 8), dtype="u2", chunks=(4, 4),
                              shards=shards)


def test_guess_chunks_bounds() -> None:
    from zarrfast.hierarchy.create import guess_chunks

    assert guess_chunks((10**9,), 1) == (1953125,)  # halved until within the target
    assert guess_chunks((10**6, 10**6), 8, max_bytes=1 << 20)[0] * 8 <= 1 << 20
    assert guess_chunks((7,), 10**9) == (1,)  # one element larger than the maximum
    with pytest.raises(ZarrfastError, match="min_bytes"):
        guess_chunks((4,), 1, min_bytes=10, max_bytes=10)


# -- (d) chunk key encodings ------------------------------------------------------------------
@pytest.mark.parametrize(("given", "name", "separator", "key"), [
    (("default", "."), "default", ".", "c.1"),
    (("default", "/"), "default", "/", "c/1"),
    (("default",), "default", "/", "c/1"),
    (("v2", "/"), "v2", "/", "1"),
    ({"name": "v2", "separator": "."}, "v2", ".", "1"),
    ({"name": "default", "configuration": {"separator": "."}}, "default", ".", "c.1"),
    ("v2", "v2", ".", "1"),
])
def test_chunk_key_encoding_arguments(given, name, separator, key) -> None:
    s = MemoryStore()
    a = zarrfast.create_array(s, shape=(4,), chunks=(2,), dtype="i1", chunk_key_encoding=given)
    cke = a.metadata.chunk_key_encoding
    assert (cke.name, cke.separator) == (name, separator)
    a[2] = 1
    assert s.exists(key)


def test_chunk_key_encoding_of_zarr_python_and_for_v2() -> None:
    from zarr.core.chunk_key_encodings import DefaultChunkKeyEncoding

    a = zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i1",
                              chunk_key_encoding=DefaultChunkKeyEncoding(separator="."))
    assert a.metadata.chunk_key_encoding.separator == "."
    s = MemoryStore()
    b = zarrfast.create_array(s, shape=(4, 4), chunks=(2, 2), dtype="i1", zarr_format=2,
                              chunk_key_encoding=("v2", "/"))
    b[:] = 1
    assert s.exists("1/1") and b.metadata.dimension_separator == "/"
    with pytest.raises(ValueError, match="the `name` field of the chunk key encoding must be 'v2'"):
        zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i1", zarr_format=2,
                              chunk_key_encoding=("default", "/"))
    for bad in (("default", ".", "x"), ("nope", "/"), ("default", "-"), (1, 2)):
        with pytest.raises(MetadataValidationError, match="chunk_key_encoding"):
            zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i1",
                                  chunk_key_encoding=bad)


# -- (e) arguments create_array refuses ------------------------------------------------------
def _delta():
    return numcodecs.Delta(dtype="i4")


REFUSED = [
    ("shards with v2", dict(shape=(4,), dtype="i4", chunks=(2,), shards=(4,), zarr_format=2)),
    ("serializer with v2", dict(shape=(4,), dtype="i4", zarr_format=2,
                                serializer="BytesCodec")),
    ("two compressors with v2", dict(shape=(4,), dtype="i4", zarr_format=2,
                                     compressors=[numcodecs.Zstd(), numcodecs.GZip()])),
    ("a v3 filter with v2", dict(shape=(4,), dtype="i4", zarr_format=2,
                                 filters=["TransposeCodec"])),
    ("a v3 compressor with v2", dict(shape=(4,), dtype="i4", zarr_format=2,
                                     compressors=["ZstdCodec"])),
    ("a filter as compressor", dict(shape=(4,), dtype="i4", compressors=["TransposeCodec"])),
    ("a compressor as filter", dict(shape=(4,), dtype="i4", filters=["ZstdCodec"])),
    ("a serializer as compressor", dict(shape=(4,), dtype="i4", compressors=["BytesCodec"])),
    ("a compressor as serializer", dict(shape=(4,), dtype="i4", serializer="ZstdCodec")),
    ("a numcodecs compressor as filter", dict(shape=(4,), dtype="i4", filters=["nc.Zstd"])),
    ("the default encoding with v2", dict(shape=(4,), dtype="i4", zarr_format=2,
                                          chunk_key_encoding={"name": "default"})),
    ("no shape", dict(dtype="i4")),
    ("chunks of another rank", dict(shape=(4,), dtype="i4", chunks=(2, 2))),
    ("shards not a multiple of chunks", dict(shape=(8,), dtype="i4", shards=(5,), chunks=(2,))),
    ("a fractional shape", dict(shape=(1.5,), dtype="i4")),
    ("a negative shape", dict(shape=(-1,), dtype="i4")),
    ("dimension names of another rank", dict(shape=(4,), dtype="i4",
                                             dimension_names=["x", "y"])),
    ("dimension names not strings", dict(shape=(4,), dtype="i4", dimension_names=[1])),
    ("an unknown dtype", dict(shape=(4,), dtype="nonsense")),
    ("vlen strings without their codec", dict(shape=(4,), dtype=str, filters=None,
                                              zarr_format=2)),
]


def _resolve(kwargs: dict, mod) -> dict:
    out = dict(kwargs)
    for key in ("filters", "compressors", "serializer"):
        value = out.get(key)
        names = value if isinstance(value, list) else [value]
        if not all(isinstance(n, str) and (n.endswith("Codec") or n.startswith("nc."))
                   for n in names):
            continue
        made = [getattr(numcodecs, n[3:])() if n.startswith("nc.")
                else getattr(mod.codecs, n)(order=(0,)) if n == "TransposeCodec"
                else getattr(mod.codecs, n)() for n in names]
        out[key] = made if isinstance(value, list) else made[0]
    return out


@pytest.mark.parametrize(("label", "kwargs"), REFUSED, ids=[r[0] for r in REFUSED])
def test_create_array_refuses_as_zarr_python(label, kwargs) -> None:
    with pytest.raises(Exception) as theirs:
        _quiet(zarr.create_array, zarr.storage.MemoryStore(), **_resolve(kwargs, zarr))
    with pytest.raises(Exception) as ours:
        zarrfast.create_array(MemoryStore(), **_resolve(kwargs, zarrfast))
    for builtin in (ValueError, TypeError, KeyError):
        if isinstance(theirs.value, builtin):
            assert isinstance(ours.value, builtin), (label, ours.value, theirs.value)
    assert isinstance(ours.value, ZarrfastError)
    assert "array '/'" in str(ours.value) or "dtype" in str(ours.value)


def test_data_with_shape_or_dtype_is_refused_by_create_array_of_a_group() -> None:
    for mod, store in ((zarr, zarr.storage.MemoryStore()), (zarrfast, MemoryStore())):
        g = mod.group(store=store)
        for extra in ({"shape": (4,)}, {"dtype": "i4"}):
            with pytest.raises(ValueError, match="data"):
                g.create_array("x", data=np.arange(4), **extra)
        g.create_array("y", data=np.arange(4, dtype="i2"))
        assert g["y"].dtype == np.dtype("i2") and g["y"].shape == (4,)
    # zarrfast.array(data, dtype=...) converts, as zarr.array does
    assert zarrfast.array(np.arange(4), dtype="f4").dtype == np.dtype("f4")


def test_compressor_and_compressors_together_are_refused() -> None:
    from zarrfast.hierarchy.create import create_array_at

    with pytest.raises(ValueError, match="not both"):
        create_array_at(MemoryStore(), "", shape=(4,), dtype="i1", compressor=None,
                        compressors=None)
    a = create_array_at(MemoryStore(), "", shape=(4,), dtype="i1", compressor=None)
    assert a.compressors == ()


# -- (f) list_prefix -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["memory", "local", "zip"])
def test_list_prefix_slash_and_empty(tmp_path, kind) -> None:
    store = {"memory": lambda: MemoryStore(), "local": lambda: LocalStore(tmp_path / "d"),
             "zip": lambda: zarrfast.storage.ZipStore(tmp_path / "z.zip", mode="w")}[kind]()
    a = zarrfast.create_array(store, name="a", shape=(10,), chunks=(10,), dtype="f8",
                              fill_value=np.nan)
    a[:] = np.nan  # all fill value: no chunk written
    assert list(store.list_prefix("/")) == []
    assert sorted(store.list_prefix("")) == ["a/zarr.json", "zarr.json"]
    with pytest.raises(zarrfast.errors.InvalidKeyError):
        list(store.list_dir("/"))


# -- (g) opening a node as the wrong type ---------------------------------------------------
def _node_store(mod):
    store = mod.storage.MemoryStore()
    _quiet(mod.create_array, store, name="g/a", shape=(4,), dtype="i4")
    return store


@pytest.mark.parametrize("mode", ["r", "r+", "a"])
def test_opening_an_array_as_a_group_raises_contains_array_error(mode) -> None:
    with pytest.raises(zarr.errors.ContainsArrayError):
        zarr.open_group(_node_store(zarr), path="g/a", mode=mode)
    with pytest.raises(ContainsArrayError, match="'g/a' is an array, not a group") as e:
        zarrfast.open_group(_node_store(zarrfast), path="g/a", mode=mode)
    assert isinstance(e.value, NodeTypeValidationError)  # what zarrfast raised before


@pytest.mark.parametrize("mode", ["r", "r+", "a"])
def test_opening_a_group_as_an_array_raises_node_type_validation_error(mode) -> None:
    with pytest.raises(zarr.errors.NodeTypeValidationError):
        zarr.open_array(_node_store(zarr), path="g", mode=mode)
    with pytest.raises(NodeTypeValidationError, match="'g' is a group, not an array") as e:
        zarrfast.open_array(_node_store(zarrfast), path="g", mode=mode)
    assert not isinstance(e.value, ContainsGroupError)


def test_missing_and_existing_nodes_raise_zarr_python_types() -> None:
    store = _node_store(zarrfast)
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, path="nope", mode="r")
    with pytest.raises(GroupNotFoundError):
        zarrfast.open_group(store, path="nope", mode="r")
    with pytest.raises(ContainsArrayError):
        zarrfast.create_group(store, path="g/a")
    with pytest.raises(ContainsGroupError):
        zarrfast.create_array(store, name="g", shape=(1,), dtype="i1")
    for err in (ArrayNotFoundError, GroupNotFoundError):
        assert issubclass(err, FileNotFoundError) and issubclass(err, ValueError)
    for name in ("ContainsArrayError", "ContainsGroupError", "ContainsArrayAndGroupError",
                 "ArrayNotFoundError", "GroupNotFoundError", "NodeTypeValidationError",
                 "MetadataValidationError", "BaseZarrError", "NodeNotFoundError"):
        assert issubclass(getattr(zarrfast.errors, name), ValueError), name


# -- (h) asynchronous fsspec file systems -----------------------------------------------------
def test_fsspec_store_takes_an_asynchronous_memory_file_system() -> None:
    import asyncio

    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper
    from fsspec.implementations.memory import MemoryFileSystem

    fs = AsyncFileSystemWrapper(MemoryFileSystem(), asynchronous=True)
    assert fs.asynchronous and fs.loop is None
    store = zarrfast.storage.FsspecStore(fs, path="/zarrfast-async/data.zarr")
    a = zarrfast.create_array(store, shape=(10,), chunks=(3,), dtype="i4")
    a[:] = np.arange(10, dtype="i4")
    assert sorted(store.list_prefix("")) == ["c/0", "c/1", "c/2", "c/3", "zarr.json"]
    assert MemoryFileSystem().cat_file("/zarrfast-async/data.zarr/c/1") == store.get("c/1")

    async def read_inside_a_running_loop():  # (as zarr-python's users hold such stores)
        return zarrfast.open_array(store, mode="r")[2:5]

    np.testing.assert_array_equal(asyncio.run(read_inside_a_running_loop()), [2, 3, 4])


def test_fsspec_store_takes_an_asynchronous_s3_file_system(s3_server) -> None:
    s3fs = pytest.importorskip("s3fs")
    opts = s3_server.storage_options()
    # (not from fsspec's instance cache: this one's session is bound to fsspec's loop, an
    # instance zarr-python later took from the cache would fail on its own loop)
    fs = s3fs.S3FileSystem(asynchronous=True, skip_instance_cache=True, **opts)
    path = s3_server.url().split("://", 1)[1]
    store = zarrfast.storage.FsspecStore(fs, path=path)
    a = zarrfast.create_array(store, shape=(20, 20), chunks=(5, 5), dtype="f4")
    a[:] = np.arange(400, dtype="f4").reshape(20, 20)
    # the same objects through a synchronous s3fs, and through zarr-python's FsspecStore
    sync = zarrfast.storage.FsspecStore(s3fs.S3FileSystem(**opts), path=path)
    np.testing.assert_array_equal(zarrfast.open_array(sync, mode="r")[3:7, 18:],
                                  a[3:7, 18:])
    # (a new instance: fsspec caches instances, and s3fs binds one to its first loop)
    theirs_fs = s3fs.S3FileSystem(asynchronous=True, skip_instance_cache=True, **opts)
    theirs = _quiet(zarr.open_array, zarr.storage.FsspecStore(theirs_fs, path=path,
                                                              read_only=True), mode="r")
    np.testing.assert_array_equal(theirs[:], a[:])
    assert len(list(store.list_prefix("c/"))) == 16
    # close both sessions on their own loops (no "unclosed client session" at exit)
    import fsspec.asyn
    from zarr.core.sync import sync as zarr_sync

    fsspec.asyn.sync(store._loop, fs._s3.close)
    zarr_sync(theirs_fs._s3.close())


# -- chunk grids -----------------------------------------------------------------------------
@pytest.mark.parametrize(("array_shape", "chunk_shape"), [((5, 7), (2, 3)), ((0, 4), (1, 2)),
                                                          ((), ()), ((10,), (10,))])
def test_regular_chunk_grid_coords_as_zarr_python(array_shape, chunk_shape) -> None:
    from zarr.core.chunk_grids import RegularChunkGrid as TheirGrid

    from zarrfast.metadata.chunk_grid import RegularChunkGrid

    ours = RegularChunkGrid(chunk_shape=chunk_shape)
    theirs = TheirGrid(chunk_shape=chunk_shape)
    assert list(ours.all_chunk_coords(array_shape)) == list(theirs.all_chunk_coords(array_shape))
    assert ours.get_nchunks(array_shape) == theirs.get_nchunks(array_shape)


def test_rectilinear_chunk_grid_coords() -> None:
    a = zarrfast.create_array(MemoryStore(), shape=(10, 20), chunks=[[3, 7], [5, 5, 10]],
                              dtype="i2")
    grid = a.metadata.chunk_grid
    assert list(grid.all_chunk_coords(a.shape)) == [(i, j) for i in range(2) for j in range(3)]
    assert grid.get_nchunks(a.shape) == 6 == a.nchunks


def test_more_refusals_with_zarr_python_types_and_words() -> None:
    with pytest.raises(TypeError, match="shape must be integers"):
        zarrfast.create(shape=(400.5, 100))
    with pytest.raises(TypeError, match="chunk sizes must be integers"):
        zarrfast.create(shape=(400, 100), chunks=(16, 16.5))
    with pytest.raises(ValueError, match="chunk sizes must be integers >= 1"):
        zarrfast.create(shape=(400, 100), chunks=(16, 0))
    msg = "Invalid value for 'zarr_format'. Expected 2, 3, or None. Got '3.0'."
    for call in (lambda: zarrfast.open_group(zarr_format="3.0"),
                 lambda: zarrfast.open_array(shape=(1,), zarr_format="3.0")):
        with pytest.raises(MetadataValidationError, match=re.escape(msg)):
            call()
    with pytest.raises(ValueError, match="Cannot use a BytesBytesCodec as a compressor for "
                                         "zarr v2 arrays. Use a numcodecs codec directly"):
        zarrfast.create(store={}, shape=1, dtype="uint8", zarr_format=2,
                        compressor=zarrfast.codecs.BloscCodec())
    with pytest.raises(TypeError, match=r"filters\[0\] for Zarr v2 must be numcodecs"):
        zarrfast.create_array({}, shape=(1,), dtype="u1", zarr_format=2,
                              filters=zarrfast.codecs.ZstdCodec())
    assert zarrfast.create(store={}, shape=1, dtype="uint8", zarr_format=2,
                           compressor=None).compressors == ()


# -- GroupMetadata.consolidated_metadata -------------------------------------------------------
def test_group_metadata_consolidated_metadata_as_zarr_python() -> None:
    seen = []
    for mod in (zarr, zarrfast):
        s = mod.storage.MemoryStore()
        g = mod.group(store=s, attributes={"k": 1})
        a = g.create_group("a")
        a.create_array("x", shape=(2,), dtype="i1")
        a.create_group("b").create_group("c")
        g.create_array("y", shape=(3,), dtype="f4")
        _quiet(mod.consolidate_metadata, s)
        cm = _quiet(mod.open_consolidated, s).metadata.consolidated_metadata
        nested_b = cm.metadata["a"].consolidated_metadata.metadata["b"]
        seen.append((sorted(cm.metadata), sorted(cm.flattened_metadata),
                     sorted(cm.metadata["a"].consolidated_metadata.metadata),
                     sorted(nested_b.consolidated_metadata.metadata), cm.kind,
                     cm.must_understand, sorted(cm.to_dict()["metadata"]),
                     cm.flattened_metadata["a/x"].shape,
                     repr(cm.flattened_metadata["a"].consolidated_metadata),
                     repr(cm.flattened_metadata["a/b/c"].consolidated_metadata)))
    assert seen[0] == seen[1]
    assert seen[1][1] == ["a", "a/b", "a/b/c", "a/x", "y"]
    assert zarrfast.group().metadata.consolidated_metadata is None


def test_consolidated_metadata_refuses_what_it_cannot_read() -> None:
    from zarrfast.metadata.v3 import ConsolidatedMetadata

    for bad in ({"kind": "other", "metadata": {}}, {"kind": "inline"},
                {"kind": "inline", "must_understand": True, "metadata": {}},
                {"kind": "inline", "metadata": {"/abs": {}}},
                {"kind": "inline", "metadata": {"a": 1}}):
        with pytest.raises(MetadataValidationError, match="consolidated_metadata"):
            ConsolidatedMetadata.from_dict(bad)
    assert ConsolidatedMetadata.from_dict({"kind": "inline", "metadata": {}}).metadata == {}


# -- require_group / require_array --------------------------------------------------------------
def test_require_array_and_group_refuse_as_zarr_python() -> None:
    for mod in (zarr, zarrfast):
        root = mod.group(store=mod.storage.MemoryStore())
        foo = root.require_array("foo", shape=(10,), dtype="i8", attributes={"k": 1})
        assert dict(root.require_array("foo", shape=(10,), dtype="i8").attrs) == {"k": 1}
        assert root.require_array("foo", shape=10, dtype="f8").shape == foo.shape  # casts
        with pytest.raises(TypeError, match=r"Incompatible dtype \(int64 vs float64\)"):
            root.require_array("foo", shape=(10,), dtype="f8", exact=True)
        with pytest.raises(TypeError, match="Incompatible shape"):
            root.require_array("foo", shape=(100, 100), dtype="i8")
        with pytest.raises(TypeError, match=r"Incompatible dtype \(int64 vs float32\)"):
            root.require_array("foo", shape=(10,), dtype="f4")
        root.create_group("bar")
        with pytest.raises(TypeError, match="Incompatible object"):
            root.require_array("bar", shape=(10,), dtype="int8")
        with pytest.raises(TypeError, match="Incompatible object"):
            root.require_group("foo")
    # what zarrfast raised before still catches them
    root = zarrfast.group()
    root.create_array("a", shape=(1,), dtype="i1")
    with pytest.raises(ContainsArrayError, match="'a' of group '/' is an array"):
        root.require_group("a")
    with pytest.raises(ZarrfastError, match="exists with shape"):
        root.require_array("a", shape=(2,), dtype="i1")
