"""Whole-chunk blosc writes (``blosc_compress_regions``: copy + compress in one ``nogil``
call per batch, into a per-thread buffer that the local store is done with when
``set_many`` returns) against the per-chunk path, numcodecs' bytes and zarr-python."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.kernels import reference as _reference
from zarrfast.storage import LocalStore, MemoryStore

pytestmark = pytest.mark.skipif(_kernels.blosc_compress_regions is None,
                                reason="c-blosc compression is not bound")

SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def _chunks(path):
    """Every stored chunk file below ``path`` (key -> bytes)."""
    store = LocalStore(path)
    return {k: store.get(k) for k in store.list() if k.startswith("c/")}


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(0, 3, int(np.prod(shape))), dtype=np.int64)
    return (x % 5000).astype(dtype).reshape(shape)


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("shuffle", ["bitshuffle", "shuffle", "noshuffle"])
@pytest.mark.parametrize("threads", [1, 2])
def test_blosc_write_bytes_are_numcodecs_and_zarr_python_reads_them(tmp_path, endian, shuffle,
                                                                    threads):
    import zarr

    shape, chunks = (37, 40, 24), (8, 16, 8)  # edge chunks on two dimensions
    x = _values(shape, "<u2")
    comp = zarrfast.codecs.BloscCodec("lz4", 5, shuffle, 2, 0)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=shape, chunks=chunks,
                              dtype="uint16", compressors=[comp],
                              serializer=zarrfast.codecs.BytesCodec(endian))
    assert a._chain.blosc_settings is not None
    with config.set(threads=threads):
        a[...] = x
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...], x)
    ref = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=SHUFFLES[shuffle], typesize=2)
    order = "<" if endian == "little" else ">"
    stored = _chunks(str(tmp_path / "a.zarr"))
    assert len(stored) == 5 * 3 * 3

    def check():  # (numcodecs' context path: off the main thread)
        for key, got in stored.items():
            idx = [int(c) for c in key.split("/")[1:]]
            block = np.zeros(chunks, dtype=f"{order}u2")  # padding: the fill value 0
            sl = tuple(slice(i * c, min((i + 1) * c, s))
                       for i, c, s in zip(idx, chunks, shape, strict=True))
            block[tuple(slice(0, s.stop - s.start) for s in sl)] = x[sl]
            assert bytes(got) == bytes(ref.encode(block.view(np.uint8))), key

    with ThreadPoolExecutor(1) as pool:
        pool.submit(check).result()


def test_blosc_write_matches_the_per_chunk_path_and_skips_fill_chunks(tmp_path):
    shape, chunks = (64, 48), (16, 16)
    x = _values(shape, "<i4", seed=3)
    x[16:32, 16:32] = 7  # one chunk equal to the fill value
    kwargs = dict(shape=shape, chunks=chunks, dtype="<i4", fill_value=7,
                  compressors=[zarrfast.codecs.BloscCodec("zstd", 3, "shuffle", 4, 0)])
    fast = zarrfast.create_array(str(tmp_path / "fast.zarr"), **kwargs)
    slow = zarrfast.create_array(MemoryStore(), **kwargs)  # (no copies_values: per chunk)
    fast[...] = x
    slow[...] = x
    got = _chunks(str(tmp_path / "fast.zarr"))
    assert "c/1/1" not in got and len(got) == 4 * 3 - 1
    for key, value in got.items():
        assert bytes(value) == bytes(slow.store.get(key)), key
    np.testing.assert_array_equal(fast[...], x)
    # with write_empty_chunks the fill chunk is stored, as the per-chunk path stores it
    full = zarrfast.create_array(str(tmp_path / "full.zarr"), config={"write_empty_chunks": True},
                                 **kwargs)
    full[...] = x
    assert "c/1/1" in _chunks(str(tmp_path / "full.zarr"))
    # a later write of the fill value deletes the stored chunk
    fast[0:16, 0:16] = 7
    assert "c/0/0" not in _chunks(str(tmp_path / "fast.zarr"))
    x[0:16, 0:16] = 7
    np.testing.assert_array_equal(fast[...], x)


def test_blosc_partial_and_strided_writes_keep_the_per_chunk_path(tmp_path):
    shape, chunks = (40, 40), (8, 8)
    x = _values(shape, "<u2", seed=5)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=shape, chunks=chunks,
                              dtype="<u2", compressors=[zarrfast.codecs.BloscCodec(
                                  "lz4", 5, "bitshuffle", 2, 0)])
    a[...] = x
    y = x.copy()
    a[3:29, 5:40] = 11  # scalar: partial and whole chunks
    y[3:29, 5:40] = 11
    a[::3, 1:17] = x[::3, 1:17] + 1
    y[::3, 1:17] = x[::3, 1:17] + 1
    a[8:24, 8:32] = x[:16, :24]  # whole chunks from a shifted source
    y[8:24, 8:32] = x[:16, :24]
    np.testing.assert_array_equal(a[...], y)


def _regions_case(swap_unit=1, fill=None):
    src = _values((12, 10, 16), "<u2", seed=1)
    flat = src.reshape(-1).view(np.uint8)
    strides = np.array(src.strides, np.int64)
    shape = np.array([4, 5, 8], np.int64)
    offsets = np.array([0, 4 * strides[0] + 5 * strides[1], 8 * strides[0] + 8 * strides[2]],
                       np.int64)
    dst_strides = np.array([5 * 8 * 2, 8 * 2, 2], np.int64)
    nb = 4 * 5 * 8 * 2
    return (flat, offsets, strides, dst_strides, shape, 2, swap_unit, fill,
            np.empty(nb, np.uint8), np.zeros(3 * (nb + 16), np.uint8), 5, 2, 2, b"lz4", 0)


@pytest.mark.parametrize("swap_unit", [1, 2])
def test_blosc_compress_regions_twin(swap_unit):
    args = _regions_case(swap_unit)
    sizes = _kernels.blosc_compress_regions(*args)
    twin_args = list(_regions_case(swap_unit))
    with ThreadPoolExecutor(1) as pool:
        twin_sizes = pool.submit(_reference.blosc_compress_regions, *twin_args).result()
    np.testing.assert_array_equal(sizes, twin_sizes)
    slot = args[8].nbytes + 16
    for r, n in enumerate(sizes.tolist()):
        assert bytes(args[9][r * slot:r * slot + n]) == bytes(twin_args[9][r * slot:r * slot + n])
        back = np.frombuffer(numcodecs.Blosc().decode(bytes(args[9][r * slot:r * slot + n])),
                             np.uint8)
        want = np.empty(args[8].nbytes, np.uint8)
        _kernels.copy_region(args[0], int(args[1][r]), args[2], want, 0, args[3], args[4], 2,
                             swap_unit)
        np.testing.assert_array_equal(back, want)


def _row_of_chunks_case(chunks, grid, order, scratch_chunks, swap_unit=1, fill_at=()):
    """Every chunk of a C-ordered (or, with ``order="F"``, F-ordered) source of
    ``grid`` chunks, in C order of the grid, with a scratch buffer of
    ``scratch_chunks`` chunks; the chunks at ``fill_at`` hold only zeros."""
    shape = tuple(c * n for c, n in zip(chunks, grid, strict=True))
    src = np.asfortranarray(_values(shape, "<u2", seed=3)) if order == "F" else \
        _values(shape, "<u2", seed=3)
    for idx in fill_at:
        src[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks, strict=True))] = 0
    flat = src.reshape(-1, order="A").view(np.uint8)
    strides = np.array(src.strides, np.int64)
    offsets = np.array([sum(i * c * s for i, c, s in zip(idx, chunks, strides.tolist(),
                                                         strict=True))
                        for idx in np.ndindex(*grid)], np.int64)
    nb = int(np.prod(chunks)) * 2
    dst = np.array([int(np.prod(chunks[d + 1:])) * 2 for d in range(len(chunks))], np.int64)
    return (flat, offsets, strides, dst, np.array(chunks, np.int64), 2, swap_unit,
            np.zeros(2, np.uint8), np.full(scratch_chunks * nb + 5, 0xAB, np.uint8),
            np.zeros(len(offsets) * (nb + 16), np.uint8), 5, 2, 2, b"lz4", 0)


@pytest.mark.parametrize("chunks,grid,order,scratch_chunks,swap_unit,fill_at", [
    ((4, 6, 8), (3, 2, 5), "C", 8, 1, [(0, 0, 1), (2, 1, 4)]),  # rows of 5 in groups of 8
    ((4, 6, 8), (3, 2, 5), "C", 3, 1, [(1, 1, 2)]),  # groups of 3, then 2
    ((4, 6, 8), (3, 2, 5), "C", 1, 1, []),  # room for one chunk: one at a time
    ((4, 6, 8), (3, 2, 5), "F", 8, 1, []),  # source rows not contiguous: one at a time
    ((4, 6, 8), (3, 2, 5), "C", 8, 2, []),  # bytes swapped: one at a time
    ((16,), (9,), "C", 4, 1, [(4,)]),  # 1-d: one long row
    ((1, 7, 3), (2, 3, 4), "C", 16, 1, []),  # a dimension of one
])
def test_blosc_compress_regions_gathers_rows_of_chunks_as_the_twin(
        chunks, grid, order, scratch_chunks, swap_unit, fill_at):
    """With room for several chunks the kernel copies chunks that follow each other
    along the last dimension together: every chunk's bytes (and which are the fill
    value) stay those of the twin, chunk by chunk, and those numcodecs decodes back."""
    args = _row_of_chunks_case(chunks, grid, order, scratch_chunks, swap_unit, fill_at)
    twin = list(_row_of_chunks_case(chunks, grid, order, 1, swap_unit, fill_at))
    sizes = _kernels.blosc_compress_regions(*args)
    with ThreadPoolExecutor(1) as pool:
        want = pool.submit(_reference.blosc_compress_regions, *twin).result()
    np.testing.assert_array_equal(sizes, want)
    assert sorted(np.flatnonzero(sizes < 0).tolist()) == sorted(
        int(np.ravel_multi_index(i, grid)) for i in fill_at)
    nb = int(np.prod(chunks)) * 2
    slot = nb + 16
    for r, n in enumerate(sizes.tolist()):
        if n < 0:
            continue
        got = bytes(args[9][r * slot:r * slot + n])
        assert got == bytes(twin[9][r * slot:r * slot + n]), f"chunk {r}"
        chunk = np.empty(nb, np.uint8)
        _kernels.copy_region(args[0], int(args[1][r]), args[2], chunk, 0, args[3], args[4],
                             2, swap_unit)
        np.testing.assert_array_equal(np.frombuffer(numcodecs.Blosc().decode(got), np.uint8),
                                      chunk)
    assert (args[8][scratch_chunks * nb:] == 0xAB).all()  # nothing written past the chunks


def test_blosc_compress_regions_fill_and_errors():
    base = list(_regions_case())
    base[0] = np.zeros_like(base[0])
    base[7] = np.zeros(2, np.uint8)
    for fn in (_kernels.blosc_compress_regions, _reference.blosc_compress_regions):
        args = list(base)
        args[9] = np.zeros_like(base[9])
        assert fn(*args).tolist() == [-1, -1, -1]
        bad = list(args)
        bad[9] = np.zeros(100, np.uint8)  # out too short
        with pytest.raises(ValueError, match="out holds"):
            fn(*bad)
        bad = list(args)
        bad[1] = np.array([10**6], np.int64)  # outside src
        with pytest.raises(ValueError):
            fn(*bad)
        bad = list(args)
        bad[8] = np.empty(7, np.uint8)  # no room for a whole chunk
        with pytest.raises(ValueError, match="must hold a whole chunk"):
            fn(*bad)
        bad = list(args)
        bad[10] = 12  # clevel
        with pytest.raises(ValueError, match="bad settings"):
            fn(*bad)
        bad = list(args)
        bad[7] = np.zeros(3, np.uint8)  # a fill that is not one item
        with pytest.raises(ValueError, match="fill holds 3 bytes, an item 2"):
            fn(*bad)


def test_whole_chunks_of_a_local_store_take_the_batched_kernel(tmp_path, monkeypatch):
    from zarrfast.engine import chunked

    calls = []
    real = _kernels.blosc_compress_regions

    def counting(*args):
        calls.append(len(args[1]))
        return real(*args)

    monkeypatch.setattr(chunked._kernels, "blosc_compress_regions", counting)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(20, 16), chunks=(8, 8),
                              dtype="<u2", compressors=[zarrfast.codecs.BloscCodec(
                                  "lz4", 5, "bitshuffle", 2, 0)])
    x = _values((20, 16), "<u2", seed=9)
    a[...] = x
    assert sum(calls) == 4  # the 2 edge chunks of the last row go chunk by chunk
    np.testing.assert_array_equal(a[...], x)


@pytest.mark.parametrize("batch, want", [(16, [10] * 3), (64, [30]), (8, [8, 8, 8, 6])])
def test_batches_of_the_batched_kernel_hold_whole_rows_of_chunks(tmp_path, monkeypatch,
                                                                  batch, want):
    # 3 rows of 10 chunks: batches of whole rows when a batch holds a row (else as
    # many chunks as it holds), each call with a buffer to gather a whole row into;
    # the bytes as chunk by chunk
    from zarrfast.engine import chunked

    calls = []
    real = _kernels.blosc_compress_regions

    def spying(*args):
        calls.append((args[1].tolist(), len(args[8])))
        return real(*args)

    monkeypatch.setattr(chunked, "WRITE_BATCH", batch)
    x = _values((12, 80), "<u2", seed=3)
    comp = zarrfast.codecs.BloscCodec("lz4", 5, "bitshuffle", 2, 0)
    paths = {}
    for how in ("batched", "per chunk"):
        paths[how] = str(tmp_path / f"{how}.zarr")
        a = zarrfast.create_array(paths[how], shape=(12, 80), chunks=(4, 8), dtype="<u2",
                                  compressors=[comp])
        with monkeypatch.context() as m:
            if how == "batched":
                m.setattr(chunked._kernels, "blosc_compress_regions", spying)
            else:
                m.setattr(a._chain, "blosc_settings", None)
            with config.set(threads=1):
                a[...] = x
    assert [len(offsets) for offsets, _ in calls] == want
    row = 4 * 80 * 2  # bytes from one row of chunks to the next in the value
    for offsets, room in calls:
        assert room == 10 * 4 * 8 * 2
        assert offsets[0] % row == 0 or batch < 10
    assert _chunks(paths["batched"]) == _chunks(paths["per chunk"])


def test_a_c_blosc_failure_in_the_batched_kernel_is_a_codec_error(tmp_path, monkeypatch):
    from zarrfast.engine import chunked
    from zarrfast.errors import CodecError

    def failing(*args):
        raise RuntimeError("blosc_compress_regions: c-blosc failed (-1)")

    monkeypatch.setattr(chunked._kernels, "blosc_compress_regions", failing)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(16, 16), chunks=(8, 8),
                              dtype="<u2", compressors=[zarrfast.codecs.BloscCodec(
                                  "lz4", 5, "bitshuffle", 2, 0)])
    with pytest.raises(CodecError, match="cannot compress chunks of 128 bytes"):
        a[...] = _values((16, 16), "<u2")


@pytest.mark.parametrize("selection, want", [((slice(None), slice(None)), 10),
                                              ((slice(0, 4), slice(8, 40)), 4),
                                              ((slice(None), slice(0, 80, 16)), 5),
                                              ((3, 17), 1)])
def test_row_chunks_counts_the_chunks_a_row_of_the_touched_grid_has(selection, want):
    from zarrfast.engine.chunked import Projection
    from zarrfast.engine.selection import normalize_basic

    a = zarrfast.create_array({}, shape=(12, 80), chunks=(4, 8), dtype="<u2")
    proj = Projection((12, 80), a._chain, normalize_basic(selection, (12, 80)))
    assert proj.row_chunks == want  # (a step of 16 touches every other chunk)


def test_the_first_blosc_write_of_a_process_does_not_import_numpy_ma(tmp_path,
                                                                     subprocess_cwd):
    # (np.unique imports numpy.ma on its first call: 15-20 ms of the first write here)
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import zarrfast
        from zarrfast.codecs import BloscCodec
        assert "numpy.ma" not in sys.modules
        a = zarrfast.create_array(sys.argv[1], shape=(64, 256), chunks=(16, 32),
                                  dtype="<u2", compressors=[BloscCodec("lz4", 5, "bitshuffle", 2, 0)])
        x = np.arange(64 * 256, dtype="<u2").reshape(64, 256)
        a[...] = x
        assert a._chain.blosc_settings is not None
        print(sorted(m for m in sys.modules if m.split(".")[:2] == ["numpy", "ma"]))
        np.testing.assert_array_equal(zarrfast.open_array(sys.argv[1])[...], x)
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.zarr")],
                          capture_output=True, text=True, timeout=120, cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
