"""``zarrfast.codecs.numcodecs`` classes as zarr-python 3.4's: ``codec._codec`` is
numcodecs' codec object of the configuration (zarr-python's tests and user code reach
for it, e.g. to check a codec's package is installed), and each class's docstring points
to numcodecs' class for the parameters.

zarr-python (the installed one) is the oracle for ``_codec``.
"""

from __future__ import annotations

import warnings

import pytest

from zarrfast.codecs import numcodecs as fnc

znc = pytest.importorskip("zarr.codecs.numcodecs")

CASES = {
    "Blosc": {"cname": "lz4", "clevel": 3, "shuffle": 1},
    "Zstd": {"level": 2},
    "GZip": {"level": 1},
    "LZ4": {},
    "BZ2": {"level": 9},
    "CRC32": {},
    "CRC32C": {},
    "Adler32": {},
    "Fletcher32": {},
    "JenkinsLookup3": {},
    "Delta": {"dtype": "<i4"},
    "BitRound": {"keepbits": 10},
    "PackBits": {},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_codec_is_numcodecs_codec_of_the_configuration(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (making one warns: not in the v3 specification)
        theirs = getattr(znc, name)(**CASES[name])
        ours = getattr(fnc, name)(**CASES[name])
    assert type(ours._codec) is type(theirs._codec)
    assert ours._codec.get_config() == theirs._codec.get_config()


@pytest.mark.parametrize("name", fnc.__all__)
def test_docstring_points_to_numcodecs_class(name: str) -> None:
    cls = getattr(fnc, name)
    assert f"See [numcodecs.{fnc._NUMCODECS_NAMES[cls.codec_name[10:]]}](" in cls.__doc__


def test_packbits_refuses_other_types_in_zarr_pythons_words() -> None:
    import zarrfast
    from zarrfast.errors import MetadataValidationError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        packbits = fnc.PackBits()
    with pytest.raises(MetadataValidationError, match="requires bool dtype.*not uint32"):
        zarrfast.create_array(store={}, shape=(8,), dtype="uint32", filters=[packbits])
