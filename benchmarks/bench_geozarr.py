"""GeoZarr pyramid build: time and peak resident memory for a large source.

A float32 ``(time, y, x)`` Dataset (default ``(1, 16384, 32768)``, 2 GiB) is
written chunk by chunk (never held in memory), then a subprocess that does only
``zarrfast.geozarr.build_multiscales(..., tile_matrix_set="WebMercatorQuad")``
reports its wall time and its peak resident set size (Linux ``VmHWM``, else
``getrusage`` max RSS; the interpreter, NumPy and zarrfast are included). The target is < 400 MiB
whatever the source size: tasks hold a few chunks each, one task per thread.

    python benchmarks/bench_geozarr.py                  # 2 GiB source
    python benchmarks/bench_geozarr.py --quick          # 128 MiB source
    python benchmarks/bench_geozarr.py --shape 8,8192,8192 --chunks 1,1024,1024

Needs several GiB of free disk space under ``--dir`` (default: the system temp
dir); the data are removed afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TARGET_MIB = 400
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:  # a source checkout without an installed zarrfast
    import zarrfast  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, ROOT)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def _chunk_data(t0, t1, y0, y1, x0, x1, seed=0):
    """Smooth field + noise + a few NaNs, a function of position only."""
    y = np.arange(y0, y1, dtype=np.float32)[:, None]
    x = np.arange(x0, x1, dtype=np.float32)[None, :]
    field = 280 + 20 * np.sin(x / 900.0) * np.cos(y / 700.0)
    out = np.empty((t1 - t0, y1 - y0, x1 - x0), dtype=np.float32)
    for t in range(t0, t1):
        rng = np.random.default_rng((seed, t, y0, x0))
        out[t - t0] = field + rng.standard_normal(field.shape, dtype=np.float32) + t
        out[t - t0][rng.random(field.shape) < 1e-4] = np.nan
    return out


def write_source(path: str, shape, chunks) -> float:
    from zarrfast.concurrency import map_unordered_into
    from zarrfast.geozarr.write import write_dataset

    nt, ny, nx = shape
    coords = {"time": ("time", np.arange(nt, dtype="i4"), {"units": "days since 2024-01-01"}),
              "y": ("y", 20037508.34 - 76.437 * (np.arange(ny) + 0.5), {"units": "m"}),
              "x": ("x", -20037508.34 + 76.437 * (np.arange(nx) + 0.5), {"units": "m"})}
    t = time.perf_counter()
    g = write_dataset(path, coords, zarr_format=3, attrs={"title": "bench source"})
    v = g.create_array("t2m", shape=shape, dtype="f4", chunks=chunks, fill_value=np.nan,
                       dimension_names=("time", "y", "x"),
                       attributes={"units": "K", "standard_name": "air_temperature"})
    ct, cy, cx = chunks
    tasks = [(a, b, c) for a in range(0, nt, ct) for b in range(0, ny, cy)
             for c in range(0, nx, cx)]

    def one(task):
        a, b, c = task
        sel = (slice(a, min(a + ct, nt)), slice(b, min(b + cy, ny)), slice(c, min(c + cx, nx)))
        v[sel] = _chunk_data(sel[0].start, sel[0].stop, b, sel[1].stop, c, sel[2].stop)

    # one whole chunk per task: disjoint writes
    map_unordered_into(one, tasks)
    return time.perf_counter() - t


def _peak_rss_bytes() -> int:
    """This process's peak resident set size.

    Linux: ``VmHWM`` of ``/proc/self/status`` -- the high-water mark of this program's
    own address space. (``getrusage``'s ``ru_maxrss`` survives ``fork``/``exec`` and
    would report the parent's footprint when that was larger.) Elsewhere: ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def build_only(src: str, dst: str) -> None:
    """The measured child: import, build, report the peak RSS as JSON on stdout."""
    import zarrfast
    from zarrfast.geozarr.multiscales import build_multiscales
    from zarrfast.kernels.downsample import USING_EXTENSIONS

    rss_before = _peak_rss_bytes()
    t = time.perf_counter()
    build_multiscales(src, dst, tile_matrix_set="WebMercatorQuad", resampling_method="average")
    elapsed = time.perf_counter() - t
    print(json.dumps({"seconds": elapsed, "max_rss_bytes": _peak_rss_bytes(),
                      "rss_after_imports_bytes": rss_before,
                      "threads": zarrfast.config.get("threads"),
                      "compiled_kernels": USING_EXTENSIONS}))


def _dir_size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def spot_check(src: str, dst: str) -> str:
    """Compare two tiles of the first coarser level with a NumPy block mean."""
    import zarrfast

    s = zarrfast.open_group(src, mode="r")
    d = zarrfast.open_group(dst, mode="r")
    lims = d.attrs["multiscales"]["tile_matrix_limits"]
    ids = sorted(lims, key=int, reverse=True)
    if len(ids) < 2:
        return "only one level"
    fine, coarse = d[ids[0]]["t2m"], d[ids[1]]["t2m"]
    assert fine.shape == s["t2m"].shape
    worst = 0.0
    for ty, tx in ((0, 0), (lims[ids[1]]["maxTileRow"], lims[ids[1]]["maxTileCol"])):
        y0, x0 = ty * 256, tx * 256
        got = coarse[0, y0:y0 + 256, x0:x0 + 256]
        blk = s["t2m"][0, 2 * y0:2 * y0 + 512, 2 * x0:2 * x0 + 512]
        h, w = got.shape
        pad = np.full((2 * h, 2 * w), np.nan, dtype=np.float64)
        pad[:blk.shape[0], :blk.shape[1]] = blk
        with np.errstate(invalid="ignore"):
            want = np.nanmean(pad.reshape(h, 2, w, 2), axis=(1, 3))
        worst = max(worst, float(np.nanmax(np.abs(got - want))))
    assert worst < 1e-3, worst
    return f"level {ids[1]} tiles match a NumPy block mean (max |diff| {worst:.1e})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", type=_ints, default=(1, 16384, 32768))
    ap.add_argument("--chunks", type=_ints, default=(1, 1024, 1024))
    ap.add_argument("--quick", action="store_true", help="a 128 MiB source")
    ap.add_argument("--dir", default=None, help="where to put the data (needs ~2.5x the "
                                                "source size free)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--build-only", nargs=2, metavar=("SRC", "DST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_only:
        build_only(*args.build_only)
        return
    shape = (1, 4096, 8192) if args.quick else args.shape
    work = tempfile.mkdtemp(prefix="bench_geozarr_", dir=args.dir)
    src, dst = os.path.join(work, "source.zarr"), os.path.join(work, "pyramid.zarr")
    nbytes = math.prod(shape) * 4
    try:
        print(f"source: float32 {shape} = {nbytes / 2**30:.2f} GiB, chunks {args.chunks}, "
              f"in {work}")
        secs = write_source(src, shape, args.chunks)
        print(f"  written chunk by chunk in {secs:.1f} s ({_dir_size(src) / 2**30:.2f} GiB on "
              f"disk)")
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--build-only", src,
                              dst], env=env, capture_output=True, text=True)
        if res.returncode:
            sys.exit(f"build failed:\n{res.stderr}")
        r = json.loads(res.stdout.strip().splitlines()[-1])
        import zarrfast

        d = zarrfast.open_group(dst, mode="r")
        levels = d.attrs["multiscales"]["tile_matrix_limits"]
        desc = ", ".join(f"{k}: {tuple(d[k]['t2m'].shape)}"
                         for k in sorted(levels, key=int, reverse=True))
        peak = r["max_rss_bytes"] / 2**20
        print(f"pyramid (WebMercatorQuad, average): {len(levels)} levels ({desc})")
        print(f"  build time      {r['seconds']:.1f} s "
              f"({nbytes / 2**20 / r['seconds']:.0f} MiB/s of source, {r['threads']} threads, "
              f"compiled kernels: {r['compiled_kernels']})")
        print(f"  peak RSS        {peak:.0f} MiB (after imports: "
              f"{r['rss_after_imports_bytes'] / 2**20:.0f} MiB); target < {TARGET_MIB} MiB: "
              f"{'PASS' if peak < TARGET_MIB else 'FAIL'}")
        print(f"  pyramid on disk {_dir_size(dst) / 2**30:.2f} GiB")
        print(f"  check: {spot_check(src, dst)}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
