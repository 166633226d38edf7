"""Issue 41, class 4: a Python scalar that the array's data type cannot hold is refused as
NumPy 2 refuses it (``x[:] = 300`` into uint8: ``OverflowError``; NaN into an integer
array: ``ValueError``), naming the array, the value and the dtype, and nothing is written.
Every write entry point, v2 and v3, sharded and not.  NumPy scalars and arrays keep
NumPy's casts (an array of values is cast unsafely, as NumPy and zarr-python 3.1.6 do).

The oracle is NumPy itself: the same assignment into a NumPy array of the same dtype.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _numpy_outcome(dtype: str, value, shape=(6,)):
    """What NumPy does for ``x[...] = value``: ("raises", type) or ("stores", bytes)."""
    x = np.full(shape, 7, dtype=dtype) if np.dtype(dtype).kind != "V" else np.zeros(shape, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            x[...] = value
        except Exception as e:  # noqa: BLE001 (any type NumPy raises is the oracle)
            return "raises", type(e)
    return "stores", x


LAYOUTS = {
    "v2": dict(zarr_format=2, chunks=(4,)),
    "v3": dict(zarr_format=3, chunks=(4,)),
    "v3-sharded": dict(zarr_format=3, chunks=(2,), shards=(4,)),
}


def _make(tmp_path: Path, layout: str, dtype: str, name: str = "arr"):
    a = zarrfast.create_array(tmp_path / "root.zarr", name=name, shape=(6,), dtype=dtype,
                              fill_value=0, **LAYOUTS[layout])
    a[:] = np.full(6, 7, dtype=dtype)
    return a


def _write(a, how: str, value) -> None:
    idx = np.arange(6)
    if how == "a[...]":
        a[...] = value
    elif how == "a[:]":
        a[:] = value
    elif how == "a[2:5]":
        a[2:5] = value
    elif how == "a[3]":
        a[3] = value
    elif how == "set_basic_selection":
        a.set_basic_selection(slice(1, 4), value)
    elif how == "oindex":
        a.oindex[idx] = value
    elif how == "set_orthogonal_selection":
        a.set_orthogonal_selection((idx,), value)
    elif how == "vindex":
        a.vindex[idx] = value
    elif how == "set_coordinate_selection":
        a.set_coordinate_selection((idx,), value)
    elif how == "vindex mask":
        a.vindex[np.ones(6, dtype=bool)] = value
    elif how == "set_mask_selection":
        a.set_mask_selection(np.ones(6, dtype=bool), value)
    elif how == "blocks":
        a.blocks[0] = value
    elif how == "set_block_selection":
        a.set_block_selection(0, value)
    elif how == "a[int list]":  # NumPy-style mixed indexing (the "numpy" plan)
        a[[0, 2, 4], ...] = value
    elif how == "a[mask]":
        a[np.ones(6, dtype=bool)] = value
    else:  # pragma: no cover
        raise AssertionError(how)


ENTRY_POINTS = ["a[...]", "a[:]", "a[2:5]", "a[3]", "set_basic_selection", "oindex",
                "set_orthogonal_selection", "vindex", "set_coordinate_selection", "vindex mask",
                "set_mask_selection", "blocks", "set_block_selection", "a[int list]", "a[mask]"]

# (dtype, Python scalar, what NumPy 2 raises)
BAD = [("uint8", 300, OverflowError), ("uint8", -1, OverflowError),
       ("int32", float("nan"), ValueError), ("int32", 1e20, OverflowError),
       ("int32", float("inf"), OverflowError), ("int64", 2**63, OverflowError),
       ("uint64", -1, OverflowError), ("int8", 1j, TypeError)]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("how", ENTRY_POINTS)
@pytest.mark.parametrize(("dtype", "value", "error"), BAD,
                         ids=[f"{d}-{v!r}" for d, v, _ in BAD])
def test_an_out_of_range_python_scalar_raises_as_numpy_and_writes_nothing(
        tmp_path, layout, how, dtype, value, error):
    assert _numpy_outcome(dtype, value) == ("raises", error)  # the oracle, checked
    a = _make(tmp_path, layout, dtype)
    before = _files(tmp_path)
    with pytest.raises(error) as e:
        _write(a, how, value)
    message = str(e.value)
    assert "arr" in message and repr(value) in message and dtype in message, message
    assert _files(tmp_path) == before
    assert a[:].tolist() == [7] * 6


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_numpy_scalars_and_arrays_keep_numpys_casts(tmp_path, layout):
    a = _make(tmp_path, layout, "uint8")
    a[:] = np.int64(300)  # NumPy 2 wraps a NumPy integer scalar into uint8
    assert a[:].tolist() == [44] * 6
    a[:] = np.array([300, 301, 302, 303, 304, 305])  # an array: NumPy's unsafe cast
    assert a[:].tolist() == [44, 45, 46, 47, 48, 49]
    a[:] = np.array(-1)  # a 0-d array, too
    assert a[:].tolist() == [255] * 6
    b = _make(tmp_path, layout, "int8", name="b")
    with pytest.raises(OverflowError, match="int8"):  # ... but not into int8: NumPy raises
        b[:] = np.int64(300)
    assert b[:].tolist() == [7] * 6
    # a list of Python ints is not an array: NumPy (and zarr-python) raise
    before = _files(tmp_path)
    with pytest.raises(OverflowError, match="300"):
        a[:] = [300, 1, 2, 3, 4, 5]
    assert _files(tmp_path) == before


def test_arrays_of_values_are_cast_as_zarr_python_casts_them(tmp_path):
    import zarr

    values = [np.array([300, -1, 2**20, 5, 6, 7]), np.array([1e20, -3.7, np.nan, 255.9, 0, 1])]
    for value in values:
        z = zarr.create_array(str(tmp_path / f"z{len(str(value))}"), shape=(6,), chunks=(4,),
                              dtype="uint8")
        a = zarrfast.create_array(tmp_path / f"a{len(str(value))}", shape=(6,), chunks=(4,),
                                  dtype="uint8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z[:] = value
            a[:] = value
        assert a[:].tobytes() == z[:].tobytes()
    # ... and a Python list of ints out of range is refused by both
    with pytest.raises(OverflowError):
        z[:] = [300, 1, 2, 3, 4, 5]
    before = _files(tmp_path)
    with pytest.raises(OverflowError, match="uint8"):
        a[:] = [300, 1, 2, 3, 4, 5]
    assert _files(tmp_path) == before


_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
           "float16", "float32", "float64", "bool", "complex64", "datetime64[s]",
           "timedelta64[ms]"]
_PY_VALUES = st.one_of(
    st.integers(-(2**70), 2**70), st.integers(-300, 300),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e10))
_NP_SCALARS = st.tuples(
    st.sampled_from([np.int64, np.uint16, np.int8, np.float64, np.float32, np.bool_]),
    st.integers(-(2**15), 2**15) | st.floats(allow_nan=True, allow_infinity=True)
).map(lambda t: _np_scalar(*t)).filter(lambda v: v is not None)


def _np_scalar(cls, v):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cls(v)
        except (OverflowError, ValueError):
            return None


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(_DTYPES), value=_PY_VALUES | _NP_SCALARS,
       layout=st.sampled_from(list(LAYOUTS)),
       how=st.sampled_from(["a[:]", "a[3]", "oindex", "vindex", "blocks", "a[int list]"]))
def test_any_scalar_into_any_dtype_does_what_numpy_does(tmp_path_factory, dtype, value, layout,
                                                        how):
    tmp = tmp_path_factory.mktemp("h")
    a = zarrfast.create_array(tmp / "root.zarr", name="arr", shape=(6,), dtype=dtype,
                              fill_value=0, **LAYOUTS[layout])
    start = np.full(6, 7, dtype=dtype) if np.dtype(dtype).kind != "M" else np.full(
        6, np.datetime64(7, "s"), dtype=dtype)
    a[:] = start
    before = _files(tmp)
    expected = start.copy()
    sel = {"a[:]": slice(None), "a[3]": 3, "oindex": slice(None), "vindex": slice(None),
           "blocks": slice(0, 4),  # (a block of a sharded array is a shard)
           "a[int list]": [0, 2, 4]}[how]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # NumPy's basic assignment ``x[...] = value`` is the rule at every entry point
        # (NumPy's own fancy assignment wraps some NumPy scalars its basic one refuses)
        cell = np.empty((), dtype=dtype)
        try:
            cell[...] = value
            raised = None
        except Exception as e:  # noqa: BLE001 (any type NumPy raises is the oracle)
            raised = type(e)
        else:
            expected[sel] = cell
        if raised is None:
            _write(a, how, value)
            assert a[:].tobytes() == expected.tobytes()
        else:
            with pytest.raises(raised) as e:
                _write(a, how, value)
            assert "arr" in str(e.value) and dtype in str(e.value)
            assert _files(tmp) == before


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("fill", "error"), [(300, OverflowError), (-1, OverflowError),
                                             (256, OverflowError), (float("nan"), ValueError)])
@pytest.mark.parametrize("how", ["create_array", "full"])
def test_a_fill_value_out_of_range_is_refused_as_zarr_python_refuses_it(
        tmp_path, zarr_format, fill, error, how):
    import zarr

    with pytest.raises(error):  # what zarr-python 3.1.6 does
        zarr.create_array({}, shape=(3,), dtype="uint8", fill_value=fill,
                          zarr_format=zarr_format)
    with pytest.raises(error) as e:
        if how == "full":
            zarrfast.full((3,), fill_value=fill, dtype="uint8", store=tmp_path / "x",
                          zarr_format=zarr_format)
        else:
            zarrfast.create_array(tmp_path / "x", shape=(3,), dtype="uint8", fill_value=fill,
                                  zarr_format=zarr_format)
    assert "fill_value" in str(e.value) and "uint8" in str(e.value), str(e.value)
    assert "'/'" in str(e.value), str(e.value)  # the node
    assert _files(tmp_path) == {}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_structured_field_refuses_a_scalar_out_of_range(tmp_path, zarr_format):
    dt = np.dtype([("a", "u1"), ("b", "f4")])
    a = zarrfast.create_array(tmp_path / "root.zarr", name="s", shape=(4,), chunks=(2,),
                              dtype=dt, zarr_format=zarr_format)
    a[:] = np.array([(1, 1.5)] * 4, dtype=dt)
    before = _files(tmp_path)
    for write in (lambda: a.__setitem__("a", 300),
                  lambda: a.set_basic_selection(slice(None), 300, fields="a"),
                  lambda: a.set_orthogonal_selection(([0, 1],), 300, fields="a"),
                  lambda: a.set_coordinate_selection(([0, 1],), -1, fields="a")):
        with pytest.raises(OverflowError) as e:
            write()
        assert "/s'" in str(e.value) and "uint8" in str(e.value), str(e.value)
    assert _files(tmp_path) == before


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_append_refuses_values_out_of_range_before_growing(tmp_path, zarr_format):
    a = zarrfast.create_array(tmp_path / "root.zarr", name="g", shape=(4,), chunks=(2,),
                              dtype="uint8", zarr_format=zarr_format)
    a[:] = [1, 2, 3, 4]
    before = _files(tmp_path)
    with pytest.raises(OverflowError) as e:
        a.append([300, 5])
    assert "/g'" in str(e.value) and "300" in str(e.value) and "uint8" in str(e.value)
    assert _files(tmp_path) == before
    assert zarrfast.open_array(tmp_path / "root.zarr", path="g").shape == (4,)
