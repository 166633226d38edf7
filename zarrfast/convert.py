"""Converting hierarchies between formats: Zarr v2, v3 and the seed drafts.

``convert(src, dst, zarr_format=3)`` copies every group and array below
``src`` to ``dst`` in the target format.  When an array's chunk encoding
carries over unchanged — the same bytes decode the same way under the new
metadata (v2 ``zstd``/``gzip``/``blosc`` or no compressor and no filters, C or
F order, either byte order, to the v3 ``bytes``/``transpose`` codecs, and
back; draft arrays to final v3) — chunk bytes are copied without decoding,
only their keys change.  Other numcodecs compressors and filters become the
``numcodecs.*`` codecs zarr-python 3 writes, and back (a compressor alone keeps
its chunk bytes).  Otherwise chunks are decoded and re-encoded (zstd by default).  A progress bar (tqdm) shows the chunks copied.

Types a format cannot hold (v2 object arrays in v3, v3 raw bits and ML types in
v2) are refused with an error naming the array; datetimes, structured dtypes and
fixed-length strings carry over both ways.
"""

from __future__ import annotations

import itertools
import math
import sys
from typing import Any

import numpy as np

from zarrfast.codecs import BloscCodec, BytesCodec, GzipCodec, TransposeCodec, ZstdCodec
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.codecs.numcodecs_v3 import NUMCODECS_KINDS
from zarrfast.errors import ZarrfastError
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group
from zarrfast.hierarchy.node import node_key
from zarrfast.metadata.dtype import data_type_from_numpy
from zarrfast.storage import Store
from zarrfast.storage.resolve import StoreLike, make_store

__all__ = ["convert"]

_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _v2_compressor_to_v3(config: dict | None, itemsize: int) -> Any:
    """The v3 codec that decodes the same bytes as a v2 compressor, or ``False``."""
    if config is None:
        return None
    cid = config.get("id")
    if cid == "zstd":
        return ZstdCodec(level=int(config.get("level", 0)),
                         checksum=bool(config.get("checksum", False)))
    if cid == "gzip":
        return GzipCodec(level=int(config.get("level", 5)))
    if cid == "blosc":
        shuffle = config.get("shuffle", 1)
        if shuffle == -1:  # numcodecs AUTOSHUFFLE: bit-shuffle for 1-byte items
            shuffle = 2 if itemsize == 1 else 1
        return BloscCodec(cname=config.get("cname", "lz4"), clevel=int(config.get("clevel", 5)),
                          shuffle=_BLOSC_SHUFFLE[shuffle], typesize=itemsize,
                          blocksize=int(config.get("blocksize", 0)))
    if NUMCODECS_KINDS.get(cid) == "bytes_bytes":  # the same numcodecs codec, v3 name
        return _as_numcodecs_v3(config)
    return False


def _as_numcodecs_v3(config: dict) -> dict:
    """A v2 numcodecs config as the ``numcodecs.<id>`` codec zarr-python 3 writes."""
    rest = {k: v for k, v in config.items() if k != "id"}
    return {"name": f"numcodecs.{config['id']}", "configuration": rest}


def _v2_filters_to_v3(filters: Any, name: str) -> list[dict] | None:
    """v2 filters as ``numcodecs.*`` array -> array codecs (``None``: one has no v3 name)."""
    out = []
    for f in filters or ():
        if NUMCODECS_KINDS.get(f.get("id")) != "array_array":
            return None
        out.append(_as_numcodecs_v3(f))
    return out


def _numcodecs_v2_config(codec: Any) -> dict | None:
    """A ``numcodecs.*`` codec as its v2 config dict (``None`` for other codecs)."""
    doc = codec.to_dict()
    if not doc["name"].startswith("numcodecs."):
        return None
    return {"id": doc["name"][len("numcodecs."):], **doc.get("configuration", {})}


def _v3_compressor_to_v2(codec: Any) -> Any:
    if isinstance(codec, ZstdCodec):
        return {"id": "zstd", "level": codec.level, "checksum": codec.checksum}
    if isinstance(codec, GzipCodec):
        return {"id": "gzip", "level": codec.level}
    if isinstance(codec, BloscCodec):
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[codec.shuffle or "noshuffle"]
        return {"id": "blosc", "cname": codec.cname, "clevel": codec.clevel,
                "shuffle": shuffle, "blocksize": codec.blocksize}
    return False


def _plan_v3(arr: Array) -> tuple[dict[str, Any], bool]:
    """create_array arguments for a v3 copy of a v2 array, and whether bytes carry over."""
    md = arr.metadata
    name = f"array {arr.name!r}"
    attrs = dict(md.attributes)
    dtype = md.dtype
    if dtype.kind == "O" or dtype.hasobject:
        raise ZarrfastError(
            f"{name}: dtype {dtype} (Python objects) has no Zarr v3 data type here; it "
            f"cannot be converted to v3 (keep it in Zarr v2)"
        )
    orders = _byte_orders(dtype)
    try:
        data_type = data_type_from_numpy(dtype.newbyteorder("="), where=name)
    except ZarrfastError as e:
        raise ZarrfastError(f"{e}; it cannot be converted to v3 (keep it in Zarr v2)"
                            ) from None
    endian = "big" if orders == {">"} else "little"
    serializer = BytesCodec(endian=endian if data_type.swap_unit > 1 else None)
    filters = []
    if md.order == "F" and md.ndim > 1:
        filters.append(TransposeCodec(order=tuple(reversed(range(md.ndim)))))
    compressor = _v2_compressor_to_v3(md.compressor, dtype.itemsize)
    v3_filters = _v2_filters_to_v3(md.filters, name)
    # (fields of mixed byte order are stored in one: decoded and encoded again)
    raw = compressor is not False and not md.filters and len(orders) <= 1
    if compressor is False:
        compressor = ZstdCodec(level=0)
    if v3_filters:  # carried as numcodecs.* codecs; chunks decoded and encoded again
        filters.extend(v3_filters)
    dims = md.dimension_names
    attrs.pop("_ARRAY_DIMENSIONS", None)
    fill = md.effective_fill_value
    return {"shape": md.shape, "dtype": data_type, "chunks": md.chunks,
            "fill_value": np.asarray(fill).astype(data_type.dtype)[()],
            "filters": filters, "serializer": serializer,
            "compressors": [compressor] if compressor is not None else None,
            "dimension_names": dims, "attributes": attrs}, raw


def _byte_orders(dtype: np.dtype) -> set[str]:
    """The byte orders (``"<"``, ``">"``) of a dtype's multi-byte parts, fields included."""
    if dtype.fields is not None:
        return set().union(*(_byte_orders(f[0]) for f in dtype.fields.values()))
    base = dtype.base if dtype.subdtype else dtype
    if base.byteorder == "|" or base.itemsize == 1 and base.kind != "U":
        return set()
    if base.byteorder == "=":
        return {"<" if sys.byteorder == "little" else ">"}
    return {base.byteorder}


def _plan_v2(arr: Array) -> tuple[dict[str, Any], bool]:
    """create_array arguments for a v2 copy of a v3 array, and whether bytes carry over."""
    md = arr.metadata
    name = f"array {arr.name!r}"
    if not getattr(md.chunk_grid, "is_regular", True):
        raise ZarrfastError(f"{name}: its rectilinear chunk grid has no Zarr v2 form; it is "
                            f"kept in Zarr v3")
    chain = arr.codec_chain
    aa, ab, bb = list(chain.aa), chain.ab, list(chain.bb)
    if md.type_info.kind == "V" and md.dtype.fields is None:
        raise ZarrfastError(f"{name}: data type {md.type_info.name} has no Zarr v2 dtype; "
                            f"it is kept in Zarr v3")
    order = "C"
    raw = isinstance(ab, BytesCodec) and len(bb) <= 1
    if aa:
        perm = [c.permutation(md.ndim) for c in aa if isinstance(c, TransposeCodec)]
        if len(perm) == 1 and len(aa) == 1 and list(perm[0]) == list(reversed(range(md.ndim))):
            order = "F"
        else:
            raw = False
    dtype = md.dtype
    if isinstance(ab, BytesCodec) and ab.endian == "big" and md.type_info.swap_unit > 1:
        dtype = dtype.newbyteorder(">")
    else:
        dtype = dtype.newbyteorder("<") if md.type_info.swap_unit > 1 else dtype
    compressor: Any = _v3_compressor_to_v2(bb[0]) if len(bb) == 1 else None
    if compressor is False:
        compressor = _numcodecs_v2_config(bb[0])
        if compressor is None:
            raw, compressor = False, {"id": "zstd", "level": 0}
    if len(bb) > 1:
        raw, compressor = False, {"id": "zstd", "level": 0}
    # numcodecs filters carry over as v2 filters (chunks decoded and encoded again)
    filters = [f for f in (_numcodecs_v2_config(c) for c in aa
                           if not isinstance(c, TransposeCodec)) if f is not None]
    if filters:
        raw = False
    attrs = dict(md.attributes)
    return {"shape": md.shape, "dtype": dtype, "chunks": arr.metadata.chunks,
            "fill_value": np.asarray(md.fill_value).astype(dtype)[()],
            "compressors": compressor, "filters": filters or None, "order": order,
            "dimension_names": md.dimension_names, "attributes": attrs}, raw and not isinstance(
        ab, NumcodecsCodec)


def _copy_array(src: Array, dst_store: Store, dst_path: str, zarr_format: int,
                overwrite: bool, bar: Any) -> Array:
    from dataclasses import replace

    from zarrfast.hierarchy.create import create_array_at
    from zarrfast.hierarchy.node import write_new_node
    from zarrfast.metadata.chunk_grid import DefaultChunkKeyEncoding, V2ChunkKeyEncoding

    if src.metadata.zarr_format == zarr_format:
        # same format (drafts are read as final v3): same metadata, same chunk bytes;
        # only a draft's chunk key encoding becomes the default one
        md = src.metadata
        if not isinstance(md.chunk_key_encoding, (DefaultChunkKeyEncoding, V2ChunkKeyEncoding)):
            md = replace(md, chunk_key_encoding=DefaultChunkKeyEncoding())
        write_new_node(dst_store, dst_path, md, overwrite=overwrite)
        dst = Array(dst_store, dst_path, md, read_only=False)
        raw = True
    else:
        plan, raw = _plan_v3(src) if zarr_format == 3 else _plan_v2(src)
        dst = create_array_at(dst_store, dst_path, zarr_format=zarr_format,
                               overwrite=overwrite, **plan)
    grid = src.metadata.chunk_grid.grid_shape(src.shape)
    if raw:
        src_cke = src.metadata.chunk_key_encoding
        dst_cke = dst.metadata.chunk_key_encoding
        chunk_path = getattr(src, "_chunk_path", src.path)  # drafts keep chunks elsewhere
        src_base = f"{chunk_path}/" if chunk_path else ""
        dst_base = f"{dst_path}/" if dst_path else ""
        coords_all = list(itertools.product(*(range(n) for n in grid)))
        batch = 256
        for i in range(0, len(coords_all), batch):
            part = coords_all[i:i + batch]
            values = src.store.get_many([src_base + src_cke.encode(c) for c in part])
            for c, v in zip(part, values, strict=True):
                if v is not None:
                    dst_store.set(dst_base + dst_cke.encode(c), v)
            bar.update(len(part))
        return dst
    # decode and re-encode, a slab of chunk rows at a time
    step = src.metadata.chunks[0] if src.ndim else 1
    rows = max(1, (64 << 20) // max(1, math.prod(src.metadata.chunks[1:] or (1,))
                                    * src.dtype.itemsize * max(step, 1)))
    if src.ndim == 0:
        dst[...] = src[...]
        bar.update(1)
        return dst
    per_row = math.prod(grid[1:])
    for start in range(0, src.shape[0], step * rows):
        stop = min(src.shape[0], start + step * rows)
        dst[start:stop] = src[start:stop]
        bar.update(per_row * (-(-(stop - start) // step)))
    return dst


def convert(src: StoreLike | Array | Group, dst: StoreLike, *, zarr_format: int = 3,
            path: str | None = None, dst_path: str | None = None, overwrite: bool = False,
            progress: bool = True, label: str = "convert") -> Array | Group:
    """Copy the hierarchy (or array) at ``src`` into ``dst`` as Zarr ``zarr_format``.

    Parameters
    ----------
    src
        A store-like, or an opened ``Array``/``Group`` (any format, drafts included).
    dst
        Target store-like (a new directory, a dict, ...).
    zarr_format
        3 or 2.
    path, dst_path
        Node paths inside the source and target stores.
    overwrite
        Replace existing nodes in ``dst``.
    progress
        Show a tqdm progress bar of chunks copied (on stderr).
    label
        The progress bar's label.
    """
    from zarrfast import open as zopen
    from zarrfast.hierarchy.node import write_new_node
    from zarrfast.metadata.v2 import GroupMetadataV2
    from zarrfast.metadata.v3 import GroupMetadata

    if zarr_format not in (2, 3):
        raise ZarrfastError(f"convert: zarr_format must be 2 or 3, got {zarr_format!r}")
    node = src if isinstance(src, (Array, Group)) else zopen(src, mode="r", path=path)
    dst_store = make_store(dst)
    from zarrfast.metadata.paths import normalize_path

    root = normalize_path(dst_path)
    nodes: list[tuple[str, Array | Group]] = [("", node)]
    if isinstance(node, Group):
        nodes += list(node.members(max_depth=None))
    total = sum(math.prod(n.metadata.chunk_grid.grid_shape(n.shape))
                for _, n in nodes if isinstance(n, Array))
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="chunk", disable=not progress, desc=label,
              file=sys.stderr) as bar:
        result: Array | Group | None = None
        for rel, n in nodes:
            target = node_key(root, rel) if rel else root
            if isinstance(n, Group):
                attrs = dict(n.metadata.attributes)
                md = (GroupMetadata(attributes=attrs) if zarr_format == 3
                      else GroupMetadataV2(attributes=attrs))
                write_new_node(dst_store, target, md, overwrite=overwrite)
                out: Array | Group = Group(dst_store, target, md, read_only=False)
            else:
                out = _copy_array(n, dst_store, target, zarr_format, overwrite, bar)
            if result is None:
                result = out
    assert result is not None
    return result
