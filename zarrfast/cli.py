"""The ``zarrfast`` command line.

``zarrfast bench [--quick] [--path DIR]``
    write and read an array on a local directory store and print throughput.
``zarrfast info PATH``
    print the metadata of the node at PATH.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def _cmd_bench(args: argparse.Namespace) -> int:
    from ._bench import run_bench

    return run_bench(quick=args.quick, path=args.path, threads=args.threads,
                     codec=args.codec, out=sys.stdout)


def _cmd_info(args: argparse.Namespace) -> int:
    from . import open as zopen
    from .array import Array

    node = zopen(args.path, mode="r")
    if isinstance(node, Array):
        print(f"array {node.name} in {node.store!r}")
        print(f"  shape {node.shape}  chunks {node.chunks}  dtype {node.dtype}")
        print(f"  fill_value {node.fill_value!r}  nchunks {node.nchunks}")
        print("  codecs " + json.dumps([c.to_dict() for c in node.metadata.codecs]))
    else:
        print(f"group {node.name} in {node.store!r}")
        for key, member in node.members(max_depth=None):
            kind = "array" if isinstance(member, Array) else "group"
            extra = f" {member.shape} {member.dtype}" if kind == "array" else ""
            print(f"  {key}  ({kind}{extra})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zarrfast", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="write and read an array, print throughput")
    b.add_argument("--quick", action="store_true", help="256 MiB instead of 1 GiB")
    b.add_argument("--path", default=None, help="directory to use (default: a temporary one)")
    b.add_argument("--threads", type=int, default=None, help="worker threads (default: CPUs)")
    b.add_argument("--codec", choices=("none", "zstd", "blosc"), default="zstd")
    b.set_defaults(func=_cmd_bench)
    i = sub.add_parser("info", help="describe an array or group")
    i.add_argument("path")
    i.set_defaults(func=_cmd_info)
    args = parser.parse_args(argv)
    from .errors import ZarrfastError

    try:
        return args.func(args)
    except ZarrfastError as e:
        print(f"zarrfast: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
