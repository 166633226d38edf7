"""Review of h55/cold (3ec5cc5, 5a0847c): a compiled ``nogil`` kernel for the zstd prefix
decoding of gathers (``_ext._zstd_prefix``, bound at import to numcodecs' zstd by
address, so never linked) and the files of a cold gather announced from a thread of its
own (``engine.chunked.Announcer``).

* Finding (CI): ``.ci/run`` checks, in the installed package and in the wheel, a list of
  compiled modules that must be there; the new ``_zstd_prefix`` is not in it (nor,
  before the branch, ``_encode``), and ``zarrfast.kernels.zstd_prefix`` falls back to
  ``ctypes`` silently when the module is missing, and its tests then skip: a wheel
  without it would pass CI.  ``test_ci_requires_every_compiled_module`` fails on the
  branch (this branch's commit adds ``_encode`` to the lists; the branch's fix is
  /work/data/review/cold-fix.diff).
* Finding (data; in 7f98544's ``ctypes`` path already, and in the branch's kernel): a
  gather decodes zstd chunks only up to the bytes it needs, so it never reaches a frame's
  content checksum: a damaged chunk of a ``ZstdCodec(checksum=True)`` array that a whole
  read refuses ("Restored data doesn't match checksum", naming the key) is read by a
  gather as data, the damaged value in it.  ``test_a_gather_checks_a_zstd_checksum``
  (fixed: frames whose header has the checksum flag are FAILED by
  ``zstd_prefix.decode_prefixes``, so decoded whole, checked).
* Guards (need the branch: skipped without the compiled kernel): the kernel against the
  ``ctypes`` loop and python-zstandard on frames that lie about their size (a header
  declaring fewer or more bytes than the blocks hold), frames with a checksum, two frames
  back to back, bytes after a frame, single bit flips; a forked child's cold gathers
  while the parent's announcer threads run.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels

from _helpers.threads import wait_child

ROOT = Path(__file__).resolve().parents[2]
BLOCK = 2**17


def _setup_modules() -> list[str]:
    """The compiled modules ``setup.py`` builds (every ``zarrfast._ext.<name>``)."""
    return sorted(set(re.findall(r'"zarrfast\._ext\.(\w+)"', (ROOT / "setup.py").read_text())))


@pytest.mark.skipif(not (ROOT / ".ci" / "run").exists() or not (ROOT / "setup.py").exists(),
                    reason="not a source tree")
def test_ci_requires_every_compiled_module():
    """Each ``for m in (...)`` list of ``.ci/run`` that checks the compiled modules (the
    installed package's, the wheel's) names every module ``setup.py`` builds."""
    ci = (ROOT / ".ci" / "run").read_text()
    lists = [set(re.findall(r'"(_\w+)"', m)) for m in
             re.findall(r'for m in \(([^)]*)\):\n\s+(?:mod = __import__|assert any\(n\.)', ci)]
    assert len(lists) == 2, lists
    for names in lists:
        assert set(_setup_modules()) <= names, sorted(set(_setup_modules()) - names)


@pytest.mark.skipif(not _kernels.USING_EXTENSIONS, reason="the extensions are not built")
def test_every_compiled_module_imports():
    """Every module ``setup.py`` builds is there when the extensions are used (a build that
    lost one is seen here, not only by ``.ci/run``)."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("not a source tree")
    import importlib

    for name in _setup_modules():
        if name == "_fileio" and os.name == "nt":  # (POSIX only, as setup.py builds it)
            continue
        importlib.import_module(f"zarrfast._ext.{name}")


def _zstd_prefix():
    from zarrfast.kernels import zstd_prefix

    if getattr(zstd_prefix, "IMPLEMENTATION", None) != "kernel":
        pytest.skip("needs h55/cold: the compiled zstd prefix kernel")
    return zstd_prefix


def _patch_fcs(frame: bytes, new: int) -> bytes | None:
    """``frame`` with its header's content size replaced by ``new`` (same field size)."""
    fhd = frame[4]
    flag, single = fhd >> 6, (fhd >> 5) & 1
    size = (1 if single else 0, 2, 4, 8)[flag]
    at = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    value = new - 256 if size == 2 else new
    if size == 0 or not 0 <= value < 256**size:
        return None
    return frame[:at] + value.to_bytes(size, "little") + frame[at + size:]


@pytest.mark.parametrize("seed", range(12))
def test_the_kernel_the_ctypes_loop_and_zstandard_agree_on_odd_frames(seed):
    zstandard = pytest.importorskip("zstandard")
    zp = _zstd_prefix()
    rng = np.random.default_rng(seed)

    def data(n: int) -> bytes:
        return np.repeat(rng.integers(0, 40, -(-n // 3), dtype=np.uint8), 3)[:n].tobytes()

    kinds = ["ok", "checksum", "says_less", "says_more", "flip", "two", "trailing"]
    kinds = kinds[seed % 7:] + kinds[:seed % 7]  # (each kind last in some batch)
    for nb in (300, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17):
        frames, needs = [], []
        for kind in kinds:
            n = nb + 700 if kind == "says_less" else max(1, nb - 700) if kind == "says_more" \
                else nb
            frame = zstandard.ZstdCompressor(level=int(rng.integers(1, 6)),
                                             write_checksum=kind == "checksum",
                                             write_content_size=True).compress(data(n))
            if kind in ("says_less", "says_more"):
                frame = _patch_fcs(frame, nb) or frame
            elif kind == "flip":
                b = bytearray(frame)
                b[int(rng.integers(6, len(b)))] ^= 1 << int(rng.integers(0, 8))
                frame = bytes(b)
            elif kind == "two":
                frame += frame
            elif kind == "trailing":
                frame += b"\x00\x01\x02"
            frames.append(frame)
            needs.append(int(rng.integers(0, nb + 1)))
        k = len(frames)
        src = np.frombuffer(b"".join(frames), np.uint8).copy()
        offsets = np.cumsum([0] + [len(f) for f in frames[:-1]]).astype(np.int64)
        sizes = np.array([len(f) for f in frames], np.int64)
        need = np.array(needs, np.int64)
        out = {}
        for force in (False, True):
            dst = np.zeros(k * nb + 64, np.uint8)
            dst[k * nb:] = 0xAB  # (a guard after the last frame's bytes)
            status = zp.decode_prefixes(src, offsets, sizes, dst,
                                        np.arange(k, dtype=np.int64) * nb, need, nb,
                                        force_ctypes=force)
            assert (dst[k * nb:] == 0xAB).all(), "written past the last frame's bytes"
            out[force] = (status.copy(), dst)
        (s_kernel, d_kernel), (s_ctypes, d_ctypes) = out[False], out[True]
        np.testing.assert_array_equal(s_kernel, s_ctypes)
        for r, frame in enumerate(frames):
            if s_kernel[r] != zp.DECODED:
                continue
            got = d_kernel[r * nb:r * nb + need[r]].tobytes()
            assert got == d_ctypes[r * nb:r * nb + need[r]].tobytes(), (kinds[r], nb)
            try:  # (what a whole decode gives, where it decodes: the same first bytes)
                whole = zstandard.ZstdDecompressor().decompress(frame, max_output_size=4 * nb)
            except zstandard.ZstdError:
                continue
            if len(whole) >= need[r]:
                assert whole[:need[r]] == got, (kinds[r], nb)
        assert s_kernel[kinds.index("ok")] == zp.DECODED


def test_a_forked_child_gathers_cold_while_the_parent_announces(tmp_path, monkeypatch):
    """Threads of the parent gather cold (their announcers running) while it forks: each
    child's own cold gathers (a new announcer each) read NumPy's values and end."""
    from zarrfast.engine import fancy

    # (every probe cold; 7f98544 has no first_cold: its gathers are the guard there)
    monkeypatch.setattr(fancy, "first_cold", lambda store, key: True, raising=False)
    x = np.arange(400 * 40, dtype="<u4").reshape(400, 40)
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=x.shape, chunks=(4, 40),
                              dtype="<u4", compressors=[zarrfast.codecs.ZstdCodec(level=1)])
    a[...] = x
    rows = np.random.default_rng(0).permutation(400)[:300]
    stop = threading.Event()

    def gather() -> None:
        while not stop.is_set():
            np.testing.assert_array_equal(a.oindex[rows, :3], x[rows, :3])

    with config.set(threads=2):
        t = threading.Thread(target=gather)
        t.start()
        try:
            for _ in range(4):
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child
                    code = 1
                    try:
                        for _ in range(3):
                            if np.array_equal(a.oindex[rows, :3], x[rows, :3]):
                                code = 0
                            else:
                                code = 2
                                break
                    finally:
                        os._exit(code)
                assert wait_child(pid, "gathering cold", timeout=60) == 0
        finally:
            stop.set()
            t.join()


@pytest.mark.parametrize("sharded", [False, True])
def test_a_gather_checks_a_zstd_checksum(tmp_path, sharded):
    """Incompressible values (raw zstd blocks): one byte of a chunk's first block
    changed.  A whole read refuses the chunk naming it; so does a gather of a few of its
    rows (decoded as a prefix), not returning the changed value."""
    from zarrfast.codecs import BytesCodec, ShardingCodec, ZstdCodec
    from zarrfast.errors import ChunkDecodeError

    x = np.random.default_rng(0).integers(0, 2**32, (64, 4096), dtype=np.uint64).astype("<u4")
    path = str(tmp_path / "a.zarr")
    zstd = ZstdCodec(level=1, checksum=True)
    if sharded:
        a = zarrfast.create_array(path, shape=x.shape, dtype="<u4", chunks=(64, 4096),
                                  compressors=None, serializer=ShardingCodec(
                                      chunk_shape=(32, 4096), codecs=[BytesCodec(), zstd]))
    else:
        a = zarrfast.create_array(path, shape=x.shape, dtype="<u4", chunks=(32, 4096),
                                  compressors=[zstd])
    a[...] = x
    f = os.path.join(path, "c", "0", "0")
    blob = bytearray(open(f, "rb").read())
    # (the first inner chunk / chunk starts the file: its frame header, a block header,
    # then the values of row 0 as they are)
    assert blob[:4] == b"\x28\xb5\x2f\xfd"
    blob[100] ^= 0xFF
    with open(f, "wb") as out:
        out.write(bytes(blob))
    with pytest.raises(ChunkDecodeError, match="c/0/0"):
        a[...]
    with pytest.raises(ChunkDecodeError, match="c/0/0"):
        a.oindex[[0, 1], :30]
