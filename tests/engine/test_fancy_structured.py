"""Fancy indexing of Zarr v2 structured and object-string arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import zarrfast

from _helpers.fancy import (
    SETTINGS,
    check,
    check_objects,
    coord_selections,
    coordinates,
    masks,
    orth_selections,
    orthogonal_get,
    orthogonal_numpy,
    orthogonal_set,
    string_arrays,
    values,
)

# ---------------------------------------------------------------------------
# structured (v2) and object-string (v2) arrays
# ---------------------------------------------------------------------------

RECORD = np.dtype([("a", "<i4"), ("b", "<f8")])


def records(shape: tuple[int, ...]) -> np.ndarray:
    x = np.zeros(shape, dtype=RECORD)
    n = math.prod(shape)
    x["a"] = np.arange(n).reshape(shape) + 1
    x["b"] = -(np.arange(n).reshape(shape) + 0.5)
    return x


def check_records(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert list(got.dtype.names or ()) == list(want.dtype.names or ())
    for f in want.dtype.names:
        check(got[f], want[f])


@SETTINGS
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), data=st.data())
def test_structured_fields(shape: tuple[int, ...], data: st.DataObject) -> None:
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in shape)
    x = records(shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=chunks, zarr_format=2)
    mode = data.draw(st.sampled_from(["orthogonal", "coordinate", "mask"]))
    field = data.draw(st.sampled_from(["a", "b"]))
    x2 = x.copy()
    if mode == "orthogonal":
        sel, items = data.draw(orth_selections(shape))
        idx, full, out = orthogonal_numpy(x, items)
        check_records(a.oindex[sel], orthogonal_get(x, items))
        check(a.get_orthogonal_selection(sel, fields=field), orthogonal_get(x[field], items))
        check_records(a.get_orthogonal_selection(sel, fields=["b", "a"]),
                      orthogonal_get(x, items)[["b", "a"]])
        value = data.draw(values(out, x.dtype[field]))
        a.set_orthogonal_selection(sel, value, fields=field)
        x2[field] = orthogonal_set(x[field], items, value)
    elif mode == "coordinate":
        sel = data.draw(coord_selections(shape))
        check_records(a.vindex[sel], x[sel])
        check(a.get_coordinate_selection(sel, fields=field), x[field][sel])
        out = np.broadcast_shapes(*(np.shape(s) for s in sel))
        lin = coordinates(sel, shape)
        assume(len(np.unique(lin)) == len(lin))
        value = data.draw(values(out, x.dtype[field]))
        a.set_coordinate_selection(sel, value, fields=field)
        x2[field][sel] = value
    else:
        mask = data.draw(masks(x.size)).reshape(shape)
        check_records(a.vindex[mask], x[mask])
        check(a.get_mask_selection(mask, fields=field), x[field][mask])
        value = data.draw(values((int(mask.sum()),), x.dtype[field]))
        a.set_mask_selection(mask, value, fields=field)
        x2[field][mask] = value
    check_records(a[...], x2)


def test_structured_field_names_in_brackets() -> None:
    x = records((4, 5, 3))
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(3, 2, 2), zarr_format=2)
    check(a["a", [3, 0]], x["a"][[3, 0]])
    check(a["b", [1, 2], [0, 4], 2], x["b"][[1, 2], [0, 4], 2])
    check(a["a", [1, 2], :, [0, 2]], x["a"][[1, 2], :, [0, 2]])
    a["b", [3, 1], :, [2, 2]] = -9.0
    x["b"][[3, 1], :, [2, 2]] = -9.0
    a["a", :, [4, 0], [1, 0]] = np.array([7, 8], dtype="i4")
    x["a"][:, [4, 0], [1, 0]] = np.array([7, 8], dtype="i4")
    check_records(a[...], x)


@SETTINGS
@given(x=string_arrays(), data=st.data())
def test_object_strings(x: np.ndarray, data: st.DataObject) -> None:
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in x.shape)
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=x.shape, chunks=chunks, dtype=str,
                              zarr_format=2)
    assert a.dtype == object
    a[...] = x
    mode = data.draw(st.sampled_from(["orthogonal", "coordinate", "mask", "mixed"]))
    x2 = x.copy()
    if mode == "orthogonal":
        sel, items = data.draw(orth_selections(x.shape))
        want = orthogonal_get(x, items)
        check_objects(a.oindex[sel], want)
        v = np.empty(want.size, dtype=object)
        v[:] = [f"o{i}" for i in range(want.size)]
        a.oindex[sel] = v.reshape(want.shape)
        x2 = orthogonal_set(x, items, v.reshape(want.shape))
    elif mode == "coordinate":
        sel = data.draw(coord_selections(x.shape))
        want = np.asarray(x[sel])
        check_objects(a.vindex[sel], want)
        lin = coordinates(sel, x.shape)
        assume(len(np.unique(lin)) == len(lin))
        a.vindex[sel] = "new"
        x2[sel] = "new"
    elif mode == "mask":
        mask = data.draw(masks(x.size)).reshape(x.shape)
        check_objects(a[mask], x[mask])
        a.vindex[mask] = "m"
        x2[mask] = "m"
    else:
        assume(x.ndim >= 2 and x.shape[0] and x.shape[-1])
        sel = ([0, -1, 0], Ellipsis, [x.shape[-1] - 1, 0, 0])
        check_objects(a[sel], x[sel])
        a[sel] = "z"
        x2[sel] = "z"
    check_objects(a[...], x2)
