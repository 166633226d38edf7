"""A stored shard shorter than its index (empty included) is refused by every read and by
a partial write, with zarr-python 3.4's words ("too short to hold its index", which its
tests match) and zarrfast's: the shard's key and the sizes.  zarr-python 3.4.2 (the peer)
refuses the same shards with the same words."""

from __future__ import annotations

import pytest

import zarrfast
from zarrfast.errors import ChunkDecodeError
from zarrfast.storage import LocalStore, MemoryStore

OPS = {
    "full read": lambda arr: arr[0:4],
    "partial read": lambda arr: arr[0:2],
    "partial write": lambda arr: arr.__setitem__(slice(0, 2), 7),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("stored", [b"", b"abc"])
@pytest.mark.parametrize("index_location", ["start", "end"])
@pytest.mark.parametrize("kind", ["memory", "local"])
def test_truncated_shard_refused(tmp_path, kind, index_location, stored, op) -> None:
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path / "a.zarr")
    arr = zarrfast.create_array(store, shape=(8,), chunks=(2,), dtype="i4", compressors=None,
                                shards={"shape": (4,), "index_location": index_location},
                                fill_value=-1)
    store.set("c/0", stored)
    with pytest.raises(ChunkDecodeError, match=r"shard 'c/0': the stored shard is too short "
                                               r"to hold its index: .*\b36\b"):
        OPS[op](arr)
    assert store.get("c/0") == stored


def test_zarr_python_says_the_same(zarr_peer) -> None:
    theirs = zarr_peer.run("""
        import zarr
        from zarr.storage import MemoryStore
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync
        out = []
        for stored in (b"", b"abc"):
            store = MemoryStore()
            arr = zarr.create_array(store, shape=(8,), chunks=(2,), shards=(4,), dtype="i4",
                                    compressors=None, fill_value=-1)
            sync(store.set("c/0", default_buffer_prototype().buffer.from_bytes(stored)))
            try:
                arr[0:4]
                out.append(None)
            except ValueError as e:
                out.append(str(e))
        emit(out)
    """)
    assert all("too short to hold its index" in m for m in theirs)
