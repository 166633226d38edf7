"""Orthogonal (``oindex``), coordinate (``vindex``) and mask selections against NumPy
(Hypothesis), reads and writes, on odd shapes and chunkings of every array kind.

Expected values come from NumPy on the same data (``x[np.ix_(...)]`` for orthogonal
selections, ``x[sel]`` otherwise).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import zarrfast

from _helpers.fancy import (
    SETTINGS,
    Case,
    cases,
    check,
    check_scatter,
    coord_selections,
    coordinates,
    is_fancy_item,
    masks,
    orth_selections,
    orthogonal_get,
    orthogonal_numpy,
    orthogonal_set,
    values,
    zarr_dispatch,
)

# ---------------------------------------------------------------------------
# orthogonal selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(), data=st.data())
def test_orthogonal_get(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel, items = data.draw(orth_selections(case.shape))
    want = orthogonal_get(x, items)
    check(a.oindex[sel], want)
    check(a.get_orthogonal_selection(sel), want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_orthogonal_selection(sel, out=out) is out
    check(out, want)
    sels = sel if isinstance(sel, tuple) else (sel,)
    how = zarr_dispatch(sel, len(case.shape))
    if how == "orthogonal" or (how == "basic" and not any(map(is_fancy_item, sels))) or (
            how == "vindex" and len(case.shape) == 1):
        check(a[sel], want)  # where zarr-python's a[sel] is this orthogonal selection


@SETTINGS
@given(case=cases(), data=st.data())
def test_orthogonal_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel, items = data.draw(orth_selections(case.shape))
    _, _, out = orthogonal_numpy(x, items)
    value = data.draw(values(out, x.dtype))
    sels = sel if isinstance(sel, tuple) else (sel,)
    how = zarr_dispatch(sel, len(case.shape))
    ways = ["oindex", "method"]
    if how == "orthogonal" or (how == "basic" and not any(map(is_fancy_item, sels))):
        ways.append("[]")
    way = data.draw(st.sampled_from(ways))
    if way == "oindex":
        a.oindex[sel] = value
    elif way == "method":
        a.set_orthogonal_selection(sel, value)
    else:
        a[sel] = value
    check(a[...], orthogonal_set(x, items, value))


def test_orthogonal_repeated_indices_last_write_wins() -> None:
    x = np.arange(6 * 7, dtype="i4").reshape(6, 7)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(4, 3))
    rows, cols = [5, 0, 5, -1, 2], [6, 0, 3, 0, -1]
    v = -np.arange(25, dtype="i4").reshape(5, 5) - 1
    a.oindex[rows, cols] = v
    x[np.ix_(rows, cols)] = v
    check(a[...], x)
    # row 5 is rows[0], rows[2] and rows[3]; column 6 is cols[0] and cols[4]
    assert a[5, 6] == v[3, 4]


# ---------------------------------------------------------------------------
# coordinate selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_coordinate_get(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(coord_selections(case.shape))
    want = np.asarray(x[sel], dtype=x.dtype)  # (a 0-d result is a native-endian scalar)
    check(a.vindex[sel], want)
    check(a.get_coordinate_selection(sel), want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_coordinate_selection(sel, out=out) is out
    check(out, want)
    if zarr_dispatch(sel, len(case.shape)) == "vindex":
        check(a[sel], want)


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_coordinate_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    sel = data.draw(coord_selections(case.shape))
    out_shape = np.broadcast_shapes(*(np.shape(s) for s in sel))
    value = data.draw(values(out_shape, x.dtype))
    ways = ["vindex", "method"] + (["[]"] if zarr_dispatch(sel, len(case.shape)) == "vindex"
                                   else [])
    way = data.draw(st.sampled_from(ways))
    if way == "vindex":
        a.vindex[sel] = value
    elif way == "method":
        a.set_coordinate_selection(sel, value)
    else:
        a[sel] = value
    check_scatter(a[...], x, coordinates(sel, case.shape), value, out_shape)


def test_zero_d_index_array_in_brackets() -> None:
    """zarr-python dispatches a 0-d integer array among coordinate arrays to vindex."""
    x = np.arange(12).reshape(3, 4)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 2))
    sel = (np.array([0, 2]), np.array(1))
    check(a.vindex[sel], x[sel])
    check(a[sel], x[sel])
    a[sel] = [-1, -2]
    x[sel] = [-1, -2]
    check(a[...], x)


def test_coordinate_unique_write_matches_numpy() -> None:
    x = np.arange(5 * 6 * 4, dtype="f8").reshape(5, 6, 4)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 4, 3))
    sel = (np.array([[4, -5], [2, 0]]), np.array([[-1], [3]]), 2)
    v = np.array([[10.0, 11.0], [12.0, 13.0]])
    a.vindex[sel] = v
    x[sel] = v
    check(a[...], x)
    check(a[sel], x[sel])


# ---------------------------------------------------------------------------
# mask selections
# ---------------------------------------------------------------------------


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_mask_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    mask = data.draw(masks(x.size)).reshape(x.shape)
    want = x[mask]
    check(a.vindex[mask], want)
    check(a.get_mask_selection(mask), want)
    check(a[mask], want)
    out = np.full(want.shape, 99, dtype=x.dtype)
    assert a.get_mask_selection(mask, out=out) is out
    check(out, want)
    value = data.draw(values(want.shape, x.dtype))
    way = data.draw(st.sampled_from(["vindex", "method", "[]"]))
    if way == "vindex":
        a.vindex[mask] = value
    elif way == "method":
        a.set_mask_selection(mask, value)
    else:
        a[mask] = value
    x2 = x.copy()
    x2[mask] = value
    check(a[...], x2)
