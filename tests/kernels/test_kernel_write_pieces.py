"""The file kernels write a file in ``writev`` calls of at most 128 KiB
(``ZF_WRITE_PIECE`` in ``_fileio.pyx``): the bytes of values and regions that cross
that size, one larger than a piece alone, and many small ones gathered up to it, are
the value's bytes (against the twin and NumPy); and, seen by ``strace``, no call of a
whole-shard write asks for more (a larger call has the page cache take 2 MiB folios,
which a VM with free page reporting faults in again from its host).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

needs_kernel = pytest.mark.skipif(_fileio is None, reason="the file kernels are not built")

PIECE = 131072


def write_values(impl, root, values):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        errors = impl(np.full(len(values), fd, dtype=np.int64),
                      [f".tmp-{i}".encode() for i in range(len(values))],
                      [f"v{i}".encode() for i in range(len(values))], values)
    finally:
        os.close(fd)
    return errors.tolist(), [(root / f"v{i}").read_bytes() for i in range(len(values))]


@needs_kernel
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.sampled_from([0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17,
                                       2_400_000]), min_size=1, max_size=4),
       seed=st.integers(0, 2**16))
def test_values_across_the_piece_size(tmp_path_factory, sizes, seed):
    rng = np.random.default_rng(seed)
    values = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    for impl in (_fileio.write_files, ref.write_files):
        root = tmp_path_factory.mktemp("pieces")
        errors, held = write_values(impl, root, values)
        assert errors == [0] * len(values)
        assert held == [v.tobytes() for v in values]


@needs_kernel
@pytest.mark.parametrize("shape", [(96, 2048), (8, 64), (40, 4000), (1, 70000)])
def test_regions_across_the_piece_size(tmp_path, shape):
    """Shards of regions whose runs are larger than a piece (70000 uint32 per row: one
    run of 280 KB), about one (2048: 8 KiB runs, 16 of them a piece), staged (64), and
    awkward (4000: 16000 B runs, the pieces ending inside none of them), then a 4 KiB
    index: the bytes NumPy gives, from the kernel and its twin alike."""
    a = np.random.default_rng(7).integers(0, 2**32, (400, 70000), dtype=np.uint32)
    col = (70000 - shape[1]) // 2  # (every block inside the array)
    blocks = [[(0, 0), (shape[0], 0)], [(200, col), (300 - shape[0] // 2, 0)]]
    strides = np.array(a.strides, dtype=np.int64)
    offsets = np.array([[int(np.dot(s, a.strides)) for s in b] for b in blocks],
                       dtype=np.int64)
    extra = bytes(range(256)) * 16
    want = [b"".join(np.ascontiguousarray(a[r:r + shape[0], c:c + shape[1]]).tobytes()
                     for r, c in b) + extra for b in blocks]
    for k, impl in enumerate((_fileio.write_region_files, ref.write_region_files)):
        root = tmp_path / str(k)
        root.mkdir()
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            status = impl(np.full(2, fd, dtype=np.int64), [b".t0", b".t1"], [b"s0", b"s1"],
                          a.reshape(-1).view(np.uint8), offsets, strides,
                          np.array(shape, dtype=np.int64), a.itemsize, None, extra, False)
        finally:
            os.close(fd)
        assert status.tolist() == [0, 0]
        assert [(root / n).read_bytes() for n in ("s0", "s1")] == want


CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    import zarrfast
    root = sys.argv[1]
    a = zarrfast.create_array(root, shape=(256, 256, 256), chunks=(32, 32, 32),
                              shards=(128, 128, 128), dtype="uint16", compressors=None)
    a[...] = np.random.default_rng(3).integers(0, 2**16, a.shape, dtype=np.uint16)
    a = zarrfast.create_array(root + "-z", shape=(128, 128, 128), chunks=(32, 32, 32),
                              shards=(128, 128, 128), dtype="uint16",
                              compressors=[zarrfast.codecs.ZstdCodec(level=1)])
    a[...] = np.random.default_rng(4).integers(0, 2**16, a.shape, dtype=np.uint16)
""")


@needs_kernel
@pytest.mark.skipif(shutil.which("strace") is None or not sys.platform.startswith("linux"),
                    reason="strace (Linux) is needed to see the system calls")
def test_a_shard_write_asks_for_no_more_than_a_piece_per_call(tmp_path):
    """Shards of 4 MiB (raw: written from the value in place) and of ~4 MiB (zstd of
    noise: compressed into one buffer), by a real process under ``strace``: every
    ``write``/``writev`` of a file returns at most 128 KiB, and the files hold what
    zarrfast reads back."""
    log = tmp_path / "trace"
    root = str(tmp_path / "a.zarr")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=os.pathsep.join(
        # (the tree whose zarrfast this test imported: <tree>/zarrfast/_ext/_fileio...)
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(_fileio.__file__))))]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    subprocess.run(["strace", "-f", "-qq", "-y", "-e", "trace=writev,write", "-s", "0",
                    "-o", str(log), sys.executable, "-c", CHILD, root],
                   check=True, env=env, capture_output=True, cwd=tmp_path)
    # (the calls on the arrays' files only: strace -y names each descriptor's file)
    sizes = [int(m) for m in re.findall(
        r"^\d*\s*writev?\(\d+<[^>]*a\.zarr[^>]*>, .*\)\s+=\s+(\d+)$",
        log.read_text(), re.M)]
    big = [n for n in sizes if n > 16384]
    assert len(big) >= 64  # (the shards' bytes went through these calls: >= 8 MiB)
    assert max(sizes) <= PIECE, sorted(sizes)[-5:]
    import zarrfast

    got = zarrfast.open_array(root)[...]
    assert (got == np.random.default_rng(3).integers(0, 2**16, got.shape,
                                                       dtype=np.uint16)).all()
    got = zarrfast.open_array(root + "-z")[...]
    assert (got == np.random.default_rng(4).integers(0, 2**16, got.shape,
                                                       dtype=np.uint16)).all()
