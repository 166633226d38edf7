"""``Placement``: where a batch's decoded chunks go, checked once and shared by the
decoders' calls (``part``, ``take``, ``Placement.box``), against its twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zarrfast import kernels as _kernels
from zarrfast.kernels import reference as ref

from _helpers.decode import (
    CHUNK,
    DECODED,
    DECODERS,
    FRAME,
    CompiledDecoder,
    needs_kernel,
    new_decoder,
    outcome,
)
from _helpers.kernels import I64, i64


def placement_cls(dec):
    return ref.Placement if isinstance(dec, ref.ChunkDecoder) else _kernels.Placement


def four_rows(cls, dst):
    """Four (4, 3) uint16 chunks, each whole into its own 24 bytes of ``dst``: rows 0
    and 2 straight into place, rows 1 and 3 by a copy of their bytes swapped."""
    return cls(24, np.zeros(4, I64), i64(6, 2), dst, np.arange(4, dtype=I64) * 24, i64(6, 2),
               np.full((4, 2), (4, 3), I64), 2, 2, np.array([1, 0, 1, 0], np.uint8))


@pytest.mark.parametrize("cls", DECODERS)
def test_parts_and_rows_of_a_placement_place_what_the_whole_places(cls):
    dec = new_decoder(cls, 24)
    src = np.frombuffer(FRAME * 4, np.uint8)
    offs = np.arange(4, dtype=I64) * len(FRAME)
    sizes = np.full(4, len(FRAME), I64)
    whole = np.zeros(96, np.uint8)
    p = four_rows(placement_cls(dec), whole)
    assert len(p) == 4 and p.direct.tolist() == [1, 0, 1, 0]
    assert dec.decode_regions(src, offs, sizes, p).tolist() == [DECODED] * 4
    swapped = np.frombuffer(CHUNK, "<u2").byteswap().tobytes()
    assert whole.tobytes() == CHUNK + swapped + CHUNK + swapped
    parts = np.zeros(96, np.uint8)
    q = four_rows(placement_cls(dec), parts)
    for lo, hi in ((0, 1), (1, 3), (3, 4), (4, 4)):
        dec.decode_regions(src, offs[lo:hi], sizes[lo:hi], q.part(lo, hi))
    assert parts.tobytes() == whole.tobytes()
    taken = np.zeros(96, np.uint8)
    t = four_rows(placement_cls(dec), taken).take(i64(3, 0))
    assert t.direct.tolist() == [0, 1]
    dec.decode_regions(src, offs[:2], sizes[:2], t)
    assert taken[72:].tobytes() == swapped and taken[:24].tobytes() == CHUNK
    assert not taken[24:72].any()
    with pytest.raises(IndexError):
        q.part(2, 5)
    with pytest.raises(IndexError):
        q.take(i64(4))


@pytest.mark.parametrize("cls", DECODERS)
def test_a_placement_is_of_one_chunk_size_and_a_box_call_takes_a_box(cls, tmp_path):
    dec = new_decoder(cls, 24)
    p = four_rows(placement_cls(dec), np.zeros(96, np.uint8))
    with pytest.raises(ValueError, match="a placement of 24-byte chunks, the decoder's "
                                         "are 48 bytes"):
        new_decoder(cls, 48).decode_regions(np.zeros(0, np.uint8), i64(-1, -1, -1, -1),
                                            i64(-1, -1, -1, -1), p)
    with pytest.raises(ValueError, match="4 rows but 1 src_offsets"):
        dec.decode_regions(np.zeros(0, np.uint8), i64(-1), i64(-1), p)
    with pytest.raises(ValueError, match="not a box's"):
        dec.decode_box_files(bytes(tmp_path), b"c/", b"/", p)
    with pytest.raises(TypeError):
        dec.decode_regions(np.zeros(0, np.uint8), i64(), i64(), None)


@needs_kernel
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("swap_unit", [1, 2])
def test_a_box_placement_is_its_twin(order, swap_unit):
    """The rows, direct flags, shards and counts of ``Placement.box`` are the twin's."""
    chunk, itemsize = (2, 3), 2
    strides = i64(6, 2) if order == "C" else i64(2, 4)
    got = []
    for start, count, dst_strides in (((1, 2), (5, 7), (14, 2)), ((0, 0), (6, 3), (6, 2))):
        for cls in (ref.Placement, _kernels.Placement):
            dst = np.zeros(math.prod(count) * itemsize, np.uint8)
            p = cls.box(12, i64(*start), i64(*count), i64(*chunk), strides, dst,
                        i64(*dst_strides), itemsize, swap_unit, cps=i64(2, 1))
            got.append((len(p), p.nshards, p.n_inner, p.direct.tolist()))
    assert got[0] == got[1] and got[2] == got[3]
    assert got[0][:3] == (9, 6, 2) and got[2][:3] == (3, 2, 2)
    # (whole chunks whose block of dst has their own strides: straight into place)
    assert got[0][3].count(1) == 0
    assert got[2][3].count(1) == (3 if order == "C" and swap_unit == 1 else 0)


@needs_kernel
@pytest.mark.parametrize("change", [
    dict(nbytes=-1), dict(chunk_offsets=i64(13, 0)), dict(dst_offsets=i64(4, 41)),
    dict(swap_unit=3), dict(shapes=np.array([[2, -3], [4, 3]], I64)),
    dict(direct=np.zeros(3, np.uint8)), dict(dst_strides=i64(0, 2)),
])
def test_a_placement_refuses_what_its_twin_refuses_with_the_same_words(change):
    args = dict(nbytes=24, chunk_offsets=i64(6, 0), chunk_strides=i64(6, 2),
                dst=np.zeros(64, np.uint8), dst_offsets=i64(4, 32), dst_strides=i64(6, 2),
                shapes=np.array([[2, 3], [4, 3]], I64), itemsize=2, swap_unit=1,
                direct=np.array([0, 1], np.uint8))
    args.update(change)
    got = [outcome(cls, *args.values()) for cls in (ref.Placement, _kernels.Placement)]
    assert got[0][0] == got[1][0] == "raised"
    assert got[0][1:] == got[1][1:]
    assert got[0][2].startswith("Placement: ")


@needs_kernel
def test_a_placement_keeps_the_rows_it_checked():
    """The caller's arrays changed after the placement was made (to places far outside
    ``dst``) change nothing placed."""
    dst = np.zeros(48, np.uint8)
    offsets, direct = i64(0, 24), np.array([1, 1], np.uint8)
    p = _kernels.Placement(24, i64(0, 0), i64(6, 2), dst, offsets, i64(6, 2),
                           np.full((2, 2), (4, 3), I64), 2, 1, direct)
    offsets[:] = 2**40
    direct[:] = 0
    status = CompiledDecoder("zstd", 24).decode_regions(
        np.frombuffer(FRAME, np.uint8), i64(0, 0), i64(len(FRAME), len(FRAME)), p)
    assert status.tolist() == [DECODED, DECODED]
    assert dst.tobytes() == CHUNK * 2
