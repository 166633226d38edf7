"""One hostile key must not make a bucket unlistable (issue 41, class 7).

S3 keys are any strings: ``grp.zarr/../zarr.json``, ``grp.zarr//zarr.json`` and
``grp.zarr/./zarr.json`` are valid S3 keys that no Zarr node can have.  Rust's
``object_store`` (under obstore) refuses a whole page of a listing holding one of them
(``InvalidPathError``), so ``members()`` of the group, ``list``, ``list_prefix`` and
``list_dir`` failed entirely.  The fsspec store skips such keys and lists the rest; the
obstore store must do the same, and leave the hostile key where it is.

The keys are put with boto3 straight into a real S3 server (moto on loopback), then
listed through ``zarrfast.storage.ObjectStore``.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

pytest.importorskip("obstore")

import zarrfast  # noqa: E402
from zarrfast.storage import ObjectStore  # noqa: E402

#: keys no node can have, relative to the bucket folder that holds ``grp.zarr``
HOSTILE = {
    "dot-dot": "grp.zarr/../zarr.json",
    "dot-dot below": "grp.zarr/sub/../zarr.json",
    "empty segment": "grp.zarr//zarr.json",
    "empty segment below": "grp.zarr/sub//c/0",
    "dot": "grp.zarr/./zarr.json",
}


@pytest.fixture
def s3_options(s3_server):
    return {"endpoint": s3_server.endpoint_url, "access_key_id": "testing-key",
            "secret_access_key": "testing-secret", "region": "us-east-1",
            "client_options": {"allow_http": True}}


def _hierarchy(s3_server, s3_options):
    """A group ``grp.zarr`` (arrays ``a`` and ``sub/x``) in a fresh folder of the
    bucket; returns the folder, the store and the keys written."""
    folder = uuid.uuid4().hex
    store = ObjectStore.from_url(f"s3://{s3_server.bucket}/{folder}/grp.zarr", s3_options)
    g = zarrfast.open_group(store, mode="w")
    a = g.create_array("a", shape=(6,), chunks=(3,), dtype="i4")
    a[:] = np.arange(6)
    x = g.create_group("sub").create_array("x", shape=(4,), chunks=(2,), dtype="f8")
    x[:] = 1.5
    return folder, store, sorted(store.list())


def _put(s3_server, key: str) -> None:
    s3_server.boto3_client().put_object(Bucket=s3_server.bucket, Key=key, Body=b"{}")


def _bucket_keys(s3_server, folder: str) -> list[str]:
    pages = s3_server.boto3_client().get_paginator("list_objects_v2").paginate(
        Bucket=s3_server.bucket, Prefix=folder + "/")
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_key_leaves_the_real_members_listed(s3_server, s3_options, hostile):
    folder, store, keys = _hierarchy(s3_server, s3_options)
    _put(s3_server, f"{folder}/{HOSTILE[hostile]}")

    assert sorted(store.list()) == keys
    assert sorted(store.list_prefix("sub/")) == [k for k in keys if k.startswith("sub/")]
    assert sorted(store.list_prefix("")) == keys
    assert sorted(store.list_dir("")) == ["a", "sub", "zarr.json"]
    assert sorted(store.list_dir("sub")) == ["x", "zarr.json"]

    g = zarrfast.open_group(store, mode="r")
    assert sorted(name for name, _ in g.members()) == ["a", "sub"]
    assert sorted(name for name, _ in g.members(max_depth=None)) == ["a", "sub", "sub/x"]
    assert np.array_equal(g["a"][:], np.arange(6))
    assert np.array_equal(g["sub/x"][:], np.full(4, 1.5))
    # nothing was lost: the hostile key is still in the bucket, next to the real ones
    assert f"{folder}/{HOSTILE[hostile]}" in _bucket_keys(s3_server, folder)


def test_many_hostile_keys_among_many_real_ones(s3_server, s3_options):
    """Hostile keys spread over the listing (before, among and after the real keys,
    in more than one page of 1000): every real key is listed once."""
    folder, store, _ = _hierarchy(s3_server, s3_options)
    g = zarrfast.open_group(store, mode="r+")
    big = g.create_array("big", shape=(1200,), chunks=(1,), dtype="u1",
                         compressors=None)
    big[:] = np.arange(1200) % 251 + 1  # no chunk of fill: 1200 chunk keys
    keys = sorted(store.list())
    assert len(keys) > 1200
    for hostile in ("grp.zarr/../zarr.json", "grp.zarr/big/c//7", "grp.zarr/big/c/./0",
                    "grp.zarr/big/c/999/../1", "grp.zarr/zz//x"):
        _put(s3_server, f"{folder}/{hostile}")

    assert sorted(store.list()) == keys
    assert len(list(store.list_prefix("big/c/"))) == 1200
    g = zarrfast.open_group(store, mode="r")
    assert sorted(name for name, _ in g.members()) == ["a", "big", "sub"]
    assert np.array_equal(g["big"][:], np.arange(1200) % 251 + 1)


def test_delete_dir_below_a_hostile_key_deletes_the_real_keys(s3_server, s3_options):
    """``delete_dir`` lists before it deletes: it deletes every real key of the node
    and leaves the hostile key (which is no key of the store) alone."""
    folder, store, keys = _hierarchy(s3_server, s3_options)
    _put(s3_server, f"{folder}/grp.zarr/sub//zarr.json")
    store.delete_dir("sub")
    assert sorted(store.list()) == [k for k in keys if not k.startswith("sub/")]
    assert f"{folder}/grp.zarr/sub//zarr.json" in _bucket_keys(s3_server, folder)


def test_without_botocore_the_error_names_the_key_and_the_way_out(s3_server, s3_options,
                                                                   monkeypatch):
    """zarrfast lists past such a key with botocore; where it is not installed the
    listing fails naming the key and what to do (not obstore's bare parse error)."""
    import sys

    from zarrfast.storage.errors import RemoteStoreError

    folder, store, _ = _hierarchy(s3_server, s3_options)
    _put(s3_server, f"{folder}/grp.zarr/../zarr.json")
    fresh = ObjectStore.from_url(f"s3://{s3_server.bucket}/{folder}/grp.zarr", s3_options)
    monkeypatch.setitem(sys.modules, "botocore", None)
    with pytest.raises(RemoteStoreError, match=r"holds '.*grp\.zarr/\.\./zarr\.json'.*"
                                               r"install botocore"):
        list(fresh.list())
