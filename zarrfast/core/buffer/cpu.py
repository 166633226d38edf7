"""``zarr.buffer.cpu`` and ``zarr.core.buffer.cpu``: zarr-python's CPU buffers, which are
zarrfast's only ones (:mod:`zarrfast.core.buffer`).  ``buffer_prototype`` is the default
prototype, as zarr-python's 3.4 user guide uses it (``buffer_prototype.buffer.from_bytes``).
"""

from __future__ import annotations

from zarrfast.core.buffer import (
    Buffer,
    BufferPrototype,
    NDBuffer,
    default_buffer_prototype,
    numpy_buffer_prototype,
)

__all__ = ["Buffer", "BufferPrototype", "NDBuffer", "buffer_prototype",
           "numpy_buffer_prototype"]

#: the prototype of CPU buffers (``Buffer``, ``NDBuffer``), zarr-python's default
buffer_prototype = default_buffer_prototype()
