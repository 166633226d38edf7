"""Object arrays given as ``data`` without a dtype: strings are stored as strings, and
anything else is refused, naming the array -- it was stored as the ``str()`` of each
element (1 -> '1', None -> 'None', b'ab' -> "b'ab'"), silently.  A ``save_group`` with
such an array leaves the group that is there as it was."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import MetadataTypeError

NOT_STRINGS = {
    "ints": [1, 2],
    "none": ["a", None],
    "bytes": [b"ab", b"c"],
    "floats": [1.5, "x"],
}


@pytest.mark.parametrize("values", list(NOT_STRINGS.values()), ids=list(NOT_STRINGS))
def test_object_data_of_other_than_strings_is_refused(values):
    data = np.array(values, dtype=object)
    with pytest.raises(MetadataTypeError, match=r"array '/a'.*object.*other than str"):
        zarrfast.create_array({}, name="a", data=data)
    with pytest.raises(MetadataTypeError, match="other than str"):
        zarrfast.array(data)


def test_object_data_of_strings_is_stored_as_strings():
    data = np.array(["a", np.str_("bc"), ""], dtype=object)
    a = zarrfast.create_array({}, data=data)
    assert a[:].tolist() == ["a", "bc", ""]
    # (a dtype given: the data converted to it, as before)
    b = zarrfast.create_array({}, shape=(2,), dtype="i4")
    b[:] = np.array([1, 2], dtype=object)
    assert b[:].tolist() == [1, 2]


def test_save_group_with_an_unstorable_array_keeps_the_group_that_is_there(tmp_path):
    path = tmp_path / "g.zarr"
    g = zarrfast.open_group(path, mode="w")
    g.create_array("keep", data=np.arange(3))
    g.attrs["note"] = "kept"
    with pytest.raises(MetadataTypeError, match=r"array '/x'"):
        zarrfast.save_group(path, np.ones(2), x=np.array([1, None], dtype=object))
    g = zarrfast.open_group(path, mode="r")
    assert sorted(g) == ["keep"] and g.attrs["note"] == "kept"
    assert g["keep"][:].tolist() == [0, 1, 2]
    # a save that can be stored replaces the group, as before
    zarrfast.save_group(path, np.ones(2), x=np.array(["p", "q"], dtype=object))
    g = zarrfast.open_group(path, mode="r")
    assert sorted(g) == ["arr_0", "x"] and g["x"][:].tolist() == ["p", "q"]
