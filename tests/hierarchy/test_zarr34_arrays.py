"""What zarr-python 3.4's own array tests use of an array, as zarr-python does it: reads
into zarr-python's ``NDBuffer`` (``out=``), ``_nshards_initialized``, and ``from_array``'s
copied attributes that do not alias the source's."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import zarrfast

zarr = pytest.importorskip("zarr")


def _nd_buffer(shape, dtype):
    from zarr.core.buffer import default_buffer_prototype

    return default_buffer_prototype().nd_buffer.from_numpy_array(np.empty(shape, dtype))


@pytest.mark.parametrize("method, selection, shape", [
    ("get_basic_selection", (slice(1, 3), slice(None, None, 2)), (2, 3)),
    ("get_orthogonal_selection", ([2, 0], [1, 3]), (2, 2)),
    ("get_coordinate_selection", ([0, 2], [1, 3]), (2,)),
    ("get_block_selection", (1, 0), (2, 3)),
])
def test_reads_into_zarr_pythons_nd_buffer(method, selection, shape) -> None:
    a = zarrfast.create_array({}, shape=(4, 6), chunks=(2, 3), dtype="int64")
    a[:] = np.arange(24).reshape(4, 6)
    out = _nd_buffer(shape, "int64")
    result = getattr(a, method)(selection, out=out)
    expected = getattr(a, method)(selection)
    np.testing.assert_array_equal(out.as_numpy_array(), expected)
    np.testing.assert_array_equal(result, expected)
    mask = np.zeros((4, 6), bool)
    mask[1, 2] = mask[3, 5] = True
    out = _nd_buffer((2,), "int64")
    a.get_mask_selection(mask, out=out)
    assert out.as_numpy_array().tolist() == [8, 23]


def test_nshards_initialized(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr, asyncio
        a = zarr.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u1")
        out = [a._nshards_initialized]
        a[:4, :4] = 1
        a[6, 6] = 1
        out += [a._nshards_initialized, asyncio.run(a.async_array._nshards_initialized()),
                a.nchunks_initialized]
        emit(out)
    """)
    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u1")
    ours = [a._nshards_initialized]
    a[:4, :4] = 1
    a[6, 6] = 1
    ours += [a._nshards_initialized, asyncio.run(a.async_array._nshards_initialized()),
             a.nchunks_initialized]
    assert ours == theirs == [0, 2, 2, 8]


def test_from_array_attributes_do_not_alias_the_source() -> None:
    attributes = {"units": "K", "nested": {"x": [1]}, "tags": ["a"]}
    src = zarrfast.create_array({}, name="src", shape=(4,), dtype="int32", fill_value=42,
                                attributes=attributes)
    result = zarrfast.from_array({}, data=src)
    assert dict(result.attrs) == attributes and result.fill_value == 42
    result.attrs["nested"]["x"].append(99)
    result.attrs["tags"].append("b")
    assert src.attrs["nested"] == {"x": [1]} and src.attrs["tags"] == ["a"]
