"""``zarrfast.get_many`` of arrays each opened from its own path (a store object each, as
a loader opens a dataset's arrays): the boxes of arrays of one layout read as one, one
``decode_files`` call for the chunks of all of them, each chunk from its own store's
root (``engine.many.read_store_boxes``).  Real files, threads; results checked against
NumPy; the arrays differ in values (the same relative chunk paths in every store), in
data types, fill values and missing chunks; a damaged chunk raises naming its array."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.errors import ZarrfastError

SHAPE, CHUNKS = (50, 44), (16, 12)


def _write(root, name, k, dtype="uint16", fill=0, missing=(), codec="zstd"):
    """Array ``name`` under ``root`` (its own directory), values depending on ``k``; the
    chunks ``missing`` deleted (read as ``fill``).  Returns the values a read gives."""
    values = (np.arange(np.prod(SHAPE)).reshape(SHAPE) * (k + 3) % 1000).astype(dtype)
    kw = {"compressors": None} if codec == "none" else {}
    a = zarrfast.create_array(os.path.join(root, name), shape=SHAPE, chunks=CHUNKS,
                              dtype=dtype, fill_value=fill, **kw)
    a[:] = values
    for i, j in missing:
        os.remove(os.path.join(root, name, "c", str(i), str(j)))
        values[i * CHUNKS[0]:(i + 1) * CHUNKS[0], j * CHUNKS[1]:(j + 1) * CHUNKS[1]] = fill
    return values


def _open(root, names):
    return [zarrfast.open_array(os.path.join(root, n), mode="r") for n in names]


@pytest.fixture
def engine_log(caplog):
    caplog.set_level(logging.DEBUG, logger="zarrfast.engine")
    return caplog


def _across(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "across" in r.getMessage()]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_same_region_of_many_arrays_one_read(tmp_path, engine_log, threads):
    names = [f"a{k:02d}" for k in range(20)]
    want = [_write(tmp_path, n, k) for k, n in enumerate(names)]
    arrays = _open(tmp_path, names)
    region = (slice(7, 41), slice(5, 30))  # (not chunk-aligned: 9 chunks each)
    with config.set(threads=threads):
        got = zarrfast.get_many([(a, region) for a in arrays])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w[region])
    # (one read for the 20 arrays: 180 chunks, each from its own store's files; at one
    # thread each array's own read, whose files a helper thread reads)
    assert _across(engine_log) == ([] if threads == 1 else [
        "zarrfast.get_many: 20 boxes of 20 stores read across stores (180 chunks, 1 call)"])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_boxes_match_numpy(tmp_path_factory, data):
    """Different boxes (and int indices) per array, several arrays more than once."""
    root = tmp_path_factory.mktemp("g")
    n = data.draw(st.integers(2, 6), label="arrays")
    names = [f"a{k}" for k in range(n)]
    missing = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                 max_size=3, unique=True), label="missing")
    want = [_write(root, name, k, missing=missing if k % 2 else ()) for k, name in
            enumerate(names)]
    arrays = _open(root, names)

    def one_dim(size):
        a = data.draw(st.integers(0, size - 1))
        if data.draw(st.booleans()):
            return slice(a, data.draw(st.integers(a + 1, size)))
        return a

    requests = []
    for _ in range(data.draw(st.integers(2, 8), label="requests")):
        k = data.draw(st.integers(0, n - 1))
        requests.append((k, tuple(one_dim(s) for s in SHAPE)))
    with config.set(threads=data.draw(st.sampled_from([1, 2, 3]), label="threads")):
        got = zarrfast.get_many([(arrays[k], sel) for k, sel in requests])
    for (k, sel), g in zip(requests, got, strict=True):
        expect = want[k][sel]
        assert np.shape(g) == expect.shape
        np.testing.assert_array_equal(g, expect)


def test_dtypes_fill_values_and_missing_chunks(tmp_path, engine_log):
    """Arrays of three layouts among them (two data types, two fill values), missing
    chunks in some, one uncompressed: each layout's arrays read as one, the results as
    NumPy says (missing chunks read as each array's own fill value)."""
    specs = []
    for k in range(12):
        dtype = "int32" if k % 3 == 0 else "uint16"
        fill = 7 if k % 3 == 1 else 0
        missing = [(1, 1), (2, 2)] if k % 4 == 1 else []
        specs.append((f"a{k:02d}", k, dtype, fill, missing))
    want = [_write(tmp_path, n, k, dtype=d, fill=f, missing=m) for n, k, d, f, m in specs]
    want.append(_write(tmp_path, "raw", 99, codec="none", missing=[(0, 0)]))
    arrays = _open(tmp_path, [s[0] for s in specs] + ["raw"])
    region = (slice(3, 40), slice(2, 33))
    with config.set(threads=2):
        got = zarrfast.get_many([(a, region) for a in arrays])
    for a, g, w in zip(arrays, got, want, strict=True):
        assert g.dtype == a.dtype
        np.testing.assert_array_equal(g, w[region])
    # (int32 fill 0; uint16 fill 7; uint16 fill 0 -- and the lone uncompressed array
    # read its own way)
    assert len(_across(engine_log)) == 3


def test_a_damaged_chunk_names_its_array(tmp_path):
    names = [f"a{k}" for k in range(5)]
    for k, n in enumerate(names):
        _write(tmp_path, n, k)
    with open(tmp_path / "a3" / "c" / "1" / "1", "wb") as f:
        f.write(b"\x28\xb5\x2f\xfd damaged")
    arrays = _open(tmp_path, names)
    with config.set(threads=2), pytest.raises(ZarrfastError) as e:
        zarrfast.get_many([(a, (slice(10, 30), slice(10, 20))) for a in arrays])
    # (each array is the root of its own store, so its name is '/': the request's
    # number says which; the chunk's key which chunk)
    message = str(e.value)
    assert "selection 3 " in message and "'c/1/1'" in message


def test_a_link_on_a_chunk_path_is_read_as_its_store_reads_it(tmp_path):
    """A chunk file that is a link (to another array's chunk): the kernel does not
    follow it; the array's store then reads it as it reads it alone."""
    names = [f"a{k}" for k in range(4)]
    for k, n in enumerate(names):
        _write(tmp_path, n, k)
    link = tmp_path / "a2" / "c" / "0" / "0"
    link.unlink()
    os.symlink(tmp_path / "a1" / "c" / "0" / "0", link)
    arrays = _open(tmp_path, names)
    region = (slice(0, 20), slice(0, 20))
    alone = []
    for a in arrays:
        try:
            alone.append(("ok", a[region]))
        except ZarrfastError as e:
            alone.append(("error", type(e)))
    try:
        with config.set(threads=2):
            got = [("ok", g) for g in zarrfast.get_many([(a, region) for a in arrays])]
    except ZarrfastError as e:
        assert any(kind == "error" and isinstance(e, cls) for kind, cls in alone)
        return
    for (ka, va), (kg, vg) in zip(alone, got, strict=True):
        assert ka == kg == "ok"
        np.testing.assert_array_equal(va, vg)


def test_f_order_and_gated_arrays_read_their_own_way(tmp_path, engine_log):
    names = ["a0", "a1", "a2"]
    want = [_write(tmp_path, n, k, missing=[(0, 0)]) for k, n in enumerate(names)]
    arrays = [zarrfast.open_array(os.path.join(tmp_path, n), mode="r",
                                  config={"order": "F"}) for n in names]
    with config.set(threads=2):
        got = zarrfast.get_many([(a, (slice(0, 20), slice(0, 20))) for a in arrays])
    for g, w in zip(got, want, strict=True):
        assert g.flags.f_contiguous
        np.testing.assert_array_equal(g, w[:20, :20])
    assert _across(engine_log) == []
    strict = [zarrfast.open_array(os.path.join(tmp_path, n), mode="r",
                                  config={"read_missing_chunks": False}) for n in names]
    with config.set(threads=2), pytest.raises(ZarrfastError, match="a0|c/0/0"):
        zarrfast.get_many([(a, (slice(0, 20), slice(0, 20))) for a in strict])
    assert _across(engine_log) == []


def test_stores_of_one_root_and_of_their_own(tmp_path, engine_log):
    """Arrays at paths of a group opened through two store objects of one directory,
    beside arrays each the root of its own store, and a v2 array: every chunk read from
    the right file (the same chunk key under several prefixes and roots)."""
    from zarrfast.storage import LocalStore

    group = zarrfast.open_group(LocalStore(tmp_path / "g.zarr"), mode="w")
    want = []
    for k in range(4):
        values = (np.arange(np.prod(SHAPE)).reshape(SHAPE) * (k + 5) % 997).astype("uint16")
        group.create_array(f"m{k}", shape=SHAPE, chunks=CHUNKS, dtype="uint16",
                           fill_value=0)[:] = values
        want.append(values)
    own = [_write(tmp_path, f"own{k}", 50 + k) for k in range(3)]
    stores = [LocalStore(tmp_path / "g.zarr", read_only=True) for _ in range(2)]
    arrays = [zarrfast.open_array(stores[k % 2], path=f"m{k}", mode="r") for k in range(4)]
    arrays += _open(tmp_path, [f"own{k}" for k in range(3)])
    want += own
    region = (slice(9, 47), slice(1, 40))
    with config.set(threads=2):
        got = zarrfast.get_many([(a, region) for a in arrays])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w[region])
    # (two stores of the group's directory, each with two arrays; three of their own)
    assert _across(engine_log) == ["zarrfast.get_many: 7 boxes of 5 stores read across "
                                   "stores (84 chunks, 1 call)"]
    v2 = [zarrfast.create_array(tmp_path / f"v2_{k}", shape=SHAPE, chunks=CHUNKS,
                                dtype="int16", zarr_format=2) for k in range(3)]
    for k, a in enumerate(v2):
        a[:] = want[k].astype("int16") - k
    v2 = [zarrfast.open_array(tmp_path / f"v2_{k}", mode="r") for k in range(3)]
    with config.set(threads=2):
        got = zarrfast.get_many([(a, region) for a in v2])
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, (want[k].astype("int16") - k)[region])
