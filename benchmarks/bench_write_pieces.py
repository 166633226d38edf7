"""System time of writing files in calls of a given size (the page cache's folios).

The page cache takes folios as large as a ``write`` call (up to 2 MiB).  On a VM whose
balloon reports free blocks of 2 MiB to the host (virtio-balloon free page reporting;
``/sys/module/page_reporting/parameters/page_reporting_order``), large folios come
from such blocks once the smaller free ones are used up, and the host faults their pages
in again while the call copies into them (``copy_folio_from_iter_atomic`` in ``perf``).
This script writes ``--files`` files of ``--size`` bytes per run, by ``--threads``
threads, each file in calls of each ``--pieces`` size, ``--runs`` runs kept one after the
other (the page cache grows as in a benchmark's repeated writes), and prints the process's
system time of each run: the file kernels' ``ZF_WRITE_PIECE`` (128 KiB) was chosen so::

    python benchmarks/bench_write_pieces.py --path /some/dir/on/the/disk \\
        --size 2400000 --files 75 --threads 2 --runs 6 --pieces 2400000,1048576,131072

Linux/POSIX only (``resource``).  Files go under ``--path`` (removed at the end).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import threading

import numpy as np


def run(root: str, size: int, files: int, piece: int, threads: int, tag: str) -> float:
    bufs = [np.random.default_rng(t).integers(0, 256, size, dtype=np.uint8)
            for t in range(threads)]

    def write(t: int) -> None:
        view = memoryview(bufs[t])
        for i in range(t, files, threads):
            fd = os.open(os.path.join(root, f"{tag}-{i}"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for o in range(0, size, piece):
                    done = 0
                    part = view[o:o + piece]
                    while done < len(part):
                        done += os.write(fd, part[done:])
            finally:
                os.close(fd)

    os.sync()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    ts = [threading.Thread(target=write, args=(t,)) for t in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_stime - r0.ru_stime) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", required=True, help="a directory on the file system to test")
    ap.add_argument("--size", type=int, default=2_400_000, help="bytes per file")
    ap.add_argument("--files", type=int, default=75, help="files per run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=6, help="runs per piece size, kept")
    ap.add_argument("--pieces", default="2400000,1048576,262144,131072,65536",
                    help="comma-separated bytes per write call")
    args = ap.parse_args()
    for piece in (int(p) for p in args.pieces.split(",")):
        root = os.path.join(args.path, f"pieces-{os.getpid()}-{piece}")
        os.makedirs(root)
        try:
            sys_ms = [run(root, args.size, args.files, piece, args.threads, f"r{r}")
                      for r in range(args.runs)]
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"calls of {piece:>8d} B: system time per run (ms) "
              + " ".join(f"{s:.0f}" for s in sys_ms), flush=True)


if __name__ == "__main__":
    main()
