"""Top-level functions, named and shaped like zarr-python 3's synchronous API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._create import build_array_metadata, build_array_metadata_v2
from ._nodes import node_key, read_node_metadata, read_typed_metadata, write_new_node
from ._paths import normalize_path
from .array import Array
from .errors import (
    ArrayNotFoundError,
    GroupNotFoundError,
    NodeNotFoundError,
    ZarrfastError,
)
from .group import Group, node_from_metadata
from .metadata.v2 import GroupMetadataV2
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
    "open_consolidated",
    "consolidate_metadata",
]

_MODES = ("r", "r+", "a", "w", "w-")



def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ZarrfastError(f"mode must be one of {_MODES}, got {mode!r}")


def _check_format(zarr_format: Any) -> None:
    if zarr_format not in (None, 2, 3):
        raise ZarrfastError(f"zarr_format must be 2, 3 or None, got {zarr_format!r}")


def _new_group_metadata(zarr_format: int | None, attributes: Mapping[str, Any] | None):
    attrs = dict(attributes or {})
    return GroupMetadataV2(attributes=attrs) if zarr_format == 2 else GroupMetadata(
        attributes=attrs)


def _draft_node(store: Store, path: str, mode: str, node_type: str | None,
                order: str | None, root_doc: Any) -> Any:
    """The node at ``path`` if ``store`` holds one of the seed drafts' layouts (read-only),
    else ``None``.  ``root_doc`` is the store's root ``zarr.json`` (``None`` if missing).
    Creating nodes below the root of a draft store is refused: a store holds one layout."""
    from ._draft import DraftHierarchy, open_draft
    from .metadata.draft import ENTRY_POINT_KEY, parse_entry_point

    entry = parse_entry_point(root_doc, ENTRY_POINT_KEY)
    if entry is None:
        return None
    hierarchy = DraftHierarchy(store, entry)
    if mode in ("w", "w-"):
        if mode == "w" and path == "":
            return None  # replacing the whole store is allowed
        raise ZarrfastError(
            f"{store!r} holds a {hierarchy.layout} hierarchy (read-only); cannot create "
            f"{path or '/'!r} in it with mode {mode!r}: convert it with zarrfast.convert"
        )
    return open_draft(store, path, mode, node_type=node_type, hierarchy=hierarchy,
                      order=order or "C")


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
    if zarr_format == 2:
        if shards is not None or serializer != "auto":
            raise ZarrfastError(f"{node}: Zarr v2 arrays have no shards or serializer")
        md: Any = build_array_metadata_v2(
            shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, filters=filters,
            compressors=compressors, order=order, chunk_key_encoding=chunk_key_encoding,
            dimension_names=dimension_names, attributes=attributes, node=node,
        )
    else:
        md = build_array_metadata(
            shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, filters=filters,
            compressors=compressors, serializer=serializer,
            chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
            attributes=attributes, shards=shards, node=node,
        )
    if store.read_only:
        store._check_writable(node_key(path, "zarr.json"))
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
    draft = (None if zarr_format == 2 else
             _draft_node(s, p, mode, "array", kwargs.get("order"), s.get("zarr.json")))
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        return _create_array_at(s, p, overwrite=mode == "w", **kwargs)
    try:
        md = read_typed_metadata(s, p, "array", zarr_format)
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
    use_consolidated: bool | str | None = None,
    **kwargs: Any,
) -> Group:
    """Open a group, creating it (with ``attributes``) for ``'w'``, ``'w-'``, or ``'a'``
    when missing."""
    _check_mode(mode)
    _check_format(zarr_format)
    p = normalize_path(path)
    s = make_store(store, read_only=mode == "r")
    # read once: draft detection, and v3 metadata at the root (v2 has no zarr.json)
    root_doc = s.get("zarr.json") if zarr_format != 2 else None
    draft = _draft_node(s, p, mode, "group", None, root_doc)
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        md = _new_group_metadata(zarr_format, attributes)
        write_new_node(s, p, md, overwrite=mode == "w")
        return Group(s, p, md, read_only=False)
    read_only = mode == "r" or s.read_only
    if use_consolidated is not False:
        group = _open_consolidated_group(s, p, zarr_format, read_only,
                                         required=use_consolidated is True,
                                         root_doc=root_doc if p == "" else ...)
        if group is not None:
            return group
    try:
        md = read_typed_metadata(s, p, "group", zarr_format)
    except GroupNotFoundError:
        if mode == "a":
            md = _new_group_metadata(zarr_format, attributes)
            write_new_node(s, p, md, overwrite=False)
            return Group(s, p, md, read_only=False)
        raise
    return Group(s, p, md, read_only=read_only)


def group(store: StoreLike = None, *, overwrite: bool = False, path: str | None = None,
          attributes: Mapping[str, Any] | None = None, **kwargs: Any) -> Group:
    """Create a group (or open it if it exists and ``overwrite`` is false)."""
    return open_group(store, mode="w" if overwrite else "a", path=path, attributes=attributes,
                      **kwargs)


def create_group(store: StoreLike, *, path: str | None = None, overwrite: bool = False,
                 attributes: Mapping[str, Any] | None = None, **kwargs: Any) -> Group:
    """Create a new group; an existing node is an error unless ``overwrite``."""
    zarr_format = kwargs.pop("zarr_format", None)
    _check_format(zarr_format)
    p = normalize_path(path)
    s = make_store(store)
    md = _new_group_metadata(zarr_format, attributes)
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
    draft = (None if zarr_format == 2 else
             _draft_node(s, p, mode, None, kwargs.get("order"), s.get("zarr.json")))
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        if "shape" in kwargs or "data" in kwargs:
            return _create_array_at(s, p, overwrite=mode == "w", **kwargs)
        return open_group(s, mode=mode, path=p, **kwargs)
    try:
        md = read_node_metadata(s, p, zarr_format)
    except NodeNotFoundError:
        if mode == "a":
            if "shape" in kwargs or "data" in kwargs:
                return _create_array_at(s, p, **kwargs)
            return open_group(s, mode="a", path=p, **kwargs)
        raise
    return node_from_metadata(s, p, md, read_only=mode == "r" or s.read_only)




# -- consolidated metadata ------------------------------------------------------------


def _open_consolidated_group(store: Store, path: str, zarr_format: int | None,
                             read_only: bool, *, required: bool, root_doc: Any = ...
                             ) -> Group | None:
    """The group at ``path`` with its consolidated metadata, or ``None`` if it has none
    (an error instead when ``required``)."""
    from ._consolidated import read_consolidated

    found = read_consolidated(store, path, zarr_format, root_doc=root_doc)
    if found is None:
        if required:
            raise ZarrfastError(
                f"group {path or '/'!r} in {store!r} has no consolidated metadata "
                f"(no .zmetadata, no consolidated_metadata in zarr.json); call "
                f"zarrfast.consolidate_metadata first or pass use_consolidated=False"
            )
        return None
    md, members = found
    return Group(store, path, md, read_only=read_only, consolidated=members)


def open_consolidated(store: StoreLike = None, *, path: str | None = None, mode: str = "r",
                      zarr_format: int | None = None, **kwargs: Any) -> Group:
    """Open a group from its consolidated metadata: one read for the whole hierarchy."""
    return open_group(store, mode=mode, path=path, zarr_format=zarr_format,
                      use_consolidated=True, **kwargs)


def consolidate_metadata(store: StoreLike, path: str | None = None,
                         zarr_format: int | None = None) -> Group:
    """Gather the metadata of every node below the group at ``path`` into it (v2:
    ``.zmetadata``; v3: ``consolidated_metadata`` in its ``zarr.json``), and return the
    group opened from it."""
    from ._consolidated import write_consolidated

    s = make_store(store)
    p = normalize_path(path)
    md = read_typed_metadata(s, p, "group", zarr_format)
    write_consolidated(s, p, md)
    return open_consolidated(s, path=p, mode="r+" if not s.read_only else "r",
                             zarr_format=md.zarr_format)
