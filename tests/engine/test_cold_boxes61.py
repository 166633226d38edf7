"""Cold boxes, what the kernel is told: a box whose first chunk is in the page cache
(an earlier box read it) and whose others are not still announces them."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast._ext import _decode
from zarrfast.storage import LocalStore

from _helpers.page_cache import evict, is_cold

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "posix_fadvise") and hasattr(os, "RWF_NOWAIT")
         and os.path.isdir("/proc/self/fd")),
    reason="needs posix_fadvise, preadv(RWF_NOWAIT) and /proc/self/fd (Linux)")

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
