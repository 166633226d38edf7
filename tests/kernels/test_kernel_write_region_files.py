"""Writes of regions of an array straight to files: ``_ext._fileio.write_region_files``
against its twin and against NumPy's bytes of the same regions (C order, then the
extra bytes or the extra bytes first), short runs staged and long ones written in
place, more runs than one ``writev`` takes, files of fill values left out, refused
links, and the checks made before anything is written.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

from _helpers.kernels import names_checked_first

try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None

IMPLS = [pytest.param(ref.write_region_files, id="reference")]
if _fileio is not None:
    IMPLS.append(pytest.param(_fileio.write_region_files, id="compiled"))


if _fileio is not None:
    IMPLS.append(pytest.param(names_checked_first(_fileio.write_region_files),
                              id="compiled-names-checked-first"))


def region_bytes(a: np.ndarray, starts, shape) -> bytes:
    """NumPy's C-order bytes of the block of ``a`` at ``starts`` of ``shape``."""
    return np.ascontiguousarray(
        a[tuple(slice(s, s + n) for s, n in zip(starts, shape, strict=True))]).tobytes()


def write(impl, tmp_path, a, blocks, shape, *, fill=None, extra=None, extra_first=False,
          names=None):
    """Write one file per entry of ``blocks`` (a list of lists of block starts) with
    ``impl``; the statuses and the bytes of each file (``None``: not there)."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    names = names or [f"f{i}" for i in range(len(blocks))]
    strides = np.array(a.strides, dtype=np.int64)
    offsets = np.array([[int(np.dot(s, a.strides)) for s in starts] for starts in blocks],
                       dtype=np.int64).reshape(len(blocks), -1)
    try:
        status = impl(np.full(len(blocks), fd, dtype=np.int64),
                      [f".tmp-{n}".encode() for n in names], [n.encode() for n in names],
                      a.reshape(-1).view(np.uint8), offsets, strides,
                      np.array(shape, dtype=np.int64), a.itemsize, fill, extra, extra_first)
    finally:
        os.close(fd)
    held = []
    for n in names:
        p = tmp_path / n
        held.append(p.read_bytes() if p.exists() and not p.is_symlink() else None)
    return status.tolist(), held


def expected(a, blocks, shape, extra=b"", extra_first=False):
    out = []
    for starts in blocks:
        body = b"".join(region_bytes(a, s, shape) for s in starts)
        out.append(extra + body if extra_first else body + extra)
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("extra_first", [False, True])
def test_shards_of_inner_chunks_then_their_index(impl, tmp_path, extra_first):
    """Four files of three 64x64 uint16 blocks each (runs of 128 B: staged) and a
    4100-byte extra (a shard index), and blocks of whole rows (one run per block)."""
    a = np.random.default_rng(0).integers(0, 2**16, (320, 512), dtype=np.uint16)
    blocks = [[(r, c), (r, c + 64), (r + 64, c)] for r, c in ((0, 0), (64, 128), (128, 256),
                                                              (192, 384))]
    extra = bytes(range(256)) * 16 + b"crc!"
    status, held = write(impl, tmp_path, a, blocks, (64, 64), extra=extra,
                         extra_first=extra_first)
    assert status == [0] * 4
    assert held == expected(a, blocks, (64, 64), extra, extra_first)
    # whole rows: the block's rows are one contiguous run of 16 KiB (written in place)
    rows = [[(0, 0), (100, 0)], [(16, 0), (200, 0)]]
    status, held = write(impl, tmp_path, a, rows, (16, 512),
                         names=["r0", "r1"])
    assert status == [0, 0] and held == expected(a, rows, (16, 512))
    assert sorted(os.listdir(tmp_path)) == ["f0", "f1", "f2", "f3", "r0", "r1"]


@pytest.mark.parametrize("impl", IMPLS)
def test_more_runs_than_one_writev_and_more_than_the_staging_buffer(impl, tmp_path):
    """A file of 4096 runs of 8 bytes (staged together), one of 300 runs of 2 KiB
    (600 KiB, several fills of the 128 KiB staging buffer), one mixing runs of 8 KiB
    written in place with an extra (the iovecs in order), and one of 1100 runs of 4 KiB
    in place (over the 1024 iovecs of one ``writev``)."""
    a = np.random.default_rng(1).integers(0, 2**32, (4096, 2048), dtype=np.uint32)
    cases = [((4096, 2), [[(0, 5)]]), ((300, 512), [[(7, 1000)]]),
             ((10, 2048), [[(0, 0), (100, 0)]]), ((1100, 1024), [[(3, 512)]])]
    for i, (shape, blocks) in enumerate(cases):
        status, held = write(impl, tmp_path, a, blocks, shape, extra=b"tail",
                             names=[f"case{i}"])
        assert status == [0]
        assert held == expected(a, blocks, shape, b"tail"), (shape, blocks)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("extra_first", [False, True])
def test_extras_around_more_than_1024_runs_in_place(impl, tmp_path, extra_first):
    """1023 and 1024 runs in place plus the extra: the extra is queued right at the
    1024-iovec boundary (before the first run, or after the last)."""
    a = np.random.default_rng(7).integers(0, 2**8, (1100, 4096), dtype=np.uint8)
    for n in (1023, 1024, 1025):
        status, held = write(impl, tmp_path, a, [[(1, 0)]], (n, 4096), extra=b"EXTRA",
                             extra_first=extra_first, names=[f"n{n}"])
        assert status == [0]
        assert held == expected(a, [[(1, 0)]], (n, 4096), b"EXTRA", extra_first)


@pytest.mark.parametrize("impl", IMPLS)
def test_permuted_and_reversed_outer_strides(impl, tmp_path):
    """Regions of a transposed view (outer strides out of order) and of a view flipped
    along its first dimension (a negative stride): the bytes of those views' blocks."""
    base = np.random.default_rng(8).integers(0, 2**16, (6, 40, 64), dtype="<u2")
    for k, view in enumerate((base.transpose(1, 0, 2), base[::-1])):
        flat = base.reshape(-1).view(np.uint8)
        fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        start = (2, 1, 8)
        offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
                  + int(np.dot(start, view.strides)))
        try:
            status = impl(np.array([fd], np.int64), [b".t"], [f"v{k}".encode()], flat,
                          np.array([[offset]], np.int64), np.array(view.strides, np.int64),
                          np.array([3, 4, 16], np.int64), 2)
        finally:
            os.close(fd)
        assert status.tolist() == [0]
        assert (tmp_path / f"v{k}").read_bytes() == region_bytes(view, start, (3, 4, 16))


@pytest.mark.parametrize("impl", IMPLS)
def test_files_with_a_region_of_fill_are_left_out(impl, tmp_path):
    a = np.random.default_rng(2).integers(1, 100, (64, 64), dtype="<i4")
    a[:16, :16] = 7            # a region all of fill
    a[16:32, :16] = 7
    a[31, 15] = 8              # the fill value but for its last item
    a[32:48, :16] = 7
    a[32, 0] = 9               # ... but for its first
    a[48:64, :16] = 7
    a[55, 9] = 6               # ... but for one in the middle of a run
    blocks = [[(0, 0), (48, 48)], [(16, 0), (48, 48)], [(32, 0), (48, 48)],
              [(48, 48), (0, 0)], [(48, 48), (48, 32)], [(48, 0), (48, 48)]]
    fill = np.frombuffer(np.int32(7).tobytes(), dtype=np.uint8)
    status, held = write(impl, tmp_path, a, blocks, (16, 16), fill=fill)
    assert status == [-1, 0, 0, -1, 0, 0]
    want = expected(a, blocks, (16, 16))
    assert held == [None, want[1], want[2], None, want[4], want[5]]
    assert sorted(os.listdir(tmp_path)) == ["f1", "f2", "f4", "f5"]  # no temporary file


@pytest.mark.parametrize("impl", IMPLS)
def test_a_large_region_of_fill_and_one_differing_at_its_end(impl, tmp_path):
    """4 MiB of zeros is all fill (run by run); the same with its very last byte set
    is written."""
    a = np.zeros((1024, 4096), dtype=np.uint8)
    fill = np.zeros(1, dtype=np.uint8)
    status, _ = write(impl, tmp_path, a, [[(0, 0)]], (1024, 4096), fill=fill, names=["z"])
    assert status == [-1]
    a[-1, -1] = 1
    status, held = write(impl, tmp_path, a, [[(0, 0)]], (1024, 4096), fill=fill,
                         names=["z"])
    assert status == [0] and held == [a.tobytes()]


@pytest.mark.parametrize("impl", IMPLS)
def test_links_missing_directories_and_taken_temporary_names(impl, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "gone").mkdir()
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    (tmp_path / "d" / "link").symlink_to(outside)
    (tmp_path / "d" / ".tmp-taken").write_bytes(b"x")
    a = np.arange(64 * 64, dtype="<u2").reshape(64, 64)
    items = [("d", "a", ".tmp-a"), ("d", "link", ".tmp-link"), ("gone", "b", ".tmp-b"),
             ("d", "c", ".tmp-taken"), ("d", "e", ".tmp-e")]
    fds = {d: os.open(tmp_path / d, os.O_RDONLY | os.O_DIRECTORY) for d in ("d", "gone")}
    os.rmdir(tmp_path / "gone")
    offsets = np.array([[0], [64 * 2 * 8], [16], [0], [64 * 2 * 32 + 32]], dtype=np.int64)
    try:
        status = impl(np.array([fds[d] for d, _, _ in items], dtype=np.int64),
                      [t.encode() for _, _, t in items], [n.encode() for _, n, _ in items],
                      a.reshape(-1).view(np.uint8), offsets, np.array(a.strides, np.int64),
                      np.array([8, 8], np.int64), 2)
    finally:
        for fd in fds.values():
            os.close(fd)
    assert status.tolist() == [0, errno.ELOOP, errno.ENOENT, errno.EEXIST, 0]
    assert (tmp_path / "d" / "a").read_bytes() == a[:8, :8].tobytes()
    assert (tmp_path / "d" / "e").read_bytes() == a[32:40, 16:24].tobytes()
    assert outside.read_bytes() == b"precious" and (tmp_path / "d" / "link").is_symlink()
    assert sorted(os.listdir(tmp_path / "d")) == [".tmp-taken", "a", "e", "link"]


@pytest.mark.parametrize("impl", IMPLS)
def test_checked_before_anything_is_written(impl, tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    a = np.zeros((8, 8), dtype="<u2")
    src = a.reshape(-1).view(np.uint8)
    d = np.array([fd], dtype=np.int64)
    strides = np.array([16, 2], dtype=np.int64)
    shape = np.array([4, 4], dtype=np.int64)
    off = np.zeros((1, 1), dtype=np.int64)

    def call(**kw):
        args = dict(dir_fds=d, tmp_names=[b".t"], names=[b"a"], src=src, src_offsets=off,
                    src_strides=strides, shape=shape, itemsize=2)
        args.update(kw)
        return impl(*args.values())

    try:
        with pytest.raises(ValueError, match="1 names but 2 temporary"):
            call(tmp_names=[b".t", b".u"])
        with pytest.raises(ValueError, match="one path component"):
            call(names=[b"sub/a"])
        with pytest.raises(ValueError, match="last src stride"):
            call(src_strides=np.array([2, 16], dtype=np.int64))  # runs not contiguous
        with pytest.raises(ValueError, match="touches bytes"):
            call(src_offsets=np.array([[100]], dtype=np.int64))  # past the end of src
        with pytest.raises(ValueError, match="empty regions"):
            call(shape=np.array([0, 4], dtype=np.int64))
        with pytest.raises(ValueError, match="same length"):
            call(shape=np.array([4], dtype=np.int64))
        with pytest.raises(ValueError, match="fill holds 1 bytes"):
            impl(d, [b".t"], [b"a"], src, off, strides, shape, 2, np.zeros(1, np.uint8))
    finally:
        os.close(fd)
    assert os.listdir(tmp_path) == []


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_kernel_twin_and_numpy_agree_on_random_layouts(tmp_path_factory, data):
    """Random ranks, item sizes, region shapes (short runs, long runs, whole rows),
    several regions per file, fill values and extras: the compiled kernel writes what
    its twin writes, which is NumPy's bytes."""
    ndim = data.draw(st.integers(1, 4), label="ndim")
    dtype = data.draw(st.sampled_from(["u1", "<u2", "<i4", "<f8"]), label="dtype")
    arr_shape = data.draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim)
                          .map(tuple), label="array shape")
    if data.draw(st.booleans(), label="long last dim"):
        arr_shape = (*arr_shape[:-1], 1500)
    shape = tuple(data.draw(st.integers(1, n), label=f"region dim {d}")
                  for d, n in enumerate(arr_shape))
    nfiles = data.draw(st.integers(1, 3), label="files")
    per = data.draw(st.integers(1, 3), label="regions per file")
    blocks = [[tuple(data.draw(st.integers(0, n - m)) for n, m in
                     zip(arr_shape, shape, strict=True)) for _ in range(per)]
              for _ in range(nfiles)]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    a = rng.integers(0, 3, arr_shape).astype(dtype)  # few values: regions of fill happen
    fill = (np.frombuffer(np.zeros(1, dtype).tobytes(), dtype=np.uint8)
            if data.draw(st.booleans(), label="fill") else None)
    extra = data.draw(st.sampled_from([None, b"", b"index", bytes(5000)]), label="extra")
    first = data.draw(st.booleans(), label="extra first")
    results = []
    for impl in IMPLS:
        where = tmp_path_factory.mktemp("w")
        results.append(write(impl.values[0], where, a, blocks, shape, fill=fill, extra=extra,
                             extra_first=first))
    want = expected(a, blocks, shape, extra or b"", first)
    for status, held in results:
        for i, starts in enumerate(blocks):
            all_fill = fill is not None and any(
                not region_bytes(a, s, shape).strip(b"\0") for s in starts)
            assert status[i] == (-1 if all_fill else 0)
            assert held[i] == (None if all_fill else want[i])
    assert results[0] == results[-1]
