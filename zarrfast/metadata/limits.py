"""Sizes an array may have: its element count and its byte count fit in int64 (NumPy's
and the index kernels' type), so every offset into it can be computed."""

from __future__ import annotations

import math
from collections.abc import Sequence

from zarrfast.errors import MetadataValidationError

__all__ = ["INT64_MAX", "MAX_JSON_DEPTH", "check_array_size", "check_json_depth"]

INT64_MAX = 2**63 - 1


def check_array_size(shape: Sequence[int], itemsize: int, *, where: str = "shape") -> None:
    """Refuse a shape whose element count, or byte count at ``itemsize`` bytes an element,
    does not fit in int64, naming it.  (An array that large still opens lazily: only the
    chunks a selection touches exist; it is the offsets that must be computable.)"""
    n = math.prod(shape)
    if any(s > INT64_MAX for s in shape) or n > INT64_MAX:
        raise MetadataValidationError(f"{where} {list(shape)} has {n} elements, more than "
                                      f"2**63-1")
    if n * max(itemsize, 1) > INT64_MAX:
        raise MetadataValidationError(
            f"{where} {list(shape)} of {itemsize}-byte elements holds {n * itemsize} bytes, "
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
