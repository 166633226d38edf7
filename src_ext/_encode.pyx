# cython: language_level=3
"""Batched chunk compression: many whole chunks gathered out of a written value and
compressed with zstd, gzip or zlib in one ``nogil`` loop, the encode side of
``_decode.ChunkDecoder.decode_regions`` for chunks with no other codec.

``ChunkEncoder(codec, level, checksum)`` holds one compression context (a thread's:
the engine keeps one per thread).  ``compress_regions`` takes the regions of a
C-contiguous value that are whole chunks (``_gather.pxd``: the region description of
``_decode.blosc_compress_regions``), copies them into a scratch buffer in the chunk's
stored layout (byte swap and transpose fused into the copy) and compresses each into
its slot of one output buffer, returning the sizes; a chunk equal to the fill value is
skipped.  The bytes are numcodecs' (``zf_encode.h``).

The libraries are bound by ``zarrfast.kernels`` at import: zstd's compression
functions from numcodecs' own zstd (so that the frames are numcodecs' frames; zstd
versions differ in their bytes from level 5 on), else from a zstd linked at build time
(``linked_zstd``); zlib's from the zlib Python's ``zlib`` module uses (so that its
bytes are ``zlib.compress``'s).  Where neither is bound, ``bound()`` says so and the
engine compresses chunk by chunk.

Twin: ``zarrfast.kernels.reference.ChunkEncoder``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport INT32_MAX, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

import time

import numpy as np

from _gather cimport Gather, all_items, gather_next, gather_setup

cdef extern from "zf_encode.h":
    ctypedef void* (*zf_zstd_create_cctx_fn)() noexcept nogil
    ctypedef size_t (*zf_zstd_free_cctx_fn)(void*) noexcept nogil
    ctypedef size_t (*zf_zstd_set_parameter_fn)(void*, int, int) noexcept nogil
    ctypedef size_t (*zf_zstd_compress2_fn)(void*, void*, size_t, const void*,
                                            size_t) noexcept nogil
    ctypedef size_t (*zf_zstd_bound_fn)(size_t) noexcept nogil
    ctypedef unsigned (*zf_zstd_is_error_fn)(size_t) noexcept nogil
    enum:
        ZF_ZSTD_C_LEVEL
        ZF_ZSTD_C_CHECKSUM

    ctypedef struct zf_z_stream:
        pass
    ctypedef int (*zf_deflate_init2_fn)(zf_z_stream*, int, int, int, int, int, const char*,
                                        int) noexcept nogil
    ctypedef int (*zf_deflate_fn)(zf_z_stream*, int) noexcept nogil
    ctypedef int (*zf_deflate_end_fn)(zf_z_stream*) noexcept nogil
    ctypedef int (*zf_deflate_reset_fn)(zf_z_stream*) noexcept nogil
    ctypedef unsigned long (*zf_deflate_bound_fn)(zf_z_stream*, unsigned long) noexcept nogil
    ctypedef unsigned long (*zf_crc32_fn)(unsigned long, const unsigned char*,
                                          unsigned) noexcept nogil
    ctypedef struct zf_deflate_api:
        zf_deflate_fn deflate
        zf_deflate_reset_fn reset
        zf_crc32_fn crc32
    enum:
        ZF_Z_OK
        ZF_Z_DEFLATED
    int64_t zf_deflate_chunk(const zf_deflate_api* api, zf_z_stream* strm, int gzip,
                             int level, uint32_t mtime, const uint8_t* src, int64_t n,
                             uint8_t* dest, int64_t cap) noexcept nogil


cdef extern from "zf_codecs.h":
    int zf_linked_zstd_compress(size_t* fns)


cdef zf_zstd_create_cctx_fn _create_cctx = NULL
cdef zf_zstd_free_cctx_fn _free_cctx = NULL
cdef zf_zstd_set_parameter_fn _set_parameter = NULL
cdef zf_zstd_compress2_fn _compress2 = NULL
cdef zf_zstd_bound_fn _zstd_bound = NULL
cdef zf_zstd_is_error_fn _zstd_is_error = NULL

cdef zf_deflate_init2_fn _deflate_init2 = NULL
cdef zf_deflate_end_fn _deflate_end = NULL
cdef zf_deflate_bound_fn _deflate_bound = NULL
cdef zf_deflate_api _zlib  # (all NULL until bound)
cdef bytes _zlib_version = b""

#: the oldest zstd whose ``ZSTD_compress2`` and parameters are stable
MIN_ZSTD_VERSION = 10400
#: the largest chunk compressed here (zlib counts in 32-bit ``uInt``; blosc's limit)
MAX_NBYTES = INT32_MAX - 16
#: ``ChunkEncoder`` formats
CODECS = ("zstd", "gzip", "zlib")

ctypedef unsigned (*_version_fn)() noexcept nogil
ctypedef const char* (*_zlib_version_fn)() noexcept nogil


def bind_zstd(size_t create_cctx, size_t free_cctx, size_t set_parameter, size_t compress2,
              size_t compress_bound, size_t is_error, size_t version):
    """Use the zstd functions at these addresses (``ZSTD_createCCtx``,
    ``ZSTD_freeCCtx``, ``ZSTD_CCtx_setParameter``, ``ZSTD_compress2``,
    ``ZSTD_compressBound``, ``ZSTD_isError``, ``ZSTD_versionNumber``); all 0 unbinds.
    Returns the library's version number; raises ``ValueError`` (binding nothing) for
    a null address or a version older than ``MIN_ZSTD_VERSION``.  An encoder keeps the
    functions it was made with."""
    global _create_cctx, _free_cctx, _set_parameter, _compress2, _zstd_bound, _zstd_is_error
    if not (create_cctx or free_cctx or set_parameter or compress2 or compress_bound
            or is_error or version):
        _create_cctx = NULL
        _free_cctx = NULL
        _set_parameter = NULL
        _compress2 = NULL
        _zstd_bound = NULL
        _zstd_is_error = NULL
        return 0
    if not (create_cctx and free_cctx and set_parameter and compress2 and compress_bound
            and is_error and version):
        raise ValueError("bind_zstd: a function address is null")
    cdef unsigned v = (<_version_fn>version)()
    if v < MIN_ZSTD_VERSION:
        raise ValueError(f"bind_zstd: zstd {v} is older than {MIN_ZSTD_VERSION}")
    _create_cctx = <zf_zstd_create_cctx_fn>create_cctx
    _free_cctx = <zf_zstd_free_cctx_fn>free_cctx
    _set_parameter = <zf_zstd_set_parameter_fn>set_parameter
    _compress2 = <zf_zstd_compress2_fn>compress2
    _zstd_bound = <zf_zstd_bound_fn>compress_bound
    _zstd_is_error = <zf_zstd_is_error_fn>is_error
    return v


def linked_zstd():
    """The compression functions of the zstd linked at build time, as ``bind_zstd``
    takes them, or ``None`` (built without zstd)."""
    cdef size_t fns[7]
    if not zf_linked_zstd_compress(fns):
        return None
    return tuple([fns[i] for i in range(7)])


def bind_zlib(size_t deflate_init2, size_t deflate, size_t deflate_end, size_t deflate_reset,
              size_t deflate_bound, size_t crc32, size_t zlib_version):
    """Use the zlib functions at these addresses (``deflateInit2_``, ``deflate``,
    ``deflateEnd``, ``deflateReset``, ``deflateBound``, ``crc32``, ``zlibVersion``); all 0
    unbinds.  A stream is opened and closed to check that the library takes this
    module's ``z_stream`` (zlib 1.x).  Returns the version string; raises ``ValueError``
    (binding nothing) otherwise."""
    global _deflate_init2, _deflate_end, _deflate_bound, _zlib_version
    cdef zf_z_stream strm
    if not (deflate_init2 or deflate or deflate_end or deflate_reset or deflate_bound
            or crc32 or zlib_version):
        _deflate_init2 = NULL
        _deflate_end = NULL
        _deflate_bound = NULL
        _zlib.deflate = NULL
        _zlib.reset = NULL
        _zlib.crc32 = NULL
        return ""
    if not (deflate_init2 and deflate and deflate_end and deflate_reset and deflate_bound
            and crc32 and zlib_version):
        raise ValueError("bind_zlib: a function address is null")
    cdef bytes version = (<_zlib_version_fn>zlib_version)()
    if not version.startswith(b"1."):
        raise ValueError(f"bind_zlib: zlib {version!r} is not 1.x")
    memset(&strm, 0, sizeof(strm))
    if (<zf_deflate_init2_fn>deflate_init2)(&strm, 6, ZF_Z_DEFLATED, 15, 8, 0, version,
                                            <int>sizeof(zf_z_stream)) != ZF_Z_OK:
        raise ValueError(f"bind_zlib: zlib {version!r} refuses a stream of "
                         f"{sizeof(zf_z_stream)} bytes")
    (<zf_deflate_end_fn>deflate_end)(&strm)
    _deflate_init2 = <zf_deflate_init2_fn>deflate_init2
    _deflate_end = <zf_deflate_end_fn>deflate_end
    _deflate_bound = <zf_deflate_bound_fn>deflate_bound
    _zlib.deflate = <zf_deflate_fn>deflate
    _zlib.reset = <zf_deflate_reset_fn>deflate_reset
    _zlib.crc32 = <zf_crc32_fn>crc32
    _zlib_version = version
    return version.decode("ascii", "replace")


def bound():
    """The formats ``ChunkEncoder`` can make now: ``"zstd"``, ``"gzip"``, ``"zlib"``."""
    out = []
    if _compress2 != NULL:
        out.append("zstd")
    if _deflate_init2 != NULL:
        out += ["gzip", "zlib"]
    return frozenset(out)


cdef class ChunkEncoder:
    """One compression context for ``codec`` (``"zstd"``, ``"gzip"``, ``"zlib"``) at
    ``level`` (zstd: with ``checksum``, a content checksum in each frame), the bytes
    numcodecs' ``Zstd(level, checksum)``, ``GZip(level)`` or ``Zlib(level)`` encode.
    Belongs to one thread at a time.  Raises ``RuntimeError`` when the library is not
    bound or refuses the settings, ``ValueError`` for an unknown codec or level."""

    cdef readonly str codec
    cdef readonly int level
    cdef readonly bint checksum
    cdef bint gzip
    cdef void* cctx
    cdef zf_z_stream* strm
    cdef zf_zstd_compress2_fn compress2
    cdef zf_zstd_bound_fn zstd_bound
    cdef zf_zstd_is_error_fn zstd_is_error
    cdef zf_zstd_free_cctx_fn free_cctx
    cdef zf_deflate_api zlib
    cdef zf_deflate_end_fn deflate_end
    cdef zf_deflate_bound_fn deflate_bound

    def __cinit__(self, str codec not None, int level, bint checksum=False):
        self.codec = codec
        self.level = level
        self.checksum = checksum
        self.gzip = codec == "gzip"
        self.cctx = NULL
        self.strm = NULL
        if codec == "zstd":
            self._open_zstd()
        elif codec == "gzip" or codec == "zlib":
            self._open_deflate(codec == "gzip")
        else:
            raise ValueError(f"ChunkEncoder: codec {codec!r} is not one of {CODECS}")

    cdef int _open_zstd(self) except -1:
        if _compress2 == NULL:
            raise RuntimeError("ChunkEncoder: zstd is not bound (bind_zstd)")
        self.compress2, self.zstd_bound = _compress2, _zstd_bound
        self.zstd_is_error, self.free_cctx = _zstd_is_error, _free_cctx
        self.cctx = _create_cctx()
        if self.cctx == NULL:
            raise MemoryError()
        if (self.zstd_is_error(_set_parameter(self.cctx, ZF_ZSTD_C_LEVEL, self.level))
                or self.zstd_is_error(_set_parameter(self.cctx, ZF_ZSTD_C_CHECKSUM,
                                                     1 if self.checksum else 0))):
            raise RuntimeError(f"ChunkEncoder: zstd refuses level {self.level} "
                               f"checksum {self.checksum}")
        return 0

    cdef int _open_deflate(self, bint gzip) except -1:
        if _deflate_init2 == NULL:
            raise RuntimeError("ChunkEncoder: zlib is not bound (bind_zlib)")
        if not -1 <= self.level <= 9:
            raise ValueError(f"ChunkEncoder: {self.codec} level {self.level} is not -1 to 9")
        self.zlib, self.deflate_end, self.deflate_bound = _zlib, _deflate_end, _deflate_bound
        self.strm = <zf_z_stream*>malloc(sizeof(zf_z_stream))
        if self.strm == NULL:
            raise MemoryError()
        memset(self.strm, 0, sizeof(zf_z_stream))
        if _deflate_init2(self.strm, self.level, ZF_Z_DEFLATED, -15 if gzip else 15, 8, 0,
                          _zlib_version, <int>sizeof(zf_z_stream)) != ZF_Z_OK:
            free(self.strm)
            self.strm = NULL
            raise RuntimeError(f"ChunkEncoder: zlib refuses level {self.level}")
        return 0

    def __dealloc__(self):
        if self.cctx != NULL:
            self.free_cctx(self.cctx)
        if self.strm != NULL:
            self.deflate_end(self.strm)
            free(self.strm)

    def slot(self, int64_t nbytes):
        """The most bytes a chunk of ``nbytes`` compresses to: the room
        ``compress_regions`` gives each chunk in ``out``."""
        if nbytes < 0 or nbytes > MAX_NBYTES:
            raise ValueError(f"ChunkEncoder.slot: a chunk of {nbytes} bytes (1 to "
                             f"{MAX_NBYTES})")
        return self._slot(nbytes)

    cdef int64_t _slot(self, int64_t nbytes) noexcept:
        if self.cctx != NULL:
            return <int64_t>self.zstd_bound(<size_t>nbytes)
        return <int64_t>self.deflate_bound(self.strm, <unsigned long>nbytes) + (
            18 if self.gzip else 0)

    cdef int64_t _one(self, const uint8_t* src, int64_t n, uint8_t* dest, int64_t cap,
                      uint32_t mtime) noexcept nogil:
        """One chunk compressed into ``dest``: its size, or -1."""
        cdef size_t got
        if self.cctx != NULL:
            got = self.compress2(self.cctx, dest, <size_t>cap, src, <size_t>n)
            return -1 if self.zstd_is_error(got) else <int64_t>got
        return zf_deflate_chunk(&self.zlib, self.strm, self.gzip, self.level,
                                mtime, src, n, dest, cap)

    def compress(self, const uint8_t[::1] src not None):
        """``src`` compressed (``bytes``), with the GIL released.  Raises
        ``RuntimeError`` when the library fails."""
        cdef int64_t n = src.shape[0]
        if n > MAX_NBYTES:
            raise ValueError(f"ChunkEncoder.compress: {n} bytes exceed {MAX_NBYTES}")
        cdef int64_t cap = self._slot(n)
        out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>cap)
        cdef uint8_t* dest = <uint8_t*>PyBytes_AS_STRING(out)
        cdef const uint8_t* s = &src[0] if n else dest
        cdef uint32_t mtime = <uint32_t>int(time.time())
        cdef int64_t got
        with nogil:
            got = self._one(s, n, dest, cap, mtime)
        if got < 0:
            raise RuntimeError(f"ChunkEncoder.compress: {self.codec} failed on {n} bytes")
        return out if got == cap else out[:got]

    def compress_regions(self, const uint8_t[::1] src not None,
                         const int64_t[::1] src_offsets not None,
                         const int64_t[::1] src_strides not None,
                         const int64_t[::1] dst_strides not None,
                         const int64_t[::1] shape not None, Py_ssize_t itemsize,
                         Py_ssize_t swap_unit, fill, uint8_t[::1] scratch not None,
                         uint8_t[::1] out not None, bint packed=False):
        """Many whole chunks copied out of ``src`` and compressed, in one ``nogil`` loop.

        For every ``r``, the region of shape ``shape`` at ``src_offsets[r]`` (byte
        strides ``src_strides``) is copied into ``scratch`` (byte strides
        ``dst_strides`` from 0, bytes swapped in groups of ``swap_unit``), then
        compressed into ``out[r * slot:(r + 1) * slot]``, ``slot = self.slot(nbytes)``
        where ``nbytes`` is the region's size: a whole chunk.  With ``packed`` each
        chunk's bytes follow the previous chunk's instead (chunk ``r`` starts at the sum
        of the sizes before it, fill chunks taking none): the inner chunks of a shard,
        in the order they are stored, with no copy to join them (each chunk is still
        given ``slot`` bytes of room: ``out`` holds ``n * slot``).  ``scratch`` holds at
        least one chunk; with room for more, the regions of a row of chunks are
        gathered together (``_gather.pxd``).  With ``fill`` (the fill value as one
        item, in the chunk's byte order) a chunk that equals it everywhere is not
        compressed.

        Returns an int64 array: the compressed size of each chunk, or -1 for a chunk
        equal to ``fill``.  Raises ``ValueError`` (bad tables, a region outside a
        buffer, ``out`` too short) before compressing anything and ``RuntimeError``
        when the library fails.
        """
        func = "ChunkEncoder.compress_regions"
        # (copies: the tables checked are the ones the loop reads without the GIL,
        # whatever another thread does to the caller's arrays meanwhile)
        src_offsets, src_strides, dst_strides, shape = (
            np.array(src_offsets, dtype=np.int64), np.array(src_strides, dtype=np.int64),
            np.array(dst_strides, dtype=np.int64), np.array(shape, dtype=np.int64))
        cdef Gather G
        cdef int64_t nbytes = gather_setup(&G, func, src, src_offsets, src_strides,
                                           dst_strides, shape, itemsize, swap_unit, scratch,
                                           MAX_NBYTES)
        cdef int64_t n = G.n, slot = self._slot(nbytes)
        if out.shape[0] < n * slot:
            raise ValueError(f"{func}: out holds {out.shape[0]} bytes, {n} chunks of "
                             f"{nbytes} bytes need {n * slot}")
        cdef const uint8_t[::1] fill_item
        cdef const uint8_t* f = NULL
        if fill is not None:
            fill_item = fill
            if fill_item.shape[0] != itemsize:
                raise ValueError(f"{func}: fill holds {fill_item.shape[0]} bytes, an item "
                                 f"{itemsize}")
            f = &fill_item[0]
        sizes_arr = np.empty(n, dtype=np.int64)
        if n == 0:
            return sizes_arr
        cdef int64_t[::1] sizes = sizes_arr
        cdef uint8_t* o = &out[0]
        cdef uint8_t* cb
        cdef uint32_t mtime = <uint32_t>int(time.time())
        cdef int64_t r = 0, g, j, got, failed = -1, pos = 0
        with nogil:
            while r < n and failed < 0:
                g = gather_next(&G, r)
                for j in range(g):
                    cb = G.scratch + j * nbytes
                    if f != NULL and all_items(cb, nbytes, f, itemsize):
                        sizes[r + j] = -1
                        continue
                    # (packed: pos <= (r + j) * slot, so `slot` bytes of room remain)
                    got = self._one(cb, nbytes, o + (pos if packed else (r + j) * slot),
                                    slot, mtime)
                    if got < 0:
                        failed = r + j
                        break
                    sizes[r + j] = got
                    pos += got
                r += g
        if failed >= 0:
            raise RuntimeError(f"{func}: {self.codec} failed on chunk {failed} "
                               f"({nbytes} bytes, level {self.level})")
        return sizes_arr
