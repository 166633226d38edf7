"""The client CPU of fetching the remote loader's rows chunks, by the way the values are fetched.

The chunks the ``rows`` batch touches (435 values of about 200 KiB, 86 MiB, for the
default seed) are fetched whole, again and again, through the delaying proxy of
``remote_servers.py`` in front of nginx, by each of these paths (nothing decoded):

* ``zarrfast``: ``ObjectStore.get_many`` (obstore's blocking ``get`` and ``bytes()``
  on up to ``reads_in_flight`` request threads, with zarrfast's retries and checks);
* ``threads``: obstore's blocking ``get(...).bytes()``, one call per value on a pool
  of 256 threads (no zarrfast);
* ``get_range_async``: ``obstore.get_range_async(store, key, start=0, end=2**40)``
  for every value, gathered on one event loop in this thread (one future a value;
  it gives no ``Content-Range`` to check a body against: an answer with more bytes
  than its range says is returned as the value, see
  ``tests/storage/test_obstore_whole_batches.py``);
* ``get_async``: ``obstore.get_async`` then ``bytes_async()`` (two futures a value),
  gathered on one event loop.

Printed per batch: the best and median wall time, the CPU time of this process and
of the proxy, and this process's context switches (voluntary, involuntary).  On a
loaded machine compare CPU times (and run the paths more than once: ``--rounds``).

    python benchmarks/bench_obstore_fetch_paths.py --path /tmp/loader --n 15 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loader_remote_setup as LR  # noqa: E402
import numpy as np  # noqa: E402

from zarrfast.bench.harness import loader_selections  # noqa: E402

PATHS = ("zarrfast", "threads", "get_range_async", "get_async")
#: past the end of any value: a ranged read of the whole value
BIG = 1 << 40


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    LR.add_arguments(p, "batches per path and round (default 10)")
    p.add_argument("--rounds", type=int, default=2, help="rounds over the paths (default 2)")
    p.add_argument("--paths", default=",".join(PATHS),
                   help=f"comma-separated, of {', '.join(PATHS)} (default: all)")
    args = p.parse_args(argv)
    paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown:
        p.error(f"unknown paths {unknown}; known: {', '.join(PATHS)}")
    import obstore
    from obstore.store import HTTPStore

    from zarrfast.storage import ObjectStore

    with tempfile.TemporaryDirectory(prefix="bench-obstore-fetch-") as tmp, \
            LR.rows_behind_proxy(args, tmp) as (spec, path, _, proxy), \
            ThreadPoolExecutor(256) as pool:
        idx = loader_selections(spec, args.seed)
        keys = [f"c/{c}/0" for c in np.unique(idx // spec.chunks[0]).tolist()]
        url = f"{proxy.url}/{os.path.basename(path)}"
        zstore = ObjectStore.from_url(url)
        raw = HTTPStore.from_url(url, client_options={"allow_http": True})
        loop = asyncio.new_event_loop()

        async def ranged() -> list:
            return await asyncio.gather(*(obstore.get_range_async(raw, k, start=0, end=BIG)
                                          for k in keys))

        async def two_steps() -> list:
            async def one(k: str):
                return await (await obstore.get_async(raw, k)).bytes_async()
            return await asyncio.gather(*(one(k) for k in keys))

        calls = {
            "zarrfast": lambda: zstore.get_many(keys),
            "threads": lambda: list(pool.map(lambda k: obstore.get(raw, k).bytes(), keys)),
            "get_range_async": lambda: loop.run_until_complete(ranged()),
            "get_async": lambda: loop.run_until_complete(two_steps()),
        }
        want = [bytes(v) for v in zstore.get_many(keys)]
        print(f"# {len(keys)} values, {sum(map(len, want)) / 2**20:.1f} MiB a batch; "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
        for _ in range(args.rounds):
            for name in paths:
                call = calls[name]
                if [bytes(v) for v in call()] != want:  # (untimed, checked)
                    raise SystemExit(f"{name}: WRONG DATA")
                times = []
                r0, c0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
                x0 = LR.process_cpu(proxy.proc.pid)
                for _ in range(args.n):
                    t0 = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - t0)
                r1, c1 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
                x1 = LR.process_cpu(proxy.proc.pid)
                n = args.n
                print(f"{name:16s} wall best {min(times) * 1e3:6.1f} ms, median "
                      f"{float(np.median(times)) * 1e3:6.1f} ms; CPU per batch: client "
                      f"{(c1 - c0) / n * 1e3:6.1f} ms, proxy {(x1 - x0) / n * 1e3:6.1f} ms; "
                      f"context switches {(r1.ru_nvcsw - r0.ru_nvcsw) / n:.0f} + "
                      f"{(r1.ru_nivcsw - r0.ru_nivcsw) / n:.0f}; load "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
