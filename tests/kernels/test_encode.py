"""The batched chunk encoder (``_ext._encode.ChunkEncoder``) and its twin against
numcodecs: the bytes of ``Zstd``, ``GZip`` and ``Zlib`` for every chunk gathered out of a
value (shapes, item sizes, byte swaps, transposed layouts, levels), the fill chunks it
skips, and the errors it raises before compressing anything."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.kernels import encode as _encode
from zarrfast.kernels import reference as _reference

pytestmark = pytest.mark.skipif(_encode.ChunkEncoder is None,
                                reason="the batched encoder is not compiled")
FORMATS = sorted(_encode.ENCODE_CODECS)
IMPLS = {"compiled": _encode.ChunkEncoder, "twin": _reference.ChunkEncoder}


def _numcodecs(codec, level, checksum=False):
    return {"zstd": lambda: numcodecs.Zstd(level=level, checksum=checksum),
            "gzip": lambda: numcodecs.GZip(level=level),
            "zlib": lambda: numcodecs.Zlib(level=level)}[codec]()


def _same(codec, got, want, before, after):
    """``got`` is ``want`` -- a gzip member's modification time (bytes 4-8, numcodecs
    writes the time of the call) between ``before`` and ``after``."""
    got, want = bytes(got), bytes(want)
    if codec == "gzip":
        stamp = int.from_bytes(got[4:8], "little")
        assert before <= stamp <= after
        got, want = got[:4] + got[8:], want[:4] + want[8:]
    assert got == want


def _value(shape, dtype, seed, kind="smooth"):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if kind == "random":
        x = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
    else:
        x = (np.cumsum(rng.integers(0, 3, n)) % 251).astype(dtype)
    return np.ascontiguousarray(x.reshape(shape))


def _regions(value, chunks, perm):
    """Every whole chunk of ``value`` (C order of the grid): the offsets, and the chunk's
    stored layout when its dims are stored in the order ``perm`` (a transpose)."""
    grid = [s // c for s, c in zip(value.shape, chunks, strict=True)]
    offsets = [int(np.dot(idx, np.array(chunks) * value.strides))
               for idx in np.ndindex(*grid)]
    stored = [chunks[k] for k in perm]
    c_strides = np.cumprod([1, *stored[::-1]])[:-1][::-1] * value.itemsize
    dst = np.zeros(len(chunks), dtype=np.int64)
    dst[list(perm)] = c_strides  # (stored dim k is chunk dim perm[k])
    return np.array(offsets, dtype=np.int64), dst


def _expected_chunk(value, idx, chunks, perm, order):
    block = value[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks, strict=True))]
    return np.ascontiguousarray(block.transpose(perm).astype(value.dtype.newbyteorder(order)))


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 4))
    chunks = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    grid = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(["u1", "<u2", "<i4", "<f8", "<c16"]))
    order = draw(st.sampled_from(["<", ">"]))
    perm = tuple(draw(st.permutations(range(ndim))))
    codec = draw(st.sampled_from(FORMATS))
    level = draw(st.integers(-3, 9) if codec == "zstd" else st.sampled_from([-1, 1, 2, 6, 9]))
    checksum = codec == "zstd" and draw(st.booleans())
    gathered = draw(st.integers(1, 4))  # chunks the scratch buffer holds
    kind = draw(st.sampled_from(["smooth", "random"]))
    return chunks, grid, dtype, order, perm, codec, level, checksum, gathered, kind


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**16))
def test_every_chunk_is_numcodecs_bytes(case, seed):
    chunks, grid, dtype, order, perm, codec, level, checksum, gathered, kind = case
    shape = tuple(c * g for c, g in zip(chunks, grid, strict=True))
    value = _value(shape, dtype, seed, kind)
    itemsize = value.itemsize
    swap = 1 if order == "<" or itemsize == 1 else (itemsize // 2 if dtype == "<c16"
                                                     else itemsize)
    offsets, dst = _regions(value, chunks, perm)
    nbytes = int(np.prod(chunks)) * itemsize
    ref = _numcodecs(codec, level, checksum)
    for name, cls in IMPLS.items():
        enc = cls(codec, level, checksum)
        slot = enc.slot(nbytes)
        out = np.zeros(len(offsets) * slot, dtype=np.uint8)
        scratch = np.empty(gathered * nbytes, dtype=np.uint8)
        before = int(time.time())
        sizes = enc.compress_regions(value.reshape(-1).view(np.uint8), offsets,
                                     np.array(value.strides, dtype=np.int64), dst,
                                     np.array(chunks, dtype=np.int64), itemsize, swap, None,
                                     scratch, out)
        after = int(time.time())
        for r, idx in enumerate(np.ndindex(*grid)):
            want = _expected_chunk(value, idx, chunks, perm, order)
            got = out[r * slot:r * slot + sizes[r]]
            _same(codec, got, ref.encode(want.view(np.uint8)), before, after)
            back = np.frombuffer(ref.decode(bytes(got)), dtype=want.dtype)
            np.testing.assert_array_equal(back, want.reshape(-1), err_msg=name)


@pytest.mark.parametrize("codec", FORMATS)
def test_a_chunk_equal_to_the_fill_value_is_skipped(codec):
    value = _value((4, 12), "<u2", 1)
    value[:, 4:8] = 7  # the second of three 4 x 4 chunks
    offsets, dst = _regions(value, (4, 4), (0, 1))
    fill = np.frombuffer(np.array(7, "<u2").tobytes(), dtype=np.uint8)
    for cls in IMPLS.values():
        enc = cls(codec, 1)
        out = np.zeros(3 * enc.slot(32), dtype=np.uint8)
        sizes = enc.compress_regions(value.reshape(-1).view(np.uint8), offsets,
                                     np.array(value.strides), dst, np.array([4, 4]), 2, 1,
                                     fill, np.empty(96, np.uint8), out)
        assert sizes[1] == -1 and sizes[0] > 0 and sizes[2] > 0
        value[0, 5] = 8  # one item differs: compressed
        sizes = enc.compress_regions(value.reshape(-1).view(np.uint8), offsets,
                                     np.array(value.strides), dst, np.array([4, 4]), 2, 1,
                                     fill, np.empty(96, np.uint8), out)
        assert (sizes > 0).all()
        value[0, 5] = 7


@pytest.mark.parametrize("name", sorted(IMPLS))
def test_bad_tables_raise_before_anything_is_compressed(name):
    cls = IMPLS[name]
    enc = cls("zstd", 1)
    value = np.zeros(64, dtype=np.uint8)
    args = dict(src=value, src_offsets=np.array([0, 32], np.int64),
                src_strides=np.array([8, 1], np.int64), dst_strides=np.array([8, 1], np.int64),
                shape=np.array([4, 8], np.int64), itemsize=1, swap_unit=1, fill=None,
                scratch=np.empty(32, np.uint8), out=np.full(2 * enc.slot(32), 9, np.uint8))
    with pytest.raises(ValueError, match="out holds"):
        enc.compress_regions(**{**args, "out": np.zeros(enc.slot(32), np.uint8)})
    with pytest.raises(ValueError, match="src"):
        enc.compress_regions(**{**args, "src_offsets": np.array([0, 40], np.int64)})
    with pytest.raises(ValueError, match="scratch"):
        enc.compress_regions(**{**args, "scratch": np.empty(31, np.uint8)})
    with pytest.raises(ValueError, match="fill"):
        enc.compress_regions(**{**args, "fill": np.zeros(2, np.uint8)})
    assert (args["out"] == 9).all()  # nothing written
    with pytest.raises(ValueError, match="codec"):
        cls("lz4", 1)
    with pytest.raises(ValueError, match="level"):
        cls("gzip", 10)


def test_zstd_is_bound_to_numcodecs_own_copy():
    # its frames are numcodecs' bytes whatever zstd the build linked (versions differ
    # from level 5 on); ZARRFAST_LINK_CODECS=0 builds bind the same copy
    if "zstd" not in _encode.ENCODE_CODECS:
        pytest.skip("numcodecs' zstd does not export its compression functions")
    import numcodecs.zstd

    assert _encode.ENCODER_BINDINGS["zstd"] == f"found with ctypes in {numcodecs.zstd.__file__}"
    assert {"gzip", "zlib"} <= _encode.ENCODE_CODECS  # (Python's zlib: always there)


def test_the_linked_zstd_makes_frames_numcodecs_reads(subprocess_cwd):
    # the fallback where numcodecs' extension does not export compression: a zstd
    # linked at build time (a frame with its content size; other bytes, same values)
    script = textwrap.dedent("""
        import numcodecs, numpy as np
        from zarrfast._ext import _encode
        linked = _encode.linked_zstd()
        if linked is None:
            print("not linked")
            raise SystemExit(0)
        _encode.bind_zstd(*linked)
        x = (np.arange(50000) % 300).astype("<u2")
        frame = _encode.ChunkEncoder("zstd", 7, True).compress(x.view(np.uint8))
        assert frame[:4] == bytes.fromhex("28b52ffd") and frame[4] & 0xC0  # content size
        assert (np.frombuffer(numcodecs.Zstd().decode(frame), "<u2") == x).all()
        _encode.bind_zstd(0, 0, 0, 0, 0, 0, 0)
        assert "zstd" not in _encode.bound()
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("ok", "not linked")


def test_an_encoder_keeps_its_library_when_it_is_unbound(subprocess_cwd):
    script = textwrap.dedent("""
        import numcodecs, numpy as np
        from zarrfast.kernels import encode
        from zarrfast._ext import _encode
        zstd, gzip = encode.ChunkEncoder("zstd", 1), encode.ChunkEncoder("gzip", 1)
        _encode.bind_zstd(0, 0, 0, 0, 0, 0, 0)
        _encode.bind_zlib(0, 0, 0, 0, 0, 0, 0)
        assert _encode.bound() == frozenset()
        for codec in ("zstd", "gzip"):
            try:
                encode.ChunkEncoder(codec, 1)
            except RuntimeError as e:
                assert "not bound" in str(e)
            else:
                raise AssertionError(codec)
        x = np.arange(1000, dtype=np.uint8)
        assert numcodecs.Zstd(level=1).decode(zstd.compress(x)) == x.tobytes()
        assert numcodecs.GZip().decode(gzip.compress(x)) == x.tobytes()
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("codec", FORMATS)
def test_gathering_a_row_of_chunks_changes_no_byte(codec):
    value = _value((8, 64), "<u2", 3)
    offsets, dst = _regions(value, (4, 8), (0, 1))
    enc = _encode.ChunkEncoder(codec, 3)
    slot = enc.slot(64)
    outs = []
    for room in (1, 5, 8):  # chunks gathered at once (the value's rows read in order)
        out = np.zeros(len(offsets) * slot, dtype=np.uint8)
        sizes = enc.compress_regions(value.reshape(-1).view(np.uint8), offsets,
                                     np.array(value.strides), dst, np.array([4, 8]), 2, 1,
                                     None, np.empty(room * 64, np.uint8), out)
        chunks = [out[r * slot:r * slot + n].tobytes() for r, n in enumerate(sizes)]
        if codec == "gzip":
            chunks = [c[:4] + c[8:] for c in chunks]
        outs.append(chunks)
    assert outs[0] == outs[1] == outs[2]


def _shard_order_offsets(value, chunks, shard_grid):
    """The whole chunks of ``value`` in the order a sharded write gathers them: shard by
    shard (``shard_grid`` chunks a side each), the chunks of a shard in C order, so that
    a row of the shard is shorter than the value's row of chunks."""
    grid = [s // c for s, c in zip(value.shape, chunks, strict=True)]
    per = [-(-g // k) for g, k in zip(grid, shard_grid, strict=True)]
    out, idxs = [], []
    for s in np.ndindex(*per):
        for i in np.ndindex(*shard_grid):
            idx = tuple(a * k + b for a, k, b in zip(s, shard_grid, i, strict=True))
            if all(j < g for j, g in zip(idx, grid, strict=True)):
                idxs.append(idx)
                out.append(int(np.dot(idx, np.array(chunks) * value.strides)))
    return np.array(out, dtype=np.int64), idxs


@pytest.mark.parametrize("codec", FORMATS)
@pytest.mark.parametrize("chunks", [(3, 24, 8), (2, 20, 5), (5, 40, 16), (1, 24, 256)])
@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 1, 0)])
def test_shard_order_gathers_of_many_rows_are_numcodecs_bytes(codec, chunks, order, perm):
    # chunks of more rows than the copy prefetches ahead (16: the lines it reads ahead
    # run across the end of each plane of a chunk), rows of 16 (and 10: not whole
    # 16-byte blocks; 512: the longest row the gather copies by itself) bytes, gathered
    # a shard's row (2 chunks) at a time out of a value whose rows hold 3 to 5 chunks,
    # or one by one; byte-swapped and transposed layouts take the general copy
    value = _value(tuple(c * g for c, g in zip(chunks, (3, 2, 5), strict=True)), "<u2", 11)
    if chunks[2] == 256:
        value = _value((3, 48, 768), "<u2", 11)
    offsets, idxs = _shard_order_offsets(value, chunks, (2, 2, 2))
    _, dst = _regions(value, chunks, perm)
    nbytes = int(np.prod(chunks)) * 2
    ref = _numcodecs(codec, 1)
    enc = _encode.ChunkEncoder(codec, 1)
    slot = enc.slot(nbytes)
    want = [ref.encode(_expected_chunk(value, idx, chunks, perm, order).view(np.uint8))
            for idx in idxs]
    for room in (1, 2, 3):
        out = np.zeros(len(offsets) * slot, dtype=np.uint8)
        before = int(time.time())
        sizes = enc.compress_regions(value.reshape(-1).view(np.uint8), offsets,
                                     np.array(value.strides, dtype=np.int64), dst,
                                     np.array(chunks, dtype=np.int64), 2,
                                     1 if order == "<" else 2, None,
                                     np.empty(room * nbytes, np.uint8), out)
        after = int(time.time())
        for r, w in enumerate(want):
            _same(codec, out[r * slot:r * slot + sizes[r]], w, before, after)
