"""gzip and zlib chunks read by the batched decoder (``ChunkDecoder("gzip" | "zlib")``):
Zarr v3 ``gzip`` and Zarr v2 numcodecs ``gzip``/``zlib`` arrays, full reads, boxes,
selections and sharded inner chunks, against NumPy, the per-chunk path
(``disable_batch``), each inflating library (libdeflate, zlib's inflate) and numcodecs.

A chunk the kernel does not decode (several gzip members, padding, trailing bytes, a
wrong size, corrupt data, a bad checksum) is decoded by the codec, whose result or error
is the read's, as on the per-chunk path.  The kernel itself:
``tests/kernels/test_kernel_decode_gzip.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from unittest import mock

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast import kernels as _kernels
from zarrfast.codecs import GzipCodec
from zarrfast.engine import sharded as zf_sharded
from zarrfast.storage import LocalStore

from _helpers.decode import disable_batch

try:
    from zarrfast._ext import _decode
except ImportError:  # pragma: no cover - not built
    _decode = None

BATCHED = _kernels.ChunkDecoder is not None and {"gzip", "zlib"} <= _kernels.BATCH_CODECS
needs_batched = pytest.mark.skipif(not BATCHED, reason="gzip is not batched here")


def _inflaters() -> list[str]:
    if not BATCHED:
        return []
    found, before = [], _decode.inflate_with()
    for name in ("libdeflate", "zlib"):
        with contextlib.suppress(ValueError):
            _decode.set_inflate(name)
            found.append(name)
    _decode.set_inflate(before)
    return found


INFLATERS = _inflaters()


@contextlib.contextmanager
def inflating_with(name: str):
    before = _decode.set_inflate(name)
    try:
        yield
    finally:
        _decode.set_inflate(before)


class Recording(_kernels.ChunkDecoder if BATCHED else object):  # type: ignore[misc]
    """The compiled decoder, counting the rows its batch calls were given."""

    rows: list = []

    def decode_regions(self, src, src_offsets, src_sizes, placement, share=0):
        Recording.rows.append(placement.n)
        return super().decode_regions(src, src_offsets, src_sizes, placement, share)

    def decode_files(self, paths, placement, root=None, share=0):
        Recording.rows.append(placement.n)
        return super().decode_files(paths, placement, root, share)

    def decode_box_files(self, root, prefix, sep, placement, share=0):
        Recording.rows.append(placement.n)
        return super().decode_box_files(root, prefix, sep, placement, share)


#: (format, compressor) -> create_array's arguments
FORMATS = {
    "v3-gzip": lambda level: dict(zarr_format=3, compressors=[GzipCodec(level=level)]),
    "v2-gzip": lambda level: dict(zarr_format=2, compressors={"id": "gzip", "level": level},
                                  filters=None),
    "v2-zlib": lambda level: dict(zarr_format=2, compressors={"id": "zlib", "level": level},
                                  filters=None),
}
NUMCODECS = {"v3-gzip": numcodecs.GZip, "v2-gzip": numcodecs.GZip, "v2-zlib": numcodecs.Zlib}


def make(root, fmt, shape, chunks, dtype, level=1, order="C", seed=0, name="a"):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        data = np.round(rng.normal(size=shape), 2).astype(dt)
    else:
        data = rng.integers(0, 50, size=shape).astype(dt)
    kw = FORMATS[fmt](level)
    if kw["zarr_format"] == 2:
        kw["order"] = order
    arr = zarrfast.create_array(str(root), name=name, shape=shape, chunks=chunks, dtype=dtype,
                                fill_value=0, overwrite=True, **kw)
    arr[...] = data
    return arr, data


def open_r(root, name="a", *, batch=True):
    arr = zarrfast.open_array(LocalStore(root), path=name, mode="r")
    if not batch:
        disable_batch(arr._chain)
    return arr


@needs_batched
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_gzip_and_zlib_chains_are_batched(tmp_path, fmt):
    arr, data = make(tmp_path, fmt, (20, 30), (8, 7), "<i4")
    assert open_r(tmp_path)._chain.batch_codec == fmt.split("-")[1]
    Recording.rows.clear()
    with mock.patch.object(_kernels, "ChunkDecoder", Recording), config.set(threads=1):
        np.testing.assert_array_equal(open_r(tmp_path)[...], data)
    assert sum(Recording.rows) == 15, Recording.rows  # (every chunk, 3 x 5, in batch calls)


def test_chains_with_more_than_the_compressor_are_not(tmp_path):
    a = zarrfast.create_array(str(tmp_path), name="f", shape=(10,), chunks=(5,), dtype="<i4",
                              zarr_format=2, compressors={"id": "zlib", "level": 1},
                              filters=[{"id": "delta", "dtype": "<i4"}])
    assert a._chain.batch_codec is None
    b = zarrfast.create_array(str(tmp_path / "v3"), name="c", shape=(10,), chunks=(5,), dtype="<i4",
                              compressors=[GzipCodec(level=1),
                                           {"name": "crc32c", "configuration": {}}])
    assert b._chain.batch_codec is None


@needs_batched
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_reads_match_numpy_per_chunk_and_each_library(tmp_path_factory, data):
    fmt = data.draw(st.sampled_from(sorted(FORMATS)), label="fmt")
    ndim = data.draw(st.integers(1, 3), label="ndim")
    shape = tuple(data.draw(st.integers(1, 14)) for _ in range(ndim))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    dtype = data.draw(st.sampled_from(["<i2", ">i4", "<f8", "u1", ">u8"]), label="dtype")
    level = data.draw(st.integers(0, 9), label="level")
    order = data.draw(st.sampled_from("CF"), label="order") if fmt != "v3-gzip" else "C"
    root = tmp_path_factory.mktemp("gz")
    arr, truth = make(root, fmt, shape, chunks, dtype, level, order)
    # the stored bytes are numcodecs' (modulo a gzip member's modification time)
    key = "/".join(["c"] + ["0"] * ndim) if fmt == "v3-gzip" else ".".join(["0"] * ndim)
    blob = (root / "a" / key).read_bytes()
    first = truth[tuple(slice(0, c) for c in chunks)]
    if order == "F":
        first = np.asfortranarray(first)
    if fmt == "v3-gzip":  # (the bytes codec's order: little-endian)
        first = first.astype(first.dtype.newbyteorder("<"))
    want_blob = bytes(NUMCODECS[fmt](level=level).encode(first.tobytes(order="A")))
    if "gzip" in fmt:
        blob, want_blob = blob[:4] + blob[8:], want_blob[:4] + want_blob[8:]
    assert blob == want_blob
    sels = [np.s_[...]] + [tuple(data.draw(st.slices(n)) for n in shape) for _ in range(3)]
    threads = data.draw(st.sampled_from([1, 2]), label="threads")
    with config.set(threads=threads):
        for sel in sels:
            want = truth[sel]
            np.testing.assert_array_equal(open_r(root, batch=False)[sel], want)
            for library in INFLATERS:
                with inflating_with(library):
                    np.testing.assert_array_equal(open_r(root)[sel], want, err_msg=library)


# -- chunks the kernel leaves to the codec ---------------------------------------------

def _stored_kinds(fmt: str, raw: bytes) -> dict[str, bytes]:
    enc = NUMCODECS[fmt](level=5)
    one = bytes(enc.encode(raw))
    half = len(raw) // 2
    b = bytearray(one)
    b[len(b) // 2] ^= 0xFF
    crc = bytearray(one)
    crc[-8 if "gzip" in fmt else -4] ^= 1
    return {
        "multi": bytes(enc.encode(raw[:half])) + bytes(enc.encode(raw[half:])),
        "padded": one + b"\0\0\0",
        "trailing": one + b"junk",
        "short": bytes(enc.encode(raw[:-4])),
        "long": bytes(enc.encode(raw + b"\0\0\0\0")),
        "corrupt": bytes(b),
        "checksum": bytes(crc),
        "truncated": one[:-5],
        "empty": b"",
        "garbage": b"not a compressed stream at all",
    }


def _read(root, path, sel, *, batch=True, sharded=False):
    arr = zarrfast.open_array(LocalStore(root), path=path, mode="r")
    if not batch:
        disable_batch(arr._chain.inner if sharded else arr._chain)
    return arr[sel]


def _outcome(*args, **kw):
    """``("ok", values)`` of ``_read(*args, **kw)``, or ``("raised", type, message)``."""
    try:
        return "ok", _read(*args, **kw)
    except Exception as e:  # noqa: BLE001 - the read's error, whatever it is
        return "raised", type(e), str(e)


def _assert_same(batched, per_chunk, what) -> None:
    if batched[0] == "ok" and per_chunk[0] == "ok":
        np.testing.assert_array_equal(batched[1], per_chunk[1], err_msg=str(what))
    else:
        assert batched == per_chunk, what


@needs_batched
@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("threads", [1, 2])
def test_chunks_the_kernel_refuses_read_as_the_codec_reads_them(tmp_path, fmt, threads):
    arr, data = make(tmp_path, fmt, (12, 12), (4, 4), "<i4")
    key = "c/1/2" if fmt == "v3-gzip" else "1.2"
    path = tmp_path / "a" / key
    raw = np.ascontiguousarray(data[4:8, 8:12]).tobytes()
    for what, content in _stored_kinds(fmt, raw).items():
        path.write_bytes(content)
        with config.set(threads=threads):
            for sel in (np.s_[...], np.s_[2:10, 5:11], np.s_[4:8, 8:12], np.s_[5, 9]):
                batched = _outcome(tmp_path, "a", sel)
                _assert_same(batched, _outcome(tmp_path, "a", sel, batch=False), (what, sel))
                if what == "padded" or (what == "multi" and "gzip" in fmt):
                    # valid for the codec (several members; zero padding): the data
                    assert batched[0] == "ok", (what, batched)
                    np.testing.assert_array_equal(batched[1], data[sel])
                elif what != "trailing" or "gzip" in fmt:
                    assert batched[0] == "raised" and key in batched[2], (what, batched)
                # numcodecs' verdict on the chunk, beside the read's
                try:
                    decoded = bytes(NUMCODECS[fmt]().decode(content))
                except Exception:  # noqa: BLE001 - its errors differ by kind
                    decoded = None
                if batched[0] == "ok":
                    assert decoded is not None and decoded[:len(raw)] == raw, what


# -- sharded: inner chunks of shards that are files (ShardFiles, decode_box_shards) ---

@needs_batched
@pytest.mark.parametrize("threads", [1, 2])
def test_sharded_gzip_inner_chunks(tmp_path, threads, monkeypatch):
    a = zarrfast.create_array(str(tmp_path), name="s", shape=(40, 36, 30), chunks=(8, 6, 5),
                              shards=(16, 12, 10), dtype="<i2", fill_value=3,
                              compressors=[GzipCodec(level=1)])
    rng = np.random.default_rng(2)
    data = rng.integers(0, 40, size=a.shape).astype("<i2")
    data[:16, :12, :10] = 3  # (an empty shard: the fill value)
    a[...] = data
    arr = zarrfast.open_array(LocalStore(tmp_path), path="s", mode="r")
    assert arr._chain.inner.batch_codec == "gzip"
    boxes = [np.s_[...], np.s_[3:19, 5:7, 9:12], np.s_[17:31, :, 20:], np.s_[0:8, 0:6, 0:5],
             np.s_[5, 7], np.s_[::3, ::-2, 4:28:5]]
    whole = []
    original = zf_sharded._decode_box_shards

    def spy(*args, **kw):
        done = original(*args, **kw)
        whole.append(done)
        return done

    monkeypatch.setattr(zf_sharded, "_decode_box_shards", spy)
    with config.set(threads=threads):
        for library in INFLATERS:
            with inflating_with(library):
                for box in boxes:
                    np.testing.assert_array_equal(arr[box], data[box], err_msg=f"{library} {box}")
    assert any(whole)  # (a box of inner chunks decoded by decode_box_shards)
    # a corrupt inner chunk: the same error as the per-chunk path's
    blob = bytearray((tmp_path / "s" / "c" / "1" / "1" / "1").read_bytes())
    blob[40] ^= 0xFF
    (tmp_path / "s" / "c" / "1" / "1" / "1").write_bytes(bytes(blob))
    for box in (np.s_[...], np.s_[16:32, 12:24, 10:20], np.s_[20:22, 13:15, 11:13]):
        got = _outcome(tmp_path, "s", box)
        assert got[0] == "raised", box
        _assert_same(got, _outcome(tmp_path, "s", box, batch=False, sharded=True), box)


# -- the libraries chosen at import ----------------------------------------------------

_CHILD = r"""
import json, sys
import numpy as np
import zarrfast
from zarrfast import kernels
from zarrfast.storage import LocalStore
arr = zarrfast.open_array(LocalStore(sys.argv[1]), path="a", mode="r")
np.save(sys.argv[2], arr[...])
from zarrfast._ext import _decode
json.dump({"binding": kernels.CODEC_BINDINGS.get("gzip"), "codec": arr._chain.batch_codec,
           "batch": sorted(kernels.BATCH_CODECS), "with": _decode.inflate_with()},
          sys.stdout)
"""


@needs_batched
@pytest.mark.parametrize("choice", ["auto", "zlib", "off", "bogus"])
def test_zarrfast_inflate_chooses_the_library(tmp_path, subprocess_cwd, choice):
    import json

    arr, data = make(tmp_path, "v3-gzip", (30, 20), (7, 8), "<u2")
    env = {k: v for k, v in os.environ.items() if k != "ZARRFAST_PURE_PYTHON"}
    env["ZARRFAST_INFLATE"] = choice
    out = tmp_path / "out.npy"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_CHILD), str(tmp_path),
                           str(out)], env=env, capture_output=True, text=True, timeout=120,
                          cwd=subprocess_cwd)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), data)
    res = json.loads(proc.stdout)
    if choice == "off":
        assert res["binding"] == "not bound (ZARRFAST_INFLATE=off)"
        assert res["codec"] is None and "gzip" not in res["batch"] and res["with"] == "none"
        return
    assert res["codec"] == "gzip" and {"gzip", "zlib"} <= set(res["batch"])
    if choice == "zlib":
        assert res["with"] == "zlib" and "'s inflate)" in res["binding"], res
    else:
        assert res["with"] == _decode.inflate_with(), res
        assert res["binding"] == _kernels.CODEC_BINDINGS["gzip"] + (
            "; ZARRFAST_INFLATE='bogus' ignored (not one of auto, zlib, off)"
            if choice == "bogus" else "")
