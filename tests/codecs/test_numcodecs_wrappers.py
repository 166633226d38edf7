"""``zarrfast.codecs.numcodecs``: zarr-python's numcodecs classes (``Delta``, ``LZMA``...) write
the metadata zarr-python writes, and each side reads what the other wrote; and the blosc
enums ``BloscShuffle`` / ``BloscCname``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import zarr
import zarr.codecs.numcodecs as znc

import zarrfast
from zarrfast.codecs import BloscCname, BloscCodec, BloscShuffle, parse_codec
from zarrfast.codecs import numcodecs as fnc
from zarrfast.errors import MetadataValidationError

pytestmark = pytest.mark.interop

#: class name -> (keyword arguments, data type, where it goes)
CASES = {
    "Blosc": ({"cname": "lz4", "clevel": 3, "shuffle": 1}, "i4", "compressors"),
    "Zstd": ({"level": 2}, "f8", "compressors"),
    "GZip": ({"level": 1}, "u2", "compressors"),
    "LZ4": ({}, "f4", "compressors"),
    "Zlib": ({"level": 1}, "i2", "compressors"),
    "BZ2": ({"level": 9}, "u1", "compressors"),
    "LZMA": ({"preset": 1}, "i8", "compressors"),
    "Shuffle": ({"elementsize": 8}, "f8", "compressors"),
    "CRC32": ({}, "i4", "compressors"),
    "CRC32C": ({}, "i4", "compressors"),
    "Adler32": ({}, "u4", "compressors"),
    "Fletcher32": ({}, "f4", "compressors"),
    "JenkinsLookup3": ({}, "i2", "compressors"),
    "Delta": ({"dtype": "<i4"}, "i4", "filters"),
    "BitRound": ({"keepbits": 10}, "f4", "filters"),
    "FixedScaleOffset": ({"offset": 1.0, "scale": 10, "dtype": "<f8", "astype": "<i4"}, "f8",
                         "filters"),
    "Quantize": ({"digits": 3, "dtype": "<f8"}, "f8", "filters"),
    "PackBits": ({}, "bool", "filters"),
    "AsType": ({"encode_dtype": "<f4", "decode_dtype": "<f8"}, "f8", "filters"),
    "PCodec": ({"level": 4}, "f8", "serializer"),
    "ZFPY": ({"mode": 4, "tolerance": -1, "rate": -1, "precision": -1}, "f8", "serializer"),
}


def _data(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    if dtype == "bool":
        return rng.random((30, 7)) > 0.5
    if np.dtype(dtype).kind == "f":
        return np.round(rng.random((30, 7)) * 100, 1).astype(dtype)
    return rng.integers(0, 100, (30, 7)).astype(dtype)


def _create(module, name: str, store, kwargs: dict, dtype: str, where: str):
    codec = getattr(module, name)(**kwargs)
    args = {where: codec if where == "serializer" else [codec]}
    if where == "serializer":
        args["compressors"] = None
    lib = zarrfast if module is fnc else zarr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns that numcodecs codecs are not spec
        arr = lib.create_array(store, shape=(30, 7), chunks=(8, 4), dtype=dtype, **args)
        arr[...] = _data(dtype)
    return codec


def test_every_zarr_python_class_has_a_twin() -> None:
    assert set(CASES) == {n for n in znc.__all__ if not n.startswith("_")}
    assert set(CASES) <= set(fnc.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_metadata_as_zarr_python(name: str) -> None:
    kwargs = CASES[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(znc, name)(**kwargs)
    ours = getattr(fnc, name)(**kwargs)
    assert ours.to_dict() == theirs.to_dict()
    assert ours.codec_name == theirs.codec_name
    assert ours.codec_config == theirs.codec_config
    assert repr(ours) == repr(theirs)
    # and back from the JSON, to an equal codec of the same class
    again = parse_codec(ours.to_dict())
    assert again.to_dict() == ours.to_dict()
    if name != "CRC32C":  # numcodecs.crc32c reads into the crc32c fast path
        assert type(again) is type(ours) and again == ours


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarrfast_writes_zarr_python_reads(tmp_path, name: str) -> None:
    kwargs, dtype, where = CASES[name]
    codec = _create(fnc, name, tmp_path / "a.zarr", kwargs, dtype, where)
    theirs = zarr.open_array(tmp_path / "a.zarr", mode="r")
    ours = zarrfast.open_array(tmp_path / "a.zarr", mode="r")
    np.testing.assert_array_equal(theirs[...], ours[...])
    if name not in ("BitRound", "Quantize", "AsType", "FixedScaleOffset", "ZFPY"):
        np.testing.assert_array_equal(ours[...], _data(dtype))
    stored = ours.metadata.to_dict()["codecs"]
    assert codec.to_dict() in stored or any(
        c.get("configuration", {}).get("codecs", [None])[0] == codec.to_dict() for c in stored)


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarr_python_writes_zarrfast_reads(tmp_path, name: str) -> None:
    kwargs, dtype, where = CASES[name]
    _create(znc, name, tmp_path / "a.zarr", kwargs, dtype, where)
    theirs = zarr.open_array(tmp_path / "a.zarr", mode="r")
    ours = zarrfast.open_array(tmp_path / "a.zarr", mode="r")
    np.testing.assert_array_equal(ours[...], theirs[...])
    got = {"filters": ours.filters, "compressors": ours.compressors,
           "serializer": (ours.serializer,)}[where]
    assert [c.codec_name for c in got] == [getattr(fnc, name)(**kwargs).codec_name]


def test_keyword_and_configuration_forms() -> None:
    assert fnc.Delta(dtype="<i2") == fnc.Delta(configuration={"dtype": "<i2"})
    assert fnc.Delta(id="delta", dtype="<i2").to_dict()["configuration"] == {"dtype": "<i2"}
    with pytest.raises(MetadataValidationError, match="'zlib'"):
        fnc.Delta(id="zlib", dtype="<i2")
    with pytest.raises(MetadataValidationError, match="not both"):
        fnc.Delta({"dtype": "<i2"}, dtype="<i2")
    with pytest.raises(MetadataValidationError, match="numcodecs.lzma"):
        fnc.LZMA(nonsense=1)
    with pytest.raises(MetadataValidationError, match="numcodecs.zstd"):
        fnc.Zstd(levle=1)


def test_missing_dtype_is_filled_from_the_array() -> None:
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(10,), dtype="f4", chunks=(5,),
                              filters=[fnc.Quantize(digits=2)])
    assert a.filters[0].codec_config["dtype"] == "float32"
    a[...] = np.linspace(0, 1, 10, dtype="f4")
    np.testing.assert_allclose(a[...], np.linspace(0, 1, 10), atol=0.01)


def test_blosc_enums() -> None:
    # zarr-python 3.4: the enums are deprecated names of plain strings
    assert BloscShuffle.from_int(2) == "bitshuffle"
    with pytest.raises(ValueError, match="3"):
        BloscShuffle.from_int(3)
    with pytest.warns(DeprecationWarning, match=r"BloscCname\.zstd is deprecated"):
        cname = BloscCname.zstd
    with pytest.warns(DeprecationWarning, match=r"BloscShuffle\.shuffle is deprecated"):
        shuffle = BloscShuffle.shuffle
    assert (cname, shuffle) == ("zstd", "shuffle") and type(cname) is str
    with_enums = BloscCodec(cname=cname, clevel=1, shuffle=shuffle, typesize=4)
    with_strings = BloscCodec(cname="zstd", clevel=1, shuffle="shuffle", typesize=4)
    assert with_enums == with_strings
    assert type(with_enums.to_dict()["configuration"]["cname"]) is str
    with pytest.raises(AttributeError):
        BloscCname.lzf  # noqa: B018
    with pytest.raises(MetadataValidationError, match="'lzf'"):
        BloscCodec(cname="lzf")


def test_enum_members_given_to_codecs_are_their_values() -> None:
    """An Enum member (a str-mixin enum mirroring zarr's old ones) is taken as its value,
    with zarr-python 3.4's DeprecationWarning."""
    import enum

    from zarrfast.codecs import BytesCodec, ShardingCodec

    class Cname(enum.StrEnum):
        lz4 = "lz4"

    with pytest.warns(DeprecationWarning, match=r"Passing an enum to BloscCodec"):
        codec = BloscCodec(cname=Cname.lz4)
    assert codec.cname == "lz4" and type(codec.cname) is str

    class Order(enum.StrEnum):
        big = "big"

    with pytest.warns(DeprecationWarning, match=r"Passing an enum to BytesCodec"):
        serializer = BytesCodec(endian=Order.big)
    assert serializer.endian == "big" and type(serializer.endian) is str

    class Where(enum.Enum):
        start = "start"

    with pytest.warns(DeprecationWarning, match=r"Passing an enum to ShardingCodec"):
        sharding = ShardingCodec(chunk_shape=(2,), index_location=Where.start)
    assert sharding.index_location == "start" and type(sharding.index_location) is str


def test_blosc_enums_in_an_array(tmp_path, zarr_peer) -> None:
    codec = BloscCodec(cname="lz4", shuffle="bitshuffle")
    a = zarrfast.create_array(tmp_path / "b.zarr", shape=(50,), dtype="u2", chunks=(10,),
                              compressors=[codec])
    a[...] = np.arange(50)
    theirs = zarr_peer.run("""
        import zarr
        a = zarr.open_array(ARGS, mode="r")
        emit([a[...].tolist(), a.compressors[0].cname, a.compressors[0].shuffle])
    """, str(tmp_path / "b.zarr"))
    assert theirs == [list(range(50)), "lz4", "bitshuffle"]


@pytest.mark.parametrize(("dtype", "kwargs"), [
    ("i4", {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}),
    ("f8", {}),
    ("u1", {"cname": "lz4"}),
])
def test_blosc_and_bytes_print_as_in_zarr_python(dtype, kwargs, zarr_peer) -> None:
    ours = zarrfast.create_array({}, shape=(10,), dtype=dtype,
                                 compressors=BloscCodec(**kwargs))
    theirs = zarr_peer.run("""
        import zarr
        dtype, kwargs = ARGS
        a = zarr.create_array({}, shape=(10,), dtype=dtype,
                              compressors=zarr.codecs.BloscCodec(**kwargs))
        emit([repr(a.compressors), repr(a.serializer)])
    """, [dtype, kwargs])
    assert [repr(ours.compressors), repr(ours.serializer)] == theirs


def test_endian_and_index_location_enums(zarr_peer) -> None:
    from zarrfast.codecs import BytesCodec, Endian, ShardingCodec, ShardingCodecIndexLocation

    with pytest.warns(DeprecationWarning, match=r"Endian\.big is deprecated"):
        assert BytesCodec(endian=Endian.big) == BytesCodec(endian="big")
    with pytest.warns(DeprecationWarning, match=r"ShardingCodecIndexLocation\.start"):
        start = ShardingCodec(chunk_shape=(2,), index_location=ShardingCodecIndexLocation.start)
    assert start == ShardingCodec(chunk_shape=(2,), index_location="start")
    assert start.to_dict()["configuration"]["index_location"] == "start"
    assert BytesCodec(endian="big").to_dict() == {"name": "bytes",
                                                  "configuration": {"endian": "big"}}
    with pytest.raises(MetadataValidationError, match="'middle'"):
        BytesCodec(endian="middle")
    theirs = zarr_peer.run("""
        import zarr
        emit([repr(zarr.codecs.BytesCodec(endian="big")),
              repr(zarr.codecs.BytesCodec(endian=None))])
    """)
    assert [repr(BytesCodec(endian="big")), repr(BytesCodec(endian=None))] == theirs


def test_classes_carry_codec_name_as_zarr_python(zarr_peer) -> None:
    """``Delta.codec_name`` on the class (zarr-python's tests look codecs up by it), and
    ``_NumcodecsCodec`` their base class, as zarr-python names them."""
    assert all(isinstance(getattr(fnc, n), type) for n in fnc.__all__)  # (classes only)
    names = sorted(fnc.__all__)
    theirs = zarr_peer.run("""
        import zarr.codecs.numcodecs as n
        emit({name: getattr(n, name).codec_name for name in ARGS
              if hasattr(getattr(n, name, None), "codec_name")})
    """, names)
    ours = {name: getattr(fnc, name).codec_name for name in names
            if issubclass(getattr(fnc, name), fnc._NumcodecsCodec)}
    assert ours == theirs
    assert all(zarrfast.codecs.get_codec_class(v) is getattr(fnc, k) for k, v in ours.items()
               if k != "CRC32C")  # (numcodecs.crc32c keeps its fast path's class)
