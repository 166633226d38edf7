# cython: language_level=3
"""Checking a decoded shard index: no Python object per inner chunk.

A shard index is a C-contiguous ``uint64`` array of shape ``(n, 2)``: one
``(offset, nbytes)`` row per inner chunk, both ``2**64 - 1`` for an empty one.
``check_index`` validates the whole index in one ``nogil`` call and returns
``(code, a, b)``:

==== ======================================================================
code meaning
==== ======================================================================
0    fine; ``a = b = -1``
1    entry ``a`` is half empty: exactly one of offset/nbytes is ``2**64-1``
2    entry ``a`` has ``offset + nbytes`` overflowing uint64
3    entry ``a`` starts before ``low`` (``offset < low``; e.g. inside an
     index stored at the start of the shard)
4    entry ``a`` ends after ``high`` (``offset + nbytes > high``; pass
     ``high = 2**64 - 1`` when the shard's size is unknown)
5    entries ``a`` and ``b`` overlap
==== ======================================================================

``b`` is -1 unless ``code == 5``. Which problem is reported:

* Codes 1-4 first: the first entry (in entry order) with any of them, with
  the lowest code that applies to it. Codes 2-4 apply only to used entries
  (neither field ``2**64-1``); 3 and 4 apply to zero-length entries too.
* Only if there is none, overlaps. Ranges are ``[offset, offset + nbytes)``;
  empty and zero-length entries overlap nothing. Order the remaining entries
  by ``(offset, entry number)``; ``b`` is the first entry in that order whose
  range intersects the range of an entry before it, and ``a`` is that entry
  -- it is unique, and always ``b``'s immediate predecessor in the order (an
  earlier one reaching past ``b``'s start would also reach past the
  predecessor's start, which is at most ``b``'s, so the predecessor itself
  would be an earlier ``b``). Hence ``a``'s offset is at most ``b``'s, with
  ties broken by the lower entry number.

The kernel needs no sort when the entries are laid out in entry order (what
zarrfast writes): overlaps are then found in the same linear pass as codes
1-4. Otherwise (zarr-python, for one, lays inner chunks out in Morton order)
the used, non-zero-length entries' ``(offset - smallest offset, entry)`` go to
a ``malloc``'d buffer and are stably sorted by offset (entry order breaks
ties), then one linear pass compares each range's end with the next start.
The sort is a bucket sort on the top offset bits (one bucket per entry; real
layouts pack chunks densely, so buckets hold one or two entries and an
insertion sort finishes the job), falling back to an LSD radix sort with
digits of at most 11 bits when offsets cluster. Not libc ``qsort``: with a
comparator it took 5-10 ms on 65536 entries, slower than the NumPy code this
replaces.

Twin: ``zarrfast._reference.check_index``.
"""

from operator import index as _as_index

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


cdef _Entry* _radix_sort(_Entry* a, _Entry* tmp, Py_ssize_t m, int keybits,
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


cdef _Entry* _sort(_Entry* a, _Entry* tmp, Py_ssize_t m, int keybits,
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


cdef int _sorted_overlap(const uint64_t* idx, Py_ssize_t n, Py_ssize_t m,
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


cdef int _check(const uint64_t* idx, Py_ssize_t n, uint64_t low, uint64_t high,
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


def check_index(index not None, low, high):
    """Check a shard index of shape ``(n, 2)``; return ``(code, a, b)``.

    Parameters
    ----------
    index : uint64 buffer, C-contiguous, shape (n, 2)
        ``(offset, nbytes)`` per inner chunk; ``(2**64-1, 2**64-1)`` = empty.
    low : int, 0 <= low < 2**64
        No used entry may start before ``low`` (the index size for an index
        at the start of the shard, else 0).
    high : int, 0 <= high < 2**64
        No used entry may end after ``high`` (the shard data's size when
        known, else ``2**64 - 1``).

    Returns
    -------
    tuple[int, int, int]
        ``(0, -1, -1)`` if the index is fine, ``(code, a, -1)`` for codes 1-4
        (entry ``a``) and ``(5, a, b)`` for overlapping entries ``a`` and
        ``b``; codes and the precedence between problems are described in the
        module docstring.

    Raises
    ------
    ValueError
        ``index`` is not 2-d with a second dim of 2 (the message names its
        shape), is not uint64, or is not C-contiguous.
    TypeError
        ``low`` or ``high`` is not an integer (floats are refused, not truncated).
    OverflowError
        ``low`` or ``high`` is outside ``[0, 2**64)``.
    MemoryError
        No memory for the sort buffer (only needed for out-of-order entries).
    """
    # operator.index: a bare uint64_t argument would truncate floats
    cdef uint64_t lo = _as_index(low)
    cdef uint64_t hi = _as_index(high)
    shape = memoryview(index).shape
    if len(shape) != 2 or shape[1] != 2:
        raise ValueError(f"check_index: index has shape {shape}, expected (n, 2)")
    cdef const uint64_t[:, ::1] view = index
    cdef Py_ssize_t n = view.shape[0]
    cdef Py_ssize_t a = -1, b = -1
    cdef int code = 0
    if n == 0:
        return (0, -1, -1)
    cdef const uint64_t* p = &view[0, 0]
    with nogil:
        code = _check(p, n, lo, hi, &a, &b)
    if code < 0:
        raise MemoryError("check_index: cannot allocate the sort buffer")
    return (code, a, b)
