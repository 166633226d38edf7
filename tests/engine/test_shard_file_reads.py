"""Whole shards of a local store read by one ``ShardFiles.read`` call each (the file, its
index checked, every inner chunk placed without the GIL): the same arrays, the same
errors naming the shard and the inner chunk, and the same index cache as the general
path, which it leaves every shard it cannot place to."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast import kernels as _kernels
from zarrfast.errors import ChecksumError, ChunkDecodeError
from zarrfast.storage import LocalStore

from _helpers import LE
from _helpers.sharding import BE, BLOSC, CRC, ZSTD, parse_index, sharding, write_index

pytestmark = pytest.mark.skipif(_kernels.ShardFiles is None,
                                reason="no compiled batched decoder")


class _Spy:
    """The statuses of the shards ``ShardFiles.run`` read."""

    def __init__(self, monkeypatch) -> None:
        self._arrays: dict[int, np.ndarray] = {}
        spy = self
        base = _kernels.ShardFiles

        class Counting(base):  # type: ignore[misc, valid-type]
            def run(self, decoder, todo, status, cursor, max_shards, indexes=None):
                spy._arrays[id(status)] = status
                return super().run(decoder, todo, status, cursor, max_shards, indexes)

        monkeypatch.setattr(_kernels, "ShardFiles", Counting)

    @property
    def statuses(self) -> list[int]:
        return [int(x) for a in self._arrays.values() for x in a]


def _general(monkeypatch, fn):
    """``fn()`` with the kernel off: the general path."""
    with monkeypatch.context() as m:
        m.setattr(_kernels, "ShardFiles", None)
        return fn()


LAYOUTS = [
    pytest.param(dict(dtype="int16", inner=(LE, ZSTD), index=(LE, CRC), location="end",
                      fill=-3), id="zstd"),
    pytest.param(dict(dtype="uint16", inner=(LE, ZSTD), index=(LE, CRC), location="start",
                      fill=9), id="zstd-index-start"),
    pytest.param(dict(dtype="float32", inner=(LE, BLOSC(4)), index=(LE,), location="end",
                      fill=float("nan")), id="blosc-no-crc"),
    pytest.param(dict(dtype=">i4", inner=(BE, ZSTD), index=(LE, CRC), location="start",
                      fill=-7), id="bigendian"),
    pytest.param(dict(dtype="uint8", inner=(LE, ZSTD), index=(BE, CRC), location="end",
                      fill=1), id="bigendian-index-general-path"),
    pytest.param(dict(dtype="int16", inner=(LE,), index=(LE, CRC), location="end",
                      fill=-3), id="uncompressed"),
    pytest.param(dict(dtype=">f8", inner=(BE,), index=(LE, CRC), location="start",
                      fill=0.5), id="uncompressed-bigendian"),
]


def _create(path, spec, shape=(37, 29, 11), shard=(16, 12, 8), inner=(4, 6, 4)):
    return zarrfast.create_array(
        LocalStore(path), shape=shape, dtype=spec["dtype"], chunks=shard,
        serializer=sharding(inner, spec["inner"], spec["index"], spec["location"]),
        compressors=None, fill_value=spec["fill"])


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, size=shape).astype(dtype)


@pytest.mark.parametrize("spec", LAYOUTS)
@pytest.mark.parametrize("threads", [1, 2])
def test_whole_shard_reads_match_numpy_and_the_general_path(tmp_path, monkeypatch, spec,
                                                            threads):
    """Edge shards (partial at the array's end), missing inner chunks (the fill value),
    a missing shard, an index at either end with or without its checksum."""
    a = _create(tmp_path, spec)
    data = _data(a.shape, spec["dtype"])
    data[0:4, 0:6, 0:4] = spec["fill"]  # an inner chunk of fill values: not stored
    a[...] = data
    a[16:32, 12:24, 0:8] = spec["fill"]  # a whole shard of them: deleted
    data[16:32, 12:24, 0:8] = spec["fill"]
    spy = _Spy(monkeypatch)
    kernel = spec["index"][0] is LE
    with zarrfast.config.set(threads=threads):
        got = a[...]
        np.testing.assert_array_equal(got, data)
        if kernel:
            # (3 x 3 x 2 shards, the deleted one: no file)
            assert sorted(spy.statuses) == [_kernels.DECODED] * 17 + [_kernels.NO_DATA]
        else:
            assert spy.statuses == []
        sel = (slice(1, 35), slice(3, 29, 2), slice(0, 11))  # not whole inner chunks
        np.testing.assert_array_equal(a[sel], data[sel])
        np.testing.assert_array_equal(_general(monkeypatch, lambda: a[...]), data)


def test_missing_shards_and_empty_array(tmp_path, monkeypatch):
    spec = LAYOUTS[0].values[0]
    a = _create(tmp_path, spec)
    a[0:16, 0:12, 0:8] = 5
    spy = _Spy(monkeypatch)
    want = np.full(a.shape, spec["fill"], dtype=spec["dtype"])
    want[0:16, 0:12, 0:8] = 5
    np.testing.assert_array_equal(a[...], want)
    assert spy.statuses.count(_kernels.DECODED) == 1
    assert spy.statuses.count(_kernels.NO_DATA) == len(spy.statuses) - 1


def _one_shard(tmp_path, spec=None):
    spec = spec or LAYOUTS[0].values[0]
    a = _create(tmp_path, spec, shape=(16, 12, 8))
    data = _data(a.shape, spec["dtype"], seed=3)
    a[...] = data
    return a, data, tmp_path / "c" / "0" / "0" / "0", spec


def _errors(monkeypatch, a):
    """The error of a full read, with the kernel and on the general path."""
    out = []
    for fn in (lambda: a[...], lambda: _general(monkeypatch, lambda: a[...])):
        with pytest.raises(ChunkDecodeError) as e:
            fn()
        out.append((type(e.value), str(e.value)))
    return out


def test_corrupt_index_checksum_names_the_shard(tmp_path, monkeypatch):
    a, _, f, _ = _one_shard(tmp_path)
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 0xFF
    f.write_bytes(bytes(raw))
    spy = _Spy(monkeypatch)
    (kind, msg), general = _errors(monkeypatch, a)
    assert spy.statuses == [_kernels.FAILED]
    assert kind is ChecksumError and "'c/0/0/0'" in msg and "checksum" in msg
    assert (kind, msg) == general


@pytest.mark.parametrize("bad", ["past_end", "overlap"])
def test_bad_index_entries_name_the_shard_and_inner_chunk(tmp_path, monkeypatch, bad):
    a, _, f, spec = _one_shard(tmp_path)
    raw = f.read_bytes()
    cfg = sharding((4, 6, 4), spec["inner"], spec["index"], spec["location"])
    index = parse_index(raw, cfg, (16, 12, 8)).copy()
    if bad == "past_end":  # (the last inner chunk in the shard: no overlap)
        j = int(np.argmax(np.where(index[:, 0] == 2**64 - 1, 0, index[:, 0])))
        index[j, 1] += 10**6
    else:
        j = 5
        index[5] = index[4]
    f.write_bytes(write_index(raw, cfg, (16, 12, 8), index))
    (kind, msg), general = _errors(monkeypatch, a)
    name = str(tuple(int(x) for x in np.unravel_index(j, (4, 2, 2))))
    assert "'c/0/0/0'" in msg and name in msg
    assert ("past the end" if bad == "past_end" else "overlap") in msg
    assert (kind, msg) == general


def test_an_inner_chunk_that_does_not_decode_is_named(tmp_path, monkeypatch):
    a, _, f, spec = _one_shard(tmp_path)
    raw = bytearray(f.read_bytes())
    cfg = sharding((4, 6, 4), spec["inner"], spec["index"], spec["location"])
    index = parse_index(bytes(raw), cfg, (16, 12, 8))
    off = int(index[7, 0])
    raw[off:off + 4] = b"junk"
    f.write_bytes(bytes(raw))
    (kind, msg), general = _errors(monkeypatch, a)
    assert "'c/0/0/0'" in msg and "inner chunk (1, 1, 1)" in msg  # (entry 7 of 4 x 2 x 2)
    assert (kind, msg) == general


def test_an_uncompressed_inner_chunk_of_the_wrong_size_is_named(tmp_path, monkeypatch):
    """Uncompressed inner chunks are placed from the shard as read; an index entry two
    bytes short of a chunk leaves the shard to the general path, which names it."""
    spec = LAYOUTS[5].values[0]
    assert spec["inner"] == (LE,)
    a, _, f, _ = _one_shard(tmp_path, spec)
    raw = f.read_bytes()
    cfg = sharding((4, 6, 4), spec["inner"], spec["index"], spec["location"])
    index = parse_index(raw, cfg, (16, 12, 8)).copy()
    index[7, 1] -= 2
    f.write_bytes(write_index(raw, cfg, (16, 12, 8), index))
    spy = _Spy(monkeypatch)
    (kind, msg), general = _errors(monkeypatch, a)
    assert spy.statuses == [_kernels.FAILED]
    assert "'c/0/0/0'" in msg and "(1, 1, 1)" in msg and "no compression" in msg
    assert (kind, msg) == general


def test_a_truncated_shard_is_named(tmp_path, monkeypatch):
    a, _, f, _ = _one_shard(tmp_path)
    f.write_bytes(f.read_bytes()[:100])
    (kind, msg), general = _errors(monkeypatch, a)
    assert "'c/0/0/0'" in msg
    assert (kind, msg) == general


def test_a_linked_shard_inside_the_root_is_read_the_careful_way(tmp_path, monkeypatch):
    """A link on a shard's path: the kernel leaves it (FAILED), the store's ``get``
    follows it inside the root."""
    a, data, f, _ = _one_shard(tmp_path)
    target = tmp_path / "elsewhere"
    f.rename(target)
    f.symlink_to(target)
    spy = _Spy(monkeypatch)
    np.testing.assert_array_equal(a[...], data)
    assert spy.statuses == [_kernels.FAILED]


def test_the_index_cache_after_whole_shard_reads(tmp_path, monkeypatch):
    """A whole-shard read caches each index under the file's version token (what the
    store's ``version`` gives); a shard replaced since is read again, never stale."""
    spec = LAYOUTS[0].values[0]
    a, data, f, _ = _one_shard(tmp_path)
    store = LocalStore(tmp_path)
    np.testing.assert_array_equal(a[...], data)
    cache = a._chain.cache
    token, index = cache.get("c/0/0/0")
    assert token == store.version("c/0/0/0")
    cfg = sharding((4, 6, 4), spec["inner"], spec["index"], spec["location"])
    np.testing.assert_array_equal(index, parse_index(f.read_bytes(), cfg, (16, 12, 8)))
    # replaced by another writer: full and partial reads see the new values
    b = zarrfast.open_array(LocalStore(tmp_path), mode="r+")
    data2 = data[::-1].copy()
    b[...] = data2
    np.testing.assert_array_equal(a[...], data2)
    np.testing.assert_array_equal(a[3:9, 2:7, 1:3], data2[3:9, 2:7, 1:3])
    b[0:4, 0:6, 0:4] = 1
    data2[0:4, 0:6, 0:4] = 1
    np.testing.assert_array_equal(a[0:2, 0:2, 0:2], data2[0:2, 0:2, 0:2])
    np.testing.assert_array_equal(a[...], data2)



def test_index_cache_refresh_keeps_same_tokens_and_stays_bounded():
    """``_IndexCache.refresh`` (the whole-shard read's indexes, under one lock): an entry
    with the same token is kept as it is, a new token replaces it, no token caches
    nothing, and the cache stays within its size, the oldest going first."""
    from zarrfast.engine.sharded import _IndexCache

    cache = _IndexCache(3)
    indexes = np.arange(4 * 2 * 2, dtype=np.uint64).reshape(4, 2, 2)
    cache.refresh([("a", 1, 0), ("b", 1, 1), ("c", None, 2)], indexes)
    kept = cache.get("a")
    assert kept[0] == 1 and np.array_equal(kept[1], indexes[0]) and cache.get("c") is None
    assert kept[1] is not indexes[0] and not np.shares_memory(kept[1], indexes)
    cache.refresh([("a", 1, 3), ("b", 2, 3)], indexes)
    assert cache.get("a") is kept  # same token: the entry as it was
    assert cache.get("b")[0] == 2 and np.array_equal(cache.get("b")[1], indexes[3])
    cache.refresh([("d", 1, 0), ("e", 1, 1)], indexes)  # a is the oldest: it goes
    assert list(cache._data) == ["b", "d", "e"]
