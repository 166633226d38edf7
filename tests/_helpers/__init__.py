"""Helpers shared by test modules (fixtures live in the ``conftest.py`` files).

``tests/conftest.py`` puts ``tests/`` on ``sys.path``: import these as
``from _helpers import ...`` (or ``from _helpers.<topic> import ...``).  Paths into the
repository are derived from this file, never from the working directory.
"""

from __future__ import annotations

from pathlib import Path

#: the ``tests/`` folder
TESTS = Path(__file__).resolve().parent.parent
#: the repository root (``pyproject.toml``, ``MANIFEST.in``, ``tools/``)
ROOT = TESTS.parent
#: data written by other libraries (``tests/fixtures/``)
FIXTURES = TESTS / "fixtures"
