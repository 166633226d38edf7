"""examples/loader.py (issue 45, part 4): the example loader runs, as a script and as a
module, without PyTorch; its batches are NumPy's indexing of the same data; it pickles
into worker processes; where ``torch`` is importable, a ``DataLoader`` with two workers
returns the right batches.

The example is imported by its path, found from this file (the repository's root is two
levels up), never from the working directory.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import pickle
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ZstdCodec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "loader.py"
#: the name the example is imported under (pickles of its classes refer to it)
MODULE = "zarrfast_example_loader"
#: only ends a hang: a test that reaches it fails
HANG = 120


def _load() -> ModuleType:
    """examples/loader.py as the module ``MODULE`` (imported once per process)."""
    if MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(MODULE, EXAMPLE)
        assert spec is not None and spec.loader is not None, EXAMPLE
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE] = module
        spec.loader.exec_module(module)
    return sys.modules[MODULE]


@pytest.fixture(scope="module")
def loader() -> ModuleType:
    assert EXAMPLE.is_file(), EXAMPLE
    return _load()


def _windows(data: np.ndarray, tile: tuple[int, ...], stride: tuple[int, ...]) -> np.ndarray:
    """Every tile of ``data`` in C order of the grid, by NumPy alone: (n, *tile)."""
    view = np.lib.stride_tricks.sliding_window_view(data, tile)
    view = view[tuple(slice(None, None, s) for s in stride)]
    return view.reshape(-1, *tile)


def _array(kind: str, tmp_path: Path, data: np.ndarray, chunks: tuple[int, ...],
           shards: tuple[int, ...] | None = None) -> zarrfast.Array:
    store: Any = zarrfast.MemoryStore() if kind == "memory" else str(tmp_path / "a.zarr")
    array = zarrfast.create_array(store, shape=data.shape, chunks=chunks, shards=shards,
                                  dtype=data.dtype, compressors=ZstdCodec(level=1))
    array[...] = data
    return array


# -- the example as a user runs it ------------------------------------------------------------


def test_the_example_runs_as_a_script(subprocess_cwd: Path) -> None:
    """``python examples/loader.py``, from a directory that is not the repository's."""
    proc = subprocess.run([sys.executable, str(EXAMPLE)], cwd=subprocess_cwd,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "get_many:" in proc.stdout and "samples/s" in proc.stdout, proc.stdout
    if importlib.util.find_spec("torch") is None:
        assert "torch is not installed" in proc.stdout, proc.stdout
    else:
        assert "torch DataLoader, 2 workers:" in proc.stdout, proc.stdout
    assert list(subprocess_cwd.iterdir()) == []  # its data went to a temporary directory


def test_main_reads_batches(loader: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    loader.main(["--samples", "100", "--batch-size", "16", "--batches", "3", "--no-torch"])
    out = capsys.readouterr().out
    assert "TileDataset(100 tiles of (1, 128, 128)" in out, out
    assert "get_many: 48 samples in" in out, out
    assert "one tile at a time: 48 samples in" in out, out


# -- what the dataset returns -----------------------------------------------------------------


@pytest.mark.parametrize(("kind", "chunks", "shards"), [
    ("local", (2, 8, 8), (4, 16, 24)),    # sharded zstd in a directory
    ("local", (3, 5, 7), None),           # plain zstd, tiles across chunks
    ("memory", (2, 8, 8), (4, 16, 24)),
])
@pytest.mark.parametrize(("tile", "stride"), [
    ((1, 16, 24), None),        # whole images, one per sample
    ((2, 5, 6), (2, 3, 4)),     # overlapping boxes
    ((3, 16, 1), None),
])
def test_batches_are_numpys_indexing(loader: ModuleType, tmp_path: Path, kind: str,
                                     chunks: tuple[int, ...], shards: Any,
                                     tile: tuple[int, ...], stride: Any) -> None:
    data = np.random.default_rng(3).integers(-1000, 1000, size=(12, 16, 24), dtype="int32")
    array = _array(kind, tmp_path, data, chunks, shards)
    dataset = loader.TileDataset(array, tile, stride)
    want = _windows(data, tile, stride or tile)
    assert len(dataset) == len(want)
    rng = np.random.default_rng(1)
    indices = rng.integers(0, len(dataset), size=9)
    indices[1] = indices[0]  # a tile twice in one batch
    # one at a time, a negative index, a batch, a list of samples
    for i in indices[:3]:
        np.testing.assert_array_equal(dataset[int(i)], want[i])
    np.testing.assert_array_equal(dataset[-1], want[-1])
    batch = dataset.batch(indices)
    assert batch.shape == (len(indices), *tile) and batch.dtype == data.dtype
    np.testing.assert_array_equal(batch, want[indices])
    samples = dataset.__getitems__(indices.tolist())
    assert isinstance(samples, list) and len(samples) == len(indices)
    for got, i in zip(samples, indices, strict=True):
        np.testing.assert_array_equal(got, want[i])
    # into a buffer of the caller's, reused
    out = np.full((4, *tile), -7, dtype=data.dtype)
    for _ in range(2):
        assert dataset.batch(indices[:4], out=out) is out
        np.testing.assert_array_equal(out, want[indices[:4]])
    # one epoch in random batches: every tile once, in the seed's order
    batches = list(loader.random_batches(dataset, 5, seed=7))
    assert [len(b) for b in batches[:-1]] == [5] * (len(batches) - 1)
    order = np.random.default_rng(7).permutation(len(dataset))
    np.testing.assert_array_equal(np.concatenate(batches), want[order])
    kept = list(loader.random_batches(dataset, 5, seed=7, drop_last=True))
    assert len(kept) == len(dataset) // 5 and all(len(b) == 5 for b in kept)


def test_bad_tiles_and_indices_are_refused(loader: ModuleType) -> None:
    array = zarrfast.create_array({}, shape=(10, 8), chunks=(5, 8), dtype="int32")
    with pytest.raises(ValueError, match=r"one length per dimension.*\(10, 8\)"):
        loader.TileDataset(array, (1, 8, 1))
    with pytest.raises(ValueError, match="does not fit"):
        loader.TileDataset(array, (1, 9))
    with pytest.raises(ValueError, match="must be positive"):
        loader.TileDataset(array, (1, 8), stride=(0, 1))
    dataset = loader.TileDataset(array, (2, 8))
    assert len(dataset) == 5
    with pytest.raises(IndexError, match="tile 5 is out of range: the dataset has 5 tiles"):
        dataset[5]
    with pytest.raises(ValueError, match="batch_size must be positive"):
        next(loader.random_batches(dataset, 0))


# -- in worker processes ----------------------------------------------------------------------


def _init_worker() -> None:
    """A ``spawn``/``forkserver`` worker imports the example as the parent did, so the
    pickled dataset's class is found (a ``fork`` worker has it already)."""
    _load()


def _read_batch(job: tuple[Any, list[int]]) -> np.ndarray:
    dataset, indices = job
    return dataset.batch(indices)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_the_dataset_pickles_into_worker_processes(loader: ModuleType, tmp_path: Path,
                                                   method: str) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method!r} start method here")
    array = loader.make_example_array(tmp_path / "tiles.zarr", samples=96, tile=(32, 32))
    data = array[...]  # (the parent reads first, on zarrfast's pool)
    dataset = loader.TileDataset(array, (1, 32, 32))
    again = pickle.loads(pickle.dumps(dataset))
    assert (again.tile_shape, again.stride, again.grid) == ((1, 32, 32),) * 2 + ((96, 1, 1),)
    jobs = [(dataset, list(range(k, 96, 7))) for k in range(4)]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2, initializer=_init_worker) as pool:
        pending = pool.map_async(_read_batch, jobs, chunksize=1)
        try:
            batches = pending.get(timeout=HANG)
        except multiprocessing.TimeoutError:
            pytest.fail(f"{method} workers did not answer in {HANG} s: a deadlock?")
    for (_, indices), batch in zip(jobs, batches, strict=True):
        np.testing.assert_array_equal(batch, data[indices][:, None])


def test_torch_dataloader_with_two_workers(loader: ModuleType, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    array = loader.make_example_array(tmp_path / "tiles.zarr", samples=80, tile=(16, 16))
    data = array[...]
    dataset = loader.TileDataset(array, (1, 16, 16))
    order = np.random.default_rng(2).permutation(len(dataset))
    batches = torch.utils.data.DataLoader(dataset, batch_size=8, sampler=order.tolist(),
                                          num_workers=2, timeout=HANG)
    got = [batch.numpy() for batch in batches]
    assert [b.shape for b in got] == [(8, 1, 16, 16)] * 10
    np.testing.assert_array_equal(np.concatenate(got), data[order][:, None])
