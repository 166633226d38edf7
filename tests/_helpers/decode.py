"""What the batched-decoding tests share: the decoders (compiled and twin) and the readers
to parametrize over, zstd frames made by hand or by python-zstandard, and the NumPy
placement the kernels are checked against."""

from __future__ import annotations

import contextlib
import struct
import threading

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, settings

from zarrfast import kernels as _kernels
from zarrfast.kernels import reference as ref

from _helpers.kernels import I64, i64

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


CHUNK = np.arange(12, dtype="<u2").tobytes()  # a (4, 3) chunk of uint16: 24 bytes
FRAME = compress(CHUNK)


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
# blosc (``ChunkDecoder("blosc", nbytes)``, when the decoder takes it)
# ---------------------------------------------------------------------------

HAS_BLOSC = CompiledDecoder is not None and "blosc" in _kernels.BATCH_CODECS
needs_blosc = pytest.mark.skipif(not HAS_BLOSC, reason="no batched blosc decoder")


def blosc_header(frame: bytes) -> tuple[int, int, int, bool]:
    """(typesize, blocksize, number of blocks, stored uncompressed) of a blosc frame."""
    nbytes = int.from_bytes(frame[4:8], "little")
    bs = int.from_bytes(frame[8:12], "little")
    return frame[3], bs, -(-nbytes // bs), bool(frame[2] & 0x02)


def damage_blosc_block(frame: bytes, j: int) -> bytes:
    """``frame`` with block ``j``'s first stream claiming -1 compressed bytes: c-blosc
    refuses that block, whether it decodes it alone or with the others."""
    start = int.from_bytes(frame[16 + 4 * j:20 + 4 * j], "little")
    return frame[:start] + b"\xff\xff\xff\xff" + frame[start + 4:]


# ---------------------------------------------------------------------------
# the arguments of a call and what a failed row may write, for the cases the
# property tests draw (``rows`` of dicts with ``chunk_offset``, ``dst_offset``,
# ``counts``, ``direct``; the case's strides, itemsize, swap unit, ``nbytes``)
# ---------------------------------------------------------------------------


def layout_args(case, dst) -> list:
    """Where each row's chunk goes: the arguments every decode call ends with."""
    rows = case["rows"]
    return [
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


def placement_for(dec, *table):
    """A ``Placement`` of ``dec``'s kind (compiled or twin) for its chunks, from the
    table every decode call used to end with (``chunk_offsets``, ``chunk_strides``,
    ``dst``, ``dst_offsets``, ``dst_strides``, ``shapes``, ``itemsize``, ``swap_unit``,
    ``direct``)."""
    cls = ref.Placement if isinstance(dec, ref.ChunkDecoder) else _kernels.Placement
    return cls(dec.nbytes, *table)


def call_regions(dec, src, src_offsets, src_sizes, *table, share=0):
    """``dec.decode_regions`` of the rows ``table`` places (:func:`placement_for`)."""
    return dec.decode_regions(src, src_offsets, src_sizes, placement_for(dec, *table),
                              share=share)


def call_ranges(dec, fds, offsets, sizes, *table, share=0):
    """``dec.decode_ranges`` of the rows ``table`` places."""
    return dec.decode_ranges(fds, offsets, sizes, placement_for(dec, *table), share=share)


def call_files(dec, paths, *table, root=None, share=0):
    """``dec.decode_files`` of the rows ``table`` places."""
    return dec.decode_files(paths, placement_for(dec, *table), root=root, share=share)


def call_box_files(dec, root, prefix, separator, start, count, chunk_shape, chunk_strides,
                   dst, dst_strides, itemsize, swap_unit, direct=True, share=0):
    """``dec.decode_box_files`` of the box's placement (``Placement.box``)."""
    cls = ref.Placement if isinstance(dec, ref.ChunkDecoder) else _kernels.Placement
    placement = cls.box(dec.nbytes, start, count, chunk_shape, chunk_strides, dst,
                        dst_strides, itemsize, swap_unit, direct=direct)
    return dec.decode_box_files(root, prefix, separator, placement, share)


def call_box_shards(dec, fds, indexes, start, count, chunk_shape, cps, chunk_strides, dst,
                    dst_strides, itemsize, swap_unit, fill, limit, direct=True, share=0):
    """``dec.decode_box_shards`` of the box's placement (``Placement.box`` with ``cps``)."""
    cls = ref.Placement if isinstance(dec, ref.ChunkDecoder) else _kernels.Placement
    placement = cls.box(dec.nbytes, start, count, chunk_shape, chunk_strides, dst,
                        dst_strides, itemsize, swap_unit, cps=cps, direct=direct)
    return dec.decode_box_shards(fds, indexes, placement, fill, limit, share)


def failed_direct_mask(case, statuses) -> np.ndarray:
    """Bytes a FAILED direct row may have scribbled on (its own block)."""
    mask = np.zeros(case["dst_len"], dtype=bool)
    for row, s in zip(case["rows"], statuses, strict=True):
        if row["direct"] and s == FAILED:
            mask[row["dst_offset"]:row["dst_offset"] + case["nbytes"]] = True
    return mask


def blosc_isas(decode) -> list[str]:
    """The instruction sets this CPU runs the blosc shuffle kernels of ``decode`` (the
    compiled ``zarrfast._ext._decode``) with; ``set_blosc_frames`` is left as found."""
    before = decode.set_blosc_frames("auto")
    found = ["scalar"]
    try:
        decode.set_blosc_frames("avx2")
    except ValueError:
        pass
    else:
        found.append("avx2")
    decode.set_blosc_frames(before)
    return found


@contextlib.contextmanager
def blosc_frames_with(decode, isa: str):
    """Blosc frames decoded and made with ``isa`` ("scalar", "avx2", "c-blosc") inside,
    the choice before restored after."""
    previous = decode.set_blosc_frames(isa)
    try:
        yield
    finally:
        decode.set_blosc_frames(previous)


def run_in_threads(fn, n: int) -> None:
    """``fn()`` in ``n`` threads at once; raises the first error any of them raised."""
    errors = []

    def run():
        try:
            fn()
        except BaseException as e:  # (reported in the calling thread)
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
