"""What the array tests share: running with the compiled kernels or their NumPy twins,
byte-exact comparison, random data of any dtype, chunk keys and metadata documents in a
store, and named codec chains.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar
from unittest import mock

import numpy as np

import zarrfast
from zarrfast import kernels as _kernels
from zarrfast.codecs import (
    ArrayArrayCodec,
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
    registry,
)
from zarrfast.kernels import reference as _reference

KERNEL_NAMES = [n for n in _kernels.__all__ if n != "USING_EXTENSIONS"]


@contextlib.contextmanager
def kernels(impl: str) -> Iterator[None]:
    """Run with the compiled kernels (``"compiled"``) or the NumPy twins (``"pure"``)."""
    if impl == "compiled":
        yield
        return
    with mock.patch.multiple(_kernels, **{n: getattr(_reference, n) for n in KERNEL_NAMES}):
        yield


def same(actual: Any, expected: Any) -> None:
    """Same shape, dtype and bytes (so NaN payloads and -0.0 count)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    assert a.tobytes() == e.tobytes(), f"\n{a!r}\n!=\n{e!r}"


def random_data(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    if dtype.kind == "b":
        out = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = rng.integers(int(info.min), int(info.max), n, endpoint=True,
                           dtype=dtype.newbyteorder("=")).astype(dtype)
    elif dtype.kind == "f":
        out = (rng.standard_normal(n) * 100).astype(dtype)
    elif dtype.kind == "c":
        out = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:  # raw bytes
        out = np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype).copy()
    return out.reshape(shape)


def chunk_keys(store: zarrfast.Store, prefix: str = "") -> list[str]:
    return sorted(k for k in store.list_prefix(prefix) if not k.endswith("zarr.json"))


@dataclass(frozen=True)
class FlipLastAxis(ArrayArrayCodec):
    """A third-party array -> array codec (unregistered): forces the general codec path."""

    name: ClassVar[str] = "test.flip_last_axis"

    @classmethod
    def from_dict(cls, data: Any) -> FlipLastAxis:
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        return chunk[..., ::-1] if chunk.ndim else chunk

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return chunk[..., ::-1] if chunk.ndim else chunk


@contextlib.contextmanager
def flip_registered() -> Iterator[None]:
    """Make ``FlipLastAxis`` known to the registry for the duration (so arrays using it
    can be reopened) without leaving it registered for other tests."""
    with mock.patch.dict(registry._registry, {FlipLastAxis.name: FlipLastAxis}):
        yield


def codec_config(name: str, ndim: int) -> dict[str, Any]:
    """Keyword arguments of ``create_array`` for a named codec chain."""
    rev = tuple(reversed(range(ndim)))
    rot = tuple(range(1, ndim)) + (0,) if ndim else ()
    return {
        "default": {},
        "raw": {"compressors": None},
        "big": {"serializer": BytesCodec(endian="big"), "compressors": None},
        "transpose": {"filters": [TransposeCodec(order=rev)], "compressors": None},
        "two_transposes_big_gzip_crc": {
            "filters": [TransposeCodec(order=rot), TransposeCodec(order=rev)],
            "serializer": BytesCodec(endian="big"),
            "compressors": [GzipCodec(level=1), Crc32cCodec()],
        },
        "blosc": {"compressors": [BloscCodec(cname="lz4", clevel=1)]},
        "zstd_crc": {"compressors": [ZstdCodec(level=1), Crc32cCodec()]},
        "general": {"filters": [FlipLastAxis()], "serializer": BytesCodec(endian="big"),
                    "compressors": [GzipCodec(level=1)]},
    }[name]


def full_fill(shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    out[...] = fill
    return out


IMPLS = ["compiled", "pure"]


def node_doc(store: zarrfast.Store, path: str) -> dict | None:
    raw = store.get(f"{path}/zarr.json" if path else "zarr.json")
    return None if raw is None else json.loads(raw)


def metadata_keys(store: zarrfast.Store) -> list[str]:
    return sorted(k for k in store.list() if k.endswith("zarr.json"))
