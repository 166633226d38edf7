"""The fault-injecting HTTP server of these reviews' remote tests, one per test module
(``server``, and ``served``: emptied around each test)."""

from _helpers.fault_fixtures import served, server  # noqa: F401  (fixtures)
