"""What ``get_many`` costs besides decoding: the planning of a loader's batch.

The loader op's tiles (64 random one-sample tiles of a sharded zstd array) spend most
of their time decoding, in parallel over the threads; the planning (normalizing the
selections, the batch's table, opening the shards) runs in the calling thread before
any decoding starts, so on two cores it is a serial part of the batch.  Here the tiles
are tiny ((1, 16, 16), decoded in about a microsecond), so what is measured is that
serial part: CPU and wall time per batch, best and median of 7 rounds of 50 batches,
of

* ``tiles``: ``Array.get_many`` of 64 random tiles of a (1024, 16, 16) array in inner
  chunks of one tile, shards of 8;
* ``regions``: ``zarrfast.get_many`` of the same (16, 16) region (4 chunks) of 50
  arrays, each of its own store.

Run it against two trees, alternately, to compare::

    PYTHONPATH=/path/to/tree python benchmarks/bench_many_overhead.py [--threads 2] [--dir D]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import zarrfast
from zarrfast import config


def _make(root: str) -> None:
    a = zarrfast.create_array(zarrfast.storage.LocalStore(f"{root}/tiles.zarr"),
                              shape=(1024, 16, 16), chunks=(1, 16, 16), shards=(8, 16, 16),
                              dtype="uint16")
    a[:] = np.arange(1024 * 256, dtype="uint16").reshape(1024, 16, 16)
    for k in range(50):
        b = zarrfast.create_array(zarrfast.storage.LocalStore(f"{root}/r{k}.zarr"),
                                  shape=(64, 64), chunks=(16, 16), dtype="uint16")
        b[:] = np.arange(64 * 64, dtype="uint16").reshape(64, 64) + k


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dir", default=None, help="where to write the arrays (default: a "
                                               "temporary directory under /dev/shm or /tmp)")
    args = p.parse_args()
    base = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    with tempfile.TemporaryDirectory(dir=base) as root:
        _make(root)
        a = zarrfast.open_array(f"{root}/tiles.zarr", mode="r")
        rng = np.random.default_rng(0)
        tiles = [(slice(int(i), int(i) + 1), slice(0, 16), slice(0, 16))
                 for i in rng.choice(1024, 64, replace=False)]
        arrays = [zarrfast.open_array(f"{root}/r{k}.zarr", mode="r") for k in range(50)]
        region = (slice(5, 21), slice(9, 25))
        with config.set(threads=args.threads):
            got = a.get_many(tiles)
            assert all((g == a[t]).all() for g, t in zip(got, tiles, strict=True))
            for name, fn in (("tiles", lambda: a.get_many(tiles)),
                             ("regions", lambda: zarrfast.get_many(
                                 [(b, region) for b in arrays]))):
                fn()
                cpu, wall = [], []
                for _ in range(7):
                    c, w = time.process_time(), time.perf_counter()
                    for _ in range(50):
                        fn()
                    cpu.append((time.process_time() - c) / 50 * 1e6)
                    wall.append((time.perf_counter() - w) / 50 * 1e6)
                print(f"{name:8s} cpu min {min(cpu):7.0f} med {statistics.median(cpu):7.0f} "
                      f"us   wall min {min(wall):7.0f} med {statistics.median(wall):7.0f} us "
                      f"(threads={args.threads})")


if __name__ == "__main__":
    main()
