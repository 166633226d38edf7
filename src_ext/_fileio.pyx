# cython: language_level=3
"""Batched local file reads for chunk files (POSIX only).

``read_files_into`` opens, sizes and reads many files into one buffer in a
single ``nogil`` loop: per file it costs the four system calls (open, fstat,
pread, close) and nothing from the interpreter, which is what a chunk file of
a few KiB needs to come near the page-cache floor.

All arguments are validated with the GIL before the loop; the loop never
writes outside ``dst``.

Twin: ``zarrfast._reference.read_files_into``.
"""

from cpython.bytes cimport PyBytes_AS_STRING
from libc.errno cimport EINTR, EISDIR, errno
from libc.stdint cimport int64_t, uint8_t
from posix.fcntl cimport O_RDONLY, open
from posix.stat cimport S_ISREG, fstat, struct_stat
from posix.types cimport off_t
from posix.unistd cimport close, pread

from cpython.mem cimport PyMem_Free, PyMem_Malloc

import numpy as np

cdef extern from "fcntl.h":
    int O_CLOEXEC


def read_files_into(list paths not None, uint8_t[::1] dst not None,
                    const int64_t[::1] offsets not None, int64_t nbytes, bint exact=True):
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
    cdef struct_stat st
    cdef int64_t got, want
    cdef Py_ssize_t k
    try:
        with nogil:
            for i in range(n):
                fd = open(cpaths[i], O_RDONLY | O_CLOEXEC)
                if fd < 0:
                    errs[i] = errno
                    continue
                if fstat(fd, &st) != 0:
                    errs[i] = errno
                    close(fd)
                    continue
                if not S_ISREG(st.st_mode):
                    errs[i] = EISDIR
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
    return sizes_arr, errors_arr
