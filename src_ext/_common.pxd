# cython: language_level=3
"""Shared ctypedefs and inline ``noexcept nogil`` helpers for zarrfast's kernels.

Everything here is ``cdef inline``: each extension module that cimports this
file compiles its own copy, so there is no cross-module C API to keep stable.

Contents
--------
* ``zf_index`` / ``zf_byte`` ctypedefs and ``ZF_MAX_NDIM`` (the rank limit of
  every kernel, equal to NumPy 2's ``NPY_MAXDIMS``).
* Integer helpers: ``ceildiv``, ``floordiv`` (Python semantics for signed
  operands), overflow-checked ``checked_add`` / ``checked_mul``.
* ``bswap16/32/64`` (compiler builtins where available, portable shifts
  otherwise) and unaligned ``load*/store*`` via fixed-size ``memcpy``.
* The strided N-d copy engine shared by ``_assemble.copy_region`` and
  ``_transpose.transpose``: ``normalize_layout`` (flip negative destination
  strides, drop size-1 dims, order dims by destination stride, coalesce dims
  contiguous in both buffers) and ``strided_copy`` (memcpy runs, element
  lines specialised by item size, or cache-tiled 2-D blocks when the source is
  dense along a dimension other than the destination's innermost one);
  ``strided_copy_stream`` writes its runs with non-temporal stores
  (``zf_stream_run``; end the batch with ``zf_stream_fence``).
* ``strided_fill``: one item written at every index of a layout's destination
  (``_assemble.fill_region``, and the missing inner chunks of ``_decode.ShardFiles``).

Callers validate every pointer range with the GIL before calling in here;
nothing in this file checks bounds.
"""

cimport cython
from libc.stdint cimport (
    INT64_MAX, INT64_MIN, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t,
)
from libc.string cimport memcpy, memmove, memset

ctypedef int64_t zf_index
ctypedef uint8_t zf_byte

cdef enum:
    ZF_MAX_NDIM = 64
    # Byte budget of the scratch tile used by the blocked 2-D path.
    ZF_TILE_BYTES = 16384
    # How many runs ahead strided_copy prefetches short, far-apart source runs.
    ZF_PREFETCH_RUNS = 16

cdef extern from *:
    """
    #ifndef ZARRFAST_COMMON_BSWAP_H
    #define ZARRFAST_COMMON_BSWAP_H
    #include <stdint.h>
    #if defined(__GNUC__) || defined(__clang__)
    #  define zf_bswap16(x) ((uint16_t)__builtin_bswap16((uint16_t)(x)))
    #  define zf_bswap32(x) ((uint32_t)__builtin_bswap32((uint32_t)(x)))
    #  define zf_bswap64(x) ((uint64_t)__builtin_bswap64((uint64_t)(x)))
    #elif defined(_MSC_VER)
    #  include <stdlib.h>
    #  define zf_bswap16(x) ((uint16_t)_byteswap_ushort((unsigned short)(x)))
    #  define zf_bswap32(x) ((uint32_t)_byteswap_ulong((unsigned long)(x)))
    #  define zf_bswap64(x) ((uint64_t)_byteswap_uint64((unsigned __int64)(x)))
    #else
    static inline uint16_t zf_bswap16(uint16_t x) {
        return (uint16_t)((x >> 8) | (x << 8));
    }
    static inline uint32_t zf_bswap32(uint32_t x) {
        return ((x & 0x000000FFu) << 24) | ((x & 0x0000FF00u) << 8) |
               ((x & 0x00FF0000u) >> 8) | ((x & 0xFF000000u) >> 24);
    }
    static inline uint64_t zf_bswap64(uint64_t x) {
        return ((uint64_t)zf_bswap32((uint32_t)(x & 0xFFFFFFFFu)) << 32) |
               (uint64_t)zf_bswap32((uint32_t)(x >> 32));
    }
    #endif
    #endif
    """
    uint16_t zf_bswap16(uint16_t x) noexcept nogil
    uint32_t zf_bswap32(uint32_t x) noexcept nogil
    uint64_t zf_bswap64(uint64_t x) noexcept nogil


cdef extern from *:
    """
    #ifndef ZARRFAST_COMMON_STREAM_H
    #define ZARRFAST_COMMON_STREAM_H
    #include <stdint.h>
    #include <string.h>
    /* Non-temporal ("streaming") stores: whole 64-byte cache lines go to memory
       without first being read into the cache (no read-for-ownership) and without
       evicting what the cache holds.  For a large output written once (a full read
       of an array much larger than the cache) they halve the memory traffic of the
       copy; for a small output, which the caller reads next, plain stores are
       better.  zf_stream_run copies n bytes to d, which must be 64-byte aligned:
       the whole lines with streaming stores, the tail with memcpy.  The stores are
       weakly ordered: zf_stream_fence (sfence) must run before another thread may
       read the bytes, i.e. before a kernel returns. */
    #if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    #include <emmintrin.h>
    #define ZF_HAVE_STREAM 1
    static inline void zf_stream_run(uint8_t* d, const uint8_t* s, size_t n) {
        while (n >= 64) {
            __m128i a = _mm_loadu_si128((const __m128i*)s);
            __m128i b = _mm_loadu_si128((const __m128i*)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i*)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i*)(s + 48));
            _mm_stream_si128((__m128i*)d, a);
            _mm_stream_si128((__m128i*)(d + 16), b);
            _mm_stream_si128((__m128i*)(d + 32), c);
            _mm_stream_si128((__m128i*)(d + 48), e);
            d += 64;
            s += 64;
            n -= 64;
        }
        if (n) memcpy(d, s, n);
    }
    static inline void zf_stream_fence(void) { _mm_sfence(); }
    #else
    #define ZF_HAVE_STREAM 0
    static inline void zf_stream_run(uint8_t* d, const uint8_t* s, size_t n) {
        memcpy(d, s, n);
    }
    static inline void zf_stream_fence(void) {}
    #endif
    #endif
    """
    bint ZF_HAVE_STREAM
    void zf_stream_run(uint8_t* d, const uint8_t* s, size_t n) noexcept nogil
    void zf_stream_fence() noexcept nogil


cdef extern from *:
    """
    #ifndef ZARRFAST_COMMON_PREFETCH_H
    #define ZARRFAST_COMMON_PREFETCH_H
    #include <stddef.h>
    #include <stdint.h>
    /* A hint to load the cache lines of [p, p + n) (n small: a short run copied a few
       runs later).  Prefetch instructions never fault, so p may point anywhere. */
    #if defined(__GNUC__) || defined(__clang__)
    static inline void zf_prefetch_run(const uint8_t* p, size_t n) {
        size_t k;
        for (k = 0; k < n; k += 64) __builtin_prefetch(p + k, 0, 3);
    }
    #else
    static inline void zf_prefetch_run(const uint8_t* p, size_t n) { (void)p; (void)n; }
    #endif
    #endif
    """
    void zf_prefetch_run(const uint8_t* p, size_t n) noexcept nogil


cdef extern from *:
    """
    #ifndef ZARRFAST_COMMON_SHORT_H
    #define ZARRFAST_COMMON_SHORT_H
    #include <stddef.h>
    #include <stdint.h>
    #include <string.h>
    /* Copy n bytes, a multiple of 16, with fixed-size moves the compiler inlines:
       for runs of a few cache lines a memcpy call costs as much as the copy. */
    static inline void zf_copy_short(uint8_t* d, const uint8_t* s, size_t n) {
        size_t k;
        for (k = 0; k < n; k += 16) memcpy(d + k, s + k, 16);
    }
    #endif
    """
    void zf_copy_short(uint8_t* d, const uint8_t* s, size_t n) noexcept nogil


# --------------------------------------------------------------------------
# integer helpers
# --------------------------------------------------------------------------

@cython.cdivision(True)
cdef inline int64_t floordiv(int64_t a, int64_t b) noexcept nogil:
    """Python's ``a // b`` for signed operands (b != 0, not INT64_MIN // -1)."""
    cdef int64_t q = a // b   # cdivision: C truncation
    cdef int64_t r = a - q * b
    if r != 0 and ((r < 0) != (b < 0)):
        q -= 1
    return q


@cython.cdivision(True)
cdef inline int64_t ceildiv(int64_t a, int64_t b) noexcept nogil:
    """``ceil(a / b)`` for signed operands (b != 0), without negating ``a``."""
    cdef int64_t q = a // b
    cdef int64_t r = a - q * b
    if r != 0 and ((r > 0) == (b > 0)):
        q += 1
    return q


cdef inline bint checked_add(int64_t a, int64_t b, int64_t* out) noexcept nogil:
    """``*out = a + b``; return True (and leave ``*out`` alone) on overflow."""
    if (b > 0 and a > INT64_MAX - b) or (b < 0 and a < INT64_MIN - b):
        return True
    out[0] = a + b
    return False


@cython.cdivision(True)
cdef inline bint checked_mul(int64_t a, int64_t b, int64_t* out) noexcept nogil:
    """``*out = a * b``; return True (and leave ``*out`` alone) on overflow."""
    if a == 0 or b == 0:
        out[0] = 0
        return False
    if a > 0:
        if b > 0:
            if a > INT64_MAX // b:
                return True
        elif b < INT64_MIN // a:
            return True
    else:
        if b > 0:
            if a < INT64_MIN // b:
                return True
        elif b < INT64_MAX // a:
            return True
    out[0] = a * b
    return False


# --------------------------------------------------------------------------
# byte swaps and unaligned access
# --------------------------------------------------------------------------

cdef inline uint16_t bswap16(uint16_t x) noexcept nogil:
    return zf_bswap16(x)


cdef inline uint32_t bswap32(uint32_t x) noexcept nogil:
    return zf_bswap32(x)


cdef inline uint64_t bswap64(uint64_t x) noexcept nogil:
    return zf_bswap64(x)


cdef inline uint16_t load16(const void* p) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, p, 2)
    return v


cdef inline uint32_t load32(const void* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline uint64_t load64(const void* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef inline void store16(void* p, uint16_t v) noexcept nogil:
    memcpy(p, &v, 2)


cdef inline void store32(void* p, uint32_t v) noexcept nogil:
    memcpy(p, &v, 4)


cdef inline void store64(void* p, uint64_t v) noexcept nogil:
    memcpy(p, &v, 8)


cdef inline void swap_groups(const uint8_t* s, uint8_t* d, Py_ssize_t itemsize,
                             Py_ssize_t unit) noexcept nogil:
    """Copy one item, reversing the bytes of each ``unit``-byte group.

    ``s`` and ``d`` may be equal (in-place swap) but must not partially overlap.
    """
    cdef Py_ssize_t g, b
    cdef uint8_t tmp
    if s == d:
        g = 0
        while g < itemsize:
            for b in range(unit // 2):
                tmp = d[g + b]
                d[g + b] = d[g + unit - 1 - b]
                d[g + unit - 1 - b] = tmp
            g += unit
        return
    g = 0
    while g < itemsize:
        for b in range(unit):
            d[g + b] = s[g + unit - 1 - b]
        g += unit


# --------------------------------------------------------------------------
# element lines: n items from s (stride ss bytes) to d (stride ds bytes)
# --------------------------------------------------------------------------

cdef inline void copy_line(const uint8_t* s, int64_t ss, uint8_t* d, int64_t ds,
                           int64_t n, Py_ssize_t itemsize, Py_ssize_t swap) noexcept nogil:
    """Copy ``n`` items of ``itemsize`` bytes along one strided line.

    ``swap > 1`` reverses the bytes of every ``swap``-byte group of each item.
    Strides are in bytes and may be negative or zero (for ``s``). Loads and
    stores go through fixed-size ``memcpy`` so unaligned buffers are fine.
    The contiguous cases (``ss == ds == itemsize``) get their own loops so the
    compiler can vectorise them.
    """
    cdef int64_t i
    cdef bint contiguous = ss == itemsize and ds == itemsize
    if swap <= 1:
        if contiguous:
            memcpy(d, s, <size_t>(n * itemsize))
        elif itemsize == 1:
            for i in range(n):
                d[i * ds] = s[i * ss]
        elif itemsize == 2:
            for i in range(n):
                memcpy(d + i * ds, s + i * ss, 2)
        elif itemsize == 4:
            for i in range(n):
                memcpy(d + i * ds, s + i * ss, 4)
        elif itemsize == 8:
            for i in range(n):
                memcpy(d + i * ds, s + i * ss, 8)
        elif itemsize == 16:
            for i in range(n):
                memcpy(d + i * ds, s + i * ss, 16)
        else:
            for i in range(n):
                memcpy(d + i * ds, s + i * ss, <size_t>itemsize)
    elif swap == itemsize:
        if itemsize == 2:
            if contiguous:
                for i in range(n):
                    store16(d + 2 * i, bswap16(load16(s + 2 * i)))
            else:
                for i in range(n):
                    store16(d + i * ds, bswap16(load16(s + i * ss)))
        elif itemsize == 4:
            if contiguous:
                for i in range(n):
                    store32(d + 4 * i, bswap32(load32(s + 4 * i)))
            else:
                for i in range(n):
                    store32(d + i * ds, bswap32(load32(s + i * ss)))
        else:  # 8
            if contiguous:
                for i in range(n):
                    store64(d + 8 * i, bswap64(load64(s + 8 * i)))
            else:
                for i in range(n):
                    store64(d + i * ds, bswap64(load64(s + i * ss)))
    elif swap == 8 and itemsize == 16:  # complex128
        for i in range(n):
            store64(d + i * ds, bswap64(load64(s + i * ss)))
            store64(d + i * ds + 8, bswap64(load64(s + i * ss + 8)))
    elif swap == 4 and itemsize == 8:  # complex64
        for i in range(n):
            store32(d + i * ds, bswap32(load32(s + i * ss)))
            store32(d + i * ds + 4, bswap32(load32(s + i * ss + 4)))
    else:
        for i in range(n):
            swap_groups(s + i * ss, d + i * ds, itemsize, swap)


# --------------------------------------------------------------------------
# N-d layouts
# --------------------------------------------------------------------------

cdef struct Layout:
    int ndim
    int64_t src_off          # byte offset of the first visited item in src
    int64_t dst_off          # byte offset of the first visited item in dst
    int64_t shape[ZF_MAX_NDIM]
    int64_t sst[ZF_MAX_NDIM]  # src strides, bytes
    int64_t dst[ZF_MAX_NDIM]  # dst strides, bytes (>= 0 after normalisation)


cdef inline void normalize_layout(int ndim, const int64_t* shape, const int64_t* sst,
                                  const int64_t* dst, int64_t src_off, int64_t dst_off,
                                  Layout* L) noexcept nogil:
    """Reduce an iteration space to an equivalent, cheaper one.

    Requires a non-empty region (every ``shape[d] >= 1``) whose byte ranges were
    validated by the caller, and a destination whose items do not alias each
    other (the visiting order is changed, which is only harmless then).

    1. size-1 dims are dropped; a dim with a negative dst stride is walked
       backwards in both buffers, so every remaining dst stride is >= 0;
    2. dims are ordered by decreasing dst stride (stable), so the innermost dim
       is the one densest in dst;
    3. adjacent dims contiguous in both buffers are merged.
    """
    cdef int n = 0
    cdef int d, j
    cdef int64_t a, b, c
    L.src_off = src_off
    L.dst_off = dst_off
    for d in range(ndim):
        a = shape[d]
        if a == 1:
            continue
        b = sst[d]
        c = dst[d]
        if c < 0:
            L.src_off += (a - 1) * b
            L.dst_off += (a - 1) * c
            b = -b
            c = -c
        # stable insertion by decreasing dst stride
        j = n
        while j > 0 and L.dst[j - 1] < c:
            L.shape[j] = L.shape[j - 1]
            L.sst[j] = L.sst[j - 1]
            L.dst[j] = L.dst[j - 1]
            j -= 1
        L.shape[j] = a
        L.sst[j] = b
        L.dst[j] = c
        n += 1
    # merge dim d into the running outer dim when contiguous in both buffers
    j = 0
    for d in range(n):
        if j > 0 and L.sst[j - 1] == L.sst[d] * L.shape[d] \
                and L.dst[j - 1] == L.dst[d] * L.shape[d]:
            L.shape[j - 1] *= L.shape[d]
            L.sst[j - 1] = L.sst[d]
            L.dst[j - 1] = L.dst[d]
        else:
            L.shape[j] = L.shape[d]
            L.sst[j] = L.sst[d]
            L.dst[j] = L.dst[d]
            j += 1
    L.ndim = j


cdef inline int64_t abs64(int64_t x) noexcept nogil:
    return -x if x < 0 else x


cdef inline Py_ssize_t tile_edge(Py_ssize_t itemsize) noexcept nogil:
    """Edge (in items) of the square scratch tile, or 0 if tiling is not worth it."""
    if itemsize <= 4:
        return 64   # <= 16 KiB
    if itemsize <= 16:
        return 32   # <= 16 KiB
    if itemsize <= 64:
        return 16   # <= 16 KiB
    return 0


cdef inline void copy_tile(const uint8_t* s, int64_t s_t, int64_t s_i, uint8_t* d,
                           int64_t d_t, int64_t d_i, int64_t nt, int64_t ni,
                           Py_ssize_t itemsize, Py_ssize_t swap, uint8_t* scratch) noexcept nogil:
    """Copy an ``nt x ni`` block: item (t, i) at ``s + t*s_t + i*s_i`` -> ``d + t*d_t + i*d_i``.

    The block is gathered through ``scratch`` (laid out [i][t], dense): one pass
    reads src lines along the src-dense ``t`` axis, the other writes dst lines
    along the dst-dense ``i`` axis, so each cache line of either buffer is
    touched in one go even when the large strides alias in the cache.
    """
    cdef int64_t t, i
    cdef int64_t row = nt * itemsize
    for i in range(ni):
        copy_line(s + i * s_i, s_t, scratch + i * row, itemsize, nt, itemsize, swap)
    for t in range(nt):
        copy_line(scratch + t * itemsize, row, d + t * d_t, d_i, ni, itemsize, 1)


cdef inline void row_group_layout(int ndim, const int64_t* shape, const int64_t* sst,
                                  const int64_t* dst, int64_t src_off, int64_t dst_off,
                                  int64_t g, int64_t gdst, Layout* L) noexcept nogil:
    """The copy of ``g`` regions of ``shape`` (``1 <= ndim < ZF_MAX_NDIM``) that follow
    each other along the source's innermost dimension -- the ``k``-th at ``src_off + k *
    shape[-1] * sst[-1]`` in src and at ``dst_off + k * gdst`` in dst -- as one layout:
    the group is a dimension between the regions' outer dimensions and their rows, so
    that the copy reads the source in order, one source row of every region after the
    other, where region by region it reads short runs far apart.  Not normalised
    (that would put the group outermost, by its destination stride); the caller checks
    that the regions' destinations do not overlap, so that every byte lands as it would
    region by region."""
    cdef int d
    L.ndim = ndim + 1
    L.src_off = src_off
    L.dst_off = dst_off
    for d in range(ndim - 1):
        L.shape[d] = shape[d]
        L.sst[d] = sst[d]
        L.dst[d] = dst[d]
    L.shape[ndim - 1] = g
    L.sst[ndim - 1] = shape[ndim - 1] * sst[ndim - 1]
    L.dst[ndim - 1] = gdst
    L.shape[ndim] = shape[ndim - 1]
    L.sst[ndim] = sst[ndim - 1]
    L.dst[ndim] = dst[ndim - 1]


cdef inline void strided_copy(const uint8_t* src, uint8_t* dst, Layout* L,
                              Py_ssize_t itemsize, Py_ssize_t swap) noexcept nogil:
    """Copy every item of a normalised layout (see ``normalize_layout``)."""
    strided_copy_stream(src, dst, L, itemsize, swap, False)


cdef inline void strided_copy_stream(const uint8_t* src, uint8_t* dst, Layout* L,
                                     Py_ssize_t itemsize, Py_ssize_t swap,
                                     bint stream) noexcept nogil:
    """Copy every item of a normalised layout (see ``normalize_layout``); with
    ``stream``, runs of at least a cache line that start on one are written with
    non-temporal stores (``zf_stream_run``: the caller fences).

    Paths, picked once per call:

    * rank 0: one item;
    * innermost dim contiguous in both buffers and no swap: one ``memcpy`` per
      run (a fully contiguous region is a single ``memcpy``);
    * dst-dense innermost dim with a far-strided src, and another dim along
      which src is dense: 2-D cache tiles over those two dims;
    * otherwise: ``copy_line`` along the innermost dim.

    Outer dims are walked with an odometer (no recursion).
    """
    cdef int nd = L.ndim
    cdef int inner, tdim, d, k, nouter
    cdef int64_t n_in, s_in, d_in, best, bt, bi, t0, i0, nt, ni
    cdef int64_t so, do
    cdef int64_t oshape[ZF_MAX_NDIM]
    cdef int64_t osst[ZF_MAX_NDIM]
    cdef int64_t odst[ZF_MAX_NDIM]
    cdef int64_t idx[ZF_MAX_NDIM]
    cdef uint8_t scratch[ZF_TILE_BYTES]
    cdef Py_ssize_t edge
    cdef bint run

    src = src + L.src_off
    dst = dst + L.dst_off
    if nd == 0:
        copy_line(src, itemsize, dst, itemsize, 1, itemsize, swap)
        return

    inner = nd - 1
    n_in = L.shape[inner]
    s_in = L.sst[inner]
    d_in = L.dst[inner]
    run = swap <= 1 and s_in == itemsize and d_in == itemsize

    # Tiling: dst dense along `inner`, src far-strided along it, and src dense
    # along some other dim `tdim`.
    tdim = -1
    edge = tile_edge(itemsize)
    if not run and edge > 0 and d_in == itemsize and abs64(s_in) > 64 and n_in >= 8:
        best = 65
        for d in range(inner):
            if L.sst[d] != 0 and abs64(L.sst[d]) < best and L.shape[d] >= 8:
                best = abs64(L.sst[d])
                tdim = d

    nouter = 0
    for d in range(inner):
        if d != tdim:
            oshape[nouter] = L.shape[d]
            osst[nouter] = L.sst[d]
            odst[nouter] = L.dst[d]
            idx[nouter] = 0
            nouter += 1

    # short runs far apart in src (a chunk's rows in a large array) get the run
    # ZF_PREFETCH_RUNS ahead along the innermost outer dim prefetched: the hardware
    # prefetchers follow such a pattern poorly (2x slower than a dense copy here)
    cdef int64_t pf = 0
    # ... or, when that dim is a row of regions gathered together (``row_group_layout``:
    # its runs follow each other in src), the whole row's span ZF_PREFETCH_RUNS rows
    # ahead along the dim outside it, once per row
    cdef int64_t pf_span = n_in * itemsize
    cdef bint pf_rows = False
    # short runs of whole 16-byte blocks: inline moves, not a memcpy call each
    cdef bint short_run = run and n_in * itemsize <= 512 and (n_in * itemsize) % 16 == 0
    if run and nouter > 0 and n_in * itemsize <= 512:
        if abs64(osst[nouter - 1]) > 256:
            pf = ZF_PREFETCH_RUNS * osst[nouter - 1]
        elif (nouter > 1 and osst[nouter - 1] == n_in * itemsize
                and abs64(osst[nouter - 2]) > oshape[nouter - 1] * n_in * itemsize):
            pf = ZF_PREFETCH_RUNS * osst[nouter - 2]
            pf_span = oshape[nouter - 1] * n_in * itemsize
            pf_rows = True

    so = 0
    do = 0
    while True:
        if run:
            if pf != 0 and (not pf_rows or idx[nouter - 1] == 0):
                zf_prefetch_run(src + so + pf, <size_t>pf_span)
            if stream and n_in * itemsize >= 64 and ((<uintptr_t>(dst + do)) & 63) == 0:
                zf_stream_run(dst + do, src + so, <size_t>(n_in * itemsize))
            elif short_run:
                zf_copy_short(dst + do, src + so, <size_t>(n_in * itemsize))
            else:
                memcpy(dst + do, src + so, <size_t>(n_in * itemsize))
        elif tdim >= 0:
            nt = L.shape[tdim]
            t0 = 0
            while t0 < nt:
                bt = nt - t0
                if bt > edge:
                    bt = edge
                i0 = 0
                while i0 < n_in:
                    bi = n_in - i0
                    if bi > edge:
                        bi = edge
                    copy_tile(src + so + t0 * L.sst[tdim] + i0 * s_in, L.sst[tdim], s_in,
                              dst + do + t0 * L.dst[tdim] + i0 * d_in, L.dst[tdim], d_in,
                              bt, bi, itemsize, swap, scratch)
                    i0 += bi
                t0 += bt
        else:
            copy_line(src + so, s_in, dst + do, d_in, n_in, itemsize, swap)
        # advance the odometer over the outer dims
        k = nouter - 1
        while k >= 0:
            idx[k] += 1
            so += osst[k]
            do += odst[k]
            if idx[k] < oshape[k]:
                break
            so -= osst[k] * oshape[k]
            do -= odst[k] * oshape[k]
            idx[k] = 0
            k -= 1
        if k < 0:
            break


# --------------------------------------------------------------------------
# fills (``_assemble.fill_region``, ``_decode.ShardFiles``)
# --------------------------------------------------------------------------

cdef inline void _fill_run(uint8_t* p, const uint8_t* fill, Py_ssize_t k, int64_t nbytes) noexcept nogil:
    """Fill ``nbytes`` (a multiple of ``k``) at ``p`` by doubling memcpy."""
    cdef int64_t done = k, step
    memcpy(p, fill, <size_t>k)
    while done < nbytes:
        step = done if done <= nbytes - done else nbytes - done
        memcpy(p + done, p, <size_t>step)
        done += step


cdef inline void _fill_line(uint8_t* p, int64_t stride, int64_t n, const uint8_t* fill,
                     Py_ssize_t k) noexcept nogil:
    cdef int64_t i
    cdef uint8_t v8
    cdef uint16_t v16
    cdef uint32_t v32
    cdef uint64_t v64
    if k == 1:
        v8 = fill[0]
        for i in range(n):
            p[i * stride] = v8
    elif k == 2:
        v16 = load16(fill)
        for i in range(n):
            store16(p + i * stride, v16)
    elif k == 4:
        v32 = load32(fill)
        for i in range(n):
            store32(p + i * stride, v32)
    elif k == 8:
        v64 = load64(fill)
        for i in range(n):
            store64(p + i * stride, v64)
    else:
        for i in range(n):
            memcpy(p + i * stride, fill, <size_t>k)


cdef inline void strided_fill(uint8_t* dst, Layout* L, const uint8_t* fill, Py_ssize_t k) noexcept nogil:
    """Write the ``k``-byte item ``fill`` at every index of the destination side of
    ``L`` (normalised with source strides of 0)."""
    cdef int nd = L.ndim
    cdef int inner, j
    cdef int64_t n_in, d_in, nrun, off = 0
    cdef int64_t idx[ZF_MAX_NDIM]
    cdef uint8_t* first = NULL
    cdef bint same = True
    cdef bint run
    cdef Py_ssize_t b

    dst = dst + L.dst_off
    if nd == 0:
        memcpy(dst, fill, <size_t>k)
        return
    for b in range(1, k):
        if fill[b] != fill[0]:
            same = False
            break
    inner = nd - 1
    n_in = L.shape[inner]
    d_in = L.dst[inner]
    run = d_in == k
    nrun = n_in * k
    for j in range(inner):
        idx[j] = 0
    while True:
        if not run:
            _fill_line(dst + off, d_in, n_in, fill, k)
        elif same:
            memset(dst + off, fill[0], <size_t>nrun)
        elif first == NULL:
            first = dst + off
            _fill_run(first, fill, k, nrun)
        else:
            memmove(dst + off, first, <size_t>nrun)
        j = inner - 1
        while j >= 0:
            idx[j] += 1
            off += L.dst[j]
            if idx[j] < L.shape[j]:
                break
            off -= L.dst[j] * L.shape[j]
            idx[j] = 0
            j -= 1
        if j < 0:
            break


cdef inline void box_fill(int ndim, const int64_t* start, const int64_t* count,
                          const int64_t* cshape, const int64_t* cps, const int64_t* cstrides,
                          const int64_t* ostrides, const int64_t* first, const int64_t* last,
                          const int64_t* sfirst, const int64_t* slast, int64_t nshards,
                          int64_t* shards, int64_t* bounds, int64_t* inner, int64_t* src,
                          int64_t* dst, int64_t* shapes) noexcept nogil:
    """The rows of a step-1 box (``_indexing.box_table``, and the box reads of
    ``_decode``): an odometer over the shards it touches (``sfirst`` to ``slast``,
    ``nshards`` of them; chunks ``first`` to ``last``; ``cps`` chunks per shard), and
    inside each an odometer over its chunks in the box.  Writes each shard's
    coordinates (``shards``, ``nshards`` x ``ndim``) and first row (``bounds``, and
    ``bounds[nshards]``: the number of rows), and per row the chunk's index in its
    shard (``inner``), the byte offsets of its part of the box in the chunk
    (``cstrides``) and in the output (``ostrides``), and that part's shape
    (``shapes``, rows x ``ndim``)."""
    cdef int d
    cdef int64_t g, row = 0, lin, so, do, lo, hi, e0, e1
    cdef int64_t s[ZF_MAX_NDIM]
    cdef int64_t k[ZF_MAX_NDIM]
    cdef int64_t klo[ZF_MAX_NDIM]
    cdef int64_t khi[ZF_MAX_NDIM]
    cdef bint more
    for d in range(ndim):
        s[d] = sfirst[d]
    for g in range(nshards):
        bounds[g] = row
        for d in range(ndim):
            shards[g * ndim + d] = s[d]
            lo = s[d] * cps[d]
            # (the shard's last chunk, or the last index: no overflow near 2**63)
            hi = lo + (cps[d] - 1) if cps[d] - 1 <= INT64_MAX - lo else INT64_MAX
            klo[d] = first[d] if first[d] > lo else lo
            khi[d] = last[d] if last[d] < hi else hi
            k[d] = klo[d]
        more = True
        while more:
            lin = 0
            so = 0
            do = 0
            for d in range(ndim):
                lin = lin * cps[d] + (k[d] - s[d] * cps[d])
                e0 = k[d] * cshape[d]
                # (the chunk's end, cut at the box's: k * cshape <= start + count - 1,
                # so neither sum overflows near 2**63)
                e1 = (e0 + cshape[d] if cshape[d] <= start[d] + count[d] - e0
                      else start[d] + count[d])
                if e0 < start[d]:
                    e0 = start[d]
                so += (e0 - k[d] * cshape[d]) * cstrides[d]
                do += (e0 - start[d]) * ostrides[d]
                shapes[row * ndim + d] = e1 - e0
            inner[row] = lin
            src[row] = so
            dst[row] = do
            row += 1
            # next chunk of this shard (last dim fastest)
            more = False
            d = ndim - 1
            while d >= 0:
                k[d] += 1
                if k[d] <= khi[d]:
                    more = True
                    break
                k[d] = klo[d]
                d -= 1
        # next shard
        d = ndim - 1
        while d >= 0:
            s[d] += 1
            if s[d] <= slast[d]:
                break
            s[d] = sfirst[d]
            d -= 1
    bounds[nshards] = row
