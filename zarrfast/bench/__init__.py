"""``zarrfast bench``: the benchmark harness.

It generates its datasets locally (:mod:`.data`), times zarrfast and every installed
peer (:mod:`.libs`: zarr-python, zarr-python with the zarrs codec pipeline,
tensorstore) on the same files in the same run (:mod:`.harness`), checks every read
against the expected values, and reports a table, JSON, CSV and a plot (:mod:`.report`).

    from zarrfast.bench import BenchConfig, run
    code, report = run(BenchConfig(size=parse_size("64MiB"), layouts=["zstd"]))
"""

from zarrfast.bench.data import LAYOUTS, REFERENCE_LAYOUTS, parse_size
from zarrfast.bench.harness import (
    DEFAULT_OPS,
    OP_HELP,
    OPS,
    BenchConfig,
    Result,
    machine_info,
    run,
)
from zarrfast.bench.libs import LIBRARIES

__all__ = ["BenchConfig", "Result", "run", "parse_size", "machine_info", "LAYOUTS",
           "REFERENCE_LAYOUTS", "OPS", "DEFAULT_OPS", "OP_HELP", "LIBRARIES"]
