"""The downsampling kernels: the compiled ``zarrfast._ext._downsample`` against its
NumPy twins in ``zarrfast.kernels.downsample`` (same results bit for bit on x86-64,
same exception types), and both against the brute-force per-block oracle of
``_helpers/geozarr.py``.

Without a built extension the twin is tested alone (against the oracle).
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import downsample as twin

from _helpers.geozarr import METHODS, oracle

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


IMPLS = [pytest.param(twin, id="twin")]
if compiled is not None:
    IMPLS.append(pytest.param(compiled, id="compiled"))

PROPS = settings(max_examples=300, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


ARITHMETIC = ("average", "sum", "rms")
DTYPES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64"]
#: bit-identical floats need the same operation order and no FMA contraction
EXACT_FLOATS = platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")

requires_compiled = pytest.mark.skipif(compiled is None, reason="zarrfast._ext not built")


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
