"""The ``zarrfast`` command line.

``zarrfast info PATH`` (alias ``tree``)
    the hierarchy at PATH as a tree with shapes, dtypes, chunks, codecs, stored
    sizes and format (v2, v3, or which draft).
``zarrfast convert SRC DST [--zarr-format 3|2]``
    copy a hierarchy into another format, with a progress bar.
``zarrfast copy SRC DST``
    copy a hierarchy between any two stores keeping its format and encodings (chunk
    bytes copied unchanged), with a progress bar.
``zarrfast bench [--quick] [--size 4GiB] [--layouts ...] [--ops ...] [--threads 1,2,4]``
    the benchmark harness: zarrfast and the installed peers on locally generated data.
``zarrfast geozarr validate PATH [--as dataarray|dataset|multiscale] [--json] [--no-recommended]``
    check a hierarchy against the GeoZarr rules; exit 1 on errors (and recommended
    errors, unless ``--no-recommended``).

Stores are local paths, and whatever ``make_store`` resolves (``.zip`` files, URLs),
with ``--storage-options JSON`` passed through to it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

__all__ = ["main", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_NOT_FOUND", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED"]

EXIT_OK = 0
EXIT_FAILED = 1  # validation failed, a benchmark check failed
EXIT_USAGE = 2  # usage error or bad input (argparse, zarrfast errors)
EXIT_NOT_FOUND = 3  # no array or group (or file) where one was expected
EXIT_INTERNAL = 4  # an unexpected error (a bug): one line, --debug for the traceback
EXIT_INTERRUPTED = 130  # Ctrl-C

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK}    success
  {EXIT_FAILED}    validation failed (geozarr validate), or a benchmark check failed
  {EXIT_USAGE}    usage error or bad input (bad flags, invalid metadata, zarrfast errors)
  {EXIT_NOT_FOUND}    not found (no array or group at the path, missing file)
  {EXIT_INTERNAL}    unexpected error (a one-line message; --debug prints the traceback)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions wrapped to the width, epilogs (examples, tables) kept as written."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=34, width=min(100, _columns()))

    def add_text(self, text: str | None) -> None:
        if text and "\n" not in text:  # a one-paragraph description: wrap it
            import textwrap

            text = textwrap.fill(text, self._width)
        super().add_text(text)


def _columns() -> int:
    import shutil

    return max(60, shutil.get_terminal_size((100, 24)).columns - 2)


class UsageError(Exception):
    """A bad option value found after parsing (exit 2)."""


# --------------------------------------------------------------------------------------
# stores


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _make_store(target: str, *, read_only: bool, options: dict[str, Any] | None) -> Any:
    """``zarrfast.storage.resolve.make_store``, with ``storage_options`` passed through."""
    import inspect

    from zarrfast.storage.resolve import make_store

    if options is None:
        return make_store(target, read_only=read_only)
    if "storage_options" not in inspect.signature(make_store).parameters:
        raise UsageError("storage options are not supported by this zarrfast version's "
                         "store resolver (make_store takes no storage_options)")
    return make_store(target, read_only=read_only, storage_options=options)


def _src_dst_options(args: argparse.Namespace) -> tuple[dict | None, dict | None]:
    both = args.storage_options
    src = args.src_storage_options if args.src_storage_options is not None else both
    dst = args.dst_storage_options if args.dst_storage_options is not None else both
    return src, dst


# --------------------------------------------------------------------------------------
# info


def _format_name(node) -> str:
    draft = getattr(node, "draft_layout", None)
    return f"v3 draft layout: {draft}" if draft else f"v{node.zarr_format}"


#: the metadata documents a node keeps beside its chunks (Zarr v3, v2)
_METADATA_NAMES = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")


def _stored_bytes(node) -> tuple[int, int]:
    """The bytes an array takes in its store: (its chunks, its metadata documents)."""
    from zarrfast.hierarchy.node import node_key

    store = node.store

    def size(key: str) -> int:
        try:
            return store.getsize(key)
        except (FileNotFoundError, KeyError):
            return 0

    hierarchy = getattr(node, "_hierarchy", None)  # a v3 draft: its documents under meta/
    meta_keys = ({hierarchy.metadata_key(node.path, "array")} if hierarchy is not None
                 else {node_key(node.path, name) for name in _METADATA_NAMES})
    base = getattr(node, "_chunk_path", node.path)
    chunks = sum(size(key) for key in store.list_prefix(f"{base}/" if base else "")
                 if key not in meta_keys)
    return chunks, sum(size(key) for key in meta_keys)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


#: runs of at least this many equal chunk sizes are shown as ``size*count``
_RUN_SHOWN = 4


def _rectilinear_text(grid) -> str:
    """``rectilinear [[3, 7], [5, 5, 10]]``; long runs as ``size*count``, an integer step
    as itself."""
    dims = []
    for v in grid.chunk_shapes:
        if isinstance(v, int):
            dims.append(str(v))
            continue
        parts, i = [], 0
        while i < len(v):
            j = i
            while j < len(v) and v[j] == v[i]:
                j += 1
            parts += [f"{v[i]}*{j - i}"] if j - i >= _RUN_SHOWN else [str(v[i])] * (j - i)
            i = j
        dims.append("[" + ", ".join(parts) + "]")
    return "rectilinear [" + ", ".join(dims) + "]"


def _codecs_text(codecs) -> str:
    """The names of a v3 codec chain; a sharding codec with its inner chain and its index's
    (``sharding_indexed(inner: bytes, zstd; index: bytes, crc32c)``)."""
    from zarrfast.codecs import ShardingCodec

    names = []
    for c in codecs:
        if isinstance(c, ShardingCodec):
            names.append(f"sharding_indexed(inner: {_codecs_text(c.codecs)}; "
                         f"index: {_codecs_text(c.index_codecs)})")
        else:
            d = c.to_dict()
            names.append(d.get("name") or d.get("id", "?"))
    return ", ".join(names)


def _v2_codecs_text(metadata) -> str:
    """What a v2 array's metadata holds: its filters and its compressor, by their ids."""
    def ident(c) -> str:
        if isinstance(c, dict):
            return str(c.get("id", "?"))
        d = c.get_config() if hasattr(c, "get_config") else c.to_dict()
        return str(d.get("id") or d.get("name", "?"))

    filters = [ident(f) for f in (metadata.filters or ())]
    parts = [f"filters: {', '.join(filters)}"] if filters else []
    comp = metadata.compressor
    parts.append(f"compressor: {ident(comp) if comp is not None else 'none'}")
    return "; ".join(parts)


def _describe_array(a) -> str:
    md = a.metadata
    v2 = md.zarr_format == 2
    codecs = _v2_codecs_text(md) if v2 else _codecs_text(a.codec_chain.codecs)
    data_type = md.type_info
    # the v3 name where it says more than NumPy's (numpy.datetime64[10s], struct{...},
    # bfloat16); NumPy's for the core types and Zarr v2
    name = str(a.dtype) if v2 else data_type.describe()
    grid = md.chunk_grid
    if getattr(grid, "is_regular", True):
        shards = f" shards {a.shards}" if a.shards else ""
        chunks = f"chunks {a.chunks}{shards}"
    elif a.codec_chain.sharding is not None and len(a.codec_chain.codecs) == 1:
        chunks = f"chunks {a.chunks} shards {_rectilinear_text(grid)}"
    else:
        chunks = f"chunks {_rectilinear_text(grid)}"
    if v2 and md.order == "F":
        chunks += " order F"
    data, meta = _stored_bytes(a)
    return (f"{a.shape} {name} {chunks} [{codecs}] stored: {_size(data)} in chunks, "
            f"{_size(meta)} metadata")


def _open_node(target: str, node_path: str | None, options: dict | None):
    from zarrfast import open as zopen

    store = _make_store(target, read_only=True, options=options)
    return zopen(store, mode="r", path=node_path)


def _cmd_info(args: argparse.Namespace) -> int:
    from zarrfast.hierarchy.array import Array

    node = _open_node(args.path, args.node, args.storage_options)
    fmt = _format_name(node)
    if isinstance(node, Array):
        print(f"{node.name} (array, Zarr {fmt}) {_describe_array(node)}")
        return EXIT_OK
    print(f"{node.name} (group, Zarr {fmt})")
    for key, member in node.members(max_depth=None):
        depth = key.count("/")
        name = key.rsplit("/", 1)[-1]
        indent = "  " * (depth + 1)
        if isinstance(member, Array):
            print(f"{indent}{name} {_describe_array(member)}")
        else:
            print(f"{indent}{name}/")
    return EXIT_OK


# --------------------------------------------------------------------------------------
# convert, copy


def _count(node) -> tuple[int, int]:
    from zarrfast.hierarchy.array import Array

    nodes = [node] + ([m for _, m in node.members(max_depth=None)]
                      if not isinstance(node, Array) else [])
    arrays = [n for n in nodes if isinstance(n, Array)]
    return len(arrays), len(nodes) - len(arrays)


def _close(store: Any) -> None:
    """Flush and close a store that needs it (a zip file's directory)."""
    close = getattr(store, "close", None)
    if callable(close):
        close()


def _copy_or_convert(args: argparse.Namespace, label: str, fmt: int | None):
    """Refuse a destination that overlaps the source (before anything is opened for
    writing), then copy; the written node and its format (the caller closes the node's
    store: a zip file's directory)."""
    from zarrfast.convert import check_distinct, convert

    src_opts, dst_opts = _src_dst_options(args)
    # the paths as given, named in the error; compared resolved
    check_distinct(args.src, args.dst, path=args.src_path, dst_path=args.dst_path,
                   what=label, src_options=src_opts, dst_options=dst_opts)
    node = _open_node(args.src, args.src_path, src_opts)
    if fmt is None:
        fmt = node.metadata.zarr_format
    # a path or URL without options goes to convert as it is: a local directory or a
    # .zip file is then written beside the destination and renamed into place
    dst: Any = args.dst if dst_opts is None else _make_store(args.dst, read_only=False,
                                                             options=dst_opts)
    try:
        out = convert(node, dst, zarr_format=fmt, dst_path=args.dst_path,
                      overwrite=args.overwrite, progress=not args.quiet, label=label)
    except BaseException:
        if not isinstance(dst, str):
            _close(dst)
        raise
    return out, fmt


def _cmd_convert(args: argparse.Namespace) -> int:
    out, fmt = _copy_or_convert(args, "convert", args.zarr_format)
    try:
        name = out.name
    finally:
        _close(out.store)
    print(f"converted {args.src} -> {args.dst} (Zarr v{fmt}, {name})")
    return EXIT_OK


def _cmd_copy(args: argparse.Namespace) -> int:
    # same format: metadata kept, chunk bytes copied unchanged (drafts become final v3)
    out, fmt = _copy_or_convert(args, "copy", None)
    try:
        arrays, groups = _count(out)
    finally:
        _close(out.store)
    print(f"copied {args.src} -> {args.dst} (Zarr v{fmt}, {arrays} arrays, {groups} groups)")
    return EXIT_OK


# --------------------------------------------------------------------------------------
# bench


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") \
            from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def _name_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _size_arg(text: str) -> int:
    from zarrfast.bench.data import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_CODEC_LAYOUT = {"none": "raw", "zstd": "zstd", "blosc": "blosc"}
QUICK_SIZE = 250 << 20  # the default array, uint16 (320, 640, 640): exactly this size
QUICK_OPS = ["read", "random", "write"]
#: the libraries --quick times writing (every other library's writes would double the run)
QUICK_WRITERS = ["zarrfast", "zarr-python"]


def bench_config(args: argparse.Namespace):
    """The harness configuration the bench flags ask for."""
    from zarrfast.bench import BenchConfig

    cpus = os.cpu_count() or 1
    cfg = BenchConfig()
    if args.layouts is not None:
        cfg.layouts = args.layouts
        if args.codec is not None:
            raise UsageError("--codec and --layouts together: --codec X is short for "
                             "--layouts raw|zstd|blosc; give one of them")
    elif args.codec is not None or args.quick:
        cfg.layouts = [_CODEC_LAYOUT[args.codec or "zstd"]]
    if args.quick:
        cfg.size, cfg.ops, cfg.threads = QUICK_SIZE, list(QUICK_OPS), [cpus]
        cfg.write_libs = list(QUICK_WRITERS)
    if args.size is not None:
        cfg.size = args.size
    if args.ops is not None:
        cfg.ops = args.ops
    if args.threads is not None:
        cfg.threads = args.threads
    if args.libs is not None:
        cfg.libs = args.libs
    cfg.repeat, cfg.n_random, cfg.busy = args.repeat, args.n_random, args.busy
    cfg.path, cfg.out, cfg.drop_caches = args.path, args.out, args.drop_caches
    cfg.cold = args.cold
    cfg.scheduler, cfg.plot = args.scheduler, not args.no_plot
    try:
        cfg.validate()
    except ValueError as e:
        raise UsageError(str(e)) from None
    return cfg


def _cmd_bench(args: argparse.Namespace) -> int:
    from zarrfast.bench import run

    cfg = bench_config(args)
    code, _ = run(cfg, out=sys.stdout)
    return code


# --------------------------------------------------------------------------------------
# geozarr


def _cmd_geozarr_validate(args: argparse.Namespace) -> int:
    from zarrfast.geozarr import validate

    target: Any = args.path
    if args.storage_options is not None:
        target = _make_store(args.path, read_only=True, options=args.storage_options)
    findings = validate(target, args.as_, recommended=args.recommended,
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
    return EXIT_FAILED if failing else EXIT_OK


# --------------------------------------------------------------------------------------
# the parser


def _add_storage_options(p: argparse.ArgumentParser, *, pair: bool) -> None:
    p.add_argument("--storage-options", type=_json_object, default=None, metavar="JSON",
                   help="options for the store(s), a JSON object passed through to "
                        "make_store (e.g. '{\"anon\": true}' for a public bucket)"
                        + ("; applies to both SRC and DST unless overridden" if pair else ""))
    if pair:
        p.add_argument("--src-storage-options", type=_json_object, default=None,
                       metavar="JSON", help="storage options for SRC only")
        p.add_argument("--dst-storage-options", type=_json_object, default=None,
                       metavar="JSON", help="storage options for DST only")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="print the full traceback of an error")


def _version_text(version: str) -> str:
    """``zarrfast X`` and, per codec of the batched decoder, where its library came from."""
    from zarrfast.kernels import CODEC_BINDINGS, USING_EXTENSIONS

    lines = [f"zarrfast {version}",
             "kernels: " + ("compiled" if USING_EXTENSIONS else "pure NumPy (no compiled build)")]
    lines += [f"{codec}: {how}" for codec, how in sorted(CODEC_BINDINGS.items())]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    from zarrfast import __version__
    from zarrfast.bench import LAYOUTS, LIBRARIES, OP_HELP, REFERENCE_LAYOUTS
    from zarrfast.bench.libs import INSTALL_HINT

    parser = argparse.ArgumentParser(
        prog="zarrfast", formatter_class=_Formatter,
        description="zarrfast: fast Zarr (v2 and v3) arrays. Inspect, convert and copy "
                    "hierarchies between stores; benchmark zarrfast against its peers; "
                    "validate GeoZarr.",
        epilog=f"""\
examples:
  zarrfast info data.zarr                       # the hierarchy as a tree
  zarrfast convert old_v2.zarr new.zarr --zarr-format 3
  zarrfast copy data.zarr /scratch/data.zarr    # same format, chunk bytes unchanged
  zarrfast bench --quick                        # a one-minute throughput check
  zarrfast geozarr validate dem.zarr --as multiscale

Run 'zarrfast COMMAND --help' for the options of a command.

{EXIT_CODES}""")
    parser.add_argument("--version", action="version", version=_version_text(__version__),
                        help="print zarrfast's version, and how it binds its codec "
                             "libraries, and exit")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands")

    # info / tree
    i = sub.add_parser(
        "info", aliases=["tree"], formatter_class=_Formatter,
        help="the hierarchy as a tree: shapes, dtypes, chunks, codecs, stored sizes, format",
        description="Print the array or group at PATH and, for a group, every member as a "
                    "tree: shape, dtype, chunks (and shards), codecs, stored size, and the "
                    "Zarr format (v2, v3 or which v3 draft).",
        epilog=f"""\
examples:
  zarrfast info data.zarr
  zarrfast tree data.zarr --node measurements/raw
  zarrfast info archive.zip
  zarrfast info s3://bucket/data.zarr --storage-options '{{"anon": true}}'

{EXIT_CODES}""")
    i.add_argument("path", help="the store: a local directory, a .zip file or a URL")
    i.add_argument("--node", default=None, metavar="PATH",
                   help="a node inside the store (default: its root)")
    _add_storage_options(i, pair=False)
    _add_common(i)
    i.set_defaults(func=_cmd_info)

    # convert and copy share their store flags
    def src_dst(p: argparse.ArgumentParser) -> None:
        p.add_argument("src", help="source store: a local directory, a .zip file or a URL")
        p.add_argument("dst", help="target store: a local directory, a .zip file or a URL")
        p.add_argument("--src-path", default=None, metavar="PATH",
                       help="a node inside SRC (default: its root)")
        p.add_argument("--dst-path", default=None, metavar="PATH",
                       help="where to put it inside DST (default: its root)")
        p.add_argument("--overwrite", action="store_true",
                       help="replace nodes that exist in DST (default: refuse, exit 2)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        _add_storage_options(p, pair=True)
        _add_common(p)

    c = sub.add_parser(
        "convert", formatter_class=_Formatter,
        help="copy a hierarchy into another format (v2, v3; drafts read)",
        description="Copy the hierarchy at SRC to DST as Zarr v2 or v3. Chunk bytes are "
                    "copied unchanged where the encoding carries over (v2 zstd/gzip/blosc "
                    "or no compressor, C or F order, either byte order; v3 drafts), "
                    "otherwise decoded and re-encoded. Consolidated metadata is written "
                    "again for DST's nodes. A DST that is SRC, is inside it or holds it is "
                    "refused; a local or .zip DST is written beside it and renamed into "
                    "place, so a failure leaves none (and an --overwrite'd DST as it was).",
        epilog=f"""\
examples:
  zarrfast convert old_v2.zarr new.zarr                  # to Zarr v3
  zarrfast convert new.zarr back.zarr --zarr-format 2
  zarrfast convert data.zarr out.zarr --src-path a/b --overwrite --quiet

{EXIT_CODES}""")
    src_dst(c)
    c.add_argument("--zarr-format", type=int, choices=(2, 3), default=3,
                   help="the target format (default: 3)")
    c.set_defaults(func=_cmd_convert)

    cp = sub.add_parser(
        "copy", formatter_class=_Formatter,
        help="copy a hierarchy between two stores keeping its format and encodings",
        description="Copy the hierarchy at SRC to DST in its own format: array metadata "
                    "kept, chunk (and shard) bytes copied unchanged, never decoded, and "
                    "consolidated metadata with them. A v3 draft layout becomes final v3. "
                    "Any two stores: local directories, .zip files, URLs. A DST that is "
                    "SRC, is inside it or holds it is refused; a local or .zip DST is "
                    "written beside it and renamed into place, so a failure leaves none "
                    "(and an --overwrite'd DST as it was).",
        epilog=f"""\
examples:
  zarrfast copy data.zarr /scratch/$USER/data.zarr
  zarrfast copy data.zarr data.zip
  zarrfast copy s3://bucket/data.zarr local.zarr --src-storage-options '{{"anon": true}}'

{EXIT_CODES}""")
    src_dst(cp)
    cp.set_defaults(func=_cmd_copy)

    # bench
    import textwrap

    def entries(items: dict[str, str], width: int) -> str:
        wrap = min(100, _columns()) - 2
        return "\n".join(textwrap.fill(text, wrap, initial_indent=f"  {name:{width}s} ",
                                        subsequent_indent=" " * (width + 3))
                          for name, text in items.items())

    layouts = entries({n: lay.description for n, lay in LAYOUTS.items()}, 14)
    ops = entries(OP_HELP, 10)
    b = sub.add_parser(
        "bench", formatter_class=_Formatter,
        help="time zarrfast against the other Zarr libraries installed, on generated data",
        description="Time zarrfast against the other Zarr libraries installed here "
                    "(zarr-python, zarr-python with the zarrs codec pipeline, tensorstore, "
                    "zarrista) on datasets generated on this machine. Every library reads "
                    "and writes the same files in the same run, and every read is checked "
                    "against the expected values. Prints a table (zarrfast's time and "
                    "MiB/s; for the others their time / zarrfast's: x2.00 took twice as "
                    "long), then a short summary; --out also writes JSON, CSV and a PNG "
                    "plot. Times are the best of --repeat runs. Add the other libraries "
                    f"with: {INSTALL_HINT}.",
        epilog=f"""\
layouts (--layouts; default all):
{layouts}
  (the published ratios: --layouts {','.join(REFERENCE_LAYOUTS)})

operations (--ops; default all):
{ops}

libraries (--libs; default all; the ones not installed are named and left out):
  {', '.join(LIBRARIES)}

examples:
  zarrfast bench --quick                          # 250 MiB, one layout, about a minute
  zarrfast bench --quick --codec none             # the same, uncompressed
  zarrfast bench --out results/                   # everything, default size (250 MiB)
  zarrfast bench --size 40GiB --path /scratch/bench --threads 1,8,32,64 --out results/
  zarrfast bench --layouts raw,sharded --ops read,chunks --libs zarrfast,tensorstore
  sudo zarrfast bench --drop-caches --ops read    # cold reads
  zarrfast bench --ops random,boxes --busy 1      # boxes on a machine with one busy core
  zarrfast bench --scheduler tcp://node001:8786 --path /shared/bench --ops read,write

{EXIT_CODES}""")
    b.add_argument("--quick", action="store_true",
                   help="a check of about a minute: 250 MiB, one layout (--codec, default "
                        "zstd), ops read,random,write on all cores; writes timed for "
                        "zarrfast and zarr-python only. Other flags still override")
    b.add_argument("--size", type=_size_arg, default=None, metavar="SIZE",
                   help="size of the main array: 250MiB, 4GiB, 40GiB ... (default 250 MiB, "
                        "uint16 (320, 640, 640)); rounded to sides that are multiples of 32, "
                        "the size made is printed; the small-file layouts scale along, up "
                        "to 1 GiB")
    b.add_argument("--layouts", type=_name_list, default=None, metavar="LIST",
                   help="comma-separated layouts (see below; default all)")
    b.add_argument("--codec", choices=tuple(_CODEC_LAYOUT), default=None,
                   help="short for --layouts raw (none), zstd or blosc")
    b.add_argument("--ops", type=_name_list, default=None, metavar="LIST",
                   help="comma-separated operations (see below; default all)")
    b.add_argument("--threads", type=_int_list, default=None, metavar="LIST",
                   help="thread counts to sweep, e.g. 1,2,4 (default: 1 and all cores)")
    b.add_argument("--libs", type=_name_list, default=None, metavar="LIST",
                   help="libraries to compare (default: all installed; zarrfast always runs)")
    b.add_argument("--repeat", type=int, default=3, metavar="N",
                   help="best of N runs (default 3)")
    b.add_argument("--n-random", type=int, default=100, metavar="N",
                   help="boxes in the random and boxes ops (default 100)")
    b.add_argument("--busy", type=int, default=0, metavar="N",
                   help="run N competing CPU-bound processes (a pure-Python loop each, at "
                        "the harness's own priority) for the whole run, started when it "
                        "starts (before the datasets are made) and killed at its end, also "
                        "on an error or Ctrl-C: how the libraries share a loaded machine (default 0)")
    b.add_argument("--path", default=None, metavar="DIR",
                   help="keep the datasets in DIR and reuse them when the parameters match "
                        "(default: a temporary directory, removed)")
    b.add_argument("--out", default=None, metavar="DIR",
                   help="write bench.json, bench.csv and bench.png (matplotlib) to DIR")
    b.add_argument("--no-plot", action="store_true", help="no PNG plot with --out")
    b.add_argument("--drop-caches", action="store_true",
                   help="cold reads: drop the page cache before every timed read (root on "
                        "Linux; exit 2 with the reason when not permitted)")
    b.add_argument("--cold", action="store_true",
                   help="cold reads without privilege: evict the dataset's files from the page "
                        "cache (posix_fadvise DONTNEED) before every timed read")
    b.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a dask distributed scheduler: spread reads and writes over its "
                        "workers, a slab of chunks per task (the datasets DIR must be on a "
                        "file system all workers see; e.g. dask-jobqueue on SLURM/PBS)")
    _add_common(b)
    b.set_defaults(func=_cmd_bench)

    # geozarr validate
    gz = sub.add_parser("geozarr", formatter_class=_Formatter, help="GeoZarr tools",
                        description="GeoZarr tools.",
                        epilog="examples:\n  zarrfast geozarr validate dem.zarr\n\n"
                               + EXIT_CODES)
    _add_common(gz)
    gzs = gz.add_subparsers(dest="geozarr_command", required=True, metavar="COMMAND",
                            title="commands")
    v = gzs.add_parser(
        "validate", formatter_class=_Formatter,
        help="check a hierarchy against the GeoZarr rules",
        description="Check the node at PATH against the GeoZarr rules and print the "
                    "findings: errors (E), recommended errors (R) and warnings (W). Exit 1 "
                    "on errors and recommended errors (unless --no-recommended).",
        epilog=f"""\
examples:
  zarrfast geozarr validate dem.zarr
  zarrfast geozarr validate dem.zarr --as multiscale --json
  zarrfast geozarr validate dem.zarr --no-recommended

{EXIT_CODES}""")
    v.add_argument("path", help="the store: a local directory, a .zip file or a URL")
    v.add_argument("--as", dest="as_", default="auto",
                   choices=("auto", "dataarray", "dataset", "multiscale"),
                   help="what the node should be (default: auto, from the node)")
    v.add_argument("--json", action="store_true", help="print the findings as JSON")
    v.add_argument("--no-recommended", dest="recommended", action="store_false",
                   help="leave out the recommended errors (severity R)")
    v.add_argument("--allow-grid-mapping-scalars", action="store_true",
                   help="exempt 0-d arrays with a grid_mapping_name attribute")
    _add_storage_options(v, pair=False)
    _add_common(v)
    v.set_defaults(func=_cmd_geozarr_validate)
    return parser


#: how the library's errors tell a caller to replace a node (the CLI says --overwrite)
_OVERWRITE_KEYWORD = re.compile(r"overwrite=True(?: \(or mode='w'\))?")


def _end_progress_bars() -> None:
    """Clear the progress bars still on the screen (a command stopped in the middle of a
    copy), so that what is printed next starts a line of its own."""
    std = sys.modules.get("tqdm.std")
    if std is None:
        return
    for bar in list(getattr(std.tqdm, "_instances", ())):
        try:
            bar.leave = False
            bar.close()
        except Exception:  # (a bar half made or already closing: nothing to clear)
            pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (argparse exits 2 itself on usage
    errors, 0 for --help and --version)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    from zarrfast.errors import NodeNotFoundError, ZarrfastError

    def fail(kind: str, e: BaseException, code: int, hint: str = "") -> int:
        _end_progress_bars()  # (the error on a line of its own, not after a bar's text)
        if debug:
            import traceback

            traceback.print_exc()
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if hasattr(args, "overwrite"):  # the command's flag, not the Python keyword
            msg = _OVERWRITE_KEYWORD.sub("--overwrite", msg)
            if "--overwrite" in msg:
                hint = ""
        print(f"zarrfast: {kind}: {msg}{hint}", file=sys.stderr)
        return code

    try:
        return args.func(args)
    except KeyboardInterrupt:
        _end_progress_bars()
        print("zarrfast: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except (NodeNotFoundError, FileNotFoundError) as e:
        return fail("not found", e, EXIT_NOT_FOUND)
    except FileExistsError as e:
        hint = " (--overwrite replaces it)" if hasattr(args, "overwrite") else ""
        return fail("error", e, EXIT_USAGE, hint)
    except (ZarrfastError, UsageError, PermissionError, NotADirectoryError,
            IsADirectoryError) as e:
        return fail("error", e, EXIT_USAGE)
    except Exception as e:
        return fail("unexpected error", e, EXIT_INTERNAL,
                    "" if debug else f" ({type(e).__name__}; run again with --debug for "
                                     f"the traceback, and please report it)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
