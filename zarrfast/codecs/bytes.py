"""``bytes`` codec: an array's elements as raw bytes in C order.

Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/ (array -> bytes).
Configuration ``endian``: ``"little"`` or ``"big"``; may be omitted for data
types of one byte.  Example::

    {"name": "bytes", "configuration": {"endian": "little"}}

Big-endian data are swapped by the Cython byte-swap kernels (fused into the
chunk copy on the fast path).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from zarrfast.codecs._base import ArrayBytesCodec, parse_named_config
from zarrfast.codecs._deprecated_enum import DeprecatedStrEnumMeta, coerce_enum_input
from zarrfast.errors import ChunkDecodeError, MetadataValidationError

NATIVE_ENDIAN = sys.byteorder  # "little" or "big"


class Endian(metaclass=DeprecatedStrEnumMeta):
    """Deprecated (zarr-python 3.4): pass ``"little"`` or ``"big"`` to
    [zarrfast.codecs.BytesCodec][] instead.

    ``Endian.little`` is the string ``"little"``, with a ``DeprecationWarning``, as in
    zarr-python 3.4.

    Examples
    --------
    >>> import warnings
    >>> from zarrfast.codecs import Endian
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     Endian.big
    'big'
    """

    _members: ClassVar[dict[str, str]] = {"little": "little", "big": "big"}


@dataclass(frozen=True, repr=False)
class BytesCodec(ArrayBytesCodec):
    """``bytes``: a chunk's elements as their raw bytes, in C order.

    The array -> bytes codec of fixed-size data types, and zarrfast's default
    serializer: ``{"name": "bytes", "configuration": {"endian": "little"}}``.  Each
    element takes its data type's item size; elements larger than one byte are stored
    in the byte order ``endian``.  For one-byte types the order is left out of the
    metadata (``evolve`` gives ``endian=None``).

    Parameters
    ----------
    endian : {"little", "big"} or None, default "little"
        The byte order of stored elements (an enum member is taken as its value, with
        a ``DeprecationWarning``, as zarr-python 3.4 does).  ``None`` omits it, which only data types of one byte
        allow (and the legacy ``structured`` type, read as little endian).

    Raises
    ------
    MetadataValidationError
        ``endian`` is another value.

    Examples
    --------
    >>> from zarrfast.codecs import BytesCodec
    >>> arr = zarrfast.create_array(store={}, shape=(2,), dtype=">i2",
    ...                             serializer=BytesCodec(endian="big"), compressors=None)
    >>> arr[:] = [1, 2]
    >>> arr.store.get("c/0")
    b'\\x00\\x01\\x00\\x02'
    >>> BytesCodec(endian="big").to_dict()
    {'name': 'bytes', 'configuration': {'endian': 'big'}}
    """

    endian: str | None = "little"
    name = "bytes"
    aliases = ("endian", "https://purl.org/zarr/spec/codec/bytes/1.0")

    def __repr__(self) -> str:  # zarr-python's
        return f"BytesCodec(endian={self.endian!r})"

    def __post_init__(self) -> None:
        # an enum member is taken as its string, with zarr-python 3.4's DeprecationWarning
        object.__setattr__(self, "endian", coerce_enum_input(self.endian, "endian",
                                                             "BytesCodec"))
        if self.endian not in ("little", "big", None):
            raise MetadataValidationError(
                f"bytes codec: endian must be one of ['little', 'big']. Got {self.endian!r}."
            )

    @classmethod
    def from_dict(cls, data: Any) -> BytesCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict or str
            ``{"name": "bytes", "configuration": {"endian": ...}}`` (or the draft names
            ``"endian"`` and the ``bytes`` URI); the configuration, or the bare name
            ``"bytes"``, without ``endian`` reads as ``endian=None``.

        Returns
        -------
        BytesCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown configuration member or a bad ``endian``.
        """
        config = parse_named_config(data, (cls.name, *cls.aliases), allowed=("endian",))
        return cls(endian=config.get("endian"))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "bytes", "configuration": {"endian": ...}}``, or
            ``{"name": "bytes"}`` when ``endian`` is ``None``.
        """
        if self.endian is None:
            return {"name": "bytes"}
        return {"name": "bytes", "configuration": {"endian": self.endian}}

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the codec can store chunks of ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (any).
        data_type : DataType
            The data type of the chunks.

        Raises
        ------
        MetadataValidationError
            A variable-length data type (which needs ``vlen-utf8`` or ``vlen-bytes``), or
            no ``endian`` for a type of more than one byte.
        """
        if getattr(data_type, "variable_length", False):
            codec = "vlen-utf8" if data_type.name == "string" else "vlen-bytes"
            raise MetadataValidationError(
                f"bytes codec: cannot encode the variable-length data type {data_type.name!r}; "
                f"use the {codec!r} codec"
            )
        if self.endian is None and data_type.swap_unit > 1 and data_type.name != "structured":
            raise MetadataValidationError(
                f"bytes codec: 'endian' is required for the {data_type.itemsize}-byte data "
                f"type {data_type.name}"
            )

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> BytesCodec:
        """Leave out ``endian`` for data types whose byte order does not matter.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (not used).
        data_type : DataType
            The data type of the chunks.

        Returns
        -------
        BytesCodec
            ``BytesCodec(endian=None)`` for one-byte elements, else ``self``.
        """
        if data_type.swap_unit == 1 and self.endian is not None:
            return BytesCodec(endian=None)
        return self

    def endian_of(self, data_type: Any) -> str | None:
        """Give the byte order the elements are stored in.

        Parameters
        ----------
        data_type : DataType
            The data type of the chunks.

        Returns
        -------
        str or None
            ``endian``; when that is ``None``: ``"little"`` for the legacy
            ``structured`` type (zarr-extensions), else ``None`` (the data type's
            declared order, as Zarr v2 stores it).
        """
        if self.endian is None and getattr(data_type, "name", None) == "structured":
            return "little"
        return self.endian

    def swap_unit(self, data_type: Any) -> int:
        """Give the size of the units whose bytes are swapped between stored and native.

        Parameters
        ----------
        data_type : DataType
            The data type of the chunks.

        Returns
        -------
        int
            1 if the stored order is the machine's (or does not matter), else the data
            type's swap unit (the item size; a complex number's part size).
        """
        endian = self.endian_of(data_type)
        if endian is None or endian == NATIVE_ENDIAN:
            return 1
        return data_type.swap_unit

    def encode(self, chunk: np.ndarray, data_type: Any) -> bytes | bytearray | memoryview:
        """Give a chunk's elements as bytes in C order and the stored byte order.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk.
        data_type : DataType
            Its data type.

        Returns
        -------
        memoryview
            The bytes (``itemsize`` bytes per element).
        """
        arr = np.ascontiguousarray(chunk, dtype=data_type.dtype)
        if self.swap_unit(data_type) > 1:
            order = "<" if self.endian_of(data_type) == "little" else ">"
            arr = arr.astype(data_type.dtype.newbyteorder(order))
        return arr.reshape(-1).view(np.uint8).data

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        """Read a chunk's elements from bytes in C order.

        Parameters
        ----------
        data : bytes-like
            The stored bytes.
        shape : tuple of int
            The chunk shape.
        data_type : DataType
            The chunk's data type.

        Returns
        -------
        numpy.ndarray
            The chunk in native byte order (a read-only view of ``data`` when no bytes
            need swapping).

        Raises
        ------
        ChunkDecodeError
            ``data`` does not hold exactly ``shape``'s elements.
        """
        n = int(np.prod(shape, dtype=np.int64)) * data_type.itemsize
        if len(data) != n:
            raise ChunkDecodeError(f"bytes codec: expected {n} bytes, got {len(data)}")
        dt = data_type.dtype
        if self.swap_unit(data_type) > 1:
            dt = dt.newbyteorder("<" if self.endian_of(data_type) == "little" else ">")
        arr = np.frombuffer(data, dtype=dt).reshape(shape)
        return arr.astype(data_type.dtype) if dt != data_type.dtype else arr
