"""``ChunkDecoder.decode_box_files``: a step-1 box of an array whose chunks are files
``root/prefix + separator.join(coords)``, read and placed in one call -- the compiled
kernel and its twin against each other and against NumPy (the whole array assembled
from the chunks' bytes, then sliced by the box).  A missing chunk is ``NO_DATA``, a
damaged one ``FAILED``; nothing of either is placed (an uncompressed chunk placed whole
may have written its own block); a path through a symbolic link is not followed."""

from __future__ import annotations

import errno
import itertools
import os
import shutil

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from _helpers.box import (
    CODECS,
    Oracle,
    check,
    chunk_bytes,
    chunk_strides,
    dst_layout,
    nbytes_of,
    stored,
)
from _helpers.decode import (
    DECODED,
    DECODERS,
    FAILED,
    GUARD,
    ITEM_SWAPS,
    NO_DATA,
    PROPS,
    CompiledDecoder,
    TwinDecoder,
    call_box_files,
    call_files,
)
from _helpers.kernels import I64, i64, rng_bytes

STATUS = {"ok": DECODED, "missing": NO_DATA, "short": FAILED, "long": FAILED,
          "garbage": FAILED}


def grid(case):
    return itertools.product(*(range(-(-n // c)) for n, c in
                               zip(case["shape"], case["chunk"], strict=True)))


def write_chunks(case, codec, root) -> None:
    for coords in grid(case):
        kind = case["kinds"].get(coords, "ok")
        if kind == "missing":
            continue
        key = case["prefix"] + case["sep"].join(str(c).encode() for c in coords)
        path = os.path.join(root, os.fsdecode(key))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(stored(codec, chunk_bytes(case, coords), kind, case["itemsize"]))


def call(cls, codec, case, root, *, direct=True, share=False):
    """Run the kernel on a dst with guard bytes around it; (result, dst bytes)."""
    strides, size = dst_layout(case)
    before = np.frombuffer(rng_bytes(11, size + 2 * GUARD), dtype=np.uint8)
    buf = before.copy()
    dec = cls(codec, nbytes_of(case))
    got = call_box_files(dec,
        os.fsencode(root), case["prefix"], case["sep"], i64(*case["start"]),
        i64(*case["count"]), i64(*case["chunk"]), i64(*chunk_strides(case)),
        buf[GUARD:GUARD + size], i64(*strides), case["itemsize"], case["swap_unit"],
        direct=direct, share=share)
    assert (buf[:GUARD] == before[:GUARD]).all() and (buf[-GUARD:] == before[-GUARD:]).all()
    return got, buf[GUARD:GUARD + size]


def expected(case, codec, direct=True, notes=None):
    """NumPy's (statuses or None, dst bytes, bytes a FAILED direct row may write)."""
    chunk, start, count = case["chunk"], case["start"], case["count"]
    oracle = Oracle(case, [-(-n // c) * c for n, c in zip(case["shape"], chunk, strict=True)],
                    direct)
    statuses = []
    for coords in itertools.product(*(range(s // c, (s + n - 1) // c + 1)
                                      for s, n, c in zip(start, count, chunk, strict=True))):
        kind = case["kinds"].get(coords, "ok")
        statuses.append(STATUS[kind])
        if kind == "ok":
            oracle.place(coords)
        elif STATUS[kind] == FAILED:
            oracle.failed(coords, codec)
        if notes is not None:
            notes.append(f"{'direct' if oracle.whole(coords) and oracle.same else 'region'} "
                         f"row {kind}")
    want, mask = oracle.dst()
    status = None if not any(statuses) else np.array(statuses, dtype=np.int8)
    return status, want, mask


# property test

KINDS = ["ok"] * 5 + ["missing", "short", "long", "garbage"]


@st.composite
def box_cases(draw):
    ndim = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 5)) for _ in range(ndim)]
    mode = draw(st.sampled_from(["free", "aligned", "slab"]))
    if mode == "free":
        shape = [draw(st.integers(1, 3 * c)) for c in chunk]
        start = [draw(st.integers(0, n - 1)) for n in shape]
        count = [draw(st.integers(1, n - s)) for n, s in zip(shape, start, strict=True)]
    else:  # whole chunks; "slab": one chunk along every dim but the first
        shape = [c * draw(st.integers(1, 3)) for c in chunk]
        first = [draw(st.integers(0, n // c - 1)) for n, c in zip(shape, chunk, strict=True)]
        span = [draw(st.integers(1, n // c - k)) if mode == "aligned" or d == 0 else 1
                for d, (n, c, k) in enumerate(zip(shape, chunk, first, strict=True))]
        start = [k * c for k, c in zip(first, chunk, strict=True)]
        count = [m * c for m, c in zip(span, chunk, strict=True)]
    itemsize, swap_unit = draw(st.sampled_from(ITEM_SWAPS))
    case = dict(chunk=chunk, shape=shape, start=start, count=count, itemsize=itemsize,
                swap_unit=swap_unit, order=draw(st.sampled_from("CCF")),
                pad=draw(st.sampled_from([0, 0, 0, itemsize])),
                seed=draw(st.integers(0, 2**32 - 1)),
                prefix=draw(st.sampled_from([b"", b"c/", b"arr/c/", b"c."])),
                sep=draw(st.sampled_from([b"/", b"."])), kinds={})
    if draw(st.booleans()):  # else every chunk stored whole: the result is None
        case["kinds"] = {c: draw(st.sampled_from(KINDS)) for c in grid(case)}
    return case


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("cls", DECODERS)
@settings(PROPS, max_examples=300)
@given(case=box_cases(), direct=st.booleans())
def test_box_matches_numpy_and_twin(tmp_path_factory, cls, codec, case, direct):
    root = str(tmp_path_factory.mktemp("box"))
    try:
        write_chunks(case, codec, root)
        notes = []
        want_status, want, mask = expected(case, codec, direct, notes)
        for note in {*notes, "all placed" if want_status is None else "some not placed"}:
            event(note)
        got, dst = call(cls, codec, case, root, direct=direct)
        check(got, dst, want_status, want, mask, f"{cls.__module__} {codec}")
        if cls is CompiledDecoder:  # shared with the helper thread; and the twin, directly
            check(*call(cls, codec, case, root, direct=direct, share=True), want_status,
                  want, mask, "compiled, share")
            twin, dst3 = call(TwinDecoder, codec, case, root, direct=direct)
            check(got, dst3, twin, dst, mask, "compiled vs twin")
    finally:
        shutil.rmtree(root)


# whole chunks, straight into dst or not

# rows: (1, 4) chunks into a dst padded along dim 0, all direct (one missing); swapped:
# never direct; one_chunk: the box is one chunk; mixed: a whole chunk between two
# partial ones, one damaged; f_order: F-order chunks whose one long dim is the last
_ROWS = dict(chunk=[1, 4], shape=[6, 4], start=[1, 0], count=[4, 4], itemsize=4,
             dst_strides=[24, 4])
LAYOUTS = {
    "rows": dict(_ROWS, swap_unit=1, kinds={(3, 0): "missing"}),
    "rows_swapped": dict(_ROWS, swap_unit=2, kinds={}),
    "one_chunk": dict(chunk=[2, 3, 4], shape=[4, 3, 4], start=[2, 0, 0], count=[2, 3, 4],
                      itemsize=2, swap_unit=1, kinds={}),
    "mixed": dict(chunk=[2, 4], shape=[6, 4], start=[1, 0], count=[4, 4], itemsize=8,
                  swap_unit=1, kinds={(2, 0): "short"}),
    "f_order": dict(chunk=[1, 5], shape=[3, 5], start=[0, 0], count=[3, 5], itemsize=1,
                    swap_unit=1, order="F", kinds={}),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("cls", DECODERS)
def test_whole_chunks_direct_and_not(tmp_path, cls, codec, layout):
    case = dict(LAYOUTS[layout], seed=5, prefix=b"c/", sep=b"/")
    write_chunks(case, codec, tmp_path)
    got = {}
    for direct in (True, False):
        want_status, want, mask = expected(case, codec, direct)
        got[direct] = call(cls, codec, case, tmp_path, direct=direct) + (mask,)
        check(*got[direct][:2], want_status, want, mask, f"direct={direct}")
        assert (want_status is None) == (layout not in ("rows", "mixed"))
    keep = ~(got[True][2] | got[False][2])
    np.testing.assert_array_equal(got[True][1][keep], got[False][1][keep])


# statuses in C order of the chunks

@pytest.mark.parametrize("cls", DECODERS)
def test_statuses_come_in_c_order_of_chunks(tmp_path, cls):
    case = dict(chunk=[2, 2, 2], shape=[4, 6, 4], start=[1, 1, 1], count=[3, 4, 2],
                itemsize=2, swap_unit=1, seed=3, prefix=b"", sep=b".")
    touched = list(itertools.product(range(0, 2), range(0, 3), range(0, 2)))
    for i, gone in enumerate(touched):
        case["kinds"] = {gone: "missing", touched[(i + 5) % 12]: "garbage"}
        root = tmp_path / str(i)
        write_chunks(case, "zstd", root)
        got, dst = call(cls, "zstd", case, root)
        want = [DECODED] * 12
        want[i], want[(i + 5) % 12] = NO_DATA, FAILED
        assert got.tolist() == want, (gone, got)
        want_status, want_dst, _ = expected(case, "zstd")
        np.testing.assert_array_equal(dst, want_dst)


# roots, links and rejected arguments

@pytest.mark.parametrize("cls", DECODERS)
def test_a_missing_root_is_no_data_everywhere(tmp_path, cls):
    (tmp_path / "file").write_bytes(b"x")
    case = dict(chunk=[2, 3], shape=[5, 5], start=[1, 1], count=[4, 4], itemsize=4,
                swap_unit=2, seed=1, prefix=b"c/", sep=b"/", kinds={})
    for root in (tmp_path / "nope", tmp_path / "nope" / "deeper", tmp_path / "file"):
        got, dst = call(cls, "zstd", case, root)
        assert got.tolist() == [NO_DATA] * 6
        np.testing.assert_array_equal(dst, expected({**case, "kinds": dict.fromkeys(
            grid(case), "missing")}, "zstd")[1])


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("cls", DECODERS)
def test_links_are_not_followed(tmp_path, cls, codec):
    case = dict(chunk=[1, 2], shape=[3, 4], start=[0, 0], count=[3, 4], itemsize=4,
                swap_unit=1, seed=2, prefix=b"c/", sep=b"/", kinds={})
    root = tmp_path / "root"
    write_chunks(case, codec, root)
    (tmp_path / "out").mkdir()
    os.replace(root / "c" / "0" / "1", tmp_path / "out" / "1")  # a link to a file outside
    os.symlink(tmp_path / "out" / "1", root / "c" / "0" / "1")
    os.replace(root / "c" / "1" / "0", root / "c" / "1" / "real")  # a link to one inside
    os.symlink("real", root / "c" / "1" / "0")
    shutil.rmtree(root / "c" / "2")  # a link to a directory, in the middle of the path
    os.symlink("1", root / "c" / "2")
    got, dst = call(cls, codec, case, root)
    assert got.tolist() == [DECODED, FAILED, FAILED, DECODED, FAILED, FAILED]
    case["kinds"] = {(0, 1): "missing", (1, 0): "missing", (2, 0): "missing",
                     (2, 1): "missing"}
    np.testing.assert_array_equal(dst, expected(case, codec)[1])
    # (why: decode_files, opening the same paths the same way, says ELOOP)
    out = np.zeros(32, dtype=np.uint8)
    paths = [b"c/0/1", b"c/1/0", b"c/2/0"]
    _, _, errors = call_files(cls(codec, 8),
        paths, i64(0, 0, 0), i64(8, 4), out, i64(0, 8, 16), i64(8, 4),
        np.ones((3, 2), dtype=I64) * [1, 2], 4, 1, np.zeros(3, dtype=np.uint8),
        root=os.fsencode(root))
    assert errors.tolist() == [errno.ELOOP] * 3


def _base(root):
    return dict(root=os.fsencode(root), prefix=b"c/", separator=b"/", start=i64(0, 0),
                count=i64(2, 2), chunk_shape=i64(2, 2), chunk_strides=i64(8, 4),
                dst=np.zeros(16, dtype=np.uint8), dst_strides=i64(8, 4), itemsize=4,
                swap_unit=1)


BAD = {
    "lengths": (dict(count=i64(2)), ValueError),
    "start_plus_count": (dict(start=i64(2**63 - 1, 0), count=i64(1, 2)), ValueError),
    "rank_0": (dict(start=i64(), count=i64(), chunk_shape=i64(), chunk_strides=i64(),
                    dst_strides=i64()), ValueError),
    "rank_65": (dict(start=np.zeros(65, I64), count=np.ones(65, I64),
                     chunk_shape=np.ones(65, I64), chunk_strides=np.full(65, 4, I64),
                     dst_strides=np.full(65, 4, I64)), ValueError),
    "nul_prefix": (dict(prefix=b"c\0/"), ValueError),
    "nul_separator": (dict(separator=b"\0"), ValueError),
    "nul_root": (dict(root=b"/tmp\0x"), ValueError),
    "str_root": (dict(root="/tmp"), TypeError),
    "negative_start": (dict(start=i64(-1, 0)), ValueError),
    "count_0": (dict(count=i64(2, 0)), ValueError),
    "chunk_0": (dict(chunk_shape=i64(0, 2)), ValueError),
    "too_many_chunks": (dict(start=i64(0), count=i64(2**16 + 1), chunk_shape=i64(1),
                             chunk_strides=i64(4), dst_strides=i64(4)), ValueError),
    "dst_too_small": (dict(dst=np.zeros(15, dtype=np.uint8)), ValueError),
    "dst_read_only": (dict(dst=bytes(16)), BufferError),
    "chunk_outside": (dict(chunk_strides=i64(16, 4)), ValueError),
    "zero_dst_stride": (dict(dst_strides=i64(0, 4)), ValueError),
    "itemsize_not_swaps": (dict(itemsize=4, swap_unit=8), ValueError),
    "swap_3": (dict(itemsize=6, swap_unit=3), ValueError),
    "itemsize_0": (dict(itemsize=0), ValueError),
}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_rejected_arguments(tmp_path, bad):
    change, exc = BAD[bad]
    got = []
    for cls in [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else []):
        args = {**_base(tmp_path), **change}
        try:
            call_box_files(cls("zstd", 16), **args)
        except (ValueError, TypeError, OverflowError, BufferError) as e:
            got.append((type(e), str(e)))
        else:
            got.append(None)
        assert not np.frombuffer(args["dst"], dtype=np.uint8).any()
    assert [g and g[0] for g in got] == [exc] * len(got), got


@pytest.mark.parametrize("cls", DECODERS)
def test_2_16_chunks_are_allowed(tmp_path, cls):
    args = {**_base(tmp_path / "nope"), **BAD["too_many_chunks"][0], "count": i64(2**16),
            "dst": np.zeros(4 * 2**16, dtype=np.uint8)}
    got = call_box_files(cls("zstd", 4), **args)
    assert got.shape == (2**16,) and (got == NO_DATA).all()


# chunk shape -> (itemsize, chunk stride, the stored chunks (by offset from the first
# chunk), the statuses, dst)
NEAR_2_63 = {
    1: (4, 4, {0: b"wxyz"}, [DECODED, NO_DATA], b"wxyz" + bytes(4)),  # chunks k, k + 1
    4: (1, 1, {0: b"wxyz"}, None, b"xy"),  # items 1 and 2 of one chunk
    2**62: (1, 0, {0: b"w"}, None, b"ww"),  # every item at byte 0 of a 1-byte chunk
}


@pytest.mark.parametrize("chunk", sorted(NEAR_2_63))
@pytest.mark.parametrize("cls", DECODERS)
def test_coordinates_near_2_63(tmp_path, cls, chunk):
    """Two items at 2**63 - 3: 19-digit chunk keys, and no int64 overflow."""
    itemsize, stride, files, want_status, want = NEAR_2_63[chunk]
    start = 2**63 - 3
    (tmp_path / "c").mkdir()
    for j, data in files.items():
        (tmp_path / "c" / str(start // chunk + j)).write_bytes(data)
    dst = np.zeros(2 * itemsize, dtype=np.uint8)
    got = call_box_files(cls("none", len(files[0])),
        os.fsencode(tmp_path), b"c/", b".", i64(start), i64(2), i64(chunk), i64(stride),
        dst, i64(itemsize), itemsize, 1)
    assert (got if got is None else got.tolist()) == want_status
    assert bytes(dst) == want


@pytest.mark.parametrize("cls", DECODERS)
def test_overlapping_chunk_strides_are_never_direct(tmp_path, cls):
    """Overlapping chunk strides ((1, 1): a (2, 2) chunk of 1-byte items spans 3 bytes)
    with ``nbytes == itemsize * prod(chunk_shape)`` (4) and matching dst strides: the
    chunk's bytes are not its items' bytes, so it is placed item by item (items (0, 1)
    and (1, 0) share a byte), and nothing is written past the 3-byte dst."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0.0").write_bytes(b"ABCD")
    buf = np.full(3 + 2 * GUARD, 0xEE, dtype=np.uint8)
    got = call_box_files(cls("none", 4),
        os.fsencode(tmp_path), b"c/", b".", i64(0, 0), i64(2, 2), i64(2, 2), i64(1, 1),
        buf[GUARD:GUARD + 3], i64(1, 1), 1, 1)
    assert got is None
    assert bytes(buf[GUARD:GUARD + 3]) == b"ABC"
    assert (buf[:GUARD] == 0xEE).all() and (buf[-GUARD:] == 0xEE).all()
