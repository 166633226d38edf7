"""A region of a blosc chunk decodes only the blocks that hold it (``blosc_getitem``):
the kernel, its twin and NumPy agree on every status and byte, and a damaged block the
region does not need is not seen, while one it needs fails the row.
"""

from __future__ import annotations

import math
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from zarrfast import kernels
from zarrfast.kernels import reference as ref

from _helpers.decode import (
    DECODED,
    FAILED,
    GUARD,
    PROPS,
    CompiledDecoder,
    TwinDecoder,
    blosc_header,
    c_strides,
    call_ranges,
    call_regions,
    damage_blosc_block,
    needs_blosc,
    numpy_place,
)
from _helpers.kernels import I64, i64, span_of

_decode = pytest.importorskip("zarrfast._ext._decode")

# (the twin decodes a region's blocks with numcodecs' own blosc_getitem)
pytestmark = [needs_blosc, pytest.mark.skipif(
    ref._numcodecs_c_blosc("blosc_getitem") is None, reason="numcodecs' c-blosc exports no blosc_getitem")]


def blosc_frame(data: bytes, cname: str, clevel: int, shuffle: int, blocksize: int,
                typesize: int) -> bytes:
    from numcodecs import blosc

    return blosc.compress(data, cname.encode(), clevel, shuffle, blocksize,
                          typesize=typesize)


def blocks_needed(lo: int, hi: int, nbytes: int, typesize: int, bs: int) -> set[int] | None:
    """The blocks a region reading bytes [lo, hi) decodes alone, or None when it decodes
    the chunk whole (every block, or items of the header's typesize that overrun it)."""
    start, stop = lo // typesize, -(-hi // typesize)
    if (lo == 0 and hi == nbytes) or stop * typesize > nbytes:
        return None
    got = set(range(start * typesize // bs, (stop * typesize - 1) // bs + 1))
    return got if len(got) < -(-nbytes // bs) else None


@st.composite
def partial_cases(draw):
    ndim = draw(st.integers(1, 3))
    itemsize, swap_unit = draw(st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 4), (8, 8),
                                                (8, 4)]))
    chunk = [draw(st.integers(1, 14)) for _ in range(ndim)]
    nbytes = math.prod(chunk) * itemsize
    typesize = draw(st.sampled_from([itemsize, 1, 3, 8]))
    settings = dict(cname=draw(st.sampled_from(["zstd", "zstd", "lz4", "blosclz"])),
                    clevel=draw(st.sampled_from([0, 1, 5, 5])),
                    shuffle=draw(st.sampled_from([0, 1, 2])),
                    blocksize=draw(st.sampled_from([0, 128, 256, 512, 2048])),
                    typesize=typesize)
    steps = [draw(st.sampled_from([1, 1, 2, -1, -3])) for _ in range(ndim)]
    base = c_strides(chunk, itemsize)
    chunk_strides = [b * s for b, s in zip(base, steps, strict=True)]
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        seed = draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        if draw(st.booleans()):
            data = rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
        else:  # compressible
            data = np.repeat(rng.integers(0, 4, -(-nbytes // 16), dtype=np.uint8),
                             16)[:nbytes].tobytes()
        frame = blosc_frame(data, **settings)
        ts, bs, nblocks, memcpyed = blosc_header(frame)
        counts, first = [], []
        for n, s in zip(chunk, steps, strict=True):
            k = draw(st.integers(1, -(-n // abs(s))))
            counts.append(k)
            # the first item visited: from the low end for a positive step, else the high
            lo_end = draw(st.integers(0, n - 1 - (k - 1) * abs(s)))
            first.append(lo_end if s > 0 else lo_end + (k - 1) * abs(s))
        offset = sum(f * b for f, b in zip(first, base, strict=True))
        lo, hi = span_of(counts, chunk_strides, itemsize)
        needed = blocks_needed(lo + offset, hi + offset, nbytes, ts, bs) or set()
        skipped = sorted(set(range(nblocks)) - needed)
        damaged = None
        if not memcpyed and draw(st.integers(0, 3)) > 0:
            # mostly a block the region does not need, when there is one
            damaged = draw(st.sampled_from(skipped) if skipped and draw(st.booleans())
                           else st.integers(0, nblocks - 1))
            frame = damage_blosc_block(frame, damaged)
        rows.append(dict(data=data, frame=frame, damaged=damaged, counts=counts,
                         chunk_offset=offset, direct=draw(st.integers(0, 4)) == 0,
                         header=(ts, bs)))
    return dict(chunk=chunk, nbytes=nbytes, itemsize=itemsize, swap_unit=swap_unit,
                chunk_strides=chunk_strides, rows=rows, share=draw(st.booleans()))


def kernel_undoes_blocks(frame: bytes) -> bool:
    """Whether the kernel decodes this frame's blocks itself (``_blosc_frame``: format 2,
    LZ4 or zstd streams it has, not copied whole), rather than with c-blosc."""
    how = _decode.blosc_frames()
    if how == "c-blosc" or frame[0] != 2 or frame[1] != 1 or frame[2] & 0x0A:
        return False
    return {1: "lz4", 4: "zstd"}.get(frame[2] >> 5) in how.split(": ", 1)[1].split(", ")


def expected_status(case, row, *, own_blocks: bool = False) -> int:
    """The status of ``row``: c-blosc's ``blosc_getitem`` decodes whole items of the
    header's typesize, so a region whose last item would overrun the chunk is decoded
    whole; the kernel's own block decoding (``own_blocks``) decodes the blocks that hold
    the region's bytes, whatever the typesize."""
    if row["damaged"] is None:
        return DECODED
    if row["direct"]:
        return FAILED
    lo, hi = span_of(row["counts"], case["chunk_strides"], case["itemsize"])
    lo, hi = lo + row["chunk_offset"], hi + row["chunk_offset"]
    if own_blocks and kernel_undoes_blocks(row["frame"]):
        bs = row["header"][1]
        return FAILED if lo // bs <= row["damaged"] <= (hi - 1) // bs else DECODED
    needed = blocks_needed(lo, hi, case["nbytes"], *row["header"])
    return DECODED if needed is not None and row["damaged"] not in needed else FAILED


def call_args(case, dst):
    """decode_regions' arguments after ``src``, ``src_offsets`` and ``src_sizes``; each
    row's region goes C-ordered into its own block of ``dst``."""
    rows, nbytes, itemsize = case["rows"], case["nbytes"], case["itemsize"]
    biggest = [max(r["counts"][d] for r in rows) for d in range(len(case["chunk"]))]
    dst_strides = c_strides(biggest, itemsize)
    block = max(math.prod(biggest) * itemsize, nbytes)
    return [i64(*[r["chunk_offset"] for r in rows]), i64(*case["chunk_strides"]), dst,
            i64(*[GUARD + k * block for k in range(len(rows))]), i64(*dst_strides),
            np.array([r["counts"] for r in rows], dtype=I64), itemsize,
            case["swap_unit"], np.array([r["direct"] for r in rows], dtype=np.uint8)], block


@PROPS
@given(case=partial_cases())
def test_partial_blosc_decoding_matches_twin_numpy_and_the_blocks_it_needs(case):
    rows = case["rows"]
    src = b"".join(r["frame"] for r in rows)
    offs = np.cumsum([0] + [len(r["frame"]) for r in rows[:-1]]).astype(I64)
    sizes = i64(*[len(r["frame"]) for r in rows])
    n = len(rows)
    _, block = call_args(case, None)
    dst0 = np.full(2 * GUARD + n * block, 0xEE, dtype=np.uint8)
    results = {}
    for name, cls in (("twin", TwinDecoder), ("kernel", CompiledDecoder)):
        dst = dst0.copy()
        args, _ = call_args(case, dst)
        status = call_regions(cls("blosc", case["nbytes"]),
            np.frombuffer(src, np.uint8), offs, sizes, *args, share=case["share"])
        results[name] = (status.tolist(), dst)
    with tempfile.TemporaryFile() as f:  # the same rows read from a file by the kernel
        f.write(src)
        f.flush()
        dst = dst0.copy()
        args, _ = call_args(case, dst)
        status, _errors = call_ranges(CompiledDecoder("blosc", case["nbytes"]),
            np.full(n, f.fileno(), I64), offs, sizes, *args, share=case["share"])
        results["ranges"] = (status.tolist(), dst)

    for name, (status, dst) in results.items():
        want_status = [expected_status(case, r, own_blocks=name != "twin") for r in rows]
        for r, s in zip(rows, want_status, strict=True):
            event("a damaged block the region skips" if r["damaged"] is not None
                  and s == DECODED else "damaged, failed" if r["damaged"] is not None
                  else "undamaged")
        want = dst0.copy()
        for k, (row, s) in enumerate(zip(rows, want_status, strict=True)):
            if s != DECODED:
                continue
            at = GUARD + k * block
            if row["direct"]:
                want[at:at + case["nbytes"]] = np.frombuffer(row["data"], np.uint8)
            else:
                numpy_place(want, np.frombuffer(row["data"], np.uint8), row["chunk_offset"],
                            case["chunk_strides"], at, call_args(case, None)[0][4],
                            row["counts"], case["itemsize"], case["swap_unit"])
        # a FAILED direct row may have scribbled on its own block
        mask = np.zeros(want.size, dtype=bool)
        for k, (row, s) in enumerate(zip(rows, want_status, strict=True)):
            if row["direct"] and s == FAILED:
                mask[GUARD + k * block:GUARD + k * block + case["nbytes"]] = True
        assert status == want_status, name
        assert np.array_equal(dst[~mask], want[~mask]), name


# (c-blosc keeps a forced block size for zstd; lz4 and blosclz split blocks of 128 items
# or more into one stream per byte of an item, and then enlarge them to 64 KiB)
@pytest.mark.parametrize(("cname", "blocksize"), [("zstd", 1024), ("lz4", 128),
                                                  ("blosclz", 128)])
def test_a_box_in_the_first_blocks_skips_a_damaged_last_block(cname, blocksize):
    """A (16, 16, 16) uint16 chunk in blocks of 1 KiB (2 planes each) or 128 bytes, the
    last one damaged: a box in planes 0-3 decodes; a box that ends on the chunk's last
    item, or the whole chunk, fails."""
    values = np.arange(16**3, dtype="<u2").reshape(16, 16, 16)
    frame = blosc_frame(values.tobytes(), cname, 5, 2, blocksize, 2)
    ts, bs, nblocks, memcpyed = blosc_header(frame)
    assert (ts, bs, nblocks, memcpyed) == (2, blocksize, 8192 // blocksize, False)
    frame = damage_blosc_block(frame, nblocks - 1)
    assert _decode.blosc_partial_bound()
    # boxes (z, y, x starts and stops): in planes 0-3; ending on the chunk's last item
    for (z0, y0, x0), (z1, y1, x1), want in (((0, 3, 5), (4, 9, 6), DECODED),
                                             ((12, 3, 15), (16, 16, 16), FAILED),
                                             ((0, 0, 0), (16, 16, 16), FAILED)):
        box = values[z0:z1, y0:y1, x0:x1]
        dst = np.zeros(box.size, dtype="<u2")
        for cls in (TwinDecoder, CompiledDecoder):
            dst[:] = 0
            status = call_regions(cls("blosc", values.nbytes),
                np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)),
                i64(z0 * 512 + y0 * 32 + x0 * 2), i64(512, 32, 2), dst.view(np.uint8),
                i64(0), i64(*c_strides(box.shape, 2)), np.array([box.shape], dtype=I64),
                2, 1, np.zeros(1, np.uint8))
            assert status.tolist() == [want], (cls, box.shape)
            if want == DECODED:
                assert np.array_equal(dst.reshape(box.shape), box)


def _decode_one(cls, frame: bytes, nbytes: int, lo: int, n: int) -> list[int]:
    """Status of bytes [lo, lo + n) of a chunk of nbytes bytes (itemsize 1)."""
    dst = np.zeros(n, np.uint8)
    return call_regions(cls("blosc", nbytes),
        np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)), i64(lo), i64(1), dst,
        i64(0), i64(1), np.array([[n]], dtype=I64), 1, 1, np.zeros(1, np.uint8)).tolist()


def test_headers_getitem_takes_and_the_whole_decode_refuses_fail_alike():
    """c-blosc's getitem checks less than its whole decode: a region of such a chunk
    fails as the whole chunk does (never a region of bytes left undecoded)."""
    # typesize 3 and blocks of 385 bytes: each block split into 3 streams of 128 bytes
    # (stored as they are) decodes 384 of its 385 bytes
    ts, bs, nblocks = 3, 385, 3
    nbytes = bs * nblocks
    payload = (np.arange(nbytes) % 251 + 1).astype(np.uint8).tobytes()
    head = 16 + 4 * nblocks
    starts = [head + j * 3 * (4 + 128) for j in range(nblocks)]
    body = b"".join(struct.pack("<i", 128) + payload[j * bs + k * 128:j * bs + (k + 1) * 128]
                    for j in range(nblocks) for k in range(3))
    short = (struct.pack("<BBBBiii", 2, 1, 0, ts, nbytes, bs, head + len(body))
             + struct.pack(f"<{nblocks}i", *starts) + body)
    # a valid chunk of 8 blocks, flagged "compressor flags from the future" (0x08)
    good = blosc_frame(bytes(range(256)) * 32, "zstd", 5, 0, 1024, 1)
    assert blosc_header(good)[2] == 8
    future = good[:2] + bytes([good[2] | 0x08]) + good[3:]
    for frame, n, regions in ((short, nbytes, [(0, nbytes), (380, 5), (0, 10)]),
                              (future, 8192, [(0, 8192), (0, 100), (5000, 7)])):
        for lo, k in regions:
            for cls in (TwinDecoder, CompiledDecoder):
                assert _decode_one(cls, frame, n, lo, k) == [FAILED], (cls, lo, k)
    assert _decode_one(CompiledDecoder, good, 8192, 5000, 7) == [DECODED]


def test_without_getitem_a_region_decodes_its_chunk_whole():
    linked = _decode.linked_blosc()
    if linked is None or not kernels.CODEC_BINDINGS["blosc"].startswith("linked"):
        pytest.skip("the linked c-blosc is not the one bound")
    values = np.arange(4096, dtype="<u2").tobytes()
    frame = damage_blosc_block(blosc_frame(values, "zstd", 5, 1, 1024, 2), 7)
    assert _decode_one(CompiledDecoder, frame, 8192, 0, 100) == [DECODED]
    previous = _decode.set_blosc_frames("c-blosc")  # (zarrfast's own frames decode parts)
    try:
        _decode.bind_blosc(linked[0], linked[1], 0, linked[2])  # (no getitem)
        assert not _decode.blosc_partial_bound()
        assert _decode_one(CompiledDecoder, frame, 8192, 0, 100) == [FAILED]
        if previous != "c-blosc":  # zarrfast's own frame decoding needs no getitem
            _decode.set_blosc_frames(previous)
            assert _decode_one(CompiledDecoder, frame, 8192, 0, 100) == [DECODED]
            assert _decode_one(CompiledDecoder, frame, 8192, 0, 8192) == [FAILED]
    finally:
        _decode.bind_blosc(*linked[:2], 0, linked[2], linked[3])
        _decode.set_blosc_frames(previous)
    assert _decode.blosc_partial_bound()


def test_the_linked_c_blosc_gives_getitem():
    linked = _decode.linked_blosc()
    if linked is None:
        pytest.skip("built without c-blosc")
    assert linked[3] != 0 and _decode.blosc_partial_bound()
    assert "; a region decodes only its blocks (blosc_getitem)" in kernels.CODEC_BINDINGS["blosc"]
