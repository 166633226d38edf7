# cython: language_level=3
"""Batched chunk decoding: many zstd-compressed chunks decoded and placed into an
output in one ``nogil`` loop.

Per chunk the Python path costs an allocation for the decoded bytes and several
microseconds of interpreter time; for chunks of tens of KiB that is a third of
a full read.  ``ZstdDecoder.decode_regions`` takes a batch of compressed chunks
that sit in one buffer and, for each, decodes it into a reused per-decoder
scratch buffer and copies its selected region into ``dst`` with the strided copy
engine of ``copy_regions`` (or decodes it straight into ``dst`` when the chunk
is one contiguous block there).

zstd is not linked at build time: numcodecs carries it in its extension module,
and ``zarrfast.codecs.fastzstd`` hands the addresses of its C functions to
``bind_zstd`` (found with ``ctypes``), which checks the library's version.
When they cannot be found the callers keep the per-chunk path.

Every range is validated with the GIL before the loop.  The output of a decode
is bounded by the chunk's size (no decompression bombs), and a chunk that does
not decode to exactly that size is reported, never placed.

Twin: ``zarrfast._reference.zstd_decode_regions``.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, int8_t, uint8_t

import numpy as np

from _checks cimport _check_dst_strides, _check_item, _check_shape, _check_span, _is_empty
from _common cimport ZF_MAX_NDIM, Layout, normalize_layout, strided_copy

ctypedef void* (*zstd_create_fn)() noexcept nogil
ctypedef size_t (*zstd_free_fn)(void*) noexcept nogil
ctypedef size_t (*zstd_decompress_fn)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef unsigned (*zstd_is_error_fn)(size_t) noexcept nogil
ctypedef unsigned long long (*zstd_content_size_fn)(const void*, size_t) noexcept nogil
ctypedef unsigned (*zstd_version_fn)() noexcept nogil

cdef zstd_create_fn _create = NULL
cdef zstd_free_fn _free = NULL
cdef zstd_decompress_fn _decompress = NULL
cdef zstd_is_error_fn _is_error = NULL
cdef zstd_content_size_fn _content_size = NULL

cdef unsigned long long _CONTENTSIZE_UNKNOWN = <unsigned long long>(-1)
cdef unsigned long long _CONTENTSIZE_ERROR = <unsigned long long>(-2)

#: the oldest zstd whose one-shot decompression API (``ZSTD_decompressDCtx``,
#: ``ZSTD_getFrameContentSize``) is stable
MIN_ZSTD_VERSION = 10400

cdef enum:
    _DECODED = 0
    _NO_DATA = 1
    _FAILED = 2

#: ``decode_regions`` statuses
DECODED = _DECODED
NO_DATA = _NO_DATA
FAILED = _FAILED


def bind_zstd(size_t create, size_t free, size_t decompress, size_t is_error,
              size_t content_size, size_t version):
    """Use the zstd C functions at these addresses (``ZSTD_createDCtx``,
    ``ZSTD_freeDCtx``, ``ZSTD_decompressDCtx``, ``ZSTD_isError``,
    ``ZSTD_getFrameContentSize``, ``ZSTD_versionNumber``).  Returns the library's
    version number; raises ``ValueError`` (binding nothing) for a null address or a
    version older than ``MIN_ZSTD_VERSION``."""
    global _create, _free, _decompress, _is_error, _content_size
    if 0 in (create, free, decompress, is_error, content_size, version):
        raise ValueError("bind_zstd: a function address is null")
    cdef unsigned v = (<zstd_version_fn>version)()
    if v < MIN_ZSTD_VERSION:
        raise ValueError(f"bind_zstd: zstd {v} is older than {MIN_ZSTD_VERSION}")
    _create = <zstd_create_fn>create
    _free = <zstd_free_fn>free
    _decompress = <zstd_decompress_fn>decompress
    _is_error = <zstd_is_error_fn>is_error
    _content_size = <zstd_content_size_fn>content_size
    return v


def zstd_bound():
    """Whether ``bind_zstd`` has succeeded."""
    return _decompress != NULL


cdef class ZstdDecoder:
    """A zstd decompression context and a scratch buffer for one chunk size.  Not
    thread-safe: use one per thread."""

    cdef void* dctx
    cdef uint8_t* scratch
    cdef readonly int64_t nbytes

    def __cinit__(self, int64_t nbytes):
        if _decompress == NULL:
            raise RuntimeError("ZstdDecoder: zstd is not bound (bind_zstd)")
        if nbytes < 0:
            raise ValueError(f"ZstdDecoder: nbytes {nbytes} is negative")
        self.nbytes = nbytes
        self.dctx = _create()
        self.scratch = <uint8_t*>PyMem_Malloc(max(nbytes, 1))
        if self.dctx == NULL or self.scratch == NULL:
            raise MemoryError()

    def __dealloc__(self):
        if self.dctx != NULL:
            _free(self.dctx)
        PyMem_Free(self.scratch)

    def decode_regions(self, const uint8_t[::1] src not None,
                       const int64_t[::1] src_offsets not None,
                       const int64_t[::1] src_sizes not None,
                       const int64_t[::1] chunk_offsets not None,
                       const int64_t[::1] chunk_strides not None,
                       uint8_t[::1] dst not None, const int64_t[::1] dst_offsets not None,
                       const int64_t[::1] dst_strides not None,
                       const int64_t[:, ::1] shapes not None, Py_ssize_t itemsize,
                       Py_ssize_t swap_unit, const uint8_t[::1] direct not None):
        """Decode chunk ``r`` (``src[src_offsets[r]:][:src_sizes[r]]``, a zstd
        stream that must decode to exactly ``nbytes`` bytes) and copy the region of
        shape ``shapes[r]`` at ``chunk_offsets[r]`` (strides ``chunk_strides``) of
        the decoded chunk to ``dst_offsets[r]`` (strides ``dst_strides``) of ``dst``,
        as ``copy_regions`` does.  With ``direct[r]`` the chunk is decoded straight
        into ``dst[dst_offsets[r]:][:nbytes]`` instead.

        Returns an int8 array of statuses: ``DECODED``; ``NO_DATA`` (a negative
        size: nothing done); ``FAILED`` (not a zstd stream of ``nbytes`` bytes:
        ``dst`` is untouched, except a direct row's own block).

        Raises ``ValueError`` when lengths differ or a range lies outside a buffer.
        """
        cdef Py_ssize_t n = shapes.shape[0], ndim = shapes.shape[1], r
        cdef int64_t nbytes = self.nbytes
        if (src_offsets.shape[0] != n or src_sizes.shape[0] != n
                or chunk_offsets.shape[0] != n or dst_offsets.shape[0] != n
                or direct.shape[0] != n):
            raise ValueError(
                f"decode_regions: {n} shapes but {src_offsets.shape[0]} src_offsets, "
                f"{src_sizes.shape[0]} src_sizes, {chunk_offsets.shape[0]} chunk_offsets, "
                f"{dst_offsets.shape[0]} dst_offsets and {direct.shape[0]} direct flags"
            )
        if chunk_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
            raise ValueError(
                f"decode_regions: shapes of rank {ndim}, but {chunk_strides.shape[0]} "
                f"chunk_strides and {dst_strides.shape[0]} dst_strides"
            )
        if ndim > ZF_MAX_NDIM:
            raise ValueError(f"decode_regions: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
        _check_item("decode_regions", itemsize, swap_unit)
        status_arr = np.full(n, DECODED, dtype=np.int8)
        cdef int8_t[::1] status = status_arr
        if n == 0:
            return status_arr
        cdef Layout* layouts = <Layout*>PyMem_Malloc(n * sizeof(Layout))
        cdef bint* skip = <bint*>PyMem_Malloc(n * sizeof(bint))
        if layouts == NULL or skip == NULL:
            PyMem_Free(layouts)
            PyMem_Free(skip)
            raise MemoryError()
        cdef const uint8_t* s = &src[0] if src.shape[0] else NULL
        cdef uint8_t* d = &dst[0] if dst.shape[0] else NULL
        cdef uint8_t* target
        cdef const uint8_t* frame
        cdef size_t got
        cdef unsigned long long declared
        try:
            for r in range(n):
                skip[r] = False
                if src_sizes[r] < 0:
                    status[r] = _NO_DATA
                    continue
                try:
                    if src_offsets[r] < 0 or src_offsets[r] > src.shape[0] - src_sizes[r]:
                        raise ValueError(
                            f"decode_regions: bytes [{src_offsets[r]}, "
                            f"{src_offsets[r] + src_sizes[r]}) lie outside src's "
                            f"{src.shape[0]} bytes"
                        )
                    if direct[r]:
                        if dst_offsets[r] < 0 or dst_offsets[r] > dst.shape[0] - nbytes:
                            raise ValueError(
                                f"decode_regions: direct bytes [{dst_offsets[r]}, "
                                f"{dst_offsets[r] + nbytes}) lie outside dst's "
                                f"{dst.shape[0]} bytes"
                            )
                        continue
                    _check_shape("decode_regions", shapes[r])
                    skip[r] = _is_empty(shapes[r])
                    if skip[r]:
                        continue
                    _check_dst_strides("decode_regions", dst_strides, shapes[r])
                    _check_span("decode_regions", "chunk", nbytes, chunk_offsets[r],
                                chunk_strides, shapes[r], itemsize)
                    _check_span("decode_regions", "dst", dst.shape[0], dst_offsets[r],
                                dst_strides, shapes[r], itemsize)
                except ValueError as e:
                    raise ValueError(f"{e} (chunk {r})") from None
                normalize_layout(<int>ndim, &shapes[r, 0] if ndim else NULL,
                                 &chunk_strides[0] if ndim else NULL,
                                 &dst_strides[0] if ndim else NULL,
                                 chunk_offsets[r], dst_offsets[r], &layouts[r])
            with nogil:
                for r in range(n):
                    if status[r] == _NO_DATA or skip[r]:
                        continue
                    frame = s + src_offsets[r]
                    declared = _content_size(frame, <size_t>src_sizes[r])
                    if declared == _CONTENTSIZE_ERROR or (
                            declared != _CONTENTSIZE_UNKNOWN and declared != <unsigned long long>nbytes):
                        status[r] = _FAILED
                        continue
                    target = d + dst_offsets[r] if direct[r] else self.scratch
                    got = _decompress(self.dctx, target, <size_t>nbytes, frame,
                                      <size_t>src_sizes[r])
                    if _is_error(got) or got != <size_t>nbytes:
                        status[r] = _FAILED
                        continue
                    if not direct[r]:
                        strided_copy(self.scratch, d, &layouts[r], itemsize, swap_unit)
        finally:
            PyMem_Free(layouts)
            PyMem_Free(skip)
        return status_arr
