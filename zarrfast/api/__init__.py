"""The module-level functions (layer 3), as zarr-python 3 lays them out.

* :mod:`zarrfast.api.synchronous` -- ``zarr.api.synchronous``: open, create, save, load...
  The fast path: plain calls into the hierarchy and the engine, no event loop.
* :mod:`zarrfast.api.asynchronous` -- ``zarr.api.asynchronous``: the same functions as
  coroutines returning :class:`~zarrfast.AsyncArray` / :class:`~zarrfast.AsyncGroup`.
  They run the synchronous function on a worker thread, where the engine hands the
  chunk work to zarrfast's pools and the store's ``get_many``: one implementation.

``from zarrfast.api import X`` gives the synchronous functions, as it always has.
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
