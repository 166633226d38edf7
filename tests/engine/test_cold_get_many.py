"""``zarrfast.get_many`` of cold arrays on stores of their own (the loader's regions:
the same region of many arrays, each opened from its own path), read from real files
evicted from the page cache (``posix_fadvise(DONTNEED)``): the values equal NumPy's
with missing chunks (the fill value), steps (a negative one too) and sharded arrays,
at one and two threads, and a cold call leaves no chunk file open.  (From h61/coldreg,
whose change to the cold path -- every batch's files announced by one thread, the
batches read four per thread at a time -- was not kept: no gain on a loaded machine.)"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast._ext import _decode
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict as _evict
from _helpers.page_cache import held_open, is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")),
    reason="needs posix_fadvise and preadv(RWF_NOWAIT) (Linux)")

DATA = (np.arange(96 * 96, dtype="<u2").reshape(96, 96) * 7) % 60000


def _arrays(tmp_path, n: int, **kw) -> tuple[list, list[np.ndarray]]:
    """``n`` arrays, each on a store of its own, array ``i`` holding ``DATA + i``."""
    arrays, wants = [], []
    for i in range(n):
        root = tmp_path / f"a{i:02d}.zarr"
        a = zarrfast.create_array(LocalStore(root), shape=DATA.shape, dtype=DATA.dtype,
                                  compressors={"name": "zstd", "configuration": {"level": 1}},
                                  **kw)
        a[:] = DATA + i
        arrays.append(zarrfast.open_array(LocalStore(root), mode="r"))
        wants.append(DATA + i)
    _evict(tmp_path)
    first = next(os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "a00.zarr")
                 for f in fs if f != "zarr.json")
    if not is_cold(first):
        pytest.skip("this file system keeps its files in memory (tmpfs?)")
    return arrays, wants


REGIONS = [(slice(20, 70), slice(10, 60)), (slice(5, 90, 7), slice(40, 3, -3)),
           (slice(None), 17), (slice(95, None), slice(None, None, 40))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", ["chunks", "missing", "sharded"])
def test_cold_arrays_read_right(tmp_path, threads, layout) -> None:
    kw = {"chunks": (16, 16), "fill_value": 3}
    if layout == "sharded":
        kw["shards"] = (48, 48)
    arrays, wants = _arrays(tmp_path, 12, **kw)
    if layout == "missing":
        for i in (1, 4, 11):  # (chunk (2, 1) of three arrays gone)
            (tmp_path / f"a{i:02d}.zarr" / "c" / "2" / "1").unlink()
            wants[i][32:48, 16:32] = 3
    announced = 0
    with zarrfast.config.set(threads=threads):
        for region in REGIONS:
            for cold in (True, False):
                before = _decode.cold_announcements()
                got = zarrfast.get_many([(a, region) for a in arrays])
                for g, w in zip(got, wants, strict=True):
                    np.testing.assert_array_equal(g, w[region])
                if cold:
                    announced += _decode.cold_announcements() - before
            _evict(tmp_path)
    # (eviction is best effort; still, some cold call found its files out of the cache)
    assert announced >= 1
    for i in range(12):  # (no chunk file left open)
        assert held_open(tmp_path / f"a{i:02d}.zarr" / "c") == []
