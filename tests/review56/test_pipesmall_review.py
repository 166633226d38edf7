"""Review of h56/pipesmall (dc70d82, 4e92f5c, 6708d6d, b10e8ac): a missing shard whose
written inner chunks are all whole is stored from the value (``engine/rmw.py``
``direct``, ``write_shard_direct`` with some of a shard's inner chunks), zarr-python's
pipeline projects equal shard parts once (``_by_shard``), reads a small batch's slices
one by one, asks ``exists`` on the I/O pool, and decodes gzip/zlib straight into the
output.

No finding.  Guards (pass on main and on the branch):

* writes of random boxes (steps 1, 2 and -1) into arrays of uncompressed inner chunks
  (transposed too, index at the start or the end, morton or lexicographic order, empty
  chunks written or not) store the same files with ``set_regions`` as without it, and
  read back what NumPy holds: a shard built from some of its inner chunks is the shard
  the read-modify-write assembles;
* zarr-python's pipeline (zarrfast's) writes random slices of sharded arrays, their
  shards missing or stored, to the same files byte for byte as zarr-python's own
  pipeline, and reads back the same values (gzip inner chunks too).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.codecs import BytesCodec, ShardingCodec, TransposeCodec
from zarrfast.storage import LocalStore

from _helpers.files import file_bytes

zarr = pytest.importorskip("zarr")

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@st.composite
def _geometry(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    ndim = draw(st.integers(1, 3))
    inner = [draw(st.integers(1, 4)) for _ in range(ndim)]
    shard = [i * draw(st.integers(1, 3)) for i in inner]
    shape = [draw(st.integers(1, 2 * s + 1)) for s in shard]
    return shape, shard, inner


@st.composite
def _box(draw: st.DrawFn, shape: list[int], steps: list[int]) -> tuple[slice, ...]:
    sel = []
    for n in shape:
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a + 1, n))
        step = draw(st.sampled_from(steps))
        sel.append(slice(b - 1, a - 1 if a else None, -1) if step < 0 else slice(a, b, step))
    return tuple(sel)


@SETTINGS
@given(data=st.data(), geometry=_geometry(), order=st.sampled_from(["morton", "lexicographic"]),
       location=st.sampled_from(["end", "start"]), empty=st.booleans(),
       threads=st.sampled_from([1, 2]), transpose=st.booleans())
def test_boxes_into_missing_shards_store_what_the_assembled_path_stores(
        data: st.DataObject, geometry: tuple, order: str, location: str, empty: bool,
        threads: int, transpose: bool) -> None:
    shape, shard, inner = geometry
    ndim = len(shape)
    codecs: list[Any] = [BytesCodec("little")]
    if transpose and ndim > 1:
        codecs.insert(0, TransposeCodec(tuple(range(ndim))[::-1]))
    kwargs = dict(shape=tuple(shape), chunks=tuple(shard), compressors=None, dtype="<u2",
                  fill_value=0, config={"write_empty_chunks": empty},
                  serializer=ShardingCodec(chunk_shape=tuple(inner), codecs=codecs,
                                           index_location=location,
                                           subchunk_write_order=order))
    model = np.zeros(shape, "<u2")
    writes = []
    for k in range(data.draw(st.integers(1, 3))):
        sel = data.draw(_box(shape, [1, 1, 2, -1]))
        value = np.random.default_rng(k).integers(0, 3, model[sel].shape).astype("<u2")
        model[sel] = value
        writes.append((sel, value))
    with tempfile.TemporaryDirectory() as where:
        files = []
        for direct in (True, False):
            path = os.path.join(where, f"{direct}.zarr")
            real = LocalStore.fast_set_regions
            try:
                if not direct:
                    LocalStore.fast_set_regions = False  # type: ignore[misc]
                with config.set(threads=threads):
                    a = zarrfast.create_array(path, **kwargs)
                    for sel, value in writes:
                        a[sel] = value
            finally:
                LocalStore.fast_set_regions = real  # type: ignore[misc]
            np.testing.assert_array_equal(zarrfast.open_array(path, mode="r")[...], model)
            files.append(file_bytes(path))
        assert files[0] == files[1]


OURS = "zarrfast.zarr_python.CodecPipeline"


@SETTINGS
@given(data=st.data(), geometry=_geometry(), codec=st.sampled_from(["none", "gzip"]),
       empty=st.booleans())
def test_zarr_python_pipeline_writes_shards_as_zarr_python_does(
        data: st.DataObject, geometry: tuple, codec: str, empty: bool) -> None:
    shape, shard, inner = geometry
    compressors: Any = None if codec == "none" else [{"name": "gzip", "configuration":
                                                      {"level": 1}}]
    model = np.full(shape, -1, dtype="int16")
    writes = []
    for k in range(data.draw(st.integers(1, 3))):
        sel = data.draw(_box(shape, [1, 1, 2]))
        value = (np.arange(model[sel].size, dtype="int16").reshape(model[sel].shape) % 5
                 + k - 1)
        model[sel] = value
        writes.append((sel, value))
    with tempfile.TemporaryDirectory() as where:
        files = []
        for pipeline in (OURS, "zarr.core.codec_pipeline.BatchedCodecPipeline"):
            path = os.path.join(where, pipeline.split(".")[0])
            with zarr.config.set({"codec_pipeline.path": pipeline}):
                a = zarr.create_array(zarr.storage.LocalStore(path), shape=tuple(shape),
                                      shards=tuple(shard), chunks=tuple(inner),
                                      dtype="int16", fill_value=-1, compressors=compressors,
                                      config={"write_empty_chunks": empty})
                for sel, value in writes:
                    a[sel] = value
                np.testing.assert_array_equal(a[...], model)
            files.append(file_bytes(path))
        assert sorted(files[0]) == sorted(files[1])
        if codec == "none":
            assert files[0] == files[1]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_stale_writers_edge_shards_keep_another_writers_inner_chunks(tmp_path, threads
                                                                       ) -> None:
    """A writer whose metadata is stale (the array grown by another writer since it was
    opened) writes its edge shards, missing or not, without losing what the other
    writer stored past its edge."""
    path = str(tmp_path / "a")
    kwargs = dict(shape=(12, 10), chunks=(8, 8), dtype="<i4", fill_value=-1,
                  serializer=ShardingCodec(chunk_shape=(4, 2), codecs=[BytesCodec("little")]),
                  compressors=None)
    stale = zarrfast.create_array(path, **kwargs)
    other = zarrfast.open_array(path, mode="r+")
    other.resize((20, 14))
    theirs = np.arange(8 * 14, dtype="<i4").reshape(8, 14) + 1000
    other[12:20, :] = theirs
    ours = np.arange(120, dtype="<i4").reshape(12, 10)
    with config.set(threads=threads):
        stale[...] = ours
    got = zarrfast.open_array(path, mode="r")[...]
    want = np.full((20, 14), -1, dtype="<i4")
    want[12:20, :] = theirs
    want[0:12, 0:10] = ours
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a writer")
def test_two_processes_filling_one_missing_shard_keep_each_others_inner_chunks(tmp_path
                                                                               ) -> None:
    """Two processes write the two halves of the inner chunks of the same missing shards
    at once, each half whole inner chunks (the direct path of the shards'
    read-modify-write, under the shard's lock): every shard holds both halves."""
    from _helpers.threads import wait_child

    kwargs = dict(shape=(16, 16), chunks=(8, 16), dtype="<i4", fill_value=-1,
                  serializer=ShardingCodec(chunk_shape=(4, 4), codecs=[BytesCodec("little")]),
                  compressors=None)
    x = np.arange(256, dtype="<i4").reshape(16, 16)
    for attempt in range(10):
        path = str(tmp_path / f"a{attempt}")
        a = zarrfast.create_array(path, **kwargs)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                zarrfast.open_array(path, mode="r+")[:, 8:16] = x[:, 8:16]
                code = 0
            finally:
                os._exit(code)
        a[:, 0:8] = x[:, 0:8]
        status = wait_child(pid, "writing half of each shard")
        assert os.waitstatus_to_exitcode(status) == 0
        np.testing.assert_array_equal(zarrfast.open_array(path, mode="r")[...], x)
