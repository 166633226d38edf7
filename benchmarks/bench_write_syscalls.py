"""System calls of one full write, per library: a count that does not depend on the load.

On a shared machine the wall time of a write mostly measures the other processes; the
system calls a library makes to store the same array do not.  For each library and
layout this runs one warm-up write (pools started, modules imported), then one more
write of the whole array into a fresh dataset under ``strace -f`` and counts the
calls of that write alone (between two marker ``stat`` calls), with their errors.

    python benchmarks/bench_write_syscalls.py --libs zarrfast,zarrista --layouts raw

Needs ``strace``.  Each library is run in a child process (PYTHONPATH as given, so
``--tree`` picks zarrfast's source tree); the layouts are the harness's
(``zarrfast.cli bench --help``), the small-file ones 4096 x 4096 uint16, the others
320 x 640 x 640 uint16.  The child's own Python (its ``stat`` of the template, the copy
of the metadata) is counted too: the same few calls for every library.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

_CHILD = r"""
import os, shutil, sys
from zarrfast.bench import data as D, libs as L
lib_name, layout, threads, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
lay = D.LAYOUTS[layout]
shape = (4096, 4096) if lay.kind == "small" else (320, 640, 640)
tmpl = os.path.join(work, f"template-{layout}.zarr")
if not os.path.exists(tmpl):
    D.create_template(lay, shape, tmpl)
src = D.values(tuple(slice(0, n) for n in shape))
lib = L.get_lib(lib_name)
with lib.session(threads):
    for r in range(2):
        target = os.path.join(work, f"{lib_name}-{layout}-{r}.zarr")
        shutil.rmtree(target, ignore_errors=True)
        if r:
            try: os.stat("/.zarrfast-syscalls-begin")
            except OSError: pass
        D.fresh_from_template(tmpl, target)
        lib.write(lib.open(target, write=True), Ellipsis, src)
        if r:
            try: os.stat("/.zarrfast-syscalls-end")
            except OSError: pass
"""

_CALL = re.compile(r"\d+\s+(\w+)\(")


def count(trace: str) -> tuple[collections.Counter, collections.Counter]:
    """The calls between the markers of a ``strace -f`` output, and their errors."""
    calls: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    on = False
    with open(trace) as f:
        for line in f:
            if "zarrfast-syscalls-begin" in line:
                on = True
                continue
            if "zarrfast-syscalls-end" in line:
                break
            m = _CALL.match(line) if on else None
            if m is None:  # (a "<... resumed>" line: counted where it started)
                continue
            calls[m.group(1)] += 1
            if " = -1 E" in line:
                errors[m.group(1)] += 1
    return calls, errors


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--libs", default="zarrfast,zarrista,zarr+zarrs")
    p.add_argument("--layouts", default="raw,small-files")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tree", default=None, help="zarrfast source tree (PYTHONPATH)")
    p.add_argument("--top", type=int, default=8, help="system calls listed per write")
    args = p.parse_args()
    env = dict(os.environ)
    if args.tree:
        env["PYTHONPATH"] = args.tree
    with tempfile.TemporaryDirectory(prefix="zf-syscalls-") as work:
        for layout in args.layouts.split(","):
            for lib in args.libs.split(","):
                trace = os.path.join(work, "trace")
                subprocess.run(["strace", "-f", "-o", trace, sys.executable, "-c", _CHILD,
                                lib, layout, str(args.threads), work], env=env, check=True)
                calls, errors = count(trace)
                files = sum(1 for _, _, names in os.walk(
                    os.path.join(work, f"{lib}-{layout}-1.zarr")) for _ in names)
                total = sum(calls.values())
                top = ", ".join(f"{k} {v}" + (f" ({errors[k]} failed)" if errors[k] else "")
                                for k, v in calls.most_common(args.top))
                print(f"{layout:14s} {lib:12s} {total:7d} calls, {files} files "
                      f"({total / max(files, 1):.2f} per file): {top}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
