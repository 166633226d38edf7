"""The harness's output: a text table, JSON, CSV and (with matplotlib) a PNG plot."""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, TextIO

__all__ = ["human", "print_table", "summary", "write_files", "CSV_FIELDS"]

CSV_FIELDS = ["layout", "op", "threads", "lib", "best_s", "mib_s", "ratio", "ok", "error",
              "nbytes", "repeats", "times", "note", "peak_extra_bytes", "peak_over_output",
              "within_target", "cores", "samples", "samples_s"]


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def _status(r: dict[str, Any]) -> str:
    if r["ok"] is False:
        return "WRONG" if (r["error"] or "").startswith("WRONG") else "FAIL"
    if r["error"]:
        return "error"
    return "ok" if r["ok"] else "-"


def _time(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.3f} s"


def print_table(report: dict[str, Any], out: TextIO) -> None:
    m = report["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.0f} GiB" if m.get("memory_bytes") else "?"
    v = m["versions"]
    print(f"\nmachine: {m['cpu']}, {m['cores_logical']} logical cores "
          f"({m['cores_usable']} usable), {mem} RAM, {m['os']}, Python {m['python']}", file=out)
    print("versions: " + ", ".join(f"{k} {v[k]}" for k in v if v[k]), file=out)
    for name, info in report["libraries"].items():
        if info["available"]:  # (the missing ones are named once, at the end)
            print(f"  {name:12s} threads via {info['threads_via']}", file=out)
    floors = any(r["lib"].startswith("floor") for r in report["results"])
    print(f"cache: {report['notes']['cache']}; times are best of {report['config']['repeat']}; "
          f"MiB/s = array bytes / time; other libraries as time / zarrfast's time (x2.00: "
          f"twice as long as zarrfast)"
          + ("; floor = readinto of every stored file, on the same threads, fromfile = "
             "np.fromfile of one file of the raw array's size" if floors else ""),
          file=out)
    for d in report["datasets"]:
        sh = f" shards {tuple(d['shards'])}" if d["shards"] else ""
        print(f"  {d['layout']:14s} {tuple(d['shape'])} uint16 {human(d['nbytes'])}, chunks "
              f"{tuple(d['chunks'])}{sh}, v{d['zarr_format']}, {d['files']} files "
              f"{human(d['stored_bytes'])}{' (reused)' if d['reused'] else ''}: "
              f"{d['description']}", file=out)
    rows = [r for r in report["results"] if r["op"] not in ("memory", "loader")]
    _print_grid(rows, out)
    _print_loader([r for r in report["results"] if r["op"] == "loader"], report, out)
    mem = [r for r in report["results"] if r["op"] == "memory"]
    if mem:
        head = (f"{'layout':14s} {'library':14s} {'thr':>3s} {'output':>10s} "
                f"{'peak extra':>11s} {'x output':>8s}  target (1.2x + 64 MiB)")
        print("\npeak memory of a full read (subprocess, VmHWM - RSS before the read)\n"
              + head + "\n" + "-" * len(head), file=out)
        for r in mem:
            e = r["extra"]
            if r["error"] and not e:
                print(f"{r['layout']:14s} {r['lib']:14s} {r['threads']:3d}  error: "
                      f"{r['error'][:100]}", file=out)
                continue
            verdict = "met" if e["within_target"] else "MISSED"
            print(f"{r['layout']:14s} {r['lib']:14s} {r['threads']:3d} "
                  f"{human(e['output_bytes']):>10s} {human(e['peak_extra_bytes']):>11s} "
                  f"{e['peak_over_output']:8.2f}  {verdict}"
                  + ("" if r["ok"] else "  WRONG DATA"), file=out)
    failed = [r for r in report["results"] if r["ok"] is False]
    print(f"\n{len(report['results'])} measurements, {len(failed)} failed checks, "
          f"{report['elapsed_s']:.0f} s", file=out)
    lines = summary(report)
    if lines:
        print("\n" + "\n".join(lines), file=out)


#: what each operation did, as the summary says it ("zarrfast read the whole array ...")
_DID = {"read": "read the whole array",
        "chunks": "read the array chunk by chunk",
        "random": "read {n_random} random boxes",
        "boxes": "read {n_random} random boxes of one to two chunks per side",
        "strided": "read a strided selection",
        "write": "wrote the whole array",
        "roundtrip": "read the array and wrote it with other chunks"}


def _compared(ratio: float, lib: str) -> str:
    """``2.3x faster than lib`` (``ratio``: lib's time / zarrfast's); ``about as fast
    as lib`` within 10%."""
    if ratio >= 1.1:
        return f"{ratio:.1f}x faster than {lib}"
    if ratio <= 1 / 1.1:
        return f"{1 / ratio:.1f}x slower than {lib}"
    return f"about as fast as {lib}"  # (within 10%: about the noise of a busy machine)


def _listed(parts: list[str], last: str = "and") -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} {last} {parts[-1]}"


def summary(report: dict[str, Any]) -> list[str]:
    """The run in a few plain sentences, from the measured table: per operation, how much
    faster or slower zarrfast was than each other library (at the largest thread count;
    over several layouts, the geometric mean of the ratios), and the peers that were asked
    for but are not installed, with how to add them."""
    from zarrfast.bench.libs import INSTALL_HINT, NOT_INSTALLED

    libs = report["libraries"]
    peers = [n for n in libs if n != "zarrfast"]
    rows = [r for r in report["results"] if r["op"] in _DID and r["times"]
            and r["ok"] is not False and not r["error"]]
    lines: list[str] = []
    if rows:
        threads = max(r["threads"] for r in rows)
        rows = [r for r in rows if r["threads"] == threads]
        layouts = list(dict.fromkeys(r["layout"] for r in rows))
        cfg = report.get("config", {})
        sizes = cfg.get("array_bytes") or {}
        size = f", {human(sizes['main'])}" if len(sizes) == 1 and "main" in sizes else ""
        where = (f"the {layouts[0]} layout{size}" if len(layouts) == 1
                 else f"geometric mean over {len(layouts)} layouts")
        lines.append(f"summary ({where}, {threads} thread{'s' * (threads != 1)}):")
        for op in dict.fromkeys(r["op"] for r in rows):
            did = _DID[op].format(n_random=cfg.get("n_random", "the"))
            parts = []
            for peer in peers:
                ratios = [r["ratio"] for r in rows if r["op"] == op and r["lib"] == peer
                          and r["ratio"]]
                if ratios:
                    parts.append(_compared(math.exp(sum(map(math.log, ratios))
                                                    / len(ratios)), peer))
            z = [r for r in rows if r["op"] == op and r["lib"] == "zarrfast"]
            if parts:
                lines.append(f"  zarrfast {did} {_listed(parts)}.")
            elif len(z) == 1:  # timed alone: its own time
                rate = (f" ({z[0]['mib_s']:.0f} MiB/s)" if op not in ("random", "boxes")
                        else "")
                lines.append(f"  zarrfast {did} in {_seconds(z[0]['best_s'])}{rate}.")
    lines += _loader_summary(report)
    missing = [n for n in peers if not libs[n]["available"] and libs[n].get("reason")
               == NOT_INSTALLED]
    broken = [n for n in peers if not libs[n]["available"] and n not in missing]
    for n in broken:
        why = str(libs[n].get("reason", "")).splitlines()[0][:200] if libs[n].get("reason") \
            else "unusable"
        lines.append(f"{n} left out: {why}")
    if missing and len(missing) + len(broken) == len(peers):
        lines.append(f"zarrfast was compared with no other library: none of "
                     f"{_listed(missing, 'or')} is installed. Add them with: "
                     f"{INSTALL_HINT}")
    elif missing:
        lines.append(f"not installed, so not compared: {_listed(missing)}. Add the peers "
                     f"with: {INSTALL_HINT}")
    return lines


def _loader_summary(report: dict[str, Any]) -> list[str]:
    """Per loader workload (largest thread count): zarrfast's samples/s and how it
    compares with the fastest peer."""
    rows = [r for r in report["results"] if r["op"] == "loader" and r["times"]
            and r["ok"] is not False and not r["error"]]
    if not rows:
        return []
    threads = max(r["threads"] for r in rows)
    lines = [f"loader ({threads} thread{'s' * (threads != 1)}, samples per second):"]
    for workload in dict.fromkeys(r["layout"] for r in rows):
        here = [r for r in rows if r["layout"] == workload and r["threads"] == threads]
        z = next((r for r in here if r["lib"] == "zarrfast"), None)
        peers = [r for r in here if r["lib"] not in ("zarrfast", "zarrfast-single")]
        if z is None:
            continue
        text = f"  {workload}: zarrfast {z['extra']['samples_s']:.0f}/s"
        if peers:
            best = min(peers, key=lambda r: r["best_s"])
            text += (f", {best['best_s'] / z['best_s']:.2f}x the fastest peer's "
                     f"({best['lib']}, {best['extra']['samples_s']:.0f}/s)")
        single = next((r for r in here if r["lib"] == "zarrfast-single"), None)
        if single:
            text += f"; {single['best_s'] / z['best_s']:.2f}x zarrfast one read at a time"
        lines.append(text + ".")
    return lines


def _seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _short(lib: str) -> str:
    return {"floor: readinto": "floor", "floor: np.fromfile": "fromfile"}.get(lib, lib)


def _print_grid(rows: list[dict[str, Any]], out: TextIO) -> None:
    """One line per layout, operation and thread count; zarrfast's time and MiB/s, then
    every other library's time as a ratio to zarrfast's (x2.00: twice as long)."""
    if not rows:
        return
    libs = [lib for lib in dict.fromkeys(r["lib"] for r in rows) if lib != "zarrfast"]
    width = max([len(_short(lib)) for lib in libs] + [7]) + 1
    head = (f"{'layout':14s} {'op':9s} {'thr':>3s} {'zarrfast':>10s} {'MiB/s':>6s}"
            + "".join(f"{_short(lib):>{width}s}" for lib in libs) + "  checks")
    print("\n" + head + "\n" + "-" * len(head), file=out)
    groups: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["layout"], r["op"], r["threads"]), {})[r["lib"]] = r
    problems: list[str] = []
    over: list[str] = []
    last = None
    for (layout, op, threads), by_lib in groups.items():
        if last is not None and layout != last:
            print("", file=out)
        last = layout
        z = by_lib.get("zarrfast")
        zt = _time(z["best_s"]) if z else "-"
        zm = f"{z['mib_s']:.0f}" if z and z["mib_s"] else "-"
        cells = []
        for lib in libs:
            r = by_lib.get(lib)
            if r is None:
                cells.append("")
            elif r["ratio"]:
                cells.append(f"x{r['ratio']:.2f}" + ("+" if _over_threads(r) else ""))
                if _over_threads(r):
                    over.append(f"  {layout} {op} threads={threads} {lib}: "
                                f"{r['extra']['cores']:.2f} cores")
            elif r["best_s"]:
                cells.append(_time(r["best_s"]))
            else:
                cells.append(_status(r))
        bad = [(lib, r) for lib, r in by_lib.items() if r["ok"] is False or r["error"]]
        for lib, r in bad:
            problems.append(f"  {layout} {op} threads={threads} {lib}: {_status(r)} "
                            f"{(r['error'] or '')[:160]}")
        checks = "ok" if not bad else ", ".join(f"{_status(r)}: {lib}" for lib, r in bad)
        print(f"{layout:14s} {op:9s} {threads:3d} {zt:>10s} {zm:>6s}"
              + "".join(f"{c:>{width}s}" for c in cells) + f"  {checks}", file=out)
    if over:
        print("\n+ kept more cores busy than the row's threads (CPU time of the process per "
              "second of the timed wall time, median of the rounds after the first):\n"
              + "\n".join(over), file=out)
    if problems:
        print("\nfailures and errors:\n" + "\n".join(problems), file=out)


def _print_loader(rows: list[dict[str, Any]], report: dict[str, Any], out: TextIO) -> None:
    """The loader op: per workload and thread count, every library's samples per second,
    MiB/s, time and time / zarrfast's (zarrfast: its batch call, get_many)."""
    if not rows:
        return
    remote = report.get("config", {}).get("remote")
    head = (f"{'workload':9s} {'thr':>3s} {'samples':>7s}  {'library':15s} {'samples/s':>10s} "
            f"{'MiB/s':>7s} {'time':>10s} {'ratio':>6s}  check")
    print(f"\nloader: samples per second, best of {report['config']['repeat']}"
          + (f", read from {remote}" if remote else "")
          + "; ratio = time / zarrfast's (> 1: zarrfast is faster)\n" + head + "\n"
          + "-" * len(head), file=out)
    last = None
    notes: dict[str, str] = {}
    for r in rows:
        key = (r["layout"], r["threads"])
        if last is not None and key != last:
            print("", file=out)
        last = key
        e = r.get("extra") or {}
        rate = f"{e['samples_s']:.0f}" if e.get("samples_s") else "-"
        mib = f"{r['mib_s']:.0f}" if r["mib_s"] else "-"
        ratio = f"x{r['ratio']:.2f}" if r["ratio"] else ""
        check = _status(r) + (f" {(r['error'] or '')[:80]}" if r["error"] else "")
        print(f"{r['layout']:9s} {r['threads']:3d} {e.get('samples', 0):7d}  {r['lib']:15s} "
              f"{rate:>10s} {mib:>7s} {_time(r['best_s']):>10s} {ratio:>6s}  {check}",
              file=out)
        if r.get("note"):
            notes.setdefault(f"{r['lib']} {r['layout']}", r["note"])
    if notes:
        print("\nhow each library read each batch:\n" + "\n".join(
            f"  {k}: {v}" for k, v in notes.items()), file=out)


def _over_threads(r: dict[str, Any]) -> bool:
    """Whether a library kept clearly more cores busy than the row's thread count (half
    a core of slack: the calling thread, the kernel's I/O, a collector)."""
    cores = (r.get("extra") or {}).get("cores")
    return cores is not None and cores > r["threads"] + 0.5


def _csv_row(r: dict[str, Any]) -> dict[str, Any]:
    row = {k: r.get(k) for k in CSV_FIELDS if k in r}
    row["repeats"] = len(r["times"])
    row["times"] = " ".join(f"{t:.6f}" for t in r["times"])
    for k in ("peak_extra_bytes", "peak_over_output", "within_target", "cores", "samples",
              "samples_s"):
        row[k] = r["extra"].get(k)
    return row


def write_files(report: dict[str, Any], out_dir: str, *, plot: bool = True) -> list[str]:
    """``bench.json``, ``bench.csv`` and, when matplotlib is installed, ``bench.png``."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    p = os.path.join(out_dir, "bench.json")
    with open(p, "w") as f:
        json.dump(report, f, indent=1, default=str)
    paths.append(p)
    p = os.path.join(out_dir, "bench.csv")
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in report["results"]:
            w.writerow(_csv_row(r))
    paths.append(p)
    if plot:
        p = os.path.join(out_dir, "bench.png")
        if _plot(report, p):
            paths.append(p)
    return paths


def _plot(report: dict[str, Any], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in report["results"] if r["mib_s"] and r["op"] != "memory"]
    if not rows:
        return False
    top = max(r["threads"] for r in rows)
    rows = [r for r in rows if r["threads"] == top]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    layouts = list(dict.fromkeys(r["layout"] for r in rows))
    libs = list(dict.fromkeys(r["lib"] for r in rows))
    fig, axes = plt.subplots(len(ops), 1, figsize=(max(8, 1.2 * len(layouts) * len(libs) / 3),
                                                   3.2 * len(ops)), squeeze=False)
    width = 0.8 / len(libs)
    for ax, op in zip(axes[:, 0], ops, strict=True):
        for i, lib in enumerate(libs):
            xs, ys = [], []
            for j, lay in enumerate(layouts):
                hit = [r for r in rows if r["op"] == op and r["lib"] == lib and r["layout"] == lay]
                if hit:
                    xs.append(j + i * width)
                    ys.append(hit[0]["mib_s"])
            if xs:
                ax.bar(xs, ys, width, label=lib)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(layouts))], layouts, fontsize=8)
        ax.set_ylabel("MiB/s")
        ax.set_title(f"{op}, {top} threads", fontsize=9)
        ax.legend(fontsize=7, ncol=min(len(libs), 3))
    m = report["machine"]
    fig.suptitle(f"zarrfast bench: {m['cpu']}, {m['cores_logical']} cores", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
