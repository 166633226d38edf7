"""Zarr v3 ``raw_bytes`` arrays as zarr-python 3.4.2 (the peer) writes NumPy ``V<n>`` data
(``{"name": "raw_bytes", "configuration": {"length_bytes": n}}``, fill values base64)
open in zarrfast with their values and fill value, are written back in that form, and the
peer reads what zarrfast wrote.  (They were refused: "with a configuration is not
supported"; tests/review53/test_peer_dtypes.py found it.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import FillValueError
from zarrfast.storage import MemoryStore

pytestmark = pytest.mark.interop


def test_both_ways_with_the_peer(zarr_peer, tmp_path) -> None:
    path = str(tmp_path / "rb.zarr")
    zarr_peer.run("""
        import numpy as np, zarr
        a = zarr.create_array(ARGS, shape=(5,), chunks=(2,), dtype="V3", fill_value=b"abc",
                              zarr_format=3)
        a[:3] = np.frombuffer(bytes(range(9)), dtype="V3")
    """, path)
    a = zarrfast.open_array(path)
    assert a.dtype == np.dtype("V3")
    assert a[:].tobytes() == bytes(range(9)) + b"abcabc"
    assert bytes(a.fill_value) == b"abc"
    a[4] = np.frombuffer(b"xyz", dtype="V3")[0]
    a.attrs["k"] = 1
    doc = json.loads((tmp_path / "rb.zarr" / "zarr.json").read_text())
    assert doc["data_type"] == {"name": "raw_bytes", "configuration": {"length_bytes": 3}}
    assert doc["fill_value"] == "YWJj"
    theirs = zarr_peer.run("""
        import zarr
        a = zarr.open_array(ARGS, mode="r")
        emit([list(a[:].tobytes()), list(bytes(a.fill_value)), a.attrs["k"]])
    """, path)
    assert theirs == [list(bytes(range(9)) + b"abcxyz"), list(b"abc"), 1]


@pytest.mark.parametrize("fill", ["YWI=", [97, 98], "not base64!"])
def test_a_fill_value_not_base64_of_the_length_is_refused(fill) -> None:
    s = MemoryStore()
    s.set("zarr.json", json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": {"name": "raw_bytes", "configuration": {"length_bytes": 3}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
        "codecs": [{"name": "bytes"}]}).encode())
    with pytest.raises(FillValueError, match="raw_bytes"):
        zarrfast.open_array(s, mode="r")


def test_a_fill_value_as_a_list_of_the_length_is_read() -> None:
    """(the core spec's r<N> form, which zarrfast wrote for V<n>, a struct's field too,
    before it wrote raw_bytes: such documents keep opening)"""
    s = MemoryStore()
    s.set("zarr.json", json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [2],
        "data_type": {"name": "raw_bytes", "configuration": {"length_bytes": 3}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": [97, 98, 99],
        "codecs": [{"name": "bytes"}]}).encode())
    assert zarrfast.open_array(s, mode="r")[:].tobytes() == b"abcabc"
