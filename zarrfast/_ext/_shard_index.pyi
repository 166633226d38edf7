# Stub for the compiled module built from src_ext/_shard_index.pyx.
# index = const uint64_t[:, ::1] of shape (n, 2): (offset, nbytes) per inner chunk,
#         (2**64-1, 2**64-1) for an empty one.
from zarrfast._ext._buffer import Buffer

def check_index(
    index: Buffer,  # const uint64_t[:, ::1], shape (n, 2)
    low: int,  # 0 <= low < 2**64: no used entry starts before it
    high: int,  # 0 <= high < 2**64: no used entry ends after it (2**64-1: unknown size)
) -> tuple[int, int, int]:  # (code, a, b): 0 fine, 1 half empty, 2 overflow,
    # 3 below low, 4 above high (entry a; b = -1), 5 a and b overlap; (0, -1, -1) if fine
    ...
