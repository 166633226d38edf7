"""zarrfast's remote loader batches, A/B between source trees and settings, with the
requests each batch made and the most that were in flight at once.

The three batches of the harness's ``loader`` operation (64 tiles of a sharded array,
1,024 sorted rows through ``oindex``, the same region of 50 arrays each opened from its
own URL, or with ``--group`` from their group: one store), read by zarrfast only, over
nginx on loopback behind the delaying proxy of ``remote_servers.py``.  Each variant (``LABEL=TREE[:VAR=VALUE,...]``: a source tree put
first on ``PYTHONPATH`` and environment variables) runs in a child process of its own;
the variants take turns, ``--rounds`` times, each round ``--repeat`` batches of every
workload after one untimed batch (its connections opened).  Reported per variant and
workload: the wall time of a batch (min and median over every round), its CPU time
(``time.process_time`` of the client process: the servers' is not in it), the requests
it made and the most that were in flight at the proxy at once (median).

    python benchmarks/bench_remote_in_flight.py --path /tmp/loader \\
        main=/work/main new=. new64=.:ZARRFAST_REMOTE_READS_IN_FLIGHT=64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

WORKLOADS = ("tiles", "rows", "regions")


def _child(args: argparse.Namespace) -> int:
    import numpy as np

    import zarrfast
    from zarrfast import config
    from zarrfast.bench import data as D
    from zarrfast.bench.harness import loader_expected, loader_selections

    def stats() -> dict:
        with urllib.request.urlopen(f"{args.proxy}/__proxy__/stats", timeout=30) as r:
            return json.loads(r.read())

    specs = D.loader_specs(args.size)
    out: dict = {"zarrfast": zarrfast.__file__}
    with config.set(threads=args.threads):
        for name in args.workloads.split(","):
            spec = specs[name]
            where = f"{args.proxy}/{os.path.basename(D.loader_path(args.path, spec))}"
            batch = loader_selections(spec, args.seed)
            if name == "tiles":
                a = zarrfast.open_array(where, mode="r")

                def call(a=a, batch=batch):
                    return a.get_many(batch)
            elif name == "rows":
                a = zarrfast.open_array(where, mode="r")

                def call(a=a, batch=batch):
                    return [a.oindex[batch, :]]
            else:
                if args.group:  # (the arrays of one group: one store)
                    group = zarrfast.open_group(where, mode="r")
                    arrays = [group[m] for m in spec.members()]
                else:
                    arrays = [zarrfast.open_array(f"{where}/{m}", mode="r")
                              for m in spec.members()]

                def call(arrays=arrays, batch=batch):
                    return zarrfast.get_many([(x, batch) for x in arrays])
            want = loader_expected(spec, batch)
            got = call()  # (untimed: connections opened; checked)
            if not all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)):
                raise SystemExit(f"{name}: wrong values")
            stats()
            rows = []
            for _ in range(args.repeat):
                c0, t0 = time.process_time(), time.perf_counter()
                call()
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                s = stats()
                rows.append({"wall": dt, "cpu": dc, "requests": len(s["requests"]),
                             "peak": s["peak_in_flight"]})
            out[name] = rows
    print(json.dumps(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variants", nargs="*", help="LABEL=TREE[:VAR=VALUE,...]")
    p.add_argument("--size", default="128MiB")
    p.add_argument("--path", required=True, help="the loader datasets (made if missing)")
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--group", action="store_true",
                   help="regions: the arrays from their group (one store; default: each "
                        "from its own URL, a store each)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--proxy", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    from zarrfast.bench import parse_size

    args.size = parse_size(args.size) if isinstance(args.size, str) else args.size
    if args.child:
        return _child(args)

    import remote_servers as RS

    from zarrfast.bench import data as D

    root = Path(args.path).resolve()
    root.mkdir(parents=True, exist_ok=True)
    D.prepare_loader(str(root), args.size, log=lambda m: print(f"# {m}", flush=True))
    variants = []
    for v in args.variants:
        label, _, rest = v.partition("=")
        tree, _, env = rest.partition(":")
        extra = dict(kv.split("=", 1) for kv in env.split(",") if kv)
        variants.append((label, str(Path(tree).resolve()), extra))
    runs: dict[str, dict[str, list[dict]]] = {v[0]: {w: [] for w in WORKLOADS}
                                              for v in variants}
    with tempfile.TemporaryDirectory(prefix="bench-in-flight-") as tmp, \
            RS.Nginx(root, Path(tmp) / "nginx") as nginx, \
            RS.Proxy(nginx.url, args.latency_ms) as proxy:
        for r in range(args.rounds):
            for label, tree, extra in (variants if r % 2 == 0 else variants[::-1]):
                env = {**os.environ, **extra, "PYTHONPATH": tree}
                cmd = [sys.executable, os.path.abspath(__file__), "--child",
                       "--proxy", proxy.url, "--path", str(root), "--size", str(args.size),
                       "--repeat", str(args.repeat), "--threads", str(args.threads),
                       "--workloads", args.workloads, "--seed", str(args.seed),
                       *(["--group"] if args.group else [])]
                got = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp)
                if got.returncode:
                    print(got.stderr, file=sys.stderr)
                    return 1
                res = json.loads(got.stdout.strip().splitlines()[-1])
                if not res["zarrfast"].startswith(tree):
                    raise SystemExit(f"{label}: zarrfast from {res['zarrfast']}, not {tree}")
                for w in args.workloads.split(","):
                    runs[label][w] += res[w]
                print(f"# round {r + 1} {label}: " + ", ".join(
                    f"{w} {min(x['wall'] for x in res[w]) * 1e3:.0f} ms"
                    for w in args.workloads.split(",")), flush=True)
    print(f"\n{'workload':9} {'variant':12} {'min ms':>8} {'median':>8} {'cpu ms':>8} "
          f"{'requests':>8} {'peak':>5}")
    for w in args.workloads.split(","):
        for label, _, _ in variants:
            rows = runs[label][w]
            wall = [x["wall"] * 1e3 for x in rows]
            print(f"{w:9} {label:12} {min(wall):8.1f} {statistics.median(wall):8.1f} "
                  f"{statistics.median(x['cpu'] * 1e3 for x in rows):8.1f} "
                  f"{statistics.median(x['requests'] for x in rows):8.0f} "
                  f"{statistics.median(x['peak'] for x in rows):5.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
