"""Run xarray's own zarr backend tests against zarrfast, as a judge of the xarray integration.

Usage::

    python tools/xarray_backend_judge.py /tmp/xr-tests/xarray-2026.9.0 [--side read|write|both]
        [--list-failures] [-k EXPR] [--select NODEID_PREFIX ...]

The first argument is an unpacked xarray source distribution (the directory holding
``xarray/tests/test_backends.py``), or that ``tests`` directory itself; get one with
``pip download xarray==<version> --no-deps --no-binary :all:`` and keep it outside this
repository.  xarray's files are never edited: a pytest plugin written into a temporary
directory patches xarray while the tests run.

Two sides are run, each in its own pytest process:

``read``
    every dataset open that would use xarray's ``zarr`` engine (``engine="zarr"``,
    ``xr.open_zarr``, a guessed engine) uses :class:`zarrfast.xarray.ZarrfastBackendEntrypoint`;
    writes still go through zarr-python.
``write``
    as ``read``, and also every ``Dataset.to_zarr`` / ``DataArray.to_zarr`` write goes
    through :func:`zarrfast.xarray.to_zarr` (xarray has no ``engine=`` for ``to_zarr``, so
    ``xarray.backends.writers.to_zarr`` is replaced).

By default the test classes run are ``TestZarrDirectoryStore`` and ``TestZarrWriteEmpty``
(its subclass) with both values of the ``default_zarr_format`` parametrisation, plus
``TestZarrRegionAuto`` (``--select`` replaces that list; ``--extended`` adds the other zarr
tests).  pytest imports the tests as ``xarray.tests`` from the source distribution, so the
``xarray`` package of that distribution (pure Python, of the version named) is the one that
runs; use the version installed in the environment.  For each side the tool prints
the counts of passed, failed, errored and skipped tests, and with ``--list-failures`` the
failing test ids with the last line of their error.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

DEFAULT_SELECT = (
    "test_backends.py::TestZarrDirectoryStore",
    "test_backends.py::TestZarrWriteEmpty",
    "test_backends.py::TestZarrRegionAuto",
)

#: with ``--extended``: the other zarr tests of test_backends.py (zarr-python stores given
#: directly, DataArray writes, the entry point, NCZarr, rectilinear chunks)
EXTENDED_SELECT = (
    "test_backends.py::TestZarrDictStore",
    "test_backends.py::TestZarrNoConsolidatedMetadataSupport",
    "test_backends.py::TestDataArrayToZarr",
    "test_backends.py::TestZarrRectilinearChunksRead",
    "test_backends.py::TestNCZarr",
    "test_backends.py::test_roundtrip_stringdtype_zarr_v3",
    "test_backends.py::test_open_dataset_chunking_zarr",
    "test_backends.py::test_zarr_entrypoint",
    "test_backends.py::test_zarr_closing_internal_zip_store",
    "test_backends.py::test_zarr_create_default_indexes",
    "test_backends.py::test_raises_key_error_on_invalid_zarr_store",
)

#: the pytest plugin, written to a temporary directory and loaded with ``-p``
PLUGIN = textwrap.dedent('''
    """Sends xarray's zarr engine to zarrfast (written by tools/xarray_backend_judge.py)."""
    import os

    import pytest

    SIDE = os.environ["ZARRFAST_JUDGE_SIDE"]


    def _zarr_default_format():
        import zarr

        return zarr.config.get("default_zarr_format")


    @pytest.fixture(autouse=True)
    def _zarrfast_judge_patch(monkeypatch):
        from xarray.backends import plugins, writers

        from zarrfast.xarray import ZarrfastBackendEntrypoint, to_zarr

        real_get_backend = plugins.get_backend

        def get_backend(engine):
            if engine == "zarr":
                return ZarrfastBackendEntrypoint()
            return real_get_backend(engine)

        monkeypatch.setattr(plugins, "get_backend", get_backend)

        if SIDE == "write":
            def to_zarr_shim(dataset, store=None, *args, zarr_format=None, **kwargs):
                if zarr_format is None:  # xarray takes zarr-python's configured default
                    zarr_format = _zarr_default_format()
                return to_zarr(dataset, store, *args, zarr_format=zarr_format, **kwargs)

            monkeypatch.setattr(writers, "to_zarr", to_zarr_shim)
        yield
''')

_OUTCOME = re.compile(r"^(?:\S*/)?(?P<id>\S+::\S+) (?P<outcome>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
_SHORT = re.compile(r"^(?P<outcome>FAILED|ERROR) (?:\S*/)?(?P<id>\S+::\S+)(?: - (?P<msg>.*))?$")


def _tests_dir(path: Path) -> Path:
    for candidate in (path, path / "tests", path / "xarray" / "tests"):
        if (candidate / "test_backends.py").is_file():
            return candidate
    raise SystemExit(f"no test_backends.py in {path} (nor in its tests/ or xarray/tests/)")


def run_side(tests: Path, side: str, select: list[str], kexpr: str | None,
             extra: list[str]) -> dict[str, object]:
    """Run one side in a pytest subprocess; the counts and the failures."""
    with tempfile.TemporaryDirectory(prefix="zarrfast-judge-") as tmp:
        Path(tmp, "zarrfast_judge_plugin.py").write_text(PLUGIN)
        env = dict(os.environ)
        env["ZARRFAST_JUDGE_SIDE"] = side
        env["PYTHONPATH"] = os.pathsep.join(
            [tmp, str(REPO), *filter(None, [env.get("PYTHONPATH")])])
        cmd = [sys.executable, "-m", "pytest", *select,
               "-p", "zarrfast_judge_plugin", "-p", "no:cacheprovider", "-rfE", "-v",
               "--tb=line", "-o", "addopts=", "-W", "ignore::DeprecationWarning",
               f"--rootdir={tests}"]
        if kexpr:
            cmd += ["-k", kexpr]
        cmd += extra
        proc = subprocess.run(cmd, cwd=tests, env=env, capture_output=True, text=True)
    counts = {k: 0 for k in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")}
    failures: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        m = _OUTCOME.match(line)
        if m:
            counts[m["outcome"]] += 1
            continue
        m = _SHORT.match(line)
        if m:
            failures[m["id"]] = f"{m['outcome']}: {m['msg'] or ''}"
    if not any(counts.values()):
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"pytest collected nothing for side {side!r} (exit {proc.returncode})")
    return {"counts": counts, "failures": failures}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("xarray_source", type=Path,
                   help="unpacked xarray sdist, or its xarray/tests directory")
    p.add_argument("--side", choices=("read", "write", "both"), default="both")
    p.add_argument("--list-failures", action="store_true")
    p.add_argument("-k", dest="kexpr", default=None, help="pytest -k expression")
    p.add_argument("--select", nargs="+", default=None,
                   help="test ids relative to the tests directory (replaces the default)")
    p.add_argument("--extended", action="store_true",
                   help="also run the other zarr tests of test_backends.py")
    p.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = p.parse_args(argv)
    tests = _tests_dir(args.xarray_source.resolve())
    select = list(args.select or DEFAULT_SELECT)
    if args.extended:
        select += EXTENDED_SELECT
    sides = ("read", "write") if args.side == "both" else (args.side,)
    for side in sides:
        result = run_side(tests, side, select, args.kexpr, args.pytest_args)
        c = result["counts"]
        ran = c["PASSED"] + c["FAILED"] + c["ERROR"]
        print(f"{side}: {c['PASSED']} passed of {ran} run, {c['FAILED']} failed, "
              f"{c['ERROR']} errors, {c['SKIPPED']} skipped, {c['XFAIL']} xfailed, "
              f"{c['XPASS']} xpassed")
        if args.list_failures:
            for test_id, msg in sorted(result["failures"].items()):
                print(f"  {test_id}  {msg[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
