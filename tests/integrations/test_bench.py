"""The benchmark harness (``zarrfast bench``) on tiny sizes: outputs, checks, reuse,
thread sweeps, the page-cache floor, peak memory, cold-read permission and dask."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
import time
import types

import numpy as np
import pytest

import zarrfast
from zarrfast.bench import BenchConfig, parse_size, run
from zarrfast.bench import data as D
from zarrfast.bench import harness as H
from zarrfast.bench import libs as L
from zarrfast.bench.report import CSV_FIELDS
from zarrfast.cli import main

RESULT_FIELDS = {"layout", "op", "lib", "threads", "best_s", "times", "nbytes", "ok", "error",
                 "mib_s", "ratio", "note", "extra"}


def _cfg(tmp_path, **kw):
    base = {"size": parse_size("2MiB"), "layouts": ["raw"], "ops": ["read"], "threads": [1],
            "libs": ["zarrfast"], "repeat": 1, "n_random": 5, "path": str(tmp_path / "data")}
    base.update(kw)
    return BenchConfig(**base)


# -- data ---------------------------------------------------------------------------------


def test_parse_size_and_shapes():
    assert parse_size("256MiB") == 256 << 20
    assert parse_size("4GiB") == 4 << 30
    assert parse_size("1.5 GB") == 1_500_000_000
    for bad in ("", "lots", "12 parsecs", "1KiB"):
        with pytest.raises(ValueError):
            parse_size(bad)
    assert D.main_shape(D.MAIN_NBYTES) == (320, 640, 640)
    assert D.small_shape(D.MAIN_NBYTES) == (4096, 4096)
    big = D.main_shape(parse_size("40GiB"))
    assert all(d % 32 == 0 for d in big)
    assert 0.9 < math.prod(big) * 2 / parse_size("40GiB") < 1.1
    assert math.prod(D.small_shape(parse_size("40GiB"))) * 2 <= D.SMALL_MAX


def test_blocks_cover_the_array_once_aligned():
    shape, unit = (300, 260, 100), (128, 128, 128)
    seen = np.zeros(shape, dtype=np.uint8)
    for block in D._blocks(shape, unit, target=4 << 20):
        assert all(s.start % u == 0 for s, u in zip(block, unit, strict=True))
        assert math.prod(s.stop - s.start for s in block) * 2 <= 8 << 20
        seen[block] += 1
    assert (seen == 1).all()


def test_expected_crc_matches_the_values_piece_by_piece():
    shape = (40, 50, 60)
    sel = (slice(None, None, 2), slice(3, 47, 3), slice(None))
    want = D.crc(D.values(D.normalize(shape, sel)))
    assert D.expected_crc(shape, sel) == want
    # small pieces, cut along several axes, chain to the same checksum
    pieces = list(D._pieces(shape, D.normalize(shape, sel), limit=300))
    assert len(pieces) > 10
    value = 0
    for p in pieces:
        value = D.crc(D.values(p), value)
    assert value == want
    # values are a function of the coordinates only
    full = D.values(D.normalize(shape, (slice(None),) * 3))
    np.testing.assert_array_equal(full[sel], D.values(D.normalize(shape, sel)))
    # the checksum sees values, not byte order; a wrong dtype changes it
    assert D.crc(full.astype(">u2")) == D.crc(full)
    assert D.crc(full.astype("u4")) != D.crc(full)


# -- the harness -------------------------------------------------------------------------


def test_tiny_run_writes_json_csv_png(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["bench", "--size", "2MiB", "--layouts", "zstd,small-sharded",
                 "--ops", "read,random", "--threads", "1,2", "--repeat", "2",
                 "--n-random", "10", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("layout "))
    assert header.split()[:5] == ["layout", "op", "thr", "zarrfast", "MiB/s"]
    assert "checks" in header and "small-sharded  random" in printed
    report = json.loads((out / "bench.json").read_text())
    m = report["machine"]
    for key in ("cpu", "cores_logical", "memory_bytes", "os", "python", "versions"):
        assert m[key], key
    for pkg in ("zarrfast", "numpy", "numcodecs", "zarr", "zarrs", "tensorstore"):
        assert pkg in m["versions"]
    assert m["versions"]["zarrfast"] == zarrfast.__version__
    libs = report["libraries"]
    assert set(libs) == set(L.LIBRARIES)
    for info in libs.values():
        assert info["threads_via"] and (info["available"] or info["reason"])
    results = report["results"]
    used = [n for n, i in libs.items() if i["available"]]
    assert {(r["layout"], r["op"], r["threads"], r["lib"]) for r in results} == {
        (lay, op, t, lib) for lay in ("zstd", "small-sharded") for op in ("read", "random")
        for t in (1, 2) for lib in used}
    for r in results:
        assert RESULT_FIELDS <= set(r)
        assert r["ok"] is True and r["error"] is None, r
        assert len(r["times"]) == 2 and r["best_s"] == min(r["times"]) > 0
        assert r["mib_s"] > 0 and r["ratio"] > 0
        if r["lib"] == "zarrfast":
            assert r["ratio"] == 1.0
    assert [d["layout"] for d in report["datasets"]] == ["zstd", "small-sharded"]
    with open(out / "bench.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_FIELDS and len(rows) == len(results)
    assert {row["lib"] for row in rows} == set(used)
    assert all(float(row["best_s"]) > 0 for row in rows)
    png = out / "bench.png"
    assert png.exists() and png.read_bytes()[:4] == b"\x89PNG"


def test_check_catches_a_corrupted_expected_checksum(tmp_path):
    cfg = _cfg(tmp_path, ops=["read", "strided"])
    code, report = run(cfg, out=io.StringIO())
    assert code == 0 and all(r["ok"] for r in report["results"])
    # corrupt the manifest's checksum: the dataset is reused, the full read now fails
    manifest_path = tmp_path / "data" / D.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["datasets"]["raw"]["expected"]["full"] ^= 1
    manifest_path.write_text(json.dumps(manifest))
    text = io.StringIO()
    code, report = run(_cfg(tmp_path, ops=["read", "strided"]), out=text)
    assert code == 1
    assert report["datasets"][0]["reused"] is True
    by_op = {r["op"]: r for r in report["results"]}
    assert by_op["read"]["ok"] is False and by_op["read"]["error"].startswith("WRONG DATA")
    assert by_op["strided"]["ok"] is True  # computed from the coordinates, not the manifest
    assert "WRONG" in text.getvalue()


class _OffByOne(L.Zarrfast):
    """A library that returns wrong values for every read of more than one element."""

    name = "off-by-one"

    def read(self, h, sel=Ellipsis):
        got = np.array(h[sel])
        if got.size > 1:
            got.flat[got.size // 2] += 1
        return got


def test_check_catches_a_library_returning_wrong_values(tmp_path, monkeypatch):
    monkeypatch.setitem(L.LIBRARIES, "off-by-one", _OffByOne)
    cfg = _cfg(tmp_path, libs=["zarrfast", "off-by-one"], ops=["read", "chunks", "random"],
               layouts=["sharded"])
    code, report = run(cfg, out=io.StringIO())
    assert code == 1
    for r in report["results"]:
        if r["lib"] == "zarrfast":
            assert r["ok"] is True
        else:
            assert r["ok"] is False and "WRONG DATA" in r["error"], r


def test_writes_and_round_trips_are_verified(tmp_path, monkeypatch):
    cfg = _cfg(tmp_path, ops=["write", "roundtrip"], layouts=["v2", "transposed"],
               libs=list(L.LIBRARIES))
    code, report = run(cfg, out=io.StringIO())
    assert code == 0
    used = [n for n, i in report["libraries"].items() if i["available"]]
    assert len(report["results"]) == 2 * 2 * len(used)
    assert all(r["ok"] is True for r in report["results"]), report["results"]
    # a library whose writes lose a value is caught by the read-back

    class BadWriter(L.Zarrfast):
        name = "bad-writer"

        def write(self, h, sel, data):
            data = np.array(data)
            data.flat[7] ^= 1
            h[sel] = data

    monkeypatch.setitem(L.LIBRARIES, "bad-writer", BadWriter)
    code, report = run(_cfg(tmp_path, ops=["write"], libs=["zarrfast", "bad-writer"]),
                       out=io.StringIO())
    assert code == 1
    bad = [r for r in report["results"] if r["lib"] == "bad-writer"]
    assert bad and bad[0]["ok"] is False


def test_datasets_are_reused_when_parameters_match(tmp_path):
    code, first = run(_cfg(tmp_path, layouts=["raw", "small-files"]), out=io.StringIO())
    assert code == 0 and not any(d["reused"] for d in first["datasets"])
    code, again = run(_cfg(tmp_path, layouts=["raw", "small-files"]), out=io.StringIO())
    assert code == 0 and all(d["reused"] for d in again["datasets"])
    # another size: regenerated
    code, bigger = run(_cfg(tmp_path, size=parse_size("3MiB")), out=io.StringIO())
    assert code == 0 and not bigger["datasets"][0]["reused"]
    # a missing chunk file: regenerated
    victim = next(p for p, _ in D.Dataset(D.LAYOUTS["small-files"], (0, 0),
                                          str(tmp_path / "data" / "small-files.zarr"))
                  .chunk_files())
    os.remove(victim)
    code, fixed = run(_cfg(tmp_path, layouts=["small-files"]), out=io.StringIO())
    assert code == 0 and not fixed["datasets"][0]["reused"]


def test_floor_and_peak_memory(tmp_path):
    code, report = run(_cfg(tmp_path, ops=["read", "floor", "memory"], threads=[1, 2]),
                       out=io.StringIO())
    assert code == 0
    floors = [r for r in report["results"] if r["lib"].startswith("floor")]
    assert {(r["lib"], r["threads"]) for r in floors} == {
        ("floor: readinto", 1), ("floor: readinto", 2), ("floor: np.fromfile", 1),
        ("floor: np.fromfile", 2)}
    assert all(r["ok"] and r["best_s"] > 0 and r["ratio"] > 0 for r in floors)
    mem = [r for r in report["results"] if r["op"] == "memory"]
    assert len(mem) == 1 and mem[0]["threads"] == 2 and mem[0]["ok"] is True, mem
    e = mem[0]["extra"]
    assert e["output_bytes"] == math.prod(D.main_shape(parse_size("2MiB"))) * 2
    assert e["peak_extra_bytes"] >= e["output_bytes"] * 0.9  # the output itself is counted
    assert e["within_target"] is True


def test_drop_caches_refused_with_a_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(H, "DROP_CACHES", str(tmp_path))  # a directory: cannot be written
    code = main(["bench", "--size", "2MiB", "--layouts", "raw", "--ops", "read", "--libs",
                 "zarrfast", "--drop-caches", "--path", str(tmp_path / "d")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--drop-caches" in err and "root" in err and "Traceback" not in err


def test_cold_reads_when_permitted(tmp_path):
    try:
        H.drop_caches()
    except PermissionError:
        pytest.skip("not permitted to drop the page cache here")
    code, report = run(_cfg(tmp_path, drop_caches=True, repeat=2, ops=["read", "random"]),
                       out=io.StringIO())
    assert code == 0 and report["notes"]["cache"].startswith("cold")
    assert all(r["ok"] for r in report["results"])


def test_quick_flags_map_to_the_documented_config():
    from zarrfast.cli import bench_config, build_parser

    p = build_parser()
    cfg = bench_config(p.parse_args(["bench", "--quick", "--codec", "none"]))
    assert (cfg.layouts, cfg.size, cfg.ops) == (["raw"], 250 << 20, ["read", "random", "write"])
    assert cfg.threads == [os.cpu_count() or 1]
    assert cfg.write_libs == ["zarrfast", "zarr-python"]
    cfg = bench_config(p.parse_args(["bench", "--quick", "--threads", "3", "--size", "8MiB"]))
    assert (cfg.layouts, cfg.threads, cfg.size) == (["zstd"], [3], 8 << 20)
    cfg = bench_config(p.parse_args(["bench"]))
    assert cfg.layouts == list(D.LAYOUTS) and cfg.ops == list(H.OPS)
    assert cfg.threads == sorted({1, os.cpu_count() or 1}) and cfg.write_libs is None


def test_scheduler_with_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        cfg = _cfg(tmp_path, layouts=["sharded", "small-files"], ops=["read", "write"],
                   repeat=2, scheduler=cluster.scheduler_address)
        code, report = run(cfg, out=io.StringIO())
        assert code == 0
        rs = report["results"]
        assert {(r["layout"], r["op"]) for r in rs} == {
            (lay, op) for lay in ("sharded", "small-files") for op in ("read", "write")}
        for r in rs:
            assert r["ok"] is True and len(r["times"]) == 2 and "dask: 2 workers" in r["note"]
        # wrong stored values are caught in the workers' results too (raw: same file sizes,
        # so the dataset is reused as it is)
        cfg = _cfg(tmp_path, ops=["read"], scheduler=cluster.scheduler_address)
        assert run(cfg, out=io.StringIO())[0] == 0
        a = zarrfast.open_array(str(tmp_path / "data" / "raw.zarr"), mode="r+")
        a[5, 6, 7] = a[5, 6, 7] + 1
        code, report = run(cfg, out=io.StringIO())
        assert report["datasets"][0]["reused"] is True
        assert code == 1 and report["results"][0]["ok"] is False
        assert "WRONG DATA" in report["results"][0]["error"]


# -- benchmarks/bench_remote.py: its servers and a minimal run --------------------------

def _bench_module(name):
    """A module of ``benchmarks/`` (the scripts are not a package: import by path)."""
    import importlib.util
    import sys

    bench_dir = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
    bench_dir = os.path.abspath(bench_dir)
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    spec = importlib.util.spec_from_file_location(name, os.path.join(bench_dir, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _nginx_or_skip(rs):
    if rs.nginx_path() is None:
        pytest.skip(rs.NGINX_HINT)


def test_remote_proxy_counts_delays_and_forwards_ranges(tmp_path):
    import urllib.error
    import urllib.request

    rs = _bench_module("remote_servers")
    _nginx_or_skip(rs)
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.bin").write_bytes(bytes(range(256)) * 64)
    with rs.Nginx(root, tmp_path / "nginx") as nginx, rs.Proxy(nginx.url, 0) as proxy:
        # nginx keeps everything in its temporary directory
        assert (tmp_path / "nginx" / "nginx.conf").exists()
        with urllib.request.urlopen(f"{nginx.url}/a.bin") as r:
            assert r.read() == (root / "a.bin").read_bytes()
        assert nginx.wait_access_lines(1) == 1
        with urllib.request.urlopen(urllib.request.Request(
                f"{proxy.url}/a.bin", headers={"Range": "bytes=10-19"})) as r:
            assert r.status == 206 and r.read() == bytes(range(10, 20))
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{proxy.url}/missing")
        assert e.value.code == 404
        recs = proxy.take()
        assert [(r["method"], r["path"], r["range"], r["status"]) for r in recs] == [
            ("GET", "/a.bin", "bytes=10-19", 206), ("GET", "/missing", None, 404)]
        assert recs[0]["bytes"] == 10
        assert proxy.take() == []  # taken means forgotten
        # the delay holds each request back; without it, the same request is faster
        proxy.set_delay(150)
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"{proxy.url}/a.bin") as r:
            assert len(r.read()) == 256 * 64
        assert time.perf_counter() - t0 >= 0.15
        assert len(proxy.take()) == 1
    assert nginx.proc.poll() is not None and proxy.proc.poll() is not None


def test_bench_remote_minimal_run(tmp_path, capsys):
    br = _bench_module("bench_remote")
    _nginx_or_skip(br.RS)
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    out = tmp_path / "remote.json"
    code = br.main(["--quick", "--servers", "nginx,moto", "--impls",
                    "zarrfast/fsspec,zarrfast/obstore,tensorstore", "--reads",
                    "zstd,box-sharded", "--latency-ms", "0,5", "--repeat", "1",
                    "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "nginx (http), 5 ms" in printed and "moto (s3), 0 ms" in printed
    report = json.loads(out.read_text())
    rows = report["results"]
    assert {(r["server"], r["latency_ms"], r["read"]) for r in rows} == {
        (s, lat, rd) for s in ("nginx", "moto") for lat in (0, 5)
        for rd in ("zstd", "box-sharded")}
    for r in rows:
        if r["impl"] == "zarrfast/fsspec":
            assert r["error"] is None and r["best_ms"] > 0, r
            # every request went through the proxy and was counted
            assert r["requests"][0] >= (64 if r["read"] == "zstd" else 2)
            assert r["bytes"][0] > 0 and r["kinds"]
            assert r["log"] and r["log"][0]["path"].endswith("zarr.json")
    assert {r["impl"] for r in rows} >= {"zarrfast/fsspec"}
    # an implementation that cannot run says why instead of failing the run
    zarrfast_has_obstore = hasattr(zarrfast.storage, "ObjectStore")
    assert ("zarrfast/obstore" in report["unavailable"]) != zarrfast_has_obstore
    check = report["proxy_check"]
    assert {r["via"] for r in check} == {"direct", "proxy 0 ms"}
    direct = [r for r in check if r["via"] == "direct" and r["impl"] == "zarrfast/fsspec"]
    proxied = [r for r in check if r["via"] != "direct" and r["impl"] == "zarrfast/fsspec"]
    # nginx's access log and the proxy count the same requests
    assert sorted(r["requests"] for r in direct) == sorted(r["requests"] for r in proxied)
    mem = [m for m in report["memory"] if m["impl"] == "zarrfast/fsspec"]
    assert {(m["server"], m["read"]) for m in mem} == {("nginx", "zstd"), ("moto", "zstd")}
    for m in mem:
        assert m["ok"] is True and m["output_bytes"] == 8 << 20 and m["peak_extra"] > 0, m


# -- cold reads without privilege, decode floors, zarrista --------------------------------


def _resident_bytes(path) -> int | None:
    import shutil
    import subprocess

    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "-o", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def test_evict_pages_takes_a_dataset_out_of_the_page_cache(tmp_path):
    d = tmp_path / "ds"
    (d / "c").mkdir(parents=True)
    for i in range(3):
        (d / "c" / str(i)).write_bytes(os.urandom(1 << 20))
    for i in range(3):
        (d / "c" / str(i)).read_bytes()  # now cached
    before = _resident_bytes(d / "c" / "0")
    if before is None or before == 0:
        pytest.skip("fincore is missing, or this file system keeps no page cache for files")
    assert H.evict_pages(str(d)) == 3
    assert all(_resident_bytes(d / "c" / str(i)) == 0 for i in range(3))



def test_kept_written_datasets_leave_the_page_cache(tmp_path):
    """A written dataset the run keeps (on disk, for the inode allocator) does not keep
    its pages in memory."""
    cfg = _cfg(tmp_path)
    ctx = H._Context(cfg, cfg.path)
    path = ctx.fresh("zarrfast-write.zarr")
    os.makedirs(os.path.join(path, "c"))
    for i in range(3):
        with open(os.path.join(path, "c", str(i)), "wb") as f:
            f.write(os.urandom(1 << 20))
    before = _resident_bytes(os.path.join(path, "c", "0"))
    if before is None or before == 0:
        pytest.skip("fincore is missing, or this file system keeps no page cache for files")
    ctx.discard(path, 3 << 20)
    assert os.path.isdir(path)  # kept ...
    assert all(_resident_bytes(os.path.join(path, "c", str(i))) == 0 for i in range(3))

def test_cold_run_evicts_before_every_timed_read(tmp_path, monkeypatch):
    calls = []
    real = H.evict_pages
    monkeypatch.setattr(H, "evict_pages", lambda p: calls.append(p) or real(p))
    cfg = _cfg(tmp_path, layouts=["zstd"], ops=["read", "write"], repeat=2, cold=True)
    code, report = run(cfg, io.StringIO())
    assert code == 0
    reads = [r for r in report["results"] if r["op"] == "read"]
    assert reads and all(r["ok"] for r in reads)
    # one eviction of the dataset per timed read (2 rounds), none for the write; the
    # datasets the writes made and the run kept leave the page cache too
    dataset = [p for p in calls if p.endswith(os.sep + "zstd.zarr")]
    assert len(dataset) == 2
    kept = [p for p in calls if p not in dataset]
    assert len(kept) == 2 and all(os.sep + "_scratch" + os.sep in p for p in kept)
    assert "posix_fadvise" in report["notes"]["cache"]


def test_decode_floors_on_compressed_layouts(tmp_path):
    cfg = _cfg(tmp_path, layouts=["zstd", "blosc", "v2", "raw"], ops=["floor"], threads=[1, 2])
    code, report = run(cfg, io.StringIO())
    assert code == 0
    got = {(r["layout"], r["lib"], r["threads"]): r for r in report["results"]}
    for lay in ("zstd", "blosc", "v2"):
        assert got[(lay, "floor: decode only", 1)]["best_s"] > 0
        assert got[(lay, "floor: decode only", 2)]["best_s"] > 0
        loop = got[(lay, "floor: plain loop", 1)]
        assert loop["ok"] is True and loop["best_s"] > 0  # its result's checksum was right
        assert (lay, "floor: plain loop", 2) not in got  # one thread only
    assert ("raw", "floor: decode only", 1) not in got



def test_random_decode_floor(tmp_path):
    """The random rows' ``floor: decode only``: numcodecs decoding every chunk the boxes
    touch (inner chunks cut out of their shards), its values checked."""
    cfg = _cfg(tmp_path, layouts=["zstd", "sharded", "blosc", "raw"],
               ops=["random", "floor"], threads=[1, 2])
    code, report = run(cfg, io.StringIO())
    assert code == 0
    got = {(r["layout"], r["op"], r["lib"], r["threads"]): r for r in report["results"]}
    for lay in ("zstd", "sharded", "blosc"):
        for threads in (1, 2):
            floor = got[(lay, "random", "floor: decode only", threads)]
            assert floor["ok"] is True and floor["best_s"] > 0 and floor["ratio"] > 0
            assert "chunk decodes for 5 boxes" in floor["note"]
    assert ("raw", "random", "floor: decode only", 1) not in got


def test_random_decode_floor_checks_the_values(tmp_path):
    """Chunks whose bytes decode to other values than the dataset's fail the floor's
    check (a floor that decodes the wrong bytes measures nothing)."""
    cfg = _cfg(tmp_path, layouts=["zstd"], ops=["random"], threads=[1])
    ds = D.prepare(cfg.path, D.LAYOUTS["zstd"], cfg.size)
    ctx = H._Context(cfg, cfg.path)
    (good,) = H._random_floor(ds, 1, 1, ctx)
    assert good.ok is True and good.error is None
    files = [p for p, _ in ds.chunk_files()]
    with open(files[0], "rb") as f:
        first = f.read()
    for p in files[1:]:  # every chunk now holds chunk (0, 0, 0)'s bytes
        with open(p, "wb") as f:
            f.write(first)
    (bad,) = H._random_floor(ds, 1, 1, H._Context(cfg, cfg.path))
    assert bad.ok is False and "WRONG DATA" in bad.error
    assert "decodes to wrong values" in bad.error


def test_cores_count_the_cpu_time_of_the_timed_parts_only(monkeypatch):
    """``Result.extra["cores"]``: the process's CPU time during a task's timed parts per
    second of their wall time; work outside them does not count.  The two clocks the
    harness reads (``time.perf_counter`` and the process's CPU time) are driven by the
    test: nothing here depends on how busy the machine is."""
    wall = cpu = 0.0

    def run(seconds, cores):  # ``seconds`` of wall time with ``cores`` cores busy
        nonlocal wall, cpu
        wall += seconds
        cpu += seconds * cores

    monkeypatch.setattr(H, "_cpu_seconds", lambda: cpu)
    monkeypatch.setattr(H, "time", types.SimpleNamespace(perf_counter=lambda: wall))

    def busy_outside(first):
        run(0.05, 1)  # (not timed)
        t0 = H._CLOCK()
        run(0.05, 0)  # a sleep
        return H._CLOCK() - t0, None

    def busy_inside(first):
        total = 0.0
        for _ in range(2):  # two timed parts, summed
            t0 = H._CLOCK()
            run(0.03, 1)
            total += H._CLOCK() - t0
            run(0.02, 0)  # (not timed)
        return total, None

    def two_cores_half_the_time(first):
        t0 = H._CLOCK()
        run(0.01, 2)
        run(0.01, 0)
        return H._CLOCK() - t0, None

    cores: dict[str, list[float]] = {}
    H._rounds({"outside": busy_outside, "inside": busy_inside,
               "two": two_cores_half_the_time}, 3, cores=cores)
    # the rounds after the first; a task whose timed parts used no CPU is left out
    assert "outside" not in cores
    assert cores["inside"] == pytest.approx([1.0, 1.0])
    assert cores["two"] == pytest.approx([1.0, 1.0])


def test_grid_marks_libraries_busier_than_their_threads():
    from zarrfast.bench.report import _print_grid

    def row(lib, ratio, cores):
        return {"layout": "zstd", "op": "read", "threads": 1, "lib": lib, "best_s": 0.1 * ratio,
                "mib_s": 100.0, "ratio": ratio, "ok": True, "error": None,
                "extra": {"cores": cores}}

    out = io.StringIO()
    _print_grid([row("zarrfast", 1.0, 1.0), row("tensorstore", 1.5, 1.1),
                 row("zarrista", 0.9, 1.93)], out)
    text = out.getvalue()
    assert "x0.90+" in text and "x1.50 " in text and "x1.50+" not in text
    assert "zstd read threads=1 zarrista: 1.93 cores" in text
    assert "tensorstore:" not in text.split("+ kept more cores")[1]



def test_runs_sharing_a_path_keep_their_own_scratch(tmp_path):
    """Two runs at once on one --path: each writes and removes only its own scratch and
    templates (a run used to remove the other's written datasets when it ended)."""
    import subprocess
    import sys

    assert run(_cfg(tmp_path), io.StringIO())[0] == 0  # the dataset, made once
    args = [sys.executable, "-m", "zarrfast", "bench", "--size", "2MiB", "--layouts", "raw",
            "--ops", "write", "--threads", "1", "--libs", "zarrfast", "--repeat", "6",
            "--path", str(tmp_path / "data"), "--no-plot"]
    procs = [subprocess.Popen([*args, "--out", str(tmp_path / f"out{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for p, text in zip(procs, outs, strict=True):
        assert p.returncode == 0, text
        report = json.loads((tmp_path / f"out{procs.index(p)}" / "bench.json").read_text())
        (w,) = [r for r in report["results"] if r["op"] == "write"]
        assert w["ok"] is True and len(w["times"]) == 6 and not w["error"], text
    assert not (tmp_path / "data" / "_scratch").exists()
    assert not (tmp_path / "data" / "_templates").exists()


def test_zarrista_reads_and_writes_what_zarrfast_does(tmp_path):
    pytest.importorskip("zarrista")
    lib = L.get_lib("zarrista")
    assert lib.probe() is None
    data = np.arange(40 * 30, dtype="<u2").reshape(40, 30)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=data.shape, chunks=(16, 16),
                              dtype="<u2")
    a[:] = data
    with lib.session(1):
        h = lib.open(str(tmp_path / "a.zarr"), write=True)
        np.testing.assert_array_equal(lib.read(h), data)
        np.testing.assert_array_equal(lib.read(h, (slice(3, 20), slice(7, 30))), data[3:20, 7:30])
        lib.write(h, (slice(0, 16), slice(0, 30)), np.zeros((16, 30), "<u2"))
    assert int(zarrfast.open_array(str(tmp_path / "a.zarr"))[:16].sum()) == 0


def test_zarr_with_zarrfast_reads_and_writes_through_the_pipeline(tmp_path):
    pytest.importorskip("zarr")
    from zarrfast import config

    lib = L.get_lib("zarr+zarrfast")
    assert lib.probe() is None
    data = np.arange(40 * 30, dtype="<u2").reshape(40, 30)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=data.shape, chunks=(16, 16),
                              dtype="<u2")
    a[:] = data
    with lib.session(2):
        assert config.get("threads") == 2  # (the engine's threads, as zarr-python's)
        h = lib.open(str(tmp_path / "a.zarr"), write=True)
        assert type(h._async_array.codec_pipeline).__module__ == "zarrfast.zarr_python"
        np.testing.assert_array_equal(lib.read(h), data)
        np.testing.assert_array_equal(lib.read(h, (slice(3, 20), slice(7, 30))), data[3:20, 7:30])
        lib.write(h, (slice(0, 16), slice(0, 30)), np.zeros((16, 30), "<u2"))
    assert int(zarrfast.open_array(str(tmp_path / "a.zarr"))[:16].sum()) == 0


def test_one_thread_count_sizes_the_rayon_pool(monkeypatch):
    monkeypatch.setenv("RAYON_NUM_THREADS", "x")  # (restored, or removed, afterwards)
    monkeypatch.delenv("RAYON_NUM_THREADS")
    for name in ("zarrs", "zarrista"):  # (imported: their pools may exist already)
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert H._size_rayon_pool([1, 2]) is None and "RAYON_NUM_THREADS" not in os.environ
    assert H._size_rayon_pool([1]) == "1" == os.environ["RAYON_NUM_THREADS"]
    assert H._size_rayon_pool([2]) == "1"  # (set already: kept, as a user's setting is)
    monkeypatch.delenv("RAYON_NUM_THREADS")
    monkeypatch.setitem(sys.modules, "zarrista", object())
    assert H._size_rayon_pool([1]) is None and "RAYON_NUM_THREADS" not in os.environ


_RAYON_THREADS = r"""
import os, sys
import numpy as np
from zarrfast.bench import harness as H
H._size_rayon_pool([int(n) for n in sys.argv[2].split(",")])
import zarrista
h = zarrista.Array.open(zarrista.store.FilesystemStore(sys.argv[1]), "/")
np.asarray(h.retrieve_array_subset(h.subset_all, concurrent_target=1))
print(len(os.listdir("/proc/self/task")), os.environ.get("RAYON_NUM_THREADS"))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or len(os.sched_getaffinity(0)) < 2,
                    reason="counts threads in /proc, on a machine of several cores")
def test_a_run_of_one_thread_count_gives_zarrista_one_rayon_thread(tmp_path, subprocess_cwd):
    pytest.importorskip("zarrista")
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(64, 64), chunks=(8, 8),
                              dtype="<u2")
    a[:] = np.arange(64 * 64, dtype="<u2").reshape(64, 64)
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    got = {}
    for threads in ("1", "1,2"):
        out = subprocess.run([sys.executable, "-c", _RAYON_THREADS, str(tmp_path / "a.zarr"),
                              threads], check=True, capture_output=True, text=True, env=env,
                             cwd=subprocess_cwd).stdout.split()
        got[threads] = (int(out[0]), out[1])
    # one rayon worker with one thread count; with two, rayon's default: one per core
    assert got["1"][1] == "1" and got["1,2"][1] == "None"
    assert got["1,2"][0] > got["1"][0], got


def test_the_report_records_the_rayon_pool_size(tmp_path, subprocess_cwd):
    pytest.importorskip("zarrista")
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    proc = subprocess.run(
        [sys.executable, "-m", "zarrfast", "bench", "--size", "2MiB", "--layouts", "zstd",
         "--ops", "read", "--threads", "1", "--repeat", "1", "--libs", "zarrista",
         "--path", str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--no-plot"],
        capture_output=True, text=True, env=env, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert report["config"]["rayon_num_threads"] == "1"
    (z,) = [r for r in report["results"] if r["lib"] == "zarrista"]
    assert z["ok"] is True


# -- the loader op ------------------------------------------------------------------------


def test_loader_batches_are_fixed_and_in_bounds():
    specs = D.loader_specs(parse_size("2MiB"))
    tiles = H.loader_selections(specs["tiles"], 0)
    assert len(tiles) == D.LOADER_TILES and tiles == H.loader_selections(specs["tiles"], 0)
    assert tiles != H.loader_selections(specs["tiles"], 1)
    n = specs["tiles"].shape[0]
    for sel in tiles:
        assert [s.stop - s.start for s in sel] == [1, 256, 256]
        assert 0 <= sel[0].start < n
    rows = H.loader_selections(specs["rows"], 0)
    assert len(rows) == D.LOADER_ROWS and (np.diff(rows) > 0).all()  # sorted, distinct
    assert 0 <= rows[0] and rows[-1] < specs["rows"].shape[0]
    region = H.loader_selections(specs["regions"], 0)
    side = specs["regions"].shape[0]
    assert [s.stop - s.start for s in region] == [256, 256]
    assert all(0 <= s.start and s.stop <= side for s in region)
    # the regions group's arrays hold different values
    assert not np.array_equal(D.loader_values(0, region), D.loader_values(1, region))


def test_loader_op_reads_and_checks_every_library(tmp_path, monkeypatch):
    calls = []
    real, real_arrays = zarrfast.Array.get_many, zarrfast.get_many

    def get_many(self, selections, **kw):
        calls.append(len(selections))
        return real(self, selections, **kw)

    def get_many_arrays(requests, **kw):
        requests = list(requests)
        calls.append(("arrays", len(requests)))
        return real_arrays(requests, **kw)
    monkeypatch.setattr(zarrfast.Array, "get_many", get_many)
    monkeypatch.setattr(zarrfast, "get_many", get_many_arrays)
    out = io.StringIO()
    cfg = _cfg(tmp_path, layouts=["zstd"], ops=["loader"], libs=list(L.LIBRARIES))
    code, report = run(cfg, out)
    assert code == 0, out.getvalue()
    used = [n for n, i in report["libraries"].items() if i["available"]] + [H.SINGLE]
    results = report["results"]
    assert {(r["layout"], r["op"], r["lib"]) for r in results} == {
        (w, "loader", lib) for w in D.LOADER_WORKLOADS for lib in used}
    samples = {"tiles": D.LOADER_TILES, "rows": D.LOADER_ROWS, "regions": D.LOADER_ARRAYS}
    for r in results:
        assert r["ok"] is True and r["error"] is None, r
        assert r["extra"]["samples"] == samples[r["layout"]] and r["extra"]["samples_s"] > 0
        assert r["note"] and r["ratio"] > 0 and r["mib_s"] > 0
        if r["lib"] == "zarrfast":
            assert r["ratio"] == 1.0
    # zarrfast's row reads the tiles in one Array.get_many call and the regions in one
    # zarrfast.get_many; zarrfast-single calls neither
    assert calls == [D.LOADER_TILES, ("arrays", D.LOADER_ARRAYS)]
    printed = out.getvalue()
    assert "loader: samples per second" in printed and "zarrfast-single" in printed
    assert "loader (1 thread, samples per second):" in printed
    # only the loader's datasets were made
    assert sorted(os.listdir(tmp_path / "data")) == [
        "loader-regions.zarr", "loader-rows.zarr", "loader-tiles.zarr", D.MANIFEST]
    # a second run reuses them
    code, report = run(_cfg(tmp_path, ops=["loader"]), io.StringIO())
    assert code == 0 and all(d["reused"] for d in report["datasets"])


def test_loader_group_opens_the_regions_from_their_group(tmp_path):
    """``loader_group``: each library opens the regions' arrays its way for a group's
    arrays (zarrfast: from the group, one store, so zarrfast.get_many reads them as one
    batch); every batch still checked, and the notes say how they were opened."""
    out = io.StringIO()
    cfg = _cfg(tmp_path, layouts=["zstd"], ops=["loader"], libs=list(L.LIBRARIES),
               loader_group=True)
    code, report = run(cfg, out)
    assert code == 0, out.getvalue()
    regions = [r for r in report["results"] if r["layout"] == "regions"]
    used = [n for n, i in report["libraries"].items() if i["available"]] + [H.SINGLE]
    assert sorted(r["lib"] for r in regions) == sorted(used)
    for r in regions:
        assert r["ok"] is True and r["error"] is None, r
        lib = L.LIBRARIES["zarrfast" if r["lib"] == H.SINGLE else r["lib"]]  # (its handles)
        assert r["note"].endswith(f"; the arrays opened {lib.loader_group_via}")
    zf = L.Zarrfast()
    root = str(tmp_path / "data" / "loader-regions.zarr")
    arrays = zf.open_loader_group(root, ["a00", "a01"])
    assert arrays[0].store is arrays[1].store
    others = [r for r in report["results"] if r["layout"] != "regions"]
    assert others and not any("opened" in r["note"] for r in others)


def test_loader_op_catches_wrong_values(tmp_path):
    root = str(tmp_path / "data")
    loader = D.prepare_loader(root, parse_size("2MiB"))
    for name, (spec, path, _) in loader.items():  # one sample of each batch changed
        batch = H.loader_selections(spec, 0)
        if name == "tiles":
            target, sel = path, batch[5]
        elif name == "rows":
            target, sel = path, (slice(int(batch[7]), int(batch[7]) + 1),)
        else:
            target, sel = os.path.join(path, "a07"), batch
        a = zarrfast.open_array(target, mode="r+")
        a[sel] = a[sel] + 1
    names = ["zarrfast"] + [n for n in ("tensorstore", "zarr-python")
                            if L.get_lib(n).probe() is None]
    libs, _ = L.available_libs(names)
    results = H._run_loader(_cfg(tmp_path), loader, libs, 1, None)
    assert {r.lib for r in results} == set(names) | {H.SINGLE}
    for r in results:
        assert r.ok is False and r.error.startswith("WRONG DATA"), r
        want = {"tiles": "result 5", "rows": "result 0", "regions": "result 7"}[r.layout]
        assert want in r.error, r


def test_loader_op_cold_evicts_before_every_batch(tmp_path, monkeypatch):
    calls = []
    real = H.evict_pages
    monkeypatch.setattr(H, "evict_pages", lambda p: calls.append(p) or real(p))
    cfg = _cfg(tmp_path, ops=["loader"], repeat=2, cold=True)
    code, report = run(cfg, io.StringIO())
    assert code == 0
    # zarrfast and zarrfast-single, 2 rounds each: 4 evictions of each workload's dataset
    for name in D.LOADER_WORKLOADS:
        assert sum(p.endswith(f"loader-{name}.zarr") for p in calls) == 4
    assert len(calls) == 12


def test_loader_op_over_http(tmp_path):
    blr = _bench_module("bench_loader_remote")
    _nginx_or_skip(blr.RS)
    out = tmp_path / "out"
    libs = ["zarrfast"] + [n for n in ("tensorstore", "zarr-python", "zarr+zarrs", "zarrista")
                           if L.get_lib(n).probe() is None]
    code = blr.main(["--size", "2MiB", "--path", str(tmp_path / "data"), "--latency-ms", "0",
                     "--repeat", "1", "--threads", "1", "--libs", ",".join(libs),
                     "--out", str(out)])
    assert code == 0
    report = json.loads((out / "bench.json").read_text())
    assert report["config"]["remote"].startswith("http://127.0.0.1:")
    for r in report["results"]:
        assert r["ok"] is True and r["error"] is None, r
    assert {r["lib"] for r in report["results"]} == set(libs) | {H.SINGLE}
