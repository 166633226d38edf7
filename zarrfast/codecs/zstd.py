"""``zarr.codecs.zstd``: the Zstandard codec under zarr-python's module path."""

from zarrfast.codecs.compressors import ZstdCodec

__all__ = ["ZstdCodec"]
