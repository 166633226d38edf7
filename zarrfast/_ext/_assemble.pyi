# Stub for the compiled module built from src_ext/_assemble.pyx.
# Buffers: const uint8_t[::1] inputs, uint8_t[::1] (writable) outputs;
#          strides/shape = const int64_t[::1] (np.int64 arrays, not lists); strides in bytes.
from zarrfast._ext._buffer import Buffer

def copy_region(
    src: Buffer,  # const uint8_t[::1]
    src_offset: int,
    src_strides: Buffer,  # const int64_t[::1], any sign, 0 = broadcast
    dst: Buffer,  # uint8_t[::1]
    dst_offset: int,
    dst_strides: Buffer,  # const int64_t[::1], any sign, non-zero where shape > 1
    shape: Buffer,  # const int64_t[::1]
    itemsize: int,
    swap_unit: int = 1,  # 1, 2, 4 or 8, dividing itemsize
) -> None: ...
def copy_regions(
    src: Buffer,  # const uint8_t[::1]
    src_offsets: Buffer,  # const int64_t[::1], one per region
    src_strides: Buffer,  # const int64_t[::1], shared
    dst: Buffer,  # uint8_t[::1]
    dst_offsets: Buffer,  # const int64_t[::1], one per region
    dst_strides: Buffer,  # const int64_t[::1], shared
    shapes: Buffer,  # const int64_t[:, ::1], (regions, rank)
    itemsize: int,
    swap_unit: int = 1,
    stream: bool = False,  # write dst with non-temporal stores (large outputs)
) -> None: ...
def fill_region(
    dst: Buffer,  # uint8_t[::1]
    dst_offset: int,
    dst_strides: Buffer,  # const int64_t[::1]
    shape: Buffer,  # const int64_t[::1]
    fill: Buffer,  # const uint8_t[::1], one item (len >= 1)
) -> None: ...
def is_uniform(
    buf: Buffer,  # const uint8_t[::1]
    fill: Buffer,  # const uint8_t[::1], len(buf) % len(fill) == 0
) -> bool: ...

# byte-order swapping of packed items; unit in {1, 2, 4, 8}
def byteswap_inplace(buf: Buffer, unit: int) -> None: ...  # buf: uint8_t[::1]
def byteswap_copy(src: Buffer, dst: Buffer, unit: int) -> None: ...  # same length

def transpose(
    src: Buffer,  # const uint8_t[::1], C-order array of `shape`
    dst: Buffer,  # uint8_t[::1], receives np.transpose(src_array, perm) in C order
    shape: Buffer,  # const int64_t[::1], rank 0..64
    perm: Buffer,  # const int64_t[::1], a permutation of range(rank)
    itemsize: int,
) -> None: ...
