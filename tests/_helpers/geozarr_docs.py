"""Raw GeoZarr metadata documents for the validator tests: arrays, groups, datasets,
tile matrices and sets, multiscales; and writing a ``{path: document}`` tree to a
store (so that malformed documents can be written too).
"""

from __future__ import annotations

import json
from typing import Any

NO = object()  # "leave the member out"

# -- building hierarchies from raw documents --------------------------------------------


def A(fmt: int, shape: list[Any], dims: Any = NO, *, attrs: dict | None = None,
      chunks: Any = NO, drop: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """The documents of an array node."""
    chunk_shape = [max(1, n) if isinstance(n, int) else 1 for n in shape] if chunks is NO \
        else chunks
    if fmt == 3:
        doc: dict[str, Any] = {
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "bytes"}],
        }
        if dims is not NO:
            doc["dimension_names"] = dims
        if attrs:
            doc["attributes"] = attrs
        doc.update(extra)
        for k in drop:
            del doc[k]
        return {"zarr.json": doc}
    doc = {"zarr_format": 2, "shape": shape, "chunks": chunk_shape, "dtype": "|u1",
           "compressor": None, "fill_value": 0, "filters": None, "order": "C",
           "dimension_separator": "/"}
    doc.update(extra)
    for k in drop:
        del doc[k]
    zattrs = dict(attrs or {})
    if dims is not NO:
        zattrs["_ARRAY_DIMENSIONS"] = dims
    docs: dict[str, Any] = {".zarray": doc}
    if zattrs:
        docs[".zattrs"] = zattrs
    return docs


def G(fmt: int, attrs: dict | None = None) -> dict[str, Any]:
    """The documents of a group node."""
    if fmt == 3:
        doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group"}
        if attrs is not None:
            doc["attributes"] = attrs
        return {"zarr.json": doc}
    docs: dict[str, Any] = {".zgroup": {"zarr_format": 2}}
    if attrs is not None:
        docs[".zattrs"] = attrs
    return docs


def dataset(fmt: int, at: str = "", *, y: int = 2, x: int = 3) -> dict[str, dict]:
    """A valid Dataset: ``data(y, x)`` with its two coordinate variables."""
    p = f"{at}/" if at else ""
    tree = {p + "data": A(fmt, [y, x], ["y", "x"]),
            p + "y": A(fmt, [y], ["y"]),
            p + "x": A(fmt, [x], ["x"])}
    if at:
        tree[at] = G(fmt)
    return tree


def write_tree(store: Any, tree: dict[str, dict[str, Any]]) -> None:
    for path, docs in tree.items():
        for name, doc in docs.items():
            key = f"{path}/{name}" if path else name
            store.set(key, doc if isinstance(doc, bytes) else json.dumps(doc).encode())


def TM(tm_id: Any, scale: Any = 1000.0, cell: Any = 1.0, size: Any = 1, **over: Any) -> dict:
    tm = {"id": tm_id, "scaleDenominator": scale, "cellSize": cell,
          "pointOfOrigin": [0.0, 100.0], "tileWidth": 256, "tileHeight": 256,
          "matrixWidth": size, "matrixHeight": size}
    tm.update(over)
    return {k: v for k, v in tm.items() if v is not NO}


def TMS(*matrices: dict, **over: Any) -> dict:
    doc = {"id": "Custom", "title": "a custom set", "crs": "EPSG:32631",
           "orderedAxes": ["E", "N"],
           "tileMatrices": list(matrices) or [TM("0", 2000.0, 2.0, 1), TM("1", 1000.0, 1.0, 2)]}
    doc.update(over)
    return {k: v for k, v in doc.items() if v is not NO}


def LIM(tm_id: str, min_col: Any = 0, max_col: Any = 0, min_row: Any = 0, max_row: Any = 0,
        **over: Any) -> dict:
    lim = {"tileMatrix": tm_id, "minTileCol": min_col, "maxTileCol": max_col,
           "minTileRow": min_row, "maxTileRow": max_row}
    lim.update(over)
    return {k: v for k, v in lim.items() if v is not NO}


def multiscale(fmt: int, ms: Any, levels: tuple[str, ...] = ("0", "1"),
               sizes: tuple[int, ...] = (4, 2)) -> dict[str, dict]:
    """A Multiscale Dataset: the root carries ``multiscales``; one valid Dataset per level."""
    tree: dict[str, dict] = {"": G(fmt, {"multiscales": ms})}
    for level, n in zip(levels, sizes, strict=False):
        tree.update(dataset(fmt, level, y=n, x=n))
    return tree


def WMQ(**over: Any) -> dict:
    ms = {"tile_matrix_set": "WebMercatorQuad", "resampling_method": "average"}
    ms.update(over)
    return {k: v for k, v in ms.items() if v is not NO}


def INLINE(tms: Any = NO, **over: Any) -> dict:
    ms = {"tile_matrix_set": TMS() if tms is NO else tms, "resampling_method": "nearest"}
    ms.update(over)
    return ms


def merge(*trees: dict) -> dict:
    out: dict = {}
    for t in trees:
        out.update(t)
    return out


def rooted(fmt: int, *rest: dict) -> dict:
    return merge({"": G(fmt)}, *rest)
