"""``zarrfast.create(data=...)`` follows zarr-python 3.4.2 (the peer): the data sets neither
the shape nor the data type (``float64`` unless ``dtype`` is given); values ``float64``
cannot hold exactly are refused rather than rounded (docs/migrating.md)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("kwargs", [
    {"data": [0, 1, 2]},
    {"data": "int8"},
    {"data": "int8", "dtype": "int16"},
    {"data": "bool"},
    {"data": "float32", "zarr_format": 2},
], ids=repr)
def test_the_array_dtype_as_zarr_python(zarr_peer, kwargs) -> None:
    theirs = zarr_peer.run("""
        import numpy as np, zarr
        kw = dict(ARGS)
        if isinstance(kw["data"], str):
            kw["data"] = np.arange(3).astype(kw["data"])
        z = zarr.create(shape=(3,), chunks=(2,), store={}, **kw)
        emit([str(z.dtype), z[:].tolist()])
    """, kwargs)
    kw = dict(kwargs)
    if isinstance(kw["data"], str):
        kw["data"] = np.arange(3).astype(kw["data"])
    z = zarrfast.create(shape=(3,), chunks=(2,), store={}, **kw)
    assert [str(z.dtype), z[:].tolist()] == theirs
    zs = zarrfast.api.asynchronous.create(shape=(3,), chunks=(2,), store={}, **kw)
    import asyncio
    za = asyncio.run(zs)
    assert str(za.dtype) == theirs[0]


@pytest.mark.parametrize("data", [np.array([2**53 + 1, 0]), np.array([1 + 1j, 0]),
                                  np.array([2**64 - 1, 0], dtype="u8")], ids=str)
def test_values_float64_cannot_hold_are_refused(data) -> None:
    with pytest.raises(ZarrfastError, match=rf"dtype {data.dtype} without dtype.*dtype="):
        zarrfast.create(shape=(2,), store={}, data=data)
    z = zarrfast.create(shape=(2,), store={}, data=data, dtype=data.dtype)
    assert z[:].tolist() == data.tolist()


def test_int64_data_float64_holds_is_written() -> None:
    z = zarrfast.create(shape=(3,), store={}, data=np.array([-(2**53), 0, 2**53]))
    assert z.dtype == np.float64
    assert z[:].tolist() == [-(2.0**53), 0.0, 2.0**53]


@pytest.mark.parametrize("data", [
    np.array(["2020-01-01", "1970-01-01"], dtype="M8[ns]"), np.array([1, 2], dtype="m8[s]"),
    np.array([(1, 2.0)], dtype=[("a", "i1"), ("b", "f4")]), [2**53 + 1, 2**70],
    np.array([1, 2j], dtype=object)], ids=["datetime64", "timedelta64", "record",
                                           "big-python-ints", "complex-object"])
def test_times_records_and_inexact_python_numbers_are_refused(data) -> None:
    # (tests/review53/test_create_data_exact.py found them converted to float64 silently)
    with pytest.raises(ZarrfastError, match="without dtype"):
        zarrfast.create(shape=np.shape(data), store={}, data=data)


def test_python_numbers_float64_holds_are_written() -> None:
    z = zarrfast.create(shape=(3,), store={}, data=np.array([1, 2.5, True], dtype=object))
    assert z.dtype == np.float64 and z[:].tolist() == [1.0, 2.5, 1.0]
