"""The codec chain of an array: the one place a chain is interpreted.

A Zarr v3 chain is ``[array -> array]* array -> bytes [bytes -> bytes]*``
(zarr-specs ``docs/v3/core/index.rst``, "Codecs"); a Zarr v2 array's
``order``, ``filters`` and ``compressor`` make the same kind of chain
(``[transpose if F] bytes(declared order) filters compressor``).
:class:`CodecChain` parses and validates the chain once, for a chunk shape and
a data type, and everybody else asks it:

* which codecs sit in which position (``aa``, ``ab``, ``bb``), the shape after
  each array -> array codec, the sharding codec when the array is sharded;
* which fast path applies: ``fast`` (transposes + ``bytes``, fused into the
  copy kernels as a stride permutation and a byte swap), ``batch_codec`` (a
  zstd or blosc chunk the batched decoder places without the GIL);
* how much a bytes -> bytes codec may inflate a chunk to (``decode_limit``,
  the bound that stops decompression bombs);
* the general decode and encode of a chunk with the codecs' own methods.

Metadata holds the chain as JSON (:mod:`zarrfast.metadata` never imports a
codec); :meth:`CodecChain.from_metadata` turns it into codec objects and
names the node in every error.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zarrfast.codecs._base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec
from zarrfast.codecs.bytes import BytesCodec
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.codecs.registry import parse_codec
from zarrfast.codecs.transpose import TransposeCodec
from zarrfast.errors import CodecError, MetadataValidationError

__all__ = [
    "MAX_VLEN_DATA",
    "VLEN_MIN_LIMIT",
    "vlen_limit",
    "BoundedDecoders",
    "CodecChain",
    "accepts_limit",
    "parse_codecs",
    "validate_codec_chain",
]

#: the most data one chunk of variable-length elements may decode to, whatever the
#: configuration says (the offsets of the vlen codecs are 32-bit)
MAX_VLEN_DATA = 2**31
#: the least a chunk of variable-length elements may decode to (a chunk of few, large
#: elements)
VLEN_MIN_LIMIT = 64 << 20


def vlen_limit(n: int) -> int:
    """What the bytes -> bytes codecs may inflate a chunk of ``n`` variable-length
    elements to: 4 bytes of count, 4 of length per element, then the data -- at most
    ``config vlen_bytes_per_element`` bytes per element (at least
    :data:`VLEN_MIN_LIMIT`, at most :data:`MAX_VLEN_DATA`).  A decompression bomb is
    refused at that size, naming the chunk, before more memory is taken."""
    from zarrfast import config

    per = int(config.get("vlen_bytes_per_element"))
    return 4 + 4 * n + min(max(n * per, VLEN_MIN_LIMIT), MAX_VLEN_DATA)


def parse_codecs(value: Any, *, node: str, member: str = "codecs") -> tuple[Codec, ...]:
    """Codec objects from a metadata ``codecs`` list (codec objects pass through); an
    unknown codec marked ``"must_understand": false`` is left out."""
    if not isinstance(value, (list, tuple)):
        raise MetadataValidationError(f"{node}: {member!r} must be a list, got {value!r}")
    out = []
    for i, c in enumerate(value):
        codec = parse_codec(c, where=f"{node}: {member}[{i}]")
        if codec is not None:
            out.append(codec)
    return tuple(out)


def validate_codec_chain(
    codecs: Sequence[Codec], *, shape: tuple[int, ...], data_type: Any, node: str
) -> None:
    """Check the chain is [array->array]* array->bytes [bytes->bytes]* and fits the data."""
    if not codecs:
        raise MetadataValidationError(
            f"{node}: 'codecs' must hold exactly one array -> bytes codec (such as 'bytes'), "
            f"got an empty list"
        )
    stage = 0  # 0: array->array, 1: after array->bytes
    n_ab = 0
    cur_shape = shape
    cur_type = data_type
    for i, c in enumerate(codecs):
        label = f"{node}: codecs[{i}] ({c.name!r})"
        if isinstance(c, ArrayArrayCodec):
            if stage != 0:
                raise MetadataValidationError(
                    f"{label}: an array -> array codec cannot follow the array -> bytes codec"
                )
        elif isinstance(c, ArrayBytesCodec):
            n_ab += 1
            if n_ab > 1:
                raise MetadataValidationError(
                    f"{label}: only one array -> bytes codec is allowed"
                )
            stage = 1
        elif isinstance(c, BytesBytesCodec):
            if stage != 1:
                raise MetadataValidationError(
                    f"{label}: a bytes -> bytes codec must come after the array -> bytes codec"
                )
        try:
            if stage == 0 or isinstance(c, ArrayBytesCodec):
                c.validate(shape=cur_shape, data_type=cur_type)
            if isinstance(c, ArrayArrayCodec):
                cur_shape = c.encoded_shape(cur_shape)
                cur_type = c.encoded_data_type(cur_type)
        except MetadataValidationError as e:
            raise MetadataValidationError(f"{label}: {e}") from None
    if n_ab == 0:
        raise MetadataValidationError(
            f"{node}: 'codecs' has no array -> bytes codec (such as 'bytes')"
        )


def accepts_limit(codec: Any) -> bool:
    """Whether ``codec.decode`` takes ``limit=`` (the core compressors do; third-party
    codecs may not).  Answered once per ``decode`` function: every array opened builds
    its chains, and ``inspect.signature`` costs more than the rest of a chain."""
    decode = codec.decode
    func = getattr(decode, "__func__", None)
    if func is not None:
        try:
            return _function_accepts_limit(func)
        except TypeError:  # pragma: no cover - an unhashable function object
            pass
    return _signature_has_limit(decode)


@functools.lru_cache(maxsize=256)
def _function_accepts_limit(func: Any) -> bool:
    return _signature_has_limit(func)


def _signature_has_limit(fn: Any) -> bool:
    try:
        return "limit" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return False


class BoundedDecoders:
    """Bytes -> bytes codecs in decode order, each told the most it may produce
    (``limit=``) when it takes that argument: decompression bombs stop there."""

    def __init__(self, codecs: Sequence[Any]) -> None:
        self.steps = [(c, accepts_limit(c)) for c in reversed(codecs)]

    def decode(self, data: Any, limit: int) -> Any:
        for c, limited in self.steps:
            data = c.decode(data, limit=limit) if limited else c.decode(data)
        return data


def _as_stage(arr: Any, data_type: Any, codec: Any) -> Any:
    """What an array -> array codec gave, as the data type of its stage: numcodecs'
    filters may give an explicit byte order, or the same bytes as another type (bitround
    gives unsigned integers); the bytes are what count, as in zarr-python."""
    if (not isinstance(arr, np.ndarray) or arr.dtype == data_type.dtype
            or arr.dtype.kind in "OT" or data_type.dtype.kind in "OT"):
        return arr  # (variable-length elements: the vlen codecs take either form)
    native = arr.dtype.newbyteorder("=")
    if arr.dtype != native and arr.dtype.byteorder != "|":
        arr = arr.astype(native)
    if arr.dtype == data_type.dtype:
        return arr
    if arr.dtype.itemsize != data_type.itemsize:
        raise CodecError(f"codec {codec.name!r} gave {arr.dtype} elements where "
                         f"{data_type.name} was expected")
    return np.ascontiguousarray(arr).view(data_type.dtype)


def _is_sharding(codec: Any) -> bool:
    return getattr(codec, "name", None) == "sharding_indexed"


class CodecChain:
    """A validated codec chain for chunks of ``chunk_shape`` holding ``data_type``.

    The one interpreter of an array's codecs: it parses them, checks their order
    (``[array -> array]* array -> bytes [bytes -> bytes]*``) and that each fits the
    data, and tells the rest of zarrfast which fast path applies.  Its attributes:
    ``codecs`` (all, in encode order), ``aa``, ``ab`` and ``bb`` (the array -> array
    codecs, the array -> bytes one, the bytes -> bytes ones), ``shapes`` and
    ``data_types`` (what each array -> array codec receives, then the array -> bytes
    codec's), ``sharding`` (the sharding codec when the chunks are shards read in part),
    ``fast`` (only transposes and ``bytes``: the copy kernels do it all) and
    ``batch_codec`` (``"zstd"``, ``"blosc"``, ``"gzip"`` or ``"zlib"`` when the batched
    decoder may decode the chunks).  [decode][zarrfast.codecs.CodecChain.decode] and
    [encode][zarrfast.codecs.CodecChain.encode] run the codecs' own methods (the
    general path).

    Parameters
    ----------
    codecs : sequence of Codec or dict
        Codec objects, or their metadata objects (``{"name": ..., "configuration":
        ...}``), in encode order.  An unknown codec marked
        ``"must_understand": false`` is left out.
    chunk_shape : sequence of int
        The shape of one decoded chunk.
    data_type : DataType
        The data type of its elements (an array's ``metadata.type_info``).
    node : str, default "array"
        Named in every error (``"array 'a/b'"``).
    validate : bool, default True
        Check the order of the codecs and that each fits the data (Zarr v2 chains,
        made here from valid v2 metadata, skip it).

    Raises
    ------
    MetadataValidationError
        The codecs are out of order, there is not exactly one array -> bytes codec, or
        a codec does not fit the chunks (naming ``node``, the position and the codec).
    UnknownCodecError
        A codec name that no class is registered under.

    Examples
    --------
    >>> from zarrfast.codecs import CodecChain
    >>> arr = zarrfast.create_array(store={}, shape=(4, 4), chunks=(2, 2), dtype="int32")
    >>> arr[:] = np.arange(16).reshape(4, 4)
    >>> chain = CodecChain.from_metadata(arr.metadata, node="array 'a'")
    >>> chain.codecs
    (BytesCodec(endian='little'), ZstdCodec(level=0, checksum=False))
    >>> chain.fast, chain.batch_codec
    (True, 'zstd')
    >>> chain.decode(arr.store.get("c/1/0"))
    array([[ 8,  9],
           [12, 13]], dtype=int32)
    """

    def __init__(self, codecs: Sequence[Any], *, chunk_shape: Sequence[int], data_type: Any,
                 node: str = "array", validate: bool = True) -> None:
        self.codecs: tuple[Codec, ...] = parse_codecs(codecs, node=node)
        self.chunk_shape = tuple(int(c) for c in chunk_shape)
        self.data_type = data_type
        self.node = node
        if validate:
            validate_codec_chain(self.codecs, shape=self.chunk_shape, data_type=data_type,
                                 node=node)
        self.aa = tuple(c for c in self.codecs if isinstance(c, ArrayArrayCodec))
        self.ab = next(c for c in self.codecs if isinstance(c, ArrayBytesCodec))
        self.bb = tuple(c for c in self.codecs if isinstance(c, BytesBytesCodec))
        #: the chunk shape and data type each array -> array codec receives, then the
        #: array -> bytes one's (filters such as ``numcodecs.astype`` change the type)
        self.shapes = [self.chunk_shape]
        self.data_types = [data_type]
        for c in self.aa:
            self.shapes.append(c.encoded_shape(self.shapes[-1]))
            self.data_types.append(c.encoded_data_type(self.data_types[-1]))
        #: the sharding codec when the array's chunks are shards read in part (it is the
        #: array -> bytes codec and no array -> array codec comes before it)
        self.sharding = self.ab if _is_sharding(self.ab) and not self.aa else None
        #: transposes and ``bytes`` only: the copy kernels do all of it
        self.fast = isinstance(self.ab, BytesCodec) and all(
            isinstance(c, TransposeCodec) for c in self.aa) and not (
            # a struct's fields are swapped one by one: the copy kernels swap whole units
            getattr(data_type, "fieldwise", False) and self.ab.swap_unit(data_type) > 1)
        self.chunk_nbytes = math.prod(self.chunk_shape) * data_type.itemsize
        codec = self.bb[0].batch_codec if len(self.bb) == 1 else None
        #: the compressed format of a fast chain the batched decoder may decode (if bound)
        self.batch_codec = codec if self.fast else None
        self.bounded = BoundedDecoders(self.bb)

    # -- construction from metadata ------------------------------------------------------
    @classmethod
    def from_metadata(cls, metadata: Any, *, node: str = "array") -> CodecChain:
        """Make the chain of an array's metadata.

        Parameters
        ----------
        metadata : ArrayV3Metadata or ArrayV2Metadata
            An array's metadata (``arr.metadata``): Zarr v3 (its ``codecs``) or v2 (its
            ``order``, ``filters`` and ``compressor``, see
            [from_v2][zarrfast.codecs.CodecChain.from_v2]).
        node : str, default "array"
            Named in every error.

        Returns
        -------
        CodecChain
            The chain for the array's chunks (for a rectilinear grid the first chunk's
            shape, every other chunk shape checked too).

        Raises
        ------
        MetadataValidationError
            The codecs do not form a valid chain for the array.
        UnknownCodecError
            A codec is not registered.
        """
        if getattr(metadata, "zarr_format", 3) == 2:
            return cls.from_v2(metadata, node=node)
        grid = metadata.chunk_grid
        if not grid.is_regular:
            # one chain per chunk shape: the first chunk's is the array's; every edge
            # length of every dimension is checked (sharding's divisibility is per dimension)
            shapes = grid.probe_shapes(metadata.shape)
            for shape in shapes[1:]:
                cls(metadata.codecs, chunk_shape=shape, data_type=metadata.type_info,
                    node=node)
            return cls(metadata.codecs, chunk_shape=shapes[0], data_type=metadata.type_info,
                       node=node)
        return cls(metadata.codecs, chunk_shape=metadata.chunks, data_type=metadata.type_info,
                   node=node)

    def for_chunk_shape(self, chunk_shape: Sequence[int]) -> CodecChain:
        """Give the chain of the same codecs for chunks of another shape.

        Parameters
        ----------
        chunk_shape : sequence of int
            The other chunk shape (one of a rectilinear grid's).

        Returns
        -------
        CodecChain
            ``self`` for the same shape, else a new, validated chain.

        Raises
        ------
        MetadataValidationError
            A codec does not fit chunks of that shape.
        """
        if tuple(chunk_shape) == self.chunk_shape:
            return self
        return type(self)(self.codecs, chunk_shape=chunk_shape, data_type=self.data_type,
                          node=self.node)

    @classmethod
    def from_v2(cls, metadata: Any, *, node: str = "array") -> CodecChain:
        """Make the chain of a Zarr v2 array's metadata.

        The chain is ``[transpose if order F] bytes(declared byte order) filters
        compressor``, each filter and the compressor a numcodecs codec; decoding is
        bounded (16 times the chunk's size, plus 1 MiB) against decompression bombs.

        Parameters
        ----------
        metadata : ArrayV2Metadata
            The v2 array's metadata.
        node : str, default "array"
            Named in every error.

        Returns
        -------
        CodecChain
            The chain (not validated: valid v2 metadata makes a valid chain).

        Raises
        ------
        UnknownCodecError
            numcodecs has no codec of a filter's or the compressor's ``id``, or refuses
            its configuration.
        """
        dtype = metadata.dtype
        # A decoded chunk holds prod(chunks) items; filters may change the size of what a
        # stage produces (astype, packbits, ...), by at most 16x for fixed-size dtypes.  The
        # bound keeps a decompression bomb from allocating gigabytes (object arrays: none).
        bound = None
        if dtype.kind != "O":
            bound = 16 * math.prod(metadata.chunks) * dtype.itemsize + (1 << 20)
        chain: list[Codec] = []
        if metadata.order == "F" and len(metadata.shape) > 1:
            chain.append(TransposeCodec(order=tuple(reversed(range(len(metadata.shape))))))
        chain.append(BytesCodec(endian=None))  # stored in the declared byte order
        for i, f in enumerate(metadata.filters or ()):
            chain.append(NumcodecsCodec.from_config(
                f, where=f"{node}: filters[{i}]", view_dtype=dtype if i == 0 else None,
                max_decoded=bound))
        if metadata.compressor is not None:
            chain.append(NumcodecsCodec.from_config(metadata.compressor,
                                                    where=f"{node}: compressor",
                                                    max_decoded=bound))
        return cls(chain, chunk_shape=metadata.chunks, data_type=metadata.type_info, node=node,
                   validate=False)

    def to_json(self) -> list[dict[str, Any]]:
        """Give the chain as a metadata ``codecs`` list.

        Returns
        -------
        list of dict
            Each codec's metadata object, in encode order.
        """
        return [c.to_dict() for c in self.codecs]

    @classmethod
    def create(cls, codecs: Sequence[Any], *, chunk_shape: Sequence[int], data_type: Any,
               node: str = "array") -> CodecChain:
        """Make the chain a new array records, each codec's chosen parameters filled in.

        Each codec's ``evolve`` fills in what is chosen from the array (blosc's
        ``typesize``, a filter's data type, a shard's inner chain), told the chunk shape
        and data type it receives, as in zarr-python (after ``cast_value`` to uint8,
        ``bytes`` needs no ``endian``); the chain is then validated.

        Parameters
        ----------
        codecs : sequence of Codec or dict
            The codecs (or their metadata objects) in encode order.
        chunk_shape : sequence of int
            The shape of one chunk.
        data_type : DataType
            The array's data type.
        node : str, default "array"
            Named in every error.

        Returns
        -------
        CodecChain
            The validated chain.

        Raises
        ------
        MetadataValidationError
            The codecs do not form a valid chain for these chunks.
        UnknownCodecError
            A codec is not registered.

        Examples
        --------
        >>> from zarrfast.codecs import BloscCodec, BytesCodec, CodecChain
        >>> from zarrfast.metadata.dtype import parse_data_type
        >>> chain = CodecChain.create([BytesCodec(), BloscCodec(cname="lz4")],
        ...                           chunk_shape=(10,), data_type=parse_data_type("uint8"))
        >>> chain.codecs[0], chain.codecs[1].typesize, chain.codecs[1].shuffle
        (BytesCodec(endian=None), 1, 'bitshuffle')
        """
        parsed = parse_codecs(codecs, node=node)
        shape = tuple(int(c) for c in chunk_shape)
        stage_type = data_type
        out: list[Codec] = []
        for i, c in enumerate(parsed):
            try:
                evolved = c.evolve(shape=shape, data_type=stage_type)
                out.append(evolved)
                if isinstance(evolved, ArrayArrayCodec):
                    shape = evolved.encoded_shape(shape)
                    stage_type = evolved.encoded_data_type(stage_type)
            except (ValueError, TypeError, IndexError):
                # a codec that does not fit: validation (below) says why, naming it
                out[i:] = parsed[i:]
                break
        return cls(out, chunk_shape=chunk_shape, data_type=data_type, node=node)

    def evolve(self) -> CodecChain:
        """Give the chain with its chosen parameters filled in.

        Returns
        -------
        CodecChain
            What metadata records: [create][zarrfast.codecs.CodecChain.create] with
            this chain's codecs, chunk shape, data type and node.
        """
        return self.create(self.codecs, chunk_shape=self.chunk_shape,
                           data_type=self.data_type, node=self.node)

    # -- facts --------------------------------------------------------------------------
    @property
    def permutation(self) -> tuple[int, ...]:
        """The composed transposes of a fast chain: ``stored = chunk.transpose(q)``."""
        n = len(self.chunk_shape)
        q = list(range(n))
        for c in self.aa:
            p = c.permutation(n)
            q = [q[p[k]] for k in range(n)]
        return tuple(q)

    @property
    def decode_limit(self) -> int:
        """The most the bytes -> bytes codecs may inflate one stored chunk to, when the
        chunk's size is not known exactly: room for what the array -> bytes codec adds (a
        shard's index and checksums, variable-length headers)."""
        n = math.prod(self.chunk_shape)
        if self.data_type.dtype.hasobject:
            limit = vlen_limit(n)
            if _is_sharding(self.ab):
                shard = self.shapes[-1]
                limit += self.ab.index_nbytes(shard) + 4 * math.prod(
                    self.ab.chunks_per_shard(shard))
            return limit
        encoded = math.prod(self.shapes[-1]) * self.data_types[-1].itemsize
        return 2 * max(self.chunk_nbytes, encoded) + 2**20

    @property
    def stored_limit(self) -> int:
        """The most bytes a valid stored chunk of this chain can hold: no compressor's
        worst case comes near it, so a larger file (a sparse multi-GiB file, an archive
        bomb) is refused before it is read."""
        return self.decode_limit

    # -- the general path: the codecs' own methods ----------------------------------------
    def decode_array(self, data: Any, *, fill_value: Any = None, key: str = "chunk"
                     ) -> np.ndarray:
        """Decode the bytes the bytes -> bytes codecs left into the chunk array.

        The array -> bytes codec, then the array -> array codecs in reverse order.

        Parameters
        ----------
        data : bytes-like
            The bytes after the bytes -> bytes codecs.
        fill_value : scalar, optional
            What a sharding codec's empty inner chunks read as (default: the data
            type's fill value).
        key : str, default "chunk"
            The chunk's store key, named in a sharding codec's errors.

        Returns
        -------
        numpy.ndarray
            The chunk, of ``chunk_shape``.

        Raises
        ------
        CodecError
            A codec cannot decode the data (``ChunkDecodeError`` for malformed data).
        """
        shapes, types = self.shapes, self.data_types
        if _is_sharding(self.ab):  # empty inner chunks read as the fill value
            arr = self.ab.decode(data, shapes[-1], types[-1], fill_value=fill_value,
                                 key=key)
        else:
            arr = self.ab.decode(data, shapes[-1], types[-1])
        for c, s, t in zip(reversed(self.aa), reversed(shapes[:-1]), reversed(types[:-1]),
                           strict=True):
            arr = _as_stage(c.decode_as(arr, s, t), t, c)
        return arr

    def decode(self, raw: Any, *, fill_value: Any = None, key: str = "chunk",
               limit: int | None = None) -> np.ndarray:
        """Decode a stored chunk into an array of ``chunk_shape``.

        Parameters
        ----------
        raw : bytes-like
            The stored chunk.
        fill_value : scalar, optional
            What a sharding codec's empty inner chunks read as.
        key : str, default "chunk"
            The chunk's store key, named in a sharding codec's errors.
        limit : int, optional
            The most each bytes -> bytes codec that takes ``limit=`` may decode to;
            default [decode_limit][zarrfast.codecs.CodecChain.decode_limit].

        Returns
        -------
        numpy.ndarray
            The chunk.

        Raises
        ------
        CodecError
            A codec cannot decode the data, or a compressor's output would exceed the
            limit (``ChecksumError`` for a checksum mismatch).
        """
        data = self.bounded.decode(raw, self.decode_limit if limit is None else limit)
        return self.decode_array(data, fill_value=fill_value, key=key)

    def encode_array(self, arr: np.ndarray, *, fill_value: Any = None,
                     write_empty_chunks: bool = False) -> Any:
        """Encode a chunk array into the bytes the bytes -> bytes codecs take.

        The array -> array codecs, then the array -> bytes codec.

        Parameters
        ----------
        arr : numpy.ndarray
            The chunk, of ``chunk_shape``.
        fill_value : scalar, optional
            For a sharding codec: the value of the inner chunks left out (default: the
            data type's fill value).
        write_empty_chunks : bool, default False
            For a sharding codec: keep inner chunks equal to ``fill_value``
            everywhere.

        Returns
        -------
        bytes-like
            The encoded bytes.

        Raises
        ------
        CodecError
            A codec cannot encode the values.
        """
        data: Any = arr
        for c, t in zip(self.aa, self.data_types[1:], strict=True):
            data = _as_stage(c.encode(data), t, c)
        if _is_sharding(self.ab):
            return self.ab.encode(np.asarray(data), self.data_types[-1], fill_value=fill_value,
                                  write_empty_chunks=write_empty_chunks)
        return self.ab.encode(data, self.data_types[-1])

    def encode_bytes(self, data: Any) -> Any:
        """Run the bytes -> bytes codecs (compressors, checksums) in order.

        Parameters
        ----------
        data : bytes-like
            What [encode_array][zarrfast.codecs.CodecChain.encode_array] gave.

        Returns
        -------
        bytes-like
            The bytes to store.
        """
        for c in self.bb:
            data = c.encode(data)
        return data

    def encode(self, arr: np.ndarray, *, fill_value: Any = None,
               write_empty_chunks: bool = False) -> bytes:
        """Encode a chunk array into the bytes to store.

        Parameters
        ----------
        arr : numpy.ndarray
            The chunk, of ``chunk_shape``.
        fill_value : scalar, optional
            For a sharding codec: the value of the inner chunks left out.
        write_empty_chunks : bool, default False
            For a sharding codec: keep inner chunks equal to ``fill_value``
            everywhere.

        Returns
        -------
        bytes
            The stored form of the chunk.

        Raises
        ------
        CodecError
            A codec cannot encode the values.

        Examples
        --------
        >>> from zarrfast.codecs import BytesCodec, CodecChain, GzipCodec
        >>> from zarrfast.metadata.dtype import parse_data_type
        >>> chain = CodecChain([BytesCodec(), GzipCodec()], chunk_shape=(3,),
        ...                    data_type=parse_data_type("int16"))
        >>> stored = chain.encode(np.array([1, 2, 3], dtype="int16"))
        >>> chain.decode(stored)
        array([1, 2, 3], dtype=int16)
        """
        data = self.encode_array(arr, fill_value=fill_value,
                                 write_empty_chunks=write_empty_chunks)
        return bytes(self.encode_bytes(data))
