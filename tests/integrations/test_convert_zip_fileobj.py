"""zarrfast.convert from a ZipStore made on an open file object (zarr-python 3.4's
storage.md): it raised TypeError (the store has no path); the overlap check now knows the
file it reads."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import ZipStore

convert = sys.modules["zarrfast.convert"]


def test_convert_reads_a_zip_store_on_a_file_object(tmp_path) -> None:
    with ZipStore(tmp_path / "data.zip", mode="w") as store:
        zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="i2")[:] = np.arange(4)
    with open(tmp_path / "data.zip", mode="rb") as f:
        out = convert.convert(ZipStore(f), {}, zarr_format=2, progress=False)
        np.testing.assert_array_equal(out[:], np.arange(4))
        with pytest.raises(convert.SourceOverlapError):
            convert.convert(ZipStore(f), str(tmp_path / "data.zip"), progress=False)
