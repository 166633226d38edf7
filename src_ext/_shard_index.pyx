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

The loop and the sorts are in ``_shard_check.pxd``, which ``_decode`` shares (it
checks the index of every shard it reads whole).

Twin: ``zarrfast.kernels.reference.check_index``.
"""

from operator import index as _as_index

from libc.stdint cimport uint64_t

from _shard_check cimport _check


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
