"""Benchmark datasets: the layouts, a deterministic generator, generation and reuse.

Every value is a function of its coordinates (:func:`values`), so the expected result
of any selection is computed from the selection alone, without the whole array in
memory; datasets are written block by block.  A manifest (``manifest.json`` in the
dataset directory) records the parameters and stored size of every dataset, so a
second run with the same ``--path`` and parameters reuses them.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["Layout", "LAYOUTS", "Dataset", "parse_size", "main_shape", "small_shape", "boxes",
           "values", "expected_crc", "crc", "prepare", "MANIFEST", "GENERATOR"]

GENERATOR = 1  # bump when values() changes: datasets in a --path are then regenerated
MANIFEST = "manifest.json"
MAIN_SHAPE = (320, 640, 640)  # uint16: 250 MiB
MAIN_NBYTES = math.prod(MAIN_SHAPE) * 2
SMALL_SHAPE = (4096, 4096)  # uint16: 32 MiB in 4096 chunks of 8 KiB
SMALL_MAX = 1 << 30  # small-file layouts stop growing at 1 GiB (131072 files of 8 KiB)

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "t": 1000**4,
          "tb": 1000**4, "tib": 1024**4}


def parse_size(text: str) -> int:
    """``"256MiB"``, ``"4GiB"``, ``"1.5 GB"``, ``"1000000"`` -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"size {text!r}: expected a number with a unit such as 256MiB, "
                         f"4GiB, 40GiB")
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n < 64 * 1024:
        raise ValueError(f"size {text!r}: at least 64KiB")
    return n


def main_shape(size: int) -> tuple[int, ...]:
    """The main (uint16, 3-d) array's shape for ``size`` bytes: (320, 640, 640) scaled
    evenly, every side a multiple of 32."""
    f = (size / MAIN_NBYTES) ** (1 / 3)
    return tuple(max(32, round(d * f / 32) * 32) for d in MAIN_SHAPE)


def small_shape(size: int) -> tuple[int, ...]:
    """The small-file layouts' 2-d shape: (4096, 4096) at the default size, scaled with
    ``size`` (sides multiples of 64, at most ``SMALL_MAX`` bytes)."""
    nbytes = min(SMALL_MAX, SMALL_SHAPE[0] * SMALL_SHAPE[1] * 2 * size / MAIN_NBYTES)
    side = max(128, round(math.sqrt(nbytes / 2) / 64) * 64)
    return (side, side)


@dataclass(frozen=True)
class Layout:
    """How a dataset is stored; ``kind`` "main" (3-d) or "small" (2-d, 8 KiB chunks)."""

    name: str
    description: str
    kind: str = "main"
    chunks: tuple[int, ...] = (32, 32, 32)
    shards: tuple[int, ...] | None = None
    codec: str = "none"  # none, zstd, blosc, gzip
    transpose: bool = False
    endian: str = "little"
    zarr_format: int = 3

    def shape(self, size: int) -> tuple[int, ...]:
        return main_shape(size) if self.kind == "main" else small_shape(size)

    def grid(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Shape of the stored grid (shards, or chunks when unsharded), clipped."""
        return tuple(min(u, s) for u, s in zip(self.shards or self.chunks, shape, strict=True))

    def create_kwargs(self, shape: tuple[int, ...]) -> dict[str, Any]:
        from zarrfast.codecs import BloscCodec, BytesCodec, GzipCodec, TransposeCodec, ZstdCodec

        chunks = tuple(min(c, s) for c, s in zip(self.chunks, shape, strict=True))
        kw: dict[str, Any] = {"shape": shape, "chunks": chunks, "dtype": "uint16",
                              "zarr_format": self.zarr_format, "fill_value": 0}
        if self.shards:
            kw["shards"] = self.grid(shape)
        if self.zarr_format == 2:
            kw["compressors"] = {"none": None, "zstd": {"id": "zstd", "level": 1},
                                 "gzip": {"id": "gzip", "level": 1},
                                 "blosc": {"id": "blosc", "cname": "lz4", "clevel": 5,
                                           "shuffle": 2}}[self.codec]
            kw["dtype"] = ">u2" if self.endian == "big" else "<u2"
            kw["order"] = "F" if self.transpose else "C"
            kw["filters"] = None
            return kw
        kw["compressors"] = {
            "none": None, "zstd": [ZstdCodec(level=1)], "gzip": [GzipCodec(level=1)],
            "blosc": [BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=2)],
        }[self.codec]
        kw["serializer"] = BytesCodec(endian=self.endian)
        kw["filters"] = ([TransposeCodec(order=tuple(reversed(range(len(shape)))))]
                         if self.transpose else None)
        return kw


LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (
    Layout("raw", "no compression, 32^3 chunks"),
    Layout("zstd", "zstd level 1, 32^3 chunks", codec="zstd"),
    Layout("blosc", "blosc lz4 bitshuffle, 64^3 chunks", chunks=(64, 64, 64), codec="blosc"),
    Layout("gzip", "gzip level 1, 64^3 chunks", chunks=(64, 64, 64), codec="gzip"),
    Layout("sharded", "zstd level 1, 128^3 shards of 32^3 chunks", shards=(128, 128, 128),
           codec="zstd"),
    Layout("transposed", "transpose codec (order F), no compression, 32^3 chunks",
           transpose=True),
    Layout("big-endian", "bytes codec endian big, no compression, 32^3 chunks", endian="big"),
    Layout("v2", "Zarr v2, zstd level 1 (numcodecs), 32^3 chunks", codec="zstd",
           zarr_format=2),
    Layout("small-files", "2-d, 8 KiB chunks (64x64) one file each, no compression",
           kind="small", chunks=(64, 64)),
    Layout("small-sharded", "2-d, shards of 256 inner 8 KiB chunks (64x64), no compression",
           kind="small", chunks=(64, 64), shards=(1024, 1024)),
)}
REFERENCE_LAYOUTS = ("raw", "zstd", "blosc", "sharded", "small-files", "small-sharded")


def roundtrip_layout(layout: Layout) -> Layout:
    """What the round trip writes: other chunks (and no shards), zstd."""
    if layout.kind == "small":
        return Layout(f"{layout.name}->rt", "zstd level 1, 256x256 chunks", kind="small",
                      chunks=(256, 256), codec="zstd", zarr_format=layout.zarr_format)
    chunks = (32, 32, 32) if layout.chunks == (64, 64, 64) else (64, 64, 64)
    return Layout(f"{layout.name}->rt", f"zstd level 1, {chunks[0]}^3 chunks", chunks=chunks,
                  codec="zstd", zarr_format=layout.zarr_format)


# --------------------------------------------------------------------------------------
# values


def boxes(rng: np.random.Generator, shape: Sequence[int], chunks: Sequence[int], n: int,
          *, big: bool = True) -> list[tuple[slice, ...]]:
    """``n`` boxes of an array of ``shape`` at random offsets (``rng``'s draws: a side's
    size, then its start, side after side): ``big``, each side one to two chunks long
    (at most the array's side: up to 27 chunks in 3-d, issue 44's boxes); else one
    element to one chunk long (the harness's ``random``)."""
    out = []
    for _ in range(n):
        box = []
        for m, c in zip(shape, chunks, strict=True):
            lo, hi = (min(c, m), min(2 * c, m)) if big else (1, c)
            size = int(rng.integers(lo, hi + 1))
            start = int(rng.integers(0, m - size + 1))
            box.append(slice(start, start + size))
        out.append(tuple(box))
    return out


def values(sel: tuple[slice, ...]) -> np.ndarray:
    """The dataset's values at ``sel`` (slices with non-negative start, stop and step):
    a smooth ramp plus 8 bits of hashed noise, so it compresses like measurements."""
    nd = len(sel)
    acc = np.zeros((1,) * nd, dtype=np.uint32)
    mix = np.zeros((1,) * nd, dtype=np.uint32)
    ramp = (7, 3, 1)[-nd:] if nd <= 3 else (1,) * nd
    keys = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)
    for ax, s in enumerate(sel):
        idx = np.arange(s.start or 0, s.stop, s.step or 1, dtype=np.uint32)
        shape = [1] * nd
        shape[ax] = idx.size
        idx = idx.reshape(shape)
        acc = acc + idx * np.uint32(ramp[ax])
        mix = mix ^ (idx * np.uint32(keys[ax % 4]))
    mix ^= mix >> np.uint32(15)
    mix *= np.uint32(0x2C1B3C6D)
    mix ^= mix >> np.uint32(12)
    return ((acc + (mix & np.uint32(0xFF))) & np.uint32(0xFFFF)).astype(np.uint16)


def _pieces(shape: tuple[int, ...], sel: tuple[slice, ...],
            limit: int = 16 << 20) -> Iterator[tuple[slice, ...]]:
    """``sel`` cut into C-order consecutive pieces of at most ~``limit`` bytes."""
    sizes = [len(range(s.start, s.stop, s.step)) for s in sel]
    # cut along the first axis whose trailing block fits, keeping C order
    for ax in range(len(sizes)):
        rest = math.prod(sizes[ax + 1:]) * 2
        if rest <= limit or ax == len(sizes) - 1:
            break
    step_n = max(1, limit // max(1, math.prod(sizes[ax + 1:]) * 2))
    outer = [range(n) for n in sizes[:ax]]
    import itertools

    for head in itertools.product(*outer):
        for i in range(0, sizes[ax], step_n):
            j = min(sizes[ax], i + step_n)
            out = []
            for a, s in enumerate(sel):
                st = s.step
                if a < ax:
                    k = s.start + head[a] * st
                    out.append(slice(k, k + 1, 1))
                elif a == ax:
                    out.append(slice(s.start + i * st, s.start + j * st, st))
                else:
                    out.append(s)
            yield tuple(out)


def normalize(shape: tuple[int, ...], sel: tuple[slice, ...]) -> tuple[slice, ...]:
    return tuple(slice(*s.indices(n)) for s, n in zip(sel, shape, strict=True))


def crc(a: np.ndarray, value: int = 0) -> int:
    """CRC-32 of ``a``'s values in C order (any layout or byte order in memory)."""
    a = np.asarray(a)
    if a.dtype.kind == "u" and a.dtype.itemsize == 2:  # values, whatever the byte order
        a = np.ascontiguousarray(a, dtype="<u2")
    else:  # a wrong dtype gives other bytes, hence another checksum
        a = np.ascontiguousarray(a)
    return zlib.crc32(memoryview(a).cast("B"), value)


def expected_crc(shape: tuple[int, ...], sel: tuple[slice, ...] | None = None,
                 sink: Any = None) -> int:
    """CRC-32 of the dataset's values at ``sel`` (default: everything), computed piece by
    piece; ``sink``, if given, receives every piece's bytes (the raw floor file)."""
    sel = normalize(shape, sel or tuple(slice(None) for _ in shape))
    value = 0
    for piece in _pieces(shape, sel):
        v = values(piece)
        if sink is not None:
            sink.write(v.astype("<u2", copy=False).tobytes())
        value = crc(v, value)
    return value


def floor_file(root: str, ds: Dataset) -> str:
    """``raw.bin``: the main array's values in one file (for the ``np.fromfile`` floor),
    written on first use and kept next to the datasets."""
    path = os.path.join(root, "raw.bin")
    if not (os.path.exists(path) and os.path.getsize(path) == ds.nbytes):
        tmp = path + ".tmp"
        with open(tmp, "wb") as sink:
            expected_crc(ds.shape, sink=sink)  # the np.fromfile floor checks the values
        os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------------------
# datasets


@dataclass
class Dataset:
    """A generated dataset on disk."""

    layout: Layout
    shape: tuple[int, ...]
    path: str
    stored_bytes: int = 0
    files: int = 0
    expected: dict[str, Any] = field(default_factory=dict)
    reused: bool = False

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * 2

    @property
    def read_chunks(self) -> tuple[int, ...]:
        return tuple(min(c, s) for c, s in zip(self.layout.chunks, self.shape, strict=True))

    def chunk_files(self) -> list[tuple[str, int]]:
        """Every stored chunk (or shard) file and its size; metadata left out."""
        out = []
        for dp, _, fs in os.walk(self.path):
            for f in fs:
                if f in ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                    continue
                p = os.path.join(dp, f)
                out.append((p, os.path.getsize(p)))
        out.sort()
        return out


def _params(layout: Layout, shape: tuple[int, ...]) -> dict[str, Any]:
    d = asdict(layout)
    d.pop("description")
    d["shape"] = list(shape)
    d["generator"] = GENERATOR
    return json.loads(json.dumps(d))


def _blocks(shape: tuple[int, ...], unit: tuple[int, ...],
            target: int = 32 << 20) -> Iterator[tuple[slice, ...]]:
    """Blocks aligned to ``unit`` (chunk or shard), grown along the last axes up to about
    ``target`` bytes; the whole array is never in memory."""
    import itertools

    block = list(unit)
    for ax in reversed(range(len(shape))):
        k = max(1, target // (math.prod(block) * 2))
        block[ax] = min(shape[ax], unit[ax] * k)
        if block[ax] < shape[ax]:
            break
    ranges = [range(0, n, b) for n, b in zip(shape, block, strict=True)]
    for start in itertools.product(*ranges):
        yield tuple(slice(s, min(s + b, n)) for s, b, n in zip(start, block, shape, strict=True))


def write_dataset(layout: Layout, shape: tuple[int, ...], path: str) -> None:
    """Create the array at ``path`` with zarrfast and fill it block by block."""
    from zarrfast import create_array

    a = create_array(path, overwrite=True, **layout.create_kwargs(shape))
    for block in _blocks(shape, layout.grid(shape)):
        a[block] = values(block)


def create_template(layout: Layout, shape: tuple[int, ...], path: str) -> None:
    """Metadata only: copied into a fresh directory for every timed write."""
    from zarrfast import create_array

    create_array(path, overwrite=True, **layout.create_kwargs(shape))


def fresh_from_template(template: str, target: str) -> None:
    """``target`` becomes an empty array with ``template``'s metadata."""
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    for f in ("zarr.json", ".zarray", ".zattrs"):
        src = os.path.join(template, f)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(target, f))


def _load_manifest(root: str) -> dict[str, Any]:
    try:
        with open(os.path.join(root, MANIFEST)) as f:
            m = json.load(f)
        return m if isinstance(m, dict) and isinstance(m.get("datasets"), dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(root: str, manifest: dict[str, Any]) -> None:
    tmp = os.path.join(root, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(root, MANIFEST))


def prepare(root: str, layout: Layout, size: int, log: Any = None) -> Dataset:
    """The dataset of ``layout`` at ``size`` under ``root``: reused when the manifest
    says it was made with the same parameters (and its files are all there), else
    generated."""
    shape = layout.shape(size)
    path = os.path.join(root, f"{layout.name}.zarr")
    ds = Dataset(layout, shape, path)
    params = _params(layout, shape)
    manifest = _load_manifest(root)
    manifest.setdefault("datasets", {})
    entry = manifest["datasets"].get(layout.name)
    if entry and entry.get("params") == params and os.path.isdir(path):
        files = ds.chunk_files()
        if (len(files) == entry.get("files")
                and sum(s for _, s in files) == entry.get("stored_bytes")):
            ds.stored_bytes, ds.files = entry["stored_bytes"], entry["files"]
            ds.expected = dict(entry.get("expected", {}))
            ds.reused = True
            return ds
    if log:
        from zarrfast.bench.report import human

        log(f"generating {layout.name} {shape} uint16 ({human(ds.nbytes)}) in {path}")
    write_dataset(layout, shape, path)
    # expected checksums: the same for every layout of one shape, so look for them first
    same = [e for e in manifest["datasets"].values()
            if e.get("params", {}).get("shape") == list(shape)
            and e.get("params", {}).get("generator") == GENERATOR and e.get("expected")]
    if same:
        ds.expected = dict(same[0]["expected"])
    else:
        ds.expected = {"full": expected_crc(shape)}
    files = ds.chunk_files()
    ds.files, ds.stored_bytes = len(files), sum(s for _, s in files)
    manifest = _load_manifest(root)  # re-read: cheap, and keeps other entries
    manifest.setdefault("datasets", {})[layout.name] = {
        "params": params, "files": ds.files, "stored_bytes": ds.stored_bytes,
        "expected": ds.expected, "description": layout.description}
    _save_manifest(root, manifest)
    return ds


# --------------------------------------------------------------------------------------
# the loader operation's datasets

#: samples per batch of each loader workload
LOADER_TILES = 64  # (1, 256, 256) tiles of the tiles array
LOADER_ROWS = 1024  # sorted rows of the rows array
LOADER_ARRAYS = 50  # arrays of the regions group, the same region of each
LOADER_REGION = 256  # the region's side
LOADER_WORKLOADS = ("tiles", "rows", "regions")


@dataclass(frozen=True)
class LoaderSpec:
    """One loader workload's dataset: what :func:`loader_specs` makes for ``--size``.

    * ``tiles``: (N, 256, 256) uint16, one sample a (1, 256, 256) slice, stored in inner
      chunks of (1, 256, 256) (one sample each: what image and patch loaders store, so a
      sample decodes its own bytes only) in shards of (8, 256, 256) (1 MiB decoded per
      shard file);
    * ``rows``: (N, 128) uint16 in chunks of (1024, 128) (256 KiB), read as a gather of
      sorted rows;
    * ``regions``: a group of 50 (S, S) uint16 arrays in chunks of (256, 256), the same
      256 x 256 region (not chunk-aligned) read from each.

    Each is about ``--size`` bytes (the regions group in all); zstd level 1."""

    name: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None = None
    arrays: int = 0  # > 0: a group of this many arrays named a00, a01...

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * 2 * max(1, self.arrays)

    def members(self) -> list[str]:
        """The arrays' paths inside the dataset ("" for a lone array)."""
        return [f"a{k:02d}" for k in range(self.arrays)] if self.arrays else [""]

    def create_kwargs(self) -> dict[str, Any]:
        from zarrfast.codecs import BytesCodec, ZstdCodec

        kw: dict[str, Any] = {"shape": self.shape, "chunks": self.chunks, "dtype": "uint16",
                              "zarr_format": 3, "fill_value": 0,
                              "compressors": [ZstdCodec(level=1)],
                              "serializer": BytesCodec(endian="little"), "filters": None}
        if self.shards:
            kw["shards"] = self.shards
        return kw


def loader_specs(size: int) -> dict[str, LoaderSpec]:
    """The loader datasets for ``--size`` bytes (each about that size, with a floor that
    keeps every workload meaningful on tiny sizes)."""
    frame = 256 * 256 * 2
    n_tiles = max(16, round(size / frame / 8) * 8)
    n_rows = max(4 * LOADER_ROWS, round(size / 256 / 1024) * 1024)
    side = max(384, round(math.sqrt(size / LOADER_ARRAYS / 2) / 128) * 128)
    return {
        "tiles": LoaderSpec("tiles", (n_tiles, 256, 256), (1, 256, 256), (8, 256, 256)),
        "rows": LoaderSpec("rows", (n_rows, 128), (1024, 128)),
        "regions": LoaderSpec("regions", (side, side), (256, 256), arrays=LOADER_ARRAYS),
    }


def loader_values(k: int, sel: tuple[slice, ...]) -> np.ndarray:
    """The values of array ``k`` of a loader dataset (0 for a lone array): :func:`values`
    shifted by ``k``, so that the arrays of the regions group all differ."""
    v = values(sel)
    if k:
        v = ((v.astype(np.uint32) + np.uint32(1009 * k)) & np.uint32(0xFFFF)).astype(np.uint16)
    return v


def loader_path(root: str, spec: LoaderSpec) -> str:
    return os.path.join(root, f"loader-{spec.name}.zarr")


def _write_loader(spec: LoaderSpec, path: str) -> None:
    from zarrfast import create_array, create_group

    if spec.arrays:
        create_group(path, overwrite=True)
    unit = spec.shards or spec.chunks
    for k, member in enumerate(spec.members()):
        target = os.path.join(path, member) if member else path
        a = create_array(target, overwrite=True, **spec.create_kwargs())
        for block in _blocks(spec.shape, unit):
            a[block] = loader_values(k, block)


def prepare_loader(root: str, size: int, log: Any = None) -> dict[str, tuple[LoaderSpec, str,
                                                                             bool]]:
    """The loader datasets under ``root`` (``loader-tiles.zarr``, ``loader-rows.zarr``,
    ``loader-regions.zarr``): reused when the manifest has them with the same parameters
    and stored files, else written.  Returns name -> (spec, path, reused)."""
    out: dict[str, tuple[LoaderSpec, str, bool]] = {}
    for name, spec in loader_specs(size).items():
        path = loader_path(root, spec)
        params = json.loads(json.dumps({**asdict(spec), "generator": GENERATOR}))
        key = f"loader-{name}"
        entry = _load_manifest(root).get("datasets", {}).get(key)
        probe = Dataset(Layout(key, ""), spec.shape, path)
        if entry and entry.get("params") == params and os.path.isdir(path):
            files = probe.chunk_files()
            if (len(files) == entry.get("files")
                    and sum(s for _, s in files) == entry.get("stored_bytes")):
                out[name] = (spec, path, True)
                continue
        if log:
            from zarrfast.bench.report import human

            log(f"generating loader dataset {name}: "
                f"{f'{spec.arrays} arrays ' if spec.arrays else ''}{spec.shape} uint16 "
                f"({human(spec.nbytes)}) in {path}")
        shutil.rmtree(path, ignore_errors=True)
        _write_loader(spec, path)
        files = probe.chunk_files()
        manifest = _load_manifest(root)
        manifest.setdefault("datasets", {})[key] = {
            "params": params, "files": len(files), "stored_bytes": sum(s for _, s in files),
            "description": f"loader {name}"}
        _save_manifest(root, manifest)
        out[name] = (spec, path, False)
    return out
