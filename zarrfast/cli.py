"""The ``zarrfast`` command line.

``zarrfast bench [--quick] [--path DIR]``
    write and read an array on a local directory store and print throughput.
``zarrfast info PATH``
    the hierarchy at PATH as a tree with shapes, dtypes, chunks, codecs, stored
    sizes and format (v2, v3, or which draft).
``zarrfast convert SRC DST [--zarr-format 3|2]``
    copy a hierarchy into another format, with a progress bar.
``zarrfast geozarr validate PATH [--as dataarray|dataset|multiscale] [--json] [--no-recommended]``
    check a hierarchy against the GeoZarr rules; exit 1 on errors (and recommended
    errors, unless ``--no-recommended``).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _cmd_bench(args: argparse.Namespace) -> int:
    from ._bench import run_bench

    return run_bench(quick=args.quick, path=args.path, threads=args.threads,
                     codec=args.codec, out=sys.stdout)


def _format_name(node) -> str:
    draft = getattr(node, "draft_layout", None)
    return f"v3 draft layout: {draft}" if draft else f"v{node.zarr_format}"


def _stored_bytes(node) -> int:
    store = node.store
    base = getattr(node, "_chunk_path", node.path)
    prefix = f"{base}/" if base else ""
    total = 0
    for key in store.list_prefix(prefix):
        try:
            total += store.getsize(key)
        except FileNotFoundError:
            pass
    return total


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def _describe_array(a) -> str:
    codecs = ", ".join(
        c.to_dict().get("name") or c.to_dict().get("id", "?") for c in a.metadata.codecs
    )
    shards = f" shards {a.shards}" if a.shards else ""
    return (f"{a.shape} {a.dtype} chunks {a.chunks}{shards} [{codecs}] "
            f"{_size(_stored_bytes(a))} stored")


def _cmd_info(args: argparse.Namespace) -> int:
    from . import open as zopen
    from .array import Array

    node = zopen(args.path, mode="r")
    fmt = _format_name(node)
    if isinstance(node, Array):
        print(f"{node.name} (array, Zarr {fmt}) {_describe_array(node)}")
        return 0
    print(f"{node.name} (group, Zarr {fmt})")
    for key, member in node.members(max_depth=None):
        depth = key.count("/")
        name = key.rsplit("/", 1)[-1]
        indent = "  " * (depth + 1)
        if isinstance(member, Array):
            print(f"{indent}{name} {_describe_array(member)}")
        else:
            print(f"{indent}{name}/")
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert

    out = convert(args.src, args.dst, zarr_format=args.zarr_format, overwrite=args.overwrite,
                  progress=not args.quiet)
    print(f"converted {args.src} -> {args.dst} (Zarr v{args.zarr_format}, {out.name})")
    return 0


def _cmd_geozarr_validate(args: argparse.Namespace) -> int:
    import json

    from .geozarr import validate

    findings = validate(args.path, args.as_, recommended=args.recommended,
                        allow_grid_mapping_scalars=args.allow_grid_mapping_scalars)
    failing = [f for f in findings if f.severity in ("E", "R")]
    if args.json:
        print(json.dumps({"path": args.path, "as": args.as_, "valid": not failing,
                          "findings": [f.to_dict() for f in findings]}, indent=2))
    else:
        counts = {s: sum(f.severity == s for f in findings) for s in "ERW"}
        verdict = "INVALID" if failing else "valid"
        kind = "(auto-detected)" if args.as_ == "auto" else args.as_
        print(f"{args.path}: {verdict} GeoZarr {kind} ({counts['E']} errors, "
              f"{counts['R']} recommended errors, {counts['W']} warnings)")
        for f in findings:
            print(f"  {f}")
    return 1 if failing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zarrfast", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="write and read an array, print throughput")
    b.add_argument("--quick", action="store_true", help="256 MiB instead of 1 GiB")
    b.add_argument("--path", default=None, help="directory to use (default: a temporary one)")
    b.add_argument("--threads", type=int, default=None, help="worker threads (default: CPUs)")
    b.add_argument("--codec", choices=("none", "zstd", "blosc"), default="zstd")
    b.set_defaults(func=_cmd_bench)
    i = sub.add_parser("info", help="the hierarchy as a tree: shapes, dtypes, chunks, "
                                     "codecs, stored sizes, format")
    i.add_argument("path")
    i.set_defaults(func=_cmd_info)
    c = sub.add_parser("convert", help="copy a hierarchy into another format (v2, v3; "
                                       "drafts read)")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--zarr-format", type=int, choices=(2, 3), default=3)
    c.add_argument("--overwrite", action="store_true")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=_cmd_convert)
    gz = sub.add_parser("geozarr", help="GeoZarr tools").add_subparsers(dest="geozarr_command",
                                                                       required=True)
    v = gz.add_parser("validate", help="check a hierarchy against the GeoZarr rules")
    v.add_argument("path")
    v.add_argument("--as", dest="as_", default="auto",
                   choices=("auto", "dataarray", "dataset", "multiscale"),
                   help="what the node should be (default: auto, from the node)")
    v.add_argument("--json", action="store_true", help="print the findings as JSON")
    v.add_argument("--no-recommended", dest="recommended", action="store_false",
                   help="leave out the recommended errors (severity R)")
    v.add_argument("--allow-grid-mapping-scalars", action="store_true",
                   help="exempt 0-d arrays with a grid_mapping_name attribute")
    v.set_defaults(func=_cmd_geozarr_validate)
    args = parser.parse_args(argv)
    from .errors import ZarrfastError

    try:
        return args.func(args)
    except ZarrfastError as e:
        print(f"zarrfast: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
