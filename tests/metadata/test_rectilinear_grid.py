"""The rectilinear chunk grid's metadata (zarr-extensions ``chunk-grids/rectilinear``):
every form the spec allows parses, the run-length encoding written back is the one
zarr-python 3.4 writes, and bad grids fail naming the node and the value."""

from __future__ import annotations

import json

import pytest

import zarrfast
from zarrfast.errors import MetadataValidationError
from zarrfast.metadata.chunk_grid import (
    RectilinearChunkGrid,
    RegularChunkGrid,
    parse_chunk_grid,
)
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import MemoryStore


def _grid(shapes):
    return {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}}


def _doc(shape, shapes, **extra):
    return {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
            "chunk_grid": _grid(shapes), "chunk_key_encoding": {"name": "default"},
            "fill_value": 0, "codecs": [{"name": "bytes"}], **extra}


def test_spec_example_every_form():
    # the spec's example: integer, explicit list, run, run + explicit, overflow
    doc = _doc([6, 6, 6, 6, 6], [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]])
    md = ArrayMetadata.from_dict(doc, path="x")
    grid = md.chunk_grid
    assert isinstance(grid, RectilinearChunkGrid)
    assert grid.chunk_shapes == (4, (1, 2, 3), (4, 4), (1, 1, 1, 3), (4, 4, 4))
    shape = md.shape
    assert [grid.edges(d, n) for d, n in enumerate(shape)] == [
        (4, 4), (1, 2, 3), (4, 4), (1, 1, 1, 3), (4, 4)]  # overflow chunk 2 holds no data
    assert grid.grid_shape(shape) == (2, 3, 2, 4, 2)
    assert grid.chunk_sizes(shape) == ((4, 2), (1, 2, 3), (4, 2), (1, 1, 1, 3), (4, 2))
    # written back: the integer stays an integer, lists are run-length encoded
    assert md.to_dict()["chunk_grid"] == _grid(
        [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [[4, 3]]])
    # and reads back to the same grid
    assert ArrayMetadata.from_dict(md.to_dict()).chunk_grid == grid


@pytest.mark.parametrize(("sizes", "written"), [
    # what zarr-python 3.4.2 writes for create_array(chunks=[sizes]) on shape (sum,)
    ([3, 7], [3, 7]),
    ([5, 5, 10], [[5, 2], 10]),
    ([10] * 10, [[10, 10]]),
    ([10], [10]),
    ([1] * 10, [[1, 10]]),
    ([2, 2, 3, 3], [[2, 2], [3, 2]]),
    ([1, 1, 2, 1, 1, 4], [[1, 2], 2, [1, 2], 4]),
    ([3, 3, 3, 1], [[3, 3], 1]),
])
def test_run_length_encoding_as_zarr_python(sizes, written):
    grid = RectilinearChunkGrid((tuple(sizes),))
    assert grid.to_dict()["configuration"]["chunk_shapes"] == [written]
    assert parse_chunk_grid(grid.to_dict()) == grid


def test_create_array_nested_chunks_writes_zarr_pythons_document():
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(10, 20), chunks=[[3, 7], [5, 5, 10]], dtype="i2")
    doc = json.loads(bytes(store.get("zarr.json")))
    assert doc["chunk_grid"] == _grid([[3, 7], [[5, 2], 10]])
    assert a.read_chunk_sizes == ((3, 7), (5, 5, 10))
    assert a.cdata_shape == (2, 3)
    assert a.nchunks == 6
    with pytest.raises(NotImplementedError):
        a.chunks  # noqa: B018 - as zarr-python: no single chunk shape
    b = zarrfast.create_array(MemoryStore(), shape=(100,), chunks=[[10] * 10], dtype="u1")
    assert b.metadata.to_dict()["chunk_grid"] == _grid([[[10, 10]]])
    # an integer among the lists stays an integer
    c = zarrfast.create_array(MemoryStore(), shape=(10, 20), chunks=[[3, 7], 5], dtype="u1")
    assert c.metadata.to_dict()["chunk_grid"] == _grid([[3, 7], 5])
    # flat chunks stay regular
    d = zarrfast.create_array(MemoryStore(), shape=(10,), chunks=[5], dtype="u1")
    assert isinstance(d.metadata.chunk_grid, RegularChunkGrid)


def test_create_array_rectilinear_shards():
    store = MemoryStore()
    a = zarrfast.create_array(store, shape=(10, 20), shards=[[4, 6], [10, 10]], chunks=(2, 5),
                              dtype="i4")
    doc = json.loads(bytes(store.get("zarr.json")))
    assert doc["chunk_grid"] == _grid([[4, 6], [[10, 2]]])
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    assert doc["codecs"][0]["configuration"]["chunk_shape"] == [2, 5]
    assert a.chunks == (2, 5)
    with pytest.raises(NotImplementedError):
        a.shards  # noqa: B018
    assert a.write_chunk_sizes == ((4, 6), (10, 10))
    assert a.read_chunk_sizes == ((2,) * 5, (5,) * 4)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(chunks=[[4, 4]]), "sums to 8"),
    (dict(chunks=[[4, 4, 4]]), "sums to 12"),
    (dict(chunks=[[4, 0, 6]]), "[4, 0, 6]"),
    (dict(chunks=[[-1, 11]]), "[-1, 11]"),
    (dict(chunks=[[5.0, 5]]), "[5.0, 5]"),
    (dict(chunks=[[3, 7], [5]]), "one entry per dimension"),
    (dict(shards=[[3, 7]], chunks=(2,)), "edge length 3"),
    (dict(shards=[[4, 6]], chunks=[[2, 8]]), "rectilinear chunks with sharding"),
])
def test_create_refuses(kwargs, message):
    with pytest.raises(zarrfast.errors.ZarrfastError) as e:
        zarrfast.create_array(MemoryStore(), name="arr", shape=(10,), dtype="u1", **kwargs)
    assert message in str(e.value)
    assert "arr" in str(e.value)


@pytest.mark.parametrize(("shape", "shapes", "message"), [
    ([10, 6], [[4, 4], 6], "sums to 8, short of the array's length 10"),
    ([10, 6], [[4, 4, 4]], "1 dimensions but shape [10, 6] has 2"),
    ([10, 6], [[4, 4, 4], 4, 4], "3 dimensions"),
    ([10], [[4, 4, 0]], "chunk_shapes[0][2]: edge length must be >= 1, got 0"),
    ([10], [[[4, 0]], 6], "[4, 0]"),
    ([10], [0], "chunk_shapes[0]: edge length must be >= 1, got 0"),
    ([10], [[[2, 2, 2]]], "[2, 2, 2]"),
    ([10], [[True, 10]], "True"),
    ([10], ["x"], "'x'"),
    ([10], [[]], "no edge lengths"),
    ([10], "x", "must be a list"),
])
def test_bad_grids_name_node_and_value(shape, shapes, message):
    with pytest.raises(MetadataValidationError) as e:
        ArrayMetadata.from_dict(_doc(shape, shapes), path="grp/arr")
    assert message in str(e.value)
    assert "'grp/arr'" in str(e.value)


@pytest.mark.parametrize(("config", "message"), [
    ({"chunk_shapes": [10]}, "kind is required"),
    ({"kind": "other", "chunk_shapes": [10]}, "'other'"),
    ({"kind": "inline"}, "chunk_shapes is required"),
    ({"kind": "inline", "chunk_shapes": [10], "x": 1}, "['x']"),
])
def test_bad_configuration(config, message):
    doc = _doc([10], [10])
    doc["chunk_grid"]["configuration"] = config
    with pytest.raises(MetadataValidationError) as e:
        ArrayMetadata.from_dict(doc, path="a")
    assert message in str(e.value)


def test_resize_appends_the_missing_length_as_zarr_python():
    grid = RectilinearChunkGrid(((3, 7), (5, 5, 10)))
    assert grid.resized((10, 20), (12, 20)).chunk_shapes == ((3, 7, 2), (5, 5, 10))
    # shrinking keeps every size (the last chunks overflow the shape)
    assert grid.resized((10, 20), (2, 6)) == grid
    # growing within the sizes' sum keeps them too
    shrunk = RectilinearChunkGrid(((3, 7, 2), (5, 5, 10, 7)))
    assert shrunk.resized((2, 6), (2, 27)) == shrunk
    assert shrunk.resized((2, 6), (2, 30)).chunk_shapes[1] == (5, 5, 10, 7, 3)
    # an integer step is kept as it is
    assert RectilinearChunkGrid((4,)).resized((6,), (14,)).chunk_shapes == (4,)
    md = ArrayMetadata.from_dict(_doc([10, 6], [[4, 4, 4], 4]))
    assert md.update_shape((14, 9)).to_dict()["chunk_grid"] == _grid([[[4, 3], 2], 4])
