"""Review of 49a55a9 (``ZipStore`` on an open binary file object; ``close`` raising when
the central directory cannot be written).

``close`` now says when the archive is left incomplete (tests/storage/test_guide_zarr34.py).
The other way an archive is finished is not covered: a store nobody closed is finished by
its finaliser (``_close_quietly``), which swallows the error.  With a path that hardly
happens (``zipfile`` owns the file); with a file object it is the usual mistake -- the
``with open(...)`` block ends before the store is closed -- and then the archive is lost
without a word (no central directory: not a zip file).  zarr-python 3.4.2 in the same
case loses it too, but says so (``zipfile.ZipFile.__del__``: "Exception ignored ...
ValueError: seek of closed file" through ``sys.unraisablehook``).  A warning naming the
archive is what the test asks for (any warning, or an unraisable error, passes it).
Proposed in /tmp/prop_review54/zip_finaliser_warns.diff, landed in 944186e: the test was
a strict xfail until then.

Guards beside it (pass now): a store on a file object, written and closed, keeps every
value, read back from the file object and from its path; a store on a path is unchanged.
"""

from __future__ import annotations

import gc
import io
import sys
import warnings
import weakref
import zipfile

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import ZipStore


def _write_unclosed(path) -> weakref.ref:
    """An array written through a ``ZipStore`` on ``open(path, "wb")``; the file closed
    by its ``with`` block, the store never closed, then dropped.  A weak reference to
    the archive."""
    with open(path, "wb") as f:
        store = ZipStore(f, mode="w")
        a = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i4")
        a[...] = np.arange(4, dtype="i4")
        archive = weakref.ref(store._archive)
    assert f.closed and not store.closed
    del a, store  # (the store is finalised here, after its file was closed)
    return archive


def test_unclosed_store_on_a_closed_file_object_is_not_lost_silently(tmp_path,
                                                                     monkeypatch) -> None:
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    path = tmp_path / "lost.zip"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archive = _write_unclosed(path)
        gc.collect()
    assert archive() is None  # (the finaliser ran)
    assert not zipfile.is_zipfile(path)  # the archive is lost (as with zarr-python) ...
    said = [str(w.message) for w in caught] + [repr(u) for u in unraisable]
    assert said, "... and nothing said so"


@pytest.mark.filterwarnings("ignore:Duplicate name")  # (attrs rewrite zarr.json, as zarr-python)
def test_store_on_a_file_object_keeps_every_value(tmp_path) -> None:
    """(guard) written through a file object and closed: complete, read back through a
    file object, a ``BytesIO`` and the path."""
    data = np.arange(30, dtype=">f8").reshape(5, 6)
    with open(tmp_path / "a.zip", "w+b") as f:  # (read too: zarr.json is read back)
        with ZipStore(f, mode="w") as store:
            g = zarrfast.open_group(store, mode="w")
            g.create_array("x", shape=(5, 6), chunks=(2, 4), dtype=">f8")[...] = data
            g.attrs["k"] = 1
    assert zipfile.ZipFile(tmp_path / "a.zip").testzip() is None
    raw = (tmp_path / "a.zip").read_bytes()
    with open(tmp_path / "a.zip", "rb") as f:
        sources = [ZipStore(f), ZipStore(io.BytesIO(raw)), ZipStore(tmp_path / "a.zip")]
        for store in sources:
            g = zarrfast.open_group(store, mode="r")
            np.testing.assert_array_equal(g["x"][...], data)
            assert g.attrs["k"] == 1
            store.close()
