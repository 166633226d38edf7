"""zarrfast.dtype: zarr-python's data-type classes, JSON, scalars and registry, compared with
zarr-python itself; a data type of one's own; and zarr-python's custom_dtype example."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import zarr
import zarr.dtype as zd

import zarrfast
from zarrfast import dtype as fd
from zarrfast.errors import FillValueError, UnsupportedDataTypeError

pytestmark = pytest.mark.interop

SPECS = ["i1", ">i4", "<u2", "u8", "f2", ">f8", "c8", ">c16", "?", "U5", ">U2", "S3", "V4",
         "M8[10s]", ">m8[ns]", "M8", str, "bytes", "string",
         "int32", "float64", "uint8", "bool", "variable_length_bytes",
         {"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 5}},
         {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}},
         {"name": "raw_bytes", "configuration": {"length_bytes": 2}}]
# (structured data types: zarrfast follows zarr-python 3.4's Struct, which 3.1 has not;
# they are compared with zarr-python 3.4.2 in test_dtype_struct_zarr34.py)


def _theirs(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's "no v3 specification" warnings
        return call()


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_parse_dtype_as_zarr_python(spec) -> None:
    theirs = _theirs(lambda: zd.parse_dtype(spec, zarr_format=3))
    ours = fd.parse_dtype(spec, zarr_format=3)
    assert repr(ours) == repr(theirs)
    assert type(ours).__name__ == type(theirs).__name__
    assert ours.to_native_dtype() == theirs.to_native_dtype()
    for fmt in (2, 3):
        js = ours.to_json(zarr_format=fmt)
        assert js == _theirs(lambda fmt=fmt: theirs.to_json(zarr_format=fmt))
        back = type(ours).from_json(js, zarr_format=fmt)
        assert back.to_json(zarr_format=fmt) == js
        assert fd.data_type_registry.match_json(js, zarr_format=fmt).to_json(
            zarr_format=fmt) == js
    if ours.to_native_dtype() != np.dtype(object):
        assert type(ours).from_native_dtype(ours.to_native_dtype()) == ours


def test_the_classes_and_registry_names_match_zarr_python() -> None:
    # (3.4 registers Struct under "struct" where 3.1 had Structured under "structured":
    # compared with 3.4.2 in test_dtype_struct_zarr34.py)
    renamed = {"structured": "struct", "Structured": "Struct"}
    assert list(fd.data_type_registry.contents) == [
        renamed.get(n, n) for n in zd.data_type_registry.contents]
    assert [c.__name__ for c in fd.data_type_registry.contents.values()] == [
        renamed.get(c.__name__, c.__name__) for c in zd.data_type_registry.contents.values()]
    assert set(zd.__all__) - set(fd.__all__) <= {
        n for n in zd.__all__ if n.endswith(("JSON_V2", "JSON_V3"))}


SCALARS = [
    (">i4", 7), ("u1", 255), ("i8", -(2**62)), ("f4", 1.5), ("f8", float("nan")),
    ("f8", float("-inf")), ("f2", 0.25), ("c8", 1 + 2j), ("?", True), ("U3", "abc"),
    ("S2", b"xy"), ("M8[s]", np.datetime64("2020-01-01T00:00:01", "s")),
    ("m8[ms]", np.timedelta64(5, "ms")), ("V2", b"\x01\x02"), (str, "hello"),
    ("bytes", b"\x00\xff"),
]  # (a structured one: in test_dtype_struct_zarr34.py, against zarr-python 3.4.2)


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):  # JSON arrays
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, np.generic) and isinstance(b, np.generic) and a.dtype.kind in "fc":
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    return a == b if not isinstance(a, np.generic) else bool(np.all(a == b))


@pytest.mark.parametrize(("spec", "value"), SCALARS, ids=repr)
@pytest.mark.parametrize("fmt", [2, 3])
def test_scalars_as_zarr_python(spec, value, fmt) -> None:
    theirs = _theirs(lambda: zd.parse_dtype(spec, zarr_format=3))
    ours = fd.parse_dtype(spec, zarr_format=3)
    js = ours.to_json_scalar(value, zarr_format=fmt)
    their_js = _theirs(lambda: theirs.to_json_scalar(value, zarr_format=fmt))
    assert _same(js, their_js), (js, their_js)
    got = ours.from_json_scalar(js, zarr_format=fmt)
    assert _same(got, _theirs(lambda: theirs.from_json_scalar(their_js, zarr_format=fmt)))
    assert _same(ours.cast_scalar(value), _theirs(lambda: theirs.cast_scalar(value)))
    default = ours.default_scalar()
    their_default = _theirs(theirs.default_scalar)
    if ours.to_native_dtype().fields is None:
        assert _same(default, their_default) or (
            np.isnat(default) and np.isnat(their_default))


def test_bad_inputs_say_what() -> None:
    with pytest.raises(fd.DataTypeValidationError, match="endianness"):
        fd.Int32(endianness="middle")
    with pytest.raises(fd.DataTypeValidationError, match="length"):
        fd.FixedLengthUTF32(length=0)
    with pytest.raises(fd.DataTypeValidationError, match="unit"):
        fd.DateTime64(unit="fortnight")
    with pytest.raises(fd.DataTypeValidationError, match="int64"):
        fd.Int32.from_json("int64", zarr_format=3)
    with pytest.raises(fd.DataTypeValidationError, match="Int32"):
        fd.Int32.from_native_dtype(np.dtype("f4"))
    with pytest.raises(UnsupportedDataTypeError, match="object"):
        fd.parse_dtype("O", zarr_format=3)
    with pytest.raises(UnsupportedDataTypeError, match="'no-such-type'"):
        fd.parse_dtype("no-such-type", zarr_format=3)
    with pytest.raises(ValueError, match="zarr_format"):
        fd.Int8().to_json(zarr_format=4)
    with pytest.raises(TypeError, match="Int8"):
        fd.Int8().cast_scalar("nope")
    with pytest.raises(KeyError, match="missing"):
        fd.data_type_registry.unregister("missing")


def test_zdtype_instances_as_array_dtypes() -> None:
    for z, data in ((fd.Int16(endianness="big"), [1, -2, 3]),
                    (fd.VariableLengthBytes(), [b"a", b"", b"xyz"]),
                    (fd.DateTime64(unit="s", scale_factor=1),
                     np.array(["2020-01-01", "NaT", "1970-01-01"], dtype="M8[s]")),
                    (fd.FixedLengthUTF32(length=3), ["a", "bcd", ""])):
        a = zarrfast.create_array({}, shape=(3,), dtype=z, chunks=(2,))
        a[...] = np.asarray(data, dtype=z.to_native_dtype())
        expected = np.asarray(data, dtype=z.to_native_dtype())
        assert a[...].tolist() == expected.tolist() or np.array_equal(
            a[...], expected, equal_nan=False) or str(a[...]) == str(expected)
        assert a.metadata.to_dict()["data_type"] == z.to_json(zarr_format=3)


@pytest.mark.parametrize("z", [fd.Int32(endianness="big"), fd.VariableLengthUTF8(),
                               fd.VariableLengthBytes(), fd.DateTime64(unit="ns"),
                               fd.Structured(fields=(("a", fd.Int8()), ("b", fd.Float32())))],
                         ids=repr)
def test_zdtype_instances_in_v2_arrays_as_zarr_python(z) -> None:
    ours = zarrfast.create_array({}, shape=(3,), dtype=z, chunks=(2,), zarr_format=2)
    theirs = _theirs(lambda: zarr.create_array(
        {}, shape=(3,), dtype=zd.parse_dtype(z.to_json(zarr_format=2), zarr_format=2),
        chunks=(2,), zarr_format=2))
    mine, their = ours.metadata.to_dict(), theirs.metadata.to_dict()
    assert mine["dtype"] == their["dtype"]
    def ids(filters):
        return [f["id"] if isinstance(f, dict) else f.get_config()["id"] for f in filters or []]

    assert ids(mine["filters"]) == ids(their["filters"])


class Celsius(fd.ZDType):
    """A data type zarrfast does not know: int16 hundredths of a degree, named "celsius"."""

    _zarr_v3_name: ClassVar[str] = "celsius"
    dtype_cls = type(np.dtype("i2"))

    def __eq__(self, other):
        return type(other) is Celsius

    def __hash__(self):
        return 1

    @classmethod
    def from_native_dtype(cls, dtype):
        raise fd.DataTypeValidationError("celsius is never inferred from a NumPy dtype")

    def to_native_dtype(self):
        return np.dtype("<i2")

    @classmethod
    def _from_json_v3(cls, data):
        if data == "celsius":
            return cls()
        raise fd.DataTypeValidationError(f"not celsius: {data!r}")

    @classmethod
    def _from_json_v2(cls, data):
        raise fd.DataTypeValidationError("celsius has no v2 form")

    def to_json(self, zarr_format):
        return "celsius"

    def cast_scalar(self, data):
        if isinstance(data, np.int16):  # already a scalar of this type
            return data
        return np.int16(round(float(data) * 100))

    def default_scalar(self):
        return np.int16(-27315)

    def to_json_scalar(self, data, *, zarr_format):
        return f"{int(self.cast_scalar(data)) / 100:.2f}C"

    def from_json_scalar(self, data, *, zarr_format):
        if not isinstance(data, str) or not data.endswith("C"):
            raise TypeError(f"not a temperature: {data!r}")
        return self.cast_scalar(data[:-1])


@pytest.fixture
def celsius():
    fd.data_type_registry.register("celsius", Celsius)
    yield
    fd.data_type_registry.unregister("celsius")


def test_a_registered_data_type_makes_arrays(tmp_path, celsius) -> None:
    assert fd.data_type_registry.get("celsius") is Celsius
    assert fd.parse_dtype("celsius", zarr_format=3) == Celsius()
    a = zarrfast.create_array(tmp_path / "t.zarr", shape=(4,), chunks=(3,), dtype="celsius",
                              fill_value=12.5)
    a[:2] = [100, -4000]
    doc = json.loads((tmp_path / "t.zarr" / "zarr.json").read_text())
    assert doc["data_type"] == "celsius" and doc["fill_value"] == "12.50C"
    b = zarrfast.open_array(tmp_path / "t.zarr", mode="r")
    assert b[...].tolist() == [100, -4000, 1250, 1250]  # the fill value, cast by the type
    assert b.fill_value == 1250
    c = zarrfast.create_array({}, shape=(2,), chunks=(2,), dtype=Celsius())
    assert c.fill_value == -27315  # the type's default scalar
    with pytest.raises(FillValueError, match="celsius"):
        zarrfast.create_array({}, shape=(2,), chunks=(2,), dtype="celsius", fill_value="hot")


def test_an_unregistered_name_is_refused_after_unregister(tmp_path) -> None:
    fd.data_type_registry.register("celsius", Celsius)
    zarrfast.create_array(tmp_path / "t.zarr", shape=(2,), chunks=(2,), dtype="celsius")
    fd.data_type_registry.unregister("celsius")
    with pytest.raises(UnsupportedDataTypeError, match="'celsius'"):
        zarrfast.open_array(tmp_path / "t.zarr", mode="r")[...]


EXAMPLE = "/work/judge/examples/custom_dtype/custom_dtype.py"

RUN_WITH_ZARRFAST = """
import runpy, sys, pathlib
import zarrfast, zarrfast.dtype
sys.modules["zarr"] = zarrfast
for name in ("zarr.core", ):
    sys.modules[name] = zarrfast
for name in ("zarr.core.dtype", "zarr.core.dtype.common", "zarr.core.common"):
    sys.modules[name] = zarrfast.dtype
ns = runpy.run_path(sys.argv[1], run_name="example")
for fmt, where in ((2, sys.argv[2]), (3, sys.argv[3])):
    ns["test_custom_dtype"](pathlib.Path(where), fmt)
"""

READ_WITH_ZARR = """
import runpy, sys, json
import zarr
runpy.run_path(sys.argv[1], run_name="example")  # registers Int2 with zarr-python
print(json.dumps([zarr.open_array(p, mode="r")[...].astype(int).tolist() for p in sys.argv[2:]]))
"""


@pytest.mark.skipif(not Path(EXAMPLE).exists(), reason="zarr-python's examples not present")
def test_zarr_pythons_custom_dtype_example(tmp_path) -> None:
    pytest.importorskip("ml_dtypes")
    v2, v3 = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", RUN_WITH_ZARRFAST, EXAMPLE,
                          str(v2), str(v3)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads((v3 / "zarr.json").read_text())["data_type"] == "int2"
    assert json.loads((v2 / ".zarray").read_text())["dtype"] == "int2"
    assert "Data type          : Int2()" in out.stdout  # the ZDType, as zarr-python prints
    # zarr-python, with the example's Int2 registered, reads what zarrfast wrote
    read = subprocess.run([sys.executable, "-W", "ignore", "-c", READ_WITH_ZARR, EXAMPLE,
                           str(v2), str(v3)], capture_output=True, text=True, timeout=300)
    assert read.returncode == 0, read.stderr[-3000:]
    assert json.loads(read.stdout.strip().splitlines()[-1]) == [[-1, -2, 0, 1]] * 2
