"""The ``numcodecs.*`` codecs against zarr-python 3.4 (run in its own Python 3.12 venv).

Every codec zarr-python 3 wraps (``zarr.codecs.numcodecs``), in the position zarr-python
puts it: zarr-python writes, zarrfast reads bit for bit; zarrfast writes the same
``create_array`` call, its ``zarr.json`` equals zarr-python's and zarr-python reads it back
bit for bit.  Arrays of 5 chunks: an edge chunk, a chunk never written (fill value) and a
non-default fill value.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrfast

pytestmark = pytest.mark.interop

N = "numcodecs."
#: case -> (dtype, {create_array codec arguments as zarr-python's wrapper calls})
CASES: dict[str, tuple[str, dict]] = {
    "blosc": ("f4", {"compressors": "Blosc()"}),
    "blosc_zstd_auto": ("i2", {"compressors": "Blosc(cname='zstd', clevel=3, shuffle=-1)"}),
    "lz4": ("f8", {"compressors": "LZ4()"}),
    "zstd": ("f4", {"compressors": "Zstd(level=3)"}),
    "zstd_checksum": ("f4", {"compressors": "Zstd(level=1, checksum=True)"}),
    "zlib": ("f8", {"compressors": "Zlib(level=4)"}),
    "gzip": ("f8", {"compressors": "GZip(level=4)"}),
    "bz2": ("u2", {"compressors": "BZ2(level=5)"}),
    "lzma": ("f8", {"compressors": "LZMA()"}),
    "shuffle": ("f8", {"compressors": "[Shuffle(), Zstd()]"}),
    "crc32": ("i4", {"compressors": "CRC32()"}),
    "crc32c": ("i4", {"compressors": "CRC32C()"}),
    "crc32c_start": ("i4", {"compressors": "CRC32C(location='start')"}),
    "adler32": ("i4", {"compressors": "Adler32()"}),
    "fletcher32": ("i4", {"compressors": "Fletcher32()"}),
    "jenkins_lookup3": ("i4", {"compressors": "JenkinsLookup3()"}),
    "delta": ("i4", {"filters": "[Delta(dtype='i4')]"}),
    "delta_astype": ("i8", {"filters": "[Delta(dtype='i8', astype='i2')]"}),
    "bitround": ("f4", {"filters": "[BitRound(keepbits=6)]"}),
    "fixedscaleoffset": ("f8", {"filters": "[FixedScaleOffset(offset=1, scale=10, "
                                           "astype='i2')]"}),
    "quantize": ("f8", {"filters": "[Quantize(digits=3)]"}),
    "packbits": ("bool", {"filters": "[PackBits()]"}),
    "astype": ("f8", {"filters": "[AsType(encode_dtype='f4', decode_dtype='f8')]"}),
    "pcodec": ("f4", {"serializer": "PCodec(level=3)", "compressors": "None"}),
    "zfpy": ("f8", {"serializer": "ZFPY(mode=4, tolerance=0.01)", "compressors": "None"}),
    "delta_zlib_crc32": ("i4", {"filters": "[Delta(dtype='i4')]",
                                "compressors": "[Zlib(level=1), CRC32()]"}),
}
SHAPE, CHUNKS = (37,), (8,)
FILL = {"f4": 1.5, "f8": -2.25, "i2": 7, "i4": -3, "i8": 11, "u2": 9, "bool": True}

_PEER_WRITE = """
import numpy as np, zarr, json
import zarr.codecs.numcodecs as nc
from zarr.codecs.numcodecs import *
out = {}
for name, (dtype, kw) in ARGS["cases"].items():
    kwargs = {k: eval(v) for k, v in kw.items()}
    path = ARGS["base"] + "/" + name
    a = zarr.create_array(path, shape=tuple(ARGS["shape"]), chunks=tuple(ARGS["chunks"]),
                          dtype=dtype, fill_value=ARGS["fill"][dtype], **kwargs)
    v = np.asarray(ARGS["values"][dtype]).astype(dtype)
    a[:16] = v[:16]          # chunks 0, 1
    a[24:] = v[24:]          # chunks 3, 4 (4 is the edge); chunk 2 stays the fill value
    out[name] = json.load(open(path + "/zarr.json"))["codecs"]
emit(out)
"""

_PEER_READ = """
import numpy as np, zarr
out = {}
for name in ARGS["names"]:
    a = zarr.open_array(ARGS["base"] + "/" + name)[:]
    out[name] = [a.dtype.str, a.view(np.uint8).tobytes().hex()]
emit(out)
"""


def _values(dtype: str) -> list:
    rng = np.random.default_rng(abs(hash(dtype)) % 1000)
    v = rng.normal(size=SHAPE) * 100
    if dtype == "bool":
        return (v > 0).tolist()
    return v.astype(dtype).tolist()


def _expected(dtype: str) -> np.ndarray:
    v = np.asarray(_values(dtype)).astype(dtype)
    out = v.copy()
    out[16:24] = FILL[dtype]
    return out


def _args(base: str) -> dict:
    dtypes = {d for d, _ in CASES.values()}
    return {"cases": CASES, "base": base, "shape": SHAPE, "chunks": CHUNKS, "fill": FILL,
            "values": {d: _values(d) for d in dtypes}}


@pytest.fixture(scope="module")
def peer_written(zarr_peer, tmp_path_factory):
    base = tmp_path_factory.mktemp("peer-numcodecs")
    codecs = zarr_peer.run(_PEER_WRITE, _args(str(base)))
    return base, codecs


def _lossy(name: str) -> bool:
    return name in ("bitround", "fixedscaleoffset", "quantize", "zfpy", "astype")


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarrfast_reads_what_zarr_python_writes(peer_written, name):
    base, codecs = peer_written
    assert any(c["name"].startswith(N) for c in codecs[name])
    arr = zarrfast.open_array(base / name)
    got = arr[:]
    dtype = CASES[name][0]
    assert got.dtype == np.dtype(dtype)
    exp = _expected(dtype)
    if _lossy(name):  # the peer's lossy encoding decoded: close, the fill chunk exact
        assert np.allclose(got, exp, rtol=0.05, atol=0.6)
        assert np.array_equal(got[16:24], exp[16:24])
    else:
        assert got.tobytes() == exp.tobytes()
    # partial reads across the missing chunk and the edge
    assert got[10:30].tobytes() == arr[10:30].tobytes()
    assert got[35:].tobytes() == arr[35:].tobytes()


def test_the_core_codecs_fast_paths_take_their_numcodecs_spellings(peer_written):
    base, _ = peer_written
    for name, batch in (("zstd", "zstd"), ("zstd_checksum", "zstd"), ("blosc", "blosc"),
                        ("blosc_zstd_auto", "blosc")):
        assert zarrfast.open_array(base / name).codec_chain.batch_codec == batch, name
    assert isinstance(zarrfast.open_array(base / "gzip").codec_chain.bb[0],
                      zarrfast.codecs.GzipCodec)
    assert isinstance(zarrfast.open_array(base / "crc32c").codec_chain.bb[0],
                      zarrfast.codecs.Crc32cCodec)
    assert not isinstance(zarrfast.open_array(base / "crc32c_start").codec_chain.bb[0],
                          zarrfast.codecs.Crc32cCodec)


@pytest.fixture(scope="module")
def zarrfast_written(zarr_peer, tmp_path_factory, peer_written):
    """zarrfast writes each case with zarr-python's own codec JSON as its arguments."""
    _, peer_codecs = peer_written
    base = tmp_path_factory.mktemp("zarrfast-numcodecs")
    for name, (dtype, _) in CASES.items():
        codecs = peer_codecs[name]
        by_kind: dict[str, list] = {"array_array": [], "array_bytes": [], "bytes_bytes": []}
        for c in codecs:
            by_kind[zarrfast.codecs.parse_codec(c).kind].append(c)
        kw = {"filters": by_kind["array_array"], "serializer": by_kind["array_bytes"][0],
              "compressors": by_kind["bytes_bytes"]}
        a = zarrfast.create_array(base / name, shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                                  fill_value=FILL[dtype], **kw)
        v = np.asarray(_values(dtype)).astype(dtype)
        a[:16] = v[:16]
        a[24:] = v[24:]
    read = zarr_peer.run(_PEER_READ, {"base": str(base), "names": sorted(CASES)})
    return base, read


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarr_python_reads_what_zarrfast_writes(zarrfast_written, peer_written, name):
    base, read = zarrfast_written
    _, peer_codecs = peer_written
    mine = json.loads((base / name / "zarr.json").read_text())["codecs"]
    assert mine == peer_codecs[name]  # the same metadata as zarr-python's for the same call
    dtype_str, hexbytes = read[name]
    assert np.dtype(dtype_str) == np.dtype(CASES[name][0])
    ours = zarrfast.open_array(base / name)[:]
    assert bytes.fromhex(hexbytes) == ours.view(np.uint8).tobytes()  # bit for bit
    if not _lossy(name):
        assert ours.tobytes() == _expected(CASES[name][0]).tobytes()
