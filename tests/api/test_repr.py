"""What users read: reprs, ``info``, ``info_complete()`` and ``tree()`` print what
zarr-python prints for the same nodes, apart from lines that depend on the implementation
(stored bytes).  Array ``info`` is compared with zarr-python 3.4 (the ``zarr_peer``, in
a Python 3.12 venv); the rest with the zarr-python installed beside zarrfast."""

from __future__ import annotations

import pickle
import re
import textwrap
import warnings

import pytest

import zarrfast

zarr = pytest.importorskip("zarr")

IMPLEMENTATION_LINES = ("No. bytes stored", "Storage ratio")


def _both(**kwargs):
    """The same array made by zarr-python and by zarrfast, each in a memory store."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = zarr.create_array(zarr.storage.MemoryStore(), **kwargs)
    ours = zarrfast.create_array(zarrfast.storage.MemoryStore(), **kwargs)
    return ref, ours


def _lines(info) -> list[str]:
    return [line for line in repr(info).splitlines()
            if not line.startswith(IMPLEMENTATION_LINES)]


#: the arrays compared, as the keywords' source (evaluated here and in the peer)
CASES = [
    'dict(shape=(100, 100), chunks=(10, 10), dtype="int32")',
    'dict(shape=(100, 100), chunks=(10, 10), shards=(50, 50), dtype="f8")',
    'dict(shape=(5,), dtype="bool")',
    'dict(shape=(5,), dtype="u1")',
    'dict(shape=(5,), dtype="f4", fill_value=np.nan)',
    'dict(shape=(5,), dtype="c16")',
    'dict(shape=(5,), dtype="U3")',
    'dict(shape=(5,), dtype="S3")',
    'dict(shape=(5,), dtype="V3")',
    'dict(shape=(5,), dtype=str)',
    'dict(shape=(5,), dtype="M8[10s]")',
    'dict(shape=(5,), dtype="m8[ms]")',
    'dict(shape=(5,), dtype=">i4", zarr_format=2)',
    'dict(shape=(5,), dtype="U4", zarr_format=2)',
    'dict(shape=(5,), dtype="i2", zarr_format=2, fill_value=None)',
    'dict(shape=(5,), dtype="i2", zarr_format=2, compressors=None)',
    'dict(shape=(5,), dtype="i2", zarr_format=2, filters=[numcodecs.Delta(dtype="i2")], '
    'compressors=[numcodecs.Blosc()])',
    'dict(shape=(5, 4), dtype="i2", order="F", zarr_format=2)',
    # the v3 codecs, spelled the same in both libraries
    'dict(shape=(4, 4), dtype="f8", filters=[zarr.codecs.TransposeCodec(order=(1, 0))], '
    'serializer=zarr.codecs.BytesCodec(endian="big"), compressors=[zarr.codecs.BloscCodec(), '
    'zarr.codecs.GzipCodec(), zarr.codecs.Crc32cCodec()])',
]

#: what is printed of one array: ``info``; ``info_complete()`` (implementation lines left
#: out) after writing zeros (fill-value chunks: none stored) and, for numbers, ones
_PRINTS = """
import warnings
import numcodecs
import numpy as np

IMPLEMENTATION_LINES = ("No. bytes stored", "Storage ratio")


def lines(info):
    return [line for line in repr(info).splitlines()
            if not line.startswith(IMPLEMENTATION_LINES)]


def prints(zarr, source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(zarr.storage.MemoryStore(),
                              **eval(source, {"np": np, "numcodecs": numcodecs, "zarr": zarr}))
        out = [repr(a.info)]
        a[...] = np.zeros(a.shape, a.dtype)
        out.append(lines(a.info_complete()))
        if a.dtype.kind in "iuf":
            a[...] = 1
            out.append(lines(a.info_complete()))
    return out
"""


@pytest.fixture(scope="module")
def zarr_python_prints(zarr_peer) -> dict[str, list]:
    """What zarr-python 3.4 prints for each of ``CASES``."""
    return dict(zip(CASES, zarr_peer.run(_PRINTS + """
import zarr
emit([prints(zarr, source) for source in ARGS])
""", CASES), strict=True))


@pytest.mark.parametrize("source", CASES)
def test_info_and_info_complete_as_zarr_python(source, zarr_python_prints) -> None:
    namespace: dict = {}
    exec(_PRINTS, namespace)
    ours = namespace["prints"](zarrfast, source)
    assert ours == zarr_python_prints[source]


def test_info_prints_str_as_repr() -> None:
    a = zarrfast.create_array({}, shape=(3,), dtype="i2")
    assert str(a.info) == repr(a.info)


def test_info_of_v2_strings_as_zarr_python(zarr_peer) -> None:
    # zarrfast keeps v2 strings as NumPy objects (8 bytes each), zarr-python as
    # StringDType (16): the byte count differs, the rest is the same
    theirs = zarr_peer.run("""
        import zarr
        a = zarr.create_array(zarr.storage.MemoryStore(), shape=(5,), dtype=str, zarr_format=2)
        emit(repr(a.info).splitlines())
    """)
    ours = zarrfast.create_array(zarrfast.storage.MemoryStore(), shape=(5,), dtype=str,
                                 zarr_format=2)
    ours_lines = [line for line in _lines(ours.info) if not line.startswith("No. bytes")]
    assert ours_lines == [line for line in theirs if not line.startswith("No. bytes")]
    assert "Filters            : (VLenUTF8(),)" in ours_lines


def test_info_complete_counts_bytes_and_chunks() -> None:
    a = zarrfast.create_array(zarrfast.storage.MemoryStore(), shape=(100,), chunks=(10,),
                              dtype="i8", compressors=None)
    a[:25] = 7
    rows = dict(line.split(" : ", 1) for line in repr(a.info_complete()).splitlines())
    stored = int(rows["No. bytes stored".ljust(18)].split()[0])
    assert stored == a.nbytes_stored() > 3 * 80
    assert rows["Chunks Initialized".ljust(18)] == "3"
    assert rows["No. bytes".ljust(18)] == "800"
    assert rows["Storage ratio".ljust(18)] == f"{800 / stored:.1f}"
    assert "Chunk shape" in a.info and "Shard shape" not in a.info


def test_human_readable_sizes() -> None:
    from zarrfast.hierarchy.info import byte_info, human_readable_size

    assert [human_readable_size(2**p) for p in (0, 10, 20, 30, 40, 50)] == \
        ["1", "1.0K", "1.0M", "1.0G", "1.0T", "1.0P"]
    assert byte_info(1023) == "1023" and byte_info(1_000_000) == "1000000 (976.6K)"


def _hierarchy(mod, path=None):
    g = mod.group(store=mod.storage.MemoryStore(), path=path)
    a = g.create_group("A")
    b = g.create_group("B")
    c = b.create_group("C")
    d = c.create_group("C")
    a.create_array(name="x", shape=(2,), dtype="float64")
    a.create_array(name="y", shape=(0,), dtype="int8")
    for node in (b, c, d):
        node.create_array(name="x", shape=(0,), dtype="float64")
    return g


@pytest.mark.parametrize("path", [None, "root"])
@pytest.mark.parametrize("atty", [True, False])
@pytest.mark.parametrize("plain", [True, False])
def test_tree_as_zarr_python(path, atty, plain, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdout.isatty", lambda: atty)
    ref, ours = _hierarchy(zarr, path), _hierarchy(zarrfast, path)
    for level in (None, 0, 1, 2):
        assert repr(ours.tree(level=level, plain=plain)) == \
            repr(ref.tree(level=level, plain=plain))
    text = repr(ours.tree(plain=True))
    assert text.splitlines()[1:4] == ["├── A", "│   ├── x (2,) float64", "│   └── y (0,) int8"]
    if not plain:
        ours_bundle = ours.tree()._repr_mimebundle_()
        assert ours_bundle == ref.tree()._repr_mimebundle_()
        assert "<b>A</b>" in ours_bundle["text/html"]


def test_tree_truncates_escapes_and_refuses_expand() -> None:
    g = zarrfast.group()
    for name in "abcde":
        g.create_group(name)
    text = repr(g.tree(max_nodes=3, plain=True))
    assert text.startswith("Truncated at max_nodes=3")
    assert sum("──" in line for line in text.splitlines()) == 3
    assert "Truncated" not in repr(g.tree(plain=True))
    g.create_group("<img src=x>")
    bundle = g.tree()._repr_mimebundle_()
    assert "&lt;img src=x&gt;" in bundle["text/html"] and "<img" not in bundle["text/html"]
    assert "<img src=x>" in bundle["text/plain"]
    with pytest.raises(NotImplementedError, match="expand"):
        g.tree(expand=True)


def test_deep_tree_does_not_recurse() -> None:
    g = zarrfast.group()
    node = g
    for _ in range(60):
        node = node.create_group("d")
    lines = repr(g.tree(plain=True)).splitlines()
    assert len(lines) == 61 and lines[-1] == " " * 4 * 59 + "└── d"


def test_group_info_as_zarr_python() -> None:
    stores = []
    for mod in (zarr, zarrfast):
        root = mod.group(store=mod.storage.MemoryStore())
        foo = root.create_group("foo")
        foo.create_array(name="bar", shape=(10,), dtype="i8")
        foo.create_group("baz").create_array(name="q", shape=(3,), dtype="i1")
        stores.append(root)
    ref, ours = stores
    assert repr(ours.info) == repr(ref.info)
    assert repr(ours.info_complete()) == repr(ref.info_complete())
    assert repr(ours["foo"].info) == repr(ref["foo"].info)
    assert repr(ours["foo"].info_complete()) == repr(ref["foo"].info_complete())
    assert repr(ours["foo"].info_complete()).splitlines()[0] == "Name        : foo"
    assert repr(ours.info_complete()).splitlines()[-3:] == [
        "No. members : 4", "No. arrays  : 2", "No. groups  : 2"]


def test_group_info_from_consolidated_metadata_counts_members() -> None:
    store = zarrfast.storage.MemoryStore()
    root = zarrfast.group(store=store)
    root.create_group("a").create_array(name="x", shape=(2,), dtype="i1")
    zarrfast.consolidate_metadata(store)
    opened = zarrfast.open_consolidated(store)
    assert repr(opened.info).splitlines()[-3:] == [
        "No. members : 2", "No. arrays  : 1", "No. groups  : 1"]
    assert repr(opened["a"].info).splitlines()[-3:] == [
        "No. members : 1", "No. arrays  : 1", "No. groups  : 0"]
    assert "No. members" not in repr(root.info)


def test_reprs_of_nodes_and_stores_as_zarr_python(tmp_path) -> None:
    store = zarrfast.storage.MemoryStore()
    root = zarrfast.group(store=store)
    a = root.create_group("g").create_array("a", shape=(3, 4), dtype="f4")
    url = f"memory://{id(store._data)}"
    assert str(store) == url and repr(store) == f"MemoryStore('{url}')"
    assert repr(root) == f"<Group {url}>"
    assert repr(root["g"]) == f"<Group {url}/g>"
    assert repr(a) == f"<Array {url}/g/a shape=(3, 4) dtype=float32>"
    assert repr(zarrfast.create_array(store, name="", shape=(2,), dtype="i1",
                                      overwrite=True)) == f"<Array {url} shape=(2,) dtype=int8>"
    assert "read_only=True" in repr(store.with_read_only(True))

    local = zarrfast.storage.LocalStore(tmp_path / "d.zarr")
    ref_local = zarr.storage.LocalStore(tmp_path / "d.zarr")
    assert (str(local), repr(local)) == (str(ref_local), repr(ref_local))
    arr = zarrfast.create_array(local, name="x/y", shape=(2,), dtype="i2")
    assert repr(arr) == f"<Array file://{(tmp_path / 'd.zarr').as_posix()}/x/y shape=(2,) dtype=int16>"

    zip_path = tmp_path / "z.zip"
    with zarrfast.storage.ZipStore(zip_path, mode="w") as zs:
        assert str(zs) == str(zarr.storage.ZipStore(zip_path, mode="w", read_only=False))
        assert repr(zs).startswith(f"ZipStore('zip://{zip_path}'")


def test_array_repr_with_store_url_is_stable_through_pickle(tmp_path) -> None:
    a = zarrfast.create_array(zarrfast.storage.LocalStore(tmp_path), shape=(3,), dtype="i4")
    b = pickle.loads(pickle.dumps(a))
    assert repr(a) == repr(b)
    assert re.fullmatch(r"<Array file://\S+ shape=\(3,\) dtype=int32>", repr(b))


def test_relative_paths_print_as_given(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ours = zarrfast.open_group("data/group.zarr", mode="w")
    theirs = zarr.open_group("data/theirs.zarr", mode="w")
    assert repr(ours) == "<Group file://data/group.zarr>"
    assert repr(theirs) == "<Group file://data/theirs.zarr>"
    assert repr(ours.create_array("a", shape=(2,), dtype="i1")) == \
        "<Array file://data/group.zarr/a shape=(2,) dtype=int8>"
    assert ours.store.root == tmp_path / "data" / "group.zarr"  # (used absolute)
    assert repr(ours.store.with_read_only(True)) == \
        "LocalStore('file://data/group.zarr', read_only=True)"
    with zarrfast.storage.ZipStore("data.zip", mode="w") as zs:
        a = zarrfast.create_array(zs, shape=(2,), dtype="f8")
        assert repr(a) == "<Array zip://data.zip shape=(2,) dtype=float64>"
        assert str(zs.with_read_only(True)) == "zip://data.zip"


def test_zarr_python_store_prints_its_url() -> None:
    inner = zarr.storage.MemoryStore()
    ours = zarrfast.create_array(zarrfast.storage.ZarrPythonStore(inner), shape=(2,),
                                 dtype="f8")
    assert repr(ours) == f"<Array {inner} shape=(2,) dtype=float64>"


@pytest.mark.parametrize("shards", [None, (4, 4)])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_info_complete_and_nbytes_stored_byte_for_byte(shards, zarr_format, zarr_peer) -> None:
    """Uncompressed, the stored bytes are the same (metadata documents included: the
    chunk key encoding's separator is written out, as zarr-python writes it)."""
    if shards is not None and zarr_format == 2:
        pytest.skip("no shards in Zarr v2")
    kwargs = dict(shape=(8, 8), dtype="f8", chunks=(2, 2), shards=shards, compressors=None,
                  zarr_format=zarr_format)
    script = """
        a = zarr.create_array(zarr.storage.MemoryStore(), **ARGS)
        out = [repr(a.info_complete())]
        a[:4, :4] = 10
        out += [repr(a.info_complete()), a.nbytes_stored(), a.nchunks_initialized]
        emit(out)
    """
    theirs = zarr_peer.run("import zarr\n" + textwrap.dedent(script), kwargs)
    namespace: dict = {"zarr": zarrfast, "ARGS": kwargs, "emit": lambda out: out}
    exec(textwrap.dedent(script).replace("emit(out)", "RESULT = out"), namespace)
    assert namespace["RESULT"] == theirs


def test_draft_nodes_print_like_the_others() -> None:
    from pathlib import Path

    root = Path(__file__).parents[1] / "fixtures" / "drafts" / "zarrita"
    g = zarrfast.open_group(str(root), mode="r")
    assert repr(g) == f"<Group file://{root.as_posix()} (zarrita, read-only)>"
    a = g["grp/sub/u1_blosc"]
    assert repr(a) == (f"<Array file://{root.as_posix()}/grp/sub/u1_blosc shape=(13,) "
                       f"dtype=uint8 (zarrita, read-only)>")
    assert "Read-only          : True" in a.info
    assert "│       └── u1_blosc (13,) uint8" in repr(g.tree(plain=True))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_info_records_answer_zarr_pythons_field_name(zarr_format, zarr_peer) -> None:
    """zarr-python's info records keep their fields behind an underscore, and libraries read
    them there (ome-zarr: ``group.info._zarr_format``)."""
    g = zarrfast.open_group({}, mode="w", zarr_format=zarr_format)
    a = g.create_array("a", shape=(2,), dtype="int8")
    ours = [g.info._zarr_format, g.info_complete()._zarr_format, a.info._zarr_format,
            a.info_complete()._zarr_format]
    theirs = zarr_peer.run("""
        import zarr
        g = zarr.open_group({}, mode="w", zarr_format=ARGS)
        a = g.create_array("a", shape=(2,), dtype="int8")
        emit([g.info._zarr_format, g.info_complete()._zarr_format, a.info._zarr_format,
              a.info_complete()._zarr_format])
    """, zarr_format)
    assert ours == theirs == [zarr_format] * 4


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_info_records_give_codec_objects_under_zarr_pythons_names(zarr_format,
                                                                    zarr_peer) -> None:
    """``info._compressors`` (and ``_filters``, ``_serializer``) are codec objects, as in
    zarr-python's record: ome-zarr checks ``info._compressors[0].to_dict()`` (Zarr v3) and
    ``.get_config()`` (v2); the plain fields answer under their underscore names too."""
    import numcodecs

    g = zarrfast.open_group({}, mode="w", zarr_format=zarr_format)
    if zarr_format == 3:
        comp = zarrfast.codecs.BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")
    else:
        comp = numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    a = g.create_array("a", shape=(6,), chunks=(3,), dtype="uint8", compressors=comp,
                       filters=[numcodecs.Delta(dtype="u1")] if zarr_format == 2 else ())
    info = a.info

    def describe(c):
        return c.to_dict() if zarr_format == 3 else c.get_config()

    ours = [[describe(c) for c in info._compressors], [describe(c) for c in info._filters],
            None if info._serializer is None else info._serializer.to_dict(),
            list(info._shape), list(info._chunk_shape), info._order, info._read_only,
            info._store_type, g.info._name, g.info._read_only, g.info._store_type]
    theirs = zarr_peer.run("""
        import numcodecs, zarr
        fmt = ARGS
        g = zarr.open_group({}, mode="w", zarr_format=fmt)
        if fmt == 3:
            comp = zarr.codecs.BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")
        else:
            comp = numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
        a = g.create_array("a", shape=(6,), chunks=(3,), dtype="uint8", compressors=comp,
                           filters=[numcodecs.Delta(dtype="u1")] if fmt == 2 else ())
        info = a.info
        describe = (lambda c: c.to_dict()) if fmt == 3 else (lambda c: c.get_config())
        emit([[describe(c) for c in info._compressors], [describe(c) for c in info._filters],
              None if info._serializer is None else info._serializer.to_dict(),
              list(info._shape), list(info._chunk_shape), info._order, info._read_only,
              info._store_type, g.info._name, g.info._read_only, g.info._store_type])
    """, zarr_format)
    assert ours == theirs
    with pytest.raises(AttributeError, match="_nonexistent"):
        info._nonexistent  # noqa: B018
