"""Full-array and one-chunk reads: zarrfast vs zarr-python vs tensorstore, side by side.

Data are written by zarr-python (the reference implementation) to a local
directory; every reader then reads the same files with a warm page cache.
Times are best of ``--repeat``; ratios (peer time / zarrfast time) are what
counts on a noisy machine.

    python benchmarks/bench_read.py            # 250 MiB uint16 (320, 640, 640)
    python benchmarks/bench_read.py --quick    # 64 MiB

Needs the ``bench`` extra (zarr, tensorstore); a missing peer is skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import zarrfast


def _layouts(quick: bool):
    shape = (160, 320, 640) if quick else (320, 640, 640)
    small = (2048, 2048) if quick else (4096, 4096)
    return [
        ("no compression, 32^3 chunks", shape, (32, 32, 32), "none"),
        ("zstd level 1, 32^3 chunks", shape, (32, 32, 32), "zstd"),
        ("blosc lz4 bitshuffle, 64^3 chunks", shape, (64, 64, 64), "blosc"),
        (f"{small[0] * small[1] // 4096} files of 8 KiB, no compression", small, (64, 64), "none"),
    ]


def _make_data(shape):
    rng = np.random.default_rng(42)
    base = np.add.outer(np.arange(shape[-2], dtype=np.uint16), np.arange(shape[-1], dtype=np.uint16))
    noise = rng.integers(0, 256, size=shape, dtype=np.uint16)
    return (base + noise).astype(np.uint16)


def _write_with_zarr(path, data, chunks, codec):
    import zarr
    from zarr.codecs import BloscCodec, ZstdCodec

    compressors = {
        "none": None,
        "zstd": ZstdCodec(level=1),
        "blosc": BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=2),
    }[codec]
    a = zarr.create_array(path, shape=data.shape, chunks=chunks, dtype=data.dtype,
                          compressors=compressors, overwrite=True)
    a[...] = data


def _best(fn, repeat):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _readers(path, chunk_sel):
    readers = {}
    z = zarrfast.open_array(path, mode="r")
    readers["zarrfast"] = (lambda: z[...], lambda: z[chunk_sel])
    try:
        import zarr

        zp = zarr.open_array(path, mode="r")
        readers["zarr-python"] = (lambda: zp[...], lambda: zp[chunk_sel])
    except ImportError:
        pass
    try:
        import tensorstore as ts

        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                    read=True).result()
        readers["tensorstore"] = (lambda: t.read().result(), lambda: t[chunk_sel].read().result())
    except ImportError:
        pass
    return readers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", default=None)
    args = p.parse_args(argv)
    root = args.dir or tempfile.mkdtemp(prefix="zarrfast-bench-read-")
    print(f"python {sys.version.split()[0]}, zarrfast {zarrfast.__version__}, "
          f"threads {zarrfast.config.get('threads')}")
    try:
        for label, shape, chunks, codec in _layouts(args.quick):
            data = _make_data(shape)
            path = os.path.join(root, f"{codec}-{'x'.join(map(str, chunks))}.zarr")
            _write_with_zarr(path, data, chunks, codec)
            chunk_sel = tuple(slice(0, c) for c in chunks)
            results = {}
            for name, (full, one) in _readers(path, chunk_sel).items():
                t_full, got = _best(full, args.repeat)
                if not np.array_equal(np.asarray(got), data):
                    print(f"  !! {name} read wrong data for {label}")
                t_one, _ = _best(one, max(args.repeat, 20))
                results[name] = (t_full, t_one)
            mib = data.nbytes / 2**20
            print(f"\n{label}: {shape} uint16 = {mib:.0f} MiB")
            ref_full, ref_one = results["zarrfast"]
            for name, (t_full, t_one) in results.items():
                print(f"  {name:12s} full {t_full:7.3f} s ({mib / t_full:7.0f} MiB/s, "
                      f"x{t_full / ref_full:5.2f} of zarrfast)   one chunk {t_one * 1e6:8.0f} us "
                      f"(x{t_one / ref_one:5.2f})")
            shutil.rmtree(path, ignore_errors=True)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
