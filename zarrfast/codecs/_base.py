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
    """Base of all codecs."""

    name: ClassVar[str]
    kind: ClassVar[str]
    #: other names this codec answers to when read (e.g. draft URIs)
    aliases: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data: Any) -> Codec:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Raise ``MetadataValidationError`` if the codec can't take this representation."""

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> Codec:
        """Return the codec with automatically chosen parameters filled in."""
        return self


@dataclass(frozen=True)
class ArrayArrayCodec(Codec):
    kind: ClassVar[str] = "array_array"

    def encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def encoded_data_type(self, data_type: Any) -> Any:
        """The data type of what :meth:`encode` gives for ``data_type`` (most keep it)."""
        return data_type

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Decode ``chunk`` (of ``encoded_shape(shape)``) into an array of ``shape``."""
        raise NotImplementedError

    def decode_as(self, chunk: np.ndarray, shape: tuple[int, ...],
                  data_type: Any) -> np.ndarray:
        """:meth:`decode`, told the data type to give (a codec that changes the type,
        such as ``cast_value``, needs it)."""
        return self.decode(chunk, shape)


@dataclass(frozen=True)
class ArrayBytesCodec(Codec):
    kind: ClassVar[str] = "array_bytes"

    def encode(self, chunk: np.ndarray, data_type: Any) -> bytes | bytearray | memoryview:
        raise NotImplementedError

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class BytesBytesCodec(Codec):
    kind: ClassVar[str] = "bytes_bytes"
    #: the compressed format, when the batched decoder (``_kernels.ChunkDecoder``) can
    #: decode it exactly as :meth:`decode` does: ``"zstd"`` or ``"blosc"``
    batch_codec: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # a subclass with a decode of its own decodes differently from the batched
        # decoder, unless it says otherwise
        if "decode" in cls.__dict__ and "batch_codec" not in cls.__dict__:
            cls.batch_codec = None

    def encode(self, data: Any) -> bytes | bytearray | memoryview:
        raise NotImplementedError

    def decode(self, data: Any, out: bytearray | memoryview | np.ndarray | None = None) -> Any:
        """Decode ``data``.  If ``out`` is given it has exactly the decoded size;
        the codec may fill it and return it (or return another buffer).

        The core compressors also take ``limit=`` (used when ``out`` is not given): the
        largest decoded size to accept; they refuse more before allocating it."""
        raise NotImplementedError

    def compute_encoded_size(self, decoded_size: int) -> int | None:
        """Encoded size for fixed-size codecs (``None`` when data-dependent)."""
        return None
