"""``zarr.core.dtype.common``: what a data type of one's own is written with."""

from zarrfast.dtype import (
    DataTypeValidationError,
    DTypeConfig_V2,
    DTypeJSON,
    check_dtype_spec_no_object_codec_v2,
    check_dtype_spec_v2,
)

__all__ = ["DTypeConfig_V2", "DTypeJSON", "DataTypeValidationError",
           "check_dtype_spec_no_object_codec_v2", "check_dtype_spec_v2"]
