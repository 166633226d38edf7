"""Array.config, Array.with_config and Array.from_dict, against zarr-python's behaviour."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.core.array_spec import ArrayConfig as ZarrArrayConfig
from zarr.storage import StorePath

import zarrfast
from zarrfast import Array, config
from zarrfast.errors import MetadataValidationError, ZarrfastError
from zarrfast.hierarchy.array_config import ArrayConfig
from zarrfast.storage import MemoryStore

_CHANGES = [{}, {"write_empty_chunks": True}, {"order": "C"},
            {"order": "C", "write_empty_chunks": True}, {"read_missing_chunks": False},
            {"sharding_coalesce_max_gap_bytes": 5, "sharding_coalesce_max_bytes": 7}]


def test_with_config_as_zarr_python(zarr_peer) -> None:
    source = {"write_empty_chunks": False, "order": "F"}
    theirs = zarr_peer.run("""
        import zarr
        source, changes = ARGS
        a = zarr.create_array({}, shape=(1,), dtype="uint8", config=source)
        emit([repr(a.config), a.config.to_dict(),
              [[a.with_config(c).config.to_dict(), a.async_array.with_config(c).config.to_dict()]
               for c in changes]])
    """, [source, _CHANGES])
    ours = zarrfast.create_array({}, shape=(1,), dtype="uint8", config=source)
    assert [repr(ours.config), ours.config.to_dict()] == theirs[:2]
    for change, (sync, asynchronous) in zip(_CHANGES, theirs[2], strict=True):
        assert ours.with_config(change).config.to_dict() == sync
        # the async view too: a plain method on AsyncArray, giving an AsyncArray
        mine = ours.async_array.with_config(change)
        assert type(mine) is zarrfast.AsyncArray
        assert mine.config.to_dict() == asynchronous
    assert ours.config.to_dict() == theirs[1]  # the source keeps its own


def test_with_config_takes_config_objects() -> None:
    a = zarrfast.create_array({}, shape=(1,), dtype="uint8")
    mine = ArrayConfig.from_dict({"write_empty_chunks": True, "order": "F"})
    theirs = ZarrArrayConfig.from_dict({"write_empty_chunks": True, "order": "F"})
    assert a.with_config(mine).config == a.with_config(theirs).config == mine
    with pytest.raises(ZarrfastError, match="'colour'"):
        a.with_config({"colour": "red"})
    with pytest.raises(ZarrfastError, match="'X'"):
        a.with_config({"order": "X"})
    with pytest.raises(ZarrfastError, match="42"):
        a.with_config(42)


def test_with_config_changes_what_it_does() -> None:
    a = zarrfast.create_array({}, shape=(6, 4), dtype="i2", chunks=(2, 2),
                              config={"write_empty_chunks": False})
    a[...] = 0
    assert a.nchunks_initialized == 0
    b = a.with_config({"write_empty_chunks": True, "order": "F"})
    b[...] = 0
    assert b.nchunks_initialized == a.nchunks_initialized == 6  # the same chunks
    assert b[...].flags.f_contiguous and not a[...].flags.f_contiguous
    assert b.shape == a.shape and b.store is a.store


def test_config_defaults_come_from_global_config() -> None:
    with config.set({"array.order": "F", "array.write_empty_chunks": True}):
        a = zarrfast.create_array({}, shape=(2, 2), dtype="u1")
        assert a.config == ArrayConfig("F", True)
        assert ArrayConfig.from_dict({"order": "C"}) == ArrayConfig("C", True)
    with pytest.raises(ZarrfastError, match="write_empty_chunks"):
        ArrayConfig("C", "yes")


def test_from_dict_v3_reads_existing_chunks() -> None:
    a = zarrfast.create_array({}, shape=(5, 3), dtype="f4", chunks=(2, 2))
    a[...] = np.arange(15, dtype="f4").reshape(5, 3)
    b = Array.from_dict(a.store, a.metadata.to_dict())
    np.testing.assert_array_equal(b[...], a[...])
    held: dict = {}
    c = Array.from_dict(StorePath(zarr.storage.MemoryStore(held)), a.metadata.to_dict())
    assert c.shape == (5, 3) and c.dtype == np.dtype("f4")
    assert held == {}  # nothing written
    np.testing.assert_array_equal(c[...], np.zeros((5, 3), "f4"))


def test_from_dict_v2_and_bad_formats() -> None:
    doc = {"zarr_format": 2, "shape": (10,), "chunks": (5,), "dtype": "|u1",
           "fill_value": 0, "order": "C"}
    a = Array.from_dict(MemoryStore(), doc)
    assert a.zarr_format == 2 and a.shape == (10,)
    for fmt in (1, 4, None):
        with pytest.raises(MetadataValidationError, match="Invalid zarr_format"):
            Array.from_dict(MemoryStore(), {**doc, "zarr_format": fmt})
    with pytest.raises(ValueError):  # zarr-python refuses storage transformers too
        Array.from_dict(MemoryStore(), {
            "zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
            "chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes"}],
            "fill_value": 0, "storage_transformers": [{"name": "test"}]})
    with pytest.raises(MetadataValidationError, match="not JSON"):
        Array.from_dict(MemoryStore(), {**doc, "fill_value": object()})


def test_from_dict_at_a_path() -> None:
    store = MemoryStore()
    a = zarrfast.create_array(store, name="x/y", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = [1, 2, 3, 4]

    class Where:  # anything with .store and .path, as zarr-python's StorePath
        def __init__(self, store, path):
            self.store, self.path = store, path

    b = Array.from_dict(Where(store, "x/y"), a.metadata.to_dict())
    np.testing.assert_array_equal(b[...], [1, 2, 3, 4])
    assert b.path == "x/y"


def test_create_array_takes_an_array_config() -> None:
    for cfg in (ArrayConfig("F", True), ZarrArrayConfig(order="F", write_empty_chunks=True)):
        a = zarrfast.create_array({}, shape=(2, 2), dtype="u1", config=cfg)
        assert a.config == ArrayConfig("F", True)
