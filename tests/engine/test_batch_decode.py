"""Batched decoding in the pipeline: zstd (and blosc) arrays read from a ``LocalStore``
a batch of chunk files at a time.

The batched reads are compared with NumPy ground truth, with the per-chunk path
(``disable_batch``), with the pipeline run on the twin decoder, and with zarr-python;
stores that override ``get``, errors naming the chunk key, threads.  The decoder
itself: ``tests/kernels/test_kernel_decode*.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.engine import boxes
from zarrfast.engine import chunked as pipeline
from zarrfast.errors import ChunkDecodeError
from zarrfast.kernels import reference as ref
from zarrfast.storage import LocalStore

from _helpers.decode import (
    DECODED,
    KERNEL_ATTR,
    NO_DATA,
    CompiledDecoder,
    TwinDecoder,
    batch_enabled,
    compress,
    compress_stream,
    disable_batch,
    needs_blosc,
    needs_kernel,
    rle_frame,
    skippable,
)
from _helpers.kernels import rng_bytes
from _helpers.stores import GetAndIntoStore, GetOnlyStore

# ---------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------

class RecordingDecoder(CompiledDecoder if CompiledDecoder is not None else object):
    """The compiled decoder, recording each batch call's direct flags and statuses."""

    log: list = []

    def decode_regions(self, src, src_offsets, src_sizes, placement, share=0):
        status = super().decode_regions(src, src_offsets, src_sizes, placement, share)
        RecordingDecoder.log.append((placement.direct.tolist(), status.tolist()))
        return status

    def decode_files(self, paths, placement, root=None, share=0):  # (read and decode in one call)
        result = super().decode_files(paths, placement, root, share)
        RecordingDecoder.log.append((placement.direct.tolist(), result[0].tolist()))
        return result

    def decode_box_files(self, root, prefix, sep, placement, share=0):
        # (the flags the kernel decided when it made the box's placement)
        flags = placement.direct
        status = super().decode_box_files(root, prefix, sep, placement, share)
        RecordingDecoder.log.append((flags.tolist(), [DECODED] * len(flags) if status is None
                                     else status.tolist()))
        return status


def zstd_codecs(*, endian="little", transpose=None, level=3, checksum=False):
    return dict(
        filters=[{"name": "transpose", "configuration": {"order": list(transpose)}}]
        if transpose else None,
        serializer={"name": "bytes", "configuration": {"endian": endian}},
        compressors=[{"name": "zstd", "configuration": {"level": level, "checksum": checksum}}],
    )


#: name: (shape, chunks, dtype, fill value, codec options, fraction of chunk files deleted)
CONFIGS = {
    "c3d_i2": ((22, 10, 7), (4, 10, 7), "<i2", 7, {}, 0.2),
    "big_f8_T": ((13, 11), (5, 4), ">f8", 1.5, dict(endian="big", transpose=(1, 0)), 0.25),
    "u1_4d_T": ((9, 8, 6, 5), (2, 3, 4, 5), "u1", 3, dict(transpose=(2, 0, 3, 1)), 0.1),
    "i4_1d": ((50,), (7,), "<i4", -1, dict(checksum=True), 0.2),
    "rows_u8": ((6, 40), (1, 40), "<u8", 0, {}, 0.0),
    "big_i2_rows": ((12, 9), (3, 9), ">i2", -5, dict(endian="big"), 0.15),
    "c8_big": ((7, 6), (3, 4), ">c8", 0, dict(endian="big", transpose=(1, 0), level=1), 0.0),
}


def chunk_slices(coords, chunks, shape):
    return tuple(slice(c * k, min((c + 1) * k, n))
                 for c, k, n in zip(coords, chunks, shape, strict=True))


def build(root, name, shape, chunks, dtype, fill, opts, missing, seed=0):
    """Write an array, delete some chunk files; return its ground truth."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        data = rng.normal(size=shape).astype(dt)
    elif dt.kind == "c":
        data = (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    else:
        native = dt.newbyteorder("=")
        info = np.iinfo(native)
        data = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=native)
        data = data.astype(dt)
    arr = zarrfast.create_array(str(root), name=name, shape=shape, chunks=chunks, dtype=dtype,
                                fill_value=fill, overwrite=True, **zstd_codecs(**opts))
    arr[...] = data
    truth = data.astype(dt.newbyteorder("="))
    grid = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    for coords in np.ndindex(*grid):
        if rng.random() < missing:
            path = root / name / "c" / "/".join(map(str, coords))
            if path.exists():
                path.unlink()
            truth[chunk_slices(coords, chunks, shape)] = fill
    return truth


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("arrays")
    truths = {name: build(root, name, *spec, seed=i) for i, (name, spec) in
              enumerate(CONFIGS.items())}
    return root, truths


def open_r(root, name, *, batch=True, **kw):
    arr = zarrfast.open_array(LocalStore(root), path=name, mode="r", **kw)
    if not batch:
        disable_batch(arr._chain)
    return arr


@st.composite
def selections(draw, shape):
    items = []
    for n in shape:
        if draw(st.integers(0, 4)) == 0:
            items.append(draw(st.integers(-n, n - 1)))
        else:
            items.append(draw(st.slices(n)))
    if draw(st.integers(0, 5)) == 0:
        items = items[:draw(st.integers(0, len(items)))]
    return tuple(items)


def single_chunk_read(sel, shape, chunks) -> bool:
    """Whether the pipeline reads ``sel`` with its one-chunk fast path (no batch)."""
    items = list(sel) + [slice(None)] * (len(shape) - len(sel))
    dims = [range(*s.indices(n)) if isinstance(s, slice) else range(s % n, s % n + 1)
            for s, n in zip(items, shape, strict=True)]
    if any(len(r) == 0 for r in dims):
        return True  # empty: nothing is read at all
    return all(r.step == 1 and r[0] // c == r[-1] // c
               for r, c in zip(dims, chunks, strict=True))


@needs_kernel
@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_read_matches_numpy_per_chunk_and_twin(arrays, data):
    root, truths = arrays
    name = data.draw(st.sampled_from(sorted(CONFIGS)))
    shape, chunks = CONFIGS[name][0], CONFIGS[name][1]
    truth = truths[name]
    sel = data.draw(selections(shape))
    want = truth[sel]
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        batched = open_r(root, name)
        assert batch_enabled(batched._chain)
        got = batched[sel]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and np.shape(got) == want.shape
    if not single_chunk_read(sel, shape, chunks):
        assert RecordingDecoder.log, "the batched decoder was not used"
    per_chunk = open_r(root, name, batch=False)
    np.testing.assert_array_equal(per_chunk[sel], want)
    # (the twin decoder takes the twin's placements)
    with mock.patch.object(_kernels, KERNEL_ATTR, TwinDecoder), \
            mock.patch.object(_kernels, "Placement", ref.Placement):
        twin = open_r(root, name)
        np.testing.assert_array_equal(twin[sel], want)
    if len(shape) > 1:
        f = open_r(root, name, order="F")[sel]
        np.testing.assert_array_equal(f, want)


@needs_kernel
def test_whole_chunks_are_decoded_into_place(arrays):
    root, truths = arrays
    cases = [
        ("c3d_i2", np.s_[0:20], [1] * 5),
        ("c3d_i2", np.s_[:], [1] * 5 + [0]),  # the last chunk is cut by the array's edge
        ("c3d_i2", np.s_[4:16, :, 1:], [0] * 3),  # not whole
        ("c3d_i2", np.s_[0:20:2], [0] * 5),  # a step
        ("rows_u8", np.s_[1:5], [1] * 4),
        ("rows_u8", np.s_[:, :39], [0] * 6),
        ("i4_1d", np.s_[0:49], [1] * 7),
        ("i4_1d", np.s_[3:], [0] + [1] * 6 + [0]),
        ("big_i2_rows", np.s_[0:12], [0] * 4),  # a byte swap: never direct
        ("big_f8_T", np.s_[0:10, 0:8], [0] * 4),  # transposed: never direct
    ]
    for name, sel, flags in cases:
        RecordingDecoder.log.clear()
        with config.set(threads=1), mock.patch.object(_kernels, KERNEL_ATTR,
                                                      RecordingDecoder):
            got = open_r(root, name)[sel]
        np.testing.assert_array_equal(got, truths[name][sel])
        seen = [f for direct, _ in RecordingDecoder.log for f in direct]
        assert seen == flags, (name, sel, RecordingDecoder.log)
        # missing chunks reach the kernel as NO_DATA and come back as the fill value
        statuses = [s for _, status in RecordingDecoder.log for s in status]
        assert set(statuses) <= {DECODED, NO_DATA}


@needs_kernel
def test_read_into_out_and_scalars(arrays):
    root, truths = arrays
    arr = open_r(root, "c3d_i2")
    out = np.empty((20, 10, 7), dtype="<i2")
    res = arr.get_basic_selection(np.s_[0:20], out=out)
    assert res is out
    np.testing.assert_array_equal(out, truths["c3d_i2"][0:20])
    assert arr[21, 9, 6] == truths["c3d_i2"][21, 9, 6]


def test_batch_decode_can_be_disabled_by_environment(arrays, subprocess_cwd):
    root, truths = arrays
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import zarrfast
        from zarrfast import kernels as _kernels
        from zarrfast.storage import LocalStore
        assert _kernels.ChunkDecoder is None and not _kernels.BATCH_CODECS
        arr = zarrfast.open_array(LocalStore(sys.argv[1]), path=sys.argv[2], mode="r")
        assert arr._chain.batch_codec is None
        np.save(sys.argv[3], arr[...])
    """)
    env = {k: v for k, v in os.environ.items() if k != "ZARRFAST_PURE_PYTHON"}
    env["ZARRFAST_BATCH_DECODE"] = "0"
    target = root / "env_out.npy"
    proc = subprocess.run([sys.executable, "-c", script, str(root), "big_f8_T", str(target)],
                          env=env, capture_output=True, text=True, timeout=120,
                          cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(target), truths["big_f8_T"])


# -- errors and odd chunk files ------------------------------------------------------

def make_error_array(root, name="grp/arr"):
    shape, chunks = (12, 12), (4, 4)
    data = np.arange(144, dtype="<i4").reshape(shape) * 3 + 1
    arr = zarrfast.create_array(str(root), name=name, shape=shape, chunks=chunks, dtype="<i4",
                                fill_value=-9, **zstd_codecs())
    arr[...] = data
    return data


def bad_files(nbytes):
    chunk = bytes(nbytes)
    frame = compress(rng_bytes(1, nbytes))
    cap = nbytes + nbytes // 64 + 4096
    return {
        "garbage": b"this is not a zstd frame at all",
        "truncated": frame[:len(frame) // 2],
        "short": compress(chunk[:-4]),
        "long": compress(chunk + b"\x00" * 4),
        "short_nosize": compress(chunk[:-4], content_size=False),
        "long_nosize": compress_stream(chunk + b"\x00" * 4),
        "empty": b"",
        "junk_tail": compress(chunk) + b"\x01\x02\x03",
        "over_cap": compress(chunk) + rng_bytes(2, 2 * cap),  # larger than stored_cap
        "over_limit": compress(chunk) + rng_bytes(3, 2 * nbytes + 70_000),  # > 64 KiB more
        "bomb": rle_frame(1 << 32, 5),
        "bomb_declared": rle_frame(nbytes, 5, declare=1 << 40),
        "checksum_cut": compress(chunk, checksum=True)[:-2],
    }


@needs_kernel
@pytest.mark.parametrize("batch", [True, False], ids=["batched", "per-chunk"])
@pytest.mark.parametrize("threads", [1, 2])
def test_bad_chunk_files_raise_naming_the_key(tmp_path, batch, threads):
    data = make_error_array(tmp_path)
    key = "grp/arr/c/1/2"
    path = tmp_path / "grp" / "arr" / "c" / "1" / "2"
    for what, content in bad_files(64).items():
        path.write_bytes(content)
        arr = open_r(tmp_path, "grp/arr", batch=batch)
        with config.set(threads=threads):
            for sel in (np.s_[...], np.s_[2:10, 5:11], np.s_[4:8, 8:12], np.s_[5, 9],
                        np.s_[::3, ::-5]):
                with pytest.raises(ChunkDecodeError, match=key) as info:
                    arr[sel]
                assert "c/1/2" in str(info.value), what
            # the other chunks are unaffected
            for sel in (np.s_[0:4], np.s_[:, 0:8], np.s_[8:, ::2], np.s_[1:12:8, ::3]):
                np.testing.assert_array_equal(arr[sel], data[sel], err_msg=what)


@needs_kernel
def test_chunks_the_kernel_rejects_but_zstd_accepts(tmp_path):
    """Valid zstd streams the batch cannot take (a skippable frame first; a skippable
    frame padding the file beyond ``stored_cap``) go the per-chunk way and decode."""
    data = make_error_array(tmp_path, name="a")
    nbytes = 64
    raw = data[4:8, 8:12].tobytes()
    cap = open_r(tmp_path, "a")._chain.stored_cap
    path = tmp_path / "a" / "c" / "1" / "2"
    for content in (skippable(3) + compress(raw), skippable(nbytes) + compress(raw),
                    compress(raw) + skippable(2 * cap), compress(raw) + skippable(70_000)):
        path.write_bytes(content)
        for batch in (True, False):
            arr = open_r(tmp_path, "a", batch=batch)
            np.testing.assert_array_equal(arr[...], data)
            np.testing.assert_array_equal(arr[3:9, 7:], data[3:9, 7:])


@needs_kernel
def test_missing_and_directory_chunks_read_as_fill(tmp_path):
    data = make_error_array(tmp_path, name="a")
    want = data.copy()
    (tmp_path / "a" / "c" / "0" / "1").unlink()
    want[0:4, 4:8] = -9
    p = tmp_path / "a" / "c" / "2" / "2"
    p.unlink()
    p.mkdir()  # a directory where a chunk file would be: no value
    want[8:12, 8:12] = -9
    for batch in (True, False):
        arr = open_r(tmp_path, "a", batch=batch)
        np.testing.assert_array_equal(arr[...], want)
        np.testing.assert_array_equal(arr[1:11:3, ::-1], want[1:11:3, ::-1])


# -- stores that override get -------------------------------------------------------

@pytest.mark.parametrize("compressed", [True, False], ids=["zstd", "raw"])
def test_get_only_subclass_sees_every_chunk_read(tmp_path, compressed):
    shape, chunks = (10, 12), (4, 4)
    data = np.arange(120, dtype="<f4").reshape(shape)
    opts = zstd_codecs() if compressed else dict(compressors=None)
    arr = zarrfast.create_array(str(tmp_path), name="a", shape=shape, chunks=chunks,
                                dtype="<f4", fill_value=0, **opts)
    arr[...] = data
    src = LocalStore(tmp_path)
    keys = [k for k in src.list() if "/c/" in k]
    overlay = {k: src.get(k) for k in keys}
    for k in keys:  # what is on disk is no chunk: only `get` serves the real ones
        src.set(k, b"\xff" * 7)
    store = GetOnlyStore(tmp_path, overlay)
    assert not store.fast_get_into
    # (mode "r+": see test_read_only_open_keeps_a_store_subclass)
    ro = zarrfast.open_array(store, path="a", mode="r+")
    assert ro._store is store
    for sel in (np.s_[...], np.s_[0:8], np.s_[1:9, 2:11], np.s_[::2, ::-3], np.s_[5],
                np.s_[4:8, 4:8], np.s_[0:4]):
        store.calls.clear()
        np.testing.assert_array_equal(ro[sel], data[sel])
        grid = np.zeros((3, 3), dtype=bool)
        idx = np.arange(120).reshape(shape)[sel]
        for flat in np.ravel(idx):
            i, j = divmod(int(flat), 12)
            grid[i // 4, j // 4] = True
        chunk_calls = [k for k in store.calls if "/c/" in k]
        assert len(chunk_calls) == int(grid.sum()), (sel, store.calls)
        assert len(set(chunk_calls)) == len(chunk_calls)


@needs_kernel
def test_get_and_get_into_subclass_keeps_the_fast_path(tmp_path):
    data = make_error_array(tmp_path, name="a")
    store = GetAndIntoStore(tmp_path)
    assert store.fast_get_into
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        arr = zarrfast.open_array(store, path="a", mode="r+")
        assert arr._store is store
        np.testing.assert_array_equal(arr[...], data)
    assert RecordingDecoder.log  # batched


def test_read_only_open_keeps_a_store_subclass(tmp_path):
    data = make_error_array(tmp_path, name="a")
    store = GetOnlyStore(tmp_path)
    arr = zarrfast.open_array(store, path="a", mode="r")
    store.calls.clear()
    np.testing.assert_array_equal(arr[...], data)
    assert len([k for k in store.calls if "/c/" in k]) == 9


# -- threads --------------------------------------------------------------------------

@needs_kernel
def test_threads_give_the_same_results(tmp_path):
    shape, chunks = (256, 200), (16, 20)
    rng = np.random.default_rng(5)
    data = rng.normal(size=shape).astype(">f8")
    arr = zarrfast.create_array(str(tmp_path), name="t", shape=shape, chunks=chunks,
                                dtype=">f8", fill_value=0.5,
                                **zstd_codecs(endian="big", transpose=(1, 0)))
    arr[...] = data
    truth = data.astype("=f8")
    for coords in [(0, 3), (5, 5), (15, 9)]:
        (tmp_path / "t" / "c" / f"{coords[0]}" / f"{coords[1]}").unlink()
        truth[chunk_slices(coords, chunks, shape)] = 0.5
    arr2 = zarrfast.create_array(str(tmp_path), name="u", shape=shape, chunks=(16, 200),
                                 dtype="<i8", fill_value=0, **zstd_codecs())
    data2 = rng.integers(-(2**40), 2**40, size=shape)
    arr2[...] = data2
    sels = [np.s_[...], np.s_[3:250:2, 7:190], np.s_[::-3, 5], np.s_[16:240], np.s_[100:, ::7]]
    for name, want_all in (("t", truth), ("u", data2)):
        a = open_r(tmp_path, name)
        for sel in sels:
            with config.set(threads=1):
                one = a[sel]
            with config.set(threads=2):
                two = a[sel]
            with config.set(threads=4):
                four = a[sel]
            np.testing.assert_array_equal(one, want_all[sel])
            np.testing.assert_array_equal(two, one)
            np.testing.assert_array_equal(four, one)
    # one Array read from several Python threads at once (per-thread decoders)
    a = open_r(tmp_path, "t")
    errors = []

    def worker(k):
        try:
            for sel in sels[k % len(sels):] + sels[:k % len(sels)]:
                np.testing.assert_array_equal(a[sel], truth[sel])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with config.set(threads=2):
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors


# -- zarr-python ------------------------------------------------------------------------

@pytest.mark.interop
@needs_kernel
@pytest.mark.parametrize(("dtype", "endian", "transpose", "checksum"), [
    ("<i4", "little", None, False),
    (">f8", "big", (1, 0), True),
    ("<u2", "little", (1, 0), False),
])
def test_reads_zarr_python_zstd_arrays(tmp_path, dtype, endian, transpose, checksum):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs import BytesCodec, TransposeCodec, ZstdCodec

    shape, chunks = (23, 17), (5, 4)
    rng = np.random.default_rng(11)
    data = np.abs(rng.normal(size=shape) * 1000).astype(dtype)
    z = zarr.create_array(
        store=str(tmp_path), name="z", shape=shape, chunks=chunks, dtype=dtype,
        compressors=ZstdCodec(level=5, checksum=checksum),
        serializer=BytesCodec(endian=endian),
        filters=[TransposeCodec(order=transpose)] if transpose else (),
        fill_value=3,
    )
    z[0:20, 0:16] = data[0:20, 0:16]  # the rest: missing chunks or fill in edge chunks
    expected = z[...]
    arr = open_r(tmp_path, "z")
    assert batch_enabled(arr._chain)
    sels = [np.s_[...], np.s_[2:21:3, ::-2], np.s_[5:15, 4:12], np.s_[7], np.s_[:, 16],
            np.s_[::-1, 1:17:5]]
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        arr = open_r(tmp_path, "z")
        for sel in sels:
            np.testing.assert_array_equal(arr[sel], expected[sel])
    assert RecordingDecoder.log
    for sel in sels:  # (zarr-python takes no negative steps: its whole read is the truth)
        np.testing.assert_array_equal(open_r(tmp_path, "z", batch=False)[sel], expected[sel])
    np.testing.assert_array_equal(arr[5:15, 4:12], z[5:15, 4:12])


@needs_kernel
def test_pipeline_uses_decode_batch(arrays, monkeypatch):
    """``read_selection`` reads the zstd chunks of a plain LocalStore a batch per kernel
    call (every chunk once), never one by one: a selection with steps through
    ``RowReader.decode_batch``, a step-1 one of more than ``BOX_CHUNKS`` chunks (a full
    read) as parts of the box, one ``decode_box_files`` call each (one part with one
    thread).  Without the batch decoder neither runs."""
    root, truths = arrays
    seen, parts = [], []
    orig = pipeline.RowReader.decode_batch
    orig_parts = boxes.box_parts

    def spy(self, rows, *args, **kwargs):
        seen.append(len(rows))
        return orig(self, rows, *args, **kwargs)

    def spy_parts(*args, **kwargs):
        parts.append(orig_parts(*args, **kwargs))
        return parts[-1]

    monkeypatch.setattr(pipeline.RowReader, "decode_batch", spy)
    monkeypatch.setattr(boxes, "box_parts", spy_parts)
    truth = truths["big_f8_T"]
    with config.set(threads=1):
        np.testing.assert_array_equal(open_r(root, "big_f8_T")[...], truth)
        assert seen == [] and [len(p) for p in parts] == [1]
        np.testing.assert_array_equal(open_r(root, "big_f8_T")[::2], truth[::2])
        assert sum(seen) == 3 * 3 and len(parts) == 1
        seen.clear()
        np.testing.assert_array_equal(open_r(root, "big_f8_T", batch=False)[...], truth)
        assert seen == [] and len(parts) == 1


@needs_blosc
def test_blosc_arrays_read_batched(tmp_path):
    shape, chunks = (21, 9), (4, 9)
    data = np.arange(np.prod(shape), dtype="<i4").reshape(shape) * 7 - 300
    blosc = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                "shuffle": "shuffle", "typesize": 4,
                                                "blocksize": 0}}
    arr = zarrfast.create_array(str(tmp_path), name="b", shape=shape, chunks=chunks,
                                dtype="<i4", fill_value=-1, compressors=[blosc])
    arr[...] = data
    (tmp_path / "b" / "c" / "2" / "0").unlink()
    want = data.copy()
    want[8:12] = -1
    (tmp_path / "b" / "c" / "3" / "0").write_bytes(b"not blosc")
    RecordingDecoder.log.clear()
    with mock.patch.object(_kernels, KERNEL_ATTR, RecordingDecoder):
        b = open_r(tmp_path, "b")
        assert b._chain.batch_codec == "blosc"
        for sel in (np.s_[0:12], np.s_[16:], np.s_[11::-3, 2:], np.s_[1:11, 4]):
            np.testing.assert_array_equal(b[sel], want[sel])
            np.testing.assert_array_equal(open_r(tmp_path, "b", batch=False)[sel], want[sel])
        with pytest.raises(ChunkDecodeError, match="b/c/3/0"):
            b[10:14]
    assert RecordingDecoder.log


@pytest.fixture
def streamed(monkeypatch):
    """Every read result on a cache line and every copy into it streamed (normally only
    results of 1 MiB and 32 MiB on)."""
    from zarrfast._ext import _decode
    from zarrfast.kernels import buffers

    monkeypatch.setattr(buffers, "ALIGN_MIN_BYTES", 0)
    before = _decode.stream_threshold(0)
    yield
    _decode.stream_threshold(before)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_reads_match_numpy(arrays, streamed, threads):
    """Reads into results on a cache line, copied with streaming stores: interior and
    edge chunks, chunks decoded into place and copied, byte-swapped and transposed
    chunks, C and F order, steps."""
    root, truths = arrays
    sels = [np.s_[...], np.s_[1:], np.s_[::2], np.s_[..., 1:-1], np.s_[::-1]]
    with config.set(threads=threads):
        for name, truth in truths.items():
            for sel in sels:
                want = truth[sel]
                got = open_r(root, name)[sel]
                np.testing.assert_array_equal(got, want, err_msg=f"{name}{sel}")
                if got.ndim and got.nbytes:
                    assert got.ctypes.data % 64 == 0 and got.flags.writeable
                f = open_r(root, name, order="F")[sel]
                np.testing.assert_array_equal(f, want, err_msg=f"{name}{sel} F")


@needs_blosc
def test_streamed_blosc_reads_with_rows_of_whole_cache_lines(tmp_path, streamed):
    """Rows of 128 bytes in a 64-byte aligned result: whole lines streamed."""
    shape, chunks = (6, 10, 128), (3, 5, 64)
    data = np.arange(np.prod(shape), dtype="<u2").reshape(shape)
    blosc = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                "shuffle": "bitshuffle", "typesize": 2,
                                                "blocksize": 0}}
    arr = zarrfast.create_array(str(tmp_path), name="b", shape=shape, chunks=chunks,
                                dtype="<u2", fill_value=0, compressors=[blosc])
    arr[...] = data
    b = open_r(tmp_path, "b")
    for sel in (np.s_[...], np.s_[1:], np.s_[:, :, 1:]):
        got = b[sel]
        np.testing.assert_array_equal(got, data[sel])
        assert got.ctypes.data % 64 == 0


def test_large_results_start_on_a_cache_line():
    from zarrfast.kernels import buffers

    big = buffers.empty((3, buffers.ALIGN_MIN_BYTES // 2), "<u2", where="", what="x",
                        aligned=True)
    assert big.ctypes.data % 64 == 0 and big.shape == (3, buffers.ALIGN_MIN_BYTES // 2)
    assert big.dtype == np.dtype("<u2") and big.flags.c_contiguous and big.flags.writeable
    small = buffers.empty((7,), "<u2", where="", what="x", aligned=True)
    assert small.flags.owndata  # (small results are plain np.empty arrays)
    objects = buffers.empty((buffers.ALIGN_MIN_BYTES,), object, where="", what="x",
                            aligned=True)
    assert objects.dtype == object and objects.flags.owndata


def test_very_large_results_are_pages_of_their_own(monkeypatch):
    """Results of ``PAGES_MIN_BYTES`` on are ``PageBuffer`` pages (on 2 MiB, zeroed,
    writable, alive as long as a view of them), where it is compiled; read results
    among them."""
    from zarrfast import kernels
    from zarrfast.kernels import buffers

    if kernels.PageBuffer is None:
        pytest.skip("PageBuffer is not compiled here")
    monkeypatch.setattr(buffers, "PAGES_MIN_BYTES", 2**16)
    big = buffers.empty((5, 2**13), "<f8", where="", what="x", aligned=True)
    pages = big.base
    while not isinstance(pages, kernels.PageBuffer):
        pages = pages.obj if isinstance(pages, memoryview) else pages.base
    assert pages.nbytes == big.nbytes and big.ctypes.data % 2**21 == 0
    assert big.shape == (5, 2**13) and big.dtype == np.dtype("<f8")
    assert big.flags.c_contiguous and big.flags.writeable and not big.any()
    view = big[1:3]
    del big, pages
    view[...] = 7.5  # (the pages live as long as a view of them)
    assert (view == 7.5).all()
    for bad in (0, -1):
        with pytest.raises(ValueError):
            kernels.PageBuffer(bad)
    with pytest.raises(MemoryError):
        kernels.PageBuffer(2**62)
    small = buffers.empty((7,), "<u2", where="", what="x", aligned=True)
    assert small.flags.owndata
    a = zarrfast.create_array({}, shape=(64, 300), chunks=(16, 50), dtype="<i4")
    a[...] = np.arange(64 * 300, dtype="<i4").reshape(64, 300)
    got = a[...]
    assert isinstance(got.base, np.ndarray) and got.ctypes.data % 2**21 == 0
    np.testing.assert_array_equal(got, np.arange(64 * 300).reshape(64, 300))


# ---------------------------------------------------------------------------
# an independent review's findings, as tests
# ---------------------------------------------------------------------------

class OverlayStore(LocalStore):
    """Serves chunk ``c/0`` from memory through both ``get`` and ``get_into`` (the disk
    holds an older value): every read path must go through them."""

    overlay: dict = {}

    def get(self, key, byte_range=None):
        if key in self.overlay and byte_range is None:
            return self.overlay[key]
        return super().get(key, byte_range)

    def get_into(self, key, out):
        if key in self.overlay:
            value = self.overlay[key]
            if len(value) == len(memoryview(out)):
                memoryview(out).cast("B")[:] = value
            return len(value)
        return super().get_into(key, out)


@pytest.mark.parametrize("codecs", [None, "zstd"])
def test_a_subclass_get_and_get_into_serve_every_read(tmp_path, codecs):
    """Batched reads (``file_paths``, ``read_many_into``) would read the files on disk,
    bypassing both overrides: a subclass overriding them keeps the batched reads off."""
    comp = None if codecs is None else {"name": "zstd", "configuration": {"level": 1}}
    a = zarrfast.create_array(str(tmp_path), shape=(40,), chunks=(10,), dtype="i4",
                              compressors=comp)
    a[...] = np.arange(40)
    newer = zarrfast.create_array({}, shape=(10,), chunks=(10,), dtype="i4", compressors=comp)
    newer[...] = np.arange(100, 110)
    store = OverlayStore(tmp_path)
    store.overlay = {"c/0": newer._store.get("c/0")}
    assert store.file_paths(["c/0"]) is None
    b = zarrfast.open_array(store, mode="r+")
    np.testing.assert_array_equal(b[0:10], np.arange(100, 110))
    np.testing.assert_array_equal(b[0:20], np.r_[np.arange(100, 110), np.arange(10, 20)])
    np.testing.assert_array_equal(b[...], np.r_[np.arange(100, 110), np.arange(10, 40)])


def test_a_codec_subclass_with_its_own_decode_is_not_batch_decoded(tmp_path):
    from zarrfast.codecs import BloscCodec, ZstdCodec
    from zarrfast.codecs.numcodecs_codec import NumcodecsCodec

    class Inverting(ZstdCodec):
        def decode(self, data, out=None, limit=None):
            return bytes(255 - b for b in bytes(super().decode(data, limit=limit)))

    class EncodesOnly(BloscCodec):
        def encode(self, data):
            return super().encode(data)

    class OwnNumcodecs(NumcodecsCodec):
        def decode(self, data, out=None, limit=None):
            return super().decode(data, out, limit)

    assert Inverting.batch_codec is None and OwnNumcodecs.batch_codec is None
    assert ZstdCodec.batch_codec == "zstd" and EncodesOnly.batch_codec == "blosc"
    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="u1",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(20, dtype="u1")
    chain = a._chain
    chain.bb[0] = Inverting(level=1)  # as a registered subclass would be parsed
    chain.batch_codec = None if Inverting.batch_codec is None else "zstd"
    np.testing.assert_array_equal(a[0:20], 255 - np.arange(20, dtype="u1"))


class StatefulStore(LocalStore):
    """A subclass with a lock and its own (tuple) pickled state."""

    def __init__(self, root, **kw):
        super().__init__(root, **kw)
        self.lock = threading.Lock()

    def __getstate__(self):
        state = dict(self.__dict__)
        del state["lock"]
        return (state, "v1")

    def __setstate__(self, state):
        d, version = state
        assert version == "v1"
        self.__dict__.update(d)
        self.lock = threading.Lock()


def test_subclass_state_survives_pickle_and_read_only_copies(tmp_path):
    import pickle

    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="i4")
    a[...] = np.arange(20)
    store = StatefulStore(tmp_path)
    back = pickle.loads(pickle.dumps(store))
    assert type(back) is StatefulStore and back.root == store.root
    ro = store.with_read_only()
    assert type(ro) is StatefulStore and ro.read_only and not store.read_only
    np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[...], np.arange(20))


def test_fast_get_into_can_be_turned_off(tmp_path):
    store = LocalStore(tmp_path)
    store.fast_get_into = False
    assert not store.fast_get_into and store.file_paths(["a"]) is None
    a = zarrfast.create_array(store, shape=(40,), chunks=(10,), dtype="i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(40)
    np.testing.assert_array_equal(a[5:35], np.arange(5, 35))


def test_remote_sharded_reads_decode_on_the_compute_pool():
    """Fetches of remote shards run on the I/O pool; their inner chunks are decoded by
    the compute pool (sized by ``threads``), not during the fetch."""
    pytest.importorskip("fsspec")
    import uuid

    from zarrfast.storage import FsspecStore

    store = FsspecStore.from_url(f"memory://zarrfast-decode-pool-{uuid.uuid4().hex}")
    a = zarrfast.create_array(store, shape=(512, 512), chunks=(32, 32), shards=(128, 128),
                              dtype="u2", compressors={"name": "zstd",
                                                       "configuration": {"level": 1}},
                              overwrite=True)
    data = np.arange(512 * 512, dtype="u2").reshape(512, 512)
    a[...] = data
    seen = set()
    original = pipeline.RowReader.decode_stored

    def spy(self, *args, **kwargs):
        seen.add(threading.current_thread().name)
        return original(self, *args, **kwargs)

    with mock.patch.object(pipeline.RowReader, "decode_stored", spy), \
            config.set(threads=1):
        np.testing.assert_array_equal(a[...], data)
    assert not any(name.startswith("zarrfast-io") for name in seen), seen


@needs_kernel
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_a_file_shorter_than_its_stat_size_raises_chunk_decode_error(tmp_path):
    """A chunk file that yields fewer bytes than fstat reports (here a /proc file, as a
    non-atomic writer truncating it mid-read would) is a ChunkDecodeError naming the key,
    on the batched path as on the per-chunk one -- not an OSError."""
    if os.stat("/proc/self/status").st_size == 0:  # procfs reports 0: try sysfs
        candidates = [p for p in ("/sys/kernel/mm/transparent_hugepage/enabled",
                                  "/sys/kernel/mm/transparent_hugepage/defrag")
                      if os.path.exists(p) and os.stat(p).st_size > 64]
        if not candidates:
            pytest.skip("no file here reports more bytes than it holds")
        source = candidates[0]
    else:  # pragma: no cover
        source = "/proc/self/status"
    a = zarrfast.create_array(str(tmp_path), shape=(20,), chunks=(10,), dtype="i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(20)
    chunk = tmp_path / "c" / "0"
    # the store follows no link out of its root: mount the file over the chunk's
    # (root only), so that the chunk file itself reports more than it holds
    if os.geteuid() != 0:
        pytest.skip("needs root to bind-mount a file over a chunk")
    mounted = subprocess.run(["mount", "--bind", source, str(chunk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode(errors='replace')}")
    try:
        with pytest.raises(ChunkDecodeError, match="c/0"):
            a[0:10]
        with pytest.raises(ChunkDecodeError, match="c/0"):
            a[0:20]
        np.testing.assert_array_equal(a[10:20], np.arange(10, 20))
    finally:
        subprocess.run(["umount", str(chunk)], check=True)


def test_finding_a_system_zstd_is_only_tried_when_needed(monkeypatch):
    """``ctypes.util.find_library`` runs programs (ldconfig, gcc): binding to numcodecs'
    own zstd never calls it."""
    import ctypes.util

    def boom(name):
        raise AssertionError(f"find_library({name!r}) was called")

    monkeypatch.setattr(ctypes.util, "find_library", boom)
    libraries = _kernels._libraries("numcodecs.zstd", "zstd")
    first = next(libraries)
    assert first.endswith((".so", ".pyd", ".dylib")) or "zstd" in first
    with pytest.raises(AssertionError, match="find_library"):
        next(libraries)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_uncompressed_reads_match_numpy(tmp_path, streamed, monkeypatch, threads):
    """Uncompressed chunks (plain and inner chunks of shards) read into a scratch buffer
    and moved into the result by ``copy_regions`` with streaming stores: rows of whole
    cache lines and not, native and byte-swapped items, interior and edge chunks,
    steps."""
    from zarrfast import kernels as _kernels
    from zarrfast.engine import chunked

    seen = []
    real = _kernels.copy_regions

    def spy(*args, **kw):
        seen.append(args[9] if len(args) > 9 else kw.get("stream", False))
        return real(*args, **kw)

    cases = {"rows128": ((6, 10, 128), (3, 5, 64), "<u2", None),
             "edges": ((13, 37, 70), (4, 8, 33), "<i4", None),
             "swapped": ((9, 100), (4, 48), ">f8", None),
             "sharded": ((12, 20, 128), (3, 5, 64), "<u2", (6, 10, 128)),
             "sharded_edges": ((13, 37, 70), (4, 8, 33), ">i4", (8, 16, 66))}
    rng = np.random.default_rng(5)
    truths = {}
    for name, (shape, chunks, dtype, shards) in cases.items():
        truths[name] = data = rng.integers(-1000, 1000, size=shape).astype(dtype)
        arr = zarrfast.create_array(str(tmp_path), name=name, shape=shape, chunks=chunks,
                                    shards=shards, dtype=dtype, fill_value=0, compressors=None)
        arr[...] = data
    monkeypatch.setattr(chunked._kernels, "copy_regions", spy)  # (the reads' copies only)
    with config.set(threads=threads):
        for name, data in truths.items():
            got = open_r(tmp_path, name)
            for sel in (np.s_[...], np.s_[1:], np.s_[::2], np.s_[..., 3:-2]):
                np.testing.assert_array_equal(got[sel], data[sel], err_msg=f"{name}{sel}")
    assert seen and all(seen)  # (the streamed copies ran)
