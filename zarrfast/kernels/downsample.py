"""2-D block reductions for GeoZarr pyramids: NumPy twins, kernel selector, ``downsample``.

Three parts:

* the pure-NumPy twins of ``zarrfast._ext._downsample`` (``block_reduce`` and
  one ``block_<method>`` per method) -- same names, signatures, accepted inputs,
  results and errors as the compiled kernels (``src_ext/_downsample.pyx``, whose
  docstring defines the semantics); written for clarity, but vectorised so the
  pure-Python fallback stays usable on real pyramids;
* a selector: ``kernels`` is the compiled module, or this module when
  ``ZARRFAST_PURE_PYTHON=1`` or the extension cannot be imported
  (``USING_EXTENSIONS`` says which);
* :func:`downsample`, the convenient N-d entry point the pyramid builder uses.

The twins add in the same order as the kernels (row-major within a block, in
``double``), so float results agree bit for bit where the C compiler does not
contract ``acc + v * v`` into a fused multiply-add.
"""

from __future__ import annotations

import operator
import os
import struct
from typing import Any

import numpy as np

__all__ = [
    "METHODS",
    "USING_EXTENSIONS",
    "block_average",
    "block_max",
    "block_min",
    "block_mode",
    "block_nearest",
    "block_reduce",
    "block_rms",
    "block_sum",
    "downsample",
    "kernels",
]

METHODS = ("average", "nearest", "mode", "min", "max", "sum", "rms")

#: methods that only select stored values (no arithmetic): any fixed-size dtype works
SELECTING = frozenset({"nearest", "mode", "min", "max"})

# buffer format (native, no byte-order prefix) -> NumPy dtype name
_SUPPORTED: dict[str, str] = {
    c: ("int" if c.islower() else "uint") + str(8 * struct.calcsize(c)) for c in "bhilqBHILQ"
}
_SUPPORTED["f"] = "float32"
_SUPPORTED["d"] = "float64"


# ---------------------------------------------------------------------------
# argument checks (mirror the compiled module's)
# ---------------------------------------------------------------------------


def _view(obj: Any, what: str, writable: bool) -> tuple[memoryview, str]:
    if obj is None:
        raise TypeError(f"block_reduce: {what} must be a buffer, not None")
    m = memoryview(obj)
    fmt = m.format[1:] if m.format.startswith("@") else m.format
    if fmt not in _SUPPORTED:
        raise TypeError(
            f"block_reduce: {what} has buffer format {m.format!r}; supported are native "
            f"float32/float64 and 8/16/32/64-bit (un)signed integers"
        )
    if m.ndim != 3:
        raise ValueError(
            f"block_reduce: {what} must be 3-D (n, H, W), got shape {m.shape}"
        )
    if not m.c_contiguous:
        raise ValueError(f"block_reduce: {what} of shape {m.shape} is not C-contiguous")
    if writable and m.readonly:
        raise ValueError(f"block_reduce: {what} is read-only")
    return m, _SUPPORTED[fmt]


def _coerce_int_fill(fill: Any, lo: int, hi: int, dtype_name: str) -> int:
    if isinstance(fill, (str, bytes)):
        raise TypeError(f"fill must be a number, not {type(fill).__name__}")
    try:
        value = operator.index(fill)
    except TypeError:
        f = float(fill)
        if not f.is_integer():
            raise ValueError(
                f"fill value {fill!r} is not representable in {dtype_name}"
            ) from None
        value = int(f)
    if value < lo or value > hi:
        raise ValueError(f"fill value {fill!r} is not representable in {dtype_name}")
    return value


def _coerce_float_fill(fill: Any) -> float:
    if isinstance(fill, (str, bytes)):
        raise TypeError(f"fill must be a number, not {type(fill).__name__}")
    return float(fill)


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _index(value: Any) -> int:
    """A ``Py_ssize_t`` argument: ints only (``TypeError``), 64-bit (``OverflowError``)."""
    v = operator.index(value)
    if not -(2**63) <= v < 2**63:
        raise OverflowError("Python int too large to convert to C ssize_t")
    return v


# ---------------------------------------------------------------------------
# the twins
# ---------------------------------------------------------------------------


def _from_double(x: np.ndarray, dtype: np.dtype, rnd: bool) -> np.ndarray:
    """Float64 results as ``dtype``: floats convert; integers round (``rnd``) and saturate."""
    if dtype.kind == "f":
        return x.astype(dtype)
    if rnd:
        x = np.rint(x)
    info = np.iinfo(dtype)
    hi = x >= float(info.max)  # float(2**63 - 1) == 2**63: compare with >=
    lo = x <= float(info.min)
    res = np.where(hi | lo, 0.0, x).astype(dtype)
    res[hi] = info.max
    res[lo] = info.min
    return res


def _nearest(a: np.ndarray, fy: int, fx: int, oy: int, ox: int) -> np.ndarray:
    H, W = a.shape[1:]
    y0 = np.arange(oy) * fy
    x0 = np.arange(ox) * fx
    iy = y0 + np.minimum(fy, H - y0) // 2
    ix = x0 + np.minimum(fx, W - x0) // 2
    return a[:, iy][:, :, ix]


def _mode(blocks: np.ndarray, valid: np.ndarray, empty: Any) -> np.ndarray:
    """Row-wise mode of ``blocks`` (rows x k) over ``valid``; ties -> smallest value."""
    k = blocks.shape[1]
    order = np.lexsort((blocks, ~valid), axis=-1)  # valid first, then ascending
    s = np.take_along_axis(blocks, order, axis=1)
    v = np.take_along_axis(valid, order, axis=1)
    start = np.ones(s.shape, dtype=bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    pos = np.arange(k)
    run_start = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    count = np.where(v, pos - run_start + 1, 0)
    best = np.argmax(count, axis=1)  # the first (smallest) of the longest runs
    value = s[np.arange(s.shape[0]), best]
    if value.dtype.kind == "f":
        value = np.where(value == 0, 0, value)  # +0.0, whichever zero sorted first
    return np.where(v.any(axis=1), value, empty)


def block_reduce(src: Any, out: Any, fy: int, fx: int, method: str,
                 fill: Any = None) -> None:
    """Reduce each ``fy x fx`` block of the last two dims of ``src`` into ``out``.

    Twin of ``zarrfast._ext._downsample.block_reduce`` (see its docstring).
    """
    fy = _index(fy)
    fx = _index(fx)
    if method is not None and not isinstance(method, str):
        raise TypeError(
            f"Argument 'method' has incorrect type (expected str, got {type(method).__name__})"
        )
    if method not in METHODS:
        raise ValueError(f"block_reduce: method must be one of {METHODS}, got {method!r}")
    if fy < 1 or fx < 1:
        raise ValueError(f"block_reduce: factors must be >= 1, got ({fy}, {fx})")
    ms, src_dtype = _view(src, "src", False)
    mo, out_dtype = _view(out, "out", True)
    if src_dtype != out_dtype:
        raise TypeError(f"block_reduce: src is {src_dtype} but out is {out_dtype}")
    assert ms.shape is not None and mo.shape is not None  # (a memoryview has a shape)
    n, H, W = ms.shape
    need = (n, _ceildiv(H, fy), _ceildiv(W, fx))
    if mo.shape != need:
        raise ValueError(
            f"block_reduce: out has shape {mo.shape} but src of shape {(n, H, W)} "
            f"reduced by ({fy}, {fx}) needs {need}"
        )
    dtype = np.dtype(src_dtype)
    is_float = dtype.kind == "f"
    has_fill = fill is not None
    fill_c = dtype.type(0)
    if has_fill:
        if is_float:
            with np.errstate(over="ignore"):
                fill_c = np.asarray(_coerce_float_fill(fill)).astype(dtype)[()]
        else:
            info = np.iinfo(dtype)
            fill_c = dtype.type(_coerce_int_fill(fill, int(info.min), int(info.max),
                                                 dtype.name))
    _, oy, ox = need
    if n == 0 or oy == 0 or ox == 0:
        return
    a = np.asarray(ms).view(dtype)
    res = np.asarray(mo).view(dtype)
    if method == "nearest":
        res[...] = _nearest(a, fy, fx, oy, ox)
        return

    empty = fill_c if has_fill else (dtype.type(np.nan) if is_float else dtype.type(0))
    # A factor beyond the extent gives the same (single) block as the extent itself.
    fy = min(fy, H)
    fx = min(fx, W)
    valid = np.ones(a.shape, dtype=bool)
    if is_float:
        valid &= ~np.isnan(a)
    if has_fill:
        valid &= a != fill_c
    # Pad to whole blocks; padding is invalid, so edge blocks reduce over what they have.
    padded = np.zeros((n, oy * fy, ox * fx), dtype=dtype)
    padded[:, :H, :W] = a
    pvalid = np.zeros(padded.shape, dtype=bool)
    pvalid[:, :H, :W] = valid
    blocks = padded.reshape(n, oy, fy, ox, fx)
    vblocks = pvalid.reshape(n, oy, fy, ox, fx)
    anyv = vblocks.any(axis=(2, 4))

    if method in ("min", "max"):
        if is_float:
            sentinel = np.inf if method == "min" else -np.inf
        else:
            info = np.iinfo(dtype)
            sentinel = info.max if method == "min" else info.min
        masked = np.where(vblocks, blocks, dtype.type(sentinel))
        red = masked.min(axis=(2, 4)) if method == "min" else masked.max(axis=(2, 4))
        res[...] = np.where(anyv, red, empty)
        return

    if method == "mode":
        rows = blocks.transpose(0, 1, 3, 2, 4).reshape(n * oy * ox, fy * fx)
        vrows = vblocks.transpose(0, 1, 3, 2, 4).reshape(n * oy * ox, fy * fx)
        res[...] = _mode(rows, vrows, empty).reshape(n, oy, ox)
        return

    # average, sum, rms: double accumulator, row-major within each block (as in C)
    acc = np.zeros((n, oy, ox), dtype=np.float64)
    cnt = np.zeros((n, oy, ox), dtype=np.int64)
    for j in range(fy):
        for i in range(fx):
            v = blocks[:, :, j, :, i].astype(np.float64)
            m = vblocks[:, :, j, :, i]
            acc = np.where(m, acc + (v * v if method == "rms" else v), acc)
            cnt += m
    if method == "sum":
        value = _from_double(acc, dtype, False)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = acc / cnt
        if method == "rms":
            mean = np.sqrt(mean)
        value = _from_double(np.where(anyv, mean, 0.0), dtype, True)
    res[...] = np.where(anyv, value, empty)


def block_average(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "average", fill)``."""
    block_reduce(src, out, fy, fx, "average", fill)


def block_nearest(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "nearest", fill)`` (``fill`` is only validated)."""
    block_reduce(src, out, fy, fx, "nearest", fill)


def block_mode(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "mode", fill)``."""
    block_reduce(src, out, fy, fx, "mode", fill)


def block_min(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "min", fill)``."""
    block_reduce(src, out, fy, fx, "min", fill)


def block_max(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "max", fill)``."""
    block_reduce(src, out, fy, fx, "max", fill)


def block_sum(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "sum", fill)``."""
    block_reduce(src, out, fy, fx, "sum", fill)


def block_rms(src: Any, out: Any, fy: int, fx: int, fill: Any = None) -> None:
    """``block_reduce(src, out, fy, fx, "rms", fill)``."""
    block_reduce(src, out, fy, fx, "rms", fill)


# ---------------------------------------------------------------------------
# selector
# ---------------------------------------------------------------------------


def _load() -> tuple[bool, Any]:
    if os.environ.get("ZARRFAST_PURE_PYTHON") != "1":
        try:
            from zarrfast._ext import _downsample as compiled
        except ImportError:
            pass
        else:
            return True, compiled
    import sys

    return False, sys.modules[__name__]


#: ``kernels.block_reduce`` is the compiled kernel, or the twin above
USING_EXTENSIONS, kernels = _load()


# ---------------------------------------------------------------------------
# N-d entry point
# ---------------------------------------------------------------------------


def downsample(data: Any, factors: int | tuple[int, ...], method: str = "average",
               fill: Any = None) -> np.ndarray:
    """Reduce the trailing axes of ``data`` by integer ``factors``, block by block.

    Parameters
    ----------
    data : array-like, ndim >= 1
    factors : int or tuple of 1 or 2 ints
        ``(fy, fx)`` for the last two axes, or ``(f,)`` / ``f`` for the last one.
        Partial edge blocks are reduced over the elements they have, so the
        result has ``ceil(n / f)`` elements along each reduced axis.
    method : one of :data:`METHODS`
    fill : number or None
        Elements equal to ``fill`` (and NaNs) are ignored; a block with no valid
        element gives ``fill`` (NaN for floats without a fill).

    Float16 is computed in float32; bool, datetime64 and timedelta64 work for
    the selecting methods (``nearest``, ``mode``, ``min``, ``max``); other
    non-numeric dtypes raise ``TypeError``.
    """
    if method not in METHODS:
        raise ValueError(f"downsample: method must be one of {METHODS}, got {method!r}")
    a = np.asarray(data)
    f = (factors,) if isinstance(factors, (int, np.integer)) else tuple(factors)
    if len(f) not in (1, 2) or a.ndim < len(f):
        raise ValueError(
            f"downsample: factors {factors!r} must give 1 or 2 factors for the trailing axes "
            f"of an array of shape {a.shape}"
        )
    if not all(isinstance(x, (int, np.integer)) and x >= 1 for x in f):
        raise ValueError(f"downsample: factors must be integers >= 1, got {factors!r}")
    fy, fx = (1, int(f[0])) if len(f) == 1 else (int(f[0]), int(f[1]))
    dtype = a.dtype
    work = dtype
    if dtype.kind == "f" and dtype.itemsize == 2:
        work = np.dtype(np.float32)
    elif dtype.kind in "iuf" and not dtype.isnative:
        work = dtype.newbyteorder("=")
    elif dtype.kind in "bmM":
        if method not in SELECTING:
            raise TypeError(f"downsample: method {method!r} needs numbers, got dtype {dtype}")
        work = np.dtype(np.uint8 if dtype.kind == "b" else np.int64)
        fill = None if fill is None else np.asarray(fill, dtype=dtype).view(work)[()]
    elif dtype.kind not in "iuf":
        raise TypeError(f"downsample: dtype {dtype} is not supported")
    if dtype.kind == "f" and dtype.itemsize == 2 and fill is not None:
        fill = float(np.float16(fill))
    if work != dtype:
        a = a.astype(work) if dtype.kind in "fiu" else a.view(work)
    a = np.ascontiguousarray(a)
    nred = len(f)
    lead = a.shape[: a.ndim - nred]
    nlead = int(np.prod(lead, dtype=np.int64))
    if nred == 1:
        a3 = a.reshape(nlead, 1, a.shape[-1])
        tail: tuple[int, ...] = (_ceildiv(a.shape[-1], fx),)
    else:
        a3 = a.reshape(nlead, a.shape[-2], a.shape[-1])
        tail = (_ceildiv(a.shape[-2], fy), _ceildiv(a.shape[-1], fx))
    out = np.empty(lead + tail, dtype=work)
    out3 = out.reshape(nlead, 1 if nred == 1 else tail[0], tail[-1])
    kernels.block_reduce(a3, out3, fy, fx, method, fill)
    if work != dtype:
        out = out.astype(dtype) if dtype.kind in "fiu" else out.view(dtype)
    return out
