"""Top-level functions, named and shaped like zarr-python 3's synchronous API
(``zarr.api.synchronous``): the fast path, no event loop involved."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from zarrfast import config as zconfig
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    MetadataValidationError,
    NodeNotFoundError,
    ZarrfastError,
    ZarrUserWarning,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.create import DEFAULT_FILL_VALUE, check_zarr_format, create_array_at
from zarrfast.hierarchy.group import Group, node_from_metadata
from zarrfast.hierarchy.keywords import (
    IGNORED,
    check_keywords,
    checked,
    keyword_names,
    warn_ignored,
    warn_write_empty_chunks,
)
from zarrfast.hierarchy.legacy import create_legacy
from zarrfast.hierarchy.node import (
    read_node_metadata,
    read_typed_metadata,
    write_new_node,
)
from zarrfast.metadata.paths import normalize_path
from zarrfast.metadata.v2 import GroupMetadataV2
from zarrfast.metadata.v3 import GroupMetadata
from zarrfast.storage import Store, StorePath
from zarrfast.storage.resolve import StoreLike, make_store

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
    "create",
    "create_hierarchy",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "load",
    "ones",
    "ones_like",
    "open_like",
    "save",
    "save_array",
    "save_group",
    "tree",
    "zeros",
    "zeros_like",
]

_MODES = ("r", "r+", "a", "w", "w-")


def _resolve(store: StoreLike | StorePath, path: str | None, *, read_only: bool = False,
             storage_options: Mapping[str, Any] | None = None) -> tuple[Store, str]:
    """The store of ``store`` and the node's normalized path in it; a
    :class:`~zarrfast.storage.StorePath` given as the store puts its path first."""
    if isinstance(store, StorePath):
        inner, outer = normalize_path(path), normalize_path(store.path)
        return (make_store(store.store, read_only=read_only, storage_options=storage_options),
                f"{outer}/{inner}" if outer and inner else outer or inner)
    return (make_store(store, read_only=read_only, storage_options=storage_options),
            normalize_path(path))


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ZarrfastError(f"mode must be one of {_MODES}, got {mode!r}")


def _new_group_metadata(zarr_format: int | None, attributes: Mapping[str, Any] | None):
    """A new group's metadata; ``zarr_format=None``: ``config["default_zarr_format"]``."""
    attrs = dict(attributes or {})
    fmt = zarr_format if zarr_format is not None else zconfig.get("default_zarr_format")
    return GroupMetadataV2(attributes=attrs) if fmt == 2 else GroupMetadata(attributes=attrs)


def _created_meanwhile(conflict: ZarrfastError, read: Callable[[], Any]) -> Any:
    """The metadata of the node another thread or process created between this caller's
    finding the path free and its creating a node there (``conflict``: the error that
    creating raised); ``conflict`` itself when no node is there (its parent is an array)."""
    try:
        return read()
    except NodeNotFoundError:
        raise conflict from None


def _draft_first(store: Store, path: str, mode: str, node_type: str | None,
                 order: str | None, zarr_format: int | None) -> tuple[Any, Any]:
    """Before a node is opened at ``path``: ``(draft node or None, root zarr.json)``.
    The root ``zarr.json`` is read here (once) only when it is the node's own metadata
    or a node is about to be created; it is ``...`` when not read.  Elsewhere a draft
    layout shows only once no node metadata is found (:func:`_draft_after`): the drafts
    keep none at ``path/zarr.json``, ``.zarray`` or ``.zgroup``."""
    if zarr_format == 2 or (path != "" and mode not in ("w", "w-")):
        return None, ...
    root_doc = store.get("zarr.json")
    return _draft_node(store, path, mode, node_type, order, root_doc), root_doc


def _draft_after(store: Store, path: str, mode: str, node_type: str | None,
                 order: str | None, zarr_format: int | None, root_doc: Any) -> Any:
    """After no node metadata was found at ``path``: the draft node there, if the store
    holds a draft layout, else ``None``."""
    if zarr_format == 2 or root_doc is not ...:
        return None  # (read and checked already, or v2)
    return _draft_node(store, path, mode, node_type, order, store.get("zarr.json"))


def _draft_node(store: Store, path: str, mode: str, node_type: str | None,
                order: str | None, root_doc: Any) -> Any:
    """The node at ``path`` if ``store`` holds one of the seed drafts' layouts (read-only),
    else ``None``.  ``root_doc`` is the store's root ``zarr.json`` (``None`` if missing).
    Creating nodes below the root of a draft store is refused: a store holds one layout."""
    from zarrfast.hierarchy.draft import DraftHierarchy, open_draft
    from zarrfast.metadata.draft import ENTRY_POINT_KEY, parse_entry_point

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


@checked
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
    fill_value: Any = DEFAULT_FILL_VALUE,
    order: str | None = None,
    zarr_format: int | None = None,
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
    s, p = _resolve(store, name, storage_options=storage_options)
    return create_array_at(
        s, p, shape=shape, dtype=dtype, data=data, chunks=chunks,
        shards=shards, filters=filters, compressors=compressors, serializer=serializer,
        fill_value=fill_value, order=order, zarr_format=zarr_format, attributes=attributes,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
        overwrite=overwrite, config=config, write_data=write_data,
        data_exclusive=True,  # as zarr-python's create_array: data, or shape and dtype
    )


def array(data: Any, *, store: StoreLike = None, name: str | None = None,
          path: str | None = None, storage_options: Mapping[str, Any] | None = None,
          mode: str | None = None, read_only: bool | None = None, **kwargs: Any) -> Array:
    """Create an array filled with ``data`` (``dtype=`` may convert it).  ``path``
    (zarr-python's name for it) or ``name``: where in the store.

    The other keywords are those of :func:`create_array`, or those of zarr-python's older
    :func:`create`, to which zarr-python's ``array`` passes them (``chunk_shape``,
    ``codecs``, ``dimension_separator``, ``object_codec``, the deprecated
    ``write_empty_chunks``, with its warning; ``synchronizer``, ``chunk_store``,
    ``cache_metadata``, ``cache_attrs`` and ``meta_array`` are ignored with its "not yet
    implemented" warning).  ``mode`` as :func:`create` takes it; ``read_only=True`` is
    refused (a ``ValueError``) before anything is written, as in zarr-python."""
    _check_open_array_keywords("array", kwargs, _ARRAY_KEYWORDS)
    if path is not None and name is not None and normalize_path(path) != normalize_path(name):
        raise TypeError(f"array() got both name={name!r} and path={path!r}: give one")
    if read_only:  # (zarr-python's words)
        raise ZarrfastError("read_only=True is no longer supported when creating new arrays")
    store_read_only, overwrite = _creating_mode(mode, kwargs.pop("overwrite", False))
    s, p = _resolve(store, name if name is not None else path, read_only=store_read_only,
                    storage_options=storage_options)
    return _create_opened(s, p, overwrite, kwargs.pop("zarr_format", None),
                          {**kwargs, "data": data})


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
    (``'w'``, ``'w-'``, or ``'a'`` when missing and ``shape`` is given).

    The other keywords create the array: those of :func:`create_array`, or those of
    zarr-python's older :func:`create` (``chunk_shape``, ``codecs``,
    ``dimension_separator``, ``object_codec``); ``config`` and ``order`` also apply to
    an array opened, and so does ``read_only=True``: the array returned, opened or
    created, refuses writes (zarr-python takes the keyword and ignores it).  An unknown
    keyword is a ``TypeError``, whatever the mode."""
    _check_mode(mode)
    check_zarr_format(zarr_format)
    _check_open_array_keywords("open_array", kwargs)
    name = kwargs.pop("name", None)
    if path is not None and name is not None and normalize_path(path) != normalize_path(name):
        raise TypeError(f"open_array() got both path={path!r} and name={name!r}: give one")
    s, p = _resolve(store, path if path is not None else name,
                    read_only=mode == "r", storage_options=storage_options)
    draft, root_doc = _draft_first(s, p, mode, "array", kwargs.get("order"), zarr_format)
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        return _create_opened(s, p, mode == "w", zarr_format, kwargs)
    try:
        md = read_typed_metadata(s, p, "array", zarr_format,
                                 zarr_json=root_doc if p == "" else ...)
    except ArrayNotFoundError:
        draft = _draft_after(s, p, mode, "array", kwargs.get("order"), zarr_format, root_doc)
        if draft is not None:
            return draft
        if mode == "a" and kwargs.get("shape") is not None or (
            mode == "a" and kwargs.get("data") is not None
        ):
            try:
                return _create_opened(s, p, False, zarr_format, kwargs)
            except ContainsArrayError as conflict:  # another thread or process created it
                md = _created_meanwhile(conflict, lambda: read_typed_metadata(
                    s, p, "array", zarr_format))
        else:
            raise
    cfg = kwargs.get("config") or {}
    cfg = cfg if isinstance(cfg, Mapping) else {"order": getattr(cfg, "order", None),
                                                "write_empty_chunks":
                                                    getattr(cfg, "write_empty_chunks", None)}
    if kwargs.get("write_empty_chunks") is not None:  # (the older keyword wins, as there)
        cfg = {**cfg, "write_empty_chunks": kwargs["write_empty_chunks"]}
    # order None: config["array.order"], as zarr-python resolves it when it opens an array
    return Array(s, p, md,
                 read_only=mode == "r" or s.read_only or bool(kwargs.get("read_only")),
                 write_empty_chunks=cfg.get("write_empty_chunks"),
                 order=kwargs.get("order") or cfg.get("order"))


#: zarr-python's older ``create`` keywords that ``create_array`` does not take
_LEGACY_ONLY = frozenset({"chunk_shape", "codecs", "dimension_separator", "object_codec"})
#: ``create_array`` keywords that zarr-python's older ``create`` does not take
_MODERN_ONLY = frozenset({"shards", "compressors", "serializer", "write_data"})


def _check_open_array_keywords(function: str, kwargs: Mapping[str, Any],
                               accepted: Iterable[str] | None = None) -> None:
    """``TypeError`` for a keyword ``open_array`` (or the keywords ``accepted``) does not
    take; zarr-python's warnings for the keywords it takes and ignores, and for
    ``write_empty_chunks``, pointing at the caller of ``function``."""
    check_keywords(function, kwargs, OPEN_ARRAY_KEYWORDS if accepted is None else accepted)
    warn_ignored({k: kwargs.get(k) for k in IGNORED}, stacklevel=4)
    if "write_empty_chunks" in kwargs:
        warn_write_empty_chunks(stacklevel=4)


def _creating_mode(mode: str | None, overwrite: bool | None) -> tuple[bool, bool]:
    """zarr-python's ``mode`` for a function that creates an array (``create``, ``array``,
    ``save_array``): ``(open the store read-only, overwrite)``.  ``'w'`` replaces a node
    there even without ``overwrite``; ``'w-'`` never replaces one, even with it; ``'r'``
    opens the store read-only, so nothing can be created; ``None``, ``'a'`` and ``'r+'``
    leave ``overwrite`` as given."""
    if mode is None:
        return False, bool(overwrite)
    _check_mode(mode)
    if mode == "w-":
        return False, False
    return mode == "r", bool(overwrite) or mode == "w"


def _create_opened(store: Store, path: str, overwrite: bool, zarr_format: int | None,
                   kwargs: dict[str, Any]) -> Array:
    """The array ``open_array`` creates, in ``zarr_format``, from its creation keywords
    (``create_array``'s, or zarr-python's older ``create``'s); read-only if
    ``read_only`` is true (once created)."""
    kw = {k: v for k, v in kwargs.items() if k not in IGNORED and k != "read_only"}
    kw["zarr_format"] = zarr_format
    if kwargs.get("read_only"):
        arr = _create_opened(store, path, overwrite, zarr_format, kw)
        arr._read_only = True
        return arr
    legacy = sorted(_LEGACY_ONLY & kw.keys())
    if legacy:
        modern = sorted(_MODERN_ONLY & kw.keys())
        if modern:
            raise TypeError(f"{legacy[0]!r} (an argument of zarrfast.create) and "
                            f"{modern[0]!r} (of zarrfast.create_array) cannot be given "
                            f"together")
        if kw.get("shape") is None and kw.get("data") is not None:
            kw["shape"] = np.shape(kw["data"])
        return create_legacy(store, path, overwrite=overwrite, **kw)
    wec = kw.pop("write_empty_chunks", None)
    if wec is not None:
        cfg = kw.get("config") or {}
        cfg = cfg.to_dict() if not isinstance(cfg, Mapping) else dict(cfg)
        kw["config"] = {**cfg, "write_empty_chunks": wec}
    return create_array_at(store, path, overwrite=overwrite, **kw)


@checked
def open_group(
    store: StoreLike = None,
    *,
    mode: str = "a",
    path: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    zarr_format: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    use_consolidated: bool | str | None = None,
    cache_attrs: bool | None = None,
    synchronizer: Any = None,
    chunk_store: StoreLike = None,
    meta_array: Any = None,
) -> Group:
    """Open a group, creating it (with ``attributes``) for ``'w'``, ``'w-'``, or ``'a'``
    when missing.

    ``cache_attrs``, ``synchronizer``, ``chunk_store`` and ``meta_array`` are taken and
    ignored, with zarr-python's warning ("... is not yet implemented")."""
    warn_ignored({"cache_attrs": cache_attrs, "synchronizer": synchronizer,
                  "chunk_store": chunk_store, "meta_array": meta_array},
                 stacklevel=4)  # (the caller of @checked's wrapper)
    _check_mode(mode)
    check_zarr_format(zarr_format)
    s, p = _resolve(store, path, read_only=mode == "r", storage_options=storage_options)
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
        if mode != "a":
            raise
        new = _new_group_metadata(zarr_format, attributes)
        try:
            write_new_node(s, p, new, overwrite=False)
        except (ContainsGroupError, ContainsArrayError) as conflict:  # created meanwhile?
            md = _created_meanwhile(conflict, lambda: read_typed_metadata(
                s, p, "group", zarr_format))
        else:
            return Group(s, p, new, read_only=False)
    return Group(s, p, md, read_only=read_only)


@checked
def group(store: StoreLike = None, *, overwrite: bool = False, path: str | None = None,
          attributes: Mapping[str, Any] | None = None, zarr_format: int | None = None,
          storage_options: Mapping[str, Any] | None = None, chunk_store: StoreLike = None,
          cache_attrs: bool | None = None, synchronizer: Any = None, meta_array: Any = None
          ) -> Group:
    """Create a group (or open it if it exists and ``overwrite`` is false).
    ``chunk_store``, ``cache_attrs``, ``synchronizer`` and ``meta_array`` are taken and
    ignored, with zarr-python's warning."""
    warn_ignored({"cache_attrs": cache_attrs, "synchronizer": synchronizer,
                  "chunk_store": chunk_store, "meta_array": meta_array},
                 stacklevel=4)  # (the caller of @checked's wrapper)
    return open_group(store, mode="w" if overwrite else "a", path=path, attributes=attributes,
                      zarr_format=zarr_format, storage_options=storage_options)


@checked
def create_group(store: StoreLike, *, path: str | None = None, overwrite: bool = False,
                 attributes: Mapping[str, Any] | None = None,
                 storage_options: Mapping[str, Any] | None = None,
                 zarr_format: int | None = None) -> Group:
    """Create a new group; an existing node is an error unless ``overwrite``."""
    check_zarr_format(zarr_format)
    s, p = _resolve(store, path, storage_options=storage_options)
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
    otherwise a group, if nothing is there (modes ``'a'``, ``'w'``, ``'w-'``).  The other
    keywords are those of :func:`open_array` and :func:`open_group`; one that neither
    takes is a ``TypeError`` before anything is opened or created."""
    _check_mode(mode)
    check_zarr_format(zarr_format)
    check_keywords("open", kwargs, _OPEN_KEYWORDS)
    s, p = _resolve(store, path, read_only=mode == "r", storage_options=storage_options)
    draft, root_doc = _draft_first(s, p, mode, None, kwargs.get("order"), zarr_format)
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        if "shape" in kwargs or "data" in kwargs:
            _check_open_array_keywords("open", kwargs)
            return _create_opened(s, p, mode == "w", zarr_format, kwargs)
        return open_group(s, mode=mode, path=p, **_group_kwargs(s, p, kwargs))
    try:
        md = read_node_metadata(s, p, zarr_format, zarr_json=root_doc if p == "" else ...)
    except NodeNotFoundError:
        draft = _draft_after(s, p, mode, None, kwargs.get("order"), zarr_format, root_doc)
        if draft is not None:
            return draft
        if mode != "a":
            raise
        if "shape" in kwargs or "data" in kwargs:
            _check_open_array_keywords("open", kwargs)
            try:
                return _create_opened(s, p, False, zarr_format, kwargs)
            except (ContainsArrayError, ContainsGroupError) as conflict:  # created meanwhile?
                md = _created_meanwhile(conflict, lambda: read_node_metadata(
                    s, p, zarr_format))
        else:
            return open_group(s, mode="a", path=p, **_group_kwargs(s, p, kwargs))
    if kwargs and md.node_type == "array":  # (config, order... apply to the array opened)
        return open_array(s, path=p, mode=mode, zarr_format=md.zarr_format, **kwargs)
    if kwargs:  # a group: array keywords are refused (as open_group refuses them)
        check_keywords("open", _group_kwargs(s, p, kwargs), _OPEN_GROUP_KEYWORDS)
    return node_from_metadata(s, p, md, read_only=mode == "r" or s.read_only)




def _group_kwargs(store: Store, path: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``open``'s keywords for the group it opens or creates: ``config`` (of arrays) only
    as ``None``, as zarr-python's ``open`` takes it."""
    if kwargs.get("config") is not None:
        raise TypeError(f"config is the runtime configuration of an array, but "
                        f"{path or '/'!r} in {store!r} resolves to a group. Groups have no "
                        f"runtime configuration.")
    return {k: v for k, v in kwargs.items() if k != "config"}


# -- consolidated metadata ------------------------------------------------------------


def _open_consolidated_group(store: Store, path: str, zarr_format: int | None,
                             read_only: bool, *, required: bool, root_doc: Any = ...
                             ) -> Group | None:
    """The group at ``path`` with its consolidated metadata, or ``None`` if it has none
    (an error instead when ``required``)."""
    from zarrfast.hierarchy.consolidated import read_consolidated

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
                      zarr_format: int | None = None, use_consolidated: bool | str = True,
                      **kwargs: Any) -> Group:
    """Open a group from its consolidated metadata: one read for the whole hierarchy.
    The other keywords are those of :func:`open_group`."""
    check_keywords("open_consolidated", kwargs,
                   _OPEN_GROUP_KEYWORDS | keyword_names(open_consolidated))
    return open_group(store, mode=mode, path=path, zarr_format=zarr_format,
                      use_consolidated=use_consolidated, **kwargs)


@checked
def consolidate_metadata(store: StoreLike, path: str | None = None,
                         zarr_format: int | None = None, *,
                         storage_options: Mapping[str, Any] | None = None) -> Group:
    """Gather the metadata of every node below the group at ``path`` into it (v2:
    ``.zmetadata``; v3: ``consolidated_metadata`` in its ``zarr.json``), and return the
    group opened from it."""
    from zarrfast.hierarchy.consolidated import write_consolidated

    s, p = _resolve(store, path, storage_options=storage_options)
    md = read_typed_metadata(s, p, "group", zarr_format)
    if md.zarr_format == 3:
        warnings.warn("Consolidated metadata is currently not part in the Zarr format 3 "
                      "specification. It may not be supported by other zarr implementations "
                      "and may change in the future.", ZarrUserWarning,
                      stacklevel=3)  # (the caller of @checked's wrapper)
    write_consolidated(s, p, md)
    return open_consolidated(s, path=p, mode="r+" if not s.read_only else "r",
                             zarr_format=md.zarr_format)


# -- zarr-python's convenience constructors ----------------------------------------------


@checked
def create(shape: Any, *, chunks: Any = None, dtype: Any = None, compressor: Any = "auto",
           fill_value: Any = DEFAULT_FILL_VALUE, order: str | None = None,
           store: StoreLike = None,
           overwrite: bool = False, path: str | None = None, filters: Any = None,
           read_only: bool | None = None, object_codec: Any = None,
           dimension_separator: str | None = None, write_empty_chunks: bool | None = None,
           zarr_format: int | None = None, attributes: Mapping[str, Any] | None = None,
           chunk_shape: Any = None, chunk_key_encoding: Any = None, codecs: Any = None,
           dimension_names: Iterable[str | None] | None = None,
           storage_options: Mapping[str, Any] | None = None,
           config: Mapping[str, Any] | None = None, mode: str | None = None,
           data: Any = None, synchronizer: Any = None, chunk_store: StoreLike = None,
           cache_metadata: bool | None = None, cache_attrs: bool | None = None,
           meta_array: Any = None) -> Array:
    """zarr-python's older ``create``: an array from keyword arguments (v3 by default).

    ``data`` is written to the new array.  ``mode`` as zarr-python takes it: ``'w'``
    replaces an existing node, ``'r'`` opens the store read-only (so nothing can be
    created).  ``synchronizer``, ``chunk_store``, ``cache_metadata``, ``cache_attrs`` and
    ``meta_array`` are taken and ignored, with zarr-python's warning; so is the
    deprecated ``write_empty_chunks`` (whose value is used)."""
    warn_ignored({"synchronizer": synchronizer, "chunk_store": chunk_store,
                  "cache_metadata": cache_metadata, "cache_attrs": cache_attrs,
                  "meta_array": meta_array}, stacklevel=4)  # (the caller of @checked's wrapper)
    if write_empty_chunks is not None:
        warn_write_empty_chunks(stacklevel=4)
    check_zarr_format(zarr_format)
    store_read_only, overwrite = _creating_mode(mode, overwrite)
    s, p = _resolve(store, path, read_only=store_read_only, storage_options=storage_options)
    arr = create_legacy(
        s, p, shape=shape, chunks=chunks, dtype=dtype, compressor=compressor,
        fill_value=fill_value, order=order, overwrite=overwrite, filters=filters,
        object_codec=object_codec, dimension_separator=dimension_separator,
        write_empty_chunks=write_empty_chunks, zarr_format=zarr_format,
        attributes=attributes, chunk_shape=chunk_shape, chunk_key_encoding=chunk_key_encoding,
        codecs=codecs, dimension_names=dimension_names, config=config, data=data)
    if read_only:
        arr._read_only = True
    return arr


def empty(shape: Any, **kwargs: Any) -> Array:
    """An array whose elements read as the fill value (nothing is written); keywords as
    :func:`create`."""
    check_keywords("empty", kwargs, _CREATE_KEYWORDS)
    return create(shape, **kwargs)


def zeros(shape: Any, **kwargs: Any) -> Array:
    """An array of zeros; keywords as :func:`create`."""
    check_keywords("zeros", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=0, **kwargs)


def ones(shape: Any, **kwargs: Any) -> Array:
    """An array of ones; keywords as :func:`create`."""
    check_keywords("ones", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=1, **kwargs)


def full(shape: Any, fill_value: Any, **kwargs: Any) -> Array:
    """An array of ``fill_value``; keywords as :func:`create`."""
    check_keywords("full", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=fill_value, **kwargs)


def _layout_of(a: Array) -> dict[str, Any]:
    """``chunks`` (and ``shards``) that make an array laid out as ``a``: for a rectilinear
    grid its chunk (or shard) sizes inside the array, as nested lists."""
    md = a.metadata
    if getattr(md, "zarr_format", 3) == 2 or md.regular:
        return {"chunks": a.chunks, "shards": a.shards}
    sizes = [list(s) for s in a.write_chunk_sizes]
    if a.codec_chain.sharding is not None and len(a.codec_chain.codecs) == 1:
        return {"chunks": a.chunks, "shards": sizes, "rectilinear": True}
    return {"chunks": sizes, "shards": None, "rectilinear": True}


def _like_kwargs(a: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    out.setdefault("shape", a.shape)
    out.setdefault("dtype", a.dtype)
    if isinstance(a, Array):
        layout = _layout_of(a)
        out.setdefault("chunks", layout["chunks"])
        if layout.get("rectilinear") and layout["shards"] is not None:
            out.setdefault("shards", layout["shards"])
        out.setdefault("fill_value", a.fill_value)
        out.setdefault("zarr_format", a.zarr_format)
        out.setdefault("order", a.order)
    elif hasattr(a, "chunks") and isinstance(getattr(a, "chunks", None), tuple):
        if all(isinstance(c, int) for c in a.chunks):
            out.setdefault("chunks", a.chunks)
    return out


def empty_like(a: Any, **kwargs: Any) -> Array:
    check_keywords("empty_like", kwargs, _CREATE_KEYWORDS)
    kw = _like_kwargs(a, kwargs)
    return create(kw.pop("shape"), **kw)


def zeros_like(a: Any, **kwargs: Any) -> Array:
    check_keywords("zeros_like", kwargs, _CREATE_KEYWORDS)
    kw = _like_kwargs(a, kwargs)
    kw["fill_value"] = 0
    return create(kw.pop("shape"), **kw)


def ones_like(a: Any, **kwargs: Any) -> Array:
    check_keywords("ones_like", kwargs, _CREATE_KEYWORDS)
    kw = _like_kwargs(a, kwargs)
    kw["fill_value"] = 1
    return create(kw.pop("shape"), **kw)


def full_like(a: Any, **kwargs: Any) -> Array:
    check_keywords("full_like", kwargs, _CREATE_KEYWORDS)
    kw = _like_kwargs(a, kwargs)
    return create(kw.pop("shape"), **kw)


def open_like(a: Any, path: str, *, store: StoreLike = None, **kwargs: Any) -> Array:
    """Open (or create, in mode ``'a'``) an array shaped like ``a`` at ``path``: the
    store, or with ``store`` given (zarr-python's ``open_array`` keyword, passed on to it
    there) the path in ``store``; keywords as :func:`open_array`."""
    check_keywords("open_like", kwargs, _OPEN_LIKE_KEYWORDS)
    kw = _like_kwargs(a, kwargs)
    if store is not None:
        return open_array(store, path=path, **kw)
    return open_array(path, **kw)


@checked
def from_array(store: StoreLike, *, data: Any, write_data: bool = True, name: str | None = None,
               chunks: Any = "keep", shards: Any = "keep", filters: Any = "keep",
               compressors: Any = "keep", serializer: Any = "keep",
               fill_value: Any = DEFAULT_FILL_VALUE,
               order: str | None = None, zarr_format: int | None = None,
               attributes: Mapping[str, Any] | None = None, chunk_key_encoding: Any = None,
               dimension_names: Iterable[str | None] | None = None,
               storage_options: Mapping[str, Any] | None = None, overwrite: bool = False,
               config: Mapping[str, Any] | None = None) -> Array:
    """A new array holding ``data`` (an array-like, or a zarrfast ``Array`` whose chunks and
    codecs are kept unless given)."""
    src = data if isinstance(data, Array) else None
    kw: dict[str, Any] = {}
    if src is not None:
        same_format = zarr_format in (None, src.zarr_format)
        layout = _layout_of(src)
        kw["chunks"] = layout["chunks"] if chunks == "keep" else chunks
        kw["shards"] = layout.get("shards") if shards == "keep" else shards
        if src.zarr_format == 3 and same_format:
            kw["filters"] = src.filters if filters == "keep" else filters
            kw["serializer"] = src.serializer if serializer == "keep" else serializer
            kw["compressors"] = src.compressors if compressors == "keep" else compressors
        elif src.zarr_format == 2 and same_format:
            md = src.metadata
            kw["filters"] = list(md.filters or ()) if filters == "keep" else filters
            kw["compressors"] = md.compressor if compressors == "keep" else compressors
        fill_value = src.fill_value if fill_value is DEFAULT_FILL_VALUE else fill_value
        dimension_names = src.dimension_names if dimension_names is None else dimension_names
        attributes = dict(src.attrs) if attributes is None else attributes
        zarr_format = zarr_format or src.zarr_format
        shape, dtype = src.shape, src.dtype
    else:
        arr = np.asarray(data)
        shape, dtype = arr.shape, arr.dtype
        for key, value in (("chunks", chunks), ("shards", shards), ("filters", filters),
                           ("compressors", compressors), ("serializer", serializer)):
            if not (isinstance(value, str) and value == "keep"):
                kw[key] = value
        kw.setdefault("shards", None)
    kw = {k: v for k, v in kw.items() if v is not None or k == "shards"}
    if kw.get("shards") is None:
        kw.pop("shards", None)
    out = create_array(store, name=name, shape=shape, dtype=dtype, fill_value=fill_value,
                       order=order, zarr_format=zarr_format, attributes=attributes,
                       chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
                       storage_options=storage_options, overwrite=overwrite, config=config,
                       **kw)
    if write_data:
        if src is not None and out.ndim and out.shape[0]:
            # copy in slabs of whole chunk rows of about 64 MiB: memory stays bounded
            row_bytes = max(1, out.nbytes // out.shape[0])
            first = out.write_chunk_sizes[0][0]  # (a rectilinear grid has no one chunk shape)
            step = first * max(1, (64 << 20) // (row_bytes * first))
            for start in range(0, out.shape[0], step):
                out[start:start + step] = src[start:start + step]
        elif src is not None:
            out[...] = src[...]
        else:
            out[...] = np.asarray(data)
    return out


def save_array(store: StoreLike, arr: Any, *, zarr_format: int | None = None,
               path: str | None = None, storage_options: Mapping[str, Any] | None = None,
               mode: str = "a", overwrite: bool | None = None, data: Any = None,
               **kwargs: Any) -> None:
    """Store ``arr`` as a new array at ``path``.  As in zarr-python, an existing node
    there is an error (nothing is replaced) unless ``overwrite`` is true or ``mode`` is
    ``'w'``; ``'w-'`` never replaces one, ``'r'`` creates nothing.

    The other keywords are those of :func:`create_array`, or zarr-python's older
    ``chunk_shape``, ``codecs`` and ``dimension_separator``, which its ``save_array``
    takes; ``data``, which zarr-python writes before ``arr`` replaces it, must have a
    shape that broadcasts to ``arr``'s."""
    check_keywords("save_array", kwargs, _SAVE_ARRAY_KEYWORDS)
    values = np.asarray(arr)
    if data is not None:  # (zarr-python writes it, then arr over all of it)
        np.broadcast_to(np.asarray(data), values.shape)
    store_read_only, overwrite = _creating_mode(mode, overwrite)
    s, p = _resolve(store, path, read_only=store_read_only, storage_options=storage_options)
    _create_opened(s, p, overwrite, zarr_format, {**kwargs, "data": values})


def save_group(store: StoreLike, *args: Any, zarr_format: int | None = None,
               path: str | None = None, storage_options: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
    """Store the arrays (``args`` as ``arr_0``, ``arr_1``..., keywords under their names)
    as a group at ``path``, replacing what is there.  A keyword whose value is not an
    array is refused (a ``TypeError`` naming it, as zarr-python does) before anything
    is replaced: it is more likely a misspelled option than a member."""
    for name, value in kwargs.items():
        if not _is_ndarray_like(value):
            raise TypeError(f"save_group() got keyword argument {name!r} that is not an "
                            f"array ({type(value).__name__}): keyword arguments are the "
                            f"arrays to save, each a numpy or other NDArrayLike array")
    if not args and not kwargs:
        raise ZarrfastError("save_group: at least one array is required")
    s, p = _resolve(store, path, storage_options=storage_options)
    g = open_group(s, mode="w", path=p, zarr_format=zarr_format)
    for i, a in enumerate(args):
        g.create_array(f"arr_{i}", data=np.asarray(a), overwrite=True)
    for name, a in kwargs.items():
        g.create_array(name, data=np.asarray(a), overwrite=True)


def _is_ndarray_like(value: Any) -> bool:
    """An array (NumPy's, or one that gives NumPy its data), as zarr-python's
    ``NDArrayLike`` check takes it."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and (
        hasattr(value, "__array__") or hasattr(value, "__array_interface__"))


def save(store: StoreLike, *args: Any, zarr_format: int | None = None, path: str | None = None,
         storage_options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
    """One positional array: ``save_array``; several, or keywords: ``save_group`` (whose
    keywords are the arrays: one that is not an array is a ``TypeError``)."""
    if len(args) == 1 and not kwargs:
        save_array(store, args[0], zarr_format=zarr_format, path=path,
                   storage_options=storage_options)
    else:
        save_group(store, *args, zarr_format=zarr_format, path=path,
                   storage_options=storage_options, **kwargs)


@checked
def load(store: StoreLike, path: str | None = None, zarr_format: int | None = None, *,
         storage_options: Mapping[str, Any] | None = None) -> Any:
    """An array's data, or a dict of a group's arrays' data (read eagerly)."""
    node = open(store, mode="r", path=path, zarr_format=zarr_format,
                storage_options=storage_options)
    if isinstance(node, Array):
        return node[...]
    return {k: v[...] for k, v in node.arrays()}


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> Any:
    return grp.tree(expand=expand, level=level)


def create_hierarchy(*, store: Store | StorePath, nodes: Mapping[str, Any], overwrite: bool = False
                     ) -> Iterator[tuple[str, Array | Group]]:
    """Write the metadata of many nodes (``{path: ArrayMetadata | GroupMetadata | ...}``) and
    yield ``(path, node)`` for each (``path`` normalized, without a leading ``/``; below
    the path of ``store`` when it is a :class:`~zarrfast.storage.StorePath`).  As in
    zarr-python, the groups the hierarchy implies (the root and every parent not in
    ``nodes``) are created where no group is, and yielded first; a group already there is
    left as it is.  All nodes must have one Zarr format."""
    from zarrfast.hierarchy.node import existing_node
    from zarrfast.hierarchy.node import write_new_node as _write

    given = {normalize_path(k): md for k, md in nodes.items()}
    formats = {getattr(md, "zarr_format", None) for md in given.values()}
    if len(formats) > 1:
        raise MetadataValidationError(
            f"create_hierarchy: nodes of more than one Zarr format "
            f"({', '.join(f'{k or chr(47)!r}: v{md.zarr_format}' for k, md in given.items())}); "
            f"one hierarchy holds one format")
    implied: list[str] = []
    for key in given:
        parts = key.split("/") if key else []
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            if parent not in given and parent not in implied:
                implied.append(parent)
    fmt = formats.pop() if formats else 3
    created = []
    for key in sorted(implied, key=lambda k: (k.count("/") + bool(k), k)):
        s, p = _resolve(store, key)
        if existing_node(s, p) is None:  # write_new_node makes it with the first child
            created.append((key, s, p))
    for path, md in given.items():
        s, p = _resolve(store, path)
        _write(s, p, md, overwrite=overwrite)
    for key, s, p in created:
        yield key, node_from_metadata(s, p, GroupMetadata() if fmt == 3 else GroupMetadataV2(),
                                      read_only=False)
    for path, md in given.items():
        s, p = _resolve(store, path)
        yield path, node_from_metadata(s, p, md, read_only=False)


# -- the keywords each function passes on takes (an unknown one is a TypeError) -----------

_INTERNAL = {"store", "path", "data_exclusive"}
#: ``array(data, ...)``: ``create_array``'s, and those of zarr-python's older ``create``
#: (to which zarr-python's ``array`` passes them)
_ARRAY_KEYWORDS = (keyword_names(create_array_at, exclude=_INTERNAL | {"data"})
                   | keyword_names(array) | _LEGACY_ONLY | {"write_empty_chunks", *IGNORED})
#: ``open_array``'s creation keywords: ``create_array``'s, zarr-python's older
#: ``create``'s, ``name`` (for ``path``) and the ones zarr-python ignores
_OPEN_ARRAY_KEYWORDS = (keyword_names(create_array_at, exclude=_INTERNAL | {"overwrite"})
                        | _LEGACY_ONLY | {"name", "write_empty_chunks", "read_only", *IGNORED})
_OPEN_GROUP_KEYWORDS = keyword_names(open_group, exclude={"store", "path", "mode"})
#: every keyword :func:`open_array` takes (besides the store)
OPEN_ARRAY_KEYWORDS = keyword_names(open_array, exclude={"store"}) | _OPEN_ARRAY_KEYWORDS
#: (not ``name``: ``open`` takes ``path``, as zarr-python's)
_OPEN_KEYWORDS = (OPEN_ARRAY_KEYWORDS | _OPEN_GROUP_KEYWORDS | keyword_names(open)) - {"name"}
_OPEN_LIKE_KEYWORDS = OPEN_ARRAY_KEYWORDS | keyword_names(open_like)
_CREATE_KEYWORDS = keyword_names(create)
#: ``save_array``'s: ``create_array``'s, and the older ones zarr-python's takes
_SAVE_ARRAY_KEYWORDS = keyword_names(
    create_array_at, exclude=_INTERNAL | {"shape", "dtype", "data", "zarr_format",
                                          "overwrite"}) | keyword_names(save_array) | (
    _LEGACY_ONLY - {"object_codec"})
