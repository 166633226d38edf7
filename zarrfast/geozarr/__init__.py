"""GeoZarr: validate (and write) hierarchies following the GeoZarr mini spec.

``validate(store, "dataarray" | "dataset" | "multiscale")`` returns every
[zarrfast.geozarr.Finding][] (rule id, severity, path, message) of ``geozarr-rules.md``;
[zarrfast.geozarr.check][] raises [zarrfast.geozarr.GeoZarrError][] listing the errors.  The
well-known OGC TileMatrixSets ship as package data
([zarrfast.geozarr.get_tile_matrix_set][]).
"""

from zarrfast.geozarr.findings import Finding, GeoZarrError
from zarrfast.geozarr.tms import well_known_tile_matrix_sets
from zarrfast.geozarr.validate import (
    RULES,
    check,
    get_tile_matrix_set,
    validate,
    validate_tile_matrix_set,
)

__all__ = [
    "RULES",
    "Finding",
    "GeoZarrError",
    "check",
    "get_tile_matrix_set",
    "validate",
    "validate_tile_matrix_set",
    "well_known_tile_matrix_sets",
]

# The writing helpers live in their own modules; the package works without them.
_OPTIONAL = {f"{__name__}.write", f"{__name__}.multiscales"}

try:
    from zarrfast.geozarr.write import write_dataset  # noqa: F401
except ModuleNotFoundError as e:  # pragma: no cover - not there yet
    if e.name not in _OPTIONAL:
        raise
else:
    __all__ += ["write_dataset"]

try:
    from zarrfast.geozarr.multiscales import build_multiscales  # noqa: F401
except ModuleNotFoundError as e:  # pragma: no cover - not there yet
    if e.name not in _OPTIONAL:
        raise
else:
    __all__ += ["build_multiscales"]
