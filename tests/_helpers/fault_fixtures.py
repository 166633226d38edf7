"""pytest fixtures of one :class:`FaultServer` per test module: ``server`` (started once
for the module) and ``served`` (that server, emptied of objects and faults before and
after the test).  A test module uses them by importing both names."""

from __future__ import annotations

import pytest

from _helpers.fault_http import FaultServer


@pytest.fixture(scope="module")
def server():
    s = FaultServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def served(server):
    """The server, emptied."""
    server.reset()
    server.objects.clear()
    yield server
    server.reset()
    server.objects.clear()
