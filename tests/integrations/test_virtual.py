"""Virtual datasets: zarrfast reads an HDF5 file's chunks in place.

An HDF5 file (netCDF-4 style: dimension scales) written with h5py is indexed
(a) by kerchunk, whose references fsspec serves as ``reference://``, and
(b) by VirtualiZarr's ``HDFParser`` as a ``ManifestStore`` over an obstore local
store.  zarrfast reads both, directly and with ``xr.open_dataset(engine="zarrfast")``,
and gets h5py's values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrfast

h5py = pytest.importorskip("h5py")

TEMP = (np.arange(200 * 30, dtype="f4").reshape(200, 30) - 1000) / 3
Y = np.arange(200, dtype="i8") + 10
X = np.linspace(0, 1, 30)


@pytest.fixture
def h5file(tmp_path: Path) -> Path:
    path = tmp_path / "data.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("y", data=Y)
        f["y"].make_scale("y")
        f.create_dataset("x", data=X, chunks=(10,))
        f["x"].make_scale("x")
        t = f.create_dataset("temp", data=TEMP, chunks=(50, 10), compression="gzip",
                             shuffle=True)
        t.dims[0].attach_scale(f["y"])
        t.dims[1].attach_scale(f["x"])
        t.attrs["units"] = "K"
        f.create_dataset("raw", data=np.arange(77, dtype="<u2"), chunks=(20,))
    return path


def _h5(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        return {name: f[name][()] for name in ("temp", "x", "y", "raw")}


# -- kerchunk ------------------------------------------------------------------------------


@pytest.fixture
def refs(h5file: Path) -> dict:
    pytest.importorskip("kerchunk")
    pytest.importorskip("fsspec")
    from kerchunk.hdf import SingleHdf5ToZarr

    return SingleHdf5ToZarr(str(h5file), inline_threshold=0).translate()


def test_kerchunk_references_read_with_zarrfast(h5file: Path, refs: dict) -> None:
    expected = _h5(h5file)
    group = zarrfast.open_group("reference://", storage_options={"fo": refs}, mode="r")
    assert sorted(group.keys()) == ["raw", "temp", "x", "y"]
    for name, values in expected.items():
        got = group[name][:]
        assert got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)
    np.testing.assert_array_equal(group["temp"][33:171, 4:27], TEMP[33:171, 4:27])
    assert group["temp"].attrs["units"] == "K"


def test_kerchunk_references_with_xarray(h5file: Path, refs: dict) -> None:
    xr = pytest.importorskip("xarray")
    options = {"fo": refs}
    ds = xr.open_dataset("reference://", engine="zarrfast", storage_options=options,
                         mask_and_scale=False)
    np.testing.assert_array_equal(ds["temp"].values, TEMP)
    np.testing.assert_array_equal(ds["y"].values, Y)
    np.testing.assert_array_equal(ds["x"].values, X)
    assert ds["temp"].dims == ("y", "x")
    assert ds["temp"].attrs["units"] == "K"
    # what zarr-python's own engine makes of the same references
    zarr = pytest.importorskip("zarr")  # noqa: F841
    ref = xr.open_dataset("reference://", engine="zarr", storage_options=options,
                          consolidated=False, zarr_format=2, mask_and_scale=False)
    xr.testing.assert_identical(ds.load(), ref.load())


def test_kerchunk_missing_target_names_the_key(tmp_path: Path, h5file: Path,
                                               refs: dict) -> None:
    moved = tmp_path / "moved.h5"
    h5file.rename(moved)
    group = zarrfast.open_group("reference://", storage_options={"fo": refs}, mode="r")
    with pytest.raises(Exception, match=r"temp/\d\.\d") as info:
        group["temp"][:]
    assert "data.h5" in str(info.value) or "data.h5" in str(info.value.__cause__)


# -- VirtualiZarr ----------------------------------------------------------------------------


@pytest.fixture
def manifest_store(h5file: Path):
    pytest.importorskip("virtualizarr")
    pytest.importorskip("obstore")
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr.parsers import HDFParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    return HDFParser()(url=h5file.as_uri(), registry=registry)


def test_manifest_store_read_with_zarrfast(h5file: Path, manifest_store) -> None:
    expected = _h5(h5file)
    group = zarrfast.open_group(manifest_store, mode="r")
    assert sorted(group.keys()) == ["raw", "temp", "x", "y"]
    for name, values in expected.items():
        got = group[name][:]
        assert got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)
    np.testing.assert_array_equal(group["temp"][151:, ::7], TEMP[151:, ::7])


def test_manifest_store_with_xarray(h5file: Path, manifest_store) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.open_dataset(manifest_store, engine="zarrfast", mask_and_scale=False)
    np.testing.assert_array_equal(ds["temp"].values, TEMP)
    np.testing.assert_array_equal(ds["y"].values, Y)
    np.testing.assert_array_equal(ds["x"].values, X)
    np.testing.assert_array_equal(ds["raw"].values, np.arange(77, dtype="<u2"))
    assert ds["temp"].dims == ("y", "x")
    assert ds["temp"].attrs["units"] == "K"


def test_manifest_store_is_read_only(manifest_store) -> None:
    from zarrfast.errors import ReadOnlyError

    store = zarrfast.storage.make_store(manifest_store)
    with pytest.raises((ReadOnlyError, zarrfast.storage.UnsupportedStoreOperationError),
                       match="temp/zarr.json"):
        store.set("temp/zarr.json", b"{}")


def test_manifest_store_missing_file_is_an_error(h5file: Path, manifest_store) -> None:
    """A chunk whose file is gone fails naming the key and the file; it never reads as
    fill value."""
    h5file.rename(h5file.with_suffix(".moved"))
    group = zarrfast.open_group(manifest_store, mode="r")
    with pytest.raises(zarrfast.storage.RemoteStoreError, match=r"temp/c/\d/\d.*data\.h5"):
        group["temp"][:]
