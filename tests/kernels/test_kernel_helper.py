"""The kernels' helper threads (``src_ext/zf_helper.h``): ``decode_files`` and
``decode_regions`` with ``share=k`` hand rows to up to ``k`` C threads.  Whatever they
take, the statuses, sizes and output must be those of the call without them, also with
many callers at once, more helpers than cores, and in a forked child (where the
parent's helpers do not exist)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import zstandard

from _helpers.decode import CompiledDecoder, call_files, call_regions, run_in_threads

pytestmark = pytest.mark.skipif(CompiledDecoder is None, reason="no compiled decoder")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="no helper thread on Windows")

CHUNK = (32, 32, 32)
NBYTES = int(np.prod(CHUNK)) * 2
STRIDES = np.array([32 * 32 * 2, 32 * 2, 2], dtype=np.int64)


def _helper_rows() -> int:
    """Rows the helper thread has decoded (not merely jobs it took: one taken after
    the caller claimed every row does none)."""
    from zarrfast._ext import _decode

    return _decode.helper_jobs()[1]


def _chunks(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    # compressible, and different in every chunk
    return [(rng.integers(0, 50, CHUNK) + 100 * i).astype("<u2") for i in range(n)]


def _box(n: int):
    """Rows placing the chunks (each cut to a different region) into one output, as a
    box read does: (chunk_offsets, dst, dst_offsets, dst_strides, shapes, direct)."""
    shapes = np.array([[32 - (i % 5), 31 - (i % 3), 32] for i in range(n)], dtype=np.int64)
    chunk_offsets = np.array([(i % 5) * STRIDES[0] for i in range(n)], dtype=np.int64)
    # the output: (32, 32, 32 * n) uint16, chunk i's region at [0, 0, 32 * i]
    dst_strides = np.array([32 * 32 * 2 * n, 32 * 2 * n, 2], dtype=np.int64)
    dst_offsets = np.array([i * 32 * 2 for i in range(n)], dtype=np.int64)
    dst = np.zeros(32 * 32 * 32 * 2 * n, dtype=np.uint8)
    direct = np.zeros(n, dtype=np.uint8)
    return chunk_offsets, dst, dst_offsets, dst_strides, shapes, direct


def _expected(chunks: list[np.ndarray], bad: set[int], missing: set[int]) -> np.ndarray:
    n = len(chunks)
    _co, dst, _do, _ds, shapes, _d = _box(n)
    out = dst.view("<u2").reshape(32, 32, 32 * n)
    for i, c in enumerate(chunks):
        if i in bad or i in missing:
            continue
        a, b, _ = shapes[i]
        out[:a, :b, 32 * i:32 * i + 32] = c[i % 5:i % 5 + a, :b, :]
    return dst


def _write(tmp_path, chunks, bad=(), missing=()) -> list[bytes]:
    cctx = zstandard.ZstdCompressor(level=1)
    paths = []
    for i, c in enumerate(chunks):
        p = tmp_path / f"c{i}"
        if i not in missing:
            data = cctx.compress(c.tobytes())
            p.write_bytes(data[:-3] if i in bad else data)  # (truncated: does not decode)
        paths.append(os.fsencode(p))
    return paths


def _decode_files(paths, share):
    n = len(paths)
    co, dst, do, ds, shapes, direct = _box(n)
    status, sizes, errors = call_files(CompiledDecoder("zstd", NBYTES),
        list(paths), co, STRIDES, dst, do, ds, shapes, 2, 1, direct, share=share)
    return status.tolist(), sizes.tolist(), errors.tolist(), dst


@posix_only
def test_shared_file_reads_equal_unshared_and_the_helper_decodes_rows(tmp_path):
    from zarrfast import kernels

    chunks = _chunks(12, seed=1)
    bad, missing = {3, 8}, {5}
    paths = _write(tmp_path, chunks, bad, missing)
    want = _decode_files(paths, share=False)
    assert want[0] == [kernels.NO_DATA if i in missing else
                       kernels.FAILED if i in bad else kernels.DECODED for i in range(12)]
    assert np.array_equal(want[3], _expected(chunks, bad, missing))
    before = _helper_rows()
    for _ in range(200):  # (until the helper has taken some: it starts on the first post)
        got = _decode_files(paths, share=True)
        assert got[:3] == want[:3]
        assert np.array_equal(got[3], want[3])
        if _helper_rows() - before >= 5:
            break
    assert _helper_rows() - before >= 5


@posix_only
def test_shared_region_decodes_equal_unshared_from_many_threads():
    from zarrfast import kernels

    chunks = _chunks(8, seed=2)
    cctx = zstandard.ZstdCompressor(level=1)
    frames = [cctx.compress(c.tobytes()) for c in chunks]
    frames[6] = b"\x00" * 40  # does not decode
    src = np.frombuffer(b"".join(frames), dtype=np.uint8)
    sizes = np.array([len(f) for f in frames], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    sizes[2] = -1  # no data

    def run(share):
        co, dst, do, ds, shapes, direct = _box(8)
        status = call_regions(CompiledDecoder("zstd", NBYTES),
            src, offsets, sizes, co, STRIDES, dst, do, ds, shapes, 2, 1, direct,
            share=share)
        return status.tolist(), dst

    want_status, want = run(False)
    before = _helper_rows()
    assert want_status == [kernels.DECODED] * 2 + [kernels.NO_DATA] + [kernels.DECODED] * 3 + [
        kernels.FAILED, kernels.DECODED]
    assert np.array_equal(want, _expected(chunks, {2, 6}, set()))

    def worker():
        for _ in range(40):
            status, dst = run(True)
            assert status == want_status
            assert np.array_equal(dst, want)

    run_in_threads(worker, 4)
    assert _helper_rows() > before  # (the helper decoded some of the rows)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/task")
def test_the_helper_is_named_and_blocks_asynchronous_signals(tmp_path):
    """Signals go to Python's threads, never to the helper (its reads are not
    interrupted, and a Ctrl-C reaches the interpreter); a crash in it (SIGSEGV,
    SIGBUS) still reaches faulthandler."""
    import signal

    paths = _write(tmp_path, _chunks(4, seed=4))
    before = _helper_rows()
    for _ in range(200):
        _decode_files(paths, share=True)
        if _helper_rows() > before:
            break
    helpers = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                if f.read().strip() != "zarrfast-helper":
                    continue
            with open(f"/proc/self/task/{task}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except FileNotFoundError:  # (a thread that ended meanwhile)
            continue
        helpers.append(int(status["SigBlk"].strip(), 16))
    from zarrfast._ext import _decode

    assert len(helpers) == _decode.helper_threads() >= 1, helpers
    for blocked in helpers:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM):
            assert blocked & (1 << (sig - 1)), f"{sig!r} is not blocked in a helper"
        for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT):
            assert not blocked & (1 << (sig - 1)), f"{sig!r} is blocked in a helper"


@posix_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_gets_a_helper_of_its_own(tmp_path):
    chunks = _chunks(6, seed=3)
    paths = _write(tmp_path, chunks)
    want = _decode_files(paths, share=False)
    _decode_files(paths, share=True)  # (the parent's helper is running)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when the shared reads are right and helped
        code = 1
        try:
            before = _helper_rows()
            for _ in range(200):
                got = _decode_files(paths, share=True)
                if got[:3] != want[:3] or not np.array_equal(got[3], want[3]):
                    code = 2
                    break
                if _helper_rows() > before:
                    code = 0
                    break
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@posix_only
@pytest.mark.parametrize("helpers", [3, 6])
def test_many_helpers_share_one_call_from_many_callers(tmp_path, helpers):
    """More helpers than this machine's cores, posted by several callers at once (one
    job is open at a time: the others run alone): every call gives what the unshared
    call gives, and several helpers decode rows of the same call."""
    from zarrfast._ext import _decode

    chunks = _chunks(24, seed=5)
    bad, missing = {4, 17}, {9}
    paths = _write(tmp_path, chunks, bad, missing)
    want = _decode_files(paths, share=0)

    def worker():
        for _ in range(30):
            got = _decode_files(paths, share=helpers)
            assert got[:3] == want[:3]
            assert np.array_equal(got[3], want[3])

    rows0 = _decode.helper_jobs()[1]
    run_in_threads(worker, 3)
    assert _decode.helper_threads() >= helpers
    # (alone, a call of 24 rows is joined by more than one helper: at least once in 200)
    joined = 0
    for _ in range(200):
        before = _decode.helper_jobs()[0]
        got = _decode_files(paths, share=helpers)
        assert got[:3] == want[:3] and np.array_equal(got[3], want[3])
        joined = max(joined, _decode.helper_jobs()[0] - before)
        if joined >= 2:
            break
    assert joined >= 2, "never more than one helper in a call"
    assert _decode.helper_jobs()[1] > rows0
