"""The pages of large results kept for the next result of the same size
(``PageBuffer(size, keep)``, config ``result_page_cache``).

A kept mapping still holds the values of the result that went, so every read into one
must write each element itself: these tests fill the kept pages with values that
differ from everything the next read should return, then read arrays whose chunks are
missing (fill values), partly written, stored uncompressed or compressed, in one file
each or in shards, and compare with NumPy.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast import kernels
from zarrfast.kernels import buffers

pytestmark = pytest.mark.skipif(kernels.PageBuffer is None,
                                reason="PageBuffer is not compiled here")

MiB = 2**20


@pytest.fixture(autouse=True)
def _no_kept_pages():
    kernels.release_kept_pages()
    yield
    kernels.release_kept_pages()


def _address(pages) -> int:
    return np.frombuffer(pages, dtype=np.uint8).ctypes.data


def test_a_buffer_that_goes_is_kept_for_the_next_of_its_size():
    first = kernels.PageBuffer(3 * MiB + 5, 8 * MiB)
    at = _address(first)
    np.frombuffer(first, dtype=np.uint8)[:] = 7
    assert kernels.kept_pages() == (0, 0)
    del first
    count, nbytes = kernels.kept_pages()
    assert count == 1 and nbytes >= 3 * MiB + 5
    other = kernels.PageBuffer(3 * MiB + 6, 8 * MiB)  # (another size: fresh pages)
    assert _address(other) != at and not np.frombuffer(other, dtype=np.uint8).any()
    again = kernels.PageBuffer(3 * MiB + 5, 8 * MiB)
    assert _address(again) == at and again.nbytes == 3 * MiB + 5
    assert kernels.kept_pages() == (0, 0)
    view = np.frombuffer(again, dtype=np.uint8)
    view[:] = 9  # (the pages are writable and whole)
    assert (view == 9).all()


def test_what_is_kept_stays_within_the_limit_and_the_slots():
    limit = 10 * MiB
    sizes = [2 * MiB, 2 * MiB + 1, 2 * MiB + 2, 2 * MiB + 3, 2 * MiB + 4]
    pages = [kernels.PageBuffer(n, limit) for n in sizes]
    addresses = [_address(p) for p in pages]
    while pages:  # the first size goes first
        del pages[0]
    count, nbytes = kernels.kept_pages()
    assert count == 2 and nbytes <= limit  # each mapping is its size plus 2 MiB
    # the oldest were given back; the two newest are reused
    assert _address(kernels.PageBuffer(sizes[4], limit)) == addresses[4]
    assert _address(kernels.PageBuffer(sizes[3], limit)) == addresses[3]
    # a buffer larger than the limit is never kept
    big = kernels.PageBuffer(12 * MiB, limit)
    del big
    assert kernels.kept_pages()[0] <= 2 and kernels.kept_pages()[1] <= limit
    # eight slots at most, whatever the limit
    pages = [kernels.PageBuffer(MiB + k, 2**30) for k in range(10)]
    while pages:
        del pages[0]
    assert kernels.kept_pages()[0] == 8


def test_keep_zero_gives_back_what_was_kept():
    kept = kernels.PageBuffer(2 * MiB, 8 * MiB)
    del kept
    assert kernels.kept_pages()[0] == 1
    plain = kernels.PageBuffer(2 * MiB)
    del plain
    assert kernels.kept_pages() == (0, 0)
    with pytest.raises(ValueError, match="negative"):
        kernels.PageBuffer(MiB, -1)


def test_the_config_key_bounds_what_reads_keep(monkeypatch):
    monkeypatch.setattr(buffers, "PAGES_MIN_BYTES", 2**16)
    a = zarrfast.create_array({}, shape=(64, 512), chunks=(16, 64), dtype="<f8")
    a[...] = 1.5
    with zarrfast.config.set(result_page_cache=0):
        a[...]
        assert kernels.kept_pages() == (0, 0)
    got = a[...]
    at = got.ctypes.data
    del got
    assert kernels.kept_pages()[0] == 1
    again = a[...]
    assert again.ctypes.data == at and (again == 1.5).all()
    with pytest.raises(zarrfast.config.BadConfigError):
        with zarrfast.config.set(result_page_cache=-1):
            pass


def test_scratch_buffers_asked_for_with_reuse_are_kept_for_the_next():
    small = buffers.empty(buffers.REUSE_MIN_BYTES - 1, np.uint8, where="", what="x",
                          reuse=True)
    del small  # (below the size: np.empty's, nothing kept)
    assert kernels.kept_pages() == (0, 0)
    first = buffers.empty(buffers.REUSE_MIN_BYTES + 3, np.uint8, where="", what="x",
                          reuse=True)
    at = first.ctypes.data
    del first
    assert kernels.kept_pages()[0] == 1
    again = buffers.empty(buffers.REUSE_MIN_BYTES + 3, np.uint8, where="", what="x",
                          reuse=True)
    assert again.ctypes.data == at and again.flags.writeable
    assert kernels.kept_pages() == (0, 0)
    with zarrfast.config.set(result_page_cache=0):  # (none kept: the config says so)
        plain = buffers.empty(buffers.REUSE_MIN_BYTES, np.uint8, where="", what="x",
                              reuse=True)
    del plain
    assert kernels.kept_pages() == (0, 0)


def _vm_flags(address: int) -> set[str]:
    """The ``VmFlags`` of the mapping that holds ``address`` (``/proc/self/smaps``)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return set(line.split()[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="no /proc/self/smaps")
def test_scratch_buffers_do_not_ask_for_huge_pages_results_do():
    # ("hg": madvise(MADV_HUGEPAGE) on the mapping)
    scratch = buffers.empty(buffers.REUSE_MIN_BYTES, np.uint8, where="", what="x",
                            reuse=True)
    result = buffers.empty(buffers.PAGES_MIN_BYTES, np.uint8, where="", what="x",
                           aligned=True)
    assert "hg" not in _vm_flags(scratch.ctypes.data)
    assert "hg" in _vm_flags(result.ctypes.data)
    assert "hg" in _vm_flags(np.frombuffer(kernels.PageBuffer(MiB), np.uint8).ctypes.data)


def test_blosc_writes_of_new_arrays_reuse_the_pages_of_their_scratch_buffers(
        tmp_path, monkeypatch):
    # each array's chain has its own per-thread buffers: the next array's write takes
    # over the pages of the last one's (stale bytes in them), and its chunks are still
    # exactly the per-chunk path's
    monkeypatch.setattr(buffers, "REUSE_MIN_BYTES", 2**12)
    comp = zarrfast.codecs.BloscCodec("lz4", 5, "bitshuffle", 2, 0)
    rng = np.random.default_rng(5)
    values = [np.cumsum(rng.integers(0, 3 + k, (48, 256)), axis=1).astype("<u2")
              for k in range(2)]

    def write(name, x, batched):
        a = zarrfast.create_array(str(tmp_path / name), shape=x.shape, chunks=(16, 32),
                                  dtype="<u2", compressors=[comp])
        if not batched:
            monkeypatch.setattr(a._chain, "blosc_settings", None)
        with zarrfast.config.set(threads=1):
            a[...] = x
        np.testing.assert_array_equal(a[...], x)
        return a

    first = write("first.zarr", values[0], True)
    assert kernels.kept_pages() == (0, 0)  # (the array still has them)
    del first
    kept = kernels.kept_pages()[0]
    assert kept >= 2  # its gathered and its compressed chunks
    second = write("second.zarr", values[1], True)
    assert kernels.kept_pages()[0] <= kept - 2  # (taken over by the second array)
    del second
    write("per-chunk.zarr", values[1], False)
    stored = [{str(p.relative_to(tmp_path / name)): p.read_bytes()
               for p in (tmp_path / name / "c").rglob("*") if p.is_file()}
              for name in ("second.zarr", "per-chunk.zarr")]
    assert stored[0] == stored[1] and len(stored[0]) == 3 * 8


def _stale(shape, dtype) -> int:
    """Leave the kept pages of a result of ``shape`` and ``dtype`` full of a value no
    test array holds; their address."""
    stale = buffers.empty(shape, dtype, where="", what="x", aligned=True)
    assert stale.nbytes >= buffers.PAGES_MIN_BYTES
    stale[...] = 99
    at = stale.ctypes.data
    del stale
    assert kernels.kept_pages()[0] >= 1
    return at


def _read_on_stale_pages(a, want: np.ndarray) -> None:
    at = _stale(a.shape, a.dtype)
    got = a[...]
    assert got.ctypes.data == at  # (the read did land on the stale pages)
    np.testing.assert_array_equal(got, want)
    del got


@pytest.mark.parametrize("compressors", [None, "zstd"])
@pytest.mark.parametrize("fill", [0, 3])
@pytest.mark.parametrize("where", ["memory", "directory"])
@pytest.mark.parametrize("chunks", [(16, 64), (16, 400)])  # (whole rows: decoded in place)
def test_reads_into_kept_pages_write_every_element(tmp_path, monkeypatch, compressors,
                                                   fill, where, chunks):
    monkeypatch.setattr(buffers, "PAGES_MIN_BYTES", 2**16)
    store = {} if where == "memory" else str(tmp_path / "a.zarr")
    kwargs = {} if compressors is None else {"compressors": zarrfast.codecs.ZstdCodec()}
    a = zarrfast.create_array(store, shape=(100, 400), chunks=chunks, dtype="<u2",
                              fill_value=fill, **kwargs)
    want = np.full((100, 400), fill, dtype="<u2")
    _read_on_stale_pages(a, want)  # every chunk missing
    a[5:37, 70:200] = 1  # some chunks whole, some partly written
    a[90:, 390:] = 2  # the corner chunk, partly inside the array
    want[5:37, 70:200] = 1
    want[90:, 390:] = 2
    _read_on_stale_pages(a, want)
    full = np.arange(100 * 400, dtype="<u2").reshape(100, 400) % 97
    a[...] = full
    _read_on_stale_pages(a, full)


@pytest.mark.parametrize("fill", [0, 5])
def test_sharded_reads_into_kept_pages_write_every_element(tmp_path, monkeypatch, fill):
    monkeypatch.setattr(buffers, "PAGES_MIN_BYTES", 2**16)
    a = zarrfast.create_array(str(tmp_path / "s.zarr"), shape=(96, 400), chunks=(8, 50),
                              shards=(32, 200), dtype="<i4", fill_value=fill,
                              compressors=zarrfast.codecs.ZstdCodec())
    want = np.full((96, 400), fill, dtype="<i4")
    _read_on_stale_pages(a, want)  # no shard
    a[0:32, 0:200] = 4  # one whole shard
    a[40:44, 210:260] = 6  # a shard with one inner chunk, partly written
    want[0:32, 0:200] = 4
    want[40:44, 210:260] = 6
    _read_on_stale_pages(a, want)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_keeps_and_reuses_pages(tmp_path):
    kept = kernels.PageBuffer(2 * MiB, 8 * MiB)
    del kept
    assert kernels.kept_pages()[0] == 1
    pid = os.fork()
    if pid == 0:  # the child: exit 0 when it can take, keep and give back pages
        code = 1
        try:
            again = kernels.PageBuffer(2 * MiB, 8 * MiB)  # (the parent's kept mapping)
            np.frombuffer(again, dtype=np.uint8)[:] = 5
            del again
            if kernels.kept_pages()[0] == 1:
                kernels.release_kept_pages()
                code = 0 if kernels.kept_pages() == (0, 0) else 3
            else:
                code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert kernels.kept_pages()[0] == 1  # (the parent's own are untouched)
