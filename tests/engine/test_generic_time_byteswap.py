"""Big-endian generic-unit datetime64/timedelta64 values ('>M8', '>m8') written to an array
keep their values. NumPy's astype between byte orders does not swap the bytes of a
generic-unit time (NumPy 2.4: ``np.array([1], '>i8').view('>M8').astype('<M8')`` holds
2**56), and zarrfast.engine.values.as_stored used astype: 1 read back as 2**56."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast

COUNTS = [0, 1, -2, 100]


@pytest.mark.parametrize("kind", ["M8", "m8"])
@pytest.mark.parametrize("how", ["data", "setitem"])
def test_big_endian_generic_time_values_are_kept(kind, how) -> None:
    data = np.array(COUNTS, dtype=">i8").view(f">{kind}")
    if how == "data":
        a = zarrfast.create_array({}, data=data, chunks=2, compressors=None)
    else:
        a = zarrfast.create_array({}, shape=(4,), dtype=f"<{kind}", chunks=2)
        a[:] = data
    got = a[:]
    assert got.view(got.dtype.byteorder.replace("=", "") + "i8").tolist() == COUNTS
