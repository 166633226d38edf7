"""What the scripts that read the loader's ``rows`` batch over HTTP share: their common
options, the dataset made (or reused) and served by nginx behind the delaying proxy of
``remote_servers.py``, and a process's CPU time from ``/proc``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote_servers as RS  # noqa: E402

from zarrfast.bench import data as D  # noqa: E402
from zarrfast.bench import parse_size  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def add_arguments(p: argparse.ArgumentParser, n_help: str) -> None:
    """``--size``, ``--path``, ``--latency-ms``, ``--n`` (``n_help``) and ``--seed``."""
    p.add_argument("--size", default="128MiB", help="the loader datasets' size (default 128MiB)")
    p.add_argument("--path", default=None,
                   help="the datasets directory, kept and reused (default: a temporary one)")
    p.add_argument("--latency-ms", type=float, default=20.0,
                   help="first-byte delay of every request at the proxy (default 20)")
    p.add_argument("--n", type=int, default=10, help=n_help)
    p.add_argument("--seed", type=int, default=0, help="the batch's seed (default 0)")


def process_cpu(pid: int) -> float:
    """Seconds of CPU of process ``pid`` (user and system; ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


@contextmanager
def rows_behind_proxy(args: argparse.Namespace,
                      tmp: str) -> Iterator[tuple[Any, str, RS.Nginx, RS.Proxy]]:
    """The loader's ``rows`` array (made under ``args.path``, or in ``tmp``) served by
    nginx behind the proxy adding ``args.latency_ms``: (its spec, its path, nginx, the
    proxy).  Exits with 2 when nginx is not installed."""
    if RS.nginx_path() is None:
        print(RS.NGINX_HINT, file=sys.stderr)
        raise SystemExit(2)
    root = Path(args.path or Path(tmp) / "data").resolve()
    root.mkdir(parents=True, exist_ok=True)
    loader = D.prepare_loader(str(root), parse_size(args.size),
                              log=lambda m: print(f"# {m}", flush=True))
    spec, path, _ = loader["rows"]
    with RS.Nginx(root, Path(tmp) / "nginx") as nginx, \
            RS.Proxy(nginx.url, args.latency_ms) as proxy:
        yield spec, path, nginx, proxy
