"""Top-level functions, named and shaped like zarr-python 3's synchronous API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._create import (
    build_array_metadata,
    read_array_metadata,
    read_group_metadata,
    read_node_metadata,
    write_new_node,
)
from ._paths import metadata_key, normalize_path
from .array import Array
from .errors import (
    ArrayNotFoundError,
    GroupNotFoundError,
    NodeNotFoundError,
    ZarrfastError,
)
from .group import Group, node_from_metadata
from .metadata.v3 import GroupMetadata
from .stores import Store
from .stores._resolve import StoreLike, make_store

__all__ = [
    "array",
    "create_array",
    "create_group",
    "group",
    "open",
    "open_array",
    "open_group",
]

_MODES = ("r", "r+", "a", "w", "w-")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ZarrfastError(f"mode must be one of {_MODES}, got {mode!r}")


def _check_format(zarr_format: Any) -> None:
    if zarr_format not in (None, 3):
        raise ZarrfastError(
            f"zarr_format={zarr_format!r}: only Zarr format 3 is supported so far"
        )


def _create_array_at(
    store: Store,
    path: str,
    *,
    shape: Any = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    filters: Any = "auto",
    compressors: Any = "auto",
    compressor: Any = "auto",
    serializer: Any = "auto",
    fill_value: Any = None,
    order: str | None = None,
    zarr_format: int | None = 3,
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    write_data: bool = True,
) -> Array:
    _check_format(zarr_format)
    node = f"array {('/' + path)!r}"
    if compressor != "auto":
        compressors = compressor
    if data is not None:
        data_arr = np.asarray(data)
        if shape is None:
            shape = data_arr.shape
        if dtype is None:
            dtype = data_arr.dtype
    else:
        data_arr = None
    if shape is None:
        raise ZarrfastError(f"{node}: shape is required (or pass data=)")
    if dtype is None:
        dtype = np.float64
    if order not in (None, "C", "F"):
        raise ZarrfastError(f"{node}: order must be 'C' or 'F', got {order!r}")
    config = dict(config or {})
    unknown = set(config) - {"write_empty_chunks", "order"}
    if unknown:
        raise ZarrfastError(f"{node}: unknown array config keys {sorted(unknown)}")
    md = build_array_metadata(
        shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, filters=filters,
        compressors=compressors, serializer=serializer, chunk_key_encoding=chunk_key_encoding,
        dimension_names=dimension_names, attributes=attributes, shards=shards, node=node,
    )
    if store.read_only:
        store._check_writable(metadata_key(path))
    write_new_node(store, path, md, overwrite=overwrite)
    arr = Array(store, path, md, read_only=False,
                write_empty_chunks=config.get("write_empty_chunks"),
                order=order or config.get("order") or "C")
    if data_arr is not None and write_data:
        arr[...] = data_arr
    return arr


def create_array(
    store: StoreLike = None,
    *,
    name: str | None = None,
    shape: Any = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    filters: Any = "auto",
    compressors: Any = "auto",
    serializer: Any = "auto",
    fill_value: Any = None,
    order: str | None = None,
    zarr_format: int | None = 3,
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    write_data: bool = True,
) -> Array:
    """Create a Zarr v3 array.

    Parameters
    ----------
    store
        A :class:`~zarrfast.storage.Store`, a local directory path (``str`` or
        ``Path``), a ``dict`` or ``None`` (in memory).
    name
        Path of the array within the store (parent groups are created).
    shape, dtype
        Shape and NumPy dtype (or a v3 data type name).  Both may come from ``data``.
    data
        Optional array-like to write after creating the array.
    chunks
        Chunk shape, an int for every dimension, or ``"auto"`` (about 1 MiB).
    filters, serializer, compressors
        The array -> array, array -> bytes and bytes -> bytes codecs, as codec
        objects from :mod:`zarrfast.codecs` or metadata dicts.  ``"auto"``:
        no filters, ``bytes`` (little endian), ``zstd`` level 0.
    fill_value
        Value of elements never written; ``None`` means 0 (``False``).
    chunk_key_encoding
        ``{"name": "default"|"v2", "separator": "/"|"."}``.
    dimension_names, attributes
        Stored in the metadata.
    overwrite
        Replace an existing node at ``name``.
    config
        ``{"write_empty_chunks": bool}``: store chunks equal to the fill value.

    Returns
    -------
    Array
    """
    if storage_options:
        raise ZarrfastError("storage_options are only meaningful for remote stores (not yet "
                            "supported)")
    s = make_store(store)
    return _create_array_at(
        s, normalize_path(name), shape=shape, dtype=dtype, data=data, chunks=chunks,
        shards=shards, filters=filters, compressors=compressors, serializer=serializer,
        fill_value=fill_value, order=order, zarr_format=zarr_format, attributes=attributes,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
        overwrite=overwrite, config=config, write_data=write_data,
    )


def array(data: Any, *, store: StoreLike = None, name: str | None = None, **kwargs: Any
          ) -> Array:
    """Create an array filled with ``data``."""
    return create_array(store, name=name, data=data, **kwargs)


def open_array(
    store: StoreLike = None,
    *,
    path: str | None = None,
    mode: str = "a",
    zarr_format: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Array:
    """Open an existing array (``mode`` ``'r'``, ``'r+'``, ``'a'``), or create one
    (``'w'``, ``'w-'``, or ``'a'`` when missing and ``shape`` is given)."""
    _check_mode(mode)
    _check_format(zarr_format)
    p = normalize_path(path if path is not None else kwargs.pop("name", None))
    s = make_store(store, read_only=mode == "r")
    if mode in ("w", "w-"):
        return _create_array_at(s, p, overwrite=mode == "w", **kwargs)
    try:
        md = read_array_metadata(s, p)
    except ArrayNotFoundError:
        if mode == "a" and kwargs.get("shape") is not None or (
            mode == "a" and kwargs.get("data") is not None
        ):
            return _create_array_at(s, p, **kwargs)
        raise
    order = kwargs.get("order") or "C"
    cfg = kwargs.get("config") or {}
    return Array(s, p, md, read_only=mode == "r" or s.read_only,
                 write_empty_chunks=cfg.get("write_empty_chunks"), order=order)


def open_group(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    zarr_format: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Group:
    """Open a group, creating it (with ``attributes``) for ``'w'``, ``'w-'``, or ``'a'``
    when missing."""
    _check_mode(mode)
    _check_format(zarr_format)
    p = normalize_path(path)
    s = make_store(store, read_only=mode == "r")
    if mode in ("w", "w-"):
        md = GroupMetadata(attributes=dict(attributes or {}))
        write_new_node(s, p, md, overwrite=mode == "w")
        return Group(s, p, md, read_only=False)
    try:
        md = read_group_metadata(s, p)
    except GroupNotFoundError:
        if mode == "a":
            md = GroupMetadata(attributes=dict(attributes or {}))
            write_new_node(s, p, md, overwrite=False)
            return Group(s, p, md, read_only=False)
        raise
    return Group(s, p, md, read_only=mode == "r" or s.read_only)


def group(store: StoreLike = None, *, overwrite: bool = False, path: str | None = None,
          attributes: Mapping[str, Any] | None = None, **kwargs: Any) -> Group:
    """Create a group (or open it if it exists and ``overwrite`` is false)."""
    return open_group(store, mode="w" if overwrite else "a", path=path, attributes=attributes,
                      **kwargs)


def create_group(store: StoreLike, *, path: str | None = None, overwrite: bool = False,
                 attributes: Mapping[str, Any] | None = None, **kwargs: Any) -> Group:
    """Create a new group; an existing node is an error unless ``overwrite``."""
    _check_format(kwargs.pop("zarr_format", None))
    p = normalize_path(path)
    s = make_store(store)
    md = GroupMetadata(attributes=dict(attributes or {}))
    write_new_node(s, p, md, overwrite=overwrite)
    return Group(s, p, md, read_only=False)


def open(  # noqa: A001 - zarr-python's name
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    zarr_format: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Array | Group:
    """Open the array or group at ``path``; create an array when ``shape`` is given,
    otherwise a group, if nothing is there (modes ``'a'``, ``'w'``, ``'w-'``)."""
    _check_mode(mode)
    _check_format(zarr_format)
    p = normalize_path(path)
    s = make_store(store, read_only=mode == "r")
    if mode in ("w", "w-"):
        if "shape" in kwargs or "data" in kwargs:
            return _create_array_at(s, p, overwrite=mode == "w", **kwargs)
        return open_group(s, mode=mode, path=p, **kwargs)
    try:
        md = read_node_metadata(s, p)
    except NodeNotFoundError:
        if mode == "a":
            if "shape" in kwargs or "data" in kwargs:
                return _create_array_at(s, p, **kwargs)
            return open_group(s, mode="a", path=p, **kwargs)
        raise
    return node_from_metadata(s, p, md, read_only=mode == "r" or s.read_only)


