"""``zarr.core.dtype``: :mod:`zarrfast.dtype` under zarr-python's older path."""

from zarrfast.dtype import *  # noqa: F403 - the same names
from zarrfast.dtype import __all__  # noqa: F401
