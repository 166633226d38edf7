"""The compiled kernels (``zarrfast._ext``) against their NumPy twins (``zarrfast.kernels.reference``).

Every property test runs both implementations on the same inputs and requires
the same outcome: equal results and output buffers, or the same exception
type. Successful calls are also checked against plain NumPy/Python semantics
(``np.transpose``, an ``ndindex`` loop, ``np.arange(n)[slice]``) so the twin is
not trusted blindly. Explicit cases cover rejection of out-of-bounds regions,
mismatched ranks and other invalid arguments (never a crash).

Without a built ``zarrfast._ext`` the same tests exercise the twin alone.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

from _helpers.kernels import (
    I64,
    IMPLS,
    INT64_MAX,
    ITEMSIZES,
    PROPS,
    any_strides,
    assert_same_result,
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
# transpose
# ---------------------------------------------------------------------------


@st.composite
def transpose_cases(draw):
    ndim = draw(st.integers(0, 5))
    shape = [draw(st.integers(1, 4 if ndim > 3 else 9)) for _ in range(ndim)]
    if ndim and draw(st.integers(0, 11)) == 0:
        shape[draw(st.integers(0, ndim - 1))] = 0
    perm = list(draw(st.permutations(range(ndim))))
    itemsize = draw(st.sampled_from([1, 2, 4, 8, 16, 3]))
    bad = draw(st.integers(0, 15))
    nbytes = int(np.prod(shape, dtype=np.int64)) * itemsize
    src_size = dst_size = nbytes
    if bad == 0 and ndim:
        perm[draw(st.integers(0, ndim - 1))] = draw(st.integers(-1, ndim))
    elif bad == 1:
        src_size += draw(st.sampled_from([-1, 1]))
    elif bad == 2:
        dst_size = max(0, dst_size + draw(st.sampled_from([-itemsize, 1])))
    elif bad == 3:
        perm = perm + [ndim]
    return shape, perm, itemsize, src_size, dst_size, draw(st.integers(0, 2**32 - 1))


@PROPS
@given(transpose_cases())
def test_transpose_matches_twin_and_numpy(case):
    shape, perm, itemsize, src_size, dst_size, seed = case
    src = rng_bytes(seed, max(src_size, 0))
    dst0 = rng_bytes(seed + 1, dst_size)

    got, args = run_both(
        "transpose",
        lambda: [src, bytearray(dst0), i64(*shape), i64(*perm), itemsize],
        outputs=(1,),
    )
    if got[0] == "ok":
        items = np.frombuffer(src, np.uint8).reshape(*shape, itemsize)
        expected = np.transpose(items, (*perm, len(shape)))
        assert bytes(args[1]) == np.ascontiguousarray(expected).tobytes()
    else:
        assert got[1] is ValueError
        assert bytes(args[1]) == dst0


@settings(PROPS, max_examples=150)
@given(
    shape=st.lists(st.integers(1, 40), min_size=2, max_size=3),
    itemsize=st.sampled_from([1, 2, 4, 8, 16, 5]),
    data=st.data(),
)
def test_transpose_large_matches_numpy(shape, itemsize, data):
    perm = data.draw(st.permutations(range(len(shape))))
    src = rng_bytes(sum(shape), int(np.prod(shape)) * itemsize)
    got, args = run_both(
        "transpose",
        lambda: [src, bytearray(len(src)), i64(*shape), i64(*perm), itemsize],
        outputs=(1,),
    )
    items = np.frombuffer(src, np.uint8).reshape(*shape, itemsize)
    assert bytes(args[1]) == np.ascontiguousarray(items.transpose(*perm, len(shape))).tobytes()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    ("shape", "perm", "itemsize"),
    [
        ((130, 67), (1, 0), 1),
        ((130, 67), (1, 0), 2),
        ((67, 130), (1, 0), 4),
        ((100, 70), (1, 0), 8),
        ((100, 70), (1, 0), 16),
        ((40, 33), (1, 0), 32),
        ((30, 20), (1, 0), 100),
        ((3, 70, 90), (0, 2, 1), 2),
        ((70, 3, 90), (2, 1, 0), 4),
        ((9, 70, 65), (2, 0, 1), 1),
        ((9, 70, 65), (1, 2, 0), 8),
        ((2, 3, 4, 5, 6, 7), (5, 3, 1, 0, 2, 4), 2),
        ((64, 64), (0, 1), 4),
        ((1, 200, 1), (2, 1, 0), 2),
        ((7, 1, 200), (2, 1, 0), 2),
    ],
)
def test_transpose_tiled_shapes(impl, shape, perm, itemsize):
    src = rng_bytes(len(shape) * 1000 + itemsize, int(np.prod(shape)) * itemsize)
    dst = bytearray(len(src))
    impl.transpose(src, dst, i64(*shape), i64(*perm), itemsize)
    items = np.frombuffer(src, np.uint8).reshape(*shape, itemsize)
    assert bytes(dst) == np.ascontiguousarray(items.transpose(*perm, len(shape))).tobytes()


@pytest.mark.parametrize("impl", IMPLS)
def test_transpose_edges(impl):
    dst = bytearray(3)
    impl.transpose(b"abc", dst, i64(), i64(), 3)  # rank 0: one item
    assert bytes(dst) == b"abc"
    impl.transpose(b"", bytearray(), i64(0, 5), i64(1, 0), 4)  # zero-size
    big = 2**40
    impl.transpose(b"", bytearray(), i64(big, 0, big), i64(2, 1, 0), 8)
    for bad in (
        (b"ab", bytearray(2), i64(2), i64(1), 1),  # perm out of range
        (b"abcd", bytearray(4), i64(2, 2), i64(0, 0), 1),  # not a permutation
        (b"abcd", bytearray(4), i64(2, 2), i64(0), 1),  # mismatched ranks
        (b"abcd", bytearray(4), i64(2, 2), i64(1, 0), 0),  # itemsize
        (b"abc", bytearray(4), i64(2, 2), i64(1, 0), 1),  # src size
        (b"abcd", bytearray(5), i64(2, 2), i64(1, 0), 1),  # dst size
        (b"", bytearray(), i64(-1, 0), i64(1, 0), 1),
        (b"", bytearray(), i64(2**62, 2**62), i64(1, 0), 1),  # size overflows
        (b"a", bytearray(1), i64(*[1] * 65), i64(*range(65)), 1),
    ):
        with pytest.raises(ValueError):
            impl.transpose(*bad)


# ---------------------------------------------------------------------------
# byteswap
# ---------------------------------------------------------------------------


@PROPS
@given(
    nitems=st.integers(0, 40),
    unit=st.sampled_from([1, 2, 4, 8, 8, 4, 2, 3, 0, 16]),
    extra=st.sampled_from([0, 0, 0, 0, 1, 3]),
    seed=st.integers(0, 2**32 - 1),
    offset=st.integers(0, 7),
    dst_delta=st.sampled_from([0, 0, 0, 0, 1, -1]),
)
def test_byteswap_matches_twin_and_numpy(nitems, unit, extra, seed, offset, dst_delta):
    data = rng_bytes(seed, nitems * max(unit, 1) + extra)
    # `offset` makes the buffers unaligned
    padded = np.frombuffer(b"\0" * offset + data, np.uint8)[offset:]

    got, args = run_both("byteswap_inplace", lambda: [bytearray(padded), unit], outputs=(0,))
    ok = unit in (1, 2, 4, 8) and len(data) % unit == 0
    assert (got[0] == "ok") == ok
    if ok:
        expected = data if unit == 1 else np.frombuffer(data, f"u{unit}").byteswap().tobytes()
        assert bytes(args[0]) == expected
    dst_len = max(0, len(data) + dst_delta)
    got, args = run_both(
        "byteswap_copy", lambda: [padded, bytearray(dst_len), unit], outputs=(1,)
    )
    assert (got[0] == "ok") == (ok and dst_len == len(data))
    if got[0] == "ok":
        assert bytes(args[1]) == expected


@pytest.mark.parametrize("impl", IMPLS)
def test_byteswap_edges(impl):
    a = np.arange(1000, dtype="<c16")
    buf = a.view(np.uint8)
    impl.byteswap_inplace(buf, 8)  # complex128: swap each float64
    np.testing.assert_array_equal(buf.view(">c16"), np.arange(1000))
    out = np.empty(4000 * 4, np.uint8)
    impl.byteswap_copy(np.arange(4000, dtype="<u4").view(np.uint8), out, 4)
    np.testing.assert_array_equal(out.view(">u4"), np.arange(4000))
    impl.byteswap_inplace(bytearray(), 8)
    with pytest.raises(ValueError):
        impl.byteswap_inplace(bytearray(6), 4)
    with pytest.raises(ValueError):
        impl.byteswap_copy(b"abcd", bytearray(8), 4)
    with pytest.raises((ValueError, BufferError)):
        impl.byteswap_inplace(b"abcd", 2)


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


# ---------------------------------------------------------------------------
# selector
# ---------------------------------------------------------------------------


def test_kernels_selector(tmp_path):
    from zarrfast import kernels as _kernels

    pure = os.environ.get("ZARRFAST_PURE_PYTHON") == "1"
    assert _kernels.USING_EXTENSIONS is (ext is not None and not pure)
    if _kernels.USING_EXTENSIONS:
        assert _kernels.copy_region is ext.copy_region
    else:
        assert _kernels.copy_region is ref.copy_region
    code = "from zarrfast import kernels as k; print(k.USING_EXTENSIONS, k.project.__module__)"
    for flag, expected in (("1", False), ("0", ext is not None)):
        # import the same zarrfast as this process (installed, or a source tree built in place)
        pkg_parent = os.path.dirname(os.path.dirname(_kernels.__file__))
        env = dict(os.environ, ZARRFAST_PURE_PYTHON=flag, PYTHONPATH=pkg_parent)
        # cwd=tmp_path: `python -c` puts its cwd first on sys.path, which from the repo
        # root would import the source tree instead of the installed package
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=tmp_path).stdout.split()
        module = "zarrfast._ext._indexing" if expected else "zarrfast.kernels.reference"
        assert out == [str(expected), module]


def test_twin_signatures_match():
    import inspect

    if ext is None:
        pytest.skip("zarrfast._ext is not built")
    for name in vars(ext):
        params_c = list(inspect.signature(getattr(ext, name)).parameters)
        params_r = list(inspect.signature(getattr(ref, name)).parameters)
        assert params_c == params_r, name


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


# ---------------------------------------------------------------------------
# read_files_into (batched chunk-file reads)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_read_files_into_reads_sizes_and_reports_errors(impl, tmp_path):
    (tmp_path / "a").write_bytes(bytes(range(8)))
    (tmp_path / "b").write_bytes(b"short")
    (tmp_path / "c").write_bytes(bytes(range(100, 108)))
    (tmp_path / "d").mkdir()
    (tmp_path / "e").write_bytes(b"")
    names = ["a", "b", "missing", "c", "d", "e"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    dst = bytearray(b"\xff" * 48)
    sizes, errors = impl.read_files_into(paths, dst, i64(0, 8, 16, 24, 32, 40), 8)
    assert sizes.tolist() == [8, 5, -1, 8, -1, 0]
    import errno
    assert errors.tolist() == [0, 0, errno.ENOENT, 0, errno.EISDIR, 0]
    assert bytes(dst[0:8]) == bytes(range(8))
    assert bytes(dst[24:32]) == bytes(range(100, 108))
    # nothing is written for files of another size or that failed
    assert bytes(dst[8:24]) == b"\xff" * 16 and bytes(dst[32:48]) == b"\xff" * 16


@pytest.mark.parametrize("impl", IMPLS)
def test_read_files_into_validates_before_reading(impl, tmp_path):
    p = tmp_path / "a"
    p.write_bytes(bytes(8))
    dst = bytearray(16)
    with pytest.raises(ValueError, match="outside the destination"):
        impl.read_files_into([os.fsencode(p)], dst, i64(9), 8)
    with pytest.raises(ValueError, match="outside the destination"):
        impl.read_files_into([os.fsencode(p)], dst, i64(-1), 8)
    with pytest.raises(ValueError, match="1 paths but 2 offsets"):
        impl.read_files_into([os.fsencode(p)], dst, i64(0, 8), 8)
    with pytest.raises(TypeError, match="expected bytes"):
        impl.read_files_into([str(p)], dst, i64(0), 8)
    with pytest.raises(ValueError, match="NUL"):
        impl.read_files_into([b"a\0b"], dst, i64(0), 8)
    with pytest.raises(ValueError, match="negative"):
        impl.read_files_into([os.fsencode(p)], dst, i64(0), -1)


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=0, max_size=12),
       nbytes=st.integers(0, 40), seed=st.integers(0, 2**32 - 1),
       exact=st.booleans(), gap=st.integers(0, 5))
def test_read_files_into_matches_twin(tmp_path_factory, sizes, nbytes, seed, exact, gap):
    """Files of exactly ``nbytes`` (``exact``), or of at most ``nbytes``, are read into
    their slots; nothing else is written."""
    root = tmp_path_factory.mktemp("files")
    paths = []
    for i, size in enumerate(sizes):
        p = root / f"f{i}"
        p.write_bytes(rng_bytes(seed + i, size))
        paths.append(os.fsencode(p))
    slot = nbytes + gap
    offsets = i64(*[i * slot for i in range(len(sizes))])
    got, args = run_both(
        "read_files_into",
        lambda: [list(paths), bytearray(b"\xee" * (slot * len(sizes) + nbytes)),
                 offsets.copy(), nbytes, exact],
        outputs=(1,),
    )
    assert got[0] == "ok"
    file_sizes, errors = got[1]
    assert file_sizes.tolist() == sizes and not errors.any()
    for i, size in enumerate(sizes):
        part = bytes(args[1][i * slot:(i + 1) * slot])
        read = size == nbytes or (not exact and size <= nbytes)
        data = rng_bytes(seed + i, size) if read else b""
        assert part == data + b"\xee" * (slot - len(data))
