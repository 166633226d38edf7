"""Building metadata from user arguments, and reading or writing nodes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._paths import metadata_key
from .chunk_grid import ChunkKeyEncoding, RegularChunkGrid, parse_chunk_key_encoding
from .codecs import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    BytesCodec,
    Codec,
    ZstdCodec,
    parse_codec,
)
from .codecs.sharding import ShardingCodec
from .errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    MetadataValidationError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ZarrfastError,
)
from .metadata.dtype import DataType, data_type_from_numpy
from .metadata.v3 import ArrayMetadata, GroupMetadata, parse_metadata, validate_codec_chain
from .stores import Store

__all__ = ["build_array_metadata", "read_node_metadata", "write_new_node"]

_AUTO_CHUNK_BYTES = 1 << 20


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
    if isinstance(value, (Codec, Mapping, str)):
        value = [value]
    out = []
    for i, v in enumerate(value):
        c = parse_codec(v, where=f"{node}: {what}[{i}]")
        if c is None:
            raise MetadataValidationError(f"{node}: {what}[{i}] {v!r} is not a known codec")
        out.append(c)
    return out


def build_array_metadata(
    *,
    shape: Any,
    dtype: Any,
    chunks: Any = "auto",
    fill_value: Any = None,
    filters: Any = "auto",
    compressors: Any = "auto",
    serializer: Any = "auto",
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    attributes: Mapping[str, Any] | None = None,
    shards: Any = None,
    node: str = "array",
) -> ArrayMetadata:
    """The metadata :func:`zarrfast.create_array` writes, from its arguments."""
    shape_t = normalize_shape(shape, node)
    data_type: DataType = data_type_from_numpy(dtype, where=f"{node}: dtype")
    chunk_shape = normalize_chunks(chunks, shape_t, data_type.itemsize, node)
    aa = _codec_list(filters, [], "filters", node)
    ser = _codec_list(serializer, [BytesCodec()], "serializer", node)
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
    validate_codec_chain((*aa, *ser, *bb), shape=chunk_shape, data_type=data_type, node=node)
    # fill in automatically chosen parameters, following the chunk through the chain
    evolved: list[Codec] = []
    cur_shape = chunk_shape
    for c in [*aa, *ser, *bb]:
        c2 = c.evolve(shape=cur_shape, data_type=data_type)
        evolved.append(c2)
        if isinstance(c2, ArrayArrayCodec):
            cur_shape = c2.encoded_shape(cur_shape)
    codecs = tuple(evolved)
    validate_codec_chain(codecs, shape=chunk_shape, data_type=data_type, node=node)
    if shards is not None:
        # as in zarr-python: `chunks` are the inner chunks, the codecs go inside the shard
        shard_shape = normalize_shards(shards, shape_t, chunk_shape, node)
        sharding = ShardingCodec(chunk_shape=chunk_shape, codecs=codecs)
        sharding = sharding.evolve(shape=shard_shape, data_type=data_type)
        codecs = (sharding,)
        chunk_shape = shard_shape
        validate_codec_chain(codecs, shape=chunk_shape, data_type=data_type, node=node)

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
        chunk_grid=RegularChunkGrid(chunk_shape),
        chunk_key_encoding=cke,
        fill_value=fv,
        codecs=codecs,
        attributes=attrs,
        dimension_names=dims,
        storage_transformers=(),
    )


def read_node_metadata(store: Store, path: str) -> ArrayMetadata | GroupMetadata:
    key = metadata_key(path)
    raw = store.get(key)
    if raw is None:
        raise NodeNotFoundError(f"no array or group at path {path or '/'!r} in {store!r} "
                                f"(key {key!r} is missing)")
    return parse_metadata(raw, path=path, key=key)


def _read_typed(store: Store, path: str, cls: type, missing: type[NodeNotFoundError]) -> Any:
    key = metadata_key(path)
    raw = store.get(key)
    what = "array" if cls is ArrayMetadata else "group"
    if raw is None:
        raise missing(f"no {what} at path {path or '/'!r} in {store!r} (key {key!r} is missing)")
    md = parse_metadata(raw, path=path, key=key)
    if not isinstance(md, cls):
        article = {"array": "an array", "group": "a group"}
        other = "group" if what == "array" else "array"
        raise NodeTypeValidationError(
            f"node at path {path or '/'!r} is {article[other]}, not {article[what]}"
        )
    return md


def read_array_metadata(store: Store, path: str) -> ArrayMetadata:
    return _read_typed(store, path, ArrayMetadata, ArrayNotFoundError)


def read_group_metadata(store: Store, path: str) -> GroupMetadata:
    return _read_typed(store, path, GroupMetadata, GroupNotFoundError)


def _existing_type(store: Store, path: str) -> str | None:
    raw = store.get(metadata_key(path))
    if raw is None:
        return None
    try:
        import json

        doc = json.loads(bytes(raw))
        return doc.get("node_type") if isinstance(doc, dict) else "unknown"
    except ValueError:
        return "unknown"


def write_new_node(
    store: Store, path: str, metadata: ArrayMetadata | GroupMetadata, *, overwrite: bool
) -> None:
    """Write a new node's metadata; create missing parent groups; refuse to clobber."""
    existing = _existing_type(store, path)
    if existing is not None:
        if not overwrite:
            if existing == "array":
                raise ContainsArrayError(
                    f"an array already exists at path {path or '/'!r} in {store!r}; "
                    f"pass overwrite=True (or mode='w') to replace it"
                )
            raise ContainsGroupError(
                f"a group already exists at path {path or '/'!r} in {store!r}; "
                f"pass overwrite=True (or mode='w') to replace it"
            )
    if overwrite:
        store.delete_dir(path)
        store.delete(metadata_key(path))
    # parents
    parts = path.split("/") if path else []
    for i in range(len(parts)):
        parent = "/".join(parts[:i])
        kind = _existing_type(store, parent)
        if kind == "array":
            raise ContainsArrayError(
                f"cannot create {path!r}: its parent {parent or '/'!r} is an array"
            )
        if kind is None:
            store.set(metadata_key(parent), GroupMetadata().to_json())
    store.set(metadata_key(path), metadata.to_json())
