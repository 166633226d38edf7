"""Write a GeoZarr Dataset (mini spec, "Dataset") from NumPy arrays or an ``xarray.Dataset``.

A Dataset is a group whose arrays all have named dimensions (Zarr v3
``dimension_names``; Zarr v2 the xarray attribute ``_ARRAY_DIMENSIONS``) and in
which every dimension name ``N`` of an array is itself a one-dimensional array
``N`` of matching length (a *coordinate variable*).

:func:`write_dataset` checks all of that -- plus node names, ranks, dtypes and
JSON-ability of the attributes -- before it writes anything, so bad input leaves
the store untouched.

Fill values follow the conventions xarray reads (CF ``_FillValue``):

* Zarr v2: ``_FillValue`` becomes the array's ``fill_value`` and is not kept as an
  attribute; without one, ``fill_value`` is ``null`` (so xarray masks nothing).
* Zarr v3: ``fill_value`` is ``_FillValue`` when given, else NaN for floats and 0
  otherwise; the ``_FillValue`` attribute is kept, encoded as xarray encodes it for
  Zarr v3 (an integer for integer dtypes; for floats the base64 of the
  little-endian IEEE double -- :func:`decode_fill_attr` reads both forms).

Other attributes (CF ``units``, ``standard_name``, ``grid_mapping``, ...) pass
through unchanged (NumPy scalars and arrays become JSON numbers and lists).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarrfast.errors import InvalidNodeNameError, ZarrfastError
from zarrfast.hierarchy.group import Group
from zarrfast.metadata.paths import validate_node_name

__all__ = ["decode_fill_attr", "encode_fill_attr", "write_dataset"]

DIMENSION_KEY = "_ARRAY_DIMENSIONS"


@dataclass
class _Var:
    name: str
    dims: tuple[str, ...]
    data: np.ndarray
    attrs: dict[str, Any]
    chunks: tuple[int, ...] | None = None
    fill: Any = None            # the CF _FillValue (decoded), or None


# ---------------------------------------------------------------------------
# JSON and fill-value helpers
# ---------------------------------------------------------------------------


def _jsonable(value: Any, where: str) -> Any:
    """``value`` with NumPy scalars/arrays and tuples converted to JSON types."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ZarrfastError(f"{where}: attribute keys must be str, got {k!r}")
            out[k] = _jsonable(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, where) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ZarrfastError(
        f"{where}: attribute value {value!r} of type {type(value).__name__} cannot be "
        f"stored as JSON"
    )


def encode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    """A ``_FillValue`` attribute as xarray writes it for Zarr v3."""
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return _jsonable(value, "_FillValue")


def decode_fill_attr(value: Any) -> Any:
    """A ``_FillValue``/``missing_value`` attribute as a number (or ``None``): plain JSON
    numbers, xarray's base64 doubles, and the strings ``"NaN"``/``"Infinity"``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list) and len(value) == 1:
        return decode_fill_attr(value[0])
    if isinstance(value, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if value in special:
            return special[value]
        try:
            raw = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            return None
        if len(raw) == 8:
            return struct.unpack("<d", raw)[0]
    return None


# ---------------------------------------------------------------------------
# input normalisation and validation
# ---------------------------------------------------------------------------


def _parse_entry(name: Any, entry: Any, kind: str) -> _Var:
    where = f"{kind} {name!r}"
    if not isinstance(name, str):
        raise ZarrfastError(f"{where}: variable names must be str")
    try:
        validate_node_name(name)
    except InvalidNodeNameError as e:
        raise ZarrfastError(f"{where}: not a valid node name: {e}") from None
    if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
        raise ZarrfastError(
            f"{where}: expected (dims, data) or (dims, data, attrs), got {type(entry).__name__}"
        )
    dims_in, data = entry[0], entry[1]
    attrs = entry[2] if len(entry) == 3 else {}
    if isinstance(dims_in, str):
        dims_in = (dims_in,)
    dims = tuple(dims_in)
    if not all(isinstance(d, str) and d for d in dims):
        raise ZarrfastError(f"{where}: dimension names must be non-empty strings, got {dims!r}")
    if len(set(dims)) != len(dims):
        raise ZarrfastError(f"{where}: dimension names {dims!r} are not unique")
    arr = np.asarray(data)
    if arr.ndim == 0:
        raise ZarrfastError(
            f"{where}: scalar (0-d) arrays are not GeoZarr DataArrays; store a scalar such as "
            f"a CF grid mapping as attributes, or give it a length-1 dimension"
        )
    if arr.ndim != len(dims):
        raise ZarrfastError(
            f"{where}: {len(dims)} dimension names {dims!r} for an array of shape {arr.shape}"
        )
    if arr.dtype.kind not in "biufcmMUS":
        raise ZarrfastError(f"{where}: dtype {arr.dtype} cannot be stored")
    if not isinstance(attrs, Mapping):
        raise ZarrfastError(f"{where}: attrs must be a mapping, got {type(attrs).__name__}")
    attrs = dict(attrs)
    attrs.pop(DIMENSION_KEY, None)
    fill = attrs.pop("_FillValue", None)
    if fill is not None:
        fill = decode_fill_attr(fill) if isinstance(fill, str) else fill
        try:
            fill = np.asarray(fill, dtype=arr.dtype)[()]
        except (TypeError, ValueError, OverflowError) as e:
            raise ZarrfastError(f"{where}: _FillValue {fill!r} does not fit {arr.dtype}: {e}"
                                ) from None
    attrs = _jsonable(attrs, f"{where} attrs")
    try:
        json.dumps(attrs, allow_nan=True)
    except (TypeError, ValueError) as e:  # pragma: no cover - _jsonable guards this
        raise ZarrfastError(f"{where}: attributes are not JSON: {e}") from None
    return _Var(name, dims, arr, attrs, fill=fill)


def _chunks_for(var: _Var, chunks: Any) -> Any:
    shape = var.data.shape
    if var.chunks is not None:
        return tuple(max(1, min(c, n)) if n else 1 for c, n in zip(var.chunks, shape,
                                                                   strict=True))
    if chunks is None:
        return "auto"
    if isinstance(chunks, (int, np.integer)) and not isinstance(chunks, bool):
        if chunks < 1:
            raise ZarrfastError(f"chunks must be >= 1, got {chunks}")
        return tuple(max(1, min(int(chunks), n)) for n in shape)
    if isinstance(chunks, Mapping):
        out = []
        for d, n in zip(var.dims, shape, strict=True):
            c = chunks.get(d, n)
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
                raise ZarrfastError(f"chunks[{d!r}] must be an integer >= 1, got {c!r}")
            out.append(max(1, min(int(c), n)))
        return tuple(out)
    raise ZarrfastError(
        f"chunks must be None, an int or a mapping of dimension name to int, got {chunks!r}"
    )


def _check_dataset(variables: dict[str, _Var]) -> None:
    """Every dimension ``N`` of every variable is a 1-D variable ``N`` of matching length."""
    problems = []
    for var in variables.values():
        for axis, dim in enumerate(var.dims):
            coord = variables.get(dim)
            n = var.data.shape[axis]
            if coord is None:
                problems.append(f"{var.name!r} has dimension {dim!r} but there is no "
                                f"coordinate variable {dim!r}")
            elif coord.dims != (dim,):
                problems.append(f"coordinate variable {dim!r} must have dimensions "
                                f"({dim!r},), got {coord.dims!r}")
            elif coord.data.shape[0] != n:
                problems.append(f"{var.name!r} has {n} elements along {dim!r} but coordinate "
                                f"variable {dim!r} has {coord.data.shape[0]}")
    if problems:
        raise ZarrfastError("not a valid GeoZarr Dataset: " + "; ".join(dict.fromkeys(problems)))


def _from_xarray(ds: Any) -> tuple[dict[str, _Var], dict[str, Any]]:
    """CF-encode an ``xarray.Dataset`` (times, masks, coordinates attribute) into _Vars."""
    from xarray import conventions

    variables, gattrs = conventions.encode_dataset_coordinates(ds)
    variables, gattrs = conventions.cf_encoder(variables, gattrs)
    out: dict[str, _Var] = {}
    for name, v in variables.items():
        attrs = dict(v.attrs)
        if "_FillValue" not in attrs and v.encoding.get("_FillValue") is not None:
            attrs["_FillValue"] = v.encoding["_FillValue"]
        var = _parse_entry(str(name), (tuple(str(d) for d in v.dims), np.asarray(v.values),
                                       attrs), "variable")
        enc_chunks = v.encoding.get("chunks") or v.encoding.get("preferred_chunks")
        if isinstance(enc_chunks, Mapping):
            enc_chunks = tuple(enc_chunks.get(d, n) for d, n in zip(v.dims, v.shape,
                                                                   strict=True))
        if isinstance(enc_chunks, (tuple, list)) and len(enc_chunks) == v.ndim:
            var.chunks = tuple(int(c) for c in enc_chunks)
        out[var.name] = var
    return out, dict(gattrs)


def _is_xarray_dataset(obj: Any) -> bool:
    return type(obj).__module__.startswith("xarray") and hasattr(obj, "data_vars")


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def _open_target(group: Any, zarr_format: int) -> tuple[Any, bool]:
    """``(group or store-like, is_group)``; a store-like is only opened when writing."""
    if isinstance(group, Group):
        if group.zarr_format != zarr_format:
            raise ZarrfastError(
                f"write_dataset: group {group.name!r} is Zarr v{group.zarr_format} but "
                f"zarr_format={zarr_format}; a Dataset's arrays share their group's format"
            )
        if group.read_only:
            raise ZarrfastError(f"write_dataset: group {group.name!r} is read-only")
        return group, True
    return group, False


def _write_var(group: Group, var: _Var, chunk_spec: Any, zarr_format: int,
               overwrite: bool) -> None:
    dtype = var.data.dtype
    attrs = dict(var.attrs)
    kwargs: dict[str, Any] = {}
    if zarr_format == 3:
        if var.fill is not None:
            kwargs["fill_value"] = var.fill
            attrs["_FillValue"] = encode_fill_attr(var.fill, dtype)
        elif dtype.kind == "f":
            kwargs["fill_value"] = np.nan
    elif var.fill is not None:
        kwargs["fill_value"] = var.fill
    arr = group.create_array(var.name, shape=var.data.shape, dtype=dtype,
                             chunks=chunk_spec, dimension_names=var.dims,
                             attributes=attrs, overwrite=overwrite, **kwargs)
    if zarr_format == 2 and var.fill is None and arr.metadata.fill_value is not None:
        # xarray reads a v2 fill_value as _FillValue: without one, store null
        arr._replace_metadata(fill_value=None, fill_value_json=None)
    if var.data.size:
        arr[...] = var.data


def write_dataset(group: Any, data_vars: Any, coords: Mapping[str, Any] | None = None, *,
                  zarr_format: int = 3, chunks: Any = None,
                  attrs: Mapping[str, Any] | None = None, overwrite: bool = False) -> Group:
    """Write a GeoZarr Dataset into ``group``.

    Parameters
    ----------
    group
        A writable [zarrfast.Group][] of format ``zarr_format``, or anything
        [zarrfast.open_group][] takes (a path, a store, a dict); a missing group
        is created.
    data_vars
        Mapping of name -> ``(dims, array)`` or ``(dims, array, attrs)`` -- or an
        ``xarray.Dataset`` (then ``coords`` must be ``None``; variables are CF-encoded
        as ``Dataset.to_zarr`` would, and their ``encoding["chunks"]`` is used).
    coords
        The coordinate variables, in the same form. Every dimension name of every
        variable must be the name of a 1-D variable ``(name,)`` of matching length.
    zarr_format
        2 or 3. Dimension names go to ``dimension_names`` (v3) or the
        ``_ARRAY_DIMENSIONS`` attribute (v2).
    chunks
        ``None`` (automatic), an int for every dimension, or a mapping of dimension
        name -> chunk length (unnamed dimensions are one chunk).
    attrs
        Attributes of the group (merged into the existing ones).
    overwrite
        Replace existing members of the same names (else an error, before writing).

    Returns
    -------
    zarrfast.Group
        The Dataset's group.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        Invalid input; nothing has been written then.
    """
    if zarr_format not in (2, 3):
        raise ZarrfastError(f"write_dataset: zarr_format must be 2 or 3, got {zarr_format!r}")
    group_attrs: dict[str, Any] = {}
    variables: dict[str, _Var] = {}
    if _is_xarray_dataset(data_vars):
        if coords is not None:
            raise ZarrfastError("write_dataset: pass coords=None with an xarray.Dataset")
        variables, group_attrs = _from_xarray(data_vars)
    else:
        for kind, mapping in (("data variable", data_vars), ("coordinate", coords or {})):
            if not isinstance(mapping, Mapping):
                raise ZarrfastError(f"write_dataset: {kind}s must be a mapping of name -> "
                                    f"(dims, data[, attrs]), got {type(mapping).__name__}")
            for name, entry in mapping.items():
                if name in variables:
                    raise ZarrfastError(f"write_dataset: {name!r} is both a data variable "
                                        f"and a coordinate")
                variables[name] = _parse_entry(name, entry, kind)
    _check_dataset(variables)
    group_attrs.update(dict(attrs or {}))
    group_attrs = _jsonable(group_attrs, "write_dataset: attrs")
    chunk_plan = {name: _chunks_for(var, chunks) for name, var in variables.items()}

    target, is_group = _open_target(group, zarr_format)
    if is_group and not overwrite:
        clash = [n for n in variables if n in target]
        if clash:
            raise ZarrfastError(
                f"write_dataset: group {target.name!r} already has members {clash}; pass "
                f"overwrite=True to replace them"
            )
    # --- everything is checked; write ---
    if not is_group:
        from zarrfast.api import open_group

        target = open_group(target, mode="a", zarr_format=zarr_format)
        if target.zarr_format != zarr_format:
            raise ZarrfastError(
                f"write_dataset: the group is Zarr v{target.zarr_format}, not v{zarr_format}"
            )
        if not overwrite:
            clash = [n for n in variables if n in target]
            if clash:
                raise ZarrfastError(
                    f"write_dataset: group {target.name!r} already has members {clash}; "
                    f"pass overwrite=True to replace them"
                )
    if group_attrs:
        target.update_attributes(group_attrs)
    for name, var in variables.items():
        _write_var(target, var, chunk_plan[name], zarr_format, overwrite)
    return target
