"""zarr-python's codec pipeline, run by zarrfast's engine.

zarr-python lets a library replace the part of it that moves chunks between the store
and the array: its *codec pipeline*.  :class:`CodecPipeline` is zarrfast's.  Select it
for every array of every library that uses zarr-python (xarray, dask, anndata,
ome-zarr...), with zarr-python's configuration::

    import zarr
    zarr.config.set({"codec_pipeline.path": "zarrfast.zarr_python.CodecPipeline"})

or, for a whole program and the processes it starts, with the environment variable
``ZARR_CODEC_PIPELINE__PATH=zarrfast.zarr_python.CodecPipeline``.  zarr-python finds the
class through the ``zarr.codec_pipeline`` entry point zarrfast installs.

What it does with a batch of chunks zarr-python hands it (one read or write of an
array): the chunks' places in the output (or the value) become one table, as zarrfast's
own arrays project a selection, and zarrfast's engine reads or writes the table's rows:
chunk files of a ``LocalStore`` read and decoded up to 512 per kernel call without the
GIL, the values of a ``MemoryStore`` taken from its dict, an ``ObjectStore``'s through
zarrfast's store of the same obstore store, whole chunks compressed many at a time,
partial chunks merged with what is stored, shards read and written by the sharded engine
(whole shards of local files by one kernel call each, partial shard writes under the
shard's lock).  Other stores (fsspec, icechunk, zip...) are read and written through
their own async API, in the event loop zarr-python runs the pipeline in, and the bytes
decoded and placed by the same kernels.

Whatever it cannot do goes to zarr-python's own pipeline (``BatchedCodecPipeline``) for
that call, never to wrong data, and a DEBUG message on the ``zarrfast.zarr_python``
logger says why: a codec or data type zarrfast has no chain for, a non-native byte order
(Zarr v2's ``>i4``: zarr-python keeps it in memory), a selection other than integers and
slices, an output that is not a C-contiguous NumPy array, variable-length chunks
(strings), parts of shards of a store read through its async API; and a chunk or value
the engine refuses, or a store error (the call is made again by zarr-python's
pipeline, which answers as zarr-python does).  ``decode``, ``encode``,
``compute_encoded_size`` and ``validate`` are zarr-python's.

zarr-python 3.1 to 3.4 go through the engine (the interface changed little among them:
3.4's ``read`` returns one ``GetResult`` per chunk, 3.1's nothing); with 3.0, whose chunk
specifications hold NumPy data types, every call goes to zarr-python's pipeline.

zarr-python is optional for zarrfast: this module needs it (``pip install
"zarrfast[zarr]"``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import operator
import os
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain as _chain
from typing import Any

import numpy as np

from zarrfast import config as _config
from zarrfast import kernels as _kernels
from zarrfast.codecs import CodecChain
from zarrfast.concurrency import map_io
from zarrfast.engine.chunked import PreparedChain, Projection, RowReader, RowWriter
from zarrfast.engine.plan import Plan
from zarrfast.engine.selection import BasicSelection
from zarrfast.engine.shard_read import ShardRowsRead
from zarrfast.engine.shard_write import ShardWrite
from zarrfast.engine.sharded import ShardedChain
from zarrfast.engine.strategies import READ_ROWS, WRITE_ROWS, choose_rows
from zarrfast.errors import ZarrfastError
from zarrfast.kernels import buffers as _buffers
from zarrfast.metadata.v2 import ArrayMetadataV2
from zarrfast.metadata.v3 import ArrayV3Metadata
from zarrfast.storage import LocalStore, MemoryStore, Store

try:
    import zarr
    from zarr.abc.codec import CodecPipeline as _ZarrCodecPipeline
    from zarr.core.codec_pipeline import BatchedCodecPipeline
    from zarr.registry import register_pipeline
except ImportError as e:  # pragma: no cover - zarr-python is a test dependency
    from zarrfast.storage.errors import MissingDependencyError

    raise MissingDependencyError(
        "zarrfast.zarr_python needs zarr-python 3: pip install \"zarrfast[zarr]\"") from e

__all__ = ["CodecPipeline"]

logger = logging.getLogger("zarrfast.zarr_python")

#: chains a pipeline keeps, at most (one per chunk specification it was given)
MAX_CHAINS = 16

#: zarr-python 3.4's ``read`` returns a ``GetResult`` per chunk (3.1's returns nothing)
_GET_RESULTS = hasattr(zarr.abc.codec, "GetResult")


class CodecPipeline(_ZarrCodecPipeline):
    """zarr-python's codec pipeline, with zarrfast's engine moving the chunks.

    Select it in zarr-python's configuration (``codec_pipeline.path``) or with the
    environment variable ``ZARR_CODEC_PIPELINE__PATH``, as
    ``"zarrfast.zarr_python.CodecPipeline"``.  zarr-python makes one per array (and one
    for the inner chunks of each sharded array); nobody calls its constructor but
    :meth:`from_codecs` and :meth:`evolve_from_array_spec`.

    Parameters
    ----------
    default : zarr.core.codec_pipeline.BatchedCodecPipeline
        zarr-python's own pipeline of the same codecs: it runs what zarrfast cannot (the
        DEBUG log of ``zarrfast.zarr_python`` says when and why), and the methods that
        move no chunks (``decode``, ``encode``, ``compute_encoded_size``, ``validate``).

    Examples
    --------
    >>> import zarr
    >>> with zarr.config.set({"codec_pipeline.path": "zarrfast.zarr_python.CodecPipeline"}):
    ...     a = zarr.create_array({}, shape=(4, 4), chunks=(2, 2), dtype="int32")
    ...     a[:] = np.arange(16).reshape(4, 4)
    ...     print(type(a._async_array.codec_pipeline).__name__, a[1:3, 1:3].tolist())
    CodecPipeline [[5, 6], [9, 10]]
    """

    def __init__(self, default: Any) -> None:
        self.default = default
        #: chunk specification (:func:`_spec_key`) -> zarrfast's chain (a ``PreparedChain``
        #: or, for shards, a ``ShardedChain``), or why none
        self._chains: dict[tuple, Any] = {}
        #: the last zarr-python store, where its data is, and zarrfast's store of it
        self._store: tuple[Any, Any, Store | None] | None = None

    def __repr__(self) -> str:
        return f"<zarrfast CodecPipeline of {list(self.default)!r}>"

    def __eq__(self, other: object) -> bool:
        # (as zarr-python's pipelines, dataclasses: arrays compare their pipelines)
        return type(other) is type(self) and other.default == self.default  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.default))

    def __reduce__(self) -> tuple:
        # the chains hold per-thread buffers: made again where the pipeline is unpickled
        return (type(self), (self.default,))

    def __iter__(self) -> Iterator[Any]:
        """The codecs, in order (as zarr-python's pipelines iterate)."""
        return iter(self.default)

    # -- making one -----------------------------------------------------------------
    @classmethod
    def from_codecs(cls, codecs: Iterable[Any], *, batch_size: int | None = None
                    ) -> CodecPipeline:
        """A pipeline of ``codecs`` (zarr-python's codec objects), not yet evolved.

        Parameters
        ----------
        codecs : iterable of zarr.abc.codec.Codec
            The array's codecs.
        batch_size : int, optional
            zarr-python's ``codec_pipeline.batch_size`` for its own pipeline.

        Returns
        -------
        CodecPipeline
            A pipeline that runs everything through zarr-python's until
            :meth:`evolve_from_array_spec` gives it the chunk specification.
        """
        return cls(BatchedCodecPipeline.from_codecs(codecs, batch_size=batch_size))

    def evolve_from_array_spec(self, array_spec: Any) -> CodecPipeline:
        """The pipeline for chunks of ``array_spec``: zarrfast's chain made for them.

        Parameters
        ----------
        array_spec : zarr.core.array_spec.ArraySpec
            The chunk shape, data type, fill value and configuration.

        Returns
        -------
        CodecPipeline
            A new pipeline (chunks zarrfast has no chain for go through zarr-python's
            pipeline).
        """
        pipeline = type(self)(self.default.evolve_from_array_spec(array_spec))
        pipeline._chain_for(array_spec)
        return pipeline

    def _chain_for(self, spec: Any) -> Any:
        """zarrfast's chain for chunks of ``spec``, or why there is none; made once per
        chunk specification (zarr-python 3.1 to 3.3 give it with the first read or write,
        3.4 to :meth:`evolve_from_array_spec`)."""
        key = _spec_key(spec)
        known = self._chains.get(key)
        if known is None:
            try:
                known = _make_chain(list(self.default), spec)
            except _Unsupported as e:
                known = str(e)
            if len(self._chains) >= MAX_CHAINS:  # (chunks of many shapes: rectilinear)
                self._chains.clear()
            self._chains[key] = known
        return known

    # -- what moves no chunks: zarr-python's ---------------------------------------------
    @property
    def supports_partial_decode(self) -> bool:
        """zarr-python's answer for these codecs (sharding without outer codecs).

        Returns
        -------
        bool
            Whether the array -> bytes codec reads parts of a chunk.
        """
        return bool(self.default.supports_partial_decode)

    @property
    def supports_partial_encode(self) -> bool:
        """zarr-python's answer for these codecs.

        Returns
        -------
        bool
            Whether the array -> bytes codec writes parts of a chunk.
        """
        return bool(self.default.supports_partial_encode)

    def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
        """Check the codecs against the array (zarr-python's checks).

        Parameters
        ----------
        shape : tuple of int
            The array's shape.
        dtype : zarr.core.dtype.ZDType
            The array's data type.
        chunk_grid : zarr.core.chunk_grids.ChunkGrid
            The array's chunk grid (its metadata).
        """
        self.default.validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)

    def compute_encoded_size(self, byte_length: int, array_spec: Any) -> int:
        """The encoded size of ``byte_length`` bytes of chunk (fixed-size codecs only).

        Parameters
        ----------
        byte_length : int
            The decoded chunk's bytes.
        array_spec : zarr.core.array_spec.ArraySpec
            The chunk's specification.

        Returns
        -------
        int
            The encoded bytes (zarr-python raises for variable-size codecs).
        """
        return int(self.default.compute_encoded_size(byte_length, array_spec))

    async def decode(self, chunk_bytes_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        """Decode chunks (zarr-python's pipeline does).

        Parameters
        ----------
        chunk_bytes_and_specs : iterable of (Buffer or None, ArraySpec)
            The encoded chunks and their specifications.

        Returns
        -------
        iterable of (NDBuffer or None)
            The decoded chunks, ``None`` where there were no bytes.
        """
        return await self.default.decode(chunk_bytes_and_specs)

    async def encode(self, chunk_arrays_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        """Encode chunks (zarr-python's pipeline does).

        Parameters
        ----------
        chunk_arrays_and_specs : iterable of (NDBuffer or None, ArraySpec)
            The chunks and their specifications.

        Returns
        -------
        iterable of (Buffer or None)
            The encoded chunks, ``None`` where there was no chunk.
        """
        return await self.default.encode(chunk_arrays_and_specs)

    # -- reads and writes: zarrfast's engine ---------------------------------------------
    async def read(self, batch_info: Iterable[tuple[Any, Any, Any, Any, bool]], out: Any,
                   drop_axes: tuple[int, ...] = ()) -> Any:
        """Read chunks into ``out``: zarrfast's engine, else zarr-python's pipeline.

        Parameters
        ----------
        batch_info : iterable of (ByteGetter, ArraySpec, selection, selection, bool)
            Per chunk: where its bytes are, its specification, the part of it read, where
            that part goes in ``out``, and whether the whole chunk is read.
        out : zarr.core.buffer.NDBuffer
            The output.
        drop_axes : tuple of int, default ()
            Axes of the chunks' selections that ``out`` does not have.

        Returns
        -------
        tuple of GetResult or None
            zarr-python 3.4 and later: one ``{"status": "present"}`` or
            ``{"status": "missing"}`` per chunk, in order; 3.1 to 3.3: ``None``.
        """
        batch = list(batch_info)
        if not batch:
            return () if _GET_RESULTS else None
        rows = self._rows(batch, out, drop_axes, reading=True)
        if isinstance(rows, str):
            logger.debug("read of %d chunks by zarr-python's pipeline: %s", len(batch), rows)
            return await self.default.read(batch, out, drop_axes)
        keys, native = self._keys_and_store(batch)
        if native is None and rows.chain.kind == "sharded" and not rows.complete.all():
            # (zarr-python's sharding codec reads parts of shards by byte ranges)
            logger.debug("read of %d chunks by zarr-python's pipeline: parts of shards of "
                         "a store read through its async API", len(batch))
            return await self.default.read(batch, out, drop_axes)
        if native is None:  # the store's own async API, then the engine on its bytes
            blobs = await _gather([(item[0], item[1].prototype) for item in batch])
            native = MemoryStore({k: b for k, b in zip(keys, blobs, strict=True)
                                  if b is not None}, read_only=True)
        try:
            missing = await _in_thread(_read_rows, native, rows.chain, rows, keys,
                                       out.as_ndarray_like())
        except ZarrfastError as e:
            # (a chunk zarrfast refuses, a store error: zarr-python's pipeline reads the
            # batch again and answers as zarr-python does, data or error)
            logger.debug("read of %d chunks by zarr-python's pipeline after %s: %s",
                         len(batch), type(e).__name__, e)
            return await self.default.read(batch, out, drop_axes)
        if not _GET_RESULTS:
            return None
        # (a dict per chunk, as zarr-python makes them; then the missing ones: 2116
        # chunks in 0.76 ms where asking each whether it is missing took 1.2 ms)
        results: list[Any] = [{"status": "present"} for _ in range(len(batch))]
        for i in missing:
            results[i] = {"status": "missing"}
        return tuple(results)

    async def write(self, batch_info: Iterable[tuple[Any, Any, Any, Any, bool]], value: Any,
                    drop_axes: tuple[int, ...] = ()) -> None:
        """Write ``value`` into chunks: zarrfast's engine, else zarr-python's pipeline.

        Partially written chunks are merged with what is stored; chunks equal to the
        fill value everywhere are deleted unless the array writes empty chunks.

        Parameters
        ----------
        batch_info : iterable of (ByteSetter, ArraySpec, selection, selection, bool)
            Per chunk: where its bytes go, its specification, the part of it written,
            where that part is in ``value``, and whether the whole chunk is written.
        value : zarr.core.buffer.NDBuffer
            The values (0-d: one value for every element).
        drop_axes : tuple of int, default ()
            Axes of the chunks' selections that ``value`` does not have.
        """
        batch = list(batch_info)
        if not batch:
            return
        rows = self._rows(batch, value, drop_axes, reading=False)
        if isinstance(rows, str):
            logger.debug("write of %d chunks by zarr-python's pipeline: %s", len(batch), rows)
            await self.default.write(batch, value, drop_axes)
            return
        try:
            await self._write(batch, rows, value)
        except ZarrfastError as e:
            # (a value a codec refuses, a store error: zarr-python's pipeline writes the
            # batch again and answers as zarr-python does; the chunks are the same)
            logger.debug("write of %d chunks by zarr-python's pipeline after %s: %s",
                         len(batch), type(e).__name__, e)
            await self.default.write(batch, value, drop_axes)

    async def _write(self, batch: list, rows: Projection, value: Any) -> None:
        keys, native = self._keys_and_store(batch)
        write_empty = bool(getattr(batch[0][1].config, "write_empty_chunks", False))
        if native is not None:
            await _in_thread(_write_rows, native, rows.chain, rows, keys,
                             value.as_ndarray_like(), write_empty)
            return
        # the store's own async API: the chunks partially written read first, the engine
        # writes into a dict, and what it holds afterwards is stored (or deleted).  A
        # shard at the array's edge is read too: what it holds past the edge is kept, as
        # zarr-python's sharding codec keeps it (a chunk's padding is the fill value)
        need = ~rows.complete
        if rows.chain.kind == "sharded":
            need = need | rows.edge
        old = np.flatnonzero(need).tolist()
        blobs = await _gather([(batch[i][0], batch[i][1].prototype) for i in old])
        scratch: dict[str, Any] = {keys[i]: b for i, b in zip(old, blobs, strict=True)
                                   if b is not None}
        await _in_thread(_write_rows, MemoryStore(scratch), rows.chain, rows, keys,
                         value.as_ndarray_like(), write_empty)
        prototype = batch[0][1].prototype
        await _scatter([(item[0], None if keys[i] not in scratch
                         else prototype.buffer.from_bytes(scratch[keys[i]]))
                        for i, item in enumerate(batch)])

    # -- the batch as a projection -----------------------------------------------------
    def _rows(self, batch: list, buf: Any, drop_axes: tuple[int, ...], *, reading: bool
              ) -> Projection | str:
        """The batch as a projection of the chain's chunks onto ``buf`` (the output or
        the value), or why it cannot be one (a reason for the log)."""
        spec = batch[0][1]
        chain = self._chain_for(spec)
        if isinstance(chain, str):
            return chain
        if drop_axes:
            return f"axes {drop_axes} dropped after an orthogonal selection"
        arr = buf.as_ndarray_like()
        if not isinstance(arr, np.ndarray):
            return f"{'output' if reading else 'value'} is a {type(arr).__name__}, " \
                   "not a NumPy array"
        dtype, chunk_shape = _layout(chain)
        if arr.dtype != dtype:
            return f"{'output' if reading else 'value'} dtype {arr.dtype} is not the " \
                   f"chain's {dtype}"
        if reading and not arr.flags.c_contiguous:  # (a value is made contiguous)
            return "output is not C-contiguous"
        ndim = len(chunk_shape)
        chunk_shape_arr = np.array(chunk_shape, dtype=np.int64)
        key = _spec_key(spec)
        for item in batch:
            cs = item[1]
            if cs is not spec and not (cs.shape == spec.shape and cs.dtype == spec.dtype
                                       and cs.fill_value is spec.fill_value
                                       and cs.config == spec.config) \
                    and _spec_key(cs) != key:
                return "a chunk's specification is not the array's (rectilinear chunks?)"
        table: tuple | str | None = _slice_table(batch, chunk_shape_arr)
        if table is None:
            table = _table(batch, chunk_shape)
        if isinstance(table, str):
            return table
        local_start, local_count, out_start, complete, step, kept = table
        if arr.ndim == 0 and not reading:
            full = (1,) * ndim  # (one value for every element: no shape to check)
        elif arr.ndim == sum(kept):
            full = tuple(arr.shape[sum(kept[:d])] if kept[d] else 1 for d in range(ndim))
        else:
            return f"{'output' if reading else 'value'} of shape {arr.shape}"
        # every element read or written lies inside the chunk and ``buf``
        ends = local_start + (local_count - 1) * np.array(step, dtype=np.int64)
        if (ends >= chunk_shape_arr).any() or (local_start < 0).any():
            return "a chunk selection outside the chunk"
        if arr.ndim and ((out_start + local_count) > np.array(full, dtype=np.int64)).any():
            return "an output selection outside the output"
        sel = BasicSelection(start=np.zeros(ndim, dtype=np.int64),
                             step=np.array(step, dtype=np.int64),
                             count=np.array(full, dtype=np.int64),
                             dropped=tuple(not k for k in kept))
        proj = Projection.__new__(Projection)
        proj.array_shape = None  # type: ignore[assignment]  # (the rows say what is whole)
        proj.coords = None  # type: ignore[assignment]  # (not needed: see edge below)
        proj.local_start, proj.local_count = local_start, local_count
        proj.out_start, proj.complete = out_start, complete
        proj.nrows, proj.chain, proj.sel = len(batch), chain, sel
        # cached properties of a projection made from a selection.  zarr-python calls a
        # chunk at the array's edge complete when the selection covers its part inside
        # the array: such a chunk is the projection's edge (its padding holds the fill
        # value, nothing of it is read)
        proj.__dict__["edge"] = complete & (local_count < chunk_shape_arr).any(axis=1)
        proj.__dict__["row_chunks"] = _row_chunks(out_start)
        return proj

    def _keys_and_store(self, batch: list) -> tuple[list[str], Store | None]:
        """The chunks' keys, and zarrfast's store of the chunks' store when it has one
        (a ``LocalStore`` or ``MemoryStore`` of zarr-python's, every chunk's)."""
        first = batch[0][0]
        store = getattr(first, "store", None)
        path = getattr(first, "path", None)
        if store is None or not isinstance(path, str):  # (sharding's inner chunks)
            return [f"chunk {i}" for i in range(len(batch))], None
        keys = []
        for item in batch:
            getter = item[0]
            if getattr(getter, "store", None) is not store:
                return [getattr(item[0], "path", f"chunk {i}") for i, item in
                        enumerate(batch)], None
            keys.append(getter.path)
        return keys, self._native(store)

    def _native(self, store: Any) -> Store | None:
        """zarrfast's store of zarr-python's ``store``: the same files or dict (made
        again when the store's directory is another: ``LocalStore.move``, a relative
        root after ``os.chdir``)."""
        where = _where(store)
        known = self._store
        if known is not None and known[0] is store and known[1] == where:
            return known[2]
        native = _native(store, where)
        self._store = (store, where, native)  # (an array's pipeline sees one store)
        return native


class _Unsupported(Exception):  # noqa: N818 - a reason, logged, never seen by users
    """Why zarrfast makes no chain for a pipeline's chunks."""


def _make_chain(codecs: list, spec: Any) -> Any:
    """zarrfast's chain for chunks of ``spec`` with zarr-python's ``codecs``: the Zarr
    metadata of a one-chunk array parsed by zarrfast, as zarrfast reads an array's."""
    dtype = spec.dtype
    try:
        native = dtype.to_native_dtype()
    except Exception as e:  # noqa: BLE001 - a data type zarr-python cannot say
        raise _Unsupported(f"data type {dtype!r}: {e}") from None
    if native.hasobject or native.kind == "T":
        raise _Unsupported(f"variable-length data type {dtype!r}")
    if not native.isnative:
        raise _Unsupported(f"data type {native.str} in non-native byte order")
    shape = [int(s) for s in spec.shape]
    v2 = [c for c in codecs if type(c).__name__ == "V2Codec"]
    try:
        if v2:
            codec = v2[0]
            doc: dict[str, Any] = {
                "zarr_format": 2, "shape": shape, "chunks": shape,
                "dtype": _v2_dtype(dtype.to_json(zarr_format=2)),
                "compressor": (None if codec.compressor is None
                               else codec.compressor.get_config()),
                "filters": (None if not codec.filters
                            else [f.get_config() for f in codec.filters]),
                "fill_value": (None if spec.fill_value is None
                               else dtype.to_json_scalar(spec.fill_value, zarr_format=2)),
                "order": getattr(spec.config, "order", "C"),
            }
            metadata: Any = ArrayMetadataV2.from_dict(doc, path="")
        else:
            doc = {
                "zarr_format": 3, "node_type": "array", "shape": shape,
                "data_type": dtype.to_json(zarr_format=3),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
                "chunk_key_encoding": {"name": "default",
                                       "configuration": {"separator": "/"}},
                "fill_value": dtype.to_json_scalar(spec.fill_value, zarr_format=3),
                "codecs": [c.to_dict() for c in codecs],
            }
            # (zarr-python's dicts hold tuples and enums: as its JSON has them)
            doc = json.loads(json.dumps(doc, default=str))
            metadata = ArrayV3Metadata.from_dict(doc, path="")
        codec_chain = CodecChain.from_metadata(metadata)
        if codec_chain.sharding is None:
            chain: Any = PreparedChain(metadata, codec_chain)
        elif codec_chain.ab is not codec_chain.sharding or codec_chain.aa:
            raise _Unsupported("a sharding codec after other codecs")
        else:
            # the inner chunks in the order zarr-python's codec writes them (not
            # metadata: 3.4's subchunk_write_order, Morton before 3.4 as by default)
            ours = codec_chain.sharding
            order = next((getattr(c, "subchunk_write_order", "morton") for c in codecs
                          if type(c).__name__ == "ShardingCodec"), "morton")
            if order != ours.subchunk_write_order:
                codec_chain = CodecChain(
                    [dataclasses.replace(ours, subchunk_write_order=order) if c is ours
                     else c for c in codec_chain.codecs],
                    chunk_shape=codec_chain.chunk_shape, data_type=codec_chain.data_type)
            # the shards of the batch, each read as the one shard of this array
            chain = ShardedChain(metadata, codec_chain,
                                 index_cache=int(_config.get("shard_index_cache")))
    except _Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - whatever zarrfast cannot make: zarr-python's
        raise _Unsupported(f"{type(e).__name__}: {e}") from None
    got = _layout(chain)[0]
    if got != native:
        raise _Unsupported(f"zarrfast reads {dtype!r} as {got}, zarr-python as {native}")
    if math.prod(shape) == 0:
        raise _Unsupported("chunks of no element")
    return chain


def _layout(chain: Any) -> tuple[np.dtype, tuple[int, ...]]:
    """The data type and the shape of the chunks zarr-python hands (shards, for a
    sharded chain)."""
    if chain.kind == "sharded":
        return chain.inner.dtype, tuple(chain.layout.shard_shape)
    return chain.dtype, tuple(chain.chunk_shape)


def _by_shard(chain: ShardedChain, proj: Projection, keys: list[str]) -> tuple:
    """The batch's shards (the rows of ``proj``, keys ``keys``) projected onto their
    inner chunks and grouped by shard, as ``ShardRowsRead`` and ``ShardWrite`` take them:
    ``(projection, keys, shard coords, rows per shard, inner index)``."""
    shard_shape = np.array(chain.layout.shard_shape, dtype=np.int64)
    inner_shape = chain.inner.chunk_shape_arr
    step = proj.sel.step
    # shards whose parts read or written are the same project alike: once per distinct
    # part (a full write of 9 shards: 4 projections, the whole shards' one, the edges',
    # the corner's; 9 kernel calls and their joins took 0.23 ms, on a loaded machine)
    distinct: dict[tuple, int] = {}
    which = [distinct.setdefault(tuple(part), len(distinct)) for part in
             np.concatenate([proj.local_start, proj.local_count], axis=1).tolist()]
    parts = [_kernels.project(shard_shape, inner_shape, np.array(part[:len(step)]), step,
                              np.array(part[len(step):]))
             for part in [np.array(p, dtype=np.int64) for p in distinct]]
    tables = [parts[w] for w in which]
    sizes = np.array([len(t[0]) for t in parts], dtype=np.int64)[which]
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    inner = Projection.__new__(Projection)
    inner.array_shape = None  # type: ignore[assignment]  # (the rows say what is whole)
    inner.chain, inner.sel = chain.inner, proj.sel
    inner.coords = np.concatenate([t[0] for t in tables])
    inner.local_start = np.concatenate([t[1] for t in tables])
    inner.local_count = np.concatenate([t[2] for t in tables])
    # (each shard's rows go where the shard's part of the output begins)
    inner.out_start = (np.concatenate([t[3] for t in tables])
                       + np.repeat(proj.out_start, sizes, axis=0))
    inner.complete = np.concatenate([t[4] for t in tables])
    inner.nrows = int(bounds[-1])
    # an inner chunk lies in its shard; a part of it past the array's end is not in the
    # selection, so the chunk is not complete: written by read-modify-write
    inner.__dict__["edge"] = np.zeros(inner.nrows, dtype=bool)
    inner.__dict__["row_chunks"] = _row_chunks(inner.out_start)
    groups = [np.arange(bounds[r], bounds[r + 1], dtype=np.int64) for r in range(proj.nrows)]
    inner_lin = inner.coords @ chain.inner_strides
    shard_coords = np.zeros((proj.nrows, len(shard_shape)), dtype=np.int64)
    return inner, keys, shard_coords, groups, inner_lin


def _row_chunks(out_start: np.ndarray) -> int:
    """A projection's ``row_chunks`` from where its rows go: the chunks a row of the
    touched grid has along the last dimension (as zarrfast's own projections count them,
    the distinct last coordinates).  The engine sizes the buffer that whole chunks are
    gathered into before compression by it (the kernels gather only rows that lie next
    to each other in the value): counted as 1, a full write of a blosc array through
    the pipeline copied its chunks out of the value one at a time, 16% of the write's
    samples where zarrfast's own write spent 6%."""
    if out_start.shape[0] < 2 or out_start.shape[1] == 0:
        return 1
    last = np.sort(out_start[:, -1])
    return 1 + int(np.count_nonzero(last[1:] != last[:-1]))


def _v2_dtype(json: Any) -> Any:
    """The ``dtype`` member of a ``.zarray`` from zarr-python's JSON of a v2 data type
    (3.1+: ``{"name": ..., "object_codec_id": ...}``)."""
    return json["name"] if isinstance(json, dict) and "name" in json else json


#: a batch of at most this many slices (chunks times dimensions) is read slice by slice
#: (:func:`_flat_columns`), a larger one as a product first (:func:`_product_columns`):
#: reading a slice costs ~0.6 us, a product's NumPy calls ~0.15 ms
FLAT_SLICES = 128


def _slice_table(batch: list, chunk_shape: np.ndarray, *, flat_slices: int | None = None
                 ) -> tuple | None:
    """:func:`_table` of a batch whose every selection is slices (a read or write of
    slices of the array: zarr-python gives them with their bounds), in a few passes over
    the slices and NumPy calls; ``None`` when it is not one (then :func:`_table` looks
    closer).  ``flat_slices``: :data:`FLAT_SLICES` unless given."""
    n, ndim = len(batch), len(chunk_shape)
    flat = FLAT_SLICES if flat_slices is None else flat_slices
    try:
        # (a product's few NumPy calls cost more than reading a small batch's slices:
        # 9 chunks of two dimensions, 0.17 ms against 0.03 ms)
        cols = None if n * ndim <= flat else _product_columns(batch, ndim)
        if cols is None:
            cols = _flat_columns(batch, n, ndim)
            if cols is None:
                return None
        start, stop, per, out_start, out_stop = cols
    except (AttributeError, TypeError, ValueError):  # an int, None, an array...
        return None
    if not ((per > 0).all() and (per == per[0]).all()):
        return None
    step_row = per[0].tolist()
    step = per[0]
    count = (stop - start + step - 1) // step
    if not ((count >= 1).all() and (start >= 0).all() and (stop <= chunk_shape).all()
            and (out_start >= 0).all() and (out_stop - out_start == count).all()):
        return None
    complete = np.array([bool(item[4]) for item in batch], dtype=bool)
    return start, count, out_start, complete, step_row, [True] * ndim


def _slice_fields(sels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The starts, stops and steps (``None``: 1) of the slices ``sels``; an ``int`` or
    an array among them raises ``AttributeError``, a bound that is not an integer
    ``TypeError``."""
    return (_ints([s.start for s in sels]), _ints([s.stop for s in sels]),
            _ints([1 if s.step is None else s.step for s in sels]))


def _ints(values: list) -> np.ndarray:
    """``values`` (Python or NumPy integers) as int64; ``TypeError`` for anything else
    (``None``, a float: never rounded into a bound)."""
    a = np.array(values)
    if a.dtype.kind not in "iu":
        raise TypeError(f"slice bounds of {a.dtype}")
    return a.astype(np.int64, copy=False)


def _flat_columns(batch: list, n: int, ndim: int) -> tuple | None:
    """``(start, stop, step, out_start, out_stop)``, each ``(n, ndim)``, of the batch's
    chunk and output slices read one by one; ``None`` when they are not ``ndim`` per
    chunk or an output slice has a step."""
    # every slice of every chunk's selections in one list each, row by row: a pass per
    # attribute over flat lists (a nested list of tuples made into an array was slower,
    # and its garbage set off collections)
    sels = list(_chain.from_iterable([item[2] for item in batch]))
    outs = list(_chain.from_iterable([item[3] for item in batch]))
    if len(sels) != n * ndim or len(outs) != n * ndim:
        return None
    start, stop, per = (a.reshape(n, ndim) for a in _slice_fields(sels))
    out_start, out_stop, out_step = (a.reshape(n, ndim) for a in _slice_fields(outs))
    if (out_step != 1).any():
        return None
    return start, stop, per, out_start, out_stop


def _product_columns(batch: list, ndim: int) -> tuple | None:
    """:func:`_flat_columns` of a batch whose chunk selections, and output selections,
    are the C-order product of one sequence of slices per dimension, object for object:
    as zarr-python's basic and orthogonal indexers make them (``itertools.product`` of
    each dimension's projections, one slice object per chunk of a dimension).  Each
    distinct slice is read once; every chunk's selection is checked to be the product's
    by identity (a pass per dimension at C speed).  ``None`` when it is not such a
    product.  (A full read of 2116 chunks of two dimensions: 0.8 ms, where reading every
    slice took 2.5 ms, on a loaded machine.)"""
    n = len(batch)
    sels = _product([item[2] for item in batch], n, ndim)
    if sels is None:
        return None
    outs = _product([item[3] for item in batch], n, ndim)
    shape = tuple(len(seq) for seq in sels)
    if outs is None or tuple(len(seq) for seq in outs) != shape:
        return None

    def grid(fields: list[np.ndarray]) -> np.ndarray:
        # (dimension d's values along axis d of the chunk grid, every row of the batch)
        return np.stack([np.broadcast_to(f.reshape([-1 if e == d else 1 for e in range(ndim)]),
                                         shape).reshape(-1)
                         for d, f in enumerate(fields)], axis=1)

    chunk = [_slice_fields(seq) for seq in sels]
    out = [_slice_fields(seq) for seq in outs]
    if any((f[2] != 1).any() for f in out):
        return None
    return (grid([f[0] for f in chunk]), grid([f[1] for f in chunk]),
            grid([f[2] for f in chunk]), grid([f[0] for f in out]), grid([f[1] for f in out]))


def _product(rows: list, n: int, ndim: int) -> list[list] | None:
    """The sequences, one per dimension, whose C-order product is ``rows`` (``n`` tuples
    of ``ndim`` objects) object for object, or ``None``."""
    if set(map(len, rows)) != {ndim}:  # (a dropped dimension, not tuples)
        return None
    seqs = []
    block = n  # (the rows of one object of the dimension before)
    for d in range(ndim):
        col = [row[d] for row in rows]
        first = col[0]
        # (the rows of one object of this dimension: the first one's run)
        run = next((i for i in range(1, block) if col[i] is not first), block)
        if block % run:
            return None
        seq = col[0:block:run]
        # (each object ``run`` times, the whole once per object of the dimensions before)
        expected = list(_chain.from_iterable([o] * run for o in seq)) * (n // block)
        if not all(map(operator.is_, col, expected)):
            return None
        seqs.append(seq)
        block = run
    return seqs if block == 1 else None


def _table(batch: list, chunk_shape: tuple[int, ...]) -> tuple | str:
    """The batch's chunk and output selections as a projection's table: ``(local_start,
    local_count, out_start, complete, step, kept)`` (``kept``: the chunk's dimensions the
    output has, not dropped by an integer), or why they are not one."""
    ndim = len(chunk_shape)
    n = len(batch)
    local_start = np.zeros((n, ndim), dtype=np.int64)
    local_count = np.ones((n, ndim), dtype=np.int64)
    out_start = np.zeros((n, ndim), dtype=np.int64)
    complete = np.zeros(n, dtype=bool)
    step = [0] * ndim
    kept = [True] * ndim
    for r, (_getter, _spec, chunk_sel, out_sel, is_complete) in enumerate(batch):
        if not isinstance(chunk_sel, tuple) or len(chunk_sel) != ndim:
            return f"chunk selection {chunk_sel!r}"
        if not isinstance(out_sel, tuple):
            out_sel = (out_sel,)
        e = 0
        for d, s in enumerate(chunk_sel):
            if isinstance(s, slice):
                start, stop, st = s.indices(chunk_shape[d])
                if st < 1:
                    return f"chunk selection {chunk_sel!r}"
                if r == 0:
                    step[d] = st
                elif kept[d] is not True or step[d] != st:
                    return "chunk selections of several kinds"
                count = len(range(start, stop, st))
                if e >= len(out_sel):
                    return f"output selection {out_sel!r}"
                o = out_sel[e]
                e += 1
                if not (isinstance(o, slice) and o.step in (None, 1)
                        and o.start is not None and o.stop - o.start == count):
                    return f"output selection {out_sel!r}"
                local_start[r, d], local_count[r, d], out_start[r, d] = start, count, o.start
            elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
                if r == 0:
                    kept[d], step[d] = False, 1
                elif kept[d]:
                    return "chunk selections of several kinds"
                local_start[r, d] = int(s)
            else:
                return f"chunk selection of {type(s).__name__}"
        if e != len(out_sel):
            return f"output selection {out_sel!r}"
        complete[r] = bool(is_complete)
    return local_start, local_count, out_start, complete, step, kept


def _spec_key(spec: Any) -> tuple:
    """What zarrfast's chain for chunks of ``spec`` depends on (hashable)."""
    fill = np.asarray(spec.fill_value)
    return (tuple(int(s) for s in spec.shape), spec.dtype, fill.dtype.str, fill.tobytes(),
            getattr(spec.config, "order", "C"))


def _where(store: Any) -> Any:
    """Where a store's data is, as far as zarrfast's store of it depends on it: a
    ``LocalStore``'s directory now (zarr-python keeps a relative root relative to the
    working directory, and ``move`` changes it)."""
    root = getattr(store, "root", None)
    return None if root is None else os.path.abspath(root)


def _native(store: Any, where: Any = None) -> Store | None:
    """zarrfast's store of zarr-python's ``store`` (``LocalStore``: the same files;
    ``MemoryStore``: the same dict; ``ObjectStore``: the same obstore store), or ``None``
    for other stores, whose own async API is used: ``FsspecStore`` among them, since an
    asynchronous fsspec file system (as zarr-python makes them) keeps its session on the
    event loop it was first used on."""
    from zarr.storage import LocalStore as ZarrLocalStore
    from zarr.storage import MemoryStore as ZarrMemoryStore

    read_only = bool(getattr(store, "read_only", False))
    kind = type(store)
    if kind is ZarrLocalStore:
        return LocalStore(where if where is not None else _where(store), read_only=read_only)
    if kind is ZarrMemoryStore and isinstance(getattr(store, "_store_dict", None), dict):
        return MemoryStore(store._store_dict, read_only=read_only)
    if kind.__name__ == "ObjectStore" and kind.__module__.startswith("zarr.storage"):
        from zarrfast.storage.obstore import ObjectStore

        try:
            return ObjectStore(store.store, read_only=read_only)
        except ZarrfastError as e:  # (an obstore store zarrfast does not know)
            logger.debug("%r through its async API: %s", store, e)
    return None


#: an output of at least this many bytes that does not start on a cache line (NumPy's
#: large arrays start 16 bytes past a page) is read into an aligned buffer of zarrfast's,
#: then copied: the kernels write whole cache lines of an aligned output with streaming
#: stores.  A full read of a 128 MiB blosc array (64^3 chunks, 2 threads) took 37 ms into
#: zarrfast's own buffer or a page-aligned one, 88-103 ms into an ``np.empty`` one
ALIGNED_READ_BYTES = 2**22
#: batched codecs decoded too slowly for the aligned buffer to pay (see _read_rows)
SLOW_DECODES = frozenset({"gzip", "zlib"})


def _read_rows(store: Store, chain: Any, proj: Projection, keys: list[str],
               out: np.ndarray) -> list[int]:
    """Read the rows of ``proj`` (chunks ``keys`` of ``store``) into ``out``; the rows
    whose chunk (shard) is not stored."""
    inner = chain.inner if chain.kind == "sharded" else chain
    if (out.nbytes >= ALIGNED_READ_BYTES and out.ctypes.data % 64
            # (uncompressed chunks are read into place as they are: no gain; nor do
            # chunks whose decoding, not the memory, bounds the read: the copy back is
            # one thread's pass over the output, beside decoding that all threads share)
            and inner.bb and inner.batch_codec not in SLOW_DECODES
            # (the rows cover ``out`` whole: every byte of it is copied back)
            and int(np.prod(proj.local_count, axis=1).sum()) == out.size):
        target = _buffers.empty(out.shape, out.dtype, where="", what="the read's output",
                                aligned=True)
        missing = _read_rows(store, chain, proj, keys, target)
        np.copyto(out, target)
        return missing
    full = out.reshape(tuple(proj.sel.count.tolist()))
    plan = Plan(store, store.capabilities, "", chain, proj.sel, out=full, size=full.size)
    if chain.kind == "sharded":
        ShardRowsRead(plan, _by_shard(chain, proj, keys)).run()
        # a missing shard reads as the fill value; whether it exists is asked only where
        # zarr-python wants to know (3.4's results: one request per shard on object
        # stores, made concurrently there, as the shards' reads are)
        if not _GET_RESULTS:
            return []
        exists = [True] * len(keys)

        def ask(i: int) -> None:
            exists[i] = store.exists(keys[i])  # (each task its own item)

        if plan.caps.batched_gets:
            map_io(ask, range(len(keys)), io=plan.options.io_concurrency)
        else:
            for i in range(len(keys)):
                ask(i)
        return [i for i, e in enumerate(exists) if not e]
    reader = RowReader(proj, full, plan.caps)
    reader.missing = []
    choose_rows(READ_ROWS, plan, reader).run(plan, keys, reader)
    return reader.missing


def _write_rows(store: Store, chain: Any, proj: Projection, keys: list[str],
                value: np.ndarray, write_empty_chunks: bool) -> None:
    """Write ``value`` (0-d: one value) into the rows of ``proj`` (chunks ``keys`` of
    ``store``)."""
    if value.ndim == 0:
        full, scalar = None, value[()]
    else:  # (a strided or Fortran-order value is copied: the kernels take C order)
        full = np.ascontiguousarray(value).reshape(tuple(proj.sel.count.tolist()))
        scalar = None
    plan = Plan(store, store.capabilities, "", chain, proj.sel, value=full, scalar=scalar,
                write_empty_chunks=write_empty_chunks)
    if chain.kind == "sharded":
        ShardWrite(plan, _by_shard(chain, proj, keys)).run()
        return
    writer = RowWriter(proj, full, scalar, write_empty_chunks)
    choose_rows(WRITE_ROWS, plan, writer).run(plan, keys, writer)


async def _in_thread(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a thread of asyncio's, the event loop free meanwhile.  The engine's
    work cannot be stopped halfway: a cancelled caller waits for it to end, then is told
    it was cancelled, so that a cancelled write never lands after the caller's next one."""
    future = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(future)
            break
        except asyncio.CancelledError:
            if future.done():
                if future.cancelled() or future.exception() is None:
                    raise
                raise future.exception() from None  # type: ignore[misc]
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


async def _gather(items: Sequence[tuple[Any, Any]]) -> list[Any]:
    """The bytes of each ``(byte getter, prototype)`` (``None``: missing) as NumPy uint8
    arrays, fetched concurrently (at most zarr-python's ``async.concurrency`` at once)."""
    limit = asyncio.Semaphore(max(1, int(zarr.config.get("async.concurrency", 10) or 10)))

    async def one(getter: Any, prototype: Any) -> Any:
        async with limit:
            buf = await getter.get(prototype=prototype)
        return None if buf is None else buf.as_numpy_array()

    return list(await asyncio.gather(*(one(g, p) for g, p in items)))


async def _scatter(items: Sequence[tuple[Any, Any]]) -> None:
    """Store each ``(byte setter, Buffer)``, or delete its key for ``None``, concurrently
    (at most zarr-python's ``async.concurrency`` at once)."""
    limit = asyncio.Semaphore(max(1, int(zarr.config.get("async.concurrency", 10) or 10)))

    async def one(setter: Any, buf: Any) -> None:
        async with limit:
            if buf is None:
                await setter.delete()
            else:
                await setter.set(buf)

    await asyncio.gather(*(one(s, b) for s, b in items))


register_pipeline(CodecPipeline)
