"""Zarr v2 data only zarr-python 2 writes: ``tests/fixtures/zarr2/`` (see
``tests/fixtures/make_zarr2_fixtures.py``) and the values zarr-python 2 read back
from it.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.metadata.v2 import ArrayMetadataV2

from _helpers import object_array
from _helpers.v2 import (
    FIXTURES,
    MARKS,
    CountingStore,
    assert_identical,
    assert_metadata_roundtrip,
    generic_selections,
    read_docs,
)

zarr = pytest.importorskip("zarr")

pytestmark = MARKS


# ---------------------------------------------------------------------------
# zarr-python 2 data (tests/fixtures/zarr2, written by make_zarr2_fixtures.py)
# ---------------------------------------------------------------------------
def _load_fixture_expectations() -> tuple[dict[str, np.ndarray], dict[str, list]]:
    with np.load(FIXTURES / "expected.npz") as npz:
        numeric = {k.replace("__", "/"): npz[k] for k in npz.files}
    objects = json.loads((FIXTURES / "expected.json").read_text())["objects"]
    return numeric, objects


def _untag(v: Any) -> Any:
    if isinstance(v, dict) and "bytes" in v:
        return base64.standard_b64decode(v["bytes"])
    if isinstance(v, dict) and "array" in v:
        return np.array(v["array"], dtype=v["dtype"])
    return v


FIXTURE_NUMERIC, FIXTURE_OBJECTS = (_load_fixture_expectations() if FIXTURES.exists()
                                    else ({}, {}))

# zarr-python 3.1 cannot open these (checked when the fixtures were made; not asserted):
#   objects/vlen_bytes  ("fill_value": 0 -> "Invalid type: 0. Expected a string."),
#   objects/vlen_array, objects/json, objects/categorize (no zarr-python 3 data type),
#   fixed/structured, fixed/structured2d_F (sub-array fields).


@pytest.mark.parametrize("path", sorted(FIXTURE_NUMERIC))
@pytest.mark.parametrize("via", ["path", "consolidated"])
def test_zarr_python_2_fixture_numeric(path: str, via: str) -> None:
    exp = FIXTURE_NUMERIC[path]
    if via == "path":
        arr = zarrfast.open_array(str(FIXTURES / "data.zarr"), path=path, mode="r")
    else:
        arr = zarrfast.open_consolidated(str(FIXTURES / "data.zarr"))[path]
    assert arr.dtype == exp.dtype and arr.shape == exp.shape
    if exp.ndim == 0:
        assert_identical(np.asarray(arr[...]), exp)
        return
    for sel in generic_selections(exp.ndim):
        assert_identical(arr[sel], exp[sel], what=f"{path}[{sel}]")


@pytest.mark.parametrize("path", sorted(FIXTURE_OBJECTS))
def test_zarr_python_2_fixture_objects(path: str) -> None:
    arr = zarrfast.open_array(str(FIXTURES / "data.zarr"), path=path, mode="r")
    values = [_untag(v) for v in FIXTURE_OBJECTS[path]]
    exp = object_array(values, arr.shape)
    assert arr.dtype == np.dtype(object)
    assert_identical(arr[...], exp, what=path)
    for sel in generic_selections(arr.ndim):
        assert_identical(arr[sel], exp[sel], what=f"{path}[{sel}]")


def test_zarr_python_2_fixture_metadata() -> None:
    """Every document zarr-python 2 wrote round-trips exactly, and the old-writer details
    are understood (no dimension_separator member means '.', and it stays absent)."""
    root = FIXTURES / "data.zarr"
    zarrays = sorted(root.rglob(".zarray"))
    assert len(zarrays) == len(FIXTURE_NUMERIC) + len(FIXTURE_OBJECTS)
    without_sep = 0
    for p in zarrays:
        md = assert_metadata_roundtrip(p.parent)
        if "dimension_separator" not in json.loads(p.read_text()):
            without_sep += 1
            assert md.dimension_separator == "."
    assert without_sep >= 20
    vb = ArrayMetadataV2.from_dict(*read_docs(root / "objects" / "vlen_bytes"))
    assert vb.fill_value == 0 and vb.to_dict()["fill_value"] == 0
    leaf = zarrfast.open_array(str(root), path="a/b/c/leaf")
    assert leaf.dimension_names == ("y", "x")
    assert leaf.attrs["units"] == "m"
    g = zarrfast.open_group(str(root), mode="r", use_consolidated=False)
    assert g.attrs["title"] == "zarr-python 2 fixtures"
    assert g["a"]["b"]["c"].attrs["depth"] == 3
    assert g["objects"].attrs["kind"] == "object arrays"


def test_zarr_python_2_fixture_consolidated_one_read() -> None:
    store = CountingStore(FIXTURES / "data.zarr", read_only=True)
    g = zarrfast.open_consolidated(store, zarr_format=2)
    members = dict(g.members(max_depth=None))
    arrays = {k: v.shape for k, v in members.items() if isinstance(v, zarrfast.Array)}
    assert arrays == {k: v.shape for k, v in FIXTURE_NUMERIC.items()} | {
        k: zarrfast.open_array(str(FIXTURES / "data.zarr"), path=k).shape
        for k in FIXTURE_OBJECTS}
    assert store.gets == [(".zmetadata", True)]
    assert store.other == []
    assert members["a/b/c/leaf"].dimension_names == ("y", "x")


def test_zarr_python_2_fixture_copy_is_writable(tmp_path: Path) -> None:
    """zarrfast writes into a copy of zarr-python 2 data (no dimension_separator member,
    blosc) and zarr-python 3 reads the result; the document keeps its old form."""
    shutil.copytree(FIXTURES / "data.zarr", tmp_path / "d")
    arr = zarrfast.open_array(str(tmp_path / "d"), path="numeric/i4_F_2d", mode="r+")
    arr[5:, :] = -2
    exp = FIXTURE_NUMERIC["numeric/i4_F_2d"].copy()
    exp[5:, :] = -2
    assert_identical(zarrfast.open_array(str(tmp_path / "d"), path="numeric/i4_F_2d")[...], exp)
    assert_identical(np.asarray(zarr.open_array(str(tmp_path / "d"), path="numeric/i4_F_2d",
                                                mode="r")[...]), exp)
    arr.attrs["new"] = 1
    doc = json.loads((tmp_path / "d" / "numeric" / "i4_F_2d" / ".zarray").read_text())
    assert "dimension_separator" not in doc
    s = zarrfast.open_array(str(tmp_path / "d"), path="objects/vlen_utf8_fill", mode="r+")
    s[4:] = object_array(["new", "er"], (2,))
    assert s[...].tolist() == ["~", "ab", "c", "~", "new", "er"]


@pytest.mark.parametrize("fill", [[0], {"a": 1}, 1.5, True])
def test_v2_datetime_fill_value_must_be_one_value(tmp_path, fill):
    """A list (found by the metadata fuzzer) would become an array, not one value: the
    error names the node when the array is opened, not later when it is read."""
    from zarrfast.errors import FillValueError

    (tmp_path / "grp" / "arr").mkdir(parents=True)
    (tmp_path / "grp" / "arr" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "<M8[ns]",
        "compressor": None, "fill_value": fill, "order": "C", "filters": None}))
    with pytest.raises(FillValueError, match="grp/arr"):
        zarrfast.open_array(str(tmp_path), path="grp/arr")
