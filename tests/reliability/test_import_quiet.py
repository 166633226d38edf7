"""Importing zarrfast prints nothing (issue 41, class 9).

numcodecs warns ``DeprecationWarning: crc32c usage is deprecated`` when it finds the
``crc32c`` package (a dependency of zarrfast) but not ``google_crc32c`` -- the state of
a machine where only zarrfast's own dependencies are installed.  It also puts its own
``once`` filter for that warning first in ``warnings.filters``, so neither ``-W error``
nor ``-W ignore`` reach it: every ``import zarrfast`` printed it, and the user could not
turn it off.  These tests import zarrfast in child Pythons, once as this environment is
and once without ``google_crc32c`` (hidden through ``sys.modules``, as the import system
honours), under ``-W default``, ``-W error`` and ``-W error::DeprecationWarning``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = ["zarrfast", "zarrfast.storage", "zarrfast.codecs", "zarrfast.xarray",
           "zarrfast.dask"]
#: the child's first line: the machine has no google_crc32c (find_spec returns None)
NO_GOOGLE_CRC32C = "import sys; sys.modules['google_crc32c'] = None\n"
ENVIRONMENTS = {"as installed": "", "without google_crc32c": NO_GOOGLE_CRC32C}


def _run(code: str, *flags: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("flag", ["error::DeprecationWarning", "error", "default"])
def test_importing_zarrfast_prints_nothing(module, environment, flag, subprocess_cwd):
    code = ENVIRONMENTS[environment] + f"import {module}\nprint('imported')\n"
    r = _run(code, "-W", flag, cwd=subprocess_cwd)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "imported\n"
    assert r.stderr == ""


@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
def test_importing_zarrfast_leaves_the_warning_filters_alone(environment, subprocess_cwd):
    """numcodecs' own filter for its crc32c warning stays out of the user's filters:
    ``import zarrfast`` changes nothing in ``warnings.filters``."""
    code = ENVIRONMENTS[environment] + (
        "import warnings\n"
        "before = list(warnings.filters)\n"
        "import zarrfast\n"
        "after = list(warnings.filters)\n"
        "print([f for f in after if f not in before])\n")
    r = _run(code, "-W", "default", cwd=subprocess_cwd)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n"


@pytest.mark.parametrize("environment", list(ENVIRONMENTS))
def test_the_users_own_warnings_still_show(environment, subprocess_cwd):
    """Only the import is quiet: a DeprecationWarning of the user's code after it still
    shows under ``-W default`` and still raises under ``-W error``."""
    code = ENVIRONMENTS[environment] + (
        "import warnings\n"
        "import zarrfast\n"
        "warnings.warn('the users own warning', DeprecationWarning)\n")
    shown = _run(code, "-W", "default", cwd=subprocess_cwd)
    assert shown.returncode == 0, shown.stderr
    assert "DeprecationWarning: the users own warning" in shown.stderr
    assert "crc32c" not in shown.stderr
    raised = _run(code, "-W", "error", cwd=subprocess_cwd)
    assert raised.returncode == 1
    assert "DeprecationWarning: the users own warning" in raised.stderr


def test_the_users_own_import_of_numcodecs_first_still_warns(subprocess_cwd):
    """A program that imports numcodecs itself before zarrfast gets numcodecs' warning
    from its own import, as without zarrfast (zarrfast only avoids triggering it)."""
    code = NO_GOOGLE_CRC32C + "import numcodecs\nimport zarrfast\n"
    r = _run(code, "-W", "default", cwd=subprocess_cwd)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("crc32c usage is deprecated") == 1
