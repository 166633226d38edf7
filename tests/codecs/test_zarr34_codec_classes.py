"""zarr-python 3.4's ``ScaleOffset`` and ``CastValue`` classes (``zarr.codecs``,
``zarr.codecs.scale_offset``, ``zarr.codecs.cast_value``): their constructors, reprs,
``to_dict``/``from_dict`` and refusals as zarr-python 3.4.2's, and arrays made with them
read back by zarr-python."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import CastValue, ScaleOffset

SCALE_OFFSET = [{}, {"offset": 5}, {"scale": 0.1}, {"offset": 5, "scale": 0.1},
                {"offset": "NaN"}, {"offset": 0, "scale": 1}]
CAST_VALUE = [{"data_type": "uint8"}, {"data_type": "int16", "rounding": "towards-zero"},
              {"data_type": "uint8", "out_of_range": "clamp"},
              {"data_type": "float32", "scalar_map": {"encode": [["NaN", 0]]}}]


def test_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        from zarr.codecs import CastValue, ScaleOffset
        so, cv = ARGS
        out = [[repr(ScaleOffset(**k)), ScaleOffset(**k).to_dict(),
                repr(ScaleOffset.from_dict(ScaleOffset(**k).to_dict()))] for k in so]
        out += [[repr(CastValue(**k)), CastValue(**k).to_dict(),
                 repr(CastValue.from_dict(CastValue(**k).to_dict()))] for k in cv]
        refused = []
        for make in (lambda: ScaleOffset(offset=[1]), lambda: ScaleOffset(scale=None),
                     lambda: CastValue(data_type="complex64")):
            try:
                make()
                refused.append(None)
            except (TypeError, ValueError) as e:
                refused.append([type(e).__name__, str(e)])
        emit([out, refused])
    """, [SCALE_OFFSET, CAST_VALUE])
    ours = [[repr(ScaleOffset(**k)), ScaleOffset(**k).to_dict(),
             repr(ScaleOffset.from_dict(ScaleOffset(**k).to_dict()))] for k in SCALE_OFFSET]
    ours += [[repr(CastValue(**k)), CastValue(**k).to_dict(),
              repr(CastValue.from_dict(CastValue(**k).to_dict()))] for k in CAST_VALUE]
    # (JSON turns the tuples of zarr-python's scalar_map into lists)
    assert ours == theirs[0]
    refused = []
    for make in (lambda: ScaleOffset(offset=[1]), lambda: ScaleOffset(scale=None),
                 lambda: CastValue(data_type="complex64")):
        with pytest.raises((TypeError, ValueError)) as info:
            make()
        refused.append([type(info.value).__name__, str(info.value)])
    assert refused == theirs[1]


def test_modules_as_zarr_python() -> None:
    from zarrfast.codecs.cast_value import CastValue as C
    from zarrfast.codecs.scale_offset import ScaleOffset as S

    assert (C, S) == (CastValue, ScaleOffset)


def test_arrays_with_them_read_back_in_zarr_python(zarr_peer, tmp_path) -> None:
    pytest.importorskip("cast_value_rs")
    a = zarrfast.create_array(tmp_path / "a.zarr", shape=(4,), dtype="float64",
                              filters=[ScaleOffset(offset=10, scale=100),
                                       CastValue(data_type="int32", out_of_range="clamp")],
                              compressors=None)
    a[:] = [10.0, 10.5, 11.25, 12.0]
    theirs = zarr_peer.run("""
        import zarr
        a = zarr.open_array(ARGS, mode="r")
        emit([a[:].tolist(), [c.to_dict() for c in a.filters]])
    """, str(tmp_path / "a.zarr"))
    assert theirs == [[10.0, 10.5, 11.25, 12.0], [f.to_dict() for f in a.filters]]
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "a.zarr")[:], a[:])


def test_refusals_in_zarr_pythons_words() -> None:
    """The phrases zarr-python 3.4's tests match, within zarrfast's messages."""
    from zarrfast.codecs import BytesCodec
    from zarrfast.errors import MetadataValidationError

    with pytest.raises(MetadataValidationError, match=r"endian must be one of \['little', "
                                                      r"'big'\]\. Got 'north'"):
        BytesCodec(endian="north")
    with pytest.raises(ValueError, match="scale must be non-zero"):
        zarrfast.create_array({}, shape=(2,), dtype="f8", filters=[ScaleOffset(scale=0)])
    with pytest.raises(ValueError, match="at least one array must be provided"):
        zarrfast.save_group({})
