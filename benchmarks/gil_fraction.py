"""How long a full read holds the GIL, and what that projects to on many cores.

For each layout the harness's dataset is made (not measured), then a child process
opens the array, reads it whole once (the pool starts, modules load, pages are cached)
and then reads it again and again inside one function until it is told to stop.  Only
then does py-spy attach to it, twice for ``--seconds`` at the same rate, so that
nothing of the start (imports, the first read) is counted:

* ``--gil``: only the thread holding the GIL is sampled, so the samples of the read
  loop and of zarrfast's pool threads count the time the GIL is held during reads;
* ``--idle``: the main thread is sampled whether it runs or waits, so its samples
  inside the read loop count the loop's wall time.

``held = GIL samples / wall samples`` is the fraction of a read's wall time during
which some thread holds the GIL.  With ``t`` threads busy the CPU time is about
``t x`` the wall time, so the GIL's share of the work is ``s = held / t``; Amdahl's law
gives ``S(N) = 1 / (s + (1 - s) / N)`` and the GIL alone caps the speed-up at ``1 / s``
(it is a single resource each thread holds ``s`` of its time).  Memory bandwidth and
the store are not in this projection: ``MiB/s per thread`` is printed beside it::

    python benchmarks/gil_fraction.py [--layouts zstd,blosc,sharded] [--size 256MiB]
        [--threads 1,2] [--seconds 5] [--rate 250] [--stacks 5]

``--stacks N`` prints the N stacks (their innermost frames) that held the GIL most.

Needs py-spy (``pip install py-spy``) and the right to trace a child process.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from zarrfast.bench import data as D
from zarrfast.bench import parse_size

CHILD = r"""
import signal, sys, time
import zarrfast
path, threads = sys.argv[1], int(sys.argv[2])
stop = False

def _stop(*_):
    global stop
    stop = True

signal.signal(signal.SIGUSR1, _stop)

def _gil_read_loop(a):
    n, t0 = 0, time.perf_counter()
    while not stop:
        a[...]
        n += 1
    return n, time.perf_counter() - t0

with zarrfast.config.set(threads=threads):
    a = zarrfast.open_array(path, mode="r")
    a[...]  # warm: pool started, modules loaded, pages cached
    print("ready", flush=True)
    n, dt = _gil_read_loop(a)
print(n, dt, a.nbytes, flush=True)
"""

LOOP = "_gil_read_loop"
PY_SPY = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")


def _samples(raw: str) -> tuple[collections.Counter, str | None]:
    """Samples per thread (``thread (tid)``) and the thread that ran the loop."""
    per_thread: collections.Counter = collections.Counter()
    loop_thread = None
    in_loop: collections.Counter = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        tid = re.match(r"thread \((\d+)\)", stack)  # (py-spy adds a name once it knows it)
        if tid is None:
            continue
        thread = tid[1]
        per_thread[thread] += int(count)
        if LOOP in stack:
            in_loop[thread] += int(count)
            loop_thread = thread
    return collections.Counter({t: in_loop[t] if t == loop_thread else c
                                for t, c in per_thread.items()}), loop_thread


def _innermost(stack: str, depth: int = 4) -> str:
    frames = [f.split(" (")[0] for f in stack.split(";")[1:]]
    return ";".join(frames[-depth:])


def measure(path: str, threads: int, seconds: float, rate: int, work: str) -> dict:
    child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(threads)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if child.stdout.readline().strip() != "ready":
            child.wait(60)
            raise SystemExit(f"the reading process failed: {child.stderr.read().strip()[-500:]}")
        counts, raws = {}, {}
        for mode in ("--gil", "--idle"):
            out = os.path.join(work, f"spy{mode}.txt")
            proc = subprocess.run(
                [PY_SPY, "record", mode, "--threads", "-r", str(rate), "-d", str(int(seconds)),
                 "-f", "raw", "-o", out, "--pid", str(child.pid)],
                capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not os.path.exists(out):
                raise SystemExit(f"py-spy failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
            with open(out) as f:
                raws[mode] = f.read()
            counts[mode] = _samples(raws[mode])
        child.send_signal(signal.SIGUSR1)
        stdout, stderr = child.communicate(timeout=600)
        if child.returncode != 0:
            raise SystemExit(f"the reading process failed: {stderr.strip()[-500:]}")
        reads, dt, nbytes = stdout.split()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    gil, loop_thread = counts["--gil"]
    idle, idle_loop = counts["--idle"]
    wall = idle[idle_loop] if idle_loop else 0
    # under --gil: the loop thread's samples inside the loop, and every other thread's
    # (after the warm-up the pool works only for the loop's reads)
    held = sum(gil.values())
    stacks: collections.Counter = collections.Counter()
    for line in raws["--gil"].splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit() and (LOOP in stack or not stack.startswith(f"thread ({loop_thread})")):
            stacks[_innermost(stack)] += int(count)
    return {"held": held / wall if wall else float("nan"), "gil_samples": held,
            "wall_samples": wall, "reads": int(reads), "seconds": float(dt),
            "mib_s": int(reads) * int(nbytes) / float(dt) / 2**20, "stacks": stacks}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layouts", default="zstd,blosc,sharded")
    p.add_argument("--size", default="256MiB", type=parse_size)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rate", type=int, default=250)
    p.add_argument("--stacks", type=int, default=0,
                   help="print the N stacks that held the GIL most")
    p.add_argument("--path", help="keep the datasets here (default: a temporary directory)")
    args = p.parse_args()
    if not os.path.exists(PY_SPY):
        raise SystemExit("py-spy is not installed: pip install py-spy")
    root = args.path or tempfile.mkdtemp(prefix="zarrfast-gil-")
    print(f"{'layout':10} {'thr':>3} {'held':>7} {'s=held/t':>9} {'S(16)':>6} {'S(32)':>6} "
          f"{'S(64)':>6} {'1/s':>6} {'MiB/s':>7} {'MiB/s/thr':>9}")
    try:
        for name in args.layouts.split(","):
            ds = D.prepare(root, D.LAYOUTS[name], args.size)
            for t in (int(x) for x in args.threads.split(",")):
                with tempfile.TemporaryDirectory() as work:
                    m = measure(ds.path, t, args.seconds, args.rate, work)
                s = m["held"] / t
                amdahl = [1 / (s + (1 - s) / n) for n in (16, 32, 64)]
                print(f"{name:10} {t:3d} {m['held']:7.1%} {s:9.2%} "
                      + " ".join(f"{x:6.1f}" for x in amdahl)
                      + f" {1 / s if s else float('inf'):6.0f} {m['mib_s']:7.0f} "
                        f"{m['mib_s'] / t:9.0f}   ({m['gil_samples']} GIL / "
                        f"{m['wall_samples']} wall samples, {m['reads']} reads)", flush=True)
                for stack, count in m["stacks"].most_common(args.stacks):
                    print(f"{'':14}{count:5d}  {stack}")
    finally:
        if not args.path:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
