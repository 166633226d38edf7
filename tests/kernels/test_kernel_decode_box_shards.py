"""``ChunkDecoder.decode_box_shards``: a step-1 box of a sharded array whose shards are
open files, each with its decoded index of ``(offset, nbytes)`` per inner chunk, read and
placed in one call -- the compiled kernel and its twin against each other and against
NumPy (the whole array assembled from the inner chunks' bytes, then sliced by the box).

A missing shard (``fd < 0`` or index ``None``) or an empty entry (offset ``2**64 - 1``)
is filled with the fill item; an entry too large for ``limit`` (or the decoder), at an
offset past ``2**63 - 1``, past the end of its file or that does not decode is
``FAILED``: its region is left alone (an uncompressed chunk placed whole may have
written its own block).  ``None`` unless some row is ``FAILED``; then every row's
status in ``box_table``'s order (the shards in C order, each one's chunks in C order).
"""

from __future__ import annotations

import itertools
import math
import os
import random
import struct

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from zarrfast import kernels

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
    call_box_shards,
    compress,
)
from _helpers.kernels import I64, i64, rng_bytes

EMPTY = 2**64 - 1
U64 = np.uint64
# what an entry of the index says, and the status of its row (in a shard that exists)
STATUS = {"ok": DECODED, "empty": NO_DATA, "short": FAILED, "long": FAILED,
          "garbage": FAILED, "eof": FAILED, "huge": FAILED, "far": FAILED,
          "zero": FAILED}


def cap_of(case) -> int:
    return min(case["limit"], 2 * nbytes_of(case) + 65536)


def chunk_range(case):
    """Per dim, the first and last chunk the box touches."""
    return [(s // c, (s + n - 1) // c)
            for s, n, c in zip(case["start"], case["count"], case["chunk"], strict=True)]


def touched_shards(case):
    """The shards the box touches, in C order."""
    return list(itertools.product(*(range(a // p, b // p + 1) for (a, b), p in
                                    zip(chunk_range(case), case["cps"], strict=True))))


def shard_rows(case, shard):
    """The box's chunks in ``shard``, in C order."""
    return list(itertools.product(*(
        range(max(a, s * p), min(b, s * p + p - 1) + 1)
        for (a, b), s, p in zip(chunk_range(case), shard, case["cps"], strict=True))))


def inner_index(case, coords) -> int:
    lin = 0
    for k, p in zip(coords, case["cps"], strict=True):
        lin = lin * p + k % p
    return lin


def rows_of(case):
    """``(shard ordinal, chunk coords)`` of every row, in ``box_table``'s order."""
    return [(g, k) for g, s in enumerate(touched_shards(case)) for k in shard_rows(case, s)]


def row_status(case, g, coords) -> int:
    if case["shards"].get(touched_shards(case)[g], "ok") != "ok":
        return NO_DATA
    return STATUS[case["kinds"].get(coords, "ok")]


def write_shards(case, codec, folder):
    """One file per shard the box touches: its inner chunks' bytes in a shuffled order
    with junk between, and its index; ``(paths, indexes)``.  Entries of chunks outside
    the box point at nothing readable (they must not be read)."""
    rnd = random.Random(case["seed"])
    n_inner = math.prod(case["cps"])
    paths, indexes = [], []
    for shard in touched_shards(case):
        index = np.empty((n_inner, 2), dtype=U64)
        for j in range(n_inner):  # (outside the box: an offset past 2**63, or empty)
            index[j] = (EMPTY if rnd.random() < 0.5 else 2**63 + j, 8)
        rows = shard_rows(case, shard)
        rnd.shuffle(rows)
        blob, bent = bytearray(rng_bytes(rnd.randrange(2**32), rnd.randrange(4))), []
        for coords in rows:
            kind = case["kinds"].get(coords, "ok")
            j = inner_index(case, coords)
            if kind == "empty":
                index[j] = (EMPTY, rnd.choice([0, 8, EMPTY]))
                continue
            data = stored(codec, chunk_bytes(case, coords), kind, case["itemsize"])
            index[j] = (len(blob), len(data))
            blob += data + rng_bytes(rnd.randrange(2**32), rnd.randrange(6))
            if kind in ("eof", "huge", "far"):
                bent.append((j, kind))
        for j, kind in bent:
            if kind == "eof":  # the entry's last byte is past the end of the file
                index[j, 0] = max(0, len(blob) - int(index[j, 1]) + 1)
            elif kind == "huge":
                index[j, 1] = cap_of(case) + 1
            else:
                index[j, 0] = 2**63 + rnd.randrange(2**63 - 1)
        path = os.path.join(folder, "s" + ".".join(map(str, shard)))
        with open(path, "wb") as f:
            f.write(blob)
        paths.append(path)
        indexes.append(index)
    return paths, indexes


def call(cls, codec, case, folder, *, direct=True, share=False, written=None):
    """Run the kernel on a dst with guard bytes around it; (result, dst bytes)."""
    if written is None:
        written = write_shards(case, codec, folder)
    paths, indexes = written
    strides, size = dst_layout(case)
    before = np.frombuffer(rng_bytes(11, size + 2 * GUARD), dtype=np.uint8)
    buf = before.copy()
    dec = cls(codec, nbytes_of(case))
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        gone = {touched_shards(case).index(s): how for s, how in case["shards"].items()
                if s in touched_shards(case)}
        got = call_box_shards(dec,
            np.array([-1 if gone.get(g) in ("fd", "both") else fd
                      for g, fd in enumerate(fds)], dtype=I64),
            [None if gone.get(g) in ("index", "both") else ix
             for g, ix in enumerate(indexes)],
            i64(*case["start"]), i64(*case["count"]), i64(*case["chunk"]), i64(*case["cps"]),
            i64(*chunk_strides(case)), buf[GUARD:GUARD + size], i64(*strides),
            case["itemsize"], case["swap_unit"], case["fill"], case["limit"],
            direct=direct, share=share)
    finally:
        for fd in fds:
            os.close(fd)
    assert (buf[:GUARD] == before[:GUARD]).all() and (buf[-GUARD:] == before[-GUARD:]).all()
    return got, buf[GUARD:GUARD + size]


def expected(case, codec, direct=True, notes=None):
    """NumPy's (statuses or None, dst bytes, bytes a FAILED direct row may write)."""
    oracle = Oracle(case, [(b + 1) * c for (_, b), c in zip(chunk_range(case), case["chunk"],
                                                            strict=True)], direct)
    statuses = []
    for g, coords in rows_of(case):
        status = row_status(case, g, coords)
        statuses.append(status)
        if status == DECODED:
            oracle.place(coords)
        elif status == NO_DATA:
            oracle.fill(coords, case["fill"])
        else:
            oracle.failed(coords, codec)
        if notes is not None:
            kind = case["kinds"].get(coords, "ok")
            kind = "no shard" if status == NO_DATA and kind != "empty" else kind
            notes.append(f"{'direct' if oracle.whole(coords) and oracle.same else 'region'} "
                         f"row {kind}")
    want, mask = oracle.dst()
    status = np.array(statuses, dtype=np.int8) if FAILED in statuses else None
    return status, want, mask


# property test

KINDS = ["ok"] * 4 + ["empty", "empty", "short", "long", "garbage", "eof", "huge", "far",
                      "zero"]
GONE = ["ok"] * 4 + ["fd", "index", "both"]


@st.composite
def box_cases(draw):
    ndim = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 4)) for _ in range(ndim)]
    cps = [draw(st.integers(1, 3)) for _ in range(ndim)]
    mode = draw(st.sampled_from(["free", "aligned", "slab", "slab"]))
    start, count, total = [], [], 1
    for d in range(ndim):
        c = chunk[d]
        first = draw(st.integers(0, 2 * cps[d]))
        span = 1 if mode == "slab" and d else draw(st.integers(1, max(1, min(4, 40 // total))))
        total *= span
        lo = 0 if mode != "free" else draw(st.integers(0, c - 1))
        hi = c - 1 if mode != "free" else draw(st.integers(lo if span == 1 else 0, c - 1))
        start.append(first * c + lo)
        count.append((first + span - 1) * c + hi + 1 - start[-1])
    itemsize, swap_unit = draw(st.sampled_from(
        [(i, u) for i, u in ITEM_SWAPS if u == 1] if draw(st.booleans()) else ITEM_SWAPS))
    case = dict(chunk=chunk, cps=cps, start=start, count=count, itemsize=itemsize,
                swap_unit=swap_unit, order=draw(st.sampled_from("CCF")),
                pad=draw(st.sampled_from([0, 0, 0, itemsize])),
                seed=draw(st.integers(0, 2**32 - 1)),
                fill=draw(st.binary(min_size=itemsize, max_size=itemsize)), kinds={},
                shards={})
    # the limit: none, or about the largest stored frame (an ok one may then be too big)
    case["limit"] = draw(st.sampled_from([2**63 - 1, 2 * nbytes_of(case) + 65536,
                                          nbytes_of(case) + 64]))
    if draw(st.booleans()):  # else every entry stored whole: the result is None
        case["kinds"] = {k: draw(st.sampled_from(KINDS)) for _, k in rows_of(case)}
        case["shards"] = {s: draw(st.sampled_from(GONE)) for s in touched_shards(case)}
    return case


def fits(case, codec) -> bool:
    """Whether every stored frame is within the case's limit (else: a smaller one)."""
    return all(len(stored(codec, chunk_bytes(case, k), case["kinds"].get(k, "ok"),
                          case["itemsize"])) <= cap_of(case) for _, k in rows_of(case))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("cls", DECODERS)
@settings(PROPS, max_examples=300)
@given(case=box_cases(), direct=st.booleans())
def test_box_matches_numpy_and_twin(tmp_path_factory, cls, codec, case, direct):
    if not fits(case, codec):  # (frames of incompressible bytes: no tight limit)
        case["limit"] = 2**63 - 1
    folder = tmp_path_factory.mktemp("shards")
    written = write_shards(case, codec, folder)
    notes = []
    want_status, want, mask = expected(case, codec, direct, notes)
    for note in {*notes, "all placed" if want_status is None else "some failed"}:
        event(note)
    got, dst = call(cls, codec, case, folder, direct=direct, written=written)
    check(got, dst, want_status, want, mask, f"{cls.__module__} {codec}")
    if cls is CompiledDecoder:  # shared with the helper thread; and the twin, directly
        check(*call(cls, codec, case, folder, direct=direct, share=True, written=written),
              want_status, want, mask, "compiled, share")
        twin, dst3 = call(TwinDecoder, codec, case, folder, direct=direct, written=written)
        check(got, dst3, twin, dst, mask, "compiled vs twin")


def test_rows_match_box_table():
    """The rows these tests expect are ``box_table``'s: shards, bounds, inner indexes."""
    case = dict(chunk=[2, 3, 1], cps=[2, 1, 3], start=[1, 2, 2], count=[6, 5, 5], itemsize=4)
    shards, bounds, inner, *_ = kernels.box_table(
        i64(*case["start"]), i64(*case["count"]), i64(*case["chunk"]), i64(*case["cps"]),
        i64(12, 4, 4), i64(100, 20, 4))
    assert [tuple(s) for s in shards.tolist()] == touched_shards(case)
    rows = rows_of(case)
    assert bounds.tolist() == [0] + list(itertools.accumulate(
        len(shard_rows(case, s)) for s in touched_shards(case)))
    assert inner.tolist() == [inner_index(case, k) for _, k in rows]
    assert len(rows) == 4 * 3 * 5


# whole inner chunks, straight into dst or not

# rows: (1, 4) chunks into a dst padded along dim 0, all direct, one shard missing;
# swapped: never direct; one_chunk: the box is one chunk; mixed: a whole chunk between
# partial ones, one damaged; f_order: F-order chunks whose one long dim is the last;
# shard_order: whole and partial chunks whose shard order is not their C order
_ROWS = dict(chunk=[1, 4], cps=[2, 1], start=[1, 0], count=[4, 4], itemsize=4,
             dst_strides=[24, 4])
LAYOUTS = {
    "rows": dict(_ROWS, swap_unit=1, kinds={(3, 0): "empty"}, shards={(2, 0): "fd"}),
    "rows_swapped": dict(_ROWS, swap_unit=2, kinds={}, shards={}),
    "one_chunk": dict(chunk=[2, 3, 4], cps=[2, 2, 2], start=[2, 0, 0], count=[2, 3, 4],
                      itemsize=2, swap_unit=1, kinds={}, shards={}),
    "mixed": dict(chunk=[2, 4], cps=[3, 1], start=[1, 0], count=[4, 4], itemsize=8,
                  swap_unit=1, kinds={(2, 0): "short", (1, 0): "empty"}, shards={}),
    "f_order": dict(chunk=[1, 5], cps=[2, 1], start=[0, 0], count=[3, 5], itemsize=1,
                    swap_unit=1, order="F", kinds={(1, 0): "garbage"}, shards={}),
    "shard_order": dict(chunk=[1, 2], cps=[2, 1], start=[0, 0], count=[2, 3], itemsize=4,
                        swap_unit=1, kinds={}, shards={}),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("cls", DECODERS)
def test_whole_chunks_direct_and_not(tmp_path, cls, codec, layout):
    case = dict(LAYOUTS[layout], seed=5, fill=bytes(range(7, 7 + LAYOUTS[layout]["itemsize"])),
                limit=2**40)
    written = write_shards(case, codec, tmp_path)
    got = {}
    for direct in (True, False):
        want_status, want, mask = expected(case, codec, direct)
        got[direct] = call(cls, codec, case, tmp_path, direct=direct, written=written)
        check(*got[direct], want_status, want, mask, f"direct={direct}")
        assert (want_status is None) == (layout not in ("mixed", "f_order"))
        got[direct] += (mask,)
    keep = ~(got[True][2] | got[False][2])
    np.testing.assert_array_equal(got[True][1][keep], got[False][1][keep])


@pytest.mark.parametrize("cls", DECODERS)
def test_an_uncompressed_chunk_of_the_wrong_size_writes_nothing_past_its_block(tmp_path,
                                                                                cls):
    """Direct "none" rows read straight into dst: an entry one byte longer than the
    chunk is refused unread, and the next row is intact."""
    (tmp_path / "s").write_bytes(b"AAAABBBBBCCCC")
    index = np.array([[0, 4], [4, 5], [9, 4]], dtype=U64)
    buf = np.full(12 + 2 * GUARD, 0xEE, dtype=np.uint8)
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        got = call_box_shards(cls("none", 4),
            i64(fd), [index], i64(0), i64(12), i64(4), i64(3), i64(1), buf[GUARD:-GUARD],
            i64(1), 1, 1, b"\0", 100)
    finally:
        os.close(fd)
    assert got.tolist() == [DECODED, FAILED, DECODED]
    assert bytes(buf[GUARD:GUARD + 4]) == b"AAAA" and bytes(buf[GUARD + 8:-GUARD]) == b"CCCC"
    assert (buf[:GUARD] == 0xEE).all() and (buf[-GUARD:] == 0xEE).all()


# statuses in box_table's order

ORDER = dict(chunk=[1, 2, 2], cps=[2, 1, 3], start=[1, 1, 3], count=[3, 3, 6], itemsize=2,
             swap_unit=1, seed=3, limit=2**40, fill=b"\xf1\xf2", shards={})


@pytest.mark.parametrize("how", ["garbage", "far"])  # (fails after reading, or before)
@pytest.mark.parametrize("cls", DECODERS)
def test_statuses_come_in_box_table_order(tmp_path, cls, how):
    case = dict(ORDER)
    rows = rows_of(case)
    shards, bounds, inner, *_ = kernels.box_table(
        i64(*case["start"]), i64(*case["count"]), i64(*case["chunk"]), i64(*case["cps"]),
        i64(8, 4, 2), i64(36, 12, 2))
    assert len(rows) == 24 and len(shards) == 8
    for i, (g, coords) in enumerate(rows):
        # (the row's place in box_table: its shard's block, its inner index there)
        assert bounds[g] <= i < bounds[g + 1] and inner[i] == inner_index(case, coords)
        case["kinds"] = {coords: how, rows[(i + 7) % 24][1]: "empty"}
        folder = tmp_path / str(i)
        folder.mkdir()
        got, dst = call(cls, "zstd", case, folder)
        want = [DECODED] * 24
        want[i], want[(i + 7) % 24] = FAILED, NO_DATA
        assert got is not None and got.tolist() == want, (coords, got)
        want_status, want_dst, _ = expected(case, "zstd")
        np.testing.assert_array_equal(dst, want_dst)


# entry sizes: the limit and the decoder's own cap

@pytest.mark.parametrize("cls", DECODERS)
def test_limit_boundary(tmp_path, cls):
    """An entry of exactly ``limit`` bytes is read; one byte more is ``FAILED`` unread
    (its bytes would decode: a frame, then a skippable frame)."""
    data = rng_bytes(1, 64)
    frame = compress(data) + struct.pack("<II", 0x184D2A50, 8) + bytes(8)
    (tmp_path / "s").write_bytes(frame)
    index = np.array([[0, len(frame)]], dtype=U64)
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        for limit, want in ((len(frame), None), (len(frame) - 1, [FAILED]), (0, [FAILED]),
                            (2**63 - 1, None)):
            dst = np.zeros(64, dtype=np.uint8)
            got = call_box_shards(cls("zstd", 64),
                i64(fd), [index], i64(0), i64(64), i64(64), i64(1), i64(1), dst, i64(1), 1,
                1, b"\0", limit)
            assert (got if got is None else got.tolist()) == want, limit
            assert bytes(dst) == (data if want is None else bytes(64)), limit
    finally:
        os.close(fd)


@pytest.mark.parametrize("cls", DECODERS)
def test_a_negative_limit_fails_every_stored_entry(tmp_path, cls):
    """``limit`` -1: every entry is more than ``limit`` bytes (empty ones are filled)."""
    (tmp_path / "s").write_bytes(b"ABCDEFGH")
    index = np.array([[0, 4], [EMPTY, 0], [4, 4]], dtype=U64)
    dst = np.zeros(12, dtype=np.uint8)
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        got = call_box_shards(cls("none", 4),
            i64(fd), [index], i64(0), i64(12), i64(4), i64(3), i64(1), dst, i64(1), 1, 1,
            b"z", -1)
    finally:
        os.close(fd)
    assert got is not None and got.tolist() == [FAILED, NO_DATA, FAILED]
    assert bytes(dst) == bytes(4) + b"zzzz" + bytes(4)


@pytest.mark.parametrize("cls", DECODERS)
def test_the_decoder_cap_boundary(tmp_path, cls):
    """Entries of up to ``2 * nbytes + 65536`` bytes are read whatever ``limit`` says."""
    data = rng_bytes(2, 16)
    cap = 2 * 16 + 65536
    head = compress(data)
    for extra, want in ((0, None), (1, [FAILED])):
        pad = cap + extra - len(head) - 8
        frame = head + struct.pack("<II", 0x184D2A50, pad) + bytes(pad)
        (tmp_path / "s").write_bytes(frame)
        index = np.array([[0, len(frame)]], dtype=U64)
        dst = np.zeros(16, dtype=np.uint8)
        fd = os.open(tmp_path / "s", os.O_RDONLY)
        try:
            got = call_box_shards(cls("zstd", 16),
                i64(fd), [index], i64(0), i64(16), i64(16), i64(1), i64(1), dst, i64(1), 1,
                1, b"\0", 2**62)
        finally:
            os.close(fd)
        assert (got if got is None else got.tolist()) == want, extra
        assert bytes(dst) == (data if want is None else bytes(16)), extra


@pytest.mark.parametrize("cls", DECODERS)
def test_offsets_near_2_63(tmp_path, cls):
    """Offsets of 2**63 - 1 (read: nothing there) and 2**63 (refused) are ``FAILED``;
    the other rows are placed."""
    (tmp_path / "s").write_bytes(b"ABCD")
    index = np.array([[0, 2], [2**63 - 1, 2], [2**63, 2], [2, 2]], dtype=U64)
    dst = np.zeros(8, dtype=np.uint8)
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        got = call_box_shards(cls("none", 2),
            i64(fd), [index], i64(0), i64(8), i64(2), i64(4), i64(1), dst, i64(1), 1, 1,
            b"\0", 100)
    finally:
        os.close(fd)
    assert got.tolist() == [DECODED, FAILED, FAILED, DECODED]
    assert bytes(dst) == b"AB" + bytes(4) + b"CD"


# rejected arguments

def _base(fd):
    """A (2, 4) box of a (2, 2)-chunk, (1, 2)-cps array: shards (0, 0) and (1, 0)."""
    return dict(fds=i64(fd, fd), indexes=[np.zeros((2, 2), U64), np.zeros((2, 2), U64)],
                start=i64(0, 0), count=i64(4, 4), chunk_shape=i64(2, 2), cps=i64(1, 2),
                chunk_strides=i64(8, 4), dst=np.zeros(64, dtype=np.uint8),
                dst_strides=i64(16, 4), itemsize=4, swap_unit=1, fill=b"\1\2\3\4",
                limit=1000)


BAD = {
    "cps_length": (dict(cps=i64(1)), ValueError),
    "cps_0": (dict(cps=i64(1, 0)), ValueError),
    "fill_short": (dict(fill=b"\1\2\3"), ValueError),
    "fill_long": (dict(fill=b"\1\2\3\4\5"), ValueError),
    "fill_2d": (dict(fill=np.zeros((1, 4), np.uint8)), ValueError),
    "fds_too_few": (dict(fds=i64(3)), ValueError),
    "fds_too_many": (dict(fds=i64(3, 3, 3)), ValueError),
    "fds_int32": (dict(fds=np.array([3, 3], dtype=np.int32)), ValueError),
    "indexes_too_few": (dict(indexes=[None]), ValueError),
    "indexes_too_many": (dict(indexes=[None, None, None]), ValueError),
    "indexes_tuple": (dict(indexes=(None, None)), TypeError),
    "index_rows": (dict(indexes=[None, np.zeros((3, 2), U64)]), ValueError),
    "index_cols": (dict(indexes=[np.zeros((2, 3), U64), None]), ValueError),
    "index_1d": (dict(indexes=[np.zeros(4, U64), None]), ValueError),
    "index_transposed": (dict(indexes=[np.zeros((2, 2), U64).T, None]), ValueError),
    "index_not_buffer": (dict(indexes=[[[0, 0], [0, 0]], None]), TypeError),
    "index_int64": (dict(indexes=[np.zeros((2, 2), I64), None]), TypeError),
    "index_float64": (dict(indexes=[None, np.zeros((2, 2), np.float64)]), TypeError),
    "count_0": (dict(count=i64(4, 0)), ValueError),
    "too_many_chunks": (dict(start=i64(0), count=i64(2**16 + 1), chunk_shape=i64(1),
                             cps=i64(1), chunk_strides=i64(4), dst_strides=i64(4),
                             fds=np.full(2**16 + 1, -1, I64), indexes=[None] * (2**16 + 1),
                             dst=np.zeros(4 * (2**16 + 1), np.uint8)), ValueError),
    "dst_too_small": (dict(dst=np.zeros(63, dtype=np.uint8)), ValueError),
    "dst_read_only": (dict(dst=bytes(64)), BufferError),
    "lengths": (dict(count=i64(4)), ValueError),
    "itemsize_not_swaps": (dict(swap_unit=8), ValueError),
}


def _outcome(cls, fd, change, codec="zstd"):
    """The exception (type, message) a call raises, else what it returns; dst stays
    untouched when it raises."""
    args = {**_base(fd), **change}
    try:
        return call_box_shards(cls(codec, 16), **args)
    except (ValueError, TypeError, OverflowError, BufferError) as e:
        assert not np.frombuffer(args["dst"], dtype=np.uint8).any()
        return type(e), str(e)


@pytest.mark.parametrize("bad", sorted(BAD))
def test_rejected_arguments(tmp_path, bad):
    change, exc = BAD[bad]
    (tmp_path / "s").write_bytes(bytes(64))
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        got = [_outcome(cls, fd, change) for cls in
               [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else [])]
    finally:
        os.close(fd)
    assert [type(g) is tuple and g[0] for g in got] == [exc] * len(got), got


@pytest.mark.parametrize("cls", DECODERS)
def test_the_index_of_a_missing_shard_is_not_looked_at(tmp_path, cls):
    """``fds[g] < 0``: whatever ``indexes[g]`` is (the wrong shape, dtype, an entry
    pointing at bytes of an open file), the shard's rows are filled."""
    (tmp_path / "s").write_bytes(bytes(range(64)))
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        for index in (np.zeros((5, 7), U64), np.zeros((2, 2), I64), b"junk",
                      np.array([[0, 16], [16, 16]], dtype=U64)):
            args = {**_base(fd), "fds": i64(-1, -5), "indexes": [index, index]}
            dec = cls("none", 16)
            assert call_box_shards(dec, **args) is None
            assert bytes(args["dst"]) == b"\1\2\3\4" * 16
            args = {**_base(fd), "fds": i64(fd, -1),
                    "indexes": [np.array([[0, 16], [16, 16]], U64), index]}
            assert call_box_shards(dec, **args) is None
            want = np.full((4, 4, 4), [1, 2, 3, 4], np.uint8)
            want[:2] = np.arange(32, dtype=np.uint8).reshape(2, 2, 2, 4).transpose(
                1, 0, 2, 3).reshape(2, 4, 4)
            assert bytes(args["dst"]) == want.tobytes()
    finally:
        os.close(fd)


@pytest.mark.parametrize("cls", DECODERS)
def test_read_only_and_shared_indexes(tmp_path, cls):
    """A read-only index, and one index object for two shards of the same file."""
    (tmp_path / "s").write_bytes(bytes(range(32)))
    index = np.array([[16, 16], [0, 16]], dtype=U64)
    index.flags.writeable = False
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        args = {**_base(fd), "indexes": [index, index]}
        assert call_box_shards(cls("none", 16), **args) is None
    finally:
        os.close(fd)
    chunk = [np.arange(16, 32, dtype=np.uint8), np.arange(16, dtype=np.uint8)]
    want = np.concatenate([c.reshape(2, 2, 4) for c in chunk], axis=1)
    assert bytes(args["dst"]) == np.concatenate([want, want]).tobytes()


@pytest.mark.parametrize("fd_bits", [2**31, 2**32])
def test_a_descriptor_beyond_int_range(tmp_path, fd_bits):
    """A descriptor that is not an ``int`` (``2**31``; ``2**32 + fd``, ``fd`` once
    truncated): ``ValueError``, as ``decode_ranges`` raises, from both."""
    (tmp_path / "s").write_bytes(bytes(range(32)))
    fd = os.open(tmp_path / "s", os.O_RDONLY)
    try:
        bad = fd_bits + (fd if fd_bits == 2**32 else 0)
        change = {"fds": i64(bad, bad), "indexes": [np.array([[0, 16], [16, 16]], U64)] * 2}
        got = [_outcome(cls, fd, change, "none") for cls in
               [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else [])]
    finally:
        os.close(fd)
    assert [type(g) is tuple and g[0] for g in got] == [ValueError] * len(got), got
