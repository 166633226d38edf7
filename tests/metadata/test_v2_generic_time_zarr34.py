"""Zarr v2 arrays of generic-unit datetime64/timedelta64 ('<M8', '<m8'), which zarr-python
3.4.2 (the peer) writes and reads and Zarr v3 already allowed here: zarrfast reads the
peer's and the peer reads zarrfast's, values and fill value alike.  A generic unit with a
scale ('<M8[2generic]') or in the other byte order ('>M8' here), which NumPy allocates
without them (``np.empty(2, '>M8').dtype`` is '<M8'), is still refused, not misread."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import MetadataValidationError
from zarrfast.storage import MemoryStore

pytestmark = pytest.mark.interop

DTYPES = ["<M8", "<m8"]
COUNTS = [0, 1, -2, 100]


def test_peer_writes_zarrfast_reads(zarr_peer, tmp_path) -> None:
    zarr_peer.run("""
        import numpy as np, zarr
        for i, d in enumerate(ARGS[1]):
            data = np.array(ARGS[2], dtype=d[0] + "i8").view(d)
            a = zarr.create_array(f"{ARGS[0]}/{i}", data=data, chunks=2, zarr_format=2,
                                  compressors=None)
            a.resize((6,))
    """, [str(tmp_path), DTYPES, COUNTS])
    for i, d in enumerate(DTYPES):
        a = zarrfast.open_array(str(tmp_path / str(i)), mode="r")
        assert a.dtype == np.dtype(d) and np.datetime_data(a.dtype) == ("generic", 1)
        values = a[:]
        assert values.view(values.dtype.byteorder.replace("=", "") + "i8")[:4].tolist() \
            == COUNTS
        assert np.isnat(values[4:]).all() and np.isnat(a.fill_value)


def test_zarrfast_writes_peer_reads(zarr_peer, tmp_path) -> None:
    for i, d in enumerate(DTYPES):
        a = zarrfast.create_array(str(tmp_path / str(i)), shape=(6,), dtype=d, chunks=2,
                                  zarr_format=2, compressors=None, fill_value="NaT")
        a[:4] = np.array(COUNTS, dtype=d[0] + "i8").view(d)
    theirs = zarr_peer.run("""
        import numpy as np, zarr
        out = []
        for i in range(len(ARGS[1])):
            a = zarr.open_array(f"{ARGS[0]}/{i}", mode="r")
            v = a[:]
            out.append([a.metadata.dtype.to_json(zarr_format=2)["name"],
                        v.view(v.dtype.byteorder.replace("=", "") + "i8").tolist()])
        emit(out)
    """, [str(tmp_path), DTYPES])
    nat = -(2**63)
    assert theirs == [[d, [*COUNTS, nat, nat]] for d in DTYPES]


@pytest.mark.parametrize("dtype", ["<M8[2generic]", ">M8", ">m8"])
def test_a_scaled_or_swapped_generic_unit_is_refused(dtype) -> None:
    assert np.little_endian  # (">M8" is the other byte order)
    s = MemoryStore()
    s.set(".zarray", b'{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "'
                     + dtype.encode() + b'", "fill_value": null, "order": "C", '
                     b'"filters": null, "compressor": null}')
    with pytest.raises(MetadataValidationError, match="dtype"):
        zarrfast.open_array(s, mode="r")
    with pytest.raises(MetadataValidationError, match="generic-unit"):
        zarrfast.create_array({}, shape=(2,), dtype=dtype, zarr_format=2)
