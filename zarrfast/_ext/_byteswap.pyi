# Stub for the compiled module built from src_ext/_byteswap.pyx.
# Buffers: "u8in" = const uint8_t[::1] (bytes-like, 1-d, C-contiguous, format "B");
#          "u8out" = uint8_t[::1] (the same, writable).
from collections.abc import Buffer

def byteswap_inplace(buf: Buffer, unit: int) -> None: ...  # buf: u8out; unit in {1, 2, 4, 8}
def byteswap_copy(src: Buffer, dst: Buffer, unit: int) -> None: ...  # src: u8in, dst: u8out, same length
