"""Remote reads: zarrfast vs its peers on one dataset served by nginx and by moto's S3 server.

One run writes one dataset with zarrfast (float32, compressible values) in four layouts

* ``zstd``:    32^3 chunks, zstd;
* ``sharded``: 128^3 shards of 32^3 inner chunks, zstd;
* ``small``:   4096 chunks of 8 KiB (8x16x16), zstd;
* and a random box (the same box for everyone) read from ``zstd`` and from ``sharded``
  (``box-zstd``, ``box-sharded``), and 100 random boxes of at most one chunk per side
  (fixed seed) read one after another from one open array of ``sharded``
  (``boxes-sharded``: one read, the open array's shard indexes reused from box to box),

serves it from **nginx** (its own config on a loopback port, started and stopped by the
script: see ``remote_servers.py``) and from **moto's S3 server** (uploaded once), each
behind a small asyncio **proxy** that waits ``--latency-ms`` before forwarding each
request (a first-byte latency; 0 ms is the same proxy without the wait).  Every request
of every implementation goes through the proxy, which counts requests and body bytes
and logs their paths.  A separate check compares nginx direct with the 0 ms proxy (is
the proxy the bottleneck?).

Implementations, side by side in the same run, libraries taking turns (best of
``--repeat``), each read = open the array + read the selection, store objects kept
across repeats (warm connection pools), every result compared with the data:

* ``zarrfast/fsspec``   zarrfast, ``zarrfast.storage.FsspecStore`` (HTTPFileSystem, s3fs)
* ``zarrfast/obstore``  zarrfast, ``zarrfast.storage.ObjectStore`` (when it exists)
* ``zarr/fsspec``       zarr-python 3, ``zarr.storage.FsspecStore``
* ``zarr/obstore``      zarr-python 3, ``zarr.storage.ObjectStore`` (obstore)
* ``zarrs/obstore``     zarr-python 3 + zarrs codec pipeline, ``zarr.storage.ObjectStore``
* ``tensorstore``       tensorstore, ``http`` / ``s3`` kvstore

All run with their default concurrency.  Peak memory of zarrfast's full reads is measured
in a child process per read: the peak RSS (``VmHWM``, reset just before the read by
writing 5 to ``/proc/self/clear_refs``) minus the RSS just before it (array opened, the
data to compare with already made), compared with the target 1.2 x output + 64 MiB.

    python benchmarks/bench_remote.py                 # 32 MiB per layout, 0 and 20 ms, best of 2
    python benchmarks/bench_remote.py --quick         # 8 MiB, best of 1, 20 ms, 1-2 minutes
    python benchmarks/bench_remote.py --latency-ms 20 --servers nginx --impls \\
        zarrfast/fsspec,tensorstore --repeat 5 --json out.json

Run time on a shared 2-core machine: ``--quick`` 1 to 2 minutes; one server at one
latency with every implementation 3 to 5 minutes (nginx) or about 7 minutes (moto, which
serves ~200 requests/s here, so its ``small`` reads take 20-130 s each); the default run
(both servers, 0 and 20 ms) about 20 minutes.  ``--impls`` without ``zarrs/obstore``
(90-130 s per ``small`` read at 20 ms) and ``--reads`` without ``small`` cut it most.

Everything runs on this machine (2 cores here, shared): the servers' and the proxy's CPU
time competes with the clients', so read the numbers as ratios within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote_servers as RS  # noqa: E402

import zarrfast  # noqa: E402

KEY, SECRET, REGION, BUCKET = "bench-key", "bench-secret", "us-east-1", "bench"
MEMORY_TARGET = (1.2, 64 << 20)  # peak <= 1.2 x output + 64 MiB
RATIO_TARGET = 0.8  # zarrfast time / fastest peer's time at 20 ms


# -- the dataset ------------------------------------------------------------------------

@dataclass(frozen=True)
class Geometry:
    shape: tuple[int, int, int]
    small_chunks: tuple[int, int, int]
    box: tuple[slice, slice, slice]


FULL = Geometry((256, 256, 128), (8, 16, 16), (slice(20, 90), slice(100, 150), slice(40, 70)))
QUICK = Geometry((128, 128, 128), (16, 16, 16), (slice(10, 50), slice(40, 80), slice(20, 50)))

DATASETS = {  # name -> create_array keyword arguments (besides shape and dtype)
    "zstd": {"chunks": (32, 32, 32)},
    "sharded": {"chunks": (32, 32, 32), "shards": (128, 128, 128)},
    "small": {},  # chunks from the geometry
}
READS = {  # read name -> (dataset, full read?)
    "zstd": ("zstd", True), "sharded": ("sharded", True), "small": ("small", True),
    "box-zstd": ("zstd", False), "box-sharded": ("sharded", False),
    "boxes-sharded": ("sharded", False),
}
#: boxes of the ``boxes-sharded`` read
N_BOXES = 100


class Boxes(tuple):
    """Boxes read one after another from one open array: one timed read, whose result
    is every box's values flattened, one box after the other."""


def random_boxes(shape: tuple[int, ...], chunk: int = 32, n: int = N_BOXES,
                 seed: int = 1) -> Boxes:
    """``n`` boxes of 1 to ``chunk`` elements per side at random offsets (fixed seed)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        box = []
        for side in shape:
            m = int(rng.integers(1, min(chunk, side) + 1))
            lo = int(rng.integers(0, side - m + 1))
            box.append(slice(lo, lo + m))
        out.append(tuple(box))
    return Boxes(out)


def selection_of(read: str, geo_box: tuple, boxes: Boxes) -> Any:
    """What the read ``read`` selects."""
    if READS[read][1]:
        return Ellipsis
    return boxes if read == "boxes-sharded" else geo_box


def take(a: Any, sel: Any, get: Callable[[Any, Any], Any] = lambda a, s: a[s]) -> Any:
    """``get(a, sel)``, or for :class:`Boxes` every box's values in turn, flattened."""
    if isinstance(sel, Boxes):
        return np.concatenate([np.asarray(get(a, b)).ravel() for b in sel])
    return get(a, sel)


def expected(data: np.ndarray, sel: Any) -> np.ndarray:
    """What a read of ``sel`` returns."""
    if isinstance(sel, Boxes):
        return np.concatenate([data[b].ravel() for b in sel])
    return data if sel is Ellipsis else data[sel]


def make_data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random-ish float32 values with few mantissa bits: zstd compresses them ~2x."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1024, shape, dtype=np.int16) * np.float32(0.25)).astype(np.float32)


def write_datasets(root: Path, geo: Geometry, data: np.ndarray) -> dict[str, dict]:

    info = {}
    for name, kwargs in DATASETS.items():
        kw = dict(kwargs) or {"chunks": geo.small_chunks}
        a = zarrfast.create_array(str(root / f"{name}.zarr"), shape=data.shape,
                                  dtype=data.dtype, compressors={"name": "zstd"}, **kw)
        a[:] = data
        files = [p for p in (root / f"{name}.zarr").rglob("*") if p.is_file()]
        info[name] = {"files": len(files), "stored_bytes": sum(p.stat().st_size for p in files),
                      **{k: list(v) for k, v in kw.items()}}
    return info


def upload(root: Path, endpoint: str) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                      aws_secret_access_key=SECRET, region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    files = [p for p in root.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: s3.upload_file(str(p), BUCKET, p.relative_to(root).as_posix()),
                      files))


# -- where an implementation reads from -------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One server as the clients see it: ``endpoint`` is the proxy (or the server)."""

    kind: str  # "http" or "s3"
    endpoint: str

    def url(self, dataset: str) -> str:
        if self.kind == "http":
            return f"{self.endpoint}/{dataset}.zarr"
        return f"s3://{BUCKET}/{dataset}.zarr"

    def fsspec_options(self) -> dict:
        if self.kind == "http":
            return {}
        return {"endpoint_url": self.endpoint, "key": KEY, "secret": SECRET,
                "client_kwargs": {"region_name": REGION}}

    def obstore_options(self) -> dict:
        opts: dict[str, Any] = {"client_options": {"allow_http": True}}
        if self.kind == "s3":
            opts.update(endpoint=self.endpoint, access_key_id=KEY, secret_access_key=SECRET,
                        region=REGION)
        return opts


# -- the implementations ----------------------------------------------------------------

class Impl:
    name = "?"
    needs = "zarrfast"

    def __init__(self) -> None:
        self._stores: dict[tuple, Any] = {}

    def probe(self) -> str | None:
        """``None`` when usable, else why not."""
        try:
            __import__(self.needs)
        except Exception as e:
            return f"{self.needs} not installed ({type(e).__name__}: {e})"
        return None

    def store(self, target: Target, dataset: str) -> Any:
        key = (target, dataset)
        if key not in self._stores:
            self._stores[key] = self.make_store(target, dataset)
        return self._stores[key]

    def make_store(self, target: Target, dataset: str) -> Any:
        raise NotImplementedError

    def read(self, target: Target, dataset: str, sel: Any) -> np.ndarray:
        raise NotImplementedError


class ZarrfastFsspec(Impl):
    name = "zarrfast/fsspec"

    def make_store(self, target, dataset):
        from zarrfast.storage import FsspecStore

        return FsspecStore.from_url(target.url(dataset), storage_options=target.fsspec_options(),
                                    read_only=True)

    def read(self, target, dataset, sel):
        return take(zarrfast.open_array(self.store(target, dataset), mode="r"), sel)


class ZarrfastObstore(ZarrfastFsspec):
    name = "zarrfast/obstore"

    def probe(self):
        import zarrfast.storage

        if not hasattr(zarrfast.storage, "ObjectStore"):
            return "not available: zarrfast.storage.ObjectStore does not exist on this branch"
        return None

    def make_store(self, target, dataset):
        from zarrfast.storage import ObjectStore

        return ObjectStore.from_url(target.url(dataset), storage_options=target.obstore_options(),
                                    read_only=True)


class ZarrFsspec(Impl):
    name = "zarr/fsspec"
    needs = "zarr"

    def make_store(self, target, dataset):
        import zarr

        return zarr.storage.FsspecStore.from_url(
            target.url(dataset), storage_options=target.fsspec_options() or None,
            read_only=True)

    @contextlib.contextmanager
    def session(self):
        yield

    def read(self, target, dataset, sel):
        import zarr

        with self.session():
            return take(zarr.open_array(self.store(target, dataset), mode="r"), sel)


class ZarrObstore(ZarrFsspec):
    name = "zarr/obstore"
    needs = "obstore"

    def probe(self):
        why = super().probe()
        if why is None:
            try:
                import zarr.storage

                zarr.storage.ObjectStore  # noqa: B018
            except (ImportError, AttributeError) as e:
                return f"zarr.storage.ObjectStore missing ({e})"
        return why

    def make_store(self, target, dataset):
        import zarr
        from obstore.store import HTTPStore, S3Store

        opts = target.obstore_options()
        if target.kind == "http":
            inner = HTTPStore.from_url(target.url(dataset), client_options=opts["client_options"])
        else:
            inner = S3Store(BUCKET, prefix=f"{dataset}.zarr", endpoint=opts["endpoint"],
                            access_key_id=KEY, secret_access_key=SECRET, region=REGION,
                            client_options=opts["client_options"])
        return zarr.storage.ObjectStore(inner, read_only=True)


class ZarrsObstore(ZarrObstore):
    name = "zarrs/obstore"
    needs = "zarrs"

    def probe(self):
        why = super().probe()
        if why is None:
            try:
                __import__("obstore")
            except ImportError as e:
                return f"obstore not installed ({e})"
        return why

    @contextlib.contextmanager
    def session(self):
        import zarr

        with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
            yield

    def read(self, target, dataset, sel):
        import zarr

        with self.session():
            a = zarr.open_array(self.store(target, dataset), mode="r")
            kind = type(a._async_array.codec_pipeline).__name__
            if kind != "ZarrsCodecPipeline":
                raise RuntimeError(f"zarr chose the {kind} codec pipeline, not zarrs'")
            return take(a, sel)


class Tensorstore(Impl):
    name = "tensorstore"
    needs = "tensorstore"

    def make_store(self, target, dataset):
        if target.kind == "http":
            kv = {"driver": "http", "base_url": target.url(dataset)}
        else:
            kv = {"driver": "s3", "bucket": BUCKET, "path": f"{dataset}.zarr/",
                  "endpoint": target.endpoint, "aws_region": REGION}
        return {"driver": "zarr3", "kvstore": kv}

    def read(self, target, dataset, sel):
        import tensorstore as ts

        # credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (set by main)
        t = ts.open(self.store(target, dataset), read=True).result(timeout=120)
        return take(t, sel, lambda t, s: (t if s is Ellipsis else t[s]).read().result(
            timeout=300))


IMPLS: dict[str, type[Impl]] = {c.name: c for c in (
    ZarrfastFsspec, ZarrfastObstore, ZarrFsspec, ZarrObstore, ZarrsObstore, Tensorstore)}
ZARRFAST = ("zarrfast/fsspec", "zarrfast/obstore")


# -- measurement ------------------------------------------------------------------------

@dataclass
class Row:
    server: str
    latency_ms: float
    read: str
    impl: str
    best_ms: float | None = None
    times_ms: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)  # per repeat
    bytes: list[int] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)  # of the first timed repeat
    error: str | None = None
    note: str = ""
    ratio: float | None = None  # zarrfast rows: best_ms / fastest peer's best_ms
    log: list[dict] = field(default_factory=list)  # zarrfast rows: the first repeat's requests


def request_kinds(records: list[dict]) -> dict[str, int]:
    """Requests by kind: metadata files, whole-object GETs, ranged GETs (suffix ranges
    apart: shard indexes), HEADs, listings, 404s."""
    out: dict[str, int] = {}
    for r in records:
        path = r["path"].split("?")[0]
        if r["status"] == 404:
            k = "404"
        elif r["method"] == "HEAD":
            k = "head"
        elif "?" in r["path"] and ("list-type" in r["path"] or "prefix=" in r["path"]):
            k = "list"
        elif path.endswith(("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")):
            k = "meta"
        elif r["range"] and r["range"].startswith("bytes=-"):
            k = "suffix"
        elif r["range"]:
            k = "range"
        else:
            k = "get"
        out[k] = out.get(k, 0) + 1
    return out


def run_reads(server: str, latency: float, target: Target, proxy: RS.Proxy | None,
              impls: list[Impl], reads: list[str], data: np.ndarray, box: tuple,
              repeat: int, counter: Callable[[], int] | None = None,
              slow_s: float = 15.0) -> list[Row]:
    """Best of ``repeat`` of every read by every implementation, round robin.  A read
    that took more than ``slow_s`` once is not repeated (its row says so): one such
    peer would otherwise take most of the run's time."""
    rows = {(rd, im.name): Row(server, latency, rd, im.name) for rd in reads for im in impls}
    boxes = random_boxes(data.shape)
    # warm up: clients, pools, imports (not timed, not counted)
    for im in impls:
        for rd in reads:
            with contextlib.suppress(Exception):
                im.read(target, READS[rd][0], selection_of(rd, box, boxes))
            break
    for rep in range(repeat):
        for rd in reads:
            ds = READS[rd][0]
            sel = selection_of(rd, box, boxes)
            want = expected(data, sel)
            for im in impls:
                row = rows[(rd, im.name)]
                if row.error or row.note:
                    continue
                if proxy is not None:
                    proxy.take()
                before = counter() if counter else 0
                t0 = time.perf_counter()
                try:
                    got = im.read(target, ds, sel)
                    dt = time.perf_counter() - t0
                except Exception as e:
                    row.error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                    continue
                got = np.asarray(got)
                if got.shape != want.shape or not np.array_equal(got, want):
                    row.error = f"WRONG DATA (shape {got.shape}, want {want.shape})"
                    continue
                row.times_ms.append(dt * 1000)
                if dt > slow_s and rep + 1 < repeat:
                    row.note = f"best of {rep + 1}: a read took > {slow_s:g} s"
                if proxy is not None:
                    recs = proxy.take()
                    row.requests.append(len(recs))
                    row.bytes.append(sum(r["bytes"] for r in recs))
                    if rep == 0:
                        row.kinds = request_kinds(recs)
                        if im.name in ZARRFAST:
                            row.log = recs
                elif counter is not None:
                    time.sleep(0.05)  # nginx writes its access log line after the response
                    row.requests.append(counter() - before)
    out = list(rows.values())
    for row in out:
        if row.times_ms:
            row.best_ms = min(row.times_ms)
    for rd in reads:
        peers = [r.best_ms for r in out if r.read == rd and r.impl not in ZARRFAST
                 and r.best_ms is not None]
        for r in out:
            if r.read == rd and r.impl in ZARRFAST and r.best_ms is not None and peers:
                r.ratio = r.best_ms / min(peers)
    return out


# -- peak memory, in a child ------------------------------------------------------------

def _proc_status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _child_memory(spec: dict) -> dict:
    """One full read by zarrfast in this (child) process: the peak RSS it adds.

    ``ru_maxrss`` is useless here: Linux carries the parent's high-water mark into a
    forked and exec'ed child.  So: reset this process's high-water mark (``5`` into
    ``/proc/self/clear_refs``), read, and take ``VmHWM`` after minus ``VmRSS`` before."""
    geo = QUICK if spec["quick"] else FULL
    data = make_data(geo.shape)
    im = IMPLS[spec["impl"]]()
    target = Target(spec["kind"], spec["endpoint"])
    store = im.store(target, spec["dataset"])
    arr = zarrfast.open_array(store, mode="r")
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        reset = False  # then VmHWM may include earlier peaks: an upper bound
    rss_before = _proc_status_kib("VmRSS") << 10
    got = arr[...]
    peak = _proc_status_kib("VmHWM") << 10
    ok = bool(np.array_equal(got, data))
    return {"rss_before": rss_before, "peak_rss": peak, "peak_extra": peak - rss_before,
            "output_bytes": got.nbytes, "ok": ok, "hwm_reset": reset,
            "method": "VmHWM after - VmRSS before, high-water mark reset by clear_refs"
            if reset else "VmHWM after - VmRSS before (no reset: an upper bound)"}


def measure_memory(impl: str, target: Target, dataset: str, quick: bool) -> dict:
    spec = {"impl": impl, "kind": target.kind, "endpoint": target.endpoint, "dataset": dataset,
            "quick": quick}
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-memory",
                        json.dumps(spec)], capture_output=True, text=True, timeout=600,
                       cwd=tempfile.gettempdir())
    if p.returncode:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    m = json.loads(p.stdout.strip().splitlines()[-1])
    limit = MEMORY_TARGET[0] * m["output_bytes"] + MEMORY_TARGET[1]
    m["limit"] = limit
    m["within_target"] = m["peak_extra"] <= limit
    return m


# -- reporting --------------------------------------------------------------------------

def _fmt_kinds(kinds: dict[str, int]) -> str:
    order = ["meta", "get", "range", "suffix", "head", "list", "404"]
    return " ".join(f"{k} {kinds[k]}" for k in order if kinds.get(k))


def _span(xs: list[int], scale: float = 1.0, fmt: str = "{:.0f}") -> str:
    if not xs:
        return "-"
    lo, hi = min(xs) / scale, max(xs) / scale
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        f"{fmt.format(lo)}-{fmt.format(hi)}"


def print_table(rows: list[Row], title: str, reasons: dict[str, str], out=sys.stdout) -> None:
    print(f"\n== {title} ==", file=out)
    head = (f"{'read':<12} {'implementation':<17} {'best ms':>9} {'requests':>9} "
            f"{'MiB':>7}  {'zf/peer':>7}  requests by kind")
    print(head, file=out)
    print("-" * (len(head) + 20), file=out)
    last = None
    for r in rows:
        if last is not None and r.read != last:
            print(file=out)
        last = r.read
        if r.error:
            print(f"{r.read:<12} {r.impl:<17} {'-':>9} {'-':>9} {'-':>7}  {'':>7}  "
                  f"FAILED: {r.error[:120]}", file=out)
            continue
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else ""
        print(f"{r.read:<12} {r.impl:<17} {r.best_ms:>9.1f} {_span(r.requests):>9} "
              f"{_span(r.bytes, 2**20, '{:.2f}'):>7}  {ratio:>7}  {_fmt_kinds(r.kinds)}"
              + (f"  ({r.note})" if r.note else ""),
              file=out)
    for name, why in reasons.items():
        print(f"{'(all)':<12} {name:<17} {'-':>9} {'-':>9} {'-':>7}  {'':>7}  {why}", file=out)


def summarize_log(log: list[dict], limit: int = 8) -> list[str]:
    """The first requests of a zarrfast read and the metadata paths it fetched."""
    lines = [f"{r['method']} {r['path']} {r['range'] or ''} -> {r['status']} {r['bytes']} B"
             for r in log[:limit]]
    if len(log) > limit:
        lines.append(f"... {len(log) - limit} more")
    return lines


# -- main -------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="8 MiB per layout (512 small chunks), best of 1, 20 ms only")
    p.add_argument("--repeat", type=int, default=None, help="best of N (default 2, quick 1)")
    p.add_argument("--latency-ms", default=None,
                   help="comma-separated first-byte delays (default 0,20; quick 20)")
    p.add_argument("--servers", default="nginx,moto", help="nginx,moto")
    p.add_argument("--impls", default=",".join(IMPLS), help=f"of {','.join(IMPLS)}")
    p.add_argument("--reads", default=",".join(READS), help=f"of {','.join(READS)}")
    p.add_argument("--slow-s", type=float, default=10.0,
                   help="a read slower than this once is not repeated (default 10 s)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak memory children")
    p.add_argument("--no-proxy-check", action="store_true",
                   help="skip the nginx direct vs 0 ms proxy comparison")
    p.add_argument("--json", help="write the raw results here")
    p.add_argument("--log-requests", action="store_true",
                   help="print the first requests of each zarrfast read (paths at the proxy)")
    p.add_argument("--child-memory", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", KEY)
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", SECRET)
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    if args.child_memory:
        print(json.dumps(_child_memory(json.loads(args.child_memory))))
        return 0

    repeat = args.repeat or (1 if args.quick else 2)
    lat_s = args.latency_ms or ("20" if args.quick else "0,20")
    latencies = [float(x) for x in lat_s.split(",") if x.strip()]
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    names = [s.strip() for s in args.impls.split(",") if s.strip()]
    reads = [s.strip() for s in args.reads.split(",") if s.strip()]
    for bad, known, what in ((servers, ("nginx", "moto"), "server"), (names, IMPLS, "impl"),
                             (reads, READS, "read")):
        unknown = [x for x in bad if x not in known]
        if unknown:
            p.error(f"unknown {what}(s) {unknown}; known: {', '.join(known)}")
    geo = QUICK if args.quick else FULL

    impls, reasons = [], {}
    for n in names:
        im = IMPLS[n]()
        why = im.probe()
        if why:
            reasons[n] = why
        else:
            impls.append(im)

    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                           time.gmtime())},
        "versions": _versions(), "config": {"shape": geo.shape, "dtype": "float32",
                                             "box": [[s.start, s.stop] for s in geo.box],
                                             "repeat": repeat, "latencies_ms": latencies,
                                             "servers": servers, "quick": args.quick},
        "unavailable": reasons, "results": [], "proxy_check": [], "memory": []}
    data = make_data(geo.shape)
    code = 0
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp, contextlib.ExitStack() as st:
        root = Path(tmp) / "data"
        root.mkdir()
        report["datasets"] = write_datasets(root, geo, data)
        mib = data.nbytes / 2**20
        print(f"bench_remote: float32 {geo.shape} ({mib:.0f} MiB per layout), box "
              f"{[(s.start, s.stop) for s in geo.box]}, best of {repeat}; "
              + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v))
        for ds, info in report["datasets"].items():
            print(f"  {ds}: {info['files']} files, {info['stored_bytes'] / 2**20:.1f} MiB stored")
        for server in servers:
            try:
                if server == "nginx":
                    if RS.nginx_path() is None:
                        raise FileNotFoundError(RS.NGINX_HINT)
                    srv = st.enter_context(RS.Nginx(root, Path(tmp) / "nginx"))
                    kind = "http"
                else:
                    srv = st.enter_context(RS.MotoS3())
                    upload(root, srv.url)
                    kind = "s3"
                proxy = st.enter_context(RS.Proxy(srv.url, 0))
            except Exception as e:
                print(f"\n== {server}: skipped: {type(e).__name__}: {e} ==")
                report["unavailable"][server] = f"{type(e).__name__}: {e}"
                continue
            target = Target(kind, proxy.url)
            if server == "nginx" and not args.no_proxy_check:
                check = proxy_check(srv, proxy, impls, data, geo, repeat)
                report["proxy_check"] += check
            for lat in latencies:
                proxy.set_delay(lat)
                rows = run_reads(server, lat, target, proxy, impls, reads, data, geo.box, repeat,
                                slow_s=args.slow_s)
                report["results"] += [asdict(r) for r in rows]
                print_table(rows, f"{server} ({kind}), {lat:g} ms first-byte delay at the proxy, "
                            f"best of {repeat}", reasons)
                if any(r.error and r.impl in ZARRFAST for r in rows):
                    code = 1
                if args.log_requests:
                    for r in rows:
                        if r.impl in ZARRFAST and r.log:
                            print(f"  {r.impl} {r.read}: " + "; ".join(summarize_log(r.log)))
            if not args.no_memory:
                report["memory"] += memory_rows(server, target, proxy, impls, reads, args.quick)
            proxy.set_delay(0)
        _print_summary(report)
    if args.json:
        for r in report["results"]:
            r.pop("log", None) if r["impl"] not in ZARRFAST else None
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        print(f"\nraw results: {args.json}")
    return code


def proxy_check(srv: RS.Nginx, proxy: RS.Proxy, impls: list[Impl], data: np.ndarray,
                geo: Geometry, repeat: int) -> list[dict]:
    """nginx direct vs the 0 ms proxy: the same reads by the first one or two impls."""
    chosen = [im for im in impls if im.name in ("zarrfast/fsspec", "tensorstore")] or impls[:1]
    proxy.set_delay(0)
    out = []
    for via, tgt, px in (("direct", Target("http", srv.url), None),
                         ("proxy 0 ms", Target("http", proxy.url), proxy)):
        rows = run_reads("nginx", 0, tgt, px, chosen, ["zstd", "small"], data, geo.box,
                         repeat, counter=srv.access_lines if px is None else None)
        out += [{"via": via, **asdict(r)} for r in rows]
    print("\n== proxy overhead: nginx direct vs through the 0 ms proxy (best of "
          f"{repeat}) ==")
    print(f"{'read':<8} {'implementation':<17} {'direct ms':>10} {'proxy ms':>10} "
          f"{'proxy/direct':>13} {'requests (nginx log / proxy)':>30}")
    for im in chosen:
        for rd in ("zstd", "small"):
            d = next(r for r in out if r["via"] == "direct" and r["impl"] == im.name
                     and r["read"] == rd)
            q = next(r for r in out if r["via"] != "direct" and r["impl"] == im.name
                     and r["read"] == rd)
            if d["best_ms"] is None or q["best_ms"] is None:
                print(f"{rd:<8} {im.name:<17} failed: {d['error'] or q['error']}")
                continue
            print(f"{rd:<8} {im.name:<17} {d['best_ms']:>10.1f} {q['best_ms']:>10.1f} "
                  f"{q['best_ms'] / d['best_ms']:>13.2f} "
                  f"{_span(d['requests']) + ' / ' + _span(q['requests']):>30}")
    for r in out:
        r.pop("log", None)
    return out


def memory_rows(server: str, target: Target, proxy: RS.Proxy, impls: list[Impl],
                reads: list[str], quick: bool) -> list[dict]:
    out = []
    print(f"\n== peak memory of zarrfast full reads from {server} (child process; "
          f"VmHWM after - VmRSS before the read; target 1.2 x output + 64 MiB) ==")
    for im in impls:
        if im.name not in ZARRFAST:
            continue
        for rd in reads:
            ds, full = READS[rd]
            if not full:
                continue
            m = measure_memory(im.name, target, ds, quick)
            proxy.take()
            out.append({"server": server, "impl": im.name, "read": rd, **m})
            if "error" in m:
                print(f"{rd:<8} {im.name:<17} failed: {m['error']}")
                continue
            print(f"{rd:<8} {im.name:<17} peak +{m['peak_extra'] / 2**20:7.1f} MiB for "
                  f"{m['output_bytes'] / 2**20:.0f} MiB out = "
                  f"{m['peak_extra'] / m['output_bytes']:.2f}x  "
                  f"({'within' if m['within_target'] else 'OVER'} target "
                  f"{m['limit'] / 2**20:.0f} MiB){'' if m['ok'] else '  WRONG DATA'}")
    return out


def _print_summary(report: dict) -> None:
    rows = [r for r in report["results"] if r["impl"] in ZARRFAST and r["latency_ms"] >= 20]
    if not rows:
        return
    print(f"\n== targets at >= 20 ms: zarrfast time <= {RATIO_TARGET} x fastest peer ==")
    for r in rows:
        if r["ratio"] is None:
            continue
        ok = "ok" if r["ratio"] <= RATIO_TARGET else "MISSED"
        print(f"{r['server']:<6} {r['latency_ms']:>4g} ms {r['read']:<12} {r['impl']:<17} "
              f"{r['ratio']:.2f}  {ok}")


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out = {}
    for dist in ("zarrfast", "zarr", "zarrs", "tensorstore", "obstore", "fsspec", "s3fs",
                 "aiohttp", "moto"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    nginx = RS.nginx_path()
    if nginx:
        with contextlib.suppress(Exception):
            out["nginx"] = subprocess.run([nginx, "-v"], capture_output=True, text=True
                                          ).stderr.strip().split("/")[-1]
    return out


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        traceback.print_exc(limit=0)
        sys.exit(130)
