"""Blosc frames of LZ4 streams made by zarrfast itself (``zf_blosc_enc.h``, the forward
filters of ``src_ext/zf_shuffle.h``) against numcodecs' c-blosc: the same bytes.

* the filters (``blosc_shuffle``, ``blosc_bitshuffle``), scalar and AVX2, against their
  NumPy twins (``zarrfast.kernels.reference``) and undone by the unshuffle kernels;
  bad arguments refused by both;
* whole frames (``blosc_compress``) with each instruction set, with c-blosc alone
  (``set_blosc_frames("c-blosc")``) and with numcodecs' ``Blosc.encode``: byte for
  byte, and decoded back by numcodecs;
* ``blosc_compress_regions``: the sizes and bytes of c-blosc's;
* who makes the frames (``blosc_encoder``, ``CODEC_BINDINGS["blosc"]``,
  ``ZARRFAST_BLOSC_FRAMES=c-blosc`` at import);
* the engine: arrays with ``BloscCodec("lz4", ...)`` written with each instruction set
  and with c-blosc alone store the same chunk files.

Every test leaves the choice it found (``ZARRFAST_BLOSC_FRAMES``'s) behind
(``_restore_after``).
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import kernels
from zarrfast.kernels import reference as ref
from zarrfast.storage import LocalStore

from _helpers.decode import blosc_frames_with, blosc_isas, needs_blosc

_decode = pytest.importorskip("zarrfast._ext._decode")
blosc = pytest.importorskip("numcodecs.blosc")

if not hasattr(_decode, "blosc_encoder"):  # (an extension built before the encoder)
    pytest.skip("the extension makes no blosc frames itself", allow_module_level=True)

pytestmark = [needs_blosc,
              pytest.mark.skipif(kernels.blosc_compress is None,
                                 reason="c-blosc compression is not bound")]


#: how blosc frames were made / decoded before this module (what every test leaves behind)
_ORIGINAL = _decode.set_blosc_frames("auto")


ISAS = blosc_isas(_decode)
_decode.set_blosc_frames("scalar")
#: whether numcodecs' LZ4 was bound (``bind_lz4_compress``): the encoder is on at all
OWN_ENCODER = _decode.blosc_encoder() != "c-blosc"
_decode.set_blosc_frames(_ORIGINAL)
needs_encoder = pytest.mark.skipif(not OWN_ENCODER,
                                   reason="numcodecs' c-blosc exports no LZ4 to bind")
SENTINEL = 0xA5
SHUFFLE_NAMES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


@pytest.fixture(autouse=True)
def _restore_after():
    try:
        yield
    finally:
        _decode.set_blosc_frames(_ORIGINAL)


@pytest.fixture
def _numcodecs_without_threads():
    """numcodecs' ``blosc_compress_ctx`` path (one internal thread: what zarrfast
    compresses with), its setting restored after."""
    saved = blosc.use_threads
    blosc.use_threads = False
    try:
        yield
    finally:
        blosc.use_threads = saved


def frames_with(isa: str):
    return blosc_frames_with(_decode, isa)


def u8(b) -> np.ndarray:
    return np.frombuffer(bytes(b), np.uint8)


# ---------------------------------------------------------------------------
# 1. the forward filters against their twins, and undone by the unshuffle kernels
# ---------------------------------------------------------------------------

FORWARD = {"shuffle": (_decode.blosc_shuffle, ref.blosc_shuffle,
                       _decode.blosc_unshuffle, ref.blosc_unshuffle),
           "bitshuffle": (_decode.blosc_bitshuffle, ref.blosc_bitshuffle,
                          _decode.blosc_bitunshuffle, ref.blosc_bitunshuffle)}

#: item counts around the AVX2 paths: 32 items a step, tiles of 1024 items, groups of 8
SPECIAL_ITEMS = [1, 7, 8, 16, 24, 31, 32, 33, 40, 64, 96, 128, 1000, 1016, 1024, 1032, 1056,
                 2040, 2048, 2056, 3072, 4104, 8192]


def run(fn, src: np.ndarray, ts: int, *args) -> np.ndarray:
    """``fn(src, dst, ts, *args)`` into a ``dst`` of ``SENTINEL`` bytes (every byte is
    then known to be written, or the comparison fails)."""
    dst = np.full(src.size, SENTINEL, np.uint8)
    fn(src, dst, ts, *args)
    return dst


@st.composite
def blocks(draw):
    """(src, ts): a block of random bytes; sizes weighted to whole groups of 8 / 32 /
    1024 items and to sizes that are not a multiple of the typesize."""
    ts = draw(st.one_of(st.sampled_from([1, 2, 4, 8, 3, 16, 2, 4]), st.integers(1, 255)))
    if draw(st.booleans()):
        nitems = draw(st.sampled_from(SPECIAL_ITEMS))
        extra = draw(st.sampled_from([0, 0, 1, max(ts - 1, 0)]))
        size = nitems * ts + extra
        if size > 70000:
            size = 70000 // ts // 8 * 8 * ts + extra
    else:
        size = draw(st.one_of(st.integers(1, 70000),
                              st.sampled_from([8, 32, 1024, 2048, 32768, 65536, 69632])))
    size = max(size, 1)
    event(f"items a multiple of 8: {(size // ts) % 8 == 0 and size >= ts}")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.integers(0, 256, size, dtype=np.uint8), ts


@pytest.mark.parametrize("kind", sorted(FORWARD))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=blocks())
def test_forward_filters_are_their_twins_and_undone_by_the_unshuffles(kind, case):
    src, ts = case
    src.flags.writeable = False  # (a read-only source is taken, and left as it was)
    compiled, twin, undo, twin_undo = FORWARD[kind]
    want = run(twin, src, ts)
    np.testing.assert_array_equal(run(twin_undo, want, ts), src)  # the twins are inverses
    for isa in ISAS:
        got = run(compiled, src, ts, isa)
        np.testing.assert_array_equal(got, want, err_msg=f"{kind} {isa} ts={ts} n={src.size}")
        np.testing.assert_array_equal(run(undo, got, ts, isa), src,
                                      err_msg=f"un{kind} {isa} ts={ts} n={src.size}")


@pytest.mark.parametrize("ts", [2, 4, 1, 8])
@pytest.mark.parametrize("kind", sorted(FORWARD))
def test_forward_filters_at_every_group_of_8_items(kind, ts):
    """Every whole number of groups of 8 items up to past two AVX2 tiles (32 items a
    step, the rest in groups of 8), the bytes after them as they are."""
    compiled, twin = FORWARD[kind][:2]
    rng = np.random.default_rng(ts)
    data = rng.integers(0, 256, (2 * 1024 + 96) * ts + ts - 1, dtype=np.uint8)
    for nitems in [*range(8, 1100, 8), *range(2000, 2 * 1024 + 97, 8)]:
        for extra in (0, ts - 1):
            src = data[:nitems * ts + extra]
            want = run(twin, src, ts)
            for isa in ISAS:
                got = run(compiled, src, ts, isa)
                if not np.array_equal(got, want):
                    bad = np.flatnonzero(got != want)
                    pytest.fail(f"{kind} {isa} ts={ts} nitems={nitems} extra={extra}: "
                                f"{bad.size} bytes differ, first at {bad[0]}")


def test_forward_filters_known_answers():
    """Small blocks worked out by hand (the twins are checked against these, the kernels
    against the twins)."""
    items = np.array([0, 1, 2, 3, 4, 5, 6], np.uint8)  # 3 items of 2 bytes and 1 byte
    for fn in (ref.blosc_shuffle, *(lambda s, d, t, i=i: _decode.blosc_shuffle(s, d, t, i)
                                    for i in ISAS)):
        assert run(fn, items, 2).tolist() == [0, 2, 4, 1, 3, 5, 6]
    # 8 items of 1 byte: item 0 is 0xFF (bit k set for every k), the rest 0 -> each of
    # the 8 rows (one byte: bit i = item i) is 0x01
    block = np.array([0xFF, 0, 0, 0, 0, 0, 0, 0], np.uint8)
    # 8 items of 2 bytes, item 3 0x8001 (bit 0 of byte 0, bit 7 of byte 1), then 1 byte
    # left as it is
    pairs = np.zeros(17, np.uint8)
    pairs[6], pairs[7], pairs[16] = 0x01, 0x80, 0x5A
    want_pairs = [0] * 17
    want_pairs[0] = 1 << 3  # row 8*0 + 0
    want_pairs[8 + 7] = 1 << 3  # row 8*1 + 7
    want_pairs[16] = 0x5A
    for fn in (ref.blosc_bitshuffle, *(lambda s, d, t, i=i: _decode.blosc_bitshuffle(s, d, t, i)
                                       for i in ISAS)):
        assert run(fn, block, 1).tolist() == [1] * 8
        assert run(fn, pairs, 2).tolist() == want_pairs
        # 7 items: not a whole group of 8, the block is kept as it is
        assert run(fn, pairs[:15], 2).tolist() == pairs[:15].tolist()


# ---------------------------------------------------------------------------
# 2. bad arguments
# ---------------------------------------------------------------------------

def _filters():
    for kind, (compiled, twin, _, _) in sorted(FORWARD.items()):
        yield pytest.param(compiled, id=f"{kind}-compiled")
        yield pytest.param(twin, id=f"{kind}-twin")


@pytest.mark.parametrize("fn", list(_filters()))
def test_forward_filters_refuse_bad_arguments(fn):
    block = np.arange(64, dtype=np.uint8)
    out = np.zeros(64, np.uint8)
    for isa in ISAS:
        for ts in (0, -1, 256, 1000):
            with pytest.raises(ValueError):
                fn(block, out, ts, isa)
        with pytest.raises(ValueError):
            fn(block, np.zeros(63, np.uint8), 4, isa)  # sizes differ
        with pytest.raises(ValueError):
            fn(block, np.zeros(65, np.uint8), 4, isa)
        with pytest.raises(ValueError):
            fn(np.zeros(0, np.uint8), np.zeros(0, np.uint8), 1, isa)  # empty
    with pytest.raises(ValueError):
        fn(block, out, 4, "sse9")
    assert (out == 0).all()  # nothing written by a refused call
    fn(block, out, 255, "scalar")  # (the limits themselves are fine)
    fn(block, out, 1, "scalar")


# ---------------------------------------------------------------------------
# 3-4. whole frames: c-blosc's bytes, numcodecs' bytes, decoded back
# ---------------------------------------------------------------------------

KINDS = ["lowent", "ramp_f4", "ramp_u2", "mixed", "zeros", "random"]
TYPESIZES = [1, 2, 3, 4, 8, 16, 17, 255, 300]
BLOCKSIZES = [0, 0, 0, 1, 100, 1000, 65536, 2**20]
NBYTES = [1, 2, 7, 100, 127, 128, 129, 255, 256, 1000, 4096, 32767, 32768, 32769, 65536,
          65537, 100003, 262144]


def make_data(rng: np.random.Generator, kind: str, nbytes: int) -> np.ndarray:
    if kind == "random":  # incompressible: the frame is copied whole
        return rng.integers(0, 256, nbytes, dtype=np.uint8)
    if kind == "zeros":
        return np.zeros(nbytes, np.uint8)
    if kind == "lowent":  # small ints of 4 bytes
        n = -(-nbytes // 4)
        return rng.integers(0, 5, n, dtype="<u4").view(np.uint8)[:nbytes].copy()
    if kind == "ramp_f4":
        n = -(-nbytes // 4)
        start = float(rng.integers(0, 1000))
        ramp = (start + (np.arange(n) // 2) * 0.5).astype("<f4")
        return ramp.view(np.uint8)[:nbytes].copy()
    if kind == "ramp_u2":
        n = -(-nbytes // 2)
        start = int(rng.integers(0, 60000))
        return ((np.arange(n) // 3 + start) % 65536).astype("<u2").view(np.uint8)[:nbytes].copy()
    # "mixed": random bytes next to a smooth ramp (some streams stored as they are)
    half = nbytes // 2
    return np.concatenate([make_data(rng, "random", half),
                           make_data(rng, "ramp_u2", nbytes - half)])


@st.composite
def settings_and_data(draw):
    """Data and settings weighted to frames that are compressed (clevel 0, fewer than 128
    bytes and random data make frames copied whole: drawn less often)."""
    nbytes = draw(st.one_of(st.sampled_from(NBYTES), st.integers(128, 70000),
                            st.integers(1, 300_000)))
    kind = draw(st.sampled_from(KINDS))
    data = make_data(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), kind, nbytes)
    case = dict(data=data, kind=kind, clevel=draw(st.sampled_from([5, 1, 2, 3, 4, 6, 7, 8, 9, 0])),
                shuffle=draw(st.sampled_from([0, 1, 2])),
                ts=draw(st.sampled_from(TYPESIZES)), blocksize=draw(st.sampled_from(BLOCKSIZES)))
    event(f"kind={kind}")
    event(f"typesize not dividing nbytes: {nbytes % case['ts'] != 0}")
    return case


def describe(case) -> str:
    return (f"kind={case['kind']} nbytes={case['data'].size} clevel={case['clevel']} "
            f"shuffle={case['shuffle']} typesize={case['ts']} blocksize={case['blocksize']}")


def compress(case, isa: str) -> bytes:
    with frames_with(isa):
        if isa != "c-blosc":
            assert _decode.blosc_encoder() == f"zarrfast ({isa}): lz4"
        else:
            assert _decode.blosc_encoder() == "c-blosc"
        return bytes(_decode.blosc_compress(case["data"], case["clevel"], case["shuffle"],
                                            case["ts"], b"lz4", case["blocksize"]))


def numcodecs_frame(case) -> bytes:
    codec = blosc.Blosc(cname="lz4", clevel=case["clevel"], shuffle=case["shuffle"],
                        blocksize=case["blocksize"], typesize=case["ts"])
    return bytes(codec.encode(case["data"]))


def _first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
              min(len(a), len(b)))
    return f"sizes {len(a)} / {len(b)}, first difference at byte {at}"


@needs_encoder
@pytest.mark.usefixtures("_numcodecs_without_threads")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=settings_and_data())
def test_frames_are_c_blosc_and_numcodecs_bytes(case):
    want = compress(case, "c-blosc")
    assert numcodecs_frame(case) == want, describe(case)  # (the oracle agrees with itself)
    event(f"copied whole: {bool(want[2] & 0x02)}")
    event(f"split: {not want[2] & 0x10}")
    for isa in ISAS:
        got = compress(case, isa)
        assert got == want, f"{isa}: {describe(case)}: {_first_difference(got, want)}"


@needs_encoder
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=settings_and_data())
def test_frames_decode_back(case):
    for isa in ISAS:
        frame = compress(case, isa)
        assert int.from_bytes(frame[12:16], "little") == len(frame)
        assert int.from_bytes(frame[4:8], "little") == case["data"].size
        assert frame[3] == (case["ts"] if case["ts"] <= 255 else 1)
        back = blosc.Blosc().decode(frame)
        assert bytes(back) == case["data"].tobytes(), f"{isa}: {describe(case)}"
        with frames_with(isa):  # and by zarrfast's own decoder
            out = np.full(case["data"].size, SENTINEL, np.uint8)
            if _decode.blosc_decode_frame(u8(frame), out, 0, -1) != -1:
                np.testing.assert_array_equal(out, case["data"], err_msg=describe(case))


@needs_encoder
@pytest.mark.usefixtures("_numcodecs_without_threads")
@pytest.mark.parametrize("shuffle", [0, 1, 2])
@pytest.mark.parametrize(("kind", "nbytes", "ts", "blocksize"), [
    ("ramp_u2", 5 * 2**20 + 6, 2, 0),  # many automatic blocks of 1 MiB, split
    ("lowent", 3 * 2**20 + 12, 4, 2**20),
    ("ramp_f4", 2**20 + 3, 16, 0),
    ("mixed", 3 * 2**18 + 1, 17, 0),  # not split (typesize > 16)
    ("random", 2**20, 8, 0),  # incompressible: copied whole
])
def test_large_frames(kind, nbytes, ts, blocksize, shuffle):
    case = dict(data=make_data(np.random.default_rng(nbytes), kind, nbytes), kind=kind,
                clevel=5, shuffle=shuffle, ts=ts, blocksize=blocksize)
    want = compress(case, "c-blosc")
    assert numcodecs_frame(case) == want
    for isa in ISAS:
        got = compress(case, isa)
        assert got == want, f"{isa}: {describe(case)}: {_first_difference(got, want)}"


@needs_encoder
@pytest.mark.parametrize(("kind", "nbytes"), [("lowent", 32769), ("ramp_u2", 4099),
                                              ("mixed", 70001)])
def test_every_setting_on_a_few_buffers(kind, nbytes):
    """Every clevel, shuffle, typesize and blocksize of the strategy above, on buffers
    that compress (the frames Hypothesis draws are mostly small)."""
    data = make_data(np.random.default_rng(nbytes), kind, nbytes)
    failed = []
    for clevel, shuffle, ts, blocksize in itertools.product(
            range(10), (0, 1, 2), TYPESIZES, sorted(set(BLOCKSIZES))):
        case = dict(data=data, kind=kind, clevel=clevel, shuffle=shuffle, ts=ts,
                    blocksize=blocksize)
        want = compress(case, "c-blosc")
        for isa in ISAS:
            got = compress(case, isa)
            if got != want:
                failed.append(f"{isa}: {describe(case)}: {_first_difference(got, want)}")
    assert not failed, "\n".join(failed[:20])


@needs_encoder
@pytest.mark.usefixtures("_numcodecs_without_threads")
def test_the_own_encoder_compresses_with_the_bound_lz4():
    """The frames are really made here (not c-blosc's under another name): LZ4 is bound
    again through a counting wrapper, called for every stream of a compressed frame with
    the own encoder and never with c-blosc alone; the bytes are c-blosc's either way.
    The binding kernels made at import (numcodecs' c-blosc's LZ4) is put back after."""
    lib = ctypes.CDLL(blosc.__file__)
    if not hasattr(lib, "LZ4_compress_fast_extState"):
        pytest.skip("numcodecs' c-blosc exports no LZ4")
    real = lib.LZ4_compress_fast_extState
    real.restype = ctypes.c_int
    real.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3
    sizeof_state = kernels._address(lib, "LZ4_sizeofState")
    calls = []

    @ctypes.CFUNCTYPE(ctypes.c_int, *real.argtypes)
    def counting(state, src, dst, n, cap, accel):
        calls.append((n, cap, accel))
        return real(state, src, dst, n, cap, accel)

    x = make_data(np.random.default_rng(3), "ramp_u2", 3 * 65536 + 10)
    _decode.bind_lz4_compress(ctypes.cast(counting, ctypes.c_void_p).value, sizeof_state)
    try:
        with frames_with("c-blosc"):
            want = bytes(_decode.blosc_compress(x, 5, 1, 2, b"lz4", 0))
        assert calls == []
        for isa in ISAS:
            calls.clear()
            with frames_with(isa):
                got = bytes(_decode.blosc_compress(x, 5, 1, 2, b"lz4", 0))
            assert got == want, isa
            # one block (the whole buffer: c-blosc's compute_blocksize), split in a
            # stream per byte of an item
            assert int.from_bytes(want[8:12], "little") == x.size
            assert [n for n, _, _ in calls] == [x.size // 2] * 2, calls
            assert {accel for _, _, accel in calls} == {10 - 5}
    finally:
        _decode.bind_lz4_compress(kernels._address(lib, "LZ4_compress_fast_extState"),
                                  sizeof_state)
    for isa in ISAS:  # the real LZ4 bound again
        with frames_with(isa):
            assert bytes(_decode.blosc_compress(x, 5, 1, 2, b"lz4", 0)) == want


# ---------------------------------------------------------------------------
# 5. blosc_compress_regions
# ---------------------------------------------------------------------------

def _regions_case(data: np.ndarray, clevel: int, shuffle: int, typesize: int, blocksize: int,
                  fill=None):
    """Three (4, 5, 8) regions of ``data`` (a (12, 10, 16) uint16 array) compressed whole,
    as ``tests/engine/test_blosc_writes.py`` calls ``blosc_compress_regions``."""
    flat = data.reshape(-1).view(np.uint8)
    strides = np.array(data.strides, np.int64)
    shape = np.array([4, 5, 8], np.int64)
    offsets = np.array([0, 4 * strides[0] + 5 * strides[1], 8 * strides[0] + 8 * strides[2]],
                       np.int64)
    dst_strides = np.array([5 * 8 * 2, 8 * 2, 2], np.int64)
    nb = 4 * 5 * 8 * 2
    return (flat, offsets, strides, dst_strides, shape, 2, 1, fill,
            np.empty(nb, np.uint8), np.zeros(3 * (nb + 16), np.uint8), clevel, shuffle,
            typesize, b"lz4", blocksize)


def _regions_of(data: np.ndarray) -> list[np.ndarray]:
    """The three regions :func:`_regions_case` compresses, as views of ``data``."""
    return [data[0:4, 0:5, 0:8], data[4:8, 5:10, 0:8], data[8:12, 0:5, 8:16]]


@needs_encoder
@pytest.mark.parametrize("kind", ["ramp_u2", "random", "lowent"])
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_compress_regions_is_c_blosc(kind, shuffle):
    data = make_data(np.random.default_rng(7), kind, 12 * 10 * 16 * 2).view("<u2")
    data = data.reshape(12, 10, 16)
    for clevel, typesize, blocksize in [(5, 2, 0), (1, 1, 0), (9, 4, 128), (0, 2, 0),
                                        (3, 3, 100), (7, 300, 0)]:
        args = _regions_case(data, clevel, shuffle, typesize, blocksize)
        with frames_with("c-blosc"):
            want_sizes = _decode.blosc_compress_regions(*args)
        want = bytes(args[9])
        slot = args[8].nbytes + 16
        for isa in ISAS:
            args[9][:] = 0
            with frames_with(isa):
                sizes = _decode.blosc_compress_regions(*args)
                # each region compressed alone, from its own contiguous copy (not from the
                # scratch buffer, whose contents after the call are the kernel's business)
                alone = [bytes(_decode.blosc_compress(
                    np.ascontiguousarray(region).reshape(-1).view(np.uint8), clevel, shuffle,
                    typesize, b"lz4", blocksize)) for region in _regions_of(data)]
            what = f"{isa} {kind} clevel={clevel} shuffle={shuffle} ts={typesize} bs={blocksize}"
            np.testing.assert_array_equal(sizes, want_sizes, err_msg=what)
            for r, n in enumerate(want_sizes.tolist()):
                got = bytes(args[9][r * slot:r * slot + n])
                assert got == want[r * slot:r * slot + n], f"{what}: region {r}"
                assert got == alone[r], f"{what}: region {r} differs from compressing it alone"


@needs_encoder
def test_compress_regions_skips_fill_chunks_with_the_own_encoder():
    data = np.zeros((12, 10, 16), "<u2")
    data[8:, :5, 8:] = 3  # only the last region differs from the fill value
    for isa in [*ISAS, "c-blosc"]:
        args = _regions_case(data, 5, 2, 2, 0, fill=np.zeros(2, np.uint8))
        with frames_with(isa):
            sizes = _decode.blosc_compress_regions(*args)
        assert sizes[:2].tolist() == [-1, -1] and sizes[2] > 0, isa
        back = blosc.Blosc().decode(bytes(args[9][2 * 336:2 * 336 + int(sizes[2])]))
        np.testing.assert_array_equal(np.frombuffer(back, "<u2"), 3)


# ---------------------------------------------------------------------------
# 6. who makes the frames
# ---------------------------------------------------------------------------

def test_blosc_encoder_names_the_choice():
    with frames_with("c-blosc"):
        assert _decode.blosc_encoder() == "c-blosc"
        # and c-blosc's frames are numcodecs' then too
        x = make_data(np.random.default_rng(0), "ramp_u2", 5000)
        assert _decode.blosc_compress(x, 5, 1, 2, b"lz4", 0) == bytes(
            blosc.compress(x.tobytes(), b"lz4", 5, 1, 0, typesize=2))
    for isa in ISAS:
        with frames_with(isa):
            name = _decode.blosc_encoder()
            assert name in ("c-blosc", f"zarrfast ({isa}): lz4")
            assert (name != "c-blosc") == OWN_ENCODER
    if "avx2" in ISAS:
        with frames_with("auto"):
            assert _decode.blosc_encoder() == ("zarrfast (avx2): lz4" if OWN_ENCODER
                                               else "c-blosc")
    assert _decode.set_blosc_frames(_ORIGINAL) == _ORIGINAL


def test_codec_bindings_say_who_makes_the_frames():
    binding = kernels.CODEC_BINDINGS["blosc"]
    # _ORIGINAL is what the import chose (every test restores it)
    if _ORIGINAL == "c-blosc" or not OWN_ENCODER:
        assert "frames made by" not in binding, binding
    else:
        assert binding.endswith(f"; frames made by zarrfast ({_ORIGINAL}): lz4 "
                                "(numcodecs' LZ4)"), binding


@needs_encoder
def test_the_environment_turns_the_encoder_off_at_import(tmp_path):
    code = textwrap.dedent("""
        import json
        from zarrfast import kernels
        from zarrfast._ext import _decode
        print(json.dumps([_decode.blosc_encoder(), _decode.blosc_frames(),
                          kernels.CODEC_BINDINGS["blosc"]]))
    """)
    results = {}
    for value in ("c-blosc", "scalar"):
        env = {**os.environ, "ZARRFAST_BLOSC_FRAMES": value}
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        results[value] = json.loads(done.stdout.strip().splitlines()[-1])
    encoder, frames, binding = results["c-blosc"]
    assert encoder == "c-blosc" and frames == "c-blosc"
    assert "frames made by" not in binding, binding
    encoder, _, binding = results["scalar"]
    assert encoder == "zarrfast (scalar): lz4"
    assert "; frames made by zarrfast (scalar): lz4" in binding, binding


# ---------------------------------------------------------------------------
# 7. the engine: the same chunk files whoever makes the frames
# ---------------------------------------------------------------------------

def _chunks(path) -> dict[str, bytes]:
    store = LocalStore(str(path))
    return {k: bytes(store.get(k)) for k in store.list() if k.startswith("c/")}


@needs_encoder
@pytest.mark.parametrize(("dtype", "shuffle", "kind", "clevel"), [
    ("<u2", "bitshuffle", "smooth", 5),
    ("<f4", "shuffle", "smooth", 9),
    ("<i8", "noshuffle", "smooth", 1),
    ("<u4", "bitshuffle", "random", 5),  # incompressible chunks: copied whole
])
def test_engine_writes_the_same_chunk_files(tmp_path, dtype, shuffle, kind, clevel):
    shape, chunks = (70, 50, 33), (32, 24, 16)  # edge chunks on every dimension
    rng = np.random.default_rng(11)
    if kind == "random":
        x = rng.integers(0, 2**32, shape, dtype=np.uint64).astype(dtype)
    else:
        x = (np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64)
             % 5000).astype(dtype).reshape(shape)
    stored = {}
    for isa in [*ISAS, "c-blosc"]:
        path = tmp_path / f"{isa}.zarr"
        with frames_with(isa):
            a = zarrfast.create_array(
                str(path), shape=shape, chunks=chunks, dtype=dtype,
                compressors=[zarrfast.codecs.BloscCodec(cname="lz4", clevel=clevel,
                                                        shuffle=shuffle)])
            a[...] = x
            a[3:40, 30:50, 5:7] = x[:37, :20, :2]  # partial chunks: the per-chunk path
            np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...],
                                          _expected(x))
        stored[isa] = _chunks(path)
    want = stored.pop("c-blosc")
    assert len(want) == 3 * 3 * 3
    for isa, got in stored.items():
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == want[key], f"{isa}: chunk {key} differs"
    ts = np.dtype(dtype).itemsize
    codec = blosc.Blosc(cname="lz4", clevel=clevel,
                        shuffle={"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[shuffle],
                        typesize=ts)
    whole = _expected(x)[:32, :24, :16]
    assert want["c/0/0/0"] == bytes(codec.encode(np.ascontiguousarray(whole).view(np.uint8)))


def _expected(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y[3:40, 30:50, 5:7] = x[:37, :20, :2]
    return y


@needs_encoder
@pytest.mark.parametrize("shuffle", [0, 1, 2])
@pytest.mark.parametrize("chunks", [(3, 24, 8), (2, 20, 5), (1, 24, 256)])
def test_compress_regions_of_a_shard_order_are_c_blosc(shuffle, chunks):
    # chunks of more rows than the gather copy prefetches ahead (16), gathered a row of
    # 2 at a time out of a value whose rows hold 4, in the order of a sharded write (2 x
    # 2 x 2 chunks a shard), or one by one: each region's frame is c-blosc's frame of
    # the chunk's bytes
    grid = (2, 4, 4)
    data = make_data(np.random.default_rng(5), "ramp_u2",
                     int(np.prod(chunks) * np.prod(grid)) * 2).view("<u2")
    data = data.reshape(tuple(c * g for c, g in zip(chunks, grid, strict=True)))
    flat = data.reshape(-1).view(np.uint8)
    strides = np.array(data.strides, np.int64)
    idxs = [tuple(s * 2 + i for s, i in zip(sh, inner, strict=True))
            for sh in np.ndindex(1, 2, 2) for inner in np.ndindex(2, 2, 2)]
    offsets = np.array([int(np.dot(i, np.array(chunks) * strides)) for i in idxs], np.int64)
    shape = np.array(chunks, np.int64)
    dst = np.array([chunks[1] * chunks[2] * 2, chunks[2] * 2, 2], np.int64)
    nb = int(np.prod(chunks)) * 2
    for room in (1, 2, 4):
        out = np.zeros(len(idxs) * (nb + 16), np.uint8)
        sizes = _decode.blosc_compress_regions(flat, offsets, strides, dst, shape, 2, 1, None,
                                               np.empty(room * nb, np.uint8), out, 5,
                                               shuffle, 2, b"lz4", 0)
        for r, idx in enumerate(idxs):
            block = data[tuple(slice(i * c, (i + 1) * c)
                               for i, c in zip(idx, chunks, strict=True))]
            with frames_with("c-blosc"):
                want = _decode.blosc_compress(np.ascontiguousarray(block).reshape(-1).view(np.uint8),
                                              5, shuffle, 2, b"lz4", 0)
            got = bytes(out[r * (nb + 16):r * (nb + 16) + int(sizes[r])])
            assert got == bytes(want), f"room {room}, chunk {idx}"
