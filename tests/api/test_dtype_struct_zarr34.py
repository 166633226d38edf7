"""zarrfast.dtype follows zarr-python 3.4.2 (the peer) where 3.4 moved on from 3.1:

- ``Struct``, the canonical structured data type (``"struct"``, fields as objects, Zarr v3
  fill values as ``{field: value}``), reading the legacy ``"structured"`` form too; the
  registry holds it under ``"struct"`` (``Structured`` stays, as in 3.4);
- a Zarr v2 ``{"name": ..., "object_codec_id": None}`` is a data type's only in NumPy's own
  spelling (``"<i2"``, ``"|b1"``), not in another one NumPy would also read (``"int16"``,
  ``"|i2"``, ``"datetime64"``).

zarr-python 3.1.6 (the main environment's) says ``Structured`` and accepts the other
spellings, so these compare with the peer."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast import dtype as fd

pytestmark = pytest.mark.interop

STRUCT_SPECS = [
    [["a", "<i4"], ["b", "S2"]],
    {"name": "structured", "configuration": {"fields": [["x", "float32"], ["y", "int8"]]}},
    {"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": "float32"},
                                                    {"name": "y", "data_type": "int8"}]}},
]

_PEER_STRUCT = """
import base64
import warnings

import numpy as np
import zarr.dtype as zd
out = {"registry": list(zd.data_type_registry.contents),
       "classes": [c.__name__ for c in zd.data_type_registry.contents.values()], "specs": []}
for spec in ARGS:
    native = spec if isinstance(spec, dict) else np.dtype([tuple(f) for f in spec])
    t = zd.parse_dtype(native, zarr_format=3)
    item = np.zeros((), dtype=t.to_native_dtype())[()]
    s3 = t.to_json_scalar(item, zarr_format=3)
    out["specs"].append({
        "repr": repr(t), "type": type(t).__name__, "v2": t.to_json(zarr_format=2),
        "v3": t.to_json(zarr_format=3), "native": str(t.to_native_dtype()),
        "s2": t.to_json_scalar(item, zarr_format=2), "s3": s3,
        "from_s3": repr(t.from_json_scalar(s3, zarr_format=3)),
        "from_b64": repr(t.from_json_scalar(t.to_json_scalar(item, zarr_format=2),
                                            zarr_format=3)),
        "from_partial": repr(t.from_json_scalar({}, zarr_format=3)),
        "legacy_v3": repr(type(t).from_json(
            {"name": "structured", "configuration": {"fields": [
                [f["name"], f["data_type"]] for f in t.to_json(zarr_format=3)[
                    "configuration"]["fields"]]}}, zarr_format=3)),
    })
emit(out)
"""


def _ours(spec):
    native = spec if isinstance(spec, dict) else np.dtype([tuple(f) for f in spec])
    t = fd.parse_dtype(native, zarr_format=3)
    item = np.zeros((), dtype=t.to_native_dtype())[()]
    s3 = t.to_json_scalar(item, zarr_format=3)
    return {
        "repr": repr(t), "type": type(t).__name__, "v2": t.to_json(zarr_format=2),
        "v3": t.to_json(zarr_format=3), "native": str(t.to_native_dtype()),
        "s2": t.to_json_scalar(item, zarr_format=2), "s3": s3,
        "from_s3": repr(t.from_json_scalar(s3, zarr_format=3)),
        "from_b64": repr(t.from_json_scalar(t.to_json_scalar(item, zarr_format=2),
                                            zarr_format=3)),
        "from_partial": repr(t.from_json_scalar({}, zarr_format=3)),
        "legacy_v3": repr(type(t).from_json(
            {"name": "structured", "configuration": {"fields": [
                [f["name"], f["data_type"]] for f in t.to_json(zarr_format=3)[
                    "configuration"]["fields"]]}}, zarr_format=3)),
    }


def _jsonable(x):
    import json
    return json.loads(json.dumps(x))


def test_struct_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run(_PEER_STRUCT, STRUCT_SPECS)
    assert list(fd.data_type_registry.contents) == theirs["registry"]
    assert [c.__name__ for c in fd.data_type_registry.contents.values()] == theirs["classes"]
    for spec, their in zip(STRUCT_SPECS, theirs["specs"], strict=True):
        assert _jsonable(_ours(spec)) == their, spec
    assert theirs["specs"][0]["type"] == "Struct"
    assert theirs["specs"][0]["s3"] == {"a": 0, "b": ""}


def test_struct_keeps_structured_and_refuses_what_is_not_a_struct() -> None:
    t = fd.Struct(fields=(("a", fd.Int8()),))
    assert isinstance(t, fd.Structured)
    with pytest.raises(fd.DataTypeValidationError, match="struct"):
        fd.Struct.from_json({"name": "struct", "configuration": {"fields": 3}}, zarr_format=3)
    with pytest.raises(fd.DataTypeValidationError, match=r"fields\[0\]"):
        fd.Struct.from_json({"name": "struct", "configuration": {"fields": [{"name": "a"}]}},
                            zarr_format=3)
    with pytest.raises(TypeError, match="Expected a dict or base64"):
        t.from_json_scalar(5, zarr_format=3)


def test_struct_arrays_write_and_read_as_zarr_python(zarr_peer, tmp_path) -> None:
    dt = np.dtype([("a", "<i4"), ("b", "<f8")])
    a = zarrfast.create_array(str(tmp_path / "s.zarr"), shape=(3,), dtype=dt,
                              fill_value=(1, 2.5))
    a[:2] = np.array([(5, 0.5), (6, 1.5)], dtype=dt)
    assert type(a.metadata.data_type) is fd.Struct
    theirs = zarr_peer.run("""
        import zarr
        z = zarr.open_array(ARGS, mode="r")
        emit([type(z.metadata.data_type).__name__, z[:].tolist(),
              z.metadata.to_dict()["data_type"]])
    """, str(tmp_path / "s.zarr"))
    assert theirs[0] == "Struct"
    assert theirs[1] == [[5, 0.5], [6, 1.5], [1, 2.5]]
    assert theirs[2] == _jsonable(a.metadata.data_type.to_json(zarr_format=3))


V2_NAMES = ["<i2", ">i2", "|i2", "int16", "i2", "|i1", "<i1", "int8", "|b1", "bool", "?",
            "<f4", "|f4", "float32", "<c8", "complex64", "<M8[ns]", "<M8", ">m8",
            "datetime64", "timedelta64", "|S3", "<U2", "|V4", "|O", "<M8[2generic]",
            ">m8[7generic]", "<M8[1generic]"]


def test_v2_json_spellings_as_zarr_python(zarr_peer) -> None:
    classes = [c.__name__ for c in fd.data_type_registry.contents.values()]
    theirs = zarr_peer.run("""
        import zarr.dtype as zd
        out = []
        for cls in zd.data_type_registry.contents.values():
            for name in ARGS:
                try:
                    out.append(repr(cls.from_json({"name": name, "object_codec_id": None},
                                                  zarr_format=2)))
                except Exception:
                    out.append(None)
        emit(out)
    """, V2_NAMES)
    ours = []
    for cls in (getattr(fd, n) for n in classes):
        for name in V2_NAMES:
            try:
                ours.append(repr(cls.from_json({"name": name, "object_codec_id": None},
                                               zarr_format=2)))
            except fd.DataTypeValidationError:
                ours.append(None)
    assert ours == theirs
    assert theirs.count(None) < len(theirs) - 10  # (some spellings are taken)


BAD = [("DateTime64", {"unit": "invalid"}), ("TimeDelta64", {"scale_factor": 0}),
       ("DateTime64", {"scale_factor": 2**31}), ("RawBytes", {"length": 0}),
       ("NullTerminatedBytes", {"length": 0}), ("FixedLengthUTF32", {"length": 0}),
       ("Struct", {"fields": ()})]
BAD_NATIVE = [[[["title", "f0"], "<i4"], ["g", "<f8"]], [["f0", "<i4", [2]]],
              [["a", [["b", "<i4", [2]]]]]]


def _native(spec):
    return np.dtype([(tuple(f[0]) if isinstance(f[0], list) else f[0],
                      _native(f[1]) if isinstance(f[1], list) else f[1], *f[2:])
                     for f in spec])


def test_refusals_say_what_zarr_python_says(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import numpy as np
        import zarr.dtype as zd
        def native(spec):
            return np.dtype([(tuple(f[0]) if isinstance(f[0], list) else f[0],
                              native(f[1]) if isinstance(f[1], list) else f[1], *f[2:])
                             for f in spec])
        out = []
        for name, kw in ARGS[0]:
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
            try:
                getattr(zd, name)(**kw)
                out.append(None)
            except ValueError as e:
                out.append(str(e))
        for spec in ARGS[1]:
            try:
                zd.Struct.from_native_dtype(native(spec))
                out.append(None)
            except ValueError as e:
                out.append(str(e).split(": ", 1)[1].split(". ")[0])
        emit(out)
    """, [BAD, BAD_NATIVE])
    assert None not in theirs
    ours = []
    for name, kw in BAD:
        with pytest.raises(fd.DataTypeValidationError) as e:
            getattr(fd, name)(**kw)
        ours.append(str(e.value))
    for spec in BAD_NATIVE:
        with pytest.raises(zarrfast.errors.UnsupportedDataTypeError) as e:
            fd.Struct.from_native_dtype(_native(spec))
        with pytest.raises(zarrfast.errors.UnsupportedDataTypeError):
            fd.parse_dtype(_native(spec), zarr_format=2)
        ours.append(str(e.value))
    for mine, their in zip(ours, theirs, strict=True):
        assert their in mine


def test_item_size_and_multi_byte_fields_as_zarr_python(zarr_peer) -> None:
    specs = ["int8", "int32", ">f8", "bool", "U3", "S5", "V7", "M8[s]", "string", "bytes",
             [["a", "u1"], ["b", "u1"]], [["a", "u1"], ["b", "<i2"]]]
    theirs = zarr_peer.run("""
        import numpy as np
        import zarr.dtype as zd
        out = []
        for spec in ARGS:
            native = np.dtype([tuple(f) for f in spec]) if isinstance(spec, list) else (
                spec if spec in ("string", "bytes") else np.dtype(spec))
            t = zd.parse_dtype(native if spec != "bytes" else "variable_length_bytes",
                               zarr_format=3)
            out.append([getattr(t, "item_size", None),
                        t.has_multi_byte_fields() if hasattr(t, "fields") else None])
        emit(out)
    """, specs)
    ours = []
    for spec in specs:
        native = np.dtype([tuple(f) for f in spec]) if isinstance(spec, list) else (
            spec if spec in ("string", "bytes") else np.dtype(spec))
        t = fd.parse_dtype(native if spec != "bytes" else "variable_length_bytes",
                           zarr_format=3)
        ours.append([getattr(t, "item_size", None),
                     t.has_multi_byte_fields() if hasattr(t, "fields") else None])
    assert ours == theirs
    assert theirs[-2:] == [[2, False], [3, True]]


def test_unstable_specification_warnings_as_zarr_python(zarr_peer) -> None:
    names = ["NullTerminatedBytes", "RawBytes", "VariableLengthBytes", "Structured",
             "Struct", "FixedLengthUTF32", "Int8", "DateTime64"]
    theirs = zarr_peer.run("""
        import warnings
        import zarr.dtype as zd
        from zarr.errors import UnstableSpecificationWarning
        out = []
        for name in ARGS:
            cls = getattr(zd, name)
            t = (cls(length=3) if "Bytes" in name and name != "VariableLengthBytes" or
                 name == "FixedLengthUTF32" else
                 cls(fields=(("a", zd.Int8()),)) if name.startswith("Struct") else cls())
            got = []
            for fmt in (2, 3):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    t.to_json(zarr_format=fmt)
                got.append(any(issubclass(x.category, UnstableSpecificationWarning)
                               for x in w))
            out.append(got)
        emit(out)
    """, names)
    ours = []
    for name in names:
        cls = getattr(fd, name)
        t = (cls(length=3) if "Bytes" in name and name != "VariableLengthBytes" or
             name == "FixedLengthUTF32" else
             cls(fields=(("a", fd.Int8()),)) if name.startswith("Struct") else cls())
        got = []
        for fmt in (2, 3):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                t.to_json(zarr_format=fmt)
            got.append(any(issubclass(x.category, zarrfast.errors.UnstableSpecificationWarning)
                           for x in w))
        ours.append(got)
    assert ours == theirs
    assert theirs[0] == [False, True] and theirs[4] == [False, False]


def test_base64_struct_scalars_byte_order_as_zarr_python(zarr_peer) -> None:
    """Zarr v3 metadata has no byte order: a base64 structured fill value is little-endian
    whatever the fields' byte order (Zarr v2: the dtype's own order)."""
    theirs = zarr_peer.run("""
        import zarr.dtype as zd
        out = []
        for e in ("little", "big"):
            f = (("a", zd.Int32(endianness=e)), ("b", zd.Float64(endianness=e)))
            for fmt in (2, 3):
                t = zd.Structured(fields=f)
                js = t.to_json_scalar((1, 1.0), zarr_format=fmt)
                back = t.from_json_scalar(js, zarr_format=fmt)
                back_struct = zd.Struct(fields=f).from_json_scalar(js, zarr_format=fmt)
                out.append([js, [int(back["a"]), float(back["b"])],
                            [int(back_struct["a"]), float(back_struct["b"])]])
        emit(out)
    """)
    ours = []
    for e in ("little", "big"):
        f = (("a", fd.Int32(endianness=e)), ("b", fd.Float64(endianness=e)))
        for fmt in (2, 3):
            t = fd.Structured(fields=f)
            js = t.to_json_scalar((1, 1.0), zarr_format=fmt)
            back = t.from_json_scalar(js, zarr_format=fmt)
            back_struct = fd.Struct(fields=f).from_json_scalar(js, zarr_format=fmt)
            ours.append([js, [int(back["a"]), float(back["b"])],
                         [int(back_struct["a"]), float(back_struct["b"])]])
    assert ours == theirs
    assert theirs[3][0] == "AQAAAAAAAAAAAPA/"  # (big-endian fields, Zarr v3)


def test_the_microsecond_unit_is_spelled_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr.dtype as zd
        emit([[repr(cls(unit="\\u03bcs", scale_factor=3)),
               cls(unit="\\u03bcs", scale_factor=3).to_json(zarr_format=3)]
              for cls in (zd.DateTime64, zd.TimeDelta64)])
    """)
    ours = [[repr(cls(unit="\u03bcs", scale_factor=3)),
             cls(unit="\u03bcs", scale_factor=3).to_json(zarr_format=3)]
            for cls in (fd.DateTime64, fd.TimeDelta64)]
    assert ours == theirs
    assert "unit='us'" in theirs[0][0]


def test_a_scaled_generic_unit_as_zarr_python(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import numpy as np
        import zarr.dtype as zd
        out = []
        for cls in (zd.DateTime64, zd.TimeDelta64):
            t = cls(unit="generic", scale_factor=2, endianness="big")
            out.append([t.to_json(zarr_format=2), list(np.datetime_data(t.to_native_dtype())),
                        repr(cls.from_native_dtype(t.to_native_dtype()))])
        emit(out)
    """)
    ours = []
    for cls in (fd.DateTime64, fd.TimeDelta64):
        t = cls(unit="generic", scale_factor=2, endianness="big")
        ours.append([t.to_json(zarr_format=2), list(np.datetime_data(t.to_native_dtype())),
                     repr(cls.from_native_dtype(t.to_native_dtype()))])
    assert ours == theirs
    assert theirs[0][0]["name"] == ">M8[2generic]"


BAD_V2_STRUCTS = [{"name": [["a", "|i9"]], "object_codec_id": None},
                  {"name": [["a"]], "object_codec_id": None},
                  {"name": [3], "object_codec_id": None}]


def test_bad_v2_struct_json_is_a_data_type_validation_error(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr.dtype as zd
        out = []
        for d in ARGS:
            try:
                zd.Struct.from_json(d, zarr_format=2)
                out.append(None)
            except zd.DataTypeValidationError:
                out.append(True)
            except Exception as e:
                out.append(type(e).__name__)
        emit(out)
    """, BAD_V2_STRUCTS)
    assert theirs == [True, True, True]
    for d in BAD_V2_STRUCTS:
        with pytest.raises(fd.DataTypeValidationError, match="invalid Zarr v2 JSON for Struct"):
            fd.Struct.from_json(d, zarr_format=2)
