"""Batches of basic selections (``Array.get_many``, ``zarrfast.get_many``), from the
review of h59/warm59.

That branch plans a batch with fewer Python steps: plain selections normalized by one
kernel call (``normalize_plain``, which also says they are basic), boxes inside one chunk
projected without the walk over each box's chunks, one group without a key per
selection, and the chunks' distinctness told by one sort before ``np.unique``.
Guards (pass on main and on the branch): Hypothesis draws batches of tiles (inside one
chunk or not, repeated, overlapping: chunks shared by several selections), steps
(negative ones too), ints that drop dimensions, of regular and sharded arrays in C and
F order, with missing chunks; every result equals NumPy's, into a stacked ``out`` too,
and a batch of several arrays of one layout gives each array's values.  A batch that
touches a missing chunk of an array refusing missing chunks names it; a selection that
is not plain (NumPy integers, bools) is read or refused as ``a[sel]`` is.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import MemoryStore

SHAPE = (23, 18, 10)
CHUNKS = (4, 6, 5)
FILL = -3


def _array(store, data, sharded: bool, order: str, path: str | None = None):
    kw: dict = {"shards": (8, 12, 10)} if sharded else {}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [2, 1, 0]}}]
    a = zarrfast.create_array(store, name=path, shape=SHAPE, chunks=CHUNKS,
                              dtype=data.dtype, fill_value=FILL, **kw)
    a[...] = data
    a[4:8, 6:12, 0:5] = FILL  # (an inner chunk of the fill value: not stored)
    if not sharded:
        assert not a.store.exists(f"{path + '/' if path else ''}c/1/1/0")
    return a


def _tile(draw):
    """A basic selection of SHAPE: a box (often inside one chunk), steps, ints."""
    sel = []
    for n, c in zip(SHAPE, CHUNKS, strict=True):
        kind = draw(st.sampled_from(["in_chunk", "in_chunk", "box", "int", "step", "all"]))
        if kind == "in_chunk":
            k = draw(st.integers(0, (n - 1) // c))
            a = draw(st.integers(k * c, min(n, (k + 1) * c) - 1))
            b = draw(st.integers(a + 1, min(n, (k + 1) * c)))
            sel.append(slice(a, b))
        elif kind == "box":
            a = draw(st.integers(0, n - 1))
            sel.append(slice(a, draw(st.integers(a + 1, n))))
        elif kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "step":
            sel.append(slice(draw(st.integers(-n, n - 1)), None,
                             draw(st.sampled_from([2, 3, -1, -2]))))
        else:
            sel.append(slice(None))
    return tuple(sel)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), sharded=st.booleans(), order=st.sampled_from(["C", "F"]),
       same_shape=st.booleans())
def test_batches_of_tiles_are_numpys(data, sharded, order, same_shape):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    values = rng.integers(-1000, 1000, SHAPE).astype("<i4")
    a = _array(MemoryStore(), values, sharded, order)
    want = values.copy()
    want[4:8, 6:12, 0:5] = FILL
    first = _tile(data.draw)
    n = data.draw(st.integers(2, 12))
    sels = [first if same_shape and data.draw(st.booleans()) else _tile(data.draw)
            for _ in range(n)]
    if same_shape:
        # (tiles of one shape: the first one, repeated or moved by whole chunks)
        sels = []
        for _ in range(n):
            tile = list(first)
            for d, (t, c, m) in enumerate(zip(first, CHUNKS, SHAPE, strict=True)):
                if (isinstance(t, slice) and t.step is None and t.start is not None
                        and t.stop + c <= m and rng.integers(0, 2)):
                    tile[d] = slice(t.start + c, t.stop + c)
            sels.append(tuple(tile))
    got = a.get_many(sels)
    for s, g in zip(sels, got, strict=True):
        np.testing.assert_array_equal(g, want[s], err_msg=repr(s))
    shapes = {want[s].shape for s in sels}
    if len(shapes) == 1:
        out = np.full((len(sels), *shapes.pop()), 77, dtype=values.dtype)
        a.get_many(sels, out=out)
        for k, s in enumerate(sels):
            np.testing.assert_array_equal(out[k], want[s], err_msg=repr(s))


@pytest.mark.parametrize("sharded", [False, True])
def test_a_batch_of_arrays_of_one_layout_gives_each_arrays_values(sharded):
    store = MemoryStore()
    rng = np.random.default_rng(3)
    values = [rng.integers(-1000, 1000, SHAPE).astype("<i4") for _ in range(3)]
    zarrfast.create_group(store)
    arrays = [_array(store, v, sharded, "C", path=f"v{k}") for k, v in enumerate(values)]
    wants = []
    for v in values:
        w = v.copy()
        w[4:8, 6:12, 0:5] = FILL
        wants.append(w)
    tiles = [np.s_[0:4, 0:6, 0:5], np.s_[4:8, 6:12, 0:5], np.s_[1:3, 2:5, 1:4],
             np.s_[0:4, 0:6, 0:5]]
    requests = [(arrays[k % 3], t) for k in range(6) for t in tiles]
    got = zarrfast.get_many(requests)
    for (a, t), g in zip(requests, got, strict=True):
        np.testing.assert_array_equal(g, wants[arrays.index(a)][t])


def test_a_batch_refusing_missing_chunks_names_the_missing_one():
    store = MemoryStore()
    values = np.arange(np.prod(SHAPE), dtype="<i4").reshape(SHAPE)
    _array(store, values, False, "C")
    with zarrfast.config.set({"array.read_missing_chunks": False}):
        a = zarrfast.open_array(store, mode="r")
    tiles = [np.s_[0:4, 0:6, 0:5], np.s_[0:2, 0:3, 0:2]]
    np.testing.assert_array_equal(a.get_many(tiles)[1], values[0:2, 0:3, 0:2])
    with pytest.raises(ZarrfastError, match="1/1/0"):
        a.get_many(tiles + [np.s_[5:6, 7:8, 1:2]])


def test_selections_that_are_not_plain_are_read_or_refused_as_alone():
    store = MemoryStore()
    values = np.arange(np.prod(SHAPE), dtype="<i4").reshape(SHAPE)
    a = zarrfast.create_array(store, shape=SHAPE, chunks=CHUNKS, dtype="<i4")
    a[...] = values
    sels = [(np.int64(3), slice(np.int32(1), 9), ...), (slice(0, 4), 2, slice(None, None, -3)),
            (Ellipsis, np.int8(-1))]
    for s, g in zip(sels, a.get_many(sels), strict=True):
        np.testing.assert_array_equal(g, values[s])
    for bad in ((slice(0, 4), 18), (True, 0), (slice(0, 2, 0),), (0, 0, 0, 0)):
        try:
            alone = a[bad]
        except ZarrfastError as e:
            with pytest.raises(type(e)):
                a.get_many([np.s_[0:1], bad])
        else:
            np.testing.assert_array_equal(a.get_many([np.s_[0:1], bad])[1], alone)
