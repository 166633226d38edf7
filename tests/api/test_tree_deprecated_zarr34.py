"""``zarrfast.tree(group)`` is deprecated as zarr-python 3.4.2's ``zarr.tree`` is (the peer
warns too): a ``ZarrDeprecationWarning`` saying "Use Group.tree instead.", and the same
drawing as ``group.tree()``."""

from __future__ import annotations

import pytest

import zarrfast
from zarrfast.errors import ZarrDeprecationWarning

pytestmark = pytest.mark.interop


def test_deprecated_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import warnings
        import zarr
        g = zarr.group()
        g.create_group("a").create_array("x", shape=(2,), dtype="i1")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            drawn = str(zarr.tree(g))
        emit([drawn == str(g.tree()), [(x.category.__name__, str(x.message)) for x in w]])
    """)
    g = zarrfast.group()
    g.create_group("a").create_array("x", shape=(2,), dtype="i1")
    with pytest.warns(ZarrDeprecationWarning, match=r"Group\.tree instead\.") as record:
        drawn = str(zarrfast.tree(g))
    assert drawn == str(g.tree())
    assert record[0].filename == __file__
    assert theirs[0] is True
    assert theirs[1][0][0] == "ZarrDeprecationWarning" and "Group.tree instead." in theirs[1][0][1]
