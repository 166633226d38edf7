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


def atomic_conditional_writes() -> None:
    """Make the conditional PUTs of moto's S3 servers in this process atomic, as S3's are.

    moto 5.2 checks ``If-Match`` / ``If-None-Match`` and then stores the object as two
    steps of a request thread, with nothing held between them: two PUTs conditional on
    the same ETag can both be granted (seen 5 times in 300 pairs with a fine GIL switch
    interval, and once in CI as an inner chunk lost by processes sharing a shard).  AWS
    makes the check and the write one step, so writers that rely on it (zarrfast's shard
    writes without a shared lock) lose nothing there.  This holds one lock across moto's
    whole PUT handler, so the threaded test servers grant what S3 grants.  Idempotent.
    """
    import threading

    from moto.s3.responses import S3Response

    put = S3Response.put_object
    if getattr(put, "_zarrfast_atomic", False):
        return
    lock = threading.Lock()

    def put_object(self, *args, **kwargs):
        with lock:
            return put(self, *args, **kwargs)

    put_object._zarrfast_atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]
