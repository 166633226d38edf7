# cython: language_level=3
"""Batched local file reads for chunk files (POSIX only).

``read_files_into`` opens, sizes and reads many files into one buffer in a
single ``nogil`` loop: per file it costs the four system calls (open, fstat,
pread, close) and nothing from the interpreter, which is what a chunk file of
a few KiB needs to come near the page-cache floor.

All arguments are validated with the GIL before the loop; the loop never
writes outside ``dst``.

Twins: ``zarrfast.kernels.reference.read_files_into``,
``zarrfast.kernels.reference.write_files``,
``zarrfast.kernels.reference.write_region_files``,
``zarrfast.kernels.reference.open_nolinks``.
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.errno cimport EINTR, EINVAL, EISDIR, ENOENT, errno
from libc.stdint cimport int64_t, uint8_t
from posix.fcntl cimport O_NONBLOCK, O_RDONLY, open
from posix.stat cimport S_ISDIR
from posix.stat cimport S_ISREG, fstat, struct_stat
from posix.types cimport off_t
from posix.unistd cimport close, pread

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memchr, memcmp, memcpy

from _checks cimport _check_fill, _check_shape, _check_span, _is_empty, _tup
from _common cimport ZF_MAX_NDIM, ZF_PREFETCH_RUNS, zf_copy_short, zf_prefetch_run

import os

import numpy as np

cdef extern from "fcntl.h":
    int O_CLOEXEC

cdef extern from "zf_files.h":
    int zf_open_nolinks(int dirfd, const char* path, int flags, int mode) nogil
    int zf_open_root(const char* path) nogil
    int zf_openat2_works
    int zf_rename_new(int dirfd, const char* tmp, const char* name) nogil
    int zf_renameat2_works


def use_openat2(bint on):
    """Let :func:`open_nolinks` (and the file kernels of this module) use ``openat2``
    where the system has it (the default), or walk paths with ``O_NOFOLLOW`` as
    systems without it do (for tests).  Returns the previous setting."""
    global zf_openat2_works
    cdef bint before = zf_openat2_works
    zf_openat2_works = on
    return before


def use_renameat2(bint on):
    """Let the file kernels of this module rename new files into place with
    ``renameat2(RENAME_NOREPLACE)`` where the system has it (the default), or look at
    every name before renaming as systems without it do (for tests).  Returns the
    previous setting."""
    global zf_renameat2_works
    cdef bint before = zf_renameat2_works
    zf_renameat2_works = on
    return before


def open_nolinks(int dirfd, bytes path not None, int flags, int mode=0o666):
    """Open ``path`` relative to the directory ``dirfd`` without following any
    symbolic link, in one step (``openat2`` with ``RESOLVE_BENEATH |
    RESOLVE_NO_SYMLINKS``, else a walk with ``O_NOFOLLOW``); returns the descriptor.

    Raises ``OSError``: ``ELOOP`` when a component is a symbolic link, ``EXDEV`` when
    the path would leave ``dirfd``, or the error of the open.
    """
    if b"\0" in path:
        raise ValueError(f"open_nolinks: path {path!r} contains a NUL byte")
    cdef const char* c = path
    cdef int fd, err
    with nogil:
        fd = zf_open_nolinks(dirfd, c, flags, mode)
        err = errno
    if fd < 0:
        raise OSError(err, os.strerror(err), os.fsdecode(path))
    return fd


cdef int _open_root(object root) except -3:
    """``root`` (``bytes`` or ``None``) opened for :func:`open_nolinks`: its descriptor,
    ``-1`` for none, ``-2`` when it does not exist."""
    if root is None:
        return -1
    if not isinstance(root, bytes) or b"\0" in root:
        raise TypeError(f"root must be bytes without NUL, got {root!r}")
    cdef int fd = zf_open_root(<const char*>root)
    if fd == -1:
        raise OSError(errno, os.strerror(errno), os.fsdecode(root))
    return fd


def read_files_into(list paths not None, uint8_t[::1] dst not None,
                    const int64_t[::1] offsets not None, int64_t nbytes, bint exact=True,
                    root=None):
    """Read each file ``paths[i]`` (``bytes``, file-system encoded) into
    ``dst[offsets[i]:offsets[i] + nbytes]`` when it holds exactly ``nbytes`` bytes
    (``exact``), or at most ``nbytes`` bytes (not ``exact``: compressed chunks).

    Returns
    -------
    sizes : ndarray[int64] (n,)
        The size of each file; ``-1`` when it could not be opened or is not a
        regular file.  When a size differs from ``nbytes`` (``exact``) or exceeds
        it, nothing was read for that file; a file that shrank while being read
        reports the bytes read.
    errors : ndarray[int64] (n,)
        The ``errno`` of a failed open/fstat/read (``EISDIR`` for a directory),
        else 0.

    Raises
    ------
    ValueError
        Lengths differ, ``nbytes`` is negative, or a destination range lies
        outside ``dst``.
    TypeError
        A path is not ``bytes``.
    """
    paths = list(paths)  # our own list: the loop keeps pointers into its bytes
    cdef Py_ssize_t n = len(paths), i
    cdef int64_t limit = dst.shape[0]
    if offsets.shape[0] != n:
        raise ValueError(f"read_files_into: {n} paths but {offsets.shape[0]} offsets")
    if nbytes < 0:
        raise ValueError(f"read_files_into: nbytes {nbytes} is negative")
    for i in range(n):
        if not isinstance(paths[i], bytes):
            raise TypeError(
                f"read_files_into: path {i} is {type(paths[i]).__name__}, expected bytes"
            )
        if b"\0" in paths[i]:
            raise ValueError(f"read_files_into: path {paths[i]!r} contains a NUL byte")
        if offsets[i] < 0 or offsets[i] > limit - nbytes:
            raise ValueError(
                f"read_files_into: range [{offsets[i]}, {offsets[i] + nbytes}) of file {i} "
                f"lies outside the destination's {limit} bytes"
            )
    sizes_arr = np.full(n, -1, dtype=np.int64)
    errors_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] sizes = sizes_arr
    cdef int64_t[::1] errs = errors_arr
    cdef const char** cpaths = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    if cpaths == NULL:
        raise MemoryError()
    for i in range(n):
        cpaths[i] = PyBytes_AS_STRING(paths[i])  # `paths` keeps the bytes alive
    cdef uint8_t* base = &dst[0] if limit > 0 else NULL
    cdef int fd
    cdef int rootfd = _open_root(root)
    cdef struct_stat st
    cdef int64_t got, want
    cdef Py_ssize_t k
    try:
        with nogil:
            for i in range(n):
                # non-blocking: a FIFO opens at once (and is refused below) instead of
                # waiting for a writer forever
                if rootfd == -1:
                    fd = open(cpaths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                elif rootfd == -2:
                    errs[i] = ENOENT
                    continue
                else:
                    fd = zf_open_nolinks(rootfd, cpaths[i], O_RDONLY | O_NONBLOCK, 0)
                if fd < 0:
                    errs[i] = errno
                    continue
                if fstat(fd, &st) != 0:
                    errs[i] = errno
                    close(fd)
                    continue
                if not S_ISREG(st.st_mode):
                    # a directory is a prefix (no value); anything else is refused
                    errs[i] = EISDIR if S_ISDIR(st.st_mode) else EINVAL
                    close(fd)
                    continue
                sizes[i] = st.st_size
                want = st.st_size
                if want == nbytes or (not exact and want < nbytes):
                    got = 0
                    while got < want:
                        k = pread(fd, base + offsets[i] + got, <size_t>(want - got),
                                  <off_t>got)
                        if k < 0:
                            if errno == EINTR:
                                continue
                            errs[i] = errno
                            break
                        if k == 0:
                            sizes[i] = got  # the file shrank under us
                            break
                        got += k
                close(fd)
    finally:
        PyMem_Free(cpaths)
        if rootfd >= 0:
            close(rootfd)
    return sizes_arr, errors_arr


cdef extern from "sys/stat.h":
    int fstatat(int dirfd, const char* path, struct_stat* buf, int flags) nogil
    bint S_ISLNK(int mode) nogil

cdef extern from "stdio.h":
    int renameat(int olddirfd, const char* old, int newdirfd, const char* new) nogil

cdef extern from "fcntl.h":
    int openat(int dirfd, const char* path, int flags, ...) nogil
    int AT_SYMLINK_NOFOLLOW
    int O_NOFOLLOW

cdef extern from "unistd.h":
    int unlinkat(int dirfd, const char* path, int flags) nogil

cdef extern from "errno.h":
    int ELOOP
    int EIO

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from posix.fcntl cimport O_CREAT, O_EXCL, O_WRONLY


cdef extern from "sys/uio.h":
    struct iovec:
        void* iov_base
        size_t iov_len
    ssize_t writev(int fd, const iovec* iov, int iovcnt) nogil

cdef enum:
    # iovecs per writev call (IOV_MAX is 1024 on Linux and the BSDs, at least 16 by POSIX;
    # a larger count fails with EINVAL, which is reported, never a silent loss)
    ZF_IOV = 1024
    # write_region_files: runs of at least this many bytes are written from where they
    # lie; shorter ones are copied into a staging buffer of ZF_STAGE bytes (the kernel
    # costs ~150 ns per iovec: 256 Ki runs of 128 B written one iovec each took 2.5x
    # as long as copying them together first)
    ZF_DIRECT_RUN = 4096
    ZF_STAGE = 131072
    # bytes per writev call at most.  The page cache takes folios as large as the call
    # (up to 2 MiB) for the file; on a VM whose balloon reports free blocks of 2 MiB and
    # more to the host (virtio-balloon free page reporting, order 9), large folios come
    # from such blocks once the smaller free ones are used, and the host faults each of
    # their pages in again while the call copies into it.  Shards of 2.3 MB, 75 files
    # per run, 2 threads, 6 runs kept one after the other (system time of each run, ms):
    # one call per file 190 289 405 411 421 414; calls of 1 MiB 55 232 397 388 384 289;
    # of 256 KiB 46 51 49 52 52 128; of 128 KiB 49 51 55 52 50 46; of 64 KiB 50 47 53
    # 54 52 53.  Small folios come from the free blocks the system already holds
    ZF_WRITE_PIECE = 131072


cdef int _begin_file(int dfd, const char* tmp) noexcept nogil:
    """The descriptor of the new temporary file ``tmp`` in ``dfd``, or ``-errno``."""
    cdef int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
    if fd < 0:
        return -errno
    return fd


cdef int _writev_all(int fd, iovec* iov, int cnt) noexcept nogil:
    """Write every byte of ``iov[:cnt]`` (which it advances over partial writes), in
    calls of at most ``ZF_WRITE_PIECE`` bytes; 0 or the ``errno``."""
    cdef ssize_t k
    cdef int i = 0, m
    cdef size_t total
    cdef iovec piece
    while i < cnt:
        # the iovecs from i on that fit in one piece; a first one larger than a piece
        # is written a piece at a time
        m = 0
        total = 0
        while i + m < cnt and total + iov[i + m].iov_len <= ZF_WRITE_PIECE:
            total += iov[i + m].iov_len
            m += 1
        if m:
            k = writev(fd, iov + i, m)
        else:
            piece.iov_base = iov[i].iov_base
            piece.iov_len = ZF_WRITE_PIECE
            k = writev(fd, &piece, 1)
        if k < 0:
            if errno == EINTR:
                continue
            return errno
        if k == 0 and (m == 0 or total > 0):
            return EIO  # (no progress on a regular file: never spin)
        while i < cnt and <size_t>k >= iov[i].iov_len:
            k -= <ssize_t>iov[i].iov_len
            i += 1
        if k > 0:  # (part of iov[i] written: k is less than what was asked)
            iov[i].iov_base = <char*>iov[i].iov_base + k
            iov[i].iov_len -= <size_t>k
    return 0


cdef int _end_file(int dfd, int fd, const char* tmp, const char* name, int err,
                   bint refuse_links) noexcept nogil:
    """Close ``fd``; rename ``tmp`` over ``name`` when all went well (``err`` 0), else
    remove it.  0 or the ``errno`` (``ELOOP``, ``name`` untouched, when ``name`` is a
    symbolic link and ``refuse_links``).  A new ``name`` is renamed into place without a
    look at it first (``zf_rename_new``: one system call less per new file); an existing
    one is looked at, then replaced."""
    cdef struct_stat st
    if close(fd) != 0 and err == 0:
        err = errno
    if err == 0:
        if refuse_links:
            if zf_rename_new(dfd, tmp, name) == 0:
                return 0
            # (``name`` exists, or the system cannot rename only onto new names)
            if fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 and S_ISLNK(st.st_mode):
                err = ELOOP
        if err == 0 and renameat(dfd, tmp, dfd, name) != 0:
            err = errno
    if err != 0:
        unlinkat(dfd, tmp, 0)
    return err


cdef int _check_names(str func, const int64_t[::1] dir_fds, list tmp_names, list names,
                      Py_ssize_t n) except -1:
    """Raise unless there are ``n`` of each, the names single path components."""
    if len(tmp_names) != n or len(names) != n or dir_fds.shape[0] != n:
        raise ValueError(f"{func}: {len(names)} names but {len(tmp_names)} temporary names, "
                         f"{n} values and {dir_fds.shape[0]} directories")
    cdef object p
    cdef const char* c
    cdef Py_ssize_t i, k, size
    for i in range(n):
        for k in range(2):
            p = tmp_names[i] if k == 0 else names[i]
            if not isinstance(p, bytes):
                raise TypeError(f"{func}: name {i} is {type(p).__name__}, expected bytes")
            # (memchr: a generic `in` per name was 8% of a write of 4096 small files,
            # with the GIL held)
            c = PyBytes_AS_STRING(p)
            size = PyBytes_GET_SIZE(p)
            if size == 0 or memchr(c, 0, <size_t>size) != NULL or memchr(
                    c, 47, <size_t>size) != NULL:  # (47: '/')
                raise ValueError(f"{func}: name {p!r} is not one path component")
        if dir_fds[i] < 0:
            raise ValueError(f"{func}: directory {dir_fds[i]} of name {i} is not open")
    return 0


def write_files(const int64_t[::1] dir_fds not None, list tmp_names not None,
                list names not None, list values not None, bint refuse_links=True):
    """Write ``values[i]`` (any C-contiguous buffer) to the new file ``tmp_names[i]``
    (``O_CREAT | O_EXCL | O_NOFOLLOW``) in the directory ``dir_fds[i]``, then rename
    it over ``names[i]`` in that directory, for every ``i`` in one ``nogil`` loop:
    the atomic write of ``LocalStore.set`` without its per-file Python.  Names are
    single path components, resolved against the open directory, so the directory
    cannot be swapped for a symbolic link between the caller's check and the write.
    With ``refuse_links`` a ``names[i]`` that is a symbolic link is not written
    (``ELOOP``: the caller applies its own policy).

    Returns an int64 array: 0, or the ``errno`` of a failed write (its temporary
    file removed, ``names[i]`` untouched).

    Raises (before writing anything) ``ValueError``/``TypeError`` for lengths that
    differ or names that are not ``bytes``, contain NUL or ``/``, and
    ``BufferError`` for a value without a C-contiguous buffer.
    """
    tmp_names = list(tmp_names)  # our own lists: the loop keeps pointers into them
    names = list(names)
    values = list(values)
    cdef Py_ssize_t n = len(values), i, got = 0
    _check_names("write_files", dir_fds, tmp_names, names, n)
    errors_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] errs = errors_arr
    cdef Py_buffer* views = <Py_buffer*>PyMem_Malloc(max(n, 1) * sizeof(Py_buffer))
    cdef const char** ctmp = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    cdef const char** cpath = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    if views == NULL or ctmp == NULL or cpath == NULL:
        PyMem_Free(views)
        PyMem_Free(ctmp)
        PyMem_Free(cpath)
        raise MemoryError()
    cdef int fd, dfd
    cdef iovec one
    try:
        for i in range(n):
            try:
                PyObject_GetBuffer(values[i], &views[i], PyBUF_SIMPLE)  # C-contiguous bytes
            except (BufferError, ValueError, TypeError) as e:
                raise BufferError(
                    f"write_files: value {i} has no C-contiguous buffer ({e})") from None
            got += 1
            ctmp[i] = PyBytes_AS_STRING(tmp_names[i])
            cpath[i] = PyBytes_AS_STRING(names[i])
        with nogil:
            for i in range(n):
                dfd = <int>dir_fds[i]
                fd = _begin_file(dfd, ctmp[i])
                if fd < 0:
                    errs[i] = -fd
                    continue
                one.iov_base = views[i].buf
                one.iov_len = <size_t>views[i].len
                errs[i] = _end_file(dfd, fd, ctmp[i], cpath[i], _writev_all(fd, &one, 1),
                                     refuse_links)
    finally:
        for i in range(got):
            PyBuffer_Release(&views[i])
        PyMem_Free(views)
        PyMem_Free(ctmp)
        PyMem_Free(cpath)
    return errors_arr


cdef struct _Runs:
    # a region of `shape` read from a source with byte `strides`, as runs of `run` bytes
    # contiguous in the source: one run per index of the `nouter` outer dims
    int nouter
    int64_t run
    int64_t shape[ZF_MAX_NDIM]
    int64_t strides[ZF_MAX_NDIM]


cdef struct _Out:
    # what write_region_files has queued for one file: iovecs, the short runs among them
    # copied into `stage`, the iovec covering the staging buffer's tail (-1: none)
    int fd
    int err
    int cnt
    int tail
    int64_t staged
    iovec* iov
    uint8_t* stage


cdef inline void _out_flush(_Out* o) noexcept nogil:
    if o.err == 0 and o.cnt:
        o.err = _writev_all(o.fd, o.iov, o.cnt)
    o.cnt = 0
    o.tail = -1
    o.staged = 0


cdef inline void _out_direct(_Out* o, const void* p, size_t n) noexcept nogil:
    if o.cnt == ZF_IOV:
        _out_flush(o)
    o.iov[o.cnt].iov_base = <void*>p
    o.iov[o.cnt].iov_len = n
    o.cnt += 1
    o.tail = -1


cdef inline void _out_run(_Out* o, const uint8_t* p, int64_t n) noexcept nogil:
    if n >= ZF_DIRECT_RUN:
        _out_direct(o, p, <size_t>n)
        return
    if o.staged + n > ZF_STAGE:
        _out_flush(o)
    if o.tail < 0:
        if o.cnt == ZF_IOV:
            _out_flush(o)
        o.iov[o.cnt].iov_base = <void*>(o.stage + o.staged)
        o.iov[o.cnt].iov_len = 0
        o.tail = o.cnt
        o.cnt += 1
    if n <= 512 and n % 16 == 0:
        zf_copy_short(o.stage + o.staged, p, <size_t>n)
    else:
        memcpy(o.stage + o.staged, p, <size_t>n)
    o.iov[o.tail].iov_len += <size_t>n
    o.staged += n


cdef inline bint _next_run(_Runs* R, int64_t* idx, int64_t* pos) noexcept nogil:
    """Advance the odometer ``idx`` (and the byte position ``pos``) to the next run;
    False after the last."""
    cdef int d = R.nouter - 1
    while d >= 0:
        idx[d] += 1
        pos[0] += R.strides[d]
        if idx[d] < R.shape[d]:
            return True
        pos[0] -= R.strides[d] * R.shape[d]
        idx[d] = 0
        d -= 1
    return False


cdef bint _region_is_fill(const uint8_t* base, _Runs* R, const uint8_t* fill,
                          Py_ssize_t itemsize) noexcept nogil:
    """Whether every item of the region at ``base`` equals ``fill``: per run, its first
    item is ``fill`` and every byte equals the one an item before it (two ``memcmp``s,
    the first item's the usual answer)."""
    cdef int64_t idx[ZF_MAX_NDIM]
    cdef int64_t pos = 0
    cdef int d
    for d in range(R.nouter):
        idx[d] = 0
    while True:
        if memcmp(base + pos, fill, <size_t>itemsize) != 0:
            return False
        if R.run > itemsize and memcmp(base + pos, base + pos + itemsize,
                                       <size_t>(R.run - itemsize)) != 0:
            return False
        if not _next_run(R, idx, &pos):
            return True


def write_region_files(const int64_t[::1] dir_fds not None, list tmp_names not None,
                       list names not None, const uint8_t[::1] src not None,
                       const int64_t[:, ::1] src_offsets not None,
                       const int64_t[::1] src_strides not None,
                       const int64_t[::1] shape not None, Py_ssize_t itemsize,
                       fill=None, extra=None, bint extra_first=False,
                       bint refuse_links=True):
    """:func:`write_files` of values that are regions of ``src``, written from where
    they lie (``writev``, no copy): file ``i`` holds the regions at byte offsets
    ``src_offsets[i, 0]``, ``src_offsets[i, 1]``, ... of ``src``, one after the
    other, each of ``shape`` with byte ``src_strides`` in C order (the bytes
    ``copy_region`` would give a C-contiguous destination), then ``extra`` (any
    C-contiguous buffer, the same for every file), or ``extra`` first with
    ``extra_first``.  Uncompressed chunks written whole from an array, and shards
    of them followed by their index, thus need no buffer of their own: runs of
    ``ZF_DIRECT_RUN`` (4 KiB) or more contiguous bytes go to ``writev`` from where
    they lie, shorter ones through a staging buffer of 128 KiB that stays in cache.

    With ``fill`` (the bytes of one item) a file with a region whose every item
    equals ``fill`` is not written: its status is -1.

    Returns an int64 array: 0, -1 (a region of fill), or the ``errno`` of a failed
    write (its temporary file removed, ``names[i]`` untouched).

    Raises (before writing anything) as :func:`write_files` does for the names, and
    ``ValueError`` for an empty or too large rank, an empty dim, a source stride
    along the last dim other than ``itemsize`` (runs must be contiguous), a region
    outside ``src``, or ``fill`` not ``itemsize`` bytes.
    """
    tmp_names = list(tmp_names)
    names = list(names)
    # our own copy: the loop reads the offsets after they are checked, and another
    # thread changing the caller's array meanwhile must change nothing
    src_offsets = np.array(src_offsets, dtype=np.int64, order="C", copy=True)
    cdef Py_ssize_t n = src_offsets.shape[0], k = src_offsets.shape[1], i, r
    cdef int ndim = <int>shape.shape[0], d
    _check_names("write_region_files", dir_fds, tmp_names, names, n)
    if ndim < 1 or src_strides.shape[0] != ndim:
        raise ValueError(f"write_region_files: shape {_tup(shape)} and src_strides "
                         f"{_tup(src_strides)} must have the same length, at least 1")
    _check_shape("write_region_files", shape)
    if _is_empty(shape) or k < 1:
        raise ValueError(f"write_region_files: empty regions (shape {_tup(shape)}, "
                         f"{k} per file)")
    if itemsize < 1 or src_strides[ndim - 1] != itemsize:
        raise ValueError(f"write_region_files: the last src stride must be the itemsize "
                         f"{itemsize} (runs contiguous in src), got {_tup(src_strides)}")
    for i in range(n):
        for r in range(k):
            _check_span("write_region_files", "src", src.shape[0], src_offsets[i, r],
                        src_strides, shape, itemsize)
    cdef const uint8_t[::1] fill_b
    cdef const uint8_t* cfill = NULL
    if fill is not None:
        fill_b = fill
        _check_fill("write_region_files", fill_b, itemsize)
        cfill = &fill_b[0]
    cdef const uint8_t[::1] extra_b
    cdef iovec tail
    tail.iov_base = NULL
    tail.iov_len = 0
    if extra is not None:
        extra_b = extra
        if extra_b.shape[0]:
            tail.iov_base = <void*>&extra_b[0]
            tail.iov_len = <size_t>extra_b.shape[0]

    # runs: the trailing dims contiguous in src merged into one
    cdef _Runs R
    R.run = itemsize * shape[ndim - 1]
    d = ndim - 2
    while d >= 0 and src_strides[d] == R.run:
        R.run *= shape[d]
        d -= 1
    R.nouter = d + 1
    for d in range(R.nouter):
        R.shape[d] = shape[d]
        R.strides[d] = src_strides[d]
    # short runs far apart in src (a chunk's rows in a large array) are prefetched
    # ZF_PREFETCH_RUNS runs ahead, as strided_copy does: the hardware follows the
    # pattern poorly
    cdef int64_t pf = 0
    if R.nouter > 0 and R.run <= 512 and abs(src_strides[R.nouter - 1]) > 256:
        pf = ZF_PREFETCH_RUNS * src_strides[R.nouter - 1]

    errors_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] errs = errors_arr
    cdef const char** ctmp = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    cdef const char** cpath = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
    cdef _Out o
    o.iov = <iovec*>PyMem_Malloc(ZF_IOV * sizeof(iovec))
    o.stage = <uint8_t*>PyMem_Malloc(ZF_STAGE)
    if ctmp == NULL or cpath == NULL or o.iov == NULL or o.stage == NULL:
        PyMem_Free(ctmp)
        PyMem_Free(cpath)
        PyMem_Free(o.iov)
        PyMem_Free(o.stage)
        raise MemoryError()
    for i in range(n):
        ctmp[i] = PyBytes_AS_STRING(tmp_names[i])
        cpath[i] = PyBytes_AS_STRING(names[i])
    cdef const uint8_t* base = &src[0]
    cdef int64_t idx[ZF_MAX_NDIM]
    cdef int64_t pos
    cdef int fd, dfd
    cdef bint filled
    try:
        with nogil:
            for i in range(n):
                if cfill != NULL:
                    filled = False
                    for r in range(k):
                        if _region_is_fill(base + src_offsets[i, r], &R, cfill, itemsize):
                            filled = True
                            break
                    if filled:
                        errs[i] = -1
                        continue
                dfd = <int>dir_fds[i]
                fd = _begin_file(dfd, ctmp[i])
                if fd < 0:
                    errs[i] = -fd
                    continue
                o.fd = fd
                o.err = 0
                o.cnt = 0
                o.tail = -1
                o.staged = 0
                if extra_first and tail.iov_len:
                    _out_direct(&o, tail.iov_base, tail.iov_len)
                for r in range(k):
                    for d in range(R.nouter):
                        idx[d] = 0
                    pos = src_offsets[i, r]
                    while o.err == 0:
                        if pf != 0:
                            zf_prefetch_run(base + pos + pf, <size_t>R.run)
                        _out_run(&o, base + pos, R.run)
                        if not _next_run(&R, idx, &pos):
                            break
                    if o.err:
                        break
                if not extra_first and tail.iov_len:
                    _out_direct(&o, tail.iov_base, tail.iov_len)
                _out_flush(&o)
                errs[i] = _end_file(dfd, fd, ctmp[i], cpath[i], o.err, refuse_links)
    finally:
        PyMem_Free(ctmp)
        PyMem_Free(cpath)
        PyMem_Free(o.iov)
        PyMem_Free(o.stage)
    return errors_arr


cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MAP_ANONYMOUS
    #define MAP_ANONYMOUS MAP_ANON
    #endif
    #define ZF_HUGE ((size_t)2 << 20)
    /* `size` bytes of fresh anonymous pages starting on a 2 MiB boundary (with `huge`,
       huge pages advised where the system has them), inside a mapping at *base of
       *total bytes; NULL when out of memory. */
    static uint8_t* zf_pages(size_t size, int huge, void** base, size_t* total) {
        uintptr_t start;
        void* p;
        if (size > (size_t)-1 - ZF_HUGE) return NULL;
        *total = size + ZF_HUGE;
        p = mmap(NULL, *total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        *base = p;
        start = ((uintptr_t)p + ZF_HUGE - 1) & ~(uintptr_t)(ZF_HUGE - 1);
    #ifdef MADV_HUGEPAGE
        if (huge)
            (void)madvise((void*)start, size, MADV_HUGEPAGE);
    #endif
        return (uint8_t*)start;
    }

    /* Mappings of results (and scratch buffers) that went, kept for the next of the
       same size: its pages are then already there (no page faults, no zeroing by the
       system: a third of a one-thread read of 256 MiB here).  At most ZF_KEPT_SLOTS
       mappings (a read's result and two threads' write buffers fit), at most
       `limit` bytes in all (the caller's), the oldest given back first; each is
       MADV_FREE'd when kept, so under memory pressure the system takes its pages
       back (a later touch then gets zeroed pages, as a fresh mapping would). */
    #include <pthread.h>
    #define ZF_KEPT_SLOTS 8
    typedef struct { void* base; uint8_t* data; size_t total; size_t size; uint64_t age; } zf_kept_t;
    static zf_kept_t zf_kept[ZF_KEPT_SLOTS];
    static size_t zf_kept_bytes = 0;
    static uint64_t zf_kept_clock = 0;
    static pthread_mutex_t zf_kept_lock = PTHREAD_MUTEX_INITIALIZER;
    static pthread_once_t zf_kept_once = PTHREAD_ONCE_INIT;

    /* a forked child has only the forking thread: the lock may have been held by
       another (a few stores long, never around a system call), so it starts anew */
    static void zf_kept_after_fork(void) {
        pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        zf_kept_lock = lock;
    }

    static void zf_kept_register(void) {
        (void)pthread_atfork(NULL, NULL, zf_kept_after_fork);
    }

    static void zf_kept_acquire(void) {
        pthread_once(&zf_kept_once, zf_kept_register);
        pthread_mutex_lock(&zf_kept_lock);
    }

    /* a kept mapping of exactly `size` bytes (taken out of the cache), or NULL */
    static uint8_t* zf_pages_take(size_t size, void** base, size_t* total) {
        uint8_t* data = NULL;
        int i;
        zf_kept_acquire();
        for (i = 0; i < ZF_KEPT_SLOTS; i++) {
            if (zf_kept[i].base != NULL && zf_kept[i].size == size) {
                *base = zf_kept[i].base;
                *total = zf_kept[i].total;
                data = zf_kept[i].data;
                zf_kept_bytes -= zf_kept[i].total;
                zf_kept[i].base = NULL;
                break;
            }
        }
        pthread_mutex_unlock(&zf_kept_lock);
        return data;
    }

    /* Keep a mapping (base == NULL: none) and give back the oldest kept ones until at
       most `limit` bytes are kept in at most ZF_KEPT_SLOTS mappings; the mapping itself
       is given back if it does not fit.  Unmaps outside the lock. */
    static void zf_pages_keep(void* base, uint8_t* data, size_t total, size_t size,
                              size_t limit) {
        void* drop[ZF_KEPT_SLOTS + 1];
        size_t drop_len[ZF_KEPT_SLOTS + 1];
        int ndrop = 0, i, oldest, free_slot;
        if (base != NULL && total > limit) {
            munmap(base, total);
            base = NULL;
        }
    #ifdef MADV_FREE
        if (base != NULL)
            (void)madvise(base, total, MADV_FREE);
    #endif
        zf_kept_acquire();
        for (;;) {
            free_slot = -1;
            oldest = -1;
            for (i = 0; i < ZF_KEPT_SLOTS; i++) {
                if (zf_kept[i].base == NULL) {
                    if (free_slot < 0) free_slot = i;
                } else if (oldest < 0 || zf_kept[i].age < zf_kept[oldest].age) {
                    oldest = i;
                }
            }
            if (oldest >= 0 && (zf_kept_bytes + (base != NULL ? total : 0) > limit
                                || (base != NULL && free_slot < 0))) {
                drop[ndrop] = zf_kept[oldest].base;
                drop_len[ndrop++] = zf_kept[oldest].total;
                zf_kept_bytes -= zf_kept[oldest].total;
                zf_kept[oldest].base = NULL;
                continue;
            }
            break;
        }
        if (base != NULL) {
            zf_kept[free_slot].base = base;
            zf_kept[free_slot].data = data;
            zf_kept[free_slot].total = total;
            zf_kept[free_slot].size = size;
            zf_kept[free_slot].age = ++zf_kept_clock;
            zf_kept_bytes += total;
        }
        pthread_mutex_unlock(&zf_kept_lock);
        for (i = 0; i < ndrop; i++)
            munmap(drop[i], drop_len[i]);
    }

    static void zf_pages_kept(size_t* count, size_t* bytes) {
        int i;
        zf_kept_acquire();
        *count = 0;
        for (i = 0; i < ZF_KEPT_SLOTS; i++)
            if (zf_kept[i].base != NULL) (*count)++;
        *bytes = zf_kept_bytes;
        pthread_mutex_unlock(&zf_kept_lock);
    }
    """
    uint8_t* zf_pages(size_t size, int huge, void** base, size_t* total) noexcept nogil
    uint8_t* zf_pages_take(size_t size, void** base, size_t* total) noexcept nogil
    void zf_pages_keep(void* base, uint8_t* data, size_t total, size_t size,
                       size_t limit) noexcept nogil
    void zf_pages_kept(size_t* count, size_t* bytes) noexcept nogil
    int munmap(void* addr, size_t length) noexcept nogil


cdef class PageBuffer:
    """``size`` bytes of anonymous pages starting on a 2 MiB boundary, with ``huge``
    huge pages advised, as NumPy does for large arrays; a writable buffer
    (``np.frombuffer``).
    Its contents are undefined, as ``np.empty``'s: fresh pages (zeroed by the system on
    first touch) or, with ``keep``, the pages of an earlier buffer of the same size.
    What it does not share with ``np.empty``: its pages go back without the GIL
    (``munmap`` of a result of hundreds of MiB takes ~1 ms, which other threads may
    use), and with ``keep`` > 0 they are kept for the next buffer of the same size
    while at most ``keep`` bytes are kept in all (see :func:`kept_pages`).  Raises
    ``MemoryError`` when the system refuses the mapping."""

    cdef void* base
    cdef uint8_t* data
    cdef size_t total
    cdef size_t keep
    cdef readonly Py_ssize_t nbytes

    def __cinit__(self, Py_ssize_t size, Py_ssize_t keep=0, bint huge=True):
        if size <= 0:
            raise ValueError(f"PageBuffer: size {size} is not positive")
        if keep < 0:
            raise ValueError(f"PageBuffer: keep {keep} is negative")
        self.keep = <size_t>keep
        self.data = zf_pages_take(<size_t>size, &self.base, &self.total)
        if self.data == NULL:
            self.data = zf_pages(<size_t>size, huge, &self.base, &self.total)
        if self.data == NULL:
            self.base = NULL
            raise MemoryError(f"PageBuffer: no mapping of {size} bytes")
        self.nbytes = size

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.data, self.nbytes, 0, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass

    def __dealloc__(self):
        cdef void* base = self.base
        cdef size_t total = self.total
        self.base = NULL
        if base != NULL:
            with nogil:  # (keep 0: given back, and so are the kept ones)
                zf_pages_keep(base, self.data, total, <size_t>self.nbytes, self.keep)


def kept_pages():
    """``(mappings, bytes)`` kept by ``PageBuffer`` for reuse."""
    cdef size_t count, nbytes
    zf_pages_kept(&count, &nbytes)
    return int(count), int(nbytes)


def release_kept_pages(Py_ssize_t limit=0):
    """Give back the kept mappings (the oldest first) until at most ``limit`` bytes
    are kept."""
    if limit < 0:
        raise ValueError(f"release_kept_pages: limit {limit} is negative")
    with nogil:
        zf_pages_keep(NULL, NULL, 0, 0, <size_t>limit)
