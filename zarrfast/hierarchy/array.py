"""The :class:`Array`: a Zarr array in a store."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.codecs import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, CodecChain
from zarrfast.codecs.sharding import ShardingCodec
from zarrfast.concurrency import renew_after_fork
from zarrfast.engine import strategies
from zarrfast.engine.chunked import PreparedChain
from zarrfast.engine.many import StoreBox, store_box_files
from zarrfast.engine.objects import ObjectChain
from zarrfast.engine.rectilinear import RectilinearChain
from zarrfast.engine.selection import is_basic_selection, normalize_basic, normalize_plain
from zarrfast.engine.sharded import RectilinearShardedChain, ShardedChain
from zarrfast.engine.stored import ENUMERATE_LIMIT, delete_outside, list_stored, stored_coords
from zarrfast.engine.values import as_stored, text_elements
from zarrfast.errors import (
    AllocationError,
    ArrayNotFoundError,
    IndexingError,
    MetadataValidationError,
    NodeTypeValidationError,
    ZarrfastError,
    add_context,
)
from zarrfast.hierarchy.array_config import (
    RUNTIME_FIELDS,
    ArrayConfig,
    ChunkNotFoundError,
    PickleCodecDisabledError,
    parse_array_config,
    runtime_keywords,
)
from zarrfast.hierarchy.attributes import Attributes
from zarrfast.hierarchy.info import ArrayInfo, array_info, store_path_str
from zarrfast.hierarchy.node import (
    Node,
    array_metadata_from_dict,
    array_metadata_from_documents,
    check_documents_unchanged,
    existing_node,
    metadata_document_names,
    metadata_from_state,
    metadata_state,
    read_metadata_documents,
    read_typed_metadata,
    resolve_store_path,
    write_metadata,
)
from zarrfast.metadata.chunk_grid import RegularChunkGrid
from zarrfast.metadata.paths import normalize_path
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import Store
from zarrfast.storage.asynchronous import store_path_of

__all__ = ["Array"]


def _names_memory_errors(doing: str) -> Any:
    """Decorate an :class:`Array` method so that running out of memory in it is never a
    bare ``MemoryError``: an :class:`AllocationError` starting with the array's name (a
    buffer the engine allocated names itself, its bytes, shape and dtype; any other
    allocation is described by NumPy's message, kept)."""
    def decorate(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(self: Array, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except MemoryError as e:
                where = f"array {self.name!r}"
                if isinstance(e, AllocationError):
                    add_context(e, where)  # (unless it names the array already)
                    raise
                raise AllocationError(f"{where}: out of memory {doing}"
                                      + (f": {e}" if str(e) else "")) from None
        return wrapper
    return decorate


#: what ``Array._set_chain`` works out from the metadata: an array made by
#: ``Array._listed`` works them out on first use (``Array.__getattr__``)
_CHAIN_ATTRS = frozenset({"_codecs", "_codecs_key", "_dtype", "_elements", "_pickled",
                          "_gated", "_where", "_object", "_sharded", "_chain"})
_CHAIN_LOCK = threading.RLock()
renew_after_fork(globals(), "_CHAIN_LOCK", threading.RLock)


def _runtime_settings(read_missing_chunks: bool | None, gap: int | None,
                      most: int | None, order: str | None) -> tuple[Any, ...]:
    """``(read_missing_chunks, (coalesce gap, coalesce bytes), order)`` of an array opened
    now: those given, else the configuration's (checked as ``ArrayConfig`` checks them)."""
    def given(name: str, value: Any) -> Any:
        return config.get(f"array.{name}") if value is None else value

    runtime = ArrayConfig(
        order="C", write_empty_chunks=False,
        read_missing_chunks=given("read_missing_chunks", read_missing_chunks),
        sharding_coalesce_max_gap_bytes=given("sharding_coalesce_max_gap_bytes", gap),
        sharding_coalesce_max_bytes=given("sharding_coalesce_max_bytes", most))
    #: ``None``: ``config["array.order"]`` now (zarr-python resolves it when it opens)
    return (runtime.read_missing_chunks,
            (runtime.sharding_coalesce_max_gap_bytes, runtime.sharding_coalesce_max_bytes),
            order or config.get("array.order"))


def _chain_inputs(metadata: Any) -> tuple:
    """What an array's codec chain is made from (equal inputs, equal chains)."""
    if getattr(metadata, "zarr_format", 3) == 2:
        return (metadata.chunks, metadata.dtype, metadata.order, len(metadata.shape),
                repr(metadata.filters), repr(metadata.compressor))
    return (metadata.chunk_grid, metadata.type_info, repr(metadata.codecs_json))


def read_array_metadata(store: Store, path: str, zarr_format: int | None = 3) -> Any:
    """The metadata of the array at ``path``, found as zarr-python's ``AsyncArray.open``
    finds it: a Zarr v3 group there is a ``NodeTypeValidationError`` (its ``zarr.json`` is
    not an array's), while Zarr v2 is looked for in ``.zarray`` only, so a v2 group there
    is no array (``ArrayNotFoundError``)."""
    try:
        return read_typed_metadata(store, path, "array", zarr_format)
    except NodeTypeValidationError:
        found = existing_node(store, path)
        if zarr_format == 2 or (found is not None and found[0] == 2):
            raise ArrayNotFoundError(
                f"no array at path {path or '/'!r} in {store!r} (zarr_format={zarr_format}): "
                f"a Zarr v2 group is there") from None
        raise


def array_config_keywords(config: Any) -> dict[str, Any]:
    """``write_empty_chunks``, ``order``, ``read_missing_chunks`` and the sharding settings
    for :class:`Array` from zarr-python's ``config`` argument (an ``ArrayConfig`` or a
    dict, checked); a key left out is ``None``, the configuration's, as for an array
    ``open_array`` opens."""
    if config is None:
        return {"write_empty_chunks": None, "order": None, **runtime_keywords(None)}
    checked = parse_array_config(config)  # (unknown keys and invalid values refused)
    given = config if isinstance(config, Mapping) else checked.to_dict()
    return {key: getattr(checked, key) if given.get(key) is not None else None
            for key in ("write_empty_chunks", "order", *RUNTIME_FIELDS)}


def _out_array(out: Any) -> Any:
    """``out`` as the NumPy array to read into: zarr-python's ``NDBuffer`` (anything with
    ``as_ndarray_like()`` giving a NumPy array) is read into its array."""
    if out is None or isinstance(out, np.ndarray):
        return out
    as_array = getattr(out, "as_ndarray_like", None)
    if callable(as_array):
        array = as_array()
        if isinstance(array, np.ndarray):
            return array
    return out


class Array(Node):
    """A chunked, compressed N-dimensional array stored under ``path`` in ``store``.

    Create one with [zarrfast.create_array][] (or [zarrfast.zeros][],
    [zarrfast.from_array][], ``Group.create_array``...) or open one with
    [zarrfast.open_array][]; the constructor takes metadata already parsed and writes
    nothing.  Index it like a NumPy array: basic selections (ints, slices with any step,
    Ellipsis) read and write only the chunks they touch, in parallel; ``oindex``,
    ``vindex`` and ``blocks`` take orthogonal, coordinate (or mask) and block selections,
    and integer or boolean arrays in ``a[...]`` are dispatched to them as zarr-python
    dispatches them.  Every read returns a new NumPy array (never a view of the store).

    ``Array(async_array)``, with one [zarrfast.AsyncArray][] and nothing else, returns
    the array that view is over (one shared state).

    Parameters
    ----------
    store : zarrfast.storage.Store
        The store holding the array.
    path : str
        The array's path in the store, normalized (``""`` for the root).
    metadata : ArrayMetadata or ArrayMetadataV2
        The array's parsed Zarr v3 (or v2) metadata.
    read_only : bool or None, optional
        Refuse writes (``ReadOnlyError``); ``None``: read-only when the store is.
    write_empty_chunks : bool or None, optional
        Store chunks whose elements all equal the fill value (``False``: such a chunk is
        not stored, and a stored one is deleted); ``None``: the configuration's
        ``array.write_empty_chunks`` at each write.
    order : {"C", "F"} or None, optional
        The memory order of the arrays reads return; ``None``: the configuration's
        ``array.order`` now.
    read_missing_chunks : bool or None, optional
        ``False``: a read touching a chunk (of a sharded array: a shard) that is not
        stored raises ``ChunkNotFoundError`` naming its key, instead of reading it as the
        fill value; ``None``: the configuration's ``array.read_missing_chunks`` now.
    sharding_coalesce_max_gap_bytes, sharding_coalesce_max_bytes : int or None, optional
        zarr-python's sharding read settings, kept for ``config`` (zarrfast coalesces by
        its ``shard_coalesce_gap`` setting); ``None``: the configuration's now.
    chunk_path : str or None, optional
        Where the chunk keys live, when not below ``path`` (arrays of a draft layout).
    codecs : CodecChain or None, optional
        The codec chain already parsed from ``metadata`` (saves parsing it again).

    Raises
    ------
    zarrfast.errors.ZarrfastError
        ``Array(view)`` given more arguments, or the view of a group.

    Examples
    --------
    >>> a = zarrfast.create_array(store={}, shape=(4, 6), chunks=(2, 3), dtype="int32")
    >>> a[:] = np.arange(24).reshape(4, 6)
    >>> a
    <Array memory://... shape=(4, 6) dtype=int32>
    >>> a[1:3, ::2]
    array([[ 6,  8, 10],
           [12, 14, 16]], dtype=int32)
    >>> a.oindex[[0, 3], [1, 5]]
    array([[ 1,  5],
           [19, 23]], dtype=int32)
    >>> a.vindex[[0, 3], [1, 5]]
    array([ 1, 23], dtype=int32)
    >>> a.nchunks, a.chunks
    (4, (2, 3))
    """

    _kind = "array"

    def __init__(
        self,
        store: Store,
        path: str,
        metadata: ArrayMetadata,
        *,
        read_only: bool | None = None,
        write_empty_chunks: bool | None = None,
        order: str | None = None,
        chunk_path: str | None = None,
        codecs: CodecChain | None = None,
        read_missing_chunks: bool | None = None,
        sharding_coalesce_max_gap_bytes: int | None = None,
        sharding_coalesce_max_bytes: int | None = None,
    ) -> None:
        super().__init__(store, path, metadata, read_only)
        # zarr-python's other ArrayConfig fields, resolved now as zarr-python resolves them
        # when it opens an array (checked as ArrayConfig checks them)
        #: False: a read touching a chunk that is not stored raises ChunkNotFoundError
        self._read_missing_chunks, self._coalesce, self._order = _runtime_settings(
            read_missing_chunks, sharding_coalesce_max_gap_bytes, sharding_coalesce_max_bytes,
            order)
        self._codecs = codecs
        #: where the chunk keys live (``path`` except for arrays read from a draft layout)
        self._chunk_path = path if chunk_path is None else chunk_path
        self._write_empty_chunks = write_empty_chunks
        self._set_chain(metadata)

    @classmethod
    def _listed(cls, store: Store, path: str, metadata: Any, like: Array | None,
                read_only: bool) -> Array:
        """A member of a group's listing: made as ``Array(store, path, metadata,
        read_only=read_only)`` would make it, with the settings ``__init__`` resolves from
        the configuration taken from ``like`` (an array this listing made: the
        configuration is read once per listing, as each ``__init__`` would read it), and its
        codec chain parsed on first use (see :meth:`__getattr__`): listing thousands of
        members costs no chain each.  A bad codec chain then fails at the first read,
        write or ``codec_chain`` of the array, naming it."""
        if like is None or type(like) is not cls:
            settings = _runtime_settings(None, None, None, None)
        else:
            settings = (like._read_missing_chunks, like._coalesce, like._order)
        node = cls.__new__(cls)
        node.__dict__.update(
            _store=store, _path=path, _metadata=metadata, _read_only=read_only,
            _read_missing_chunks=settings[0], _coalesce=settings[1], _order=settings[2],
            _chunk_path=path, _write_empty_chunks=None, _chain_pending=metadata)
        return node

    def __getattr__(self, name: str) -> Any:
        # the codec chain and what _set_chain works out with it, of an array made lazily
        # (``_listed``): worked out on first use, once (threads wait for the first)
        if name in _CHAIN_ATTRS:
            d = self.__dict__
            if "_chain_pending" in d:
                with _CHAIN_LOCK:
                    pending = d.get("_chain_pending")
                    if pending is not None:
                        self._set_chain(pending)
            if name in d:
                return d[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def async_array(self) -> Any:
        """This array's asynchronous view, a [zarrfast.AsyncArray][].

        Its methods are coroutines; it shares this array's state (made once:
        ``a.async_array is a.async_array``), and ``Array(a.async_array)`` is ``a``.
        """
        return self._async_view()

    _async_array = async_array  # (zarr-python's attribute name)

    # -- construction / pickling ----------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {
            "store": self._store,
            "path": self._path,
            "metadata": metadata_state(self._metadata),
            "read_only": self._read_only,
            "write_empty_chunks": self._write_empty_chunks,
            "order": self._order,
            "chunk_path": self._chunk_path,
            **self._runtime_keywords(),
        }

    def __dask_tokenize__(self) -> tuple:
        """A cheap deterministic token for dask (instead of pickling the data of an
        in-memory store): the store's identity, the path and the metadata."""
        from zarrfast.storage import MemoryStore

        store = self._store
        ident = (type(store).__name__, id(store._data)) if isinstance(store, MemoryStore) \
            else repr(store)
        return ("zarrfast.Array", ident, self._path, self._chunk_path,
                json.dumps(self._metadata.to_dict(), sort_keys=True, default=str))

    def __setstate__(self, state: dict[str, Any]) -> None:
        md = metadata_from_state(state["metadata"], state["path"])
        self.__init__(  # type: ignore[misc]
            state["store"],
            state["path"],
            md,
            read_only=state["read_only"],
            write_empty_chunks=state["write_empty_chunks"],
            order=state["order"],
            chunk_path=state.get("chunk_path"),
            **{k: state.get(k) for k in RUNTIME_FIELDS},
        )

    def _runtime_keywords(self) -> dict[str, Any]:
        """``read_missing_chunks`` and the sharding settings, as ``__init__`` takes them."""
        return {"read_missing_chunks": self._read_missing_chunks,
                "sharding_coalesce_max_gap_bytes": self._coalesce[0],
                "sharding_coalesce_max_bytes": self._coalesce[1]}

    def __eq__(self, other: object) -> bool:
        """Arrays are equal when they are the same node seen the same way: equal stores,
        path, metadata and settings (an unpickled array equals the original)."""
        if not isinstance(other, Array):
            return NotImplemented
        return (type(other) is type(self) and other._store == self._store
                and other._path == self._path and other._chunk_path == self._chunk_path
                and other._read_only == self._read_only and other._order == self._order
                and other._write_empty_chunks == self._write_empty_chunks
                and other._read_missing_chunks == self._read_missing_chunks
                and (other._metadata == self._metadata  # (or a NaN/NaT fill value)
                     or metadata_state(other._metadata) == metadata_state(self._metadata)))

    def __hash__(self) -> int:  # (arrays stay usable as dict keys, as before)
        try:
            store_hash = hash(self._store)
        except TypeError:  # a store class without a hash: its identity
            store_hash = id(self._store)
        return hash((type(self), store_hash, self._path))

    # -- properties -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape: its length along each dimension."""
        return self._metadata.shape

    @property
    def codec_chain(self) -> CodecChain:
        """The array's codec chain, parsed and validated.

        For a Zarr v2 array, the chain its ``order``, ``filters`` and ``compressor`` make.
        """
        return self._codecs

    @property
    def _sharding(self) -> ShardingCodec | None:
        """The sharding codec when it is the array's only codec (zarr-python's notion of
        a sharded array: ``chunks`` are then the inner chunks)."""
        codecs = self._codecs
        return codecs.sharding if len(codecs.codecs) == 1 else None

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape (the inner chunks' shape, for a sharded array).

        An array with a rectilinear chunk grid (not sharded) has none: a
        ``NotImplementedError``, as in zarr-python (``read_chunk_sizes`` gives the sizes
        of its chunks).
        """
        sharding = self._sharding
        return sharding.chunk_shape if sharding is not None else self._metadata.chunks

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or ``None`` for an array without sharding.

        A rectilinear grid of shards has no one shape: a ``NotImplementedError``, as in
        zarr-python.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(8, 8), chunks=(2, 2), shards=(4, 4),
        ...                           dtype="uint8")
        >>> a.chunks, a.shards, a.nchunks
        ((2, 2), (4, 4), 16)
        """
        return self._metadata.chunks if self._sharding is not None else None

    @property
    def _regular(self) -> bool:
        return getattr(self._metadata, "zarr_format", 3) == 2 or self._metadata.regular

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The sizes of the chunks along each dimension, clipped to the array.

        Inner chunks, for a sharded array.  One tuple per dimension, the extent inside the
        array of each chunk along it (a regular grid's last chunk may be shorter).

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(5, 4), chunks=(2, 4), dtype="i2")
        >>> a.read_chunk_sizes
        ((2, 2, 1), (4,))
        """
        sharding = self._sharding
        if sharding is not None:
            return RegularChunkGrid(sharding.chunk_shape).chunk_sizes(self.shape)
        return self._metadata.chunk_grid.chunk_sizes(self.shape)

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The sizes of the stored objects (chunks, or shards) along each dimension.

        One tuple per dimension, the extent inside the array of each chunk (shard, for a
        sharded array) along it.
        """
        return self._metadata.chunk_grid.chunk_sizes(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy data type of the elements.

        ``StringDType`` for a Zarr v3 ``string`` array, ``object`` for Zarr v2
        variable-length strings.
        """
        return self._metadata.dtype

    @property
    def fill_value(self) -> Any:
        """The value of the elements never written.

        A NumPy scalar of ``dtype``; ``None`` for a Zarr v2 array whose metadata stores
        ``null``.
        """
        return self._metadata.fill_value

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements (the product of ``shape``)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The size of the array's elements in memory, in bytes: ``size * dtype.itemsize``.

        What the store holds is usually less (compressed, and chunks never written are
        not stored): see ``nbytes_stored()``.
        """
        return self.size * self.dtype.itemsize

    @property
    def order(self) -> str:
        """The memory order, ``"C"`` or ``"F"``, of the NumPy arrays reads return."""
        return self._order

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Number of chunks (inner chunks, for a sharded array) along each dimension."""
        if not self._regular and self._sharding is None:
            return self._stored_grid
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    @property
    def _zdtype(self) -> Any:
        """zarr-python's ``Array._zdtype``: the data type as a ``ZDType``
        (``Int32(endianness='little')``): Zarr v3's ``metadata.data_type``, a Zarr v2
        array's from its v2 JSON (the ``dtype`` and object codec of ``.zarray``)."""
        if self._metadata.zarr_format == 3:
            return self._metadata.data_type
        from zarrfast.metadata.zdtype import parse_dtype

        doc = self._metadata.to_dict()
        first = (doc.get("filters") or [{}])[0] or {}
        spec = {"name": doc["dtype"], "object_codec_id": first.get("id")} \
            if doc.get("dtype") == "|O" else doc["dtype"]
        return parse_dtype(spec, zarr_format=2)

    @property
    def _chunk_grid(self) -> Any:
        """zarr-python's ``Array._chunk_grid``: the grid of the stored chunks (of a
        sharded array: of the shards), with its ``chunk_shape``."""
        return self._metadata.chunk_grid

    @property
    def _stored_grid(self) -> tuple[int, ...]:
        """Number of stored objects (chunks, or shards) along each dimension."""
        return self._metadata.chunk_grid.grid_shape(self.shape)

    @property
    def nchunks(self) -> int:
        """The number of chunks in the chunk grid (inner chunks, for a sharded array)."""
        return math.prod(self.cdata_shape)

    @property
    def _user_codecs(self) -> tuple[Any, ...]:
        """The codecs users chose: those inside the shard for a sharded array."""
        sharding = self._sharding
        return sharding.codecs if sharding is not None else self._codecs.codecs

    @property
    def filters(self) -> tuple[Any, ...]:
        """The array -> array codecs applied first (inside the shard, for a sharded array);
        for a Zarr v2 array, its ``filters`` (numcodecs codecs)."""
        if self._metadata.zarr_format == 2:
            return self._v2_codecs()[0]
        return tuple(c for c in self._user_codecs if isinstance(c, ArrayArrayCodec))

    def _v2_codecs(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """A Zarr v2 array's filters and compressors: its bytes -> bytes codecs, the
        filters first (as many as its metadata's ``filters``)."""
        bb = tuple(c for c in self._user_codecs if isinstance(c, BytesBytesCodec))
        nf = len(getattr(self._metadata, "filters", None) or ())
        return bb[:nf], bb[nf:]

    @property
    def serializer(self) -> ArrayBytesCodec:
        """The array -> bytes codec (inside the shard, for a sharded array)."""
        return next(c for c in self._user_codecs if isinstance(c, ArrayBytesCodec))

    @property
    def compressors(self) -> tuple[BytesBytesCodec, ...]:
        """The bytes -> bytes codecs applied last (inside the shard, for a sharded array);
        for a Zarr v2 array, its ``compressor`` (not its filters)."""
        if self._metadata.zarr_format == 2:
            return self._v2_codecs()[1]
        return tuple(c for c in self._user_codecs if isinstance(c, BytesBytesCodec))

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        """The names of the dimensions, or ``None`` when the metadata has none."""
        return self._metadata.dimension_names

    @property
    def attrs(self) -> Attributes:
        """The user attributes, a mutable mapping whose changes are stored at once.

        Each change is written under the array's lock, keeping other writers' changes to
        other keys.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(3,), dtype="f8")
        >>> a.attrs["units"] = "K"
        >>> dict(a.attrs)
        {'units': 'K'}
        """
        return Attributes(
            lambda: self._metadata.attributes, self._put_attributes, f"array {self.name!r}"
        )

    @property
    def write_empty_chunks(self) -> bool:
        """Whether chunks whose elements all equal the fill value are stored.

        ``False`` (the default of the configuration's ``array.write_empty_chunks``): such
        a chunk is not written, and a stored one is deleted, so that it reads as the fill
        value again.
        """
        if self._write_empty_chunks is None:
            return bool(config.get("write_empty_chunks"))
        return self._write_empty_chunks

    def _set_chain(self, metadata: Any) -> None:
        self._make_chain(metadata)
        self.__dict__.pop("_chain_pending", None)  # (made: no longer pending)

    def _make_chain(self, metadata: Any) -> None:
        # the codec chain: parsed and validated here (a bad chain fails at open, naming
        # the array), kept while the metadata's codecs and chunks do not change (attribute
        # writes), and given by the creator (whose codec objects need not be registered)
        key = _chain_inputs(metadata)
        codecs = self.__dict__.get("_codecs")
        if codecs is None or key != self.__dict__.get("_codecs_key", key):
            codecs = CodecChain.from_metadata(metadata, node=f"array {self._path or '/'!r}")
        self._codecs, self._codecs_key = codecs, key
        # what every read and write asks, worked out once (not per call; the store's
        # capabilities are the store's: computed again when one of its flags changes)
        self._dtype = metadata.dtype
        self._elements = text_elements(metadata)
        #: a Zarr v2 array whose chunks are pickles: read only where the configuration's
        #: array.allow_unsafe_pickle_decode allows it (as in zarr-python 3.4)
        self._pickled = metadata.zarr_format == 2 and any(
            isinstance(f, Mapping) and f.get("id") == "pickle"
            for f in (getattr(metadata, "filters", None) or ()))
        #: whether a read is checked first (read_missing_chunks=False, pickled chunks)
        self._gated = self._pickled or not self._read_missing_chunks
        self._where = f"array {self.name!r}"  # (what messages call it)
        objects = metadata.dtype.hasobject  # v2 |O, v3 string / variable_length_bytes
        sharded = codecs.sharding is not None
        if getattr(metadata, "zarr_format", 3) == 3 and not metadata.regular:
            if objects:
                raise ZarrfastError(
                    f"array {self._path or '/'!r}: variable-length data types "
                    f"({metadata.type_info.name}) with a rectilinear chunk grid are not "
                    f"supported")
            self._object = False
            self._sharded = sharded
            if sharded:
                self._chain = RectilinearShardedChain(
                    metadata, codecs, index_cache=config.get("shard_index_cache"))
            else:
                self._chain = RectilinearChain(metadata, codecs)
            return
        # a sharded object array's chunks are shards: its fancy selections take the
        # per-inner-chunk path (``_object`` False), its basic ones the object chain
        self._object = objects and not sharded
        self._sharded = not objects and sharded
        self._chain: Any
        if objects:
            self._chain = ObjectChain(metadata, codecs)
        elif self._sharded:
            self._chain = ShardedChain(metadata, codecs,
                                       index_cache=config.get("shard_index_cache"))
        else:
            self._chain = PreparedChain(metadata, codecs)

    # -- updating the metadata ----------------------------------------------------------
    # An append, a resize or an attribute change reads the stored metadata, changes it and
    # writes it back, holding the array's lock (Store.node_lock: the threads of this
    # process, and other processes where the store can lock, a LocalStore) from the read
    # through the write -- and, for an append, through writing the new rows' chunks.  The
    # metadata is read again under the lock: this object's copy may be stale (another
    # writer appended since it was opened).  A store whose lock does not reach other
    # processes checks, before writing, that the stored metadata is still what was read
    # (ConcurrentWriteError otherwise: best effort, there is a window between that check
    # and the write).

    @contextlib.contextmanager
    def _updating(self) -> Iterator[dict[str, bytes | None]]:
        """Hold the array's lock and refresh its metadata from the store; yields the
        stored documents read (for :meth:`_commit`)."""
        self._check_writable()
        with self._store.node_lock(self._path):
            yield self._refresh()

    def _refresh(self) -> dict[str, bytes | None]:
        names = metadata_document_names(self._metadata)
        docs = read_metadata_documents(self._store, self._path, names)
        if docs != self._metadata.store_documents():  # changed since this object read it
            md = array_metadata_from_documents(self._store, self._path, docs)
            self._metadata = md
            self._set_chain(md)
        return docs

    def _commit(self, metadata: Any, docs: dict[str, bytes | None], *,
                checked: bool = False) -> None:
        """Write ``metadata`` (inside :meth:`_updating`, which read ``docs``; ``checked``:
        the caller has just checked that they are unchanged)."""
        if not checked and not self._store.interprocess_locks:
            check_documents_unchanged(self._store, self._path, docs, "array")
        write_metadata(self._store, self._path, metadata)
        self._metadata = metadata
        self._set_chain(metadata)

    def _put_attributes(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Apply ``change`` to the stored attributes (other writers' changes kept)."""
        with self._updating() as docs:
            attrs = change(dict(self._metadata.attributes))
            self._commit(self._metadata.update_attributes(attrs), docs)

    def update_attributes(self, new_attributes: dict[str, Any]) -> Array:
        """Merge ``new_attributes`` into the array's attributes, in one write.

        Parameters
        ----------
        new_attributes : dict
            The attributes to set (JSON-serializable); other keys keep their values.

        Returns
        -------
        Array
            This array.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.MetadataValidationError
            A value that is not JSON-serializable; nothing is written.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(3,), dtype="f8", attributes={"a": 1})
        >>> dict(a.update_attributes({"b": 2}).attrs)
        {'a': 1, 'b': 2}
        """
        self.attrs.update(new_attributes)
        return self

    def __repr__(self) -> str:
        return f"<Array {store_path_str(self._store, self._path)} shape={self.shape} dtype={self.dtype}>"

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("reading a zarrfast array always makes a copy")
        out = self[...]
        out = np.asarray(out)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- reading -------------------------------------------------------------------------
    def _split_fields(self, selection: Any) -> tuple[Any, str | list[str] | None]:
        """Field names in a selection (``a["x"]``, ``a["x", 1:3]``, ``a[["x", "y"]]``)."""
        items = selection if isinstance(selection, tuple) else (selection,)
        names = [s for s in items if isinstance(s, str)]
        lists = [s for s in items if isinstance(s, list) and s and all(
            isinstance(n, str) for n in s)]
        if not names and not lists:
            return selection, None
        rest = tuple(s for s in items if not (isinstance(s, str) or any(s is x for x in lists)))
        fields: Any = names[0] if len(names) == 1 and not lists else [
            *names, *(n for lst in lists for n in lst)]
        return (rest if rest else Ellipsis), fields

    def _check_fields(self, fields: str | list[str]) -> None:
        known = self.dtype.names or ()
        for f in [fields] if isinstance(fields, str) else fields:
            if f not in known:
                raise IndexingError(
                    f"array {self.name!r}: no field {f!r}; "
                    + (f"fields are {list(known)}" if known else "its dtype has no fields")
                )

    def _kind_of(self, selection: Any) -> str:
        """How zarr-python dispatches ``a[selection]`` ("mask", "coordinate",
        "orthogonal", "basic"), or "numpy" for what zarr-python refuses and NumPy's
        advanced indexing defines."""
        ndim = self.ndim
        if isinstance(selection, np.ndarray) and selection.dtype == bool and selection.ndim:
            if selection.ndim == ndim:
                return "mask"
            return "numpy"
        items = selection if isinstance(selection, tuple) else (selection,)
        flat = [_is_flat_index(s) for s in items]
        fancy = [_is_fancy_item(s) for s in items]
        if not any(fancy):
            return "basic"
        # zarr-python: a 1-d array indexed by an integer list/array or a boolean list
        if ndim == 1 and not isinstance(selection, tuple) and flat[0]:
            return "coordinate" if not _is_bool_iterable(selection) else "orthogonal"
        has_slicing = any(isinstance(s, slice) or s is Ellipsis for s in items)
        if (isinstance(selection, tuple) and len(items) == ndim and not has_slicing
                and all(_is_integer(s) or _is_int_array(s) or (f and not _is_bool_iterable(s))
                        for s, f in zip(items, flat, strict=True))):
            return "coordinate"
        if all(f or _is_python_int(s) or isinstance(s, slice)
               for s, f in zip(items, flat, strict=True)):
            if len(items) == ndim and all(flat):
                return "orthogonal"
            if len(items) <= ndim and sum(flat) <= 1:
                return "orthogonal"
        return "numpy"

    @_names_memory_errors("reading")
    def __getitem__(self, selection: Any) -> Any:
        if _is_plain(selection):  # (ints and slices: no fields, basic; decided quickly)
            return self._get_basic(selection, None, None)
        selection = _read_index_arrays(selection)
        selection, fields = self._split_fields(selection)
        kind = self._kind_of(selection)
        if kind == "mask":
            return self._with_fields(self.get_mask_selection(selection), fields)
        if kind == "coordinate":
            return self._with_fields(self.get_coordinate_selection(selection), fields)
        if kind == "orthogonal":
            return self.get_orthogonal_selection(selection, fields=fields)
        if kind == "numpy":
            from zarrfast.engine.fancy import get_orthogonal, numpy_plan

            block_sel, np_sel = numpy_plan(selection, self.shape)
            if self._gated:
                self._gate_read(self._element_chunks(block_sel.indices))
            block = get_orthogonal(self._fancy_target(), block_sel)
            try:
                result = block[np_sel]
            except IndexError as e:  # e.g. index arrays that do not broadcast together
                raise IndexingError(f"array {self.name!r}: selection {selection!r}: {e}"
                                    ) from None
            return self._with_fields(result, fields)
        return self.get_basic_selection(selection, fields=fields)

    # -- read_missing_chunks=False -------------------------------------------------------
    def _stored_index(self, d: int, idx: np.ndarray) -> np.ndarray:
        """The stored chunks' (shards') grid indices along dimension ``d`` of the element
        indices ``idx``."""
        grid = self._metadata.chunk_grid
        if isinstance(grid, RegularChunkGrid):
            return idx // grid.chunk_shape[d]
        return np.searchsorted(grid.boundaries(self.shape)[d], idx, side="right") - 1

    def _basic_chunks(self, sel: Any) -> list[np.ndarray]:
        """Per dimension, the stored chunks' (shards') indices a basic selection touches:
        with a step of 1 every chunk from the first index's to the last's; else those
        of every index (no more than the chunks along the dimension once the step
        exceeds a chunk)."""
        out = []
        for d, (start, step, count) in enumerate(zip(
                sel.start.tolist(), sel.step.tolist(), sel.count.tolist(), strict=True)):
            if count and abs(step) == 1:
                last = start + step * (count - 1)
                lo, hi = self._stored_index(d, np.array([min(start, last), max(start, last)],
                                                        dtype=np.int64)).tolist()
                out.append(np.arange(lo, hi + 1, dtype=np.int64))
            else:
                idx = start + step * np.arange(count, dtype=np.int64)
                out.append(np.unique(self._stored_index(d, idx)))
        return out

    def _element_chunks(self, per_dim: Any) -> list[np.ndarray]:
        """Per dimension, the stored chunks' indices of the element indices ``per_dim``."""
        return [np.unique(self._stored_index(d, np.asarray(i, dtype=np.int64)))
                for d, i in enumerate(per_dim)]

    def _gate_read(self, chunk_sets: Any = None, points: Any = None) -> None:
        """What is checked before a read: a pickled array's chunks are decoded only where
        ``array.allow_unsafe_pickle_decode`` is True; the chunks the read touches must be
        stored where ``read_missing_chunks`` is False."""
        if self._pickled and config.get("array.allow_unsafe_pickle_decode") is not True:
            raise PickleCodecDisabledError(
                f"array {self.name!r}: refusing to decode data with the 'pickle' codec, "
                f"because unpickling data from an untrusted source can execute arbitrary "
                f"code. If you trust this data, enable the pickle codec with "
                f"zarrfast.config.set({{'array.allow_unsafe_pickle_decode': True}}) or set the "
                f"environment variable ZARR_ARRAY__ALLOW_UNSAFE_PICKLE_DECODE=True. numcodecs "
                f"has its own opt-in, which must be enabled as well: set "
                f"numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True, or set the environment "
                f"variable NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1 before importing numcodecs.")
        if not self._read_missing_chunks:
            self._check_stored(chunk_sets, points)

    def _check_stored(self, chunk_sets: Any = None, points: Any = None) -> None:
        """With ``read_missing_chunks`` False: raise ``ChunkNotFoundError`` naming every
        chunk (shard) a read touches that is not stored, as zarr-python 3.4 does.  The
        read touches the chunks of ``chunk_sets`` (their indices along each dimension, an
        orthogonal product) or those of ``points`` (one element index array per
        dimension)."""
        if chunk_sets is not None:
            if any(len(c) == 0 for c in chunk_sets):
                return  # (an empty read touches nothing; zarr-python checks none either)
            count = math.prod(len(c) for c in chunk_sets)
            touched: Any = itertools.product(*(c.tolist() for c in chunk_sets))
        else:
            if not len(points) or points[0].size == 0:
                return
            stacked = np.stack([self._stored_index(d, np.asarray(p, dtype=np.int64).ravel())
                                for d, p in enumerate(points)], axis=1)
            unique = np.unique(stacked, axis=0)
            count = len(unique)
            touched = map(tuple, unique.tolist())
        store, md = self._store, self._metadata
        encode = md.chunk_key_encoding.encode
        base = f"{self._chunk_path}/" if self._chunk_path else ""
        if count <= ENUMERATE_LIMIT or not store.capabilities.listing:
            missing = [c for c in touched if not store.exists(base + encode(c))]
        else:
            stored = {coords for _, coords in list_stored(store, md, self._chunk_path)}
            missing = [c for c in touched if c not in stored]
        if missing:
            lines = "\n".join(f"  chunk {encode(c)!r} (grid position {c})" for c in missing)
            where = store_path_str(store, self._path)
            raise ChunkNotFoundError(
                f"{len(missing)} chunk(s) not found in store '{where}'.\n"
                f"Set the 'array.read_missing_chunks' config to True to fill missing chunks "
                f"with the fill value.\nMissing chunks:\n{lines}")

    def _with_fields(self, result: Any, fields: Any) -> Any:
        if fields is None:
            return result
        self._check_fields(fields)
        return np.asarray(result)[fields]

    # -- fancy selections ----------------------------------------------------------------
    def _fancy_target(self) -> Any:
        from zarrfast.engine.fancy import FancyTarget

        bounds = block_bounds = None
        chunks = None
        if not self._regular:
            grid = self._metadata.chunk_grid
            block_bounds = grid.boundaries(self.shape)
            if self._sharding is None:
                bounds, chunks = block_bounds, self._codecs.chunk_shape
        return FancyTarget(
            name=self.name, store=self._store, chunk_path=self._chunk_path, metadata=self._metadata,
            chain=self._chain, objects=self._object, shape=self.shape,
            chunks=self.chunks if chunks is None else chunks, bounds=bounds,
            block_bounds=block_bounds,
            dtype=self.dtype, fill_value=self.fill_value,
            write_empty_chunks=self.write_empty_chunks,
            get_basic_selection=self.get_basic_selection,
            set_basic_selection=self.set_basic_selection,
        )

    @_names_memory_errors("reading")
    def get_orthogonal_selection(self, selection: Any, *, out: np.ndarray | None = None,
                                 fields: str | list[str] | None = None) -> np.ndarray:
        """Read an orthogonal (outer) selection: each dimension indexed on its own.

        Per dimension an int, a slice, an integer array (any order, repeats, negative
        indices) or a boolean mask of that dimension's length; the result takes, along
        each dimension, the elements that dimension's index picks (as ``a.oindex[...]``,
        unlike NumPy's advanced indexing, which pairs the index arrays up).

        Parameters
        ----------
        selection : int, slice, array-like or tuple of them
            One index per dimension (missing trailing dimensions are taken whole).
        out : numpy.ndarray, optional
            An array to copy the result into (it must take the result's shape), returned.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to read.

        Returns
        -------
        numpy.ndarray
            The selected elements (``out``, when given).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(3, 4), dtype="int16")
        >>> a[:] = np.arange(12).reshape(3, 4)
        >>> a.get_orthogonal_selection(([2, 0], [True, False, False, True]))
        array([[ 8, 11],
               [ 0,  3]], dtype=int16)
        """
        out = _out_array(out)
        selection = _read_index_arrays(selection)
        from zarrfast.engine.fancy import get_orthogonal, normalize_orthogonal

        osel = normalize_orthogonal(selection, self.shape)
        if self._gated:
            self._gate_read(self._element_chunks(osel.indices))
        result = get_orthogonal(self._fancy_target(), osel)
        result = self._with_fields(result, fields)
        if out is not None:
            out[...] = result
            return out
        return result

    @_names_memory_errors("writing")
    def set_orthogonal_selection(self, selection: Any, value: Any, *,
                                 fields: str | list[str] | None = None) -> None:
        """Write ``value`` into an orthogonal (outer) selection (as ``a.oindex[...] = value``).

        Parameters
        ----------
        selection : int, slice, array-like or tuple of them
            One index per dimension, as for ``get_orthogonal_selection``.
        value : scalar or array-like
            Broadcast to the selection's shape, as NumPy broadcasts.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to write (the others keep
            their values).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not broadcast to
            the selection.
        zarrfast.errors.ValueCastError
            A value the data type cannot hold (``300`` into ``uint8``); nothing is written.

        Examples
        --------
        >>> a = zarrfast.zeros((3, 4), dtype="int16", store={})
        >>> a.set_orthogonal_selection(([0, 2], [1, 3]), 7)
        >>> a[:]
        array([[0, 7, 0, 7],
               [0, 0, 0, 0],
               [0, 7, 0, 7]], dtype=int16)
        """
        from zarrfast.engine.fancy import normalize_orthogonal, set_orthogonal

        self._check_writable()
        if fields is not None:
            current = self.get_orthogonal_selection(selection)
            self._check_fields(fields)
            current[fields] = self._as_stored(value, current[fields].dtype)
            value = current
        set_orthogonal(self._fancy_target(), normalize_orthogonal(selection, self.shape), value)

    @_names_memory_errors("reading")
    def get_coordinate_selection(self, selection: Any, *, out: np.ndarray | None = None,
                                 fields: str | list[str] | None = None) -> np.ndarray:
        """Read the elements at a list of coordinates (points), as ``a.vindex[...]``.

        Parameters
        ----------
        selection : tuple of array-like
            One integer array per dimension, broadcast together: element ``i`` of the
            result is at ``(selection[0][i], selection[1][i], ...)``.
        out : numpy.ndarray, optional
            An array to copy the result into (it must take the result's shape), returned.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to read.

        Returns
        -------
        numpy.ndarray
            The elements, in the broadcast shape of the coordinate arrays (``out``, when
            given).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(3, 4), dtype="int16")
        >>> a[:] = np.arange(12).reshape(3, 4)
        >>> a.get_coordinate_selection(([0, 2, 1], [3, 0, 1]))
        array([3, 8, 5], dtype=int16)
        """
        out = _out_array(out)
        selection = _read_index_arrays(selection)
        from zarrfast.engine.fancy import get_points, normalize_coordinate

        coords, shape = normalize_coordinate(selection, self.shape)
        if self._gated:
            self._gate_read(points=coords)
        result = self._with_fields(get_points(self._fancy_target(), coords, shape), fields)
        if out is not None:
            out[...] = result
            return out
        return result

    @_names_memory_errors("writing")
    def set_coordinate_selection(self, selection: Any, value: Any, *,
                                 fields: str | list[str] | None = None) -> None:
        """Write ``value`` at a list of coordinates (points), as ``a.vindex[...] = value``.

        Parameters
        ----------
        selection : tuple of array-like
            One integer array per dimension, broadcast together.
        value : scalar or array-like
            One value for all the points, or one per point.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to write (the others keep
            their values).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not broadcast to
            the selection.
        zarrfast.errors.ValueCastError
            A value the data type cannot hold (``300`` into ``uint8``); nothing is written.

        Examples
        --------
        >>> a = zarrfast.zeros((2, 3), dtype="int8", store={})
        >>> a.set_coordinate_selection(([0, 1], [2, 0]), [5, 6])
        >>> a[:]
        array([[0, 0, 5],
               [6, 0, 0]], dtype=int8)
        """
        from zarrfast.engine.fancy import normalize_coordinate, set_points

        self._check_writable()
        coords, shape = normalize_coordinate(selection, self.shape)
        if fields is not None:
            from zarrfast.engine.fancy import get_points

            current = get_points(self._fancy_target(), coords, shape)
            self._check_fields(fields)
            current[fields] = self._as_stored(value, current[fields].dtype)
            value = current
        set_points(self._fancy_target(), coords, shape, value)

    @_names_memory_errors("reading")
    def get_mask_selection(self, mask: Any, *, out: np.ndarray | None = None,
                           fields: str | list[str] | None = None) -> np.ndarray:
        """Read the elements where a boolean mask of the array's shape is true.

        Parameters
        ----------
        mask : array-like of bool
            A boolean array of exactly the array's shape.
        out : numpy.ndarray, optional
            An array to copy the result into (it must take the result's shape), returned.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to read.

        Returns
        -------
        numpy.ndarray
            The selected elements, a 1-d array in C order of their positions (``out``,
            when given).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(2, 3), dtype="int16")
        >>> a[:] = [[1, -2, 3], [-4, 5, -6]]
        >>> a.get_mask_selection(a[:] < 0)
        array([-2, -4, -6], dtype=int16)
        """
        out = _out_array(out)
        from zarrfast.engine.fancy import get_points, normalize_mask

        coords = normalize_mask(mask, self.shape)
        if self._gated:
            self._gate_read(points=coords)
        result = self._with_fields(get_points(self._fancy_target(), coords, (len(coords[0]),)), fields)
        if out is not None:
            out[...] = result
            return out
        return result

    @_names_memory_errors("writing")
    def set_mask_selection(self, mask: Any, value: Any, *,
                           fields: str | list[str] | None = None) -> None:
        """Write ``value`` where a boolean mask of the array's shape is true.

        Parameters
        ----------
        mask : array-like of bool
            A boolean array of exactly the array's shape.
        value : scalar or array-like
            One value for all the selected elements, or one per element (in C order).
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to write (the others keep
            their values).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not broadcast to
            the selection.
        zarrfast.errors.ValueCastError
            A value the data type cannot hold (``300`` into ``uint8``); nothing is written.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(2, 3), dtype="int16")
        >>> a[:] = [[1, -2, 3], [-4, 5, -6]]
        >>> a.set_mask_selection(a[:] < 0, 0)
        >>> a[:]
        array([[1, 0, 3],
               [0, 5, 0]], dtype=int16)
        """
        from zarrfast.engine.fancy import normalize_mask

        coords = normalize_mask(mask, self.shape)
        self.set_coordinate_selection(coords, value, fields=fields)

    @_names_memory_errors("reading")
    def get_block_selection(self, selection: Any, *, out: np.ndarray | None = None,
                            fields: str | list[str] | None = None) -> np.ndarray:
        """Read whole chunks, chosen by their index in the chunk grid (as ``a.blocks[...]``).

        Parameters
        ----------
        selection : int, slice or tuple of them
            Per dimension, a chunk index or a step-1 slice of chunk indices (negative
            indices count from the end); for a sharded array, indices of inner chunks.
        out : numpy.ndarray, optional
            An array to copy the result into (it must take the result's shape), returned.
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to read.

        Returns
        -------
        numpy.ndarray
            The elements of those chunks, clipped to the array (``out``, when given).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(4, 6), chunks=(2, 3), dtype="int32")
        >>> a[:] = np.arange(24).reshape(4, 6)
        >>> a.get_block_selection((1, 0))
        array([[12, 13, 14],
               [18, 19, 20]], dtype=int32)
        """
        out = _out_array(out)
        from zarrfast.engine.fancy import block_region

        return self.get_basic_selection(block_region(self._fancy_target(), selection), out=out, fields=fields)

    @_names_memory_errors("writing")
    def set_block_selection(self, selection: Any, value: Any, *,
                            fields: str | list[str] | None = None) -> None:
        """Write ``value`` into whole chunks, chosen by their index in the chunk grid.

        Parameters
        ----------
        selection : int, slice or tuple of them
            Per dimension, a chunk index or a step-1 slice of chunk indices.
        value : scalar or array-like
            Broadcast to the shape of the chunks selected (clipped to the array).
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to write (the others keep
            their values).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not broadcast to
            the selection.
        zarrfast.errors.ValueCastError
            A value the data type cannot hold (``300`` into ``uint8``); nothing is written.

        Examples
        --------
        >>> a = zarrfast.zeros((4, 4), chunks=(2, 2), dtype="uint8", store={})
        >>> a.set_block_selection((0, 1), 9)
        >>> a[:]
        array([[0, 0, 9, 9],
               [0, 0, 9, 9],
               [0, 0, 0, 0],
               [0, 0, 0, 0]], dtype=uint8)
        """
        from zarrfast.engine.fancy import block_region

        self.set_basic_selection(block_region(self._fancy_target(), selection), value, fields=fields)

    @_names_memory_errors("reading")
    def get_many(self, selections: Any, *, kind: str = "basic", out: Any = None
                 ) -> list[Any]:
        """Read many selections in one call: one result per selection.

        The selections are planned as one read: a chunk several of them touch is read
        and decoded once, each shard is visited once (its index read once, the byte
        ranges of its inner chunks fetched together across selections), and the
        decoding of all of them is spread over the thread pool.  A batch of a data
        loader's samples, or the same window of many time steps, reads much faster so
        than one selection after another, most of all from remote stores.

        Parameters
        ----------
        selections : sequence
            The selections, each what ``a[...]`` (``kind="basic"``), ``a.oindex[...]``
            (``"orthogonal"``) or ``a.blocks[...]`` (``"block"``) takes.  Selections of
            ints and slices (and block selections) are planned together; those with
            integer arrays or masks are read one after another.
        kind : {"basic", "orthogonal", "block"}, default "basic"
            How every selection is read.
        out : list of numpy.ndarray or numpy.ndarray, optional
            Where to read into: one writeable C-contiguous array per selection, of its
            result's shape and the array's dtype; or, when every result has the same
            shape, one such array of shape ``(len(selections), *shape)`` whose
            ``i``-th element receives selection ``i`` (a batch).

        Returns
        -------
        list
            One result per selection, each what the same indexing returns (results of
            one shape may be views of one block of memory; with ``out``, its arrays
            or views of it).

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array (the message names the selection).
        zarrfast.errors.IndexingError
            A malformed selection, an unknown ``kind``, or an ``out`` that does not fit.
        zarrfast.errors.ChunkNotFoundError
            With ``read_missing_chunks=False``, a chunk a selection touches is not
            stored.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(100, 64), chunks=(10, 64),
        ...                           dtype="int32")
        >>> a[:] = np.arange(6400).reshape(100, 64)
        >>> tiles = a.get_many([(slice(0, 2), slice(0, 3)), (slice(50, 52), slice(8, 11))])
        >>> tiles[1]
        array([[3208, 3209, 3210],
               [3272, 3273, 3274]], dtype=int32)
        >>> batch = np.empty((2, 2, 3), dtype="int32")
        >>> _ = a.get_many([(slice(0, 2), slice(0, 3)), (slice(4, 6), slice(0, 3))],
        ...                out=batch)
        >>> batch[1, 0]
        array([256, 257, 258], dtype=int32)
        """
        return self._get_many(selections, kind, out)

    def _get_many(self, selections: Any, kind: str, out: Any,
                  numbers: list[int] | None = None, arrays: list[Array] | None = None
                  ) -> list[Any]:
        """:meth:`get_many`; ``numbers``: what messages call the selections (default:
        their positions in ``selections``); ``arrays``: per selection, the array it
        reads (default: this one), each of this array's store and layout
        (:meth:`_layout_key`): their chunks are read as one batch."""
        if kind not in ("basic", "orthogonal", "block"):
            raise IndexingError(f"array {self.name!r}: get_many kind must be 'basic', "
                                f"'orthogonal' or 'block', got {kind!r}")
        if isinstance(selections, (str, bytes)) or not hasattr(selections, "__len__"):
            raise IndexingError(f"array {self.name!r}: get_many takes a sequence of "
                                f"selections, got {type(selections).__name__}")
        n = len(selections)
        owners = [self] * n if arrays is None else arrays
        numbers = list(range(n)) if numbers is None else numbers
        outs = self._many_outs(out, n)
        sels = [_read_index_arrays(s) for s in selections]
        if kind == "block":
            from zarrfast.engine.fancy import block_region

            targets: dict[int, Any] = {}
            blocks = []
            for i, (a, s) in enumerate(zip(owners, sels, strict=True)):
                try:
                    blocks.append(block_region(targets.setdefault(id(a), a._fancy_target()), s))
                except ZarrfastError as e:
                    _name_selection(e, a, numbers[i], s)
                    raise
            sels = blocks
        shape = self._metadata.shape
        # plain selections (exact ints and slices: a loader's tiles) normalized by one
        # kernel call each, which says they are basic too; the others asked, and
        # normalized (or refused, naming the selection) below
        plain = [normalize_plain(s, shape) for s in sels]
        basic = [p is not None or is_basic_selection(s)
                 for p, s in zip(plain, sels, strict=True)]
        results: list[Any] = [None] * n
        planned = [i for i in range(n) if basic[i]]
        if planned:
            from zarrfast.engine.many import read_many

            normalized = []
            for i in planned:  # (checked here: the message names the array and selection)
                owner = owners[i]
                try:
                    sel = plain[i]
                    if sel is None:
                        sel = normalize_basic(sels[i], shape)
                    if owner._gated:
                        owner._gate_read(owner._basic_chunks(sel))
                except ZarrfastError as e:
                    _name_selection(e, owner, numbers[i], sels[i])
                    raise
                normalized.append(sel)
            if out is None:
                part_out = None
            elif isinstance(out, np.ndarray) and len(planned) == n:
                part_out = out  # (one block: read into in place)
            else:
                part_out = [outs[i] for i in planned]
            try:
                got = read_many(self._store, self._store.capabilities, self._chunk_path,
                                self._chain, normalized, shape, self._dtype, part_out,
                                self._where, numbers=[numbers[i] for i in planned],
                                paths=None if arrays is None
                                else [owners[i]._chunk_path for i in planned])
            except ZarrfastError as e:
                # which selection: read them one by one (an error is rare; each one says
                # its chunk, this says its selection too)
                for i in planned:
                    try:
                        owners[i].get_basic_selection(sels[i])
                    except ZarrfastError as one:
                        _name_selection(one, owners[i], numbers[i], sels[i])
                        raise one from e
                raise
            for i, r in zip(planned, got, strict=True):
                results[i] = r
        for i in range(n):
            owner = owners[i]
            if not basic[i]:
                try:
                    if kind == "orthogonal":
                        r = owner.get_orthogonal_selection(sels[i])
                    else:
                        r = owner[sels[i]]
                    o = outs[i]
                    if o is not None:
                        problem = strategies.out_problem(o, np.shape(r), owner._dtype)
                        if problem:
                            raise IndexingError(
                                f"out[{numbers[i]}] must be a writeable C-contiguous ndarray "
                                f"of shape {np.shape(r)} and dtype {owner._dtype}, got "
                                f"{problem}")
                        o[...] = r
                        r = o
                except ZarrfastError as e:
                    _name_selection(e, owner, numbers[i], sels[i])
                    raise
                results[i] = r
            if not shape:
                results[i] = results[i][()]
            elif owner._order == "F" and out is None and results[i].ndim > 1:
                results[i] = np.asfortranarray(results[i])
        return results

    def _many_outs(self, out: Any, n: int) -> list[Any]:
        """:meth:`get_many`'s ``out`` as one array (or ``None``) per selection, checked
        for its length (the arrays themselves are checked as each is read into)."""
        if out is None:
            return [None] * n
        if isinstance(out, np.ndarray):
            if out.ndim == 0 or out.shape[0] != n:
                raise IndexingError(
                    f"{self._where}: out of shape {out.shape} does not hold the results of "
                    f"{n} selections: one array of shape ({n}, *shape) holds them when they "
                    f"share a shape, else a list of {n} arrays")
            return [out[i, ...] for i in range(n)]
        if isinstance(out, (list, tuple)):
            if len(out) != n:
                raise IndexingError(f"{self._where}: out has {len(out)} arrays for {n} "
                                    f"selections")
            return [_out_array(o) for o in out]
        raise IndexingError(f"{self._where}: out must be a list of arrays, one per "
                            f"selection, or one array; got {type(out).__name__}")

    def _layout_key(self) -> tuple:
        """What decides how this array's chunks are read (its metadata but for its
        attributes and dimension names, and the kind of its chain): arrays of one store
        with equal keys are read as one batch by ``zarrfast.get_many``."""
        key = self.__dict__.get("_layout_key_")
        if key is None or key[0] is not self._metadata:
            doc = {k: v for k, v in self._metadata.to_dict().items()
                   if k not in ("attributes", "dimension_names")}
            key = (self._metadata, (self._chain.kind, str(self._dtype),
                                    json.dumps(doc, sort_keys=True, default=str)))
            self.__dict__["_layout_key_"] = key
        return key[1]

    def _store_box(self, selection: Any) -> StoreBox | None:
        """This array's part of a ``zarrfast.get_many`` read of arrays of several stores
        as one (:func:`~zarrfast.engine.many.read_store_boxes`): ``selection``
        normalized, when it is a plain step-1 box of chunks that read reads (else
        ``None``: the array's own read takes it, and says what is wrong with it).  Not
        for an array that refuses missing chunks, or whose results are in F order."""
        shape = self._metadata.shape
        if self._gated or self._order == "F" or not shape:
            return None
        try:
            sel = normalize_plain(selection, shape)
        except ZarrfastError:
            return None
        if sel is None or store_box_files(self._store, self._chunk_path, self._chain,
                                          sel) is None:
            return None
        return StoreBox(self._store, self._chunk_path, self._chain, sel)

    @property
    def oindex(self) -> _Indexer:
        """``a.oindex[...]``: orthogonal (outer) selection, for reading and writing.

        See ``get_orthogonal_selection`` and ``set_orthogonal_selection``.
        """
        return _Indexer(self.get_orthogonal_selection, self.set_orthogonal_selection)

    @property
    def vindex(self) -> _Indexer:
        """``a.vindex[...]``: coordinate selection, or a mask of the array's shape.

        See ``get_coordinate_selection`` and ``get_mask_selection`` (and their ``set_``
        twins, for ``a.vindex[...] = value``).
        """
        def get(sel: Any) -> Any:
            if isinstance(sel, np.ndarray) and sel.dtype == bool:
                return self.get_mask_selection(sel)
            return self.get_coordinate_selection(sel)

        def set_(sel: Any, value: Any) -> None:
            if isinstance(sel, np.ndarray) and sel.dtype == bool:
                self.set_mask_selection(sel, value)
            else:
                self.set_coordinate_selection(sel, value)

        return _Indexer(get, set_)

    @property
    def blocks(self) -> _Indexer:
        """``a.blocks[i, j]``: whole chunks by their grid index.

        See ``get_block_selection`` and ``set_block_selection``.
        """
        return _Indexer(self.get_block_selection, self.set_block_selection)

    @_names_memory_errors("reading")
    def get_basic_selection(self, selection: Any = Ellipsis, *, out: np.ndarray | None = None,
                            fields: str | list[str] | None = None) -> Any:
        """Read a basic selection (ints, slices with any step, Ellipsis) into a NumPy array.

        ``a[selection]`` calls this for a basic selection; only the chunks the selection
        touches are read, in parallel.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them, optional
            As in NumPy's basic indexing; the default, ``...``, reads the whole array.
        out : numpy.ndarray, optional
            A writeable C-contiguous array of exactly the result's shape and dtype to read
            into, returned (no other buffer is allocated).
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to read.

        Returns
        -------
        numpy.ndarray or scalar
            The selected elements: a new array (in the array's ``order``) or ``out``; a
            0-d array gives its element as a NumPy scalar.

        Raises
        ------
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or an ``out`` that does not fit.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(3, 4), dtype="int16")
        >>> a[:] = np.arange(12).reshape(3, 4)
        >>> a.get_basic_selection((slice(1, None), slice(None, None, -2)))
        array([[ 7,  5],
               [11,  9]], dtype=int16)
        >>> out = np.empty((4,), dtype="int16")
        >>> a.get_basic_selection(2, out=out) is out
        True
        """
        out = _out_array(out)
        return self._get_basic(selection, out, fields)

    def _get_basic(self, selection: Any, out: np.ndarray | None,
                   fields: str | list[str] | None) -> Any:
        if fields is not None:
            self._check_fields(fields)
            result = self.get_basic_selection(selection)
            picked = np.asarray(result)[fields]
            if out is not None:
                out[...] = picked
                return out
            return picked if self.ndim else picked[()]
        shape = self._metadata.shape
        store = self._store
        if self._gated:
            self._gate_read(self._basic_chunks(normalize_basic(selection, shape)))
        result = strategies.read_basic(store, store.capabilities, self._chunk_path, self._chain,
                                       selection, shape, self._dtype, out, self._where)
        if not shape:
            return result[()]
        if self._order == "F" and out is None and result.ndim > 1:
            return np.asfortranarray(result)
        return result

    # -- writing -------------------------------------------------------------------------
    @_names_memory_errors("writing")
    def __setitem__(self, selection: Any, value: Any) -> None:
        selection = _read_index_arrays(selection)
        selection, fields = self._split_fields(selection)
        kind = self._kind_of(selection)
        if kind == "mask":
            self.set_mask_selection(selection, value, fields=fields)
        elif kind == "coordinate":
            self.set_coordinate_selection(selection, value, fields=fields)
        elif kind == "orthogonal":
            self.set_orthogonal_selection(selection, value, fields=fields)
        elif kind == "numpy":
            from zarrfast.engine.fancy import get_orthogonal, numpy_plan, set_orthogonal

            self._check_writable()
            block_sel, np_sel = numpy_plan(selection, self.shape)
            block = get_orthogonal(self._fancy_target(), block_sel)
            target = block
            if fields is not None:
                self._check_fields(fields)
                target = block[fields]
            value = self._as_stored(value, target.dtype)
            try:
                target[np_sel] = value
            except (ValueError, IndexError) as e:
                raise IndexingError(
                    f"array {self.name!r}: cannot assign the value to selection "
                    f"{selection!r}: {e}"
                ) from None
            set_orthogonal(self._fancy_target(), block_sel, block)
        else:
            self.set_basic_selection(selection, value, fields=fields)

    @_names_memory_errors("writing")
    def set_basic_selection(self, selection: Any, value: Any, *,
                            fields: str | list[str] | None = None) -> None:
        """Write ``value`` into a basic selection (ints, slices with any step, Ellipsis).

        ``a[selection] = value`` calls this for a basic selection; only the chunks the
        selection touches are read (where partly written) and written, in parallel.  A
        chunk left with only the fill value is deleted unless ``write_empty_chunks``.

        Parameters
        ----------
        selection : int, slice, Ellipsis or tuple of them
            As in NumPy's basic indexing.
        value : scalar or array-like
            Broadcast to the selection's shape, as NumPy broadcasts; cast as NumPy's
            ``x[...] = value`` casts (a Python scalar out of range is refused).
        fields : str or list of str, optional
            For a structured data type: the field, or fields, to write (the others keep
            their values).

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.BoundsCheckError
            An index outside the array.
        zarrfast.errors.IndexingError
            A malformed selection, an unknown field, or a value that does not broadcast to
            the selection.
        zarrfast.errors.ValueCastError
            A value the data type cannot hold (``300`` into ``uint8``); nothing is written.

        Examples
        --------
        >>> a = zarrfast.zeros((2, 5), dtype="float32", store={})
        >>> a.set_basic_selection((1, slice(None, None, 2)), [1, 2, 3])
        >>> a[:]
        array([[0., 0., 0., 0., 0.],
               [1., 0., 2., 0., 3.]], dtype=float32)
        """
        self._check_writable()
        if fields is not None:
            self._check_fields(fields)
            current = np.array(self.get_basic_selection(selection), dtype=self.dtype)
            current[fields] = self._as_stored(value, current[fields].dtype)
            self.set_basic_selection(selection, current)
            return
        dtype = self._dtype
        if dtype.names is not None and isinstance(value, tuple):
            value = np.array(value, dtype=dtype)[()]  # one record
        store = self._store
        strategies.write_basic(store, store.capabilities, self._chunk_path, self._chain, selection,
                               value, self._metadata.shape, dtype, self._where,
                               elements=self._elements,
                               write_empty_chunks=self.write_empty_chunks)

    def _as_stored(self, value: Any, dtype: np.dtype) -> np.ndarray:
        """``value`` cast as NumPy's ``x[...] = value`` casts it (a Python scalar out of
        range raises, an array wraps), and the elements of a string or bytes array
        converted as zarr-python converts them, before anything is written."""
        elements = self._elements if dtype == self._dtype else None
        return as_stored(value, dtype, where=f"array {self.name!r}", elements=elements)

    def _write(self, sel: Any, value: np.ndarray | None, scalar: Any) -> None:
        strategies.write(self._store, self._chunk_path, self._chain, sel, value, scalar,
                         write_empty_chunks=self.write_empty_chunks)

    # -- whole-array operations ---------------------------------------------------------
    @_names_memory_errors("appending")
    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow the array along ``axis`` and write ``data`` into the new part.

        The shape stored is read again under the array's lock, so appends from several
        writers (threads, or processes on a local store) each land after the others'.

        Parameters
        ----------
        data : array-like
            The values to add: the array's shape except along ``axis``.
        axis : int, optional
            The dimension to grow (negative counts from the end).

        Returns
        -------
        tuple of int
            The new shape.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.IndexingError
            A 0-d array, an ``axis`` out of range, or ``data`` of a shape that does not
            fit.
        zarrfast.errors.ValueCastError
            ``data`` the data type cannot hold (checked before the array grows).
        zarrfast.errors.ConcurrentWriteError
            Another writer changed the metadata meanwhile, on a store whose locks do not
            reach it (nothing is written).

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(2, 3), dtype="int8")
        >>> a.append([[1, 2, 3]])
        (3, 3)
        >>> a.append([[4], [5], [6]], axis=1)
        (3, 4)
        >>> a[:]
        array([[0, 0, 0, 4],
               [0, 0, 0, 5],
               [1, 2, 3, 6]], dtype=int8)
        """
        self._check_writable()
        data = self._as_stored(data, self.dtype)  # before the array grows
        if self.ndim == 0:
            raise IndexingError(f"array {self.name!r}: cannot append to a 0-d array")
        if not -self.ndim <= axis < self.ndim:
            raise IndexingError(
                f"array {self.name!r}: axis {axis} is out of range for {self.ndim} dimensions"
            )
        axis %= self.ndim
        with self._updating() as docs:
            # the shape now stored (other writers may have appended since this object
            # read it), then the new rows' chunks, all under the array's lock: rows that
            # share a chunk with another writer's are never read-modify-written at once
            old = self.shape
            if len(old) != data.ndim or any(
                    a != b for d, (a, b) in enumerate(zip(data.shape, old, strict=True))
                    if d != axis):
                raise IndexingError(
                    f"array {self.name!r}: cannot append data of shape {data.shape} to "
                    f"shape {old} along axis {axis}")
            new_shape = tuple(s + (data.shape[axis] if d == axis else 0)
                              for d, s in enumerate(old))
            self._resize_locked(new_shape, docs)
            region = tuple(slice(old[d], None) if d == axis else slice(None)
                           for d in range(self.ndim))
            self[region] = data
        return new_shape

    def nbytes_stored(self) -> int:
        """Bytes this array holds in its store: its metadata and chunks.

        Everything below its path counts (and below its chunk path where that differs,
        as for drafts); listing the keys and their sizes reads the store.

        Returns
        -------
        int
            The total size of the array's keys, in bytes.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(1000,), dtype="f8")
        >>> before = a.nbytes_stored()
        >>> a[:] = 1.0
        >>> a.nbytes_stored() > before
        True
        """
        keys: set[str] = set()
        for base in {self._path, self._chunk_path}:
            keys.update(self._store.list_prefix(f"{base}/" if base else ""))
        total = 0
        for key in keys:
            try:
                total += self._store.getsize(key)
            except FileNotFoundError:  # deleted meanwhile
                pass
        return total

    @property
    def info(self) -> ArrayInfo:
        """What is known of the array without reading the store.

        Prints as zarr-python's ``Array.info``; ``info_complete()`` adds what is stored.
        """
        return self._info(complete=False)

    def info_complete(self) -> ArrayInfo:
        """``info`` plus the bytes stored and the number of chunks (shards) stored.

        Unlike ``info``, this reads the store (it lists the array's keys).

        Returns
        -------
        ArrayInfo
            Prints as zarr-python's ``Array.info_complete()``.
        """
        return self._info(complete=True)

    def _info(self, *, complete: bool) -> ArrayInfo:
        return array_info(self, complete=complete)

    @_names_memory_errors("resizing")
    def resize(self, new_shape: tuple[int, ...] | int) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted.

        Chunks the new edge cuts through keep their data (as zarr-python): growing the
        array back shows it again.

        Parameters
        ----------
        new_shape : int or tuple of int
            The new length of each dimension (an int for a 1-d array); the number of
            dimensions cannot change.

        Raises
        ------
        zarrfast.errors.ReadOnlyError
            The array is read-only.
        zarrfast.errors.ZarrfastError
            A new shape of another rank, or with a negative length.
        zarrfast.errors.ConcurrentWriteError
            Another writer changed the metadata meanwhile, on a store whose locks do not
            reach it (nothing is written).

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(2, 2), chunks=(1, 1), dtype="int8")
        >>> a[:] = 1
        >>> a.resize((3, 1))
        >>> a[:]
        array([[1],
               [1],
               [0]], dtype=int8)
        """
        self._check_writable()
        if isinstance(new_shape, int):
            new_shape = (new_shape,)
        new_shape = tuple(int(s) for s in new_shape)
        with self._updating() as docs:
            self._resize_locked(new_shape, docs)

    def _resize_locked(self, new_shape: tuple[int, ...], docs: dict[str, bytes | None]
                       ) -> None:
        if len(new_shape) != self.ndim:  # (zarr-python 3.4's words)
            raise ZarrfastError(
                f"array {self.name!r}: The new shape must have the same number of dimensions "
                f"as the array. Got {len(new_shape)} dimension(s), expected {self.ndim}.")
        if any(s < 0 for s in new_shape):
            raise ZarrfastError(
                f"array {self.name!r}: new shape {new_shape} must have {self.ndim} "
                f"non-negative lengths"
            )
        old_grid = self._stored_grid
        try:
            new_md = self._metadata.update_shape(new_shape)
        except MetadataValidationError as e:  # (too large for int64 offsets)
            raise MetadataValidationError(f"array {self.name!r}: resize to {new_shape}: {e}"
                                          ) from None
        if not self._regular and new_md.chunk_grid != self._metadata.chunk_grid:
            # an appended chunk must suit the codecs (a shard: whole inner chunks)
            CodecChain.from_metadata(new_md, node=f"array {self._path or '/'!r}")
        new_grid = new_md.chunk_grid.grid_shape(new_shape)
        if not self._store.interprocess_locks:  # before deleting any chunk
            check_documents_unchanged(self._store, self._path, docs, "array")
        # the chunks (shards) wholly outside the new shape go; partial edge chunks keep
        # their data (as zarr-python).  A few grid positions are deleted one by one, many
        # (a huge, mostly empty grid) by listing the stored chunks: cost bounded by both
        delete_outside(self._store, self._metadata, self._chunk_path, old_grid, new_grid)
        self._commit(new_md, docs, checked=True)

    @property
    def nchunks_initialized(self) -> int:
        """The number of chunks stored (this lists the store).

        For a sharded array, the stored shards times the chunks per shard, as zarr-python
        counts.
        """
        per_object = 1
        sharding = self._sharding
        if sharding is not None and not self._regular:
            return self._count_stored_objects(per_shard=sharding.chunks_per_shard)
        if sharding is not None:
            per_object = math.prod(sharding.chunks_per_shard(self._metadata.chunks))
        return self._count_stored_objects() * per_object

    @property
    def _nshards(self) -> int:
        """The number of stored objects the grid has room for: shards of a sharded array,
        else chunks (zarr-python's ``Array._nshards``)."""
        return math.prod(self._stored_grid)

    @property
    def _nshards_initialized(self) -> int:
        """The number of stored objects: shards of a sharded array, else chunks
        (zarr-python's ``Array._nshards_initialized``; this lists the store)."""
        return self._count_stored_objects()

    def _count_stored_objects(self, per_shard: Any = None) -> int:
        """Stored chunks (or shards); with ``per_shard`` (shard shape -> inner chunks per
        dimension), the inner chunks of the stored shards of a rectilinear grid."""
        stored = stored_coords(self._store, self._metadata, self._chunk_path,
                               self._stored_grid)
        if per_shard is None:
            return len(stored)
        sizes = [self._metadata.chunk_grid.edges(d, n) for d, n in enumerate(self.shape)]
        return sum(math.prod(per_shard(tuple(e[c] for e, c in zip(sizes, coords, strict=True))))
                   for coords in stored)

    @property
    def config(self) -> ArrayConfig:
        """The runtime configuration, as an ``ArrayConfig``.

        Its fields: ``order``, ``write_empty_chunks``, ``read_missing_chunks`` and
        zarr-python's sharding read settings.  As zarr-python's ``Array.config``; ``with_config`` gives the array with another.
        """
        return ArrayConfig(order=self._order, write_empty_chunks=self.write_empty_chunks,
                           **self._runtime_keywords())

    def with_config(self, config: Any) -> Array:
        """This array with another runtime configuration (a new ``Array``).

        This array is unchanged; the two share the store and the stored data.

        Parameters
        ----------
        config : ArrayConfig or dict
            ``order`` and/or ``write_empty_chunks``; the keys left out keep this array's
            values.

        Returns
        -------
        Array
            The same stored array, seen with that configuration.

        Examples
        --------
        >>> a = zarrfast.create_array(store={}, shape=(2, 2), dtype="f4")
        >>> a.with_config({"order": "F"}).order, a.order
        ('F', 'C')
        """
        new = parse_array_config(config, base=self.config)
        return Array(self._store, self._path, self._metadata, read_only=self._read_only,
                     write_empty_chunks=new.write_empty_chunks, order=new.order,
                     chunk_path=self._chunk_path, codecs=self._codecs,
                     **runtime_keywords(new))

    @classmethod
    def from_dict(cls, store_path: Any, data: dict[str, Any]) -> Array:
        """The array whose metadata document is ``data``, at ``store_path``.

        Nothing is read or written: the array is as ``data`` describes it.

        Parameters
        ----------
        store_path : StorePath, Store, str or dict
            A ``StorePath``-like object (``.store`` and ``.path``), a store, or anything
            [zarrfast.open][] takes as a store (then the array is at its root).
        data : dict
            The array's metadata document (Zarr v2 or v3) as a dict; for v2 the attributes
            may come along under ``"attributes"``.

        Returns
        -------
        Array
            Read-only when the store is.

        Raises
        ------
        zarrfast.errors.MetadataValidationError
            ``data`` is not a valid array metadata document (a group's, an unknown
            ``zarr_format``, not JSON...).
        """
        store, path = resolve_store_path(store_path)
        return cls(store, path, array_metadata_from_dict(data, path),
                   read_only=store.read_only)

    @classmethod
    def open(cls, store: Any, *, config: Any = None) -> Array:
        """Open the existing Zarr v3 array at ``store``, as zarr-python's ``Array.open``.

        Only Zarr v3 metadata (``zarr.json``) is looked for, as in zarr-python; open a
        v2 array with [zarrfast.open_array][] or ``AsyncArray.open(store, zarr_format=2)``.

        Parameters
        ----------
        store : Any
            Where the array is: a store, a [zarrfast.storage.StorePath][] (the array
            at its path), or anything [zarrfast.storage.make_store][] takes (a path, a
            URL, a dict...; the array at its root).
        config : ArrayConfig or dict or None, default None
            The runtime configuration, ``order`` and/or ``write_empty_chunks``; the
            keys left out follow ``zarrfast.config`` (``array.order``,
            ``array.write_empty_chunks``).

        Returns
        -------
        Array
            The array (read-only if the store is).

        Raises
        ------
        zarrfast.errors.ArrayNotFoundError
            There is no Zarr v3 array there.
        zarrfast.errors.NodeTypeValidationError
            There is a Zarr v3 group there.
        zarrfast.errors.ZarrfastError
            ``config`` has keys other than ``order`` and ``write_empty_chunks``, or an
            invalid value.

        Examples
        --------
        >>> store = zarrfast.MemoryStore()
        >>> _ = zarrfast.create_array(store, name="x", shape=(3,), dtype="int8")
        >>> a = zarrfast.Array.open(zarrfast.storage.StorePath(store, "x"))
        >>> a.shape, a.dtype
        ((3,), dtype('int8'))
        >>> zarrfast.Array.open(zarrfast.storage.StorePath(store, "x"),
        ...                     config={"order": "F"}).order
        'F'
        """
        sp = store_path_of(store)
        s, p = sp.store, normalize_path(sp.path)
        return cls(s, p, read_array_metadata(s, p, 3), read_only=s.read_only,
                   **array_config_keywords(config))

    def with_write_empty_chunks(self, value: bool) -> Array:
        """This array with another ``write_empty_chunks`` setting (a new ``Array``).

        This array is unchanged; the two share the store and the stored data.

        Parameters
        ----------
        value : bool
            Whether chunks whose elements all equal the fill value are stored.

        Returns
        -------
        Array
            The same stored array, writing with that setting.
        """
        new = Array(self._store, self._path, self._metadata, read_only=self._read_only,
                    write_empty_chunks=value, order=self._order, chunk_path=self._chunk_path,
                    **self._runtime_keywords())
        return new

    def _replace_metadata(self, **changes: Any) -> None:
        with self._updating() as docs:
            self._commit(replace(self._metadata, **changes), docs)


def _is_integer(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 0 and x.dtype.kind in "iu"
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_bool_iterable(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype == bool and x.ndim >= 1
    return isinstance(x, list) and bool(x) and all(isinstance(v, (bool, np.bool_)) for v in x)


class _Indexer:
    """``a.oindex`` / ``a.vindex`` / ``a.blocks``: item access bound to a get and a set."""

    __slots__ = ("_get", "_set")

    def __init__(self, get: Any, set_: Any) -> None:
        self._get = get
        self._set = set_

    def __getitem__(self, selection: Any) -> Any:
        return self._get(_read_index_arrays(selection))

    def __setitem__(self, selection: Any, value: Any) -> None:
        self._set(_read_index_arrays(selection), value)


def _name_selection(error: BaseException, array: Array, number: int, selection: Any) -> None:
    """Say in ``error`` (then re-raised) which selection of a ``get_many`` it is about."""
    add_context(error, f"{array._where}: selection {number} ({selection!r})")


def _read_index_arrays(selection: Any) -> Any:
    """A selection with the arrays in it (an index or mask stored as an ``Array``) read,
    as zarr-python takes them."""
    if isinstance(selection, Array):
        return selection[...]
    if type(selection) is tuple and any(isinstance(s, Array) for s in selection):
        return tuple(s[...] if isinstance(s, Array) else s for s in selection)
    return selection


def _is_plain(selection: Any) -> bool:
    """An exact int or slice, a tuple of them, or ``...`` alone: a basic selection
    without fields."""
    if type(selection) is not tuple:
        return type(selection) is slice or type(selection) is int or selection is Ellipsis
    for s in selection:
        if type(s) is not slice and type(s) is not int:
            return False
    return True


def _is_flat_index(x: Any) -> bool:
    """A 1-d integer or boolean list/array (what zarr-python's orthogonal indexing takes;
    an empty list is not one to it)."""
    if isinstance(x, np.ndarray):
        return x.ndim == 1 and (x.dtype.kind in "iub" or x.size == 0)
    return isinstance(x, list) and bool(x) and all(
        isinstance(v, (bool, np.bool_)) or _is_integer(v) for v in x)


def _is_fancy_item(x: Any) -> bool:
    """Any index array or (nested) list: an advanced index in NumPy's sense."""
    if isinstance(x, np.ndarray):
        return x.ndim >= 1 and (x.dtype.kind in "iub" or x.size == 0)
    return isinstance(x, list)


def _is_python_int(x: Any) -> bool:
    """A Python int: zarr-python's orthogonal indexing takes these, not NumPy scalars."""
    return isinstance(x, int) and not isinstance(x, bool)


def _is_int_array(x: Any) -> bool:
    """An integer array of any rank (zarr-python's coordinate selections take these)."""
    return isinstance(x, np.ndarray) and x.dtype.kind in "iu"

