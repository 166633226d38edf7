"""Sharded arrays: zarrfast vs zarr-python vs tensorstore, side by side.

Four measurements, all on a local directory store:

1. bytes read from the file system for one 2 KiB inner chunk of a 2 MiB
   uncompressed shard (``/proc/self/io`` ``rchar`` around the read call, each
   library in a fresh subprocess), plus zarrfast's own count through a counting
   store; checked against the 128 KiB target;
2. full reads of sharded arrays written by zarr-python (best of ``--repeat``,
   more while under 0.3 s in all; the libraries take turns, so a slow spell of
   the machine hits all of them);
3. one-inner-chunk read latency (best of ``--n-small``; zarrfast also "cold",
   i.e. a fresh open, hence an empty shard-index cache, before every read);
4. full writes of the same arrays with each library (best of ``--repeat``, as
   in 2.) and partial writes of one inner chunk into an existing shard (best of
   ``--n-partial``).

Every read is compared with the data; every written array is read back by
another library.  Ratios are peer time / zarrfast time, measured in the same
run: they are what counts on a noisy machine.

    python benchmarks/bench_sharding.py            # 250 MiB and 32 MiB arrays
    python benchmarks/bench_sharding.py --quick    # 62 MiB and 8 MiB

Needs the ``bench`` extra (zarr, tensorstore); a missing peer is skipped.
Section 1 needs Linux (``/proc/self/io``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import zarrfast

TARGET = 128 * 1024  # bytes, from the issue

# --------------------------------------------------------------------------------------
# helpers


def _make_data(shape):
    rng = np.random.default_rng(42)
    base = np.add.outer(np.arange(shape[-2], dtype=np.uint16), np.arange(shape[-1], dtype=np.uint16))
    noise = rng.integers(0, 256, size=shape, dtype=np.uint16)
    return (base + noise).astype(np.uint16)


def _have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _peers():
    return ["zarrfast"] + [n for n, m in (("zarr-python", "zarr"), ("tensorstore", "tensorstore"))
                           if _have(m)]


def _best(fn, repeat, setup=None):
    best = float("inf")
    out = None
    for _ in range(repeat):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


MIN_TIME = 0.3  # s: fast full reads and writes are repeated until they took this long
MAX_REPEAT = 20


def _best_rounds(tasks, repeat, setup=None, check=None):
    """Best time of each task; the tasks take turns (round robin), so a slow spell of the
    machine hits every library, not just one.  A task runs ``repeat`` times, and more (up to
    ``MAX_REPEAT``) until it took ``MIN_TIME`` s in all.  ``setup(name)`` runs before and
    ``check(name, result)`` after each call, both untimed."""
    best = {name: float("inf") for name in tasks}
    spent = dict.fromkeys(tasks, 0.0)
    runs = dict.fromkeys(tasks, 0)
    while True:
        todo = [n for n in tasks
                if runs[n] < repeat or (spent[n] < MIN_TIME and runs[n] < MAX_REPEAT)]
        if not todo:
            return best
        for name in todo:
            if setup is not None:
                setup(name)
            t0 = time.perf_counter()
            out = tasks[name]()
            dt = time.perf_counter() - t0
            best[name] = min(best[name], dt)
            spent[name] += dt
            runs[name] += 1
            if check is not None:
                check(name, out)
            del out


def _du(path):
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs)


def _inner_sel(inner, cps, which=None):
    """The inner chunk in the middle of the first shard (or of shard ``which``)."""
    which = which or (0,) * len(inner)
    out = []
    for c, n, s in zip(inner, cps, which, strict=True):
        start = s * c * n + (n // 2) * c
        out.append(slice(start, start + c))
    return tuple(out)


def _zarr_codecs(codec):
    from zarr.codecs import ZstdCodec

    return None if codec == "none" else ZstdCodec(level=1)


def _zarrfast_codecs(codec):
    from zarrfast.codecs import ZstdCodec

    return None if codec == "none" else [ZstdCodec(level=1)]


def _ts_spec(path, shape, shards, inner, codec, *, create):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    if not create:
        return spec
    inner_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if codec == "zstd":
        inner_codecs.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    spec["metadata"] = {
        "shape": list(shape),
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shards)}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": list(inner),
                "codecs": inner_codecs,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "end",
            },
        }],
    }
    spec["create"] = True
    spec["delete_existing"] = True
    return spec


def _write_with_zarr(path, data, inner, shards, codec):
    import zarr

    a = zarr.create_array(path, shape=data.shape, chunks=inner, shards=shards, dtype=data.dtype,
                          compressors=_zarr_codecs(codec), overwrite=True)
    a[...] = data
    return a


def _open_reader(name, path):
    """``name``'s array at ``path``, with ``read(sel)`` returning a numpy array."""
    if name == "zarrfast":
        a = zarrfast.open_array(path, mode="r")
        return lambda sel: a[sel]
    if name == "zarr-python":
        import zarr

        a = zarr.open_array(path, mode="r")
        return lambda sel: a[sel]
    import tensorstore as ts

    t = ts.open(_ts_spec(path, None, None, None, None, create=False), read=True).result()
    return lambda sel: t[sel].read().result()


def _check(got, want, what):
    if not np.array_equal(np.asarray(got), want):
        print(f"  !! {what}: WRONG DATA")
        return False
    return True


# --------------------------------------------------------------------------------------
# 1. bytes transferred by one small read, measured in fresh subprocesses

_CHILD = r"""
import base64, json, os, sys, threading
lib, path = sys.argv[1], sys.argv[2]
warm, sel = (tuple(slice(a, b) for a, b in json.loads(s)) for s in sys.argv[3:5])

def io():
    fd = os.open("/proc/self/io", os.O_RDONLY)
    try:
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    d = dict(line.split(": ") for line in raw.decode().splitlines())
    return int(d["rchar"]), int(d["syscr"])

counts = None
if lib.startswith("zarrfast"):
    import zarrfast
    if lib == "zarrfast+count":
        from zarrfast.storage import LocalStore

        class CountingStore(LocalStore):
            lock = threading.Lock()
            nbytes = 0
            requests = 0

            def get(self, key, byte_range=None):
                value = super().get(key, byte_range)
                with self.lock:
                    self.requests += 1
                    self.nbytes += 0 if value is None else len(value)
                return value

        store = CountingStore(path, read_only=True)
        a = zarrfast.open_array(store, mode="r")
    else:
        a = zarrfast.open_array(path, mode="r")
    read = lambda s: a[s]
elif lib == "zarr-python":
    import zarr
    a = zarr.open_array(path, mode="r")
    read = lambda s: a[s]
else:
    import tensorstore as ts
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                read=True).result()
    read = lambda s: t[s].read().result()

if warm:  # another shard: lazy imports, thread pools, first-call set-up
    read(warm)
if lib == "zarrfast+count":
    store.nbytes = store.requests = 0
opened, recording = [], [False]

def hook(event, args):  # files Python code opens during the read (not C++ ones)
    if recording[0] and event == "open" and isinstance(args[0], str):
        opened.append(args[0])

sys.addaudithook(hook)
r0, c0 = io()
r1, c1 = io()  # what reading /proc/self/io itself costs
recording[0] = True
got = read(sel)
recording[0] = False
r2, c2 = io()
others = list(dict.fromkeys(f for f in opened if not f.startswith(path)))
if lib == "zarrfast+count":
    counts = [store.nbytes, store.requests]
import numpy as np
got = np.ascontiguousarray(got)
print(json.dumps({"rchar": (r2 - r1) - (r1 - r0), "syscr": (c2 - c1) - (c1 - c0),
                  "counts": counts, "others": others, "data": base64.b64encode(got.tobytes()).decode(),
                  "shape": list(got.shape), "dtype": str(got.dtype)}))
"""


def _child_env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(zarrfast.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _measure_bytes(lib, path, warm, sel):
    enc = [json.dumps([[s.start, s.stop] for s in x]) if x else "[]" for x in (warm, sel)]
    proc = subprocess.run([sys.executable, "-c", _CHILD, lib, path, *enc], capture_output=True,
                          text=True, env=_child_env(), timeout=300)
    if proc.returncode:
        raise RuntimeError(f"{lib} child failed:\n{proc.stderr}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["array"] = np.frombuffer(base64.b64decode(res["data"]),
                                 dtype=res["dtype"]).reshape(res["shape"])
    return res


def section_bytes(root):
    print("\n== 1. bytes read from the file system for one small read ==")
    if not os.path.exists("/proc/self/io"):
        print("  skipped: no /proc/self/io on this system")
        return
    shape, shards, inner = (2048, 2048), (1024, 1024), (32, 32)
    data = _make_data(shape)
    path = os.path.join(root, "bytes.zarr")
    _write_with_zarr(path, data, inner, shards, "none")
    shard_file = os.path.join(path, "c", "0", "0")
    cps = tuple(s // c for s, c in zip(shards, inner, strict=True))
    sel = _inner_sel(inner, cps)
    warm = _inner_sel(inner, cps, which=(1, 1))
    want = data[sel]
    print(f"  uint16 {shape}, shards {shards} ({data[:1024, :1024].nbytes // 1024} KiB of data, "
          f"file {os.path.getsize(shard_file)} B with the crc32c index at the end), "
          f"inner chunks {inner} ({want.nbytes} B each), no compression, written by zarr-python")
    print(f"  read {tuple((s.start, s.stop) for s in sel)} of shard c/0/0, each library in a "
          f"fresh process after open; 'after warm-up' = after reading one inner chunk of "
          f"another shard first")
    index_nbytes = 16 * (cps[0] * cps[1]) + 4
    print(f"  least possible: index {index_nbytes} B + inner chunk {want.nbytes} B = "
          f"{index_nbytes + want.nbytes} B; rchar = bytes returned by read syscalls, syscr = "
          f"their number; 'other files' = files Python code opened during the read")
    print(f"  {'':14s}{'first read in the process':>38s}{'after warm-up':>30s}")
    print(f"  {'':14s}{'rchar':>12s}{'syscr':>8s}{'other files':>14s}"
          f"{'rchar':>14s}{'syscr':>8s}{'other files':>14s}")
    results = {}
    notes = []
    for lib in _peers():
        cold = _measure_bytes(lib, path, None, sel)
        warmed = _measure_bytes(lib, path, warm, sel)
        ok = _check(cold["array"], want, f"{lib} first read") & _check(
            warmed["array"], want, f"{lib} read after warm-up")
        results[lib] = (cold["rchar"], warmed["rchar"])
        print(f"  {lib:14s}{cold['rchar']:12d}{cold['syscr']:8d}{len(cold['others']):14d}"
              f"{warmed['rchar']:14d}{warmed['syscr']:8d}{len(warmed['others']):14d}   "
              f"{'ok' if ok else 'WRONG'}")
        if cold["others"]:
            names = ["/".join(f.replace("/__pycache__/", "/").split("/")[-2:])
                     for f in cold["others"]]
            more = f" and {len(names) - 4} more" if len(names) > 4 else ""
            notes.append(f"  {lib} first read also opened {', '.join(names[:4])}{more} "
                         f"(lazy imports)")
    if notes:
        print("\n".join(notes))
    counted = _measure_bytes("zarrfast+count", path, warm, sel)
    _check(counted["array"], want, "zarrfast (counting store)")
    nbytes, requests = counted["counts"]
    print(f"  zarrfast counting LocalStore (after warm-up): {nbytes} B in {requests} requests "
          f"(rchar {counted['rchar']})")
    zf_first, zf = results["zarrfast"]
    for what, n in (("after warm-up", zf), ("first read in a fresh process", zf_first)):
        verdict = "UNDER" if n < TARGET else "NOT under"
        print(f"  zarrfast, {what}: {n} B = {n / 1024:.1f} KiB read from the file system: "
              f"{verdict} the {TARGET // 1024} KiB target")
    for lib, (_, n) in results.items():
        if lib != "zarrfast":
            print(f"  {lib} (after warm-up) read x{n / max(zf, 1):.2f} the bytes of zarrfast")
    shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------------------
# 2.-4. throughput and latency


def _layouts(quick):
    big = (160, 320, 640) if quick else (320, 640, 640)
    small = (2048, 2048) if quick else (4096, 4096)
    n_small = (small[0] // 1024) * (small[1] // 1024)
    return [
        ("zstd level 1, 128^3 shards of 32^3 inner chunks", big, (128, 128, 128),
         (32, 32, 32), "zstd"),
        (f"{n_small} shards of 256 inner 8 KiB chunks, no compression", small, (1024, 1024),
         (64, 64), "none"),
    ]


def section_reads(root, layouts, repeat, n_small):
    print(f"\n== 2./3. reads of arrays written by zarr-python: full (best of {repeat}, more up "
          f"to {MAX_REPEAT} while under {MIN_TIME} s in all; libraries take turns) and one inner "
          f"chunk (best of {n_small} after warm-up) ==")
    for label, shape, shards, inner, codec in layouts:
        data = _make_data(shape)
        path = os.path.join(root, f"read-{codec}.zarr")
        _write_with_zarr(path, data, inner, shards, codec)
        os.sync()  # no write-back of the fresh files during the first timed reads
        cps = tuple(s // c for s, c in zip(shards, inner, strict=True))
        sel = _inner_sel(inner, cps)
        mib = data.nbytes / 2**20
        print(f"\n{label}: {shape} uint16 = {mib:.0f} MiB, stored {_du(path) / 2**20:.1f} MiB, "
              f"one-chunk read {tuple((s.start, s.stop) for s in sel)}")
        readers = {name: _open_reader(name, path) for name in _peers()}
        t_full = _best_rounds({n: (lambda r=r: r(...)) for n, r in readers.items()}, repeat,
                              check=lambda n, got, d=data: _check(got, d, f"{n} full read"))
        results = {}
        for name, read in readers.items():
            _check(read(sel), data[sel], f"{name} one-chunk read")  # warm-up
            t_one, got = _best(lambda read=read, sel=sel: read(sel), n_small)
            _check(got, data[sel], f"{name} one-chunk read")
            results[name] = (t_full[name], t_one)
        ref_full, ref_one = results["zarrfast"]
        for name, (t_f, t_one) in results.items():
            print(f"  {name:12s} full {t_f:7.3f} s ({mib / t_f:6.0f} MiB/s, "
                  f"x{t_f / ref_full:5.2f} of zarrfast)   one chunk {t_one * 1e6:7.0f} us "
                  f"(x{t_one / ref_one:5.2f})")
        # zarrfast cold: a fresh open (empty index cache) before each read; only the read timed
        holder = {}

        def reopen(holder=holder, path=path):
            holder["a"] = zarrfast.open_array(path, mode="r")

        t_cold, got = _best(lambda h=holder, s=sel: h["a"][s], n_small, setup=reopen)
        _check(got, data[sel], "zarrfast cold one-chunk read")
        t_open, got = _best(lambda p=path, s=sel: zarrfast.open_array(p, mode="r")[s], n_small)
        _check(got, data[sel], "zarrfast open + one-chunk read")
        print(f"  zarrfast cold one chunk (fresh open, index cache empty): {t_cold * 1e6:.0f} us "
              f"read only, {t_open * 1e6:.0f} us open + read; warm/cold x{ref_one / t_cold:.2f}")
        for name, (_, t_one) in results.items():
            if name != "zarrfast":
                print(f"    {name} one chunk / zarrfast cold: x{t_one / t_cold:.2f}")
        del readers
        shutil.rmtree(path, ignore_errors=True)


def _writers(path, shape, shards, inner, codec):
    """name -> (create_and_write(data), partial_write(sel, value))."""
    out = {}
    state = {}

    def zf_full(data):
        a = zarrfast.create_array(path, shape=shape, chunks=inner, shards=shards, dtype="uint16",
                                  compressors=_zarrfast_codecs(codec), overwrite=True)
        a[...] = data
        state["zarrfast"] = a

    def zf_part(sel, value):
        state["zarrfast"][sel] = value

    out["zarrfast"] = (zf_full, zf_part)
    if _have("zarr"):
        import zarr

        def zp_full(data):
            a = zarr.create_array(path, shape=shape, chunks=inner, shards=shards, dtype="uint16",
                                  compressors=_zarr_codecs(codec), overwrite=True)
            a[...] = data
            state["zarr-python"] = a

        def zp_part(sel, value):
            state["zarr-python"][sel] = value

        out["zarr-python"] = (zp_full, zp_part)
    if _have("tensorstore"):
        import tensorstore as ts

        def ts_full(data):
            t = ts.open(_ts_spec(path, shape, shards, inner, codec, create=True)).result()
            t.write(data).result()
            state["tensorstore"] = t

        def ts_part(sel, value):
            state["tensorstore"][sel].write(value).result()

        out["tensorstore"] = (ts_full, ts_part)
    return out


def _checker(writer):
    """Which library reads back what ``writer`` wrote (the reference for zarrfast's output)."""
    if writer == "zarrfast":
        return "zarr-python" if _have("zarr") else ("tensorstore" if _have("tensorstore")
                                                    else "zarrfast")
    return "zarrfast"


def section_writes(root, layouts, repeat, n_partial):
    print(f"\n== 4. sharded writes: full (create + write, best of {repeat}, more up to "
          f"{MAX_REPEAT} while under {MIN_TIME} s in all) and one inner chunk into an existing "
          f"shard (best of {n_partial}); libraries take turns ==")
    for label, shape, shards, inner, codec in layouts:
        data = _make_data(shape)
        cps = tuple(s // c for s, c in zip(shards, inner, strict=True))
        sel = _inner_sel(inner, cps)
        mib = data.nbytes / 2**20
        print(f"\n{label}: {shape} uint16 = {mib:.0f} MiB, partial write "
              f"{tuple((s.start, s.stop) for s in sel)}")
        paths = {name: os.path.join(root, f"write-{codec}-{name}.zarr") for name in _peers()}
        writers = {name: _writers(p, shape, shards, inner, codec)[name]
                   for name, p in paths.items()}

        def clean(name, paths=paths):
            shutil.rmtree(paths[name], ignore_errors=True)
            os.sync()  # the last round's write-back does not slow this one down

        t_full = _best_rounds({n: (lambda w=w, d=data: w[0](d)) for n, w in writers.items()},
                              repeat, setup=clean)
        ok, stored, checkers = {}, {}, {}
        for name, path in paths.items():
            stored[name] = _du(path)
            check = _checker(name)
            ok[name] = _check(_open_reader(check, path)(...), data,
                              f"{name}-written, read by {check}")
            checkers[name] = check
        os.sync()
        # partial writes: a new value each time, so none is a no-op
        patches = [(data[sel] + np.uint16(k + 1)) for k in range(n_partial)]
        t_part = {name: float("inf") for name in writers}
        for patch in patches:
            for name, (_, part) in writers.items():
                t0 = time.perf_counter()
                part(sel, patch)
                t_part[name] = min(t_part[name], time.perf_counter() - t0)
        expected = data.copy()
        expected[sel] = patches[-1]
        for name, path in paths.items():
            check = "tensorstore" if name == "zarrfast" and _have("tensorstore") else checkers[name]
            ok[name] &= _check(_open_reader(check, path)(...), expected,
                               f"{name} partial write, read by {check}")
            if check != checkers[name]:
                checkers[name] += f" and {check}"
        ref_full, ref_part = t_full["zarrfast"], t_part["zarrfast"]
        for name in writers:
            print(f"  {name:12s} full {t_full[name]:7.3f} s ({mib / t_full[name]:6.0f} MiB/s, "
                  f"x{t_full[name] / ref_full:5.2f} of zarrfast, stored "
                  f"{stored[name] / 2**20:6.1f} MiB)   one chunk {t_part[name] * 1e3:6.2f} ms "
                  f"(x{t_part[name] / ref_part:5.2f})   read back by {checkers[name]}: "
                  f"{'ok' if ok[name] else 'WRONG'}")
        for path in paths.values():
            shutil.rmtree(path, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n-small", type=int, default=50, help="repeats of one-chunk reads")
    p.add_argument("--n-partial", type=int, default=None,
                   help="repeats of one-chunk writes (default 10, --quick 5)")
    p.add_argument("--dir", default=None)
    p.add_argument("--only", choices=["bytes", "reads", "writes"], action="append",
                   help="run only these sections (repeatable)")
    args = p.parse_args(argv)
    n_partial = args.n_partial or (5 if args.quick else 10)
    only = set(args.only or ["bytes", "reads", "writes"])
    root = args.dir or tempfile.mkdtemp(prefix="zarrfast-bench-sharding-")
    os.makedirs(root, exist_ok=True)
    peers = ", ".join(_peers()[1:]) or "none"
    print(f"python {sys.version.split()[0]}, zarrfast {zarrfast.__version__}, "
          f"threads {zarrfast.config.get('threads')}, cpus {os.cpu_count()}, peers: {peers}")
    t0 = time.perf_counter()
    try:
        if "bytes" in only:
            section_bytes(root)
        layouts = _layouts(args.quick)
        if "reads" in only:
            section_reads(root, layouts, args.repeat, args.n_small)
        if "writes" in only:
            section_writes(root, layouts, args.repeat, n_partial)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
