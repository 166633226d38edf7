"""``Store.read_many_into(..., exact=False)`` and ``Store.fast_get_into`` (which stores
may be read straight into a buffer, and which must go through an overridden ``get``).
"""

from __future__ import annotations

import numpy as np
import pytest

from zarrfast.storage import LocalStore, MemoryStore

from _helpers.kernels import I64, i64
from _helpers.stores import GetAndIntoStore, GetOnlyStore

# ---------------------------------------------------------------------------
# Store.read_many_into(exact=False)
# ---------------------------------------------------------------------------

def _local(tmp_path):
    store = LocalStore(tmp_path / "store")
    store.set("d/inner", b"x")  # "d" is a directory: no value
    return store


@pytest.mark.parametrize("make", [_local, lambda p: MemoryStore()], ids=["local", "memory"])
def test_store_read_many_into_not_exact(make, tmp_path):
    store = make(tmp_path)
    values = {"small": b"abc", "equal": bytes(range(8)), "large": bytes(range(50, 62)),
              "empty": b""}
    for k, v in values.items():
        store.set(k, v)
    keys = ["small", "equal", "large", "empty", "missing", "d"]
    out = np.full(8 * len(keys) + 3, 0xEE, dtype=np.uint8)
    offsets = np.arange(len(keys), dtype=I64) * 8 + 3
    sizes = store.read_many_into(keys, out, offsets, 8, exact=False)
    assert np.asarray(sizes).tolist() == [3, 8, 12, 0, -1, -1]
    assert (out[:3] == 0xEE).all()
    assert out[3:11].tobytes() == b"abc" + b"\xee" * 5
    assert out[11:19].tobytes() == bytes(range(8))
    assert (out[19:] == 0xEE).all()
    # exact: sizes alike; the exactly-sized value is read in place
    out = np.full(8 * len(keys) + 3, 0xEE, dtype=np.uint8)
    sizes = store.read_many_into(keys, out, offsets, 8, exact=True)
    assert np.asarray(sizes).tolist() == [3, 8, 12, 0, -1, -1]
    assert out[11:19].tobytes() == bytes(range(8))


class GetIntoOnlyStore(LocalStore):
    def get_into(self, key, out):
        return super().get_into(key, out)


class GetOnlyChild(GetOnlyStore):
    pass


def test_fast_get_into_property(tmp_path):
    assert LocalStore(tmp_path).fast_get_into is True
    assert GetOnlyStore(tmp_path).fast_get_into is False
    assert GetOnlyChild(tmp_path).fast_get_into is False
    assert GetAndIntoStore(tmp_path).fast_get_into is True
    assert GetIntoOnlyStore(tmp_path).fast_get_into is True
    assert MemoryStore().fast_get_into is False


def test_read_many_into_honours_an_overridden_get(tmp_path):
    store = GetOnlyStore(tmp_path, overlay={"k": b"from get"})
    LocalStore(tmp_path).set("k", b"on disk!")
    out = np.zeros(16, np.uint8)
    assert store.get_into("k", memoryview(out)[:8]) == 8
    assert out[:8].tobytes() == b"from get"  # get_into honours get
    out[:] = 0
    sizes = store.read_many_into(["k"], out, i64(0), 16, exact=False)
    assert out[:8].tobytes() == b"from get" and list(sizes) == [8]
