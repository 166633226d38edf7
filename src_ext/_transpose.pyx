# cython: language_level=3
"""Permutation of the axes of a C-contiguous chunk, any rank (0..64).

``transpose(src, dst, shape, perm, itemsize)`` writes into ``dst`` the
C-contiguous bytes of ``np.transpose(src_array, perm)``. Items are opaque
blobs of ``itemsize`` bytes.

The copy runs on the shared strided engine of ``_common.pxd``: dims that stay
adjacent under ``perm`` are merged (the identity permutation becomes a single
``memcpy``), and a permutation that moves the src-contiguous axis away from
the innermost position is copied in cache tiles (64x64 items up to 4-byte
items, 32x32 up to 16 bytes), so large 2-D/3-D permutations stay
bandwidth-bound.

Twin: ``zarrfast._reference.transpose``.
"""

from libc.stdint cimport int64_t, uint8_t

from _common cimport ZF_MAX_NDIM, Layout, checked_mul, normalize_layout, strided_copy


cdef tuple _tup(const int64_t[::1] a):
    return tuple([a[i] for i in range(a.shape[0])])


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
