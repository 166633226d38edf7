"""The codec protocol.

A Zarr v3 codec chain is zero or more *array -> array* codecs, exactly one
*array -> bytes* codec, then zero or more *bytes -> bytes* codecs
(zarr-specs ``docs/v3/core/index.rst``, "Codecs").  Each codec here is a small
frozen dataclass:

* ``Codec.from_dict(data)`` parses the metadata object (``{"name": ...,
  "configuration": {...}}``); errors quote the bad value.
* ``codec.to_dict()`` gives the metadata object back.
* ``codec.validate(shape=..., data_type=...)`` checks the codec can handle
  the decoded representation (``shape`` is the chunk shape it receives).
* ``codec.evolve(shape=..., data_type=...)`` fills in values chosen
  automatically (e.g. blosc's ``typesize``) before metadata is written.

Array -> array codecs map ``np.ndarray -> np.ndarray`` and tell the encoded
shape; the array -> bytes codec maps an array to bytes; bytes -> bytes codecs
map bytes-like to bytes-like and may decode into a caller's buffer when the
decoded size is known.  The pipeline (:mod:`zarrfast.engine.chunked`) fuses the core
``transpose`` and ``bytes`` codecs into its Cython copy kernels and only calls
these methods for other codecs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from zarrfast.errors import MetadataValidationError

__all__ = ["ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec", "Codec", "parse_named_config"]


def parse_named_config(
    data: Any, expected_name: str | tuple[str, ...], *, allowed: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Check ``data`` is ``{"name": expected, "configuration": {...}}`` (or the bare name)
    and return the configuration dict.  Unknown configuration members are errors."""
    names = (expected_name,) if isinstance(expected_name, str) else expected_name
    if isinstance(data, str):
        if data not in names:
            raise MetadataValidationError(f"expected codec name {names[0]!r}, got {data!r}")
        return {}
    if not isinstance(data, dict):
        raise MetadataValidationError(
            f"codec must be an object with 'name' and 'configuration', got {data!r}"
        )
    if data.get("name") not in names:
        raise MetadataValidationError(
            f"expected codec name {names[0]!r}, got {data.get('name')!r} in {data!r}"
        )
    extra = set(data) - {"name", "configuration", "must_understand"}
    if extra:
        raise MetadataValidationError(
            f"codec {data['name']!r} has unexpected members {sorted(extra)} in {data!r}"
        )
    config = data.get("configuration", {})
    if not isinstance(config, dict):
        raise MetadataValidationError(
            f"codec {data['name']!r}: 'configuration' must be an object, got {config!r}"
        )
    unknown = set(config) - set(allowed)
    if unknown:
        raise MetadataValidationError(
            f"codec {data['name']!r}: unknown configuration members {sorted(unknown)}; "
            f"expected some of {sorted(allowed)}"
        )
    return config


@dataclass(frozen=True)
class Codec:
    """Base of all codecs: one step of a chunk's codec chain.

    A codec is a frozen dataclass (hashable, compared by value) whose fields are its
    configuration.  ``name`` is the name its metadata object carries (``"zstd"``),
    ``kind`` its place in a chain (``"array_array"``, ``"array_bytes"`` or
    ``"bytes_bytes"``) and ``aliases`` other names it answers to when metadata is read
    (draft URIs).  Subclass [zarrfast.codecs.ArrayArrayCodec][],
    [zarrfast.codecs.ArrayBytesCodec][] or [zarrfast.codecs.BytesBytesCodec][], not this
    class, and register the subclass with [zarrfast.codecs.register_codec][].

    Examples
    --------
    >>> from zarrfast.codecs import Codec, ZstdCodec
    >>> codec = ZstdCodec(level=3)
    >>> isinstance(codec, Codec), codec.name, codec.kind
    (True, 'zstd', 'bytes_bytes')
    >>> codec.to_dict()
    {'name': 'zstd', 'configuration': {'level': 3, 'checksum': False}}
    >>> ZstdCodec.from_dict(codec.to_dict()) == codec
    True
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    #: other names this codec answers to when read (e.g. draft URIs)
    aliases: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data: Any) -> Codec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict or str
            ``{"name": ..., "configuration": {...}}`` as an array's metadata holds it (or,
            for codecs without required configuration, the bare name).

        Returns
        -------
        Codec
            The codec.

        Raises
        ------
        MetadataValidationError
            The name is not this codec's, or the configuration is invalid or has unknown
            members (the message quotes the bad value).
        """
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object, as an array's metadata records it.

        Returns
        -------
        dict
            ``{"name": ..., "configuration": {...}}`` (the configuration may be left
            out when it is empty); [from_dict][zarrfast.codecs.Codec.from_dict] makes
            an equal codec from it.
        """
        raise NotImplementedError

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check that the codec can take chunks of ``shape`` holding ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The shape of the chunk as it reaches this codec.
        data_type : DataType
            The data type of the chunk as it reaches this codec (zarrfast's data type
            object, with ``dtype``, ``itemsize`` and ``name``).

        Raises
        ------
        MetadataValidationError
            The codec cannot encode this representation (the base class accepts all).
        """

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> Codec:
        """Fill in the parameters chosen from the array when it is created.

        Parameters
        ----------
        shape : tuple of int
            The shape of the chunk as it reaches this codec.
        data_type : DataType
            The data type of the chunk as it reaches this codec.

        Returns
        -------
        Codec
            The codec as the array's metadata records it (``self`` when nothing is left
            to choose; blosc fills in ``typesize`` and ``shuffle``, for example).
        """
        return self


@dataclass(frozen=True)
class ArrayArrayCodec(Codec):
    """Base of the array -> array codecs (filters): a chunk array in, a chunk array out.

    They come first in a chain, before the one array -> bytes codec; an array's
    ``filters`` are these codecs.  A subclass implements ``encode`` and ``decode`` (or
    ``decode_as``) and, when it changes them, ``encoded_shape`` and
    ``encoded_data_type``.

    Examples
    --------
    >>> from zarrfast.codecs import ArrayArrayCodec, TransposeCodec
    >>> codec = TransposeCodec(order=(1, 0))
    >>> isinstance(codec, ArrayArrayCodec), codec.encoded_shape((2, 3))
    (True, (3, 2))
    """

    kind: ClassVar[str] = "array_array"

    def encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Give the shape of what [encode][zarrfast.codecs.ArrayArrayCodec.encode]
        makes of a chunk of ``shape``.

        Parameters
        ----------
        shape : tuple of int
            The shape of the chunk the codec receives.

        Returns
        -------
        tuple of int
            The encoded shape (the base class keeps ``shape``).

        Raises
        ------
        MetadataValidationError
            A codec that cannot reshape ``shape`` says so (``reshape``).
        """
        return shape

    def encoded_data_type(self, data_type: Any) -> Any:
        """Give the data type of what ``encode`` makes of chunks of ``data_type``.

        Parameters
        ----------
        data_type : DataType
            The data type of the chunk the codec receives.

        Returns
        -------
        DataType
            The encoded data type (most codecs keep ``data_type``; ``cast_value`` gives
            its target type).
        """
        return data_type

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        """Encode one chunk.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk, of the shape and data type the codec receives.

        Returns
        -------
        numpy.ndarray
            The encoded chunk, of ``encoded_shape(chunk.shape)``.

        Raises
        ------
        CodecError
            The values cannot be encoded (they do not fit, for example).
        """
        raise NotImplementedError

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Decode one chunk (of ``encoded_shape(shape)``) into an array of ``shape``.

        Parameters
        ----------
        chunk : numpy.ndarray
            The encoded chunk.
        shape : tuple of int
            The shape of the decoded chunk.

        Returns
        -------
        numpy.ndarray
            The decoded chunk.

        Raises
        ------
        CodecError
            The chunk does not decode (a wrong element count, values out of range).
        """
        raise NotImplementedError

    def decode_as(self, chunk: np.ndarray, shape: tuple[int, ...],
                  data_type: Any) -> np.ndarray:
        """Decode one chunk, told the data type to give.

        A codec that changes the data type, such as ``cast_value``, needs it; the base
        class calls [decode][zarrfast.codecs.ArrayArrayCodec.decode].

        Parameters
        ----------
        chunk : numpy.ndarray
            The encoded chunk.
        shape : tuple of int
            The shape of the decoded chunk.
        data_type : DataType
            The data type of the decoded chunk (what the codec received when encoding).

        Returns
        -------
        numpy.ndarray
            The decoded chunk.

        Raises
        ------
        CodecError
            The chunk does not decode.
        """
        return self.decode(chunk, shape)


@dataclass(frozen=True)
class ArrayBytesCodec(Codec):
    """Base of the array -> bytes codecs (serializers): a chunk array in, bytes out.

    A chain has exactly one, after the array -> array codecs and before the bytes ->
    bytes codecs: ``bytes`` for fixed-size types, ``vlen-utf8``/``vlen-bytes`` for
    variable-length ones, ``sharding_indexed`` for shards.  An array's ``serializer``
    is this codec.

    Examples
    --------
    >>> from zarrfast.codecs import ArrayBytesCodec
    >>> arr = zarrfast.create_array(store={}, shape=(4,), dtype="int16")
    >>> isinstance(arr.serializer, ArrayBytesCodec), arr.serializer
    (True, BytesCodec(endian='little'))
    """

    kind: ClassVar[str] = "array_bytes"

    def encode(self, chunk: np.ndarray, data_type: Any) -> bytes | bytearray | memoryview:
        """Encode one chunk array to bytes.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk as the array -> array codecs left it.
        data_type : DataType
            Its data type.

        Returns
        -------
        bytes, bytearray or memoryview
            The encoded bytes, for the bytes -> bytes codecs.

        Raises
        ------
        CodecError
            The elements cannot be encoded.
        """
        raise NotImplementedError

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        """Decode bytes into a chunk array.

        Parameters
        ----------
        data : bytes-like
            The bytes the bytes -> bytes codecs left.
        shape : tuple of int
            The shape of the chunk to give.
        data_type : DataType
            Its data type.

        Returns
        -------
        numpy.ndarray
            The chunk, of ``shape``.

        Raises
        ------
        ChunkDecodeError
            The bytes do not hold a chunk of ``shape`` (a wrong size, a bad header).
        """
        raise NotImplementedError


@dataclass(frozen=True)
class BytesBytesCodec(Codec):
    """Base of the bytes -> bytes codecs: compressors and checksums.

    They come last in a chain, after the array -> bytes codec; an array's
    ``compressors`` are these codecs.  ``decode`` may be given a buffer of exactly the
    decoded size to fill (``out``); the core compressors also take ``limit=``, the
    largest decoded size to accept, and refuse larger output before allocating it (a
    stored chunk is untrusted input).

    Examples
    --------
    >>> from zarrfast.codecs import BytesBytesCodec, GzipCodec
    >>> codec = GzipCodec(level=1)
    >>> isinstance(codec, BytesBytesCodec)
    True
    >>> bytes(codec.decode(codec.encode(b"abc" * 100)))[:6]
    b'abcabc'
    """

    kind: ClassVar[str] = "bytes_bytes"
    #: the compressed format, when the batched decoder (``_kernels.ChunkDecoder``) can
    #: decode it exactly as :meth:`decode` does: ``"zstd"``, ``"blosc"``, ``"gzip"`` or
    #: ``"zlib"`` (a chunk it cannot decode so, it leaves to :meth:`decode`)
    batch_codec: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # a subclass with a decode of its own decodes differently from the batched
        # decoder, unless it says otherwise
        if "decode" in cls.__dict__ and "batch_codec" not in cls.__dict__:
            cls.batch_codec = None

    def encode(self, data: Any) -> bytes | bytearray | memoryview:
        """Encode (compress, or add a checksum to) bytes.

        Parameters
        ----------
        data : bytes-like
            The bytes the previous codec gave.

        Returns
        -------
        bytes, bytearray or memoryview
            The encoded bytes.

        Raises
        ------
        CodecError
            The data cannot be encoded.
        """
        raise NotImplementedError

    def decode(self, data: Any, out: bytearray | memoryview | np.ndarray | None = None) -> Any:
        """Decode ``data``.

        The core compressors also take ``limit=`` (used when ``out`` is not given): the
        largest decoded size to accept; they refuse more before allocating it.

        Parameters
        ----------
        data : bytes-like
            The encoded bytes.
        out : bytearray, memoryview or numpy.ndarray, optional
            A buffer of exactly the decoded size; the codec may fill it and return it
            (or return another buffer).

        Returns
        -------
        bytes-like
            The decoded bytes.

        Raises
        ------
        CodecError
            The data do not decode (or decode to another size than ``out``'s).
        ChecksumError
            A checksum codec found the data changed.
        """
        raise NotImplementedError

    def compute_encoded_size(self, decoded_size: int) -> int | None:
        """Give the encoded size of ``decoded_size`` bytes, for codecs of a fixed size.

        Parameters
        ----------
        decoded_size : int
            A number of bytes before encoding.

        Returns
        -------
        int or None
            The number of bytes after encoding, or ``None`` when it depends on the data
            (all compressors; a shard's index codecs must have a fixed size).
        """
        return None
