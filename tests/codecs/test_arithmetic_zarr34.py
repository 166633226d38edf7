"""``scale_offset`` and ``cast_value`` refuse what zarr-python 3.4.2 (the peer) refuses, in
its words (the phrases its own tests match, then zarrfast's reason), and take numbers
written as strings (``scale="2"``) as it does."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import CastValue, ScaleOffset

#: (dtype, codec kind, its keywords, the phrase zarr-python's message has; None: accepted)
CASES = [
    ("complex128", "so", {"offset": 1, "scale": 2}, "only supports integer and floating-point"),
    ("int32", "so", {"offset": 0, "scale": 0.5}, "scale value 0.5 is not representable"),
    ("int16", "so", {"offset": "NaN", "scale": 1}, "offset value 'NaN' is not representable"),
    ("int32", "so", {"offset": 0, "scale": 0}, "scale must be non-zero"),
    ("int32", "so", {"offset": 0, "scale": "0"}, "scale must be non-zero"),
    ("float64", "so", {"offset": 0, "scale": 0.0}, "scale must be non-zero"),
    ("float64", "so", {"offset": 0, "scale": "0.0"}, "scale must be non-zero"),
    ("float64", "so", {"offset": 0, "scale": "0x0000000000000000"}, "scale must be non-zero"),
    ("int32", "so", {"offset": "1", "scale": "2"}, None),
    ("float64", "so", {"offset": "0.5", "scale": "4"}, None),
    ("complex128", "cv", {"data_type": "float64"}, "only supports integer and floating-point"),
    ("int32", "cv", {"data_type": "float64", "out_of_range": "wrap"}, "only valid for integer"),
    ("int32", "cv", {"data_type": "int8", "scalar_map": {"encode": [("NaN", 0)]}},
     "not representable in dtype int32"),
    ("int32", "cv", {"data_type": "float64", "scalar_map": {"decode": [(0, "NaN")]}},
     "not representable in dtype int32"),
    ("float64", "cv", {"data_type": "int8", "scalar_map": {"encode": [("NaN", 999)]}},
     "not representable in dtype int8"),
    ("float64", "cv", {"data_type": "int8", "scalar_map": {"encode": [("NaN", 1.5)]}},
     "not representable in dtype int8"),
]

_PEER = """
import numpy as np, zarr
from zarr.codecs import CastValue, ScaleOffset
out = []
for dtype, kind, kwargs, _ in ARGS:
    codec = ScaleOffset(**kwargs) if kind == "so" else CastValue(**kwargs)
    try:
        arr = zarr.create_array(store={}, shape=(4,), dtype=dtype, chunks=(4,),
                                filters=[codec], compressors=None, fill_value=0)
        arr[:] = np.arange(4) * 2 + 1
        out.append(["ok", arr[:].tolist()])
    except ValueError as e:
        out.append(["ValueError", str(e)])
emit(out)
"""


def _ours(dtype, kind, kwargs):
    codec = ScaleOffset(**kwargs) if kind == "so" else CastValue(**kwargs)
    try:
        arr = zarrfast.create_array(store={}, shape=(4,), dtype=dtype, chunks=(4,),
                                    filters=[codec], compressors=None, fill_value=0)
        arr[:] = np.arange(4) * 2 + 1
        return ["ok", arr[:].tolist()]
    except ValueError as e:
        return ["ValueError", str(e)]


def test_refusals_and_numbers_as_strings_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run(_PEER, CASES)
    for case, their in zip(CASES, theirs, strict=True):
        ours = _ours(*case[:3])
        phrase = case[3]
        assert ours[0] == their[0], (case, ours, their)
        if phrase is None:
            assert ours == their, case
        else:
            assert phrase in their[1], (case, their)
            assert phrase in ours[1], (case, ours)


@pytest.mark.parametrize("scale", ["0", "0.0", 0])
def test_zero_scale_named_as_given(scale) -> None:
    with pytest.raises(ValueError, match=f"scale must be non-zero, got {scale!r}"):
        zarrfast.create_array(store={}, shape=(4,), dtype="float64", compressors=None,
                              filters=[ScaleOffset(offset=0, scale=scale)])


#: (dtype, offset, scale, values written) whose encoding leaves the data type
OUT_OF_RANGE = [("int8", 0, 100, [0, 1, 2]), ("uint8", 10, 1, [10, 5, 20]),
                ("uint64", 100, 1, [100, 50, 200])]


def test_encoded_value_out_of_range_in_zarr_pythons_words(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import numpy as np, zarr
        from zarr.codecs import ScaleOffset
        out = []
        for dtype, offset, scale, values in ARGS:
            arr = zarr.create_array(store={}, shape=(3,), dtype=dtype, chunks=(3,),
                                    filters=[ScaleOffset(offset=offset, scale=scale)],
                                    compressors=None, fill_value=offset)
            try:
                arr[:] = np.array(values, dtype=dtype)
                out.append(None)
            except ValueError as e:
                out.append(str(e))
        emit(out)
    """, OUT_OF_RANGE)
    for (dtype, offset, scale, values), their in zip(OUT_OF_RANGE, theirs, strict=True):
        phrase = f"scale_offset produced a value outside the range of dtype {dtype}"
        assert their is not None and phrase in their
        arr = zarrfast.create_array(store={}, shape=(3,), dtype=dtype, chunks=(3,),
                                    filters=[ScaleOffset(offset=offset, scale=scale)],
                                    compressors=None, fill_value=offset)
        with pytest.raises(ValueError, match=phrase):
            arr[:] = np.array(values, dtype=dtype)
        assert arr.store.get("c/0") is None  # (nothing written)


def test_stored_integer_not_a_multiple_of_the_scale() -> None:
    arr = zarrfast.create_array(store={}, shape=(3,), dtype="int8", chunks=(3,),
                                filters=[ScaleOffset(offset=0, scale=2)], compressors=None,
                                fill_value=0)
    arr.store.set("c/0", np.array([2, 3, 4], dtype="int8").tobytes())
    with pytest.raises(ValueError, match=r"non-zero remainder when dividing by scale=2"):
        arr[:]


def test_compute_encoded_size_as_zarr_python(zarr_peer) -> None:
    """``compute_encoded_size(n, chunk_spec)`` of ``CastValue`` and ``ScaleOffset``, with
    zarr-python's ``ArraySpec`` (the installed zarr-python's here), as zarr-python 3.4.2."""
    script = """
        from zarr.core.array_spec import ArrayConfig, ArraySpec
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.dtype import get_data_type_from_json
        out = []
        for source, target, n in ARGS:
            spec = ArraySpec(shape=(10,), dtype=get_data_type_from_json(source, zarr_format=3),
                             fill_value=0, config=ArrayConfig(order="C", write_empty_chunks=True),
                             prototype=default_buffer_prototype())
            out.append([CastValue(data_type=target).compute_encoded_size(n, spec),
                        ScaleOffset().compute_encoded_size(n, spec)])
        emit(out)
    """
    cases = [["float64", "int16", 80], ["int8", "float32", 10], ["uint16", "uint8", 6]]
    theirs = zarr_peer.run("from zarr.codecs import CastValue, ScaleOffset\n"
                           + textwrap.dedent(script), cases)
    spec_mod = pytest.importorskip("zarr.core.array_spec")
    buffer_mod = pytest.importorskip("zarr.core.buffer")
    dtype_mod = pytest.importorskip("zarr.core.dtype")
    ours = []
    for source, target, n in cases:
        spec = spec_mod.ArraySpec(
            shape=(10,), dtype=dtype_mod.get_data_type_from_json(source, zarr_format=3),
            fill_value=0, config=spec_mod.ArrayConfig(order="C", write_empty_chunks=True),
            prototype=buffer_mod.default_buffer_prototype())
        ours.append([CastValue(data_type=target).compute_encoded_size(n, spec),
                     ScaleOffset().compute_encoded_size(n, spec)])
    assert ours == theirs == [[20, 80], [40, 10], [3, 6]]
    utf8 = spec_mod.ArraySpec(
        shape=(10,), dtype=dtype_mod.VariableLengthUTF8(), fill_value="",
        config=spec_mod.ArrayConfig(order="C", write_empty_chunks=True),
        prototype=buffer_mod.default_buffer_prototype())
    with pytest.raises(ValueError, match="fixed-size integer and floating-point data types"):
        CastValue(data_type="uint8").compute_encoded_size(100, utf8)


def test_cast_value_takes_zarr_pythons_data_type_objects() -> None:
    dtype_mod = pytest.importorskip("zarr.core.dtype")
    codec = CastValue(data_type=dtype_mod.UInt8())
    assert codec.dtype.to_native_dtype() == np.dtype("uint8")
    assert codec.to_dict() == CastValue(data_type="uint8").to_dict()


def test_scale_offset_compute_encoded_size_by_keyword() -> None:
    codec = ScaleOffset(offset=0, scale=1)
    assert codec.compute_encoded_size(input_byte_length=100, _chunk_spec=None) == 100
