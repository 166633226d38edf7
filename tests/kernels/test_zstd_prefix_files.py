"""``_ext._zstd_prefix.decode_prefix_files`` (each chunk file read only up to the zstd
blocks its prefix needs, then decoded, in one ``nogil`` call) against its twin
(``kernels.reference.decode_prefix_files``: each file read whole, numcodecs decodes
it whole), on real files.

Hypothesis draws batches of files (1 to 4 blocks of 128 KiB, blocks that compress
well and badly, so that the first read falls short of a block or skips blocks whose
headers lie past it), missing ones, directories, links, frames cut short or followed
by other bytes, frames of another size, checksummed ones, skippable frames, files
larger than the buffer, and the bytes each needs."""

from __future__ import annotations

import errno
import os
import tempfile

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference, zstd_prefix

pytestmark = pytest.mark.skipif(not zstd_prefix.FILES,
                                reason="the compiled zstd prefix kernel is not built/bound")

BLOCK = 2**17
SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
KINDS = ["ok", "ok", "ok", "ok", "missing", "dir", "link", "cut", "extra", "other",
         "checksum", "big", "skippable"]


def _data(rng: np.random.Generator, nbytes: int, noisy: list[bool]) -> bytes:
    """``nbytes`` bytes whose 128 KiB blocks compress well (small values in runs) or
    badly (random bytes: ``noisy[b]``)."""
    out = []
    for b in range(-(-nbytes // BLOCK)):
        n = min(BLOCK, nbytes - b * BLOCK)
        if noisy[b % len(noisy)]:
            out.append(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        else:
            out.append(np.repeat(rng.integers(0, 40, -(-n // 3), dtype=np.uint8), 3)[:n]
                       .tobytes())
    return b"".join(out)


def _frame(data: bytes, level: int, checksum: bool = False) -> bytes:
    return numcodecs.Zstd(level=level, checksum=checksum).encode(data)


@st.composite
def batches(draw):
    nbytes = draw(st.sampled_from([999, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK,
                                   3 * BLOCK + 17, 4 * BLOCK]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    noisy = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    n = draw(st.integers(0, 6))
    files = []
    for _ in range(n):
        kind = draw(st.sampled_from(KINDS))
        data = _data(rng, nbytes if kind != "other" else nbytes + 5, noisy)
        frame = _frame(data, draw(st.integers(1, 5)), checksum=kind == "checksum")
        if kind == "cut":
            frame = frame[:draw(st.integers(0, len(frame) - 1))]
        elif kind == "extra":
            frame += bytes(draw(st.integers(1, 9)))
        elif kind == "skippable":  # (a skippable frame holding the zstd frame)
            frame = (0x184D2A50).to_bytes(4, "little") + len(frame).to_bytes(4, "little") + frame
        files.append((kind, data, frame))
    needs = [draw(st.integers(0, nbytes)) for _ in range(n)]
    return nbytes, files, np.array(needs, dtype=np.int64)


def _lay_out(root: str, files) -> tuple[list[bytes], int]:
    """The files under ``root`` (each in a directory of its own, as chunk keys are);
    their paths, and a buffer size that only the ``big`` ones exceed."""
    paths = []
    cap = max([len(f) for k, _, f in files if k != "big"] + [1])
    for r, (kind, _, frame) in enumerate(files):
        path = f"c/{r}/0"
        os.makedirs(os.path.join(root, "c", str(r)))
        full = os.path.join(root, path)
        if kind == "dir":
            os.makedirs(full)
        elif kind == "link":
            with open(full + ".real", "wb") as f:
                f.write(frame)
            os.symlink(full + ".real", full)
        elif kind == "big":
            with open(full, "wb") as f:
                f.write(frame + bytes(max(0, cap + 1 - len(frame))))
        elif kind != "missing":
            with open(full, "wb") as f:
                f.write(frame)
        paths.append(path.encode())
    return paths, cap


def _run(how: str, root: bytes, paths, cap: int, nbytes: int, needs, gap: int = 3):
    n = len(paths)
    dst = np.full(n * (nbytes + gap) + gap, 0xA5, dtype=np.uint8)
    dst_offsets = np.arange(n, dtype=np.int64) * (nbytes + gap) + gap
    work = np.empty(cap, dtype=np.uint8)
    if how == "twin":
        status, errs = np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int64)
        reference.decode_prefix_files(None, root, list(paths), work, dst, dst_offsets, needs,
                                      nbytes, status, errs)
    else:
        status, errs = zstd_prefix.decode_prefix_files(root, list(paths), work, dst,
                                                       dst_offsets, needs, nbytes)
    return status, errs, dst, dst_offsets


@SETTINGS
@given(batch=batches())
def test_the_files_kernel_decodes_what_its_twin_and_numcodecs_do(batch) -> None:
    nbytes, files, needs = batch
    with tempfile.TemporaryDirectory() as tmp:
        paths, cap = _lay_out(tmp, files)
        root = os.fsencode(tmp)
        k_status, k_errs, k_dst, at = _run("kernel", root, paths, cap, nbytes, needs)
        t_status, t_errs, t_dst, _ = _run("twin", root, paths, cap, nbytes, needs)
    assert k_status.tolist() == t_status.tolist()
    assert k_errs.tolist() == t_errs.tolist()
    expected = {"ok": zstd_prefix.DECODED, "missing": zstd_prefix.NO_DATA,
                "dir": zstd_prefix.NO_DATA}
    for r, (kind, data, _) in enumerate(files):
        lo, need = int(at[r]), int(needs[r])
        assert k_status[r] == expected.get(kind, zstd_prefix.FAILED), kind
        assert k_errs[r] == {"link": errno.ELOOP, "big": errno.EFBIG}.get(kind, 0), kind
        if kind == "ok":  # at least the bytes needed, numcodecs' and the twin's
            assert bytes(k_dst[lo:lo + need]) == data[:need] == bytes(t_dst[lo:lo + need])
    # nothing written outside each file's nbytes of dst
    for r in range(len(files) + 1):
        lo = 0 if r == 0 else int(at[r - 1]) + nbytes
        hi = int(at[r]) if r < len(files) else k_dst.size
        assert not (k_dst[lo:hi] != 0xA5).any()


@pytest.mark.parametrize("noisy", [[True, False, False, False], [False, True, True, True]])
def test_reads_past_a_short_first_read_and_walks_the_headers_it_skipped(tmp_path, noisy
                                                                        ) -> None:
    """A first block much larger than the others (the first read, sized by the share of
    blocks needed, falls short of it: a second read gets the rest) and a first block
    much smaller (the headers of the blocks after it lie past the first read: each read
    on its own): every prefix decodes, and a frame cut short or lengthened in its last
    block (never decoded) is still refused."""
    nbytes = 4 * BLOCK
    data = _data(np.random.default_rng(7), nbytes, noisy)
    frame = _frame(data, 1)
    cut, extra = frame[:-1], frame + b"\0"
    files = [("ok", data, frame), ("cut", data, cut), ("extra", data, extra)]
    paths, cap = _lay_out(str(tmp_path), files)
    for need in (1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 5, nbytes):
        status, errs, dst, at = _run("kernel", os.fsencode(tmp_path), paths, cap, nbytes,
                                     np.full(3, need, dtype=np.int64))
        assert status.tolist() == [zstd_prefix.DECODED, zstd_prefix.FAILED,
                                   zstd_prefix.FAILED], need
        assert errs.tolist() == [0, 0, 0]
        assert bytes(dst[int(at[0]):int(at[0]) + need]) == data[:need]


def test_a_file_damaged_past_the_bytes_needed_decodes_up_to_them(tmp_path) -> None:
    """Only the blocks holding the bytes needed are read and decoded (the others' headers
    only): damage inside a later block is never seen; the twin, decoding whole frames,
    fails on it."""
    data = _data(np.random.default_rng(1), 3 * BLOCK, [False])
    frame = bytearray(_frame(data, 1))
    frame[-40:] = bytes(40)  # (the last block's end)
    paths, cap = _lay_out(str(tmp_path), [("ok", data, bytes(frame))])
    root, need = os.fsencode(tmp_path), np.array([BLOCK // 2])
    status, _, dst, at = _run("kernel", root, paths, cap, 3 * BLOCK, need)
    assert status.tolist() == [zstd_prefix.DECODED]
    assert bytes(dst[int(at[0]):int(at[0]) + BLOCK // 2]) == data[:BLOCK // 2]
    assert _run("twin", root, paths, cap, 3 * BLOCK, need)[0].tolist() == [zstd_prefix.FAILED]
    status, _, _, _ = _run("kernel", root, paths, cap, 3 * BLOCK, np.array([3 * BLOCK]))
    assert status.tolist() == [zstd_prefix.FAILED]


def test_a_missing_root_has_no_files_and_plain_paths_are_read(tmp_path) -> None:
    data = _data(np.random.default_rng(2), 1000, [False])
    paths, cap = _lay_out(str(tmp_path), [("ok", data, _frame(data, 3))])
    for how in ("kernel", "twin"):
        status, errs, _, _ = _run(how, os.fsencode(tmp_path / "gone"), paths, cap, 1000,
                                  np.array([1000]))
        assert status.tolist() == [zstd_prefix.NO_DATA] and errs.tolist() == [0]
        plain = [os.fsencode(tmp_path) + b"/" + paths[0]]
        status, _, dst, at = _run(how, None, plain, cap, 1000, np.array([1000]))
        assert status.tolist() == [zstd_prefix.DECODED]
        assert bytes(dst[int(at[0]):int(at[0]) + 1000]) == data


@pytest.mark.parametrize("how", ["kernel", "twin"])
def test_the_files_kernel_refuses_bad_arguments_before_reading(tmp_path, how) -> None:
    from zarrfast._ext import _zstd_prefix as ext

    fn = (reference.decode_prefix_files if how == "twin"
          else ext.decode_prefix_files)
    context = None if how == "twin" else ext.Context()
    root, one = os.fsencode(tmp_path), np.zeros(1, np.int64)
    dst, work = np.full(100, 7, np.uint8), np.empty(10, np.uint8)
    status, errs = np.zeros(1, np.int8), np.zeros(1, np.int64)
    bad = [
        (root, [b"a"], dst, one, np.array([101]), 100),  # need > nbytes
        (root, [b"a"], dst, np.array([1]), one, 100),  # past the end of dst
        (root, [b"a"], dst, one, one, -1),  # nbytes < 0
        (root, [b"a", b"b"], dst, one, one, 10),  # lengths differ
        (root, ["a"], dst, one, one, 10),  # not bytes
        (root, [b"a\0b"], dst, one, one, 10),  # a NUL
        (b"x\0y", [b"a"], dst, one, one, 10),  # a NUL in the root
    ]
    for r, paths, d, offs, needs, nbytes in bad:
        with pytest.raises(ValueError):
            fn(context, r, paths, work, d, offs, needs, nbytes, status, errs)
        assert (dst == 7).all()
