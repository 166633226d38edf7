"""``zarrfast.errors`` has every error and warning class of zarr-python 3.4's
``zarr.errors``, each one of the builtin classes zarr-python's is, so that ``except
IndexError`` (or ``except ValueError``) written for either library catches both.

zarr-python 3.4.2 (the peer) says which names and bases; zarrfast's classes may add
bases of their own (every zarrfast error is a ``ZarrfastError``).
"""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import zarrfast
from zarrfast import errors

_THEIRS = """
import builtins, zarr.errors as e
out = {}
for name in e.__all__:
    cls = getattr(e, name)
    out[name] = sorted({b.__name__ for b in cls.__mro__
                        if getattr(builtins, b.__name__, None) is b})
emit(out)
"""


def test_every_zarr_python_error_with_its_builtin_bases(zarr_peer) -> None:
    theirs = zarr_peer.run(_THEIRS)
    assert theirs  # (zarr-python 3.4.2 has 20 names there)
    missing = sorted(set(theirs) - set(errors.__all__))
    assert missing == []
    for name, bases in theirs.items():
        ours = getattr(errors, name)
        for base in bases:
            assert issubclass(ours, getattr(builtins, base)), (name, base)


@pytest.mark.parametrize("name", ["ArrayIndexError", "NegativeStepError",
                                  "VindexInvalidSelectionError", "BoundsCheckError"])
def test_selection_errors_are_index_errors_and_zarrfast_errors(name) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, IndexError) and issubclass(cls, errors.IndexingError)
    assert issubclass(cls, errors.ZarrfastError)


def test_data_type_validation_error_is_a_metadata_validation_error() -> None:
    assert issubclass(errors.DataTypeValidationError, errors.MetadataValidationError)
    assert issubclass(errors.DataTypeValidationError, ValueError)


def test_the_data_types_raise_the_class_of_zarrfast_errors() -> None:
    """``except zarrfast.errors.DataTypeValidationError`` (zarr-python's
    ``zarr.errors.DataTypeValidationError``) catches what the data types raise."""
    assert zarrfast.dtype.DataTypeValidationError is errors.DataTypeValidationError
    with pytest.raises(errors.DataTypeValidationError):
        zarrfast.dtype.Int32.from_native_dtype(np.dtype("float64"))
