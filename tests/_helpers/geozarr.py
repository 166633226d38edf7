"""What the GeoZarr tests share: a brute-force per-block downsampling oracle (Python
loops, ``math.fsum``, ``collections.Counter``) and the small tile matrix sets and
source datasets the pyramid tests build from.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from zarrfast.geozarr.write import write_dataset
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


METHODS = twin.METHODS


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
