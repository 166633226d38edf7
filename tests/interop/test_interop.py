"""Interoperability with the reference implementations zarr-python 3 and tensorstore.

Every fixture is written IN the test (under a temporary directory) by one
implementation and read by another:

* zarr-python / tensorstore write, zarrfast reads (whole-array and strided reads,
  steps 2, 3 and negative), and zarrfast reproduces their ``zarr.json`` exactly;
* zarrfast writes, zarr-python (``zarr.open_array``) and tensorstore
  (``ts.open({"driver": "zarr3", ...})``) read;

over all core data types x all core codecs (bytes little/big endian, transpose in
every permutation, gzip, zstd, blosc with every shuffle mode, crc32c), edge
chunks, missing chunks and special fill values, plus chunk key encodings and 0-d
arrays (the cases: ``_helpers/interop.py``).  ``write_empty_chunks``, partial
overwrites of peer-written arrays and groups: ``test_interop_writes.py``.

Values are compared NaN-aware *and* bit for bit (so ``-0.0`` vs ``0.0`` and NaN
payloads count) wherever zarrfast is the reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.metadata.v3 import ArrayMetadata

from _helpers import seed_of
from _helpers.interop import (
    ALL_CASES,
    CKE_CASES,
    CODEC_CASES,
    OTHER_CASES,
    PEERS,
    READERS,
    WRITERS,
    Case,
    assert_fill_equal,
    assert_identical,
    expected_array,
    expected_chunk_keys,
    make_data,
    selections,
    stored_keys,
    ts_spec,
    write_zarr,
    write_zf,
)

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """``written(writer, case) -> path``: the array written once per module, then reused by
    the tests that only read it."""
    base = tmp_path_factory.mktemp("interop")
    cache: dict[tuple[str, str], Path] = {}

    def get(writer: str, case: Case) -> Path:
        key = (writer, case.id)
        if key not in cache:
            path = base / writer / case.id
            WRITERS[writer](path, case)
            cache[key] = path
        return cache[key]

    return get


# ---------------------------------------------------------------------------
# peers write, zarrfast reads
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", ALL_CASES, ids=str)
@pytest.mark.parametrize("writer", PEERS)
def test_zarrfast_reads_peer(written, writer, case):
    path = written(writer, case)
    expected = expected_array(case)
    # the peer wrote the chunk keys we expect, and only those (missing chunks stay missing)
    assert stored_keys(path) - {"zarr.json"} == expected_chunk_keys(case)

    a = zarrfast.open_array(str(path), mode="r")
    assert a.shape == case.shape
    assert a.chunks == case.chunks
    assert a.dtype == np.dtype(case.dtype)
    assert_fill_equal(a.fill_value, case)
    assert a.metadata.dimension_names == case.dims
    assert dict(a.attrs) == case.attrs
    assert_identical(a[...], expected)
    for sel in selections(case.shape):
        assert_identical(a[sel], expected[sel])


@pytest.mark.parametrize("case", ALL_CASES, ids=str)
@pytest.mark.parametrize("writer", ["zarr", "tensorstore"])
def test_metadata_document_roundtrip(written, writer, case):
    doc = json.loads((written(writer, case) / "zarr.json").read_bytes())
    assert ArrayMetadata.from_dict(doc).to_dict() == doc


@pytest.mark.parametrize("dtype", ["bool", "int16", "uint64", "float16", "float64",
                                   "complex64"])
def test_zarr_python_default_codecs(tmp_path, dtype):
    """Arrays zarr-python writes with its defaults (codecs chosen automatically)."""
    data = make_data(dtype, (9, 5), seed_of(dtype, "defaults"))
    z = zarr.create_array(store=str(tmp_path), shape=data.shape, chunks=(4, 4), dtype=dtype)
    z[...] = data
    doc = json.loads((tmp_path / "zarr.json").read_bytes())
    assert ArrayMetadata.from_dict(doc).to_dict() == doc
    a = zarrfast.open_array(str(tmp_path), mode="r")
    assert_identical(a[...], data)
    assert_identical(a[::-3, 1::2], data[::-3, 1::2])


# ---------------------------------------------------------------------------
# zarrfast writes, peers read
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", ALL_CASES, ids=str)
@pytest.mark.parametrize("reader", PEERS)
def test_peer_reads_zarrfast(written, reader, case):
    path = written("zarrfast", case)
    assert stored_keys(path) - {"zarr.json"} == expected_chunk_keys(case)
    assert_identical(READERS[reader](path), expected_array(case), bitwise=False,
                     exact_dtype=False)
    if reader == "zarr":
        z = zarr.open_array(str(path), mode="r")
        assert z.metadata.dimension_names == case.dims
        assert dict(z.attrs) == case.attrs
        assert_fill_equal(z.fill_value, case)
    else:
        t = ts.open(ts_spec(path)).result()
        assert t.domain.labels == tuple(d or "" for d in (case.dims or ("",) * len(case.shape)))
        assert_fill_equal(t.fill_value, case)


@pytest.mark.parametrize("case", CKE_CASES + [c for c in OTHER_CASES if c.id.startswith("0d")]
                         + [CODEC_CASES[0]], ids=str)
def test_zarrfast_chunk_keys_match_zarr_python(tmp_path, case):
    """zarrfast stores exactly the keys zarr-python stores for the same array and data."""
    write_zarr(tmp_path / "zarr", case)
    write_zf(tmp_path / "zf", case)
    assert stored_keys(tmp_path / "zf") == stored_keys(tmp_path / "zarr")
