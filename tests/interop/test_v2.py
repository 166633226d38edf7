"""Zarr v2: interoperability with zarr-python 3 and tensorstore, the matrix.

Every v2 array written by zarr-python 3 (``zarr_format=2``) or tensorstore
(``"driver": "zarr"``) is read by zarrfast and compared element for element
(NaN-aware, bit for bit) with what was written; every v2 array zarrfast writes
is read back by zarr-python and tensorstore.  The matrix (``_helpers/v2.py``) covers
every NumPy dtype v2 allows (both byte orders, ``S``, ``U``, datetimes), C and F
order in 2-D and 3-D, both ``dimension_separator`` values, numcodecs compressors
and filters, fill values (NaN, +-Infinity, null, nonzero, base64), missing and edge
chunks and strided / negative-step reads.

Also: ``test_v2_arrays.py`` (structured and object arrays, fill values, attributes),
``test_v2_hierarchy.py`` (groups, consolidated metadata, one format per hierarchy),
``test_v2_fixtures.py`` (data only zarr-python 2 writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast

from _helpers.v2 import (
    DTYPES,
    INF,
    MARKS,
    MATRIX,
    NAN,
    SHAPE_3D,
    TS_COMPRESSORS,
    Case,
    assert_identical,
    assert_metadata_roundtrip,
    check_close_to_data,
    check_reads,
    full_like_fill,
    read_docs,
    special_fill,
    stored_chunk_keys,
    touched_chunk_keys,
    ts_spec,
    zf_write,
    zp_write,
)

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = MARKS


# ---------------------------------------------------------------------------
# zarr-python writes, zarrfast reads (and the reverse)
# ---------------------------------------------------------------------------
def with_ids(cases: list[Case]) -> list[Any]:
    return [pytest.param(c, id=c.id) for c in cases]


@pytest.mark.parametrize("case", with_ids(MATRIX))
def test_zarr_python_writes_zarrfast_reads(tmp_path: Path, case: Case) -> None:
    zp_write(tmp_path, case)
    adir = tmp_path / "a"
    # the chunks outside the region were never written (missing chunks)
    assert stored_chunk_keys(adir) == touched_chunk_keys(case.shape, case.chunks, case.region,
                                                         case.sep)
    md = assert_metadata_roundtrip(adir)
    assert md.order == case.order and md.dimension_separator == case.sep
    arr = zarrfast.open_array(str(tmp_path), path="a", mode="r")
    assert arr.shape == case.shape
    assert arr.chunks == case.chunks
    assert arr.dtype == case.np_dtype  # the declared dtype, byte order included
    if case.tolerance is None:
        check_reads(arr, case.expected(), case)
    else:
        # lossy filters: identical to what zarr-python itself reads
        theirs = np.asarray(zarr.open_array(str(tmp_path), path="a", mode="r")[...])
        check_close_to_data(theirs, case)
        check_reads(arr, theirs, case)
    # the fill value as a value of the array's dtype
    assert_identical(np.array(arr.fill_value, dtype=case.np_dtype),
                     full_like_fill((), case.dtype, case.fill), what="fill_value")


@pytest.mark.parametrize("case", with_ids(MATRIX))
def test_zarrfast_writes_zarr_python_reads(tmp_path: Path, case: Case) -> None:
    zf_write(tmp_path, case)
    adir = tmp_path / "a"
    assert stored_chunk_keys(adir) == touched_chunk_keys(case.shape, case.chunks, case.region,
                                                         case.sep)
    zarray, _ = read_docs(adir)
    assert zarray["zarr_format"] == 2
    assert zarray["order"] == case.order
    assert zarray["dimension_separator"] == case.sep
    assert np.dtype(zarray["dtype"]) == case.np_dtype
    assert_metadata_roundtrip(adir)
    theirs = zarr.open_array(str(tmp_path), path="a", mode="r")
    assert theirs.shape == case.shape and tuple(theirs.chunks) == case.chunks
    values = np.asarray(theirs[...])
    ours = zarrfast.open_array(str(tmp_path), path="a", mode="r")
    if case.tolerance is None:
        assert_identical(values, case.expected(), what="zarr-python")
        check_reads(ours, case.expected(), case)
    else:
        check_close_to_data(values, case)
        assert_identical(ours[...], values.astype(case.np_dtype), what="zarrfast vs zarr-python")
    # zarr-python decodes the same fill value
    assert_identical(np.array(theirs.fill_value, dtype=case.np_dtype),
                     full_like_fill((), case.dtype, case.fill), what="fill_value")


# ---------------------------------------------------------------------------
# tensorstore ("driver": "zarr", Zarr v2)
# ---------------------------------------------------------------------------
_TS_DTYPES = [d for d in DTYPES if np.dtype(d).kind in "biufc"]
_TS_COMP = list(TS_COMPRESSORS)

TS_CASES = [
    Case(f"ts-{dt}-{order}-{_TS_COMP[(2 * i + j) % len(_TS_COMP)]}", dt, special_fill(dt),
         order=order, sep="./"[(i + j) % 2], compressor=_TS_COMP[(2 * i + j) % len(_TS_COMP)])
    for i, dt in enumerate(_TS_DTYPES)
    for j, order in enumerate("CF")
] + [
    Case(f"ts-3d-{dt}-{order}", dt, fill, order=order, sep="/", compressor="blosc-shuffle",
         **SHAPE_3D)
    for dt, order, fill in [(">f8", "F", -INF), ("<i2", "F", 3), ("<c8", "C", complex(0, NAN))]
] + [
    Case(f"ts-fill-{dt}-{name}", dt, fill, compressor="none", shape=(6, 5), chunks=(4, 2),
         region=(slice(1, 3), slice(4, 5)))
    for dt, name, fill in [("<f8", "-0", -0.0), (">f2", "inf", INF), ("<u8", "max", 2**64 - 1),
                           (">i8", "min", -(2**63)), ("|b1", "true", True),
                           ("<c16", "nan-nan", complex(NAN, NAN))]
] + [Case("ts-1d-edge", ">i2", -5, shape=(11,), chunks=(4,), region=(slice(3, 10),))]


@pytest.mark.parametrize("case", TS_CASES, ids=str)
def test_tensorstore_writes_zarrfast_reads(tmp_path: Path, case: Case) -> None:
    t = ts.open(ts_spec(tmp_path / "a", case)).result()
    t[case.region] = case.data()[case.region]
    adir = tmp_path / "a"
    assert stored_chunk_keys(adir) == touched_chunk_keys(case.shape, case.chunks, case.region,
                                                         case.sep)
    assert_metadata_roundtrip(adir)
    arr = zarrfast.open_array(str(tmp_path), path="a", mode="r")
    assert arr.dtype == case.np_dtype
    check_reads(arr, case.expected(), case)


@pytest.mark.parametrize("case", TS_CASES, ids=str)
def test_zarrfast_writes_tensorstore_reads(tmp_path: Path, case: Case) -> None:
    # the compressor as a config dict: numcodecs' Zstd config has a 'checksum' member that
    # tensorstore refuses
    zf_write(tmp_path, case, compressor=TS_COMPRESSORS[case.compressor])
    t = ts.open(ts_spec(tmp_path / "a"), read=True).result()
    assert tuple(t.shape) == case.shape
    assert tuple(t.chunk_layout.read_chunk.shape) == case.chunks
    assert_identical(t.read().result(), case.expected(), check_dtype=False, what="tensorstore")
    assert_identical(np.asarray(t.fill_value), full_like_fill((), case.dtype, case.fill),
                     check_dtype=False, what="tensorstore fill_value")


def test_tensorstore_null_fill_and_default_metadata(tmp_path: Path) -> None:
    """tensorstore's defaults: ``fill_value: null``, blosc, no ``dimension_separator``
    given (it writes "."), and keys for every chunk written."""
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
                 "create": True, "dtype": "float32", "schema": {"domain": {"shape": [5, 4]},
                                                                "chunk_layout": {
                                                                    "read_chunk": {
                                                                        "shape": [2, 3]}}}}
                ).result()
    t[1:3, :2] = np.array([[1, 2], [3, 4]], dtype="f4")
    zarray, _ = read_docs(tmp_path / "a")
    assert zarray["fill_value"] is None
    arr = zarrfast.open_array(str(tmp_path), path="a")
    assert arr.fill_value is None
    exp = np.zeros((5, 4), dtype="<f4")
    exp[1:3, :2] = [[1, 2], [3, 4]]
    assert_identical(arr[...], exp.astype(arr.dtype))
    assert_metadata_roundtrip(tmp_path / "a")


def test_tensorstore_fixed_bytes_written_read_by_zarrfast(tmp_path: Path) -> None:
    """tensorstore stores ``|S3`` as chars (an extra dimension); zarrfast reads ``|S3``."""
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "s")},
                 "create": True, "metadata": {"shape": [5], "chunks": [2], "dtype": "|S3",
                                              "compressor": {"id": "zlib", "level": 1},
                                              "fill_value": "YWJj"}}).result()
    t[0:2] = np.frombuffer(b"xyzu\x00w", dtype="S1").reshape(2, 3)
    arr = zarrfast.open_array(str(tmp_path), path="s")
    assert_identical(arr[...], np.array([b"xyz", b"u\x00w", b"abc", b"abc", b"abc"],
                                        dtype="S3"))
    assert arr.fill_value == b"abc"
