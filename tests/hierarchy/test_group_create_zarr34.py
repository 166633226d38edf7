"""``Group.create`` (zarr-python 3.4): ``create_array`` under another name, documented as
it is (zarr-python's test_synchronous compares the docstrings of the creation routines)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ContainsArrayError


def test_create_is_create_array() -> None:
    g = zarrfast.group(store={})
    a = g.create("a/b", shape=(4,), dtype="int8", chunks=(2,), attributes={"k": 1})
    assert a.path == "a/b" and a.shape == (4,) and a.chunks == (2,) and dict(a.attrs) == {"k": 1}
    b = g.create("c", data=np.arange(3))
    assert b[:].tolist() == [0, 1, 2]
    with pytest.raises(ContainsArrayError):
        g.create("c", shape=(2,), dtype="int8")
    assert g.create("c", shape=(2,), dtype="int8", overwrite=True).shape == (2,)


def test_documents_the_parameters_of_create_array() -> None:
    np_doc = pytest.importorskip("numpydoc.docscrape")
    params = {p.name: (p.type, p.desc) for p in
              np_doc.NumpyDocString(zarrfast.Group.create.__doc__)["Parameters"]}
    theirs = {p.name: (p.type, p.desc) for p in
              np_doc.NumpyDocString(zarrfast.Group.create_array.__doc__)["Parameters"]}
    assert params == theirs
