"""``ZipStore(path, mode="r", read_only=False)`` opens the archive for reading, as
zarr-python 3.4 takes it (its ``test_load_zip``); the store is read-only all the same:
a write is refused naming the store, and the archive is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ReadOnlyError
from zarrfast.storage import ZipStore


@pytest.mark.parametrize("read_only", [True, False, None])
def test_mode_r_reads_whatever_read_only_says(tmp_path, read_only) -> None:
    path = tmp_path / "data.zip"
    with ZipStore(path, mode="w") as store:
        zarrfast.save(store, np.arange(6).reshape(2, 3), path="data")
    before = path.read_bytes()
    with ZipStore(path, mode="r", read_only=read_only) as store:
        assert store.read_only
        np.testing.assert_array_equal(zarrfast.load(store=store, path="data"),
                                      np.arange(6).reshape(2, 3))
        with pytest.raises(ReadOnlyError, match=r"ZipStore\('zip://.*data.zip', mode='r'"):
            store.set("k", b"v")
    assert path.read_bytes() == before
