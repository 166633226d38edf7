"""The errors bad fancy selections raise: out of bounds (the same type as zarr-python),
bad selections, values that do not broadcast, writes to read-only arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import BoundsCheckError, IndexingError, ReadOnlyError

from _helpers.fancy import Case, check

# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def _arr2d() -> zarrfast.Array:
    return zarrfast.create_array(zarrfast.MemoryStore(), data=np.arange(5 * 7).reshape(5, 7),
                                 chunks=(2, 3))


OUT_OF_BOUNDS = [
    ("oindex_array", lambda a: a.oindex[[0, 5], :], 0, 5, 5),
    ("oindex_negative", lambda a: a.oindex[:, [-8]], 1, -8, 7),
    ("oindex_int", lambda a: a.oindex[1, 7], 1, 7, 7),
    ("vindex", lambda a: a.vindex[[0, 1], [2, 7]], 1, 7, 7),
    ("vindex_negative", lambda a: a.vindex[[-6], [0]], 0, -6, 5),
    ("getitem_coordinate", lambda a: a[[0, 9], [1, 2]], 0, 9, 5),
    ("getitem_orthogonal", lambda a: a[:, [1, 70]], 1, 70, 7),
    ("set_oindex", lambda a: a.oindex.__setitem__(([5], slice(None)), 1), 0, 5, 5),
    ("set_vindex", lambda a: a.vindex.__setitem__(([1], [-9]), 1), 1, -9, 7),
]


@pytest.mark.parametrize("fn,dim,index,bound", [c[1:] for c in OUT_OF_BOUNDS],
                         ids=[c[0] for c in OUT_OF_BOUNDS])
def test_out_of_bounds(fn: Callable[[Any], Any], dim: int, index: int, bound: int) -> None:
    a = _arr2d()
    with pytest.raises(BoundsCheckError) as info:
        fn(a)
    assert isinstance(info.value, IndexError)
    msg = str(info.value)
    assert f"dimension {dim}" in msg and str(index) in msg and str(bound) in msg, msg
    check(a[...], np.arange(5 * 7).reshape(5, 7))  # a failed write changes nothing


def test_out_of_bounds_mixed_and_blocks() -> None:
    x = np.arange(4 * 5 * 6).reshape(4, 5, 6)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 2, 4))
    with pytest.raises(BoundsCheckError, match="dimension 2") as info:
        a[[0, 1], :, [1, 6]]
    assert "6" in str(info.value)
    with pytest.raises(BoundsCheckError, match="dimension 1"):
        a.blocks[0, 3]  # 3 blocks along dimension 1
    with pytest.raises(BoundsCheckError):
        a.blocks[-3]
    check(a.blocks[-2], x[:2])


@pytest.mark.parametrize("fn", [c[1] for c in OUT_OF_BOUNDS], ids=[c[0] for c in OUT_OF_BOUNDS])
@pytest.mark.interop
def test_out_of_bounds_same_type_as_zarr_python(fn: Callable[[Any], Any]) -> None:
    pytest.importorskip("zarr")
    z = Case("v3", (5, 7), (2, 3), None, "<i8", None).zarr()
    with pytest.raises(IndexError) as zinfo:
        fn(z)
    with pytest.raises(IndexError) as finfo:
        fn(_arr2d())
    assert type(finfo.value).__name__ == type(zinfo.value).__name__ == "BoundsCheckError"


BAD_SELECTIONS = [
    ("mask_too_short", lambda a: a.oindex[np.ones(4, bool), :]),
    ("mask_too_long", lambda a: a.oindex[:, [True] * 8]),
    ("mask_wrong_length_getitem", lambda a: a[np.ones(4, bool), [1, 2]]),
    ("mask_wrong_shape_vindex", lambda a: a.vindex[np.ones((4, 7), bool)]),
    ("mask_wrong_shape_getitem", lambda a: a[np.ones((5, 6), bool)]),
    ("mask_wrong_ndim_vindex", lambda a: a.vindex[np.ones((5, 7, 1), bool)]),
    ("too_many_oindex", lambda a: a.oindex[[0], [1], [2]]),
    ("too_many_vindex", lambda a: a.vindex[[0], [1], [2]]),
    ("too_many_getitem", lambda a: a[[0], [1], [2]]),
    ("too_many_mixed", lambda a: a[[0], :, [2]]),
    ("too_many_blocks", lambda a: a.blocks[0, 0, 0]),
    ("too_few_vindex", lambda a: a.vindex[[0, 1],]),
    ("float_oindex", lambda a: a.oindex[np.array([0.0, 1.0]), :]),
    ("float_vindex", lambda a: a.vindex[np.array([0.0, 1.0]), np.array([0, 1])]),
    ("float_getitem", lambda a: a[np.array([0.0, 1.0])]),
    ("float_mixed", lambda a: a[[0, 1], ..., np.array([1.5])]),
    ("vindex_no_broadcast", lambda a: a.vindex[[0, 1, 2], [0, 1]]),
    ("block_step", lambda a: a.blocks[::2]),
    ("block_array", lambda a: a.blocks[[0, 1]]),
]


@pytest.mark.parametrize("fn", [c[1] for c in BAD_SELECTIONS], ids=[c[0] for c in BAD_SELECTIONS])
def test_bad_selections(fn: Callable[[Any], Any]) -> None:
    with pytest.raises(IndexingError) as info:
        fn(_arr2d())
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("fn", [c[1] for c in BAD_SELECTIONS], ids=[c[0] for c in BAD_SELECTIONS])
@pytest.mark.interop
def test_bad_selections_refused_by_zarr_python_too(fn: Callable[[Any], Any]) -> None:
    """Where zarr-python rejects the selection as well, both raise an IndexError (except
    broadcasting coordinate arrays, a ValueError in zarr-python)."""
    pytest.importorskip("zarr")
    z = Case("v3", (5, 7), (2, 3), None, "<i8", None).zarr()
    try:
        fn(z)
    except (IndexError, ValueError):
        pass
    else:
        pytest.skip("zarr-python accepts this selection (mixed NumPy indexing)")
    with pytest.raises(IndexError):
        fn(_arr2d())


BAD_VALUES = [
    pytest.param(lambda a: a.oindex.__setitem__(([0, 1], slice(None)), np.zeros((3, 7))),
                 id="oindex"),
    pytest.param(lambda a: a.set_orthogonal_selection((1, [2, 3]), np.zeros(3)),
                 id="oindex_method"),
    pytest.param(lambda a: a.vindex.__setitem__(([0, 1], [0, 1]), np.zeros(3)), id="vindex"),
    pytest.param(lambda a: a.__setitem__(([0, 1], [0, 1]), np.zeros((2, 2))),
                 id="getitem_coordinate"),
    pytest.param(lambda a: a.vindex.__setitem__(np.eye(5, 7, dtype=bool), np.zeros(4)),
                 id="mask"),
    pytest.param(lambda a: a.__setitem__(np.eye(5, 7, dtype=bool), np.zeros(6)),
                 id="mask_getitem"),
    pytest.param(lambda a: a.blocks.__setitem__(0, np.zeros((2, 6))), id="blocks"),
    pytest.param(lambda a: a.__setitem__(([1, 2], ..., [0, 3]), np.zeros(3)), id="mixed"),
]


@pytest.mark.parametrize("fn", BAD_VALUES)
def test_value_does_not_broadcast(fn: Callable[[Any], Any]) -> None:
    a = _arr2d()
    with pytest.raises(IndexingError):
        fn(a)
    check(a[...], np.arange(5 * 7).reshape(5, 7))


READ_ONLY_WRITES = [
    ("oindex", lambda a: a.oindex.__setitem__(([0, 3], slice(None)), 1)),
    ("set_orthogonal_selection", lambda a: a.set_orthogonal_selection((1, [2]), 1)),
    ("getitem_orthogonal", lambda a: a.__setitem__((slice(None), [1, 2]), 1)),
    ("vindex", lambda a: a.vindex.__setitem__(([0], [1]), 1)),
    ("set_coordinate_selection", lambda a: a.set_coordinate_selection(([0], [1]), 1)),
    ("getitem_coordinate", lambda a: a.__setitem__(([0, 1], [1, 2]), 1)),
    ("vindex_mask", lambda a: a.vindex.__setitem__(np.eye(5, 7, dtype=bool), 1)),
    ("set_mask_selection", lambda a: a.set_mask_selection(np.eye(5, 7, dtype=bool), 1)),
    ("getitem_mask", lambda a: a.__setitem__(np.eye(5, 7, dtype=bool), 1)),
    ("mixed", lambda a: a.__setitem__(([0, 1], ..., [1, 2]), 1)),
    ("blocks", lambda a: a.blocks.__setitem__((0, 1), 1)),
    ("set_block_selection", lambda a: a.set_block_selection((0, 1), 1)),
]


@pytest.mark.parametrize("fn", [c[1] for c in READ_ONLY_WRITES],
                         ids=[c[0] for c in READ_ONLY_WRITES])
@pytest.mark.parametrize("kind", ["v3", "sharded", "v2_F"])
def test_read_only(tmp_path: Any, kind: str, fn: Callable[[Any], Any]) -> None:
    case = Case(kind, (5, 7), (2, 3), (4, 6) if kind == "sharded" else None, "<i4", None)
    case.fast(zarrfast.LocalStore(tmp_path / "a.zarr"))
    r = zarrfast.open_array(tmp_path / "a.zarr", mode="r")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(ReadOnlyError):
        fn(r)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    check(r[...], case.data)
