"""Buffers the engine and codecs allocate, with a named error when memory runs out.

``np.empty`` raises a bare ``MemoryError`` (NumPy's message names the size, shape and
dtype but not what for, nor which array); :func:`empty` raises an
:class:`~zarrfast.errors.AllocationError` (also a ``MemoryError``) whose message says
where (the node or the chunk key), what the buffer was for, its bytes, shape and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.errors import AllocationError

__all__ = ["allocation_error", "empty", "human_bytes"]


def human_bytes(n: int) -> str:
    """``n`` bytes in binary units: ``'8.0 GiB'``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    if type(shape) is tuple:  # (a tuple of Python ints, as a read's result has: itself)
        for s in shape:
            if type(s) is not int:
                break
        else:
            return shape
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def allocation_error(where: str, what: str, shape: int | Sequence[int], dtype: Any,
                     error: type[AllocationError] = AllocationError,
                     detail: str = "") -> AllocationError:
    """The error for a buffer of ``shape`` and ``dtype`` that could not be allocated
    (``where``: the node or chunk key, or ``""`` when the caller names the node)."""
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    return error(f"{where + ': ' if where else ''}out of memory allocating {what}: "
                 f"{nbytes} bytes ({human_bytes(nbytes)}) for shape {shape} of dtype {dtype}"
                 f"{detail}")


#: results of at least this many bytes start on a cache line (``empty(..., aligned=True)``)
ALIGN_MIN_BYTES = 2**20
#: results of at least this many bytes are pages of their own (``kernels.PageBuffer``):
#: freeing a result of 256 MiB took 0.6-1.2 ms with the GIL held, a third to a half of
#: all the GIL a full read of 100 ms holds; and the pages of one that went are kept
#: for the next of the same size (config ``result_page_cache``): faulting in and
#: zeroing fresh pages took a third of a one-thread read of 256 MiB of blosc chunks
PAGES_MIN_BYTES = 32 * 2**20
#: the cache line the kernels' streaming stores write whole (see ``_common.pxd``)
CACHE_LINE = 64
#: scratch buffers of at least this many bytes asked for with ``reuse`` are pages of
#: their own kept for the next buffer of the same size when they go: each write of a
#: new array (a new chain) otherwise faulted in its per-thread buffers afresh, 16 MiB
#: of compressed chunks and 5 MiB of gathered ones per thread for the blosc layout of
#: the harness, 50-100 ms of system time in a 300-450 ms one-thread write here
REUSE_MIN_BYTES = 4 * 2**20
#: whether those scratch buffers ask for huge pages too, as results do.  They do not:
#: a huge page is 2 MiB of memory the system may have to find whole.  Here (a VM), the
#: first blosc write of a process copied and compressed its chunks in 255-325 ms (two
#: threads' times summed) with its 36 MiB of fresh scratch pages as 18 huge pages, in
#: 182-221 ms as 4 KiB pages, and the writes after it in 150-216 ms either way (they
#: reuse the kept pages)
SCRATCH_HUGE_PAGES = False


def empty(shape: int | Sequence[int], dtype: Any = np.uint8, *, where: str, what: str,
          logical: tuple[Sequence[int], Any] | None = None,
          error: type[AllocationError] = AllocationError, aligned: bool = False,
          reuse: bool = False) -> np.ndarray:
    """``np.empty(shape, dtype)``, or ``error`` naming ``where`` and ``what``.

    ``logical``: the ``(shape, dtype)`` the message gives for a flat byte buffer that
    holds an array (a chunk's bytes).  ``aligned``: a buffer of at least
    ``ALIGN_MIN_BYTES`` starts on a 64-byte cache line (a view into a slightly larger
    allocation: ``malloc`` puts large blocks 16 bytes past a page), so that the rows
    a full read copies into it fill whole cache lines, which the decode kernels then
    write with streaming stores.  One of at least ``PAGES_MIN_BYTES`` is pages of its
    own (``kernels.PageBuffer``, where compiled), given back without the GIL when the
    array goes, or kept for the next such buffer of the same size (config
    ``result_page_cache``): like ``np.empty``'s, its contents are undefined.
    ``reuse``: a scratch buffer of at least ``REUSE_MIN_BYTES`` is such pages too,
    kept for the next scratch buffer of its size."""
    try:
        if aligned or reuse:
            dt = np.dtype(dtype)
            shape_t = _shape(shape)
            nbytes = math.prod(shape_t) * dt.itemsize
            if not dt.hasobject:
                if nbytes >= (PAGES_MIN_BYTES if aligned else REUSE_MIN_BYTES):
                    from zarrfast.kernels import PageBuffer

                    if PageBuffer is not None:
                        keep = config.get("result_page_cache")
                        pages = np.frombuffer(
                            PageBuffer(nbytes, keep, aligned or SCRATCH_HUGE_PAGES),
                            dtype=np.uint8)
                        return pages.view(dt).reshape(shape_t)
                if aligned and nbytes >= ALIGN_MIN_BYTES:
                    raw = np.empty(nbytes + CACHE_LINE, dtype=np.uint8)
                    skip = -raw.ctypes.data % CACHE_LINE
                    return raw[skip:skip + nbytes].view(dt).reshape(shape_t)
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError, OverflowError) as e:
        # (NumPy refuses more than the address space can hold with "array is too big";
        # a byte count beyond 2**63-1, a result of a (2**40, 2**40) array, overflows
        # PageBuffer's Py_ssize_t)
        if isinstance(e, ValueError) and "too big" not in str(e):
            raise
        s, d = logical if logical is not None else (shape, dtype)
        raise allocation_error(where, what, s, d, error) from None
