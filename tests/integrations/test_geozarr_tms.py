"""GeoZarr TileMatrixSets: the well-known sets, inline sets validated and returned,
and the shipped TMS data (declared as package data, up to date).
"""

from __future__ import annotations

import pytest

from zarrfast.geozarr import (
    GeoZarrError,
    get_tile_matrix_set,
    validate_tile_matrix_set,
    well_known_tile_matrix_sets,
)

import _helpers
from _helpers.geozarr_docs import TM, TMS

# -- TileMatrixSets ---------------------------------------------------------------------

TABLE = {
    "WebMercatorQuad": (0, 24), "WorldCRS84Quad": (0, 23), "WorldMercatorWGS84Quad": (0, 24),
    **{f"UTM{z:02d}WGS84Quad": (1, 24) for z in range(1, 61)},
    "UPSArcticWGS84Quad": (0, 24), "UPSAntarcticWGS84Quad": (0, 24),
    "EuropeanETRS89_LAEAQuad": (0, 15), "CanadianNAD83_LCC": (0, 25),
    "GNOSISGlobalGrid": (0, 28), "CDB1GlobalGrid": (-10, 21), "WGS1984Quad": (0, 23),
}


def test_well_known_sets_match_the_table() -> None:
    assert sorted(well_known_tile_matrix_sets()) == sorted(TABLE)
    for name, (first, last) in TABLE.items():
        tms = get_tile_matrix_set(name)
        assert tms["id"] == name
        assert [tm["id"] for tm in tms["tileMatrices"]] == [str(i) for i in range(first,
                                                                                  last + 1)]
        assert validate_tile_matrix_set(tms) == [], name
        assert isinstance(tms["crs"], str)


def test_well_known_definitions() -> None:
    wmq = get_tile_matrix_set("WebMercatorQuad")
    z0, z1 = wmq["tileMatrices"][:2]
    assert (z0["matrixWidth"], z0["matrixHeight"], z1["matrixWidth"]) == (1, 1, 2)
    assert z0["cellSize"] == pytest.approx(156543.03392804097)
    assert z0["pointOfOrigin"] == pytest.approx([-20037508.3427892, 20037508.3427892])
    assert wmq["crs"].endswith("EPSG/0/3857")
    utm = get_tile_matrix_set("UTM05WGS84Quad")
    assert utm["crs"].endswith("EPSG/0/32605")
    assert utm["tileMatrices"] == get_tile_matrix_set("UTM31WGS84Quad")["tileMatrices"]
    # a fresh copy each time
    wmq["tileMatrices"].clear()
    assert len(get_tile_matrix_set("WebMercatorQuad")["tileMatrices"]) == 25


@pytest.mark.parametrize("name", ["GoogleMapsCompatible", "webmercatorquad", "UTM61WGS84Quad",
                                  "http://www.opengis.net/def/tilematrixset/OGC/1.0/"
                                  "WebMercatorQuad", ""])
def test_unknown_set_names_it(name: str) -> None:
    with pytest.raises(GeoZarrError) as info:
        get_tile_matrix_set(name)
    assert repr(name) in str(info.value)


def test_inline_set_validated_and_returned() -> None:
    tms = TMS()
    assert get_tile_matrix_set(tms) == tms
    with pytest.raises(GeoZarrError, match="TMS5") as info:
        get_tile_matrix_set(TMS(TM("0", size=1.0)))
    assert {f.rule for f in info.value.findings} == {"TMS5"}
    with pytest.raises(GeoZarrError, match="TMS6"):
        get_tile_matrix_set(TMS(TM("0", size=0)))
    assert get_tile_matrix_set(TMS(TM("0", 1.0), TM("1", 1.0)))  # TMS9 is only a warning
    with pytest.raises(GeoZarrError):
        get_tile_matrix_set(42)  # type: ignore[arg-type]


def test_package_data_is_declared() -> None:
    with open(_helpers.ROOT / "pyproject.toml", encoding="utf-8") as f:
        assert '"zarrfast.geozarr" = ["tms/*.json"]' in f.read()
    with open(_helpers.ROOT / "MANIFEST.in", encoding="utf-8") as f:
        assert "zarrfast/geozarr/tms *.json" in f.read()


def test_shipped_data_is_up_to_date() -> None:
    pytest.importorskip("morecantile")
    import importlib.util

    script = _helpers.ROOT / "tools" / "make_tms_data.py"
    spec = importlib.util.spec_from_file_location("make_tms_data", script)
    make_tms_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tms_data)
    assert make_tms_data.main(["--check"]) == 0
