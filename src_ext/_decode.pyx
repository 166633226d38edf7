# cython: language_level=3
"""Batched chunk decoding: many zstd- or blosc-compressed chunks decoded and placed
into an output in one ``nogil`` loop.

Per chunk the Python path costs an allocation for the decoded bytes and several
microseconds of interpreter time; for chunks of tens of KiB that is a third of
a full read.  ``ChunkDecoder.decode_regions`` takes a batch of compressed chunks
that sit in one buffer and, for each, decodes it into a reused per-decoder
scratch buffer and copies its selected region into ``dst`` with the strided copy
engine of ``copy_regions`` (or decodes it straight into ``dst`` when the chunk
is one contiguous block there).

The codec libraries are linked at build time where setup.py finds them
(``zf_codecs.h``): ``linked_zstd()`` / ``linked_blosc()`` give their functions'
addresses, and ``zarrfast.kernels`` binds them with ``bind_zstd`` /
``bind_blosc``, which check the libraries' versions.  A build without them falls
back to the copies numcodecs carries in its extension modules, found with
``ctypes``; when neither is there the callers keep the per-chunk path.
Compression (``blosc_compress``) is only ever bound to numcodecs' own c-blosc,
so that the bytes written are numcodecs' bytes.

Every range is validated with the GIL before the loop.  The output of a decode
is bounded by the chunk's size (no decompression bombs), and a chunk that does
not decode to exactly that size is reported, never placed.

Twin: ``zarrfast._reference.ChunkDecoder``.
"""

from cpython.bytes cimport (
    PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE,
)
from libc.string cimport memcmp, strlen
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdlib cimport free
from libc.errno cimport EISDIR, ENOENT, ENOTDIR, errno
from posix.unistd cimport close
from libc.stdint cimport int64_t, int8_t, uint8_t

import os

import numpy as np

from _checks cimport _check_dst_strides, _check_item, _check_shape, _check_span, _tup
from _common cimport (
    ZF_MAX_NDIM, Layout, checked_add, checked_mul, normalize_layout, strided_copy_stream,
    zf_stream_fence,
)

cdef extern from *:
    """
    #include <errno.h>
    #include <stdint.h>
    #include <stdlib.h>
    #if defined(_WIN32)
    /* no batched file reads on Windows: every file is left to the per-chunk path */
    static int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                            int64_t limit, int64_t* size) { *size = -1; return ENOSYS; }
    static int zf_open_root(const char* path) { errno = ENOSYS; return -1; }
    #else
    #include <fcntl.h>
    #include <sys/stat.h>
    #include <unistd.h>
    #include "zf_files.h"
    #ifndef O_CLOEXEC
    #define O_CLOEXEC 0
    #endif
    #ifndef O_NONBLOCK
    #define O_NONBLOCK 0
    #endif
    /* Read the whole file at `path` (relative to the directory `dirfd` and opened
       without following links, see zf_files.h; -1: a plain path) into `*buf` (grown with realloc up to `limit`
       bytes).  Returns 0 (and the size), or an errno: EISDIR for a directory, EINVAL for
       another file that is not regular (a FIFO, a device),
       EFBIG when it is larger than `limit` (its size still reported), EIO when it
       shrank while being read. */
    static int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                            int64_t limit, int64_t* size) {
        struct stat st;
        int64_t got = 0, want;
        ssize_t k;
        int err = 0;
        /* non-blocking: a FIFO opens at once and is refused below */
        int fd = dirfd == -1 ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                             : zf_open_nolinks(dirfd, path, O_RDONLY | O_NONBLOCK, 0);
        *size = -1;
        if (fd < 0) return errno;
        if (fstat(fd, &st) != 0) { err = errno; close(fd); return err; }
        if (!S_ISREG(st.st_mode)) {  /* a directory: no value; a FIFO, device: refused */
            close(fd);
            return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        }
        want = (int64_t)st.st_size;
        *size = want;
        if (want > limit) { close(fd); return EFBIG; }
        if (want > *cap) {
            uint8_t* grown = (uint8_t*)realloc(*buf, (size_t)(want > 0 ? want : 1));
            if (grown == NULL) { close(fd); return ENOMEM; }
            *buf = grown;
            *cap = want;
        }
        while (got < want) {
            k = pread(fd, *buf + got, (size_t)(want - got), (off_t)got);
            if (k < 0) {
                if (errno == EINTR) continue;
                err = errno;
                break;
            }
            if (k == 0) { err = EIO; break; }
            got += k;
        }
        close(fd);
        return err;
    }
    #endif
    """
    int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                     int64_t limit, int64_t* size) noexcept nogil
    int zf_open_root(const char* path) noexcept nogil


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

ctypedef int (*blosc_validate_fn)(const void*, size_t, size_t*) noexcept nogil
ctypedef int (*blosc_decompress_fn)(const void*, void*, size_t, int) noexcept nogil

ctypedef int (*blosc_compress_fn)(int, int, size_t, size_t, const void*, void*, size_t,
                                  const char*, size_t, int) noexcept nogil

cdef blosc_validate_fn _blosc_validate = NULL
cdef blosc_decompress_fn _blosc_decompress = NULL
cdef blosc_compress_fn _blosc_compress = NULL

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
    if not (create and free and decompress and is_error and content_size and version):
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


def bind_blosc(size_t validate, size_t decompress_ctx, size_t compress_ctx,
               str version not None):
    """Use the c-blosc functions at these addresses (``blosc_cbuffer_validate``,
    ``blosc_decompress_ctx``, ``blosc_compress_ctx``) of c-blosc ``version`` (1.x from
    1.16 on, which has the validation).  ``compress_ctx`` 0 binds decoding only and
    leaves compression as it was.  Raises ``ValueError`` (binding nothing) otherwise."""
    global _blosc_validate, _blosc_decompress, _blosc_compress
    if validate == 0 or decompress_ctx == 0:
        raise ValueError("bind_blosc: a function address is null")
    parts = version.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"bind_blosc: cannot read the version {version!r}") from None
    if major != 1 or minor < 16:
        raise ValueError(f"bind_blosc: c-blosc {version} is not 1.x from 1.16 on")
    _blosc_validate = <blosc_validate_fn>validate
    _blosc_decompress = <blosc_decompress_fn>decompress_ctx
    if compress_ctx:
        _blosc_compress = <blosc_compress_fn>compress_ctx


cdef extern from "zf_codecs.h":
    int zf_linked_zstd(size_t* fns)
    int zf_linked_blosc(size_t* fns, const char** version)


def linked_zstd():
    """The zstd functions linked at build time, as ``bind_zstd`` takes them, or
    ``None`` (built without zstd)."""
    cdef size_t fns[6]
    if not zf_linked_zstd(fns):
        return None
    return tuple([fns[i] for i in range(6)])


def linked_blosc():
    """``(validate, decompress_ctx, version)`` of the c-blosc linked at build time, or
    ``None`` (built without c-blosc)."""
    cdef size_t fns[2]
    cdef const char* version = NULL
    if not zf_linked_blosc(fns, &version):
        return None
    return fns[0], fns[1], version.decode("ascii", "replace")


def blosc_compress_bound():
    """Whether ``blosc_compress`` has a c-blosc to call."""
    return _blosc_compress != NULL


#: c-blosc's BLOSC_MAX_OVERHEAD: what compression may add to the input, and its
#: BLOSC_MAX_BUFFERSIZE: the largest input it takes
BLOSC_MAX_OVERHEAD = 16
BLOSC_MAX_BUFFERSIZE = 2**31 - 1 - BLOSC_MAX_OVERHEAD


def blosc_compress(const uint8_t[::1] src not None, int clevel, int shuffle,
                   size_t typesize, bytes cname not None, size_t blocksize):
    """``blosc_compress_ctx`` of ``src`` with one internal thread and the GIL
    released: the bytes numcodecs' ``Blosc.encode`` gives for the same settings.
    Raises ``RuntimeError`` when c-blosc fails, ``ValueError`` for bad settings."""
    if _blosc_compress == NULL:
        raise RuntimeError("blosc_compress: c-blosc is not bound (bind_blosc)")
    if not 0 <= clevel <= 9 or shuffle not in (0, 1, 2) or typesize < 1 or b"\0" in cname:
        raise ValueError(f"blosc_compress: bad settings clevel={clevel} shuffle={shuffle} "
                         f"typesize={typesize} cname={cname!r}")
    cdef size_t n = src.shape[0]
    if n > BLOSC_MAX_BUFFERSIZE:
        raise ValueError(f"blosc_compress: {n} bytes exceed c-blosc's limit of "
                         f"{BLOSC_MAX_BUFFERSIZE} bytes per chunk")
    cdef size_t cap = n + BLOSC_MAX_OVERHEAD
    out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>cap)
    cdef char* dest = PyBytes_AS_STRING(out)
    cdef const char* cn = cname
    cdef const uint8_t* s = &src[0] if n else <const uint8_t*>dest  # (any pointer for 0 bytes)
    cdef int got
    with nogil:
        got = _blosc_compress(clevel, shuffle, typesize, n, s, dest, cap, cn, blocksize, 1)
    if got <= 0:
        raise RuntimeError(f"blosc_compress: c-blosc failed ({got}) on {n} bytes with "
                           f"compressor {cname!r}")
    if <size_t>got == cap:
        return out
    return out[:got]


cdef inline bint _all_items(const uint8_t* b, int64_t n, const uint8_t* item,
                            Py_ssize_t k) noexcept nogil:
    """Whether the ``n`` bytes at ``b`` are ``item`` (``k`` bytes) repeated: the first
    item is ``item`` and every byte equals the one ``k`` bytes before it."""
    if n < k or memcmp(b, item, <size_t>k) != 0:
        return False
    return n == k or memcmp(b, b + k, <size_t>(n - k)) == 0


def blosc_compress_regions(const uint8_t[::1] src not None,
                           const int64_t[::1] src_offsets not None,
                           const int64_t[::1] src_strides not None,
                           const int64_t[::1] dst_strides not None,
                           const int64_t[::1] shape not None, Py_ssize_t itemsize,
                           Py_ssize_t swap_unit, fill, uint8_t[::1] scratch not None,
                           uint8_t[::1] out not None, int clevel, int shuffle,
                           size_t typesize, bytes cname not None, size_t blocksize):
    """Many whole chunks copied out of ``src`` and blosc-compressed, in one ``nogil``
    loop: the encode side of ``decode_regions`` for chunks with no other codec.

    For every ``r``, the region of shape ``shape`` at ``src_offsets[r]`` (byte
    strides ``src_strides``) is copied into ``scratch`` (``len(scratch)`` bytes: the
    whole chunk; byte strides ``dst_strides`` from 0, bytes swapped in groups of
    ``swap_unit``), then compressed with ``blosc_compress_ctx`` and one internal
    thread (the bytes of ``blosc_compress``) into
    ``out[r * slot:(r + 1) * slot]``, ``slot = len(scratch) + BLOSC_MAX_OVERHEAD``.
    With ``fill`` (the fill value as one item, in the chunk's byte order) a chunk
    that equals it everywhere is not compressed.

    Returns an int64 array: the compressed size of each chunk, or -1 for a chunk
    equal to ``fill``.  Raises ``ValueError`` (bad settings, a region outside a
    buffer, ``out`` too short) before compressing anything and ``RuntimeError``
    when c-blosc fails.
    """
    if _blosc_compress == NULL:
        raise RuntimeError("blosc_compress_regions: c-blosc is not bound (bind_blosc)")
    if not 0 <= clevel <= 9 or shuffle not in (0, 1, 2) or typesize < 1 or b"\0" in cname:
        raise ValueError(f"blosc_compress_regions: bad settings clevel={clevel} "
                         f"shuffle={shuffle} typesize={typesize} cname={cname!r}")
    cdef Py_ssize_t ndim = shape.shape[0], n = src_offsets.shape[0], r
    if src_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
        raise ValueError(
            f"blosc_compress_regions: shape {_tup(shape)}, src_strides {_tup(src_strides)} "
            f"and dst_strides {_tup(dst_strides)} must have the same length")
    _check_shape("blosc_compress_regions", shape)
    _check_item("blosc_compress_regions", itemsize, swap_unit)
    cdef int64_t nbytes = scratch.shape[0]
    if nbytes < 1 or nbytes > BLOSC_MAX_BUFFERSIZE:
        raise ValueError(f"blosc_compress_regions: a chunk of {nbytes} bytes (c-blosc takes "
                         f"1 to {BLOSC_MAX_BUFFERSIZE})")
    cdef int64_t count = itemsize
    for r in range(ndim):
        count *= shape[r]
    if count != nbytes:
        raise ValueError(f"blosc_compress_regions: the region {_tup(shape)} of {itemsize}-byte "
                         f"items is {count} bytes, the scratch buffer {nbytes}: a region "
                         f"must be a whole chunk")
    _check_dst_strides("blosc_compress_regions", dst_strides, shape)
    _check_span("blosc_compress_regions", "scratch", nbytes, 0, dst_strides, shape, itemsize)
    for r in range(n):
        _check_span("blosc_compress_regions", "src", src.shape[0], src_offsets[r],
                    src_strides, shape, itemsize)
    cdef int64_t slot = nbytes + BLOSC_MAX_OVERHEAD
    if out.shape[0] < n * slot:
        raise ValueError(f"blosc_compress_regions: out holds {out.shape[0]} bytes, "
                         f"{n} chunks need {n * slot}")
    cdef const uint8_t[::1] fill_item
    cdef const uint8_t* f = NULL
    if fill is not None:
        fill_item = fill
        if fill_item.shape[0] != itemsize:
            raise ValueError(f"blosc_compress_regions: fill is {fill_item.shape[0]} bytes, "
                             f"an item {itemsize}")
        f = &fill_item[0]
    sizes_arr = np.empty(n, dtype=np.int64)
    if n == 0:
        return sizes_arr
    cdef int64_t[::1] sizes = sizes_arr
    cdef Layout L
    cdef const uint8_t* s = &src[0]
    cdef uint8_t* buf = &scratch[0]
    cdef uint8_t* o = &out[0]
    cdef const char* cn = cname
    cdef int got = 0, failed = 1
    with nogil:
        for r in range(n):
            normalize_layout(<int>ndim, &shape[0] if ndim else NULL, &src_strides[0] if ndim
                             else NULL, &dst_strides[0] if ndim else NULL, src_offsets[r], 0,
                             &L)
            strided_copy_stream(s, buf, &L, itemsize, swap_unit, False)
            if f != NULL and _all_items(buf, nbytes, f, itemsize):
                sizes[r] = -1
                continue
            got = _blosc_compress(clevel, shuffle, typesize, <size_t>nbytes, buf,
                                  o + r * slot, <size_t>slot, cn, blocksize, 1)
            if got <= 0:
                failed = got
                break
            sizes[r] = got
    if failed <= 0:
        raise RuntimeError(f"blosc_compress_regions: c-blosc failed ({failed}) on a chunk of "
                           f"{nbytes} bytes with compressor {cname!r}")
    return sizes_arr


def bound():
    """The codecs whose libraries are bound (``"zstd"``, ``"blosc"``)."""
    return frozenset([name for name, ok in (("zstd", _decompress != NULL),
                                            ("blosc", _blosc_decompress != NULL)) if ok])


#: outputs of at least this many bytes get the copies out of the scratch buffer
#: written with non-temporal stores (``strided_copy_stream``): an output that large
#: is written once and does not stay in the cache, so reading each line into the
#: cache before writing it only doubles the memory traffic
cdef int64_t _stream_min = 32 * 2**20


def stream_threshold(int64_t nbytes=-1):
    """The output size from which copies are streamed (non-temporal stores); with
    ``nbytes >= 0`` set it (0: always, for tests).  Returns the previous setting."""
    global _stream_min
    cdef int64_t before = _stream_min
    if nbytes >= 0:
        _stream_min = nbytes
    return before


cdef enum:
    _ZSTD = 0
    _BLOSC = 1


cdef class ChunkDecoder:
    """A decompression context and a scratch buffer for chunks of one codec and
    size.  Not thread-safe: use one per thread."""

    cdef void* dctx
    cdef int codec
    cdef uint8_t* scratch
    cdef uint8_t* filebuf  # (malloc/realloc: grown inside nogil loops)
    cdef int64_t filecap
    cdef readonly int64_t nbytes

    def __cinit__(self, str codec not None, int64_t nbytes):
        if codec not in bound():
            raise ValueError(f"ChunkDecoder: codec {codec!r} is not bound")
        if nbytes < 0:
            raise ValueError(f"ChunkDecoder: nbytes {nbytes} is negative")
        self.nbytes = nbytes
        self.codec = _ZSTD if codec == "zstd" else _BLOSC
        if self.codec == _ZSTD:
            self.dctx = _create()
            if self.dctx == NULL:
                raise MemoryError()
        self.scratch = <uint8_t*>PyMem_Malloc(max(nbytes, 1))
        if self.scratch == NULL:
            raise MemoryError()

    cdef bint _decode(self, const uint8_t* frame, size_t size, uint8_t* target) noexcept nogil:
        """Decode one chunk of exactly ``nbytes`` bytes into ``target``; False if it is
        not one (nothing beyond ``nbytes`` bytes of ``target`` is ever written)."""
        cdef unsigned long long declared
        cdef size_t got, header_nbytes
        cdef size_t nbytes = <size_t>self.nbytes
        if self.codec == _ZSTD:
            declared = _content_size(frame, size)
            if declared == _CONTENTSIZE_ERROR or (
                    declared != _CONTENTSIZE_UNKNOWN and declared != <unsigned long long>nbytes):
                return False
            got = _decompress(self.dctx, target, nbytes, frame, size)
            return not _is_error(got) and got == nbytes
        # blosc: the header must give the stored size and the chunk's size
        if _blosc_validate(frame, size, &header_nbytes) != 0 or header_nbytes != nbytes:
            return False
        return _blosc_decompress(frame, target, nbytes, 1) == <int>nbytes

    def __dealloc__(self):
        if self.dctx != NULL and _free != NULL:
            _free(self.dctx)
        PyMem_Free(self.scratch)
        free(self.filebuf)

    def decode_regions(self, const uint8_t[::1] src not None,
                       const int64_t[::1] src_offsets not None,
                       const int64_t[::1] src_sizes not None,
                       const int64_t[::1] chunk_offsets not None,
                       const int64_t[::1] chunk_strides not None,
                       uint8_t[::1] dst not None, const int64_t[::1] dst_offsets not None,
                       const int64_t[::1] dst_strides not None,
                       const int64_t[:, ::1] shapes not None, Py_ssize_t itemsize,
                       Py_ssize_t swap_unit, const uint8_t[::1] direct not None):
        """Decode chunk ``r`` (``src[src_offsets[r]:][:src_sizes[r]]``, which must
        decode to exactly ``nbytes`` bytes) and copy the region of
        shape ``shapes[r]`` at ``chunk_offsets[r]`` (strides ``chunk_strides``) of
        the decoded chunk to ``dst_offsets[r]`` (strides ``dst_strides``) of ``dst``,
        as ``copy_regions`` does.  With ``direct[r]`` the chunk is decoded straight
        into ``dst[dst_offsets[r]:][:nbytes]`` instead.

        Returns an int8 array of statuses: ``DECODED``; ``NO_DATA`` (a negative
        size: nothing done); ``FAILED`` (does not decode to ``nbytes`` bytes:
        ``dst`` is untouched, except a direct row's own block).

        Raises ``ValueError`` when lengths differ or a range lies outside a buffer.
        """
        cdef Py_ssize_t n = shapes.shape[0], r
        if src_offsets.shape[0] != n or src_sizes.shape[0] != n:
            raise ValueError(
                f"decode_regions: {n} shapes but {src_offsets.shape[0]} src_offsets and "
                f"{src_sizes.shape[0]} src_sizes"
            )
        for r in range(n):
            if src_sizes[r] >= 0 and (src_offsets[r] < 0
                                      or src_offsets[r] > src.shape[0] - src_sizes[r]):
                raise ValueError(
                    f"decode_regions: bytes [{src_offsets[r]}, {src_offsets[r] + src_sizes[r]})"
                    f" lie outside src's {src.shape[0]} bytes (chunk {r})"
                )
        status_arr = np.where(np.asarray(src_sizes) < 0, NO_DATA, DECODED).astype(np.int8)
        cdef int8_t[::1] status = status_arr
        cdef _Plan plan = _Plan("decode_regions", self.nbytes, chunk_offsets, chunk_strides,
                                dst, dst_offsets, dst_strides, shapes, itemsize, swap_unit,
                                direct, status)
        cdef const uint8_t* s = &src[0] if src.shape[0] else NULL
        with nogil:
            for r in range(n):
                if status[r] != _NO_DATA and not plan.skip[r]:
                    if not self._place(plan, r, s + src_offsets[r], <size_t>src_sizes[r]):
                        status[r] = _FAILED
            zf_stream_fence()  # (the streamed stores are seen before the call returns)
        return status_arr

    def decode_files(self, list paths not None,
                     const int64_t[::1] chunk_offsets not None,
                     const int64_t[::1] chunk_strides not None,
                     uint8_t[::1] dst not None, const int64_t[::1] dst_offsets not None,
                     const int64_t[::1] dst_strides not None,
                     const int64_t[:, ::1] shapes not None, Py_ssize_t itemsize,
                     Py_ssize_t swap_unit, const uint8_t[::1] direct not None,
                     root=None):
        """``decode_regions`` for chunks stored one per file: chunk ``r`` is the
        whole file ``paths[r]`` (``bytes``, file-system encoded), read into this
        decoder's own buffer (open, fstat, pread, close) in the same ``nogil`` loop.
        With ``root`` (``bytes``) the paths are relative to that directory and are
        opened without following symbolic links (``FAILED`` with ``ELOOP`` for a
        path through one: the caller decides).

        Returns ``(status, sizes, errors)``: statuses as ``decode_regions`` gives
        them (``NO_DATA``: the file does not exist, or is not a regular file;
        ``FAILED``: it could not be read, or is larger than ``2 * nbytes + 64 KiB``,
        or does not decode), the files' sizes (``-1``: unknown) and the ``errno``
        of a failed read (``EFBIG``: too large; 0 otherwise).

        Raises ``ValueError``/``TypeError`` like ``decode_regions`` and for a path
        that is not ``bytes`` or contains a NUL byte (before reading any file).
        """
        cdef Py_ssize_t n = shapes.shape[0], r
        paths = list(paths)  # our own list: the loop keeps pointers into its bytes
        if len(paths) != n:
            raise ValueError(f"decode_files: {n} shapes but {len(paths)} paths")
        cdef object p
        for r in range(n):
            p = paths[r]
            if not isinstance(p, bytes):
                raise TypeError(
                    f"decode_files: path {r} is {type(p).__name__}, expected bytes")
            if strlen(PyBytes_AS_STRING(p)) != <size_t>PyBytes_GET_SIZE(p):
                raise ValueError(f"decode_files: path {p!r} contains a NUL byte")
        status_arr = np.full(n, DECODED, dtype=np.int8)
        sizes_arr = np.full(n, -1, dtype=np.int64)
        errors_arr = np.zeros(n, dtype=np.int64)
        cdef int8_t[::1] status = status_arr
        cdef int64_t[::1] sizes = sizes_arr
        cdef int64_t[::1] errs = errors_arr
        cdef _Plan plan = _Plan("decode_files", self.nbytes, chunk_offsets, chunk_strides,
                                dst, dst_offsets, dst_strides, shapes, itemsize, swap_unit,
                                direct, status)
        cdef const char** cpaths = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
        if cpaths == NULL:
            raise MemoryError()
        for r in range(n):
            cpaths[r] = PyBytes_AS_STRING(paths[r])  # `paths` keeps the bytes alive
        cdef int64_t limit = 2 * self.nbytes + 65536
        cdef int err
        cdef int rootfd = -1
        cdef const char* croot = NULL
        if root is not None:
            if not isinstance(root, bytes) or b"\0" in root:
                PyMem_Free(cpaths)
                raise TypeError(f"decode_files: root must be bytes without NUL, got {root!r}")
            croot = <const char*>root
            with nogil:
                rootfd = zf_open_root(croot)
                err = errno
            if rootfd == -1:
                PyMem_Free(cpaths)
                raise OSError(err, os.strerror(err), os.fsdecode(root))
        try:
            with nogil:
                for r in range(n):
                    if plan.skip[r]:
                        continue
                    if rootfd == -2:  # no root directory: no files
                        err = ENOENT
                    else:
                        err = zf_read_file(rootfd, cpaths[r], &self.filebuf, &self.filecap,
                                           limit, &sizes[r])
                    if err == ENOENT or err == ENOTDIR or err == EISDIR:
                        status[r] = _NO_DATA
                        sizes[r] = -1
                    elif err != 0:
                        status[r] = _FAILED
                        errs[r] = err
                    elif not self._place(plan, r, self.filebuf, <size_t>sizes[r]):
                        status[r] = _FAILED
                zf_stream_fence()  # (the streamed stores are seen before the call returns)
                if rootfd >= 0:
                    close(rootfd)
                    rootfd = -1
        finally:
            PyMem_Free(cpaths)
            if rootfd >= 0:
                close(rootfd)
        return status_arr, sizes_arr, errors_arr

    cdef bint _place(self, _Plan plan, Py_ssize_t r, const uint8_t* frame,
                     size_t size) noexcept nogil:
        """Decode one chunk and place it as ``plan`` says for row ``r``."""
        cdef uint8_t* target = plan.d + plan.dst_offsets[r] if plan.direct[r] else self.scratch
        if not self._decode(frame, size, target):
            return False
        if not plan.direct[r]:
            strided_copy_stream(self.scratch, plan.d, &plan.layouts[r], plan.itemsize,
                                plan.swap_unit, plan.stream)
        return True


cdef inline bint _shape_ok(const int64_t* shape, Py_ssize_t ndim) noexcept nogil:
    """``_check_shape`` without the GIL (the rank is checked once per call)."""
    cdef Py_ssize_t d
    for d in range(ndim):
        if shape[d] < 0:
            return False
    return True


cdef inline bint _shape_empty(const int64_t* shape, Py_ssize_t ndim) noexcept nogil:
    cdef Py_ssize_t d
    for d in range(ndim):
        if shape[d] == 0:
            return True
    return False


cdef inline bint _dst_strides_ok(const int64_t* strides, const int64_t* shape,
                                 Py_ssize_t ndim) noexcept nogil:
    """``_check_dst_strides`` without the GIL."""
    cdef Py_ssize_t d
    for d in range(ndim):
        if strides[d] == 0 and shape[d] > 1:
            return False
    return True


cdef inline bint _span_ok(int64_t buflen, int64_t offset, const int64_t* strides,
                          const int64_t* shape, Py_ssize_t ndim,
                          Py_ssize_t itemsize) noexcept nogil:
    """``_check_span`` without the GIL: every byte of the (non-empty) region lies in
    ``[0, buflen)``, with no int64 overflow on the way."""
    cdef int64_t lo = offset, hi = offset, ext
    cdef Py_ssize_t d
    for d in range(ndim):
        if checked_mul(shape[d] - 1, strides[d], &ext):
            return False
        if ext > 0:
            if checked_add(hi, ext, &hi):
                return False
        elif checked_add(lo, ext, &lo):
            return False
    if checked_add(hi, itemsize, &hi):
        return False
    return lo >= 0 and hi <= buflen


cdef class _Plan:
    """Where each decoded chunk goes: the validated, normalised layouts of a call."""

    cdef Layout* layouts
    cdef bint* skip
    cdef uint8_t* d
    cdef const int64_t[::1] dst_offsets
    cdef const uint8_t[::1] direct
    cdef Py_ssize_t itemsize, swap_unit
    cdef bint stream  # (copies into dst use non-temporal stores)

    def __cinit__(self, str func, int64_t nbytes, const int64_t[::1] chunk_offsets,
                  const int64_t[::1] chunk_strides, uint8_t[::1] dst,
                  const int64_t[::1] dst_offsets, const int64_t[::1] dst_strides,
                  const int64_t[:, ::1] shapes, Py_ssize_t itemsize, Py_ssize_t swap_unit,
                  const uint8_t[::1] direct, const int8_t[::1] status):
        cdef Py_ssize_t n = shapes.shape[0], ndim = shapes.shape[1], r
        if chunk_offsets.shape[0] != n or dst_offsets.shape[0] != n or direct.shape[0] != n:
            raise ValueError(
                f"{func}: {n} shapes but {chunk_offsets.shape[0]} chunk_offsets, "
                f"{dst_offsets.shape[0]} dst_offsets and {direct.shape[0]} direct flags"
            )
        if chunk_strides.shape[0] != ndim or dst_strides.shape[0] != ndim:
            raise ValueError(
                f"{func}: shapes of rank {ndim}, but {chunk_strides.shape[0]} "
                f"chunk_strides and {dst_strides.shape[0]} dst_strides"
            )
        if ndim > ZF_MAX_NDIM:
            raise ValueError(f"{func}: rank {ndim} exceeds the maximum of {ZF_MAX_NDIM}")
        _check_item(func, itemsize, swap_unit)
        self.itemsize = itemsize
        self.swap_unit = swap_unit
        self.d = &dst[0] if dst.shape[0] else NULL
        self.stream = dst.shape[0] >= _stream_min
        self.dst_offsets = dst_offsets
        self.direct = direct
        self.layouts = <Layout*>PyMem_Malloc(max(n, 1) * sizeof(Layout))
        self.skip = <bint*>PyMem_Malloc(max(n, 1) * sizeof(bint))
        if self.layouts == NULL or self.skip == NULL:
            raise MemoryError()
        # Every row is checked without the GIL (a batch of chunks costs no interpreter
        # time per chunk); the first row that fails is checked again by the checks that
        # raise, which name what is wrong.
        cdef Py_ssize_t bad = -1
        cdef int64_t dlen = dst.shape[0]
        cdef const int64_t* shp
        cdef const int64_t* cst = &chunk_strides[0] if ndim else NULL
        cdef const int64_t* dstr = &dst_strides[0] if ndim else NULL
        with nogil:
            for r in range(n):
                self.skip[r] = False
                if status[r] == _NO_DATA:
                    continue
                if direct[r]:
                    if dst_offsets[r] < 0 or dst_offsets[r] > dlen - nbytes:
                        bad = r
                        break
                    continue
                shp = &shapes[r, 0] if ndim else NULL
                if not _shape_ok(shp, ndim):
                    bad = r
                    break
                if _shape_empty(shp, ndim):
                    self.skip[r] = True
                    continue
                if not (_dst_strides_ok(dstr, shp, ndim)
                        and _span_ok(nbytes, chunk_offsets[r], cst, shp, ndim, itemsize)
                        and _span_ok(dlen, dst_offsets[r], dstr, shp, ndim, itemsize)):
                    bad = r
                    break
                normalize_layout(<int>ndim, shp, cst, dstr, chunk_offsets[r], dst_offsets[r],
                                 &self.layouts[r])
        if bad >= 0:
            r = bad
            try:
                if direct[r]:
                    raise ValueError(
                        f"{func}: direct bytes [{dst_offsets[r]}, "
                        f"{dst_offsets[r] + nbytes}) lie outside dst's "
                        f"{dst.shape[0]} bytes"
                    )
                _check_shape(func, shapes[r])
                _check_dst_strides(func, dst_strides, shapes[r])
                _check_span(func, "chunk", nbytes, chunk_offsets[r], chunk_strides, shapes[r],
                            itemsize)
                _check_span(func, "dst", dst.shape[0], dst_offsets[r], dst_strides, shapes[r],
                            itemsize)
            except ValueError as e:
                raise ValueError(f"{e} (chunk {r})") from None
            raise AssertionError(f"{func}: row {r} failed a check that did not say why")

    def __dealloc__(self):
        PyMem_Free(self.layouts)
        PyMem_Free(self.skip)
