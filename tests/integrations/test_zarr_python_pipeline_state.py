"""``zarrfast.zarr_python.CodecPipeline``: what it keeps between calls and how a call ends.

A pipeline lives as long as its array: the store it made for zarr-python's store must
follow that store (``LocalStore.move``, a relative root after ``os.chdir``); a cancelled
write must not land after the caller's next one; a shard read must not trust an index
cached before another writer replaced the shard.  Each test does the same with
zarr-python's default pipeline where the expected result is zarr-python's.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from zarr.storage import LocalStore, MemoryStore  # noqa: E402

import zarrfast.zarr_python as zp  # noqa: E402

PIPELINES = {"zarrfast": "zarrfast.zarr_python.CodecPipeline",
             "default": "zarr.core.codec_pipeline.BatchedCodecPipeline"}


@pytest.fixture(params=sorted(PIPELINES))
def pipeline(request: pytest.FixtureRequest) -> Any:
    with zarr.config.set({"codec_pipeline.path": PIPELINES[request.param]}):
        yield request.param


def test_a_moved_local_store_is_followed(pipeline: str, tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "old.zarr")
    a = zarr.create_array(store, shape=(4,), chunks=(2,), dtype="int32", fill_value=0)
    a[:] = [1, 2, 3, 4]
    assert a[:].tolist() == [1, 2, 3, 4]  # (the pipeline has made its store by now)
    zarr.core.sync.sync(store.move(tmp_path / "new.zarr"))
    assert a[:].tolist() == [1, 2, 3, 4]
    a[0:2] = [7, 8]
    assert a[:].tolist() == [7, 8, 3, 4]
    assert not (tmp_path / "old.zarr").exists()
    with zarr.config.set({"codec_pipeline.path": PIPELINES["default"]}):
        assert zarr.open_array(tmp_path / "new.zarr")[:].tolist() == [7, 8, 3, 4]


def test_a_relative_root_follows_the_working_directory(pipeline: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    for d, values in (("one", [1, 2, 3, 4]), ("two", [5, 6, 7, 8])):
        (tmp_path / d).mkdir()
        monkeypatch.chdir(tmp_path / d)
        b = zarr.create_array(LocalStore("data.zarr"), shape=(4,), chunks=(2,),
                              dtype="int32", fill_value=0)
        b[:] = values
    monkeypatch.chdir(tmp_path / "one")
    a = zarr.open_array(LocalStore("data.zarr"))
    assert a[:].tolist() == [1, 2, 3, 4]
    monkeypatch.chdir(tmp_path / "two")  # (zarr-python's root is relative: it moves along)
    assert a[:].tolist() == [5, 6, 7, 8]


def test_a_cancelled_write_ends_before_the_caller_goes_on(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    # the engine's write is held until the caller has cancelled it: the caller must not
    # be told it was cancelled (and go on to write again) before that write has ended
    started, release, ended = threading.Event(), threading.Event(), threading.Event()
    real = zp._write_rows

    def held(*args: Any, **kwargs: Any) -> None:
        started.set()
        release.wait(60)
        try:
            real(*args, **kwargs)
        finally:
            ended.set()

    async def scenario() -> list:
        a = await zarr.api.asynchronous.create_array(
            LocalStore(tmp_path / "a.zarr"), shape=(64, 64), chunks=(16, 16),
            dtype="float64", fill_value=0.0)
        monkeypatch.setattr(zp, "_write_rows", held)
        first = asyncio.ensure_future(a.setitem(slice(None), np.full((64, 64), 2.0)))
        await asyncio.to_thread(started.wait, 60)
        first.cancel()
        timer = threading.Timer(0.2, release.set)  # (lets the held write go on, later)
        timer.start()
        with pytest.raises(asyncio.CancelledError):
            await first
        # the held write has ended: the caller's next write comes after it
        assert ended.is_set()
        monkeypatch.setattr(zp, "_write_rows", real)
        await a.setitem(slice(None), np.ones((64, 64)))
        await asyncio.to_thread(ended.wait, 60)
        timer.join()
        return (await a.getitem(slice(None))).tolist()

    with zarr.config.set({"codec_pipeline.path": PIPELINES["zarrfast"]}):
        got = asyncio.run(scenario())
    assert np.array_equal(got, np.ones((64, 64)))


def test_shard_reads_follow_shards_replaced_by_another_array(pipeline: str) -> None:
    # two arrays over one zarr-python MemoryStore: one writes whole shards whose inner
    # chunks move within the shard (an inner chunk of fill values is left out), the other
    # reads part of a shard after each write
    store = MemoryStore()
    writer = zarr.create_array(store, shape=(8,), shards=(8,), chunks=(2,), dtype="int32",
                               fill_value=0, compressors=None)
    reader = zarr.open_array(store, mode="r")
    for i in range(100):
        v = np.arange(1, 9, dtype="int32") + 10 * i
        if i % 2:
            v[2:4] = 0
        else:
            v[6:8] = 0
        writer[:] = v + 1000
        writer[:] = v
        np.testing.assert_array_equal(reader[4:8], v[4:8], err_msg=f"round {i}")


def test_read_results_are_one_dict_per_chunk() -> None:
    if not zp._GET_RESULTS:
        pytest.skip("zarr-python before 3.4 gives no read results")
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.core.buffer import default_buffer_prototype

    store = MemoryStore()
    with zarr.config.set({"codec_pipeline.path": PIPELINES["zarrfast"]}):
        a = zarr.create_array(store, shape=(4,), chunks=(2,), dtype="int32", fill_value=0)
        a[:2] = 1
        pipe = a._async_array.codec_pipeline
    spec = ArraySpec(shape=(2,), dtype=a._async_array.metadata.data_type, fill_value=0,
                     config=ArrayConfig.from_dict({}), prototype=default_buffer_prototype())
    out = default_buffer_prototype().nd_buffer.empty(shape=(4,), dtype=np.dtype("int32"))
    path = a._async_array.store_path
    batch = [(path / f"c/{i}", spec, (slice(0, 2),), (slice(2 * i, 2 * i + 2),), True)
             for i in range(2)]
    results = zarr.core.sync.sync(pipe.read(batch, out))
    assert [r["status"] for r in results] == ["present", "missing"]
    assert results[0] is not results[1]
    results[0]["status"] = "changed"
    assert zarr.core.sync.sync(pipe.read(batch, out))[0]["status"] == "present"


def test_a_pipeline_keeps_a_bounded_number_of_chains() -> None:
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.dtype import Int32

    pipe = zp.CodecPipeline.from_codecs([zarr.codecs.BytesCodec()])
    for n in range(1, 3 * zp.MAX_CHAINS):
        spec = ArraySpec(shape=(n,), dtype=Int32(), fill_value=0,
                         config=ArrayConfig.from_dict({}), prototype=default_buffer_prototype())
        assert not isinstance(pipe._chain_for(spec), str)
        assert len(pipe._chains) <= zp.MAX_CHAINS


def test_reading_shards_asks_no_existence_before_zarr_34(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    # (zarr-python 3.1 to 3.3 want no read results: no request per shard to find them)
    asked: list[str] = []
    real = zp.LocalStore.exists

    def exists(self: Any, key: str) -> bool:
        asked.append(key)
        return real(self, key)

    with zarr.config.set({"codec_pipeline.path": PIPELINES["zarrfast"]}):
        a = zarr.create_array(LocalStore(tmp_path / "a.zarr"), shape=(16,), chunks=(2,),
                              shards=(4,), dtype="int32", fill_value=0)
        a[:6] = 1
        monkeypatch.setattr(zp.LocalStore, "exists", exists)
        assert a[:].tolist() == [1] * 6 + [0] * 10
    assert (asked == []) != zp._GET_RESULTS
