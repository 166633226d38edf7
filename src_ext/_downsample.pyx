# cython: language_level=3
"""2-D block reductions by integer factors: the kernels of GeoZarr pyramids.

``block_reduce(src, out, fy, fx, method, fill=None)`` reduces every
``fy x fx`` block of the last two dims of a C-contiguous 3-D array ``src``
(shape ``(n, H, W)``) to one element of ``out`` (shape
``(n, ceil(H / fy), ceil(W / fx))``, same dtype). Blocks along the bottom and
right edges may be partial (``H % fy`` rows, ``W % fx`` columns); they are
reduced over the elements they have. Callers reshape N-d arrays to 3-D.

Validity: an element is *ignored* when it is NaN (float dtypes) or equal to
``fill`` (when ``fill`` is not ``None``; a NaN ``fill`` means NaN only).
Reductions over the valid elements of a block:

==========  ==============================================================
average     mean; integers round half to even (``np.rint``)
sum         sum, saturated to the range of an integer dtype
rms         ``sqrt(mean(v * v))``; integers round half to even
min, max    smallest / largest
mode        most frequent value; ties go to the smallest value; a zero
            result is ``+0.0`` for floats
nearest     the element at ``(ey // 2, ex // 2)`` of the block, where
            ``ey x ex`` is the block's actual extent (validity is not
            consulted: nearest is a selection)
==========  ==============================================================

A block with no valid element gives ``fill`` (or NaN for floats without a
fill value). Arithmetic accumulates in ``double`` in row-major order over the
block (the NumPy twin adds in the same order, so results agree bit for bit
wherever the compiler does not contract ``a + b * b`` into an FMA).

Dtypes: float32, float64, and the signed/unsigned 8-, 16-, 32- and 64-bit
integers (64-bit sums and means lose precision beyond 2**53, as any double
would). ``src`` and ``out`` must share the dtype.

Shapes and ``fill`` are validated with the GIL (``ValueError`` naming the
shapes); the loops run with the GIL released.

Twins: ``zarrfast.kernels.downsample.block_reduce``,
``zarrfast.kernels.downsample.block_average``,
``zarrfast.kernels.downsample.block_sum``, ``zarrfast.kernels.downsample.block_min``,
``zarrfast.kernels.downsample.block_max``, ``zarrfast.kernels.downsample.block_rms``,
``zarrfast.kernels.downsample.block_mode``,
``zarrfast.kernels.downsample.block_nearest``.
"""

from libc.math cimport NAN, nearbyint, sqrt
from libc.stdint cimport (
    INT8_MAX,
    INT8_MIN,
    INT16_MAX,
    INT16_MIN,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    UINT8_MAX,
    UINT16_MAX,
    UINT32_MAX,
    UINT64_MAX,
    int8_t,
    int16_t,
    int32_t,
    int64_t,
    uint8_t,
    uint16_t,
    uint32_t,
    uint64_t,
)
from libc.stdlib cimport free, malloc

import operator
import struct

from _common cimport ceildiv

ctypedef fused num_t:
    float
    double
    int8_t
    uint8_t
    int16_t
    uint16_t
    int32_t
    uint32_t
    int64_t
    uint64_t


cdef enum Method:
    M_AVERAGE
    M_NEAREST
    M_MODE
    M_MIN
    M_MAX
    M_SUM
    M_RMS


METHODS = ("average", "nearest", "mode", "min", "max", "sum", "rms")
_METHOD_CODES = {
    "average": M_AVERAGE, "nearest": M_NEAREST, "mode": M_MODE, "min": M_MIN,
    "max": M_MAX, "sum": M_SUM, "rms": M_RMS,
}


# --------------------------------------------------------------------------
# per-type helpers (branches on num_t are resolved at compile time)
# --------------------------------------------------------------------------

cdef inline void _limits(num_t* lo, num_t* hi) noexcept nogil:
    if num_t is int8_t:
        lo[0] = INT8_MIN
        hi[0] = INT8_MAX
    elif num_t is uint8_t:
        lo[0] = 0
        hi[0] = UINT8_MAX
    elif num_t is int16_t:
        lo[0] = INT16_MIN
        hi[0] = INT16_MAX
    elif num_t is uint16_t:
        lo[0] = 0
        hi[0] = UINT16_MAX
    elif num_t is int32_t:
        lo[0] = INT32_MIN
        hi[0] = INT32_MAX
    elif num_t is uint32_t:
        lo[0] = 0
        hi[0] = UINT32_MAX
    elif num_t is int64_t:
        lo[0] = INT64_MIN
        hi[0] = INT64_MAX
    elif num_t is uint64_t:
        lo[0] = 0
        hi[0] = UINT64_MAX


cdef inline num_t _from_double(double x, bint rnd, num_t lo, num_t hi) noexcept nogil:
    """``x`` as ``num_t``: floats convert; integers round (if ``rnd``) and saturate."""
    if num_t is float:
        return <float>x
    elif num_t is double:
        return x
    else:
        if rnd:
            x = nearbyint(x)
        # (double)hi may round up past hi (2**63, 2**64): compare with >=.
        if x >= <double>hi:
            return hi
        if x <= <double>lo:
            return lo
        return <num_t>x


cdef inline bint _valid(num_t v, bint has_fill, num_t fill) noexcept nogil:
    if num_t is float or num_t is double:
        if v != v:
            return False
    return not (has_fill and v == fill)


cdef inline void _sift_down(num_t* a, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t root = start, child
    cdef num_t tmp
    while 2 * root + 1 < end:
        child = 2 * root + 1
        if child + 1 < end and a[child] < a[child + 1]:
            child += 1
        if a[root] < a[child]:
            tmp = a[root]
            a[root] = a[child]
            a[child] = tmp
            root = child
        else:
            return


cdef inline void _sort(num_t* a, Py_ssize_t n) noexcept nogil:
    """Ascending in-place sort of NaN-free values (insertion sort when short, else heapsort)."""
    cdef Py_ssize_t i, j
    cdef num_t tmp
    if n <= 16:
        for i in range(1, n):
            tmp = a[i]
            j = i
            while j > 0 and tmp < a[j - 1]:
                a[j] = a[j - 1]
                j -= 1
            a[j] = tmp
        return
    i = n // 2
    while i > 0:
        i -= 1
        _sift_down(a, i, n)
    i = n
    while i > 1:
        i -= 1
        tmp = a[0]
        a[0] = a[i]
        a[i] = tmp
        _sift_down(a, 0, i)


# --------------------------------------------------------------------------
# one block
# --------------------------------------------------------------------------

cdef inline num_t _block(const num_t* p, Py_ssize_t row, Py_ssize_t ey, Py_ssize_t ex,
                         int method, bint has_fill, num_t fill, num_t empty,
                         num_t lo, num_t hi, num_t* scratch) noexcept nogil:
    """Reduce the ``ey x ex`` block at ``p`` (rows ``row`` elements apart)."""
    cdef Py_ssize_t j, i, m, cnt = 0
    cdef double acc = 0.0, dv
    cdef num_t v, best, cur
    cdef Py_ssize_t bestc, c
    cdef bint found = False

    if method == M_NEAREST:
        return p[(ey // 2) * row + ex // 2]

    if method == M_MIN or method == M_MAX:
        best = empty
        for j in range(ey):
            for i in range(ex):
                v = p[j * row + i]
                if not _valid(v, has_fill, fill):
                    continue
                if not found:
                    best = v
                    found = True
                elif method == M_MIN:
                    if v < best:
                        best = v
                elif v > best:
                    best = v
        return best

    if method == M_MODE:
        m = 0
        for j in range(ey):
            for i in range(ex):
                v = p[j * row + i]
                if _valid(v, has_fill, fill):
                    scratch[m] = v
                    m += 1
        if m == 0:
            return empty
        _sort(scratch, m)
        best = scratch[0]
        cur = scratch[0]
        bestc = 1
        c = 1
        for i in range(1, m):
            if scratch[i] == cur:
                c += 1
            else:
                cur = scratch[i]
                c = 1
            if c > bestc:
                bestc = c
                best = cur
        if num_t is float or num_t is double:
            if best == 0:
                best = 0   # +0.0, whichever zero sorted first
        return best

    # average, sum, rms: accumulate in double, row-major
    for j in range(ey):
        for i in range(ex):
            v = p[j * row + i]
            if not _valid(v, has_fill, fill):
                continue
            dv = <double>v
            if method == M_RMS:
                acc = acc + dv * dv
            else:
                acc = acc + dv
            cnt += 1
    if cnt == 0:
        return empty
    if method == M_SUM:
        return _from_double(acc, False, lo, hi)
    if method == M_AVERAGE:
        return _from_double(acc / <double>cnt, True, lo, hi)
    return _from_double(sqrt(acc / <double>cnt), True, lo, hi)


cdef void _reduce(const num_t[:, :, ::1] src, num_t[:, :, ::1] out, Py_ssize_t fy,
                  Py_ssize_t fx, int method, bint has_fill, num_t fill,
                  num_t* scratch) noexcept nogil:
    cdef Py_ssize_t n = src.shape[0], H = src.shape[1], W = src.shape[2]
    cdef Py_ssize_t OY = out.shape[1], OX = out.shape[2]
    cdef Py_ssize_t b, oy, ox, y0, x0, ey, ex
    cdef num_t lo = 0, hi = 0, empty
    _limits(&lo, &hi)
    if num_t is float or num_t is double:
        empty = fill if has_fill else <num_t>NAN
    else:
        empty = fill if has_fill else 0   # unreachable: integers are always valid then
    for b in range(n):
        for oy in range(OY):
            y0 = oy * fy
            ey = H - y0 if H - y0 < fy else fy
            for ox in range(OX):
                x0 = ox * fx
                ex = W - x0 if W - x0 < fx else fx
                out[b, oy, ox] = _block(&src[b, y0, x0], W, ey, ex, method, has_fill,
                                        fill, empty, lo, hi, scratch)


cdef str _dtype_name(num_t x):
    if num_t is int8_t:
        return "int8"
    elif num_t is uint8_t:
        return "uint8"
    elif num_t is int16_t:
        return "int16"
    elif num_t is uint16_t:
        return "uint16"
    elif num_t is int32_t:
        return "int32"
    elif num_t is uint32_t:
        return "uint32"
    elif num_t is int64_t:
        return "int64"
    elif num_t is uint64_t:
        return "uint64"
    elif num_t is float:
        return "float32"
    else:
        return "float64"


# --------------------------------------------------------------------------
# validation (with the GIL) and the entry points
# --------------------------------------------------------------------------

def _coerce_int_fill(fill, lo, hi, dtype_name):
    """``fill`` as a Python int in ``[lo, hi]`` (integral floats accepted)."""
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


def _coerce_float_fill(fill):
    if isinstance(fill, (str, bytes)):
        raise TypeError(f"fill must be a number, not {type(fill).__name__}")
    return float(fill)


def _block_reduce_typed(const num_t[:, :, ::1] src, num_t[:, :, ::1] out,
                        Py_ssize_t fy, Py_ssize_t fx, int code, fill):
    cdef Py_ssize_t H = src.shape[1], W = src.shape[2], k
    cdef bint has_fill = fill is not None
    cdef num_t fill_c = 0, lo = 0, hi = 0
    cdef num_t* scratch = NULL
    if has_fill:
        if num_t is float or num_t is double:
            fill_c = <num_t>_coerce_float_fill(fill)
        else:
            _limits(&lo, &hi)
            fill_c = <num_t>_coerce_int_fill(fill, lo, hi, _dtype_name(fill_c))
    if out.shape[0] == 0 or out.shape[1] == 0 or out.shape[2] == 0:
        return
    if code == M_MODE:
        k = (fy if fy < H else H) * (fx if fx < W else W)
        scratch = <num_t*>malloc(<size_t>k * sizeof(num_t))
        if scratch == NULL:
            raise MemoryError(f"block_reduce: cannot allocate {k} items of scratch")
    try:
        with nogil:
            _reduce(src, out, fy, fx, code, has_fill, fill_c, scratch)
    finally:
        free(scratch)


# buffer format (native, no byte-order prefix) -> NumPy dtype name
_SUPPORTED = {}
for _c in "bhilqBHILQ":
    _SUPPORTED[_c] = ("int" if _c.islower() else "uint") + str(8 * struct.calcsize(_c))
_SUPPORTED["f"] = "float32"
_SUPPORTED["d"] = "float64"
del _c


def _view(obj, str what, bint writable):
    """``memoryview(obj)`` checked as a 3-D C-contiguous buffer of a supported dtype."""
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
            f"block_reduce: {what} must be 3-D (n, H, W), got shape {tuple(m.shape)}"
        )
    if not m.c_contiguous:
        raise ValueError(f"block_reduce: {what} of shape {tuple(m.shape)} is not C-contiguous")
    if writable and m.readonly:
        raise ValueError(f"block_reduce: {what} is read-only")
    return m, _SUPPORTED[fmt]


def block_reduce(src, out, Py_ssize_t fy, Py_ssize_t fx, str method, fill=None):
    """Reduce each ``fy x fx`` block of the last two dims of ``src`` into ``out``.

    Parameters
    ----------
    src : C-contiguous 3-D buffer ``(n, H, W)``
        float32/float64 or an 8/16/32/64-bit (un)signed integer dtype, native
        byte order.
    out : writable C-contiguous 3-D buffer ``(n, ceil(H / fy), ceil(W / fx))``
        Same dtype as ``src``; must not overlap it.
    fy, fx : int >= 1
        Block height and width.
    method : str
        One of ``average nearest mode min max sum rms``.
    fill : number or None
        Elements equal to it are ignored; the result of a block with no valid
        element. Must be representable in an integer dtype.

    Raises
    ------
    TypeError
        A buffer is missing or of an unsupported dtype, the dtypes differ, or
        ``fill`` is not a number.
    ValueError
        Bad method, factors, ranks, shapes, contiguity, a read-only ``out`` or a
        fill value an integer dtype cannot hold.
    """
    if method not in _METHOD_CODES:
        raise ValueError(f"block_reduce: method must be one of {METHODS}, got {method!r}")
    if fy < 1 or fx < 1:
        raise ValueError(f"block_reduce: factors must be >= 1, got ({fy}, {fx})")
    ms, src_dtype = _view(src, "src", False)
    mo, out_dtype = _view(out, "out", True)
    if src_dtype != out_dtype:
        raise TypeError(f"block_reduce: src is {src_dtype} but out is {out_dtype}")
    n, H, W = ms.shape
    need = (n, ceildiv(H, fy), ceildiv(W, fx))
    if tuple(mo.shape) != need:
        raise ValueError(
            f"block_reduce: out has shape {tuple(mo.shape)} but src of shape {(n, H, W)} "
            f"reduced by ({fy}, {fx}) needs {need}"
        )
    _block_reduce_typed(src, out, fy, fx, _METHOD_CODES[method], fill)


def block_average(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "average", fill)``."""
    block_reduce(src, out, fy, fx, "average", fill)


def block_nearest(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "nearest", fill)`` (``fill`` is only validated)."""
    block_reduce(src, out, fy, fx, "nearest", fill)


def block_mode(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "mode", fill)``."""
    block_reduce(src, out, fy, fx, "mode", fill)


def block_min(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "min", fill)``."""
    block_reduce(src, out, fy, fx, "min", fill)


def block_max(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "max", fill)``."""
    block_reduce(src, out, fy, fx, "max", fill)


def block_sum(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "sum", fill)``."""
    block_reduce(src, out, fy, fx, "sum", fill)


def block_rms(src, out, Py_ssize_t fy, Py_ssize_t fx, fill=None):
    """``block_reduce(src, out, fy, fx, "rms", fill)``."""
    block_reduce(src, out, fy, fx, "rms", fill)
