"""The public names of zarrfast: what the API reference renders and the docstring
tests check (``tests/docs``)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator

PUBLIC_MODULES = (
    "zarrfast",
    "zarrfast.storage",
    "zarrfast.codecs",
    "zarrfast.errors",
    "zarrfast.xarray",
    "zarrfast.dask",
    "zarrfast.geozarr",
    "zarrfast.testing",
    "zarrfast.zarr_python",
)


def _public() -> Iterator[tuple[str, object, type | None]]:
    """(qualified name, object, owning class or None) of every public name, once."""
    seen: set[int] = set()
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not (callable(obj) or inspect.ismodule(obj)):
                continue
            seen.add(id(obj))
            yield f"{modname}.{name}", obj, None
            if inspect.isclass(obj):
                yield from _members(f"{modname}.{name}", obj, seen)


def _members(qualname: str, cls: type, seen: set[int]) -> Iterator[tuple[str, object, type]]:
    for base in cls.__mro__:
        if not base.__module__.startswith("zarrfast"):
            continue
        for name, raw in vars(base).items():
            if name.startswith("_") and name != "__call__":
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                key = raw.__func__
            elif isinstance(raw, property):
                key = raw.fget
            elif inspect.isfunction(raw):
                key = raw
            else:
                continue
            if id(key) in seen:
                continue
            # a method is checked once, where it is defined, whichever class shows it
            seen.add(id(key))
            yield f"{qualname}.{name}", raw, cls


def public_names() -> list[tuple[str, object, type | None]]:
    """Every public name, once: (qualified name, object, owning class or None)."""
    return list(_public())
