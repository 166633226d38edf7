# cython: language_level=3
"""Argument checks shared by the kernels that copy regions (``_assemble``, ``_decode``).

They run with the GIL before a kernel's ``nogil`` loop and raise ``ValueError``
naming the function (``func``), the buffer and the sizes, so that nothing in a
loop can touch bytes outside the buffers it was given.  ``cdef inline``: each
module compiles its own copy.
"""

from libc.stdint cimport int64_t, uint8_t

from _common cimport ZF_MAX_NDIM, checked_add, checked_mul


cdef inline tuple _tup(const int64_t[::1] a):
    return tuple([a[i] for i in range(a.shape[0])])


cdef inline bint _is_empty(const int64_t[::1] shape) noexcept:
    cdef Py_ssize_t d
    for d in range(shape.shape[0]):
        if shape[d] == 0:
            return True
    return False


cdef inline int _check_shape(str func, const int64_t[::1] shape) except -1:
    cdef Py_ssize_t d
    if shape.shape[0] > ZF_MAX_NDIM:
        raise ValueError(f"{func}: rank {shape.shape[0]} exceeds the maximum of {ZF_MAX_NDIM}")
    for d in range(shape.shape[0]):
        if shape[d] < 0:
            raise ValueError(f"{func}: shape {_tup(shape)} has a negative dim")
    return 0


cdef inline int _check_dst_strides(str func, const int64_t[::1] strides,
                            const int64_t[::1] shape) except -1:
    cdef Py_ssize_t d
    for d in range(shape.shape[0]):
        if strides[d] == 0 and shape[d] > 1:
            raise ValueError(
                f"{func}: dst_strides {_tup(strides)} has a zero stride along dim {d} "
                f"of shape {_tup(shape)}; every index would write the same bytes"
            )
    return 0


cdef inline int _check_span(str func, str name, Py_ssize_t buflen, Py_ssize_t offset,
                     const int64_t[::1] strides, const int64_t[::1] shape,
                     Py_ssize_t itemsize) except -1:
    """Raise unless every byte of the (non-empty) region lies in ``[0, buflen)``."""
    cdef int64_t lo = offset, hi = offset, ext
    cdef Py_ssize_t d
    cdef bint overflow = False
    for d in range(shape.shape[0]):
        if checked_mul(shape[d] - 1, strides[d], &ext):
            overflow = True
            break
        if ext > 0:
            overflow = checked_add(hi, ext, &hi)
        else:
            overflow = checked_add(lo, ext, &lo)
        if overflow:
            break
    if not overflow:
        overflow = checked_add(hi, itemsize, &hi)
    if overflow:
        raise ValueError(
            f"{func}: region of shape {_tup(shape)} with {name}_offset {offset} and "
            f"{name}_strides {_tup(strides)} overflows int64 byte offsets "
            f"({name} has {buflen} bytes)"
        )
    if lo < 0 or hi > buflen:
        raise ValueError(
            f"{func}: region of shape {_tup(shape)} with {name}_offset {offset}, "
            f"{name}_strides {_tup(strides)} and itemsize {itemsize} touches bytes "
            f"[{lo}, {hi}) but {name} has {buflen} bytes"
        )
    return 0


cdef inline int _check_fill(str func, const uint8_t[::1] fill, Py_ssize_t itemsize) except -1:
    """``fill`` (the fill value as one item's bytes) holds exactly one item."""
    if fill.shape[0] != itemsize:
        raise ValueError(f"{func}: fill holds {fill.shape[0]} bytes, an item {itemsize}")
    return 0


cdef inline int _check_item(str func, Py_ssize_t itemsize, Py_ssize_t swap_unit) except -1:
    if itemsize < 1:
        raise ValueError(f"{func}: itemsize must be >= 1, got {itemsize}")
    if swap_unit != 1 and swap_unit != 2 and swap_unit != 4 and swap_unit != 8:
        raise ValueError(f"{func}: swap_unit must be 1, 2, 4 or 8, got {swap_unit}")
    if itemsize % swap_unit != 0:
        raise ValueError(
            f"{func}: itemsize {itemsize} is not a multiple of swap_unit {swap_unit}"
        )
    return 0


cdef inline const uint8_t* _cptr(const uint8_t[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline uint8_t* _ptr(uint8_t[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL
