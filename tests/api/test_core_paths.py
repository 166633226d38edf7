"""zarr-python's zarr.core paths that user code imports resolve to zarrfast's objects."""

from __future__ import annotations

import numpy as np

import zarrfast


def test_core_modules_give_zarrfasts_objects():
    from zarrfast.core.array import Array, AsyncArray
    from zarrfast.core.common import JSON, ZarrFormat  # noqa: F401 - importable aliases
    from zarrfast.core.dtype import Int8, ZDType, data_type_registry
    from zarrfast.core.dtype.common import DataTypeValidationError, check_dtype_spec_v2
    from zarrfast.core.group import AsyncGroup, Group, GroupMetadata

    assert Array is zarrfast.Array and Group is zarrfast.Group
    assert AsyncArray is zarrfast.AsyncArray and AsyncGroup is zarrfast.AsyncGroup
    assert Int8 is zarrfast.dtype.Int8 and ZDType is zarrfast.dtype.ZDType
    assert data_type_registry is zarrfast.dtype.data_type_registry
    assert DataTypeValidationError is zarrfast.dtype.DataTypeValidationError
    assert check_dtype_spec_v2 is zarrfast.dtype.check_dtype_spec_v2
    assert Int8().to_native_dtype() == np.dtype("int8")
    assert GroupMetadata().zarr_format == 3
