"""The Zarr format of arrays made like another, as zarr-python 3.4.2 (the peer) makes them:
``empty_like``/``zeros_like``/... take the model's format when ``zarr_format`` is ``None``
or not given; ``open_like`` does not inherit it (an existing array of either format opens,
a missing one is created in the default format), and takes ``mode=None`` as ``"a"``."""

from __future__ import annotations

import pytest

import zarrfast
from zarrfast.storage import MemoryStore

pytestmark = pytest.mark.interop

LIKES = ["empty_like", "zeros_like", "ones_like", "full_like"]

_PEER = """
import zarr
from zarr.storage import MemoryStore
out = {"like": [], "open_like": []}
for fn in ARGS:
    for source in (2, 3):
        for fmt in (None, 2, 3):
            src = zarr.create_array({}, shape=(4,), dtype="int32", compressors=None,
                                    zarr_format=source, fill_value=7)
            kw = {"fill_value": 7} if fn == "full_like" else {}
            new = getattr(zarr, fn)(src, zarr_format=fmt, **kw)
            out["like"].append(new.metadata.zarr_format)
for source in (2, 3):
    for target in (None, 2, 3):
        for mode in ({}, {"mode": None}):
            src = zarr.zeros(store={}, shape=(4,), dtype="int32", zarr_format=source)
            store = MemoryStore()
            if target is not None:
                zarr.create_array(store, name="e", shape=(4,), dtype="int32",
                                  zarr_format=target)
            opened = zarr.open_like(src, path="e", store=store, **mode)
            out["open_like"].append([opened.metadata.zarr_format, opened.shape])
emit(out)
"""


def test_formats_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run(_PEER, LIKES)
    ours: dict = {"like": [], "open_like": []}
    for fn in LIKES:
        for source in (2, 3):
            for fmt in (None, 2, 3):
                src = zarrfast.create_array({}, shape=(4,), dtype="int32", compressors=None,
                                            zarr_format=source, fill_value=7)
                kw = {"fill_value": 7} if fn == "full_like" else {}
                new = getattr(zarrfast, fn)(src, zarr_format=fmt, **kw)
                ours["like"].append(new.metadata.zarr_format)
    for source in (2, 3):
        for target in (None, 2, 3):
            for mode in ({}, {"mode": None}):
                src = zarrfast.zeros(store={}, shape=(4,), dtype="int32", zarr_format=source)
                store = MemoryStore()
                if target is not None:
                    zarrfast.create_array(store, name="e", shape=(4,), dtype="int32",
                                          zarr_format=target)
                opened = zarrfast.open_like(src, path="e", store=store, **mode)
                ours["open_like"].append([opened.metadata.zarr_format, list(opened.shape)])
    assert ours == theirs
    assert theirs["like"][:3] == [2, 2, 3]  # (a v2 model, zarr_format None / 2 / 3)
