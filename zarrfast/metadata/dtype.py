"""A data type from what metadata or a user gives: a name or JSON, a NumPy dtype, a ``ZDType``.

zarrfast has one model of a data type, :class:`~zarrfast.metadata.data_type.DataType` (name,
NumPy dtype, fill values; the types zarrfast knows are listed there).  zarr-python's
``ZDType`` classes (:mod:`.zdtype`) are views of it, and ``data_type_registry`` holds them,
with those users register (``data_type_registry.register("int2", Int2)``).  The two
functions here ask the model first, then the registry, by direct imports::

    data_type.py (DataType, the types zarrfast knows)  <-  zdtype.py (ZDType, registry)
                                                       <-  dtype.py (this module)

so what a data type means does not depend on which modules were imported.  The rest of
zarrfast calls these two functions.
"""

from __future__ import annotations

from typing import Any

from zarrfast.errors import UnsupportedDataTypeError
from zarrfast.metadata.data_type import (
    ML_FLOATS,
    ML_INTS,
    DataType,
    builtin_from_numpy,
    fill_bytes,
    is_fill_chunk,
    parse_builtin,
    same_value,
)
from zarrfast.metadata.zdtype import registered_data_type

__all__ = ["DataType", "data_type_from_numpy", "fill_bytes", "is_fill_chunk",
           "parse_data_type", "same_value", "ML_FLOATS", "ML_INTS"]


def parse_data_type(value: Any, *, where: str = "data_type") -> DataType:
    """The :class:`DataType` of the ``data_type`` member of v3 array metadata (or of a
    ``ZDType``): a type zarrfast knows, else a registered ``ZDType``'s."""
    try:
        return parse_builtin(value, where=where, resolve=parse_data_type)
    except UnsupportedDataTypeError:
        found = registered_data_type(value, where)
        if found is None:
            raise
        return found


def data_type_from_numpy(dtype: Any, *, where: str = "dtype") -> DataType:
    """The :class:`DataType` of a NumPy dtype, or of anything ``np.dtype`` accepts, a v3
    name or JSON, or a ``ZDType`` (zarrfast's, or another library's such as zarr-python's)."""
    if isinstance(dtype, DataType):
        return dtype
    if hasattr(dtype, "to_native_dtype"):  # a ZDType
        found = registered_data_type(dtype, where)
        if found is not None:
            return found
    try:
        return builtin_from_numpy(dtype, where=where, resolve=parse_data_type)
    except UnsupportedDataTypeError:
        found = registered_data_type(dtype, where) if isinstance(dtype, (str, dict)) else None
        if found is None:
            raise
        return found
