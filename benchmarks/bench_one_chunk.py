"""One-chunk read latency: zarrfast, zarr-python and tensorstore side by side.

Data written by zarr-python (a (1024, 1024) uint16 array in 16 KiB chunks of
(64, 128), uncompressed and zstd), then one aligned chunk read again and again;
every library's result is checked against zarrfast's. Prints the best of 5 rounds
per library in microseconds.

    python benchmarks/bench_one_chunk.py
"""

from __future__ import annotations

import tempfile
import timeit

import numpy as np

import zarrfast


def best_us(fn, number: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    import tensorstore as ts
    import zarr

    data = np.arange(1024 * 1024, dtype="u2").reshape(1024, 1024)
    sel = (slice(128, 192), slice(256, 384))  # exactly chunk (2, 2)
    with tempfile.TemporaryDirectory() as root:
        print(f"{'layout':10s} {'zarrfast':>10s} {'zarr-python':>12s} {'tensorstore':>12s}")
        for name, compressors in (("raw", None), ("zstd", "auto")):
            path = f"{root}/{name}"
            a = zarr.create_array(path, shape=data.shape, chunks=(64, 128), dtype="u2",
                                  compressors=compressors)
            a[...] = data
            zf = zarrfast.open_array(path, mode="r")
            zp = zarr.open_array(path, mode="r")
            t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
                        ).result()
            expected = data[sel]
            assert (zf[sel] == expected).all()
            assert (np.asarray(zp[sel]) == expected).all()
            assert (t[sel].read().result() == expected).all()
            us = (best_us(lambda zf=zf: zf[sel], 2000), best_us(lambda zp=zp: zp[sel], 300),
                  best_us(lambda t=t: t[sel].read().result(), 1000))
            print(f"{name:10s} {us[0]:8.1f}us {us[1]:10.1f}us {us[2]:10.1f}us")


if __name__ == "__main__":
    main()
