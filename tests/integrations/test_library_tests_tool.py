"""tools/library_tests.py runs a library's zarr tests in each mode and tabulates them: run on
a small stand-in for a library's source distribution, in this test environment."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "library_tests.py"

STAND_IN = textwrap.dedent('''
    import importlib

    import zarr


    def test_plain():
        assert zarr.Array is not None


    def test_alias_version():
        assert zarr.__version__ == "3.4.2"
        importlib.import_module("zarr.abc.store")


    def test_is_zarrfast():
        assert hasattr(zarr, "install_as_zarr"), "not zarrfast"
''')


def test_modes_and_table(tmp_path):
    pytest.importorskip("zarr")  # zarr-python: the "zarr" mode
    sdists = tmp_path / "sdists"
    tests = sdists / "ome_zarr-0.0" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_stand_in.py").write_text(STAND_IN)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--sdists", str(sdists), "--python", sys.executable,
         "--libs", "ome-zarr", "--modes", "zarr,alias", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    row = next(line for line in lines if line.startswith("| ome-zarr"))
    # zarr-python passes test_plain (and test_alias_version only where it is 3.4.2);
    # with the alias all three pass, none of zarr-python's passes lost
    import zarr

    zarr_passes = 1 + (zarr.__version__ == "3.4.2")
    assert row == f"| ome-zarr | 3 | {zarr_passes} | not run | 3 (0 lost) |"
    assert "not zarrfast" in proc.stdout  # the commonest failure reason, shown
    assert (out / "ome-zarr-alias.xml").is_file() and (out / "ome-zarr-zarr.log").is_file()
    # the report is made again from the files, without running anything
    again = subprocess.run(
        [sys.executable, str(TOOL), "--report-only", "--libs", "ome-zarr", "--out", str(out)],
        capture_output=True, text=True, timeout=60)
    assert row in again.stdout.splitlines()


def test_reason_blanks_numbers_paths_and_addresses():
    sys.path.insert(0, str(TOOL.parent))
    try:
        import library_tests
    finally:
        sys.path.remove(str(TOOL.parent))
    assert (library_tests.reason("\nValueError: 12 at 0xdeadbeef in /tmp/x/y.zarr\nmore")
            == "ValueError: N at 0x… in <path>")


def test_python_for_one_library(tmp_path):
    """--python-for LIB=PYTHON runs that library with its own environment: here the default
    --python does not exist, so the row is there only if ome-zarr ran with the one given."""
    sdists = tmp_path / "sdists"
    tests = sdists / "ome_zarr-0.0" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_stand_in.py").write_text(STAND_IN)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--sdists", str(sdists),
         "--python", str(tmp_path / "no-such-python"),
         "--python-for", f"ome-zarr={sys.executable}",
         "--libs", "ome-zarr", "--modes", "alias", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| ome-zarr"))
    assert row == "| ome-zarr | 3 | not run | not run | 3 |"
    assert sys.executable in proc.stderr  # the environment each run used, said


@pytest.mark.parametrize("item, words", [("ome-zarr", "expected LIB=PYTHON"),
                                         ("napari=/usr/bin/python3", "unknown library 'napari'")])
def test_python_for_bad(tmp_path, item, words):
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--python-for", item, "--out", str(tmp_path),
         "--report-only"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
