"""The byte format of a shard (``sharding_indexed``), written once.

A shard of ``shard_shape`` holds the encoded inner chunks of ``chunk_shape``
followed (``index_location: "end"``) or preceded (``"start"``) by an index: a
``uint64`` array of shape ``chunks_per_shard + [2]`` with the ``(offset,
nbytes)`` of every inner chunk, ``2**64 - 1`` twice for an empty one, encoded
with ``index_codecs`` (of a fixed size).  Spec:
https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/

:class:`ShardFormat` decodes and checks an index (one ``check_index`` kernel
call: half-empty entries, impossible ranges, overlaps, entries past the data),
finds an inner chunk's bytes and assembles inner chunks into shard bytes.  The
sharding codec's whole-shard ``decode``/``encode`` and the engine's partial
reads and writes both use it.  Errors are
:class:`~zarrfast.errors.ChunkDecodeError` (or :class:`~zarrfast.errors.ChecksumError`)
naming the shard's key and the inner chunk.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import crc32c
import numpy as np

from zarrfast import kernels as _kernels
from zarrfast.codecs.bytes import BytesCodec
from zarrfast.codecs.chain import CodecChain
from zarrfast.codecs.compressors import Crc32cCodec
from zarrfast.errors import ChecksumError, ChunkDecodeError, CodecError
from zarrfast.metadata.dtype import DataType, parse_data_type

__all__ = ["EMPTY", "ShardFormat", "write_rank"]

#: the offset and size of an empty inner chunk
EMPTY = 2**64 - 1
_EMPTY = np.uint64(EMPTY)
_UINT64: DataType = parse_data_type("uint64")


def write_rank(cps: tuple[int, ...], order: str) -> np.ndarray | None:
    """Where each inner chunk (by its index, C order over ``cps``) goes among the stored
    inner chunks of a shard written in ``order`` (zarr-python 3.4's
    ``subchunk_write_order``); ``None`` for index order (``"lexicographic"``, and
    ``"unordered"``, which promises none).

    ``"colexicographic"``: the first dimension varies fastest.  ``"morton"``: by the
    compressed Morton code of the coordinates, zarr-python's (and neuroglancer's): the
    bits of the coordinates interleaved, lowest first and the first dimension first at
    each bit, a dimension left out once its coordinates have no more bits."""
    if order in ("lexicographic", "unordered") or math.prod(cps) <= 1:
        return None
    coords = np.indices(cps, dtype=np.int64).reshape(len(cps), -1)
    if order == "colexicographic":
        key = np.ravel_multi_index(tuple(coords), cps, order="F")
    elif order == "morton":
        bits = [(c - 1).bit_length() for c in cps]
        key = np.zeros(coords.shape[1], dtype=np.uint64)
        out_bit = 0
        for bit in range(max(bits)):
            for d, nbits in enumerate(bits):
                if bit < nbits:
                    key |= ((coords[d] >> bit) & 1).astype(np.uint64) << np.uint64(out_bit)
                    out_bit += 1
    else:
        raise CodecError(f"sharding_indexed: unknown subchunk_write_order {order!r}")
    rank = np.empty(coords.shape[1], dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(coords.shape[1], dtype=np.int64)
    return rank


class ShardFormat:
    """The layout of shards of ``shard_shape`` for one sharding codec."""

    def __init__(self, codec: Any, shard_shape: tuple[int, ...]) -> None:
        self.codec = codec
        self.shard_shape = tuple(shard_shape)
        self.inner_shape = codec.chunk_shape
        self.cps = codec.chunks_per_shard(self.shard_shape)
        self.n_inner = math.prod(self.cps)
        self.index_shape = codec.index_shape(self.shard_shape)
        self.index_nbytes = codec.index_nbytes(self.shard_shape)
        self.at_end = codec.index_location == "end"
        #: where the inner chunks' bytes may start
        self.data_start = 0 if self.at_end else self.index_nbytes
        self.index_chain = CodecChain(codec.index_codecs, chunk_shape=self.index_shape,
                                      data_type=_UINT64, node="sharding_indexed index_codecs",
                                      validate=False)
        #: the index codecs everyone writes (little-endian bytes, then crc32c): decoded
        #: here without the chain's per-codec calls (a full read decodes one per shard)
        codecs = tuple(codec.index_codecs)
        self._plain_index = (
            len(codecs) == 2 and isinstance(codecs[0], BytesCodec)
            and codecs[0].endian in ("little", None) and isinstance(codecs[1], Crc32cCodec))
        self._dense: dict[int, np.ndarray] = {}
        #: the position of each inner chunk (by index) among a written shard's stored
        #: inner chunks (the codec's ``subchunk_write_order``); ``None``: index order
        self.rank = write_rank(self.cps, getattr(codec, "subchunk_write_order",
                                                 "lexicographic"))
        #: kernels decode indexes of little-endian bytes, then crc32c or nothing: whether
        #: this one has the checksum (``None``: other index codecs)
        self.index_checksum: bool | None = (
            True if self._plain_index
            else False if (len(codecs) == 1 and isinstance(codecs[0], BytesCodec)
                           and codecs[0].endian in ("little", None))
            else None)

    def dense_index(self, chunk_nbytes: int) -> np.ndarray:
        """The encoded index (uint8) of a shard whose every inner chunk is stored, each
        ``chunk_nbytes`` long, in write order (:attr:`rank`) from :attr:`data_start` on:
        the same for every such shard of this layout, so encoded once."""
        raw = self._dense.get(chunk_nbytes)
        if raw is None:
            index = np.empty((self.n_inner, 2), dtype=np.uint64)
            slots = (np.arange(self.n_inner, dtype=np.uint64) if self.rank is None
                     else self.rank.astype(np.uint64))
            index[:, 0] = self.data_start + slots * np.uint64(chunk_nbytes)
            index[:, 1] = chunk_nbytes
            raw = np.frombuffer(self.encode_index(index), dtype=np.uint8)
            self._dense[chunk_nbytes] = raw  # (a race encodes the same bytes twice)
        return raw

    def inner_name(self, j: int) -> str:
        return str(tuple(int(x) for x in np.unravel_index(j, self.cps)))

    # -- index --------------------------------------------------------------------
    def decode_index(self, raw: Any, key: str) -> np.ndarray:
        """Decode and check an encoded index -> ``(n_inner, 2)`` uint64 array."""
        if len(raw) != self.index_nbytes:  # (zarr-python 3.4's words when it is short)
            short = ("the stored shard is too short to hold its index: "
                     if len(raw) < self.index_nbytes else "")
            raise ChunkDecodeError(
                f"shard {key!r}: {short}index has {len(raw)} bytes, expected "
                f"{self.index_nbytes} (the shard is truncated or not a shard)"
            )
        if self._plain_index:
            view = memoryview(raw).cast("B")
            stored = int.from_bytes(view[-4:], "little")
            actual = crc32c.crc32c(view[:-4])
            if stored != actual:
                raise ChecksumError(
                    f"shard {key!r}: index checksum mismatch: crc32c: checksum mismatch "
                    f"(stored 0x{stored:08x}, computed 0x{actual:08x})")
            # a copy: `raw` may be a reused read buffer, and indexes outlive reads
            index = np.frombuffer(view[:-4], dtype="<u8").astype(np.uint64).reshape(
                self.n_inner, 2)
            self._check(index, key, EMPTY)
            return index
        try:
            arr = self.index_chain.decode(raw, limit=self.index_nbytes + 2**20)
        except ChecksumError as e:
            raise ChecksumError(f"shard {key!r}: index checksum mismatch: {e}") from None
        except (CodecError, ValueError) as e:
            raise ChunkDecodeError(f"shard {key!r}: cannot decode the index: {e}") from None
        # a copy: `raw` may be a reused read buffer, and indexes outlive reads in the cache
        index = np.array(arr, dtype=np.uint64, order="C", copy=True).reshape(self.n_inner, 2)
        self._check(index, key, EMPTY)
        return index

    def encode_index(self, index: np.ndarray) -> bytes:
        return self.index_chain.encode(np.ascontiguousarray(index).reshape(self.index_shape))

    def _check(self, index: np.ndarray, key: str, limit: int) -> None:
        code, a, b = _kernels.check_index(index, self.data_start, limit)
        if code:
            self._raise_bad_index(index, key, code, a, b, limit)

    def _raise_bad_index(self, index: np.ndarray, key: str, code: int, a: int, b: int,
                         limit: int) -> NoReturn:
        """Raise the ChunkDecodeError for a ``check_index`` result ``(code, a, b)``."""
        off, nb = int(index[a, 0]), int(index[a, 1])
        if code == 1:
            raise ChunkDecodeError(
                f"shard {key!r}: index entry of inner chunk {self.inner_name(a)} is half empty "
                f"(offset {off}, nbytes {nb})"
            )
        if code == 2:
            raise ChunkDecodeError(
                f"shard {key!r}: inner chunk {self.inner_name(a)} has an impossible range "
                f"(offset {off}, nbytes {nb})"
            )
        if code == 3:
            raise ChunkDecodeError(
                f"shard {key!r}: inner chunk {self.inner_name(a)} overlaps the index "
                f"at the start of the shard (offset {off})"
            )
        if code == 4:
            raise ChunkDecodeError(
                f"shard {key!r}: inner chunk {self.inner_name(a)} points past the end of the "
                f"shard (bytes {off}+{nb}, shard data ends at {limit})"
            )
        raise ChunkDecodeError(
            f"shard {key!r}: inner chunks {self.inner_name(a)} and "
            f"{self.inner_name(b)} overlap (bytes {off}+{nb} and "
            f"{int(index[b, 0])}+{int(index[b, 1])})"
        )

    def index_of_shard(self, data: Any, key: str) -> np.ndarray:
        """The index of a whole shard's bytes, checked against the shard's size."""
        n = len(data)
        if n < self.index_nbytes:
            raise ChunkDecodeError(
                f"shard {key!r}: the stored shard is too short to hold its index: {n} bytes, "
                f"the index alone is {self.index_nbytes} (the shard is truncated or not a "
                f"shard)"
            )
        raw = data[n - self.index_nbytes:] if self.at_end else data[:self.index_nbytes]
        index = self.decode_index(raw, key)
        self.check_within(index, n - self.index_nbytes if self.at_end else n, key)
        return index

    def check_within(self, index: np.ndarray, limit: int, key: str) -> None:
        """Every entry of ``index`` ends at or before byte ``limit`` of the shard."""
        self._check(index, key, limit)

    def inner_bytes(self, data: Any, index: np.ndarray, j: int) -> Any:
        off, nb = index[j]
        if off == _EMPTY:
            return None
        return memoryview(data)[int(off):int(off) + int(nb)]

    def inner_region(self, j: int) -> tuple[slice, ...]:
        """Where inner chunk ``j`` lies in the shard."""
        coords = np.unravel_index(j, self.cps)
        return tuple(slice(int(c) * s, (int(c) + 1) * s)
                     for c, s in zip(coords, self.inner_shape, strict=True))

    # -- assembling -----------------------------------------------------------------
    def assemble(self, encoded: list[Any]) -> bytes | None:
        """Serialise inner chunks (``None``: empty) into shard bytes; ``None`` if all empty."""
        index = np.full((self.n_inner, 2), _EMPTY, dtype=np.uint64)
        parts = []
        pos = self.data_start
        order = range(self.n_inner) if self.rank is None else np.argsort(self.rank).tolist()
        for j in order:
            chunk = encoded[j]
            if chunk is None:
                continue
            n = len(memoryview(chunk).cast("B"))
            index[j] = (pos, n)
            parts.append(chunk)
            pos += n
        if not parts:
            return None
        raw_index = self.encode_index(index)
        if self.at_end:
            return b"".join([*parts, raw_index])
        return b"".join([raw_index, *parts])

    def empty_shard(self) -> bytes:
        """A shard with no inner chunk: only its index."""
        return self.encode_index(np.full(self.index_shape, _EMPTY, np.uint64))
