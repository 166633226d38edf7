"""Full reads of arrays in the codecs zarr-python 3 writes beyond the core ones
(``numcodecs.*``, ``scale_offset``, ``cast_value``, ``bitround``): zarrfast against
zarr-python side by side, and against the same array with the core codec where there is
one (``numcodecs.zstd`` must read as fast as ``zstd``).

Each array (a (256, 256, 256) float32 field, 64 MiB, chunks of 64**3) is written by
zarr-python, read by both libraries, and every result is checked against the data.
Best of ``--repeat`` reads, in milliseconds, and the ratio zarrfast / zarr-python.

    python benchmarks/bench_wild_codecs.py [--repeat 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np

import zarrfast

#: layout -> (dtype, create_array keyword arguments as zarr-python spells them)
LAYOUTS = {
    "zstd": ("f4", "dict(compressors=zarr.codecs.ZstdCodec(level=1))"),
    "numcodecs.zstd": ("f4", "dict(compressors=nc.Zstd(level=1))"),
    "blosc": ("f4", "dict(compressors=zarr.codecs.BloscCodec(cname='lz4', clevel=5, "
                    "shuffle='shuffle'))"),
    "numcodecs.blosc": ("f4", "dict(compressors=nc.Blosc(cname='lz4', clevel=5, shuffle=1))"),
    "numcodecs.lz4": ("f4", "dict(compressors=nc.LZ4())"),
    "numcodecs.delta+zstd": ("i4", "dict(filters=[nc.Delta(dtype='i4')], "
                                   "compressors=zarr.codecs.ZstdCodec(level=1))"),
    "bitround+zstd": ("f4", "dict(filters=[nc.BitRound(keepbits=8)], "
                            "compressors=zarr.codecs.ZstdCodec(level=1))"),
    "numcodecs.pcodec": ("f4", "dict(serializer=nc.PCodec(level=4), compressors=None)"),
    "scale_offset+cast_value": ("f4", "dict(filters=[ScaleOffset(offset=-100, scale=10), "
                                      "CastValue(data_type='int16', out_of_range='clamp')],"
                                      " compressors=zarr.codecs.ZstdCodec(level=1))"),
}


def best_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def main() -> None:
    import zarr
    import zarr.codecs
    import zarr.codecs.numcodecs as nc  # noqa: F401 - used by the layouts' expressions

    has_cast = hasattr(zarr.codecs, "CastValue")  # zarr-python >= 3.4
    if has_cast:
        from zarr.codecs import CastValue, ScaleOffset  # noqa: F401 - used by the layouts

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    zarrfast.config.set(threads=args.threads)
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    field = np.cumsum(rng.normal(size=(256, 256, 256)).astype("f4"), axis=2)
    print(f"zarr-python {zarr.__version__}, {args.threads} threads, best of {args.repeat}")
    print(f"{'layout':26s} {'zarrfast':>10s} {'zarr-python':>12s} {'ratio':>7s}")
    with tempfile.TemporaryDirectory() as root:
        for name, (dtype, kwargs) in LAYOUTS.items():
            if "CastValue" in kwargs and not has_cast:
                print(f"{name:26s} skipped (needs zarr-python >= 3.4)")
                continue
            path = f"{root}/{name}"
            data = field if dtype == "f4" else (field * 100).astype(dtype)
            a = zarr.create_array(path, shape=data.shape, chunks=(64, 64, 64), dtype=dtype,
                                  **eval(kwargs))  # noqa: S307 - the table above
            a[...] = data
            expected = a[...]  # lossy codecs: what zarr-python reads back
            zf = zarrfast.open_array(path, mode="r")
            zp = zarr.open_array(path, mode="r")
            assert np.array_equal(zf[...], expected, equal_nan=True), name
            t_zf = best_ms(lambda zf=zf: zf[...], args.repeat)
            t_zp = best_ms(lambda zp=zp: zp[...], args.repeat)
            print(f"{name:26s} {t_zf:8.1f}ms {t_zp:10.1f}ms {t_zf / t_zp:7.2f}")


if __name__ == "__main__":
    main()
