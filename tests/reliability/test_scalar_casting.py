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


# -- creating an array with data (review: data=[300, 1] was cast unsafely) -------------------

#: every creation path that takes ``data`` together with a dtype (``name`` is the array)
CREATORS = {
    "create": lambda s, data, **kw: zarrfast.create(
        shape=(2,), dtype="uint8", data=data, store=s, path="x", **kw),
    "array": lambda s, data, **kw: zarrfast.array(data, dtype="uint8", store=s, name="x", **kw),
    "open_array w": lambda s, data, **kw: zarrfast.open_array(
        s, path="x", mode="w", shape=(2,), dtype="uint8", data=data, **kw),
    "open_array a": lambda s, data, **kw: zarrfast.open_array(
        s, path="x", mode="a", shape=(2,), dtype="uint8", data=data, **kw),
    "open_array legacy": lambda s, data, **kw: zarrfast.open_array(
        s, path="x", mode="w", shape=(2,), dtype="uint8", data=data, chunk_shape=(1,), **kw),
    "empty_like": lambda s, data, **kw: zarrfast.empty_like(
        np.zeros(2, "uint8"), data=data, store=s, path="x", **kw),
    "zeros_like": lambda s, data, **kw: zarrfast.zeros_like(
        np.zeros(2, "uint8"), data=data, store=s, path="x", **kw),
    "full_like": lambda s, data, **kw: zarrfast.full_like(
        np.zeros(2, "uint8"), fill_value=0, data=data, store=s, path="x", **kw),
}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("creator", list(CREATORS))
@pytest.mark.parametrize(("data", "error"), [([300, 1], OverflowError), ([-1, 1], OverflowError),
                                             (300, OverflowError)],
                         ids=["[300, 1]", "[-1, 1]", "300"])
def test_creating_with_data_refuses_python_ints_out_of_range_and_creates_nothing(
        tmp_path, zarr_format, creator, data, error):
    if creator == "array" and np.ndim(data) == 0:
        pytest.skip("array(300) makes a 0-d array: covered by its own shape")
    assert _numpy_outcome("uint8", data, shape=(2,))[0] == "raises"  # the oracle
    store = tmp_path / "root.zarr"
    with pytest.raises(error) as e:
        CREATORS[creator](store, data, zarr_format=zarr_format)
    message = str(e.value)
    assert "'/x'" in message and "uint8" in message, message
    assert not (store / "x").exists()
    if creator == "open_array a":
        return  # (an array already there is opened, its data ignored, as in zarr-python)
    # ... and an array already there (overwritten in mode 'w') is left as it was
    old = zarrfast.create_array(store, name="x", shape=(2,), dtype="uint8",
                                zarr_format=zarr_format)
    old[:] = [5, 6]
    before = _files(tmp_path)
    with pytest.raises(error):
        kw = {"overwrite": True} if creator in ("create", "array") or creator.endswith(
            "_like") else {}
        CREATORS[creator](store, data, zarr_format=zarr_format, **kw)
    assert _files(tmp_path) == before
    assert zarrfast.open_array(store, path="x")[:].tolist() == [5, 6]


@pytest.mark.parametrize("creator", ["create", "open_array w", "open_array a", "zeros_like"])
def test_creating_with_a_list_refuses_what_zarr_python_refuses(tmp_path, creator):
    import zarr

    for data, error in (([300, 1], OverflowError), ([np.nan, 1.0], ValueError)):
        with pytest.raises(error):  # zarr-python 3.1.6: the same cases (the oracle, run)
            {"create": lambda d: zarr.create(shape=(2,), dtype="int8", data=d, store={}),
             "open_array w": lambda d: zarr.open_array({}, mode="w", shape=(2,),
                                                       dtype="int8", data=d),
             "open_array a": lambda d: zarr.open_array({}, mode="a", shape=(2,),
                                                       dtype="int8", data=d),
             "zeros_like": lambda d: zarr.zeros_like(np.zeros(2, "int8"), data=d, store={}),
             }[creator](data)
        with pytest.raises(error) as e:
            CREATORS[creator](tmp_path / "root.zarr", data)
        assert "'/x'" in str(e.value), str(e.value)
        assert not (tmp_path / "root.zarr" / "x").exists()


def test_creating_with_an_ndarray_keeps_numpys_cast_as_zarr_python_does(tmp_path):
    import zarr

    value = np.array([300, 1])
    z = zarr.create(shape=(2,), dtype="uint8", data=value, store={})
    for creator in CREATORS:
        a = CREATORS[creator](tmp_path / creator.replace(" ", "_"), value)
        assert a[:].tolist() == z[:].tolist() == [44, 1], creator
    # a list without a dtype takes NumPy's: nothing to cast
    g = zarrfast.open_group(tmp_path / "g", mode="w")
    assert g.create_array("y", data=[300, 1])[:].tolist() == [300, 1]
    assert zarrfast.from_array(tmp_path / "f", data=[300, 1])[:].tolist() == [300, 1]


# -- string and bytes arrays (review: values were not converted before chunks were written) ---

_T = np.dtypes.StringDType() if hasattr(np.dtypes, "StringDType") else None

#: the NumPy selection each entry point writes (blocks: the first chunk or shard, 4 long)
_NP_SEL = {"a[...]": Ellipsis, "a[:]": slice(None), "a[2:5]": slice(2, 5), "a[3]": 3,
           "set_basic_selection": slice(1, 4), "oindex": slice(None),
           "set_orthogonal_selection": slice(None), "vindex": slice(None),
           "set_coordinate_selection": slice(None), "vindex mask": slice(None),
           "set_mask_selection": slice(None), "blocks": slice(0, 4),
           "set_block_selection": slice(0, 4), "a[int list]": [0, 2, 4],
           "a[mask]": slice(None)}

_MIXED = ["s0", 5, "s2", None, 1.5, b"ab"]


def _make_text(tmp_path: Path, layout: str, kind: str):
    dtype = str if kind == "str" else bytes
    a = zarrfast.create_array(tmp_path / "root.zarr", name="arr", shape=(6,), dtype=dtype,
                              **LAYOUTS[layout])
    a[:] = np.array(["x"] * 6 if kind == "str" else [b"x"] * 6, dtype=object)
    return a


def _sized(how: str, values: list, scalar):
    """``values`` cut to the size of the selection ``how`` writes; ``scalar`` for ``a[3]``."""
    return scalar if how == "a[3]" else values[:np.empty(6)[_NP_SEL[how]].size]


@pytest.mark.skipif(_T is None, reason="NumPy's StringDType (NumPy 2) is the oracle")
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_a_string_array_stores_any_value_as_numpys_stringdtype_does(tmp_path, layout, how):
    a = _make_text(tmp_path, layout, "str")
    value = _sized(how, _MIXED, 5)
    expected = np.full(6, "x", dtype=_T)
    expected[_NP_SEL[how]] = value  # the oracle: NumPy's str conversion (zarr-python's too)
    _write(a, how, value)
    assert a[:].tolist() == expected.tolist()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_a_value_a_string_array_cannot_hold_is_refused_before_anything_is_written(
        tmp_path, layout, how):
    a = _make_text(tmp_path, layout, "str")
    before = _files(tmp_path)
    # not UTF-8: no str (in the first chunk and the second)
    value = _sized(how, ["ok", "ok", b"\xff", "ok", "ok", b"\xff"], b"\xff")
    with pytest.raises(ValueError) as e:
        _write(a, how, value)
    assert "'/arr'" in str(e.value) and "nothing was written" in str(e.value), str(e.value)
    assert _files(tmp_path) == before
    assert a[:].tolist() == ["x"] * 6


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("how", ENTRY_POINTS)
def test_a_bytes_array_refuses_str_and_numbers_before_anything_is_written(tmp_path, layout, how):
    a = _make_text(tmp_path, layout, "bytes")
    before = _files(tmp_path)
    value = _sized(how, [b"ok", b"ok", "str", b"ok", b"ok", 5], "str")
    with pytest.raises(TypeError) as e:  # zarr-python: TypeError("Expected bytes, got str")
        _write(a, how, value)
    message = str(e.value)
    assert "'/arr'" in message and "bytes" in message and "nothing was written" in message
    assert _files(tmp_path) == before
    assert a[:].tolist() == [b"x"] * 6
    # None is stored as b"" (numcodecs' vlen-bytes, and so zarr-python, store it so)
    value = _sized(how, [None, b"a", None, b"b", bytearray(b"c"), np.bytes_(b"d")], None)
    expected = np.full(6, b"x", dtype=object)
    expected[_NP_SEL[how]] = [b"" if v is None else bytes(v) for v in value] if isinstance(
        value, list) else value or b""
    _write(a, how, value)
    assert a[:].tolist() == expected.tolist()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_append_converts_strings_before_the_array_grows(tmp_path, zarr_format, kind):
    layout = "v2" if zarr_format == 2 else "v3"
    a = _make_text(tmp_path, layout, kind)
    if kind == "str":
        assert a.append(["ok", "ok", 5]) == (9,)  # as zarr-python: '5'
        assert a[6:].tolist() == ["ok", "ok", "5"]
        bad = ["ok", b"\xff"]
    else:
        bad = [b"ok", "s"]
    before = _files(tmp_path)
    with pytest.raises((ValueError, TypeError)) as e:
        a.append(bad)
    assert "'/arr'" in str(e.value)
    assert _files(tmp_path) == before
    assert zarrfast.open_array(tmp_path / "root.zarr", path="arr").shape == a.shape


_ZARR_STRINGS = """
import numpy as np, zarr
out = {}
for fmt in (2, 3):
    for name, how, value in ARGS["cases"]:
        a = zarr.create_array({}, shape=(6,), chunks=(2,), dtype=str, zarr_format=fmt)
        a[:] = np.array(["x"] * 6, dtype=object)
        {"vindex": lambda: a.vindex.__setitem__([0, 2, 5], value),
         "oindex": lambda: a.oindex.__setitem__([0, 2, 5], value),
         "a[:]": lambda: a.__setitem__(slice(None), value),
         "append": lambda: a.append(value)}[how]()
        out[f"{fmt}-{name}"] = a[:].tolist()
emit(out)
"""


def test_string_arrays_store_what_zarr_python_3_1_and_3_4_store(tmp_path, zarr_peer):
    import zarr

    cases = [("ints", "vindex", ["ok", "ok2", 5]), ("none", "oindex", [None, "a", 1.5]),
             ("scalar", "a[:]", 7), ("list", "a[:]", ["a", 1, None, True, 2.5, "z"]),
             ("append", "append", ["ok", "ok", 5])]
    peer = zarr_peer.run(_ZARR_STRINGS, {"cases": cases})
    ns: dict = {"ARGS": {"cases": cases}}
    exec(_ZARR_STRINGS.replace("emit(out)", ""), ns)  # zarr-python 3.1.6, here
    assert ns["out"] == peer
    assert zarr.__version__.startswith("3.1")
    for fmt in (2, 3):
        for name, how, value in cases:
            a = zarrfast.create_array(tmp_path / f"{fmt}{name}", shape=(6,), chunks=(2,),
                                      dtype=str, zarr_format=fmt)
            a[:] = np.array(["x"] * 6, dtype=object)
            if how == "vindex":
                a.vindex[[0, 2, 5]] = value
            elif how == "oindex":
                a.oindex[[0, 2, 5]] = value
            elif how == "a[:]":
                a[:] = value
            else:
                a.append(value)
            assert a[:].tolist() == peer[f"{fmt}-{name}"], (fmt, name)


# -- buffers (review: a memoryview was taken for a scalar) -------------------------------------

@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["uint8", "float64", "int32"])
@pytest.mark.parametrize("buffer", [
    memoryview(bytes(range(1, 7))), memoryview(np.arange(6, dtype="float64") + 0.5),
    bytearray(range(10, 16)), memoryview(np.arange(300, 306, dtype="int64"))],
    ids=["memoryview-bytes", "memoryview-float64", "bytearray", "memoryview-int64"])
def test_a_buffer_is_stored_as_numpy_stores_it(tmp_path, layout, dtype, buffer):
    outcome, expected = _numpy_outcome(dtype, buffer)
    assert outcome == "stores"
    a = _make(tmp_path, layout, dtype)
    for how in ("a[:]", "oindex", "vindex"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _write(a, how, buffer)
        assert a[:].tobytes() == expected.tobytes(), how


@pytest.mark.parametrize("value", [b"12", b"ab"])
def test_bytes_into_numbers_do_what_numpy_does(tmp_path, value):
    outcome = _numpy_outcome("uint8", value)
    a = _make(tmp_path, "v3", "uint8")
    if outcome[0] == "stores":
        a[:] = value
        assert a[:].tobytes() == outcome[1].tobytes()
    else:
        with pytest.raises(outcome[1]):
            a[:] = value
        assert a[:].tolist() == [7] * 6
