"""Codec objects, the registry, and third-party codecs found through entry points."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
    parse_codec,
    registry,
)
from zarrfast.codecs._base import BytesBytesCodec, parse_named_config
from zarrfast.errors import ChecksumError, CodecError, MetadataValidationError, UnknownCodecError

# registers the numcodecs.* codecs now, not inside a test that swaps in a temporary
# copy of the registry (which would then forget them)
from zarrfast.metadata import draft as _draft  # noqa: F401, E402, I001


@pytest.mark.parametrize(
    "codec",
    [
        BytesCodec(endian="little"),
        BytesCodec(endian="big"),
        BytesCodec(endian=None),
        TransposeCodec(order=(2, 0, 1)),
        GzipCodec(level=9),
        ZstdCodec(level=-3, checksum=True),
        BloscCodec(cname="lz4", clevel=1, shuffle="bitshuffle", typesize=2, blocksize=0),
        Crc32cCodec(),
    ],
    ids=repr,
)
def test_to_dict_from_dict_round_trip(codec) -> None:
    doc = codec.to_dict()
    again = parse_codec(doc)
    assert again == codec
    assert again.to_dict() == doc


def test_bytes_bytes_codecs_round_trip_bytes() -> None:
    payload = np.arange(1000, dtype="<u4").tobytes()
    for codec in (GzipCodec(level=1), ZstdCodec(level=1), Crc32cCodec(),
                  BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4)):
        encoded = codec.encode(payload)
        assert bytes(codec.decode(encoded)) == payload
        out = np.empty(len(payload), dtype=np.uint8)
        assert bytes(np.frombuffer(codec.decode(encoded, out=out), np.uint8)) == payload


def test_crc32c_detects_corruption() -> None:
    encoded = bytearray(Crc32cCodec().encode(b"hello world"))
    assert encoded[-4:] == (0xC99465AA).to_bytes(4, "little")  # CRC-32C of b"hello world"
    encoded[3] ^= 1
    with pytest.raises(ChecksumError, match="mismatch"):
        Crc32cCodec().decode(bytes(encoded))


def test_legacy_transpose_strings_resolve_against_rank() -> None:
    assert TransposeCodec(order="F").permutation(3) == (2, 1, 0)
    assert TransposeCodec(order="C").permutation(2) == (0, 1)
    with pytest.raises(MetadataValidationError, match="order"):
        TransposeCodec(order="X")


def test_unknown_codec_names_the_codec() -> None:
    with pytest.raises(UnknownCodecError, match="'nosuch'"):
        parse_codec({"name": "nosuch", "configuration": {}}, where="array 'a/b': codecs[1]")
    assert parse_codec({"name": "nosuch", "must_understand": False}) is None


@dataclass(frozen=True)
class XorCodec(BytesBytesCodec):
    """A toy bytes -> bytes codec a third party might register (XOR with a key byte)."""

    key: int = 0x5A
    name = "test.xor"

    @classmethod
    def from_dict(cls, data: Any) -> XorCodec:
        config = parse_named_config(data, cls.name, allowed=("key",))
        return cls(key=config.get("key", 0x5A))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"key": self.key}}

    def encode(self, data: Any) -> bytes:
        return (np.frombuffer(data, np.uint8) ^ self.key).tobytes()

    def decode(self, data: Any, out: Any = None) -> bytes:
        return (np.frombuffer(data, np.uint8) ^ self.key).tobytes()


def test_register_codec_and_use_it_in_an_array(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    registry.register_codec(XorCodec)
    data = np.arange(50, dtype="int16").reshape(5, 10)
    store: dict = {}
    a = zarrfast.create_array(store, shape=data.shape, chunks=(2, 4), dtype="int16",
                              compressors=[{"name": "test.xor", "configuration": {"key": 7}}])
    a[...] = data
    raw = store["c/0/0"]
    assert bytes(raw) != data[:2, :4].tobytes()  # stored XOR-ed, not plain
    b = zarrfast.open_array(store, mode="r")
    assert b.compressors == (XorCodec(key=7),)
    np.testing.assert_array_equal(b[...], data)


class PlainXorCodec(BytesBytesCodec):
    """A plugin codec written as a plain class with ``__eq__`` (so, unhashable)."""

    name = "test.plainxor"

    def __init__(self, key: int = 0x33) -> None:
        object.__setattr__(self, "key", key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PlainXorCodec) and other.key == self.key

    @classmethod
    def from_dict(cls, data: Any) -> PlainXorCodec:
        return cls(key=parse_named_config(data, cls.name, allowed=("key",)).get("key", 0x33))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"key": self.key}}

    def encode(self, data: Any) -> bytes:
        return (np.frombuffer(data, np.uint8) ^ self.key).tobytes()

    def decode(self, data: Any, out: Any = None) -> bytes:  # no limit=: not bounded by us
        return (np.frombuffer(data, np.uint8) ^ self.key).tobytes()


def test_unhashable_plugin_codec_anywhere_in_the_chain(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    registry.register_codec(PlainXorCodec)
    with pytest.raises(TypeError):
        hash(PlainXorCodec())
    data = np.arange(60, dtype="int16").reshape(6, 10)
    for compressors in ([{"name": "test.plainxor"}, {"name": "zstd"}],
                        [{"name": "zstd"}, {"name": "test.plainxor"}]):
        a = zarrfast.create_array({}, shape=data.shape, chunks=(4, 4), dtype="int16",
                                  compressors=compressors)
        a[...] = data
        np.testing.assert_array_equal(a[...], data)


def test_entry_point_plugin_is_discovered(tmp_path, monkeypatch) -> None:
    """A codec published under the ``zarrfast.codecs`` entry-point group by an installed
    distribution is found by name, without being imported beforehand."""
    pkg = tmp_path / "zf_plugin_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        import zlib
        from zarrfast.codecs._base import BytesBytesCodec, parse_named_config

        @dataclass(frozen=True)
        class DeflateCodec(BytesBytesCodec):
            name = "demo.deflate"

            @classmethod
            def from_dict(cls, data):
                parse_named_config(data, cls.name)
                return cls()

            def to_dict(self):
                return {"name": self.name}

            def encode(self, data):
                return zlib.compress(bytes(data))

            def decode(self, data, out=None):
                return zlib.decompress(bytes(data))
    '''))
    dist = tmp_path / "zf_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zf-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[zarrfast.codecs]\ndemo.deflate = zf_plugin_demo:DeflateCodec\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    assert "zf_plugin_demo" not in sys.modules
    codec = parse_codec({"name": "demo.deflate"})
    assert type(codec).__module__ == "zf_plugin_demo"
    data = np.linspace(0, 1, 64).reshape(8, 8)
    a = zarrfast.create_array({}, shape=data.shape, chunks=(4, 4), dtype="float64",
                              compressors=["demo.deflate"])
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    monkeypatch.delitem(sys.modules, "zf_plugin_demo")


@pytest.mark.parametrize("backend", ["zstandard", "numcodecs"])
def test_zstd_decoding_paths_agree(monkeypatch, backend) -> None:
    """python-zstandard (GIL released) and numcodecs decode the same frames, refuse the
    same bad ones, and bound their output the same way."""
    from zarrfast.codecs import compressors

    if backend == "numcodecs":
        monkeypatch.setattr(compressors, "_zstandard", None)
    elif compressors._zstandard is None:
        pytest.skip("python-zstandard is not installed")
    codec = ZstdCodec(level=1)
    payload = np.arange(5000, dtype="<u4").tobytes()
    frame = bytes(codec.encode(payload))
    assert bytes(codec.decode(frame)) == payload
    assert bytes(codec.decode(frame, limit=len(payload))) == payload
    out = bytearray(len(payload))
    assert bytes(codec.decode(frame, out=out)) == payload and bytes(out) == payload
    with pytest.raises(CodecError, match=str(len(payload))):
        codec.decode(frame, out=bytearray(len(payload) - 1))
    with pytest.raises(CodecError):
        codec.decode(frame[:-7], out=bytearray(len(payload)))
    with pytest.raises(CodecError):
        codec.decode(frame, limit=len(payload) // 2)
    # two frames back to back (numcodecs decodes both): 2x the bytes, refused for `out`
    with pytest.raises(CodecError):
        codec.decode(frame + frame, out=bytearray(len(payload)))
    assert bytes(codec.decode(frame + frame)) == payload * 2


@pytest.mark.parametrize("level", [-5, 0, 1, 3, 19])
@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_encodes_the_same_bytes_as_numcodecs(level, checksum):
    """zstd encoding gives numcodecs' bytes (its libzstd: python-zstandard's, a newer
    one, compresses some inputs differently), so files match zarr-python's."""
    import numcodecs

    from zarrfast.codecs import ZstdCodec

    rng = np.random.default_rng(level + 10 + 100 * checksum)
    samples = [np.zeros(4096, np.uint16), np.arange(30000, dtype=np.uint32),
               rng.integers(0, 50, 20000).astype(np.uint8), np.arange(3, dtype=np.uint8),
               np.empty(0, np.uint8),
               rng.integers(0, 4, 256 * 1024).astype(np.uint8)]  # (where libzstd versions differ)
    codec = ZstdCodec(level=level, checksum=checksum)
    ref = numcodecs.Zstd(level=level, checksum=checksum)
    for x in samples:
        got = codec.encode(x.view(np.uint8))
        assert bytes(got) == bytes(ref.encode(x.view(np.uint8)))
        np.testing.assert_array_equal(
            np.frombuffer(codec.decode(got, limit=x.nbytes), dtype=x.dtype), x)


def test_blosc_encodes_the_bytes_of_numcodecs_context_path():
    """blosc encoding calls c-blosc's blosc_compress_ctx with one internal thread and
    the GIL released: byte for byte what numcodecs gives off the main thread (its
    context path); numcodecs decodes it back."""
    from concurrent.futures import ThreadPoolExecutor

    import numcodecs

    from zarrfast import kernels as _kernels
    from zarrfast.codecs import BloscCodec

    if _kernels.blosc_compress is None:  # pragma: no cover
        pytest.skip("c-blosc is not bound")
    rng = np.random.default_rng(7)
    samples = [np.arange(50000, dtype=np.uint16).view(np.uint8),
               rng.integers(0, 9, 70000).astype(np.uint8), np.arange(7, dtype=np.uint8),
               np.zeros(0, np.uint8), rng.random(9000).view(np.uint8)]
    shuffles = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}

    def check() -> int:
        n = 0
        for cname in ("lz4", "zstd", "blosclz", "zlib", "lz4hc"):
            for shuffle, code in shuffles.items():
                for typesize, clevel, blocksize in ((1, 5, 0), (4, 1, 4096), (8, 9, 0)):
                    codec = BloscCodec(cname, clevel, shuffle, typesize, blocksize)
                    ref = numcodecs.Blosc(cname=cname, clevel=clevel, shuffle=code,
                                          blocksize=blocksize, typesize=typesize)
                    for x in samples:
                        got = bytes(codec.encode(x))
                        assert got == bytes(ref.encode(x)), (cname, shuffle, typesize)
                        if x.size:  # (numcodecs cannot decode an empty buffer's bytes)
                            back = np.frombuffer(ref.decode(got), dtype=np.uint8)
                            np.testing.assert_array_equal(back, x)
                        n += 1
        return n

    with ThreadPoolExecutor(1) as pool:  # (numcodecs' context path: off the main thread)
        assert pool.submit(check).result() == 5 * 3 * 3 * len(samples)


def test_blosc_compressor_missing_from_the_build_is_a_codec_error():
    from zarrfast.codecs import BloscCodec
    from zarrfast.errors import CodecError

    with pytest.raises(CodecError, match="snappy"):
        BloscCodec("snappy", 5, "shuffle", 2, 0).encode(np.zeros(100, np.uint8))


def test_blosc_refuses_chunks_over_its_limit_clearly():
    from zarrfast import kernels as _kernels
    from zarrfast.codecs import BloscCodec
    from zarrfast.errors import CodecError

    if _kernels.blosc_compress is None:  # pragma: no cover
        pytest.skip("c-blosc is not bound")
    huge = np.empty(2**31, dtype=np.uint8)  # (never touched: refused before reading)
    with pytest.raises(CodecError, match="limit"):
        BloscCodec("lz4", 5, "shuffle", 2, 0).encode(huge)
