"""zarr-python's ``zarr.dtype``: the data-type classes, their registry and :func:`parse_dtype`.

``import zarrfast as zarr`` code that does ``zarr.dtype.Int32()``,
``zarr.dtype.parse_dtype("<M8[s]", zarr_format=3)`` or registers a data type of its own
(``zarr.dtype.data_type_registry.register("int2", Int2)``) gets the same objects, JSON and
scalars as with zarr-python.  The work is in :mod:`zarrfast.metadata.zdtype`.
"""

from typing import Any

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
    Struct,
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


def check_dtype_spec_no_object_codec_v2(data: Any) -> bool:
    """Whether ``data`` is the Zarr v2 form of a data type without an object codec.

    ``{"name": ..., "object_codec_id": None}``: the form of every data type but those
    NumPy stores as objects (``"|O"``, whose object codec names the encoding), as
    zarr-python 3.4's ``zarr.dtype.check_dtype_spec_no_object_codec_v2``.

    Parameters
    ----------
    data : Any
        The value to check.

    Returns
    -------
    bool
        ``True`` when ``data`` passes :func:`check_dtype_spec_v2` and its
        ``object_codec_id`` is ``None``.

    Examples
    --------
    >>> from zarrfast.dtype import check_dtype_spec_no_object_codec_v2
    >>> check_dtype_spec_no_object_codec_v2({"name": "|u1", "object_codec_id": None})
    True
    >>> check_dtype_spec_no_object_codec_v2({"name": "|O", "object_codec_id": "vlen-utf8"})
    False
    """
    return check_dtype_spec_v2(data) and data["object_codec_id"] is None


__all__ = [
    "ANY_DTYPE", "JSON", "Bool", "Complex64", "Complex128", "DTypeConfig_V2", "DTypeJSON",
    "DataTypeRegistry", "DataTypeValidationError", "DateTime64", "FixedLengthUTF32",
    "Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64", "NullTerminatedBytes",
    "RawBytes", "Struct", "Structured", "TimeDelta64", "UInt8", "UInt16", "UInt32", "UInt64",
    "VariableLengthBytes", "VariableLengthUTF8", "ZDType", "ZarrFormat",
    "check_dtype_spec_no_object_codec_v2", "check_dtype_spec_v2",
    "data_type_registry", "parse_data_type", "parse_dtype",
]
