"""The ``_shard_index`` kernel (``check_index``) against its twin and a brute-force
check of shard index entries.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from _helpers.kernels import IMPLS, PROPS, run_both

# ---------------------------------------------------------------------------
# check_index
# ---------------------------------------------------------------------------

U64_MAX = 2**64 - 1
E = U64_MAX  # an empty index field


def u64_index(rows) -> np.ndarray:
    return np.array(rows, dtype=np.uint64).reshape(-1, 2)


def brute_check_index(rows, low, high):
    """The documented rule, straight from its definition (Python ints, O(n^2) overlaps)."""
    for j, (o, n) in enumerate(rows):
        if (o == E) != (n == E):
            return (1, j, -1)
        if o == E:
            continue
        if o + n > U64_MAX:
            return (2, j, -1)
        if o < low:
            return (3, j, -1)
        if o + n > high:
            return (4, j, -1)
    live = [(o, j, o + n) for j, (o, n) in enumerate(rows) if o != E and n > 0]
    # every intersecting pair (x, y) with x before y in (offset, entry) order
    pairs = [(x, y) for x in live for y in live
             if x[:2] < y[:2] and x[0] < y[2] and y[0] < x[2]]
    if not pairs:
        return (0, -1, -1)
    b = min(y for _, y in pairs)
    earlier = [x for x, y in pairs if y == b]
    assert len(earlier) == 1  # the rule's `a` is unique ...
    a = earlier[0]
    assert max(x for x in live if x[:2] < b[:2]) == a  # ... and b's predecessor in the order
    return (5, a[1], b[1])


def _entry(draw, pool, bad):
    kinds = ["empty", "empty", "used", "used", "used", "used", "zero"]
    if bad:
        kinds += ["half_off", "half_nb", "wrap", "huge"]
    kind = draw(st.sampled_from(kinds))
    if kind == "empty":
        return (E, E)
    if kind == "half_off":
        return (E, draw(st.integers(0, 20)))
    if kind == "half_nb":
        return (draw(pool), E)
    if kind == "zero":
        return (draw(pool), 0)
    if kind == "wrap":  # offset + nbytes at or just past 2**64
        o = draw(st.integers(U64_MAX - 40, U64_MAX - 1))
        return (o, draw(st.integers(max(U64_MAX - o - 3, 0), U64_MAX - o + 3)))
    if kind == "huge":
        return (draw(st.integers(2**63, U64_MAX - 1)), draw(st.integers(0, 2**62)))
    return (draw(pool), draw(st.integers(1, 12)))


@st.composite
def shard_indexes(draw):
    """Small random indexes: few distinct offsets, so overlaps and touching ranges abound."""
    offsets = draw(st.lists(st.integers(0, 60), min_size=1, max_size=6))
    pool = st.sampled_from(offsets) | st.integers(0, 80)
    n = draw(st.integers(0, 14))
    bad = draw(st.booleans())  # else mostly overlaps to find
    rows = [_entry(draw, pool, bad) for _ in range(n)]
    if not bad:
        return rows, 0, draw(st.sampled_from([U64_MAX, 100]))
    low = draw(st.sampled_from([0, 0, 3, 10]) | st.integers(0, U64_MAX))
    high = draw(st.sampled_from([U64_MAX, U64_MAX, 50, 80, 100]) | st.integers(0, U64_MAX))
    return rows, low, high


@st.composite
def laid_out_indexes(draw):
    """Valid layouts (chunks stored in entry order or shuffled, some empty or zero-length,
    maybe gaps) with a few entries moved or resized: longer indexes, the sorting path;
    offsets anywhere up to 2**64 - 1."""
    n = draw(st.integers(1, 120))
    sizes = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    empty = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    gaps = draw(st.booleans())
    order = list(range(n))
    if draw(st.booleans()):
        order = draw(st.permutations(order))
    low = draw(st.sampled_from([0, 16, 2**35 + 3, 2**63 + 5]))  # the radix digits used
    rows = [(E, E)] * n
    pos = low
    for j in order:
        if empty[j]:
            continue
        rows[j] = (pos, sizes[j])
        pos += sizes[j] + (draw(st.integers(0, 2)) if gaps else 0)
    for _ in range(draw(st.integers(0, 3))):
        j = draw(st.integers(0, n - 1))
        start = draw(st.integers(low, pos + 5) | st.integers(0, pos + 5))
        rows[j] = (start, draw(st.integers(0, 12)))
    high = draw(st.sampled_from([U64_MAX, pos, pos + 1, max(pos - 1, 0)]))
    return rows, low, high


def _check_index_case(rows, low, high):
    got, _ = run_both("check_index", lambda: [u64_index(rows), low, high])
    assert got == ("ok", brute_check_index(rows, low, high))
    event(f"check_index: code {got[1][0]}")


@PROPS
@given(shard_indexes())
def test_check_index_matches_twin_and_brute_force(case):
    _check_index_case(*case)


@PROPS
@given(laid_out_indexes())
def test_check_index_laid_out_matches_twin_and_brute_force(case):
    _check_index_case(*case)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    "rows, low, high, expected",
    [
        ([], 0, E, (0, -1, -1)),
        ([(E, E)] * 3, 5, 0, (0, -1, -1)),
        ([(0, 10), (10, 5), (15, 0)], 0, 15, (0, -1, -1)),  # touching ranges, end == high
        ([(10, 5), (0, 10)], 0, E, (0, -1, -1)),  # out of order, touching
        ([(0, 10), (9, 5)], 0, E, (5, 0, 1)),
        ([(9, 5), (0, 10)], 0, E, (5, 1, 0)),  # a = the lower offset, not the lower entry
        ([(5, 3), (5, 3)], 0, E, (5, 0, 1)),  # equal offsets: the lower entry is a
        ([(0, 10), (5, 0), (10, 0)], 0, E, (0, -1, -1)),  # zero-length entries overlap nothing
        ([(0, 100), (10, 5), (20, 5)], 0, E, (5, 0, 1)),  # one range covering two
        ([(20, 5), (0, 100), (10, 5)], 0, E, (5, 1, 2)),  # ... stored out of order
        ([(30, 5), (0, 5), (32, 1), (3, 4)], 0, E, (5, 1, 3)),  # the smallest b in offset order
        ([(E, 3)], 0, E, (1, 0, -1)),
        ([(3, E)], 0, E, (1, 0, -1)),
        ([(0, 5), (E - 2, 3)], 0, E, (2, 1, -1)),  # offset + nbytes == 2**64
        ([(E - 2, 2)], 0, E, (0, -1, -1)),  # ends at 2**64 - 1: fine
        ([(E - 1, 0)], 0, E, (0, -1, -1)),
        ([(0, 5), (4, 5), (2, 1)], 3, E, (3, 0, -1)),  # codes 1-4 before overlaps
        ([(5, 0)], 6, E, (3, 0, -1)),  # a zero-length entry below low
        ([(5, 5), (4, 1)], 5, 9, (4, 0, -1)),  # the first bad entry, whatever its code
        ([(10, 0)], 0, 9, (4, 0, -1)),  # a zero-length entry past high
        ([(E, 1), (E - 2, 3)], 0, 0, (1, 0, -1)),
        ([(E - 2, 3)], 2**63, 5, (2, 0, -1)),  # the lowest code of an entry
        ([(1, 3)], 2, 3, (3, 0, -1)),
    ],
)
def test_check_index_cases(impl, rows, low, high, expected):
    assert impl.check_index(u64_index(rows), low, high) == expected
    assert brute_check_index(rows, low, high) == expected


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layout", ["in-order", "shuffled", "clustered"])
def test_check_index_large(impl, layout):
    """Chunks stored in entry order (no sort), shuffled (bucket sort) or with one far
    away (radix sort)."""
    n = 65536
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 5000, n).astype(np.uint64)
    sizes[::17] = 0
    order = np.arange(n) if layout == "in-order" else rng.permutation(n)
    index = np.empty((n, 2), dtype=np.uint64)
    index[order, 1] = sizes[order]
    index[order, 0] = 100 + np.concatenate(([0], np.cumsum(sizes[order])[:-1]))
    index[::5] = E
    if layout == "clustered":
        index[1] = (2**60, 10)
    end = int((index[:, 0] + index[:, 1])[index[:, 0] != E].max())
    assert impl.check_index(index, 100, end) == (0, -1, -1)
    first = int(np.flatnonzero((index[:, 0] != E) & (index[:, 0] < 101))[0])
    assert impl.check_index(index, 101, end) == (3, first, -1)
    assert impl.check_index(index, 0, end - 1) == (4, int(np.flatnonzero(
        (index[:, 0] != E) & (index[:, 0] + index[:, 1] == end))[0]), -1)
    # one entry extended to run a byte into the next chunk stored after it
    pos = np.argsort(index[:, 0], kind="stable")  # empty entries (offset 2**64-1) last
    live = [int(j) for j in pos if index[j, 0] != E and index[j, 1] > 0]
    a, b = live[n // 3], live[n // 3 + 1]
    index[a, 1] = index[b, 0] - index[a, 0] + np.uint64(1)
    assert impl.check_index(index, 100, E) == (5, a, b)


@pytest.mark.parametrize("impl", IMPLS)
def test_check_index_rejects(impl):
    good = np.zeros((2, 2), dtype=np.uint64)
    for bad in (np.zeros(4, np.uint64), np.zeros((2, 3), np.uint64),
                np.zeros((2, 2, 2), np.uint64), np.zeros((0,), np.uint64)):
        with pytest.raises(ValueError, match=r"check_index: index has shape \("):
            impl.check_index(bad, 0, E)
    for bad in (np.zeros((2, 2), np.int64), np.zeros((2, 2), np.uint32),
                np.zeros((4, 2), np.uint64)[::2], np.zeros((2, 2), ">u8")):
        with pytest.raises(ValueError):
            impl.check_index(bad, 0, E)
    with pytest.raises(TypeError):
        impl.check_index(None, 0, E)
    with pytest.raises(TypeError):
        impl.check_index([[0, 1]], 0, E)
    for low, high, exc in ((-1, E, OverflowError), (0, 2**64, OverflowError),
                           (1.0, E, TypeError), (0, "5", TypeError)):
        with pytest.raises(exc):
            impl.check_index(good, low, high)
    # read-only and NumPy-integer arguments are fine
    good.flags.writeable = False
    assert impl.check_index(good, np.uint64(0), np.int64(0)) == (0, -1, -1)
    assert impl.check_index(memoryview(good), 1, E) == (3, 0, -1)
