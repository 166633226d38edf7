"""dask with zarrfast: ``da.from_array`` / ``da.store`` on arrays, pickling, and
``zarrfast.dask.from_zarr`` / ``to_zarr`` (threads and a distributed cluster)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import zarrfast  # noqa: E402
import zarrfast.dask as zd  # noqa: E402
from zarrfast.errors import ZarrfastError  # noqa: E402


def _filled(path, shape=(120, 90), chunks=(10, 15), **kw):
    data = np.arange(np.prod(shape), dtype="f8").reshape(shape)
    return zarrfast.create_array(path, chunks=chunks, data=data, **kw), data


def _is_multiple(dask_chunks, zarr_chunks, shape):
    """Every dask block boundary is a zarr chunk boundary."""
    for sizes, zc in zip(dask_chunks, zarr_chunks, strict=True):
        if any(e % zc for e in np.cumsum(sizes)[:-1]):
            return False
    return True


# -- dask's own functions on zarrfast arrays -------------------------------------------------


def test_from_array_bases_blocks_on_the_array_chunks(tmp_path):
    """dask's ``"auto"`` chunking takes ``arr.chunks`` as the unit: blocks are whole
    multiples of the zarr chunks, sized by ``array.chunk-size``, as for zarr-python."""
    zarr = pytest.importorskip("zarr")
    z, data = _filled(tmp_path / "a", shape=(400, 300), chunks=(30, 70))
    ref = zarr.create_array(tmp_path / "ref", shape=(400, 300), chunks=(30, 70), dtype="f8")
    for size in ("20kB", "200kB", "128MiB"):
        with dask.config.set({"array.chunk-size": size}):
            x = da.from_array(z)
            assert x.chunks == da.from_array(ref).chunks
            assert _is_multiple(x.chunks, z.chunks, z.shape), (size, x.chunks)
            if size == "128MiB":
                assert x.chunks == ((400,), (300,))  # small enough for one block
            else:
                assert x.npartitions > 1
    # chunks=arr.chunks gives exactly the zarr chunks (what zarrfast.dask.from_zarr does)
    x = da.from_array(z, chunks=z.chunks)
    assert x.chunks[0][:-1] == (30,) * 13 and x.chunks[1] == (70, 70, 70, 70, 20)
    np.testing.assert_array_equal(x.compute(scheduler="threads"), data)
    np.testing.assert_array_equal(x[17:333:5, ::-7].compute(), data[17:333:5, ::-7])


def test_from_array_uses_shards_of_a_sharded_array(tmp_path):
    z = zarrfast.create_array(tmp_path / "s", shape=(256, 256), chunks=(8, 8),
                              shards=(64, 128), dtype="f4")
    with dask.config.set({"array.chunk-size": "100kB"}):  # a shard is 32 kB
        x = da.from_array(z)
    assert _is_multiple(x.chunks, (64, 128), z.shape) and x.npartitions > 1


def test_store_many_chunks_lock_free_threads(tmp_path):
    data = np.random.default_rng(0).random((400, 300))
    x = da.from_array(data, chunks=(20, 30))  # 200 blocks
    for chunks in ((20, 30), (10, 15), (20, 10)):  # equal, and dividing the blocks
        z = zarrfast.create_array(tmp_path / f"t{chunks}", shape=data.shape, chunks=chunks,
                                  dtype="f8", fill_value=-1.0)
        with dask.config.set(scheduler="threads", num_workers=8):
            da.store(x, z, lock=False)
        np.testing.assert_array_equal(z[...], data)
        assert z.nchunks_initialized == z.nchunks


def test_pickle_is_cheap_and_reopens_the_store(tmp_path):
    n = 100 * 2**20 // 8  # 100 MiB of float64
    z = zarrfast.create_array(tmp_path / "big", shape=(n,), chunks=(2**20,), dtype="f8",
                              compressors=None)
    z[...] = np.arange(n, dtype="f8")
    assert z.nbytes_stored() > 100 * 2**20
    blob = pickle.dumps(z)
    assert len(blob) < 4096, len(blob)
    back = pickle.loads(blob)
    assert back.shape == z.shape and back.chunks == z.chunks and back.dtype == z.dtype
    np.testing.assert_array_equal(back[12345:12345 + 3 * 2**20:1000],
                                  np.arange(12345, 12345 + 3 * 2**20, 1000, dtype="f8"))
    assert back[-1] == n - 1
    # writes through the unpickled array land in the same store
    back[:4] = -1.0
    np.testing.assert_array_equal(z[:5], [-1, -1, -1, -1, 4])
    # and a dask graph over it stays small too
    x = zd.from_zarr(z)
    assert len(pickle.dumps(x.dask)) < 64 * 1024


# -- zarrfast.dask.from_zarr --------------------------------------------------------------------


def test_from_zarr_path_component_and_array(tmp_path):
    g = zarrfast.open_group(tmp_path / "g", mode="w")
    data = np.arange(60.0).reshape(6, 10)
    g.create_array("sub/a", data=data, chunks=(4, 3))
    x = zd.from_zarr(tmp_path / "g", component="sub/a")
    assert x.chunks == ((4, 2), (3, 3, 3, 1))
    np.testing.assert_array_equal(x.compute(), data)
    y = zd.from_zarr(zarrfast.open_array(tmp_path / "g", path="sub/a"), chunks=(6, 5))
    assert y.chunks == ((6,), (5, 5))
    np.testing.assert_array_equal(y.compute(), data)
    assert zd.from_zarr(str(tmp_path / "g"), "sub/a").name == x.name  # deterministic
    with pytest.raises(ZarrfastError, match="component"):
        zd.from_zarr(g["sub/a"], component="sub/a")


def test_from_zarr_passes_storage_options_only_when_given(tmp_path, monkeypatch):
    zarrfast.create_array(tmp_path / "a", shape=(4,), chunks=(2,), dtype="i4")
    seen = []
    real = zd.open_array

    def spy(store, **kw):
        seen.append(dict(kw))
        kw.pop("storage_options", None)
        return real(store, **kw)

    monkeypatch.setattr(zd, "open_array", spy)
    zd.from_zarr(tmp_path / "a")
    zd.from_zarr(tmp_path / "a", storage_options={"anon": True})
    assert "storage_options" not in seen[0] and seen[1]["storage_options"] == {"anon": True}
    assert seen[0]["mode"] == "r"


# -- zarrfast.dask.to_zarr ----------------------------------------------------------------------


def test_to_zarr_new_array(tmp_path, monkeypatch):
    calls = []
    real = da.store

    def spy(*a, **kw):
        calls.append(kw)
        return real(*a, **kw)

    monkeypatch.setattr(da, "store", spy)
    data = np.random.default_rng(2).random((50, 40))
    x = da.from_array(data, chunks=(10, 8))
    zd.to_zarr(x, tmp_path / "n", component="grp/arr", compressors=None)
    assert calls[-1]["lock"] is False
    z = zarrfast.open_array(tmp_path / "n", path="grp/arr")
    assert z.chunks == (10, 8) and z.compressors == ()
    np.testing.assert_array_equal(z[...], data)
    with pytest.raises(ZarrfastError, match="exists"):
        zd.to_zarr(x, tmp_path / "n", component="grp/arr")
    zd.to_zarr(x + 1, tmp_path / "n", component="grp/arr", overwrite=True)
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "n", path="grp/arr")[...],
                                  data + 1)


def test_to_zarr_refuses_irregular_chunks(tmp_path):
    x = da.zeros((30, 12), chunks=((10, 5, 15), (6, 6)))
    with pytest.raises(ZarrfastError, match="along dimension 0 are irregular"):
        zd.to_zarr(x, tmp_path / "i")
    # aligned with explicit chunks: accepted
    zd.to_zarr(x + 2, tmp_path / "ok", chunks=(5, 6))
    assert (zarrfast.open_array(tmp_path / "ok")[...] == 2).all()
    # explicit chunks not aligned with the blocks: refused, naming the dimension
    with pytest.raises(ZarrfastError, match="dimension 0.*index 10"):
        zd.to_zarr(x, tmp_path / "bad", chunks=(4, 6))
    y = da.zeros((12, 30), chunks=((6, 6), (10, 5, 15)))
    with pytest.raises(ZarrfastError, match="dimension 1"):
        zd.to_zarr(y, tmp_path / "bad1")


def test_to_zarr_existing_array_and_region(tmp_path):
    z = zarrfast.create_array(tmp_path / "e", shape=(40, 20), chunks=(10, 10), dtype="i4")
    x = da.arange(800, chunks=200, dtype="i4").reshape(40, 20).rechunk((20, 10))
    zd.to_zarr(x, z)
    np.testing.assert_array_equal(z[...], np.arange(800).reshape(40, 20))
    with pytest.raises(ZarrfastError, match="dimension 0"):
        zd.to_zarr(x.rechunk((15, 10)), z)
    with pytest.raises(ZarrfastError, match="shape"):
        zd.to_zarr(x[:30], z)
    # a region: boundaries must fall on chunk edges in the array's coordinates
    part = da.full((20, 20), -5, chunks=(10, 20), dtype="i4")
    zd.to_zarr(part, z, region=(slice(10, 30), slice(None)))
    assert (z[10:30] == -5).all() and (z[:10] == np.arange(200).reshape(10, 20)).all()
    with pytest.raises(ZarrfastError, match="index 15"):
        zd.to_zarr(part, z, region=(slice(5, 25), slice(None)))
    with pytest.raises(ZarrfastError, match="region"):
        zd.to_zarr(part, z, region=(slice(0, 20, 2), slice(None)))
    with pytest.raises(ZarrfastError, match="existing"):
        zd.to_zarr(part, tmp_path / "x", region=(slice(0, 20),))


def test_to_zarr_sharded_target_needs_shard_alignment_without_shard_locks(tmp_path):
    """A store that cannot exclude another process's writer of a shard (fsspec's local
    file system): dask blocks must cover whole shards."""
    from zarrfast.storage import FsspecStore

    store = FsspecStore.from_url(f"file://{tmp_path / 'sh'}", storage_options={"auto_mkdir": True})
    assert not (store.interprocess_locks or store.conditional_writes)
    z = zarrfast.create_array(store, shape=(64, 64), chunks=(8, 8), shards=(32, 32),
                              dtype="u1")
    with pytest.raises(ZarrfastError, match="32"):
        zd.to_zarr(da.ones((64, 64), chunks=(16, 32), dtype="u1"), z)
    zd.to_zarr(da.ones((64, 64), chunks=(32, 64), dtype="u1"), z)
    assert (z[...] == 1).all()


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_to_zarr_blocks_of_inner_chunks_share_shards_safely(tmp_path, scheduler):
    """A local store locks each shard's read-modify-write (threads and processes): dask
    blocks need only cover whole inner chunks, and every block is kept."""
    z = zarrfast.create_array(tmp_path / "sh", shape=(64, 64), chunks=(8, 8), shards=(32, 32),
                              dtype="i4", fill_value=0)
    values = np.arange(64 * 64, dtype="i4").reshape(64, 64) + 1
    with dask.config.set(scheduler=scheduler, num_workers=4):
        zd.to_zarr(da.from_array(values, chunks=(8, 8)), z)
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "sh")[...], values)


def test_to_zarr_compute_false_and_return_stored(tmp_path):
    x = da.arange(100, chunks=10)
    d = zd.to_zarr(x, tmp_path / "c", compute=False)
    z = zarrfast.open_array(tmp_path / "c")
    assert (z[...] == 0).all()
    d.compute()
    np.testing.assert_array_equal(z[...], np.arange(100))
    stored = zd.to_zarr(x * 2, tmp_path / "c", overwrite=True, return_stored=True)
    np.testing.assert_array_equal(stored.compute(), np.arange(100) * 2)


def test_to_zarr_unknown_chunk_sizes(tmp_path):
    x = da.arange(10, chunks=5)
    y = x[x > 3]
    with pytest.raises(ZarrfastError, match="unknown chunk sizes"):
        zd.to_zarr(y, tmp_path / "u")


# -- a distributed cluster ----------------------------------------------------------------------


def test_distributed_read_and_write(tmp_path):
    distributed = pytest.importorskip("distributed")
    src, data = _filled(tmp_path / "src.zarr", shape=(200, 60), chunks=(20, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None, silence_logs=50)
    try:
        with distributed.Client(cluster) as client:
            x = zd.from_zarr(tmp_path / "src.zarr")
            total = client.compute(x.sum()).result()
            assert total == data.sum()
            zd.to_zarr(x * 2 + 1, tmp_path / "dst.zarr", component="out")
            out = zarrfast.open_array(tmp_path / "dst.zarr", path="out")
            np.testing.assert_array_equal(out[...], data * 2 + 1)
            # blocks ran on the workers (other processes) and every chunk got written
            assert out.nchunks_initialized == out.nchunks == 20
            pids = set(client.run(lambda: __import__("os").getpid()).values())
            assert len(pids) == 2
            # a memory store cannot be shared with worker processes
            mem = zarrfast.create_array(None, shape=(200, 60), chunks=(20, 30), dtype="f8")
            with pytest.raises(ZarrfastError, match="distributed"):
                zd.to_zarr(x, mem)
            xr = pytest.importorskip("xarray")
            ds = xr.Dataset({"v": (("a", "b"), data)})
            import zarrfast.xarray as zx

            zx.to_zarr(ds.chunk({"a": 40}), tmp_path / "ds.zarr")
            back = xr.open_dataset(tmp_path / "ds.zarr", engine="zarrfast", chunks={})
            assert float(back.v.mean().compute()) == data.mean()
    finally:
        cluster.close()


# -- the optional dependency ------------------------------------------------------------------


def test_missing_dask_names_the_extra(subprocess_cwd):
    code = ("import sys; sys.modules['dask'] = None\n"
            "import zarrfast\n"
            "try:\n    import zarrfast.dask\n"
            "except ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=subprocess_cwd)
    assert "ERR" in out.stdout, out
    assert ('pip install "zarrfast[dask]" (from a source checkout: '
            'pip install ".[dask]")') in out.stdout, out


def test_remote_from_and_to_zarr():
    pytest.importorskip("fsspec")
    import uuid

    import fsspec

    root = f"memory://zarrfast-dask-{uuid.uuid4().hex}"
    opts = {"skip_instance_cache": True}
    try:
        x = da.arange(600, chunks=100).reshape(20, 30).rechunk((5, 10))
        zd.to_zarr(x, f"{root}/a.zarr", component="arr", storage_options=opts)
        y = zd.from_zarr(f"{root}/a.zarr", component="arr", storage_options=opts)
        assert y.chunks == ((5,) * 4, (10,) * 3)
        np.testing.assert_array_equal(y.compute(), np.arange(600).reshape(20, 30))
    finally:
        fsspec.filesystem("memory").rm(root, recursive=True)


def test_from_zarr_takes_a_rectilinear_grid_s_chunks(tmp_path):
    a = zarrfast.create_array(tmp_path / "r", shape=(10, 20), chunks=[[3, 7], [5, 5, 10]],
                              dtype="f4")
    v = np.arange(200, dtype="f4").reshape(10, 20)
    a[...] = v
    d = zd.from_zarr(str(tmp_path / "r"))
    assert d.chunks == ((3, 7), (5, 5, 10))
    np.testing.assert_array_equal(d.compute(), v)
