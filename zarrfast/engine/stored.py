"""The stored chunks of an array, at a cost bounded by the data, not by the grid.

An array of shape ``(10**9, 10**9)`` in chunks of ``(10, 10)`` has 10**16 grid positions
and perhaps three stored chunks.  Whatever has to find the stored chunks (resizing, which
deletes the chunks left outside the new shape; counting the initialised chunks) looks at
grid positions one by one only while they are few (:data:`ENUMERATE_LIMIT`); beyond that
it lists the keys below the array's chunk prefix (one listing, however large the grid)
and decodes them with the array's chunk key encoding.  The stored objects of a sharded
array are its shards, whose keys are encoded the same way: the same code finds them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

from zarrfast.storage import Store

__all__ = ["ENUMERATE_LIMIT", "delete_outside", "list_stored", "stored_coords"]

#: at most this many grid positions are looked at one at a time (a ``delete`` or an
#: ``exists`` each); with more, the store is listed below the array's chunk prefix instead
ENUMERATE_LIMIT = 1024


def _base(path: str) -> str:
    return f"{path}/" if path else ""


def list_stored(store: Store, metadata: Any, path: str) -> Iterator[tuple[str, tuple[int, ...]]]:
    """``(key, grid coordinates)`` of every stored chunk (shard) of the array whose chunk
    keys live below ``path``, from one listing of the store: keys the array's chunk key
    encoding does not make (its metadata, another separator's keys) are skipped.  Keys
    outside the array's current grid (left by another writer) are listed too."""
    cke = metadata.chunk_key_encoding
    ndim = len(metadata.shape)
    base = _base(path)
    # "c/" or "c." (default encoding), "" (v2: the array's own folder), "c" (drafts)
    prefix = base + (cke.key_prefix() if ndim else "")
    for key in store.list_prefix(prefix):
        coords = cke.decode(key[len(base):], ndim)
        if coords is not None:
            yield key, coords


def _count_outside(old_grid: Sequence[int], new_grid: Sequence[int]) -> int:
    return math.prod(old_grid) - math.prod(min(o, n) for o, n in zip(old_grid, new_grid,
                                                                       strict=True))


def _positions_outside(old_grid: Sequence[int], new_grid: Sequence[int]
                       ) -> Iterator[tuple[int, ...]]:
    """The positions of ``old_grid`` outside ``new_grid``, each once: for each dimension
    ``d`` that shrank, those beyond the new length along ``d`` and inside the new grid
    along the dimensions before it."""
    ndim = len(old_grid)
    for d in range(ndim):
        if new_grid[d] >= old_grid[d]:
            continue
        ranges = [range(min(old_grid[k], new_grid[k])) for k in range(d)]
        ranges.append(range(new_grid[d], old_grid[d]))
        ranges.extend(range(old_grid[k]) for k in range(d + 1, ndim))
        yield from itertools.product(*ranges)


def delete_outside(store: Store, metadata: Any, path: str, old_grid: Sequence[int],
                   new_grid: Sequence[int]) -> int:
    """Delete the stored chunks (shards) of the array at grid positions outside
    ``new_grid``; returns how many keys were deleted (or tried: positions looked at one by
    one are deleted without asking whether they exist).

    With few positions between the grids they are deleted one by one; with many the
    store is listed and only the stored chunks outside ``new_grid`` are deleted (there,
    also those beyond ``old_grid`` that another writer left)."""
    n = _count_outside(old_grid, new_grid)
    if n == 0:
        return 0
    cke = metadata.chunk_key_encoding
    base = _base(path)
    if n <= ENUMERATE_LIMIT or not store.capabilities.listing:
        keys = [base + cke.encode(c) for c in _positions_outside(old_grid, new_grid)]
    else:
        keys = [key for key, coords in list_stored(store, metadata, path)
                if any(c >= g for c, g in zip(coords, new_grid, strict=True))]
    if keys:
        store.delete_many(keys)
    return len(keys)


def stored_coords(store: Store, metadata: Any, path: str, grid: Sequence[int]
                  ) -> list[tuple[int, ...]]:
    """Grid coordinates of the stored chunks (shards) inside ``grid``, in C order: from
    ``exists`` at each position of a small grid, else from one listing."""
    cke = metadata.chunk_key_encoding
    base = _base(path)
    if math.prod(grid) <= ENUMERATE_LIMIT or not store.capabilities.listing:
        return [c for c in itertools.product(*(range(g) for g in grid))
                if store.exists(base + cke.encode(c))]
    return sorted(coords for _, coords in list_stored(store, metadata, path)
                  if all(c < g for c, g in zip(coords, grid, strict=True)))
