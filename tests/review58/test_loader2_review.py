"""Review of h58/loader2 (86b2e7b, b437e1c, 5dbc4b1): ``zarrfast.get_many`` of arrays on stores
of their own reads the warm batches after the first up to ``threads`` at a time
(``many.at_once``), and a batch of step-1 boxes is projected in one go
(``many.project_boxes``), the results of one shape taken by one reshape; a selection
read alone goes to ``read_basic`` normalized (normalized against the array's shape
by ``Array._get_many``: no bounds check lost).  No finding.

Guards (pass on main and on the branch): many selections of one array (step-1 boxes,
ints, empty boxes, negative steps, repeated boxes) and of several arrays on stores of
their own give what NumPy gives, for regular and sharded arrays, C and F order, little-
and big-endian, missing chunks of a fill value, at one and two threads; results are
not views of one another (writing one leaves the others as read); an array that refuses
missing chunks raises naming the key whichever thread reads it; gathers
(``kind="orthogonal"``) and blocks of arrays on stores of their own are NumPy's; a data
loader's tiles of one shape (taken from one buffer by one reshape) are each their own
tile's (this guard fails with the reshape's results handed out in another order); and
``get_many`` of arrays on stores of their own in a forked child (after the parent's warm reads started
the kept threads) reads right and does not hang.
"""

from __future__ import annotations

import multiprocessing
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
SHAPE = (23, 17, 9)
CHUNKS = (5, 4, 3)


def _data(seed: int, dtype: str) -> np.ndarray:
    return ((np.arange(np.prod(SHAPE), dtype=np.int64).reshape(SHAPE) * 7 + seed * 1000
             ) % 30011 - 15000).astype(dtype)


def _make(root, name: str, seed: int, *, sharded: bool, order: str, endian: str,
          holes: bool):
    data = _data(seed, f"{'<' if endian == 'little' else '>'}i4")
    kw: dict = {"serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [2, 1, 0]}}]
    if sharded:
        kw["shards"] = (10, 8, 9)
    a = zarrfast.create_array(LocalStore(root / name), shape=SHAPE, dtype=data.dtype,
                              chunks=CHUNKS, fill_value=-3, **kw)
    want = data.astype("i4")  # (read in the machine's byte order)
    if holes:
        # (the first and the last (edge) region left unwritten: the fill value there)
        a[:] = data
        region = (slice(0, 10), slice(0, 8), slice(0, 9)) if sharded else \
            (slice(0, 5), slice(0, 4), slice(0, 3))
        a[region] = -3
        want[region] = -3
    else:
        a[:] = data
    return zarrfast.open_array(LocalStore(root / name), mode="r"), want


@st.composite
def _selection(draw, step1: bool):
    items: list = []
    for size in SHAPE:
        kind = draw(st.sampled_from(["slice", "int", "empty"] if step1
                                    else ["slice", "int", "neg", "empty"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "empty":
            a = draw(st.integers(0, size))
            items.append(slice(a, a))
        elif kind == "neg":
            a = draw(st.integers(0, size - 1))
            b = draw(st.integers(-1, a))
            items.append(slice(a, None if b < 0 else b, -draw(st.integers(1, 3))))
        else:
            a = draw(st.integers(-size, size - 1))
            n = draw(st.integers(1, size))
            lo = a if a >= 0 else size + a
            items.append(slice(a, a + n if a >= 0 else (None if lo + n >= size
                                                        else a + n)))
    return tuple(items)


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    root = tmp_path_factory.mktemp("loader2")
    made = {}
    for sharded in (False, True):
        for order, endian, holes in (("C", "little", False), ("F", "big", True)):
            made[sharded, order] = [
                _make(root, f"{int(sharded)}{order}{i}.zarr", i, sharded=sharded,
                      order=order, endian=endian, holes=holes) for i in range(3)]
    return made


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_many_selections_of_one_array_are_numpys(layouts, sharded, order, data):
    (a, want), *_ = layouts[sharded, order]
    step1 = data.draw(st.booleans())
    sels = data.draw(st.lists(_selection(step1), min_size=2, max_size=6))
    sels = sels + [sels[0]]  # (a box twice)
    threads = data.draw(st.sampled_from([1, 2]))
    with config.set(threads=threads):
        got = a.get_many(sels)
    assert len(got) == len(sels)
    for g, s in zip(got, sels, strict=True):
        w = want[s]
        assert np.shape(g) == w.shape and np.asarray(g).dtype == w.dtype, s
        np.testing.assert_array_equal(g, w, err_msg=repr(s))
    # into the caller's buffers: one stacked array when the shapes agree, else a list
    shapes = {want[s].shape for s in sels}
    if len(shapes) == 1:
        out: object = np.full((len(sels), *shapes.pop()), 99, dtype="i4")
    else:
        out = [np.full(want[s].shape, 99, dtype="i4") for s in sels]
    with config.set(threads=threads):
        into = a.get_many(sels, out=out)
    for k, (g, s) in enumerate(zip(into, sels, strict=True)):
        np.testing.assert_array_equal(g, want[s], err_msg=repr(s))
        np.testing.assert_array_equal(out[k], want[s], err_msg=repr(s))  # type: ignore[index]
    # every result its own: writing one leaves the others as they were read
    arrays = [g for g in got if isinstance(g, np.ndarray) and g.size]
    if arrays and arrays[0].flags.writeable:
        arrays[0][...] = 12345
        for g, s in zip(got, sels, strict=True):
            if isinstance(g, np.ndarray) and g.size and g is not arrays[0]:
                np.testing.assert_array_equal(g, want[s], err_msg=repr(s))


@st.composite
def _tiles(draw):
    """A data loader's batch: tiles of one shape (an int on some dimensions) at places
    of their own, some of them twice."""
    shape = [draw(st.integers(0, size)) for size in SHAPE]
    ints = [draw(st.booleans()) for _ in SHAPE]
    tiles = []
    for _ in range(draw(st.integers(2, 7))):
        tile = []
        for size, m, i in zip(SHAPE, shape, ints, strict=True):
            a = draw(st.integers(0, size - (1 if i else m)))
            tile.append(a if i else slice(a, a + m))
        tiles.append(tuple(tile))
    return tiles + draw(st.lists(st.sampled_from(tiles), max_size=2))


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("sharded", [False, True])
def test_tiles_of_one_shape_are_numpys(layouts, sharded, data):
    """Results of one shape, taken from one buffer: each is its own tile's."""
    (a, want), *_ = layouts[sharded, data.draw(st.sampled_from(["C", "F"]))]
    tiles = data.draw(_tiles())
    with config.set(threads=data.draw(st.sampled_from([1, 2]))):
        got = a.get_many(tiles)
    for g, s in zip(got, tiles, strict=True):
        np.testing.assert_array_equal(g, want[s], err_msg=repr(s))


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("sharded", [False, True])
def test_get_many_of_arrays_on_stores_of_their_own_is_numpys(layouts, sharded, data):
    made = layouts[sharded, "C"] + layouts[sharded, "F"]
    picks = data.draw(st.lists(st.integers(0, len(made) - 1), min_size=2, max_size=8))
    step1 = data.draw(st.booleans())
    sels = [data.draw(_selection(step1)) for _ in picks]
    threads = data.draw(st.sampled_from([1, 2]))
    with config.set(threads=threads):
        got = zarrfast.get_many([(made[p][0], s) for p, s in zip(picks, sels, strict=True)])
    for g, p, s in zip(got, picks, sels, strict=True):
        np.testing.assert_array_equal(g, made[p][1][s], err_msg=f"array {p}, {s!r}")


@pytest.mark.parametrize("threads", [1, 2])
def test_missing_chunk_refused_naming_its_key_in_any_thread(tmp_path, threads):
    """``array.read_missing_chunks=False``: a batch read in another thread (not the
    caller's) still refuses a missing chunk, naming it."""
    arrays, strict = [], []
    for i in range(6):
        a = zarrfast.create_array(LocalStore(tmp_path / f"m{i}.zarr"), shape=(20, 20),
                                  dtype="int16", chunks=(5, 5), fill_value=4)
        a[:] = np.arange(400, dtype="int16").reshape(20, 20) + i
        arrays.append(zarrfast.open_array(LocalStore(tmp_path / f"m{i}.zarr"), mode="r"))
        with config.set({"array.read_missing_chunks": False}):  # (taken at the open)
            strict.append(zarrfast.open_array(LocalStore(tmp_path / f"m{i}.zarr"),
                                              mode="r"))
    (tmp_path / "m4.zarr" / "c" / "2" / "1").unlink()
    region = (slice(6, 14), slice(3, 9))
    with config.set(threads=threads):
        got = zarrfast.get_many([(a, region) for a in strict[:4]])  # (none missing)
        for i, g in enumerate(got):
            np.testing.assert_array_equal(
                g, (np.arange(400, dtype="int16").reshape(20, 20) + i)[region])
        with pytest.raises(zarrfast.errors.ZarrfastError, match=r"c/2/1"):
            zarrfast.get_many([(a, region) for a in strict])
        got = zarrfast.get_many([(a, region) for a in arrays])  # (the fill value)
    want = (np.arange(400, dtype="int16").reshape(20, 20) + 4)
    want[10:15, 5:10] = 4
    np.testing.assert_array_equal(got[4], want[region])


def _child(root: str, conn) -> None:
    try:
        arrays = [zarrfast.open_array(LocalStore(os.path.join(root, f"f{i}.zarr")),
                                      mode="r") for i in range(5)]
        with config.set(threads=2):
            got = zarrfast.get_many([(a, (slice(2, 18), slice(1, 19))) for a in arrays])
        conn.send([g.tolist() for g in got])
    except BaseException as e:  # (the parent reports it)
        conn.send(repr(e))
    finally:
        conn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_get_many_in_a_forked_child_after_warm_reads(tmp_path):
    arrays, wants = [], []
    for i in range(5):
        w = np.arange(400, dtype="float32").reshape(20, 20) * (i + 1)
        a = zarrfast.create_array(LocalStore(tmp_path / f"f{i}.zarr"), shape=w.shape,
                                  dtype=w.dtype, chunks=(6, 6), fill_value=0)
        a[:] = w
        arrays.append(zarrfast.open_array(LocalStore(tmp_path / f"f{i}.zarr"), mode="r"))
        wants.append(w[2:18, 1:19])
    with config.set(threads=2):
        for _ in range(3):  # (the parent's kept threads started)
            zarrfast.get_many([(a, (slice(2, 18), slice(1, 19))) for a in arrays])
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(str(tmp_path), child))
    p.start()
    child.close()
    try:
        assert parent.poll(60), "the forked child's get_many hung"
        got = parent.recv()
    finally:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join()
    assert not isinstance(got, str), got
    for g, w in zip(got, wants, strict=True):
        np.testing.assert_array_equal(np.array(g, dtype="float32"), w)


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("sharded", [False, True])
def test_gathers_and_blocks_of_arrays_on_stores_of_their_own(layouts, sharded, data):
    """``kind="orthogonal"`` (index arrays: negative, repeated, unsorted) and
    ``kind="block"``, the batches after the first read in threads of their own."""
    made = layouts[sharded, "C"] + layouts[sharded, "F"]
    picks = data.draw(st.lists(st.integers(0, len(made) - 1), min_size=2, max_size=6))
    threads = data.draw(st.sampled_from([1, 2]))
    sels = []
    for _ in picks:
        sel = []
        for size in SHAPE:
            if data.draw(st.booleans()):
                sel.append(np.array(data.draw(st.lists(st.integers(-size, size - 1),
                                                       min_size=1, max_size=5))))
            else:
                a = data.draw(st.integers(0, size - 1))
                sel.append(slice(a, data.draw(st.integers(a, size))))
        sels.append(tuple(sel))
    with config.set(threads=threads):
        got = zarrfast.get_many([(made[p][0], s) for p, s in zip(picks, sels, strict=True)],
                                kind="orthogonal")
    for g, p, s in zip(got, picks, sels, strict=True):
        want = made[p][1]
        for axis, item in enumerate(s):
            want = want[(slice(None),) * axis + (item,)]
        np.testing.assert_array_equal(g, want, err_msg=f"array {p}, {s!r}")
    grid = (10, 8, 9) if sharded else CHUNKS  # (blocks: the stored chunks, shards)
    blocks = [tuple(data.draw(st.integers(0, -(-size // c) - 1))
                    for size, c in zip(SHAPE, grid, strict=True)) for _ in picks]
    with config.set(threads=threads):
        got = zarrfast.get_many([(made[p][0], b) for p, b in zip(picks, blocks, strict=True)],
                                kind="block")
    for g, p, b in zip(got, picks, blocks, strict=True):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(b, grid, strict=True))
        np.testing.assert_array_equal(g, made[p][1][region], err_msg=f"array {p}, {b!r}")
