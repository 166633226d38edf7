"""Streamed gathers (``engine.fancy._stream_prefixes``): the zstd chunks of a local
gather (warm or cold) are read and decoded part by part, each part's elements gathered
into place by the thread that decoded it, with no waves (no thread left idle at each
wave's end).

Checked against NumPy (sorted or not, repeated and negative indices, column subsets,
coordinate selections), with missing and damaged chunks, and the parts themselves:
every chunk in exactly one part, none across a wave's window, the last ones small.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.engine import fancy
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import zstd_prefix

needs_prefix = pytest.mark.skipif(not zstd_prefix.available,
                                  reason="zstd_prefix has no zstd library to bind")

FILL = 30013  # (no written element equals it: they are below 30011)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@given(k=st.integers(1, 300), per=st.integers(1, 10), window=st.integers(1, 70),
       threads=st.integers(1, 4))
def test_stream_parts_cover_each_chunk_once(k, per, window, threads) -> None:
    parts = fancy._stream_parts(k, per, window, threads)
    covered = [i for lo, hi in parts for i in range(lo, hi)]
    assert covered == list(range(k))  # in order, each chunk once
    for lo, hi in parts:
        assert 0 < hi - lo <= per
        assert lo // window == (hi - 1) // window  # (never across a window)
        if hi > k - threads * per:  # (the tail: small parts)
            assert hi - lo <= fancy.STREAM_TAIL_PART


def stream_array(root, shape=(6000, 12), chunks=(200, 12)):
    x = (np.arange(math.prod(shape)) % 30011).astype("<i4").reshape(shape)
    a = zarrfast.create_array(root, shape=shape, chunks=chunks, dtype="<i4", fill_value=FILL,
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[:] = x
    return zarrfast.open_array(root, mode="r"), x


def spy_paths(monkeypatch):
    """(streamed lines, waves): what each gather took.  zstd blocks taken to be 64
    bytes, so that prefixes pay for these small chunks; every scratch buffer filled with
    junk first (bytes past a chunk's prefix are never read)."""
    monkeypatch.setattr(fancy, "ZSTD_BLOCK", 64)
    real_scratch = fancy._scratch

    def poisoned(nbytes, where):
        buf = real_scratch(nbytes, where)
        buf[:] = 0xA5
        return buf

    monkeypatch.setattr(fancy, "_scratch", poisoned)
    streamed: list[int] = []
    waves: list[int] = []
    real_stream, real_read = fancy._stream_prefixes, fancy._read_chunks

    def stream(array, chain, coords, *rest):
        done = real_stream(array, chain, coords, *rest)
        if done:
            streamed.append(len(coords))
        return done

    def read(array, chain, coords, *rest):
        waves.append(len(coords))
        return real_read(array, chain, coords, *rest)

    monkeypatch.setattr(fancy, "_stream_prefixes", stream)
    monkeypatch.setattr(fancy, "_read_chunks", read)
    return streamed, waves


@needs_prefix
@SETTINGS
@given(data=st.data())
def test_streamed_gathers_match_numpy(tmp_path_factory, data) -> None:
    """Rows early in their chunks (prefixes pay), any order, repeats and negatives, with
    every kind of column selection, and coordinate selections: read streamed, never in
    waves, and equal to NumPy, with one or two threads and windows of a few chunks."""
    root = tmp_path_factory.mktemp("stream")
    a, x = stream_array(str(root))
    with pytest.MonkeyPatch.context() as mp:
        streamed, waves = spy_paths(mp)
        mp.setattr(fancy, "GATHER_WAVE_BYTES", 200 * 12 * 4 * data.draw(st.integers(1, 9)))
        n = data.draw(st.integers(2, 80))
        chunk = np.array(data.draw(st.lists(st.integers(0, 29), min_size=n, max_size=n)))
        row = np.array(data.draw(st.lists(st.integers(0, 59), min_size=n, max_size=n)))
        rows = chunk * 200 + row
        if data.draw(st.booleans()):
            rows = rows - 6000  # (negative)
        if data.draw(st.booleans()):
            rows = np.sort(rows % 6000)
        cols = data.draw(st.sampled_from([slice(None), slice(2, 9), slice(0, 12, 3),
                                          np.array([11, 0, 0, -1]), np.array([4])]))
        with config.set(threads=data.draw(st.sampled_from([1, 2]))):
            got = a.oindex[rows, cols]
            points = a.vindex[rows, rows % 12]
        np.testing.assert_array_equal(got, x[rows][:, cols])
        np.testing.assert_array_equal(points, x[rows, rows % 12])
        if np.unique((rows % 6000) // 200).size > 1:
            assert streamed and not waves


@needs_prefix
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_gather_missing_and_damaged_chunks(tmp_path, monkeypatch, threads) -> None:
    """A missing chunk reads as the fill value; a damaged one (in the streamed tail, as
    in the first part) is refused naming its key, and reads right once repaired."""
    a, x = stream_array(str(tmp_path))
    (tmp_path / "c" / "3" / "0").unlink()
    x[600:800] = FILL
    streamed, waves = spy_paths(monkeypatch)
    rows = np.array([5, 601, -5399, 1203, 2004, 2005, 4006, 5807, 5808, 5809])
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
        np.testing.assert_array_equal(a.vindex[rows, rows % 12], x[rows, rows % 12])
    assert len(streamed) == 2 and not waves
    for key in ("29/0", "0/0"):  # (the last chunk, then the first)
        path = tmp_path / "c" / key
        good = path.read_bytes()
        path.write_bytes(good[:20] + bytes(len(good) - 20))
        with config.set(threads=threads), pytest.raises(ChunkDecodeError, match=f"c/{key}"):
            a.oindex[rows, :]
        path.write_bytes(good)
    with config.set(threads=threads):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])


@needs_prefix
def test_cold_gathers_are_streamed_too(tmp_path, monkeypatch) -> None:
    """A gather whose first file is cold is streamed as a warm one is, not read in
    waves (its files announced ahead of the parts the threads take: see
    test_gather_cold)."""
    a, x = stream_array(str(tmp_path))
    streamed, waves = spy_paths(monkeypatch)
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    rows = np.array([3, 205, 1010, 4400, 5999 - 190])
    with config.set(threads=2):
        np.testing.assert_array_equal(a.oindex[rows, :], x[rows])
    assert streamed == [5] and not waves
