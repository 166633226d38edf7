"""Block selections (``a.blocks``), and fancy indexing of 0-d and zero-length arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import IndexingError

from _helpers.fancy import KINDS, SETTINGS, Case, block_selections, cases, check, values

# ---------------------------------------------------------------------------
# block selections
# ---------------------------------------------------------------------------


def block_region(items: list[Any], block: tuple[int, ...], grid: tuple[int, ...]
                 ) -> tuple[slice, ...]:
    """The region of the array the blocks ``items`` name (ints keep their dimension)."""
    out = []
    for s, c, g in zip(items, block, grid, strict=True):
        if isinstance(s, slice):
            b, e, _ = s.indices(g)
            out.append(slice(b * c, max(b, e) * c))
        else:
            i = int(s) % g
            out.append(slice(i * c, (i + 1) * c))
    return tuple(out)


@SETTINGS
@given(case=cases(min_ndim=1), data=st.data())
def test_blocks_get_and_set(case: Case, data: st.DataObject) -> None:
    x, a = case.data, case.fast()
    block = case.block_shape
    assert (a.shards or a.chunks) == block
    grid = tuple(-(-n // c) for n, c in zip(case.shape, block, strict=True))
    sel, items = data.draw(block_selections(grid))
    region = block_region(items, block, grid)
    want = x[region]
    check(a.blocks[sel], want)
    check(a.get_block_selection(sel), want)
    value = data.draw(values(want.shape, x.dtype))
    if data.draw(st.booleans()):
        a.blocks[sel] = value
    else:
        a.set_block_selection(sel, value)
    x2 = x.copy()
    x2[region] = value
    check(a[...], x2)


@pytest.mark.parametrize("kind", KINDS)
def test_blocks_tile_the_array(kind: str) -> None:
    """Every block, by its grid index, is the matching tile of the chunk (shard) grid."""
    case = Case(kind, (7, 11), (2, 3), (4, 6) if kind == "sharded" else None, "<i4", 5)
    x, a = case.data, case.fast()
    bs = case.block_shape
    grid = (-(-7 // bs[0]), -(-11 // bs[1]))
    tiles = [[a.blocks[i, j] for j in range(grid[1])] for i in range(grid[0])]
    check(np.block(tiles), x)
    for i in range(grid[0]):
        check(a.blocks[i], x[i * bs[0]:(i + 1) * bs[0]])
        check(a.blocks[-1 - i, 1:], x[(grid[0] - 1 - i) * bs[0]:(grid[0] - i) * bs[0], bs[1]:])


def test_blocks_ellipsis() -> None:
    """As zarr-python's block indexing, an Ellipsis stands for the missing dimensions."""
    x = np.arange(7 * 11).reshape(7, 11)
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=x, chunks=(2, 3))
    check(a.blocks[..., 1], x[:, 3:6])
    check(a.blocks[-1, ...], x[6:])
    check(a.blocks[...], x)
    a.blocks[..., -1] = -1
    x[:, 9:] = -1
    check(a[...], x)
    with pytest.raises(IndexingError):
        a.blocks[..., 0, ...]


# ---------------------------------------------------------------------------
# 0-d and zero-length arrays
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_zero_d_orthogonal_and_blocks(kind: str) -> None:
    case = Case(kind, (), (), () if kind == "sharded" else None, "<f8", None)
    x, a = case.data, case.fast()
    for sel in [(), Ellipsis]:
        check(a.oindex[sel], x[()])
        check(a.get_orthogonal_selection(sel), x[()])
    check(a.blocks[()], x)
    check(a.blocks[...], x)
    a.oindex[()] = 4.5
    check(a[()], np.float64(4.5))
    a.set_orthogonal_selection(Ellipsis, np.array(-3.0))
    check(a[...], np.array(-3.0))
    a.blocks[()] = 7.0
    check(a[...], np.array(7.0))


def test_zero_d_coordinate() -> None:
    """A 0-d array has no dimension for index arrays: NumPy's result, or an IndexError as
    zarr-python raises -- never another error, and never a write that does nothing."""
    a = zarrfast.create_array(zarrfast.MemoryStore(), data=np.array(3, dtype="i4"))
    try:
        check(a.vindex[()], np.array(3, dtype="i4"))
    except IndexError:
        pass  # refusing (as zarr-python does) is fine; a bare ValueError is not
    try:
        a.vindex[()] = 6
    except IndexError:
        check(a[...], np.array(3, dtype="i4"))
    else:
        check(a[...], np.array(6, dtype="i4"))  # no silent no-op


@pytest.mark.parametrize("kind", KINDS)
def test_zero_length_dimensions(kind: str) -> None:
    case = Case(kind, (0, 5, 3), (2, 2, 2), (4, 2, 4) if kind == "sharded" else None,
                "<i4", None)
    x, a = case.data, case.fast()
    e = np.zeros(0, dtype=np.int64)
    check(a.oindex[e, [4, 0, 4], 1:], x[np.ix_(e, [4, 0, 4], [1, 2])])
    check(a.oindex[:, np.array([True, False, True, False, True]), -1],
          x[:, [0, 2, 4], -1])
    check(a.vindex[e, e, e], x[e, e, e])
    check(a.vindex[np.zeros((0, 5, 3), bool)], np.zeros(0, "i4"))
    check(a[e, :, [1]], x[e, :, [1]])
    check(a.blocks[:, 1], x[:, 2:4])
    a.oindex[e, [1, 2], :] = 5
    a.vindex[e, e, e] = 5
    a.vindex[np.zeros((0, 5, 3), bool)] = 5
    a[e, :, [1]] = 5
    check(a[...], x)
