"""Blosc writes (the gather fused with the shuffle), sharded and small-files writes,
from the review of h60/writes60.

That branch changes how whole chunks are shuffled and compressed into blosc frames by
zarrfast's own encoder (``src_ext/zf_shuffle.h``: items of 2 bytes bit-shuffled 64 at a
time, 8 bytes of each bit row stored at once; ``_encode.pyx``, ``_gather.pxd``).

Guards (pass on main and on the branch), at 1 and 2 threads: every chunk file a write
stores is, byte for byte, what ``numcodecs.Blosc`` makes of that chunk's bytes -- chunks
of 1 to ~5000 items (around blosc's blocks, the kernel's 1024-item tiles, its groups of
64 and 32 items and the items left over after the last group of 8), items of 1, 2, 4
and 8 bytes, little- and big-endian, bit-, byte- and no shuffle, lz4 and zstd, blosc's
own block size or a small one, C and F order, edge chunks, sharded or not -- and the
array reads back NumPy's values.
"""

from __future__ import annotations

import numcodecs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import BloscCodec
from zarrfast.storage import LocalStore

_SHUFFLES = {"noshuffle": numcodecs.Blosc.NOSHUFFLE, "shuffle": numcodecs.Blosc.SHUFFLE,
             "bitshuffle": numcodecs.Blosc.BITSHUFFLE}


@st.composite
def layouts(draw):
    itemsize = draw(st.sampled_from([2, 2, 2, 1, 4, 8]))
    dtype = np.dtype(f"{draw(st.sampled_from(['<', '>']))}u{itemsize}")
    # items per chunk: the last dimension's chunk times the first's
    inner = draw(st.one_of(st.integers(1, 5000),
                           st.sampled_from([63, 64, 65, 95, 96, 1023, 1024, 1025, 1032,
                                            2048 + 40, 4096 + 8, 4096 + 7])))
    rows = draw(st.integers(1, 3))
    chunks = (rows, inner)
    shape = (rows * draw(st.integers(1, 3)) - draw(st.integers(0, rows - 1)),
             inner * draw(st.integers(1, 2)) - draw(st.integers(0, inner - 1)))
    shards = (chunks[0] * draw(st.integers(1, 2)), chunks[1]) if draw(st.booleans()) else None
    shuffle = draw(st.sampled_from(["bitshuffle", "bitshuffle", "shuffle", "noshuffle"]))
    cname = draw(st.sampled_from(["lz4", "zstd"]))
    blocksize = draw(st.sampled_from([0, 0, 256, 1024]))
    order = draw(st.sampled_from(["C", "F"]))
    return shape, chunks, shards, dtype, shuffle, cname, blocksize, order


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(layout=layouts(), seed=st.integers(0, 2**32 - 1), threads=st.sampled_from([1, 2]),
       bits=st.sampled_from([3, 11, 16]))
def test_blosc_chunk_files_are_numcodecs_bytes(tmp_path_factory, layout, seed, threads,
                                               bits):
    shape, chunks, shards, dtype, shuffle, cname, blocksize, order = layout
    rng = np.random.default_rng(seed)
    top = min(2 ** bits, 2 ** (8 * dtype.itemsize))
    x = rng.integers(0, top, shape, dtype=np.uint64).astype(dtype)
    codec = BloscCodec(cname=cname, clevel=5, shuffle=shuffle, typesize=dtype.itemsize,
                       blocksize=blocksize)
    kw: dict = {"serializer": {"name": "bytes", "configuration": {
        "endian": "big" if dtype.byteorder == ">" else "little"}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    root = tmp_path_factory.mktemp("w")
    store = LocalStore(str(root / "a.zarr"))
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, shards=shards, dtype=dtype,
                              fill_value=0, compressors=[codec], config={"write_empty_chunks": True},
                              **kw)
    with config.set(threads=threads):
        a[...] = x
    np.testing.assert_array_equal(a[...], x)
    if shards is not None:
        return _check_shards(a, x, chunks, shuffle, cname, blocksize, order)
    ref = numcodecs.Blosc(cname=cname, clevel=5, shuffle=_SHUFFLES[shuffle],
                          blocksize=blocksize)
    n0, n1 = (-(-s // c) for s, c in zip(shape, chunks, strict=True))
    for i in range(n0):
        for j in range(n1):
            got = bytes(store.get(f"c/{i}/{j}"))
            assert got == _reference(ref, x, chunks, i, j, order), (i, j)


def _reference(ref, x, chunks, i, j, order) -> bytes:
    """numcodecs' frame of chunk (i, j) of ``x``: padded with the fill value (0),
    transposed for F order, in the array's byte order."""
    block = np.zeros(chunks, x.dtype)
    part = x[i * chunks[0]:(i + 1) * chunks[0], j * chunks[1]:(j + 1) * chunks[1]]
    block[:part.shape[0], :part.shape[1]] = part
    if order == "F":
        block = block.T
    raw = np.ascontiguousarray(block)
    # (numcodecs takes the typesize from the buffer's items)
    return bytes(ref.encode(raw))


def _check_shards(a, x, chunks, shuffle, cname, blocksize, order) -> None:
    ref = numcodecs.Blosc(cname=cname, clevel=5, shuffle=_SHUFFLES[shuffle],
                          blocksize=blocksize)
    layout = a._chain.layout
    sh = a.shards
    for key in a.store.list():
        if not key.startswith("c/"):
            continue
        si, sj = (int(p) for p in key.split("/")[1:])
        data = bytes(a.store.get(key))
        index = layout.index_of_shard(np.frombuffer(data, dtype=np.uint8), key)
        per = (sh[0] // chunks[0], sh[1] // chunks[1])
        for lin, (off, nb) in enumerate(index.tolist()):
            ci, cj = divmod(lin, per[1])
            i, j = si * per[0] + ci, sj * per[1] + cj
            if i * chunks[0] >= x.shape[0] or j * chunks[1] >= x.shape[1]:
                continue
            assert data[off:off + nb] == _reference(ref, x, chunks, i, j, order), (key, i, j)
