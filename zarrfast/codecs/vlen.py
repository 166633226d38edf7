"""``vlen-utf8`` and ``vlen-bytes``: array -> bytes codecs for variable-length elements.

zarr-python 3 writes them for the ``string`` and ``variable_length_bytes`` data types::

    {"name": "vlen-utf8", "configuration": {}}
    {"name": "vlen-bytes", "configuration": {}}

The byte format is numcodecs' ``VLenUTF8`` / ``VLenBytes``: a little-endian ``uint32``
element count, then per element (in C order of the chunk as it reaches the codec) a
``uint32`` byte length and the bytes (UTF-8 for ``vlen-utf8``).

Their chunks hold Python objects, so they are decoded by
:class:`zarrfast.engine.objects.ObjectChain`, not by the byte-copying pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numcodecs
import numpy as np

from zarrfast.codecs._base import ArrayBytesCodec, parse_named_config
from zarrfast.errors import ChunkDecodeError, CodecError, MetadataValidationError

__all__ = ["VLenBytesCodec", "VLenUTF8Codec"]


def _declared_count(data: Any) -> int:
    b = memoryview(data).cast("B")
    if len(b) < 4:
        raise ChunkDecodeError(f"{len(b)} bytes cannot hold the 4-byte element count")
    return int.from_bytes(b[:4], "little")


@dataclass(frozen=True)
class _VLenCodec(ArrayBytesCodec):
    #: the data type this codec serialises
    data_type_names: ClassVar[tuple[str, ...]]
    #: what the element type is called in messages
    element: ClassVar[str]

    @classmethod
    def from_dict(cls, data: Any) -> _VLenCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict or str
            ``{"name": "vlen-utf8", "configuration": {}}`` (``"vlen-bytes"`` for the
            bytes codec), or the bare name.

        Returns
        -------
        VLenUTF8Codec or VLenBytesCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, or configuration members (it has none).
        """
        parse_named_config(data, cls.name)
        return cls()

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": ..., "configuration": {}}``, as zarr-python writes it.
        """
        return {"name": self.name, "configuration": {}}

    def _impl(self) -> Any:
        raise NotImplementedError

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the chunks hold the data type this codec serializes.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (any).
        data_type : DataType
            The data type: ``string`` for ``vlen-utf8``; ``variable_length_bytes`` (or
            ``bytes``) for ``vlen-bytes``.

        Raises
        ------
        MetadataValidationError
            Another data type.
        """
        if getattr(data_type, "name", None) not in self.data_type_names:
            raise MetadataValidationError(
                f"{self.name} codec: encodes the {self.data_type_names[0]!r} data type, not "
                f"{getattr(data_type, 'name', data_type)!r}"
            )

    def encode(self, chunk: np.ndarray, data_type: Any = None) -> bytes:
        """Encode the elements of ``chunk`` in C order.

        Parameters
        ----------
        chunk : numpy.ndarray
            The elements: ``str`` for ``vlen-utf8``, ``bytes`` for ``vlen-bytes``.
        data_type : DataType, optional
            The data type (not used).

        Returns
        -------
        bytes
            numcodecs' format: a little-endian ``uint32`` element count, then for
            each element its ``uint32`` byte length and its bytes (UTF-8 for strings).

        Raises
        ------
        CodecError
            An element of another type (its index and value named).
        """
        flat = np.ascontiguousarray(chunk, dtype=object).reshape(-1)
        for i, v in enumerate(flat):
            if not isinstance(v, self._types):
                raise CodecError(
                    f"{self.name} codec: element {i} ({v!r}, {type(v).__name__}) is not "
                    f"{self.element}"
                )
        try:
            return bytes(self._impl().encode(flat))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything
            raise CodecError(f"{self.name} codec: cannot encode: {e}") from None

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any = None) -> np.ndarray:
        """Decode bytes to an object array of ``shape``.

        Parameters
        ----------
        data : bytes-like
            Bytes in numcodecs' ``VLenUTF8``/``VLenBytes`` format.
        shape : tuple of int
            The chunk shape.
        data_type : DataType, optional
            The data type (not used).

        Returns
        -------
        numpy.ndarray
            An object array of ``str`` or ``bytes``.

        Raises
        ------
        ChunkDecodeError
            The element count is not ``shape``'s, or the bytes are malformed.
        """
        want = 1
        for s in shape:
            want *= s
        n = _declared_count(data)
        if n != want:
            raise ChunkDecodeError(
                f"{self.name} codec: decoded {n} elements, expected {want} (chunk shape "
                f"{list(shape)})"
            )
        try:
            out = self._impl().decode(memoryview(data).cast("B"))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything on bad bytes
            raise ChunkDecodeError(f"{self.name} codec: cannot decode: {e}") from None
        out = np.asarray(out, dtype=object)
        if out.size != want:  # pragma: no cover - numcodecs checks the count it read
            raise ChunkDecodeError(
                f"{self.name} codec: decoded {out.size} elements, expected {want}"
            )
        return out.reshape(shape)


@dataclass(frozen=True)
class VLenUTF8Codec(_VLenCodec):
    """``vlen-utf8``: the array -> bytes codec of variable-length UTF-8 strings.

    zarrfast (as zarr-python 3) gives arrays of the ``string`` data type
    (``dtype=str``) this serializer: ``{"name": "vlen-utf8", "configuration": {}}``.
    The bytes are numcodecs' ``VLenUTF8`` format: a little-endian ``uint32`` element
    count, then per element (C order) a ``uint32`` byte length and its UTF-8 bytes.
    It takes no parameters.

    Examples
    --------
    >>> arr = zarrfast.create_array(store={}, shape=(2,), dtype=str, compressors=None)
    >>> arr.serializer
    VLenUTF8Codec()
    >>> arr[:] = ["ab", "c"]
    >>> arr.store.get("c/0")
    b'\\x02\\x00\\x00\\x00\\x02\\x00\\x00\\x00ab\\x01\\x00\\x00\\x00c'
    """

    name = "vlen-utf8"
    data_type_names = ("string",)
    element = "a str"
    _types: ClassVar[tuple[type, ...]] = (str,)

    def _impl(self) -> Any:
        return numcodecs.VLenUTF8()


@dataclass(frozen=True)
class VLenBytesCodec(_VLenCodec):
    """``vlen-bytes``: the array -> bytes codec of variable-length byte strings.

    zarrfast (as zarr-python 3) gives arrays of the ``variable_length_bytes`` data type
    (``dtype=bytes``) this serializer: ``{"name": "vlen-bytes", "configuration": {}}``.
    The bytes are numcodecs' ``VLenBytes`` format: a little-endian ``uint32`` element
    count, then per element (C order) a ``uint32`` byte length and its bytes.  It takes
    no parameters.

    Examples
    --------
    >>> arr = zarrfast.create_array(store={}, shape=(2,), dtype=bytes)
    >>> arr.serializer
    VLenBytesCodec()
    >>> arr[:] = [b"ab", b""]
    >>> arr[:]
    array([b'ab', b''], dtype=object)
    """

    name = "vlen-bytes"
    data_type_names = ("variable_length_bytes", "bytes")
    element = "bytes"
    _types: ClassVar[tuple[type, ...]] = (bytes,)

    def _impl(self) -> Any:
        return numcodecs.VLenBytes()
