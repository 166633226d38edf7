"""What users read: ``Array.info``, ``Group.info``, their ``info_complete()`` and
``Group.tree()``, printed as zarr-python 3.4 prints them.

The text is zarr-python's, field for field and in its order, so that output pasted
into an issue or a notebook reads the same whichever library made it: data types
spelled as zarr-python's data-type classes (``Int32(endianness='little')``), codecs
as its codec classes (``BytesCodec(endian='little')``), Zarr v2
filters and compressors as numcodecs objects, byte counts with a human-readable size.
Lines zarrfast adds come after zarr-python's.

Example::

    Type               : Array
    Zarr format        : 3
    Data type          : Int32(endianness='little')
    Fill value         : 0
    Shape              : (100, 100)
    Chunk shape        : (10, 10)
    Order              : C
    Read-only          : False
    Store type         : MemoryStore
    Filters            : ()
    Serializer         : BytesCodec(endian='little')
    Compressors        : (ZstdCodec(level=0, checksum=False),)
    No. bytes          : 40000 (39.1K)
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape as html_escape
from typing import Any

import numpy as np

__all__ = [
    "ArrayInfo",
    "GroupInfo",
    "TreeRepr",
    "byte_info",
    "codec_repr",
    "data_type_repr",
    "human_readable_size",
    "render_tree",
]


# -- sizes -------------------------------------------------------------------------------
def human_readable_size(size: int) -> str:
    """``size`` bytes with a binary unit and one decimal (``"39.1K"``); below 1 KiB, the
    number alone."""
    for power, unit in ((50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")):
        if size >= 2**power:
            return f"{size / float(2**power):.1f}{unit}"
    return f"{size}"


def byte_info(size: int) -> str:
    """``"40000 (39.1K)"``; below 1 KiB, the number alone."""
    return str(size) if size < 2**10 else f"{size} ({human_readable_size(size)})"


# -- data types --------------------------------------------------------------------------
_NAMES = {"b": "Bool", "i": "Int", "u": "UInt", "f": "Float", "c": "Complex"}


def _endianness(dt: np.dtype) -> str:
    order = dt.byteorder
    if order in ("=", "|"):
        return sys.byteorder
    return "big" if order == ">" else "little"


def data_type_repr(dt: np.dtype, *, variable_length: str | None = None) -> str:
    """The name zarr-python's data-type class gives ``dt`` (``Float64(endianness='little')``,
    ``FixedLengthUTF32(length=4, endianness='little')``, ``Structured(fields=(...))``).
    ``variable_length``: ``"string"`` or ``"bytes"`` for an array of variable-length
    strings or bytes (NumPy stores those as objects)."""
    if variable_length == "string" or dt.kind == "T":
        return "VariableLengthUTF8()"
    if variable_length == "bytes":
        return "VariableLengthBytes()"
    kind = dt.kind
    if kind == "b":
        return "Bool()"
    if kind in "iu" and dt.itemsize == 1:
        return f"{_NAMES[kind]}8()"
    if kind in "iufc":
        return f"{_NAMES[kind]}{dt.itemsize * 8}(endianness={_endianness(dt)!r})"
    if kind == "U":
        return f"FixedLengthUTF32(length={dt.itemsize // 4}, endianness={_endianness(dt)!r})"
    if kind == "S":
        return f"NullTerminatedBytes(length={dt.itemsize})"
    if kind == "V" and dt.names is not None:
        fields = tuple((name, data_type_repr(dt.fields[name][0])) for name in dt.names)
        inner = ", ".join(f"({name!r}, {t})" for name, t in fields)
        return f"Structured(fields=({inner}{',' if len(fields) == 1 else ''}))"
    if kind == "V":
        return f"RawBytes(length={dt.itemsize})"
    if kind in "Mm":
        unit, count = np.datetime_data(dt)
        cls = "DateTime64" if kind == "M" else "TimeDelta64"
        return (f"{cls}(endianness={_endianness(dt)!r}, scale_factor={count}, "
                f"unit={unit!r})")
    return str(dt)


# -- codecs ------------------------------------------------------------------------------
#: zarr-python's class names of the ``numcodecs.*`` codecs (``zarr.codecs.numcodecs``)
_NUMCODECS_CLASSES = {
    "adler32": "Adler32", "astype": "AsType", "bitround": "BitRound", "blosc": "Blosc",
    "bz2": "BZ2", "crc32": "CRC32", "crc32c": "CRC32C", "delta": "Delta",
    "fixedscaleoffset": "FixedScaleOffset", "fletcher32": "Fletcher32", "gzip": "GZip",
    "jenkins_lookup3": "JenkinsLookup3", "lz4": "LZ4", "lzma": "LZMA", "packbits": "PackBits",
    "pcodec": "PCodec", "quantize": "Quantize", "shuffle": "Shuffle", "zfpy": "ZFPY",
    "zlib": "Zlib", "zstd": "Zstd",
}


def codec_repr(codec: Any) -> str:
    """A Zarr v3 codec as zarr-python's codec class prints (``ZstdCodec(level=0,
    checksum=False)``); a codec zarr-python does not have prints as zarrfast's."""
    name = type(codec).__name__
    if name == "BytesCodec":
        return f"BytesCodec(endian={codec.endian!r})"
    if name in ("BloscCodec", "NumcodecsBloscCodec") and hasattr(codec, "cname"):
        return (f"BloscCodec(_tunable_attrs=set(), typesize={codec.typesize}, "
                f"cname={codec.cname!r}, clevel={codec.clevel}, "
                f"shuffle={codec.shuffle!r}, "
                f"blocksize={codec.blocksize})")
    if name == "ShardingCodec":
        inner = ", ".join(codec_repr(c) for c in codec.codecs)
        index = ", ".join(codec_repr(c) for c in codec.index_codecs)
        return (f"ShardingCodec(chunk_shape={codec.chunk_shape}, "
                f"codecs=({inner}{',' if len(codec.codecs) == 1 else ''}), "
                f"index_codecs=({index}{',' if len(codec.index_codecs) == 1 else ''}), "
                f"index_location={codec.index_location!r}, "
                f"subchunk_write_order={codec.subchunk_write_order!r})")
    codec_name = getattr(codec, "name", "")
    configuration = getattr(codec, "configuration", None)
    if (isinstance(codec_name, str) and codec_name.startswith("numcodecs.")
            and isinstance(configuration, dict)):
        short = codec_name.split(".", 1)[1]
        cls = _NUMCODECS_CLASSES.get(short, short)
        return f"{cls}(codec_name={codec_name!r}, codec_config={configuration!r})"
    return repr(codec)


def numcodecs_repr(config: dict | None) -> str:
    """A Zarr v2 filter or compressor (its JSON) as the numcodecs object prints."""
    try:
        import numcodecs

        return repr(numcodecs.get_codec(dict(config or {})))
    except Exception:  # an id numcodecs does not know: its JSON
        return repr(config)


def _numcodecs_object(config: dict) -> Any:
    """A Zarr v2 filter or compressor (its JSON) as the numcodecs object, as zarr-python's
    ``ArrayInfo`` holds it; its JSON when numcodecs does not know its id."""
    try:
        import numcodecs

        return numcodecs.get_codec(dict(config))
    except Exception:
        return dict(config)


def _tuple_repr(items: Sequence[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


# -- the records ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ArrayInfo:
    """What :attr:`Array.info` and :meth:`Array.info_complete` return: prints (``repr``
    and ``str``) as zarr-python's ``ArrayInfo``.  Values are the text to show, except
    the counts."""

    zarr_format: int
    data_type: str
    fill_value: Any
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...] | None
    order: str
    read_only: bool
    store_type: str
    filters: str
    compressors: str
    serializer: str | None = None
    shard_shape: tuple[int, ...] | str | None = None
    count_bytes: int | None = None
    count_bytes_stored: int | None = None
    count_chunks_initialized: int | None = None
    #: the codec objects themselves (numcodecs objects for Zarr v2), for the names
    #: zarr-python's record gives them: ``info._filters``, ``_serializer``, ``_compressors``
    filter_objects: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    serializer_object: Any = field(default=None, repr=False, compare=False)
    compressor_objects: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    def rows(self) -> list[tuple[str, str]]:
        rows = [("Type", "Array"), ("Zarr format", str(self.zarr_format)),
                ("Data type", self.data_type), ("Fill value", str(self.fill_value)),
                ("Shape", str(self.shape))]
        if self.shard_shape is not None:
            rows.append(("Shard shape", str(self.shard_shape)))
        rows += [("Chunk shape", "<variable>" if self.chunk_shape is None
                  else str(self.chunk_shape)),
                 ("Order", self.order), ("Read-only", str(self.read_only)),
                 ("Store type", self.store_type), ("Filters", self.filters)]
        if self.serializer is not None:
            rows.append(("Serializer", self.serializer))
        rows.append(("Compressors", self.compressors))
        if self.count_bytes is not None:
            rows.append(("No. bytes", byte_info(self.count_bytes)))
        if self.count_bytes_stored is not None:
            rows.append(("No. bytes stored", byte_info(self.count_bytes_stored)))
            if self.count_bytes is not None and self.count_bytes_stored > 0:
                rows.append(("Storage ratio",
                             f"{self.count_bytes / self.count_bytes_stored:.1f}"))
        if self.count_chunks_initialized is not None:
            what = "Shards" if self.shard_shape is not None else "Chunks"
            rows.append((f"{what} Initialized", str(self.count_chunks_initialized)))
        return rows

    def __repr__(self) -> str:
        return "\n".join(f"{k:<18} : {v}" for k, v in self.rows())

    __str__ = __repr__

    def __contains__(self, text: str) -> bool:  # ``"Shape" in a.info``, as for the text
        return text in repr(self)

    def __getattr__(self, name: str) -> Any:
        # zarr-python's names: its record keeps its fields behind an underscore, and
        # libraries read them (ome-zarr: ``info._zarr_format``, ``info._compressors[0]``,
        # a codec object).  The codec fields give the objects, the others the values.
        objects = {"_filters": "filter_objects", "_serializer": "serializer_object",
                   "_compressors": "compressor_objects"}
        if name in objects:
            return object.__getattribute__(self, objects[name])
        if name.startswith("_") and name[1:] in _ARRAY_FIELDS:
            return object.__getattribute__(self, name[1:])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@dataclass(frozen=True)
class GroupInfo:
    """What :attr:`Group.info` and :meth:`Group.info_complete` return: prints as
    zarr-python's ``GroupInfo``.  The counts are of every node below the group (all
    depths); ``None`` when not known without reading the store."""

    name: str
    zarr_format: int
    read_only: bool
    store_type: str
    count_members: int | None = None
    count_arrays: int | None = None
    count_groups: int | None = None

    def rows(self) -> list[tuple[str, str]]:
        rows = [("Name", self.name), ("Type", "Group"), ("Zarr format", str(self.zarr_format)),
                ("Read-only", str(self.read_only)), ("Store type", self.store_type)]
        for label, count in (("No. members", self.count_members),
                             ("No. arrays", self.count_arrays),
                             ("No. groups", self.count_groups)):
            if count is not None:
                rows.append((label, str(count)))
        return rows

    def __repr__(self) -> str:
        return "\n".join(f"{k:<11} : {v}" for k, v in self.rows())

    def __getattr__(self, name: str) -> Any:
        # zarr-python's names, as for ArrayInfo (ome-zarr reads ``group.info._zarr_format``)
        if name.startswith("_") and name[1:] in _GROUP_FIELDS:
            return object.__getattribute__(self, name[1:])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    __str__ = __repr__

    def __contains__(self, text: str) -> bool:
        return text in repr(self)


_ARRAY_FIELDS = frozenset({
    "zarr_format", "fill_value", "shape", "shard_shape", "chunk_shape", "order",
    "read_only", "store_type", "count_bytes", "count_bytes_stored",
    "count_chunks_initialized"})
_GROUP_FIELDS = frozenset({"name", "zarr_format", "read_only", "store_type", "count_members",
                           "count_arrays", "count_groups"})


# -- the tree ------------------------------------------------------------------------------
class TreeRepr:
    """What :meth:`Group.tree` returns: box-drawing text (``repr``, ``str``), and HTML for
    Jupyter (``_repr_mimebundle_``), as zarr-python's."""

    def __init__(self, text: str, html: str, truncated: str = "") -> None:
        self._text = text
        self._html = html
        self._truncated = truncated

    def __repr__(self) -> str:
        return self._truncated + self._text

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return repr(self) == (other if isinstance(other, str) else repr(other))

    def __hash__(self) -> int:
        return hash(repr(self))

    def _repr_mimebundle_(self, include: Sequence[str] | None = None,
                          exclude: Sequence[str] | None = None, **kwargs: Any
                          ) -> dict[str, str]:
        html = (
            '<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
            "font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">"
            f"{self._truncated}{self._html}</pre>\n"
        )
        return {"text/plain": repr(self), "text/html": html}


def render_tree(root_name: str, members: Sequence[tuple[str, Any]], *, max_nodes: int = 500,
                plain: bool = False) -> TreeRepr:
    """Draw ``members`` (``(path relative to the root, label suffix or None)`` for every
    node; ``None`` marks a group, a string such as ``"(3,) int16"`` follows an array's
    name) as zarr-python's tree: names in bold (ANSI on a terminal, ``<b>`` in HTML)
    unless ``plain``, at most ``max_nodes`` nodes (a note says when some were left out)."""
    members = sorted(members, key=lambda m: m[0])
    truncated = len(members) > max_nodes
    members = members[:max_nodes]
    if plain:
        ansi_open = ansi_close = html_open = html_close = ""
    else:
        use_ansi = sys.stdout.isatty()
        ansi_open, ansi_close = ("\x1b[1m", "\x1b[0m") if use_ansi else ("", "")
        html_open, html_close = "<b>", "</b>"
    children: dict[str, list[tuple[str, Any]]] = {}
    for key, suffix in members:
        parent = key.rsplit("/", 1)[0] if "/" in key else ""
        children.setdefault(parent, []).append((key, suffix))
    text = [f"{ansi_open}{root_name}{ansi_close}"]
    html = [f"{html_open}{html_escape(root_name)}{html_close}"]
    # iterative, so that a deep hierarchy cannot exhaust the recursion limit
    stack = [("", deque(children.get("", [])))]
    while stack:
        prefix, remaining = stack[-1]
        if not remaining:
            stack.pop()
            continue
        key, suffix = remaining.popleft()
        name = key.rsplit("/", 1)[-1]
        last = not remaining
        connector = "└── " if last else "├── "
        tail = "" if suffix is None else f" {suffix}"
        text.append(f"{prefix}{connector}{ansi_open}{name}{ansi_close}{tail}")
        html.append(f"{prefix}{connector}{html_open}{html_escape(name)}{html_close}"
                    f"{html_escape(tail)}")
        if key in children:
            stack.append((prefix + ("    " if last else "│   "), deque(children[key])))
    note = (f"Truncated at max_nodes={max_nodes}, some nodes and their children may be "
            f"missing\n" if truncated else "")
    return TreeRepr("\n".join(text) + "\n", "\n".join(html) + "\n", truncated=note)


# -- building the records from nodes ---------------------------------------------------------
def _variable_length(array: Any) -> str | None:
    """``"string"``/``"bytes"`` for an array of variable-length strings/bytes."""
    md = array.metadata
    if md.zarr_format == 2:
        ids = [f.get("id") for f in (md.filters or ()) if isinstance(f, dict)]
        return "string" if "vlen-utf8" in ids else "bytes" if "vlen-bytes" in ids else None
    serializer = type(array.serializer).__name__
    return {"VLenUTF8Codec": "string", "VLenBytesCodec": "bytes"}.get(serializer)


def _registered_zdtype(md: Any, dtype: np.dtype) -> Any:
    """The registered, non-built-in data type (a ``zarrfast.dtype.ZDType``) of an array, or
    ``None``: v3 metadata carries it; a v2 array's NumPy dtype is matched against them."""
    from zarrfast.metadata.zdtype import DataTypeValidationError, data_type_registry

    zdtype = getattr(md.type_info, "zdtype", None)
    if zdtype is not None:
        return zdtype
    for cls in data_type_registry.contents.values():
        if not getattr(cls, "_zarrfast_builtin", False):
            try:
                return cls.from_native_dtype(dtype)
            except (DataTypeValidationError, TypeError, ValueError):
                continue
    return None


def array_info(array: Any, *, complete: bool) -> ArrayInfo:
    """The :class:`ArrayInfo` of ``array`` (a :class:`~zarrfast.Array`); ``complete``
    adds what the store holds (bytes stored, chunks or shards initialized)."""
    md = array.metadata
    if md.zarr_format == 2:
        filter_objects = tuple(_numcodecs_object(f) for f in (md.filters or ()))
        compressor_objects = (_numcodecs_object(md.compressor),) if md.compressor else ()
        serializer_object = None
        filters = _tuple_repr([numcodecs_repr(f) for f in (md.filters or ())])
        compressors = _tuple_repr([numcodecs_repr(md.compressor)] if md.compressor else [])
        serializer = None
    else:
        filter_objects = tuple(array.filters)
        compressor_objects = tuple(array.compressors)
        serializer_object = array.serializer
        filters = _tuple_repr([codec_repr(c) for c in filter_objects])
        compressors = _tuple_repr([codec_repr(c) for c in compressor_objects])
        serializer = codec_repr(serializer_object)
    sharded = array._sharding is not None
    if array._regular:
        chunk_shape, shard_shape = array.chunks, array.shards
    else:  # a rectilinear grid: its chunks (or shards) have no one shape
        chunk_shape = array.chunks if sharded else None
        shard_shape = "<variable>" if sharded else None
    stored = initialized = None
    if complete:
        stored = array.nbytes_stored()
        initialized = array._count_stored_objects()
    zdtype = _registered_zdtype(md, array.dtype)
    return ArrayInfo(
        zarr_format=md.zarr_format,
        data_type=repr(zdtype) if zdtype is not None
        else data_type_repr(array.dtype, variable_length=_variable_length(array)),
        fill_value=array.fill_value, shape=array.shape, chunk_shape=chunk_shape,
        shard_shape=shard_shape, order=array.order, read_only=array.read_only,
        store_type=type(array.store).__name__, filters=filters, serializer=serializer,
        compressors=compressors, count_bytes=array.nbytes, count_bytes_stored=stored,
        count_chunks_initialized=initialized, filter_objects=filter_objects,
        serializer_object=serializer_object, compressor_objects=compressor_objects)


def group_info(group: Any, members: Sequence[Any] | None) -> GroupInfo:
    """The :class:`GroupInfo` of ``group``; ``members``: the metadata of the nodes below it (all depths),
    or ``None`` when they are not to be counted."""
    counts: dict[str, int] = {}
    if members is not None:
        arrays = sum(1 for m in members if m.node_type == "array")
        counts = {"count_members": len(members), "count_arrays": arrays,
                  "count_groups": len(members) - arrays}
    return GroupInfo(name=group.path, zarr_format=group.zarr_format,
                     read_only=group.read_only, store_type=type(group.store).__name__,
                     **counts)


def store_path_str(store: Any, path: str) -> str:
    """``memory://140.../a/b``: the store's URL (its ``str``) and the node's path, as
    zarr-python's ``StorePath`` prints (in the reprs of arrays and groups)."""
    root = str(store).rstrip("/")
    return (f"{root}/{path}" if root else path).rstrip("/")
