"""A map-style dataset over a zarrfast array, read in random batches.

:class:`TileDataset` cuts an array into tiles on a regular grid (tile ``i`` is one
sample) and reads a batch of tiles with one :meth:`zarrfast.Array.get_many` call, which
plans the tiles together: a chunk that several tiles touch is read and decoded once,
each shard's index is read once, and each tile is written straight into the batch.

It needs NumPy and zarrfast only. :func:`random_batches` walks it in random batches
without any framework. PyTorch is optional: the class is also a map-style dataset for
``torch.utils.data.DataLoader``, which calls :meth:`TileDataset.__getitems__` with the
indices of a whole batch (PyTorch 2.1 and later) and gives each worker process its own
copy of the dataset by pickling it.

Run ``python examples/loader.py``: it writes a small sharded zstd array in a temporary
directory, reads random batches from it and prints samples per second; where ``torch``
is importable it also runs the dataset through a ``DataLoader`` with two workers.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

import zarrfast
from zarrfast.codecs import ZstdCodec


class TileDataset:
    """The tiles of a zarrfast array on a regular grid, as a map-style dataset.

    Sample ``i`` is the tile at position ``i`` of the grid, counted in C order: a NumPy
    array of shape ``tile_shape``. Tiles start every ``stride`` elements along each
    dimension (``stride`` defaults to ``tile_shape``: tiles side by side); a tile that
    would pass the end of the array is left out.

    The dataset holds the array only, so it pickles as the array does: a worker process
    gets a handle to the same store (a local directory or a remote store is opened again
    there; a ``MemoryStore`` travels as a copy of its contents).

    Parameters
    ----------
    array : zarrfast.Array
        The array to read.
    tile_shape : sequence of int
        The shape of one sample, one length per dimension of ``array``.
    stride : sequence of int, optional
        The step between the starts of neighbouring tiles along each dimension. Default:
        ``tile_shape``.

    Examples
    --------
    >>> import numpy as np, zarrfast
    >>> a = zarrfast.create_array({}, shape=(10, 8), chunks=(5, 8), dtype="int32")
    >>> a[:] = np.arange(80).reshape(10, 8)
    >>> rows = TileDataset(a, (1, 8))
    >>> len(rows), rows[3].shape
    (10, (1, 8))
    >>> rows.batch([7, 2]).shape
    (2, 1, 8)
    """

    def __init__(self, array: zarrfast.Array, tile_shape: Sequence[int],
                 stride: Sequence[int] | None = None) -> None:
        shape = tuple(array.shape)
        tile = tuple(int(n) for n in tile_shape)
        step = tile if stride is None else tuple(int(n) for n in stride)
        if len(tile) != len(shape) or len(step) != len(shape):
            raise ValueError(
                f"tile_shape {tile} and stride {step} need one length per dimension of the "
                f"array {array.path!r} of shape {shape}")
        if any(n < 1 for n in tile + step):
            raise ValueError(f"tile_shape {tile} and stride {step} must be positive")
        if any(t > n for t, n in zip(tile, shape, strict=True)):
            raise ValueError(f"tile_shape {tile} does not fit in the array {array.path!r} "
                             f"of shape {shape}")
        self.array = array
        self.tile_shape = tile
        self.stride = step
        #: how many tiles along each dimension
        self.grid = tuple((n - t) // s + 1 for n, t, s in zip(shape, tile, step, strict=True))

    def __len__(self) -> int:
        """The number of tiles."""
        return math.prod(self.grid)

    def selection(self, i: int) -> tuple[slice, ...]:
        """The selection (one slice per dimension) of tile ``i``.

        Parameters
        ----------
        i : int
            The tile's number, ``0 <= i < len(self)``; a negative one counts from the end.

        Returns
        -------
        tuple of slice
            What ``array[...]`` takes to read the tile.
        """
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"tile {i} is out of range: the dataset has {n} tiles")
        position = np.unravel_index(i % n, self.grid)
        return tuple(slice(int(p) * s, int(p) * s + t)
                     for p, s, t in zip(position, self.stride, self.tile_shape, strict=True))

    def __getitem__(self, i: int) -> np.ndarray:
        """Tile ``i``, read on its own.

        Parameters
        ----------
        i : int
            The tile's number.

        Returns
        -------
        numpy.ndarray
            An array of shape ``tile_shape``.
        """
        return self.array[self.selection(int(i))]

    def batch(self, indices: Sequence[int] | np.ndarray,
              out: np.ndarray | None = None) -> np.ndarray:
        """The tiles ``indices``, read with one ``get_many`` call, stacked.

        Parameters
        ----------
        indices : sequence of int or numpy.ndarray
            The tiles' numbers, in the order wanted; a number may repeat.
        out : numpy.ndarray, optional
            Where to put them: shape ``(len(indices), *tile_shape)`` and the array's
            dtype. Reusing one buffer across batches saves an allocation per batch.

        Returns
        -------
        numpy.ndarray
            ``out``, or a new array of shape ``(len(indices), *tile_shape)``: its item
            ``k`` is tile ``indices[k]``.
        """
        selections = [self.selection(int(i)) for i in indices]
        if out is None:
            out = np.empty((len(selections), *self.tile_shape), dtype=self.array.dtype)
        self.array.get_many(selections, out=out)
        return out

    def __getitems__(self, indices: Sequence[int] | np.ndarray) -> list[np.ndarray]:
        """The tiles ``indices`` as a list, read with one ``get_many`` call.

        ``torch.utils.data.DataLoader`` calls this (when a dataset has it) with the
        indices of a whole batch, and hands the list to its ``collate_fn``; the default
        one stacks the samples into one tensor.

        Parameters
        ----------
        indices : sequence of int
            The tiles' numbers.

        Returns
        -------
        list of numpy.ndarray
            One array of shape ``tile_shape`` per index: views of one batch array.
        """
        return list(self.batch(indices))

    def __repr__(self) -> str:
        return (f"TileDataset({len(self)} tiles of {self.tile_shape} from an array of "
                f"shape {tuple(self.array.shape)})")


def random_batches(dataset: TileDataset, batch_size: int, seed: int | None = None, *,
                   drop_last: bool = False) -> Iterator[np.ndarray]:
    """One epoch of a dataset in random batches, without PyTorch.

    The tiles are visited in the order of
    ``numpy.random.default_rng(seed).permutation(len(dataset))``, ``batch_size`` at a
    time; each batch is read with one ``get_many`` call.

    Parameters
    ----------
    dataset : TileDataset
        The dataset to read.
    batch_size : int
        The number of tiles in a batch.
    seed : int, optional
        The seed of the order; None draws a fresh one.
    drop_last : bool, default False
        Whether to leave out a last batch smaller than ``batch_size``.

    Yields
    ------
    numpy.ndarray
        A batch of shape ``(batch_size, *dataset.tile_shape)`` (the last one may be
        smaller unless ``drop_last``).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = np.random.default_rng(seed).permutation(len(dataset))
    for start in range(0, len(order), batch_size):
        indices = order[start:start + batch_size]
        if drop_last and len(indices) < batch_size:
            return
        yield dataset.batch(indices)


def make_example_array(path: str | Path, samples: int = 512,
                       tile: tuple[int, int] = (128, 128)) -> zarrfast.Array:
    """Write the example's data: ``samples`` images in one sharded zstd array.

    Parameters
    ----------
    path : str or pathlib.Path
        The directory to write (a local store).
    samples : int, default 512
        The length of the first dimension.
    tile : tuple of int, default (128, 128)
        The shape of one image.

    Returns
    -------
    zarrfast.Array
        A ``(samples, *tile)`` float32 array whose chunks are single images, stored 64
        to a shard.
    """
    array = zarrfast.create_array(path, shape=(samples, *tile), chunks=(1, *tile),
                                  shards=(64, *tile), dtype="float32",
                                  compressors=ZstdCodec(level=1))
    rng = np.random.default_rng(0)
    array[...] = rng.integers(0, 4096, size=array.shape).astype("float32")
    return array


def _with_torch(dataset: TileDataset, batch_size: int, batches: int) -> None:
    """Read ``batches`` batches through ``torch.utils.data.DataLoader`` with 2 workers."""
    import torch.utils.data

    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True,
                                         num_workers=2)
    start = time.perf_counter()
    seen = 0
    for k, batch in enumerate(loader):
        seen += len(batch)
        if k + 1 == batches:
            break
    seconds = time.perf_counter() - start
    print(f"torch DataLoader, 2 workers: {seen} samples in {seconds:.3f} s "
          f"(worker start-up included), {seen / seconds:,.0f} samples/s, "
          f"batches of {tuple(batch.shape)} {batch.dtype}")


def main(argv: Sequence[str] | None = None) -> None:
    """Write a small array, read it in random batches and print samples per second.

    Parameters
    ----------
    argv : sequence of str, optional
        The command line's arguments (default: ``sys.argv[1:]``); ``--help`` lists them.
    """
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--samples", type=int, default=512, help="images in the array")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=8, help="batches to read")
    parser.add_argument("--no-torch", action="store_true",
                        help="skip the DataLoader part even where torch is installed")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        array = make_example_array(Path(tmp) / "tiles.zarr", samples=args.samples)
        dataset = TileDataset(array, (1, *array.shape[1:]))
        print(dataset)

        start = time.perf_counter()
        seen = 0
        for k, batch in enumerate(random_batches(dataset, args.batch_size, seed=0)):
            seen += len(batch)
            if k + 1 == args.batches:
                break
        seconds = time.perf_counter() - start
        print(f"get_many: {seen} samples in {seconds:.3f} s, {seen / seconds:,.0f} samples/s, "
              f"batches of {batch.shape} {batch.dtype}")

        order = np.random.default_rng(1).permutation(len(dataset))[:seen]
        start = time.perf_counter()
        for i in order:
            dataset[i]
        seconds = time.perf_counter() - start
        print(f"one tile at a time: {seen} samples in {seconds:.3f} s, "
              f"{seen / seconds:,.0f} samples/s")

        if args.no_torch:
            return
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: the DataLoader part is skipped")
            return
        _with_torch(dataset, args.batch_size, args.batches)


if __name__ == "__main__":
    main()
