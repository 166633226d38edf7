"""``zarrfast bench``: write then read an array on a local store and report throughput."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import TextIO

import numpy as np


def _codecs(codec: str) -> list:
    from .codecs import BloscCodec, ZstdCodec

    if codec == "none":
        return []
    if codec == "blosc":
        return [BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=2)]
    return [ZstdCodec(level=1)]


def run_bench(*, quick: bool, path: str | None, threads: int | None, codec: str,
              out: TextIO) -> int:
    from . import _kernels, config, create_array, open_array

    # uint16 volume: 256 MiB quick, 1 GiB full; 64^3 chunks (512 KiB each)
    shape = (256, 512, 1024) if quick else (512, 1024, 1024)
    chunks = (64, 64, 64)
    nbytes = int(np.prod(shape)) * 2
    rng = np.random.default_rng(0)
    # smooth data with noise compresses like real measurements, not like zeros
    z = np.arange(shape[0], dtype=np.uint16)[:, None, None] * 7
    y = np.arange(shape[1], dtype=np.uint16)[None, :, None] * 3
    data = z + y + rng.integers(0, 64, size=shape[1:], dtype=np.uint16)[None, :, :]
    own = path is None
    root = tempfile.mkdtemp(prefix="zarrfast-bench-") if own else path
    store_path = os.path.join(root, "bench.zarr")
    settings = {"threads": threads} if threads else {}
    try:
        with config.set(**settings):
            t0 = time.perf_counter()
            a = create_array(store_path, shape=shape, chunks=chunks, dtype="uint16",
                             compressors=_codecs(codec), overwrite=True)
            a[...] = data
            t_write = time.perf_counter() - t0
            b = open_array(store_path, mode="r")
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                got = b[...]
                times.append(time.perf_counter() - t0)
            ok = np.array_equal(got, data)
            t0 = time.perf_counter()
            n_small = 200
            for i in range(n_small):
                b[i % shape[0], 100:164, 200:264]
            t_small = (time.perf_counter() - t0) / n_small
        stored = sum(
            os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(store_path) for f in fs
        )
        mib = nbytes / 2**20
        print(f"zarrfast bench: {shape} uint16 = {mib:.0f} MiB, chunks {chunks}, codec {codec}, "
              f"threads {config.get('threads') if not threads else threads}, "
              f"compiled kernels {_kernels.USING_EXTENSIONS}", file=out)
        print(f"  stored      {stored / 2**20:8.1f} MiB ({stored / nbytes:.2f} of raw)", file=out)
        print(f"  write       {t_write:8.3f} s  {mib / t_write:8.0f} MiB/s", file=out)
        best = min(times)
        print(f"  read (best of 3) {best:8.3f} s  {mib / best:8.0f} MiB/s", file=out)
        print(f"  small read (1 chunk region 64x64) {t_small * 1e6:8.1f} us", file=out)
        print(f"  round trip identical: {ok}", file=out)
        return 0 if ok else 1
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
