"""Field selection on structured (Zarr v2) arrays, read and write."""

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import IndexingError

DT = np.dtype([("a", "<i4"), ("b", "S3"), ("c", "<f8", (2,))])


@pytest.fixture
def arr():
    z = zarrfast.create_array({}, shape=(5,), chunks=(2,), dtype=DT, zarr_format=2)
    data = np.array([(i, b"x%d" % i, (i, -i)) for i in range(5)], dtype=DT)
    z[...] = data
    return z, data


def test_read_fields(arr):
    z, data = arr
    np.testing.assert_array_equal(z["a"], data["a"])
    np.testing.assert_array_equal(z["b", 1:3], data["b"][1:3])
    np.testing.assert_array_equal(z[::-2, "c"], data["c"][::-2])
    np.testing.assert_array_equal(z[["a", "b"]], data[["a", "b"]])
    np.testing.assert_array_equal(z.get_basic_selection(slice(0, 2), fields="c"), data["c"][:2])
    out = np.empty((2, 2))
    z.get_basic_selection(slice(3, 5), fields="c", out=out)
    np.testing.assert_array_equal(out, data["c"][3:5])


def test_write_fields_keeps_other_fields(arr):
    z, data = arr
    z["a", 2:4] = 99
    data["a"][2:4] = 99
    z.set_basic_selection(slice(0, 1), [(8.0, 9.0)], fields="c")
    data["c"][0] = (8.0, 9.0)
    z[4] = (7, b"q", (1.5, 2.5))
    data[4] = (7, b"q", (1.5, 2.5))
    np.testing.assert_array_equal(z[...], data)
    reopened = zarrfast.open_array(z.store, mode="r")
    np.testing.assert_array_equal(reopened[...], data)


def test_unknown_field_is_named(arr):
    z, _ = arr
    with pytest.raises(IndexingError, match="no field 'nope'.*'a', 'b', 'c'"):
        z["nope"]
    plain = zarrfast.create_array({}, shape=(3,), dtype="i4")
    with pytest.raises(IndexingError, match="has no fields"):
        plain.get_basic_selection(fields="a")
