"""What :func:`zarrfast.install_as_zarr` does: zarrfast under the name ``zarr``.

A module object named ``zarr`` (:class:`_ZarrModule`) is put in ``sys.modules``.  Its
attributes are zarrfast's (``zarr.Array is zarrfast.Array``), except ``__version__``,
which is the zarr-python API version zarrfast follows (:data:`ZARR_API_VERSION`), and
``__name__``.  A meta path finder (:class:`_ZarrFinder`, first in ``sys.meta_path``)
answers ``import zarr.<sub>`` with zarrfast's module of that name (``zarr.storage`` is
``zarrfast.storage``, ``zarr.abc.store`` is ``zarrfast.abc.store``), for the top-level
packages of zarr-python that zarrfast provides (:data:`ZARR_SUBPACKAGES`); it also
reports a ``zarr`` distribution of that version to ``importlib.metadata``, since some
libraries read the version there (anndata: ``importlib.metadata.version("zarr")``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from typing import Any

from zarrfast.concurrency import renew_after_fork

#: the zarr-python API version zarrfast follows: ``zarr.__version__`` once installed
ZARR_API_VERSION = "3.4.2"

#: zarr-python's top-level packages and modules that zarrfast provides under the same name
#: (``zarr.<name>`` is ``zarrfast.<name>``); zarrfast's own ones (``engine``, ``kernels``,
#: ``hierarchy``, ``xarray``...) stay out of ``zarr``, as zarr-python has none of them
ZARR_SUBPACKAGES = ("abc", "api", "codecs", "core", "dtype", "errors", "experimental",
                    "storage", "testing")

#: zarr-python modules found under another name in zarrfast: ``zarr.storage`` is zarrfast's
#: stores with a ``WrapperStore`` that takes zarr-python-style subclasses
#: (:mod:`zarrfast.core._storage`); pydantic-zarr imports ``make_store_path`` and
#: ``StoreLike`` from ``zarr.storage._common``
_RENAMED = {"zarr.buffer": "zarrfast.core.buffer", "zarr.buffer.cpu": "zarrfast.core.buffer.cpu",
            "zarr.storage": "zarrfast.core._storage",
            "zarr.storage._common": "zarrfast.core._storage"}

_lock = threading.RLock()
renew_after_fork(globals(), "_lock", threading.RLock)


class ZarrAlreadyImportedError(RuntimeError):
    """zarr-python was imported before :func:`zarrfast.install_as_zarr`; nothing changed."""


def _target(name: str) -> str | None:
    """The zarrfast module that stands for zarr module ``name``, or ``None``."""
    if name in _RENAMED:
        return _RENAMED[name]
    parts = name.split(".")
    if parts[0] != "zarr" or len(parts) < 2 or parts[1] not in ZARR_SUBPACKAGES:
        return None
    return "zarrfast." + ".".join(parts[1:])


class _ZarrModule(types.ModuleType):
    """``zarr``: zarrfast's namespace, with zarr-python's API version."""

    __version__: str
    __all__: list[str]
    __zarrfast__: types.ModuleType

    def __getattr__(self, name: str) -> Any:
        import zarrfast

        if f"zarr.{name}" not in _RENAMED:
            try:
                return getattr(zarrfast, name)
            except AttributeError:
                pass
        target = _target(f"zarr.{name}")
        if target is not None and not name.startswith("_"):
            try:
                return importlib.import_module(f"zarr.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != target:
                    raise
        raise AttributeError(f"module 'zarr' (zarrfast {zarrfast.__version__}, installed "
                             f"as zarr by zarrfast.install_as_zarr) has no attribute "
                             f"{name!r}")

    def __dir__(self) -> list[str]:
        import zarrfast

        return sorted(set(super().__dir__()) | set(dir(zarrfast)))


class _Alias(importlib.abc.Loader):
    """Loads ``zarr.<sub>`` as the already imported zarrfast module (its own ``__spec__``
    kept, so that zarrfast's module is unchanged)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.module: types.ModuleType | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        self.module = importlib.import_module(self.target)
        self.spec = self.module.__spec__
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set the alias's spec


class _ZarrDistribution(importlib.metadata.Distribution):
    """The ``zarr`` distribution ``importlib.metadata`` reports once installed."""

    def read_text(self, filename: str) -> str | None:
        if filename in ("METADATA", "PKG-INFO"):
            import zarrfast

            return (f"Metadata-Version: 2.1\nName: zarr\nVersion: {ZARR_API_VERSION}\n"
                    f"Summary: zarrfast {zarrfast.__version__} installed as zarr by "
                    f"zarrfast.install_as_zarr()\n")
        return None

    def locate_file(self, path: Any) -> Any:
        import pathlib

        import zarrfast

        return pathlib.Path(zarrfast.__file__).parent / str(path)


class _ZarrFinder(importlib.abc.MetaPathFinder):
    """Finds ``zarr.<sub>`` in zarrfast, and the ``zarr`` distribution."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("zarr."):
            return None
        name = _target(fullname)
        if name is None:
            return None
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(name))

    def find_distributions(self, context: Any = None) -> Iterator[importlib.metadata.Distribution]:
        import re

        name = getattr(context, "name", None)
        if name is None or re.sub(r"[-_.]+", "_", name).lower() == "zarr":
            yield _ZarrDistribution()


def _installed() -> bool:
    return isinstance(sys.modules.get("zarr"), _ZarrModule)


def install() -> None:
    """Put zarrfast under the name ``zarr``; see :func:`zarrfast.install_as_zarr`."""
    import zarrfast

    with _lock:
        if _installed():
            return
        real = sys.modules.get("zarr")
        if real is not None or any(name.startswith("zarr.") for name in sys.modules):
            where = getattr(real, "__file__", None) or "its submodules"
            raise ZarrAlreadyImportedError(
                f"zarrfast.install_as_zarr(): zarr-python ({where}, version "
                f"{getattr(real, '__version__', '?')}) was already imported, so objects of "
                f"it may exist and libraries may hold it; nothing was changed.  Call "
                f"zarrfast.install_as_zarr() first, before importing any library that "
                f"imports zarr (anndata, ome_zarr, spatialdata, ...)")
        module = _ZarrModule("zarr", "zarrfast installed as zarr by "
                                     "zarrfast.install_as_zarr() (zarr-python API "
                                     f"{ZARR_API_VERSION}); see zarrfast's docs")
        module.__version__ = ZARR_API_VERSION
        module.__file__ = zarrfast.__file__
        module.__path__ = []  # a package: ``import zarr.storage`` asks the finders
        module.__spec__ = importlib.machinery.ModuleSpec("zarr", None, is_package=True)
        module.__spec__.submodule_search_locations = []
        module.__all__ = list(zarrfast.__all__)
        module.__zarrfast__ = zarrfast
        finder = _ZarrFinder()
        sys.meta_path.insert(0, finder)
        sys.modules["zarr"] = module
        # zarrfast's modules imported already, under their zarr names
        for name, mod in list(sys.modules.items()):
            if name.startswith("zarrfast.") and mod is not None:
                for alias in _zarr_names(name):
                    sys.modules.setdefault(alias, mod)
        importlib.invalidate_caches()


def _zarr_names(name: str) -> list[str]:
    """The zarr module names that zarrfast module ``name`` stands for."""
    names = [alias for alias, target in _RENAMED.items() if name == target
             and alias.rpartition(".")[0] in sys.modules]  # (its package aliased first)
    parts = name.split(".")
    if len(parts) >= 2 and parts[1] in ZARR_SUBPACKAGES:
        alias = "zarr." + ".".join(parts[1:])
        if alias not in _RENAMED:  # (zarr.storage is not zarrfast.storage)
            names.append(alias)
    return names
