"""GeoZarr writing: ``write_dataset`` and ``build_multiscales``.

* ``write_dataset``: Zarr v2/v3 round trips read back by zarr-python (and by
  ``xarray.open_zarr`` when xarray is installed), an ``xarray.Dataset`` input, and
  invalid input rejected before anything is written.
* ``build_multiscales``: pyramids of a 2-D and a 3-D ``(time, y, x)`` Dataset --
  structure, every level's values against the oracle applied level from level,
  tile-aligned chunks, ``multiscales`` metadata, the GeoZarr validator, zarr-python
  -- and bad input rejected before anything is written.

The downsampling kernels themselves: ``tests/kernels/test_kernel_downsample.py``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.geozarr.multiscales import build_multiscales
from zarrfast.geozarr.write import decode_fill_attr, encode_fill_attr, write_dataset

import _helpers
from _helpers.geozarr import METHODS, make_source, oracle, small_tms

try:
    from zarrfast._ext import _downsample as compiled
except ImportError:  # pragma: no cover - the extension-less job
    compiled = None

try:
    from zarrfast.geozarr.validate import validate
except ImportError:  # pragma: no cover - shipped separately
    validate = None

try:
    import xarray as xr
except ImportError:  # pragma: no cover - optional extra
    xr = None

import zarr

requires_xarray = pytest.mark.skipif(xr is None, reason="xarray not installed")


def _assert_errors_or_findings_clean(findings):
    bad = [f for f in findings if f.severity in ("E", "R")]
    assert not bad, "\n".join(str(f) for f in bad)


# ---------------------------------------------------------------------------
# write_dataset
# ---------------------------------------------------------------------------


def _sample_vars(ny=6, nx=9):
    rng = np.random.default_rng(7)
    temp = rng.random((ny, nx)).astype("f4")
    temp[0, 0] = -9999.0
    cls = rng.integers(1, 5, size=(ny, nx)).astype("u1")
    data_vars = {
        "temp": (("y", "x"), temp, {"units": "K", "_FillValue": -9999.0,
                                    "standard_name": "air_temperature",
                                    "scale": np.float32(0.5), "valid_range": np.array([0, 1])}),
        "cls": (("y", "x"), cls, {"_FillValue": 0, "flag_values": [1, 2, 3, 4]}),
    }
    coords = {"y": ("y", np.linspace(50, 45, ny), {"units": "degrees_north"}),
              "x": (("x",), np.linspace(5, 10, nx), {"units": "degrees_east"})}
    return data_vars, coords


@pytest.mark.parametrize("fmt", [2, 3])
def test_write_dataset_round_trip(tmp_path, fmt):
    path = tmp_path / f"ds{fmt}.zarr"
    data_vars, coords = _sample_vars()
    g = write_dataset(str(path), data_vars, coords, zarr_format=fmt, chunks={"x": 4},
                      attrs={"title": "demo", "n": np.int64(3)})
    assert isinstance(g, zarrfast.Group) and g.zarr_format == fmt
    z = zarr.open_group(str(path), mode="r", zarr_format=fmt)
    assert dict(z.attrs) == {"title": "demo", "n": 3}
    assert sorted(z.array_keys()) == ["cls", "temp", "x", "y"]
    for name, (dims, values, *rest) in {**data_vars, **coords}.items():
        arr = z[name]
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        np.testing.assert_array_equal(arr[...], values)
        if fmt == 3:
            assert tuple(arr.metadata.dimension_names) == dims
            assert "_ARRAY_DIMENSIONS" not in arr.attrs
        else:
            assert tuple(arr.attrs["_ARRAY_DIMENSIONS"]) == dims
        attrs = dict(rest[0]) if rest else {}
        fill = attrs.pop("_FillValue", None)
        for k, v in attrs.items():
            assert arr.attrs[k] == np.asarray(v).tolist()
        if fmt == 2:
            assert "_FillValue" not in arr.attrs
            assert arr.metadata.fill_value == fill if fill is not None else \
                arr.metadata.fill_value is None
        elif fill is not None:
            assert decode_fill_attr(arr.attrs["_FillValue"]) == fill
            assert arr.metadata.fill_value == fill
    assert z["temp"].chunks[1] == 4 and z["y"].chunks == (6,)
    if validate is not None:
        _assert_errors_or_findings_clean(validate(str(path), "dataset"))
    if xr is not None:
        ds = xr.open_zarr(str(path), consolidated=False)
        assert ds["temp"].dims == ("y", "x") and ds["temp"].attrs["units"] == "K"
        assert np.isnan(ds["temp"].values[0, 0])  # _FillValue masked
        np.testing.assert_array_equal(ds["temp"].values[1:], data_vars["temp"][1][1:])
        np.testing.assert_array_equal(ds["x"].values, coords["x"][1])
        assert ds.attrs["title"] == "demo"


def test_write_dataset_into_group_and_overwrite():
    g = zarrfast.open_group(None, mode="w", zarr_format=3)
    data_vars, coords = _sample_vars()
    write_dataset(g, data_vars, coords)
    with pytest.raises(ZarrfastError, match="already has members"):
        write_dataset(g, data_vars, coords)
    write_dataset(g, data_vars, coords, overwrite=True)
    with pytest.raises(ZarrfastError, match="Zarr v3"):
        write_dataset(g, data_vars, coords, zarr_format=2, overwrite=True)
    # a 1-D array named like its only dimension is a data and a coordinate variable
    h = zarrfast.open_group(None, mode="w", zarr_format=2)
    write_dataset(h, {"lat": ("lat", np.arange(4.0))}, zarr_format=2)
    assert h["lat"].attrs["_ARRAY_DIMENSIONS"] == ["lat"]


def _snapshot(store):
    return {k: store.get(k) for k in store.list()}


@pytest.mark.parametrize("bad", [
    "missing_coord", "wrong_length", "scalar", "dup_dims", "bad_name", "both", "attrs",
    "coord_dims", "rank", "fill", "chunks", "format",
])
def test_write_dataset_rejects_before_writing(bad):
    g = zarrfast.open_group(None, mode="w", zarr_format=3)
    g.attrs["keep"] = 1
    before = _snapshot(g.store)
    data_vars, coords = _sample_vars()
    kwargs = {}
    if bad == "missing_coord":
        del coords["x"]
    elif bad == "wrong_length":
        coords["x"] = ("x", np.arange(3.0))
    elif bad == "scalar":
        data_vars["crs"] = ((), np.array(0))
    elif bad == "dup_dims":
        data_vars["d"] = (("y", "y"), np.zeros((6, 6)))
    elif bad == "bad_name":
        data_vars["__x"] = (("y",), np.zeros(6))
    elif bad == "both":
        data_vars["x"] = coords["x"]
    elif bad == "attrs":
        data_vars["temp"][2]["bad"] = object()
    elif bad == "coord_dims":
        coords["x"] = ("y", np.arange(6.0))
    elif bad == "rank":
        data_vars["temp"] = (("y",), data_vars["temp"][1])
    elif bad == "fill":
        data_vars["cls"] = (("y", "x"), data_vars["cls"][1], {"_FillValue": 1.5e9})
    elif bad == "chunks":
        kwargs["chunks"] = {"x": 0}
    elif bad == "format":
        kwargs["zarr_format"] = 4
    with pytest.raises(ZarrfastError):
        write_dataset(g, data_vars, coords, **kwargs)
    assert _snapshot(g.store) == before


def test_write_dataset_path_rejects_before_creating(tmp_path):
    data_vars, coords = _sample_vars()
    del coords["y"]
    with pytest.raises(ZarrfastError, match="coordinate variable 'y'"):
        write_dataset(str(tmp_path / "new.zarr"), data_vars, coords)
    assert not (tmp_path / "new.zarr").exists()


def test_fill_attr_codec():
    for v, dt in ((-9999.0, "f4"), (np.nan, "f8"), (3, "i2")):
        enc = encode_fill_attr(v, np.dtype(dt))
        dec = decode_fill_attr(enc)
        assert (math.isnan(dec) and math.isnan(v)) or dec == v
    assert decode_fill_attr("NaN") != decode_fill_attr("NaN")
    assert decode_fill_attr(None) is None and decode_fill_attr("not base64!") is None


@requires_xarray
@pytest.mark.parametrize("fmt", [2, 3])
def test_write_dataset_from_xarray(tmp_path, fmt):
    import pandas as pd

    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {"t2m": (("time", "y", "x"), rng.random((3, 5, 4)).astype("f4"),
                 {"units": "K", "long_name": "2 m temperature"}),
         "mask": (("y", "x"), rng.integers(0, 2, (5, 4)).astype("i1"))},
        coords={"time": pd.date_range("2024-01-01", periods=3),
                "y": ("y", np.arange(5.0), {"units": "m"}), "x": np.arange(4.0) * 10},
        attrs={"Conventions": "CF-1.8"},
    )
    ds["t2m"][0, 0, 0] = np.nan
    path = str(tmp_path / "x.zarr")
    write_dataset(path, ds, zarr_format=fmt)
    back = xr.open_zarr(path, consolidated=False).load()
    xr.testing.assert_identical(back, ds)
    if validate is not None:
        _assert_errors_or_findings_clean(validate(path, "dataset"))
    with pytest.raises(ZarrfastError):
        write_dataset(str(tmp_path / "y.zarr"), ds, {"x": ("x", np.arange(4.0))})
    bad = xr.Dataset({"v": (("a",), np.arange(3.0))})  # dimension without coordinate
    with pytest.raises(ZarrfastError, match="coordinate variable 'a'"):
        write_dataset(str(tmp_path / "z.zarr"), bad)
    assert not (tmp_path / "z.zarr").exists()


# ---------------------------------------------------------------------------
# build_multiscales
# ---------------------------------------------------------------------------


def reference_levels(values, factors, method, fill):
    """Level-from-level downsampling of the last two axes with the oracle."""
    out = [values]
    cur = values
    for f in factors:
        lead = cur.shape[:-2]
        a3 = cur.reshape(-1, *cur.shape[-2:])
        red, _ = oracle(a3, f, f, method, fill)
        cur = red.reshape(*lead, *red.shape[-2:])
        out.append(cur)
    return out


def check_pyramid(target, source_vars, coords, level_ids, tile, method, fmt):
    # a path is read back with zarr-python; an in-memory zarrfast group with zarrfast
    z = zarr.open_group(target, mode="r", zarr_format=fmt) if isinstance(target, str) \
        else target
    ms = dict(z.attrs)["multiscales"]
    assert ms["resampling_method"] == method
    assert sorted(ms["tile_matrix_limits"]) == sorted(level_ids)
    assert sorted(z.group_keys()) == sorted(level_ids)
    members = {k: sorted(z[k].array_keys()) for k in level_ids}
    assert len({tuple(v) for v in members.values()}) == 1
    assert members[level_ids[0]] == sorted({*source_vars, *coords})
    factors = [2] * (len(level_ids) - 1)
    for name, (dims, values, *rest) in source_vars.items():
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        fill = (rest[0].get("_FillValue") if rest else None)
        if name == "station":
            refs = [values] * len(level_ids)
        else:
            refs = reference_levels(values, factors, method, fill)
        for lid, ref in zip(level_ids, refs, strict=True):
            arr = z[lid][name]
            got = arr[...]
            assert got.shape == ref.shape, (lid, name)
            if method in ("nearest", "mode", "min", "max") or values.dtype.kind != "f":
                np.testing.assert_array_equal(got, ref, err_msg=f"{lid}/{name}")
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5,
                                           err_msg=f"{lid}/{name}")
            if dims[-2:] == ("y", "x"):
                assert arr.chunks[-2:] == (tile, tile)  # chunk (r, c) is tile (r, c)
            got_dims = (tuple(arr.metadata.dimension_names) if fmt == 3
                        else tuple(arr.attrs["_ARRAY_DIMENSIONS"]))
            assert got_dims == dims
            if rest:
                assert arr.attrs["units"] == rest[0]["units"]
    for name in ("y", "x"):
        centres = coords[name][1]
        for lid in level_ids:
            got = z[lid][name][...]
            np.testing.assert_allclose(got, centres)
            # the next level's centres are block means of these (partial edges included)
            centres = np.array([centres[i:i + 2].mean() for i in range(0, len(centres), 2)])
    for lid in level_ids:
        lim = ms["tile_matrix_limits"][lid]
        ny, nx = z[lid]["v"].shape[-2:]
        assert lim == {"tileMatrix": lid, "minTileCol": 0, "minTileRow": 0,
                       "maxTileCol": -(-nx // tile) - 1, "maxTileRow": -(-ny // tile) - 1}
    if validate is not None:
        _assert_errors_or_findings_clean(
            validate(target if isinstance(target, str) else target, "multiscale"))
    return z, ms


@pytest.mark.parametrize("fmt", [2, 3])
def test_pyramid_2d(tmp_path, fmt):
    src, data_vars, coords = make_source(str(tmp_path / "src.zarr"), fmt=fmt)
    target = str(tmp_path / "pyr.zarr")
    tms = small_tms()
    build_multiscales(src, target, tile_matrix_set=tms)
    # 37 x 50 pixels: z3 (64 px) is the coarsest holding them; down to z0 (one 8-px tile)
    ids = ["z3", "z2", "z1", "z0"]
    z, ms = check_pyramid(target, data_vars, coords, ids, 8, "average", fmt)
    written = ms["tile_matrix_set"]
    assert [tm["id"] for tm in written["tileMatrices"]] == sorted(ids)  # inline: used only
    assert written["id"] == "tiny"
    assert dict(z["z1"].attrs) == {"title": "src"}
    assert z["z0"]["v"].shape == (5, 7)


@pytest.mark.parametrize("fmt", [2, 3])
def test_pyramid_3d_well_known(tmp_path, fmt):
    src, data_vars, coords = make_source(str(tmp_path / "src.zarr"), fmt=fmt,
                                         shape=(300, 520), lead=(3,),
                                         chunks={"y": 100, "x": 130, "time": 2})
    target = zarrfast.open_group(str(tmp_path / "pyr.zarr"), mode="w", zarr_format=fmt)
    with zarrfast.config.set(threads=3):
        build_multiscales(src, target, tile_matrix_set="WebMercatorQuad")
    # 520 px wide: zoom 2 (1024 px) down to zoom 0 (one 256-px tile)
    z, ms = check_pyramid(str(tmp_path / "pyr.zarr"), data_vars, coords, ["2", "1", "0"],
                          256, "average", fmt)
    assert ms["tile_matrix_set"] == "WebMercatorQuad"
    assert z["2"]["v"].chunks == (2, 256, 256)
    assert z["2"]["time"][...].tolist() == coords["time"][1].tolist()
    if xr is not None:
        ds = xr.open_zarr(str(tmp_path / "pyr.zarr"), group="1", consolidated=False)
        assert ds["v"].dims == ("time", "y", "x") and ds["v"].shape == (3, 150, 260)
        assert np.isnan(ds["v"].values[0, 0, 0])  # the nodata block stays nodata


@pytest.mark.parametrize("method", METHODS)
def test_pyramid_methods(method):
    src, data_vars, coords = make_source(None, shape=(21, 30), dtype="f4", seed=5)
    ints, ivars, _ = make_source(None, shape=(21, 30), dtype="u2", fill=0, seed=6)
    for source, variables in ((src, data_vars), (ints, ivars)):
        target = zarrfast.open_group(None, mode="w", zarr_format=3)
        build_multiscales(source, target, tile_matrix_set=small_tms(tile=4),
                          resampling_method=method, levels=3)
        check_pyramid(target, variables, coords, ["z3", "z2", "z1"], 4, method, 3)


def test_pyramid_levels_and_factors():
    src, data_vars, coords = make_source(None, shape=(40, 40))
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms(), levels=["z1", "z5", "z3"])
    assert sorted(target.group_keys()) == ["z1", "z3", "z5"]
    # z5 holds the source as is; z3 is 4x coarser, z1 another 4x
    cur = data_vars["v"][1]
    lv = [cur]
    for _ in range(2):
        cur = oracle(cur[None], 4, 4, "average", -9999.0)[0][0]
        lv.append(cur)
    for lid, ref in zip(["z5", "z3", "z1"], lv, strict=True):
        np.testing.assert_allclose(target[lid]["v"][...], ref, rtol=1e-5)
    # a target path in another format than the source
    tgt2 = zarrfast.open_group(None, mode="w", zarr_format=2)
    build_multiscales(src, tgt2, tile_matrix_set=small_tms(), levels=2)
    assert tgt2["z3"]["v"].attrs["_ARRAY_DIMENSIONS"] == ["y", "x"]
    assert tgt2["z3"]["v"].fill_value == -9999.0
    if validate is not None:
        _assert_errors_or_findings_clean(validate(tgt2, "multiscale"))
        _assert_errors_or_findings_clean(validate(target, "multiscale"))


def test_pyramid_overwrite():
    src, _, _ = make_source(None)
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms())
    before = _snapshot(target.store)
    with pytest.raises(ZarrfastError, match="overwrite"):
        build_multiscales(src, target, tile_matrix_set=small_tms())
    assert _snapshot(target.store) == before
    build_multiscales(src, target, tile_matrix_set=small_tms(), resampling_method="max",
                      overwrite=True)
    assert target.attrs["multiscales"]["resampling_method"] == "max"


def test_pyramid_many_chunks_many_threads(subprocess_cwd):
    """Tasks on the shared pool whose reads/writes stay inline: no deadlock, same result."""
    code = """if True:
        import numpy as np, zarrfast, sys
        sys.path.insert(0, {tests!r})  # tests/: the _helpers package (not the source tree)
        from _helpers.geozarr import make_source, small_tms
        from zarrfast.geozarr.multiscales import build_multiscales
        src, data_vars, coords = make_source(None, shape=(200, 260),
                                             chunks={{"y": 20, "x": 36}})
        outs = []
        for threads in (1, 8):
            t = zarrfast.open_group(None, mode="w", zarr_format=3)
            with zarrfast.config.set(threads=threads):
                build_multiscales(src, t, tile_matrix_set=small_tms(8, tile=8))
            outs.append({{k: t[k]["v"][...] for k in t.group_keys()}})
        assert outs[0].keys() == outs[1].keys()
        for k in outs[0]:
            np.testing.assert_array_equal(outs[0][k], outs[1][k])
        print("ok", len(outs[0]))
    """
    res = subprocess.run([sys.executable, "-c", code.format(tests=str(_helpers.TESTS))],
                         capture_output=True, text=True, timeout=300, cwd=subprocess_cwd)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == "ok"


def _bad_sources():
    def no_coord():
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        g.create_array("v", shape=(4, 4), dtype="f4", dimension_names=["y", "x"])
        g.create_array("y", shape=(4,), dtype="f4", dimension_names=["y"])
        return g

    def no_dims():
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        g.create_array("v", shape=(4, 4), dtype="f4")
        return g

    def empty():
        return zarrfast.open_group(None, mode="w", zarr_format=3)

    def wrong_len():
        g, _, _ = make_source(None)
        g.create_array("u", shape=(36, 50), dtype="f4", dimension_names=["y", "x"])
        return g

    return {"no_coord": no_coord, "no_dims": no_dims, "empty": empty, "wrong_len": wrong_len}


@pytest.mark.parametrize("case", [
    "method_unknown", "method_unsupported", "tms_unknown", "tms_dict", "tms_type",
    "levels_unknown", "levels_too_many", "levels_bad", "too_big", "spatial_dims",
    "source_no_coord", "source_no_dims", "source_empty", "source_wrong_len",
    "source_missing", "fill_unfit", "same_group",
])
def test_pyramid_bad_input_writes_nothing(tmp_path, case):
    src, _, _ = make_source(None, shape=(37, 50))
    kwargs = {"tile_matrix_set": small_tms()}
    target_path = str(tmp_path / "pyr.zarr")
    target: object = target_path
    if case == "method_unknown":
        kwargs["resampling_method"] = "Average"
    elif case == "method_unsupported":
        kwargs["resampling_method"] = "bilinear"
    elif case == "tms_unknown":
        kwargs["tile_matrix_set"] = "GoogleMapsCompatible"
    elif case == "tms_dict":
        kwargs["tile_matrix_set"] = {"id": "x", "tileMatrices": []}
    elif case == "tms_type":
        kwargs["tile_matrix_set"] = 3
    elif case == "levels_unknown":
        kwargs["levels"] = ["z1", "nope"]
    elif case == "levels_too_many":
        kwargs["levels"] = 9
    elif case == "levels_bad":
        kwargs["levels"] = 0
    elif case == "too_big":
        kwargs["tile_matrix_set"] = small_tms(n=2)
    elif case == "spatial_dims":
        kwargs["spatial_dims"] = ("y", "lon")
    elif case.startswith("source_") and case != "source_missing":
        src = _bad_sources()[case[len("source_"):]]()
    elif case == "source_missing":
        src = str(tmp_path / "missing.zarr")
    elif case == "fill_unfit":
        src = zarrfast.open_group(None, mode="w", zarr_format=3)
        write_dataset(src, {"v": (("y", "x"), np.ones((4, 4), "u1"))},
                      {"y": ("y", np.arange(4.0)), "x": ("x", np.arange(4.0))})
        src["v"].attrs["missing_value"] = 1.5
    elif case == "same_group":
        target = src
    with pytest.raises(ZarrfastError):
        build_multiscales(src, target, **kwargs)
    assert not os.path.exists(target_path)
    # a Group target stays as it was, too
    if case != "same_group":
        g = zarrfast.open_group(None, mode="w", zarr_format=3)
        before = _snapshot(g.store)
        with pytest.raises(ZarrfastError):
            build_multiscales(src, g, **kwargs)
        assert _snapshot(g.store) == before


def test_pyramid_metadata_json_is_plain():
    src, _, _ = make_source(None)
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set="WebMercatorQuad")
    doc = json.loads(target.store.get("zarr.json"))
    ms = doc["attributes"]["multiscales"]
    assert ms == {"tile_matrix_set": "WebMercatorQuad", "resampling_method": "average",
                  "tile_matrix_limits": {"0": {"tileMatrix": "0", "minTileCol": 0,
                                               "minTileRow": 0, "maxTileCol": 0,
                                               "maxTileRow": 0}}}


def test_pyramid_aux_coordinates_and_axis_order():
    """Spatial dims on any axes (here (y, x, band)); CF auxiliary coordinates averaged."""
    rng = np.random.default_rng(11)
    ny, nx = 19, 23
    rgb = rng.integers(0, 256, size=(ny, nx, 3)).astype("u1")
    lat = np.linspace(40, 50, ny)[:, None] + np.zeros((1, nx))
    src = write_dataset(None, {
        "rgb": (("y", "x", "band"), rgb, {"coordinates": "lat"}),
        "lat": (("y", "x"), lat),
    }, {"y": ("y", np.arange(ny) + 0.5), "x": ("x", np.arange(nx) + 0.5),
        "band": ("band", np.array([1, 2, 3]))})
    target = zarrfast.open_group(None, mode="w", zarr_format=3)
    build_multiscales(src, target, tile_matrix_set=small_tms(tile=8),
                      resampling_method="mode", spatial_dims=("y", "x"))
    ids = sorted(target.group_keys(), reverse=True)
    assert ids == ["z2", "z1", "z0"]
    cur_rgb, cur_lat = rgb, lat
    for lid in ids[1:]:
        moved = np.moveaxis(cur_rgb, 2, 0)
        cur_rgb = np.moveaxis(oracle(moved, 2, 2, "mode", None)[0], 0, 2)
        cur_lat = oracle(cur_lat[None], 2, 2, "average", None)[0][0]
        np.testing.assert_array_equal(target[lid]["rgb"][...], cur_rgb)
        np.testing.assert_allclose(target[lid]["lat"][...], cur_lat)
        assert target[lid]["rgb"].chunks == (8, 8, 3)
        assert target[lid]["lat"].chunks == (8, 8)
        np.testing.assert_array_equal(target[lid]["band"][...], [1, 2, 3])
    if validate is not None:
        _assert_errors_or_findings_clean(validate(target, "multiscale"))
    # without spatial_dims the data variables disagree on their last two dims
    with pytest.raises(ZarrfastError, match="spatial_dims"):
        build_multiscales(src, zarrfast.open_group(None, mode="w"),
                          tile_matrix_set=small_tms(tile=8))
