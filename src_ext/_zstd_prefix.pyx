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

from libc.stdint cimport int8_t, int64_t, uint8_t
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
