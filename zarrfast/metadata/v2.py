"""Zarr v2 metadata: ``.zarray``, ``.zgroup`` and ``.zattrs``.

Spec: zarr-specs ``docs/v2/v2.0.rst``.  An array document::

    {"zarr_format": 2, "shape": [10000, 1000], "chunks": [1000, 100],
     "dtype": "<f8", "compressor": {"id": "zstd", "level": 1}, "fill_value": "NaN",
     "order": "C", "filters": [{"id": "delta", "dtype": "<f8"}],
     "dimension_separator": "."}

``dtype`` is a NumPy type string (``"<i4"``, ``">f8"``, ``"|S10"``, ``"<U4"``,
``"|O"``, ``"<M8[ns]"``) or a structured list (``[["a", "<i4"], ["b", "|S3"]]``).
Data are stored in the declared byte order and returned in it, so no bytes
are swapped.  ``order: "F"`` becomes a transpose in the chunk pipeline.

Fill values: ``null``; numbers; ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
``[re, im]`` for complex; base64 for ``S`` and void/structured types; the
string itself for ``U``; anything JSON for object arrays.

:class:`ArrayMetadataV2` offers the interface of the v3
:class:`~zarrfast.metadata.v3.ArrayMetadata` that the engine and
:class:`~zarrfast.Array` use (``shape``, ``chunks``, ``data_type``,
``chunk_key_encoding``, ...); its ``order``, ``filters`` and ``compressor``
become a codec chain in :meth:`zarrfast.codecs.CodecChain.from_v2`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.errors import (
    FillValueError,
    FillValueOverflowError,
    MetadataError,
    MetadataValidationError,
    add_context,
)
from zarrfast.metadata.chunk_grid import RegularChunkGrid, V2ChunkKeyEncoding
from zarrfast.metadata.data_type import (
    ML_FLOATS,
    ML_INTS,
    DataType,
    _is_ml,
    _ml_dtype,
    _parse_float,
    packed_layout,
    warn_if_padded,
)
from zarrfast.metadata.limits import INT64_MAX, check_array_size
from zarrfast.metadata.limits import load_json as _load  # JSON errors name the key

__all__ = ["ArrayMetadataV2", "GroupMetadataV2", "parse_v2_dtype", "v2_dtype_to_json"]

_ARRAY_KEYS = {"zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order",
               "filters", "dimension_separator"}


#: a NumPy type string as Zarr v2 writes them (``"<f8"``, ``"|S10"``, ``"<M8[ns]"``, ``"|O"``);
#: anything else (NumPy's comma strings, ``"(3)i4"``) is refused before NumPy parses it
_TYPESTR = re.compile(
    r"^[<>|=]?[A-Za-z?][A-Za-z]{0,16}[0-9]{0,10}(\[[0-9]{0,10}[A-Za-z]{1,3}\])?$"
)
#: bound on one element of a (structured / sub-array) dtype
_MAX_ITEMSIZE = 2**31 - 1


def parse_v2_dtype(value: Any, *, where: str, _depth: int = 0) -> np.dtype:
    """A NumPy dtype from a v2 ``dtype`` member."""
    try:
        if _depth > 32:
            raise ValueError("structured dtype nested too deeply")
        if isinstance(value, str):
            if value in ML_FLOATS or value in ML_INTS:  # as zarr-python writes them: by name
                return _ml_dtype(value, where)
            if not _TYPESTR.match(value):
                raise ValueError("not a NumPy type string such as '<f8' or '|S10'")
            dt = np.dtype(value)
            _check_generic_time(dt)
            return dt
        if isinstance(value, list):
            fields = []
            for f in value:
                if not isinstance(f, list) or len(f) not in (2, 3) or not isinstance(f[0], str):
                    raise TypeError(f"bad field {f!r}")
                sub = parse_v2_dtype(f[1], where=where, _depth=_depth + 1)
                if len(f) == 3:
                    shape = f[2]
                    if not isinstance(shape, list) or not all(
                        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
                    ) or len(shape) > 32:
                        raise ValueError(f"field {f[0]!r}: bad sub-array shape {shape!r}")
                    if math.prod(shape) * max(sub.itemsize, 1) > _MAX_ITEMSIZE:
                        raise ValueError(f"field {f[0]!r}: sub-array {shape!r} is too large")
                    fields.append((f[0], sub, tuple(shape)))
                else:
                    fields.append((f[0], sub))
            dt = np.dtype(fields)
            if dt.itemsize > _MAX_ITEMSIZE:
                raise ValueError("structured dtype is too large")
            return dt
    except MetadataValidationError:
        raise
    except Exception as e:  # noqa: BLE001 - NumPy raises TypeError, ValueError, SyntaxError...
        raise MetadataValidationError(f"{where}: invalid dtype {value!r} ({e})") from None
    raise MetadataValidationError(
        f"{where}: dtype must be a NumPy type string or a list of fields, got {value!r}"
    )


def _check_generic_time(dt: np.dtype) -> None:
    """Refuse a generic-unit datetime64/timedelta64 (in a field too) with a scale
    (``'<M8[2generic]'``) or in the other byte order (``'>M8'`` here): NumPy allocates
    those in native order and without the scale whatever the dtype says
    (``np.empty(2, '>M8').dtype`` is ``'<M8'``), so their values would not read back.
    ``'<M8'``, the generic unit itself, is taken, as zarr-python 3.4 and Zarr v3 take it."""
    if dt.fields is not None:
        for sub, *_rest in dt.fields.values():
            _check_generic_time(sub.base)
    elif dt.kind in "mM" and np.datetime_data(dt)[0] == "generic" and (
            np.datetime_data(dt)[1] != 1 or not dt.isnative):
        raise ValueError(f"a generic-unit datetime64/timedelta64 ({dt.str}, scale "
                         f"{np.datetime_data(dt)[1]}) is taken only without a scale and in "
                         f"the machine's byte order")


def v2_dtype_to_json(dtype: np.dtype) -> Any:
    if _is_ml(dtype):  # bfloat16, int4...: their name (their type string is NumPy's "V")
        return dtype.name
    if dtype.fields is not None:
        return [
            [name, v2_dtype_to_json(dt.base), list(dt.shape)] if dt.shape
            else [name, v2_dtype_to_json(dt)]
            for name, (dt, *_rest) in dtype.fields.items()
        ]
    return dtype.str


def _float_to_json(x: Any) -> Any:
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def decode_v2_fill_value(value: Any, dtype: np.dtype, *, where: str,
                         object_codec: str | None = None) -> Any:
    """A fill value from its v2 JSON form (``None`` stays ``None``).  ``object_codec`` is the
    id of an object array's first filter: vlen-bytes fills are base64 (as zarr-python 3
    writes them)."""
    if value is None:
        return None
    kind = dtype.kind
    try:
        if _is_ml(dtype):  # a number, or "NaN"/"Infinity"/"-Infinity" for the floats
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FillValueError(f"{where}: {value!r} is not a number")
            number = float(value) if isinstance(value, str) else value
            return np.asarray(number, dtype=dtype)[()]
        if kind == "O":
            if object_codec == "vlen-bytes" and isinstance(value, str):
                return base64.standard_b64decode(value)
            if not isinstance(value, (str, int, float, bool)):
                # a list or object would be broadcast over the selection, not stored
                raise FillValueError(f"{where}: the fill value of an object array must be a "
                                     f"string, number, boolean or null, got {value!r}")
            return value
        if kind == "f":
            return _parse_float(dtype, value, where)
        if kind == "c":
            if isinstance(value, (list, tuple)) and len(value) == 2:
                comp = np.dtype(f"f{dtype.itemsize // 2}")
                out = np.empty((), dtype=dtype)
                out.real = _parse_float(comp, value[0], where)
                out.imag = _parse_float(comp, value[1], where)
                return out[()]
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise FillValueError(f"{where}: {value!r} is not a complex fill value; "
                                     f"expected [real, imag]")
            if isinstance(value, str):
                return dtype.type(_parse_float(np.dtype(f"f{dtype.itemsize // 2}"), value,
                                               where))
            return dtype.type(value)
        if kind == "b":
            if isinstance(value, (bool, int)):
                return np.bool_(value)
        elif kind in "iu":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise FillValueError(f"{where}: {value!r} is not an integer")
            if isinstance(value, float) and not value.is_integer():
                raise FillValueError(f"{where}: {value!r} is not an integer")
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                raise FillValueOverflowError(f"{where}: {value!r} is out of range for {dtype}")
            return dtype.type(int(value))
        elif kind in "mM":
            native = dtype.newbyteorder("=")
            if isinstance(value, int) and not isinstance(value, bool):
                return np.array(value, dtype="i8").view(native).astype(dtype)[()]
            if isinstance(value, str):  # (a list would make an array, not one value)
                return np.array(value, dtype=dtype)[()]
        elif kind == "U":
            if isinstance(value, str):
                return np.array(value, dtype=dtype)[()]
        elif kind in "SV":
            if isinstance(value, str):
                raw = base64.standard_b64decode(value)
                if kind == "S":
                    out = np.zeros((), dtype=dtype)
                    out[()] = raw  # np.array(b"", dtype="S1") would be an empty array
                    return out[()]
                if len(raw) != dtype.itemsize:
                    raise FillValueError(
                        f"{where}: base64 fill value has {len(raw)} bytes, dtype {dtype} "
                        f"needs {dtype.itemsize}"
                    )
                return np.frombuffer(raw, dtype=dtype)[0]
            if kind == "V" and isinstance(value, int) and value == 0:
                return np.zeros((), dtype=dtype)[()]
    except (ValueError, TypeError, binascii.Error, OverflowError) as e:
        raise FillValueError(f"{where}: invalid fill value {value!r} for dtype {dtype} ({e})"
                             ) from None
    raise FillValueError(f"{where}: invalid fill value {value!r} for dtype {dtype}")


def encode_v2_fill_value(value: Any, dtype: np.dtype) -> Any:
    if value is None:
        return None
    kind = dtype.kind
    if kind == "O":
        if isinstance(value, bytes):
            return base64.standard_b64encode(value).decode("ascii")
        if isinstance(value, (str, int, float, bool)):
            return value
        raise FillValueError(f"cannot store the object fill value {value!r} in JSON")
    v = np.asarray(value, dtype=dtype)[()]
    if _is_ml(dtype):
        f = float(v)
        return int(f) if dtype.name in ML_INTS else _float_to_json(f)
    if kind == "f":
        return _float_to_json(v)
    if kind == "c":
        return [_float_to_json(v.real), _float_to_json(v.imag)]
    if kind == "b":
        return bool(v)
    if kind in "iu":
        return int(v)
    if kind in "mM":
        return int(np.asarray(v).astype(dtype.newbyteorder("=")).view("i8"))
    if kind == "U":
        return str(v)
    if kind in "SV":
        return base64.standard_b64encode(np.asarray(v, dtype=dtype).tobytes()).decode("ascii")
    raise FillValueError(f"cannot encode fill value {value!r} for dtype {dtype}")


def parse_attributes_doc(raw: Any, key: str) -> dict[str, Any]:
    if raw is None:
        return {}
    doc = _load(raw, key)
    if not isinstance(doc, dict):
        raise MetadataValidationError(f"{key}: attributes must be a JSON object, got {doc!r}")
    return doc


def _int_list(value: Any, what: str, node: str, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise MetadataValidationError(f"{node}: {what!r} must be a list of integers, got {value!r}")
    if any(v < minimum for v in value):
        raise MetadataValidationError(f"{node}: {what!r} must be integers >= {minimum}: {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class ArrayMetadataV2:
    """Validated Zarr v2 array metadata (``.zarray`` + ``.zattrs``)."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    compressor: dict | None
    filters: tuple[dict, ...] | None
    fill_value: Any
    order: str = "C"
    dimension_separator: str = "."
    attributes: dict[str, Any] = field(default_factory=dict)
    fill_value_json: Any = None
    #: whether the document had a ``dimension_separator`` member (old writers omit it)
    write_dimension_separator: bool = field(default=True, compare=False)
    extra: dict[str, Any] = field(default_factory=dict)
    zarr_format: int = 2
    node_type: str = "array"

    def __post_init__(self) -> None:
        check_array_size(self.shape, chunks=self.chunks)
        try:
            _check_generic_time(self.dtype)
        except ValueError as e:
            raise MetadataValidationError(f"dtype: {e}") from None
        if self.dtype.fields is not None and packed_layout(self.dtype) != self.dtype:
            # (a padded dtype given to create: stored packed, as v2's field list reads back)
            padded, packed = self.dtype, warn_if_padded(self.dtype, "dtype")
            object.__setattr__(self, "dtype", packed)
            if isinstance(self.fill_value, np.void) and self.fill_value.dtype == padded:
                object.__setattr__(self, "fill_value",
                                   np.array(self.fill_value, dtype=padded).astype(packed)[()])
        if self.fill_value_json is None and self.fill_value is not None:
            object.__setattr__(self, "fill_value_json",
                               encode_v2_fill_value(self.fill_value, self.dtype))

    # -- the interface of ArrayMetadata used by the pipeline and Array -------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def data_type(self) -> DataType:
        # (a structured dtype's str is '|V<n>'; its stored order is each field's own)
        return DataType(self.dtype.str, self.dtype)

    #: zarrfast's :class:`DataType` (the name v3 metadata gives it too)
    type_info = data_type

    @property
    def chunk_grid(self) -> RegularChunkGrid:
        return RegularChunkGrid(self.chunks)

    @property
    def chunk_key_encoding(self) -> V2ChunkKeyEncoding:
        return V2ChunkKeyEncoding(separator=self.dimension_separator)

    @property
    def effective_fill_value(self) -> Any:
        """The value of missing chunks: the fill value or, when it is null, what zarr-python
        3 uses: ``""``/``b""`` for vlen strings/bytes, NaT for datetimes, else zeros."""
        if self.fill_value is not None:
            return self.fill_value
        kind = self.dtype.kind
        if kind == "O":
            first = (self.filters or ({},))[0].get("id")
            return {"vlen-utf8": "", "vlen-bytes": b""}.get(first)
        if kind in "mM":
            return np.array("NaT", dtype=self.dtype)[()]
        return np.zeros((), dtype=self.dtype)[()]

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        dims = self.attributes.get("_ARRAY_DIMENSIONS")
        if isinstance(dims, list) and len(dims) == len(self.shape) and all(
            isinstance(d, str) for d in dims
        ):
            return tuple(dims)
        return None

    # -- (de)serialisation ---------------------------------------------------------
    @classmethod
    def from_documents(cls, zarray: Any, zattrs: Any, *, path: str, key: str,
                       parsed: dict[Any, Any] | None = None) -> ArrayMetadataV2:
        """The metadata of a ``.zarray`` and ``.zattrs`` document (``zattrs`` may be
        ``None``).  ``parsed``: kept by the caller over one batch of documents (the arrays
        of a hierarchy), the metadata parsed of each ``.zarray`` seen: a ``.zarray`` equal
        to one of them gets a copy of that metadata with its own attributes, without
        parsing it again (what parsing it would give)."""
        attrs_key = key.rsplit(".zarray", 1)[0] + ".zattrs"
        if parsed is not None and isinstance(zarray, (bytes, bytearray, memoryview)):
            known = parsed.get(bytes(zarray))
            if known is not None and type(known) is cls:
                attrs = parse_attributes_doc(zattrs, attrs_key)
                md = object.__new__(cls)
                vars(md).update(vars(known))
                vars(md)["attributes"] = dict(attrs)
                return md
        doc = _load(zarray, key)
        attrs = parse_attributes_doc(zattrs, attrs_key)
        md = cls.from_dict(doc, attrs, path=path)
        if parsed is not None and isinstance(zarray, (bytes, bytearray, memoryview)):
            parsed[bytes(zarray)] = md
        return md

    @classmethod
    def from_dict(cls, doc: Any, attributes: dict | None = None, *, path: str = ""
                  ) -> ArrayMetadataV2:
        node = f"array {path or '/'!r} (v2)"
        if not isinstance(doc, dict):
            raise MetadataValidationError(f"{node}: .zarray must be a JSON object, got {doc!r}")
        if doc.get("zarr_format") != 2:
            raise MetadataValidationError(
                f"{node}: zarr_format must be 2, got {doc.get('zarr_format')!r}"
            )
        for key in ("shape", "chunks", "dtype", "compressor", "fill_value", "order"):
            if key not in doc:
                raise MetadataValidationError(f"{node}: required member {key!r} is missing")
        extra = {k: v for k, v in doc.items() if k not in _ARRAY_KEYS}
        shape = _int_list(doc["shape"], "shape", node, 0)
        chunks = _int_list(doc["chunks"], "chunks", node, 1)
        if len(chunks) != len(shape):
            raise MetadataValidationError(
                f"{node}: chunks {list(chunks)} has rank {len(chunks)} but shape {list(shape)} "
                f"has rank {len(shape)}"
            )
        check_array_size(shape, where=f"{node}: 'shape'")
        if any(c > INT64_MAX for c in chunks):
            raise MetadataValidationError(f"{node}: 'chunks' {list(chunks)} has a length above "
                                          f"2**63-1")
        dtype = parse_v2_dtype(doc["dtype"], where=f"{node}: dtype")
        if dtype.itemsize == 0 and dtype.kind != "O":
            raise MetadataValidationError(f"{node}: dtype {doc['dtype']!r} has no size")
        check_array_size(shape, chunks=chunks, where=f"{node}: 'shape'")
        if math.prod(chunks) * max(dtype.itemsize, 1) > INT64_MAX:
            raise MetadataValidationError(
                f"{node}: 'chunks' {list(chunks)} of dtype {dtype} hold more than 2**63-1 bytes"
            )
        order = doc["order"]
        if order not in ("C", "F"):
            raise MetadataValidationError(f"{node}: order must be 'C' or 'F', got {order!r}")
        sep = doc.get("dimension_separator", ".")
        if sep not in (".", "/"):
            raise MetadataValidationError(
                f"{node}: dimension_separator must be '.' or '/', got {sep!r}"
            )
        compressor = doc["compressor"]
        if compressor is not None and not isinstance(compressor, dict):
            raise MetadataValidationError(
                f"{node}: compressor must be an object or null, got {compressor!r}"
            )
        filters = doc.get("filters")
        if filters is not None:
            if not isinstance(filters, list) or not all(isinstance(f, dict) for f in filters):
                raise MetadataValidationError(
                    f"{node}: filters must be a list of objects or null, got {filters!r}"
                )
            filters = tuple(filters)
        if dtype.kind == "O" and not filters:
            raise MetadataValidationError(
                f"{node}: object dtype needs an object codec in 'filters' (e.g. vlen-utf8)"
            )
        object_codec = filters[0].get("id") if filters and dtype.kind == "O" else None
        fill = decode_v2_fill_value(doc["fill_value"], dtype, where=f"{node}: fill_value",
                                    object_codec=object_codec)
        try:
            return cls(
                shape=shape, chunks=chunks, dtype=dtype, compressor=compressor, filters=filters,
                fill_value=fill, order=order, dimension_separator=sep,
                attributes=dict(attributes or {}), fill_value_json=doc["fill_value"],
                write_dimension_separator="dimension_separator" in doc, extra=extra,
            )
        except MetadataError as e:  # (the object's own checks)
            add_context(e, node)
            raise

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "zarr_format": 2,
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "dtype": v2_dtype_to_json(self.dtype),
            "compressor": self.compressor,
            "fill_value": self.fill_value_json,
            "order": self.order,
            "filters": list(self.filters) if self.filters is not None else None,
        }
        if self.write_dimension_separator:
            doc["dimension_separator"] = self.dimension_separator
        doc.update(self.extra)
        return doc

    def store_documents(self) -> dict[str, bytes]:
        return {
            ".zarray": json.dumps(self.to_dict(), indent=config.get("json_indent"), allow_nan=True).encode(),
            ".zattrs": json.dumps(self.attributes, indent=config.get("json_indent"), allow_nan=True).encode(),
        }

    def to_json(self) -> bytes:
        """One document (for pickling): the array document with its attributes."""
        return json.dumps({"zarray": self.to_dict(), "zattrs": self.attributes},
                          allow_nan=True).encode()

    @classmethod
    def from_json(cls, raw: bytes, *, path: str) -> ArrayMetadataV2:
        doc = json.loads(raw)
        return cls.from_dict(doc["zarray"], doc["zattrs"], path=path)

    def update_attributes(self, attributes: dict[str, Any]) -> ArrayMetadataV2:
        return replace(self, attributes=attributes)

    def update_shape(self, shape: tuple[int, ...]) -> ArrayMetadataV2:
        return replace(self, shape=tuple(shape))


@dataclass(frozen=True)
class GroupMetadataV2:
    """Zarr v2 group metadata (``.zgroup`` + ``.zattrs``)."""

    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    zarr_format: int = 2
    node_type: str = "group"

    @classmethod
    def from_documents(cls, zgroup: Any, zattrs: Any, *, path: str, key: str
                       ) -> GroupMetadataV2:
        doc = _load(zgroup, key)
        node = f"group {path or '/'!r} (v2)"
        if not isinstance(doc, dict) or doc.get("zarr_format") != 2:
            raise MetadataValidationError(
                f"{node}: .zgroup must be an object with zarr_format 2, got {doc!r}"
            )
        attrs = parse_attributes_doc(zattrs, key.rsplit(".zgroup", 1)[0] + ".zattrs")
        extra = {k: v for k, v in doc.items() if k != "zarr_format"}
        return cls(attributes=attrs, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        return {"zarr_format": 2, **self.extra}

    def store_documents(self) -> dict[str, bytes]:
        return {
            ".zgroup": json.dumps(self.to_dict(), indent=config.get("json_indent")).encode(),
            ".zattrs": json.dumps(self.attributes, indent=config.get("json_indent"), allow_nan=True).encode(),
        }

    def to_json(self) -> bytes:
        return json.dumps({"zgroup": self.to_dict(), "zattrs": self.attributes},
                          allow_nan=True).encode()


