"""Where the time of a multi-chunk box read goes at one thread (issue 44, target 1).

Box reads one to two chunks long per side (the harness's ``boxes``: 100 boxes, fixed
seed, up to 27 chunks each) from one open array of the harness's ``zstd`` or
``sharded`` dataset (``zarrfast bench --path DIR`` makes them), at one thread.  Per 100
boxes, best of ``--rounds``, it prints:

* ``zarrfast``: wall time, and the CPU time of each thread of the process (the caller,
  the kernels' I/O helper), with the contention gate on (as users run);
* ``tensorstore`` (when installed): the same, at ``data_copy_concurrency`` and
  ``file_io_concurrency`` 1 (as the harness runs it at one thread);
* ``python``: the caller's CPU time with the decoding kernel call made a no-op (the
  normalizing, the strategy's choice, the plan and the placement: what a box costs
  besides the kernel);
* ``zstd``: the CPU time of ``ZSTD_decompressDCtx`` alone on every chunk the boxes
  touch (the stored bytes in memory, one context, numcodecs' zstd through ctypes):
  the floor no reader decoding them at one thread goes below.

At one thread the reader that decodes in one thread is bounded by ``zstd``; the
difference between ``zarrfast``'s caller and ``zstd`` is everything else on the
critical path (file reads the helper did not take, placement copies, ``python``).

    python benchmarks/bench_box_split.py --path /tmp/bench --rounds 7
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import zarrfast
from zarrfast import config
from zarrfast.bench.data import boxes as random_boxes


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process (Linux), by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for stat in glob.glob("/proc/self/task/*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (a thread that ended)
        out[stat.split("/")[4]] = (int(fields[11]) + int(fields[12])) / tick
    return out


def timed(read: Callable[[Any], Any], sels: list[tuple[slice, ...]], rounds: int
          ) -> tuple[float, dict[str, float]]:
    """Best wall time of ``rounds`` passes over ``sels``, and the threads' CPU per pass
    (averaged over the passes, by name: the caller, the others)."""
    for s in sels:
        read(s)
    me = str(threading.get_native_id())
    before, walls = thread_cpu(), []
    for _ in range(rounds):
        t = time.perf_counter()
        for s in sels:
            read(s)
        walls.append(time.perf_counter() - t)
    after = thread_cpu()
    cpu: dict[str, float] = {}
    for tid, v in after.items():
        name = "caller" if tid == me else "other threads"
        cpu[name] = cpu.get(name, 0.0) + (v - before.get(tid, 0.0)) / rounds
    return min(walls), cpu


def python_only(a: zarrfast.Array, sels: list[tuple[slice, ...]], rounds: int) -> float:
    """The caller's best CPU time per pass with the box kernels made no-ops."""
    chain = a._chain
    chain = getattr(chain, "inner", chain)

    class NoDecoding:
        def decode_box_files(self, *args: Any, **kwargs: Any) -> None:
            return None

        def decode_box_shards(self, *args: Any, **kwargs: Any) -> None:
            return None

    real = chain.batch_decoder
    chain.batch_decoder = lambda *args, **kwargs: NoDecoding()
    try:
        best = float("inf")
        for _ in range(rounds):
            t = time.thread_time()
            for s in sels:
                a[s]
            best = min(best, time.thread_time() - t)
    finally:
        chain.batch_decoder = real
    return best


def stored_chunks(path: str, sharded: bool, sels: list[tuple[slice, ...]]) -> list[bytes]:
    """The stored bytes of every (inner) chunk the boxes touch, in order (the harness's
    layouts: 32^3 chunks, 128^3 shards with their index at the end, 64 entries and a
    crc32c)."""
    out = []
    for s in sels:
        for c in itertools.product(*(range(x.start // 32, (x.stop - 1) // 32 + 1)
                                     for x in s)):
            if not sharded:
                with open(os.path.join(path, "c", *map(str, c)), "rb") as f:
                    out.append(f.read())
                continue
            shard = [i // 4 for i in c]
            inner = int(np.ravel_multi_index([i % 4 for i in c], (4, 4, 4)))
            with open(os.path.join(path, "c", *map(str, shard)), "rb") as f:
                data = f.read()
            index = np.frombuffer(data[-(64 * 16 + 4):-4], dtype="<u8").reshape(64, 2)
            off, n = (int(x) for x in index[inner])
            out.append(data[off:off + n])
    return out


def zstd_floor(chunks: list[bytes], rounds: int) -> float | None:
    """Best CPU time of ``ZSTD_decompressDCtx`` on every chunk (numcodecs' zstd)."""
    import numcodecs

    found = glob.glob(os.path.join(os.path.dirname(numcodecs.__file__), "zstd*.so"))
    if not found:
        return None
    lib = ctypes.CDLL(found[0])
    lib.ZSTD_createDCtx.restype = ctypes.c_void_p
    lib.ZSTD_decompressDCtx.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                        ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_decompressDCtx.restype = ctypes.c_size_t
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    dctx = lib.ZSTD_createDCtx()
    out = ctypes.create_string_buffer(32**3 * 2)
    assert not lib.ZSTD_isError(lib.ZSTD_decompressDCtx(dctx, out, len(out), chunks[0],
                                                        len(chunks[0])))
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for c in chunks:
            lib.ZSTD_decompressDCtx(dctx, out, len(out), c, len(c))
        best = min(best, time.process_time() - t)
    lib.ZSTD_freeDCtx.argtypes = [ctypes.c_void_p]
    lib.ZSTD_freeDCtx(dctx)
    return best


def _rounded(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    return round(x, 1) if isinstance(x, float) else x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="the harness's datasets (--path)")
    parser.add_argument("--layouts", default="zstd,sharded")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    config.set(threads=1)
    for layout in args.layouts.split(","):
        path = os.path.join(args.path, f"{layout}.zarr")
        a = zarrfast.open_array(path, mode="r")
        sels = random_boxes(np.random.default_rng((0, 1)), a.shape, (32,) * a.ndim, 100)
        row: dict[str, Any] = {"layout": layout}
        wall, cpu = timed(lambda s, a=a: a[s], sels, args.rounds)
        row["zarrfast"] = {"wall_ms": wall * 1e3, **{k: v * 1e3 for k, v in cpu.items()}}
        try:
            import tensorstore as ts
        except ImportError:
            pass
        else:
            ctx = ts.Context({"data_copy_concurrency": {"limit": 1},
                              "file_io_concurrency": {"limit": 1}})
            t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                        read=True, context=ctx).result()
            wall, cpu = timed(lambda s, t=t: t[s].read().result(), sels, args.rounds)
            row["tensorstore"] = {"wall_ms": wall * 1e3,
                                  **{k: v * 1e3 for k, v in cpu.items()}}
        row["python_ms"] = python_only(a, sels, args.rounds) * 1e3
        chunks = stored_chunks(path, layout == "sharded", sels)
        floor = zstd_floor(chunks, args.rounds)
        row["chunks"] = len(chunks)
        row["zstd_ms"] = None if floor is None else floor * 1e3
        print(json.dumps(_rounded(row)))


if __name__ == "__main__":
    main()
