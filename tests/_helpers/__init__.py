"""Helpers shared by test modules (fixtures live in ``conftest.py``); topic modules next
to this one hold what only some tests use.

``tests/conftest.py`` puts ``tests/`` on ``sys.path``: import these as
``from _helpers import ...`` (or ``from _helpers.<topic> import ...``).  Paths into the
repository are derived from this file, never from the working directory.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

#: the ``tests/`` folder
TESTS = Path(__file__).resolve().parent.parent
#: the repository root (``pyproject.toml``, ``MANIFEST.in``, ``tools/``)
ROOT = TESTS.parent
#: data written by other libraries (``tests/fixtures/``)
FIXTURES = TESTS / "fixtures"

#: the ``bytes`` codec, little endian (a Zarr v3 codec document)
LE = {"name": "bytes", "configuration": {"endian": "little"}}


def seed_of(*parts: Any) -> int:
    """A stable seed for random data, derived from what names a case."""
    return zlib.crc32(repr(parts).encode())


def object_array(values: Any, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of ``values`` (strings, bytes, arrays... kept as they are)."""
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out.reshape(shape)
