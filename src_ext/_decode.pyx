# cython: language_level=3
"""Batched chunk decoding: many zstd-, blosc-, gzip- or zlib-compressed chunks decoded
and placed into an output in one ``nogil`` loop.

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
gzip members and zlib streams are decoded by libdeflate (``bind_libdeflate``: Debian's
``libdeflate0``, which libtiff depends on, found with ``ctypes``; one decompressor per
thread), else by the zlib Python's ``zlib`` module uses (``bind_zlib_inflate``), only
when a chunk is one member / stream of exactly its size (``zf_inflate.h``): anything
else is left to the codecs, which decode it (several members, padding) or say what is
wrong.  ``set_inflate`` chooses between the two (tests, benchmarks).
Compression (``blosc_compress``) is only ever bound to numcodecs' own c-blosc,
so that the bytes written are numcodecs' bytes; a frame of LZ4 streams is made
here (``zf_blosc_enc.h``: c-blosc's block loop, the filters with AVX2) with the LZ4
of that same c-blosc, so its bytes are c-blosc's too.  A blosc frame of LZ4 (linked at
build time, else numcodecs' copy) or zstd blocks is decoded here (``_blosc_frame``: c-blosc 1.x's block
loop, with the shuffle filters undone by ``zf_shuffle.h``, AVX2 where the CPU has
it); every other frame, and any frame that is wrong, is left to c-blosc.

Every range is validated with the GIL before the loop.  The output of a decode
is bounded by the chunk's size (no decompression bombs), and a chunk that does
not decode to exactly that size is reported, never placed.

Twins: ``zarrfast.kernels.reference.ChunkDecoder``,
``zarrfast.kernels.reference.Placement``, ``zarrfast.kernels.reference.ShardFiles``,
``zarrfast.kernels.reference.crc32c``, ``zarrfast.kernels.reference.blosc_compress``,
``zarrfast.kernels.reference.blosc_compress_regions``,
``zarrfast.kernels.reference.blosc_decode_frame``,
``zarrfast.kernels.reference.blosc_shuffle``,
``zarrfast.kernels.reference.blosc_unshuffle``,
``zarrfast.kernels.reference.blosc_bitshuffle``,
``zarrfast.kernels.reference.blosc_bitunshuffle``.
"""

from cpython.bytes cimport (
    PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE,
)
from libc.string cimport memcmp, memcpy, memset, strlen
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.errno cimport EISDIR, ENOENT, ENOTDIR, errno
from posix.unistd cimport close
from libc.limits cimport INT_MAX
from libc.stdint cimport INT64_MAX, UINT64_MAX, int32_t, int64_t, int8_t, uint8_t, uint32_t, uint64_t

import os

import numpy as np

from _checks cimport (_check_dst_strides, _check_fill, _check_item, _check_shape,
                     _check_span, _tup)
from _status cimport _DECODED, _FAILED, _NO_DATA
from _common cimport (
    ZF_MAX_NDIM, Layout, _fill_run, box_fill, checked_add, checked_mul, normalize_layout,
    row_group_layout, strided_copy_stream, strided_fill, swap_groups, zf_stream_fence,
)
from _gather cimport Gather, all_items, dense_layout as _dense, gather_next, gather_setup
from _shard_check cimport _check

cdef extern from *:
    """
    #include <errno.h>
    #include <stdint.h>
    #include <stdlib.h>
    #if defined(_WIN32)
    /* no batched file reads on Windows: every file is left to the per-chunk path */
    static int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                            int64_t limit, int64_t* size, int64_t* stamp) {
        *size = -1; return ENOSYS; }
    static int zf_open_root(const char* path) { errno = ENOSYS; return -1; }
    static int zf_read_range(int fd, int64_t offset, int64_t size, uint8_t** buf,
                             int64_t* cap) { return ENOSYS; }
    typedef void (*zf_cold_fn)(void*);
    static int zf_read_file_cold(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                                 int64_t limit, int64_t* size, int64_t* stamp,
                                 zf_cold_fn cold, void* ctx) {
        *size = -1; return ENOSYS; }
    static int zf_read_range_cold(int fd, int64_t offset, int64_t size, uint8_t** buf,
                                  int64_t* cap, zf_cold_fn cold, void* ctx) { return ENOSYS; }
    static void zf_will_need_files(int dirfd, const char** paths, const int64_t* which,
                                   int64_t lo, int64_t hi, int64_t file_bytes) { }
    static void zf_will_need_ranges(const int64_t* fds, const int64_t* offsets,
                                    const int64_t* sizes, int64_t lo, int64_t hi) { }
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
    #include <sys/uio.h>
    /* A call whose first read would wait for the disk (its bytes are not in the page
       cache) calls `cold(ctx)` first: the caller tells the kernel what else it is about
       to read (zf_will_need_*), so that the disk reads it all at once while this
       thread waits for one read.  The first read is made with RWF_NOWAIT; where that
       flag is missing (or refused by the file system) nothing is called. */
    typedef void (*zf_cold_fn)(void*);
    static ssize_t zf_pread_first(int fd, uint8_t* p, size_t n, off_t off, zf_cold_fn cold,
                                  void* ctx) {
    #if defined(RWF_NOWAIT) && defined(__linux__)
        if (cold != NULL) {
            struct iovec v;
            ssize_t k;
            v.iov_base = p;
            v.iov_len = n;
            k = preadv2(fd, &v, 1, off, RWF_NOWAIT);
            if (k >= 0) return k;  /* (a short read: the caller reads on) */
            if (errno == EAGAIN)
                cold(ctx);
            else if (errno != EOPNOTSUPP && errno != EINVAL && errno != ENOSYS
                     && errno != EINTR)
                return k;  /* a real error: the caller reports it */
        }
    #else
        (void)cold; (void)ctx;
    #endif
        return pread(fd, p, n, off);
    }
    /* Read the whole file at `path` (relative to the directory `dirfd` and opened
       without following links, see zf_files.h; -1: a plain path) into `*buf` (grown with realloc up to `limit`
       bytes).  Returns 0 (and the size), or an errno: EISDIR for a directory, EINVAL for
       another file that is not regular (a FIFO, a device),
       EFBIG when it is larger than `limit` (its size still reported), EIO when it
       shrank while being read.  With `stamp`, the open file's (st_ino, st_size,
       st_mtime_ns, st_ctime_ns) go there, from fstat.  With `cold`, see
       zf_pread_first (zf_read_file: without). */
    #if defined(__APPLE__)
    #define ZF_MTIM st_mtimespec
    #define ZF_CTIM st_ctimespec
    #else
    #define ZF_MTIM st_mtim
    #define ZF_CTIM st_ctim
    #endif
    static int zf_read_file_cold(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                                 int64_t limit, int64_t* size, int64_t* stamp,
                                 zf_cold_fn cold, void* ctx);
    static int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                            int64_t limit, int64_t* size, int64_t* stamp) {
        return zf_read_file_cold(dirfd, path, buf, cap, limit, size, stamp, NULL, NULL);
    }
    static int zf_read_file_cold(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                                 int64_t limit, int64_t* size, int64_t* stamp,
                                 zf_cold_fn cold, void* ctx) {
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
        if (stamp != NULL) {
            stamp[0] = (int64_t)st.st_ino;
            stamp[1] = want;
            stamp[2] = (int64_t)st.ZF_MTIM.tv_sec * 1000000000 + (int64_t)st.ZF_MTIM.tv_nsec;
            stamp[3] = (int64_t)st.ZF_CTIM.tv_sec * 1000000000 + (int64_t)st.ZF_CTIM.tv_nsec;
        }
        if (want > limit) { close(fd); return EFBIG; }
        if (want > *cap) {
            uint8_t* grown = (uint8_t*)realloc(*buf, (size_t)(want > 0 ? want : 1));
            if (grown == NULL) { close(fd); return ENOMEM; }
            *buf = grown;
            *cap = want;
        }
        while (got < want) {
            k = got == 0 ? zf_pread_first(fd, *buf, (size_t)want, 0, cold, ctx)
                         : pread(fd, *buf + got, (size_t)(want - got), (off_t)got);
            cold = NULL;
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
    /* Read bytes [offset, offset + size) of the open file `fd` into `*buf` (grown with
       realloc).  Returns 0, or an errno: EIO when the file ends first. */
    static int zf_read_range_cold(int fd, int64_t offset, int64_t size, uint8_t** buf,
                                  int64_t* cap, zf_cold_fn cold, void* ctx);
    static int zf_read_range(int fd, int64_t offset, int64_t size, uint8_t** buf,
                             int64_t* cap) {
        return zf_read_range_cold(fd, offset, size, buf, cap, NULL, NULL);
    }
    static int zf_read_range_cold(int fd, int64_t offset, int64_t size, uint8_t** buf,
                                  int64_t* cap, zf_cold_fn cold, void* ctx) {
        int64_t got = 0;
        ssize_t k;
        if (size > *cap) {
            uint8_t* grown = (uint8_t*)realloc(*buf, (size_t)(size > 0 ? size : 1));
            if (grown == NULL) return ENOMEM;
            *buf = grown;
            *cap = size;
        }
        while (got < size) {
            k = got == 0 ? zf_pread_first(fd, *buf, (size_t)size, (off_t)offset, cold, ctx)
                         : pread(fd, *buf + got, (size_t)(size - got), (off_t)(offset + got));
            cold = NULL;
            if (k < 0) {
                if (errno == EINTR) continue;
                return errno;
            }
            if (k == 0) return EIO;
            got += k;
        }
        return 0;
    }
    /* Tell the kernel the files paths[which[i]] (which NULL: paths[i]) for i in
       [lo, hi) are about to be read (POSIX_FADV_WILLNEED: it starts reading them,
       without waiting for them): each opened as zf_read_file opens it (no links
       followed, never blocking: a FIFO is opened and closed, a missing file skipped).
       At most ZF_WILL_NEED files, and ZF_WILL_NEED_BYTES for files of at most
       `file_bytes` each: what is announced stays a batch's worth, not a whole read's. */
    #define ZF_WILL_NEED 4096
    #define ZF_WILL_NEED_BYTES ((int64_t)256 << 20)
    static void zf_will_need_files(int dirfd, const char** paths, const int64_t* which,
                                   int64_t lo, int64_t hi, int64_t file_bytes) {
        int64_t i, most = ZF_WILL_NEED;
        int fd;
        if (file_bytes > 0 && ZF_WILL_NEED_BYTES / file_bytes < most)
            most = ZF_WILL_NEED_BYTES / file_bytes > 0 ? ZF_WILL_NEED_BYTES / file_bytes : 1;
        if (hi - lo > most) hi = lo + most;
        for (i = lo; i < hi; i++) {
            const char* path = paths[which != NULL ? which[i] : i];
            fd = dirfd == -1 ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                             : zf_open_nolinks(dirfd, path, O_RDONLY | O_NONBLOCK, 0);
            if (fd < 0) continue;
    #if defined(POSIX_FADV_WILLNEED)
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    #endif
            close(fd);
        }
    }
    static void zf_will_need(int64_t fd, int64_t offset, int64_t size) {
    #if defined(POSIX_FADV_WILLNEED)
        (void)posix_fadvise((int)fd, (off_t)offset, (off_t)size, POSIX_FADV_WILLNEED);
    #else
        (void)fd; (void)offset; (void)size;
    #endif
    }
    /* The same for ranges of open files: bytes [offsets[i], offsets[i] + sizes[i]) of
       fds[i], for i in [lo, hi), at most ZF_WILL_NEED of them and ZF_WILL_NEED_BYTES.
       Ranges of one file that follow each other (a shard's inner chunks along a box's
       last dimension), with less than a page between them, are announced as one: a
       call, not one per range (the gap holds no whole page, so nothing more is read;
       100 cold boxes of 32^3 zstd chunks in 128^3 shards: 674 calls, not 977). */
    static void zf_will_need_ranges(const int64_t* fds, const int64_t* offsets,
                                    const int64_t* sizes, int64_t lo, int64_t hi) {
        int64_t i, total = 0, fd = -1, start = 0, end = 0;
        int have = 0;
        if (hi - lo > ZF_WILL_NEED) hi = lo + ZF_WILL_NEED;
        for (i = lo; i < hi; i++) {
            if (sizes[i] <= 0) continue;
            total += sizes[i];
            if (total > ZF_WILL_NEED_BYTES) break;
            if (offsets[i] < 0 || sizes[i] > INT64_MAX - offsets[i]) {
                zf_will_need(fds[i], offsets[i], sizes[i]);  /* (as given: the kernel says) */
                continue;
            }
            if (have && fds[i] == fd && offsets[i] >= end && offsets[i] - end < 4096) {
                end = offsets[i] + sizes[i];
                continue;
            }
            if (have) zf_will_need(fd, start, end - start);
            have = 1;
            fd = fds[i];
            start = offsets[i];
            end = offsets[i] + sizes[i];
        }
        if (have) zf_will_need(fd, start, end - start);
    }
    #endif
    """
    int zf_read_file(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                     int64_t limit, int64_t* size, int64_t* stamp) noexcept nogil
    int zf_open_root(const char* path) noexcept nogil
    int zf_read_range(int fd, int64_t offset, int64_t size, uint8_t** buf,
                      int64_t* cap) noexcept nogil
    ctypedef void (*zf_cold_fn)(void*) noexcept nogil
    int zf_read_file_cold(int dirfd, const char* path, uint8_t** buf, int64_t* cap,
                          int64_t limit, int64_t* size, int64_t* stamp, zf_cold_fn cold,
                          void* ctx) noexcept nogil
    int zf_read_range_cold(int fd, int64_t offset, int64_t size, uint8_t** buf,
                           int64_t* cap, zf_cold_fn cold, void* ctx) noexcept nogil
    void zf_will_need_files(int dirfd, const char** paths, const int64_t* which,
                            int64_t lo, int64_t hi, int64_t file_bytes) noexcept nogil
    void zf_will_need_ranges(const int64_t* fds, const int64_t* offsets,
                             const int64_t* sizes, int64_t lo, int64_t hi) noexcept nogil


cdef extern from *:
    """
    /* the next position of a shared cursor, for threads taking turns (ShardFiles.run) */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static int64_t zf_claim(int64_t* cursor) {
        return _InterlockedExchangeAdd64((volatile __int64*)cursor, 1);
    }
    static int64_t zf_load(int64_t* v) {
        return _InterlockedExchangeAdd64((volatile __int64*)v, 0);
    }
    static int64_t zf_add(int64_t* v, int64_t k) {
        return _InterlockedExchangeAdd64((volatile __int64*)v, k);
    }
    #else
    static int64_t zf_claim(int64_t* cursor) {
        return __atomic_fetch_add(cursor, 1, __ATOMIC_RELAXED);
    }
    static int64_t zf_load(int64_t* v) {
        return __atomic_load_n(v, __ATOMIC_RELAXED);
    }
    static int64_t zf_add(int64_t* v, int64_t k) {
        return __atomic_fetch_add(v, k, __ATOMIC_RELAXED);
    }
    #endif
    /* The rows an I/O helper reads ahead of a caller that decodes them (``_Prefetch``
       state): 0 free, 1 read by the helper, 2 read (its bytes, size and errno kept),
       3 taken by the caller, who reads it itself.  A row goes 0 -> 1 -> 2 or 0 -> 3,
       once, by compare-and-swap.  The block is freed by the last of its two holders
       (zf_pf_ref), so the caller never waits for the helper. */
    #if defined(_MSC_VER)
    static int zf_pf_claim(int8_t* s, int8_t to) {
        return _InterlockedCompareExchange8((volatile char*)s, (char)to, 0) == 0;
    }
    static void zf_pf_done(int8_t* s) { _InterlockedExchange8((volatile char*)s, 2); }
    static int zf_pf_ready(int8_t* s) {
        return _InterlockedCompareExchange8((volatile char*)s, 2, 2) == 2;
    }
    static int64_t zf_pf_ref(int64_t* refs, int64_t k) {
        return _InterlockedExchangeAdd64((volatile __int64*)refs, k) + k;
    }
    static int zf_pf_closed(int64_t* v) {
        return _InterlockedExchangeAdd64((volatile __int64*)v, 0) != 0;
    }
    static void zf_pf_close(int64_t* v) { _InterlockedExchange64((volatile __int64*)v, 1); }
    static int zf_dup_cloexec(int fd) { (void)fd; return -1; }  /* (no helper there) */
    #else
    #include <fcntl.h>
    /* a duplicate of `fd`, closed on exec (for a helper reading after the caller closed
       its own); -1 and errno when there is none */
    static int zf_dup_cloexec(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
    static int zf_pf_claim(int8_t* s, int8_t to) {
        int8_t e = 0;
        return __atomic_compare_exchange_n(s, &e, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    static void zf_pf_done(int8_t* s) { __atomic_store_n(s, (int8_t)2, __ATOMIC_RELEASE); }
    static int zf_pf_ready(int8_t* s) { return __atomic_load_n(s, __ATOMIC_ACQUIRE) == 2; }
    static int64_t zf_pf_ref(int64_t* refs, int64_t k) {
        return __atomic_add_fetch(refs, k, __ATOMIC_ACQ_REL);
    }
    static int zf_pf_closed(int64_t* v) { return __atomic_load_n(v, __ATOMIC_ACQUIRE) != 0; }
    static void zf_pf_close(int64_t* v) { __atomic_store_n(v, (int64_t)1, __ATOMIC_RELEASE); }
    #endif
    """
    int64_t zf_claim(int64_t* cursor) noexcept nogil
    int64_t zf_load(int64_t* v) noexcept nogil
    int64_t zf_add(int64_t* v, int64_t k) noexcept nogil
    int zf_pf_claim(int8_t* s, int8_t to) noexcept nogil
    void zf_pf_done(int8_t* s) noexcept nogil
    int zf_pf_ready(int8_t* s) noexcept nogil
    int64_t zf_pf_ref(int64_t* refs, int64_t k) noexcept nogil
    int zf_pf_closed(int64_t* v) noexcept nogil
    void zf_pf_close(int64_t* v) noexcept nogil
    int zf_dup_cloexec(int fd) noexcept nogil


cdef extern from "zf_helper.h":
    ctypedef struct zf_worker:
        void* dctx
        uint8_t* scratch
        int64_t scratch_cap
        uint8_t* filebuf
        int64_t filecap
        uint8_t* blocks
        int64_t blocks_cap
        void* inflater
        int inflater_kind
    ctypedef struct zf_job:
        void (*run)(zf_job* job, zf_worker* worker) noexcept nogil
    int zf_helper_post(zf_job* job, int helpers) noexcept nogil
    void zf_helper_leave(zf_worker* w) noexcept nogil
    void zf_helper_finish(zf_job* job) noexcept nogil
    int64_t zf_helper_jobs() noexcept nogil
    void zf_helper_count_rows(int64_t n) noexcept nogil
    int64_t zf_helper_rows() noexcept nogil
    int zf_helper_threads() noexcept nogil


#: rows whose bytes an I/O helper read for the caller to decode (``_pf_run``)
cdef int64_t _io_rows = 0


def helper_jobs():
    """How many jobs the helper threads have joined, how many rows of them they
    decoded, and how many rows they read for the calling thread to decode (as an I/O
    helper, ``_job_run_shared`` with share < 0), since the process started (0 where
    there is no helper): for tests."""
    return zf_helper_jobs(), zf_helper_rows(), zf_load(&_io_rows)


def helper_threads():
    """How many helper threads run in this process (0 before the first shared call,
    and where there is none)."""
    return zf_helper_threads()


cdef extern from "zf_crc32c.h":
    void zf_crc32c_init() noexcept
    uint32_t zf_crc32c(const uint8_t* p, size_t n) noexcept nogil


zf_crc32c_init()  # (once, at import: the tables are then only read)


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
ctypedef int (*blosc_getitem_fn)(const void*, int, int, void*) noexcept nogil

ctypedef int (*blosc_compress_fn)(int, int, size_t, size_t, const void*, void*, size_t,
                                  const char*, size_t, int) noexcept nogil

cdef blosc_validate_fn _blosc_validate = NULL
cdef blosc_decompress_fn _blosc_decompress = NULL
cdef blosc_getitem_fn _blosc_getitem = NULL
cdef blosc_compress_fn _blosc_compress = NULL

cdef unsigned long long _CONTENTSIZE_UNKNOWN = <unsigned long long>(-1)
cdef unsigned long long _CONTENTSIZE_ERROR = <unsigned long long>(-2)

#: the oldest zstd whose one-shot decompression API (``ZSTD_decompressDCtx``,
#: ``ZSTD_getFrameContentSize``) is stable
MIN_ZSTD_VERSION = 10400

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
               str version not None, size_t getitem=0):
    """Use the c-blosc functions at these addresses (``blosc_cbuffer_validate``,
    ``blosc_decompress_ctx``, ``blosc_compress_ctx``) of c-blosc ``version`` (1.x from
    1.16 on, which has the validation).  ``compress_ctx`` 0 binds decoding only and
    leaves compression as it was.  ``getitem`` (``blosc_getitem``, bounds-checked from
    1.16 on) lets a region of a chunk decode only the blocks that hold it; 0 leaves
    every chunk decoded whole.  Raises ``ValueError`` (binding nothing) otherwise."""
    global _blosc_validate, _blosc_decompress, _blosc_compress, _blosc_getitem
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
    _blosc_getitem = <blosc_getitem_fn>getitem if getitem else NULL
    if compress_ctx:
        _blosc_compress = <blosc_compress_fn>compress_ctx


def blosc_partial_bound():
    """Whether a region of a blosc chunk decodes only the blocks that hold it."""
    return _blosc_getitem != NULL


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
    """``(validate, decompress_ctx, version, getitem)`` of the c-blosc linked at build
    time, or ``None`` (built without c-blosc)."""
    cdef size_t fns[3]
    cdef const char* version = NULL
    if not zf_linked_blosc(fns, &version):
        return None
    return fns[0], fns[1], version.decode("ascii", "replace"), fns[2]


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
    released: the bytes numcodecs' ``Blosc.encode`` gives for the same settings.  An
    LZ4 frame is made by zarrfast itself where ``blosc_encoder`` says so (the same
    bytes: ``zf_blosc_enc.h``).
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
    cdef int64_t got
    cdef _Lz4Encoder e
    cdef bint own = _lz4_encoder_open(&e, cname, clevel, typesize, n, blocksize)
    with nogil:
        if own:
            got = _lz4_encode(&e, s, <int32_t>n, clevel, shuffle, <uint8_t*>dest)
        else:
            got = _blosc_compress(clevel, shuffle, typesize, n, s, dest, cap, cn, blocksize, 1)
    _lz4_encoder_close(&e)
    if got <= 0:
        raise RuntimeError(f"blosc_compress: {'the LZ4 frame encoder' if own else 'c-blosc'} "
                           f"failed ({got}) on {n} bytes with compressor {cname!r}")
    if <size_t>got == cap:
        return out
    return out[:got]


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
    strides ``src_strides``) is copied into ``scratch`` (byte strides ``dst_strides``
    from 0, bytes swapped in groups of ``swap_unit``), then compressed with
    ``blosc_compress_ctx`` and one internal thread (the bytes of ``blosc_compress``)
    into ``out[r * slot:(r + 1) * slot]``, ``slot = nbytes + BLOSC_MAX_OVERHEAD``, where
    ``nbytes`` is the region's size: a whole chunk.  ``scratch`` holds at least one
    chunk; with room for ``g`` of them, up to ``g`` regions that follow each other
    along the source's innermost dimension (each ``shape[-1]`` items after the last, a
    row of chunks in a C-ordered array; rows of the source contiguous, chunk buffers
    dense, no swap) are gathered together, one source row of all of them after the
    other: the source is read in order, where a chunk alone reads short runs far apart.
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
    # (copies: the tables checked below are the ones the loop reads without the GIL,
    # whatever another thread does to the caller's arrays meanwhile)
    src_offsets, src_strides, dst_strides, shape = (
        np.array(src_offsets, dtype=np.int64), np.array(src_strides, dtype=np.int64),
        np.array(dst_strides, dtype=np.int64), np.array(shape, dtype=np.int64))
    cdef Gather G
    cdef int64_t nbytes = gather_setup(&G, "blosc_compress_regions", src, src_offsets,
                                       src_strides, dst_strides, shape, itemsize, swap_unit,
                                       scratch, BLOSC_MAX_BUFFERSIZE)
    cdef int64_t n = G.n, r
    cdef int64_t slot = nbytes + BLOSC_MAX_OVERHEAD
    if out.shape[0] < n * slot:
        raise ValueError(f"blosc_compress_regions: out holds {out.shape[0]} bytes, "
                         f"{n} chunks need {n * slot}")
    cdef const uint8_t[::1] fill_item
    cdef const uint8_t* f = NULL
    if fill is not None:
        fill_item = fill
        _check_fill("blosc_compress_regions", fill_item, itemsize)
        f = &fill_item[0]
    sizes_arr = np.empty(n, dtype=np.int64)
    if n == 0:
        return sizes_arr
    cdef int64_t[::1] sizes = sizes_arr
    cdef uint8_t* o = &out[0]
    cdef const char* cn = cname
    cdef int64_t got = 0, failed = 1, g, j
    cdef uint8_t* cb
    cdef _Lz4Encoder e
    cdef bint own = _lz4_encoder_open(&e, cname, clevel, typesize, nbytes, blocksize)
    with nogil:
        r = 0
        while r < n and failed > 0:
            g = gather_next(&G, r)  # (a row of chunks gathered together: _gather.pxd)
            for j in range(g):
                cb = G.scratch + j * nbytes
                if f != NULL and all_items(cb, nbytes, f, itemsize):
                    sizes[r + j] = -1
                    continue
                if own:
                    got = _lz4_encode(&e, cb, <int32_t>nbytes, clevel, shuffle,
                                      o + (r + j) * slot)
                else:
                    got = _blosc_compress(clevel, shuffle, typesize, <size_t>nbytes, cb,
                                          o + (r + j) * slot, <size_t>slot, cn, blocksize, 1)
                if got <= 0:
                    failed = got
                    break
                sizes[r + j] = got
            r += g
    _lz4_encoder_close(&e)
    if failed <= 0:
        raise RuntimeError(f"blosc_compress_regions: "
                           f"{'the LZ4 frame encoder' if own else 'c-blosc'} failed ({failed}) "
                           f"on a chunk of {nbytes} bytes with compressor {cname!r}")
    return sizes_arr


def bound():
    """The codecs whose libraries are bound (``"zstd"``, ``"blosc"``, ``"gzip"`` and
    ``"zlib"``: the latter two with an inflater chosen, ``inflate_with``)."""
    return frozenset([name for name, ok in (("zstd", _decompress != NULL),
                                            ("blosc", _blosc_decompress != NULL),
                                            ("gzip", _inflate_kind != ZF_INFLATE_NONE),
                                            ("zlib", _inflate_kind != ZF_INFLATE_NONE)) if ok])


cdef extern from "zf_inflate.h":
    ctypedef struct zf_z_stream:  # (zf_encode.h: zlib's z_stream, field for field)
        void* state
    enum:
        ZF_INFLATE_NONE
        ZF_INFLATE_LIBDEFLATE
        ZF_INFLATE_ZLIB
    ctypedef struct zf_inflate_api:
        void* alloc
        void* free
        void* gzip
        void* zlib
        void* init2
        void* inflate
        void* end
        void* reset2
        const char* version
    zf_inflate_api zf_inflate_fns
    void zf_inflater_free(void* state, int kind) noexcept nogil
    void* zf_inflater_new(int kind) noexcept nogil
    int zf_inflate_chunk(void** state, int* have, int kind, int gzip, const uint8_t* src,
                         size_t size, uint8_t* dst, size_t n) noexcept nogil


#: which library decodes gzip and zlib chunks (``ZF_INFLATE_*``): libdeflate once
#: bound, else zlib's inflate once bound, else none (the codecs decode them).  Written
#: at import and by ``set_inflate`` (tests and benchmarks, between reads), then only
#: read: each chunk reads it once, and a thread's state of the other library is let go
#: then (``zf_inflate_chunk``); both libraries stay bound for good once bound.
cdef int _inflate_kind = ZF_INFLATE_NONE
#: their names, by ``ZF_INFLATE_*``
_INFLATE_NAMES = ("none", "libdeflate", "zlib")
cdef bytes _zlib_version = b""  # (kept: zf_inflate_fns.version points into it)


def bind_libdeflate(size_t alloc, size_t free_, size_t gzip_ex, size_t zlib_ex):
    """Decode gzip and zlib chunks with the libdeflate functions at these addresses
    (``libdeflate_alloc_decompressor``, ``libdeflate_free_decompressor``,
    ``libdeflate_gzip_decompress_ex``, ``libdeflate_zlib_decompress_ex``; one
    decompressor per thread).  Chooses libdeflate (``inflate_with``).  Raises
    ``ValueError`` (binding nothing) for a null address or a library whose
    decompressor cannot be made, or when another libdeflate is bound already (the same
    one again: chosen).  Called at import; a library bound stays bound."""
    global _inflate_kind
    if not (alloc and free_ and gzip_ex and zlib_ex):
        raise ValueError("bind_libdeflate: a function address is null")
    if zf_inflate_fns.alloc != NULL:
        if (zf_inflate_fns.alloc != <void*>alloc or zf_inflate_fns.free != <void*>free_
                or zf_inflate_fns.gzip != <void*>gzip_ex
                or zf_inflate_fns.zlib != <void*>zlib_ex):
            raise ValueError("bind_libdeflate: another libdeflate is bound already")
        _inflate_kind = ZF_INFLATE_LIBDEFLATE
        return
    cdef void* d = (<void* (*)() noexcept nogil>alloc)()
    if d == NULL:
        raise ValueError("bind_libdeflate: libdeflate_alloc_decompressor failed")
    (<void (*)(void*) noexcept nogil>free_)(d)
    zf_inflate_fns.alloc = <void*>alloc
    zf_inflate_fns.free = <void*>free_
    zf_inflate_fns.gzip = <void*>gzip_ex
    zf_inflate_fns.zlib = <void*>zlib_ex
    _inflate_kind = ZF_INFLATE_LIBDEFLATE


def bind_zlib_inflate(size_t init2, size_t inflate, size_t end, size_t reset2,
                      size_t version):
    """Decode gzip and zlib chunks with zlib's inflate at these addresses
    (``inflateInit2_``, ``inflate``, ``inflateEnd``, ``inflateReset2``, ``zlibVersion``;
    one ``z_stream`` per thread), where libdeflate is not bound (``set_inflate`` chooses
    either once both are).  Returns zlib's version; raises ``ValueError`` (binding
    nothing) for a null address, a zlib that is not 1.x, one that refuses the
    ``z_stream`` of ``zf_encode.h``, or when another zlib is bound already (the same one
    again: its version).  Called at import; a library bound stays bound."""
    global _inflate_kind, _zlib_version
    if not (init2 and inflate and end and reset2 and version):
        raise ValueError("bind_zlib_inflate: a function address is null")
    if zf_inflate_fns.init2 != NULL:
        if (zf_inflate_fns.init2 != <void*>init2 or zf_inflate_fns.inflate != <void*>inflate
                or zf_inflate_fns.end != <void*>end or zf_inflate_fns.reset2 != <void*>reset2):
            raise ValueError("bind_zlib_inflate: another zlib is bound already")
        return _zlib_version.decode("ascii", "replace")
    cdef const char* v = (<const char* (*)() noexcept nogil>version)()
    if v == NULL or v[0] != c'1':
        raise ValueError(f"bind_zlib_inflate: zlib {v if v != NULL else None!r} is not 1.x")
    _zlib_version = bytes(v)
    cdef zf_z_stream strm
    memset(&strm, 0, sizeof(strm))
    if (<int (*)(zf_z_stream*, int, const char*, int) noexcept nogil>init2)(
            &strm, 31, <const char*>_zlib_version, <int>sizeof(zf_z_stream)) != 0:
        raise ValueError(f"bind_zlib_inflate: zlib {_zlib_version.decode()} refuses a "
                         f"z_stream of {sizeof(zf_z_stream)} bytes")
    (<int (*)(zf_z_stream*) noexcept nogil>end)(&strm)
    zf_inflate_fns.version = <const char*>_zlib_version
    zf_inflate_fns.init2 = <void*>init2
    zf_inflate_fns.inflate = <void*>inflate
    zf_inflate_fns.end = <void*>end
    zf_inflate_fns.reset2 = <void*>reset2
    if _inflate_kind == ZF_INFLATE_NONE:
        _inflate_kind = ZF_INFLATE_ZLIB
    return _zlib_version.decode("ascii", "replace")


def inflate_with():
    """Which library decodes gzip and zlib chunks: ``"libdeflate"``, ``"zlib"`` or
    ``"none"`` (neither is bound: they are not in ``bound()``)."""
    return _INFLATE_NAMES[_inflate_kind]


def set_inflate(str which not None):
    """Decode gzip and zlib chunks with ``which`` (``"libdeflate"``, ``"zlib"``: bound
    already), or ``"none"`` (the codecs decode them: they leave ``bound()``).  For tests
    and benchmarks: call it only while no read runs.  Returns the previous choice;
    raises ``ValueError`` for a library that is not bound."""
    global _inflate_kind
    previous = _INFLATE_NAMES[_inflate_kind]
    if which == "none":
        _inflate_kind = ZF_INFLATE_NONE
    elif which == "libdeflate" and zf_inflate_fns.alloc != NULL:
        _inflate_kind = ZF_INFLATE_LIBDEFLATE
    elif which == "zlib" and zf_inflate_fns.init2 != NULL:
        _inflate_kind = ZF_INFLATE_ZLIB
    else:
        bound_ = [n for n, ok in (("libdeflate", zf_inflate_fns.alloc != NULL),
                                  ("zlib", zf_inflate_fns.init2 != NULL)) if ok]
        raise ValueError(f"set_inflate: {which!r} is not one of 'none', "
                         f"{', '.join(repr(n) for n in bound_)} (bound here)")
    return previous


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
    _NONE = 2  # no compression: the stored bytes are the chunk
    _GZIP = 3  # one gzip member (zf_inflate.h)
    _ZLIB = 4  # one zlib stream


ctypedef struct _PlanC:
    # a Placement's tables, for code that runs without Python objects (the helper thread).
    # Row r's layout is made when its chunk is placed (``_row_layout``), not kept: a
    # table of them would take ``sizeof(Layout)`` (1.5 KiB) per row, a fresh page every
    # few rows on each call.
    int ndim
    const int64_t* shapes  # (n, ndim): each row's region
    const int64_t* src_offsets  # each row's first item in its decoded chunk
    int64_t cst[ZF_MAX_NDIM]  # decoded chunk strides (bytes)
    int64_t dstr[ZF_MAX_NDIM]  # dst strides (bytes)
    bint* skip
    uint8_t* d
    const int64_t* dst_offsets
    const uint8_t* direct
    Py_ssize_t itemsize, swap_unit
    bint stream  # (copies into dst use non-temporal stores)


cdef inline void _row_layout(const _PlanC* p, Py_ssize_t r, Layout* L) noexcept nogil:
    """The normalised layout of row ``r`` (validated when the plan was made)."""
    normalize_layout(p.ndim, p.shapes + r * p.ndim if p.ndim else NULL, p.cst, p.dstr,
                     p.src_offsets[r], p.dst_offsets[r], L)


#: the most chunks ``decode_box_files`` takes in one call
cdef int64_t _BOX_FILES_MAX = 2**16


cdef inline char* _put_int(char* q, int64_t v) noexcept nogil:
    """Write the decimal digits of ``v >= 0`` at ``q``; the end of them."""
    cdef char digits[20]
    cdef int m = 0
    while True:
        digits[m] = <char>(48 + v % 10)
        m += 1
        v //= 10
        if v == 0:
            break
    while m:
        m -= 1
        q[0] = digits[m]
        q += 1
    return q


cdef object _statuses(const int8_t* status, int64_t n):
    """``None`` when every row is ``DECODED``, else a copy of the statuses."""
    cdef int64_t r
    for r in range(n):
        if status[r] != _DECODED:
            return np.array(<int8_t[:n]>status, dtype=np.int8)
    return None


cdef int64_t _box_rows(int ndim, const int64_t* start, const int64_t* count,
                       const int64_t* cshape, const int64_t* cps, const int64_t* cstr,
                       const int64_t* dstr, bint same, Placement plan) noexcept nogil:
    """Fill ``plan``'s own tables with the rows of a validated step-1 box, in
    ``box_table``'s order (``box_fill``: the shards it touches in C order, each one's
    chunks in C order): each row's layout (decoded chunk -> dst), dst offset, direct flag
    (a whole chunk, when ``same``), shape, shard ordinal and index among its shard's
    chunks; ``own_coords`` holds the shards' coordinates (with ``cps`` all ones: each
    row's chunk).  The number of shards, or -1 when out of memory."""
    cdef int64_t first[ZF_MAX_NDIM]
    cdef int64_t last[ZF_MAX_NDIM]
    cdef int64_t sfirst[ZF_MAX_NDIM]
    cdef int64_t slast[ZF_MAX_NDIM]
    cdef int64_t nshards = 1, g, row
    cdef int d
    cdef bint whole
    for d in range(ndim):
        first[d] = start[d] // cshape[d]
        last[d] = (start[d] + count[d] - 1) // cshape[d]
        sfirst[d] = first[d] // cps[d]
        slast[d] = last[d] // cps[d]
        nshards *= slast[d] - sfirst[d] + 1  # (at most the rows: validated)
    cdef int64_t* bounds = <int64_t*>malloc((nshards + 1) * sizeof(int64_t))
    if bounds == NULL:
        return -1
    box_fill(ndim, start, count, cshape, cps, cstr, dstr, first, last, sfirst, slast,
             nshards, plan.own_coords, bounds, plan.own_inner, plan.own_src,
             plan.own_offsets, plan.own_shapes)
    for d in range(ndim):
        plan.c.cst[d] = cstr[d]
        plan.c.dstr[d] = dstr[d]
    for g in range(nshards):
        for row in range(bounds[g], bounds[g + 1]):
            plan.own_shard[row] = g
            whole = same
            for d in range(ndim):
                whole = whole and plan.own_shapes[row * ndim + d] == cshape[d]
            plan.own_direct[row] = whole
            plan.skip[row] = False
    free(bounds)
    return nshards


cdef class ChunkDecoder:
    """A decompression context and a scratch buffer for chunks of one codec and
    size.  Not thread-safe: use one per thread.

    ``codec``: a bound codec (``bound()``: ``"zstd"``, ``"blosc"``, ``"gzip"``,
    ``"zlib"``), or ``"none"``: the stored bytes are the chunk (it must have exactly
    ``nbytes`` of them) and are placed from where they were read."""

    cdef zf_worker w  # (its buffers: malloc/realloc, grown inside nogil loops)
    cdef int codec
    cdef readonly int64_t nbytes

    def __cinit__(self, str codec not None, int64_t nbytes):
        if codec != "none" and codec not in bound():
            raise ValueError(f"ChunkDecoder: codec {codec!r} is not bound")
        if nbytes < 0:
            raise ValueError(f"ChunkDecoder: nbytes {nbytes} is negative")
        self.nbytes = nbytes
        self.codec = {"zstd": _ZSTD, "blosc": _BLOSC, "gzip": _GZIP, "zlib": _ZLIB}.get(
            codec, _NONE)
        if not _worker_ready(&self.w, self.codec, nbytes):
            raise MemoryError()

    def __dealloc__(self):
        _worker_release(&self.w)

    cdef int _check_placement(self, str func, Placement placement, Py_ssize_t n) except -1:
        """``placement`` is of this decoder's chunks and has ``n`` rows."""
        if placement.nbytes != self.nbytes:
            raise ValueError(f"{func}: a placement of {placement.nbytes}-byte chunks, "
                             f"the decoder's are {self.nbytes} bytes")
        if placement.n != n:
            raise ValueError(f"{func}: a placement of {placement.n} rows for {n} chunks")
        return 0

    def decode_regions(self, const uint8_t[::1] src not None,
                       const int64_t[::1] src_offsets not None,
                       const int64_t[::1] src_sizes not None,
                       Placement placement not None, int share=0):
        """Decode chunk ``r`` (``src[src_offsets[r]:][:src_sizes[r]]``, which must
        decode to exactly ``nbytes`` bytes) and place it as row ``r`` of ``placement``
        says (a ``Placement`` of this decoder's ``nbytes``).

        With ``share`` (``True``: 1) the rows are shared with up to that many helper
        threads (``zf_helper.h``) when they are free: with one, the call takes about
        half as long for a few chunks that each decode for tens of microseconds; the
        result is the same.

        Returns an int8 array of statuses: ``DECODED``; ``NO_DATA`` (a negative
        size: nothing done); ``FAILED`` (does not decode to ``nbytes`` bytes:
        ``dst`` is untouched, except a direct row's own block).

        Raises ``ValueError`` when lengths differ, a range lies outside ``src`` or the
        placement is of chunks of another size.
        """
        cdef Py_ssize_t n = placement.n, r
        if src_offsets.shape[0] != n or src_sizes.shape[0] != n:
            raise ValueError(
                f"decode_regions: {n} rows but {src_offsets.shape[0]} src_offsets and "
                f"{src_sizes.shape[0]} src_sizes"
            )
        self._check_placement("decode_regions", placement, n)
        for r in range(n):
            if src_sizes[r] >= 0 and (src_offsets[r] < 0
                                      or src_offsets[r] > src.shape[0] - src_sizes[r]):
                raise ValueError(
                    f"decode_regions: bytes [{src_offsets[r]}, {src_offsets[r] + src_sizes[r]})"
                    f" lie outside src's {src.shape[0]} bytes (chunk {r})"
                )
        status_arr = np.empty(n, dtype=np.int8)
        cdef int8_t[::1] status = status_arr
        for r in range(n):
            status[r] = _NO_DATA if src_sizes[r] < 0 else _DECODED
        cdef _RowsJob job
        _job_init(&job, self, placement, &status[0] if n else NULL, n)
        job.src = &src[0] if src.shape[0] else NULL
        job.src_offsets = &src_offsets[0] if n else NULL
        job.src_sizes = &src_sizes[0] if n else NULL
        with nogil:
            _job_run_shared(&job, &self.w, share)
        return status_arr

    def decode_ranges(self, const int64_t[::1] fds not None,
                      const int64_t[::1] offsets not None,
                      const int64_t[::1] sizes not None,
                      Placement placement not None, int share=0):
        """``decode_regions`` for chunks read from open files: chunk ``r`` is bytes
        ``offsets[r]:offsets[r] + sizes[r]`` of the open file descriptor ``fds[r]``
        (read with ``pread`` into this decoder's own buffer in the same ``nogil``
        loop; the caller keeps the files open until the call returns).  A negative
        size: ``NO_DATA``, nothing done.  ``share`` as ``decode_regions``.

        Returns ``(status, errors)``: statuses as ``decode_regions`` gives them
        (``FAILED`` also when the range cannot be read) and the ``errno`` of a
        failed read (``EIO``: the file ends before the range does; 0 otherwise).

        Raises ``ValueError`` when lengths differ, a range is negative or larger
        than ``2 * nbytes + 64 KiB``, or the placement is of chunks of another size.
        """
        cdef Py_ssize_t n = placement.n, r
        cdef int64_t limit = 2 * self.nbytes + 65536
        if fds.shape[0] != n or offsets.shape[0] != n or sizes.shape[0] != n:
            raise ValueError(
                f"decode_ranges: {n} rows but {fds.shape[0]} fds, {offsets.shape[0]} "
                f"offsets and {sizes.shape[0]} sizes")
        self._check_placement("decode_ranges", placement, n)
        for r in range(n):
            if sizes[r] >= 0 and (offsets[r] < 0 or sizes[r] > limit or fds[r] < 0
                                  or fds[r] > 2**31 - 1):
                raise ValueError(
                    f"decode_ranges: bytes [{offsets[r]}, {offsets[r] + sizes[r]}) of file "
                    f"descriptor {fds[r]} (chunk {r}): not a range of at most {limit} "
                    f"bytes of an open file")
        status_arr = np.empty(n, dtype=np.int8)
        errors_arr = np.zeros(n, dtype=np.int64)
        cdef int8_t[::1] status = status_arr
        cdef int64_t[::1] errs = errors_arr
        for r in range(n):
            status[r] = _NO_DATA if sizes[r] < 0 else _DECODED
        cdef _RowsJob job
        _job_init(&job, self, placement, &status[0] if n else NULL, n)
        job.fds = &fds[0] if n else NULL
        job.src_offsets = &offsets[0] if n else NULL
        job.src_sizes = &sizes[0] if n else NULL
        job.errs = &errs[0] if n else NULL
        with nogil:
            _job_run_shared(&job, &self.w, share)
        return status_arr, errors_arr

    def decode_files(self, list paths not None, Placement placement not None, root=None,
                     int share=0, root_of=None):
        """``decode_regions`` for chunks stored one per file: chunk ``r`` is the
        whole file ``paths[r]`` (``bytes``, file-system encoded), read into this
        decoder's own buffer (open, fstat, pread, close) in the same ``nogil`` loop.
        With ``root`` (``bytes``) the paths are relative to that directory and are
        opened without following symbolic links (``FAILED`` with ``ELOOP`` for a
        path through one: the caller decides).  ``share`` as ``decode_regions``.
        When the first file's bytes are not in the page cache, the files after it are
        announced to the kernel (``POSIX_FADV_WILLNEED``), about 16 MiB of them ahead
        of the rows the threads take, as they go: the disk reads them while the
        threads decode (``cold_announcements``).

        With ``root_of`` (an int64 array, one entry per row), ``root`` is a list of
        roots (``bytes``) and path ``r`` is relative to ``root[root_of[r]]``: the
        chunks of arrays of several stores in one call (each root opened once;
        ``share`` < 0 is then 0: the I/O helper reads from one root).

        Returns ``(status, sizes, errors)``: statuses as ``decode_regions`` gives
        them (``NO_DATA``: the file does not exist, or is not a regular file;
        ``FAILED``: it could not be read, or is larger than ``2 * nbytes + 64 KiB``
        -- with codec ``"none"``, for a direct row, larger than ``nbytes``: that row's
        file is read straight into its place -- or does not decode), the files' sizes
        (``-1``: unknown) and the ``errno`` of a failed read (``EFBIG``: too large; 0
        otherwise).

        Raises ``ValueError``/``TypeError`` like ``decode_regions`` and for a path
        that is not ``bytes`` or contains a NUL byte, a ``root_of`` that is not one
        root per row (before reading any file); ``OSError`` for a root that cannot be
        opened (one that does not exist: its rows are ``NO_DATA``).
        """
        cdef Py_ssize_t n = placement.n, r
        paths = list(paths)  # our own list: the loop keeps pointers into its bytes
        if len(paths) != n:
            raise ValueError(f"decode_files: {n} rows but {len(paths)} paths")
        self._check_placement("decode_files", placement, n)
        cdef object p
        for r in range(n):
            p = paths[r]
            if not isinstance(p, bytes):
                raise TypeError(
                    f"decode_files: path {r} is {type(p).__name__}, expected bytes")
            if strlen(PyBytes_AS_STRING(p)) != <size_t>PyBytes_GET_SIZE(p):
                raise ValueError(f"decode_files: path {p!r} contains a NUL byte")
        if root_of is not None:
            return self._decode_files_roots(paths, placement, root, share, root_of)
        status_arr = np.empty(n, dtype=np.int8)
        sizes_arr = np.empty(n, dtype=np.int64)
        errors_arr = np.zeros(n, dtype=np.int64)
        cdef int8_t[::1] status = status_arr
        cdef int64_t[::1] sizes = sizes_arr
        cdef int64_t[::1] errs = errors_arr
        for r in range(n):
            status[r] = _DECODED
            sizes[r] = -1
        cdef const char** cpaths = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
        if cpaths == NULL:
            raise MemoryError()
        for r in range(n):
            cpaths[r] = PyBytes_AS_STRING(paths[r])  # `paths` keeps the bytes alive
        cdef _RowsJob job
        _job_init(&job, self, placement, &status[0] if n else NULL, n)
        job.files = True
        job.cpaths = cpaths
        job.limit = 2 * self.nbytes + 65536
        job.sizes = &sizes[0] if n else NULL
        job.errs = &errs[0] if n else NULL
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
            job.rootfd = rootfd
            with nogil:
                _job_run_shared(&job, &self.w, share)
                if rootfd >= 0:
                    close(rootfd)
                    rootfd = -1
        finally:
            PyMem_Free(cpaths)
            if rootfd >= 0:
                close(rootfd)
        return status_arr, sizes_arr, errors_arr

    def _decode_files_roots(self, list paths, Placement placement, root, int share,
                            root_of):
        """``decode_files`` with ``root_of``: path ``r`` relative to
        ``root[root_of[r]]`` (``paths`` checked by ``decode_files``)."""
        cdef Py_ssize_t n = placement.n, r, k
        if not isinstance(root, (list, tuple)):
            raise TypeError(f"decode_files: with root_of, root must be a list of bytes, "
                            f"got {type(root).__name__}")
        roots = list(root)
        cdef Py_ssize_t m = len(roots)
        for k in range(m):
            if not isinstance(roots[k], bytes) or b"\0" in roots[k]:
                raise TypeError(f"decode_files: root {k} must be bytes without NUL, got "
                                f"{roots[k]!r}")
        cdef const int64_t[::1] which = np.ascontiguousarray(root_of, dtype=np.int64)
        if which.shape[0] != n:
            raise ValueError(f"decode_files: {n} rows but {which.shape[0]} root_of entries")
        for r in range(n):
            if which[r] < 0 or which[r] >= m:
                raise ValueError(f"decode_files: root_of[{r}] is {which[r]}, not one of the "
                                 f"{m} roots")
        status_arr = np.empty(n, dtype=np.int8)
        sizes_arr = np.empty(n, dtype=np.int64)
        errors_arr = np.zeros(n, dtype=np.int64)
        cdef int8_t[::1] status = status_arr
        cdef int64_t[::1] sizes = sizes_arr
        cdef int64_t[::1] errs = errors_arr
        for r in range(n):
            status[r] = _DECODED
            sizes[r] = -1
        cdef const char** cpaths = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
        cdef int* fds = <int*>PyMem_Malloc(max(m, 1) * sizeof(int))
        cdef int* rowfds = <int*>PyMem_Malloc(max(n, 1) * sizeof(int))
        cdef int err = 0
        cdef const char* croot
        cdef _RowsJob job
        try:
            if cpaths == NULL or fds == NULL or rowfds == NULL:
                raise MemoryError()
            for k in range(m):
                fds[k] = -2
            for k in range(m):
                croot = PyBytes_AS_STRING(roots[k])  # (`roots` keeps the bytes alive)
                with nogil:
                    fds[k] = zf_open_root(croot)
                    err = errno
                if fds[k] == -1:
                    raise OSError(err, os.strerror(err), os.fsdecode(roots[k]))
            for r in range(n):
                cpaths[r] = PyBytes_AS_STRING(paths[r])  # `paths` keeps the bytes alive
                rowfds[r] = fds[which[r]]
            _job_init(&job, self, placement, &status[0] if n else NULL, n)
            job.files = True
            job.cpaths = cpaths
            job.rootfds = rowfds
            job.limit = 2 * self.nbytes + 65536
            job.sizes = &sizes[0] if n else NULL
            job.errs = &errs[0] if n else NULL
            with nogil:
                _job_run_shared(&job, &self.w, share if share > 0 else 0)
        finally:
            if fds != NULL:
                for k in range(m):
                    if fds[k] >= 0:
                        close(fds[k])
            PyMem_Free(cpaths)
            PyMem_Free(fds)
            PyMem_Free(rowfds)
        return status_arr, sizes_arr, errors_arr

    cdef int _check_box(self, str func, Placement placement, bint plain) except -1:
        """``placement`` is a box's (``Placement.box``; ``plain``: every chunk its own
        shard) of this decoder's chunks."""
        if placement.nshards == 0 or (plain and placement.n_inner != 1):
            raise ValueError(f"{func}: the placement is not a box's (Placement.box"
                             f"{'' if plain else ' with cps'})")
        if placement.nbytes != self.nbytes:
            raise ValueError(f"{func}: a placement of {placement.nbytes}-byte chunks, "
                             f"the decoder's are {self.nbytes} bytes")
        return 0

    def decode_box_files(self, bytes root not None, bytes prefix not None,
                         bytes separator not None, Placement placement not None,
                         int share=0):
        """A step-1 box of an array whose chunks are files, read in one call: the
        chunks' paths and ``decode_files`` without a Python object per chunk.

        ``placement`` is the box's (``Placement.box`` without ``cps``: every chunk its
        own shard).  Chunk ``coords`` is the file ``prefix + separator.join(str(c) for c
        in coords)`` under the directory ``root``, opened as ``decode_files`` opens them.

        Returns ``None`` when every chunk was placed; else the ``decode_files``
        status of each chunk, in ``box_table``'s order (C order of the chunks):
        nothing is written for a chunk that is not ``DECODED``.

        Raises ``ValueError`` for a placement that is not such a box's, or of chunks of
        another size, or a NUL byte in ``root``, ``prefix`` or ``separator``;
        ``OSError`` when ``root`` cannot be opened.
        """
        if b"\0" in root or b"\0" in prefix or b"\0" in separator:
            raise ValueError(f"decode_box_files: root {root!r}, prefix {prefix!r} or "
                             f"separator {separator!r} contains a NUL byte")
        self._check_box("decode_box_files", placement, True)
        cdef Placement plan = placement
        cdef Py_ssize_t ndim = plan.ndim, d
        cdef int64_t n = plan.n, r
        # each row's path: the prefix, then up to 20 digits and a separator per dim
        cdef Py_ssize_t plen = len(prefix), slen = len(separator)
        cdef Py_ssize_t rowcap = plen + ndim * (20 + slen) + 1
        cdef char* text = <char*>PyMem_Malloc(n * rowcap)
        cdef const char** cpaths = <const char**>PyMem_Malloc(n * sizeof(char*))
        cdef int8_t* status = <int8_t*>PyMem_Malloc(n * sizeof(int8_t))
        cdef int64_t* sizes = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef int64_t* errs = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef const char* cprefix = prefix
        cdef const char* csep = separator
        cdef const char* croot = root
        cdef char* q
        cdef int rootfd = -1, err = 0
        cdef _RowsJob job
        try:
            if text == NULL or cpaths == NULL or status == NULL or sizes == NULL or errs == NULL:
                raise MemoryError()
            with nogil:
                for r in range(n):
                    q = text + r * rowcap
                    memcpy(q, cprefix, plen)
                    q += plen
                    for d in range(ndim):
                        if d:
                            memcpy(q, csep, slen)
                            q += slen
                        q = _put_int(q, plan.own_coords[r * ndim + d])
                    q[0] = 0
                    cpaths[r] = text + r * rowcap
                    status[r] = _DECODED
                    sizes[r] = -1
                    errs[r] = 0
                rootfd = zf_open_root(croot)
                err = errno
            if rootfd == -1:
                raise OSError(err, os.strerror(err), os.fsdecode(root))
            _job_init(&job, self, plan, status, <Py_ssize_t>n)
            job.files = True
            job.cpaths = cpaths
            job.rootfd = rootfd
            job.limit = 2 * self.nbytes + 65536
            job.sizes = sizes
            job.errs = errs
            with nogil:
                _job_run_shared(&job, &self.w, share)
            return _statuses(status, n)
        finally:
            if rootfd >= 0:
                close(rootfd)
            PyMem_Free(text)
            PyMem_Free(cpaths)
            PyMem_Free(status)
            PyMem_Free(sizes)
            PyMem_Free(errs)

    def decode_box_shards(self, const int64_t[::1] fds not None, list indexes not None,
                          Placement placement not None, const uint8_t[::1] fill not None,
                          int64_t limit, int share=0):
        """A step-1 box of a sharded array whose shards are open files, read in one
        call: per inner chunk a ``pread``, decoding and placing as ``decode_ranges``
        does them, without a Python object per chunk.

        ``placement`` is the box's (``Placement.box`` with ``cps``: inner chunks of
        ``chunk_shape``, ``cps`` of them per shard and dim).  Shard ``g`` (of those the
        box touches, in C order: ``box_table``'s ``shards``) is the open file ``fds[g]``
        with the decoded index ``indexes[g]`` (a C-contiguous ``(prod(cps), 2)`` uint64
        array of ``(offset, nbytes)`` per inner chunk, in C order); ``fds[g] < 0`` or
        ``indexes[g] is None``: no shard.  An inner chunk of no shard, or whose entry's
        offset is ``2**64 - 1`` (empty), is filled with ``fill`` (one item as placed).

        Returns ``None`` when every inner chunk was placed or filled; else each row's
        status (``box_table``'s order): ``FAILED`` for an entry of more than ``limit``
        bytes (or more than the decoder reads at once, ``2 * nbytes + 64 KiB``), past
        the end of its file, or that does not decode -- the caller reads the box again
        its own way, which says what is wrong (other rows may have been placed).

        Raises ``ValueError`` for a placement that is not a box's or is of chunks of
        another size, ``fds`` and ``indexes`` that are not one per shard, an index of
        the wrong shape or a ``fill`` that is not one item; ``TypeError`` for an index
        that is not a uint64 buffer.
        """
        self._check_box("decode_box_shards", placement, False)
        cdef Placement plan = placement
        cdef Py_ssize_t ndim = plan.ndim, d, m = plan.nshards
        cdef Py_ssize_t itemsize = plan.itemsize
        if fill.shape[0] != itemsize:
            raise ValueError(f"decode_box_shards: fill is {fill.shape[0]} bytes, an item "
                             f"{itemsize}")
        cdef int64_t n = plan.n, r, n_inner = plan.n_inner, g
        if fds.shape[0] != m or len(indexes) != m:
            raise ValueError(f"decode_box_shards: the box touches {m} shards, but "
                             f"{fds.shape[0]} fds and {len(indexes)} indexes are given")
        cdef const uint64_t** ix = <const uint64_t**>PyMem_Malloc(m * sizeof(uint64_t*))
        cdef int8_t* status = <int8_t*>PyMem_Malloc(n * sizeof(int8_t))
        cdef int64_t* rfds = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef int64_t* offs = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef int64_t* sizes = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef int64_t* errs = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        cdef const uint64_t[:, ::1] view
        cdef list held = []  # (the indexes' buffers, held while the loop reads them)
        cdef const uint64_t* e
        cdef const uint8_t* f = &fill[0]
        cdef int64_t cap = min(limit, 2 * self.nbytes + 65536)
        cdef int64_t zeros[ZF_MAX_NDIM]
        cdef Layout L
        cdef _RowsJob job
        try:
            if (ix == NULL or status == NULL or rfds == NULL or offs == NULL or sizes == NULL
                    or errs == NULL):
                raise MemoryError()
            for g in range(m):
                ix[g] = NULL
                if fds[g] > INT_MAX:
                    raise ValueError(f"decode_box_shards: file descriptor {fds[g]} (shard {g}) "
                                     f"is not one")
                if indexes[g] is None or fds[g] < 0:
                    continue
                if getattr(indexes[g], "dtype", None) != np.uint64:
                    raise TypeError(f"decode_box_shards: index {g} is not a uint64 array")
                view = indexes[g]
                if view.shape[0] != n_inner or view.shape[1] != 2:
                    raise ValueError(f"decode_box_shards: index {g} has shape "
                                     f"({view.shape[0]}, {view.shape[1]}), expected "
                                     f"({n_inner}, 2)")
                held.append(view)
                ix[g] = &view[0, 0]
            with nogil:
                for d in range(ndim):
                    zeros[d] = 0
                for r in range(n):
                    status[r] = _DECODED
                    errs[r] = 0
                    # (a row not read announces nothing: zf_will_need_ranges skips a
                    # size of 0; these were left uninitialised for the fill-value and
                    # failed rows, so a cold read's announcement passed posix_fadvise
                    # whatever the allocation held)
                    rfds[r] = -1
                    offs[r] = 0
                    sizes[r] = 0
                    g = plan.own_shard[r]
                    e = ix[g] + 2 * plan.own_inner[r] if ix[g] != NULL else NULL
                    if e == NULL or e[0] == UINT64_MAX:
                        # no shard, or an empty inner chunk: the fill value
                        normalize_layout(<int>ndim, &plan.own_shapes[r * ndim], zeros,
                                         plan.c.dstr, 0, plan.own_offsets[r], &L)
                        strided_fill(plan.c.d, &L, f, itemsize)
                        status[r] = _NO_DATA
                    elif (cap < 0 or e[1] > <uint64_t>cap
                          or e[0] > <uint64_t>INT64_MAX):
                        status[r] = _FAILED  # (not placed: _job_row skips it)
                    else:
                        rfds[r] = fds[g]
                        offs[r] = <int64_t>e[0]
                        sizes[r] = <int64_t>e[1]
            _job_init(&job, self, plan, status, <Py_ssize_t>n)
            job.fds = rfds
            job.src_offsets = offs
            job.src_sizes = sizes
            job.errs = errs
            with nogil:
                _job_run_shared(&job, &self.w, share)
            for r in range(n):
                if status[r] == _FAILED:
                    return np.array(<int8_t[:n]>status, dtype=np.int8)
            return None
        finally:
            PyMem_Free(ix)
            PyMem_Free(status)
            PyMem_Free(rfds)
            PyMem_Free(offs)
            PyMem_Free(sizes)
            PyMem_Free(errs)

    cdef bint _place(self, Placement plan, Py_ssize_t r, const uint8_t* frame,
                     size_t size) noexcept nogil:
        """Decode one chunk and place it as ``plan`` says for row ``r``."""
        return _place_with(&self.w, self.codec, self.nbytes, &plan.c, r, frame, size)


cdef bint _worker_ready(zf_worker* w, int codec, int64_t nbytes) noexcept nogil:
    """Give ``w`` a zstd context (for ``codec`` zstd) and a scratch buffer of at least
    ``nbytes`` bytes (none for ``"none"``: its chunks are placed from where they were
    read); False when out of memory (``w`` stays valid)."""
    cdef uint8_t* grown
    if codec == _ZSTD and w.dctx == NULL:
        w.dctx = _create()
        if w.dctx == NULL:
            return False
    if codec != _NONE and w.scratch_cap < max(nbytes, 1):
        grown = <uint8_t*>realloc(w.scratch, <size_t>max(nbytes, 1))
        if grown == NULL:
            return False
        w.scratch = grown
        w.scratch_cap = max(nbytes, 1)
    return True


cdef void _worker_release(zf_worker* w) noexcept nogil:
    if w.dctx != NULL and _free != NULL:
        _free(w.dctx)
    w.dctx = NULL
    zf_inflater_free(w.inflater, w.inflater_kind)
    w.inflater = NULL
    w.inflater_kind = ZF_INFLATE_NONE
    free(w.scratch)
    free(w.filebuf)
    free(w.blocks)
    w.scratch = w.filebuf = w.blocks = NULL
    w.scratch_cap = w.filecap = w.blocks_cap = 0


cdef inline int64_t _le32(const uint8_t* p) noexcept nogil:
    return <int64_t>(p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16)
                     | (<uint32_t>p[3] << 24))


cdef bint _blosc_part(const uint8_t* frame, int64_t nbytes, int64_t lo, int64_t hi,
                      uint8_t* target) noexcept nogil:
    """Decode, of a validated blosc chunk of ``nbytes`` bytes, only the blocks that hold
    its bytes ``[lo, hi)``, into the same bytes of ``target`` (those of whole items of
    the header's typesize around them; nothing else of ``target`` is written).  False
    when that would decode every block, or c-blosc refused (the caller then decodes the
    chunk whole, which says whether it is one).

    ``blosc_getitem`` checks less than ``blosc_decompress_ctx``, so a header it would
    take and the whole decode refuses is left to the whole decode: flag 0x08
    ("compressor flags from the future"), and a block size that is not a whole number of
    items (a block split into one stream per byte of an item then decodes short, which
    ``blosc_getitem`` does not notice: the rest would be whatever its buffer held)."""
    cdef int64_t ts = frame[3], bs = _le32(frame + 8), start, stop, nblocks
    if (_blosc_getitem == NULL or ts <= 0 or bs <= 0 or bs % ts != 0 or frame[2] & 0x08
            or lo < 0 or hi <= lo):
        return False
    start = lo // ts
    stop = (hi + ts - 1) // ts
    nblocks = (nbytes + bs - 1) // bs
    if stop * ts > nbytes or (stop * ts - 1) // bs - start * ts // bs + 1 >= nblocks:
        return False
    return _blosc_getitem(frame, <int>start, <int>(stop - start),
                          target + start * ts) == (stop - start) * ts


cdef extern from "zf_shuffle.h":
    int zf_shuffle_isa() noexcept nogil
    void zf_unshuffle(const uint8_t* const* planes, const uint8_t* rest, uint8_t* dst,
                      size_t blocksize, size_t ts, int isa) noexcept nogil
    void zf_bitunshuffle(const uint8_t* const* rows, const uint8_t* rest, uint8_t* dst,
                         uint8_t* tmp, size_t blocksize, size_t ts, int isa) noexcept nogil
    void zf_plane_starts(const uint8_t* block, size_t blocksize, size_t ts,
                         const uint8_t** starts) noexcept nogil


cdef extern from "zf_codecs.h":
    int zf_linked_lz4() noexcept nogil
    int zf_lz4_decompress(const char* src, char* dst, int size, int capacity) noexcept nogil


cdef enum:
    _BLOSC_LZ4 = 1   # the compressor codes of a blosc1 header's flags (bits 5-7)
    _BLOSC_ZSTD = 4
    _BLOSC_MAX_BLOCKSIZE = (INT_MAX - 255 * 4) // 3
    _BLOSC_MIN_SPLIT = 128   # a block is split into one stream per byte of an item
    _BLOSC_MAX_SPLITS = 16   # (c-blosc's MIN_BUFFERSIZE, MAX_SPLITS)

#: the best instruction set this CPU runs the shuffle kernels with (ZF_ISA_*)
cdef int _CPU_ISA = zf_shuffle_isa()
#: what "auto" is: AVX2 where the CPU has it; elsewhere c-blosc, whose SSE2 / NEON
#: kernels beat the scalar ones (395 us per 512 KiB bit-shuffled LZ4 chunk here, against
#: 160-194 us for c-blosc and 76 us with AVX2)
cdef int _AUTO_ISA = _CPU_ISA if _CPU_ISA >= 1 else -1
#: the instruction set the shuffle filters are undone with, or -1: c-blosc decodes
#: every blosc frame.  Written at import and by ``set_blosc_frames`` (tests and
#: benchmarks, between reads), then only read.
cdef int _frames_isa = _AUTO_ISA
_ISA_NAMES = ("scalar", "avx2")
#: whether the LZ4 linked at build time decodes LZ4 blocks (``use_linked_lz4``)
cdef bint _lz4_used = True

ctypedef int (*_lz4_decompress_fn)(const char*, char*, int, int) noexcept nogil
#: ``LZ4_decompress_safe`` of the c-blosc bound with ctypes (numcodecs' copy exports
#: it; ``bind_lz4_decompress``): LZ4 blocks where no LZ4 is linked (or it is unused),
#: so that both builds undo the same frames.  Written at import, then only read.
cdef _lz4_decompress_fn _lz4_found = NULL


def use_linked_lz4(bint use):
    """Let the LZ4 linked at build time decode the LZ4 blocks of blosc frames, or not
    (``ZARRFAST_LINKED_CODECS=0``: those frames then take the LZ4 bound by
    ``bind_lz4_decompress``, else go to c-blosc).  Called at import (by
    ``zarrfast.kernels``), before any read; a frame being decoded meanwhile keeps the
    function it started with."""
    global _lz4_used
    _lz4_used = use


def linked_lz4():
    """The version number of the LZ4 linked at build time, or ``None``."""
    cdef int v = zf_linked_lz4()
    return v if v != 0 else None


def bind_lz4_decompress(size_t decompress_safe):
    """Undo the LZ4 blocks of blosc frames with the ``LZ4_decompress_safe`` at this
    address (that of the c-blosc bound with ctypes, numcodecs' copy), where no LZ4 was
    linked at build time or it is unused: a build without the codec libraries then
    decodes the same frames as a linked one.  0 unbinds it: later frames of LZ4 blocks
    go to c-blosc.  Called at import; safe while frames are decoded in other threads
    (each frame takes the function once, ``_lz4_function``, and keeps it to its end),
    so the function at the address given must stay loaded for good (a library loaded
    with ctypes is never unloaded)."""
    global _lz4_found
    _lz4_found = <_lz4_decompress_fn>decompress_safe


cdef inline _lz4_decompress_fn _lz4_function() noexcept nogil:
    """The ``LZ4_decompress_safe`` a frame uses for all its streams, read once when it
    starts: the linked one (``use_linked_lz4``), else the one bound, else NULL (the frame
    goes to c-blosc).  Read once, not per stream: ``bind_lz4_decompress(0)`` or
    ``use_linked_lz4(False)`` in another thread meanwhile made a frame call a NULL
    function halfway."""
    if _lz4_used and zf_linked_lz4() != 0:
        return zf_lz4_decompress
    return _lz4_found


cdef int64_t _blosc_frame(zf_worker* w, const uint8_t* frame, uint8_t* target,
                          int64_t nbytes, int64_t lo, int64_t hi) noexcept nogil:
    """Decode a blosc1 frame (``_blosc_validate`` took it, for ``nbytes`` bytes) whose
    blocks are LZ4 or zstd streams, shuffled, bit-shuffled or neither, into ``target``:
    ``nbytes``, or -1 when the frame is left to c-blosc.  That is any other frame
    (other compressors, copied whole, from another format version) and anything c-blosc
    would refuse (it then says so); so the bytes and the verdicts are c-blosc's.  What
    it does per block is ``blosc_d`` of c-blosc 1.x: streams decoded one after another
    into a block of ``w.blocks``, then the filter undone into ``target``.  A stream
    stored as it is is not copied first: the filter reads it from the frame (a block
    split into one stream per byte of an item has its planes there, one per stream).

    Only the blocks that hold bytes ``[lo, hi)`` are decoded (as ``_blosc_part`` does;
    a damaged block elsewhere is then not seen); the rest of ``target`` is not
    written."""
    cdef int flags = frame[2], ts = frame[3], compcode = frame[2] >> 5
    cdef int64_t total = _le32(frame + 4), bs = _le32(frame + 8), cbytes = _le32(frame + 12)
    cdef int64_t nblocks, b, bsize, off, cb, neblock, nsplits, s, need
    cdef uint8_t* grown
    cdef uint8_t* out
    cdef uint8_t* dest
    cdef const uint8_t* starts[256]
    cdef const uint8_t* rest
    cdef bint shuffle = (flags & 0x01) and ts > 1, bitshuffle, filtered
    cdef int got
    cdef size_t zgot
    cdef _lz4_decompress_fn lz4 = NULL  # (chosen once for the whole frame)
    # (format version 2; its LZ4 and zstd streams are both of version 1)
    if (_frames_isa < 0 or frame[0] != 2 or frame[1] != 1 or flags & 0x0A or ts == 0
            or total != nbytes
            or total <= 0 or bs <= 0 or bs > total or bs > _BLOSC_MAX_BLOCKSIZE
            or cbytes < 16 or lo < 0 or hi <= lo or hi > nbytes):
        return -1
    if compcode == _BLOSC_LZ4:
        lz4 = _lz4_function()
        if lz4 == NULL:
            return -1
    elif compcode == _BLOSC_ZSTD:
        if _decompress == NULL:
            return -1
        if w.dctx == NULL:
            w.dctx = _create()
            if w.dctx == NULL:
                return -1
    else:
        return -1
    nblocks = (total + bs - 1) // bs
    if nblocks > (cbytes - 16) // 4:
        return -1
    # the decoded streams of a filtered block, and the bit-shuffle's byte planes
    need = 0 if not (shuffle or flags & 0x04) else bs if shuffle or ts == 1 else 2 * bs
    if w.blocks_cap < need:
        grown = <uint8_t*>realloc(w.blocks, <size_t>need)
        if grown == NULL:
            return -1
        w.blocks = grown
        w.blocks_cap = need
    for b in range(lo // bs, (hi - 1) // bs + 1):
        bsize = min(bs, total - b * bs)
        out = target + b * bs
        bitshuffle = not shuffle and (flags & 0x04) and bsize >= ts
        filtered = shuffle or bitshuffle
        dest = w.blocks if filtered else out
        nsplits = 1
        if (not flags & 0x10 and ts <= _BLOSC_MAX_SPLITS and bsize // ts >= _BLOSC_MIN_SPLIT
                and bsize == bs):
            nsplits = ts
        neblock = bsize // nsplits
        if neblock * nsplits != bsize:
            return -1
        off = _le32(frame + 16 + 4 * b)
        if off > INT_MAX:
            return -1  # (c-blosc reads the start as a signed int32)
        for s in range(nsplits):
            if off > cbytes - 4:
                return -1
            cb = _le32(frame + off)
            off += 4
            if cb > INT_MAX or cb > cbytes - off:
                return -1
            if cb == neblock:
                if filtered:  # (read from the frame by the filter)
                    starts[s] = frame + off
                else:
                    memcpy(dest, frame + off, <size_t>neblock)
            elif compcode == _BLOSC_LZ4:
                got = lz4(<const char*>(frame + off), <char*>dest, <int>cb, <int>neblock)
                if got != neblock:
                    return -1
            else:
                zgot = _decompress(w.dctx, dest, <size_t>neblock, frame + off, <size_t>cb)
                if _is_error(zgot) or zgot != <size_t>neblock:
                    return -1
            if cb != neblock:
                starts[s] = dest
            off += cb
            dest += neblock
        if not filtered:
            continue
        if nsplits == 1:  # the planes (or each byte's rows) one after another, then the rest
            rest = starts[0] + (bsize // ts) * ts
            zf_plane_starts(starts[0], <size_t>bsize, <size_t>ts, starts)
        else:  # one per stream (bsize is nsplits * neblock: nothing after them)
            rest = starts[0]
        if shuffle:
            zf_unshuffle(starts, rest, out, <size_t>bsize, <size_t>ts, _frames_isa)
        else:
            zf_bitunshuffle(starts, rest, out, w.blocks + bs, <size_t>bsize, <size_t>ts,
                            _frames_isa)
    return nbytes


def blosc_frames():
    """How blosc frames are decoded: ``"zarrfast (<isa>): lz4, zstd"`` naming the
    compressors whose frames zarrfast undoes itself (the rest, and all when it is
    ``"c-blosc"``, go to c-blosc)."""
    names = [n for n, ok in (("lz4", _lz4_function() != NULL), ("zstd", _decompress != NULL))
             if ok]
    if _frames_isa < 0 or not names:
        return "c-blosc"
    return f"zarrfast ({_ISA_NAMES[_frames_isa]}): {', '.join(names)}"


def set_blosc_frames(str isa not None):
    """Decode blosc frames with ``isa`` (``"avx2"``, ``"scalar"``), and make frames of
    LZ4 streams with it (``blosc_encoder``), or leave every one to c-blosc
    (``"c-blosc"``); ``"auto"`` is AVX2 where the CPU has it, else c-blosc (faster than
    the scalar kernels: 910 us to compress a 512 KiB bit-shuffled chunk here, against
    490 us for c-blosc and 410 us with AVX2).  For tests and
    benchmarks: call it only while no read runs.  Returns the previous choice."""
    global _frames_isa
    previous = "c-blosc" if _frames_isa < 0 else _ISA_NAMES[_frames_isa]
    if isa == "auto":
        _frames_isa = _AUTO_ISA
    elif isa == "c-blosc":
        _frames_isa = -1
    elif isa in _ISA_NAMES and _ISA_NAMES.index(isa) <= _CPU_ISA:
        _frames_isa = _ISA_NAMES.index(isa)
    else:
        raise ValueError(f"set_blosc_frames: {isa!r} is not one of 'auto', 'c-blosc', "
                         f"{', '.join(repr(n) for n in _ISA_NAMES[:_CPU_ISA + 1])} here")
    return previous


def blosc_decode_frame(const uint8_t[::1] frame not None, uint8_t[::1] target not None,
                       int64_t lo=0, int64_t hi=-1):
    """``_blosc_frame`` of one frame (``blosc_frames`` says how), for its bytes
    ``[lo, hi)`` (``hi`` -1: to the end): the chunk's size when decoded into ``target``
    (of that size), or -1: the frame was left to c-blosc."""
    cdef zf_worker w
    cdef size_t header_nbytes
    cdef int64_t got
    if _blosc_validate == NULL:
        raise RuntimeError("blosc_decode_frame: no c-blosc is bound")
    memset(&w, 0, sizeof(w))
    if (_blosc_validate(&frame[0], <size_t>frame.shape[0], &header_nbytes) != 0
            or <int64_t>header_nbytes != target.shape[0]):
        raise ValueError(f"blosc_decode_frame: not a blosc frame of {target.shape[0]} bytes")
    if hi == -1:
        hi = target.shape[0]
    with nogil:
        got = _blosc_frame(&w, &frame[0], &target[0], target.shape[0], lo, hi)
    _worker_release(&w)
    return got


cdef int _block_args(str func, const uint8_t[::1] src, uint8_t[::1] dst, int ts, str isa,
                     const uint8_t** starts) except -1:
    """Check one block's arguments (as the twins do) and give its planes' starts; the
    instruction set's number."""
    if isa not in _ISA_NAMES or _ISA_NAMES.index(isa) > _CPU_ISA:
        raise ValueError(f"isa {isa!r} is not run here")
    if ts < 1 or dst.shape[0] != src.shape[0] or src.shape[0] == 0:
        raise ValueError(f"{func}: ts >= 1 and two blocks of one size")
    if ts > 255:
        raise ValueError(f"{func}: ts is at most 255")
    zf_plane_starts(&src[0], <size_t>src.shape[0], <size_t>ts, starts)
    return _ISA_NAMES.index(isa)


def blosc_unshuffle(const uint8_t[::1] src not None, uint8_t[::1] dst not None,
                    int ts, str isa="scalar"):
    """Undo c-blosc's byte shuffle of one block (``src``) into ``dst`` (zf_shuffle.h)."""
    cdef const uint8_t* starts[256]
    cdef int i = _block_args("blosc_unshuffle", src, dst, ts, isa, starts)
    with nogil:
        zf_unshuffle(starts, &src[0] + (src.shape[0] // ts) * ts, &dst[0],
                     <size_t>src.shape[0], <size_t>ts, i)


def blosc_bitunshuffle(const uint8_t[::1] src not None, uint8_t[::1] dst not None,
                       int ts, str isa="scalar"):
    """Undo c-blosc's bit shuffle of one block (``src``) into ``dst`` (zf_shuffle.h)."""
    _bit_filter("blosc_bitunshuffle", src, dst, ts, isa, False)


cdef _bit_filter(str func, const uint8_t[::1] src, uint8_t[::1] dst, int ts, str isa,
                 bint forward):
    """``zf_bitshuffle`` (``forward``) or ``zf_bitunshuffle`` of one block, with the
    block-sized buffer of byte planes they take."""
    cdef const uint8_t* starts[256]
    cdef int i = _block_args(func, src, dst, ts, isa, starts)
    cdef uint8_t* tmp = <uint8_t*>malloc(<size_t>src.shape[0])
    if tmp == NULL:
        raise MemoryError()
    with nogil:
        if forward:
            zf_bitshuffle(&src[0], &dst[0], tmp, <size_t>src.shape[0], <size_t>ts, i)
        else:
            zf_bitunshuffle(starts, &src[0] + (src.shape[0] // ts) * ts, &dst[0], tmp,
                            <size_t>src.shape[0], <size_t>ts, i)
    free(tmp)


cdef extern from "zf_blosc_enc.h":
    ctypedef int (*zf_lz4_compress_fn)(void*, const char*, char*, int, int, int) noexcept nogil
    int32_t zf_blosc_blocksize(int clevel, int32_t typesize, int32_t nbytes,
                               int32_t forced) noexcept nogil
    int64_t zf_blosc_encode_lz4(const uint8_t* src, int32_t nbytes, int clevel, int doshuffle,
                                int32_t typesize, int32_t forced_blocksize, uint8_t* dest,
                                uint8_t* tmp, uint8_t* tmp2, zf_lz4_compress_fn lz4,
                                void* state, int isa) noexcept nogil
    void zf_shuffle(const uint8_t* src, uint8_t* dst, size_t blocksize, size_t ts,
                    int isa) noexcept nogil
    void zf_bitshuffle(const uint8_t* src, uint8_t* dst, uint8_t* tmp, size_t blocksize,
                       size_t ts, int isa) noexcept nogil


#: LZ4_compress_fast_extState of the c-blosc that ``_blosc_compress`` is (numcodecs'
#: own), and the size of its state (``bind_lz4_compress``); NULL: c-blosc compresses
cdef zf_lz4_compress_fn _lz4_compress = NULL
cdef int _lz4_state_size = 0


def bind_lz4_compress(size_t compress_ext_state, size_t sizeof_state):
    """Make blosc frames of LZ4 streams here (``zf_blosc_enc.h``, the filters with
    ``blosc_frames``' instruction set), with the LZ4 functions at these addresses
    (``LZ4_compress_fast_extState``, ``LZ4_sizeofState``).  They must be those of the
    c-blosc bound for compression (numcodecs' copy): its LZ4 makes its bytes."""
    global _lz4_compress, _lz4_state_size
    if compress_ext_state == 0 or sizeof_state == 0:
        raise ValueError("bind_lz4_compress: a function address is null")
    cdef int size = (<int (*)() noexcept nogil>sizeof_state)()
    if size <= 0 or size > 2**20:
        raise ValueError(f"bind_lz4_compress: LZ4_sizeofState() is {size}")
    _lz4_state_size = size
    _lz4_compress = <zf_lz4_compress_fn>compress_ext_state


def blosc_encoder():
    """Who makes blosc frames: ``"zarrfast (<isa>): lz4"`` (frames of LZ4 streams made
    here with numcodecs' LZ4, the rest by c-blosc), or ``"c-blosc"``."""
    if _frames_isa < 0 or _lz4_compress == NULL or _blosc_compress == NULL:
        return "c-blosc"
    return f"zarrfast ({_ISA_NAMES[_frames_isa]}): lz4"


cdef struct _Lz4Encoder:
    void* state
    uint8_t* tmp
    int32_t typesize
    int32_t forced   # the blocksize asked for (0: c-blosc's choice)
    int32_t blocksize  # what c-blosc makes of it (tmp holds two blocks)
    int isa


cdef bint _lz4_encoder_open(_Lz4Encoder* e, bytes cname, int clevel, size_t typesize,
                            size_t nbytes, size_t blocksize) except -1:
    """Set ``e`` up to make frames of ``nbytes`` bytes here: False (nothing to close)
    when c-blosc makes them instead (another compressor, no LZ4 bound, settings outside
    what ``zf_blosc_encode_lz4`` covers)."""
    memset(e, 0, sizeof(_Lz4Encoder))
    if (_frames_isa < 0 or _lz4_compress == NULL or _blosc_compress == NULL
            or cname != b"lz4" or nbytes < 1 or nbytes > BLOSC_MAX_BUFFERSIZE
            or blocksize > INT_MAX or not 0 <= clevel <= 9 or typesize < 1):
        return False
    e.typesize = <int32_t>typesize if typesize <= 255 else 1
    e.forced = <int32_t>blocksize
    e.blocksize = zf_blosc_blocksize(clevel, e.typesize, <int32_t>nbytes, e.forced)
    e.isa = _frames_isa
    e.state = malloc(<size_t>_lz4_state_size)
    e.tmp = <uint8_t*>malloc(2 * <size_t>e.blocksize)
    if e.state == NULL or e.tmp == NULL:
        _lz4_encoder_close(e)
        raise MemoryError()
    return True


cdef void _lz4_encoder_close(_Lz4Encoder* e) noexcept nogil:
    free(e.state)
    free(e.tmp)
    e.state = NULL
    e.tmp = NULL


cdef inline int64_t _lz4_encode(_Lz4Encoder* e, const uint8_t* src, int32_t nbytes, int clevel,
                                int shuffle, uint8_t* dest) noexcept nogil:
    """One frame (``nbytes`` as ``_lz4_encoder_open`` was told) at ``dest``
    (``nbytes + BLOSC_MAX_OVERHEAD`` bytes): its size, or -1 when LZ4 fails."""
    return zf_blosc_encode_lz4(src, nbytes, clevel, shuffle, e.typesize, e.forced, dest,
                               e.tmp, e.tmp + e.blocksize, _lz4_compress, e.state, e.isa)


def blosc_shuffle(const uint8_t[::1] src not None, uint8_t[::1] dst not None,
                  int ts, str isa="scalar"):
    """c-blosc's byte shuffle of one block (``src``) into ``dst`` (zf_shuffle.h)."""
    cdef const uint8_t* starts[256]
    cdef int i = _block_args("blosc_shuffle", src, dst, ts, isa, starts)
    with nogil:
        zf_shuffle(&src[0], &dst[0], <size_t>src.shape[0], <size_t>ts, i)


def blosc_bitshuffle(const uint8_t[::1] src not None, uint8_t[::1] dst not None,
                     int ts, str isa="scalar"):
    """c-blosc's bit shuffle of one block (``src``) into ``dst`` (zf_shuffle.h)."""
    _bit_filter("blosc_bitshuffle", src, dst, ts, isa, True)


cdef bint _decode_with(zf_worker* w, int codec, int64_t nbytes_, const uint8_t* frame,
                       size_t size, uint8_t* target, int64_t lo, int64_t hi) noexcept nogil:
    """Decode one chunk of exactly ``nbytes_`` bytes into ``target``; False if it is
    not one (nothing beyond ``nbytes_`` bytes of ``target`` is ever written).  Only its
    bytes ``[lo, hi)`` are needed: a blosc chunk whose header is valid decodes only the
    blocks that hold them, when that is fewer than all (a damaged block elsewhere is
    then not seen)."""
    cdef unsigned long long declared
    cdef size_t got, header_nbytes
    cdef size_t nbytes = <size_t>nbytes_
    if codec == _GZIP or codec == _ZLIB:  # (the whole chunk: a stream has no blocks)
        return zf_inflate_chunk(&w.inflater, &w.inflater_kind, _inflate_kind, codec == _GZIP,
                                frame, size, target, nbytes) == 1
    if codec == _ZSTD:
        declared = _content_size(frame, size)
        if declared == _CONTENTSIZE_ERROR or (
                declared != _CONTENTSIZE_UNKNOWN and declared != <unsigned long long>nbytes):
            return False
        got = _decompress(w.dctx, target, nbytes, frame, size)
        return not _is_error(got) and got == nbytes
    # blosc: the header must give the stored size and the chunk's size
    if _blosc_validate(frame, size, &header_nbytes) != 0 or header_nbytes != nbytes:
        return False
    if _blosc_frame(w, frame, target, nbytes_, lo, hi) == nbytes_:
        return True
    if (lo > 0 or hi < nbytes_) and _blosc_part(frame, nbytes_, lo, hi, target):
        return True
    return _blosc_decompress(frame, target, nbytes, 1) == <int>nbytes


cdef inline void _layout_span(const Layout* L, Py_ssize_t itemsize, int64_t* lo,
                              int64_t* hi) noexcept nogil:
    """The bytes ``[lo, hi)`` of the source (a chunk) that ``L`` reads."""
    cdef int64_t ext
    cdef int d
    lo[0] = hi[0] = L.src_off
    for d in range(L.ndim):
        ext = (L.shape[d] - 1) * L.sst[d]
        if ext > 0:
            hi[0] += ext
        else:
            lo[0] += ext
    hi[0] += itemsize


cdef bint _place_with(zf_worker* w, int codec, int64_t nbytes, const _PlanC* plan,
                      Py_ssize_t r, const uint8_t* frame, size_t size) noexcept nogil:
    """Decode one chunk with ``w``'s state and place it as ``plan`` says for row ``r``."""
    cdef uint8_t* target = plan.d + plan.dst_offsets[r] if plan.direct[r] else w.scratch
    cdef int64_t lo = 0, hi = nbytes
    cdef Layout L
    if not plan.direct[r]:
        _row_layout(plan, r, &L)
    if codec == _NONE:  # the stored bytes are the chunk: placed from where they are
        if size != <size_t>nbytes:
            return False
        if plan.direct[r]:
            memcpy(target, frame, size)
        else:
            strided_copy_stream(frame, plan.d, &L, plan.itemsize, plan.swap_unit,
                                plan.stream)
        return True
    if codec == _BLOSC and not plan.direct[r]:
        _layout_span(&L, plan.itemsize, &lo, &hi)
    if not _decode_with(w, codec, nbytes, frame, size, target, lo, hi):
        return False
    if not plan.direct[r]:
        strided_copy_stream(w.scratch, plan.d, &L, plan.itemsize, plan.swap_unit,
                            plan.stream)
    return True


#: the helper thread's buffers are let go after a job when larger than this
cdef int64_t _HELPER_KEEP = 4 * 2**20


ctypedef struct _RowsJob:
    # A decode_regions, decode_ranges or decode_files call, as rows the caller and the
    # helper thread claim in turn (zf_helper.h).  Every row writes only its own statuses and its
    # own region of the output.
    zf_job base  # (first: the helper sees a zf_job*)
    int64_t cursor
    Py_ssize_t n
    int codec
    int64_t nbytes
    _PlanC plan
    int8_t* status
    # decode_regions
    const uint8_t* src
    const int64_t* src_offsets
    const int64_t* src_sizes
    # decode_ranges (src_offsets, src_sizes: in the files fds)
    const int64_t* fds
    # decode_files
    bint files
    const char** cpaths
    int rootfd
    # (decode_files with several roots: each row's root directory, -2 none; NULL: rootfd)
    const int* rootfds
    int64_t limit
    int64_t* sizes
    int64_t* errs
    # cold files (``_job_cold``): set when a row read before it was not in the page
    # cache (``cold_found``: claimed by the thread that found it); the rows up to
    # ``announced`` are announced, ``window`` rows ahead of the rows claimed
    int64_t cold
    int64_t cold_found
    int64_t announced
    int64_t window
    # an I/O helper (``_job_run_shared`` with share < 0): the rows [0, pf_n) it may
    # read ahead (``_Prefetch``); rows it was reading when the caller came to them are
    # done after the others (``pf_later``), then (``pf_last``) read by the caller
    _Prefetch* pf
    int64_t pf_n
    int64_t* pf_later
    int64_t pf_nlater
    bint pf_last


ctypedef struct _Prefetch:
    # What an I/O helper reads ahead of a job's caller, in memory of its own (copies of
    # the paths, duplicates of the descriptors), so that the caller never waits for a
    # helper the system took off the CPU: the last of the two to let it go
    # (``_pf_release``) frees it.
    int64_t refs
    int64_t closed  # (the caller is done: the helper stops)
    int64_t n
    int64_t limit
    int rootfd  # files: a duplicate of the job's root directory, -1 (plain paths), -2
    char* text  # files: the rows' paths
    char** paths
    int* fds  # ranges: duplicates, one per run of rows of one file (``dups`` of them)
    int* dups
    int64_t ndups
    int64_t* offs
    int64_t* sizes
    int8_t* want  # rows to read (1)
    int8_t* state  # zf_pf_claim
    uint8_t** buf  # what the helper read (the caller takes it: NULL), its size, errno
    int64_t* len
    int64_t* err


cdef void _job_init(_RowsJob* job, ChunkDecoder dec, Placement plan, int8_t* status,
                    Py_ssize_t n) noexcept:
    memset(job, 0, sizeof(_RowsJob))
    job.base.run = _job_help
    job.n = n
    job.codec = dec.codec
    job.nbytes = dec.nbytes
    job.plan = plan.c
    # (streamed as a call made now would stream: ``stream_threshold`` may have changed
    # since the placement was made)
    job.plan.stream = plan.dst.shape[0] >= _stream_min
    job.status = status
    job.rootfd = -1


#: jobs whose first file or range was not in the page cache, so that they announced
#: the rest (``cold_announcements``)
cdef int64_t _cold_jobs = 0


def cold_announcements():
    """How many calls reading chunks from files (``decode_files``,
    ``decode_box_files``, ``decode_ranges``, ``decode_box_shards``, ``ShardFiles.run``)
    found a chunk's bytes outside the page cache (a call reading chunks: any chunk
    it read before announcing; a ``ShardFiles.run``: its first shard), and so told
    the kernel (``WILLNEED``) the other files or ranges they were about to read (a call reading
    chunks: about 16 MiB ahead of the rows its threads take, as they go; a
    ``ShardFiles.run``: its other shards, at most 4096 and 256 MiB), in this process so
    far."""
    return zf_load(&_cold_jobs)


#: rows announced to the kernel at once by a thread of a cold job (``_job_ahead``), and
#: how far ahead of the rows claimed: about this many bytes of files (4 to 256 rows)
cdef int64_t _AHEAD_BLOCK = 16
cdef int64_t _AHEAD_BYTES = 16 * 2**20


ctypedef struct _ColdAt:
    # the row whose read found the page cache without its bytes (``_job_cold``)
    _RowsJob* job
    int64_t r


cdef void _job_cold(void* ctx) noexcept nogil:
    """A row of a job must wait for the disk: announce the rows after it, a window of
    them (``_job_ahead``), so that the disk reads them while this thread waits
    (``zf_pread_first``); from then on each thread that claims a row announces the
    rows a window ahead of it, so the announcing is shared by the threads and
    overlaps the reading, and what is announced stays a window's worth.  Any row read
    before the job is found cold asks (not only the first: a box whose first chunk
    was read by an earlier box, so in the page cache, and whose others are not, read
    them one wait after the other); the first thread to find it announces."""
    cdef _ColdAt* at = <_ColdAt*>ctx
    cdef _RowsJob* job = at.job
    cdef int64_t per = job.limit if job.limit > 0 else 65536
    if zf_claim(&job.cold_found) != 0:
        return  # (another thread's row found it first and announces)
    zf_claim(&_cold_jobs)
    job.window = _AHEAD_BYTES // per
    if job.window < 4:
        job.window = 4
    elif job.window > 256:
        job.window = 256
    zf_add(&job.announced, at.r + 1)  # (from 0: the rows before were read, cached)
    zf_claim(&job.cold)
    _job_ahead(job, at.r)


cdef void _job_ahead(_RowsJob* job, int64_t r) noexcept nogil:
    """Announce the rows of the cold ``job`` up to ``window`` past row ``r`` that no
    thread has announced yet, blocks of ``_AHEAD_BLOCK`` claimed atomically: each row
    is announced once."""
    cdef int64_t lo, hi, i, want = r + 1 + job.window
    if want > job.n:
        want = job.n
    while zf_load(&job.announced) < want:
        lo = zf_add(&job.announced, _AHEAD_BLOCK)
        if lo >= job.n:
            break
        hi = lo + _AHEAD_BLOCK
        if hi > job.n:
            hi = job.n
        if job.fds != NULL:
            zf_will_need_ranges(job.fds, job.src_offsets, job.src_sizes, lo, hi)
        elif job.files and job.rootfds != NULL:
            for i in range(lo, hi):
                if job.rootfds[i] != -2:
                    zf_will_need_files(job.rootfds[i], job.cpaths, NULL, i, i + 1, job.limit)
        elif job.files and job.rootfd != -2:
            zf_will_need_files(job.rootfd, job.cpaths, NULL, lo, hi, job.limit)


ctypedef struct _ShardsAhead:
    # the shards ShardFiles.run reads after its first (``_shards_cold``)
    int rootfd
    const char** cpaths
    const int64_t* which
    int64_t n
    int64_t limit


cdef void _shards_cold(void* ctx) noexcept nogil:
    """A ShardFiles.run's first shard must wait for the disk: announce the others."""
    cdef _ShardsAhead* a = <_ShardsAhead*>ctx
    zf_claim(&_cold_jobs)
    zf_will_need_files(a.rootfd, a.cpaths, a.which, 0, a.n, a.limit)


cdef void _job_row(_RowsJob* job, zf_worker* w, Py_ssize_t r) noexcept nogil:
    cdef int err
    # a row of a job of several, read from a file before the job was found cold: when
    # its bytes are not in the page cache, the rows after it are announced, a window
    # ahead (``_job_cold``; a read made with RWF_NOWAIT first, no more calls)
    cdef zf_cold_fn cold = NULL
    cdef _ColdAt at
    at.job = job
    at.r = r
    if job.n > 1 and r + 1 < job.n and not zf_load(&job.cold_found):
        cold = _job_cold
    # a row the I/O helper read; one it is reading, later (then this thread's own)
    cdef _Prefetch* pf = job.pf
    cdef uint8_t* got
    if r < job.pf_n and pf.want[r] and not zf_pf_claim(&pf.state[r], 3):
        if zf_pf_ready(&pf.state[r]):
            got = pf.buf[r]
            pf.buf[r] = NULL
            _job_row_read(job, w, r, got, pf.err[r], pf.len[r])
            free(got)
            return
        if not job.pf_last:
            job.pf_later[job.pf_nlater] = r
            job.pf_nlater += 1
            return
    # (a row not DECODED when the call starts: no data, or one the caller refused)
    if job.status[r] != _DECODED or job.plan.skip[r]:
        return
    # an uncompressed chunk placed whole is read straight into its place (the read
    # never writes past its nbytes: a larger file or range is refused unread)
    cdef bint in_place = job.codec == _NONE and job.plan.direct[r]
    cdef uint8_t* place = job.plan.d + job.plan.dst_offsets[r] if in_place else NULL
    cdef int64_t place_cap = job.nbytes
    cdef uint8_t** buf = &place if in_place else &w.filebuf
    cdef int64_t* cap = &place_cap if in_place else &w.filecap
    if job.fds != NULL:
        if in_place and job.src_sizes[r] != job.nbytes:
            job.status[r] = _FAILED
            return
        err = zf_read_range_cold(<int>job.fds[r], job.src_offsets[r], job.src_sizes[r], buf,
                                 cap, cold, &at)
        if err != 0:
            job.status[r] = _FAILED
            job.errs[r] = err
        elif not in_place and not _place_with(w, job.codec, job.nbytes, &job.plan, r,
                                              w.filebuf, <size_t>job.src_sizes[r]):
            job.status[r] = _FAILED
        return
    if not job.files:
        if not _place_with(w, job.codec, job.nbytes, &job.plan, r,
                           job.src + job.src_offsets[r], <size_t>job.src_sizes[r]):
            job.status[r] = _FAILED
        return
    cdef int dirfd = job.rootfd if job.rootfds == NULL else job.rootfds[r]
    if dirfd == -2:  # no root directory: no files
        err = ENOENT
    else:
        err = zf_read_file_cold(dirfd, job.cpaths[r], buf, cap,
                                job.nbytes if in_place else job.limit, &job.sizes[r], NULL,
                                cold, &at)
    if err == ENOENT or err == ENOTDIR or err == EISDIR:
        job.status[r] = _NO_DATA
        job.sizes[r] = -1
    elif err != 0:
        job.status[r] = _FAILED
        job.errs[r] = err
    elif in_place:
        if job.sizes[r] != job.nbytes:  # (shorter: larger ones are EFBIG, unread)
            job.status[r] = _FAILED
    elif not _place_with(w, job.codec, job.nbytes, &job.plan, r, w.filebuf,
                         <size_t>job.sizes[r]):
        job.status[r] = _FAILED


cdef void _job_row_read(_RowsJob* job, zf_worker* w, Py_ssize_t r, const uint8_t* buf,
                        int64_t err, int64_t size) noexcept nogil:
    """Row ``r``, whose bytes the I/O helper read (``_pf_run``): ``size`` bytes
    at ``buf``, or the errno ``err`` of the read -- as ``_job_row`` places its own."""
    if job.fds != NULL:
        if err != 0:
            job.status[r] = _FAILED
            job.errs[r] = err
        elif not _place_with(w, job.codec, job.nbytes, &job.plan, r, buf,
                             <size_t>job.src_sizes[r]):
            job.status[r] = _FAILED
        return
    job.sizes[r] = size
    if err == ENOENT or err == ENOTDIR or err == EISDIR:
        job.status[r] = _NO_DATA
        job.sizes[r] = -1
    elif err != 0:
        job.status[r] = _FAILED
        job.errs[r] = err
    elif not _place_with(w, job.codec, job.nbytes, &job.plan, r, buf, <size_t>size):
        job.status[r] = _FAILED


cdef void _pf_run(_Prefetch* pf) noexcept nogil:
    """The I/O helper's part of a job: read the bytes of the rows [1, n) the caller has
    not taken yet, in order, each into a buffer of its own (blocking reads: on a cold
    file the caller decodes meanwhile), until the caller is done.  Row 0 is the
    caller's: its read finds whether the files are in the page cache (``_job_cold``)."""
    cdef int64_t r, size, cap, done = 0
    cdef int err
    cdef uint8_t* buf
    for r in range(1, pf.n):
        if zf_pf_closed(&pf.closed):
            break
        if not pf.want[r] or not zf_pf_claim(&pf.state[r], 1):
            continue
        done += 1
        buf, cap, size = NULL, 0, 0
        if pf.fds != NULL:
            err = zf_read_range(pf.fds[r], pf.offs[r], pf.sizes[r], &buf, &cap)
            size = pf.sizes[r]
        elif pf.rootfd == -2:
            err = ENOENT
        else:
            err = zf_read_file(pf.rootfd, pf.paths[r], &buf, &cap, pf.limit, &size, NULL)
        pf.buf[r] = buf
        pf.err[r] = err
        pf.len[r] = size
        zf_pf_done(&pf.state[r])
    zf_add(&_io_rows, done)


cdef void _pf_release(_Prefetch* pf) noexcept nogil:
    """Let ``pf`` go; the last holder frees it."""
    cdef int64_t r
    if zf_pf_ref(&pf.refs, -1) != 0:
        return
    if pf.buf != NULL:
        for r in range(pf.n):
            free(pf.buf[r])
    if pf.rootfd >= 0:
        close(pf.rootfd)
    for r in range(pf.ndups):
        close(pf.dups[r])
    free(pf.text)
    free(pf.paths)
    free(pf.fds)
    free(pf.dups)
    free(pf.offs)
    free(pf.sizes)
    free(pf.want)
    free(pf.state)
    free(pf.buf)
    free(pf.len)
    free(pf.err)
    free(pf)


cdef _Prefetch* _pf_make(_RowsJob* job, int64_t n) noexcept nogil:
    """What an I/O helper needs to read the first ``n`` rows of ``job`` (compressed
    chunks of files or ranges of open files) on its own; NULL when out of memory or
    descriptors."""
    cdef _Prefetch* pf = <_Prefetch*>calloc(1, sizeof(_Prefetch))
    cdef int64_t r, total = 0, k
    cdef int64_t last = -1
    cdef int dup = -1
    if pf == NULL:
        return NULL
    pf.refs = 1
    pf.n = n
    pf.limit = job.limit
    pf.rootfd = -1
    pf.want = <int8_t*>calloc(n, sizeof(int8_t))
    pf.state = <int8_t*>calloc(n, sizeof(int8_t))
    pf.buf = <uint8_t**>calloc(n, sizeof(uint8_t*))
    pf.len = <int64_t*>calloc(n, sizeof(int64_t))
    pf.err = <int64_t*>calloc(n, sizeof(int64_t))
    if (pf.want == NULL or pf.state == NULL or pf.buf == NULL or pf.len == NULL
            or pf.err == NULL):
        _pf_release(pf)
        return NULL
    for r in range(n):
        pf.want[r] = job.status[r] == _DECODED and not job.plan.skip[r]
    if job.fds != NULL:
        pf.fds = <int*>calloc(n, sizeof(int))
        pf.dups = <int*>calloc(n, sizeof(int))
        pf.offs = <int64_t*>calloc(n, sizeof(int64_t))
        pf.sizes = <int64_t*>calloc(n, sizeof(int64_t))
        if pf.fds == NULL or pf.dups == NULL or pf.offs == NULL or pf.sizes == NULL:
            _pf_release(pf)
            return NULL
        for r in range(n):
            if not pf.want[r]:
                continue
            if job.fds[r] != last:
                last = job.fds[r]
                dup = zf_dup_cloexec(<int>last)
                if dup < 0:
                    pf.want[r] = 0
                    last = -1
                    continue
                pf.dups[pf.ndups] = dup
                pf.ndups += 1
            pf.fds[r] = dup
            pf.offs[r] = job.src_offsets[r]
            pf.sizes[r] = job.src_sizes[r]
        return pf
    if job.rootfd >= 0:
        pf.rootfd = zf_dup_cloexec(job.rootfd)
        if pf.rootfd < 0:
            _pf_release(pf)
            return NULL
    else:
        pf.rootfd = job.rootfd
    pf.paths = <char**>calloc(n, sizeof(char*))
    if pf.paths == NULL:
        _pf_release(pf)
        return NULL
    for r in range(n):
        if pf.want[r]:
            total += <int64_t>strlen(job.cpaths[r]) + 1
    pf.text = <char*>malloc(total if total > 0 else 1)
    if pf.text == NULL:
        _pf_release(pf)
        return NULL
    total = 0
    for r in range(n):
        if pf.want[r]:
            k = <int64_t>strlen(job.cpaths[r]) + 1
            memcpy(pf.text + total, job.cpaths[r], k)
            pf.paths[r] = pf.text + total
            total += k
    return pf


cdef int64_t _job_rows(_RowsJob* job, zf_worker* w) noexcept nogil:
    """Claim and do rows until none is left; how many this thread did."""
    cdef int64_t r, done = 0
    while True:
        r = zf_claim(&job.cursor)
        if r >= job.n:
            break
        if r > 0 and zf_load(&job.cold):  # (a cold job: keep the disk a window ahead)
            _job_ahead(job, r)
        _job_row(job, w, <Py_ssize_t>r)
        done += 1
    zf_stream_fence()  # (the streamed stores are seen before the rows are reported done)
    return done


cdef void _job_help(zf_job* base, zf_worker* w) noexcept nogil:
    """The helper thread's part of a job (``zf_job.run``)."""
    cdef _RowsJob* job = <_RowsJob*>base
    cdef _Prefetch* pf = job.pf
    if pf != NULL:  # (an I/O helper: the job is let go at once, the block held)
        zf_pf_ref(&pf.refs, 1)
        zf_helper_leave(w)
        _pf_run(pf)
        _pf_release(pf)
        return
    if _worker_ready(w, job.codec, job.nbytes):
        zf_helper_count_rows(_job_rows(job, w))
    if w.scratch_cap > _HELPER_KEEP or w.filecap > _HELPER_KEEP or w.blocks_cap > _HELPER_KEEP:
        free(w.scratch)
        free(w.filebuf)
        free(w.blocks)
        w.scratch = w.filebuf = w.blocks = NULL
        w.scratch_cap = w.filecap = w.blocks_cap = 0


#: the most bytes of files (at the job's ``limit`` each) an I/O helper reads ahead
cdef int64_t _PREFETCH_BYTES = 32 * 2**20


cdef void _job_run_shared(_RowsJob* job, zf_worker* w, int share) noexcept nogil:
    """Run every row of ``job`` with the caller's ``w``; with ``share`` > 0 (and more
    than one row) up to ``share`` helper threads take rows too, when they are free.
    With ``share`` < 0, a job reading compressed chunks from files takes one helper
    thread for its reads alone (an I/O thread): it reads the first rows' bytes (about
    ``_PREFETCH_BYTES``) ahead of this thread, which decodes and places every row, and
    reads any row the helper has not reached."""
    cdef int helpers = share if share < job.n - 1 else <int>(job.n - 1)
    cdef bint posted
    cdef int64_t r, pf = 0
    if share < 0:
        helpers = 0
        if (job.n > 1 and job.codec != _NONE and (job.files or job.fds != NULL)
                and job.rootfds == NULL):
            pf = _PREFETCH_BYTES // (job.limit if job.limit > 0 else 2 * job.nbytes + 65536)
            pf = 2 if pf < 2 else pf
            pf = job.n if pf > job.n else pf
            job.pf_later = <int64_t*>calloc(pf, sizeof(int64_t))
            job.pf = _pf_make(job, pf) if job.pf_later != NULL else NULL
            if job.pf != NULL:
                job.pf_n = pf
                if zf_helper_post(&job.base, 1):
                    helpers = 1
                else:
                    job.pf_n = 0
    if job.pf_n:
        posted = True
    else:
        posted = helpers > 0 and zf_helper_post(&job.base, helpers)
    _job_rows(job, w)
    if job.pf_nlater:
        job.pf_last = True
        for r in range(job.pf_nlater):
            _job_row(job, w, <Py_ssize_t>job.pf_later[r])
        zf_stream_fence()
    if job.pf != NULL:
        zf_pf_close(&job.pf.closed)
    if posted:
        zf_helper_finish(&job.base)  # (an I/O helper has let the job go at once)
    if job.pf != NULL:
        _pf_release(job.pf)
    free(job.pf_later)
    job.pf = NULL
    job.pf_later = NULL
    job.pf_n = 0


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


cdef class Placement:
    """Where each decoded chunk of a batch goes, validated once: the rows a
    ``ChunkDecoder`` call (``decode_regions``, ``decode_ranges``, ``decode_files``,
    ``decode_box_files``, ``decode_box_shards``) and ``ShardFiles`` place.

    ``Placement(nbytes, chunk_offsets, chunk_strides, dst, dst_offsets, dst_strides,
    shapes, itemsize, swap_unit, direct)``: row ``r`` copies the region of shape
    ``shapes[r]`` at byte ``chunk_offsets[r]`` (byte strides ``chunk_strides``) of a
    decoded chunk of ``nbytes`` bytes to byte ``dst_offsets[r]`` (strides
    ``dst_strides``) of ``dst``, bytes swapped in groups of ``swap_unit``, as
    ``copy_regions`` does; with ``direct[r]`` the chunk is decoded straight into
    ``dst[dst_offsets[r]:][:nbytes]`` instead.  A row of an empty shape places nothing.

    Every row is checked here, once: lengths, rank, itemsize and swap unit, each region
    inside the chunk and inside ``dst`` (each direct block inside ``dst``), no zero
    ``dst`` stride along a dim longer than 1.  The rows are copied into the
    placement's own tables and used from there: what is placed is what was checked,
    whatever becomes of the caller's arrays.  A placement is read-only once made, so
    that threads may share it; the decoders check only what depends on their sources
    (ranges, files, descriptors).

    ``Placement.box(...)`` makes the rows of a step-1 box (``decode_box_files``,
    ``decode_box_shards``); ``part(lo, hi)`` and ``take(rows)`` a placement of some of
    the rows, without checking them again.

    Raises ``ValueError`` naming the shapes and the row (``(chunk r)``).

    Twin: ``zarrfast.kernels.reference.Placement``.
    """

    cdef _PlanC c  # (its pointers: into this placement's own tables, or its whole's)
    cdef Placement whole  # (a part's: the placement whose tables it reads)
    cdef uint8_t[::1] dst
    cdef readonly int64_t nbytes
    #: the rows, their rank
    cdef readonly Py_ssize_t n, ndim
    cdef readonly Py_ssize_t itemsize, swap_unit
    #: a box's (``Placement.box``): its shards, and chunks per shard (else 0)
    cdef readonly int64_t nshards, n_inner
    # (``own``: the placement's own tables -- dst offsets, direct flags -- and a box's rows)
    cdef bint* skip  # (rows of an empty shape)
    cdef int64_t* own_offsets
    cdef int64_t* own_src  # each row's first item in its decoded chunk
    cdef uint8_t* own_direct
    cdef int64_t* own_shapes  # (n, ndim)
    cdef int64_t* own_coords  # (n, ndim): the shards (a plain grid: each row's chunk)
    cdef int64_t* own_shard  # each row's shard, and its chunk's index in the shard
    cdef int64_t* own_inner

    def __init__(self, int64_t nbytes, const int64_t[::1] chunk_offsets not None,
                 const int64_t[::1] chunk_strides not None, uint8_t[::1] dst not None,
                 const int64_t[::1] dst_offsets not None,
                 const int64_t[::1] dst_strides not None,
                 const int64_t[:, ::1] shapes not None, Py_ssize_t itemsize,
                 Py_ssize_t swap_unit, const uint8_t[::1] direct not None):
        cdef str func = "Placement"
        cdef Py_ssize_t n = shapes.shape[0], ndim = shapes.shape[1], r
        if self.skip != NULL:
            raise TypeError("Placement: already made (a placement is read-only)")
        if nbytes < 0:
            raise ValueError(f"{func}: nbytes {nbytes} is negative")
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
        self._own(n, ndim, dst, nbytes, itemsize, swap_unit, False)
        for r in range(ndim):
            self.c.cst[r] = chunk_strides[r]
            self.c.dstr[r] = dst_strides[r]
        # Every row is checked without the GIL (a batch of chunks costs no interpreter
        # time per chunk); the first row that fails is checked again by the checks that
        # raise, which name what is wrong.
        cdef Py_ssize_t bad = -1
        cdef int64_t dlen = dst.shape[0]
        cdef const int64_t* shp
        cdef const int64_t* cst = self.c.cst
        cdef const int64_t* dstr = self.c.dstr
        with nogil:
            if n:
                memcpy(self.own_offsets, &dst_offsets[0], n * sizeof(int64_t))
                memcpy(self.own_src, &chunk_offsets[0], n * sizeof(int64_t))
                memcpy(self.own_direct, &direct[0], n * sizeof(uint8_t))
                if ndim:
                    memcpy(self.own_shapes, &shapes[0, 0], n * ndim * sizeof(int64_t))
            for r in range(n):
                self.skip[r] = False
                if self.own_direct[r]:
                    if self.own_offsets[r] < 0 or self.own_offsets[r] > dlen - nbytes:
                        bad = r
                        break
                    continue
                shp = self.own_shapes + r * ndim if ndim else NULL
                if not _shape_ok(shp, ndim):
                    bad = r
                    break
                if _shape_empty(shp, ndim):
                    self.skip[r] = True
                    continue
                if not (_dst_strides_ok(dstr, shp, ndim)
                        and _span_ok(nbytes, self.own_src[r], cst, shp, ndim, itemsize)
                        and _span_ok(dlen, self.own_offsets[r], dstr, shp, ndim, itemsize)):
                    bad = r
                    break
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

    cdef int _own(self, Py_ssize_t n, Py_ssize_t ndim, uint8_t[::1] dst, int64_t nbytes,
                  Py_ssize_t itemsize, Py_ssize_t swap_unit, bint box) except -1:
        """Tables for ``n`` rows of rank ``ndim`` into ``dst`` that the caller fills
        (``skip`` and the ``own_*`` tables -- a box's too, with ``box`` --; the strides in
        ``c``)."""
        cdef Py_ssize_t m = max(n, 1)
        self.n, self.ndim, self.nbytes = n, ndim, nbytes
        self.itemsize, self.swap_unit = itemsize, swap_unit
        self.skip = <bint*>PyMem_Malloc(m * sizeof(bint))
        self.own_offsets = <int64_t*>PyMem_Malloc(m * sizeof(int64_t))
        self.own_src = <int64_t*>PyMem_Malloc(m * sizeof(int64_t))
        self.own_direct = <uint8_t*>PyMem_Malloc(m * sizeof(uint8_t))
        self.own_shapes = <int64_t*>PyMem_Malloc(m * max(ndim, 1) * sizeof(int64_t))
        if box:
            self.own_coords = <int64_t*>PyMem_Malloc(m * max(ndim, 1) * sizeof(int64_t))
            self.own_shard = <int64_t*>PyMem_Malloc(m * sizeof(int64_t))
            self.own_inner = <int64_t*>PyMem_Malloc(m * sizeof(int64_t))
        if (self.skip == NULL or self.own_offsets == NULL or self.own_src == NULL
                or self.own_direct == NULL or self.own_shapes == NULL
                or (box and (self.own_coords == NULL or self.own_shard == NULL
                             or self.own_inner == NULL))):
            raise MemoryError()
        self.dst = dst
        self.c.d = &dst[0] if dst.shape[0] else NULL
        self.c.skip = self.skip
        self.c.ndim = <int>ndim
        self.c.shapes, self.c.src_offsets = self.own_shapes, self.own_src
        self.c.dst_offsets, self.c.direct = self.own_offsets, self.own_direct
        self.c.itemsize, self.c.swap_unit = itemsize, swap_unit
        self.c.stream = dst.shape[0] >= _stream_min
        return 0

    @staticmethod
    def box(int64_t nbytes, const int64_t[::1] start not None,
            const int64_t[::1] count not None, const int64_t[::1] chunk_shape not None,
            const int64_t[::1] chunk_strides not None, uint8_t[::1] dst not None,
            const int64_t[::1] dst_strides not None, Py_ssize_t itemsize,
            Py_ssize_t swap_unit, const int64_t[::1] cps=None, bint direct=True):
        """The rows of a step-1 box, in ``box_table``'s order (the shards it touches in
        C order, each one's chunks in C order), for ``decode_box_files`` (``cps``
        ``None``: every chunk its own shard) and ``decode_box_shards`` (``cps`` chunks
        per shard and dim).

        Dim ``d`` of the box selects ``start[d] + k`` for ``k < count[d]``; chunks have
        ``chunk_shape`` items, at byte strides ``chunk_strides`` once decoded (``nbytes``
        bytes).  The box goes to ``dst`` at byte strides ``dst_strides`` from offset 0.
        A chunk that lies whole in the box is decoded straight into ``dst`` when
        ``direct`` is true, its bytes need no swap (``swap_unit <= 1``), its items cover
        its ``nbytes`` bytes exactly, each byte once (``chunk_strides`` a C, F or other
        permuted contiguous layout), and its block of ``dst`` has the chunk's own strides
        (``dst_strides[d] == chunk_strides[d]`` wherever ``chunk_shape[d] > 1``).

        Raises ``ValueError`` for lengths that differ, a rank outside 1 to 64, a box or
        chunk out of its domain, a box of more than 2**16 chunks, or a region outside
        the chunk or ``dst``."""
        cdef str func = "Placement.box"
        cdef Py_ssize_t ndim = start.shape[0], d
        cdef int64_t n = 1, span, per = 1
        cdef bint same = direct and swap_unit <= 1
        if nbytes < 0:
            raise ValueError(f"{func}: nbytes {nbytes} is negative")
        if (count.shape[0] != ndim or chunk_shape.shape[0] != ndim
                or chunk_strides.shape[0] != ndim or dst_strides.shape[0] != ndim):
            raise ValueError(
                f"{func}: start {_tup(start)}, count {_tup(count)}, chunk_shape "
                f"{_tup(chunk_shape)}, chunk_strides {_tup(chunk_strides)} and dst_strides "
                f"{_tup(dst_strides)} must have the same length")
        if cps is not None and cps.shape[0] != ndim:
            raise ValueError(f"{func}: start {_tup(start)} and cps {_tup(cps)} "
                             f"must have the same length")
        if not 1 <= ndim <= ZF_MAX_NDIM:
            raise ValueError(f"{func}: rank {ndim} is not 1 to {ZF_MAX_NDIM}")
        _check_item(func, itemsize, swap_unit)
        for d in range(ndim):
            if (start[d] < 0 or count[d] < 1 or chunk_shape[d] < 1
                    or count[d] > INT64_MAX - start[d]):
                raise ValueError(
                    f"{func}: dim {d}: start {start[d]} (>= 0), count {count[d]} "
                    f"(>= 1, start + count < 2**63) or chunk_shape {chunk_shape[d]} (>= 1) "
                    f"out of domain")
            if cps is not None and (cps[d] < 1 or checked_mul(per, cps[d], &per)):
                raise ValueError(f"{func}: dim {d}: cps {cps[d]} out of domain (>= 1, a "
                                 f"shard of at most 2**63 chunks)")
            span = (start[d] + count[d] - 1) // chunk_shape[d] - start[d] // chunk_shape[d] + 1
            if checked_mul(n, span, &n) or n > _BOX_FILES_MAX:
                raise ValueError(f"{func}: the box touches more than {_BOX_FILES_MAX} chunks")
            if chunk_shape[d] > 1 and dst_strides[d] != chunk_strides[d]:
                same = False
        same = same and _dense(<int>ndim, &chunk_shape[0], &chunk_strides[0], itemsize,
                               nbytes)
        _check_span(func, "chunk", nbytes, 0, chunk_strides, chunk_shape, itemsize)
        _check_dst_strides(func, dst_strides, count)
        _check_span(func, "dst", dst.shape[0], 0, dst_strides, count, itemsize)
        cdef Placement p = Placement.__new__(Placement)
        p._own(n, ndim, dst, nbytes, itemsize, swap_unit, True)
        p.n_inner = per
        cdef int64_t ones[ZF_MAX_NDIM]  # (a plain grid: every chunk its own shard)
        for d in range(ndim):
            ones[d] = 1
        cdef int64_t nshards
        with nogil:
            nshards = _box_rows(<int>ndim, &start[0], &count[0], &chunk_shape[0],
                                &cps[0] if cps is not None else ones, &chunk_strides[0],
                                &dst_strides[0], same, p)
        if nshards < 0:
            raise MemoryError()
        p.nshards = nshards
        return p

    def part(self, Py_ssize_t lo, Py_ssize_t hi):
        """A placement of rows ``lo`` to ``hi`` (row ``lo`` its row 0), reading this
        one's tables: nothing copied, nothing checked again.  Not a box's."""
        if not 0 <= lo <= hi <= self.n:
            raise IndexError(f"Placement.part: rows {lo} to {hi} of {self.n}")
        cdef Placement p = Placement.__new__(Placement)
        p.whole = self if self.whole is None else self.whole
        p.c = self.c
        p.c.skip = self.c.skip + lo
        p.c.shapes = self.c.shapes + lo * self.ndim
        p.c.src_offsets = self.c.src_offsets + lo
        p.c.dst_offsets = self.c.dst_offsets + lo
        p.c.direct = self.c.direct + lo
        p.dst = self.dst
        p.n, p.ndim, p.nbytes = hi - lo, self.ndim, self.nbytes
        p.itemsize, p.swap_unit = self.itemsize, self.swap_unit
        return p

    def take(self, const int64_t[::1] rows not None):
        """A placement of the rows ``rows`` (in that order), copied from this one's
        tables without checking them again.  Not a box's.  Raises ``IndexError`` for a
        row that is not one of them."""
        cdef Py_ssize_t k = rows.shape[0], i, ndim = self.ndim
        cdef int64_t r
        for i in range(k):
            if not 0 <= rows[i] < self.n:
                raise IndexError(f"Placement.take: row {rows[i]} of {self.n}")
        cdef Placement p = Placement.__new__(Placement)
        p._own(k, ndim, self.dst, self.nbytes, self.itemsize, self.swap_unit, False)
        p.c.cst = self.c.cst
        p.c.dstr = self.c.dstr
        p.c.stream = self.c.stream
        cdef const _PlanC* s = &self.c
        with nogil:
            for i in range(k):
                r = rows[i]
                p.skip[i] = s.skip[r]
                p.own_offsets[i] = s.dst_offsets[r]
                p.own_src[i] = s.src_offsets[r]
                p.own_direct[i] = s.direct[r]
                if ndim:
                    memcpy(p.own_shapes + i * ndim, s.shapes + r * ndim,
                           ndim * sizeof(int64_t))
        return p

    @property
    def direct(self):
        """Each row's direct flag, as checked (a uint8 copy)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.array(<uint8_t[:self.n]><uint8_t*>self.c.direct, dtype=np.uint8)

    def __len__(self):
        return self.n

    def __repr__(self):
        return (f"<Placement of {self.n} rows of rank {self.ndim}: {self.nbytes}-byte "
                f"chunks, {self.itemsize}-byte items, into {self.dst.shape[0]} bytes>")

    def __dealloc__(self):
        PyMem_Free(self.skip)
        PyMem_Free(self.own_offsets)
        PyMem_Free(self.own_src)
        PyMem_Free(self.own_direct)
        PyMem_Free(self.own_shapes)
        PyMem_Free(self.own_coords)
        PyMem_Free(self.own_shard)
        PyMem_Free(self.own_inner)


def crc32c(const uint8_t[::1] data not None):
    """The CRC-32C of ``data`` as ``ShardFiles`` checks shard indexes with it (what the
    crc32c package gives)."""
    cdef uint32_t crc
    cdef const uint8_t* p = &data[0] if data.shape[0] else NULL
    with nogil:
        crc = zf_crc32c(p, <size_t>data.shape[0])
    return crc


cdef inline uint64_t _le64(const uint8_t* p) noexcept nogil:
    return (<uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16)
            | (<uint64_t>p[3] << 24) | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40)
            | (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))


cdef class ShardFiles:
    """Whole shards, one file each, read and placed by one ``nogil`` call per shard.

    ``read(decoder, g)`` reads the file ``paths[g]`` whole (as ``decode_files``
    reads a chunk's: relative to ``root`` without following links) into the
    decoder's file buffer, decodes and checks its index -- ``n_inner`` little-endian
    ``(offset, nbytes)`` uint64 pairs, followed by their CRC-32C when ``checksum``,
    at the end of the shard (``at_end``) or at its start, checked as
    ``_shard_index.check_index`` does against the shard's data -- and then places
    the rows ``rows[bounds[g]:bounds[g + 1]]``: row ``r`` is inner chunk
    ``inner[r]``, decoded and placed as row ``r`` of ``placement`` says (a
    ``Placement`` of the inner chunks' ``nbytes``), or, when the index marks that inner
    chunk empty, placed as a chunk of ``fill`` items (``fill``: one item as a decoded
    chunk holds it).

    Statuses: ``DECODED`` (every row placed), ``NO_DATA`` (no file: every row of the
    shard holds the fill value), ``FAILED`` (the file cannot be read -- a link on its
    path, not a regular file, larger than ``limit`` bytes --, its index has the
    wrong size, checksum or entries, or an inner chunk does not decode to ``nbytes``
    bytes: some rows of the shard may have been placed; the caller reads the shard
    its own way, which says what is wrong).  ``stamp(g)`` gives the read file's
    ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` from ``fstat`` (after
    ``DECODED``).

    ``run(decoder, todo, status, cursor, max_shards)`` reads many shards in one call,
    threads taking turns on a shared cursor.

    The tables are shared by every thread (read-only); each thread passes its own
    decoder, and no two calls may read the same shard at once.  The decoder's file
    buffer (the largest shard of a call) is let go at the end of a call when it is
    larger than ``keep`` bytes.
    """

    cdef Placement plan
    cdef list paths
    cdef const char** cpaths
    cdef bytes root
    cdef const char* croot
    cdef const int64_t[::1] rows
    cdef const int64_t[::1] bounds
    cdef const int64_t[::1] inner
    cdef uint8_t* d
    cdef bytes fill_stored  # one item as a decoded chunk holds it
    cdef bytes fill_placed  # ... and as it is placed (groups of swap_unit bytes reversed)
    cdef const uint8_t* fstored
    cdef const uint8_t* fplaced
    cdef int64_t[:, ::1] stamps
    cdef readonly int64_t nbytes, n_inner, index_nbytes, limit, keep
    cdef readonly bint at_end, checksum
    cdef Py_ssize_t ndim, nshards, itemsize

    def __cinit__(self, list paths not None, root, const int64_t[::1] rows not None,
                  const int64_t[::1] bounds not None, const int64_t[::1] inner not None,
                  int64_t n_inner, int64_t index_nbytes, bint at_end, bint checksum,
                  int64_t limit, int64_t keep, Placement placement not None,
                  bytes fill not None):
        cdef Py_ssize_t nrows = placement.n, g, k, r
        cdef int64_t nbytes = placement.nbytes
        cdef Py_ssize_t itemsize = placement.itemsize, swap_unit = placement.swap_unit
        # (copies: what is checked here is what the reads use, whatever the caller's
        # arrays become; the placement copied the rows' layouts the same way)
        rows, bounds, inner = (np.array(rows, dtype=np.int64), np.array(bounds, dtype=np.int64),
                               np.array(inner, dtype=np.int64))
        self.nshards = bounds.shape[0] - 1
        if self.nshards < 0 or len(paths) != self.nshards:
            raise ValueError(f"ShardFiles: {len(paths)} paths but {bounds.shape[0]} bounds "
                             f"(one more than the shards)")
        for p in paths:
            if not isinstance(p, bytes):
                raise TypeError(f"ShardFiles: path {p!r} is {type(p).__name__}, expected bytes")
            if strlen(PyBytes_AS_STRING(p)) != <size_t>PyBytes_GET_SIZE(p):
                raise ValueError(f"ShardFiles: path {p!r} contains a NUL byte")
        if root is not None and (not isinstance(root, bytes) or b"\0" in root):
            raise TypeError(f"ShardFiles: root must be bytes without NUL, got {root!r}")
        if nbytes < 0 or n_inner < 0 or limit < 0 or keep < 0:
            raise ValueError(f"ShardFiles: nbytes {nbytes}, n_inner {n_inner}, limit {limit}"
                             f" and keep {keep} must not be negative")
        if index_nbytes != 16 * n_inner + (4 if checksum else 0):
            raise ValueError(f"ShardFiles: an index of {n_inner} entries"
                             f"{' and a checksum' if checksum else ''} is not "
                             f"{index_nbytes} bytes")
        if len(fill) != itemsize or itemsize < 1 or nbytes % itemsize:
            raise ValueError(f"ShardFiles: fill has {len(fill)} bytes, nbytes {nbytes}, "
                             f"itemsize {itemsize}: expected one item, a whole number of "
                             f"items")
        if inner.shape[0] != nrows:
            raise ValueError(f"ShardFiles: {nrows} rows but {inner.shape[0]} inner indexes")
        if self.nshards >= 0 and (bounds[0] != 0 or bounds[self.nshards] > rows.shape[0]):
            raise ValueError(f"ShardFiles: bounds run from {bounds[0]} to "
                             f"{bounds[self.nshards]}, not from 0 to at most {rows.shape[0]}")
        for g in range(self.nshards):
            if bounds[g + 1] < bounds[g]:
                raise ValueError(f"ShardFiles: bounds decrease at shard {g}")
        for k in range(rows.shape[0]):
            r = rows[k]
            if not 0 <= r < nrows:
                raise ValueError(f"ShardFiles: row {r} is not one of the {nrows} rows")
            if not 0 <= inner[r] < n_inner:
                raise ValueError(f"ShardFiles: row {r} is inner chunk {inner[r]}, not one of "
                                 f"{n_inner}")
        self.plan = placement
        self.paths = list(paths)
        self.cpaths = <const char**>PyMem_Malloc(max(self.nshards, 1) * sizeof(char*))
        if self.cpaths == NULL:
            raise MemoryError()
        for g in range(self.nshards):
            self.cpaths[g] = PyBytes_AS_STRING(self.paths[g])  # (kept alive by self.paths)
        self.root = root
        self.croot = NULL if root is None else PyBytes_AS_STRING(root)
        self.rows, self.bounds, self.inner = rows, bounds, inner
        self.d = placement.c.d  # (held by the placement)
        self.fill_stored = fill
        placed = bytearray(fill)
        cdef unsigned char* q = placed
        if swap_unit > 1:
            swap_groups(q, q, itemsize, swap_unit)
        self.fill_placed = bytes(placed)
        self.fstored = <const uint8_t*>PyBytes_AS_STRING(self.fill_stored)
        self.fplaced = <const uint8_t*>PyBytes_AS_STRING(self.fill_placed)
        self.stamps = np.full((max(self.nshards, 1), 4), -1, dtype=np.int64)
        self.nbytes, self.n_inner, self.index_nbytes = nbytes, n_inner, index_nbytes
        self.limit, self.keep, self.at_end, self.checksum = limit, keep, at_end, checksum
        self.ndim, self.itemsize = placement.ndim, itemsize

    def __dealloc__(self):
        PyMem_Free(self.cpaths)

    def read(self, ChunkDecoder decoder not None, Py_ssize_t g, index_out=None):
        """Read shard ``g`` and place its rows; its status (see the class).  With
        ``index_out`` (uint64, C-contiguous, ``(n_inner, 2)``) the decoded index goes
        there too (meaningful when ``DECODED``)."""
        if not 0 <= g < self.nshards:
            raise IndexError(f"ShardFiles.read: shard {g} of {self.nshards}")
        if decoder.nbytes != self.nbytes:
            raise ValueError(f"ShardFiles.read: a decoder of {decoder.nbytes}-byte chunks, "
                             f"expected {self.nbytes}")
        cdef uint64_t[:, ::1] iv
        cdef uint64_t* iout = NULL
        if index_out is not None:
            iv = index_out
            if iv.shape[0] != self.n_inner or iv.shape[1] != 2:
                raise ValueError(f"ShardFiles.read: index_out has shape "
                                 f"{tuple(index_out.shape)}, expected ({self.n_inner}, 2)")
            if self.n_inner:
                iout = &iv[0, 0]
        cdef int status
        with nogil:
            status = self._read(decoder, g, iout)
            self._trim(decoder)
        return status

    def run(self, ChunkDecoder decoder not None, const int64_t[::1] todo not None,
            int8_t[::1] status not None, int64_t[::1] cursor not None,
            Py_ssize_t max_shards, indexes=None):
        """Read shards of ``todo`` as ``read`` does, taking turns with other threads
        that run the same ``todo``: each claims the next position ``i`` with an
        atomic increment of ``cursor[0]`` (start it at 0), reads shard ``todo[i]``,
        writes its status to ``status[i]`` and, with ``indexes`` (uint64,
        C-contiguous, ``(len(todo), n_inner, 2)``), its index to ``indexes[i]``.  At
        most ``max_shards`` shards per call, all without the GIL; returns how many
        this call read (0: none left)."""
        cdef Py_ssize_t n = todo.shape[0], i, done = 0
        if decoder.nbytes != self.nbytes:
            raise ValueError(f"ShardFiles.run: a decoder of {decoder.nbytes}-byte chunks, "
                             f"expected {self.nbytes}")
        if status.shape[0] != n or cursor.shape[0] != 1:
            raise ValueError(f"ShardFiles.run: {n} shards but {status.shape[0]} statuses "
                             f"and {cursor.shape[0]} cursors (expected one)")
        for i in range(n):
            if not 0 <= todo[i] < self.nshards:
                raise IndexError(f"ShardFiles.run: shard {todo[i]} of {self.nshards}")
        cdef uint64_t[:, :, ::1] iv
        cdef uint64_t* ibase = NULL
        if indexes is not None:
            iv = indexes
            if iv.shape[0] != n or iv.shape[1] != self.n_inner or iv.shape[2] != 2:
                raise ValueError(f"ShardFiles.run: indexes has shape "
                                 f"{tuple(indexes.shape)}, expected ({n}, {self.n_inner}, 2)")
            if n and self.n_inner:
                ibase = &iv[0, 0, 0]
        cdef int64_t* c = &cursor[0]
        with nogil:
            while done < max_shards:
                i = <Py_ssize_t>zf_claim(c)
                if i >= n:
                    break
                # (the first shard of several: the others announced when it is cold)
                status[i] = <int8_t>self._read(
                    decoder, <Py_ssize_t>todo[i],
                    ibase + 2 * self.n_inner * i if ibase != NULL else NULL,
                    &todo[1] if i == 0 and n > 1 else NULL, n - 1)
                done += 1
            self._trim(decoder)
        return done

    def stamp(self, Py_ssize_t g):
        """``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of the file shard ``g`` was
        last read from, or ``None``."""
        if not 0 <= g < self.nshards:
            raise IndexError(f"ShardFiles.stamp: shard {g} of {self.nshards}")
        if self.stamps[g, 1] < 0:
            return None
        return (self.stamps[g, 0], self.stamps[g, 1], self.stamps[g, 2], self.stamps[g, 3])

    cdef void _fill_row(self, Py_ssize_t r) noexcept nogil:
        """Place a chunk of fill items at row ``r``."""
        cdef Layout L
        cdef int64_t zeros[ZF_MAX_NDIM]
        cdef Py_ssize_t k
        cdef const _PlanC* p = &self.plan.c  # (the rows as the plan checked them)
        if p.skip[r]:
            return
        if p.direct[r]:
            _fill_run(self.d + p.dst_offsets[r], self.fstored, self.itemsize, self.nbytes)
            return
        for k in range(self.ndim):
            zeros[k] = 0
        normalize_layout(p.ndim, p.shapes + r * p.ndim if p.ndim else NULL, zeros, p.dstr, 0,
                         p.dst_offsets[r], &L)
        strided_fill(self.d, &L, self.fplaced, self.itemsize)

    cdef int _read(self, ChunkDecoder dec, Py_ssize_t g, uint64_t* iout,
                   const int64_t* ahead=NULL, Py_ssize_t nahead=0) noexcept nogil:
        """Read shard ``g``; with ``ahead``, the shards ``ahead[:nahead]`` are announced
        to the kernel when this one is not in the page cache (``_shards_cold``)."""
        cdef Py_ssize_t k, r, a = -1, b = -1
        cdef _ShardsAhead cold
        cdef int64_t size = -1, j
        cdef int err, rootfd = -1, status = _DECODED
        cdef const uint8_t* raw
        cdef uint64_t* idx
        cdef uint64_t off, nb, low, high
        cdef int64_t* stamp = &self.stamps[g, 0]
        stamp[1] = -1
        if self.croot != NULL:
            rootfd = zf_open_root(self.croot)
        if rootfd == -2:  # no root directory: no files
            err = ENOENT
        elif self.croot != NULL and rootfd == -1:
            err = errno
        elif ahead != NULL and nahead > 0:
            cold.rootfd = rootfd
            cold.cpaths = self.cpaths
            cold.which = ahead
            cold.n = nahead
            cold.limit = self.limit
            err = zf_read_file_cold(rootfd, self.cpaths[g], &dec.w.filebuf, &dec.w.filecap,
                                    self.limit, &size, stamp, _shards_cold, &cold)
        else:
            err = zf_read_file(rootfd, self.cpaths[g], &dec.w.filebuf, &dec.w.filecap,
                               self.limit, &size, stamp)
        if rootfd >= 0:
            close(rootfd)
        if err == ENOENT or err == ENOTDIR or err == EISDIR:
            stamp[1] = -1
            for k in range(self.bounds[g], self.bounds[g + 1]):
                self._fill_row(self.rows[k])
            return _NO_DATA
        if err != 0 or size < self.index_nbytes:
            stamp[1] = -1
            return _FAILED
        raw = dec.w.filebuf + (size - self.index_nbytes if self.at_end else 0)
        if self.checksum and zf_crc32c(raw, <size_t>(self.index_nbytes - 4)) != (
                <uint32_t>raw[self.index_nbytes - 4]
                | (<uint32_t>raw[self.index_nbytes - 3] << 8)
                | (<uint32_t>raw[self.index_nbytes - 2] << 16)
                | (<uint32_t>raw[self.index_nbytes - 1] << 24)):
            return _FAILED
        idx = iout if iout != NULL else <uint64_t*>malloc(
            <size_t>max(self.n_inner, 1) * 2 * sizeof(uint64_t))
        if idx == NULL:
            return _FAILED
        for j in range(2 * self.n_inner):
            idx[j] = _le64(raw + 8 * j)
        low = 0 if self.at_end else <uint64_t>self.index_nbytes
        high = <uint64_t>(size - self.index_nbytes) if self.at_end else <uint64_t>size
        if _check(idx, self.n_inner, low, high, &a, &b) != 0:
            status = _FAILED
        else:
            for k in range(self.bounds[g], self.bounds[g + 1]):
                r = self.rows[k]
                j = self.inner[r]
                off = idx[2 * j]
                nb = idx[2 * j + 1]
                if off == UINT64_MAX:
                    self._fill_row(r)
                elif not self.plan.skip[r] and not dec._place(
                        self.plan, r, dec.w.filebuf + off, <size_t>nb):
                    status = _FAILED
                    break
            zf_stream_fence()  # (the streamed stores are seen before the call returns)
        if iout == NULL:
            free(idx)
        return status

    cdef void _trim(self, ChunkDecoder dec) noexcept nogil:
        """Let the decoder's file buffer go if it is larger than ``keep`` bytes."""
        if dec.w.filecap > self.keep:
            free(dec.w.filebuf)
            dec.w.filebuf = NULL
            dec.w.filecap = 0
