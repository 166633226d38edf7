"""Building metadata from user arguments, and reading or writing nodes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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
from zarrfast.errors import FillValueError, MetadataValidationError, ZarrfastError
from zarrfast.hierarchy.array import Array
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
from zarrfast.metadata.zdtype import VariableLengthBytes, VariableLengthUTF8, ZDType
from zarrfast.storage import Store

__all__ = [
    "DEFAULT_FILL_VALUE",
    "build_array_metadata",
    "build_array_metadata_v2",
    "check_zarr_format",
    "create_array_at",
]

_AUTO_CHUNK_BYTES = 1 << 20


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
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise ZarrfastError(f"{node}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in out) or any(isinstance(s, bool) for s in shape):
        raise ZarrfastError(f"{node}: shape must be non-negative integers, got {shape!r}")
    return out


def guess_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Chunks of about 1 MiB: halve the longest dimension until the chunk fits."""
    chunks = [max(s, 1) for s in shape]
    while math.prod(chunks) * itemsize > _AUTO_CHUNK_BYTES and max(chunks) > 1:
        d = int(np.argmax(chunks))
        chunks[d] = -(-chunks[d] // 2)
    return tuple(chunks)


def normalize_chunks(chunks: Any, shape: tuple[int, ...], itemsize: int, node: str
                     ) -> tuple[int, ...]:
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
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
        elif isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ZarrfastError(f"{node}: chunk sizes must be integers >= 1, got {chunks!r}")
        else:
            out[d] = int(c)
    return tuple(out)


def normalize_shards(shards: Any, shape: tuple[int, ...], inner: tuple[int, ...], node: str
                     ) -> tuple[int, ...]:
    if isinstance(shards, Mapping):
        shards = shards.get("shape")
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
    for s, c in zip(out, inner, strict=True):
        if s < 1 or s % c:
            raise ZarrfastError(
                f"{node}: shard shape {out} must be a positive multiple of the chunk shape "
                f"{inner} in every dimension"
            )
    return out


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
    check_array_size(shape_t, data_type.itemsize, where=f"{node}: shape")
    grid: Any = None  # a rectilinear grid of chunks or shards (nested lists)
    if is_rectilinear_chunks(chunks):
        if shards is not None:
            raise ZarrfastError(
                f"{node}: rectilinear chunks with sharding are not supported; give "
                f"rectilinear shards instead: chunks=(inner sizes...), shards=[[sizes], ...]")
        grid = normalize_rectilinear_chunks(chunks, shape_t, f"{node}: chunks")
        chunk_shape = grid.first_chunk_shape()
    else:
        chunk_shape = normalize_chunks(chunks, shape_t, data_type.itemsize, node)
    aa = _codec_list(filters, [], "filters", node)
    ser = _codec_list(serializer, [_default_serializer(data_type)], "serializer", node)
    bb = _codec_list(compressors, [ZstdCodec(level=0, checksum=False)], "compressors", node)
    for what, codecs, cls in (("filters", aa, ArrayArrayCodec),
                              ("compressors", bb, BytesBytesCodec)):
        for c in codecs:
            if not isinstance(c, cls):
                raise MetadataValidationError(
                    f"{node}: {what} take {cls.__name__}s; {c.name!r} is not one"
                )
    if len(ser) != 1 or not isinstance(ser[0], ArrayBytesCodec):
        raise MetadataValidationError(
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
        sharding = ShardingCodec(chunk_shape=chunk_shape, codecs=chain.codecs)
        chunk_shape = grid.first_chunk_shape()
        chain = CodecChain.create((sharding,), chunk_shape=chunk_shape, data_type=data_type,
                                  node=node)
    elif shards is not None:
        # as in zarr-python: `chunks` are the inner chunks, the codecs go inside the shard
        shard_shape = normalize_shards(shards, shape_t, chunk_shape, node)
        sharding = ShardingCodec(chunk_shape=chunk_shape, codecs=chain.codecs)
        chain = CodecChain.create((sharding,), chunk_shape=shard_shape, data_type=data_type,
                                  node=node)
        chunk_shape = shard_shape
    if grid is not None:
        for probe in grid.probe_shapes(shape_t)[1:]:  # every edge length suits the codecs
            chain.for_chunk_shape(probe)

    cke: ChunkKeyEncoding
    if chunk_key_encoding is None:
        cke = parse_chunk_key_encoding("default")
    elif isinstance(chunk_key_encoding, Mapping) and "separator" in chunk_key_encoding:
        cke = parse_chunk_key_encoding(
            {"name": chunk_key_encoding.get("name", "default"),
             "configuration": {"separator": chunk_key_encoding["separator"]}},
            where=f"{node}: chunk_key_encoding",
        )
    else:
        cke = parse_chunk_key_encoding(chunk_key_encoding, where=f"{node}: chunk_key_encoding")

    if fill_value is DEFAULT_FILL_VALUE:
        fill_value = None
    fv = data_type.coerce_fill_value(fill_value, where=f"{node}: fill_value")
    dims = None
    if dimension_names is not None:
        dims = tuple(dimension_names)
        if len(dims) != len(shape_t) or not all(d is None or isinstance(d, str) for d in dims):
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
    if isinstance(codec, Mapping):
        config = dict(codec)
    elif hasattr(codec, "get_config"):
        config = codec.get_config()
    else:
        raise ZarrfastError(
            f"{node}: {what} for Zarr v2 must be numcodecs codecs or their config dicts, "
            f"got {codec!r}"
        )
    get_numcodecs_codec(config, where=f"{node}: {what}")  # validates the id
    return config


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
    check_array_size(shape_t, np_dtype.itemsize, where=f"{node}: shape")
    chunk_shape = normalize_chunks(chunks, shape_t, max(np_dtype.itemsize, 8), node)
    if isinstance(filters, str) and filters == "auto":
        filters = default_filters
    filter_list = [] if filters is None else (
        [filters] if isinstance(filters, Mapping) or hasattr(filters, "get_config")
        else list(filters))
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
        items = ([compressors] if isinstance(compressors, Mapping)
                 or hasattr(compressors, "get_config") else list(compressors))
        if len(items) > 1:
            raise ZarrfastError(f"{node}: Zarr v2 takes at most one compressor, got {items!r}")
        compressor = _numcodecs_config(items[0], "compressor", node) if items else None
    sep = "."
    if chunk_key_encoding is not None:
        cke = chunk_key_encoding
        if isinstance(cke, Mapping):
            if cke.get("name", "v2") != "v2":
                raise ZarrfastError(f"{node}: Zarr v2 arrays use the 'v2' chunk key encoding")
            sep = cke.get("separator", cke.get("configuration", {}).get("separator", "."))
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
        raise ZarrfastError(f"zarr_format must be 2, 3 or None, got {zarr_format!r}")


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
) -> Array:
    """Create the array at ``path`` in ``store`` (what :func:`zarrfast.create_array`,
    :meth:`Group.create_array` and the converters call).

    ``zarr_format=None`` writes ``config["default_zarr_format"]``; ``order=None`` takes
    ``config={"order": ...}`` and then ``config["array.order"]`` (zarr-python's defaults)."""
    check_zarr_format(zarr_format)
    if zarr_format is None:
        zarr_format = zconfig.get("default_zarr_format")
    node = f"array {('/' + path)!r}"
    if compressor != "auto":
        compressors = compressor
    if data is not None:
        data_arr = np.asarray(data)
        if shape is None:
            shape = data_arr.shape
        if dtype is None:
            dtype = data_arr.dtype
    else:
        data_arr = None
    if shape is None:
        raise ZarrfastError(f"{node}: shape is required (or pass data=)")
    if dtype is None:
        dtype = np.float64
    if order not in (None, "C", "F"):
        raise ZarrfastError(f"{node}: order must be 'C' or 'F', got {order!r}")
    if config is not None and not isinstance(config, Mapping) and callable(
            getattr(config, "to_dict", None)):  # an ArrayConfig (zarrfast's or zarr-python's)
        config = config.to_dict()
    config = dict(config or {})
    unknown = set(config) - {"write_empty_chunks", "order"}
    if unknown:
        raise ZarrfastError(f"{node}: unknown array config keys {sorted(unknown)}")
    order = order or config.get("order") or zconfig.get("array.order")
    if order not in ("C", "F"):
        raise ZarrfastError(f"{node}: config order must be 'C' or 'F', got {order!r}")
    if zarr_format == 2:
        if shards is not None or serializer != "auto":
            raise ZarrfastError(f"{node}: Zarr v2 arrays have no shards or serializer")
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
    if store.read_only:
        store._check_writable(node_key(path, "zarr.json"))
    write_new_node(store, path, md, overwrite=overwrite)
    arr = Array(store, path, md, read_only=False, codecs=chain,
                write_empty_chunks=config.get("write_empty_chunks"),
                order=order)
    if data_arr is not None and write_data:
        arr[...] = data_arr
    return arr
