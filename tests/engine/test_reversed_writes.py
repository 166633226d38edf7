"""Writes through negative steps (``a[:, ::-1] = v``) store each element where NumPy puts it.

A shard of uncompressed inner chunks written whole to a local directory was written
straight from the value (``sharded.write_shard_direct``) without looking at the step: a
write with a negative step stored every inner chunk's elements in the value's order,
reversed along that dimension, with no error (found by a Hypothesis case of
``test_get_many_properties``, falsifying example ``(1, 2, 1)`` int16 sharded, written
``a[:, ::-1, :] = data[:, ::-1, :]``, read back ``[4, 3]`` for ``[3, 4]``).
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, ShardingCodec, ZstdCodec
from zarrfast.storage import LocalStore, MemoryStore


def _array(tmp_path, store: str, shape, chunks, sharded: bool, zstd: bool, loc: str = "end",
           endian: str = "little", order: str = "C", per_shard=None):
    where = (LocalStore(os.path.join(str(tmp_path), "a.zarr")) if store == "local"
             else MemoryStore())
    if sharded:
        inner = (BytesCodec(endian=endian),) + ((ZstdCodec(),) if zstd else ())
        per_shard = per_shard or (1,) * len(chunks)
        kw = dict(chunks=tuple(c * k for c, k in zip(chunks, per_shard, strict=True)),
                  compressors=None,
                  serializer=ShardingCodec(chunk_shape=chunks, codecs=inner,
                                           index_location=loc))
    else:
        kw = dict(chunks=chunks, serializer=BytesCodec(endian=endian))
        if not zstd:
            kw["compressors"] = None
    return zarrfast.create_array(where, shape=shape, dtype="<i2", fill_value=-1,
                                 config={"order": order}, **kw)


@pytest.mark.parametrize("store", ["local", "memory"])
@pytest.mark.parametrize("sharded,zstd", [(True, False), (True, True), (False, False),
                                          (False, True)])
@pytest.mark.parametrize("loc", ["start", "end"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_a_whole_array_written_reversed_along_one_axis(tmp_path, store, sharded, zstd, loc,
                                                       axis):
    """Every (inner) chunk written whole, through a step of -1 along ``axis``: shards of
    uncompressed inner chunks in a local directory failed (6 of these cases)."""
    if not sharded and loc == "start":
        pytest.skip("the index location is a shard's")
    shape = (4, 6, 2)
    a = _array(tmp_path, store, shape, (2, 3, 2), sharded, zstd, loc, per_shard=(2, 2, 1))
    data = np.arange(np.prod(shape), dtype="<i2").reshape(shape) + 3
    rev = [slice(None)] * 3
    rev[axis] = slice(None, None, -1)
    a[tuple(rev)] = data[tuple(rev)]  # (the same array, written back to front)
    np.testing.assert_array_equal(a[...], data)
    b = zarrfast.open_array(a.store, mode="r")  # (a fresh array: nothing cached)
    np.testing.assert_array_equal(b[...], data)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), store=st.sampled_from(["local", "memory"]),
       sharded=st.booleans(), zstd=st.booleans(), loc=st.sampled_from(["start", "end"]),
       endian=st.sampled_from(["little", "big"]), order=st.sampled_from(["C", "F"]))
def test_writes_with_any_steps_equal_numpy(tmp_path_factory, data, store, sharded, zstd, loc,
                                           endian, order):
    """Boxes written through slices of any sign and step (whole chunks, whole shards,
    partial ones, edge ones), then read back: as NumPy assigns them."""
    tmp = tmp_path_factory.mktemp("w")
    ndim = data.draw(st.integers(1, 3))
    chunks = tuple(data.draw(st.integers(1, 3)) for _ in range(ndim))
    shape = tuple(data.draw(st.integers(1, 8)) for _ in range(ndim))
    per_shard = tuple(data.draw(st.integers(1, 2)) for _ in range(ndim))
    # (shapes that are whole shards too: no edge, where the direct path writes)
    if data.draw(st.booleans()):
        shape = tuple(c * k * data.draw(st.integers(1, 2))
                      for c, k in zip(chunks, per_shard, strict=True))
    a = _array(tmp, store, shape, chunks, sharded, zstd, loc, endian, order, per_shard)
    ref = np.full(shape, -1, dtype="<i2")
    for k in range(data.draw(st.integers(1, 3))):
        sel = []
        for n in shape:
            step = data.draw(st.sampled_from([-1, 1, -1, 1, -2, 2, -3, 3]))
            lo, hi = ((0, n) if data.draw(st.booleans())  # (the whole dimension)
                      else sorted(data.draw(st.integers(0, n)) for _ in range(2)))
            if step > 0:
                sel.append(slice(lo, hi, step))
            elif hi > lo:  # (from hi - 1 down to lo)
                sel.append(slice(hi - 1, lo - 1 if lo else None, step))
            else:
                sel.append(slice(lo, lo))
        sel_t = tuple(sel)
        value = (np.arange(ref[sel_t].size, dtype="<i2").reshape(ref[sel_t].shape)
                 + 100 * (k + 1))
        a[sel_t] = value
        ref[sel_t] = value
    np.testing.assert_array_equal(a[...], ref)
    np.testing.assert_array_equal(zarrfast.open_array(a.store, mode="r")[...], ref)


def test_the_cases_of_the_hypothesis_example(tmp_path):
    """The falsifying example, and its neighbours: one shard of one inner chunk."""
    for loc, shape in itertools.product(["start", "end"], [(1, 2, 1), (1, 4, 1)]):
        where = LocalStore(os.path.join(str(tmp_path), f"{loc}{shape[1]}.zarr"))
        a = zarrfast.create_array(
            where, shape=shape, dtype="<i2", fill_value=1, chunks=(1, 2, 1),
            compressors=None, serializer=ShardingCodec(
                chunk_shape=(1, 2, 1), codecs=(BytesCodec(),), index_location=loc))
        data = (np.arange(np.prod(shape)).reshape(shape) + 3).astype("<i2")
        a[:, ::-1, :] = data[:, ::-1, :]
        np.testing.assert_array_equal(zarrfast.open_array(where, mode="r")[...], data)
