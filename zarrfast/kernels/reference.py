"""Pure-NumPy twins of the Cython kernels in ``zarrfast._ext``.

Every function here has the same name, signature, accepted inputs, result and
errors as its compiled twin (``src_ext/*.pyx``), written for clarity rather
than speed. It is the fallback when the extensions are unavailable (or
``ZARRFAST_PURE_PYTHON=1``; see ``zarrfast.kernels``) and the oracle of
the kernel tests in ``tests/kernels/``.

Argument conventions shared with the extensions:

* byte buffers are 1-d C-contiguous buffers of format ``B`` (``bytes``,
  ``bytearray``, ``memoryview``, ``np.uint8`` arrays); outputs must be writable;
* integer arrays are 1-d C-contiguous int64 buffers (``np.int64`` arrays) -- not
  lists or tuples;
* invalid values raise ``ValueError`` naming the offending shapes/values.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = [
    "byteswap_copy",
    "byteswap_inplace",
    "check_index",
    "copy_region",
    "fill_region",
    "format_chunk_keys",
    "is_uniform",
    "project",
    "box_table",
    "transpose",
]

MAX_NDIM = 64
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_MAX_ROWS = 2**62


# ---------------------------------------------------------------------------
# argument coercion (mirrors Cython's typed-memoryview checks)
# ---------------------------------------------------------------------------


def _u8(buf, *, writable: bool = False) -> np.ndarray:
    """View a 1-d contiguous byte buffer as a uint8 array (as ``uint8_t[::1]``)."""
    if buf is None:
        raise TypeError("a bytes-like object is required, not 'NoneType'")
    m = memoryview(buf)
    if m.ndim != 1:
        raise ValueError(f"Buffer has wrong number of dimensions (expected 1, got {m.ndim})")
    # Cython's uint8_t memoryviews take unsigned char, char and bool items.
    if m.format.lstrip("@=<>!") not in ("B", "c", "?"):
        raise ValueError(f"Buffer dtype mismatch, expected 'uint8_t' but got {m.format!r}")
    if not m.c_contiguous:
        raise ValueError("Buffer not C contiguous.")
    if writable and m.readonly:
        # What the exporter raises for a writable-buffer request.
        if isinstance(buf, np.ndarray):
            raise ValueError("buffer source array is read-only")
        raise BufferError("Object is not writable.")
    return np.frombuffer(m.cast("B") if m.format != "B" else m, dtype=np.uint8)


def _i64(buf, ndim: int = 1) -> np.ndarray:
    """View a C-contiguous int64 buffer as an array (as ``const int64_t[::1]``)."""
    if buf is None:
        raise TypeError("a bytes-like object is required, not 'NoneType'")
    m = memoryview(buf)
    if m.ndim != ndim:
        raise ValueError(f"Buffer has wrong number of dimensions (expected {ndim}, got {m.ndim})")
    if m.itemsize != 8 or m.format.lstrip("@=<>!") not in ("q", "l"):
        raise ValueError(f"Buffer dtype mismatch, expected 'int64_t' but got {m.format!r}")
    if not m.c_contiguous:
        raise ValueError("Buffer not C contiguous.")
    return np.asarray(m).view(np.int64)


def _ssize(value) -> int:
    """``Py_ssize_t`` argument conversion."""
    v = operator.index(value)
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise OverflowError("Python int too large to convert to C ssize_t")
    return v


def _ints(a: np.ndarray) -> tuple[int, ...]:
    return tuple(int(x) for x in a)


# ---------------------------------------------------------------------------
# _byteswap (compiled: _assemble)
# ---------------------------------------------------------------------------


def _check_unit(nbytes: int, unit: int, what: str) -> None:
    if unit not in (1, 2, 4, 8):
        raise ValueError(f"{what}: unit must be 1, 2, 4 or 8, got {unit}")
    if nbytes % unit != 0:
        raise ValueError(f"{what}: buffer length {nbytes} is not a multiple of unit {unit}")


def byteswap_inplace(buf, unit) -> None:
    """Reverse the bytes of every ``unit``-byte group of ``buf`` in place."""
    b = _u8(buf, writable=True)
    unit = _ssize(unit)
    _check_unit(b.size, unit, "byteswap_inplace")
    if unit == 1 or b.size == 0:
        return
    b.view(f"u{unit}").byteswap(inplace=True)


def byteswap_copy(src, dst, unit) -> None:
    """Write ``src`` with every ``unit``-byte group reversed into ``dst``."""
    s = _u8(src)
    d = _u8(dst, writable=True)
    unit = _ssize(unit)
    if d.size != s.size:
        raise ValueError(
            f"byteswap_copy: src has {s.size} bytes but dst has {d.size}; they must match"
        )
    _check_unit(s.size, unit, "byteswap_copy")
    if s.size == 0:
        return
    if unit == 1:
        d[:] = s
    else:
        d.view(f"u{unit}")[:] = s.view(f"u{unit}").byteswap()


# ---------------------------------------------------------------------------
# _transpose (compiled: _assemble)
# ---------------------------------------------------------------------------


def transpose(src, dst, shape, perm, itemsize) -> None:
    """Write the C-order bytes of ``np.transpose(src_array, perm)`` into ``dst``."""
    s = _u8(src)
    d = _u8(dst, writable=True)
    shp = _i64(shape)
    prm = _i64(perm)
    itemsize = _ssize(itemsize)
    ndim = shp.size
    if prm.size != ndim:
        raise ValueError(
            f"transpose: shape {_ints(shp)} has rank {ndim} but perm {_ints(prm)} "
            f"has {prm.size} entries"
        )
    if ndim > MAX_NDIM:
        raise ValueError(f"transpose: rank {ndim} exceeds the maximum of {MAX_NDIM}")
    if itemsize < 1:
        raise ValueError(f"transpose: itemsize must be >= 1, got {itemsize}")
    if (shp < 0).any():
        raise ValueError(f"transpose: shape {_ints(shp)} has a negative dim")
    if sorted(_ints(prm)) != list(range(ndim)):
        raise ValueError(f"transpose: perm {_ints(prm)} is not a permutation of range({ndim})")
    nbytes = itemsize
    for n in _ints(shp):
        nbytes *= n
    if nbytes > _INT64_MAX:
        raise ValueError(f"transpose: shape {_ints(shp)} with itemsize {itemsize} overflows int64")
    if s.size != nbytes or d.size != nbytes:
        raise ValueError(
            f"transpose: shape {_ints(shp)} with itemsize {itemsize} needs {nbytes} bytes, "
            f"but src has {s.size} and dst has {d.size}"
        )
    if nbytes == 0:
        return
    items = s.reshape(*_ints(shp), itemsize)
    moved = np.transpose(items, (*_ints(prm), ndim))
    d.reshape(moved.shape)[...] = moved


# ---------------------------------------------------------------------------
# _assemble
# ---------------------------------------------------------------------------


def _check_shape(func: str, shape: np.ndarray) -> None:
    if shape.size > MAX_NDIM:
        raise ValueError(f"{func}: rank {shape.size} exceeds the maximum of {MAX_NDIM}")
    if (shape < 0).any():
        raise ValueError(f"{func}: shape {_ints(shape)} has a negative dim")


def _check_dst_strides(func: str, strides: np.ndarray, shape: np.ndarray) -> None:
    for d, (t, n) in enumerate(zip(_ints(strides), _ints(shape), strict=True)):
        if t == 0 and n > 1:
            raise ValueError(
                f"{func}: dst_strides {_ints(strides)} has a zero stride along dim {d} "
                f"of shape {_ints(shape)}; every index would write the same bytes"
            )


def _check_span(
    func: str, name: str, buflen: int, offset: int, strides: np.ndarray,
    shape: np.ndarray, itemsize: int,
) -> None:
    """Raise unless every byte of the (non-empty) region lies in ``[0, buflen)``.

    Intermediate sums must fit int64, as in the compiled twin.
    """
    lo = hi = offset
    overflow = False
    for n, t in zip(_ints(shape), _ints(strides), strict=True):
        ext = (n - 1) * t
        if ext > 0:
            hi += ext
        else:
            lo += ext
        if not (_INT64_MIN <= ext <= _INT64_MAX and _INT64_MIN <= lo and hi <= _INT64_MAX):
            overflow = True
            break
    hi += itemsize
    if overflow or hi > _INT64_MAX:
        raise ValueError(
            f"{func}: region of shape {_ints(shape)} with {name}_offset {offset} and "
            f"{name}_strides {_ints(strides)} overflows int64 byte offsets "
            f"({name} has {buflen} bytes)"
        )
    if lo < 0 or hi > buflen:
        raise ValueError(
            f"{func}: region of shape {_ints(shape)} with {name}_offset {offset}, "
            f"{name}_strides {_ints(strides)} and itemsize {itemsize} touches bytes "
            f"[{lo}, {hi}) but {name} has {buflen} bytes"
        )


def _item_view(base: np.ndarray, offset: int, strides: np.ndarray, shape: np.ndarray,
               itemsize: int, writeable: bool) -> np.ndarray:
    """uint8 view of shape ``(*shape, itemsize)`` over a validated region of ``base``."""
    return as_strided(
        base[offset:],
        shape=(*_ints(shape), itemsize),
        strides=(*_ints(strides), 1),
        writeable=writeable,
    )


def _check_item(func: str, itemsize: int, swap_unit: int) -> None:
    if itemsize < 1:
        raise ValueError(f"{func}: itemsize must be >= 1, got {itemsize}")
    if swap_unit not in (1, 2, 4, 8):
        raise ValueError(f"{func}: swap_unit must be 1, 2, 4 or 8, got {swap_unit}")
    if itemsize % swap_unit != 0:
        raise ValueError(
            f"{func}: itemsize {itemsize} is not a multiple of swap_unit {swap_unit}"
        )


def copy_region(src, src_offset, src_strides, dst, dst_offset, dst_strides, shape,
                itemsize, swap_unit=1) -> None:
    """Copy the items of an N-d region from ``src`` to ``dst`` (see ``_ext._assemble``)."""
    s = _u8(src)
    src_offset = _ssize(src_offset)
    sst = _i64(src_strides)
    d = _u8(dst, writable=True)
    dst_offset = _ssize(dst_offset)
    dstr = _i64(dst_strides)
    shp = _i64(shape)
    itemsize = _ssize(itemsize)
    swap_unit = _ssize(swap_unit)
    if sst.size != shp.size or dstr.size != shp.size:
        raise ValueError(
            f"copy_region: shape {_ints(shp)}, src_strides {_ints(sst)} and "
            f"dst_strides {_ints(dstr)} must have the same length"
        )
    _check_shape("copy_region", shp)
    _check_item("copy_region", itemsize, swap_unit)
    if (shp == 0).any():
        return
    _check_dst_strides("copy_region", dstr, shp)
    _check_span("copy_region", "src", s.size, src_offset, sst, shp, itemsize)
    _check_span("copy_region", "dst", d.size, dst_offset, dstr, shp, itemsize)

    items = _item_view(s, src_offset, sst, shp, itemsize, writeable=False)
    if swap_unit > 1:
        lead = items.shape[:-1]
        items = items.reshape(*lead, itemsize // swap_unit, swap_unit)[..., ::-1]
        items = items.reshape(*lead, itemsize)
    else:
        items = items.copy()  # src may overlap dst: read everything first
    _item_view(d, dst_offset, dstr, shp, itemsize, writeable=True)[...] = items


def copy_regions(src, src_offsets, src_strides, dst, dst_offsets, dst_strides, shapes,
                 itemsize, swap_unit=1, stream=False) -> None:
    """``copy_region`` for many regions sharing strides; all are validated before any
    byte is copied (see ``_ext._assemble``; ``stream`` only changes how the compiled
    kernel stores the same bytes)."""
    s = _u8(src)
    so = _i64(src_offsets)
    sst = _i64(src_strides)
    d = _u8(dst, writable=True)
    do = _i64(dst_offsets)
    dstr = _i64(dst_strides)
    shp = _i64(shapes, ndim=2)
    itemsize = _ssize(itemsize)
    swap_unit = _ssize(swap_unit)
    n, ndim = shp.shape
    if so.size != n or do.size != n:
        raise ValueError(
            f"copy_regions: {n} shapes but {so.size} src_offsets and {do.size} dst_offsets"
        )
    if sst.size != ndim or dstr.size != ndim:
        raise ValueError(
            f"copy_regions: shapes of rank {ndim}, src_strides {_ints(sst)} and "
            f"dst_strides {_ints(dstr)} must have the same length"
        )
    if ndim > MAX_NDIM:
        raise ValueError(f"copy_regions: rank {ndim} exceeds the maximum of {MAX_NDIM}")
    _check_item("copy_regions", itemsize, swap_unit)
    todo = []
    for r in range(n):
        try:
            _check_shape("copy_regions", shp[r])
            if (shp[r] == 0).any():
                continue
            _check_dst_strides("copy_regions", dstr, shp[r])
            _check_span("copy_regions", "src", s.size, int(so[r]), sst, shp[r], itemsize)
            _check_span("copy_regions", "dst", d.size, int(do[r]), dstr, shp[r], itemsize)
        except ValueError as e:
            raise ValueError(f"{e} (region {r})") from None
        todo.append(r)
    for r in todo:
        copy_region(s, int(so[r]), sst, d, int(do[r]), dstr, shp[r], itemsize, swap_unit)


#: c-blosc's BLOSC_MAX_OVERHEAD (see ``_ext._decode``)
BLOSC_MAX_OVERHEAD = 16


def blosc_compress_regions(src, src_offsets, src_strides, dst_strides, shape, itemsize,
                           swap_unit, fill, scratch, out, clevel, shuffle, typesize, cname,
                           blocksize) -> np.ndarray:
    """Twin of ``_ext._decode.blosc_compress_regions``: ``copy_region`` into ``scratch``
    (its first chunk: the kernel's gathering of several regions at once changes no
    byte), ``is_uniform`` against ``fill``, then numcodecs' ``blosc.compress`` (its
    context path, the kernel's bytes, when called off the main thread)."""
    from numcodecs import blosc

    if not 0 <= clevel <= 9 or shuffle not in (0, 1, 2) or typesize < 1 or b"\0" in cname:
        raise ValueError(f"blosc_compress_regions: bad settings clevel={clevel} "
                         f"shuffle={shuffle} typesize={typesize} cname={cname!r}")
    d = _u8(scratch, writable=True)
    o = _u8(out, writable=True)
    shp = _i64(shape)
    offs = _i64(src_offsets)
    nbytes = int(np.prod(shp)) * itemsize
    if nbytes < 1 or d.nbytes < nbytes:
        raise ValueError(f"blosc_compress_regions: the region {_ints(shp)} of {itemsize}-byte "
                         f"items is {nbytes} bytes, the scratch buffer {d.nbytes}: it must "
                         f"hold a whole chunk")
    d = d[:nbytes]
    slot = nbytes + BLOSC_MAX_OVERHEAD
    if o.nbytes < len(offs) * slot:
        raise ValueError(f"blosc_compress_regions: out holds {o.nbytes} bytes, "
                         f"{len(offs)} chunks need {len(offs) * slot}")
    f = None if fill is None else _u8(fill)
    if f is not None and f.nbytes != itemsize:
        raise ValueError(f"blosc_compress_regions: fill holds {f.nbytes} bytes, an item "
                         f"{itemsize}")
    for r in range(len(offs)):  # every region checked before anything is compressed
        _check_span("blosc_compress_regions", "src", _u8(src).nbytes, int(offs[r]),
                    _i64(src_strides), shp, itemsize)
    sizes = np.empty(len(offs), dtype=np.int64)
    for r in range(len(offs)):
        copy_region(src, int(offs[r]), src_strides, d, 0, dst_strides, shp, itemsize,
                    swap_unit)
        if f is not None and is_uniform(d, f):
            sizes[r] = -1
            continue
        got = blosc.compress(d, cname, clevel, shuffle, blocksize, typesize=typesize)
        o[r * slot:r * slot + len(got)] = np.frombuffer(got, dtype=np.uint8)
        sizes[r] = len(got)
    return sizes


#: ``ChunkDecoder.decode_regions`` statuses (see ``_ext._decode``)
DECODED, NO_DATA, FAILED = 0, 1, 2
#: the codecs ``ChunkDecoder`` decodes
BATCH_CODECS = frozenset({"zstd", "blosc", "gzip", "zlib"})


def _inflate_one(data: bytes, nbytes: int, gzip: bool) -> np.ndarray | None:
    """``zf_inflate_chunk`` (``_ext._decode``): the ``nbytes`` bytes of one gzip member
    (``gzip``) or zlib stream that ends where ``data`` does, its checks right (Python's
    ``zlib``), else ``None`` -- also for several members, trailing bytes, a gzip header
    CRC (FHCRC) and 4 GiB or more, which the kernel leaves to the codecs too."""
    import zlib

    if len(data) > 0xFFFFFFFF or nbytes > 0xFFFFFFFF:
        return None
    if gzip and (len(data) < 10 or data[3] & 0x02):
        return None
    d = zlib.decompressobj(31 if gzip else 15)
    try:
        out = d.decompress(data, nbytes + 1)
    except zlib.error:
        return None
    if not d.eof or d.unused_data or len(out) != nbytes:
        return None
    return np.frombuffer(out, dtype=np.uint8).copy()


#: c-blosc's BLOSC_MAX_BUFFERSIZE (see ``_ext._decode``)
BLOSC_MAX_BUFFERSIZE = 2**31 - 1 - BLOSC_MAX_OVERHEAD


def blosc_compress(src, clevel, shuffle, typesize, cname, blocksize) -> bytes:
    """Twin of ``_ext._decode.blosc_compress``: numcodecs' c-blosc compresses (the
    bytes of ``numcodecs.Blosc.encode`` for the same settings)."""
    from numcodecs import blosc

    s = _u8(src)
    clevel, shuffle, typesize, blocksize = (_ssize(clevel), _ssize(shuffle), _ssize(typesize),
                                            _ssize(blocksize))
    if not isinstance(cname, bytes):
        raise TypeError(f"Argument 'cname' has incorrect type (expected bytes, got "
                        f"{type(cname).__name__})")
    if not 0 <= clevel <= 9 or shuffle not in (0, 1, 2) or typesize < 1 or b"\0" in cname:
        raise ValueError(f"blosc_compress: bad settings clevel={clevel} shuffle={shuffle} "
                         f"typesize={typesize} cname={cname!r}")
    if s.size > BLOSC_MAX_BUFFERSIZE:
        raise ValueError(f"blosc_compress: {s.size} bytes exceed c-blosc's limit of "
                         f"{BLOSC_MAX_BUFFERSIZE} bytes per chunk")
    return bytes(blosc.compress(s, cname, clevel, shuffle, blocksize, typesize))


def blosc_decode_frame(frame, target, lo=0, hi=-1) -> int:
    """Twin of ``_ext._decode.blosc_decode_frame``: numcodecs' c-blosc decodes the whole
    frame into ``target`` (of the frame's decoded size); that size."""
    from numcodecs import blosc

    f, t = _u8(frame), _u8(target, writable=True)
    _ssize(lo), _ssize(hi)
    data = f.tobytes()
    if (len(data) < 16 or int.from_bytes(data[12:16], "little") != len(data)
            or int.from_bytes(data[4:8], "little") != t.size):
        raise ValueError(f"blosc_decode_frame: not a blosc frame of {t.size} bytes")
    blosc.decompress(data, t)
    return t.size


def decode_prefixes(context, src, src_offsets, src_sizes, dst, dst_offsets, needs, nbytes,
                    status) -> None:
    """Twin of ``_ext._zstd_prefix.decode_prefixes``: numcodecs decodes each frame whole
    (``context`` is not used).  ``dst[dst_offsets[r]:][:nbytes]`` gets all ``nbytes``
    decoded bytes (the kernel: at least the first ``needs[r]``); ``status[r]`` is 0
    (decoded), 1 (a negative size: nothing done) or 2 (the frame does not decode to
    ``nbytes`` bytes).  A frame whose blocks after the ones holding its first
    ``needs[r]`` bytes are damaged fails here, and decodes in the kernel, which never
    reaches them."""
    from numcodecs import zstd

    s, d = _u8(src), _u8(dst, writable=True)
    so, sz, do, nd = (_i64(x) for x in (src_offsets, src_sizes, dst_offsets, needs))
    st = np.frombuffer(status, dtype=np.int8) if not isinstance(status, np.ndarray) else status
    n = len(so)
    if not (len(sz) == len(do) == len(nd) == len(st) == n):
        raise ValueError(f"decode_prefixes: src_offsets, src_sizes, dst_offsets, needs and "
                         f"status must have the same length (src_offsets has {n})")
    nbytes = _ssize(nbytes)
    if nbytes < 0:
        raise ValueError(f"decode_prefixes: nbytes {nbytes} is negative")
    for r in range(n):
        a, size, at, need = int(so[r]), int(sz[r]), int(do[r]), int(nd[r])
        if size >= 0 and (a < 0 or a > s.size or size > s.size - a):
            raise ValueError(f"decode_prefixes: frame {r}: bytes [{a}, {a} + {size}) lie "
                             f"outside src ({s.size} bytes)")
        if need < 0 or need > nbytes or at < 0 or at > d.size or nbytes > d.size - at:
            raise ValueError(f"decode_prefixes: frame {r}: need {need} of {nbytes} bytes at "
                             f"{at} lies outside dst ({d.size} bytes)")
    for r in range(n):
        a, size, at = int(so[r]), int(sz[r]), int(do[r])
        if size < 0:
            st[r] = 1
            continue
        try:
            out = zstd.decompress(s[a:a + size].tobytes())
        except (RuntimeError, ValueError):
            st[r] = 2
            continue
        if len(out) != nbytes:
            st[r] = 2
            continue
        d[at:at + nbytes] = np.frombuffer(out, dtype=np.uint8)
        st[r] = 0


def decode_prefix_files(context, root, paths, work, dst, dst_offsets, needs, nbytes, status,
                        errs) -> None:
    """Twin of ``_ext._zstd_prefix.decode_prefix_files``: each file read whole
    (:func:`read_files_into`, at most ``len(work)`` bytes), then :func:`decode_prefixes`
    (numcodecs decodes each frame whole).  ``status[r]`` 0 (decoded), 1 (no such file),
    2 (failed: ``errs[r]`` the ``errno`` of the open or read, ``EFBIG`` for a file
    larger than ``work``, else 0: a frame that does not decode, or has a content
    checksum).  A frame damaged only in blocks after the ones holding its first
    ``needs[r]`` bytes fails here, and decodes in the kernel, which never reaches
    them (it reads only their headers)."""
    import errno as _errno

    if not isinstance(paths, list):
        raise TypeError(f"decode_prefix_files: paths must be a list, got {type(paths).__name__}")
    w, d = _u8(work, writable=True), _u8(dst, writable=True)
    do, nd = _i64(dst_offsets), _i64(needs)
    st = np.frombuffer(status, dtype=np.int8) if not isinstance(status, np.ndarray) else status
    er = np.frombuffer(errs, dtype=np.int64) if not isinstance(errs, np.ndarray) else errs
    n = len(paths)
    if not (len(do) == len(nd) == len(st) == len(er) == n):
        raise ValueError(f"decode_prefix_files: paths, dst_offsets, needs, status and errs "
                         f"must have the same length (paths has {n})")
    nbytes = _ssize(nbytes)
    if nbytes < 0:
        raise ValueError(f"decode_prefix_files: nbytes {nbytes} is negative")
    for r, p in enumerate(paths):
        if not isinstance(p, bytes) or b"\0" in p:
            raise ValueError(f"decode_prefix_files: path {r} must be bytes without NUL, "
                             f"got {p!r}")
        need, at = int(nd[r]), int(do[r])
        if need < 0 or need > nbytes or at < 0 or at > d.size or nbytes > d.size - at:
            raise ValueError(f"decode_prefix_files: file {r}: need {need} of {nbytes} bytes "
                             f"at {at} lies outside dst ({d.size} bytes)")
    if root is not None and (not isinstance(root, bytes) or b"\0" in root):
        raise ValueError(f"decode_prefix_files: root must be bytes without NUL, got {root!r}")
    cap = w.size
    for r, p in enumerate(paths):
        st[r], er[r] = 2, 0
        one = np.empty(cap, dtype=np.uint8)
        sizes, errors = read_files_into([p], one, np.zeros(1, np.int64), cap, False, root)
        size, err = int(sizes[0]), int(errors[0])
        if err in (_errno.ENOENT, _errno.ENOTDIR, _errno.EISDIR):
            st[r] = 1
        elif err:
            er[r] = err
        elif size > cap:
            er[r] = _errno.EFBIG
        elif size >= 5 and not one[4] & 0x04:
            decode_prefixes(context, one, np.zeros(1, np.int64), np.array([size], np.int64),
                            d, do[r:r + 1], nd[r:r + 1], nbytes, st[r:r + 1])


def decode_prefix_list(context, frames, dst, dst_offsets, needs, nbytes, status) -> None:
    """Twin of ``_ext._zstd_prefix.decode_prefix_list``: :func:`decode_prefixes` of the
    frames copied back to back into one buffer (``None``: no data)."""
    for r, frame in enumerate(frames):
        if frame is not None and not memoryview(frame).c_contiguous:
            raise ValueError(f"decode_prefix_list: frame {r} is not a contiguous buffer "
                             f"of bytes")
    parts = [np.frombuffer(memoryview(f).cast("B"), dtype=np.uint8) if f is not None
             else np.empty(0, np.uint8) for f in frames]
    sizes = np.array([p.size if f is not None else -1 for p, f in zip(parts, frames,
                                                                        strict=True)],
                     dtype=np.int64)
    offsets = np.zeros(len(frames), dtype=np.int64)
    if len(frames) > 1:
        offsets[1:] = np.cumsum([p.size for p in parts])[:-1]
    src = np.concatenate(parts) if parts else np.empty(0, np.uint8)
    try:
        decode_prefixes(context, src, offsets, sizes, dst, dst_offsets, needs, nbytes, status)
    except ValueError as e:
        raise ValueError(str(e).replace("decode_prefixes", "decode_prefix_list")) from None


def _span(offset: int, strides, shape, itemsize: int) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` a (non-empty) region reads."""
    lo = hi = offset
    for n, s in zip(shape, strides, strict=True):
        ext = (int(n) - 1) * int(s)
        if ext > 0:
            hi += ext
        else:
            lo += ext
    return lo, hi + itemsize


def _unshuffle_args(func: str, src, dst, ts: int, isa: str) -> tuple[np.ndarray, np.ndarray]:
    s, d = _u8(src), _u8(dst, writable=True)
    if isa not in ("scalar", "avx2"):
        raise ValueError(f"isa {isa!r} is not run here")
    if ts < 1 or d.size != s.size or s.size == 0:
        raise ValueError(f"{func}: ts >= 1 and two blocks of one size")
    if ts > 255:
        raise ValueError(f"{func}: ts is at most 255")
    return s, d


def blosc_unshuffle(src, dst, ts, isa="scalar") -> None:
    """Undo c-blosc's byte shuffle of one block: ``ts`` planes of ``n = size // ts``
    bytes (plane ``j``: byte ``j`` of every item), then the ``size % ts`` bytes left
    as they are."""
    s, d = _unshuffle_args("blosc_unshuffle", src, dst, ts, isa)
    n = s.size // ts
    d[:n * ts] = s[:n * ts].reshape(ts, n).T.reshape(-1)
    d[n * ts:] = s[n * ts:]


def blosc_bitunshuffle(src, dst, ts, isa="scalar") -> None:
    """Undo c-blosc's bit shuffle of one block: ``8 * ts`` rows of ``n / 8`` bytes, row
    ``8j + k`` holding bit ``k`` of byte ``j`` of every item (item ``i`` at bit ``i % 8``
    of byte ``i // 8``), then the bytes after the ``n * ts`` as they are.  A block of
    ``n`` items, ``n`` not a multiple of 8, is stored as it is."""
    s, d = _unshuffle_args("blosc_bitunshuffle", src, dst, ts, isa)
    n = s.size // ts
    if n % 8:
        d[:] = s
        return
    bits = np.unpackbits(s[:n * ts].reshape(8 * ts, n // 8), axis=1, bitorder="little")
    items = bits.reshape(ts, 8, n).transpose(2, 0, 1)  # item, byte, bit
    d[:n * ts] = np.packbits(items, axis=2, bitorder="little").reshape(-1)
    d[n * ts:] = s[n * ts:]


def blosc_shuffle(src, dst, ts, isa="scalar") -> None:
    """c-blosc's byte shuffle of one block: the inverse of :func:`blosc_unshuffle`
    (``ts`` planes of ``n = size // ts`` bytes, then the ``size % ts`` bytes left)."""
    s, d = _unshuffle_args("blosc_shuffle", src, dst, ts, isa)
    n = s.size // ts
    d[:n * ts] = s[:n * ts].reshape(n, ts).T.reshape(-1)
    d[n * ts:] = s[n * ts:]


def blosc_bitshuffle(src, dst, ts, isa="scalar") -> None:
    """c-blosc's bit shuffle of one block: the inverse of :func:`blosc_bitunshuffle`
    (row ``8j + k`` holds bit ``k`` of byte ``j`` of every item; a block of ``n`` items,
    ``n`` not a multiple of 8, is kept as it is)."""
    s, d = _unshuffle_args("blosc_bitshuffle", src, dst, ts, isa)
    n = s.size // ts
    if n % 8:
        d[:] = s
        return
    bits = np.unpackbits(s[:n * ts].reshape(n, ts, 1), axis=2, bitorder="little")
    rows = bits.transpose(1, 2, 0).reshape(8 * ts, n)  # byte, bit, item
    d[:n * ts] = np.packbits(rows, axis=1, bitorder="little").reshape(-1)
    d[n * ts:] = s[n * ts:]


@functools.cache
def _numcodecs_c_blosc(name: str):
    """A function of numcodecs' c-blosc (``blosc_getitem``, ``blosc_decompress_ctx``), or
    None when its extension does not export it."""
    import ctypes

    from numcodecs import blosc

    return getattr(ctypes.CDLL(blosc.__file__), name, None)


def _blosc_part(data: bytes, nbytes: int, lo: int, hi: int, out: np.ndarray) -> bool:
    """``_ext._decode._blosc_part``: numcodecs' ``blosc_getitem`` (c-blosc decoding the
    blocks that hold items ``[start, stop)`` of the header's typesize) into the same
    bytes of ``out``, when that is fewer than every block; False otherwise."""
    import ctypes

    getitem = _numcodecs_c_blosc("blosc_getitem")
    ts, bs = data[3], int.from_bytes(data[8:12], "little")
    if (getitem is None or ts <= 0 or bs <= 0 or bs % ts or data[2] & 0x08 or lo < 0
            or hi <= lo):
        return False
    start, stop = lo // ts, -(-hi // ts)
    if stop * ts > nbytes or (stop * ts - 1) // bs - start * ts // bs + 1 >= -(-nbytes // bs):
        return False
    part = np.empty((stop - start) * ts, dtype=np.uint8)
    got = getitem(data, ctypes.c_int(start), ctypes.c_int(stop - start),
                  part.ctypes.data_as(ctypes.c_void_p))
    if got != part.size:
        return False
    out[start * ts:stop * ts] = part
    return True


def _placement_arg(placement):
    """``placement`` if it is a :class:`Placement` (Cython's typed argument)."""
    if not isinstance(placement, Placement):
        raise TypeError(f"Argument 'placement' has incorrect type (expected Placement, got "
                        f"{type(placement).__name__})")
    return placement


class Placement:
    """Where each decoded chunk of a batch goes, validated once (see
    ``_ext._decode.Placement``): row ``r`` copies the region ``shapes[r]`` at
    ``chunk_offsets[r]`` of a decoded chunk of ``nbytes`` bytes to ``dst_offsets[r]`` of
    ``dst``, or with ``direct[r]`` decodes the chunk straight into
    ``dst[dst_offsets[r]:][:nbytes]``."""

    #: a box's (``Placement.box``): its shards, and chunks per shard (else 0)
    nshards = 0
    n_inner = 0
    #: a box's only: its shards' coordinates, and each row's shard and inner chunk
    coords: np.ndarray
    shard: np.ndarray
    inner: np.ndarray

    def __init__(self, nbytes, chunk_offsets, chunk_strides, dst, dst_offsets, dst_strides,
                 shapes, itemsize, swap_unit, direct) -> None:
        func = "Placement"
        nbytes = _ssize(nbytes)
        co = _i64(chunk_offsets).copy()
        cst = _i64(chunk_strides).copy()
        d = _u8(dst, writable=True)
        do = _i64(dst_offsets).copy()
        dstr = _i64(dst_strides).copy()
        shp = _i64(shapes, ndim=2).copy()
        flags = _u8(direct).copy()
        itemsize = _ssize(itemsize)
        swap_unit = _ssize(swap_unit)
        n, ndim = shp.shape
        if nbytes < 0:
            raise ValueError(f"{func}: nbytes {nbytes} is negative")
        if co.size != n or do.size != n or flags.size != n:
            raise ValueError(
                f"{func}: {n} shapes but {co.size} chunk_offsets, {do.size} dst_offsets and "
                f"{flags.size} direct flags"
            )
        if cst.size != ndim or dstr.size != ndim:
            raise ValueError(
                f"{func}: shapes of rank {ndim}, but {cst.size} chunk_strides and "
                f"{dstr.size} dst_strides"
            )
        if ndim > MAX_NDIM:
            raise ValueError(f"{func}: rank {ndim} exceeds the maximum of {MAX_NDIM}")
        _check_item(func, itemsize, swap_unit)
        skip = np.zeros(n, dtype=bool)
        for r in range(n):
            try:
                if flags[r]:
                    if do[r] < 0 or do[r] > d.size - nbytes:
                        raise ValueError(
                            f"{func}: direct bytes [{do[r]}, {do[r] + nbytes}) lie outside "
                            f"dst's {d.size} bytes"
                        )
                    continue
                _check_shape(func, shp[r])
                if (shp[r] == 0).any():
                    skip[r] = True
                    continue
                _check_dst_strides(func, dstr, shp[r])
                _check_span(func, "chunk", nbytes, int(co[r]), cst, shp[r], itemsize)
                _check_span(func, "dst", d.size, int(do[r]), dstr, shp[r], itemsize)
            except ValueError as e:
                raise ValueError(f"{e} (chunk {r})") from None
        self._set(nbytes, co, cst, d, do, dstr, shp, itemsize, swap_unit, flags, skip)

    def _set(self, nbytes, co, cst, d, do, dstr, shp, itemsize, swap_unit, flags, skip):
        self.nbytes, self.chunk_offsets, self.chunk_strides = nbytes, co, cst
        self.dst, self.dst_offsets, self.dst_strides, self.shapes = d, do, dstr, shp
        self.itemsize, self.swap_unit, self.direct, self.skip = itemsize, swap_unit, flags, skip
        self.n, self.ndim = shp.shape

    @staticmethod
    def box(nbytes, start, count, chunk_shape, chunk_strides, dst, dst_strides, itemsize,
            swap_unit, cps=None, direct=True) -> Placement:
        """The rows of a step-1 box in ``box_table``'s order (see
        ``_ext._decode.Placement.box``)."""
        func = "Placement.box"
        nbytes = _ssize(nbytes)
        arrays = [_i64(a) for a in (start, count, chunk_shape, chunk_strides, dst_strides)]
        sta, cnt, chk, cst, dstr = arrays
        ndim = sta.size
        if nbytes < 0:
            raise ValueError(f"{func}: nbytes {nbytes} is negative")
        if any(a.size != ndim for a in arrays):
            raise ValueError(
                f"{func}: start {_ints(sta)}, count {_ints(cnt)}, chunk_shape {_ints(chk)}, "
                f"chunk_strides {_ints(cst)} and dst_strides {_ints(dstr)} must have the "
                f"same length")
        per = None if cps is None else _i64(cps)
        if per is not None and per.size != ndim:
            raise ValueError(f"{func}: start {_ints(sta)} and cps {_ints(per)} must "
                             f"have the same length")
        if not 1 <= ndim <= MAX_NDIM:
            raise ValueError(f"{func}: rank {ndim} is not 1 to {MAX_NDIM}")
        itemsize, swap_unit = _ssize(itemsize), _ssize(swap_unit)
        _check_item(func, itemsize, swap_unit)
        s0, n0, c0 = sta.tolist(), cnt.tolist(), chk.tolist()
        rows = n_inner = 1
        for d in range(ndim):
            if s0[d] < 0 or n0[d] < 1 or c0[d] < 1 or s0[d] + n0[d] > _INT64_MAX:
                raise ValueError(
                    f"{func}: dim {d}: start {s0[d]} (>= 0), count {n0[d]} (>= 1, start + "
                    f"count < 2**63) or chunk_shape {c0[d]} (>= 1) out of domain")
            if per is not None:
                n_inner *= int(per[d])
                if per[d] < 1 or n_inner > _INT64_MAX:
                    raise ValueError(f"{func}: dim {d}: cps {int(per[d])} out of domain (>= 1, "
                                     f"a shard of at most 2**63 chunks)")
            rows *= (s0[d] + n0[d] - 1) // c0[d] - s0[d] // c0[d] + 1
            if rows > 2**16:
                raise ValueError(f"{func}: the box touches more than {2**16} chunks")
        _check_span(func, "chunk", nbytes, 0, cst, chk, itemsize)
        _check_dst_strides(func, dstr, cnt)
        out = _u8(dst, writable=True)
        _check_span(func, "dst", out.size, 0, dstr, cnt, itemsize)
        if per is None:
            per = np.ones(ndim, dtype=np.int64)
        shards, bounds, inner, src_offsets, dst_offsets, shapes = box_table(
            sta, cnt, chk, per, cst, dstr)
        flags = _direct_flags(shapes, chk, cst, dstr, itemsize, swap_unit, nbytes, direct)
        p = Placement(nbytes, src_offsets, cst, out, dst_offsets, dstr, shapes, itemsize,
                      swap_unit, flags)
        p.nshards, p.n_inner = len(shards), n_inner
        p.coords = shards
        p.shard = np.repeat(np.arange(len(shards), dtype=np.int64), np.diff(bounds))
        p.inner = inner
        return p

    def part(self, lo, hi) -> Placement:
        """A placement of rows ``lo`` to ``hi``, not checked again (not a box's)."""
        lo, hi = _ssize(lo), _ssize(hi)
        if not 0 <= lo <= hi <= self.n:
            raise IndexError(f"Placement.part: rows {lo} to {hi} of {self.n}")
        return self.take(np.arange(lo, hi, dtype=np.int64))

    def take(self, rows) -> Placement:
        """A placement of the rows ``rows``, in that order, not checked again (not a
        box's)."""
        rows = _i64(rows)
        for r in rows.tolist():
            if not 0 <= r < self.n:
                raise IndexError(f"Placement.take: row {r} of {self.n}")
        p = Placement.__new__(Placement)
        p._set(self.nbytes, self.chunk_offsets[rows], self.chunk_strides, self.dst,
               self.dst_offsets[rows], self.dst_strides, self.shapes[rows].reshape(-1, self.ndim),
               self.itemsize, self.swap_unit, self.direct[rows], self.skip[rows])
        return p

    def __len__(self) -> int:
        return self.n

    def place(self, decoder, r: int, frame: np.ndarray) -> bool:
        """Decode ``frame`` with ``decoder`` and place it as row ``r`` says; False when
        it does not decode to ``nbytes`` bytes (nothing placed)."""
        lo, hi = 0, self.nbytes
        if decoder.codec == "blosc" and not self.direct[r]:
            lo, hi = _span(int(self.chunk_offsets[r]), self.chunk_strides, self.shapes[r],
                           self.itemsize)
        chunk = decoder._decode(frame, lo, hi)
        if chunk is None:
            return False
        self.place_chunk(r, chunk)
        return True

    def place_chunk(self, r: int, chunk: np.ndarray) -> None:
        """Place the decoded chunk ``chunk`` (``nbytes`` bytes) as row ``r`` says."""
        if self.skip[r]:
            return
        if self.direct[r]:
            at = int(self.dst_offsets[r])
            self.dst[at:at + self.nbytes] = chunk
        else:
            copy_region(chunk, int(self.chunk_offsets[r]), self.chunk_strides, self.dst,
                        int(self.dst_offsets[r]), self.dst_strides, self.shapes[r],
                        self.itemsize, self.swap_unit)


class ChunkDecoder:
    """Batched decoding of zstd, blosc, gzip or zlib chunks into regions of an output
    (see ``_ext._decode``), with python-zstandard, numcodecs' blosc and Python's
    ``zlib``; ``"none"``: the stored bytes are the chunk."""

    def __init__(self, codec: str, nbytes: int) -> None:
        if codec not in ("zstd", "blosc", "gzip", "zlib", "none"):
            raise ValueError(f"ChunkDecoder: codec {codec!r} is not bound")
        nbytes = _ssize(nbytes)
        if nbytes < 0:
            raise ValueError(f"ChunkDecoder: nbytes {nbytes} is negative")
        self.codec = codec
        self.nbytes = nbytes

    def _decode(self, frame: np.ndarray, lo: int = 0, hi: int | None = None
                ) -> np.ndarray | None:
        """The frame's ``nbytes`` decoded bytes, or ``None``; of a blosc frame, only
        those of the blocks that hold bytes ``[lo, hi)`` when that is fewer than all
        (the rest left undefined, as the kernel leaves them)."""
        if self.codec == "none":
            return frame.copy() if frame.size == self.nbytes else None
        data = frame.tobytes()
        if self.codec in ("gzip", "zlib"):
            return _inflate_one(data, self.nbytes, self.codec == "gzip")
        if self.codec == "blosc":
            from numcodecs import blosc

            if len(data) < 16:
                return None
            # (blosc_cbuffer_validate: the header's sizes)
            nbytes = int.from_bytes(data[4:8], "little")
            cbytes = int.from_bytes(data[12:16], "little")
            if cbytes != len(data) or nbytes != self.nbytes:
                return None
            out = np.empty(self.nbytes, dtype=np.uint8)
            hi = self.nbytes if hi is None else hi
            if (lo > 0 or hi < self.nbytes) and _blosc_part(data, self.nbytes, lo, hi, out):
                return out
            decompress = _numcodecs_c_blosc("blosc_decompress_ctx")
            if decompress is not None:  # (the kernel's call: every byte decoded, or None)
                import ctypes

                got = decompress(data, out.ctypes.data_as(ctypes.c_void_p),
                                 ctypes.c_size_t(self.nbytes), ctypes.c_int(1))
                return out if got == self.nbytes else None
            try:  # (numcodecs' decompress, which checks only that c-blosc succeeded)
                blosc.decompress(data, out)
            except RuntimeError:
                return None
            return out
        import numcodecs.zstd
        import zstandard

        # the first frame's declared size (ZSTD_getFrameContentSize: 0 for a skippable
        # frame) must be unknown or the chunk's
        if len(data) >= 4 and int.from_bytes(data[:4], "little") & ~0xF == 0x184D2A50:
            declared = 0
        else:
            try:
                declared = zstandard.get_frame_parameters(data).content_size
            except zstandard.ZstdError:
                return None
        if declared not in (zstandard.CONTENTSIZE_UNKNOWN, self.nbytes):
            return None
        out = np.empty(self.nbytes, dtype=np.uint8)
        try:  # every frame, into exactly nbytes (ZSTD_decompressDCtx)
            numcodecs.zstd.decompress(data, out)
        except (RuntimeError, ValueError):
            return None
        return out

    def _rows(self, func, placement, n, status):
        """The rows of ``placement`` to place (``DECODED`` and not empty), and how to
        place one: the checks of ``_ext._decode.ChunkDecoder`` on a placement."""
        if not isinstance(placement, Placement):
            raise TypeError(f"Argument 'placement' has incorrect type (expected "
                            f"Placement, got {type(placement).__name__})")
        if placement.nbytes != self.nbytes:
            raise ValueError(f"{func}: a placement of {placement.nbytes}-byte chunks, "
                             f"the decoder's are {self.nbytes} bytes")
        if placement.n != n:
            raise ValueError(f"{func}: a placement of {placement.n} rows for {n} chunks")
        todo = [r for r in range(n) if status[r] == DECODED and not placement.skip[r]]
        return todo, functools.partial(placement.place, self)

    def decode_regions(self, src, src_offsets, src_sizes, placement, share=False):
        s = _u8(src)
        so = _i64(src_offsets)
        sz = _i64(src_sizes)
        n = _placement_arg(placement).n
        if so.size != n or sz.size != n:
            raise ValueError(
                f"decode_regions: {n} rows but {so.size} src_offsets and {sz.size} src_sizes"
            )
        todo, place = self._rows("decode_regions", placement, n, np.zeros(n, np.int8))
        for r in range(n):
            if sz[r] >= 0 and (so[r] < 0 or so[r] > s.size - sz[r]):
                raise ValueError(
                    f"decode_regions: bytes [{so[r]}, {so[r] + sz[r]}) lie outside src's "
                    f"{s.size} bytes (chunk {r})"
                )
        status = np.where(sz < 0, NO_DATA, DECODED).astype(np.int8)
        for r in todo:
            if status[r] == DECODED and not place(r, s[int(so[r]):int(so[r]) + int(sz[r])]):
                status[r] = FAILED
        return status

    def decode_ranges(self, fds, offsets, sizes, placement, share=False):
        import errno as _errno
        import os

        fd = _i64(fds)
        so = _i64(offsets)
        sz = _i64(sizes)
        n = _placement_arg(placement).n
        limit = 2 * self.nbytes + 65536
        if fd.size != n or so.size != n or sz.size != n:
            raise ValueError(f"decode_ranges: {n} rows but {fd.size} fds, {so.size} offsets "
                             f"and {sz.size} sizes")
        status = np.where(sz < 0, NO_DATA, DECODED).astype(np.int8)
        todo, place = self._rows("decode_ranges", placement, n, status)
        for r in range(n):
            if sz[r] >= 0 and (so[r] < 0 or sz[r] > limit or fd[r] < 0 or fd[r] > 2**31 - 1):
                raise ValueError(
                    f"decode_ranges: bytes [{so[r]}, {so[r] + sz[r]}) of file descriptor "
                    f"{fd[r]} (chunk {r}): not a range of at most {limit} bytes of an open "
                    f"file")
        errors = np.zeros(n, dtype=np.int64)
        for r in todo:
            want, at = int(sz[r]), int(so[r])
            data = b""
            try:
                while len(data) < want:
                    got = os.pread(int(fd[r]), want - len(data), at + len(data))
                    if not got:
                        break
                    data += got
            except OSError as e:
                status[r], errors[r] = FAILED, e.errno or _errno.EIO
                continue
            if len(data) < want:
                status[r], errors[r] = FAILED, _errno.EIO
            elif not place(r, np.frombuffer(data, dtype=np.uint8)):
                status[r] = FAILED
        return status, errors

    def decode_files(self, paths, placement, root=None, share=False, root_of=None):
        import os

        if not isinstance(paths, list):
            raise TypeError(f"decode_files: paths must be a list, got {type(paths).__name__}")
        n = _placement_arg(placement).n
        if len(paths) != n:
            raise ValueError(f"decode_files: {n} rows but {len(paths)} paths")
        if root_of is not None:
            return self._decode_files_roots(paths, placement, root, root_of)
        status = np.full(n, DECODED, dtype=np.int8)
        todo, place = self._rows("decode_files", placement, n, status)
        for r, p in enumerate(paths):
            if not isinstance(p, bytes):
                raise TypeError(f"decode_files: path {r} is {type(p).__name__}, expected bytes")
            if b"\0" in p:
                raise ValueError(f"decode_files: path {p!r} contains a NUL byte")
        sizes = np.full(n, -1, dtype=np.int64)
        errors = np.zeros(n, dtype=np.int64)
        # (uncompressed, placed whole: the kernel reads the file into its place, and
        # takes no more than the chunk's bytes)
        limits = [self.nbytes if self.codec == "none" and placement.direct[r]
                  else 2 * self.nbytes + 65536 for r in range(n)]
        rootfd = _root_fd("decode_files", root)
        try:
            self._decode_each(paths, rootfd, todo, place, limits, status, sizes, errors)
        finally:
            if rootfd >= 0:
                os.close(rootfd)
        return status, sizes, errors

    def _decode_files_roots(self, paths, placement, root, root_of):
        """``decode_files`` with ``root_of``: path ``r`` relative to
        ``root[root_of[r]]`` -- each root's rows read as ``decode_files`` reads one
        root's, the statuses, sizes and errors put back in row order."""
        import os

        n = len(paths)
        if not isinstance(root, (list, tuple)):
            raise TypeError(f"decode_files: with root_of, root must be a list of bytes, "
                            f"got {type(root).__name__}")
        for k, one in enumerate(root):
            if not isinstance(one, bytes) or b"\0" in one:
                raise TypeError(f"decode_files: root {k} must be bytes without NUL, got "
                                f"{one!r}")
        which = np.ascontiguousarray(root_of, dtype=np.int64)
        if which.shape != (n,):
            raise ValueError(f"decode_files: {n} rows but {which.size} root_of entries")
        for r, k in enumerate(which.tolist()):
            if not 0 <= k < len(root):
                raise ValueError(f"decode_files: root_of[{r}] is {k}, not one of the "
                                 f"{len(root)} roots")
        for r, p in enumerate(paths):
            if not isinstance(p, bytes):
                raise TypeError(f"decode_files: path {r} is {type(p).__name__}, expected bytes")
            if b"\0" in p:
                raise ValueError(f"decode_files: path {p!r} contains a NUL byte")
        status = np.full(n, DECODED, dtype=np.int8)
        todo, place = self._rows("decode_files", placement, n, status)
        sizes = np.full(n, -1, dtype=np.int64)
        errors = np.zeros(n, dtype=np.int64)
        limits = [self.nbytes if self.codec == "none" and placement.direct[r]
                  else 2 * self.nbytes + 65536 for r in range(n)]
        fds = []
        try:
            for one in root:  # (a missing one: -2, its rows NO_DATA)
                fds.append(_root_fd("decode_files", one))
            for k, fd in enumerate(fds):
                mine = [r for r in todo if which[r] == k]
                self._decode_each(paths, fd, mine, place, limits, status, sizes, errors)
        finally:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)
        return status, sizes, errors

    def _box(self, func, placement, plain):
        if not isinstance(placement, Placement):
            raise TypeError(f"Argument 'placement' has incorrect type (expected "
                            f"Placement, got {type(placement).__name__})")
        if placement.nshards == 0 or (plain and placement.n_inner != 1):
            raise ValueError(f"{func}: the placement is not a box's (Placement.box"
                             f"{'' if plain else ' with cps'})")
        if placement.nbytes != self.nbytes:
            raise ValueError(f"{func}: a placement of {placement.nbytes}-byte chunks, "
                             f"the decoder's are {self.nbytes} bytes")

    def decode_box_files(self, root, prefix, separator, placement, share=False):
        """A step-1 box of an array whose chunks are files, read in one call: the
        chunks' paths and ``decode_files``; ``None`` when every chunk was placed, else
        their statuses (see ``_ext._decode``)."""
        func = "decode_box_files"
        for name, v in (("root", root), ("prefix", prefix), ("separator", separator)):
            if not isinstance(v, bytes):
                raise TypeError(f"Argument '{name}' has incorrect type (expected bytes, got "
                                f"{type(v).__name__})")
        if b"\0" in root or b"\0" in prefix or b"\0" in separator:
            raise ValueError(f"{func}: root {root!r}, prefix {prefix!r} or separator "
                             f"{separator!r} contains a NUL byte")
        self._box(func, placement, True)
        paths = [prefix + separator.join(str(c).encode() for c in row)
                 for row in placement.coords.tolist()]
        status, _sizes, _errors = self.decode_files(paths, placement, root=root, share=share)
        return status if status.any() else None

    def decode_box_shards(self, fds, indexes, placement, fill, limit, share=False):
        """A step-1 box of a sharded array whose shards are open files, read in one
        call: the index entries, the fill value for empty ones and ``decode_ranges``;
        ``None`` unless a row is ``FAILED``, then every row's status (see
        ``_ext._decode``)."""
        func = "decode_box_shards"
        fd = _i64(fds)
        if not isinstance(indexes, list):
            raise TypeError(f"Argument 'indexes' has incorrect type (expected list, got "
                            f"{type(indexes).__name__})")
        self._box(func, placement, False)
        fill_item = _u8(fill)
        limit = _ssize(limit)
        if fill_item.size != placement.itemsize:
            raise ValueError(f"{func}: fill is {fill_item.size} bytes, an item "
                             f"{placement.itemsize}")
        m, n_inner = placement.nshards, placement.n_inner
        if fd.size != m or len(indexes) != m:
            raise ValueError(f"{func}: the box touches {m} shards, but {fd.size} fds and "
                             f"{len(indexes)} indexes are given")
        tables = []
        for g, index in enumerate(indexes):
            if fd[g] > 2**31 - 1:
                raise ValueError(f"{func}: file descriptor {fd[g]} (shard {g}) is not one")
            if index is None or fd[g] < 0:
                tables.append(None)
                continue
            if getattr(index, "dtype", None) != np.uint64:
                raise TypeError(f"{func}: index {g} is not a uint64 array")
            arr = np.asarray(memoryview(index))
            if not arr.flags.c_contiguous:
                raise ValueError(f"{func}: index {g} is not C-contiguous")
            if arr.shape != (n_inner, 2):
                raise ValueError(f"{func}: index {g} has shape {arr.shape}, expected "
                                 f"({n_inner}, 2)")
            tables.append(arr)
        cap = min(limit, 2 * self.nbytes + 65536)
        n = placement.n
        status = np.full(n, DECODED, dtype=np.int8)
        read = []  # rows read: (row, fd, offset, nbytes)
        for r in range(n):
            g, j = int(placement.shard[r]), int(placement.inner[r])
            table = tables[g]
            if table is None or int(table[j, 0]) == 2**64 - 1:
                fill_region(placement.dst, placement.dst_offsets[r], placement.dst_strides,
                            placement.shapes[r], fill_item)
                status[r] = NO_DATA
            elif int(table[j, 1]) > cap or int(table[j, 0]) > _INT64_MAX:
                status[r] = FAILED
            else:
                read.append((r, int(fd[g]), int(table[j, 0]), int(table[j, 1])))
        if read:
            rows = np.array([x[0] for x in read], dtype=np.int64)
            got, _errors = self.decode_ranges(
                *(np.array([x[k] for x in read], dtype=np.int64) for k in (1, 2, 3)),
                placement.take(rows), share=share)
            status[rows] = got
        return status if (status == FAILED).any() else None

    @staticmethod
    def _decode_each(paths, rootfd, todo, place, limits, status, sizes, errors) -> None:
        import errno as _errno
        import os
        import stat as _stat

        for r in todo:
            try:
                fd = _open_file(rootfd, paths[r])
            except OSError as e:
                code = e.errno or _errno.EIO
                if code in (_errno.ENOENT, _errno.ENOTDIR, _errno.EISDIR):
                    status[r] = NO_DATA
                else:
                    status[r], errors[r] = FAILED, code
                continue
            try:
                st = os.fstat(fd)
                if not _stat.S_ISREG(st.st_mode):
                    if _stat.S_ISDIR(st.st_mode):
                        status[r] = NO_DATA
                    else:  # a FIFO, a device: refused
                        status[r], errors[r] = FAILED, _errno.EINVAL
                    continue
                sizes[r] = st.st_size
                if st.st_size > limits[r]:
                    status[r], errors[r] = FAILED, _errno.EFBIG
                    continue
                data = os.pread(fd, st.st_size, 0) if st.st_size else b""
                if len(data) != st.st_size:
                    status[r], errors[r] = FAILED, _errno.EIO
                    continue
            except OSError as e:
                status[r], errors[r] = FAILED, e.errno or _errno.EIO
                continue
            finally:
                os.close(fd)
            if not place(r, np.frombuffer(data, dtype=np.uint8)):
                status[r] = FAILED


def open_nolinks(dirfd, path, flags, mode=0o666) -> int:
    """Open ``path`` relative to the directory ``dirfd`` without following any symbolic
    link: one directory at a time with ``O_NOFOLLOW`` (see ``_ext._fileio``)."""
    import errno as _errno
    import os
    import stat as _stat

    if not isinstance(path, bytes):
        raise TypeError(f"open_nolinks: path is {type(path).__name__}, expected bytes")
    if b"\0" in path:
        raise ValueError(f"open_nolinks: path {path!r} contains a NUL byte")

    def fail(code: int) -> OSError:
        return OSError(code, os.strerror(code), os.fsdecode(path))

    def is_link(name: bytes, fd: int) -> bool:
        try:
            return _stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            return False

    if path.startswith(b"/"):
        raise fail(_errno.EXDEV)
    parts = path.split(b"/")
    search = (getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
              | os.O_NOFOLLOW | os.O_CLOEXEC)
    cur = dirfd
    try:
        for i, part in enumerate(parts):
            if not part:
                raise fail(_errno.ENOENT)
            if part == b"..":
                raise fail(_errno.EXDEV)
            last = i == len(parts) - 1
            if is_link(part, cur):  # (O_EXCL never follows the last component)
                excl = last and flags & os.O_CREAT and flags & os.O_EXCL
                raise fail(_errno.EEXIST if excl else _errno.ELOOP)
            try:
                fd = os.open(part, (flags | os.O_NOFOLLOW | os.O_CLOEXEC) if last else search,
                             mode, dir_fd=cur)
            except OSError as e:
                raise fail(e.errno or _errno.EIO) from None
            if cur != dirfd:
                os.close(cur)
            cur = fd
        return cur
    except BaseException:
        if cur != dirfd:
            os.close(cur)
        raise


def crc32c(data) -> int:
    """The CRC-32C of ``data`` (``_ext._decode.crc32c``: the crc32c package's)."""
    import crc32c as _crc32c

    return _crc32c.crc32c(_u8(data).data)


class ShardFiles:
    """Whole shards, one file each, read and placed one call per shard (see
    ``_ext._decode.ShardFiles``), with the twin decoder."""

    def __init__(self, paths, root, rows, bounds, inner, n_inner, index_nbytes, at_end,
                 checksum, limit, keep, placement, fill) -> None:
        import threading

        if not isinstance(paths, list):
            raise TypeError(f"ShardFiles: paths must be a list, got {type(paths).__name__}")
        rows, bounds, inner = _i64(rows).copy(), _i64(bounds).copy(), _i64(inner).copy()
        n_inner, index_nbytes, limit, keep = (
            _ssize(n_inner), _ssize(index_nbytes), _ssize(limit), _ssize(keep))
        placement = _placement_arg(placement)
        nbytes, itemsize = placement.nbytes, placement.itemsize
        nshards = bounds.size - 1
        nrows = placement.n
        if nshards < 0 or len(paths) != nshards:
            raise ValueError(f"ShardFiles: {len(paths)} paths but {bounds.size} bounds "
                             f"(one more than the shards)")
        for p in paths:
            if not isinstance(p, bytes):
                raise TypeError(f"ShardFiles: path {p!r} is {type(p).__name__}, expected bytes")
            if b"\0" in p:
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
        if not isinstance(fill, bytes):
            raise TypeError(f"Argument 'fill' has incorrect type (expected bytes, got "
                            f"{type(fill).__name__})")
        if len(fill) != itemsize or itemsize < 1 or nbytes % itemsize:
            raise ValueError(f"ShardFiles: fill has {len(fill)} bytes, nbytes {nbytes}, "
                             f"itemsize {itemsize}: expected one item, a whole number of "
                             f"items")
        if inner.size != nrows:
            raise ValueError(f"ShardFiles: {nrows} rows but {inner.size} inner indexes")
        if bounds[0] != 0 or bounds[nshards] > rows.size:
            raise ValueError(f"ShardFiles: bounds run from {bounds[0]} to "
                             f"{bounds[nshards]}, not from 0 to at most {rows.size}")
        for g in range(nshards):
            if bounds[g + 1] < bounds[g]:
                raise ValueError(f"ShardFiles: bounds decrease at shard {g}")
        for r in rows.tolist():
            if not 0 <= r < nrows:
                raise ValueError(f"ShardFiles: row {r} is not one of the {nrows} rows")
            if not 0 <= inner[r] < n_inner:
                raise ValueError(f"ShardFiles: row {r} is inner chunk {inner[r]}, not one of "
                                 f"{n_inner}")
        self.placement = placement
        self.paths, self.root = list(paths), root
        self.rows, self.bounds, self.inner = rows, bounds, inner
        self.nbytes, self.n_inner, self.index_nbytes = nbytes, n_inner, index_nbytes
        self.at_end, self.checksum = bool(at_end), bool(checksum)
        self.limit, self.keep = limit, keep
        self.fill = fill
        self._stamps: list[tuple[int, int, int, int] | None] = [None] * nshards
        self._claims = threading.Lock()

    def read(self, decoder, g, index_out=None) -> int:
        import errno as _errno
        import os
        import stat as _stat

        g = _ssize(g)
        if not 0 <= g < len(self.paths):
            raise IndexError(f"ShardFiles.read: shard {g} of {len(self.paths)}")
        if decoder.nbytes != self.nbytes:
            raise ValueError(f"ShardFiles.read: a decoder of {decoder.nbytes}-byte chunks, "
                             f"expected {self.nbytes}")
        iv = None
        if index_out is not None:
            iv = np.asarray(memoryview(index_out))
            if iv.shape != (self.n_inner, 2):
                raise ValueError(f"ShardFiles.read: index_out has shape "
                                 f"{tuple(index_out.shape)}, expected ({self.n_inner}, 2)")
        place = functools.partial(self.placement.place, decoder)
        todo = {r for r in range(self.placement.n) if not self.placement.skip[r]}
        rows = self.rows[self.bounds[g]:self.bounds[g + 1]].tolist()
        self._stamps[g] = None
        rootfd = _root_fd("ShardFiles", self.root)
        data = None
        try:
            try:
                fd = _open_file(rootfd, self.paths[g])
            except OSError as e:
                if (e.errno or _errno.EIO) in (_errno.ENOENT, _errno.ENOTDIR, _errno.EISDIR):
                    return self._fill_all(rows, todo)
                return FAILED
            try:
                st = os.fstat(fd)
                if _stat.S_ISDIR(st.st_mode):
                    return self._fill_all(rows, todo)
                if not _stat.S_ISREG(st.st_mode) or st.st_size > self.limit:
                    return FAILED
                data = os.pread(fd, st.st_size, 0) if st.st_size else b""
                if len(data) != st.st_size:
                    return FAILED
            except OSError:
                return FAILED
            finally:
                os.close(fd)
        finally:
            if rootfd >= 0:
                os.close(rootfd)
        self._stamps[g] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        n, k = len(data), self.index_nbytes
        if n < k:
            return FAILED
        raw = data[n - k:] if self.at_end else data[:k]
        if self.checksum and crc32c(raw[:-4]) != int.from_bytes(raw[-4:], "little"):
            return FAILED
        idx = np.frombuffer(raw[:16 * self.n_inner], dtype="<u8").astype(np.uint64).reshape(
            self.n_inner, 2)
        if iv is not None:
            iv[...] = idx
        low, high = (0, n - k) if self.at_end else (k, n)
        if check_index(idx, low, high)[0]:
            return FAILED
        buf = np.frombuffer(data, dtype=np.uint8)
        for r in rows:
            off, nb = (int(x) for x in idx[self.inner[r]])
            if off == _UINT64_MAX:
                self._fill_row(r, todo)
            elif r in todo and not place(r, buf[off:off + nb]):
                return FAILED
        return DECODED

    def run(self, decoder, todo, status, cursor, max_shards, indexes=None) -> int:
        todo, cur = _i64(todo), np.asarray(memoryview(cursor))
        st_ = np.asarray(memoryview(status))
        n = todo.size
        if decoder.nbytes != self.nbytes:
            raise ValueError(f"ShardFiles.run: a decoder of {decoder.nbytes}-byte chunks, "
                             f"expected {self.nbytes}")
        if st_.size != n or cur.size != 1:
            raise ValueError(f"ShardFiles.run: {n} shards but {st_.size} statuses "
                             f"and {cur.size} cursors (expected one)")
        for g in todo.tolist():
            if not 0 <= g < len(self.paths):
                raise IndexError(f"ShardFiles.run: shard {g} of {len(self.paths)}")
        iv = None
        if indexes is not None:
            iv = np.asarray(memoryview(indexes))
            if iv.shape != (n, self.n_inner, 2):
                raise ValueError(f"ShardFiles.run: indexes has shape "
                                 f"{tuple(indexes.shape)}, expected ({n}, {self.n_inner}, 2)")
        done = 0
        while done < max_shards:
            with self._claims:  # (the compiled kernel: an atomic increment)
                i = int(cur[0])
                cur[0] = i + 1
            if i >= n:
                break
            st_[i] = self.read(decoder, int(todo[i]), None if iv is None else iv[i])
            done += 1
        return done

    def _fill_all(self, rows, todo) -> int:
        for r in rows:
            self._fill_row(r, todo)
        return NO_DATA

    def _fill_row(self, r: int, todo) -> None:
        """Place a chunk of fill items at row ``r`` (as a decoded chunk is placed)."""
        if r not in todo:
            return
        chunk = np.frombuffer(self.fill * (self.nbytes // len(self.fill)), dtype=np.uint8)
        self.placement.place_chunk(r, chunk)

    def stamp(self, g):
        g = _ssize(g)
        if not 0 <= g < len(self.paths):
            raise IndexError(f"ShardFiles.stamp: shard {g} of {len(self.paths)}")
        return self._stamps[g]


def _root_fd(func: str, root) -> int:
    """``root`` opened for :func:`open_nolinks`: ``-1`` for none, ``-2`` when missing."""
    import os

    if root is None:
        return -1
    if not isinstance(root, bytes) or b"\0" in root:
        raise TypeError(f"{func}: root must be bytes without NUL, got {root!r}")
    try:
        return os.open(root, getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return -2


def _open_file(rootfd: int, path: bytes) -> int:
    import errno as _errno
    import os

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if rootfd == -1:
        return os.open(path, flags)
    if rootfd == -2:
        raise OSError(_errno.ENOENT, os.strerror(_errno.ENOENT), os.fsdecode(path))
    return open_nolinks(rootfd, path, flags, 0)


def read_files_into(paths, dst, offsets, nbytes, exact=True, root=None):
    """Read files into ``dst`` at ``offsets`` when they hold ``nbytes`` bytes (at most
    ``nbytes`` when not ``exact``); returns ``(sizes, errors)`` (see ``_ext._fileio``).
    With ``root`` the paths are relative to it and opened without following links."""
    import os

    if not isinstance(paths, list):
        raise TypeError(f"read_files_into: paths must be a list, got {type(paths).__name__}")
    d = _u8(dst, writable=True)
    offs = _i64(offsets)
    nbytes = _ssize(nbytes)
    n = len(paths)
    if offs.size != n:
        raise ValueError(f"read_files_into: {n} paths but {offs.size} offsets")
    if nbytes < 0:
        raise ValueError(f"read_files_into: nbytes {nbytes} is negative")
    for i, p in enumerate(paths):
        if not isinstance(p, bytes):
            raise TypeError(f"read_files_into: path {i} is {type(p).__name__}, expected bytes")
        if b"\0" in p:
            raise ValueError(f"read_files_into: path {p!r} contains a NUL byte")
        if offs[i] < 0 or offs[i] > d.size - nbytes:
            raise ValueError(
                f"read_files_into: range [{offs[i]}, {offs[i] + nbytes}) of file {i} "
                f"lies outside the destination's {d.size} bytes"
            )
    sizes = np.full(n, -1, dtype=np.int64)
    errors = np.zeros(n, dtype=np.int64)
    rootfd = _root_fd("read_files_into", root)
    try:
        _read_each(paths, rootfd, d, offs, nbytes, exact, sizes, errors)
    finally:
        if rootfd >= 0:
            os.close(rootfd)
    return sizes, errors


def _read_each(paths, rootfd, d, offs, nbytes, exact, sizes, errors) -> None:
    import errno as _errno
    import os
    import stat as _stat

    for i, p in enumerate(paths):
        try:
            fd = _open_file(rootfd, p)
        except OSError as e:
            errors[i] = e.errno or _errno.EIO
            continue
        try:
            st = os.fstat(fd)
            if not _stat.S_ISREG(st.st_mode):
                errors[i] = _errno.EISDIR if _stat.S_ISDIR(st.st_mode) else _errno.EINVAL
                continue
            sizes[i] = want = st.st_size
            if want != nbytes and (exact or want > nbytes):
                continue
            got = 0
            while got < want:
                os.lseek(fd, got, os.SEEK_SET)
                chunk = os.read(fd, want - got)
                if not chunk:
                    sizes[i] = got
                    break
                start = int(offs[i]) + got
                d[start:start + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                got += len(chunk)
        except OSError as e:
            errors[i] = e.errno or _errno.EIO
        finally:
            os.close(fd)


def write_files(dir_fds, tmp_names, names, values, refuse_links=True):
    """Write each value to its temporary file in its open directory, then rename it
    over its name there; the errno of each failure, or 0 (see
    ``_ext._fileio.write_files``)."""
    import errno as _errno
    import os
    import stat as _stat

    for name, seq in (("tmp_names", tmp_names), ("names", names), ("values", values)):
        if not isinstance(seq, list):
            raise TypeError(f"write_files: {name} must be a list, got {type(seq).__name__}")
    fds = _i64(dir_fds)
    n = len(names)
    if len(tmp_names) != n or len(values) != n or fds.size != n:
        raise ValueError(f"write_files: {n} names but {len(tmp_names)} temporary names, "
                         f"{len(values)} values and {fds.size} directories")
    for i in range(n):
        for p in (tmp_names[i], names[i]):
            if not isinstance(p, bytes):
                raise TypeError(f"write_files: name {i} is {type(p).__name__}, expected bytes")
            if b"\0" in p or b"/" in p or not p:
                raise ValueError(f"write_files: name {p!r} is not one path component")
        if fds[i] < 0:
            raise ValueError(f"write_files: directory {fds[i]} of name {i} is not open")
    views = []
    for i, v in enumerate(values):
        try:
            m = memoryview(v)
        except TypeError as e:
            raise BufferError(f"write_files: value {i} has no C-contiguous buffer ({e})") from None
        if not m.c_contiguous:
            raise BufferError(f"write_files: value {i} has no C-contiguous buffer")
        views.append(memoryview(m.tobytes()) if m.nbytes == 0 else m.cast("B"))
    errors = np.zeros(n, dtype=np.int64)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
             | getattr(os, "O_BINARY", 0))
    for i in range(n):
        dfd = int(fds[i])
        if refuse_links:
            try:
                if _stat.S_ISLNK(os.stat(names[i], dir_fd=dfd, follow_symlinks=False).st_mode):
                    errors[i] = _errno.ELOOP
                    continue
            except OSError:
                pass
        try:
            fd = os.open(tmp_names[i], flags, 0o666, dir_fd=dfd)
        except OSError as e:
            errors[i] = e.errno or _errno.EIO
            continue
        try:
            try:
                done = 0
                while done < len(views[i]):
                    done += os.write(fd, views[i][done:])
            finally:
                os.close(fd)
            os.replace(tmp_names[i], names[i], src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as e:
            errors[i] = e.errno or _errno.EIO
            try:
                os.unlink(tmp_names[i], dir_fd=dfd)
            except OSError:
                pass
    return errors


def write_region_files(dir_fds, tmp_names, names, src, src_offsets, src_strides, shape,
                       itemsize, fill=None, extra=None, extra_first=False,
                       refuse_links=True):
    """:func:`write_files` of values gathered from regions of ``src`` (file ``i``: the
    regions at ``src_offsets[i]`` in C order, then ``extra``, or ``extra`` first);
    -1 for a file with a region all of ``fill``, which is not written (see
    ``_ext._fileio.write_region_files``)."""
    func = "write_region_files"
    s = _u8(src)
    offs = _i64(src_offsets, ndim=2)
    sst = _i64(src_strides)
    shp = _i64(shape)
    n = offs.shape[0]
    for name, seq in (("tmp_names", tmp_names), ("names", names)):
        if not isinstance(seq, list):
            raise TypeError(f"{func}: {name} must be a list, got {type(seq).__name__}")
    if len(tmp_names) != n or len(names) != n or _i64(dir_fds).size != n:
        raise ValueError(f"{func}: {len(names)} names but {len(tmp_names)} temporary names, "
                         f"{n} values and {_i64(dir_fds).size} directories")
    if shp.size < 1 or sst.size != shp.size:
        raise ValueError(f"{func}: shape {_ints(shp)} and src_strides {_ints(sst)} must "
                         f"have the same length, at least 1")
    _check_shape(func, shp)
    if (shp == 0).any() or offs.shape[1] < 1:
        raise ValueError(f"{func}: empty regions (shape {_ints(shp)}, "
                         f"{offs.shape[1]} per file)")
    if itemsize < 1 or sst[-1] != itemsize:
        raise ValueError(f"{func}: the last src stride must be the itemsize {itemsize} "
                         f"(runs contiguous in src), got {_ints(sst)}")
    for o in offs.reshape(-1).tolist():
        _check_span(func, "src", s.nbytes, o, sst, shp, itemsize)
    f = None if fill is None else _u8(fill)
    if f is not None and f.nbytes != itemsize:
        raise ValueError(f"{func}: fill holds {f.nbytes} bytes, an item {itemsize}")
    e = b"" if extra is None else _u8(extra).tobytes()
    status = np.zeros(n, dtype=np.int64)
    keep, values = [], []
    for i in range(n):
        regions = [np.lib.stride_tricks.as_strided(
            s[o:], shape=(*_ints(shp), itemsize), strides=(*_ints(sst), 1))
            for o in offs[i].tolist()]
        if f is not None and any((r.reshape(-1, itemsize) == f).all() for r in regions):
            status[i] = -1
            continue
        body = b"".join(r.tobytes() for r in regions)
        keep.append(i)
        values.append(e + body if extra_first else body + e)
    fds = _i64(dir_fds)
    status[keep] = write_files(fds[keep], [tmp_names[i] for i in keep],
                               [names[i] for i in keep], values, refuse_links)
    return status


def fill_region(dst, dst_offset, dst_strides, shape, fill) -> None:
    """Write the item ``fill`` at every index of a region of ``dst``."""
    d = _u8(dst, writable=True)
    dst_offset = _ssize(dst_offset)
    dstr = _i64(dst_strides)
    shp = _i64(shape)
    f = _u8(fill)
    if dstr.size != shp.size:
        raise ValueError(
            f"fill_region: shape {_ints(shp)} and dst_strides {_ints(dstr)} "
            f"must have the same length"
        )
    _check_shape("fill_region", shp)
    if f.size < 1:
        raise ValueError("fill_region: fill must be at least 1 byte long")
    if (shp == 0).any():
        return
    _check_dst_strides("fill_region", dstr, shp)
    _check_span("fill_region", "dst", d.size, dst_offset, dstr, shp, f.size)
    _item_view(d, dst_offset, dstr, shp, f.size, writeable=True)[...] = f


def is_uniform(buf, fill) -> bool:
    """Return True iff ``buf`` is the item ``fill`` repeated (True for an empty ``buf``)."""
    b = _u8(buf)
    f = _u8(fill)
    if f.size < 1:
        raise ValueError("is_uniform: fill must be at least 1 byte long")
    if b.size % f.size != 0:
        raise ValueError(
            f"is_uniform: buffer length {b.size} is not a multiple of the fill length {f.size}"
        )
    if b.size == 0:
        return True
    return bool((b.reshape(-1, f.size) == f).all())


# ---------------------------------------------------------------------------
# _indexing
# ---------------------------------------------------------------------------


def _dim_segments(n: int, c: int, s: int, t: int, m: int) -> np.ndarray:
    """Segments of ``s + k*t, k < m`` on chunks of size ``c``, as rows of
    ``(chunk, local_start, local_count, out_start, complete)``.

    Only the chunks the selected indices touch, as the compiled kernel lists them (at most
    ``min(m, ceil(n / c))`` rows): a step of at least the chunk size touches one chunk per
    index, each its own segment; a smaller step touches every chunk between the first and
    the last index (fewer than ``m + 1``), vectorised over them: chunk ``ci`` holds the
    selected ``k`` in ``[k_lo, k_hi)``.
    """
    a = abs(t)
    if a >= c:  # one index per chunk; |k*t| < n: no int64 overflow
        k = np.arange(m, dtype=np.int64)
        idx = s + k * t
        ci = idx // c
        local = idx - ci * c
        ones = np.ones(m, dtype=np.int64)
        complete = (a == 1) & (np.minimum(c, n - ci * c) == 1)
        return np.stack([ci, local, ones, k, complete.astype(np.int64)], axis=1)
    first, last = s, s + (m - 1) * t
    # Python-int arithmetic when int64 intermediates (ci*c + c) could overflow.
    dtype = np.int64 if n + c < 2**62 else object
    if t > 0:
        ci = np.arange(first // c, last // c + 1, dtype=dtype)
        k_lo = -((s - ci * c) // a)            # ceil((ci*c - s) / a)
        k_hi = -((s - (ci + 1) * c) // a)      # ceil(((ci+1)*c - s) / a)
    else:
        ci = np.arange(first // c, last // c - 1, -1, dtype=dtype)
        k_lo = -((ci * c + c - 1 - s) // a)    # ceil((s - (ci*c + c - 1)) / a)
        k_hi = (s - ci * c) // a + 1           # floor((s - ci*c) / a) + 1
    k_lo = np.clip(k_lo, 0, m)
    k_hi = np.clip(k_hi, 0, m)
    keep = k_hi > k_lo
    ci, k_lo, k_hi = ci[keep], k_lo[keep], k_hi[keep]
    local_count = k_hi - k_lo
    extent = np.minimum(c, n - ci * c)
    complete = (a == 1) & (local_count == extent)
    columns = [ci, s + k_lo * t - ci * c, local_count, k_lo, complete]
    return np.stack([np.asarray(col).astype(np.int64) for col in columns], axis=1)


def project(shape, chunk_shape, start, step, count):
    """Project a strided selection onto a regular chunk grid (see ``_ext._indexing``)."""
    arrays = [_i64(a) for a in (shape, chunk_shape, start, step, count)]
    shp, chk, sta, ste, cnt = arrays
    ndim = shp.size
    if any(a.size != ndim for a in arrays):
        raise ValueError(
            f"project: shape {_ints(shp)}, chunk_shape {_ints(chk)}, start {_ints(sta)}, "
            f"step {_ints(ste)} and count {_ints(cnt)} must have the same length"
        )
    if ndim > MAX_NDIM:
        raise ValueError(f"project: rank {ndim} exceeds the maximum of {MAX_NDIM}")
    empty = False
    dims = []
    for d in range(ndim):
        n, c, s, t, m = (int(a[d]) for a in arrays)
        if n < 0:
            raise ValueError(f"project: dim {d}: shape {n} is negative")
        if c < 1:
            raise ValueError(f"project: dim {d}: chunk_shape {c} must be >= 1")
        if t == 0:
            raise ValueError(f"project: dim {d}: step must be non-zero")
        if m < 0:
            raise ValueError(f"project: dim {d}: count {m} is negative")
        if m == 0:
            empty = True
            continue
        if not 0 <= s < n:
            raise ValueError(f"project: dim {d}: selected index {s} is out of bounds for shape {n}")
        last = s + (m - 1) * t
        if not 0 <= last < n:
            raise ValueError(
                f"project: dim {d}: selected index {last} "
                f"(start {s}, step {t}, count {m}) is out of bounds for shape {n}"
            )
        dims.append((n, c, s, t, m))

    if ndim == 0 or empty:
        rows = 0 if empty else 1
        tables = tuple(np.zeros((rows, ndim), dtype=np.int64) for _ in range(4))
        return (*tables, np.ones(rows, dtype=np.bool_))

    segs = [_dim_segments(*dim) for dim in dims]
    rows = 1
    for seg in segs:
        rows *= len(seg)
        if rows > _MAX_ROWS:
            raise ValueError(
                f"project: the selection touches more than 2**62 chunks "
                f"(segments per dim: {[len(x) for x in segs]})"
            )
    # Cartesian product in C order: row r takes segment idx[d][r] along dim d.
    grids = np.indices([len(seg) for seg in segs]).reshape(ndim, -1)
    picked = np.stack([seg[g] for seg, g in zip(segs, grids, strict=True)], axis=1)
    # picked: (rows, ndim, 5)
    tables = tuple(np.ascontiguousarray(picked[:, :, j]) for j in range(4))
    complete = picked[:, :, 4].astype(np.bool_).all(axis=1)
    return (*tables, complete)



#: a slice step beyond this magnitude resolves as this (``PySlice_Unpack``)
_STEP_BOUND = 2**63 - 1


def normalize_plain(selection, shape):
    """A plain basic selection as ``(start, step, count, dropped)``, or ``None``
    (see ``_ext._indexing``)."""
    sel = selection if type(selection) is tuple else (selection,)
    if type(shape) is not tuple:
        raise TypeError(f"normalize_plain: shape must be a tuple, got {type(shape).__name__}")
    ndim = len(shape)
    if len(sel) > ndim or ndim > MAX_NDIM:
        return None
    if any(type(n) is not int or not 0 <= n <= _STEP_BOUND for n in shape):
        return None
    start, step, count, dropped = [], [], [], []
    for d, n in enumerate(shape):
        s = sel[d] if d < len(sel) else slice(None)
        if type(s) is slice:
            if not all(x is None or type(x) is int for x in (s.start, s.stop, s.step)):
                return None
            if s.step == 0:
                return None
            if s.step is not None and abs(s.step) > _STEP_BOUND:
                s = slice(s.start, s.stop, _STEP_BOUND if s.step > 0 else -_STEP_BOUND)
            b, e, t = s.indices(n)
            c = len(range(b, e, t))
            start.append(b if c else 0)
            step.append(t)
            count.append(c)
            dropped.append(False)
        elif type(s) is int:
            if not -n <= s < n:
                return None
            start.append(s + n if s < 0 else s)
            step.append(1)
            count.append(1)
            dropped.append(True)
        else:
            return None
    return (np.array(start, dtype=np.int64), np.array(step, dtype=np.int64),
            np.array(count, dtype=np.int64), tuple(dropped))


def box_table(start, count, chunk_shape, cps, chunk_strides, out_strides):
    """The chunks a step-1 box touches, grouped by shard (see ``_ext._indexing``)."""
    arrays = [_i64(a) for a in (start, count, chunk_shape, cps, chunk_strides, out_strides)]
    sta, cnt, chk, per, cst, ost = arrays
    ndim = sta.size
    if any(a.size != ndim for a in arrays):
        raise ValueError(
            f"box_table: start {_ints(sta)}, count {_ints(cnt)}, chunk_shape {_ints(chk)}, "
            f"cps {_ints(per)}, chunk_strides {_ints(cst)} and out_strides {_ints(ost)} "
            f"must have the same length"
        )
    if ndim > MAX_NDIM:
        raise ValueError(f"box_table: rank {ndim} exceeds the maximum of {MAX_NDIM}")
    s0, n0, c0, p0 = (a.tolist() for a in (sta, cnt, chk, per))
    for d in range(ndim):
        if s0[d] < 0 or n0[d] < 1 or c0[d] < 1 or p0[d] < 1:
            raise ValueError(
                f"box_table: dim {d}: start {s0[d]} (>= 0), count {n0[d]} (>= 1), "
                f"chunk_shape {c0[d]} (>= 1) and cps {p0[d]} (>= 1) out of domain"
            )
        if s0[d] + n0[d] > 2**63 - 1:
            raise ValueError(f"box_table: dim {d}: start {s0[d]} + count {n0[d]} overflows")
    first = [s // c for s, c in zip(s0, c0, strict=True)]
    last = [(s + n - 1) // c for s, n, c in zip(s0, n0, c0, strict=True)]
    if math.prod(b - a + 1 for a, b in zip(first, last, strict=True)) > 2**40:
        raise ValueError("box_table: the box touches more than 2**40 chunks")
    if ndim == 0:  # one chunk, its own shard
        z = np.zeros(1, dtype=np.int64)
        return np.zeros((1, 0), np.int64), np.array([0, 1], np.int64), z, z, z.copy(), \
            np.zeros((1, 0), np.int64)
    # every chunk of the box, then a stable sort by shard (shards in C order)
    coords = np.array(list(itertools.product(*(range(a, b + 1) for a, b in
                                                 zip(first, last, strict=True)))),
                      dtype=np.int64).reshape(-1, ndim)
    shard = coords // per
    order = np.lexsort(shard.T[::-1])
    coords, shard = coords[order], shard[order]
    shards, starts = np.unique(shard, axis=0, return_index=True)
    bounds = np.append(np.sort(starts), len(coords)).astype(np.int64)
    local = coords - shard * per
    inner = np.zeros(len(coords), dtype=np.int64)
    for d in range(ndim):
        inner = inner * per[d] + local[:, d]
    begin = coords * chk  # (<= start + count - 1: the chunk's end is taken relative to
    lo = np.maximum(begin, sta)  # it, so nothing overflows near 2**63)
    hi = begin + np.minimum(chk, sta + cnt - begin)
    src = ((lo - coords * chk) * cst).sum(axis=1, dtype=np.int64)
    dst = ((lo - sta) * ost).sum(axis=1, dtype=np.int64)
    return (np.ascontiguousarray(shards, dtype=np.int64), bounds, inner, src, dst,
            np.ascontiguousarray(hi - lo, dtype=np.int64))


def _dense(shape: np.ndarray, strides: np.ndarray, itemsize: int, nbytes: int) -> bool:
    """Whether items of ``shape`` at ``strides`` cover bytes ``[0, nbytes)`` exactly,
    each byte once (a C, F or other permuted contiguous layout)."""
    dims = sorted((t, n) for n, t in zip(shape.tolist(), strides.tolist(), strict=True)
                  if n > 1)
    span = itemsize
    for t, n in dims:
        if t != span:
            return False
        span *= n
    return span == nbytes


def box_files_table(prefix, separator, start, count, chunk_shape, chunk_strides,
                    dst_strides, itemsize, swap_unit, nbytes, direct):
    """What ``ChunkDecoder.decode_box_files`` reads and where it puts it (arguments
    validated): each chunk's path, the ``decode_files`` offsets and shapes of its
    part of the box, and whether it is decoded straight into ``dst`` -- a whole chunk
    whose block there has its own strides, with ``direct``, no swap and chunk strides
    that cover its ``nbytes`` bytes exactly (:func:`_dense`)."""
    chk, cst, dstr = _i64(chunk_shape), _i64(chunk_strides), _i64(dst_strides)
    coords, _bounds, _inner, src_offsets, dst_offsets, shapes = box_table(
        start, count, chk, np.ones(chk.size, dtype=np.int64), cst, dstr)
    paths = [prefix + separator.join(str(c).encode() for c in row) for row in coords.tolist()]
    flags = _direct_flags(shapes, chk, cst, dstr, itemsize, swap_unit, nbytes, direct)
    return paths, src_offsets, dst_offsets, shapes, flags


def _direct_flags(shapes, chunk_shape, chunk_strides, dst_strides, itemsize, swap_unit,
                  nbytes, direct) -> np.ndarray:
    """Which rows of a box (``shapes``: their parts' shapes) are decoded straight into
    ``dst``: whole chunks, with ``direct``, no swap, chunk strides that cover their
    ``nbytes`` bytes exactly (:func:`_dense`) and the same strides in ``dst``."""
    chk, cst, dstr = _i64(chunk_shape), _i64(chunk_strides), _i64(dst_strides)
    same = (bool(direct) and swap_unit <= 1 and _dense(chk, cst, itemsize, nbytes)
            and all(dstr[d] == cst[d] for d in range(chk.size) if chk[d] > 1))
    return (np.all(shapes == chk, axis=1) & same).astype(np.uint8)


def format_chunk_keys(coords, prefix, separator) -> list[str]:
    """Render chunk keys: ``prefix + separator.join(str(c) for c in row)`` per row."""
    arr = _i64(coords, ndim=2)
    if not isinstance(prefix, str):
        raise TypeError(f"Argument 'prefix' has incorrect type (expected str, got {type(prefix).__name__})")
    if not isinstance(separator, str):
        raise TypeError(
            f"Argument 'separator' has incorrect type (expected str, got {type(separator).__name__})"
        )
    if arr.shape[0] == 0:
        return []
    neg = np.argwhere(arr < 0)
    if neg.size:
        r, d = (int(x) for x in neg[0])
        raise ValueError(
            f"format_chunk_keys: row {r} has negative coordinate {int(arr[r, d])} (dim {d})"
        )
    return [prefix + separator.join(map(str, row)) for row in arr.tolist()]


# ---------------------------------------------------------------------------
# _shard_index
# ---------------------------------------------------------------------------

_UINT64_MAX = 2**64 - 1


def _u64(value) -> int:
    """``uint64_t`` argument conversion, integers only (as ``_ext._shard_index``)."""
    v = operator.index(value)
    if v < 0:
        raise OverflowError("can't convert negative value to uint64_t")
    if v > _UINT64_MAX:
        raise OverflowError("Python int too large to convert to C unsigned long")
    return v


def check_index(index, low, high) -> tuple[int, int, int]:
    """Check a shard index of shape ``(n, 2)``; return ``(code, a, b)``.

    Codes: 0 fine, 1 entry ``a`` half empty, 2 its range overflows uint64,
    3 it starts before ``low``, 4 it ends after ``high``, 5 entries ``a`` and
    ``b`` overlap. Codes 1-4 take precedence: the first offending entry, its
    lowest code. Then the overlap rule: among used non-zero-length entries in
    ``(offset, entry)`` order, ``b`` is the first whose range meets an earlier
    one's, ``a`` that earlier one (``b``'s predecessor in the order). See
    ``src_ext/_shard_index.pyx``.
    """
    if index is None:
        raise TypeError("Argument 'index' must not be None")
    lo = _u64(low)
    hi = _u64(high)
    m = memoryview(index)
    assert m.shape is not None  # (a memoryview has a shape)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"check_index: index has shape {m.shape}, expected (n, 2)")
    if m.itemsize != 8 or m.format.lstrip("@=<") not in ("Q", "L"):
        raise ValueError(f"Buffer dtype mismatch, expected 'const uint64_t' but got {m.format!r}")
    if not m.c_contiguous:
        raise ValueError("Buffer not C contiguous.")
    idx = np.asarray(m).view(np.uint64)
    off, nb = idx[:, 0], idx[:, 1]
    empty_off, empty_nb = off == _UINT64_MAX, nb == _UINT64_MAX
    used = ~(empty_off | empty_nb)
    end = off + nb  # wraps modulo 2**64
    over = used & (end < off)
    ok = used & ~over
    codes = np.select(
        [empty_off != empty_nb, over, ok & (off < np.uint64(lo)), ok & (end > np.uint64(hi))],
        [1, 2, 3, 4],
        0,
    )
    bad = np.flatnonzero(codes)
    if bad.size:
        j = int(bad[0])
        return (int(codes[j]), j, -1)
    live = np.flatnonzero(used & (nb > 0))  # entry order, so a stable sort breaks ties by entry
    order = live[np.argsort(off[live], kind="stable")]
    hits = np.flatnonzero(end[order[:-1]] > off[order[1:]])
    if hits.size:
        p = int(hits[0])
        return (5, int(order[p]), int(order[p + 1]))
    return (0, -1, -1)


def group_by_chunk(ids, nchunks):
    """Twin of ``_indexing.group_by_chunk``: positions grouped by chunk id, stably."""
    ids = np.asarray(ids)
    if ids.dtype != np.int64 or ids.ndim != 1:
        raise TypeError("group_by_chunk: ids must be a 1-d int64 buffer")
    nchunks = operator.index(nchunks)
    if nchunks < 0:
        raise ValueError(f"group_by_chunk: nchunks must be >= 0, got {nchunks}")
    bad = np.flatnonzero((ids < 0) | (ids >= nchunks))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"group_by_chunk: id {int(ids[i])} at position {i} is outside [0, {nchunks})"
        )
    n = ids.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64)
    order = np.argsort(ids, kind="stable").astype(np.int64)
    sorted_ids = ids[order]
    first = np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1]))
    starts_body = np.flatnonzero(first)
    return order, sorted_ids[starts_body], np.append(starts_body, n).astype(np.int64)


def stream_min() -> int:
    """The output size from which the compiled copy kernels stream their stores
    (``zarrfast.kernels.stream_min``); the twins store the same bytes either way."""
    return 32 * 2**20


class ChunkEncoder:
    """Twin of ``_ext._encode.ChunkEncoder``: ``copy_region`` of each region into
    ``scratch`` (the kernel's gathering of a row of regions at once changes no byte),
    ``is_uniform`` against ``fill``, then numcodecs' ``Zstd``, ``GZip`` or ``Zlib``.  Its
    ``slot`` is the libraries' worst case (zstd's ``ZSTD_COMPRESSBOUND``, zlib's
    ``deflateBound`` for any settings)."""

    CODECS = ("zstd", "gzip", "zlib")

    def __init__(self, codec: str, level: int, checksum: bool = False) -> None:
        import numcodecs

        if codec not in self.CODECS:
            raise ValueError(f"ChunkEncoder: codec {codec!r} is not one of {self.CODECS}")
        if codec != "zstd" and not -1 <= level <= 9:
            raise ValueError(f"ChunkEncoder: {codec} level {level} is not -1 to 9")
        self.codec, self.level, self.checksum = codec, level, bool(checksum)
        self._impl = (numcodecs.Zstd(level=level, checksum=bool(checksum)) if codec == "zstd"
                      else numcodecs.GZip(level=level) if codec == "gzip"
                      else numcodecs.Zlib(level=level))

    def slot(self, nbytes: int) -> int:
        if not 0 <= nbytes <= 2**31 - 1 - 16:
            raise ValueError(f"ChunkEncoder.slot: a chunk of {nbytes} bytes (1 to "
                             f"{2**31 - 1 - 16})")
        if self.codec == "zstd":
            return nbytes + (nbytes >> 8) + ((128 * 1024 - nbytes) >> 11
                                             if nbytes < 128 * 1024 else 0)
        wrap = 18 if self.codec == "gzip" else 6
        return nbytes + ((nbytes + 7) >> 3) + ((nbytes + 63) >> 6) + 5 + wrap

    def compress(self, src) -> bytes:
        return bytes(self._impl.encode(_u8(src)))

    def compress_regions(self, src, src_offsets, src_strides, dst_strides, shape, itemsize,
                         swap_unit, fill, scratch, out, packed=False) -> np.ndarray:
        func = "ChunkEncoder.compress_regions"
        d = _u8(scratch, writable=True)
        o = _u8(out, writable=True)
        shp = _i64(shape)
        offs = _i64(src_offsets)
        _check_shape(func, shp)
        _check_item(func, itemsize, swap_unit)
        nbytes = int(np.prod(shp)) * itemsize
        if nbytes < 1 or d.nbytes < nbytes:
            raise ValueError(f"{func}: the region {_ints(shp)} of {itemsize}-byte items is "
                             f"{nbytes} bytes, the scratch buffer {d.nbytes}: it must hold a "
                             f"whole chunk")
        d = d[:nbytes]
        slot = self.slot(nbytes)
        if o.nbytes < len(offs) * slot:
            raise ValueError(f"{func}: out holds {o.nbytes} bytes, {len(offs)} chunks of "
                             f"{nbytes} bytes need {len(offs) * slot}")
        f = None if fill is None else _u8(fill)
        if f is not None and f.nbytes != itemsize:
            raise ValueError(f"{func}: fill holds {f.nbytes} bytes, an item {itemsize}")
        for r in range(len(offs)):  # every region checked before anything is compressed
            _check_span(func, "src", _u8(src).nbytes, int(offs[r]), _i64(src_strides), shp,
                        itemsize)
        sizes = np.empty(len(offs), dtype=np.int64)
        pos = 0
        for r in range(len(offs)):
            copy_region(src, int(offs[r]), src_strides, d, 0, dst_strides, shp, itemsize,
                        swap_unit)
            if f is not None and is_uniform(d, f):
                sizes[r] = -1
                continue
            got = self.compress(d)
            at = pos if packed else r * slot  # (packed: each right after the one before)
            o[at:at + len(got)] = np.frombuffer(got, dtype=np.uint8)
            sizes[r] = len(got)
            pos += len(got)
        return sizes
