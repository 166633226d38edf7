"""``zarr.core``: the names users of zarr-python import from its ``zarr.core`` modules.

zarr-python calls ``zarr.core`` private, yet its user guide and its custom data type
example import from it (``zarr.core.group.GroupMetadata``, ``zarr.core.dtype.Int8``,
``zarr.core.common.JSON``).  These modules give zarrfast's objects under those paths, so
that such code runs after ``import zarrfast as zarr``; they hold nothing of their own.
"""

#: the modules of ``zarr.core`` imported on first attribute access (``zarr.core.sync.sync``
#: works after a bare ``import zarr``, as zarr-python's ``zarr/__init__`` imports them all)
_SUBMODULES = ("array", "array_spec", "buffer", "common", "dtype", "group", "metadata", "sync",
               "sync_group")


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
