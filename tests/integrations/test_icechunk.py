"""zarrfast reads and writes icechunk repositories through ``session.store``.

The real icechunk package, on a repository in a local directory: zarr-python and
zarrfast each write and commit, the other reads the snapshot; concurrent sessions
conflict with icechunk's own ``ConflictError`` and lose nothing; a write on a
read-only session fails with icechunk's own error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import ZarrPythonStore

icechunk = pytest.importorskip("icechunk")
zarr = pytest.importorskip("zarr")

DATA = np.arange(40 * 30, dtype="i4").reshape(40, 30)


@pytest.fixture
def repo(tmp_path: Path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def _zarr_python_commit(repo) -> str:
    session = repo.writable_session("main")
    g = zarr.create_group(session.store, attributes={"title": "icechunk"})
    g.create_array("plain", shape=DATA.shape, chunks=(8, 8), dtype="i4")[:] = DATA
    g.create_array("sharded", shape=DATA.shape, chunks=(4, 5), shards=(16, 15),
                   dtype="i4")[:] = DATA
    return session.commit("written by zarr-python")


def test_zarr_python_commits_zarrfast_reads(repo) -> None:
    snapshot = _zarr_python_commit(repo)
    store = repo.readonly_session("main").store
    group = zarrfast.open_group(store, mode="r")
    assert dict(group.attrs) == {"title": "icechunk"}
    assert sorted(group.keys()) == ["plain", "sharded"]
    np.testing.assert_array_equal(group["plain"][:], DATA)
    np.testing.assert_array_equal(group["sharded"][:], DATA)
    np.testing.assert_array_equal(group["sharded"][3:29, 7:22], DATA[3:29, 7:22])
    # a snapshot by id reads the same
    by_id = repo.readonly_session(snapshot_id=snapshot).store
    np.testing.assert_array_equal(zarrfast.open_array(by_id, path="plain", mode="r")[:], DATA)


def test_zarrfast_writes_session_commits_zarr_python_reads(repo) -> None:
    first = _zarr_python_commit(repo)
    session = repo.writable_session("main")
    a = zarrfast.open_array(session.store, path="plain", mode="r+")
    a[0:8, 0:8] = -1
    zarrfast.create_array(session.store, name="new", data=np.linspace(0, 1, 50), chunks=(7,),
                          shards=(21,), attributes={"units": "m"})
    second = session.commit("written by zarrfast")
    assert second != first

    expected = DATA.copy()
    expected[0:8, 0:8] = -1
    store = repo.readonly_session("main").store
    np.testing.assert_array_equal(zarr.open_array(store, path="plain", mode="r")[:], expected)
    new = zarr.open_array(store, path="new", mode="r")
    np.testing.assert_array_equal(new[:], np.linspace(0, 1, 50))
    assert new.attrs["units"] == "m"
    # the previous snapshot is unchanged
    old = repo.readonly_session(snapshot_id=first).store
    np.testing.assert_array_equal(zarr.open_array(old, path="plain", mode="r")[:], DATA)


def test_conflicting_sessions(repo) -> None:
    _zarr_python_commit(repo)
    s1 = repo.writable_session("main")
    s2 = repo.writable_session("main")
    zarrfast.open_array(s1.store, path="plain", mode="r+")[0:8, 0:8] = 100
    zarrfast.open_array(s2.store, path="plain", mode="r+")[0:8, 0:8] = 200
    s1.commit("first")
    with pytest.raises(icechunk.ConflictError):
        s2.commit("second")
    expected = DATA.copy()
    expected[0:8, 0:8] = 100
    store = repo.readonly_session("main").store
    np.testing.assert_array_equal(zarrfast.open_array(store, path="plain", mode="r")[:],
                                  expected)
    np.testing.assert_array_equal(zarr.open_array(store, path="plain", mode="r")[:], expected)


def test_rebase_after_conflict_keeps_both(repo) -> None:
    """Two sessions writing different chunks: the second rebases and both writes stay."""
    _zarr_python_commit(repo)
    s1 = repo.writable_session("main")
    s2 = repo.writable_session("main")
    zarrfast.open_array(s1.store, path="plain", mode="r+")[0:8, 0:8] = 100
    zarrfast.open_array(s2.store, path="plain", mode="r+")[32:40, 24:30] = 200
    s1.commit("first")
    with pytest.raises(icechunk.ConflictError):
        s2.commit("second")
    s2.rebase(icechunk.ConflictDetector())
    s2.commit("second, rebased")
    expected = DATA.copy()
    expected[0:8, 0:8] = 100
    expected[32:40, 24:30] = 200
    store = repo.readonly_session("main").store
    np.testing.assert_array_equal(zarrfast.open_array(store, path="plain", mode="r")[:],
                                  expected)


def test_write_on_read_only_session_raises_icechunks_error(repo) -> None:
    _zarr_python_commit(repo)
    store = repo.readonly_session("main").store
    with pytest.raises(icechunk.IcechunkError, match="read-only"):
        zarrfast.open_array(store, path="plain")[0, 0] = 5
    with pytest.raises(icechunk.IcechunkError, match="read-only"):
        ZarrPythonStore(store).set("plain/c/0/0", b"x")
    with pytest.raises(icechunk.IcechunkError, match="read-only"):
        zarrfast.create_array(store, name="other", shape=(3,), dtype="i1")
    np.testing.assert_array_equal(
        zarr.open_array(repo.readonly_session("main").store, path="plain", mode="r")[:], DATA)


def test_uncommitted_writes_are_not_in_the_repository(repo) -> None:
    _zarr_python_commit(repo)
    session = repo.writable_session("main")
    zarrfast.open_array(session.store, path="plain", mode="r+")[:] = 0
    # the session sees its own writes; the branch does not until a commit
    assert zarrfast.open_array(session.store, path="plain", mode="r")[:].sum() == 0
    np.testing.assert_array_equal(
        zarrfast.open_array(repo.readonly_session("main").store, path="plain", mode="r")[:],
        DATA)


def test_xarray_through_a_session(repo) -> None:
    xr = pytest.importorskip("xarray")
    from zarrfast.xarray import to_zarr

    ds = xr.Dataset({"t": (("y", "x"), DATA.astype("f8"))}, coords={"y": np.arange(40)},
                    attrs={"source": "zarrfast"})
    session = repo.writable_session("main")
    to_zarr(ds, session.store, mode="w")
    session.commit("dataset")
    got = xr.open_dataset(repo.readonly_session("main").store, engine="zarrfast")
    xr.testing.assert_identical(got.load(), ds)
    ref = xr.open_zarr(repo.readonly_session("main").store, consolidated=False)
    xr.testing.assert_identical(ref.load(), ds)
