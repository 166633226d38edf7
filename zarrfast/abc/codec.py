"""``zarr.abc.codec``: zarrfast's codec base classes under zarr-python's path.

``Codec`` (zarr-python's ``BaseCodec`` too), ``ArrayArrayCodec``, ``ArrayBytesCodec`` and
``BytesBytesCodec`` are :mod:`zarrfast.codecs`' classes: every codec zarrfast knows derives
from one of them.  See :mod:`zarrfast.abc`.
"""

from zarrfast.codecs import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec

BaseCodec = Codec

__all__ = ["ArrayArrayCodec", "ArrayBytesCodec", "BaseCodec", "BytesBytesCodec", "Codec"]
