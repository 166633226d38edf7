"""``engine.many.project_boxes``: many step-1 boxes projected onto a chunk grid at once
must give, row for row, what ``kernels.project`` gives each box (and its NumPy twin),
the boxes' tables one after another."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast import kernels
from zarrfast.engine.many import project_boxes
from zarrfast.kernels import reference


@st.composite
def _boxes(draw):
    ndim = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 40)) for _ in range(ndim)]
    chunks = [draw(st.integers(1, 12)) for _ in range(ndim)]
    n = draw(st.integers(1, 6))
    starts, counts = [], []
    for _ in range(n):
        start, count = [], []
        for size in shape:
            a = draw(st.integers(0, size - 1))
            start.append(a)
            count.append(draw(st.integers(0, size - a)))  # (0: an empty box)
        starts.append(start)
        counts.append(count)
    return (np.array(shape, dtype=np.int64), np.array(chunks, dtype=np.int64),
            np.array(starts, dtype=np.int64), np.array(counts, dtype=np.int64))


@settings(max_examples=300, deadline=None)
@given(_boxes())
def test_project_boxes_is_each_box_projected_in_turn(case):
    shape, chunks, starts, counts = case
    nrows, *tables = project_boxes(chunks, starts, counts)
    for project in (kernels.project, reference.project):
        each = [project(shape, chunks, s, np.ones_like(s), c)
                for s, c in zip(starts, counts, strict=True)]
        assert nrows.tolist() == [len(e[0]) for e in each]
        for j, table in enumerate(tables):
            want = np.concatenate([e[j] for e in each])
            assert table.dtype == np.int64 and table.shape == want.shape
            np.testing.assert_array_equal(table, want, err_msg=f"table {j}")


def test_project_boxes_of_a_loaders_tiles():
    """Tiles of one chunk each along the first dimension, two chunks across: rows in
    C order per tile, the tiles in turn, each placed at its own output start."""
    nrows, coords, local_start, local_count, out_start = project_boxes(
        np.array([1, 4, 4]), np.array([[3, 2, 0], [0, 0, 4]]), np.array([[1, 4, 4]] * 2))
    assert nrows.tolist() == [2, 1]
    assert coords.tolist() == [[3, 0, 0], [3, 1, 0], [0, 0, 1]]
    assert local_start.tolist() == [[0, 2, 0], [0, 0, 0], [0, 0, 0]]
    assert local_count.tolist() == [[1, 2, 4], [1, 2, 4], [1, 4, 4]]
    assert out_start.tolist() == [[0, 0, 0], [0, 2, 0], [0, 0, 0]]
