"""Where the CPU of the remote loader's ``rows`` batch goes: the client, the proxy, nginx.

``bench_loader_remote.py`` times the loader behind nginx and the delaying proxy of
``remote_servers.py``, all on this machine: the proxy (an asyncio process) and nginx
take CPU from the same cores as the library being timed.  This reads the ``rows`` batch
(1,024 sorted random rows of the (N, 128) zstd array, ``a.oindex[idx, :]``) ``--n``
times with zarrfast through the same servers and prints, per batch: the wall time, the
CPU time of the client process (its threads grouped: the decoding pool's, obstore's
runtime (``tokio-rt-worker``), the others: request threads, the calling thread), of the
proxy and of nginx (``/proc``'s counters, in nanoseconds for the client's threads), and
the requests and bytes the proxy forwarded.  Every batch is checked against the values.

    python benchmarks/bench_loader_remote_cpu.py --path /tmp/loader --n 20
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loader_remote_setup as LR  # noqa: E402
import numpy as np  # noqa: E402

import zarrfast  # noqa: E402
from zarrfast import config  # noqa: E402
from zarrfast.bench.harness import loader_expected, loader_selections  # noqa: E402


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children (nginx's master and workers)."""
    return LR.process_cpu(pid) + sum(LR.process_cpu(c) for c in _children(pid))


def _threads() -> dict[str, tuple[str, float]]:
    """This process's threads: id -> (name, CPU seconds, from ``schedstat``)."""
    out = {}
    me = os.getpid()
    for tid in os.listdir(f"/proc/{me}/task"):
        try:
            with open(f"/proc/{me}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{me}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except FileNotFoundError:  # (ended meanwhile)
            continue
        out[tid] = (name, ns / 1e9)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    LR.add_arguments(p, "batches measured (default 10)")
    p.add_argument("--threads", type=int, default=2, help="zarrfast's threads (default 2)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-loader-remote-cpu-") as tmp, \
            LR.rows_behind_proxy(args, tmp) as (spec, path, nginx, proxy), \
            config.set(threads=args.threads):
        batch = loader_selections(spec, args.seed)
        want = loader_expected(spec, batch)[0]
        a = zarrfast.open_array(f"{proxy.url}/{os.path.basename(path)}", mode="r")
        if not np.array_equal(a.oindex[batch, :], want):  # (untimed: the first batch)
            raise SystemExit("WRONG DATA in the first batch")
        proxy.take()
        before = _threads()
        cpu0, proxy0, nginx0 = time.process_time(), LR.process_cpu(proxy.proc.pid), \
            _tree_cpu(nginx.proc.pid)
        times = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            got = a.oindex[batch, :]
            times.append(time.perf_counter() - t0)
            if not np.array_equal(got, want):
                raise SystemExit("WRONG DATA")
        cpu1, proxy1, nginx1 = time.process_time(), LR.process_cpu(proxy.proc.pid), \
            _tree_cpu(nginx.proc.pid)
        after = _threads()
        requests = proxy.take()
    n = args.n
    groups: collections.Counter[str] = collections.Counter()
    main_tid = str(os.getpid())
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, (name, 0.0))[1]
        if tid == main_tid:
            key = "calling thread"
        elif name == "tokio-rt-worker":
            key = "obstore runtime"
        else:  # the decoding pool's few busy threads, or the many request threads
            key = "busy threads" if used > 0.02 * n else "other threads"
        groups[key] += used
    ms = {k: round(v / n * 1e3, 1) for k, v in groups.most_common()}
    client, prox, ngx = (cpu1 - cpu0) / n * 1e3, (proxy1 - proxy0) / n * 1e3, \
        (nginx1 - nginx0) / n * 1e3
    load = os.getloadavg()
    print(f"# {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"wall per batch: best {min(times) * 1e3:.1f} ms, median "
          f"{float(np.median(times)) * 1e3:.1f} ms")
    print(f"CPU per batch: client {client:.1f} ms {ms}, proxy {prox:.1f} ms, nginx "
          f"{ngx:.1f} ms, all {client + prox + ngx:.1f} ms")
    print(f"per batch: {len(requests) / n:.0f} requests, "
          f"{sum(r['bytes'] for r in requests) / n / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
