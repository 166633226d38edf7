"""Top-level functions, named and shaped like zarr-python 3's synchronous API
(``zarr.api.synchronous``): the fast path, no event loop involved."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from zarrfast import config as zconfig
from zarrfast import kernels as _kernels
from zarrfast.concurrency import map_io
from zarrfast.engine.many import StoreBox, at_once, first_file_cold, read_store_boxes
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    IndexingError,
    MetadataValidationError,
    NodeNotFoundError,
    ReadOnlyError,
    ZarrDeprecationWarning,
    ZarrfastError,
    ZarrUserWarning,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.array_config import runtime_keywords
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
from zarrfast.hierarchy.like import layout_of, like_kwargs_of
from zarrfast.hierarchy.node import (
    read_node_metadata,
    read_typed_metadata,
    write_new_node,
)
from zarrfast.metadata.paths import join_path, normalize_path
from zarrfast.metadata.v2 import GroupMetadataV2
from zarrfast.metadata.v3 import GroupMetadata
from zarrfast.storage import MemoryStore, Store, StorePath
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
    "get_many",
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
             storage_options: Mapping[str, Any] | None = None,
             mode: str | None = None) -> tuple[Store, str]:
    """The store of ``store`` and the node's normalized path in it; a
    :class:`~zarrfast.storage.StorePath` given as the store puts its path first.  A
    ``mode`` that replaces or creates (``"w"``, ``"w-"``) on a read-only store is refused
    here, before anything is read (:func:`_refuse_read_only`)."""
    if isinstance(store, StorePath):
        inner, outer = normalize_path(path), normalize_path(store.path)
        s, p = (make_store(store.store, read_only=read_only, storage_options=storage_options),
                f"{outer}/{inner}" if outer and inner else outer or inner)
    else:
        s, p = (make_store(store, read_only=read_only, storage_options=storage_options),
                normalize_path(path))
    if mode in ("w", "w-"):
        _refuse_read_only(s, mode)
    return s, p


def _refuse_read_only(store: Store, mode: str) -> None:
    """zarr-python 3.4's refusal, in its words, of a ``mode`` that is about to write
    (``"w"``, ``"w-"``; ``"a"`` when it creates a node) on a read-only store.  zarrfast
    still opens what exists with ``"a"`` or ``"r+"`` on one (docs/migrating.md)."""
    if store.read_only:
        raise ReadOnlyError(f"Store is read-only but mode is {mode!r}. Create a writable store "
                            f"or use 'r' mode. ({store!r})")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ZarrfastError(f"Invalid mode: {mode}, expected one of {_MODES}")


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
    """Create an array (Zarr v3 unless asked otherwise), and write ``data`` into it.

    Every argument but ``store`` is a keyword.  The parent groups of ``name`` are created
    where missing.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``name``.
    name : str, optional
        The array's path in the store (``None``: the root).
    shape : int or tuple of int, optional
        The array's shape; taken from ``data`` when that is given.
    dtype : numpy.dtype, str or data type object, optional
        The data type: anything ``numpy.dtype`` takes (``"int16"``, ``"<f8"``,
        structured dtypes...), ``str`` or ``"string"`` (variable-length UTF-8),
        ``bytes``, a Zarr v3 data type name, or a zarr-python data type object.  Taken
        from ``data`` when that is given; otherwise ``float64``.
    data : array-like, optional
        Values to write into the new array (its shape and dtype come from them).
    chunks : "auto", int, tuple of int or sequence of sequences, optional
        The chunk shape (the inner chunks, when ``shards`` is given): an int for every
        dimension, a tuple (``-1`` or ``None``: the whole dimension), or ``"auto"``,
        zarr-python's guess (a target size that grows with the array's, from 128 KiB
        to 64 MiB; at most 1 MiB for the inner chunks of a sharded array).  A list of
        chunk sizes per dimension, such as ``[[2, 3], 4]``, makes a rectilinear chunk
        grid (Zarr v3).
    shards : tuple of int, int, "auto", dict or None, optional
        The shard shape, a multiple of the chunk shape in every dimension: the chunks are
        then stored together, several per key (Zarr v3 only).  ``{"shape": ...,
        "index_location": "start" | "end"}`` places the shard index; ``"auto"``
        (experimental, with a warning) picks a shape; ``None``: no sharding.
    filters : "auto", codec, list of codecs or None, optional
        The array -> array codecs (Zarr v2: numcodecs filters, as codecs or config
        dicts).  ``"auto"``: none (v2 string data: the ``vlen-utf8`` object codec).
    compressors : "auto", codec, list of codecs or None, optional
        The bytes -> bytes codecs, as codec objects from [zarrfast.codecs][], numcodecs
        codecs or metadata dicts (Zarr v2: at most one).  ``"auto"``: ``zstd`` at level
        0; ``None``: no compression.
    serializer : "auto" or codec, optional
        The array -> bytes codec (Zarr v3).  ``"auto"``: ``bytes`` (little endian),
        ``vlen-utf8`` for strings, ``vlen-bytes`` for variable-length bytes.
    fill_value : scalar or None, optional
        The value of elements never written.  Not given: the data type's default (0,
        ``False``, ``""``...); ``None``: that default too for Zarr v3, and ``null`` in
        Zarr v2 metadata.
    order : {"C", "F"} or None, optional
        The memory order of the arrays reads return (stored in Zarr v2 metadata);
        ``None``: the ``order`` of ``config``, else the configuration's ``array.order``.
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).
    attributes : dict, optional
        User attributes stored with the array (JSON-serializable).
    chunk_key_encoding : str, tuple, dict or None, optional
        How chunk keys are spelled: ``"default"`` (``c/0/1``) or ``"v2"`` (``0.1``),
        a ``(name, separator)`` tuple or ``{"name": ..., "separator": "/" | "."}``;
        ``None``: the format's default.  Zarr v2 takes only ``"v2"``.
    dimension_names : sequence of str or None, optional
        A name (or ``None``) per dimension: stored in the v3 metadata, and in the
        ``_ARRAY_DIMENSIONS`` attribute of a v2 array (as xarray reads it).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    overwrite : bool, optional
        Replace a node already at ``name`` (everything below it is deleted).
    config : dict or ArrayConfig, optional
        The array's runtime configuration: ``{"write_empty_chunks": bool, "order": "C" |
        "F"}`` (``write_empty_chunks``: store chunks whose elements all equal the fill
        value).
    write_data : bool, optional
        Whether ``data`` is written (``False``: only its shape and dtype are used).

    Returns
    -------
    Array
        The new array, open for reading and writing.

    Raises
    ------
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists there already (and is not to be replaced), or a parent is an
        array.
    zarrfast.errors.MetadataValidationError
        An argument the metadata cannot take: a codec that is not one or does not fit,
        dimension names of the wrong number, a format other than 2 or 3...
    zarrfast.errors.UnsupportedDataTypeError
        A ``dtype`` that is not a data type zarrfast can store.
    zarrfast.errors.FillValueError
        A fill value the data type cannot represent.
    zarrfast.errors.ZarrfastError
        Other arguments that do not fit: ``data`` with ``shape`` or ``dtype`` (they come
        from ``data``: convert it with ``numpy.asarray(data, dtype=...)`` to choose the
        dtype), no ``shape`` (nor ``data``), chunks or shards of the wrong rank, shards
        with Zarr v2, an unknown ``config`` key...
    zarrfast.errors.ReadOnlyError
        The store is read-only.

    Examples
    --------
    >>> a = zarrfast.create_array(store={}, shape=(100, 100), chunks=(10, 10),
    ...                           dtype="float32", fill_value=-1)
    >>> a
    <Array memory://... shape=(100, 100) dtype=float32>
    >>> a[0, :3]
    array([-1., -1., -1.], dtype=float32)
    >>> a.chunks, a.compressors
    ((10, 10), (ZstdCodec(level=0, checksum=False),))

    With data, on a local directory, with sharding (several chunks per stored object):

    >>> b = zarrfast.create_array("data.zarr", name="temperature",
    ...                           data=np.arange(64, dtype="int16").reshape(8, 8),
    ...                           chunks=(2, 2), shards=(4, 4))
    >>> b.shards, b[1, :4]
    ((4, 4), array([ 8,  9, 10, 11], dtype=int16))
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
    """Create an array holding ``data``.

    zarr-python's ``array``: the shape and dtype come from ``data`` (``dtype=`` may
    convert it).  Unknown keywords are refused (``TypeError``) before anything is written.

    Parameters
    ----------
    data : array-like
        The values to store: a NumPy array, a list, a zarrfast array...
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where to create the array, as for [zarrfast.create_array][] (``None``: in
        memory).
    name, path : str, optional
        The array's path in the store (``path`` is zarr-python's name for it): give one,
        or both equal.
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    mode : {"r", "r+", "a", "w", "w-"} or None, optional
        As zarr-python's: ``"w"`` replaces a node already there (as ``overwrite=True``),
        ``"w-"`` never does (even with ``overwrite``), ``"r"`` opens the store read-only
        (so nothing can be created); ``None``, ``"a"`` and ``"r+"``: as ``overwrite``
        says.
    read_only : bool, optional
        ``True`` is refused (a ``ZarrfastError``, a ``ValueError``) before anything is
        written, as in zarr-python.
    **kwargs
        The other keywords of [zarrfast.create_array][] (``dtype``, ``chunks``,
        ``shards``, ``compressors``, ``fill_value``, ``attributes``, ``zarr_format``,
        ``overwrite``, ``config``...), or those of zarr-python's older
        [zarrfast.create][], to which zarr-python's ``array`` passes them:
        ``chunk_shape``, ``codecs``, ``dimension_separator``, ``object_codec`` (not
        together with ``shards``, ``compressors``, ``serializer`` or ``write_data``); the
        deprecated ``write_empty_chunks`` (used, with zarr-python's warning); and
        ``synchronizer``, ``chunk_store``, ``cache_metadata``, ``cache_attrs``,
        ``meta_array``, ignored with zarr-python's "not yet implemented" warning.

    Returns
    -------
    Array
        The new array, holding ``data``.

    Raises
    ------
    TypeError
        An unknown keyword; ``name`` and ``path`` that differ; older and newer creation
        keywords together.
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists there already (and is not to be replaced), or a parent is an
        array.
    zarrfast.errors.MetadataValidationError
        An argument the metadata cannot take: a codec that is not one or does not fit,
        dimension names of the wrong number, a format other than 2 or 3...
    zarrfast.errors.UnsupportedDataTypeError
        A ``dtype`` that is not a data type zarrfast can store.
    zarrfast.errors.FillValueError
        A fill value the data type cannot represent.
    zarrfast.errors.ZarrfastError
        Other arguments that do not fit: no ``shape`` (nor ``data``), chunks or shards of
        the wrong rank, shards with Zarr v2, an unknown ``config`` key...
    zarrfast.errors.ReadOnlyError
        The store is read-only.

    Examples
    --------
    >>> a = zarrfast.array(np.arange(6).reshape(2, 3), chunks=(1, 3), dtype="int8")
    >>> a
    <Array memory://... shape=(2, 3) dtype=int8>
    >>> a[1]
    array([3, 4, 5], dtype=int8)
    """
    _check_open_array_keywords("array", kwargs, _ARRAY_KEYWORDS)
    if path is not None and name is not None and normalize_path(path) != normalize_path(name):
        raise TypeError(f"array() got both name={name!r} and path={path!r}: give one")
    if read_only:  # (zarr-python's words)
        raise ZarrfastError("read_only=True is no longer supported when creating new arrays")
    store_read_only, overwrite = _creating_mode(mode, kwargs.pop("overwrite", False))
    s, p = _resolve(store, name if name is not None else path, read_only=store_read_only,
                    storage_options=storage_options, mode=mode)
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
    """Open an array, or create one.

    Modes ``"r"``, ``"r+"`` and ``"a"`` open an existing array; ``"w"`` and ``"w-"``
    create one, and so does ``"a"`` when no node is there and ``shape`` (or ``data``)
    is given.  A store holding one of the draft Zarr v3 layouts (zarrita, draft-2022) is
    opened read-only.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    path : str, optional
        The array's path in the store (``None``: the root).  ``name=`` is taken for it
        too.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        ``"r"``: read only, the array must exist; ``"r+"``: read and write, it must
        exist; ``"a"`` (the default): read and write, creating the array when nothing is
        there and ``shape`` or ``data`` is given; ``"w"``: create, replacing what is
        there; ``"w-"``: create, failing if something is there.
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2) and, for a node created,
        the format to write (``None``: the configuration's ``default_zarr_format``).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    **kwargs
        Keywords that create the array (modes ``"w"``, ``"w-"``, or ``"a"`` creating
        it; ignored when an existing array is opened): those of
        [zarrfast.create_array][] (``shape``, ``dtype``, ``data``, ``chunks``,
        ``shards``, ``filters``, ``compressors``, ``serializer``, ``fill_value``,
        ``attributes``, ``chunk_key_encoding``, ``dimension_names``, ``write_data``), or
        those of zarr-python's older [zarrfast.create][]: ``compressor``,
        ``chunk_shape``, ``codecs``, ``dimension_separator``, ``object_codec`` (not
        together with ``shards``, ``compressors``, ``serializer`` or ``write_data``).

        Keywords that apply to an array opened too: ``config`` (``{"order": ...,
        "write_empty_chunks": ...}``), ``order``, ``read_only`` (``True``: the array
        returned, opened or created, refuses writes; zarr-python takes the keyword and
        ignores it) and the deprecated ``write_empty_chunks`` (with zarr-python's
        warning).  ``name`` is the same as ``path``.  ``synchronizer``, ``chunk_store``,
        ``cache_metadata``, ``cache_attrs`` and ``meta_array`` are ignored, with
        zarr-python's "not yet implemented" warning.  Any other keyword is a
        ``TypeError``, whatever the mode.

    Returns
    -------
    Array
        The array; read-only with mode ``"r"``, on a read-only store, or with
        ``read_only=True``.

    Raises
    ------
    zarrfast.errors.ArrayNotFoundError
        No array there (modes ``"r"`` and ``"r+"``; ``"a"`` without ``shape``).
    zarrfast.errors.NodeTypeValidationError
        A group is there.
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        Mode ``"w-"`` and a node is there.
    zarrfast.errors.ZarrfastError
        An unknown ``mode``; for an array created, the errors of
        [zarrfast.create_array][].
    zarrfast.errors.MetadataValidationError
        A ``zarr_format`` other than 2, 3 or ``None``; metadata that cannot be read.
    TypeError
        An unknown keyword (with a "did you mean" hint); ``path`` and ``name`` that
        differ.

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> a = zarrfast.open_array(store, mode="w", shape=(4,), chunks=(2,), dtype="int32")
    >>> a[:] = [1, 2, 3, 4]
    >>> b = zarrfast.open_array(store, mode="r")
    >>> b[:], b.read_only
    (array([1, 2, 3, 4], dtype=int32), True)

    On a local directory, created on first use with mode ``"a"`` (the default):

    >>> c = zarrfast.open_array("data.zarr", shape=(2, 2), dtype="float64", fill_value=0.5)
    >>> zarrfast.open_array("data.zarr")[:]
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    _check_mode(mode)
    check_zarr_format(zarr_format)
    _check_open_array_keywords("open_array", kwargs)
    name = kwargs.pop("name", None)
    if path is not None and name is not None and normalize_path(path) != normalize_path(name):
        raise TypeError(f"open_array() got both path={path!r} and name={name!r}: give one")
    s, p = _resolve(store, path if path is not None else name,
                    read_only=mode == "r", storage_options=storage_options, mode=mode)
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
            _refuse_read_only(s, mode)
            try:
                return _create_opened(s, p, False, zarr_format, kwargs)
            except ContainsArrayError as conflict:  # another thread or process created it
                md = _created_meanwhile(conflict, lambda: read_typed_metadata(
                    s, p, "array", zarr_format))
        else:
            raise
    cfg = kwargs.get("config") or {}
    cfg = cfg if isinstance(cfg, Mapping) else cfg.to_dict()
    if kwargs.get("write_empty_chunks") is not None:  # (the older keyword wins, as there)
        cfg = {**cfg, "write_empty_chunks": kwargs["write_empty_chunks"]}
    # order None: config["array.order"], as zarr-python resolves it when it opens an array
    return Array(s, p, md,
                 read_only=mode == "r" or s.read_only or bool(kwargs.get("read_only")),
                 write_empty_chunks=cfg.get("write_empty_chunks"),
                 order=kwargs.get("order") or cfg.get("order"), **runtime_keywords(cfg))


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
    """Open a group, or create one.

    A store holding one of the draft Zarr v3 layouts (zarrita, draft-2022) is opened
    read-only.  Where the group has consolidated metadata, it is used (one read for the
    whole hierarchy) unless ``use_consolidated=False``.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        ``"r"``: read only, the group must exist; ``"r+"``: read and write, it must
        exist; ``"a"`` (the default): read and write, creating the group when nothing is
        there; ``"w"``: create, replacing what is there; ``"w-"``: create, failing if
        something is there.
    path : str, optional
        The group's path in the store (``None``: the root).
    attributes : dict, optional
        User attributes of a group created (ignored when an existing group is opened).
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2) and, for a node created,
        the format to write (``None``: the configuration's ``default_zarr_format``).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    use_consolidated : bool, str or None, optional
        ``None`` (or a string): read the group's consolidated metadata when it has some;
        ``True``: it must have some; ``False``: do not use it, read each node's own.
    cache_attrs, synchronizer, chunk_store, meta_array : optional
        Taken as zarr-python takes them, and ignored: a value other than ``None`` warns
        "... is not yet implemented" (``ZarrRuntimeWarning``).

    Returns
    -------
    Group
        The group; read-only with mode ``"r"`` or on a read-only store.

    Raises
    ------
    zarrfast.errors.GroupNotFoundError
        No group there (modes ``"r"`` and ``"r+"``).
    zarrfast.errors.ArrayNotGroupError
        An array is there.
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        Mode ``"w-"`` and a node is there.
    zarrfast.errors.ZarrfastError
        An unknown ``mode``; ``use_consolidated=True`` and no consolidated metadata.
    zarrfast.errors.MetadataValidationError
        A ``zarr_format`` other than 2, 3 or ``None``; metadata that cannot be read.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> root = zarrfast.open_group("data.zarr", mode="w", attributes={"title": "demo"})
    >>> t = root.create_array("t", shape=(3,), dtype="int16")
    >>> g = zarrfast.open_group("data.zarr", mode="r")
    >>> g.attrs["title"], list(g)
    ('demo', ['t'])
    """
    warn_ignored({"cache_attrs": cache_attrs, "synchronizer": synchronizer,
                  "chunk_store": chunk_store, "meta_array": meta_array},
                 stacklevel=4)  # (the caller of @checked's wrapper)
    _check_mode(mode)
    check_zarr_format(zarr_format)
    s, p = _resolve(store, path, read_only=mode == "r", storage_options=storage_options,
                    mode=mode)
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
        if use_consolidated is False and getattr(md, "consolidated_metadata", None) is not None:
            # opted out: the group as if it had none (as zarr-python drops it on reading)
            md = dataclasses.replace(md, consolidated_metadata=None, extra={
                k: v for k, v in md.extra.items() if k != "consolidated_metadata"})
    except GroupNotFoundError:
        if mode != "a":
            raise
        _refuse_read_only(s, mode)
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
    """Create a group, or open it if it exists and ``overwrite`` is false.

    zarr-python's ``group``: [zarrfast.open_group][] with mode ``"a"`` (``"w"`` with
    ``overwrite``).

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    overwrite : bool, optional
        Replace whatever is at ``path`` with a new, empty group.
    path : str, optional
        The group's path in the store (``None``: the root).
    attributes : dict, optional
        User attributes of a group created (ignored when an existing group is opened).
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2) and, for a node created,
        the format to write (``None``: the configuration's ``default_zarr_format``).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    chunk_store, cache_attrs, synchronizer, meta_array : optional
        Taken as zarr-python takes them, and ignored: a value other than ``None`` warns
        "... is not yet implemented" (``ZarrRuntimeWarning``).

    Returns
    -------
    Group
        The group, open for reading and writing (unless the store is read-only).

    Raises
    ------
    zarrfast.errors.ArrayNotGroupError
        An array is at ``path`` (and ``overwrite`` is false).
    zarrfast.errors.MetadataValidationError
        A ``zarr_format`` other than 2, 3 or ``None``.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> g = zarrfast.group(store={}, attributes={"version": 1})
    >>> sub = g.create_group("sub")
    >>> list(g), dict(g.attrs)
    (['sub'], {'version': 1})
    """
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
    """Create a new group; a node already there is an error unless ``overwrite``.

    The parent groups of ``path`` are created where missing.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    path : str, optional
        The group's path in the store (``None``: the root).
    overwrite : bool, optional
        Replace a node already at ``path`` (everything below it is deleted).
    attributes : dict, optional
        User attributes of the group.
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).

    Returns
    -------
    Group
        The new group, open for reading and writing.

    Raises
    ------
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node is there (without ``overwrite``), or a parent is an array.
    zarrfast.errors.MetadataValidationError
        A ``zarr_format`` other than 2, 3 or ``None``, or one other than its parent
        group's.
    zarrfast.errors.ReadOnlyError
        The store is read-only.

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> g = zarrfast.create_group(store, path="a/b", attributes={"x": 1})
    >>> g.name, dict(g.attrs)
    ('/a/b', {'x': 1})
    >>> list(zarrfast.open_group(store, path="a", mode="r"))  # the parent, made with it
    ['b']
    """
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
    """Open the array or group at ``path``, or create one.

    When nothing is there (modes ``"a"``, ``"w"``, ``"w-"``), an array is created if
    ``shape`` (or ``data``) is given, otherwise a group.  A store holding one of the
    draft Zarr v3 layouts (zarrita, draft-2022) is opened read-only.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        ``"r"``: read only, the node must exist; ``"r+"``: read and write, it must
        exist; ``"a"`` (the default): read and write, creating a node when nothing is
        there; ``"w"``: create, replacing what is there; ``"w-"``: create, failing if
        something is there.
    path : str, optional
        The node's path in the store (``None``: the root).
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2) and, for a node created,
        the format to write (``None``: the configuration's ``default_zarr_format``).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    **kwargs
        For an array, the keywords of [zarrfast.open_array][] (``shape``, ``dtype``,
        ``chunks``, ``config``... but not ``name``); for a group, those of
        [zarrfast.open_group][] (``attributes``, ``use_consolidated``...).  A keyword
        neither takes is a ``TypeError`` before anything is opened or created; so is an
        array's keyword (``config`` included) where a group is found.

    Returns
    -------
    Array or Group
        The node found, or created.

    Raises
    ------
    zarrfast.errors.GroupNotFoundError
        Nothing there (modes ``"r"`` and ``"r+"``), as zarr-python, which looks for an
        array, then a group; a ``NodeNotFoundError``.
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        Mode ``"w-"`` and a node is there.
    zarrfast.errors.ZarrfastError
        An unknown ``mode``; the errors of [zarrfast.create_array][] for an array
        created.
    zarrfast.errors.MetadataValidationError
        A ``zarr_format`` other than 2, 3 or ``None``; metadata that cannot be read.
    TypeError
        An unknown keyword, or an array's keyword for a group.

    Examples
    --------
    >>> store = zarrfast.MemoryStore()
    >>> zarrfast.open(store, path="x", shape=(2,), dtype="int8")  # nothing there: an array
    <Array memory://.../x shape=(2,) dtype=int8>
    >>> zarrfast.open(store, mode="r")  # the root, a group made as the array's parent
    <Group memory://...>
    >>> zarrfast.open(store, mode="r", path="x")
    <Array memory://.../x shape=(2,) dtype=int8>
    """
    _check_mode(mode)
    check_zarr_format(zarr_format)
    check_keywords("open", kwargs, _OPEN_KEYWORDS)
    s, p = _resolve(store, path, read_only=mode == "r", storage_options=storage_options,
                    mode=mode)
    draft, root_doc = _draft_first(s, p, mode, None, kwargs.get("order"), zarr_format)
    if draft is not None:
        return draft
    if mode in ("w", "w-"):
        if "shape" in kwargs or "data" in kwargs:
            _check_open_array_keywords("open", kwargs)
            return _create_opened(s, p, mode == "w", zarr_format, kwargs)
        return open_group(s, mode=mode, path=p, zarr_format=zarr_format,
                          **_group_kwargs(s, p, kwargs))
    try:
        md = read_node_metadata(s, p, zarr_format, zarr_json=root_doc if p == "" else ...)
    except NodeNotFoundError as exc:
        draft = _draft_after(s, p, mode, None, kwargs.get("order"), zarr_format, root_doc)
        if draft is not None:
            return draft
        if mode != "a":
            # as zarr-python's open, which looks for an array, then a group: nothing
            # there is a GroupNotFoundError (anndata catches it to add its hints)
            raise GroupNotFoundError(*exc.args) from None
        if "shape" in kwargs or "data" in kwargs:
            _check_open_array_keywords("open", kwargs)
            _refuse_read_only(s, mode)
            try:
                return _create_opened(s, p, False, zarr_format, kwargs)
            except (ContainsArrayError, ContainsGroupError) as conflict:  # created meanwhile?
                md = _created_meanwhile(conflict, lambda: read_node_metadata(
                    s, p, zarr_format))
        else:
            return open_group(s, mode="a", path=p, zarr_format=zarr_format,
                              **_group_kwargs(s, p, kwargs))
    if kwargs and md.node_type == "array":  # (config, order... apply to the array opened)
        return open_array(s, path=p, mode=mode, zarr_format=md.zarr_format, **kwargs)
    if kwargs:  # a group: array keywords are refused (as open_group refuses them)
        check_keywords("open", _group_kwargs(s, p, kwargs), _OPEN_GROUP_KEYWORDS)
    read_only = mode == "r" or s.read_only
    if md.node_type == "group":
        return _found_group(s, p, md, read_only, kwargs.get("use_consolidated"))
    return node_from_metadata(s, p, md, read_only=read_only)


def _found_group(store: Store, path: str, md: Any, read_only: bool,
                 use_consolidated: Any) -> Group:
    """The group :func:`open` found (``md`` read), with its consolidated metadata as
    :func:`open_group` and zarr-python's ``open`` give it: a v3 group's from the document
    read, a v2 group's from its ``.zmetadata``; none with ``use_consolidated=False``."""
    cm = getattr(md, "consolidated_metadata", None)
    if use_consolidated is False:
        if cm is not None:  # (as open_group: the group as if it had none)
            md = dataclasses.replace(md, consolidated_metadata=None, extra={
                k: v for k, v in md.extra.items() if k != "consolidated_metadata"})
        return Group(store, path, md, read_only=read_only)
    if cm is not None:
        return Group(store, path, md, read_only=read_only, consolidated=cm.members())
    if md.zarr_format == 2 or use_consolidated is True:
        group = _open_consolidated_group(store, path, md.zarr_format, read_only,
                                         required=use_consolidated is True)
        if group is not None:
            return group
    return Group(store, path, md, read_only=read_only)




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
                f"Consolidated metadata requested with 'use_consolidated=True' but not found "
                f"in {path!r}: group {path or '/'!r} in {store!r} has no consolidated metadata "
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

    Its members are then listed and opened from that metadata, without reading the
    store (see [zarrfast.consolidate_metadata][]).

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    path : str, optional
        The group's path in the store (``None``: the root).
    mode : {"r", "r+", "a", "w", "w-"}, optional
        As for [zarrfast.open_group][]; ``"r"`` (read only) unless given.
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2).
    use_consolidated : bool or str, optional
        ``True`` (the default): the group must have consolidated metadata; as for
        [zarrfast.open_group][] otherwise.
    **kwargs
        The other keywords of [zarrfast.open_group][]: ``attributes``,
        ``storage_options``, and the ``cache_attrs``, ``synchronizer``,
        ``chunk_store`` and ``meta_array`` it ignores (with a warning).  Another
        keyword is a ``TypeError``.

    Returns
    -------
    Group
        The group, answering member lookups and listings from its consolidated
        metadata.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        No consolidated metadata there (``.zmetadata`` in Zarr v2,
        ``consolidated_metadata`` in the v3 ``zarr.json``): also when there is no group
        at all, or an array.
    zarrfast.errors.GroupNotFoundError
        No group there, with ``use_consolidated`` other than ``True``.
    TypeError
        An unknown keyword.

    Examples
    --------
    >>> root = zarrfast.group(store={}, zarr_format=2)
    >>> a = root.create_group("sub").create_array("a", shape=(3,), dtype="float32")
    >>> _ = zarrfast.consolidate_metadata(root.store)
    >>> g = zarrfast.open_consolidated(root.store)
    >>> sorted(name for name, _ in g.members(max_depth=None))
    ['sub', 'sub/a']
    """
    check_keywords("open_consolidated", kwargs,
                   _OPEN_GROUP_KEYWORDS | keyword_names(open_consolidated))
    return open_group(store, mode=mode, path=path, zarr_format=zarr_format,
                      use_consolidated=use_consolidated, **kwargs)


@checked
def consolidate_metadata(store: StoreLike, path: str | None = None,
                         zarr_format: int | None = None, *,
                         storage_options: Mapping[str, Any] | None = None) -> Group:
    """Gather the metadata of every node below a group into that group.

    Zarr v2: written to the group's ``.zmetadata``; Zarr v3: to ``consolidated_metadata``
    in its ``zarr.json`` (not part of the v3 specification yet: a ``ZarrUserWarning``
    says so, as zarr-python does).  [zarrfast.open_consolidated][] and
    [zarrfast.open_group][] then read the whole hierarchy in one read.  Nodes created
    afterwards are not in it until this is called again.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    path : str, optional
        The group's path in the store (``None``: the root).
    zarr_format : {2, 3} or None, optional
        The group's format (``None``: v3 first, then v2).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.

    Returns
    -------
    Group
        The group, opened from its consolidated metadata (read-only if the store is).

    Raises
    ------
    zarrfast.errors.GroupNotFoundError
        No group at ``path``.
    zarrfast.errors.ArrayNotGroupError
        An array is there.
    zarrfast.errors.ReadOnlyError
        The store is read-only.

    Examples
    --------
    >>> root = zarrfast.open_group("data.zarr", mode="w", zarr_format=2)
    >>> t = root.create_array("t", shape=(3,), dtype="int16")
    >>> g = zarrfast.consolidate_metadata("data.zarr")
    >>> list(g)
    ['t']
    >>> import os
    >>> os.path.exists("data.zarr/.zmetadata")
    True
    """
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
    """Create an array from zarr-python's older keywords (``zarr.create``).

    Zarr v3 unless ``zarr_format=2`` (or the configuration's ``default_zarr_format``).
    New code may prefer [zarrfast.create_array][]; this takes zarr-python 2's spellings
    (``compressor``, ``filters``, ``object_codec``, ``dimension_separator``) and
    zarr-python 3's older v3 ones (``chunk_shape``, ``codecs``).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    chunks : int, tuple of int, bool or None, optional
        The chunk shape; ``None`` or ``True``: a guess, as ``chunks="auto"`` of
        [zarrfast.create_array][]; ``False``: one chunk.
    dtype : numpy.dtype or str, optional
        The data type (``None``: ``float64``; ``str``: variable-length strings).
    compressor : codec, dict or "auto", optional
        One compressor: a numcodecs codec (or its config dict, for Zarr v2); for a v3
        array, a bytes -> bytes codec or a numcodecs codec object, refused when
        ``zarr_format=3`` is given (use ``codecs``).  ``"auto"``: ``zstd`` at level 0.
    fill_value : scalar or None, optional
        The value of elements never written.  Not given: the data type's default;
        ``None``: that default too for Zarr v3, and ``null`` in Zarr v2 metadata.
    order : {"C", "F"} or None, optional
        The memory order of the arrays reads return (stored in Zarr v2 metadata);
        ``None``: the ``order`` of ``config``, else the configuration's ``array.order``.
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        Where to create the array, as for [zarrfast.create_array][] (``None``: in
        memory).
    overwrite : bool, optional
        Replace a node already at ``path``.
    path : str, optional
        The array's path in the store (``None``: the root).
    filters : list of codecs, optional
        Zarr v2 filters (numcodecs codecs or config dicts); refused when
        ``zarr_format=3`` is given (use ``codecs``).
    read_only : bool, optional
        ``True``: the array returned refuses writes (after ``data`` is written).
    object_codec : codec, optional
        Appended to ``filters``: the object codec of an object dtype (Zarr v2).
    dimension_separator : {".", "/"}, optional
        The separator of chunk keys (refused when ``zarr_format=3`` is given: use
        ``chunk_key_encoding``).
    write_empty_chunks : bool, optional
        Deprecated (zarr-python's warning): used, as ``config={"write_empty_chunks":
        ...}``.
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).
    attributes : dict, optional
        User attributes stored with the array.
    chunk_shape : int or tuple of int, optional
        The chunk shape (zarr-python's older v3 name; not together with ``chunks``).
    chunk_key_encoding : str, tuple, dict or None, optional
        As for [zarrfast.create_array][] (Zarr v3 only).
    codecs : list of codecs, optional
        The whole Zarr v3 codec list (array -> array codecs, one array -> bytes codec,
        bytes -> bytes codecs), as codec objects or metadata dicts.
    dimension_names : sequence of str or None, optional
        A name (or ``None``) per dimension (Zarr v3 only).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    config : dict or ArrayConfig, optional
        The array's runtime configuration: ``{"write_empty_chunks": bool, "order": "C" |
        "F"}`` (``write_empty_chunks``: store chunks whose elements all equal the fill
        value).
    mode : {"r", "r+", "a", "w", "w-"} or None, optional
        As zarr-python's: ``"w"`` replaces a node already there (as ``overwrite=True``),
        ``"w-"`` never does (even with ``overwrite``), ``"r"`` opens the store read-only
        (so nothing can be created); ``None``, ``"a"`` and ``"r+"``: as ``overwrite``
        says.
    data : array-like, optional
        Values written into the new array (its shape must broadcast to ``shape``).  As
        zarr-python 3.4's, it sets neither the shape nor the data type: without ``dtype``
        the array is ``float64``, and data ``float64`` cannot hold exactly (complex
        numbers, integers beyond 2**53, datetimes, records) is refused.
    synchronizer, chunk_store, cache_metadata, cache_attrs, meta_array : optional
        Taken as zarr-python takes them, and ignored: a value other than ``None`` warns
        "... is not yet implemented" (``ZarrRuntimeWarning``).

    Returns
    -------
    Array
        The new array.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        Both ``chunks`` and ``chunk_shape``; a v3-only argument with ``zarr_format=2``
        or a v2-only one with ``zarr_format=3``; and the cases below.
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists there already (and is not to be replaced), or a parent is an
        array.
    zarrfast.errors.MetadataValidationError
        An argument the metadata cannot take: a codec that is not one or does not fit,
        dimension names of the wrong number, a format other than 2 or 3...
    zarrfast.errors.UnsupportedDataTypeError
        A ``dtype`` that is not a data type zarrfast can store.
    zarrfast.errors.FillValueError
        A fill value the data type cannot represent.
    zarrfast.errors.ZarrfastError
        Other arguments that do not fit: no ``shape`` (nor ``data``), chunks or shards of
        the wrong rank, shards with Zarr v2, an unknown ``config`` key...
    zarrfast.errors.ReadOnlyError
        The store is read-only.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> a = zarrfast.create((4, 4), chunks=(2, 2), dtype="int32", fill_value=7,
    ...                     store={}, zarr_format=2,
    ...                     compressor={"id": "zlib", "level": 1})
    >>> a.metadata.compressor, a[0, :2]
    ({'id': 'zlib', 'level': 1}, array([7, 7], dtype=int32))
    """
    warn_ignored({"synchronizer": synchronizer, "chunk_store": chunk_store,
                  "cache_metadata": cache_metadata, "cache_attrs": cache_attrs,
                  "meta_array": meta_array}, stacklevel=4)  # (the caller of @checked's wrapper)
    if write_empty_chunks is not None:
        warn_write_empty_chunks(stacklevel=4)
    check_zarr_format(zarr_format)
    if dtype is None and data is not None:
        dtype = _legacy_default_dtype(data)
    store_read_only, overwrite = _creating_mode(mode, overwrite)
    s, p = _resolve(store, path, read_only=store_read_only, storage_options=storage_options,
                    mode=mode)
    try:
        arr = create_legacy(
            s, p, shape=shape, chunks=chunks, dtype=dtype, compressor=compressor,
            fill_value=fill_value, order=order, overwrite=overwrite, filters=filters,
            object_codec=object_codec, dimension_separator=dimension_separator,
            write_empty_chunks=write_empty_chunks, zarr_format=zarr_format,
            attributes=attributes, chunk_shape=chunk_shape,
            chunk_key_encoding=chunk_key_encoding, codecs=codecs,
            dimension_names=dimension_names, config=config, data=data)
    except (ContainsArrayError, ContainsGroupError) as e:
        if mode != "w-":
            raise
        raise type(e)(f"Cannot create {p!r} with mode 'w-' because it already contains "
                      f"data. Use mode 'w' to overwrite or 'a' to append. ({e})") from None
    if read_only:
        arr._read_only = True
    return arr


def _legacy_default_dtype(data: Any) -> str:
    """``create``'s data type when ``data`` is given without ``dtype``: ``float64``, as
    zarr-python 3.4's ``create`` (its data does not set the data type).  Values ``float64``
    cannot hold exactly (complex numbers, integers beyond 2**53, in an object array too,
    datetimes and records) are refused, not converted."""
    known = getattr(data, "dtype", None)
    try:
        values = None if isinstance(known, np.dtype) else np.asarray(data)
    except (TypeError, ValueError):
        return "float64"  # (the write says what is wrong with it)
    given = values.dtype if values is not None else np.dtype(known)
    if values is None and given.kind in "iu" and given.itemsize > 4:
        values = np.asarray(data)  # (only then are the values looked at)
    exact = given.kind in "bf" and given.itemsize <= 8 or given.kind in "iu" and (
        given.itemsize <= 4 or values is None or values.size == 0
        or -(2**53) <= int(values.min()) and int(values.max()) <= 2**53)
    if given.kind == "O":  # (Python numbers: each looked at)
        values = np.asarray(data) if values is None else values
        exact = not any(isinstance(v, complex) or isinstance(v, int) and not isinstance(
            v, bool) and not -(2**53) <= v <= 2**53 for v in values.ravel().tolist())
    if given.kind in "MmV":  # (times would become numbers, records their bytes)
        exact = False
    if given.kind in "iufcMmVO" and not exact:
        raise ZarrfastError(
            f"create: data of dtype {given} without dtype: the array would be float64 (as "
            f"zarr-python's create), which cannot hold these values exactly; pass "
            f"dtype={str(given)!r} (or use create_array(data=...), which takes the data's)")
    return "float64"


def empty(shape: Any, **kwargs: Any) -> Array:
    """Create an array whose elements read as the fill value; no chunk is written.

    Unlike ``numpy.empty``, the elements are not arbitrary: chunks never written read as
    the fill value (the data type's default unless ``fill_value`` is given).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    **kwargs
        The keywords of [zarrfast.create][]: ``dtype``, ``fill_value``, ``chunks``,
        ``store``, ``path``, ``zarr_format``, ``compressor``, ``filters``,
        ``attributes``, ``overwrite``, ``config``, ``mode``...  An unknown one is a
        ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> a = zarrfast.empty((2, 3), dtype="int16", fill_value=-1)
    >>> a[:]
    array([[-1, -1, -1],
           [-1, -1, -1]], dtype=int16)
    """
    check_keywords("empty", kwargs, _CREATE_KEYWORDS)
    return create(shape, **kwargs)


def zeros(shape: Any, **kwargs: Any) -> Array:
    """Create an array of zeros: its fill value is 0 (only the metadata is written).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    **kwargs
        The keywords of [zarrfast.create][]: ``dtype``, ``chunks``, ``store``, ``path``,
        ``zarr_format``, ``compressor``, ``filters``, ``attributes``, ``overwrite``,
        ``config``, ``mode``...  An unknown one is a ``TypeError``, and so is
        ``fill_value``, which is 0.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> a = zarrfast.zeros((2, 3), chunks=(1, 3), dtype="uint8", store={})
    >>> a[:]
    array([[0, 0, 0],
           [0, 0, 0]], dtype=uint8)
    >>> a.fill_value
    np.uint8(0)
    """
    check_keywords("zeros", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=0, **kwargs)


def ones(shape: Any, **kwargs: Any) -> Array:
    """Create an array of ones: its fill value is 1 (only the metadata is written).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    **kwargs
        The keywords of [zarrfast.create][]: ``dtype``, ``chunks``, ``store``, ``path``,
        ``zarr_format``, ``compressor``, ``filters``, ``attributes``, ``overwrite``,
        ``config``, ``mode``...  An unknown one is a ``TypeError``, and so is
        ``fill_value``, which is 1.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> a = zarrfast.ones((4,), dtype="float32", store="ones.zarr")
    >>> a[:]
    array([1., 1., 1., 1.], dtype=float32)
    """
    check_keywords("ones", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=1, **kwargs)


def full(shape: Any, fill_value: Any, **kwargs: Any) -> Array:
    """Create an array whose every element is ``fill_value`` (only the metadata is written).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    fill_value : scalar
        The value of every element (the data type's default for ``None``; Zarr v2:
        ``null``).
    **kwargs
        The keywords of [zarrfast.create][]: ``dtype``, ``chunks``, ``store``, ``path``,
        ``zarr_format``, ``compressor``, ``filters``, ``attributes``, ``overwrite``,
        ``config``, ``mode``...  An unknown one is a ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> a = zarrfast.full((2, 2), 3.5, store={})
    >>> a[:]
    array([[3.5, 3.5],
           [3.5, 3.5]])
    """
    check_keywords("full", kwargs, _CREATE_KEYWORDS)
    return create(shape, fill_value=fill_value, **kwargs)


def _format_given(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of a ``*_like`` function without ``zarr_format=None``: as in zarr-python
    3.4, ``None`` means the model's format, as when it is not given."""
    if "zarr_format" in kwargs and kwargs["zarr_format"] is None:
        return {k: v for k, v in kwargs.items() if k != "zarr_format"}
    return kwargs


def empty_like(a: Any, **kwargs: Any) -> Array:
    """Create an array shaped like ``a`` whose elements read as the fill value.

    No chunk is written: with ``a`` a zarrfast array, its fill value is copied, so the
    new array reads as ``a``'s fill value everywhere.

    Parameters
    ----------
    a : array-like
        The model: a zarrfast ``Array`` (or an asynchronous view of one), whose shape,
        dtype, fill value, Zarr format, order and codecs are copied, as zarr-python copies
        them (v3: the whole codec list; v2: the compressor and the filters), with the
        chunk grid they go with (a sharded array's shards, its inner chunks being in the
        sharding codec; a rectilinear grid's sizes); or anything with ``shape`` and
        ``dtype`` (those two, and its chunk shape: ``chunks`` when it is a tuple of ints,
        as a zarr-python or h5py array's; a dask array's ``chunksize`` when its chunks are
        regular, all of that size but the last of each dimension).
    **kwargs
        The keywords of [zarrfast.create][] (``store``, ``path``, ``dtype``, ``chunks``,
        ``zarr_format``...), which override what is copied from ``a``.  No codec is copied
        when ``dtype`` or ``zarr_format`` given differ from ``a``'s, nor, from a v3 array,
        when a codec keyword is given (``codecs``, ``compressor``, ``filters``...): the
        chunks copied are then ``a``'s (inner) chunks.  A v2 array's compressor and filters
        are copied each unless given.  ``chunks`` given with a sharded ``a`` is the shard
        shape (as in zarr-python).  An unknown keyword is a ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> src = zarrfast.create_array(store={}, shape=(4, 4), chunks=(2, 2), dtype="int8",
    ...                             fill_value=5)
    >>> e = zarrfast.empty_like(src)
    >>> e.shape, e.chunks, e.dtype, e.fill_value
    ((4, 4), (2, 2), dtype('int8'), np.int8(5))
    """
    check_keywords("empty_like", kwargs, _CREATE_KEYWORDS)
    kw = like_kwargs_of(a, _format_given(kwargs))
    return create(kw.pop("shape"), **kw)


def zeros_like(a: Any, **kwargs: Any) -> Array:
    """Create an array of zeros shaped like ``a`` (fill value 0; no chunk is written).

    Parameters
    ----------
    a : array-like
        The model: a zarrfast ``Array`` (or an asynchronous view of one), whose shape,
        dtype, fill value, Zarr format, order and codecs are copied, as zarr-python copies
        them (v3: the whole codec list; v2: the compressor and the filters), with the
        chunk grid they go with (a sharded array's shards, its inner chunks being in the
        sharding codec; a rectilinear grid's sizes); or anything with ``shape`` and
        ``dtype`` (those two, and its chunk shape: ``chunks`` when it is a tuple of ints,
        as a zarr-python or h5py array's; a dask array's ``chunksize`` when its chunks are
        regular, all of that size but the last of each dimension).
    **kwargs
        The keywords of [zarrfast.create][] (``store``, ``path``, ``dtype``, ``chunks``,
        ``zarr_format``...), which override what is copied from ``a``; but ``fill_value`` is
        always 0.  No codec is copied when ``dtype`` or ``zarr_format`` given differ from
        ``a``'s, nor, from a v3 array, when a codec keyword is given (``codecs``,
        ``compressor``, ``filters``...): the chunks copied are then ``a``'s (inner) chunks.
        A v2 array's compressor and filters are copied each unless given.  ``chunks`` given
        with a sharded ``a`` is the shard shape (as in zarr-python).  An unknown keyword is
        a ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> src = np.arange(6, dtype="int32").reshape(2, 3)
    >>> z = zarrfast.zeros_like(src, store={})
    >>> z[:]
    array([[0, 0, 0],
           [0, 0, 0]], dtype=int32)
    """
    check_keywords("zeros_like", kwargs, _CREATE_KEYWORDS)
    kw = like_kwargs_of(a, _format_given(kwargs))
    kw["fill_value"] = 0
    return create(kw.pop("shape"), **kw)


def ones_like(a: Any, **kwargs: Any) -> Array:
    """Create an array of ones shaped like ``a`` (fill value 1; no chunk is written).

    Parameters
    ----------
    a : array-like
        The model: a zarrfast ``Array`` (or an asynchronous view of one), whose shape,
        dtype, fill value, Zarr format, order and codecs are copied, as zarr-python copies
        them (v3: the whole codec list; v2: the compressor and the filters), with the
        chunk grid they go with (a sharded array's shards, its inner chunks being in the
        sharding codec; a rectilinear grid's sizes); or anything with ``shape`` and
        ``dtype`` (those two, and its chunk shape: ``chunks`` when it is a tuple of ints,
        as a zarr-python or h5py array's; a dask array's ``chunksize`` when its chunks are
        regular, all of that size but the last of each dimension).
    **kwargs
        The keywords of [zarrfast.create][] (``store``, ``path``, ``dtype``, ``chunks``,
        ``zarr_format``...), which override what is copied from ``a``; but ``fill_value`` is
        always 1.  No codec is copied when ``dtype`` or ``zarr_format`` given differ from
        ``a``'s, nor, from a v3 array, when a codec keyword is given (``codecs``,
        ``compressor``, ``filters``...): the chunks copied are then ``a``'s (inner) chunks.
        A v2 array's compressor and filters are copied each unless given.  ``chunks`` given
        with a sharded ``a`` is the shard shape (as in zarr-python).  An unknown keyword is
        a ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> src = np.arange(6, dtype="int32").reshape(2, 3)
    >>> z = zarrfast.ones_like(src, store={})
    >>> z[:]
    array([[1, 1, 1],
           [1, 1, 1]], dtype=int32)
    """
    check_keywords("ones_like", kwargs, _CREATE_KEYWORDS)
    kw = like_kwargs_of(a, _format_given(kwargs))
    kw["fill_value"] = 1
    return create(kw.pop("shape"), **kw)


def full_like(a: Any, **kwargs: Any) -> Array:
    """Create an array shaped like ``a``, every element the fill value.

    No chunk is written.  The fill value is ``fill_value`` if given, else ``a``'s (for a
    zarrfast array), else the data type's default.

    Parameters
    ----------
    a : array-like
        The model: a zarrfast ``Array`` (or an asynchronous view of one), whose shape,
        dtype, fill value, Zarr format, order and codecs are copied, as zarr-python copies
        them (v3: the whole codec list; v2: the compressor and the filters), with the
        chunk grid they go with (a sharded array's shards, its inner chunks being in the
        sharding codec; a rectilinear grid's sizes); or anything with ``shape`` and
        ``dtype`` (those two, and its chunk shape: ``chunks`` when it is a tuple of ints,
        as a zarr-python or h5py array's; a dask array's ``chunksize`` when its chunks are
        regular, all of that size but the last of each dimension).
    **kwargs
        The keywords of [zarrfast.create][] (``store``, ``path``, ``dtype``, ``chunks``,
        ``zarr_format``...), which override what is copied from ``a``.  No codec is copied
        when ``dtype`` or ``zarr_format`` given differ from ``a``'s, nor, from a v3 array,
        when a codec keyword is given (``codecs``, ``compressor``, ``filters``...): the
        chunks copied are then ``a``'s (inner) chunks.  A v2 array's compressor and filters
        are copied each unless given.  ``chunks`` given with a sharded ``a`` is the shard
        shape (as in zarr-python).  An unknown keyword is a ``TypeError``.

    Returns
    -------
    Array
        The new array (in memory unless ``store`` is given).

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.create][].

    Examples
    --------
    >>> f = zarrfast.full_like(np.zeros((2, 2), dtype="float32"), fill_value=9)
    >>> f[:]
    array([[9., 9.],
           [9., 9.]], dtype=float32)
    """
    check_keywords("full_like", kwargs, _CREATE_KEYWORDS)
    kw = like_kwargs_of(a, _format_given(kwargs))
    return create(kw.pop("shape"), **kw)


def open_like(a: Any, path: str, *, store: StoreLike = None, **kwargs: Any) -> Array:
    """Open an array at ``path``, creating it shaped like ``a`` if it is missing.

    [zarrfast.open_array][] with ``a``'s shape, dtype and (for a zarrfast array) chunks,
    codecs, fill value and order as creation keywords: mode ``"a"`` (the default, also
    for ``mode=None``) opens an array already there as it is, in either Zarr format, and
    creates one like ``a`` otherwise, in ``zarr_format`` if given, else in the default
    format (the configuration's ``default_zarr_format``, not ``a``'s, as zarr-python 3.4),
    with ``a``'s codecs only when that is ``a``'s format.

    Parameters
    ----------
    a : array-like
        The model: a zarrfast ``Array`` (or an asynchronous view of one), whose shape,
        dtype, fill value, Zarr format, order and codecs are copied, as zarr-python copies
        them (v3: the whole codec list; v2: the compressor and the filters), with the
        chunk grid they go with (a sharded array's shards, its inner chunks being in the
        sharding codec; a rectilinear grid's sizes); or anything with ``shape`` and
        ``dtype`` (those two, and its chunk shape: ``chunks`` when it is a tuple of ints,
        as a zarr-python or h5py array's; a dask array's ``chunksize`` when its chunks are
        regular, all of that size but the last of each dimension).
    path : str
        Where: the store itself (a local directory, a URL...) when ``store`` is not
        given, else the array's path in ``store``.
    store : Store, StorePath, str, pathlib.Path, dict or None, optional
        The store (zarr-python's ``open_array`` keyword, passed on to it).
    **kwargs
        The keywords of [zarrfast.open_array][] (``mode``, ``zarr_format``, ``dtype``,
        ``chunks``, ``config``...), which override what is copied from ``a``.  No codec is
        copied when ``dtype`` or ``zarr_format`` given differ from ``a``'s, nor, from a v3
        array, when a codec keyword is given (``codecs``, ``compressors``, ``serializer``,
        ``shards``...): the chunks copied are then ``a``'s (inner) chunks.  A v2 array's
        compressor and filters are copied each unless given.  An unknown keyword is a
        ``TypeError``.

    Returns
    -------
    Array
        The array opened or created.

    Raises
    ------
    TypeError
        An unknown keyword (with a "did you mean" hint).
    zarrfast.errors.ZarrfastError
        The errors of [zarrfast.open_array][].

    Examples
    --------
    >>> src = zarrfast.create_array(store={}, shape=(3, 4), chunks=(1, 4), dtype="uint16")
    >>> b = zarrfast.open_like(src, "like.zarr")
    >>> b
    <Array file://like.zarr shape=(3, 4) dtype=uint16>
    >>> b.chunks
    (1, 4)
    """
    check_keywords("open_like", kwargs, _OPEN_LIKE_KEYWORDS)
    # (as zarr-python 3.4's: a's format is not inherited, so an existing array of either
    # format opens; what is copied is what fits the format given, else the default one)
    given = kwargs.get("zarr_format")
    kw = like_kwargs_of(a, {**kwargs, "zarr_format": given or zconfig.get("default_zarr_format")})
    if given is None:
        kw.pop("zarr_format", None)
    if kw.get("mode") is None:
        kw["mode"] = "a"
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
    """Create an array holding ``data``, laid out as ``data`` when it is a zarrfast array.

    With ``data`` a zarrfast ``Array``, its chunks, shards, codecs, fill value, dimension
    names and attributes are kept unless given (the codecs only within one Zarr format);
    its elements are copied in slabs of whole chunk rows (about 64 MiB), so memory stays
    bounded.  Any other array-like is read whole with ``numpy.asarray``.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``name``.
    data : Array or array-like
        The values (and, for a zarrfast array, the layout) of the new array.
    write_data : bool, optional
        Whether the values are copied (``False``: an empty array of that layout).
    name : str, optional
        The new array's path in the store (``None``: the root).
    chunks, shards, filters, compressors, serializer : optional
        As for [zarrfast.create_array][]; ``"keep"`` (the default): ``data``'s, for a
        zarrfast array (for another array-like: ``create_array``'s defaults).
    fill_value : scalar or None, optional
        Not given: ``data``'s fill value (for a zarrfast array), else the data type's
        default.
    order : {"C", "F"} or None, optional
        The memory order of the arrays reads return (stored in Zarr v2 metadata);
        ``None``: the ``order`` of ``config``, else the configuration's ``array.order``.
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: ``data``'s (a zarrfast array), else the
        configuration's ``default_zarr_format`` (3 unless set).
    attributes : dict, optional
        User attributes (JSON-serializable); ``None``: ``data``'s, for a zarrfast
        array.
    chunk_key_encoding : str, tuple, dict or None, optional
        How chunk keys are spelled: ``"default"`` (``c/0/1``) or ``"v2"`` (``0.1``),
        a ``(name, separator)`` tuple or ``{"name": ..., "separator": "/" | "."}``;
        ``None``: the format's default.  Zarr v2 takes only ``"v2"``.
    dimension_names : sequence of str or None, optional
        A name (or ``None``) per dimension: stored in the v3 metadata, and in the
        ``_ARRAY_DIMENSIONS`` attribute of a v2 array (as xarray reads it); ``None``:
        ``data``'s, for a zarrfast array.
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    overwrite : bool, optional
        Replace a node already at ``name``.
    config : dict or ArrayConfig, optional
        The array's runtime configuration: ``{"write_empty_chunks": bool, "order": "C" |
        "F"}`` (``write_empty_chunks``: store chunks whose elements all equal the fill
        value).

    Returns
    -------
    Array
        The new array.

    Raises
    ------
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists there already (and is not to be replaced), or a parent is an
        array.
    zarrfast.errors.MetadataValidationError
        An argument the metadata cannot take: a codec that is not one or does not fit,
        dimension names of the wrong number, a format other than 2 or 3...
    zarrfast.errors.UnsupportedDataTypeError
        A ``dtype`` that is not a data type zarrfast can store.
    zarrfast.errors.FillValueError
        A fill value the data type cannot represent.
    zarrfast.errors.ZarrfastError
        Other arguments that do not fit: no ``shape`` (nor ``data``), chunks or shards of
        the wrong rank, shards with Zarr v2, an unknown ``config`` key...
    zarrfast.errors.ReadOnlyError
        The store is read-only.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> src = zarrfast.create_array(store={}, shape=(6, 4), chunks=(2, 4), dtype="int16",
    ...                             compressors=None, attributes={"units": "m"})
    >>> src[:] = np.arange(24).reshape(6, 4)
    >>> copy = zarrfast.from_array("copy.zarr", data=src)
    >>> copy.chunks, copy.compressors, dict(copy.attrs)
    ((2, 4), (), {'units': 'm'})
    >>> copy[5]
    array([20, 21, 22, 23], dtype=int16)
    """
    src = data if isinstance(data, Array) else None
    if src is not None and write_data and overwrite:
        # overwriting deletes everything at the destination before the copy reads the
        # source: a destination overlapping the source would copy only fill values
        store, name = _resolve(store, name, storage_options=storage_options)
        storage_options = None
        _refuse_overlap(src, store, name or "")
    kw: dict[str, Any] = {}
    if src is not None:
        same_format = zarr_format in (None, src.zarr_format)
        layout = layout_of(src)
        kw["chunks"] = layout["chunks"] if _keep(chunks) else chunks
        kw["shards"] = layout.get("shards") if _keep(shards) else shards
        if src.zarr_format == 3 and same_format:
            kw["filters"] = src.filters if _keep(filters) else filters
            kw["serializer"] = src.serializer if _keep(serializer) else serializer
            kw["compressors"] = src.compressors if _keep(compressors) else compressors
        elif src.zarr_format == 2 and same_format:
            md = src.metadata
            kw["filters"] = list(md.filters or ()) if _keep(filters) else filters
            kw["compressors"] = md.compressor if _keep(compressors) else compressors
        fill_value = src.fill_value if fill_value is DEFAULT_FILL_VALUE else fill_value
        dimension_names = src.dimension_names if dimension_names is None else dimension_names
        # (a deep copy: the new array's attributes must not alias the source's containers)
        attributes = copy.deepcopy(dict(src.attrs)) if attributes is None else attributes
        if chunk_key_encoding is None and same_format:  # (as zarr-python keeps it)
            chunk_key_encoding = (src.metadata.chunk_key_encoding if src.zarr_format == 3
                                  else {"name": "v2",
                                        "separator": src.metadata.dimension_separator})
        target_format = zarr_format or src.zarr_format
        if src.zarr_format == 2 and target_format == 3 and src.order == "F":
            warnings.warn(  # (zarr-python 3.4's words)
                "The 'order' attribute of a Zarr format 2 array does not have a direct "
                "analogue in Zarr format 3. The existing order='F' of the source Zarr format "
                "2 array will be ignored.", ZarrUserWarning, stacklevel=3)
        elif order is None and target_format == 2:
            order = src.order
        zarr_format = target_format
        shape, dtype = src.shape, src.dtype
    else:
        arr = np.asarray(data)
        shape, dtype = arr.shape, arr.dtype
        for key, value in (("chunks", chunks), ("shards", shards), ("filters", filters),
                           ("compressors", compressors), ("serializer", serializer)):
            if not _keep(value):
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


def _stores_share_data(a: Any, b: Any) -> bool:
    """Whether two stores are views of the same data (a read-only view included)."""
    with contextlib.suppress(Exception):
        a = a.with_read_only(b.read_only)
    return bool(a == b)


def _refuse_overlap(src: Array, store: Any, path: str) -> None:
    """``from_array(..., overwrite=True)`` into ``path`` of ``store``: refused, as
    zarr-python 3.4 refuses it, where the destination and the source overlap."""
    src_prefix = f"{src.path}/" if src.path else ""
    dest_prefix = f"{path}/" if path else ""
    if (src_prefix.startswith(dest_prefix) or dest_prefix.startswith(src_prefix)) and \
            _stores_share_data(src.store, store):
        raise ZarrfastError(
            f"Cannot overwrite {path!r} with the array at {src.path!r} because the paths "
            f"overlap. Write to a different path, or pass data=array[...].")


def _keep(value: Any) -> bool:
    """Whether a ``from_array`` keyword is ``"keep"`` (chunks may be a NumPy array)."""
    return isinstance(value, str) and value == "keep"


def save_array(store: StoreLike, arr: Any, *, zarr_format: int | None = None,
               path: str | None = None, storage_options: Mapping[str, Any] | None = None,
               mode: str = "a", overwrite: bool | None = None, data: Any = None,
               **kwargs: Any) -> None:
    """Store ``arr`` as a new array at ``path``.

    As in zarr-python, a node already there is an error (nothing is replaced) unless
    ``overwrite`` is true or ``mode`` is ``"w"``.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    arr : array-like
        The values to store (read whole with ``numpy.asarray``).
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).
    path : str, optional
        The array's path in the store (``None``: the root).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    mode : {"r", "r+", "a", "w", "w-"}, optional
        ``"w"`` replaces a node already there (as ``overwrite=True``), ``"w-"`` never
        does (even with ``overwrite``), ``"r"`` opens the store read-only (so nothing can
        be created); ``"a"`` (the default) and ``"r+"``: as ``overwrite`` says.
    overwrite : bool or None, optional
        Replace a node already at ``path``.
    data : array-like, optional
        zarr-python writes it before ``arr`` replaces all of it: here it is only checked
        that its shape broadcasts to ``arr``'s (a ``ValueError`` otherwise).
    **kwargs
        The keywords of [zarrfast.create_array][] but ``shape`` and ``dtype`` (they are
        ``arr``'s): ``chunks``, ``shards``, ``filters``, ``compressors``,
        ``serializer``, ``fill_value``, ``order``, ``attributes``,
        ``chunk_key_encoding``, ``dimension_names``, ``config``, ``write_data``; or
        zarr-python's older ``chunk_shape``, ``codecs``, ``dimension_separator`` and
        ``compressor``, which its ``save_array`` takes (not together with the newer
        ``shards``, ``compressors``, ``serializer`` or ``write_data``).  An unknown one
        is a ``TypeError``.

    Raises
    ------
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists there already (and is not to be replaced), or a parent is an
        array.
    zarrfast.errors.MetadataValidationError
        An argument the metadata cannot take: a codec that is not one or does not fit,
        dimension names of the wrong number, a format other than 2 or 3...
    zarrfast.errors.UnsupportedDataTypeError
        A ``dtype`` that is not a data type zarrfast can store.
    zarrfast.errors.FillValueError
        A fill value the data type cannot represent.
    zarrfast.errors.ZarrfastError
        Other arguments that do not fit: no ``shape`` (nor ``data``), chunks or shards of
        the wrong rank, shards with Zarr v2, an unknown ``config`` key...
    zarrfast.errors.ReadOnlyError
        The store is read-only.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> zarrfast.save_array("data.zarr", np.arange(6).reshape(2, 3), chunks=(1, 3))
    >>> zarrfast.open_array("data.zarr", mode="r")[1]
    array([3, 4, 5])
    >>> zarrfast.save_array("data.zarr", np.zeros(2), mode="w")  # replaces it
    >>> zarrfast.load("data.zarr")
    array([0., 0.])
    """
    check_keywords("save_array", kwargs, _SAVE_ARRAY_KEYWORDS)
    values = np.asarray(arr)
    if data is not None:  # (zarr-python writes it, then arr over all of it)
        np.broadcast_to(np.asarray(data), values.shape)
    store_read_only, overwrite = _creating_mode(mode, overwrite)
    s, p = _resolve(store, path, read_only=store_read_only, storage_options=storage_options,
                    mode=mode)
    _create_opened(s, p, overwrite, zarr_format, {**kwargs, "data": values})


def save_group(store: StoreLike, *args: Any, zarr_format: int | None = None,
               path: str | None = None, storage_options: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
    """Store arrays as the members of a new group at ``path``, replacing what is there.

    Positional arrays are named ``arr_0``, ``arr_1``...; keyword arrays take their
    keyword's name.  A keyword whose value is not an array is refused (a ``TypeError``
    naming it, as zarr-python does) before anything is replaced: it is more likely a
    misspelled option than a member.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    *args : array-like
        Arrays stored as ``arr_0``, ``arr_1``...
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).
    path : str, optional
        The group's path in the store (``None``: the root).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    **kwargs : array-like
        Arrays stored under their keyword's name (each a NumPy array, or another array
        with ``shape``, ``dtype`` and ``__array__``).

    Raises
    ------
    TypeError
        A keyword whose value is not an array.
    zarrfast.errors.ZarrfastError
        No array given.
    zarrfast.errors.ReadOnlyError
        The store is read-only.

    Examples
    --------
    >>> zarrfast.save_group("data.zarr", np.arange(3), temperature=np.ones((2, 2)))
    >>> g = zarrfast.open_group("data.zarr", mode="r")
    >>> sorted(g)
    ['arr_0', 'temperature']
    >>> g["temperature"][:]
    array([[1., 1.],
           [1., 1.]])
    """
    for name, value in kwargs.items():
        if not _is_ndarray_like(value):
            raise TypeError(f"Keyword argument {name!r} must be a numpy or other "
                            f"NDArrayLike array, got {type(value).__name__} (save_group's "
                            f"keyword arguments are the arrays to save)")
    if not args and not kwargs:
        raise ZarrfastError("save_group: at least one array must be provided")
    arrays = [(f"arr_{i}", np.asarray(a)) for i, a in enumerate(args)]
    arrays += [(name, np.asarray(a)) for name, a in kwargs.items()]
    s, p = _resolve(store, path, storage_options=storage_options)
    # every array's metadata made first (in memory, no data): one that cannot be stored
    # (an object array of numbers, say) is refused before the group that is there is
    # replaced, so its data is not lost to a save that fails
    scratch = open_group(MemoryStore(), mode="w", zarr_format=zarr_format)
    for name, a in arrays:
        scratch.create_array(name, data=a, write_data=False)
    g = open_group(s, mode="w", path=p, zarr_format=zarr_format)
    for name, a in arrays:
        g.create_array(name, data=a, overwrite=True)


def _is_ndarray_like(value: Any) -> bool:
    """An array (NumPy's, or one that gives NumPy its data), as zarr-python's
    ``NDArrayLike`` check takes it."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and (
        hasattr(value, "__array__") or hasattr(value, "__array_interface__"))


def save(store: StoreLike, *args: Any, zarr_format: int | None = None, path: str | None = None,
         storage_options: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
    """Store one array (as [zarrfast.save_array][]) or several (as a group).

    One positional array and no keyword: [zarrfast.save_array][] (a node already there
    is an error).  Several arrays, or keywords: [zarrfast.save_group][], replacing what
    is at ``path``; the keywords are the arrays, and one that is not an array is a
    ``TypeError``.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    *args : array-like
        The array, or the arrays (stored as ``arr_0``, ``arr_1``...).
    zarr_format : {2, 3} or None, optional
        The Zarr format to write; ``None``: the configuration's ``default_zarr_format``
        (3 unless set).
    path : str, optional
        The node's path in the store (``None``: the root).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.
    **kwargs : array-like
        Arrays stored under their keyword's name, in a group.

    Raises
    ------
    TypeError
        A keyword whose value is not an array.
    zarrfast.errors.ZarrfastError
        No array given; the errors of [zarrfast.save_array][].

    Examples
    --------
    >>> zarrfast.save("one.zarr", np.arange(3))
    >>> zarrfast.load("one.zarr")
    array([0, 1, 2])
    >>> zarrfast.save("many.zarr", np.arange(2), b=np.ones(2))
    >>> zarrfast.load("many.zarr")
    {'arr_0': array([0, 1]), 'b': array([1., 1.])}
    """
    if len(args) == 1 and not kwargs:
        save_array(store, args[0], zarr_format=zarr_format, path=path,
                   storage_options=storage_options)
    else:
        save_group(store, *args, zarr_format=zarr_format, path=path,
                   storage_options=storage_options, **kwargs)


@checked
def load(store: StoreLike, path: str | None = None, zarr_format: int | None = None, *,
         storage_options: Mapping[str, Any] | None = None) -> Any:
    """Read an array's data, or the data of a group's arrays, into memory.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where the node lives: a [zarrfast.storage.Store][]; a local directory (a path
        ending in ``.zip``: a zip file); a remote URL such as ``"s3://bucket/x.zarr"``
        (opened with ``storage_options``); a ``dict`` (in memory, holding the keys);
        ``None``, a new in-memory store.  A zarr-python store (icechunk's, ...) is
        wrapped; a [zarrfast.storage.StorePath][] puts its path before ``path``.
    path : str, optional
        The node's path in the store (``None``: the root).
    zarr_format : {2, 3} or None, optional
        The format to look for (``None``: v3 first, then v2).
    storage_options : dict, optional
        Options of a remote store given as a URL (credentials, endpoint...); given for
        any other store, a ``StorageOptionsError``.

    Returns
    -------
    numpy.ndarray or dict of str to numpy.ndarray
        For an array, all its data; for a group, a dict of its arrays' data by name (the
        direct members only; subgroups are left out).

    Raises
    ------
    zarrfast.errors.NodeNotFoundError
        Nothing at ``path``.
    TypeError
        An unknown keyword (with a "did you mean" hint).

    Examples
    --------
    >>> zarrfast.save_group("data.zarr", x=np.arange(2), y=np.zeros(1))
    >>> zarrfast.load("data.zarr")
    {'x': array([0, 1]), 'y': array([0.])}
    >>> zarrfast.load("data.zarr", path="x")
    array([0, 1])
    """
    node = open(store, mode="r", path=path, zarr_format=zarr_format,
                storage_options=storage_options)
    if isinstance(node, Array):
        return node[...]
    return {k: v[...] for k, v in node.arrays()}


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> Any:
    """Draw the hierarchy below a group, as zarr-python draws it (deprecated).

    The same as ``grp.tree(expand, level)``: box-drawing lines, each array with its shape
    and dtype.  Deprecated, as ``zarr.tree`` is in zarr-python 3.4: it warns
    (``ZarrDeprecationWarning``) "Use Group.tree instead."

    Parameters
    ----------
    grp : Group
        The group at the top.
    expand : None, optional
        Taken as zarr-python takes it; anything but ``None`` raises
        ``NotImplementedError``, as there.
    level : int or None, optional
        How deep to go below the group's direct members (``0``: the direct members
        only; ``None``: all).

    Returns
    -------
    TreeRepr
        Prints as the tree (``str``, ``repr``); shows as HTML in Jupyter.

    Raises
    ------
    NotImplementedError
        ``expand`` is not ``None``.

    Examples
    --------
    >>> g = zarrfast.group(store={})
    >>> a = g.create_array("x", shape=(3,), dtype="int32")
    >>> b = g.create_group("sub").create_array("y", shape=(2, 2), dtype="float64")
    >>> g.tree()
    /
    ├── sub
    │   └── y (2, 2) float64
    └── x (3,) int32
    >>> g.tree(level=0)
    /
    ├── sub
    └── x (3,) int32
    """
    warnings.warn(ZarrDeprecationWarning("zarrfast.tree is deprecated (as zarr.tree in "
                                         "zarr-python 3.4). Use Group.tree instead."),
                  stacklevel=2)
    return grp.tree(expand=expand, level=level)


def create_hierarchy(*, store: StoreLike | StorePath, nodes: Mapping[str, Any],
                     overwrite: bool = False) -> Iterator[tuple[str, Array | Group]]:
    """Write the metadata of many nodes, and yield each node made.

    A generator: nothing is written until it is iterated (``dict(...)`` or ``list(...)``
    of it writes everything).  As in zarr-python, the groups the hierarchy implies (the
    root and every parent not in ``nodes``) are created where no node is, and yielded
    first; a group already there is left as it is.  Only metadata is written: the arrays
    read as their fill value.

    Parameters
    ----------
    store : Store, StorePath, str, pathlib.Path, dict or None
        Where to write, as for [zarrfast.create_array][] (resolved once: ``None`` is one
        new in-memory store holding every node); the paths of a
        [zarrfast.storage.StorePath][] are below its path.
    nodes : dict
        ``{path: metadata}``: the metadata of each node, all of one Zarr format, as
        nodes give it (``array.metadata``, ``group.metadata``) or ``ArrayMetadata``,
        ``GroupMetadata`` and their v2 twins build it.
    overwrite : bool, optional
        Replace the nodes already at the paths of ``nodes``.

    Yields
    ------
    tuple of (str, Array or Group)
        ``(path, node)`` for each node, ``path`` normalized, without a leading ``/``.

    Raises
    ------
    zarrfast.errors.MetadataValidationError
        Nodes of more than one Zarr format (or one other than an existing parent's).
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node is at one of the paths (without ``overwrite``), or a parent is an array.

    Examples
    --------
    >>> src = zarrfast.create_array(store={}, shape=(4,), chunks=(2,), dtype="uint16")
    >>> grp = zarrfast.group(store={}, attributes={"kind": "demo"})
    >>> store = zarrfast.MemoryStore()
    >>> made = dict(zarrfast.create_hierarchy(store=store,
    ...                                       nodes={"g": grp.metadata, "g/a": src.metadata}))
    >>> sorted(made)
    ['', 'g', 'g/a']
    >>> made["g/a"]
    <Array memory://.../g/a shape=(4,) dtype=uint16>
    >>> dict(zarrfast.open_group(store, path="g", mode="r").attrs)
    {'kind': 'demo'}
    """
    from zarrfast.hierarchy.node import existing_node
    from zarrfast.hierarchy.node import write_new_node as _write

    given = {normalize_path(k): md for k, md in nodes.items()}
    formats = {getattr(md, "zarr_format", None) for md in given.values()}
    if len(formats) > 1:
        by_format = {f: [k for k, md in given.items() if md.zarr_format == f] for f in (2, 3)}
        raise MetadataValidationError(  # (zarr-python 3.4's words)
            f"create_hierarchy: Got data with both Zarr v2 and Zarr v3 nodes, which is "
            f"invalid. The following keys map to Zarr v2 nodes: {by_format[2]}. The "
            f"following keys map to Zarr v3 nodes: {by_format[3]}. Ensure that all nodes "
            f"have the same Zarr format.")
    implied: list[str] = []
    for key in given:
        parts = key.split("/") if key else []
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            if parent not in given and parent not in implied:
                implied.append(parent)
    fmt = formats.pop() if formats else 3
    # the store is resolved once: every node in the same one (None: one new MemoryStore)
    s, base = _resolve(store, None)

    created = []
    for key in sorted(implied, key=lambda k: (k.count("/") + bool(k), k)):
        if existing_node(s, join_path(base, key)) is None:  # write_new_node makes it with the first child
            created.append(key)
    for path, md in given.items():
        _write(s, join_path(base, path), md, overwrite=overwrite)
    for key in created:
        yield key, node_from_metadata(s, join_path(base, key), GroupMetadata() if fmt == 3
                                      else GroupMetadataV2(), read_only=False)
    for path, md in given.items():
        yield path, node_from_metadata(s, join_path(base, path), md, read_only=False)


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


def _read_across_stores(todo: list[tuple[Array, list[int], list[Any], list[Array]]],
                        results: list[Any]) -> list[tuple[Array, list[int], list[Any],
                                                          list[Array]]]:
    """Of ``get_many``'s batches (one per store and layout), read those of one layout
    whose requests are all step-1 boxes of local chunk files (``Array._store_box``) as
    one read (:func:`~zarrfast.engine.many.read_store_boxes`), their results put in
    ``results``; the batches left to read.  Each array's chunks are read from its own
    store's files: no store is taken for another.  A read that fails leaves its
    batches to their own reads, which say which array, selection and chunk."""
    by_layout: dict[tuple, list[int]] = {}
    for j, (leader, _, _, _) in enumerate(todo):
        by_layout.setdefault(leader._layout_key(), []).append(j)
    done: set[int] = set()
    for members in by_layout.values():
        if len(members) < 2:
            continue
        boxes: list[StoreBox | None] = [
            node._store_box(sel) for j in members
            for sel, node in zip(todo[j][2], todo[j][3], strict=True)]
        if any(b is None for b in boxes):
            continue  # (a request the arrays' own reads take)
        leader = todo[members[0]][0]
        try:
            got = read_store_boxes([b for b in boxes if b is not None], leader._dtype,
                                   int(zconfig.get("threads")), "zarrfast.get_many")
        except (ZarrfastError, OSError):
            # read again, array by array: an error then names its array, selection and
            # chunk.  (OSError: the one call opens every store's root at once, which a
            # process short of descriptors cannot, EMFILE; the arrays' own reads can.)
            continue
        for i, r in zip([i for j in members for i in todo[j][1]], got, strict=True):
            results[i] = r
        done.update(members)
    return [b for j, b in enumerate(todo) if j not in done]


def get_many(requests: Iterable[tuple[Any, Any]], *, kind: str = "basic") -> list[Any]:
    """Read selections of several arrays in one call: one result per request.

    Each request is an ``(array, selection)`` pair.  The requests of arrays of one store
    and one layout (chunk grid, codecs, data type and shape: the arrays of a dataset's
    variables, say) are read as one batch, as :meth:`zarrfast.Array.get_many` reads the
    selections of one array: one planned read, the chunks they share read once, each
    shard visited once, the decoding spread over the thread pool.  Step-1 boxes of
    arrays of one layout on local stores of their own (a dataset's arrays each opened
    from its path) are read as one too, with ``config threads`` of 2 or more: one kernel
    call for all of their chunks, each read from its own store's files, shared by the
    threads.  Other batches of different layouts (or stores) are read up to ``config
    threads`` at a time, each in a thread of its own, or all at the same time on remote
    stores (``config io_concurrency``): the same region of 50 arrays of a remote store
    costs about one round trip, not 50.

    Parameters
    ----------
    requests : iterable of (Array, selection)
        The arrays (a [zarrfast.Array][] or a [zarrfast.AsyncArray][]) and what to
        read of each: what ``array[...]`` (``kind="basic"``), ``array.oindex[...]``
        (``"orthogonal"``) or ``array.blocks[...]`` (``"block"``) takes.
    kind : {"basic", "orthogonal", "block"}, default "basic"
        How every selection is read.

    Returns
    -------
    list
        One result per request, in order: what the same indexing of its array returns.

    Raises
    ------
    zarrfast.errors.IndexingError
        A request that is not an ``(array, selection)`` pair, or a selection the array
        refuses (the message names the array and the request's position).
    zarrfast.errors.BoundsCheckError
        An index outside its array.

    Examples
    --------
    >>> root = zarrfast.group(store={})
    >>> arrays = [root.create_array(f"t{i}", shape=(4, 4), dtype="int16", fill_value=i)
    ...           for i in range(3)]
    >>> [r.tolist() for r in zarrfast.get_many([(a, (slice(0, 2), 0)) for a in arrays])]
    [[0, 0], [1, 1], [2, 2]]
    """
    items = list(requests)
    # the requests of arrays of one store and one layout (chunks, codecs, data type,
    # shape): one batch, their chunks read by one planned read
    batches: dict[tuple, tuple[Array, list[int], list[Any], list[Array]]] = {}
    for i, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise IndexingError(f"get_many: request {i} is not an (array, selection) pair: "
                                f"{item!r}")
        arr, sel = item
        node = getattr(arr, "_node", arr)  # (an AsyncArray: its array)
        if not isinstance(node, Array):
            raise IndexingError(f"get_many: request {i}: {type(arr).__name__} is not a "
                                f"zarrfast array")
        batch = batches.setdefault((id(node.store), node._layout_key()), (node, [], [], []))
        batch[1].append(i)
        batch[2].append(sel)
        batch[3].append(node)
    results: list[Any] = [None] * len(items)

    def read(batch: tuple[Array, list[int], list[Any], list[Array]]) -> None:
        leader, numbers, sels, nodes = batch
        for i, r in zip(numbers, leader._get_many(sels, kind, None, numbers=numbers,
                                                  arrays=nodes), strict=True):
            results[i] = r

    todo = list(batches.values())
    if not todo:
        return results
    if any(node.store.capabilities.batched_gets for node, _, _, _ in todo):
        map_io(read, todo)  # (each batch's requests in flight together)
        return results
    if len(todo) > 1 and kind == "basic" and int(zconfig.get("threads")) > 1:
        # the boxes of arrays of one layout on stores of their own (a dataset's arrays
        # each opened from its path) read as one, one kernel call for all of their
        # chunks shared by the threads (see _read_across_stores), warm or cold: cold,
        # that kernel finds the first file out of the page cache and announces the
        # files a window ahead of the rows the threads read, every array's (the
        # loader's 50 regions of 4 chunks, cold: 2 threads decode while the disk reads,
        # where 50 reads of their own, at once in as many threads, cost a plan, a
        # kernel call and a thread handoff each).  (At one thread each array's box
        # read takes a helper thread for its files' reads, which one call for all of
        # them would not: read as below.)
        todo = _read_across_stores(todo, results)
        if not todo:
            return results
    # warm, the batches after the first are read up to `threads` at a time, each in a
    # thread of its own (a small one decodes there alone: 50 arrays of 4 chunks each
    # then cost one handoff per thread, not a split of each batch's chunks with the
    # kernels' helper thread and a wait for its last one, 50 times); but when the files
    # are out of the page cache (a probe of the first batch's first file says so, or the
    # first batch's kernel announced its files to the disk), the batches are read at the
    # same time, so that the disk has all their files in flight, not one batch's few at a
    # time (50 arrays of 4 chunks each on stores of their own)
    limit = max(1, int(zconfig.get("io_concurrency")))
    first = todo[0][0]
    if len(todo) > 1 and kind == "basic" and first_file_cold(
            first.store, first._chunk_path, first._metadata, todo[0][2][0]):
        # (a probe of the first file: cold, so all of them at once, the first too)
        at_once(read, todo, limit)
        return results
    before = _kernels.cold_announcements()
    read(todo[0])
    if len(todo) > 1 and _kernels.cold_announcements() != before:
        at_once(read, todo[1:], limit)
    else:
        # warm: the other batches spread over ``threads`` threads, each read in its
        # thread alone (``one_of_many``), not each split over the threads in turn
        at_once(read, todo[1:], max(1, int(zconfig.get("threads"))))
    return results
