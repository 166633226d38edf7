"""``sharding_indexed`` codec: many inner chunks in one stored object (a *shard*).

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/
(array -> bytes).  A shard holds the encoded inner chunks followed (or
preceded) by an index: a ``uint64`` array of shape ``chunks_per_shard + [2]``
with the ``(offset, nbytes)`` of every inner chunk, ``2**64 - 1`` twice for an
empty one, encoded with ``index_codecs`` (which must have a fixed size).
Example::

    {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}],
        "index_location": "end"}}

The byte format is :class:`~zarrfast.codecs.shard_format.ShardFormat`.  Arrays
whose codecs are this codec (optionally followed by bytes -> bytes codecs) are
read and written by :mod:`zarrfast.engine.sharded`, which fetches only the index
and the inner chunks a selection touches.  :meth:`encode` and :meth:`decode`
(whole shards, with the inner codecs' own methods) serve the general path: an
array -> array codec before the sharding codec, nested sharding, and arrays of
variable-length elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from zarrfast.codecs._base import (
    ArrayBytesCodec,
    BytesBytesCodec,
    Codec,
    parse_named_config,
)
from zarrfast.codecs._deprecated_enum import DeprecatedStrEnumMeta, coerce_enum_input
from zarrfast.codecs.bytes import BytesCodec
from zarrfast.codecs.chain import CodecChain, parse_codecs, validate_codec_chain
from zarrfast.codecs.compressors import Crc32cCodec
from zarrfast.codecs.shard_format import EMPTY, ShardFormat
from zarrfast.errors import (
    ChunkDecodeError,
    CodecError,
    MetadataTypeError,
    MetadataValidationError,
    add_context,
)
from zarrfast.metadata.dtype import DataType, is_fill_chunk, parse_data_type

_UINT64: DataType = parse_data_type("uint64")


def _parse_chain(value: Any, what: str) -> tuple[Codec, ...]:
    if not isinstance(value, (list, tuple)):
        raise MetadataValidationError(f"sharding_indexed: {what} must be a list, got {value!r}")
    return parse_codecs(value, node="sharding_indexed", member=what)


def _inner_chunk_shape(data: Any) -> tuple[int, ...]:
    """``chunk_shape`` given to the constructor, read as zarr-python 3.4 reads it: an
    integer or an iterable of integers (NumPy integers, a bool as the integer it equals),
    each an edge length >= 1; its errors in zarr-python's words."""
    if isinstance(data, (int, np.integer)):
        if data < 0:
            raise MetadataValidationError(
                f"sharding_indexed: chunk_shape: Expected a non-negative integer. Got {data!r} "
                f"instead")
        data = (data,)
    try:
        sizes = tuple(data)
    except TypeError:
        raise MetadataTypeError(
            f"sharding_indexed: chunk_shape: Expected an integer or an iterable of integers. "
            f"Got {data!r} instead") from None
    if not all(isinstance(v, (int, np.integer)) for v in sizes):
        raise MetadataTypeError(f"sharding_indexed: chunk_shape: Expected an iterable of "
                                f"integers. Got {data!r} instead")
    if not all(v > -1 for v in sizes):
        raise MetadataValidationError(f"sharding_indexed: chunk_shape: Expected all values to "
                                      f"be non-negative. Got {data!r} instead")
    sizes = tuple(int(v) for v in sizes)
    for axis, v in enumerate(sizes):
        if v < 1:
            raise MetadataValidationError(f"sharding_indexed: Dimension {axis}: chunk edge "
                                          f"length must be >= 1, got {v!r}")
    return sizes


#: the deepest nesting of sharding codecs accepted (two is already unusual)
MAX_SHARDING_DEPTH = 8


def _check_nesting(config: dict) -> None:
    """Refuse sharding codecs nested more than :data:`MAX_SHARDING_DEPTH` deep in a
    configuration's chains, found without recursing (metadata crafted to exhaust the
    stack gets an error, not a ``RecursionError``)."""
    stack = [(config.get("codecs"), 2), (config.get("index_codecs"), 2)]
    while stack:
        chain, depth = stack.pop()
        for c in chain if isinstance(chain, list) else ():
            if not isinstance(c, dict) or c.get("name") != "sharding_indexed":
                continue
            inner = c.get("configuration")
            if not isinstance(inner, dict):
                continue
            if depth > MAX_SHARDING_DEPTH:
                raise MetadataValidationError(
                    f"sharding_indexed: sharding codecs nested more than "
                    f"{MAX_SHARDING_DEPTH} deep")
            stack += [(inner.get("codecs"), depth + 1), (inner.get("index_codecs"), depth + 1)]


#: zarr-python 3.4's orders of the inner chunks in a shard (``ShardingCodec``'s
#: ``subchunk_write_order``; not part of the metadata)
SubchunkWriteOrder = Literal["morton", "unordered", "lexicographic", "colexicographic"]
SUBCHUNK_WRITE_ORDER: tuple[str, ...] = ("morton", "unordered", "lexicographic",
                                         "colexicographic")


class ShardingCodecIndexLocation(metaclass=DeprecatedStrEnumMeta):
    """Deprecated (zarr-python 3.4): pass ``"start"`` or ``"end"`` as the
    ``index_location`` of [zarrfast.codecs.ShardingCodec][] instead.

    ``ShardingCodecIndexLocation.end`` is the string ``"end"``, with a
    ``DeprecationWarning``, as in zarr-python 3.4.

    Examples
    --------
    >>> import warnings
    >>> from zarrfast.codecs import ShardingCodecIndexLocation
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     ShardingCodecIndexLocation.start
    'start'
    """

    _members: ClassVar[dict[str, str]] = {"start": "start", "end": "end"}


@dataclass(frozen=True)
class ShardingCodec(ArrayBytesCodec):
    """``sharding_indexed``: many inner chunks stored in one object, a shard, with an index.

    The array -> bytes codec of sharded arrays: each stored object (a shard) holds the
    encoded inner chunks of ``chunk_shape`` that tile the shard, and an index of
    their ``(offset, nbytes)`` (``uint64``; ``2**64 - 1`` twice for an empty inner
    chunk) encoded with ``index_codecs``, after (``"end"``) or before (``"start"``) the
    chunks.  Reads fetch the index and only the inner chunks a selection touches.
    ``zarrfast.create_array(..., shards=...)`` makes this codec from ``chunks``,
    ``serializer``, ``filters`` and ``compressors``; it can also be given as the
    ``serializer`` itself.

    Parameters
    ----------
    chunk_shape : tuple of int
        The inner chunk shape; it must divide the shard shape (the array's chunk grid)
        in every dimension.
    codecs : sequence of Codec or dict, default (BytesCodec(),)
        The inner chunks' codec chain, codecs or their metadata objects.
    index_codecs : sequence of Codec or dict, default (BytesCodec(), Crc32cCodec())
        The index's codec chain, which must have a fixed encoded size (no
        compressor).
    index_location : {"end", "start"}, default "end"
        Where the index is (an enum member is taken as its value, with a
        ``DeprecationWarning``, as zarr-python 3.4 does).
    write_index_location : bool, default True
        Whether the metadata spells out ``index_location`` even when it is ``"end"``
        (tensorstore leaves the default out; reading such metadata keeps that).
    subchunk_write_order : str, default "lexicographic"
        zarr-python 3.4's order of the inner chunks' bytes in a shard (not part of the
        metadata: readers find each chunk through the index): ``"lexicographic"``,
        index (C) order; ``"morton"``, Z order (zarr-python's default, and what
        zarr-python 3.1 to 3.3 write); ``"colexicographic"``, the first dimension
        varying fastest; ``"unordered"``, any (zarrfast writes index order then).

    Raises
    ------
    MetadataValidationError
        A size in ``chunk_shape`` below 1, ``index_location`` or ``subchunk_write_order``
        another value, a codec list that is not one, or an index codec whose encoded
        size is not fixed (a compressor).
    zarrfast.errors.MetadataTypeError
        ``chunk_shape`` is neither an integer nor an iterable of integers (as zarr-python
        3.4, an integer ``n`` is ``(n,)``, NumPy integers and bools are read as the
        integers they equal).

    Examples
    --------
    >>> from zarrfast.codecs import BytesCodec, ShardingCodec, ZstdCodec
    >>> codec = ShardingCodec(chunk_shape=(4, 4), codecs=[BytesCodec(), ZstdCodec()])
    >>> arr = zarrfast.create_array(store={}, shape=(8, 8), chunks=(8, 8), dtype="uint8",
    ...                             serializer=codec, compressors=None)
    >>> arr.shards, arr.chunks  # one stored object of four 4x4 inner chunks
    ((8, 8), (4, 4))
    >>> arr[:] = 1
    >>> sorted(k for k in arr.store.list() if k.startswith("c/"))
    ['c/0/0']
    >>> codec.chunks_per_shard((8, 8)), codec.index_nbytes((8, 8))
    ((2, 2), 68)

    The usual way to the same layout is ``shards=``:

    >>> arr = zarrfast.create_array(store={}, shape=(8, 8), shards=(8, 8), chunks=(4, 4),
    ...                             dtype="uint8")
    >>> arr.metadata.codecs[0].chunk_shape
    (4, 4)
    """

    chunk_shape: tuple[int, ...] = ()
    codecs: tuple[Codec, ...] = (BytesCodec(),)
    index_codecs: tuple[Codec, ...] = (BytesCodec(), Crc32cCodec())
    index_location: str = "end"
    #: whether metadata spells out ``index_location`` (tensorstore omits the default)
    write_index_location: bool = field(default=True, compare=False, repr=False)
    #: the order of the inner chunks' bytes in a shard zarrfast writes (not metadata)
    subchunk_write_order: str = "lexicographic"
    name = "sharding_indexed"
    aliases = ("https://purl.org/zarr/spec/codec/sharding-indexed/1.0",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunk_shape", _inner_chunk_shape(self.chunk_shape))
        # an enum member is taken as its string, with zarr-python 3.4's DeprecationWarning
        object.__setattr__(self, "index_location", coerce_enum_input(
            self.index_location, "index_location", "ShardingCodec"))
        if self.index_location not in ("start", "end"):
            raise MetadataValidationError(
                f"sharding_indexed: index_location must be one of ['start', 'end'], got "
                f"{self.index_location!r}"
            )
        order = self.subchunk_write_order
        if order not in SUBCHUNK_WRITE_ORDER:
            raise MetadataValidationError(
                f"Unrecognized subchunk write order: {order}. Only {SUBCHUNK_WRITE_ORDER} "
                f"are allowed.")
        for what in ("codecs", "index_codecs"):
            value = getattr(self, what)
            if not (isinstance(value, tuple) and all(isinstance(c, Codec) for c in value)):
                try:
                    value = list(value)
                except TypeError:
                    raise MetadataValidationError(
                        f"sharding_indexed: {what} must be a list of codecs, got {value!r}"
                    ) from None
                object.__setattr__(self, what, _parse_chain(value, what))
        variable = [c.name for c in self.index_codecs
                    if isinstance(c, BytesBytesCodec) and c.compute_encoded_size(16) is None]
        if variable:  # (the index is found by its size, known before it is read)
            raise MetadataValidationError(
                f"sharding_indexed: index_codecs must produce a fixed-size encoding, but these "
                f"codecs do not: {variable} (a compressor cannot encode the shard index)")

    @classmethod
    def from_dict(cls, data: Any) -> ShardingCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "sharding_indexed", "configuration": {"chunk_shape": [...],
            "codecs": [...], "index_codecs": [...], "index_location": ...}}``
            (``index_location`` may be left out: ``"end"``).

        Returns
        -------
        ShardingCodec
            The codec, its inner chains parsed.

        Raises
        ------
        MetadataValidationError
            Another name, a missing or bad member, or sharding codecs nested more than
            8 deep.
        UnknownCodecError
            An inner codec is not registered.
        """
        config = parse_named_config(
            data, (cls.name, *cls.aliases),
            allowed=("chunk_shape", "codecs", "index_codecs", "index_location"),
        )
        for key in ("chunk_shape", "codecs", "index_codecs"):
            if key not in config:
                raise MetadataValidationError(f"sharding_indexed: missing {key!r} in {data!r}")
        shape = config["chunk_shape"]
        if not isinstance(shape, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in shape):
            raise MetadataValidationError(
                f"sharding_indexed: chunk_shape must be a list of integers >= 1, got {shape!r}"
            )
        _check_nesting(config)  # before parsing the inner chains recursively
        return cls(
            chunk_shape=tuple(shape),
            codecs=_parse_chain(config["codecs"], "codecs"),
            index_codecs=_parse_chain(config["index_codecs"], "index_codecs"),
            index_location=config.get("index_location", "end"),
            write_index_location="index_location" in config,
        )

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "sharding_indexed", "configuration": {...}}`` with the inner
            chains' metadata objects; ``index_location`` is left out when it is
            ``"end"`` and ``write_index_location`` is false.
        """
        return {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": list(self.chunk_shape),
                "codecs": [c.to_dict() for c in self.codecs],
                "index_codecs": [c.to_dict() for c in self.index_codecs],
                **({"index_location": self.index_location}
                   if self.write_index_location or self.index_location != "end" else {}),
            },
        }

    # -- geometry -----------------------------------------------------------------
    def chunks_per_shard(self, shard_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Give the number of inner chunks along each dimension of a shard.

        Parameters
        ----------
        shard_shape : tuple of int
            The shard shape.

        Returns
        -------
        tuple of int
            ``shard_shape // chunk_shape`` per dimension.
        """
        return tuple(s // c for s, c in zip(shard_shape, self.chunk_shape, strict=True))

    def index_shape(self, shard_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Give the shape of a shard's index array.

        Parameters
        ----------
        shard_shape : tuple of int
            The shard shape.

        Returns
        -------
        tuple of int
            ``chunks_per_shard(shard_shape) + (2,)``: an ``(offset, nbytes)`` pair per
            inner chunk.
        """
        return (*self.chunks_per_shard(shard_shape), 2)

    def index_nbytes(self, shard_shape: tuple[int, ...]) -> int:
        """Give the encoded size of a shard's index (fixed, as the specification requires).

        Parameters
        ----------
        shard_shape : tuple of int
            The shard shape.

        Returns
        -------
        int
            16 bytes per inner chunk, plus what the index codecs add (4 for
            ``crc32c``).

        Raises
        ------
        MetadataValidationError
            An index codec's encoded size depends on the data (a compressor).
        """
        n = math.prod(self.index_shape(shard_shape)) * 8
        for c in self.index_codecs:
            if isinstance(c, BytesBytesCodec):
                size = c.compute_encoded_size(n)
                if size is None:
                    raise MetadataValidationError(
                        f"sharding_indexed: index codec {c.name!r} has a variable encoded size; "
                        f"index codecs must have a fixed size (e.g. bytes + crc32c)"
                    )
                n = size
        return n

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the inner chunks tile the shard and both inner chains are valid.

        Parameters
        ----------
        shape : tuple of int
            The shard shape (the array's chunk shape).
        data_type : DataType
            The array's data type.

        Raises
        ------
        MetadataValidationError
            ``chunk_shape`` has another rank or does not divide ``shape``, an inner chain
            is invalid for its chunks, or the index codecs have no fixed size.
        """
        if len(self.chunk_shape) != len(shape):  # (zarr-python 3.4's words, then ours)
            raise MetadataValidationError(
                f"sharding_indexed: the shard's chunk_shape and the array's shape need to have "
                f"the same number of dimensions: chunk_shape {list(self.chunk_shape)} has "
                f"rank {len(self.chunk_shape)}, the shard shape {list(shape)} rank {len(shape)}"
            )
        for i, (s, c) in enumerate(zip(shape, self.chunk_shape, strict=True)):
            if s % c:
                raise MetadataValidationError(
                    f"sharding_indexed: Chunk edge length {s} in dimension {i} is not divisible "
                    f"by the shard's inner chunk size {c}. (inner chunk_shape "
                    f"{list(self.chunk_shape)} does not evenly divide the shard shape "
                    f"{list(shape)})"
                )
        validate_codec_chain(self.codecs, shape=self.chunk_shape, data_type=data_type,
                             node="sharding_indexed codecs")
        validate_codec_chain(self.index_codecs, shape=self.index_shape(shape),
                             data_type=_UINT64, node="sharding_indexed index_codecs")
        self.index_nbytes(shape)

    def inner_chain(self, data_type: Any, *, validate: bool = False) -> CodecChain:
        """Give the codec chain of the inner chunks.

        Parameters
        ----------
        data_type : DataType
            The array's data type.
        validate : bool, default False
            Validate the chain (``validate`` of this codec already does).

        Returns
        -------
        CodecChain
            ``codecs`` for chunks of ``chunk_shape``.
        """
        return CodecChain(self.codecs, chunk_shape=self.chunk_shape, data_type=data_type,
                          node="sharding_indexed codecs", validate=validate)

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> ShardingCodec:
        """Fill in the chosen parameters of the inner and index codecs.

        Parameters
        ----------
        shape : tuple of int
            The shard shape.
        data_type : DataType
            The array's data type.

        Returns
        -------
        ShardingCodec
            The codec with both chains evolved (see
            [CodecChain.create][zarrfast.codecs.CodecChain.create]); ``self`` when
            nothing changed.
        """
        codecs = CodecChain.create(self.codecs, chunk_shape=self.chunk_shape,
                                   data_type=data_type, node="sharding_indexed codecs").codecs
        index_codecs = CodecChain.create(self.index_codecs, chunk_shape=self.index_shape(shape),
                                         data_type=_UINT64,
                                         node="sharding_indexed index_codecs").codecs
        if codecs == self.codecs and index_codecs == self.index_codecs:
            return self
        return ShardingCodec(self.chunk_shape, codecs, index_codecs, self.index_location,
                             self.write_index_location, self.subchunk_write_order)

    def format(self, shard_shape: tuple[int, ...]) -> ShardFormat:
        """Give the byte format of shards of ``shard_shape``.

        Parameters
        ----------
        shard_shape : tuple of int
            The shard shape.

        Returns
        -------
        ShardFormat
            The object that reads and checks a shard's index, finds an inner chunk's
            bytes and assembles shards (``zarrfast.codecs.shard_format``).
        """
        return ShardFormat(self, tuple(shard_shape))

    # -- whole-shard encode/decode (general path) -----------------------------------
    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any, *,
               fill_value: Any = None, key: str = "<shard>") -> np.ndarray:
        """Decode a whole shard's bytes into an array of ``shape``.

        Parameters
        ----------
        data : bytes-like
            The shard.
        shape : tuple of int
            The shard shape.
        data_type : DataType
            The array's data type.
        fill_value : scalar, optional
            What empty inner chunks read as; default the data type's fill value.
        key : str, default "<shard>"
            The shard's store key, named in errors.

        Returns
        -------
        numpy.ndarray
            The shard's elements.

        Raises
        ------
        ChunkDecodeError
            The index is malformed (overlapping or out-of-range entries), or an inner
            chunk decodes to another shape.
        ChecksumError
            The index's checksum does not match.
        CodecError
            An inner chunk does not decode (naming the shard and the inner chunk).
        """
        fmt = self.format(shape)
        inner = self.inner_chain(data_type)
        fill = data_type.default_fill_value() if fill_value is None else fill_value
        index = fmt.index_of_shard(memoryview(data).cast("B"), key)
        out = np.empty(fmt.shard_shape, dtype=data_type.dtype)
        out.fill(fill)
        for j in np.flatnonzero(index[:, 0] != EMPTY).tolist():
            name = fmt.inner_name(j)
            try:
                arr = inner.decode(fmt.inner_bytes(data, index, j), fill_value=fill,
                                   key=f"{key}[{name}]")
            except CodecError as e:
                add_context(e, f"shard {key!r}, inner chunk {name}")
                raise
            if arr.shape != fmt.inner_shape:
                raise ChunkDecodeError(f"shard {key!r}, inner chunk {name}: decoded to shape "
                                       f"{arr.shape}, expected {fmt.inner_shape}")
            out[fmt.inner_region(j)] = arr
        return out

    def encode(self, chunk: np.ndarray, data_type: Any, *, fill_value: Any = None,
               write_empty_chunks: bool = False) -> bytes:
        """Encode a whole shard into its bytes.

        Parameters
        ----------
        chunk : numpy.ndarray
            The shard's elements.
        data_type : DataType
            The array's data type.
        fill_value : scalar, optional
            Inner chunks equal to it everywhere are left out (unless
            ``write_empty_chunks``); default the data type's fill value.
        write_empty_chunks : bool, default False
            Keep inner chunks equal to ``fill_value``.

        Returns
        -------
        bytes
            The encoded inner chunks and the index (a shard of empty inner chunks
            when all are left out).

        Raises
        ------
        CodecError
            An inner chunk cannot be encoded.
        """
        fmt = self.format(chunk.shape)
        inner = self.inner_chain(data_type)
        fill = data_type.default_fill_value() if fill_value is None else fill_value
        encoded: list[Any] = [None] * fmt.n_inner
        for j in range(fmt.n_inner):
            sub = chunk[fmt.inner_region(j)]
            if not write_empty_chunks and is_fill_chunk(sub, fill, data_type):
                continue
            encoded[j] = inner.encode(np.ascontiguousarray(sub), fill_value=fill,
                                      write_empty_chunks=write_empty_chunks)
        out = fmt.assemble(encoded)
        return fmt.empty_shard() if out is None else out
