"""``run_bench``: the old entry point of ``zarrfast bench``, kept for scripts that call it.

The harness lives in :mod:`zarrfast.bench`; this runs it the way the old command did:
one layout (``codec``: none, zstd or blosc), a full read, random small reads and a
write, zarrfast and the installed peers.
"""

from __future__ import annotations

import os
from typing import TextIO

__all__ = ["run_bench"]

_LAYOUT = {"none": "raw", "zstd": "zstd", "blosc": "blosc"}


def run_bench(*, quick: bool, path: str | None, threads: int | list[int] | None, codec: str,
              out: TextIO, size: str | None = None) -> int:
    """Run the harness on one layout (256 MiB quick, else 1 GiB, unless ``size``); return
    its exit code (1 when a check failed)."""
    from .bench import BenchConfig, parse_size, run

    if codec not in _LAYOUT:
        raise ValueError(f"codec {codec!r}: expected one of {', '.join(_LAYOUT)}")
    if threads is None:
        threads = [os.cpu_count() or 1]
    elif isinstance(threads, int):
        threads = [threads]
    size = size or ("256MiB" if quick else "1GiB")
    cfg = BenchConfig(size=parse_size(size), layouts=[_LAYOUT[codec]],
                      ops=["read", "random", "write"], threads=list(threads), path=path)
    code, _ = run(cfg, out=out)
    return code
