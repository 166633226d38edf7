"""Normalising selections.

A *basic* selection is an int, a slice (any step, negative included), an
Ellipsis, or a tuple of those, as in NumPy.  :func:`normalize_basic` turns it
into per-dimension ``start``/``step``/``count`` int64 arrays (selected
indices ``start + k*step`` for ``k < count``) plus which dimensions an int
dropped; :func:`zarrfast.kernels.project` turns that into one projection
table for all chunks.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.errors import BoundsCheckError, IndexingError

__all__ = ["BasicSelection", "normalize_basic", "normalize_plain", "is_basic_selection"]


@dataclass(frozen=True, slots=True)
class BasicSelection:
    """A normalised basic selection.

    Attributes
    ----------
    start, step, count
        int64 arrays of the array's rank: dimension ``d`` selects
        ``start[d] + k*step[d]`` for ``0 <= k < count[d]``.
    dropped
        For each dimension, whether an integer index removed it from the result.
    """

    start: np.ndarray
    step: np.ndarray
    count: np.ndarray
    dropped: tuple[bool, ...]

    @property
    def full_shape(self) -> tuple[int, ...]:
        """Result shape keeping int-indexed dimensions as length 1."""
        return tuple(self.count.tolist())

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Result shape as NumPy gives it."""
        if True not in self.dropped:  # (slices only: the common case, without a loop)
            return tuple(self.count.tolist())
        return tuple(c for c, d in zip(self.count.tolist(), self.dropped, strict=True) if not d)


def _is_int(x: object) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iu":
        return True
    return False


def is_basic_selection(selection: object) -> bool:
    sel = selection if isinstance(selection, tuple) else (selection,)
    return all(_is_int(s) or isinstance(s, slice) or s is Ellipsis for s in sel)


def expand_ellipsis(sel: tuple, ndim: int, selection: object) -> tuple:
    """``sel`` with its Ellipsis (or the missing trailing dimensions) as full slices;
    :class:`IndexingError` for several Ellipses or too many indices."""
    n_ellipsis = sum(1 for s in sel if s is Ellipsis)
    if n_ellipsis > 1:
        raise IndexingError(f"selection {selection!r} has more than one Ellipsis")
    n_given = len(sel) - n_ellipsis
    if n_given > ndim:
        raise IndexingError(
            f"too many indices for array: array has {ndim} dimensions, selection "
            f"{selection!r} has {n_given}"
        )
    if n_ellipsis:
        i = next(k for k, s in enumerate(sel) if s is Ellipsis)
        return sel[:i] + (slice(None),) * (ndim - n_given) + sel[i + 1:]
    return sel + (slice(None),) * (ndim - n_given)


def slice_indices(s: slice, n: int, d: int) -> tuple[int, int, int]:
    """``s.indices(n)`` with :class:`IndexingError` (naming dimension ``d``) for
    non-integer bounds or a zero step."""
    if s.step is not None and not _is_int(s.step):
        raise IndexingError(f"slice step {s.step!r} in dimension {d} is not an integer")
    for bound in (s.start, s.stop):
        if bound is not None and not _is_int(bound):
            raise IndexingError(f"slice bound {bound!r} in dimension {d} is not an integer")
    if s.step is not None and operator.index(s.step) == 0:
        raise IndexingError(f"slice step cannot be zero (dimension {d})")
    return s.indices(n)


_ALL = slice(None)


def normalize_basic(selection: object, shape: tuple[int, ...]) -> BasicSelection:
    """Normalise a basic selection against ``shape``.

    Raises
    ------
    BoundsCheckError
        An integer index is out of range.
    IndexingError
        The selection has too many indices, several Ellipses, or an item that
        is not an int, slice or Ellipsis.
    """
    # (``...`` alone, a full read, is every slice(None): the one-call path)
    fast = normalize_plain((_ALL,) * len(shape) if selection is Ellipsis else selection,
                            shape)
    if fast is not None:
        return fast
    sel = selection if isinstance(selection, tuple) else (selection,)
    ndim = len(shape)
    for s in sel:
        if not (_is_int(s) or isinstance(s, slice) or s is Ellipsis):
            if s is None:
                raise IndexingError(
                    f"selection {selection!r}: np.newaxis (None) is not supported; index the "
                    f"result instead"
                )
            raise IndexingError(
                f"selection {selection!r}: item {s!r} of type {type(s).__name__} is not an "
                f"integer, slice or Ellipsis (basic indexing)"
            )
    sel = expand_ellipsis(sel, ndim, selection)

    start = np.zeros(ndim, dtype=np.int64)
    step = np.ones(ndim, dtype=np.int64)
    count = np.zeros(ndim, dtype=np.int64)
    dropped = []
    for d, (s, n) in enumerate(zip(sel, shape, strict=True)):
        if isinstance(s, slice):
            b, e, st = slice_indices(s, n, d)
            c = len(range(b, e, st))
            start[d] = b if c else 0
            step[d] = st
            count[d] = c
            dropped.append(False)
        else:
            i = operator.index(s)
            if i < -n or i >= n:
                raise BoundsCheckError(
                    f"index {i} is out of bounds for dimension {d} with length {n}"
                )
            start[d] = i + n if i < 0 else i
            count[d] = 1
            dropped.append(True)
    return BasicSelection(start, step, count, tuple(dropped))


def normalize_plain(selection: object, shape: tuple[int, ...]) -> BasicSelection | None:
    """:func:`normalize_basic` for the common case, without NumPy scalars: Python
    ints in range and slices of Python ints (or ``None``), no Ellipsis (one kernel
    call, :func:`zarrfast.kernels.normalize_plain`).  ``None`` for anything else,
    which the general path handles (and reports): a selection this normalizes is a
    basic one (:func:`is_basic_selection`), without asking that."""
    got = _kernels.normalize_plain(selection, shape if type(shape) is tuple else tuple(shape))
    return None if got is None else BasicSelection(*got)
