"""Review of h57/loader (a5ec05a, 1eae7ba): cold gathers of zstd chunks decoded up to a
prefix read their chunk files ahead of the decoding threads (``fancy._ReadAhead``).  The
branch was merged, then reverted (slower on a quiet machine); the guards hold for
main's cold gathers.

No finding.  Guards (pass on main and on the branch; on main the read-ahead's settings
are absent and the gathers read as before): cold gathers whose read-ahead groups, waves
and threads' parts do not line up give what NumPy gives on 2-d and 3-d grids -- several
lines of an orthogonal gather (an index array on two dimensions), points (``vindex``),
negative and repeated indices, chunks stored transposed (F order), missing chunks of a
fill value; a cold gather of an array that refuses missing chunks raises naming the
key; a chunk file that cannot be read (a directory in its place) is refused naming its
key, with no read-ahead thread left behind; and a gather in a forked child reads right.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.engine import fancy
from zarrfast.kernels import zstd_prefix

pytestmark = pytest.mark.skipif(not zstd_prefix.available,
                                reason="zstd_prefix has no zstd library to bind")

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
THREAD = "zarrfast-read-ahead"


def _alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def _set(mp: pytest.MonkeyPatch, name: str, value: object) -> None:
    """A setting of the gathers, where this build has it (the read-ahead's: the branch)."""
    if hasattr(fancy, name):
        mp.setattr(fancy, name, value)


def _array(root, shape, chunks, order, fill, written_frac, rng):
    codecs = [{"name": "transpose", "configuration": {"order": order}}] if order else None
    a = zarrfast.create_array(
        str(root), shape=shape, chunks=chunks, dtype="<i4", fill_value=fill,
        filters=codecs, compressors={"name": "zstd", "configuration": {"level": 1}})
    x = rng.integers(-1000, 1000, size=shape).astype("<i4")
    # whole chunks of the fill value are not stored: the gather reads them as missing
    grid = [-(-s // c) for s, c in zip(shape, chunks, strict=True)]
    for cid in np.ndindex(*grid):
        if rng.random() > written_frac:
            x[tuple(slice(i * c, (i + 1) * c) for i, c in zip(cid, chunks, strict=True))] = fill
    a[...] = x
    return a, x


@SETTINGS
@given(data=st.data(), ndim=st.sampled_from([2, 3]), order=st.booleans(),
       wave=st.integers(1, 7), group=st.integers(1, 5), window=st.integers(1, 4),
       readers=st.integers(1, 3), threads=st.sampled_from([1, 2, 3]),
       written=st.sampled_from([0.0, 0.5, 1.0]))
def test_cold_gathers_on_grids_match_numpy(tmp_path_factory, data, ndim, order, wave, group,
                                          window, readers, threads, written) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = tuple(data.draw(st.integers(3, 40)) for _ in range(ndim))
    chunks = tuple(data.draw(st.integers(1, max(1, s // 2))) for s in shape)
    perm = list(range(ndim))[::-1] if order else None
    a, x = _array(tmp_path_factory.mktemp("a"), shape, chunks, perm, -7, written, rng)
    idx = [np.array(data.draw(st.lists(st.integers(-s, s - 1), min_size=1, max_size=25)),
                    dtype=np.int64) for s in shape]
    n = data.draw(st.integers(1, 40))
    pts = tuple(np.array(data.draw(st.lists(st.integers(-s, s - 1), min_size=n, max_size=n)),
                         dtype=np.int64) for s in shape)
    nb = int(np.prod(chunks)) * 4
    cap = nb + nb // 64 + 4096
    with pytest.MonkeyPatch.context() as mp, config.set(threads=threads):
        mp.setattr(fancy, "first_cold", lambda store, key: True)  # (every probe: cold)
        mp.setattr(fancy, "GATHER_WAVE_BYTES", nb * wave)
        mp.setattr(fancy, "PREFIX_SAVING", -1.0)  # (every wave decoded up to a prefix)
        _set(mp, "READ_AHEAD_GROUP", group)
        _set(mp, "READ_AHEAD_BYTES", cap * group * max(2, window))
        _set(mp, "READ_AHEAD_THREADS", readers)
        # several lines: an index array on the first two dimensions (and a slice after)
        osel = (idx[0], idx[1]) + tuple(slice(None) for _ in shape[2:])
        np.testing.assert_array_equal(a.oindex[osel], x[np.ix_(idx[0], idx[1])])
        assert not _alive()
        # all dimensions by index arrays
        np.testing.assert_array_equal(a.oindex[tuple(idx)], x[np.ix_(*idx)])
        assert not _alive()
        np.testing.assert_array_equal(a.vindex[pts], x[pts])
        assert not _alive()


def test_a_cold_gather_refusing_missing_chunks_names_the_key(tmp_path, monkeypatch) -> None:
    a = zarrfast.create_array(str(tmp_path / "a"), shape=(4000, 8), chunks=(100, 8),
                              dtype="<i4", fill_value=0, compressors={"name": "zstd"})
    x = (np.arange(4000 * 8) % 977 + 1).astype("<i4").reshape(4000, 8)
    a[...] = x
    os.remove(tmp_path / "a" / "c" / "17" / "0")
    strict = zarrfast.open_array(str(tmp_path / "a"), config={"read_missing_chunks": False})
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    _set(monkeypatch, "READ_AHEAD_BYTES", 2**30)
    idx = np.arange(3, 4000, 37)
    with config.set(threads=2):
        with pytest.raises(zarrfast.errors.ChunkNotFoundError, match="c/17/0"):
            strict.oindex[idx, :]
        assert not _alive()
        keep = idx[(idx // 100) != 17]
        np.testing.assert_array_equal(strict.oindex[keep, :], x[keep])
        want = x[idx].copy()
        want[(idx // 100) == 17] = 0
        np.testing.assert_array_equal(a.oindex[idx, :], want)  # (the fill value)
    assert not _alive()


def test_a_chunk_file_that_cannot_be_read_is_named(tmp_path, monkeypatch) -> None:
    """A chunk file that is a symbolic link out of the store's root: the read-ahead's
    read fails, the decoding thread's own read raises naming the key; no thread of the
    read-ahead stays."""
    a = zarrfast.create_array(str(tmp_path / "a"), shape=(3000, 8), chunks=(100, 8),
                              dtype="<i4", fill_value=0, compressors={"name": "zstd"})
    a[...] = (np.arange(3000 * 8) % 977).astype("<i4").reshape(3000, 8)
    path = tmp_path / "a" / "c" / "12" / "0"
    outside = tmp_path / "outside"
    outside.write_bytes(path.read_bytes())
    os.remove(path)
    os.symlink(outside, path)
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    _set(monkeypatch, "READ_AHEAD_BYTES", 2**30)
    with config.set(threads=2), pytest.raises(Exception, match="c/12/0"):
        a.oindex[np.arange(0, 3000, 29), :]
    assert not _alive()


def _child(path: str, q) -> None:  # (in a forked child)
    try:
        fancy.first_cold = lambda store, key: True
        fancy.PREFIX_SAVING = -1.0
        a = zarrfast.open_array(path)
        idx = np.arange(1, 3000, 23)
        with config.set(threads=2):
            got = a.oindex[idx, :]
        q.put(bool(np.array_equal(got, (np.arange(3000 * 8) % 977).reshape(3000, 8)[idx])))
    except BaseException as e:  # pragma: no cover (reported to the parent)
        q.put(repr(e))


@pytest.mark.skipif(sys.platform != "linux", reason="fork")
def test_a_cold_gather_in_a_forked_child_reads_right(tmp_path, monkeypatch) -> None:
    a = zarrfast.create_array(str(tmp_path / "a"), shape=(3000, 8), chunks=(100, 8),
                              dtype="<i4", fill_value=0, compressors={"name": "zstd"})
    a[...] = (np.arange(3000 * 8) % 977).astype("<i4").reshape(3000, 8)
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True)
    monkeypatch.setattr(fancy, "PREFIX_SAVING", -1.0)
    with config.set(threads=2):  # (the parent's pools and read-ahead run first)
        a.oindex[np.arange(0, 3000, 31), :]
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (fork with threads, 3.12)
        p = ctx.Process(target=_child, args=(str(tmp_path / "a"), q))
        p.start()
    p.join(120)
    assert p.exitcode == 0
    assert q.get(timeout=5) is True
