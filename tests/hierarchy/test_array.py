"""Arrays: pickling, attributes, dimension names, resizing and properties."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import MetadataValidationError, ReadOnlyError, ZarrfastError

from _helpers.arrays import chunk_keys, random_data, same

# ---------------------------------------------------------------------------
# pickling, attributes, dimension names, resize
# ---------------------------------------------------------------------------


def _pickle_round_trip(store: zarrfast.Store) -> None:
    data = random_data(np.dtype("c8"), (5, 7), np.random.default_rng(9))
    a = zarrfast.create_array(store, name="p", shape=(5, 7), chunks=(2, 3), dtype="c8",
                              fill_value=[1, -1], attributes={"k": "v"},
                              dimension_names=["y", "x"])
    a[1:] = data[1:]
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, zarrfast.Array)
    assert (b.shape, b.chunks, b.dtype, b.path) == (a.shape, a.chunks, a.dtype, a.path)
    assert b.fill_value == a.fill_value
    assert dict(b.attrs) == {"k": "v"}
    assert b.dimension_names == ("y", "x")
    assert b.metadata.to_dict() == a.metadata.to_dict()
    same(b[...], a[...])
    same(b[2:, ::2], a[2:, ::2])


def test_pickle_local_store(tmp_path: Path) -> None:
    _pickle_round_trip(zarrfast.LocalStore(tmp_path / "p.zarr"))
    r = zarrfast.open_array(tmp_path / "p.zarr", path="p", mode="r")
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_only
    with pytest.raises(ReadOnlyError):
        r2[0, 0] = 1


def test_pickle_memory_store() -> None:
    _pickle_round_trip(zarrfast.MemoryStore())


def test_attrs_persist(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="x", shape=(2,), dtype="i1",
                              attributes={"units": "m"})
    a.attrs["scale"] = 2.5
    a.attrs.update({"list": [1, 2], "nested": {"a": None}})
    del a.attrs["units"]
    a.update_attributes({"flag": True})
    expected = {"scale": 2.5, "list": [1, 2], "nested": {"a": None}, "flag": True}
    assert dict(a.attrs) == expected
    b = zarrfast.open_array(store, path="x", mode="r")
    assert dict(b.attrs) == expected
    assert json.loads(store.get("x/zarr.json"))["attributes"] == expected
    a.attrs.put({"only": 1})
    assert dict(zarrfast.open_array(store, path="x").attrs) == {"only": 1}
    with pytest.raises(KeyError):
        del a.attrs["missing"]
    with pytest.raises(MetadataValidationError):
        a.attrs["bad"] = object()
    assert dict(zarrfast.open_array(store, path="x").attrs) == {"only": 1}


def test_attrs_nan_and_infinity_round_trip(store: zarrfast.Store) -> None:
    """NaN/Infinity attributes are written as the JSON tokens zarr-python uses."""
    a = zarrfast.create_array(store, shape=(2,), dtype="i1")
    a.attrs["nan"] = float("nan")
    a.attrs["inf"] = [float("inf"), -float("inf")]
    b = zarrfast.open_array(store, mode="r")
    assert math.isnan(b.attrs["nan"])
    assert b.attrs["inf"] == [math.inf, -math.inf]
    assert b"NaN" in store.get("zarr.json")


def test_attribute_update_keeps_chunks(store: zarrfast.Store) -> None:
    """Attribute writes rewrite metadata only; chunks stay."""
    a = zarrfast.create_array(store, chunks=(2,), data=np.array([1, 2, 3, 4], dtype="i2"))
    a.attrs["k"] = 1
    same(zarrfast.open_array(store, mode="r")[:], np.array([1, 2, 3, 4], "i2"))


def test_dimension_names(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="d", shape=(2, 3, 4), dtype="u1",
                              dimension_names=["t", None, "x"])
    assert a.dimension_names == ("t", None, "x")
    assert json.loads(store.get("d/zarr.json"))["dimension_names"] == ["t", None, "x"]
    assert zarrfast.open_array(store, path="d").dimension_names == ("t", None, "x")
    b = zarrfast.create_array(store, name="e", shape=(2,), dtype="u1")
    assert b.dimension_names is None
    assert "dimension_names" not in json.loads(store.get("e/zarr.json"))
    for bad in (["t"], ["a", "b", "c", "d"], ["t", 1, "x"]):
        with pytest.raises(MetadataValidationError, match="dimension_names"):
            zarrfast.create_array(store, name="f", shape=(2, 3, 4), dtype="u1",
                                  dimension_names=bad)
    assert not store.exists("f/zarr.json")


def test_resize_shrink_deletes_chunks_and_grow(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(10, 4), chunks=(3, 2), dtype="i4", fill_value=-1)
    data = np.arange(40, dtype="i4").reshape(10, 4)
    a[...] = data
    assert len(chunk_keys(store)) == 4 * 2
    a.resize((4, 4))
    assert a.shape == (4, 4)
    # rows 0-3 live in chunk rows 0 and 1; chunk rows 2 and 3 are gone
    assert chunk_keys(store) == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    same(a[...], data[:4])
    assert zarrfast.open_array(store).shape == (4, 4)
    a.resize((4, 1))
    assert chunk_keys(store) == ["c/0/0", "c/1/0"]
    same(a[...], data[:4, :1])
    a.resize((12, 5))
    assert a.shape == (12, 5) and a.cdata_shape == (4, 3)
    r = zarrfast.open_array(store, mode="r")
    assert r.shape == (12, 5)
    got = r[...]
    # regions whose chunks were deleted read as fill
    same(got[6:], np.full((6, 5), -1, "i4"))
    same(got[:, 2:], np.full((12, 3), -1, "i4"))
    same(got[:4, :1], data[:4, :1])
    a[10:, 4] = 5
    same(a[10:, 4], np.array([5, 5], "i4"))


def test_resize_rejects_bad_shapes(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, shape=(3, 3), dtype="u1")
    for bad in ((3,), (3, 3, 3), (-1, 3)):
        with pytest.raises(ZarrfastError):
            a.resize(bad)
    assert zarrfast.open_array(store).shape == (3, 3)


def test_resize_to_zero_and_back(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, chunks=(2,), data=np.array([1, 2, 3, 4, 5], dtype="u1"))
    a.resize(0)
    assert a.shape == (0,) and chunk_keys(store) == []
    same(a[:], np.zeros(0, "u1"))
    a.resize(3)
    same(a[:], np.zeros(3, "u1"))


def test_array_properties(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="p", shape=(7, 5), chunks=(3, 5), dtype=">f4",
                              fill_value=0.5)
    assert a.shape == (7, 5) and a.chunks == (3, 5) and a.ndim == 2
    assert a.dtype == np.dtype("f4") and a.dtype.isnative
    assert a.size == 35 and a.nbytes == 140
    assert a.cdata_shape == (3, 1) and a.nchunks == 3
    assert a.fill_value == np.float32(0.5)
    assert a.zarr_format == 3 and a.shards is None
    assert a.nchunks_initialized == 0
    a[0] = 1
    assert a.nchunks_initialized == 1
    assert "p" in repr(a)
