"""``ChunkDecoder.decode_files`` with ``root_of``: the chunk files of several stores (one
root directory each) read in one call, each row's file opened from its own root -- the
compiled kernel and its twin against each other and against python-zstandard and NumPy.
Rows of different roots may have the same relative path (arrays each opened from its own
directory: ``c/0/0`` in each): each must read its own root's file.  A missing file or
root is ``NO_DATA``, a damaged file or a path through a link ``FAILED``."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.decode import DECODED, DECODERS, FAILED, NO_DATA, placement_for
from _helpers.kernels import i64

NBYTES = 96  # each chunk: 96 bytes, placed as (lo, hi) of a (96,) uint8 chunk


def chunk_of(root: int, row: int) -> bytes:
    return bytes((root * 31 + row * 7 + i) % 251 for i in range(NBYTES))


def decode(cls, roots, paths, root_of, regions, share=0):
    """Run ``decode_files`` placing row ``r``'s bytes ``regions[r]`` at ``r * NBYTES``."""
    n = len(paths)
    dst = np.full(n * NBYTES, 0xEE, dtype=np.uint8)
    lo = np.array([a for a, _ in regions], dtype=np.int64)
    shapes = np.array([[b - a] for a, b in regions], dtype=np.int64).reshape(n, 1)
    dec = cls("zstd", NBYTES)
    placement = placement_for(dec, lo, i64(1), dst, np.arange(n, dtype=np.int64) * NBYTES + lo,
                              i64(1), shapes, 1, 1, np.zeros(n, dtype=np.uint8))
    status, sizes, errors = dec.decode_files(list(paths), placement, root=roots, share=share,
                                             root_of=np.array(root_of, dtype=np.int64))
    return status, sizes, errors, dst


@pytest.mark.parametrize("cls", DECODERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rows_of_several_roots(cls, tmp_path_factory, data):
    nroots = data.draw(st.integers(1, 4), label="roots")
    base = tmp_path_factory.mktemp("roots")
    roots = [base / f"a{k}" for k in range(nroots)]
    n = data.draw(st.integers(1, 12), label="rows")
    kinds = data.draw(st.lists(st.sampled_from(["ok", "ok", "ok", "missing", "garbage",
                                                "link"]), min_size=n, max_size=n),
                      label="kinds")
    root_of = data.draw(st.lists(st.integers(0, nroots - 1), min_size=n, max_size=n),
                        label="root_of")
    regions = []
    for _ in range(n):
        a = data.draw(st.integers(0, NBYTES - 1))
        regions.append((a, data.draw(st.integers(a + 1, NBYTES))))
    gone = data.draw(st.booleans(), label="a root missing") and nroots > 1
    paths = []
    for r, (kind, k) in enumerate(zip(kinds, root_of, strict=True)):
        # (the same relative path in every root: row r's file is c/<r>)
        rel = f"c/{r}"
        paths.append(rel.encode())
        d = roots[k] / "c"
        d.mkdir(parents=True, exist_ok=True)
        if kind == "ok":
            (roots[k] / rel).write_bytes(zstandard.compress(chunk_of(k, r)))
        elif kind == "garbage":
            (roots[k] / rel).write_bytes(b"not a zstd frame")
        elif kind == "link":  # (a link to a good chunk: not followed)
            target = base / f"target{r}"
            target.write_bytes(zstandard.compress(chunk_of(k, r)))
            os.symlink(target, roots[k] / rel)
        # every other root holds a different chunk at the same path: never to be read
        for other in range(nroots):
            if other != k:
                (roots[other] / "c").mkdir(parents=True, exist_ok=True)
                if not (roots[other] / rel).exists():
                    (roots[other] / rel).write_bytes(
                        zstandard.compress(chunk_of(other + 100, r)))
    if gone:
        for p in sorted(roots[nroots - 1].rglob("*"), reverse=True):
            p.unlink() if not p.is_dir() else p.rmdir()
        roots[nroots - 1].rmdir()
    status, sizes, errors, dst = decode(cls, [os.fsencode(r) for r in roots], paths,
                                        root_of, regions, share=data.draw(st.integers(0, 2)))
    want = np.full(n * NBYTES, 0xEE, dtype=np.uint8)
    for r, (kind, k, (a, b)) in enumerate(zip(kinds, root_of, regions, strict=True)):
        if gone and k == nroots - 1:
            assert status[r] == NO_DATA, (r, status)
            continue
        expected = {"ok": DECODED, "missing": NO_DATA, "garbage": FAILED,
                    "link": FAILED}[kind]
        assert status[r] == expected, (r, kind, status)
        if kind == "link":
            assert errors[r] == errno.ELOOP
        if kind == "ok":
            want[r * NBYTES + a:r * NBYTES + b] = np.frombuffer(chunk_of(k, r)[a:b],
                                                                dtype=np.uint8)
    assert np.array_equal(dst, want)


@pytest.mark.parametrize("cls", DECODERS)
def test_compiled_and_twin_agree(cls, tmp_path):
    """One case, both implementations, the same bytes (and the twin is the reference)."""
    roots = []
    for k in range(3):
        (tmp_path / f"s{k}" / "c").mkdir(parents=True)
        for r in range(3):
            (tmp_path / f"s{k}" / "c" / str(r)).write_bytes(
                zstandard.compress(chunk_of(k, r)))
        roots.append(os.fsencode(tmp_path / f"s{k}"))
    paths = [b"c/0", b"c/1", b"c/2", b"c/0", b"c/2", b"c/1"]
    root_of = [2, 0, 1, 1, 2, 0]
    got = decode(cls, roots, paths, root_of, [(0, NBYTES)] * 6, share=1)
    twin = decode(DECODERS[0].values[0], roots, paths, root_of, [(0, NBYTES)] * 6)
    assert not got[0].any() and np.array_equal(got[3], twin[3])
    for r, (k, p) in enumerate(zip(root_of, paths, strict=True)):
        assert bytes(got[3][r * NBYTES:(r + 1) * NBYTES]) == chunk_of(k, int(p[2:]))


@pytest.mark.parametrize("cls", DECODERS)
def test_bad_arguments(cls, tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0").write_bytes(zstandard.compress(chunk_of(0, 0)))
    root = os.fsencode(tmp_path)
    with pytest.raises(ValueError, match="root_of"):
        decode(cls, [root], [b"c/0", b"c/0"], [0], [(0, 1), (0, 1)])
    with pytest.raises(ValueError, match="not one of the 1 roots"):
        decode(cls, [root], [b"c/0"], [1], [(0, 1)])
    with pytest.raises(TypeError, match="root"):
        decode(cls, root, [b"c/0"], [0], [(0, 1)])
    with pytest.raises(TypeError, match="root 0"):
        decode(cls, ["not bytes"], [b"c/0"], [0], [(0, 1)])
