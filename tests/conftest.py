"""Fixtures shared by the whole suite.  (A layer's folder gets its own ``conftest.py``
when several of its modules share a fixture; none does today.)

* ``store``: an empty store, once a ``MemoryStore`` and once a ``LocalStore``;
* ``subprocess_cwd``: an empty temporary directory to run child Pythons in;
* ``zarr_peer``: zarr-python 3.4 in a Python 3.12 venv of its own (``_helpers.zarr_peer``);
* ``s3_server``: a real S3 server (moto's, over HTTP on loopback) for the remote store
  tests.  Clients talk to it through s3fs/botocore exactly as they would to AWS.

Helpers that are not fixtures live in the ``_helpers`` package next to this file; this
module puts ``tests/`` on ``sys.path`` so test modules import them as ``_helpers...``
whatever the working directory and the import mode.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import zarrfast

TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from _helpers.s3 import FAKE_KEY, FAKE_SECRET, atomic_conditional_writes, free_port  # noqa: E402 - (tests/ on the path)


@pytest.fixture(autouse=True)
def _cores_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as on a machine whose cores are free: the check of other work on
    the cores (``zarrfast.concurrency.cores_contended``: box reads decode in the calling
    thread alone, writes at one thread use no I/O thread) would make how many threads a
    read or a write uses depend on what else runs on the machine.  The tests of that
    check turn it on for themselves (``tests/engine/test_box_contention.py``,
    ``test_write_behind.py``)."""
    from zarrfast import concurrency

    monkeypatch.setattr(concurrency, "CONTENTION_GATE", False)


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> zarrfast.Store:
    if request.param == "memory":
        return zarrfast.MemoryStore()
    return zarrfast.LocalStore(tmp_path / "data.zarr")


@pytest.fixture(scope="session")
def zarr_peer():
    """zarr-python 3.4, run in a child Python 3.12 (skips when there is none)."""
    from _helpers.zarr_peer import get_zarr_peer

    return get_zarr_peer()


@pytest.fixture
def subprocess_cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty temporary directory for ``cwd=`` of child Pythons.

    ``python -c`` and ``python -m`` put their working directory first on ``sys.path``:
    started from a source checkout they would import its ``zarrfast`` (perhaps without
    compiled kernels) instead of the installed package under test.  Never put the source
    tree on ``PYTHONPATH`` either.
    """
    return tmp_path_factory.mktemp("cwd")


# (fake credentials, FAKE_KEY and FAKE_SECRET: moto accepts any; real ones in the
# environment are never used)


@dataclass(frozen=True)
class S3Server:
    """A running S3 endpoint and a bucket on it."""

    endpoint_url: str
    bucket: str

    def storage_options(self, endpoint_url: str | None = None) -> dict:
        """The ``storage_options`` that reach this server (or a proxy in front of it)."""
        return {
            "endpoint_url": endpoint_url or self.endpoint_url,
            "key": FAKE_KEY,
            "secret": FAKE_SECRET,
            "client_kwargs": {"region_name": "us-east-1"},
        }

    def url(self, name: str | None = None) -> str:
        """A fresh ``s3://`` URL in the bucket (unique unless ``name`` is given)."""
        return f"s3://{self.bucket}/{name or uuid.uuid4().hex}"

    def boto3_client(self):
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, aws_access_key_id=FAKE_KEY,
            aws_secret_access_key=FAKE_SECRET, region_name="us-east-1",
        )




@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, with one bucket, for the session."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    atomic_conditional_writes()  # as S3's: moto's are a check, then a write
    saved = {k: os.environ.get(k) for k in
             ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=FAKE_KEY, AWS_SECRET_ACCESS_KEY=FAKE_SECRET,
                      AWS_DEFAULT_REGION="us-east-1")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        bucket = "zarrfast-test"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=bucket)
        yield S3Server(endpoint, bucket)
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
