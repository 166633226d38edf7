"""Run zarr-python's own test suite with zarrfast's codec pipeline, and without it.

zarrs-python tests its pipeline this way: zarr-python's tests, which know nothing of the
pipeline, must pass with it wherever they pass with zarr-python's default one.  This tool
takes the tests from zarr-python's source distribution, runs the chosen files twice with
pytest in the given Python (one that has zarr-python and zarrfast installed):

- ``default``: as they are;
- ``zarrfast``: with ``ZARR_CODEC_PIPELINE__PATH=zarrfast.zarr_python.CodecPipeline``,
  so that every array zarr-python opens or creates uses zarrfast's pipeline,

and reports, for each file, the tests run, how many pass in each mode, and every test
that passes with the default pipeline and fails with zarrfast's (with its message).  It
exits with 1 when there is such a test::

    python tools/zarr_pipeline_tests.py /path/to/zarr-3.4.2.tar.gz \\
        --python /path/to/venv/bin/python [--files test_array.py test_codecs ...] [-n 2]

Get the source distribution (zarr 3.4 needs Python 3.12) with
``python3.12 -m pip download --no-binary :all: --no-deps zarr==3.4.2``; a directory
holding an unpacked one works too.  The default files are the ones the issue names:
test_array.py, test_group.py, test_indexing.py, test_api.py, test_codecs and
test_properties.py.  The tests run with zarr-python's own pytest settings (its
``pyproject.toml``: warnings are errors), less its ``addopts`` (pytest-benchmark's).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from _zarr_sdist import check_version, source_of  # (a module beside this tool)

PIPELINE = "zarrfast.zarr_python.CodecPipeline"
DEFAULT_FILES = ["test_array.py", "test_group.py", "test_indexing.py", "test_api.py",
                 "test_codecs", "test_properties.py"]


def unpack(source: Path, into: Path) -> Path:
    """The unpacked source distribution's root (``tests/`` and ``pyproject.toml``)."""
    root = source_of(source, str(into))
    if not (root / "tests").is_dir() or not (root / "pyproject.toml").is_file():
        raise SystemExit(f"{source}: no tests/ and pyproject.toml in it")
    return root


def run(python: str, root: Path, files: list[str], mode: str, workers: int,
        out: Path) -> dict[str, tuple[str, str]]:
    """Run the tests in one mode: test id -> (outcome, message)."""
    env = dict(os.environ)
    env.pop("ZARR_CODEC_PIPELINE__PATH", None)
    if mode == "zarrfast":
        env["ZARR_CODEC_PIPELINE__PATH"] = PIPELINE
    xml = out / f"{mode}.xml"
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           f"--junitxml={xml}", *([f"-n{workers}"] if workers > 1 else []),
           *[f"tests/{f}" for f in files]]
    print(f"[{mode}] {' '.join(cmd)}", flush=True)
    with open(out / f"{mode}.log", "w") as log:
        subprocess.run(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                       check=False)
    if not xml.exists():
        raise SystemExit(f"[{mode}] pytest wrote no report: see {out / f'{mode}.log'}")
    return outcomes(xml)


def outcomes(xml: Path) -> dict[str, tuple[str, str]]:
    results: dict[str, tuple[str, str]] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = "skipped" if kind == "skipped" else "failed"
                message = (found.get("message") or "").strip().splitlines()[0:1]
                message = message[0][:200] if message else ""
                break
        results[name] = (outcome, message)
    return results


def module_of(test: str) -> str:
    parts = test.split("::")[0].split(".")
    return next((p for p in parts if p.startswith("test_")), parts[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="zarr-python's sdist (.tar.gz) or its "
                        "unpacked directory")
    parser.add_argument("--python", default=sys.executable,
                        help="a Python with zarr-python, zarrfast, pytest, pytest-asyncio "
                        "and hypothesis (default: this one)")
    parser.add_argument("--files", nargs="+", default=DEFAULT_FILES,
                        help="test files or directories under tests/")
    parser.add_argument("-n", type=int, default=2, help="pytest-xdist workers (default 2)")
    parser.add_argument("--keep", type=Path, help="keep the logs and reports here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = unpack(args.source.resolve(), work)
        check_version(root, args.python)
        out = args.keep.resolve() if args.keep else work
        out.mkdir(parents=True, exist_ok=True)
        version = subprocess.run(
            [args.python, "-c", "import zarr, zarrfast; print(zarr.__version__, "
             "zarrfast.__version__)"], capture_output=True, text=True, check=True)
        print(f"zarr-python and zarrfast: {version.stdout.strip()}")
        default = run(args.python, root, args.files, "default", args.n, out)
        ours = run(args.python, root, args.files, "zarrfast", args.n, out)
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    print(f"\n{'file':32} {'tests':>6} {'default':>8} {'zarrfast':>9} {'regressed':>9}")
    per: dict[str, Counter] = {}
    regressed = []
    for test in sorted(set(default) | set(ours)):
        c = per.setdefault(module_of(test), Counter())
        c["tests"] += 1
        d = default.get(test, ("missing", ""))[0]
        z = ours.get(test, ("missing", ""))[0]
        c["default"] += d == "passed"
        c["zarrfast"] += z == "passed"
        if d == "passed" and z != "passed":
            c["regressed"] += 1
            regressed.append((test, ours.get(test, ("missing", ""))[1]))
    total: Counter = Counter()
    for name, c in sorted(per.items()):
        total.update(c)
        print(f"{name:32} {c['tests']:6} {c['default']:8} {c['zarrfast']:9} "
              f"{c['regressed']:9}")
    print(f"{'all':32} {total['tests']:6} {total['default']:8} {total['zarrfast']:9} "
          f"{total['regressed']:9}")
    if regressed:
        print("\npass with zarr-python's default pipeline, fail with zarrfast's:")
        reasons = Counter(re.sub(r"\d+", "N", msg)[:120] for _, msg in regressed)
        for test, msg in regressed[:50]:
            print(f"  {test}: {msg}")
        print("\nmost common reasons:")
        for msg, n in reasons.most_common(10):
            print(f"  {n:5}  {msg}")
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
