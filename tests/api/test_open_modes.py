"""``open`` / ``open_array`` / ``create_array`` / ``open_group`` / ``group`` modes (``r``,
``r+``, ``a``, ``w``, ``w-``), refusals of existing nodes and of the wrong node type, paths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    NodeNotFoundError,
    NodeTypeValidationError,
    ReadOnlyError,
    ZarrfastError,
)

from _helpers.arrays import chunk_keys, metadata_keys, node_doc, same

# ---------------------------------------------------------------------------
# open / create modes
# ---------------------------------------------------------------------------


def test_mode_r(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError) as info:
        zarrfast.open_array(store, mode="r")
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, NodeNotFoundError)
    zarrfast.create_array(store, chunks=(2,), data=np.arange(4, dtype="i4"))
    r = zarrfast.open_array(store, mode="r")
    assert r.read_only
    assert list(r[:]) == [0, 1, 2, 3]
    for attempt in (lambda: r.__setitem__(0, 9), lambda: r.__setitem__(..., 1),
                    lambda: r.attrs.__setitem__("x", 1), lambda: r.resize((2,)),
                    lambda: r.update_attributes({"y": 1})):
        with pytest.raises(ReadOnlyError) as info:
            attempt()
        assert isinstance(info.value, PermissionError)
    assert list(zarrfast.open_array(store, mode="r")[:]) == [0, 1, 2, 3]
    assert dict(zarrfast.open_array(store, mode="r").attrs) == {}
    # the caller's store is not made read-only
    assert not store.read_only


def test_mode_r_plus(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="r+")
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="r+", shape=(3,), dtype="i4")  # r+ never creates
    assert store.get("zarr.json") is None
    zarrfast.create_array(store, chunks=(2,), data=np.arange(4, dtype="i4"))
    a = zarrfast.open_array(store, mode="r+")
    assert not a.read_only
    a[1] = 10
    assert list(zarrfast.open_array(store, mode="r")[:]) == [0, 10, 2, 3]


def test_mode_a(store: zarrfast.Store) -> None:
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(store, mode="a")  # no shape: nothing to create
    a = zarrfast.open_array(store, mode="a", shape=(5,), chunks=(2,), dtype="u2", fill_value=3)
    assert a.shape == (5,)
    a[0] = 1
    # exists: opened as is, the creation arguments are not applied
    b = zarrfast.open_array(store, mode="a", shape=(7,), dtype="f8")
    assert b.shape == (5,) and b.dtype == np.dtype("u2")
    assert list(b[:]) == [1, 3, 3, 3, 3]


def test_mode_w_replaces(store: zarrfast.Store) -> None:
    a = zarrfast.open_array(store, mode="w", shape=(6,), chunks=(2,), dtype="i4")
    a[:] = np.arange(1, 7)
    assert chunk_keys(store) == ["c/0", "c/1", "c/2"]
    b = zarrfast.open_array(store, mode="w", shape=(3,), chunks=(3,), dtype="f4",
                            fill_value=-1)
    assert chunk_keys(store) == []  # old chunks removed
    assert b.shape == (3,) and b.dtype == np.dtype("f4")
    same(zarrfast.open_array(store, mode="r")[:], np.full(3, -1, "f4"))


def test_mode_w_minus(store: zarrfast.Store) -> None:
    a = zarrfast.open_array(store, path="x", mode="w-", shape=(2,), dtype="i1")
    a[:] = 3
    with pytest.raises(ContainsArrayError) as info:
        zarrfast.open_array(store, path="x", mode="w-", shape=(2,), dtype="i1")
    assert isinstance(info.value, FileExistsError)
    assert list(zarrfast.open_array(store, path="x")[:]) == [3, 3]
    zarrfast.create_group(store, path="g")
    with pytest.raises(ContainsGroupError):
        zarrfast.open_array(store, path="g", mode="w-", shape=(2,), dtype="i1")


def test_invalid_mode(store: zarrfast.Store) -> None:
    with pytest.raises(ZarrfastError, match="mode"):
        zarrfast.open_array(store, mode="x", shape=(2,))


def test_create_array_refuses_existing(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="x", shape=(4,), chunks=(2,), dtype="i4")
    a[:] = 1
    with pytest.raises(ContainsArrayError, match="'x'"):
        zarrfast.create_array(store, name="x", shape=(4,), dtype="i4")
    assert list(a[:]) == [1, 1, 1, 1]  # untouched
    b = zarrfast.create_array(store, name="x", shape=(4,), dtype="i4", overwrite=True)
    assert list(b[:]) == [0, 0, 0, 0]
    assert chunk_keys(store, "x/") == []


def test_open_group_as_array(store: zarrfast.Store) -> None:
    zarrfast.create_group(store, path="g")
    with pytest.raises(NodeTypeValidationError):
        zarrfast.open_array(store, path="g", mode="r")


def test_open_local_directory_by_path(tmp_path: Path) -> None:
    p = tmp_path / "x.zarr"
    zarrfast.create_array(str(p), chunks=(2, 2), data=np.array([[1, 2]] * 3, dtype="i2"))
    assert (p / "zarr.json").is_file()
    assert (p / "c" / "1" / "0").is_file()
    a = zarrfast.open_array(p, mode="r")
    same(a[:], np.array([[1, 2]] * 3, dtype="i2"))
    with pytest.raises(ArrayNotFoundError):
        zarrfast.open_array(tmp_path / "missing.zarr", mode="r")


def test_nested_array_path(store: zarrfast.Store) -> None:
    a = zarrfast.create_array(store, name="g/h/arr", shape=(3,), chunks=(2,), dtype="u1")
    a[:] = [1, 2, 3]
    assert a.path == "g/h/arr" and a.name == "/g/h/arr" and a.basename == "arr"
    assert chunk_keys(store) == ["g/h/arr/c/0", "g/h/arr/c/1"]
    b = zarrfast.open_array(store, path="/g/h/arr/", mode="r")
    assert list(b[:]) == [1, 2, 3]


def test_open_group_modes(store: zarrfast.Store) -> None:
    with pytest.raises(GroupNotFoundError) as info:
        zarrfast.open_group(store, mode="r")
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(GroupNotFoundError):
        zarrfast.open_group(store, mode="r+")
    assert store.get("zarr.json") is None
    g = zarrfast.open_group(store, mode="a", attributes={"v": 1})  # created
    assert node_doc(store, "")["attributes"] == {"v": 1}
    g.create_group("child")
    again = zarrfast.open_group(store, mode="a", attributes={"v": 2})  # opened as is
    assert dict(again.attrs) == {"v": 1} and list(again.keys()) == ["child"]
    with pytest.raises(ContainsGroupError):
        zarrfast.open_group(store, mode="w-")
    w = zarrfast.open_group(store, mode="w", attributes={"v": 3})  # replaced
    assert dict(w.attrs) == {"v": 3} and list(w.keys()) == []
    assert metadata_keys(store) == ["zarr.json"]
    assert zarrfast.open_group(store, mode="r+").read_only is False
    with pytest.raises(ZarrfastError, match="mode"):
        zarrfast.open_group(store, mode="rw")


def test_group_function(store: zarrfast.Store) -> None:
    g = zarrfast.group(store, attributes={"a": 1})
    g.create_group("k")
    g2 = zarrfast.group(store)
    assert list(g2.keys()) == ["k"] and dict(g2.attrs) == {"a": 1}
    g3 = zarrfast.group(store, overwrite=True)
    assert list(g3.keys()) == []


@pytest.mark.parametrize("mode", ["w", "w-", "a"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_makes_a_group_of_the_format_asked(mode: str, zarr_format: int,
                                                store: zarrfast.Store) -> None:
    # (a group made by open where nothing is: of the format asked, as zarr-python makes it;
    # open(mode="w", zarr_format=2) once made a Zarr v3 group)
    g = zarrfast.open(store, mode=mode, zarr_format=zarr_format)
    assert g.metadata.zarr_format == zarr_format
    assert sorted(store.list()) == ([".zattrs", ".zgroup"] if zarr_format == 2
                                    else ["zarr.json"])
    assert zarrfast.open_group(store, mode="r").metadata.zarr_format == zarr_format
