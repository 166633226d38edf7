"""Review of 7498001 (NumPy ``V<n>`` written as Zarr v3 ``raw_bytes``, not ``r<8n>``).

Plain ``V<n>`` arrays zarrfast wrote before (``"r24"``, fill value a list of integers)
still open and keep their form (tests/review53/test_peer_dtypes.py guards that).  A
*struct* field of NumPy type ``V<n>`` does not: zarrfast before 7498001 wrote it as
``{"name": "b", "data_type": "r24"}`` with the field's fill value ``[0, 0, 0]``, and
since 7498001 the struct's fill value is parsed with the field's type made again from
NumPy (``raw_bytes``, base64 only), so such an array no longer opens
(``FillValueError: ... raw_bytes needs a base64 string fill value, got [0, 0, 0]``).
For the same reason ``create_array(dtype="V3", fill_value=[1, 2, 3])``, accepted before
(written ``r24``), is now refused (zarr-python 3.4.2 refuses it too: low severity).
One fix for both was proposed in /tmp/prop_review54/struct_void_field_fill.diff (a
``raw_bytes`` fill value given as a list of integers is read as ``r<8n>``'s) and landed in
944186e: these were strict xfails until then, and now guard it.

Guards beside it (pass now): a struct with a ``V<n>`` field written by zarrfast today
opens in zarr-python 3.4.2 with the same values and fill value, and zarr-python 3.4.2's
opens in zarrfast."""

from __future__ import annotations

import base64
import json

import numpy as np

import zarrfast

DT = np.dtype([("a", "<i2"), ("b", "V3")])
VALUES = np.array([(1, b"abc"), (-2, b"\x00\x01\x02"), (3, b"xyz"), (4, b"\xff\xfe\xfd")],
                  dtype=DT)

#: zarr.json as zarrfast wrote it before 7498001 (60effb3) for
#: ``create_array(shape=(4,), chunks=(2,), dtype=[("a", "<i2"), ("b", "V3")])``
OLD_ZARR_JSON = {
    "shape": [4],
    "data_type": {"name": "struct", "configuration": {"fields": [
        {"name": "a", "data_type": "int16"}, {"name": "b", "data_type": "r24"}]}},
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": {"a": 0, "b": [0, 0, 0]},
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
               {"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
    "attributes": {}, "zarr_format": 3, "node_type": "array", "storage_transformers": [],
}


def _old_array(path) -> None:
    """An array as zarrfast wrote it before 7498001: its chunks (the same bytes either
    way: little-endian packed fields, zstd) and its zarr.json of then."""
    a = zarrfast.create_array(str(path), shape=(4,), chunks=(2,), dtype=DT)
    a[...] = VALUES
    (path / "zarr.json").write_text(json.dumps(OLD_ZARR_JSON, indent=2))


def test_struct_with_a_void_field_written_before_7498001_opens(tmp_path) -> None:
    path = tmp_path / "old.zarr"
    _old_array(path)
    a = zarrfast.open_array(str(path), mode="r+")
    assert a.dtype == DT
    assert a[...].tobytes() == VALUES.tobytes()
    assert a.fill_value.tobytes() == b"\x00" * 5
    a[1] = VALUES[2]  # and it is still written
    assert zarrfast.open_array(str(path))[1].tobytes() == VALUES[2].tobytes()


def test_struct_with_a_void_field_opens_in_zarr_python_3_4(tmp_path, zarr_peer) -> None:
    """(guard) zarrfast's struct with a ``V<n>`` field (now a ``raw_bytes`` field, fill
    base64) and zarr-python 3.4.2's are the same to both."""
    ours = tmp_path / "ours.zarr"
    fill = np.array((7, b"\x01\x02\x03"), dtype=DT)[()]
    a = zarrfast.create_array(str(ours), shape=(6,), chunks=(4,), dtype=DT, fill_value=fill)
    a[:4] = VALUES
    doc = json.loads((ours / "zarr.json").read_text())
    assert doc["data_type"]["configuration"]["fields"][1]["data_type"] == {
        "name": "raw_bytes", "configuration": {"length_bytes": 3}}
    got = zarr_peer.run("""
        import base64, numpy as np, zarr
        a = zarr.open_array(ARGS[0], mode="r")
        b = zarr.create_array(ARGS[1], shape=(6,), chunks=(4,), dtype=a.dtype,
                              fill_value=a.fill_value)
        b[:4] = a[:4]
        emit([base64.b64encode(a[...].tobytes()).decode(), str(a.dtype),
              base64.b64encode(np.asarray(a.fill_value).tobytes()).decode()])
    """, [str(ours), str(tmp_path / "theirs.zarr")])
    want = np.concatenate([VALUES, np.array([fill, fill], dtype=DT)])
    assert base64.b64decode(got[0]) == want.tobytes()
    assert base64.b64decode(got[2]) == np.asarray(fill).tobytes()
    theirs = zarrfast.open_array(str(tmp_path / "theirs.zarr"))
    assert theirs.dtype == DT
    assert theirs[...].tobytes() == want.tobytes()


def test_void_fill_value_as_a_list_of_integers_is_still_accepted(tmp_path) -> None:
    a = zarrfast.create_array(str(tmp_path / "a.zarr"), shape=(2,), chunks=(2,),
                              dtype="V3", fill_value=[1, 2, 3])
    assert a[0].tobytes() == b"\x01\x02\x03"
    doc = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert doc["fill_value"] == "AQID"  # (written as zarr-python writes it)
