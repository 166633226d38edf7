"""The ``numcodecs.*`` codecs: round trips over data types x codecs, the core codecs' fast
paths under their numcodecs names, what users pass for a codec, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.codecs import parse_codec
from zarrfast.codecs.numcodecs_v3 import NUMCODECS_KINDS
from zarrfast.errors import MetadataValidationError, UnknownCodecError

N = "numcodecs."

#: codec JSON -> the data types it makes sense for (lossless ones only: exact round trips)
LOSSLESS: list[tuple[dict, tuple[str, ...]]] = [
    ({"name": N + "blosc", "configuration": {"cname": "lz4", "shuffle": 2}}, ("i2", "f8", "u1")),
    ({"name": N + "zstd", "configuration": {"level": 5}}, ("f4", "i8", "c8")),
    ({"name": N + "lz4", "configuration": {}}, ("f8", "u4")),
    ({"name": N + "zlib", "configuration": {"level": 1}}, ("i4",)),
    ({"name": N + "gzip", "configuration": {"level": 1}}, ("f2",)),
    ({"name": N + "bz2", "configuration": {}}, ("u2",)),
    ({"name": N + "lzma", "configuration": {}}, ("i1",)),
    ({"name": N + "shuffle", "configuration": {}}, ("f8", "i4")),
    ({"name": N + "crc32", "configuration": {}}, ("f4",)),
    ({"name": N + "crc32c", "configuration": {"location": "start"}}, ("i2",)),
    ({"name": N + "adler32", "configuration": {}}, ("u8",)),
    ({"name": N + "fletcher32", "configuration": {}}, ("f8",)),
    ({"name": N + "jenkins_lookup3", "configuration": {}}, ("i4",)),
    ({"name": N + "delta", "configuration": {}}, ("i4", "u2", "i8")),
    ({"name": N + "packbits", "configuration": {}}, ("bool",)),
    ({"name": N + "astype", "configuration": {"encode_dtype": "i8"}}, ("i4", "i2")),
    ({"name": N + "pcodec", "configuration": {"level": 4}}, ("f4", "f8", "i4", "u8")),
]


def _kwargs(codec: dict, dtype: str) -> dict:
    kind = NUMCODECS_KINDS[codec["name"][len(N):]]
    if codec["name"] == N + "delta":
        codec = {**codec, "configuration": {"dtype": dtype}}
    if kind == "array_array":
        return {"filters": [codec]}
    if kind == "array_bytes":
        return {"serializer": codec, "compressors": None}
    return {"compressors": [codec]}


def _data(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    return (rng.normal(size=shape) * 1000).astype(dt)


CASES = [(c, d) for c, dtypes in LOSSLESS for d in dtypes]


@pytest.mark.parametrize(("codec", "dtype"), CASES,
                         ids=[f"{c['name'][len(N):]}-{d}" for c, d in CASES])
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       chunk=st.lists(st.integers(1, 5), min_size=3, max_size=3),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_lossless_round_trip(tmp_path_factory, codec, dtype, shape, chunk, seed, data):
    shape = tuple(shape)
    chunks = tuple(chunk[: len(shape)])
    path = tmp_path_factory.mktemp("rt") / "a"
    rng = np.random.default_rng(seed)
    a = zarrfast.create_array(path, shape=shape, chunks=chunks, dtype=dtype,
                              **_kwargs(codec, dtype))
    value = _data(rng, dtype, shape)
    a[...] = value
    # a partial overwrite: a box of the array
    box = tuple(slice(data.draw(st.integers(0, s - 1)), s) for s in shape)
    patch = _data(rng, dtype, tuple(b.stop - b.start for b in box))
    a[box] = patch
    value[box] = patch
    got = zarrfast.open_array(path)[...]
    assert got.dtype == np.dtype(dtype)
    assert got.tobytes() == value.tobytes()


@pytest.mark.parametrize("codec", [
    {"name": N + "bitround", "configuration": {"keepbits": 7}},
    {"name": N + "quantize", "configuration": {"digits": 2}},
    {"name": N + "fixedscaleoffset", "configuration": {"offset": 0, "scale": 100,
                                                       "astype": "i4"}},
    {"name": N + "zfpy", "configuration": {"mode": 4, "tolerance": 0.001}},
], ids=lambda c: c["name"])
def test_lossy_codecs_stay_within_their_precision(tmp_path, codec):
    pytest.importorskip("zfpy") if "zfpy" in codec["name"] else None
    v = np.random.default_rng(1).normal(size=(11, 6))
    a = zarrfast.create_array(tmp_path / "a", shape=v.shape, chunks=(4, 4), dtype="f8",
                              **_kwargs(codec, "f8"))
    a[...] = v
    assert np.allclose(zarrfast.open_array(tmp_path / "a")[...], v, atol=0.02, rtol=0.01)


def test_every_wrapped_numcodecs_codec_is_registered():
    names = zarrfast.codecs.registered_codecs()
    assert {N + cid for cid in NUMCODECS_KINDS} <= set(names)
    assert len(NUMCODECS_KINDS) == 21


@pytest.mark.parametrize(("name", "config", "batch"), [
    ("zstd", {"level": 3}, "zstd"), ("zstd", {}, "zstd"),
    ("blosc", {}, "blosc"), ("blosc", {"cname": "zstd", "shuffle": 0}, "blosc"),
])
def test_numcodecs_zstd_and_blosc_take_the_batched_decoder(tmp_path, name, config, batch):
    a = zarrfast.create_array(tmp_path / "a", shape=(64, 64), chunks=(16, 16), dtype="f4",
                              compressors=[{"name": N + name, "configuration": config}])
    assert a.codec_chain.batch_codec == batch
    v = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    a[...] = v
    assert np.array_equal(zarrfast.open_array(tmp_path / "a")[...], v)
    # the bytes are numcodecs' own: numcodecs decodes a stored chunk
    stored = (tmp_path / "a" / "c" / "1" / "2").read_bytes()
    impl = numcodecs.get_codec({"id": name, **config})
    assert np.array_equal(np.frombuffer(impl.decode(stored), "<f4").reshape(16, 16),
                          v[16:32, 32:48])


def test_what_users_pass_for_a_codec(tmp_path):
    """numcodecs objects, zarr-python's wrappers (anything with ``to_dict``) and JSON."""
    zarr = pytest.importorskip("zarr")
    wrappers = pytest.importorskip("zarr.codecs.numcodecs")
    with pytest.warns(UserWarning):
        delta = wrappers.Delta(dtype="i4")
    a = zarrfast.create_array(tmp_path / "a", shape=(10,), chunks=(4,), dtype="i4",
                              filters=[delta], compressors=numcodecs.Zstd(level=2))
    codecs = json.loads((tmp_path / "a" / "zarr.json").read_text())["codecs"]
    assert codecs[0] == {"name": N + "delta", "configuration": {"dtype": "i4"}}
    assert codecs[-1] == {"name": N + "zstd",
                          "configuration": {"level": 2, "checksum": False}}
    a[:] = np.arange(10)
    assert np.array_equal(zarr.open_array(tmp_path / "a")[:], np.arange(10))


def _open_error(tmp_path, codecs, dtype="float32"):
    md = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": dtype,
          "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
          "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs}
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "zarr.json").write_text(json.dumps(md))
    with pytest.raises((MetadataValidationError, UnknownCodecError)) as e:
        zarrfast.open_array(tmp_path, path="bad")
    return str(e.value)


LE = {"name": "bytes", "configuration": {"endian": "little"}}


def test_an_unknown_numcodecs_codec_names_the_node_and_the_name(tmp_path):
    msg = _open_error(tmp_path, [LE, {"name": N + "nosuch", "configuration": {}}])
    assert "bad" in msg and "numcodecs.nosuch" in msg


@pytest.mark.parametrize(("codecs", "field"), [
    ([LE, {"name": N + "zstd", "configuration": {"levle": 3}}], "levle"),
    ([LE, {"name": N + "blosc", "configuration": {"cname": "nosuch"}}], "nosuch"),
    ([{"name": N + "delta", "configuration": {"dtype": "i8"}}, LE], "dtype"),
    ([{"name": N + "astype", "configuration": {"encode_dtype": "f2",
                                                "decode_dtype": "i4"}}, LE], "decode_dtype"),
    ([{"name": N + "packbits", "configuration": {}}, LE], "bool"),
    ([{"name": N + "quantize", "configuration": {"digits": 2}}, LE], "dtype"),
    ([LE, {"name": N + "delta", "configuration": {"dtype": "f4"}}], "array -> array"),
])
def test_a_misconfigured_codec_names_the_node_and_the_field(tmp_path, codecs, field):
    msg = _open_error(tmp_path, codecs)
    assert "'bad'" in msg and field in msg, msg


def test_a_codec_from_a_missing_extra_names_the_codec_and_the_extra(tmp_path,
                                                                    subprocess_cwd):
    md = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
          "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
          "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
          "codecs": [{"name": N + "pcodec", "configuration": {"level": 3}}]}
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "zarr.json").write_text(json.dumps(md))
    # a Python where ``import pcodec`` fails, as without the extra
    code = ("import sys; sys.modules['pcodec'] = None\n"
            "import zarrfast\n"
            f"try:\n    zarrfast.open_array({str(tmp_path)!r}, path='p')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=subprocess_cwd, check=True).stdout
    assert "UnknownCodecError" in out and "'p'" in out and "numcodecs.pcodec" in out
    assert ('pip install "zarrfast[pcodec]" (from a source checkout: '
            'pip install ".[pcodec]")') in out


def test_numcodecs_codecs_parse_and_print_back():
    for cid in NUMCODECS_KINDS:
        config = {"dtype": "f8"} if cid in ("delta", "quantize", "fixedscaleoffset") else {}
        config |= {"digits": 2} if cid == "quantize" else {}
        config |= {"offset": 0, "scale": 1} if cid == "fixedscaleoffset" else {}
        config |= {"encode_dtype": "f4", "decode_dtype": "f8"} if cid == "astype" else {}
        config |= {"keepbits": 3} if cid == "bitround" else {}
        config |= {"mode": 4, "tolerance": 0.1} if cid == "zfpy" else {}
        doc = {"name": N + cid, "configuration": config}
        c = parse_codec(doc)
        assert c.kind == NUMCODECS_KINDS[cid]
        assert c.to_dict() == doc
