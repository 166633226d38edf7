"""The codec pipeline: chunks from bytes to array regions and back.

:class:`PreparedChain` is built once per array from its metadata.  On the
*fast path* — any number of ``transpose`` codecs, the ``bytes`` codec, then
any bytes -> bytes codecs — a chunk is never materialised as a NumPy array:
the bytes -> bytes codecs decode into a per-thread scratch buffer of the
chunk's size, and one Cython ``copy_region`` call moves the selected region
into the output with the byte swap and the transpose (as permuted strides)
fused into the copy.  Writes run the same copy in the other direction.

Other codec chains take the *general path*: the codecs' own ``decode`` make a
native C-order chunk array, and the same copy kernel assembles it.

Which of the read functions here runs (:func:`read_single_chunk`, :func:`read_rows_files`,
:func:`read_rows_batched`, :func:`read_rows_tasks`) is the strategy table's choice
(:mod:`zarrfast.engine.strategies`); they run on the shared pool
(:mod:`zarrfast.concurrency`).
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Sequence
from typing import Any, cast

import numcodecs
import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs import BloscCodec, BytesCodec, CodecChain
from zarrfast.codecs.chain import accepts_limit
from zarrfast.codecs.compressors import GzipCodec, ZstdCodec
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.codecs.numcodecs_v3 import NumcodecsBytesBytesCodec
from zarrfast.concurrency import (
    WriteBehind,
    batch_count,
    cached_property,
    in_task,
    map_dynamic_into,
    map_io_then,
    map_unordered_into,
    share_with_io_thread,
)
from zarrfast.engine.plan import Plan
from zarrfast.engine.rmw import read_modify_write
from zarrfast.engine.selection import BasicSelection
from zarrfast.errors import (
    AllocationError,
    ChunkAllocationError,
    ChunkDecodeError,
    CodecError,
    ZarrfastError,
    add_context,
)
from zarrfast.kernels import buffers as _buffers
from zarrfast.kernels import encode as _encode
from zarrfast.metadata.dtype import fill_bytes
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.storage import Store, StoreCapabilities

__all__ = ["PreparedChain", "RowReader", "RowWriter", "read_rows_batched", "read_rows_files",
           "read_rows_tasks", "read_single_chunk", "single_chunk_coords", "write_rows",
           "write_rows_batched", "write_shards_whole"]


def _c_strides(shape: Sequence[int], itemsize: int) -> list[int]:
    strides = [0] * len(shape)
    acc = itemsize
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    return strides


class _Scratch(threading.local):
    buf: np.ndarray | None = None
    batch: np.ndarray | None = None
    encoded: np.ndarray | None = None  # compressed chunks of a write, until stored
    encoded1: np.ndarray | None = None  # (the other one, a write whose I/O runs behind)
    shard: np.ndarray | None = None  # a whole shard's bytes, inner chunks packed, until stored
    shard1: np.ndarray | None = None  # (the other one, a write whose I/O runs behind)
    gather: np.ndarray | None = None  # whole chunks of a write, before compression
    decoder: Any = None  # this thread's batched decoder
    encoder: Any = None  # this thread's batched encoder (zstd, gzip, zlib)


class PreparedChain:
    """Everything needed to decode/encode one array's chunks, computed once.

    Attributes
    ----------
    chunk_strides
        Byte strides, per *logical* chunk dimension, into a decoded chunk
        buffer.  On the fast path they are the stored (transposed) layout's
        strides permuted back; on the general path C strides.
    swap_unit
        Byte-swap unit applied while copying (1 = none).
    fill_chunk_item
        The fill value as one item in the chunk buffer's byte order.
    """

    #: the chain kind (:class:`~zarrfast.engine.plan.Chain`)
    kind = "regular"

    def __init__(self, metadata: ArrayMetadata, codecs: CodecChain | None = None) -> None:
        self.metadata = metadata
        #: the array's codec chain (which fast path applies is its answer)
        self.codecs = codecs = CodecChain.from_metadata(metadata) if codecs is None else codecs
        #: no valid stored chunk is larger (see ``CodecChain.stored_limit``)
        self.stored_limit = codecs.stored_limit
        dt = metadata.type_info
        assert dt is not None  # (ArrayMetadata derives it)
        self.data_type = dt
        self.dtype = dt.dtype
        self.itemsize = dt.itemsize
        self.chunk_shape = tuple(metadata.chunks)
        self.chunk_shape_arr = np.array(self.chunk_shape, dtype=np.int64)
        self.ndim = len(self.chunk_shape)
        self.chunk_nbytes = math.prod(self.chunk_shape) * self.itemsize
        self.aa, self.ab, self.bb = list(codecs.aa), codecs.ab, list(codecs.bb)
        self.fast = codecs.fast
        self._set_layout(codecs, metadata.effective_fill_value)
        self._fill_chunk_item_arr = np.frombuffer(self.fill_chunk_item, dtype=np.uint8)
        self._fill_native_arr = np.frombuffer(self.fill_native, dtype=np.uint8)
        self._scratch = _Scratch()
        # the innermost bytes->bytes codec may decode straight into a buffer
        # (unless it is faster at making its own buffer: zstd through python-zstandard,
        # which releases the GIL; copy_region then reads from that buffer)
        self._decode_into = bool(self.bb) and self.fast and not getattr(
            self.bb[0], "decodes_own_buffer", False)
        # the others get a bound on their output (decompression bombs): the chunk's
        # bytes (the innermost on the fast path), else room for what an array -> bytes
        # codec adds (a shard's index and checksums, variable-length headers)
        self._bb_limit = (self.chunk_nbytes if self.fast and len(self.bb) == 1
                          else codecs.decode_limit)
        # (a list in decode order: third-party codecs need not be hashable)
        self._bb_limited = [accepts_limit(c) for c in reversed(self.bb)]
        #: zstd or blosc chunks with nothing else to undo but a transpose or byte swap
        #: are decoded and placed many at a time, without the GIL (``decode_regions``)
        self.batch_codec = (codecs.batch_codec if codecs.batch_codec in _kernels.BATCH_CODECS
                            else None)
        # uncompressed chunks stored as they are: small box reads place them with the
        # batched decoder too (codec "none": read and placed in one call, no GIL)
        self._raw_boxes = self.fast and not self.bb and _kernels.ChunkDecoder is not None
        #: a box read may decode a whole chunk straight into its block of the output
        #: (when that block is contiguous and its bytes need no swap: the kernel checks)
        self.box_direct = self.fast and self.permutation == tuple(range(self.ndim))
        #: ``(store, path, where)``: the last store and path box reads made the chunks'
        #: file paths for, and ``boxes._file_prefix``'s answer
        self.box_files_prefix: tuple | None = None
        #: room for one stored chunk in a batch read (the compressors' worst-case
        #: expansion of incompressible data is far below this; a larger file is read
        #: on its own)
        self.stored_cap = self.chunk_nbytes + self.chunk_nbytes // 64 + 4096
        #: ``BloscCodec.compress_settings`` when blosc is the only bytes -> bytes codec of
        #: a fast-path chain: whole chunks are then copied out of a written array and
        #: compressed many at a time without the GIL (``blosc_compress_regions``)
        self.blosc_settings = None
        if (self.fast and len(self.bb) == 1 and type(self.bb[0]) is BloscCodec
                and _kernels.blosc_compress_regions is not None and self.chunk_nbytes):
            self.blosc_settings = self.bb[0].compress_settings()
        #: ``(codec, level, checksum)`` of the ``ChunkEncoder`` that makes the bytes of the
        #: one bytes -> bytes codec of a fast-path chain (zstd, gzip, zlib): whole chunks
        #: are then copied out of a written array and compressed many at a time without
        #: the GIL (``ChunkEncoder.compress_regions``), as blosc ones are
        self.encode_settings = encode_settings(self)

    def _set_layout(self, codecs: CodecChain, fill_value: Any) -> None:
        """How a decoded chunk's bytes lie: the permutation and byte strides of its
        logical dimensions, the byte-swap unit, and the fill value as one item in its
        byte order (``fill_value``: zeros for a v2 null)."""
        dt = self.data_type
        self.fill_native = fill_bytes(dt, fill_value)
        self.permutation = tuple(range(self.ndim))
        self.chunk_strides = np.array(_c_strides(self.chunk_shape, self.itemsize), np.int64)
        self.swap_unit = 1
        self.fill_chunk_item = self.fill_native
        if not self.fast:
            return
        q = codecs.permutation  # encoded = chunk.transpose(q)
        self.permutation = q
        stored_shape = [self.chunk_shape[q[k]] for k in range(self.ndim)]
        stored_strides = _c_strides(stored_shape, self.itemsize)
        logical = [0] * self.ndim
        for k in range(self.ndim):
            logical[q[k]] = stored_strides[k]
        self.chunk_strides = np.array(logical, dtype=np.int64)
        ab = self.ab
        assert isinstance(ab, BytesCodec)  # (a fast chain's: CodecChain.fast)
        self.swap_unit = ab.swap_unit(dt)
        if self.swap_unit > 1:
            order = "<" if ab.endian == "little" else ">"
            self.fill_chunk_item = fill_bytes(dt, fill_value, byteorder=order)

    # -- decoding -----------------------------------------------------------------
    def chunk_buffer(self, key: str | None = None, *, what: str = "a chunk buffer",
                     error: type[AllocationError] = AllocationError) -> np.ndarray:
        """A fresh flat uint8 buffer of one chunk's bytes; out of memory, an
        :class:`AllocationError` naming the chunk ``key``, the bytes, the chunk's shape
        and dtype."""
        return _buffers.empty(self.chunk_nbytes, np.uint8,
                              where=f"chunk {key!r}" if key is not None else "", what=what,
                              logical=(self.chunk_shape, self.dtype), error=error)

    def _scratch_buffer(self, key: str | None = None) -> np.ndarray:
        buf = self._scratch.buf
        if buf is None or buf.nbytes != self.chunk_nbytes:
            self._scratch.buf = None  # (a failed allocation leaves no stale buffer)
            buf = self.chunk_buffer(key, what="a buffer to decode the chunk into",
                                    error=ChunkAllocationError)
            self._scratch.buf = buf
        return buf

    @property
    def box_codec(self) -> str | None:
        """What :meth:`batch_decoder` decodes: the ``batch_codec``, else ``"none"`` for
        uncompressed chunks stored as they are (their bytes are placed as read), else
        ``None`` (box reads take the general path)."""
        if self.batch_codec is not None:
            return self.batch_codec
        return "none" if self._raw_boxes else None

    def batch_decoder(self) -> Any:
        """This thread's batched decoder (chains with a ``box_codec`` only)."""
        dec = self._scratch.decoder
        if dec is None:
            dec = self._scratch.decoder = _kernels.ChunkDecoder(self.box_codec,
                                                                self.chunk_nbytes)
        return dec

    def _batch_buffer(self, n: int, slot: int | None = None) -> np.ndarray:
        """A per-thread scratch buffer for ``n`` chunks of ``slot`` bytes (default the
        chunk's size; reused, grows as needed)."""
        return self._thread_buffer("batch", n * (self.chunk_nbytes if slot is None else slot),
                                   f"a buffer for a batch of {n} chunks")

    def _gather_buffer(self, run: int) -> np.ndarray:
        """This thread's buffer for ``blosc_compress_regions`` to gather chunks into:
        room for the ``run`` chunks a row of the grid has in the written block, or as
        many as fit in GATHER_BYTES (at most GATHER_CHUNKS), so that chunks next to each
        other along the last dimension are copied out of the value together, reading its
        rows in order."""
        n = max(1, min(run, GATHER_CHUNKS, GATHER_BYTES // max(self.chunk_nbytes, 1)))
        return self._thread_buffer("gather", n * self.chunk_nbytes,
                                   "a buffer to gather chunks into")

    def chunk_encoder(self) -> Any:
        """This thread's batched encoder (chains with ``encode_settings`` only)."""
        enc = self._scratch.encoder
        if enc is None:
            assert self.encode_settings is not None
            enc = self._scratch.encoder = _encode.ChunkEncoder(*self.encode_settings)
        return enc

    def _encoded_buffer(self, nbytes: int, which: int = 0) -> np.ndarray:
        """A per-thread scratch buffer of ``nbytes`` for the compressed chunks of a
        write (reused, grows as needed); ``which``: 0 or 1, two buffers, one encoded
        into while the store writes the other (:class:`~zarrfast.concurrency.WriteBehind`)."""
        return self._thread_buffer("encoded1" if which else "encoded", nbytes,
                                   "a buffer for compressed chunks")

    def _thread_buffer(self, name: str, need: int, what: str) -> np.ndarray:
        """This thread's scratch buffer ``name`` (an attribute of ``self._scratch``),
        grown to at least ``need`` bytes; its first ``need`` bytes.  ``what`` names it
        when memory runs out."""
        buf = getattr(self._scratch, name)
        if buf is None or buf.nbytes < need:
            setattr(self._scratch, name, None)  # (the old one goes before the new one)
            buf = _buffers.empty(need, np.uint8, where="",
                                 what=f"{what} of shape {self.chunk_shape} and dtype "
                                      f"{self.dtype}", reuse=True)
            setattr(self._scratch, name, buf)
        return buf[:need]

    def decode(
        self, raw: Any, key: str, *, writable: bool = False, into: np.ndarray | None = None
    ) -> np.ndarray:
        """Decode a stored chunk into a flat uint8 buffer in chunk-buffer layout.

        With ``writable`` the result is a fresh array the caller may keep and
        modify; otherwise it may be a per-thread scratch buffer valid until
        this thread's next call.  With ``into`` (a flat uint8 view of
        ``chunk_nbytes`` bytes, e.g. the chunk's place in the output) the chunk
        is decoded there, straight from the codec where it can, and ``into``
        is returned.
        """
        data = raw
        target = into  # a buffer the innermost codec should fill
        try:
            if target is None and self._decode_into:
                target = (self.chunk_buffer(key, what="a buffer to decode the chunk into",
                                            error=ChunkAllocationError) if writable
                          else self._scratch_buffer(key))
            for i, c in enumerate(reversed(self.bb)):
                if i == len(self.bb) - 1 and self._decode_into:
                    data = c.decode(data, out=target)
                elif self._bb_limited[i]:
                    # no output buffer: bounded by what the chunk can decode to
                    # (accepts_limit said it takes limit=, which BytesBytesCodec does not)
                    data = c.decode(data, limit=self._bb_limit)  # type: ignore[call-arg]
                else:
                    data = c.decode(data)
            if not self.fast:
                data = self._decode_general(data, key)
        except MemoryError as e:  # (first: an AllocationError is a ZarrfastError too)
            if isinstance(e, ChunkAllocationError):
                raise  # a buffer of ours, named already
            # a codec's own buffer: a ChunkDecodeError (as before) and a MemoryError
            raise _buffers.allocation_error(
                f"chunk {key!r}", "the decoded chunk", self.chunk_shape, self.dtype,
                ChunkAllocationError,
                detail=f" ({len(memoryview(raw).cast('B'))} stored bytes)") from None
        except ChunkDecodeError as e:
            add_context(e, f"chunk {key!r}")
            raise
        except CodecError as e:
            raise ChunkDecodeError(f"chunk {key!r}: {e}") from None
        except (ValueError, RuntimeError, TypeError, OSError, EOFError) as e:
            raise ChunkDecodeError(f"chunk {key!r}: cannot decode: {e}") from None
        if isinstance(data, np.ndarray):
            arr = data.reshape(-1).view(np.uint8)
        else:
            arr = np.frombuffer(data, dtype=np.uint8)
        if arr.nbytes != self.chunk_nbytes:
            if not self.bb:  # nothing was decoded: the stored bytes are the chunk
                raise _raw_size_error(self, key, arr.nbytes)
            raise ChunkDecodeError(
                f"chunk {key!r}: decoded to {arr.nbytes} bytes, expected {self.chunk_nbytes} "
                f"bytes (chunk shape {list(self.chunk_shape)} of {self.data_type.name})"
            )
        if into is not None:
            if not np.shares_memory(arr, into):
                into[...] = arr
            return into
        if writable and (self.bb and self._decode_into and np.shares_memory(arr, target)):
            return arr  # freshly allocated above
        if writable:
            arr = arr.copy()  # never modify a buffer the store or a codec may still own
        return arr

    def _decode_general(self, data: Any, key: str) -> np.ndarray:
        shape = self.chunk_shape
        arr = self.codecs.decode_array(data, fill_value=self.metadata.fill_value, key=key)
        if arr.shape != shape:
            raise ChunkDecodeError(
                f"chunk {key!r}: decoded to shape {arr.shape}, expected {shape}"
            )
        return np.ascontiguousarray(arr, dtype=self.dtype).reshape(-1).view(np.uint8)

    # -- encoding -----------------------------------------------------------------
    def encode(self, buf: np.ndarray, *, write_empty_chunks: bool = False) -> Any:
        """Encode a chunk buffer (chunk-buffer layout) to the bytes to store.

        ``write_empty_chunks`` matters only to codecs holding chunks of their own
        (sharding): whether their inner chunks equal to the fill value are kept."""
        if self.fast:
            data: Any = buf
        else:
            data = self.codecs.encode_array(buf.view(self.dtype).reshape(self.chunk_shape),
                                            fill_value=self.metadata.fill_value,
                                            write_empty_chunks=write_empty_chunks)
        return self.codecs.encode_bytes(data)

    def new_fill_chunk(self, key: str | None = None) -> np.ndarray:
        buf = self.chunk_buffer(key)
        self.fill_chunk(buf)
        return buf

    def fill_chunk(self, buf: np.ndarray) -> None:
        _kernels.fill_region(
            buf,
            0,
            np.array([self.itemsize], dtype=np.int64),
            np.array([buf.nbytes // self.itemsize], dtype=np.int64),
            self._fill_chunk_item_arr,
        )

    def view(self, buf: np.ndarray) -> np.ndarray:
        """A decoded chunk buffer as an array of the logical chunk shape (a strided view
        in the stored byte order; writes through it change ``buf``)."""
        dtype = self.dtype
        if self.swap_unit > 1:  # (a fast chain's: a BytesCodec)
            dtype = dtype.newbyteorder(
                "<" if cast(BytesCodec, self.ab).endian == "little" else ">")
        return np.ndarray(self.chunk_shape, dtype=dtype, buffer=buf,
                          strides=tuple(int(s) for s in self.chunk_strides))

    @property
    def fill_scalar(self) -> Any:
        return self.metadata.effective_fill_value

    def is_fill(self, buf: np.ndarray) -> bool:
        return bool(_kernels.is_uniform(buf, self._fill_chunk_item_arr))

    def any_fill(self, buf: np.ndarray, offsets: np.ndarray) -> bool:
        """Whether any of the stored chunks at byte ``offsets`` of ``buf`` equals the fill
        value.  Only chunks whose first item is the fill value can: those are looked at
        whole, the rest cost one vectorised comparison for all of them."""
        candidates = offsets
        for k, byte in enumerate(self._fill_chunk_item_arr.tolist()):
            candidates = candidates[buf[candidates + k] == byte]
            if not candidates.size:
                return False
        nb = self.chunk_nbytes
        return any(self.is_fill(buf[o:o + nb]) for o in candidates.tolist())

    def any_fill_run(self, buf: np.ndarray, start: int, n: int) -> bool:
        """:meth:`any_fill` of ``n`` stored chunks back to back from byte ``start``: their
        first items compared in one strided view."""
        nb, item = self.chunk_nbytes, self._fill_chunk_item_arr
        heads = buf[start:start + n * nb].reshape(n, nb)[:, :len(item)]
        candidates = np.flatnonzero((heads == item).all(axis=1))
        return any(self.is_fill(buf[o:o + nb]) for o in (start + candidates * nb).tolist())


# -- selections ------------------------------------------------------------------


def chunk_keys(metadata: ArrayMetadata, path: str, coords: np.ndarray) -> list[str]:
    """Store keys of the chunks at ``coords`` (rows of grid coordinates), in bulk."""
    cke = metadata.chunk_key_encoding
    base = f"{path}/" if path else ""
    if coords.shape[1] == 0:
        return [base + cke.encode(())] * coords.shape[0]
    return _kernels.format_chunk_keys(
        np.ascontiguousarray(coords, dtype=np.int64), base + cke.key_prefix(), cke.separator
    )


class Projection:
    """A selection projected onto a grid of ``chain.chunk_shape`` chunks: one row per
    touched chunk (see :func:`zarrfast.kernels.project`)."""

    def __init__(self, array_shape: tuple[int, ...], chain: PreparedChain,
                 sel: BasicSelection) -> None:
        self.array_shape = np.array(array_shape, dtype=np.int64)
        (self.coords, self.local_start, self.local_count, self.out_start,
         self.complete) = _kernels.project(
            self.array_shape, chain.chunk_shape_arr, sel.start, sel.step, sel.count,
        )
        self.nrows = self.coords.shape[0]
        self.chain = chain
        self.sel = sel

    @cached_property
    def row_chunks(self) -> int:
        """How many chunks a row of the touched grid has: the chunks along the last
        dimension, consecutive rows of the projection (C order)."""
        if self.nrows == 0 or self.coords.shape[1] == 0:
            return 1
        # the distinct last coordinates (a step may skip chunks); not np.unique, whose
        # first call imports numpy.ma (15-20 ms of the first write of a process)
        last = np.sort(self.coords[:, -1])
        return 1 + int(np.count_nonzero(last[1:] != last[:-1]))

    @cached_property
    def edge(self) -> np.ndarray:
        """Rows whose chunk reaches past the array's end (its padding holds the fill
        value); only writes need it."""
        return np.any((self.coords + 1) * self.chain.chunk_shape_arr > self.array_shape, axis=1)


class RowReader:
    """Moves selected elements from decoded chunks into ``out`` (C-contiguous, shape
    ``sel.full_shape``), one projection row at a time."""

    def __init__(self, proj: Projection, out: np.ndarray,
                 caps: StoreCapabilities | None = None) -> None:
        chain = proj.chain
        self.proj = proj
        self.chain = chain
        if not out.flags.c_contiguous:  # pragma: no cover - callers pass C-contiguous buffers
            raise ZarrfastError("internal: output buffer must be C-contiguous")
        self.out_flat = out.reshape(-1).view(np.uint8)
        self.out_strides = np.array(out.strides, dtype=np.int64)
        self.src_strides = chain.chunk_strides * proj.sel.step
        self.src_offsets = proj.local_start @ chain.chunk_strides
        self.dst_offsets = proj.out_start @ self.out_strides
        #: uncompressed chunks are read from the store straight into place
        self.raw_into = (caps is not None and caps.reads_into and chain.fast
                         and not chain.bb)
        #: zstd/blosc chunks are decoded a batch at a time (``decode_stored``), and
        #: read a batch at a time from stores that read into buffers (``decode_batch``)
        self.batch_decode = chain.batch_codec is not None
        self.read_decode = caps is not None and caps.reads_into and self.batch_decode
        self.direct = _direct_rows(chain, proj.sel, proj.local_count, out.shape,
                                   into=chain._decode_into or self.raw_into or self.batch_decode)
        self._placement: _kernels.Placement | None = None
        #: the rows whose chunk is not stored (read as the fill value) are appended here
        #: when it is a list (zarr-python's pipeline reports them); ``None``: not kept
        self.missing: list[int] | None = None

    def placement(self) -> Any:
        """Where each row's chunk goes, checked once (``kernels.Placement``, made on
        first use: the batched decoders and ``ShardFiles`` take it, or parts of it)."""
        if self._placement is None:
            chain = self.chain
            self._placement = _kernels.Placement(
                chain.chunk_nbytes, self.src_offsets, self.src_strides, self.out_flat,
                self.dst_offsets, self.out_strides, self.proj.local_count, chain.itemsize,
                chain.swap_unit, self._direct_range(0, self.proj.nrows))
        return self._placement

    def read_batch(self, rows: range, store: Store, keys: Sequence[str]) -> None:
        """Read the uncompressed chunks of ``rows`` (``raw_into``) with one
        ``store.read_many_into`` call for the chunks contiguous in the output (read in
        place) and one for the others (read into a scratch buffer, then moved by one
        ``copy_regions`` call)."""
        chain = self.chain
        nb = chain.chunk_nbytes
        rows_arr = np.arange(rows.start, rows.stop, dtype=np.int64)
        if self.direct is not None:
            flags = self.direct[rows.start:rows.stop]
            direct, rows_arr = rows_arr[flags], rows_arr[~flags]
            if direct.size:
                sizes = store.read_many_into([keys[i] for i in direct.tolist()],
                                             self.out_flat, self.dst_offsets[direct], nb)
                self._check_sizes(direct, sizes, keys)
        if not rows_arr.size:
            return
        scratch = chain._batch_buffer(rows_arr.size)
        slots = np.arange(rows_arr.size, dtype=np.int64) * nb
        sizes = store.read_many_into([keys[i] for i in rows_arr.tolist()], scratch, slots, nb)
        ok = self._check_sizes(rows_arr, sizes, keys)
        # (a large output is written once and not read back soon: streamed stores)
        _kernels.copy_regions(
            scratch, slots[ok] + self.src_offsets[rows_arr[ok]], self.src_strides,
            self.out_flat, self.dst_offsets[rows_arr[ok]], self.out_strides,
            self.proj.local_count[rows_arr[ok]], chain.itemsize, chain.swap_unit,
            self.out_flat.nbytes >= _kernels.stream_min(),
        )

    def decode_batch(self, rows: range, store: Store, keys: Sequence[str]) -> None:
        """Read and decode the compressed chunks of ``rows`` into place with one kernel
        call: ``decode_files`` when the store gives the files' paths, else one
        ``store.read_many_into`` call and ``decode_stored``.  Chunks it cannot take
        (missing, too large, or not decoding cleanly) go the per-chunk way, which
        fills them or raises naming the key."""
        chain = self.chain
        lo, hi = rows.start, rows.stop
        names = keys[lo:hi]
        files = store.file_paths(names)
        if files is not None:
            root, paths = files
            # (the rows are a range: views of the projection's tables, no copies)
            status, _sizes, _errors = chain.batch_decoder().decode_files(
                paths, self.placement().part(lo, hi), root=root)
            if not status.any():
                return
            rows_arr = np.arange(lo, hi, dtype=np.int64)
            for j in np.flatnonzero(status).tolist():
                # missing: the fill value; else read again by the store, which raises
                # for a file it cannot read (or follows a link on its path inside the
                # root), and decoded (or refused, naming the key)
                raw: bytes | np.ndarray | None = (
                    None if status[j] == _kernels.NO_DATA
                    else store.get_limited(names[j], chain.stored_limit))
                self.read(int(rows_arr[j]), raw, names[j])
            return
        rows_arr = np.arange(lo, hi, dtype=np.int64)
        cap = chain.stored_cap
        scratch = chain._batch_buffer(rows_arr.size, cap)
        slots = np.arange(rows_arr.size, dtype=np.int64) * cap
        sizes = store.read_many_into(names, scratch, slots, cap, exact=False)
        big = sizes > cap  # not read: too large for a slot
        for j in self.decode_stored(rows_arr, scratch, slots, np.where(big, -1, sizes)):
            n = int(sizes[j])
            if big[j]:
                raw = store.get_limited(names[j], chain.stored_limit)
            elif n < 0:
                raw = None  # missing: the fill value
            else:
                raw = scratch[int(slots[j]):int(slots[j]) + n]
            self.read(int(rows_arr[j]), raw, names[j])  # raises naming the key, or decodes

    def _direct_range(self, lo: int, hi: int) -> np.ndarray:
        """Whether rows ``lo`` to ``hi`` decode straight into the output (uint8 flags, a
        view when it can)."""
        if self.direct is None:
            return np.zeros(hi - lo, dtype=np.uint8)
        return self.direct[lo:hi].view(np.uint8)

    def decode_stored(self, rows: np.ndarray, src: np.ndarray, offsets: np.ndarray,
                      sizes: np.ndarray) -> list[int]:
        """Decode the compressed chunks of ``rows``, stored at ``offsets`` (``sizes`` bytes,
        negative: none) in ``src``, into place in one ``decode_regions`` call.  Returns
        the positions in ``rows`` of the chunks it did not place: those without bytes
        and those that do not decode cleanly (the per-chunk path says why)."""
        chain = self.chain
        status = chain.batch_decoder().decode_regions(
            src, offsets, sizes, self.placement().take(rows))
        return status.nonzero()[0].tolist()  # (one C call: any() went through Python)

    def _check_sizes(self, rows: np.ndarray, sizes: np.ndarray, keys: Sequence[str]
                     ) -> np.ndarray:
        """Fill the rows of missing chunks, raise for chunks of the wrong size; the
        mask of rows that were read."""
        chain = self.chain
        ok = sizes == chain.chunk_nbytes
        if ok.all():
            return ok
        for j in np.flatnonzero(~ok).tolist():
            i = int(rows[j])
            if sizes[j] != -1:
                raise _raw_size_error(chain, keys[i], int(sizes[j]))
            if self.missing is not None:
                self.missing.append(i)
            _kernels.fill_region(self.out_flat, int(self.dst_offsets[i]), self.out_strides,
                                 self.proj.local_count[i], chain._fill_native_arr)
        return ok

    def read(self, i: int, raw: Any, key: str) -> None:
        """Decode stored chunk ``raw`` (``None``: missing -> fill value) into row ``i``."""
        chain = self.chain
        region = self.proj.local_count[i]
        if raw is None:
            _kernels.fill_region(self.out_flat, int(self.dst_offsets[i]), self.out_strides,
                                 region, chain._fill_native_arr)
            if self.missing is not None:
                self.missing.append(i)
            return
        if self.direct is not None and self.direct[i]:
            off = int(self.dst_offsets[i])
            chain.decode(raw, key, into=self.out_flat[off:off + chain.chunk_nbytes])
            return
        buf = chain.decode(raw, key)
        _kernels.copy_region(
            buf, int(self.src_offsets[i]), self.src_strides,
            self.out_flat, int(self.dst_offsets[i]), self.out_strides,
            region, chain.itemsize, chain.swap_unit,
        )


class RowWriter:
    """Produces the new encoded bytes of a chunk touched by a write: ``value``
    (C-contiguous, shape ``sel.full_shape``) or ``scalar`` over projection rows."""

    def __init__(self, proj: Projection, value: np.ndarray | None, scalar: Any,
                 write_empty_chunks: bool) -> None:
        chain = proj.chain
        self.proj = proj
        self.chain = chain
        self.write_empty_chunks = write_empty_chunks
        self.dst_strides = chain.chunk_strides * proj.sel.step
        self.dst_offsets = proj.local_start @ chain.chunk_strides
        if value is not None:
            self.value_flat: np.ndarray | None = value.reshape(-1).view(np.uint8)
            self.value_strides = np.array(value.strides, dtype=np.int64)
            self.src_offsets = proj.out_start @ self.value_strides
            self.scalar_item = None
        else:
            self.value_flat = None
            item = np.asarray(scalar, dtype=chain.dtype)
            if chain.swap_unit > 1:  # (a fast chain's: a BytesCodec)
                item = item.astype(chain.dtype.newbyteorder(
                    "<" if cast(BytesCodec, chain.ab).endian == "little" else ">"))
            self.scalar_item = np.frombuffer(item.tobytes(), dtype=np.uint8)

    def needs_old(self, i: int) -> bool:
        """Whether row ``i`` keeps some old elements (so the stored chunk must be read)."""
        return not self.proj.complete[i]

    @cached_property
    def compressible(self) -> np.ndarray | None:
        """Rows whose chunk :meth:`compress_whole` encodes: written whole from ``value``,
        inside the array, on a chain with ``blosc_settings`` or ``encode_settings``;
        ``None``: no row."""
        proj, chain = self.proj, self.chain
        if (chain.blosc_settings is None and chain.encode_settings is None
                or self.value_flat is None):
            return None
        rows = proj.complete & ~proj.edge & (self.dst_offsets == 0)
        return rows if rows.any() else None

    @cached_property
    def stored_layout(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(strides, shape)`` of a whole chunk's stored bytes read out of ``value``
        (stored dim ``k`` is the chunk's dim ``permutation[k]``) when a chunk is stored as
        its bytes (no compression, no byte swap) and its last stored dim is contiguous
        in ``value``; ``None`` otherwise."""
        chain = self.chain
        if (self.value_flat is None or not chain.fast or chain.bb or chain.swap_unit != 1
                or chain.ndim == 0):
            return None
        q = list(chain.permutation)
        strides = np.ascontiguousarray(self.value_strides[q])
        shape = np.ascontiguousarray(chain.chunk_shape_arr[q])
        return (strides, shape) if int(strides[-1]) == chain.itemsize else None

    @cached_property
    def stored_whole(self) -> np.ndarray | None:
        """Rows whose chunk's stored bytes are a region of ``value`` (written whole from
        it, inside the array, on a chain with a :attr:`stored_layout`): a store with
        ``fast_set_regions`` writes them from there; ``None``: no row."""
        proj = self.proj
        if self.stored_layout is None:
            return None
        rows = proj.complete & ~proj.edge & (self.dst_offsets == 0)
        return rows if rows.any() else None

    def store_whole(self, store: Store, rows: np.ndarray, keys: Sequence[str],
                    gone: list) -> None:
        """Write the chunks of ``rows`` (all :attr:`stored_whole`) straight from
        ``value`` with one ``store.set_regions``; the keys of chunks equal to the fill
        value (unless empty chunks are written) are appended to ``gone``."""
        layout, value_flat = self.stored_layout, self.value_flat
        assert layout is not None and value_flat is not None  # (stored_whole's rows)
        strides, shape = layout
        chain = self.chain
        skipped = store.set_regions(
            [keys[i] for i in rows.tolist()], value_flat, self.src_offsets[rows],
            strides, shape, chain.itemsize,
            fill=None if self.write_empty_chunks else chain._fill_chunk_item_arr)
        gone.extend(keys[i] for i in rows[skipped].tolist())

    def compress_whole(self, rows: np.ndarray, keys: Sequence[str], new: list, gone: list,
                       which: int = 0) -> None:
        """The chunks of ``rows`` (all :attr:`compressible`) copied out of ``value`` and
        compressed by one kernel call, into a per-thread buffer: ``(key, bytes)`` appended
        to ``new``, or the key to ``gone`` for a chunk equal to the fill value (unless
        empty chunks are written).  The bytes are views of that buffer, valid until this
        thread's next call with the same ``which`` (0 or 1: two buffers): hand them to a
        store that ``copies_values`` before that."""
        blobs = self.compressed(rows, keys[int(rows[0])], which)
        for i, blob in zip(rows.tolist(), blobs, strict=True):
            if blob is None:
                gone.append(keys[i])
            else:
                new.append((keys[i], blob))

    @cached_property
    def swapped_whole(self) -> np.ndarray | None:
        """Rows whose chunk is stored uncompressed in the other byte order (a BytesCodec
        of the other endianness, nothing else), written whole from ``value``, inside
        the array: :meth:`swap_whole` copies a batch of them by one kernel call;
        ``None``: no row."""
        chain, proj = self.chain, self.proj
        if self.value_flat is None or not chain.fast or chain.bb or chain.swap_unit <= 1:
            return None
        rows = proj.complete & ~proj.edge & (self.dst_offsets == 0)
        return rows if rows.any() else None

    def swap_whole(self, rows: np.ndarray, keys: Sequence[str], new: list, gone: list,
                   which: int = 0) -> None:
        """The chunks of ``rows`` (all :attr:`swapped_whole`) copied out of ``value``,
        byte-swapped, by one ``copy_regions`` call into this thread's buffer ``which``
        (the store is done with it when ``set_many`` returns): ``(key, bytes)`` appended
        to ``new``, or the key to ``gone`` for a chunk equal to the fill value (unless
        empty chunks are written).  A full write of a 128 MiB big-endian array (32^3
        chunks, 2 threads) took 123.6 ms of CPU (median of 9), 142.5 chunk by chunk."""
        chain = self.chain
        nb, n = chain.chunk_nbytes, len(rows)
        buf = chain._encoded_buffer(n * nb, which)
        _kernels.copy_regions(
            self.value_flat, self.src_offsets[rows], self.value_strides,
            buf, np.arange(n, dtype=np.int64) * nb, self.dst_strides,
            self.proj.local_count[rows], chain.itemsize, chain.swap_unit)
        for k, i in enumerate(rows.tolist()):
            chunk = buf[k * nb:(k + 1) * nb]
            if not self.write_empty_chunks and chain.is_fill(chunk):
                gone.append(keys[i])
            else:
                new.append((keys[i], chunk))

    def encode_whole(self, rows: np.ndarray, shard: str) -> dict[int, Any]:
        """The rows among ``rows`` (inner chunks of the shard ``shard``, named in an
        error) that :attr:`compressible` marks, compressed by one kernel call per batch
        of at most WRITE_BATCH chunks and WRITE_BATCH_BYTES: row -> its stored bytes (the
        caller may keep them), or ``None`` for a chunk equal to the fill value (unless
        empty chunks are written)."""
        fast = self.compressible
        if fast is None:
            return {}
        todo = rows[fast[rows]]
        per = max(1, min(WRITE_BATCH, WRITE_BATCH_BYTES // max(self.chain.chunk_nbytes, 1)))
        done: dict[int, Any] = {}
        for lo in range(0, todo.size, per):
            part = todo[lo:lo + per]
            for r, blob in zip(part.tolist(), self.compressed(part, shard), strict=True):
                done[r] = None if blob is None else bytes(blob)  # (the buffer is reused)
        return done

    def compressed(self, rows: np.ndarray, first: str, which: int = 0) -> list[Any]:
        """The chunks of ``rows`` (all :attr:`compressible`) copied out of ``value`` and
        compressed by one kernel call: views of this thread's buffer ``which`` (0 or 1),
        valid until its next call with the same ``which``, or ``None`` for a chunk equal to the fill value (unless empty chunks
        are written).  ``first`` names the first chunk (a key) when the library fails."""
        chain = self.chain
        fill = None if self.write_empty_chunks else chain._fill_chunk_item_arr
        gather = chain._gather_buffer(self.proj.row_chunks)
        offsets = self.src_offsets[rows]
        if chain.blosc_settings is None:
            encoder = chain.chunk_encoder()
            slot = encoder.slot(chain.chunk_nbytes)
            what = encoder.codec
        else:
            slot = chain.chunk_nbytes + _BLOSC_MAX_OVERHEAD
            what = "blosc"
        out = chain._encoded_buffer(len(rows) * slot, which)
        try:
            if chain.blosc_settings is None:
                sizes = encoder.compress_regions(
                    self.value_flat, offsets, self.value_strides, self.dst_strides,
                    chain.chunk_shape_arr, chain.itemsize, chain.swap_unit, fill, gather, out)
            else:
                sizes = _kernels.blosc_compress_regions(
                    self.value_flat, offsets, self.value_strides, self.dst_strides,
                    chain.chunk_shape_arr, chain.itemsize, chain.swap_unit, fill, gather, out,
                    *chain.blosc_settings)
        except RuntimeError as e:  # (as the codecs' encode report a library's failure)
            raise CodecError(f"{what}: cannot compress chunks of {chain.chunk_nbytes} bytes "
                             f"(chunk {first!r} and the next {len(rows) - 1}): {e}") from e
        return [None if n < 0 else out[k * slot:k * slot + n]
                for k, n in enumerate(sizes.tolist())]

    @cached_property
    def packs(self) -> bool:
        """Whether :meth:`compress_packed` can encode this write's :attr:`compressible`
        rows (a ``ChunkEncoder`` chain: zstd, gzip or zlib)."""
        chain = self.chain
        return (self.compressible is not None and chain.blosc_settings is None
                and chain.encode_settings is not None)

    def compress_packed(self, rows: np.ndarray, first: str, start: int, extra: int,
                        which: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The chunks of ``rows`` (all :attr:`compressible`, :attr:`packs`) copied out
        of ``value`` and compressed by one kernel call, each chunk's bytes right after
        the previous one's from byte ``start`` on, in this thread's shard buffer
        ``which`` (0 or 1) of room for ``extra`` more bytes: the inner chunks of a shard
        as stored, joined with no copy.  Returns ``(buffer, sizes)``: the whole buffer
        (valid until this thread's next call with the same ``which``) and each chunk's
        compressed size, -1 for a chunk equal to the fill value (unless empty chunks
        are written), which takes no room.  ``first`` names the first chunk (a key)
        when the library fails."""
        chain = self.chain
        encoder = chain.chunk_encoder()
        slot = encoder.slot(chain.chunk_nbytes)
        buf = chain._thread_buffer("shard1" if which else "shard",
                                   start + len(rows) * slot + extra, "a buffer for a shard")
        fill = None if self.write_empty_chunks else chain._fill_chunk_item_arr
        gather = chain._gather_buffer(self.proj.row_chunks)
        try:
            sizes = encoder.compress_regions(
                self.value_flat, self.src_offsets[rows], self.value_strides,
                self.dst_strides, chain.chunk_shape_arr, chain.itemsize, chain.swap_unit,
                fill, gather, buf[start:start + len(rows) * slot], packed=True)
        except RuntimeError as e:  # (as the codecs' encode report a library's failure)
            raise CodecError(f"{encoder.codec}: cannot compress chunks of "
                             f"{chain.chunk_nbytes} bytes (chunk {first!r} and the next "
                             f"{len(rows) - 1}): {e}") from e
        return buf, sizes

    def write(self, i: int, old: Any, key: str) -> Any:
        """The new stored bytes of row ``i``'s chunk, or ``None`` when it equals the fill
        value everywhere (and empty chunks are not written).  ``old`` is the stored chunk
        (``None``: missing); it is used when :meth:`needs_old`, and for a chunk reaching
        past the array's edge when given (what another writer that grew the array put
        there is kept)."""
        chain = self.chain
        if self.proj.complete[i] and (old is None or not self.proj.edge[i]):
            buf = chain.chunk_buffer(key)
            if self.proj.edge[i]:
                chain.fill_chunk(buf)  # padding beyond the array's edge holds the fill value
        elif old is None:
            buf = chain.new_fill_chunk(key)
        else:
            buf = chain.decode(old, key, writable=True)
        region = self.proj.local_count[i]
        if self.value_flat is not None:
            _kernels.copy_region(
                self.value_flat, int(self.src_offsets[i]), self.value_strides,
                buf, int(self.dst_offsets[i]), self.dst_strides,
                region, chain.itemsize, chain.swap_unit,
            )
        else:
            _kernels.fill_region(buf, int(self.dst_offsets[i]), self.dst_strides, region,
                                 self.scalar_item)
        if not self.write_empty_chunks and chain.is_fill(buf):
            return None
        return chain.encode(buf, write_empty_chunks=self.write_empty_chunks)


def encode_settings(chain: PreparedChain) -> tuple[str, int, bool] | None:
    """``(codec, level, checksum)`` for ``ChunkEncoder`` when the one bytes -> bytes codec
    of ``chain`` (a fast path) encodes with numcodecs' ``Zstd``, ``GZip`` or ``Zlib`` and
    nothing else (the core codecs, their ``numcodecs.*`` spellings and Zarr v2's
    compressors, not a subclass with an encode of its own), the encoder makes that format
    here and gives the same bytes; else ``None``.  Deflate's level 0 is left to zlib's
    Python module: its stored blocks follow the sizes of Python's output buffers."""
    if (_encode.ChunkEncoder is None or not chain.fast or len(chain.bb) != 1
            or not 0 < chain.chunk_nbytes <= _ENCODE_MAX_NBYTES):
        return None
    codec = chain.bb[0]
    if type(codec).encode in _DELEGATING_ENCODES:
        impl: Any = getattr(codec, "codec", None) if isinstance(codec, NumcodecsCodec) else (
            getattr(codec, "_impl", None))
    else:
        return None
    kind = _NUMCODECS_FORMATS.get(type(impl))
    if kind is None or kind not in _encode.ENCODE_CODECS:
        return None
    level = impl.level
    if isinstance(level, bool) or not isinstance(level, int):
        return None
    if kind != "zstd" and not (level == -1 or 1 <= level <= 9):
        return None
    return kind, level, bool(getattr(impl, "checksum", False))


def _raw_size_error(chain: PreparedChain, key: str, n: int) -> ChunkDecodeError:
    return ChunkDecodeError(
        f"chunk {key!r}: stored {n} bytes, expected {chain.chunk_nbytes} bytes "
        f"(chunk shape {list(chain.chunk_shape)} of {chain.data_type.name}, no compression)"
    )


def single_chunk_coords(chain: PreparedChain, sel: BasicSelection) -> list[int] | None:
    """The grid coordinates of the one chunk a step-1 selection lies in, else ``None``."""
    coords = []
    for s, n, c, t in zip(sel.start.tolist(), sel.count.tolist(), chain.chunk_shape,
                          sel.step.tolist(), strict=True):
        k = s // c
        if t != 1 or (s + n - 1) // c != k:
            return None
        coords.append(k)
    return coords


def _whole_chunk_into(chain: PreparedChain, sel: BasicSelection) -> bool:
    """Whether the selection is one whole chunk that can be decoded into the output
    as it is (no byte swap, no permutation)."""
    return (chain.fast and chain.swap_unit == 1 and sel.count.tolist() == list(chain.chunk_shape)
            and chain.permutation == tuple(range(chain.ndim)))


def read_one_chunk(chain: PreparedChain, sel: BasicSelection, coords: list[int],
                   out: np.ndarray | None, raw: Any, key: str,
                   place: tuple[np.ndarray, int, np.ndarray] | None = None) -> None:
    """Decode ``raw`` (``None``: missing, the fill value), the stored chunk at ``coords``
    holding the whole selection, into ``out`` -- or into ``place``: ``(flat output
    bytes, byte offset, byte strides)`` of the selection's block in a larger output."""
    if place is None:
        assert out is not None  # (no place: the output is out)
        out_flat = out.reshape(-1).view(np.uint8)
        if raw is not None and chain._decode_into and _whole_chunk_into(chain, sel):
            chain.decode(raw, key, into=out_flat)
            return
        out_off, out_strides = 0, np.array(out.strides, dtype=np.int64)
    else:
        out_flat, out_off, out_strides = place
    if raw is None:
        _kernels.fill_region(out_flat, out_off, out_strides, sel.count, chain._fill_native_arr)
        return
    buf = chain.decode(raw, key)
    src_off = sum((s - k * c) * st for s, k, c, st in zip(
        sel.start.tolist(), coords, chain.chunk_shape, chain.chunk_strides.tolist(),
        strict=True))
    _kernels.copy_region(buf, src_off, chain.chunk_strides, out_flat, out_off, out_strides,
                         sel.count, chain.itemsize, chain.swap_unit)


def read_single_chunk(plan: Plan, coords: list[int]) -> None:
    """The small-read fast path: a step-1 selection inside the one chunk at ``coords``
    (:func:`single_chunk_coords`) is read with plain integer arithmetic (no projection
    table)."""
    store, path, chain, sel, out = plan.store, plan.path, plan.chain, plan.sel, plan.out
    assert out is not None  # (a read's plan)
    key = (f"{path}/" if path else "") + chain.metadata.chunk_key_encoding.encode(tuple(coords))
    if not chain.bb and plan.caps.reads_into and _whole_chunk_into(chain, sel):
        # an uncompressed whole chunk is the whole (C-contiguous) output: preadv into it
        n = store.get_into(key, out.reshape(-1).view(np.uint8).data)
        if n == chain.chunk_nbytes:
            return
        if n is not None:
            raise _raw_size_error(chain, key, n)
        raw = None
    else:
        raw = store.get_limited(key, chain.stored_limit)
    read_one_chunk(chain, sel, coords, out, raw, key)


def _direct_rows(
    chain: PreparedChain, sel: BasicSelection, region: np.ndarray, out_shape: tuple[int, ...],
    *, into: bool
) -> np.ndarray | None:
    """Rows whose chunk can be decoded straight into the output: the codec (or the
    store, ``into``) writes into a buffer, the chunk's bytes need no swap or
    permutation, the selection covers the whole nominal chunk with step 1, and its
    place in the (C-order) output is one contiguous block."""
    cs = chain.chunk_shape
    if region.shape[0] == 0 or not (
        chain.fast and into and chain.swap_unit == 1
        and chain.permutation == tuple(range(chain.ndim))
        # (no whole chunk in a selection narrower than a chunk: small reads stop here)
        and all(n >= c for n, c in zip(sel.count.tolist(), cs, strict=True))
        and sel.step.tolist() == [1] * chain.ndim
    ):
        return None
    # A whole chunk's region is the chunk shape, so whether its block of the C-order
    # output is contiguous depends on the shapes only: every dimension after the
    # first one longer than 1 must span the whole output.
    first = next((d for d in range(len(cs)) if cs[d] > 1), len(cs))
    if any(cs[d] != out_shape[d] for d in range(first + 1, len(cs))):
        return None
    if region.shape[0] == 1:
        return np.array([region[0].tolist() == list(cs)])
    whole = np.all(region == chain.chunk_shape_arr, axis=1)
    return whole if whole.any() else None


def read_rows_files(plan: Plan, keys: Sequence[str], reader: RowReader) -> None:
    """Read every row of ``reader``'s projection (``keys``: their chunks' keys) in
    batches of files read (and decoded) by one kernel call each (``reader.raw_into``
    or ``reader.read_decode``)."""
    store, threads, proj = plan.store, plan.options.threads, reader.proj
    work = proj.nrows * reader.chain.chunk_nbytes
    # As many batches as there will be tasks (at most RAW_BATCH files, or DECODE_BATCH
    # compressed ones, each).  Copying is ~RAW_COST_RATIO times cheaper per byte than
    # decoding: small reads stay in the calling thread, where a handoff to the pool
    # would cost more.  Every task writes a disjoint region of `out` (chunks partition
    # the array and the projection maps each selected element to exactly one chunk).
    # Cold files: each decoding call announces its batch's files to the kernel, a
    # window ahead of the reading, when the first is not in the page cache
    # (``ChunkDecoder.decode_files``), so that the disk reads them while the threads
    # decode.
    if reader.read_decode:
        fn = functools.partial(reader.decode_batch, store=store, keys=keys)
        cap = DECODE_BATCH
    else:
        fn = functools.partial(reader.read_batch, store=store, keys=keys)
        work //= RAW_COST_RATIO
        cap = RAW_BATCH
    tasks = batch_count(proj.nrows, work, threads=threads)
    per = max(1, min(cap, -(-proj.nrows // tasks)))
    batches = [range(lo, min(lo + per, proj.nrows)) for lo in range(0, proj.nrows, per)]
    map_unordered_into(fn, batches, work_bytes=work, threads=threads)


#: chunk files announced to the kernel at once, at most (see :func:`prefetch_if_cold`)
PREFETCH_FILES = 4096
#: files an :class:`Announcer` announces at a time
ANNOUNCE_BLOCK = 16
#: ``os.open`` flags of a file only announced: never blocks (a FIFO), never follows a link
_PROBE_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0))


def first_cold(store: Store, key: str) -> bool:
    """Whether the file of ``key`` in a local store is out of the page cache: a read of
    its first byte would wait for the disk (``RWF_NOWAIT``).  ``False`` when it is
    cached, when the store does not keep values in files, or when it cannot say (no
    ``RWF_NOWAIT``, a missing file, a link, a file system that refuses the flag).  Costs
    an ``open``, a ``preadv`` and a ``close``."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None or not hasattr(os, "preadv") or not hasattr(os, "posix_fadvise"):
        return False
    files = store.file_paths([key])
    if files is None:
        return False
    try:
        fd = os.open(os.path.join(files[0], files[1][0]), _PROBE_FLAGS)
    except OSError:
        return False  # (missing, a link: the read says what it is)
    try:
        os.preadv(fd, [bytearray(1)], 0, nowait)
        return False  # in the page cache
    except BlockingIOError:
        return True  # not in the cache
    except OSError:
        return False  # (RWF_NOWAIT refused by this file system, a directory...)
    finally:
        os.close(fd)


def announce_files(store: Store, keys: Sequence[str]) -> None:
    """Tell the kernel the files of ``keys`` (at most PREFETCH_FILES of them) in a local
    store are about to be read (``POSIX_FADV_WILLNEED``): the disk reads them all at
    once, in the background.  Nothing for a store whose values are not files; a file
    that cannot be opened (missing, a link) is skipped (its read says what it is)."""
    if not keys or not hasattr(os, "posix_fadvise"):
        return
    files = store.file_paths(keys[:PREFETCH_FILES])
    if files is None:
        return
    root = files[0]
    for path in files[1]:
        try:
            fd = os.open(os.path.join(root, path), _PROBE_FLAGS)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


class Announcer:
    """Announces the files of ``keys`` (a local store's, in the order they will be read)
    to the kernel from a thread of its own, in blocks of ANNOUNCE_BLOCK, at most
    ``window`` files past the position the readers report (:meth:`taken`), until
    :meth:`close`.  ``POSIX_FADV_WILLNEED`` blocks while the disk's queue is full: done
    by the threads that decode, it takes their time (as long as their reads, in a cold
    gather); here it overlaps the decoding and keeps the disk busy with the files needed
    next, in order (a whole batch announced at once is read in the disk's order)."""

    def __init__(self, store: Store, keys: Sequence[str], window: int) -> None:
        self.store, self.keys, self.window = store, keys, max(1, window)
        self.pos = 0  # files the readers have taken
        self.wake_at = 0  # waiting: woken when the readers have taken the files before it
        self.closed = self.waiting = False
        self.cond = threading.Condition(threading.Lock())
        self.thread = threading.Thread(target=self._run, name="zarrfast-announce",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        done, n = 0, len(self.keys)
        while done < n:
            with self.cond:
                while not self.closed and done >= self.pos + self.window:
                    # (woken once half a window is free, not at each file taken: a
                    # wake-up preempts the reader that gives it, on a busy machine)
                    self.wake_at = done - self.window + max(1, self.window // 2)
                    self.waiting = True
                    self.cond.wait()
                    self.waiting = False
                if self.closed:
                    return
                hi = min(n, self.pos + self.window, done + ANNOUNCE_BLOCK)
            try:
                announce_files(self.store, self.keys[done:hi])
            except Exception:  # (a hint only: the reads say what is wrong)
                return
            done = hi

    def taken(self, i: int) -> None:
        """The readers have taken the files before ``i``."""
        with self.cond:
            if i > self.pos:
                self.pos = i
                if self.waiting and i >= self.wake_at:
                    self.cond.notify()

    def close(self) -> None:
        """Stop announcing (the thread ends after the block it is announcing)."""
        with self.cond:
            self.closed = True
            self.cond.notify()


def prefetch_if_cold(store: Store, keys: Sequence[str]) -> None:
    """When the first of the chunk files ``keys`` of a local store is not in the page
    cache (:func:`first_cold`), tell the kernel every one of them is about to be read
    (:func:`announce_files`), so that the disk reads them all at once while the
    decoding threads take them in turn: a cold batch of scattered chunks then waits for
    the disk about once, not once per file (each thread reads one file at a time).
    Warm files cost one probe."""
    if keys and first_cold(store, keys[0]):
        announce_files(store, keys)


def read_rows_tasks(plan: Plan, keys: Sequence[str], reader: RowReader) -> None:
    """Read every row of ``reader``'s projection: one task per chunk on the pool, each
    a ``get`` and a decode.  (Tasks write disjoint regions of `out`.)"""
    store, limit = plan.store, reader.chain.stored_limit

    def task(i: int) -> None:
        reader.read(i, store.get_limited(keys[i], limit), keys[i])

    map_unordered_into(task, range(reader.proj.nrows),
                       work_bytes=reader.proj.nrows * reader.chain.chunk_nbytes,
                       threads=plan.options.threads)


#: chunk files read per kernel call on the uncompressed path
RAW_BATCH = 64
#: compressed chunk files read and decoded per kernel call, at most: each call costs
#: ~20 us of interpreter time (with the GIL) besides ~0.1 us per chunk, and a batch of
#: 32^3 zstd chunks takes ~2.5 ms per 64 chunks to decode
DECODE_BATCH = 512
#: chunks encoded, then written by one ``set_many`` call, per batch of a write -- and
#: at most this many bytes of chunks (what a task holds before writing them)
WRITE_BATCH = 64
#: c-blosc's BLOSC_MAX_OVERHEAD: what compression may add to a chunk
_BLOSC_MAX_OVERHEAD = 16
#: the largest chunk ``ChunkEncoder`` compresses (``_ext._encode.MAX_NBYTES``)
_ENCODE_MAX_NBYTES = 2**31 - 1 - 16
#: numcodecs' compressors ``ChunkEncoder`` makes the bytes of, by their exact class
_NUMCODECS_FORMATS = {numcodecs.Zstd: "zstd", numcodecs.GZip: "gzip", numcodecs.Zlib: "zlib"}
#: the ``encode`` methods that hand the bytes to their numcodecs codec as they are
#: (``_impl``, or ``codec`` for Zarr v2's ``NumcodecsCodec``)
_DELEGATING_ENCODES = (ZstdCodec.encode, GzipCodec.encode, NumcodecsBytesBytesCodec.encode,
                       NumcodecsCodec.encode)
WRITE_BATCH_BYTES = 16 * 2**20
#: batches per task of a write that several threads share, at least (chunks allowing)
WRITE_BATCHES_PER_TASK = 4
#: how much cheaper per byte reading an uncompressed chunk is than decoding one
RAW_COST_RATIO = 8
#: whole chunks of a blosc write gathered at once (``_gather_buffer``): bytes and
#: chunks at most.  The 512 chunks (64^3) of a 512^3 uint16 value, gathered 8 at a time
#: one source row after the other, were copied and compressed in 95 ms, against 135 ms
#: chunk by chunk (one thread; rows 1 KiB apart, where a chunk alone reads 128-byte runs
#: on the same few cache sets); a whole write of it took 440 ms against 516 ms (medians).
#: A whole row of chunks at a time reads the value's rows whole, in order: the 500 chunks
#: of a 320 x 640 x 640 value (10 along a row), in batches of whole rows, were copied and
#: compressed in 169-177 ms against 205 ms 8 at a time in batches of 32 (medians of 12,
#: one thread), and 154 ms with the chunks already contiguous (a plain copy each)
GATHER_BYTES = 8 * 2**20
GATHER_CHUNKS = 16


#: how many chunks of a remote store are fetched (and held) at once, at most
BATCH_KEYS = 512


def read_rows_batched(plan: Plan, keys: Sequence[str], reader: RowReader) -> None:
    """Fetch chunks with ``store.get_many`` (concurrent requests) and decode them on the
    pool as they arrive: a wave of at most BATCH_KEYS chunks at a time (the fetched
    bytes stay bounded), split in a few ``get_many`` calls (each has all its requests
    in flight at once), so that each call's chunks are decoded while the others'
    requests are still in flight."""
    store, opts = plan.store, plan.options
    calls = max(1, min(opts.io_concurrency, 4 * opts.threads))

    def fetch(rows: range) -> list:
        return store.get_many([keys[i] for i in rows])

    def split(rows: range, blobs: list) -> list:
        return [(rows, blobs)]

    def decode(part: tuple[range, list]) -> None:
        rows, blobs = part
        for i, blob in zip(rows, blobs, strict=True):
            reader.read(i, blob, keys[i])

    for lo in range(0, len(keys), BATCH_KEYS):
        hi = min(lo + BATCH_KEYS, len(keys))
        if in_task():
            # a read run as a pool's task (zarrfast.get_many's batches of remote stores
            # run on the I/O pool): map_io_then would run its fetches inline, one
            # get_many after another, a round trip each (50 arrays of 4 chunks over 20
            # ms of latency: 4 round trips, not 1); one get_many has the wave's requests
            # in flight together (on the request pool), then this thread decodes them
            decode((range(lo, hi), fetch(range(lo, hi))))
            continue
        per = -(-(hi - lo) // calls)
        map_io_then(fetch, [range(a, min(a + per, hi)) for a in range(lo, hi, per)], decode,
                    split, io=opts.io_concurrency, threads=opts.threads)


def write_shards_whole(plan: Plan, keys: Sequence[str], writer: RowWriter) -> None:
    """Chunks that are shards decoded whole (an array -> array codec comes before
    ``sharding_indexed``): a partial write of one is a read-modify-write of a shard whose
    other inner chunks other writers may write, so it excludes them (``engine.rmw``)."""
    store, chain = plan.store, writer.chain

    def task(i: int) -> None:
        key = keys[i]
        # (a shard past the array's edge too: another writer may have grown the array)
        if writer.needs_old(i) or writer.proj.edge[i]:
            read_modify_write(store, key, lambda old: writer.write(i, old, key),
                              limit=chain.stored_limit,
                              empty=lambda: chain.encode(chain.new_fill_chunk(key),
                                                         write_empty_chunks=True),
                              options=plan.options)
            return
        new = writer.write(i, None, key)
        if new is None:
            store.delete(key)
        else:
            store.set(key, new)

    map_unordered_into(task, range(writer.proj.nrows), threads=plan.options.threads,
                       work_bytes=writer.proj.nrows * chain.chunk_nbytes)


def write_rows(plan: Plan, keys: Sequence[str], writer: RowWriter) -> None:
    """Write every row of ``writer``'s projection (``keys``: their chunks' keys), in
    batches of chunks written by one store call each."""
    store, caps, threads = plan.store, plan.caps, plan.options.threads
    chain, proj = writer.chain, writer.proj
    work = proj.nrows * chain.chunk_nbytes
    tasks = batch_count(proj.nrows, work, threads=threads)
    per, fast, direct = _write_batches(caps, writer, tasks)
    starts = range(0, proj.nrows, per)

    def flush(lo: int, rows: np.ndarray | None, new: list, gone: list) -> None:
        """The store calls of the batch at ``lo``."""
        if rows is not None:
            writer.store_whole(store, rows, keys, gone)
        if new:
            store.set_many(new)
        if gone:
            store.delete_many(gone)

    def batch(lo: int, behind: WriteBehind | None = None) -> None:
        new: list[tuple[str, Any]] = []
        gone: list[str] = []
        hi = min(lo + per, proj.nrows)
        regions = None
        # (two buffers of compressed chunks, one written while the other is filled)
        which = behind.turn if behind is not None else 0
        try:
            if fast is not None:
                rows = np.flatnonzero(fast[lo:hi]) + lo
                if rows.size and direct:
                    regions = rows
                elif rows.size and writer.compressible is None:
                    writer.swap_whole(rows, keys, new, gone, which)
                elif rows.size:
                    writer.compress_whole(rows, keys, new, gone, which)
            for i in range(lo, hi):
                if fast is not None and fast[i]:
                    continue
                key = keys[i]
                old = (store.get_limited(key, chain.stored_limit) if writer.needs_old(i)
                       else None)
                encoded = writer.write(i, old, key)
                if encoded is None:
                    gone.append(key)
                else:
                    new.append((key, encoded))
        finally:  # (what was encoded before an error is written, as chunk by chunk)
            if behind is None:
                flush(lo, regions, new, gone)
            elif regions is not None or new or gone:
                behind.submit(flush, lo, regions, new, gone)

    if tasks == 1 and len(starts) > 1 and (caps.batched_sets or caps.region_sets):
        # One thread of encoding, the calling one: the store's file writes of each batch
        # run on an I/O thread while it encodes the next (at most one batch in flight;
        # its error raised here, naming the key).  Profile of a 256 MiB zstd write at
        # one thread (py-spy): 62% compressing, 37% writing files, in one thread before.
        # Whole uncompressed chunks, written by the store straight from the value, need
        # no encoding: the calling thread and the I/O thread each write the next batch.
        if direct:
            share_with_io_thread(batch, starts)
            return
        with WriteBehind() as behind:
            for lo in starts:
                batch(lo, behind)
        return
    map_dynamic_into(batch, starts, work_bytes=work, threads=threads)


def _write_batches(caps: StoreCapabilities, writer: RowWriter, tasks: int
                   ) -> tuple[int, np.ndarray | None, bool]:
    """How :func:`write_rows` cuts its rows: ``(rows per batch, the rows written whole by
    one kernel call per batch or None, whether the store writes those from the value)``."""
    chain, proj = writer.chain, writer.proj
    # Batches of chunks encoded, then written by one set_many (and delete_many) call:
    # for stores that write many values at once faster, as many batches as there will
    # be tasks (at most WRITE_BATCH chunks each); for the others one chunk each.  No two
    # tasks read-modify-write the same chunk key, and each reads a disjoint part of
    # `value`.
    # Several threads draw the batches from one queue: at least WRITE_BATCHES_PER_TASK
    # per task, so that the last one, which one thread finishes while the others wait,
    # is short (a 256 MiB blosc write in 64^3 chunks at 2 threads was 17 batches of 30
    # chunks: the calling thread waited for the other's last one 8-11% of its time,
    # 3% in batches of 10, py-spy).
    per = 1
    if caps.batched_sets:
        share = tasks * WRITE_BATCHES_PER_TASK if tasks > 1 else 1
        per = max(1, min(WRITE_BATCH, WRITE_BATCH_BYTES // max(chain.chunk_nbytes, 1),
                         -(-proj.nrows // share)))
    # whole chunks of a blosc chain: copied and compressed by one kernel call per batch
    # into a per-thread buffer, which the store is done with when set_many returns
    fast = writer.compressible if caps.copies_values and caps.batched_sets else None
    # (whole chunks stored uncompressed in the other byte order: copied, swapped, by one
    # kernel call per batch the same way)
    if fast is None and caps.copies_values and caps.batched_sets:
        fast = writer.swapped_whole
    # whole uncompressed chunks: written by the store from where they lie in the value
    # (only when there are such chunks: else the chunks are encoded one by one, in the
    # calling thread at one thread, not shared with the I/O thread as if nothing were)
    if fast is None and caps.region_sets and writer.stored_whole is not None:
        fast, direct = writer.stored_whole, True
    else:
        direct = False
    if fast is not None and not direct and per >= proj.row_chunks:
        # batches of whole rows of the grid: each gathers its rows of chunks whole
        per -= per % proj.row_chunks
    return per, fast, direct


def write_rows_batched(plan: Plan, keys: Sequence[str], writer: RowWriter) -> None:
    """Writes to remote stores, a batch at a time: the old chunks that partial
    writes keep in one ``get_many``, encoding on the pool, then one ``set_many`` and
    one ``delete_many`` (concurrent requests)."""
    store, chunk_nbytes = plan.store, writer.chain.chunk_nbytes
    for lo in range(0, len(keys), BATCH_KEYS):
        rows = range(lo, min(lo + BATCH_KEYS, len(keys)))
        need = [i for i in rows if writer.needs_old(i)]
        olds = dict(zip(need, store.get_many([keys[i] for i in need]), strict=True))
        new: list[Any] = [None] * len(rows)

        def task(i: int, lo: int = lo, olds: dict = olds, new: list = new) -> None:
            new[i - lo] = writer.write(i, olds.get(i), keys[i])

        map_unordered_into(task, rows, work_bytes=len(rows) * chunk_nbytes,
                           threads=plan.options.threads)
        store.set_many([(keys[i], new[i - lo]) for i in rows if new[i - lo] is not None])
        gone = [keys[i] for i in rows if new[i - lo] is None]
        if gone:
            store.delete_many(gone)
