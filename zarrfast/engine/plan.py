"""What one read or write works with: the :class:`Plan` the strategy table chooses by.

A plan holds the store and what it can do (its
:class:`~zarrfast.storage.StoreCapabilities`, computed once per store), the array's
chain (one of the five kinds, all of the :class:`Chain` protocol), the selection, and the
:class:`Options` of this call: the configuration, read once per call (where it is first
needed; a one-chunk read needs none) and passed down.  Nothing below the strategy table
reads ``config``: a read behaves the same from there to its end even if another thread
changes the configuration meanwhile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from zarrfast import config
from zarrfast.engine.selection import BasicSelection
from zarrfast.storage import Store, StoreCapabilities

__all__ = ["Chain", "ChainKind", "Options", "Plan"]

#: the five kinds of chain, one per way an array's chunks are laid out
ChainKind = Literal["regular", "sharded", "rectilinear", "rectilinear-sharded", "object"]


class Chain(Protocol):
    """What the engine knows of an array, built once per array: its metadata, how its
    chunks are laid out (:attr:`kind`), and what a missing chunk reads as.

    The five kinds: :class:`~zarrfast.engine.chunked.PreparedChain` (``"regular"``),
    :class:`~zarrfast.engine.sharded.ShardedChain` (``"sharded"``),
    :class:`~zarrfast.engine.rectilinear.RectilinearChain` (``"rectilinear"``),
    :class:`~zarrfast.engine.sharded.RectilinearShardedChain`
    (``"rectilinear-sharded"``) and :class:`~zarrfast.engine.objects.ObjectChain`
    (``"object"``: variable-length strings and bytes)."""

    kind: ChainKind
    metadata: Any
    #: no valid stored chunk (or shard) is larger: reads of larger values are refused
    stored_limit: int

    @property
    def fill_scalar(self) -> Any:
        """The value missing chunks read as."""


@dataclass(frozen=True, slots=True)
class Options:
    """The configuration one read or write uses, read once when it starts."""

    #: compute threads (``config threads``)
    threads: int = 1
    #: requests in flight at once to a remote store (``config io_concurrency``)
    io_concurrency: int = 1
    #: byte ranges of a shard at most this far apart are one request
    #: (``config shard_coalesce_gap``)
    shard_coalesce_gap: int = 0
    #: how long a writer waits for a shard's lock (``config lock_timeout``, seconds)
    lock_timeout: float = 60.0
    #: whether locks also exclude other processes where the store can (``config file_locks``)
    file_locks: bool = True

    @classmethod
    def resolve(cls) -> Options:
        """The options of the configuration as it is now (the same object while it is
        unchanged: a small read makes none)."""
        global _last
        values = _VALUES
        key = (values["threads"], values["io_concurrency"], values["shard_coalesce_gap"],
               values["lock_timeout"], values["file_locks"])
        last = _last
        if last[0] == key:
            return last[1]
        options = cls(threads=max(1, int(key[0])), io_concurrency=max(1, int(key[1])),
                      shard_coalesce_gap=int(key[2]), lock_timeout=float(key[3]),
                      file_locks=bool(key[4]))
        _last = (key, options)  # (one reference: a thread reads a pair, never half)
        return options


#: the configuration's values, a live read-only view (the one dictionary of
#: ``zarrfast.config``, changed in place by ``config.set``)
_VALUES = config.values()
#: the last options resolved, and the configuration values they were made of
_last: tuple[Any, Any] = (None, None)


@dataclass(slots=True)
class Plan:
    """One read (``out``) or write (``value`` or ``scalar``) of a basic selection."""

    store: Store
    caps: StoreCapabilities
    #: the array's path in the store (its chunk keys start with it)
    path: str
    chain: Any  # a Chain
    sel: BasicSelection
    #: the call's :class:`Options` (``None``: read from the configuration on first use,
    #: once: a one-chunk read asks for none)
    given_options: Options | None = None
    #: reads: where the selection goes (shape ``sel.full_shape``, native dtype)
    out: np.ndarray | None = None
    #: writes: the value (C-contiguous, shape ``sel.full_shape``), or ``None`` and a scalar
    value: np.ndarray | None = None
    scalar: Any = None
    write_empty_chunks: bool = False
    #: how many elements the selection has (-1: not yet counted, see :meth:`elements`)
    size: int = -1
    #: how many chunks a step-1 box read of it touches (-1: not yet counted; worked out
    #: by the first box strategy that asks, for the others)
    boxes: int = -1

    @property
    def options(self) -> Options:
        """The configuration of this call, read once."""
        options = self.given_options
        if options is None:
            options = self.given_options = Options.resolve()
        return options

    def elements(self) -> int:
        """How many elements the selection has."""
        if self.size < 0:
            self.size = math.prod(self.sel.full_shape)
        return self.size
