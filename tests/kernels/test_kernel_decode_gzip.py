"""``ChunkDecoder("gzip" | "zlib", nbytes)``: gzip members and zlib streams decoded by
libdeflate, or by zlib's inflate where libdeflate is missing (``set_inflate``), placed
by ``decode_regions``, ``decode_files`` and ``decode_ranges`` -- against the twin
(Python's ``zlib``), NumPy and numcodecs' ``GZip``/``Zlib``.

A chunk is ``DECODED`` only when it is one member / stream that ends with the stored
bytes, its checks right, of exactly the chunk's size; anything else -- several members,
zero padding, trailing bytes, a wrong size, corrupt data, a bad CRC-32, ISIZE or
Adler-32, a truncated stream, a gzip header CRC -- is ``FAILED`` by every decoder, and
the pipeline decodes it with the codec (``tests/engine/test_gzip_reads.py``)."""

from __future__ import annotations

import contextlib
import gzip as _gzip
import math
import os
import struct
import zlib

import numcodecs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrfast import kernels as _kernels

from _helpers.decode import (
    DECODED,
    FAILED,
    GUARD,
    ITEM_SWAPS,
    NO_DATA,
    PROPS,
    TwinDecoder,
    c_strides,
    call_files,
    call_ranges,
    call_regions,
    failed_direct_mask,
    layout_args,
    numpy_place,
    run_in_threads,
)
from _helpers.kernels import i64, rng_bytes

try:
    from zarrfast._ext import _decode
except ImportError:  # pragma: no cover - not built
    _decode = None

#: the compiled decoder when it decodes gzip and zlib here
Compiled = (_kernels.ChunkDecoder if _kernels.ChunkDecoder is not None
            and {"gzip", "zlib"} <= _kernels.BATCH_CODECS else None)


def _inflaters() -> list[str]:
    """The libraries the compiled decoder can inflate with here."""
    if Compiled is None:
        return []
    found = []
    before = _decode.inflate_with()
    for name in ("libdeflate", "zlib"):
        try:
            _decode.set_inflate(name)
        except ValueError:
            continue
        found.append(name)
    _decode.set_inflate(before)
    return found


INFLATERS = _inflaters()
#: every decoder: ("twin", None) and ("compiled", library) for each library bound
DECODERS = [("twin", None)] + [("compiled", name) for name in INFLATERS]
needs_compiled = pytest.mark.skipif(Compiled is None, reason="no compiled gzip decoder")


@contextlib.contextmanager
def inflating_with(name: str | None):
    """The compiled decoder inflates with ``name`` inside (None: left as it is)."""
    if name is None:
        yield
        return
    before = _decode.set_inflate(name)
    try:
        yield
    finally:
        _decode.set_inflate(before)


def decoder(which: str, codec: str, nbytes: int):
    return (TwinDecoder if which == "twin" else Compiled)(codec, nbytes)


# ---------------------------------------------------------------------------
# stored chunks: numcodecs' bytes, and every way they can be wrong
# ---------------------------------------------------------------------------

def encoder(codec: str, level: int):
    return (numcodecs.GZip if codec == "gzip" else numcodecs.Zlib)(level=level)


def gzip_member(data: bytes, level: int, *, name: bytes | None = None, hcrc: bool = False,
                extra: bytes | None = None) -> bytes:
    """One gzip member with the optional header fields (FEXTRA, FNAME, FHCRC)."""
    flags = (0x04 if extra is not None else 0) | (0x08 if name is not None else 0) | (
        0x02 if hcrc else 0)
    head = bytes([0x1F, 0x8B, 8, flags]) + struct.pack("<I", 0) + bytes([0, 255])
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    if name is not None:
        head += name + b"\0"
    if hcrc:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = c.compress(data) + c.flush()
    return head + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


#: what each kind of stored chunk is, per codec; the kernel decodes only VALID_ONE ones
KINDS = {
    "gzip": ["ok", "fname", "fextra", "multi", "padded", "trailing", "short", "long",
             "corrupt", "checksum", "isize", "truncated", "empty", "hcrc", "zlib_stream"],
    "zlib": ["ok", "multi", "padded", "trailing", "short", "long", "corrupt", "checksum",
             "truncated", "empty", "gzip_member", "raw_deflate"],
}
VALID_ONE = {"ok", "fname", "fextra"}


def stored(kind: str, data: bytes, codec: str, level: int) -> bytes:
    enc = encoder(codec, level)
    one = bytes(enc.encode(data))
    half = len(data) // 2
    b = bytearray(one)
    head, tail = (10, 8) if codec == "gzip" else (2, 4)
    if kind == "ok":
        return one
    if kind == "fname":
        return gzip_member(data, level, name=b"chunk.bin")
    if kind == "fextra":
        return gzip_member(data, level, extra=b"AB\x02\x00xy")
    if kind == "hcrc":  # (valid: zlib checks the header CRC, libdeflate skips it)
        return gzip_member(data, level, hcrc=True)
    if kind == "multi":
        return bytes(enc.encode(data[:half])) + bytes(enc.encode(data[half:]))
    if kind == "padded":
        return one + b"\0" * 3
    if kind == "trailing":
        return one + b"\x01junk"
    if kind == "short":
        return bytes(enc.encode(data[:-1]))
    if kind == "long":
        return bytes(enc.encode(data + b"\x00"))
    if kind == "corrupt":  # a whole byte of the compressed stream changed
        b[head + (len(b) - head - tail) // 2] ^= 0xFF
        return bytes(b)
    if kind == "checksum":  # the CRC-32 (gzip) or the Adler-32 (zlib)
        b[-tail] ^= 0x01
        return bytes(b)
    if kind == "isize":
        b[-1] ^= 0x80
        return bytes(b)
    if kind == "truncated":
        return one[:-3]
    if kind == "empty":
        return b""
    if kind == "zlib_stream":
        return zlib.compress(data, level)
    if kind == "gzip_member":
        return _gzip.compress(data, level, mtime=0)
    if kind == "raw_deflate":
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    raise AssertionError(kind)


def chunk_data(seed: int, n: int, kind: int) -> bytes:
    """``n`` bytes: random (0), of a few values (1: compressible), or runs (2)."""
    rng = np.random.default_rng(seed)
    if kind == 0:
        return rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    if kind == 1:
        return rng.integers(0, 4, n, dtype=np.uint8).tobytes()
    return np.repeat(rng.integers(0, 256, n // 7 + 1, dtype=np.uint8), 7)[:n].tobytes()


# ---------------------------------------------------------------------------
# one chunk at a time: the verdicts, against numcodecs
# ---------------------------------------------------------------------------

def decode_one(which: str, library: str | None, codec: str, frame: bytes, nbytes: int):
    """(status, the chunk's bytes as placed) of one chunk placed whole, not direct."""
    dst = np.zeros(max(nbytes, 1), np.uint8)
    one = i64(0)
    dec = decoder(which, codec, nbytes)
    table = [one, i64(1), dst, one, i64(1), np.array([[nbytes]], np.int64), 1, 1,
             np.zeros(1, np.uint8)]
    with inflating_with(library):
        status = call_regions(dec, np.frombuffer(frame + b"\0", np.uint8), one,
                              i64(len(frame)), *table)
    return int(status[0]), dst[:nbytes].tobytes()


def numcodecs_verdict(codec: str, frame: bytes, nbytes: int):
    """What numcodecs' ``GZip``/``Zlib`` (zarr-python's decode) makes of ``frame``: the
    bytes, or the exception's type."""
    try:
        got = bytes(encoder(codec, 1).decode(frame))
    except Exception as e:  # noqa: BLE001 - its errors differ by kind
        return type(e)
    return got


@pytest.mark.parametrize("which,library", DECODERS)
@pytest.mark.parametrize("codec", ["gzip", "zlib"])
@pytest.mark.parametrize("level", [0, 1, 5, 9])
def test_each_kind_of_chunk(which, library, codec, level):
    data = chunk_data(level, 3000, level % 3)
    for kind in KINDS[codec]:
        frame = stored(kind, data, codec, level)
        status, got = decode_one(which, library, codec, frame, len(data))
        verdict = numcodecs_verdict(codec, frame, len(data))
        if kind in VALID_ONE:
            assert status == DECODED, (kind, which, library)
            assert got == data
            assert verdict == data  # (numcodecs decodes it to the same bytes)
        else:
            # (numcodecs decodes some of these too -- several members, padding; the
            # pipeline then gives what the codec gives: tests/engine/test_gzip_reads.py)
            assert status == FAILED, (kind, which, library)


def test_numcodecs_agrees_on_what_is_one_valid_member():
    """(what the kinds above are, to numcodecs: the failures the kernel leaves to the
    codec include chunks numcodecs decodes to the chunk's bytes)"""
    data = chunk_data(3, 2000, 1)
    same = {codec: sorted(k for k in KINDS[codec]
                          if numcodecs_verdict(codec, stored(k, data, codec, 5), len(data))
                          == data) for codec in KINDS}
    assert same["gzip"] == sorted(["ok", "fname", "fextra", "multi", "padded", "hcrc"])
    assert same["zlib"] == sorted(["ok", "padded", "trailing"])


@needs_compiled
@pytest.mark.parametrize("library", INFLATERS)
@pytest.mark.parametrize("codec", ["gzip", "zlib"])
def test_large_chunks_and_every_level(library, codec):
    """Chunks of several deflate blocks (1 MiB, compressible and not), every level."""
    for level in range(10):
        for kind in (0, 1, 2):
            data = chunk_data(level * 3 + kind, 2**20 + 7, kind)
            frame = bytes(encoder(codec, level).encode(data))
            assert decode_one("compiled", library, codec, frame, len(data)) == (DECODED, data)
            assert decode_one("compiled", library, codec, frame, len(data) - 1)[0] == FAILED
            assert decode_one("compiled", library, codec, frame, len(data) + 1)[0] == FAILED


@pytest.mark.parametrize("which,library", DECODERS)
@pytest.mark.parametrize("codec", ["gzip", "zlib"])
def test_tiny_chunks_and_every_truncation(which, library, codec):
    for data in (b"x", b"\x00" * 9):
        frame = bytes(encoder(codec, 5).encode(data))
        assert decode_one(which, library, codec, frame, len(data)) == (DECODED, data)
        assert decode_one(which, library, codec, frame, len(data) + 1)[0] == FAILED
        for n in range(len(frame)):
            assert decode_one(which, library, codec, frame[:n], len(data))[0] == FAILED, n


@needs_compiled
def test_set_inflate_names_the_libraries():
    before = _decode.inflate_with()
    assert before in INFLATERS
    with pytest.raises(ValueError, match="set_inflate: 'lz4' is not one of"):
        _decode.set_inflate("lz4")
    assert _decode.set_inflate("none") == before
    try:
        assert _decode.inflate_with() == "none"
        assert not {"gzip", "zlib"} & _decode.bound()
        with pytest.raises(ValueError, match="not bound"):
            Compiled("gzip", 8)
    finally:
        _decode.set_inflate(before)
    assert {"gzip", "zlib"} <= _decode.bound()


@needs_compiled
def test_bind_refuses_null_addresses_and_another_library():
    """A library bound stays bound: binding another is refused, the same one again is
    taken (a second import of the binding code)."""
    import ctypes

    with pytest.raises(ValueError, match="null"):
        _decode.bind_libdeflate(0, 0, 0, 0)
    with pytest.raises(ValueError, match="null"):
        _decode.bind_zlib_inflate(0, 0, 0, 0, 0)
    before = _decode.inflate_with()
    try:
        if "zlib" in INFLATERS:
            with pytest.raises(ValueError, match="another zlib is bound already"):
                _decode.bind_zlib_inflate(1, 1, 1, 1, 1)
            lib = next(ctypes.CDLL(p) for p in _kernels._zlib_libraries()
                       if hasattr(ctypes.CDLL(p), "inflateReset2"))
            same = [_kernels._address(lib, n) for n in _kernels._INFLATE_FUNCTIONS]
            assert _decode.bind_zlib_inflate(*same) == zlib.ZLIB_RUNTIME_VERSION
        if "libdeflate" in INFLATERS:
            with pytest.raises(ValueError, match="another libdeflate is bound already"):
                _decode.bind_libdeflate(1, 1, 1, 1)
            lib = next(ctypes.CDLL(p) for p in _kernels._libdeflate_libraries())
            _decode.set_inflate("none")
            _decode.bind_libdeflate(*(_kernels._address(lib, n)
                                      for n in _kernels._LIBDEFLATE_FUNCTIONS))
            assert _decode.inflate_with() == "libdeflate"
    finally:
        _decode.set_inflate(before)


# ---------------------------------------------------------------------------
# batches: every route, shapes, dtypes, levels, selections (Hypothesis)
# ---------------------------------------------------------------------------

@st.composite
def gzip_cases(draw):
    codec = draw(st.sampled_from(["gzip", "zlib"]))
    ndim = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 6)) for _ in range(ndim)]
    itemsize, swap_unit = draw(st.sampled_from(ITEM_SWAPS))
    nbytes = math.prod(chunk) * itemsize
    chunk_strides = c_strides(chunk, itemsize)
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        counts = [draw(st.integers(1, c)) for c in chunk]
        starts = [draw(st.integers(0, c - n)) for c, n in zip(chunk, counts, strict=True)]
        kind = draw(st.sampled_from(["ok"] * 6 + KINDS[codec][1:] + ["missing"]))
        level = draw(st.integers(0, 9))
        data = chunk_data(draw(st.integers(0, 2**32 - 1)), nbytes, draw(st.integers(0, 2)))
        rows.append(dict(counts=counts, kind=kind, data=data,
                         stored=None if kind == "missing" else stored(kind, data, codec, level),
                         chunk_offset=sum(s * t for s, t in zip(starts, chunk_strides,
                                                                strict=True)),
                         direct=draw(st.integers(0, 3)) == 0))
    # dst: one block per row, room for the whole chunk, guard bytes around everything
    for r, row in enumerate(rows):
        row["dst_offset"] = GUARD + r * nbytes
    return dict(codec=codec, chunk=chunk, itemsize=itemsize, swap_unit=swap_unit,
                nbytes=nbytes, chunk_strides=chunk_strides,
                dst_strides=c_strides(chunk, itemsize), rows=rows,
                dst_len=2 * GUARD + len(rows) * nbytes, share=draw(st.booleans()))


def _expected(case, dst0):
    out = dst0.copy()
    statuses = []
    for row in case["rows"]:
        if row["stored"] is None:
            statuses.append(NO_DATA)
            continue
        if row["kind"] not in VALID_ONE:
            statuses.append(FAILED)
            continue
        statuses.append(DECODED)
        chunk = np.frombuffer(row["data"], dtype=np.uint8)
        if row["direct"]:
            out[row["dst_offset"]:row["dst_offset"] + case["nbytes"]] = chunk
        else:
            numpy_place(out, chunk, row["chunk_offset"], case["chunk_strides"],
                        row["dst_offset"], case["dst_strides"], row["counts"],
                        case["itemsize"], case["swap_unit"])
    return statuses, out


def _dst0(case):
    return np.frombuffer(rng_bytes(7, case["dst_len"]), dtype=np.uint8).copy()


def _regions(dec, case, tmp):
    src = bytearray()
    offsets, sizes = [], []
    for row in case["rows"]:
        src += b"\xaa"
        offsets.append(len(src) if row["stored"] is not None else 0)
        sizes.append(len(row["stored"]) if row["stored"] is not None else -1)
        src += row["stored"] or b""
    dst = _dst0(case)
    status = call_regions(dec, np.frombuffer(bytes(src), dtype=np.uint8), i64(*offsets),
                          i64(*sizes), *layout_args(case, dst), share=case["share"])
    return status.tolist(), dst


def _files(dec, case, tmp):
    paths = []
    for r, row in enumerate(case["rows"]):
        name = f"c{r}"
        if row["stored"] is not None:
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(row["stored"])
        paths.append(name.encode())
    dst = _dst0(case)
    status, sizes, errors = call_files(dec, paths, *layout_args(case, dst),
                                       root=os.fsencode(tmp), share=case["share"])
    assert sizes.tolist() == [-1 if row["stored"] is None else len(row["stored"])
                              for row in case["rows"]]
    assert not errors.any()
    return status.tolist(), dst


def _ranges(dec, case, tmp):
    path = os.path.join(tmp, "blob")
    offsets, sizes = [], []
    with open(path, "wb") as f:
        for row in case["rows"]:
            f.write(b"\xaa")
            offsets.append(f.tell() if row["stored"] is not None else 0)
            sizes.append(len(row["stored"]) if row["stored"] is not None else -1)
            f.write(row["stored"] or b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        dst = _dst0(case)
        status, errors = call_ranges(dec, i64(*[fd] * len(offsets)), i64(*offsets),
                                     i64(*sizes), *layout_args(case, dst),
                                     share=case["share"])
    finally:
        os.close(fd)
    assert not errors.any()
    return status.tolist(), dst


ROUTES = {"regions": _regions, "files": _files, "ranges": _ranges}


@pytest.mark.parametrize("how", sorted(ROUTES))
@PROPS
@given(case=gzip_cases())
def test_batches_match_twin_numpy_and_each_library(tmp_path_factory, how, case):
    want_status, want_dst = _expected(case, _dst0(case))
    keep = ~failed_direct_mask(case, want_status)
    tmp = str(tmp_path_factory.mktemp("gz")) if how != "regions" else None
    for which, library in DECODERS:
        with inflating_with(library):
            status, dst = ROUTES[how](decoder(which, case["codec"], case["nbytes"]), case, tmp)
        assert status == want_status, (which, library, how)
        np.testing.assert_array_equal(dst[keep], want_dst[keep],
                                      err_msg=f"{which} {library} {how}")


@needs_compiled
@pytest.mark.parametrize("library", INFLATERS)
def test_threads_each_with_their_own_decompressor(library):
    """Many threads decoding at once (each its own decoder, helper threads sharing the
    rows) give every chunk right: one decompressor per thread."""
    nbytes = 64 * 1024
    datas = [chunk_data(s, nbytes, s % 3) for s in range(24)]
    frames = [bytes(encoder("gzip", 1 + s % 9).encode(d)) for s, d in enumerate(datas)]
    src = np.frombuffer(b"".join(frames), np.uint8)
    offsets = i64(*np.cumsum([0] + [len(f) for f in frames[:-1]]).tolist())
    sizes = i64(*[len(f) for f in frames])
    want = np.frombuffer(b"".join(datas), np.uint8)

    def run():
        dst = np.zeros(len(datas) * nbytes, np.uint8)
        n = len(datas)
        status = call_regions(Compiled("gzip", nbytes), src, offsets, sizes,
                              i64(*[0] * n), i64(1), dst, i64(*range(0, n * nbytes, nbytes)),
                              i64(1), np.full((n, 1), nbytes, np.int64), 1, 1,
                              np.ones(n, np.uint8), share=1)
        assert status.tolist() == [DECODED] * n
        np.testing.assert_array_equal(dst, want)

    with inflating_with(library):
        run_in_threads(run, 4)
