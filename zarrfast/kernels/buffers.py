"""Buffers the engine and codecs allocate, with a named error when memory runs out.

``np.empty`` raises a bare ``MemoryError`` (NumPy's message names the size, shape and
dtype but not what for, nor which array); :func:`empty` raises an
:class:`~zarrfast.errors.AllocationError` (also a ``MemoryError``) whose message says
where (the node or the chunk key), what the buffer was for, its bytes, shape and dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zarrfast.errors import AllocationError

__all__ = ["allocation_error", "empty", "human_bytes"]


def human_bytes(n: int) -> str:
    """``n`` bytes in binary units: ``'8.0 GiB'``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def allocation_error(where: str, what: str, shape: int | Sequence[int], dtype: Any,
                     error: type[AllocationError] = AllocationError,
                     detail: str = "") -> AllocationError:
    """The error for a buffer of ``shape`` and ``dtype`` that could not be allocated
    (``where``: the node or chunk key, or ``""`` when the caller names the node)."""
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    return error(f"{where + ': ' if where else ''}out of memory allocating {what}: "
                 f"{nbytes} bytes ({human_bytes(nbytes)}) for shape {shape} of dtype {dtype}"
                 f"{detail}")


def empty(shape: int | Sequence[int], dtype: Any = np.uint8, *, where: str, what: str,
          logical: tuple[Sequence[int], Any] | None = None,
          error: type[AllocationError] = AllocationError) -> np.ndarray:
    """``np.empty(shape, dtype)``, or ``error`` naming ``where`` and ``what``.

    ``logical``: the ``(shape, dtype)`` the message gives for a flat byte buffer that
    holds an array (a chunk's bytes)."""
    try:
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as e:
        # (NumPy refuses more than the address space can hold with "array is too big")
        if isinstance(e, ValueError) and "too big" not in str(e):
            raise
        s, d = logical if logical is not None else (shape, dtype)
        raise allocation_error(where, what, s, d, error) from None
