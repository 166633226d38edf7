"""zarr-python 3.4's configuration keys and ``ArrayConfig`` fields, each doing what it does
in zarr-python 3.4.2 (compared with it through ``zarr_peer``):

- ``array.read_missing_chunks`` (and ``ArrayConfig.read_missing_chunks``): False makes a
  read that touches a chunk (of a sharded array: a shard) that is not stored raise
  ``ChunkNotFoundError`` naming the chunks; inner chunks missing from a stored shard read
  as the fill value;
- ``array.rectilinear_chunks``: False refuses to write or read a rectilinear grid
  (zarrfast's default is True, zarr-python's False: docs/migrating.md);
- ``array.sharding_coalesce_max_gap_bytes`` / ``_max_bytes`` and
  ``codec_pipeline.max_workers``: taken, checked and reported (``Array.config``);
- ``from_array`` takes chunks and shards as NumPy arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.config import BadConfigError
from zarrfast.errors import ZarrfastError
from zarrfast.hierarchy.array_config import ChunkNotFoundError, RectilinearChunksDisabledError


@pytest.fixture(autouse=True)
def _fresh_config():
    config.reset()
    yield
    config.reset()


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_every_zarr_python_34_key_is_known(zarr_peer) -> None:
    defaults = zarr_peer.run("""
        import zarr
        emit(zarr.config.defaults[0])
    """)
    flat = {k: v for k, v in _flat(defaults).items() if not k.startswith("codecs.")}
    for key in flat:
        config.get(key)  # raises for a key zarrfast does not have
    # the new keys have zarr-python's defaults, but for rectilinear_chunks (on purpose)
    for key in ("array.read_missing_chunks", "array.sharding_coalesce_max_gap_bytes",
                "array.sharding_coalesce_max_bytes", "codec_pipeline.max_workers",
                "array.allow_unsafe_pickle_decode", "array.order"):
        assert config.get(key) == flat[key], key
    assert flat["array.rectilinear_chunks"] is False
    assert config.get("array.rectilinear_chunks") is True


@pytest.mark.parametrize(("key", "value"), [
    ("array.read_missing_chunks", "no"), ("array.rectilinear_chunks", 1),
    ("array.sharding_coalesce_max_gap_bytes", -1), ("array.sharding_coalesce_max_bytes", 1.5),
    ("codec_pipeline.max_workers", 0)])
def test_new_keys_refuse_bad_values(key, value) -> None:
    with pytest.raises(BadConfigError, match=key.replace(".", r"\.")):
        config.set({key: value})


# -- read_missing_chunks ---------------------------------------------------------------------
_SCENARIO = """
import numpy as np


def missing_keys(lib, error, read):
    try:
        read()
    except error as e:
        text = str(e)
        return [line.split("'")[1] for line in text.splitlines() if line.startswith("  chunk")]
    return None


def scenario(lib, error, store, v2_store):
    out = []
    a = lib.create_array(store, name="plain", shape=(4, 4), chunks=(2, 2), dtype="int32",
                         fill_value=42, compressors=None)
    a[0:2, 0:2] = 1
    with lib.config.set({"array.read_missing_chunks": False}):
        b = lib.open_array(store, path="plain")
        out.append(b.config.read_missing_chunks)
        out.append(missing_keys(lib, error, lambda: b[:]))
        out.append(missing_keys(lib, error, lambda: b[0:2, 0:2]))
        out.append(missing_keys(lib, error, lambda: b[1, 3]))
        out.append(missing_keys(lib, error, lambda: b.oindex[[0, 3], [1]]))
        out.append(missing_keys(lib, error, lambda: b.vindex[[0, 3], [1, 3]]))
        out.append(missing_keys(lib, error, lambda: b.blocks[1, 0]))
        out.append(missing_keys(lib, error, lambda: b[np.zeros((4, 4), bool)]))
        out.append(b[0:2, 0:2].tolist())
    # opened before the setting: keeps its own (zarr-python resolves it when it opens)
    with lib.config.set({"array.read_missing_chunks": False}):
        out.append(a[:].tolist())
    # sharded: a missing shard raises, inner chunks missing in a stored shard read as fill
    s = lib.create_array(store, name="sharded", shape=(8, 4), chunks=(2, 2), shards=(4, 4),
                         dtype="int32", fill_value=42,
                         config={"read_missing_chunks": False})
    s[0:2, 0:2] = 1
    out.append(s[:4].tolist())
    out.append(missing_keys(lib, error, lambda: s[4:]))
    # write_empty_chunks=False drops fill-value chunks: they are missing then
    e = lib.create_array(store, name="empty", shape=(4,), chunks=(2,), dtype="int32",
                         config={"write_empty_chunks": False, "read_missing_chunks": False})
    e[:] = [1, 2, 3, 4]
    out.append(e[:].tolist())
    e[:2] = 0
    out.append(missing_keys(lib, error, lambda: e[:]))
    # 0-d and Zarr v2
    z = lib.create_array(store, name="scalar", shape=(), dtype="int8",
                         config={"read_missing_chunks": False})
    out.append(missing_keys(lib, error, lambda: z[()]))
    v2 = lib.create_array(v2_store, name="v2", shape=(4,), chunks=(2,), dtype="int8",
                          zarr_format=2, config={"read_missing_chunks": False})
    v2[:2] = 5
    out.append(missing_keys(lib, error, lambda: v2[:]))
    out.append(v2[:2].tolist())
    return out
"""


def test_read_missing_chunks_as_zarr_python(zarr_peer, tmp_path) -> None:
    theirs = zarr_peer.run(_SCENARIO + """
import zarr
from zarr.errors import ChunkNotFoundError
emit(scenario(zarr, ChunkNotFoundError, zarr.storage.MemoryStore(), zarr.storage.MemoryStore()))
""")
    namespace: dict = {}
    exec(_SCENARIO, namespace)
    for store, v2_store in ((zarrfast.storage.MemoryStore(), zarrfast.storage.MemoryStore()),
                            (zarrfast.storage.LocalStore(tmp_path / "a"),
                             zarrfast.storage.LocalStore(tmp_path / "b"))):
        assert namespace["scenario"](zarrfast, ChunkNotFoundError, store, v2_store) == theirs


def test_read_missing_chunks_message_names_store_and_keys() -> None:
    a = zarrfast.create_array({}, shape=(4,), chunks=(2,), dtype="i2",
                              config={"read_missing_chunks": False})
    with pytest.raises(ChunkNotFoundError) as info:
        a[:]
    text = str(info.value)
    assert text.startswith(f"2 chunk(s) not found in store '{a.store}'.\n")
    assert "Set the 'array.read_missing_chunks' config to True" in text
    assert "  chunk 'c/0' (grid position (0,))\n  chunk 'c/1' (grid position (1,))" in text
    assert isinstance(info.value, ZarrfastError)
    # an empty selection reads nothing, so finds nothing missing
    assert a[2:2].shape == (0,)


def test_read_missing_chunks_many_chunks_uses_one_listing() -> None:
    a = zarrfast.create_array({}, shape=(3000,), chunks=(1,), dtype="u1",
                              config={"read_missing_chunks": False})
    a[:2999] = 7
    with pytest.raises(ChunkNotFoundError, match=r"^1 chunk\(s\)[\s\S]*'c/2999'"):
        a[:]
    assert a[:2999].sum() == 7 * 2999


def test_array_config_fields_as_zarr_python(zarr_peer) -> None:
    given = {"read_missing_chunks": False, "sharding_coalesce_max_gap_bytes": 10,
             "sharding_coalesce_max_bytes": 20}
    theirs = zarr_peer.run("""
        import pickle, zarr
        a = zarr.create_array({}, shape=(2,), dtype="i1", config=ARGS)
        out = [repr(a.config), repr(pickle.loads(pickle.dumps(a)).config)]
        for bad in ({"read_missing_chunks": "yes"}, {"nope": 1}):
            try:
                zarr.create_array({}, shape=(2,), dtype="i1", config=bad)
                out.append(None)
            except (TypeError, ValueError) as e:
                out.append("refused")
        emit(out)
    """, given)
    import pickle

    a = zarrfast.create_array({}, shape=(2,), dtype="i1", config=given)
    assert [repr(a.config), repr(pickle.loads(pickle.dumps(a)).config)] == theirs[:2]
    for bad in ({"read_missing_chunks": "yes"}, {"nope": 1}):
        with pytest.raises(ZarrfastError):
            zarrfast.create_array({}, shape=(2,), dtype="i1", config=bad)
    assert theirs[2:] == ["refused", "refused"]
    # global settings become the array's when it is made
    with config.set({"array.sharding_coalesce_max_bytes": 99}):
        assert zarrfast.create_array({}, shape=(2,), dtype="i1").config.\
            sharding_coalesce_max_bytes == 99


# -- rectilinear_chunks -------------------------------------------------------------------------
def test_rectilinear_chunks_false_refuses_writes_and_reads(tmp_path) -> None:
    store = zarrfast.storage.LocalStore(tmp_path)
    a = zarrfast.create_array(store, name="r", shape=(6,), chunks=[[2, 4]], dtype="i1")
    a[:] = 3
    with config.set({"array.rectilinear_chunks": False}):
        with pytest.raises(RectilinearChunksDisabledError, match="Nothing was read"):
            zarrfast.open_array(store, path="r")
        with pytest.raises(RectilinearChunksDisabledError, match="Nothing was written"):
            zarrfast.create_array(store, name="s", shape=(6,), chunks=[[2, 4]], dtype="i1")
        with pytest.raises(RectilinearChunksDisabledError):
            a.resize((8,))
        assert not (tmp_path / "s").exists()
        # regular grids are untouched
        assert zarrfast.create_array(store, name="t", shape=(6,), chunks=(2,),
                                     dtype="i1").chunks == (2,)
    assert zarrfast.open_array(store, path="r").shape == (6,)
    assert isinstance(RectilinearChunksDisabledError("x"), ValueError)


def test_rectilinear_chunks_false_refuses_as_zarr_python(zarr_peer, tmp_path) -> None:
    zarrfast.create_array(tmp_path / "r.zarr", shape=(6,), chunks=[[2, 4]], dtype="i1")
    theirs = zarr_peer.run("""
        import zarr
        out = []
        for flag in (False, True):
            with zarr.config.set({"array.rectilinear_chunks": flag}):
                try:
                    out.append(zarr.open_array(ARGS).shape[0])
                except ValueError:
                    out.append("refused")
        emit(out)
    """, str(tmp_path / "r.zarr"))
    assert theirs == ["refused", 6]
    out = []
    for flag in (False, True):
        with config.set({"array.rectilinear_chunks": flag}):
            try:
                out.append(zarrfast.open_array(tmp_path / "r.zarr").shape[0])
            except ValueError:
                out.append("refused")
    assert out == theirs


# -- from_array ----------------------------------------------------------------------------------
@pytest.mark.parametrize("chunks", [np.array([11, 50]), (np.int64(40), np.int64(10)), [40, 10]])
@pytest.mark.parametrize("shards", [None, np.array([440, 100]), "keep"])
@pytest.mark.parametrize("as_numpy", [False, True])
def test_from_array_takes_numpy_chunks_and_shards(chunks, shards, as_numpy) -> None:
    src = zarrfast.create_array({}, shape=(100, 10), chunks=(40, 10), dtype="u1",
                                fill_value=2)
    src[:] = np.arange(1000).reshape(100, 10)
    out = zarrfast.from_array({}, data=src[:] if as_numpy else src, chunks=chunks,
                              shards=shards, fill_value=3)
    np.testing.assert_array_equal(out[:], src[:])
    np.testing.assert_array_equal(out.chunks, chunks)
    if isinstance(shards, np.ndarray):
        np.testing.assert_array_equal(out.shards, shards)
    else:
        assert out.shards is None


# -- allow_unsafe_pickle_decode ---------------------------------------------------------------
def test_pickled_chunks_are_read_only_where_allowed(tmp_path, monkeypatch) -> None:
    """Decoding pickles can run code: as in zarr-python 3.4, a Zarr v2 array with the
    pickle codec is read only where ``array.allow_unsafe_pickle_decode`` is True (and
    numcodecs' own switch is on)."""
    import json

    import numcodecs
    import numcodecs.pickles

    from zarrfast.hierarchy.array_config import PickleCodecDisabledError

    root = tmp_path / "p.zarr"
    root.mkdir()
    (root / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "compressor": None,
        "fill_value": 0, "filters": [{"id": "pickle"}], "order": "C"}))
    (root / "0").write_bytes(numcodecs.Pickle().encode(np.array([1, "a"], dtype=object)))
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)
    a = zarrfast.open_array(root, mode="r")
    with pytest.raises(PickleCodecDisabledError, match="allow_unsafe_pickle_decode"):
        a[:]
    with pytest.raises(PickleCodecDisabledError):
        a.oindex[[0]]
    with config.set({"array.allow_unsafe_pickle_decode": True}):
        assert a[:].tolist() == [1, "a"]


# -- from_array over its own source ------------------------------------------------------------
@pytest.mark.parametrize(("src_name", "dest_name"), [("a", "a"), ("g/a", "g"), ("g/a", ""),
                                                     ("a", "a/c")])
@pytest.mark.parametrize("kind", ["memory", "local"])
def test_from_array_refuses_to_overwrite_its_source(src_name, dest_name, kind, tmp_path):
    """Overwriting deletes the destination before the copy reads the source: where they
    overlap zarr-python 3.4 refuses ('the paths overlap'), and so does zarrfast (it copied
    fill values over the source, silently)."""
    store = (zarrfast.storage.MemoryStore() if kind == "memory"
             else zarrfast.storage.LocalStore(tmp_path))
    src = zarrfast.create_array(store, name=src_name, data=np.arange(4.0), fill_value=-1.0)
    with pytest.raises(ValueError, match="because the paths overlap"):
        zarrfast.from_array(store, name=dest_name, data=src, overwrite=True)
    np.testing.assert_array_equal(src[...], np.arange(4.0))
    # a read-only view of the same data overlaps too; another store does not
    view = zarrfast.open_array(store.with_read_only(True), path=src_name)
    with pytest.raises(ValueError, match="because the paths overlap"):
        zarrfast.from_array(store, name=src_name, data=view, overwrite=True)
    other = zarrfast.from_array(zarrfast.storage.MemoryStore(), name=src_name, data=src,
                                overwrite=True)
    np.testing.assert_array_equal(other[...], np.arange(4.0))
    # without overwrite the existing node is refused as before
    with pytest.raises(ValueError):
        zarrfast.from_array(store, name=src_name, data=src)


def test_resize_to_another_rank_is_refused_in_zarr_pythons_words() -> None:
    a = zarrfast.create_array({}, shape=(4, 4), dtype="i1")
    with pytest.raises(ZarrfastError, match="The new shape must have the same number of "
                                            r"dimensions as the array\. Got 1 dimension"):
        a.resize((20,))


def test_unknown_array_config_keys_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr
        out = []
        for call in (lambda: zarr.create_array({}, shape=(2,), dtype="i1", config={"nope": 1}),
                     lambda: zarr.group({}).require_array("a", shape=(2,), dtype="i1",
                                                          config={"nope": 1})):
            try:
                call()
            except TypeError as e:
                out.append(str(e))
        emit(out)
    """)
    ours = []
    for call in (lambda: zarrfast.create_array({}, shape=(2,), dtype="i1", config={"nope": 1}),
                 lambda: zarrfast.group({}).require_array("a", shape=(2,), dtype="i1",
                                                          config={"nope": 1})):
        with pytest.raises(TypeError) as info:
            call()
        ours.append(str(info.value))
    assert len(theirs) == 2
    for mine, zp in zip(ours, theirs, strict=True):
        assert mine.endswith(zp)  # (zarrfast names the array first, where it makes one)
