"""benchmarks/bench_write_sched.py: a write of a small zstd dataset at two threads runs
in a child process of the tree given, and the CPU split finds the entry points it wraps
(compression, the file kernel): a renamed entry point would leave its stage at 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_write_sched.py")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux schedstat")
def test_stages_of_a_small_write(tmp_path):
    import zarrfast
    from zarrfast.kernels import encode

    if encode.ChunkEncoder is None:
        pytest.skip("no batched encoder in this build: zstd chunks are compressed by "
                    "numcodecs, which the stages do not wrap")
    # the "tree" is where the zarrfast under test is installed (never the source tree:
    # without built kernels there, the child would import a different zarrfast)
    tree = os.path.dirname(os.path.dirname(os.path.abspath(zarrfast.__file__)))
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--trees", tree, "--layouts", "zstd", "--threads", "2",
         "--rounds", "1", "--reps", "1", "--size", "4MiB", "--path", str(tmp_path / "data"),
         "--stages"], capture_output=True, text=True, cwd=tmp_path, timeout=600,
        check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if re.search(r"zstd t=2 ", line))
    assert re.search(r"wall +[\d.]+ / +[\d.]+ +cpu", lines[row])
    stages = dict((k, float(v)) for k, v in re.findall(r"([a-z ]+?) (-?[\d.]+)",
                                                       lines[row + 1].split("cpu:")[1]))
    stages = {k.strip(): v for k, v in stages.items()}
    assert stages["compress"] > 0 and stages["file kernel"] > 0, lines[row + 1]
    assert set(stages) == {"compress", "file kernel", "store calls", "rest"}
    # (the dataset's written copies are removed with their temporary directory)
    assert sorted(os.listdir(tmp_path / "data")) == ["manifest.json", "zstd-template.zarr",
                                                     "zstd.zarr"]
