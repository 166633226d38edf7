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
  cast, as NumPy and zarr-python 3.1.6 do: ``np.array([300])`` stores 44;
- a **buffer** (``memoryview``, ``bytearray``: the buffer protocol) is an array, as NumPy
  takes it; ``bytes`` stay a scalar, as in NumPy (``b"12"`` into uint8 stores 12).

Variable-length strings and bytes (``elements``, from :func:`text_elements`) are converted
element by element before any chunk is written, as zarr-python converts them:

- a **string** array (v3 ``string``, v2 ``|O`` with ``vlen-utf8``) stores each element as
  NumPy's ``StringDType`` converts it: ``5`` as ``'5'``, ``None`` as ``'None'``, UTF-8
  ``bytes`` decoded; bytes that are not UTF-8 or a nested sequence are refused;
- a **bytes** array (v3 ``variable_length_bytes``, v2 ``vlen-bytes``) takes ``bytes`` (and
  ``bytearray``, NumPy bytes), stores ``None`` as ``b""`` (as numcodecs and zarr-python
  do), and refuses anything else (a ``str``: zarr-python's ``TypeError``), naming the
  element.

The refusals are raised as :class:`~zarrfast.errors.ValueOverflowError`,
:class:`~zarrfast.errors.ValueCastError` (a ``ValueError``) and
:class:`~zarrfast.errors.ValueTypeError`: the builtin NumPy raises mixed into zarrfast's
hierarchy, naming the array, the value and the data type, with NumPy's error as the cause.
They are raised before anything is written.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from zarrfast.errors import ValueCastError, ValueOverflowError, ValueTypeError

__all__ = ["as_stored", "is_scalar", "text_elements"]

#: NumPy's variable-length string dtype (NumPy 2), the rule for a string array's elements
_STRING = np.dtype(np.dtypes.StringDType()) if hasattr(np.dtypes, "StringDType") else None


def is_scalar(value: Any) -> bool:
    """A Python or NumPy scalar (what NumPy stores element by element, checking range).

    ``np.isscalar`` also says so of a ``memoryview``, which NumPy stores as the array it
    holds: an object with the buffer protocol is a scalar only if it is ``bytes`` or a
    NumPy scalar."""
    if isinstance(value, (str, bytes, np.generic)):
        return True
    if not np.isscalar(value):
        return False
    try:
        memoryview(cast(Any, value))  # (np.isscalar narrowed it to types that may have none)
    except TypeError:
        return True
    return False


def text_elements(metadata: Any) -> type | None:
    """``str`` for an array of variable-length strings, ``bytes`` for one of
    variable-length bytes, else ``None`` (numbers, and object arrays of other codecs)."""
    dtype = metadata.dtype
    if dtype.kind == "T":
        return str
    if dtype.kind != "O":
        return None
    if getattr(metadata, "zarr_format", 3) == 2:
        first: Any = (metadata.filters or ({},))[0]
        key: Any = first.get("id") if isinstance(first, dict) else None
        return {"vlen-utf8": str, "vlen-bytes": bytes}.get(key)
    name: Any = getattr(getattr(metadata, "type_info", None), "name", None)
    return {"string": str, "variable_length_bytes": bytes, "bytes": bytes}.get(name)


def as_stored(value: Any, dtype: np.dtype, *, where: str,
              elements: type | None = None) -> np.ndarray:
    """``value`` as an array of ``dtype``, cast as NumPy 2's ``x[...] = value`` casts it
    (see the module docstring); ``where`` names the array (``"array 'a/b'"``);
    ``elements`` (``str``, ``bytes``: :func:`text_elements`) converts the elements of a
    variable-length string or bytes array as zarr-python does.

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
        if elements is str:
            return _as_strings(value, dtype)
        if isinstance(value, np.ndarray):
            if value.dtype == dtype:
                out = value
            elif value.dtype.kind in "mM" and dtype.kind in "mM":
                # NumPy's astype leaves the bytes of a generic-unit datetime64/timedelta64
                # unswapped between byte orders ('>M8' -> '<M8'); assignment swaps them
                out = np.empty(value.shape, dtype=dtype)
                out[...] = value
            else:
                out = value.astype(dtype)  # unsafe, as NumPy
        elif is_scalar(value):
            out = np.empty((), dtype=dtype)
            out[()] = value
        else:
            out = np.asarray(value, dtype=dtype)
        if elements is bytes:
            out = _as_bytes(out, where)
        return out
    except ValueCastError:
        raise
    except OverflowError as e:
        raise ValueOverflowError(_message(where, value, dtype, e)) from e
    except TypeError as e:
        raise ValueTypeError(_message(where, value, dtype, e)) from e
    except ValueError as e:
        raise ValueCastError(_message(where, value, dtype, e)) from e


def _as_strings(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` as strings, each element as NumPy's ``StringDType`` converts it (which is
    what zarr-python stores), in an array of ``dtype`` (``StringDType`` or ``object``)."""
    if dtype.kind == "O":  # (the common cases, strings already: no conversion)
        if (isinstance(value, np.ndarray) and value.dtype == dtype
                and all(type(x) is str for x in value.reshape(-1).tolist())):
            return value
        if type(value) is list and all(type(x) is str for x in value):
            return np.array(value, dtype=object)
    if _STRING is None:  # NumPy 1: the same rule, element by element
        out = np.asarray(value, dtype=object) if not is_scalar(value) else np.array(
            value, dtype=object)
        return np.frompyfunc(_to_str, 1, 1)(out).astype(dtype) if out.ndim else np.array(
            _to_str(out[()]), dtype=dtype)
    if isinstance(value, np.ndarray):
        out = value if value.dtype == _STRING else value.astype(_STRING)
    elif is_scalar(value):
        out = np.empty((), dtype=_STRING)
        out[()] = value
    else:
        out = np.asarray(value, dtype=_STRING)
    return out if out.dtype == dtype else out.astype(dtype)


def _to_str(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _as_bytes(out: np.ndarray, where: str) -> np.ndarray:
    """The object array ``out`` with ``None`` as ``b""`` and bytes-likes as ``bytes`` (a
    new array if any changes: ``out`` may be the caller's); any other element refused,
    naming it."""
    items = out.reshape(-1).tolist()
    if all(type(x) is bytes for x in items):
        return out
    for i, x in enumerate(items):
        if type(x) is bytes:
            continue
        if x is None or isinstance(x, (bytes, bytearray)):
            items[i] = b"" if x is None else bytes(x)
            continue
        raise ValueTypeError(
            f"{where}: cannot store {x!r} (a {type(x).__name__}, element {i} of the value) "
            f"in an array of variable-length bytes: give bytes (encode a str first); "
            f"nothing was written")
    new = np.empty(len(items), dtype=object)
    new[:] = items
    return new.reshape(out.shape)


def _message(where: str, value: Any, dtype: np.dtype, e: BaseException) -> str:
    if isinstance(value, np.ndarray):
        return (f"{where}: cannot store values of dtype {value.dtype} (shape {value.shape}) "
                f"as {dtype}: {e}; nothing was written")
    shown = repr(value)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return f"{where}: cannot store {shown} as {dtype}: {e}; nothing was written"
