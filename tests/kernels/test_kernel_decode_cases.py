"""Batched decoding (``ChunkDecoder``), explicit cases: argument rejection, types and
edges, failed rows, decompression bombs, the known divergences between the kernel and
its twin, and the blosc decoder against its twin.
"""

from __future__ import annotations

import resource
import tracemalloc

import numpy as np
import pytest

from _helpers.decode import (
    CHUNK,
    DECODED,
    DECODERS,
    FAILED,
    FRAME,
    GUARD,
    NO_DATA,
    CompiledDecoder,
    TwinDecoder,
    call_regions,
    compress,
    compress_stream,
    independent_decode,
    needs_blosc,
    needs_kernel,
    new_decoder,
    numpy_place,
    outcome,
    rle_frame,
    skippable,
)
from _helpers.kernels import I64, i64

# ---------------------------------------------------------------------------
# decode_regions: explicit cases
# ---------------------------------------------------------------------------


def base_args(**over):
    """Two rows of a (4, 3) uint16 chunk: row 0 places rows 1-2 into a 2x3 dst block,
    row 1 decodes straight into dst[32:56]."""
    src = np.frombuffer(FRAME + FRAME, dtype=np.uint8)
    args = dict(
        src=src,
        src_offsets=i64(0, len(FRAME)),
        src_sizes=i64(len(FRAME), len(FRAME)),
        chunk_offsets=i64(6, 0),
        chunk_strides=i64(6, 2),
        dst=np.full(64, 0xEE, dtype=np.uint8),
        dst_offsets=i64(4, 32),
        dst_strides=i64(6, 2),
        shapes=np.array([[2, 3], [4, 3]], dtype=I64),
        itemsize=2,
        swap_unit=1,
        direct=np.array([0, 1], dtype=np.uint8),
    )
    args.update(over)
    return args


def call(cls, args, nbytes=24):
    return call_regions(new_decoder(cls, nbytes), *args.values())


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_regions_base_case(cls):
    args = base_args()
    status = call(cls, args)
    assert status.tolist() == [DECODED, DECODED]
    dst = args["dst"]
    assert dst[4:16].tobytes() == CHUNK[6:18]
    assert dst[32:56].tobytes() == CHUNK
    assert (dst[:4] == 0xEE).all() and (dst[16:32] == 0xEE).all() and (dst[56:] == 0xEE).all()
    # a byte swap on the strided row; none on the direct row (raw chunk bytes)
    args = base_args(swap_unit=2)
    call(cls, args)
    swapped = np.frombuffer(CHUNK, dtype="<u2").byteswap().tobytes()
    assert args["dst"][4:16].tobytes() == swapped[6:18]
    assert args["dst"][32:56].tobytes() == CHUNK
    # a transposed, reversed read: dst[j, i] = chunk[3 - i, j]
    args = base_args(chunk_offsets=i64(18, 0), chunk_strides=i64(-6, 2),
                     shapes=np.array([[4, 3], [0, 0]], dtype=I64), dst_strides=i64(2, 8),
                     dst=np.zeros(64, np.uint8), direct=np.zeros(2, np.uint8),
                     dst_offsets=i64(0, 0))
    call(cls, args)
    want = np.frombuffer(CHUNK, dtype="<u2").reshape(4, 3)[::-1].T
    assert np.array_equal(args["dst"][:24].view("<u2").reshape(3, 4), want)


REJECT = [
    ("src_offsets", i64(0)),
    ("src_sizes", i64(1, 2, 3)),
    ("chunk_offsets", i64()),
    ("dst_offsets", i64(4)),
    ("direct", np.zeros(3, np.uint8)),
    ("chunk_strides", i64(6)),
    ("dst_strides", i64(6, 2, 1)),
    ("src_offsets", i64(0, 2 * len(FRAME) - len(FRAME) + 1)),  # src range past the end
    ("src_offsets", i64(-1, 0)),
    ("src_sizes", i64(2 * len(FRAME) + 1, len(FRAME))),
    ("chunk_offsets", i64(13, 0)),  # region past the chunk's 24 bytes
    ("chunk_offsets", i64(-6, 0)),
    ("chunk_strides", i64(-12, 2)),  # reversed rows from offset 6: byte -6
    ("dst_offsets", i64(53, 32)),  # region past dst
    ("dst_offsets", i64(-1, 32)),
    ("dst_offsets", i64(4, 41)),  # direct block past dst
    ("dst_offsets", i64(4, -1)),
    ("dst_strides", i64(0, 2)),  # zero dst stride along a dim of 2
    ("swap_unit", 3),
    ("swap_unit", 4),  # itemsize 2 is not a multiple of 4
    ("swap_unit", 0),
    ("itemsize", 0),
    ("shapes", np.array([[2, -3], [4, 3]], dtype=I64)),
]


@pytest.mark.parametrize("cls", DECODERS)
@pytest.mark.parametrize(("name", "value"), REJECT,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(REJECT)])
def test_decode_regions_rejects_before_writing(cls, name, value):
    args = base_args(**{name: value})
    before = args["dst"].copy()
    # (the sources' checks name decode_regions; the places' the Placement, made first)
    with pytest.raises(ValueError, match="decode_regions|Placement"):
        call(cls, args)
    assert np.array_equal(args["dst"], before)


@needs_kernel
@pytest.mark.parametrize(("name", "value"), REJECT,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(REJECT)])
def test_decode_regions_rejection_messages_match_twin(name, value):
    got = []
    for cls in (TwinDecoder, CompiledDecoder):
        args = base_args(**{name: value})
        got.append(outcome(call, cls, args))
    assert got[0][0] == got[1][0] == "raised"
    assert got[0][1] is got[1][1] is ValueError
    assert got[0][2] == got[1][2]


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_regions_missing_rows_are_not_validated(cls):
    """A row with a negative size is NO_DATA: its (nonsense) source range is never looked
    at, and its place is not written."""
    args = base_args(src_offsets=i64(-5, 10**9), src_sizes=i64(-1, -7))
    before = args["dst"].copy()
    assert call(cls, args).tolist() == [NO_DATA, NO_DATA]
    assert np.array_equal(args["dst"], before)


@pytest.mark.parametrize("cls", DECODERS)
def test_a_placement_checks_every_row_whatever_the_sources(cls):
    """The places are checked once, when the placement is made, before any source is
    known: a row outside the chunk or ``dst`` is refused even when its chunk will turn
    out to be missing (the decoders used to skip the checks of such a row)."""
    args = base_args(src_offsets=i64(-5, 10**9), src_sizes=i64(-1, -7),
                     chunk_offsets=i64(10**6, 0), dst_offsets=i64(-3, 10**6))
    with pytest.raises(ValueError, match=r"^Placement: .* \(chunk 0\)$"):
        call(cls, args)


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_regions_types_and_edges(cls):
    assert new_decoder(cls, 24).nbytes == 24
    with pytest.raises(ValueError, match="negative"):
        new_decoder(cls, -1)
    with pytest.raises(ValueError, match="not bound"):
        cls("lz4", 24)
    # no rows
    args = base_args(src_offsets=i64(), src_sizes=i64(), chunk_offsets=i64(),
                     dst_offsets=i64(), shapes=np.zeros((0, 2), I64),
                     direct=np.zeros(0, np.uint8))
    status = call(cls, args)
    assert status.dtype == np.int8 and status.shape == (0,)
    # read-only dst, lists for arrays, non-contiguous arrays
    readonly = np.zeros(64, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError):
        call(cls, base_args(dst=readonly))
    with pytest.raises(TypeError):
        call(cls, base_args(src_offsets=[0, len(FRAME)]))
    with pytest.raises(ValueError):
        call(cls, base_args(dst_offsets=np.arange(8, dtype=I64)[::4]))


@needs_kernel
def test_decode_regions_type_errors_match_twin():
    cases = [
        dict(src_offsets=[0, len(FRAME)]),
        dict(dst=b"\x00" * 64),
        dict(dst=None),
        dict(dst_offsets=np.arange(8, dtype=I64)[::4]),
        dict(src_sizes=np.array([len(FRAME)] * 2, dtype=np.int32)),
        dict(shapes=i64(2, 3)),
        dict(direct=np.zeros(2, dtype=bool)),
        dict(itemsize=2**70),
    ]
    for over in cases:
        r = outcome(call, TwinDecoder, base_args(**over))
        c = outcome(call, CompiledDecoder, base_args(**over))
        assert r[0] == c[0], (over, r, c)
        if r[0] == "raised":
            assert r[1] is c[1], (over, r, c)
        else:
            assert r[1].tolist() == c[1].tolist()


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_regions_failed_rows_leave_dst_alone(cls):
    """Every kind of bad stream is FAILED, non-direct rows leave dst untouched, and a
    good row after a failed one (stale scratch) is placed from its own stream."""
    other = np.arange(100, 112, dtype="<u2").tobytes()
    frames = [b"", b"garbage!", FRAME[:-3], compress(CHUNK[:-2]), compress(CHUNK + b"xy"),
              compress(CHUNK, content_size=False)[:-1], FRAME + b"\x00\x01",
              rle_frame(24, 1, declare=25), rle_frame(26, 1), compress(other)]
    src = b"".join(frames)
    offs = np.cumsum([0] + [len(f) for f in frames[:-1]]).astype(I64)
    n = len(frames)
    for direct in (0, 1):
        dst = np.full(24 * n, 0xEE, dtype=np.uint8)
        status = call_regions(new_decoder(cls, 24),
            np.frombuffer(src, np.uint8), offs, i64(*map(len, frames)), np.zeros(n, I64),
            i64(2), dst, np.arange(n, dtype=I64) * 24, i64(2), np.full((n, 1), 12, I64), 2, 1,
            np.full(n, direct, np.uint8))
        assert status.tolist() == [FAILED] * (n - 1) + [DECODED]
        assert dst[-24:].tobytes() == other
        if not direct:
            assert (dst[:-24] == 0xEE).all()


# -- decompression bombs --------------------------------------------------------

@pytest.mark.parametrize("cls", DECODERS)
@pytest.mark.parametrize("direct", [0, 1])
def test_decode_regions_bombs_fail_in_bounded_memory(cls, direct):
    nbytes = 4096
    bombs = [
        rle_frame(1 << 33, 3),  # 8 GiB, no declared size (a 256 KiB frame)
        rle_frame(1 << 33, 3, declare=nbytes),  # 8 GiB, declared as the chunk's size
        rle_frame(nbytes, 3, declare=1 << 40),  # declares 1 TiB
        compress(b"\x00" * (nbytes * 256)),  # declares 1 MiB
    ]
    src = b"".join(bombs)
    offs = np.cumsum([0] + [len(b) for b in bombs[:-1]]).astype(I64)
    n = len(bombs)
    dst = np.zeros(n * nbytes, dtype=np.uint8)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tracemalloc.start()
    try:
        status = call_regions(new_decoder(cls, nbytes),
            np.frombuffer(src, np.uint8), offs, i64(*map(len, bombs)), np.zeros(n, I64),
            i64(1), dst, np.arange(n, dtype=I64) * nbytes, i64(1), np.full((n, 1), nbytes, I64),
            1, 1, np.full(n, direct, np.uint8))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert status.tolist() == [FAILED] * n
    assert peak < 16 << 20, peak
    assert rss1 - rss0 < 256 << 10, (rss0, rss1)  # never decoded the 8 GiB


# -- known divergences between the kernel and its twin ----------------------------

@pytest.mark.parametrize("cls", DECODERS)
@pytest.mark.parametrize("frame", [compress(CHUNK, checksum=True)[:-k] for k in (1, 2, 3, 4)]
                         + [compress_stream(CHUNK, 2, checksum=True)[:-2]],
                         ids=["cut1", "cut2", "cut3", "cut4", "stream-cut2"])
def test_truncated_checksum_is_failed(cls, frame):
    """A frame cut inside its 4-byte checksum is not a complete zstd stream: zstd
    (ZSTD_decompressDCtx) and the per-chunk path reject it."""
    assert independent_decode(frame, 24) is None
    dst = np.zeros(24, np.uint8)
    status = call_regions(new_decoder(cls, 24),
        np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)), i64(0), i64(1), dst, i64(0),
        i64(1), i64(24).reshape(1, 1), 1, 1, np.zeros(1, np.uint8))
    assert status.tolist() == [FAILED]


@pytest.mark.parametrize("cls", DECODERS)
@pytest.mark.parametrize("pad", [3, 24])
def test_skippable_frame_before_the_data_is_left_to_the_per_chunk_path(cls, pad):
    """A skippable frame then a frame of the chunk is a valid zstd stream, but its first
    frame declares 0 bytes (ZSTD_getFrameContentSize), so the batched decoder reports
    FAILED and leaves it to the per-chunk path (which decodes it: tested below), kernel
    and twin alike, and writes nothing."""
    frame = skippable(pad) + FRAME
    dst = np.zeros(24, np.uint8)
    status = call_regions(new_decoder(cls, 24),
        np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)), i64(0), i64(1), dst, i64(0),
        i64(1), i64(24).reshape(1, 1), 1, 1, np.zeros(1, np.uint8))
    assert status.tolist() == [FAILED]
    assert not dst.any()


@needs_kernel
@pytest.mark.parametrize("frame", [compress(CHUNK, checksum=True)[:-2], skippable(24) + FRAME],
                         ids=["checksum-cut", "skippable-24"])
def test_known_divergences_agree(frame):
    got = []
    for cls in (TwinDecoder, CompiledDecoder):
        dst = np.zeros(24, np.uint8)
        got.append(call_regions(new_decoder(cls, 24),
            np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)), i64(0), i64(1), dst,
            i64(0), i64(1), i64(24).reshape(1, 1), 1, 1, np.zeros(1, np.uint8)).tolist())
    assert got[0] == got[1]


# ---------------------------------------------------------------------------
# blosc (``ChunkDecoder("blosc", nbytes)``, when the decoder takes it)
# ---------------------------------------------------------------------------


def blosc_variants(data: bytes, cname: str, shuffle: int, typesize: int, seed: int):
    """A valid blosc buffer of ``data`` and damaged ones (named)."""
    import numcodecs

    arr = np.frombuffer(data, dtype=f"u{typesize}")
    good = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle).encode(arr)
    rng = np.random.default_rng(seed)
    out = {
        "good": good,
        "truncated": good[:-1],
        "extra": good + b"x",
        "header_only": good[:16],
        "short_header": good[:15],
        "declares_more": good[:4] + (len(data) + 1).to_bytes(4, "little") + good[8:],
        "cbytes_lie": good[:12] + (len(good) - 1).to_bytes(4, "little") + good[16:],
        "wrong_size": numcodecs.Blosc(cname=cname, shuffle=shuffle).encode(arr[:-2]),
        "empty": b"",
    }
    for k in range(8):
        p = int(rng.integers(0, len(good)))
        out[f"flip{k}"] = good[:p] + bytes([good[p] ^ int(rng.integers(1, 256))]) + good[p + 1:]
    return out


@needs_blosc
@pytest.mark.parametrize("cname", ["lz4", "zstd", "blosclz", "zlib"])
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_blosc_decode_regions_matches_twin(cname, shuffle):
    """Valid and damaged blosc buffers in one batch: kernel and twin agree on every
    status and byte (a damaged payload may still "decode": blosc has no checksum), and
    the valid ones are placed as NumPy says."""
    nbytes, itemsize = 256, 4
    data = np.random.default_rng(3).integers(0, 8, nbytes, dtype=np.uint8).tobytes()
    frames = blosc_variants(data, cname, shuffle, itemsize, seed=shuffle)
    names = list(frames)
    n = len(names)
    src = b"".join(frames[k] for k in names)
    offs = np.cumsum([0] + [len(frames[k]) for k in names[:-1]]).astype(I64)
    for direct in (0, 1):
        outs = []
        for cls in (TwinDecoder, CompiledDecoder):
            # non-direct rows: every other item of the chunk, byte-swapped, reversed
            dst = np.full(GUARD + n * nbytes + GUARD, 0xEE, dtype=np.uint8)
            status = call_regions(cls("blosc", nbytes),
                np.frombuffer(src, np.uint8), offs, i64(*[len(frames[k]) for k in names]),
                np.full(n, nbytes - itemsize, I64), i64(-2 * itemsize), dst,
                GUARD + np.arange(n, dtype=I64) * nbytes, i64(itemsize),
                np.full((n, 1), nbytes // (2 * itemsize), I64), itemsize, 4,
                np.full(n, direct, np.uint8))
            outs.append((status.tolist(), dst))
        (s_twin, d_twin), (s_kern, d_kern) = outs
        assert s_twin == s_kern, dict(zip(names, zip(s_twin, s_kern, strict=True), strict=True))
        mask = np.zeros(d_twin.size, dtype=bool)
        for r, s in enumerate(s_twin):
            if direct and s == FAILED:
                mask[GUARD + r * nbytes:GUARD + (r + 1) * nbytes] = True
        assert np.array_equal(d_twin[~mask], d_kern[~mask])
        assert (d_kern[:GUARD] == 0xEE).all() and (d_kern[-GUARD:] == 0xEE).all()
        expect = dict.fromkeys(["good"], DECODED) | dict.fromkeys(
            ["truncated", "extra", "header_only", "short_header", "declares_more",
             "cbytes_lie", "wrong_size", "empty"], FAILED)
        for name, status in zip(names, s_kern, strict=True):
            if name in expect:
                assert status == expect[name], name
        good = names.index("good")
        block = d_kern[GUARD + good * nbytes:GUARD + (good + 1) * nbytes]
        if direct:
            assert block.tobytes() == data
        else:
            want = np.full(nbytes, 0xEE, dtype=np.uint8)
            numpy_place(want, np.frombuffer(data, np.uint8), nbytes - itemsize,
                        [-2 * itemsize], 0, [itemsize], [nbytes // (2 * itemsize)],
                        itemsize, 4)
            assert np.array_equal(block, want)
