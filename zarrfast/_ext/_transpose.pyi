# Stub for the compiled module built from src_ext/_transpose.pyx.
# Buffers: src = const uint8_t[::1]; dst = uint8_t[::1] (writable);
#          shape, perm = const int64_t[::1] (np.int64 arrays, not lists).
from collections.abc import Buffer

def transpose(
    src: Buffer,  # const uint8_t[::1], C-order array of `shape`
    dst: Buffer,  # uint8_t[::1], receives np.transpose(src_array, perm) in C order
    shape: Buffer,  # const int64_t[::1], rank 0..64
    perm: Buffer,  # const int64_t[::1], a permutation of range(rank)
    itemsize: int,
) -> None: ...
