"""Bad shards raise errors naming the shard key and the inner chunk: corrupt or
inconsistent indexes, truncated shards, corrupt inner chunks (also with a codec after
the shard or a transpose before it); a write into a corrupt shard keeps it.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ChecksumError, ChunkDecodeError
from zarrfast.storage import MemoryStore

from _helpers import LE
from _helpers.sharding import (
    CRC,
    EMPTY,
    ZSTD,
    Case,
    T,
    assert_equal,
    create_zf,
    parse_index,
    write_index,
)

# ---------------------------------------------------------------------------
# 6. bad shards
# ---------------------------------------------------------------------------
BAD_SHAPE, BAD_SHARD, BAD_INNER = (8, 16), (8, 8), (4, 4)  # 2 x 2 inner chunks per shard


def _bad_setup(location: str, inner_codecs=(LE, ZSTD), index_codecs=(LE, CRC)):
    case = Case("bad", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, inner_codecs,
                index_codecs=index_codecs, location=location)
    store = MemoryStore()
    data = np.random.default_rng(5).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    return store, data, case


def _edit_index(store, case: Case, fn) -> None:
    raw = store.get("c/0/0")
    index = parse_index(raw, case.sharding, case.shard).copy()
    fn(index, len(raw))
    store.set("c/0/0", write_index(raw, case.sharding, case.shard, index))


def _expect_error(store, data, sel, exc, *needles: str) -> None:
    a = zarrfast.open_array(store, mode="r")  # a fresh index cache
    with pytest.raises(exc) as info:
        a[sel]
    msg = str(info.value)
    assert "c/0/0" in msg, msg
    for needle in needles:
        assert needle in msg, msg
    assert_equal(a[:, 8:], data[:, 8:])  # the other shard still reads


PARTIAL = (1, 6)  # inner chunk (0, 1) only
WHOLE = (slice(None), slice(0, 8))  # the whole shard (0, 0)
OTHER = (5, 6)  # inner chunk (1, 1) only
PATHS = pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
# index-level damage must be found whichever inner chunk is read
PATHS3 = pytest.mark.parametrize("sel", [PARTIAL, OTHER, WHOLE],
                                 ids=["one-inner-chunk", "other-inner-chunk", "whole-shard"])
LOCATIONS = pytest.mark.parametrize("location", ["end", "start"])


@PATHS3
@LOCATIONS
def test_corrupt_index_checksum(location, sel):
    store, data, case = _bad_setup(location)
    raw = bytearray(store.get("c/0/0"))
    n = 4 * 16 + 4
    pos = len(raw) - n + 3 if location == "end" else 3
    raw[pos] ^= 0x40  # a bit of the first offset; the checksum is unchanged
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChecksumError)


@PATHS
@LOCATIONS
def test_index_entry_past_end_of_shard(location, sel):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0] = size + 100

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["one-inner-chunk", "whole-shard"])
@LOCATIONS
def test_index_entry_running_past_end_of_shard(location, sel):
    """The last inner chunk (1, 1) (stored last) claims a few bytes more than there are."""
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[3, 1] += 8

    _edit_index(store, case, edit)
    if location == "end" and sel != WHOLE:
        pytest.skip("with the index at the end the claimed bytes exist (they hold the index); "
                    "only a whole-shard read knows where the inner chunks end")
    _expect_error(store, data, sel, ChunkDecodeError, "(1, 1)")


@PATHS3
@LOCATIONS
def test_overlapping_index_entries(location, sel):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[2, 0] = index[1, 0] + 1  # (1, 0) starts inside (0, 1)

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "overlap", "(0, 1)", "(1, 0)")


@PATHS3
@LOCATIONS
@pytest.mark.parametrize("half", ["offset", "nbytes"])
def test_half_empty_index_entry(location, sel, half):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0 if half == "offset" else 1] = EMPTY

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["other-inner-chunk", "whole-shard"])
@LOCATIONS
def test_index_entry_inside_start_index(location, sel):
    """With the index at the start, no inner chunk may begin inside it."""
    store, data, case = _bad_setup(location)
    if location == "end":
        pytest.skip("only the start index occupies the beginning of the shard")

    def edit(index, size):
        index[1] = (4, 8)  # overlaps no other inner chunk, only the index

    _edit_index(store, case, edit)
    # the index itself is refused, even when reading another inner chunk of the shard
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@PATHS
@LOCATIONS
@pytest.mark.parametrize("keep", [0, 30, 67])
def test_shard_shorter_than_its_index(location, sel, keep):
    store, data, _ = _bad_setup(location)
    raw = store.get("c/0/0")
    store.set("c/0/0", raw[len(raw) - keep:] if location == "end" else raw[:keep])
    _expect_error(store, data, sel, ChunkDecodeError)


@pytest.mark.parametrize("sel", [OTHER, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_shard_truncated_after_start_index(sel):
    store, data, case = _bad_setup("start")
    raw = store.get("c/0/0")
    store.set("c/0/0", raw[:len(raw) - 5])  # the last inner chunk (1, 1) is cut short
    _expect_error(store, data, sel, ChunkDecodeError, "(1, 1)")


@PATHS
@LOCATIONS
@pytest.mark.parametrize("index_codecs", [(LE, CRC), (LE,)], ids=["crc32c", "plain"])
def test_corrupt_inner_chunk(location, sel, index_codecs):
    store, data, case = _bad_setup(location, index_codecs=index_codecs)
    raw = bytearray(store.get("c/0/0"))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@PATHS
@LOCATIONS
def test_inner_chunk_of_wrong_size(location, sel):
    store, data, case = _bad_setup(location, inner_codecs=(LE,))

    def edit(index, size):
        index[1, 1] -= 4  # uncompressed: one element short

    _edit_index(store, case, edit)
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")


@LOCATIONS
def test_write_into_corrupt_shard_raises_and_keeps_it(location):
    store, data, case = _bad_setup(location)

    def edit(index, size):
        index[1, 0] = size + 100

    _edit_index(store, case, edit)
    bad = store.get("c/0/0")
    a = zarrfast.open_array(store)
    with pytest.raises(ChunkDecodeError, match="c/0/0"):
        a[5, 5] = 1  # a partial write must read (and check) the shard
    assert store.get("c/0/0") == bad
    a[:, 0:8] = 3  # overwriting the whole shard needs no old bytes
    assert_equal(a[:, 0:8], np.full((8, 8), 3, "int32"))


@pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_corrupt_inner_chunk_codec_after_shard(sel):
    """Arrays with zstd after the shard (whole-shard path through the outer codec)."""
    case = Case("bad_after", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, (LE, ZSTD),
                after=(ZSTD,))
    store = MemoryStore()
    data = np.random.default_rng(6).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    raw = bytearray(numcodecs.Zstd().decode(store.get("c/0/0")))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", numcodecs.Zstd().encode(bytes(raw)))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")
    # an outer frame that does not decompress at all
    store.set("c/0/0", b"\x00" * 40)
    _expect_error(store, data, sel, ChunkDecodeError)


@pytest.mark.parametrize("sel", [PARTIAL, WHOLE], ids=["one-inner-chunk", "whole-shard"])
def test_corrupt_inner_chunk_transpose_before_shard(sel):
    """The general pipeline (transpose before the sharding codec) names the inner chunk."""
    case = Case("bad_before", "int32", 0, BAD_SHAPE, BAD_SHARD, BAD_INNER, (LE, ZSTD),
                before=(T(1, 0),))
    store = MemoryStore()
    data = np.random.default_rng(7).integers(1, 1 << 20, BAD_SHAPE).astype("int32")
    create_zf(store, case)[...] = data
    raw = bytearray(store.get("c/0/0"))
    off, nb = (int(x) for x in parse_index(bytes(raw), case.sharding, case.shard)[1])
    raw[off:off + nb] = b"\xa5" * nb
    store.set("c/0/0", bytes(raw))
    _expect_error(store, data, sel, ChunkDecodeError, "(0, 1)")
