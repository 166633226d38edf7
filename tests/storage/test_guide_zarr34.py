"""Stores as zarr-python 3.4.2's user guide shows them, compared with zarr-python 3.4.2
itself (the ``zarr_peer`` fixture): the repr of an ``FsspecStore`` on ``memory://``
(``groups.md``, ``consolidated_metadata.md``, ``arrays.md``) and a ``ZipStore`` made on an
open file object (``storage.md``)."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ContainsGroupError
from zarrfast.storage import ZipStore

pytest.importorskip("fsspec")


def test_fsspec_store_on_memory_prints_as_zarr_python() -> None:
    # groups.md: zarr-python names the asynchronous file system its requests go to,
    # fsspec's AsyncFileSystemWrapper around the synchronous memory one (zarr-python
    # 3.4.2: FsspecStore.__repr__, and tests/test_store/test_fsspec.py asserting that
    # wrapper).  Compared with the zarr-python installed beside zarrfast (the peer venv
    # has no fsspec, so zarr-python there makes a ManagedMemoryStore of memory://)
    zarr = pytest.importorskip("zarr")
    ref = zarr.create_group(store="memory://guide-repr-zarr")
    ref_baz = ref.create_group("foo").create_array(name="baz", shape=(4,), dtype="int32")
    with pytest.raises(zarr.errors.ContainsGroupError) as ref_error:
        ref.get_array("foo") if hasattr(ref, "get_array") else ref.create_group("foo")
    root = zarrfast.create_group(store="memory://guide-repr")
    try:
        baz = root.create_group("foo").create_array(name="baz", shape=(4,), dtype="int32")
        with pytest.raises(ContainsGroupError) as error:
            root.get_array("foo")
        got = [str(root), str(root["foo"]), str(baz), repr(root.store), str(error.value)]
    finally:
        root.store.clear()
    expected = [str(ref), str(ref["foo"]), str(ref_baz), repr(ref.store),
                str(ref_error.value)]
    assert got == [e.replace("guide-repr-zarr", "guide-repr") for e in expected]
    assert got[0] == "<Group <FsspecStore(AsyncFileSystemWrapper, /guide-repr)>>"


def _write_with_zarr_python(zarr_peer, folder: Path) -> None:
    zarr_peer.run("""
    import numpy as np, zarr
    store = zarr.storage.ZipStore("data.zip", mode="w")
    zarr.create_array(store=store, shape=(6,), chunks=(4,), dtype="float64")[:] = np.arange(6)
    store.close()
    """, cwd=folder)


def test_zip_store_reads_an_open_file_as_zarr_python(zarr_peer, tmp_path, monkeypatch) -> None:
    # storage.md: ZipStore(open('data.zip', mode='rb')); it was refused with a TypeError
    _write_with_zarr_python(zarr_peer, tmp_path)
    expected = zarr_peer.run("""
    import zarr
    f = open("data.zip", mode="rb")
    store = zarr.storage.ZipStore(f)
    array = zarr.open_array(store=store, mode="r")
    emit([array[:].tolist(), str(store), str(array)])
    f.close()
    """, cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    with open("data.zip", mode="rb") as f:
        store = ZipStore(f)
        array = zarrfast.open_array(store=store, mode="r")
        assert [array[:].tolist(), str(store), str(array)] == expected
        assert store.path is None and store.read_only
        store.close()
        assert not f.closed  # the caller's file stays open, as with zarr-python
    assert expected[0] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_zip_store_reads_a_reader_that_is_not_an_io_object(zarr_peer, tmp_path) -> None:
    # an obstore reader has read/seek/tell but is no io.IOBase (zarr-python adapts it)
    obstore = pytest.importorskip("obstore")
    from obstore.store import LocalStore as ObLocalStore

    _write_with_zarr_python(zarr_peer, tmp_path)
    reader = obstore.open_reader(ObLocalStore(str(tmp_path)), "data.zip")
    assert not isinstance(reader, io.IOBase)
    store = ZipStore(reader)
    np.testing.assert_array_equal(zarrfast.open_array(store, mode="r")[:], np.arange(6.0))
    assert str(store) == "zip://<_io.BufferedReader>"  # zarr-python prints the same
    with pytest.raises(TypeError, match=r"ReadableFile\) can only be read \(mode='r', got "
                                        r"mode='a'\)"):
        ZipStore(obstore.open_reader(ObLocalStore(str(tmp_path)), "data.zip"), mode="a")


def test_zip_store_writes_an_open_file_zarr_python_reads(zarr_peer, tmp_path) -> None:
    with open(tmp_path / "out.zip", mode="wb") as f:
        store = ZipStore(f, mode="w")
        zarrfast.create_array(store, shape=(5,), chunks=(2,), dtype="i4")[:] = np.arange(5)
        store.close()  # the central directory goes to the file, which stays open
        assert not f.closed
    got = zarr_peer.run("""
    import zarr
    emit(zarr.open_array(zarr.storage.ZipStore("out.zip"), mode="r")[:].tolist())
    """, cwd=tmp_path)
    assert got == [0, 1, 2, 3, 4]


def test_zip_store_on_a_file_object_refuses_what_it_cannot_do(tmp_path) -> None:
    with ZipStore(tmp_path / "a.zip", mode="w") as store:
        zarrfast.create_array(store, shape=(2,), dtype="u1")
    with open(tmp_path / "a.zip", mode="rb") as f:
        store = ZipStore(f)
        with pytest.raises(TypeError, match="reads an open file object; make the store "
                                            "from the archive's path instead"):
            pickle.dumps(store)
        store.close()
    with pytest.raises(TypeError, match="a path or an open binary file object supporting "
                                        "read/seek/tell, got int"):
        ZipStore(3)  # type: ignore[arg-type]
    # a file opened for reading cannot take a new archive: refused when the store is
    # made (zipfile would fail only on close, the archive's directory lost)
    with open(tmp_path / "a.zip", mode="rb") as f:
        with pytest.raises(TypeError, match=r"cannot write a zip archive \(mode='a'\) to "
                                            r"<_io.BufferedReader name=.*a\.zip'>: it is "
                                            r"not open for writing"):
            ZipStore(f, mode="a")
    assert os.path.getsize(tmp_path / "a.zip") > 0


def test_zip_store_close_that_fails_is_an_error(tmp_path) -> None:
    # the central directory cannot be written to a file object closed under the store:
    # zarr-python 3.4.2 raises ValueError('seek of closed file'); zarrfast said nothing
    # (the archive silently incomplete)
    with open(tmp_path / "w.zip", mode="wb") as f:
        store = ZipStore(f, mode="w")
        zarrfast.create_array(store, shape=(2,), dtype="u1")
    with pytest.raises(ValueError, match="closed file") as error:
        store.close()
    assert "closing zip archive \"<_io.BufferedWriter name=" in error.value.__notes__[0]
    assert store.closed
    store.close()  # closing again does nothing
