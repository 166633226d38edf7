"""Zarr v3 core data types and their fill-value encodings.

Data types (zarr-specs ``docs/v3/data-types/index.rst``): ``bool``,
``int8``..``int64``, ``uint8``..``uint64``, ``float16``/``32``/``64``,
``complex64``/``128`` and raw bits ``r<N>`` (N a positive multiple of 8).

Fill values in JSON:

* ``bool``: ``true``/``false``
* integers: a JSON integer within range
* floats: a number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, or ``"0x…"``
  giving the bit pattern (e.g. ``"0x7fc00000"`` for a float32 NaN)
* complex: ``[re, im]``, each component encoded as a float
* ``r<N>``: a list of N/8 integers in ``[0, 255]``

String and bytes data types, as zarr-python 3 writes them (not yet in zarr-specs):

* ``"string"``: variable-length UTF-8 (NumPy ``StringDType`` in memory, as zarr-python
  reads it), encoded by the ``vlen-utf8`` codec; fill value a JSON string
* ``"variable_length_bytes"``: variable-length bytes (``object`` arrays of ``bytes``),
  encoded by ``vlen-bytes``; fill value base64
* ``{"name": "fixed_length_utf32", "configuration": {"length_bytes": N}}``: NumPy
  ``<U{N/4}``; the ``bytes`` codec's byte order applies to each 4-byte code unit; fill
  value a JSON string
* ``{"name": "null_terminated_bytes", "configuration": {"length_bytes": N}}``: NumPy
  ``S{N}``; fill value base64

Extension data types (zarr-developers/zarr-extensions ``data-types/``):

* ``{"name": "numpy.datetime64" | "numpy.timedelta64", "configuration": {"unit": "s",
  "scale_factor": 10}}``: NumPy ``M8[10s]`` / ``m8[10s]``; fill value an integer in the
  int64 range or ``"NaT"`` (written as the integer -2**63, as zarr-python does)
* ``{"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": ...}]}}``
  (and the legacy, read-only ``"structured"`` with ``[name, data_type]`` fields): a
  packed NumPy structured dtype; fill value an object of the fields' fill values (legacy:
  base64 of the packed little-endian bytes)
* ``"bytes"``: the registry's name for variable-length bytes (read; both fill forms,
  base64 or a list of byte values)
* the ML types of the ``ml_dtypes`` package (extra ``zarrfast[ml]``): ``bfloat16``, the
  ``float8_*``, ``float6_*`` and ``float4_*`` families, ``int2``, ``int4``, ``uint2``,
  ``uint4``; fill values as for the core floats and integers
* ``complex_float32`` / ``complex_float64``: NumPy ``complex64`` / ``complex128``

A :class:`DataType` knows the native NumPy dtype used in memory; the byte
order on disk is the ``bytes`` codec's business.

This module is zarrfast's one model of a data type, and knows the types above.  It asks no
one: :mod:`.zdtype` (zarr-python's ``ZDType`` classes, each a view of a :class:`DataType`,
and the ``data_type_registry`` that users add their own to) is built on it, and
:mod:`.dtype` asks both, in that order (:func:`~zarrfast.metadata.dtype.parse_data_type`,
:func:`~zarrfast.metadata.dtype.data_type_from_numpy`: what the rest of zarrfast calls).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarrfast.errors import (
    FillValueError,
    FillValueOverflowError,
    UnsupportedDataTypeError,
    ZarrUserWarning,
)

__all__ = ["DataType", "builtin_from_numpy", "fill_bytes", "is_fill_chunk", "parse_builtin",
           "same_value"]

_CORE = {
    "bool": "?",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "float16": "f2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
}
_RAW = re.compile(r"^r([1-9][0-9]*)$")
#: the variable-length types (elements are Python objects; chunks go through a vlen codec)
VLEN_UTF8 = "string"
VLEN_BYTES = "variable_length_bytes"
#: the fixed-length string types (``{"name": ..., "configuration": {"length_bytes": N}}``)
FIXED_UTF32 = "fixed_length_utf32"
FIXED_BYTES = "null_terminated_bytes"
#: opaque bytes as zarr-python writes NumPy ``V<n>`` (``{"name": "raw_bytes",
#: "configuration": {"length_bytes": n}}``, fill values base64); zarrfast writes it too for
#: ``V<n>`` (``r<bits>`` only when asked for by name)
RAW_BYTES = "raw_bytes"
_HAS_STRINGDTYPE = hasattr(np.dtypes, "StringDType")
#: the registry's name for variable-length bytes (zarr-python writes ``variable_length_bytes``)
BYTES = "bytes"
DATETIME = "numpy.datetime64"
TIMEDELTA = "numpy.timedelta64"
STRUCT = "struct"
#: the legacy name of ``struct``: read, never written
STRUCTURED = "structured"
TIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "\u03bcs", "ns", "ps", "fs",
               "as", "generic")
#: the ML data types, NumPy dtypes from the ml_dtypes package
ML_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
             "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
ML_INTS = ("int2", "int4", "uint2", "uint4")
_COMPLEX_ALIASES = {"complex_float32": "c8", "complex_float64": "c16"}
#: deepest nesting of struct fields accepted (metadata bombs)
MAX_STRUCT_DEPTH = 16


def _ml_dtype(name: str, where: str) -> np.dtype:
    try:
        import ml_dtypes
    except ImportError:
        raise UnsupportedDataTypeError(
            f"{where}: data type {name!r} needs the 'ml_dtypes' package, which is not "
            f"installed: pip install \"zarrfast[ml]\" (from a source checkout: "
            f"pip install \".[ml]\")") from None
    t = getattr(ml_dtypes, name, None)
    if t is None:
        raise UnsupportedDataTypeError(
            f"{where}: data type {name!r} is not in ml_dtypes {ml_dtypes.__version__}")
    return np.dtype(t)


def _is_ml(dt: np.dtype) -> bool:
    return type(dt.type).__module__.startswith("ml_dtypes") or (
        dt.type.__module__.startswith("ml_dtypes"))


def _string_dtype() -> np.dtype:
    """What zarr-python 3 reads a ``string`` array as: StringDType (NumPy >= 2), else object."""
    return np.dtype(np.dtypes.StringDType()) if _HAS_STRINGDTYPE else np.dtype(object)


_HEX = re.compile(r"^0x[0-9a-fA-F]+$")

@dataclass(frozen=True)
class DataType:
    """A Zarr v3 data type.

    Attributes
    ----------
    name
        The identifier as written in metadata (``"float32"``, ``"r16"``).
    dtype
        The NumPy dtype in native byte order (``V<n>`` for raw bits, ``U<n>`` / ``S<n>`` for
        the fixed-length strings, StringDType for ``string``, ``object`` for
        ``variable_length_bytes``).
    """

    name: str
    dtype: np.dtype

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def kind(self) -> str:
        return self.dtype.kind

    @property
    def swap_unit(self) -> int:
        """Size of the units whose byte order the ``bytes`` codec may swap (1 = never).
        A struct gives its largest field's: its fields are swapped one by one
        (:attr:`fieldwise`), never by the copy kernels."""
        if self.name in ML_FLOATS or self.name in ML_INTS:
            return self.itemsize  # bfloat16: 2; the others are one byte
        if self.kind in "iufmM":
            return self.itemsize
        if self.kind == "c":
            return self.itemsize // 2
        if self.kind == "U":
            return 4  # UCS4 code units
        if self.dtype.fields is not None:
            return max((_field_swap_unit(f[0]) for f in self.dtype.fields.values()),
                       default=1)
        return 1

    @property
    def fieldwise(self) -> bool:
        """Whether a byte swap must go field by field: a struct whose fields are not all
        swapped in units of one size at offsets that are multiples of it (``f4, i4`` can
        be swapped as 4-byte units throughout; ``f8, u2`` or ``f4, u1`` cannot)."""
        if self.dtype.fields is None or self.swap_unit == 1:
            return False
        unit = self.swap_unit
        return not all(u == unit and off % unit == 0
                       for u, off in _leaf_units(self.dtype, 0))

    @property
    def variable_length(self) -> bool:
        """Whether elements are Python objects (``string``, ``variable_length_bytes``)."""
        return self.name in (VLEN_UTF8, VLEN_BYTES, BYTES)

    def to_json(self) -> Any:
        if self.name in (FIXED_UTF32, FIXED_BYTES, RAW_BYTES):
            return {"name": self.name, "configuration": {"length_bytes": self.itemsize}}
        if self.name in (DATETIME, TIMEDELTA):
            unit, count = np.datetime_data(self.dtype)
            return {"name": self.name, "configuration": {"unit": unit, "scale_factor": count}}
        if self.name == STRUCT:
            return {"name": STRUCT, "configuration": {"fields": [
                {"name": n, "data_type": builtin_from_numpy(f[0]).to_json()}
                for n, f in self.dtype.fields.items()]}}
        if self.name == STRUCTURED:  # an existing legacy array keeps its form
            return {"name": STRUCTURED, "configuration": {"fields": [
                [n, builtin_from_numpy(f[0]).to_json()]
                for n, f in self.dtype.fields.items()]}}
        return self.name

    def describe(self) -> str:
        """A short readable name (``numpy.datetime64[10s]``, ``struct{x: float32}``)."""
        if self.name in (DATETIME, TIMEDELTA):
            unit, count = np.datetime_data(self.dtype)
            return f"{self.name}[{count if count != 1 else ''}{unit}]"
        if self.name in (STRUCT, STRUCTURED):
            return STRUCT + "{" + ", ".join(
                f"{n}: {builtin_from_numpy(f[0]).describe()}"
                for n, f in self.dtype.fields.items()) + "}"
        if self.name in (FIXED_UTF32, FIXED_BYTES, RAW_BYTES):
            return f"{self.name}[{self.itemsize}]"
        return self.name

    # -- fill values --------------------------------------------------------
    def parse_fill_value(self, value: Any, *, where: str = "fill_value") -> np.generic:
        """Decode a JSON fill value into a NumPy scalar of this type."""
        return _parse_fill(self, value, where)

    def default_fill_value(self) -> Any:
        if self.name == VLEN_UTF8:
            return ""
        if self.name in (VLEN_BYTES, BYTES):
            return b""
        if self.kind in "US":
            return self.dtype.type()
        if self.name in (DATETIME, TIMEDELTA):  # as zarr-python: NaT
            return np.array(_NAT, dtype=np.int64).view(self.dtype)[()]
        return np.zeros((), dtype=self.dtype)[()]

    def fill_value_to_json(self, value: np.generic) -> Any:
        """Encode a NumPy scalar of this type as JSON."""
        return _fill_to_json(self, value)

    def coerce_fill_value(self, value: Any, *, where: str = "fill_value") -> np.generic:
        """Accept a Python/NumPy value (as users pass it) or a JSON encoding."""
        if value is None:
            return self.default_fill_value()
        if self.name in (VLEN_UTF8, VLEN_BYTES, BYTES, FIXED_UTF32, FIXED_BYTES):
            return _coerce_string(self, value, where)
        if self.name in (DATETIME, TIMEDELTA):
            return _coerce_time(self, value, where)
        if self.dtype.fields is not None:
            return _coerce_struct(self, value, where)
        if isinstance(value, (bytes, np.void)) and self.kind == "V":
            b = bytes(value.tobytes() if isinstance(value, np.void) else value)
            if len(b) != self.itemsize:
                raise FillValueError(
                    f"{where}: {value!r} has {len(b)} bytes, data type {self.name} needs "
                    f"{self.itemsize}"
                )
            return np.frombuffer(b, dtype=self.dtype)[0]
        if isinstance(value, np.generic) or (
            isinstance(value, (int, float, complex, bool)) and not isinstance(value, str)
        ):
            return _coerce_python(self, value, where)
        return self.parse_fill_value(value, where=where)


def _leaf_units(dt: np.dtype, offset: int) -> list[tuple[int, int]]:
    """(swap unit, offset) of each swap unit in a structured dtype's items."""
    if dt.fields is None:
        base = dt.base if dt.subdtype else dt
        unit = _field_swap_unit(base)
        return [(unit, offset + k * unit) for k in range(dt.itemsize // unit)]
    return [leaf for f in dt.fields.values() for leaf in _leaf_units(f[0], offset + f[1])]


def _field_swap_unit(dt: np.dtype) -> int:
    """A field's swap unit (a v2 field may be a sub-array, or of a type v3 lacks)."""
    try:
        return builtin_from_numpy(dt.base if dt.subdtype else dt).swap_unit
    except UnsupportedDataTypeError:
        return 1


def parse_builtin(value: Any, *, where: str = "data_type",
                  resolve: Callable[..., DataType] | None = None) -> DataType:
    """The :class:`DataType` of the ``data_type`` member of v3 array metadata, among the
    data types above; anything else is :class:`UnsupportedDataTypeError`.  ``resolve``
    (``(value, where=...) -> DataType``) parses a struct's fields: by default this
    function (:func:`zarrfast.metadata.dtype.parse_data_type` passes itself, so that a
    field may be of a registered data type)."""
    if isinstance(value, dict):
        name = value.get("name")
        if set(value) - {"name", "configuration", "must_understand"}:
            raise UnsupportedDataTypeError(
                f"{where}: {value!r} has unexpected members; expected 'name' and 'configuration'"
            )
        if name in (FIXED_UTF32, FIXED_BYTES, RAW_BYTES):
            return _parse_fixed_length(value, where)
        if name in (DATETIME, TIMEDELTA):
            return _parse_time(value, where)
        if name in (STRUCT, STRUCTURED):
            return _parse_struct(value, where, depth=0, resolve=resolve or parse_builtin)
        if value.get("configuration"):
            raise UnsupportedDataTypeError(
                f"{where}: data type {value!r} with a configuration is not supported"
            )
        value = name
    if not isinstance(value, str):
        raise UnsupportedDataTypeError(
            f"{where}: expected a data type name such as 'float64', got {value!r}"
        )
    if value in _CORE:
        return DataType(value, np.dtype(_CORE[value]))
    if value == VLEN_UTF8:
        return DataType(VLEN_UTF8, _string_dtype())
    if value in (VLEN_BYTES, BYTES):
        return DataType(value, np.dtype(object))
    if value in ML_FLOATS or value in ML_INTS:
        return DataType(value, _ml_dtype(value, where))
    if value in _COMPLEX_ALIASES:
        return DataType(value, np.dtype(_COMPLEX_ALIASES[value]))
    if value.startswith("complex_"):
        raise UnsupportedDataTypeError(
            f"{where}: data type {value!r} has no NumPy or ml_dtypes equivalent (only "
            f"complex_float32 and complex_float64 have: complex64 and complex128)")
    if value in (FIXED_UTF32, FIXED_BYTES, RAW_BYTES, DATETIME, TIMEDELTA, STRUCT, STRUCTURED):
        raise UnsupportedDataTypeError(
            f"{where}: data type {value!r} needs a configuration: "
            f"{{\"name\": {value!r}, \"configuration\": {{\"length_bytes\": N}}}}"
        )
    m = _RAW.match(value)
    if m:
        bits = int(m.group(1))
        if bits % 8:
            raise UnsupportedDataTypeError(
                f"{where}: raw data type {value!r} must have a multiple of 8 bits"
            )
        try:
            dt = np.dtype(f"V{bits // 8}")
        except TypeError:
            raise UnsupportedDataTypeError(
                f"{where}: raw data type {value!r} is too large ({bits // 8} bytes per element)"
            ) from None
        return DataType(value, dt)
    raise UnsupportedDataTypeError(
        f"{where}: unknown data type {value!r}; supported: {', '.join(_CORE)}, r<N>, "
        f"{VLEN_UTF8}, {VLEN_BYTES}, {BYTES}, {FIXED_UTF32}, {FIXED_BYTES}, {DATETIME}, "
        f"{TIMEDELTA}, {STRUCT}, {', '.join(ML_FLOATS + ML_INTS)}, complex_float32 and "
        f"complex_float64"
    )


def _parse_time(value: dict, where: str) -> DataType:
    """``{"name": "numpy.datetime64", "configuration": {"unit": u, "scale_factor": n}}``."""
    name = value["name"]
    config = value.get("configuration")
    if not isinstance(config, dict) or set(config) != {"unit", "scale_factor"}:
        raise UnsupportedDataTypeError(
            f"{where}: data type {name!r} needs a configuration with exactly 'unit' and "
            f"'scale_factor', got {value!r}")
    unit, scale = config["unit"], config["scale_factor"]
    if unit not in TIME_UNITS:
        raise UnsupportedDataTypeError(
            f"{where}: {name!r}: unit {unit!r} is not one of {list(TIME_UNITS)}")
    if not _is_int(scale) or not 1 <= scale <= 2**31 - 1:
        raise UnsupportedDataTypeError(
            f"{where}: {name!r}: scale_factor must be an integer in [1, 2147483647], got "
            f"{scale!r}")
    code = "M8" if name == DATETIME else "m8"
    if unit == "generic":
        if scale != 1:
            raise UnsupportedDataTypeError(
                f"{where}: {name!r}: the generic unit takes no scale_factor, got {scale}")
        return DataType(name, np.dtype(code))
    unit = "us" if unit == "\u03bcs" else unit
    return DataType(name, np.dtype(f"{code}[{scale}{unit}]"))


def _parse_struct(value: dict, where: str, *, depth: int,
                  resolve: Callable[..., DataType]) -> DataType:
    """``{"name": "struct", "configuration": {"fields": [{"name": ..., "data_type": ...}]}}``
    (legacy ``structured``: fields may be ``[name, data_type]`` pairs)."""
    name = value["name"]
    if depth > MAX_STRUCT_DEPTH:
        raise UnsupportedDataTypeError(
            f"{where}: struct fields nested more than {MAX_STRUCT_DEPTH} deep")
    config = value.get("configuration")
    fields = config.get("fields") if isinstance(config, dict) else None
    if not isinstance(config, dict) or set(config) != {"fields"} or not isinstance(
            fields, list) or not fields:
        raise UnsupportedDataTypeError(
            f"{where}: data type {name!r} needs a configuration with a non-empty list "
            f"'fields', got {value!r}")
    out: list[tuple[str, np.dtype]] = []
    for i, f in enumerate(fields):
        at = f"{where}: fields[{i}]"
        if isinstance(f, dict) and set(f) == {"name", "data_type"}:
            fname, ftype = f["name"], f["data_type"]
        elif name == STRUCTURED and isinstance(f, list) and len(f) == 2:
            fname, ftype = f
        else:
            raise UnsupportedDataTypeError(
                f"{at}: a field must be {{'name': ..., 'data_type': ...}}, got {f!r}")
        if not isinstance(fname, str) or not fname:
            raise UnsupportedDataTypeError(f"{at}: field name must be a non-empty string, "
                                           f"got {fname!r}")
        if any(fname == n for n, _ in out):
            raise UnsupportedDataTypeError(f"{at}: field name {fname!r} is repeated")
        if isinstance(ftype, dict) and ftype.get("name") in (STRUCT, STRUCTURED):
            sub = _parse_struct(ftype, f"{at} {fname!r}", depth=depth + 1, resolve=resolve)
        else:
            sub = resolve(ftype, where=f"{at} {fname!r}")
        if sub.variable_length:
            raise UnsupportedDataTypeError(
                f"{at}: field {fname!r} has the variable-length data type {sub.name!r}; "
                f"struct fields need a fixed size")
        out.append((fname, sub.dtype))
    return DataType(name, np.dtype(out))


def _parse_fixed_length(value: dict, where: str) -> DataType:
    """``{"name": "fixed_length_utf32" | "null_terminated_bytes",
    "configuration": {"length_bytes": N}}``."""
    name = value["name"]
    config = value.get("configuration")
    if not isinstance(config, dict) or set(config) != {"length_bytes"}:
        raise UnsupportedDataTypeError(
            f"{where}: data type {name!r} needs a configuration with exactly 'length_bytes', "
            f"got {value!r}"
        )
    n = config["length_bytes"]
    if not _is_int(n) or n < 1 or n > 2**31 - 1:
        raise UnsupportedDataTypeError(
            f"{where}: {name!r}: length_bytes must be a positive integer, got {n!r}"
        )
    if name == FIXED_UTF32:
        if n % 4:
            raise UnsupportedDataTypeError(
                f"{where}: {name!r}: length_bytes {n} is not a multiple of 4 (UTF-32 code units)"
            )
        return DataType(FIXED_UTF32, np.dtype(f"U{n // 4}"))
    if name == RAW_BYTES:
        return DataType(RAW_BYTES, np.dtype(f"V{n}"))
    return DataType(FIXED_BYTES, np.dtype(f"S{n}"))


def builtin_from_numpy(dtype: Any, *, where: str = "dtype",
                       resolve: Callable[..., DataType] | None = None) -> DataType:
    """The :class:`DataType` of a NumPy dtype (or anything ``np.dtype`` accepts, or a v3
    name or JSON), among the data types above (``resolve``: as for :func:`parse_builtin`)."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, str) and (dtype in _CORE or _RAW.match(dtype)
                                   or dtype in (VLEN_UTF8, VLEN_BYTES)
                                   or dtype in ML_FLOATS or dtype in ML_INTS
                                   or dtype in _COMPLEX_ALIASES):
        return parse_builtin(dtype, where=where)
    if isinstance(dtype, dict):  # a v3 data type's JSON
        return parse_builtin(dtype, where=where, resolve=resolve)
    # Python's str (and "str", "T", StringDType and object): variable-length UTF-8, as
    # zarr-python 3 maps str and StringDType; bytes: variable-length bytes
    if dtype is str or (isinstance(dtype, str) and dtype in ("str", "T")):
        return parse_builtin(VLEN_UTF8, where=where)
    if dtype is bytes or (isinstance(dtype, str) and dtype == "bytes"):
        return parse_builtin(VLEN_BYTES, where=where)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise UnsupportedDataTypeError(f"{where}: {dtype!r} is not a data type ({e})") from None
    if dt.kind in "OT":
        return parse_builtin(VLEN_UTF8, where=where)
    if dt.kind in "US":
        if dt.itemsize == 0:
            raise UnsupportedDataTypeError(
                f"{where}: NumPy dtype {dt} has no length; give one ({dt.kind}10) or use "
                f"{'str' if dt.kind == 'U' else 'bytes'} for variable-length elements"
            )
        # zarr-python keeps a big-endian <U> dtype in memory; zarrfast returns native
        # order (the stored order is the bytes codec's business)
        return DataType(FIXED_UTF32 if dt.kind == "U" else FIXED_BYTES,
                        dt.newbyteorder("=") if dt.kind == "U" else dt)
    if _is_ml(dt):
        if dt.name in ML_FLOATS or dt.name in ML_INTS:
            return DataType(dt.name, dt)
        raise UnsupportedDataTypeError(f"{where}: ml_dtypes type {dt.name} has no Zarr v3 "
                                       f"data type")
    if dt.kind in "mM":
        return DataType(DATETIME if dt.kind == "M" else TIMEDELTA, dt.newbyteorder("="))
    if dt.subdtype is not None:
        raise UnsupportedDataTypeError(
            f"{where}: sub-array dtype {dt} is not a Zarr v3 data type")
    if dt.fields is not None:
        warn_if_padded(dt, where)
        return _struct_from_numpy(dt, where)
    if dt.kind == "V":
        # as zarr-python 3.1+ writes it, which zarr-python and tensorstore both open; neither
        # opens the core spec's ``r<N>`` as zarrfast wrote it before (still read, and still
        # written when asked for by that name)
        return DataType(RAW_BYTES, np.dtype(f"V{dt.itemsize}"))
    native = dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt
    for name, code in _CORE.items():
        if np.dtype(code) == native:
            return DataType(name, np.dtype(code))
    raise UnsupportedDataTypeError(
        f"{where}: NumPy dtype {dt} has no Zarr v3 core equivalent; supported: "
        f"{', '.join(_CORE)} and raw bytes (V<n>)"
    )


def packed_layout(dt: np.dtype) -> np.dtype:
    """A structured dtype with its fields (nested ones too) packed in order, without the
    padding of ``align=True`` or explicit offsets: the layout Zarr stores."""
    from numpy.lib.recfunctions import repack_fields

    return repack_fields(dt, recurse=True)


def warn_if_padded(dt: np.dtype, where: str) -> np.dtype:
    """``dt`` packed (:func:`packed_layout`), with a ``ZarrUserWarning`` when that changes
    its layout (as zarr-python 3.4 warns): the values of the fields are kept, the padding
    between them is not stored."""
    packed = packed_layout(dt)
    if packed != dt:
        warnings.warn(ZarrUserWarning(
            f"{where}: the structured dtype {dt} (itemsize {dt.itemsize}) is converted to a "
            f"packed field layout, {packed} (itemsize {packed.itemsize}): the values of its "
            f"fields are kept, the padding between them is not stored"), stacklevel=2)
    return packed


def _struct_from_numpy(dt: np.dtype, where: str, depth: int = 0) -> DataType:
    """A NumPy structured dtype as ``struct``: fields packed in order, native byte order."""
    if depth > MAX_STRUCT_DEPTH:
        raise UnsupportedDataTypeError(
            f"{where}: struct fields nested more than {MAX_STRUCT_DEPTH} deep")
    fields = []
    for name in dt.names:
        ft = dt.fields[name][0]
        at = f"{where}: field {name!r}"
        if not name:
            raise UnsupportedDataTypeError(f"{at}: struct fields need non-empty names")
        sub = (_struct_from_numpy(ft, at, depth + 1) if ft.fields is not None
               else builtin_from_numpy(ft, where=at))
        if sub.variable_length:
            raise UnsupportedDataTypeError(
                f"{at}: {ft} is variable-length; struct fields need a fixed size")
        fields.append((name, sub.dtype))
    return DataType(STRUCT, np.dtype(fields))


# -- fill value helpers ----------------------------------------------------------

_UINT_FOR_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _representable(dt: np.dtype, value: float, out: Any, where: str, shown: Any) -> Any:
    """``out`` (``value`` converted to ``dt``) if it stands for ``value``: NaN for NaN,
    the same infinity, and finite for a finite number (the ML types round, and saturate
    to NaN or lose infinities, silently)."""
    got = float(out)
    if math.isnan(value) and not math.isnan(got):
        raise FillValueError(f"{where}: data type {dt.name} has no NaN ({shown!r})")
    if math.isinf(value) and got != value:
        raise FillValueError(f"{where}: data type {dt.name} has no infinity ({shown!r})")
    if math.isfinite(value) and not math.isfinite(got):
        raise FillValueError(f"{where}: {shown!r} is out of range for data type {dt.name}")
    return out


def _parse_float(dt: np.dtype, value: Any, where: str) -> Any:
    if isinstance(value, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if value in special:
            with np.errstate(invalid="ignore", over="ignore"):
                return _representable(dt, special[value], dt.type(special[value]), where,
                                      value)
        if _HEX.match(value):
            nhex = dt.itemsize * 2
            if len(value) - 2 != nhex:
                raise FillValueError(
                    f"{where}: hex fill value {value!r} must have exactly {nhex} hex digits "
                    f"for a {dt.itemsize * 8}-bit float"
                )
            bits = _UINT_FOR_SIZE[dt.itemsize](int(value, 16))
            return np.array(bits).view(dt)[()]
        raise FillValueError(
            f"{where}: {value!r} is not a valid float fill value; expected a number, "
            f"'NaN', 'Infinity', '-Infinity' or a '0x…' bit pattern"
        )
    if _is_int(value) or isinstance(value, float):
        if dt.name == "float8_e8m0fnu" and value == 0:
            # no zero: the smallest value, all bits 0 (what tensorstore's default 0.0 means)
            return np.zeros((), dtype=dt)[()]
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                out = dt.type(value)
        except OverflowError:
            raise FillValueError(f"{where}: {value!r} overflows data type {dt.name}") from None
        if math.isfinite(float(value)) and not math.isfinite(float(out)):
            raise FillValueError(
                f"{where}: {value!r} overflows data type {dt.name}"
            )
        return out
    raise FillValueError(
        f"{where}: expected a number or 'NaN'/'Infinity'/'-Infinity'/'0x…', got {value!r}"
    )


def _parse_fill(dtype: DataType, value: Any, where: str) -> np.generic:
    dt = dtype.dtype
    kind = dt.kind
    if kind == "b":
        if isinstance(value, bool):
            return np.bool_(value)
        raise FillValueError(f"{where}: data type bool needs true or false, got {value!r}")
    if dtype.name in (VLEN_UTF8, VLEN_BYTES, BYTES, FIXED_UTF32, FIXED_BYTES):
        return _parse_string_fill(dtype, value, where)
    if dtype.name in (DATETIME, TIMEDELTA):
        if value == "NaT":
            return np.array(_NAT, dtype=np.int64).view(dt)[()]
        if not _is_int(value) or not _NAT <= value <= 2**63 - 1:
            raise FillValueError(f"{where}: data type {dtype.name} needs an integer in the "
                                 f"int64 range or 'NaT', got {value!r}")
        return np.array(value, dtype=np.int64).view(dt)[()]
    if dt.fields is not None:
        return _parse_struct_fill(dtype, value, where)
    if dtype.name in ML_FLOATS:
        return _parse_float(dt, value, where)
    if kind in "iu" or dtype.name in ML_INTS:
        if not _is_int(value):
            raise FillValueError(
                f"{where}: data type {dtype.name} needs an integer fill value, got {value!r}"
                + (" (an invalid literal for an integer)" if isinstance(value, str) else ""))
        info = _iinfo(dt)
        if not info.min <= value <= info.max:
            raise FillValueOverflowError(
                f"{where}: {value} is out of range [{info.min}, {info.max}] for {dtype.name}"
            )
        return dt.type(value)
    if kind == "f":
        return _parse_float(dt, value, where)
    if kind == "c":
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise FillValueError(
                f"{where}: data type {dtype.name} needs a [real, imag] pair, got {value!r}"
            )
        comp = np.dtype(f"f{dt.itemsize // 2}")
        re_ = _parse_float(comp, value[0], where + "[0]")
        im_ = _parse_float(comp, value[1], where + "[1]")
        out = np.empty((), dtype=dt)
        out.real = re_
        out.imag = im_
        return out[()]
    # (base64, as zarr-python writes it; a list of integers as zarrfast wrote r<8n> before
    # 7498001, a struct's V<n> field too, is read below)
    if kind == "V" and dtype.name == RAW_BYTES and not isinstance(value, (list, tuple)):
        raw = _from_b64(value, dtype, where)
        if len(raw) != dt.itemsize:
            raise FillValueError(
                f"{where}: data type {dtype.name} needs base64 of {dt.itemsize} bytes, "
                f"got {value!r} ({len(raw)} bytes)")
        return np.frombuffer(raw, dtype=dt)[0]
    if kind == "V":
        n = dt.itemsize
        if (
            not isinstance(value, (list, tuple))
            or len(value) != n
            or not all(_is_int(b) and 0 <= b <= 255 for b in value)
        ):
            raise FillValueError(
                f"{where}: data type {dtype.name} needs a list of {n} integers in [0, 255], "
                f"got {value!r}"
            )
        return np.frombuffer(bytes(value), dtype=dt)[0]
    raise FillValueError(f"{where}: unsupported data type {dtype.name}")  # pragma: no cover


_NAT = -(2**63)


def _iinfo(dt: np.dtype) -> Any:
    if _is_ml(dt):
        import ml_dtypes

        return ml_dtypes.iinfo(dt)
    return np.iinfo(dt)


def _parse_struct_fill(dtype: DataType, value: Any, where: str) -> Any:
    """An object of the fields' fill values, or (legacy) base64 of the packed
    little-endian bytes."""
    dt = dtype.dtype
    out = np.zeros((), dtype=dt)
    if isinstance(value, str):
        raw = _from_b64(value, dtype, where)
        if len(raw) != dt.itemsize:
            raise FillValueError(f"{where}: {len(raw)} bytes of base64 fill value, data type "
                                 f"{dtype.name} has {dt.itemsize}")
        return np.frombuffer(raw, dtype=dt.newbyteorder("<"))[0].astype(dt)
    if not isinstance(value, dict) or set(value) != set(dt.names):
        raise FillValueError(f"{where}: data type {dtype.describe()} needs an object with the "
                             f"fields {list(dt.names)}, got {value!r}")
    for name in dt.names:
        sub = builtin_from_numpy(dt.fields[name][0])
        out[name] = sub.parse_fill_value(value[name], where=f"{where}[{name!r}]")
    return out[()]


def _coerce_struct(dtype: DataType, value: Any, where: str) -> Any:
    """A struct fill value as users pass it: a dict, a tuple, a NumPy record or 0."""
    dt = dtype.dtype
    if isinstance(value, dict) and all(isinstance(v, (bool, int, float, str, list, dict))
                                       for v in value.values()):
        try:
            return _parse_struct_fill(dtype, value, where)
        except FillValueError:
            pass  # Python values rather than JSON: assign them below
    out = np.zeros((), dtype=dt)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return out[()]
    try:
        if isinstance(value, dict):
            if set(value) != set(dt.names):
                raise ValueError(f"fields {sorted(value)} are not {list(dt.names)}")
            for k, v in value.items():
                out[k] = v
        else:
            out[()] = value.astype(dt) if isinstance(value, np.void) else value
    except (TypeError, ValueError) as e:
        raise FillValueError(f"{where}: {value!r} is not a value of {dtype.describe()} "
                             f"({e})") from None
    return out[()]


def _coerce_time(dtype: DataType, value: Any, where: str) -> Any:
    """A datetime64 / timedelta64 fill value: a NumPy scalar, an integer count, 'NaT' or a
    date string."""
    dt = dtype.dtype
    if isinstance(value, (np.datetime64, np.timedelta64)):
        if (value.dtype.kind == "M") != (dt.kind == "M"):
            raise FillValueError(f"{where}: {value!r} is not a {dtype.name} value")
        return value.astype(dt)
    if _is_int(value) or isinstance(value, np.integer):
        return np.array(int(value), dtype=np.int64).view(dt)[()]
    if isinstance(value, str):
        try:
            return np.array(value, dtype=dt)[()]
        except ValueError:
            raise FillValueError(f"{where}: {value!r} is not a {dtype.describe()} value"
                                 ) from None
    raise FillValueError(f"{where}: data type {dtype.describe()} needs a NumPy "
                         f"{dt.kind == 'M' and 'datetime64' or 'timedelta64'}, an integer or "
                         f"'NaT', got {value!r}")


def _coerce_python(dtype: DataType, value: Any, where: str) -> np.generic:
    dt = dtype.dtype
    if dtype.name in ML_FLOATS or dtype.name in ML_INTS:
        if isinstance(value, (complex, np.complexfloating)):
            raise FillValueError(f"{where}: {value!r} is complex but the data type is "
                                 f"{dtype.name}")
        if dtype.name in ML_INTS:
            return _parse_fill(dtype, int(value) if float(value).is_integer() else value,
                               where)
        if dtype.name == "float8_e8m0fnu" and value == 0:
            return np.zeros((), dtype=dt)[()]
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.array(value).astype(dt)[()]
        return _representable(dt, float(value), out, where, value)
    if dt.kind == "V":
        raise FillValueError(
            f"{where}: data type {dtype.name} needs bytes of length {dt.itemsize}, got {value!r}"
        )
    if dt.kind == "b":
        return np.bool_(bool(value))
    if dt.kind in "iu":
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise FillValueError(f"{where}: {value!r} is not an integer ({dtype.name})")
        if isinstance(value, (complex, np.complexfloating)):
            raise FillValueError(f"{where}: {value!r} is not an integer ({dtype.name})")
        iv = int(value)
        info = _iinfo(dt)
        if not info.min <= iv <= info.max:
            raise FillValueOverflowError(
                f"{where}: {value!r} is out of range [{info.min}, {info.max}] for {dtype.name}"
            )
        return dt.type(iv)
    if dt.kind == "f" and isinstance(value, (complex, np.complexfloating)):
        raise FillValueError(f"{where}: {value!r} is complex but the data type is {dtype.name}")
    with np.errstate(over="ignore"):
        return np.array(value).astype(dt)[()]


def _float_to_json(x: np.floating) -> Any:
    f = float(x)
    if math.isnan(f):
        bits = np.array(x).view(_UINT_FOR_SIZE[x.dtype.itemsize])[()]
        canonical = np.array(np.nan, dtype=x.dtype).view(_UINT_FOR_SIZE[x.dtype.itemsize])[()]
        if bits == canonical:
            return "NaN"
        return "0x" + format(int(bits), f"0{x.dtype.itemsize * 2}x")
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    if f.is_integer() and abs(f) < 2**53:
        # json renders 0.0 as "0.0"; keep floats as floats
        return f
    return f


def _b64(b: bytes) -> str:
    return base64.standard_b64encode(b).decode("ascii")


def _from_b64(value: Any, dtype: DataType, where: str) -> bytes:
    if not isinstance(value, str):
        raise FillValueError(
            f"{where}: data type {dtype.name} needs a base64 string fill value, got {value!r}"
        )
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise FillValueError(
            f"{where}: {value!r} is not valid base64 (the fill value encoding of "
            f"{dtype.name})"
        ) from None


def _check_fixed(dtype: DataType, value: Any, where: str) -> Any:
    """A str/bytes fill value that must fit a fixed-length type: as its NumPy scalar."""
    dt = dtype.dtype
    limit = dt.itemsize // 4 if dt.kind == "U" else dt.itemsize
    if len(value) > limit:
        unit = "characters" if dt.kind == "U" else "bytes"
        raise FillValueError(
            f"{where}: {value!r} has {len(value)} {unit}, more than data type "
            f"{dtype.name} (length_bytes {dt.itemsize}) holds ({limit})"
        )
    out = np.zeros((), dtype=dt)
    out[()] = value
    return out[()]


def _parse_string_fill(dtype: DataType, value: Any, where: str) -> Any:
    """The JSON fill value of a string/bytes type (zarr-python's encodings)."""
    if dtype.name in (VLEN_UTF8, FIXED_UTF32):
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and dtype.name == VLEN_UTF8:
            value = str(value)  # zarr-python accepts a number here
        if not isinstance(value, str):
            raise FillValueError(
                f"{where}: data type {dtype.name} needs a string fill value, got {value!r}"
            )
        return value if dtype.name == VLEN_UTF8 else _check_fixed(dtype, value, where)
    if dtype.name == BYTES and isinstance(value, list):  # the registry's other form
        if not all(_is_int(b) and 0 <= b <= 255 for b in value):
            raise FillValueError(f"{where}: data type bytes needs base64 or a list of "
                                 f"integers in [0, 255], got {value!r}")
        return bytes(value)
    raw = _from_b64(value, dtype, where)
    return raw if dtype.name in (VLEN_BYTES, BYTES) else _check_fixed(dtype, raw, where)


def _coerce_string(dtype: DataType, value: Any, where: str) -> Any:
    """A fill value as users pass it, for the string/bytes types."""
    textual = dtype.name in (VLEN_UTF8, FIXED_UTF32)
    if textual:
        if isinstance(value, (bytes, bytearray, np.bytes_)):
            raise FillValueError(
                f"{where}: data type {dtype.name} holds str, got the bytes {value!r}"
            )
        if isinstance(value, (bool, np.bool_)):
            raise FillValueError(
                f"{where}: data type {dtype.name} holds str, got {value!r}"
            )
        if not isinstance(value, (str, int, float, np.integer, np.floating)):
            raise FillValueError(
                f"{where}: data type {dtype.name} needs a str fill value, got {value!r}"
            )
        text = str(value)
        return text if dtype.name == VLEN_UTF8 else _check_fixed(dtype, text, where)
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        raw = bytes(value)
        return raw if dtype.name in (VLEN_BYTES, BYTES) else _check_fixed(dtype, raw, where)
    raise FillValueError(
        f"{where}: data type {dtype.name} needs a bytes fill value, got {value!r}"
    )


def _fill_to_json(dtype: DataType, value: Any) -> Any:
    if dtype.name == VLEN_UTF8:
        return str(value)
    if dtype.name in (VLEN_BYTES, BYTES):
        return _b64(bytes(value))
    if dtype.name == FIXED_UTF32:
        return str(value)
    if dtype.name == FIXED_BYTES:
        return _b64(bytes(value))
    if dtype.name == RAW_BYTES:
        return _b64(np.asarray(value, dtype=dtype.dtype).tobytes())
    dt = dtype.dtype
    v = np.asarray(value, dtype=dt)[()]
    if dtype.name in (DATETIME, TIMEDELTA):  # NaT too: as zarr-python, the integer -2**63
        return int(np.asarray(v).view(np.int64))
    if dt.fields is not None:
        return {n: builtin_from_numpy(dt.fields[n][0]).fill_value_to_json(v[n])
                for n in dt.names}
    if dtype.name == "float8_e8m0fnu":  # no sign, no zero: the bits say it plainly
        return "0x" + format(int(np.asarray(v).view(np.uint8)), "02x")
    if dtype.name in ML_FLOATS:
        return _float_to_json(v)
    if dtype.name in ML_INTS:
        return int(v)
    if dt.kind == "b":
        return bool(v)
    if dt.kind in "iu":
        return int(v)
    if dt.kind == "f":
        return _float_to_json(v)
    if dt.kind == "c":
        return [_float_to_json(v.real), _float_to_json(v.imag)]
    if dt.kind == "V":
        return list(bytes(v.tobytes()))
    raise FillValueError(f"cannot encode fill value {value!r} for {dtype.name}")  # pragma: no cover


def fill_bytes(dtype: DataType, value: np.generic, *, byteorder: str = "=") -> bytes:
    """The fill value as one item of raw bytes, in native (``"="``) or another byte order."""
    arr = np.zeros((), dtype=dtype.dtype)
    try:
        arr[()] = value  # (np.asarray(b"", dtype="S1") would keep 0 bytes)
    except (TypeError, ValueError, OverflowError) as e:
        raise FillValueError(
            f"fill value {value!r} cannot be stored as data type {dtype.name} ({e})"
        ) from None
    if byteorder not in ("=", "|") and dtype.swap_unit > 1:
        target = "<" if byteorder == "<" else ">"
        arr = arr.astype(dtype.dtype.newbyteorder(target))
    return arr.tobytes()




def same_value(value: Any, fill: Any) -> bool:
    """``value == fill`` for the elements of object arrays (which may be arrays)."""
    if value is fill:
        return True
    if isinstance(value, np.ndarray) or isinstance(fill, np.ndarray):
        return (isinstance(value, np.ndarray) and isinstance(fill, np.ndarray)
                and np.array_equal(value, fill))
    try:
        return type(value) is type(fill) and bool(value == fill)
    except (TypeError, ValueError):
        return False


def is_fill_chunk(chunk: np.ndarray, fill: Any, data_type: DataType) -> bool:
    """Whether every element of ``chunk`` is the fill value: bit for bit for fixed-size
    types (so a NaN fill matches NaN), by value for objects."""
    if chunk.dtype.hasobject:
        return all(same_value(v, fill) for v in chunk.flat)
    item = np.frombuffer(fill_bytes(data_type, fill), dtype=np.uint8)
    raw = np.ascontiguousarray(chunk, dtype=data_type.dtype).reshape(-1).view(np.uint8)
    return bool((raw.reshape(-1, item.size) == item).all()) if raw.size else True
