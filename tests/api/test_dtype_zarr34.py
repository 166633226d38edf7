"""``zarrfast.dtype.check_dtype_spec_no_object_codec_v2`` (zarr-python 3.4's) answers as
zarr-python 3.4.2's (the peer) for the Zarr v2 forms of data types and near misses."""

from __future__ import annotations

from zarrfast.core.dtype import common
from zarrfast.dtype import check_dtype_spec_no_object_codec_v2

CASES = [
    {"name": "|u1", "object_codec_id": None},
    {"name": [["a", "<f8"]], "object_codec_id": None},
    {"name": "|O", "object_codec_id": "vlen-utf8"},
    {"name": "|u1", "object_codec_id": "vlen-utf8"},
    {"name": "|u1"},
    {"name": "|u1", "object_codec_id": None, "extra": 1},
    {"name": 1, "object_codec_id": None},
    {"object_codec_id": None},
    "|u1",
    None,
    [],
]


def test_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        from zarr.dtype import check_dtype_spec_no_object_codec_v2 as check
        emit([check(case) for case in ARGS])
    """, CASES)
    assert [check_dtype_spec_no_object_codec_v2(case) for case in CASES] == theirs
    assert theirs.count(True) == 2


def test_under_zarr_pythons_older_path() -> None:
    assert common.check_dtype_spec_no_object_codec_v2 is check_dtype_spec_no_object_codec_v2
