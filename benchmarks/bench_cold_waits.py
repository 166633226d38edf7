"""Where the time of cold random boxes goes: waits for the disk, for a core, and CPU.

The harness's ``--cold`` ``boxes`` (issue 44, target 5) are timed on a machine that is
seldom quiet; their times there are mostly the time the reading thread waits for a core
after each wait for the disk.  This script reads the harness's boxes (``random`` or
``boxes``, its seed, 100 of them) of an existing harness dataset
(``--path DIR/LAYOUT.zarr``, e.g. ``/work/zt61/colddata/zstd.zarr``: use a copy of
your own, since every round evicts it), each round after evicting the dataset's pages
(``posix_fadvise(DONTNEED)``), in one process taking turns between the libraries and
``--modes`` (``cold``, ``warm``), and prints per library and mode the medians of:

* ``wall``: the boxes' time (``min`` too);
* ``cpu``: the process's CPU time (every thread);
* ``waits``: voluntary context switches of the process (``getrusage``): for zarrfast
  alone in its thread, one a read that waited for the disk;
* ``main cpu / runq / asleep``: the calling thread's CPU time, its time runnable waiting
  for a core (``/proc/thread-self/schedstat``), and the rest of the wall time (waiting
  for the disk, or for a helper thread);
* ``MiB``: bytes the process had read from the disk (``/proc/self/io``).

The counts do not depend much on the machine's load; the times do.  ``--alone 1``
makes zarrfast's box reads run in the calling thread (as when the cores are busy);
``--alone 0`` shares them with the helper thread (as on a quiet machine).  Run it under
each tree (``PYTHONPATH=tree``), taking turns::

    PYTHONPATH=/work/wt/base61 /work/venv312/bin/python benchmarks/bench_cold_waits.py \
        --path /tmp/me/colddata/sharded.zarr --alone 1
    PYTHONPATH=/work/wt/coldbox /work/venv312/bin/python benchmarks/bench_cold_waits.py \
        --path /tmp/me/colddata/sharded.zarr --alone 1

Measured (session 61, colddata, 100 ``boxes``, alone, load 5-17): 7bc3a2a waited
252-256 times for the disk (zstd) and 210-221 (sharded), asleep 35-45 and 47-69 ms;
announcing from the first cold chunk of a box, not only its first chunk: 89-94 and
133-134 waits, 19-28 and 35-46 ms asleep; the main thread's wait for a core was 90 to
1500 ms depending on the load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import time

import numpy as np

from zarrfast.bench import data as D
from zarrfast.bench import libs as L
from zarrfast.bench.harness import evict_pages


def _schedstat() -> tuple[int, int]:
    with open("/proc/thread-self/schedstat") as f:
        run, wait = f.read().split()[:2]
    return int(run), int(wait)


def _disk_bytes() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def _dataset(path: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The array's shape and (inner) chunk shape, from its ``zarr.json``."""
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    for codec in meta.get("codecs", []):
        if codec["name"] == "sharding_indexed":
            chunks = codec["configuration"]["chunk_shape"]
    return tuple(meta["shape"]), tuple(chunks)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", required=True, help="a harness dataset (LAYOUT.zarr)")
    p.add_argument("--op", default="boxes", choices=["boxes", "random"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default="cold", help="cold,warm")
    p.add_argument("--libs", default="zarrfast", help="zarrfast,tensorstore")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--alone", choices=["auto", "0", "1"], default="auto",
                   help="zarrfast's box reads in the calling thread alone (1), shared "
                        "with the helper thread (0), or as the load says (auto)")
    args = p.parse_args()
    if args.alone != "auto":
        import zarrfast.engine.boxes as boxes_mod

        alone = args.alone == "1"
        boxes_mod.alone = lambda n, chain: alone  # (this process only)
    shape, chunks = _dataset(args.path)
    big = args.op == "boxes"
    rng = np.random.default_rng((0, 1) if big else 0)  # (the harness's seed 0)
    boxes = D.boxes(rng, shape, chunks, 100, big=big)
    classes = {"zarrfast": L.Zarrfast, "tensorstore": L.Tensorstore}
    libs = {name: classes[name]() for name in args.libs.split(",")}
    modes = args.modes.split(",")
    res: dict[tuple[str, str], list[dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        handles = {}
        for name, lib in libs.items():
            stack.enter_context(lib.session(args.threads))
            handles[name] = lib.open(args.path)
            lib.read(handles[name], boxes[0])
        for _ in range(args.rounds):
            for mode in modes:
                for name, lib in libs.items():
                    if mode == "cold":
                        evict_pages(args.path)
                    io0, s0 = _disk_bytes(), _schedstat()
                    c0, r0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
                    wall = 0.0
                    for sel in boxes:
                        t0 = time.perf_counter()
                        lib.read(handles[name], sel)
                        wall += time.perf_counter() - t0
                    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
                    s1, io1 = _schedstat(), _disk_bytes()
                    res.setdefault((name, mode), []).append({
                        "wall": wall * 1e3, "cpu": (c1 - c0) * 1e3,
                        "waits": r1.ru_nvcsw - r0.ru_nvcsw,
                        "main_cpu": (s1[0] - s0[0]) / 1e6, "runq": (s1[1] - s0[1]) / 1e6,
                        "mib": (io1 - io0) / 2**20})
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"# {args.path} {args.op}, {args.threads} threads, alone {args.alone}, "
          f"{args.rounds} rounds, load {load} (medians; ms)")
    for (name, mode), rows in res.items():
        def med(key: str, rows=rows) -> float:
            return statistics.median(r[key] for r in rows)
        asleep = statistics.median(r["wall"] - r["main_cpu"] - r["runq"] for r in rows)
        print(f"{name:12s} {mode:4s} wall {med('wall'):7.1f} (min "
              f"{min(r['wall'] for r in rows):7.1f})  cpu {med('cpu'):6.1f}  waits "
              f"{med('waits'):5.0f}  main cpu {med('main_cpu'):6.1f} runq {med('runq'):7.1f} "
              f"asleep {asleep:6.1f}  MiB {med('mib'):5.1f}")


if __name__ == "__main__":
    main()
