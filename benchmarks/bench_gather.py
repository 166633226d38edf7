"""Integer gathers: zarrfast vs tensorstore, zarr-python (with and without zarrs), zarrista.

Issue 45 part 2 ("fast gathers"): ``a.oindex[idx, :]`` with 1,024 random rows (sorted,
and the same rows unsorted) and ``a.vindex[rows, cols]`` with 10,000 random points, on a
(N, 128) float32 zstd array with (1000, 128) chunks, plain and sharded ((10000, 128)
shards of those chunks), on a local directory store.

Each library reads each selection ``--repeat`` times (best time kept); the libraries take
turns, so a slow spell of the machine hits all of them.  Every result is compared with
NumPy's.  Ratios are the fastest peer's time / zarrfast's, from the same run.  Each
thread count runs in a process of its own (the rayon pools of zarrs and zarrista are
sized once per process, by RAYON_NUM_THREADS).

    python benchmarks/bench_gather.py                 # 1 and 2 threads, N = 200,000
    python benchmarks/bench_gather.py --rows 1000000  # sparser: ~1.6 rows per chunk
    python benchmarks/bench_gather.py --threads 1 --rows 100000

At N = 200,000 the 1,024 rows touch all 200 chunks, ~5 rows each: every library decodes
about the whole array, and decoding is what a gather costs.  zarrfast decodes a zstd
chunk only up to the block holding its last selected row where that saves 10%
(``kernels.zstd_prefix``): ~90% of each chunk here, ~70% at N = 1,000,000.  The arrays
are written once under ``--root`` and kept for the next run.

Peers:
- tensorstore: ``t.oindex[idx].read()``, ``t.vindex[rows, cols].read()``;
- zarr-python: ``z.oindex[idx, :]``, ``z.vindex[rows, cols]``, with its own codec
  pipeline and with ``codec_pipeline.path = zarrs.ZarrsCodecPipeline``;
- zarrista has no integer indexing: each touched chunk is read
  (``retrieve_chunk``) and gathered with NumPy, what a user of it would write.
A peer that is not installed is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

COLS = 128
CHUNK_ROWS = 1000
SHARD_ROWS = 10_000


def make_data(n: int) -> np.ndarray:
    """A smooth ramp plus 8 bits of noise (compresses like measurements)."""
    rng = np.random.default_rng(0)
    base = (np.arange(n, dtype=np.float32)[:, None] * 0.25
            + np.arange(COLS, dtype=np.float32)[None, :])
    return base + rng.integers(0, 256, size=(n, COLS)).astype(np.float32) / 64


def prepare(root: str, n: int) -> dict[str, str]:
    import zarrfast

    data = make_data(n)
    paths = {}
    for kind, shards in (("plain", None), ("sharded", (SHARD_ROWS, COLS))):
        path = os.path.join(root, f"{kind}_{n}.zarr")
        paths[kind] = path
        if os.path.exists(os.path.join(path, "zarr.json")):
            continue
        a = zarrfast.create_array(path, shape=data.shape, chunks=(CHUNK_ROWS, COLS),
                                  shards=shards, dtype="float32",
                                  compressors={"name": "zstd",
                                               "configuration": {"level": 1,
                                                                 "checksum": False}},
                                  overwrite=True)
        a[:] = data
    return paths


def selections(n: int) -> dict[str, tuple]:
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(n, 1024, replace=False))
    return {
        "oindex 1024 sorted rows": ("o", rows),
        "oindex 1024 unsorted rows": ("o", rng.permutation(rows)),
        "vindex 10000 points": ("v", (rng.integers(0, n, 10_000),
                                      rng.integers(0, COLS, 10_000))),
    }


# -- the libraries ----------------------------------------------------------------------


def lib_zarrfast(path: str, threads: int):
    import zarrfast
    from zarrfast import config

    a = zarrfast.open_array(path, mode="r")

    def run(kind, sel):
        with config.set(threads=threads):
            return a.oindex[sel, :] if kind == "o" else a.vindex[sel]
    return run


def lib_tensorstore(path: str, threads: int):
    import tensorstore as ts

    ctx = ts.Context({"data_copy_concurrency": {"limit": threads},
                      "file_io_concurrency": {"limit": threads}})
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                read=True, context=ctx).result()

    def run(kind, sel):
        if kind == "o":
            return t.oindex[sel].read().result()
        return t.vindex[sel].read().result()
    return run


def _zarr(path: str, threads: int, pipeline: str | None):
    import zarr
    from zarr.core import sync

    sync.cleanup_resources()
    cfg = {"threading.max_workers": threads}
    if pipeline:
        cfg["codec_pipeline.path"] = pipeline
    with zarr.config.set(cfg):
        z = zarr.open_array(path, mode="r")

    def run(kind, sel):
        with zarr.config.set({"threading.max_workers": threads}):
            return z.oindex[sel, :] if kind == "o" else z.vindex[sel]
    return run


def lib_zarr(path: str, threads: int):
    return _zarr(path, threads, None)


def lib_zarrs(path: str, threads: int):
    import zarrs  # noqa: F401

    return _zarr(path, threads, "zarrs.ZarrsCodecPipeline")


def lib_zarrista(path: str, threads: int):
    import zarrista

    z = zarrista.Array.open(zarrista.store.FilesystemStore(path), "/")
    opts = {"concurrent_target": threads}
    shape = tuple(z.shape)
    if z.is_sharded:  # (chunks are shards: the inner chunks are read, one shard index
        cache = z.shard_cache()  # read once per shard, cached)

        def chunk(c: int) -> np.ndarray:
            return np.asarray(z.retrieve_subchunk([c, 0], shard_cache=cache, **opts))
    else:
        def chunk(c: int) -> np.ndarray:
            return np.asarray(z.retrieve_chunk([c, 0], **opts))

    def run(kind, sel):
        if kind == "o":
            rows = np.asarray(sel)
            cols = None
        else:
            rows, cols = (np.asarray(s) for s in sel)
        rows = np.where(rows < 0, rows + shape[0], rows)
        cid = rows // CHUNK_ROWS
        order = np.argsort(cid, kind="stable")
        out = np.empty((len(rows), COLS) if cols is None else len(rows), dtype=np.float32)
        bounds = np.flatnonzero(np.diff(cid[order])) + 1
        for grp in np.split(order, bounds):
            c = int(cid[grp[0]])
            block = chunk(c)
            local = rows[grp] - c * CHUNK_ROWS
            out[grp] = block[local] if cols is None else block[local, cols[grp]]
        return out
    return run


LIBS = {"zarrfast": lib_zarrfast, "tensorstore": lib_tensorstore,
        "zarr-python": lib_zarr, "zarr+zarrs": lib_zarrs, "zarrista": lib_zarrista}


def expected(data: np.ndarray, kind: str, sel) -> np.ndarray:
    return data[sel, :] if kind == "o" else data[sel]


def measure(paths: dict[str, str], n: int, threads: int, repeat: int,
            libs: list[str]) -> dict:
    data = make_data(n)
    sels = selections(n)
    results: dict = {}
    for kind_arr, path in paths.items():
        runners = {}
        for name in libs:
            try:
                runners[name] = LIBS[name](path, threads)
            except ImportError as e:
                print(f"# {name}: skipped ({e})", file=sys.stderr)
        for sname, (kind, sel) in sels.items():
            want = expected(data, kind, sel)
            best = {name: float("inf") for name in runners}
            for name, run in runners.items():  # (warm up, and check)
                got = np.asarray(run(kind, sel))
                if not np.array_equal(got, want):
                    raise SystemExit(f"{name} read wrong values: {kind_arr} {sname}")
            for _ in range(repeat):
                for name, run in runners.items():
                    t0 = time.perf_counter()
                    run(kind, sel)
                    best[name] = min(best[name], time.perf_counter() - t0)
            results[f"{kind_arr}: {sname}"] = best
    return results


def report(results: dict, threads: int) -> None:
    print(f"\n== {threads} thread(s): best times (ms); ratio = fastest peer / zarrfast")
    names = list(next(iter(results.values())))
    print(f"{'case':44s}" + "".join(f"{n:>13s}" for n in names) + f"{'ratio':>8s}")
    for case, best in results.items():
        peers = [t for n, t in best.items() if n != "zarrfast"]
        ratio = min(peers) / best["zarrfast"] if peers else float("nan")
        print(f"{case:44s}" + "".join(f"{best[n] * 1e3:13.2f}" for n in names)
              + f"{ratio:8.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=200_000, help="N (rows of the array)")
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--libs", nargs="*", default=list(LIBS))
    p.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "zarrfast_gather"))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    os.makedirs(args.root, exist_ok=True)
    paths = prepare(args.root, args.rows)
    if args.child:
        res = measure(paths, args.rows, args.threads[0], args.repeat, args.libs)
        print(json.dumps(res))
        return
    for threads in args.threads:
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        cmd = [sys.executable, __file__, "--child", "--rows", str(args.rows), "--threads",
               str(threads), "--repeat", str(args.repeat), "--root", args.root,
               "--libs", *args.libs]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        sys.stderr.write(out.stderr)
        if out.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed: {out.stdout}")
        report(json.loads(out.stdout.strip().splitlines()[-1]), threads)


if __name__ == "__main__":
    main()
