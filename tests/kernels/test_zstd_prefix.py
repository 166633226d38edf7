"""The batched zstd prefix decoder (``_ext._zstd_prefix.decode_prefixes``, one ``nogil``
call per batch) against the per-block ``ctypes`` loop it replaced
(``zstd_prefix.decode_prefixes(..., force_ctypes=True)``), its twin
(``kernels.reference.decode_prefixes``: numcodecs decodes whole frames) and numcodecs.

Hypothesis draws batches of frames (0 to 3 blocks of 128 KiB, levels 1 to 5, laid
out anywhere in ``src``), missing ones, damaged ones, frames of another size, and the
bytes each needs."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference, zstd_prefix

pytestmark = pytest.mark.skipif(zstd_prefix.IMPLEMENTATION != "kernel",
                                reason="the compiled zstd prefix kernel is not built/bound")

BLOCK = 2**17
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _data(rng: np.random.Generator, nbytes: int) -> bytes:
    """Compressible bytes (small values, runs): several blocks of zstd each."""
    return np.repeat(rng.integers(0, 40, -(-nbytes // 3), dtype=np.uint8), 3)[:nbytes].tobytes()


@st.composite
def batches(draw):
    # (no 0: numcodecs does not decode the empty frame it makes; chunks have bytes)
    nbytes = draw(st.sampled_from([1, 999, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 6))
    pieces, offsets, sizes, kinds, datas = [], [], [], [], []
    at = draw(st.integers(0, 9))
    pieces.append(bytes(at))
    for _ in range(n):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "missing", "cut", "junk", "other"]))
        data = _data(rng, nbytes if kind != "other" else nbytes + 5)
        frame = numcodecs.Zstd(level=draw(st.integers(1, 5))).encode(data)
        if kind == "cut":
            frame = frame[:draw(st.integers(0, len(frame) - 1))]
        elif kind == "junk":  # (the header kept, the blocks overwritten)
            frame = frame[:6] + rng.integers(0, 256, len(frame) - 6, dtype=np.uint8).tobytes()
        offsets.append(at)
        sizes.append(-1 if kind == "missing" else len(frame))
        pieces.append(frame)
        at += len(frame)
        gap = draw(st.integers(0, 5))
        pieces.append(bytes(gap))
        at += gap
        kinds.append(kind)
        datas.append(data)
    needs = [draw(st.integers(0, nbytes)) for _ in range(n)]
    src = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    return (nbytes, src, np.array(offsets, dtype=np.int64), np.array(sizes, dtype=np.int64),
            np.array(needs, dtype=np.int64), kinds, datas)


def _run(how: str, nbytes, src, offsets, sizes, needs, gap=3):
    n = len(offsets)
    dst = np.full(n * (nbytes + gap) + gap, 0xA5, dtype=np.uint8)
    dst_offsets = np.arange(n, dtype=np.int64) * (nbytes + gap) + gap
    if how == "twin":
        status = np.zeros(n, dtype=np.int8)
        reference.decode_prefixes(None, src, offsets, sizes, dst, dst_offsets, needs, nbytes,
                                  status)
    else:
        status = zstd_prefix.decode_prefixes(src, offsets, sizes, dst, dst_offsets, needs,
                                              nbytes, force_ctypes=how == "ctypes")
    return status, dst, dst_offsets


@SETTINGS
@given(batch=batches())
def test_the_kernel_decodes_what_the_ctypes_loop_twin_and_numcodecs_do(batch) -> None:
    nbytes, src, offsets, sizes, needs, kinds, datas = batch
    k_status, k_dst, dst_offsets = _run("kernel", nbytes, src, offsets, sizes, needs)
    c_status, c_dst, _ = _run("ctypes", nbytes, src, offsets, sizes, needs)
    t_status, t_dst, _ = _run("twin", nbytes, src, offsets, sizes, needs)
    # the per-block loop it replaced: the same statuses, the same bytes where decoded
    assert k_status.tolist() == c_status.tolist()
    for r, kind in enumerate(kinds):
        lo, need = int(dst_offsets[r]), int(needs[r])
        if kind == "missing":
            assert k_status[r] == zstd_prefix.NO_DATA == t_status[r]
        elif kind in ("ok",):
            assert k_status[r] == zstd_prefix.DECODED == t_status[r]
            # at least the bytes needed, equal to numcodecs' and the twin's
            assert bytes(k_dst[lo:lo + need]) == datas[r][:need] == bytes(t_dst[lo:lo + need])
            assert bytes(k_dst[lo:lo + need]) == bytes(c_dst[lo:lo + need])
        elif kind == "other":  # (declares nbytes + 5)
            assert k_status[r] == zstd_prefix.FAILED == t_status[r]
        elif kind == "cut":  # (not a whole frame: refused before decoding, as the twin)
            assert k_status[r] == zstd_prefix.FAILED == t_status[r]
        if k_status[r] == zstd_prefix.DECODED and kind != "ok":
            # a damaged frame decoded up to the bytes needed: the twin decodes it whole
            # only if it is whole, and then to the same bytes
            if t_status[r] == zstd_prefix.DECODED:
                assert bytes(k_dst[lo:lo + need]) == bytes(t_dst[lo:lo + need])
    # nothing written outside each frame's nbytes of dst
    for r in range(len(offsets) + 1):
        lo = 0 if r == 0 else int(dst_offsets[r - 1]) + nbytes
        hi = int(dst_offsets[r]) if r < len(offsets) else k_dst.size
        assert not (k_dst[lo:hi] != 0xA5).any()


def test_a_frame_damaged_past_the_bytes_needed_decodes_up_to_them() -> None:
    """The kernel stops after the block holding the last byte needed: a damaged later
    block is never read (the twin, decoding whole frames, fails on it)."""
    data = _data(np.random.default_rng(1), 3 * BLOCK)
    frame = bytearray(numcodecs.Zstd(level=1).encode(data))
    frame[-40:] = bytes(40)  # (the last block's end)
    src = np.frombuffer(bytes(frame), dtype=np.uint8)
    one, size = np.zeros(1, np.int64), np.array([src.size])
    need = np.array([BLOCK // 2])
    status, dst, at = _run("kernel", 3 * BLOCK, src, one, size, need)
    assert status.tolist() == [zstd_prefix.DECODED]
    assert bytes(dst[int(at[0]):int(at[0]) + BLOCK // 2]) == data[:BLOCK // 2]
    t_status, _, _ = _run("twin", 3 * BLOCK, src, one, size, need)
    assert t_status.tolist() == [zstd_prefix.FAILED]
    status, _, _ = _run("kernel", 3 * BLOCK, src, one, size, np.array([3 * BLOCK]))
    assert status.tolist() == [zstd_prefix.FAILED]


def test_the_kernel_refuses_bad_arguments_before_writing() -> None:
    from zarrfast._ext import _zstd_prefix as ext

    data = np.arange(1000, dtype="<i4").tobytes()
    frame = np.frombuffer(numcodecs.Zstd().encode(data), dtype=np.uint8)
    context = ext.Context()
    one, size = np.zeros(1, np.int64), np.array([frame.size], np.int64)
    status = np.full(1, 7, dtype=np.int8)
    dst = np.zeros(4000, dtype=np.uint8)
    for args, match in (
            ((frame, one, size + 1, dst, one, np.array([4]), 4000), "outside src"),
            ((frame, one - 1, size, dst, one, np.array([4]), 4000), "outside src"),
            ((frame, one, size, dst, one + 1, np.array([4]), 4000), "outside dst"),
            ((frame, one, size, dst, one, np.array([4001]), 4000), "outside dst"),
            ((frame, one, size, dst, one, np.array([-1]), 4000), "outside dst"),
            ((frame, one, size, dst, one, np.array([4]), -1), "negative"),
            ((frame, one, size, dst, one, np.array([4, 4]), 4000), "same length")):
        with pytest.raises(ValueError, match=match):
            ext.decode_prefixes(context, *args, status)
        with pytest.raises(ValueError, match=match):
            reference.decode_prefixes(None, *args, status)
        assert status.tolist() == [7] and not dst.any()
    ext.decode_prefixes(context, frame, one, size, dst, one, np.array([4000]), 4000, status)
    assert status.tolist() == [zstd_prefix.DECODED] and bytes(dst) == data
    read_only = np.zeros(4000, dtype=np.uint8)
    read_only.setflags(write=False)
    with pytest.raises(ValueError):
        ext.decode_prefixes(context, frame, one, size, read_only, one, np.array([4]), 4000,
                            status)


# -- decode_prefix_list: separate frames (values fetched one per request), where they lie

def _frames(src, offsets, sizes, kinds_of: str) -> list:
    """The frames of a batch as separate values: bytes, read-only memoryviews (as a
    remote store returns them) or writeable arrays, in turn; ``None`` when missing."""
    out: list = []
    for r, (a, size) in enumerate(zip(offsets.tolist(), sizes.tolist(), strict=True)):
        if size < 0:
            out.append(None)
            continue
        raw = src[a:a + size].tobytes()
        how = kinds_of[r % len(kinds_of)]
        out.append(raw if how == "b" else memoryview(raw) if how == "m"
                   else np.frombuffer(raw, dtype=np.uint8).copy())
    return out


@SETTINGS
@given(batch=batches(), kinds_of=st.sampled_from(["b", "m", "a", "bma"]))
def test_the_list_kernel_decodes_what_decode_prefixes_and_its_twin_do(batch, kinds_of) -> None:
    from zarrfast._ext import _zstd_prefix as ext

    nbytes, src, offsets, sizes, needs, kinds, datas = batch
    frames = _frames(src, offsets, sizes, kinds_of)
    k_status, k_dst, dst_offsets = _run("kernel", nbytes, src, offsets, sizes, needs)
    n, gap = len(frames), 3
    outs = []
    for how in ("list", "twin", "blobs"):
        dst = np.full(n * (nbytes + gap) + gap, 0xA5, dtype=np.uint8)
        status = np.full(n, 7, dtype=np.int8)
        if how == "list":
            ext.decode_prefix_list(ext.Context(), frames, dst, dst_offsets, needs, nbytes,
                                   status)
        elif how == "twin":
            reference.decode_prefix_list(None, frames, dst, dst_offsets, needs, nbytes, status)
        else:
            status = zstd_prefix.decode_prefix_blobs(frames, dst, dst_offsets, needs, nbytes)
        outs.append((status, dst))
    (l_status, l_dst), (t_status, t_dst), (b_status, b_dst) = outs
    # the same statuses and bytes as the kernel over one buffer (numcodecs' frames carry
    # no checksum: decode_prefix_blobs decodes them all); the bytes compared where a
    # frame decoded, up to the bytes needed (past them, and in a failed frame's space,
    # the kernel's contract leaves them undefined)
    assert l_status.tolist() == k_status.tolist() == b_status.tolist()
    for r, kind in enumerate(kinds):
        lo, need = int(dst_offsets[r]), int(needs[r])
        if kind == "cut":  # (never a whole frame: refused before decoding)
            assert l_status[r] == zstd_prefix.FAILED == t_status[r]
        elif kind == "ok":
            assert l_status[r] == zstd_prefix.DECODED == t_status[r]
            assert bytes(l_dst[lo:lo + need]) == datas[r][:need] == bytes(t_dst[lo:lo + need])
        elif kind in ("missing", "other"):
            assert l_status[r] == t_status[r]
        if l_status[r] == zstd_prefix.DECODED:
            assert bytes(l_dst[lo:lo + need]) == bytes(k_dst[lo:lo + need])
            assert bytes(l_dst[lo:lo + need]) == bytes(b_dst[lo:lo + need])
    # nothing written outside each frame's nbytes of dst
    for r in range(n + 1):
        lo = 0 if r == 0 else int(dst_offsets[r - 1]) + nbytes
        hi = int(dst_offsets[r]) if r < n else l_dst.size
        assert not (l_dst[lo:hi] != 0xA5).any()


def test_the_list_kernel_refuses_bad_arguments_before_writing() -> None:
    from zarrfast._ext import _zstd_prefix as ext

    data = np.arange(1000, dtype="<i4").tobytes()
    frame = numcodecs.Zstd().encode(data)
    context = ext.Context()
    one = np.zeros(1, np.int64)
    status = np.full(1, 7, dtype=np.int8)
    dst = np.zeros(4000, dtype=np.uint8)
    for args, match in (
            (([frame], dst, one + 1, np.array([4]), 4000), "outside dst"),
            (([frame], dst, one, np.array([4001]), 4000), "outside dst"),
            (([frame], dst, one, np.array([-1]), 4000), "outside dst"),
            (([frame], dst, one, np.array([4]), -1), "negative"),
            (([frame, frame], dst, one, np.array([4]), 4000), "same length"),
            (([np.arange(8)[::2]], dst, one, np.array([4]), 4000), "contiguous")):
        with pytest.raises(ValueError, match=match):
            ext.decode_prefix_list(context, *args, status)
        with pytest.raises(ValueError, match=match):
            reference.decode_prefix_list(None, *args, status)
        assert status.tolist() == [7] and not dst.any()
    ext.decode_prefix_list(context, [frame], dst, one, np.array([4000]), 4000, status)
    assert status.tolist() == [zstd_prefix.DECODED] and bytes(dst) == data
    # an empty value fails (no frame header); an int64 array's bytes are a frame's too
    empty = np.zeros(2, np.int8)
    ext.decode_prefix_list(context, [b"", None], np.zeros(8000, np.uint8),
                           np.array([0, 4000]), np.array([4, 4]), 4000, empty)
    assert empty.tolist() == [zstd_prefix.FAILED, zstd_prefix.NO_DATA]


def test_decode_prefix_blobs_leaves_checksummed_frames_to_a_whole_decode() -> None:
    """A frame with a content checksum is FAILED without decoding (a prefix cannot check
    it): the caller decodes it whole, which does."""
    data = _data(np.random.default_rng(2), 2 * BLOCK)
    plain = numcodecs.Zstd(level=1).encode(data)
    checked = numcodecs.Zstd(level=1, checksum=True).encode(data)
    dst = np.zeros(4 * BLOCK, np.uint8)
    status = zstd_prefix.decode_prefix_blobs([plain, memoryview(checked)], dst,
                                             np.array([0, 2 * BLOCK]), np.array([10, 10]),
                                             2 * BLOCK)
    assert status.tolist() == [zstd_prefix.DECODED, zstd_prefix.FAILED]
    assert bytes(dst[:10]) == data[:10] and not dst[2 * BLOCK:].any()
