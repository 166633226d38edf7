"""Review of 9f858f9 (writes at one thread: "uncompressed whole chunks", the caller and
the I/O thread each take the next batch from one queue) with d5c2a5d's
``_write_batches``.

``_write_batches`` answers ``direct=True`` ("the store writes whole chunks from the
value") whenever the store takes region writes and no batch kernel compresses the
chunks -- also when there is no such chunk at all: every compressed write through a
codec without a batch kernel (numcodecs' Blosc, zarr-python 2's default compressor, any
other numcodecs codec) and every scalar fill of a compressed array.  Since 9f858f9 those
writes run ``share_with_io_thread``: at ``threads=1`` two threads encode chunks at once,
the caller and ``zarrfast-write``.  docs/guide/configuration.md says ``threads`` is the
number of threads encoding chunks, "with one thread ... work runs in the calling
thread", and docs/guide/loaders.md advises ``threads=1`` in data-loader workers (no
oversubscription); a codec that is not thread-safe, safe at ``threads=1`` until now, is
now called from two threads at once.

The probe is a real numcodecs codec (its bytes stored as given) that notes which threads
encode; the data written and read back are checked as well.

Fixed by be3545f (the proposal /tmp/prop_review/9f858f9_encode_in_caller_at_one_thread.diff:
``direct`` only when some chunk is written from the value; these writes go through
``WriteBehind``, encoding in the caller, file writes behind it): a strict xfail until
then, now a plain test."""

from __future__ import annotations

import threading

import numcodecs
import numpy as np
import pytest
from numcodecs.abc import Codec

import zarrfast
from zarrfast import config


class _ThreadProbe(Codec):
    """Stores the bytes as given; notes the names of the threads that encode.  The first
    encode waits (up to ``PATIENCE`` seconds, once) for a second thread to encode too, so
    that a thread that would share the work is not beaten to every chunk by the caller;
    nothing about time is asserted."""

    codec_id = "review53-thread-probe"
    PATIENCE = 2.0
    seen: set[str] = set()
    cond = threading.Condition()

    def encode(self, buf):
        with _ThreadProbe.cond:
            first = not _ThreadProbe.seen
            _ThreadProbe.seen.add(threading.current_thread().name)
            _ThreadProbe.cond.notify_all()
            if first:
                _ThreadProbe.cond.wait_for(lambda: len(_ThreadProbe.seen) > 1,
                                           timeout=_ThreadProbe.PATIENCE)
        return bytes(memoryview(np.ascontiguousarray(buf)).cast("B"))

    def decode(self, buf, out=None):
        data = bytes(memoryview(buf).cast("B"))
        if out is None:
            return data
        memoryview(out).cast("B")[:] = data
        return out


numcodecs.register_codec(_ThreadProbe)

@pytest.mark.parametrize("value", ["array", "scalar"])
def test_at_one_thread_chunks_are_encoded_in_the_calling_thread(tmp_path, value) -> None:
    path = tmp_path / "a.zarr"
    a = zarrfast.create_array(str(path), shape=(200, 210), chunks=(10, 10), dtype="<i4",
                              zarr_format=2, compressors=[_ThreadProbe()])
    data = np.arange(200 * 210, dtype="<i4").reshape(200, 210)
    _ThreadProbe.seen.clear()
    with config.set(threads=1):
        a[...] = data if value == "array" else 7
    want = data if value == "array" else np.full_like(data, 7)
    np.testing.assert_array_equal(zarrfast.open_array(str(path), mode="r")[...], want)
    assert _ThreadProbe.seen == {threading.current_thread().name}
