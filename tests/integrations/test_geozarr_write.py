"""GeoZarr writing: the downsampling kernels, ``write_dataset`` and ``build_multiscales``.

* Kernels: the compiled ``zarrfast._ext._downsample`` against its NumPy twins in
  ``zarrfast.kernels.downsample`` (same results bit for bit on x86-64, same
  exception types), and both against a brute-force per-block oracle written
  here (Python loops, ``math.fsum``, ``collections.Counter``).
* ``write_dataset``: Zarr v2/v3 round trips read back by zarr-python (and by
  ``xarray.open_zarr`` when xarray is installed), an ``xarray.Dataset`` input, and
  invalid input rejected before anything is written.
* ``build_multiscales``: pyramids of a 2-D and a 3-D ``(time, y, x)`` Dataset --
  structure, every level's values against the oracle applied level from level,
  tile-aligned chunks, ``multiscales`` metadata, the GeoZarr validator, zarr-python
  -- and bad input rejected before anything is written.

Without a built extension the twin is tested alone (against the oracle).
"""

from __future__ import annotations

import collections
import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.geozarr.multiscales import build_multiscales
from zarrfast.geozarr.write import decode_fill_attr, encode_fill_attr, write_dataset
from zarrfast.kernels import downsample as twin

try:
    from zarrfast._ext import _downsample as compiled
except ImportError:  # pragma: no cover - the extension-less job
    compiled = None

try:
    from zarrfast.geozarr.validate import validate
except ImportError:  # pragma: no cover - shipped separately
    validate = None

try:
    import xarray as xr
except ImportError:  # pragma: no cover - optional extra
    xr = None

import zarr

IMPLS = [pytest.param(twin, id="twin")]
if compiled is not None:
    IMPLS.append(pytest.param(compiled, id="compiled"))

PROPS = settings(max_examples=300, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

METHODS = twin.METHODS
ARITHMETIC = ("average", "sum", "rms")
DTYPES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64"]
#: bit-identical floats need the same operation order and no FMA contraction
EXACT_FLOATS = platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")

requires_compiled = pytest.mark.skipif(compiled is None, reason="zarrfast._ext not built")
requires_xarray = pytest.mark.skipif(xr is None, reason="xarray not installed")


def _assert_errors_or_findings_clean(findings):
    bad = [f for f in findings if f.severity in ("E", "R")]
    assert not bad, "\n".join(str(f) for f in bad)


# ---------------------------------------------------------------------------
# the brute-force oracle
# ---------------------------------------------------------------------------


def _validity(dtype, fill):
    """``valid(v)`` for elements of ``dtype`` (as Python numbers) and a fill value."""
    fc = None if fill is None else np.asarray(fill).astype(dtype)[()].item()
    is_float = dtype.kind == "f"

    def valid(v) -> bool:
        if is_float and math.isnan(v):
            return False
        return fc is None or not (v == fc)

    return valid


def _to_dtype(x: float, dtype: np.dtype, rnd: bool):
    if dtype.kind == "f":
        return np.asarray(x).astype(dtype)[()]
    if rnd:
        x = float(np.rint(x))
    info = np.iinfo(dtype)
    if x >= float(info.max):
        return info.max
    if x <= float(info.min):
        return info.min
    return int(x)


def oracle(a: np.ndarray, fy: int, fx: int, method: str, fill=None):
    """``(result, tolerance)``: per-block reduction in plain Python, and for each element
    the absolute error a double accumulation in another order may show."""
    a = np.asarray(a)
    dtype = a.dtype
    n, H, W = a.shape
    oy, ox = -(-H // fy), -(-W // fx)
    out = np.empty((n, oy, ox), dtype=dtype)
    tol = np.zeros((n, oy, ox), dtype=np.float64)
    if dtype.kind == "f":
        empty = np.asarray(np.nan if fill is None else fill).astype(dtype)[()]
    else:
        empty = 0 if fill is None else fill
    eps = np.finfo(dtype).eps if dtype.kind == "f" else 0.0
    valid = _validity(dtype, fill)
    for b in range(n):
        for i in range(oy):
            for j in range(ox):
                blk = a[b, i * fy:(i + 1) * fy, j * fx:(j + 1) * fx]
                if method == "nearest":
                    out[b, i, j] = blk[blk.shape[0] // 2, blk.shape[1] // 2]
                    continue
                vals = [v for v in blk.ravel().tolist() if valid(v)]
                if not vals:
                    out[b, i, j] = empty
                    continue
                if method == "min":
                    out[b, i, j] = min(vals)
                elif method == "max":
                    out[b, i, j] = max(vals)
                elif method == "mode":
                    counts = collections.Counter(vals)
                    best = max(counts.values())
                    out[b, i, j] = min(v for v, c in counts.items() if c == best) + 0
                else:
                    dvals = [float(v) for v in vals]
                    if method == "rms":
                        dvals = [v * v for v in dvals]
                    s = math.fsum(dvals)
                    mag = math.fsum(abs(v) for v in dvals)
                    if method == "sum":
                        r = s
                        t = mag
                    else:
                        r = s / len(dvals)
                        t = mag / len(dvals)
                        if method == "rms":
                            r = math.sqrt(r)
                            t = math.sqrt(t)
                    out[b, i, j] = _to_dtype(r, dtype, method != "sum")
                    # accumulation error in double, then one rounding to the dtype
                    tol[b, i, j] = 4 * len(dvals) * 2.0**-52 * t + 2 * eps * abs(r)
                    if dtype.kind != "f":  # exact below 2**53; else double rounding
                        tol[b, i, j] = 0.0 if t <= 2**52 else \
                            4 * len(dvals) * 2.0**-52 * t + 1.0
    return out, tol


def assert_matches_oracle(got, a, fy, fx, method, fill):
    want, tol = oracle(a, fy, fx, method, fill)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind == "f":
        gn, wn = np.isnan(got), np.isnan(want)
        np.testing.assert_array_equal(gn, wn)
        g = got[~gn].astype(np.float64)
        w = want[~wn].astype(np.float64)
        t = tol[~gn]
        finite = np.isfinite(w)
        np.testing.assert_array_equal(g[~finite], w[~finite])
        assert np.all(np.abs(g[finite] - w[finite]) <= t[finite]), (got, want)
    else:
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        assert np.all(diff <= tol), (got, want)


def assert_same(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape
    if x.dtype.kind == "f" and not EXACT_FLOATS:  # pragma: no cover - FMA platforms
        np.testing.assert_allclose(x, y, rtol=4 * np.finfo(x.dtype).eps, equal_nan=True)
    else:
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------


def _float_pool(dtype, fill):
    pool = [np.nan, 0.0, -0.0, 1.0, -1.0, 2.0, 2.5, -3.25, 7.0, 1e6, 0.1]
    if fill is not None:
        pool.append(fill)
    return pool


def _int_pool(dtype, fill):
    info = np.iinfo(dtype)
    pool = [0, 1, 2, 3, 7, int(info.max), int(info.min), int(info.max) - 1]
    if info.min < 0:
        pool += [-1, -2]
    if fill is not None:
        pool.append(fill)
    return pool


@st.composite
def kernel_case(draw, *, dtypes=DTYPES, wide=False):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    n = draw(st.integers(0, 3))
    H = draw(st.integers(0, 11))
    W = draw(st.integers(0, 11))
    fy = draw(st.integers(1, 5))
    fx = draw(st.integers(1, 5))
    if dtype.kind == "f":
        fill = draw(st.sampled_from([None, None, -9999.0, 0.0, 2.0, np.nan]))
        pool = _float_pool(dtype, fill)
        if wide:
            pool += [np.inf, -np.inf, 3.4e38, -1e300 if dtype.itemsize == 8 else -3e38]
    else:
        info = np.iinfo(dtype)
        fill = draw(st.sampled_from([None, None, 0, int(info.max), 3]))
        pool = _int_pool(dtype, fill)
    values = draw(st.lists(st.sampled_from(pool), min_size=n * H * W, max_size=n * H * W))
    with np.errstate(over="ignore"):
        a = np.array(values, dtype=np.float64 if dtype.kind == "f" else object)
        a = a.astype(dtype).reshape(n, H, W)
    method = draw(st.sampled_from(METHODS))
    return a, fy, fx, method, fill


def _run(impl, a, fy, fx, method, fill):
    out = np.full((a.shape[0], -(-a.shape[1] // fy), -(-a.shape[2] // fx)), 5, dtype=a.dtype)
    impl.block_reduce(a, out, fy, fx, method, fill)
    return out


# ---------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------


@requires_compiled
@PROPS
@given(kernel_case(wide=True))
def test_compiled_matches_twin(case):
    a, fy, fx, method, fill = case
    assert_same(_run(compiled, a, fy, fx, method, fill), _run(twin, a, fy, fx, method, fill))


@pytest.mark.parametrize("impl", IMPLS)
@PROPS
@given(case=kernel_case())
def test_kernel_matches_oracle(impl, case):
    a, fy, fx, method, fill = case
    got = _run(impl, a, fy, fx, method, fill)
    assert_matches_oracle(got, a, fy, fx, method, fill)


@pytest.mark.parametrize("impl", IMPLS)
@FEW
@given(st.data())
def test_kernel_random_floats_vs_oracle(impl, data):
    """Arbitrary finite floats (not just a small pool): arithmetic within rounding."""
    dtype = np.dtype(data.draw(st.sampled_from(["float32", "float64"])))
    H = data.draw(st.integers(1, 9))
    W = data.draw(st.integers(1, 9))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = (rng.standard_normal((2, H, W)) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
    a[rng.random(a.shape) < 0.15] = np.nan
    fy, fx = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    for method in METHODS:
        assert_matches_oracle(_run(impl, a, fy, fx, method, None), a, fy, fx, method, None)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("method", METHODS)
def test_per_method_wrappers(impl, method):
    a = np.random.default_rng(1).random((2, 7, 9)).astype("f4")
    a[0, 1, 1] = -1
    want = _run(impl, a, 3, 2, method, -1)
    out = np.empty_like(want)
    getattr(impl, f"block_{method}")(a, out, 3, 2, -1)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("impl", IMPLS)
def test_semantics_by_example(impl):
    a = np.array([[[1, 2, 9, np.nan, 4],
                   [3, 4, -9, np.nan, 4],
                   [5, 5, 5, 1, 2]]], dtype="f8")
    out = np.empty((1, 2, 3))
    impl.block_reduce(a, out, 2, 2, "average", -9)
    np.testing.assert_array_equal(out, [[[2.5, 9.0, 4.0], [5.0, 3.0, 2.0]]])
    impl.block_reduce(a, out, 2, 2, "nearest")
    np.testing.assert_array_equal(out, [[[4, np.nan, 4], [5, 1, 2]]])
    impl.block_reduce(a, out, 2, 2, "sum", -9)
    np.testing.assert_array_equal(out, [[[10, 9, 8], [10, 6, 2]]])
    impl.block_reduce(a, out, 2, 2, "mode", -9)
    np.testing.assert_array_equal(out, [[[1, 9, 4], [5, 1, 2]]])
    impl.block_reduce(a, out, 2, 2, "rms")
    np.testing.assert_allclose(out[0, 0], [math.sqrt(30 / 4), math.sqrt(81 + 81) / math.sqrt(2),
                                           4])
    allnan = np.full((1, 2, 2), np.nan)
    o = np.empty((1, 1, 1))
    impl.block_reduce(allnan, o, 2, 2, "max")
    assert np.isnan(o[0, 0, 0])
    impl.block_reduce(allnan, o, 2, 2, "max", -5)
    assert o[0, 0, 0] == -5
    # integers: rounding half to even, saturation, fill
    i = np.array([[[1, 2, 2, 3], [250, 250, 0, 0]]], dtype="u1")
    oi = np.empty((1, 1, 2), dtype="u1")
    impl.block_reduce(i, oi, 2, 2, "sum")
    np.testing.assert_array_equal(oi, [[[255, 5]]])
    impl.block_reduce(i, oi, 2, 2, "average", 0)
    np.testing.assert_array_equal(oi, [[[126, 2]]])  # 503 / 4 = 125.75; 5 / 2 = 2.5 -> 2
    o32 = np.empty((1, 1, 2), "i4")
    impl.block_reduce(np.array([[[1, 2, -3, -4]]], dtype="i4"), o32, 1, 2, "average")
    np.testing.assert_array_equal(o32, [[[2, -4]]])  # 1.5 -> 2, -3.5 -> -4 (half to even)


@pytest.mark.parametrize("impl", IMPLS)
def test_invalid_arguments(impl):
    a = np.zeros((1, 4, 4), "f4")
    o = np.zeros((1, 2, 2), "f4")
    with pytest.raises(ValueError, match="method"):
        impl.block_reduce(a, o, 2, 2, "bilinear")
    with pytest.raises(ValueError, match="factors"):
        impl.block_reduce(a, o, 0, 2, "average")
    with pytest.raises(ValueError, match=r"\(1, 3, 2\).*\(1, 4, 4\).*\(1, 2, 2\)"):
        impl.block_reduce(a, np.zeros((1, 3, 2), "f4"), 2, 2, "average")
    with pytest.raises(TypeError):
        impl.block_reduce(a, np.zeros((1, 2, 2), "f8"), 2, 2, "average")
    with pytest.raises(TypeError):
        impl.block_reduce(a.astype("c8"), o.astype("c8"), 2, 2, "average")
    with pytest.raises(TypeError):
        impl.block_reduce(a.astype(">f4"), o.astype(">f4"), 2, 2, "average")
    with pytest.raises(TypeError):
        impl.block_reduce(None, o, 2, 2, "average")
    with pytest.raises(TypeError):
        impl.block_reduce(a, o, 2.0, 2, "average")
    with pytest.raises(ValueError, match="3-D"):
        impl.block_reduce(a[0], o[0], 2, 2, "average")
    with pytest.raises(ValueError, match="contiguous"):
        impl.block_reduce(np.zeros((1, 4, 8), "f4")[:, :, ::2], o, 2, 2, "average")
    ro = o.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        impl.block_reduce(a, ro, 2, 2, "average")
    ai, oi = a.astype("i2"), o.astype("i2")
    for bad in (1e6, 1.5, np.nan, -40000):
        with pytest.raises(ValueError, match="not representable"):
            impl.block_reduce(ai, oi, 2, 2, "average", bad)
    with pytest.raises(TypeError):
        impl.block_reduce(ai, oi, 2, 2, "average", "3")
    impl.block_reduce(ai, oi, 2, 2, "average", 3.0)  # integral floats are fine


@requires_compiled
@FEW
@given(st.data())
def test_invalid_arguments_same_exception(data):
    """Compiled and twin raise the same exception type for the same bad call."""
    a = np.zeros((1, 4, 4), "f4")
    candidates = [
        (a, np.zeros((1, 2, 2), "f4")), (a, np.zeros((1, 2, 2), "f8")),
        (a, np.zeros((2, 2, 2), "f4")), (a.astype("?"), np.zeros((1, 2, 2), "?")),
        (a.astype("f2"), np.zeros((1, 2, 2), "f2")), (a.tolist(), np.zeros((1, 2, 2), "f4")),
        (a.astype("M8[s]"), np.zeros((1, 2, 2), "M8[s]")),
        (a.astype("i8"), np.zeros((1, 2, 2), "i8")), (bytearray(64), bytearray(16)),
    ]
    src, out = data.draw(st.sampled_from(candidates))
    fy = data.draw(st.sampled_from([2, 0, -1, 2**70]))
    method = data.draw(st.sampled_from(["average", "mode", "x", None, 3]))
    fill = data.draw(st.sampled_from([None, 1, 1.5, "a", 1e40, np.nan]))

    def outcome(impl):
        try:
            impl.block_reduce(src, out, fy, 2, method, fill)
        except (ValueError, TypeError, OverflowError) as e:
            return type(e)
        return "ok"

    assert outcome(compiled) == outcome(twin)


def test_selector_pure_python_env(tmp_path):
    code = ("from zarrfast.kernels import downsample as d; "
            "print(d.USING_EXTENSIONS, d.kernels.__name__)")
    env = dict(os.environ, ZARRFAST_PURE_PYTHON="1")
    # the package under test, as installed: a temporary working directory, no source tree
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=tmp_path)
    assert res.stdout.split() == ["False", "zarrfast.kernels.downsample"]
    if compiled is not None and os.environ.get("ZARRFAST_PURE_PYTHON") != "1":
        assert twin.USING_EXTENSIONS and twin.kernels is compiled


@pytest.mark.parametrize("method", METHODS)
def test_downsample_nd(method):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, size=(2, 3, 9, 10)).astype("f4")
    got = twin.downsample(a, (2, 3), method, 0)
    want, _ = oracle(a.reshape(6, 9, 10), 2, 3, method, 0)
    assert got.shape == (2, 3, 5, 4)
    np.testing.assert_allclose(got.reshape(6, 5, 4), want, rtol=1e-6)
    one = twin.downsample(a[0, 0, 0], 4, method)
    w1, _ = oracle(a[0, 0, 0].reshape(1, 1, 10), 1, 4, method, None)
    np.testing.assert_allclose(one, w1.reshape(3), rtol=1e-6)
    f16 = twin.downsample(a.astype("f2"), (2, 2), method)
    assert f16.dtype == np.float16 and f16.shape == (2, 3, 5, 5)
    be = twin.downsample(a.astype(">f8"), (2, 2), method)
    np.testing.assert_array_equal(be, twin.downsample(a.astype("f8"), (2, 2), method))
    if method in twin.SELECTING:
        b = twin.downsample(a > 2, (2, 2), method)
        assert b.dtype == bool
        t = twin.downsample(a.astype("i8").astype("M8[D]"), (2, 2), method)
        assert t.dtype == np.dtype("M8[D]")
    else:
        with pytest.raises(TypeError):
            twin.downsample(a > 2, (2, 2), method)
    with pytest.raises(ValueError):
        twin.downsample(a, (0, 2), method)
    with pytest.raises(TypeError):
        twin.downsample(a.astype("c8"), (2, 2), method)


# ---------------------------------------------------------------------------
# write_dataset
# ---------------------------------------------------------------------------


def _sample_vars(ny=6, nx=9):
    rng = np.random.default_rng(7)
    temp = rng.random((ny, nx)).astype("f4")
    temp[0, 0] = -9999.0
    cls = rng.integers(1, 5, size=(ny, nx)).astype("u1")
    data_vars = {
        "temp": (("y", "x"), temp, {"units": "K", "_FillValue": -9999.0,
                                    "standard_name": "air_temperature",
                                    "scale": np.float32(0.5), "valid_range": np.array([0, 1])}),
        "cls": (("y", "x"), cls, {"_FillValue": 0, "flag_values": [1, 2, 3, 4]}),
    }
    coords = {"y": ("y", np.linspace(50, 45, ny), {"units": "degrees_north"}),
              "x": (("x",), np.linspace(5, 10, nx), {"units": "degrees_east"})}
    return data_vars, coords


@pytest.mark.parametrize("fmt", [2, 3])
def test_write_dataset_round_trip(tmp_path, fmt):
    path = tmp_path / f"ds{fmt}.zarr"
    data_vars, coords = _sample_vars()
    g = write_dataset(str(path), data_vars, coords, zarr_format=fmt, chunks={"x": 4},
                      attrs={"title": "demo", "n": np.int64(3)})
    assert isinstance(g, zarrfast.Group) and g.zarr_format == fmt
    z = zarr.open_group(str(path), mode="r", zarr_format=fmt)
    assert dict(z.attrs) == {"title": "demo", "n": 3}
    assert sorted(z.array_keys()) == ["cls", "temp", "x", "y"]
    for name, (dims, values, *rest) in {**data_vars, **coords}.items():
        arr = z[name]
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        np.testing.assert_array_equal(arr[...], values)
        if fmt == 3:
            assert tuple(arr.metadata.dimension_names) == dims
            assert "_ARRAY_DIMENSIONS" not in arr.attrs
        else:
            assert tuple(arr.attrs["_ARRAY_DIMENSIONS"]) == dims
        attrs = dict(rest[0]) if rest else {}
        fill = attrs.pop("_FillValue", None)
        for k, v in attrs.items():
            assert arr.attrs[k] == np.asarray(v).tolist()
        if fmt == 2:
            assert "_FillValue" not in arr.attrs
            assert arr.metadata.fill_value == fill if fill is not None else \
                arr.metadata.fill_value is None
        elif fill is not None:
            assert decode_fill_attr(arr.attrs["_FillValue"]) == fill
            assert arr.metadata.fill_value == fill
    assert z["temp"].chunks[1] == 4 and z["y"].chunks == (6,)
    if validate is not None:
        _assert_errors_or_findings_clean(validate(str(path), "dataset"))
    if xr is not None:
        ds = xr.open_zarr(str(path), consolidated=False)
        assert ds["temp"].dims == ("y", "x") and ds["temp"].attrs["units"] == "K"
        assert np.isnan(ds["temp"].values[0, 0])  # _FillValue masked
        np.testing.assert_array_equal(ds["temp"].values[1:], data_vars["temp"][1][1:])
        np.testing.assert_array_equal(ds["x"].values, coords["x"][1])
        assert ds.attrs["title"] == "demo"


def test_write_dataset_into_group_and_overwrite():
    g = zarrfast.open_group(None, mode="w", zarr_format=3)
    data_vars, coords = _sample_vars()
    write_dataset(g, data_vars, coords)
    with pytest.raises(ZarrfastError, match="already has members"):
        write_dataset(g, data_vars, coords)
    write_dataset(g, data_vars, coords, overwrite=True)
    with pytest.raises(ZarrfastError, match="Zarr v3"):
        write_dataset(g, data_vars, coords, zarr_format=2, overwrite=True)
    # a 1-D array named like its only dimension is a data and a coordinate variable
    h = zarrfast.open_group(None, mode="w", zarr_format=2)
    write_dataset(h, {"lat": ("lat", np.arange(4.0))}, zarr_format=2)
    assert h["lat"].attrs["_ARRAY_DIMENSIONS"] == ["lat"]


def _snapshot(store):
    return {k: store.get(k) for k in store.list()}


@pytest.mark.parametrize("bad", [
    "missing_coord", "wrong_length", "scalar", "dup_dims", "bad_name", "both", "attrs",
    "coord_dims", "rank", "fill", "chunks", "format",
])
def test_write_dataset_rejects_before_writing(bad):
    g = zarrfast.open_group(None, mode="w", zarr_format=3)
    g.attrs["keep"] = 1
    before = _snapshot(g.store)
    data_vars, coords = _sample_vars()
    kwargs = {}
    if bad == "missing_coord":
        del coords["x"]
    elif bad == "wrong_length":
        coords["x"] = ("x", np.arange(3.0))
    elif bad == "scalar":
        data_vars["crs"] = ((), np.array(0))
    elif bad == "dup_dims":
        data_vars["d"] = (("y", "y"), np.zeros((6, 6)))
    elif bad == "bad_name":
        data_vars["__x"] = (("y",), np.zeros(6))
    elif bad == "both":
        data_vars["x"] = coords["x"]
    elif bad == "attrs":
        data_vars["temp"][2]["bad"] = object()
    elif bad == "coord_dims":
        coords["x"] = ("y", np.arange(6.0))
    elif bad == "rank":
        data_vars["temp"] = (("y",), data_vars["temp"][1])
    elif bad == "fill":
        data_vars["cls"] = (("y", "x"), data_vars["cls"][1], {"_FillValue": 1.5e9})
    elif bad == "chunks":
        kwargs["chunks"] = {"x": 0}
    elif bad == "format":
        kwargs["zarr_format"] = 4
    with pytest.raises(ZarrfastError):
        write_dataset(g, data_vars, coords, **kwargs)
    assert _snapshot(g.store) == before


def test_write_dataset_path_rejects_before_creating(tmp_path):
    data_vars, coords = _sample_vars()
    del coords["y"]
    with pytest.raises(ZarrfastError, match="coordinate variable 'y'"):
        write_dataset(str(tmp_path / "new.zarr"), data_vars, coords)
    assert not (tmp_path / "new.zarr").exists()


def test_fill_attr_codec():
    for v, dt in ((-9999.0, "f4"), (np.nan, "f8"), (3, "i2")):
        enc = encode_fill_attr(v, np.dtype(dt))
        dec = decode_fill_attr(enc)
        assert (math.isnan(dec) and math.isnan(v)) or dec == v
    assert decode_fill_attr("NaN") != decode_fill_attr("NaN")
    assert decode_fill_attr(None) is None and decode_fill_attr("not base64!") is None


@requires_xarray
@pytest.mark.parametrize("fmt", [2, 3])
def test_write_dataset_from_xarray(tmp_path, fmt):
    import pandas as pd

    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {"t2m": (("time", "y", "x"), rng.random((3, 5, 4)).astype("f4"),
                 {"units": "K", "long_name": "2 m temperature"}),
         "mask": (("y", "x"), rng.integers(0, 2, (5, 4)).astype("i1"))},
        coords={"time": pd.date_range("2024-01-01", periods=3),
                "y": ("y", np.arange(5.0), {"units": "m"}), "x": np.arange(4.0) * 10},
        attrs={"Conventions": "CF-1.8"},
    )
    ds["t2m"][0, 0, 0] = np.nan
    path = str(tmp_path / "x.zarr")
    write_dataset(path, ds, zarr_format=fmt)
    back = xr.open_zarr(path, consolidated=False).load()
    xr.testing.assert_identical(back, ds)
    if validate is not None:
        _assert_errors_or_findings_clean(validate(path, "dataset"))
    with pytest.raises(ZarrfastError):
        write_dataset(str(tmp_path / "y.zarr"), ds, {"x": ("x", np.arange(4.0))})
    bad = xr.Dataset({"v": (("a",), np.arange(3.0))})  # dimension without coordinate
    with pytest.raises(ZarrfastError, match="coordinate variable 'a'"):
        write_dataset(str(tmp_path / "z.zarr"), bad)
    assert not (tmp_path / "z.zarr").exists()


# ---------------------------------------------------------------------------
# build_multiscales
# ---------------------------------------------------------------------------


def small_tms(n=6, tile=8, id_="tiny"):
    """A quad TileMatrixSet with ``tile``-pixel tiles: level ``z{i}`` is 2**i tiles wide."""
    return {"id": id_, "crs": "http://www.opengis.net/def/crs/EPSG/0/3857",
            "tileMatrices": [
                {"id": f"z{z}", "scaleDenominator": 1e6 / 2**z, "cellSize": 100.0 / 2**z,
                 "pointOfOrigin": [0.0, 0.0], "tileWidth": tile, "tileHeight": tile,
                 "matrixWidth": 2**z, "matrixHeight": 2**z} for z in range(n)]}


def make_source(store, *, fmt=3, shape=(37, 50), lead=(), chunks=None, dtype="f4",
                fill=-9999.0, seed=0):
    """A Dataset with data variables ``v`` (lead + (y, x)) and ``w`` (y, x, float64),
    plus a 1-D non-spatial variable when ``lead`` is given."""
    rng = np.random.default_rng(seed)
    full = tuple(lead) + tuple(shape)
    if np.dtype(dtype).kind == "f":
        v = (rng.random(full) * 100).astype(dtype)
        v[rng.random(full) < 0.05] = np.nan
    else:
        v = rng.integers(1, 6, size=full).astype(dtype)
    if fill is not None:
        v[rng.random(full) < 0.1] = fill
        v[..., :4, :4] = fill  # a whole block of nodata
    dims = ("time",) * bool(lead) + ("y", "x")
    data_vars = {"v": (dims, v, {"units": "K"} | ({"_FillValue": fill} if fill is not None
                                                  else {})),
                 "w": (("y", "x"), rng.standard_normal(shape))}
    coords = {"y": ("y", 1000.0 - 10.0 * np.arange(shape[0]) - 5.0, {"units": "m"}),
              "x": ("x", 10.0 * np.arange(shape[1]) + 5.0, {"units": "m"})}
    if lead:
        coords["time"] = ("time", np.arange(lead[0]) * 86400)
        data_vars["station"] = (("time",), np.arange(lead[0], dtype="i4"))
    chunk_spec = chunks if chunks is not None else {"y": 16, "x": 16, "time": 2}
    g = write_dataset(store, data_vars, coords, zarr_format=fmt, chunks=chunk_spec,
                      attrs={"title": "src"})
    return g, data_vars, coords


def reference_levels(values, factors, method, fill):
    """Level-from-level downsampling of the last two axes with the oracle."""
    out = [values]
    cur = values
    for f in factors:
        lead = cur.shape[:-2]
        a3 = cur.reshape(-1, *cur.shape[-2:])
        red, _ = oracle(a3, f, f, method, fill)
        cur = red.reshape(*lead, *red.shape[-2:])
        out.append(cur)
    return out


def check_pyramid(target, source_vars, coords, level_ids, tile, method, fmt):
    # a path is read back with zarr-python; an in-memory zarrfast group with zarrfast
    z = zarr.open_group(target, mode="r", zarr_format=fmt) if isinstance(target, str) \
        else target
    ms = dict(z.attrs)["multiscales"]
    assert ms["resampling_method"] == method
    assert sorted(ms["tile_matrix_limits"]) == sorted(level_ids)
    assert sorted(z.group_keys()) == sorted(level_ids)
    members = {k: sorted(z[k].array_keys()) for k in level_ids}
    assert len({tuple(v) for v in members.values()}) == 1
    assert members[level_ids[0]] == sorted({*source_vars, *coords})
    factors = [2] * (len(level_ids) - 1)
    for name, (dims, values, *rest) in source_vars.items():
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        fill = (rest[0].get("_FillValue") if rest else None)
        if name == "station":
            refs = [values] * len(level_ids)
        else:
            refs = reference_levels(values, factors, method, fill)
        for lid, ref in zip(level_ids, refs, strict=True):
            arr = z[lid][name]
            got = arr[...]
            assert got.shape == ref.shape, (lid, name)
            if method in ("nearest", "mode", "min", "max") or values.dtype.kind != "f":
                np.testing.assert_array_equal(got, ref, err_msg=f"{lid}/{name}")
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5,
                                           err_msg=f"{lid}/{name}")
            if dims[-2:] == ("y", "x"):
                assert arr.chunks[-2:] == (tile, tile)  # chunk (r, c) is tile (r, c)
            got_dims = (tuple(arr.metadata.dimension_names) if fmt == 3
                        else tuple(arr.attrs["_ARRAY_DIMENSIONS"]))
            assert got_dims == dims
            if rest:
                assert arr.attrs["units"] == rest[0]["units"]
    for name in ("y", "x"):
        centres = coords[name][1]
        for lid in level_ids:
            got = z[lid][name][...]
            np.testing.assert_allclose(got, centres)
            # the next level's centres are block means of these (partial edges included)
            centres = np.array([centres[i:i + 2].mean() for i in range(0, len(centres), 2)])
    for lid in level_ids:
        lim = ms["tile_matrix_limits"][lid]
        ny, nx = z[lid]["v"].shape[-2:]
        assert lim == {"tileMatrix": lid, "minTileCol": 0, "minTileRow": 0,
                       "maxTileCol": -(-nx // tile) - 1, "maxTileRow": -(-ny // tile) - 1}
    if validate is not None:
        _assert_errors_or_findings_clean(
            validate(target if isinstance(target, str) else target, "multiscale"))
    return z, ms


@pytest.mark.parametrize("fmt", [2, 3])
def test_pyramid_2d(tmp_path, fmt):
    src, data_vars, coords = make_source(str(tmp_path / "src.zarr"), fmt=fmt)
    target = str(tmp_path / "pyr.zarr")
    tms = small_tms()
    build_multiscales(src, target, tile_matrix_set=tms)
    # 37 x 50 pixels: z3 (64 px) is the coarsest holding them; down to z0 (one 8-px tile)
    ids = ["z3", "z2", "z1", "z0"]
    z, ms = check_pyramid(target, data_vars, coords, ids, 8, "average", fmt)
    written = ms["tile_matrix_set"]
    assert [tm["id"] for tm in written["tileMatrices"]] == sorted(ids)  # inline: used only
    assert written["id"] == "tiny"
    assert dict(z["z1"].attrs) == {"title": "src"}
    assert z["z0"]["v"].shape == (5, 7)


@pytest.mark.parametrize("fmt", [2, 3])
def test_pyramid_3d_well_known(tmp_path, fmt):
    src, data_vars, coords = make_source(str(tmp_path / "src.zarr"), fmt=fmt,
                                         shape=(300, 520), lead=(3,),
                                         chunks={"y": 100, "x": 130, "time": 2})
    target = zarrfast.open_group(str(tmp_path / "pyr.zarr"), mode="w", zarr_format=fmt)
    with zarrfast.config.set(threads=3):
        build_multiscales(src, target, tile_matrix_set="WebMercatorQuad")
    # 520 px wide: zoom 2 (1024 px) down to zoom 0 (one 256-px tile)
    z, ms = check_pyramid(str(tmp_path / "pyr.zarr"), data_vars, coords, ["2", "1", "0"],
                          256, "average", fmt)
    assert ms["tile_matrix_set"] == "WebMercatorQuad"
    assert z["2"]["v"].chunks == (2, 256, 256)
    assert z["2"]["time"][...].tolist() == coords["time"][1].tolist()
    if xr is not None:
        ds = xr.open_zarr(str(tmp_path / "pyr.zarr"), group="1", consolidated=False)
        assert ds["v"].dims == ("time", "y", "x") and ds["v"].shape == (3, 150, 260)
        assert np.isnan(ds["v"].values[0, 0, 0])  # the nodata block stays nodata


@pytest.mark.parametrize("method", METHODS)
def test_pyramid_methods(method):
    src, data_vars, coords = make_source(None, shape=(21, 30), dtype="f4", seed=5)
    ints, ivars, _ = make_source(None, shape=(21, 30), dtype="u2", fill=0, seed=6)
    for source, variables in ((src, data_vars), (ints, ivars)):
        target = zarrfast.open_group(None, mode="w", zarr_format=3)
        build_multiscales(source, target, tile_matrix_set=small_tms(tile=4),
                          resampling_method=method, levels=3)
        check_pyramid(target, variables, coords, ["z3", "z2", "z1"], 4, method, 3)


def test_pyramid_levels_and_factors():
    src, data_vars, coords = make_source(None, shape=(40, 40))
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms(), levels=["z1", "z5", "z3"])
    assert sorted(target.group_keys()) == ["z1", "z3", "z5"]
    # z5 holds the source as is; z3 is 4x coarser, z1 another 4x
    cur = data_vars["v"][1]
    lv = [cur]
    for _ in range(2):
        cur = oracle(cur[None], 4, 4, "average", -9999.0)[0][0]
        lv.append(cur)
    for lid, ref in zip(["z5", "z3", "z1"], lv, strict=True):
        np.testing.assert_allclose(target[lid]["v"][...], ref, rtol=1e-5)
    # a target path in another format than the source
    tgt2 = zarrfast.open_group(None, mode="w", zarr_format=2)
    build_multiscales(src, tgt2, tile_matrix_set=small_tms(), levels=2)
    assert tgt2["z3"]["v"].attrs["_ARRAY_DIMENSIONS"] == ["y", "x"]
    assert tgt2["z3"]["v"].fill_value == -9999.0
    if validate is not None:
        _assert_errors_or_findings_clean(validate(tgt2, "multiscale"))
        _assert_errors_or_findings_clean(validate(target, "multiscale"))


def test_pyramid_overwrite():
    src, _, _ = make_source(None)
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms())
    before = _snapshot(target.store)
    with pytest.raises(ZarrfastError, match="overwrite"):
        build_multiscales(src, target, tile_matrix_set=small_tms())
    assert _snapshot(target.store) == before
    build_multiscales(src, target, tile_matrix_set=small_tms(), resampling_method="max",
                      overwrite=True)
    assert target.attrs["multiscales"]["resampling_method"] == "max"


def test_pyramid_many_chunks_many_threads():
    """Tasks on the shared pool whose reads/writes stay inline: no deadlock, same result."""
    code = """if True:
        import numpy as np, zarrfast, sys
        sys.path.insert(0, {tests!r})
        from test_geozarr_write import make_source, small_tms
        from zarrfast.geozarr.multiscales import build_multiscales
        src, data_vars, coords = make_source(None, shape=(200, 260),
                                             chunks={{"y": 20, "x": 36}})
        outs = []
        for threads in (1, 8):
            t = zarrfast.open_group(None, mode="w", zarr_format=3)
            with zarrfast.config.set(threads=threads):
                build_multiscales(src, t, tile_matrix_set=small_tms(8, tile=8))
            outs.append({{k: t[k]["v"][...] for k in t.group_keys()}})
        assert outs[0].keys() == outs[1].keys()
        for k in outs[0]:
            np.testing.assert_array_equal(outs[0][k], outs[1][k])
        print("ok", len(outs[0]))
    """
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(tests) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", code.format(tests=tests)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == "ok"


def _bad_sources():
    def no_coord():
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        g.create_array("v", shape=(4, 4), dtype="f4", dimension_names=["y", "x"])
        g.create_array("y", shape=(4,), dtype="f4", dimension_names=["y"])
        return g

    def no_dims():
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        g.create_array("v", shape=(4, 4), dtype="f4")
        return g

    def empty():
        return zarrfast.open_group(None, mode="w", zarr_format=3)

    def wrong_len():
        g, _, _ = make_source(None)
        g.create_array("u", shape=(36, 50), dtype="f4", dimension_names=["y", "x"])
        return g

    return {"no_coord": no_coord, "no_dims": no_dims, "empty": empty, "wrong_len": wrong_len}


@pytest.mark.parametrize("case", [
    "method_unknown", "method_unsupported", "tms_unknown", "tms_dict", "tms_type",
    "levels_unknown", "levels_too_many", "levels_bad", "too_big", "spatial_dims",
    "source_no_coord", "source_no_dims", "source_empty", "source_wrong_len",
    "source_missing", "fill_unfit", "same_group",
])
def test_pyramid_bad_input_writes_nothing(tmp_path, case):
    src, _, _ = make_source(None, shape=(37, 50))
    kwargs = {"tile_matrix_set": small_tms()}
    target_path = str(tmp_path / "pyr.zarr")
    target: object = target_path
    if case == "method_unknown":
        kwargs["resampling_method"] = "Average"
    elif case == "method_unsupported":
        kwargs["resampling_method"] = "bilinear"
    elif case == "tms_unknown":
        kwargs["tile_matrix_set"] = "GoogleMapsCompatible"
    elif case == "tms_dict":
        kwargs["tile_matrix_set"] = {"id": "x", "tileMatrices": []}
    elif case == "tms_type":
        kwargs["tile_matrix_set"] = 3
    elif case == "levels_unknown":
        kwargs["levels"] = ["z1", "nope"]
    elif case == "levels_too_many":
        kwargs["levels"] = 9
    elif case == "levels_bad":
        kwargs["levels"] = 0
    elif case == "too_big":
        kwargs["tile_matrix_set"] = small_tms(n=2)
    elif case == "spatial_dims":
        kwargs["spatial_dims"] = ("y", "lon")
    elif case.startswith("source_") and case != "source_missing":
        src = _bad_sources()[case[len("source_"):]]()
    elif case == "source_missing":
        src = str(tmp_path / "missing.zarr")
    elif case == "fill_unfit":
        src = zarrfast.open_group(None, mode="w", zarr_format=3)
        write_dataset(src, {"v": (("y", "x"), np.ones((4, 4), "u1"))},
                      {"y": ("y", np.arange(4.0)), "x": ("x", np.arange(4.0))})
        src["v"].attrs["missing_value"] = 1.5
    elif case == "same_group":
        target = src
    with pytest.raises(ZarrfastError):
        build_multiscales(src, target, **kwargs)
    assert not os.path.exists(target_path)
    # a Group target stays as it was, too
    if case != "same_group":
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        before = _snapshot(g.store)
        with pytest.raises(ZarrfastError):
            build_multiscales(src, g, **kwargs)
        assert _snapshot(g.store) == before


def test_pyramid_metadata_json_is_plain():
    src, _, _ = make_source(None)
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set="WebMercatorQuad")
    doc = json.loads(target.store.get("zarr.json"))
    ms = doc["attributes"]["multiscales"]
    assert ms == {"tile_matrix_set": "WebMercatorQuad", "resampling_method": "average",
                  "tile_matrix_limits": {"0": {"tileMatrix": "0", "minTileCol": 0,
                                               "minTileRow": 0, "maxTileCol": 0,
                                               "maxTileRow": 0}}}


def test_pyramid_aux_coordinates_and_axis_order():
    """Spatial dims on any axes (here (y, x, band)); CF auxiliary coordinates averaged."""
    rng = np.random.default_rng(11)
    ny, nx = 19, 23
    rgb = rng.integers(0, 256, size=(ny, nx, 3)).astype("u1")
    lat = np.linspace(40, 50, ny)[:, None] + np.zeros((1, nx))
    src = write_dataset(None, {
        "rgb": (("y", "x", "band"), rgb, {"coordinates": "lat"}),
        "lat": (("y", "x"), lat),
    }, {"y": ("y", np.arange(ny) + 0.5), "x": ("x", np.arange(nx) + 0.5),
        "band": ("band", np.array([1, 2, 3]))})
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms(tile=8),
                      resampling_method="mode", spatial_dims=("y", "x"))
    ids = sorted(target.group_keys(), reverse=True)
    assert ids == ["z2", "z1", "z0"]
    cur_rgb, cur_lat = rgb, lat
    for lid in ids[1:]:
        moved = np.moveaxis(cur_rgb, 2, 0)
        cur_rgb = np.moveaxis(oracle(moved, 2, 2, "mode", None)[0], 0, 2)
        cur_lat = oracle(cur_lat[None], 2, 2, "average", None)[0][0]
        np.testing.assert_array_equal(target[lid]["rgb"][...], cur_rgb)
        np.testing.assert_allclose(target[lid]["lat"][...], cur_lat)
        assert target[lid]["rgb"].chunks == (8, 8, 3)
        assert target[lid]["lat"].chunks == (8, 8)
        np.testing.assert_array_equal(target[lid]["band"][...], [1, 2, 3])
    if validate is not None:
        _assert_errors_or_findings_clean(validate(target, "multiscale"))
    # without spatial_dims the data variables disagree on their last two dims
    with pytest.raises(ZarrfastError, match="spatial_dims"):
        build_multiscales(src, zarrfast.open_group(None, mode="w"),
                          tile_matrix_set=small_tms(tile=8))
