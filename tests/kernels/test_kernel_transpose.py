"""The copy engine's ``transpose`` and ``byteswap_*`` kernels (in ``_assemble``) against
their twins and NumPy (``np.transpose``, ``byteswap``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers.kernels import IMPLS, PROPS, i64, rng_bytes, run_both

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
