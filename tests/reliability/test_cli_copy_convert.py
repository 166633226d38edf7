"""Issue 41, class 3: ``zarrfast copy`` and ``zarrfast convert`` neither drop nor
half-write data.

* Consolidated metadata is carried, in the destination's format (v3 inline in the root
  ``zarr.json``, v2 ``.zmetadata``) and describing the destination's nodes: zarr-python
  opens the result with ``open_consolidated``.
* A copy or conversion that fails partway (a chunk that cannot be decoded, a chunk that
  cannot be read) leaves no destination behind, in a directory or a ``.zip``; an existing
  destination replaced with ``--overwrite`` is left as it was.
* Variable-length strings and bytes written by zarr-python convert both ways (v2 ``|O``
  with ``vlen-utf8``/``vlen-bytes`` <-> v3 ``string``/``variable_length_bytes``) and read
  back identical in zarr-python.

Every case runs the real command in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import zarrfast

from _helpers.files import file_bytes as _files

zarr = pytest.importorskip("zarr")


def _run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "zarrfast", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False)




# -- consolidated metadata ------------------------------------------------------------------


def _consolidated_source(path, zarr_format: int) -> None:
    """A hierarchy written and consolidated by zarr-python."""
    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format,
                        attributes={"title": "t"})
    a = g.create_array("a", shape=(10, 6), chunks=(4, 3), dtype="int16")
    a[...] = np.arange(60, dtype="int16").reshape(10, 6)
    sub = g.create_group("sub", attributes={"k": 1})
    b = sub.create_array("b", shape=(7,), chunks=(3,), dtype="float32")
    b[...] = np.arange(7, dtype="float32") / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # v3 consolidated metadata: "not in the spec"
        zarr.consolidate_metadata(str(path), zarr_format=zarr_format)


@pytest.mark.parametrize("src_format, command, dst_format", [
    (3, "copy", 3), (2, "copy", 2), (2, "convert", 3), (3, "convert", 2)])
def test_consolidated_metadata_is_carried(tmp_path, subprocess_cwd, src_format, command,
                                          dst_format):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _consolidated_source(src, src_format)
    args = [command, src, dst, "--quiet"]
    if command == "convert":
        args += ["--zarr-format", dst_format]
    p = _run(subprocess_cwd, *args)
    assert p.returncode == 0, p.stderr
    if dst_format == 3:
        assert "consolidated_metadata" in json.loads((dst / "zarr.json").read_bytes())
    else:
        assert (dst / ".zmetadata").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_consolidated(str(dst), zarr_format=dst_format)
        assert g.metadata.consolidated_metadata is not None
        # it describes the destination's nodes: each member as the node itself reads
        plain = zarr.open_group(str(dst), mode="r", use_consolidated=False)
        names = sorted(k for k, _ in g.members(max_depth=None))
        assert names == sorted(k for k, _ in plain.members(max_depth=None)) == \
            ["a", "sub", "sub/b"]
        for name in names:
            # (a group opened from consolidated metadata carries the part below it)
            got = {k: v for k, v in g[name].metadata.to_dict().items()
                   if k != "consolidated_metadata"}
            assert got == plain[name].metadata.to_dict(), name
            assert g[name].metadata.zarr_format == dst_format
        np.testing.assert_array_equal(g["a"][...], np.arange(60).reshape(10, 6))
        np.testing.assert_array_equal(g["sub/b"][...], np.arange(7, dtype="float32") / 2)
        assert dict(g.attrs) == {"title": "t"} and dict(g["sub"].attrs) == {"k": 1}


# -- failures partway -----------------------------------------------------------------------


def _source_failing_to_decode(path) -> None:
    """A v2 group: ``a`` fine, ``b`` (delta + zstd: decoded to be converted) with a chunk in
    the middle that is not zstd."""
    g = zarrfast.open_group(str(path), mode="w", zarr_format=2)
    g.create_array("a", shape=(40,), chunks=(5,), dtype="i4")[...] = np.arange(40)
    b = g.create_array("b", shape=(40,), chunks=(5,), dtype="i4",
                       filters=[{"id": "delta", "dtype": "<i4"}],
                       compressors={"id": "zstd", "level": 1})
    b[...] = np.arange(40)
    (path / "b" / "4").write_bytes(b"this is not a zstd frame" * 4)


def _source_failing_to_read(path) -> None:
    """A v3 group: ``a`` fine, ``b`` with a chunk in the middle that is a FIFO (the store
    refuses to read it: copying it fails, as a chunk on a failing disk would)."""
    g = zarrfast.open_group(str(path), mode="w")
    g.create_array("a", shape=(40,), chunks=(5,), dtype="i4")[...] = np.arange(40)
    g.create_array("b", shape=(40,), chunks=(5,), dtype="i4")[...] = np.arange(40)
    chunk = path / "b" / "c" / "4"
    chunk.unlink()
    os.mkfifo(chunk)


FAILING = [
    pytest.param("convert", _source_failing_to_decode, id="convert-decode-error"),
    pytest.param("copy", _source_failing_to_read, id="copy-read-error"),
]


@pytest.mark.parametrize("dst_name", ["out.zarr", "out.zip", "made/below/out.zarr"])
@pytest.mark.parametrize("command, make", FAILING)
def test_a_failed_copy_leaves_no_destination(tmp_path, subprocess_cwd, command, make,
                                             dst_name):
    src = tmp_path / "src.zarr"
    make(src)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / dst_name
    p = _run(subprocess_cwd, command, src, dst, "--quiet")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "b" in p.stderr  # the failing array (or chunk) is named
    assert os.listdir(out_dir) == []  # no destination, no partial file or directory


@pytest.mark.parametrize("dst_name", ["out.zarr", "out.zip"])
@pytest.mark.parametrize("command, make", FAILING)
def test_a_failed_overwrite_leaves_the_destination_as_it_was(tmp_path, subprocess_cwd,
                                                             command, make, dst_name):
    src = tmp_path / "src.zarr"
    make(src)
    old = tmp_path / "old.zarr"
    a = zarrfast.create_array(str(old), shape=(8,), chunks=(3,), dtype="u1")
    a[...] = np.arange(8, dtype="u1")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / dst_name
    assert _run(subprocess_cwd, "copy", old, dst, "--quiet").returncode == 0
    before, listing = _files(dst), sorted(os.listdir(out_dir))
    p = _run(subprocess_cwd, command, src, dst, "--quiet", "--overwrite")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert _files(dst) == before
    assert sorted(os.listdir(out_dir)) == listing
    np.testing.assert_array_equal(zarrfast.open_array(str(dst), mode="r")[...],
                                  np.arange(8))


def test_overwrite_that_succeeds_replaces_the_destination(tmp_path, subprocess_cwd):
    """The other half of the above: a successful ``--overwrite`` replaces the old
    destination entirely (no stale chunk of it is left), in a directory and a zip."""
    old = tmp_path / "old.zarr"
    zarrfast.create_array(str(old), shape=(30,), chunks=(2,), dtype="u1")[...] = 7
    new = tmp_path / "new.zarr"
    g = zarrfast.open_group(str(new), mode="w")
    g.create_array("x", shape=(4,), chunks=(4,), dtype="f8")[...] = 1.5
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name in ("d.zarr", "d.zip"):
        dst = out_dir / name
        assert _run(subprocess_cwd, "copy", old, dst, "--quiet").returncode == 0
        p = _run(subprocess_cwd, "copy", new, dst, "--quiet", "--overwrite")
        assert p.returncode == 0, p.stderr
        if name == "d.zarr":  # exactly the new hierarchy's files
            assert sorted(_files(dst)) == sorted(_files(new))
        got = zarrfast.open_group(str(dst), mode="r")
        assert list(got.array_keys()) == ["x"]
        np.testing.assert_array_equal(got["x"][...], np.full(4, 1.5))
    assert sorted(os.listdir(out_dir)) == ["d.zarr", "d.zip"]


# -- variable-length strings and bytes ------------------------------------------------------

STRINGS = ["", "a", "héllo wörld", "日本語", "x" * 300, "tab\tnew\nline", "last"]
BYTES = [b"", b"\x00\x01", b"abc", bytes(range(256)), b"z" * 70, b"end", b"\xff"]


def _vlen_source(path, zarr_format: int) -> None:
    """A group written by zarr-python: a str array and a bytes array (a missing chunk
    too: the last one is never written)."""
    from zarr.dtype import VariableLengthBytes

    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    s = g.create_array("s", shape=(9,), chunks=(2,), dtype=str)
    s[:7] = np.array(STRINGS, dtype=object)
    b = g.create_array("b", shape=(9,), chunks=(2,), dtype=VariableLengthBytes())
    b[:7] = np.array(BYTES, dtype=object)


def _values(arr) -> list:
    return [v.decode("latin-1") if isinstance(v, bytes) else str(v)
            for v in np.asarray(arr[...], dtype=object).tolist()]


@pytest.mark.parametrize("src_format, dst_format", [(2, 3), (3, 2)])
def test_vlen_strings_and_bytes_convert_both_ways(tmp_path, subprocess_cwd, src_format,
                                                  dst_format):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # variable_length_bytes: "no v3 specification"
        _vlen_source(src, src_format)
    p = _run(subprocess_cwd, "convert", src, dst, "--zarr-format", dst_format, "--quiet")
    assert p.returncode == 0, p.stderr
    want = zarr.open_group(str(src), mode="r")
    got = zarr.open_group(str(dst), mode="r")
    assert got.metadata.zarr_format == dst_format
    for name in ("s", "b"):
        assert _values(got[name]) == _values(want[name]), name
    assert _values(got["s"])[:7] == STRINGS
    assert [v.encode("latin-1") for v in _values(got["b"])][:7] == BYTES
    if dst_format == 3:
        s_doc = json.loads((dst / "s" / "zarr.json").read_bytes())
        b_doc = json.loads((dst / "b" / "zarr.json").read_bytes())
        assert s_doc["data_type"] == "string"
        assert s_doc["codecs"][0]["name"] == "vlen-utf8"
        assert b_doc["data_type"] == "variable_length_bytes"
        assert b_doc["codecs"][0]["name"] == "vlen-bytes"
    else:
        s_doc = json.loads((dst / "s" / ".zarray").read_bytes())
        b_doc = json.loads((dst / "b" / ".zarray").read_bytes())
        assert (s_doc["dtype"], s_doc["filters"]) == ("|O", [{"id": "vlen-utf8"}])
        assert (b_doc["dtype"], b_doc["filters"]) == ("|O", [{"id": "vlen-bytes"}])


def test_vlen_strings_converted_read_in_zarr_python_3_4(tmp_path, subprocess_cwd,
                                                        zarr_peer):
    """Written by zarr-python 3.4 (v2), converted by the command, read by 3.4 (v3)."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    zarr_peer.run("""
        import numpy as np, zarr
        g = zarr.open_group(ARGS["path"], mode="w", zarr_format=2)
        g.create_array("s", shape=(7,), chunks=(2,), dtype=str)[:] = np.array(
            ARGS["strings"], dtype=object)
    """, {"path": str(src), "strings": STRINGS})
    p = _run(subprocess_cwd, "convert", src, dst, "--quiet")
    assert p.returncode == 0, p.stderr
    got = zarr_peer.run("""
        import zarr
        a = zarr.open_group(ARGS["path"], mode="r")["s"]
        emit({"format": a.metadata.zarr_format, "values": [str(v) for v in a[...]]})
    """, {"path": str(dst)})
    assert got == {"format": 3, "values": STRINGS}


def test_a_failed_convert_into_memory_deletes_what_it_wrote(tmp_path):
    """A store without rename (here in memory; remote stores likewise) is written in
    place: a failure partway deletes the keys written, and keys that were there stay."""
    src = tmp_path / "src.zarr"
    _source_failing_to_decode(src)
    data = {"unrelated/key": b"kept"}
    with pytest.raises(zarrfast.errors.ZarrfastError, match="b"):
        zarrfast.convert(str(src), data, dst_path="deep/node", progress=False)
    assert data == {"unrelated/key": b"kept"}
