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
from enum import Enum, StrEnum
from typing import Any

import numpy as np

from zarrfast.codecs._base import ArrayBytesCodec, parse_named_config
from zarrfast.errors import ChunkDecodeError, MetadataValidationError

NATIVE_ENDIAN = sys.byteorder  # "little" or "big"


class Endian(StrEnum):
    """The byte order of :class:`BytesCodec` (zarr-python's enum; equal to its string)."""

    big = "big"
    little = "little"


@dataclass(frozen=True, repr=False)
class BytesCodec(ArrayBytesCodec):
    endian: str | None = "little"
    name = "bytes"
    aliases = ("endian", "https://purl.org/zarr/spec/codec/bytes/1.0")

    def __repr__(self) -> str:  # zarr-python's
        endian = None if self.endian is None else Endian(self.endian)
        return f"BytesCodec(endian={endian!r})"

    def __post_init__(self) -> None:
        if isinstance(self.endian, Enum):  # kept as its string, which it equals
            object.__setattr__(self, "endian", self.endian.value)
        if self.endian not in ("little", "big", None):
            raise MetadataValidationError(
                f"bytes codec: endian must be 'little' or 'big', got {self.endian!r}"
            )

    @classmethod
    def from_dict(cls, data: Any) -> BytesCodec:
        config = parse_named_config(data, (cls.name, *cls.aliases), allowed=("endian",))
        return cls(endian=config.get("endian"))

    def to_dict(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": "bytes"}
        return {"name": "bytes", "configuration": {"endian": self.endian}}

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
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
        if data_type.swap_unit == 1 and self.endian is not None:
            return BytesCodec(endian=None)
        return self

    def endian_of(self, data_type: Any) -> str | None:
        """The stored byte order: the configured one; none given means little endian for
        the legacy ``structured`` type (zarr-extensions), else the declared order (v2)."""
        if self.endian is None and getattr(data_type, "name", None) == "structured":
            return "little"
        return self.endian

    def swap_unit(self, data_type: Any) -> int:
        """1 if the stored order is native (or irrelevant), else the swap unit size."""
        endian = self.endian_of(data_type)
        if endian is None or endian == NATIVE_ENDIAN:
            return 1
        return data_type.swap_unit

    def encode(self, chunk: np.ndarray, data_type: Any) -> bytes | bytearray | memoryview:
        arr = np.ascontiguousarray(chunk, dtype=data_type.dtype)
        if self.swap_unit(data_type) > 1:
            order = "<" if self.endian_of(data_type) == "little" else ">"
            arr = arr.astype(data_type.dtype.newbyteorder(order))
        return arr.reshape(-1).view(np.uint8).data

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64)) * data_type.itemsize
        if len(data) != n:
            raise ChunkDecodeError(f"bytes codec: expected {n} bytes, got {len(data)}")
        dt = data_type.dtype
        if self.swap_unit(data_type) > 1:
            dt = dt.newbyteorder("<" if self.endian_of(data_type) == "little" else ">")
        arr = np.frombuffer(data, dtype=dt).reshape(shape)
        return arr.astype(data_type.dtype) if dt != data_type.dtype else arr
