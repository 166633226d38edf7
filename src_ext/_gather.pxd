# cython: language_level=3
"""Whole chunks gathered out of a C-contiguous value, for the batched compressors
(``_decode.blosc_compress_regions``, ``_encode.ChunkEncoder.compress_regions``).

A write's whole chunks lie in the value as regions of the chunk's shape at
``src_offsets[r]`` (byte strides ``src_strides``).  :func:`gather_setup` checks them
with the GIL (``ValueError`` naming the function and the sizes) and fills a
:class:`Gather`; :func:`gather_next` then copies the next one or more of them into the
scratch buffer without the GIL, in the chunk's stored layout (``dst_strides``, bytes
swapped in groups of ``swap_unit``).  With room for ``g`` chunks in the scratch
buffer, up to ``g`` regions that follow each other along the value's innermost
dimension (a row of chunks of a C-ordered value) are gathered together, one source
row of all of them after the other: the value is read in order, where a chunk alone
reads short runs far apart.  :func:`all_items` tells a chunk equal to the fill value.

``cdef inline``: each module that cimports this compiles its own copy.  The
:class:`Gather` points into the caller's (checked, private) tables, which must outlive
the loop.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp, memcpy

from _checks cimport _check_dst_strides, _check_item, _check_shape, _check_span, _tup
from _common cimport (
    ZF_MAX_NDIM, ZF_PREFETCH_RUNS, Layout, checked_mul, normalize_layout, row_group_layout,
    strided_copy_stream, zf_copy_short, zf_prefetch_run,
)


cdef inline bint dense_layout(int ndim, const int64_t* shape, const int64_t* strides,
                              Py_ssize_t itemsize, int64_t nbytes) noexcept:
    """Whether items of ``shape`` at ``strides`` cover bytes ``[0, nbytes)`` exactly,
    each byte once: the dims longer than 1, by stride, each ``itemsize`` times the
    product of the shorter-strided ones' lengths (a C, F or other permuted layout)."""
    cdef int64_t span = itemsize, best = 0
    cdef int d, pick, m = 0
    cdef bint used[ZF_MAX_NDIM]
    for d in range(ndim):
        used[d] = shape[d] <= 1
        m += not used[d]
    while m:
        pick = -1
        for d in range(ndim):  # (the unused dim with the smallest stride)
            if not used[d] and (pick < 0 or strides[d] < best):
                pick = d
                best = strides[d]
        if best != span or checked_mul(span, shape[pick], &span):
            return False
        used[pick] = True
        m -= 1
    return span == nbytes


cdef inline bint all_items(const uint8_t* b, int64_t n, const uint8_t* item,
                           Py_ssize_t k) noexcept nogil:
    """Whether the ``n`` bytes at ``b`` are ``item`` (``k`` bytes) repeated: the first
    item is ``item`` and every byte equals the one ``k`` bytes before it."""
    if n < k or memcmp(b, item, <size_t>k) != 0:
        return False
    return n == k or memcmp(b, b + k, <size_t>(n - k)) == 0


cdef struct Gather:
    int ndim
    int64_t n              # regions
    int64_t nbytes         # one chunk's bytes
    Py_ssize_t itemsize
    Py_ssize_t swap_unit
    const int64_t* shape
    const int64_t* src_strides
    const int64_t* dst_strides
    const int64_t* src_offsets
    const uint8_t* src
    uint8_t* scratch
    int64_t gmax           # chunks the scratch buffer holds
    int64_t run            # bytes of a region's row along the innermost dimension
    bint rows              # whether regions of a row are gathered together


cdef inline int64_t gather_setup(Gather* G, str func, const uint8_t[::1] src,
                                 const int64_t[::1] src_offsets,
                                 const int64_t[::1] src_strides,
                                 const int64_t[::1] dst_strides, const int64_t[::1] shape,
                                 Py_ssize_t itemsize, Py_ssize_t swap_unit,
                                 uint8_t[::1] scratch, int64_t max_nbytes) except -1:
    """Check the regions (inside ``src``, ``dst_strides`` a layout inside one chunk of
    ``scratch``) and fill ``G``; the chunk's size in bytes (1 to ``max_nbytes``).  The
    tables must be the caller's own copies: the loop reads them without the GIL."""
    cdef Py_ssize_t ndim = shape.shape[0], r
    if src_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
        raise ValueError(
            f"{func}: shape {_tup(shape)}, src_strides {_tup(src_strides)} "
            f"and dst_strides {_tup(dst_strides)} must have the same length")
    _check_shape(func, shape)
    _check_item(func, itemsize, swap_unit)
    cdef int64_t nbytes = itemsize
    for r in range(ndim):
        nbytes *= shape[r]
    if nbytes < 1 or nbytes > max_nbytes:
        raise ValueError(f"{func}: a chunk of {nbytes} bytes (the compressor takes "
                         f"1 to {max_nbytes})")
    if scratch.shape[0] < nbytes:
        raise ValueError(f"{func}: the region {_tup(shape)} of {itemsize}-byte "
                         f"items is {nbytes} bytes, the scratch buffer {scratch.shape[0]}: "
                         f"it must hold a whole chunk")
    _check_dst_strides(func, dst_strides, shape)
    _check_span(func, "scratch", nbytes, 0, dst_strides, shape, itemsize)
    for r in range(src_offsets.shape[0]):
        _check_span(func, "src", src.shape[0], src_offsets[r], src_strides, shape, itemsize)
    G.ndim = <int>ndim
    G.n = src_offsets.shape[0]
    G.nbytes = nbytes
    G.itemsize = itemsize
    G.swap_unit = swap_unit
    G.shape = &shape[0] if ndim else NULL
    G.src_strides = &src_strides[0] if ndim else NULL
    G.dst_strides = &dst_strides[0] if ndim else NULL
    G.src_offsets = &src_offsets[0] if G.n else NULL
    G.src = &src[0] if src.shape[0] else NULL
    G.scratch = &scratch[0]
    # regions gathered together: rows contiguous in src, dense chunk buffers, no swap
    G.gmax = scratch.shape[0] // nbytes
    G.rows = G.gmax > 1 and 1 <= ndim < ZF_MAX_NDIM and swap_unit <= 1
    G.run = 0
    if G.rows:
        G.run = shape[ndim - 1] * itemsize
        G.rows = src_strides[ndim - 1] == itemsize and dense_layout(
            <int>ndim, &shape[0], &dst_strides[0], itemsize, nbytes)
    return nbytes


cdef inline int64_t gather_next(const Gather* G, int64_t r) noexcept nogil:
    """Copy region ``r`` (and the ones after it that are gathered with it) into the
    scratch buffer, chunk ``j`` of them at ``j * nbytes``; how many."""
    cdef int64_t g = 1
    cdef Layout L
    if G.rows:
        while (g < G.gmax and r + g < G.n
               and G.src_offsets[r + g] == G.src_offsets[r] + g * G.run):
            g += 1
    if g > 1:
        row_group_layout(G.ndim, G.shape, G.src_strides, G.dst_strides, G.src_offsets[r], 0,
                         g, G.nbytes, &L)
    else:
        normalize_layout(G.ndim, G.shape, G.src_strides, G.dst_strides, G.src_offsets[r], 0,
                         &L)
    if G.swap_unit > 1 or not gather_runs(G.src, G.scratch, &L, G.itemsize):
        strided_copy_stream(G.src, G.scratch, &L, G.itemsize, G.swap_unit, False)
    return g


cdef inline bint _step(int n, const Layout* L, int64_t* idx, int64_t* off) noexcept nogil:
    """Advance the odometer ``idx`` over the outer ``n`` dims of ``L`` (``off`` the
    source offset); ``False`` when it has gone past the last index (``off`` is then
    back at 0)."""
    cdef int k = n - 1
    while k >= 0:
        idx[k] += 1
        off[0] += L.sst[k]
        if idx[k] < L.shape[k]:
            return True
        off[0] -= L.sst[k] * L.shape[k]
        idx[k] = 0
        k -= 1
    return False


cdef inline bint gather_runs(const uint8_t* src, uint8_t* dst, const Layout* L,
                             Py_ssize_t itemsize) noexcept nogil:
    """``strided_copy_stream(src, dst, L, itemsize, 1, False)`` for a layout whose
    innermost dim is contiguous in both buffers (runs of at most 512 bytes: a whole
    chunk's rows); ``False``, copying nothing, for any other.

    The source is read in lines: a run, or a row of runs that follow each other in the
    source (the innermost dim outside the runs, when its source stride is the run's:
    a row of regions gathered together, ``row_group_layout``).  The line
    ``ZF_PREFETCH_RUNS`` lines ahead *in the copy's own order* is prefetched: a second
    odometer walks ahead of the copy's, across the ends of the outer dims, so that the
    first lines of each plane of a chunk are prefetched too (``strided_copy_stream``
    prefetches a fixed stride ahead along one dim, which past a chunk's last rows
    lands in rows it does not copy: half the lines of a 32-row chunk came cold).
    perf of the harness's sharded write (32^3 uint16 inner chunks, a shard's row of 4
    gathered at a time, 256-byte lines): the gather took 2x the samples of the
    unsharded write's (rows of 16 chunks); 20-29% fewer with this copy (loaded
    machine, 3 A/B runs of 9 passes over 4000 chunks).  Lines back to back in the
    source are left to the hardware prefetcher, as before."""
    cdef int nd = L.ndim, P, d
    cdef int64_t run, span, nline = 1, lsst = 0, ldst = 0, j
    cdef int64_t so = 0, do = 0, ao = 0
    cdef int64_t idx[ZF_MAX_NDIM]
    cdef int64_t aidx[ZF_MAX_NDIM]
    cdef bint ahead, small
    if nd < 1 or L.sst[nd - 1] != itemsize or L.dst[nd - 1] != itemsize:
        return False
    run = L.shape[nd - 1] * itemsize
    if run > 512:
        return False
    small = run % 16 == 0
    src = src + L.src_off
    dst = dst + L.dst_off
    P = nd - 1  # the outer dims the lines are walked by
    span = run
    if P >= 1 and L.sst[P - 1] == run:
        P -= 1
        nline, lsst, ldst = L.shape[P], L.sst[P], L.dst[P]
        span = nline * run
    for d in range(P):
        idx[d] = 0
        aidx[d] = 0
    # (lines back to back in the source, a row of chunks as wide as the value: read in
    # order, which the hardware prefetches)
    ahead = P > 0 and L.sst[P - 1] != span
    j = 0
    while ahead and j < ZF_PREFETCH_RUNS:
        ahead = _step(P, L, aidx, &ao)
        j += 1
    while True:
        if ahead:
            zf_prefetch_run(src + ao, <size_t>span)
        for j in range(nline):
            if small:
                zf_copy_short(dst + do + j * ldst, src + so + j * lsst, <size_t>run)
            else:
                memcpy(dst + do + j * ldst, src + so + j * lsst, <size_t>run)
        # the next line (the destination offset follows the same odometer)
        d = P - 1
        while d >= 0:
            idx[d] += 1
            so += L.sst[d]
            do += L.dst[d]
            if idx[d] < L.shape[d]:
                break
            so -= L.sst[d] * L.shape[d]
            do -= L.dst[d] * L.shape[d]
            idx[d] = 0
            d -= 1
        if d < 0:
            return True
        if ahead:
            ahead = _step(P, L, aidx, &ao)
