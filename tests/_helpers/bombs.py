"""Decompression bombs: tiny chunks that inflate to gigabytes (the bomb tests, and the
subprocesses they run, import these)."""

from __future__ import annotations

import struct
import zlib


def zstd_rle_frame(total: int, *, content_size: bool) -> bytes:
    """A valid zstd frame of ``total`` zero bytes made of RLE blocks: ~4 bytes per 128 KiB
    (``zstd.compress(bytes(2**31))`` is about this), with or without the content size."""
    block = 1 << 17
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    if content_size:
        out.append(0b11100000)  # 8-byte frame content size, single segment
        out += struct.pack("<Q", total)
    else:
        out += bytes([0, 0x58])  # no content size; 2 MiB window
    n = total
    while n > 0:
        size = min(block, n)
        n -= size
        out += ((1 if n == 0 else 0) | (1 << 1) | (size << 3)).to_bytes(3, "little") + b"\0"
    return bytes(out)


def deflate_bomb(total_mib: int, *, gzip: bool) -> bytes:
    """A zlib or gzip stream of ``total_mib`` MiB of zeros (~1 KiB per MiB), built from one
    compressed MiB repeated (full flushes make the pieces independent)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    body = piece * total_mib + c.flush(zlib.Z_FINISH)
    if gzip:
        return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body
                + struct.pack("<II", 0, (total_mib << 20) & 0xFFFFFFFF))
    return b"\x78\xda" + body + struct.pack(">I", 1)
