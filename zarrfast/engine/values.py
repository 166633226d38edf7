"""Values written to an array, cast to its data type as NumPy 2 casts them on assignment.

``x[...] = value`` into a NumPy array casts in one of two ways, and every write entry point
of an :class:`~zarrfast.Array` follows the same rule through :func:`as_stored`:

- a **Python scalar** (``300``, ``-1``, ``nan``, ``1e20``, ``1j``) and a **NumPy scalar**
  are stored one element at a time, as ``np.empty((), dtype)[()] = value`` stores them:
  ``300`` into uint8 raises ``OverflowError``, NaN into int32 ``ValueError``, ``1j``
  into int8 ``TypeError``; ``np.int64(300)`` into uint8 wraps to 44 (NumPy 2 does);
- a **list or other sequence** is converted with ``np.asarray(value, dtype=dtype)``,
  which checks each Python int as above (``[300]`` into uint8 raises);
- an **ndarray** (0-d too) and any other array (``__array__``) keeps NumPy's unsafe
  cast, as NumPy and zarr-python 3.1.6 do: ``np.array([300])`` stores 44.

The refusals are raised as :class:`~zarrfast.errors.ValueOverflowError`,
:class:`~zarrfast.errors.ValueCastError` (a ``ValueError``) and
:class:`~zarrfast.errors.ValueTypeError`: the builtin NumPy raises mixed into zarrfast's
hierarchy, naming the array, the value and the data type, with NumPy's error as the cause.
They are raised before anything is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarrfast.errors import ValueCastError, ValueOverflowError, ValueTypeError

__all__ = ["as_stored", "is_scalar"]


def is_scalar(value: Any) -> bool:
    """A Python or NumPy scalar (what NumPy stores element by element, checking range)."""
    return np.isscalar(value)


def as_stored(value: Any, dtype: np.dtype, *, where: str) -> np.ndarray:
    """``value`` as an array of ``dtype``, cast as NumPy 2's ``x[...] = value`` casts it
    (see the module docstring); ``where`` names the array (``"array 'a/b'"``).

    Raises
    ------
    ValueOverflowError
        A Python scalar (or a Python int in a list) out of the range of ``dtype``.
    ValueCastError
        A value NumPy refuses with ``ValueError`` (NaN or a non-numeric string into ints).
    ValueTypeError
        A value NumPy refuses with ``TypeError`` (a complex number into ints).
    """
    try:
        if isinstance(value, np.ndarray):
            return value if value.dtype == dtype else value.astype(dtype)  # unsafe, as NumPy
        if is_scalar(value):
            out = np.empty((), dtype=dtype)
            out[()] = value
            return out
        return np.asarray(value, dtype=dtype)
    except OverflowError as e:
        raise ValueOverflowError(_message(where, value, dtype, e)) from e
    except TypeError as e:
        raise ValueTypeError(_message(where, value, dtype, e)) from e
    except ValueError as e:
        raise ValueCastError(_message(where, value, dtype, e)) from e


def _message(where: str, value: Any, dtype: np.dtype, e: BaseException) -> str:
    if isinstance(value, np.ndarray):
        return (f"{where}: cannot store values of dtype {value.dtype} (shape {value.shape}) "
                f"as {dtype}: {e}; nothing was written")
    shown = repr(value)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return f"{where}: cannot store {shown} as {dtype}: {e}; nothing was written"
