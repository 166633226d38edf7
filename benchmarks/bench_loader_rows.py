"""The loader op's ``rows`` row, interleaved: per round, the same 1,024 sorted random rows
of ``loader-rows.zarr`` read by ``a.oindex[rows, :]`` and (when installed) by
tensorstore's ``a.oindex[rows, :].read()`` -- one after another in each round, so that
both see the same load on a shared machine.  Prints, per reader, the best, first
quartile and median wall time per batch, the median CPU time of the process per batch
(all threads) and the bytes the process read per batch (``rchar`` of
``/proc/self/io``, where there is one): the last two depend far less on the load than
the wall time.  Every result is checked against the values the harness wrote.

The dataset is the harness's (``--path`` of ``zarrfast.cli bench --ops loader``; made
there when missing)::

    PYTHONPATH=/path/to/tree python benchmarks/bench_loader_rows.py \\
        --path /data/loaderdata [--size 128MiB] [--threads 2] [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_loader_regions import (  # noqa: E402
    _tensorstore,
    add_loader_arguments,
    open_tensorstore,
)

import zarrfast  # noqa: E402
from zarrfast import config  # noqa: E402
from zarrfast.bench import data as D  # noqa: E402
from zarrfast.bench.harness import loader_expected, loader_selections  # noqa: E402


def _read_bytes() -> int:
    """The bytes this process has read by system calls (``rchar``), or 0 (no
    ``/proc/self/io``)."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_loader_arguments(p)
    args = p.parse_args()
    loader = D.prepare_loader(args.path, D.parse_size(args.size), log=print)
    spec, root, _ = loader["rows"]
    rows = loader_selections(spec, args.seed)
    want = loader_expected(spec, rows)[0]
    array = zarrfast.open_array(root, mode="r")
    readers = {"zarrfast oindex": lambda: array.oindex[rows, :]}
    if _tensorstore() is not None:
        handle, = open_tensorstore([root], args.threads)
        readers["tensorstore oindex"] = lambda: handle.oindex[rows, :].read().result()
    times: dict[str, list[tuple[float, float, int]]] = {name: [] for name in readers}
    with config.set(threads=args.threads):
        for name, read in readers.items():
            assert np.array_equal(read(), want), name
        for _ in range(args.rounds):
            for name, read in readers.items():
                w, c, b = time.perf_counter(), time.process_time(), _read_bytes()
                read()
                times[name].append((time.perf_counter() - w, time.process_time() - c,
                                    _read_bytes() - b))
    chunks = np.unique(rows // spec.chunks[0]).size
    print(f"{len(rows)} rows of {spec.shape} ({chunks} chunks), threads={args.threads}, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    for name, ts_ in times.items():
        wall = np.array([t for t, _, _ in ts_]) * 1e3
        cpu = statistics.median(c for _, c, _ in ts_) * 1e3
        read = statistics.median(b for _, _, b in ts_) / 2**20
        print(f"  {name:18s} wall best {wall.min():6.1f} q1 {np.percentile(wall, 25):6.1f} "
              f"median {np.median(wall):6.1f} ms   cpu median {cpu:6.1f} ms   "
              f"read {read:6.1f} MiB")
    if "tensorstore oindex" in times:
        ratio = [t / z for (t, _, _), (z, _, _) in zip(times["tensorstore oindex"],
                                                       times["zarrfast oindex"], strict=True)]
        print(f"  tensorstore / zarrfast, median over rounds: {statistics.median(ratio):.2f}")


if __name__ == "__main__":
    main()
