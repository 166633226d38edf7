# Stub for the compiled module built from src_ext/_zstd_prefix.pyx.
from zarrfast._ext._buffer import Buffer

DECODED: int
NO_DATA: int
FAILED: int

def bind(
    create: int, free: int, begin: int, next_size: int, decompress: int, is_error: int,
    content_size: int, frame_size: int,
) -> None: ...  # addresses of zstd's functions (ValueError for a null one)
def bound() -> bool: ...

class Context:
    def __init__(self) -> None: ...  # RuntimeError before bind, MemoryError

def decode_prefixes(
    context: Context,
    src: Buffer,  # const uint8_t[::1]
    src_offsets: Buffer,  # const int64_t[::1]
    src_sizes: Buffer,  # const int64_t[::1], < 0: no data
    dst: Buffer,  # uint8_t[::1]
    dst_offsets: Buffer,  # const int64_t[::1]
    needs: Buffer,  # const int64_t[::1], each in [0, nbytes]
    nbytes: int,
    status: Buffer,  # int8_t[::1], out: 0 decoded, 1 no data, 2 failed
) -> None: ...
def decode_prefix_list(
    context: Context,
    frames: list[Buffer | None],  # each a const uint8_t[::1]; None: no data
    dst: Buffer,  # uint8_t[::1]
    dst_offsets: Buffer,  # const int64_t[::1]
    needs: Buffer,  # const int64_t[::1], each in [0, nbytes]
    nbytes: int,
    status: Buffer,  # int8_t[::1], out: 0 decoded, 1 no data, 2 failed
) -> None: ...
def decode_prefix_files(
    context: Context,
    root: bytes | None,  # the directory of the paths (opened without links); None: plain
    paths: list[bytes],
    work: Buffer,  # uint8_t[::1]: each file read here (larger ones: FAILED, EFBIG)
    dst: Buffer,  # uint8_t[::1]
    dst_offsets: Buffer,  # const int64_t[::1]
    needs: Buffer,  # const int64_t[::1], each in [0, nbytes]
    nbytes: int,
    status: Buffer,  # int8_t[::1], out: 0 decoded, 1 no data (no file), 2 failed
    errs: Buffer,  # int64_t[::1], out: errno of a failed open/read, else 0
) -> None: ...
