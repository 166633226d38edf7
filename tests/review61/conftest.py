"""The review of session 61's branches (h61/coldreg, coldbox, warmreg, rrows3, writes61).

Run a file against a branch's tree with ``python -P`` (no working directory on
``sys.path``, so that ``zarrfast`` comes from ``PYTHONPATH``, not from this tree)::

    PYTHONPATH=/path/to/their/tree python -P -m pytest -q -p no:cacheprovider -n 0 \\
        tests/review61/test_<name>.py

The header of the run names the ``zarrfast`` it imported.  ``server``/``served``: the
fault-injecting HTTP server of the reviews' remote tests."""

import zarrfast

from _helpers.fault_fixtures import served, server  # noqa: F401  (fixtures)


def pytest_report_header(config):
    return f"review61: zarrfast from {zarrfast.__file__}"
