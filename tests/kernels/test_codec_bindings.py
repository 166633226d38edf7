"""Where the batched decoder's codec libraries come from: linked at build time, or
numcodecs' copies found with ctypes when the build had no library to link."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast import kernels

pytestmark = pytest.mark.skipif(kernels.ChunkDecoder is None,
                                reason="the batched decoder is not built")


def _decode_module():
    from zarrfast._ext import _decode

    return _decode


def test_every_bound_codec_says_how():
    for codec in ("zstd", "blosc", "gzip", "zlib"):
        how = kernels.CODEC_BINDINGS[codec]
        assert how.startswith(("linked at build time", "found with ctypes in", "not bound"))
        assert (codec in kernels.BATCH_CODECS) == (not how.startswith("not bound"))


def test_gzip_and_zlib_say_which_library_inflates():
    """libdeflate where it is (Debian's libdeflate0 is here with libtiff), else the zlib
    of Python's zlib module; the binding named is the one that decodes."""
    how = kernels.CODEC_BINDINGS["gzip"]
    assert kernels.CODEC_BINDINGS["zlib"] == how
    inflater = _decode_module().inflate_with()
    if inflater == "libdeflate":
        assert how.startswith("found with ctypes in") and how.endswith("(libdeflate)"), how
    elif inflater == "zlib":
        assert how.startswith("found with ctypes in") and how.endswith("'s inflate)"), how
    else:
        assert how.startswith("not bound"), how


def test_linked_libraries_are_the_ones_bound():
    _decode = _decode_module()
    zstd = _decode.linked_zstd()
    if zstd is not None:
        assert len(zstd) == 6 and all(zstd)
        assert kernels.CODEC_BINDINGS["zstd"].startswith("linked at build time (zstd ")
    blosc = _decode.linked_blosc()
    if blosc is not None:
        assert blosc[0] and blosc[1] and blosc[2].startswith("1.") and blosc[3]
        assert kernels.CODEC_BINDINGS["blosc"].startswith(f"linked at build time (c-blosc {blosc[2]})")


def test_the_version_names_the_bindings(subprocess_cwd):
    # (from a neutral directory: the installed zarrfast, not a source tree beside it)
    out = subprocess.run([sys.executable, "-m", "zarrfast", "--version"], check=True,
                         capture_output=True, text=True, cwd=subprocess_cwd).stdout
    assert out.splitlines()[0] == f"zarrfast {zarrfast.__version__}"
    for codec, how in kernels.CODEC_BINDINGS.items():
        assert f"{codec}: {how}" in out


_WITHOUT_LINKED = r"""
import json, sys
import numcodecs, numpy as np
from zarrfast import kernels
data = np.arange(4096, dtype="<i4").tobytes()
frames = {"zstd": numcodecs.Zstd(level=3).encode(data),
          "blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1).encode(data)}
out = {}
for codec, frame in frames.items():
    dst = np.zeros(len(data), dtype=np.uint8)
    one = np.array([0], np.int64)
    # one chunk of 4096 int32, placed whole (not straight into dst: the copy runs too)
    placement = kernels.Placement(len(data), one, np.array([4], np.int64), dst, one,
                                  np.array([4], np.int64), np.array([[4096]], np.int64), 4,
                                  1, np.zeros(1, np.uint8))
    status = kernels.ChunkDecoder(codec, len(data)).decode_regions(
        np.frombuffer(frame, np.uint8), one, np.array([len(frame)], np.int64), placement)
    out[codec] = [kernels.CODEC_BINDINGS[codec], dst.tobytes() == data, list(map(int, status))]
from zarrfast._ext import _decode
out["frames"] = _decode.blosc_frames()
json.dump(out, sys.stdout)
"""


def test_without_linked_libraries_numcodecs_copies_are_found_with_ctypes(subprocess_cwd):
    env = dict(os.environ, ZARRFAST_LINKED_CODECS="0")  # the linked libraries left unused
    res = json.loads(subprocess.run([sys.executable, "-c", _WITHOUT_LINKED], check=True,
                                    capture_output=True, text=True, env=env,
                                    cwd=subprocess_cwd).stdout)
    for codec in ("zstd", "blosc"):
        how, same, status = res[codec]
        assert how.startswith("found with ctypes in"), how
        assert same and status == [kernels.DECODED]
    # the linked LZ4 is left unused too: LZ4 and zstd blocks are zarrfast's all the same,
    # with numcodecs' LZ4 and zstd (a build without the libraries does what a linked one
    # does)
    assert res["frames"] == "c-blosc" or res["frames"].endswith("): lz4, zstd"), res["frames"]
    if res["frames"] != "c-blosc":
        assert "lz4, zstd (numcodecs' LZ4)" in res["blosc"][0], res["blosc"][0]


def test_blosc_compression_stays_numcodecs_bytes():
    if kernels.blosc_compress is None:
        pytest.skip("c-blosc compression is not bound: numcodecs encodes")
    data = np.linspace(0, 1, 50_000).astype("<f8").tobytes()
    for cname in ("lz4", "zstd", "blosclz", "zlib"):
        ours = kernels.blosc_compress(np.frombuffer(data, np.uint8), 5, 1, 8, cname.encode(), 0)
        theirs = numcodecs.Blosc(cname=cname, clevel=5, shuffle=1, blocksize=0).encode(
            np.frombuffer(data, "<f8"))  # typesize 8, as passed above
        assert bytes(ours) == bytes(theirs), cname
