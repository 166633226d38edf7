"""Review of h56/warm1t (647821a): small boxes of sharded arrays read with less Python:
the keys of a box's shards kept per chain (``ShardedChain.box_shard_keys``), a cached
shard index taken without ``_index``'s closure (``reader_index``), valid keys
remembered (``storage.local._check_key``) and a file opened straight relative to the
open root (``LocalStore._open_read``), ``normalize_plain``'s three arrays rows of one,
the result not reshaped when no dimension is dropped.

No finding.  Guards (pass on main and on the branch):

* random boxes (integer indices, steps, negative steps) of sharded arrays with missing
  shards, zstd or uncompressed inner chunks, big-endian too, on a ``LocalStore``, read
  what NumPy gives, in a group under a path, as views that own their memory and are
  writeable (the result is not a view of a shared buffer);
* a shard rewritten by another writer between two reads of the same box (another
  array object, so the reader's cached index and kept keys are stale) is read anew;
  a shard deleted by the other writer reads as the fill value, and the array
  ``read_missing_chunks=False`` then refuses it naming the key;
* a store whose root directory is replaced by another one between reads (a moved
  node) reads the new root's files, not the old open root's.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.storage import LocalStore

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@st.composite
def _selection(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    sel: list = []
    for n in shape:
        kind = draw(st.sampled_from(["box", "box", "box", "int", "step", "neg"]))
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a + 1, n))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "step":
            sel.append(slice(a, b, draw(st.integers(2, 3))))
        elif kind == "neg":
            sel.append(slice(b - 1, a - 1 if a else None, -draw(st.integers(1, 2))))
        else:
            sel.append(slice(a, b))
    return tuple(sel)


@SETTINGS
@given(data=st.data(), codec=st.sampled_from(["zstd", "none"]),
       dtype=st.sampled_from(["<u2", "<f8"]), endian=st.sampled_from(["little", "big"]))
def test_boxes_of_sharded_arrays_read_what_numpy_gives(tmp_path_factory, data, codec, dtype,
                                                       endian) -> None:
    where = tmp_path_factory.mktemp("w")
    shape = (13, 10, 9)
    root = zarrfast.open_group(str(where), mode="w")
    a = root.create_array("g/a", shape=shape, dtype=dtype, chunks=(4, 3, 2),
                          shards=(8, 6, 6), fill_value=7,
                          serializer={"name": "bytes", "configuration": {"endian": endian}},
                          compressors=None if codec == "none" else [{"name": "zstd"}])
    model = np.random.default_rng(3).integers(0, 50, size=shape).astype(dtype)
    model[8:, 6:, 6:] = 7  # (a shard never stored)
    model[0:8, 0:6, 0:6] = 7  # (one stored empty: deleted)
    a[...] = model
    b = zarrfast.open_array(str(where / "g" / "a"), mode="r")
    for _ in range(6):
        sel = data.draw(_selection(shape))
        got = b[sel]
        want = model[sel]
        assert got.shape == want.shape, sel
        np.testing.assert_array_equal(got, want, err_msg=str(sel))
        if got.ndim:
            got[...] = 0  # (its own memory: the next read is not changed by this)
    np.testing.assert_array_equal(b[...], model)


def test_a_box_sees_another_writers_shards(tmp_path) -> None:
    shape, box = (16, 16), (slice(3, 9), slice(5, 12))
    kwargs = dict(shape=shape, dtype="<i4", chunks=(4, 4), shards=(8, 8), fill_value=-1,
                  compressors=[{"name": "zstd"}])
    path = str(tmp_path / "a")
    writer = zarrfast.create_array(path, **kwargs)
    model = np.arange(256, dtype="<i4").reshape(shape)
    writer[...] = model
    reader = zarrfast.open_array(path, mode="r")
    strict = zarrfast.open_array(path, mode="r", config={"read_missing_chunks": False})
    for k in range(4):
        np.testing.assert_array_equal(reader[box], model[box])
        np.testing.assert_array_equal(strict[box], model[box])
        # another writer: new values of another compressed size in every shard of the box
        model = (model * 7 + k) % (11 + 1000 * k)
        writer[...] = model
    np.testing.assert_array_equal(reader[box], model[box])
    os.remove(os.path.join(path, "c", "0", "1"))  # (another process deletes a shard)
    model[0:8, 8:16] = -1
    np.testing.assert_array_equal(reader[box], model[box])
    with pytest.raises(Exception, match=r"c/0/1"):
        strict[box]


def test_a_replaced_root_is_read_anew(tmp_path) -> None:
    shape, box = (16, 16), (slice(1, 7), slice(2, 13))
    kwargs = dict(shape=shape, dtype="<i4", chunks=(4, 4), shards=(8, 8), fill_value=0)
    path = tmp_path / "a"
    first = np.arange(256, dtype="<i4").reshape(shape)
    zarrfast.create_array(str(path), **kwargs)[...] = first
    store = LocalStore(path)
    a = zarrfast.open_array(store, mode="r")
    np.testing.assert_array_equal(a[box], first[box])
    second = first[::-1].copy()
    other = tmp_path / "b"
    zarrfast.create_array(str(other), **kwargs)[...] = second
    shutil.move(str(path), str(tmp_path / "old"))
    shutil.move(str(other), str(path))
    opened = a.store if isinstance(a.store, LocalStore) else store
    root = opened._root
    assert root is not None
    root.checked -= 1.0  # (as if a second had passed: past the recheck, _RECHECK_SECONDS)
    np.testing.assert_array_equal(a[box], second[box])
