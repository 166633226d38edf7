"""Review of 16225bd (``create(data=...)`` without ``dtype`` makes ``float64``, as
zarr-python 3.4; "data float64 cannot hold exactly (complex numbers, integers beyond
2**53) is refused", says its docstring and docs/migrating.md).

The refusal looks only at data whose NumPy type is an integer, float or complex one.
Data NumPy holds otherwise is converted silently: datetime64 / timedelta64 values become
float64 counts of their unit (at c42aab5 they were stored as datetime64), and integers
beyond int64 -- which NumPy keeps as Python ints in an object array, with any smaller
ones beside them -- are rounded (2**53 + 1 stored as 2**53).  zarr-python 3.4.2 converts
them all silently; zarrfast's promise is to refuse what float64 cannot hold.

Fixed by cd9ec13 (the proposal /tmp/prop_review/16225bd_create_data_exact.diff:
datetime64, timedelta64 and structured data refused; object data looked at element by
element): these were strict xfails, now plain tests."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError


def _kept_or_refused(tmp_path, data) -> None:
    """``create`` either refuses ``data`` or stores values that read back as ``data``."""
    data = np.asarray(data)
    try:
        a = zarrfast.create(shape=data.shape, data=data, store=str(tmp_path / "a.zarr"))
    except ZarrfastError:
        return
    got = zarrfast.open_array(str(tmp_path / "a.zarr"), mode="r")[...]
    assert got.dtype.kind == data.dtype.kind or data.dtype.kind == "O", (a.dtype, got)
    assert [str(v) for v in got.tolist()] == [str(v) for v in data.tolist()]


@pytest.mark.parametrize("data", [
    np.array(["2020-01-01T00:00:00.000000001", "1970-01-01"], dtype="M8[ns]"),
    np.array([1, 90061], dtype="m8[s]"),
], ids=["datetime64", "timedelta64"])
def test_create_data_of_times_is_not_turned_into_numbers(tmp_path, data) -> None:
    _kept_or_refused(tmp_path, data)


def test_create_data_of_large_python_ints_is_not_rounded(tmp_path) -> None:
    # (NumPy: an object array, as 2**70 fits no integer type; 2**53 + 1 no float64)
    data = [2**53 + 1, 2**70]
    assert np.asarray(data).dtype == object
    _kept_or_refused(tmp_path, data)


def test_create_data_of_int64_beyond_2_53_is_refused(tmp_path) -> None:
    """(what 16225bd does refuse, kept)"""
    with pytest.raises(ZarrfastError, match="float64"):
        zarrfast.create(shape=2, data=np.array([2**53 + 1, 1]), store={})
