"""Run the zarr tests of dask.array, anndata, ome-zarr and spatialdata against zarrfast.

Usage::

    python tools/library_tests.py [--sdists /work/sdists] [--python /work/venv-libs/bin/python]
        [--python-for LIB=PYTHON] [--libs dask,anndata,ome-zarr,spatialdata]
        [--modes zarr,pipeline,alias]
        [--out /tmp/library-tests] [--report-only] [--list-failures] [-k EXPR]

The tests come from the libraries' source distributions, unpacked in ``--sdists`` (a
``.tar.gz`` found there and not unpacked yet is unpacked beside itself); get them with a
Python 3.12 pip, outside this repository::

    pip download --no-binary :all: --no-deps dask==V anndata==V ome-zarr==V spatialdata==V \\
        -d /work/sdists

``--python`` is a Python 3.12 environment of its own holding the same versions of the
libraries, their test dependencies, zarr-python 3.4.2 and zarrfast
(``pip install --no-build-isolation -e .``); never the project's test environments.  The
libraries' files are never edited.  Where one library's release needs other versions of
the others than the rest do, ``--python-for LIB=PYTHON`` (repeatable) runs that library
with its own environment.  On 2026-12-07 spatialdata 0.7.0 needed one of its own: with
anndata 0.13 its test module stops at collection (anndata 0.13 lists ``X`` as
``layers[None]``, and spatialdata's key check calls ``None.lower()``), so it ran with
anndata 0.12.19 and pandas 2.3.3; and its dependency xarray-schema imports
``pkg_resources``, gone from setuptools 81 (so ``setuptools<81`` in both environments).

"The zarr tests" of each library, run with pytest from the unpacked distribution's root:

``dask``
    ``dask/array/tests/test_array_core.py -k zarr`` (every test of dask.array's core
    tests that names zarr: ``to_zarr``, ``from_zarr``, the zarr-backed stores), without
    fast-array-utils' pytest plugin.
``anndata``
    ``tests/test_readwrite.py``, ``tests/test_io_*.py``, ``tests/test_concatenate_disk.py``
    and ``tests/lazy``, ``-k zarr`` (anndata runs its I/O tests for both h5ad and zarr;
    ``-k zarr`` keeps the zarr side).
``ome-zarr``
    ``tests`` (all of ome-zarr's tests: everything it does is zarr).
``spatialdata``
    ``tests/io`` (spatialdata's I/O tests: reading and writing its zarr stores).

Three modes, each a pytest process per library:

``zarr``
    plain zarr-python.
``pipeline``
    zarr-python with zarrfast's codec pipeline
    (``ZARR_CODEC_PIPELINE__PATH=zarrfast.zarr_python.CodecPipeline``); skipped, and
    said so, while ``zarrfast.zarr_python`` has no ``CodecPipeline``.
``alias``
    ``zarr`` is zarrfast: a ``sitecustomize.py`` written to a temporary directory (put
    first on ``PYTHONPATH``) calls :func:`zarrfast.install_as_zarr` when each Python
    process starts, before pytest, its plugins and the libraries import anything.

``--alias-prelude FILE`` adds FILE's code to that ``sitecustomize.py``, run after
:func:`zarrfast.install_as_zarr`: a way to try a change to zarrfast (a monkeypatch) on the
libraries before making it; numbers measured so are not zarrfast's.

Each run leaves a JUnit XML file per library and mode in ``--out``; the report is made from
those files (``--report-only`` makes it without running anything), so modes can be run one
at a time.  It gives, per library, the tests run and how many passed in each mode, how many
of those that pass with zarr-python fail in the mode, and the most common failure reasons
of each mode (the first line of the error, numbers and addresses blanked).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: library -> (sdist name prefix, pytest arguments relative to the unpacked root)
LIBRARIES: dict[str, tuple[str, tuple[str, ...]]] = {
    # (fast-array-utils' pytest plugin, there for anndata, imports dask.array.utils before
    # dask's conftest asks pytest to rewrite its asserts: an error under dask's settings)
    "dask": ("dask-", ("dask/array/tests/test_array_core.py", "-k", "zarr",
                       "-p", "no:fast_array_utils")),
    "anndata": ("anndata-", ("tests/test_readwrite.py", "tests/test_io_backwards_compat.py",
                             "tests/test_io_conversion.py", "tests/test_io_dispatched.py",
                             "tests/test_io_elementwise.py", "tests/test_io_partial.py",
                             "tests/test_io_utils.py", "tests/test_io_warnings.py",
                             "tests/test_concatenate_disk.py", "tests/lazy", "-k", "zarr")),
    "ome-zarr": ("ome_zarr-", ("tests",)),
    "spatialdata": ("spatialdata-", ("tests/io",)),
}

MODES = ("zarr", "pipeline", "alias")

PIPELINE_PATH = "zarrfast.zarr_python.CodecPipeline"

SITECUSTOMIZE = '''\
"""Written by tools/library_tests.py: ``zarr`` is zarrfast in this process."""
import zarrfast

zarrfast.install_as_zarr()
'''


def find_root(sdists: Path, prefix: str) -> Path:
    """The unpacked source distribution of a library (unpacking its archive if needed)."""
    dirs = sorted(p for p in sdists.glob(prefix + "*") if p.is_dir())
    if not dirs:
        archives = sorted(sdists.glob(prefix + "*.tar.gz"))
        if not archives:
            raise SystemExit(f"no {prefix}*.tar.gz or {prefix}* directory in {sdists}")
        with tarfile.open(archives[-1]) as tar:
            tar.extractall(sdists, filter="data")
        dirs = sorted(p for p in sdists.glob(prefix + "*") if p.is_dir())
    return dirs[-1]


def has_pipeline(python: str) -> bool:
    """Whether ``zarrfast.zarr_python.CodecPipeline`` exists in that environment."""
    code = "import zarrfast.zarr_python as m; assert hasattr(m, 'CodecPipeline')"
    return subprocess.run([python, "-c", code], capture_output=True).returncode == 0


def has_module(python: str, module: str) -> bool:
    """Whether ``module`` imports in that environment."""
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def run(lib: str, mode: str, root: Path, python: str, out: Path, kexpr: str | None,
        timeout: int | None, prelude: str = "") -> float:
    """Run one library's tests in one mode; the JUnit XML goes to ``out``."""
    args = list(LIBRARIES[lib][1])
    if kexpr:
        if "-k" in args:
            i = args.index("-k")
            args[i + 1] = f"({args[i + 1]}) and ({kexpr})"
        else:
            args += ["-k", kexpr]
    xml = out / f"{lib}-{mode}.xml"
    env = dict(os.environ)
    env.pop("ZARR_CODEC_PIPELINE__PATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="zarrfast-libtests-") as tmp:
        if mode == "pipeline":
            env["ZARR_CODEC_PIPELINE__PATH"] = PIPELINE_PATH
        extra: list[str] = []
        if mode == "alias":
            Path(tmp, "sitecustomize.py").write_text(SITECUSTOMIZE + prelude)
            env["PYTHONPATH"] = os.pathsep.join(
                [tmp] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            # zarr-python, installed beside, registers a pytest plugin: pytest then asks to
            # rewrite the asserts of ``zarr``, already imported (as zarrfast), and warns;
            # dask's settings make that warning an error
            extra = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        if timeout:  # (pytest-timeout's option)
            extra.append(f"--timeout={timeout}")
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
               f"--junitxml={xml}", "-o", "junit_family=xunit1", *extra, *args]
        log = out / f"{lib}-{mode}.log"
        start = time.monotonic()
        with open(log, "w") as fh:
            subprocess.run(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
        return time.monotonic() - start


@dataclass
class Result:
    """The outcome of one library's tests in one mode."""

    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> outcome
    reasons: dict[str, str] = field(default_factory=dict)  # failed test id -> reason

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)


_BLANK = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"(/[\w.@+-]+)+"), "<path>"),
    (re.compile(r"\b\d+\b"), "N"),
    (re.compile(r"memory://\S+"), "memory://…"),
)


def reason(text: str) -> str:
    """The first meaningful line of an error, numbers and addresses blanked."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "?")
    for pattern, repl in _BLANK:
        line = pattern.sub(repl, line)
    return line[:160]


def parse(xml: Path) -> Result | None:
    """Read one JUnit XML file."""
    if not xml.is_file():
        return None
    try:
        tree = ET.parse(xml)
    except ET.ParseError:
        return None
    res = Result()
    for case in tree.iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = child.get("message") or ""
                if message in ("", "collection failure"):  # the traceback's last E line
                    e_lines = [ln[1:] for ln in (child.text or "").splitlines()
                               if ln.startswith("E ")]
                    message = (message + ": " if message else "") + (
                        e_lines[-1] if e_lines else (child.text or ""))
                res.reasons[tid] = reason(message)
                break
            if child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        if tid in res.outcomes and res.outcomes[tid] != "passed":
            continue  # a teardown error after a pass: keep the worse one seen first
        res.outcomes[tid] = outcome
    return res


def report(out: Path, libs: list[str], list_failures: bool, top: int) -> str:
    """The table of the libraries, and the most common failure reasons per mode."""
    lines = ["| library | tests | pass zarr-python | pass pipeline | pass alias |",
             "| --- | ---: | ---: | ---: | ---: |"]
    details: list[str] = []
    totals = collections.Counter()
    for lib in libs:
        results = {mode: parse(out / f"{lib}-{mode}.xml") for mode in MODES}
        base = results["zarr"]
        ntests = len(base.outcomes) if base else max(
            (len(r.outcomes) for r in results.values() if r), default=0)
        cells = [lib, str(ntests)]
        totals["tests"] += ntests
        base_pass = {t for t, o in base.outcomes.items() if o == "passed"} if base else set()
        for mode in MODES:
            r = results[mode]
            if r is None:
                log = out / f"{lib}-{mode}.log"
                if not log.is_file():
                    cells.append("not run")
                    continue
                # pytest stopped before running anything (a conftest that did not import)
                e_lines = [ln[1:] for ln in log.read_text(errors="replace").splitlines()
                           if ln.startswith("E ")]
                cells.append("0 (pytest stopped)")
                details.append(f"\n{lib} / {mode}: pytest stopped before running tests: "
                               f"{reason(e_lines[-1] if e_lines else '?')}")
                continue
            passed = {t for t, o in r.outcomes.items() if o == "passed"}
            cell = str(len(passed))
            totals[mode] += len(passed)
            if mode != "zarr" and base:
                lost = base_pass - passed
                cell += f" ({len(lost)} lost)"
            cells.append(cell)
            failed = [t for t, o in r.outcomes.items() if o in ("failed", "error")]
            if failed:
                details.append(f"\n{lib} / {mode}: {len(failed)} failed or errored, "
                               f"{r.count('skipped')} skipped")
                common = collections.Counter(r.reasons[t] for t in failed)
                for text, n in common.most_common(top):
                    details.append(f"  {n:5d}  {text}")
                if list_failures:
                    details.extend(f"    {t}: {r.reasons[t]}" for t in sorted(failed))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"| all | {totals['tests']} | {totals['zarr']} | {totals['pipeline']} | "
                 f"{totals['alias']} |")
    return "\n".join(lines + details)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sdists", type=Path, default=Path("/work/sdists"))
    parser.add_argument("--python", default="/work/venv-libs/bin/python")
    parser.add_argument("--python-for", action="append", default=[], metavar="LIB=PYTHON",
                        help="the Python environment of one library (repeatable); the "
                             "others use --python")
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir(), "library-tests"))
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--list-failures", action="store_true")
    parser.add_argument("--top", type=int, default=8, help="failure reasons shown per mode")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds per test (with pytest-timeout installed there)")
    parser.add_argument("-k", dest="kexpr", default=None)
    parser.add_argument("--alias-prelude", type=Path, default=None,
                        help="Python run in each process after install_as_zarr (alias mode): "
                             "to try a change to zarrfast before making it")
    ns = parser.parse_args(argv)
    libs = [lib for lib in ns.libs.split(",") if lib]
    modes = [mode for mode in ns.modes.split(",") if mode]
    for name in libs:
        if name not in LIBRARIES:
            parser.error(f"unknown library {name!r}; known: {', '.join(LIBRARIES)}")
    for name in modes:
        if name not in MODES:
            parser.error(f"unknown mode {name!r}; known: {', '.join(MODES)}")
    pythons = {lib: ns.python for lib in libs}
    for item in ns.python_for:
        name, sep, python = item.partition("=")
        if not sep or not python:
            parser.error(f"--python-for {item!r}: expected LIB=PYTHON")
        if name not in LIBRARIES:
            parser.error(f"--python-for {item!r}: unknown library {name!r}; known: "
                         f"{', '.join(LIBRARIES)}")
        pythons[name] = python
    ns.out.mkdir(parents=True, exist_ok=True)
    if not ns.report_only:
        for lib in libs:
            python = pythons[lib]
            lib_modes = list(modes)
            if "pipeline" in lib_modes and not has_pipeline(python):
                print(f"{lib}: pipeline mode skipped: {PIPELINE_PATH} does not exist in "
                      f"{python}", file=sys.stderr)
                lib_modes.remove("pipeline")
            timeout = ns.timeout if has_module(python, "pytest_timeout") else None
            root = find_root(ns.sdists, LIBRARIES[lib][0])
            for mode in lib_modes:
                prelude = ns.alias_prelude.read_text() if ns.alias_prelude else ""
                secs = run(lib, mode, root, python, ns.out, ns.kexpr, timeout,
                           "\n" + prelude)
                print(f"{lib} / {mode}: {secs:.0f} s ({root.name}, {python})",
                      file=sys.stderr)
    print(report(ns.out, libs, ns.list_failures, ns.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
