"""A padded structured dtype (``align=True``, explicit offsets, in a nested field too) given
to create an array is stored packed, with one ``ZarrUserWarning``, as zarr-python 3.4.2
(the peer) does: the field values are kept and the peer reads them.  A Zarr v2 array of
one used to be written with the padded fill value and chunks but the packed field list,
and could not be opened again."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.lib.recfunctions import repack_fields

import zarrfast
from zarrfast.errors import ZarrUserWarning

pytestmark = pytest.mark.interop

DTYPES = [
    np.dtype([("a", "i1"), ("b", "i8")], align=True),
    np.dtype([("a", "i8"), ("nested", np.dtype([("x", "i1"), ("y", "i8")], align=True))]),
    np.dtype({"names": ["a", "b"], "formats": ["i1", "i1"], "offsets": [0, 4], "itemsize": 8}),
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES, ids=["aligned", "nested", "offsets"])
def test_stored_packed_with_one_warning(zarr_peer, tmp_path, dtype, zarr_format) -> None:
    data = np.ones(3, dtype=dtype)
    data["a"] = [1, 2, 3]
    expected = repack_fields(data, recurse=True)
    path = str(tmp_path / "a.zarr")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        zarrfast.create_array(path, data=data, chunks=(2,), zarr_format=zarr_format,
                              fill_value=data[0])
    layout = [w for w in record if issubclass(w.category, ZarrUserWarning)]
    assert len(layout) == 1 and "packed field layout" in str(layout[0].message)
    reopened = zarrfast.open_array(path)
    assert reopened.dtype == expected.dtype
    assert reopened[:].tolist() == expected.tolist()
    assert reopened.fill_value.tolist() == expected[0].tolist()
    theirs = zarr_peer.run("""
        import zarr
        a = zarr.open_array(ARGS, mode="r")
        emit([a.dtype.itemsize, a[:].tolist()])
    """, path)
    assert theirs[0] == expected.dtype.itemsize
    assert theirs[1] == _lists(expected.tolist())


def _lists(value):
    """``tolist()`` of a structured array as JSON gives it (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


def test_a_packed_dtype_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fmt in (2, 3):
            zarrfast.create_array({}, shape=(2,), dtype=[("a", "i1"), ("b", "i8")],
                                  zarr_format=fmt)
