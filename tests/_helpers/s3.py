"""The fake credentials of the test S3 servers (moto) and a free loopback port: shared by
``tests/conftest.py``'s fixtures and tests that start servers of their own (imported from
here: ``from conftest import`` finds whichever ``conftest`` module was imported first)."""

from __future__ import annotations

import socket

FAKE_KEY = "testing-key"
FAKE_SECRET = "testing-secret"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
