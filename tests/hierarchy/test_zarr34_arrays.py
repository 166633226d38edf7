"""What zarr-python 3.4's own array tests use of an array, as zarr-python does it: reads
into zarr-python's ``NDBuffer`` (``out=``), ``_nshards_initialized``, and ``from_array``'s
copied attributes that do not alias the source's."""

from __future__ import annotations

import asyncio
import textwrap

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
        out = [a._nshards, a._nshards_initialized]
        a[:4, :4] = 1
        a[6, 6] = 1
        out += [a._nshards_initialized, asyncio.run(a.async_array._nshards_initialized()),
                a.nchunks_initialized]
        emit(out)
    """)
    a = zarrfast.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="u1")
    ours = [a._nshards, a._nshards_initialized]
    a[:4, :4] = 1
    a[6, 6] = 1
    ours += [a._nshards_initialized, asyncio.run(a.async_array._nshards_initialized()),
             a.nchunks_initialized]
    assert ours == theirs == [4, 0, 2, 2, 8]


def test_from_array_attributes_do_not_alias_the_source() -> None:
    attributes = {"units": "K", "nested": {"x": [1]}, "tags": ["a"]}
    src = zarrfast.create_array({}, name="src", shape=(4,), dtype="int32", fill_value=42,
                                attributes=attributes)
    result = zarrfast.from_array({}, data=src)
    assert dict(result.attrs) == attributes and result.fill_value == 42
    result.attrs["nested"]["x"].append(99)
    result.attrs["tags"].append("b")
    assert src.attrs["nested"] == {"x": [1]} and src.attrs["tags"] == ["a"]


_NO_DTYPE = """
def no_dtype(lib):
    g = lib.group({})
    calls = {"create_array": lambda: lib.create_array({}, shape=(3,)),
             "Group.create_array": lambda: g.create_array("c", shape=(3,)),
             "Group.require_array": lambda: g.require_array("r", shape=(3,)),
             "Group.zeros": lambda: g.zeros(name="z", shape=(3,)),
             "Group.ones": lambda: g.ones(name="o", shape=(3,)),
             "Group.empty": lambda: g.empty(name="e", shape=(3,)),
             "Group.full": lambda: g.full(name="f", shape=(3,), fill_value=2),
             "zeros": lambda: lib.zeros((3,)), "create": lambda: lib.create((3,))}
    out = {}
    for name, call in calls.items():
        try:
            out[name] = str(call().dtype)
        except ValueError as e:
            out[name] = "dtype was not specified" in str(e)
    return out
"""


def test_a_missing_dtype_as_zarr_python(zarr_peer) -> None:
    """``create_array`` (and ``Group.create_array``/``require_array``) need data or a
    dtype, as in zarr-python 3.4; ``zeros``, ``create`` and the groups' ``zeros``,
    ``ones``, ``empty``, ``full`` default to float64."""
    theirs = zarr_peer.run(_NO_DTYPE + "\nimport zarr\nemit(no_dtype(zarr))\n")
    namespace: dict = {}
    exec(_NO_DTYPE, namespace)
    assert namespace["no_dtype"](zarrfast) == theirs
    assert theirs["create_array"] is True and theirs["Group.zeros"] == "float64"


_FROM_ARRAY = """
import json, warnings
import numpy as np


def copies(lib):
    out = []
    for src_format, new_format in ((2, None), (2, 2), (3, None), (3, 3), (2, 3), (3, 2)):
        kw = ({"dimension_separator": "/"} if src_format == 2
              else {"chunk_key_encoding": ("default", ".")})
        src = lib.create((6, 6), chunks=(2, 3), store={}, zarr_format=src_format, **kw)
        src[:] = np.arange(36).reshape(6, 6)
        result = lib.from_array({}, data=src, zarr_format=new_format)
        doc = result.metadata.to_dict()
        out.append([doc.get("chunk_key_encoding"), doc.get("dimension_separator"),
                    result.metadata == src.metadata, result[:].tolist() == src[:].tolist()])
    f = lib.create((4, 4), chunks=(2, 2), store={}, zarr_format=2, order="F")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = lib.from_array({}, data=f, zarr_format=3)
    out.append([type(w.message).__name__ for w in caught if "order" in str(w.message)])
    out.append(lib.from_array({}, data=f).order)
    return out
"""


def test_from_array_keeps_chunk_key_encoding_and_order_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run(_FROM_ARRAY + "\nimport zarr\nemit(copies(zarr))\n")
    namespace: dict = {}
    exec(_FROM_ARRAY, namespace)
    assert namespace["copies"](zarrfast) == theirs
    assert theirs[-2:] == [["ZarrUserWarning"], "F"]


def test_indexing_with_an_array_as_the_index(zarr_peer) -> None:
    """An index or mask stored as an array selects as the NumPy array it holds, as in
    zarr-python (GH2133): ``a[ix]``, ``a.oindex[ix]``, ``a.vindex[ix]`` and writes."""
    script = """
        import numpy as np
        store = lib.storage.MemoryStore()
        za = lib.array(np.arange(10), chunks=2, store=store, path="a")
        zix = lib.array([False, True] * 5, chunks=2, store=store, dtype="bool", path="ix")
        zii = lib.array([0, 2, 4, 5], chunks=2, store=store, dtype="i4", path="ii")
        out = [za[zix].tolist(), za.oindex[zix].tolist(), za.vindex[zix].tolist(),
               za[zii].tolist(), za.oindex[zii].tolist()]
        za[zii] = 0
        out.append(za[:].tolist())
        RESULT = out
    """
    theirs = zarr_peer.run("import zarr as lib\n" + textwrap.dedent(script)
                           + "emit(RESULT)\n")
    namespace: dict = {"lib": zarrfast}
    exec(textwrap.dedent(script), namespace)
    assert namespace["RESULT"] == theirs
