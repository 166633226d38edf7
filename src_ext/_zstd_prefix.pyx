# cython: language_level=3
"""The first bytes of a batch of zstd frames, in one call without the GIL.

``decode_prefixes`` decodes each frame of a batch a block at a time with zstd's
buffer-less API (``ZSTD_decompressBegin``, ``ZSTD_nextSrcSizeToDecompress``,
``ZSTD_decompressContinue``), straight into its place, and stops after the block
(at most 128 KiB) that holds the last byte the caller needs: a gather that needs the
first rows of a chunk does not undo every block of its frame.  The whole batch runs in
one ``nogil`` loop (``zarrfast.kernels.zstd_prefix`` called zstd once per block
through ``ctypes``, taking the GIL back after each block: threads then waited for it
under contention).

zstd is not linked: ``bind`` takes the addresses of the functions (numcodecs' copy of
the library exports them; ``zarrfast.kernels.zstd_prefix`` finds them with ``ctypes``
at import).  The function pointers are written once, at import, then only read.
A :class:`Context` holds one thread's decompression context.

Twin: ``zarrfast.kernels.reference.decode_prefixes``
"""

from libc.stdint cimport int8_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc

from _status cimport _DECODED, _FAILED, _NO_DATA

ctypedef void* (*zstd_create_fn)() noexcept nogil
ctypedef size_t (*zstd_free_fn)(void*) noexcept nogil
ctypedef size_t (*zstd_begin_fn)(void*) noexcept nogil
ctypedef size_t (*zstd_next_fn)(void*) noexcept nogil
ctypedef size_t (*zstd_continue_fn)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef unsigned (*zstd_is_error_fn)(size_t) noexcept nogil
ctypedef unsigned long long (*zstd_content_size_fn)(const void*, size_t) noexcept nogil
ctypedef size_t (*zstd_frame_size_fn)(const void*, size_t) noexcept nogil

cdef zstd_create_fn _create = NULL
cdef zstd_free_fn _free = NULL
cdef zstd_begin_fn _begin = NULL
cdef zstd_next_fn _next_size = NULL
cdef zstd_continue_fn _continue = NULL
cdef zstd_is_error_fn _is_error = NULL
cdef zstd_content_size_fn _content_size = NULL
cdef zstd_frame_size_fn _frame_size = NULL

#: statuses, as ``zarrfast.kernels.zstd_prefix`` gives them
DECODED = _DECODED
NO_DATA = _NO_DATA
FAILED = _FAILED


def bind(size_t create, size_t free, size_t begin, size_t next_size, size_t decompress,
         size_t is_error, size_t content_size, size_t frame_size):
    """Use the zstd C functions at these addresses (``ZSTD_createDCtx``,
    ``ZSTD_freeDCtx``, ``ZSTD_decompressBegin``, ``ZSTD_nextSrcSizeToDecompress``,
    ``ZSTD_decompressContinue``, ``ZSTD_isError``, ``ZSTD_getFrameContentSize``,
    ``ZSTD_findFrameCompressedSize``).  Raises ``ValueError`` (binding nothing) for a
    null address."""
    global _create, _free, _begin, _next_size, _continue, _is_error, _content_size
    global _frame_size
    if not (create and free and begin and next_size and decompress and is_error
            and content_size and frame_size):
        raise ValueError("bind: a function address is null")
    _create = <zstd_create_fn>create
    _free = <zstd_free_fn>free
    _begin = <zstd_begin_fn>begin
    _next_size = <zstd_next_fn>next_size
    _continue = <zstd_continue_fn>decompress
    _is_error = <zstd_is_error_fn>is_error
    _content_size = <zstd_content_size_fn>content_size
    _frame_size = <zstd_frame_size_fn>frame_size


def bound():
    """Whether :func:`bind` has bound the functions."""
    return _continue != NULL


cdef class Context:
    """One thread's zstd decompression context (a context is used by one call at a
    time: the caller keeps one per thread)."""
    cdef void* ptr

    def __cinit__(self):
        if _create == NULL:
            raise RuntimeError("Context: zstd is not bound (zarrfast.kernels.zstd_prefix)")
        self.ptr = _create()
        if self.ptr == NULL:
            raise MemoryError("ZSTD_createDCtx failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            _free(self.ptr)
            self.ptr = NULL


cdef int8_t _decode_one(void* ctx, const uint8_t* ip, int64_t size, uint8_t* ostart,
                        int64_t need, int64_t nbytes) noexcept nogil:
    """Frame ``ip[:size]`` into ``ostart[:nbytes]`` up to at least byte ``need``: only
    a frame that is exactly its ``size`` bytes (its block headers walked, nothing
    decoded: one cut short, or followed by other bytes, is damaged, and a whole decode
    refuses it; its first blocks would read as data)."""
    cdef const uint8_t* iend = ip + size
    cdef uint8_t* op = ostart
    cdef uint8_t* oend = ostart + nbytes
    cdef size_t k, got
    if _content_size(ip, <size_t>size) != <unsigned long long>nbytes:
        return _FAILED
    k = _frame_size(ip, <size_t>size)
    if _is_error(k) or k != <size_t>size:
        return _FAILED
    if _is_error(_begin(ctx)):
        return _FAILED
    while op - ostart < need:
        k = _next_size(ctx)
        if k == 0 or <size_t>(iend - ip) < k:  # (the frame ended early, or is cut short)
            return _FAILED
        got = _continue(ctx, op, <size_t>(oend - op), ip, k)
        if _is_error(got):
            return _FAILED
        ip += k
        op += got
    return _DECODED


def decode_prefixes(Context context not None, const uint8_t[::1] src,
                    const int64_t[::1] src_offsets, const int64_t[::1] src_sizes,
                    uint8_t[::1] dst, const int64_t[::1] dst_offsets,
                    const int64_t[::1] needs, int64_t nbytes, int8_t[::1] status):
    """Decode at least the first ``needs[r]`` bytes of zstd frame ``r`` (bytes
    ``src[src_offsets[r]:][:src_sizes[r]]``) into ``dst[dst_offsets[r]:][:nbytes]``, block
    by block, stopping after the block that holds byte ``needs[r] - 1``; its status into
    ``status[r]``: ``DECODED``; ``NO_DATA`` for a negative ``src_sizes[r]`` (nothing
    done); ``FAILED`` for a frame that does not declare a content size of ``nbytes``,
    is not exactly its ``src_sizes[r]`` bytes (cut short, or followed by other bytes),
    or does not decode (its bytes of ``dst`` are then undefined).

    Nothing is written outside each frame's ``nbytes`` of ``dst`` nor read outside its
    bytes of ``src``.  Raises ``ValueError`` (before anything is written) when the
    lengths differ, ``nbytes`` is negative, or a range lies outside ``src`` or ``dst``
    (``needs[r]`` must lie in ``[0, nbytes]``).  The GIL is released for the batch.

    Twin: ``zarrfast.kernels.reference.decode_prefixes``"""
    cdef Py_ssize_t n = src_offsets.shape[0], r
    cdef int64_t so, size, do, need
    if not (src_sizes.shape[0] == dst_offsets.shape[0] == needs.shape[0]
            == status.shape[0] == n):
        raise ValueError(f"decode_prefixes: src_offsets, src_sizes, dst_offsets, needs and "
                         f"status must have the same length (src_offsets has {n})")
    if nbytes < 0:
        raise ValueError(f"decode_prefixes: nbytes {nbytes} is negative")
    for r in range(n):
        so, size, do, need = src_offsets[r], src_sizes[r], dst_offsets[r], needs[r]
        if size >= 0 and (so < 0 or so > src.shape[0] or size > src.shape[0] - so):
            raise ValueError(f"decode_prefixes: frame {r}: bytes [{so}, {so} + {size}) lie "
                             f"outside src ({src.shape[0]} bytes)")
        if need < 0 or need > nbytes or do < 0 or do > dst.shape[0] \
                or nbytes > dst.shape[0] - do:
            raise ValueError(f"decode_prefixes: frame {r}: need {need} of {nbytes} bytes at "
                             f"{do} lies outside dst ({dst.shape[0]} bytes)")
    if n == 0:
        return
    if _continue == NULL:
        raise RuntimeError("decode_prefixes: zstd is not bound (zarrfast.kernels.zstd_prefix)")
    cdef void* ctx = context.ptr
    cdef const uint8_t* sp = &src[0] if src.shape[0] else NULL
    cdef uint8_t* dp = &dst[0] if dst.shape[0] else NULL
    with nogil:
        for r in range(n):
            size = src_sizes[r]
            if size < 0:
                status[r] = _NO_DATA
            else:
                status[r] = _decode_one(ctx, sp + src_offsets[r], size,
                                        dp + dst_offsets[r], needs[r], nbytes)


def decode_prefix_list(Context context not None, list frames, uint8_t[::1] dst,
                       const int64_t[::1] dst_offsets, const int64_t[::1] needs,
                       int64_t nbytes, int8_t[::1] status):
    """``decode_prefixes`` of separate frames: ``frames[r]`` is a bytes-like object (a
    value fetched by one request of a remote store), or ``None`` (``NO_DATA``: nothing
    done), decoded where it lies, without first copying the frames into one buffer.
    The buffers are taken (and kept) with the GIL, then the batch runs in one ``nogil``
    loop.  Raises ``ValueError`` (before anything is written) when the lengths differ,
    ``nbytes`` is negative, a frame is not a contiguous buffer, or a destination lies
    outside ``dst`` (``needs[r]`` must lie in ``[0, nbytes]``).

    Twin: ``zarrfast.kernels.reference.decode_prefix_list``"""
    cdef Py_ssize_t n = len(frames), r
    cdef int64_t do, need
    if not (dst_offsets.shape[0] == needs.shape[0] == status.shape[0] == n):
        raise ValueError(f"decode_prefix_list: frames, dst_offsets, needs and status must "
                         f"have the same length (frames has {n})")
    if nbytes < 0:
        raise ValueError(f"decode_prefix_list: nbytes {nbytes} is negative")
    for r in range(n):
        do, need = dst_offsets[r], needs[r]
        if need < 0 or need > nbytes or do < 0 or do > dst.shape[0] \
                or nbytes > dst.shape[0] - do:
            raise ValueError(f"decode_prefix_list: frame {r}: need {need} of {nbytes} bytes "
                             f"at {do} lies outside dst ({dst.shape[0]} bytes)")
    if n == 0:
        return
    if _continue == NULL:
        raise RuntimeError("decode_prefix_list: zstd is not bound (zarrfast.kernels.zstd_prefix)")
    # the frames' buffers, held until the decoding is done
    cdef list held = [None] * n
    cdef const uint8_t[::1] view
    cdef int64_t* sizes = <int64_t*>malloc(n * sizeof(int64_t))
    cdef const uint8_t** starts = <const uint8_t**>malloc(n * sizeof(uint8_t*))
    cdef void* ctx = context.ptr
    cdef uint8_t* dp = &dst[0] if dst.shape[0] else NULL
    if sizes == NULL or starts == NULL:
        free(sizes)
        free(starts)
        raise MemoryError("decode_prefix_list: no memory for the frames' addresses")
    try:
        for r in range(n):
            frame = frames[r]
            sizes[r] = -1
            starts[r] = NULL
            if frame is None:
                continue
            try:
                view = frame
            except (TypeError, ValueError, BufferError) as e:
                raise ValueError(f"decode_prefix_list: frame {r} is not a contiguous buffer "
                                 f"of bytes: {e}") from None
            held[r] = view
            sizes[r] = view.shape[0]
            if view.shape[0]:
                starts[r] = &view[0]
        with nogil:
            for r in range(n):
                if sizes[r] < 0:
                    status[r] = _NO_DATA
                elif sizes[r] == 0:  # (as decode_prefixes: no frame header)
                    status[r] = _FAILED
                else:
                    status[r] = _decode_one(ctx, starts[r], sizes[r], dp + dst_offsets[r],
                                            needs[r], nbytes)
    finally:
        free(sizes)
        free(starts)


# -- decode_prefix_files: each chunk file read only up to the blocks its prefix needs --

cdef extern from *:
    """
    #include <errno.h>
    #include <stdint.h>
    #if defined(_WIN32)
    /* no file kernels on Windows: every file is left to the caller (FAILED, ENOSYS) */
    static int zf_open_root(const char* path) { errno = ENOSYS; return -1; }
    static int zf_prefix_open(int dirfd, const char* path, int64_t* size) {
        errno = ENOSYS; return -1; }
    static int64_t zf_prefix_pread(int fd, uint8_t* p, int64_t n, int64_t off) {
        errno = ENOSYS; return -1; }
    static int zf_prefix_close(int fd) { return 0; }
    #else
    #include <fcntl.h>
    #include <sys/stat.h>
    #include <unistd.h>
    #include "zf_files.h"
    #ifndef O_NONBLOCK
    #define O_NONBLOCK 0
    #endif
    /* `path` under `dirfd` (no links: zf_open_nolinks; -1: a plain path), opened
       non-blocking (a FIFO is refused below, not waited on), and its size: the
       descriptor, or -1 with errno (EISDIR for a directory, EINVAL for anything
       else that is not a regular file). */
    static int zf_prefix_open(int dirfd, const char* path, int64_t* size) {
        struct stat st;
        int fd = dirfd == -1 ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                             : zf_open_nolinks(dirfd, path, O_RDONLY | O_NONBLOCK, 0);
        if (fd < 0) return -1;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            int err = errno;
            if (err == 0 || S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode))
                err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
            close(fd);
            errno = err;
            return -1;
        }
        *size = (int64_t)st.st_size;
        return fd;
    }
    /* `n` bytes at `off` (fewer only at the end of the file), or -1 with errno. */
    static int64_t zf_prefix_pread(int fd, uint8_t* p, int64_t n, int64_t off) {
        int64_t got = 0;
        while (got < n) {
            ssize_t k = pread(fd, p + got, (size_t)(n - got), (off_t)(off + got));
            if (k < 0) {
                if (errno == EINTR) continue;
                return -1;
            }
            if (k == 0) break;
            got += k;
        }
        return got;
    }
    static int zf_prefix_close(int fd) { return close(fd); }
    #endif
    """
    int zf_open_root(const char* path) nogil
    int zf_prefix_open(int dirfd, const char* path, int64_t* size) nogil
    int64_t zf_prefix_pread(int fd, uint8_t* p, int64_t n, int64_t off) nogil
    int zf_prefix_close(int fd) nogil

from cpython.bytes cimport PyBytes_AS_STRING
from libc.errno cimport EFBIG, EISDIR, ENOENT, ENOTDIR, errno

import os

#: zstd's largest block (ZSTD_BLOCKSIZE_MAX)
cdef int64_t _BLOCK = 128 * 1024


cdef int64_t _header_size(const uint8_t* p) noexcept nogil:
    """The size of the zstd frame header that starts at ``p`` (at least 5 bytes)."""
    cdef int fhd = p[4]
    cdef int single = (fhd >> 5) & 1
    cdef int did = fhd & 3
    cdef int fcs = fhd >> 6
    cdef int64_t n = 5 + (0 if single else 1)
    n += 4 if did == 3 else did  # (dictionary id: 0, 1, 2 or 4 bytes)
    n += single if fcs == 0 else (1 << fcs)  # (content size: 0 or 1, 2, 4, 8 bytes)
    return n


cdef int8_t _file_one(void* ctx, int fd, int64_t fsize, uint8_t* buf, uint8_t* ostart,
                      int64_t need, int64_t nbytes, int64_t* err) noexcept nogil:
    """The zstd frame of the file ``fd`` (``fsize`` bytes, at most the size of ``buf``)
    decoded into ``ostart[:nbytes]`` up to at least byte ``need``, as ``_decode_one``
    decodes a frame in memory, but reading into ``buf`` only the bytes of the blocks it
    decodes (and the headers of the others: the frame must be exactly the file, as
    ``_decode_one`` checks).  A frame with a content checksum is FAILED (``err`` 0):
    the caller decodes it whole, which checks the checksum."""
    cdef int64_t have, want, ip = 0, hsize, nblocks, k, got, bsize
    cdef uint8_t* op = ostart
    cdef uint8_t* oend = ostart + nbytes
    cdef uint8_t head[3]
    cdef const uint8_t* h
    cdef uint32_t word
    if fsize < 5:
        return _FAILED
    # the first read: the blocks that hold the prefix, as estimated from the share of
    # the chunk's blocks they are (a second read gets the rest of a block cut short)
    nblocks = (nbytes + _BLOCK - 1) // _BLOCK
    k = (need + _BLOCK - 1) // _BLOCK
    want = fsize if k >= nblocks else min(fsize, fsize * k // nblocks + fsize // 32 + 64)
    have = zf_prefix_pread(fd, buf, want, 0)
    if have < 0:
        err[0] = errno
        return _FAILED
    if have < want:  # (the file shrank under us: the caller reads it again)
        return _FAILED
    # (a zstd frame: its magic number, then the content size; a skippable frame, whose
    # header _header_size does not read, is left to the caller)
    if (buf[0] != 0x28 or buf[1] != 0xB5 or buf[2] != 0x2F or buf[3] != 0xFD
            or _content_size(buf, <size_t>have) != <unsigned long long>nbytes
            or buf[4] & 0x04):
        return _FAILED
    hsize = _header_size(buf)
    if _is_error(_begin(ctx)):
        return _FAILED
    # the frame header's steps, then blocks until the prefix is decoded: each step's
    # bytes read (with the next block's header) when the first read did not get them
    while op - ostart < need or ip < hsize:
        k = <int64_t>_next_size(ctx)
        if k == 0 or fsize - ip < k:  # (the frame ended early, or is cut short)
            return _FAILED
        if ip + k > have:
            want = min(fsize, ip + k + 3)
            got = zf_prefix_pread(fd, buf + have, want - have, have)
            if got < 0:
                err[0] = errno
            if got != want - have:  # (an error, or the file shrank under us)
                return _FAILED
            have = want
        got = <int64_t>_continue(ctx, op, <size_t>(oend - op), buf + ip, <size_t>k)
        if _is_error(<size_t>got):
            return _FAILED
        ip += k
        op += got
    # the rest of the frame: its block headers walked, nothing decoded or read but them
    if _next_size(ctx) == 0:  # (the last block was decoded)
        return _DECODED if ip == fsize else _FAILED
    while True:
        if fsize - ip < 3:
            return _FAILED
        if ip + 3 <= have:
            h = buf + ip
        else:
            if zf_prefix_pread(fd, head, 3, ip) != 3:
                return _FAILED
            h = head
        word = <uint32_t>h[0] | (<uint32_t>h[1] << 8) | (<uint32_t>h[2] << 16)
        if (word >> 1) & 3 == 3:  # (a reserved block type)
            return _FAILED
        bsize = 1 if (word >> 1) & 3 == 1 else <int64_t>(word >> 3)
        if fsize - ip - 3 < bsize:
            return _FAILED
        ip += 3 + bsize
        if word & 1:
            return _DECODED if ip == fsize else _FAILED


def decode_prefix_files(Context context not None, root, list paths not None,
                        uint8_t[::1] work not None, uint8_t[::1] dst not None,
                        const int64_t[::1] dst_offsets not None,
                        const int64_t[::1] needs not None, int64_t nbytes,
                        int8_t[::1] status not None, int64_t[::1] errs not None):
    """``decode_prefixes`` of the zstd frames in the files ``paths[r]`` (``bytes``,
    relative to the directory ``root``, opened without following links; ``root``
    ``None``: plain paths), each read into ``work`` only up to the blocks its first
    ``needs[r]`` bytes need (plus the headers of its other blocks, which must make the
    frame exactly the file) and decoded into ``dst[dst_offsets[r]:][:nbytes]``.
    One loop without the GIL: per file an open, an fstat, one read (two when the first
    falls short of a block), a close.

    ``status[r]``: ``DECODED``; ``NO_DATA`` (no such file: ``ENOENT``, ``ENOTDIR``,
    ``EISDIR``, or no ``root``); ``FAILED`` otherwise, with ``errs[r]`` the ``errno`` of
    an open or a read that failed (``ELOOP``: a link on the path; ``EFBIG``: a file
    larger than ``work``), else 0 (a frame that does not decode, is not exactly its
    file, or carries a content checksum): the caller reads it another way, which says
    what is wrong.  Raises ``ValueError`` (before anything is read or written) when the
    lengths differ, ``nbytes`` is negative, a destination lies outside ``dst`` or a
    path is not ``bytes`` without NUL.

    Twin: ``zarrfast.kernels.reference.decode_prefix_files``"""
    paths = list(paths)  # (our own list: the loop keeps pointers into its bytes)
    cdef Py_ssize_t n = len(paths), r
    cdef int64_t do, need
    if not (dst_offsets.shape[0] == needs.shape[0] == status.shape[0] == errs.shape[0]
            == n):
        raise ValueError(f"decode_prefix_files: paths, dst_offsets, needs, status and errs "
                         f"must have the same length (paths has {n})")
    if nbytes < 0:
        raise ValueError(f"decode_prefix_files: nbytes {nbytes} is negative")
    for r in range(n):
        p = paths[r]
        if not isinstance(p, bytes) or b"\0" in p:
            raise ValueError(f"decode_prefix_files: path {r} must be bytes without NUL, "
                             f"got {p!r}")
        do, need = dst_offsets[r], needs[r]
        if need < 0 or need > nbytes or do < 0 or do > dst.shape[0] \
                or nbytes > dst.shape[0] - do:
            raise ValueError(f"decode_prefix_files: file {r}: need {need} of {nbytes} bytes "
                             f"at {do} lies outside dst ({dst.shape[0]} bytes)")
    if root is not None and (not isinstance(root, bytes) or b"\0" in root):
        raise ValueError(f"decode_prefix_files: root must be bytes without NUL, got {root!r}")
    if n == 0:
        return
    if _continue == NULL:
        raise RuntimeError("decode_prefix_files: zstd is not bound "
                           "(zarrfast.kernels.zstd_prefix)")
    cdef const char** cpaths = <const char**>malloc(n * sizeof(char*))
    if cpaths == NULL:
        raise MemoryError("decode_prefix_files: no memory for the paths")
    for r in range(n):
        cpaths[r] = PyBytes_AS_STRING(paths[r])  # (`paths` keeps them alive)
    cdef int rootfd = -1
    if root is not None:
        rootfd = zf_open_root(PyBytes_AS_STRING(root))
        if rootfd == -1:
            e = errno
            free(cpaths)
            raise OSError(e, os.strerror(e), os.fsdecode(root))
    cdef void* ctx = context.ptr
    cdef uint8_t* wp = &work[0] if work.shape[0] else NULL
    cdef int64_t cap = work.shape[0]
    cdef uint8_t* dp = &dst[0] if dst.shape[0] else NULL
    cdef int fd
    cdef int64_t fsize
    try:
        with nogil:
            for r in range(n):
                errs[r] = 0
                if rootfd == -2:  # (no root directory: no files)
                    status[r] = _NO_DATA
                    continue
                fd = zf_prefix_open(rootfd, cpaths[r], &fsize)
                if fd < 0:
                    if errno == ENOENT or errno == ENOTDIR or errno == EISDIR:
                        status[r] = _NO_DATA
                    else:
                        status[r] = _FAILED
                        errs[r] = errno
                    continue
                if fsize > cap:
                    status[r] = _FAILED
                    errs[r] = EFBIG
                else:
                    status[r] = _file_one(ctx, fd, fsize, wp, dp + dst_offsets[r], needs[r],
                                          nbytes, &errs[r])
                zf_prefix_close(fd)
    finally:
        free(cpaths)
        if rootfd >= 0:
            zf_prefix_close(rootfd)
