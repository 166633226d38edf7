"""``ShardingCodec(subchunk_write_order=...)`` (zarr-python 3.4): the order of the inner
chunks' bytes in a shard.  zarrfast writes index (lexicographic) order, and says so; the
orders it does not write are refused, never taken and ignored."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ShardingCodec
from zarrfast.errors import MetadataValidationError


def test_default_and_accepted_orders() -> None:
    assert ShardingCodec(chunk_shape=(2,)).subchunk_write_order == "lexicographic"
    for order in ("lexicographic", "unordered"):
        codec = ShardingCodec(chunk_shape=(2,), subchunk_write_order=order)
        assert codec.subchunk_write_order == order
        assert "subchunk_write_order" not in str(codec.to_dict())  # not metadata
        assert pickle.loads(pickle.dumps(codec)).subchunk_write_order == order
        assert repr(codec).endswith(f"subchunk_write_order={order!r})")


@pytest.mark.parametrize("order", ["morton", "colexicographic"])
def test_orders_zarrfast_does_not_write_are_refused(order) -> None:
    with pytest.raises(NotImplementedError, match=f"subchunk_write_order={order!r}"):
        ShardingCodec(chunk_shape=(2,), subchunk_write_order=order)


def test_unknown_order() -> None:
    with pytest.raises(MetadataValidationError, match="Unrecognized subchunk write order"):
        ShardingCodec(chunk_shape=(2,), subchunk_write_order="spiral")


@pytest.mark.parametrize("compressors", [None, "auto"])
def test_written_shards_are_in_lexicographic_order(compressors, zarr_peer, tmp_path) -> None:
    """What the codec says is what is written: the index's offsets grow in index order,
    and zarr-python 3.4 reads the shard."""
    codec = ShardingCodec(chunk_shape=(2, 2), subchunk_write_order="lexicographic",
                          codecs=[zarrfast.codecs.BytesCodec()] if compressors is None else
                          [zarrfast.codecs.BytesCodec(), zarrfast.codecs.ZstdCodec()])
    a = zarrfast.create_array(tmp_path / "s.zarr", shape=(8, 8), chunks=(8, 8), dtype="u2",
                              serializer=codec, compressors=None)
    data = np.arange(64, dtype="u2").reshape(8, 8)
    a[:] = data
    raw = (tmp_path / "s.zarr" / "c" / "0" / "0").read_bytes()
    index = np.frombuffer(raw[-(16 * 16 + 4):-4], dtype="<u8").reshape(16, 2)
    assert (np.diff(index[:, 0].astype(np.int64)) > 0).all()
    theirs = zarr_peer.run("""
        import zarr
        emit(zarr.open_array(ARGS, mode="r")[:].tolist())
    """, str(tmp_path / "s.zarr"))
    assert theirs == data.tolist()
