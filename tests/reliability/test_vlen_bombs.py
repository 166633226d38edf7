"""Decode bombs in variable-length data (issue "Reliability II", class 9): a chunk of
strings, bytes or objects whose compressed bytes inflate far beyond what its element
count allows is refused naming the chunk, before the memory is taken.  The limit comes
from the element count (``config vlen_bytes_per_element``, 1024 by default, and 64 MiB
at least) and can be raised.

Each read runs in a child Python with an address-space limit, so a regression fails
the test instead of exhausting the machine.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zarrfast

numcodecs = pytest.importorskip("numcodecs")

BOMB_MB = 100  # one element of 100 MiB in a chunk of 4: more than 64 MiB allow


def _bomb(compressor) -> bytes:
    elements = np.array(["a" * (BOMB_MB << 20), "b", "c", "d"], dtype=object)
    return compressor.encode(numcodecs.VLenUTF8().encode(elements))


def _child_read(path, *, setting: int | None = None, limit_gib: float = 1.5) -> str:
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({int(limit_gib * (1 << 30))},) * 2)
        import zarrfast
        if {setting!r} is not None:
            zarrfast.config.set(vlen_bytes_per_element={setting!r})
        a = zarrfast.open_array({str(path)!r}, mode="r")
        try:
            got = a[:]
        except zarrfast.errors.ZarrfastError as e:
            print("ERROR", type(e).__name__, e)
        else:
            print("READ", [len(x) for x in got.tolist()])
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("codec", ["zstd", "zlib"])
def test_a_vlen_chunk_inflating_beyond_its_limit_is_refused(tmp_path, fmt, codec):
    path = tmp_path / "a"
    comp = numcodecs.Zstd(level=1) if codec == "zstd" else numcodecs.Zlib(level=1)
    if fmt == 3:
        a = zarrfast.create_array(path, shape=(8,), chunks=(4,), dtype=str,
                                  compressors=[{"name": codec, "configuration": {"level": 1}}]
                                  if codec == "zstd" else
                                  [{"name": "gzip", "configuration": {"level": 1}}])
        if codec == "zlib":
            comp = numcodecs.GZip(level=1)
    else:
        a = zarrfast.create_array(path, shape=(8,), chunks=(4,), dtype=object,
                                  zarr_format=2, filters=[numcodecs.VLenUTF8()],
                                  compressors=comp)
    a[:] = np.array(list("abcdefgh"), dtype=object)
    key = "c/0" if fmt == 3 else "0"
    (path / key).write_bytes(_bomb(comp))
    out = _child_read(path)
    assert out.startswith("ERROR ChunkDecodeError"), out
    assert repr(key) in out or key in out
    # the limit is configurable: raised, the same chunk reads
    out = _child_read(path, setting=(BOMB_MB + 1) << 20, limit_gib=3)
    assert out == f"READ {[BOMB_MB << 20, 1, 1, 1, 1, 1, 1, 1]}", out[:300]
    # the other chunk was never touched
    assert zarrfast.open_array(path, mode="r")[4:].tolist() == list("efgh")


def test_a_vlen_chunk_declaring_more_elements_than_its_shape_is_refused(tmp_path):
    """v2 object codecs allocate the count the chunk declares: checked against the
    chunk's shape first."""
    path = tmp_path / "a"
    a = zarrfast.create_array(path, shape=(4,), chunks=(4,), dtype=object, zarr_format=2,
                              filters=[numcodecs.VLenUTF8()], compressors=None)
    a[:] = np.array(list("abcd"), dtype=object)
    (path / "0").write_bytes((2**31).to_bytes(4, "little") + b"\0" * 16)
    out = _child_read(path, limit_gib=1)
    assert out.startswith("ERROR ChunkDecodeError") and "2147483648" in out, out


def test_the_setting_is_validated():
    with pytest.raises(zarrfast.errors.ZarrfastError, match="vlen_bytes_per_element"):
        zarrfast.config.set(vlen_bytes_per_element=0)
