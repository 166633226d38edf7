"""zarr-python's data-type API (``zarr.dtype``): :class:`ZDType` classes, the
:data:`data_type_registry` and :func:`parse_dtype`, over zarrfast's :class:`DataType`.

A ``ZDType`` instance is one data type with its parameters (``Int32(endianness='big')``,
``DateTime64(unit='s', scale_factor=10)``); it converts to and from a NumPy dtype
(:meth:`~ZDType.to_native_dtype`, :meth:`~ZDType.from_native_dtype`), to and from its JSON in
Zarr v2 or v3 metadata (:meth:`~ZDType.to_json`, :meth:`~ZDType.from_json`), and converts
scalars (fill values)::

    >>> parse_dtype(">i4", zarr_format=3)
    Int32(endianness='big')
    >>> Int32().to_json(zarr_format=2)
    {'name': '<i4', 'object_codec_id': None}
    >>> Float32().to_json_scalar(float("nan"), zarr_format=3)
    'NaN'

The JSON is what zarr-python 3.1 writes.  The built-in classes are views of zarrfast's
one data-type model, :class:`~zarrfast.metadata.data_type.DataType` (fill values), and
:mod:`~zarrfast.metadata.v2` (v2 fill values); :data:`data_type_registry` is defined here
with them, and filled here.

Registering a class of one's own (``data_type_registry.register(name, cls)``, as
zarr-python's ``examples/custom_dtype``) makes arrays of it: a data type name or JSON that
zarrfast does not know, or a ``ZDType`` instance, passed as ``dtype``/read from metadata,
is looked up here and stored through the class's own JSON and scalar methods.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from zarrfast.errors import (  # DataTypeValidationError: zarr-python 3.4's, in zarrfast.errors
    DataTypeValidationError,
    UnstableSpecificationWarning,
    UnsupportedDataTypeError,
    ZarrfastError,
)
from zarrfast.metadata import data_type as _dt
from zarrfast.metadata.v2 import decode_v2_fill_value, encode_v2_fill_value

__all__ = [
    "JSON", "ZarrFormat", "DTypeJSON", "DTypeConfig_V2", "DataTypeValidationError",
    "ZDType", "DataTypeRegistry", "data_type_registry", "parse_dtype", "parse_data_type",
    "check_dtype_spec_v2", "Bool", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16",
    "UInt32", "UInt64", "Float16", "Float32", "Float64", "Complex64", "Complex128",
    "FixedLengthUTF32", "VariableLengthUTF8", "VariableLengthBytes", "NullTerminatedBytes",
    "RawBytes", "Struct", "Structured", "DateTime64", "TimeDelta64", "ANY_DTYPE",
]

JSON = Any
ZarrFormat = Literal[2, 3]
DTypeJSON = Any
DTypeConfig_V2 = dict  # {"name": ..., "object_codec_id": ...}; subscriptable as zarr-python's

TBaseDType = TypeVar("TBaseDType")
TBaseScalar = TypeVar("TBaseScalar")


def check_dtype_spec_v2(data: Any) -> bool:
    """Whether ``data`` is the v2 form ``{"name": ..., "object_codec_id": ...}``."""
    return (isinstance(data, Mapping) and set(data) == {"name", "object_codec_id"}
            and isinstance(data["name"], (str, list))
            and (data["object_codec_id"] is None or isinstance(data["object_codec_id"], str)))


def _check_format(zarr_format: Any) -> int:
    if zarr_format not in (2, 3):
        raise ZarrfastError(f"zarr_format must be 2 or 3, got {zarr_format!r}")
    return zarr_format


class ZDType(Generic[TBaseDType, TBaseScalar]):
    """One Zarr data type (zarr-python's interface).  A subclass sets ``dtype_cls`` (the
    NumPy dtype class) and ``_zarr_v3_name`` and implements the methods below."""

    dtype_cls: ClassVar[type]
    _zarr_v3_name: ClassVar[str]

    def _fields(self) -> list[tuple[str, Any]]:
        """What tells one instance from another: a dataclass's fields, else the public
        attributes (zarr-python's data types are frozen dataclasses: a subclass that adds
        nothing prints as ``Int2()`` and equals every other ``Int2()``)."""
        if dataclasses.is_dataclass(self):
            return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self) if f.repr]
        return [(k, v) for k, v in getattr(self, "__dict__", {}).items() if not k.startswith("_")]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._fields())})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), tuple(self._fields())))

    @classmethod
    def _check_native_dtype(cls, dtype: Any) -> bool:
        return type(dtype) is cls.dtype_cls

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        raise NotImplementedError(f"{cls.__name__}.from_native_dtype")

    def to_native_dtype(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.to_native_dtype")

    @classmethod
    def from_json(cls, data: Any, *, zarr_format: ZarrFormat) -> ZDType:
        """The data type of ``data``, its JSON in Zarr ``zarr_format`` metadata."""
        if _check_format(zarr_format) == 2:
            return cls._from_json_v2(data)
        return cls._from_json_v3(data)

    @classmethod
    def _from_json_v2(cls, data: Any) -> ZDType:
        raise NotImplementedError(f"{cls.__name__}._from_json_v2")

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        raise NotImplementedError(f"{cls.__name__}._from_json_v3")

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.to_json")

    def _check_scalar(self, data: Any) -> bool:
        raise NotImplementedError

    def cast_scalar(self, data: Any) -> Any:
        raise NotImplementedError

    def default_scalar(self) -> Any:
        raise NotImplementedError

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        raise NotImplementedError

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        raise NotImplementedError


# -- the built-in data types ---------------------------------------------------------------

_ENDIAN = {"<": "little", ">": "big", "=": sys.byteorder, "|": None}
_ORDER_CHAR = {"little": "<", "big": ">", None: "|"}


def _endianness(dtype: np.dtype) -> str | None:
    return _ENDIAN[dtype.byteorder]


def _check_endianness(owner: Any, value: Any) -> None:
    if value not in ("little", "big"):
        raise DataTypeValidationError(
            f"{type(owner).__name__}: endianness must be 'little' or 'big', got {value!r}")


def _unstable_v3(owner: Any) -> None:
    """zarr-python 3.4's warning when a data type without a Zarr v3 specification in
    zarr-extensions (``null_terminated_bytes``, ``raw_bytes``, ``variable_length_bytes``,
    the legacy ``structured``) is written as Zarr v3 JSON."""
    warnings.warn(UnstableSpecificationWarning(
        f"The data type ({owner!r}) does not have a Zarr V3 specification: arrays saved with "
        f"it may be read differently by a later version, or not at all by other Zarr "
        f"libraries (see https://github.com/zarr-developers/zarr-extensions/tree/main/"
        f"data-types)"), stacklevel=3)


def _check_length(owner: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataTypeValidationError(
            f"{type(owner).__name__}: length must be an integer >= 1, got {value!r}")
    if value < 1:  # (zarr-python 3.4's words)
        raise DataTypeValidationError(f"{type(owner).__name__}: length must be >= 1, got "
                                      f"{value}.")


def _v2_spec(data: Any, cls: type) -> tuple[Any, Any]:
    if not check_dtype_spec_v2(data):
        raise DataTypeValidationError(
            f"invalid Zarr v2 JSON for {cls.__name__}: {data!r}; expected "
            f"{{'name': <numpy type string>, 'object_codec_id': <codec id or None>}}")
    return data["name"], data["object_codec_id"]


class _Native(ZDType):
    """A built-in data type: scalars through zarrfast's :class:`DataType`."""

    _zarrfast_builtin: ClassVar[bool] = True

    def _data_type(self) -> _dt.DataType:
        return _dt.builtin_from_numpy(self.to_native_dtype(), where=repr(self))

    @property
    def item_size(self) -> int:
        """The size of one element in bytes (zarr-python's ``HasItemSize``; the
        variable-length types have none)."""
        return int(self.to_native_dtype().itemsize)

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return {"name": self.to_native_dtype().str, "object_codec_id": None}
        return self._v3_json()

    def _v3_json(self) -> Any:
        return self._zarr_v3_name

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        if data == cls._zarr_v3_name:
            return cls()
        raise DataTypeValidationError(
            f"invalid Zarr v3 JSON for {cls.__name__}: {data!r}; expected "
            f"{cls._zarr_v3_name!r}")

    @classmethod
    def _from_json_v2(cls, data: Any) -> ZDType:
        name, codec = _v2_spec(data, cls)
        try:
            native = np.dtype(name) if isinstance(name, str) and codec is None else None
        except TypeError:
            native = None
        if native is not None and cls._v2_spelled(name, native) and cls._check_native_dtype(
                native):
            return cls.from_native_dtype(native)
        raise DataTypeValidationError(
            f"invalid Zarr v2 JSON for {cls.__name__}: {data!r}")

    @classmethod
    def _v2_spelled(cls, name: str, native: np.dtype) -> bool:
        """Whether ``name`` spells ``native`` as Zarr v2 JSON may: only NumPy's own
        spelling (``'<i2'``), as zarr-python 3.4."""
        return native.str == name

    # scalars
    def _check_scalar(self, data: Any) -> bool:
        try:
            self.cast_scalar(data)
        except (TypeError, ValueError, OverflowError):
            return False
        return True

    def cast_scalar(self, data: Any) -> Any:
        try:
            value = self._data_type().coerce_fill_value(data, where=repr(self))
        except ZarrfastError as e:
            raise TypeError(f"cannot convert {data!r} to a scalar of {self!r}: {e}") from None
        if isinstance(value, np.generic) or not isinstance(value, (str, bytes)):
            return np.asarray(value, dtype=self.to_native_dtype())[()]
        return value

    def default_scalar(self) -> Any:
        return self._data_type().default_fill_value()

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        value = self.cast_scalar(data)
        if _check_format(zarr_format) == 2:
            return encode_v2_fill_value(value, self.to_native_dtype())
        return self._data_type().fill_value_to_json(value)

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            value = decode_v2_fill_value(data, self.to_native_dtype(), where=repr(self))
            return self.default_scalar() if value is None else self.cast_scalar(value)
        return self._data_type().parse_fill_value(data, where=repr(self))


class _Fixed(_Native):
    """A data type without parameters (one byte, or bool)."""

    _char: ClassVar[str]

    def __init__(self) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype):
            return cls()
        raise DataTypeValidationError(
            f"invalid data type {dtype!r} for {cls.__name__}: expected {np.dtype(cls._char)}")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(self._char)


@dataclass(frozen=True, kw_only=True)
class _Endian(_Native):
    """A data type in either byte order."""

    endianness: Literal["little", "big"] = "little"
    _char: ClassVar[str]

    def __post_init__(self) -> None:
        _check_endianness(self, self.endianness)

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype):
            return cls(endianness=_endianness(dtype))
        raise DataTypeValidationError(
            f"invalid data type {dtype!r} for {cls.__name__}: expected {np.dtype(cls._char)} "
            f"in either byte order")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(self._char).newbyteorder(_ORDER_CHAR[self.endianness])


def _fixed(name: str, char: str, v3: str) -> type:
    return type(name, (_Fixed,), {"_char": char, "_zarr_v3_name": v3,
                                   "dtype_cls": type(np.dtype(char)), "__module__": __name__,
                                   "__qualname__": name,
                                   "__doc__": f"``{v3}``: NumPy ``{np.dtype(char)}``."})


def _endian(name: str, char: str, v3: str) -> type:
    cls = type(name, (_Endian,), {"_char": char, "_zarr_v3_name": v3,
                                  "dtype_cls": type(np.dtype(char)), "__module__": __name__,
                                  "__qualname__": name, "__annotations__": {},
                                  "__doc__": f"``{v3}``: NumPy ``{np.dtype(char)}`` in "
                                             f"either byte order."})
    return dataclass(frozen=True, kw_only=True)(cls)


Bool = _fixed("Bool", "?", "bool")
Int8 = _fixed("Int8", "i1", "int8")
UInt8 = _fixed("UInt8", "u1", "uint8")
Int16 = _endian("Int16", "i2", "int16")
Int32 = _endian("Int32", "i4", "int32")
Int64 = _endian("Int64", "i8", "int64")
UInt16 = _endian("UInt16", "u2", "uint16")
UInt32 = _endian("UInt32", "u4", "uint32")
UInt64 = _endian("UInt64", "u8", "uint64")
Float16 = _endian("Float16", "f2", "float16")
Float32 = _endian("Float32", "f4", "float32")
Float64 = _endian("Float64", "f8", "float64")
Complex64 = _endian("Complex64", "c8", "complex64")
Complex128 = _endian("Complex128", "c16", "complex128")


def _length_v3(cls: type, data: Any) -> int:
    if (isinstance(data, Mapping) and data.get("name") == cls._zarr_v3_name
            and set(data) == {"name", "configuration"}
            and isinstance(data["configuration"], Mapping)
            and set(data["configuration"]) == {"length_bytes"}
            and isinstance(data["configuration"]["length_bytes"], int)
            and data["configuration"]["length_bytes"] > 0):
        return data["configuration"]["length_bytes"]
    raise DataTypeValidationError(
        f"invalid Zarr v3 JSON for {cls.__name__}: {data!r}; expected {{'name': "
        f"{cls._zarr_v3_name!r}, 'configuration': {{'length_bytes': <int>}}}}")


@dataclass(frozen=True, kw_only=True)
class FixedLengthUTF32(_Native):
    """``fixed_length_utf32``: NumPy ``U<length>`` (``length`` characters, 4 bytes each)."""

    length: int
    endianness: Literal["little", "big"] = "little"
    dtype_cls = np.dtypes.StrDType
    _zarr_v3_name = "fixed_length_utf32"

    def __post_init__(self) -> None:
        _check_length(self, self.length)
        _check_endianness(self, self.endianness)

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype) and dtype.itemsize:
            return cls(length=dtype.itemsize // 4, endianness=_endianness(dtype))
        raise DataTypeValidationError(f"invalid data type {dtype!r} for {cls.__name__}: "
                                      f"expected a NumPy U<n> dtype")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(f"{_ORDER_CHAR[self.endianness]}U{self.length}")

    def _v3_json(self) -> Any:
        return {"name": self._zarr_v3_name, "configuration": {"length_bytes": 4 * self.length}}

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        n = _length_v3(cls, data)
        if n % 4:
            raise DataTypeValidationError(f"{cls.__name__}: length_bytes {n} is not a "
                                          f"multiple of 4")
        return cls(length=n // 4)


@dataclass(frozen=True, kw_only=True)
class NullTerminatedBytes(_Native):
    """``null_terminated_bytes``: NumPy ``S<length>``."""

    length: int
    dtype_cls = np.dtypes.BytesDType
    _zarr_v3_name = "null_terminated_bytes"

    def __post_init__(self) -> None:
        _check_length(self, self.length)

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype) and dtype.itemsize:
            return cls(length=dtype.itemsize)
        raise DataTypeValidationError(f"invalid data type {dtype!r} for {cls.__name__}: "
                                      f"expected a NumPy S<n> dtype")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(f"S{self.length}")

    def _v3_json(self) -> Any:
        _unstable_v3(self)
        return {"name": self._zarr_v3_name, "configuration": {"length_bytes": self.length}}

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        return cls(length=_length_v3(cls, data))


def _b64_scalar(owner: Any, data: Any, zarr_format: int) -> Any:
    _check_format(zarr_format)
    if not isinstance(data, str):
        raise TypeError(f"{owner!r}: a fill value in JSON is a base64 string, got {data!r}")
    try:
        raw = base64.standard_b64decode(data.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError):
        raise TypeError(f"{owner!r}: {data!r} is not base64") from None
    return owner.cast_scalar(raw)


@dataclass(frozen=True, kw_only=True)
class RawBytes(_Native):
    """``raw_bytes``: NumPy ``V<length>`` (opaque bytes; fill values base64)."""

    length: int
    dtype_cls = np.dtypes.VoidDType
    _zarr_v3_name = "raw_bytes"

    def __post_init__(self) -> None:
        _check_length(self, self.length)

    @classmethod
    def _check_native_dtype(cls, dtype: Any) -> bool:
        return type(dtype) is cls.dtype_cls and dtype.fields is None and dtype.subdtype is None

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype) and dtype.itemsize:
            return cls(length=dtype.itemsize)
        raise DataTypeValidationError(f"invalid data type {dtype!r} for {cls.__name__}: "
                                      f"expected a NumPy V<n> dtype without fields")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(f"V{self.length}")

    def _v3_json(self) -> Any:
        _unstable_v3(self)
        return {"name": self._zarr_v3_name, "configuration": {"length_bytes": self.length}}

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        return cls(length=_length_v3(cls, data))

    def cast_scalar(self, data: Any) -> Any:
        if isinstance(data, np.void):
            data = data.tobytes()
        if not isinstance(data, (bytes, bytearray)) or len(data) != self.length:
            raise TypeError(f"{self!r}: a scalar is {self.length} bytes, got {data!r}")
        return np.frombuffer(bytes(data), dtype=self.to_native_dtype())[0]

    def default_scalar(self) -> Any:
        return self.cast_scalar(bytes(self.length))

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        _check_format(zarr_format)
        return base64.standard_b64encode(self.cast_scalar(data).tobytes()).decode("ascii")

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        return _b64_scalar(self, data, zarr_format)


class _VariableLength(_Fixed):
    _object_codec_id: ClassVar[str]

    @property
    def item_size(self) -> int:
        raise AttributeError(f"{type(self).__name__} has no item_size: its elements vary in "
                             f"size")

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype):
            return cls()
        raise DataTypeValidationError(
            f"invalid data type {dtype!r} for {cls.__name__}: expected {cls.dtype_cls.__name__}")

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return {"name": "|O", "object_codec_id": self._object_codec_id}
        return self._zarr_v3_name

    @classmethod
    def _from_json_v2(cls, data: Any) -> ZDType:
        name, codec = _v2_spec(data, cls)
        if name == "|O" and codec == cls._object_codec_id:
            return cls()
        raise DataTypeValidationError(
            f"invalid Zarr v2 JSON for {cls.__name__}: {data!r}; expected {{'name': '|O', "
            f"'object_codec_id': {cls._object_codec_id!r}}}")


class VariableLengthUTF8(_VariableLength):
    """``string``: variable-length UTF-8 (NumPy ``StringDType``; ``vlen-utf8`` in v2)."""

    dtype_cls = type(_dt._string_dtype())
    _zarr_v3_name = "string"
    _object_codec_id = "vlen-utf8"

    @classmethod
    def _check_native_dtype(cls, dtype: Any) -> bool:
        return type(dtype) is cls.dtype_cls and dtype.kind == "T"

    def to_native_dtype(self) -> np.dtype:
        return _dt._string_dtype()

    def _data_type(self) -> _dt.DataType:
        return _dt.parse_builtin(_dt.VLEN_UTF8)

    def cast_scalar(self, data: Any) -> Any:
        if not isinstance(data, str):
            raise TypeError(f"{self!r}: a scalar is a str, got {data!r}")
        return data

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        _check_format(zarr_format)
        return self.cast_scalar(data)

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        _check_format(zarr_format)
        return self.cast_scalar(data)


class VariableLengthBytes(_VariableLength):
    """``variable_length_bytes``: variable-length bytes (NumPy ``object``; ``vlen-bytes``)."""

    dtype_cls = np.dtypes.ObjectDType
    _zarr_v3_name = "variable_length_bytes"
    _object_codec_id = "vlen-bytes"

    def to_native_dtype(self) -> np.dtype:
        return np.dtype(object)

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 3:
            _unstable_v3(self)
        return super().to_json(zarr_format)

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        if data in (cls._zarr_v3_name, "bytes"):  # "bytes": the registry's name, read too
            return cls()
        raise DataTypeValidationError(
            f"invalid Zarr v3 JSON for {cls.__name__}: {data!r}; expected "
            f"{cls._zarr_v3_name!r}")

    def _data_type(self) -> _dt.DataType:
        return _dt.parse_builtin(_dt.VLEN_BYTES)

    def cast_scalar(self, data: Any) -> Any:
        if isinstance(data, str):
            data = data.encode()
        if not isinstance(data, (bytes, bytearray, np.bytes_)):
            raise TypeError(f"{self!r}: a scalar is bytes, got {data!r}")
        return bytes(data)

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        _check_format(zarr_format)
        return base64.standard_b64encode(self.cast_scalar(data)).decode("ascii")

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        return _b64_scalar(self, data, zarr_format)


_TIME_UNITS = _dt.TIME_UNITS


@dataclass(frozen=True, kw_only=True)
class _Time(_Native):
    endianness: Literal["little", "big"] = "little"
    scale_factor: int = 1
    unit: str = "generic"
    _char: ClassVar[str]

    def __post_init__(self) -> None:
        _check_endianness(self, self.endianness)
        if self.unit == "\u03bcs":  # (NumPy's spelling, "us", as zarr-python 3.4 stores it)
            object.__setattr__(self, "unit", "us")
        if self.unit not in _TIME_UNITS:
            raise DataTypeValidationError(f"{type(self).__name__}: unit must be one of "
                                          f"{_TIME_UNITS}, got {self.unit!r}.")
        scale = self.scale_factor
        if isinstance(scale, bool) or not isinstance(scale, int):
            raise DataTypeValidationError(f"{type(self).__name__}: scale_factor must be an "
                                          f"integer in [1, 2**31), got {scale!r}.")
        if not 0 < scale < 2**31:  # (zarr-python 3.4's words)
            raise DataTypeValidationError(
                f"{type(self).__name__}: scale_factor must be "
                + (f"> 0, got {scale}." if scale < 1 else f"< {2**31}, got {scale}."))

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype):
            unit, count = np.datetime_data(dtype)
            return cls(unit=unit, scale_factor=count, endianness=_endianness(dtype))
        raise DataTypeValidationError(f"invalid data type {dtype!r} for {cls.__name__}: "
                                      f"expected a NumPy {cls._char} dtype")

    def to_native_dtype(self) -> np.dtype:
        # (the generic unit keeps its scale: NumPy prints '<M8[2generic]' as '<M8' but
        # datetime_data tells them apart, and so does ==)
        unit = "" if self.unit == "generic" and self.scale_factor == 1 else \
            f"[{self.scale_factor}{self.unit}]"
        return np.dtype(f"{_ORDER_CHAR[self.endianness]}{self._char}{unit}")

    def _v3_json(self) -> Any:
        return {"name": self._zarr_v3_name,
                "configuration": {"unit": self.unit, "scale_factor": self.scale_factor}}

    def _v2_name(self) -> str:
        """The v2 type string: NumPy's, but with a generic unit's scale written out
        (``'<M8[2generic]'``), which NumPy's ``str`` drops (as zarr-python 3.4 writes it)."""
        if self.unit == "generic" and self.scale_factor != 1:
            return f"{_ORDER_CHAR[self.endianness]}{self._char}[{self.scale_factor}generic]"
        return str(self.to_native_dtype().str)

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return {"name": self._v2_name(), "object_codec_id": None}
        return self._v3_json()

    @classmethod
    def _v2_spelled(cls, name: str, native: np.dtype) -> bool:
        # (as zarr-python 3.4: a byte order, then the unit in brackets if any:
        # '<M8', '>m8[10s]', '<M8[2generic]'; not 'M8[s]' nor 'datetime64')
        return name[:3] in (f"<{cls._char}", f">{cls._char}") and (
            len(name) == 3 or name[3] == "[" and name.endswith("]"))

    def default_scalar(self) -> Any:
        return self.to_native_dtype().type("NaT")  # as zarr-python: NaT without a unit

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        conf = data.get("configuration") if isinstance(data, Mapping) else None
        if (isinstance(data, Mapping) and data.get("name") == cls._zarr_v3_name
                and isinstance(conf, Mapping) and set(conf) == {"unit", "scale_factor"}):
            return cls(unit=conf["unit"], scale_factor=conf["scale_factor"])
        raise DataTypeValidationError(
            f"invalid Zarr v3 JSON for {cls.__name__}: {data!r}; expected {{'name': "
            f"{cls._zarr_v3_name!r}, 'configuration': {{'unit': ..., 'scale_factor': ...}}}}")


@dataclass(frozen=True, kw_only=True)
class DateTime64(_Time):
    """``numpy.datetime64``: NumPy ``M8[<scale_factor><unit>]``."""

    dtype_cls = np.dtypes.DateTime64DType
    _zarr_v3_name = "numpy.datetime64"
    _char = "M8"


@dataclass(frozen=True, kw_only=True)
class TimeDelta64(_Time):
    """``numpy.timedelta64``: NumPy ``m8[<scale_factor><unit>]``."""

    dtype_cls = np.dtypes.TimeDelta64DType
    _zarr_v3_name = "numpy.timedelta64"
    _char = "m8"


def _unfaithful_field(dtype: np.dtype) -> str | None:
    """What of a structured dtype's fields its ``(name, ZDType)`` pairs would lose: a title
    or a sub-array shape, in a nested field too (zarr-python 3.4 refuses them likewise)."""
    for name in dtype.names:
        sub, _offset, *title = dtype.fields[name]
        if title:
            return f"field {name!r} has a title ({title[0]!r})"
        if sub.subdtype is not None:
            return f"field {name!r} is a subarray with shape {sub.shape}"
        if sub.names is not None:
            inner = _unfaithful_field(sub)
            if inner is not None:
                return f"within field {name!r}: {inner}"
    return None


@dataclass(frozen=True, kw_only=True)
class Structured(_Native):
    """``structured``: a NumPy structured dtype, ``fields`` being ``(name, ZDType)`` pairs
    (zarr-python's form; fill values base64 of an item's bytes)."""

    fields: tuple[tuple[str, ZDType], ...]
    dtype_cls = np.dtypes.VoidDType
    _zarr_v3_name = "structured"

    def __post_init__(self) -> None:
        fields = tuple(tuple(f) for f in self.fields)
        if not fields:
            raise DataTypeValidationError(
                f"{type(self).__name__}: must have at least one field. Got {self.fields!r}")
        if not all(len(f) == 2 and isinstance(f[0], str)
                   and isinstance(f[1], ZDType) for f in fields):
            raise DataTypeValidationError(
                f"{type(self).__name__}: fields must be (name, ZDType) pairs, got "
                f"{self.fields!r}")
        object.__setattr__(self, "fields", fields)

    @classmethod
    def _check_native_dtype(cls, dtype: Any) -> bool:
        return type(dtype) is cls.dtype_cls and dtype.fields is not None

    @classmethod
    def from_native_dtype(cls, dtype: Any) -> ZDType:
        if cls._check_native_dtype(dtype):
            problem = _unfaithful_field(dtype)
            if problem is not None:  # (not a DataTypeValidationError: the registry says it)
                raise UnsupportedDataTypeError(
                    f"cannot store the structured data type {dtype}: {problem}; its fields "
                    f"are stored as (name, data type) pairs only")
            return cls(fields=tuple((name, data_type_registry.match_dtype(dtype.fields[name][0]))
                                    for name in dtype.names))
        raise DataTypeValidationError(f"invalid data type {dtype!r} for {cls.__name__}: "
                                      f"expected a NumPy structured dtype")

    def to_native_dtype(self) -> np.dtype:
        return np.dtype([(name, f.to_native_dtype()) for name, f in self.fields])

    def has_multi_byte_fields(self) -> bool:
        """Whether a field is more than one byte wide (its byte order then matters)."""
        return any(f.item_size > 1 for _name, f in self.fields)

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return {"name": [[n, f.to_json(2)["name"]] for n, f in self.fields],
                    "object_codec_id": None}
        _unstable_v3(self)
        return {"name": self._zarr_v3_name,
                "configuration": {"fields": [[n, f.to_json(3)] for n, f in self.fields]}}

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        conf = data.get("configuration") if isinstance(data, Mapping) else None
        if (isinstance(data, Mapping) and data.get("name") == cls._zarr_v3_name
                and isinstance(conf, Mapping) and isinstance(conf.get("fields"), list)):
            return cls(fields=tuple(
                (f[0], data_type_registry.match_json(f[1], zarr_format=3))
                for f in conf["fields"] if isinstance(f, list) and len(f) == 2))
        raise DataTypeValidationError(f"invalid Zarr v3 JSON for {cls.__name__}: {data!r}")

    @classmethod
    def _from_json_v2(cls, data: Any) -> ZDType:
        name, codec = _v2_spec(data, cls)
        if isinstance(name, list) and codec is None:
            try:
                return cls(fields=tuple(
                    (f[0], data_type_registry.match_json(
                        {"name": f[1], "object_codec_id": None}, zarr_format=2))
                    for f in name))
            except (UnsupportedDataTypeError, TypeError, IndexError) as e:
                raise DataTypeValidationError(
                    f"invalid Zarr v2 JSON for {cls.__name__}: {data!r} ({e})") from None
        raise DataTypeValidationError(f"invalid Zarr v2 JSON for {cls.__name__}: {data!r}")

    def cast_scalar(self, data: Any) -> Any:
        native = self.to_native_dtype()
        if isinstance(data, (bytes, bytearray)):
            if len(data) != native.itemsize:
                raise TypeError(f"{self!r}: a scalar is {native.itemsize} bytes, got {data!r}")
            return np.frombuffer(bytes(data), dtype=native)[0]
        try:
            return np.array(data if not isinstance(data, list) else tuple(data),
                            dtype=native)[()]
        except (TypeError, ValueError) as e:
            raise TypeError(f"cannot convert {data!r} to a scalar of {self!r}: {e}") from None

    def default_scalar(self) -> Any:
        return np.zeros((), dtype=self.to_native_dtype())[()]

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        scalar = self.cast_scalar(data)
        if _check_format(zarr_format) == 3:  # (v3 metadata has no byte order: little-endian)
            native = self.to_native_dtype()
            scalar = np.array(scalar, dtype=native).astype(native.newbyteorder("<"))[()]
        return base64.standard_b64encode(scalar.tobytes()).decode("ascii")

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2 or not isinstance(data, str):
            return _b64_scalar(self, data, zarr_format)
        # Zarr v3: the bytes are little-endian whatever byte order the fields have
        native = self.to_native_dtype()
        try:
            raw = base64.standard_b64decode(data.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError):
            raise TypeError(f"{self!r}: {data!r} is not base64") from None
        if len(raw) != native.itemsize:
            raise TypeError(f"{self!r}: a scalar is {native.itemsize} bytes, got {data!r}")
        little = np.frombuffer(raw, dtype=native.newbyteorder("<"))
        return little.astype(native)[0]


@dataclass(frozen=True, kw_only=True)
class Struct(Structured):
    """``struct``: zarr-python 3.4's canonical structured data type (zarr-extensions
    ``data-types/struct``): fields written as ``{"name": ..., "data_type": ...}`` objects,
    the legacy ``structured`` form (``[name, data_type]`` pairs) read too; Zarr v3 fill
    values are ``{field: value}`` objects (base64 of an item's bytes is read too)."""

    _zarr_v3_name = "struct"

    def to_json(self, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return super().to_json(2)
        return {"name": self._zarr_v3_name, "configuration": {"fields": [
            {"name": n, "data_type": f.to_json(3)} for n, f in self.fields]}}

    @classmethod
    def _from_json_v3(cls, data: Any) -> ZDType:
        conf = data.get("configuration") if isinstance(data, Mapping) else None
        if not (isinstance(data, Mapping) and set(data) == {"name", "configuration"}
                and data["name"] in ("struct", "structured") and isinstance(conf, Mapping)
                and set(conf) == {"fields"} and isinstance(conf["fields"], list)):
            raise DataTypeValidationError(
                f"Invalid JSON representation of {cls.__name__}. Got {data!r}, expected a "
                f"JSON object with the key {cls._zarr_v3_name!r}")
        fields = []
        for i, f in enumerate(conf["fields"]):
            if isinstance(f, Mapping) and set(f) == {"name", "data_type"}:
                name, spec = f["name"], f["data_type"]
            elif isinstance(f, (list, tuple)) and len(f) == 2:  # (the legacy form)
                name, spec = f
            else:
                raise DataTypeValidationError(
                    f"{cls.__name__}: fields[{i}] must be {{'name': ..., 'data_type': ...}} "
                    f"(or [name, data_type]), got {f!r}")
            try:
                fields.append((name, data_type_registry.match_json(spec, zarr_format=3)))
            except (TypeError, ValueError) as e:
                raise DataTypeValidationError(f"{cls.__name__}: fields[{i}] {name!r}: {e}"
                                              ) from None
        return cls(fields=tuple(fields))

    def to_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        if _check_format(zarr_format) == 2:
            return super().to_json_scalar(data, zarr_format=2)
        scalar = self.cast_scalar(data)
        return {n: f.to_json_scalar(scalar[n], zarr_format=3) for n, f in self.fields}

    def from_json_scalar(self, data: Any, *, zarr_format: ZarrFormat) -> Any:
        if isinstance(data, Mapping):
            values = tuple(f.from_json_scalar(data[n], zarr_format=zarr_format) if n in data
                           else f.default_scalar() for n, f in self.fields)
            return self.cast_scalar(values)
        if isinstance(data, str):
            return super().from_json_scalar(data, zarr_format=zarr_format)
        raise TypeError(f"Invalid type: {data!r}. Expected a dict or base64-encoded string.")


ANY_DTYPE = (Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, Float32,
             Float64, Complex64, Complex128, FixedLengthUTF32, VariableLengthUTF8, RawBytes,
             NullTerminatedBytes, VariableLengthBytes, Struct, DateTime64, TimeDelta64)


# -- the registry ----------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class DataTypeRegistry:
    """Zarr v3 data type name -> :class:`ZDType` class."""

    contents: dict[str, type[ZDType]] = field(default_factory=dict, init=False)

    def register(self, key: str, cls: type[ZDType]) -> None:
        """Register ``cls`` under ``key`` (its ``_zarr_v3_name``); registering again replaces."""
        if not isinstance(key, str) or not key:
            raise ZarrfastError(f"a data type is registered under a non-empty name, got {key!r}")
        if not (isinstance(cls, type) and issubclass(cls, ZDType)):
            raise ZarrfastError(f"data type {key!r}: {cls!r} is not a ZDType subclass")
        self.contents[key] = cls

    def unregister(self, key: str) -> None:
        if key not in self.contents:
            raise KeyError(f"Data type '{key}' not found in registry.")
        del self.contents[key]

    def get(self, key: str) -> type[ZDType]:
        return self.contents[key]

    def match_dtype(self, dtype: Any) -> ZDType:
        """The one registered data type of the NumPy dtype ``dtype``."""
        if isinstance(dtype, np.dtype) and dtype == np.dtype("O"):
            raise UnsupportedDataTypeError(
                "cannot tell the Zarr data type of a NumPy object dtype: it holds strings "
                "(VariableLengthUTF8) or bytes (VariableLengthBytes); give one of those")
        matched = []
        for cls in self.contents.values():
            with contextlib.suppress(DataTypeValidationError):
                matched.append(cls.from_native_dtype(dtype))
        if len(matched) == 1:
            return matched[0]
        if matched:
            raise UnsupportedDataTypeError(
                f"NumPy dtype {dtype!r} matches more than one registered data type: "
                f"{matched}; unregister one or give the data type itself")
        raise UnsupportedDataTypeError(f"No Zarr data type found that matches dtype {dtype!r}")

    def match_json(self, data: Any, *, zarr_format: ZarrFormat) -> ZDType:
        """The registered data type whose Zarr ``zarr_format`` JSON is ``data``."""
        _check_format(zarr_format)
        for cls in self.contents.values():
            with contextlib.suppress(DataTypeValidationError, TypeError, ValueError,
                                     NotImplementedError):
                return cls.from_json(data, zarr_format=zarr_format)
        raise UnsupportedDataTypeError(
            f"No Zarr data type found that matches {data!r} (zarr_format={zarr_format})")


data_type_registry = DataTypeRegistry()
for _cls in ANY_DTYPE:
    data_type_registry.register(_cls._zarr_v3_name, _cls)
del _cls

#: requests for variable-length UTF-8 strings (not NumPy's inference of a U<n> length)
VLEN_UTF8_ALIAS = ("str", str, "string")


def parse_dtype(dtype_spec: Any, *, zarr_format: ZarrFormat) -> ZDType:
    """``dtype_spec`` as a :class:`ZDType`: a ``ZDType`` is returned as is; then its JSON in
    Zarr ``zarr_format`` metadata; then ``str``/``"string"`` (variable-length UTF-8); then
    anything NumPy takes as a dtype."""
    _check_format(zarr_format)
    if isinstance(dtype_spec, ZDType):
        return dtype_spec
    if isinstance(dtype_spec, (Mapping, str, Sequence)):
        with contextlib.suppress(ValueError):
            return data_type_registry.match_json(dtype_spec, zarr_format=zarr_format)
    if isinstance(dtype_spec, str) or dtype_spec is str:
        if dtype_spec in VLEN_UTF8_ALIAS:
            return VariableLengthUTF8()
    try:
        native = np.dtype([tuple(d) for d in dtype_spec] if isinstance(dtype_spec, list)
                          else dtype_spec)
    except (TypeError, ValueError) as e:
        raise UnsupportedDataTypeError(f"{dtype_spec!r} is not a data type ({e})") from None
    return data_type_registry.match_dtype(native)


#: zarr-python's older name for :func:`parse_dtype`
parse_data_type = parse_dtype


# -- zarrfast's DataType for a registered data type zarrfast does not know itself ------------

@dataclass(frozen=True)
class ExtensionDataType(_dt.DataType):
    """A data type given by a registered :class:`ZDType` (its JSON and scalars are the
    ZDType's; its elements are its NumPy dtype's)."""

    zdtype: Any = field(default=None, compare=False, hash=False)

    @property
    def swap_unit(self) -> int:
        return self.itemsize if self.kind in "iufcmM" else 1

    @property
    def variable_length(self) -> bool:
        return self.dtype.hasobject

    def to_json(self) -> Any:
        return self.zdtype.to_json(zarr_format=3)

    def describe(self) -> str:
        return self.name

    def parse_fill_value(self, value: Any, *, where: str = "fill_value") -> np.generic:
        try:
            return self.zdtype.from_json_scalar(value, zarr_format=3)
        except (TypeError, ValueError) as e:
            raise _dt.FillValueError(f"{where}: {value!r} is not a fill value of data type "
                                     f"{self.name}: {e}") from None

    def default_fill_value(self) -> Any:
        return self.zdtype.default_scalar()

    def fill_value_to_json(self, value: np.generic) -> Any:
        return self.zdtype.to_json_scalar(value, zarr_format=3)

    def coerce_fill_value(self, value: Any, *, where: str = "fill_value") -> np.generic:
        if value is None:
            return self.default_fill_value()
        try:
            return self.zdtype.cast_scalar(value)
        except (TypeError, ValueError) as e:
            raise _dt.FillValueError(f"{where}: {value!r} is not a fill value of data type "
                                     f"{self.name}: {e}") from None


def data_type_of(z: ZDType, *, where: str = "dtype") -> _dt.DataType:
    """zarrfast's :class:`DataType` of the :class:`ZDType` ``z``."""
    if getattr(type(z), "_zarrfast_builtin", False):
        if isinstance(z, VariableLengthBytes):
            return _dt.parse_builtin(_dt.VLEN_BYTES, where=where)
        return _dt.builtin_from_numpy(z.to_native_dtype(), where=where)
    json = z.to_json(zarr_format=3)
    name = json if isinstance(json, str) else json.get("name") if isinstance(json, dict) else None
    if not isinstance(name, str):
        raise UnsupportedDataTypeError(f"{where}: data type {z!r} gives the JSON {json!r}, "
                                       f"which has no name")
    return ExtensionDataType(name, np.dtype(z.to_native_dtype()), zdtype=z)


def zdtype_of(dt: _dt.DataType) -> Any:
    """The :class:`ZDType` of zarrfast's :class:`DataType` ``dt`` (``Float32(endianness=
    'little')``), as zarr-python's array metadata holds it; ``dt`` itself for a data type
    that no registered class reads (zarrfast's extension types)."""
    z = getattr(dt, "zdtype", None)
    if z is not None:
        return z
    try:
        z = _zdtype_cache[dt]
    except KeyError:
        pass
    else:  # (None: no class reads it; dt itself, not the equal one cached first)
        return dt if z is None else z
    z = None
    # by its JSON; else by its NumPy dtype (zarrfast's "struct" is zarr-python's
    # "structured", the same data type under the name zarr-extensions registers)
    for match in (lambda: data_type_registry.match_json(dt.to_json(), zarr_format=3),
                  lambda: data_type_registry.match_dtype(dt.dtype)):
        try:
            z = match()
            break
        except (DataTypeValidationError, TypeError, ValueError, NotImplementedError,
                UnsupportedDataTypeError):
            continue
    if len(_zdtype_cache) < 1024:
        _zdtype_cache[dt] = z
    return dt if z is None else z


_zdtype_cache: dict[_dt.DataType, Any] = {}


def foreign_zdtype(value: Any) -> ZDType | None:
    """Another library's data type object (zarr-python's ``Int8()``, ``Structured(...)``) as
    the registered data type with the same Zarr v3 JSON, or ``None``."""
    if (isinstance(value, (ZDType, str, Mapping, type)) or not callable(getattr(value, "to_json", None))
            or not callable(getattr(value, "to_native_dtype", None))):
        return None
    try:
        return data_type_registry.match_json(value.to_json(zarr_format=3), zarr_format=3)
    except (DataTypeValidationError, TypeError, ValueError, NotImplementedError,
            UnsupportedDataTypeError):
        return None


def registered_data_type(value: Any, where: str) -> _dt.DataType | None:
    """The :class:`DataType` of what :mod:`.data_type` does not know: a ``ZDType`` instance
    (or another library's data type object), or the v3 JSON / name of a registered data
    type; ``None`` if it is none of those."""
    if isinstance(value, ZDType):
        return data_type_of(value, where=where)
    foreign = foreign_zdtype(value)
    if foreign is not None:
        return data_type_of(foreign, where=where)
    if isinstance(value, (str, Mapping)):
        for cls in data_type_registry.contents.values():
            if getattr(cls, "_zarrfast_builtin", False):
                continue
            with contextlib.suppress(DataTypeValidationError, TypeError, ValueError,
                                     NotImplementedError):
                return data_type_of(cls.from_json(value, zarr_format=3), where=where)
    return None


