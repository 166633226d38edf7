"""The API takes zarr-python's configuration defaults: default_zarr_format and array.order
decide what create_array, create, group, save and open_array do when not told."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast


@pytest.mark.parametrize("fmt", [2, 3])
def test_default_zarr_format_reaches_every_creator(fmt):
    with zarrfast.config.set({"default_zarr_format": fmt}):
        assert zarrfast.create_array({}, shape=(4,), dtype="i4").metadata.zarr_format == fmt
        assert zarrfast.zeros((3,), store={}).metadata.zarr_format == fmt
        assert zarrfast.group({}).metadata.zarr_format == fmt
        assert zarrfast.create_group({}).metadata.zarr_format == fmt
        store: dict = {}
        zarrfast.save_array(store, np.arange(3))
        assert zarrfast.open_array(store).metadata.zarr_format == fmt
        assert zarrfast.from_array({}, data=np.arange(3)).metadata.zarr_format == fmt
    # an explicit format wins over the default
    with zarrfast.config.set({"default_zarr_format": 2}):
        assert zarrfast.create_array({}, shape=(1,), dtype="i4",
                                     zarr_format=3).metadata.zarr_format == 3


def test_array_order_is_read_when_an_array_is_opened():
    store: dict = {}
    zarrfast.create_array(store, shape=(3, 4), dtype="i4")[:] = np.arange(12).reshape(3, 4)
    assert zarrfast.open_array(store).order == "C"
    with zarrfast.config.set({"array.order": "F"}):
        a = zarrfast.open_array(store)
    assert a.order == "F"
    out = a[:]
    assert out.flags.f_contiguous and np.array_equal(out, np.arange(12).reshape(3, 4))
    # given explicitly (argument or config=) it wins
    with zarrfast.config.set({"array.order": "F"}):
        assert zarrfast.open_array(store, order="C").order == "C"
        assert zarrfast.open_array(store, config={"order": "C"}).order == "C"


def test_codecs_key_names_each_codec_class_as_zarr_pythons_does():
    import importlib

    import zarrfast
    from zarrfast.codecs import get_codec_class

    def named(path):
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)

    listed = dict(zarrfast.config.get("codecs"))
    # zarr-python's names are all there, each naming the class zarrfast uses for it
    for name in ("blosc", "bytes", "crc32c", "endian", "gzip", "sharding_indexed",
                 "transpose", "vlen-bytes", "vlen-utf8", "zstd", "numcodecs.delta"):
        assert named(listed[name]) is get_codec_class(name), name
    try:
        zarrfast.config.set({"codecs.zstd": "mypackage.MyZstd"})
        assert zarrfast.config.get("codecs.zstd") == "mypackage.MyZstd"
    finally:
        zarrfast.config.reset()
    assert zarrfast.config.get("codecs") == listed
