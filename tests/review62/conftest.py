"""The review of session 62's branches (h62/coldreg2, coldbox2, warm62, writes62).

Run a file against a branch's tree with ``python -P`` (no working directory on
``sys.path``, so that ``zarrfast`` comes from ``PYTHONPATH``, not from this tree)::

    PYTHONPATH=/path/to/their/tree python -P -m pytest -q -p no:cacheprovider -n 0 \\
        tests/review62/test_<name>.py

The header of the run names the ``zarrfast`` it imported."""

import zarrfast


def pytest_report_header(config):
    return f"review62: zarrfast from {zarrfast.__file__}"
