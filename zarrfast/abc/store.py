"""``zarr.abc.store``: zarrfast's store interface under zarr-python's path.

``Store`` is :class:`zarrfast.storage.Store` (every zarrfast store, and every store given to
zarrfast, is one); the byte requests are zarrfast's, which zarr-python's equal in name and
fields.  See :mod:`zarrfast.abc`.
"""

from zarrfast.storage import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)

__all__ = ["ByteRequest", "OffsetByteRequest", "RangeByteRequest", "Store",
           "SuffixByteRequest"]
