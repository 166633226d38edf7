"""Batched decoding: ``_ext._decode.ChunkDecoder`` (``decode_regions``,
``decode_files``) against its twin in ``zarrfast.kernels.reference``,
``read_files_into(..., exact=False)``, ``Store.read_many_into(..., exact=False)``, and
the pipeline that reads zstd (and blosc) arrays from a ``LocalStore`` a batch of chunk
files at a time.

Kernel tests follow ``tests/kernels/test_kernels.py``: both implementations run on the same
inputs and must agree (statuses and every byte of ``dst``), and each result is also
checked against an independent computation (python-zstandard for the decoding, NumPy
fancy indexing for the placement).  Pipeline tests compare the batched reads with
NumPy ground truth, with the per-chunk path (``disable_batch``), with the pipeline
run on the twin decoder, and with zarr-python.
"""

from __future__ import annotations

import errno
import math
import os
import resource
import struct
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from unittest import mock

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.engine import chunked as pipeline
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import reference as ref
from zarrfast.storage import LocalStore, MemoryStore

from _helpers.kernels import dense_strides, i64, rng_bytes, span_of

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

#: the name of the decoder class in ``zarrfast.kernels`` (what the pipeline calls)
KERNEL_ATTR = "ChunkDecoder"
TwinDecoder = ref.ChunkDecoder
#: the compiled decoder once ``zarrfast.kernels`` has bound it to zstd, else None
CompiledDecoder = _kernels.ChunkDecoder if "zstd" in _kernels.BATCH_CODECS else None


def new_decoder(cls, nbytes):
    """A zstd decoder of ``cls`` (compiled or twin) for chunks of ``nbytes`` bytes."""
    return cls("zstd", nbytes)


def batch_enabled(chain) -> bool:
    return chain.batch_codec is not None


def disable_batch(chain) -> None:
    """Send the chain's reads down the per-chunk path."""
    chain.batch_codec = None


DECODERS = [pytest.param(TwinDecoder, id="reference")]
if CompiledDecoder is not None:
    DECODERS.append(pytest.param(CompiledDecoder, id="compiled"))
READERS = [pytest.param(ref.read_files_into, id="reference")]
if _fileio is not None:
    READERS.append(pytest.param(_fileio.read_files_into, id="compiled"))

needs_kernel = pytest.mark.skipif(CompiledDecoder is None,
                                  reason="the compiled zstd decoder is not bound")

PROPS = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DECODED, NO_DATA, FAILED = 0, 1, 2
I64 = np.int64
GUARD = 16
MAGIC = b"\x28\xb5\x2f\xfd"


def outcome(fn, *args):
    """Run ``fn``; return ``("ok", result)`` or ``("raised", exception type, message)``."""
    try:
        return "ok", fn(*args)
    except (ValueError, TypeError, OverflowError, BufferError) as exc:
        return "raised", type(exc), str(exc)


# ---------------------------------------------------------------------------
# zstd frames
# ---------------------------------------------------------------------------

def compress(data: bytes, *, level: int = 3, checksum: bool = False,
             content_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(level=level, write_checksum=checksum,
                                    write_content_size=content_size).compress(data)


def compress_stream(data: bytes, pieces: int = 2, checksum: bool = False) -> bytes:
    """A frame written by the streaming API: it declares no content size."""
    c = zstandard.ZstdCompressor(write_checksum=checksum).compressobj()
    step = max(1, -(-len(data) // pieces))
    out = [c.compress(data[i:i + step]) for i in range(0, len(data), step)]
    return b"".join(out) + c.flush()


def rle_frame(total: int, byte: int = 0x41, declare: int | None = None) -> bytes:
    """A hand-made zstd frame of RLE blocks (4 bytes per 128 KiB) decoding to ``total``
    copies of ``byte``; its header declares ``declare`` decoded bytes (None: no size)."""
    if declare is None:
        head = MAGIC + bytes([0x00, 0x38])  # no content size; window 128 KiB
    else:
        head = MAGIC + bytes([0xC0, 0x38]) + struct.pack("<Q", declare)
    parts = [head]
    left = total
    while True:
        n = min(left, 1 << 17)
        left -= n
        last = left == 0
        parts.append(((n << 3) | (1 << 1) | int(last)).to_bytes(3, "little") + bytes([byte]))
        if last:
            return b"".join(parts)


def skippable(n: int) -> bytes:
    return struct.pack("<II", 0x184D2A50, n) + b"\x00" * n


def independent_decode(frame: bytes, nbytes: int) -> bytes | None:
    """The ``nbytes`` bytes a one-frame stream decodes to (python-zstandard), or None."""
    try:
        # (decompress() allocates what a header declares, whatever max_output_size says)
        declared = zstandard.get_frame_parameters(frame).content_size
        if declared not in (zstandard.CONTENTSIZE_UNKNOWN, nbytes):
            return None
        out = zstandard.ZstdDecompressor().decompress(frame, max_output_size=nbytes,
                                                      allow_extra_data=False)
    except zstandard.ZstdError:
        return None
    return out if len(out) == nbytes else None


def test_rle_frames_are_valid_zstd():
    for total, declare in [(0, None), (5, 5), (300_000, None), (300_000, 300_000)]:
        f = rle_frame(total, 0x41, declare)
        assert zstandard.ZstdDecompressor().stream_reader(f).read() == b"A" * total
        size = zstandard.get_frame_parameters(f).content_size
        assert size == (zstandard.CONTENTSIZE_UNKNOWN if declare is None else declare)


# ---------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------

ITEM_SWAPS = [(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (8, 4), (8, 8),
              (16, 8), (16, 4)]


def c_strides(shape, itemsize):
    strides, acc = [0] * len(shape), itemsize
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    return strides


def swap_order(itemsize: int, swap_unit: int) -> np.ndarray:
    """Source byte positions of each destination byte of an item (``swap_unit`` groups
    reversed)."""
    return np.concatenate([g + np.arange(swap_unit)[::-1]
                           for g in range(0, itemsize, swap_unit)])


def numpy_place(dst: np.ndarray, chunk: np.ndarray, chunk_offset, chunk_strides, dst_offset,
                dst_strides, shape, itemsize, swap_unit) -> None:
    """Copy a region as ``copy_region`` does, with NumPy fancy indexing over byte offsets."""
    if 0 in shape:
        return
    idx = np.indices(shape).reshape(len(shape), -1)
    src_items = chunk_offset + np.asarray(chunk_strides, dtype=I64) @ idx
    dst_items = dst_offset + np.asarray(dst_strides, dtype=I64) @ idx
    src_bytes = src_items[:, None] + swap_order(itemsize, swap_unit)[None, :]
    dst_bytes = dst_items[:, None] + np.arange(itemsize)[None, :]
    dst[dst_bytes] = chunk[src_bytes]


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
        return rle_frame(nbytes, byte, draw(st.sampled_from([None, nbytes]))), bytes([byte]) * nbytes
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
                bad_by=draw(st.integers(1, 20)))


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
        i64(*[r["chunk_offset"] for r in rows]),
        i64(*case["chunk_strides"]),
        dst,
        i64(*[r["dst_offset"] for r in rows]),
        i64(*case["dst_strides"]),
        np.array([r["counts"] for r in rows], dtype=I64).reshape(len(rows), -1),
        case["itemsize"],
        case["swap_unit"],
        np.array([r["direct"] for r in rows], dtype=np.uint8),
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


def failed_direct_mask(case, statuses) -> np.ndarray:
    """Bytes a FAILED direct row may have scribbled on (its own block)."""
    mask = np.zeros(case["dst_len"], dtype=bool)
    for row, s in zip(case["rows"], statuses, strict=True):
        if row["direct"] and s == FAILED:
            mask[row["dst_offset"]:row["dst_offset"] + case["nbytes"]] = True
    return mask


def run_decoder(cls, case, dst0, decoder=None):
    dec = decoder if decoder is not None else new_decoder(cls, case["nbytes"])
    dst = dst0.copy()
    got = outcome(dec.decode_regions, *decode_args(case, dst))
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
            got = outcome(new_decoder(cls, case["nbytes"]).decode_files,
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
    names = [*files, "missing"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    n = len(names)
    dst = np.full(n * nbytes, 0xEE, dtype=np.uint8)
    dec = new_decoder(cls, nbytes)
    status, sizes, errors = dec.decode_files(
        paths, np.zeros(n, I64), i64(2), dst, np.arange(n, dtype=I64) * nbytes, i64(2),
        np.full((n, 1), 12, I64), 2, 1, np.ones(n, np.uint8))
    # (a trailing skippable frame is fine for both; a file of exactly the limit is read)
    assert status.tolist() == [DECODED, NO_DATA, FAILED, DECODED, FAILED, NO_DATA]
    assert sizes.tolist() == [len(FRAME), -1, len(files["big_valid"]), limit, 4, -1]
    assert errors.tolist() == [0, 0, errno.EFBIG, 0, 0, 0]
    assert dst[:nbytes].tobytes() == CHUNK
    assert (dst[nbytes:2 * nbytes] == 0xEE).all()
    good = [paths[0]]
    args = (np.zeros(1, I64), i64(2), dst, i64(0), i64(2), np.full((1, 1), 12, I64), 2, 1,
            np.zeros(1, np.uint8))
    with pytest.raises(TypeError):
        dec.decode_files([os.fsdecode(paths[0])], *args)
    with pytest.raises(ValueError, match="NUL"):
        dec.decode_files([b"a\0b"], *args)
    with pytest.raises(ValueError):
        dec.decode_files(good + good, *args)
    before = dst.copy()
    with pytest.raises(ValueError):  # a region outside dst: nothing read or written
        dec.decode_files(good, np.zeros(1, I64), i64(2), dst, i64(dst.size - 2), i64(2),
                         np.full((1, 1), 12, I64), 2, 1, np.zeros(1, np.uint8))
    assert np.array_equal(dst, before)


# ---------------------------------------------------------------------------
# decode_regions: explicit cases
# ---------------------------------------------------------------------------

CHUNK = np.arange(12, dtype="<u2").tobytes()  # a (4, 3) chunk of uint16: 24 bytes
FRAME = compress(CHUNK)


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
    return new_decoder(cls, nbytes).decode_regions(*args.values())


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
    with pytest.raises(ValueError, match="decode_regions"):
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
    """A row with a negative size is NO_DATA: its (nonsense) ranges are never looked at."""
    args = base_args(src_offsets=i64(-5, 10**9), src_sizes=i64(-1, -7),
                     chunk_offsets=i64(10**6, 0), dst_offsets=i64(-3, 10**6))
    before = args["dst"].copy()
    assert call(cls, args).tolist() == [NO_DATA, NO_DATA]
    assert np.array_equal(args["dst"], before)


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
        status = new_decoder(cls, 24).decode_regions(
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
    t0 = time.perf_counter()
    try:
        status = new_decoder(cls, nbytes).decode_regions(
            np.frombuffer(src, np.uint8), offs, i64(*map(len, bombs)), np.zeros(n, I64),
            i64(1), dst, np.arange(n, dtype=I64) * nbytes, i64(1), np.full((n, 1), nbytes, I64),
            1, 1, np.full(n, direct, np.uint8))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert status.tolist() == [FAILED] * n
    assert peak < 16 << 20, peak
    assert rss1 - rss0 < 256 << 10, (rss0, rss1)  # never decoded the 8 GiB
    assert elapsed < 5, elapsed


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
    status = new_decoder(cls, 24).decode_regions(
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
    status = new_decoder(cls, 24).decode_regions(
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
        got.append(new_decoder(cls, 24).decode_regions(
            np.frombuffer(frame, np.uint8), i64(0), i64(len(frame)), i64(0), i64(1), dst,
            i64(0), i64(1), i64(24).reshape(1, 1), 1, 1, np.zeros(1, np.uint8)).tolist())
    assert got[0] == got[1]


# ---------------------------------------------------------------------------
# read_files_into(exact=False)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("impl", READERS)
def test_read_files_into_not_exact(impl, tmp_path):
    (tmp_path / "small").write_bytes(b"abc")
    (tmp_path / "equal").write_bytes(bytes(range(8)))
    (tmp_path / "large").write_bytes(bytes(range(50, 62)))
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    names = ["small", "equal", "large", "empty", "missing", "dir"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    dst = np.full(8 * len(names), 0xEE, dtype=np.uint8)
    offsets = np.arange(len(names), dtype=I64) * 8
    sizes, errors = impl(paths, dst, offsets, 8, False)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    assert errors.tolist() == [0, 0, 0, 0, errno.ENOENT, errno.EISDIR]
    assert dst[0:8].tobytes() == b"abc" + b"\xee" * 5  # the rest of the slot is untouched
    assert dst[8:16].tobytes() == bytes(range(8))
    assert (dst[16:] == 0xEE).all()  # larger file not read; nothing for the others
    # exact (the default): only the file of exactly nbytes bytes is read
    dst = np.full(8 * len(names), 0xEE, dtype=np.uint8)
    sizes, errors = impl(paths, dst, offsets, 8)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    assert (dst[:8] == 0xEE).all() and dst[8:16].tobytes() == bytes(range(8))
    assert (dst[16:] == 0xEE).all()
    # nbytes 0: only empty files fit
    sizes, _ = impl(paths, np.zeros(0, np.uint8), np.zeros(len(names), I64), 0, False)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    # validation comes first, as with exact=True
    with pytest.raises(ValueError, match="outside the destination"):
        impl(paths[:1], np.zeros(8, np.uint8), i64(1), 8, False)


# (the property test against the twin, both modes: test_kernels.py)


# ---------------------------------------------------------------------------
# Store.read_many_into(exact=False)
# ---------------------------------------------------------------------------

def _local(tmp_path):
    store = LocalStore(tmp_path / "store")
    store.set("d/inner", b"x")  # "d" is a directory: no value
    return store


@pytest.mark.parametrize("make", [_local, lambda p: MemoryStore()], ids=["local", "memory"])
def test_store_read_many_into_not_exact(make, tmp_path):
    store = make(tmp_path)
    values = {"small": b"abc", "equal": bytes(range(8)), "large": bytes(range(50, 62)),
              "empty": b""}
    for k, v in values.items():
        store.set(k, v)
    keys = ["small", "equal", "large", "empty", "missing", "d"]
    out = np.full(8 * len(keys) + 3, 0xEE, dtype=np.uint8)
    offsets = np.arange(len(keys), dtype=I64) * 8 + 3
    sizes = store.read_many_into(keys, out, offsets, 8, exact=False)
    assert np.asarray(sizes).tolist() == [3, 8, 12, 0, -1, -1]
    assert (out[:3] == 0xEE).all()
    assert out[3:11].tobytes() == b"abc" + b"\xee" * 5
    assert out[11:19].tobytes() == bytes(range(8))
    assert (out[19:] == 0xEE).all()
    # exact: sizes alike; the exactly-sized value is read in place
    out = np.full(8 * len(keys) + 3, 0xEE, dtype=np.uint8)
    sizes = store.read_many_into(keys, out, offsets, 8, exact=True)
    assert np.asarray(sizes).tolist() == [3, 8, 12, 0, -1, -1]
    assert out[11:19].tobytes() == bytes(range(8))


class GetOnlyStore(LocalStore):
    """Overrides ``get`` only: counts calls, and serves chunk keys from ``overlay``
    (the files on disk hold garbage), so any read bypassing ``get`` fails."""

    def __init__(self, root, overlay=None):
        super().__init__(root)
        self.overlay = overlay or {}
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def get(self, key, byte_range=None):
        with self._lock:
            self.calls.append(key)
        if key in self.overlay:
            value = self.overlay[key]
            return value if byte_range is None else LocalStore.get(self, key, byte_range)
        return super().get(key, byte_range)


class GetAndIntoStore(LocalStore):
    def get(self, key, byte_range=None):
        return super().get(key, byte_range)

    def get_into(self, key, out):
        return super().get_into(key, out)


class GetIntoOnlyStore(LocalStore):
    def get_into(self, key, out):
        return super().get_into(key, out)


class GetOnlyChild(GetOnlyStore):
    pass


def test_fast_get_into_property(tmp_path):
    assert LocalStore(tmp_path).fast_get_into is True
    assert GetOnlyStore(tmp_path).fast_get_into is False
    assert GetOnlyChild(tmp_path).fast_get_into is False
    assert GetAndIntoStore(tmp_path).fast_get_into is True
    assert GetIntoOnlyStore(tmp_path).fast_get_into is True
    assert MemoryStore().fast_get_into is False


def test_read_many_into_honours_an_overridden_get(tmp_path):
    store = GetOnlyStore(tmp_path, overlay={"k": b"from get"})
    LocalStore(tmp_path).set("k", b"on disk!")
    out = np.zeros(16, np.uint8)
    assert store.get_into("k", memoryview(out)[:8]) == 8
    assert out[:8].tobytes() == b"from get"  # get_into honours get
    out[:] = 0
    sizes = store.read_many_into(["k"], out, i64(0), 16, exact=False)
    assert out[:8].tobytes() == b"from get" and list(sizes) == [8]


# ---------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------

class RecordingDecoder(CompiledDecoder if CompiledDecoder is not None else object):
    """The compiled decoder, recording each batch call's direct flags and statuses."""

    log: list = []

    def decode_regions(self, *args):
        status = super().decode_regions(*args)
        RecordingDecoder.log.append((args[-1].tolist(), status.tolist()))
        return status

    def decode_files(self, *args):  # (read and decode in one call, when there is one)
        result = super().decode_files(*args)
        RecordingDecoder.log.append((args[-1].tolist(), result[0].tolist()))
        return result


def zstd_codecs(*, endian="little", transpose=None, level=3, checksum=False):
    return dict(
        filters=[{"name": "transpose", "configuration": {"order": list(transpose)}}]
        if transpose else None,
        serializer={"name": "bytes", "configuration": {"endian": endian}},
        compressors=[{"name": "zstd", "configuration": {"level": level, "checksum": checksum}}],
    )


#: name: (shape, chunks, dtype, fill value, codec options, fraction of chunk files deleted)
CONFIGS = {
    "c3d_i2": ((22, 10, 7), (4, 10, 7), "<i2", 7, {}, 0.2),
    "big_f8_T": ((13, 11), (5, 4), ">f8", 1.5, dict(endian="big", transpose=(1, 0)), 0.25),
    "u1_4d_T": ((9, 8, 6, 5), (2, 3, 4, 5), "u1", 3, dict(transpose=(2, 0, 3, 1)), 0.1),
    "i4_1d": ((50,), (7,), "<i4", -1, dict(checksum=True), 0.2),
    "rows_u8": ((6, 40), (1, 40), "<u8", 0, {}, 0.0),
    "big_i2_rows": ((12, 9), (3, 9), ">i2", -5, dict(endian="big"), 0.15),
    "c8_big": ((7, 6), (3, 4), ">c8", 0, dict(endian="big", transpose=(1, 0), level=1), 0.0),
}


def chunk_slices(coords, chunks, shape):
    return tuple(slice(c * k, min((c + 1) * k, n))
                 for c, k, n in zip(coords, chunks, shape, strict=True))


def build(root, name, shape, chunks, dtype, fill, opts, missing, seed=0):
    """Write an array, delete some chunk files; return its ground truth."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        data = rng.normal(size=shape).astype(dt)
    elif dt.kind == "c":
        data = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    else:
        native = dt.newbyteorder("=")
        info = np.iinfo(native)
        data = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=native)
        data = data.astype(dt)
    arr = zarrfast.create_array(str(root), name=name, shape=shape, chunks=chunks, dtype=dtype,
                                fill_value=fill, overwrite=True, **zstd_codecs(**opts))
    arr[...] = data
    truth = data.astype(dt.newbyteorder("="))
    grid = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    for coords in np.ndindex(*grid):
        if rng.random() < missing:
            path = root / name / "c" / "/".join(map(str, coords))
            if path.exists():
                path.unlink()
            truth[chunk_slices(coords, chunks, shape)] = fill
    return truth


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("arrays")
    truths = {name: build(root, name, *spec, seed=i) for i, (name, spec) in
              enumerate(CONFIGS.items())}
    return root, truths


def open_r(root, name, *, batch=True, **kw):
    arr = zarrfast.open_array(LocalStore(root), path=name, mode="r", **kw)
    if not batch:
        disable_batch(arr._chain)
    return arr


@st.composite
def selections(draw, shape):
    items = []
    for n in shape:
        if draw(st.integers(0, 4)) == 0:
            items.append(draw(st.integers(-n, n - 1)))
        else:
            items.append(draw(st.slices(n)))
    if draw(st.integers(0, 5)) == 0:
        items = items[:draw(st.integers(0, len(items)))]
    return tuple(items)


def single_chunk_read(sel, shape, chunks) -> bool:
    """Whether the pipeline reads ``sel`` with its one-chunk fast path (no batch)."""
    items = list(sel) + [slice(None)] * (len(shape) - len(sel))
    dims = [range(*s.indices(n)) if isinstance(s, slice) else range(s % n, s % n + 1)
            for s, n in zip(items, shape, strict=True)]
    if any(len(r) == 0 for r in dims):
        return True  # empty: nothing is read at all
    return all(r.step == 1 and r[0] // c == r[-1] // c
               for r, c in zip(dims, chunks, strict=True))


@needs_kernel
@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_read_matches_numpy_per_chunk_and_twin(arrays, data):
    root, truths = arrays
    name = data.draw(st.sampled_from(sorted(CONFIGS)))
    shape, chunks = CONFIGS[name][0], CONFIGS[name][1]
    truth = truths[name]
    sel = data.draw(selections(shape))
    want = truth[sel]
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        batched = open_r(root, name)
        assert batch_enabled(batched._chain)
        got = batched[sel]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and np.shape(got) == want.shape
    if not single_chunk_read(sel, shape, chunks):
        assert RecordingDecoder.log, "the batched decoder was not used"
    per_chunk = open_r(root, name, batch=False)
    np.testing.assert_array_equal(per_chunk[sel], want)
    with mock.patch.object(_kernels, KERNEL_ATTR, TwinDecoder):
        twin = open_r(root, name)
        np.testing.assert_array_equal(twin[sel], want)
    if len(shape) > 1:
        f = open_r(root, name, order="F")[sel]
        np.testing.assert_array_equal(f, want)


@needs_kernel
def test_whole_chunks_are_decoded_into_place(arrays):
    root, truths = arrays
    cases = [
        ("c3d_i2", np.s_[0:20], [1] * 5),
        ("c3d_i2", np.s_[:], [1] * 5 + [0]),  # the last chunk is cut by the array's edge
        ("c3d_i2", np.s_[4:16, :, 1:], [0] * 3),  # not whole
        ("c3d_i2", np.s_[0:20:2], [0] * 5),  # a step
        ("rows_u8", np.s_[1:5], [1] * 4),
        ("rows_u8", np.s_[:, :39], [0] * 6),
        ("i4_1d", np.s_[0:49], [1] * 7),
        ("i4_1d", np.s_[3:], [0] + [1] * 6 + [0]),
        ("big_i2_rows", np.s_[0:12], [0] * 4),  # a byte swap: never direct
        ("big_f8_T", np.s_[0:10, 0:8], [0] * 4),  # transposed: never direct
    ]
    for name, sel, flags in cases:
        RecordingDecoder.log.clear()
        with config.set(threads=1), mock.patch.object(_kernels, KERNEL_ATTR,
                                                      RecordingDecoder):
            got = open_r(root, name)[sel]
        np.testing.assert_array_equal(got, truths[name][sel])
        seen = [f for direct, _ in RecordingDecoder.log for f in direct]
        assert seen == flags, (name, sel, RecordingDecoder.log)
        # missing chunks reach the kernel as NO_DATA and come back as the fill value
        statuses = [s for _, status in RecordingDecoder.log for s in status]
        assert set(statuses) <= {DECODED, NO_DATA}


@needs_kernel
def test_read_into_out_and_scalars(arrays):
    root, truths = arrays
    arr = open_r(root, "c3d_i2")
    out = np.empty((20, 10, 7), dtype="<i2")
    res = arr.get_basic_selection(np.s_[0:20], out=out)
    assert res is out
    np.testing.assert_array_equal(out, truths["c3d_i2"][0:20])
    assert arr[21, 9, 6] == truths["c3d_i2"][21, 9, 6]


def test_batch_decode_can_be_disabled_by_environment(arrays):
    root, truths = arrays
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import zarrfast
        from zarrfast import kernels as _kernels
        from zarrfast.storage import LocalStore
        assert _kernels.ChunkDecoder is None and not _kernels.BATCH_CODECS
        arr = zarrfast.open_array(LocalStore(sys.argv[1]), path=sys.argv[2], mode="r")
        assert arr._chain.batch_codec is None
        np.save(sys.argv[3], arr[...])
    """)
    env = {k: v for k, v in os.environ.items() if k != "ZARRFAST_PURE_PYTHON"}
    env["ZARRFAST_BATCH_DECODE"] = "0"
    target = root / "env_out.npy"
    proc = subprocess.run([sys.executable, "-c", script, str(root), "big_f8_T", str(target)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(target), truths["big_f8_T"])


# -- errors and odd chunk files ------------------------------------------------------

def make_error_array(root, name="grp/arr"):
    shape, chunks = (12, 12), (4, 4)
    data = np.arange(144, dtype="<i4").reshape(shape) * 3 + 1
    arr = zarrfast.create_array(str(root), name=name, shape=shape, chunks=chunks, dtype="<i4",
                                fill_value=-9, **zstd_codecs())
    arr[...] = data
    return data


def bad_files(nbytes):
    chunk = bytes(nbytes)
    frame = compress(rng_bytes(1, nbytes))
    cap = nbytes + nbytes // 64 + 4096
    return {
        "garbage": b"this is not a zstd frame at all",
        "truncated": frame[:len(frame) // 2],
        "short": compress(chunk[:-4]),
        "long": compress(chunk + b"\x00" * 4),
        "short_nosize": compress(chunk[:-4], content_size=False),
        "long_nosize": compress_stream(chunk + b"\x00" * 4),
        "empty": b"",
        "junk_tail": compress(chunk) + b"\x01\x02\x03",
        "over_cap": compress(chunk) + rng_bytes(2, 2 * cap),  # larger than stored_cap
        "over_limit": compress(chunk) + rng_bytes(3, 2 * nbytes + 70_000),  # > 64 KiB more
        "bomb": rle_frame(1 << 32, 5),
        "bomb_declared": rle_frame(nbytes, 5, declare=1 << 40),
        "checksum_cut": compress(chunk, checksum=True)[:-2],
    }


@needs_kernel
@pytest.mark.parametrize("batch", [True, False], ids=["batched", "per-chunk"])
@pytest.mark.parametrize("threads", [1, 2])
def test_bad_chunk_files_raise_naming_the_key(tmp_path, batch, threads):
    data = make_error_array(tmp_path)
    key = "grp/arr/c/1/2"
    path = tmp_path / "grp" / "arr" / "c" / "1" / "2"
    for what, content in bad_files(64).items():
        path.write_bytes(content)
        arr = open_r(tmp_path, "grp/arr", batch=batch)
        with config.set(threads=threads):
            for sel in (np.s_[...], np.s_[2:10, 5:11], np.s_[4:8, 8:12], np.s_[5, 9],
                        np.s_[::3, ::-5]):
                with pytest.raises(ChunkDecodeError, match=key) as info:
                    arr[sel]
                assert "c/1/2" in str(info.value), what
            # the other chunks are unaffected
            for sel in (np.s_[0:4], np.s_[:, 0:8], np.s_[8:, ::2], np.s_[1:12:8, ::3]):
                np.testing.assert_array_equal(arr[sel], data[sel], err_msg=what)


@needs_kernel
def test_chunks_the_kernel_rejects_but_zstd_accepts(tmp_path):
    """Valid zstd streams the batch cannot take (a skippable frame first; a skippable
    frame padding the file beyond ``stored_cap``) go the per-chunk way and decode."""
    data = make_error_array(tmp_path, name="a")
    nbytes = 64
    raw = data[4:8, 8:12].tobytes()
    cap = open_r(tmp_path, "a")._chain.stored_cap
    path = tmp_path / "a" / "c" / "1" / "2"
    for content in (skippable(3) + compress(raw), skippable(nbytes) + compress(raw),
                    compress(raw) + skippable(2 * cap), compress(raw) + skippable(70_000)):
        path.write_bytes(content)
        for batch in (True, False):
            arr = open_r(tmp_path, "a", batch=batch)
            np.testing.assert_array_equal(arr[...], data)
            np.testing.assert_array_equal(arr[3:9, 7:], data[3:9, 7:])


@needs_kernel
def test_missing_and_directory_chunks_read_as_fill(tmp_path):
    data = make_error_array(tmp_path, name="a")
    want = data.copy()
    (tmp_path / "a" / "c" / "0" / "1").unlink()
    want[0:4, 4:8] = -9
    p = tmp_path / "a" / "c" / "2" / "2"
    p.unlink()
    p.mkdir()  # a directory where a chunk file would be: no value
    want[8:12, 8:12] = -9
    for batch in (True, False):
        arr = open_r(tmp_path, "a", batch=batch)
        np.testing.assert_array_equal(arr[...], want)
        np.testing.assert_array_equal(arr[1:11:3, ::-1], want[1:11:3, ::-1])


# -- stores that override get -------------------------------------------------------

@pytest.mark.parametrize("compressed", [True, False], ids=["zstd", "raw"])
def test_get_only_subclass_sees_every_chunk_read(tmp_path, compressed):
    shape, chunks = (10, 12), (4, 4)
    data = np.arange(120, dtype="<f4").reshape(shape)
    opts = zstd_codecs() if compressed else dict(compressors=None)
    arr = zarrfast.create_array(str(tmp_path), name="a", shape=shape, chunks=chunks,
                                dtype="<f4", fill_value=0, **opts)
    arr[...] = data
    src = LocalStore(tmp_path)
    keys = [k for k in src.list() if "/c/" in k]
    overlay = {k: src.get(k) for k in keys}
    for k in keys:  # what is on disk is no chunk: only `get` serves the real ones
        src.set(k, b"\xff" * 7)
    store = GetOnlyStore(tmp_path, overlay)
    assert not store.fast_get_into
    # (mode "r+": see test_read_only_open_keeps_a_store_subclass)
    ro = zarrfast.open_array(store, path="a", mode="r+")
    assert ro._store is store
    for sel in (np.s_[...], np.s_[0:8], np.s_[1:9, 2:11], np.s_[::2, ::-3], np.s_[5],
                np.s_[4:8, 4:8], np.s_[0:4]):
        store.calls.clear()
        np.testing.assert_array_equal(ro[sel], data[sel])
        grid = np.zeros((3, 3), dtype=bool)
        idx = np.arange(120).reshape(shape)[sel]
        for flat in np.ravel(idx):
            i, j = divmod(int(flat), 12)
            grid[i // 4, j // 4] = True
        chunk_calls = [k for k in store.calls if "/c/" in k]
        assert len(chunk_calls) == int(grid.sum()), (sel, store.calls)
        assert len(set(chunk_calls)) == len(chunk_calls)


@needs_kernel
def test_get_and_get_into_subclass_keeps_the_fast_path(tmp_path):
    data = make_error_array(tmp_path, name="a")
    store = GetAndIntoStore(tmp_path)
    assert store.fast_get_into
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        arr = zarrfast.open_array(store, path="a", mode="r+")
        assert arr._store is store
        np.testing.assert_array_equal(arr[...], data)
    assert RecordingDecoder.log  # batched


def test_read_only_open_keeps_a_store_subclass(tmp_path):
    data = make_error_array(tmp_path, name="a")
    store = GetOnlyStore(tmp_path)
    arr = zarrfast.open_array(store, path="a", mode="r")
    store.calls.clear()
    np.testing.assert_array_equal(arr[...], data)
    assert len([k for k in store.calls if "/c/" in k]) == 9


# -- threads --------------------------------------------------------------------------

@needs_kernel
def test_threads_give_the_same_results(tmp_path):
    shape, chunks = (256, 200), (16, 20)
    rng = np.random.default_rng(5)
    data = rng.normal(size=shape).astype(">f8")
    arr = zarrfast.create_array(str(tmp_path), name="t", shape=shape, chunks=chunks,
                                dtype=">f8", fill_value=0.5,
                                **zstd_codecs(endian="big", transpose=(1, 0)))
    arr[...] = data
    truth = data.astype("=f8")
    for coords in [(0, 3), (5, 5), (15, 9)]:
        (tmp_path / "t" / "c" / f"{coords[0]}" / f"{coords[1]}").unlink()
        truth[chunk_slices(coords, chunks, shape)] = 0.5
    arr2 = zarrfast.create_array(str(tmp_path), name="u", shape=shape, chunks=(16, 200),
                                 dtype="<i8", fill_value=0, **zstd_codecs())
    data2 = rng.integers(-(2**40), 2**40, size=shape)
    arr2[...] = data2
    sels = [np.s_[...], np.s_[3:250:2, 7:190], np.s_[::-3, 5], np.s_[16:240], np.s_[100:, ::7]]
    for name, want_all in (("t", truth), ("u", data2)):
        a = open_r(tmp_path, name)
        for sel in sels:
            with config.set(threads=1):
                one = a[sel]
            with config.set(threads=2):
                two = a[sel]
            with config.set(threads=4):
                four = a[sel]
            np.testing.assert_array_equal(one, want_all[sel])
            np.testing.assert_array_equal(two, one)
            np.testing.assert_array_equal(four, one)
    # one Array read from several Python threads at once (per-thread decoders)
    a = open_r(tmp_path, "t")
    errors = []

    def worker(k):
        try:
            for sel in sels[k % len(sels):] + sels[:k % len(sels)]:
                np.testing.assert_array_equal(a[sel], truth[sel])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with config.set(threads=2):
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors


# -- zarr-python ------------------------------------------------------------------------

@pytest.mark.interop
@needs_kernel
@pytest.mark.parametrize(("dtype", "endian", "transpose", "checksum"), [
    ("<i4", "little", None, False),
    (">f8", "big", (1, 0), True),
    ("<u2", "little", (1, 0), False),
])
def test_reads_zarr_python_zstd_arrays(tmp_path, dtype, endian, transpose, checksum):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs import BytesCodec, TransposeCodec, ZstdCodec

    shape, chunks = (23, 17), (5, 4)
    rng = np.random.default_rng(11)
    data = np.abs(rng.normal(size=shape) * 1000).astype(dtype)
    z = zarr.create_array(
        store=str(tmp_path), name="z", shape=shape, chunks=chunks, dtype=dtype,
        compressors=ZstdCodec(level=5, checksum=checksum),
        serializer=BytesCodec(endian=endian),
        filters=[TransposeCodec(order=transpose)] if transpose else (),
        fill_value=3,
    )
    z[0:20, 0:16] = data[0:20, 0:16]  # the rest: missing chunks or fill in edge chunks
    expected = z[...]
    arr = open_r(tmp_path, "z")
    assert batch_enabled(arr._chain)
    sels = [np.s_[...], np.s_[2:21:3, ::-2], np.s_[5:15, 4:12], np.s_[7], np.s_[:, 16],
            np.s_[::-1, 1:17:5]]
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        arr = open_r(tmp_path, "z")
        for sel in sels:
            np.testing.assert_array_equal(arr[sel], expected[sel])
    assert RecordingDecoder.log
    for sel in sels:  # (zarr-python takes no negative steps: its whole read is the truth)
        np.testing.assert_array_equal(open_r(tmp_path, "z", batch=False)[sel], expected[sel])
    np.testing.assert_array_equal(arr[5:15, 4:12], z[5:15, 4:12])


@needs_kernel
def test_pipeline_uses_decode_batch(arrays, monkeypatch):
    """``read_selection`` goes through ``RowReader.decode_batch`` for a zstd array on a
    plain LocalStore (every chunk once), and not for the per-chunk path."""
    root, truths = arrays
    seen = []
    orig = pipeline.RowReader.decode_batch

    def spy(self, rows, *args, **kwargs):
        seen.append(len(rows))
        return orig(self, rows, *args, **kwargs)

    monkeypatch.setattr(pipeline.RowReader, "decode_batch", spy)
    with config.set(threads=1):
        np.testing.assert_array_equal(open_r(root, "big_f8_T")[...], truths["big_f8_T"])
        assert sum(seen) == 3 * 3
        seen.clear()
        np.testing.assert_array_equal(open_r(root, "big_f8_T", batch=False)[...],
                                      truths["big_f8_T"])
        assert seen == []


# ---------------------------------------------------------------------------
# blosc (``ChunkDecoder("blosc", nbytes)``, when the decoder takes it)
# ---------------------------------------------------------------------------

HAS_BLOSC = CompiledDecoder is not None and "blosc" in _kernels.BATCH_CODECS
needs_blosc = pytest.mark.skipif(not HAS_BLOSC, reason="no batched blosc decoder")


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
            status = cls("blosc", nbytes).decode_regions(
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


@needs_blosc
def test_blosc_arrays_read_batched(tmp_path):
    shape, chunks = (21, 9), (4, 9)
    data = np.arange(np.prod(shape), dtype="<i4").reshape(shape) * 7 - 300
    blosc = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                "shuffle": "shuffle", "typesize": 4,
                                                "blocksize": 0}}
    arr = zarrfast.create_array(str(tmp_path), name="b", shape=shape, chunks=chunks,
                                dtype="<i4", fill_value=-1, compressors=[blosc])
    arr[...] = data
    (tmp_path / "b" / "c" / "2" / "0").unlink()
    want = data.copy()
    want[8:12] = -1
    (tmp_path / "b" / "c" / "3" / "0").write_bytes(b"not blosc")
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        b = open_r(tmp_path, "b")
        assert b._chain.batch_codec == "blosc"
        for sel in (np.s_[0:12], np.s_[16:], np.s_[11::-3, 2:], np.s_[1:11, 4]):
            np.testing.assert_array_equal(b[sel], want[sel])
            np.testing.assert_array_equal(open_r(tmp_path, "b", batch=False)[sel], want[sel])
        with pytest.raises(ChunkDecodeError, match="b/c/3/0"):
            b[10:14]
    assert RecordingDecoder.log


# ---------------------------------------------------------------------------
# an independent review's findings, as tests
# ---------------------------------------------------------------------------

class OverlayStore(LocalStore):
    """Serves chunk ``c/0`` from memory through both ``get`` and ``get_into`` (the disk
    holds an older value): every read path must go through them."""

    overlay: dict = {}

    def get(self, key, byte_range=None):
        if key in self.overlay and byte_range is None:
            return self.overlay[key]
        return super().get(key, byte_range)

    def get_into(self, key, out):
        if key in self.overlay:
            value = self.overlay[key]
            if len(value) == len(memoryview(out)):
                memoryview(out).cast("B")[:] = value
            return len(value)
        return super().get_into(key, out)


@pytest.mark.parametrize("codecs", [None, "zstd"])
def test_a_subclass_get_and_get_into_serve_every_read(tmp_path, codecs):
    """Batched reads (``file_paths``, ``read_many_into``) would read the files on disk,
    bypassing both overrides: a subclass overriding them keeps the batched reads off."""
    comp = None if codecs is None else {"name": "zstd", "configuration": {"level": 1}}
    a = zarrfast.create_array(str(tmp_path), shape=(40,), chunks=(10,), dtype="i4",
                              compressors=comp)
    a[...] = np.arange(40)
    newer = zarrfast.create_array({}, shape=(10,), chunks=(10,), dtype="i4", compressors=comp)
    newer[...] = np.arange(100, 110)
    store = OverlayStore(tmp_path)
    store.overlay = {"c/0": newer._store.get("c/0")}
    assert store.file_paths(["c/0"]) is None
    b = zarrfast.open_array(store, mode="r+")
    np.testing.assert_array_equal(b[0:10], np.arange(100, 110))
    np.testing.assert_array_equal(b[0:20], np.r_[np.arange(100, 110), np.arange(10, 20)])
    np.testing.assert_array_equal(b[...], np.r_[np.arange(100, 110), np.arange(10, 40)])


def test_a_codec_subclass_with_its_own_decode_is_not_batch_decoded(tmp_path):
    from zarrfast.codecs import BloscCodec, ZstdCodec
    from zarrfast.codecs.numcodecs_codec import NumcodecsCodec

    class Inverting(ZstdCodec):
        def decode(self, data, out=None, limit=None):
            return bytes(255 - b for b in bytes(super().decode(data, limit=limit)))

    class EncodesOnly(BloscCodec):
        def encode(self, data):
            return super().encode(data)

    class OwnNumcodecs(NumcodecsCodec):
        def decode(self, data, out=None, limit=None):
            return super().decode(data, out, limit)

    assert Inverting.batch_codec is None and OwnNumcodecs.batch_codec is None
    assert ZstdCodec.batch_codec == "zstd" and EncodesOnly.batch_codec == "blosc"
    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="u1",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(20, dtype="u1")
    chain = a._chain
    chain.bb[0] = Inverting(level=1)  # as a registered subclass would be parsed
    chain.batch_codec = None if Inverting.batch_codec is None else "zstd"
    np.testing.assert_array_equal(a[0:20], 255 - np.arange(20, dtype="u1"))


class StatefulStore(LocalStore):
    """A subclass with a lock and its own (tuple) pickled state."""

    def __init__(self, root, **kw):
        super().__init__(root, **kw)
        self.lock = threading.Lock()

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["lock"]
        return (state, "v1")

    def __setstate__(self, state):
        d, version = state
        assert version == "v1"
        self.__dict__.update(d)
        self.lock = threading.Lock()


def test_subclass_state_survives_pickle_and_read_only_copies(tmp_path):
    import pickle

    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="i4")
    a[...] = np.arange(20)
    store = StatefulStore(tmp_path)
    back = pickle.loads(pickle.dumps(store))
    assert type(back) is StatefulStore and back.root == store.root
    ro = store.with_read_only()
    assert type(ro) is StatefulStore and ro.read_only and not store.read_only
    np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[...], np.arange(20))


def test_fast_get_into_can_be_turned_off(tmp_path):
    store = LocalStore(tmp_path)
    store.fast_get_into = False
    assert not store.fast_get_into and store.file_paths(["a"]) is None
    a = zarrfast.create_array(store, shape=(40,), chunks=(10,), dtype="i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(40)
    np.testing.assert_array_equal(a[5:35], np.arange(5, 35))


def test_remote_sharded_reads_decode_on_the_compute_pool():
    """Fetches of remote shards run on the I/O pool; their inner chunks are decoded by
    the compute pool (sized by ``threads``), not during the fetch."""
    pytest.importorskip("fsspec")
    import uuid

    from zarrfast.storage import FsspecStore

    store = FsspecStore.from_url(f"memory://zarrfast-decode-pool-{uuid.uuid4().hex}")
    a = zarrfast.create_array(store, shape=(512, 512), chunks=(32, 32), shards=(128, 128),
                              dtype="u2", compressors={"name": "zstd",
                                                       "configuration": {"level": 1}},
                              overwrite=True)
    data = np.arange(512 * 512, dtype="u2").reshape(512, 512)
    a[...] = data
    seen = set()
    original = pipeline.RowReader.decode_stored

    def spy(self, *args, **kwargs):
        seen.add(threading.current_thread().name)
        return original(self, *args, **kwargs)

    with mock.patch.object(pipeline.RowReader, "decode_stored", spy), \
            config.set(threads=1):
        np.testing.assert_array_equal(a[...], data)
    assert not any(name.startswith("zarrfast-io") for name in seen), seen


@needs_kernel
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_a_file_shorter_than_its_stat_size_raises_chunk_decode_error(tmp_path):
    """A chunk file that yields fewer bytes than fstat reports (here a /proc file, as a
    non-atomic writer truncating it mid-read would) is a ChunkDecodeError naming the key,
    on the batched path as on the per-chunk one -- not an OSError."""
    if os.stat("/proc/self/status").st_size == 0:  # procfs reports 0: try sysfs
        candidates = [p for p in ("/sys/kernel/mm/transparent_hugepage/enabled",
                                  "/sys/kernel/mm/transparent_hugepage/defrag")
                      if os.path.exists(p) and os.stat(p).st_size > 64]
        if not candidates:
            pytest.skip("no file here reports more bytes than it holds")
        source = candidates[0]
    else:  # pragma: no cover
        source = "/proc/self/status"
    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(20)
    chunk = tmp_path / "c" / "0"
    chunk.unlink()
    chunk.symlink_to(source)
    with pytest.raises(ChunkDecodeError, match="c/0"):
        a[0:10]
    with pytest.raises(ChunkDecodeError, match="c/0"):
        a[0:20]
    np.testing.assert_array_equal(a[10:20], np.arange(10, 20))


def test_finding_a_system_zstd_is_only_tried_when_needed(monkeypatch):
    """``ctypes.util.find_library`` runs programs (ldconfig, gcc): binding to numcodecs'
    own zstd never calls it."""
    import ctypes.util

    def boom(name):
        raise AssertionError(f"find_library({name!r}) was called")

    monkeypatch.setattr(ctypes.util, "find_library", boom)
    libraries = _kernels._libraries("numcodecs.zstd", "zstd")
    first = next(libraries)
    assert first.endswith((".so", ".pyd", ".dylib")) or "zstd" in first
    with pytest.raises(AssertionError, match="find_library"):
        next(libraries)
