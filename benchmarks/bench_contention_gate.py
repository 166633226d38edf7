"""The contention gate (``zarrfast.concurrency.cores_contended``): is its choice the faster one?

Box reads one to two chunks long per side (zstd 32^3 uint16 chunks, 100 boxes, fixed
seed) from one open array, at ``--threads`` (2 by default), three ways taking turns in
one process: ``gate`` (the gate decides, its state kept from round to round, as a
user's reads keep it), ``alone`` (the caller decodes alone, as when contended) and
``shared`` (the gate off: shared with the kernels' helper thread).  With ``--busy N``,
N competing processes spin (a pure-Python loop each) for the whole run.  Prints the
best and median wall time of each way, its CPU time, and how many boxes the gate ran
alone; then the gate's own cost per call (CPU, best of 5).

The gate is right when ``gate`` is about as fast as the faster of ``alone`` and
``shared``.  Run it on a quiet machine with ``--busy 0`` and ``--busy 1``; on a loaded
machine the three ways still take turns, so compare them within one run.

    python benchmarks/bench_contention_gate.py --busy 0,1 --rounds 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import zarrfast
from zarrfast import concurrency, config
from zarrfast.bench.data import boxes as random_boxes
from zarrfast.engine import boxes as _boxes

SPIN = "import os, sys\nwhile os.getppid() == int(sys.argv[1]):\n    pass\n"


def make_array(root: str) -> tuple[zarrfast.Array, list[tuple[slice, ...]]]:
    shape, chunk = (192, 384, 384), 32
    a = zarrfast.create_array(f"{root}/a.zarr", shape=shape, chunks=(chunk,) * 3,
                              dtype="uint16",
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    rng = np.random.default_rng(0)
    a[...] = (np.arange(np.prod(shape)) % 4099 + rng.integers(0, 64, np.prod(shape))
              ).astype("uint16").reshape(shape)
    return a, random_boxes(rng, shape, (chunk,) * len(shape), 100)


def run(a: zarrfast.Array, sels: list[tuple[slice, ...]], threads: int, busy: int,
        rounds: int) -> None:
    real = concurrency.cores_contended
    verdicts: list[bool] = []

    def counted() -> bool:
        v = real()
        verdicts.append(v)
        return v

    gate_state = concurrency._Contention()
    held = concurrency._Contention()
    held.alone, held.since = True, float("inf")
    times: dict[str, list[float]] = {"gate": [], "alone": [], "shared": []}
    cpu: dict[str, list[float]] = {k: [] for k in times}
    alone_boxes = 0
    procs = [subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
             for _ in range(busy)]
    old = (concurrency._contention, concurrency.CONTENTION_GATE, _boxes.cores_contended)
    try:
        time.sleep(0.3)  # (the busy processes spinning)
        _boxes.cores_contended = counted
        with config.set(threads=threads):
            for _ in range(rounds):
                for way in times:
                    concurrency._contention = held if way == "alone" else gate_state
                    concurrency.CONTENTION_GATE = way != "shared"
                    verdicts.clear()
                    t0, c0 = time.perf_counter(), time.process_time()
                    for sel in sels:
                        a[sel]
                    times[way].append(time.perf_counter() - t0)
                    cpu[way].append(time.process_time() - c0)
                    if way == "gate":
                        alone_boxes += sum(verdicts)
    finally:
        concurrency._contention, concurrency.CONTENTION_GATE, _boxes.cores_contended = old
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    line = f"busy={busy} threads={threads}"
    for way, ts in times.items():
        line += (f" | {way} best {min(ts) * 1e3:6.1f} ms median "
                 f"{statistics.median(ts) * 1e3:6.1f} cpu {min(cpu[way]) * 1e3:6.1f}")
    print(f"{line} | gate alone {alone_boxes}/{rounds * len(sels)} boxes", flush=True)


def gate_cost() -> None:
    """CPU per call of the gate between two windows, sharing and alone (best of 5)."""
    old = (concurrency._contention, concurrency.CONTENTION_GATE)
    concurrency.CONTENTION_GATE = True
    try:
        for way in ("sharing", "alone"):
            st = concurrency._contention = concurrency._Contention()
            best = float("inf")
            for _ in range(5):
                st.alone = way == "alone"
                c0 = time.process_time()
                for _ in range(100_000):
                    concurrency.cores_contended()
                best = min(best, time.process_time() - c0)
            print(f"gate cost, {way}: {best / 100_000 * 1e9:.0f} ns CPU per call (with its "
                  f"reads once a window, and alone of the run queue)")
    finally:
        concurrency._contention, concurrency.CONTENTION_GATE = old


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--busy", default="0,1", help="competing processes, comma-separated")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as root:
        a, sels = make_array(root)
        for busy in (int(b) for b in args.busy.split(",")):
            run(a, sels, args.threads, busy, args.rounds)
    gate_cost()


if __name__ == "__main__":
    main()
