"""The ``_indexing`` kernels (``project``, ``format_chunk_keys``, ``group_by_chunk``)
against their twins, a brute-force projection and ``np.arange(n)[slice]``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

from _helpers.kernels import I64, IMPLS, INT64_MAX, PROPS, assert_same_result, ext, i64, run_both

# ---------------------------------------------------------------------------
# project
# ---------------------------------------------------------------------------


def brute_project(shape, chunks, start, step, count):
    """Per-dim segments by grouping consecutive selected indices by chunk."""
    if any(m == 0 for m in count):
        return None
    per_dim = []
    for n, c, s, t, m in zip(shape, chunks, start, step, count, strict=True):
        idx = s + t * np.arange(m)
        assert ((idx >= 0) & (idx < n)).all()
        segs = []
        k = 0
        for ci, group in itertools.groupby(idx.tolist(), key=lambda i, c=c: i // c):
            g = list(group)
            extent = min(c, n - ci * c)
            segs.append((ci, g[0] - ci * c, len(g), k, abs(t) == 1 and len(g) == extent))
            k += len(g)
        per_dim.append(segs)
    rows = list(itertools.product(*per_dim))
    ndim = len(shape)
    tabs = [np.array([[r[d][j] for d in range(ndim)] for r in rows], dtype=I64).reshape(
        len(rows), ndim) for j in range(4)]
    complete = np.array([all(r[d][4] for d in range(ndim)) for r in rows], dtype=bool)
    return (*tabs, complete)


@st.composite
def slice_selections(draw, max_ndim=4):
    """Per dim: a random Python slice on a random shape and chunk size."""
    ndim = draw(st.integers(0, max_ndim))
    dims = []
    for _ in range(ndim):
        n = draw(st.integers(0, 40))
        c = draw(st.integers(1, 12))
        step = draw(st.integers(1, 7)) * draw(st.sampled_from([1, -1]))
        lo = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        hi = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        dims.append((n, c, slice(lo, hi, step)))
    return dims


def _selection_args(dims):
    shape, chunks, start, step, count = [], [], [], [], []
    for n, c, sl in dims:
        s, e, t = sl.indices(n)
        shape.append(n)
        chunks.append(c)
        start.append(s)
        step.append(t)
        count.append(len(range(s, e, t)))
    return shape, chunks, start, step, count


@PROPS
@given(slice_selections())
def test_project_slices_match_twin_brute_force_and_numpy(dims):
    args = _selection_args(dims)
    got, _ = run_both("project", lambda: [i64(*a) for a in args])
    assert got[0] == "ok", got
    chunk, lstart, lcount, ostart, complete = got[1]
    expected = brute_project(*args)
    if expected is None:
        assert chunk.shape == (0, len(dims)) and complete.shape == (0,)
    else:
        assert_same_result(got[1], expected)
    # Per dim, the segments reproduce np.arange(n)[slice] in selection order.
    rows = chunk.shape[0]
    for d, (n, c, sl) in enumerate(dims):
        want = np.arange(n)[sl]
        if rows == 0:
            continue
        seen = {}
        for r in range(rows):
            seen[int(ostart[r, d])] = (int(chunk[r, d]), int(lstart[r, d]), int(lcount[r, d]))
        got_idx = []
        for k0 in sorted(seen):
            ci, ls, lc = seen[k0]
            assert k0 == len(got_idx)
            got_idx.extend(ci * c + ls + j * sl.indices(n)[2] for j in range(lc))
        np.testing.assert_array_equal(np.array(got_idx, dtype=np.int64), want)


@st.composite
def raw_selections(draw):
    """Arbitrary (often invalid) per-dim arguments."""
    ndim = draw(st.integers(0, 3))
    cols = [[draw(st.integers(-1, 12)) for _ in range(ndim)] for _ in range(5)]
    if ndim and draw(st.integers(0, 7)) == 0:
        cols[draw(st.integers(0, 4))].append(1)  # mismatched ranks
    return cols


@PROPS
@given(raw_selections())
def test_project_raw_arguments_match_twin(cols):
    got, _ = run_both("project", lambda: [i64(*a) for a in cols])
    if got[0] == "raised":
        assert got[1] is ValueError
    else:
        assert_same_result(got[1], brute_project(*cols) or got[1])


@st.composite
def sparse_huge_selections(draw, max_ndim=3):
    """Per dim: a few indices far apart on a dimension up to 2**63-1 long, with chunks
    from 1 to the dimension: the chunks between the first and the last index are far more
    than can be listed, the chunks the indices touch are few."""
    dims = []
    for _ in range(draw(st.integers(1, max_ndim))):
        n = draw(st.integers(1, INT64_MAX))
        c = draw(st.one_of(st.integers(1, 64), st.integers(1, n)))
        m = draw(st.integers(1, 4))
        s = draw(st.integers(0, n - 1))
        room = (n - 1 - s) // (m - 1) if m > 1 else n  # the largest step going up
        down = s // (m - 1) if m > 1 else n
        if draw(st.booleans()) and room >= 1:
            t = draw(st.integers(1, min(room, INT64_MAX)))
        elif down >= 1:
            t = -draw(st.integers(1, min(down, INT64_MAX)))
        else:
            t, m = 1, 1
        dims.append((n, c, s, t, m))
    return dims


@PROPS
@given(sparse_huge_selections())
@example([(2**62, 4, 3, 2**61, 2)])  # a[3::2**61] on a (2**62,) array (found in review)
@example([(2**63 - 1, 1, 2**63 - 2, -(2**62), 2), (2**40, 3, 0, 2**39, 2)])
def test_project_sparse_selections_on_huge_dimensions_match_twin_and_brute_force(dims):
    args = [list(col) for col in zip(*dims, strict=True)]
    got, _ = run_both("project", lambda: [i64(*a) for a in args])
    assert got[0] == "ok", got  # the twin listed every chunk between the ends (AllocationError)
    assert_same_result(got[1], brute_project(*args))


@pytest.mark.parametrize("impl", IMPLS)
def test_project_a_step_of_2_61_on_a_2_62_dimension_touches_two_chunks(impl):
    for c in (1, 4, 2**20):
        chunk, lstart, lcount, ostart, complete = impl.project(
            i64(2**62), i64(c), i64(3), i64(2**61), i64(2))
        assert chunk[:, 0].tolist() == [3 // c, (3 + 2**61) // c]
        assert lcount[:, 0].tolist() == [1, 1] and ostart[:, 0].tolist() == [0, 1]
        chunk, *_ = impl.project(i64(2**62), i64(c), i64(2**62 - 1), i64(-(2**61)), i64(2))
        assert chunk[:, 0].tolist() == [(2**62 - 1) // c, (2**61 - 1) // c]


@pytest.mark.parametrize("impl", IMPLS)
def test_project_edges(impl):
    # rank 0: one row, empty coords, complete
    res = impl.project(i64(), i64(), i64(), i64(), i64())
    assert [a.shape for a in res] == [(1, 0)] * 4 + [(1,)]
    assert res[4].dtype == np.bool_ and res[4][0]
    # any count == 0: zero rows (start not checked then)
    res = impl.project(i64(10, 10), i64(3, 3), i64(0, 99), i64(1, 1), i64(4, 0))
    assert [a.shape for a in res] == [(0, 2)] * 4 + [(0,)]
    # complete chunks, edge chunk clipped
    chunk, lstart, lcount, ostart, complete = impl.project(
        i64(10), i64(4), i64(0), i64(1), i64(10))
    assert chunk[:, 0].tolist() == [0, 1, 2] and lcount[:, 0].tolist() == [4, 4, 2]
    assert complete.tolist() == [True, True, True]
    # negative step: descending chunks
    chunk, lstart, lcount, ostart, complete = impl.project(
        i64(10), i64(4), i64(9), i64(-1), i64(10))
    assert chunk[:, 0].tolist() == [2, 1, 0] and lstart[:, 0].tolist() == [1, 3, 3]
    assert ostart[:, 0].tolist() == [0, 2, 6] and complete.all()
    # step larger than the chunk skips chunks
    chunk, *_ = impl.project(i64(100), i64(3), i64(1), i64(10), i64(10))
    assert chunk[:, 0].tolist() == [0, 3, 7, 10, 13, 17, 20, 23, 27, 30]
    # huge coordinates, no overflow
    n = INT64_MAX
    chunk, lstart, lcount, ostart, complete = impl.project(
        i64(n), i64(2**62), i64(n - 1), i64(-(2**62)), i64(2))
    assert chunk[:, 0].tolist() == [1, 0] and lstart[:, 0].tolist() == [2**62 - 2, 2**62 - 2]
    chunk, *_ = impl.project(i64(n), i64(n), i64(5), i64(-(2**63)), i64(1))
    assert chunk.tolist() == [[0]]
    chunk, lstart, lcount, *_ = impl.project(i64(n), i64(3), i64(n - 2), i64(1), i64(2))
    assert lcount.sum() == 2


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    "args",
    [
        ((10,), (3,), (0,), (0,), (1,)),  # step 0
        ((10,), (0,), (0,), (1,), (1,)),  # chunk 0
        ((-1,), (3,), (0,), (1,), (0,)),  # negative shape
        ((10,), (3,), (0,), (1,), (-1,)),  # negative count
        ((10,), (3,), (10,), (1,), (1,)),  # start out of bounds
        ((10,), (3,), (-1,), (1,), (1,)),
        ((10,), (3,), (0,), (1,), (11,)),  # last index out of bounds
        ((10,), (3,), (9,), (-1,), (11,)),
        ((10,), (3,), (9,), (-(2**63),), (2,)),
        ((2**62,), (1,), (0,), (2**61,), (2**62,)),  # last index overflows int64
        ((10, 10), (3,), (0, 0), (1, 1), (1, 1)),  # mismatched ranks
        ((2**20,) * 4, (16,) * 4, (0,) * 4, (16,) * 4, (2**16,) * 4),  # > 2**62 rows
        ((1,) * 65, (1,) * 65, (0,) * 65, (1,) * 65, (1,) * 65),
    ],
)
def test_project_rejects(impl, args):
    with pytest.raises(ValueError):
        impl.project(*[i64(*a) for a in args])


# ---------------------------------------------------------------------------
# format_chunk_keys
# ---------------------------------------------------------------------------


@PROPS
@given(
    coords=st.lists(st.lists(st.integers(-2, INT64_MAX), min_size=3, max_size=3), max_size=20),
    ndim=st.integers(0, 3),
    prefix=st.text(max_size=4),
    sep=st.sampled_from(["/", ".", "", "::", "é"]),
)
def test_format_chunk_keys_matches_twin(coords, ndim, prefix, sep):
    arr = np.array([row[:ndim] for row in coords], dtype=I64).reshape(len(coords), ndim)
    got, _ = run_both("format_chunk_keys", lambda: [arr, prefix, sep])
    if got[0] == "ok":
        assert got[1] == [prefix + sep.join(str(int(v)) for v in row) for row in arr]
    else:
        assert got[1] is ValueError and (arr < 0).any()


@pytest.mark.parametrize("impl", IMPLS)
def test_format_chunk_keys_edges(impl):
    assert impl.format_chunk_keys(np.zeros((0, 3), I64), "c/", "/") == []
    assert impl.format_chunk_keys(np.zeros((2, 0), I64), "c", "/") == ["c", "c"]
    rows = np.array([[0, 10, INT64_MAX], [7, 0, 123456789]], I64)
    assert impl.format_chunk_keys(rows, "c/", "/") == [
        f"c/0/10/{INT64_MAX}", "c/7/0/123456789"]
    assert impl.format_chunk_keys(rows[:, :1].copy(), "\ud800x", ".") == ["\ud800x0", "\ud800x7"]
    with pytest.raises(ValueError):
        impl.format_chunk_keys(np.array([[1, -1]], I64), "", ".")
    with pytest.raises(ValueError):
        impl.format_chunk_keys(rows[:, ::2], "", ".")  # not C-contiguous
    with pytest.raises(ValueError):
        impl.format_chunk_keys(np.zeros(3, I64), "", ".")  # not 2-d
    with pytest.raises(TypeError):
        impl.format_chunk_keys(rows, b"c", ".")


# ---------------------------------------------------------------------------
# group_by_chunk
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
@given(ids=st.lists(st.integers(0, 40), max_size=200), extra=st.integers(0, 5000))
@PROPS
def test_group_by_chunk_matches_twin_and_definition(impl, ids, extra):
    arr = np.array(ids, dtype=I64)
    nchunks = (max(ids) + 1 if ids else 0) + extra  # exercises both the counting and sort paths
    order, chunk_ids, starts = impl.group_by_chunk(arr, nchunks)
    r_order, r_ids, r_starts = ref.group_by_chunk(arr, nchunks)
    np.testing.assert_array_equal(order, r_order)
    np.testing.assert_array_equal(chunk_ids, r_ids)
    np.testing.assert_array_equal(starts, r_starts)
    # the definition: a stable grouping, ids ascending
    assert sorted(order.tolist()) == list(range(len(ids)))
    assert chunk_ids.tolist() == sorted(set(ids))
    for k, cid in enumerate(chunk_ids.tolist()):
        members = order[starts[k]:starts[k + 1]].tolist()
        assert members == [i for i, v in enumerate(ids) if v == cid]


@pytest.mark.parametrize("impl", IMPLS)
def test_group_by_chunk_rejects(impl):
    with pytest.raises(ValueError, match="outside"):
        impl.group_by_chunk(i64(0, 5), 5)
    with pytest.raises(ValueError, match="outside"):
        impl.group_by_chunk(i64(-1), 5)
    with pytest.raises(ValueError, match="nchunks"):
        impl.group_by_chunk(i64(), -1)
    order, ids, starts = impl.group_by_chunk(i64(), 0)
    assert order.size == 0 and ids.size == 0 and starts.tolist() == [0]


# ---------------------------------------------------------------------------
# box_table
# ---------------------------------------------------------------------------


def brute_box(start, count, chunks, cps, chunk_strides, out_strides):
    """Every chunk the box touches, from its elements: grouped by shard (C order), each
    shard's chunks in C order, with the part of the box in each."""
    per_dim = [sorted({i // c for i in range(s, s + n)})
               for s, n, c in zip(start, count, chunks, strict=True)]
    rows = []
    for k in itertools.product(*per_dim):
        shard = tuple(x // p for x, p in zip(k, cps, strict=True))
        local = [x - q * p for x, q, p in zip(k, shard, cps, strict=True)]
        lin = 0
        for x, p in zip(local, cps, strict=True):
            lin = lin * p + x
        lo = [max(s, x * c) for s, x, c in zip(start, k, chunks, strict=True)]
        hi = [min(s + n, (x + 1) * c) for s, n, x, c in zip(start, count, k, chunks,
                                                             strict=True)]
        src = sum((a - x * c) * t for a, x, c, t in zip(lo, k, chunks, chunk_strides,
                                                         strict=True))
        dst = sum((a - s) * t for a, s, t in zip(lo, start, out_strides, strict=True))
        rows.append((shard, lin, src, dst, [b - a for a, b in zip(lo, hi, strict=True)]))
    rows.sort(key=lambda r: r[0])  # stable: C order of chunks within a shard
    shards = sorted({r[0] for r in rows})
    bounds = [0]
    for s in shards:
        bounds.append(bounds[-1] + sum(1 for r in rows if r[0] == s))
    return shards, bounds, rows


@st.composite
def boxes(draw):
    ndim = draw(st.integers(0, 4))
    start, count, chunks, cps = [], [], [], []
    for _ in range(ndim):
        c = draw(st.integers(1, 7))
        chunks.append(c)
        cps.append(draw(st.integers(1, 4)))
        start.append(draw(st.integers(0, 40)))
        count.append(draw(st.integers(1, 3 * c + 2)))
    chunk_strides = [draw(st.integers(-50, 200)) for _ in range(ndim)]
    out_strides = [draw(st.integers(-50, 200)) for _ in range(ndim)]
    return start, count, chunks, cps, chunk_strides, out_strides


@PROPS
@given(boxes())
def test_box_table_matches_twin_and_brute_force(box):
    res, _ = run_both("box_table", lambda: [i64(*v) for v in box])
    assert res[0] == "ok"
    assert_box_table(res[1], box)


def assert_box_table(table, box) -> None:
    """``box_table``'s result is the brute force's."""
    shards, bounds, inner, src, dst, shapes = table
    want_shards, want_bounds, rows = brute_box(*box)
    ndim = len(box[0])
    assert shards.shape == (len(want_shards), ndim) and shapes.shape == (len(rows), ndim)
    assert [tuple(s) for s in shards.tolist()] == want_shards
    assert bounds.tolist() == want_bounds
    assert inner.tolist() == [r[1] for r in rows]
    assert src.tolist() == [r[2] for r in rows]
    assert dst.tolist() == [r[3] for r in rows]
    assert shapes.tolist() == [r[4] for r in rows]


@pytest.mark.parametrize("box", [
    # the last chunk's end (2**63) and the last shard's are past int64: both are cut at
    # the box's end, which is not
    ([2**63 - 2], [1], [2**62], [1], [0], [1]),
    ([2**63 - 3], [2], [4], [3], [1], [1]),
    ([2**63 - 7, 5], [6, 2], [2**61, 3], [2**40, 2], [3, 1], [2, 1]),
])
@pytest.mark.parametrize("impl", IMPLS)
def test_box_table_near_2_63(impl, box):
    assert_box_table(impl.box_table(*[i64(*v) for v in box]), box)


@pytest.mark.parametrize("args", [
    ([0], [1], [1], [1], [1], [1, 2]),  # lengths differ
    ([-1], [1], [1], [1], [1], [1]),  # negative start
    ([0], [0], [1], [1], [1], [1]),  # empty box
    ([0], [1], [0], [1], [1], [1]),  # zero chunk
    ([0], [1], [1], [0], [1], [1]),  # zero chunks per shard
    ([2**62], [2**62], [1], [1], [1], [1]),  # start + count overflows
    ([0] * 3, [2**20] * 3, [1] * 3, [1] * 3, [1] * 3, [1] * 3),  # too many chunks
    ([0] * 65, [1] * 65, [1] * 65, [1] * 65, [1] * 65, [1] * 65),  # rank
])
@pytest.mark.parametrize("impl", IMPLS)
def test_box_table_rejects(impl, args):
    with pytest.raises(ValueError, match="box_table"):
        impl.box_table(*[i64(*v) for v in args])


# ---------------------------------------------------------------------------
# normalize_plain
# ---------------------------------------------------------------------------

_BIG = 2**70  # beyond int64: slices take it, int indices out of range do not


def _plain_items(n: int):
    bound = st.one_of(st.none(), st.integers(-2 * n - 3, 2 * n + 3),
                      st.sampled_from([-_BIG, _BIG, -INT64_MAX - 1, INT64_MAX]))
    step = st.one_of(st.none(), st.integers(-n - 2, n + 2).filter(bool),
                     st.sampled_from([-_BIG, _BIG, INT64_MAX, -INT64_MAX - 1]))
    return st.one_of(st.builds(slice, bound, bound, step), st.integers(-n - 2, n + 1))


@st.composite
def plain_selections(draw):
    shape = tuple(draw(st.lists(st.integers(0, 7), max_size=4)))
    items = [draw(_plain_items(n)) for n in shape[:draw(st.integers(0, len(shape)))]]
    if len(items) == 1 and draw(st.booleans()):
        return items[0], shape  # not a tuple
    return tuple(items), shape


@PROPS
@given(plain_selections())
def test_normalize_plain_matches_twin_and_numpy(case):
    """Start, step, count and dropped dims select what NumPy's basic indexing does;
    ``None`` exactly for an int out of range (the general path raises for it)."""
    sel, shape = case
    results = [impl.normalize_plain(sel, shape) for impl in (ref, *([ext] if ext else []))]
    for got in results[1:]:
        assert_same_result(got, results[0])
    got = results[0]
    items = sel if isinstance(sel, tuple) else (sel,)
    out_of_range = any(type(s) is int and not -n <= s < n
                       for s, n in zip(items, shape, strict=False))
    assert (got is None) == out_of_range
    if got is None:
        return
    start, step, count, dropped = got
    for d, n in enumerate(shape):
        s = items[d] if d < len(items) else slice(None)
        want = np.arange(n)[s]
        want = np.atleast_1d(want)
        picked = start[d] + step[d] * np.arange(count[d])
        np.testing.assert_array_equal(picked, want, err_msg=f"dim {d} of {sel!r}")
        assert dropped[d] == (type(s) is int)
    assert start.dtype == step.dtype == count.dtype == np.int64


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("sel", [
    (Ellipsis,), (slice(0, 2), Ellipsis), None, (None,), True, (np.int64(1),), (1.0,),
    (slice(np.int64(0), 2),), (slice(0, 2, 0),), (slice(0.5, 2),), ([0, 1],),
    (np.array([0]),), (1, 2, 3, 4), "x",
])
def test_normalize_plain_declines(impl, sel):
    """Anything but exact ints and slices of them, at most one per dim (NumPy ints,
    bools, Ellipsis, None, a zero step, lists, arrays, too many items): ``None``, for
    the general path to take or refuse."""
    assert impl.normalize_plain(sel, (4, 5, 6)) is None


@pytest.mark.parametrize("impl", IMPLS)
def test_normalize_plain_shapes(impl):
    assert impl.normalize_plain((), ())[3] == ()
    assert impl.normalize_plain((), (2**63,)) is None  # (no such array)
    assert impl.normalize_plain((), (np.int64(3),)) is None
    with pytest.raises(TypeError):
        impl.normalize_plain((), [3])
