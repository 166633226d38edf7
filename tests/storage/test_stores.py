"""The store conformance suite run against every built-in store, plus tests
of what only one store does (files, symbolic links, pickling, a shared dict)."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrfast.errors import InvalidKeyError, ReadOnlyError, ZarrfastError
from zarrfast.storage import LocalStore, MemoryStore, RangeByteRequest, Store
from zarrfast.testing import StoreTests

from _helpers.stores import make_symlink


def walk_files(root: Path) -> list[str]:
    """Every file (or symbolic link) below ``root`` as a sorted '/'-separated relative path."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            out.append((rel / name).as_posix())
    return sorted(out)


# ---------------------------------------------------------------------------
# LocalStore
# ---------------------------------------------------------------------------
class TestLocalStore(StoreTests):
    # os.replace over a file another thread holds open fails on Windows
    # (Python opens files without FILE_SHARE_DELETE).
    overwrite_while_reading = sys.platform != "win32"

    def make_store(self, tmp_path: Path) -> Store:
        return LocalStore(tmp_path / "store")

    def test_keys_map_to_nested_files(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path / "root")
        store.set("a/b/c", b"abc")
        store.set("zarr.json", b"{}")
        assert (tmp_path / "root" / "a" / "b" / "c").read_bytes() == b"abc"
        assert (tmp_path / "root" / "zarr.json").read_bytes() == b"{}"
        assert walk_files(tmp_path / "root") == ["a/b/c", "zarr.json"]
        # and files written by others are keys
        (tmp_path / "root" / "a" / "x").write_bytes(b"x")
        assert store.get("a/x") == b"x"
        assert list(store.list_dir("a")) == ["b", "x"]

    def test_missing_root(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path / "not" / "yet")
        assert store.get("a") is None
        assert store.is_empty()
        assert list(store.list()) == []
        assert list(store.list_dir("")) == []
        store.delete("a")
        store.delete_dir("a")
        store.clear()
        assert not (tmp_path / "not").exists()
        store.set("a", b"1")  # created on the first write
        assert (tmp_path / "not" / "yet" / "a").read_bytes() == b"1"

    def test_root_forms(self, tmp_path: Path) -> None:
        LocalStore(tmp_path).set("k", b"v")
        assert LocalStore(str(tmp_path)).get("k") == b"v"
        assert LocalStore("file://" + str(tmp_path)).get("k") == b"v"
        assert LocalStore(tmp_path) == LocalStore(str(tmp_path))
        assert LocalStore(tmp_path) != LocalStore(tmp_path, read_only=True)
        assert str(tmp_path) in repr(LocalStore(tmp_path))

    def test_atomic_write_leaves_no_temporary_files(self, tmp_path: Path) -> None:
        root = tmp_path / "store"
        store = LocalStore(root)
        for i in range(20):
            store.set(f"a/{i % 3}", bytes(i) * 100)
            store.set("b", bytes(i))
        with pytest.raises(TypeError):
            store.set("a/bad", "not bytes")  # type: ignore[arg-type]
        assert walk_files(root) == ["a/0", "a/1", "a/2", "b"]
        assert list(store.list()) == ["a/0", "a/1", "a/2", "b"]

    def test_failed_write_keeps_old_value(self, tmp_path: Path, monkeypatch) -> None:
        root = tmp_path / "store"
        store = LocalStore(root)
        store.set("k", b"old")

        def broken_replace(src, dst, **kwargs):
            raise OSError("disk on fire")

        monkeypatch.setattr(os, "replace", broken_replace)
        monkeypatch.setattr(LocalStore, "_set_fast", lambda self, key, value: False)
        with pytest.raises(OSError, match="disk on fire"):
            store.set("k", b"new value")
        monkeypatch.undo()
        assert store.get("k") == b"old"
        assert walk_files(root) == ["k"]

    def test_symlinked_directory_outside_root_refused(self, tmp_path: Path) -> None:
        root = tmp_path / "store"
        outside = tmp_path / "outside"
        root.mkdir()
        outside.mkdir()
        (outside / "victim").write_bytes(b"keep me")
        (outside / "sub").mkdir()
        (outside / "sub" / "deep").write_bytes(b"keep me too")
        make_symlink(outside, root / "link", is_dir=True)
        store = LocalStore(root)

        for key in ("link/new", "link/victim", "link/sub/deep", "link/x/y"):
            with pytest.raises(InvalidKeyError, match="outside"):
                store.set(key, b"pwned")
            with pytest.raises(InvalidKeyError):
                store.delete(key)
        with pytest.raises(InvalidKeyError):
            store.delete_dir("link/sub")
        store.delete_dir("link")  # removes the link at most, never what it points to
        store.clear()

        assert sorted(p.name for p in outside.iterdir()) == ["sub", "victim"]
        assert (outside / "victim").read_bytes() == b"keep me"
        assert (outside / "sub" / "deep").read_bytes() == b"keep me too"

    def test_symlinked_file_outside_root_refused(self, tmp_path: Path) -> None:
        root = tmp_path / "store"
        root.mkdir()
        target = tmp_path / "target"
        target.write_bytes(b"original")
        make_symlink(target, root / "k", is_dir=False)
        store = LocalStore(root)
        with pytest.raises(InvalidKeyError):
            store.set("k", b"pwned")
        assert target.read_bytes() == b"original"

    def test_open_ranges_remembers_only_valid_keys(self, tmp_path: Path, monkeypatch) -> None:
        """``open_ranges`` checks a key once while it is among the last few valid
        ones (``_CHECKED_KEYS``), refuses bad keys every time, and still finds a missing
        file missing, follows a link inside the root and refuses one out of it."""
        from zarrfast.storage import local

        monkeypatch.setattr(local, "_CHECKED_KEYS", 2)
        monkeypatch.setattr(local, "_checked", {})
        root = tmp_path / "store"
        store = LocalStore(root)
        for i in range(5):
            store.set(f"a/{i}", bytes([i]) * 3)
        for _ in range(2):
            for i in range(5):
                with store.open_ranges(f"a/{i}") as r:
                    assert r.read(RangeByteRequest(0, 3)) == bytes([i]) * 3
                assert 1 <= len(local._checked) <= 2
            for bad in ("a/../a/1", "/a/1", "a//1", "a\\1", "", 3):
                with pytest.raises(InvalidKeyError):
                    store.open_ranges(bad)  # type: ignore[arg-type]
            assert all(k.startswith("a/") and k[2:].isdigit() for k in local._checked)

        class Key(str):
            pass

        with store.open_ranges(Key("a/1")) as r:  # (read, not remembered)
            assert r.read(RangeByteRequest(0, 3)) == bytes([1]) * 3
        assert all(type(k) is str for k in local._checked)
        # (no file: None, or, the portable way's generic reader, one that reads nothing)
        assert (r := store.open_ranges("a/9")) is None or r.read(RangeByteRequest(0, 1)) is None
        store.set("a/9", b"new")  # (a miss is not remembered)
        with store.open_ranges("a/9") as r:
            assert r.read(RangeByteRequest(0, 3)) == b"new"
        (root / "real").mkdir()
        (root / "real" / "f").write_bytes(b"xyz")
        make_symlink(root / "real", root / "alias", is_dir=True)
        with store.open_ranges("alias/f") as r:
            assert r.read(RangeByteRequest(0, 3)) == b"xyz"
        (tmp_path / "outside").write_bytes(b"secret")
        make_symlink(tmp_path / "outside", root / "out", is_dir=False)
        for _ in range(2):
            with pytest.raises(InvalidKeyError, match="outside"):
                store.open_ranges("out")

    def test_symlink_inside_root_allowed(self, tmp_path: Path) -> None:
        root = tmp_path / "store"
        (root / "real").mkdir(parents=True)
        make_symlink(root / "real", root / "alias", is_dir=True)
        store = LocalStore(root)
        store.set("alias/k", b"v")
        assert (root / "real" / "k").read_bytes() == b"v"

    @pytest.mark.parametrize(
        "key", ["../secret", "a/../../secret", "..", "..\\secret", "/secret", "./../secret"]
    )
    def test_dotdot_never_reads_next_to_root(self, tmp_path: Path, key: str) -> None:
        (tmp_path / "secret").write_bytes(b"secret")
        store = LocalStore(tmp_path / "store")
        store.set("a/k", b"v")
        with pytest.raises(InvalidKeyError):
            store.get(key)
        with pytest.raises(InvalidKeyError):
            store.get(key, RangeByteRequest(0, 3))
        with pytest.raises(InvalidKeyError):
            store.exists(key)
        with pytest.raises(InvalidKeyError):
            store.getsize(key)
        with pytest.raises(InvalidKeyError):
            store.get_many([key] * 5)
        with pytest.raises(InvalidKeyError):
            store.set(key, b"overwritten")
        with pytest.raises(InvalidKeyError):
            store.delete(key)
        with pytest.raises(InvalidKeyError):
            store.delete_dir(key)
        assert (tmp_path / "secret").read_bytes() == b"secret"

    def test_dotdot_never_lists_next_to_root(self, tmp_path: Path) -> None:
        (tmp_path / "secret").write_bytes(b"secret")
        store = LocalStore(tmp_path / "store")
        store.set("k", b"v")
        for prefix in ("..", "../", "a/../..", "/"):
            with pytest.raises(InvalidKeyError):
                list(store.list_dir(prefix))
            if prefix == "/":  # accepted, as by zarr-python: no key starts with "/"
                assert list(store.list_prefix(prefix)) == []
                continue
            with pytest.raises(InvalidKeyError):
                list(store.list_prefix(prefix))

    def test_pickle_round_trip(self, tmp_path: Path) -> None:
        for store in (
            LocalStore(tmp_path),
            LocalStore(tmp_path, read_only=True),
            LocalStore(tmp_path, fsync=True),
        ):
            if not store.read_only:
                store.set("a/b", b"data")
            clone = pickle.loads(pickle.dumps(store))
            assert isinstance(clone, LocalStore)
            assert clone == store
            assert clone.root == store.root
            assert clone.read_only == store.read_only
            assert clone.fsync == store.fsync
            assert clone.get("a/b") == b"data"

    def test_fsync(self, tmp_path: Path) -> None:
        store = LocalStore(tmp_path / "store", fsync=True)
        assert store.fsync is True
        store.set("a/b/c", b"durable")
        store.set("a/b/c", b"durable 2")
        store.set("e", b"")
        assert store.get("a/b/c") == b"durable 2"
        assert store.get("e") == b""
        assert walk_files(tmp_path / "store") == ["a/b/c", "e"]
        assert store.with_read_only(True).fsync is True

    @pytest.mark.parametrize("key", ["a/b", "a/b/c", "a/b/c/d"])
    def test_file_where_directory_expected(self, tmp_path: Path, key: str) -> None:
        store = LocalStore(tmp_path / "store")
        store.set("a", b"a file")
        with pytest.raises(ZarrfastError, match="'a/") as info:
            store.set(key, b"x")
        assert "is a file" in str(info.value)
        assert store.get("a") == b"a file"
        assert store.get(key) is None
        assert list(store.list()) == ["a"]
        assert list(store.list_dir("a")) == []
        store.delete(key)  # no error
        store.delete_dir("a/b")

    def test_directory_listing_hides_temporary_files(self, tmp_path: Path) -> None:
        root = tmp_path / "store"
        store = LocalStore(root)
        store.set("a/k", b"v")
        # a crash between creating and renaming the temporary file leaves this
        (root / "a" / ".zarrfast-tmp-0123").write_bytes(b"partial")
        assert list(store.list()) == ["a/k"]
        assert list(store.list_dir("a")) == ["k"]

    def test_read_only_store_creates_nothing(self, tmp_path: Path) -> None:
        ro = LocalStore(tmp_path / "store", read_only=True)
        with pytest.raises(ReadOnlyError):
            ro.set("a/b", b"x")
        with pytest.raises(ReadOnlyError):
            ro.clear()
        assert not (tmp_path / "store").exists()
        assert "read_only=True" in repr(ro)


# ---------------------------------------------------------------------------
# MemoryStore
# ---------------------------------------------------------------------------
class TestMemoryStore(StoreTests):
    def make_store(self, tmp_path: Path) -> Store:
        return MemoryStore()

    def test_shared_dict(self) -> None:
        data: dict[str, bytes] = {}
        a = MemoryStore(data)
        b = MemoryStore(data)
        a.set("x/y", bytearray(b"1"))
        assert data == {"x/y": b"1"}
        # stored immutable: bytes, with zarr-python's Buffer methods (a shared dict)
        assert isinstance(data["x/y"], bytes) and data["x/y"].to_bytes() == b"1"
        assert type(data["x/y"].to_bytes()) is bytes
        assert b.get("x/y") == b"1"
        data["z"] = b"2"
        assert a.get("z") == b"2"
        assert list(a.list()) == ["x/y", "z"]
        assert list(a.list_dir("")) == ["x", "z"]
        b.delete("x/y")
        assert a.get("x/y") is None
        assert a == b
        assert a != MemoryStore()
        ro = a.with_read_only(True)
        assert ro == a
        with pytest.raises(ReadOnlyError):
            ro.set("w", b"3")
        assert data == {"z": b"2"}

    def test_prefilled_dict(self) -> None:
        store = MemoryStore({"zarr.json": b"{}", "c/0": b"\x00"})
        assert store.get("zarr.json") == b"{}"
        assert list(store.list()) == ["c/0", "zarr.json"]

    def test_key_and_prefix_may_coexist(self) -> None:
        # unlike a file system, a dict can hold both "a" and "a/b"
        store = MemoryStore()
        store.set("a", b"1")
        store.set("a/b", b"2")
        assert list(store.list()) == ["a", "a/b"]
        assert list(store.list_dir("a")) == ["b"]
        store.delete_dir("a")
        assert list(store.list()) == ["a"]

    def test_repr(self) -> None:
        store = MemoryStore({"a": b"1"})
        assert repr(store) == f"MemoryStore('memory://{id(store._data)}')"
        assert "read_only=True" in repr(store.with_read_only(True))


def test_suite_base_is_not_collected() -> None:
    assert not StoreTests.__name__.startswith("Test")
    with pytest.raises(NotImplementedError, match="make_store"):
        StoreTests().make_store(Path("."))


@settings(max_examples=400, deadline=None)
@given(keys=st.lists(st.text(alphabet=["a", "b", "/", ".", ":", "\\", "\x00", "é", "C", "1"],
                             max_size=6), max_size=5))
def test_validate_keys_agrees_with_validate_key(keys):
    """The bulk check refuses exactly what the per-key check refuses (the same error,
    for the first bad key) and encodes like ``os.fsencode``."""
    from zarrfast.storage.base import validate_key, validate_keys

    want: object
    try:
        for k in keys:
            validate_key(k)
        want = [os.fsencode(k) for k in keys]
    except InvalidKeyError as e:
        want = str(e)
    try:
        got: object = validate_keys(keys)
    except InvalidKeyError as e:
        got = str(e)
    assert got == want


def test_local_store_file_paths_of_many_keys(tmp_path):
    store = LocalStore(str(tmp_path))
    keys = [f"c/{i}/{j}" for i in range(40) for j in range(30)] + ["é/x.y"]
    root, paths = store.file_paths(keys)
    assert root == os.fsencode(str(tmp_path))
    assert paths == [os.fsencode(k) for k in keys]
    with pytest.raises(InvalidKeyError, match="'c/../x'"):
        store.file_paths([*keys, "c/../x"])
