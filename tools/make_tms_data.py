"""Regenerate ``zarrfast/geozarr/tms/*.json`` (a development-time script; not in the wheel).

The well-known TileMatrixSets of ``geozarr-rules.md`` (OGC 17-083r4 Annex D/E and
the OGC registry) are shipped with zarrfast as package data, so that validation and
pyramid writing never fetch anything.  This script takes the OGC JSON encodings that
the ``morecantile`` package carries as data (copied there from
``https://schemas.opengis.net/tms/2.0/json/examples/tilematrixset/``) and writes them
in a normalised form:

* only the sets of the rules file's table are kept;
* ``crs`` given as an object (``{"uri": ...}``) becomes its URI string, as the mini
  spec's TileMatrixSet has a string ``crs``;
* integer members (``tileWidth``, ``tileHeight``, ``matrixWidth``, ``matrixHeight``)
  written as integral floats become integers;
* ``UTM01WGS84Quad`` ... ``UTM60WGS84Quad`` are made from ``UTM31WGS84Quad``: the
  zones share their tile matrices (each zone's grid is defined in that zone's own
  projected coordinates); only ``id``, ``title``, ``uri`` and ``crs`` (EPSG:326zz)
  change;
* one tile matrix per line, so that diffs stay readable.

Every set is checked against the TileMatrix ids of the table before it is written.

Usage (morecantile is needed here only, not at run time)::

    pip install morecantile
    python3 tools/make_tms_data.py [--check]

``--check`` compares the generated text with the files in place and exits 1 on a
difference, without writing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from typing import Any

#: the rules file's table: set id -> (first TileMatrix id, last TileMatrix id)
TABLE: dict[str, tuple[int, int]] = {
    "WebMercatorQuad": (0, 24),
    "WorldCRS84Quad": (0, 23),
    "WorldMercatorWGS84Quad": (0, 24),
    **{f"UTM{zone:02d}WGS84Quad": (1, 24) for zone in range(1, 61)},
    "UPSArcticWGS84Quad": (0, 24),
    "UPSAntarcticWGS84Quad": (0, 24),
    "EuropeanETRS89_LAEAQuad": (0, 15),
    "CanadianNAD83_LCC": (0, 25),
    "GNOSISGlobalGrid": (0, 28),
    "CDB1GlobalGrid": (-10, 21),
    "WGS1984Quad": (0, 23),
}

_INT_MEMBERS = ("tileWidth", "tileHeight", "matrixWidth", "matrixHeight")
_OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zarrfast", "geozarr",
                        "tms")


def morecantile_data_dir() -> str:
    spec = importlib.util.find_spec("morecantile")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("morecantile is not installed: pip install morecantile")
    return os.path.join(list(spec.submodule_search_locations)[0], "data")


def normalise(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    crs = out.get("crs")
    if isinstance(crs, dict) and isinstance(crs.get("uri"), str):
        out["crs"] = crs["uri"]
    matrices = []
    for tm in out["tileMatrices"]:
        tm = dict(tm)
        for key in _INT_MEMBERS:
            value = tm[key]
            if isinstance(value, float) and value.is_integer():
                tm[key] = int(value)
            if type(tm[key]) is not int:
                raise SystemExit(f"{out['id']} {tm['id']}: {key} is not an integer: {value!r}")
        matrices.append(tm)
    out["tileMatrices"] = matrices
    return out


def utm_zone(template: dict[str, Any], zone: int) -> dict[str, Any]:
    out = dict(template)
    name = f"UTM{zone:02d}WGS84Quad"
    out["id"] = name
    out["title"] = f"Universal Transverse Mercator Zone {zone} WGS84 Quad"
    if "uri" in out:
        out["uri"] = f"http://www.opengis.net/def/tilematrixset/OGC/1.0/{name}"
    out["crs"] = f"http://www.opengis.net/def/crs/EPSG/0/{32600 + zone}"
    return out


def check_ids(doc: dict[str, Any]) -> None:
    first, last = TABLE[doc["id"]]
    want = [str(i) for i in range(first, last + 1)]
    got = [tm["id"] for tm in doc["tileMatrices"]]
    if got != want:
        raise SystemExit(f"{doc['id']}: TileMatrix ids {got} differ from the table's {want}")


def dumps(doc: dict[str, Any]) -> str:
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key == "tileMatrices":
            lines.append(f"  {json.dumps(key)}: [")
            for j, tm in enumerate(value):
                tail = "," if j < len(value) - 1 else ""
                lines.append(f"    {json.dumps(tm)}{tail}")
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def generate(src_dir: str) -> dict[str, str]:
    docs: dict[str, dict[str, Any]] = {}
    for name in TABLE:
        if name.startswith("UTM"):
            continue
        with open(os.path.join(src_dir, f"{name}.json"), encoding="utf-8") as f:
            docs[name] = normalise(json.load(f))
    with open(os.path.join(src_dir, "UTM31WGS84Quad.json"), encoding="utf-8") as f:
        utm31 = normalise(json.load(f))
    for zone in range(1, 61):
        doc = utm_zone(utm31, zone)
        docs[doc["id"]] = doc
    if docs["UTM31WGS84Quad"] != utm31:
        raise SystemExit("UTM31WGS84Quad made from the template differs from the source")
    out = {}
    for name, doc in docs.items():
        if doc["id"] != name:
            raise SystemExit(f"{name}.json has id {doc['id']!r}")
        check_ids(doc)
        out[name] = dumps(doc)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files in place instead of writing")
    args = parser.parse_args(argv)
    texts = generate(morecantile_data_dir())
    if args.check:
        stale = []
        for name, text in texts.items():
            path = os.path.join(_OUT_DIR, f"{name}.json")
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        extra = sorted(set(n[:-5] for n in os.listdir(_OUT_DIR) if n.endswith(".json"))
                       - set(texts))
        if stale or extra:
            print(f"stale: {stale}; not generated: {extra}")
            return 1
        print(f"{len(texts)} TileMatrixSets up to date")
        return 0
    os.makedirs(_OUT_DIR, exist_ok=True)
    for name, text in texts.items():
        with open(os.path.join(_OUT_DIR, f"{name}.json"), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {len(texts)} TileMatrixSets to {_OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
