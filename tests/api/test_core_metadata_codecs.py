"""``zarrfast.core.metadata.ArrayV3Metadata`` (and ``zarrfast.core.group``'s metadata
classes) hold codec objects, as zarr-python's do, however they are made: from a document,
from the constructor, changed, or as a node's ``metadata``.  Libraries that build and
inspect zarr-python's metadata (virtualizarr) rely on it.  The metadata layer below keeps
the codecs' JSON (tests/metadata/test_import_registries.py)."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest

import zarrfast
import zarrfast.core.group
import zarrfast.core.metadata
from zarrfast.metadata import v3 as layer

zarr = pytest.importorskip("zarr")
zc = pytest.importorskip("zarr.codecs")

CoreArray = zarrfast.core.metadata.ArrayV3Metadata
CoreGroup = zarrfast.core.group.GroupMetadata
CoreConsolidated = zarrfast.core.group.ConsolidatedMetadata


def _written_by_zarr_python(**kwargs):
    """The ``zarr.json`` zarr-python writes for an array made with ``kwargs``."""
    store = zarr.storage.MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store, shape=(8, 6), chunks=(4, 3), **kwargs)
    return json.loads(store._store_dict["zarr.json"].to_bytes())


def _numcodecs_delta():
    nz = pytest.importorskip("numcodecs.zarr3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(dtype="int32", filters=[nz.Delta(dtype="int32")],
                    compressors=[nz.Zlib(level=2)])


DOCUMENTS = {
    "uncompressed int16": lambda: dict(dtype="int16", compressors=None),
    "zstd float64": lambda: dict(dtype="float64", compressors=zc.ZstdCodec(level=3,
                                                                        checksum=True)),
    "gzip uint8": lambda: dict(dtype="uint8", compressors=zc.GzipCodec(level=5)),
    "blosc int32": lambda: dict(dtype="int32", compressors=zc.BloscCodec(
        cname="lz4", clevel=3, shuffle="bitshuffle")),
    "transpose": lambda: dict(dtype="float32", filters=[zc.TransposeCodec(order=(1, 0))]),
    "crc32c": lambda: dict(dtype="int64", compressors=[zc.ZstdCodec(), zc.Crc32cCodec()]),
    "sharded": lambda: dict(dtype="uint16", shards=(8, 6), compressors=zc.ZstdCodec()),
    "big-endian": lambda: dict(dtype=">i4", serializer=zc.BytesCodec(endian="big")),
    "strings": lambda: dict(dtype=str),
    "numcodecs": _numcodecs_delta,
}


@pytest.mark.parametrize("case", sorted(DOCUMENTS))
def test_from_dict_gives_zarr_pythons_codec_objects(case):
    doc = _written_by_zarr_python(**DOCUMENTS[case]())
    theirs = zarr.core.metadata.ArrayV3Metadata.from_dict(json.loads(json.dumps(doc)))
    ours = CoreArray.from_dict(json.loads(json.dumps(doc)))
    assert [type(c).__name__ for c in ours.codecs] == [type(c).__name__ for c in theirs.codecs]
    assert repr(ours.codecs) == repr(theirs.codecs)
    assert all(isinstance(c, zarrfast.codecs.Codec) for c in ours.codecs)
    if case == "sharded":  # the codecs inside the sharding codec too
        assert repr(ours.codecs[0].codecs) == repr(theirs.codecs[0].codecs)
    # the document is kept as it was written, and reads back to equal metadata
    assert ours.to_dict() == doc
    again = CoreArray.from_dict(ours.to_dict())
    assert again == ours and repr(again) == repr(ours)
    # equal to the metadata layer's reading of it (whose codecs are the JSON), both ways
    plain = layer.ArrayV3Metadata.from_dict(doc)
    assert plain.codecs == tuple(doc["codecs"])
    assert ours == plain and plain == ours and not (ours != plain)


def test_constructor_and_changes_keep_codec_objects_as_zarr_pythons():
    doc = _written_by_zarr_python(dtype="float32", compressors=zc.ZstdCodec(level=2))
    theirs = zarr.core.metadata.ArrayV3Metadata.from_dict(doc)
    ours = CoreArray.from_dict(doc)
    made = CoreArray(shape=(8, 6), data_type=ours.data_type, chunk_grid=ours.chunk_grid,
                     chunk_key_encoding=ours.chunk_key_encoding,
                     fill_value=ours.fill_value, codecs=doc["codecs"],
                     storage_transformers=ours.storage_transformers)
    assert repr(made.codecs) == repr(theirs.codecs) and made == ours
    assert made.to_dict()["codecs"] == doc["codecs"]
    for mine, zp in ((ours.update_shape((16, 6)), theirs.update_shape((16, 6))),
                     (ours.update_attributes({"u": 1}), theirs.update_attributes({"u": 1}))):
        assert type(mine) is CoreArray
        assert repr(mine.codecs) == repr(zp.codecs)
        assert mine.to_dict()["codecs"] == doc["codecs"]
    assert ours.update_shape((16, 6)).to_dict()["shape"] == [16, 6]
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert repr(pickle.loads(pickle.dumps(ours)).codecs) == repr(theirs.codecs)


def test_an_unknown_codec_stays_json_until_the_array_is_used():
    doc = _written_by_zarr_python(dtype="uint8", compressors=None)
    doc["codecs"].append({"name": "x-unknown", "must_understand": False})
    md = CoreArray.from_dict(doc)
    assert type(md.codecs[0]).__name__ == "BytesCodec"
    assert md.codecs[1] == {"name": "x-unknown", "must_understand": False}
    assert md.to_dict() == doc


def test_nodes_metadata_is_the_core_class(tmp_path):
    store = zarrfast.storage.LocalStore(tmp_path / "d.zarr")
    a = zarrfast.create_array(store, name="a", shape=(8, 6), chunks=(4, 3), dtype="i2",
                              compressors=zarrfast.codecs.ZstdCodec(level=1))
    a[:] = np.arange(48, dtype="i2").reshape(8, 6)
    opened = zarrfast.open_array(store, path="a")
    assert isinstance(opened.metadata, CoreArray)
    assert isinstance(opened.async_array.metadata, CoreArray)
    doc = json.loads((tmp_path / "d.zarr" / "a" / "zarr.json").read_bytes())
    assert opened.metadata == CoreArray.from_dict(doc)
    assert repr(opened.metadata.codecs) == repr(
        zarr.core.metadata.ArrayV3Metadata.from_dict(doc).codecs)
    group = zarrfast.open_group(store)
    assert isinstance(group.metadata, CoreGroup)
    # an array made from the core class's metadata reads and writes
    b = zarrfast.Array(store, "a", CoreArray.from_dict(doc))
    assert np.array_equal(b[:], a[:])
    b[0, 0] = 99
    assert opened[0, 0] == 99


def test_consolidated_metadata_holds_codec_objects_as_zarr_pythons():
    def hierarchy(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = lib.storage.MemoryStore()
            g = lib.create_group(store)
            g.create_array("a", shape=(4,), chunks=(2,), dtype="f8")
            g.create_group("child").create_array("b", shape=(2, 2), chunks=(1, 2),
                                                 dtype="i2", compressors=None)
            lib.consolidate_metadata(store)
            return store, lib.open_group(store, mode="r", use_consolidated=True)

    (their_store, theirs), (_, ours) = hierarchy(zarr), hierarchy(zarrfast)
    doc = json.loads(their_store._store_dict["zarr.json"].to_bytes())
    for md in (ours.metadata, CoreGroup.from_dict(doc)):
        assert isinstance(md, CoreGroup)
        cm = md.consolidated_metadata
        assert isinstance(cm, CoreConsolidated)
        flat, their_flat = cm.flattened_metadata, theirs.metadata.consolidated_metadata.\
            flattened_metadata
        assert sorted(flat) == sorted(their_flat) == ["a", "child", "child/b"]
        for key in ("a", "child/b"):
            assert isinstance(flat[key], CoreArray)
            assert repr(flat[key].codecs) == repr(their_flat[key].codecs)
        assert isinstance(cm.metadata["child"], CoreGroup)
        assert isinstance(cm.metadata["child"].consolidated_metadata, CoreConsolidated)
    made = CoreGroup.from_dict(doc)
    assert made.to_dict() == doc and made == layer.GroupMetadata.from_dict(doc)
    members = CoreConsolidated.from_dict(doc["consolidated_metadata"]).metadata
    assert repr(members["a"].codecs) == repr(
        theirs.metadata.consolidated_metadata.metadata["a"].codecs)
    # the metadata layer's members given to the core classes are held as the core classes
    plain = layer.ConsolidatedMetadata.from_dict(doc["consolidated_metadata"])
    assert isinstance(plain.metadata["a"].codecs[0], dict)
    for cm in (CoreConsolidated(metadata=plain.metadata),
               CoreGroup(consolidated_metadata=plain).consolidated_metadata):
        assert type(cm.metadata["a"]) is CoreArray
        assert repr(cm.metadata["a"].codecs) == repr(members["a"].codecs)
