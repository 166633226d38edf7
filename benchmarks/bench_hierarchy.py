"""Huge hierarchies: opening a group of many arrays and listing its members, zarrfast and
zarr-python side by side (issue 44, target 4).

Builds once, under ``--path`` (default ``/dev/shm/zarrfast_bench_hierarchy``; reused when
there), one Zarr v3 group per ``--members`` count holding that many small arrays (shape
``(10,)``, chunks ``(10,)``, float32, zarr-python's default codecs, three attributes each):
``h<N>_cons`` with consolidated metadata in its ``zarr.json`` (as
``zarr.consolidate_metadata`` writes it), ``h<N>_plain`` without.  The arrays' documents are
the one zarr-python 3.4 writes for such an array (made by zarr-python once, then copied with
each array's attributes), so the 200,000-member hierarchies take seconds to build.

Each timing runs in a fresh process per library, operation and size (best of
``--repeat``, after one warm-up on a hierarchy of 10 members):

* ``cons members``: ``open_group(p)`` then ``list(g.members())``; ``cons arrays``:
  ``list(g.arrays())``; ``cons array_keys``: ``list(g.array_keys())`` (a fresh open each);
* ``plain members`` / ``plain arrays`` / ``plain array_keys``: the same without
  consolidated metadata (every member's ``zarr.json`` is read);
* ``open one``: ``open_array(p, path=name)`` of one member, in milliseconds (best of
  ``--repeat`` rounds of 100 opens); ``cons g[name]``: ``g[name]`` of an open consolidated
  group.

A last column checks that both libraries list the same members: the names, shapes, dtypes
and the attribute ``i`` of every array of ``list(g.arrays())`` (consolidated and not),
compared by a hash.

Run it with the Python that has both libraries (``/work/venv312/bin/python``)::

    nice -n 10 /work/venv312/bin/python benchmarks/bench_hierarchy.py \\
        --members 2000,20000,200000 --repeat 3

zarr-python takes minutes at 200,000 members: ``--timeout`` (seconds, default 600) ends a
measurement that takes longer (reported as such); ``--libs zarrfast`` times zarrfast alone.  ``--clock cpu`` takes each process's CPU time
instead of the wall time (steadier on a busy machine; it does not see time spent waiting).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from typing import Any

DEFAULT_PATH = "/dev/shm/zarrfast_bench_hierarchy"
OPS = ("cons members", "cons arrays", "cons array_keys", "plain members", "plain arrays",
       "plain array_keys", "open one", "cons g[name]")
LIBS = ("zarrfast", "zarr-python")


# -- building ---------------------------------------------------------------------------
def _template() -> dict[str, Any]:
    """The ``zarr.json`` zarr-python 3.4 writes for a (10,) float32 array in one chunk."""
    import zarr
    from zarr.storage import MemoryStore

    store = MemoryStore()
    zarr.create_array(store, shape=(10,), chunks=(10,), dtype="float32",
                      attributes={"i": 0})
    raw = store._store_dict["zarr.json"]
    return json.loads(raw.to_bytes())


def _member_doc(template: dict[str, Any], i: int) -> dict[str, Any]:
    return {**template, "attributes": {"i": i, "units": "m", "long_name": f"member {i}"}}


def _name(i: int) -> str:
    return f"a{i:06d}"


def _write(path: str, doc: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def build(root: str, n: int) -> tuple[str, str]:
    """``(consolidated group, plain group)`` of ``n`` arrays below ``root`` (made once)."""
    cons, plain = f"{root}/h{n}_cons", f"{root}/h{n}_plain"
    done = f"{root}/h{n}.done"
    if os.path.exists(done):
        return cons, plain
    template = _template()
    members = {}
    for base in (cons, plain):
        os.makedirs(base, exist_ok=True)
        for i in range(n):
            doc = _member_doc(template, i)
            os.makedirs(f"{base}/{_name(i)}", exist_ok=True)
            _write(f"{base}/{_name(i)}/zarr.json", doc)
            if base == cons:
                members[_name(i)] = doc
    # as zarr.consolidate_metadata writes it (checked against it in --check-build)
    _write(f"{cons}/zarr.json", {
        "attributes": {}, "zarr_format": 3,
        "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                  "metadata": members},
        "node_type": "group"})
    _write(f"{plain}/zarr.json", {"attributes": {}, "zarr_format": 3, "node_type": "group"})
    with open(done, "w") as f:
        f.write(str(n))
    return cons, plain


def check_build(root: str) -> None:
    """The consolidated document written here equals what zarr.consolidate_metadata writes
    for the plain hierarchy (10 members)."""
    import shutil

    import zarr

    cons, plain = build(root, 10)
    tmp = f"{root}/check_plain"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(plain, tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(tmp)
    with open(f"{tmp}/zarr.json") as f, open(f"{cons}/zarr.json") as g:
        ok = json.load(f) == json.load(g)
    shutil.rmtree(tmp)
    print(f"consolidated document as zarr.consolidate_metadata writes it: {ok}")
    if not ok:
        sys.exit(1)


# -- one measurement (in its own process) -----------------------------------------------
def _api(lib: str) -> Any:
    if lib == "zarrfast":
        import zarrfast

        return zarrfast
    import zarr

    return zarr


def _run_op(mod: Any, op: str, cons: str, plain: str, n: int) -> Any:
    kind, _, what = op.partition(" ")
    if op == "open one":
        name = _name(n // 2)
        for _ in range(100):
            mod.open_array(cons, path=name, mode="r")
        return None
    if op == "cons g[name]":
        return None  # (timed by the caller: the group is opened once)
    g = mod.open_group(cons if kind == "cons" else plain, mode="r")
    if what == "members":
        return list(g.members())
    if what == "arrays":
        return list(g.arrays())
    return list(g.array_keys())


def _digest(listing: list[tuple[str, Any]]) -> str:
    rows = sorted((name, list(a.shape), str(a.dtype), a.attrs["i"]) for name, a in listing)
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def worker(lib: str, op: str, n: int, root: str, repeat: int,
           clock: str = "wall") -> dict[str, Any]:
    warnings.simplefilter("ignore")
    now = time.perf_counter if clock == "wall" else time.process_time
    mod = _api(lib)
    cons, plain = build(root, n)
    small = build(root, 10)
    if op == "check":
        out = {}
        for kind, p in (("cons", cons), ("plain", plain)):
            g = mod.open_group(p, mode="r")
            listing = list(g.arrays())
            out[kind] = f"{len(listing)}:{_digest(listing)}"
        return out
    _run_op(mod, op, *small, 10)  # (warm-up: imports, codec registries)
    best = float("inf")
    if op == "cons g[name]":
        g = mod.open_group(cons, mode="r")
        name = _name(n // 2)
        for _ in range(repeat):
            t0 = now()
            for _ in range(100):
                g[name]
            best = min(best, (now() - t0) / 100)
        return {"seconds": best}
    for _ in range(repeat):
        t0 = now()
        result = _run_op(mod, op, cons, plain, n)
        t = now() - t0
        if op == "open one":
            t /= 100
        elif len(result) != n:
            raise SystemExit(f"{lib} {op}: listed {len(result)} members, not {n}")
        del result
        best = min(best, t)
    return {"seconds": best}


def _measure(lib: str, op: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", lib, op, str(n), "--path", args.path,
           "--repeat", str(args.repeat), "--clock", args.clock]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                             check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"over {args.timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(r: dict[str, Any], op: str) -> str:
    if "error" in r:
        return r["error"][:14]
    s = r["seconds"]
    return f"{s * 1e3:.3f} ms" if op in ("open one", "cons g[name]") else f"{s:.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=DEFAULT_PATH)
    ap.add_argument("--members", default="2000,20000,200000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or the process's CPU time (all its threads): steadier "
                         "on a busy machine, blind to waiting")
    ap.add_argument("--no-check", action="store_true", help="skip the listings' check")
    ap.add_argument("--check-build", action="store_true",
                    help="check the consolidated document against zarr-python's, and stop")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.path, exist_ok=True)
    if args.worker:
        lib, op, n = args.worker
        print(json.dumps(worker(lib, op, int(n), args.path, args.repeat, args.clock)))
        return
    if args.check_build:
        check_build(args.path)
        return
    libs = [x for x in args.libs.split(",") if x]
    ops = [x for x in args.ops.split(",") if x]
    sizes = [int(x) for x in args.members.split(",") if x]
    for n in sizes:
        t0 = time.perf_counter()
        build(args.path, n)
        print(f"# {n} members: built/found in {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"{'members':>8s} {'operation':18s}" + "".join(f" {lib:>14s}" for lib in libs)
          + ("   ratio" if len(libs) == 2 else ""), flush=True)
    for n in sizes:
        for op in ops:
            rs = [_measure(lib, op, n, args) for lib in libs]
            line = f"{n:8d} {op:18s}" + "".join(f" {_fmt(r, op):>14s}" for r in rs)
            if len(rs) == 2 and all("seconds" in r for r in rs):
                line += f"   {rs[0]['seconds'] / rs[1]['seconds']:5.3f}"
            print(line, flush=True)
        if not args.no_check and len(libs) == 2:
            rs = [_measure(lib, "check", n, args) for lib in libs]
            same = rs[0] == rs[1] and "error" not in rs[0]
            print(f"{n:8d} listings equal (names, shapes, dtypes, attrs): {same} {rs}",
                  flush=True)


if __name__ == "__main__":
    main()
