"""The ``_assemble`` kernels (``copy_region``, ``copy_regions``, ``fill_region``,
``is_uniform``) against their NumPy twins and an ``ndindex`` loop.

Property tests run both implementations on the same inputs and require the same
outcome; explicit cases cover rejected regions and buffer types (never a crash).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

from _helpers.kernels import (
    I64,
    IMPLS,
    ITEMSIZES,
    PROPS,
    any_strides,
    dense_strides,
    ext,
    i64,
    placed_buffer,
    region_shapes,
    rng_bytes,
    run_both,
)


def brute_copy(src, src_offset, src_strides, dst, dst_offset, dst_strides, shape,
               itemsize, swap_unit):
    out = bytearray(dst)
    for idx in np.ndindex(*shape):
        so = src_offset + sum(i * s for i, s in zip(idx, src_strides, strict=True))
        do = dst_offset + sum(i * s for i, s in zip(idx, dst_strides, strict=True))
        item = bytes(src[so:so + itemsize])
        if swap_unit > 1:
            item = b"".join(
                item[g:g + swap_unit][::-1] for g in range(0, itemsize, swap_unit)
            )
        out[do:do + itemsize] = item
    return bytes(out)


# ---------------------------------------------------------------------------
# copy_region
# ---------------------------------------------------------------------------


@st.composite
def copy_cases(draw):
    shape = draw(region_shapes())
    itemsize = draw(ITEMSIZES)
    swap_unit = draw(st.sampled_from([u for u in (1, 2, 4, 8) if itemsize % u == 0]))
    if draw(st.integers(0, 15)) == 0:
        swap_unit = draw(st.sampled_from([3, 16, 0]))
    sst = draw(any_strides(shape, itemsize))
    dstr = draw(dense_strides(shape, itemsize))
    if shape and draw(st.integers(0, 15)) == 0:
        dstr[draw(st.integers(0, len(shape) - 1))] = 0
    soff, ssize = draw(placed_buffer(shape, sst, itemsize))
    doff, dsize = draw(placed_buffer(shape, dstr, itemsize))
    seed = draw(st.integers(0, 2**32 - 1))
    return shape, itemsize, swap_unit, sst, soff, ssize, dstr, doff, dsize, seed


@PROPS
@given(copy_cases())
def test_copy_region_matches_twin_and_ndindex(case):
    shape, itemsize, swap_unit, sst, soff, ssize, dstr, doff, dsize, seed = case
    src = rng_bytes(seed, ssize)
    dst0 = rng_bytes(seed + 1, dsize)

    def make():
        return [src, soff, i64(*sst), bytearray(dst0), doff, i64(*dstr), i64(*shape),
                itemsize, swap_unit]

    got, args = run_both("copy_region", make, outputs=(3,))
    if got[0] == "ok":
        assert got[1] is None
        expected = brute_copy(src, soff, sst, dst0, doff, dstr, shape, itemsize, swap_unit)
        assert bytes(args[3]) == expected
    else:
        assert got[1] is ValueError
        # rejected calls never write
        assert bytes(args[3]) == dst0


def _np_strides_case(a_shape, itemsize, src_index, perm, swap):
    """copy_region reading ``a[src_index].transpose(perm)`` of a random array into C order."""
    rng = np.random.default_rng(sum(a_shape) + itemsize)
    base = rng.integers(0, 256, (*a_shape, itemsize), dtype=np.uint8)
    view = base[src_index].transpose(*perm, len(a_shape))
    shape = view.shape[:-1]
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    dst = bytearray(int(np.prod(shape)) * itemsize)
    dstr = [itemsize * int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    args = [base.reshape(-1), offset, i64(*view.strides[:-1]), dst, 0, i64(*dstr),
            i64(*shape), itemsize, swap]
    expected = view
    if swap > 1:
        expected = view.reshape(*shape, itemsize // swap, swap)[..., ::-1]
    return args, np.ascontiguousarray(expected).tobytes()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    ("a_shape", "itemsize", "src_index", "perm", "swap"),
    [
        ((300, 257), 1, np.s_[:, :], (1, 0), 1),  # tiled transpose
        ((300, 257), 2, np.s_[::-1, 3:], (1, 0), 2),  # tiled, negative stride, swap
        ((130, 90), 8, np.s_[::2, ::-3], (1, 0), 8),
        ((70, 66), 16, np.s_[:, :], (1, 0), 8),  # complex128-like
        ((70, 66), 12, np.s_[:, :], (1, 0), 4),
        ((70, 66), 40, np.s_[:, :], (1, 0), 1),  # no tiling (large items)
        ((5, 40, 90), 4, np.s_[:, ::-1, :], (2, 0, 1), 4),
        ((40, 5, 90), 2, np.s_[1:, :, 7:], (2, 1, 0), 1),
        ((40, 5, 90), 3, np.s_[:, :, :], (0, 2, 1), 1),
        ((200, 300), 4, np.s_[10:150, 20:280], (0, 1), 1),  # memcpy runs
        ((64, 64), 2, np.s_[:, :], (0, 1), 2),  # contiguous swap
        ((3, 200), 2, np.s_[:, :], (1, 0), 1),  # short tile dim
    ],
)
def test_copy_region_against_numpy_views(impl, a_shape, itemsize, src_index, perm, swap):
    args, expected = _np_strides_case(a_shape, itemsize, src_index, perm, swap)
    impl.copy_region(*args)
    assert bytes(args[3]) == expected


@st.composite
def large_copy_cases(draw):
    """2-3 d regions big enough for the cache-tiled path, src and dst permuted."""
    ndim = draw(st.integers(2, 3))
    shape = [draw(st.integers(1, 70 if ndim == 2 else 20)) for _ in range(ndim)]
    itemsize = draw(st.sampled_from([1, 2, 4, 8, 16, 24, 3]))
    swap_unit = draw(st.sampled_from([u for u in (1, 2, 4, 8) if itemsize % u == 0]))
    sst = draw(dense_strides(shape, itemsize, allow_zero=draw(st.booleans())))
    dstr = draw(dense_strides(shape, itemsize))
    soff, ssize = draw(placed_buffer(shape, sst, itemsize))
    doff, dsize = draw(placed_buffer(shape, dstr, itemsize))
    return shape, itemsize, swap_unit, sst, soff, ssize, dstr, doff, dsize


@settings(PROPS, max_examples=150)
@given(large_copy_cases(), st.integers(0, 2**32 - 1))
def test_copy_region_large_matches_twin(case, seed):
    shape, itemsize, swap_unit, sst, soff, ssize, dstr, doff, dsize = case
    src = rng_bytes(seed, ssize)
    dst0 = rng_bytes(seed + 1, dsize)
    run_both(
        "copy_region",
        lambda: [src, soff, i64(*sst), bytearray(dst0), doff, i64(*dstr), i64(*shape),
                 itemsize, swap_unit],
        outputs=(3,),
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_copy_region_broadcast_and_rank0(impl):
    # zero src stride broadcasts one item
    dst = bytearray(12)
    impl.copy_region(b"abc", 0, i64(0, 0), dst, 0, i64(6, 3), i64(2, 2), 3)
    assert bytes(dst) == b"abc" * 4
    # rank 0 copies one item, with swap
    dst = bytearray(6)
    impl.copy_region(b"xx1234", 2, i64(), dst, 1, i64(), i64(), 4, 4)
    assert bytes(dst) == b"\x004321\x00"
    # zero-size regions are no-ops, whatever the offsets
    dst = bytearray(4)
    impl.copy_region(b"", -100, i64(1, 1), dst, 10**6, i64(1, 1), i64(3, 0), 1)
    assert bytes(dst) == bytes(4)


def _copy_args(**over):
    args = dict(src=bytes(16), src_offset=0, src_strides=i64(4), dst=bytearray(16),
                dst_offset=0, dst_strides=i64(4), shape=i64(4), itemsize=4, swap_unit=1)
    args.update(over)
    return list(args.values())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    "over",
    [
        dict(src_offset=1),  # reads one byte past src
        dict(src_offset=-1),
        dict(dst_offset=4),
        dict(src=bytes(15)),
        dict(dst=bytearray(12)),
        dict(src_strides=i64(-4)),  # walks below byte 0
        dict(src_strides=i64(5)),
        dict(dst_strides=i64(-4), dst_offset=8),
        dict(src_strides=i64(2**62)),  # huge, no wrap-around
        dict(src_strides=i64(-(2**62)), src_offset=0),
        dict(shape=i64(2**62), src_strides=i64(4)),
        dict(shape=i64(3, 2**40), src_strides=i64(2**40, 2**30), dst_strides=i64(4, 4)),
        dict(src_offset=2**62, src_strides=i64(2**62)),  # sum overflows
        dict(shape=i64(4, 1)),  # mismatched ranks
        dict(src_strides=i64(4, 4)),
        dict(dst_strides=i64()),
        dict(shape=i64(-1)),
        dict(itemsize=0),
        dict(itemsize=-4),
        dict(swap_unit=3),
        dict(swap_unit=16, itemsize=16, shape=i64(1)),
        dict(swap_unit=8),  # itemsize 4 not a multiple
        dict(swap_unit=0),
        dict(dst_strides=i64(0)),  # every index writes the same bytes
        dict(shape=i64(*[1] * 65), src_strides=i64(*[0] * 65), dst_strides=i64(*[0] * 65)),
    ],
)
def test_copy_region_rejects(impl, over):
    args = _copy_args(**over)
    before = bytes(args[3])
    with pytest.raises(ValueError):
        impl.copy_region(*args)
    assert bytes(args[3]) == before


@pytest.mark.parametrize("impl", IMPLS)
def test_copy_region_buffer_types(impl):
    data = bytes(range(8))
    for src in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        dst = np.zeros(8, np.uint8)
        impl.copy_region(src, 0, i64(2), dst, 6, i64(-2), i64(4), 2)
        assert dst.tobytes() == bytes([6, 7, 4, 5, 2, 3, 0, 1])
    with pytest.raises((ValueError, BufferError)):  # read-only destination
        impl.copy_region(data, 0, i64(1), data, 0, i64(1), i64(8), 1)
    ro = np.zeros(8, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        impl.copy_region(data, 0, i64(1), ro, 0, i64(1), i64(8), 1)
    with pytest.raises(TypeError):  # int arrays must be int64 buffers, not lists
        impl.copy_region(data, 0, [1], bytearray(8), 0, [1], [8], 1)
    with pytest.raises(ValueError):
        impl.copy_region(data, 0, np.array([1], np.int32), bytearray(8), 0, i64(1), i64(8), 1)
    with pytest.raises(ValueError):
        impl.copy_region(np.zeros(8, np.int8), 0, i64(1), bytearray(8), 0, i64(1), i64(8), 1)


# ---------------------------------------------------------------------------
# fill_region / is_uniform
# ---------------------------------------------------------------------------


@st.composite
def fill_cases(draw):
    shape = draw(region_shapes())
    k = draw(st.integers(1, 17))
    fill = draw(st.one_of(st.binary(min_size=k, max_size=k),
                          st.integers(0, 255).map(lambda b: bytes([b]) * k)))
    if draw(st.integers(0, 15)) == 0:
        fill = b""
    dstr = draw(dense_strides(shape, max(k, 1)))
    if shape and draw(st.integers(0, 15)) == 0:
        dstr[draw(st.integers(0, len(shape) - 1))] = 0
    doff, dsize = draw(placed_buffer(shape, dstr, max(k, 1)))
    seed = draw(st.integers(0, 2**32 - 1))
    return shape, fill, dstr, doff, dsize, seed


@PROPS
@given(fill_cases())
def test_fill_region_matches_twin_and_ndindex(case):
    shape, fill, dstr, doff, dsize, seed = case
    dst0 = rng_bytes(seed, dsize)

    def make():
        return [bytearray(dst0), doff, i64(*dstr), i64(*shape), fill]

    got, args = run_both("fill_region", make, outputs=(0,))
    if got[0] == "ok":
        expected = bytearray(dst0)
        for idx in np.ndindex(*shape):
            o = doff + sum(i * s for i, s in zip(idx, dstr, strict=True))
            expected[o:o + len(fill)] = fill
        assert bytes(args[0]) == bytes(expected)
    else:
        assert got[1] is ValueError
        assert bytes(args[0]) == dst0


@pytest.mark.parametrize("impl", IMPLS)
def test_fill_region_large_contiguous_and_edges(impl):
    dst = np.zeros(3 * 1000 + 5, np.uint8)
    impl.fill_region(dst, 2, i64(10 * 3 * 10, 30, 3), i64(10, 10, 10), b"xyz")  # coalesces
    assert dst[2:-3].tobytes() == b"xyz" * 1000 and dst[:2].sum() == 0 and dst[-3:].sum() == 0
    dst = bytearray(1 << 16)
    impl.fill_region(dst, 0, i64(1), i64(1 << 16), b"\x07")  # memset path
    assert bytes(dst) == b"\x07" * (1 << 16)
    dst = bytearray(8)
    impl.fill_region(dst, 4, i64(), i64(), b"abcd")  # rank 0
    assert bytes(dst) == b"\0\0\0\0abcd"
    impl.fill_region(dst, -50, i64(1), i64(0), b"z")  # zero-size: no-op
    assert bytes(dst) == b"\0\0\0\0abcd"
    for bad in (
        (bytearray(8), 0, i64(1), i64(9), b"a"),
        (bytearray(8), -1, i64(1), i64(2), b"a"),
        (bytearray(8), 0, i64(1, 1), i64(2), b"a"),
        (bytearray(8), 0, i64(1), i64(2), b""),
        (bytearray(8), 0, i64(0), i64(2), b"a"),
        (bytearray(8), 7, i64(-4), i64(2), b"ab"),
    ):
        with pytest.raises(ValueError):
            impl.fill_region(*bad)


@PROPS
@given(
    fill=st.binary(min_size=0, max_size=9),
    reps=st.integers(0, 700),
    flip=st.one_of(st.none(), st.integers(0, 10**6)),
    extra=st.sampled_from([0, 0, 0, 1, 2]),
)
def test_is_uniform_matches_twin(fill, reps, flip, extra):
    buf = bytearray(fill * reps + b"q" * extra)
    if flip is not None and buf:
        buf[flip % len(buf)] ^= 0x5A
    got, _ = run_both("is_uniform", lambda: [bytes(buf), fill])
    if got[0] == "ok":
        expected = len(buf) == 0 or bytes(buf) == fill * (len(buf) // len(fill))
        assert got[1] is expected
    else:
        assert got[1] is ValueError
        assert not fill or len(buf) % len(fill)


@pytest.mark.parametrize("impl", IMPLS)
def test_is_uniform_edges(impl):
    assert impl.is_uniform(b"", b"ab") is True
    assert impl.is_uniform(b"\0" * (1 << 20), b"\0" * 8) is True
    big = bytearray(b"\1\2\3" * 50000)
    assert impl.is_uniform(big, b"\1\2\3") is True
    big[-1] = 0
    assert impl.is_uniform(big, b"\1\2\3") is False
    item = bytes(range(256)) * 20  # items larger than the comparison block
    assert impl.is_uniform(item * 3, item) is True
    assert impl.is_uniform(item * 2 + item[:-1] + b"x", item) is False
    with pytest.raises(ValueError):
        impl.is_uniform(b"abc", b"ab")
    with pytest.raises(ValueError):
        impl.is_uniform(b"abc", b"")


# ---------------------------------------------------------------------------
# copy_regions (many regions of two buffers, shared strides)
# ---------------------------------------------------------------------------


@st.composite
def copy_many_cases(draw):
    ndim = draw(st.integers(0, 3))
    itemsize = draw(ITEMSIZES)
    swap_unit = draw(st.sampled_from([u for u in (1, 2, 4, 8) if itemsize % u == 0]))
    box = [draw(st.integers(1, 4)) for _ in range(ndim)]
    sst = np.array(dense_c_strides(box, itemsize), dtype=I64)
    n = draw(st.integers(0, 5))
    shapes = [[draw(st.integers(0, b)) for b in box] for _ in range(n)]
    span = int(np.prod(box)) * itemsize
    # each region has its own slot of `span` bytes in src and dst; a few cases
    # push one region past the end of a buffer
    soffs = [k * span for k in range(n)]
    doffs = [k * span for k in range(n)]
    if n and draw(st.integers(0, 7)) == 0:
        doffs[draw(st.integers(0, n - 1))] += draw(st.integers(1, span))
    seed = draw(st.integers(0, 2**32 - 1))
    return ndim, itemsize, swap_unit, sst, shapes, soffs, doffs, n * span, seed


def dense_c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for extent in reversed(shape):
        strides.insert(0, acc)
        acc *= extent
    return strides


@PROPS
@given(copy_many_cases())
def test_copy_regions_matches_twin_and_one_call_per_region(case):
    ndim, itemsize, swap_unit, sst, shapes, soffs, doffs, size, seed = case
    src = rng_bytes(seed, size)
    dst0 = rng_bytes(seed + 1, size)
    shp = np.array(shapes, dtype=I64).reshape(len(shapes), ndim)

    def make():
        return [src, i64(*soffs), sst.copy(), bytearray(dst0), i64(*doffs), sst.copy(),
                shp.copy(), itemsize, swap_unit]

    got, args = run_both("copy_regions", make, outputs=(3,))
    if got[0] == "ok":
        expected = bytearray(dst0)
        for r in range(len(shapes)):
            ref.copy_region(src, soffs[r], sst, expected, doffs[r], sst, shp[r], itemsize,
                            swap_unit)
        assert bytes(args[3]) == bytes(expected)
    else:
        assert got[1] is ValueError
        assert bytes(args[3]) == dst0  # every region is checked before any is copied


@st.composite
def rows_of_chunks_cases(draw):
    """Chunks gathered from a C-ordered array, in C order of its grid, each into a slot of
    a destination ``gap`` bytes after the last (``gap`` below a chunk's size: slots
    overlap); some chunks cut short (an edge), some empty, some left out."""
    ndim = draw(st.integers(1, 3))
    itemsize = draw(ITEMSIZES)
    swap_unit = draw(st.sampled_from([u for u in (1, 2, 4, 8) if itemsize % u == 0]))
    chunk = [draw(st.integers(1, 5)) for _ in range(ndim)]
    grid = [draw(st.integers(1, 4)) for _ in range(ndim)]
    shape = [c * g for c, g in zip(chunk, grid, strict=True)]
    sst = dense_c_strides(shape, itemsize)
    dst = dense_c_strides(chunk, itemsize)
    nb = int(np.prod(chunk)) * itemsize
    gap = nb + draw(st.sampled_from([0, 0, 0, itemsize, 64, -itemsize]))
    gap = max(gap, itemsize)
    cells = [c for c in np.ndindex(*grid) if draw(st.integers(0, 9)) > 0]
    shapes, soffs, doffs = [], [], []
    for k, cell in enumerate(cells):
        extent = list(chunk)
        pick = draw(st.integers(0, 11))
        if pick == 0:  # an edge chunk
            d = draw(st.integers(0, ndim - 1))
            extent[d] = draw(st.integers(1, chunk[d]))
        elif pick == 1:  # an empty region
            extent[draw(st.integers(0, ndim - 1))] = 0
        shapes.append(extent)
        soffs.append(sum(i * c * s for i, c, s in zip(cell, chunk, sst, strict=True)))
        doffs.append(k * gap)
    return (itemsize, swap_unit, i64(*sst), i64(*dst), shapes, soffs, doffs,
            int(np.prod(shape)) * itemsize, len(cells) * gap + nb,
            draw(st.integers(0, 2**32 - 1)))


@PROPS
@given(rows_of_chunks_cases())
def test_copy_regions_rows_of_chunks_match_the_twin_region_by_region(case):
    """Chunks gathered from an array into slots (some overlapping, some cut short or
    empty): the bytes of the twin, and of one ``copy_region`` per region in order."""
    itemsize, swap_unit, sst, dst, shapes, soffs, doffs, src_size, dst_size, seed = case
    src = rng_bytes(seed, src_size)
    dst0 = rng_bytes(seed + 1, dst_size)
    shp = np.array(shapes, dtype=I64).reshape(len(shapes), len(sst))

    def make():
        return [src, i64(*soffs), sst.copy(), bytearray(dst0), i64(*doffs), dst.copy(),
                shp.copy(), itemsize, swap_unit]

    got, args = run_both("copy_regions", make, outputs=(3,))
    assert got[0] == "ok"
    expected = bytearray(dst0)
    for r in range(len(shapes)):
        ref.copy_region(src, soffs[r], sst, expected, doffs[r], dst, shp[r], itemsize,
                        swap_unit)
    assert bytes(args[3]) == bytes(expected)


@pytest.mark.parametrize("impl", IMPLS)
def test_copy_regions_rejects(impl):
    src, dst = bytes(range(16)), bytearray(16)
    good = (i64(0, 8), i64(1), dst, i64(0, 8), i64(1))
    with pytest.raises(ValueError, match="2 shapes but 1 src_offsets"):
        impl.copy_regions(src, i64(0), i64(1), dst, i64(0, 8), i64(1), i64(4, 4).reshape(2, 1), 1)
    with pytest.raises(ValueError, match="must have the same length"):
        impl.copy_regions(src, i64(0), i64(1, 1), dst, i64(0), i64(1), i64(4).reshape(1, 1), 1)
    with pytest.raises(ValueError, match=r"region 1"):
        impl.copy_regions(src, good[0], good[1], dst, i64(0, 14), good[4],
                          i64(4, 4).reshape(2, 1), 1)
    assert dst == bytearray(16)
    with pytest.raises(ValueError, match="swap_unit"):
        impl.copy_regions(src, *good, i64(4, 4).reshape(2, 1), 2, 3)
    with pytest.raises(ValueError):
        impl.copy_regions(src, *good, i64(4, 4), 1)  # shapes must be 2-d


@pytest.mark.skipif(ext is None, reason="the compiled kernels are not built")
@PROPS
@given(st.integers(1, 300), st.integers(1, 6), st.integers(0, 130), st.integers(0, 3),
       st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 4), (8, 1)]), st.integers(0, 2**32 - 1))
def test_copy_regions_streamed_stores_the_same_bytes(row, rows, dst_skip, pad, item, seed):
    """``stream=True`` (whole cache lines of ``dst`` written with non-temporal stores)
    gives the bytes plain stores and the twin give: rows shorter and longer than a
    cache line, starting on one or not, items swapped or not."""
    itemsize, swap_unit = item
    n_items = max(1, row // itemsize)
    shape = (rows, n_items)
    src_strides = i64(n_items * itemsize, itemsize)
    dst_strides = i64((n_items + pad) * itemsize, itemsize)
    span = rows * (n_items + pad) * itemsize
    src = rng_bytes(seed, rows * n_items * itemsize * 2)
    # dst starts on a cache line, so that dst_skip decides whether the rows do
    raw = np.zeros(2 * span + dst_skip + 256, dtype=np.uint8)
    base = -raw.ctypes.data % 64
    shapes = i64(*shape, *shape).reshape(2, 2)
    soffs = i64(0, rows * n_items * itemsize)
    doffs = i64(dst_skip, dst_skip + span)
    got = {}
    for impl, stream in ((ref, False), (ext, False), (ext, True)):
        dst = raw[base:base + 2 * span + dst_skip + 64]
        dst[:] = 7
        impl.copy_regions(src, soffs, src_strides, dst, doffs, dst_strides, shapes, itemsize,
                          swap_unit, stream=stream)
        got[(impl is ref, stream)] = bytes(dst)
    assert got[(False, True)] == got[(False, False)] == got[(True, False)]
