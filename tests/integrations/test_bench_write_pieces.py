"""benchmarks/bench_write_pieces.py: a small run writes its files in calls of each piece
size, prints one line of system times per size (one per run) and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_write_pieces.py")


def test_a_small_run(tmp_path):
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--path", str(tmp_path), "--size", "300000", "--files", "5",
         "--threads", "2", "--runs", "3", "--pieces", "300000,65536"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert [re.match(r"calls of +(\d+) B: system time per run \(ms\)((?: \d+){3})$",
                     line).group(1) for line in lines] == ["300000", "65536"]
    assert os.listdir(tmp_path) == []
