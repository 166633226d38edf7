"""Compression codecs (bytes -> bytes), delegated to numcodecs.

* ``gzip`` — https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/ —
  ``{"name": "gzip", "configuration": {"level": 5}}`` (level 0–9).
* ``zstd`` — zarr-extensions ``codecs/zstd`` —
  ``{"name": "zstd", "configuration": {"level": 0, "checksum": false}}``.
* ``blosc`` — https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/ —
  ``{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
  "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}``.

numcodecs releases the GIL while (de)compressing, so chunks decode in
parallel on the thread pool.  Where the decoded size is known the pipeline
passes a buffer to decode into (zstd and blosc fill it directly).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import crc32c  # imported up front: its import reads ~190 KB of files, not on a first read
import numcodecs
import numpy as np

from ..errors import ChecksumError, CodecError, MetadataValidationError
from ._base import BytesBytesCodec, parse_named_config


def _int_in(config: dict, key: str, lo: int, hi: int, codec: str, default: Any = None) -> int:
    if key not in config:
        if default is None:
            raise MetadataValidationError(f"{codec} codec: missing configuration member {key!r}")
        return default
    v = config[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise MetadataValidationError(
            f"{codec} codec: {key} must be an integer in [{lo}, {hi}], got {v!r}"
        )
    return v


class _Local(threading.local):
    codec: Any = None


@dataclass(frozen=True)
class GzipCodec(BytesBytesCodec):
    level: int = 5
    name = "gzip"
    aliases = ("https://purl.org/zarr/spec/codec/gzip/1.0",)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        _int_in({"level": self.level}, "level", 0, 9, "gzip")
        object.__setattr__(self, "_impl", numcodecs.GZip(level=self.level))

    @classmethod
    def from_dict(cls, data: Any) -> GzipCodec:
        config = parse_named_config(data, (cls.name, *cls.aliases), allowed=("level",))
        return cls(level=_int_in(config, "level", 0, 9, "gzip"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": "gzip", "configuration": {"level": self.level}}

    def encode(self, data: Any) -> bytes:
        return self._impl.encode(data)

    def decode(self, data: Any, out: Any = None) -> Any:
        try:
            return self._impl.decode(data)
        except Exception as e:  # noqa: BLE001 - zlib.error, EOFError, ...
            raise CodecError(f"gzip: cannot decompress {len(data)} bytes: {e}") from e


@dataclass(frozen=True)
class ZstdCodec(BytesBytesCodec):
    level: int = 0
    checksum: bool = False
    name = "zstd"
    aliases = ("https://purl.org/zarr/spec/codec/zstd/1.0",)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        _int_in({"level": self.level}, "level", -131072, 22, "zstd")
        if not isinstance(self.checksum, bool):
            raise MetadataValidationError(
                f"zstd codec: checksum must be true or false, got {self.checksum!r}"
            )
        object.__setattr__(self, "_impl", numcodecs.Zstd(level=self.level, checksum=self.checksum))

    @classmethod
    def from_dict(cls, data: Any) -> ZstdCodec:
        config = parse_named_config(
            data, (cls.name, *cls.aliases), allowed=("level", "checksum")
        )
        level = _int_in(config, "level", -131072, 22, "zstd", default=0)
        return cls(level=level, checksum=config.get("checksum", False))

    def to_dict(self) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def encode(self, data: Any) -> bytes:
        return self._impl.encode(data)

    def decode(self, data: Any, out: Any = None) -> Any:
        try:
            if out is not None:
                return self._impl.decode(data, out=out)
            return self._impl.decode(data)
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"zstd: cannot decompress {len(data)} bytes: {e}") from e


_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")


@dataclass(frozen=True)
class BloscCodec(BytesBytesCodec):
    cname: str = "zstd"
    clevel: int = 5
    shuffle: str | None = None  # None: choose on evolve (bitshuffle for 1-byte, else shuffle)
    typesize: int | None = None
    blocksize: int = 0
    name = "blosc"
    aliases = ("https://purl.org/zarr/spec/codec/blosc/1.0",)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.cname not in _CNAMES:
            raise MetadataValidationError(
                f"blosc codec: cname must be one of {list(_CNAMES)}, got {self.cname!r}"
            )
        _int_in({"clevel": self.clevel}, "clevel", 0, 9, "blosc")
        if self.shuffle is not None and self.shuffle not in _SHUFFLE:
            raise MetadataValidationError(
                f"blosc codec: shuffle must be one of {list(_SHUFFLE)}, got {self.shuffle!r}"
            )
        if self.typesize is not None:
            _int_in({"typesize": self.typesize}, "typesize", 1, 255, "blosc")
        _int_in({"blocksize": self.blocksize}, "blocksize", 0, 2**31 - 1, "blosc")
        object.__setattr__(
            self,
            "_impl",
            numcodecs.Blosc(
                cname=self.cname,
                clevel=self.clevel,
                shuffle=_SHUFFLE[self.shuffle or "noshuffle"],
                blocksize=self.blocksize,
                typesize=self.typesize,
            ),
        )

    @classmethod
    def from_dict(cls, data: Any) -> BloscCodec:
        config = parse_named_config(
            data,
            (cls.name, *cls.aliases),
            allowed=("cname", "clevel", "shuffle", "typesize", "blocksize"),
        )
        for key in ("cname", "clevel", "shuffle"):
            if key not in config:
                raise MetadataValidationError(f"blosc codec: missing configuration member {key!r}")
        shuffle = config["shuffle"]
        typesize = config.get("typesize")
        if shuffle != "noshuffle" and typesize is None:
            raise MetadataValidationError(
                f"blosc codec: typesize is required when shuffle is {shuffle!r}"
            )
        return cls(
            cname=config["cname"],
            clevel=config["clevel"],
            shuffle=shuffle,
            typesize=typesize,
            blocksize=config.get("blocksize", 0),
        )

    def to_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "typesize": self.typesize,
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": self.shuffle or "noshuffle",
            "blocksize": self.blocksize,
        }
        if config["typesize"] is None:
            del config["typesize"]
        return {"name": "blosc", "configuration": config}

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> BloscCodec:
        typesize = self.typesize if self.typesize is not None else data_type.itemsize
        shuffle = self.shuffle
        if shuffle is None:
            shuffle = "bitshuffle" if data_type.itemsize == 1 else "shuffle"
        if typesize == self.typesize and shuffle == self.shuffle:
            return self
        return BloscCodec(self.cname, self.clevel, shuffle, typesize, self.blocksize)

    def encode(self, data: Any) -> bytes:
        arr = np.frombuffer(data, dtype=np.uint8)
        return self._impl.encode(arr)

    def decode(self, data: Any, out: Any = None) -> Any:
        try:
            if out is not None:
                return self._impl.decode(data, out=out)
            return self._impl.decode(data)
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"blosc: cannot decompress {len(data)} bytes: {e}") from e


@dataclass(frozen=True)
class Crc32cCodec(BytesBytesCodec):
    """``crc32c``: append a CRC-32C checksum of the data (4 bytes, little endian).

    Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/ ::

        {"name": "crc32c"}
    """

    name = "crc32c"
    aliases = ("https://purl.org/zarr/spec/codec/crc32c/1.0",)

    @classmethod
    def from_dict(cls, data: Any) -> Crc32cCodec:
        parse_named_config(data, (cls.name, *cls.aliases), allowed=())
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": "crc32c"}

    def encode(self, data: Any) -> bytes:
        view = memoryview(data).cast("B")
        return bytes(view) + crc32c.crc32c(view).to_bytes(4, "little")

    def decode(self, data: Any, out: Any = None) -> Any:
        view = memoryview(data).cast("B")
        if len(view) < 4:
            raise ChecksumError(f"crc32c: {len(view)} bytes is too short to hold a checksum")
        payload = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        actual = crc32c.crc32c(payload)
        if stored != actual:
            raise ChecksumError(
                f"crc32c: checksum mismatch (stored 0x{stored:08x}, computed 0x{actual:08x})"
            )
        return payload

    def compute_encoded_size(self, decoded_size: int) -> int:
        return decoded_size + 4
