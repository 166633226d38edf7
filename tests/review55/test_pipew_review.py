"""Review of h55/pipew (d212950, 96956a9, ecc45f9): zarr-python's batch read as the
product of each dimension's slices, found by object identity (``_product``).

Guard, passing on the branch and on 7f98544: batches made as zarr-python's indexers make
them (the product of one list of slice objects per dimension), where equal slices are
often one object (as ``slice(0, c)`` of every whole chunk along a dimension could be),
then shuffled, a row repeated, a row dropped, one row's slice swapped for an equal but
distinct object: the table ``_slice_table`` reads is row for row the one read from fresh
slice objects (no identity to go by) and the general ``_table``'s.  Whatever the reuse,
no row can take another row's slices: data cannot land in the wrong place.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

zp = pytest.importorskip("zarrfast.zarr_python")


def _fresh(batch: list) -> list:
    """The batch with every slice a new object (equal values)."""
    return [(g, s, tuple(copy.copy(x) for x in c), tuple(copy.copy(x) for x in o), k)
            for g, s, c, o, k in batch]


@st.composite
def _batches(draw):
    ndim = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 6)) for _ in range(ndim)]
    pools, outs = [], []
    for d in range(ndim):
        k = draw(st.integers(1, 4))
        sels, out, at = [], [], 0
        shared: dict[tuple, slice] = {}
        for _ in range(k):
            start = draw(st.integers(0, chunk[d] - 1))
            stop = draw(st.integers(start + 1, chunk[d]))
            step = draw(st.sampled_from([None, 1, 2]))
            key = (start, stop, step)
            if key in shared and draw(st.booleans()):
                s = shared[key]  # (one object for equal slices)
            else:
                s = shared[key] = slice(start, stop, step)
            n = len(range(start, stop, step or 1))
            sels.append(s)
            out.append(slice(at, at + n))
            at += n
        pools.append(sels)
        outs.append(out)
    idx = np.array(np.meshgrid(*[np.arange(len(p)) for p in pools], indexing="ij"))
    idx = idx.reshape(ndim, -1).T
    batch = [(None, None, tuple(pools[d][i] for d, i in enumerate(row)),
              tuple(outs[d][i] for d, i in enumerate(row)), False) for row in idx.tolist()]
    change = draw(st.sampled_from(["none", "shuffle", "repeat", "drop", "swap"]))
    if change == "shuffle":
        batch = [batch[i] for i in draw(st.permutations(range(len(batch))))]
    elif change == "repeat":
        batch = batch + [batch[draw(st.integers(0, len(batch) - 1))]]
    elif change == "drop" and len(batch) > 1:
        del batch[draw(st.integers(0, len(batch) - 1))]
    elif change == "swap":
        r = draw(st.integers(0, len(batch) - 1))
        g, s, c, o, k = batch[r]
        batch[r] = (g, s, tuple(copy.copy(x) for x in c), o, k)
    return batch, tuple(chunk)


def _same(a, b) -> None:
    assert (a is None) == (b is None), (a, b)
    if a is None:
        return
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y)), (x, y)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_batches())
def test_slices_reused_by_identity_never_move_a_row(case):
    batch, chunk = case
    shape = np.array(chunk, dtype=np.int64)
    fast = zp._slice_table(batch, shape)
    flat = zp._slice_table(_fresh(batch), shape)
    _same(fast, flat)
    general = zp._table(_fresh(batch), chunk)
    if fast is not None and not isinstance(general, str):
        for x, y in zip(fast[:4], general[:4], strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y))
        assert list(fast[4]) == list(general[4])
