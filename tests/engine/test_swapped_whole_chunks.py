"""Whole chunks stored uncompressed in the other byte order, written by one kernel call per
batch (``RowWriter.swap_whole``): the stored bytes are the values' in that order, a chunk
equal to the fill value is not stored (unless empty chunks are written), and one whose
bytes equal the fill value's in the *native* order is stored."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import BytesCodec
from zarrfast.engine import chunked


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("write_empty", [False, True])
def test_big_endian_whole_chunks(tmp_path, monkeypatch, threads, write_empty) -> None:
    calls = []
    swap_whole = chunked.RowWriter.swap_whole

    def spy(self, rows, *args, **kwargs):
        calls.append(len(rows))
        return swap_whole(self, rows, *args, **kwargs)

    monkeypatch.setattr(chunked.RowWriter, "swap_whole", spy)
    v = np.full((12, 8), 7, dtype="u2")
    v[:4, :4] = 1  # the fill value
    v[:4, 4:] = 256  # bytes 01 00: the fill value's bytes in the native (little) order
    v[8:, :] = np.arange(32, dtype="u2").reshape(4, 8) * 1001
    with zarrfast.config.set(threads=threads):
        a = zarrfast.create_array(tmp_path / "a", shape=v.shape, chunks=(4, 4), dtype="u2",
                                  fill_value=1, serializer=BytesCodec(endian="big"),
                                  compressors=None, config={"write_empty_chunks": write_empty})
        a[...] = v
    assert sum(calls) == 6  # (every chunk: whole, inside the array)
    np.testing.assert_array_equal(zarrfast.open_array(tmp_path / "a")[...], v)
    stored = {p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a" / "c").rglob("*")
              if p.is_file()}
    assert ("c/0/0" in stored) is write_empty
    assert {"c/0/1", "c/1/0", "c/1/1", "c/2/0", "c/2/1"} <= stored
    for key, (r, c) in (("c/0/1", (0, 4)), ("c/2/1", (8, 4))):
        want = v[r:r + 4, c:c + 4].astype(">u2").tobytes()
        assert (tmp_path / "a" / key).read_bytes() == want
