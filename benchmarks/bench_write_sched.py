"""Where a full write's wall time goes, thread by thread, A/B between source trees.

The harness's ``write`` op gives one number per library: the wall time, which on a
loaded machine mostly measures the other processes.  This script splits the wall time
of zarrfast's own writes into what does not depend on the load and what does, so that
a change to the write path can be judged on any machine and the loss of a run at two
threads be put where it is:

* ``cpu``: the process's CPU time (``time.process_time``);
* ``runq``: the time its threads were ready to run but waited for a core (the second
  field of ``/proc/<pid>/task/<tid>/schedstat``, summed over the threads): other
  processes, or more runnable threads than cores;
* ``blocked``: for the calling thread and for the others that ran (``caller`` /
  ``pool``), the wall time minus the time run and waited for a core: the time the
  thread slept by itself (the GIL, a lock, a future, the queue of the pool at the end:
  the parallel inefficiency that is zarrfast's own);
* ``fut``: the calling thread's wait in ``Future.result`` (the end of a shared job:
  the other threads' last batches);
* ``vsw``: the voluntary context switches of the process's threads (a thread that
  slept: how many times, where ``blocked`` says how long).

With ``--stages`` the CPU time of the calling and pool threads is also split by the
entry points a write of these layouts goes through (``thread_time`` around each call
of ``ChunkEncoder.compress_regions``, ``blosc_compress_regions``,
``LocalStore.set_many`` / ``set_regions`` / ``set`` and ``write_files``): compression
(with the gather), the file kernel, the rest of the store calls (Python: directories,
keys) and everything else.  The wrappers cost a few microseconds per call; a store
call that falls back on another (``set_many`` retrying a key through ``set``) is counted
twice.

Each tree (a source checkout with built kernels, ``--trees A,B``) runs in its own
process (``PYTHONPATH=tree``), the trees taking turns ``--rounds`` times, each round
``--reps`` writes into fresh directories of the dataset's layout (the harness's
datasets, made once under ``--path``).  Medians and minima are over all the writes of
a tree, the throughput (array bytes per second) from the best wall time::

    python benchmarks/bench_write_sched.py --trees /src/main,/src/branch \\
        --layouts zstd,blosc,sharded --threads 1,2 --rounds 3 --reps 3 --path /dev/shm/wsched

Linux only (schedstat).  The numbers of a loaded machine say so: ``runq`` beside
``wall``.  A thread that ended before the write returned (one thread's I/O thread) is
not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from zarrfast.bench import data as D
from zarrfast.bench import parse_size

CHILD = r"""
import json, os, shutil, sys, threading, time
import concurrent.futures as cf

src_path, template, work, threads, reps, stages = sys.argv[1:7]
threads, reps, stages = int(threads), int(reps), stages == "1"
import zarrfast

acct = {}


def wrap(owner, name, label):
    f = getattr(owner, name, None)
    if f is None:
        return

    def w(*a, **k):
        t = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            acct[label] = acct.get(label, 0.0) + time.thread_time() - t

    setattr(owner, name, w)


fut_wait = [0.0]
_result = cf.Future.result


def result(self, timeout=None):
    t = time.perf_counter()
    try:
        return _result(self, timeout)
    finally:
        if threading.current_thread() is threading.main_thread():
            fut_wait[0] += time.perf_counter() - t


cf.Future.result = result
if stages:
    import zarrfast.kernels as K
    import zarrfast.storage.local as SL
    from zarrfast.engine import chunked as C

    wrap(K, "write_files", "file kernel")
    wrap(K, "write_region_files", "file kernel")
    wrap(K, "blosc_compress_regions", "compress")
    for m in ("set_many", "set_regions", "set"):
        wrap(SL.LocalStore, m, "store calls")
    Enc = C._encode.ChunkEncoder
    if Enc is not None:  # (None: no batched encoder in this build, numcodecs compresses)

        class Timed(Enc):
            def compress_regions(self, *a, **k):
                t = time.thread_time()
                try:
                    return super().compress_regions(*a, **k)
                finally:
                    acct["compress"] = acct.get("compress", 0.0) + time.thread_time() - t

        C._encode.ChunkEncoder = Timed


def sched():
    out = {}
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/schedstat") as f:
                out[t] = [int(x) for x in f.read().split()[:2]]
            with open(f"/proc/self/task/{t}/status") as f:
                out[t] += [int(line.split()[1]) for line in f
                           if line.startswith("voluntary_ctxt_switches")]
        except OSError:  # (a thread that ended meanwhile)
            out.pop(t, None)
    return out


value = zarrfast.open_array(src_path, mode="r")[...]
zarrfast.config.set(threads=threads)
me = str(threading.get_native_id())
rows = []
for r in range(reps):
    dst = os.path.join(work, f"w{r}.zarr")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for f in ("zarr.json", ".zarray", ".zattrs"):
        if os.path.exists(os.path.join(template, f)):
            shutil.copyfile(os.path.join(template, f), os.path.join(dst, f))
    os.sync()
    acct.clear()
    fut_wait[0] = 0.0
    s0 = sched()
    t0, c0 = time.perf_counter(), time.process_time()
    a = zarrfast.open_array(dst, mode="r+")
    a[...] = value
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s1 = sched()
    runq = caller = pool = 0.0
    vsw = 0
    for t, (run1, wait1, vsw1) in s1.items():
        run0, wait0, vsw0 = s0.get(t, (0, 0, 0))
        run, wait = (run1 - run0) / 1e9, (wait1 - wait0) / 1e9
        runq += wait
        vsw += vsw1 - vsw0
        if t == me:
            caller = wall - run - wait
        elif run > 0.002:  # (a thread that took part)
            pool += max(0.0, wall - run - wait)
    rows.append(dict(nbytes=value.nbytes, wall=wall, cpu=cpu, runq=runq, caller=caller, pool=pool,
                     fut=fut_wait[0], vsw=vsw, **{k: v for k, v in acct.items()}))
    del a
    shutil.rmtree(dst)
print(json.dumps(rows))
"""

STAGES = ("compress", "file kernel", "store calls")


def run_tree(tree: str, ds: D.Dataset, template: str, work: str, threads: int, reps: int,
             stages: bool) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, ds.path, template, work, str(threads), str(reps),
         "1" if stages else "0"], env=env, capture_output=True, text=True, check=False,
        cwd=work)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: the writing process failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(rows: list[dict], stages: bool) -> str:
    def ms(key: str, fn=statistics.median) -> float:
        return fn([r.get(key, 0.0) for r in rows]) * 1e3

    mib = rows[0]["nbytes"] / 2**20
    text = (f"{mib / ms('wall', min) * 1e3:6.0f} MiB/s  "
            f"wall {ms('wall', min):7.1f} / {ms('wall'):7.1f}  cpu {ms('cpu', min):6.1f} / "
            f"{ms('cpu'):6.1f}  runq {ms('runq'):7.1f}  blocked caller {ms('caller'):5.1f} "
            f"pool {ms('pool'):5.1f}  fut {ms('fut'):5.1f}  vsw {ms('vsw') / 1e3:4.0f}")
    if stages:
        parts = {s: ms(s) for s in STAGES}
        # (the store calls include the file kernel's calls they make)
        parts["store calls"] -= parts["file kernel"]
        parts["rest"] = ms("cpu") - ms("compress") - ms("store calls")
        text += "\n" + " " * 26 + "cpu: " + "  ".join(
            f"{k} {v:.1f}" for k, v in parts.items())
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", required=True,
                   help="comma-separated source trees (PYTHONPATH each), taking turns")
    p.add_argument("--layouts", default="zstd,blosc,sharded")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=3, help="writes per round and tree")
    p.add_argument("--size", default="256MiB", type=parse_size)
    p.add_argument("--path", default=None, help="keep the datasets here (reused)")
    p.add_argument("--stages", action="store_true",
                   help="split the CPU time by the write's entry points")
    args = p.parse_args()
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    root = args.path or tempfile.mkdtemp(prefix="wsched-")
    os.makedirs(root, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); "
          "times in ms, min / median over every write of a tree")
    for name in args.layouts.split(","):
        ds = D.prepare(root, D.LAYOUTS[name], args.size)
        template = os.path.join(root, f"{name}-template.zarr")
        D.create_template(D.LAYOUTS[name], ds.shape, template)
        for threads in (int(t) for t in args.threads.split(",")):
            got: dict[str, list[dict]] = {t: [] for t in trees}
            with tempfile.TemporaryDirectory(dir=root) as work:
                for _ in range(args.rounds):
                    for tree in trees:
                        got[tree] += run_tree(tree, ds, template, work, threads, args.reps,
                                              args.stages)
            for tree in trees:
                print(f"{name:>8} t={threads} {os.path.basename(tree)[:12]:>12}  "
                      f"{summary(got[tree], args.stages)}")
        print(f"         (load average now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
