"""Our stores with zarr-python as the peer: zip archives (zarr-python's ``ZipStore``
reads ours and we read its) and S3 (moto, over HTTP; see ``s3_server`` in
``tests/conftest.py``): arrays and consolidated metadata written by one library and read
by the other through ``s3://`` URLs."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import ZipStore

from _helpers.stores import archive_data


# ---------------------------------------------------------------------------
# zip archives
# ---------------------------------------------------------------------------
def test_zarr_python_reads_our_archive(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "ours.zip"
    data = archive_data(3)
    with ZipStore(path, mode="w") as store:
        g = zarrfast.open_group(store, mode="w", attributes={"who": "zarrfast"})
        g.create_array("x", data=data, chunks=(8, 8))
        g.create_array("s", data=data, chunks=(4, 4), shards=(16, 16))
    theirs = zarr.storage.ZipStore(path, mode="r")
    try:
        tg = zarr.open_group(theirs, mode="r")
        assert tg.attrs["who"] == "zarrfast"
        np.testing.assert_array_equal(tg["x"][:], data)
        np.testing.assert_array_equal(tg["s"][:], data)
    finally:
        theirs.close()


def test_we_read_zarr_pythons_archive(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "theirs.zip"
    data = archive_data(4)
    theirs = zarr.storage.ZipStore(path, mode="w")
    try:
        g = zarr.open_group(theirs, mode="w")
        g.create_array("x", shape=data.shape, dtype=data.dtype, chunks=(8, 8))[:] = data
        g.create_array("s", shape=data.shape, dtype=data.dtype, chunks=(4, 4),
                       shards=(16, 16))[:] = data
    finally:
        theirs.close()
    g = zarrfast.open_group(str(path), mode="r")
    np.testing.assert_array_equal(g["x"][:], data)
    np.testing.assert_array_equal(g["s"][7:29, 3:33], data[7:29, 3:33])
    g.store.close()


# ---------------------------------------------------------------------------
# arrays through S3, and zarr-python reading / writing the same objects
# ---------------------------------------------------------------------------
ARRAY_CASES = {
    "v3-zstd": dict(zarr_format=3, chunks=(16, 16)),
    "v3-sharded": dict(zarr_format=3, chunks=(8, 8), shards=(32, 32)),
    "v2-blosc": dict(zarr_format=2, chunks=(16, 16)),
}


def _data() -> np.ndarray:
    return np.arange(40 * 50, dtype="float32").reshape(40, 50) * 0.5


@pytest.mark.parametrize("case", list(ARRAY_CASES))
def test_zarrfast_round_trip_and_zarr_python_reads(s3_server, case: str) -> None:
    zarr = pytest.importorskip("zarr")
    opts = s3_server.storage_options()
    url = s3_server.url(f"{uuid.uuid4().hex}/x.zarr")
    data = _data()
    a = zarrfast.create_array(url, shape=data.shape, dtype=data.dtype, fill_value=-1,
                              storage_options=opts, **ARRAY_CASES[case])
    a[:] = data
    a[3:7, 41:] = 7.0
    expected = data.copy()
    expected[3:7, 41:] = 7.0
    back = zarrfast.open_array(url, mode="r", storage_options=opts)
    # the URL rule gives s3:// an ObjectStore when obstore is installed
    assert type(back.store).__name__ in ("FsspecStore", "ObjectStore") and back.store.read_only
    np.testing.assert_array_equal(back[:], expected)
    np.testing.assert_array_equal(back[5:30:3, ::7], expected[5:30:3, ::7])
    theirs = zarr.open_array(url, mode="r", storage_options=opts)
    np.testing.assert_array_equal(theirs[:], expected)


@pytest.mark.parametrize("case", list(ARRAY_CASES))
def test_zarrfast_reads_what_zarr_python_wrote(s3_server, case: str) -> None:
    zarr = pytest.importorskip("zarr")
    opts = s3_server.storage_options()
    url = s3_server.url(f"{uuid.uuid4().hex}/zp.zarr")
    data = _data()
    kwargs = dict(ARRAY_CASES[case])
    theirs = zarr.create_array(url, shape=data.shape, dtype=data.dtype, fill_value=-1,
                               storage_options=opts, **kwargs)
    theirs[:] = data
    ours = zarrfast.open_array(url, mode="r", storage_options=opts)
    np.testing.assert_array_equal(ours[:], data)
    np.testing.assert_array_equal(ours[::-3, 7], data[::-3, 7])


def test_consolidated_metadata_through_s3(s3_server) -> None:
    zarr = pytest.importorskip("zarr")
    opts = s3_server.storage_options()
    url = s3_server.url(f"{uuid.uuid4().hex}/h.zarr")
    root = zarrfast.open_group(url, mode="w", storage_options=opts, attributes={"x": 1})
    root.create_array("a", data=np.arange(10, dtype="i4"), chunks=(4,))
    root.create_group("g").create_array("b", data=np.ones((3, 3)), chunks=(2, 2))
    zarrfast.consolidate_metadata(url, storage_options=opts)
    ours = zarrfast.open_consolidated(url, storage_options=opts)
    assert sorted(ours.keys()) == ["a", "g"]
    np.testing.assert_array_equal(ours["g/b"][:], np.ones((3, 3)))
    theirs = zarr.open_consolidated(url, storage_options=opts)
    assert theirs.attrs["x"] == 1
    np.testing.assert_array_equal(theirs["a"][:], np.arange(10))
    # and the other way around: zarr-python consolidates, zarrfast opens
    url2 = s3_server.url(f"{uuid.uuid4().hex}/zp.zarr")
    g = zarr.open_group(url2, mode="w", storage_options=opts)
    g.create_array("c", shape=(5,), dtype="u2", chunks=(2,))[:] = np.arange(5)
    zarr.consolidate_metadata(g.store)
    ours2 = zarrfast.open_consolidated(url2, storage_options=opts)
    np.testing.assert_array_equal(ours2["c"][:], np.arange(5))
