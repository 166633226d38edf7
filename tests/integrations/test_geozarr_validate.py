"""GeoZarr validation (``zarrfast.geozarr``): every rule of ``geozarr-rules.md``.

Each case builds a hierarchy from raw metadata documents (so that malformed ones can
be written) for Zarr v2 and v3, in a memory and a local store, and asserts the exact
set of ``"<severity> <rule> <path>"`` the validator reports.  ``covers`` names the
rules a case exercises; ``test_every_rule_is_covered`` checks that, for both
formats, every rule id has at least one case.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.geozarr import RULES, Finding, GeoZarrError, check, validate
from zarrfast.geozarr.validate import RESAMPLING_METHODS
from zarrfast.storage import LocalStore, MemoryStore

from _helpers.geozarr_docs import (
    INLINE,
    LIM,
    NO,
    TM,
    TMS,
    WMQ,
    A,
    G,
    dataset,
    merge,
    multiscale,
    rooted,
    write_tree,
)

# -- the cases ---------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    tree: Callable[[int], dict]
    expected: Callable[[int], set[str]] | set[str]
    as_: str = "dataset"
    covers: tuple[str, ...] = ()
    fmts: tuple[int, ...] = (2, 3)
    kwargs: dict = field(default_factory=dict)

    def want(self, fmt: int) -> set[str]:
        return self.expected(fmt) if callable(self.expected) else set(self.expected)


CASES: list[Case] = [
    # ---- valid hierarchies ------------------------------------------------------------
    Case("valid-empty-dataset", lambda f: {"": G(f)}, set()),
    Case("valid-dataset", lambda f: rooted(f, dataset(f)), set(), covers=("DS1", "DS2", "DS5")),
    Case("valid-self-coordinate", lambda f: rooted(f, {"lat": A(f, [10], ["lat"])}), set()),
    Case("valid-zero-length-axis", lambda f: rooted(f, dataset(f, y=0)), set(), covers=("DA1",)),
    Case("valid-arbitrary-subgroup-not-validated",
         lambda f: rooted(f, dataset(f), {"extra": G(f), "extra/scalar": A(f, [])}), set()),
    Case("valid-cf-attributes",
         lambda f: rooted(f, {"data": A(f, [2], ["t"], attrs={"units": "K", "grid_mapping":
                                                                 "crs"}),
                             "t": A(f, [2], ["t"], attrs={"axis": "T"})}), set()),
    Case("valid-dataarray", lambda f: {"": A(f, [10, 11, 12], ["lat", "lon", "time"])}, set(),
         as_="dataarray", covers=("DA2", "DA3", "DA4", "DA5")),
    Case("valid-multiscale-well-known", lambda f: multiscale(f, WMQ()), set(),
         as_="multiscale", covers=("MS1", "MS2", "MS3", "MS4", "MS5", "MS8", "MS9", "MS10")),
    Case("valid-multiscale-inline", lambda f: multiscale(f, INLINE()), set(), as_="multiscale",
         covers=("TMS1", "TMS2", "TMS3", "TMS4", "TMS5", "TMS6", "TMS7", "TMS8", "TMS9")),
    Case("valid-multiscale-limits",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0"),
                                                         "1": LIM("1", 0, 1, 1, 1)})),
         set(), as_="multiscale", covers=("MS6", "MS7", "TML1", "TML2", "TML3")),
    Case("valid-multiscale-limit-singular",
         lambda f: multiscale(f, WMQ(tile_matrix_limit={"0": LIM("0"), "1": LIM("1")})),
         set(), as_="multiscale"),
    Case("valid-multiscale-layout",
         lambda f: multiscale(f, {"layout": [
             {"asset": "0", "transform": {"scale": [1.0, 1.0], "translation": [0.0, 0.0]}},
             {"asset": "1", "derived_from": "0", "transform": {"scale": [2.0, 2.0]},
              "resampling_method": "average"}]}),
         set(), as_="multiscale"),
    Case("valid-multiscale-both-forms",
         lambda f: multiscale(f, WMQ(layout=[{"asset": "0"},
                                             {"asset": "1", "derived_from": "0",
                                              "transform": {"scale": [2, 2]}}])),
         set(), as_="multiscale"),
    Case("valid-auto-multiscale", lambda f: multiscale(f, WMQ()), set(), as_="auto"),
    Case("valid-grid-mapping-scalar-allowed",
         lambda f: rooted(f, dataset(f), {"spatial_ref": A(f, [], [], attrs={
             "grid_mapping_name": "transverse_mercator"})}),
         set(), kwargs={"allow_grid_mapping_scalars": True}),
    # ---- Zarr layer ---------------------------------------------------------------------
    Case("Z1-root-missing", lambda f: {"other": {"README": {"not": "zarr"}}}, {"E Z1 /"},
         covers=("Z1",)),
    Case("Z1-child-invalid-json",
         lambda f: rooted(f, dataset(f), {"bad": {"zarr.json" if f == 3 else ".zarray":
                                                 b"{not json"}}),
         {"E Z1 /bad"}, covers=("Z1",)),
    Case("Z1-broken-coordinate-not-skipped",
         lambda f: rooted(f, dataset(f), {"x": {"zarr.json" if f == 3 else ".zarray": b"[1,"}}),
         {"E Z1 /x"}),
    Case("Z1-missing-mandatory-key",
         lambda f: rooted(f, dataset(f), {"x": A(f, [3], ["x"], drop=("fill_value",))}),
         {"E Z1 /x"}),
    Case("Z1-float-shape-is-not-an-integer",
         lambda f: rooted(f, dataset(f), {"x": A(f, [3.0], ["x"])}), {"E Z1 /x"}),
    Case("Z1-string-zarr-format",
         lambda f: rooted(f, dataset(f), {"x": A(f, [3], ["x"], zarr_format=str(f))}),
         {"E Z1 /x"}),
    Case("Z1-zattrs-without-node", lambda f: rooted(f, {"ghost": {".zattrs": {"a": 1}}}),
         {"E Z1 /ghost"}, fmts=(2,)),
    Case("Z1-both-zarray-and-zgroup",
         lambda f: rooted(f, {"both": merge(A(f, [1], ["both"]), G(f))}), {"E Z1 /both"},
         fmts=(2,)),
    Case("Z1-bad-node-type",
         lambda f: rooted(f, {"odd": {"zarr.json": {"zarr_format": 3, "node_type": "table"}}}),
         {"E Z1 /odd"}, fmts=(3,)),
    Case("Z1-implicit-group",
         lambda f: rooted(f, {"implicit/data": A(f, [1], ["data"])}), {"E Z1 /implicit"}),
    Case("Z1-group-as-dataarray", lambda f: {"": G(f)}, {"E Z1 /"}, as_="dataarray"),
    Case("Z1-Z2-spec-lat-example",  # the text's second example, read literally
         lambda f: rooted(f, {"lat": A(f, [10], ["lat"], chunks=[10, 11], drop=("fill_value",))}),
         {"E Z1 /lat", "E Z2 /lat"}, covers=("Z1", "Z2")),
    Case("Z2-chunk-rank", lambda f: rooted(f, dataset(f), {"x": A(f, [3], ["x"], chunks=[3, 1])}),
         {"E Z2 /x"}, covers=("Z2",)),
    Case("Z3-dunder-name", lambda f: rooted(f, {"__x": A(f, [3], ["__x"])}), {"E Z3 /__x"},
         covers=("Z3",)),
    Case("Z3-only-periods", lambda f: rooted(f, {"...": G(f)}), {"E Z3 /..."}, covers=("Z3",)),
    Case("Z4-format-mix",
         lambda f: rooted(f, dataset(f), {"x": A(5 - f, [3], ["x"])}), {"E Z4 /x"},
         covers=("Z4",)),
    Case("Z4-format-mix-group",
         lambda f: rooted(f, dataset(f), {"sub": G(5 - f)}), {"E Z4 /sub"}, covers=("Z4",)),
    # ---- DataArray ----------------------------------------------------------------------
    Case("DA1-scalar-dataarray", lambda f: {"": A(f, [], [])}, {"E DA1 /"}, as_="dataarray",
         covers=("DA1",)),
    Case("DA1-DS1-scalar-member", lambda f: rooted(f, dataset(f), {"s": A(f, [], [])}),
         {"E DA1 /s"}, covers=("DA1", "DS1")),
    Case("DA1-DA2-scalar-member-unnamed", lambda f: rooted(f, dataset(f), {"s": A(f, [])}),
         {"E DA1 /s", "E DA2 /s"}, covers=("DA1", "DA2", "DS1")),
    Case("DA1-grid-mapping-scalar-not-allowed",
         lambda f: rooted(f, dataset(f), {"spatial_ref": A(f, [], [], attrs={
             "grid_mapping_name": "transverse_mercator"})}),
         {"E DA1 /spatial_ref"}, covers=("DA1",)),
    Case("DA2-no-names", lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3])}),
         {"E DA2 /data"}, covers=("DA2", "DS1")),
    Case("DA2-null-dimension-names",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], None)}), {"E DA2 /data"},
         covers=("DA2",)),
    Case("DA2-dataarray", lambda f: {"": A(f, [4])}, {"E DA2 /"}, as_="dataarray",
         covers=("DA2",)),
    Case("DA3-not-a-list", lambda f: rooted(f, dataset(f), {"x": A(f, [3], "x")}),
         {"E DA3 /x"}, covers=("DA3",)),
    Case("DA3-null-entry", lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], [None, "x"])}),
         {"E DA3 /data"}, covers=("DA3",)),
    Case("DA3-number-entry", lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], [1, "x"])}),
         {"E DA3 /data"}, covers=("DA3",)),
    Case("DA3-empty-name-recommended",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["", "x"])}),
         {"R DA3 /data"}, covers=("DA3",)),
    Case("DA3-empty-name-not-recommended",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["", "x"])}),
         set(), kwargs={"recommended": False}),
    Case("DA4-too-few-names", lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["y"])}),
         {"E DA4 /data"}, covers=("DA4",)),
    Case("DA4-too-many-names", lambda f: {"": A(f, [2], ["y", "x"])}, {"E DA4 /"},
         as_="dataarray", covers=("DA4",)),
    Case("DA5-duplicate-names",
         lambda f: rooted(f, {"data": A(f, [2, 2], ["y", "y"]), "y": A(f, [2], ["y"])}),
         lambda f: {"E DA5 /data"} if f == 3 else {"R DA5 /data"}, covers=("DA5",)),
    Case("DA5-duplicate-names-v2-still-checked",
         lambda f: rooted(f, {"data": A(f, [2, 3], ["y", "y"]), "y": A(f, [2], ["y"])}),
         {"R DA5 /data", "E DS5 /data"}, fmts=(2,), covers=("DA5",)),
    Case("DA5-duplicate-names-not-recommended",
         lambda f: rooted(f, {"data": A(f, [2, 2], ["y", "y"]), "y": A(f, [2], ["y"])}),
         lambda f: {"E DA5 /data"} if f == 3 else set(), kwargs={"recommended": False}),
    Case("DA6-legacy-attribute-differs",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["y", "x"], attrs={
             "_ARRAY_DIMENSIONS": ["lat", "lon"]})}),
         {"W DA6 /data"}, fmts=(3,), covers=("DA6",)),
    Case("DA6-legacy-attribute-only",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], attrs={
             "_ARRAY_DIMENSIONS": ["y", "x"]})}),
         {"E DA2 /data", "W DA6 /data"}, fmts=(3,), covers=("DA6",)),
    Case("DA6-legacy-attribute-agrees",
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["y", "x"], attrs={
             "_ARRAY_DIMENSIONS": ["y", "x"]})}),
         set(), fmts=(3,), covers=("DA6",)),
    Case("DA6-not-applicable-to-v2",  # v2 names come from _ARRAY_DIMENSIONS only
         lambda f: rooted(f, dataset(f), {"data": A(f, [2, 3], ["y", "x"],
                                                   dimension_names=["a", "b"])}),
         set(), fmts=(2,), covers=("DA6",)),
    # ---- Dataset ------------------------------------------------------------------------
    Case("DS0-array-as-dataset", lambda f: {"": A(f, [3], ["x"])}, {"E DS0 /"}, covers=("DS0",)),
    Case("DS2-missing-coordinate",
         lambda f: rooted(f, {"data": A(f, [2, 3], ["y", "x"]), "y": A(f, [2], ["y"])}),
         {"E DS2 /data"}, covers=("DS2",)),
    Case("DS2-missing-both",
         lambda f: rooted(f, {"a": A(f, [2], ["t"]), "b": A(f, [2, 3], ["t", "u"])}),
         {"E DS2 /a", "E DS2 /b"}, covers=("DS2",)),
    Case("DS3-coordinate-is-group",
         lambda f: rooted(f, dataset(f), {"x": G(f)}), {"E DS3 /x"}, covers=("DS3",)),
    Case("DS4-coordinate-not-1d",
         lambda f: rooted(f, dataset(f, x=3, y=2), {"x": A(f, [3, 2], ["x", "y"])}),
         {"E DS4 /x"}, covers=("DS4",)),
    Case("DS5-length-mismatch", lambda f: rooted(f, dataset(f), {"x": A(f, [4], ["x"])}),
         {"E DS5 /data"}, covers=("DS5",)),
    Case("DS5-zero-vs-nonzero", lambda f: rooted(f, dataset(f), {"y": A(f, [0], ["y"])}),
         {"E DS5 /data"}, covers=("DS5",)),
    Case("DS6-coordinate-named-otherwise",
         lambda f: rooted(f, dataset(f, x=2, y=2), {"x": A(f, [2], ["y"])}),
         {"W DS6 /x"}, covers=("DS6",)),
    # ---- Multiscale ---------------------------------------------------------------------
    Case("MS1-missing", lambda f: rooted(f, dataset(f, "0")), {"E MS1 /"}, as_="multiscale",
         covers=("MS1",)),
    Case("MS2-not-an-object", lambda f: multiscale(f, [{"datasets": [{"path": "0"}]}]),
         {"E MS2 /"}, as_="multiscale", covers=("MS2",)),
    Case("DS0-array-as-multiscale", lambda f: {"": A(f, [3], ["x"])}, {"E DS0 /"},
         as_="multiscale", covers=("DS0",)),
    Case("MS3-missing", lambda f: multiscale(f, WMQ(resampling_method=NO)), {"E MS3 /"},
         as_="multiscale", covers=("MS3",)),
    Case("MS3-wrong-case", lambda f: multiscale(f, WMQ(resampling_method="Average")),
         {"E MS3 /"}, as_="multiscale", covers=("MS3",)),
    Case("MS3-not-a-string", lambda f: multiscale(f, WMQ(resampling_method=["nearest"])),
         {"E MS3 /"}, as_="multiscale", covers=("MS3",)),
    Case("MS4-missing", lambda f: multiscale(f, WMQ(tile_matrix_set=NO)), {"E MS4 /"},
         as_="multiscale", covers=("MS4",)),
    Case("MS4-wrong-type", lambda f: multiscale(f, WMQ(tile_matrix_set=3)), {"E MS4 /"},
         as_="multiscale", covers=("MS4",)),
    Case("MS5-alias", lambda f: multiscale(f, WMQ(tile_matrix_set="GoogleMapsCompatible")),
         {"E MS5 /"}, as_="multiscale", covers=("MS5",)),
    Case("MS5-case", lambda f: multiscale(f, WMQ(tile_matrix_set="webmercatorquad")),
         {"E MS5 /"}, as_="multiscale", covers=("MS5",)),
    Case("MS5-uri", lambda f: multiscale(f, WMQ(
        tile_matrix_set="http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad")),
         {"E MS5 /"}, as_="multiscale", covers=("MS5",)),
    Case("MS6-both-spellings",
         lambda f: multiscale(f, WMQ(tile_matrix_limit={"0": LIM("0"), "1": LIM("1")},
                                     tile_matrix_limits={"0": LIM("0"), "1": LIM("1")})),
         {"E MS6 /"}, as_="multiscale", covers=("MS6",)),
    Case("MS7-limit-key-not-in-set",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0"), "99": LIM("99")}),
                              levels=("0", "99")),
         {"R MS7 /"}, as_="multiscale", covers=("MS7",)),
    Case("MS7-inline-set",
         lambda f: multiscale(f, INLINE(tile_matrix_limits={"0": LIM("0"), "7": LIM("7")})),
         {"R MS7 /"}, as_="multiscale", covers=("MS7",)),
    Case("MS8-no-level-group",
         lambda f: multiscale(f, WMQ(), levels=("a", "b")),
         {"E MS8 /", "W MS12 /a", "W MS12 /b"}, as_="multiscale", covers=("MS8", "MS12")),
    Case("MS8-empty-limits",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={})),
         {"E MS8 /", "W MS12 /0", "W MS12 /1"}, as_="multiscale", covers=("MS8",)),
    Case("MS8-levels-from-limits",  # "1" exists but is not declared by the limits
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0")})),
         {"W MS12 /1"}, as_="multiscale", covers=("MS8", "MS12")),
    Case("MS9-level-missing",
         lambda f: multiscale(f, INLINE(), levels=("0",)), {"E MS9 /1"}, as_="multiscale",
         covers=("MS9",)),
    Case("MS9-level-is-array",
         lambda f: merge(multiscale(f, INLINE(), levels=("0",)), {"1": A(f, [2], ["1"])}),
         {"E MS9 /1"}, as_="multiscale", covers=("MS9",)),
    Case("MS9-limits-level-missing",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0"), "1": LIM("1")}),
                              levels=("0",)),
         {"E MS9 /1"}, as_="multiscale", covers=("MS9",)),
    Case("MS10-level-breaks-dataset-rules",
         lambda f: merge(multiscale(f, WMQ()), {"1/x": A(f, [5], ["x"])}),
         {"E DS5 /1/data"}, as_="multiscale", covers=("MS10", "DS5")),
    Case("MS10-level-member-names-differ",
         lambda f: merge(multiscale(f, WMQ()), {"1/extra": A(f, [3], ["extra"])}),
         {"E MS10 /"}, as_="multiscale", covers=("MS10",)),
    Case("MS10-broken-level-reported",
         lambda f: merge(multiscale(f, WMQ(), levels=("0",)),
                         {"1": {"zarr.json" if f == 3 else ".zgroup": b"\xff"}}),
         {"E Z1 /1"}, as_="multiscale", covers=("Z1",)),
    Case("MS11-dimension-names-differ",
         lambda f: merge(multiscale(f, WMQ()), {"1/data": A(f, [2, 2], ["x", "y"])}),
         {"W MS11 /"}, as_="multiscale", covers=("MS11",)),
    Case("MS11-kind-differs",
         lambda f: merge(multiscale(f, WMQ()), {"1/x": G(f)}),
         {"W MS11 /", "E DS3 /1/x"}, as_="multiscale", covers=("MS11",)),
    Case("MS12-extra-child",
         lambda f: merge(multiscale(f, WMQ()), {"overview": A(f, [3], ["overview"]),
                                                 "notes": G(f)}),
         {"W MS12 /overview", "W MS12 /notes"}, as_="multiscale", covers=("MS12",)),
    # ---- zarr-conventions layout form ---------------------------------------------------
    Case("layout-not-a-list", lambda f: multiscale(f, {"layout": {"asset": "0"}}),
         {"E MS2 /", "W MS12 /0", "W MS12 /1"}, as_="multiscale", covers=("MS2",)),
    Case("layout-bad-entries",
         lambda f: multiscale(f, {"layout": [
             {"asset": "0"},
             {"asset": "1", "derived_from": "9"},               # unknown source, no transform
             {"asset": 2},                                       # asset not a string
             {"asset": "1", "transform": {"scale": ["2"]}}]}),   # scale not numbers
         {"E MS2 /"}, as_="multiscale", covers=("MS2",)),
    Case("layout-resampling",
         lambda f: multiscale(f, {"resampling_method": "fancy", "layout": [
             {"asset": "0"}, {"asset": "1", "resampling_method": "Nearest"}]}),
         {"E MS3 /"}, as_="multiscale", covers=("MS3",)),
    Case("layout-asset-missing",
         lambda f: multiscale(f, {"layout": [{"asset": "0"}, {"asset": "1"}, {"asset": "2"}]}),
         {"E MS9 /2"}, as_="multiscale", covers=("MS9",)),
    # ---- TileMatrixSet (inline) ---------------------------------------------------------
    Case("TMS1-id-not-string", lambda f: multiscale(f, INLINE(TMS(id=7))), {"E TMS1 /"},
         as_="multiscale", covers=("TMS1",)),
    Case("TMS1-id-missing", lambda f: multiscale(f, INLINE(TMS(id=NO))), {"E TMS1 /"},
         as_="multiscale", covers=("TMS1",)),
    Case("TMS2-crs-object",
         lambda f: multiscale(f, INLINE(TMS(
             crs={"uri": "http://www.opengis.net/def/crs/EPSG/0/3857"},
             title=1, supportedCRS=None))),
         {"E TMS2 /"}, as_="multiscale", covers=("TMS2",)),
    Case("TMS3-ordered-axes", lambda f: multiscale(f, INLINE(TMS(orderedAxes=["E"]))),
         {"E TMS3 /"}, as_="multiscale", covers=("TMS3",)),
    Case("TMS3-ordered-axes-types", lambda f: multiscale(f, INLINE(TMS(orderedAxes=["E", 1]))),
         {"E TMS3 /"}, as_="multiscale", covers=("TMS3",)),
    Case("TMS4-empty", lambda f: {"": G(f, {"multiscales": INLINE(TMS(tileMatrices=[]))})},
         {"E TMS4 /"}, as_="multiscale", covers=("TMS4",)),
    Case("TMS4-not-a-list",
         lambda f: {"": G(f, {"multiscales": INLINE(TMS(tileMatrices={"id": "0"}))})},
         {"E TMS4 /"}, as_="multiscale", covers=("TMS4",)),
    Case("TMS5-float-integer",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, 2.0, 1, tileWidth=256.0),
                                            TM("1", 1000.0, 1.0, 2)))),
         {"E TMS5 /"}, as_="multiscale", covers=("TMS5",)),
    Case("TMS5-string-integer",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, 2.0, "1"), TM("1", 1000.0, 1.0, 2)))),
         {"E TMS5 /"}, as_="multiscale", covers=("TMS5",)),
    Case("TMS5-bool-number",
         lambda f: multiscale(f, INLINE(TMS(TM("0", True, 2.0, 1), TM("1", 1000.0, 1.0, 2)))),
         {"E TMS5 /"}, as_="multiscale", covers=("TMS5",)),
    Case("TMS5-origin-and-missing",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, 2.0, 1, pointOfOrigin=[0.0]),
                                            TM("1", 1000.0, NO, 2)))),
         {"E TMS5 /"}, as_="multiscale", covers=("TMS5",)),
    Case("TMS5-id-not-string",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, 2.0, 1), TM(1, 1000.0, 1.0, 2))),
                              levels=("0",)),
         {"E TMS5 /"}, as_="multiscale", covers=("TMS5",)),
    Case("TMS6-non-positive",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, -2.0, 0), TM("1", 0, 1.0, 2)))),
         {"R TMS6 /"}, as_="multiscale", covers=("TMS6",)),
    Case("TMS6-not-recommended",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0, -2.0, 0), TM("1", 0, 1.0, 2)))),
         set(), as_="multiscale", kwargs={"recommended": False}),
    Case("TMS7-duplicate-ids",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0), TM("0", 1000.0))), levels=("0",)),
         {"R TMS7 /"}, as_="multiscale", covers=("TMS7",)),
    Case("TMS8-id-not-a-node-name",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0), TM("a/b", 1000.0))),
                              levels=("0",)),
         {"R TMS8 /", "E MS9 /a/b"}, as_="multiscale", covers=("TMS8",)),
    Case("TMS8-dunder-id",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 2000.0), TM("__1", 1000.0))),
                              levels=("0", "__1")),
         {"R TMS8 /", "E Z3 /__1"}, as_="multiscale", covers=("TMS8",)),
    Case("TMS9-duplicate-scales",
         lambda f: multiscale(f, INLINE(TMS(TM("0", 1000.0), TM("1", 1000.0)))),
         {"W TMS9 /"}, as_="multiscale", covers=("TMS9",)),
    # ---- TileMatrixLimits ---------------------------------------------------------------
    Case("TML1-not-an-object",
         lambda f: multiscale(f, WMQ(tile_matrix_limits=[LIM("0")])),
         {"E TML1 /"}, as_="multiscale", covers=("TML1",)),
    Case("TML1-float-and-string-integers",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0", 0.0), "1": LIM("1", "0")})),
         {"E TML1 /"}, as_="multiscale", covers=("TML1",)),
    Case("TML1-missing-members",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM(NO), "1": LIM("1", max_row=NO)})),
         {"E TML1 /"}, as_="multiscale", covers=("TML1",)),
    Case("TML1-limit-not-an-object",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0"), "1": [0, 0, 1, 1]})),
         {"E TML1 /"}, as_="multiscale", covers=("TML1",)),
    Case("TML2-key-differs",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("1"), "1": LIM("1")})),
         {"R TML2 /"}, as_="multiscale", covers=("TML2",)),
    Case("TML3-out-of-matrix",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("0", 0, 1),
                                                         "1": LIM("1", 1, 0)})),
         {"R TML3 /"}, as_="multiscale", covers=("TML3",)),
    Case("TML3-negative-inline",
         lambda f: multiscale(f, INLINE(tile_matrix_limits={"0": LIM("0", min_row=-1),
                                                            "1": LIM("1", 0, 1, 0, 1)})),
         {"R TML3 /"}, as_="multiscale", covers=("TML3",)),
    Case("TML-not-recommended",
         lambda f: multiscale(f, WMQ(tile_matrix_limits={"0": LIM("1", 0, 1), "9": LIM("9")}),
                              levels=("0", "9")),
         set(), as_="multiscale", kwargs={"recommended": False}),
    # ---- everything at once: findings are collected, never stopped at the first --------
    Case("many-findings-collected",
         lambda f: merge(multiscale(f, WMQ(resampling_method="fast",
                                           tile_matrix_limits={"0": LIM("0", 0, 5)})),
                         {"0/data": A(f, [4, 4], ["y", "z"]), "0/s": A(f, []),
                          "bad": {"zarr.json" if f == 3 else ".zarray": b"nope"}}),
         {"E MS3 /", "R TML3 /", "E DS2 /0/data", "E DA1 /0/s", "E DA2 /0/s", "E Z1 /bad",
          "W MS12 /1", "W MS12 /bad"}, as_="multiscale"),
]

PARAMS = [pytest.param(c, fmt, id=f"{c.id}-v{fmt}") for c in CASES for fmt in c.fmts]


def _store(kind: str, tmp_path: Any) -> Any:
    return MemoryStore() if kind == "memory" else LocalStore(tmp_path / "h.zarr")


def _summary(findings: list[Finding]) -> set[str]:
    return {f"{f.severity} {f.rule} {f.path}" for f in findings}


@pytest.mark.parametrize("store_kind", ["memory", "local"])
@pytest.mark.parametrize(("case", "fmt"), PARAMS)
def test_case(case: Case, fmt: int, store_kind: str, tmp_path: Any) -> None:
    store = _store(store_kind, tmp_path)
    write_tree(store, case.tree(fmt))
    findings = validate(store, case.as_, **case.kwargs)
    assert _summary(findings) == case.want(fmt), "\n".join(map(str, findings))
    for f in findings:
        assert f.rule in RULES
        assert f.severity in "ERW" and f.message
        if f.severity != "R" or f.rule not in ("DA3", "DA5"):
            assert f.severity == RULES[f.rule][0], f


@pytest.mark.parametrize("fmt", [2, 3])
def test_every_rule_is_covered(fmt: int) -> None:
    covered = {r for c in CASES if fmt in c.fmts for r in c.covers}
    reported = {s.split()[1] for c in CASES if fmt in c.fmts for s in c.want(fmt)}
    assert set(RULES) - covered == set()
    # every rule with findings of its own is also seen reported (DS1: as DA ids)
    assert set(RULES) - reported == {"DS1"} | ({"DA6"} if fmt == 2 else set())


def test_rules_match_the_rules_file() -> None:
    spec = "/work/shared/specs/geozarr-rules.md"
    if not os.path.exists(spec):
        pytest.skip("rules file not available")
    with open(spec, encoding="utf-8") as f:
        text = f.read()
    ids = set(re.findall(r"\b((?:Z|DA|DS|MS|TMS|TML)\d+)\b", text))
    assert ids == set(RULES)
    methods = re.search(r"one of \(case-sensitive\): `([^`]*)`", text)
    assert methods is not None and tuple(methods.group(1).split()) == RESAMPLING_METHODS


# -- hierarchies written by zarrfast ----------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarrfast_written_dataset(fmt: int, tmp_path: Any) -> None:
    root = zarrfast.open_group(tmp_path / "d.zarr", mode="w", zarr_format=fmt,
                               attributes={"title": "t"})
    root.create_array("temp", shape=(2, 3, 4), dtype="f4", dimension_names=["time", "y", "x"])
    for name, n in (("time", 2), ("y", 3), ("x", 4)):
        root.create_array(name, shape=(n,), dtype="f8", dimension_names=[name])
    root.create_array("spatial_ref", shape=(), dtype="i4",
                      attributes={"grid_mapping_name": "latitude_longitude"},
                      **({"dimension_names": []} if fmt == 3 else {}))
    path = str(tmp_path / "d.zarr")
    assert _summary(validate(path)) == (
        {"E DA1 /spatial_ref"} if fmt == 3 else {"E DA1 /spatial_ref", "E DA2 /spatial_ref"})
    assert validate(path, allow_grid_mapping_scalars=True) == []
    # the same through a Group, a sub-path and a dict store
    assert validate(root, allow_grid_mapping_scalars=True) == []
    assert _summary(validate(root, "dataarray", path="temp")) == set()
    assert _summary(validate(root, "auto", path="x")) == set()
    root.create_group("sub").create_array("a", shape=(2,), dtype="u1", dimension_names=["b"])
    assert _summary(validate(path, path="sub")) == {"E DS2 /sub/a"}
    assert _summary(validate(path, path="sub/a", as_="dataset")) == {"E DS0 /sub/a"}


@pytest.mark.interop
@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_python_written_dataset(fmt: int, tmp_path: Any) -> None:
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "zp.zarr")
    g = zarr.open_group(path, mode="w", zarr_format=fmt)

    def names(n: list[str]) -> dict[str, Any]:
        return ({"dimension_names": n} if fmt == 3
                else {"attributes": {"_ARRAY_DIMENSIONS": n}})

    g.create_array("data", shape=(2, 3), dtype="f4", **names(["y", "x"]))
    g.create_array("y", shape=(2,), dtype="f8", **names(["y"]))
    g.create_array("x", shape=(4,), dtype="f8", **names(["x"]))
    assert _summary(validate(path)) == {"E DS5 /data"}
    g.create_array("x", shape=(3,), dtype="f8", overwrite=True, **names(["x"]))
    assert validate(path) == []


def test_dict_store_and_spec_examples() -> None:
    """The text's examples, with their JSON corrected (no trailing commas, null, fill_value)."""
    docs: dict[str, bytes] = {}
    store = MemoryStore(docs)
    write_tree(store, {"": G(3), "data": A(3, [10, 11], ["lat", "lon"]),
                       "lat": A(3, [10], ["lat"]), "lon": A(3, [11], ["lon"])})
    assert validate(docs) == []
    v2 = MemoryStore()
    write_tree(v2, {"": A(2, [10, 11, 12], ["lat", "lon", "time"])})
    assert validate(v2, "dataarray") == []


def test_recommended_off_keeps_errors_and_warnings() -> None:
    store = MemoryStore()
    write_tree(store, merge(multiscale(3, INLINE(TMS(TM("0", 1000.0, 1.0, 0),
                                                     TM("1", 1000.0, 1.0, 2)))),
                            {"1/x": A(3, [2], ["y"])}))
    assert _summary(validate(store, "multiscale")) == {"R TMS6 /", "W TMS9 /", "W DS6 /1/x",
                                                       "W MS11 /"}
    assert _summary(validate(store, "multiscale", recommended=False)) == {
        "W TMS9 /", "W DS6 /1/x", "W MS11 /"}


def test_findings_name_the_fault() -> None:
    store = MemoryStore()
    write_tree(store, merge(multiscale(3, INLINE(TMS(TM("0", 2000.0, 2.0, 1, tileWidth=256.0),
                                                     TM("1", 1000.0, 1.0, 2))),),
                            {"1/x": A(3, [5], ["x"])}))
    found = {f.rule: f for f in validate(store, "multiscale")}
    assert "tileMatrices[0].tileWidth" in found["TMS5"].message
    assert "256.0" in found["TMS5"].message
    assert "'/1/x'" in found["DS5"].message and found["DS5"].path == "/1/data"
    assert str(found["DS5"]).startswith("E DS5 /1/data: ")
    assert found["DS5"].to_dict()["rule"] == "DS5"


def test_coordinate_findings_reported_once() -> None:
    store = MemoryStore()
    write_tree(store, {"": G(3), "a": A(3, [2], ["x"]), "b": A(3, [2, 2], ["x", "x2"]),
                       "x": G(3), "x2": A(3, [2], ["other"]), "other": A(3, [2], ["other"])})
    findings = validate(store)
    assert sorted(str(f).split(":")[0] for f in findings) == ["E DS3 /x", "W DS6 /x2"]
    ds3 = next(f for f in findings if f.rule == "DS3")
    assert "['a', 'b']" in ds3.message


def test_broken_child_metadata_is_reported_not_skipped() -> None:
    for fmt in (2, 3):
        store = MemoryStore()
        write_tree(store, rooted(fmt, dataset(fmt)))
        name = "zarr.json" if fmt == 3 else ".zarray"
        store.set(f"y/{name}", b'{"zarr_format": ')
        store.set(f"data/{name}", json.dumps({"zarr_format": fmt}).encode())
        findings = validate(store)
        assert _summary(findings) == {"E Z1 /y", "E Z1 /data"}
        # zarrfast itself refuses to open these members
        with pytest.raises(ZarrfastError):
            zarrfast.open_group(store, mode="r")["y"]


def test_strict_json_typing_of_dimension_names_and_shapes() -> None:
    store = MemoryStore()
    write_tree(store, {"": G(3), "a": A(3, ["2"], ["a"]), "b": A(3, [True], ["b"]),
                       "c": A(3, [2], [True])})
    assert _summary(validate(store)) == {"E Z1 /a", "E Z1 /b", "E DA3 /c"}


def test_check_raises_one_error_listing_everything() -> None:
    store = MemoryStore()
    write_tree(store, merge(multiscale(3, WMQ(resampling_method="fast",
                                               tile_matrix_limits={"0": LIM("0", 0, 3),
                                                                   "1": LIM("1")})),
                            {"1/x": A(3, [2], ["y"])}))
    with pytest.raises(GeoZarrError) as info:
        check(store, "multiscale")
    err = info.value
    assert isinstance(err, ZarrfastError) and isinstance(err, ValueError)
    assert {f.rule for f in err.findings} == {"MS3", "TML3"}
    assert "MS3" in str(err) and "TML3" in str(err) and "DS6" not in str(err)
    with pytest.raises(GeoZarrError) as info:
        check(store, "multiscale", recommended=False)
    assert {f.rule for f in info.value.findings} == {"MS3"}
    ok = MemoryStore()
    write_tree(ok, merge(multiscale(3, WMQ()), {"1/x": A(3, [2], ["y"])}))
    warnings = check(ok, "multiscale")
    assert {f.rule for f in warnings} == {"DS6", "MS11"}


def test_bad_arguments() -> None:
    with pytest.raises(GeoZarrError, match="as_ must be one of"):
        validate(MemoryStore(), "pyramid")
    with pytest.raises(ZarrfastError):
        validate(MemoryStore(), path="__bad")
