"""What the draft (pre-final Zarr v3) tests share: the fixtures in
``tests/fixtures/drafts/`` and their Zarr v2 twins, read by zarr-python as the
reference, a bit-for-bit comparison, and fixtures as dicts to break.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from zarrfast.metadata.draft import DRAFT_2022, ZARRITA

import _helpers

try:
    import zarr
except ImportError:  # pragma: no cover - a test-only peer: the tests that use it skip
    zarr = None

#: the ``pytestmark`` of the draft modules
WARNINGS = pytest.mark.filterwarnings(
    # zarr-python 3 warns about numcodecs.* codecs and v2 details it reads fine
    "ignore::UserWarning",
    "ignore::DeprecationWarning",
)


FIXTURES = _helpers.FIXTURES / "drafts"
PAIRS = {  # draft fixture -> its Zarr v2 twin
    "zarrita": "zarrita_v2",
    "draft2022": "draft2022_v2",
    "draft2022_root": "draft2022_root_v2",
}
LAYOUTS = {"zarrita": ZARRITA, "draft2022": DRAFT_2022, "draft2022_root": DRAFT_2022}


def v2_reference(name: str, path: str):
    return zarr.open_array(str(FIXTURES / PAIRS[name]), path=path, mode="r", zarr_format=2)


def _native(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = _native(got), _native(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    # bit for bit: -0.0 vs 0.0 and NaN payloads count
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (
        f"{what}: values differ\n{got}\n!=\n{want}"
    )


def draft_selections(ndim: int) -> list:
    if ndim == 0:
        return [(), Ellipsis]
    sels = [
        Ellipsis,
        (slice(None, None, 2),) * ndim,
        (slice(None, None, -1),) * ndim,
        (slice(-1, None, -2),) * ndim,
        (slice(1, -1, 3),) * ndim,
        (slice(None, None, -3),) + (slice(None),) * (ndim - 1),
        (1,) + (slice(None, None, -2),) * (ndim - 1),
        (-1,) * ndim,
    ]
    if ndim > 1:
        sels.append((slice(None, None, 2), 0) + (slice(None, None, -1),) * (ndim - 2))
    return sels


def fixture_dict(name: str) -> dict[str, bytes]:
    """A fixture as a dict (for a MemoryStore) to break in tests."""
    root = FIXTURES / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}


def get_doc(d: dict[str, bytes], key: str) -> dict:
    return json.loads(d[key])


def put_doc(d: dict[str, bytes], key: str, doc) -> None:
    d[key] = json.dumps(doc).encode()
