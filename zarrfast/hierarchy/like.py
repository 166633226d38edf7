"""What the ``*_like`` functions and methods copy from their model array (zarr-python's
``_like_args``): shape, dtype, fill value, format, order, codecs and the chunk grid they go
with.  Shared by ``zarrfast.api`` (``zeros_like``...) and ``Group`` (``Group.zeros_like``...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarrfast import config as zconfig
from zarrfast.hierarchy.array import Array


def layout_of(a: Array) -> dict[str, Any]:
    """``chunks`` (and ``shards``) that make an array laid out as ``a``: for a rectilinear
    grid its chunk (or shard) sizes inside the array, as nested lists."""
    md = a.metadata
    if getattr(md, "zarr_format", 3) == 2 or md.regular:
        return {"chunks": a.chunks, "shards": a.shards}
    sizes = [list(s) for s in a.write_chunk_sizes]
    if a.codec_chain.sharding is not None and len(a.codec_chain.codecs) == 1:
        return {"chunks": a.chunks, "shards": sizes, "rectilinear": True}
    return {"chunks": sizes, "shards": None, "rectilinear": True}


#: the keywords (of ``create``, and of ``create_array`` as ``open_like`` and the ``Group``
#: methods take them) that set codecs: given one, a v3 model's codecs are not copied
CODEC_KEYWORDS = frozenset({"codecs", "compressor", "filters", "object_codec",
                             "compressors", "serializer", "shards"})


def like_kwargs_of(a: Any, kwargs: dict[str, Any], *, codecs: bool = True) -> dict[str, Any]:
    """``kwargs`` completed with what the ``*_like`` functions copy from the model ``a``, as
    [zarrfast.create][] takes it (zarr-python's ``_like_args``); ``kwargs`` win.

    ``a`` may be an asynchronous view (its array is the model) or anything NumPy makes an
    array of.  Always its shape and dtype.  From a zarrfast array also its fill value, Zarr
    format and order, and its codecs (v3: ``codecs``; v2: ``compressor`` and ``filters``)
    with the chunk grid they go with (a sharded array's shards, the sharding codec holding
    its inner chunks; a rectilinear grid's sizes as nested lists).  The codecs are not
    copied when ``codecs`` is false, nor when ``kwargs`` give another Zarr format or
    another data type (codecs are chosen for one data type), nor (v3) when they give one of
    ``CODEC_KEYWORDS``: ``chunks`` are then the array's (inner) chunks.  A v2 array's
    ``compressor`` and ``filters`` are copied each unless given (``compressors`` too
    replaces the compressor, ``object_codec`` the filters).  From any other array, its
    regular chunk shape (``_regular_chunks_of``)."""
    a = getattr(a, "_node", a)  # an asynchronous view: its array
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        a = np.asarray(a)
    out = dict(kwargs)
    out.setdefault("shape", a.shape)
    out.setdefault("dtype", a.dtype)
    if not isinstance(a, Array):
        chunks = _regular_chunks_of(a)
        if chunks is not None:
            out.setdefault("chunks", chunks)
        return out
    out.setdefault("fill_value", a.fill_value)
    out.setdefault("zarr_format", a.zarr_format)
    out.setdefault("order", a.order)
    md = a.metadata
    copy = (codecs and (out["zarr_format"] or zconfig.get("default_zarr_format")) == a.zarr_format
            and ("dtype" not in kwargs or _same_dtype(kwargs["dtype"], a.dtype)))
    if copy and a.zarr_format == 2:  # the compressor and the filters, each unless given
        out.setdefault("chunks", a.chunks)
        if {"codecs", "compressor", "compressors"}.isdisjoint(kwargs):
            out["compressor"] = md.compressor
        if {"codecs", "filters", "object_codec"}.isdisjoint(kwargs):
            out["filters"] = md.filters
    elif copy and CODEC_KEYWORDS.isdisjoint(kwargs):  # the codecs, and their chunk grid
        out.setdefault("chunks", md.chunk_grid.chunk_shape if md.regular
                       else [list(s) for s in a.write_chunk_sizes])
        out["codecs"] = md.codecs
    else:
        out.setdefault("chunks", layout_of(a)["chunks"])
    return out


def _same_dtype(given: Any, dtype: np.dtype) -> bool:
    """Whether the ``dtype`` keyword ``given`` names ``dtype`` (False when NumPy cannot
    tell)."""
    try:
        return np.dtype(given) == dtype
    except (TypeError, ValueError):
        return False


def _regular_chunks_of(a: Any) -> tuple[int, ...] | None:
    """The chunk shape of an array-like that is not a zarrfast array: its ``chunks`` when
    that is a tuple of ints (a zarr-python or h5py array); for a dask-like array, whose
    ``chunks`` holds every chunk's size per dimension, its ``chunksize`` when the grid is
    regular (each dimension's chunks all that size, but the last, which may be smaller);
    else None (irregular dask chunks are not copied)."""
    chunks = getattr(a, "chunks", None)
    if not isinstance(chunks, tuple):
        return None
    if all(isinstance(c, int) for c in chunks):
        return chunks
    size = getattr(a, "chunksize", None)
    if (not isinstance(size, tuple) or len(size) != len(chunks) or len(size) != len(a.shape)
            or not all(isinstance(n, (int, np.integer)) and n > 0 for n in size)):
        return None
    for sizes, n in zip(chunks, size, strict=True):
        if (not isinstance(sizes, tuple) or not sizes
                or not all(isinstance(c, (int, np.integer)) for c in sizes)
                or any(c != n for c in sizes[:-1]) or not 0 < sizes[-1] <= n):
            return None
    return tuple(int(n) for n in size)
