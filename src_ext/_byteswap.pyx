# cython: language_level=3
"""Byte-order swapping of packed items (2, 4 or 8 bytes; 1 is a no-op).

Callers pass the size of the *component* to swap: a complex128 buffer is
swapped with ``unit=8`` (two float64 per item), complex64 with ``unit=4``.

Twin: ``zarrfast._reference.byteswap_inplace`` / ``byteswap_copy``.
"""

from libc.stdint cimport uint8_t
from libc.string cimport memmove

from _common cimport bswap16, bswap32, bswap64, copy_line, load16, load32, load64
from _common cimport store16, store32, store64


cdef void _swap_inplace(uint8_t* p, Py_ssize_t n, Py_ssize_t unit) noexcept nogil:
    """Swap ``n`` items of ``unit`` bytes at ``p`` (single pointer: vectorisable)."""
    cdef Py_ssize_t i
    if unit == 2:
        for i in range(n):
            store16(p + 2 * i, bswap16(load16(p + 2 * i)))
    elif unit == 4:
        for i in range(n):
            store32(p + 4 * i, bswap32(load32(p + 4 * i)))
    elif unit == 8:
        for i in range(n):
            store64(p + 8 * i, bswap64(load64(p + 8 * i)))


cdef int _check_unit(Py_ssize_t nbytes, Py_ssize_t unit, str what) except -1:
    if unit != 1 and unit != 2 and unit != 4 and unit != 8:
        raise ValueError(f"{what}: unit must be 1, 2, 4 or 8, got {unit}")
    if nbytes % unit != 0:
        raise ValueError(
            f"{what}: buffer length {nbytes} is not a multiple of unit {unit}"
        )
    return 0


def byteswap_inplace(uint8_t[::1] buf not None, Py_ssize_t unit):
    """Reverse the bytes of every ``unit``-byte group of ``buf`` in place.

    Parameters
    ----------
    buf : writable contiguous bytes-like
    unit : {1, 2, 4, 8}
        ``len(buf)`` must be a multiple of it; 1 is a no-op.
    """
    cdef Py_ssize_t nbytes = buf.shape[0]
    _check_unit(nbytes, unit, "byteswap_inplace")
    if unit == 1 or nbytes == 0:
        return
    cdef uint8_t* p = &buf[0]
    with nogil:
        _swap_inplace(p, nbytes // unit, unit)


def byteswap_copy(const uint8_t[::1] src not None, uint8_t[::1] dst not None, Py_ssize_t unit):
    """Write ``src`` with every ``unit``-byte group reversed into ``dst``.

    Parameters
    ----------
    src : contiguous bytes-like
    dst : writable contiguous bytes-like, ``len(dst) == len(src)``
    unit : {1, 2, 4, 8}
        ``len(src)`` must be a multiple of it; 1 is a plain copy.
    """
    cdef Py_ssize_t nbytes = src.shape[0]
    if dst.shape[0] != nbytes:
        raise ValueError(
            f"byteswap_copy: src has {nbytes} bytes but dst has {dst.shape[0]}; they must match"
        )
    _check_unit(nbytes, unit, "byteswap_copy")
    if nbytes == 0:
        return
    cdef const uint8_t* s = &src[0]
    cdef uint8_t* d = &dst[0]
    with nogil:
        if unit == 1:
            memmove(d, s, <size_t>nbytes)
        else:
            copy_line(s, unit, d, unit, nbytes // unit, unit, unit)
