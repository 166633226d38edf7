"""Sharded arrays written and read by zarrfast alone: partial writes drop fill-valued
inner chunks from the index and delete shards that become empty; Hypothesis: random
layouts and basic selections against a NumPy mirror.
"""

from __future__ import annotations

import math
from typing import Any

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import BytesCodec, ShardingCodec
from zarrfast.engine import shard_write as zf_shard_write
from zarrfast.storage import LocalStore, MemoryStore

from _helpers import LE
from _helpers.sharding import (
    EMPTY,
    ZSTD,
    Case,
    assert_equal,
    create_zf,
    parse_index,
    parse_shard,
    pw_case,
    shard_key,
)


@pytest.mark.parametrize("location", ["end", "start"])
def test_write_empty_chunks_true_keeps_fill_inner_chunks(tmp_path, location):
    case = pw_case(location)
    a = create_zf(str(tmp_path), case, config={"write_empty_chunks": True})
    data = np.zeros(case.shape, dtype="int32")
    data[0, 0] = 1
    a[...] = data
    for coords in [(0, 0), (1, 0)]:  # shard (1, 0) holds only fill values: still stored
        index = parse_index((tmp_path / shard_key(coords)).read_bytes(), case.sharding,
                            case.shard)
        assert (index != EMPTY).all(), coords
    a[0, 0] = 0
    assert (parse_index((tmp_path / "c/0/0").read_bytes(), case.sharding, case.shard)
            != EMPTY).all()
    assert_equal(a[...], np.zeros(case.shape, "int32"))
    # ... and with write_empty_chunks=False the same write drops them
    b = zarrfast.open_array(str(tmp_path), config={"write_empty_chunks": False})
    b[0:2, 0:3] = 0
    index = parse_index((tmp_path / "c/0/0").read_bytes(), case.sharding, case.shard)
    assert index[0].tolist() == [EMPTY, EMPTY] and (index[1:] != EMPTY).all()
    b[0:8, :] = 0
    assert not (tmp_path / "c/0/0").exists()


def test_whole_shard_write_of_fill_deletes_shard(tmp_path):
    case = pw_case("end")
    a = create_zf(str(tmp_path), case)
    a[...] = 5
    assert sorted(p.name for p in (tmp_path / "c").rglob("*") if p.is_file()) == ["0", "0"]
    a[8:16, :] = 0
    assert not (tmp_path / "c/1/0").exists() and (tmp_path / "c/0/0").exists()
    a[...] = 0
    assert not (tmp_path / "c/0/0").exists()
    assert_equal(a[...], np.zeros(case.shape, "int32"))


@pytest.mark.parametrize("location", ["end", "start"])
def test_partial_write_of_edge_shard_keeps_its_edge_inner_chunks(location):
    """Writing every complete inner chunk of an edge shard is still a partial write: the
    inner chunks cut by the array's edge keep their data."""
    case = Case("edge", "int16", 0, (7, 5), (8, 4), (2, 2), (LE,), location=location)
    a = create_zf(MemoryStore(), case)
    mirror = np.arange(1, 36, dtype="int16").reshape(7, 5)
    a[...] = mirror
    a[0:6, 0:4] = mirror[0:6, 0:4] = 9  # inner chunk rows 0-2 of shard (0, 0), not row 3
    a[0:2, 4] = mirror[0:2, 4] = -9  # one of the four inner chunks of shard (0, 1)
    assert_equal(a[...], mirror)
    assert_equal(a[6, :], mirror[6, :])


# ---------------------------------------------------------------------------
# 7. property-based: random layouts and basic selections
# ---------------------------------------------------------------------------
@st.composite
def layouts(draw):
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shard = tuple(i * draw(st.integers(1, 3)) for i in inner)
    shape = tuple(draw(st.integers(1, 2 * s + 3)) for s in shard)
    return shape, shard, inner


def basic_selection(shape):
    def dim(n):
        contiguous = st.tuples(st.integers(0, n), st.integers(0, n)).map(
            lambda t: slice(min(t), max(t)))
        return st.one_of(st.slices(n), contiguous, st.integers(-n, n - 1),
                         st.just(slice(None)))

    return st.tuples(*(dim(n) for n in shape))


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(layout=layouts(), data=st.data())
def test_random_selections_match_numpy(layout, data):
    shape, shard, inner = layout
    location = data.draw(st.sampled_from(["end", "start"]), label="location")
    compress = data.draw(st.booleans(), label="zstd")
    empty = data.draw(st.booleans(), label="write_empty_chunks")
    fill = data.draw(st.sampled_from([0, 7]), label="fill")
    after = data.draw(st.sampled_from([(), (ZSTD,)]), label="codec after the shard")
    case = Case("hyp", "int16", fill, shape, shard, inner, (LE, ZSTD) if compress else (LE,),
                location=location, after=after)
    store = MemoryStore()
    a = create_zf(store, case, config={"write_empty_chunks": empty})
    mirror = np.full(shape, fill, dtype="int16")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for _ in range(data.draw(st.integers(1, 4), label="writes")):
        sel = data.draw(basic_selection(shape), label="write")
        target = mirror[sel]
        if data.draw(st.booleans(), label="scalar"):
            value: Any = data.draw(st.sampled_from([fill, 3, -9]), label="value")
        else:
            value = rng.integers(-3, 4, size=np.shape(target)).astype("int16")
        a[sel] = value
        mirror[sel] = value
        sel = data.draw(basic_selection(shape), label="read")
        assert_equal(a[sel], mirror[sel], f"read {sel}")
    assert_equal(a[...], mirror)
    assert_equal(zarrfast.open_array(store, mode="r")[...], mirror)  # a fresh index cache
    # every stored shard parses, and (without write_empty_chunks) the store holds exactly
    # the shards with a non-fill element and the inner chunks with one
    grid = [-(-s // c) for s, c in zip(shape, shard, strict=True)]
    stored = set(store.list_prefix("c/"))
    for coords in np.ndindex(*grid):
        key = shard_key(coords)
        region = mirror[tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, shard,
                                                                         strict=True))]
        if key in stored:
            raw = store.get(key)
            chunks = parse_shard(numcodecs.Zstd().decode(raw) if after else raw,
                                 case.sharding, shard)
            assert len(chunks) == math.prod(s // i for s, i in zip(shard, inner, strict=True))
        if not empty:
            assert (key in stored) == bool((region != fill).any()), key


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("shape", [(64, 96), (70, 100)])  # (70, 100): edge inner chunks
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("write_empty", [False, True])
@pytest.mark.parametrize("local", [False, True])
def test_whole_raw_shards_assembled_in_place_match_the_general_path(
        monkeypatch, tmp_path, location, shape, endian, write_empty, local):
    """Whole shards of uncompressed inner chunks are built in one buffer; the bytes are
    the general path's, byte for byte (and shards with an all-fill inner chunk take the general
    path, which leaves that chunk out).  A local store (``copies_values``) gets each
    shard from one reused per-thread buffer -- or, a whole shard inside the array
    whose bytes need no swap, written by the store straight from the array
    (``write_shard_direct``: the same bytes)."""
    data = np.random.default_rng(3).integers(0, 1000, shape).astype("<i4")
    data[:8, :16] = -1  # one inner chunk of fill values
    calls = []
    direct = []
    real = zf_shard_write.assemble_raw_shard
    real_direct = zf_shard_write.write_shard_direct

    def counting(*args, **kwargs):
        calls.append(kwargs.get("reuse"))
        return real(*args, **kwargs)

    def counting_direct(*args, **kwargs):
        direct.append(real_direct(*args, **kwargs))
        return direct[-1]

    def write(fast: bool) -> dict:
        if not fast:
            monkeypatch.setattr(zf_shard_write, "assemble_raw_shard", lambda *a, **k: None)
            monkeypatch.setattr(zf_shard_write, "write_shard_direct", lambda *a, **k: False)
        else:
            monkeypatch.setattr(zf_shard_write, "assemble_raw_shard", counting)
            monkeypatch.setattr(zf_shard_write, "write_shard_direct", counting_direct)
        store: Any = LocalStore(str(tmp_path / f"{fast}.zarr")) if local else {}
        codec = ShardingCodec(chunk_shape=(8, 16), codecs=[BytesCodec(endian=endian)],
                              index_location=location)
        a = zarrfast.create_array(store, shape=shape, chunks=(32, 32), serializer=codec,
                                  compressors=None, dtype="<i4", fill_value=-1)
        with zarrfast.config.set(write_empty_chunks=write_empty):
            a[...] = data
        np.testing.assert_array_equal(a[...], data)
        monkeypatch.undo()
        if local:
            return {k: bytes(store.get(k)) for k in store.list()}
        return {k: bytes(v) for k, v in store.items()}

    fast, general = write(True), write(False)
    assert fast == general
    # every shard inside the array, one way or the other (a shard reaching past the
    # array's edge is read, changed and written back under its lock: another writer may
    # have grown the array and written inner chunks past the edge this writer knows)
    assert len(calls) + sum(direct) == math.prod(n // 32 for n in shape)
    assert set(calls) <= {local}
    if local and endian == "little":
        # whole shards inside the array: all straight from the array (the one with an
        # inner chunk of fill, unless it is written, is assembled)
        full = math.prod(n // 32 for n in shape)
        assert sum(direct) == full - (0 if write_empty else 1)
    else:
        assert not direct  # (a dict is no local store; big-endian bytes need a swap)
