"""dask integration: ``from_zarr`` and ``to_zarr``, like ``dask.array``'s.

[zarrfast.dask.from_zarr][] reads a zarrfast array as a dask array;
[zarrfast.dask.to_zarr][] writes a dask array into one, block by block in parallel.

zarrfast arrays work with dask directly: ``da.from_array(arr)`` bases its blocks on the
array's chunks (dask's ``"auto"`` chunking keeps whole multiples of ``arr.chunks``, or of
``arr.shards`` for a sharded array), and ``da.store(x, arr, lock=False)`` is safe when
every dask block covers whole chunks: inner chunks of a sharded array in a store whose
shard writes exclude each other across processes (a local store on Linux or macOS, S3
through obstore or s3fs), whole shards elsewhere.  Arrays pickle as their store and metadata
(a local store as its path), so workers reopen the store instead of receiving data.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
except ImportError as _e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "zarrfast.dask requires dask, which is not installed: "
        'pip install "zarrfast[dask]" (from a source checkout: pip install ".[dask]")'
    ) from _e

from zarrfast.api import create_array, open_array
from zarrfast.api.synchronous import OPEN_ARRAY_KEYWORDS
from zarrfast.errors import ZarrfastError
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.keywords import check_keywords
from zarrfast.storage import LocalStore, MemoryStore

__all__ = ["check_aligned", "from_zarr", "to_zarr"]


def _open_kwargs(storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    return {} if storage_options is None else {"storage_options": storage_options}


def _token(z: Array) -> str:
    """A cheap token: a local array by location and metadata (never its data); others
    (a memory store pickles all its values) by a fresh id."""
    store = z.store
    if isinstance(store, LocalStore):
        return tokenize(type(store).__name__, repr(store), z.path, z.metadata.to_json())
    return uuid.uuid4().hex


def from_zarr(url_or_array: Any, component: str | None = None,
              storage_options: Mapping[str, Any] | None = None, chunks: Any = None,
              name: str | None = None, inline_array: bool = False, **kwargs: Any
              ) -> da.Array:
    """Make a dask array that reads a zarrfast array, as ``dask.array.from_zarr`` does.

    Each dask task reads its block through the array (only the chunks it touches).
    Arrays pickle as their store and metadata (a local store as its path), so the
    workers of a distributed cluster reopen the store instead of receiving data.

    Parameters
    ----------
    url_or_array : zarrfast.Array, str, os.PathLike, Store or dict
        A [zarrfast.Array][], or a store (a local path, a URL, a
        [zarrfast.storage.Store][], a ``dict``) opened with [zarrfast.open_array][]
        (read-only unless ``mode=`` is given).
    component : str, optional
        Path of the array in the store (not with an Array).
    storage_options : mapping, optional
        Options of the filesystem of a URL (fsspec), passed to
        [zarrfast.open_array][].
    chunks : optional
        The dask chunks (anything ``dask.array.from_array`` takes); default: the array's
        chunks (the chunk sizes of a rectilinear grid).
    name : str, optional
        The dask array's name; default ``"from-zarrfast-"`` and a token (a local array's
        from its path and metadata, others' fresh each call).
    inline_array : bool, default False
        Embed the array in each task instead of referring to one key holding it (as in
        ``dask.array.from_array``).
    **kwargs
        Passed to [zarrfast.open_array][] (its keywords only).

    Returns
    -------
    dask.array.Array
        The lazy array.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        ``component`` given with an Array.
    zarrfast.errors.ArrayNotFoundError
        No array at ``component`` in the store.
    TypeError
        A keyword [zarrfast.open_array][] does not take.

    Examples
    --------
    >>> from zarrfast.dask import from_zarr
    >>> arr = zarrfast.create_array("data.zarr", shape=(4, 6), chunks=(2, 3), dtype="int64")
    >>> arr[:] = np.arange(24).reshape(4, 6)
    >>> x = from_zarr("data.zarr")
    >>> x.chunks
    ((2, 2), (3, 3))
    >>> int(x.sum().compute())
    276
    """
    # an unknown keyword is refused also when an Array is given (its keywords for
    # open_array are then unused, as in dask's from_zarr)
    check_keywords("from_zarr", kwargs, OPEN_ARRAY_KEYWORDS)
    if isinstance(url_or_array, Array):
        if component is not None:
            raise ZarrfastError("from_zarr: component= is only meaningful with a store, "
                                "not with an Array")
        z = url_or_array
    else:
        url = os.fspath(url_or_array) if isinstance(url_or_array, os.PathLike) else url_or_array
        kwargs.setdefault("mode", "r")
        z = open_array(url, path=component, **_open_kwargs(storage_options), **kwargs)
    source: Any = z
    try:
        regular = tuple(z.chunks)
    except NotImplementedError:  # a rectilinear grid: its chunks' sizes
        regular = None
        source = _Rectilinear(z)  # (dask reads ``.chunks``, which such an array refuses)
    if chunks is None:
        chunks = regular if regular is not None else z.read_chunk_sizes
    if name is None:
        name = "from-zarrfast-" + tokenize(_token(z), chunks)
    return da.from_array(source, chunks=chunks, name=name, inline_array=inline_array)


class _Rectilinear:
    """A rectilinear-grid array as dask takes it: shape, dtype and reads, no ``chunks``."""

    def __init__(self, z: Array) -> None:
        self.z, self.shape, self.dtype, self.ndim = z, z.shape, z.dtype, z.ndim

    def __getitem__(self, key: Any) -> Any:
        return self.z[key]


def _write_chunks(z: Array) -> tuple[int, ...]:
    """The smallest regions that blocks can write independently: the chunks (the inner
    chunks of a sharded array, whose shards' read-modify-writes exclude each other, see
    :meth:`zarrfast.storage.Store.value_lock`); the shards of a store that cannot
    exclude writers in other processes (one whose workers may be processes)."""
    if z.shards is None:
        return tuple(z.chunks)
    store = z.store
    if store.interprocess_locks or store.conditional_writes or isinstance(store, MemoryStore):
        return tuple(z.chunks)
    return tuple(z.shards)


def check_aligned(chunks: Sequence[Sequence[int]], write_chunks: Sequence[int],
                  shape: Sequence[int], offset: Sequence[int] | None = None, *,
                  what: str = "the Zarr array") -> None:
    """Check that dask blocks can be written in parallel without losing writes.

    Every boundary between dask blocks (``chunks``, placed at ``offset`` in an array of
    ``shape``) must fall on a boundary of ``write_chunks``; otherwise two blocks would
    write one stored chunk concurrently and one of them would be lost.

    Parameters
    ----------
    chunks : sequence of sequence of int
        The dask block sizes along each dimension (``x.chunks``).
    write_chunks : sequence of int
        The size of the smallest region that can be written independently, per
        dimension (the array's chunks, or shards).
    shape : sequence of int
        The shape of the array written to.
    offset : sequence of int, optional
        Where the blocks start in that array (a region's start); default 0s.
    what : str, default "the Zarr array"
        What to call the array in the message.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        A block boundary falls inside a stored chunk (naming the dimension, the
        boundary and a ``rechunk`` that fixes it).

    Examples
    --------
    >>> from zarrfast.dask import check_aligned
    >>> check_aligned(((2, 4),), write_chunks=(2,), shape=(6,))
    >>> check_aligned(((3, 3),), write_chunks=(2,), shape=(6,))
    Traceback (most recent call last):
    ...
    zarrfast.errors.ZarrfastError: dask chunks (3, 3) along dimension 0 do not line up ...
    """
    offset = offset or (0,) * len(shape)
    for dim, (sizes, wc, start) in enumerate(zip(chunks, write_chunks, offset, strict=True)):
        edges = start + np.cumsum(sizes)[:-1]
        bad = edges[edges % wc != 0]
        if bad.size:
            raise ZarrfastError(
                f"dask chunks {tuple(sizes)} along dimension {dim} do not line up with the "
                f"chunks ({wc}) of {what}: the block boundary at index {int(bad[0])} would "
                f"make two dask blocks write one stored chunk; rechunk first, e.g. "
                f"x.rechunk({{{dim}: {wc}}})"
            )


def _regular(sizes: Sequence[int]) -> bool:
    return len(sizes) <= 1 or (len(set(sizes[:-1])) == 1 and sizes[-1] <= sizes[0])


def _refuse_memory_with_distributed(z: Array) -> None:
    if not isinstance(z.store, MemoryStore):
        return
    try:
        from distributed import default_client

        default_client()
    except (ImportError, ValueError):
        return
    raise ZarrfastError(
        "cannot write into an in-memory zarrfast array with the distributed scheduler: each "
        "worker would write into its own copy of the store; use a LocalStore (a path)"
    )


def to_zarr(x: da.Array, url_or_array: Any, component: str | None = None,
            storage_options: Mapping[str, Any] | None = None, overwrite: bool = False,
            region: Any = None, compute: bool = True, return_stored: bool = False,
            **create_kwargs: Any) -> Any:
    """Write a dask array into a zarrfast array, block by block in parallel.

    As ``dask.array.to_zarr``, with ``lock=False``: every dask block must cover whole
    stored chunks (the inner chunks of a sharded array where the store excludes other
    processes' writers of a shard, whole shards elsewhere), which is checked first.

    Parameters
    ----------
    x : dask.array.Array
        The dask array (anything else is made one with ``dask.array.asarray``).
    url_or_array : zarrfast.Array, str, os.PathLike, Store or dict
        An existing [zarrfast.Array][] of ``x``'s shape (or holding ``region``), or a
        store (a local path, a URL, a [zarrfast.storage.Store][], a ``dict``) in which to
        create one at ``component``.
    component : str, optional
        Path of the array to create in the store (not with an Array).
    storage_options : mapping, optional
        Options of the filesystem of a URL (fsspec), passed to
        [zarrfast.create_array][].
    overwrite : bool, default False
        Replace an existing array at ``component``; otherwise that is an error.
    region : tuple of slice, optional
        With an existing array: the basic selection (slices of step 1) ``x`` is written
        to.
    compute : bool, default True
        Write now; with ``False`` return a lazy result whose ``compute()`` writes.
    return_stored : bool, default False
        Return the stored array, as ``dask.array.store`` does.
    **create_kwargs
        Passed to [zarrfast.create_array][] (``chunks`` defaults to ``x``'s chunks,
        which must then be regular: equal, the last one possibly smaller; ``dtype`` to
        ``x``'s).

    Returns
    -------
    None or dask.array.Array
        What ``dask.array.store`` returns: ``None`` when written now; with
        ``compute=False`` or ``return_stored=True``, dask's lazy result.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        If a dask block boundary falls inside a stored chunk (naming the dimension), if the
        chunks are irregular and no ``chunks=`` is given, if the shapes do not match, if
        the chunk sizes of ``x`` are unknown, or if an in-memory array would be written
        with the distributed scheduler.
    zarrfast.errors.ContainsArrayError
        An array exists at ``component`` and ``overwrite`` is false.

    Examples
    --------
    >>> import dask.array as da
    >>> from zarrfast.dask import to_zarr
    >>> x = da.arange(12, chunks=4).reshape(3, 4).rechunk((3, 2))
    >>> to_zarr(x, "data.zarr")
    >>> arr = zarrfast.open_array("data.zarr")
    >>> arr.chunks, arr[1].tolist()
    ((3, 2), [4, 5, 6, 7])

    Writing part of an existing array (the blocks must line up with its chunks):

    >>> target = zarrfast.create_array(store={}, shape=(6,), chunks=(2,), dtype="int64")
    >>> to_zarr(da.ones(4, chunks=2, dtype="int64"), target, region=(slice(2, 6),))
    >>> target[:].tolist()
    [0, 0, 1, 1, 1, 1]
    """
    if not isinstance(x, da.Array):
        x = da.asarray(x)
    if any(np.isnan(s) for s in x.shape):
        raise ZarrfastError("cannot write a dask array of unknown chunk sizes to Zarr; "
                            "call x.compute_chunk_sizes() first")
    if isinstance(url_or_array, Array):
        if component is not None or create_kwargs:
            raise ZarrfastError("to_zarr: component= and array creation arguments need a "
                                "store, not an existing Array")
        z = url_or_array
        if region is None:
            if tuple(z.shape) != tuple(x.shape):
                raise ZarrfastError(
                    f"to_zarr: the dask array's shape {x.shape} differs from the Zarr "
                    f"array's {z.shape}; pass region= to write part of it")
            offset: tuple[int, ...] = (0,) * x.ndim
        else:
            region = region if isinstance(region, tuple) else (region,)
            if len(region) != z.ndim or not all(
                    isinstance(r, slice) and r.step in (None, 1) for r in region):
                raise ZarrfastError(f"to_zarr: region must be {z.ndim} slices with step 1, "
                                    f"got {region!r}")
            bounds = [r.indices(n) for r, n in zip(region, z.shape, strict=True)]
            if tuple(b - a for a, b, _ in bounds) != tuple(x.shape):
                raise ZarrfastError(f"to_zarr: region {region!r} of shape "
                                    f"{tuple(b - a for a, b, _ in bounds)} does not fit the "
                                    f"dask array's shape {x.shape}")
            offset = tuple(a for a, _, _ in bounds)
            region = tuple(slice(a, b) for a, b, _ in bounds)
        _refuse_memory_with_distributed(z)
        check_aligned(x.chunks, _write_chunks(z), z.shape, offset, what=f"array {z.name!r}")
    else:
        if region is not None:
            raise ZarrfastError("to_zarr: region= needs an existing zarrfast Array")
        if "chunks" not in create_kwargs:
            for dim, sizes in enumerate(x.chunks):
                if not _regular(sizes):
                    raise ZarrfastError(
                        f"dask chunks {sizes} along dimension {dim} are irregular: Zarr "
                        f"chunks are regular, so two dask blocks would write one Zarr chunk; "
                        f"rechunk (x.rechunk({{{dim}: {max(sizes)}}})) or pass chunks= "
                        f"aligned with the dask blocks")
            create_kwargs["chunks"] = tuple(max(c[0], 1) if c else 1 for c in x.chunks)
        url = os.fspath(url_or_array) if isinstance(url_or_array, os.PathLike) else url_or_array
        if storage_options is not None:
            create_kwargs["storage_options"] = storage_options
        z = create_array(url, name=component, shape=x.shape, dtype=create_kwargs.pop(
            "dtype", x.dtype), overwrite=overwrite, **create_kwargs)
        _refuse_memory_with_distributed(z)
        check_aligned(x.chunks, _write_chunks(z), z.shape, what=f"array {z.name!r}")
    return da.store(x, z, lock=False, regions=[region] if region is not None else None,
                    compute=compute, return_stored=return_stored)
