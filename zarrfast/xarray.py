"""xarray integration: ``xr.open_dataset(path, engine="zarrfast")`` and :func:`to_zarr`.

Reading goes through :class:`ZarrfastBackendEntrypoint` (registered as the ``zarrfast``
engine): variables are lazy (:class:`ZarrfastBackendArray` reads only the chunks a
selection touches) and CF decoding (times, ``scale_factor``/``add_offset``, ``_FillValue``
masks, strings) is xarray's own.  Dimensions come from ``dimension_names`` (Zarr v3) or the
``_ARRAY_DIMENSIONS`` attribute (Zarr v2, and v3 written by older xarray), fill values follow
xarray's zarr backend: in v2 the array's ``fill_value`` is the ``_FillValue``; in v3 the
``_FillValue`` attribute is (its JSON encoding decoded) and ``fill_value`` goes to the
encoding.

Writing: :func:`to_zarr` writes a Dataset with xarray's CF encoding, readable by
``xr.open_zarr`` (zarr-python) and by this backend.
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

try:
    import xarray as xr
    from xarray import conventions
    from xarray.backends import BackendArray, BackendEntrypoint
    from xarray.backends.common import AbstractDataStore
    from xarray.coding import strings as _strings
    from xarray.core import indexing
except ImportError as _e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "zarrfast.xarray requires xarray, which is not installed: "
        "pip install 'zarrfast[xarray]'"
    ) from _e

from zarrfast.api import consolidate_metadata, open_group
from zarrfast.errors import ContainsGroupError, ZarrfastError
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group
from zarrfast.storage import Store

__all__ = [
    "ZarrfastBackendArray",
    "ZarrfastBackendEntrypoint",
    "ZarrfastDataStore",
    "to_zarr",
]

#: the attribute xarray uses to store dimension names on Zarr v2 arrays
DIMENSION_KEY = "_ARRAY_DIMENSIONS"


# -- fill values ----------------------------------------------------------------------------


def _decode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    """The ``_FillValue`` attribute of a Zarr v3 array as xarray stores it in JSON (floats as
    base64 of a little-endian double, complex as two of those, bytes as base64)."""
    if value is None:
        return None
    kind = dtype.kind
    if kind == "f":
        if isinstance(value, (int, float)):  # written by other tools as a plain number
            return float(value)
        return struct.unpack("<d", base64.standard_b64decode(value))[0]
    if kind == "c":
        if isinstance(value, (list, tuple)) and len(value) == 2:
            re, im = (struct.unpack("<d", base64.standard_b64decode(v))[0]
                      if isinstance(v, (str, bytes)) else float(v) for v in value)
            return complex(re, im)
        raise ZarrfastError(f"_FillValue {value!r} is not a valid complex fill value")
    if kind == "b":
        return bool(value)
    if kind in "iu":
        return int(value)
    if kind == "S":
        return base64.standard_b64decode(value)
    if kind in "UOT":
        return str(value)
    raise ZarrfastError(f"cannot decode _FillValue {value!r} for dtype {dtype}")


def _encode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    """The inverse of :func:`_decode_fill_attr` (what xarray writes to a v3 array)."""
    kind = dtype.kind
    if kind == "S":
        if not isinstance(value, bytes):
            raise ZarrfastError(f"_FillValue for dtype {dtype} must be bytes, got {value!r}")
        return base64.standard_b64encode(value).decode()
    if kind == "b":
        return bool(value)
    if kind in "iu":
        return int(value)
    if kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if kind == "c":
        c = complex(value)
        return [base64.standard_b64encode(struct.pack("<d", c.real)).decode(),
                base64.standard_b64encode(struct.pack("<d", c.imag)).decode()]
    if kind in "UOT":
        return str(value)
    raise ZarrfastError(f"cannot encode _FillValue {value!r} for dtype {dtype}")


# -- reading ------------------------------------------------------------------------------


def _vlen_kind(arr: Array) -> type | None:
    """``str`` / ``bytes`` for object arrays of variable-length strings / bytes."""
    if arr.dtype.kind != "O":
        return None
    md = arr.metadata
    ids = [f.get("id") if isinstance(f, Mapping) else None for f in (
        getattr(md, "filters", None) or ())]
    ids += [getattr(c, "to_dict", dict)().get("name") for c in (
        getattr(md, "codecs", None) or ()) if arr.zarr_format == 3]
    if "vlen-bytes" in ids:
        return bytes
    if "vlen-utf8" in ids:
        return str
    return None


def _arrayize(key: tuple, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """A vectorized key mixing index arrays and slices as index arrays only: in xarray's
    vectorized indexing the slices' dimensions follow the arrays' (broadcast) dimensions,
    in order."""
    n_slices = sum(isinstance(k, slice) for k in key)
    n_array_dims = max((k.ndim for k in key if not isinstance(k, slice)), default=0)
    out = []
    i = 0
    for k, size in zip(key, shape, strict=True):
        if isinstance(k, slice):
            index = np.arange(*k.indices(size))
            out.append(index.reshape((1,) * (n_array_dims + i) + (-1,)
                                     + (1,) * (n_slices - i - 1)))
            i += 1
        else:
            k = np.asarray(k)
            out.append(k.reshape(k.shape + (1,) * n_slices))
    return tuple(out)


def _shards_or_none(arr: Array) -> Any:
    try:
        return arr.shards
    except NotImplementedError:  # rectilinear shards
        return None


def _time_dtype(dtype: np.dtype) -> np.dtype:
    """A Zarr ``numpy.datetime64`` / ``timedelta64`` dtype as xarray takes it: a scale
    factor (``M8[10s]``) folded into the unit (``M8[s]``)."""
    if dtype.kind not in "mM":
        return dtype
    unit, count = np.datetime_data(dtype)
    return dtype if count == 1 else np.dtype(f"{dtype.kind}8[{unit}]")


class ZarrfastBackendArray(BackendArray):
    """A lazy xarray view of a zarrfast :class:`~zarrfast.Array`: indexing reads only the
    chunks the selection touches (basic, outer and vectorized indexing are native)."""

    __slots__ = ("_array", "dtype", "shape")

    def __init__(self, array: Array) -> None:
        self._array = array
        self.shape = tuple(array.shape)
        vlen = _vlen_kind(array)
        self.dtype = (_strings.create_vlen_dtype(vlen) if vlen is not None
                      else _time_dtype(array.dtype))

    def get_array(self) -> Array:
        return self._array

    def _as_dtype(self, values: Any) -> Any:
        """Datetimes with a scale factor (``M8[10s]``, which xarray refuses) in their unit:
        the same instants, NaT kept."""
        if values.dtype.kind in "mM" and values.dtype != self.dtype:
            return values.astype(self.dtype)
        return values

    def _basic(self, key: tuple) -> Any:
        return self._as_dtype(self._array[key])

    def _outer(self, key: tuple) -> Any:
        return self._as_dtype(self._array.oindex[key])

    def _vectorized(self, key: tuple) -> Any:
        if any(isinstance(k, slice) for k in key):
            key = _arrayize(key, self.shape)
        return self._as_dtype(self._array.vindex[key])

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        if isinstance(key, indexing.BasicIndexer):
            method = self._basic
        elif isinstance(key, indexing.VectorizedIndexer):
            method = self._vectorized
        elif isinstance(key, indexing.OuterIndexer):
            method = self._outer
        else:  # pragma: no cover - xarray only passes these three
            raise TypeError(f"unexpected indexer {type(key).__name__}")
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.VECTORIZED, method)


def _codec_config(codec: Any) -> Any:
    """A codec as the JSON-like dict its metadata holds."""
    if isinstance(codec, Mapping):
        return dict(codec)
    for attr in ("to_dict", "get_config"):
        fn = getattr(codec, attr, None)
        if fn is not None:
            return fn()
    config = getattr(codec, "config", None)
    if isinstance(config, Mapping):
        return dict(config)
    return codec


def _numcodec(config: Any) -> Any:
    """A v2 codec config as a numcodecs object (what zarr-python's v2 arrays give)."""
    try:
        import numcodecs

        return numcodecs.get_codec(dict(config))
    except Exception:  # an unknown codec: keep the config
        return dict(config)


def _dims_and_attrs(arr: Array, name: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    attrs = dict(arr.attrs)
    from_attrs = attrs.pop(DIMENSION_KEY, None)
    if arr.zarr_format == 2:
        # like xarray: NCZarr-specific attributes are hidden
        attrs = {k: v for k, v in attrs.items() if not k.lower().startswith("_nc")}
    names = arr.metadata.dimension_names if arr.zarr_format == 3 else None
    if names is not None and all(n is not None for n in names):
        dims = tuple(names)
    elif from_attrs is not None:
        dims = tuple(from_attrs)
    elif arr.ndim == 0:
        dims = ()
    else:
        raise ZarrfastError(
            f"array {name!r} has neither dimension_names (Zarr v3) nor an "
            f"{DIMENSION_KEY!r} attribute; xarray needs its dimension names"
        )
    if len(dims) != arr.ndim:
        raise ZarrfastError(
            f"array {name!r}: {len(dims)} dimension names {dims} for {arr.ndim} dimensions")
    return dims, attrs


class ZarrfastDataStore(AbstractDataStore):
    """The arrays of one zarrfast group as xarray variables (read-only)."""

    def __init__(self, group: Group, *, use_zarr_fill_value_as_mask: bool | None = None
                 ) -> None:
        self.zarr_group = group
        if use_zarr_fill_value_as_mask is None:
            use_zarr_fill_value_as_mask = group.zarr_format == 2
        self._fill_as_mask = use_zarr_fill_value_as_mask
        self._arrays: dict[str, Array] = {}
        for name in group.keys():
            node = group[name]
            if isinstance(node, Array):
                self._arrays[name] = node

    @classmethod
    def open(cls, store: Any, *, group: str | None = None, mode: str = "r",
             consolidated: bool | None = None, storage_options: Mapping[str, Any] | None = None,
             zarr_format: int | None = None,
             use_zarr_fill_value_as_mask: bool | None = None) -> ZarrfastDataStore:
        return cls(_open_group(store, group=group, mode=mode, consolidated=consolidated,
                               storage_options=storage_options, zarr_format=zarr_format),
                   use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)

    def open_store_variable(self, name: str, arr: Array) -> xr.Variable:
        dims, attrs = _dims_and_attrs(arr, name)
        wrapper = ZarrfastBackendArray(arr)
        data = indexing.LazilyIndexedArray(wrapper)
        try:
            chunks: Any = tuple(arr.chunks)
            preferred: Any = chunks
        except NotImplementedError:  # a rectilinear grid: each chunk's size, per dimension
            chunks, preferred = None, arr.read_chunk_sizes
        encoding: dict[str, Any] = {
            "chunks": chunks,
            "preferred_chunks": dict(zip(dims, preferred, strict=True)),
            "shards": _shards_or_none(arr),
        }
        if chunks is None:
            del encoding["chunks"]
        if arr.zarr_format == 3:
            encoding["compressors"] = tuple(_codec_config(c) for c in arr.compressors)
            encoding["filters"] = tuple(_codec_config(c) for c in arr.filters)
            encoding["serializer"] = _codec_config(arr.serializer)
        else:
            md = arr.metadata
            encoding["compressors"] = (() if md.compressor is None
                                       else (_numcodec(md.compressor),))
            encoding["filters"] = tuple(_numcodec(f) for f in (md.filters or ()))
        if self._fill_as_mask:
            if arr.fill_value is not None:
                attrs["_FillValue"] = arr.fill_value
        else:
            if arr.zarr_format == 3:
                encoding["fill_value"] = arr.fill_value
            if "_FillValue" in attrs:
                attrs["_FillValue"] = _decode_fill_attr(attrs["_FillValue"], arr.dtype)
        return xr.Variable(dims, data, attrs, encoding)

    def get_variables(self) -> dict[str, xr.Variable]:
        return {k: self.open_store_variable(k, a) for k, a in self._arrays.items()}

    def get_attrs(self) -> dict[str, Any]:
        return {k: v for k, v in dict(self.zarr_group.attrs).items()
                if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for name, arr in self._arrays.items():
            dims, _ = _dims_and_attrs(arr, name)
            for d, n in zip(dims, arr.shape, strict=True):
                if sizes.setdefault(d, n) != n:
                    raise ZarrfastError(
                        f"dimension {d!r} has conflicting lengths ({n} in {name!r}, "
                        f"{sizes[d]} elsewhere)")
        return sizes

    def close(self) -> None:
        pass


def _open_group(store: Any, *, group: str | None, mode: str, consolidated: bool | None,
                storage_options: Mapping[str, Any] | None, zarr_format: int | None) -> Group:
    if isinstance(store, Group):
        root = store
        return root[group.strip("/")] if group and group.strip("/") else root  # type: ignore
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if isinstance(store, str) and "://" not in store:
        store = os.path.expanduser(store)
        if not os.path.exists(store):
            raise FileNotFoundError(f"No such file or directory: {store!r}")
    kw: dict[str, Any] = {"mode": mode, "zarr_format": zarr_format}
    if storage_options is not None:
        kw["storage_options"] = storage_options
    path = (group or "").strip("/")
    if consolidated is False:
        return open_group(store, path=path or None, use_consolidated=False, **kw)
    # consolidated metadata lives at the root: open it there, then walk down
    try:
        root = open_group(store, use_consolidated=consolidated, **kw)
    except ZarrfastError:
        if consolidated or not path:
            raise
        return open_group(store, path=path, use_consolidated=False, **kw)
    if not path:
        return root
    node = root[path]
    if not isinstance(node, Group):
        raise ZarrfastError(f"{path!r} in {store!r} is an array, not a group")
    return node


class ZarrfastBackendEntrypoint(BackendEntrypoint):
    """xarray backend reading Zarr v2 and v3 stores with zarrfast (``engine="zarrfast"``)."""

    description = "Open Zarr v2 and v3 stores (.zarr) with zarrfast in xarray"
    url = "https://github.com/zarrfast/zarrfast"
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group",
        "consolidated", "storage_options", "zarr_format", "use_zarr_fill_value_as_mask",
        "mode", "store", "engine", "cache_members",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, (Store, Group)):
            return True
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        path = os.fspath(filename_or_obj)
        if isinstance(path, bytes):
            return False
        if os.path.splitext(path.rstrip("/"))[1] == ".zarr":
            return True
        if os.path.isdir(path):
            return any(os.path.exists(os.path.join(path, n))
                       for n in ("zarr.json", ".zgroup", ".zarray", ".zmetadata"))
        return False

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        consolidated: bool | None = None,
        storage_options: Mapping[str, Any] | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        mode: str = "r",
        store: Any = None,
        engine: Any = None,
        cache_members: bool = True,
    ) -> xr.Dataset:
        """Open a Zarr group as a Dataset; the arguments of xarray's ``zarr`` engine are
        accepted (``mode``, ``store``, ``engine`` and ``cache_members`` are read-side
        no-ops: zarrfast opens read-only and caches the group's members itself)."""
        from xarray.backends.store import StoreBackendEntrypoint

        if mode not in ("r", "r+", "a", "w", "w-"):
            raise ValueError(f"open_dataset(engine='zarrfast'): invalid mode {mode!r}")
        if store is not None:
            filename_or_obj = store

        store = ZarrfastDataStore.open(
            filename_or_obj, group=group, consolidated=consolidated,
            storage_options=storage_options, zarr_format=zarr_format,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times,
            concat_characters=concat_characters, decode_coords=decode_coords,
            drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta)


# -- writing ------------------------------------------------------------------------------

#: encoding keys to_zarr understands (others raise when given in ``encoding=``)
_VALID_ENCODINGS = frozenset({
    "chunks", "shards", "compressors", "compressor", "filters", "serializer",
    "write_empty_chunks", "chunk_key_encoding", "fill_value",
})
#: encoding keys that reading adds and writing ignores
_SAFE_TO_DROP = frozenset({"source", "original_shape", "preferred_chunks"})
_MODES = ("w", "w-", "a")
_UNSUPPORTED = ("append_dim", "region", "align_chunks", "unlimited_dims", "synchronizer",
                "chunkmanager_store_kwargs", "write_inherited_coords")


def _encode_variable(var: xr.Variable, name: Hashable) -> xr.Variable:
    """xarray's CF encoding for Zarr (no ``missing_value`` coder: Zarr has fill values),
    then strings as xarray's zarr backend stores them (unicode kept, bytes fixed-length)."""
    from xarray.backends.common import ensure_dtype_not_object

    coders = getattr(conventions, "ZARR_CODERS", None)
    if coders is not None:
        var = conventions.encode_cf_variable(var, name=name, coders=coders)
    else:  # pragma: no cover - older xarray
        var = conventions.encode_cf_variable(var, name=name)
    var = ensure_dtype_not_object(var, name=name)
    var = _strings.EncodedStringCoder(allows_unicode=True).encode(var, name=name)
    return _strings.ensure_fixed_length_bytes(var)


def _attr_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _zarr_chunks(name: Hashable, var: xr.Variable, enc_chunks: Any, safe_chunks: bool
                 ) -> Any:
    """The chunk shape of the new array: ``encoding["chunks"]`` or the dask chunks (which
    must then be regular except the last); dask chunks must not make two blocks write one
    zarr chunk."""
    var_chunks = var.chunks
    if enc_chunks is None and var_chunks is None:
        return "auto"
    if isinstance(enc_chunks, int):
        enc_chunks = (enc_chunks,) * var.ndim
    if enc_chunks is None:
        out = []
        for dim, sizes in zip(var.dims, var_chunks, strict=True):
            if len(sizes) > 1 and (any(s != sizes[0] for s in sizes[1:-1])
                                   or sizes[-1] > sizes[0]):
                raise ZarrfastError(
                    f"variable {name!r}: dask chunks {sizes} along dimension {dim!r} are "
                    f"irregular; Zarr needs equal chunks (the last may be smaller): "
                    f"rechunk, or set encoding['chunks']")
            out.append(max(sizes[0], 1) if sizes else 1)
        return tuple(out)
    enc_chunks = tuple(int(c) for c in enc_chunks)
    if len(enc_chunks) != var.ndim:
        raise ZarrfastError(
            f"variable {name!r}: encoding chunks {enc_chunks} do not match its "
            f"{var.ndim} dimensions {var.dims}")
    return enc_chunks


def _check_aligned(name: Hashable, var: xr.Variable, unit: Any, safe_chunks: bool) -> None:
    """Dask blocks must not share a stored object (a chunk, or a shard when sharded):
    they are written in parallel without a lock."""
    if var.chunks is None or not safe_chunks or not isinstance(unit, (tuple, list)):
        return
    for dim, sizes, zc in zip(var.dims, var.chunks, unit, strict=True):
        edges = np.cumsum(sizes)[:-1]
        if (edges % int(zc)).any():
            shown = sizes if len(sizes) <= 8 else (*sizes[:8], "...")
            raise ZarrfastError(
                f"variable {name!r}: dask chunks {shown} along dimension {dim!r} are "
                f"not aligned with the Zarr chunk (or shard) size {zc}; two dask blocks would "
                f"write one stored object. Rechunk (e.g. ds.chunk({{{dim!r}: {zc}}})) or pass "
                f"safe_chunks=False")


def _codecs_argument(value: Any) -> Any:
    """Codec objects from zarrfast, zarr-python or numcodecs, or dicts, as dicts."""
    if value is None:
        return None
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        return _codec_config(value) if not isinstance(value, str) else value
    return [_codec_config(c) for c in value]


def _target_group(store: Any, *, mode: str, group: str | None, zarr_format: int,
                  storage_options: Mapping[str, Any] | None) -> Group:
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    kw: dict[str, Any] = {}
    if storage_options is not None:
        kw["storage_options"] = storage_options
    path = (group or "").strip("/") or None
    if mode == "a":
        try:
            return open_group(store, mode="r+", path=path, use_consolidated=False, **kw)
        except ZarrfastError:
            pass
        try:  # a new group in an existing hierarchy takes its format
            zarr_format = open_group(store, mode="r", use_consolidated=False,
                                     **kw).zarr_format
        except ZarrfastError:
            pass
        return open_group(store, mode="a", path=path, zarr_format=zarr_format,
                          use_consolidated=False, **kw)
    return open_group(store, mode=mode, path=path, zarr_format=zarr_format, **kw)


def _refuse_existing(store: Any, group: str | None,
                     storage_options: Mapping[str, Any] | None) -> None:
    """mode "w-": fail early, before anything is written, if the group exists."""
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    kw = {} if storage_options is None else {"storage_options": storage_options}
    path = (group or "").strip("/") or None
    try:
        open_group(store, mode="r", path=path, use_consolidated=False, **kw)
    except ZarrfastError:
        return
    raise ContainsGroupError(
        f"a group already exists at {path or '/'!r} in {store!r}; pass mode='w' to replace "
        f"it or mode='a' to add variables to it")


def to_zarr(
    ds: xr.Dataset,
    store: Any,
    *,
    mode: str = "w-",
    group: str | None = None,
    consolidated: bool = True,
    zarr_format: int = 3,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    compute: bool = True,
    write_empty_chunks: bool | None = None,
    safe_chunks: bool = True,
    **kwargs: Any,
) -> Any:
    """Write ``ds`` to a Zarr store with zarrfast, as ``ds.to_zarr`` does with zarr-python.

    Parameters
    ----------
    ds
        The dataset; dask-backed variables are written block by block in parallel
        (``dask.array.store(..., lock=False)``), each block covering whole Zarr chunks.
    store
        A local path, a :class:`~zarrfast.storage.Store`, a ``dict`` (memory).
    mode
        ``"w-"``: create, fail if the group exists; ``"w"``: replace it; ``"a"``: add
        variables to an existing group (created if missing); variables already present are
        overwritten in place with their stored encoding (their shape must match).
    group
        Path of the group within the store.
    consolidated
        Consolidate the store's metadata at its root afterwards.
    zarr_format
        2 or 3 (for ``mode="a"`` on an existing group, the group's format wins).
    encoding
        Per variable: ``chunks``, ``shards``, ``compressors``, ``filters``, ``serializer``,
        ``fill_value`` (v3), ``chunk_key_encoding``, ``write_empty_chunks`` and CF keys
        (``dtype``, ``scale_factor``, ``add_offset``, ``_FillValue``, ``units``...).
    compute
        With ``False``, write the metadata (and the NumPy-backed data) now and return a
        ``dask.delayed`` object that writes the dask-backed data.
    write_empty_chunks
        Store chunks equal to the fill value.
    safe_chunks
        Refuse dask chunks that would make two dask blocks write one Zarr chunk.
    """
    for key in kwargs:
        if key in _UNSUPPORTED:
            raise ZarrfastError(f"zarrfast.xarray.to_zarr: {key}= is not supported yet")
        raise TypeError(f"zarrfast.xarray.to_zarr got an unexpected keyword argument {key!r}")
    if mode not in _MODES:
        raise ZarrfastError(
            f"zarrfast.xarray.to_zarr: mode={mode!r} is not supported; use one of {_MODES} "
            f"('r+' and 'a-', for region and append writes, are not supported yet)")
    if zarr_format not in (2, 3):
        raise ZarrfastError(f"zarr_format must be 2 or 3, got {zarr_format!r}")
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"to_zarr needs an xarray.Dataset, got {type(ds).__name__}")
    encoding = {k: dict(v) for k, v in (encoding or {}).items()}
    missing = [k for k in encoding if k not in ds.variables]
    if missing:
        raise ZarrfastError(f"encoding given for variables {missing} not in the dataset")
    for vn, enc in encoding.items():
        if "_FillValue" in enc and enc.get("fill_value") is not None:
            raise ZarrfastError(f"variable {vn!r}: give _FillValue or fill_value, not both")
    if isinstance(store, (str, os.PathLike)):
        # resolve a path or URL once, and close what we opened (a zip archive is only
        # complete once closed; two open handles of one archive would lose writes)
        from zarrfast.storage import ZipStore
        from zarrfast.storage.resolve import make_store

        opened = make_store(store, storage_options=storage_options)
        if not compute and isinstance(opened, ZipStore):
            opened.close()
            raise ZarrfastError(
                f"to_zarr({os.fspath(store)!r}, compute=False): an archive must be closed "
                f"after the delayed write; pass zarrfast.storage.ZipStore(path, mode='a') "
                f"and close it yourself")
        try:
            return to_zarr(ds, opened, mode=mode, group=group, consolidated=consolidated,
                           zarr_format=zarr_format, encoding=encoding, compute=compute,
                           write_empty_chunks=write_empty_chunks, safe_chunks=safe_chunks)
        finally:
            if compute:
                opened.close()

    target: Group | None = None
    existing: set[str] = set()
    fmt = zarr_format
    if mode == "a":
        target = _target_group(store, mode=mode, group=group, zarr_format=zarr_format,
                               storage_options=storage_options)
        fmt = target.zarr_format
        existing = set(target.keys())
    elif mode == "w-":
        _refuse_existing(store, group, storage_options)
    if target is not None:
        dims_in_store: dict[str, int] = {}
        for name in existing:
            node = target[name]
            if isinstance(node, Array):
                try:
                    dims, _ = _dims_and_attrs(node, name)
                except ZarrfastError:  # not an xarray variable: no dimensions to match
                    continue
                dims_in_store.update(zip(dims, node.shape, strict=True))
        for d, n in ds.sizes.items():
            if d in dims_in_store and dims_in_store[d] != n:
                raise ZarrfastError(
                    f"mode='a': dimension {d!r} has length {n} in the dataset but "
                    f"{dims_in_store[d]} in the store (append_dim= is not supported yet)")

    variables, attributes = conventions.encode_dataset_coordinates(ds)
    variables = dict(variables)
    for vn, enc in encoding.items():
        variables[vn] = variables[vn].copy(deep=False)
        variables[vn].encoding = enc

    existing_vars: dict[str, xr.Variable] = {}
    if target is not None:
        overlap = [k for k in variables if str(k) in existing]
        if overlap:
            reader = ZarrfastDataStore(target)
            raw = {str(k): reader.open_store_variable(str(k), target[str(k)])
                   for k in overlap}
            decoded, _, _ = conventions.decode_cf_variables(raw, {})
            for k in overlap:
                var = variables[k].copy(deep=False)
                var.encoding = dict(decoded[str(k)].encoding)
                existing_vars[str(k)] = var

    # first encode and check everything, so that an error leaves the store untouched
    plan: list[tuple[str, xr.Variable, Any, dict[str, Any], Any, dict[str, Any]]] = []
    for vn, var in variables.items():
        name = str(vn)
        if name in existing_vars:
            var = existing_vars[name]
        check = vn in encoding
        encoded = _encode_variable(var.copy(deep=False), vn)
        enc = {k: v for k, v in encoded.encoding.items() if k not in _SAFE_TO_DROP}
        attrs = dict(encoded.attrs)
        invalid = [k for k in enc if k not in _VALID_ENCODINGS]
        if check and invalid:
            raise ZarrfastError(
                f"variable {name!r}: unexpected encoding parameters for zarrfast: {invalid}")
        if check and "fill_value" in enc and fmt == 2:
            raise ZarrfastError(
                f"variable {name!r}: Zarr v2 has no 'fill_value' encoding; use _FillValue")
        dtype = encoded.dtype
        if fmt == 2:
            fill_value = attrs.pop("_FillValue", None)
            enc.pop("fill_value", None)
        else:
            fill_value = enc.pop("fill_value", None)
            if fill_value is None and dtype.kind == "f":
                fill_value = np.nan  # xarray's default for floats (zarr's is 0)
            fv_attr = attrs.pop("_FillValue", None)
            if fv_attr is not None:
                attrs["_FillValue"] = _encode_fill_attr(fv_attr, dtype)
        chunks = _zarr_chunks(vn, encoded, enc.get("chunks"), safe_chunks)
        if name in existing:
            arr = target[name]
            if not isinstance(arr, Array) or tuple(arr.shape) != encoded.shape:
                raise ZarrfastError(
                    f"mode='a': variable {name!r} exists in the store with shape "
                    f"{getattr(arr, 'shape', None)}, the dataset's has {encoded.shape}")
            _check_aligned(vn, encoded, arr.shards or arr.chunks, safe_chunks)
            plan.append((name, encoded, arr, {}, None, {}))
            continue
        vlen = _strings.check_vlen_dtype(dtype)
        if dtype.kind == "T":  # NumPy's StringDType (zarr-python reads vlen strings so)
            vlen = str
        create: dict[str, Any] = {"chunks": chunks,
                                  "dtype": vlen if vlen is not None else dtype}
        if fmt == 3:
            create["dimension_names"] = list(encoded.dims)
        else:
            attrs[DIMENSION_KEY] = list(encoded.dims)
        for key in ("compressors", "filters", "serializer"):
            if key in enc:
                create[key] = _codecs_argument(enc[key])
        if "compressor" in enc:
            create["compressors"] = _codecs_argument(enc["compressor"])
        if vlen is None and isinstance(create.get("filters"), list):
            # object codecs (vlen-utf8...) only go with object arrays
            create["filters"] = [f for f in create["filters"] if not (
                isinstance(f, Mapping) and str(f.get("id", "")).startswith("vlen-"))]
        if enc.get("shards") is not None:
            create["shards"] = enc["shards"]
        shards = enc.get("shards")
        _check_aligned(vn, encoded, tuple(shards) if shards is not None else chunks,
                       safe_chunks)
        if enc.get("chunk_key_encoding") is not None:
            create["chunk_key_encoding"] = enc["chunk_key_encoding"]
        wec = enc.get("write_empty_chunks", write_empty_chunks)
        if wec is not None:
            create["config"] = {"write_empty_chunks": bool(wec)}
        plan.append((name, encoded, None, create, fill_value,
                     {k: _attr_value(v) for k, v in attrs.items()}))

    if target is None:
        target = _target_group(store, mode=mode, group=group, zarr_format=zarr_format,
                               storage_options=storage_options)
    if attributes:
        target.attrs.update({k: _attr_value(v) for k, v in attributes.items()})
    sources: list[Any] = []
    targets: list[Any] = []
    for name, encoded, arr, create, fill_value, attrs in plan:
        if arr is None:
            arr = target.create_array(name, shape=encoded.shape, fill_value=fill_value,
                                      attributes=attrs, overwrite=mode == "w", **create)
            if fmt == 2 and fill_value is None and arr.fill_value is not None:
                # xarray's v2 arrays without _FillValue have "fill_value": null (zarrfast
                # writes the dtype's zero when none is given), else zeros would read as NaN
                arr._replace_metadata(fill_value=None, fill_value_json=None)
        data = encoded.data
        if _is_dask(data):
            sources.append(data)
            targets.append(arr)
        else:
            arr[...] = np.asarray(data)

    if consolidated:
        consolidate_metadata(target.store)
    if sources:
        import dask.array as da

        return da.store(sources, targets, lock=False, compute=compute)
    return None


def _is_dask(x: Any) -> bool:
    try:
        import dask.array as da
    except ImportError:
        return False
    return isinstance(x, da.Array)
