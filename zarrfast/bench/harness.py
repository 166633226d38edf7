"""The benchmark engine: datasets x thread counts x operations x libraries.

Every measurement is best of ``repeat`` runs, the libraries taking turns (round
robin) so that a slow spell of a noisy machine hits all of them; ratios are peer
time / zarrfast time from the same run.  Only the library calls are timed:
checks (every read is compared with the expected values), dataset set-up and cache
drops are not.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import numpy as np

from zarrfast.bench import data as D
from zarrfast.bench.libs import LIBRARIES, Lib, available_libs

__all__ = ["BenchConfig", "Result", "run", "OPS", "DEFAULT_OPS", "machine_info",
           "array_bytes", "size_text", "busy_processes"]

OPS = ("read", "chunks", "random", "boxes", "strided", "write", "roundtrip", "floor", "memory",
       "loader")
DEFAULT_OPS = OPS
OP_HELP = {
    "read": "read the whole array",
    "chunks": "read every chunk (inner chunk when sharded), one call after another",
    "random": "N random boxes of at most one chunk each (fixed seed)",
    "boxes": "N random boxes one to two chunks long per dimension (each side uniformly in "
             "[chunk, 2 x chunk]; up to 27 chunks, many partly), at random offsets (fixed "
             "seed), read one by one from one open array",
    "strided": "a[::2, ::3, :] (2-d: a[::2, ::3])",
    "write": "write the whole array into a fresh dataset of the same layout",
    "roundtrip": "read the whole array, write it with other chunks (zstd)",
    "floor": "floors: readinto of every stored file (and np.fromfile for raw); on zstd, "
             "blosc and gzip chunks also numcodecs decoding the chunks alone (no store, no "
             "assembly) and the plain loop (read each file, decode, copy into place); with "
             "random and boxes, numcodecs decoding every chunk the boxes touch",
    "memory": "peak RSS of a full read, in a subprocess, vs the output size",
    "loader": "a data loader's batches, in samples/s, on datasets of their own (about "
              "--size each): 64 random (1, 256, 256) tiles of a sharded (N, 256, 256) "
              "array, 1,024 sorted random rows of an (N, 128) array (a.oindex[idx, :]), the "
              "same 256x256 region of 50 arrays; each library's batch call, and zarrfast "
              "also one read per sample (zarrfast-single)",
}
MEMORY_TARGET = (1.2, 64 << 20)  # peak <= 1.2 x output + 64 MiB


@dataclass
class BenchConfig:
    size: int = D.MAIN_NBYTES
    layouts: list[str] = field(default_factory=lambda: list(D.LAYOUTS))
    ops: list[str] = field(default_factory=lambda: list(DEFAULT_OPS))
    threads: list[int] = field(default_factory=lambda: sorted({1, os.cpu_count() or 1}))
    libs: list[str] = field(default_factory=lambda: list(LIBRARIES))
    repeat: int = 3
    n_random: int = 100
    seed: int = 0
    #: competing CPU-bound processes (pure-Python loops) running for the whole run
    busy: int = 0
    path: str | None = None
    out: str | None = None
    drop_caches: bool = False
    cold: bool = False  # evict the dataset's pages (posix_fadvise) before every timed read
    scheduler: str | None = None
    plot: bool = True
    keep: bool = False
    write_libs: list[str] | None = None  # libraries timed in write/roundtrip (None: all)
    #: the loader op reads its datasets from this URL (an HTTP server of the datasets
    #: directory: benchmarks/bench_loader_remote.py) instead of the files
    remote: str | None = None
    #: the loader's regions: the 50 arrays opened from their group, as each library opens
    #: a group's arrays (``Lib.open_loader_group``: zarrfast, zarr-python and zarrista on
    #: one store), instead of each array from its own path (a store per array)
    loader_group: bool = False

    def validate(self) -> None:
        bad = [x for x in self.layouts if x not in D.LAYOUTS]
        if bad:
            raise ValueError(f"unknown layout(s) {', '.join(bad)}; known: {', '.join(D.LAYOUTS)}")
        bad = [x for x in self.ops if x not in OPS]
        if bad:
            raise ValueError(f"unknown op(s) {', '.join(bad)}; known: {', '.join(OPS)}")
        bad = [x for x in self.libs if x not in LIBRARIES]
        if bad:
            raise ValueError(f"unknown librar(ies) {', '.join(bad)}; known: "
                             f"{', '.join(LIBRARIES)}")
        if not self.layouts or not self.ops or not self.threads:
            raise ValueError("nothing to do: empty --layouts, --ops or --threads")
        if any(t < 1 for t in self.threads):
            raise ValueError(f"thread counts must be >= 1, got {self.threads}")
        if self.repeat < 1 or self.n_random < 1:
            raise ValueError("--repeat and --n-random must be >= 1")
        if self.busy < 0:
            raise ValueError(f"--busy must be >= 0, got {self.busy}")
        if "zarrfast" not in self.libs:
            self.libs.insert(0, "zarrfast")  # the reference of every ratio


@dataclass
class Result:
    layout: str
    op: str
    lib: str
    threads: int
    best_s: float | None = None
    times: list[float] = field(default_factory=list)
    nbytes: int = 0  # decoded bytes the operation moves (the MiB/s basis)
    ok: bool | None = None
    error: str | None = None
    note: str = ""
    mib_s: float | None = None
    ratio: float | None = None  # best_s / zarrfast's best_s (same layout, op, threads)
    extra: dict[str, Any] = field(default_factory=dict)


class CheckFailed(AssertionError):
    """A library returned wrong data."""


# --------------------------------------------------------------------------------------
# machine


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None


def machine_info() -> dict[str, Any]:
    from zarrfast.bench.libs import _version

    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except ImportError:
        physical = None
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    from zarrfast import kernels as _kernels

    versions = {name: _version(dist) for name, dist in (
        ("zarrfast", "zarrfast"), ("numpy", "numpy"), ("numcodecs", "numcodecs"),
        ("zarr", "zarr"), ("zarrs", "zarrs"), ("tensorstore", "tensorstore"),
        ("zarrista", "zarrista"), ("dask", "dask"), ("distributed", "distributed"))}
    return {"cpu": _cpu_model(), "cores_logical": os.cpu_count(), "cores_physical": physical,
            "cores_usable": affinity, "memory_bytes": _memory_total(),
            "os": platform.platform(), "python": sys.version.split()[0],
            "hostname": platform.node(), "compiled_kernels": _kernels.USING_EXTENSIONS,
            "codec_bindings": dict(_kernels.CODEC_BINDINGS),
            "versions": versions, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


# --------------------------------------------------------------------------------------
# page cache

DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_caches() -> None:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``; ``PermissionError`` with a clear
    message when not permitted."""
    os.sync()
    try:
        with open(DROP_CACHES, "w") as f:
            f.write("3\n")
    except OSError as e:
        raise PermissionError(
            f"--drop-caches: cannot write {DROP_CACHES} ({e.strerror or e}); cold reads need "
            f"root on Linux (e.g. sudo, or a job with that privilege); run without "
            f"--drop-caches for warm-cache reads") from None


def evict_pages(path: str) -> int:
    """Evict ``path``'s files (a dataset directory, or one file) from the page cache:
    ``os.sync()``, then ``posix_fadvise(POSIX_FADV_DONTNEED)`` on each (no privilege
    needed, unlike ``drop_caches``; only this dataset's pages go).  Returns the number of
    files; ``OSError`` where the call is missing (not Linux/POSIX)."""
    if not hasattr(os, "posix_fadvise"):
        raise OSError(f"cold reads: os.posix_fadvise is not available on {sys.platform}")
    os.sync()  # DONTNEED drops clean pages only
    paths = [path] if os.path.isfile(path) else [
        os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs]
    evict_files(paths)
    return len(paths)


def evict_files(paths: list[str]) -> None:
    """``posix_fadvise(POSIX_FADV_DONTNEED)`` on each of the files ``paths``: their
    clean pages leave the page cache (``evict_pages`` syncs first)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------------------
# measurement


def _cpu_seconds() -> float:
    """CPU time of this process so far, every thread's (user + system)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _TimedCPU:
    """The tasks' clock: ``time.perf_counter``, and the process's CPU time summed over
    the timed parts, taken as alternate calls (start, stop: ``t0 = clock()`` ...
    ``clock() - t0``).  The CPU time is read outside each timed part."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self._start: float | None = None

    def reset(self) -> None:
        self.cpu, self._start = 0.0, None

    def __call__(self) -> float:
        if self._start is None:
            self._start = _cpu_seconds()
            return time.perf_counter()
        t = time.perf_counter()
        self.cpu += _cpu_seconds() - self._start
        self._start = None
        return t


_CLOCK = _TimedCPU()


def _rounds(tasks: dict[str, Callable[[bool], tuple[float, Any]]], repeat: int,
            before: Callable[[], None] | None = None,
            cores: dict[str, list[float]] | None = None) -> dict[str, tuple[list[float], Any]]:
    """Run every task ``repeat`` times, round robin; a task returns (seconds, check) where
    check is None when not checked this time, True, or an error string.  A task that
    raises stops (its error recorded).

    ``cores``: filled with each task's CPU time per second of its timed wall time (tasks
    timed by ``_CLOCK``), for every round but the first when there are several: how
    many cores a library kept busy, whatever threads it was told to use."""
    out: dict[str, tuple[list[float], Any]] = {n: ([], None) for n in tasks}
    failed: dict[str, str] = {}
    for i in range(repeat):
        for name, fn in tasks.items():
            if name in failed:
                continue
            if before is not None:
                before()
            try:
                _CLOCK.reset()
                dt, check = fn(i == 0)
                if cores is not None and (i > 0 or repeat == 1) and dt > 0 and _CLOCK.cpu:
                    cores.setdefault(name, []).append(_CLOCK.cpu / dt)
            except CheckFailed as e:
                failed[name] = f"WRONG DATA: {e}"
                continue
            except Exception as e:
                failed[name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                continue
            times, prev = out[name]
            times.append(dt)
            if check is not None:
                out[name] = (times, check if prev in (None, True) else prev)
    for name, err in failed.items():
        out[name] = (out[name][0], err)
    return out


def _checked(r: Result, check: Any, cores: list[float] | None) -> Result:
    """``r`` with what its rounds said: ``check`` (``True``, ``None`` or an error
    string; ``WRONG DATA...`` marks it failed) and the cores it kept busy."""
    if cores:
        r.extra["cores"] = round(float(np.median(cores)), 2)
    if isinstance(check, str):
        r.error = check
        r.ok = False if check.startswith("WRONG DATA") else None
    else:
        r.ok = check
    return r


def _check_crc(got: np.ndarray, want: int, what: str) -> bool:
    value = D.crc(got)
    if value != want:
        raise CheckFailed(f"{what}: checksum {value:#010x}, expected {want:#010x}")
    return True


class _Context:
    """Per-run state: expected values (computed once per dataset), templates, scratch."""

    def __init__(self, cfg: BenchConfig, root: str) -> None:
        self.cfg = cfg
        self.root = root
        # (this process's own: runs sharing a --path do not remove each other's files)
        self.scratch = os.path.join(root, "_scratch", str(os.getpid()))
        self.templates = os.path.join(root, "_templates", str(os.getpid()))
        self._cache: dict[tuple[str, str], Any] = {}
        self._data: tuple[str, np.ndarray] | None = None
        self._fresh = 0  # paths handed out by fresh()
        self._kept = 0  # bytes of written datasets kept by discard()
        self._kept_budget: int | None = None

    def cached(self, ds: D.Dataset, key: str, make: Callable[[], Any]) -> Any:
        k = (ds.layout.name, key)
        if k not in self._cache:
            self._cache[k] = make()
        return self._cache[k]

    def chunk_sels(self, ds: D.Dataset) -> list[tuple[slice, ...]]:
        import itertools

        def make():
            ranges = [range(0, n, c) for n, c in zip(ds.shape, ds.read_chunks, strict=True)]
            return [tuple(slice(s, min(s + c, n)) for s, c, n
                          in zip(start, ds.read_chunks, ds.shape, strict=True))
                    for start in itertools.product(*ranges)]
        return self.cached(ds, "chunk_sels", make)

    def chunk_crcs(self, ds: D.Dataset) -> list[int]:
        return self.cached(ds, "chunk_crcs",
                           lambda: [D.crc(D.values(s)) for s in self.chunk_sels(ds)])

    def boxes(self, ds: D.Dataset, op: str = "random") -> list[tuple[slice, ...]]:
        """The boxes of ``op`` (fixed seed): ``random``, each side 1 to one chunk long;
        ``boxes``, each side one to two chunks long (at most the array's side)."""
        def make():
            big = op == "boxes"
            rng = np.random.default_rng((self.cfg.seed, 1) if big else self.cfg.seed)
            return D.boxes(rng, ds.shape, ds.read_chunks, self.cfg.n_random, big=big)
        return self.cached(ds, f"boxes-{op}", make)

    def box_values(self, ds: D.Dataset, op: str = "random") -> list[np.ndarray]:
        return self.cached(ds, f"box_values-{op}",
                           lambda: [D.values(b) for b in self.boxes(ds, op)])

    def strided(self, ds: D.Dataset) -> tuple[slice, ...]:
        return (slice(None, None, 2), slice(None, None, 3)) + (slice(None),) * (len(ds.shape) - 2)

    def strided_crc(self, ds: D.Dataset) -> int:
        return self.cached(ds, "strided_crc",
                           lambda: D.expected_crc(ds.shape, self.strided(ds)))

    def data(self, ds: D.Dataset) -> np.ndarray:
        """The whole array in memory (for writes), read once by zarrfast and checked."""
        if self._data is None or self._data[0] != ds.layout.name:
            self._data = None
            import zarrfast

            a = zarrfast.open_array(ds.path, mode="r")[...]
            _check_crc(a, ds.expected["full"], "zarrfast read of the write source")
            self._data = (ds.layout.name, np.ascontiguousarray(a, dtype="=u2"))
        return self._data[1]

    def release(self) -> None:
        self._data = None
        self._cache.clear()

    def template(self, ds: D.Dataset, which: str) -> str:
        path = os.path.join(self.templates, f"{ds.layout.name}-{which}.zarr")
        if not os.path.exists(path):
            layout = ds.layout if which == "write" else D.roundtrip_layout(ds.layout)
            D.create_template(layout, ds.shape, path)
        return path

    def fresh(self, name: str) -> str:
        """A new path in the scratch directory (never used before in this run)."""
        os.makedirs(self.scratch, exist_ok=True)
        self._fresh += 1
        stem, ext = os.path.splitext(name)
        return os.path.join(self.scratch, f"{stem}-{self._fresh}{ext}")

    def discard(self, path: str, nbytes: int) -> None:
        """Done with a written dataset.  It is kept until the run ends (the scratch
        directory goes then) while the kept bytes stay within a quarter of the free
        disk (at most 16 GiB): deleting thousands of files just before a timed write
        slows the next writer's inode allocation (ext4 passes over inodes freed in
        the last minutes), whichever library that is.  A kept dataset's pages leave the
        page cache (:func:`evict_pages`): gigabytes of written files held there leave
        free memory fragmented, and the next large allocation that asks for huge pages
        (NumPy's of 4 MiB and more do) then stalls compacting memory, on whichever
        library allocates next."""
        if self._kept_budget is None:
            try:
                free = shutil.disk_usage(self.scratch).free
            except OSError:
                free = 0
            self._kept_budget = min(free // 4, 16 * 2**30)
        if self._kept + nbytes <= self._kept_budget:
            self._kept += nbytes
            with contextlib.suppress(OSError):  # (no posix_fadvise: kept as it is)
                evict_pages(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _settle() -> None:
    """Before an operation and every timed write: flush what earlier writes left dirty,
    so that no measurement pays for the write-back of files written before it."""
    if hasattr(os, "sync"):
        os.sync()


def _verify_written(path: str, want: int, what: str) -> bool:
    import zarrfast

    return _check_crc(zarrfast.open_array(path, mode="r")[...], want, what)


def _op_tasks(op: str, ds: D.Dataset, libs: list[Lib], handles: dict[str, Any],
              ctx: _Context) -> tuple[dict[str, Callable[[bool], tuple[float, Any]]], int]:
    """The timed callables of ``op`` for every library, and the bytes the op moves."""
    tasks: dict[str, Callable[[bool], tuple[float, Any]]] = {}
    full = ds.expected["full"]
    clock = _CLOCK  # (perf_counter, and the CPU time of the timed parts)
    writers = ctx.cfg.write_libs
    for lib in libs:
        if lib.name not in handles:
            continue
        if op in ("write", "roundtrip") and writers is not None and lib.name not in writers:
            continue
        h = handles[lib.name]

        if op == "read":
            def task(first, lib=lib, h=h):
                t0 = clock()
                got = lib.read(h)
                dt = clock() - t0
                return dt, _check_crc(got, full, f"{lib.name} full read")
            nbytes = ds.nbytes
        elif op == "chunks":
            sels = ctx.chunk_sels(ds)
            ctx.chunk_crcs(ds)  # computed once, before any timing

            def task(first, lib=lib, h=h, sels=sels):
                total = 0.0
                crcs = ctx.chunk_crcs(ds) if first else None
                for i, sel in enumerate(sels):
                    t0 = clock()
                    got = lib.read(h, sel)
                    total += clock() - t0
                    if crcs is not None and D.crc(got) != crcs[i]:
                        raise CheckFailed(f"{lib.name} chunk {sel}: wrong values")
                return total, (True if first else None)
            nbytes = ds.nbytes
        elif op in ("random", "boxes"):
            boxes = ctx.boxes(ds, op)
            ctx.box_values(ds, op)

            def task(first, lib=lib, h=h, boxes=boxes, op=op):
                total = 0.0
                wants = ctx.box_values(ds, op) if first else None
                for i, sel in enumerate(boxes):
                    t0 = clock()
                    got = lib.read(h, sel)
                    total += clock() - t0
                    if wants is not None and not np.array_equal(np.asarray(got), wants[i]):
                        raise CheckFailed(f"{lib.name} box {sel}: wrong values")
                return total, (True if first else None)
            nbytes = sum(math.prod(s.stop - s.start for s in b) * 2 for b in boxes)
        elif op == "strided":
            sel = ctx.strided(ds)
            want_s = ctx.strided_crc(ds)

            def task(first, lib=lib, h=h, sel=sel, want_s=want_s):
                t0 = clock()
                got = lib.read(h, sel)
                dt = clock() - t0
                return dt, _check_crc(got, want_s, f"{lib.name} strided read {sel}")
            shape = [len(range(*s.indices(n))) for s, n in zip(sel, ds.shape, strict=True)]
            nbytes = math.prod(shape) * 2
        elif op == "write":
            template = ctx.template(ds, "write")
            src = ctx.data(ds)

            def task(first, lib=lib, template=template, src=src):
                target = ctx.fresh(f"{lib.name}-write.zarr")
                _settle()
                t0 = clock()
                D.fresh_from_template(template, target)
                ht = lib.open(target, write=True)
                lib.write(ht, Ellipsis, src)
                dt = clock() - t0
                del ht
                ok = _verify_written(target, full, f"{lib.name} write") if first else None
                ctx.discard(target, ds.stored_bytes)
                return dt, ok
            nbytes = ds.nbytes
        elif op == "roundtrip":
            template = ctx.template(ds, "roundtrip")

            def task(first, lib=lib, h=h, template=template):
                target = ctx.fresh(f"{lib.name}-roundtrip.zarr")
                _settle()
                t0 = clock()
                got = lib.read(h)
                D.fresh_from_template(template, target)
                ht = lib.open(target, write=True)
                lib.write(ht, Ellipsis, got)
                dt = clock() - t0
                del ht, got
                ok = _verify_written(target, full, f"{lib.name} round trip") if first else None
                ctx.discard(target, ds.nbytes)  # (its stored size is not known: at most this)
                return dt, ok
            nbytes = ds.nbytes
        else:  # pragma: no cover - guarded by BenchConfig.validate
            raise ValueError(op)
        tasks[lib.name] = task
    return tasks, nbytes


def _floor_tasks(ds: D.Dataset, threads: int) -> dict[str, Callable[[bool], tuple[float, Any]]]:
    files = ds.chunk_files()
    offsets = np.concatenate([[0], np.cumsum([s for _, s in files])]).tolist()
    total = offsets[-1]

    def readinto(first):
        buf = bytearray(total)  # preallocated, not timed
        view = memoryview(buf)

        def one(i):
            path, size = files[i]
            with open(path, "rb", buffering=0) as f:
                part = view[offsets[i]:offsets[i] + size]
                got = 0
                while got < size:
                    n = f.readinto(part[got:])
                    if not n:
                        raise CheckFailed(f"{path}: short read")
                    got += n
        t0 = time.perf_counter()
        if threads == 1:
            for i in range(len(files)):
                one(i)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(one, range(len(files)), chunksize=max(1, len(files) // (8 * threads))))
        return time.perf_counter() - t0, True

    tasks = {"floor: readinto": readinto}
    tasks.update(_decode_floor_tasks(ds, threads))
    if ds.layout.name == "raw":
        path = D.floor_file(os.path.dirname(ds.path), ds)

        def fromfile(first):
            t0 = time.perf_counter()
            got = np.fromfile(path, dtype="<u2")
            dt = time.perf_counter() - t0
            return dt, _check_crc(got, ds.expected["full"], "np.fromfile of raw.bin")
        tasks["floor: np.fromfile"] = fromfile
    return tasks


def _numcodecs_codec(layout: D.Layout) -> Any:
    """The numcodecs codec of a layout's chunks, as the harness writes them (create_kwargs)."""
    import numcodecs

    if layout.codec == "zstd":
        return numcodecs.Zstd(level=1)
    if layout.codec == "gzip":
        return numcodecs.GZip(level=1)
    if layout.codec == "blosc":  # (decoding reads cname and shuffle from each chunk)
        return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.BITSHUFFLE)
    return None


def _decode_floor_tasks(ds: D.Dataset, threads: int
                        ) -> dict[str, Callable[[bool], tuple[float, Any]]]:
    """What a full read cannot beat on compressed, unsharded chunks (C order, native):

    * ``floor: decode only``: numcodecs decoding every chunk's bytes (already in memory)
      into a reused buffer per thread, one after another on each thread: no store, no
      result array, no copy;
    * ``floor: plain loop`` (one thread): read each chunk file, decode it with numcodecs
      into a reused buffer, copy it into place in a fresh result array with NumPy."""
    lay = ds.layout
    codec = _numcodecs_codec(lay)
    if codec is None or lay.shards or lay.transpose or lay.endian != "little":
        return {}
    files = ds.chunk_files()
    chunks = ds.read_chunks
    chunk_nbytes = int(np.prod(chunks)) * 2
    root = ds.path
    sep = "/" if lay.zarr_format == 3 else "."

    def coords(path: str) -> tuple[int, ...]:
        key = os.path.relpath(path, root).replace(os.sep, "/")
        key = key[2:] if lay.zarr_format == 3 else key  # "c/i/j/k" or "i.j.k"
        return tuple(int(x) for x in key.split(sep))

    grid = [coords(p) for p, _ in files]
    blobs: list[bytes] = []

    def decode_only(first):
        if not blobs:  # the chunks' bytes in memory, read once and not timed
            for path, _ in files:
                with open(path, "rb") as f:
                    blobs.append(f.read())
        local = __import__("threading").local()

        def one(i):
            out = getattr(local, "out", None)
            if out is None:
                out = local.out = np.empty(chunk_nbytes, dtype=np.uint8)
            codec.decode(blobs[i], out=out)
        t0 = time.perf_counter()
        if threads == 1:
            for i in range(len(blobs)):
                one(i)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(one, range(len(blobs)),
                              chunksize=max(1, len(blobs) // (8 * threads))))
        return time.perf_counter() - t0, True

    def plain_loop(first):
        t0 = time.perf_counter()
        result = np.empty(ds.shape, dtype="<u2")
        scratch = np.empty(chunks, dtype="<u2")
        flat = scratch.reshape(-1).view(np.uint8)
        for (path, _), c in zip(files, grid, strict=True):
            with open(path, "rb") as f:
                codec.decode(f.read(), out=flat)
            region = tuple(slice(i * n, min((i + 1) * n, s))
                           for i, n, s in zip(c, chunks, ds.shape, strict=True))
            result[region] = scratch[tuple(slice(0, r.stop - r.start) for r in region)]
        dt = time.perf_counter() - t0
        return dt, (_check_crc(result, ds.expected["full"], "the plain loop") if first else None)

    tasks = {"floor: decode only": _blosc_internal_threads_off(lay, decode_only)}
    if threads == 1:
        tasks["floor: plain loop"] = _blosc_internal_threads_off(lay, plain_loop)
    return tasks


def _blosc_internal_threads_off(lay: D.Layout, task: Callable[[bool], tuple[float, Any]]
                                ) -> Callable[[bool], tuple[float, Any]]:
    """numcodecs' Blosc runs c-blosc's own threads when called from the main thread:
    the floors keep it to the threads the row names (its internal ones off)."""
    if lay.codec != "blosc":
        return task

    def run(first: bool) -> tuple[float, Any]:
        import numcodecs.blosc as nb

        old, nb.use_threads = nb.use_threads, False
        try:
            return task(first)
        finally:
            nb.use_threads = old
    return run



def _stored_chunks(ds: D.Dataset, coords: list[tuple[int, ...]]) -> list[bytes | None]:
    """The stored (encoded) bytes of the chunks at ``coords`` of a dataset the harness
    wrote (inner chunks when sharded, cut out of their shard by its index, which sits at
    the end as the harness writes it: (offset, nbytes) uint64 pairs and a crc32c);
    ``None`` for a chunk not stored.  Setup for the floors: not timed."""
    lay = ds.layout
    chunks = ds.read_chunks
    sep = "/" if lay.zarr_format == 3 else "."
    prefix = ("c" + sep) if lay.zarr_format == 3 else ""

    def file_of(c: tuple[int, ...]) -> str:
        return os.path.join(ds.path, *(prefix + sep.join(map(str, c))).split("/"))

    def read(path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    if not lay.shards:
        return [read(file_of(c)) for c in coords]
    per = tuple(min(u, s) // c for u, s, c in zip(lay.shards, ds.shape, chunks, strict=True))
    n = math.prod(per)
    shards: dict[tuple[int, ...], tuple[bytes, np.ndarray] | None] = {}
    out: list[bytes | None] = []
    for c in coords:
        sc = tuple(i // p for i, p in zip(c, per, strict=True))
        if sc not in shards:
            data = read(file_of(sc))
            index = (None if data is None else
                     np.frombuffer(data[len(data) - 16 * n - 4:len(data) - 4], dtype="<u8"
                                   ).reshape(n, 2))
            shards[sc] = None if data is None else (data, index)
        got = shards[sc]
        if got is None:
            out.append(None)
            continue
        data, index = got
        off, nb = (int(x) for x in index[np.ravel_multi_index(
            tuple(i % p for i, p in zip(c, per, strict=True)), per)])
        out.append(None if off == 2**64 - 1 else data[off:off + nb])
    return out


def _random_floor(ds: D.Dataset, threads: int, repeat: int, ctx: _Context,
                  op: str = "random") -> list[Result]:
    """``floor: decode only`` of the boxes of ``op`` (``random`` or ``boxes``): numcodecs decoding, one after
    another into a reused buffer, the stored bytes (already in memory) of every chunk
    each box touches, as many times as boxes touch it: what reading the boxes cannot
    beat without decoding less than whole chunks.  Compressed layouts of C-order,
    little-endian chunks (sharded or not); one thread, as the boxes are read one by one."""
    import itertools

    lay = ds.layout
    codec = _numcodecs_codec(lay)
    if codec is None or lay.transpose or lay.endian != "little":
        return []
    chunks = ds.read_chunks
    boxes = ctx.boxes(ds, op)
    coords = [c for box in boxes for c in itertools.product(
        *(range(s.start // n, (s.stop - 1) // n + 1) for s, n in zip(box, chunks, strict=True)))]
    blobs: list[bytes] = []
    stored: list[tuple[int, ...]] = []  # (the coordinates of blobs)

    def decode_only(first: bool) -> tuple[float, Any]:
        if not blobs:
            for c, b in zip(coords, _stored_chunks(ds, coords), strict=True):
                if b is not None:
                    stored.append(c)
                    blobs.append(b)
        out = np.empty(math.prod(chunks) * 2, dtype=np.uint8)
        t0 = time.perf_counter()
        for b in blobs:
            codec.decode(b, out=out)
        dt = time.perf_counter() - t0
        if not first:
            return dt, None
        for c, b in zip(stored, blobs, strict=True):  # (not timed) every chunk's values
            region = tuple(slice(i * n, min((i + 1) * n, s))
                           for i, n, s in zip(c, chunks, ds.shape, strict=True))
            got = np.frombuffer(codec.decode(b, out=out), dtype="<u2").reshape(chunks)
            got = got[tuple(slice(0, r.stop - r.start) for r in region)]
            if not np.array_equal(got, D.values(region)):
                raise CheckFailed(f"the {op} decode floor: chunk {c} decodes to wrong values")
        return dt, True

    run = _blosc_internal_threads_off(lay, decode_only)
    (times, check), = _rounds({"floor: decode only": run}, repeat).values()
    nbytes = sum(math.prod(s.stop - s.start for s in b) * 2 for b in boxes)
    r = Result(lay.name, op, "floor: decode only", threads, times=times, nbytes=nbytes,
               note=f"numcodecs, one thread: {len(coords)} chunk decodes for {len(boxes)} "
                    f"boxes, the stored bytes already in memory, one reused output buffer")
    if isinstance(check, str):
        r.error, r.ok = check, (False if check.startswith("WRONG DATA") else None)
    else:
        r.ok = check
    return [r]


# --------------------------------------------------------------------------------------
# peak memory, in a subprocess

_MEMORY_CHILD = r"""
import json, os, resource, sys, time
from zarrfast.bench.libs import get_lib
from zarrfast.bench.data import crc

def rss():
    with open("/proc/self/status") as f:
        d = dict(line.split(":", 1) for line in f if ":" in line)
    return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024

name, path, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
lib = get_lib(name)
with lib.session(threads):
    h = lib.open(path)
    lib.read(h, tuple(slice(0, 1) for _ in range(int(sys.argv[4]))))  # lazy set-up
    before, _ = rss()
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the high-water mark (Linux >= 4.0)
    except OSError:
        reset = False
    peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    got = lib.read(h)
    after, hwm = rss()
    if not reset:
        hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"rss_before": before, "peak": hwm, "reset": reset, "peak0": peak0,
                      "out_nbytes": int(got.nbytes), "crc": crc(got)}))
"""


def _measure_memory(lib: Lib, ds: D.Dataset, threads: int) -> Result:
    res = Result(ds.layout.name, "memory", lib.name, threads, nbytes=ds.nbytes)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, lib.name, ds.path,
                               str(threads), str(len(ds.shape))], capture_output=True,
                              text=True, env=env, timeout=3600)
    except subprocess.TimeoutExpired:
        res.error = "timed out"
        return res
    res.best_s = time.perf_counter() - t0
    if proc.returncode:
        res.error = (proc.stderr.strip().splitlines() or ["failed"])[-1][:300]
        return res
    m = json.loads(proc.stdout.strip().splitlines()[-1])
    extra = max(0, m["peak"] - m["rss_before"])
    limit = MEMORY_TARGET[0] * ds.nbytes + MEMORY_TARGET[1]
    res.ok = m["crc"] == ds.expected["full"]
    if not res.ok:
        res.error = "WRONG DATA in the memory subprocess"
    res.extra = {"peak_extra_bytes": extra, "peak_rss_bytes": m["peak"],
                 "rss_before_bytes": m["rss_before"], "output_bytes": m["out_nbytes"],
                 "peak_over_output": extra / ds.nbytes, "target_bytes": int(limit),
                 "within_target": extra <= limit, "hwm_reset": m["reset"]}
    return res


# --------------------------------------------------------------------------------------
# dask distributed


def _dist_slabs(ds: D.Dataset, n_workers: int) -> list[tuple[int, int]]:
    unit = ds.layout.grid(ds.shape)[0]
    n_units = -(-ds.shape[0] // unit)
    per = max(1, -(-n_units // max(1, 4 * n_workers)))  # ~4 tasks per worker
    step = per * unit
    return [(s, min(s + step, ds.shape[0])) for s in range(0, ds.shape[0], step)]


def _dist_read(lib_name: str, path: str, threads: int, z0: int, z1: int) -> tuple[int, int]:
    from zarrfast.bench.data import crc
    from zarrfast.bench.libs import get_lib

    lib = get_lib(lib_name)
    with lib.session(threads):
        got = lib.read(lib.open(path), (slice(z0, z1),))
        return crc(got), int(got.nbytes)


def _dist_make(shape: tuple[int, ...], z0: int, z1: int) -> np.ndarray:
    from zarrfast.bench.data import values

    return values((slice(z0, z1),) + tuple(slice(0, n) for n in shape[1:]))


def _dist_write(lib_name: str, path: str, threads: int, z0: int, z1: int,
                block: np.ndarray) -> int:
    from zarrfast.bench.libs import get_lib

    lib = get_lib(lib_name)
    with lib.session(threads):
        lib.write(lib.open(path, write=True), (slice(z0, z1),), block)
    return int(block.nbytes)


def _distributed(client: Any, ds: D.Dataset, libs: list[Lib], ops: list[str], threads: int,
                 ctx: _Context, repeat: int) -> list[Result]:
    """Read and write ``ds`` spread over the cluster's workers, a slab of chunk rows per
    task; the datasets directory must be visible to every worker (a shared file system)."""
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    slabs = _dist_slabs(ds, n_workers)
    want = [D.expected_crc(ds.shape, (slice(a, b),) + (slice(None),) * (len(ds.shape) - 1))
            for a, b in slabs]
    results = []
    if "read" in ops:
        for lib in libs:
            res = Result(ds.layout.name, "read", lib.name, threads, nbytes=ds.nbytes,
                         note=f"dask: {n_workers} workers, {len(slabs)} tasks")
            try:
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    futs = [client.submit(_dist_read, lib.name, ds.path, threads, a, b,
                                          pure=False) for a, b in slabs]
                    got = client.gather(futs)
                    res.times.append(time.perf_counter() - t0)
                    bad = [s for s, (c, _), w in zip(slabs, got, want, strict=True) if c != w]
                    if bad:
                        raise CheckFailed(f"{lib.name} slabs {bad[:3]}: wrong values")
                res.ok = True
            except CheckFailed as e:
                res.ok, res.error = False, f"WRONG DATA: {e}"
            except Exception as e:
                res.error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            results.append(res)
    if "write" in ops:
        template = ctx.template(ds, "write")
        for lib in libs:
            res = Result(ds.layout.name, "write", lib.name, threads, nbytes=ds.nbytes,
                         note=f"dask: {n_workers} workers, {len(slabs)} tasks; data made on "
                              f"the workers before timing")
            try:
                blocks = [client.submit(_dist_make, ds.shape, a, b, pure=False)
                          for a, b in slabs]
                client.gather(blocks)  # made and held on the workers, not timed
                for i in range(repeat):
                    target = ctx.fresh(f"{lib.name}-dist-write.zarr")
                    shutil.rmtree(target, ignore_errors=True)
                    t0 = time.perf_counter()
                    D.fresh_from_template(template, target)
                    futs = [client.submit(_dist_write, lib.name, target, threads, a, b, blk,
                                          pure=False)
                            for (a, b), blk in zip(slabs, blocks, strict=True)]
                    client.gather(futs)
                    res.times.append(time.perf_counter() - t0)
                    if i == 0:  # read back by zarrfast on the workers, slab by slab
                        back = client.gather([
                            client.submit(_dist_read, "zarrfast", target, threads, a, b,
                                          pure=False) for a, b in slabs])
                        bad = [s for s, (c, _), w in zip(slabs, back, want, strict=True)
                               if c != w]
                        if bad:
                            raise CheckFailed(f"{lib.name} dask write, slabs {bad[:3]}: "
                                              f"wrong values read back")
                    shutil.rmtree(target, ignore_errors=True)
                res.ok = True
                del blocks
            except CheckFailed as e:
                res.ok, res.error = False, f"WRONG DATA: {e}"
            except Exception as e:
                res.error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            results.append(res)
    for r in results:
        r.best_s = min(r.times) if r.times else None
    return results


# --------------------------------------------------------------------------------------
# competing load (--busy)

#: a busy process: a pure-Python loop, holding one core as long as its parent lives (it
#: looks every few milliseconds, so a harness killed without cleaning up leaves none)
_BUSY_CHILD = r"""
import os, sys
parent = int(sys.argv[1])
x = 0
while os.getppid() == parent:
    for i in range(20000):
        x += i
"""


@contextlib.contextmanager
def busy_processes(n: int) -> Any:
    """``n`` competing CPU-bound processes, each spinning a pure-Python loop, for the
    duration of the ``with`` block; yields their ``subprocess.Popen`` objects.  They are
    started at this process's own priority (its nice value, inherited) and killed when
    the block ends, whether it returns, raises or is interrupted (KeyboardInterrupt)."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", _BUSY_CHILD, str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            with contextlib.suppress(OSError):
                p.kill()
        for p in procs:
            with contextlib.suppress(Exception):
                p.wait(timeout=10)


# --------------------------------------------------------------------------------------
# the run


def _finish(results: list[Result]) -> None:
    for r in results:
        if r.op != "memory" and r.times:
            r.best_s = min(r.times)
    ref = {(r.layout, r.op, r.threads): r.best_s for r in results
           if r.lib == "zarrfast" and r.best_s}
    for r in results:
        if r.op == "memory" or not r.times:
            continue
        r.best_s = min(r.times)
        r.mib_s = r.nbytes / 2**20 / r.best_s if r.best_s > 0 else None
        if r.extra.get("samples") and r.best_s > 0:
            r.extra["samples_s"] = r.extra["samples"] / r.best_s
        z = ref.get((r.layout, r.op, r.threads))
        r.ratio = r.best_s / z if z else None


def run(cfg: BenchConfig, out: TextIO | None = None) -> tuple[int, dict[str, Any]]:
    """Run the harness; return (exit code, report).  Exit code 1 when a check failed (a
    library returned wrong data) or zarrfast itself raised."""
    from zarrfast.bench import report as R

    out = out or sys.stdout
    cfg.validate()

    def log(msg: str) -> None:
        print(f"# {msg}", file=out, flush=True)

    if cfg.drop_caches:
        drop_caches()  # fails early, with the reason, when not permitted
    rayon = _size_rayon_pool(cfg.threads)
    libs, lib_info = available_libs(cfg.libs)
    machine = machine_info()
    own = cfg.path is None
    root = tempfile.mkdtemp(prefix="zarrfast-bench-") if own else os.path.abspath(cfg.path)
    os.makedirs(root, exist_ok=True)
    ctx = _Context(cfg, root)
    client = None
    if cfg.scheduler:
        from distributed import Client

        client = Client(cfg.scheduler, timeout="30s")
        skipped = [op for op in cfg.ops if op not in ("read", "write")]
        log(f"dask scheduler {cfg.scheduler}: "
            f"{len(client.scheduler_info().get('workers', {}))} workers; reads and writes "
            f"spread over them" + (f" ({', '.join(skipped)} not distributed: skipped)"
                                   if skipped else ""))
    results: list[Result] = []
    datasets: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    what = (f"layouts {','.join(cfg.layouts)}" if [op for op in cfg.ops if op != "loader"]
            else "the loader's datasets only")
    log(f"size {size_text(cfg)}, {what}, ops {','.join(cfg.ops)}, "
        f"threads {','.join(map(str, cfg.threads))}, libraries "
        f"{', '.join(x.name for x in libs)}, best of {cfg.repeat}, datasets in {root}"
        + (", cold reads (page cache dropped before each)" if cfg.drop_caches else "")
        + (", cold reads (dataset pages evicted with posix_fadvise before each)" if cfg.cold
           else ""))
    full_ops = {"read", "write", "roundtrip", "memory"} & set(cfg.ops)
    if machine["memory_bytes"] and full_ops and 2 * cfg.size > machine["memory_bytes"]:
        log(f"warning: {', '.join(sorted(full_ops))} hold the whole array ({R.human(cfg.size)}) "
            f"in memory, twice for writes and round trips; this machine has "
            f"{R.human(machine['memory_bytes'])}: leave them out of --ops, or use --scheduler")
    rust = [x.name for x in libs if x.name in RAYON_LIBS]
    if rust and len(cfg.threads) > 1 and rayon is None:
        log(f"{' and '.join(rust)} size their rayon thread pool once per process "
            f"(RAYON_NUM_THREADS, unset: the core count), whatever a row's threads: run one "
            f"--threads value per process for rows where they keep to it")
    before = drop_caches if cfg.drop_caches else None
    layout_ops = [op for op in cfg.ops if op != "loader"]
    busy = contextlib.ExitStack()
    try:
        if cfg.busy:
            procs = busy.enter_context(busy_processes(cfg.busy))
            log(f"{cfg.busy} busy process{'es' * (cfg.busy != 1)} (a pure-Python loop each, "
                f"pid {', '.join(str(p.pid) for p in procs)}) running for the whole run")
        for lname in (cfg.layouts if layout_ops else []):
            ds = D.prepare(root, D.LAYOUTS[lname], cfg.size, log=log)
            datasets.append({"layout": lname, "description": ds.layout.description,
                             "shape": list(ds.shape), "chunks": list(ds.read_chunks),
                             "shards": list(ds.layout.grid(ds.shape)) if ds.layout.shards
                             else None, "zarr_format": ds.layout.zarr_format,
                             "nbytes": ds.nbytes, "stored_bytes": ds.stored_bytes,
                             "files": ds.files, "reused": ds.reused, "path": ds.path})
            evict = (lambda p=ds.path: evict_pages(p)) if cfg.cold else None
            for threads in cfg.threads:
                if client is not None:
                    results += _distributed(client, ds, libs, cfg.ops, threads, ctx, cfg.repeat)
                    continue
                results += _run_local(cfg, ds, libs, threads, ctx, before or evict, log)
            ctx.release()
            if not cfg.keep and own:
                shutil.rmtree(ds.path, ignore_errors=True)
        if "loader" in cfg.ops:
            loader = D.prepare_loader(str(root), cfg.size, log=log)
            for name, (spec, path, reused) in loader.items():
                files = D.Dataset(D.LAYOUTS["zstd"], spec.shape, path).chunk_files()
                datasets.append({
                    "layout": f"loader-{name}", "description": LOADER_DESCRIPTION[name],
                    "shape": list(spec.shape), "chunks": list(spec.chunks),
                    "shards": list(spec.shards) if spec.shards else None, "zarr_format": 3,
                    "nbytes": spec.nbytes, "stored_bytes": sum(s for _, s in files),
                    "files": len(files), "reused": reused, "path": path,
                    "arrays": spec.arrays or None})
            for threads in cfg.threads:
                results += _run_loader(cfg, loader, libs, threads, before, log)
    finally:
        busy.close()
        if client is not None:
            client.close()
        for mine in (ctx.scratch, ctx.templates):
            shutil.rmtree(mine, ignore_errors=True)
            with contextlib.suppress(OSError):  # (another run's may still be there)
                os.rmdir(os.path.dirname(mine))
        if own and not cfg.keep:
            shutil.rmtree(root, ignore_errors=True)
    _finish(results)
    report = {"machine": machine, "libraries": lib_info,
              "config": {**asdict(cfg), "size_human": R.human(cfg.size),
                         "array_bytes": array_bytes(cfg), "rayon_num_threads": rayon},
              "datasets": datasets, "results": [asdict(r) for r in results],
              "elapsed_s": time.perf_counter() - t_start,
              "notes": {"ratio": "best time / zarrfast's best time, same layout, op, threads; "
                                 "> 1 means zarrfast is faster",
                        "mib_s": "decoded array bytes the operation returns or writes, per s",
                        "memory_target": "peak extra RSS <= 1.2 x output + 64 MiB",
                        "busy": f"{cfg.busy} competing CPU-bound processes ran for the "
                                f"whole run (--busy)" if cfg.busy else "no competing load",
                        "cores": "extra.cores: the process's CPU time (all threads) during "
                                 "the timed parts per second of their wall time, median of "
                                 "the rounds after the first; marked + in the table when "
                                 "above the row's threads + 0.5",
                        "cache": "cold (dropped before every timed run)" if cfg.drop_caches
                        else "cold (the dataset's pages evicted with posix_fadvise(DONTNEED) "
                             "before every timed read)" if cfg.cold
                        else "warm page cache"}}
    R.print_table(report, out)
    if cfg.out:
        paths = R.write_files(report, cfg.out, plot=cfg.plot)
        for p in paths:
            log(f"wrote {p}")
    bad = [r for r in results if r.ok is False or (r.lib == "zarrfast" and r.error)]
    return (1 if bad else 0), report


def array_bytes(cfg: BenchConfig) -> dict[str, int]:
    """The bytes of the arrays the run's layouts make, by kind ("main": the 3-d array,
    "small": the 2-d small-file layouts' array): what ``--size`` becomes once the shapes
    are rounded (sides multiples of 32, of 64 for the small-file layouts)."""
    kinds = dict.fromkeys(D.LAYOUTS[n].kind for n in cfg.layouts)
    shapes = {"main": D.main_shape, "small": D.small_shape}
    return {k: math.prod(shapes[k](cfg.size)) * 2 for k in kinds}


def size_text(cfg: BenchConfig) -> str:
    """The size of the arrays the run makes, as the header names it: the bytes actually
    written, and ``--size`` too where the shape's rounding made them differ."""
    from zarrfast.bench.report import human

    parts = []
    for kind, nbytes in array_bytes(cfg).items():
        shape = (D.main_shape if kind == "main" else D.small_shape)(cfg.size)
        text = f"{human(nbytes)} (uint16 {shape}"
        if kind == "small":
            text += ", small-file layouts"
        elif nbytes != cfg.size:
            text += f": --size {human(cfg.size)} rounded to sides that are multiples of 32"
        parts.append(text + ")")
    return "; ".join(parts)


#: the peers whose threads are a rayon pool, sized once per process
RAYON_LIBS = ("zarr+zarrs", "zarrista")


def _size_rayon_pool(threads: list[int]) -> str | None:
    """``RAYON_NUM_THREADS`` as the peers built on rayon will read it: set to the run's
    thread count when it has one (and nobody set it), before they are imported, since a
    rayon pool is sized once, when first used, whatever threads a call asks for."""
    have = os.environ.get("RAYON_NUM_THREADS")
    if have is not None or len(threads) != 1:
        return have
    if any(m in sys.modules for m in ("zarrs", "zarrista")):  # (its pool may be made)
        return None
    os.environ["RAYON_NUM_THREADS"] = str(threads[0])
    return os.environ["RAYON_NUM_THREADS"]


def _progress(rows: list[Result]) -> str:
    ref = next((r.times for r in rows if r.lib == "zarrfast"), None)
    parts = []
    for r in rows:
        if not r.times:
            parts.append(f"{r.lib} {'WRONG' if r.ok is False else 'error'}")
        elif r.lib == "zarrfast" or not ref:
            parts.append(f"{r.lib} {min(r.times) * 1e3:.1f} ms")
        else:
            parts.append(f"{r.lib} x{min(r.times) / min(ref):.2f}")
        if r.ok is False and r.times:
            parts[-1] += " WRONG"
    return ", ".join(parts)


def _run_local(cfg: BenchConfig, ds: D.Dataset, libs: list[Lib], threads: int, ctx: _Context,
               before: Callable[[], None] | None,
               log: Callable[[str], None] = lambda m: None) -> list[Result]:
    results: list[Result] = []
    timed_ops = [op for op in cfg.ops if op not in ("floor", "memory", "loader")]
    with contextlib.ExitStack() as stack:
        for lib in libs:
            stack.enter_context(lib.session(threads))
        handles: dict[str, Any] = {}
        open_errors: dict[str, str] = {}
        for lib in libs:
            try:
                handles[lib.name] = lib.open(ds.path)
            except Exception as e:
                open_errors[lib.name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        for op in timed_ops:
            _settle()  # (earlier writes' write-back would otherwise run during this op)
            tasks, nbytes = _op_tasks(op, ds, libs, handles, ctx)
            cold = before if op in ("read", "chunks", "random", "boxes", "strided",
                                    "roundtrip") else None
            first = len(results)
            used: dict[str, list[float]] = {}
            for name, (times, check) in _rounds(tasks, cfg.repeat, cold, used).items():
                results.append(_checked(
                    Result(ds.layout.name, op, name, threads, times=times, nbytes=nbytes),
                    check, used.get(name)))
            for name, err in open_errors.items():
                results.append(Result(ds.layout.name, op, name, threads, nbytes=nbytes,
                                      error=f"open: {err}"))
            if op == "read" and "floor" in cfg.ops:
                results += _floor(ds, threads, cfg.repeat, before)
            if op in ("random", "boxes") and "floor" in cfg.ops:
                results += _random_floor(ds, threads, cfg.repeat, ctx, op)
            log(f"{ds.layout.name} {op} threads={threads}: {_progress(results[first:])}")
        if "floor" in cfg.ops and "read" not in timed_ops:
            results += _floor(ds, threads, cfg.repeat, before)
    if "memory" in cfg.ops and threads == max(cfg.threads):
        mem = [_measure_memory(lib, ds, threads) for lib in libs]
        results += mem
        log(f"{ds.layout.name} memory threads={threads}: " + ", ".join(
            f"{r.lib} {r.extra['peak_over_output']:.2f}x output" if r.extra
            else f"{r.lib} error" for r in mem))
    return results


def _floor(ds: D.Dataset, threads: int, repeat: int,
           before: Callable[[], None] | None) -> list[Result]:
    out = []
    for name, (times, check) in _rounds(_floor_tasks(ds, threads), repeat, before).items():
        r = Result(ds.layout.name, "read", name, threads, times=times, nbytes=ds.nbytes,
                   extra={"stored_bytes": ds.stored_bytes, "files": ds.files})
        if isinstance(check, str):
            r.error, r.ok = check, (False if check.startswith("WRONG DATA") else None)
        else:
            r.ok = check
        if name == "floor: np.fromfile":
            r.note = "one file of the same size, one thread"
        elif name == "floor: decode only":
            r.note = "numcodecs, chunk bytes already in memory, reused output buffers"
        elif name == "floor: plain loop":
            r.note = "read, numcodecs decode into a reused buffer, NumPy copy into place"
        out.append(r)
    return out


# --------------------------------------------------------------------------------------
# the loader operation

LOADER_DESCRIPTION = {
    "tiles": f"{D.LOADER_TILES} random (1, 256, 256) tiles; zstd level 1, inner chunks "
             f"(1, 256, 256) (one sample each) in shards of (8, 256, 256)",
    "rows": f"{D.LOADER_ROWS} sorted random rows (a.oindex[idx, :]); zstd level 1, chunks "
            f"(1024, 128)",
    "regions": f"the same 256x256 region of {D.LOADER_ARRAYS} arrays (a group); zstd level "
               f"1, chunks (256, 256)",
}
#: zarrfast reading one selection at a time: a row of the loader op of its own
SINGLE = "zarrfast-single"
SINGLE_VIA = {"tiles": "a loop of a[tile], one call per tile",
              "rows": "a loop of a[i:i + 1], one call per row",
              "regions": "a loop of a[region], one array after another"}


def loader_selections(spec: D.LoaderSpec, seed: int) -> Any:
    """A workload's batch, from ``seed``: the tiles' selections (random offsets along
    every axis: along the last two only 0 fits), the sorted rows (distinct unless the
    array has fewer), or the region (the same for every array)."""
    rng = np.random.default_rng(seed)
    n = spec.shape[0]
    if spec.name == "tiles":
        first = rng.choice(n, D.LOADER_TILES, replace=n < D.LOADER_TILES)
        tile = (1, 256, 256)
        return [(slice(int(i), int(i) + 1),) + tuple(
            slice(o, o + t) for o, t in ((int(rng.integers(0, d - t + 1)), t)
                                         for d, t in zip(spec.shape[1:], tile[1:],
                                                         strict=True)))
                for i in first]
    if spec.name == "rows":
        return np.sort(rng.choice(n, D.LOADER_ROWS, replace=n < D.LOADER_ROWS)).astype(np.int64)
    side = D.LOADER_REGION
    return tuple(slice(o, o + side) for o in (int(rng.integers(0, d - side + 1))
                                              for d in spec.shape))


def loader_expected(spec: D.LoaderSpec, batch: Any) -> list[np.ndarray]:
    """The values each sample of ``batch`` must read (not timed)."""
    if spec.name == "tiles":
        return [D.loader_values(0, sel) for sel in batch]
    if spec.name == "rows":
        cols = slice(0, spec.shape[1])
        return [np.concatenate([D.values((slice(i, i + 1), cols)) for i in batch.tolist()])]
    return [D.loader_values(k, batch) for k in range(spec.arrays)]


def _check_samples(got: Any, want: list[np.ndarray], what: str) -> bool:
    got = [got] if isinstance(got, np.ndarray) else list(got)
    if len(got) != len(want):
        raise CheckFailed(f"{what}: {len(got)} results for {len(want)} selections")
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        if g.shape != w.shape or not np.array_equal(g, w):
            raise CheckFailed(f"{what}: result {i} wrong (shape {g.shape}, expected {w.shape}"
                              f"{'' if g.shape != w.shape else ', other values'})")
    return True


def _evictor(path: str) -> Callable[[], None]:
    def evict() -> None:
        evict_pages(path)
    return evict


def _loader_call(lib: Lib, name: str, workload: str) -> Callable[[Any, Any], Any]:
    """The call that reads a batch: the library's batch call, or (``zarrfast-single``)
    one read per sample."""
    base = Lib if name == SINGLE else type(lib)
    if workload == "tiles":
        return lambda h, batch: base.read_batch(lib, h, batch)
    if workload == "rows":
        return lambda h, batch: base.gather(lib, h, batch)
    return lambda hs, batch: base.read_arrays(lib, hs, batch)


def _run_loader(cfg: BenchConfig, loader: dict[str, tuple[D.LoaderSpec, str, bool]],
                libs: list[Lib], threads: int, before: Callable[[], None] | None,
                log: Callable[[str], None] = lambda m: None) -> list[Result]:
    """The loader op at one thread count: every workload, every library (and
    ``zarrfast-single``) round robin, best of ``repeat``; the arrays opened once, before
    timing (a loader opens its arrays once and reads many batches); every batch checked."""
    results: list[Result] = []
    clock = _CLOCK
    with contextlib.ExitStack() as stack:
        for lib in libs:
            stack.enter_context(lib.session(threads))
        for workload, (spec, path, _) in loader.items():
            batch = loader_selections(spec, cfg.seed)
            want = loader_expected(spec, batch)
            samples = len(want) if workload != "rows" else len(batch)
            nbytes = sum(w.nbytes for w in want)
            where = path if cfg.remote is None else (
                f"{cfg.remote.rstrip('/')}/{os.path.basename(path)}")
            members = [f"{where}/{m}" if m else where for m in spec.members()]
            tasks: dict[str, Callable[[bool], tuple[float, Any]]] = {}
            notes: dict[str, str] = {}
            errors: dict[str, str] = {}
            for lib in libs:
                names = [lib.name, SINGLE] if lib.name == "zarrfast" else [lib.name]
                group = bool(spec.arrays) and cfg.loader_group
                try:
                    # (with loader_group: as the library opens a group's arrays)
                    hs = (lib.open_loader_group(where, spec.members()) if group
                          else [lib.open_loader(m) for m in members])
                except Exception as e:
                    for n in names:
                        errors[n] = f"open: {type(e).__name__}: {e}".splitlines()[0][:300]
                    continue
                h: Any = hs if spec.arrays else hs[0]
                for n in names:
                    call = _loader_call(lib, n, workload)
                    notes[n] = (SINGLE_VIA[workload] if n == SINGLE
                                else lib.loader_via[workload])
                    if group:
                        notes[n] += f"; the arrays opened {lib.loader_group_via}"

                    def task(first, call=call, h=h, what=f"{n} loader {workload}",
                             batch=batch, want=want):
                        t0 = clock()
                        got = call(h, batch)
                        dt = clock() - t0
                        return dt, _check_samples(got, want, what)
                    tasks[n] = task
            cold = _evictor(path) if cfg.cold else before
            used: dict[str, list[float]] = {}
            first = len(results)
            for name, (times, check) in _rounds(tasks, cfg.repeat, cold, used).items():
                results.append(_checked(
                    Result(workload, "loader", name, threads, times=times, nbytes=nbytes,
                           note=notes[name], extra={"samples": samples}),
                    check, used.get(name)))
            for name, err in errors.items():
                results.append(Result(workload, "loader", name, threads, nbytes=nbytes,
                                      error=err, note=notes.get(name, ""),
                                      extra={"samples": samples}))
            log(f"loader {workload} threads={threads}"
                f"{' remote' if cfg.remote else ''}: {_progress(results[first:])}")
    return results
