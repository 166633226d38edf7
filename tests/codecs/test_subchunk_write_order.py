"""``ShardingCodec(subchunk_write_order=...)`` (zarr-python 3.4): the order of the inner
chunks' bytes in a shard.  zarrfast writes every order zarr-python writes, byte for byte
as zarr-python 3.4 does, whichever way the shard is written (whole from the value, by
read-modify-write, uncompressed straight from the value)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import ShardingCodec
from zarrfast.codecs.shard_format import write_rank
from zarrfast.errors import MetadataValidationError

ORDERS = ("lexicographic", "morton", "colexicographic", "unordered")


def test_default_and_accepted_orders() -> None:
    assert ShardingCodec(chunk_shape=(2,)).subchunk_write_order == "lexicographic"
    for order in ORDERS:
        codec = ShardingCodec(chunk_shape=(2,), subchunk_write_order=order)
        assert codec.subchunk_write_order == order
        assert "subchunk_write_order" not in str(codec.to_dict())  # not metadata
        assert pickle.loads(pickle.dumps(codec)).subchunk_write_order == order
        assert repr(codec).endswith(f"subchunk_write_order={order!r})")


def test_unknown_order() -> None:
    with pytest.raises(MetadataValidationError, match="Unrecognized subchunk write order"):
        ShardingCodec(chunk_shape=(2,), subchunk_write_order="spiral")


def test_ranks() -> None:
    # (a grid of 3 x 2 inner chunks: every order tells them apart)
    assert write_rank((3, 2), "lexicographic") is None
    assert write_rank((3, 2), "unordered") is None
    # colexicographic: the first dimension fastest: (0,0) (1,0) (2,0) (0,1) (1,1) (2,1)
    assert write_rank((3, 2), "colexicographic").tolist() == [0, 3, 1, 4, 2, 5]
    # morton: bits interleaved, the first dimension's first: codes of (i, j) are
    # i0 | j0 << 1 | i1 << 2: (0,0) 0, (0,1) 2, (1,0) 1, (1,1) 3, (2,0) 4, (2,1) 6
    assert write_rank((3, 2), "morton").tolist() == [0, 2, 1, 3, 4, 5]
    # a dimension without bits left is left out: 1 x 4 is index order
    assert write_rank((1, 4), "morton").tolist() == [0, 1, 2, 3]


def _stored_order(raw: bytes, n: int) -> list[int]:
    index = np.frombuffer(raw[-(16 * n + 4):-4], dtype="<u8").reshape(n, 2)
    return np.argsort(index[:, 0]).tolist()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("how", ["whole", "partial", "compressed"])
def test_shards_are_written_in_the_order_as_zarr_python_writes_them(order, how, zarr_peer,
                                                                   tmp_path) -> None:
    """The same data written with the same codec by zarrfast and by zarr-python 3.4.2:
    the same shard bytes (uncompressed inner chunks; compressed ones in the same order),
    and each reads the other's."""
    codecs = ([zarrfast.codecs.BytesCodec(), zarrfast.codecs.ZstdCodec()]
              if how == "compressed" else [zarrfast.codecs.BytesCodec()])
    codec = ShardingCodec(chunk_shape=(2, 2), subchunk_write_order=order, codecs=codecs)
    data = np.arange(1, 6 * 4 + 1, dtype="u2").reshape(6, 4)
    a = zarrfast.create_array(tmp_path / "ours.zarr", shape=(6, 4), chunks=(6, 4),
                              dtype="u2", serializer=codec, compressors=None)
    if how == "partial":  # (a shard written in two parts: the second a read-modify-write)
        a[:3] = data[:3]
        a[3:] = data[3:]
    else:
        a[:] = data
    ours = (tmp_path / "ours.zarr" / "c" / "0" / "0").read_bytes()
    theirs = zarr_peer.run("""
        import numpy as np, zarr
        from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec
        path, other, order, compressed = ARGS
        codecs = [BytesCodec(), ZstdCodec()] if compressed else [BytesCodec()]
        codec = ShardingCodec(chunk_shape=(2, 2), codecs=codecs, subchunk_write_order=order)
        a = zarr.create_array(path, shape=(6, 4), chunks=(6, 4), dtype="u2",
                              serializer=codec, compressors=None)
        a[:] = np.arange(1, 25, dtype="u2").reshape(6, 4)
        emit([zarr.open_array(other, mode="r")[:].tolist(),
              open(path + "/c/0/0", "rb").read().hex()])
    """, [str(tmp_path / "theirs.zarr"), str(tmp_path / "ours.zarr"), order,
          how == "compressed"])
    read_by_them, raw_theirs = theirs[0], bytes.fromhex(theirs[1])
    assert read_by_them == data.tolist()
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "theirs.zarr")[:], data)
    if order == "unordered":  # (zarrfast: index order)
        assert _stored_order(ours, 6) == list(range(6))
    else:
        assert _stored_order(ours, 6) == _stored_order(raw_theirs, 6)
    if how != "compressed" and order != "unordered":
        assert ours == raw_theirs
