"""Cold ``zarrfast.get_many`` of arrays on stores of their own, from the review of
h62/coldreg2.

That branch (08ae967) reads the boxes of arrays of one layout on stores of their own as
one kernel call (``engine.many.read_store_boxes``, several roots) at two threads or
more cold as warm, where a probe of the first file used to send cold arrays to reads
of their own, all at once.  The one call's cold path (the kernel finds a row out of the
page cache and announces the rows after it, each from its own root) is what these
guards hold, every read cold (the files evicted before it), at 2 and 3 threads:

* arrays of one layout in stores of their own at one path, in one group store at
  several paths, of two layouts, boxes of two shapes, integer indices, a chunk
  missing: NumPy's values, results that do not share what one of them holds, and no
  chunk file left open;
* a store's directory deleted, or deleted and made again with other values, by another
  store after the array was opened: what the array's own read says;
* a chunk that does not decode: the error the array's own read raises, naming its key
  (and the request's position);
* two threads reading cold batches at once (one kernel call each) and a forked child.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import threading

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, held_open, is_cold, needs_cold_reads
from _helpers.stores import XorStore

pytestmark = needs_cold_reads

SHAPE = (96, 80)


def _values(k: int, shape=SHAPE) -> np.ndarray:
    return ((np.arange(np.prod(shape)).reshape(shape) * (k + 5)) % 9973).astype("<u2")


def _make(path, k, chunks=(16, 16), fill=3, store=None, name=None):
    if store is None:
        a = zarrfast.create_array(LocalStore(path), shape=SHAPE, chunks=chunks,
                                  dtype="<u2", fill_value=fill)
    else:
        a = zarrfast.create_array(store, name=name, shape=SHAPE, chunks=chunks,
                                  dtype="<u2", fill_value=fill)
    v = _values(k)
    a[...] = v
    return v


def _cold(root, probe) -> None:
    for _ in range(5):  # (pages announced by the last read may still be coming in)
        evict(root)
        if is_cold(probe):
            return
    pytest.skip("this file system keeps its files in memory (tmpfs?)")


@pytest.fixture
def mixed(tmp_path):
    """8 arrays of layout A on stores of their own (path ""), 3 of layout A in one group
    store (paths g/x, g/y, g/z), 3 of layout B (other chunks) on stores of their own;
    array 2's chunk (1, 1) missing (its fill value)."""
    arrays, wants = [], []
    for k in range(8):
        wants.append(_make(tmp_path / f"a{k}", k))
        arrays.append(zarrfast.open_array(LocalStore(tmp_path / f"a{k}"), mode="r"))
    os.remove(tmp_path / "a2" / "c" / "1" / "1")
    wants[2][16:32, 16:32] = 3
    gstore = LocalStore(tmp_path / "grp")
    zarrfast.open_group(gstore, mode="w").create_group("g")
    for j, name in enumerate("xyz"):
        wants.append(_make(None, 10 + j, store=gstore, name=f"g/{name}"))
    group = zarrfast.open_group(LocalStore(tmp_path / "grp"), mode="r")
    arrays += [group[f"g/{name}"] for name in "xyz"]
    for k in range(3):
        wants.append(_make(tmp_path / f"b{k}", 20 + k, chunks=(32, 8)))
        arrays.append(zarrfast.open_array(LocalStore(tmp_path / f"b{k}"), mode="r"))
    return tmp_path, arrays, wants


REGIONS = [
    (slice(5, 90), slice(10, 60)),
    (slice(0, 96), slice(79, 80)),
    (17, slice(None)),
    (slice(None), -1),
    (slice(-40, -3), slice(3, 4)),
]


@pytest.mark.parametrize("threads", [2, 3])
def test_cold_get_many_across_stores_paths_layouts_and_shapes(mixed, threads):
    root, arrays, wants = mixed
    with config.set(threads=threads):
        for r0 in range(len(REGIONS)):
            # (two shapes of box in one call: the requests alternate between two regions)
            regions = [REGIONS[(r0 + (k % 2)) % len(REGIONS)] for k in range(len(arrays))]
            _cold(root, root / "a0" / "c" / "0" / "0")
            got = zarrfast.get_many(list(zip(arrays, regions, strict=True)))
            for k, (g, w, reg) in enumerate(zip(got, wants, regions, strict=True)):
                np.testing.assert_array_equal(g, w[reg], err_msg=f"array {k} {reg}")
            # results of one shape are views of one buffer: none writes another's
            before = [np.array(g, copy=True) for g in got]
            for g in got:
                if isinstance(g, np.ndarray) and g.size:
                    g.reshape(-1)[...] = 0xFFFF
                    break
            for k, (g, b) in enumerate(zip(got[1:], before[1:], strict=True)):
                np.testing.assert_array_equal(g, b, err_msg=f"array {k + 1} written")
    assert held_open(root / "a0" / "c") == []
    assert [f for k in range(8) for f in held_open(root / f"a{k}" / "c")] == []
    assert held_open(root / "grp" / "g") == []


@pytest.mark.parametrize("again", [False, True])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_store_directory_deleted_by_another(tmp_path, threads, again):
    """Array 3's directory removed (and, ``again``, made again with other values by
    another store) after it was opened: the cold one call says what the array's own
    read says, the other arrays read their own values."""
    wants = [_make(tmp_path / f"a{k}", k) for k in range(6)]
    arrays = [zarrfast.open_array(LocalStore(tmp_path / f"a{k}"), mode="r")
              for k in range(6)]
    region = (slice(3, 70), slice(0, 50))
    shutil.rmtree(tmp_path / "a3")
    if again:
        wants[3] = _make(tmp_path / "a3", 77)
    with config.set(threads=threads):
        _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
        try:
            got = zarrfast.get_many([(a, region) for a in arrays])
        except Exception as e:  # (then the array's own read raises the same)
            with pytest.raises(type(e)) as alone:
                arrays[3][region]
            assert str(alone.value) == str(e)
            return
        evict(tmp_path)
        np.testing.assert_array_equal(got[3], arrays[3][region])
    if again:
        np.testing.assert_array_equal(got[3], wants[3][region])
    for k in (0, 1, 2, 4, 5):
        np.testing.assert_array_equal(got[k], wants[k][region])


@pytest.mark.parametrize("threads", [2, 3])
def test_a_chunk_that_does_not_decode_is_named(tmp_path, threads):
    wants = [_make(tmp_path / f"a{k}", k) for k in range(6)]
    del wants
    arrays = [zarrfast.open_array(LocalStore(tmp_path / f"a{k}"), mode="r")
              for k in range(6)]
    bad = tmp_path / "a4" / "c" / "2" / "1"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"not a zstd frame at all" * 40)
    region = (slice(0, 96), slice(0, 80))
    with config.set(threads=threads):
        _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
        with pytest.raises(Exception) as many:
            zarrfast.get_many([(a, region) for a in arrays])
        evict(tmp_path)
        with pytest.raises(Exception) as alone:
            arrays[4][region]
    assert type(many.value) is type(alone.value)
    assert "c/2/1" in str(many.value), str(many.value)
    assert str(alone.value) in str(many.value)  # (and which request: "selection 4")
    assert "selection 4" in str(many.value)
    assert [f for k in range(6) for f in held_open(tmp_path / f"a{k}" / "c")] == []


def test_two_threads_reading_cold_batches_at_once(tmp_path):
    n = 10
    wants = [_make(tmp_path / f"a{k}", k) for k in range(n)]
    arrays = [zarrfast.open_array(LocalStore(tmp_path / f"a{k}"), mode="r")
              for k in range(n)]
    regions = [(slice(0, 64), slice(16, 80)), (slice(30, 96), slice(0, 47))]
    errors: list[str] = []
    start = threading.Barrier(2)

    def reader(t: int) -> None:
        try:
            with config.set(threads=2):
                start.wait()
                for rnd in range(6):
                    reg = regions[(t + rnd) % 2]
                    # (thread 1 reads the arrays in the other order)
                    mine = arrays if t == 0 else arrays[::-1]
                    got = zarrfast.get_many([(a, reg) for a in mine])
                    for k, g in enumerate(got):
                        w = wants[k if t == 0 else n - 1 - k]
                        if not np.array_equal(g, w[reg]):
                            errors.append(f"thread {t} round {rnd} array {k}")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(f"thread {t}: {type(e).__name__}: {e}")

    _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
    threads = [threading.Thread(target=reader, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a reader did not end"
    assert errors == []
    assert [f for k in range(n) for f in held_open(tmp_path / f"a{k}" / "c")] == []


def _child(root: str, n: int, q) -> None:
    from _helpers.page_cache import evict as evict_
    arrays = [zarrfast.open_array(LocalStore(os.path.join(root, f"a{k}")), mode="r")
              for k in range(n)]
    region = (slice(5, 90), slice(10, 60))
    with config.set(threads=2):
        evict_(root)
        got = zarrfast.get_many([(a, region) for a in arrays])
    q.put([bool(np.array_equal(g, _values(k)[region])) for k, g in enumerate(got)])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_reads_cold_after_its_parent(tmp_path):
    n = 6
    for k in range(n):
        _make(tmp_path / f"a{k}", k)
    arrays = [zarrfast.open_array(LocalStore(tmp_path / f"a{k}"), mode="r")
              for k in range(n)]
    region = (slice(5, 90), slice(10, 60))
    with config.set(threads=2):  # (the parent's kernels' helper threads started, cold)
        _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
        got = zarrfast.get_many([(a, region) for a in arrays])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, _values(k)[region])
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(str(tmp_path), n, q))
    p.start()
    try:
        result = q.get(timeout=240)
    finally:
        p.join(timeout=240)
        if p.is_alive():
            p.kill()
    assert result == [True] * n
    assert p.exitcode == 0


#: (create_array's keywords, the file of chunk (1, 1))
FORMATS = [
    ({"zarr_format": 3}, ("c", "1", "1")),
    ({"zarr_format": 3, "chunk_key_encoding": {"name": "v2", "separator": "."}}, ("1.1",)),
    ({"zarr_format": 2}, ("1.1",)),
    ({"zarr_format": 2, "order": "F"}, ("1.1",)),
    ({"zarr_format": 3, "fill_value": -5}, ("c", "1", "1")),
]


@pytest.mark.parametrize("threads", [2, 3])
def test_cold_get_many_of_formats_fill_values_orders_and_read_only_stores(tmp_path,
                                                                         threads):
    """Arrays of v3 (keys c/i/j, and i.j), of v2 (C and F order), of two fill values,
    every other one opened through a read-only store: read cold as one call where their
    layouts agree (each its own keys, fill value and order), NumPy's values."""
    shape = (80, 70)
    arrays, wants = [], []
    for k, (kw, missing) in enumerate(FORMATS * 2):
        kw = dict(kw)
        fill = kw.pop("fill_value", 0)
        p = tmp_path / f"a{k}"
        a = zarrfast.create_array(LocalStore(p), shape=shape, chunks=(16, 16), dtype="<i4",
                                  fill_value=fill, **kw)
        v = ((np.arange(np.prod(shape)).reshape(shape) * (k + 3)) % 7919).astype("<i4")
        a[...] = v
        if k % 3 == 0:
            os.remove(p.joinpath(*missing))
            v[16:32, 16:32] = fill
        store = LocalStore(p) if k % 2 == 0 else LocalStore(p).with_read_only()
        arrays.append(zarrfast.open_array(store, mode="r"))
        wants.append(v)
    with config.set(threads=threads):
        for reg in ((slice(5, 75), slice(3, 60)), (slice(None), 17), (-1, slice(2, -2))):
            _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
            got = zarrfast.get_many([(a, reg) for a in arrays])
            for k, (g, w) in enumerate(zip(got, wants, strict=True)):
                np.testing.assert_array_equal(g, w[reg], err_msg=f"array {k} {reg}")
    assert [f for k in range(len(arrays)) for f in held_open(tmp_path / f"a{k}")] == []


@pytest.mark.parametrize("threads", [2, 3])
def test_cold_get_many_with_store_subclasses_among_the_stores(tmp_path, threads):
    """Arrays of one layout, every other one on a LocalStore subclass with its own
    ``get``: those are read through it (not their files by the one call), cold."""
    arrays, wants = [], []
    for k in range(8):
        cls = XorStore if k % 2 else LocalStore
        wants.append(_make(None, k, store=cls(tmp_path / f"a{k}"), name=None))
        arrays.append(zarrfast.open_array(cls(tmp_path / f"a{k}"), mode="r"))
    region = (slice(5, 90), slice(10, 60))
    with config.set(threads=threads):
        _cold(tmp_path, tmp_path / "a0" / "c" / "0" / "0")
        got = zarrfast.get_many([(a, region) for a in arrays])
    for k, (g, w) in enumerate(zip(got, wants, strict=True)):
        np.testing.assert_array_equal(g, w[region], err_msg=f"array {k}")
