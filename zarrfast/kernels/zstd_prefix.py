"""The first bytes of zstd frames, without decoding the rest: :func:`decode_prefixes`.

A gather that needs only the first rows of a chunk (its selected elements all lie in
the first ``need`` bytes of the decoded chunk) decodes its zstd frame a block at a time
with zstd's buffer-less API (``ZSTD_decompressBegin``, ``ZSTD_nextSrcSizeToDecompress``,
``ZSTD_decompressContinue``), straight into the chunk's place, and stops after the
block (at most 128 KiB) holding the last of them, where a whole-frame decode undoes
every block.  The library is numcodecs' (its extension module exports zstd's API).  The
compiled kernel ``zarrfast._ext._zstd_prefix`` (bound to the library's functions by
their addresses, found with ``ctypes``) decodes a whole batch in one call without the
GIL; without it (the extensions not built), zstd is called through ``ctypes`` once per
block: ``ZSTD_decompressContinue`` then releases the GIL and takes it back for each
block, which threads wait for under contention.

``available`` is false in pure-Python mode (``ZARRFAST_PURE_PYTHON=1``) or when no
library exports the functions; callers then decode whole chunks.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np

__all__ = ["FILES", "IMPLEMENTATION", "available", "decode_prefix_blobs", "decode_prefix_files",
           "decode_prefixes"]

#: statuses, as the batched decoders give them (``kernels.DECODED`` ...)
DECODED, NO_DATA, FAILED = 0, 1, 2

_FUNCTIONS = ("ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_decompressBegin",
              "ZSTD_nextSrcSizeToDecompress", "ZSTD_decompressContinue", "ZSTD_isError",
              "ZSTD_getFrameContentSize", "ZSTD_findFrameCompressedSize")


def _load() -> tuple[Any, Any] | None:
    """numcodecs' zstd library, bound with ctypes twice: calls that release the GIL
    (``CDLL``) and calls that keep it (``PyDLL``: header reads, cheaper than giving it
    up); ``None`` when unusable."""
    if os.environ.get("ZARRFAST_PURE_PYTHON") == "1":
        return None
    try:
        import numcodecs.zstd

        path = numcodecs.zstd.__file__
        lib, keep = ctypes.CDLL(path), ctypes.PyDLL(path)
    except (ImportError, OSError):  # pragma: no cover - numcodecs is a dependency
        return None
    if not all(hasattr(lib, name) for name in _FUNCTIONS):  # pragma: no cover
        return None
    p, size = ctypes.c_void_p, ctypes.c_size_t
    for handle in (lib, keep):
        handle.ZSTD_createDCtx.restype = p
        handle.ZSTD_createDCtx.argtypes = []
        handle.ZSTD_freeDCtx.restype = size
        handle.ZSTD_freeDCtx.argtypes = [p]
        handle.ZSTD_decompressBegin.restype = size
        handle.ZSTD_decompressBegin.argtypes = [p]
        handle.ZSTD_nextSrcSizeToDecompress.restype = size
        handle.ZSTD_nextSrcSizeToDecompress.argtypes = [p]
        handle.ZSTD_decompressContinue.restype = size
        handle.ZSTD_decompressContinue.argtypes = [p, p, size, p, size]
        handle.ZSTD_isError.restype = ctypes.c_uint
        handle.ZSTD_isError.argtypes = [size]
        handle.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
        handle.ZSTD_getFrameContentSize.argtypes = [p, size]
        handle.ZSTD_findFrameCompressedSize.restype = size
        handle.ZSTD_findFrameCompressedSize.argtypes = [p, size]
    return lib, keep


_libs = _load()
#: whether :func:`decode_prefixes` can run
available = _libs is not None


def _load_kernel() -> Any:
    """``zarrfast._ext._zstd_prefix`` bound to the library's functions, or ``None``
    (the extensions not built, or pure-Python mode)."""
    if _libs is None:
        return None
    try:
        from zarrfast._ext import _zstd_prefix as ext
    except ImportError:  # pragma: no cover - the extensions are built
        return None
    lib = _libs[0]
    ext.bind(*(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
               for name in _FUNCTIONS))
    return ext


_kernel = _load_kernel()
#: which code decodes: ``"kernel"`` (one call per batch, no GIL), ``"ctypes"`` (one
#: call per block), ``None`` (not available)
IMPLEMENTATION = "kernel" if _kernel is not None else "ctypes" if available else None
#: whether :func:`decode_prefix_files` can run (the compiled kernel, on a POSIX system)
FILES = _kernel is not None and os.name == "posix"
#: a block's content is decoded by a call that releases the GIL from this size on
_RELEASE_MIN = 4096


class _Context:
    """One thread's decompression context (freed with it)."""

    def __init__(self) -> None:
        assert _libs is not None
        self.ptr = _libs[1].ZSTD_createDCtx()
        if not self.ptr:  # pragma: no cover - out of memory
            raise MemoryError("ZSTD_createDCtx failed")

    def __del__(self) -> None:
        if _libs is not None and self.ptr:
            _libs[1].ZSTD_freeDCtx(self.ptr)
            self.ptr = None


class _Local(threading.local):
    context: _Context | None = None
    kernel_context: Any = None


_local = _Local()


def decode_prefixes(src: np.ndarray, src_offsets: np.ndarray, src_sizes: np.ndarray,
                    dst: np.ndarray, dst_offsets: np.ndarray, needs: np.ndarray,
                    nbytes: int, *, force_ctypes: bool = False) -> np.ndarray:
    """Decode at least the first ``needs[r]`` bytes of the zstd frame ``r`` (bytes
    ``src[src_offsets[r]:][:src_sizes[r]]``) into ``dst[dst_offsets[r]:][:nbytes]``,
    block by block, stopping after the block that holds byte ``needs[r] - 1``.

    Each frame must declare a content size of ``nbytes`` (the chunk's), and ``needs[r]``
    be at most that.  Nothing is written outside each frame's ``nbytes`` of ``dst``,
    nothing read outside its bytes of ``src``.  Returns an int8 array of statuses:
    ``DECODED``; ``NO_DATA`` (a negative size: nothing done); ``FAILED`` (a frame that
    does not declare ``nbytes``, carries a content checksum (a prefix cannot check it),
    is not exactly its bytes (cut short, or followed by other bytes: its block headers
    are walked, nothing decoded; its first blocks would read as data), or does not
    decode: its bytes of ``dst`` are undefined; the caller decodes it whole, which says
    why).

    Raises ``ValueError`` when lengths differ or a range lies outside ``src`` or
    ``dst`` (checked before anything is written).  The batch is decoded by the compiled
    kernel in one call without the GIL, or (``force_ctypes``, or the kernel not built)
    through ``ctypes``, a call per block: the two give the same bytes and statuses.
    """
    assert _libs is not None, "zstd_prefix: not available"
    lib, keep = _libs
    n = len(src_offsets)
    if not (len(src_sizes) == len(dst_offsets) == len(needs) == n):
        raise ValueError("decode_prefixes: src_offsets, src_sizes, dst_offsets and needs "
                         "must have the same length")
    if src.dtype != np.uint8 or dst.dtype != np.uint8 or not (
            src.flags.c_contiguous and dst.flags.c_contiguous and dst.flags.writeable):
        raise ValueError("decode_prefixes: src and dst must be contiguous uint8 arrays, "
                         "dst writeable")
    src_offsets, src_sizes, dst_offsets, needs = (np.ascontiguousarray(x, dtype=np.int64)
                                                  for x in (src_offsets, src_sizes,
                                                            dst_offsets, needs))
    used = src_sizes >= 0
    if n and (np.any(used & ((src_offsets < 0) | (src_offsets + src_sizes > src.size)))
              or np.any((needs < 0) | (needs > nbytes) | (dst_offsets < 0)
                        | (dst_offsets + nbytes > dst.size))):
        raise ValueError("decode_prefixes: a range lies outside src or dst")
    status = np.full(n, DECODED, dtype=np.int8)
    # A frame with a content checksum (its header's Content_Checksum_flag) is FAILED
    # without decoding: a prefix stops before the checksum, so damage a whole decode
    # refuses would be read as data; the caller decodes it whole, which checks it.
    head = src_offsets[used & (src_sizes >= 5)] + 4
    checked = np.zeros(n, dtype=bool)
    checked[np.flatnonzero(used & (src_sizes >= 5))] = (src[head] & 0x04) != 0
    if checked.any():
        src_sizes = np.where(checked, -1, src_sizes)
        used = used & ~checked
    if _kernel is not None and not force_ctypes:
        context = _local.kernel_context
        if context is None:
            context = _local.kernel_context = _kernel.Context()
        _kernel.decode_prefixes(context, src, src_offsets, src_sizes, dst, dst_offsets, needs,
                                nbytes, status)
        status[checked] = FAILED
        return status
    status[~used] = NO_DATA
    status[checked] = FAILED
    context = _local.context
    if context is None:
        context = _local.context = _Context()
    ctx = context.ptr
    begin, next_size, is_error = (keep.ZSTD_decompressBegin, keep.ZSTD_nextSrcSizeToDecompress,
                                  keep.ZSTD_isError)
    decode, decode_small = lib.ZSTD_decompressContinue, keep.ZSTD_decompressContinue
    content_size, frame_size = keep.ZSTD_getFrameContentSize, keep.ZSTD_findFrameCompressedSize
    src_base, dst_base = src.ctypes.data, dst.ctypes.data
    for r, (so, size, do, need) in enumerate(zip(
            src_offsets.tolist(), src_sizes.tolist(), dst_offsets.tolist(), needs.tolist(),
            strict=True)):
        if size < 0:
            continue
        ip, iend = src_base + so, src_base + so + size
        # (only a frame exactly its bytes: see the docstring)
        whole = frame_size(ip, size)
        if (content_size(ip, size) != nbytes or is_error(whole) or whole != size
                or is_error(begin(ctx))):
            status[r] = FAILED
            continue
        op = ostart = dst_base + do
        oend = ostart + nbytes
        while op - ostart < need:
            k = next_size(ctx)
            if k == 0 or ip + k > iend:  # (the frame ended early, or is cut short)
                status[r] = FAILED
                break
            got = (decode if k >= _RELEASE_MIN else decode_small)(ctx, op, oend - op, ip, k)
            if is_error(got):
                status[r] = FAILED
                break
            ip += k
            op += got
    return status


def decode_prefix_blobs(blobs: list[Any], dst: np.ndarray, dst_offsets: np.ndarray,
                        needs: np.ndarray, nbytes: int) -> np.ndarray:
    """:func:`decode_prefixes` of separate zstd frames (``blobs``: bytes-like values, or
    ``None`` for a missing one, whose status is ``NO_DATA``), as fetched one value per
    request from a remote store, each decoded where it lies (the compiled kernel's
    ``decode_prefix_list``: one call without the GIL; without the kernel, the frames
    are copied back to back into one buffer first).  A frame carrying a content
    checksum is ``FAILED`` without decoding (see :func:`decode_prefixes`).  Returns the
    statuses, as :func:`decode_prefixes` does; raises ``ValueError`` when lengths
    differ, a destination lies outside ``dst`` or a value is not a buffer of bytes."""
    assert _libs is not None, "zstd_prefix: not available"
    n = len(blobs)
    dst_offsets, needs = (np.ascontiguousarray(x, dtype=np.int64) for x in (dst_offsets, needs))
    if not (len(dst_offsets) == len(needs) == n):
        raise ValueError("decode_prefix_blobs: blobs, dst_offsets and needs must have the "
                         "same length")
    if dst.dtype != np.uint8 or not (dst.flags.c_contiguous and dst.flags.writeable):
        raise ValueError("decode_prefix_blobs: dst must be a contiguous, writeable uint8 "
                         "array")
    # a frame with a content checksum: not decoded (FAILED); the caller decodes it whole
    frames: list[Any] = []
    checked = np.zeros(n, dtype=bool)
    for r, blob in enumerate(blobs):
        view: Any = blob
        if blob is not None:
            if not isinstance(blob, bytes):
                try:
                    view = memoryview(blob).cast("B")
                except TypeError as e:
                    raise ValueError(f"decode_prefix_blobs: value {r} is not a contiguous "
                                     f"buffer of bytes: {e}") from None
            if len(view) >= 5 and view[4] & 0x04:
                checked[r] = True
                view = None
        frames.append(view)
    if _kernel is not None:
        context = _local.kernel_context
        if context is None:
            context = _local.kernel_context = _kernel.Context()
        status = np.empty(n, dtype=np.int8)
        _kernel.decode_prefix_list(context, frames, dst, dst_offsets, needs, nbytes, status)
    else:
        sizes = np.array([-1 if f is None else len(f) for f in frames], dtype=np.int64)
        offsets = np.zeros(n, dtype=np.int64)
        if n > 1:
            offsets[1:] = np.cumsum(np.maximum(sizes, 0))[:-1]
        src = np.frombuffer(b"".join(f for f in frames if f is not None), dtype=np.uint8)
        status = decode_prefixes(src, offsets, sizes, dst, dst_offsets, needs, nbytes)
    status[checked] = FAILED
    return status


def decode_prefix_files(root: bytes | None, paths: list[bytes], work: np.ndarray,
                        dst: np.ndarray, dst_offsets: np.ndarray, needs: np.ndarray,
                        nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_prefixes` of the zstd frames in the files ``paths`` (relative to
    the directory ``root``, opened without following links; ``root`` ``None``: plain
    paths), each read into ``work`` (this thread's buffer, at least as large as a
    file) only up to the blocks that hold its first ``needs[r]`` bytes, plus the
    headers of its other blocks (the frame must be exactly the file), by the compiled
    kernel in one call without the GIL (only where :data:`FILES`): a gather reads only
    the stored bytes it decodes, and each file's bytes are decoded while they are still
    in the CPU's cache.

    Returns ``(status, errs)``: ``DECODED``; ``NO_DATA`` (no such file); ``FAILED``,
    with ``errs[r]`` the ``errno`` of an open or read that failed (``ELOOP`` for a link
    on the path, ``EFBIG`` for a file larger than ``work``), else 0 (a damaged frame,
    or one with a content checksum): the caller reads those another way, which says
    what is wrong.  Raises ``ValueError`` when lengths differ or a destination lies
    outside ``dst``."""
    assert FILES and _kernel is not None, "zstd_prefix: decode_prefix_files not available"
    n = len(paths)
    status = np.empty(n, dtype=np.int8)
    errs = np.empty(n, dtype=np.int64)
    context = _local.kernel_context
    if context is None:
        context = _local.kernel_context = _kernel.Context()
    _kernel.decode_prefix_files(context, root, paths, work, dst,
                                np.ascontiguousarray(dst_offsets, dtype=np.int64),
                                np.ascontiguousarray(needs, dtype=np.int64), nbytes, status,
                                errs)
    return status, errs
