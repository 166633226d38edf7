"""Codecs: the core Zarr v3 codecs, the registry third parties extend, the codec chain
([zarrfast.codecs.CodecChain][], the one interpreter of a chain) and the shard format.

Every codec name is registered here, explicitly: the core codecs and the
``numcodecs.*`` codecs that zarr-python 3 writes, as zarr-python's classes
([zarrfast.codecs.numcodecs][]: ``Delta``, ``LZMA``, ... over ``numcodecs_v3``).
"""

from zarrfast import config as _config
from zarrfast.codecs import numcodecs
from zarrfast.codecs._base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec
from zarrfast.codecs.arithmetic import BitroundCodec, CastValueCodec, ReshapeCodec, ScaleOffsetCodec
from zarrfast.codecs.bytes import BytesCodec, Endian
from zarrfast.codecs.cast_value import CastValue
from zarrfast.codecs.chain import CodecChain
from zarrfast.codecs.compressors import (
    BloscCname,
    BloscCodec,
    BloscShuffle,
    Crc32cCodec,
    GzipCodec,
    ZstdCodec,
)
from zarrfast.codecs.registry import (
    _registry,
    get_codec_class,
    parse_codec,
    register_codec,
    registered_codecs,
)
from zarrfast.codecs.scale_offset import ScaleOffset
from zarrfast.codecs.sharding import (
    ShardingCodec,
    ShardingCodecIndexLocation,
    SubchunkWriteOrder,  # noqa: F401 - zarr-python 3.4's type (a Literal: no docstring)
)
from zarrfast.codecs.transpose import TransposeCodec
from zarrfast.codecs.vlen import VLenBytesCodec, VLenUTF8Codec

#: the compressors the draft layouts' zlib, bz2, lzma and lz4 convert to
ZlibCodec, BZ2Codec, LZMACodec, LZ4Codec = numcodecs.Zlib, numcodecs.BZ2, numcodecs.LZMA, numcodecs.LZ4

for _cls in (BytesCodec, TransposeCodec, GzipCodec, ZstdCodec, BloscCodec, Crc32cCodec,
             ShardingCodec, VLenUTF8Codec, VLenBytesCodec, ScaleOffsetCodec, CastValueCodec,
             BitroundCodec, ReshapeCodec, *numcodecs.wrapper_classes()):
    register_codec(_cls)
del _cls

__all__ = [
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BZ2Codec",
    "BitroundCodec",
    "BloscCname",
    "BloscShuffle",
    "CastValue",
    "CastValueCodec",
    "BloscCodec",
    "BytesBytesCodec",
    "BytesCodec",
    "Codec",
    "CodecChain",
    "Crc32cCodec",
    "Endian",
    "GzipCodec",
    "LZ4Codec",
    "LZMACodec",
    "ReshapeCodec",
    "ScaleOffset",
    "ScaleOffsetCodec",
    "ShardingCodec",
    "ShardingCodecIndexLocation",
    "TransposeCodec",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZlibCodec",
    "ZstdCodec",
    "get_codec_class",
    "numcodecs",
    "parse_codec",
    "register_codec",
    "registered_codecs",
]

# ``config.get("codecs")`` names the class of each codec, as zarr-python's does (zarrfast
# keeps values set there for code that reads them; its chain uses the classes registered)
_config.update_defaults({"codecs": {
    name: f"{cls.__module__}.{cls.__qualname__}"
    for name, cls in sorted(_registry.items()) if "/" not in name}})  # (no plugins loaded)
