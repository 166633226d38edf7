# cython: language_level=3
"""The copy engine: strided N-d copies, fills, uniformity checks, transposes and byte swaps.

* ``copy_region`` copies an N-d region of opaque ``itemsize``-byte items
  between two byte buffers described by offsets and signed byte strides,
  optionally reversing the bytes of each ``swap_unit``-byte group on the way
  (byte order fused into the copy; a transposition is just permuted strides).
* ``fill_region`` writes one item at every index of a region.
* ``is_uniform`` tells whether a buffer is one item repeated (empty-chunk
  detection on write).
* ``transpose`` writes the C-order bytes of a permuted chunk, and
  ``byteswap_copy`` / ``byteswap_inplace`` reverse the bytes of packed items:
  the whole-chunk forms of what ``copy_region`` fuses into its copies, used by
  the ``transpose`` and ``bytes`` codecs on the general path.

All three validate with the GIL -- ranks, shapes, and that the lowest and
highest byte touched in every buffer lie inside it -- and then run their
kernel inside ``with nogil:``. Out-of-bounds regions raise ``ValueError``;
nothing in here can write outside the buffers it was given.

Not checked (unspecified result, never a crash): ``src`` overlapping ``dst``,
and distinct destination indices that land on overlapping bytes. Destination
strides of 0 along a dim of extent > 1 are rejected.

Twins: ``zarrfast.kernels.reference.copy_region``,
``zarrfast.kernels.reference.copy_regions``, ``zarrfast.kernels.reference.fill_region``,
``zarrfast.kernels.reference.is_uniform``, ``zarrfast.kernels.reference.transpose``,
``zarrfast.kernels.reference.byteswap_inplace``,
``zarrfast.kernels.reference.byteswap_copy``.
"""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcmp, memcpy, memmove, memset

from _checks cimport (
    _check_dst_strides,
    _check_item,
    _check_shape,
    _check_span,
    _cptr,
    _is_empty,
    _ptr,
    _tup,
)
from _common cimport (
    ZF_MAX_NDIM,
    Layout,
    bswap16,
    bswap32,
    bswap64,
    checked_mul,
    copy_line,
    load16,
    load32,
    load64,
    normalize_layout,
    store16,
    store32,
    store64,
    strided_copy,
    strided_copy_stream,
    strided_fill,
    _fill_run,
    zf_stream_fence,
)


# --------------------------------------------------------------------------
# copy_region
# --------------------------------------------------------------------------

def copy_region(const uint8_t[::1] src not None, Py_ssize_t src_offset,
                const int64_t[::1] src_strides not None,
                uint8_t[::1] dst not None, Py_ssize_t dst_offset,
                const int64_t[::1] dst_strides not None,
                const int64_t[::1] shape not None, Py_ssize_t itemsize,
                Py_ssize_t swap_unit=1):
    """Copy the items of an N-d region from ``src`` to ``dst``.

    For every index tuple ``i`` of ``np.ndindex(*shape)``, the ``itemsize``
    bytes at ``src_offset + sum(i * src_strides)`` are copied to
    ``dst_offset + sum(i * dst_strides)``, with the bytes of each
    ``swap_unit``-byte group reversed when ``swap_unit > 1``.

    Parameters
    ----------
    src : contiguous bytes-like
    src_offset : int
        Byte offset of item ``(0, ..., 0)`` in ``src``.
    src_strides : int64 buffer
        Byte strides, any sign; 0 broadcasts one src item along a dim.
    dst : writable contiguous bytes-like
    dst_offset : int
    dst_strides : int64 buffer
        Byte strides, any sign, non-zero along dims of extent > 1.
    shape : int64 buffer
        Extent of the region, same length as both stride arrays. A zero
        extent makes the call a no-op (offsets are then not checked).
    itemsize : int >= 1
    swap_unit : {1, 2, 4, 8}
        Must divide ``itemsize``.

    Raises
    ------
    ValueError
        Ranks differ or exceed 64, a dim is negative, ``itemsize`` or
        ``swap_unit`` is invalid, a dst stride is 0, or the region reaches
        outside ``src`` or ``dst`` (the message names the buffer sizes).
    """
    cdef Py_ssize_t ndim = shape.shape[0]
    cdef Layout L
    if src_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
        raise ValueError(
            f"copy_region: shape {_tup(shape)}, src_strides {_tup(src_strides)} and "
            f"dst_strides {_tup(dst_strides)} must have the same length"
        )
    _check_shape("copy_region", shape)
    _check_item("copy_region", itemsize, swap_unit)
    if _is_empty(shape):
        return
    _check_dst_strides("copy_region", dst_strides, shape)
    _check_span("copy_region", "src", src.shape[0], src_offset, src_strides, shape, itemsize)
    _check_span("copy_region", "dst", dst.shape[0], dst_offset, dst_strides, shape, itemsize)

    normalize_layout(<int>ndim, &shape[0] if ndim else NULL,
                     &src_strides[0] if ndim else NULL,
                     &dst_strides[0] if ndim else NULL,
                     src_offset, dst_offset, &L)
    cdef const uint8_t* s = _cptr(src)
    cdef uint8_t* d = _ptr(dst)
    with nogil:
        strided_copy(s, d, &L, itemsize, swap_unit)


def copy_regions(const uint8_t[::1] src not None, const int64_t[::1] src_offsets not None,
                 const int64_t[::1] src_strides not None,
                 uint8_t[::1] dst not None, const int64_t[::1] dst_offsets not None,
                 const int64_t[::1] dst_strides not None,
                 const int64_t[:, ::1] shapes not None, Py_ssize_t itemsize,
                 Py_ssize_t swap_unit=1, bint stream=False):
    """``copy_region`` for many regions of the same two buffers in one call: region
    ``r`` has shape ``shapes[r]`` and starts at ``src_offsets[r]`` / ``dst_offsets[r]``;
    the strides are shared.  Every region is validated (with the GIL) before any
    byte is copied, then all are copied in one ``nogil`` loop.  Raises like
    ``copy_region``, naming the row.

    ``stream``: runs of whole cache lines of ``dst`` are written with non-temporal
    stores (for a large output written once, which the cache would not keep: no read
    of each line before it is written); the values are the same either way."""
    cdef Py_ssize_t n = shapes.shape[0], ndim = shapes.shape[1], r
    cdef bint* skip
    if src_offsets.shape[0] != n or dst_offsets.shape[0] != n:
        raise ValueError(
            f"copy_regions: {n} shapes but {src_offsets.shape[0]} src_offsets and "
            f"{dst_offsets.shape[0]} dst_offsets"
        )
    if src_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
        raise ValueError(
            f"copy_regions: shapes of rank {ndim}, src_strides {_tup(src_strides)} and "
            f"dst_strides {_tup(dst_strides)} must have the same length"
        )
    if ndim > ZF_MAX_NDIM:
        raise ValueError(f"copy_regions: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
    _check_item("copy_regions", itemsize, swap_unit)
    if n == 0:
        return
    # (no table of normalised layouts: at 1.5 KiB a row it cost a fresh page every few
    # rows; each row's layout is made on the stack just before its copy)
    skip = <bint*>PyMem_Malloc(n * sizeof(bint))
    if skip == NULL:
        raise MemoryError()
    cdef const uint8_t* s = _cptr(src)
    cdef uint8_t* d = _ptr(dst)
    cdef Layout L
    cdef const int64_t* sst = &src_strides[0] if ndim else NULL
    cdef const int64_t* dstr = &dst_strides[0] if ndim else NULL
    try:
        for r in range(n):
            try:
                _check_shape("copy_regions", shapes[r])
                skip[r] = _is_empty(shapes[r])
                if skip[r]:
                    continue
                _check_dst_strides("copy_regions", dst_strides, shapes[r])
                _check_span("copy_regions", "src", src.shape[0], src_offsets[r], src_strides,
                            shapes[r], itemsize)
                _check_span("copy_regions", "dst", dst.shape[0], dst_offsets[r], dst_strides,
                            shapes[r], itemsize)
            except ValueError as e:
                raise ValueError(f"{e} (region {r})") from None
        with nogil:
            for r in range(n):
                if not skip[r]:
                    normalize_layout(<int>ndim, &shapes[r, 0] if ndim else NULL, sst, dstr,
                                     src_offsets[r], dst_offsets[r], &L)
                    strided_copy_stream(s, d, &L, itemsize, swap_unit, stream)
            if stream:
                zf_stream_fence()  # (the streamed stores are seen before the call returns)
    finally:
        PyMem_Free(skip)


# --------------------------------------------------------------------------
# fill_region
# --------------------------------------------------------------------------

def fill_region(uint8_t[::1] dst not None, Py_ssize_t dst_offset,
                const int64_t[::1] dst_strides not None, const int64_t[::1] shape not None,
                const uint8_t[::1] fill not None):
    """Write the item ``fill`` (``len(fill)`` bytes) at every index of a region of ``dst``.

    Parameters
    ----------
    dst : writable contiguous bytes-like
    dst_offset : int
        Byte offset of item ``(0, ..., 0)``.
    dst_strides : int64 buffer
        Byte strides, any sign, non-zero along dims of extent > 1.
    shape : int64 buffer
        Same length as ``dst_strides``; a zero extent makes the call a no-op.
    fill : contiguous bytes-like, ``len(fill) >= 1``

    Raises
    ------
    ValueError
        As ``copy_region`` for the dst side, or ``fill`` is empty.
    """
    cdef Py_ssize_t ndim = shape.shape[0]
    cdef Py_ssize_t k = fill.shape[0]
    cdef Layout L
    if dst_strides.shape[0] != ndim:
        raise ValueError(
            f"fill_region: shape {_tup(shape)} and dst_strides {_tup(dst_strides)} "
            f"must have the same length"
        )
    _check_shape("fill_region", shape)
    if k < 1:
        raise ValueError("fill_region: fill must be at least 1 byte long")
    if _is_empty(shape):
        return
    _check_dst_strides("fill_region", dst_strides, shape)
    _check_span("fill_region", "dst", dst.shape[0], dst_offset, dst_strides, shape, k)

    # The engine's normaliser wants src strides too: give it a broadcast src.
    cdef int64_t zeros[ZF_MAX_NDIM]
    cdef Py_ssize_t d
    for d in range(ndim):
        zeros[d] = 0
    normalize_layout(<int>ndim, &shape[0] if ndim else NULL, zeros,
                     &dst_strides[0] if ndim else NULL, 0, dst_offset, &L)
    cdef uint8_t* p = _ptr(dst)
    cdef const uint8_t* f = &fill[0]
    with nogil:
        strided_fill(p, &L, f, k)


# --------------------------------------------------------------------------
# is_uniform
# --------------------------------------------------------------------------

cdef enum:
    _PATTERN_BYTES = 4096


cdef bint _uniform(const uint8_t* b, int64_t n, const uint8_t* fill, Py_ssize_t k) noexcept nogil:
    cdef uint8_t pattern[_PATTERN_BYTES]
    cdef int64_t plen, off, m
    if memcmp(b, fill, <size_t>k) != 0:
        return False
    if k > _PATTERN_BYTES // 2:
        # large items: each item equals its predecessor
        return n == k or memcmp(b, b + k, <size_t>(n - k)) == 0
    # Compare block by block with an in-cache pattern of whole items: one
    # memory stream, early exit on the first differing block.
    plen = (_PATTERN_BYTES // k) * k
    _fill_run(pattern, fill, k, plen)
    off = 0
    while off < n:
        m = n - off
        if m > plen:
            m = plen
        if memcmp(b + off, pattern, <size_t>m) != 0:
            return False
        off += m
    return True


def is_uniform(const uint8_t[::1] buf not None, const uint8_t[::1] fill not None):
    """Return True iff ``buf`` is the item ``fill`` repeated (True for an empty ``buf``).

    Raises
    ------
    ValueError
        ``fill`` is empty or ``len(buf)`` is not a multiple of ``len(fill)``.
    """
    cdef Py_ssize_t n = buf.shape[0]
    cdef Py_ssize_t k = fill.shape[0]
    cdef bint result
    if k < 1:
        raise ValueError("is_uniform: fill must be at least 1 byte long")
    if n % k != 0:
        raise ValueError(
            f"is_uniform: buffer length {n} is not a multiple of the fill length {k}"
        )
    if n == 0:
        return True
    cdef const uint8_t* b = &buf[0]
    cdef const uint8_t* f = &fill[0]
    with nogil:
        result = _uniform(b, n, f, k)
    return result


# -- byte-order swapping of packed items (folded in from _byteswap) ------------------

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


# -- axis permutation of a C-contiguous chunk (folded in from _transpose) -------------



def transpose(const uint8_t[::1] src not None, uint8_t[::1] dst not None,
              const int64_t[::1] shape not None, const int64_t[::1] perm not None,
              Py_ssize_t itemsize):
    """Write the C-order bytes of ``np.transpose(src_array, perm)`` into ``dst``.

    Parameters
    ----------
    src : contiguous bytes-like
        A C-contiguous array of ``shape`` with items of ``itemsize`` bytes.
    dst : writable contiguous bytes-like
        Receives the array of shape ``[shape[p] for p in perm]`` in C order;
        must not overlap ``src``.
    shape, perm : int64 buffers of equal length (the rank, 0..64)
        ``perm`` must be a permutation of ``range(rank)``.
    itemsize : int >= 1

    Raises
    ------
    ValueError
        Ranks differ, a dim is negative, ``perm`` is not a permutation, or a
        buffer is not exactly ``prod(shape) * itemsize`` bytes.
    """
    cdef Py_ssize_t ndim = shape.shape[0]
    cdef Py_ssize_t d, j
    cdef int64_t nbytes, p
    cdef char seen[ZF_MAX_NDIM]
    cdef int64_t cstride[ZF_MAX_NDIM]
    cdef int64_t oshape[ZF_MAX_NDIM]
    cdef int64_t osst[ZF_MAX_NDIM]
    cdef int64_t odst[ZF_MAX_NDIM]
    cdef Layout L
    cdef bint overflow = False

    if perm.shape[0] != ndim:
        raise ValueError(
            f"transpose: shape {_tup(shape)} has rank {ndim} but perm {_tup(perm)} "
            f"has {perm.shape[0]} entries"
        )
    if ndim > ZF_MAX_NDIM:
        raise ValueError(f"transpose: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
    if itemsize < 1:
        raise ValueError(f"transpose: itemsize must be >= 1, got {itemsize}")
    for d in range(ndim):
        if shape[d] < 0:
            raise ValueError(f"transpose: shape {_tup(shape)} has a negative dim")
        seen[d] = 0
    for d in range(ndim):
        p = perm[d]
        if p < 0 or p >= ndim or seen[p]:
            raise ValueError(
                f"transpose: perm {_tup(perm)} is not a permutation of range({ndim})"
            )
        seen[p] = 1

    nbytes = itemsize
    for d in range(ndim - 1, -1, -1):
        cstride[d] = nbytes
        if not overflow and checked_mul(nbytes, shape[d], &nbytes):
            overflow = True
    for d in range(ndim):
        if shape[d] == 0:
            nbytes = 0
            overflow = False
    if overflow:
        raise ValueError(
            f"transpose: shape {_tup(shape)} with itemsize {itemsize} overflows int64"
        )
    if src.shape[0] != nbytes or dst.shape[0] != nbytes:
        raise ValueError(
            f"transpose: shape {_tup(shape)} with itemsize {itemsize} needs {nbytes} bytes, "
            f"but src has {src.shape[0]} and dst has {dst.shape[0]}"
        )
    if nbytes == 0:
        return

    # Output dim j walks src axis perm[j]; dst is the C layout of the output.
    p = itemsize
    for j in range(ndim - 1, -1, -1):
        oshape[j] = shape[perm[j]]
        osst[j] = cstride[perm[j]]
        odst[j] = p
        p *= oshape[j]
    normalize_layout(<int>ndim, oshape, osst, odst, 0, 0, &L)

    cdef const uint8_t* s = &src[0]
    cdef uint8_t* o = &dst[0]
    with nogil:
        strided_copy(s, o, &L, itemsize, 1)
