"""Where the CPU time of a blosc write's compression goes: the gather, the filter, LZ4.

``blosc_compress_regions`` (``src_ext/_decode.pyx``) copies a row of whole chunks out of
the written value into a scratch buffer (``_gather.pxd``), then filters (byte or bit
shuffle, ``zf_shuffle.h``) and compresses each block with numcodecs' LZ4
(``zf_blosc_enc.h``).  This script times, on the harness's ``blosc`` dataset (uint16,
64^3 chunks, lz4 clevel 5 bitshuffle; ``--size`` bytes, the harness's values), in this
process's CPU time (``time.process_time``, one thread):

* ``value read``: the value copied once, in order, into a reused buffer of the
  gather's size: the memory traffic that any write of it pays (the floor of the gather);
* ``filter``: the filter alone, over every block of one chunk held in cache, as many
  times as the value has chunks;
* ``whole``: ``blosc_compress_regions`` at the dataset's settings, a row of chunks a
  call, with scratch room for ``--room`` chunks (the engine gives a row's chunks, up to
  8 MiB).  ``whole`` minus the filter is the gather and LZ4 (``perf record`` splits
  them: ``__pyx_f_7_gather_gather_next`` and ``LZ4_compress_fast_extState``).

Run it under each tree to compare builds (``PYTHONPATH=tree``), taking turns::

    PYTHONPATH=/src/main python benchmarks/bench_blosc_parts.py
    PYTHONPATH=/src/branch python benchmarks/bench_blosc_parts.py --room 1,2,10

Measured on a loaded 2-core EPYC (Zen 2, 32 KiB L1d, 512 KiB L2 a core; 256 MiB, min
of 7): value read 17-19 ms, filter 51 ms, whole 134-137 ms at room 10 (142 at room 2, 152
at room 1); perf of ``whole``: LZ4 ~50 ms, the AVX2 bit shuffle ~50 ms, the gather
~21 ms.  The gather is thus within ~15% of reading the value at all.  Filtering each
chunk straight out of the value instead (no scratch; the experiment of /work/wt/
writes60.diff) cost 3-5% more CPU staged a tile at a time and 40% more split straight
from the value's rows: a chunk's rows lie far apart in the value, where the gather
reads a whole row of chunks in order.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from zarrfast.bench import data as D
from zarrfast.bench import parse_size


def _cpu(fn, reps: int) -> tuple[float, float]:
    """min and median CPU seconds of ``fn()`` over ``reps`` calls."""
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="256MiB", help="the value's bytes (the harness's --size)")
    p.add_argument("--chunk", type=int, default=64, help="the cubic chunk's side")
    p.add_argument("--shuffle", type=int, default=2, choices=(0, 1, 2),
                   help="0 none, 1 byte shuffle, 2 bit shuffle (the harness's)")
    p.add_argument("--clevel", type=int, default=5)
    p.add_argument("--room", default="", help="comma-separated scratch rooms in chunks "
                   "(default: the chunks of a row of the grid, at most 16)")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()

    from zarrfast import kernels
    from zarrfast._ext import _decode

    if kernels.blosc_compress_regions is None:
        print("c-blosc is not bound: nothing to measure", file=sys.stderr)
        return 1
    shape = D.main_shape(parse_size(args.size))
    value = D.values(tuple(slice(0, n) for n in shape))
    flat = value.reshape(-1).view(np.uint8)
    strides = np.array(value.strides, np.int64)
    c = args.chunk
    grid = [s // c for s in shape]
    chunk = np.array([c, c, c], np.int64)
    nbytes = c ** 3 * value.itemsize
    dst = np.array([c * c * value.itemsize, c * value.itemsize, value.itemsize], np.int64)
    offsets = np.array([int(np.dot(np.array(i) * c, strides)) for i in np.ndindex(*grid)],
                       np.int64)
    row = grid[-1]
    rooms = [int(r) for r in args.room.split(",")] if args.room else [min(row, 16)]
    out = np.empty(row * (nbytes + 16), np.uint8)
    fill = np.zeros(value.itemsize, np.uint8)
    print(f"{os.environ.get('PYTHONPATH', '(installed)')}: {_decode.blosc_encoder()}, "
          f"value {shape} uint16, {len(offsets)} chunks of {c}^3, {row} a row; CPU ms, "
          f"min / median of {args.reps}")

    def rows(room: int, clevel: int, shuffle: int) -> None:
        """Every chunk compressed, a row of the grid a call."""
        scratch = np.empty(room * nbytes, np.uint8)
        for r in range(0, len(offsets), row):
            _decode.blosc_compress_regions(flat, offsets[r:r + row], strides, dst, chunk,
                                           value.itemsize, 1, fill, scratch, out, clevel,
                                           shuffle, value.itemsize, b"lz4", 0)

    buf = np.empty(rooms[0] * nbytes, np.uint8)

    def read() -> None:
        """The value read once, in order."""
        for o in range(0, flat.size, buf.size):
            n = min(buf.size, flat.size - o)
            buf[:n] = flat[o:o + n]

    def report(what: str, t: tuple[float, float]) -> None:
        print(f"  {what:<36} {t[0] * 1e3:8.1f} / {t[1] * 1e3:8.1f}")

    report("value read", _cpu(read, args.reps))
    if args.shuffle:
        one = np.ascontiguousarray(value[:c, :c, :c]).reshape(-1).view(np.uint8)
        bs = int.from_bytes(bytes(_decode.blosc_compress(one, args.clevel, args.shuffle,
                                                         value.itemsize, b"lz4", 0))[8:12],
                            "little")
        blocks = [one[o:o + bs] for o in range(0, nbytes, bs)]
        tmp = np.empty(bs, np.uint8)
        # (the instruction set frames are made with now: "zarrfast (avx2): lz4")
        isa = "avx2" if "(avx2)" in _decode.blosc_encoder() else "scalar"
        filt = _decode.blosc_bitshuffle if args.shuffle == 2 else _decode.blosc_shuffle

        def filters() -> None:
            for _ in range(len(offsets)):
                for b in blocks:
                    filt(b, tmp[:b.size], value.itemsize, isa)

        report(f"filter ({isa}, {bs}-byte blocks)", _cpu(filters, args.reps))
    for room in rooms:
        report(f"whole (room {room})",
               _cpu(lambda room=room: rows(room, args.clevel, args.shuffle), args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
