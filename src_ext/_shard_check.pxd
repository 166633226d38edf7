# cython: language_level=3
"""Checking a decoded shard index without the GIL (see ``_shard_index.pyx``, whose
module docstring gives the codes and which problem is reported): ``_check`` is
shared by ``_shard_index.check_index`` and ``_decode.ShardFiles``, which checks the
index of each shard it reads.  ``cdef inline``: each module compiles its own copy.
"""

from libc.stdint cimport UINT64_MAX, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset


ctypedef struct _Entry:
    uint64_t key       # offset - the smallest offset sorted
    Py_ssize_t j


cdef enum:
    _MAX_DIGIT_BITS = 11   # radix digits: <= 2048 buckets, the counts of a pass stay in L1
    _MAX_BUCKET = 32       # bucket sort: more entries than this in one bucket -> radix


cdef inline int _bit_length(uint64_t x) noexcept nogil:
    cdef int b = 0
    while b < 64 and (x >> b) != 0:
        b += 1
    return b


cdef inline _Entry* _radix_sort(_Entry* a, _Entry* tmp, Py_ssize_t m, int keybits,
                         Py_ssize_t* counts) noexcept nogil:
    """Stable LSD radix sort of ``a[:m]`` by ``key`` (``< 2**keybits``).

    ``counts`` has room for ``6 << _MAX_DIGIT_BITS`` counters. Digits on which
    all keys agree are skipped. Returns whichever of ``a`` / ``tmp`` holds
    the result.
    """
    cdef int passes = (keybits + _MAX_DIGIT_BITS - 1) // _MAX_DIGIT_BITS
    if passes == 0:
        return a
    cdef int bits = (keybits + passes - 1) // passes
    cdef uint64_t mask = (<uint64_t>1 << bits) - 1
    cdef Py_ssize_t nb = (<Py_ssize_t>1) << bits
    cdef int d, shift
    cdef Py_ssize_t i, pos, c
    cdef Py_ssize_t* cnt
    cdef _Entry* swap
    memset(counts, 0, <size_t>(passes << bits) * sizeof(Py_ssize_t))
    for i in range(m):
        for d in range(passes):
            counts[(d << bits) + <Py_ssize_t>((a[i].key >> (d * bits)) & mask)] += 1
    for d in range(passes):
        shift = d * bits
        cnt = counts + (d << bits)
        if cnt[(a[0].key >> shift) & mask] == m:
            continue
        pos = 0
        for i in range(nb):   # counts -> first position of each bucket
            c = cnt[i]
            cnt[i] = pos
            pos += c
        for i in range(m):
            c = <Py_ssize_t>((a[i].key >> shift) & mask)
            tmp[cnt[c]] = a[i]
            cnt[c] += 1
        swap = a
        a = tmp
        tmp = swap
    return a


cdef inline _Entry* _sort(_Entry* a, _Entry* tmp, Py_ssize_t m, int keybits,
                   Py_ssize_t* counts) noexcept nogil:
    """Stable sort of ``a[:m]`` (``m >= 2``) by ``key`` (``< 2**keybits``).

    Real layouts pack chunks densely, so their offsets spread evenly: one
    counting pass into about ``m`` buckets of the top key bits, then an
    insertion sort that only reorders entries within a bucket. Clustered keys
    (a bucket of more than ``_MAX_BUCKET``) go to the radix sort instead.
    ``counts`` has room for ``max(2 * m, 6 << _MAX_DIGIT_BITS)`` counters.
    Returns whichever of ``a`` / ``tmp`` holds the result.
    """
    cdef int bbits = _bit_length(<uint64_t>(m - 1))   # 2**bbits >= m buckets
    if bbits > keybits:
        bbits = keybits
    cdef int shift = keybits - bbits
    cdef Py_ssize_t nb = (<Py_ssize_t>1) << bbits
    cdef Py_ssize_t i, k, b, c, pos = 0
    cdef _Entry e
    memset(counts, 0, <size_t>nb * sizeof(Py_ssize_t))
    for i in range(m):
        counts[<Py_ssize_t>(a[i].key >> shift)] += 1
    for b in range(nb):   # counts -> first position of each bucket
        c = counts[b]
        if c > _MAX_BUCKET:
            return _radix_sort(a, tmp, m, keybits, counts)
        counts[b] = pos
        pos += c
    for i in range(m):
        b = <Py_ssize_t>(a[i].key >> shift)
        tmp[counts[b]] = a[i]
        counts[b] += 1
    for i in range(1, m):   # stable: only strictly greater keys move up
        e = tmp[i]
        k = i
        while k > 0 and tmp[k - 1].key > e.key:
            tmp[k] = tmp[k - 1]
            k -= 1
        tmp[k] = e
    return tmp


cdef inline int _sorted_overlap(const uint64_t* idx, Py_ssize_t n, Py_ssize_t m,
                         uint64_t lo, uint64_t hi,
                         Py_ssize_t* out_a, Py_ssize_t* out_b) noexcept nogil:
    """Code 5 or 0 for ``m >= 2`` used non-zero-length entries with offsets in
    ``[lo, hi]`` (all ranges valid); -1 if malloc failed."""
    cdef int keybits = _bit_length(hi - lo), code = 0
    cdef Py_ssize_t j, p
    cdef size_t ncounts = <size_t>(2 * m)
    if ncounts < (6 << _MAX_DIGIT_BITS):
        ncounts = 6 << _MAX_DIGIT_BITS
    cdef char* mem = <char*>malloc(<size_t>(2 * m) * sizeof(_Entry)
                                   + ncounts * sizeof(Py_ssize_t))
    if mem == NULL:
        return -1
    cdef _Entry* buf = <_Entry*>mem
    cdef Py_ssize_t* counts = <Py_ssize_t*>(mem + <size_t>(2 * m) * sizeof(_Entry))
    p = 0
    for j in range(n):
        if idx[2 * j] == UINT64_MAX or idx[2 * j + 1] == 0:   # empty (no half-empty ones left)
            continue
        buf[p].key = idx[2 * j] - lo
        buf[p].j = j
        p += 1
    cdef _Entry* srt = _sort(buf, buf + m, m, keybits, counts)
    for p in range(m - 1):
        if srt[p].key + idx[2 * srt[p].j + 1] > srt[p + 1].key:
            out_a[0] = srt[p].j
            out_b[0] = srt[p + 1].j
            code = 5
            break
    free(mem)
    return code


cdef inline int _check(const uint64_t* idx, Py_ssize_t n, uint64_t low, uint64_t high,
                Py_ssize_t* out_a, Py_ssize_t* out_b) noexcept nogil:
    """Return the code (see the module docstring), or -1 if malloc failed."""
    cdef Py_ssize_t j, m = 0
    cdef uint64_t off, nb, end
    cdef uint64_t min_off = UINT64_MAX, max_off = 0
    # last non-zero-length used entry in entry order, while offsets are non-decreasing
    cdef uint64_t prev_start = 0, prev_end = 0
    cdef Py_ssize_t prev_j = -1
    cdef Py_ssize_t ov_a = -1, ov_b = -1   # first adjacent overlap while sorted
    cdef bint in_order = True
    for j in range(n):
        off = idx[2 * j]
        nb = idx[2 * j + 1]
        if off == UINT64_MAX or nb == UINT64_MAX:
            if off != nb:
                out_a[0] = j
                return 1
            continue
        end = off + nb
        if end < off:
            out_a[0] = j
            return 2
        if off < low:
            out_a[0] = j
            return 3
        if end > high:
            out_a[0] = j
            return 4
        if nb == 0:
            continue
        m += 1
        if off < min_off:
            min_off = off
        if off > max_off:
            max_off = off
        if in_order:
            if prev_j >= 0:
                if off < prev_start:
                    in_order = False
                elif ov_a < 0 and prev_end > off:
                    ov_a = prev_j
                    ov_b = j
            prev_start = off
            prev_end = end
            prev_j = j
    if not in_order:
        return _sorted_overlap(idx, n, m, min_off, max_off, out_a, out_b)
    if ov_a < 0:
        return 0
    out_a[0] = ov_a
    out_b[0] = ov_b
    return 5
