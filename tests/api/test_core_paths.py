"""zarr-python's zarr.core paths that user code imports resolve to zarrfast's objects."""

from __future__ import annotations

import numpy as np

import zarrfast


def test_core_modules_give_zarrfasts_objects():
    from zarrfast.core.array import Array, AsyncArray
    from zarrfast.core.common import JSON, ZarrFormat  # noqa: F401 - importable aliases
    from zarrfast.core.dtype import Int8, ZDType, data_type_registry
    from zarrfast.core.dtype.common import DataTypeValidationError, check_dtype_spec_v2
    from zarrfast.core.group import AsyncGroup, Group, GroupMetadata

    assert Array is zarrfast.Array and Group is zarrfast.Group
    assert AsyncArray is zarrfast.AsyncArray and AsyncGroup is zarrfast.AsyncGroup
    assert Int8 is zarrfast.dtype.Int8 and ZDType is zarrfast.dtype.ZDType
    assert data_type_registry is zarrfast.dtype.data_type_registry
    assert DataTypeValidationError is zarrfast.dtype.DataTypeValidationError
    assert check_dtype_spec_v2 is zarrfast.dtype.check_dtype_spec_v2
    assert Int8().to_native_dtype() == np.dtype("int8")
    assert GroupMetadata().zarr_format == 3


def test_create_hierarchy_makes_and_yields_the_implied_groups(tmp_path):
    import pytest

    from zarrfast.core.group import GroupMetadata
    from zarrfast.errors import MetadataValidationError
    from zarrfast.metadata.v2 import GroupMetadataV2
    from zarrfast.storage import LocalStore

    store = LocalStore(tmp_path / "data")
    out = dict(zarrfast.create_hierarchy(store=store, nodes={"a/b/c": GroupMetadata()}))
    assert sorted(out) == ["", "a", "a/b", "a/b/c"]
    assert all(isinstance(g, zarrfast.Group) for g in out.values())
    assert out["a/b"].path == "a/b" and "b" in zarrfast.open_group(store, path="a")
    # a group already there is left alone (its attributes kept) and not yielded again
    zarrfast.open_group(store, path="a", mode="r+").attrs["keep"] = 1
    out = dict(zarrfast.create_hierarchy(store=store, nodes={"/a/x": GroupMetadata()}))
    assert list(out) == ["a/x"]
    assert zarrfast.open_group(store, path="a").attrs["keep"] == 1
    with pytest.raises(MetadataValidationError, match="both Zarr v2 and Zarr v3 nodes"):
        list(zarrfast.create_hierarchy(store={}, nodes={"p": GroupMetadata(),
                                                          "q": GroupMetadataV2()}))


def test_create_hierarchy_takes_what_the_other_functions_take(tmp_path, monkeypatch):
    """A path, a dict or None, as ``store=`` elsewhere; the store is resolved once, so
    with None every node is in the same new in-memory store."""
    import typing

    from zarrfast.core.group import GroupMetadata
    from zarrfast.storage.resolve import StoreLike

    hints = typing.get_type_hints(zarrfast.create_hierarchy,
                                  globalns=vars(zarrfast.api.synchronous))
    assert set(typing.get_args(StoreLike)) <= set(typing.get_args(hints["store"]))
    monkeypatch.chdir(tmp_path)
    for store in ("data.zarr", {}, None):
        out = dict(zarrfast.create_hierarchy(store=store, nodes={"a/b": GroupMetadata()}))
        assert sorted(out) == ["", "a", "a/b"], store
        assert len({id(node.store) for node in out.values()}) == 1, store
        root = out[""]
        assert root["a"]["b"].path == "a/b", store
    assert "a" in zarrfast.open_group("data.zarr", mode="r")


def test_group_like_creators_and_foreign_data_type_objects():
    import pytest

    zdt = pytest.importorskip("zarr.dtype")  # zarr-python's own data type objects
    g = zarrfast.group({})
    a = g.zeros_like(name="z", data=np.ones((3, 4), "f4"))
    assert a.shape == (3, 4) and a.dtype == np.dtype("f4") and not a[:].any()
    b = g.full_like(name="f", data=a, fill_value=7)
    assert b.chunks == a.chunks and (b[:] == 7).all()
    assert (g.ones_like(name="o", data=[1, 2])[:] == 1).all()
    assert g.empty_like(name="e", data=a).shape == (3, 4)
    for fmt in (2, 3):
        for theirs, ours in ((zdt.Int16(endianness="little"), "<i2"),
                             (zdt.FixedLengthUTF32(length=3, endianness="little"), "<U3"),
                             (zdt.DateTime64(endianness="little", scale_factor=10, unit="s"),
                              "<M8[10s]")):
            arr = zarrfast.create_array({}, shape=(2,), dtype=theirs, zarr_format=fmt)
            assert arr.dtype == np.dtype(ours), (fmt, theirs)


def test_warnings_have_zarr_pythons_names():
    from zarrfast import errors

    assert issubclass(errors.ZarrUserWarning, UserWarning)
    assert issubclass(errors.UnstableSpecificationWarning, FutureWarning)
    assert issubclass(errors.ZarrDeprecationWarning, DeprecationWarning)
    assert issubclass(errors.ZarrRuntimeWarning, RuntimeWarning)


def test_group_open_classmethod(tmp_path):
    import pytest

    from zarrfast.storage import LocalStore

    store = LocalStore(tmp_path / "g")
    with pytest.raises(FileNotFoundError):
        zarrfast.Group.open(store)
    zarrfast.Group.from_store(store, attributes={"a": 1})
    g = zarrfast.Group.open(store)
    assert isinstance(g, zarrfast.Group) and g.attrs["a"] == 1
    with pytest.raises(zarrfast.errors.ZarrfastError, match="no consolidated metadata"):
        zarrfast.Group.open(store, use_consolidated=True)
    zarrfast.consolidate_metadata(store)
    assert zarrfast.Group.open(store, use_consolidated=True).attrs["a"] == 1


def test_zarr_pythons_warnings_where_it_gives_them():
    import warnings

    import pytest

    from zarrfast.codecs.numcodecs import Delta
    from zarrfast.errors import ZarrUserWarning

    with pytest.warns(ZarrUserWarning, match="Numcodecs codecs are not in the Zarr version 3"):
        delta = Delta(dtype="i4")
    store: dict = {}
    zarrfast.create_array(store, shape=(4,), dtype="i4", filters=[delta])[:] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading the metadata back warns of nothing
        assert zarrfast.open_array(store).filters[0].codec_name == "numcodecs.delta"
    g = zarrfast.group({})
    g.create_group("child")
    with pytest.warns(ZarrUserWarning, match="Consolidated metadata is currently not part"):
        zarrfast.consolidate_metadata(g.store)


def test_deprecated_dataset_names_warn_and_work():
    import asyncio

    import pytest

    from zarrfast.errors import ZarrDeprecationWarning

    g = zarrfast.group({})
    data = np.arange(6.0).reshape(2, 3)
    with pytest.warns(ZarrDeprecationWarning, match=r"Group\.create_array instead\."):
        a = g.create_dataset("a", data=data, shape=data.shape)
    assert np.array_equal(a[:], data)
    with pytest.warns(ZarrDeprecationWarning, match=r"Group\.require_array instead\."):
        assert g.require_dataset("a", shape=(2, 3)).shape == (2, 3)

    async def run():
        ag = g.async_group if hasattr(g, "async_group") else zarrfast.AsyncGroup(g)
        with pytest.warns(ZarrDeprecationWarning, match=r"Group\.create_array instead\."):
            b = await ag.create_dataset("b", shape=(4,), dtype="u1")
        assert b.shape == (4,)
        await g.update_attributes_async({"k": 1})
    asyncio.run(run())
    assert g.attrs["k"] == 1


def test_create_refuses_what_zarr_python_refuses():
    import pytest

    cases = [
        ({"zarr_format": 2, "chunk_key_encoding": {"name": "default", "separator": "/"}},
         "chunk_key_encoding cannot be used for arrays with zarr_format 2"),
        ({"zarr_format": 2, "codecs": ["bytes"]}, "codecs cannot be used"),
        ({"zarr_format": 2, "dimension_names": ["x"]}, "dimension_names cannot be used"),
        ({"zarr_format": 3, "filters": []}, "filters cannot be used"),
        ({"zarr_format": 3, "compressor": "blosc"}, "compressor cannot be used"),
        ({"zarr_format": 3, "chunk_shape": (1,)}, "Only one of chunk_shape or chunks"),
    ]
    for kwargs, words in cases:
        with pytest.raises(ValueError, match=words):
            zarrfast.create(store={}, shape=(10,), chunks=(1,), dtype="u1", **kwargs)
    # without an explicit zarr_format, older code's compressor still works
    assert zarrfast.create(store={}, shape=(10,), dtype="u1", compressor=None).shape == (10,)


def test_async_views_check_their_node_and_take_the_configured_order():
    import pytest

    from zarrfast.storage import StorePath

    g = zarrfast.group({})
    with pytest.raises(zarrfast.errors.ZarrfastError, match="AsyncArray views a zarrfast Array"):
        zarrfast.AsyncArray._of(g)
    a = g.create_array("a", shape=(2, 3), dtype="i2")
    with zarrfast.config.set({"array.order": "F"}):
        view = zarrfast.AsyncArray(a.metadata, StorePath(g.store, "a"))
    assert view.order == "F"


def test_update_attributes_async_replaces_as_zarr_pythons_does():
    """zarr-python's Group.update_attributes_async writes the new attributes in place of
    the stored ones (Group.update_attributes merges them in); zarrfast does the same."""
    import asyncio

    import pytest

    zarr = pytest.importorskip("zarr")
    results = []
    for lib in (zarr, zarrfast):
        store = lib.storage.MemoryStore()
        g = lib.create_group(store, attributes={"foo": 100})
        new = asyncio.run(g.update_attributes_async({"bar": 100}))
        merged = lib.open_group(store).update_attributes({"baz": 1})
        results.append((dict(new.attrs), dict(lib.open_group(store).attrs), dict(merged.attrs)))
    assert results[1] == results[0] == (
        {"bar": 100}, {"bar": 100, "baz": 1}, {"bar": 100, "baz": 1})
