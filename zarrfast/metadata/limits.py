"""Sizes an array may have: every dimension, and the number of chunks along with it, fits
in int64 (NumPy's and the index kernels' type), so every index, chunk coordinate and chunk
number can be computed.  The element and byte counts may exceed int64, as in zarr-python
and tensorstore: a ``(2**40, 2**40)`` array opens lazily, only the chunks a selection
touches exist, and ``size``/``nbytes`` are Python ints."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from zarrfast.errors import MetadataError, MetadataValidationError

__all__ = ["INT64_MAX", "MAX_JSON_DEPTH", "check_array_size", "check_json_depth", "load_json"]

INT64_MAX = 2**63 - 1


def check_array_size(shape: Sequence[int], *, chunks: Sequence[int] | None = None,
                     where: str = "shape") -> None:
    """Refuse a shape with a dimension beyond int64, or, given the (regular) chunk shape,
    whose grid holds more than 2**63-1 chunks, naming it.  (The element count may exceed
    int64: only the chunks a selection touches are read or written.)"""
    if any(s > INT64_MAX for s in shape):
        raise MetadataValidationError(f"{where} {list(shape)} has a length above 2**63-1")
    if chunks is not None and len(chunks) == len(shape) and all(c > 0 for c in chunks):
        n = math.prod(-(-s // c) for s, c in zip(shape, chunks, strict=True))
        if n > INT64_MAX:
            raise MetadataValidationError(
                f"{where} {list(shape)} with chunks {list(chunks)} is a grid of {n} chunks, "
                f"more than 2**63-1")


#: the deepest nesting of lists and objects written in metadata (attributes); what
#: Python's and other JSON readers parse without running out of stack
MAX_JSON_DEPTH = 256


def check_json_depth(value: object, *, where: str) -> None:
    """Refuse ``value`` (attributes about to be written) when its lists and dicts nest
    deeper than :data:`MAX_JSON_DEPTH` -- without recursing, so it cannot itself run out
    of stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise MetadataValidationError(
                f"{where}: nested more than {MAX_JSON_DEPTH} lists or objects deep; refusing "
                f"to write metadata that JSON readers cannot read back")
        stack.extend((c, depth + 1) for c in children)


def load_json(raw: bytes | bytearray | memoryview, key: str) -> Any:
    """A metadata document's JSON, or :class:`MetadataError` naming ``key``."""
    # The NaN/Infinity tokens are not strict JSON, but zarr-python reads and writes
    # them in attributes (xarray's _FillValue: NaN), so they are accepted, and
    # to_json() writes them back the same way.
    try:
        return json.loads(bytes(raw))
    except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise MetadataError(f"{key}: not valid JSON ({e})") from None
    except RecursionError:
        raise MetadataError(f"{key}: JSON nested too deeply") from None
