"""``zarr.core``: the names users of zarr-python import from its ``zarr.core`` modules.

zarr-python calls ``zarr.core`` private, yet its user guide and its custom data type
example import from it (``zarr.core.group.GroupMetadata``, ``zarr.core.dtype.Int8``,
``zarr.core.common.JSON``).  These modules give zarrfast's objects under those paths, so
that such code runs after ``import zarrfast as zarr``; they hold nothing of their own.
"""
