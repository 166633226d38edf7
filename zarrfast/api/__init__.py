"""zarrfast's module-level functions, laid out as zarr-python 3's zarr.api.

zarrfast.api.synchronous, as zarr.api.synchronous: open, open_array, open_group,
create_array, create, zeros, save, load, consolidate_metadata... the functions that
zarrfast itself exports (zarrfast.open_array is zarrfast.api.synchronous.open_array).
They are plain calls: no event loop is involved.

zarrfast.api.asynchronous, as zarr.api.asynchronous: the same functions as coroutines,
which give zarrfast.AsyncArray and zarrfast.AsyncGroup.  Each runs the synchronous
function on a worker thread: the results are the same.

from zarrfast.api import open_array (or any function listed below) gives the
synchronous function.
"""

from zarrfast.api import asynchronous, synchronous
from zarrfast.api.synchronous import (
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
    get_many,
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

__all__ = [
    "array",
    "asynchronous",
    "consolidate_metadata",
    "create",
    "create_array",
    "create_group",
    "create_hierarchy",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "get_many",
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
    "synchronous",
    "tree",
    "zeros",
    "zeros_like",
]
