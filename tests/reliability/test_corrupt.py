"""Corrupt, truncated and malicious stored data; kernel argument checking; keys that try
to leave a store.

* Every codec chain (v3: raw ``bytes``, gzip, zstd, blosc, crc32c, transpose, sharding
  inner chunks and shard index; v2: numcodecs compressors and filters) reading a chunk
  that is truncated, extended, replaced by a chunk of another size or by garbage raises
  a :class:`~zarrfast.errors.ChunkDecodeError` naming the store key (and, when the size
  is wrong, both sizes); the other chunks still read correctly afterwards.
* Decompression bombs (zstd, gzip, zlib, blosc, lz4, bz2, lzma) are refused without
  allocating their output, measured by the peak RSS of a subprocess.
* The Cython kernels refuse bad shapes, offsets and strides before releasing the GIL
  (random arguments in a subprocess, guard bytes around every output buffer).
* ``LocalStore`` keeps every key inside its root, symbolic links included; node names
  coming from documents are validated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ChecksumError, ChunkDecodeError, InvalidKeyError, ZarrfastError
from zarrfast.storage import LocalStore, MemoryStore

import _helpers
from _helpers import LE
from _helpers.bombs import deflate_bomb, zstd_rle_frame
from _helpers.stores import make_symlink

SHAPE, CHUNKS = (30, 30), (10, 10)
CHUNK_NBYTES = 10 * 10 * 8  # float64
RNG = np.random.default_rng(7)
DATA = RNG.integers(-10**6, 10**6, SHAPE).astype("float64")  # exact under delta
NAME = "data/x"

V3_CHAINS: dict[str, list[Any]] = {
    "raw": [LE],
    "big-endian": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "gzip": [LE, {"name": "gzip", "configuration": {"level": 1}}],
    "zstd": [LE, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
    "zstd-checksum": [LE, {"name": "zstd", "configuration": {"level": 1, "checksum": True}}],
    "blosc-lz4": [LE, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 8, "blocksize": 0}}],
    "blosc-zstd": [LE, {"name": "blosc", "configuration": {
        "cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 8, "blocksize": 0}}],
    "crc32c": [LE, {"name": "crc32c"}],
    "gzip-crc32c": [LE, {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}],
    "transpose-zstd": [{"name": "transpose", "configuration": {"order": [1, 0]}}, LE,
                       {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
    "numcodecs.zlib": [LE, {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
}
V2_CHAINS: dict[str, tuple[Any, Any]] = {
    "none": (None, None),
    "zlib": ({"id": "zlib", "level": 1}, None),
    "gzip": ({"id": "gzip", "level": 1}, None),
    "zstd": ({"id": "zstd", "level": 1}, None),
    "blosc": ({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, None),
    "lz4": ({"id": "lz4", "acceleration": 1}, None),
    "bz2": ({"id": "bz2", "level": 1}, None),
    "lzma": ({"id": "lzma"}, None),
    "delta+zlib": ({"id": "zlib", "level": 1}, [{"id": "delta", "dtype": "<f8"}]),
    "shuffle+zstd": ({"id": "zstd", "level": 1}, [{"id": "shuffle", "elementsize": 8}]),
}
# codecs whose framing detects a change of any byte (checksums, or blosc/lz4 sizes + data)
DETECTS_FLIPS = {"crc32c", "gzip-crc32c", "gzip", "zstd-checksum", "v2-gzip"}


def _create_v3(store: Any, chain: list[Any], chunks: tuple[int, ...], name: str):
    doc = {"zarr_format": 3, "node_type": "array", "shape": list(SHAPE), "data_type": "float64",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": 0.0, "codecs": chain}
    store.set(f"{name}/zarr.json", json.dumps(doc).encode())
    return zarrfast.open_array(store, path=name, mode="r+")


def _create_v2(store: Any, compressor: Any, filters: Any, chunks: tuple[int, ...] = CHUNKS,
               name: str = NAME):
    doc = {"zarr_format": 2, "shape": list(SHAPE), "chunks": list(chunks), "dtype": "<f8",
           "compressor": compressor, "fill_value": 0.0, "order": "C", "filters": filters,
           "dimension_separator": "."}
    store.set(f"{name}/.zarray", json.dumps(doc).encode())
    return zarrfast.open_array(store, path=name, mode="r+", zarr_format=2)


def _case(kind: str) -> tuple[MemoryStore, Any, str, bytes]:
    """``(store, array, key of chunk (1, 1), encoded bytes of a 10x5 chunk)``."""
    s, other = MemoryStore(), MemoryStore()
    if kind.startswith("v2-"):
        comp, filters = V2_CHAINS[kind[3:]]
        a = _create_v2(s, comp, filters)
        b = _create_v2(other, comp, filters, chunks=(10, 5))
        key = f"{NAME}/1.1"
        small = f"{NAME}/0.0"
    else:
        chain = V3_CHAINS[kind]
        a = _create_v3(s, chain, CHUNKS, NAME)
        b = _create_v3(other, chain, (10, 5), NAME)
        key = f"{NAME}/c/1/1"
        small = f"{NAME}/c/0/0"
    a[...] = DATA
    b[...] = DATA
    return s, a, key, other.get(small)


def _corruptions(raw: bytes, other: bytes) -> dict[str, bytes]:
    mid = len(raw) // 2
    return {
        "truncated-half": raw[:mid],
        "truncated-1": raw[:-1],
        "empty": b"",
        "extended": raw + b"\x01garbage",
        "other-size": other,
        "doubled": raw + raw,
        "flipped": raw[:mid] + bytes([raw[mid] ^ 0x5A]) + raw[mid + 1:],
        "random": bytes(np.random.default_rng(len(raw)).integers(0, 256, len(raw), np.uint8)),
    }


def _check_others(a: Any) -> None:
    """Every chunk except (1, 1) still reads correctly."""
    np.testing.assert_array_equal(a[:10], DATA[:10])
    np.testing.assert_array_equal(a[20:], DATA[20:])
    np.testing.assert_array_equal(a[:, :10], DATA[:, :10])
    np.testing.assert_array_equal(a[:, 20:], DATA[:, 20:])


ALL_KINDS = list(V3_CHAINS) + [f"v2-{k}" for k in V2_CHAINS]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_corrupt_chunks_raise_naming_key_and_sizes(kind: str) -> None:
    s, a, key, other = _case(kind)
    raw = s.get(key)
    assert raw is not None
    for what, bad in _corruptions(raw, other).items():
        s.set(key, bad)
        flips = what in ("flipped", "random")
        try:
            got = a[10:20, 10:20]
        except ChunkDecodeError as e:
            msg = str(e)
            assert key in msg, f"{kind}/{what}: key not named: {msg}"
            if what == "other-size" or (what == "doubled" and kind in ("raw", "big-endian")):
                assert str(CHUNK_NBYTES) in msg, f"{kind}/{what}: expected size missing: {msg}"
                assert str(CHUNK_NBYTES // 2) in msg or str(2 * CHUNK_NBYTES) in msg or (
                    "more than" in msg), f"{kind}/{what}: actual size missing: {msg}"
            if kind in ("crc32c", "gzip-crc32c") and what in ("flipped", "random", "extended",
                                                              "truncated-1"):
                assert isinstance(e, ChecksumError), f"{kind}/{what}: {e!r}"
        else:
            # undetectable without a checksum: a flipped byte of raw or compressed data
            assert flips and kind not in DETECTS_FLIPS, (
                f"{kind}/{what}: a corrupt chunk decoded without an error")
            assert got.shape == (10, 10)
        with pytest.raises(ZarrfastError) if not flips else _maybe_raises():
            a[...]  # a whole read fails as well (and leaves nothing half-done behind)
        _check_others(a)
    # rewriting the whole chunk repairs it
    a[10:20, 10:20] = DATA[10:20, 10:20] + 1
    np.testing.assert_array_equal(a[10:20, 10:20], DATA[10:20, 10:20] + 1)
    _check_others(a)


class _maybe_raises:
    def __enter__(self) -> None:
        return None

    def __exit__(self, tp: Any, value: Any, tb: Any) -> bool:
        return tp is not None and issubclass(tp, ZarrfastError)


def test_crc32c_mismatch_is_checksum_error() -> None:
    s, a, key, _ = _case("crc32c")
    raw = bytearray(s.get(key))
    raw[-1] ^= 1  # the stored checksum
    s.set(key, bytes(raw))
    with pytest.raises(ChecksumError, match="crc32c.*mismatch") as info:
        a[10:20, 10:20]
    assert key in str(info.value)
    raw[-1] ^= 1
    raw[0] ^= 1  # the payload
    s.set(key, bytes(raw))
    with pytest.raises(ChecksumError):
        a[15, 15]
    _check_others(a)


# -- sharding -----------------------------------------------------------------------


def _sharded(store: Any, index_location: str = "end") -> Any:
    chain = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [5, 5],
        "codecs": [LE, {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
                   {"name": "crc32c"}],
        "index_codecs": [LE, {"name": "crc32c"}], "index_location": index_location}}]
    a = _create_v3(store, chain, CHUNKS, NAME)
    a[...] = DATA
    return a


@pytest.mark.parametrize("location", ["end", "start"])
def test_sharded_inner_chunk_and_index_corruption(location: str) -> None:
    s = MemoryStore()
    a = _sharded(s, location)
    key = f"{NAME}/c/1/1"
    good = s.get(key)
    n_inner = 4
    index_nbytes = n_inner * 16 + 4
    index = (good[-index_nbytes:] if location == "end" else good[:index_nbytes])
    table = np.frombuffer(index[:-4], "<u8").reshape(-1, 2).copy()
    # 1. a flipped byte inside an inner chunk: its crc32c fails, naming the shard key
    off = int(table[3, 0]) + 2
    bad = bytearray(good)
    bad[off] ^= 0xFF
    s.set(key, bytes(bad))
    with pytest.raises(ChecksumError) as info:
        a[15:20, 15:20]
    assert key in str(info.value)
    np.testing.assert_array_equal(a[10:15, 10:20], DATA[10:15, 10:20])  # inner chunks 0, 1
    _check_others(a)
    # 2. the index's checksum does not match
    bad = bytearray(good)
    pos = len(good) - index_nbytes + 3 if location == "end" else 3
    bad[pos] ^= 0x10
    s.set(key, bytes(bad))
    with pytest.raises(ChecksumError) as info:
        a[10:20, 10:20]
    assert key in str(info.value)
    _check_others(a)
    # 3. truncated shards: no index, or inner chunks cut off
    for cut in (1, index_nbytes, len(good) // 2, len(good) - 3):
        s.set(key, good[:cut] if location == "start" else good[-cut:] if cut < index_nbytes
              else good[:len(good) - cut])
        with pytest.raises(ChunkDecodeError) as info:
            a[10:20, 10:20]
        assert key in str(info.value)
        _check_others(a)
    # 4. an index entry pointing past the end of the shard (checksum recomputed)
    import crc32c

    for entry in ([len(good) * 4, 10], [0, 2**63], [2**64 - 2, 5], [5, 2**64 - 1]):
        t = table.copy()
        t[2] = entry
        body = t.astype("<u8").tobytes()
        new_index = body + crc32c.crc32c(body).to_bytes(4, "little")
        bad = (good[:-index_nbytes] + new_index if location == "end"
               else new_index + good[index_nbytes:])
        s.set(key, bad)
        with pytest.raises(ChunkDecodeError) as info:
            a[10:20, 10:20]
        assert key in str(info.value), str(info.value)
        _check_others(a)
    # 5. an inner chunk that decodes to the wrong size (5x4 items instead of 5x5)
    from zarrfast.codecs import Crc32cCodec, ZstdCodec

    payload = np.arange(20, dtype="<f8").tobytes()
    inner = bytes(Crc32cCodec().encode(ZstdCodec(1).encode(payload)))
    data_start = index_nbytes if location == "start" else 0
    pieces = [good[int(o):int(o) + int(n)] for o, n in table]
    pieces[3] = inner
    t = table.copy()
    pos = data_start
    for j, piece in enumerate(pieces):
        t[j] = [pos, len(piece)]
        pos += len(piece)
    body = t.astype("<u8").tobytes()
    new_index = body + crc32c.crc32c(body).to_bytes(4, "little")
    data = b"".join(pieces)
    s.set(key, data + new_index if location == "end" else new_index + data)
    with pytest.raises(ChunkDecodeError) as info:
        a[15:20, 15:20]
    msg = str(info.value)
    assert key in msg and "160" in msg and "200" in msg, msg
    np.testing.assert_array_equal(a[10:15, 10:20], DATA[10:15, 10:20])
    _check_others(a)
    s.set(key, good)
    np.testing.assert_array_equal(a[10:20, 10:20], DATA[10:20, 10:20])


# -- decompression bombs --------------------------------------------------------------------


def _bombs() -> dict[str, tuple[str, Any, bytes]]:
    """name -> (format, codecs, chunk bytes) of chunks of 100 float64 that inflate to >=
    32 MiB."""
    zeros = np.zeros(1 << 30, np.uint8)  # calloc'd: reading it commits no memory
    blosc_bomb = numcodecs.Blosc(cname="lz4", clevel=9, shuffle=0).encode(zeros[: 1 << 30])
    lz4_bomb = numcodecs.LZ4().encode(zeros[: 1 << 30])
    import bz2

    import crc32c

    bz2_bomb = bz2.compress(zeros[: 1 << 25], 9)
    lzma_bomb = numcodecs.LZMA().encode(zeros[: 1 << 25])
    zstd_known = zstd_rle_frame(1 << 31, content_size=True)
    zstd_unknown = zstd_rle_frame(1 << 31, content_size=False)
    gz, zl = deflate_bomb(1024, gzip=True), deflate_bomb(1024, gzip=False)
    zstd3 = [LE, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]
    return {
        "v3-zstd-declared": ("3", zstd3, zstd_known),
        "v3-zstd-undeclared": ("3", zstd3, zstd_unknown),
        "v3-gzip": ("3", [LE, {"name": "gzip", "configuration": {"level": 1}}], gz),
        "v3-gzip-crc32c": ("3", [LE, {"name": "gzip", "configuration": {"level": 1}},
                                 {"name": "crc32c"}], gz + crc32c.crc32c(gz).to_bytes(4, "little")),
        "v3-blosc": ("3", [LE, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "blocksize": 0}}], blosc_bomb),
        "v3-numcodecs.zlib": ("3", [LE, {"name": "numcodecs.zlib",
                                         "configuration": {"level": 1}}], zl),
        "v2-zstd": ("2", ({"id": "zstd", "level": 1}, None), zstd_known),
        "v2-zstd-undeclared": ("2", ({"id": "zstd", "level": 1}, None), zstd_unknown),
        "v2-gzip": ("2", ({"id": "gzip", "level": 1}, None), gz),
        "v2-zlib": ("2", ({"id": "zlib", "level": 1}, None), zl),
        "v2-blosc": ("2", ({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0}, None),
                     blosc_bomb),
        "v2-lz4": ("2", ({"id": "lz4"}, None), lz4_bomb),
        "v2-bz2": ("2", ({"id": "bz2", "level": 1}, None), bz2_bomb),
        "v2-lzma": ("2", ({"id": "lzma"}, None), lzma_bomb),
        # with a filter the compressor decodes without an output buffer: bounded by the
        # chunk size the metadata implies
        "v2-delta+zlib": ("2", ({"id": "zlib", "level": 1}, [{"id": "delta", "dtype": "<f8"}]),
                          zl),
        "v2-delta+zstd-undeclared": ("2", ({"id": "zstd", "level": 1},
                                           [{"id": "delta", "dtype": "<f8"}]), zstd_unknown),
        "v2-delta+blosc": ("2", ({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0},
                                 [{"id": "delta", "dtype": "<f8"}]), blosc_bomb),
    }


_BOMB_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    import zarrfast
    from zarrfast.errors import ChunkDecodeError
    from zarrfast.storage import LocalStore

    def peak_mib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

    root = sys.argv[1]
    out = {}
    names = json.loads(open(root + "/names.json").read())
    np.zeros(10)  # warm up
    for name in names:
        a = zarrfast.open_array(LocalStore(root), path=name, mode="r")
        a[:10]  # the other chunk: warm up the pipeline and its buffers
        before = peak_mib()
        try:
            a[10:20]
            result = "decoded"
        except ChunkDecodeError as e:
            result = str(e)
        assert (a[:10] == np.arange(10)).all()
        out[name] = [result, peak_mib() - before]
    print(json.dumps(out))
""")


def test_decompression_bombs_are_refused_without_allocating(tmp_path: Path,
                                                            subprocess_cwd: Path) -> None:
    store = LocalStore(tmp_path)
    bombs = _bombs()
    for name, (fmt, codecs, bomb) in bombs.items():
        if fmt == "3":
            doc = {"zarr_format": 3, "node_type": "array", "shape": [20],
                   "data_type": "float64",
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
                   "codecs": codecs}
            store.set(f"{name}/zarr.json", json.dumps(doc).encode())
            key = f"{name}/c/1"
        else:
            comp, filters = codecs
            doc = {"zarr_format": 2, "shape": [20], "chunks": [10], "dtype": "<f8",
                   "compressor": comp, "fill_value": 0.0, "order": "C", "filters": filters}
            store.set(f"{name}/.zarray", json.dumps(doc).encode())
            key = f"{name}/1"
        a = zarrfast.open_array(store, path=name, mode="r+")
        a[:10] = np.arange(10)
        store.set(key, bomb)
    (tmp_path / "names.json").write_text(json.dumps(list(bombs)))
    proc = subprocess.run([sys.executable, "-c", _BOMB_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ZARRFAST_THREADS": "1"}, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    problems = []
    for name, (msg, grew) in results.items():
        if msg == "decoded" or grew > 24:
            problems.append(f"{name}: {msg[:150]} (peak RSS +{grew} MiB)")
        elif f"{name}/" not in msg or ("expected 80 bytes" not in msg and "at most" not in msg):
            problems.append(f"{name}: message lacks the key or the expected size: {msg}")
    assert not problems, "\n".join(problems)


_V3_UNBOUNDED_SCRIPT = textwrap.dedent("""
    import resource, sys, zlib, struct, json
    import numpy as np
    import zarrfast
    from zarrfast.errors import ChunkDecodeError
    from zarrfast.storage import MemoryStore
    sys.path.insert(0, sys.argv[1])  # tests/: the _helpers package
    from _helpers import LE
    from _helpers.bombs import deflate_bomb
    gz = deflate_bomb(512, gzip=True)
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    s = MemoryStore()
    chains = {
        "sharding+gzip": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [5], "codecs": [LE], "index_codecs": [LE, {"name": "crc32c"}]}},
            {"name": "gzip", "configuration": {"level": 1}}],
        "zstd+gzip": [LE, {"name": "zstd", "configuration": {"level": 1}},
                      {"name": "gzip", "configuration": {"level": 1}}],
    }
    worst = 0
    for name, chain in chains.items():
        a = zarrfast.create_array(s, name=name, shape=(20,), chunks=(10,), dtype="float64",
                                  fill_value=0.0, serializer=chain[0], compressors=chain[1:])
        a[:] = np.arange(20.0)
        key = name + "/c/1"
        s.set(key, gz)
        before = peak()
        try:
            a[10:]
        except ChunkDecodeError:
            pass
        worst = max(worst, peak() - before)
    print(worst)
""")


def test_outer_bytes_codec_bomb_is_bounded(subprocess_cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _V3_UNBOUNDED_SCRIPT, str(_helpers.TESTS)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ZARRFAST_THREADS": "1"}, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.strip()) < 64, f"peak RSS grew by {proc.stdout.strip()} MiB"


# -- codecs called directly -----------------------------------------------------------------


def test_codecs_refuse_wrong_sizes_directly() -> None:
    from zarrfast.codecs import BloscCodec, GzipCodec, ZstdCodec

    payload = np.arange(100, dtype="<f8").tobytes()
    for codec in (GzipCodec(1), ZstdCodec(1), BloscCodec("lz4", 5, "shuffle", 8)):
        enc = bytes(codec.encode(payload))
        assert bytes(codec.decode(enc)) == payload
        out = bytearray(800)
        assert bytes(codec.decode(enc, out=out)) == payload
        for size in (799, 801, 1600):
            with pytest.raises(ZarrfastError, match=f"{size}"):
                codec.decode(enc, out=bytearray(size))
        with pytest.raises(ZarrfastError, match="799"):
            codec.decode(enc, limit=799)
        assert bytes(codec.decode(enc, limit=800)) == payload
    # a blosc header that claims more stored bytes than there are: refused before C-blosc
    enc = bytearray(BloscCodec("lz4", 5, "shuffle", 8).encode(payload))
    with pytest.raises(ZarrfastError, match="blosc header"):
        BloscCodec("lz4", 5, "shuffle", 8).decode(bytes(enc[:-1]))
    with pytest.raises(ZarrfastError, match="too short"):
        BloscCodec("lz4", 5, "shuffle", 8).decode(b"\x02\x01")


# -- kernels: bad shapes, offsets and strides -----------------------------------------------

_KERNEL_FUZZ = textwrap.dedent("""
    import faulthandler, random, sys
    import numpy as np
    faulthandler.enable()
    from zarrfast import kernels as K; from zarrfast.kernels import reference as R
    assert K.USING_EXTENSIONS
    rnd = random.Random(int(sys.argv[1]))
    I64 = np.int64
    GUARD = 64
    BIG = [0, 1, 2, 3, 7, 8, 63, 64, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1]

    def num():
        r = rnd.random()
        if r < 0.6:
            return rnd.randint(-3, 12)
        v = rnd.choice(BIG)
        return -v if rnd.random() < 0.3 else v

    def arr(n):
        return np.array([num() for _ in range(n)], dtype=I64)

    def guarded(n):
        full = np.full(n + 2 * GUARD, 0xAB, np.uint8)
        return full, full[GUARD:GUARD + n]

    def intact(full, n):
        return (full[:GUARD] == 0xAB).all() and (full[GUARD + n:] == 0xAB).all()

    calls = errors = 0
    for i in range(int(sys.argv[2])):
        ndim = rnd.choice([0, 1, 1, 2, 2, 3, 4, 65])
        which = rnd.choice(["copy", "fill", "transpose", "swap", "project", "uniform",
                            "keys", "group", "check"])
        nsrc, ndst = rnd.randint(0, 300), rnd.randint(0, 300)
        src = np.frombuffer(bytes(rnd.getrandbits(8) for _ in range(nsrc)), np.uint8)
        full, dst = guarded(ndst)
        calls += 1
        try:
            if which == "copy":
                item = rnd.choice([1, 2, 4, 8, 3, 0, -1, 16])
                K.copy_region(src, num(), arr(ndim), dst, num(), arr(ndim), arr(ndim), item,
                              rnd.choice([1, 2, 4, 8, 3]))
            elif which == "fill":
                K.fill_region(dst, num(), arr(ndim), arr(ndim),
                              np.zeros(rnd.choice([0, 1, 2, 4, 8, 3]), np.uint8))
            elif which == "transpose":
                shape = np.abs(arr(ndim)) % 5
                perm = np.array(rnd.sample(range(ndim), ndim) if rnd.random() < .7
                                else [num() for _ in range(ndim)], I64)
                K.transpose(src, dst, shape, perm, rnd.choice([1, 2, 4, 0, -2]))
            elif which == "swap":
                K.byteswap_copy(src, dst[:len(src)] if len(dst) >= len(src) else dst,
                                rnd.choice([1, 2, 4, 8, 3, 0]))
                K.byteswap_inplace(dst, rnd.choice([1, 2, 4, 8, 3, 0]))
            elif which == "project":
                K.project(arr(ndim), arr(ndim), arr(ndim), arr(ndim), arr(ndim) % 100)
            elif which == "uniform":
                K.is_uniform(src, np.zeros(rnd.choice([0, 1, 3, 8]), np.uint8))
            elif which == "keys":
                K.format_chunk_keys(arr(ndim * 3).reshape(3, ndim) if ndim < 65 else
                                    np.zeros((2, 65), I64), "c/", rnd.choice(["/", ".", ""]))
            elif which == "group":
                K.group_by_chunk(arr(rnd.randint(0, 20)), num())
            else:
                n = rnd.randint(0, 6)
                K.check_index(np.array([[rnd.choice(BIG + [2**64 - 1]) for _ in range(2)]
                                        for _ in range(n)], np.uint64).reshape(n, 2),
                              num(), num())
        except (ValueError, TypeError, OverflowError, IndexError, MemoryError) as e:
            errors += 1
        if not intact(full, ndst):
            print(f"call {i} ({which}) wrote outside its output buffer", file=sys.stderr)
            sys.exit(3)
    print(calls, errors)
""")


def test_kernels_reject_bad_arguments_without_crashing(subprocess_cwd: Path) -> None:
    """Random shapes, offsets, strides, itemsizes and ranks (including negative, huge and
    above the maximum rank): every call either works within its buffers or raises a Python
    error; a crash (segfault) or a write outside the output buffer fails the test."""
    from zarrfast import kernels as _kernels

    if not _kernels.USING_EXTENSIONS:
        pytest.skip("the compiled kernels are not built")
    # (from the repo root, `python -c` would import the source tree: maybe no kernels)
    proc = subprocess.run([sys.executable, "-c", _KERNEL_FUZZ, "1", "6000"],
                          capture_output=True, text=True, timeout=120, cwd=subprocess_cwd)
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    calls, errors = map(int, proc.stdout.split())
    assert calls == 6000 and 0 < errors < calls


# -- keys and paths --------------------------------------------------------------------------


@pytest.mark.parametrize("key", [
    "../x", "a/../../x", "/etc/passwd", "a\\..\\x", "a//b", "", ".", "a/./b", "c:x", "C:/x",
    "a/\x00", "..", "a/..", "x/", "/",
])
def test_local_store_refuses_keys_leaving_the_root(tmp_path: Path, key: str) -> None:
    store = LocalStore(tmp_path / "root")
    for op in (lambda: store.set(key, b"x"), lambda: store.get(key),
               lambda: store.delete(key), lambda: store.exists(key)):
        with pytest.raises(InvalidKeyError):
            op()
    assert not (tmp_path / "x").exists()


def test_local_store_symlinks_pointing_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    make_symlink(outside, root / "dirlink", is_dir=True)
    make_symlink(outside / "secret", root / "filelink", is_dir=False)
    make_symlink(outside / "new", root / "dangling", is_dir=False)
    store = LocalStore(root)
    # writes never go through a link that leaves the root
    for key in ("dirlink/secret", "dirlink/new", "dirlink/a/b", "filelink", "dangling"):
        with pytest.raises(InvalidKeyError, match="outside"):
            store.set(key, b"overwritten")
    assert (outside / "secret").read_bytes() == b"secret"
    assert sorted(os.listdir(outside)) == ["secret"]
    # deletes neither
    for key in ("dirlink/secret",):
        with pytest.raises(InvalidKeyError):
            store.delete(key)
    store.delete("filelink")  # removing the link itself is fine; the target stays
    assert (outside / "secret").read_bytes() == b"secret"
    store.delete_dir("dirlink")
    assert (outside / "secret").read_bytes() == b"secret"
    # an array whose chunk directory is a link out of the root cannot be written
    a = zarrfast.create_array(store, name="arr", shape=(4,), chunks=(2,), dtype="u1")
    make_symlink(outside, root / "arr" / "c", is_dir=True)
    with pytest.raises(InvalidKeyError):
        a[:] = 1
    assert sorted(os.listdir(outside)) == ["secret"]


def test_local_store_links_inside_the_root_work(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = LocalStore(root)
    store.set("real/a", b"1")
    make_symlink(root / "real", root / "alias", is_dir=True)
    assert store.get("alias/a") == b"1"
    store.set("alias/b", b"2")  # resolves inside the root
    assert store.get("real/b") == b"2"


def test_node_names_from_documents_cannot_escape(tmp_path: Path) -> None:
    """A consolidated document naming a member ``../../etc`` is refused with an error
    naming it, on a real directory store (nothing outside the root is read)."""
    root = tmp_path / "root"
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"secret": 1}}))
    g = zarrfast.open_group(LocalStore(root), mode="w")
    g.create_array("ok", shape=(2,), dtype="u1")
    zarrfast.consolidate_metadata(LocalStore(root))
    doc = json.loads((root / "zarr.json").read_text())
    doc["consolidated_metadata"]["metadata"]["../../etc"] = {
        "zarr_format": 3, "node_type": "group", "attributes": {}}
    (root / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(ZarrfastError, match=r"\.\./\.\./etc"):
        zarrfast.open_group(LocalStore(root), mode="r")
    with pytest.raises(ZarrfastError):
        zarrfast.open_group(LocalStore(root), path="../etc", mode="r")
    # v2: a .zmetadata key
    root2 = tmp_path / "root2"
    g = zarrfast.open_group(LocalStore(root2), mode="w", zarr_format=2)
    g.create_array("ok", shape=(2,), dtype="u1")
    zarrfast.consolidate_metadata(LocalStore(root2))
    doc = json.loads((root2 / ".zmetadata").read_text())
    doc["metadata"]["../etc/.zgroup"] = {"zarr_format": 2}
    (root2 / ".zmetadata").write_text(json.dumps(doc))
    with pytest.raises(ZarrfastError, match=r"\.\./etc"):
        zarrfast.open_group(LocalStore(root2), mode="r")


def test_huge_nominal_chunk_with_corrupt_data_is_a_decode_error() -> None:
    s = MemoryStore()
    # 1 PiB chunks: more than any x86-64 address space, whatever the overcommit policy
    doc = {"zarr_format": 3, "node_type": "array", "shape": [2**50], "data_type": "float32",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2**48]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
           "codecs": [LE, {"name": "zstd", "configuration": {"level": 1}}]}
    s.set("zarr.json", json.dumps(doc).encode())
    a = zarrfast.open_array(s, mode="r")
    assert a[:3].tolist() == [0.0, 0.0, 0.0]  # missing chunks: fill values, lazily
    s.set("c/0", zstd_rle_frame(12, content_size=True))
    with pytest.raises(ChunkDecodeError, match="c/0"):
        a[:3]
