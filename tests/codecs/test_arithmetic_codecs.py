"""``scale_offset``, ``cast_value``, ``bitround`` and ``reshape``: round trips, the
registry's rules, and bad input named when the array opens."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs.arithmetic import ReshapeCodec, _round_int
from zarrfast.errors import CodecError, MetadataValidationError, UnsupportedDataTypeError

LE = {"name": "bytes", "configuration": {"endian": "little"}}


@pytest.mark.parametrize(("spec", "chunk", "encoded"), [
    ([[0, 1], [2], 3], (100, 50, 64, 3), (5000, 64, 3)),  # the registry's example
    ([-1], (4, 5, 6), (120,)),
    ([2, -1, 3], (4, 5, 6), (2, 20, 3)),
    ([[0], [1, 2]], (4, 5, 6), (4, 30)),
])
def test_reshape_shapes_as_the_registry_says(tmp_path, spec, chunk, encoded):
    codec = ReshapeCodec.from_dict({"name": "reshape", "configuration": {"shape": spec}})
    assert codec.encoded_shape(chunk) == encoded
    assert codec.to_dict()["configuration"]["shape"] == spec
    shape = tuple(2 * c - 1 for c in chunk[:2]) + chunk[2:]
    v = np.random.default_rng(0).integers(0, 100, size=shape).astype("i2")
    a = zarrfast.create_array(tmp_path / "a", shape=shape, chunks=chunk, dtype="i2",
                              filters=[codec.to_dict()])
    a[...] = v
    assert np.array_equal(zarrfast.open_array(tmp_path / "a")[...], v)
    # the stored chunk is the chunk's elements in C order
    stored = zarrfast.open_array(tmp_path / "a").store.get("c/" + "/".join("0" * len(chunk)))
    import zstandard

    raw = np.frombuffer(zstandard.ZstdDecompressor().decompress(bytes(stored)), "<i2")
    first = v[tuple(slice(0, c) for c in chunk)]
    assert np.array_equal(raw, first.reshape(-1))


@pytest.mark.parametrize(("spec", "message"), [
    ([[1], [0]], "strictly increasing"),
    ([-1, -1], "at most once"),
    ([7], "holds 7 elements"),
    ([0], "positive size"),
    ([[1], 4], "does not line up"),
])
def test_reshape_refuses_what_the_registry_forbids(tmp_path, spec, message):
    md = {"zarr_format": 3, "node_type": "array", "shape": [4, 6, 2],
          "data_type": "int16", "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
          "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3, 2]}},
          "codecs": [{"name": "reshape", "configuration": {"shape": spec}}, LE]}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "zarr.json").write_text(json.dumps(md))
    with pytest.raises(MetadataValidationError, match=message) as e:
        zarrfast.open_array(tmp_path, path="r")
    assert "'r'" in str(e.value)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]),
       st.integers(1, 12), st.data())
def test_bitround_on_integers_matches_exact_integer_arithmetic(dtype, keepbits, data):
    info = np.iinfo(dtype)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1,
                                max_size=20))
    got = _round_int(np.array(values, dtype=dtype), keepbits)
    for v, g in zip(values, got.tolist(), strict=True):
        m = abs(v)
        drop = max(m.bit_length() - keepbits, 0)
        base, low = m >> drop, m & ((1 << drop) - 1)
        half = 1 << (drop - 1) if drop else 0
        up = drop > 0 and (low > half or (low == half and base & 1))
        r = (base + up) << drop
        if r > (-int(info.min) if v < 0 else int(info.max)):
            r = base << drop
        assert g == (-r if v < 0 else r), (v, keepbits)


def test_scale_offset_refuses_what_it_cannot_represent(tmp_path):
    a = zarrfast.create_array(tmp_path / "a", shape=(4,), chunks=(4,), dtype="u1",
                              filters=[{"name": "scale_offset",
                                        "configuration": {"offset": 10, "scale": 2}}])
    with pytest.raises(CodecError, match="outside uint8"):
        a[:] = np.array([0, 1, 2, 3], "u1")  # 0 - 10 < 0
    with pytest.raises(CodecError, match="outside uint8"):
        a[:] = np.array([200, 11, 12, 13], "u1")  # (200 - 10) * 2 > 255
    a[:] = np.array([10, 11, 12, 100], "u1")
    assert a[:].tolist() == [10, 11, 12, 100]


def test_cast_value_an_unknown_data_type_is_an_unsupported_data_type() -> None:
    from zarrfast.codecs import CastValueCodec

    with pytest.raises(UnsupportedDataTypeError, match="'nope'"):
        CastValueCodec({"data_type": "nope"})


def test_cast_value_without_its_package_says_how_to_install_it(subprocess_cwd) -> None:
    code = ("import sys; sys.modules['cast_value_rs'] = None\n"
            "import zarrfast\n"
            "from zarrfast.codecs import CastValueCodec\n"
            "try:\n"
            "    zarrfast.create_array(store={}, shape=(2,), dtype='float32',\n"
            "                          filters=[CastValueCodec({'data_type': 'uint8'})])[:] = 1\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=subprocess_cwd, timeout=60, check=True).stdout
    assert "UnknownCodecError" in out, out
    assert ('pip install "zarrfast[cast]" (from a source checkout: pip install ".[cast]")'
            in out), out


@pytest.mark.parametrize(("codec", "message"), [
    ({"name": "scale_offset", "configuration": {"scale": 0}}, "scale must be non-zero"),
    ({"name": "scale_offset", "configuration": {"offset": "x"}}, "offset"),
    ({"name": "scale_offset", "configuration": {"shift": 1}}, "shift"),
    ({"name": "cast_value", "configuration": {}}, "data_type"),
    ({"name": "cast_value", "configuration": {"data_type": "int8", "rounding": "up"}},
     "rounding"),
    ({"name": "cast_value", "configuration": {"data_type": "float16",
                                              "out_of_range": "wrap"}}, "wrap"),
    ({"name": "cast_value", "configuration": {"data_type": "int8",
                                              "scalar_map": {"encode": [[1]]}}},
     "scalar_map"),
    ({"name": "bitround", "configuration": {"keepbits": 0}}, "keepbits"),
])
def test_misconfigured_extension_codecs_name_the_node_and_the_field(tmp_path, codec,
                                                                     message):
    md = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
          "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
          "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
          "codecs": [codec, LE]}
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "zarr.json").write_text(json.dumps(md))
    with pytest.raises(MetadataValidationError, match=message) as e:
        zarrfast.open_array(tmp_path, path="x")
    assert "'x'" in str(e.value)
