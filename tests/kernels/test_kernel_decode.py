"""Batched zstd decoding: ``_ext._decode.ChunkDecoder`` (``decode_regions``,
``decode_files``) against its twin in ``zarrfast.kernels.reference``: property tests.

Both implementations run on the same inputs and must agree (statuses and every byte
of ``dst``), and each result is also checked against an independent computation
(python-zstandard for the decoding, NumPy fancy indexing for the placement).
Explicit cases: ``test_kernel_decode_cases.py``; the pipeline that uses the decoder:
``tests/engine/test_batch_decode.py``.
"""

from __future__ import annotations

import errno
import functools
import math
import os

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from _helpers.decode import (
    CHUNK,
    DECODED,
    DECODERS,
    FAILED,
    FRAME,
    GUARD,
    ITEM_SWAPS,
    MAGIC,
    NO_DATA,
    PROPS,
    CompiledDecoder,
    TwinDecoder,
    c_strides,
    call_files,
    call_ranges,
    call_regions,
    compress,
    compress_stream,
    failed_direct_mask,
    independent_decode,
    layout_args,
    new_decoder,
    numpy_place,
    outcome,
    rle_frame,
    skippable,
)
from _helpers.kernels import I64, dense_strides, i64, rng_bytes, span_of


def test_rle_frames_are_valid_zstd():
    for total, declare in [(0, None), (5, 5), (300_000, None), (300_000, 300_000)]:
        f = rle_frame(total, 0x41, declare)
        assert zstandard.ZstdDecompressor().stream_reader(f).read() == b"A" * total
        size = zstandard.get_frame_parameters(f).content_size
        assert size == (zstandard.CONTENTSIZE_UNKNOWN if declare is None else declare)


# ---------------------------------------------------------------------------
# decode_regions: property test
# ---------------------------------------------------------------------------

KINDS = ("good", "good", "good_nosize", "good_stream", "good_multi", "good_rle", "truncated",
         "wrong_size", "garbage", "junk_tail", "bomb_declared", "bomb_rle", "missing", "empty")


@st.composite
def chunk_data(draw, nbytes):
    seed = draw(st.integers(0, 2**32 - 1))
    if draw(st.booleans()):
        return rng_bytes(seed, nbytes)
    pattern = rng_bytes(seed, draw(st.integers(1, 5)))  # compressible
    return (pattern * (nbytes // len(pattern) + 1))[:nbytes]


@st.composite
def frame_of(draw, kind, nbytes):
    """(stored bytes or None for a missing chunk, the chunk they decode to or None)."""
    data = draw(chunk_data(nbytes))
    level = draw(st.sampled_from([1, 3, -1]))
    checksum = draw(st.booleans())
    if kind == "good":
        return compress(data, level=level, checksum=checksum), data
    if kind == "good_nosize":
        return compress(data, level=level, checksum=checksum, content_size=False), data
    if kind == "good_stream":
        return compress_stream(data, draw(st.integers(1, 3)), checksum), data
    if kind == "good_multi":  # two frames; the first declares no size
        k = draw(st.integers(0, nbytes))
        first = compress(data[:k], checksum=checksum, content_size=False)
        second = compress(data[k:], checksum=draw(st.booleans()),
                          content_size=draw(st.booleans()))
        return first + second, data
    if kind == "good_rle":
        byte = draw(st.integers(0, 255))
        return (rle_frame(nbytes, byte, draw(st.sampled_from([None, nbytes]))),
                bytes([byte]) * nbytes)
    if kind == "truncated":
        frame = draw(st.sampled_from([
            compress(data, level=level, checksum=checksum),
            compress(data, level=level, checksum=checksum, content_size=False),
            compress_stream(data, 2, checksum),
        ]))
        # (a cut inside the 4-byte checksum: see test_truncated_checksum_is_failed)
        return frame[:draw(st.integers(0, len(frame) - 1 - 4 * checksum))], None
    if kind == "wrong_size":
        delta = draw(st.integers(1, 2 * nbytes))
        n = nbytes - delta if delta <= nbytes and draw(st.booleans()) else nbytes + delta
        other = draw(chunk_data(n))
        if draw(st.booleans()):
            return compress(other, checksum=checksum, content_size=draw(st.booleans())), None
        return compress_stream(other, 2, checksum), None
    if kind == "garbage":
        junk = draw(st.binary(min_size=0, max_size=48))
        frame = (MAGIC + junk) if draw(st.booleans()) else junk
        return frame, independent_decode(frame, nbytes)
    if kind == "junk_tail":
        frame = compress(data, level=level, checksum=checksum, content_size=draw(st.booleans()))
        return frame + b"\x00" + draw(st.binary(min_size=0, max_size=8)), None
    if kind == "bomb_declared":
        declare = draw(st.sampled_from([nbytes + 1, 2 * nbytes, 2**40, 2**63]))
        return rle_frame(draw(st.sampled_from([nbytes, 4 * nbytes])), 7, declare), None
    if kind == "bomb_rle":  # decodes to more than nbytes, declared as nbytes or not at all
        total = nbytes + draw(st.integers(1, 1 << 20))
        return rle_frame(total, 7, draw(st.sampled_from([None, nbytes]))), None
    if kind == "empty":
        return b"", None
    assert kind == "missing"
    return None, None


@st.composite
def decode_cases(draw):
    ndim = draw(st.integers(1, 4))
    chunk = [draw(st.integers(1, 5)) for _ in range(ndim)]
    itemsize, swap_unit = draw(st.sampled_from(ITEM_SWAPS))
    nbytes = math.prod(chunk) * itemsize
    mode = draw(st.sampled_from(["layout", "layout", "layout", "any"]))
    if mode == "layout":
        # the stored (maybe transposed) layout's strides, times a (maybe negative) step
        perm = draw(st.permutations(range(ndim)))
        stored = c_strides([chunk[p] for p in perm], itemsize)
        base = [0] * ndim
        for k in range(ndim):
            base[perm[k]] = stored[k]
        steps = [draw(st.sampled_from([1, 1, 1, 2, 3, -1, -2])) for _ in range(ndim)]
        chunk_strides = [b * t for b, t in zip(base, steps, strict=True)]
        max_count = [-(-c // abs(t)) for c, t in zip(chunk, steps, strict=True)]
    else:  # arbitrary reads: zero, overlapping, unaligned strides
        lim = 2 * itemsize * max(chunk)
        chunk_strides = [draw(st.integers(-lim, lim)) for _ in range(ndim)]
        max_count = [4] * ndim
    nrows = draw(st.integers(1, 6))
    rows = []
    for _ in range(nrows):
        counts = [draw(st.integers(1, m)) for m in max_count]
        if draw(st.integers(0, 11)) == 0:
            counts[draw(st.integers(0, ndim - 1))] = 0
        lo, hi = span_of(counts, chunk_strides, itemsize)
        if hi - lo > nbytes:
            counts = [1] * ndim
            lo, hi = 0, itemsize
        if 0 in counts:
            offset = draw(st.integers(0, nbytes))
        else:
            offset = draw(st.integers(-lo, nbytes - hi))
            aligned = offset - offset % itemsize
            if mode == "layout" and aligned >= -lo:
                offset = aligned
        kind = draw(st.sampled_from(KINDS))
        frame, expect = draw(frame_of(kind, nbytes))
        rows.append(dict(counts=counts, chunk_offset=offset, kind=kind, frame=frame,
                         expect=expect, direct=draw(st.integers(0, 3)) == 0))
    # dst: one block per row (room for the largest region, or the whole chunk for a
    # direct row), guard bytes around everything
    biggest = [max(max(r["counts"][d] for r in rows), 1) for d in range(ndim)]
    dst_strides = draw(dense_strides(biggest, itemsize))
    lo, hi = span_of(biggest, dst_strides, itemsize)
    block = max(hi - lo, nbytes) + draw(st.integers(0, 3))
    for r, row in enumerate(rows):
        start = GUARD + r * block
        row["dst_offset"] = start if row["direct"] else start - lo
        row["block"] = (start, start + block)
    dst_len = 2 * GUARD + nrows * block
    # src: the frames one after another with gaps
    src = bytearray()
    for row in rows:
        src += b"\xaa" * draw(st.integers(0, 3))
        if row["frame"] is None:
            row["src_offset"], row["src_size"] = draw(st.integers(-100, 10**6)), -1
        else:
            row["src_offset"], row["src_size"] = len(src), len(row["frame"])
            src += row["frame"]
    src += b"\xaa" * draw(st.integers(0, 3))
    if draw(st.booleans()):
        rows = draw(st.permutations(rows))  # frames out of src order
    # perturbations that must be rejected before anything is written
    bad = draw(st.sampled_from([None] * 8 + ["chunk", "src", "direct_dst", "dst"]))
    return dict(chunk=chunk, itemsize=itemsize, swap_unit=swap_unit, nbytes=nbytes,
                chunk_strides=chunk_strides, dst_strides=dst_strides, rows=rows,
                src=bytes(src), dst_len=dst_len, seed=draw(st.integers(0, 2**32 - 1)),
                bad=bad, bad_row=draw(st.integers(0, nrows - 1)),
                bad_by=draw(st.integers(1, 20)),
                # rows shared with the kernels' helper thread (it takes some of them
                # when it is awake: it stays so between back-to-back calls)
                share=draw(st.booleans()))


def perturb(case) -> bool:
    """Apply ``case["bad"]`` to one row; whether the arguments are now invalid."""
    bad, by = case["bad"], case["bad_by"]
    if bad is None:
        return False
    itemsize, nbytes = case["itemsize"], case["nbytes"]
    rows = case["rows"]
    # first candidate row at or after bad_row (cyclically)
    order = rows[case["bad_row"]:] + rows[:case["bad_row"]]
    for row in order:
        nonempty = 0 not in row["counts"]
        if bad == "chunk" and not row["direct"] and nonempty and row["src_size"] >= 0:
            lo, hi = span_of(row["counts"], case["chunk_strides"], itemsize)
            row["chunk_offset"] = (-lo - by) if by % 2 else (nbytes - hi + by)
            return True
        if bad == "src" and row["src_size"] >= 0:
            row["src_offset"] = (-by) if by % 2 else (len(case["src"]) - row["src_size"] + by)
            return True
        if bad == "direct_dst" and row["direct"] and row["src_size"] >= 0:
            row["dst_offset"] = (-by) if by % 2 else (case["dst_len"] - nbytes + by)
            return True
        if bad == "dst" and not row["direct"] and nonempty and row["src_size"] >= 0:
            lo, hi = span_of(row["counts"], case["dst_strides"], itemsize)
            row["dst_offset"] = (-lo - by) if by % 2 else (case["dst_len"] - hi + by)
            return True
    return False


def decode_args(case, dst):
    rows = case["rows"]
    return [
        np.frombuffer(case["src"], dtype=np.uint8),
        i64(*[r["src_offset"] for r in rows]),
        i64(*[r["src_size"] for r in rows]),
        *layout_args(case, dst),
    ]


def expected_statuses(case) -> list[int]:
    out = []
    for row in case["rows"]:
        if row["src_size"] < 0:
            out.append(NO_DATA)
        elif not row["direct"] and 0 in row["counts"]:
            out.append(DECODED)  # nothing to place: the stream is not even looked at
        else:
            out.append(DECODED if row["expect"] is not None else FAILED)
    return out


def expected_dst(case, dst0: np.ndarray) -> np.ndarray:
    out = dst0.copy()
    nbytes, itemsize = case["nbytes"], case["itemsize"]
    for row, status in zip(case["rows"], expected_statuses(case), strict=True):
        if status != DECODED or row["expect"] is None:
            continue
        chunk = np.frombuffer(row["expect"], dtype=np.uint8)
        if row["direct"]:
            out[row["dst_offset"]:row["dst_offset"] + nbytes] = chunk
        else:
            numpy_place(out, chunk, row["chunk_offset"], case["chunk_strides"],
                        row["dst_offset"], case["dst_strides"], row["counts"], itemsize,
                        case["swap_unit"])
    return out


def run_decoder(cls, case, dst0, decoder=None):
    dec = decoder if decoder is not None else new_decoder(cls, case["nbytes"])
    dst = dst0.copy()
    got = outcome(functools.partial(call_regions, dec, share=case["share"]),
                  *decode_args(case, dst))
    return got, dst, dec


@PROPS
@given(case=decode_cases())
def test_decode_regions_matches_twin_and_numpy(case):
    invalid = perturb(case)
    dst0 = np.frombuffer(rng_bytes(case["seed"], case["dst_len"]), dtype=np.uint8).copy()
    impls = [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else [])
    results = []
    for cls in impls:
        got, dst, dec = run_decoder(cls, case, dst0)
        results.append((got, dst))
        if invalid:
            assert got[0] == "raised" and got[1] is ValueError, (cls, got)
            assert np.array_equal(dst, dst0), f"{cls}: dst changed before the ValueError"
            continue
        assert got[0] == "ok", (cls, got)
        status = got[1]
        assert isinstance(status, np.ndarray) and status.dtype == np.int8
        assert status.tolist() == expected_statuses(case), (
            cls, [r["kind"] for r in case["rows"]], status.tolist())
        mask = failed_direct_mask(case, status)
        want = expected_dst(case, dst0)
        assert np.array_equal(dst[~mask], want[~mask]), f"{cls}: dst differs from NumPy"
        assert np.array_equal(dst[:GUARD], dst0[:GUARD])
        assert np.array_equal(dst[-GUARD:], dst0[-GUARD:])
        # the decoder (and its scratch buffer) is reusable: a second call agrees
        got2, dst2, _ = run_decoder(cls, case, dst0, decoder=dec)
        assert got2[0] == "ok" and got2[1].tolist() == status.tolist()
        assert np.array_equal(dst2[~mask], dst[~mask])
    for row, s in zip(case["rows"], expected_statuses(case), strict=True):
        event(f"status {s}")
        event(f"kind {row['kind']}{' direct' if row['direct'] else ''}")
    event(f"rejected: {case['bad']}" if invalid else "valid arguments")
    if len(results) == 2:
        (a, da), (b, db) = results
        assert a[0] == b[0]
        if a[0] == "ok":
            assert a[1].tolist() == b[1].tolist()
            mask = failed_direct_mask(case, a[1])
            assert np.array_equal(da[~mask], db[~mask])
        else:
            assert a[1] is b[1]
            assert np.array_equal(da, db)


# ---------------------------------------------------------------------------
# decode_files (chunks read from their files in the same kernel call), if present
# ---------------------------------------------------------------------------

HAS_DECODE_FILES = hasattr(TwinDecoder, "decode_files")
needs_decode_files = pytest.mark.skipif(not HAS_DECODE_FILES, reason="no decode_files")


def decode_files_args(case, dst, paths):
    args = decode_args(case, dst)
    return [paths, *args[3:]]  # no src, src_offsets, src_sizes


def write_frames(case, root) -> list[bytes]:
    """One file per row holding its frame (none for a missing chunk)."""
    paths = []
    for r, row in enumerate(case["rows"]):
        p = os.path.join(root, f"chunk{r}")
        if row["frame"] is not None:
            with open(p, "wb") as f:
                f.write(row["frame"])
        paths.append(os.fsencode(p))
    return paths


@needs_decode_files
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=decode_cases())
def test_decode_files_matches_twin_and_numpy(case):
    """``decode_files`` on files holding the frames gives what ``decode_regions`` gives
    on the frames in a buffer (missing files: NO_DATA), in both implementations."""
    import tempfile

    if case["bad"] == "src":
        case["bad"] = None  # (no src ranges here)
    invalid = perturb(case)
    dst0 = np.frombuffer(rng_bytes(case["seed"], case["dst_len"]), dtype=np.uint8).copy()
    impls = [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else [])
    with tempfile.TemporaryDirectory() as root:
        paths = write_frames(case, root)
        results = []
        for cls in impls:
            dst = dst0.copy()
            got = outcome(functools.partial(call_files, new_decoder(cls, case["nbytes"]),
                                            share=case["share"]),
                          *decode_files_args(case, dst, list(paths)))
            results.append((got, dst))
            if invalid:
                assert got[0] == "raised" and got[1] is ValueError, (cls, got)
                assert np.array_equal(dst, dst0)
                continue
            assert got[0] == "ok", (cls, got)
            status, sizes, errors = got[1]
            # (an empty region is skipped before its file is opened: DECODED, not NO_DATA)
            want_status = [DECODED if not row["direct"] and 0 in row["counts"] else s
                           for row, s in zip(case["rows"], expected_statuses(case), strict=True)]
            assert status.tolist() == want_status, (cls, status.tolist())
            assert not errors.any()
            for row, s, n in zip(case["rows"], status.tolist(), sizes.tolist(), strict=True):
                if s != NO_DATA and (row["direct"] or 0 not in row["counts"]):
                    assert n == len(row["frame"])
            mask = failed_direct_mask(case, status)
            want = expected_dst(case, dst0)
            assert np.array_equal(dst[~mask], want[~mask]), f"{cls}: dst differs from NumPy"
    if len(results) == 2:
        (a, da), (b, db) = results
        assert a[0] == b[0]
        if a[0] == "ok":
            for x, y in zip(a[1], b[1], strict=True):
                assert x.tolist() == y.tolist()
            mask = failed_direct_mask(case, a[1][0])
            assert np.array_equal(da[~mask], db[~mask])
        else:
            assert a[1] is b[1] and a[2] == b[2]


@needs_decode_files
@pytest.mark.parametrize("cls", DECODERS)
def test_decode_files_sizes_errors_and_rejections(cls, tmp_path):
    nbytes = 24
    limit = 2 * nbytes + 65536
    files = {
        "good": FRAME,
        "dir": None,
        "big_valid": FRAME + skippable(limit),  # valid zstd, but over the read limit
        "at_limit": FRAME + skippable(limit - len(FRAME) - 8),
        "garbage": b"nope",
    }
    for name, content in files.items():
        if content is None:
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_bytes(content)
    os.mkfifo(tmp_path / "fifo")  # opened without blocking, refused: FAILED, EINVAL
    names = [*files, "missing", "fifo"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    n = len(names)
    dst = np.full(n * nbytes, 0xEE, dtype=np.uint8)
    dec = new_decoder(cls, nbytes)
    status, sizes, errors = call_files(dec,
        paths, np.zeros(n, I64), i64(2), dst, np.arange(n, dtype=I64) * nbytes, i64(2),
        np.full((n, 1), 12, I64), 2, 1, np.ones(n, np.uint8))
    # (a trailing skippable frame is fine for both; a file of exactly the limit is read)
    assert status.tolist() == [DECODED, NO_DATA, FAILED, DECODED, FAILED, NO_DATA, FAILED]
    assert sizes.tolist() == [len(FRAME), -1, len(files["big_valid"]), limit, 4, -1, -1]
    assert errors.tolist() == [0, 0, errno.EFBIG, 0, 0, 0, errno.EINVAL]
    assert dst[:nbytes].tobytes() == CHUNK
    assert (dst[nbytes:2 * nbytes] == 0xEE).all()
    good = [paths[0]]
    args = (np.zeros(1, I64), i64(2), dst, i64(0), i64(2), np.full((1, 1), 12, I64), 2, 1,
            np.zeros(1, np.uint8))
    with pytest.raises(TypeError):
        call_files(dec, [os.fsdecode(paths[0])], *args)
    with pytest.raises(ValueError, match="NUL"):
        call_files(dec, [b"a\0b"], *args)
    with pytest.raises(ValueError):
        call_files(dec, good + good, *args)
    before = dst.copy()
    with pytest.raises(ValueError):  # a region outside dst: nothing read or written
        call_files(dec, good, np.zeros(1, I64), i64(2), dst, i64(dst.size - 2), i64(2),
                         np.full((1, 1), 12, I64), 2, 1, np.zeros(1, np.uint8))
    assert np.array_equal(dst, before)


# ---------------------------------------------------------------------------
# decode_ranges (chunks read with pread from open files in the same kernel call)
# ---------------------------------------------------------------------------


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=decode_cases())
def test_decode_ranges_matches_decode_regions(case):
    """``decode_ranges`` on a file holding ``src`` gives what ``decode_regions`` gives on
    ``src`` in memory, in both implementations."""
    import tempfile

    if case["bad"] == "src":
        case["bad"] = None  # (ranges past the file's end are not rejected: see below)
    invalid = perturb(case)
    dst0 = np.frombuffer(rng_bytes(case["seed"], case["dst_len"]), dtype=np.uint8).copy()
    impls = [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else [])
    with tempfile.TemporaryFile() as f:
        f.write(case["src"])
        f.flush()
        for cls in impls:
            args = decode_args(case, dst0.copy())
            want = outcome(call_regions, new_decoder(cls, case["nbytes"]), *args)
            dst = dst0.copy()
            fds = np.full(len(case["rows"]), f.fileno(), dtype=I64)
            got = outcome(functools.partial(call_ranges, new_decoder(cls, case["nbytes"]),
                                            share=case["share"]),
                          fds, *args[1:3], *args[3:5], dst, *args[6:])
            if invalid:
                assert got[0] == "raised" and got[1] is ValueError, (cls, got)
                assert np.array_equal(dst, dst0)
                continue
            assert got[0] == want[0] == "ok", (cls, got, want)
            status, errors = got[1]
            assert status.tolist() == want[1].tolist(), cls
            assert not errors.any()
            mask = failed_direct_mask(case, status)
            assert np.array_equal(dst[~mask], args[5][~mask]), f"{cls}: dst differs"


@pytest.mark.parametrize("cls", DECODERS)
def test_decode_ranges_errors_and_rejections(cls, tmp_path):
    nbytes = 24
    limit = 2 * nbytes + 65536
    path = tmp_path / "shard"
    path.write_bytes(b"xx" + FRAME + b"nope")
    fd = os.open(path, os.O_RDONLY)
    closed = os.open(path, os.O_RDONLY)
    os.close(closed)
    try:
        rows = [(fd, 2, len(FRAME)),  # a frame: decoded
                (fd, 0, -1),  # no data
                (fd, 2 + len(FRAME), 4),  # not a frame: FAILED, no errno
                (fd, 2, len(FRAME) + 10),  # past the end of the file: EIO
                (closed, 2, len(FRAME))]  # not an open file: EBADF
        n = len(rows)
        dst = np.full(n * nbytes, 0xEE, dtype=np.uint8)
        dec = new_decoder(cls, nbytes)
        shapes = np.full((n, 1), 12, I64)
        status, errors = call_ranges(dec,
            np.array([r[0] for r in rows], I64), np.array([r[1] for r in rows], I64),
            np.array([r[2] for r in rows], I64), np.zeros(n, I64), i64(2), dst,
            np.arange(n, dtype=I64) * nbytes, i64(2), shapes, 2, 1, np.ones(n, np.uint8))
        assert status.tolist() == [DECODED, NO_DATA, FAILED, FAILED, FAILED]
        assert errors.tolist() == [0, 0, 0, errno.EIO, errno.EBADF]
        assert dst[:nbytes].tobytes() == CHUNK
        assert (dst[nbytes:2 * nbytes] == 0xEE).all()
        before = dst.copy()
        one = (np.zeros(1, I64), i64(2), dst, i64(0), i64(2), np.full((1, 1), 12, I64), 2, 1,
               np.zeros(1, np.uint8))
        for bad in [(fd, -1, 4), (fd, 0, limit + 1), (-1, 0, 4)]:
            with pytest.raises(ValueError, match="decode_ranges"):
                call_ranges(dec, *(i64(v) for v in bad), *one)
        with pytest.raises(ValueError):  # lengths differ
            call_ranges(dec, i64(fd, fd), i64(0), i64(4), *one)
        assert np.array_equal(dst, before)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# streamed copies: large outputs are written with non-temporal stores
# ---------------------------------------------------------------------------

try:
    from zarrfast._ext import _decode as _decode_ext
except ImportError:  # pragma: no cover - not built
    _decode_ext = None


def _stream_runs(threshold):
    """``decode_regions`` of the compiled decoder with ``stream_threshold`` set."""
    def run(dec, *args):
        before = _decode_ext.stream_threshold(threshold)
        try:
            return call_regions(dec, *args)
        finally:
            _decode_ext.stream_threshold(before)
    return run


STREAM_LAYOUTS = [
    # (chunk shape, itemsize, swap_unit, permutation of the stored layout, dst pad)
    ((4, 8, 32), 2, 1, (0, 1, 2), 0),     # 64-byte rows
    ((3, 5, 64), 2, 1, (0, 1, 2), 24),    # 128-byte rows, the output rows padded
    ((2, 3, 50), 4, 1, (0, 1, 2), 8),     # 200-byte rows: a partial line at the end
    ((3, 4, 17), 8, 8, (0, 1, 2), 0),     # byte-swapped items: element copies
    ((4, 6, 40), 2, 1, (2, 0, 1), 0),     # a transposed chunk (F-like): tiled copies
    ((5, 30), 1, 1, (0, 1), 3),           # rows shorter than a line
    ((2, 300), 4, 1, (0, 1), 0),          # rows of 1200 bytes
]


@pytest.mark.skipif(CompiledDecoder is None or _decode_ext is None,
                    reason="the compiled zstd decoder is not bound")
@pytest.mark.parametrize("layout", STREAM_LAYOUTS, ids=lambda v: str(v[0]))
@pytest.mark.parametrize("shift", [0, 1, 16, 48, 63])
def test_streamed_copies_match_plain_copies_twin_and_numpy(layout, shift):
    """Copies streamed into the output (whole cache lines with non-temporal stores, the
    rest with memcpy) give the bytes of plain copies, of the twin and of NumPy, at every
    alignment of the output, for full and cut chunks, direct rows included."""
    chunk, itemsize, swap_unit, perm, pad = layout
    ndim = len(chunk)
    nbytes = math.prod(chunk) * itemsize
    stored = c_strides([chunk[p] for p in perm], itemsize)
    chunk_strides = [0] * ndim
    for k in range(ndim):
        chunk_strides[perm[k]] = stored[k]
    # the output: a 2 x 2 (x 1 ...) grid of chunks, its last dim padded by `pad` items
    grid = [2, 2] + [1] * (ndim - 2)
    out_shape = [g * c for g, c in zip(grid, chunk, strict=True)]
    out_shape[-1] += pad
    dst_strides = c_strides(out_shape, itemsize)
    dst_len = GUARD + shift + math.prod(out_shape) * itemsize + GUARD
    rng = np.random.default_rng(len(chunk) * 1000 + shift)
    rows, frames = [], []
    for r, coords in enumerate(np.ndindex(*grid)):
        data = rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
        counts = list(chunk)
        if r == 3:  # a chunk cut by the output's edge
            counts[0] = max(1, chunk[0] - 1)
        origin = [c * n for c, n in zip(coords, chunk, strict=True)]
        rows.append(dict(counts=counts, data=data, direct=False,
                         dst_offset=GUARD + shift + sum(
                             o * s for o, s in zip(origin, dst_strides, strict=True))))
        frames.append(compress(data, level=1))
    # one more row decoded straight into a block after the grid (direct)
    direct_data = rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
    dst_len += nbytes
    rows.append(dict(counts=list(chunk), data=direct_data, direct=True,
                     dst_offset=dst_len - GUARD - nbytes))
    frames.append(compress(direct_data, level=1))
    src = b"".join(frames)
    offsets = np.cumsum([0] + [len(f) for f in frames[:-1]]).astype(I64)
    args = lambda dst: [  # noqa: E731
        np.frombuffer(src, dtype=np.uint8), offsets, i64(*[len(f) for f in frames]),
        np.zeros(len(rows), dtype=I64), i64(*chunk_strides), dst,
        i64(*[r["dst_offset"] for r in rows]), i64(*dst_strides),
        np.array([r["counts"] for r in rows], dtype=I64), itemsize, swap_unit,
        np.array([r["direct"] for r in rows], dtype=np.uint8)]
    dst0 = np.frombuffer(rng_bytes(shift, dst_len), dtype=np.uint8).copy()
    want = dst0.copy()
    for row in rows:
        chunk_bytes = np.frombuffer(row["data"], dtype=np.uint8)
        if row["direct"]:
            want[row["dst_offset"]:row["dst_offset"] + nbytes] = chunk_bytes
        else:
            numpy_place(want, chunk_bytes, 0, chunk_strides, row["dst_offset"], dst_strides,
                        row["counts"], itemsize, swap_unit)
    for name, cls, run in [("twin", TwinDecoder, lambda d, *a: call_regions(d, *a)),
                           ("plain", CompiledDecoder, _stream_runs(2**62)),
                           ("streamed", CompiledDecoder, _stream_runs(0))]:
        # (on a cache line, so that `shift` 48 puts whole rows on lines)
        block = np.empty(dst_len + 64, dtype=np.uint8)
        skip = -block.ctypes.data % 64
        dst = block[skip:skip + dst_len]
        dst[...] = dst0
        status = run(new_decoder(cls, nbytes), *args(dst))
        assert status.tolist() == [DECODED] * len(rows), name
        assert np.array_equal(dst, want), f"{name}: dst differs from NumPy"


@pytest.mark.skipif(_decode_ext is None, reason="not built")
def test_stream_threshold_reports_and_restores():
    before = _decode_ext.stream_threshold()
    assert before == 32 * 2**20
    assert _decode_ext.stream_threshold(5) == before
    assert _decode_ext.stream_threshold() == 5  # (a negative size only reads it)
    assert _decode_ext.stream_threshold(before) == 5


@pytest.mark.parametrize("cls", DECODERS)
@pytest.mark.parametrize("bad", ["dst", "chunk", "direct", "shape", "zero_stride"])
def test_a_bad_row_deep_in_a_large_batch_is_named(cls, bad):
    """The rows of a call are checked without the GIL; the first bad one is named by
    the checks that raise, and nothing is written."""
    n, at, chunk = 600, 517, (4, 8)
    nbytes = 4 * 8 * 2
    frame = compress(bytes(range(nbytes)), level=1)
    src = np.frombuffer(frame * n, dtype=np.uint8)
    offsets = np.arange(n, dtype=I64) * len(frame)
    sizes = np.full(n, len(frame), dtype=I64)
    dst_strides = i64(16, 2)
    dst_offsets = np.arange(n, dtype=I64) * nbytes
    shapes = np.tile(np.array(chunk, dtype=I64), (n, 1))
    direct = np.zeros(n, dtype=np.uint8)
    chunk_offsets = np.zeros(n, dtype=I64)
    if bad == "dst":
        dst_offsets[at] = n * nbytes - 8
    elif bad == "chunk":
        chunk_offsets[at] = 4
    elif bad == "direct":
        direct[at] = 1
        dst_offsets[at] = n * nbytes - 2
    elif bad == "shape":
        shapes[at] = (-1, 8)
    else:
        dst_strides = i64(0, 2)
        shapes[:at] = (1, 8)
        shapes[at + 1:] = (1, 8)
    dst = np.full(n * nbytes, 7, dtype=np.uint8)
    with pytest.raises(ValueError, match=rf"\(chunk {at}\)"):
        call_regions(new_decoder(cls, nbytes),
            src, offsets, sizes, chunk_offsets, i64(16, 2), dst, dst_offsets, dst_strides,
            shapes, 2, 1, direct)
    assert (dst == 7).all()
