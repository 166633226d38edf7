"""NumPy's mixed advanced indexing (which zarr-python refuses; zarrfast does what NumPy
does) and the dispatch of ``a[...]``: like zarr-python where zarr-python has an
answer (its own dispatch predicates say which), else like NumPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import zarrfast

from _helpers.fancy import (
    KINDS,
    SETTINGS,
    Case,
    cases,
    check,
    check_scatter,
    int_arrays,
    ints,
    is_fancy_item,
    masks,
    orthogonal_get,
    slices,
    values,
    zarr_dispatch,
    zarr_or_none,
    zarr_python,
)

# ---------------------------------------------------------------------------
# NumPy mixed advanced indexing (zarr-python refuses; zarrfast does what NumPy does)
# ---------------------------------------------------------------------------


@st.composite
def mixed_selections(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Two or more index arrays (or masks) with slices or an Ellipsis (and maybe ints),
    or index arrays with an Ellipsis (which may stand for no dimension, even between index
    arrays): selections zarr-python refuses."""
    ndim = len(shape)
    bnd = draw(st.integers(1, 2))
    bshape = draw(st.lists(st.integers(0, 3), min_size=bnd, max_size=bnd))
    items: list[Any] = []
    for n in shape:
        role = draw(st.sampled_from(["slice", "array", "array", "int", "mask"] if n else
                                    ["slice"]))
        if role == "slice":
            items.append(draw(slices(n)))
        elif role == "int":
            items.append(draw(ints(n)))
        elif role == "mask":
            items.append(draw(masks(n)))
        else:
            ashape = [b if (b == 0 or draw(st.booleans())) else 1 for b in bshape]
            if draw(st.booleans()) and len(ashape) > 1 and ashape[0] != 0:
                ashape.pop(0)
            arr = draw(int_arrays(n, tuple(ashape)))
            items.append(arr.tolist() if arr.ndim == 1 and draw(st.booleans()) else arr)
    sel: list[Any] = list(items)
    if draw(st.booleans()):  # an Ellipsis standing for zero or more full slices
        i = draw(st.integers(0, ndim))
        j = draw(st.integers(i, ndim))
        sel = [*items[:i], Ellipsis, *items[j:]]
    arrays = [s for s in sel if is_fancy_item(s)]
    has_ellipsis = any(s is Ellipsis for s in sel)
    assume((len(arrays) >= 2 and (has_ellipsis or any(isinstance(s, slice) for s in sel)))
           or (len(arrays) >= 1 and has_ellipsis))
    return tuple(sel)


def _numpy_or_error(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except IndexError as e:
        return e


@SETTINGS
@given(case=cases(min_ndim=2, max_ndim=4, max_side=5), data=st.data())
def test_numpy_mixed_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(mixed_selections(case.shape))
    if zarr_python is not None:  # zarr-python would refuse these
        assert zarr_dispatch(sel, len(case.shape)) == "basic"
    want = _numpy_or_error(lambda: np.asarray(x[sel]))
    if isinstance(want, IndexError):  # e.g. arrays (or masks) that don't broadcast
        with pytest.raises(IndexError):
            a[sel]
        return
    check(a[sel], want)
    value = data.draw(values(want.shape, x.dtype))
    x2 = x.copy()
    x2[sel] = value
    a[sel] = value
    check(a[...], x2)


MIXED_EXAMPLES = [
    ("arrays_around_slice", (5, 6, 7), ([1, 2], slice(None), [0, 3])),
    ("array_int_slice", (5, 6, 7), ([0, 1], 2, slice(1, 3))),
    ("ellipsis_array", (5, 6, 7), (Ellipsis, [4, 0])),
    ("slice_then_arrays", (5, 6, 7), (slice(None, None, -2), np.array([[0], [5]]), [1, -1])),
    ("arrays_then_slice", (5, 6, 7), ([4, 4, 0], [-1, 2, 2], slice(2, None))),
    ("separated_arrays_4d", (3, 4, 5, 6), ([2, 0], slice(1, 3), 3, [5, 1])),
    ("adjacent_arrays_4d", (3, 4, 5, 6), (slice(None), [3, 0], np.array([[1], [4]]), 2)),
    ("arrays_with_ellipsis", (5, 6, 7), ([1, 2], [3, 4], Ellipsis)),
    ("mask_and_array", (5, 6, 7), (slice(None), np.array([1, 0, 1, 0, 0, 0], bool), [6, 0])),
    ("empty_arrays", (5, 6, 7), (np.zeros(0, int), slice(None), np.zeros(0, int))),
]


@pytest.mark.parametrize("shape,sel", [m[1:] for m in MIXED_EXAMPLES],
                         ids=[m[0] for m in MIXED_EXAMPLES])
@pytest.mark.parametrize("kind", KINDS)
def test_numpy_mixed_examples(kind: str, shape: tuple[int, ...], sel: tuple[Any, ...]) -> None:
    case = Case(kind, shape, (2, 4, 3, 5)[:len(shape)],
                (4, 4, 6, 5)[:len(shape)] if kind == "sharded" else None, "<i4", None)
    x, a = case.data, case.fast()
    check(a[sel], x[sel])
    v = -np.arange(np.asarray(x[sel]).size, dtype="i4").reshape(np.shape(x[sel])) - 2
    x[sel] = v
    a[sel] = v
    check(a[...], x)


@st.composite
def any_selections(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Anything NumPy might take for ``x[sel]``: ints, 0-d index arrays, slices, an
    Ellipsis, 1-d and multi-dimensional index arrays and (nested) lists, masks over one or
    more dimensions (of those dimensions' shape); index arrays drawn broadcastable (masks'
    counts need not broadcast)."""
    ndim = len(shape)
    bnd = draw(st.integers(1, 2))
    bshape = draw(st.lists(st.integers(0, 3), min_size=bnd, max_size=bnd))
    items: list[Any] = []
    d, ellipsis = 0, False
    # (after an Ellipsis, name every remaining dimension: the Ellipsis then stands for
    # exactly the dimensions drawn for it and the masks line up with their dimensions)
    while d < ndim and (ellipsis or not (items and draw(st.integers(0, 6)) == 0)):
        if not ellipsis and draw(st.integers(0, 5)) == 0:
            items.append(Ellipsis)
            ellipsis = True
            d += draw(st.integers(0, ndim - d))
            continue
        n = shape[d]
        kind = draw(st.sampled_from(
            ["slice", "list", "array", "nested", "mask", "kmask"]
            + (["int", "zero_d", "array"] if n else [])))
        if kind == "slice":
            items.append(draw(slices(n)))
        elif kind == "int":
            items.append(draw(ints(n)))
        elif kind == "zero_d":
            items.append(np.array(draw(st.integers(-n, n - 1))))
        elif kind in ("mask", "kmask"):
            k = draw(st.integers(1, ndim - d)) if kind == "kmask" else 1
            m = draw(masks(math.prod(shape[d:d + k]))).reshape(shape[d:d + k])
            items.append(m if k > 1 or draw(st.booleans()) else m.tolist())
            d += k
            continue
        else:
            ashape = [b if (b == 0 or draw(st.booleans())) else 1 for b in bshape]
            if kind == "list" and len(ashape) > 1 and ashape[0] != 0:
                ashape.pop(0)
            if not n and math.prod(ashape):
                ashape = [0]
            arr = draw(int_arrays(n, tuple(ashape)))
            items.append(arr.tolist() if kind in ("list", "nested") else arr)
        d += 1
    return tuple(items)


def _flat_item(s: Any) -> bool:
    return isinstance(s, (int, np.integer, slice)) or (
        is_fancy_item(s) and np.ndim(s) == 1 and np.asarray(s).dtype.kind in "iub")


def expected_getitem(case: Case, sel: tuple[Any, ...]) -> tuple[Any, str]:
    """What ``a[sel]`` must give (an IndexError instance where it must raise one), and
    from where: "zarr", "orthogonal" or "numpy".

    zarr-python's ``z[sel]`` where it dispatches and answers; where it dispatches to an
    orthogonal selection and fails anyway (zero-length dimensions, negative steps),
    zarr-python's orthogonal semantics computed with NumPy; else NumPy's ``x[sel]``.
    Coordinates that are all scalars are left to NumPy (a 0-d result; zarr-python's
    vindex returns shape (1,)).  NumPy integer scalars keep their type: zarr-python's
    orthogonal dispatch takes Python ints only (see
    test_numpy_integer_scalars_with_an_index_array)."""
    x, ndim = case.data, len(case.shape)
    how = zarr_dispatch(sel, ndim)
    all_scalar = how == "vindex" and not any(np.ndim(s) for s in sel)
    if zarr_python is not None and not all_scalar:
        got = zarr_or_none(lambda: case.zarr()[sel])
        if got is not None:
            return got, "zarr"
    if how == "orthogonal" and all(map(_flat_item, sel)):
        items = list(sel) + [slice(None)] * (ndim - len(sel))
        return _numpy_or_error(lambda: orthogonal_get(x, items)), "orthogonal"
    return _numpy_or_error(lambda: np.asarray(x[sel], dtype=x.dtype)), "numpy"


@settings(SETTINGS, max_examples=300)
@given(case=cases(kinds=("v3", "sharded", "v2_F"), min_ndim=1, max_ndim=4, max_side=5),
       data=st.data())
def test_getitem_is_zarr_python_else_numpy(case: Case, data: st.DataObject) -> None:
    """``a[sel]`` is zarr-python's ``z[sel]`` where zarr-python accepts ``sel``, else
    NumPy's ``x[sel]`` (or an IndexError where NumPy raises one); writes likewise."""
    x, a = case.data, case.fast()
    sel = data.draw(any_selections(case.shape))
    # (an empty list with a mask: see test_empty_list_with_mask)
    assume(not (any(isinstance(s, list) and not s for s in sel) and any(
        np.asarray(s).dtype == bool for s in sel if is_fancy_item(s))))
    want, source = expected_getitem(case, sel)
    if isinstance(want, IndexError):
        with pytest.raises(IndexError):
            a[sel]
        return
    check(a[sel], want)
    if source == "zarr":
        return  # (writes through zarr-python: test_differential_set)
    value = data.draw(values(want.shape, x.dtype))
    pos = np.arange(x.size).reshape(x.shape)
    positions = orthogonal_get(pos, list(sel) + [slice(None)] * (pos.ndim - len(sel))) if (
        source == "orthogonal") else pos[sel]
    a[sel] = value
    check_scatter(a[...], x, np.asarray(positions).ravel(), value, want.shape)


# ---------------------------------------------------------------------------
# more selections zarr-python refuses: NumPy's result
# ---------------------------------------------------------------------------

REFUSED_BY_ZARR_PYTHON = [
    ("two_arrays_fewer_than_ndim", ([0, 1], [1, 2])),
    ("array_mask_int", ([0, 1], np.array([True, False, True, False, False]), 0)),
    ("int_mask_array", (1, np.array([True, False, True, False, False]), [1, 2])),
    ("int_ellipsis_array", (2, Ellipsis, [0, 1])),
    ("int_slice_array_ellipsis", (2, slice(None), [0, 1], Ellipsis)),
    ("nested_list_with_slice", (slice(None), [[0, 1], [2, 3]], [1, 2])),
    ("nested_list_coordinate", ([[1], [2]], [0, 1, 2], 0)),
    ("one_2d_array_with_slice", (slice(None), np.array([[0, 1], [2, 3]]))),
    ("one_2d_array_with_ellipsis", (Ellipsis, np.array([[0, 1], [5, 3]]))),
    ("ellipsis_for_no_dims_between_arrays", (slice(None), [0, 2], Ellipsis, [1, 3])),
    ("mask_2d_on_3d", (np.eye(4, 5, dtype=bool),)),
    ("mask_2d_then_slice", (np.eye(4, 5, dtype=bool), slice(1, 4))),
]


@pytest.mark.parametrize("sel", [d[1] for d in REFUSED_BY_ZARR_PYTHON],
                         ids=[d[0] for d in REFUSED_BY_ZARR_PYTHON])
@pytest.mark.parametrize("kind", ["v3", "sharded"])
def test_numpy_where_zarr_python_refuses(kind: str, sel: tuple[Any, ...]) -> None:
    """Several index arrays without a slice, a mask among index arrays, one index array
    and ints around an Ellipsis, an Ellipsis for no dimension between index arrays (NumPy
    then moves the broadcast dimensions first), nested lists, multi-dimensional index
    arrays among slices, masks over some of the dimensions."""
    case = Case(kind, (4, 5, 6), (2, 3, 4), (4, 3, 4) if kind == "sharded" else None, "<i4",
                None)
    x, a = case.data, case.fast()
    check(a[sel], x[sel])
    v = -np.arange(np.asarray(x[sel]).size, dtype="i4").reshape(np.shape(x[sel])) - 2
    x[sel] = v
    a[sel] = v
    check(a[...], x)


@pytest.mark.parametrize("sel", [d[1] for d in REFUSED_BY_ZARR_PYTHON],
                         ids=[d[0] for d in REFUSED_BY_ZARR_PYTHON])
@pytest.mark.interop
def test_these_are_refused_by_zarr_python(sel: tuple[Any, ...]) -> None:
    """So the promise for them is NumPy's result."""
    pytest.importorskip("zarr")
    z = Case("v3", (4, 5, 6), (2, 3, 4), None, "<i8", None).zarr()
    assert zarr_or_none(lambda: z[sel]) is None


MISSIZED_MASKS = [
    ("mask_too_short_before_ellipsis", (np.array([True, False]), Ellipsis, [0, 1])),
    ("bool_list_too_short_after_ellipsis", (Ellipsis, [True, False, True])),
    ("mask_too_long_with_arrays", ([0, 3], slice(None), np.array([True] + [False] * 6))),
    ("mask_2d_wrong_shape", (np.ones((4, 4), bool), [0])),
]


@pytest.mark.parametrize("sel", [m[1] for m in MISSIZED_MASKS],
                         ids=[m[0] for m in MISSIZED_MASKS])
def test_missized_masks_among_index_arrays(sel: tuple[Any, ...]) -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3, 4))
    with pytest.raises(IndexError):
        x[sel]
    with pytest.raises(IndexError):
        a[sel]
    with pytest.raises(IndexError):
        a[sel] = 0
    check(a[...], x)


def test_numpy_integer_scalars_with_an_index_array() -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3, 4))
    check(a[2, :, [0, 1]], x[2][:, [0, 1]])  # zarr-python's orthogonal selection
    sel = (np.int64(2), slice(None), [0, 1])
    if zarr_python is not None:
        z = Case("v3", (4, 5, 6), (2, 3, 4), None, "<i8", None).zarr()
        assert zarr_or_none(lambda: z[sel]) is None  # refused by zarr-python
    check(a[sel], x[sel])


EMPTY_LIST_WITH_MASK = [
    ("mask_then_empty_list", (3, 4), (np.array([True, False, True]), [])),
    ("empty_list_then_bool_list", (3, 4), ([], [True, False, True, True])),
    ("zero_length", (0, 2), ([], [True, True])),
]


@pytest.mark.parametrize("shape,sel", [e[1:] for e in EMPTY_LIST_WITH_MASK],
                         ids=[e[0] for e in EMPTY_LIST_WITH_MASK])
def test_empty_list_with_mask(shape: tuple[int, ...], sel: tuple[Any, ...]) -> None:
    x = np.arange(math.prod(shape)).reshape(shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3))
    if zarr_python is not None:
        assert zarr_dispatch(sel, len(shape)) == "basic"  # refused by zarr-python
    with pytest.raises(IndexError):
        x[sel]
    with pytest.raises(IndexError):
        a[sel]
