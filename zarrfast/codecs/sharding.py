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

Arrays whose codecs are this codec (optionally followed by bytes -> bytes
codecs) are read and written by :mod:`zarrfast.engine.sharded`, which fetches only
the index and the inner chunks a selection touches.  :meth:`encode` and
:meth:`decode` (whole shards) serve the general pipeline, e.g. when an array ->
array codec comes before the sharding codec, and nested sharding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrfast.codecs._base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    Codec,
    parse_named_config,
)
from zarrfast.codecs.bytes import BytesCodec
from zarrfast.codecs.compressors import Crc32cCodec
from zarrfast.errors import MetadataValidationError


def _parse_chain(value: Any, what: str) -> tuple[Codec, ...]:
    from zarrfast.codecs.registry import parse_codec

    if not isinstance(value, (list, tuple)):
        raise MetadataValidationError(f"sharding_indexed: {what} must be a list, got {value!r}")
    out = []
    for i, c in enumerate(value):
        codec = parse_codec(c, where=f"sharding_indexed: {what}[{i}]")
        if codec is not None:
            out.append(codec)
    return tuple(out)


@dataclass(frozen=True)
class ShardingCodec(ArrayBytesCodec):
    chunk_shape: tuple[int, ...] = ()
    codecs: tuple[Codec, ...] = (BytesCodec(),)
    index_codecs: tuple[Codec, ...] = (BytesCodec(), Crc32cCodec())
    index_location: str = "end"
    #: whether metadata spells out ``index_location`` (tensorstore omits the default)
    write_index_location: bool = field(default=True, compare=False)
    name = "sharding_indexed"
    aliases = ("https://purl.org/zarr/spec/codec/sharding-indexed/1.0",)

    def __post_init__(self) -> None:
        shape = self.chunk_shape
        if not isinstance(shape, (list, tuple)) or not all(
            isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1 for c in shape
        ):
            raise MetadataValidationError(
                f"sharding_indexed: chunk_shape must be a list of integers >= 1, got {shape!r}"
            )
        object.__setattr__(self, "chunk_shape", tuple(int(c) for c in shape))
        if self.index_location not in ("start", "end"):
            raise MetadataValidationError(
                f"sharding_indexed: index_location must be 'start' or 'end', got "
                f"{self.index_location!r}"
            )
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

    @classmethod
    def from_dict(cls, data: Any) -> ShardingCodec:
        config = parse_named_config(
            data, (cls.name, *cls.aliases),
            allowed=("chunk_shape", "codecs", "index_codecs", "index_location"),
        )
        for key in ("chunk_shape", "codecs", "index_codecs"):
            if key not in config:
                raise MetadataValidationError(f"sharding_indexed: missing {key!r} in {data!r}")
        shape = config["chunk_shape"]
        if not isinstance(shape, list):
            raise MetadataValidationError(
                f"sharding_indexed: chunk_shape must be a list of integers, got {shape!r}"
            )
        return cls(
            chunk_shape=tuple(shape),
            codecs=_parse_chain(config["codecs"], "codecs"),
            index_codecs=_parse_chain(config["index_codecs"], "index_codecs"),
            index_location=config.get("index_location", "end"),
            write_index_location="index_location" in config,
        )

    def to_dict(self) -> dict[str, Any]:
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
        return tuple(s // c for s, c in zip(shard_shape, self.chunk_shape, strict=True))

    def index_shape(self, shard_shape: tuple[int, ...]) -> tuple[int, ...]:
        return (*self.chunks_per_shard(shard_shape), 2)

    def index_nbytes(self, shard_shape: tuple[int, ...]) -> int:
        """Encoded size of the index (fixed, as the spec requires)."""
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
        from zarrfast.metadata.dtype import parse_data_type
        from zarrfast.metadata.v3 import validate_codec_chain

        if len(self.chunk_shape) != len(shape):
            raise MetadataValidationError(
                f"sharding_indexed: chunk_shape {list(self.chunk_shape)} has rank "
                f"{len(self.chunk_shape)} but the shard shape {list(shape)} has rank {len(shape)}"
            )
        for s, c in zip(shape, self.chunk_shape, strict=True):
            if s % c:
                raise MetadataValidationError(
                    f"sharding_indexed: inner chunk_shape {list(self.chunk_shape)} does not "
                    f"evenly divide the shard shape {list(shape)}"
                )
        validate_codec_chain(self.codecs, shape=self.chunk_shape, data_type=data_type,
                             node="sharding_indexed codecs")
        validate_codec_chain(self.index_codecs, shape=self.index_shape(shape),
                             data_type=parse_data_type("uint64"),
                             node="sharding_indexed index_codecs")
        self.index_nbytes(shape)

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> ShardingCodec:
        from zarrfast.metadata.dtype import parse_data_type

        def evolve_chain(chain: tuple[Codec, ...], cshape: tuple[int, ...], dt: Any):
            out = []
            for c in chain:
                c2 = c.evolve(shape=cshape, data_type=dt)
                out.append(c2)
                if isinstance(c2, ArrayArrayCodec):
                    cshape = c2.encoded_shape(cshape)
            return tuple(out)

        codecs = evolve_chain(self.codecs, self.chunk_shape, data_type)
        index_codecs = evolve_chain(self.index_codecs, self.index_shape(shape),
                                    parse_data_type("uint64"))
        if codecs == self.codecs and index_codecs == self.index_codecs:
            return self
        return ShardingCodec(self.chunk_shape, codecs, index_codecs, self.index_location,
                             self.write_index_location)

    # -- whole-shard encode/decode (general path) -----------------------------------
    def encode(self, chunk: np.ndarray, data_type: Any) -> bytes:
        from zarrfast.engine.sharded import ShardLayout

        layout = ShardLayout.for_codec(self, tuple(chunk.shape), data_type, None)
        return layout.encode_array(chunk)

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        from zarrfast.engine.sharded import ShardLayout

        layout = ShardLayout.for_codec(self, tuple(shape), data_type, None)
        return layout.decode_array(data, key="<shard>")


