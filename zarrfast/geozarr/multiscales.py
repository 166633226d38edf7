"""Build a GeoZarr Multiscale Dataset (a pyramid) from a Dataset.

:func:`build_multiscales` writes one child group per level into the target group,
named by the level's TileMatrix id, each a Dataset with the same member names as
the source, and then the ``multiscales`` attribute (``tile_matrix_set``,
``resampling_method``, ``tile_matrix_limits``).

Model
-----
* No reprojection: the source is taken to lie on the grid of the finest level, with
  its first pixel at the top-left corner of tile (0, 0). The TileMatrixSet gives the
  level ids, the tile sizes (the chunk shape along the spatial dims) and the factor
  between levels (the ratio of their ``cellSize``, an integer: 2 in the quad sets).
* Levels (``levels=None``): the finest is the coarsest TileMatrix whose pixel extent
  (``matrixWidth * tileWidth`` x ``matrixHeight * tileHeight``) holds the source;
  coarser ones follow until a level fits in one tile or the set ends. ``levels=n``
  takes ``n`` levels from that finest one; a list of ids takes those (finest = the
  smallest ``cellSize``, which must hold the source).
* The finest level is a re-chunked copy of the source; every coarser level is
  downsampled from the level before it. Data variables use ``resampling_method``
  over blocks of ``f x f`` pixels (partial blocks at the bottom and right edges are
  reduced over the pixels they have, so a level has ``ceil(n / f)`` pixels); NaNs
  and the CF ``_FillValue`` (``missing_value``; for Zarr v2 sources the array's
  ``fill_value``, as xarray reads it) are ignored, and a block with nothing valid
  stays nodata. The coordinate variables of the two spatial dims are block-averaged
  (each coarse cell centre is the mean of the fine centres it covers); other arrays
  are copied unchanged to every level.
* The spatial dims are the last two dims of the data variables (or ``spatial_dims``);
  an array may hold them on any axes.

Memory and threads: each level of each array is processed in tasks on the shared
thread pool; a task reads the source pixels of a block of target tiles (one read per
source chunk), reduces them with the Cython kernels (``zarrfast._ext._downsample``;
NumPy twins as the fallback) and writes each target chunk on its own. A task holds at
most ``TASK_BYTES`` of source pixels plus a chunk or two being decoded/encoded, so
memory is bounded by the thread count, not by the array size. Every read and write in
a task touches one chunk, so the array I/O below runs inline in the worker (a nested
fan-out onto the same pool could deadlock).

All input is checked -- resampling method, TileMatrixSet, the source's Dataset
structure (with :func:`zarrfast.geozarr.validate`), levels, fill values, existing
level groups -- before anything is written; failures raise
:class:`zarrfast.errors.ZarrfastError`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarrfast.api import open_group
from zarrfast.concurrency import map_unordered_into
from zarrfast.errors import ZarrfastError
from zarrfast.geozarr.validate import get_tile_matrix_set, validate
from zarrfast.geozarr.write import DIMENSION_KEY, decode_fill_attr, encode_fill_attr
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.group import Group
from zarrfast.kernels.downsample import METHODS, downsample

__all__ = ["SUPPORTED_METHODS", "TASK_BYTES", "build_multiscales"]

#: the resampling methods this writer implements (a subset of the spec's ResamplingMethod)
SUPPORTED_METHODS = METHODS

#: the spec's ResamplingMethod literals (rule MS3)
_SPEC_METHODS = ("nearest", "average", "bilinear", "cubic", "cubic_spline", "lanczos",
                 "mode", "max", "min", "med", "sum", "q1", "q3", "rms", "gauss")

#: upper bound of the source pixels one task holds (bytes); a task covers at least one tile
TASK_BYTES = 16 * 1024 * 1024

_TM_INTS = ("tileWidth", "tileHeight", "matrixWidth", "matrixHeight")


# ---------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------


@dataclass
class _Member:
    name: str
    array: Array
    dims: tuple[str, ...]
    role: str                # "data" (resampled), "aux" (averaged, tiled like data),
    #                          "coord" (averaged, one chunk), "copy" (unchanged)
    nodata: Any              # fill ignored by the kernels (data only)
    dtype: np.dtype          # dtype in every level
    fill_value: Any          # Zarr fill_value in every level (None: v2 null)
    attrs: dict[str, Any]    # attributes in every level (without _ARRAY_DIMENSIONS)


@dataclass
class _Level:
    tm: dict[str, Any]
    factor: int              # from the previous level (1 for the finest)
    ny: int
    nx: int

    @property
    def id(self) -> str:
        return self.tm["id"]

    def limits(self) -> dict[str, Any]:
        return {"tileMatrix": self.id, "minTileCol": 0, "minTileRow": 0,
                "maxTileCol": math.ceil(self.nx / self.tm["tileWidth"]) - 1,
                "maxTileRow": math.ceil(self.ny / self.tm["tileHeight"]) - 1}


def _fail(msg: str) -> ZarrfastError:
    return ZarrfastError(f"build_multiscales: {msg}")


def _raise(msg: str) -> Any:
    raise _fail(msg)


def _check_method(method: Any) -> str:
    if isinstance(method, str) and method in SUPPORTED_METHODS:
        return method
    if isinstance(method, str) and method in _SPEC_METHODS:
        _raise(f"resampling_method {method!r} is a GeoZarr method this writer does not "
               f"implement; supported: {', '.join(SUPPORTED_METHODS)}")
    _raise(f"unknown resampling_method {method!r}; supported: {', '.join(SUPPORTED_METHODS)}")


def _resolve_tms(tile_matrix_set: Any) -> tuple[dict[str, Any], bool]:
    """``(the TileMatrixSet object, whether it was given by id)``."""
    if not isinstance(tile_matrix_set, (str, Mapping)):
        _raise(f"tile_matrix_set must be a well-known id or a TileMatrixSet object, got "
               f"{type(tile_matrix_set).__name__}")
    try:
        tms = get_tile_matrix_set(tile_matrix_set)
    except (ValueError, KeyError, TypeError, LookupError) as e:
        _raise(f"cannot resolve tile_matrix_set: {e}")
    # what the pyramid needs, checked whatever validated the set before
    mats = tms.get("tileMatrices")
    if not isinstance(mats, list) or not mats:
        _raise("the TileMatrixSet has no tileMatrices")
    seen = set()
    for i, tm in enumerate(mats):
        where = f"tileMatrices[{i}]"
        if not isinstance(tm, Mapping) or not isinstance(tm.get("id"), str):
            _raise(f"{where} has no string id")
        if tm["id"] in seen:
            _raise(f"{where}: duplicate TileMatrix id {tm['id']!r}")
        seen.add(tm["id"])
        for key in _TM_INTS:
            v = tm.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                _raise(f"{where} ({tm['id']!r}): {key} must be an integer >= 1, got {v!r}")
        cs = tm.get("cellSize")
        if isinstance(cs, bool) or not isinstance(cs, (int, float)) or not cs > 0:
            _raise(f"{where} ({tm['id']!r}): cellSize must be a number > 0, got {cs!r}")
    return tms, isinstance(tile_matrix_set, str)


def _dim_names(arr: Array, name: str) -> tuple[str, ...]:
    if arr.metadata.zarr_format == 3:
        dims = arr.dimension_names
    else:
        dims = arr.attrs.get(DIMENSION_KEY)
    if dims is None:
        _raise(f"source array {name!r} has no dimension names: not a GeoZarr DataArray")
    dims = tuple(dims)
    if not all(isinstance(d, str) and d for d in dims) or len(set(dims)) != len(dims) \
            or len(dims) != arr.ndim:
        _raise(f"source array {name!r} has invalid dimension names {list(dims)!r} for shape "
               f"{arr.shape}")
    return dims


def _nodata(arr: Array) -> Any:
    """The value xarray would mask: ``_FillValue`` (v2: the Zarr fill_value), else
    ``missing_value``."""
    attrs = arr.attrs
    value = None
    if "_FillValue" in attrs:
        value = decode_fill_attr(attrs["_FillValue"])
    elif arr.metadata.zarr_format == 2 and arr.metadata.fill_value is not None:
        value = arr.metadata.fill_value
    if value is None and "missing_value" in attrs:
        value = decode_fill_attr(attrs["missing_value"])
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value) and arr.dtype.kind != "f":
        value = None
    return value


def _level_attrs(arr: Array, dtype: np.dtype, nodata: Any, target_format: int
                 ) -> tuple[dict[str, Any], Any]:
    """``(attributes, fill_value)`` of a member in the target's Zarr format."""
    attrs = {k: v for k, v in arr.attrs.items() if k != DIMENSION_KEY}
    src_fill = arr.metadata.fill_value
    src_format = arr.metadata.zarr_format
    if dtype != arr.dtype:          # integer coordinates made float64
        attrs.pop("_FillValue", None)
        return attrs, (np.nan if target_format == 3 else None)
    if target_format == src_format:
        return attrs, src_fill
    if target_format == 3:          # v2 -> v3: the v2 fill_value is the CF _FillValue
        if src_fill is not None and "_FillValue" not in attrs and dtype.kind in "iuf":
            attrs["_FillValue"] = encode_fill_attr(src_fill, dtype)
        if src_fill is None:
            src_fill = np.nan if dtype.kind == "f" else 0
        return attrs, src_fill
    # v3 -> v2: the _FillValue attribute becomes the fill_value
    fill = attrs.pop("_FillValue", None)
    fill = decode_fill_attr(fill) if fill is not None else None
    return attrs, fill


def _members(source: Group, target_format: int) -> list[_Member]:
    arrays = dict(source.arrays())
    if not arrays:
        _raise(f"source group {source.name!r} has no arrays to build a pyramid from")
    dims = {name: _dim_names(arr, name) for name, arr in arrays.items()}
    for name, arr in arrays.items():
        if arr.ndim == 0:
            _raise(f"source array {name!r} is a scalar: not a GeoZarr DataArray")
        for axis, d in enumerate(dims[name]):
            coord = arrays.get(d)
            if coord is None or coord.ndim != 1 or coord.shape[0] != arr.shape[axis]:
                _raise(f"source is not a valid GeoZarr Dataset: {name!r} has dimension {d!r} "
                       f"of length {arr.shape[axis]} without a matching 1-D coordinate "
                       f"variable {d!r}")
    out = []
    for name, arr in arrays.items():
        out.append(_Member(name, arr, dims[name], "copy", None, arr.dtype, None, {}))
    return out


def _spatial_dims(members: list[_Member], spatial_dims: Any) -> tuple[str, str]:
    if spatial_dims is not None:
        if (not isinstance(spatial_dims, Sequence) or isinstance(spatial_dims, str)
                or len(spatial_dims) != 2 or not all(isinstance(d, str) for d in spatial_dims)
                or spatial_dims[0] == spatial_dims[1]):
            _raise(f"spatial_dims must be two distinct dimension names (y, x), got "
                   f"{spatial_dims!r}")
        names = {m.name for m in members}
        for d in spatial_dims:
            if d not in names:
                _raise(f"spatial dimension {d!r} has no coordinate variable in the source")
        return spatial_dims[0], spatial_dims[1]
    pairs = {m.dims[-2:] for m in members if len(m.dims) >= 2}
    if not pairs:
        _raise("the source has no 2-D data variable; pass spatial_dims=(y, x)")
    if len(pairs) > 1:
        _raise(f"the data variables end in different dimension pairs {sorted(pairs)}; pass "
               f"spatial_dims=(y, x)")
    y, x = next(iter(pairs))
    return y, x


def _plan_levels(tms: dict[str, Any], levels: Any, ny: int, nx: int) -> list[_Level]:
    mats = sorted(tms["tileMatrices"], key=lambda tm: tm["cellSize"])  # finest first
    by_id = {tm["id"]: tm for tm in mats}

    def holds(tm: dict[str, Any], h: int, w: int) -> bool:
        return tm["matrixWidth"] * tm["tileWidth"] >= w and \
            tm["matrixHeight"] * tm["tileHeight"] >= h

    if levels is None or (isinstance(levels, int) and not isinstance(levels, bool)):
        if levels is not None and levels < 1:
            _raise(f"levels must be >= 1, got {levels}")
        fits = [tm for tm in mats if holds(tm, ny, nx)]
        if not fits:
            big = mats[0]
            _raise(f"the source ({ny} x {nx} pixels) is larger than the finest TileMatrix "
                   f"{big['id']!r} ({big['matrixHeight'] * big['tileHeight']} x "
                   f"{big['matrixWidth'] * big['tileWidth']} pixels)")
        start = mats.index(fits[-1])
        chosen = mats[start:]
        if levels is not None:
            if len(chosen) < levels:
                _raise(f"{levels} levels requested but the TileMatrixSet has only "
                       f"{len(chosen)} from {chosen[0]['id']!r} on")
            chosen = chosen[:levels]
    else:
        if isinstance(levels, str) or not isinstance(levels, Sequence) or not levels:
            _raise(f"levels must be None, a positive int or a list of TileMatrix ids, got "
                   f"{levels!r}")
        unknown = [lv for lv in levels if lv not in by_id]
        if unknown:
            _raise(f"levels {unknown!r} are not TileMatrix ids of {tms.get('id')!r} "
                   f"(ids: {', '.join(tm['id'] for tm in mats)})")
        if len(set(levels)) != len(levels):
            _raise(f"levels {list(levels)!r} repeat an id")
        chosen = sorted((by_id[lv] for lv in levels), key=lambda tm: tm["cellSize"])
    out: list[_Level] = []
    h, w = ny, nx
    for i, tm in enumerate(chosen):
        f = 1
        if i > 0:
            ratio = tm["cellSize"] / chosen[i - 1]["cellSize"]
            f = round(ratio)
            if f < 2 or abs(ratio - f) > 1e-6 * ratio:
                _raise(f"TileMatrix {tm['id']!r} is {ratio:g} times coarser than "
                       f"{chosen[i - 1]['id']!r}; levels must differ by an integer factor "
                       f">= 2")
            h, w = -(-h // f), -(-w // f)
        if not holds(tm, h, w):
            _raise(f"level {tm['id']!r} ({h} x {w} pixels) does not fit its TileMatrix "
                   f"({tm['matrixHeight']} x {tm['matrixWidth']} tiles of "
                   f"{tm['tileHeight']} x {tm['tileWidth']})")
        out.append(_Level(tm, f, h, w))
        if levels is None and h <= tm["tileHeight"] and w <= tm["tileWidth"]:
            break
    return out


def _check_kernel(m: _Member, method: str) -> None:
    """Surface dtype/fill problems of a member now, before anything is written."""
    try:
        downsample(np.zeros((1, 1), dtype=m.array.dtype), (1, 1), method, m.nodata)
    except (TypeError, ValueError) as e:
        _raise(f"cannot resample {m.name!r} ({m.array.dtype}, fill {m.nodata!r}) with "
               f"{method!r}: {e}")


# ---------------------------------------------------------------------------
# chunk-wise processing
# ---------------------------------------------------------------------------


def _chunk_ranges(start: int, stop: int, chunk: int) -> list[tuple[int, int]]:
    """The pieces of ``[start, stop)`` cut at multiples of ``chunk``."""
    out = []
    a = start
    while a < stop:
        b = min(stop, (a // chunk + 1) * chunk)
        out.append((a, b))
        a = b
    return out


def _read_box(src: Array, box: list[tuple[int, int]]) -> np.ndarray:
    """``src[box]`` read one source chunk at a time (each read runs inline)."""
    shape = tuple(b - a for a, b in box)
    pieces = [_chunk_ranges(a, b, c) for (a, b), c in zip(box, src.chunks, strict=True)]
    if all(len(p) == 1 for p in pieces):
        return np.asarray(src[tuple(slice(a, b) for a, b in box)])
    buf = np.empty(shape, dtype=src.dtype)
    for combo in itertools.product(*pieces):
        sel = tuple(slice(a, b) for a, b in combo)
        local = tuple(slice(a - lo, b - lo) for (a, b), (lo, _) in zip(combo, box, strict=True))
        buf[local] = src[sel]
    return buf


def _process(src: Array, dst: Array, factors: tuple[int, ...], spatial: tuple[int, ...],
             method: str, fill: Any) -> None:
    """Write ``dst`` = ``src`` reduced by ``factors`` (>1 only on the ``spatial`` axes)."""
    shape = dst.shape
    if math.prod(shape) == 0:
        return
    chunks = dst.chunks
    itemsize = src.dtype.itemsize
    grid = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    # chunks per task along each axis: 1, or enough target tiles to cover a source chunk
    k = [1] * len(shape)
    for ax in range(len(shape)):
        if factors[ax] > 1 or ax in spatial:
            want = -(-src.chunks[ax] // (chunks[ax] * factors[ax]))
            k[ax] = max(1, min(want, grid[ax]))

    def task_bytes() -> int:
        return math.prod(min(k[ax] * chunks[ax], shape[ax]) * factors[ax]
                         for ax in range(len(shape))) * itemsize

    while task_bytes() > TASK_BYTES and max(k) > 1:
        ax = max(range(len(k)), key=lambda a: k[a])
        k[ax] = -(-k[ax] // 2)
    tasks = list(itertools.product(*[range(0, g, kk) for g, kk in zip(grid, k, strict=True)]))
    reduce_axes = [ax for ax in spatial if factors[ax] > 1]

    def run(task: tuple[int, ...]) -> None:
        tbox = [(t * c, min((t + kk) * c, n))
                for t, c, kk, n in zip(task, chunks, k, shape, strict=True)]
        sbox = [(a * f, min(b * f, n))
                for (a, b), f, n in zip(tbox, factors, src.shape, strict=True)]
        block = _read_box(src, sbox)
        if reduce_axes:
            # the reduced axes last, y before x, for the kernel
            moved = np.moveaxis(block, spatial, range(-len(spatial), 0))
            fs = tuple(factors[ax] for ax in spatial)
            out = downsample(moved, fs, method, fill)
            out = np.moveaxis(out, range(-len(spatial), 0), spatial)
        else:
            out = block
        if out.dtype != dst.dtype:
            out = out.astype(dst.dtype)
        # one write per target chunk: each runs inline in this worker
        for combo in itertools.product(*[_chunk_ranges(a, b, c)
                                         for (a, b), c in zip(tbox, chunks, strict=True)]):
            sel = tuple(slice(a, b) for a, b in combo)
            local = tuple(slice(a - lo, b - lo)
                          for (a, b), (lo, _) in zip(combo, tbox, strict=True))
            dst[sel] = np.ascontiguousarray(out[local])

    # Tasks write disjoint sets of whole target chunks and only read the source.
    map_unordered_into(run, tasks, work_bytes=math.prod(src.shape) * itemsize)


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------


def _as_group(obj: Any, what: str, mode: str) -> Group:
    if isinstance(obj, Group):
        return obj
    try:
        return open_group(obj, mode=mode)
    except ZarrfastError as e:
        raise _fail(f"cannot open the {what} group: {e}") from None


def build_multiscales(source_group: Any, target_group: Any, *,
                      tile_matrix_set: str | Mapping[str, Any] = "WebMercatorQuad",
                      resampling_method: str = "average", levels: Any = None,
                      spatial_dims: tuple[str, str] | None = None,
                      overwrite: bool = False) -> Group:
    """Write a GeoZarr Multiscale Dataset of ``source_group`` into ``target_group``.

    Parameters
    ----------
    source_group
        A valid GeoZarr Dataset: a [zarrfast.Group][], or what
        [zarrfast.open_group][] opens (read-only here).
    target_group
        The Multiscale Dataset: a writable [zarrfast.Group][] (its Zarr format is
        used), or what [zarrfast.open_group][] opens or creates (then in the
        source's format). May not be the source itself.
    tile_matrix_set
        A well-known TileMatrixSet id (written as the id) or a TileMatrixSet object
        (written inline, keeping only the levels written).
    resampling_method
        One of ``average nearest mode min max sum rms``.
    levels
        ``None`` (from the finest level holding the source until one tile holds a
        level), a number of levels, or a list of TileMatrix ids.
    spatial_dims
        ``(y, x)`` dimension names; default: the last two dims of the data variables.
    overwrite
        Replace existing level groups (else they are an error, before writing).

    Returns
    -------
    zarrfast.Group
        The target group, carrying ``multiscales``.

    Raises
    ------
    zarrfast.errors.ZarrfastError
        Any invalid input; nothing has been written then.
    """
    method = _check_method(resampling_method)
    tms, by_id = _resolve_tms(tile_matrix_set)
    source = _as_group(source_group, "source", "r")
    errors = [f for f in validate(source, "dataset") if f.severity in ("E", "R")]
    if errors:
        _raise(f"source group {source.name!r} is not a valid GeoZarr Dataset:\n"
               + "\n".join(f"  {f}" for f in errors))
    target: Any = target_group
    if isinstance(target, Group):
        if target.read_only:
            _raise(f"target group {target.name!r} is read-only")
        if target.store == source.store and target.path == source.path:
            _raise("the target group is the source group")
        target_format = target.zarr_format
    else:
        target_format = source.zarr_format

    members = _members(source, target_format)
    y_dim, x_dim = _spatial_dims(members, spatial_dims)
    coord_arr = {m.name: m.array for m in members}
    ny, nx = coord_arr[y_dim].shape[0], coord_arr[x_dim].shape[0]
    if ny == 0 or nx == 0:
        _raise(f"the spatial dims ({y_dim!r}: {ny}, {x_dim!r}: {nx}) must not be empty")
    plan = _plan_levels(tms, levels, ny, nx)
    # CF auxiliary coordinates (named in a `coordinates` attribute) are averaged, too
    aux = set()
    for m in members:
        names = m.array.attrs.get("coordinates")
        if isinstance(names, str):
            aux.update(names.split())
    for m in members:
        spatial = [d for d in m.dims if d in (y_dim, x_dim)]
        if m.dims in ((y_dim,), (x_dim,)) and m.name == m.dims[0]:
            m.role = "coord"
            if m.array.dtype.kind not in "f":
                if m.array.dtype.kind not in "iu":
                    _raise(f"coordinate variable {m.name!r} has dtype {m.array.dtype}; "
                           f"spatial coordinates must be numbers to be averaged")
                m.dtype = np.dtype(np.float64)
            _check_kernel(m, "average")
        elif spatial and m.name in aux and m.array.dtype.kind == "f":
            m.role = "aux"
            _check_kernel(m, "average")
        elif spatial:
            m.role = "data"
            m.nodata = _nodata(m.array)
            _check_kernel(m, method)
        m.attrs, m.fill_value = _level_attrs(m.array, m.dtype, m.nodata, target_format)

    # existing level groups
    if not isinstance(target, Group):
        try:
            existing: Group | None = open_group(target, mode="r")
        except ZarrfastError:
            existing = None
        if existing is not None and existing.zarr_format != target_format:
            target_format = existing.zarr_format
            for m in members:
                m.attrs, m.fill_value = _level_attrs(m.array, m.dtype, m.nodata,
                                                     target_format)
        if existing is not None and existing.store == source.store \
                and existing.path == source.path:
            _raise("the target group is the source group")
    else:
        existing = target
    if existing is not None and not overwrite:
        clash = [lv.id for lv in plan if lv.id in existing]
        if clash:
            _raise(f"target group {existing.name!r} already has level members {clash}; pass "
                   f"overwrite=True to replace them")

    # --- everything is checked: write ---
    if not isinstance(target, Group):
        target = open_group(target, mode="a", zarr_format=target_format)
    level_group_attrs = {k: v for k, v in source.attrs.items() if k != "multiscales"}
    previous: dict[str, Array] = {m.name: m.array for m in members}
    for lv in plan:
        if lv.id in target:
            del target[lv.id]
        group = target.create_group(lv.id, attributes=level_group_attrs)
        current: dict[str, Array] = {}
        for m in members:
            src = previous[m.name]
            shape = list(src.shape)
            factors = [1] * len(shape)
            chunks = list(src.chunks)
            spatial = tuple(ax for ax, d in enumerate(m.dims) if d in (y_dim, x_dim))
            for ax in spatial:
                tile = lv.tm["tileHeight"] if m.dims[ax] == y_dim else lv.tm["tileWidth"]
                factors[ax] = lv.factor
                shape[ax] = -(-shape[ax] // lv.factor)
                chunks[ax] = shape[ax] if m.role == "coord" else tile
            # spatial chunks of data are whole tiles (chunk (r, c) is tile (r, c)), even
            # where a level is smaller than a tile; other chunks are clipped to the shape
            tiled = m.role in ("data", "aux")
            chunks = [c if (ax in spatial and tiled) else max(1, min(c, n))
                      for ax, (c, n) in enumerate(zip(chunks, shape, strict=True))]
            if tiled:
                # leading (non-spatial) chunks: bounded so a task stays within TASK_BYTES
                tile_bytes = math.prod(chunks[ax] * factors[ax] for ax in spatial) * \
                    m.dtype.itemsize
                lead = [ax for ax in range(len(shape)) if ax not in spatial]
                while lead and math.prod(chunks[ax] for ax in lead) * tile_bytes > TASK_BYTES \
                        and max(chunks[ax] for ax in lead) > 1:
                    ax = max(lead, key=lambda a: chunks[a])
                    chunks[ax] = -(-chunks[ax] // 2)
            kwargs: dict[str, Any] = {}
            if m.fill_value is not None:
                kwargs["fill_value"] = m.fill_value
            dst = group.create_array(m.name, shape=tuple(shape), dtype=m.dtype,
                                     chunks=tuple(chunks), dimension_names=m.dims,
                                     attributes=m.attrs, **kwargs)
            if target_format == 2 and m.fill_value is None and \
                    dst.metadata.fill_value is not None:
                dst._replace_metadata(fill_value=None, fill_value_json=None)
            method_m = "average" if m.role in ("coord", "aux") else method
            fill = m.nodata if m.role == "data" else None
            _process(src, dst, tuple(factors), spatial if m.role != "copy" else (),
                     method_m, fill)
            current[m.name] = dst
        previous = current

    if by_id:
        tms_value: Any = tms["id"]
    else:
        used = {lv.id for lv in plan}
        tms_value = dict(tms)
        tms_value["tileMatrices"] = [tm for tm in tms["tileMatrices"] if tm["id"] in used]
    target.update_attributes({"multiscales": {
        "tile_matrix_set": tms_value,
        "resampling_method": method,
        "tile_matrix_limits": {lv.id: lv.limits() for lv in plan},
    }})
    return target
