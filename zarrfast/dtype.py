"""zarr-python's ``zarr.dtype``: the data-type classes, their registry and :func:`parse_dtype`.

``import zarrfast as zarr`` code that does ``zarr.dtype.Int32()``,
``zarr.dtype.parse_dtype("<M8[s]", zarr_format=3)`` or registers a data type of its own
(``zarr.dtype.data_type_registry.register("int2", Int2)``) gets the same objects, JSON and
scalars as with zarr-python.  The work is in :mod:`zarrfast.metadata.zdtype`.
"""

from zarrfast.metadata.zdtype import (
    ANY_DTYPE,
    JSON,
    Bool,
    Complex64,
    Complex128,
    DataTypeRegistry,
    DataTypeValidationError,
    DateTime64,
    DTypeConfig_V2,
    DTypeJSON,
    FixedLengthUTF32,
    Float16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    NullTerminatedBytes,
    RawBytes,
    Structured,
    TimeDelta64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    VariableLengthBytes,
    VariableLengthUTF8,
    ZarrFormat,
    ZDType,
    check_dtype_spec_v2,
    data_type_registry,
    parse_data_type,
    parse_dtype,
)

__all__ = [
    "ANY_DTYPE", "JSON", "Bool", "Complex64", "Complex128", "DTypeConfig_V2", "DTypeJSON",
    "DataTypeRegistry", "DataTypeValidationError", "DateTime64", "FixedLengthUTF32",
    "Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64", "NullTerminatedBytes",
    "RawBytes", "Structured", "TimeDelta64", "UInt8", "UInt16", "UInt32", "UInt64",
    "VariableLengthBytes", "VariableLengthUTF8", "ZDType", "ZarrFormat", "check_dtype_spec_v2",
    "data_type_registry", "parse_data_type", "parse_dtype",
]
