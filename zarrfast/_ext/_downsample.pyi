# Stub for the compiled module built from src_ext/_downsample.pyx.
# Buffers: src = C-contiguous 3-D (n, H, W); out = writable C-contiguous
#          (n, ceil(H / fy), ceil(W / fx)), same dtype as src: float32, float64 or an
#          8/16/32/64-bit (un)signed integer in native byte order.
# fill: None, or a number (integers: representable in the dtype); NaN and fill are ignored.
# Twins: zarrfast.kernels.downsample (same names, signatures, results, errors).
from typing import Any

from zarrfast._ext._buffer import Buffer

METHODS: tuple[str, ...]  # ("average", "nearest", "mode", "min", "max", "sum", "rms")

def block_reduce(
    src: Buffer,  # const num_t[:, :, ::1]
    out: Buffer,  # num_t[:, :, ::1]
    fy: int,  # >= 1
    fx: int,  # >= 1
    method: str,  # one of METHODS
    fill: Any = None,
) -> None: ...
def block_average(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_nearest(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_mode(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_min(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_max(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_sum(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
def block_rms(src: Buffer, out: Buffer, fy: int, fx: int, fill: Any = None) -> None: ...
