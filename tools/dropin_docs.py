"""Run zarr-python's user guide with zarr-python and with zarrfast, block by block.

Every ``python exec="true"`` block of ``docs/**/*.md`` in zarr-python's source (its
source distribution, which ships ``docs/``, or a checkout) is run in its page's session
(one fresh interpreter per session, in an empty directory), once with zarr-python and once
with zarrfast standing in for the ``zarr`` package: by default as users put it there, with
``zarrfast.install_as_zarr()`` (``zarr.__version__`` is the zarr-python version zarrfast
follows; ``zarr.storage`` and ``zarr.buffer`` are zarrfast's modules for them); with
``--alias modules``, every ``zarr`` and ``zarr.<sub>`` import resolves to ``zarrfast`` and
``zarrfast.<sub>``. Nothing of zarr-python is importable then. Then it reports how many
blocks that run with zarr-python also run with zarrfast, and how many print the same::

    python tools/dropin_docs.py /path/to/zarr-3.4.2 [--show-diff] [--only arrays.md]

Each session runs twice with zarr-python (``--no-second-run``: once): a block whose
output differs between those two runs (timings, random data) is counted as varying, and
compared on what does not vary: when the two runs differ only in numbers, zarrfast's
output must have the same text, and the numbers both runs printed alike (a varying block
whose runs differ in more than numbers is not compared). Memory store ids and object
addresses are masked. Blocks indented inside a list are run too (dedented). The
zarr-python run needs ``zarr`` importable by the same interpreter, and the version of the
source should be the version installed (the tool warns when they differ). zarrfast
follows zarr-python 3.4.2, on Python 3.12 (the version the 3.4.2 guide needs)::

    cd /work/sdists && python3.12 -m pip download --no-binary :all: --no-deps zarr==3.4.2
    tar xzf zarr-3.4.2.tar.gz
    /work/venv312/bin/python tools/dropin_docs.py /work/sdists/zarr-3.4.2

A ``.tar.gz`` source distribution may be given instead of the unpacked folder; it is then
unpacked into a temporary folder.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _zarr_sdist import check_version, source_of  # (a module beside this tool)

#: what differs from run to run in any implementation: a memory store's id and an object's
#: address (``memory://140...``, ``<... object at 0x7f...>``)
ADDRESS = re.compile(r"(?<=memory://)\d+|(?<= at )0x[0-9a-f]+")


def _unaddressed(text: str) -> str:
    return ADDRESS.sub("<address>", text)


#: a number as printed (``3``, ``-0.25``, ``1.5e-05``, ``.5``)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def same_but_varying(ref: str, again: str, got: str) -> bool | None:
    """Whether ``got`` prints as ``ref`` but for the numbers that differ between zarr-python's
    two runs ``ref`` and ``again`` (timings, random values), and addresses; ``None`` when
    the two runs differ in more than numbers (their text cannot be lined up)."""
    ref, again, got = _unaddressed(ref), _unaddressed(again), _unaddressed(got)
    if NUMBER.split(ref) != NUMBER.split(again):
        return None
    if NUMBER.split(got) != NUMBER.split(ref):
        return False
    numbers = zip(NUMBER.findall(ref), NUMBER.findall(again), NUMBER.findall(got), strict=True)
    return all(r != r2 or g == r for r, r2, g in numbers)


#: a fence, at the start of a line or indented (inside a list), to its closing fence
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python(?P<opts>[^\n]*)\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


def blocks_of(page: Path) -> dict[str, list[str]]:
    """The executable blocks of one page, grouped by session, in order."""
    sessions: dict[str, list[str]] = {}
    for match in FENCE.finditer(page.read_text(encoding="utf-8")):
        opts = match["opts"]
        if 'exec="true"' not in opts:
            continue
        session = re.search(r'session="([^"]+)"', opts)
        code = textwrap.dedent(match["code"])
        sessions.setdefault(session[1] if session else "_default", []).append(code)
    return sessions


CHILD = r'''
import contextlib, importlib, importlib.abc, importlib.util, io, json, sys, traceback

mode, blocks = sys.argv[1], json.load(sys.stdin)
if mode == "install":
    import zarrfast

    zarrfast.install_as_zarr()
elif mode == "zarrfast":
    import zarrfast

    class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        """zarr -> zarrfast, zarr.x.y -> zarrfast.x.y (the same module objects)."""

        def find_spec(self, name, path=None, target=None):
            if name == "zarr" or name.startswith("zarr."):
                return importlib.util.spec_from_loader(name, self)
            return None

        def create_module(self, spec):
            return importlib.import_module("zarrfast" + spec.name[len("zarr"):])

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Alias())
results = []
namespace = {"__name__": "__main__"}
for code in blocks:
    out = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<block>", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - report every failure of a block
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    results.append({"out": out.getvalue(), "error": error})
json.dump(results, sys.__stdout__)
'''


def run_session(blocks: list[str], mode: str, timeout: float) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="dropin-docs-") as cwd:
        env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="100")
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, mode], input=json.dumps(blocks),
                                  capture_output=True, text=True, cwd=cwd, env=env,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return [{"out": "", "error": f"session timed out after {timeout} s"}] * len(blocks)
        try:
            return json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
            return [{"out": "", "error": f"interpreter died: {tail[0]}"}] * len(blocks)


def _show_diff(code: str, ref: str, got: str) -> None:
    print("    | " + code.strip().replace("\n", "\n    | "))
    for line in difflib.unified_diff(ref.splitlines(), got.splitlines(), "zarr", "zarrfast",
                                     lineterm="", n=1):
        print("    " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path,
                        help="zarr-python's source: an unpacked sdist (or checkout) or .tar.gz")
    parser.add_argument("--only", action="append", default=[],
                        help="run only pages whose path ends with this (repeatable)")
    parser.add_argument("--show-diff", action="store_true",
                        help="print each differing block's outputs")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-second-run", action="store_true",
                        help="run each session once with zarr-python, not twice")
    parser.add_argument("--alias", choices=("install", "modules"), default="install",
                        help="how zarrfast becomes zarr: zarrfast.install_as_zarr() (the "
                             "default), or every zarr.<sub> as zarrfast.<sub>")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dropin-docs-src-") as unpack_to:
        args.checkout = source_of(args.checkout, unpack_to)
        check_version(args.checkout)
        return report(args)


def report(args: argparse.Namespace) -> int:
    pages = sorted((args.checkout / "docs").rglob("*.md"))
    if args.only:
        pages = [p for p in pages if any(str(p).endswith(o) for o in args.only)]
    totals = {"blocks": 0, "zarr_ok": 0, "zarrfast_ok": 0, "same": 0, "addresses": 0,
              "varies": 0, "varies_alike": 0}
    for page in pages:
        for session, blocks in blocks_of(page).items():
            ref = run_session(blocks, "zarr", args.timeout)
            # a second zarr-python run finds the blocks whose output varies from run to run
            # (timings, random data): their output is not compared
            again = ref if args.no_second_run else run_session(blocks, "zarr", args.timeout)
            got = run_session(blocks, "install" if args.alias == "install" else "zarrfast",
                              args.timeout)
            name = f"{page.relative_to(args.checkout)}:{session}"
            counts = {"ok": 0, "runs": 0, "same": 0}
            for i, (code, r, r2, g) in enumerate(zip(blocks, ref, again, got, strict=True)):
                totals["blocks"] += 1
                if r["error"]:
                    continue
                counts["ok"] += 1
                if g["error"]:
                    print(f"  FAIL {name} block {i}: {g['error'].splitlines()[-1][:160]}")
                    if args.show_diff:
                        print("    | " + code.strip().replace("\n", "\n    | "))
                    continue
                counts["runs"] += 1
                if r["out"] == g["out"]:
                    counts["same"] += 1
                    continue
                if _unaddressed(r["out"]) != _unaddressed(r2["out"]):
                    totals["varies"] += 1
                    alike = same_but_varying(r["out"], r2["out"], g["out"])
                    if alike:
                        totals["varies_alike"] += 1
                    what = {True: "the same but for the numbers that vary",
                            False: "and zarrfast's differs in more than those numbers",
                            None: "in more than numbers: not compared"}[alike]
                    print(f"  VARIES {name} block {i} (zarr-python prints something else "
                          f"each run; {what})")
                    if alike is False and args.show_diff:
                        _show_diff(code, r["out"], g["out"])
                    continue
                if _unaddressed(r["out"]) == _unaddressed(g["out"]):
                    totals["addresses"] += 1
                    print(f"  DIFF {name} block {i} (store ids / object addresses only)")
                    continue
                print(f"  DIFF {name} block {i}")
                if args.show_diff:
                    _show_diff(code, r["out"], g["out"])
            print(f"{name}: {counts['ok']} run with zarr, {counts['runs']} with zarrfast, "
                  f"{counts['same']} print the same", flush=True)
            totals["zarr_ok"] += counts["ok"]
            totals["zarrfast_ok"] += counts["runs"]
            totals["same"] += counts["same"]
    print(f"\nblocks: {totals['blocks']}; run with zarr-python: {totals['zarr_ok']}; "
          f"run with zarrfast: {totals['zarrfast_ok']}; print the same: {totals['same']}; "
          f"the same but for store ids and object addresses: {totals['addresses']}; "
          f"output that varies from run to run with zarr-python itself: {totals['varies']} "
          f"(of which the same but for the numbers that vary: {totals['varies_alike']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
