"""Cold (and warm) random boxes of chunk files and of shards, from the review of
h61/coldbox.

That branch (at e96248c) lets any chunk a file-reading kernel call reads before it has
announced anything find the call cold (8728c1c: a box whose first chunk an earlier box
cached still announces its other chunks), and announces neighbouring ranges of one
shard file as one ``POSIX_FADV_WILLNEED`` (fa3d31a).  It does not join the ``pread``
of neighbouring inner chunks; these tests would guard that too.

Guards (pass on the base and on the branch): boxes of sharded arrays whose shards were
laid out by another writer -- inner chunks in any order in the file, garbage bytes
between them and before the first, inner chunks not stored (the fill value) -- and of
arrays of one file per chunk, some missing, read cold (the files evicted from the page
cache before every read) and warm, at 1 and 2 threads, are NumPy's values and leave no
file open; an inner chunk whose index entry points past its shard's data, or whose
stored bytes are one short, raises an error naming the shard's key (never values read
from a neighbour's bytes).
"""

from __future__ import annotations

import os
import struct

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, needs_cold_reads

pytestmark = needs_cold_reads

EMPTY = 2**64 - 1


def _shard_files(root):
    for dirpath, _, files in os.walk(os.path.join(root, "c")):
        for f in files:
            yield os.path.join(dirpath, f)


def relayout(root, n_inner: int, rng: np.random.Generator, garbage: bool = True) -> None:
    """Rewrite every shard file of the array at ``root`` (index at the end, little-endian
    with crc32c): its stored inner chunks in a random order, random bytes before the
    first and between them when ``garbage``."""
    for path in _shard_files(root):
        data = open(path, "rb").read()
        nidx = n_inner * 16 + 4
        index = np.frombuffer(data[-nidx:-4], dtype="<u8").reshape(n_inner, 2).copy()
        stored = [j for j in range(n_inner) if index[j, 0] != EMPTY]
        order = rng.permutation(stored).tolist()
        parts, pos = [], 0
        new = np.full((n_inner, 2), EMPTY, dtype="<u8")
        for j in order:
            if garbage:
                pad = rng.integers(0, 300, dtype=np.int64)
                parts.append(rng.integers(0, 256, pad, dtype=np.uint8).tobytes())
                pos += int(pad)
            off, nb = int(index[j, 0]), int(index[j, 1])
            parts.append(data[off:off + nb])
            new[j] = (pos, nb)
            pos += nb
        raw = new.tobytes()
        parts.append(raw + struct.pack("<I", crc32c.crc32c(raw)))
        with open(path, "wb") as f:
            f.write(b"".join(parts))


def edit_index(path, n_inner: int, j: int, off_delta: int = 0, nb_delta: int = 0) -> None:
    data = bytearray(open(path, "rb").read())
    nidx = n_inner * 16 + 4
    index = np.frombuffer(bytes(data[-nidx:-4]), dtype="<u8").reshape(n_inner, 2).copy()
    index[j, 0] = int(index[j, 0]) + off_delta
    index[j, 1] = int(index[j, 1]) + nb_delta
    raw = index.tobytes()
    data[-nidx:] = raw + struct.pack("<I", crc32c.crc32c(raw))
    with open(path, "wb") as f:
        f.write(bytes(data))


def _boxes(data, shape, most):
    out = []
    for _ in range(data.draw(st.integers(1, 6), label="boxes")):
        sel = []
        for s, m in zip(shape, most, strict=True):
            n = data.draw(st.integers(1, min(s, m)))
            a = data.draw(st.integers(0, s - n))
            sel.append(slice(a, a + n))
        out.append(tuple(sel))
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_boxes_of_shards_laid_out_by_another_writer(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("sb")
    inner = (data.draw(st.integers(2, 5)), data.draw(st.integers(2, 5)),
             data.draw(st.integers(3, 6)))
    per = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)),
           data.draw(st.integers(1, 3)))
    shard = tuple(i * p for i, p in zip(inner, per, strict=True))
    shape = tuple(s * data.draw(st.integers(1, 2)) - data.draw(st.integers(0, s - 1))
                  for s in shard)
    dtype = data.draw(st.sampled_from(["<u2", ">i4", "<f8", "|u1"]))
    fill = 3
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 200, shape).astype(dtype)
    # inner chunks left at the fill value: not stored
    grid = [-(-s // c) for s, c in zip(shape, inner, strict=True)]
    for lin in rng.choice(int(np.prod(grid)), size=int(np.prod(grid)) // 3, replace=False):
        g = np.unravel_index(int(lin), grid)
        x[tuple(slice(i * c, (i + 1) * c) for i, c in zip(g, inner, strict=True))] = fill
    path = root / "a.zarr"
    a = zarrfast.create_array(LocalStore(path), shape=shape, chunks=inner, shards=shard,
                              dtype=dtype, fill_value=fill)
    a[...] = x
    if data.draw(st.booleans(), label="relayout"):
        relayout(path, int(np.prod(per)), rng, garbage=data.draw(st.booleans()))
    b = zarrfast.open_array(LocalStore(path), mode="r")
    most = tuple(3 * c for c in inner)
    for threads in (1, 2):
        with config.set(threads=threads):
            for sel in _boxes(data, shape, most):
                np.testing.assert_array_equal(b[sel], x[sel], err_msg=repr(sel))
                evict(path)
                np.testing.assert_array_equal(b[sel], x[sel], err_msg=f"cold {sel!r}")
    assert held_open(path / "c") == []


@pytest.mark.parametrize("threads", [1, 2])
def test_random_boxes_of_chunk_files_cold(tmp_path, threads):
    shape, chunks = (40, 36, 30), (4, 4, 5)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 60000, shape).astype("<u2")
    path = tmp_path / "a.zarr"
    a = zarrfast.create_array(LocalStore(path), shape=shape, chunks=chunks, dtype="<u2",
                              fill_value=9)
    a[...] = x
    for g in ((0, 0, 0), (3, 4, 2), (9, 8, 5), (5, 5, 5)):
        os.remove(path / "c" / "/".join(map(str, g)))
        x[tuple(slice(i * c, (i + 1) * c) for i, c in zip(g, chunks, strict=True))] = 9
    b = zarrfast.open_array(LocalStore(path), mode="r")
    with config.set(threads=threads):
        for _ in range(40):
            sel = []
            for s, c in zip(shape, chunks, strict=True):
                n = int(rng.integers(1, 2 * c + 1))
                lo = int(rng.integers(0, s - n + 1))
                sel.append(slice(lo, lo + n))
            sel = tuple(sel)
            evict(path)
            np.testing.assert_array_equal(b[sel], x[sel], err_msg=repr(sel))
    assert held_open(path / "c") == []


def _sharded(tmp_path, threads_unused=None):
    shape, inner, shard = (16, 16), (4, 4), (8, 8)
    x = (np.arange(256, dtype="<u4").reshape(shape) * 7 + 1)
    path = tmp_path / "s.zarr"
    a = zarrfast.create_array(LocalStore(path), shape=shape, chunks=inner, shards=shard,
                              dtype="<u4", fill_value=0)
    a[...] = x
    return path, x


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cold", [False, True])
@pytest.mark.parametrize("how", ["past_end", "one_short", "shifted"])
def test_a_bad_inner_chunk_entry_names_the_shard(tmp_path, threads, cold, how):
    path, x = _sharded(tmp_path)
    shard = path / "c" / "0" / "1"
    size = os.path.getsize(shard)
    # inner chunk (1, 0) of shard (0, 1): its entry damaged
    data = open(shard, "rb").read()
    index = np.frombuffer(data[-(4 * 16 + 4):-4], dtype="<u8").reshape(4, 2)
    off, nb = int(index[2, 0]), int(index[2, 1])
    if how == "past_end":
        edit_index(shard, 4, 2, nb_delta=size)  # (ends past the shard's data)
    elif how == "one_short":
        edit_index(shard, 4, 2, nb_delta=-1)
    else:  # (starts one byte late: the frame's magic number is not at its start)
        edit_index(shard, 4, 2, off_delta=1, nb_delta=-1)
    assert off >= 0 and nb > 1
    b = zarrfast.open_array(LocalStore(path), mode="r")
    with config.set(threads=threads):
        if cold:
            evict(path)
        with pytest.raises(ZarrfastError, match="c/0/1"):
            b[4:8, 8:16]
        # the other shards' boxes still read
        np.testing.assert_array_equal(b[0:8, 0:8], x[0:8, 0:8])
        np.testing.assert_array_equal(b[8:16, 4:12], x[8:16, 4:12])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("garbage", [False, True])
def test_small_boxes_of_relaid_shards_cold_and_warm(tmp_path, threads, garbage):
    """Boxes of 1 to 8 inner chunks (the one-call kernel's, ``decode_box_shards``) of
    shards whose inner chunks are in a random order, some not stored, with or without
    garbage between them: cold and warm, NumPy's values."""
    shape, inner, per = (30, 30, 30), (4, 5, 6), (2, 2, 2)
    shard = tuple(i * p for i, p in zip(inner, per, strict=True))
    rng = np.random.default_rng(11)
    x = rng.integers(0, 100, shape).astype("<u2")
    x[0:4, 0:5, 0:6] = 3  # (not stored)
    x[8:12, 10:15, 12:18] = 3
    path = tmp_path / "a.zarr"
    a = zarrfast.create_array(LocalStore(path), shape=shape, chunks=inner, shards=shard,
                              dtype="<u2", fill_value=3)
    a[...] = x
    relayout(path, 8, rng, garbage=garbage)
    b = zarrfast.open_array(LocalStore(path), mode="r")
    with config.set(threads=threads):
        for _ in range(40):
            sel = []
            for s, c in zip(shape, inner, strict=True):
                n = int(rng.integers(1, 2 * c))
                lo = int(rng.integers(0, s - n + 1))
                sel.append(slice(lo, lo + n))
            sel = tuple(sel)
            np.testing.assert_array_equal(b[sel], x[sel], err_msg=f"warm {sel!r}")
            evict(path)
            np.testing.assert_array_equal(b[sel], x[sel], err_msg=f"cold {sel!r}")
    assert held_open(path / "c") == []
