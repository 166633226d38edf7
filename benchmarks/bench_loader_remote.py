"""The harness's ``loader`` operation over HTTP, with a first-byte latency.

nginx (see ``remote_servers.py``) serves the harness's datasets directory on a loopback
port, behind the delaying proxy (``--latency-ms`` before each request is forwarded);
``zarrfast bench``'s loader op then reads its three datasets from the proxy's URL
(``BenchConfig.remote``) instead of the files: the same batches, libraries, checks and
table as a local run.  The datasets are written (or reused) under ``--path`` first.

    python benchmarks/bench_loader_remote.py --size 64MiB --latency-ms 20 --repeat 3
    python benchmarks/bench_loader_remote.py --path /tmp/loader --libs zarrfast,tensorstore

Each library opens its arrays once, untimed (a loader opens its arrays once and reads
many batches); zarrista's synchronous API reads local files only, so its rows say so.
Everything runs on this machine: the servers' CPU time competes with the clients'.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote_servers as RS  # noqa: E402

from zarrfast.bench import BenchConfig, parse_size, run  # noqa: E402
from zarrfast.bench import data as D  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="64MiB", help="each loader dataset's size (default 64MiB)")
    p.add_argument("--path", default=None,
                   help="the datasets directory, kept and reused (default: a temporary one)")
    p.add_argument("--latency-ms", type=float, default=20.0,
                   help="first-byte delay of every request at the proxy (default 20)")
    p.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    p.add_argument("--threads", default=None, help="comma-separated thread counts "
                   "(default: all cores)")
    p.add_argument("--libs", default=None, help="comma-separated libraries (default: all)")
    p.add_argument("--out", default=None, help="write bench.json and bench.csv here")
    p.add_argument("--group", action="store_true",
                   help="regions: open the 50 arrays from their group, each library its "
                        "way (default: each array from its own URL, a store each)")
    args = p.parse_args(argv)
    cfg = BenchConfig(size=parse_size(args.size), ops=["loader"], repeat=args.repeat,
                      plot=False, out=args.out, loader_group=args.group)
    cfg.threads = ([int(x) for x in args.threads.split(",")] if args.threads
                   else [os.cpu_count() or 1])
    if args.libs:
        cfg.libs = [x.strip() for x in args.libs.split(",") if x.strip()]
    if RS.nginx_path() is None:
        print(RS.NGINX_HINT, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-loader-remote-") as tmp:
        root = Path(args.path or Path(tmp) / "data").resolve()
        root.mkdir(parents=True, exist_ok=True)
        cfg.path = str(root)
        D.prepare_loader(str(root), cfg.size, log=lambda m: print(f"# {m}", flush=True))
        with RS.Nginx(root, Path(tmp) / "nginx") as nginx, \
                RS.Proxy(nginx.url, args.latency_ms) as proxy:
            cfg.remote = proxy.url
            print(f"# nginx {nginx.url} serves {root}; proxy {proxy.url} delays every "
                  f"request {args.latency_ms:g} ms", flush=True)
            code, _ = run(cfg)
            requests = proxy.take()
            print(f"# the proxy forwarded {len(requests)} requests "
                  f"({sum(r['bytes'] for r in requests) / 2**20:.1f} MiB of bodies)")
    return code


if __name__ == "__main__":
    sys.exit(main())
