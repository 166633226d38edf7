"""tools/xarray_backend_judge.py routes xarray's zarr engine (and, on the write side,
to_zarr) to zarrfast and counts the outcomes: run on a small stand-in for xarray's tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("xarray")

TOOL = Path(__file__).resolve().parents[2] / "tools" / "xarray_backend_judge.py"

STAND_IN = textwrap.dedent('''
    import numpy as np
    import xarray as xr
    from xarray.backends import plugins, writers


    class TestZarrDirectoryStore:
        def test_reads_use_zarrfast(self):
            assert type(plugins.get_backend("zarr")).__name__ == "ZarrfastBackendEntrypoint"

        def test_writes_use_zarrfast(self, tmp_path):
            ds = xr.Dataset({"v": ("x", np.arange(3.0))})
            out = ds.to_zarr(tmp_path / "a.zarr")  # zarrfast returns its Group
            assert type(out).__module__.startswith("zarrfast")
            back = xr.open_dataset(tmp_path / "a.zarr", engine="zarr").load()
            xr.testing.assert_identical(back, ds)

        def test_always_fails(self):
            assert 1 == 2
''')


def test_judge_counts_each_side(tmp_path):
    (tmp_path / "test_backends.py").write_text(STAND_IN)
    proc = subprocess.run(
        [sys.executable, str(TOOL), str(tmp_path), "--list-failures",
         "--select", "test_backends.py::TestZarrDirectoryStore"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "read: 1 passed of 3 run, 2 failed, 0 errors" in lines[0]
    write_at = next(i for i, ln in enumerate(lines) if ln.startswith("write:"))
    assert "write: 2 passed of 3 run, 1 failed, 0 errors" in lines[write_at]
    read_failures = {ln.split()[0] for ln in lines[1:write_at]}
    write_failures = {ln.split()[0] for ln in lines[write_at + 1:]}
    assert read_failures == {
        "test_backends.py::TestZarrDirectoryStore::test_writes_use_zarrfast",
        "test_backends.py::TestZarrDirectoryStore::test_always_fails"}
    assert write_failures == {"test_backends.py::TestZarrDirectoryStore::test_always_fails"}


def test_judge_refuses_a_directory_without_the_tests(tmp_path):
    proc = subprocess.run([sys.executable, str(TOOL), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "no test_backends.py" in proc.stderr
