"""Cold boxes, what the kernel is told: a box whose first chunk is in the page cache
(an earlier box read it) and whose others are not still announces them; and announcing
a shard's neighbouring inner chunks as one range changes no value, whatever inner
chunks are missing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast._ext import _decode
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, is_cold, needs_cold_reads

pytestmark = needs_cold_reads

SHAPE = (40, 48, 36)
DATA = (np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE) * 7 + 3).astype("u2")
CHUNKS = (8, 8, 8)
#: one to two chunks long per side: 3 x 3 x 2 = 18 chunks, the first c/0/1/0
BOX = (slice(4, 20), slice(10, 26), slice(6, 14))
#: a selection inside the box's first chunk only (chunk (0, 1, 0))
FIRST = (slice(4, 5), slice(10, 11), slice(6, 7))


@pytest.mark.parametrize("layout", ["zstd", "sharded"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_box_whose_first_chunk_is_cached_announces_its_cold_chunks(tmp_path, layout,
                                                                     threads):
    # Boxes that overlap earlier ones (100 random boxes of 1 to 2 chunks a side: a
    # fifth of them) begin with a chunk in the page cache.  Only the first chunk's
    # read asked whether the box was cold, so such a box announced nothing and read
    # its other chunks one wait after another.
    kw = {"shards": (16, 16, 16)} if layout == "sharded" else {}
    a = zarrfast.create_array(LocalStore(tmp_path / "a.zarr"), shape=SHAPE,
                              dtype=DATA.dtype, chunks=CHUNKS, **kw)
    a[:] = DATA
    a = zarrfast.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    # (the box's last chunk, or its shard)
    last = tmp_path / "a.zarr" / "c" / ("1/1/0" if layout == "sharded" else "2/3/1")
    with zarrfast.config.set(threads=threads):
        a[BOX]  # (a sharded array's indexes cached)
        announced = cold = 0
        for _ in range(5):  # (eviction is best effort)
            evict(tmp_path)
            np.testing.assert_array_equal(a[FIRST], DATA[FIRST])  # the first chunk, warm
            if not is_cold(last):
                continue
            cold += 1
            before = _decode.cold_announcements()
            np.testing.assert_array_equal(a[BOX], DATA[BOX])
            announced += _decode.cold_announcements() > before
            if announced:
                break
        if not cold:
            pytest.skip("this file system keeps its files in memory (tmpfs?)")
        assert announced
        np.testing.assert_array_equal(a[BOX], DATA[BOX])  # warm: the same values


@st.composite
def _layouts(draw):
    """A sharded array's stored inner chunks (the others missing: fill value) and a
    box one to two inner chunks long per side."""
    stored = draw(st.lists(st.booleans(), min_size=5 * 6 * 5, max_size=5 * 6 * 5))
    sel = []
    for n, c in zip(SHAPE, CHUNKS, strict=True):
        size = draw(st.integers(1, min(2 * c, n)))
        start = draw(st.integers(0, n - size))
        sel.append(slice(start, start + size))
    return stored, tuple(sel), draw(st.sampled_from([1, 2]))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_layouts())
def test_cold_sharded_boxes_with_missing_inner_chunks_equal_numpy(tmp_path_factory, case):
    # Neighbouring inner chunks of a shard are announced as one range: a hint, which
    # must change no value, whichever inner chunks are stored.
    stored, sel, threads = case
    root = tmp_path_factory.mktemp("holes")
    a = zarrfast.create_array(LocalStore(root / "a.zarr"), shape=SHAPE, dtype=DATA.dtype,
                              chunks=CHUNKS, shards=(16, 16, 16), fill_value=5)
    want = np.full(SHAPE, 5, dtype=DATA.dtype)
    grid = [range(0, n, c) for n, c in zip(SHAPE, CHUNKS, strict=True)]
    k = 0
    for i in grid[0]:
        for j in grid[1]:
            for m in grid[2]:
                if stored[k]:
                    region = (slice(i, i + 8), slice(j, j + 8), slice(m, m + 8))
                    a[region] = DATA[region]
                    want[region] = DATA[region]
                k += 1
    a = zarrfast.open_array(LocalStore(root / "a.zarr"), mode="r")
    with zarrfast.config.set(threads=threads):
        a[sel]  # (the indexes cached)
        evict(root)
        np.testing.assert_array_equal(a[sel], want[sel])
        np.testing.assert_array_equal(a[sel], want[sel])
