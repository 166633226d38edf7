"""The loader op's ``regions`` row, interleaved: per round, the same 256 x 256 region of
the 50 arrays of ``loader-regions.zarr`` (each opened from its own path) read by
``zarrfast.get_many``, by a loop of ``a[region]`` and (when installed) by tensorstore's
``ts.Batch`` -- one after another in each round, so that all of them see the same load
on a shared machine.  Prints, per reader, the best, first quartile and median wall time
per batch and the median CPU time of the process per batch (all threads: less
dependent on the load than the wall time), and the median over rounds of tensorstore's
time / zarrfast's.  Every result is checked against the values the harness wrote.

The dataset is the harness's (``--path`` of ``zarrfast.cli bench --ops loader``; made
there when missing)::

    PYTHONPATH=/path/to/tree python benchmarks/bench_loader_regions.py \\
        --path /data/loaderdata [--size 128MiB] [--threads 2] [--rounds 30] \\
        [--cold] [--readers "zarrfast get,tensorstore"]

``--cold`` evicts the regions dataset's pages (``posix_fadvise(DONTNEED)``, as the
harness's ``--cold``) before every read: on a shared machine use a copy of your own,
since every round evicts it.  ``--readers`` keeps the readers whose names start with
one of its prefixes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import zarrfast
from zarrfast import config
from zarrfast.bench import data as D
from zarrfast.bench.harness import evict_pages, loader_selections


def add_loader_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the interleaved loader scripts (this one, ``bench_loader_rows``):
    ``--path``, ``--size``, ``--threads``, ``--rounds``, ``--seed``."""
    p.add_argument("--path", required=True, help="the loader datasets' directory")
    p.add_argument("--size", default="128MiB")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)


def _tensorstore():
    """The ``tensorstore`` module, or ``None`` (not installed)."""
    try:
        import tensorstore as ts
    except ImportError:
        return None
    return ts


def open_tensorstore(paths: list[str], threads: int) -> list:
    """The zarr3 arrays at ``paths`` opened for reading with tensorstore, in one
    context whose copies and file reads are limited to ``threads`` (as zarrfast's:
    one pool for all of them, not one each).  Needs tensorstore."""
    import tensorstore as ts

    limit = {"limit": threads}
    ctx = ts.Context({"data_copy_concurrency": limit, "file_io_concurrency": limit})
    return [ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                    context=ctx, read=True).result() for path in paths]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_loader_arguments(p)
    p.add_argument("--cold", action="store_true",
                   help="evict the regions dataset's pages (posix_fadvise) before every read "
                        "(as the harness's --cold; use a copy of your own on a shared machine)")
    p.add_argument("--readers", default="",
                   help="comma-separated names' prefixes of the readers to run (default all)")
    args = p.parse_args()
    loader = D.prepare_loader(args.path, D.parse_size(args.size), log=print)
    spec, root, _ = loader["regions"]
    region = loader_selections(spec, args.seed)
    want = [D.loader_values(k, region) for k in range(spec.arrays)]
    arrays = [zarrfast.open_array(f"{root}/{m}", mode="r") for m in spec.members()]
    readers = {"zarrfast get_many": lambda: zarrfast.get_many([(a, region) for a in arrays]),
               "zarrfast loop": lambda: [a[region] for a in arrays]}
    ts = _tensorstore()
    if ts is not None:
        handles = open_tensorstore([f"{root}/{m}" for m in spec.members()], args.threads)

        def batch() -> list[np.ndarray]:
            with ts.Batch() as b:
                futures = [h[region].read(batch=b) for h in handles]
            return [f.result() for f in futures]

        readers["tensorstore Batch"] = batch
    if args.readers:
        keep = [r.strip() for r in args.readers.split(",") if r.strip()]
        readers = {n: r for n, r in readers.items() if any(n.startswith(k) for k in keep)}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in readers}
    with config.set(threads=args.threads):
        for name, read in readers.items():
            got = read()
            assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), name
        for _ in range(args.rounds):
            for name, read in readers.items():
                if args.cold:
                    evict_pages(root)
                w, c = time.perf_counter(), time.process_time()
                read()
                times[name].append((time.perf_counter() - w, time.process_time() - c))
    print(f"region {region} of {spec.arrays} arrays {spec.shape}, threads={args.threads}, "
          f"{'cold, ' if args.cold else ''}"
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    for name, ts_ in times.items():
        wall = np.array([t for t, _ in ts_]) * 1e3
        cpu = statistics.median(c for _, c in ts_) * 1e3
        print(f"  {name:18s} wall best {wall.min():6.1f} q1 {np.percentile(wall, 25):6.1f} "
              f"median {np.median(wall):6.1f} ms   cpu median {cpu:6.1f} ms")
    if "tensorstore Batch" in times:
        ratio = [t / z for (t, _), (z, _) in zip(times["tensorstore Batch"],
                                                 times["zarrfast get_many"], strict=True)]
        print(f"  tensorstore / zarrfast get_many, median over rounds: "
              f"{statistics.median(ratio):.2f}")


if __name__ == "__main__":
    main()
