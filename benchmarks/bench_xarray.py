"""xarray on Zarr: ``engine="zarrfast"`` vs ``engine="zarr"`` (zarr-python), side by side.

A dataset (a time coordinate, two float32 variables and an int16-packed one) is written by
xarray + zarr-python to a local directory; then, with a warm page cache:

* open + load, eagerly (``chunks=None``) and with dask (``chunks={}``, threads);
* open + a small selection (a few chunks);
* writing the dataset with ``ds.to_zarr`` (zarr-python) and ``zarrfast.xarray.to_zarr``.

Times are best of ``--repeat``; ratios (zarr time / zarrfast time) are what counts.

    python benchmarks/bench_xarray.py            # about 400 MiB
    python benchmarks/bench_xarray.py --quick    # about 50 MiB
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _dataset(quick: bool):
    import pandas as pd
    import xarray as xr

    nt, ny, nx = (90, 180, 360) if quick else (365, 360, 360)
    rng = np.random.default_rng(0)
    temp = (280 + 10 * rng.standard_normal((nt, ny, nx))).astype("f4")
    ds = xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), temp, {"units": "K"}),
            "wind": (("time", "lat", "lon"), temp * 0.1),
            "packed": (("time", "lat", "lon"), temp.astype("f8")),
        },
        coords={"time": pd.date_range("2000-01-01", periods=nt),
                "lat": np.linspace(-90, 90, ny), "lon": np.linspace(0, 360, nx,
                                                                    endpoint=False)},
    )
    ds["packed"].encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0,
                             "_FillValue": -32768}
    chunks = (30, 90, 90)
    for v in ("temp", "wind", "packed"):
        ds[v].encoding["chunks"] = chunks
    return ds


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> None:
    import dask
    import xarray as xr

    import zarrfast.xarray as zx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    tmp = Path(tempfile.mkdtemp(prefix="bench_xarray_"))
    try:
        ds = _dataset(args.quick)
        size = sum(v.nbytes for v in ds.variables.values()) / 2**20
        rows = []
        for fmt in (3, 2):
            path = tmp / f"v{fmt}.zarr"
            ds.to_zarr(path, zarr_format=fmt, consolidated=True, mode="w")

            def load(engine, chunks, path=path):
                with dask.config.set(scheduler="threads"):
                    xr.open_dataset(path, engine=engine, chunks=chunks).load()

            def small(engine, path=path):
                return xr.open_dataset(path, engine=engine).temp[3, 10:20, 100:120].values

            for label, fn in (
                ("open + load", lambda e: load(e, None)),
                ("open + load, chunks={}", lambda e: load(e, {})),
                ("open + small selection", small),
            ):
                t_ref = _best(lambda fn=fn: fn("zarr"), args.repeat)
                t_fast = _best(lambda fn=fn: fn("zarrfast"), args.repeat)
                rows.append((f"v{fmt} {label}", t_ref, t_fast))

            def write_ref(fmt=fmt):
                ds.to_zarr(tmp / "w_ref.zarr", zarr_format=fmt, mode="w")

            def write_fast(fmt=fmt):
                zx.to_zarr(ds, tmp / "w_fast.zarr", zarr_format=fmt, mode="w")

            rows.append((f"v{fmt} to_zarr", _best(write_ref, args.repeat),
                         _best(write_fast, args.repeat)))
        print(f"dataset: {size:.0f} MiB, {len(ds.data_vars)} variables, chunks (30, 90, 90)")
        print(f"{'case':<34} {'zarr (s)':>10} {'zarrfast (s)':>13} {'ratio':>7}")
        for label, t_ref, t_fast in rows:
            print(f"{label:<34} {t_ref:>10.4f} {t_fast:>13.4f} {t_ref / t_fast:>6.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
