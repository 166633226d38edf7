"""GeoZarr validation: DataArrays, Datasets and Multiscale Datasets.

Implements ``geozarr-mini-spec.md`` through the numbered rules of
``geozarr-rules.md`` (the rule ids below are that file's).  Every finding is a
:class:`Finding` ``(rule, severity, path, message)``; all findings are collected,
validation never stops at the first.  Severities: ``"E"`` an error the text
requires, ``"R"`` a recommended error (OGC TMS 2.0 / GeoZarr drafts; left out with
``recommended=False``), ``"W"`` a warning.

The validator reads the raw metadata documents itself (``zarr.json``; ``.zarray``,
``.zgroup``, ``.zattrs``) rather than zarrfast's parsed metadata, for two reasons:

* members are enumerated from the store's keys (``list_dir`` plus a look for the
  metadata documents), so that a child whose metadata is broken is reported under
  ``Z1`` instead of being skipped;
* JSON types are checked strictly: ``256.0`` and ``"256"`` are not integers, ``true``
  is not a number.

Reporting conventions (where the rules leave a choice):

* ``path`` is the node's absolute name, ``"/"`` for the store root, ``"/s0/data"``
  below it; findings about a ``multiscales`` document are reported at the multiscale
  group and locate the member in the message (``multiscales.tile_matrix_set.
  tileMatrices[3].cellSize``).
* DS1 and the first half of MS10 have no findings of their own: the DataArray ids
  (DA1-DA6) are reported at the child array's path, the Dataset ids at the level's.
* DS2 and DS5 are reported at the data variable; DS3, DS4 and DS6 describe the
  coordinate variable and are reported once at its path, naming the variables that
  use it.  DS2-DS6 are checked for an array whose names passed DA2-DA5 (as errors:
  Zarr v2 duplicates, which are only recommended errors, are still checked, and an
  empty name, DA3's recommended error, is skipped).
* A group validated as a DataArray is reported under Z1 (it has no array metadata).
* MS8 is reported when a string ``tile_matrix_set`` yields no level (no limits keys,
  no child group named like one of its TileMatrix ids).
* MS11 is reported once per member name at the multiscale group; MS12 once per child
  outside the levels, at the child.
* The ``layout`` form of the zarr-conventions ``multiscales``
  (``{"layout": [{"asset", "derived_from", "transform", "resampling_method"}]}``)
  is validated when ``layout`` is present: its structure under MS2, resampling
  methods under MS3, its assets are levels (MS8-MS12, flat: each asset a child
  group).  The TMS form is validated when any of its keys is present, or when the
  ``layout`` key is absent.  Both may sit side by side; the levels are then the
  union.

Example::

    >>> from zarrfast.geozarr import validate
    >>> for f in validate("pyramid.zarr", "multiscale"):   # doctest: +SKIP
    ...     print(f)
    E DS5 /2/data: axis 1 ('x') has length 64 but coordinate variable '/2/x' has length 63
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zarrfast.geozarr import tms as _tms
from zarrfast.geozarr.findings import Finding, GeoZarrError
from zarrfast.metadata.paths import normalize_path
from zarrfast.storage import Store
from zarrfast.storage.resolve import make_store

__all__ = [
    "RESAMPLING_METHODS",
    "RULES",
    "Finding",
    "GeoZarrError",
    "check",
    "get_tile_matrix_set",
    "validate",
    "validate_tile_matrix_set",
]

#: the ResamplingMethod literals (case-sensitive), rule MS3
RESAMPLING_METHODS = ("nearest", "average", "bilinear", "cubic", "cubic_spline", "lanczos",
                      "mode", "max", "min", "med", "sum", "q1", "q3", "rms", "gauss")

#: every rule id of ``geozarr-rules.md``: its severity (as reported by default) and gist
RULES: dict[str, tuple[str, str]] = {
    "Z1": ("E", "node has a metadata document with its mandatory keys"),
    "Z2": ("E", "chunk shape rank equals array rank"),
    "Z3": ("E", "node name is valid"),
    "Z4": ("E", "a child's zarr_format equals its parent's"),
    "DA1": ("E", "an array has at least one dimension"),
    "DA2": ("E", "dimension names are present"),
    "DA3": ("E", "dimension names are a list of strings (R: no empty strings)"),
    "DA4": ("E", "one dimension name per axis"),
    "DA5": ("E", "dimension names are unique (R for Zarr v2)"),
    "DA6": ("W", "a v3 array's _ARRAY_DIMENSIONS attribute agrees with dimension_names"),
    "DS0": ("E", "a Dataset is a group"),
    "DS1": ("E", "every child array is a DataArray (reported as DA ids)"),
    "DS2": ("E", "each dimension name names a member"),
    "DS3": ("E", "a coordinate variable is an array"),
    "DS4": ("E", "a coordinate variable is one-dimensional"),
    "DS5": ("E", "a coordinate variable's length matches the axis"),
    "DS6": ("W", "a coordinate variable's dimension names are [its name]"),
    "MS1": ("E", "the multiscales attribute is present"),
    "MS2": ("E", "multiscales is an object"),
    "MS3": ("E", "resampling_method is a known method"),
    "MS4": ("E", "tile_matrix_set is a string or an object"),
    "MS5": ("E", "a tile_matrix_set string is a well-known TileMatrixSet id"),
    "MS6": ("E", "at most one of tile_matrix_limit / tile_matrix_limits"),
    "MS7": ("R", "tile matrix limits keys are TileMatrix ids of the set"),
    "MS8": ("E", "the multiscale declares at least one level"),
    "MS9": ("E", "every level is a child group"),
    "MS10": ("E", "every level is a Dataset; all levels have the same member names"),
    "MS11": ("W", "a member has the same kind and dimension names in every level"),
    "MS12": ("W", "a child outside the levels is outside the model"),
    "TMS1": ("E", "TileMatrixSet id is a string"),
    "TMS2": ("E", "title, crs, supportedCRS are strings"),
    "TMS3": ("E", "orderedAxes is [string, string]"),
    "TMS4": ("E", "tileMatrices is a non-empty list"),
    "TMS5": ("E", "each TileMatrix has its typed members"),
    "TMS6": ("R", "tile and matrix sizes >= 1, scaleDenominator and cellSize > 0"),
    "TMS7": ("R", "TileMatrix ids are unique"),
    "TMS8": ("R", "TileMatrix ids are valid node names"),
    "TMS9": ("W", "scaleDenominators are unique"),
    "TML1": ("E", "tile matrix limits map ids to typed TileMatrixLimit objects"),
    "TML2": ("R", "a limit's key equals its tileMatrix"),
    "TML3": ("R", "limits lie inside the TileMatrix"),
}

_KINDS = ("dataarray", "dataset", "multiscale", "auto")
_V3_ARRAY_KEYS = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                  "chunk_key_encoding", "fill_value", "codecs")
_V2_ARRAY_KEYS = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value",
                  "filters", "order")
_METADATA_NAMES = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})
_NODE_DOCS = ("zarr.json", ".zarray", ".zgroup")
_TM_SIZES = ("tileWidth", "tileHeight", "matrixWidth", "matrixHeight")
_LIMIT_INTS = ("minTileCol", "minTileRow", "maxTileCol", "maxTileRow")
_TMS_FORM_KEYS = ("tile_matrix_set", "tile_matrix_limit", "tile_matrix_limits")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


# -- JSON typing ------------------------------------------------------------------------
def _is_int(v: Any) -> bool:
    return type(v) is int  # not bool, not 256.0, not "256"


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)  # not bool


def _describe(v: Any) -> str:
    if v is _MISSING:
        return "missing"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list",
            dict: "object", type(None): "null"}.get(type(v), type(v).__name__)
    text = json.dumps(v, default=repr)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({kind})"


def _valid_node_name(name: Any) -> bool:
    """Z3's test: non-empty, no ``/``, not only periods, not starting with ``__``."""
    return (isinstance(name, str) and name != "" and "/" not in name
            and set(name) != {"."} and not name.startswith("__"))


def _display(path: str) -> str:
    return "/" + path


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


# -- collecting -------------------------------------------------------------------------
class _Report:
    def __init__(self, recommended: bool) -> None:
        self.recommended = recommended
        self.findings: list[Finding] = []

    def add(self, rule: str, severity: str, path: str, message: str) -> None:
        if severity == "R" and not self.recommended:
            return
        self.findings.append(Finding(rule, severity, _display(path), message))


@dataclass
class _Node:
    """What the validator knows of one node, from its raw documents."""

    path: str
    fmt: int | None = None          # 2, 3, or None when no format could be told
    kind: str | None = None         # "array", "group", or None when unreadable
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] | None = None  # None when missing or malformed
    dims: Any = _MISSING            # raw dimension names (v3 dimension_names,
    #                                 v2 _ARRAY_DIMENSIONS); _MISSING when absent

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _load_json(raw: bytes, key: str, path: str, rep: _Report) -> Any:
    try:
        return json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        rep.add("Z1", "E", path, f"{key!r} is not valid JSON: {e}")
        return _MISSING


def _int_list(v: Any, minimum: int) -> tuple[int, ...] | None:
    if isinstance(v, list) and all(_is_int(x) and x >= minimum for x in v):
        return tuple(v)
    return None


def _load_node(store: Store, path: str, rep: _Report, prefer: int | None = None) -> _Node | None:
    """Read the node at ``path`` (reporting Z1/Z2), or ``None`` when no metadata document
    is there.  With both formats present, ``prefer`` (the parent's format) wins, else v3."""
    raw = {name: store.get(_join(path, name)) for name in (*_NODE_DOCS, ".zattrs")}
    has_v3 = raw["zarr.json"] is not None
    has_v2 = raw[".zarray"] is not None or raw[".zgroup"] is not None
    if not has_v3 and not has_v2:
        if raw[".zattrs"] is not None:
            rep.add("Z1", "E", path, "'.zattrs' without '.zarray' or '.zgroup': the node has "
                                     "no array or group metadata")
            return _Node(path, fmt=2)
        return None
    if has_v3 and (prefer != 2 or not has_v2):
        return _load_v3(raw["zarr.json"], path, rep)
    return _load_v2(raw, path, rep)


def _load_v3(raw: bytes, path: str, rep: _Report) -> _Node:
    key = _join(path, "zarr.json")
    node = _Node(path, fmt=3)
    doc = _load_json(raw, key, path, rep)
    if doc is _MISSING:
        return node
    if not isinstance(doc, dict):
        rep.add("Z1", "E", path, f"{key!r} is not a JSON object but {_describe(doc)}")
        return node
    zf = doc.get("zarr_format", _MISSING)
    if not (_is_int(zf) and zf == 3):
        rep.add("Z1", "E", path, f"{key!r}: zarr_format must be the integer 3, got "
                                 f"{_describe(zf)}")
    kind = doc.get("node_type", _MISSING)
    if kind not in ("array", "group") or not isinstance(kind, str):
        rep.add("Z1", "E", path, f"{key!r}: node_type must be 'array' or 'group', got "
                                 f"{_describe(kind)}")
        return node
    node.kind = kind
    attrs = doc.get("attributes", {})
    if isinstance(attrs, dict):
        node.attrs = attrs
    else:
        rep.add("Z1", "E", path, f"{key!r}: attributes must be an object, got "
                                 f"{_describe(attrs)}")
    if kind == "group":
        return node
    missing = [k for k in _V3_ARRAY_KEYS if k not in doc]
    if missing:
        rep.add("Z1", "E", path, f"{key!r}: array metadata lacks {', '.join(missing)}")
    problems = []
    if "shape" in doc:
        node.shape = _int_list(doc["shape"], 0)
        if node.shape is None:
            problems.append(f"shape must be a list of non-negative integers, got "
                            f"{_describe(doc['shape'])}")
    dt = doc.get("data_type", _MISSING)
    if dt is not _MISSING and not isinstance(dt, (str, dict)):
        problems.append(f"data_type must be a string or an object, got {_describe(dt)}")
    cke = doc.get("chunk_key_encoding", _MISSING)
    if cke is not _MISSING and not (isinstance(cke, dict) and isinstance(cke.get("name"), str)):
        problems.append(f"chunk_key_encoding must be an object with a name, got "
                        f"{_describe(cke)}")
    codecs = doc.get("codecs", _MISSING)
    if codecs is not _MISSING and not (isinstance(codecs, list) and codecs):
        problems.append(f"codecs must be a non-empty list, got {_describe(codecs)}")
    grid = doc.get("chunk_grid", _MISSING)
    chunk_shape = None
    if grid is not _MISSING:
        if not (isinstance(grid, dict) and isinstance(grid.get("name"), str)):
            problems.append(f"chunk_grid must be an object with a name, got {_describe(grid)}")
        elif grid["name"] == "regular":
            conf = grid.get("configuration")
            raw_cs = conf.get("chunk_shape", _MISSING) if isinstance(conf, dict) else _MISSING
            chunk_shape = _int_list(raw_cs, 1)
            if chunk_shape is None:
                problems.append(f"chunk_grid.configuration.chunk_shape must be a list of "
                                f"positive integers, got {_describe(raw_cs)}")
    for p in problems:
        rep.add("Z1", "E", path, f"{key!r}: {p}")
    if chunk_shape is not None and node.shape is not None and len(chunk_shape) != len(node.shape):
        rep.add("Z2", "E", path, f"chunk shape {list(chunk_shape)} has rank {len(chunk_shape)} "
                                 f"but the array shape {list(node.shape)} has rank "
                                 f"{len(node.shape)}")
    node.dims = doc.get("dimension_names", _MISSING)
    return node


def _load_v2(raw: dict[str, bytes | None], path: str, rep: _Report) -> _Node:
    node = _Node(path, fmt=2)
    if raw[".zarray"] is not None and raw[".zgroup"] is not None:
        rep.add("Z1", "E", path, "both '.zarray' and '.zgroup' exist: the node is neither "
                                 "an array nor a group")
        return node
    if raw[".zattrs"] is not None:
        key = _join(path, ".zattrs")
        attrs = _load_json(raw[".zattrs"], key, path, rep)
        if isinstance(attrs, dict):
            node.attrs = attrs
        elif attrs is not _MISSING:
            rep.add("Z1", "E", path, f"{key!r} is not a JSON object but {_describe(attrs)}")
    name = ".zarray" if raw[".zarray"] is not None else ".zgroup"
    key = _join(path, name)
    doc = _load_json(raw[name], key, path, rep)
    if doc is _MISSING:
        return node
    if not isinstance(doc, dict):
        rep.add("Z1", "E", path, f"{key!r} is not a JSON object but {_describe(doc)}")
        return node
    zf = doc.get("zarr_format", _MISSING)
    if not (_is_int(zf) and zf == 2):
        rep.add("Z1", "E", path, f"{key!r}: zarr_format must be the integer 2, got "
                                 f"{_describe(zf)}")
    if name == ".zgroup":
        node.kind = "group"
        return node
    node.kind = "array"
    missing = [k for k in _V2_ARRAY_KEYS if k not in doc]
    if missing:
        rep.add("Z1", "E", path, f"{key!r}: array metadata lacks {', '.join(missing)}")
    chunks = None
    if "shape" in doc:
        node.shape = _int_list(doc["shape"], 0)
        if node.shape is None:
            rep.add("Z1", "E", path, f"{key!r}: shape must be a list of non-negative integers, "
                                     f"got {_describe(doc['shape'])}")
    if "chunks" in doc:
        chunks = _int_list(doc["chunks"], 1)
        if chunks is None:
            rep.add("Z1", "E", path, f"{key!r}: chunks must be a list of positive integers, "
                                     f"got {_describe(doc['chunks'])}")
    if chunks is not None and node.shape is not None and len(chunks) != len(node.shape):
        rep.add("Z2", "E", path, f"chunks {list(chunks)} have rank {len(chunks)} but the array "
                                 f"shape {list(node.shape)} has rank {len(node.shape)}")
    node.dims = node.attrs.get("_ARRAY_DIMENSIONS", _MISSING)
    return node


def _holds_nodes(store: Store, path: str) -> bool:
    """Whether metadata documents exist somewhere below ``path`` (an implicit group)."""
    for key in store.list_prefix(path + "/" if path else ""):
        if key.rsplit("/", 1)[-1] in _NODE_DOCS:
            return True
    return False


def _children(store: Store, parent: _Node, rep: _Report) -> dict[str, _Node]:
    """The child nodes of ``parent``, enumerated from the store's keys (Z1, Z3, Z4)."""
    prefix = parent.path + "/" if parent.path else ""
    out: dict[str, _Node] = {}
    for name in store.list_dir(prefix):
        if name in _METADATA_NAMES:
            continue
        path = _join(parent.path, name)
        node = _load_node(store, path, rep, prefer=parent.fmt)
        if node is None:
            if not _holds_nodes(store, path):
                continue  # a stray key or directory, not a node
            rep.add("Z1", "E", path, "no zarr.json, .zarray or .zgroup, though nodes exist "
                                     "below it (implicit groups are not allowed)")
            node = _Node(path)
        if not _valid_node_name(name):
            rep.add("Z3", "E", path, f"invalid node name {name!r}: names are non-empty, have "
                                     f"no '/', are not only periods and do not start with '__'")
        if node.fmt is not None and parent.fmt is not None and node.fmt != parent.fmt:
            rep.add("Z4", "E", path, f"Zarr v{node.fmt} node below a Zarr v{parent.fmt} group "
                                     f"{_display(parent.path)!r}: one hierarchy holds one format")
        out[name] = node
    return out


# -- DataArray --------------------------------------------------------------------------
def _check_dataarray(node: _Node, rep: _Report, allow_gm: bool) -> bool:
    """DA1-DA6 for an array; True when its names passed DA2-DA5 (as errors)."""
    path, fmt, shape = node.path, node.fmt, node.shape
    if shape is None:
        return False  # Z1 already says why
    if not shape and allow_gm and "grid_mapping_name" in node.attrs:
        return False  # a CF grid-mapping scalar, exempted on request
    what = "dimension_names" if fmt == 3 else "attribute _ARRAY_DIMENSIONS"
    if not shape:
        hint = ("; CF grid-mapping scalars can be exempted with "
                "allow_grid_mapping_scalars=True" if "grid_mapping_name" in node.attrs else "")
        rep.add("DA1", "E", path, f"scalar array (shape []): a DataArray has at least one "
                                  f"dimension{hint}")
    dims = node.dims
    if fmt == 3 and "_ARRAY_DIMENSIONS" in node.attrs:
        legacy = node.attrs["_ARRAY_DIMENSIONS"]
        if legacy != (None if dims is _MISSING else dims):
            rep.add("DA6", "W", path, f"attribute _ARRAY_DIMENSIONS {_describe(legacy)} differs "
                                      f"from dimension_names {_describe(dims)}")
    if dims is _MISSING or dims is None:
        rep.add("DA2", "E", path, f"no dimension names: {what} is "
                                  f"{'missing' if dims is _MISSING else 'null'}")
        return False
    if not isinstance(dims, list):
        rep.add("DA3", "E", path, f"{what} must be a list of strings, got {_describe(dims)}")
        return False
    ok = True
    bad = [i for i, d in enumerate(dims) if not isinstance(d, str)]
    if bad:
        rep.add("DA3", "E", path, f"{what} {_describe(dims)}: entries {bad} are not strings")
        ok = False
    empty = [i for i, d in enumerate(dims) if d == ""]
    if empty:
        rep.add("DA3", "R", path, f"{what} {_describe(dims)}: entries {empty} are empty strings")
    if len(dims) != len(shape):
        rep.add("DA4", "E", path, f"{what} has {len(dims)} entries but the array has "
                                  f"{len(shape)} axes (shape {list(shape)})")
        ok = False
    strings = [d for d in dims if isinstance(d, str)]
    dups = sorted({d for d in strings if strings.count(d) > 1})
    if dups:
        rep.add("DA5", "E" if fmt == 3 else "R", path,
                f"{what} {_describe(dims)} repeats {dups}: every axis needs its own name")
        ok = ok and fmt != 3
    return ok


# -- Dataset ----------------------------------------------------------------------------
def _check_dataset(store: Store, node: _Node, rep: _Report, allow_gm: bool,
                   children: dict[str, _Node] | None = None) -> dict[str, _Node]:
    """DS1-DS6 for the group ``node``; returns its children."""
    if children is None:
        children = _children(store, node, rep)
    variables = {name: c for name, c in children.items()
                 if c.kind == "array" and _check_dataarray(c, rep, allow_gm)}
    # coordinate name -> rule -> data variables that raised it (reported once per coordinate)
    about_coord: dict[str, dict[str, list[str]]] = {}
    for dname, d in variables.items():
        assert d.shape is not None
        for axis, cname in enumerate(d.dims):
            if cname == "":
                continue  # DA3 (recommended) already reported
            coord = children.get(cname)
            if coord is None:
                rep.add("DS2", "E", d.path,
                        f"axis {axis} is named {cname!r} but the dataset has no member "
                        f"{cname!r} (a coordinate variable of length {d.shape[axis]})")
                continue
            if coord.kind is None or (coord.kind == "array" and coord.shape is None):
                continue  # broken metadata, reported under Z1
            rules = about_coord.setdefault(cname, {})
            if coord.kind != "array":
                rules.setdefault("DS3", []).append(dname)
                continue
            if len(coord.shape) != 1:
                rules.setdefault("DS4", []).append(dname)
                continue
            if coord.shape[0] != d.shape[axis]:
                rep.add("DS5", "E", d.path,
                        f"axis {axis} ({cname!r}) has length {d.shape[axis]} but coordinate "
                        f"variable {_display(coord.path)!r} has length {coord.shape[0]}")
            cdims = coord.dims
            if (isinstance(cdims, list) and all(isinstance(x, str) for x in cdims)
                    and cdims != [cname]):
                rules.setdefault("DS6", []).append(dname)
    for cname, rules in about_coord.items():
        coord = children[cname]
        for rule, users in rules.items():
            used = f"used as a dimension name by {sorted(set(users))}"
            if rule == "DS3":
                rep.add("DS3", "E", coord.path, f"{used} but is a group, not an array")
            elif rule == "DS4":
                rep.add("DS4", "E", coord.path,
                        f"{used} but has shape {list(coord.shape or ())}: a coordinate "
                        f"variable is one-dimensional")
            else:
                rep.add("DS6", "W", coord.path,
                        f"{used}; its own dimension names are {coord.dims}, not {[cname]}")
    return children


# -- TileMatrixSet / TileMatrixLimit ----------------------------------------------------
def _check_tms(tms: dict[str, Any], rep: _Report, path: str, where: str) -> None:
    """TMS1-TMS9 for a TileMatrixSet object."""
    tid = tms.get("id", _MISSING)
    if not isinstance(tid, str):
        rep.add("TMS1", "E", path, f"{where}.id must be a string, got {_describe(tid)}")
    for key in ("title", "crs", "supportedCRS"):
        if key in tms and not isinstance(tms[key], str):
            rep.add("TMS2", "E", path, f"{where}.{key} must be a string, got "
                                       f"{_describe(tms[key])}")
    if "orderedAxes" in tms:
        axes = tms["orderedAxes"]
        if not (isinstance(axes, list) and len(axes) == 2
                and all(isinstance(a, str) for a in axes)):
            rep.add("TMS3", "E", path, f"{where}.orderedAxes must be [string, string], got "
                                       f"{_describe(axes)}")
    matrices = tms.get("tileMatrices", _MISSING)
    if not (isinstance(matrices, list) and matrices):
        rep.add("TMS4", "E", path, f"{where}.tileMatrices must be a non-empty list, got "
                                   f"{_describe(matrices)}")
        return
    ids: list[str] = []
    scales: list[float] = []
    for j, tm in enumerate(matrices):
        w = f"{where}.tileMatrices[{j}]"
        if not isinstance(tm, dict):
            rep.add("TMS5", "E", path, f"{w} must be a TileMatrix object, got {_describe(tm)}")
            continue
        tm_id = tm.get("id", _MISSING)
        if isinstance(tm_id, str):
            ids.append(tm_id)
        else:
            rep.add("TMS5", "E", path, f"{w}.id must be a string, got {_describe(tm_id)}")
        for key in ("scaleDenominator", "cellSize"):
            v = tm.get(key, _MISSING)
            if not _is_number(v):
                rep.add("TMS5", "E", path, f"{w}.{key} must be a number, got {_describe(v)}")
            elif not v > 0:
                rep.add("TMS6", "R", path, f"{w}.{key} must be > 0, got {v!r}")
            if key == "scaleDenominator" and _is_number(v):
                scales.append(v)
        origin = tm.get("pointOfOrigin", _MISSING)
        if not (isinstance(origin, list) and len(origin) == 2
                and all(_is_number(x) for x in origin)):
            rep.add("TMS5", "E", path, f"{w}.pointOfOrigin must be [number, number], got "
                                       f"{_describe(origin)}")
        for key in _TM_SIZES:
            v = tm.get(key, _MISSING)
            if not _is_int(v):
                rep.add("TMS5", "E", path, f"{w}.{key} must be an integer, got {_describe(v)}")
            elif v < 1:
                rep.add("TMS6", "R", path, f"{w}.{key} must be >= 1, got {v}")
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        rep.add("TMS7", "R", path, f"{where}.tileMatrices: ids {dups} are not unique")
    for tm_id in ids:
        if not _valid_node_name(tm_id):
            rep.add("TMS8", "R", path, f"{where}.tileMatrices: id {tm_id!r} is not a valid "
                                       f"node name, so no level group can carry it")
    dup_scales = sorted({s for s in scales if scales.count(s) > 1})
    if dup_scales:
        rep.add("TMS9", "W", path, f"{where}.tileMatrices: scaleDenominators {dup_scales} "
                                   f"occur more than once")


def _tile_matrices_by_id(tms: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    matrices = tms.get("tileMatrices")
    for tm in matrices if isinstance(matrices, list) else ():
        if isinstance(tm, dict) and isinstance(tm.get("id"), str):
            out.setdefault(tm["id"], tm)
    return out


def _check_limits(value: Any, matrices: dict[str, dict[str, Any]] | None, rep: _Report,
                  path: str, where: str) -> None:
    """TML1-TML3 for a ``tile_matrix_limit(s)`` value."""
    if not isinstance(value, dict):
        rep.add("TML1", "E", path, f"{where} must be an object mapping TileMatrix ids to "
                                   f"TileMatrixLimit objects, got {_describe(value)}")
        return
    for key, lim in value.items():
        w = f"{where}[{key!r}]"
        if not isinstance(lim, dict):
            rep.add("TML1", "E", path, f"{w} must be a TileMatrixLimit object, got "
                                       f"{_describe(lim)}")
            continue
        typed = True
        tm_id = lim.get("tileMatrix", _MISSING)
        if not isinstance(tm_id, str):
            rep.add("TML1", "E", path, f"{w}.tileMatrix must be a string, got "
                                       f"{_describe(tm_id)}")
            typed = False
        elif tm_id != key:
            rep.add("TML2", "R", path, f"{w}.tileMatrix is {tm_id!r}, not its key {key!r}")
        for name in _LIMIT_INTS:
            v = lim.get(name, _MISSING)
            if not _is_int(v):
                rep.add("TML1", "E", path, f"{w}.{name} must be an integer, got {_describe(v)}")
                typed = False
        if not typed or matrices is None:
            continue
        tm = matrices.get(tm_id) or matrices.get(key)
        if tm is None:
            continue  # MS7 / TML2 say why
        for lo, hi, size in (("minTileCol", "maxTileCol", "matrixWidth"),
                             ("minTileRow", "maxTileRow", "matrixHeight")):
            n = tm.get(size)
            if _is_int(n) and not 0 <= lim[lo] <= lim[hi] < n:
                rep.add("TML3", "R", path,
                        f"{w}: need 0 <= {lo} ({lim[lo]}) <= {hi} ({lim[hi]}) < {size} "
                        f"({n}) of TileMatrix {tm['id']!r}")


def validate_tile_matrix_set(tms: Any, *, recommended: bool = True) -> list[Finding]:
    """Check a TileMatrixSet object against the TMS rules.

    Parameters
    ----------
    tms : dict
        The TileMatrixSet object (the OGC TMS 2.0 JSON encoding); anything else is
        reported as rule MS4.
    recommended : bool, default True
        Report the recommended errors (severity ``"R"``) too.

    Returns
    -------
    list of Finding
        The findings of rules TMS1-TMS9 (MS4 when ``tms`` is not an object); empty when
        the set is valid.

    Examples
    --------
    >>> from zarrfast.geozarr import get_tile_matrix_set, validate_tile_matrix_set
    >>> tms = get_tile_matrix_set("WebMercatorQuad")
    >>> validate_tile_matrix_set(tms)
    []
    >>> validate_tile_matrix_set({**tms, "tileMatrices": []})
    [Finding(rule='TMS4', severity='E', path='/', message='tile_matrix_set.tileMatrices must
     be a non-empty list, got [] (list)')]
    """
    rep = _Report(recommended)
    if isinstance(tms, dict):
        _check_tms(tms, rep, "", "tile_matrix_set")
    else:
        rep.add("MS4", "E", "", f"a TileMatrixSet must be an object, got {_describe(tms)}")
    return rep.findings


# -- Multiscale Dataset -----------------------------------------------------------------
def _check_resampling(value: Any, rep: _Report, path: str, where: str) -> None:
    if value is _MISSING:
        rep.add("MS3", "E", path, f"{where} is missing; one of {', '.join(RESAMPLING_METHODS)}")
    elif not (isinstance(value, str) and value in RESAMPLING_METHODS):
        rep.add("MS3", "E", path, f"{where} must be one of {', '.join(RESAMPLING_METHODS)} "
                                  f"(case-sensitive), got {_describe(value)}")


def _tms_form_levels(ms: dict[str, Any], children: dict[str, _Node], rep: _Report,
                     path: str) -> list[str] | None:
    """MS3-MS8 and TMS/TML for the TileMatrixSet form; the declared levels (MS8), or
    ``None`` when they cannot be told."""
    _check_resampling(ms.get("resampling_method", _MISSING), rep, path,
                      "multiscales.resampling_method")
    tms = ms.get("tile_matrix_set", _MISSING)
    resolved: dict[str, Any] | None = None
    if tms is _MISSING:
        rep.add("MS4", "E", path, "multiscales.tile_matrix_set is missing (a well-known "
                                  "TileMatrixSet id or a TileMatrixSet object)")
    elif isinstance(tms, str):
        if _tms.is_well_known(tms):
            resolved = _tms.well_known_tile_matrix_set(tms)
        else:
            try:
                _tms.well_known_tile_matrix_set(tms)
            except GeoZarrError as e:
                rep.add("MS5", "E", path, f"multiscales.tile_matrix_set: {e}")
    elif isinstance(tms, dict):
        _check_tms(tms, rep, path, "multiscales.tile_matrix_set")
        resolved = tms
    else:
        rep.add("MS4", "E", path, f"multiscales.tile_matrix_set must be a string or an "
                                  f"object, got {_describe(tms)}")
    matrices = _tile_matrices_by_id(resolved) if resolved is not None else None

    present = [k for k in ("tile_matrix_limit", "tile_matrix_limits") if k in ms]
    if len(present) == 2:
        rep.add("MS6", "E", path, "both multiscales.tile_matrix_limit and "
                                  "multiscales.tile_matrix_limits are present; keep one "
                                  "(tile_matrix_limits)")
    for key in present:
        _check_limits(ms[key], matrices, rep, path, f"multiscales.{key}")
    limits = ms[present[-1]] if present else None  # the plural when both
    if isinstance(limits, dict) and matrices:  # an empty set is TMS4/TMS5's business
        for key in limits:
            if key not in matrices:
                rep.add("MS7", "R", path, f"multiscales.{present[-1]}: key {key!r} is not a "
                                          f"TileMatrix id of the set")

    if isinstance(tms, dict):
        return list(dict.fromkeys(matrices or {}))
    if resolved is None:
        return None
    if isinstance(limits, dict):
        levels = list(limits)
    else:
        # a child named like a TileMatrix id is a level unless it is an array (an
        # unreadable one included: Z1 reports it, MS12 would be misleading)
        levels = [i for i in matrices or {} if i in children and children[i].kind != "array"]
    if not levels:
        why = ("the tile matrix limits are empty" if isinstance(limits, dict)
               else f"no child group is named like a TileMatrix id of {tms!r}")
        rep.add("MS8", "E", path, f"the multiscale declares no level: {why}")
    return levels


def _layout_form_levels(ms: dict[str, Any], rep: _Report, path: str) -> list[str]:
    """The zarr-conventions ``layout`` form: structure (MS2), resampling methods (MS3);
    its assets are the levels."""
    layout = ms["layout"]
    if "resampling_method" in ms and not any(k in ms for k in _TMS_FORM_KEYS):
        _check_resampling(ms["resampling_method"], rep, path, "multiscales.resampling_method")
    if not (isinstance(layout, list) and layout):
        rep.add("MS2", "E", path, f"multiscales.layout must be a non-empty list of objects, "
                                  f"got {_describe(layout)}")
        return []
    assets = [e["asset"] for e in layout if isinstance(e, dict) and isinstance(e.get("asset"),
                                                                                 str)]
    for j, entry in enumerate(layout):
        w = f"multiscales.layout[{j}]"
        if not isinstance(entry, dict):
            rep.add("MS2", "E", path, f"{w} must be an object, got {_describe(entry)}")
            continue
        asset = entry.get("asset", _MISSING)
        if not isinstance(asset, str):
            rep.add("MS2", "E", path, f"{w}.asset must be a string, got {_describe(asset)}")
        source = entry.get("derived_from", _MISSING)
        if source is not _MISSING:
            if not isinstance(source, str):
                rep.add("MS2", "E", path, f"{w}.derived_from must be a string, got "
                                          f"{_describe(source)}")
            elif source not in assets:
                rep.add("MS2", "E", path, f"{w}.derived_from {source!r} is not an asset of "
                                          f"the layout")
            if "transform" not in entry:
                rep.add("MS2", "E", path, f"{w}.transform is required with derived_from")
        transform = entry.get("transform", _MISSING)
        if transform is not _MISSING:
            if not isinstance(transform, dict):
                rep.add("MS2", "E", path, f"{w}.transform must be an object, got "
                                          f"{_describe(transform)}")
            else:
                for key in ("scale", "translation"):
                    v = transform.get(key, _MISSING)
                    if v is not _MISSING and not (isinstance(v, list)
                                                  and all(_is_number(x) for x in v)):
                        rep.add("MS2", "E", path, f"{w}.transform.{key} must be a list of "
                                                  f"numbers, got {_describe(v)}")
        if "resampling_method" in entry:
            _check_resampling(entry["resampling_method"], rep, path,
                              f"{w}.resampling_method")
    return list(dict.fromkeys(assets))


def _signature(node: _Node) -> str:
    if node.kind == "array":
        dims = None if node.dims is _MISSING else node.dims
        return f"array {json.dumps(dims)}"
    return node.kind or "unreadable node"


def _check_multiscale(store: Store, root: _Node, rep: _Report, allow_gm: bool) -> None:
    path = root.path
    if root.kind != "group":
        rep.add("DS0", "E", path, "a Multiscale Dataset is a group, this is an array")
        return
    ms = root.attrs.get("multiscales", _MISSING)
    if ms is _MISSING:
        rep.add("MS1", "E", path, "attribute 'multiscales' is missing")
        return
    if not isinstance(ms, dict):
        rep.add("MS2", "E", path, f"attribute 'multiscales' must be an object, got "
                                  f"{_describe(ms)}")
        return
    children = _children(store, root, rep)
    declared: list[str] = []
    known = True
    if any(k in ms for k in _TMS_FORM_KEYS) or "layout" not in ms:
        levels = _tms_form_levels(ms, children, rep, path)
        if levels is None:
            known = False
        else:
            declared += levels
    if "layout" in ms:
        declared += _layout_form_levels(ms, rep, path)
    if not known and not declared:
        return  # the levels cannot be told; MS4/MS5 say why
    declared = list(dict.fromkeys(declared))

    members: dict[str, dict[str, _Node]] = {}
    for level in declared:
        node = children.get(level)
        lpath = _join(path, level)
        if node is None:
            rep.add("MS9", "E", lpath, f"level {level!r} is declared but there is no child "
                                       f"group {level!r}")
        elif node.kind == "array":
            rep.add("MS9", "E", lpath, f"level {level!r} is an array, not a group")
        elif node.kind == "group":
            members[level] = _check_dataset(store, node, rep, allow_gm)
    if len(members) > 1:
        names = {level: set(m) for level, m in members.items()}
        union = set().union(*names.values())
        lacking = {level: sorted(union - n) for level, n in names.items() if union - n}
        if lacking:
            rep.add("MS10", "E", path, "levels differ in their member names: " + "; ".join(
                f"{level!r} lacks {missing}" for level, missing in lacking.items()))
        for name in sorted(union):
            seen = {level: _signature(m[name]) for level, m in members.items() if name in m}
            if len(set(seen.values())) > 1:
                rep.add("MS11", "W", path, f"member {name!r} differs across levels: " + "; ".join(
                    f"{level!r}: {sig}" for level, sig in seen.items()))
    for name, node in children.items():
        if name not in declared:
            rep.add("MS12", "W", node.path, "not a level of the multiscale: outside the "
                                            "GeoZarr model, not validated")


# -- entry points -----------------------------------------------------------------------
def _resolve(store_or_path: Any, path: str) -> tuple[Store, str]:
    from zarrfast.hierarchy.node import Node

    if isinstance(store_or_path, Node):
        base = store_or_path.path
        sub = normalize_path(path)
        return store_or_path.store, _join(base, sub) if sub else base
    return make_store(store_or_path, read_only=True), normalize_path(path)


def validate(store_or_path: Any, as_: str = "dataset", *, path: str = "",
             recommended: bool = True, allow_grid_mapping_scalars: bool = False
             ) -> list[Finding]:
    """Validate a node as a GeoZarr DataArray, Dataset or Multiscale Dataset.

    Parameters
    ----------
    store_or_path
        A store, a local path, a ``dict`` (memory store), or a zarrfast Array/Group.
    as_
        ``"dataarray"``, ``"dataset"``, ``"multiscale"``, or ``"auto"`` (an array is a
        DataArray, a group with a ``multiscales`` attribute a Multiscale Dataset,
        another group a Dataset).
    path
        The node inside the store (``""``: its root).
    recommended
        Report the recommended errors (severity ``"R"``).
    allow_grid_mapping_scalars
        Exempt 0-d arrays carrying a ``grid_mapping_name`` attribute (CF grid-mapping
        variables such as ``spatial_ref``) from the DataArray rules.

    Returns
    -------
    list of Finding
        Every finding, in the order met; empty when the node is valid.

    Raises
    ------
    GeoZarrError
        ``as_`` is not one of the values above.

    Examples
    --------
    >>> from zarrfast import geozarr
    >>> group = zarrfast.open_group(store={}, mode="w")
    >>> _ = group.create_array("x", shape=(3,), dtype="float64", dimension_names=["x"])
    >>> _ = group.create_array("t", shape=(3,), dtype="float64", dimension_names=["x"])
    >>> geozarr.validate(group, "dataset")
    []
    >>> _ = group.create_array("u", shape=(3,), dtype="float64", dimension_names=["y"])
    >>> [(f.rule, f.path) for f in geozarr.validate(group, "dataset")]
    [('DS2', '/u')]
    """
    if as_ not in _KINDS:
        raise GeoZarrError(f"as_ must be one of {', '.join(_KINDS)}, got {as_!r}")
    store, base = _resolve(store_or_path, path)
    rep = _Report(recommended)
    root = _load_node(store, base, rep)
    if root is None:
        detail = (" (metadata documents exist below it: implicit groups are not allowed)"
                  if _holds_nodes(store, base) else "")
        rep.add("Z1", "E", base, f"no zarr.json, .zarray or .zgroup at {_display(base)!r} "
                                 f"in {store!r}{detail}")
        return rep.findings
    if root.kind is None:
        return rep.findings  # Z1 says why
    kind = as_
    if kind == "auto":
        kind = ("dataarray" if root.kind == "array"
                else "multiscale" if "multiscales" in root.attrs else "dataset")
    if kind == "dataarray":
        if root.kind != "array":
            rep.add("Z1", "E", base, "expected a DataArray but the node is a group (it has no "
                                     "array metadata)")
        else:
            _check_dataarray(root, rep, allow_grid_mapping_scalars)
    elif kind == "dataset":
        if root.kind != "group":
            rep.add("DS0", "E", base, "a Dataset is a group, this is an array")
        else:
            _check_dataset(store, root, rep, allow_grid_mapping_scalars)
    else:
        _check_multiscale(store, root, rep, allow_grid_mapping_scalars)
    return rep.findings


def check(store_or_path: Any, as_: str = "dataset", *, path: str = "",
          recommended: bool = True, allow_grid_mapping_scalars: bool = False
          ) -> list[Finding]:
    """Validate a node as [zarrfast.geozarr.validate][] does, and raise if it breaks a rule.

    Parameters
    ----------
    store_or_path : str, os.PathLike, Store, dict, zarrfast.Array or zarrfast.Group
        A store, a local path, a ``dict`` (memory store), or a zarrfast Array/Group.
    as_ : {"dataset", "dataarray", "multiscale", "auto"}, default "dataset"
        What to validate the node as (see [zarrfast.geozarr.validate][]).
    path : str, default ""
        The node inside the store (``""``: its root).
    recommended : bool, default True
        Count the recommended errors (severity ``"R"``) as errors.
    allow_grid_mapping_scalars : bool, default False
        Exempt 0-d arrays carrying a ``grid_mapping_name`` attribute (CF grid-mapping
        variables such as ``spatial_ref``) from the DataArray rules.

    Returns
    -------
    list of Finding
        The findings left: warnings (severity ``"W"``), and the recommended errors when
        ``recommended=False``.

    Raises
    ------
    GeoZarrError
        The node breaks a rule: the message lists every error (and recommended error,
        unless ``recommended=False``), and ``findings`` holds them.  Also for an
        invalid ``as_``.

    Examples
    --------
    >>> from zarrfast import geozarr
    >>> group = zarrfast.open_group(store={}, mode="w")
    >>> _ = group.create_array("t", shape=(3,), dtype="float64", dimension_names=["y"])
    >>> geozarr.check(group)
    Traceback (most recent call last):
    ...
    zarrfast.geozarr.findings.GeoZarrError: <Group memory://...> is not a valid GeoZarr
    dataset: 1 finding(s)
      E DS2 /t: axis 0 is named 'y' but the dataset has no member 'y' (...)
    """
    findings = validate(store_or_path, as_, path=path, recommended=recommended,
                        allow_grid_mapping_scalars=allow_grid_mapping_scalars)
    errors = [f for f in findings if f.severity in ("E", "R")]
    if errors:
        if isinstance(store_or_path, (str, os.PathLike)):
            where = repr(os.fspath(store_or_path))
        elif isinstance(store_or_path, Mapping):
            where = f"a dict of {len(store_or_path)} keys"
        else:
            where = repr(store_or_path)
        where += f" path {path!r}" if path else ""
        raise GeoZarrError(
            f"{where} is not a valid GeoZarr {'node' if as_ == 'auto' else as_}: "
            f"{len(errors)} finding(s)\n"
            + "\n".join(f"  {f}" for f in errors),
            findings=errors,
        )
    return findings


def get_tile_matrix_set(name_or_dict: str | Mapping[str, Any]) -> dict[str, Any]:
    """The OGC TileMatrixSet JSON object for a well-known id, or a validated inline set.

    Parameters
    ----------
    name_or_dict
        A well-known id (see [zarrfast.geozarr.well_known_tile_matrix_sets][]), or a
        TileMatrixSet object, which is checked against the TMS rules (errors and
        recommended errors).

    Returns
    -------
    dict
        For an id, a fresh copy of the shipped definition (callers may modify it); for
        a mapping, the mapping itself as a ``dict``.

    Raises
    ------
    GeoZarrError
        An unknown id (named in the message), or a set breaking TMS1-TMS8.
    """
    if isinstance(name_or_dict, str):
        return _tms.well_known_tile_matrix_set(name_or_dict)
    if isinstance(name_or_dict, Mapping):
        doc = dict(name_or_dict)
        problems = [f for f in validate_tile_matrix_set(doc) if f.severity in ("E", "R")]
        if problems:
            raise GeoZarrError(
                "invalid TileMatrixSet:\n" + "\n".join(f"  {f}" for f in problems),
                findings=problems,
            )
        return doc
    raise GeoZarrError(
        f"a TileMatrixSet is a well-known id (str) or a TileMatrixSet object (dict), "
        f"got {type(name_or_dict).__name__} {name_or_dict!r}"
    )
