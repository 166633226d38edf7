"""The module-level functions as coroutines (zarr-python's ``zarr.api.asynchronous``).

Each function takes the arguments of its synchronous twin in
:mod:`zarrfast.api.synchronous` and runs it on a worker thread of the running event
loop (``asyncio.to_thread``): the loop is never blocked, and the work itself is the
synchronous path's (the engine's pools, the store's ``get_many``), not a second
implementation.  Arrays and groups come back as :class:`~zarrfast.AsyncArray` /
:class:`~zarrfast.AsyncGroup`; asynchronous nodes given as arguments (``empty_like(a)``,
``from_array(store, data=a)``, ``tree(g)``) are accepted, and so is a
:class:`~zarrfast.storage.StorePath` as the store, as in the synchronous API (its path
goes first in the node's path)::

    import zarrfast.api.asynchronous as zarr_async

    arr = await zarr_async.create_array(store, shape=(100,), chunks=(10,), dtype="f4")
    await arr.setitem(slice(None), 1.0)
    group = await zarr_async.open_group(store, mode="r")
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from zarrfast.api import synchronous as _sync
from zarrfast.concurrency import in_thread
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.asynchronous import AsyncArray, AsyncGroup, async_view
from zarrfast.hierarchy.node import AsyncNode

# (the functions, as zarr-python's: the classes AsyncArray and AsyncGroup are importable
# from here but are zarrfast's top-level names; zarr-python's tests pair this list with
# zarrfast.api.synchronous's)
__all__ = [
    "array",
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
    "tree",
    "zeros",
    "zeros_like",
]


def _plain(value: Any) -> Any:
    """An asynchronous node as its synchronous node; anything else as it is."""
    return value._node if isinstance(value, AsyncNode) else value


def _coroutine(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The coroutine twin of the synchronous API function ``fn``."""
    @functools.wraps(fn)
    async def twin(*args: Any, **kwargs: Any) -> Any:
        args_ = [_plain(a) for a in args]
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return async_view(await in_thread(fn, *args_, **kwargs))

    # (the synchronous docstring, dedented as a whole: its sections parse as they do
    # there; less its Examples, which show the synchronous calls)
    doc = inspect.cleandoc(fn.__doc__ or "").split("\nExamples\n--------\n", 1)[0]
    twin.__doc__ = (f"Coroutine of :func:`zarrfast.api.synchronous.{fn.__name__}` (same "
                    f"arguments; arrays and groups come back asynchronous).\n\n"
                    + doc.rstrip() + "\n")
    return twin


array = _coroutine(_sync.array)
consolidate_metadata = _coroutine(_sync.consolidate_metadata)
create = _coroutine(_sync.create)
create_array = _coroutine(_sync.create_array)
create_group = _coroutine(_sync.create_group)
empty = _coroutine(_sync.empty)
empty_like = _coroutine(_sync.empty_like)
from_array = _coroutine(_sync.from_array)
full = _coroutine(_sync.full)
full_like = _coroutine(_sync.full_like)
get_many = _coroutine(_sync.get_many)
group = _coroutine(_sync.group)
load = _coroutine(_sync.load)
ones = _coroutine(_sync.ones)
ones_like = _coroutine(_sync.ones_like)
open = _coroutine(_sync.open)  # noqa: A001 - zarr-python's name
open_array = _coroutine(_sync.open_array)
open_consolidated = _coroutine(_sync.open_consolidated)
open_group = _coroutine(_sync.open_group)
open_like = _coroutine(_sync.open_like)
save = _coroutine(_sync.save)
save_array = _coroutine(_sync.save_array)
save_group = _coroutine(_sync.save_group)
tree = _coroutine(_sync.tree)
zeros = _coroutine(_sync.zeros)
zeros_like = _coroutine(_sync.zeros_like)


async def create_hierarchy(*, store: Any, nodes: Mapping[str, Any], overwrite: bool = False
                           ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
    """Write the metadata of many nodes (``{path: metadata}``) and yield
    ``(path, node)`` for each, asynchronous (see
    :func:`zarrfast.api.synchronous.create_hierarchy`)."""
    made = await in_thread(
        lambda: list(_sync.create_hierarchy(store=store, nodes=nodes, overwrite=overwrite)))
    for path, node in made:
        yield path, async_view(node)


# -- zarr-python's helpers of the *_like functions, under its names ----------------------------

def _get_shape_chunks(a: Any) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """zarr-python's ``_get_shape_chunks``: ``a``'s shape when it has a tuple ``shape``, and
    its chunks when it has a tuple ``chunks`` of that rank (or a bcolz ``chunklen``, the
    chunk length along the first dimension); ``None`` for what it lacks."""
    shape = getattr(a, "shape", None)
    if not isinstance(shape, tuple):
        return None, None
    chunks = getattr(a, "chunks", None)
    if isinstance(chunks, tuple) and len(chunks) == len(shape):
        return shape, chunks
    if hasattr(a, "chunklen"):
        return shape, (a.chunklen, *shape[1:])
    return shape, None


def _like_args(a: Any, zarr_format: int | None) -> dict[str, Any]:
    """zarr-python 3.4's ``_like_args``: the arguments of ``create`` that make an array like
    ``a`` in ``zarr_format`` (``None``: ``a``'s own format when ``a`` is an array).

    Shape and chunks as :func:`_get_shape_chunks` finds them, and ``a``'s dtype.  From a
    zarrfast array (or its asynchronous view) also its fill value, and, when the new array
    keeps ``a``'s format, what is stored with that format: ``order``, ``compressor`` and
    ``filters`` for Zarr v2, ``codecs`` for Zarr v3.  zarrfast's ``*_like`` functions copy
    more (the sharding layout, a rectilinear grid): ``zarrfast.hierarchy.like``."""
    new: dict[str, Any] = {}
    shape, chunks = _get_shape_chunks(a)
    if shape is not None:
        new["shape"] = shape
    if chunks is not None:
        new["chunks"] = chunks
    if hasattr(a, "dtype"):
        new["dtype"] = a.dtype
    node = _plain(a)
    if isinstance(node, Array):
        md = node.metadata
        new["fill_value"] = md.fill_value
        zarr_format = md.zarr_format if zarr_format is None else zarr_format
        if zarr_format == md.zarr_format == 2:
            new.update(order=node.order, compressor=md.compressor, filters=md.filters)
        elif zarr_format == md.zarr_format:
            new["codecs"] = md.codecs
    if zarr_format is not None:
        new["zarr_format"] = zarr_format
    return new
