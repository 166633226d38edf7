"""Cold gathers, A/B in one process: 1,024 sorted random rows (``a.oindex[idx, :]``) of the
``loader`` operation's rows dataset (zstd chunks of (1024, 128) uint16), the dataset's
pages evicted (``posix_fadvise(DONTNEED)``) before every timed read.

Variants, alternated round by round (best and median of ``--repeat``, wall and CPU):

* ``before``: the zstd prefixes decoded through ``ctypes`` (one call per block, the GIL
  taken back after each) and each window of chunks announcing its own files when it
  begins;
* ``kernel``: the batched ``nogil`` kernel (``_ext._zstd_prefix``), files announced per
  window as before;
* ``after``: the kernel, and the gather's files announced by a thread of their own
  (``engine.chunked.Announcer``) ahead of the chunks the threads take;
* ``waves``: ``after`` read in waves (a wave of chunks read, then gathered by the
  calling thread), as cold gathers were read before they were streamed as warm ones
  (h61/coldreg);
* ``warm``: ``after`` without the eviction (what cold costs);
* ``tensorstore`` (when installed): ``a.oindex[idx, :].read()``, 2 data-copy and 2
  file-I/O threads, as the harness sets them.

    python benchmarks/bench_cold_gather.py --path /work/data/cold/bench --repeat 12

The datasets directory is the harness's (``zarrfast bench --ops loader --path DIR``
makes and reuses it; this script makes the rows dataset there when it is missing).  The
data must be on a disk, not a tmpfs (where nothing is ever cold).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from typing import Any

import numpy as np

import zarrfast
from zarrfast.bench import data as D
from zarrfast.bench import parse_size
from zarrfast.bench.harness import evict_pages, loader_selections
from zarrfast.engine import fancy
from zarrfast.kernels import zstd_prefix


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--path", required=True, help="the harness's datasets directory (on a disk)")
    p.add_argument("--size", default="250MiB", help="the rows dataset's size (default 250MiB)")
    p.add_argument("--repeat", type=int, default=9, help="rounds (default 9)")
    p.add_argument("--threads", type=int, default=2, help="threads (default 2)")
    p.add_argument("--variants", default="before,kernel,after,waves,warm,tensorstore")
    args = p.parse_args(argv)
    spec = D.loader_specs(parse_size(args.size))["rows"]
    path = D.loader_path(args.path, spec)
    if not os.path.exists(os.path.join(path, "zarr.json")):
        D.prepare_loader(args.path, parse_size(args.size),
                         log=lambda m: print(f"# {m}", flush=True))
    idx = loader_selections(spec, 0)
    want = np.concatenate([D.values((slice(i, i + 1), slice(0, spec.shape[1])))
                           for i in idx.tolist()])
    zarrfast.config.set(threads=args.threads)
    a = zarrfast.open_array(path, mode="r")
    variants = [v for v in args.variants.split(",") if v]
    t_array: Any = None
    if "tensorstore" in variants:
        try:
            import tensorstore as ts
        except ImportError:
            variants.remove("tensorstore")
        else:
            ctx = ts.Context({"data_copy_concurrency": {"limit": args.threads},
                              "file_io_concurrency": {"limit": args.threads}})
            t_array = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                              read=True, context=ctx).result()
    ahead, kernel = fancy.GATHER_AHEAD_BYTES, zstd_prefix._kernel
    stream = fancy._stream_prefixes

    def unstreamed(array: Any, chain: Any, coords: Any, need: Any, line: Any,
                   consume: Any) -> bool:
        # (a cold line left to the waves, as before h61/coldreg)
        if (len(coords) > 1 and fancy._prefix_kind(array, chain) == "chunks"
                and fancy._prefix_pays(chain, need) and line.cold(0)):
            return False
        return stream(array, chain, coords, need, line, consume)

    def read(variant: str) -> np.ndarray:
        if variant == "tensorstore":
            return t_array.oindex[idx, :].read().result()
        fancy.GATHER_AHEAD_BYTES = ahead if variant in ("after", "warm", "waves") else 0
        zstd_prefix._kernel = None if variant == "before" else kernel
        fancy._stream_prefixes = unstreamed if variant == "waves" else stream
        try:
            return a.oindex[idx, :]
        finally:
            fancy.GATHER_AHEAD_BYTES, zstd_prefix._kernel = ahead, kernel
            fancy._stream_prefixes = stream

    times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for _ in range(args.repeat):
        for v in variants:
            if v != "warm":
                evict_pages(path)
            c0, t0 = _cpu(), time.perf_counter()
            got = read(v)
            times[v].append((time.perf_counter() - t0, _cpu() - c0))
            if not np.array_equal(got, want):
                print(f"{v}: wrong values", file=sys.stderr)
                return 1
    print(f"# {len(idx)} sorted rows of {path}, {args.threads} threads, {args.repeat} rounds, "
          f"load average {os.getloadavg()[0]:.1f}; times in ms")
    for v in variants:
        wall = [w for w, _ in times[v]]
        cpu = [c for _, c in times[v]]
        print(f"{v:12s} wall min {min(wall) * 1e3:7.1f} median {statistics.median(wall) * 1e3:7.1f}"
              f"   CPU min {min(cpu) * 1e3:7.1f} median {statistics.median(cpu) * 1e3:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
