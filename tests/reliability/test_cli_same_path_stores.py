"""Issue 41, class 2 (review): ``convert`` (and so ``zarrfast copy``/``convert``) knows
where every kind of store is, so that no spelling of the source as a destination
destroys it.

* In-memory sources and destinations (a ``dict``, zarrfast's ``MemoryStore``) convert; the
  same memory store twice is refused.
* zarr-python's stores (``LocalStore``, ``ZipStore``, ``FsspecStore``, ``ObjectStore``,
  wrapped in its ``LoggingStore``) are compared by where they keep their data, not as
  objects: one naming the source is refused before anything is deleted.
* Remote URLs spelled another way (``az://`` / ``abfs://`` / ``abfss://`` / ``azure://``,
  an account in the URL, S3's ``https://`` virtual-hosted and path-style forms with and
  without a region) name the same place; an explicit endpoint is compared too (the same
  server under two host names is one place, two servers are two).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast.convert import SourceOverlapError, check_distinct
from zarrfast.storage import MemoryStore

from _helpers.files import file_bytes as _files

zarr = pytest.importorskip("zarr")




def _make_source(path) -> None:
    g = zarrfast.open_group(str(path), mode="w", attributes={"title": "source"})
    g.create_array("a", shape=(8,), chunks=(2,), dtype="i4")[...] = np.arange(8)
    g.create_group("sub").create_array("b", shape=(4,), chunks=(2,), dtype="f8")[...] = 1.5


# -- 1. memory ------------------------------------------------------------------------------


def _memory_source():
    g = zarrfast.open_group(MemoryStore(), mode="w")
    g.create_array("x", shape=(6,), chunks=(2,), dtype="u1")[...] = np.arange(6, dtype="u1")
    return g


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_memory_sources_and_destinations_convert(tmp_path, zarr_format):
    src = _memory_source()
    outs = [
        zarrfast.convert(src, str(tmp_path / "out.zarr"), zarr_format=zarr_format,
                         progress=False),
        zarrfast.convert(src, MemoryStore(), zarr_format=zarr_format, progress=False),
        zarrfast.convert(src, {}, zarr_format=zarr_format, progress=False),
        zarrfast.convert(src.store, str(tmp_path / "from_store.zarr"),
                         zarr_format=zarr_format, progress=False),
        zarrfast.convert(src["x"], MemoryStore(), zarr_format=zarr_format, progress=False),
    ]
    for out in outs:
        got = out["x"] if isinstance(out, zarrfast.Group) else out
        assert got.metadata.zarr_format == zarr_format
        np.testing.assert_array_equal(got[...], np.arange(6))


def test_the_same_memory_store_is_refused():
    src = _memory_source()
    same = [src.store, MemoryStore(src.store._store_dict), src.store._store_dict]
    for dst in same:
        with pytest.raises(SourceOverlapError, match="source"):
            zarrfast.convert(src, dst, overwrite=True, progress=False)
        with pytest.raises(SourceOverlapError, match="inside"):
            zarrfast.convert(src, dst, dst_path="x/inner", progress=False)
    np.testing.assert_array_equal(src["x"][...], np.arange(6))


# -- 2. zarr-python's stores ----------------------------------------------------------------


def _zarr_python_stores(root: str, zpath: str) -> list:
    import obstore.store

    s = zarr.storage
    return [
        ("LocalStore", root, lambda: s.LocalStore(root)),
        ("LocalStore-inside", root, lambda: s.LocalStore(os.path.join(root, "sub"))),
        ("LoggingStore", root, lambda: s.LoggingStore(s.LocalStore(root))),
        ("FsspecStore", root, lambda: s.FsspecStore.from_url(f"file://{root}")),
        ("ObjectStore", root, lambda: s.ObjectStore(obstore.store.LocalStore(root))),
        ("ZipStore", zpath, lambda: s.ZipStore(zpath, mode="a")),
    ]


def test_zarr_python_stores_naming_the_source_are_refused(tmp_path):
    root, zpath = str(tmp_path / "S"), str(tmp_path / "S.zip")
    _make_source(root)
    zarrfast.convert(root, zpath, progress=False).store.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's ZipStore: duplicate names on overwrite
        for name, src, make in _zarr_python_stores(root, zpath):
            before = _files(src)
            dst = make()
            try:
                with pytest.raises(SourceOverlapError, match="destination") as e:
                    zarrfast.convert(src, dst, overwrite=True, progress=False)
            finally:
                if name == "ZipStore":
                    dst.close()
            assert "source" in str(e.value), name
            assert _files(src) == before, name  # every chunk still there
    np.testing.assert_array_equal(zarrfast.open_array(root, path="a", mode="r")[...],
                                  np.arange(8))


def test_zarr_python_stores_elsewhere_are_written(tmp_path):
    """The other half: a zarr-python store that is not the source is written as before,
    and one store object given twice (whose place is unknown: a zarr MemoryStore) is
    refused."""
    root = str(tmp_path / "S")
    _make_source(root)
    out = zarrfast.convert(root, zarr.storage.LocalStore(str(tmp_path / "D")),
                           progress=False)
    np.testing.assert_array_equal(out["a"][...], np.arange(8))
    mem = zarr.storage.MemoryStore()
    zarrfast.convert(root, mem, progress=False)
    with pytest.raises(SourceOverlapError):
        zarrfast.convert(mem, mem, overwrite=True, progress=False)
    np.testing.assert_array_equal(zarrfast.open_array(mem, path="a", mode="r")[...],
                                  np.arange(8))


# -- 3. remote URLs spelled two ways --------------------------------------------------------

SAME_PLACE = [
    ("az://c/S", "abfs://c/S"),
    ("az://c/S", "abfss://c/S/"),
    ("az://c/S", "azure://c/S"),
    ("abfs://c/S", "abfs://c@acct.dfs.core.windows.net/S"),
    ("az://c/S", "https://acct.blob.core.windows.net/c/S"),
    ("abfs://c@acct.dfs.core.windows.net/S", "https://acct.blob.core.windows.net/c/S/x"),
    ("s3://b/S", "https://b.s3.amazonaws.com/S"),
    ("s3://b/S", "https://b.s3.us-east-1.amazonaws.com/S/"),
    ("s3://b/S", "https://s3.amazonaws.com/b/S"),
    ("s3://b/S", "https://s3.us-west-2.amazonaws.com/b/S/inner"),
    ("s3a://b.with.dots/S", "https://b.with.dots.s3-us-west-2.amazonaws.com/S"),
    ("gs://b/S", "https://storage.googleapis.com/b/S"),
    ("gcs://b/S", "https://b.storage.googleapis.com/S"),
    ("simplecache::s3://b/S", "https://B.S3.AMAZONAWS.COM/S"),
]

APART = [
    ("az://c/S", "az://d/S"),
    ("abfs://c@acct.dfs.core.windows.net/S", "abfs://c@other.dfs.core.windows.net/S"),
    ("s3://b/S", "https://c.s3.amazonaws.com/S"),
    ("s3://b/S", "https://s3.amazonaws.com/c/S"),
    ("s3://b/S", "gs://b/S"),
    ("s3://b/S", "https://example.com/b/S"),
]


@pytest.mark.parametrize("src, dst", SAME_PLACE)
def test_remote_spellings_of_one_place_are_refused(src, dst):
    for a, b in ((src, dst), (dst, src)):
        with pytest.raises(SourceOverlapError, match="source") as e:
            check_distinct(a, b, what="copy")
        assert a in str(e.value) and b in str(e.value)


@pytest.mark.parametrize("src, dst", APART)
def test_remote_places_that_differ_are_apart(src, dst):
    check_distinct(src, dst, what="copy")
    check_distinct(dst, src, what="copy")


def test_endpoints_are_compared():
    """Options naming the server: two servers are two places; the same server (under
    another host name) is one; an endpoint on one side only may be the other's default:
    refused, the safe side."""
    e1 = {"endpoint_url": "http://127.0.0.1:9000"}
    e1_named = {"client_kwargs": {"endpoint_url": "http://localhost:9000/"}}
    e2 = {"endpoint_url": "http://127.0.0.1:9001"}
    url = "s3://b/S"
    check_distinct(url, url, src_options=e1, dst_options=e2)
    for so, do in ((e1, e1), (e1, e1_named), (e1, None), (None, e2),
                   ({"endpoint": "http://127.0.0.1:9000"}, e1)):
        with pytest.raises(SourceOverlapError):
            check_distinct(url, url, src_options=so, dst_options=do)
    # an Azure account in the options is the account of a URL without one
    check_distinct("az://c/S", "abfs://c@other.dfs.core.windows.net/S",
                   src_options={"account_name": "acct"})
    with pytest.raises(SourceOverlapError):
        check_distinct("az://c/S", "abfs://c@acct.dfs.core.windows.net/S",
                       src_options={"account_name": "acct"})


@pytest.fixture
def second_s3_server(tmp_path):
    """Another S3 server, in its own process (moto's servers in one process share their
    buckets: they would be one place)."""
    pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    from _helpers.s3 import FAKE_KEY, FAKE_SECRET, free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=tmp_path)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_SECRET)
    try:
        for _ in range(600):  # until it answers (or the process ended)
            try:
                client.list_buckets()
                break
            except Exception:
                if proc.poll() is not None:
                    pytest.skip("moto's server did not start")
                time.sleep(0.05)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_same_bucket_on_another_server_is_copied(s3_server, second_s3_server,
                                                     subprocess_cwd):
    """``zarrfast copy s3://b/S s3://b/S`` with two endpoints copies between the two
    servers; with one server under two host names it is refused and the source kept."""
    import json

    import boto3

    from _helpers.s3 import FAKE_KEY, FAKE_SECRET

    boto3.client("s3", endpoint_url=second_s3_server, region_name="us-east-1",
                 aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_SECRET
                 ).create_bucket(Bucket=s3_server.bucket)
    url = s3_server.url()
    opts1 = s3_server.storage_options()
    src = zarrfast.create_array(url, shape=(6,), chunks=(2,), dtype="i2",
                                storage_options=opts1)
    src[...] = np.arange(6, dtype="i2")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": FAKE_KEY, "AWS_SECRET_ACCESS_KEY": FAKE_SECRET}
    same = s3_server.storage_options(s3_server.endpoint_url.replace("127.0.0.1",
                                                                    "localhost"))
    other = s3_server.storage_options(second_s3_server)
    p = subprocess.run([sys.executable, "-m", "zarrfast", "copy", url, url, "--quiet",
                        "--overwrite", "--src-storage-options", json.dumps(opts1),
                        "--dst-storage-options", json.dumps(same)],
                       capture_output=True, text=True, cwd=subprocess_cwd, env=env,
                       timeout=300, check=False)
    assert p.returncode == 2 and "source" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "zarrfast", "copy", url, url, "--quiet",
                        "--src-storage-options", json.dumps(opts1),
                        "--dst-storage-options", json.dumps(other)],
                       capture_output=True, text=True, cwd=subprocess_cwd, env=env,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    got = zarrfast.open_array(url, mode="r", storage_options=other)
    np.testing.assert_array_equal(got[...], np.arange(6))
    np.testing.assert_array_equal(
        zarrfast.open_array(url, mode="r", storage_options=opts1)[...], np.arange(6))
