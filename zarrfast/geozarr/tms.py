"""Well-known OGC TileMatrixSets, shipped with zarrfast.

The sets of ``geozarr-rules.md``'s table (OGC 17-083r4 Annex D/E and the OGC
registry: ``WebMercatorQuad``, ``WorldCRS84Quad``, ``WorldMercatorWGS84Quad``,
``UTM01WGS84Quad`` ... ``UTM60WGS84Quad``, ``UPSArcticWGS84Quad``,
``UPSAntarcticWGS84Quad``, ``EuropeanETRS89_LAEAQuad``, ``CanadianNAD83_LCC``,
``GNOSISGlobalGrid``, ``CDB1GlobalGrid``, ``WGS1984Quad``) are package data in
``zarrfast/geozarr/tms/<id>.json``: the OGC TMS 2.0 JSON encoding, with every
tile matrix's ``cellSize``, ``scaleDenominator``, ``pointOfOrigin``, tile and
matrix sizes.  They are generated at development time by
``tools/make_tms_data.py`` from the OGC definitions; nothing is
fetched at run time.

Ids are case-sensitive; aliases (``GoogleMapsCompatible``) and URIs are not ids.

Inline sets are checked by :func:`zarrfast.geozarr.get_tile_matrix_set` (in
:mod:`zarrfast.geozarr.validate`, which builds on this module).  Example::

    >>> from zarrfast.geozarr.tms import well_known_tile_matrix_set
    >>> tms = well_known_tile_matrix_set("WebMercatorQuad")
    >>> tms["tileMatrices"][0]["matrixWidth"], tms["tileMatrices"][0]["cellSize"]
    (1, 156543.03392804097)
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
from importlib import resources
from typing import Any

from zarrfast.geozarr.findings import GeoZarrError

__all__ = ["is_well_known", "tile_matrix_ids", "well_known_tile_matrix_set",
           "well_known_tile_matrix_sets"]

_DATA_DIR = "tms"


def _data_root() -> Any:
    return resources.files(__package__) / _DATA_DIR


@functools.cache
def _names() -> tuple[str, ...]:
    return tuple(sorted(p.name[:-len(".json")] for p in _data_root().iterdir()
                        if p.name.endswith(".json")))


@functools.cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((_data_root() / f"{name}.json").read_text(encoding="utf-8"))


def well_known_tile_matrix_sets() -> list[str]:
    """Give the ids of the well-known TileMatrixSets zarrfast ships.

    Returns
    -------
    list of str
        The ids, sorted (case-sensitive), each accepted by
        [zarrfast.geozarr.get_tile_matrix_set][] and as a multiscale's
        ``tile_matrix_set``.

    Examples
    --------
    >>> from zarrfast.geozarr import well_known_tile_matrix_sets
    >>> ids = well_known_tile_matrix_sets()
    >>> "WebMercatorQuad" in ids, "WorldCRS84Quad" in ids
    (True, True)
    """
    return list(_names())


def is_well_known(name: Any) -> bool:
    """Whether ``name`` is (exactly, case-sensitively) a shipped TileMatrixSet id."""
    return isinstance(name, str) and name in _names()


def tile_matrix_ids(name: str) -> list[str]:
    """The TileMatrix ids of the well-known set ``name``, in the set's order."""
    return [tm["id"] for tm in _well_known(name)["tileMatrices"]]


def well_known_tile_matrix_set(name: str) -> dict[str, Any]:
    """A fresh copy of the shipped TileMatrixSet ``name`` (callers may modify it);
    :class:`GeoZarrError` naming the id (and the likely one meant) when it is unknown."""
    return copy.deepcopy(_well_known(name))


def _well_known(name: str) -> dict[str, Any]:
    if not is_well_known(name):
        hint = difflib.get_close_matches(name, _names(), n=1, cutoff=0.6)
        lowered = {n.lower(): n for n in _names()}
        if name.lower() in lowered:
            hint = [lowered[name.lower()]]
        if name == "GoogleMapsCompatible":
            hint = ["WebMercatorQuad"]
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        raise GeoZarrError(
            f"unknown TileMatrixSet {name!r}: not one of the {len(_names())} well-known "
            f"ids (ids are case-sensitive; URIs are not accepted){extra}"
        )
    return _load(name)
