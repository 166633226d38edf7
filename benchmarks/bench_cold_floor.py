"""The floor of cold box and region reads: the files a read touches, read every way.

Issue 44 (target 5: 100 random boxes one to two chunks long per side, zstd and sharded,
cold) and issue 45 (the loader's regions: the same 256x256 region of 50 arrays, cold).
For each box (``--boxes``: the first N boxes of the harness's ``boxes`` op) or for the
regions batch, the chunk (or shard) files it touches are evicted from the page cache
(``posix_fadvise(DONTNEED)``) before every timed read, then read:

* ``seq``: one after another (``open``, ``read``, ``close``), no decoding;
* ``t2``, ``t8``, ``t32``, ``t64``: by that many threads at once, no decoding;
* ``willneed``: all announced first (``POSIX_FADV_WILLNEED``: the disk reads them all at
  once), then one after another, no decoding;
* ``zarrfast``: ``a[box]`` (boxes) or ``zarrfast.get_many`` (regions), as the harness reads;
* ``zarrfast-announced`` (regions): the same, but every file announced at once by a
  thread of its own, and the arrays read 4 per thread at a time (``io_concurrency``),
  not all at once each announcing its own files (h61/coldreg's proposal, reverted for
  want of a gain on a loaded machine: it uses fewer threads and less CPU);
* ``zarrfast-shared`` (regions): the same, each array's read sharing its box with the
  kernels' helper thread, as before the reads run at once decoded alone;
* ``warm``: ``zarrfast`` without the eviction (what cold costs);
* ``tensorstore`` (when installed): the box (or a ``ts.Batch`` of the regions), 2
  data-copy and 2 file-I/O threads, as the harness sets them.

Variants alternate round by round; best and median of ``--repeat`` rounds, wall and CPU
time of the process (a box's time is the sum over the boxes).  Sharded boxes read whole
shard files in the floor rows (more than the inner chunks a box needs: an upper bound).

    python benchmarks/bench_cold_floor.py --path /work/data/cold/bench --layout zstd
    python benchmarks/bench_cold_floor.py --path /work/data/cold/loader --regions

The datasets directory is the harness's (``zarrfast bench --ops boxes --layouts
zstd,sharded --path DIR``, or ``--ops loader`` for ``--regions``); it must be on a disk,
not a tmpfs (where nothing is ever cold).
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import zarrfast
from zarrfast.bench import data as D
from zarrfast.bench.harness import loader_selections
from zarrfast.engine import boxes as _boxes

FLOOR = ("seq", "t2", "t8", "t32", "t64", "willneed")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _advise(files: list[str], advice: int) -> None:
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, advice)
        finally:
            os.close(fd)


def _evict(files: list[str]) -> None:
    _advise(files, os.POSIX_FADV_DONTNEED)


def _willneed(files: list[str]) -> None:
    _advise(files, os.POSIX_FADV_WILLNEED)


def _read(p: str) -> int:
    with open(p, "rb", buffering=0) as f:
        return len(f.read())


def _files(root: str, sel: tuple[slice, ...], grid: tuple[int, ...]) -> list[str]:
    """The chunk (or shard) files of ``root`` (default chunk keys, ``/``) ``sel`` touches."""
    ranges = [range(s.start // g, (s.stop - 1) // g + 1) for s, g in zip(sel, grid, strict=True)]
    return [os.path.join(root, "c", *map(str, c)) for c in itertools.product(*ranges)]


def _boxes_of(shape: tuple[int, ...], chunks: tuple[int, ...], n: int, seed: int = 0
              ) -> list[tuple[slice, ...]]:
    """The harness's ``boxes`` op boxes (``_Context.boxes``), the first ``n``."""
    rng = np.random.default_rng((seed, 1))
    out = []
    for _ in range(100):
        box = []
        for s, c in zip(shape, chunks, strict=True):
            size = int(rng.integers(min(c, s), min(2 * c, s) + 1))
            start = int(rng.integers(0, s - size + 1))
            box.append(slice(start, start + size))
        out.append(tuple(box))
    return out[:n]


def _floor(pools: dict[int, ThreadPoolExecutor]) -> dict[str, Callable[[list[str]], Any]]:
    return {"seq": lambda fs: [_read(p) for p in fs],
            **{f"t{k}": (lambda fs, k=k: list(pools[k].map(_read, fs))) for k in pools},
            "willneed": lambda fs: (_willneed(fs), [_read(p) for p in fs])}


def _tensorstore(threads: int) -> Any:
    try:
        import tensorstore as ts
    except ImportError:
        return None
    return ts, ts.Context({"data_copy_concurrency": {"limit": threads},
                           "file_io_concurrency": {"limit": threads}})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--path", required=True, help="the harness's datasets directory (on a disk)")
    p.add_argument("--layout", default="zstd", help="boxes of this layout (zstd, sharded)")
    p.add_argument("--regions", action="store_true", help="the loader's regions instead")
    p.add_argument("--boxes", type=int, default=30, help="boxes read (default 30, at most 100)")
    p.add_argument("--repeat", type=int, default=7, help="rounds (default 7)")
    p.add_argument("--threads", type=int, default=2, help="threads (default 2)")
    p.add_argument("--variants", default=",".join(
        (*FLOOR, "zarrfast", "zarrfast-announced", "zarrfast-shared", "warm", "tensorstore")))
    args = p.parse_args(argv)
    zarrfast.config.set(threads=args.threads)
    variants = [v for v in args.variants.split(",") if v]
    pools = {k: ThreadPoolExecutor(k) for k in (2, 8, 32, 64)}
    floor = _floor(pools)
    tsc = _tensorstore(args.threads)
    if tsc is None and "tensorstore" in variants:
        variants.remove("tensorstore")

    def ts_open(path: str) -> Any:
        assert tsc is not None
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return tsc[0].open(spec, read=True, context=tsc[1]).result()

    if args.regions:
        spec = D.loader_specs(D.MAIN_NBYTES)["regions"]
        root = D.loader_path(args.path, spec)
        names = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
        arrays = [zarrfast.open_array(os.path.join(root, n), mode="r") for n in names]
        shape, chunks = arrays[0].shape, arrays[0].chunks
        region = loader_selections(D.LoaderSpec("regions", shape, chunks,
                                                arrays=len(arrays)), 0)
        groups = [_files(os.path.join(root, n), region, chunks) for n in names]
        units: list[tuple[list[str], Any]] = [([f for g in groups for f in g], region)]
        t_arrays = [ts_open(os.path.join(root, n)) for n in names] if tsc else []
        what = f"the same {region} of {len(arrays)} arrays of {root}"

        def zf(sel: Any) -> Any:
            return zarrfast.get_many([(a, sel) for a in arrays])

        def ts_read(sel: Any) -> Any:
            with tsc[0].Batch() as b:  # type: ignore[index]
                futures = [t[sel].read(batch=b) for t in t_arrays]
            return [f.result() for f in futures]
    else:
        path = os.path.join(args.path, f"{args.layout}.zarr")
        a = zarrfast.open_array(path, mode="r")
        shards = getattr(a, "shards", None)
        grid = tuple(shards) if shards else tuple(a.chunks)
        units = [(_files(path, b, grid), b)
                 for b in _boxes_of(a.shape, tuple(a.chunks), min(args.boxes, 100))]
        t_array = ts_open(path) if tsc else None
        what = f"{len(units)} boxes of {path}"

        def zf(sel: Any) -> Any:
            return a[sel]

        def ts_read(sel: Any) -> Any:
            return t_array[sel].read().result()

    alone = _boxes.alone

    def shared(n: int, chain: Any) -> bool:
        # (as before: alone only while the cores are busy with other work)
        return n * chain.chunk_nbytes <= _boxes.ALONE_BYTES and _boxes.cores_contended()

    def run(v: str, files: list[str], sel: Any) -> None:
        if v in floor:
            floor[v](files)
        elif v == "tensorstore":
            ts_read(sel)
        elif v == "zarrfast-shared":
            _boxes.alone = shared
            try:
                zf(sel)
            finally:
                _boxes.alone = alone
        elif v == "zarrfast-announced":
            # (every file announced at once by a thread of its own, and the batches read
            # 4 per thread at a time: ``io_concurrency`` bounds the cold get_many's reads)
            t = threading.Thread(target=_willneed, args=(files,))
            t.start()
            with zarrfast.config.set(io_concurrency=4 * args.threads):
                zf(sel)
            t.join()
        else:
            zf(sel)

    times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for _ in range(args.repeat):
        for v in variants:
            wall = cpu = 0.0
            for files, sel in units:
                if v != "warm":
                    _evict(files)
                c0, t0 = _cpu(), time.perf_counter()
                run(v, files, sel)
                wall += time.perf_counter() - t0
                cpu += _cpu() - c0
            times[v].append((wall, cpu))
    nfiles = sum(len(f) for f, _ in units)
    print(f"# {what}: {nfiles} files, {args.threads} threads, {args.repeat} rounds, "
          f"load average {os.getloadavg()[0]:.1f}; times in ms")
    for v in variants:
        wall_s = [w for w, _ in times[v]]
        cpu_s = [c for _, c in times[v]]
        print(f"{v:18s} wall min {min(wall_s) * 1e3:7.1f} median "
              f"{statistics.median(wall_s) * 1e3:7.1f}   CPU min {min(cpu_s) * 1e3:7.1f} "
              f"median {statistics.median(cpu_s) * 1e3:7.1f}")
    for pool in pools.values():
        pool.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
