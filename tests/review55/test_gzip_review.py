"""Review of h55/gzip (f80cccd): gzip and zlib chunks decoded by the batched decoder
(libdeflate, else zlib's inflate), a chunk it cannot take left to the codec.

Guards, passing on the branch and on 7f98544 (where every gzip/zlib chunk was the
codec's): whatever the stored bytes of a chunk, a read gives numcodecs' verdict --
numcodecs' bytes (zarr-python's decode) where it decodes them to the chunk's size, else
an error naming the chunk's key -- at one and two threads, read whole, as a box, as a
gather, and as inner chunks of a shard.  Streams beyond the branch's own tests: a gzip
member with FCOMMENT, with every optional field at once, an empty member before or after
the data, a member split into several deflate blocks (stored, fixed, dynamic), ISIZE off
by 2**32, a zlib stream with a preset dictionary (FDICT), one that declares a 256-byte
window, one of a level-0 (stored) deflate, and a chunk whose last byte is cut.

Finding (CI): ``.ci/run`` checks that the installed package's batched decoder binds
exactly ``{"zstd", "blosc"}``; on the branch it binds gzip and zlib too (libdeflate, else
the zlib of Python's own ``zlib`` module: on every machine), so CI stops there.
``test_ci_expects_the_codecs_the_batched_decoder_binds`` fails on the branch; the fix is
/work/data/review/gzip-fix.diff.

Three differences from numcodecs are zarrfast's, before the branch and on it (zarrfast
refuses, naming the key; numcodecs reads): reserved gzip header flag bits and a wrong
gzip header CRC (Python's ``gzip`` ignores both, zlib refuses them), and a second zlib
stream after the first (``zlib.decompress`` drops it; zero padding both read).  They
are pinned here, so that a change is seen.
"""

from __future__ import annotations

import ast
import os
import re
import struct
import zlib
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.codecs import BytesCodec, GzipCodec, ShardingCodec
from zarrfast.errors import ZarrfastError
from zarrfast.kernels.reference import crc32c

pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr")

N = 4096  # bytes of a chunk (uint8)
ZLIB = {"name": "numcodecs.zlib", "configuration": {"level": 1}}


def _data(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, 1500, dtype=np.uint8).tobytes()
    return (base * 3)[:N]  # (matches 1500 bytes back: a 256-byte window is too small)


def _deflate(data: bytes, level: int = 6) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _member(data: bytes, *, flags: int = 0, extra: bytes = b"", name: bytes = b"",
            comment: bytes = b"", body: bytes | None = None, isize: int | None = None,
            hcrc: bool = False) -> bytes:
    head = bytes([0x1F, 0x8B, 8, flags | (0x02 if hcrc else 0)]) + struct.pack("<I", 0) + b"\0\xff"
    if flags & 0x04:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 0x08:
        head += name + b"\0"
    if flags & 0x10:
        head += comment + b"\0"
    if hcrc:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    body = _deflate(data) if body is None else body
    return head + body + struct.pack("<II", zlib.crc32(data),
                                     (len(data) if isize is None else isize) & 0xFFFFFFFF)


def _blocks(data: bytes) -> bytes:
    """One deflate stream of several blocks: stored, then fixed, then dynamic Huffman."""
    parts = []  # (blocks of one compressor each, flushed to a byte boundary, not final)
    for (lo, hi), (level, strategy) in zip(((0, 1000), (1000, 2000), (2000, len(data))),
                                           ((0, zlib.Z_DEFAULT_STRATEGY), (1, zlib.Z_FIXED),
                                            (9, zlib.Z_DEFAULT_STRATEGY)), strict=True):
        c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
        parts.append(c.compress(data[lo:hi])
                     + c.flush(zlib.Z_FINISH if hi == len(data) else zlib.Z_FULL_FLUSH))
    return b"".join(parts)


def _zlib_header(stream: bytes, cinfo: int | None = None, fdict: bool = False) -> bytes:
    s = bytearray(stream)
    if cinfo is not None:
        s[0] = (s[0] & 0x0F) | (cinfo << 4)
    flg = s[1] & 0xC0 | (0x20 if fdict else 0)
    flg |= (31 - (s[0] * 256 + flg) % 31) % 31
    s[1] = flg
    return bytes(s)


def _flip(b: bytes, at: int) -> bytes:
    return b[:at] + bytes([b[at] ^ 0xFF]) + b[at + 1:]


def _gzip_streams(d: bytes) -> dict[str, bytes]:
    one = bytes(numcodecs.GZip(level=1).encode(d))
    return {
        "numcodecs": one,
        "fcomment": _member(d, flags=0x10, comment=b"a comment"),
        "every_field": _member(d, flags=0x1C, extra=b"XY\x01\x00z", name=b"n",
                               comment=b"c", hcrc=True),
        "bad_hcrc": _flip(_member(d, flags=0x08, name=b"n", hcrc=True), 12),
        "empty_member_first": _member(b"") + one,
        "empty_member_last": one + _member(b""),
        "three_members": (bytes(numcodecs.GZip(1).encode(d[:100]))
                          + bytes(numcodecs.GZip(9).encode(d[100:3000]))
                          + bytes(numcodecs.GZip(1).encode(d[3000:]))),
        "blocks": _member(d, body=_blocks(d)),
        "isize_plus_2_32": _member(d, isize=len(d) + 2**32),
        "stored_level0": bytes(numcodecs.GZip(level=0).encode(d)),
        "cut_last_byte": one[:-1],
        "zero_padding": one + b"\0" * 5,
        "padding_then_member": one + b"\0\0" + one,
        "reserved_flag": one[:3] + bytes([one[3] | 0x20]) + one[4:],
    }


def _zlib_streams(d: bytes) -> dict[str, bytes]:
    one = zlib.compress(d, 6)
    c = zlib.compressobj(6, zlib.DEFLATED, 15, zdict=b"dictionary")
    return {
        "numcodecs": bytes(numcodecs.Zlib(level=1).encode(d)),
        "level0": zlib.compress(d, 0),
        "blocks": _zlib_header(b"\x78\x9c" + _blocks(d) + struct.pack(">I", zlib.adler32(d))),
        "window_256": _zlib_header(one, cinfo=0),
        "window_32k_declared": _zlib_header(one, cinfo=7),
        "fdict": c.compress(d) + c.flush(),
        "cut_last_byte": one[:-1],
        "two_streams": one + one,
        "trailing_zeros": one + b"\0\0",
    }


#: zarrfast refuses what numcodecs reads, on purpose (see the module docstring)
STRICTER = {("gzip", "reserved_flag"), ("gzip", "bad_hcrc"), ("zlib", "two_streams")}


def _verdict(codec: str, blob: bytes) -> bytes | None:
    """numcodecs' decoded bytes, ``None`` when it refuses (or decodes another size)."""
    try:
        got = bytes((numcodecs.GZip if codec == "gzip" else numcodecs.Zlib)().decode(blob))
    except Exception:  # noqa: BLE001 - its errors differ by kind
        return None
    return got if len(got) == N else None


def _cases():
    d = _data(1)
    for codec, streams in (("gzip", _gzip_streams(d)), ("zlib", _zlib_streams(d))):
        for name, blob in streams.items():
            yield pytest.param(codec, name, blob, id=f"{codec}-{name}")


def _reads(k: int) -> list:
    """Reads that touch chunk ``k``: the whole array, a box, a gather."""
    lo = k * N
    return [slice(None), slice(lo + 7, lo + 3000), np.array([lo + 5, lo + 4000, lo + 1, 9])]


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize(("codec", "name", "blob"), list(_cases()))
def test_every_stream_reads_as_numcodecs_decodes_it_or_is_named(tmp_path, codec, name, blob,
                                                                sharded):
    d = _data(1)
    want = _verdict(codec, blob)
    if (codec, name) in STRICTER:
        assert want == d  # (numcodecs reads it...)
        want = None  # (... zarrfast names it)
    comp = GzipCodec(level=1) if codec == "gzip" else ZLIB
    path = str(tmp_path / "a.zarr")
    if sharded:  # (one shard of 4 inner chunks; the 3rd replaced)
        a = zarrfast.create_array(path, shape=(4 * N,), dtype="u1", chunks=(4 * N,),
                                  fill_value=0, compressors=None,
                                  serializer=ShardingCodec(chunk_shape=(N,),
                                                           codecs=[BytesCodec(), comp]))
    else:
        a = zarrfast.create_array(path, shape=(4 * N,), dtype="u1", chunks=(N,),
                                  fill_value=0, compressors=[comp])
    rest = np.frombuffer(_data(2) * 4, np.uint8)[:4 * N].copy()
    a[...] = rest
    values = rest.copy()
    if want is not None:
        values[2 * N:3 * N] = np.frombuffer(want, np.uint8)
    if sharded:  # (the inner chunk's bytes replaced, the index rewritten to match)
        blobs = [bytes((numcodecs.GZip(1) if codec == "gzip" else numcodecs.Zlib(1)).encode(
            rest[k * N:(k + 1) * N].tobytes())) for k in range(4)]
        blobs[2] = blob
        offsets = np.cumsum([0] + [len(b) for b in blobs])
        index = np.array([[offsets[k], len(blobs[k])] for k in range(4)], "<u8").tobytes()
        shard = b"".join(blobs) + index + crc32c(index).to_bytes(4, "little")
        key = "c/0"
    else:
        shard, key = blob, "c/2"
    with open(os.path.join(path, *key.split("/")), "wb") as f:
        f.write(shard)
    for threads in (1, 2):
        with config.set(threads=threads):
            for sel in _reads(2):
                if want is None:
                    with pytest.raises(ZarrfastError, match=key):
                        a[sel]
                else:
                    np.testing.assert_array_equal(a[sel], values[sel],
                                                  err_msg=f"{sel} at {threads} threads")
            # (the other chunks are unharmed)
            np.testing.assert_array_equal(a[:2 * N], values[:2 * N])


CI = Path(__file__).resolve().parents[2] / ".ci" / "run"
_OVERRIDES = ("ZARRFAST_BATCH_DECODE", "ZARRFAST_INFLATE", "ZARRFAST_PURE_PYTHON")


@pytest.mark.skipif(not CI.exists(), reason="not a source tree")
@pytest.mark.skipif(_kernels.ChunkDecoder is None or any(os.environ.get(v) for v in _OVERRIDES),
                    reason="the batched decoder is not built, or set by the environment")
def test_ci_expects_the_codecs_the_batched_decoder_binds():
    """``.ci/run``'s check of the installed package (``assert k.BATCH_CODECS == {...}``)
    holds here: the codecs it expects are those the batched decoder binds on a machine
    with numcodecs (what CI installs)."""
    found = re.search(r"assert k\.BATCH_CODECS == (\{[^}]*\})", CI.read_text())
    assert found, "no check of BATCH_CODECS in .ci/run"
    assert set(_kernels.BATCH_CODECS) == ast.literal_eval(found.group(1))
