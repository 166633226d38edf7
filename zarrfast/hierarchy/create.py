"""Building metadata from user arguments, and reading or writing nodes."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from zarrfast import config as zconfig
from zarrfast.codecs import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    BytesCodec,
    Codec,
    CodecChain,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
    parse_codec,
)
from zarrfast.codecs.numcodecs_codec import get_numcodecs_codec
from zarrfast.codecs.numcodecs_v3 import codec_json_of
from zarrfast.codecs.sharding import ShardingCodec
from zarrfast.engine.values import as_stored, text_elements
from zarrfast.errors import (
    FillValueError,
    FillValueOverflowError,
    MetadataTypeError,
    MetadataValidationError,
    ZarrfastError,
    ZarrUserWarning,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.array_config import check_keys, parse_array_config, runtime_keywords
from zarrfast.hierarchy.node import node_key, write_new_node
from zarrfast.metadata.chunk_grid import (
    ChunkKeyEncoding,
    RegularChunkGrid,
    is_rectilinear_chunks,
    normalize_rectilinear_chunks,
    parse_chunk_key_encoding,
)
from zarrfast.metadata.dtype import DataType, data_type_from_numpy
from zarrfast.metadata.limits import check_array_size
from zarrfast.metadata.v2 import ArrayMetadataV2
from zarrfast.metadata.v3 import ArrayMetadata
from zarrfast.metadata.zdtype import (
    VariableLengthBytes,
    VariableLengthUTF8,
    ZDType,
    foreign_zdtype,
)
from zarrfast.storage import Store

__all__ = [
    "DEFAULT_FILL_VALUE",
    "build_array_metadata",
    "build_array_metadata_v2",
    "check_zarr_format",
    "create_array_at",
]

class _DefaultFillValue:
    """The ``fill_value`` of a caller that gave none (zarr-python's ``DefaultFillValue``):
    the data type's default, whereas an explicit ``None`` is a v2 ``null`` fill value."""

    _instance: _DefaultFillValue | None = None

    def __new__(cls) -> _DefaultFillValue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT_FILL_VALUE"

    def __reduce__(self) -> str:
        return "DEFAULT_FILL_VALUE"


DEFAULT_FILL_VALUE = _DefaultFillValue()

#: numcodecs codecs that turn objects into bytes: only an object dtype can use them
OBJECT_CODEC_IDS = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2",
                              "pickle"})


def _default_serializer(data_type: DataType) -> Codec:
    """What zarr-python 3 serialises a data type with."""
    if data_type.name == "string":
        return VLenUTF8Codec()
    if data_type.name in ("variable_length_bytes", "bytes"):
        return VLenBytesCodec()
    return BytesCodec()


def normalize_shape(shape: Any, node: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        items = list(shape)
    except TypeError:
        raise MetadataTypeError(f"{node}: shape must be an int or a tuple of ints, got {shape!r}"
                                ) from None
    if not all(isinstance(s, (int, np.integer)) for s in items):
        raise MetadataTypeError(f"{node}: shape must be integers, got {shape!r} (Expected an "
                                f"iterable of integers)")  # (zarr-python 3.4's words)
    out = tuple(int(s) for s in items)
    if any(s < 0 for s in out) or any(isinstance(s, bool) for s in items):
        raise ZarrfastError(f"{node}: shape must be non-negative integers, got {shape!r}")
    return out


def guess_chunks(shape: tuple[int, ...], itemsize: int, *, increment_bytes: int = 256 * 1024,
                 min_bytes: int = 128 * 1024, max_bytes: int = 64 * 1024 * 1024
                 ) -> tuple[int, ...]:
    """The chunk shape zarr-python (after h5py and PyTables) picks for ``chunks="auto"``.

    The target size grows with the array: ``increment_bytes`` times 2 to the power of
    log10(array bytes / 1 MiB), kept within ``[min_bytes, max_bytes]``.  Starting from
    the whole array (every length at least 1), the dimensions are halved in turn (rounding
    up), first to last and again, until the chunk is below the target or within half of
    it, and below ``max_bytes`` (or down to one element)."""
    if min_bytes >= max_bytes:
        raise ZarrfastError(f"guess_chunks: min_bytes {min_bytes} must be below max_bytes "
                            f"{max_bytes}")
    if itemsize == 0 or not shape:
        return tuple(shape)
    chunks = [float(max(s, 1)) for s in shape]
    target = increment_bytes * 2 ** math.log10(math.prod(chunks) * itemsize / (1024.0 * 1024))
    target = min(max(target, float(min_bytes)), float(max_bytes))
    turn = 0
    while True:
        nbytes = math.prod(chunks) * itemsize
        if ((nbytes < target or abs(nbytes - target) / target < 0.5)
                and nbytes < max_bytes) or math.prod(chunks) == 1:
            break
        d = turn % len(chunks)
        chunks[d] = float(math.ceil(chunks[d] / 2.0))
        turn += 1
    return tuple(int(c) for c in chunks)


def auto_itemsize(dtype: np.dtype) -> int:
    """The element size ``chunks="auto"`` plans with: 1 for variable-length elements
    (objects, NumPy strings), as zarr-python."""
    return 1 if dtype.kind in "OT" else dtype.itemsize


def guess_shards(shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int
                 ) -> tuple[int, ...]:
    """The shard shape zarr-python picks for ``shards="auto"``: with the config key
    ``array.target_shard_size_bytes`` set, as many chunks per dimension (the same number
    in each) as fit in that many bytes and in the array; without it, two chunks along
    each dimension holding more than eight chunks."""
    target = zconfig.get("array.target_shard_size_bytes")
    warnings.warn("Automatic shard shape inference is experimental and may change without "
                  "notice.", ZarrUserWarning, stacklevel=4)
    if target is None:
        return tuple(c * 2 if s // c > 8 else c for s, c in zip(shape, chunks, strict=True))
    chunk_bytes = math.prod(chunks) * itemsize
    per_axis = 1
    if target >= chunk_bytes:
        while (chunk_bytes * (per_axis + 1) ** len(chunks) <= target
               and all(c * (per_axis + 1) <= s for c, s in zip(chunks, shape, strict=True))):
            per_axis += 1
    return tuple(c * per_axis for c in chunks)


def normalize_chunks(chunks: Any, shape: tuple[int, ...], itemsize: int, node: str, *,
                     sharded: bool = False) -> tuple[int, ...]:
    """``chunks`` as a tuple; ``"auto"`` (or ``None``): :func:`guess_chunks`, aiming at
    1 MiB or less for the inner chunks of a sharded array (as zarr-python)."""
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        if sharded:
            return guess_chunks(shape, itemsize, max_bytes=1 << 20)
        return guess_chunks(shape, itemsize)
    if isinstance(chunks, (int, np.integer)) and not isinstance(chunks, bool):
        chunks = (int(chunks),) * len(shape)
    try:
        out = list(chunks)
    except TypeError:
        raise ZarrfastError(f"{node}: chunks must be 'auto', an int or a tuple, got {chunks!r}"
                            ) from None
    if len(out) != len(shape):
        raise ZarrfastError(
            f"{node}: chunks {tuple(out)} has rank {len(out)} but shape {shape} has rank "
            f"{len(shape)}"
        )
    for d, c in enumerate(out):
        if c is None or c == -1:
            out[d] = max(shape[d], 1)
        elif isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise MetadataTypeError(f"{node}: chunk sizes must be integers >= 1, got {chunks!r}")
        elif c < 1:
            raise ZarrfastError(f"{node}: chunk sizes must be integers >= 1, got {chunks!r}")
        else:
            out[d] = int(c)
    return tuple(out)


def shard_index_location(shards: Any, node: str) -> str:
    """Where the ``shards`` argument puts each shard's index: ``"end"``, or a mapping's
    ``"index_location"`` (zarr-python's ``{"shape": ..., "index_location": ...}``).  A key
    of the mapping that is neither is refused, never dropped."""
    if not isinstance(shards, Mapping):
        return "end"
    unknown = sorted(set(shards) - {"shape", "index_location"}, key=str)
    if unknown:
        raise ZarrfastError(
            f"{node}: shards takes the keys 'shape' and 'index_location', got "
            f"{', '.join(repr(k) for k in unknown)} (index codecs and other settings of "
            f"the sharding codec: pass a ShardingCodec in serializer/codecs)")
    where = shards.get("index_location")
    where = "end" if where is None else getattr(where, "value", where)
    if where not in ("start", "end"):
        raise ZarrfastError(
            f"{node}: shards index_location must be 'start' or 'end', got "
            f"{shards.get('index_location')!r}")
    return where


def normalize_shards(shards: Any, shape: tuple[int, ...], inner: tuple[int, ...], node: str,
                     itemsize: int = 1) -> tuple[int, ...]:
    if isinstance(shards, Mapping):  # (its other key: shard_index_location)
        shards = shards.get("shape")
    if isinstance(shards, str) and shards == "auto":
        return guess_shards(shape, inner, itemsize)
    if isinstance(shards, (int, np.integer)) and not isinstance(shards, bool):
        shards = (int(shards),) * len(shape)
    try:
        out = tuple(int(s) for s in shards)
    except (TypeError, ValueError):
        raise ZarrfastError(f"{node}: shards must be a tuple of ints, got {shards!r}") from None
    if len(out) != len(shape):
        raise ZarrfastError(
            f"{node}: shards {out} has rank {len(out)} but shape {shape} has rank {len(shape)}"
        )
    for i, (s, c) in enumerate(zip(out, inner, strict=True)):
        if s < 1 or s % c:
            raise ZarrfastError(  # (zarr-python 3.4's words first)
                f"{node}: Chunk edge length {s} in dimension {i} is not divisible by the "
                f"shard's inner chunk size {c}. (shard shape {out} must be a positive "
                f"multiple of the chunk shape {inner} in every dimension)"
            )
    return out


def parse_chunk_key_encoding_argument(value: Any, node: str, *, zarr_format: int = 3
                                      ) -> ChunkKeyEncoding:
    """The ``chunk_key_encoding`` argument of :func:`zarrfast.create_array` as an encoding:
    ``None`` (the format's default), a name (``"default"``, ``"v2"``), a tuple
    ``(name, separator)``, a dict ``{"name": ..., "separator": ...}`` or in the metadata's
    form ``{"name": ..., "configuration": {"separator": ...}}``, or an encoding object
    (zarrfast's or zarr-python's).  Zarr v2 arrays take only the ``"v2"`` encoding."""
    where = f"{node}: chunk_key_encoding"
    if value is None:
        value = "default" if zarr_format == 3 else "v2"
    if isinstance(value, (tuple, list)):
        if not 1 <= len(value) <= 2 or not all(isinstance(v, str) for v in value):
            raise MetadataValidationError(
                f"{where}: a tuple must be (name,) or (name, separator), got {value!r}")
        value = {"name": value[0], **({"separator": value[1]} if len(value) == 2 else {})}
    elif (not isinstance(value, (str, Mapping, ChunkKeyEncoding))
          and isinstance(getattr(value, "name", None), str)):  # zarr-python's encodings
        value = {"name": value.name, "separator": getattr(value, "separator", "/")}
    if isinstance(value, Mapping) and "separator" in value:
        value = {"name": value.get("name", "default"),
                 "configuration": {"separator": value["separator"]}}
    cke = parse_chunk_key_encoding(dict(value) if isinstance(value, Mapping) else value,
                                   where=where)
    if not cke.write_configuration:  # (the separator spelled out, as zarr-python writes)
        cke = replace(cke, write_configuration=True)
    if zarr_format == 2 and cke.name != "v2":
        raise MetadataValidationError(
            f"{where}: Invalid chunk key encoding. For Zarr format 2 arrays, the `name` field "
            f"of the chunk key encoding must be 'v2'. Got {cke.name!r}; "
            f"pass ('v2', '.') or ('v2', '/')")
    return cke


def _codec_list(value: Any, default: list, what: str, node: str) -> list[Codec]:
    if isinstance(value, str) and value == "auto":
        value = default
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):  # one codec (ours, numcodecs', zarr-python's)
        value = [value]
    out = []
    for i, v in enumerate(value):
        where = f"{node}: {what}[{i}]"
        c = parse_codec(codec_json_of(v, where=where), where=where)
        if c is None:
            raise MetadataValidationError(f"{node}: {what}[{i}] {v!r} is not a known codec")
        out.append(c)
    return out


def build_array_metadata(
    *,
    shape: Any,
    dtype: Any,
    chunks: Any = "auto",
    fill_value: Any = DEFAULT_FILL_VALUE,
    filters: Any = "auto",
    compressors: Any = "auto",
    serializer: Any = "auto",
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    attributes: Mapping[str, Any] | None = None,
    shards: Any = None,
    node: str = "array",
) -> tuple[ArrayMetadata, CodecChain]:
    """The metadata :func:`zarrfast.create_array` writes, from its arguments, and the codec
    chain it records (its codec objects, which need not be registered).

    ``fill_value`` ``None`` (or not given) is the data type's default, as in zarr-python
    for Zarr v3."""
    shape_t = normalize_shape(shape, node)
    data_type: DataType = data_type_from_numpy(dtype, where=f"{node}: dtype")
    check_array_size(shape_t, where=f"{node}: shape")
    itemsize = 1 if data_type.variable_length else data_type.itemsize  # (for "auto")
    grid: Any = None  # a rectilinear grid of chunks or shards (nested lists)
    if is_rectilinear_chunks(chunks):
        if shards is not None:
            raise ZarrfastError(
                f"{node}: rectilinear chunks with sharding are not supported; give "
                f"rectilinear shards instead: chunks=(inner sizes...), shards=[[sizes], ...]")
        grid = normalize_rectilinear_chunks(chunks, shape_t, f"{node}: chunks")
        chunk_shape = grid.first_chunk_shape()
    else:
        chunk_shape = normalize_chunks(chunks, shape_t, itemsize, node,
                                       sharded=shards is not None)
    aa = _codec_list(filters, [], "filters", node)
    ser = _codec_list(serializer, [_default_serializer(data_type)], "serializer", node)
    bb = _codec_list(compressors, [ZstdCodec(level=0, checksum=False)], "compressors", node)
    for what, codecs, cls in (("filters", aa, ArrayArrayCodec),
                              ("compressors", bb, BytesBytesCodec)):
        for c in codecs:
            if not isinstance(c, cls):
                raise MetadataTypeError(
                    f"{node}: {what} take {cls.__name__}s; {c.name!r} is not one"
                )
    if len(ser) != 1 or not isinstance(ser[0], ArrayBytesCodec):
        raise MetadataTypeError(
            f"{node}: serializer must be one array -> bytes codec (such as 'bytes'), got "
            f"{serializer!r}"
        )
    # validated, then automatically chosen parameters filled in (blosc's typesize)
    chain = CodecChain.create((*aa, *ser, *bb), chunk_shape=chunk_shape,
                              data_type=data_type, node=node)
    if shards is not None and is_rectilinear_chunks(shards):
        grid = normalize_rectilinear_chunks(shards, shape_t, f"{node}: shards")
        for d, (v, c) in enumerate(zip(grid.chunk_shapes, chunk_shape, strict=True)):
            for size in (v,) if isinstance(v, int) else v:
                if size % c:
                    raise ZarrfastError(
                        f"{node}: shard edge length {size} in dimension {d} is not a "
                        f"multiple of the inner chunk size {c}")
        sharding = ShardingCodec(chunk_shape=chunk_shape, codecs=chain.codecs,
                                 index_location=shard_index_location(shards, node))
        chunk_shape = grid.first_chunk_shape()
        chain = CodecChain.create((sharding,), chunk_shape=chunk_shape, data_type=data_type,
                                  node=node)
    elif shards is not None:
        # as in zarr-python: `chunks` are the inner chunks, the codecs go inside the shard
        shard_shape = normalize_shards(shards, shape_t, chunk_shape, node, itemsize)
        # a shard's grid of inner chunks, indexed as an array's grid of chunks is
        check_array_size(shard_shape, chunks=chunk_shape, where=f"{node}: shards")
        sharding = ShardingCodec(chunk_shape=chunk_shape, codecs=chain.codecs,
                                 index_location=shard_index_location(shards, node))
        chain = CodecChain.create((sharding,), chunk_shape=shard_shape, data_type=data_type,
                                  node=node)
        chunk_shape = shard_shape
    if grid is not None:
        for probe in grid.probe_shapes(shape_t)[1:]:  # every edge length suits the codecs
            chain.for_chunk_shape(probe)
    else:  # the grid of chunks (or shards), before the metadata checks it unnamed
        check_array_size(shape_t, chunks=chunk_shape, where=f"{node}: shape")

    cke = parse_chunk_key_encoding_argument(chunk_key_encoding, node)

    if fill_value is DEFAULT_FILL_VALUE:
        fill_value = None
    fv = data_type.coerce_fill_value(fill_value, where=f"{node}: fill_value")
    dims = None
    if dimension_names is not None:
        dims = tuple(dimension_names)
        if not all(d is None or isinstance(d, str) for d in dims):
            raise MetadataTypeError(
                f"{node}: dimension_names must be strings or None, got {dimension_names!r}")
        if len(dims) != len(shape_t):
            raise MetadataValidationError(
                f"{node}: dimension_names must be {len(shape_t)} strings or None, got "
                f"{dimension_names!r}"
            )
    attrs = dict(attributes or {})
    return ArrayMetadata(
        shape=shape_t,
        data_type=data_type,
        chunk_grid=RegularChunkGrid(chunk_shape) if grid is None else grid,
        chunk_key_encoding=cke,
        fill_value=fv,
        codecs=chain.codecs,
        attributes=attrs,
        dimension_names=dims,
        storage_transformers=(),
    ), chain


def _numcodecs_config(codec: Any, what: str, node: str) -> dict:
    """A numcodecs codec (instance or config dict) as its config dict."""
    if isinstance(codec, BytesBytesCodec) and what == "compressor":  # (zarr-python's words)
        raise ZarrfastError(
            f"{node}: {what} {codec!r}: Cannot use a BytesBytesCodec as a compressor for zarr "
            f"v2 arrays. Use a numcodecs codec directly instead.")
    if isinstance(codec, Mapping):
        config = dict(codec)
    elif hasattr(codec, "get_config"):
        config = codec.get_config()
    else:
        # (zarr-python: a TypeError for a filter, a ValueError for the compressor)
        raise (MetadataTypeError if what.startswith("filters") else ZarrfastError)(
            f"{node}: {what} for Zarr v2 must be numcodecs codecs or their config dicts, "
            f"got {codec!r}"
        )
    get_numcodecs_codec(config, where=f"{node}: {what}")  # validates the id
    return config


def _one_or_many(value: Any) -> list:
    """A codec argument as a list: one codec (a numcodecs codec, its config dict, a v3
    codec object, anything not iterable) or a sequence of them."""
    if isinstance(value, (Mapping, Codec, str)) or hasattr(value, "get_config"):
        return [value]
    try:
        return list(value)
    except TypeError:
        return [value]


def build_array_metadata_v2(
    *,
    shape: Any,
    dtype: Any,
    chunks: Any = "auto",
    fill_value: Any = DEFAULT_FILL_VALUE,
    filters: Any = "auto",
    compressors: Any = "auto",
    order: str | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    attributes: Mapping[str, Any] | None = None,
    node: str = "array",
) -> ArrayMetadataV2:
    """The Zarr v2 metadata :func:`zarrfast.create_array` writes with ``zarr_format=2``.

    As zarr-python: ``fill_value=None`` is stored as ``null`` (missing chunks then read as
    zeros, ``""`` for vlen strings, NaT for datetimes); not giving one
    (:data:`DEFAULT_FILL_VALUE`) stores the dtype's default."""
    shape_t = normalize_shape(shape, node)
    dtype = foreign_zdtype(dtype) or dtype  # another library's data type object: ours
    if isinstance(dtype, ZDType):  # zarr-python's data type objects
        dtype = str if isinstance(dtype, VariableLengthUTF8) else bytes if isinstance(
            dtype, VariableLengthBytes) else dtype.to_native_dtype()
    if isinstance(dtype, str) and dtype in ("str", "string"):
        dtype = str
    if dtype is str:
        np_dtype = np.dtype(object)
        default_filters: list = [{"id": "vlen-utf8"}]
    elif dtype is bytes:
        np_dtype = np.dtype(object)
        default_filters = [{"id": "vlen-bytes"}]
    else:
        try:
            np_dtype = np.dtype(dtype)
        except TypeError as e:
            raise ZarrfastError(f"{node}: {dtype!r} is not a data type ({e})") from None
        default_filters = []
        if np_dtype.kind == "T":  # NumPy's StringDType: stored as v2 vlen strings
            np_dtype = np.dtype(object)
            default_filters = [{"id": "vlen-utf8"}]
    check_array_size(shape_t, where=f"{node}: shape")
    chunk_shape = normalize_chunks(chunks, shape_t, auto_itemsize(np_dtype), node)
    check_array_size(shape_t, chunks=chunk_shape, where=f"{node}: shape")  # (the grid)
    if isinstance(filters, str) and filters == "auto":
        filters = default_filters
    filter_list = [] if filters is None else _one_or_many(filters)
    filter_configs = [_numcodecs_config(f, f"filters[{i}]", node)
                      for i, f in enumerate(filter_list)]
    for i, config in enumerate(filter_configs):
        if config.get("id") in OBJECT_CODEC_IDS and np_dtype.kind != "O":
            raise ZarrfastError(
                f"{node}: filters[{i}] {config['id']!r} is an object codec, which needs an "
                f"object dtype, but dtype is {np_dtype}; pass dtype=str (or bytes, or object) "
                f"for variable-length elements, or drop the filter for {np_dtype}"
            )
    if np_dtype.kind == "O" and not filter_configs:
        raise ZarrfastError(
            f"{node}: an object dtype needs an object codec in filters, e.g. "
            f"numcodecs.VLenUTF8(); or pass dtype=str"
        )
    if isinstance(compressors, str) and compressors == "auto":
        compressor: Any = {"id": "zstd", "level": 0}
    elif compressors is None:
        compressor = None
    else:
        items = _one_or_many(compressors)
        if len(items) > 1:
            raise MetadataTypeError(
                f"{node}: Zarr v2 takes at most one compressor, got {items!r}")
        compressor = _numcodecs_config(items[0], "compressor", node) if items else None
    if isinstance(chunk_key_encoding, Mapping) and "name" not in chunk_key_encoding:
        chunk_key_encoding = {"name": "v2", **chunk_key_encoding}  # {"separator": "/"}
    sep = parse_chunk_key_encoding_argument(chunk_key_encoding, node, zarr_format=2).separator
    attrs = dict(attributes or {})
    if dimension_names is not None:
        dims = list(dimension_names)
        if len(dims) != len(shape_t):
            raise MetadataValidationError(
                f"{node}: dimension_names must have {len(shape_t)} entries, got {dims!r}"
            )
        attrs["_ARRAY_DIMENSIONS"] = dims
    if fill_value is None:
        fill = None  # "fill_value": null
    elif fill_value is DEFAULT_FILL_VALUE:
        if np_dtype.kind == "O":
            fill = "" if filter_configs and filter_configs[0].get("id") == "vlen-utf8" else None
        elif np_dtype.kind in "mM":
            fill = np.array("NaT", dtype=np_dtype)[()]
        else:
            fill = np.zeros((), dtype=np_dtype)[()]
    elif np_dtype.kind == "O":
        fill = fill_value
    else:
        try:
            fill = np.asarray(fill_value, dtype=np_dtype)[()]
        except OverflowError as e:  # (300 for uint8: an OverflowError, as in zarr-python)
            raise FillValueOverflowError(
                f"{node}: fill_value {fill_value!r} does not fit {np_dtype}: {e}") from e
        except (TypeError, ValueError) as e:
            raise FillValueError(f"{node}: fill_value {fill_value!r} does not fit {np_dtype}: {e}"
                                 ) from None
    if order not in (None, "C", "F"):
        raise ZarrfastError(f"{node}: order must be 'C' or 'F', got {order!r}")
    return ArrayMetadataV2(
        shape=shape_t, chunks=chunk_shape, dtype=np_dtype, compressor=compressor,
        filters=tuple(filter_configs) or None, fill_value=fill, order=order or "C",
        dimension_separator=sep, attributes=attrs,
    )


def check_zarr_format(zarr_format: Any) -> None:
    if zarr_format not in (None, 2, 3):
        raise MetadataValidationError(
            f"Invalid value for 'zarr_format'. Expected 2, 3, or None. Got {zarr_format!r}.")


def create_array_at(
    store: Store,
    path: str,
    *,
    shape: Any = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    filters: Any = "auto",
    compressors: Any = "auto",
    compressor: Any = "auto",
    serializer: Any = "auto",
    fill_value: Any = DEFAULT_FILL_VALUE,
    order: str | None = None,
    zarr_format: int | None = None,
    attributes: Mapping[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    overwrite: bool = False,
    config: Mapping[str, Any] | None = None,
    write_data: bool = True,
    data_exclusive: bool = False,
) -> Array:
    """Create the array at ``path`` in ``store`` (what :func:`zarrfast.create_array`,
    :meth:`Group.create_array` and the converters call).

    ``zarr_format=None`` writes ``config["default_zarr_format"]``; ``order=None`` takes
    ``config={"order": ...}`` and then ``config["array.order"]`` (zarr-python's defaults).

    ``data_exclusive``: refuse ``shape`` or ``dtype`` given with ``data`` (a
    ``ValueError``), as zarr-python's ``create_array`` does; ``zarrfast.array(data,
    dtype=...)`` and ``zarrfast.open_array`` take both."""
    check_zarr_format(zarr_format)
    if zarr_format is None:
        zarr_format = zconfig.get("default_zarr_format")
    node = f"array {('/' + path)!r}"
    if not (isinstance(compressor, str) and compressor == "auto"):
        if not (isinstance(compressors, str) and compressors == "auto"):
            raise ZarrfastError(f"{node}: give compressors or the older compressor, not both")
        compressors = compressor
    if data is not None and data_exclusive:
        for what, value in (("shape", shape), ("dtype", dtype)):
            if value is not None:
                raise ZarrfastError(
                    f"{node}: The data parameter was used, but the {what} parameter was "
                    f"also used: give data or {what}, not both (the {what} comes from data; "
                    f"convert data with numpy.asarray(data, dtype=...) to choose the dtype)")
    if data is not None:
        data_arr = np.asarray(data)
        if shape is None:
            shape = data_arr.shape
        if dtype is None:
            dtype = data_arr.dtype
            if dtype.kind == "O" and not all(
                    isinstance(x, str) for x in data_arr.reshape(-1).tolist()):
                # (an object array of anything but str would be stored as the strings of
                # its elements: 1 -> '1', None -> 'None', b'ab' -> 'ab'; zarr-python 3.4
                # refuses every object array here)
                raise MetadataTypeError(
                    f"{node}: Zarr data type resolution from object failed: data of dtype "
                    f"object holds elements other than str; pass dtype=str (strings), "
                    f"dtype=bytes (variable-length bytes) or convert the data")
    else:
        data_arr = None
    if shape is None:
        raise ZarrfastError(f"{node}: shape was not specified (give shape, or data)")
    if dtype is None and data_exclusive:  # (create_array: data, or shape and dtype)
        raise ZarrfastError(
            f"{node}: The data parameter was set to None, but dtype was not specified. "
            f"Either provide an array-like value for data, or specify dtype.")
    if dtype is None:
        dtype = np.float64
    if order not in (None, "C", "F"):
        raise ZarrfastError(f"{node}: order must be 'C' or 'F', got {order!r}")
    if config is not None and not isinstance(config, Mapping) and callable(
            getattr(config, "to_dict", None)):  # an ArrayConfig (zarrfast's or zarr-python's)
        config = config.to_dict()
    config = dict(config or {})
    check_keys(config, node)
    parse_array_config(config)  # (the values checked before anything is written)
    order = order or config.get("order") or zconfig.get("array.order")
    if order not in ("C", "F"):
        raise ZarrfastError(f"{node}: config order must be 'C' or 'F', got {order!r}")
    if zarr_format == 2:
        if shards is not None:
            raise ZarrfastError(f"{node}: Zarr format 2 arrays can only be created with "
                                f"`shard_shape` set to `None`. Got `shard_shape={shards}` instead.")
        if not (isinstance(serializer, str) and serializer == "auto"):
            raise ZarrfastError(f"{node}: Zarr format 2 arrays do not support `serializer`. "
                                f"Got {serializer!r}")
        chain = None
        md: Any = build_array_metadata_v2(
            shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, filters=filters,
            compressors=compressors, order=order, chunk_key_encoding=chunk_key_encoding,
            dimension_names=dimension_names, attributes=attributes, node=node,
        )
    else:
        md, chain = build_array_metadata(
            shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, filters=filters,
            compressors=compressors, serializer=serializer,
            chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
            attributes=attributes, shards=shards, node=node,
        )
    if data is not None and write_data:
        # cast (a list's 300 into uint8 refused, as NumPy refuses it) and checked against
        # the shape before the node is written, or an existing one replaced
        data_arr = as_stored(data, md.dtype, where=node, elements=text_elements(md))
        try:
            np.broadcast_shapes(data_arr.shape, tuple(md.shape))
        except ValueError:
            raise ZarrfastError(
                f"{node}: data of shape {data_arr.shape} cannot be broadcast to the "
                f"array's shape {tuple(md.shape)}") from None
    if store.read_only:
        store._check_writable(node_key(path, "zarr.json"))
    write_new_node(store, path, md, overwrite=overwrite)
    arr = Array(store, path, md, read_only=False, codecs=chain,
                write_empty_chunks=config.get("write_empty_chunks"),
                order=order, **runtime_keywords(config))
    if data_arr is not None and write_data:
        arr[...] = data_arr
    return arr
