"""zarrfast: a fast, drop-in Zarr v3 implementation for Python.

Replace ``import zarr`` with ``import zarrfast as zarr``::

    import zarrfast
    a = zarrfast.create_array("data.zarr", shape=(1000, 1000), chunks=(100, 100), dtype="f4")
    a[:10, ::2] = 1.0
    print(a[5, :4])
"""

from zarrfast import api, codecs, config, dtype, errors, storage
from zarrfast.api import (
    array,
    consolidate_metadata,
    create,
    create_array,
    create_group,
    create_hierarchy,
    empty,
    empty_like,
    from_array,
    full,
    full_like,
    group,
    load,
    ones,
    ones_like,
    open,
    open_array,
    open_consolidated,
    open_group,
    open_like,
    save,
    save_array,
    save_group,
    tree,
    zeros,
    zeros_like,
)
from zarrfast.convert import convert
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.asynchronous import AsyncArray, AsyncGroup
from zarrfast.hierarchy.group import Group
from zarrfast.storage import LocalStore, MemoryStore, Store

__version__ = "0.1.0"

__all__ = [
    "Array",
    "AsyncArray",
    "AsyncGroup",
    "Group",
    "LocalStore",
    "MemoryStore",
    "Store",
    "__version__",
    "api",
    "array",
    "codecs",
    "config",
    "consolidate_metadata",
    "convert",
    "create",
    "create_array",
    "create_group",
    "create_hierarchy",
    "dtype",
    "empty",
    "empty_like",
    "errors",
    "from_array",
    "full",
    "full_like",
    "group",
    "load",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "save",
    "save_array",
    "save_group",
    "storage",
    "tree",
    "zeros",
    "zeros_like",
]
