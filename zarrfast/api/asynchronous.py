"""The module-level functions as coroutines (zarr-python's ``zarr.api.asynchronous``).

Each function takes the arguments of its synchronous twin in
:mod:`zarrfast.api.synchronous` and runs it on a worker thread of the running event
loop (``asyncio.to_thread``): the loop is never blocked, and the work itself is the
synchronous path's (the engine's pools, the store's ``get_many``), not a second
implementation.  Arrays and groups come back as :class:`~zarrfast.AsyncArray` /
:class:`~zarrfast.AsyncGroup`; asynchronous nodes given as arguments (``empty_like(a)``,
``from_array(store, data=a)``, ``tree(g)``) are accepted, and so is a
:class:`~zarrfast.storage.StorePath` as the store (its path goes first in the node's
path)::

    import zarrfast.api.asynchronous as zarr_async

    arr = await zarr_async.create_array(store, shape=(100,), chunks=(10,), dtype="f4")
    await arr.setitem(slice(None), 1.0)
    group = await zarr_async.open_group(store, mode="r")
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

from zarrfast.api import synchronous as _sync
from zarrfast.hierarchy.asynchronous import AsyncArray, AsyncGroup, async_view
from zarrfast.hierarchy.node import AsyncNode
from zarrfast.metadata.paths import normalize_path
from zarrfast.storage.asynchronous import StorePath

__all__ = [
    "AsyncArray",
    "AsyncGroup",
    "array",
    "consolidate_metadata",
    "create",
    "create_array",
    "create_group",
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
    "tree",
    "zeros",
    "zeros_like",
]

#: the argument naming the node's path in the store, where it is not ``path``
_PATH_ARGUMENT = {"create_array": "name", "array": "name", "from_array": "name"}


def _plain(value: Any) -> Any:
    """An asynchronous node as its synchronous node; anything else as it is."""
    return value._node if isinstance(value, AsyncNode) else value


def _coroutine(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The coroutine twin of the synchronous API function ``fn``."""
    params = list(inspect.signature(fn).parameters)
    store_first = bool(params) and params[0] == "store"
    path_arg = _PATH_ARGUMENT.get(fn.__name__, "path")

    @functools.wraps(fn)
    async def twin(*args: Any, **kwargs: Any) -> Any:
        args_ = [_plain(a) for a in args]
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        if store_first and args_ and isinstance(args_[0], StorePath):
            args_[0] = _unpack(args_[0], kwargs, path_arg)
        elif isinstance(kwargs.get("store"), StorePath):
            kwargs["store"] = _unpack(kwargs["store"], kwargs, path_arg)
        return async_view(await asyncio.to_thread(functools.partial(fn, *args_, **kwargs)))

    twin.__doc__ = (f"Coroutine of :func:`zarrfast.api.synchronous.{fn.__name__}` (same "
                    f"arguments; arrays and groups come back asynchronous).\n\n"
                    + (fn.__doc__ or ""))
    return twin


def _unpack(store_path: StorePath, kwargs: dict[str, Any], path_arg: str) -> Any:
    """The store of ``store_path``; its path goes first in ``kwargs[path_arg]``."""
    if store_path.path:
        inner = normalize_path(kwargs.get(path_arg))
        kwargs[path_arg] = f"{store_path.path}/{inner}" if inner else store_path.path
    return store_path.store


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
