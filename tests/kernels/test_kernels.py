"""The compiled kernels (``zarrfast._ext``) against their NumPy twins
(``zarrfast.kernels.reference``): the selector, the signatures, ``read_files_into``.

Every kernel test (here and in ``test_kernel_*.py``) runs both implementations on the
same inputs and requires the same outcome: equal results and output buffers, or the
same exception type. Successful calls are also checked against plain NumPy/Python
semantics (``np.transpose``, an ``ndindex`` loop, ``np.arange(n)[slice]``) so the twin
is not trusted blindly. Explicit cases cover rejection of out-of-bounds regions,
mismatched ranks and other invalid arguments (never a crash).

Without a built ``zarrfast._ext`` the same tests exercise the twin alone.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

from _helpers.decode import READERS
from _helpers.kernels import I64, IMPLS, ext, i64, rng_bytes, run_both

# ---------------------------------------------------------------------------
# selector
# ---------------------------------------------------------------------------


def test_kernels_selector(tmp_path):
    from zarrfast import kernels as _kernels

    pure = os.environ.get("ZARRFAST_PURE_PYTHON") == "1"
    assert _kernels.USING_EXTENSIONS is (ext is not None and not pure)
    if _kernels.USING_EXTENSIONS:
        assert _kernels.copy_region is ext.copy_region
    else:
        assert _kernels.copy_region is ref.copy_region
    code = "from zarrfast import kernels as k; print(k.USING_EXTENSIONS, k.project.__module__)"
    for flag, expected in (("1", False), ("0", ext is not None)):
        env = dict(os.environ, ZARRFAST_PURE_PYTHON=flag)
        # cwd=tmp_path: `python -c` puts its cwd first on sys.path, which from the repo
        # root would import the source tree instead of the installed package
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=tmp_path).stdout.split()
        module = "zarrfast._ext._indexing" if expected else "zarrfast.kernels.reference"
        assert out == [str(expected), module]


def test_twin_signatures_match():
    import inspect

    if ext is None:
        pytest.skip("zarrfast._ext is not built")
    for name in vars(ext):
        params_c = list(inspect.signature(getattr(ext, name)).parameters)
        params_r = list(inspect.signature(getattr(ref, name)).parameters)
        assert params_c == params_r, name


# ---------------------------------------------------------------------------
# read_files_into (batched chunk-file reads)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_read_files_into_reads_sizes_and_reports_errors(impl, tmp_path):
    (tmp_path / "a").write_bytes(bytes(range(8)))
    (tmp_path / "b").write_bytes(b"short")
    (tmp_path / "c").write_bytes(bytes(range(100, 108)))
    (tmp_path / "d").mkdir()
    (tmp_path / "e").write_bytes(b"")
    os.mkfifo(tmp_path / "f")  # opened without blocking, refused: EINVAL
    names = ["a", "b", "missing", "c", "d", "e", "f"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    dst = bytearray(b"\xff" * 56)
    sizes, errors = impl.read_files_into(paths, dst, i64(0, 8, 16, 24, 32, 40, 48), 8)
    assert sizes.tolist() == [8, 5, -1, 8, -1, 0, -1]
    import errno
    assert errors.tolist() == [0, 0, errno.ENOENT, 0, errno.EISDIR, 0, errno.EINVAL]
    assert bytes(dst[0:8]) == bytes(range(8))
    assert bytes(dst[24:32]) == bytes(range(100, 108))
    # nothing is written for files of another size or that failed
    assert bytes(dst[8:24]) == b"\xff" * 16 and bytes(dst[32:56]) == b"\xff" * 24


@pytest.mark.parametrize("impl", IMPLS)
def test_read_files_into_validates_before_reading(impl, tmp_path):
    p = tmp_path / "a"
    p.write_bytes(bytes(8))
    dst = bytearray(16)
    with pytest.raises(ValueError, match="outside the destination"):
        impl.read_files_into([os.fsencode(p)], dst, i64(9), 8)
    with pytest.raises(ValueError, match="outside the destination"):
        impl.read_files_into([os.fsencode(p)], dst, i64(-1), 8)
    with pytest.raises(ValueError, match="1 paths but 2 offsets"):
        impl.read_files_into([os.fsencode(p)], dst, i64(0, 8), 8)
    with pytest.raises(TypeError, match="expected bytes"):
        impl.read_files_into([str(p)], dst, i64(0), 8)
    with pytest.raises(ValueError, match="NUL"):
        impl.read_files_into([b"a\0b"], dst, i64(0), 8)
    with pytest.raises(ValueError, match="negative"):
        impl.read_files_into([os.fsencode(p)], dst, i64(0), -1)


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=0, max_size=12),
       nbytes=st.integers(0, 40), seed=st.integers(0, 2**32 - 1),
       exact=st.booleans(), gap=st.integers(0, 5))
def test_read_files_into_matches_twin(tmp_path_factory, sizes, nbytes, seed, exact, gap):
    """Files of exactly ``nbytes`` (``exact``), or of at most ``nbytes``, are read into
    their slots; nothing else is written."""
    root = tmp_path_factory.mktemp("files")
    paths = []
    for i, size in enumerate(sizes):
        p = root / f"f{i}"
        p.write_bytes(rng_bytes(seed + i, size))
        paths.append(os.fsencode(p))
    slot = nbytes + gap
    offsets = i64(*[i * slot for i in range(len(sizes))])
    got, args = run_both(
        "read_files_into",
        lambda: [list(paths), bytearray(b"\xee" * (slot * len(sizes) + nbytes)),
                 offsets.copy(), nbytes, exact],
        outputs=(1,),
    )
    assert got[0] == "ok"
    file_sizes, errors = got[1]
    assert file_sizes.tolist() == sizes and not errors.any()
    for i, size in enumerate(sizes):
        part = bytes(args[1][i * slot:(i + 1) * slot])
        read = size == nbytes or (not exact and size <= nbytes)
        data = rng_bytes(seed + i, size) if read else b""
        assert part == data + b"\xee" * (slot - len(data))


# -- read_files_into(exact=False), each reader alone ------------------------------------

@pytest.mark.parametrize("impl", READERS)
def test_read_files_into_not_exact(impl, tmp_path):
    (tmp_path / "small").write_bytes(b"abc")
    (tmp_path / "equal").write_bytes(bytes(range(8)))
    (tmp_path / "large").write_bytes(bytes(range(50, 62)))
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    names = ["small", "equal", "large", "empty", "missing", "dir"]
    paths = [os.fsencode(tmp_path / n) for n in names]
    dst = np.full(8 * len(names), 0xEE, dtype=np.uint8)
    offsets = np.arange(len(names), dtype=I64) * 8
    sizes, errors = impl(paths, dst, offsets, 8, False)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    assert errors.tolist() == [0, 0, 0, 0, errno.ENOENT, errno.EISDIR]
    assert dst[0:8].tobytes() == b"abc" + b"\xee" * 5  # the rest of the slot is untouched
    assert dst[8:16].tobytes() == bytes(range(8))
    assert (dst[16:] == 0xEE).all()  # larger file not read; nothing for the others
    # exact (the default): only the file of exactly nbytes bytes is read
    dst = np.full(8 * len(names), 0xEE, dtype=np.uint8)
    sizes, errors = impl(paths, dst, offsets, 8)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    assert (dst[:8] == 0xEE).all() and dst[8:16].tobytes() == bytes(range(8))
    assert (dst[16:] == 0xEE).all()
    # nbytes 0: only empty files fit
    sizes, _ = impl(paths, np.zeros(0, np.uint8), np.zeros(len(names), I64), 0, False)
    assert sizes.tolist() == [3, 8, 12, 0, -1, -1]
    # validation comes first, as with exact=True
    with pytest.raises(ValueError, match="outside the destination"):
        impl(paths[:1], np.zeros(8, np.uint8), i64(1), 8, False)
