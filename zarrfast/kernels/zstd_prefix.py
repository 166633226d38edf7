"""The first bytes of zstd frames, without decoding the rest: :func:`decode_prefixes`.

A gather that needs only the first rows of a chunk (its selected elements all lie in
the first ``need`` bytes of the decoded chunk) decodes its zstd frame with
``ZSTD_decompressStream`` into an output of ``need`` bytes: zstd stops after the block
(at most 128 KiB) holding the last of them, where a whole-frame decode undoes every
block.  The library is numcodecs' (its extension module exports zstd's API), called
through ``ctypes``, which releases the GIL during each call: threads decode at once.

``available`` is false in pure-Python mode (``ZARRFAST_PURE_PYTHON=1``) or when no
library exports the functions; callers then decode whole chunks.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np

__all__ = ["available", "decode_prefixes"]

#: statuses, as the batched decoders give them (``kernels.DECODED`` ...)
DECODED, NO_DATA, FAILED = 0, 1, 2

_CONTENTSIZE_UNKNOWN = 2**64 - 1
_CONTENTSIZE_ERROR = 2**64 - 2
_RESET_SESSION_ONLY = 1
_RESET_SESSION_AND_PARAMETERS = 3
_WINDOWLOG_MAX = 100  # ZSTD_d_windowLogMax


class _Buffer(ctypes.Structure):
    # ZSTD_inBuffer and ZSTD_outBuffer: (pointer, size, pos)
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


_FUNCTIONS = ("ZSTD_createDStream", "ZSTD_freeDStream", "ZSTD_decompressStream",
              "ZSTD_DCtx_reset", "ZSTD_DCtx_setParameter", "ZSTD_isError",
              "ZSTD_getFrameContentSize")


def _load() -> Any:
    """numcodecs' zstd library, bound with ctypes; ``None`` when unusable."""
    if os.environ.get("ZARRFAST_PURE_PYTHON") == "1":
        return None
    try:
        import numcodecs.zstd

        lib = ctypes.CDLL(numcodecs.zstd.__file__)
    except (ImportError, OSError):  # pragma: no cover - numcodecs is a dependency
        return None
    if not all(hasattr(lib, name) for name in _FUNCTIONS):  # pragma: no cover
        return None
    lib.ZSTD_createDStream.restype = ctypes.c_void_p
    lib.ZSTD_createDStream.argtypes = []
    lib.ZSTD_freeDStream.restype = ctypes.c_size_t
    lib.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
    lib.ZSTD_decompressStream.restype = ctypes.c_size_t
    lib.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Buffer),
                                          ctypes.POINTER(_Buffer)]
    lib.ZSTD_DCtx_reset.restype = ctypes.c_size_t
    lib.ZSTD_DCtx_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.ZSTD_DCtx_setParameter.restype = ctypes.c_size_t
    lib.ZSTD_DCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.ZSTD_isError.restype = ctypes.c_uint
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    lib.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    lib.ZSTD_getFrameContentSize.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


_lib = _load()
#: whether :func:`decode_prefixes` can run
available = _lib is not None


class _Stream:
    """One thread's decompression stream (freed with it)."""

    def __init__(self) -> None:
        assert _lib is not None
        self.ptr = _lib.ZSTD_createDStream()
        if not self.ptr:  # pragma: no cover - out of memory
            raise MemoryError("ZSTD_createDStream failed")
        self.inp = _Buffer()
        self.out = _Buffer()
        self.inp_ref = ctypes.byref(self.inp)
        self.out_ref = ctypes.byref(self.out)

    def __del__(self) -> None:
        if _lib is not None and self.ptr:
            _lib.ZSTD_freeDStream(self.ptr)
            self.ptr = None


class _Local(threading.local):
    stream: _Stream | None = None


_local = _Local()


def decode_prefixes(src: np.ndarray, src_offsets: np.ndarray, src_sizes: np.ndarray,
                    dst: np.ndarray, dst_offsets: np.ndarray, needs: np.ndarray,
                    nbytes: int) -> np.ndarray:
    """Decode the first ``needs[r]`` bytes of the zstd frame ``r`` (bytes
    ``src[src_offsets[r]:][:src_sizes[r]]``) into ``dst[dst_offsets[r]:][:needs[r]]``.

    Each frame must declare a content size of ``nbytes`` (the chunk's) and ``needs[r]``
    be at most that.  Returns an int8 array of statuses: ``DECODED``; ``NO_DATA`` (a
    negative size: nothing done); ``FAILED`` (a frame that does not declare ``nbytes``,
    or does not decode: ``dst``'s bytes for it are undefined; the caller decodes it
    whole, which says why).

    Raises ``ValueError`` when lengths differ or a range lies outside ``src`` or
    ``dst`` (checked before anything is written).
    """
    assert _lib is not None, "zstd_prefix: not available"
    n = len(src_offsets)
    if not (len(src_sizes) == len(dst_offsets) == len(needs) == n):
        raise ValueError("decode_prefixes: src_offsets, src_sizes, dst_offsets and needs "
                         "must have the same length")
    if src.dtype != np.uint8 or dst.dtype != np.uint8 or not (
            src.flags.c_contiguous and dst.flags.c_contiguous and dst.flags.writeable):
        raise ValueError("decode_prefixes: src and dst must be contiguous uint8 arrays, "
                         "dst writeable")
    src_offsets, src_sizes, dst_offsets, needs = (
        np.asarray(x, dtype=np.int64) for x in (src_offsets, src_sizes, dst_offsets, needs))
    used = src_sizes >= 0
    if n and (np.any(used & ((src_offsets < 0) | (src_offsets + src_sizes > src.size)))
              or np.any((needs < 0) | (needs > nbytes) | (dst_offsets < 0)
                        | (dst_offsets + needs > dst.size))):
        raise ValueError("decode_prefixes: a range lies outside src or dst")
    status = np.full(n, DECODED, dtype=np.int8)
    status[~used] = NO_DATA
    stream = _local.stream
    if stream is None:
        stream = _local.stream = _Stream()
    lib, ptr, inp, out = _lib, stream.ptr, stream.inp, stream.out
    # a frame whose window is larger than the chunk needs more memory than decoding it
    # can take: refused (FAILED), the whole-chunk decode says why
    lib.ZSTD_DCtx_reset(ptr, _RESET_SESSION_AND_PARAMETERS)
    if lib.ZSTD_isError(lib.ZSTD_DCtx_setParameter(
            ptr, _WINDOWLOG_MAX, max(10, min(31, (nbytes - 1).bit_length())))):
        raise RuntimeError("zstd: cannot bound the window of a decompression stream")
    inp_ref, out_ref = stream.inp_ref, stream.out_ref
    src_base, dst_base = src.ctypes.data, dst.ctypes.data
    for r, (so, size, do, need) in enumerate(zip(
            src_offsets.tolist(), src_sizes.tolist(), dst_offsets.tolist(), needs.tolist(),
            strict=True)):
        if size < 0:
            continue
        if lib.ZSTD_getFrameContentSize(src_base + so, size) != nbytes:
            status[r] = FAILED
            continue
        lib.ZSTD_DCtx_reset(ptr, _RESET_SESSION_ONLY)
        inp.ptr, inp.size, inp.pos = src_base + so, size, 0
        out.ptr, out.size, out.pos = dst_base + do, need, 0
        while out.pos < need:
            before = (inp.pos, out.pos)
            hint = lib.ZSTD_decompressStream(ptr, out_ref, inp_ref)
            if lib.ZSTD_isError(hint):
                status[r] = FAILED
                break
            if out.pos < need and (hint == 0 or (inp.pos, out.pos) == before):
                status[r] = FAILED  # the frame ended (or stalled) before `need` bytes
                break
    return status
