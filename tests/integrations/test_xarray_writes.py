"""zarrfast.xarray.to_zarr with Dataset.to_zarr's arguments (region, append_dim, modes,
compute=False, ...) and the zarrfast engine's reading of what xarray writes: each result is
compared with xarray's own writer (zarr-python) on the same dataset."""

from __future__ import annotations

import asyncio
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
dask = pytest.importorskip("dask")

import zarrfast  # noqa: E402
import zarrfast.xarray as zx  # noqa: E402
from zarrfast.errors import ZarrfastError  # noqa: E402

FORMATS = pytest.mark.parametrize("fmt", [2, 3])


def _read(path, engine="zarrfast", **kw):
    kw.setdefault("consolidated", False)
    return xr.open_dataset(path, engine=engine, **kw).load()


def _both(tmp_path, write, fmt):
    """Run ``write(writer, path)`` with xarray's writer and zarrfast's; the two results."""
    out = []
    for name, writer in (("ref", None), ("zf", zx.to_zarr)):
        path = tmp_path / f"{name}.zarr"

        def call(ds, _writer=writer, _path=path, **kw):
            kw.setdefault("zarr_format", fmt)
            if _writer is None:
                return ds.to_zarr(_path, **kw)
            return _writer(ds, _path, **kw)
        write(call)
        out.append(_read(path, engine="zarr"))
    return out


def _timeseries(n=6, start=0):
    t = pd.date_range("2020-01-01", periods=n, freq="D") + pd.Timedelta(days=start)
    return xr.Dataset({"v": (("t", "y"), np.arange(n * 3.0).reshape(n, 3) + 100 * start),
                       "c": ("y", np.array([1, 2, 3]))},
                      coords={"t": t, "y": [10, 20, 30]}, attrs={"title": "x"})


@FORMATS
def test_append_dim_matches_xarray(tmp_path, fmt):
    def write(call):
        call(_timeseries(4).chunk({"t": 2}), mode="w")
        call(_timeseries(2, start=4).chunk({"t": 2}), append_dim="t")  # mode None -> "a"
        call(_timeseries(3, start=6), append_dim="t", mode="a")
    ref, got = _both(tmp_path, write, fmt)
    xr.testing.assert_identical(got, ref)
    assert got.sizes["t"] == 9
    np.testing.assert_array_equal(got.v.values[4:6], _timeseries(2, start=4).v.values)


def test_append_dim_must_exist_and_mode_must_allow_it(tmp_path):
    p = tmp_path / "a.zarr"
    zx.to_zarr(_timeseries(2), p)
    with pytest.raises(ValueError, match="append_dim='z' does not match any existing"):
        zx.to_zarr(_timeseries(2).expand_dims("z"), p, append_dim="z")
    with pytest.raises(ValueError, match="cannot set append_dim unless mode='a'"):
        zx.to_zarr(_timeseries(2), p, append_dim="t", mode="w")
    with pytest.raises(ValueError, match="Mismatched dtypes for variable s"):
        zx.to_zarr(xr.Dataset({"s": ("t", np.array(["ab", "cd"]))}), tmp_path / "s.zarr")
        zx.to_zarr(xr.Dataset({"s": ("t", np.array(["abc", "d"]))}), tmp_path / "s.zarr",
                   append_dim="t")


@FORMATS
def test_mode_a_minus_writes_only_variables_along_append_dim(tmp_path, fmt):
    def write(call):
        call(_timeseries(4), mode="w")
        more = _timeseries(2, start=4)
        more["c"] = more.c * 0 + 7  # not along t: not written with mode "a-"
        call(more, mode="a-", append_dim="t")
    ref, got = _both(tmp_path, write, fmt)
    xr.testing.assert_identical(got, ref)
    np.testing.assert_array_equal(got.c.values, [1, 2, 3])


@FORMATS
def test_region_explicit_and_auto_match_xarray(tmp_path, fmt):
    full = _timeseries(6)
    part = full.isel(t=slice(2, 4)).copy(deep=True)
    part["v"] = part.v * 0 - 1

    def write(call):
        call(full.chunk({"t": 2}), mode="w")
        call(part.drop_vars(["c", "y"]), region={"t": slice(2, 4)})
        part2 = full.isel(t=slice(4, 6)).copy(deep=True)
        part2["v"] = part2.v * 0 - 2
        call(part2.drop_vars("c"), region="auto")
        call(part2.drop_vars("c").isel(t=[0]), region={"t": "auto", "y": slice(0, 3)},
             mode="a")
    ref, got = _both(tmp_path, write, fmt)
    xr.testing.assert_identical(got, ref)
    assert (got.v.values[2:4] == -1).all() and (got.v.values[4:6] == -2).all()


def test_region_errors_are_xarrays(tmp_path):
    p = tmp_path / "r.zarr"
    full = _timeseries(6)
    zx.to_zarr(full, p)
    v = full[["v"]].drop_vars(["t", "y"])
    with pytest.raises(TypeError, match="must be slice objects"):
        zx.to_zarr(v, p, region={"t": 2})
    with pytest.raises(ValueError, match="step on all slices"):
        zx.to_zarr(v.isel(t=slice(0, 3)), p, region={"t": slice(0, 6, 2)})
    with pytest.raises(ValueError, match="not in Dataset dimensions"):
        zx.to_zarr(v, p, region={"q": slice(0, 1)})
    with pytest.raises(ValueError, match=r"drop_vars\(\['c'\]\)"):
        zx.to_zarr(full.drop_vars(["t", "y"]), p, region={"t": slice(0, 6)})
    with pytest.raises(ValueError, match="cannot set region unless"):
        zx.to_zarr(v, p, region={"t": slice(0, 6)}, mode="w")
    moved = full.isel(t=[0, 2])
    with pytest.raises(ValueError, match="non-contiguous"):
        zx.to_zarr(moved[["v"]], p, region="auto")
    shifted = _timeseries(2, start=40)
    with pytest.raises(KeyError, match="Not all values of coordinate 't'"):
        zx.to_zarr(shifted[["v"]], p, region="auto")
    # nothing of it was written
    xr.testing.assert_identical(_read(p), full)


def test_mode_r_plus_writes_existing_variables_only(tmp_path):
    p = tmp_path / "r.zarr"
    full = _timeseries(4)
    zx.to_zarr(full, p)
    new = full.copy(deep=True)
    new["v"] = new.v + 1
    new.attrs = {"title": "changed"}
    zx.to_zarr(new, p, mode="r+")
    got = _read(p)
    np.testing.assert_array_equal(got.v.values, new.v.values)
    assert got.attrs == {"title": "x"}  # r+ leaves metadata alone
    with pytest.raises(ValueError, match=r"non-pre-existing variables \['w'\].*mode='a'"):
        zx.to_zarr(new.assign(w=new.v * 2), p, mode="r+")
    with pytest.raises(FileNotFoundError):
        zx.to_zarr(new, tmp_path / "missing.zarr", mode="r+")


def test_mode_a_refuses_changed_dimension_names_and_sizes(tmp_path):
    p = tmp_path / "a.zarr"
    zx.to_zarr(xr.Dataset({"v": (("x", "y"), np.zeros((2, 3)))}), p)
    with pytest.raises(ValueError, match=r"'v' already exists with different dimension names"
                                         r" \('x', 'y'\) != \('x', 'z'\)"):
        zx.to_zarr(xr.Dataset({"v": (("x", "z"), np.ones((2, 3)))}), p, mode="a")
    with pytest.raises(ValueError, match="different dimension sizes"):
        zx.to_zarr(xr.Dataset({"v": (("x", "y"), np.ones((2, 4)))}), p, mode="a")
    # the same names in another order are transposed into place
    zx.to_zarr(xr.Dataset({"v": (("y", "x"), np.arange(6.0).reshape(3, 2))}), p, mode="a")
    np.testing.assert_array_equal(_read(p).v.values, np.arange(6.0).reshape(3, 2).T)
    with pytest.raises(ValueError, match="'v' already exists, but encoding was provided"):
        zx.to_zarr(xr.Dataset({"v": (("x", "y"), np.ones((2, 3)))}), p, mode="a",
                   encoding={"v": {"chunks": (1, 1)}})


@FORMATS
def test_fill_value_none_in_encoding_matches_xarray(tmp_path, fmt):
    ds = xr.Dataset({"f": ("x", np.array([0.0, np.nan, 2.0])), "i": ("x", [0, 1, 2])})
    enc = {"f": {"_FillValue": None}, "i": {"_FillValue": None}}
    ref, got = _both(tmp_path, lambda call: call(ds, encoding=enc), fmt)
    xr.testing.assert_identical(got, ref)
    for name in ("ref", "zf"):
        arr = zarr.open_array(tmp_path / f"{name}.zarr", path="f")
        assert "_FillValue" not in arr.attrs
    with pytest.raises(ValueError, match="_FillValue or fill_value, not both"):
        zx.to_zarr(ds, tmp_path / "b.zarr", zarr_format=3,
                   encoding={"f": {"_FillValue": 1.0, "fill_value": 2.0}})


def test_align_chunks_rechunks_and_safe_chunks_refuses(tmp_path):
    ds = xr.Dataset({"v": ("x", np.arange(10.0))}).chunk({"x": (3, 3, 4)})
    enc = {"v": {"chunks": (5,)}}
    with pytest.raises(ValueError, match="overlap multiple Dask chunks"):
        zx.to_zarr(ds, tmp_path / "a.zarr", encoding=enc)
    assert not (tmp_path / "a.zarr").exists()
    zx.to_zarr(ds, tmp_path / "a.zarr", encoding=enc, align_chunks=True)
    arr = zarrfast.open_array(tmp_path / "a.zarr", path="v")
    assert arr.chunks == (5,)
    np.testing.assert_array_equal(arr[...], np.arange(10.0))


def test_compute_false_returns_a_delayed_that_writes(tmp_path):
    from dask.delayed import Delayed

    ds = _timeseries(4).chunk({"t": 2})
    p = tmp_path / "d.zarr"
    delayed = zx.to_zarr(ds, p, compute=False)
    assert isinstance(delayed, Delayed)
    assert np.isnan(_read(p).v.values).all()  # metadata (and indexes) only so far
    delayed.compute()
    xr.testing.assert_identical(_read(p), ds.load())
    # an append, and a dataset without dask data, give a Delayed too
    more = _timeseries(2, start=4).chunk({"t": 2})
    d2 = zx.to_zarr(more, p, append_dim="t", compute=False)
    assert isinstance(d2, Delayed)
    d2.compute()
    assert _read(p).sizes["t"] == 6
    assert isinstance(zx.to_zarr(_timeseries(1), tmp_path / "n.zarr", compute=False), Delayed)


def test_stale_encoding_chunks_are_dropped_like_xarray(tmp_path):
    src = tmp_path / "s.zarr"
    zx.to_zarr(xr.Dataset({"v": (("a", "b"), np.arange(12.0).reshape(3, 4))}), src,
               encoding={"v": {"chunks": (1, 2)}})
    squeezed = _read(src).isel(a=0)  # encoding["chunks"] == (1, 2) for a 1-d variable now
    assert squeezed.v.encoding["chunks"] == (1, 2)
    zx.to_zarr(squeezed, tmp_path / "z.zarr")
    squeezed.to_zarr(tmp_path / "ref.zarr")
    xr.testing.assert_identical(_read(tmp_path / "z.zarr"), _read(tmp_path / "ref.zarr"))


def test_bad_names_and_chunks_raise_type_errors(tmp_path):
    with pytest.raises(TypeError, match="Invalid name 1 for DataArray or Dataset key"):
        zx.to_zarr(xr.Dataset({1: ("x", [1.0])}), tmp_path / "a.zarr")
    with pytest.raises(ValueError, match="string must be length 1 or greater"):
        zx.to_zarr(xr.Dataset({"": ("x", [1.0])}), tmp_path / "a.zarr")
    ds = xr.Dataset({"v": ("x", np.arange(4.0))})
    with pytest.raises(TypeError, match=r"chunks'\]=\(2.5,\) for variable named 'v'"):
        zx.to_zarr(ds, tmp_path / "a.zarr", encoding={"v": {"chunks": (2.5,)}})
    with pytest.raises(TypeError, match="Invalid attribute in Dataset.attrs"):
        zx.to_zarr(ds.assign_attrs(bad=xr.DataArray()), tmp_path / "a.zarr")
    with pytest.raises(ValueError, match="must be castable to a dictionary"):
        zx.to_zarr(ds, tmp_path / "a.zarr", encoding={"v": "foo"})
    with pytest.raises(KeyError, match="'w', which is not in the dataset"):
        zx.to_zarr(ds, tmp_path / "a.zarr", encoding={"w": {}})
    assert not (tmp_path / "a.zarr").exists()


@FORMATS
@pytest.mark.parametrize("writer", ["zarr", "zarrfast"])
def test_variable_named_none_roundtrips(tmp_path, fmt, writer):
    ds = xr.Dataset({None: ("x", np.array([1, 2, 3]))})
    p = tmp_path / "n.zarr"
    if writer == "zarr":
        ds.to_zarr(p, zarr_format=fmt)
    else:
        zx.to_zarr(ds, p, zarr_format=fmt)
    for consolidated in (None, True, False):
        got = xr.open_dataset(p, engine="zarrfast", consolidated=consolidated).load()
        xr.testing.assert_identical(got, ds)
    xr.testing.assert_identical(_read(p, engine="zarr"), ds)
    # other reserved names are still refused for writing
    with pytest.raises(ZarrfastError, match="'__other' must not start with '__'"):
        zx.to_zarr(xr.Dataset({"__other": ("x", [1])}), tmp_path / "o.zarr")


@FORMATS
def test_unnamed_dataarray_is_written_as_xarray_does(tmp_path, fmt):
    da = xr.DataArray(np.arange(3.0), dims="x")
    zx.to_zarr(da, tmp_path / "z.zarr", zarr_format=fmt)
    got = xr.open_dataarray(tmp_path / "z.zarr", engine="zarrfast").load()
    xr.testing.assert_identical(got, da)


def test_missing_consolidated_metadata_warns_and_reads(tmp_path):
    p = tmp_path / "c.zarr"
    ds = _timeseries(2)
    zx.to_zarr(ds, p, consolidated=False)
    with pytest.warns(RuntimeWarning, match="Failed to open Zarr store with consolidated"):
        got = xr.open_dataset(p, engine="zarrfast").load()
    xr.testing.assert_identical(got, ds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(p, engine="zarrfast", consolidated=False).load()
    with pytest.raises(ValueError, match="no consolidated metadata"):
        xr.open_dataset(p, engine="zarrfast", consolidated=True)


def test_load_async_reads_the_same_values(tmp_path):
    p = tmp_path / "l.zarr"
    ds = _timeseries(6)
    zx.to_zarr(ds, p, encoding={"v": {"chunks": (2, 3)}})
    lazy = xr.open_dataset(p, engine="zarrfast")

    async def main():
        return await lazy.load_async()
    got = asyncio.run(main())
    xr.testing.assert_identical(got, ds)
    sel = asyncio.run(lazy.v.isel(t=[0, 3, 5]).load_async())
    np.testing.assert_array_equal(sel.values, ds.v.values[[0, 3, 5]])


def test_v3_codecs_are_objects_and_write_back(tmp_path, monkeypatch):
    p = tmp_path / "c.zarr"
    ds = xr.Dataset({"v": ("x", np.arange(100.0))})
    zx.to_zarr(ds, p, encoding={"v": {"compressors": [zarr.codecs.ZstdCodec(level=2)]}})
    enc = xr.open_dataset(p, engine="zarrfast").v.encoding
    assert enc["compressors"] == xr.open_dataset(p, engine="zarr").v.encoding["compressors"]
    # without zarr-python, zarrfast's codec objects, which to_zarr takes back
    monkeypatch.setitem(sys.modules, "zarr.registry", None)
    back = xr.open_dataset(p, engine="zarrfast").load()
    (codec,) = back.v.encoding["compressors"]
    assert isinstance(codec, zarrfast.codecs.ZstdCodec)
    assert codec.to_dict()["configuration"]["level"] == 2
    zx.to_zarr(back, tmp_path / "b.zarr")
    assert zarrfast.open_array(tmp_path / "b.zarr", path="v").compressors[0].to_dict() == \
        codec.to_dict()


@pytest.mark.skipif(not hasattr(np.dtypes, "StringDType"), reason="needs NumPy 2")
@pytest.mark.parametrize("writer", ["zarr", "zarrfast"])
def test_stringdtype_stays_stringdtype_in_v3(tmp_path, writer):
    dt = np.dtypes.StringDType()
    ds = xr.Dataset({"s": ("x", np.array(["a", "bb", "ccc"], dtype=dt)),
                     "z": np.array("q", dtype=dt)})
    p = tmp_path / "s.zarr"
    if writer == "zarr":
        ds.to_zarr(p, zarr_format=3, consolidated=False)
    else:
        zx.to_zarr(ds, p, zarr_format=3, consolidated=False)
    assert zarr.open_array(p, path="s", mode="r").dtype == dt
    got = _read(p)
    ref = _read(p, engine="zarr")
    assert got.s.dtype == ref.s.dtype == dt and got.z.dtype == dt
    xr.testing.assert_identical(got, ref)
    # with an na_object: written the compatible way, nulls as empty strings
    nulls = xr.Dataset({"s": ("x", np.array(["ab", None],
                                           dtype=np.dtypes.StringDType(na_object=None)))})
    zx.to_zarr(nulls, tmp_path / "n.zarr", zarr_format=3)
    assert zarr.open_array(tmp_path / "n.zarr", path="s", mode="r").dtype.kind != "T"
    np.testing.assert_array_equal(_read(tmp_path / "n.zarr").s.values, ["ab", ""])


def test_array_without_dimension_names_is_a_key_error(tmp_path):
    g = zarrfast.open_group(tmp_path / "k.zarr", mode="w")
    g.create_array("bar", shape=(3, 5), dtype="f4")
    with pytest.raises(KeyError, match="'bar'.*required for xarray to determine variable "
                                       "dimensions"):
        xr.open_dataset(tmp_path / "k.zarr", engine="zarrfast", consolidated=False)


class _NoConsolidated(zarr.storage.WrapperStore):
    supports_consolidated_metadata = False


@FORMATS
def test_store_without_consolidated_metadata_support(fmt):
    """A zarr-python store that cannot hold consolidated metadata: written without it, read
    without a warning (and without failing for consolidated=True), as xarray does."""
    store = _NoConsolidated(zarr.storage.MemoryStore({}, read_only=False))
    ds = _timeseries(3)
    zx.to_zarr(ds, store, zarr_format=fmt)
    with pytest.raises(ZarrfastError, match="has no consolidated metadata"):
        zarrfast.open_group(zarrfast.storage.ZarrPythonStore(store), mode="r",
                            use_consolidated=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for consolidated in (None, True):
            got = xr.open_dataset(store, engine="zarrfast", consolidated=consolidated).load()
            xr.testing.assert_identical(got, ds)


def test_mode_a_adds_variables_next_to_arrays_without_dimension_names(tmp_path):
    p = tmp_path / "f.zarr"
    g = zarrfast.open_group(p, mode="w")
    g.create_array("foreign", shape=(4,), dtype="i2")  # not an xarray variable
    zx.to_zarr(xr.Dataset({"v": ("x", np.arange(3.0))}), p, mode="a")
    zx.to_zarr(xr.Dataset({"v": ("x", np.arange(2.0))}), p, append_dim="x")
    assert zarrfast.open_array(p, path="v").shape == (5,)
    assert zarrfast.open_array(p, path="foreign").shape == (4,)
    with pytest.raises(ValueError, match="dimension 'x' has length 7 in the dataset but 5"):
        zx.to_zarr(xr.Dataset({"w": ("x", np.arange(7.0))}), p, mode="a")
