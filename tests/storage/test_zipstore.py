"""ZipStore: the store conformance suite, arrays in archives, appending, hostile
archives ("zip slip").  Interoperability with zarr-python's ZipStore:
``tests/interop/test_store_peers.py``."""

from __future__ import annotations

import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import InvalidKeyError, ReadOnlyError, ZarrfastError
from zarrfast.storage import (
    RangeByteRequest,
    Store,
    StoreError,
    SuffixByteRequest,
    UnsafeArchiveMemberError,
    UnsupportedStoreOperationError,
    ZipStore,
    make_store,
)
from zarrfast.testing import StoreTests

from _helpers.stores import archive_data


class TestZipStore(StoreTests):
    # zip archives cannot remove members: the delete tests are skipped (see
    # supports_deletes) and test_deletes_unsupported checks the refusal instead

    def make_store(self, tmp_path: Path) -> Store:
        return ZipStore(tmp_path / "store.zip", mode="w")

    def test_survives_reopening(self, tmp_path: Path) -> None:
        with ZipStore(tmp_path / "a.zip", mode="w") as store:
            store.set("a/b", b"1")
            store.set("a/b", b"22")  # a second member of that name: the latest wins
            store.set("c", b"3")
        with ZipStore(tmp_path / "a.zip") as ro:
            assert ro.read_only and ro.mode == "r"
            assert ro.get("a/b") == b"22" and ro.getsize("a/b") == 2
            assert list(ro.list()) == ["a/b", "c"]
            with pytest.raises(ReadOnlyError):
                ro.set("d", b"4")
            with pytest.raises(ReadOnlyError):
                ro.with_read_only(False)
        with zipfile.ZipFile(tmp_path / "a.zip") as zf:
            assert zf.testzip() is None
            assert [i.filename for i in zf.infolist()] == ["a/b", "a/b", "c"]
            assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())

    def test_modes(self, tmp_path: Path) -> None:
        path = tmp_path / "m.zip"
        with pytest.raises(FileNotFoundError, match="m.zip"):
            ZipStore(path, mode="r")
        with ZipStore(path, mode="x") as s:
            s.set("k", b"v")
        with pytest.raises(FileExistsError, match="m.zip"):
            ZipStore(path, mode="x")
        with ZipStore(path, mode="a") as s:  # appends
            s.set("k2", b"v2")
            assert s.get("k") == b"v"
        with ZipStore(path, mode="w") as s:  # truncates
            assert list(s.list()) == []
        with pytest.raises(ZarrfastError, match="mode"):
            ZipStore(path, mode="rw")
        (tmp_path / "junk.zip").write_bytes(b"not a zip at all")
        with pytest.raises(StoreError, match="junk.zip"):
            ZipStore(tmp_path / "junk.zip")

    def test_compressed_members_and_ranges(self, tmp_path: Path) -> None:
        value = bytes(range(256)) * 64
        with ZipStore(tmp_path / "d.zip", mode="w", compression=zipfile.ZIP_DEFLATED) as s:
            s.set("v", value)
            assert s.get("v", RangeByteRequest(1000, 1100)) == value[1000:1100]
            assert s.get("v", SuffixByteRequest(7)) == value[-7:]
        with zipfile.ZipFile(tmp_path / "d.zip") as zf:
            assert zf.getinfo("v").compress_type == zipfile.ZIP_DEFLATED

    def test_closed_store(self, tmp_path: Path) -> None:
        s = ZipStore(tmp_path / "c.zip", mode="w")
        s.close()
        assert s.closed
        with pytest.raises(StoreError, match="closed"):
            s.get("k")
        s.close()  # twice is fine

    def test_threads_share_one_archive(self, tmp_path: Path) -> None:
        store = ZipStore(tmp_path / "t.zip", mode="w")
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                for j in range(50):
                    store.set(f"t{t}/{j}", bytes([t]) * (j + 1))
                    assert store.get(f"t{t}/{j}", SuffixByteRequest(1)) == bytes([t])
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        store.close()
        assert not errors, errors[0]
        with zipfile.ZipFile(tmp_path / "t.zip") as zf:
            assert zf.testzip() is None and len(zf.namelist()) == 300

    def test_pickling_a_writable_archive_is_refused_clearly(self, tmp_path: Path) -> None:
        import pickle

        with ZipStore(tmp_path / "p.zip", mode="w") as s, pytest.raises(TypeError,
                                                                         match="p.zip"):
            pickle.dumps(s)

    def test_arrays_in_a_read_only_archive_pickle_by_path(self, tmp_path: Path) -> None:
        import pickle

        data = np.arange(1000, dtype="i4").reshape(10, 100)
        with ZipStore(tmp_path / "r.zip", mode="w") as s:
            zarrfast.create_array(s, name="a", data=data, chunks=(5, 50))
        a = zarrfast.open_array(ZipStore(tmp_path / "r.zip", mode="r"), path="a")
        blob = pickle.dumps(a)
        assert len(blob) < 4096
        b = pickle.loads(blob)
        assert b.store is not a.store and b.store.read_only
        np.testing.assert_array_equal(b[...], data)


# ---------------------------------------------------------------------------
# hostile archives
# ---------------------------------------------------------------------------
HOSTILE = ["../evil", "a/../../evil", "/etc/evil", "a\\..\\evil", "C:/evil", "c:evil",
           "a//b", "./a"]


@pytest.mark.parametrize("member", HOSTILE)
def test_zip_slip_archive_refused(tmp_path: Path, member: str) -> None:
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("zarr.json", b"{}")
        info = zipfile.ZipInfo("placeholder")
        info.filename = member  # bypass zipfile's own normalisation of the name
        zf.writestr(info, b"pwned")
    with zipfile.ZipFile(path) as zf:
        assert member in zf.namelist()  # the archive really holds that name
    for mode in ("r", "a"):
        with pytest.raises(UnsafeArchiveMemberError) as info:
            ZipStore(path, mode=mode)
        assert "hostile.zip" in str(info.value) and repr(member) in str(info.value)
        assert isinstance(info.value, InvalidKeyError)
    with pytest.raises(UnsafeArchiveMemberError, match="hostile.zip"):
        zarrfast.open_array(str(path), mode="r")
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize("key", ["../evil", "/abs", "a\\b", "C:/x", "a/./b"])
def test_zip_slip_write_refused(tmp_path: Path, key: str) -> None:
    with ZipStore(tmp_path / "w.zip", mode="w") as s:
        with pytest.raises(InvalidKeyError, match="w.zip"):
            s.set(key, b"x")
        assert list(s.list()) == []
    with zipfile.ZipFile(tmp_path / "w.zip") as zf:
        assert zf.namelist() == []


def test_deletes_are_unsupported(tmp_path: Path) -> None:
    with ZipStore(tmp_path / "d.zip", mode="w") as s:
        s.set("k", b"v")
        assert s.supports_deletes is False
        with pytest.raises(UnsupportedStoreOperationError, match="'k'.*d.zip"):
            s.delete("k")
        with pytest.raises(NotImplementedError):
            s.clear()
        assert s.get("k") == b"v"


# ---------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(chunks=(8, 8)),
    dict(chunks=(4, 4), shards=(16, 16)),
    dict(chunks=(8, 8), zarr_format=2),
], ids=["v3", "sharded", "v2"])
def test_array_round_trip(tmp_path: Path, kwargs: dict) -> None:
    path = tmp_path / "arr.zip"
    data = archive_data()
    with ZipStore(path, mode="w") as store:
        a = zarrfast.create_array(store, shape=data.shape, dtype=data.dtype, **kwargs)
        a[:] = data
        a[2:5, 3:9] = 1.5  # rewrites chunks: later members win
    expected = data.copy()
    expected[2:5, 3:9] = 1.5
    with ZipStore(path) as store:
        np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[:], expected)
    b = zarrfast.open_array(str(path), mode="r")  # via make_store
    assert isinstance(b.store, ZipStore) and b.store.read_only
    np.testing.assert_array_equal(b[5:25:2, ::3], expected[5:25:2, ::3])
    b.store.close()


def test_append_second_array_to_existing_archive(tmp_path: Path) -> None:
    path = tmp_path / "two.zip"
    with ZipStore(path, mode="w") as store:
        g = zarrfast.open_group(store, mode="w")
        g.create_array("first", data=archive_data(1), chunks=(10, 10))
    store = make_store(str(path))  # a .zip path, writable: mode "a"
    assert isinstance(store, ZipStore) and store.mode == "a"
    g = zarrfast.open_group(store, mode="r+")
    g.create_array("second", data=archive_data(2), chunks=(10, 10))
    store.close()
    g = zarrfast.open_group(str(path), mode="r")
    assert sorted(g.keys()) == ["first", "second"]
    np.testing.assert_array_equal(g["first"][:], archive_data(1))
    np.testing.assert_array_equal(g["second"][:], archive_data(2))
    g.store.close()


def test_unreadable_members_and_missing_archives_raise_store_errors(tmp_path: Path) -> None:
    from zarrfast.storage import ArchiveNotFoundError, StoreError

    path = tmp_path / "bad.zip"
    payload = bytes(range(256)) * 64
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a", payload)
    raw = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo("a")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    assert raw[start:start + 4] != b"\xff\xff\xff\xff"
    raw[start:start + 4] = b"\xff\xff\xff\xff"  # break the deflate stream
    path.write_bytes(bytes(raw))
    s = ZipStore(path, mode="r")
    with pytest.raises(StoreError, match=r"member 'a'.*bad\.zip"):
        s.get("a")
    with pytest.raises(ArchiveNotFoundError, match="missing.zip") as e:
        ZipStore(tmp_path / "missing.zip", mode="r")
    assert isinstance(e.value, FileNotFoundError)


def test_file_url_to_a_zip_opens_the_archive(tmp_path: Path) -> None:
    from zarrfast.storage.resolve import make_store

    data = np.arange(6, dtype="i4")
    with ZipStore(tmp_path / "u.zip", mode="w") as s:
        zarrfast.create_array(s, name="a", data=data, chunks=(3,))
    store = make_store(f"file://{tmp_path / 'u.zip'}", read_only=True)
    assert isinstance(store, ZipStore)
    np.testing.assert_array_equal(zarrfast.open_array(store, path="a")[...], data)
