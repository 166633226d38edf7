# cython: language_level=3
"""Selection -> chunk projection table, and bulk chunk-key formatting.

``project`` turns a basic selection (per dim: ``start``, ``step`` (any sign,
non-zero), ``count``) on a regular chunk grid into one table for the whole
selection, one row per touched chunk, in C order of the per-dim segment
lists:

========== ============ ===================================================
column     shape        meaning
========== ============ ===================================================
chunk      (rows, ndim) chunk grid coordinates
local_start(rows, ndim) first selected index inside the chunk (in selection
                        order) minus the chunk origin
local_count(rows, ndim) number of selected indices inside the chunk
out_start  (rows, ndim) position ``k`` of that first index in the selection
complete   (rows,)      every dim has ``|step| == 1`` and selects the whole
                        edge-clipped chunk extent
========== ============ ===================================================

Per dim, the selected indices inside a chunk are
``chunk * chunk_shape + local_start + j * step`` for ``j < local_count``, and
they land at output positions ``out_start + j``. Segments are computed with
arithmetic, O(#segments) per dim, not by scanning indices.

``format_chunk_keys`` renders coordinate rows as ``prefix + sep.join(...)``;
``normalize_plain`` resolves a plain basic selection (ints and slices).

Twins: ``zarrfast.kernels.reference.project``, ``zarrfast.kernels.reference.box_table``,
``zarrfast.kernels.reference.format_chunk_keys``,
``zarrfast.kernels.reference.normalize_plain``,
``zarrfast.kernels.reference.group_by_chunk``.
"""

import numpy as np

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT64_MAX, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from _common cimport ZF_MAX_NDIM, box_fill, ceildiv, checked_mul


cdef tuple _tup(const int64_t[::1] a):
    return tuple([a[i] for i in range(a.shape[0])])


cdef extern from "Python.h":
    int PySlice_Unpack(object slice, Py_ssize_t* start, Py_ssize_t* stop,
                       Py_ssize_t* step) except -1
    Py_ssize_t PySlice_AdjustIndices(Py_ssize_t length, Py_ssize_t* start,
                                     Py_ssize_t* stop, Py_ssize_t step) noexcept


cdef inline bint _plain(object x) noexcept:
    return x is None or type(x) is int


def normalize_plain(selection, tuple shape not None):
    """A plain basic selection of an array of ``shape`` as ``(start, step, count,
    dropped)``: int64 arrays of the rank (dim ``d`` selects ``start[d] + k*step[d]``
    for ``k < count[d]``) and a tuple of bools (an int removed the dim).

    Plain: an int, a slice, or a tuple of at most ``len(shape)`` of them; the ints
    (also a slice's bounds and step) exact Python ints, ints in range, steps not
    zero; trailing dims not given are whole.  ``None`` for anything else (which the
    general path handles, and reports).  Slices resolve as ``slice.indices`` does
    (a step beyond ``±(2**63 - 1)`` is that bound).

    Twin: ``zarrfast.kernels.reference.normalize_plain``.
    """
    cdef tuple sel = <tuple>selection if type(selection) is tuple else (selection,)
    cdef Py_ssize_t ndim = len(shape), given = len(sel), d, b, e, t, c, n, i
    if given > ndim or ndim > ZF_MAX_NDIM:
        return None
    cdef Py_ssize_t dims[ZF_MAX_NDIM]
    for d in range(ndim):
        x = shape[d]
        if type(x) is not int:
            return None
        try:
            dims[d] = x
        except OverflowError:
            return None
        if dims[d] < 0:
            return None
    # (one allocation and one buffer for the three arrays, rows of it: a memoryview
    # costs about as much as the rest of a small selection's resolving)
    table = np.empty((3, ndim), dtype=np.int64)
    cdef int64_t[:, ::1] rows = table
    cdef int64_t* start = &rows[0, 0] if ndim else NULL
    cdef int64_t* step = &rows[1, 0] if ndim else NULL
    cdef int64_t* count = &rows[2, 0] if ndim else NULL
    dropped = [False] * ndim
    for d in range(ndim):
        n = dims[d]
        if d >= given:
            start[d], step[d], count[d] = 0, 1, n
            continue
        s = sel[d]
        if type(s) is slice:
            if not (_plain((<slice>s).start) and _plain((<slice>s).stop)
                    and _plain((<slice>s).step)) or (<slice>s).step == 0:
                return None
            PySlice_Unpack(s, &b, &e, &t)
            c = PySlice_AdjustIndices(n, &b, &e, t)
            start[d] = b if c else 0
            step[d] = t
            count[d] = c
        elif type(s) is int:
            try:
                i = s
            except OverflowError:
                return None
            if i < -n or i >= n:
                return None
            start[d] = i + n if i < 0 else i
            step[d] = 1
            count[d] = 1
            dropped[d] = True
        else:
            return None
    return table[0], table[1], table[2], tuple(dropped)


# Segment record: chunk, local_start, local_count, out_start, complete
cdef enum:
    _SEG = 5


cdef int64_t _dim_segments(int64_t n, int64_t c, int64_t s, int64_t t, int64_t m,
                           int64_t* out) noexcept nogil:
    """Write the segments of ``s + k*t, k < m`` on a grid of chunk size ``c``.

    Requires a validated selection (``m >= 1``, every index in ``[0, n)``).
    Returns the number of segments (at most ``min(m, ceil(n / c))``).
    """
    cdef int64_t k = 0, nseg = 0, idx, ci, lo, k_end, extent
    cdef int64_t* rec
    while k < m:
        idx = s + k * t
        ci = idx // c           # idx >= 0
        lo = ci * c
        if m - k == 1:
            k_end = m
        elif t > 0:
            if c > INT64_MAX - lo:
                k_end = m       # the chunk runs past INT64_MAX: takes the rest
            else:
                # first k with s + k*t >= lo + c
                k_end = ceildiv(lo + c - s, t)
                if k_end > m:
                    k_end = m
        else:
            # one past the last k with s + k*t >= lo; |t| < n here (validated)
            k_end = (s - lo) // (-t) + 1
            if k_end > m:
                k_end = m
        extent = n - lo
        if extent > c:
            extent = c
        rec = out + _SEG * nseg
        rec[0] = ci
        rec[1] = idx - lo
        rec[2] = k_end - k
        rec[3] = k
        rec[4] = (t == 1 or t == -1) and k_end - k == extent
        nseg += 1
        k = k_end
    return nseg


cdef void _fill_table(int ndim, const int64_t* nseg, int64_t** segs, int64_t nrows,
                      int64_t* chunk, int64_t* lstart, int64_t* lcount, int64_t* ostart,
                      uint8_t* complete) noexcept nogil:
    """Cartesian product of the per-dim segment lists, last dim fastest.

    One sequential pass over the output rows, with an odometer over the
    per-dim segment indices.
    """
    cdef int d
    cdef int64_t row, pos = 0
    cdef int64_t g[ZF_MAX_NDIM]
    cdef const int64_t* rec
    cdef uint8_t done
    for d in range(ndim):
        g[d] = 0
    for row in range(nrows):
        done = 1
        for d in range(ndim):
            rec = segs[d] + _SEG * g[d]
            chunk[pos] = rec[0]
            lstart[pos] = rec[1]
            lcount[pos] = rec[2]
            ostart[pos] = rec[3]
            done &= <uint8_t>rec[4]
            pos += 1
        complete[row] = done
        d = ndim - 1
        while d >= 0:
            g[d] += 1
            if g[d] < nseg[d]:
                break
            g[d] = 0
            d -= 1


def project(const int64_t[::1] shape not None, const int64_t[::1] chunk_shape not None,
            const int64_t[::1] start not None, const int64_t[::1] step not None,
            const int64_t[::1] count not None):
    """Project a strided selection onto a regular chunk grid.

    Parameters
    ----------
    shape, chunk_shape, start, step, count : int64 buffers of one length (the rank)
        Dim ``d`` selects ``start[d] + k * step[d]`` for ``k < count[d]``;
        ``step[d] != 0`` (may be negative), ``chunk_shape[d] >= 1``,
        ``shape[d] >= 0``, ``count[d] >= 0`` and every selected index must lie
        in ``[0, shape[d])``.

    Returns
    -------
    chunk_coords, local_start, local_count, out_start : ndarray[int64] (rows, ndim)
    complete : ndarray[bool] (rows,)
        See the module docstring. Any ``count == 0`` gives zero rows; rank 0
        gives one row with empty coords, ``complete == True``.

    Raises
    ------
    ValueError
        Ranks differ or exceed 64, an argument is out of its domain (the
        message names the dim and value), a selected index is out of bounds
        (names dim, index and shape), or the table would exceed 2**62 rows.
    """
    cdef Py_ssize_t ndim = shape.shape[0]
    cdef Py_ssize_t d
    cdef int64_t n, c, s, t, m, bound, nrows
    cdef bint empty = False, overflow = False
    cdef int64_t nseg[ZF_MAX_NDIM]
    cdef int64_t* segs[ZF_MAX_NDIM]

    if (chunk_shape.shape[0] != ndim or start.shape[0] != ndim or step.shape[0] != ndim
            or count.shape[0] != ndim):
        raise ValueError(
            f"project: shape {_tup(shape)}, chunk_shape {_tup(chunk_shape)}, "
            f"start {_tup(start)}, step {_tup(step)} and count {_tup(count)} "
            f"must have the same length"
        )
    if ndim > ZF_MAX_NDIM:
        raise ValueError(f"project: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
    for d in range(ndim):
        n = shape[d]
        c = chunk_shape[d]
        s = start[d]
        t = step[d]
        m = count[d]
        if n < 0:
            raise ValueError(f"project: dim {d}: shape {n} is negative")
        if c < 1:
            raise ValueError(f"project: dim {d}: chunk_shape {c} must be >= 1")
        if t == 0:
            raise ValueError(f"project: dim {d}: step must be non-zero")
        if m < 0:
            raise ValueError(f"project: dim {d}: count {m} is negative")
        if m == 0:
            empty = True
            continue
        if s < 0 or s >= n:
            raise ValueError(
                f"project: dim {d}: selected index {s} is out of bounds for shape {n}"
            )
        if m >= 2:
            if t > 0:
                overflow = (m - 1) > (n - 1 - s) // t
            else:
                overflow = t < -s or (m - 1) > s // (-t)
            if overflow:
                raise ValueError(
                    f"project: dim {d}: selected index {<object>s + (<object>m - 1) * <object>t} "
                    f"(start {s}, step {t}, count {m}) is out of bounds for shape {n}"
                )

    cdef object ctab, stab, ntab, otab, comp
    if ndim == 0 or empty:
        nrows = 0 if empty else 1
        ctab = np.zeros((nrows, ndim), dtype=np.int64)
        stab = np.zeros((nrows, ndim), dtype=np.int64)
        ntab = np.zeros((nrows, ndim), dtype=np.int64)
        otab = np.zeros((nrows, ndim), dtype=np.int64)
        comp = np.ones(nrows, dtype=np.bool_)
        return ctab, stab, ntab, otab, comp

    # Scratch for the segment lists: at most min(count, n_chunks) per dim.
    cdef list keep = []
    cdef int64_t[:, ::1] seg_view
    for d in range(ndim):
        bound = count[d]
        c = (shape[d] - 1) // chunk_shape[d] + 1
        if c < bound:
            bound = c
        arr = np.empty((bound, _SEG), dtype=np.int64)
        keep.append(arr)
        seg_view = arr
        segs[d] = &seg_view[0, 0]

    with nogil:
        for d in range(ndim):
            nseg[d] = _dim_segments(shape[d], chunk_shape[d], start[d], step[d],
                                    count[d], segs[d])
        nrows = 1
        for d in range(ndim):
            if checked_mul(nrows, nseg[d], &nrows) or nrows > (<int64_t>1 << 62):
                overflow = True
                break
    if overflow:
        raise ValueError(
            f"project: the selection touches more than 2**62 chunks "
            f"(segments per dim: {[nseg[i] for i in range(ndim)]})"
        )

    ctab = np.empty((nrows, ndim), dtype=np.int64)
    stab = np.empty((nrows, ndim), dtype=np.int64)
    ntab = np.empty((nrows, ndim), dtype=np.int64)
    otab = np.empty((nrows, ndim), dtype=np.int64)
    comp = np.empty(nrows, dtype=np.uint8)
    cdef int64_t[:, ::1] cv = ctab
    cdef int64_t[:, ::1] sv = stab
    cdef int64_t[:, ::1] nv = ntab
    cdef int64_t[:, ::1] ov = otab
    cdef uint8_t[::1] fv = comp
    with nogil:
        _fill_table(<int>ndim, nseg, segs, nrows, &cv[0, 0], &sv[0, 0], &nv[0, 0],
                    &ov[0, 0], &fv[0])
    return ctab, stab, ntab, otab, comp.view(np.bool_)


# --------------------------------------------------------------------------
# format_chunk_keys
# --------------------------------------------------------------------------

cdef inline Py_ssize_t _write_uint(char* p, int64_t v) noexcept nogil:
    """Write the decimal digits of ``v >= 0`` at ``p``; return their count."""
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, i
    while True:
        tmp[n] = <char>(48 + v % 10)
        v //= 10
        n += 1
        if v == 0:
            break
    for i in range(n):
        p[i] = tmp[n - 1 - i]
    return n


def format_chunk_keys(const int64_t[:, ::1] coords not None, str prefix not None,
                      str separator not None):
    """Render chunk keys: ``prefix + separator.join(str(c) for c in row)`` per row.

    Parameters
    ----------
    coords : int64 buffer, C-contiguous, shape (rows, ndim)
        Non-negative chunk coordinates; rows of length 0 give ``prefix``.
    prefix, separator : str

    Returns
    -------
    list[str]

    Raises
    ------
    ValueError
        A coordinate is negative (the message names its row and value).
    """
    cdef Py_ssize_t nrows = coords.shape[0]
    cdef Py_ssize_t ndim = coords.shape[1]
    cdef Py_ssize_t r, d, pos, bad_row = -1, bad_col = 0
    cdef const int64_t* row
    cdef list out = []
    if nrows == 0:
        return out
    if ndim > 0:
        with nogil:
            for r in range(nrows):
                row = &coords[r, 0]
                for d in range(ndim):
                    if row[d] < 0:
                        bad_row = r
                        bad_col = d
                        break
                if bad_row >= 0:
                    break
        if bad_row >= 0:
            raise ValueError(
                f"format_chunk_keys: row {bad_row} has negative coordinate "
                f"{coords[bad_row, bad_col]} (dim {bad_col})"
            )
    cdef bytes pb = prefix.encode("utf-8", "surrogatepass")
    cdef bytes sb = separator.encode("utf-8", "surrogatepass")
    cdef Py_ssize_t plen = len(pb), slen = len(sb)
    cdef const char* pp = pb
    cdef const char* sp = sb
    cdef Py_ssize_t cap = plen + ndim * 20 + slen * (ndim - 1 if ndim > 0 else 0) + 1
    cdef char* buf = <char*>malloc(<size_t>cap)
    if buf == NULL:
        raise MemoryError()
    try:
        memcpy(buf, pp, <size_t>plen)
        for r in range(nrows):
            pos = plen
            if ndim > 0:
                row = &coords[r, 0]
                pos += _write_uint(buf + pos, row[0])
                for d in range(1, ndim):
                    memcpy(buf + pos, sp, <size_t>slen)
                    pos += slen
                    pos += _write_uint(buf + pos, row[d])
            out.append(PyUnicode_DecodeUTF8(buf, pos, "surrogatepass"))
    finally:
        free(buf)
    return out


# --------------------------------------------------------------------------
# group_by_chunk: fancy selections, grouped by chunk once
# --------------------------------------------------------------------------

cdef void _counting_group(const int64_t* ids, Py_ssize_t n, int64_t nchunks,
                          int64_t* counts, int64_t* order) noexcept nogil:
    """Stable counting sort of positions 0..n-1 by ids[i] (0 <= ids < nchunks).
    ``counts`` (nchunks + 1 zeros) ends holding the bucket starts."""
    cdef Py_ssize_t i
    cdef int64_t k, acc = 0, c
    for i in range(n):
        counts[ids[i] + 1] += 1
    for k in range(nchunks + 1):
        c = counts[k]
        counts[k] = acc
        acc += c
    # counts[k + 1] is now the start of bucket k (counts[0] == 0)
    for i in range(n):
        k = ids[i] + 1
        order[counts[k]] = i
        counts[k] += 1


def group_by_chunk(const int64_t[::1] ids not None, int64_t nchunks):
    """Group positions by chunk id, stably, in one pass.

    Returns ``(order, chunk_ids, starts)``: ``order`` permutes ``range(len(ids))`` so
    that equal ids are adjacent (ids ascending, original order kept within an id);
    ``chunk_ids`` are the distinct ids, ascending; positions of ``chunk_ids[k]`` are
    ``order[starts[k]:starts[k + 1]]`` (``len(starts) == len(chunk_ids) + 1``).

    A counting sort, O(n + nchunks), when ``nchunks`` is not much larger than ``n``;
    otherwise a stable sort.  Every id must be in ``[0, nchunks)``.
    """
    cdef Py_ssize_t n = ids.shape[0], i
    if nchunks < 0:
        raise ValueError(f"group_by_chunk: nchunks must be >= 0, got {nchunks}")
    for i in range(n):
        if ids[i] < 0 or ids[i] >= nchunks:
            raise ValueError(
                f"group_by_chunk: id {ids[i]} at position {i} is outside [0, {nchunks})"
            )
    ids_arr = np.asarray(ids)
    if n == 0:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64))
    if nchunks > 4 * n + 4096:
        order = np.argsort(ids_arr, kind="stable").astype(np.int64, copy=False)
    else:
        order = np.empty(n, dtype=np.int64)
        counts = np.zeros(nchunks + 1, dtype=np.int64)
        _counting(ids, n, nchunks, counts, order)
    sorted_ids = ids_arr[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(sorted_ids[1:n], sorted_ids[0:n - 1], out=first[1:n])
    starts_body = np.flatnonzero(first)
    k = len(starts_body)
    chunk_ids = sorted_ids[starts_body]
    starts = np.empty(k + 1, dtype=np.int64)
    starts[0:k] = starts_body
    starts[k] = n
    return order, chunk_ids, starts


cdef void _counting(const int64_t[::1] ids, Py_ssize_t n, int64_t nchunks,
                    int64_t[::1] counts, int64_t[::1] order):
    with nogil:
        _counting_group(&ids[0], n, nchunks, &counts[0], &order[0])


# --------------------------------------------------------------------------
# box_table
# --------------------------------------------------------------------------

def box_table(const int64_t[::1] start not None, const int64_t[::1] count not None,
              const int64_t[::1] chunk_shape not None, const int64_t[::1] cps not None,
              const int64_t[::1] chunk_strides not None,
              const int64_t[::1] out_strides not None):
    """The chunks a step-1 box touches, grouped by shard, with where each chunk's part
    of the box lies in the decoded chunk and in the output.

    The chunks (of ``chunk_shape``) are grouped in shards of ``cps`` chunks per dim
    (all ones: every chunk its own "shard", the plain grid).  Dim ``d`` selects
    ``start[d] + k`` for ``k < count[d]``.

    Parameters
    ----------
    start, count, chunk_shape, cps, chunk_strides, out_strides : int64 buffers of one
        length (the rank).  ``start >= 0``, ``count >= 1``, ``chunk_shape >= 1``,
        ``cps >= 1``; ``chunk_strides`` are byte strides into a decoded chunk,
        ``out_strides`` byte strides of the output (whose index 0 is ``start``).

    Returns
    -------
    shards : ndarray[int64] (m, ndim)
        The shards touched, in C order.
    bounds : ndarray[int64] (m + 1,)
        Rows ``bounds[g]:bounds[g + 1]`` are the chunks of shard ``g``, in C order.
    inner : ndarray[int64] (rows,)
        Each chunk's C-order index among its shard's ``prod(cps)`` chunks.
    src_offsets, dst_offsets : ndarray[int64] (rows,)
        Byte offset of the chunk's part of the box in the decoded chunk
        (``chunk_strides``) and in the output (``out_strides``).
    shapes : ndarray[int64] (rows, ndim)
        The shape of that part.

    Raises
    ------
    ValueError
        Lengths differ, the rank exceeds 64, an argument is out of its domain (the
        message names the dim and value), or the table would exceed 2**40 rows.

    Twin: ``zarrfast.kernels.reference.box_table``.
    """
    cdef Py_ssize_t ndim = start.shape[0]
    cdef Py_ssize_t d
    cdef int64_t nrows = 1, nshards = 1, c, p
    cdef int64_t first[ZF_MAX_NDIM]
    cdef int64_t last[ZF_MAX_NDIM]
    cdef int64_t sfirst[ZF_MAX_NDIM]
    cdef int64_t slast[ZF_MAX_NDIM]
    if (count.shape[0] != ndim or chunk_shape.shape[0] != ndim or cps.shape[0] != ndim
            or chunk_strides.shape[0] != ndim or out_strides.shape[0] != ndim):
        raise ValueError(
            f"box_table: start {_tup(start)}, count {_tup(count)}, chunk_shape "
            f"{_tup(chunk_shape)}, cps {_tup(cps)}, chunk_strides {_tup(chunk_strides)} and "
            f"out_strides {_tup(out_strides)} must have the same length"
        )
    if ndim > ZF_MAX_NDIM:
        raise ValueError(f"box_table: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
    for d in range(ndim):
        if start[d] < 0 or count[d] < 1 or chunk_shape[d] < 1 or cps[d] < 1:
            raise ValueError(
                f"box_table: dim {d}: start {start[d]} (>= 0), count {count[d]} (>= 1), "
                f"chunk_shape {chunk_shape[d]} (>= 1) and cps {cps[d]} (>= 1) out of domain"
            )
        if count[d] > INT64_MAX - start[d]:
            raise ValueError(f"box_table: dim {d}: start {start[d]} + count {count[d]} "
                             f"overflows")
        c = chunk_shape[d]
        p = cps[d]
        first[d] = start[d] // c
        last[d] = (start[d] + count[d] - 1) // c
        sfirst[d] = first[d] // p
        slast[d] = last[d] // p
        if (checked_mul(nrows, last[d] - first[d] + 1, &nrows) or nrows > (<int64_t>1 << 40)):
            raise ValueError("box_table: the box touches more than 2**40 chunks")
        nshards *= slast[d] - sfirst[d] + 1

    shards_arr = np.empty((nshards, ndim), dtype=np.int64)
    bounds_arr = np.empty(nshards + 1, dtype=np.int64)
    inner_arr = np.empty(nrows, dtype=np.int64)
    src_arr = np.empty(nrows, dtype=np.int64)
    dst_arr = np.empty(nrows, dtype=np.int64)
    shapes_arr = np.empty((nrows, ndim), dtype=np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    cdef int64_t[::1] inner = inner_arr
    cdef int64_t[::1] src = src_arr
    cdef int64_t[::1] dst = dst_arr
    # (rank 0: no coordinates, no strides to point at)
    cdef int64_t[:, ::1] sv = shards_arr
    cdef int64_t[:, ::1] hv = shapes_arr
    with nogil:
        box_fill(<int>ndim, &start[0] if ndim else NULL, &count[0] if ndim else NULL,
                 &chunk_shape[0] if ndim else NULL, &cps[0] if ndim else NULL,
                 &chunk_strides[0] if ndim else NULL, &out_strides[0] if ndim else NULL,
                 first, last, sfirst, slast, nshards,
                 &sv[0, 0] if ndim else NULL, &bounds[0], &inner[0], &src[0], &dst[0],
                 &hv[0, 0] if ndim else NULL)
    return shards_arr, bounds_arr, inner_arr, src_arr, dst_arr, shapes_arr


