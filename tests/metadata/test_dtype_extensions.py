"""Extension data types: datetime64 / timedelta64, struct (and legacy structured), the
registry's ``bytes``, ML types, complex aliases — parsing, fill values, round trips and
bad input, which is refused when the array opens and names the node and the value."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast.errors import FillValueError, UnsupportedDataTypeError
from zarrfast.metadata.dtype import data_type_from_numpy, parse_data_type

UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]


def _doc(data_type, fill_value=0, codecs=None):
    return {"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill_value,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]}


def _open(tmp_path, doc, name="node"):
    (tmp_path / name).mkdir()
    (tmp_path / name / "zarr.json").write_text(json.dumps(doc))
    return zarrfast.open_array(tmp_path, path=name)


@pytest.mark.parametrize("unit", [*UNITS, "\u03bcs"])
@pytest.mark.parametrize("kind", ["numpy.datetime64", "numpy.timedelta64"])
def test_every_unit_parses_and_prints_back(unit, kind):
    doc = {"name": kind, "configuration": {"unit": unit, "scale_factor": 7}}
    dt = parse_data_type(doc)
    code = "M" if kind.endswith("datetime64") else "m"
    assert dt.dtype == np.dtype(f"{code}8[7{'us' if unit == chr(956) + 's' else unit}]")
    expected = {**doc, "configuration": {**doc["configuration"],
                                         "unit": "us" if unit == "\u03bcs" else unit}}
    assert dt.to_json() == expected
    assert data_type_from_numpy(dt.dtype).to_json() == expected


@pytest.mark.parametrize("fill", ["NaT", -(2**63)])
def test_nat_fill_both_forms(tmp_path, fill):
    dt = {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}
    a = _open(tmp_path, _doc(dt, fill))
    assert np.isnat(a.fill_value)
    assert np.isnat(a[:]).all()
    assert json.loads((tmp_path / "node" / "zarr.json").read_text())["fill_value"] == fill


@pytest.mark.parametrize(("data_type", "fill", "message"), [
    ({"name": "numpy.datetime64", "configuration": {"unit": "sec", "scale_factor": 1}}, 0,
     "'sec'"),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}}, 0,
     "scale_factor"),
    ({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 2**31}}, 0,
     "2147483648"),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s"}}, 0, "scale_factor"),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}},
     "2020-01-01", "'2020-01-01'"),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, 2**63,
     "int64"),
    ({"name": "struct", "configuration": {"fields": []}}, 0, "non-empty"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"},
                                                     {"name": "a", "data_type": "int8"}]}},
     {"a": 0}, "repeated"),
    ({"name": "struct", "configuration": {"fields": [{"name": "", "data_type": "int8"}]}},
     {"": 0}, "non-empty string"),
    ({"name": "struct", "configuration": {"fields": [{"name": "s", "data_type": "string"}]}},
     {"s": ""}, "variable-length"),
    ({"name": "struct", "configuration": {"fields": [["a", "int8"]]}}, {"a": 0},
     "'name'"),  # tuple fields: only the legacy name allows them
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"}]}},
     {"b": 0}, "fields ['a']"),
    ("bfloat16", "0x7fc", "hex"),
    ("int4", 8, "out of range"),
    ("uint2", -1, "out of range"),
    ("complex_bfloat16", [0, 0], "no NumPy or ml_dtypes"),
    ("bytes", [256], "[0, 255]"),
])
def test_bad_extension_types_are_refused_when_opened(tmp_path, data_type, fill, message):
    with pytest.raises((UnsupportedDataTypeError, FillValueError)) as e:
        _open(tmp_path, _doc(data_type, fill))
    assert "'node'" in str(e.value) and message in str(e.value), str(e.value)


def test_struct_nesting_is_bounded(tmp_path):
    dt: dict = {"name": "struct", "configuration": {"fields": [{"name": "x",
                                                               "data_type": "int8"}]}}
    for _ in range(40):
        dt = {"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": dt}]}}
    with pytest.raises(UnsupportedDataTypeError, match="nested more than"):
        _open(tmp_path, _doc(dt, 0))


def test_legacy_structured_reads_tuple_fields_base64_fill_and_no_endian(tmp_path):
    dt = {"name": "structured", "configuration": {"fields": [["x", "int16"], ["y", "uint8"]]}}
    raw = np.array([(-2, 9)], dtype=[("x", "<i2"), ("y", "u1")]).tobytes()
    import base64

    doc = _doc(dt, base64.b64encode(raw).decode(), codecs=[{"name": "bytes"}])
    a = _open(tmp_path, doc)
    assert a.fill_value.tolist() == (-2, 9)
    assert a[:]["x"].tolist() == [-2] * 6
    a[1] = (5, 6)
    assert a[:2].tolist() == [(-2, 9), (5, 6)]
    # metadata written again (a resize) keeps the legacy form it was read in: its
    # base64 fill and its bytes codec without endian are valid only there
    a.resize((8,))
    doc = json.loads((tmp_path / "node" / "zarr.json").read_text())
    assert doc["data_type"] == dt and doc["fill_value"] == base64.b64encode(raw).decode()
    assert zarrfast.open_array(tmp_path, path="node")[:2].tolist() == [(-2, 9), (5, 6)]


def test_complex_float_aliases_read_as_numpy_complex(tmp_path):
    a = _open(tmp_path, _doc("complex_float32", [1.0, -2.0]))
    assert a.dtype == np.complex64 and a[0] == 1 - 2j


def test_ml_types_need_the_extra(tmp_path, subprocess_cwd):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "zarr.json").write_text(json.dumps(_doc("bfloat16", 0.0)))
    code = ("import sys; sys.modules['ml_dtypes'] = None\nimport zarrfast\n"
            f"try:\n    zarrfast.open_array({str(tmp_path)!r}, path='m')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=subprocess_cwd, check=True).stdout
    assert "UnsupportedDataTypeError" in out and "'m'" in out and "bfloat16" in out
    assert 'pip install "zarrfast[ml]" (from a source checkout: pip install ".[ml]")' in out


_FIELD_TYPES = st.sampled_from(["<i1", "<i2", "<u4", "<f4", "<f8", "<c8", "?", "S3", "<U2",
                                "<M8[s]", "<m8[3ms]"])


@st.composite
def struct_dtypes(draw, depth=0):
    names = draw(st.lists(st.text("abcxyz_", min_size=1, max_size=4), min_size=1,
                          max_size=4, unique=True))
    fields = []
    for n in names:
        if depth < 2 and draw(st.booleans()) and draw(st.booleans()):
            fields.append((n, draw(struct_dtypes(depth=depth + 1))))
        else:
            fields.append((n, draw(_FIELD_TYPES)))
    return np.dtype(fields)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dt=st.one_of(struct_dtypes(), st.builds(
    lambda k, u, n: np.dtype(f"{k}8[{n}{u}]"), st.sampled_from("Mm"), st.sampled_from(UNITS),
    st.integers(1, 1000))), endian=st.sampled_from(["little", "big"]),
    seed=st.integers(0, 2**32 - 1))
def test_round_trip_through_create_write_read(tmp_path_factory, dt, endian, seed):
    path = tmp_path_factory.mktemp("rt") / "a"
    rng = np.random.default_rng(seed)
    v = np.zeros(11, dtype=dt)
    v.view(np.uint8)[...] = rng.integers(0, 256, size=v.nbytes, dtype=np.uint8)
    if dt.fields is None:
        v[rng.random(11) < 0.2] = np.datetime64("NaT") if dt.kind == "M" else \
            np.timedelta64("NaT")
    a = zarrfast.create_array(path, shape=(11,), chunks=(4,), dtype=dt,
                              serializer={"name": "bytes",
                                          "configuration": {"endian": endian}})
    a[2:] = v[2:]
    exp = v.copy()
    exp[:2] = a.fill_value
    got = zarrfast.open_array(path)[:]
    assert got.tobytes() == exp.astype(got.dtype).tobytes()
    md = json.loads((path / "zarr.json").read_text())
    assert parse_data_type(md["data_type"]).dtype == data_type_from_numpy(dt).dtype
