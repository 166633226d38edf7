"""The benchmark harness, as a script: the same as ``zarrfast bench``.

    python benchmarks/harness.py --quick
    python benchmarks/harness.py --size 4GiB --path /scratch/bench --out results/

Run ``python benchmarks/harness.py --help`` for every option (they are the ones of
``zarrfast bench``; the harness itself is :mod:`zarrfast.bench`).
"""

from __future__ import annotations

import sys

from zarrfast.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
