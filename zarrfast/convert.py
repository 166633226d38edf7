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

Variable-length strings and bytes carry over both ways (v2 ``|O`` with ``vlen-utf8`` or
``vlen-bytes`` <-> v3 ``string`` or ``variable_length_bytes``, as zarr-python writes them).
Types a format cannot hold (v2 objects under other object codecs in v3, v3 raw bits and ML
types in v2) are refused with an error naming the array, before anything is written;
datetimes, structured dtypes and fixed-length strings carry over both ways.

Nothing is lost or half-written (:func:`convert`): a destination that overlaps the source
is refused (:func:`check_distinct`), local directories and ``.zip`` files are staged and
moved into place at the end (beside the destination and renamed; a directory that is a
mount point or sits in a read-only directory: inside itself, entries moved in one by
one), and consolidated metadata is written again, for each group that had it, describing
the destination's nodes.
"""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import re
import shutil
import socket
import sys
import uuid
from collections.abc import MutableMapping
from typing import Any

import numpy as np

from zarrfast.codecs import BloscCodec, BytesCodec, GzipCodec, TransposeCodec, ZstdCodec
from zarrfast.codecs.numcodecs_codec import NumcodecsCodec
from zarrfast.codecs.numcodecs_v3 import NUMCODECS_KINDS
from zarrfast.errors import (
    ReadOnlyError,
    ZarrfastError,
)
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group
from zarrfast.hierarchy.node import (
    check_new_node,
    delete_node_metadata,
    empty_group_metadata,
    existing_node,
    node_key,
    write_metadata,
    write_new_node,
)
from zarrfast.metadata.dtype import data_type_from_numpy
from zarrfast.metadata.paths import normalize_path
from zarrfast.metadata.v2 import GroupMetadataV2
from zarrfast.metadata.v3 import GroupMetadata
from zarrfast.storage import Store
from zarrfast.storage.resolve import StoreLike, is_remote_url, make_store

__all__ = ["convert", "check_distinct", "SourceOverlapError"]

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
        ids = [f.get("id") for f in md.filters or ()]
        if dtype.kind == "O" and ids in (["vlen-utf8"], ["vlen-bytes"]):
            return _plan_v3_vlen(arr, ids[0]), False
        raise ZarrfastError(
            f"{name}: dtype {dtype} (Python objects) with filters {ids} has no Zarr v3 "
            f"data type here (only vlen-utf8 strings and vlen-bytes bytes have: v3 "
            f"'string' and 'variable_length_bytes'); it cannot be converted to v3 (keep it "
            f"in Zarr v2)"
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


def _plan_v3_vlen(arr: Array, codec_id: str) -> dict[str, Any]:
    """A v2 ``|O`` array of ``vlen-utf8`` strings or ``vlen-bytes`` bytes as v3 ``string``
    or ``variable_length_bytes`` (what zarr-python writes for ``str`` and ``bytes``);
    chunks decoded and encoded again."""
    from zarrfast.codecs.vlen import VLenBytesCodec, VLenUTF8Codec

    md = arr.metadata
    text = codec_id == "vlen-utf8"
    compressor = _v2_compressor_to_v3(md.compressor, 1)
    if compressor is False:
        compressor = ZstdCodec(level=0)
    filters = []
    if md.order == "F" and md.ndim > 1:
        filters.append(TransposeCodec(order=tuple(reversed(range(md.ndim)))))
    fill = md.fill_value
    if text:
        fill = fill if isinstance(fill, str) else ""
    else:
        fill = fill if isinstance(fill, bytes) else b""
    attrs = dict(md.attributes)
    attrs.pop("_ARRAY_DIMENSIONS", None)
    return {"shape": md.shape, "dtype": str if text else bytes, "chunks": md.chunks,
            "fill_value": fill, "filters": filters,
            "serializer": VLenUTF8Codec() if text else VLenBytesCodec(),
            "compressors": [compressor] if compressor is not None else None,
            "dimension_names": md.dimension_names, "attributes": attrs}


def _plan_v2_vlen(arr: Array) -> dict[str, Any]:
    """A v3 ``string`` or ``variable_length_bytes`` array as v2 ``|O`` with the
    ``vlen-utf8`` or ``vlen-bytes`` filter (as zarr-python writes ``str`` and ``bytes`` in
    v2); chunks decoded and encoded again."""
    md = arr.metadata
    text = md.type_info.name == "string"
    chain = arr.codec_chain
    aa, bb = list(chain.aa), list(chain.bb)
    order = "C"
    perm = [c.permutation(md.ndim) for c in aa if isinstance(c, TransposeCodec)]
    if len(perm) == 1 and len(aa) == 1 and list(perm[0]) == list(reversed(range(md.ndim))):
        order = "F"
    compressor: Any = {"id": "zstd", "level": 0}
    if len(bb) == 1:
        compressor = _v3_compressor_to_v2(bb[0])
        if compressor is False:
            compressor = _numcodecs_v2_config(bb[0]) or {"id": "zstd", "level": 0}
    elif not bb:
        compressor = None
    fill = md.fill_value
    if text:
        fill = fill if isinstance(fill, str) else ""
    else:
        fill = fill if isinstance(fill, bytes) else b""
    return {"shape": md.shape, "dtype": str if text else bytes, "chunks": md.chunks,
            "fill_value": fill, "compressors": compressor,
            "filters": [{"id": "vlen-utf8" if text else "vlen-bytes"}], "order": order,
            "dimension_names": md.dimension_names, "attributes": dict(md.attributes)}


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
    if md.type_info.variable_length:  # string, variable_length_bytes
        return _plan_v2_vlen(arr), False
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


def _plan(arr: Array, zarr_format: int) -> tuple[dict[str, Any], bool] | None:
    """How ``arr`` is written in ``zarr_format`` (``None``: the same format, its own
    metadata); raises, naming the array, for a type the format cannot hold."""
    if arr.metadata.zarr_format == zarr_format:
        return None
    return _plan_v3(arr) if zarr_format == 3 else _plan_v2(arr)


def _copy_array(src: Array, dst_store: Store, dst_path: str, zarr_format: int,
                overwrite: bool, bar: Any, plan: tuple[dict[str, Any], bool] | None = None
                ) -> Array:
    from dataclasses import replace

    from zarrfast.hierarchy.create import create_array_at
    from zarrfast.metadata.chunk_grid import DefaultChunkKeyEncoding, V2ChunkKeyEncoding

    if plan is None and src.metadata.zarr_format != zarr_format:
        plan = _plan(src, zarr_format)
    if plan is None:
        # same format (drafts are read as final v3): same metadata, same chunk bytes;
        # only a draft's chunk key encoding becomes the default one
        md = src.metadata
        if not isinstance(md.chunk_key_encoding, (DefaultChunkKeyEncoding, V2ChunkKeyEncoding)):
            md = replace(md, chunk_key_encoding=DefaultChunkKeyEncoding())
        write_new_node(dst_store, dst_path, md, overwrite=overwrite)
        dst = Array(dst_store, dst_path, md, read_only=False)
        raw = True
    else:
        kwargs, raw = plan
        dst = create_array_at(dst_store, dst_path, zarr_format=zarr_format,
                               overwrite=overwrite, **kwargs)
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


# -- where the source and the destination are ---------------------------------------------


class SourceOverlapError(ZarrfastError):
    """The destination of a copy or conversion is its source, is inside it, or holds it:
    writing there (and ``overwrite`` deleting there) would destroy the source."""


#: URL schemes that name one namespace under several spellings: the scheme family
_SCHEME_ALIASES = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az", "azure": "az",
                   "adl": "az", "https": "http"}

#: ``(space, segments)``: the space is ``("file",)``, ``("memory", id)``, ``("object",
#: store)`` (a store whose place is unknown: equal to itself only) or ``("url", family,
#: qualifier)``, the qualifier naming the server (an S3 endpoint, an Azure account) or
#: ``None`` when unknown (the default one: it may be any other's)
Location = tuple[tuple, tuple[str, ...]]

# S3's https forms: virtual-hosted (b.s3.amazonaws.com, b.s3.us-east-1.amazonaws.com,
# b.s3-us-west-2.amazonaws.com, b.s3.dualstack.<region>.amazonaws.com) and path-style
# (s3.amazonaws.com/b, s3.<region>.amazonaws.com/b, s3-<region>.amazonaws.com/b)
_AWS_S3_HOST = re.compile(r"^(?:(?P<bucket>.+)\.)?s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com(?:\.cn)?$")
_GCS_HOST = re.compile(r"^(?:(?P<bucket>.+)\.)?storage(?:\.cloud)?\.(?:googleapis|google)\.com$")
_AZURE_HOST = re.compile(r"^(?P<account>[^.]+)\.(?:blob|dfs)\.core\.windows\.net$")


def _split(path: str) -> tuple[str, ...]:
    """Path segments with ``.``, empty segments and ``..`` resolved lexically."""
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return tuple(out)


def _file_location(path: str | os.PathLike) -> Location:
    """A local path resolved as the file system does: links, ``..``, relative paths."""
    real = os.path.normcase(os.path.realpath(os.path.expanduser(os.fspath(path))))
    return ("file",), _split(real.replace(os.sep, "/"))


def _host(netloc: str) -> str:
    """``host[:port]`` of a URL's authority, lower case, without credentials and without
    the scheme's default port."""
    host = netloc.rsplit("@", 1)[-1].lower()
    for default in (":80", ":443"):
        if host.endswith(default):
            host = host[: -len(default)]
    return host


def _option(options: Any, *names: str) -> Any:
    """The first of ``names`` in storage options (or in their ``client_kwargs``)."""
    if not isinstance(options, dict):
        return None
    for where in (options, options.get("client_kwargs")):
        if isinstance(where, dict):
            for name in names:
                if where.get(name):
                    return where[name]
    return None


def _endpoint(value: Any) -> str | None:
    """An explicit endpoint as the server's ``host[:port]`` (``"aws"`` for AWS's own)."""
    if not isinstance(value, str) or not value:
        return None
    netloc = value.split("://", 1)[-1].split("/", 1)[0]
    host = _host(netloc)
    return "aws" if _AWS_S3_HOST.match(host.split(":")[0]) else host


def _url_location(url: str, options: Any = None) -> Location:
    """A URL as ``(("url", family, server), (bucket, *prefix))``: the spellings of one
    bucket or container (``az://``, ``abfs://``, ``abfss://``, ``azure://`` and Azure's
    ``https://`` hosts; ``s3://``, ``s3a://`` and S3's ``https://`` forms; ``gs://``,
    ``gcs://`` and Google's) are one family; ``options`` may name the server (an
    ``endpoint_url``, an Azure ``account_name``)."""
    last = url.split("::")[-1]  # simplecache::s3://b/x: the data is at the last URL
    scheme, _, rest = last.partition("://")
    scheme = scheme.lower()
    if scheme == "file":
        return _file_location("/" + rest.lstrip("/"))
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    netloc, _, path = rest.partition("/")
    family = _SCHEME_ALIASES.get(scheme, scheme)
    server = None
    if family == "http":
        host = _host(netloc)
        name = host.split(":")[0]
        aws, gcs, azure = _AWS_S3_HOST.match(name), _GCS_HOST.match(name), _AZURE_HOST.match(name)
        if aws or gcs:  # virtual-hosted: the bucket is in the host; path-style: first
            m = aws or gcs
            family, server = ("s3", "aws") if aws else ("gs", None)
            bucket = m.group("bucket")
            netloc, path = (bucket, path) if bucket else (path.partition("/")[0],
                                                          path.partition("/")[2])
        elif azure:
            family, server = "az", azure.group("account")
            netloc, _, path = path.partition("/")
        else:
            return ("url", "http", None), (host, *_split(path))
    elif family == "az":
        container, _, account = netloc.partition("@")  # abfs://c@acct.dfs.core.windows.net
        netloc = container
        server = account.split(".")[0].lower() if account else None
        if server is None:
            option = _option(options, "account_name", "azure_storage_account_name",
                             "AZURE_STORAGE_ACCOUNT_NAME")
            server = str(option).lower() if option else None
    if family != "az" or server is None:
        explicit = _endpoint(_option(options, "endpoint_url", "endpoint", "aws_endpoint",
                                     "aws_endpoint_url", "AWS_ENDPOINT_URL"))
        server = explicit or server
    if family in ("s3", "gs", "az"):  # bucket and container names: no upper case
        netloc = netloc.lower()
    return ("url", family, server), _split(f"{netloc}/{path}")


def _obstore_location(store: Any) -> Location | None:
    """Where an obstore store (``obstore.store.*``) keeps its data; ``None``: unknown."""
    name = type(store).__name__
    cfg = dict(getattr(store, "config", None) or {})
    prefix = str(getattr(store, "prefix", None) or "")
    if name == "LocalStore":
        return _file_location("/" + prefix.lstrip("/")) if prefix else None
    if name == "S3Store":
        return _url_location(f"s3://{cfg.get('bucket', '')}/{prefix}", cfg)
    if name == "GCSStore":
        return _url_location(f"gs://{cfg.get('bucket', '')}/{prefix}", cfg)
    if name == "AzureStore":
        return _url_location(f"az://{cfg.get('container_name', '')}/{prefix}", cfg)
    if name == "HTTPStore":
        return _url_location(f"{str(store.url).rstrip('/')}/{prefix}")
    return None


def _fsspec_location(fs: Any, path: str) -> Location | None:
    """Where an fsspec file system's ``path`` is (its options may name the server)."""
    try:
        url = fs.unstrip_protocol(path)
    except Exception:
        return None
    if not isinstance(url, str) or "://" not in url:
        return None
    return _url_location(url, getattr(fs, "storage_options", None))


def _zarr_python_location(store: Any) -> Location:
    """Where a zarr-python store (``zarr.abc.store.Store``) keeps its data: its
    ``LocalStore``, ``ZipStore``, ``MemoryStore``, ``FsspecStore`` and ``ObjectStore``
    (through ``WrapperStore``s such as ``LoggingStore``); another store (icechunk's, a
    custom one) is known by itself only."""
    seen = 0
    while hasattr(store, "_store") and seen < 32:  # zarr.storage.WrapperStore
        inner = store._store
        if inner is None or inner is store:
            break
        store, seen = inner, seen + 1
    name = type(store).__name__
    module = type(store).__module__
    if module.startswith("zarr.") or module == "zarr":
        if name == "LocalStore" and getattr(store, "root", None) is not None:
            return _file_location(store.root)
        if name == "ZipStore" and getattr(store, "path", None) is not None:
            return _file_location(store.path)
        if name in ("MemoryStore", "GpuMemoryStore") and isinstance(
                getattr(store, "_store_dict", None), MutableMapping):
            return ("memory", id(store._store_dict)), ()
        if name == "FsspecStore" and getattr(store, "fs", None) is not None:
            loc = _fsspec_location(store.fs, getattr(store, "path", ""))
            if loc is not None:
                return loc
        if name == "ObjectStore" and getattr(store, "store", None) is not None:
            loc = _obstore_location(store.store)
            if loc is not None:
                return loc
    return ("object", store), ()


def _store_location(store: Store) -> Location:
    from zarrfast.storage import LocalStore, MemoryStore
    from zarrfast.storage.fsspec import FsspecStore
    from zarrfast.storage.obstore import ObjectStore
    from zarrfast.storage.zarr_python import ZarrPythonStore
    from zarrfast.storage.zip import ZipStore

    while isinstance(getattr(store, "store", None), Store):  # wrappers: the wrapped store
        store = store.store  # type: ignore[attr-defined]
    if isinstance(store, LocalStore):
        return _file_location(store.root)
    if isinstance(store, ZipStore):
        if store.path is not None:
            return _file_location(store.path)
        # a ZipStore on an open file object: the file it names, if it names one
        name = getattr(store._fileobj, "name", None)
        if isinstance(name, str) and os.path.exists(name):
            return _file_location(name)
        return ("object", store), ()
    if isinstance(store, MemoryStore):
        return ("memory", id(store._store_dict)), ()
    if isinstance(store, ZarrPythonStore):
        return _zarr_python_location(store.zarr_store)
    loc = None
    if isinstance(store, FsspecStore):
        loc = _fsspec_location(store.fs, store.path)
    elif isinstance(store, ObjectStore):
        loc = _obstore_location(store.store)
    if loc is not None:
        return loc
    url = getattr(store, "url", None)
    if isinstance(url, str) and "://" in url and url.split("://", 1)[1].strip("/"):
        return _url_location(url)
    return ("object", store), ()  # the same store object (by its ==), or not


def _location(target: Any, path: str | None, options: Any = None) -> Location | None:
    """Where ``target`` (a store-like, or an opened node) and the node at ``path`` in it
    are; ``None`` for a new in-memory store (it overlaps nothing).  ``options``: the
    storage options a URL is opened with."""
    if isinstance(target, (Array, Group)):
        space, parts = _store_location(target.store)
        if getattr(target, "draft_layout", None):  # drafts keep chunks apart: the store
            return space, parts
        return space, parts + _split(target.path)
    if target is None:
        return None
    if isinstance(target, Store):
        space, parts = _store_location(target)
    elif isinstance(target, (str, os.PathLike)):
        s = os.fspath(target)
        s = s.decode() if isinstance(s, bytes) else s
        if is_remote_url(s):
            space, parts = _url_location(s, options)
        else:
            space, parts = _file_location(s[len("file://"):] if s.startswith("file://") else s)
    elif isinstance(target, MutableMapping):
        space, parts = ("memory", id(target)), ()
    else:
        space, parts = _store_location(make_store(target))
    return space, parts + _split(normalize_path(path))


def _path_of(parts: tuple[str, ...]) -> str:
    """The local path of a file location's segments."""
    return ("/" if os.sep == "/" else "") + "/".join(parts)


def _file_ids(parts: tuple[str, ...]) -> list[tuple[int, int]]:
    """``(st_dev, st_ino)`` of a local path and each existing ancestor, deepest first: the
    same directory reached another way (a bind mount, another case) is the same file."""
    out = []
    for n in range(len(parts), 0, -1):
        try:
            st = os.stat(_path_of(parts[:n]))
        except OSError:
            continue
        out.append((st.st_dev, st.st_ino))
    return out


def _addresses(host: str) -> set[tuple[str, str | None]]:
    """The IP addresses of ``host[:port]``, each with the port (empty: not resolved)."""
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return set()
    return {(info[4][0], port or None) for info in infos}


def _same_server(a: str | None, b: str | None) -> bool:
    """Whether two servers of a URL family may be one: unknown (the default) may be any;
    two names are one server when they are equal or resolve to a common address."""
    if a is None or b is None or a == b:
        return True
    return bool(_addresses(a) & _addresses(b))


def _same_space(a: tuple, b: tuple) -> bool:
    if a[0] == b[0] == "url":
        return a[1] == b[1] and _same_server(a[2], b[2])
    try:
        return bool(a == b)
    except Exception:  # a foreign store's __eq__ that fails: not known to be the same
        return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _relation(src: Location, dst: Location) -> str | None:
    """``"same"``, ``"dst inside"``, ``"src inside"`` or ``None`` (apart)."""
    (s_space, s), (d_space, d) = src, dst
    if not _same_space(s_space, d_space):
        return None
    n = min(len(s), len(d))
    if s[:n] == d[:n]:
        return "same" if len(s) == len(d) else "dst inside" if len(d) > len(s) else "src inside"
    if s_space == ("file",):
        s_ids, d_ids = _file_ids(s), _file_ids(d)
        s_own = s_ids[0] if s_ids and os.path.exists(_path_of(s)) else None
        d_own = d_ids[0] if d_ids and os.path.exists(_path_of(d)) else None
        if s_own is not None and s_own == d_own:
            return "same"
        if s_own is not None and s_own in d_ids:
            return "dst inside"
        if d_own is not None and d_own in s_ids:
            return "src inside"
    return None


def _describe(name: Any, path: str | None) -> str:
    node = normalize_path(path)
    return f"{str(name)!r}" + (f" (node {node!r})" if node else "")


def _shown(loc: Location) -> str:
    space, parts = loc
    if space == ("file",):
        return _path_of(parts)
    if space[0] == "url":
        server = f" (server {space[2]})" if space[2] else ""
        return f"{space[1]}://" + "/".join(parts) + server
    return "/".join(parts) or "<root>"


def check_distinct(src: Any, dst: Any, *, path: str | None = None,
                   dst_path: str | None = None, src_name: Any = None, dst_name: Any = None,
                   what: str = "convert", src_options: Any = None,
                   dst_options: Any = None) -> None:
    """Refuse a destination that is the source, is inside it, or holds it.

    Paths are compared resolved (links, ``..``, trailing slashes, relative paths, and the
    same directory reached by another path); ``.zip`` files by their resolved path; stores
    by where they keep their data (zarrfast's and zarr-python's local, zip, memory, fsspec
    and obstore stores); URLs normalised, the spellings of one bucket or container being
    one place (``az://``, ``abfs://``, ``abfss://``, ``azure://`` and Azure's ``https://``
    hosts; ``s3://``, ``s3a://`` and S3's virtual-hosted and path-style ``https://``
    forms; ``gs://``, ``gcs://`` and Google's).  The server is compared where both sides
    name one (an ``endpoint_url`` or Azure account in ``src_options``/``dst_options`` or
    in the store, equal or resolving to a common address); where one side leaves it to
    the default, it may be the other's, and the two are taken as one.  A store whose
    place is unknown (icechunk's, a custom one) overlaps only itself (``==``).  Raises
    :class:`SourceOverlapError` naming both, before anything is written or deleted.
    """
    if isinstance(src, (Array, Group)):
        src_loc = _location(src, None)
        path = src.path if path is None else path
    else:
        src_loc = _location(src, path, src_options)
    dst_loc = _location(dst, dst_path, dst_options)
    if src_loc is None or dst_loc is None:
        return
    relation = _relation(src_loc, dst_loc)
    if relation is None:
        return
    s = _describe(src if src_name is None else src_name, path)
    d = _describe(dst if dst_name is None else dst_name, dst_path)
    resolved = f"resolved: source {_shown(src_loc)}, destination {_shown(dst_loc)}"
    if relation == "same":
        text = f"the destination {d} is the source {s}"
    elif relation == "dst inside":
        text = f"the destination {d} is inside the source {s}"
    else:
        text = f"the source {s} is inside the destination {d}"
    raise SourceOverlapError(
        f"{what}: {text} ({resolved}); refusing before anything is written or deleted, "
        f"as writing there would change or delete the source. Give a destination outside "
        f"the source"
    )


# -- writing: staged, then moved into place -----------------------------------------------


class _Direct:
    """Written straight into the destination (memory, remote and other stores: they have
    no rename).  On failure the keys written are deleted again; a node replaced with
    ``overwrite`` was deleted before the copy started and is not restored."""

    def __init__(self, store: Store, root: str, fmt: int, overwrite: bool) -> None:
        self.store, self.root, self.overwrite = store, root, overwrite
        self.parents = check_new_node(store, root, fmt, overwrite=overwrite)
        self.existed = existing_node(store, root) is not None
        prefix = f"{root}/" if root else ""
        self.before = (set(store.list_prefix(prefix)) if store.supports_listing
                       and not (overwrite and self.existed) else None)
        self.target = (store, root, overwrite)

    def abort(self) -> None:
        store, prefix = self.store, f"{self.root}/" if self.root else ""
        try:
            if self.overwrite and self.existed:
                store.delete_dir(self.root)
                delete_node_metadata(store, self.root)
            elif self.before is not None:
                for key in [k for k in store.list_prefix(prefix) if k not in self.before]:
                    store.delete(key)
            for parent in self.parents:
                delete_node_metadata(store, parent)
        except Exception:  # best effort: the error that stopped the copy is the one to see
            pass

    def commit(self) -> Store:
        return self.store


def _partial_name(path: str, label: str) -> str:
    head, name = os.path.split(path)
    return os.path.join(head, f".{name}.{label}-{uuid.uuid4().hex[:12]}.partial")


class _ZipStaged:
    """A ``.zip`` destination: written into a new archive beside it (a copy of the
    existing one, unless the whole archive is replaced), renamed over it at the end."""

    def __init__(self, path: str, root: str, fmt: int, overwrite: bool, label: str) -> None:
        from zarrfast.storage.zip import ZipStore

        # ~ as everywhere; a link to an archive: its target is replaced
        self.final = os.path.realpath(os.path.expanduser(path))
        self.tmp = _partial_name(self.final, label)
        exists = os.path.exists(self.final)
        if exists:
            current = ZipStore(self.final, mode="r")
            try:
                check_new_node(current, root, fmt, overwrite=overwrite)
            finally:
                current.close()
        whole = root == "" and overwrite
        try:
            if exists and not whole:
                shutil.copyfile(self.final, self.tmp)
            self.store = ZipStore(self.tmp, mode="a" if exists and not whole else "w")
            if exists:
                shutil.copymode(self.final, self.tmp)
        except BaseException:
            self._remove()
            raise
        self.target = (self.store, root, overwrite)

    def _remove(self) -> None:
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass

    def abort(self) -> None:
        try:
            self.store.close()
        finally:
            self._remove()

    def commit(self) -> Store:
        from zarrfast.storage.zip import ZipStore

        self.store.close()
        os.replace(self.tmp, self.final)
        return ZipStore(self.final, mode="a")


#: errors of a directory that cannot be written (read-only file system, no permission)
_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def _mount_points() -> set[str]:
    """The mount points this process sees (Linux: ``/proc/self/mountinfo``, bind mounts
    of one file system included, which ``os.path.ismount`` cannot tell); elsewhere none,
    and ``os.path.ismount`` alone is asked."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    out = set()
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:  # the fifth field, with spaces etc. as octal escapes
            out.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return out


def _move_all(moves: list[tuple[str, str]]) -> None:
    """Rename each ``(src, dst)`` in turn; if one fails, the ones done are renamed back
    (best effort) and the error raised: all moved, or none."""
    done: list[tuple[str, str]] = []
    try:
        for a, b in moves:
            os.rename(a, b)
            done.append((a, b))
    except BaseException:
        for a, b in reversed(done):
            try:
                os.rename(b, a)
            except OSError:
                pass
        raise


class _DirStaged:
    """A local directory, staged and then moved into place.

    Beside (the usual way): written into a new directory beside the destination's root
    (outside the hierarchy, on the same file system and mount), renamed into place at the
    end; an existing node replaced with ``overwrite`` is renamed aside first and removed
    only once the new one is in place.

    Inside: where nothing can be renamed across the destination's directory (it is a
    mount point, or on another file system or mount than the place beside it) or nothing
    can be made beside it (a read-only parent directory), an existing destination
    directory is written in a hidden ``.zarrfast-<label>-<id>.partial`` directory inside
    itself, and at the end its entries are moved in one by one; with ``overwrite`` the
    old entries are first moved aside into another hidden directory inside it (the mount
    point itself is never renamed), and removed once the new ones are in.  If a move
    fails, the moves done are undone.  A failure before the end removes the hidden
    directory: the destination is left as it was (a new one: empty).  Meanwhile readers
    of the destination may see the hidden directory.
    """

    def __init__(self, store: Any, root: str, fmt: int, overwrite: bool, label: str) -> None:
        from zarrfast.storage import LocalStore

        self.given = store if isinstance(store, LocalStore) else None
        base = store.root if isinstance(store, LocalStore) else os.fspath(store)
        if isinstance(base, str) and base.startswith("file://"):
            base = base[len("file://"):]
        self.base = os.path.realpath(os.path.expanduser(base))
        self.fsync = bool(getattr(store, "fsync", False))
        self.root, self.fmt, self.overwrite, self.label = root, fmt, overwrite, label
        self.final = os.path.join(self.base, *root.split("/")) if root else self.base
        self.created: list[str] = []  # directories made for the staging place
        self.parents = check_new_node(LocalStore(self.base), root, fmt, overwrite=overwrite)
        self.inside = False
        mounts = _mount_points()
        # beside the store's root; else beside the node (another file system below)
        places = [(os.path.dirname(self.base), self.base)]
        if os.path.dirname(self.final) != places[0][0]:
            places.append((os.path.dirname(self.final), self.final))
        refused: OSError | None = None
        tmp = None
        try:
            for place, name in places:
                if self._crosses_mount(place, mounts):
                    continue
                try:
                    self._makedirs(place)
                    tmp = _partial_name(name, label)
                    os.mkdir(tmp)
                    break
                except OSError as e:
                    if e.errno not in _NOT_WRITABLE:
                        raise
                    refused, tmp = e, None
            if tmp is None:
                if not (os.path.isdir(self.final) and not os.path.islink(self.final)):
                    where = refused.filename if refused is not None else self.final
                    raise ReadOnlyError(
                        f"{label}: cannot make the destination {self.final!r}: the "
                        f"directory it goes in is not writable ({where!r}: "
                        f"{refused.strerror if refused is not None else 'another mount'}); "
                        f"give a destination in a writable directory (an existing "
                        f"writable directory there is written in place)"
                    ) from refused
                tmp = os.path.join(self.final,
                                   f".zarrfast-{label}-{uuid.uuid4().hex[:12]}.partial")
                os.mkdir(tmp)
                self.inside = True
        except BaseException:
            self._undo_dirs()
            raise
        self.tmp = tmp
        self.target = (LocalStore(self.tmp, fsync=self.fsync), "", False)

    def _crosses_mount(self, place: str, mounts: set[str]) -> bool:
        """Whether a rename between ``place`` and the destination would cross a mount: a
        mount point from below ``place`` down to the destination, or another device."""
        d, top = self.final, place.rstrip(os.sep) + os.sep
        while d != place and d.startswith(top):
            if os.path.isdir(d) and (d in mounts or os.path.ismount(d)):
                return True
            d = os.path.dirname(d)
        try:
            return (os.stat(self._existing(place)).st_dev
                    != os.stat(self._existing(self.final)).st_dev)
        except OSError:
            return False

    @staticmethod
    def _existing(path: str) -> str:
        while not os.path.exists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        return path

    def _makedirs(self, path: str) -> None:
        missing = []
        while not os.path.isdir(path) and os.path.dirname(path) != path:
            missing.append(path)
            path = os.path.dirname(path)
        for p in reversed(missing):
            os.mkdir(p)
            self.created.append(p)

    def _undo_dirs(self) -> None:
        for p in reversed(self.created):
            try:
                os.rmdir(p)
            except OSError:
                pass

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._undo_dirs()

    def commit(self) -> Store:
        from zarrfast.storage import LocalStore

        real = LocalStore(self.base, fsync=self.fsync)
        # the checks again: another writer may have made the node meanwhile
        parents = check_new_node(real, self.root, self.fmt, overwrite=self.overwrite)
        if self.inside:
            self._commit_inside()
            return self._done(real, parents)
        final, aside = self.final, None
        if os.path.lexists(final):
            if self.overwrite:
                aside = _partial_name(final, f"{self.label}-replaced")
                os.rename(final, aside)
            elif os.path.isdir(final) and not os.path.islink(final):
                self._merge(final)
                return self._done(real, parents)
            else:
                raise FileExistsError(f"{final!r} exists and is not a directory; pass "
                                      f"overwrite=True to replace it")
        else:
            os.makedirs(os.path.dirname(final), exist_ok=True)
        try:
            os.rename(self.tmp, final)
        except BaseException:
            if aside is not None:
                os.rename(aside, final)
            raise
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        return self._done(real, parents)

    def _taken(self, final: str, entries: list[str], old: list[str]) -> None:
        taken = [e for e in entries if e in old]
        if taken:
            raise FileExistsError(
                f"{final!r} already holds {taken[0]!r}, which the copy would replace; pass "
                f"overwrite=True to replace the directory")

    def _merge(self, final: str) -> None:
        """Into an existing directory that holds no node (empty, or other files): the
        staged entries moved in one by one, after checking that none is there."""
        entries = os.listdir(self.tmp)
        self._taken(final, entries, [e for e in entries
                                     if os.path.lexists(os.path.join(final, e))])
        _move_all([(os.path.join(self.tmp, e), os.path.join(final, e)) for e in entries])
        os.rmdir(self.tmp)

    def _commit_inside(self) -> None:
        """The staged entries moved from the hidden directory into the destination (with
        ``overwrite``, its old entries moved aside first, and removed at the end)."""
        final, own = self.final, os.path.basename(self.tmp)
        entries = os.listdir(self.tmp)
        old = [e for e in os.listdir(final) if e != own]
        if not self.overwrite:
            self._taken(final, entries, old)
            _move_all([(os.path.join(self.tmp, e), os.path.join(final, e)) for e in entries])
            os.rmdir(self.tmp)
            return
        aside = os.path.join(final, f".zarrfast-{self.label}-replaced-"
                                    f"{uuid.uuid4().hex[:12]}.partial")
        os.mkdir(aside)
        away = [(os.path.join(final, e), os.path.join(aside, e)) for e in old]
        try:
            _move_all(away)
            try:
                _move_all([(os.path.join(self.tmp, e), os.path.join(final, e))
                           for e in entries])
            except BaseException:
                _move_all([(b, a) for a, b in away])  # the old entries back
                raise
        except BaseException:
            try:
                os.rmdir(aside)
            except OSError:
                pass
            raise
        os.rmdir(self.tmp)
        shutil.rmtree(aside, ignore_errors=True)

    def _done(self, real: Store, parents: list[str]) -> Store:
        for parent in parents:  # the missing groups above the node, once it is in place
            write_metadata(real, parent, empty_group_metadata(self.fmt))
        return self.given if self.given is not None else real


def _staging(dst: StoreLike, root: str, fmt: int, overwrite: bool, label: str
             ) -> _Direct | _ZipStaged | _DirStaged:
    from zarrfast.storage import LocalStore
    from zarrfast.storage.resolve import is_remote_url

    if isinstance(dst, LocalStore) and not dst.read_only:
        return _DirStaged(dst, root, fmt, overwrite, label)
    if isinstance(dst, (str, os.PathLike)):
        s = os.fspath(dst)
        s = s.decode() if isinstance(s, bytes) else s
        if not is_remote_url(s):
            local = os.path.expanduser(s[len("file://"):] if s.startswith("file://") else s)
            if local.lower().endswith(".zip") and not os.path.isdir(local):
                return _ZipStaged(local, root, fmt, overwrite, label)
            return _DirStaged(local, root, fmt, overwrite, label)
    return _Direct(make_store(dst), root, fmt, overwrite)


def _has_consolidated(group: Group) -> bool:
    """Whether the source group's own stored metadata is consolidated (v3: in its own
    ``zarr.json``; v2: a ``.zmetadata`` beside it; a draft layout: none).  Its own
    document, not its metadata object: a group below a consolidated one is read from the
    root's consolidated metadata, which gives every group the nodes below it."""
    if getattr(group, "draft_layout", None):
        return False
    if group.metadata.zarr_format == 3:
        raw = group.store.get(node_key(group.path, "zarr.json"))
        if raw is None:
            return False
        try:
            doc = json.loads(bytes(raw))
        except ValueError:
            return False
        return isinstance(doc, dict) and doc.get("consolidated_metadata") is not None
    return group.store.get(node_key(group.path, ".zmetadata")) is not None


def _write_tree(nodes: list[tuple[str, Array | Group]], plans: dict[str, Any], store: Store,
                root: str, zarr_format: int, overwrite: bool, bar: Any,
                consolidated: set[str]) -> None:
    """Write ``nodes`` below ``root``; then, for each group of ``consolidated`` (paths
    relative to the source node), its consolidated metadata, deepest first."""
    from zarrfast.hierarchy.consolidated import write_consolidated

    groups = {}
    for rel, n in nodes:
        target = node_key(root, rel) if rel else root
        if isinstance(n, Group):
            attrs = dict(n.metadata.attributes)
            md = (GroupMetadata(attributes=attrs) if zarr_format == 3
                  else GroupMetadataV2(attributes=attrs))
            write_new_node(store, target, md, overwrite=overwrite)
            groups[rel] = (target, md)
        else:
            _copy_array(n, store, target, zarr_format, overwrite, bar, plans.get(rel))
    for rel in sorted(consolidated, key=lambda r: (-r.count("/") - bool(r), r)):
        # the destination's nodes, in the destination's format (v3 inline, v2 .zmetadata)
        target, md = groups[rel]
        write_consolidated(store, target, md)


def convert(src: StoreLike | Array | Group, dst: StoreLike, *, zarr_format: int = 3,
            path: str | None = None, dst_path: str | None = None, overwrite: bool = False,
            progress: bool = True, label: str = "convert") -> Array | Group:
    """Copy the hierarchy (or array) at ``src`` into ``dst`` as Zarr ``zarr_format``.

    Nothing is lost or half-written:

    * a destination that is the source, is inside it or holds it (under any spelling:
      links, ``..``, trailing slashes, relative paths, normalised URLs) is refused with
      ``SourceOverlapError`` before anything is written or deleted;
    * every array's conversion is planned first (a type the target format cannot hold is
      refused before anything is written);
    * a local directory or ``.zip`` destination is written beside the destination and
      renamed into place at the end: a failure leaves no destination behind, and an
      existing one replaced with ``overwrite`` as it was.  An existing directory that
      cannot be renamed into or beside (a mount point, or in a read-only directory) is
      written in a hidden ``.zarrfast-*.partial`` directory inside itself and its entries
      moved in one by one at the end (``overwrite``: the old entries moved aside inside
      it first, removed once the new ones are in); a failure leaves it as it was.  Other
      stores (memory, remote) are written in place; a failure deletes the keys written
      (a node replaced with ``overwrite`` is then gone: those stores have no rename);
    * consolidated metadata of each source group that has it (the root, and any group
      below it) is written for that destination group's nodes, in the destination's
      format (v3: inline in ``zarr.json``; v2: ``.zmetadata``).

    Parameters
    ----------
    src : str, os.PathLike, Store, dict, zarrfast.Array or zarrfast.Group
        A store-like, or an opened ``Array``/``Group`` (any format, drafts included).
    dst : str, os.PathLike, Store or dict
        Target store-like (a new directory, a ``.zip`` path, a URL, a dict, a store ...).
    zarr_format : {3, 2}, default 3
        The format to write.
    path, dst_path : str, optional
        Node paths inside the source and target stores (default: their roots).
    overwrite : bool, default False
        Replace existing nodes in ``dst``.
    progress : bool, default True
        Show a tqdm progress bar of chunks copied (on stderr).
    label : str, default "convert"
        The progress bar's label, and the name of the operation in errors.

    Returns
    -------
    zarrfast.Array or zarrfast.Group
        The converted node, opened from ``dst`` (mode ``"r+"``).

    Raises
    ------
    SourceOverlapError
        ``dst`` is ``src``, is inside it, or holds it (a
        [zarrfast.errors.ZarrfastError][]; ``from zarrfast.convert import
        SourceOverlapError``).
    zarrfast.errors.ContainsArrayError, zarrfast.errors.ContainsGroupError
        A node exists at the destination and ``overwrite`` is false.
    zarrfast.errors.ZarrfastError
        An array the target format cannot hold (named), a ``zarr_format`` other than 2
        or 3, or a chunk that cannot be read.

    Examples
    --------
    >>> group = zarrfast.open_group("v2.zarr", mode="w", zarr_format=2)
    >>> group.create_array("a", shape=(4,), chunks=(2,), dtype="int32")[:] = [1, 2, 3, 4]
    >>> out = zarrfast.convert("v2.zarr", "v3.zarr", zarr_format=3, progress=False)
    >>> out
    <Group file://.../v3.zarr>
    >>> out.metadata.zarr_format, out["a"][:]
    (3, array([1, 2, 3, 4], dtype=int32))
    """
    from zarrfast import open as zopen

    if zarr_format not in (2, 3):
        raise ZarrfastError(f"convert: zarr_format must be 2 or 3, got {zarr_format!r}")
    root = normalize_path(dst_path)
    if not isinstance(src, (Array, Group)):
        check_distinct(src, dst, path=path, dst_path=root, what=label)
    node = src if isinstance(src, (Array, Group)) else zopen(src, mode="r", path=path)
    check_distinct(node, dst, dst_path=root, what=label)  # drafts: their whole store
    nodes: list[tuple[str, Array | Group]] = [("", node)]
    if isinstance(node, Group):
        nodes += list(node.members(max_depth=None))
    # every array planned before anything is written: a refusal writes nothing
    plans = {rel: _plan(n, zarr_format) for rel, n in nodes if isinstance(n, Array)}
    # every source group whose metadata is consolidated (the root and any below it)
    consolidated = {rel for rel, n in nodes if isinstance(n, Group) and _has_consolidated(n)}
    total = sum(math.prod(n.metadata.chunk_grid.grid_shape(n.shape))
                for _, n in nodes if isinstance(n, Array))
    from tqdm.auto import tqdm

    staging = _staging(dst, root, zarr_format, overwrite, label)
    try:
        with tqdm(total=total, unit="chunk", disable=not progress, desc=label,
                  file=sys.stderr) as bar:
            store, at, over = staging.target
            _write_tree(nodes, plans, store, at, zarr_format, over, bar, consolidated)
        final = staging.commit()
    except BaseException:
        staging.abort()
        raise
    return zopen(final, mode="r+", path=root, zarr_format=zarr_format)
