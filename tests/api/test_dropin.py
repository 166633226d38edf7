"""The drop-in promise: one script written against zarr-python 3 runs unchanged with
``import zarrfast as zarr`` and gives identical results."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrfast

zarr_python = pytest.importorskip("zarr")


def script(zarr, root: str) -> dict:  # noqa: ANN001 - the module under test
    """A user's script: only zarr-python 3 API, results collected for comparison."""
    out: dict = {}
    data = np.arange(20 * 30, dtype="float32").reshape(20, 30)
    a = zarr.create_array(f"{root}/a.zarr", shape=data.shape, chunks=(6, 7), dtype="float32",
                          fill_value=-1.0, attributes={"units": "K"},
                          dimension_names=["y", "x"])
    a[...] = data
    a[2:5, ::3] = 7.5
    a.attrs["title"] = "demo"
    out["basic"] = a[1:19:4, 3::5]
    out["int"] = a[3, 4]
    out["oindex"] = a.oindex[[5, 0, 5], [29, 1]]
    out["vindex"] = a.vindex[[1, 2, 19], [0, 29, 3]]
    out["mask"] = a[data > 580]
    out["blocks"] = a.blocks[1, 2:4]
    out["getitem_list"] = a[[3, 1]]
    a.oindex[[0, 19], [0, 29]] = -2
    a.vindex[[10, 11], [10, 11]] = -3
    a[data < 3] = 100
    out["after_writes"] = a[...]
    out["props"] = (a.shape, a.chunks, a.dtype, a.ndim, a.size, a.nbytes, a.fill_value,
                    a.nchunks, a.cdata_shape, a.order, a.metadata.zarr_format, a.path,
                    a.basename, a.nchunks_initialized)
    out["attrs"] = dict(a.attrs)
    a.resize((25, 30))
    out["resized"] = a[18:, :3]
    out["append"] = a.append(np.ones((2, 30), dtype="float32"))
    out["appended"] = a[-3:, :4]
    b = pickle.loads(pickle.dumps(a))
    out["pickled"] = b[::7, ::9]

    g = zarr.open_group(f"{root}/g.zarr", mode="w", attributes={"k": 1})
    sub = g.create_group("sub", attributes={"s": 2})
    sub.create_array("c", shape=(4,), chunks=(2,), dtype="int16", fill_value=3)
    g.create_array("d", data=np.arange(6, dtype="uint8").reshape(2, 3), chunks=(1, 3))
    g.require_group("sub")
    out["keys"] = sorted(g.keys())
    out["members"] = sorted(k for k, _ in g.members(max_depth=None))
    out["group_attrs"] = (dict(g.attrs), dict(g["sub"].attrs))
    out["nested"] = g["sub/c"][...]
    out["d"] = g["d"][...]
    out["contains"] = ("sub" in g, "nope" in g, len(g))

    z = zarr.zeros((5, 4), chunks=(2, 2), dtype="int32", store=f"{root}/z.zarr")
    o = zarr.ones_like(z, store=f"{root}/o.zarr")
    f = zarr.full((3,), fill_value=4.5, store=f"{root}/f.zarr", chunks=(2,))
    e = zarr.empty_like(f, store=f"{root}/e.zarr")
    out["constructors"] = (z[...], o[...], f[...], e.shape, e.dtype)
    arr = zarr.array(np.arange(10), store=f"{root}/arr.zarr", chunks=(3,))
    fa = zarr.from_array(f"{root}/fa.zarr", data=arr)
    out["from_array"] = (fa[...], fa.chunks)

    v2 = zarr.create_array(f"{root}/v2.zarr", shape=(7, 5), chunks=(3, 2), dtype=">i4",
                           zarr_format=2, order="F", fill_value=9)
    v2[1:6, 1:4] = np.arange(15).reshape(5, 3)
    out["v2"] = (v2[...], v2.dtype, v2.metadata.zarr_format, v2.order,
                 v2.oindex[[0, 3], [4, 1]])

    zarr.consolidate_metadata(f"{root}/g.zarr")
    c = zarr.open_consolidated(f"{root}/g.zarr")
    out["consolidated"] = sorted(c.keys())
    zarr.save(f"{root}/s.zarr", np.arange(4))
    out["load"] = zarr.load(f"{root}/s.zarr")
    return out


def _same(x, y, key):
    if isinstance(x, (tuple, list)):
        assert type(x) is type(y) or key in ("props",), key
        assert len(x) == len(y), key
        for i, (p, q) in enumerate(zip(x, y, strict=True)):
            _same(p, q, f"{key}[{i}]")
        return
    if isinstance(x, dict):
        assert x == y, key
        return
    xa, ya = np.asarray(x), np.asarray(y)
    assert xa.shape == ya.shape, (key, xa.shape, ya.shape)
    assert xa.dtype == ya.dtype, (key, xa.dtype, ya.dtype)
    np.testing.assert_array_equal(xa, ya, err_msg=key)


def test_same_script_same_results(tmp_path):
    theirs = script(zarr_python, str(tmp_path / "zp"))
    ours = script(zarrfast, str(tmp_path / "zf"))
    assert ours.keys() == theirs.keys()
    for key in theirs:
        if key == "props":
            # scalars compared by value (zarr-python returns np scalars / plain ints alike)
            for i, (p, q) in enumerate(zip(ours[key], theirs[key], strict=True)):
                assert p == q or (isinstance(p, float) and np.isnan(p) and np.isnan(q)), (
                    key, i, p, q)
            continue
        _same(ours[key], theirs[key], key)


def test_peers_read_what_the_script_wrote(tmp_path):
    script(zarrfast, str(tmp_path))
    a = zarr_python.open_array(str(tmp_path / "a.zarr"), mode="r")
    b = zarrfast.open_array(str(tmp_path / "a.zarr"), mode="r")
    np.testing.assert_array_equal(a[...], b[...])
    assert dict(a.attrs) == dict(b.attrs)
    g = zarr_python.open_group(str(tmp_path / "g.zarr"), mode="r")
    assert sorted(g.keys()) == ["d", "sub"]


def test_negative_steps_equal_numpy(tmp_path):
    """zarr-python refuses negative steps; zarrfast gives NumPy's answer."""
    data = np.arange(20 * 30, dtype="float32").reshape(20, 30)
    a = zarrfast.create_array(str(tmp_path / "n.zarr"), shape=data.shape, chunks=(6, 7),
                              dtype="float32")
    a[...] = data
    for sel in [(slice(None, None, -1),), (slice(-1, 0, -5), slice(None, None, -3)),
                (3, slice(25, 2, -4)), (slice(None), [29, -1, 0])]:
        np.testing.assert_array_equal(a[sel], data[sel])
    a[::-2, 5:0:-1] = -1
    data[::-2, 5:0:-1] = -1
    np.testing.assert_array_equal(a[...], data)


def test_like_functions_copy_a_dask_arrays_regular_chunks(tmp_path):
    """A dask array's ``chunks`` holds every chunk's size; its regular chunk shape
    (``chunksize``) is what the ``*_like`` functions copy, as zarr-python's do.  Irregular
    chunks (which zarr-python refuses) are not copied: the chunk shape is a guess."""
    da = pytest.importorskip("dask.array")
    x = da.zeros((10, 7), chunks=(4, 3), dtype="int16")
    assert x.chunks == ((4, 4, 2), (3, 3, 1))
    for name in ("empty_like", "zeros_like", "ones_like", "full_like"):
        kw = {"fill_value": 3} if name == "full_like" else {}
        ours = getattr(zarrfast, name)(x, **kw)
        theirs = getattr(zarr_python, name)(x, **kw)
        assert ours.chunks == theirs.chunks == (4, 3), name
        assert (ours.shape, ours.dtype) == ((10, 7), np.dtype("int16")), name
    assert zarrfast.open_like(x, str(tmp_path / "like.zarr")).chunks == (4, 3)
    assert zarrfast.zeros_like(x, chunks=(5, 7)).chunks == (5, 7)  # a keyword wins

    irregular = da.zeros((10, 7), chunks=((4, 6), (3, 4)), dtype="int16")
    with pytest.raises(ValueError, match="Irregular"):
        zarr_python.zeros_like(irregular)
    z = zarrfast.zeros_like(irregular)
    assert z.shape == (10, 7) and z.metadata.regular
    assert z.chunks == zarrfast.zeros((10, 7), dtype="int16").chunks  # the guess
