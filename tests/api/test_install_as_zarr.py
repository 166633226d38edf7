"""zarrfast.install_as_zarr(): zarrfast under the name ``zarr``, for the libraries a program
calls.  It changes sys.modules and sys.meta_path, so each test runs in a child Python."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import zarrfast


def child(code: str) -> dict:
    """Run ``code`` in a new Python; it prints one JSON object last, which is returned."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_versions_and_names():
    out = child("""
        import importlib.metadata, json
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        print(json.dumps({
            "version": zarr.__version__,
            "own": zarrfast.__version__,
            "metadata": importlib.metadata.version("zarr"),
            "same": [getattr(zarr, n) is getattr(zarrfast, n) for n in
                     ("Array", "Group", "open_group", "create_array", "config", "codecs")],
            "name": zarr.__name__,
            "all": sorted(zarr.__all__) == sorted(zarrfast.__all__),
        }))
    """)
    assert out == {"version": "3.4.2", "own": zarrfast.__version__, "metadata": "3.4.2",
                   "same": [True] * 6, "name": "zarr", "all": True}


def test_submodules_import_under_zarr_names():
    out = child("""
        import json, sys
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr.abc.store, zarr.abc.codec, zarr.codecs.zstd, zarr.core.buffer
        import zarr.core.sync, zarr.errors, zarr.storage, zarr.dtype, zarr.api.asynchronous
        from zarr.storage import MemoryStore, StorePath, LocalStore
        from zarr.abc.store import Store, ByteRequest
        from zarr.abc.codec import BytesBytesCodec
        from zarr.codecs.zstd import ZstdCodec
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync
        from zarr.errors import GroupNotFoundError
        import zarr.buffer
        from zarr.storage._common import make_store_path, StoreLike
        from zarr.core.sync_group import get_node
        from zarr.core.metadata import ArrayV2Metadata
        names = ["abc.store", "abc.codec", "codecs.zstd", "core.buffer", "core.sync",
                 "errors", "dtype", "api.asynchronous"]
        print(json.dumps({
            "same": {n: sys.modules["zarr." + n] is sys.modules["zarrfast." + n]
                     for n in names},
            "attr": zarr.abc.store is sys.modules["zarrfast.abc.store"],
            "specs": [sys.modules["zarrfast." + n].__spec__.name for n in names],
            "classes": [MemoryStore is zarrfast.MemoryStore, Store is zarrfast.Store,
                        BytesBytesCodec is zarrfast.codecs.BytesBytesCodec,
                        ZstdCodec is zarrfast.codecs.ZstdCodec,
                        GroupNotFoundError is zarrfast.errors.GroupNotFoundError],
            "buffer": zarr.buffer is sys.modules["zarrfast.core.buffer"],
            # zarr.storage: zarrfast's stores, with a WrapperStore for zarr-python's subclasses
            "storage": [sys.modules["zarr.storage"].__name__,
                        sys.modules["zarr.storage._common"] is zarr.storage,
                        all(getattr(zarr.storage, n) is getattr(zarrfast.storage, n)
                            for n in zarrfast.storage.__all__ if n != "WrapperStore"),
                        issubclass(zarr.storage.WrapperStore, zarrfast.storage.WrapperStore)],
            "sync": sync(None),
        }))
    """)
    assert out["same"] == dict.fromkeys(out["same"], True)
    assert out["attr"] and out["buffer"] and out["classes"] == [True] * 5
    # zarrfast's modules keep their own names and specs
    assert out["specs"] == ["zarrfast." + n for n in out["same"]]
    assert out["sync"] is None
    assert out["storage"] == ["zarrfast.core._storage", True, True, True]


def test_submodule_attributes_without_import():
    # zarr-python's ``import zarr`` brings zarr.core.sync etc. along: so does the alias
    out = child("""
        import json
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        print(json.dumps([zarr.core.sync.sync(None) is None,
                          zarr.abc.store.Store is zarrfast.Store,
                          zarr.storage.MemoryStore is zarrfast.MemoryStore]))
    """)
    assert out == [True, True, True]


def test_idempotent():
    out = child("""
        import json, sys
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        first = zarr
        zarrfast.install_as_zarr()
        zarrfast.install_as_zarr()
        import zarr
        finders = [f for f in sys.meta_path if type(f).__name__ == "_ZarrFinder"]
        print(json.dumps([zarr is first, len(finders), zarr.__version__]))
    """)
    assert out == [True, 1, "3.4.2"]


def test_not_zarr_python_modules_are_not_found():
    out = child("""
        import json
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        res = {}
        for name in ("zarr.kernels", "zarr.engine", "zarr.hierarchy", "zarr.no_such"):
            try:
                __import__(name)
                res[name] = "imported"
            except ModuleNotFoundError as e:
                res[name] = e.name
        try:
            zarr.no_such_name
            res["attr"] = "found"
        except AttributeError as e:
            res["attr"] = "install_as_zarr" in str(e)
        print(json.dumps(res))
    """)
    assert out == {"zarr.kernels": "zarr.kernels", "zarr.engine": "zarr.engine",
                   "zarr.hierarchy": "zarr.hierarchy", "zarr.no_such": "zarr.no_such",
                   "attr": True}


def test_data_written_through_the_alias_is_zarrfasts(tmp_path):
    out = child(f"""
        import json
        import numpy as np
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        from zarr.storage import LocalStore
        g = zarr.open_group(LocalStore({str(tmp_path / "g.zarr")!r}), mode="w")
        a = g.create_array("a", shape=(6,), chunks=(4,), dtype="i4")
        a[:] = np.arange(6)
        b = zarrfast.open_array({str(tmp_path / "g.zarr")!r}, path="a")
        print(json.dumps([type(g).__module__, b[:].tolist(), g.info._zarr_format
                          if hasattr(g.info, "_zarr_format") else g.info.zarr_format]))
    """)
    assert out == ["zarrfast.hierarchy.group", [0, 1, 2, 3, 4, 5], 3]


def test_after_libraries_that_import_zarr_lazily():
    # a module imported before, whose functions import zarr when called, gets zarrfast
    out = child("""
        import json, sys, types
        lib = types.ModuleType("lib")
        exec("def version():\\n    import zarr\\n    return zarr.__version__, zarr.Array",
             lib.__dict__)
        import zarrfast
        zarrfast.install_as_zarr()
        v, cls = lib.version()
        print(json.dumps([v, cls is zarrfast.Array]))
    """)
    assert out == ["3.4.2", True]


def test_zarr_python_imported_first_is_a_clear_error():
    pytest.importorskip("zarr")  # zarr-python, in this test environment
    out = child("""
        import json, sys
        import zarr
        real = zarr
        import zarrfast
        before = list(sys.meta_path)
        try:
            zarrfast.install_as_zarr()
            err = None
        except RuntimeError as e:
            err = [type(e).__name__, str(e)]
        print(json.dumps({
            "err": err,
            "unchanged": sys.modules["zarr"] is real and sys.meta_path == before,
            "storage": sys.modules["zarr.storage"].__name__,
        }))
    """)
    assert out["err"][0] == "ZarrAlreadyImportedError"
    assert "already imported" in out["err"][1] and "first" in out["err"][1]
    assert out["unchanged"] and out["storage"] == "zarr.storage"


def test_dask_sees_zarr_3():
    pytest.importorskip("dask.array")
    out = child("""
        import json
        import zarrfast
        zarrfast.install_as_zarr()
        import dask.array.core as core
        print(json.dumps(core._zarr_v3() if hasattr(core, "_zarr_v3") else None))
    """)
    if out is None:
        pytest.skip("this dask has no dask.array.core._zarr_v3")
    assert out is True  # from zarr.__version__: zarrfast's 0.1.0 read as zarr-python 2
