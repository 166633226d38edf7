"""A shard cut short whose index survived (at its end, or at its start): every way of
reading it -- a small box (one kernel call, or the buffer way), a strided read, a whole
read -- raises ChunkDecodeError naming the shard and an inner chunk whose bytes are gone,
instead of decoding the index's bytes, or nothing, as data."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.errors import ChunkDecodeError

from _helpers import LE


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("selection", [np.s_[0:4, 0:8], np.s_[0:2, 2:6], np.s_[0:40:3, 0:20],
                                       np.s_[0:32, 0:32]])
def test_a_truncated_shard_is_refused_by_every_read(tmp_path, location, compressed, threads,
                                                     selection):
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if compressed:
        codecs.append({"name": "zstd", "configuration": {"level": 1}})
    serializer = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4], "codecs": codecs, "index_location": location,
        "index_codecs": [LE, {"name": "crc32c"}]}}
    data = np.arange(64 * 64, dtype="<i4").reshape(64, 64)
    a = zarrfast.create_array(str(tmp_path / "a"), shape=(64, 64), chunks=(32, 32),
                              serializer=serializer, compressors=None, dtype="<i4")
    a[...] = data
    path = tmp_path / "a" / "c" / "0" / "0"
    raw = path.read_bytes()
    index_nbytes = 64 * 16 + 4
    if location == "end":
        cut = raw[:100] + raw[-index_nbytes:]  # the index now follows byte 100
    else:
        cut = raw[:index_nbytes + 100]
    path.write_bytes(cut)
    b = zarrfast.open_array(str(tmp_path / "a"))
    with config.set(threads=threads), pytest.raises(
            ChunkDecodeError, match=r"shard '.*c/0/0'.*inner chunk \(\d+, \d+\)"):
        b[selection]
