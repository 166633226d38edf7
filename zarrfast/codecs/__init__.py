"""Codecs: the core Zarr v3 codecs and the registry third parties extend."""

from ._base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec
from .bytes import BytesCodec
from .compressors import BloscCodec, Crc32cCodec, GzipCodec, ZstdCodec
from .registry import get_codec_class, parse_codec, register_codec, registered_codecs
from .sharding import ShardingCodec
from .transpose import TransposeCodec
from .vlen import VLenBytesCodec, VLenUTF8Codec

for _cls in (BytesCodec, TransposeCodec, GzipCodec, ZstdCodec, BloscCodec, Crc32cCodec,
             ShardingCodec, VLenUTF8Codec, VLenBytesCodec):
    register_codec(_cls)
del _cls

__all__ = [
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BloscCodec",
    "BytesBytesCodec",
    "BytesCodec",
    "Codec",
    "Crc32cCodec",
    "GzipCodec",
    "ShardingCodec",
    "TransposeCodec",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZstdCodec",
    "get_codec_class",
    "parse_codec",
    "register_codec",
    "registered_codecs",
]
