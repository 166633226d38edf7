"""What the disk does for cold boxes: latency, bandwidth, and the order it answers in.

Issue 44 (target 5: 100 random cold boxes of one to two chunks a side).  On the chunk
files of a harness dataset of a file per chunk (``--path DIR/zstd.zarr``; of a
sharded one, the shards stand for the files: ``order`` then says little; use a copy
of your own, every
step evicts its files with ``posix_fadvise(DONTNEED)``), prints:

* ``qd1``: one read at a time (the median of ``--reads``), of a page and of a file;
* ``batch K``: K random chunk files announced at once (``POSIX_FADV_WILLNEED``), then
  read: the time to announce, to the first file, to all (medians);
* ``batch 15 of B bytes``: the same for the first B bytes of each (bandwidth or
  requests: which the disk is bound by);
* ``order``: for a box's 15 chunk files announced in the box's order, when each
  could first be read without waiting (``RWF_NOWAIT``, polled): the disk's order.

    python benchmarks/bench_cold_disk.py --path /work/zt62/me/colddata/zstd.zarr

Measured (session 62, colddata zstd, 44 KB files, virtio disk, mq-deadline, load 4-5):
qd1 75 us a page, 171 us a file; 15 files announced: first after 645 us, all after
1190 us (80 us a file); 15 x 4 KiB 275 us, 15 x 48 KiB 1037 us: bound by its
bandwidth (about 570 MiB/s), not by its requests; a box's files come in the disk's
order, the first announced often among the last (at 1233 us where others came from
839 us).  So a cold box costs its bytes at the disk's bandwidth, and a thread that
waits for its chunks in turn idles beside chunks that have come.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import statistics
import time

from zarrfast.bench.harness import evict_files


def _qd1(files: list[str], n: int, size: int) -> float:
    chosen = random.sample(files, n)
    evict_files(chosen)
    times = []
    for f in chosen:
        fd = os.open(f, os.O_RDONLY)
        t0 = time.perf_counter()
        os.pread(fd, size, 0)
        times.append(time.perf_counter() - t0)
        os.close(fd)
    return statistics.median(times) * 1e6


def _batch(files: list[str], k: int, n: int, size: int) -> tuple[float, float, float]:
    rows = []
    for _ in range(n):
        chosen = random.sample(files, k)
        evict_files(chosen)
        t0 = time.perf_counter()
        fds = [os.open(f, os.O_RDONLY) for f in chosen]
        for fd in fds:
            os.posix_fadvise(fd, 0, size, os.POSIX_FADV_WILLNEED)
        t1 = time.perf_counter()
        os.pread(fds[0], size, 0)
        t2 = time.perf_counter()
        for fd in fds:
            os.pread(fd, size, 0)
        t3 = time.perf_counter()
        for fd in fds:
            os.close(fd)
        rows.append(((t1 - t0) * 1e6, (t2 - t0) * 1e6, (t3 - t0) * 1e6))
    a, b, c = (statistics.median(x) for x in zip(*rows, strict=True))
    return a, b, c


def _order(root: str) -> tuple[float, list[float]]:
    """A box's 15 chunk files (3 x 2 x 3 chunks, in C order), announced in order: when
    each could first be read without waiting (us)."""
    grid = [len(os.listdir(root))]
    first = os.path.join(root, os.listdir(root)[0])
    grid.append(len(os.listdir(first)))
    grid.append(len(os.listdir(os.path.join(first, os.listdir(first)[0]))))
    i, j, k = (random.randrange(max(1, n - 2)) for n in grid)
    files = [os.path.join(root, str(a), str(b), str(c)) for a in (i, i + 1, i + 2)
             for b in (j, j + 1) for c in (k, k + 1, k + 2)][:15]
    files = [f for f in files if os.path.isfile(f)]
    evict_files(files)
    buf = bytearray(1 << 20)
    fds = [os.open(f, os.O_RDONLY) for f in files]
    t0 = time.perf_counter()
    for fd in fds:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    announced = (time.perf_counter() - t0) * 1e6
    ready: list[float | None] = [None] * len(fds)
    while None in ready:
        for n, fd in enumerate(fds):
            if ready[n] is None:
                try:
                    os.preadv(fd, [buf], 0, os.RWF_NOWAIT)
                except BlockingIOError:
                    continue
                ready[n] = (time.perf_counter() - t0) * 1e6
    for fd in fds:
        os.close(fd)
    return announced, [r for r in ready if r is not None]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", required=True, help="a harness dataset (LAYOUT.zarr), a copy")
    p.add_argument("--reads", type=int, default=40)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    random.seed(args.seed)
    root = os.path.join(args.path, "c")
    files = sorted(f for f in glob.glob(os.path.join(root, "**"), recursive=True)
                   if os.path.isfile(f))
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"# {args.path}: {len(files)} files, load {load}; times in us (medians)")
    print(f"qd1 page {_qd1(files, args.reads, 4096):7.0f}   "
          f"qd1 file {_qd1(files, args.reads, 1 << 24):7.0f}")
    for k in (1, 4, 8, 15, 27):
        a, b, c = _batch(files, k, args.rounds, 1 << 24)
        print(f"batch {k:2d}: announced {a:6.0f}  first {b:6.0f}  all {c:6.0f}")
    for size in (4096, 16384, 32768, 49152):
        _, _, c = _batch(files, 15, args.rounds, size)
        print(f"batch 15 of {size:6d} bytes: all {c:6.0f}")
    if os.path.isdir(root) and hasattr(os, "RWF_NOWAIT"):
        for _ in range(4):
            announced, ready = _order(root)
            print(f"order: announced {announced:4.0f}, readable at", [round(r) for r in ready])


if __name__ == "__main__":
    main()
