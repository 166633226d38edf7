"""The registry's array -> array codecs that a peer writes: ``scale_offset`` and
``cast_value`` against zarr-python 3.4 (both directions, bit for bit, the same
``zarr.json``), ``bitround`` against the registry's own sample data."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrfast

from _helpers import FIXTURES
from _helpers.zarr_peer import get_zarr_peer

pytestmark = pytest.mark.interop

#: name -> (dtype, fill value, filters as zarr.codecs calls, values expression)
CASES = {
    "so_f8": ("f8", 1.0, "[ScaleOffset(offset=5, scale=0.5)]", "np.arange(37) * 1.5"),
    "so_i4": ("i4", 3, "[ScaleOffset(offset=-7, scale=3)]", "np.arange(37) * 11 - 100"),
    "so_u2": ("u2", 1000, "[ScaleOffset(offset=1000)]", "np.arange(37) + 1000"),
    "so_cast_nan": ("f8", "nan", "[ScaleOffset(offset=-10, scale=0.1), CastValue("
                    "data_type='uint8', out_of_range='clamp', scalar_map={'encode': "
                    "[['NaN', 0]], 'decode': [[0, 'NaN']]})]",
                    "np.where(np.arange(37) % 5 == 0, np.nan, np.arange(37) * 60.0)"),
    "cast_f4_i2": ("f4", -1.0, "[CastValue(data_type='int16', rounding='towards-zero')]",
                   "np.arange(37) * 7.5 - 50"),
    "cast_i8_u1_wrap": ("i8", 0, "[CastValue(data_type='uint8', out_of_range='wrap')]",
                        "np.arange(37) * 13"),
}
SHAPE, CHUNKS = (37,), (8,)

_WRITE = """
import numpy as np, zarr, json
from zarr.codecs import ScaleOffset, CastValue
out = {}
for name, (dtype, fill, filters, values) in ARGS["cases"].items():
    path = ARGS["base"] + "/" + name
    a = zarr.create_array(path, shape=(37,), chunks=(8,), dtype=dtype,
                          fill_value=float(fill) if fill == "nan" else fill,
                          filters=eval(filters))
    v = eval(values).astype(dtype)
    a[:16] = v[:16]
    a[24:] = v[24:]
    out[name] = [json.load(open(path + "/zarr.json"))["codecs"], a[:].tobytes().hex()]
emit(out)
"""

_READ = """
import zarr
emit({n: zarr.open_array(ARGS["base"] + "/" + n)[:].tobytes().hex() for n in ARGS["names"]})
"""


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    zp = get_zarr_peer()  # (its venv has cast-value-rs, which the peer's cast_value needs)
    base = tmp_path_factory.mktemp("peer-ext")
    return zp, base, zp.run(_WRITE, {"cases": CASES, "base": str(base)})


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarrfast_reads_what_zarr_python_writes(peer, name):
    _, base, written = peer
    codecs, hexvalues = written[name]
    got = zarrfast.open_array(base / name)[:]
    assert got.tobytes().hex() == hexvalues  # what zarr-python itself reads back


@pytest.mark.parametrize("name", sorted(CASES))
def test_zarr_python_reads_what_zarrfast_writes(peer, tmp_path, name):
    zp, _, written = peer
    codecs, hexvalues = written[name]
    dtype, fill, _, values = CASES[name]
    a = zarrfast.create_array(tmp_path / name, shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              fill_value=float(fill) if fill == "nan" else fill,
                              filters=[c for c in codecs if c["name"] in ("scale_offset",
                                                                        "cast_value")])
    v = eval(values).astype(dtype)  # noqa: S307 - the cases above
    a[:16] = v[:16]
    a[24:] = v[24:]
    mine = json.loads((tmp_path / name / "zarr.json").read_text())["codecs"]
    assert mine == codecs
    # the stored chunks are zarr-python's, byte for byte
    back = zp.run(_READ, {"base": str(tmp_path), "names": [name]})
    assert back[name] == hexvalues
    assert a[:].tobytes().hex() == hexvalues


def test_bitround_reads_and_writes_the_registry_sample_data(tmp_path):
    """The registry's sample arrays (``tests/fixtures/zarr-extensions``) read as its tables
    say, and
    zarrfast rounding the originals stores the same chunk bytes."""
    originals = {
        "uint8": np.array([0, 1, 10, 11, 100, 123, 200, 208, 209, 255], "u1"),
        "float32": np.array([0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf],
                            "f4"),
    }
    for name, original in originals.items():
        store = FIXTURES / "zarr-extensions" / "bitround" / f"bitround_{name}.zarr"
        chunk = (store / "c" / "0").read_bytes()
        arr = zarrfast.open_array(zarrfast.LocalStore(store, read_only=True))
        assert arr[:].tobytes() == chunk  # stored rounded: reading is the identity
        mine = zarrfast.create_array(tmp_path / f"w-{name}", shape=original.shape,
                                     chunks=original.shape, dtype=name, fill_value=0,
                                     filters=[{"name": "bitround",
                                               "configuration": {"keepbits": 3}}],
                                     compressors=None)
        mine[:] = original
        assert (tmp_path / f"w-{name}" / "c" / "0").read_bytes() == chunk
