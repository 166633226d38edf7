"""zarrfast.convert and the CLI (`zarrfast info`, `zarrfast convert`)."""

from __future__ import annotations

import json
import subprocess
import sys

import numcodecs
import numpy as np
import pytest

import zarrfast
from zarrfast.cli import main
from zarrfast.convert import convert
from zarrfast.errors import ZarrfastError


@pytest.fixture
def v2_tree(tmp_path):
    root = tmp_path / "src.zarr"
    g = zarrfast.open_group(str(root), mode="w", zarr_format=2, attributes={"title": "t"})
    data = np.arange(7 * 9, dtype=">i4").reshape(7, 9)
    a = g.create_array("a", shape=data.shape, chunks=(3, 4), dtype=">i4", order="F",
                       compressors=numcodecs.Blosc(cname="lz4", shuffle=-1),
                       dimension_names=["y", "x"], attributes={"units": "m"})
    a[...] = data
    f = g.create_array("sub/f", shape=(10,), chunks=(4,), dtype="<f8",
                       filters=[numcodecs.Delta(dtype="<f8")], compressors=numcodecs.Zlib(1),
                       fill_value=np.nan)
    f[2:7] = np.arange(5.0)
    e = g.create_array("sub/empty", shape=(5, 5), chunks=(2, 2), dtype="u1", fill_value=3,
                       compressors=None)
    return root, data, f[...], e[...]


def test_v2_to_v3_copies_bytes_where_encoding_carries_over(tmp_path, v2_tree):
    zarr = pytest.importorskip("zarr")
    root, data, fvals, evals = v2_tree
    dst = tmp_path / "v3.zarr"
    out = convert(str(root), str(dst), zarr_format=3, progress=False)
    assert out.zarr_format == 3
    a = zarrfast.open_array(str(dst), path="a", mode="r")
    np.testing.assert_array_equal(a[...], data)
    assert a.dimension_names == ("y", "x") and dict(a.attrs) == {"units": "m"}
    names = [c.name for c in a.codec_chain.codecs]
    assert names == ["transpose", "bytes", "blosc"]
    assert a.codec_chain.codecs[1].endian == "big"
    # blosc + F order + big endian carry over: the chunk files hold the same bytes
    src_chunk = (root / "a" / "1.2").read_bytes()
    assert (dst / "a" / "c" / "1" / "2").read_bytes() == src_chunk
    # filters: numcodecs.* codecs, decoded and encoded again, same values
    np.testing.assert_array_equal(zarrfast.open_array(str(dst), path="sub/f")[...], fvals)
    np.testing.assert_array_equal(zarrfast.open_array(str(dst), path="sub/empty")[...], evals)
    assert not (dst / "sub" / "empty" / "c").exists()  # never-written chunks stay missing
    # the reference implementation reads the result
    z = zarr.open_group(str(dst), mode="r")
    np.testing.assert_array_equal(z["a"][...], data)
    np.testing.assert_array_equal(z["sub/f"][...], fvals)
    assert z.attrs["title"] == "t"


def test_v3_to_v2_round_trip(tmp_path, v2_tree):
    zarr = pytest.importorskip("zarr")
    root, data, fvals, _ = v2_tree
    convert(str(root), str(tmp_path / "v3"), zarr_format=3, progress=False)
    convert(str(tmp_path / "v3"), str(tmp_path / "v2"), zarr_format=2, progress=False)
    z = zarr.open_group(str(tmp_path / "v2"), mode="r", zarr_format=2)
    np.testing.assert_array_equal(z["a"][...], data)
    assert z["a"].dtype == np.dtype(">i4") and z["a"].order == "F"
    np.testing.assert_array_equal(z["sub/f"][...], fvals)
    meta = json.loads((tmp_path / "v2" / "a" / ".zarray").read_text())
    assert meta["compressor"]["id"] == "blosc"


def test_numcodecs_filters_and_compressors_carry_over_as_numcodecs_codecs(tmp_path, v2_tree):
    """v2 numcodecs filters and compressors become the ``numcodecs.*`` codecs zarr-python 3
    writes (a compressor alone keeps its chunk bytes), and come back as v2 ones."""
    root, _, fvals, _ = v2_tree
    g = zarrfast.open_group(str(root), mode="a")
    lz = g.create_array("lz", shape=(20,), chunks=(8,), dtype=">u2",
                        compressors=numcodecs.LZMA(preset=1))
    lz[...] = np.arange(20)
    convert(str(root), str(tmp_path / "v3"), zarr_format=3, progress=False)
    f = zarrfast.open_array(str(tmp_path / "v3"), path="sub/f")
    assert f.codec_chain.to_json() == [
        {"name": "numcodecs.delta", "configuration": {"dtype": "<f8", "astype": "<f8"}},
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "numcodecs.zlib", "configuration": {"level": 1}}]
    np.testing.assert_array_equal(f[...], fvals)
    assert [c["name"] for c in zarrfast.open_array(str(tmp_path / "v3"), path="lz")
            .codec_chain.to_json()] == ["bytes", "numcodecs.lzma"]
    assert ((tmp_path / "v3" / "lz" / "c" / "1").read_bytes()
            == (root / "lz" / "1").read_bytes())  # the compressor's bytes carried over
    convert(str(tmp_path / "v3"), str(tmp_path / "v2"), zarr_format=2, progress=False)
    meta = json.loads((tmp_path / "v2" / "sub" / "f" / ".zarray").read_text())
    assert meta["filters"] == [{"id": "delta", "dtype": "<f8", "astype": "<f8"}]
    assert meta["compressor"] == {"id": "zlib", "level": 1}
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "v2"), path="sub/f")[...],
                                  fvals)
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "v2"), path="lz")[...],
                                  np.arange(20))


@pytest.mark.parametrize(("dtype", "endian", "raw"), [
    ("<M8[10s]", "little", True), (">m8[ms]", "big", True), ("<U4", "little", True),
    ("S3", None, True), ([("x", "<f4"), ("y", "<i2")], "little", True),
    ([("x", ">f8"), ("n", ">u2")], "big", True),
    ([("x", ">f8"), ("n", "<u2")], "little", False),  # mixed orders: stored in one
])
def test_datetimes_structs_and_fixed_strings_carry_over_both_ways(tmp_path, dtype, endian,
                                                                   raw):
    dt = np.dtype(dtype)
    v = np.zeros(9, dtype=dt)
    v.view(np.uint8)[...] = np.random.default_rng(3).integers(0, 128, v.nbytes, np.uint8)
    if dt.kind == "U":
        v = np.array(["ab", "c", "déf", ""] * 2 + ["z"], dtype=dt)
    a = zarrfast.create_array(str(tmp_path / "v2"), shape=(9,), chunks=(4,), dtype=dt,
                              zarr_format=2)
    a[...] = v
    convert(str(tmp_path / "v2"), str(tmp_path / "v3"), zarr_format=3, progress=False)
    b = zarrfast.open_array(str(tmp_path / "v3"))
    assert b.metadata.zarr_format == 3
    assert b[...].tobytes() == v.astype(b.dtype).tobytes()
    assert b.codec_chain.ab.to_dict().get("configuration", {}).get("endian") == endian
    assert ((tmp_path / "v3" / "c" / "1").read_bytes()
            == (tmp_path / "v2" / "1").read_bytes()) is raw
    convert(str(tmp_path / "v3"), str(tmp_path / "back"), zarr_format=2, progress=False)
    c = zarrfast.open_array(str(tmp_path / "back"))
    assert c[...].tobytes() == v.astype(c.dtype).tobytes()


def test_a_rectilinear_grid_stays_in_v3(tmp_path):
    a = zarrfast.create_array(str(tmp_path / "r"), shape=(10,), chunks=[[3, 7]], dtype="u1")
    a[...] = np.arange(10)
    with pytest.raises(ZarrfastError, match="rectilinear chunk grid has no Zarr v2 form"):
        convert(str(tmp_path / "r"), str(tmp_path / "v2"), zarr_format=2, progress=False)
    convert(str(tmp_path / "r"), str(tmp_path / "v3"), zarr_format=3, progress=False)
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "v3"))[...],
                                  np.arange(10))


def test_sharded_v3_to_v2_decodes(tmp_path):
    data = np.random.default_rng(1).integers(0, 100, (12, 10)).astype("u2")
    src = zarrfast.create_array(str(tmp_path / "s"), shape=data.shape, chunks=(2, 5),
                                shards=(4, 10), dtype="u2")
    src[...] = data
    convert(str(tmp_path / "s"), str(tmp_path / "d"), zarr_format=2, progress=False)
    out = zarrfast.open_array(str(tmp_path / "d"), mode="r")
    assert out.zarr_format == 2
    np.testing.assert_array_equal(out[...], data)


def test_unrepresentable_dtype_is_refused(tmp_path):
    # (vlen-utf8 strings convert to v3 'string': tests/reliability/test_cli_copy_convert.py;
    # objects under another object codec have no v3 data type)
    g = zarrfast.open_group(str(tmp_path / "s"), mode="w", zarr_format=2)
    g.create_array("objs", shape=(3,), chunks=(2,), dtype=object,
                   filters=[{"id": "json2"}])[...] = np.array([1, "b", [2]], dtype=object)
    with pytest.raises(ZarrfastError, match="'/objs'.*json2.*cannot be converted"):
        convert(str(tmp_path / "s"), str(tmp_path / "d"), zarr_format=3, progress=False)
    assert not (tmp_path / "d").exists()  # refused before anything is written


def test_existing_target_needs_overwrite(tmp_path, v2_tree):
    root, data, _, _ = v2_tree
    convert(str(root), str(tmp_path / "d"), progress=False)
    with pytest.raises(zarrfast.errors.ContainsGroupError):
        convert(str(root), str(tmp_path / "d"), progress=False)
    convert(str(root), str(tmp_path / "d"), progress=False, overwrite=True)
    np.testing.assert_array_equal(zarrfast.open_array(str(tmp_path / "d"), path="a")[...], data)


def test_cli_info_and_convert(tmp_path, v2_tree, capsys):
    root, data, _, _ = v2_tree
    assert main(["info", str(root)]) == 0
    out = capsys.readouterr().out
    assert "(group, Zarr v2)" in out
    # (a v2 array as its metadata holds it: no bytes or transpose codec, order F)
    assert "a (7, 9) >i4 chunks (3, 4) order F [compressor: blosc]" in out
    assert "stored" in out and "f (10,) float64" in out
    assert main(["convert", str(root), str(tmp_path / "c"), "--quiet"]) == 0
    assert main(["info", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "(group, Zarr v3)" in out and "[transpose, bytes, blosc]" in out
    assert main(["info", str(tmp_path / "missing")]) == 3  # exit code 3: not found
    assert "not found" in capsys.readouterr().err


def test_cli_convert_shows_progress(tmp_path, v2_tree):
    root, *_ = v2_tree
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from zarrfast.cli import main; sys.exit(main())",
         "convert", str(root), str(tmp_path / "p"), "--zarr-format", "3"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "chunk" in proc.stderr and "100%" in proc.stderr  # the tqdm bar
